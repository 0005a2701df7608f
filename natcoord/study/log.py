"""A study's CSV file: one row per key, appended as runs finish, read back to resume.

The file is a :mod:`natcoord.study.records` CSV (machine header, column
line, one row per finished run, floats written exactly). Started again on
the same file, a study reads the rows it holds and runs only the points
whose key (:mod:`natcoord.study.keys`) is not among them.

Several studies may write one file at once (two ``natcoord sweep --out
same.csv``, or a sweep resumed while the first still runs): every write
holds the file's advisory lock (:func:`natcoord.util.atomic.locked`), and
before appending, a log reads what the others appended since it last
looked. A row whose key another writer has appended meanwhile is not
written again; the other's row is taken instead. So a key is in the file
once, except a failed row run again (``retry_failed``) or a row replaced
because its model changed: :meth:`StudyLog.compact` then rewrites the file
(atomically, under the lock) with the last row of each key and without the
rows it replaced.

A crash may leave half a line at the end: readers skip rows with missing
cells, and the next append starts on a new line.
"""
from __future__ import annotations

import csv
import io
import os
from contextlib import contextmanager
from pathlib import Path

from ..util.atomic import atomic_write, locked
from .records import (as_table, csv_header, csv_text, line_break, parse_cell, parse_rows,
                      read_fields)

#: columns read as text (a key such as ``5e12…`` is not a number)
TEXT = ("key",)


def check_out(path, what="out"):
    """``path`` as the ``Path`` of a study's CSV, its directory created;
    ``ValueError`` naming it when it is a directory or a file is in the way."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what} {path}: is a directory; give the name of a CSV file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ValueError(f"{what} {path}: {path.parent} is not a directory (a file is in "
                         f"the way)") from None
    return path


class NotWritten(OSError):
    """A study's CSV could not be read or written: another writer held its lock past the
    wait, the disk is full, no permission, ... (``filename``: the CSV; ``reason``: why)."""

    def __init__(self, path, error):
        self.reason = error.strerror or str(error)
        super().__init__(f"{path}: {self.reason}")
        self.filename = str(path)


@contextmanager
def _naming(path):
    try:
        yield
    except OSError as err:
        raise NotWritten(path, err) from err


class StudyLog:
    """The study's CSV at ``path`` with ``columns``: created with the machine header
    (naming ``command``) when new, else checked and read.

    ``rows``: key → row (the last row of each key) found when opened.
    ``ValueError`` when the file holds another study (other columns);
    :class:`NotWritten` when a read or write of it fails.
    """

    def __init__(self, path, columns, command):
        self.path, self.columns, self.command = check_out(path), list(columns), command
        self.rows = {}
        self.others = {}        # key -> row another writer appended after we opened the file
        self.mine = set()       # keys this log appended
        with _naming(self.path), locked(self.path):
            if self.path.exists() and self.path.stat().st_size:
                found = read_fields(self.path)
                if found != self.columns:
                    raise ValueError(
                        f"{self.path} holds another study (columns {found}); "
                        f"to resume, ask for the same parameters and measures, or choose "
                        f"another output file")
                with self.path.open(newline="") as f:
                    for row in parse_rows(f, text=TEXT)[1]:
                        self.rows[row["key"]] = row
            else:
                with atomic_write(self.path, newline="", lock=False) as f:
                    f.write(csv_header(command) + csv_text([], self.columns))
            self._mark()

    # ------------------------------------------------------------ what others wrote
    def _mark(self):
        stat = os.stat(self.path)
        self._file, self._size = (stat.st_dev, stat.st_ino), stat.st_size

    def _catch_up(self):
        """Read the rows other writers appended since this log last looked (under the lock)."""
        stat = os.stat(self.path)
        if (stat.st_dev, stat.st_ino) != self._file or stat.st_size < self._size:
            start, fields = 0, None          # rewritten (compacted) by another: read it all
        else:
            start, fields = self._size, self.columns
        with self.path.open("rb") as f:
            f.seek(start)
            text = f.read().decode("utf-8", errors="replace")
        _, rows = parse_rows(io.StringIO(text, newline=""), fieldnames=fields, text=TEXT)
        for row in rows:
            key = row.get("key")
            if key not in self.mine and (start or key not in self.rows):
                self.others[key] = row

    # ------------------------------------------------------------ writing
    def append(self, rows):
        """Append finished ``rows`` (dicts with a ``key``), except those whose key
        another writer appended meanwhile. Returns the rows as the file now holds
        them (ours, or the other writer's for those keys)."""
        with _naming(self.path), locked(self.path):
            self._catch_up()
            fresh = [row for row in rows if row["key"] not in self.others]
            if fresh:
                with self.path.open("a", newline="") as f:
                    f.write(line_break(self.path) + csv_text(fresh, self.columns, header=False,
                                                              strict=False))
                    f.flush()
                    os.fsync(f.fileno())
                self.mine.update(row["key"] for row in fresh)
            self._mark()
        return [self.others.get(row["key"], row) for row in rows]

    def compact(self, replaces=None):
        """Rewrite the file with one row per key, the last one written, and without
        the rows that ``replaces(row)`` names a replacement for (the key of the row
        that supersedes it) when that replacement is in the file. Atomic and under
        the lock; the rows kept keep their text, and the file is left as it is when
        there is nothing to drop. Returns the number of rows dropped."""
        with _naming(self.path), locked(self.path):
            with self.path.open(newline="") as f:
                lines = f.readlines()
            comments = [line.rstrip("\r\n") + "\n" for line in lines if line.startswith("#")]
            reader = csv.reader(line for line in lines if not line.startswith("#"))
            fields = next(reader, [])
            rows = [cells for cells in reader if len(cells) == len(fields)]
            key = fields.index("key")
            last = {cells[key]: cells for cells in rows}            # key -> its last row
            kept = [cells for cells in last.values() if replaces is None or replaces(
                {k: v if k in TEXT else parse_cell(v) for k, v in zip(fields, cells)})
                not in last]
            dropped = len(rows) - len(kept)
            if dropped:
                buffer = io.StringIO()
                buffer.writelines(comments)
                csv.writer(buffer).writerows([fields] + kept)
                with atomic_write(self.path, newline="", lock=False) as f:
                    f.write(buffer.getvalue())
            self._mark()
        return dropped

    def close(self):
        """Nothing to release: every write opens, locks and closes the file."""


def read(path):
    """The table of a study's CSV (as ``sweep`` returns it): one row per key (the last
    written), in the order the keys first appear."""
    with Path(path).open(newline="") as f:
        fields, rows = parse_rows(f, text=TEXT)
    last = {}
    for row in rows:
        last[row["key"]] = row
    return as_table(list(last.values()), fields)
