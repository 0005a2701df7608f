"""Joint spring–dampers (``Mechanism.add_joint_spring``): a torsional pendulum's
frequency and decay, a sliding oscillator's, energy conservation without damping,
the core's force against −∂V/∂p of its energy, the energy against its closed form,
the core's exact derivative against central differences of its force."""
import numpy as np
import pytest

import natcoord as nc
from natcoord.model.core_tables import force_derivative, generalized_forces
from test_radau_core import core_and_difference_jacobians

I_AXIS = 0.3            # kg m², about the joint axis
AXIS = np.array([1.0, 2.0, 2.0]) / 3.0


def _rotor(stiffness, damping, rest=0.0, rate=1.0):
    """A body spinning about a tilted axis through its centre of mass (no gravity
    torque about the joint), with a torsion spring–damper."""
    mech = nc.Mechanism(gravity=(0, 0, -9.81))
    frame = np.column_stack(nc.model.joints.perpendicular_basis(AXIS) + (AXIS,))
    inertia = np.diag([0.5, 0.7, I_AXIS])                  # body axes: e3 = AXIS
    mech.add_body("rotor", mass=2.0, com=(0.1, -0.2, 0.4), inertia=inertia,
                  origin=(0.1, -0.2, 0.4), axes=frame)
    mech.add_revolute(nc.GROUND, "rotor", point=(0.1, -0.2, 0.4), axis=AXIS, name="hinge")
    mech.add_joint_spring("hinge", stiffness=stiffness, rest=rest, damping=damping)
    mech.set_joint_rate("hinge", rate)
    return mech.build()


def test_damped_torsional_pendulum_frequency_and_decay():
    """θ'' = −(k θ + c θ')/I from θ = 0, θ' = w0: θ = w0/ω_d e^{−σt} sin ω_d t."""
    k, c, w0 = 4.0, 0.15, 1.0
    model = _rotor(k, c, rate=w0)
    t = np.linspace(0.0, 3.0, 31)
    sol = nc.simulate(model, t_end=3.0, t_eval=t, rtol=1e-11, atol=1e-12, proj_tol=1e-13)
    sigma = c / (2 * I_AXIS)
    wd = np.sqrt(k / I_AXIS - sigma ** 2)
    exact = w0 / wd * np.exp(-sigma * t) * np.sin(wd * t)
    assert np.abs(sol.joint_coordinate("hinge") - exact).max() < 1e-8


def test_rest_angle_is_the_equilibrium():
    """Released at rest from θ = 0 with rest 0.2 rad and no damping: θ = 0.2 (1 − cos ωt)."""
    k = 3.0
    model = _rotor(k, 0.0, rest=0.2, rate=0.0)
    t = np.linspace(0.0, 2.0, 21)
    sol = nc.simulate(model, t_end=2.0, t_eval=t, rtol=1e-11, atol=1e-12, proj_tol=1e-13)
    exact = 0.2 * (1.0 - np.cos(np.sqrt(k / I_AXIS) * t))
    assert np.abs(sol.joint_coordinate("hinge") - exact).max() < 1e-8


def test_sliding_oscillator_along_a_tilted_axis():
    """A mass on a prismatic joint: s'' = −(k s + c s')/m + g·u."""
    m, k, c = 1.5, 20.0, 0.9
    g = np.array([0.0, 0.0, -9.81])
    mech = nc.Mechanism(gravity=g)
    mech.add_body("slider", mass=m, com=(0, 0, 0), inertia=np.diag([0.2, 0.2, 0.3]))
    mech.add_prismatic(nc.GROUND, "slider", point=(0, 0, 0), axis=AXIS, name="slide")
    mech.add_joint_spring("slide", stiffness=k, damping=c)
    t = np.linspace(0.0, 2.0, 21)
    sol = nc.simulate(mech.build(), t_end=2.0, t_eval=t, rtol=1e-11, atol=1e-12,
                      proj_tol=1e-13)
    s_eq = m * (g @ AXIS) / k                  # from s = 0 at rest: s_eq (1 − decaying cos)
    sigma, wd = c / (2 * m), np.sqrt(k / m - (c / (2 * m)) ** 2)
    exact = s_eq * (1 - np.exp(-sigma * t) * (np.cos(wd * t) + sigma / wd * np.sin(wd * t)))
    assert np.abs(sol.joint_coordinate("slide") - exact).max() < 1e-8


