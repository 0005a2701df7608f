"""Memory a request would take, checked before the work starts.

A result natcoord cannot hold should fail at once, naming the argument and
the size, not after minutes of work with a ``MemoryError`` (or with the
machine swapping). The limit is half of the machine's physical memory: the
rest is for the interpreter, the work buffers and whatever else runs.
"""
from __future__ import annotations

import os

#: share of the physical memory one request may take
SHARE = 0.5


def physical_memory():
    """Bytes of physical memory, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def gib(n_bytes):
    return f"{n_bytes / 2**30:.3g} GiB"


def check_memory(n_bytes, what, remedy):
    """``ValueError`` when ``n_bytes`` exceed ``SHARE`` of the physical memory:
    ``"<what> would take about X GiB, more than half of this machine's Y GiB;
    <remedy>"``."""
    total = physical_memory()
    if total is not None and n_bytes > SHARE * total:
        raise ValueError(f"{what} would take about {gib(n_bytes)}, more than half of this "
                         f"machine's {gib(total)}; {remedy}")
