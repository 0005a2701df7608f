"""Joint coordinates, body orientation and angular velocity.

Everything here is evaluated from the natural coordinates of docs/method.md#11-coordinates:
the rotation of a body is ``R = [e1 e2 e3]`` (the body axes were the columns
of ``axes`` in the reference configuration), its angular velocity
``ω = ½ Σ_k e_k × ė_k`` (from ``ω× = Ṙ Rᵀ``, exact for orthonormal axes); a
joint coordinate is a quadratic form of the coordinates (``joints.axial_coordinates``),
so its rate is linear in the velocities, ``θ̇ = c(p) · v``, which lets
assembly (:mod:`natcoord.dynamics.assembly`) prescribe it exactly as one more velocity
constraint.
"""
from __future__ import annotations

import numpy as np


def _coordinate(model, joint, coordinate=None):
    """``(spec, name, quadratics)`` of a joint coordinate (default: the joint's first)."""
    _, spec = model.joint_named(joint)
    available = dict(spec.coordinates)
    if not available:
        raise ValueError(f"{spec.kind} joint {joint!r} has no joint coordinate (revolute, "
                         f"prismatic, cylindrical, universal and point-on-line joints "
                         f"have one)")
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
