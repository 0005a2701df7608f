"""Projection onto the position and velocity constraints, and assembly
(docs/method.md#17-integration).

Positions: simplified Newton on ``min ‖Δp‖_M  s.t.  g(p + Δp) = 0``; each
iterate solves ``[[M, Gᵀ], [G, 0]] [Δp; μ] = [0; −g]`` with the current KKT
factorization. Velocities: ``[[M, Gᵀ], [G, 0]] [Δv; μ] = [0; −(G v + g_t)]``,
the M-orthogonal projection onto ``G v + g_t = 0``. Dropped (redundant) rows
take no part: their right-hand side is ignored, as in the factorization.
"""
from __future__ import annotations

import numpy as np

from .dynamics import Workspace
from .kernels import jacobian_times
from .model import JOINT, State


#: residual tolerance of assembly (consistent initial values)
ASSEMBLY_TOL = 1e-12
#: simplified Newton refactors when an iteration reduces the residual less than this
CONTRACTION = 0.01
#: kept rows are converged a decade past proj_tol: a dropped (redundant) row is
#: not projected, its residual is an O(1) combination of the kept rows' ones.
MARGIN = 0.1
#: a residual row sums terms of size ``|G| |x|``; within this many machine
#: epsilons of that scale it is round-off and cannot be reduced (fast bodies at
#: a proj_tol near 1e-12)
ROUNDOFF = 10.0


class AssemblyError(ValueError):
    """Consistent initial values could not be found."""


class ProjectionError(RuntimeError):
    """The projection's Newton iteration failed to reach the tolerance."""


def _kept_max(ws, residual):
    keep = np.ones(residual.size, bool)
    keep[ws.solver.dropped] = False
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

    Starts from the factorization in ``ws`` (usually that of the last stage,
    evaluated at the unprojected point) and refactors at the current point
    when an iteration contracts the residual by less than ``CONTRACTION``.
    Kept rows are converged to ``MARGIN`` times ``tol`` (``tol(x)``: the
    tolerance, raised to the round-off floor at ``x``; see :func:`threshold`).
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
        dx, _ = ws.solver.solve(zero, -r)
        x = x + dx
    raise ProjectionError(f"{what} projection: residual of the kept rows {size:.3e} > "
                          f"{target:.1e} (= {MARGIN:g} × max(proj_tol, round-off floor)) "
                          f"after {max_iter} iterations")


def project_positions(ws: Workspace, t, p, v, tol, max_iter=8):
    """Project ``p`` onto ``g(p, t) = 0``; returns ``(p, iterations)``.

    Leaves ``ws`` evaluated at the projected ``p``.
    """
    def g(p):
        ws.constraints(t, p, v)
        return ws.g
    return _simplified_newton(ws, p, g, lambda p: threshold(ws, p, tol), max_iter,
                              "position")


def project_velocities(ws: Workspace, t, p, v, tol, max_iter=8, evaluated=False):
    """Project ``v`` onto ``G(p) v + g_t = 0``; returns ``(v, iterations)``.

    ``evaluated``: ``ws`` already holds ``G`` and ``g_t`` at ``(t, p)`` (as
    ``project_positions`` leaves it); neither depends on ``v``.
    """
    if not evaluated:
        ws.constraints(t, p, v)
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


def _worst_rows(model, g, count=5):
    return describe_rows(model, g, np.argsort(-np.abs(g))[:count])


def assemble(model, p, v, t=0.0, solver=None, proj_tol=ASSEMBLY_TOL, max_iter=50):
    """Consistent ``(State, dropped rows)`` nearest (in the M-norm) to ``(p, v)``.

    Full Newton (refactored every iteration, with step halving) because the
    guess may be far from the constraint manifold. Convergence is judged on
    every row, dropped ones included: a dropped row is implied by the kept
    rows only if the constraints are consistent (at a singular configuration
    an unsatisfiable row can look redundant).
    """
    ws = Workspace(model, solver)
    p = np.array(p, float).ravel()
    v = np.array(v, float).ravel()
    if p.size != model.n_coords or v.size != model.n_coords:
        raise AssemblyError(f"p and v must have {model.n_coords} entries "
                            f"(12 per body), got {p.size} and {v.size}")
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(v))):
        raise AssemblyError("initial p or v contains NaN or infinity")
    zero = np.zeros_like(v)
    ws.constraints(t, p, zero)
    for _ in range(max_iter):
        ws.factor()
        residual = np.abs(ws.g).max(initial=0.0)
        if residual <= proj_tol:
            break
        dp, _ = ws.solver.solve(zero, -ws.g)
        step = 1.0
        while True:
            ws.constraints(t, p + step * dp, zero)
            if np.abs(ws.g).max(initial=0.0) < residual or step < 1e-3:
                break
            step *= 0.5
        p = p + step * dp
    else:
        raise AssemblyError(
            f"assembly of {model.name!r} did not converge in {max_iter} Newton iterations: "
            f"‖g‖∞ = {residual:.3e} (tolerance {proj_tol:.1e}). Largest residuals:\n"
            f"{_worst_rows(model, ws.g)}\nCheck that these joints can be closed from the "
            f"given configuration (points, axes, lengths).")
    v, _ = project_velocities(ws, t, p, v, proj_tol)
    return State(t, p, v), ws.solver.dropped.copy()