def _double_pendulum(c=0.0):
    """Two links with torsion springs on both hinges (one to ground), gravity on."""
    mech = nc.Mechanism(gravity=(0, 0, -9.81))
    inertia = np.diag([0.02, 0.03, 0.025])
    mech.add_body("upper", 1.0, com=(0.25, 0, 0), inertia=inertia)
    mech.add_body("lower", 0.7, com=(0.75, 0, 0), inertia=inertia, origin=(0.5, 0, 0))
    mech.add_revolute(nc.GROUND, "upper", point=(0, 0, 0), axis=(0, 1, 0), name="shoulder")
    mech.add_revolute("upper", "lower", point=(0.5, 0, 0), axis=(0.3, 1, 0), name="elbow")
    mech.add_joint_spring("shoulder", stiffness=5.0, rest=0.4, damping=c)
    mech.add_joint_spring("elbow", stiffness=2.0, rest=-0.3, damping=c)
    mech.set_joint_rate("shoulder", 2.0)
    mech.set_joint_rate("elbow", -3.0)
    return mech.build()


def test_energy_with_stiffness_only_is_conserved():
    model = _double_pendulum()
    sol = nc.simulate(model, t_end=3.0, rtol=1e-10, atol=1e-12, proj_tol=1e-12)
    e = np.asarray(sol.energy)
    assert np.ptp(e) < 1e-7 * max(1.0, np.abs(e).max())
    assert np.ptp(sol.joint_coordinate("shoulder")) > 0.5    # the springs did work


def test_damping_dissipates_its_power():
    """dE/dt = −Σ c q̇²."""
    c = 0.05
    model = _double_pendulum(c)
    t = np.linspace(0.0, 1.0, 4001)             # trapezoidal rule: error ~ dt²
    sol = nc.simulate(model, t_end=1.0, t_eval=t, rtol=1e-11, atol=1e-12, proj_tol=1e-13)
    power = -c * (sol.joint_rate("shoulder") ** 2 + sol.joint_rate("elbow") ** 2)
    dissipated = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1]) * np.diff(t))])
    e = np.asarray(sol.energy)
    assert np.abs(e - e[0] - dissipated).max() < 1e-6 * np.abs(dissipated).max()


