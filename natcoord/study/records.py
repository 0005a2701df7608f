"""Records: every CSV natcoord writes and reads, and the progress bar of long runs.

The one module for the benchmarks (``benchmarks/natcoord_bench``), the sweeps
(:mod:`natcoord.study.sweep`) and ``paper/figures.py``:

* **The file.** A CSV opens with ``#`` lines naming the machine, the
  software versions, the date and the command (:func:`csv_header`), then the
  column line, then one line per row. Readers skip the ``#`` lines and rows
  cut short (a crash in the middle of a line).
* **One cell rule.** :func:`format_cell` writes a value: ``None`` as an
  empty cell, booleans as ``True``/``False``, floats as the shortest text
  that reads back to the same float (``digits=None``) or with ``digits``
  significant digits, anything else as ``str``. :func:`parse_cell` reads a
  cell back: empty → NaN, ``True``/``False`` → bool, then
  :func:`parse_value` (``int``, else ``float``, else the text itself), the
  parser of command-line values too.
* **Reading.** :func:`read_csv` gives rows (dicts of parsed cells),
  :func:`read_columns` columns (name → NumPy array: float where every cell
  is a number or empty, else text), :func:`read_machine` the machine line.
* **Writing.** :func:`write_csv` writes a whole file; :func:`append_csv`
  appends rows (header first when the file is new) to a file that grows
  while its runs finish; :func:`as_table` turns rows into a pandas
  ``DataFrame`` (a NumPy structured array without pandas).
* **Progress.** :class:`Progress`, :class:`ThrottledProgress`, and
  :func:`text_table` for the summaries the experiments print.
"""
from __future__ import annotations

import csv
import io
import math
import os
import platform
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import numpy as np

from ..util.atomic import atomic_write, locked
from ..util.checks import parse_value

#: what the machine line says when a CSV has none
UNKNOWN_MACHINE = "unknown machine"


# ------------------------------------------------------------------ cells
def format_cell(value, digits=None):
    """The text of one CSV cell (the one rule every natcoord CSV is written with).

    ``None`` → empty; ``bool`` → ``True``/``False``; ``float`` → the shortest
    text that reads back to the same float (``digits=None``) or ``digits``
    significant digits (``format(value, ".6g")`` for ``digits=6``); NaN →
    ``nan``; NumPy scalars as their Python value; anything else ``str(value)``.
    """
    if value is None:
        return ""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return repr(value) if digits is None else format(value, f".{digits}g")
    return str(value)


def parse_cell(text):
    """The value of one CSV cell: empty → NaN, ``True``/``False`` → bool, else
    :func:`parse_value` (int, float or the text)."""
    if text == "":
        return math.nan
    if text in ("True", "False"):
        return text == "True"
    return parse_value(text)


def round_trip(row, text=()):
    """``row`` as it reads back from a CSV written at full precision (the columns
    ``text`` as text)."""
    return {k: format_cell(v) if k in text else parse_cell(format_cell(v))
            for k, v in row.items()}


# ------------------------------------------------------------------ header
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


def natcoord_version():
    """The installed natcoord's version (``unknown`` when not installed)."""
    try:
        return metadata.version("natcoord")
    except metadata.PackageNotFoundError:
        return "unknown"


def machine():
    """A one-line description of the machine and software versions."""
    import scipy
    return (f"{cpu_name()} ({os.cpu_count()} cores); Python {platform.python_version()}, "
            f"natcoord {natcoord_version()}, NumPy {np.__version__}, "
            f"SciPy {scipy.__version__}")


def csv_header(command):
    """The ``#`` lines opening every CSV natcoord writes: machine, date and command."""
    return f"# {machine()}\n# {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC: {command}\n"


def read_machine(path):
    """The machine line (first ``#`` line) of a CSV, or ``unknown machine``."""
    with Path(path).open() as f:
        first = f.readline()
    return first[1:].strip() if first.startswith("#") else UNKNOWN_MACHINE


# ------------------------------------------------------------------ reading
def parse_rows(lines, fieldnames=None, text=()):
    """Rows (dicts of :func:`parse_cell` values; the columns ``text`` kept as
    text) of CSV ``lines``: ``#`` lines skipped, the column line read unless
    ``fieldnames`` are given, rows with missing or extra cells (cut short by a
    crash) left out.

    Returns ``(fieldnames, rows)``.
    """
    reader = csv.DictReader((line for line in lines if not line.startswith("#")),
                            fieldnames=fieldnames)
    rows = [{k: v if k in text else parse_cell(v) for k, v in row.items()} for row in reader
            if None not in row and None not in row.values()]
    return list(reader.fieldnames or fieldnames or []), rows


def read_csv(path, text=()):
    """Rows (dicts of parsed cells, :func:`parse_cell`; the columns ``text`` as
    text) of a CSV written by natcoord."""
    with Path(path).open(newline="") as f:
        return parse_rows(f, text=text)[1]


