"""Joint torque input ``simulate(model, ..., u=u(t, q, qd))`` (issue 23, item 5).

The torques inverse dynamics computes for a prescribed motion, fed back as the
input, reproduce that motion (cart-pole: a prismatic and a revolute joint; a
three-link arm); a spherical joint's torque in body axes; bad ``u`` results are
refused naming the joints; with Pinocchio installed, ``aba`` of the same
torques gives the joint accelerations the run starts with.
"""
import numpy as np
import pytest

import natcoord as nc
from natcoord.model.body import rod_inertia


def cart_pole():
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0), name="cart-pole")
    mech.add_body("cart", 2.0, com=(0.0, 0.0, 0.0), inertia=nc.box_inertia(2.0, (0.4, 0.2, 0.2)))
    mech.add_body("pole", 0.5, com=(0.0, 0.5, 0.0), inertia=rod_inertia(0.5, 1.0, 0.02, axis=1))
    mech.add_prismatic(nc.GROUND, "cart", point=(0, 0, 0), axis=(1, 0, 0), name="rail")
    mech.add_revolute("cart", "pole", point=(0, 0, 0), axis=(0, 0, 1), name="hinge")
    return mech.build()


def arm():
    mech = nc.Mechanism(gravity=(0.0, 0.0, -9.81), name="arm")
    for k in range(3):
        mech.add_body(f"link{k}", 1.0 - 0.2 * k, com=(0.2 + 0.4 * k, 0, 0),
                      inertia=rod_inertia(1.0 - 0.2 * k, 0.4, 0.03, axis=0),
                      origin=(0.4 * k, 0, 0))
        mech.add_revolute(nc.GROUND if k == 0 else f"link{k - 1}", f"link{k}",
                          point=(0.4 * k, 0, 0), axis=(0, 0, 1) if k == 0 else (0, 1, 0),
                          name=f"j{k}")
    return mech.build()


def skew_compound():
    """Compound joints whose DOF axes are not orthogonal: a ball made of three hinges
    through one point along skew axes, and below it a planar joint of two oblique
    slides and a hinge."""
    mech = nc.Mechanism(gravity=(0.0, 0.0, -9.81), name="skew compound")
    mech.add_body("ball", 1.5, com=(0.1, 0.0, -0.3), inertia=nc.box_inertia(1.5, (0.2, 0.3, 0.6)))
    mech.add_body("puck", 0.8, com=(0.05, 0.02, -0.7), inertia=nc.box_inertia(0.8, (0.3, 0.2, 0.1)))
    mech.add_compound(nc.GROUND, "ball", [("h1", "hinge", (0, 0, 0), (0, 0, 1)),
                                          ("h2", "hinge", (0, 0, 0), (1, 0.5, 0.2)),
                                          ("h3", "hinge", (0, 0, 0), (0.3, 1, 0.4))])
    mech.add_compound("ball", "puck", [("s1", "slide", (0, 0, -0.6), (1, 0, 0)),
                                       ("s2", "slide", (0, 0, -0.6), (1, 1, 0)),
                                       ("turn", "hinge", (0, 0, -0.6), (0, 0, 1))])
    return mech.build()


def reference(nv):
    """A smooth joint motion q(t) = a sin(ω t) + b t² and its derivatives."""
    a, w, b = 0.3 + 0.1 * np.arange(nv), 2.0 + np.arange(nv), 0.1 * (-1.0) ** np.arange(nv)
    return (lambda t: a * np.sin(w * t) + b * t**2,
            lambda t: a * w * np.cos(w * t) + 2 * b * t,
            lambda t: -a * w**2 * np.sin(w * t) + 2 * b)


