"""A study's CSV file: rows keyed by ``key``, appended as runs finish, read back to resume.

The file is a :mod:`natcoord.study.records` CSV (machine header, one row per
finished run, floats written exactly). Started again on the same file, a
study reads the rows it holds (rows cut short by a crash are skipped) and
runs only the points whose key is not among them.
"""
from __future__ import annotations

from pathlib import Path

from .records import append_csv, as_table, read_csv, read_fields


class StudyLog:
    """The study's CSV: header on creation, rows appended (and flushed) as runs finish."""

    def __init__(self, path, columns, command):
        self.path, self.columns, self.command, self.rows = Path(path), list(columns), command, {}
        if self.path.exists() and self.path.stat().st_size:
            found = read_fields(self.path)
            if found != self.columns:
                raise ValueError(
                    f"{self.path} holds another study (columns {found}); "
                    f"to resume, ask for the same parameters and measures, or choose "
                    f"another output file")
            for row in read_csv(self.path):
                self.rows[row["key"]] = row
        else:
            append_csv(self.path, [], self.columns, command)

    def append(self, rows):
        """Append finished rows."""
        append_csv(self.path, rows, self.columns, self.command)

    def close(self):
        """Nothing to release: every append opens and closes the file."""


def read(path):
    """The table of a study's CSV (as ``sweep`` returns it, in file order)."""
    return as_table(read_csv(path), read_fields(path))
