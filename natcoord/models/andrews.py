"""Andrews' squeezing mechanism: 7 bodies, planar, in 3D natural coordinates.

Hairer & Wanner, *Solving ODEs II*, VII.7, and the IVP test set, problem
"andrews" (Mazzia & Magherini, Test Set for IVP Solvers, Univ. Bari;
parameters as in its ``andrews.f`` and in R's deTestSet ``andrews()``).
No gravity; a constant driving torque ``MOM`` on the crank and a spring from
point D of body 3 to the fixed point C; start at rest in the published
consistent configuration and integrate over [0, ``T_END``] = [0, 0.03] s.

All ten revolute axes are along world z. The published inertias are planar;
each body gets in-plane second moments ``i_k/2`` and a nominal thickness
``THICKNESS`` (z second moment ``m h²/12``), which changes no planar motion.
Closing the three planar loops in 3D repeats their out-of-plane equations:
50 joint rows of rank 41, 9 redundant, 1 DOF.
"""
from __future__ import annotations

import numpy as np

from ..model.mechanism import GROUND, Mechanism

# Published parameters (IVP test set andrews.f; Hairer & Wanner II, VII.7), SI units.
MASSES = (0.04325, 0.00365, 0.02373, 0.00706, 0.07050, 0.00706, 0.05498)
INERTIAS = (2.194e-6, 4.410e-7, 5.255e-6, 5.667e-7, 1.169e-5, 5.667e-7, 1.912e-5)
XA, YA, XB, YB, XC, YC = -0.06934, -0.00227, -0.03635, 0.03273, 0.014, 0.072
D, DA, E, EA, RR, RA = 28e-3, 11.5e-3, 2e-2, 14.21e-3, 7e-3, 0.92e-3
SS, SA, SB, SC, SD = 35e-3, 18.74e-3, 10.43e-3, 18e-3, 2e-2
TA, TB, U, UA, UB = 23.08e-3, 9.16e-3, 4e-2, 12.28e-3, 4.49e-3
ZF, ZT, FA = 2e-2, 4e-2, 14.21e-3
MOM, C0, L0 = 0.033, 4530.0, 0.07785

#: published consistent initial angles (β, Θ, γ, Φ, δ, Ω, ε) at rest
ANGLES0 = (-0.0617138900142764496358948458001, 0.0, 0.455279819163070380255912382449,
           0.222668390165885884674473185609, 0.487364979543842550225598953530,
           -0.222668390165885884674473185609, 1.23054744454982119249735015568)
#: published initial accelerations β''(0), Θ''(0) (the other five are 0)
ACCELERATIONS0 = (14222.4439199541138705911625887, -10666.8329399655854029433719415)
#: published reference solution (β, Θ, γ, Φ, δ, Ω, ε) at T_END (IVP test set, subroutine
#: SOLN of andrews.f: RADAU5 at tolerance 1e-14)
ANGLES_END = (15.81077119629904, -15.75637105984298, 0.04082224013073101,
              -0.5347301163226948, 0.5244099658805304, 0.5347301163226948,
              1.048080741042263)
#: … and the angular velocities there
ANGLE_RATES_END = (1139.920302151208, -1424.379294994111, 11.03291221937134,
                   19.29337464421385, 0.5735699284790808, -19.29337464421385,
                   0.3231791658026955)
T_END = 0.03
THICKNESS = 0.005
O, A, B, C = (np.array([x, y, 0.0]) for x, y in ((0, 0), (XA, YA), (XB, YB), (XC, YC)))
_Z = np.array([0.0, 0.0, 1.0])


def _unit(angle):
    return np.array([np.cos(angle), np.sin(angle), 0.0])


def points(q=ANGLES0):
    """Joint points F, E, G, H and spring point D (world) at angles q = (β, Θ, γ, Φ, δ, Ω, ε).

    The relations are those of the published constraints: ``F = rr e(β)``,
    ``E = F − d e(β+Θ) = B + ss e(γ − π/2)``, ``G = A + zt e(δ)``,
    ``H = A + u e(ε − π/2)``, ``D = B + sc e(γ − π/2) + sd e(γ)``.
    """
    beta, theta, gamma, _, delta, _, eps = q
    F = RR * _unit(beta)
    return dict(F=F, E=F - D * _unit(beta + theta), G=A + ZT * _unit(delta),
                H=A + U * _unit(eps - np.pi / 2),
                D=B + SC * _unit(gamma - np.pi / 2) + SD * _unit(gamma))


