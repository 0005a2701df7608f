"""The elastic pendulum: a ball hanging from a fixed point on a stiff spring–damper.

A ball of mass m (a cube of side 0.1 m for its inertia) is attached at its
centre to the ground point O by a spring of stiffness k, rest length l0 and
damping c, under gravity −g ŷ; it is released at rest at the angle φ0 from the
downward vertical, with the spring at its static stretch ``m g cos φ0 / k``.
The force passes through the centre: the ball does not rotate, and in polar
coordinates ``(r, φ)`` of the plane of motion the problem is

    r̈ = r φ̇² + g cos φ − (k (r − l0) + c ṙ) / m,
    φ̈ = −(g sin φ + 2 ṙ φ̇) / r,

a pendulum of period ≈ 2π √(l0/g) with a spring mode of frequency √(k/m):
stiff for k = 10⁶ N/m (benchmarks/stiff.py, tests/test_radau.py).
"""
from __future__ import annotations

import numpy as np

from ..model.body import box_inertia
from ..model.mechanism import GROUND, Mechanism


def spring_pendulum(stiffness=1e6, damping=20.0, mass=1.0, length=1.0, angle=60.0,
                    gravity=9.81):
    """The elastic pendulum (module docstring); ``angle`` φ0 in degrees."""
    r0, phi0 = polar_initial(stiffness, mass, length, angle, gravity)[:2]
    centre = polar_to_position(r0, phi0)
    mech = Mechanism(gravity=(0.0, -gravity, 0.0), name="spring-pendulum")
    mech.add_body("ball", mass=mass, com=centre, inertia=box_inertia(mass, (0.1, 0.1, 0.1)),
                  origin=centre)
    mech.add_spring(GROUND, "ball", point_a=(0.0, 0.0, 0.0), point_b=centre,
                    stiffness=stiffness, rest_length=length, damping=damping, name="spring")
    mech.scenario = {"t_end": 2.0, "output_point": ("ball", tuple(centre.tolist()))}
    return mech


def polar_initial(stiffness=1e6, mass=1.0, length=1.0, angle=60.0, gravity=9.81):
    """``(r, φ, ṙ, φ̇)`` at release: at rest, the spring at its static stretch."""
    phi0 = np.radians(angle)
    return np.array([length + mass * gravity * np.cos(phi0) / stiffness, phi0, 0.0, 0.0])


def polar_equations(stiffness=1e6, damping=20.0, mass=1.0, length=1.0, gravity=9.81):
    """``f(t, (r, φ, ṙ, φ̇))`` of the same problem in polar coordinates (module docstring)."""
    k, c, m, l0, g = stiffness, damping, mass, length, gravity

    def f(t, y):
        r, phi, r_dot, phi_dot = y
        return [r_dot, phi_dot,
                r * phi_dot**2 + g * np.cos(phi) - (k * (r - l0) + c * r_dot) / m,
                -(g * np.sin(phi) + 2 * r_dot * phi_dot) / r]
    return f


def polar_to_position(r, phi):
    """World position of the ball's centre."""
    return r * np.array([np.sin(phi), -np.cos(phi), 0.0])
