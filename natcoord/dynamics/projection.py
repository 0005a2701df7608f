"""Velocity projection of a consistent state's assembly, and the tolerances of projections
(docs/method.md#17-integration).

Velocities: ``[[M, Gᵀ], [G, 0]] [Δv; μ] = [0; −(G v + g_t)]``, the M-orthogonal
projection onto ``G v + g_t = 0``. Dropped (redundant) rows take no part: their
right-hand side is ignored, as in the factorization.

The assembly of consistent initial states (natcoord.dynamics.assembly) projects
velocities with a :class:`~natcoord.dynamics.workspace.Workspace` here; its positions
take a full Newton with step halving there, since a guess may be far from the
manifold. The integrators (DOPRI5 and Radau, every model and backend) project
positions and velocities in the core (``nc_project``, natcoord/core/src/dopri5.c).
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


def project_velocities(ws: Workspace, t, p, v, tol, max_iter=8, evaluated=False):
    """Project ``v`` onto ``G(p) v + g_t = 0``; returns ``(v, iterations)``.

    Each iteration solves ``[[M, Gᵀ], [G, 0]] [Δv; μ] = [0; −(G v + g_t)]``, starting
    from the factorization in ``ws`` and refactoring when an iteration contracts the
    residual by less than ``CONTRACTION`` (the equations are linear in ``v``: one
    iteration suffices unless the factorization was made elsewhere). Kept rows are
    converged to ``MARGIN`` times ``tol`` times :func:`size_factor`, raised to the
    round-off floor (:func:`threshold`). ``evaluated``: ``ws`` already holds ``G`` and
    ``g_t`` at ``(t, p)``; neither depends on ``v``.
    """
    if not evaluated:
        ws.constraints(t, p, v)
    tol = tol * size_factor(ws.model)
    zero = np.zeros(v.size)
    previous = np.inf
    for it in range(max_iter):
        r = ws.velocity_residual(v)
        size, target = _kept_max(ws, r), MARGIN * threshold(ws, v, tol, ws.g_t)
        if size <= target:
            return v, it
        if size > CONTRACTION * previous:
            ws.factor()
        previous = size
        dv, _ = ws.solve(zero, -r)
        v = v + dv
    raise ProjectionError(f"velocity projection: residual of the kept rows {size:.3e} > "
                          f"{target:.1e} (= {MARGIN:g} × max(proj_tol × min(1, size in m), "
                          f"round-off floor)) after {max_iter} iterations")


def describe_rows(model, g, rows):
    """One line per row: label, owning joint or body, residual."""
    lines = []
    for r in rows:
        owner = model.row_owner[r]
        where = (f"joint {model.joints[owner].name!r}" if model.row_kind[r] == JOINT
                 else f"body {model.bodies[owner].name!r}")
        lines.append(f"  {model.row_labels[r]} ({where}): {g[r]:+.3e}")
    return "\n".join(lines)
