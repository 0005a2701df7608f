"""The projections' tolerances, and the velocity projection of a consistent state's
assembly (docs/method.md#17-integration).

Velocities: ``[[M, Gᵀ], [G, 0]] [Δv; μ] = [0; −(G v + g_t)]``, the M-orthogonal
projection onto ``G v + g_t = 0``. Dropped (redundant) rows take no part: their
right-hand side is ignored, as in the factorization.

Both are the core's (natcoord/core/src/dopri5.c: ``nc_threshold`` and ``nc_project``,
the simplified Newton the integrators project positions and velocities with, for
every model and backend): one projection rule. The assembly of consistent initial
states (:mod:`natcoord.dynamics.assembly`) projects its velocities here; its
positions take a full Newton with step halving there, since a guess may be far from
the manifold.
"""
from __future__ import annotations

import numpy as np

from ..core import engine
from ..model.core_tables import packed_tables
from ..model.frozen import JOINT
from .core_run import PROJECT_VELOCITIES

#: ``rate`` of :func:`threshold` for positions: none
_NO_RATE = np.zeros(0)


def threshold(ws, x, tol, rate=None):
    """The tolerance a residual ``G x + rate`` can be held to: ``max(tol, ROUNDOFF ε s)``
    with the scale ``s = max_rows (|G| |x| + |rate|)`` of the terms it sums (a row of
    many terms of size ``|G| |x|`` is round-off within a few ε of that; ``nc_threshold``).

    For positions ``x = p`` (``G p`` is of the size of the terms of ``g``), for
    velocities ``x = v`` and ``rate = g_t``; the :class:`~natcoord.dynamics.workspace.Workspace`
    ``ws`` holds ``G``.
    """
    return engine.threshold(packed_tables(ws.model), ws.G, np.ascontiguousarray(x, float),
                            _NO_RATE if rate is None else rate, float(tol))


def project_velocities(ws, t, p, v, tol):
    """``v`` projected onto ``G(p) v + g_t = 0`` at time ``t`` (a new array), by the
    integrators' simplified Newton (``nc_project``) on the backend of the
    :class:`~natcoord.dynamics.workspace.Workspace` ``ws``: factored at ``p`` first,
    kept rows converged to a tenth of ``tol`` times the mechanism's size factor (or
    their round-off floor). Raises
    :class:`~natcoord.dynamics.core_run.ProjectionError` when it does not converge."""
    y = np.concatenate([p, v], dtype=float)
    ws.core.project(t, y, ws.weights(t), PROJECT_VELOCITIES, tol)
    return y[p.size:]


def describe_rows(model, g, rows):
    """One line per row: label, owning joint or body, residual."""
    lines = []
    for r in rows:
        owner = model.row_owner[r]
        where = (f"joint {model.joints[owner].name!r}" if model.row_kind[r] == JOINT
                 else f"body {model.bodies[owner].name!r}")
        lines.append(f"  {model.row_labels[r]} ({where}): {g[r]:+.3e}")
    return "\n".join(lines)
