"""Scalable families for the O(n) evidence (docs/benchmarks.md): chain, tree, loops.

Rods: 1 kg, 0.5 m, square section 0.05 m, hanging along −z, revolute axes
alternating x and y. The reference configuration is the initial one (every
joint bent by 0.1 rad), so loop closures put at reference positions are
consistent and away from the singular stretched posture.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..model.body import rod_inertia
from ..model.mechanism import GROUND, Mechanism
from ..util.checks import integer
from ..util.resources import check_memory

MASS, LENGTH, SECTION, ANGLE = 1.0, 0.5, 0.05, 0.1
JOINT_AXES = (np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))


def rotation(axis, angle):
    """Rodrigues' rotation matrix."""
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def _add_rod(mech, name, parent, top, R_parent, axis_local, angle):
    """A rod hanging from ``top``, jointed to ``parent`` about ``R_parent axis_local``.

    Body axes are ``R = R_parent Rot(axis, angle)``; the rod runs along −e3.
    Returns the rod's rotation and bottom point.
    """
    R = R_parent @ rotation(axis_local, angle)
    bottom = top + R @ np.array([0.0, 0.0, -LENGTH])
    mech.add_body(name, mass=MASS, com=0.5 * (top + bottom),
                  inertia=rod_inertia(MASS, LENGTH, SECTION, axis=2), origin=top, axes=R)
    mech.add_revolute(parent, name, point=top, axis=R_parent @ axis_local,
                      name=f"{name}.joint")
    return R, bottom


#: what building costs per body (measured on chain(4000): 2.3 ms and 32 kB)
BUILD_SECONDS_PER_BODY, BUILD_BYTES_PER_BODY = 2.5e-3, 32e3
#: above this estimated build time, a warning says how long to expect
SLOW_BUILD = 30.0


def check_size(n_bodies, what):
    """Refuse a family member that cannot be built here, warn about a slow one."""
    check_memory(n_bodies * BUILD_BYTES_PER_BODY, f"{what} with {n_bodies} bodies",
                 "choose fewer bodies")
    seconds = n_bodies * BUILD_SECONDS_PER_BODY
    if seconds > SLOW_BUILD:
        warnings.warn(f"{what}: building {n_bodies} bodies takes about {seconds / 60:.0f} min "
                      f"(the builder is Python: ~{BUILD_SECONDS_PER_BODY * 1e3:.1f} ms per body)",
                      stacklevel=3)


def chain(n, loops=0, gravity=9.81):
    """``n`` rods in a chain from a revolute to ground at the origin.

    ``loops=k`` adds k spherical joints from the bottom of the rods at
    positions ``round(j n / k)`` (j = 1..k) to ground at their reference positions.
    """
    integer(f"chain(n={n!r}): n", n, 1)
    integer(f"chain(n={n}, loops={loops!r}): loops", loops, 0)
    if loops and n // loops < 4:
        raise ValueError(f"chain(n={n}, loops={loops}): need at least 4 rods "
                         f"per loop (each closure removes 3 degrees of freedom)")
    check_size(n, f"chain(n={n})")
    mech = Mechanism(gravity=(0.0, 0.0, -gravity),
                     name=f"chain({n})" if not loops else f"chain({n}, loops={loops})")
    R, point, parent, bottoms = np.eye(3), np.zeros(3), GROUND, []
    for k in range(n):
        R, point = _add_rod(mech, f"rod{k + 1}", parent, point, R, JOINT_AXES[k % 2], ANGLE)
        parent = f"rod{k + 1}"
        bottoms.append(point)
    for j in range(1, loops + 1):
        k = round(j * n / loops)
        mech.add_spherical(f"rod{k}", GROUND, point=bottoms[k - 1], name=f"loop{j}")
    mech.scenario = {"t_end": 1.0, "output_point": (f"rod{n}", tuple(bottoms[-1]))}
    return mech


def tree(depth, gravity=9.81):
    """Binary tree of ``2^depth − 1`` rods: each rod carries two children at its end.

    Axes alternate x/y with depth; the two children are bent by ±0.1 rad.
    """
    integer(f"tree(depth={depth!r}): depth", depth, 1)
    check_size(2**depth - 1, f"tree(depth={depth})")
    mech = Mechanism(gravity=(0.0, 0.0, -gravity), name=f"tree({depth})")
    # Depth-first (pre-order) numbering keeps every subtree contiguous in
    # memory, which the children-first elimination then walks in order.
    stack = [(GROUND, np.zeros(3), np.eye(3), 0, 1.0)]
    count = 0
    while stack:
        parent, top, R_parent, level, sign = stack.pop()
        count += 1
        name = f"rod{count}"
        R, bottom = _add_rod(mech, name, parent, top, R_parent, JOINT_AXES[level % 2],
                             sign * ANGLE)
        if level + 1 < depth:
            stack += [(name, bottom, R, level + 1, s) for s in (-1.0, 1.0)]
    mech.scenario = {"t_end": 1.0}
    return mech
