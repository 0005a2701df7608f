"""Radau IIA (``simulate(method="radau")``): the same physics as DOPRI5, fewer steps when stiff.

* On a non-stiff closed-loop mechanism (the IFToMM Bricard six-bar, one
  redundant row) Radau and DOPRI5 agree to the tolerance.
* A rigid pendulum released at 120° has the elliptic-integral period, and
  its energy is conserved.
* The elastic pendulum with a stiff spring (k = 10⁶ N/m, m = 1 kg: a spring
  mode at ω = 1000 rad/s beside a pendulum of period ≈ 2 s) limits DOPRI5's
  step by stability, h ≲ 3.3/ω; Radau (L-stable) follows the slow motion and
  agrees with the same problem in polar coordinates (SciPy's Radau).
* Over the 2 s of benchmarks/stiff.py (rtol = 10⁻⁶) the elastic pendulum's
  ball follows the polar-coordinate solution (SciPy's DOP853 at 10⁻¹⁰) to
  within rtol × length at every output, its mechanical energy (kinetic,
  gravity, spring) equals the polar solution's and never rises (the damper
  only dissipates), and the run stays within a budget of steps, rejected
  steps and Jacobians that the step control of RADAU5 meets with a margin.
* The dense output is the collocation polynomial, of order 3: its error at
  the middle of a step falls by 2⁴ when the step is halved.
* With the weaker stabilizations (velocity projection only, Baumgarte, none)
  Radau and DOPRI5 integrate the same equations and agree.
* Every projected state satisfies the constraints within ``proj_tol``; a
  Python callable force works; a wrong ``method`` is a ``ValueError``.
"""
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.special import ellipk

import natcoord as nc
from natcoord.models.spring_pendulum import polar_equations, polar_initial, polar_to_position
from natcoord.integrate.radau import Radau

MASS, LENGTH, SECTION, G = 1.5, 1.2, 0.04, 9.81
THETA0 = np.radians(120.0)


def rod_pendulum():
    """A rod on a revolute joint at the origin, at rest at θ0 from the downward vertical."""
    mech = nc.Mechanism(gravity=(0.0, -G, 0.0), name="pendulum")
    e1 = np.array([np.sin(THETA0), -np.cos(THETA0), 0.0])
    axes = np.column_stack([e1, np.cross([0.0, 0.0, 1.0], e1), [0.0, 0.0, 1.0]])
    mech.add_body("rod", mass=MASS, com=0.5 * LENGTH * e1,
                  inertia=nc.rod_inertia(MASS, LENGTH, SECTION), origin=(0, 0, 0), axes=axes)
    mech.add_revolute(nc.GROUND, "rod", point=(0, 0, 0), axis=(0, 0, 1))
    return mech


def exact_period():
    d = LENGTH / 2
    I_O = nc.rod_inertia(MASS, LENGTH, SECTION)[2, 2] + MASS * d**2
    return 4 * np.sqrt(I_O / (MASS * G * d)) * ellipk(np.sin(THETA0 / 2) ** 2)


def angular_velocity_z(sol):
    X, V = sol.p.reshape(-1, 4, 3), sol.v.reshape(-1, 4, 3)
    return 0.5 * np.cross(X[:, 1:], V[:, 1:]).sum(axis=1)[:, 2]


def test_agrees_with_dopri5_on_the_six_bar():
    model = nc.models.six_bar().build()
    t_eval = np.linspace(0.0, 1.0, 11)
    explicit = nc.simulate(model, 1.0, rtol=1e-11, t_eval=t_eval)
    implicit = nc.simulate(model, 1.0, rtol=1e-10, t_eval=t_eval, method="radau")
    assert implicit.stats["method"] == "radau" and explicit.stats["method"] == "dopri5"
    assert implicit.dropped == explicit.dropped                   # the same redundant row
    np.testing.assert_allclose(implicit.p, explicit.p, atol=1e-9)
    np.testing.assert_allclose(implicit.v, explicit.v, atol=1e-8)
    assert implicit.stats["jacobians"] >= 1 and implicit.stats["lu_decompositions"] >= 2
    assert implicit.stats["newton_iterations"] >= implicit.stats["steps"]


@pytest.mark.parametrize("projection", ["velocity", "baumgarte", "none"])
def test_weaker_stabilizations_integrate_the_same_equations_as_dopri5(projection):
    """Each stabilization is a different differential equation (Baumgarte's γ
    terms) or a different map after each step (velocities only, nothing):
    Radau and DOPRI5 with the same one agree to the tolerance."""
    model = nc.models.six_bar().build()
    kw = dict(t_eval=np.linspace(0.0, 1.0, 11), projection=projection, drift_tol=1e-3)
    explicit = nc.simulate(model, 1.0, rtol=1e-11, **kw)
    implicit = nc.simulate(model, 1.0, rtol=1e-10, method="radau", **kw)
    assert implicit.success and explicit.success
    np.testing.assert_allclose(implicit.p, explicit.p, atol=1e-9)
    np.testing.assert_allclose(implicit.v, explicit.v, atol=1e-8)
    assert implicit.constraint_residual.max() < 1e-9