@pytest.mark.parametrize("method", ["dopri5", "radau"])
@pytest.mark.parametrize("build", [cart_pole, arm])
def test_inverse_dynamics_torques_reproduce_the_motion(build, method):
    """u(t) = inverse_dynamics(q_ref(t), q̇_ref(t), q̈_ref(t)) (feedforward): the run
    follows q_ref to the integration tolerance, with either integrator."""
    model = build()
    js = nc.joint_space(model)
    q, qd, qdd = reference(js.nv)

    def u(t, q_now, qd_now):
        assert q_now.shape == (js.nq,) and qd_now.shape == (js.nv,)
        return nc.inverse_dynamics(model, q(t), qd(t), qdd(t))
    t_eval = np.linspace(0.0, 1.0, 11)
    sol = nc.simulate(model, 1.0, rtol=1e-10, t_eval=t_eval, u=u, method=method,
                      initial_state=nc.joint_state(model, q(0.0), qd(0.0)))
    assert sol.success and not sol.stats["compiled"]
    expected = np.array([q(t) for t in t_eval])
    assert np.abs(sol.q - expected).max() <= 1e-6
    assert np.abs(sol.qd - np.array([qd(t) for t in t_eval])).max() <= 1e-5
    free = nc.simulate(model, 1.0, rtol=1e-10, t_eval=t_eval,
                       initial_state=nc.joint_state(model, q(0.0), qd(0.0)))
    assert np.abs(free.q - expected).max() > 1e-2           # the torques matter


@pytest.mark.parametrize("t", [0.0, 0.3, 0.6])
def test_compound_joints_with_skew_axes_take_their_torques(t):
    """Along the reference motion of :func:`skew_compound` (its DOF twists far from
    orthogonal), the torques inverse dynamics gives, applied as u, make the joint
    accelerations the motion has, to 1e-10 relative. (Open loop, the motion itself
    drifts off late in the second: the 3-hinge ball nears its gimbal lock.)"""
    model = skew_compound()
    q, qd, qdd = reference(nc.joint_space(model).nv)
    tau = nc.inverse_dynamics(model, q(t), qd(t), qdd(t))
    sol = nc.simulate(model, 1e-3, initial_state=nc.joint_state(model, q(t), qd(t)),
                      t_eval=[0.0], u=lambda t_now, q_now, qd_now: tau)
    assert np.abs(sol.qdd[0] - qdd(t)).max() <= 1e-10 * np.abs(qdd(t)).max()


def test_actuated_joints_take_their_torques_in_order():
    """Only the hinge actuated, holding the pole upright against gravity on a cart that
    the rail (unactuated) lets roll: the static torque inverse dynamics gives
    keeps the pole still (the pole's weight pushes nothing along the rail)."""
    model = cart_pole()
    tau = nc.inverse_dynamics(model, [0.0, 0.2], [0.0, 0.0], [0.0, 0.0])
    sol = nc.simulate(model, 0.5, rtol=1e-10, u=lambda t, q, qd: [tau[1]], actuated=["hinge"],
                      initial_state=nc.joint_state(model, [0.0, 0.2]),
                      t_eval=np.linspace(0, 0.5, 6))
    assert np.abs(sol.q - [0.0, 0.2]).max() <= 1e-8
    with pytest.raises(ValueError, match=r"1 numbers.*hinge \(revolute, 1\)"):
        nc.simulate(model, 0.1, u=lambda t, q, qd: tau, actuated=["hinge"])


def test_a_stiff_pd_torque_is_what_radau_is_for():
    """The hinge held at 0.2 rad by a stiff PD law (kp = 1e6 N·m/rad, kd = 1e3 N·m·s/rad
    plus the static torque) on the freely rolling cart, released at 0.25 rad. The law is
    overdamped: its fast mode decays at about kd / I ≈ 6000 s⁻¹ (I ≈ 0.17 kg m², the
    pole about the hinge), so an explicit method needs about 6000 t / 3.3 ≈ 1800 steps
    for stability alone (DOPRI5 took 1784 at rtol 1e-6); Radau, whose Jacobian
    differentiates u by central differences, needs a tenth of that. After 1 s the pole is
    at the target and the cart where the system's horizontal centre of mass has stayed
    (nothing pushes along the rail): 2.5 kg · x = 0.5 kg · 0.5 m · (sin 0.25 − sin 0.2)
    in the cart-pole's sign convention."""
    model = cart_pole()
    hold = nc.inverse_dynamics(model, [0.0, 0.2], [0.0, 0.0], [0.0, 0.0])[1]

    def u(t, q, qd):
        return [hold - 1e6 * (q[1] - 0.2) - 1e3 * qd[1]]
    sol = nc.simulate(model, 1.0, rtol=1e-6, u=u, actuated=["hinge"], method="radau",
                      initial_state=nc.joint_state(model, [0.0, 0.25]), t_eval=[1.0])
    cart = -0.5 * 0.5 * (np.sin(0.25) - np.sin(0.2)) / 2.5
    assert np.abs(sol.q[-1] - [cart, 0.2]).max() <= 1e-7
    assert sol.stats["steps"] <= 180


