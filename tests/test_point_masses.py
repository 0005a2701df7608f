"""Point masses: bodies without rotational inertia (issue 23; icub's legs and wrists).

A point mass has a spatial inertia of rank 3; what decides its rotation is the
joints to the bodies it carries, as in Featherstone's articulated-body algorithm
(natcoord.linalg.blockldl, its module docstring). The specs:

* the planar double pendulum of two point masses on massless rods — each bob's
  pivot singular on its own: the second's is a point on a hinge, the first's
  carries a hinge through its point — has the textbook closed-form angular
  accelerations (absolute angles from the downward vertical);
* a point mass between two perpendicular hinges through its point (icub's wrist
  pitch link) gives the accelerations of the dense KKT solve, and a passive run
  keeps its energy;
* a point mass at the end of a chain on a hinge through its point turns without
  kinetic energy: the model is refused, naming it.
"""
import numpy as np
import pytest

import natcoord as nc
from natcoord.linalg.base import available_solvers

G = 9.81
ZERO = np.zeros((3, 3))


def double_pendulum(m1=1.3, m2=0.7, l1=0.9, l2=0.6):
    """Two point masses in the xy plane, hinges about z, hanging down the −y axis."""
    mech = nc.Mechanism(gravity=(0.0, -G, 0.0))
    mech.add_body("bob1", m1, com=(0, -l1, 0), inertia=ZERO, origin=(0, -l1, 0))
    mech.add_body("bob2", m2, com=(0, -l1 - l2, 0), inertia=ZERO, origin=(0, -l1 - l2, 0))
    mech.add_revolute(nc.GROUND, "bob1", point=(0, 0, 0), axis=(0, 0, 1), name="shoulder")
    mech.add_revolute("bob1", "bob2", point=(0, -l1, 0), axis=(0, 0, 1), name="elbow")
    return mech.build()


def textbook_accelerations(t1, t2, w1, w2, m1=1.3, m2=0.7, l1=0.9, l2=0.6):
    """θ̈1, θ̈2 of the double pendulum of point masses, absolute angles θ from the
    downward vertical (Lagrange's equations solved for the accelerations)."""
    d = 2 * m1 + m2 - m2 * np.cos(2 * t1 - 2 * t2)
    a1 = (-G * (2 * m1 + m2) * np.sin(t1) - m2 * G * np.sin(t1 - 2 * t2)
          - 2 * np.sin(t1 - t2) * m2 * (w2**2 * l2 + w1**2 * l1 * np.cos(t1 - t2))) / (l1 * d)
    a2 = 2 * np.sin(t1 - t2) * (w1**2 * l1 * (m1 + m2) + G * (m1 + m2) * np.cos(t1)
                                + w2**2 * l2 * m2 * np.cos(t1 - t2)) / (l2 * d)
    return a1, a2


def joint_accelerations(model, q, qd, solver):
    js = nc.joint_space(model)
    st = nc.joint_state(model, q, qd)
    a, _, _ = nc.accelerations(model, st, solver=solver)
    return js.accelerations(st.p, st.v, a), st


@pytest.mark.parametrize("solver", ["block", "dense", "superlu"])
def test_double_pendulum_of_point_masses_has_the_textbook_accelerations(solver):
    model = double_pendulum()
    rng = np.random.default_rng(5)
    for _ in range(4):
        q, qd = rng.uniform(-2, 2, 2), rng.uniform(-3, 3, 2)     # relative angles
        qdd, _ = joint_accelerations(model, q, qd, solver)
        a1, a2 = textbook_accelerations(q[0], q[0] + q[1], qd[0], qd[0] + qd[1])
        scale = max(1.0, abs(a1), abs(a2))
        assert abs(qdd[0] - a1) <= 1e-12 * scale
        assert abs(qdd[1] - (a2 - a1)) <= 1e-12 * scale


def wrist():
    """A forearm on a hinge to ground, a point mass (the wrist pitch link, its point on
    both of its hinges) and a hand on a hinge perpendicular to the pitch hinge."""
    mech = nc.Mechanism(gravity=(0.0, 0.0, -G))
    mech.add_body("forearm", 0.5, com=(0.1, 0, 0), inertia=np.diag([2e-4, 1e-3, 1e-3]),
                  origin=(0, 0, 0))
    mech.add_body("pitch", 0.1, com=(0.2, 0, 0), inertia=ZERO, origin=(0.2, 0, 0))
    mech.add_body("hand", 0.2, com=(0.27, 0.01, 0.02), inertia=np.diag([1e-4, 2e-4, 2e-4]),
                  origin=(0.2, 0, 0))
    mech.add_revolute(nc.GROUND, "forearm", point=(0, 0, 0), axis=(0, 1, 0), name="elbow")
    mech.add_revolute("forearm", "pitch", point=(0.2, 0, 0), axis=(0, 0, 1), name="w_pitch")
    mech.add_revolute("pitch", "hand", point=(0.2, 0, 0), axis=(0, 1, 0), name="w_yaw")
    return mech.build()


def test_a_point_mass_between_two_hinges_through_its_point_solves_as_the_dense_kkt():
    """Its pivot with its child's hinge alone is singular about that hinge; with the
    joint to its parent it is not (Pinocchio's D = SᵀIᴬS > 0)."""
    model = wrist()
    rng = np.random.default_rng(7)
    for _ in range(4):
        q, qd = rng.uniform(-1.5, 1.5, 3), rng.standard_normal(3)
        block, _ = joint_accelerations(model, q, qd, "block")
        dense, _ = joint_accelerations(model, q, qd, "dense")
        assert np.abs(block - dense).max() <= 1e-11 * max(1.0, np.abs(dense).max())


def test_a_passive_run_with_point_masses_keeps_its_energy():
    for model in (double_pendulum(), wrist()):
        st = nc.joint_state(model, np.full(model.n_bodies, 0.8), np.full(model.n_bodies, 1.5))
        sol = nc.simulate(model, t_end=2.0, initial_state=st, rtol=1e-10, atol=1e-12)
        assert np.ptp(sol.energy) <= 1e-7 * max(abs(sol.energy[0]), 1.0)


def test_a_point_mass_on_a_hinge_through_its_point_at_the_end_of_a_chain_is_refused():
    """Nothing turns it: its rotation about the hinge costs no energy (Pinocchio's
    articulated inertia about that hinge, D = SᵀIᴬS, is 0)."""
    mech = nc.Mechanism(gravity=(0.0, 0.0, -G))
    mech.add_body("arm", 1.0, com=(0.2, 0, 0), inertia=np.diag([1e-3, 1e-2, 1e-2]))
    mech.add_body("tip", 0.3, com=(0.4, 0, 0), inertia=ZERO, origin=(0.4, 0, 0))
    mech.add_revolute(nc.GROUND, "arm", point=(0, 0, 0), axis=(0, 1, 0))
    mech.add_revolute("arm", "tip", point=(0.4, 0, 0), axis=(1, 0, 0))
    with pytest.raises(ValueError, match=r"point masses \['tip'\] turn without kinetic "
                                         r"energy"):
        mech.build()


def test_the_range_space_solver_refuses_point_masses():
    """cholmod inverts each body's J4, which a point mass does not have."""
    if "cholmod" not in available_solvers():
        pytest.skip("cholmod is not installed")
    model = double_pendulum()
    with pytest.raises(np.linalg.LinAlgError, match="point masses"):
        nc.accelerations(model, nc.joint_state(model, [0.1, 0.2], [0.0, 0.0]),
                         solver="cholmod")