def test_pendulum_period_and_energy():
    """Turning points (ω_z = 0) at T/2 and T; energy constant to the tolerance."""
    T = exact_period()
    t_eval = np.linspace(0.0, 1.05 * T, 801)
    sol = nc.simulate(rod_pendulum().build(), 1.05 * T, rtol=1e-10, t_eval=t_eval,
                      method="radau")
    omega = angular_velocity_z(sol)
    from scipy.interpolate import CubicSpline
    turning = CubicSpline(sol.t, omega).roots(extrapolate=False)
    np.testing.assert_allclose(turning[turning > 0.1], [T / 2, T], rtol=1e-6)
    np.testing.assert_allclose(sol.energy, sol.energy[0], rtol=1e-8)


def test_projection_residuals_within_proj_tol():
    proj_tol = 1e-10
    sol = nc.simulate(nc.models.six_bar().build(), 0.5, rtol=1e-6, proj_tol=proj_tol,
                      method="radau")
    assert sol.success
    assert sol.constraint_residual.max() <= proj_tol
    assert sol.velocity_residual.max() <= proj_tol


def polar_elastic_pendulum(t_end, rtol):
    """The elastic pendulum in polar coordinates (models/spring_pendulum.py), by SciPy's Radau."""
    f, y0 = polar_equations(), polar_initial()
    r, phi = solve_ivp(f, (0.0, t_end), y0, method="Radau", rtol=rtol, atol=rtol * 1e-2).y[:2, -1]
    return polar_to_position(r, phi)


def test_stiff_spring_pendulum_takes_far_fewer_steps():
    """Measured at rtol = 1e-6 over 1 s: DOPRI5 887 steps, Radau 127 (ratio 7.0)."""
    model = nc.models.spring_pendulum(stiffness=1e6).build()
    explicit = nc.simulate(model, 1.0, rtol=1e-6, t_eval=[1.0])
    implicit = nc.simulate(model, 1.0, rtol=1e-6, t_eval=[1.0], method="radau")
    assert explicit.stats["steps"] > 4 * implicit.stats["steps"]
    centre = implicit.p[-1, :3]
    np.testing.assert_allclose(centre, explicit.p[-1, :3], atol=1e-5)
    np.testing.assert_allclose(centre, polar_elastic_pendulum(1.0, 1e-9), atol=1e-5)


K_STIFF, PENDULUM_T_END = 1e6, 2.0


def polar_reference(t_eval, stiffness=K_STIFF, damping=20.0, mass=1.0, length=1.0, g=9.81):
    """Ball centre (k, 3) and mechanical energy (k,) of the elastic pendulum in polar
    coordinates, by SciPy's DOP853 at rtol = 1e-10 (an explicit method in other
    coordinates: independent of natcoord's integrators)."""
    sol = solve_ivp(polar_equations(stiffness, damping, mass, length, g), (0.0, t_eval[-1]),
                    polar_initial(stiffness, mass, length, 60.0, g), method="DOP853",
                    rtol=1e-10, atol=1e-12, t_eval=t_eval)
    r, phi, r_dot, phi_dot = sol.y
    centre = np.array([polar_to_position(*q) for q in zip(r, phi)])
    energy = (0.5 * mass * (r_dot**2 + (r * phi_dot) ** 2) + 0.5 * stiffness * (r - length) ** 2
              - mass * g * r * np.cos(phi))
    return centre, energy


@pytest.fixture(scope="module")
def elastic_pendulum_run():
    """The stiff benchmark's Radau run (benchmarks/stiff.py: k = 1e6 N/m, rtol = 1e-6,
    2 s), at 41 outputs."""
    t_eval = np.linspace(0.0, PENDULUM_T_END, 41)
    model = nc.models.spring_pendulum(stiffness=K_STIFF).build()
    return t_eval, nc.simulate(model, PENDULUM_T_END, rtol=1e-6, t_eval=t_eval,
                               method="radau")


