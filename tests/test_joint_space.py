"""Joint space in and out (issue 23, item 5): ``nc.joint_state``, ``sol.q``/``qd``/``qdd``
and ``nc.inverse_dynamics``, checked against independent computations:

* closed forms: the double pendulum's textbook ``M(q) q̈ + h(q, q̇) = τ``;
* natcoord's own joint coordinates (``joint_coordinate``/``joint_rate``, quadratic forms
  of the coordinates, not this module's kinematics) and constraint residuals;
* the KKT solve: ``q̈`` read from ``nc.accelerations`` needs zero torque, and a driven
  four-bar's drive force (a multiplier) is the inverse dynamics' crank torque;
* Pinocchio (``importorskip``): ur5 and panda from example-robot-data and solo12 on
  a free flyer — placements, ``aba`` and ``rnea`` — and a chain built joint for joint
  in both libraries with every joint kind (spherical, universal, composite
  prismatic+revolute = cylindrical, free flyer).
"""
import warnings

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import natcoord as nc
from natcoord.model.kinematics import joint_coordinate, joint_rate
from urdf_peer import damping_torque

# What a robot file has that natcoord does not model (limits, collision geometry,
# gazebo tags, …) is named in one UserWarning per import; the import report is the
# subject of tests/test_urdf.py and tests/test_corpus.py, not of these tests.
pytestmark = pytest.mark.filterwarnings("ignore:.*imported without:UserWarning")

G = 9.81


def _rod(mech, name, start, end, mass, section=0.05):
    """A rod body from ``start`` to ``end`` (e1 along it, e3 = z)."""
    start, end = np.asarray(start, float), np.asarray(end, float)
    length = np.linalg.norm(end - start)
    e1, z = (end - start) / length, np.array([0.0, 0.0, 1.0])
    axes = np.column_stack([e1, np.cross(z, e1), z])
    return mech.add_body(name, mass=mass, com=0.5 * (start + end),
                         inertia=nc.rod_inertia(mass, length, section, axis=0),
                         origin=start, axes=axes)


def _residuals(model, state):
    _, _, info = nc.accelerations(model, state)
    return info.constraint_residual, info.velocity_residual


# ------------------------------------------------------------ closed form
L1, L2, M1, M2 = 1.0, 0.7, 1.3, 0.8


def double_pendulum():
    mech = nc.Mechanism(gravity=(0.0, -G, 0.0), name="double pendulum")
    _rod(mech, "upper", (0, 0, 0), (L1, 0, 0), M1)
    _rod(mech, "lower", (L1, 0, 0), (L1 + L2, 0, 0), M2)
    mech.add_revolute(nc.GROUND, "upper", point=(0, 0, 0), axis=(0, 0, 1), name="shoulder")
    mech.add_revolute("upper", "lower", point=(L1, 0, 0), axis=(0, 0, 1), name="elbow")
    return mech.build()


def textbook(model, q, qd):
    """``M(q)``, ``h(q, q̇)`` of the planar double pendulum with distributed mass: θ1
    the upper rod's angle from +x, θ2 the lower's relative to it (both about +z),
    centres of mass at c1 = L1/2, c2 = L2/2, central inertias I1, I2 about z."""
    I1, I2 = (b.inertia[2, 2] for b in model.bodies)
    c1, c2 = L1 / 2, L2 / 2
    t1, t2 = q
    w1, w2 = qd
    cos2, sin2 = np.cos(t2), np.sin(t2)
    M = np.array([[I1 + M1 * c1**2 + I2 + M2 * (L1**2 + c2**2 + 2 * L1 * c2 * cos2),
                   I2 + M2 * (c2**2 + L1 * c2 * cos2)],
                  [I2 + M2 * (c2**2 + L1 * c2 * cos2), I2 + M2 * c2**2]])
    h = np.array([-M2 * L1 * c2 * sin2 * (2 * w1 * w2 + w2**2)
                  + G * ((M1 * c1 + M2 * L1) * np.cos(t1) + M2 * c2 * np.cos(t1 + t2)),
                  M2 * L1 * c2 * sin2 * w1**2 + G * M2 * c2 * np.cos(t1 + t2)])
    return M, h


