"""Solvers for the descriptor system ``[[M, Gᵀ], [G, 0]] [x; λ] = [r; s]``
(docs/method.md#16-linear-solve).

Every backend has the same small interface (:class:`~natcoord.linalg.base.KKTSolver`):
construction is the *symbolic* phase (once per model), ``factor(G)`` the
*numeric* phase (each evaluation; finds the redundant rows), ``solve(r, s)``
returns ``(x, λ)`` with zero multipliers on dropped rows.
"""
from .base import KKTSolver, available_solvers, default_solver, make_solver

__all__ = ["KKTSolver", "available_solvers", "default_solver", "make_solver"]
