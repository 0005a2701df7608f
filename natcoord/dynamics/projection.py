"""Projection onto the position and velocity constraints (docs/method.md#17-integration).

Positions: simplified Newton on ``min ‖Δp‖_M  s.t.  g(p + Δp) = 0``; each
iterate solves ``[[M, Gᵀ], [G, 0]] [Δp; μ] = [0; −g]`` with the current KKT
factorization. Velocities: ``[[M, Gᵀ], [G, 0]] [Δv; μ] = [0; −(G v + g_t)]``,
the M-orthogonal projection onto ``G v + g_t = 0``. Dropped (redundant) rows
take no part: their right-hand side is ignored, as in the factorization.

This is the projection of a :class:`~natcoord.dynamics.workspace.Workspace`, which
the assembly of consistent initial states uses; the integrators (DOPRI5 and Radau,
every model and backend) project in the core (``nc_project``,
natcoord/core/src/dopri5.c), by the same rule.
"""
from __future__ import annotations

import numpy as np

from .workspace import Workspace
from ..model.core_tables import size_factor
from ..model.kernels import jacobian_times
from ..model.frozen import JOINT

#: simplified Newton refactors when an iteration reduces the residual less than this
CONTRACTION = 0.01
#: kept rows are converged a decade past proj_tol (times :func:`size_factor`): a
#: dropped (redundant) row is not projected, its residual is an O(1) combination of
#: the kept rows' ones.
MARGIN = 0.1
#: a residual row sums terms of size ``|G| |x|``; within this many machine
#: epsilons of that scale it is round-off and cannot be reduced (fast bodies at
#: a proj_tol near 1e-12)
ROUNDOFF = 10.0


class ProjectionError(RuntimeError):
    """The projection's Newton iteration failed to reach the tolerance."""


def _kept_max(ws, residual):
    keep = np.ones(residual.size, bool)
    keep[ws.dropped] = False
    return float(np.abs(residual[keep]).max(initial=0.0))


def threshold(ws: Workspace, x, tol, rate=None):
    """The tolerance a residual ``G x + rate`` can be held to: ``max(tol, ROUNDOFF ε s)``
    with the scale ``s = max_rows (|G| |x| + |rate|)`` of the terms it sums.

    For positions ``x = p`` (``G p`` is of the size of the terms of ``g``), for
    velocities ``x = v`` and ``rate = g_t``; ``ws`` holds ``G``.
    """
    tables = ws.model.tables
    scale = np.empty(ws.model.n_rows)
    jacobian_times(np.abs(ws.G), tables.pattern_row, tables.pattern_slot,
                   np.abs(x).reshape(-1, 3), scale)
    if rate is not None:
        scale += np.abs(rate)
    return max(tol, ROUNDOFF * np.finfo(float).eps * float(scale.max(initial=0.0)))


def _simplified_newton(ws: Workspace, x, residual, tol, max_iter, what):
    """Iterate ``x ← x + Δx`` with ``[[M, Gᵀ], [G, 0]] [Δx; μ] = [0; −residual(x)]``.

    Starts from the factorization in ``ws`` and refactors at the current point
    when an iteration contracts the residual by less than ``CONTRACTION``.
    Kept rows are converged to ``MARGIN`` times ``tol`` (``tol(x)``: the
    tolerance times :func:`size_factor`, raised to the round-off floor at ``x``;
    see :func:`threshold`).
    Returns ``(x, iterations)``.
    """
    zero = np.zeros(x.size)
    previous = np.inf
    for it in range(max_iter):
        r = residual(x)
        size, target = _kept_max(ws, r), MARGIN * tol(x)
        if size <= target:
            return x, it
        if size > CONTRACTION * previous:
            ws.factor()
        previous = size
        dx, _ = ws.solve(zero, -r)
        x = x + dx
    raise ProjectionError(f"{what} projection: residual of the kept rows {size:.3e} > "
                          f"{target:.1e} (= {MARGIN:g} × max(proj_tol × min(1, size in m), "
                          f"round-off floor)) after {max_iter} iterations")


def project_positions(ws: Workspace, t, p, v, tol, max_iter=8):
    """Project ``p`` onto ``g(p, t) = 0``; returns ``(p, iterations)``.

    Leaves ``ws`` evaluated at the projected ``p``.
    """
    def g(p):
        ws.constraints(t, p, v)
        return ws.g
    tol = tol * size_factor(ws.model)
    return _simplified_newton(ws, p, g, lambda p: threshold(ws, p, tol), max_iter,
                              "position")


def project_velocities(ws: Workspace, t, p, v, tol, max_iter=8, evaluated=False):
    """Project ``v`` onto ``G(p) v + g_t = 0``; returns ``(v, iterations)``.

    ``evaluated``: ``ws`` already holds ``G`` and ``g_t`` at ``(t, p)`` (as
    ``project_positions`` leaves it); neither depends on ``v``.
    """
    if not evaluated:
        ws.constraints(t, p, v)
    tol = tol * size_factor(ws.model)
    return _simplified_newton(ws, v, ws.velocity_residual,
                              lambda v: threshold(ws, v, tol, ws.g_t), max_iter, "velocity")


def describe_rows(model, g, rows):
    """One line per row: label, owning joint or body, residual."""
    lines = []
    for r in rows:
        owner = model.row_owner[r]
        where = (f"joint {model.joints[owner].name!r}" if model.row_kind[r] == JOINT
                 else f"body {model.bodies[owner].name!r}")
        lines.append(f"  {model.row_labels[r]} ({where}): {g[r]:+.3e}")
    return "\n".join(lines)