def test_double_pendulum_accelerations_and_torques_match_the_textbook():
    model = double_pendulum()
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-3, 3, 2), rng.standard_normal(2), rng.standard_normal(2)
        st = nc.joint_state(model, {"shoulder": q[0], "elbow": q[1]}, qd)
        M, h = textbook(model, q, qd)
        a, _, _ = nc.accelerations(model, st)
        passive = nc.joint_space(model).accelerations(st.p, st.v, a)
        np.testing.assert_allclose(passive, np.linalg.solve(M, -h), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(nc.inverse_dynamics(model, q, qd, qdd), M @ qdd + h,
                                   rtol=1e-12, atol=1e-12)
        # the elbow alone cannot make the shoulder accelerate other than passively
        with pytest.raises(ValueError, match="cannot produce this motion.*shoulder"):
            nc.inverse_dynamics(model, q, qd, qdd, actuated=["elbow"])


def test_solution_joint_space_follows_the_textbook():
    """``sol.q``, ``sol.qd`` (natcoord's joint coordinates) and ``sol.qdd`` (the
    textbook's ``M⁻¹(−h)`` at them) along a run started by ``joint_state``."""
    model = double_pendulum()
    st = nc.joint_state(model, [0.4, -0.8], [1.0, -2.0])
    sol = nc.simulate(model, t_end=1.0, initial_state=st, t_eval=np.linspace(0, 1, 11),
                      rtol=1e-10, proj_tol=1e-12)
    assert sol.joint_names == sol.q_names == sol.qd_names == ["shoulder", "elbow"]
    assert sol.q.shape == sol.qd.shape == sol.qdd.shape == (11, 2)
    np.testing.assert_allclose(sol.q[0], [0.4, -0.8], atol=1e-14)
    np.testing.assert_allclose(sol.q[:, 1], sol.joint_coordinate("elbow"), atol=1e-12)
    np.testing.assert_allclose(sol.qd[:, 0], sol.joint_rate("shoulder"), atol=1e-12)
    for q, qd, qdd in zip(sol.q, sol.qd, sol.qdd):
        M, h = textbook(model, q, qd)
        np.testing.assert_allclose(qdd, np.linalg.solve(M, -h), rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------ every joint kind
def every_kind():
    """A tree with every joint kind, two joints declared child-first (the tree reaches
    them from their body b) and a free body; random reference frames."""
    rng = np.random.default_rng(7)
    mech = nc.Mechanism(gravity=(0.3, -G, 0.5), name="every kind")
    for i in range(7):
        R = Rotation.random(random_state=10 + i).as_matrix()
        mech.add_body(f"b{i}", mass=1.0 + 0.3 * i, com=(i + 0.4, 0.2, -0.1),
                      inertia=np.diag([0.2, 0.25, 0.3]) + 0.01 * i, origin=(i, 0, 0), axes=R)

    def unit():
        u = rng.standard_normal(3)
        return u / np.linalg.norm(u)

    mech.add_revolute(nc.GROUND, "b0", point=(0, 0.1, 0), axis=unit(), name="rev")
    mech.add_prismatic("b1", "b0", point=(1, 0, 0), axis=unit(), name="pri")     # child first
    ua = unit()
    mech.add_cylindrical("b1", "b2", point=(2, 0.1, 0), axis=unit(), name="cyl")
    mech.add_universal("b2", "b3", point=(3, 0.3, 0), axis_a=ua,
                       axis_b=np.cross(ua, unit()) / np.linalg.norm(np.cross(ua, unit())),
                       name="uni")
    mech.add_spherical("b3", "b4", point=(4, 0, 0.2), name="sph")
    mech.add_revolute("b5", "b4", point=(5, 0.1, 0), axis=unit(), name="rev2")   # child first
    return mech.build()


def test_every_kind_round_trip_is_exact_and_agrees_with_joint_coordinates():
    model = every_kind()
    js = nc.joint_space(model)
    assert js.joint_names == ("rev", "pri", "cyl", "uni", "sph", "rev2", "b6")
    assert (js.nq, js.nv) == (1 + 1 + 2 + 2 + 4 + 1 + 7, 1 + 1 + 2 + 2 + 3 + 1 + 6)
    assert js.q_names[2:6] == ("cyl.slide", "cyl.angle", "uni.angle_a", "uni.angle_b")
    assert js.v_names[-6:] == ("b6.vx", "b6.vy", "b6.vz", "b6.wx", "b6.wy", "b6.wz")
    rng = np.random.default_rng(3)
    q = js.retract(js.neutral(), rng.uniform(-2, 2, js.nv))
    qd = rng.standard_normal(js.nv)
    st = nc.joint_state(model, q, qd)
    assert max(_residuals(model, st)) < 1e-12
    X, V = st.p.reshape(-1, 3), st.v.reshape(-1, 3)
    for name, coordinate, column in [("rev", None, "rev"), ("pri", None, "pri"),
                                     ("cyl", "slide", "cyl.slide"), ("cyl", "angle", "cyl.angle"),
                                     ("uni", "angle_a", "uni.angle_a"),
                                     ("uni", "angle_b", "uni.angle_b"), ("rev2", None, "rev2")]:
        i = js.q_names.index(column)
        assert joint_coordinate(model, name, X, coordinate) == pytest.approx(q[i], abs=1e-13)
        assert joint_rate(model, name, X, V, coordinate) == pytest.approx(
            qd[js.v_names.index(column)], abs=1e-12)
    back = js.positions(st.p)
    quaternions = [slice(s, s + 4) for s in js.quaternion_columns]
    for s in quaternions:        # q and −q are one rotation; positions returns w ≥ 0
        q[s] *= np.sign(q[s][3])
    np.testing.assert_allclose(back, q, atol=1e-13)
    np.testing.assert_allclose(js.velocities(st.p, st.v), qd, atol=1e-12)
    # the spherical joint: relative rotation in b4's axes, relative ω in b4's axes
    R3, R4 = (X[4 * i + 1:4 * i + 4].T @ model.bodies[i].axes.T for i in (3, 4))
    Q = Rotation.from_quat(q[js.joint("sph").q]).as_matrix()
    A4 = model.bodies[4].axes
    np.testing.assert_allclose(R3.T @ R4, A4 @ Q @ A4.T, atol=1e-13)


def test_every_kind_inverse_dynamics_of_the_free_motion_is_zero():
    """q̈ from the KKT solve (nc.accelerations) needs no joint force; and τ is linear in
    q̈ with the joint-space mass matrix ``SᵀMS``."""
    model = every_kind()
    js = nc.joint_space(model)
    rng = np.random.default_rng(4)
    q = js.retract(js.neutral(), rng.uniform(-2, 2, js.nv))
    qd = rng.standard_normal(js.nv)
    st = nc.joint_state(model, q, qd)
    a, _, _ = nc.accelerations(model, st)
    qdd = js.accelerations(st.p, st.v, a)
    tau = nc.inverse_dynamics(model, q, qd, qdd)
    assert np.abs(tau).max() < 1e-11
    p, v, a2 = js.forward(q, qd, qdd)
    np.testing.assert_allclose(a2, a, atol=1e-11)
    extra = rng.standard_normal(js.nv)
    S = js.jacobian(q)
    np.testing.assert_allclose(nc.inverse_dynamics(model, q, qd, qdd + extra),
                               S.T @ (model.mass_matrix @ (S @ extra)), atol=1e-11)


def test_every_kind_run_joint_accelerations_need_no_torque_at_any_output():
    """``sol.qd`` and ``sol.qdd`` of a passive run, read back for all outputs at once
    (the leading time axis): at every output the motion needs no joint force, and
    ``sol.qd`` is the derivative of the trajectory's ``q`` (central differences of
    the revolute angle)."""
    model = every_kind()
    js = nc.joint_space(model)
    rng = np.random.default_rng(5)
    start = nc.joint_state(model, js.retract(js.neutral(), rng.uniform(-1, 1, js.nv)),
                           rng.standard_normal(js.nv))
    t = np.linspace(0.0, 0.2, 41)
    sol = nc.simulate(model, 0.2, rtol=1e-10, initial_state=start, t_eval=t)
    q, qd, qdd = sol.q, sol.qd, sol.qdd
    assert qd.shape == qdd.shape == (41, js.nv)
    for k in range(0, 41, 8):
        tau = nc.inverse_dynamics(model, q[k], qd[k], qdd[k], t=t[k])
        assert np.abs(tau).max() < 1e-7 * max(1.0, np.abs(qdd[k]).max())
    i = js.q_names.index("rev")
    rate = (q[2:, i] - q[:-2, i]) / (t[2:] - t[:-2])
    np.testing.assert_allclose(rate, qd[1:-1, i], atol=1e-3 * max(1.0, np.abs(qd[:, i]).max()))


def test_every_kind_batched_rates_are_each_states_and_a_wrong_size_is_named():
    """Joint rates and accelerations of states stacked on leading axes ((2, 3) states,
    and none) are, state for state, bit for bit those of one state at a time (one
    implementation, looped over the states); a velocity of the wrong size is refused
    naming it."""
    model = every_kind()
    js = nc.joint_space(model)
    rng = np.random.default_rng(6)
    states = [nc.joint_state(model, js.retract(js.neutral(), rng.uniform(-2, 2, js.nv)),
                             rng.standard_normal(js.nv)) for _ in range(6)]
    a = [nc.accelerations(model, st)[0] for st in states]
    P, V, A = (np.reshape(x, (2, 3, -1)) for x in ([st.p for st in states],
                                                   [st.v for st in states], a))
    qd, qdd = js.velocities(P, V), js.accelerations(P, V, A)
    assert qd.shape == qdd.shape == (2, 3, js.nv)
    for k, st in enumerate(states):
        assert np.array_equal(qd.reshape(6, -1)[k], js.velocities(st.p, st.v))
        assert np.array_equal(qdd.reshape(6, -1)[k], js.accelerations(st.p, st.v, a[k]))
    assert js.accelerations(P[:0, 0], V[:0, 0], A[:0, 0]).shape == (0, js.nv)
    with pytest.raises(ValueError, match=r"joint_rates: v \(as p\) has the wrong size"):
        js.velocities(states[0].p, states[0].v[:-3])


# ------------------------------------------------------------ loops
def driven_four_bar():
    """A crank–rocker four-bar with the crank driven: θ(t) = 2t + t²/2."""
    mech = nc.Mechanism(gravity=(0.0, -G, 0.0), name="driven four-bar")
    A, B, C, D = (0, 0, 0), (0.3, 0.4, 0), (1.2, 0.8, 0), (1.0, 0, 0)
    _rod(mech, "crank", A, B, 1.0)
    _rod(mech, "coupler", B, C, 2.0)
    _rod(mech, "rocker", D, C, 1.5)
    drive = nc.Drive(lambda t: (2.0 * t + 0.5 * t * t, 2.0 + t, 1.0))
    mech.add_revolute(nc.GROUND, "crank", point=A, axis=(0, 0, 1), name="motor", drive=drive)
    mech.add_revolute("crank", "coupler", point=B, axis=(0, 0, 1), name="B")
    mech.add_revolute(nc.GROUND, "rocker", point=D, axis=(0, 0, 1), name="D")
    mech.add_revolute("coupler", "rocker", point=C, axis=(0, 0, 1), name="C")
    return mech.build()


def test_inverse_dynamics_of_a_loop_is_the_drive_force():
    """The crank torque of the inverse dynamics (passive joints at zero torque fix the
    loop multipliers) equals the drive's multiplier from the simulation's KKT solves,
    and the loop-closure reaction equals ``sol.joint_reaction``."""
    model = driven_four_bar()
    js = nc.joint_space(model)
    assert js.joint_names == ("motor", "B", "D") and js.cut_joints == ("C",)
    sol = nc.simulate(model, t_end=1.0, t_eval=np.linspace(0, 1, 6), multipliers=True,
                      rtol=1e-10, proj_tol=1e-12)
    np.testing.assert_allclose(sol.q[:, 0], 2 * sol.t + 0.5 * sol.t**2, atol=1e-12)
    force = sol.drive_force("motor")
    reaction = sol.joint_reaction("C")
    for k, t in enumerate(sol.t):
        tau, loops = nc.inverse_dynamics(model, sol.q[k], sol.qd[k], sol.qdd[k], t=t,
                                         actuated=[], reactions=True)
        np.testing.assert_allclose(tau, [force[k], 0, 0], atol=1e-8 * abs(force).max())
        np.testing.assert_allclose(loops["C"].force, reaction.force[k], atol=1e-8)
        np.testing.assert_allclose(loops["C"].torque, reaction.torque[k], atol=1e-8)
    with pytest.raises(ValueError, match="has loops.*actuated="):
        nc.inverse_dynamics(model, sol.q[1], sol.qd[1], sol.qdd[1], t=sol.t[1])
    with pytest.raises(nc.AssemblyError, match=r"qdd cannot close.*\['motor', 'D'\] held"):
        nc.inverse_dynamics(model, sol.q[1], sol.qd[1], sol.qdd[1] + [0, 0, 1.0], t=sol.t[1],
                            actuated=[], keep=["D"])


def test_joint_state_closes_a_loop_keeping_the_named_joints_and_says_so():
    model = nc.models.four_bar().build()       # a parallelogram: rocker angle = crank angle
    js = nc.joint_space(model)
    assert js.joint_names == ("ground0", "top0.1", "ground1")
    with pytest.warns(UserWarning, match=r"closing the loops \(cut joints \['top1.1'\]\) "
                                         r"changed q by up to 0\.3.*ground1: 0 -> 0\.3"):
        st = nc.joint_state(model, {"ground0": 0.3}, {"ground0": -1.0}, keep=["ground0"])
    np.testing.assert_allclose(st.q, [0.3, -0.3, 0.3], atol=1e-12)
    np.testing.assert_allclose(st.qd, [-1.0, 1.0, -1.0], atol=1e-12)
    np.testing.assert_allclose(st.q_change, [0.0, -0.3, 0.3], atol=1e-12)
    assert max(_residuals(model, st)) < 1e-12
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # consistent values: no warning
        again = nc.joint_state(model, st.q, st.qd)
    np.testing.assert_allclose(again.p, st.p, atol=1e-14)
    with pytest.raises(nc.AssemblyError, match="(?s)did not close.*top1.1.*held"):
        nc.joint_state(model, [0.3, 0.0, 0.0], keep=["ground0", "top0.1"])


def test_driven_and_fixed_joints():
    """A fixed joint has no column; a driven joint's q and q̇ are the drive's, its τ
    the static ``m g r cos θ`` at constant rate; a loaded solution reads q too."""
    mech = nc.Mechanism(gravity=(0.0, -G, 0.0))
    mech.add_body("base", mass=1.0, com=(0, 0, 0), inertia=0.1 * np.eye(3))
    mech.add_body("arm", mass=2.0, com=(1.0, 0, 0), inertia=0.1 * np.eye(3), origin=(1, 0, 0))
    mech.add_fixed(nc.GROUND, "base", name="weld")
    mech.add_revolute("base", "arm", point=(0.5, 0, 0), axis=(0, 0, 1), name="motor",
                      drive=nc.Drive(lambda t: (t, 1.0, 0.0)))
    model = mech.build()
    assert nc.joint_space(model).joint_names == ("motor",)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st = nc.joint_state(model, t=0.5)
        tau = nc.inverse_dynamics(model, t=0.5)
    assert st.q.tolist() == [0.5] and st.qd.tolist() == [1.0]
    # the arm's centre of mass turns on a circle of radius 0.5 m at 1 rad/s: only
    # gravity's moment needs the motor (the centripetal force passes through the axis)
    assert tau == pytest.approx([2.0 * G * 0.5 * np.cos(0.5)], rel=1e-13)
    with pytest.raises(ValueError, match="'weld' is a fixed joint: it has no DOF"):
        nc.joint_state(model, {"weld": 0.0})


# ------------------------------------------------------------ input checks
def test_bad_input_names_the_joint_or_argument():
    model = driven_four_bar()
    with pytest.raises(ValueError, match="unknown joint 'elbow'.*motor"):
        nc.joint_state(model, {"elbow": 1.0})
    with pytest.raises(ValueError, match="'C' closes a loop"):
        nc.joint_state(model, {"C": 1.0})
    with pytest.raises(ValueError, match=r"q must have shape \(3,\)"):
        nc.joint_state(model, [0.0, 1.0])
    with pytest.raises(ValueError, match=r"qd is NaN or infinite at \['B'\]"):
        nc.joint_state(model, None, [2.0, np.nan, 0.0])
    with pytest.raises(TypeError, match="q\\['B'\\] must be real numbers"):
        nc.joint_state(model, {"B": "x"})
    with pytest.raises(ValueError, match="joint 'motor' is driven.*0.0"):
        nc.joint_state(model, {"motor": 1.0})
    with pytest.raises(ValueError, match="unknown joint 'X'"):
        nc.joint_state(model, None, keep=["X"])
    free = nc.Mechanism()
    free.add_body("ball", mass=1.0, com=(0, 0, 0), inertia=np.eye(3) * 0.1)
    free = free.build()
    assert nc.joint_space(free).q_names[3:] == ("ball.qx", "ball.qy", "ball.qz", "ball.qw")
    with pytest.raises(ValueError, match="quaternion.*'ball' has norm 2"):
        nc.joint_state(free, {"ball": [0, 0, 0, 0, 0, 0, 2.0]})
    with pytest.raises(ValueError, match=r"q\['ball'\]: the free joint takes 7"):
        nc.joint_state(free, {"ball": [0, 0, 0]})
    st = nc.joint_state(free, {"ball.x": 1.5}, {"ball.wz": 2.0})
    np.testing.assert_allclose(st.p[:3], [1.5, 0, 0])
    with pytest.raises(TypeError, match="natcoord.Model"):
        nc.joint_state("model", [0.0])


# ------------------------------------------------------------ Pinocchio
ROBOTS = {"ur5": ("ur_description/urdf/ur5_robot.urdf", False),
          "panda": ("panda_description/urdf/panda.urdf", False),
          "solo12": ("solo_description/robots/solo12.urdf", True)}


def _compare_with_pinocchio(pin, model, pm, bodies, rng, runs=3):
    """Placements (oMi of the body frames), aba and rnea at random states. The URDF
    joint damping natcoord models (panda's) is the torque ``−c q̇``, which Pinocchio's
    ``aba`` and ``rnea`` leave out: it enters aba's τ and is taken from rnea's."""
    pd = pm.createData()
    js = nc.joint_space(model)
    assert js.nq == pm.nq and js.nv == pm.nv
    worst = {"placement": 0.0, "aba": 0.0, "rnea": 0.0}
    for _ in range(runs):
        q = pin.integrate(pm, pin.neutral(pm), rng.uniform(-np.pi, np.pi, pm.nv))
        qd, qdd = rng.standard_normal(pm.nv), rng.standard_normal(pm.nv)
        st = nc.joint_state(model, q, qd)
        pin.forwardKinematics(pm, pd, q)
        pin.updateFramePlacements(pm, pd)
        B = st.p.reshape(-1, 4, 3)
        for i, placement in bodies(pd):
            worst["placement"] = max(worst["placement"],
                                     np.abs(B[i, 0] - placement.translation).max(),
                                     np.abs(B[i, 1:].T - placement.rotation).max())
        a, _, _ = nc.accelerations(model, st)
        damping = damping_torque(pm, model.import_report, qd)
        aba = pin.aba(pm, pd, q, qd, damping)
        qdd_nc = js.accelerations(st.p, st.v, a)
        worst["aba"] = max(worst["aba"], np.abs(qdd_nc - aba).max() / np.abs(aba).max())
        rnea = pin.rnea(pm, pd, q, qd, qdd) - damping
        tau = nc.inverse_dynamics(model, q, qd, qdd)
        worst["rnea"] = max(worst["rnea"], np.abs(tau - rnea).max() / np.abs(rnea).max())
    assert worst["placement"] <= 1e-12, worst
    assert worst["aba"] <= 1e-9 and worst["rnea"] <= 1e-9, worst
    return worst


@pytest.mark.parametrize("robot", sorted(ROBOTS))
def test_urdf_joint_space_is_pinocchios(robot, robots_folder):
    """Order and names as Pinocchio's (a free root is named after its link, Pinocchio's
    ``root_joint``), placements to 1e-12, q̈ = aba and τ = rnea to 1e-9 relative."""
    pin = pytest.importorskip("pinocchio")
    relative, floating = ROBOTS[robot]
    path = robots_folder / relative
    model = nc.load_urdf(path, floating_base=floating).build()
    pm = pin.buildModelFromUrdf(str(path), *([pin.JointModelFreeFlyer()] if floating else []))
    names = list(pm.names)[1:]
    if floating:
        names[0] = model.bodies[0].name
    assert list(nc.joint_space(model).joint_names) == names

    def bodies(pd):
        for i, body in enumerate(model.bodies):
            yield i, pd.oMf[pm.getFrameId(body.name, pin.BODY)]

    _compare_with_pinocchio(pin, model, pm, bodies, np.random.default_rng(23))


def test_urdf_solution_joint_accelerations_are_pinocchios_aba(robots_folder):
    """``sol.q``, ``sol.qd`` and ``sol.qdd`` of a passive ur5 run: at every output
    Pinocchio's aba at (sol.q, sol.qd) is sol.qdd."""
    pin = pytest.importorskip("pinocchio")
    path = robots_folder / ROBOTS["ur5"][0]
    model = nc.load_urdf(path).build()
    pm = pin.buildModelFromUrdf(str(path))
    pd = pm.createData()
    st = nc.joint_state(model, np.linspace(-1, 1, 6), np.linspace(0.5, -0.5, 6))
    sol = nc.simulate(model, t_end=0.2, initial_state=st, t_eval=np.linspace(0, 0.2, 5),
                      rtol=1e-10, proj_tol=1e-12)
    assert sol.q_names == list(pm.names)[1:]
    for q, qd, qdd in zip(sol.q, sol.qd, sol.qdd):
        damping = damping_torque(pm, model.import_report, qd)
        aba = pin.aba(pm, pd, q, qd, damping)
        assert np.abs(qdd - aba).max() <= 1e-9 * np.abs(aba).max()


def test_every_joint_kind_matches_pinocchio():
    """A chain built in both libraries, joint for joint: revolute and prismatic about
    unaligned axes, cylindrical (Pinocchio: a composite prismatic + revolute),
    universal, spherical, and a free body (free flyer); random reference frames."""
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(11)

    def unit():
        u = rng.standard_normal(3)
        return u / np.linalg.norm(u)

    kinds = ["revolute", "prismatic", "cylindrical", "universal", "spherical", "free"]
    mech = nc.Mechanism(gravity=(0.0, 0.0, -G), name="chain of every kind")
    pm = pin.Model()
    pm.gravity.linear = np.array([0.0, 0.0, -G])
    frames, parent = [], 0
    for i, kind in enumerate(kinds):
        A = Rotation.random(random_state=i).as_matrix()
        o = np.array([0.4 * i, 0.1 * i, 0.05 * i])
        mass, com = 1.0 + 0.2 * i, 0.2 * rng.standard_normal(3)
        inertia = np.diag([0.03, 0.035, 0.04]) + 0.005 * i * np.eye(3)
        name = f"body{i}"
        mech.add_body(name, mass=mass, com=com, inertia=inertia, origin=o, axes=A, local=True)
        a = nc.GROUND if i == 0 or kind == "free" else f"body{i - 1}"
        Ap, op = (np.eye(3), np.zeros(3)) if a is nc.GROUND else frames[-1]
        placement = pin.SE3(Ap.T @ A, Ap.T @ (o - op))
        axis = unit()                                    # in the body (= joint) frame
        if kind == "revolute":
            mech.add_revolute(a, name, point=o, axis=A @ axis, name=kind)
            joint = pin.JointModelRevoluteUnaligned(axis)
        elif kind == "prismatic":
            mech.add_prismatic(a, name, point=o, axis=A @ axis, name=kind)
            joint = pin.JointModelPrismaticUnaligned(axis)
        elif kind == "cylindrical":
            mech.add_cylindrical(a, name, point=o, axis=A @ axis, name=kind)
            joint = pin.JointModelComposite(pin.JointModelPrismaticUnaligned(axis))
            joint.addJoint(pin.JointModelRevoluteUnaligned(axis))
        elif kind == "universal":
            second = np.cross(axis, unit())
            second /= np.linalg.norm(second)
            mech.add_universal(a, name, point=o, axis_a=A @ axis, axis_b=A @ second,
                               name=kind)
            joint = pin.JointModelUniversal(axis, second)
        elif kind == "spherical":
            mech.add_spherical(a, name, point=o, name=kind)
            joint = pin.JointModelSpherical()
        else:
            joint, placement = pin.JointModelFreeFlyer(), pin.SE3(A, o)
            parent = 0
        joint_id = pm.addJoint(parent, joint, placement, name if kind == "free" else kind)
        pm.appendBodyToJoint(joint_id, pin.Inertia(mass, com, inertia), pin.SE3.Identity())
        frames.append((A, o))
        parent = joint_id
    model = mech.build()
    js = nc.joint_space(model)
    assert list(js.joint_names) == list(pm.names)[1:]

    def bodies(pd):
        for i in range(len(kinds)):
            yield i, pd.oMi[i + 1]

    _compare_with_pinocchio(pin, model, pm, bodies, rng)
