"""What every experiment writes: CSV files under a machine header, and a progress bar.

One module for the benchmarks (``natcoord/experiments``), the sweeps
(:mod:`natcoord.study.sweep`) and ``paper/figures.py``: a CSV opens with ``#``
lines naming the machine, the software versions, the date and the command
(:func:`csv_header`); :func:`read_csv` skips them.
"""
from __future__ import annotations

import csv
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .. import __version__


def parse_value(text):
    """A command-line or CSV value: ``int``, else ``float``, else the text itself."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def text_table(rows, columns):
    """``rows`` (dicts) as an aligned text table; ``columns``: ``(header, key or
    function of the row, format spec)`` each."""
    cells = [[format(key(r) if callable(key) else r[key], spec) for _, key, spec in columns]
             for r in rows]
    headers = [header for header, _, _ in columns]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths))
                     for line in [headers] + cells)


class Progress:
    """Plain-text progress bar on stderr: ``[#####-----] 5/10 label``."""

    def __init__(self, total, enabled=True, stream=None, width=24):
        self.total, self.width, self.done, self.enabled = total, width, 0, enabled
        self.stream = stream or sys.stderr
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.start = time.perf_counter()

    def show(self, label):
        if not self.enabled:
            return
        fill = round(self.width * self.done / max(self.total, 1))
        line = f"[{'#' * fill}{'-' * (self.width - fill)}] {self.done}/{self.total} {label}"
        print(f"\r{line:<100}" if self.tty else line, end="" if self.tty else "\n",
              file=self.stream, flush=True)

    def advance(self, label=""):
        self.done += 1
        self.show(label)
        if self.done == self.total:
            self.show(f"done in {time.perf_counter() - self.start:.1f} s")
            if self.tty and self.enabled:
                print(file=self.stream)


def cpu_name():
    """The CPU model (``/proc/cpuinfo``), or what ``platform`` knows."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return cpu


def machine():
    """A one-line description of the machine and software versions."""
    import scipy
    return (f"{cpu_name()} ({os.cpu_count()} cores); Python {platform.python_version()}, "
            f"natcoord {__version__}, NumPy {np.__version__}, SciPy {scipy.__version__}")


def csv_header(command):
    """The ``#`` lines opening every CSV natcoord writes: machine, date and command."""
    return f"# {machine()}\n# {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC: {command}\n"


def write_csv(path, rows, columns, command):
    """Write ``rows`` (dicts) with a ``#`` header naming the machine, date and command."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        f.write(csv_header(command))
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v)
                             for k, v in row.items()})
    return path


def read_csv(path):
    """Rows of a CSV written by ``write_csv``: dicts of floats (text kept as str)."""
    with Path(path).open() as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return [{k: _number(v) for k, v in row.items()} for row in rows]


def _number(text):
    if text in ("True", "False"):
        return text == "True"
    try:
        return float(text)
    except ValueError:
        return text