def _body(mech, k, name, pivot, toward, com):
    """Body k (1-based) framed at ``pivot`` with e1 towards ``toward``, e3 = z.

    ``com = (a, b)``: centre of mass at ``pivot + a e1 + b e2``.
    """
    e1 = (toward - pivot) / np.linalg.norm(toward - pivot)
    axes = np.column_stack([e1, np.cross(_Z, e1), _Z])
    m, i = MASSES[k - 1], INERTIAS[k - 1]
    in_plane = 0.5 * i + m * THICKNESS**2 / 12   # I_xx = J_y + J_z with J_x = J_y = i/2
    return mech.add_body(name, mass=m, com=(com[0], com[1], 0.0), local=True,
                         inertia=np.diag([in_plane, in_plane, i]), origin=pivot, axes=axes)


def andrews():
    """Andrews' squeezing mechanism at its published initial configuration."""
    p = points()
    F, E, G, H = p["F"], p["E"], p["G"], p["H"]
    mech = Mechanism(gravity=(0.0, 0.0, 0.0), name="andrews")
    _body(mech, 1, "crank", O, F, (RA, 0.0))
    _body(mech, 2, "link2", F, E, (DA, 0.0))
    _body(mech, 3, "triangle3", B, E, (SA, SB))
    _body(mech, 4, "link4", E, G, (EA, 0.0))
    _body(mech, 5, "triangle5", A, G, (TA, TB))
    _body(mech, 6, "link6", E, H, (FA, 0.0))
    _body(mech, 7, "triangle7", A, H, (UA, -UB))
    for a, b, x, name in ((GROUND, "crank", O, "O"), ("crank", "link2", F, "F"),
                          ("link2", "triangle3", E, "E23"), ("link2", "link4", E, "E24"),
                          ("link2", "link6", E, "E26"), (GROUND, "triangle3", B, "B"),
                          ("link4", "triangle5", G, "G"), (GROUND, "triangle5", A, "A5"),
                          ("link6", "triangle7", H, "H"), (GROUND, "triangle7", A, "A7")):
        mech.add_revolute(a, b, point=x, axis=_Z, name=name)
    mech.add_spring("triangle3", GROUND, point_a=p["D"], point_b=C, stiffness=C0,
                    rest_length=L0)
    mech.add_torque("crank", (0.0, 0.0, MOM))
    mech.scenario = {"t_end": T_END, "output_point": ("crank", tuple(F.tolist()))}
    return mech


def angles(solution):
    """The seven angles (k, 7) of the published problem along a :class:`Solution`.

    ``β = ∠(F − O)``, ``β + Θ = ∠(F − E)``, ``γ = ∠(E − B) + π/2``, ``δ = ∠(G − A)``,
    ``Φ + δ = ∠(E − G) + π/2``, ``ε = ∠(H − A) + π/2``, ``Ω + ε = ∠(E − H)``;
    unwrapped in time, on the branch of the published initial angles at the
    first output (so start the solution at the initial configuration).
    """
    p = points()
    F, E, G, H = (solution.point(body, p[key]) for body, key in
                  (("crank", "F"), ("link2", "E"), ("triangle5", "G"), ("triangle7", "H")))

    def angle(v):
        return np.unwrap(np.arctan2(v[:, 1], v[:, 0]))

    beta, delta = angle(F - O), angle(G - A)
    gamma = angle(E - B) + np.pi / 2
    eps = angle(H - A) + np.pi / 2
    phi = angle(E - G) + np.pi / 2 - delta
    result = np.column_stack([beta, angle(F - E) - beta, gamma, phi, delta,
                              angle(E - H) - eps, eps])
    # atan2 branches: shift each column by whole turns to start at the published angles
    return result - 2 * np.pi * np.round((result[0] - ANGLES0) / (2 * np.pi))