def test_elastic_pendulum_follows_the_polar_solution(elastic_pendulum_run):
    """Measured: ball within 2.7e-8 m of the polar solution, energy within 2e-7 J of
    it (|E| ≈ 4.9 J; a velocity error of 1e-7 m/s at 3 m/s is 3e-7 J) and rising by at
    most 2.6e-7 J between outputs, where the damper dissipates 4e-8 J in all."""
    t_eval, sol = elastic_pendulum_run
    assert sol.success and np.array_equal(sol.t, t_eval)
    centre, energy = polar_reference(t_eval)
    np.testing.assert_allclose(sol.p[:, :3], centre, rtol=0, atol=1e-6)   # rtol × 1 m
    np.testing.assert_allclose(sol.energy, energy, rtol=0, atol=1e-5)
    assert np.diff(sol.energy).max() < 1e-6                                 # no energy gained
    assert sol.constraint_residual.max() <= 1e-10                           # the ball stays rigid


def test_elastic_pendulum_step_budget(elastic_pendulum_run):
    """RADAU5's step control: measured 148 steps, 12 rejected, 145 Jacobians (RADAU5's
    THET = 0.001 for a small system; with THET = 0.1, 216 steps, 59 rejected, 81
    Jacobians; with J at the step's start: 167 steps, 30 rejected, 167 Jacobians, and
    with THET = 0.1 218, 63, 90; before RADAU5's control: 250 steps, 178 rejected, 180
    Jacobians; SciPy's Radau on the same equations takes 271 steps and 193 Jacobians).
    DOPRI5 takes 1759 steps; the polar form, 90 (natcoord/integrate/radau.py: the
    spring's turning direction costs the rest). At most one Jacobian per attempt."""
    _, sol = elastic_pendulum_run
    stats = sol.stats
    assert stats["steps"] <= 185
    assert stats["rejected"] <= 45
    assert stats["jacobians"] <= stats["steps"] + stats["rejected"]
    explicit = nc.simulate(nc.models.spring_pendulum(stiffness=K_STIFF).build(),
                           PENDULUM_T_END, rtol=1e-6, t_eval=[PENDULUM_T_END])
    assert stats["steps"] * 6 < explicit.stats["steps"]    # DOPRI5: h ≲ 3.3/ω


def test_elastic_pendulum_newton_with_the_jacobian_of_the_middle_of_the_step(
        elastic_pendulum_run):
    """The spring turns by φ̇ h within a step (≈ 0.04 rad at the bottom of the swing), and
    simplified Newton contracts the slower the larger the angle between J's spring and a
    stage's: J taken at the middle of the step (radau.c JACOBIAN_AT) halves it. Measured:
    148 steps, 12 rejected, 591 Newton iterations, ball 1.6e-8 m from the polar solution
    at 2 s (156, 12, 609, 8.9e-9 m with RADAU5's refined error estimate on the first
    step); with J at the step's start 167 steps, 30 rejected (Newton failures at the
    bottom of the swing), 778 iterations, 4.9e-8 m."""
    t_eval, sol = elastic_pendulum_run
    stats = sol.stats
    assert stats["steps"] <= 165
    assert stats["rejected"] <= 20
    assert stats["newton_iterations"] <= 4 * (stats["steps"] + stats["rejected"])
    centre, _ = polar_reference(t_eval[-1:])
    assert np.linalg.norm(sol.p[-1, :3] - centre[-1]) < 2.5e-8


def test_dense_output_is_of_order_three():
    """The collocation polynomial's error at θ = ½ falls by ≈ 2⁴ when h is halved."""
    model = rod_pendulum().build()
    errors = []
    for h in (0.01, 0.005):                 # one step each, accepted at rtol = 1e-7
        stepper = Radau(model, t_bound=h, rtol=1e-7, first_step=h)
        record = stepper.step()
        assert record.status == "accepted" and record.h == h
        reference = nc.simulate(model, h, rtol=1e-12, proj_tol=1e-12, t_eval=[h / 2])
        middle = stepper.dense_output()(h / 2)
        errors.append(np.abs(middle[:model.n_coords] - reference.p[0]).max())
    assert errors[0] / errors[1] > 10                   # measured: 16.0


def test_callable_force():
    """A constant force given as a Python callable gives the constant force's motion."""
    def pushed(force):
        mech = rod_pendulum()
        mech.add_force("rod", (LENGTH, 0.0, 0.0), force, local=True)
        return nc.simulate(mech.build(), 0.5, rtol=1e-8, t_eval=[0.5], method="radau")
    constant = pushed(np.array([0.0, 2.0, 0.0]))
    called = pushed(lambda t, state: np.array([0.0, 2.0, 0.0]))
    np.testing.assert_allclose(called.p, constant.p, atol=1e-8)


def test_stepper_interface():
    model = rod_pendulum().build()
    stepper = Radau(model, t_bound=0.2, rtol=1e-6)
    while stepper.status == "running":
        stepper.step()
    assert stepper.status == "finished" and stepper.t == 0.2
    assert stepper.n_steps > 0 and stepper.n_lu >= 2 and stepper.n_jacobians >= 1
    assert not stepper.y.flags.writeable and stepper.dropped.size == 0


