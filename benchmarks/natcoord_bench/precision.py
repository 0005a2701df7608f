"""Work–precision comparison: linear-solver backends and stabilizations.

Runtime against achieved accuracy (Hairer & Wanner's work–precision
diagrams) for two families on the same ``rtol`` sweep: every available
backend with ``position+velocity`` projection (same trajectories, different
cost per evaluation), and one backend under each stabilization
(``position+velocity`` projection, Baumgarte, none: different drift).
Run by ``natcoord bench tolerance MODEL --work-precision``; the rows have the
columns of :mod:`natcoord_bench.tolerance`.
"""
from __future__ import annotations

from natcoord.linalg import available_solvers

STABILIZATIONS = ("position+velocity", "baumgarte", "none")


def comparison(solver):
    """(solver, projection) pairs: all backends projected, ``solver`` under each stabilization."""
    backends = [(s, STABILIZATIONS[0]) for s in available_solvers()]
    return backends + [(solver, p) for p in STABILIZATIONS[1:]]