def read_fields(path):
    """The column names of a CSV (``[]`` when it has none yet)."""
    with Path(path).open(newline="") as f:
        for line in f:
            if not line.startswith("#"):
                return next(csv.reader([line]))
    return []


def read_columns(path):
    """Columns (name → array) of a CSV: float where every cell is a number or
    empty (NaN), else the cells' text."""
    with Path(path).open(newline="") as f:
        reader = csv.DictReader(line for line in f if not line.startswith("#"))
        rows = [row for row in reader if None not in row and None not in row.values()]
        names = list(reader.fieldnames or [])
    columns = {}
    for name in names:
        text = [r[name] for r in rows]
        values = [parse_cell(t) for t in text]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            columns[name] = np.array(values, dtype=float)
        else:
            columns[name] = np.array(text)
    return columns


# ------------------------------------------------------------------ writing
def csv_text(rows, columns, digits=None, header=True, strict=True):
    """The CSV lines of ``rows`` (dicts; missing keys are empty cells), with the
    column line when ``header``. ``strict``: ``ValueError`` for a key that is not
    a column (a misspelt column loses no data silently)."""
    if strict:
        extra = sorted({k for row in rows for k in row} - set(columns))
        if extra:
            raise ValueError(f"rows hold values of {extra}, which are not columns {list(columns)}")
    buffer = io.StringIO()
    writer = csv.writer(buffer)           # the csv module's dialect: rows end in \r\n
    if header:
        writer.writerow(columns)
    writer.writerows([format_cell(row.get(c), digits) for c in columns] for row in rows)
    return buffer.getvalue()


def write_csv(path, rows, columns, command, digits=6, lock=True):
    """Write ``rows`` (dicts) under the ``#`` header naming the machine, date and
    ``command`` (no header when ``command`` is None); floats with ``digits``
    significant digits (``None``: exact). The file is replaced whole or not at
    all (:func:`natcoord.util.atomic.atomic_write`); ``lock=False`` when the
    caller holds ``locked(path)`` (to read, merge and rewrite). Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (csv_header(command) if command is not None else "") + csv_text(rows, columns, digits)
    with atomic_write(path, newline="", lock=lock) as f:
        f.write(text)
    return path


def append_csv(path, rows, columns, command, digits=None):
    """Append ``rows`` to ``path`` under its advisory lock
    (:func:`natcoord.util.atomic.locked`: writers of one file take turns); a new
    or empty file gets :func:`csv_header` and the column line first.
    ``ValueError`` when the file has other columns; keys of the rows that are
    not columns are left out. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path):
        fresh = not path.exists() or path.stat().st_size == 0
        if not fresh:
            found = read_fields(path)
            if found != list(columns):
                raise ValueError(f"{path}: its columns {found} are not {list(columns)}")
        text = (csv_header(command) if fresh else "") + csv_text(
            rows, columns, digits, header=fresh, strict=False)
        with path.open("a", newline="") as f:
            f.write("" if fresh else line_break(path))
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    return path


def line_break(path):
    """``"\\n"`` when the file does not end in one (a crash may leave half a line)."""
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        if not f.tell():
            return ""
        f.seek(-1, os.SEEK_END)
        return "" if f.read(1) == b"\n" else "\n"


def as_table(rows, columns, use_pandas=True):
    """Rows (dicts) as a pandas ``DataFrame``, or a NumPy structured array without pandas
    (booleans, integers and floats as such, anything else as text)."""
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None and use_pandas:
        return pd.DataFrame.from_records(rows, columns=columns)

    def dtype(values):
        if values and all(isinstance(v, bool) for v in values):
            return bool
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return np.int64
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return np.float64
        return f"U{max([len(format_cell(v)) for v in values] + [1])}"

    values = {c: [r.get(c, math.nan) for r in rows] for c in columns}
    dtypes = [(c, dtype(values[c])) for c in columns]
    cells = {c: [format_cell(v) if isinstance(t, str) and not
                 (isinstance(v, float) and math.isnan(v)) else ("" if isinstance(t, str) else v)
                 for v in values[c]] for c, t in dtypes}
    data = list(zip(*(cells[c] for c in columns)))
    return np.array(data, dtype=dtypes)


# ------------------------------------------------------------------ progress
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


class ThrottledProgress:
    """A :class:`Progress` bar redrawn at most every ``every`` seconds (always on a
    terminal, and at the end)."""

    def __init__(self, total, enabled, every=1.0):
        self.bar, self.every, self.last = Progress(total, enabled), every, -math.inf

    def advance(self, label=""):
        bar = self.bar
        bar.done += 1
        now = time.perf_counter()
        if bar.done == bar.total:
            bar.done -= 1
            bar.advance(label)
        elif now - self.last >= self.every or bar.tty:
            bar.show(label)
            self.last = now