def test_chunks_of_the_core_take_the_steps_of_step():
    """``simulate``'s chunks (the core's advance loop, DOPRI5's, with Radau's steps) take
    the steps of one ``step()`` per call, and its ``t_eval`` outputs are the steps'
    collocation polynomials (``dense_output()``) projected as outputs (``project``)."""
    model = rod_pendulum().build()
    t_eval = np.linspace(0.0, 0.5, 26)
    every = nc.simulate(model, 0.5, rtol=1e-6, method="radau")
    outputs = nc.simulate(model, 0.5, rtol=1e-6, method="radau", t_eval=t_eval)
    stepper = Radau(model, t_bound=0.5, rtol=1e-6)
    ts, ys, expected = [stepper.t], [stepper.y.copy()], [stepper.y.copy()]
    k = 1
    while stepper.status == "running":
        assert stepper.step().status == "accepted"
        ts.append(stepper.t)
        ys.append(stepper.y.copy())
        piece = stepper.dense_output()
        while k < t_eval.size and t_eval[k] <= stepper.t:
            expected.append(stepper.project(t_eval[k], piece(t_eval[k])))
            k += 1
    assert np.array_equal(every.t, ts) and every.stats["steps"] == stepper.n_steps
    np.testing.assert_array_equal(np.column_stack([every.p, every.v]), ys)
    np.testing.assert_allclose(np.column_stack([outputs.p, outputs.v]), expected,
                               rtol=0, atol=1e-14)
    assert outputs.stats["steps"] == every.stats["steps"]


def test_dense_output_has_one_polynomial_per_step_across_chunks():
    """``dense_output=True`` over more steps than one chunk of the core keeps (256): one
    collocation polynomial per accepted step, spanning it, starting at its recorded
    state and ending at the next but for that state's projection (measured 4e-15)."""
    model = rod_pendulum().build()
    sol = nc.simulate(model, 2.0, rtol=1e-10, method="radau", dense_output=True)
    steps, ys = sol.stats["steps"], np.column_stack([sol.p, sol.v])
    pieces = sol.sol.pieces
    assert steps > 256 and len(pieces) == steps
    np.testing.assert_array_equal([piece.t_old for piece in pieces], sol.t[:-1])
    np.testing.assert_array_equal([piece.t for piece in pieces], sol.t[1:])
    for k, piece in enumerate(pieces):
        np.testing.assert_array_equal(piece(sol.t[k]), ys[k])
        assert np.abs(piece(sol.t[k + 1]) - ys[k + 1]).max() <= 1e-12


def test_an_exception_in_a_called_back_force_keeps_the_steps():
    """Ctrl-C raised in a Python force at t > 0.3 s (called back from the core's advance
    loop) is still a KeyboardInterrupt, with the outputs before it."""
    def force(t, state):
        if t > 0.3:
            raise KeyboardInterrupt
        return np.zeros(3)
    mech = rod_pendulum()
    mech.add_force("rod", (LENGTH, 0.0, 0.0), force, local=True)
    with pytest.raises(KeyboardInterrupt) as err:
        nc.simulate(mech.build(), 1.0, method="radau", t_eval=np.linspace(0, 1, 11))
    sol = err.value.solution
    assert isinstance(err.value, nc.SimulationInterrupted) and not sol.success
    np.testing.assert_array_equal(sol.t[:-1], [0.0, 0.1, 0.2])
    assert sol.last_record_is_step and 0.2 < sol.t[-1] <= 0.3


def test_unknown_method_is_an_error():
    with pytest.raises(ValueError, match=r"method must be one of \('dopri5', 'radau'\)"):
        nc.simulate(rod_pendulum().build(), 1.0, method="bdf")


def test_step_budget_ends_the_run_with_the_partial_solution():
    """``max_steps`` counts Radau's attempts as DOPRI5's; what was integrated is kept."""
    with pytest.raises(nc.IntegrationError, match="maximum number of steps") as failure:
        nc.simulate(rod_pendulum().build(), 1.0, method="radau", max_steps=5)
    partial = failure.value.solution
    assert not partial.success and 0 < partial.t[-1] < 1.0


def test_command_line_method_radau(tmp_path):
    """`natcoord simulate MODEL --method radau` integrates with Radau and says so in the file."""
    from natcoord.cli import main
    out = tmp_path / "ball.npz"
    assert main(["simulate", "spring-pendulum", "--method", "radau", "--t-end", "0.05",
                 "--quiet", "--outputs", "5", "--out", str(out)]) == 0
    sol = nc.Solution.load(out)
    assert sol.success and sol.stats["method"] == "radau" and sol.t[-1] == 0.05
