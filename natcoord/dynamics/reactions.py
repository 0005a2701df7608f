"""Joint reaction forces from the multipliers (issue 10, item 5).

With ``M a + Gᵀ λ = f`` (dynamics.py) the constraint force on the
coordinates is ``−Gᵀ λ``; joint j's share is ``Q = −G_jᵀ λ_j``. On a body with
slot vectors ``(r, e1, e2, e3)`` a rigid virtual motion ``δr``,
``δe_i = δφ × e_i`` does the work

    δW = Q_r·δr + Σ Q_ei·(δφ × e_i) = Q_r·δr + δφ·Σ e_i × Q_ei,

so ``Q`` is the force ``F = Q_r`` through the frame origin r plus the torque
``τ_r = Σ e_i × Q_ei``; about a point x, ``τ_x = τ_r + (r − x) × F``.

Sign and body: the reaction is the force and torque the joint exerts on its
second body b (``add_revolute(a, b, ...)``), the torque taken about the joint
point (the point of the joint's coincidence rows, on body b; the frame origin
of b for joints without one: cylindrical, prismatic, distance). Body a feels
the opposite wrench about the same point. When b is ground, the reaction on
ground is minus the one on a (the joint's rows are invariant under a common
rigid motion of both sides).

Redundant rows: the split of λ among the rows of an overconstrained loop is
not determined by the dynamics; the solver's (dropped rows at zero) depends
on which rows it drops. Reactions use the *minimum-norm* multipliers instead:
``λ̂ = argmin ‖λ‖₂`` over all rows subject to ``Gᵀ λ̂ = Gᵀ λ``, i.e. λ minus its
component in the null space of ``Gᵀ`` (spanned by the left singular vectors of
``G`` of its smallest singular values, one per dropped row). The norm is taken
in natcoord's row scaling (rows of unit-length directions, lengths in metres).
The SVD is dense, O(m (12 n)²): meant for analysis, not inner loops.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .workspace import Workspace, workspace_of
from ..model.kernels import jacobian_transpose_times
from ..model import validate
from ..model.frozen import State
from ..util.checks import float_array

FRAMES = ("world", "a", "b")


class Reaction(NamedTuple):
    """Force and torque (3,) on body b, the torque about ``point`` (3,)."""

    force: np.ndarray
    torque: np.ndarray
    point: np.ndarray


def minimum_norm_multipliers(model, ws, lam):
    """``λ̂ = λ − U₀ U₀ᵀ λ``, U₀ the left null space of ``G`` (as many as rows dropped).

    ``ws`` holds ``G`` and the dropped rows of the evaluation that gave λ.
    """
    k = ws.dropped.size
    if k == 0:
        return lam
    U, _, _ = np.linalg.svd(model.tables.csr(ws.G).toarray())
    null = U[:, model.n_rows - k:]
    return lam - null @ (null.T @ lam)


def joint_reaction(model, state, joint, frame="world", multipliers=None, workspace=None):
    """The :class:`Reaction` of ``joint`` on its body b at ``state``.

    ``frame``: components in world axes, or in the axes ``(e1, e2, e3)`` of
    body a or b (ground's are the world axes). ``multipliers``: λ (m,) to use
    instead of the minimum-norm multipliers at ``state``.
    """
    state = validate.state(validate.model(model), state)
    ws = workspace_of(model, workspace)
    p, v = state.p, state.v
    _, lam = ws.accelerations(state.t, p, v)
    if multipliers is None:
        multipliers = minimum_norm_multipliers(model, ws, lam)
    else:
        multipliers = float_array(multipliers)
        if multipliers is None or multipliers.shape != (model.n_rows,):
            raise ValueError(f"multipliers must be {model.n_rows} numbers, one per constraint "
                             f"row of {model.name!r} (Solution.lam[k] with multipliers=True)")
    return _reaction(model, ws.G, p.reshape(-1, 3), joint, frame, multipliers)


def joint_reactions(model, t, p, v, joint, frame="world"):
    """:func:`joint_reaction` along a trajectory: ``Reaction`` of (k, 3) arrays."""
    ws = Workspace(model)
    out = [joint_reaction(model, State(ti, pi, vi), joint, frame, workspace=ws)
           for ti, pi, vi in zip(t, p, v)]
    return Reaction(*(np.array(x) for x in zip(*out)))


def _reaction(model, G, X, joint, frame, lam):
    if frame not in FRAMES:
        raise ValueError(f"frame must be one of {FRAMES}, got {frame!r}")
    j, _ = model.joint_named(joint)
    start, stop = model.joint_rows[j]
    lam_j = np.zeros(model.n_rows)
    lam_j[start:stop] = lam[start:stop]
    Q = np.zeros_like(X)
    jacobian_transpose_times(G, model.tables.pattern_row, model.tables.pattern_slot, lam_j, Q)
    Q = -Q
    a, b = model.joint_bodies[j]
    side = b if b >= 0 else a
    point = joint_anchor(model, j, side) @ X[4 * side:4 * side + 4]
    force, torque = body_wrench(X, Q, side, point)
    if b < 0:
        force, torque = -force, -torque
    R = axes(X, {"a": a, "b": b}.get(frame, -1))
    return Reaction(R.T @ force, R.T @ torque, point)


def body_wrench(X, Q, body, point):
    """``(F, τ_x)`` of the generalized force ``Q`` (4 n, 3) on ``body`` about ``point``.

    ``F = Q_r``, ``τ_x = Σ e_i × Q_ei + (r − x) × F``.
    """
    s = 4 * body
    force = Q[s]
    torque = np.cross(X[s + 1:s + 4], Q[s + 1:s + 4]).sum(axis=0)
    return force, torque + np.cross(X[s] - point, force)


def axes(X, body):
    """``[e1 e2 e3]`` (columns) of ``body``; the identity for ground (−1)."""
    return np.eye(3) if body < 0 else X[4 * body + 1:4 * body + 4].T


def joint_anchor(model, j, body):
    """``c̄ = (1, r̄)`` of joint j's point on ``body`` (world ``x = C(r̄) p_body``).

    Read from the joint's first coincidence row ``± (r_a − r_b)·e_x`` (slot
    coefficients ``±(1, r̄)``); the frame origin when the joint has none.
    """
    spec = model.joints[j]
    for row in spec.rows:
        if row.label == f"{spec.name}: x":
            lin = row.parts[0][1].lin
            c = np.array([lin[s][0] if s in lin else 0.0 for s in range(4 * body, 4 * body + 4)])
            return c / c[0]
    return np.array([1.0, 0.0, 0.0, 0.0])
