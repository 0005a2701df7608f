"""Stewart–Gough platform: 13 moving bodies, six UPS legs (docs/benchmarks.md).

Base = ground. Leg k runs from the base point ``B_k`` to the platform point
``P_k``: a cylinder hinged to ground by a universal joint at ``B_k``, a piston
sliding in it (prismatic along the leg direction ``u_k``), a spherical joint
to the platform at ``P_k``. Grübler: 6·13 − 6·(4 + 5 + 3) = 6 DOF, no
redundant rows. Scenarios (``T_END``):

* ``"passive"``: released at rest under gravity, 2 s; energy is conserved.
* ``"driven"``: each prismatic joint is a drive ``s_k(t)`` (leg extension from
  the reference configuration) from the closed-form inverse kinematics of the
  platform centre path ``c(t) = (0.1 sin 2πt, 0.1 (1 − cos 2πt), 1.0)`` at
  constant orientation (as compiled Fourier interpolants, :func:`leg_drive`),
  10 s; 0 DOF, the drive forces do the work.

``elastic_joints=(k, c)`` makes the legs elastic, for the stiff benchmark
(benchmarks/stiff.py): the spherical joint ``S_k`` is replaced by a zero-length
Cartesian spring–damper of stiffness ``k`` (N/m) and damping ``c`` (N·s/m) per
axis between piston and platform at ``P_k``; the default (``None``) is the
rigid model.
"""
from __future__ import annotations

import numpy as np

from ..model.body import cylinder_inertia
from ..model.drives import Drive
from ..model.mechanism import GROUND, Mechanism

BASE_RADIUS, PLATFORM_RADIUS, HEIGHT = 1.0, 0.5, 1.0
BASE_ANGLES = np.radians([-15.0, 15.0, 105.0, 135.0, 225.0, 255.0])
PLATFORM_ANGLES = np.radians([-45.0, 45.0, 75.0, 165.0, 195.0, 285.0])
CYLINDER = dict(mass=2.0, radius=0.04, length=0.6)
PISTON = dict(mass=1.0, radius=0.025, length=0.6)
PLATFORM = dict(mass=10.0, radius=0.5, thickness=0.05)
GRAVITY = 9.81
PATH_AMPLITUDE, PATH_FREQUENCY = 0.1, 1.0       # m, Hz
T_END = {"passive": 2.0, "driven": 10.0}
SCENARIOS = tuple(T_END)


def _circle(radius, angles, z):
    return np.column_stack([radius * np.cos(angles), radius * np.sin(angles),
                            np.full(angles.size, z)])


#: base points B_k (6, 3) and platform points P_k (6, 3), reference configuration
BASE_POINTS = _circle(BASE_RADIUS, BASE_ANGLES, 0.0)
PLATFORM_POINTS = _circle(PLATFORM_RADIUS, PLATFORM_ANGLES, HEIGHT)
PLATFORM_CENTRE = np.array([0.0, 0.0, HEIGHT])


def platform_path(t):
    """Prescribed platform centre ``c(t)`` and its derivatives ``ċ, c̈`` (each (3,))."""
    w = 2 * np.pi * PATH_FREQUENCY
    a = PATH_AMPLITUDE
    c = np.array([a * np.sin(w * t), a * (1 - np.cos(w * t)), HEIGHT])
    c_dot = np.array([a * w * np.cos(w * t), a * w * np.sin(w * t), 0.0])
    c_ddot = np.array([-a * w**2 * np.sin(w * t), a * w**2 * np.cos(w * t), 0.0])
    return c, c_dot, c_ddot


def leg_motion(k):
    """Extension of leg k in closed form, a callable ``t ↦ (s, ṡ, s̈)``:
    ``s = |d| − |d(0)|`` with ``d = P_k(t) − B_k``.

    At constant orientation ``P_k(t) = c(t) + (P_k − c(0))``, so ``ḋ = ċ`` and
    ``d̈ = c̈``: ``ṡ = d̂·ċ`` and ``s̈ = d̂·c̈ + (|ċ|² − (d̂·ċ)²)/|d|``.
    """
    offset = PLATFORM_POINTS[k] - PLATFORM_CENTRE - BASE_POINTS[k]
    length0 = np.linalg.norm(PLATFORM_POINTS[k] - BASE_POINTS[k])

    def triple(t):
        c, c_dot, c_ddot = platform_path(t)
        d = c + offset
        length = np.linalg.norm(d)
        n = d / length
        rate = n @ c_dot
        return length - length0, rate, n @ c_ddot + (c_dot @ c_dot - rate**2) / length

    return triple


