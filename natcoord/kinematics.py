"""Joint coordinates, body orientation and angular velocity; joint rates at assembly.

Everything here is evaluated from the natural coordinates of docs/method.md#11-coordinates:
the rotation of a body is ``R = [e1 e2 e3]`` (the body axes were the columns
of ``axes`` in the reference configuration), its angular velocity
``ω = ½ Σ_k e_k × ė_k`` (from ``ω× = Ṙ Rᵀ``, exact for orthonormal axes); a
joint coordinate is a quadratic form of the coordinates (``joints.axial_coordinates``),
so its rate is linear in the velocities, ``θ̇ = c(p) · v``, which lets
assembly prescribe it exactly as one more velocity constraint.
"""
from __future__ import annotations

import warnings

import numpy as np

from .model import State


def _coordinate(model, joint, coordinate=None):
    """``(spec, name, quadratics)`` of a joint coordinate (default: the joint's first)."""
    _, spec = model.joint_named(joint)
    available = dict(spec.coordinates)
    if not available:
        raise ValueError(f"{spec.kind} joint {joint!r} has no joint coordinate (revolute, "
                         f"prismatic, cylindrical and point-on-line joints have one)")
    name = spec.coordinates[0][0] if coordinate is None else coordinate
    if name not in available:
        raise ValueError(f"joint {joint!r} has coordinates {list(available)}, not {name!r}")
    return spec, name, available[name]


def joint_coordinate(model, joint, X, coordinate=None):
    """Angle (rad, unwrapped along the first axis of ``X``) or slide (m).

    ``X``: slot vectors (..., 4 n, 3). An angle is zero in the reference
    configuration and right-handed about the joint axis, as the revolute drive.
    """
    _, name, quads = _coordinate(model, joint, coordinate)
    if name == "slide":
        return quads[0].value(X)
    theta = np.arctan2(quads[1].value(X), quads[0].value(X))
    return np.unwrap(theta, axis=0) if np.ndim(theta) else theta


def joint_rate(model, joint, X, V, coordinate=None):
    """Rate (rad/s or m/s) of a joint coordinate for slot velocities ``V``."""
    _, name, quads = _coordinate(model, joint, coordinate)
    if name == "slide":
        return quads[0].rate(X, V)
    x, y = quads[0].value(X), quads[1].value(X)
    return (x * quads[1].rate(X, V) - y * quads[0].rate(X, V)) / (x * x + y * y)


def rate_row(model, joint, X, coordinate=None):
    """``c`` (12 n,) with ``joint rate = c · v`` at the configuration ``X`` (4 n, 3)."""
    _, name, quads = _coordinate(model, joint, coordinate)
    if name == "slide":
        return quads[0].gradient(X).ravel()
    x, y = quads[0].value(X), quads[1].value(X)
    return ((x * quads[1].gradient(X) - y * quads[0].gradient(X)) / (x * x + y * y)).ravel()


def rotation(X, index):
    """Rotation matrices ``[e1 e2 e3]`` (..., 3, 3) of body ``index``."""
    return np.swapaxes(X[..., 4 * index + 1:4 * index + 4, :], -1, -2)


def angular_velocity(X, V, index):
    """World angular velocity ``ω = ½ Σ_k e_k × ė_k`` (..., 3) of body ``index``."""
    s = slice(4 * index + 1, 4 * index + 4)
    return 0.5 * np.cross(X[..., s, :], V[..., s, :]).sum(axis=-2)