def test_a_spherical_joint_takes_its_torque_in_body_axes():
    """A ball-jointed body under a torque τ (body axes) from rest, no gravity: the
    initial angular acceleration is I⁻¹ τ about the joint point (Euler)."""
    mech = nc.Mechanism(gravity=(0.0, 0.0, 0.0))
    inertia = np.diag([0.2, 0.25, 0.3])
    mech.add_body("ball", 1.0, com=(0.0, 0.0, 0.0), inertia=inertia)
    mech.add_spherical(nc.GROUND, "ball", point=(0, 0, 0), name="socket")
    model = mech.build()
    tau = np.array([0.01, -0.02, 0.03])
    h = 1e-3
    sol = nc.simulate(model, h, rtol=1e-12, u=lambda t, q, qd: tau, t_eval=[0.0, h])
    omega = sol.qd[-1]
    assert np.allclose(omega, np.linalg.solve(inertia, tau) * h, rtol=1e-6, atol=1e-12)


BAD = {"too many": (lambda t, q, qd: np.zeros(3), ValueError, ["2 numbers", "rail", "hinge"]),
       "text": (lambda t, q, qd: "push", ValueError, ["'push'", "2 numbers"]),
       "nan at start": (lambda t, q, qd: [np.nan, 0.0], ValueError, ["finite"])}


@pytest.mark.parametrize("u, error, phrases", BAD.values(), ids=BAD.keys())
def test_bad_torques_are_refused_before_the_run(u, error, phrases):
    with pytest.raises(error) as err:
        nc.simulate(cart_pole(), 0.1, u=u)
    for phrase in phrases:
        assert phrase in str(err.value)


def test_bad_arguments_are_refused():
    model = cart_pole()
    with pytest.raises(TypeError, match="callable"):
        nc.simulate(model, 0.1, u=[1.0, 2.0])
    with pytest.raises(ValueError, match="pass u=callable"):
        nc.simulate(model, 0.1, actuated=["rail"])
    with pytest.raises(ValueError, match="'wheel'"):
        nc.simulate(model, 0.1, u=lambda t, q, qd: [0], actuated=["wheel"])


def test_a_torque_turning_nan_later_stops_the_run_keeping_the_steps():
    def u(t, q, qd):
        return [0.0, np.nan if t > 0.3 else 0.0]
    with pytest.raises(nc.IntegrationError, match="u\\(t, q, qd\\)") as err:
        nc.simulate(cart_pole(), 1.0, u=u)
    assert err.value.solution.t[-1] == pytest.approx(0.3, abs=1e-6)


def test_agrees_with_pinocchio_aba():
    """The arm as a URDF-like tree in Pinocchio: aba(q, q̇, τ) equals the q̈ the run with
    u = τ starts with (one tiny step: q̇(h) − q̇(0) ≈ h q̈)."""
    pin = pytest.importorskip("pinocchio")
    model = arm()
    js = nc.joint_space(model)
    q0, qd0, tau = np.array([0.3, -0.4, 0.5]), np.array([0.2, 0.1, -0.3]), \
        np.array([1.0, -0.5, 0.2])
    state = nc.joint_state(model, q0, qd0)
    pm = pin.Model()
    pm.gravity = pin.Motion(np.array([0, 0, -9.81, 0, 0, 0]))
    parent = 0
    for k in range(3):
        placement = pin.SE3(np.eye(3), np.array([0.4 if k else 0.0, 0, 0]))
        joint = pin.JointModelRZ() if k == 0 else pin.JointModelRY()
        parent = pm.addJoint(parent, joint, placement, f"j{k}")
        mass = 1.0 - 0.2 * k
        inertia = rod_inertia(mass, 0.4, 0.03, axis=0)
        pm.appendBodyToJoint(parent, pin.Inertia(mass, np.array([0.2, 0, 0]), inertia),
                             pin.SE3.Identity())
    data = pm.createData()
    expected = pin.aba(pm, data, q0, qd0, tau)
    h = 1e-6
    sol = nc.simulate(model, h, rtol=1e-12, u=lambda t, q, qd: tau, initial_state=state,
                      t_eval=[0.0, h])
    assert js.joint_names == ("j0", "j1", "j2")
    assert np.allclose((sol.qd[-1] - sol.qd[0]) / h, expected, rtol=1e-4, atol=1e-6)