def leg_drive(k):
    """Drive of leg k: :func:`leg_motion` as its Fourier interpolant
    (``Drive.periodic``: the path is periodic and s analytic, so 15 harmonics
    match the closed form to 1e-12 relative): a declarative drive, compiled
    and storable in a model file."""
    return Drive.periodic(leg_motion(k), period=1.0 / PATH_FREQUENCY)


def leg_frame(k):
    """Axes (columns ``t_k, u_k × t_k, u_k``) of leg k's cylinder and piston.

    ``u_k`` is the leg direction, ``t_k = ẑ × u_k / |ẑ × u_k|`` the universal
    joint's ground axis and ``u_k × t_k`` its cylinder axis.
    """
    u = PLATFORM_POINTS[k] - BASE_POINTS[k]
    u /= np.linalg.norm(u)
    t = np.cross([0.0, 0.0, 1.0], u)
    t /= np.linalg.norm(t)
    return np.column_stack([t, np.cross(u, t), u])


def hexapod(scenario="passive", gravity=GRAVITY, leg_springs=None, elastic_joints=None):
    """The Stewart–Gough platform; ``scenario`` is ``"passive"`` or ``"driven"``.

    ``leg_springs=(stiffness, damping)`` adds a spring–damper in every leg, from
    ``B_k`` on the cylinder to ``P_k`` on the piston, at rest in the reference
    configuration (springs numbered 0..5 in leg order, for the parameter names
    ``stiffness:<k>``, ``damping:<k>``); the default ``None`` adds none.
    ``elastic_joints=(stiffness, damping)``: elastic legs (module docstring).
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"hexapod(scenario={scenario!r}): choose one of {SCENARIOS}")
    mech = Mechanism(gravity=(0.0, 0.0, -gravity), name=f"hexapod-{scenario}")
    platform = mech.add_body(
        "platform", mass=PLATFORM["mass"], com=PLATFORM_CENTRE,
        inertia=cylinder_inertia(PLATFORM["mass"], PLATFORM["radius"], PLATFORM["thickness"]),
        origin=PLATFORM_CENTRE)
    for k, (B, P) in enumerate(zip(BASE_POINTS, PLATFORM_POINTS)):
        axes = leg_frame(k)
        u = axes[:, 2]
        # cylinder from B_k along u_k, piston from P_k along −u_k (frames at B_k, P_k)
        cylinder = mech.add_body(
            f"cylinder{k + 1}", mass=CYLINDER["mass"],
            com=B + 0.5 * CYLINDER["length"] * u,
            inertia=cylinder_inertia(CYLINDER["mass"], CYLINDER["radius"], CYLINDER["length"]),
            origin=B, axes=axes)
        piston = mech.add_body(
            f"piston{k + 1}", mass=PISTON["mass"], com=P - 0.5 * PISTON["length"] * u,
            inertia=cylinder_inertia(PISTON["mass"], PISTON["radius"], PISTON["length"]),
            origin=P, axes=axes)
        mech.add_universal(GROUND, cylinder, point=B, axis_a=axes[:, 0], axis_b=axes[:, 1],
                           name=f"U{k + 1}")
        mech.add_prismatic(cylinder, piston, point=P, axis=u, name=f"P{k + 1}",
                           drive=leg_drive(k) if scenario == "driven" else None)
        if elastic_joints is None:
            mech.add_spherical(piston, platform, point=P, name=f"S{k + 1}")
        else:
            stiffness, damping = elastic_joints
            mech.add_cartesian_spring(piston, platform, P, P, stiffness=stiffness,
                                      damping=damping, name=f"S{k + 1}")
        if leg_springs is not None:
            stiffness, damping = leg_springs
            mech.add_spring(cylinder, piston, B, P, stiffness=stiffness, damping=damping,
                            name=f"leg{k + 1}")
    mech.scenario = {"t_end": T_END[scenario],
                     "output_point": ("platform", tuple(PLATFORM_CENTRE.tolist()))}
    return mech