def impose_joint_rates(model, t, p, v, rates, solver=None):
    """Consistent ``v`` nearest (M-norm) to ``v`` with the prescribed joint rates.

    ``v`` must satisfy ``G v + g_t = 0`` (the assembled velocity). With the rate
    rows ``C v = r``: ``Z = P M⁻¹ Cᵀ`` from KKT solves ``[[M, Gᵀ], [G, 0]] [Z; ·] =
    [Cᵀ; 0]`` (so ``G Z = 0``) and ``v ← v + Z (C Z)⁻¹ (r − C v)``, the M-orthogonal
    projection onto ``{G v + g_t = 0, C v = r}``. Raises ``AssemblyError`` when a
    rate is fixed by the constraints (a locked or driven joint).
    """
    from .dynamics import Workspace
    from .projection import ASSEMBLY_TOL, AssemblyError, project_velocities
    keys = list(rates)
    target = np.array([rates[k] for k in keys], float)
    X = p.reshape(-1, 3)
    C = np.array([rate_row(model, joint, X, coordinate) for joint, coordinate in keys])
    ws = Workspace(model, solver)
    ws.constraints(t, p, v)
    ws.factor()
    zero = np.zeros(model.n_rows)
    Z = np.column_stack([ws.solver.solve(c, zero)[0] for c in C])
    S = C @ Z
    # Is C independent of the constraints on their null space? Z spans the part
    # of null(G) that C sees, so C Z is singular iff some rate is fixed by G.
    # Rows and columns normalized in the Euclidean norm: a geometric test (not
    # relative to C M⁻¹ Cᵀ, which bodies of very different mass make tiny).
    unit = S / np.outer(np.linalg.norm(C, axis=1), np.linalg.norm(Z, axis=0))
    if not np.linalg.svd(unit, compute_uv=False).min() > 1e-8:
        names = ", ".join(f"{j!r} ({c})" for j, c in keys)
        raise AssemblyError(f"joint rates of {names} cannot be prescribed: the constraints "
                            f"(or the other prescribed rates) already determine them")
    # Correct the rates, then re-project onto G v + g_t = 0: with bodies of very
    # different mass Z is in null(G) only to ~1e-4 relative, and the projection
    # (M-orthogonal, so it barely moves the rates) restores the constraints.
    for _ in range(3):
        v = v + Z @ np.linalg.solve(S, target - C @ v)
        v, _ = project_velocities(ws, t, p, v, ASSEMBLY_TOL, evaluated=True)
    return v


def check_requested_velocities(model, state, requests, rtol=1e-6):
    """Warn (``UserWarning``) when assembly changed a ``set_initial`` velocity.

    ``requests``: ``{body index: {"velocity": (3,), "angular_velocity": (3,)}}``.
    A change larger than ``rtol (1 + |requested|)`` is reported.
    """
    X, V = state.p.reshape(-1, 3), state.v.reshape(-1, 3)
    changes = []
    for index, request in sorted(requests.items()):
        name = model.bodies[index].name
        got = {"velocity": V[4 * index], "angular_velocity": angular_velocity(X, V, index)}
        for what, wanted in request.items():
            wanted = np.asarray(wanted, float)
            if np.linalg.norm(got[what] - wanted) > rtol * (1.0 + np.linalg.norm(wanted)):
                changes.append(f"body {name!r} {what} {np.round(wanted, 6).tolist()} -> "
                               f"{np.round(got[what], 6).tolist()}")
    if changes:
        warnings.warn("assembly changed requested initial velocities (they violate the "
                      "velocity constraints; the consistent velocity nearest in the mass "
                      "norm was taken): " + "; ".join(changes) + ". Give consistent velocities "
                      "of all bodies, or prescribe joint rates with "
                      "Mechanism.set_joint_rate(joint, rate).", UserWarning, stacklevel=3)


def finish_assembly(model, state, solver=None, defaults=True):
    """Apply the model's prescribed joint rates and check requested velocities.

    ``defaults``: the velocity guess came from the mechanism (``set_initial``),
    so its joint rates and velocity requests apply.
    """
    if not defaults:
        return state
    if model.joint_rates:
        v = impose_joint_rates(model, state.t, state.p, state.v, model.joint_rates, solver)
        state = State(state.t, state.p, v)
    if model.velocity_requests:
        check_requested_velocities(model, state, model.velocity_requests)
    return state
