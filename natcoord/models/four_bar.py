"""The N-four-bar mechanism: IFToMM multibody benchmark A02 (docs/benchmarks.md).

N + 1 vertical cranks (rods 1 kg, 1 m) pinned to ground at x = 0, 1, …, N,
their tops joined by N horizontal couplers (1 kg, 1 m): N parallelogram
loops, all revolute axes along z, gravity −y. The first crank's top starts
at 1 m/s along +x (the whole linkage moves consistently: cranks turn at
−1 rad/s, couplers translate), simulate ``T_END`` = 10 s.

Modelled in 3D, each planar loop repeats 3 out-of-plane equations: 3N
redundant rows, 1 DOF. When the cranks are horizontal every bar lies on the
x-axis and each loop loses one more rank (the parallelogram may fold into
an antiparallelogram): 4N redundant rows, N + 1 DOF. The motion passes such
configurations twice per turn; constraint partitioning handles both without
user action.
"""
from __future__ import annotations

import numpy as np

from ..model.body import rod_inertia
from ..model.mechanism import GROUND, Mechanism
from ..util.checks import integer

MASS, LENGTH, SECTION, GRAVITY = 1.0, 1.0, 0.05, 9.81
TOP_SPEED = 1.0          # m/s, first crank's top, along +x
T_END = 10.0
_Z = (0.0, 0.0, 1.0)


def _rod(mech, name, start, axis):
    """A rod from ``start`` along the unit ``axis`` (e1 along the rod, e3 = z)."""
    e1 = np.asarray(axis, float)
    axes = np.column_stack([e1, np.cross(_Z, e1), _Z])
    return mech.add_body(name, mass=MASS, com=np.add(start, 0.5 * LENGTH * e1),
                         inertia=rod_inertia(MASS, LENGTH, SECTION, axis=0),
                         origin=start, axes=axes)


def n_four_bar(N, gravity=GRAVITY):
    """``N`` parallelogram loops: cranks ``crank0..crankN``, couplers ``coupler1..couplerN``."""
    integer(f"n_four_bar(N={N!r}): N", N, 1)
    mech = Mechanism(gravity=(0.0, -gravity, 0.0), name=f"n-four-bar({N})")
    omega = (0.0, 0.0, -TOP_SPEED / LENGTH)
    for k in range(N + 1):
        crank = _rod(mech, f"crank{k}", (k, 0.0, 0.0), (0.0, 1.0, 0.0))
        mech.add_revolute(GROUND, crank, point=(k, 0.0, 0.0), axis=_Z, name=f"ground{k}")
        mech.set_initial(crank, angular_velocity=omega)
        if k:
            coupler = _rod(mech, f"coupler{k}", (k - 1, LENGTH, 0.0), (1.0, 0.0, 0.0))
            mech.add_revolute(f"crank{k - 1}", coupler, point=(k - 1, LENGTH, 0.0), axis=_Z,
                              name=f"top{k - 1}.{k}")
            mech.add_revolute(coupler, crank, point=(k, LENGTH, 0.0), axis=_Z,
                              name=f"top{k}.{k}")
            mech.set_initial(coupler, velocity=(TOP_SPEED, 0.0, 0.0))
    mech.scenario = {"t_end": T_END, "output_point": ("crank0", (0.0, LENGTH, 0.0))}
    return mech


def four_bar(gravity=GRAVITY):
    """The planar four-bar (N = 1): 3 redundant rows in 3D, 1 DOF."""
    mech = n_four_bar(1, gravity)
    mech.name = "four-bar"
    return mech