def test_force_is_minus_the_gradient_of_the_energy():
    """At a state off the reference (angles past ±π/2): the springs' energy is the
    closed form ½ Σ k (q − q_rest)² of the joint angles, and the core's generalized
    force (gravity included) is −∂V/∂p of the model's potential energy by central
    differences."""
    model = _double_pendulum(c=0.0)
    st = nc.joint_state(model, {"shoulder": 2.9, "elbow": -1.7})
    p = st.p.copy()
    F = generalized_forces(model, p, np.zeros_like(p), np.zeros((p.size // 3, 3)))
    h = 1e-6
    grad = np.array([(model.potential_energy(p + h * e) - model.potential_energy(p - h * e))
                     / (2 * h) for e in np.eye(p.size)])
    assert np.abs(F).max() > 1.0
    assert np.allclose(F.ravel(), -grad, rtol=0, atol=1e-7)
    springs = 0.5 * 5.0 * (2.9 - 0.4) ** 2 + 0.5 * 2.0 * (-1.7 + 0.3) ** 2
    gravity = -np.sum(model.gravity_force.ravel() * p)
    assert model.potential_energy(p) - gravity == pytest.approx(springs, abs=1e-12)


def test_bad_joint_spring_arguments_name_the_joint():
    mech = nc.models.four_bar()
    joint = mech.joints[0].name
    with pytest.raises(ValueError, match="unknown joint 'nope'"):
        mech.add_joint_spring("nope", stiffness=1.0)
    with pytest.raises(ValueError, match="stiffness must be"):
        mech.add_joint_spring(joint, stiffness=-1.0)
    with pytest.raises(ValueError, match=r"coordinate 'slide' not in \['angle'\]"):
        mech.add_joint_spring(joint, stiffness=1.0, coordinate="slide")


def test_force_derivative_matches_central_differences():
    """The core's exact directional derivative of the applied forces (linearization,
    Radau's Jacobian, the sensitivity sweep) against central differences of the core's
    force, along a random direction in (p, v)."""
    model = _double_pendulum(c=0.3)
    st = nc.joint_state(model, {"shoulder": 2.5, "elbow": -1.1}, {"shoulder": 1.5,
                                                                   "elbow": -2.0})
    p, v = st.p.copy(), st.v.copy()
    rng = np.random.default_rng(3)
    dp, dv = rng.standard_normal(p.shape), rng.standard_normal(v.shape)
    h = 1e-6
    shape = (p.size // 3, 3)
    analytic = force_derivative(model, p, v, dp, dv, np.zeros(shape))
    up = generalized_forces(model, p + h * dp, v + h * dv, np.zeros(shape))
    down = generalized_forces(model, p - h * dp, v - h * dv, np.zeros(shape))
    numeric = (up - down) / (2 * h)
    assert np.abs(numeric).max() > 1.0
    assert np.abs(analytic - numeric).max() < 1e-7 * np.abs(numeric).max()


def test_linearization_of_a_sprung_pendulum():
    """∂a/∂p·dp of nc.linearize against central differences of nc.accelerations."""
    model = _double_pendulum(c=0.3)
    st = nc.joint_state(model, {"shoulder": 0.7, "elbow": -0.4}, {"shoulder": 1.0})
    lin = nc.linearize(model, st)
    rng = np.random.default_rng(4)
    dp, dv = rng.standard_normal(st.p.size), rng.standard_normal(st.v.size)
    h = 1e-6
    plus, _, _ = nc.accelerations(model, nc.State(0.0, st.p + h * dp, st.v + h * dv))
    minus, _, _ = nc.accelerations(model, nc.State(0.0, st.p - h * dp, st.v - h * dv))
    numeric = (plus - minus) / (2 * h)
    analytic = lin.da_dp @ dp + lin.da_dv @ dv
    assert np.abs(analytic - numeric).max() < 1e-6 * np.abs(numeric).max()


def test_sensitivity_of_a_sprung_pendulum():
    """The sweep with the core's joint-spring derivative: ∂p(t)/∂m against
    central differences of two runs."""
    model = _double_pendulum(c=0.3)
    t = np.linspace(0.0, 0.5, 6)
    options = dict(rtol=1e-11, atol=1e-12, proj_tol=1e-13)
    sens = nc.sensitivities(model, 0.5, params=["mass:upper"], t_eval=t, **options)
    h = 1e-5
    runs = [nc.simulate(model.with_parameters({"mass:upper": 1.0 + s * h}), t_end=0.5,
                        t_eval=t, **options) for s in (1, -1)]
    numeric = (runs[0].p - runs[1].p) / (2 * h)
    analytic = sens.dp[..., 0]
    assert np.abs(analytic - numeric).max() < 1e-5 * np.abs(numeric).max()


def _sprung_slider(c=0.9):
    """A mass on a prismatic joint along a tilted axis with a slide spring–damper."""
    mech = nc.Mechanism(gravity=(0.0, 0.0, -9.81))
    mech.add_body("slider", mass=1.5, com=(0, 0, 0), inertia=np.diag([0.2, 0.2, 0.3]))
    mech.add_prismatic(nc.GROUND, "slider", point=(0, 0, 0), axis=AXIS, name="slide")
    mech.add_joint_spring("slide", stiffness=20.0, rest=0.1, damping=c)
    return mech.build()


@pytest.mark.parametrize("build", [lambda: _double_pendulum(c=0.3), _sprung_slider],
                         ids=["angle", "slide"])
def test_core_derivative_equals_central_differences(build):
    """Radau's Jacobian (the core's nc_acceleration_derivative, with the joint springs'
    exact derivative) against central differences of ``nc.accelerations``."""
    model = build()
    J, reference = core_and_difference_jacobians(model)
    N = model.n_coords
    np.testing.assert_allclose(J[N:], reference, rtol=0, atol=1e-8 * np.abs(reference).max())


@pytest.mark.parametrize("which", ["p0", "v0"])
def test_initial_state_sensitivities_of_a_sprung_pendulum(which):
    """The sweep with the joint springs' derivative (stiffness and damping on both
    hinges) along fixed steps: the initial-state columns against central differences
    of whole simulations from perturbed initial states."""
    from test_sensitivities import (FIXED, T_END, T_EVAL,
                                    initial_state_columns_match_finite_differences)
    model = _double_pendulum(c=0.3)
    sens = nc.sensitivities(model, T_END, params=[which], t_eval=T_EVAL, **FIXED)
    initial_state_columns_match_finite_differences(model, sens, which)
