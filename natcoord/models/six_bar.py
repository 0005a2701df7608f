"""The 6-bar mechanism: IFToMM benchmark A04 (Bricard's mechanism).

Five rods (1 kg, 1 m, square section 0.1 m) and ground form one closed loop
of six revolute joints; the loop is overconstrained by one equation, so the
mechanism has 1 degree of freedom although Grübler's count gives 0.
"""
from __future__ import annotations

import numpy as np

from ..model.body import rod_inertia
from ..model.mechanism import GROUND, Mechanism

#: (start, end, joint axis at the start) of rods 1..5
RODS = [((0, 0, 0), (1, 0, 0), (0, 1, 0)),
        ((1, 0, 0), (1, -1, 0), (0, 0, 1)),
        ((1, -1, 0), (1, -1, 1), (1, 0, 0)),
        ((1, -1, 1), (0, -1, 1), (0, 1, 0)),
        ((0, -1, 1), (0, 0, 1), (0, 0, 1))]
P3 = (1.0, -1.0, 0.0)   # output point on rod 2


def rod_frame(start, end):
    """Body frame of a rod: origin at ``start``, e1 along the rod."""
    start, end = np.asarray(start, float), np.asarray(end, float)
    e1 = (end - start) / np.linalg.norm(end - start)
    seed = np.eye(3)[np.argmin(np.abs(e1))]
    e2 = np.cross(e1, seed)
    e2 /= np.linalg.norm(e2)
    return start, np.column_stack([e1, e2, np.cross(e1, e2)])


def six_bar(mass=1.0, section=0.1, gravity=9.81, length=1.0):
    """The 6-bar mechanism, released at rest; simulate 10 s (docs/benchmarks.md).

    ``mass`` [kg] and ``section`` [m] are one value for every rod or a
    sequence of five (rods 1..5, e.g. manufacturing tolerances); ``length``
    [m] scales the whole geometry (the loop stays closed), the output point
    P3 with it.
    """
    masses, sections = np.broadcast_to(mass, 5), np.broadcast_to(section, 5)
    mech = Mechanism(gravity=(0.0, -gravity, 0.0), name="six-bar")
    previous = GROUND
    for k, (start, end, axis) in enumerate(RODS, start=1):
        start, end = length * np.asarray(start, float), length * np.asarray(end, float)
        origin, axes = rod_frame(start, end)
        m = float(masses[k - 1])
        name = mech.add_body(f"rod{k}", mass=m, com=0.5 * (np.add(start, end)),
                             inertia=rod_inertia(m, length, float(sections[k - 1]), axis=0),
                             origin=origin, axes=axes)
        mech.add_revolute(previous, name, point=start, axis=axis, name=f"joint{k}")
        previous = name
    mech.add_revolute("rod5", GROUND, point=(0, 0, length), axis=(1, 0, 0), name="joint6")
    mech.scenario = {"t_end": 10.0, "output_point": ("rod2", tuple(length * np.asarray(P3)))}
    return mech
