"""Numba's ``njit`` for natcoord's kernels, with one on-disk cache whoever runs them.

Compiling natcoord's kernels takes 10–20 s; loading them from Numba's disk
cache well under a second. The cache only helps if every process looks in
the *same* place, and by default Numba's choice depends on the environment:
``NUMBA_CACHE_DIR`` when set (the Makefile exports it for make targets),
else ``__pycache__`` beside the sources, else a user-wide directory. A cache
warmed by ``make venv`` under one setting would be cold for a notebook or a
plain shell under the other.

So natcoord pins its own kernels to the place Numba uses when nothing is
configured — ``__pycache__`` beside natcoord's sources — whenever that
directory is writable (a source checkout or editable install, which is what
``make venv`` creates), whatever ``NUMBA_CACHE_DIR`` says.
:mod:`natcoord.warmup` fills it once after installation. Where the sources
are not writable (a system-wide install) nothing is pinned and Numba's usual
order applies, so ``NUMBA_CACHE_DIR`` stays the remedy there. Numba chooses
the cache location of a ``cache=True`` function when it is decorated, so
the setting is changed only while natcoord's kernels are being decorated
and restored at once: other Numba code in the same process is unaffected.
"""
from __future__ import annotations

import functools
import inspect
import os
import tempfile

import numba
from numba.core import config


@functools.lru_cache(maxsize=None)
def in_tree_cache(source_dir):
    """``source_dir/__pycache__`` if it is (or can be made) writable, else ``None``."""
    path = os.path.join(source_dir, "__pycache__")
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return None
    return path


def cache_location(function):
    """Where the kernel ``function`` is cached: its in-tree ``__pycache__`` or Numba's choice."""
    return in_tree_cache(os.path.dirname(os.path.abspath(inspect.getfile(function))))


def njit(*args, **options):
    """``numba.njit`` (same arguments); with ``cache=True`` cached beside the sources.

    ``@njit``, ``@njit(cache=True, ...)`` and ``njit(function, ...)`` all work.
    """
    if args and callable(args[0]):
        return _compile(args[0], options)
    if args:
        raise TypeError("natcoord.util.jit.njit takes the function and keyword options only "
                        "(no explicit signatures)")
    return lambda function: _compile(function, options)


def _compile(function, options):
    if not options.get("cache") or cache_location(function) is None:
        return numba.njit(**options)(function)
    saved = config.CACHE_DIR
    config.CACHE_DIR = ""          # Numba's next choice: the in-tree __pycache__
    try:
        return numba.njit(**options)(function)
    finally:
        config.CACHE_DIR = saved
