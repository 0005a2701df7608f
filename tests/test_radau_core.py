"""Radau IIA's step in the core (natcoord/core/src/radau.c), against independent computations.

* The Jacobian ``∂a/∂p, ∂a/∂v`` the core computes for Newton (one directional
  solve per column on the kept factorization) equals central differences of
  ``nc.accelerations`` on closed loops, a stiff spring–damper and a driven loop with
  every kind of force law in the core; its columns come body by body from the
  constraint terms and forces that read the body, so that loop has a body that no
  force reads (its columns from the constraint terms alone, a drive's among them).
* On the elastic hexapod (N = 156; its six spherical joints replaced by spring-dampers
  of 10⁷ N/m and 10⁴ N s/m) Newton's matrices keep J's stiff part: an orthonormal
  basis of the 18 directions the leg springs act in (3 each), outside of which no
  column of K or γ D is larger than 3% of γ²; Radau so reaches DOPRI5's
  platform position (at rtol 10⁻¹⁰) to the tolerance.
* The method converges with order 5 (Radau IIA, 2s − 1 for s = 3 stages) at the
  step ends of a harmonic oscillator with a closed-form solution.
* On the elastic pendulum without damping (a stiff conservative system) the
  mechanical energy stays constant to the tolerance.
* What the core does not compile (a reference solver; a force given as a Python
  callable) is called back from the same compiled step through DOPRI5's hooks: the
  same motion as the core's own evaluations, also with the spring law written
  out in Python and solved by dense linear algebra; an exception raised in a
  callback ends the run with it as the cause.
"""
import numpy as np
import pytest

import natcoord as nc
from natcoord.integrate.radau import H_LU, MU, RANK_LU, Radau
from natcoord.model.body import rod_inertia


def finite_difference_jacobian(model, t, y, step=1e-5):
    """``∂a/∂(p, v)`` (N, 2 N) by central differences of ``nc.accelerations``."""
    N = model.n_coords
    ws = nc.Workspace(model)
    out = np.empty((N, 2 * N))
    for j in range(2 * N):
        e = np.zeros(2 * N)
        e[j] = step
        plus = nc.accelerations(model, nc.State(t, *np.split(y + e, 2)), workspace=ws)[0]
        minus = nc.accelerations(model, nc.State(t, *np.split(y - e, 2)), workspace=ws)[0]
        out[:, j] = (plus - minus) / (2 * step)
    return out


def core_and_difference_jacobians(model):
    """At a state with velocities (three Radau steps from the model's initial state):
    ``J`` (2 N, 2 N) as the compiled step computes it, and ``∂a/∂(p, v)`` (N, 2 N) by
    central differences of ``nc.accelerations``."""
    stepper = Radau(model, t_bound=1.0)
    assert stepper.compiled
    for _ in range(3):
        stepper.step()
    t, y = stepper.t, stepper.y.copy()
    return stepper.jacobian(t, y), finite_difference_jacobian(model, t, y)


def spring_and_damper_pendulum():
    return nc.models.spring_pendulum(stiffness=1e4, damping=30.0)


def driven_sprung_five_bar():
    """A planar five-bar loop (crank, two couplers, rocker; hinges along z: 2 DOF) whose
    crank is driven (a sinusoidal angle: linear constraint terms with time-dependent
    weights; 1 DOF left), with a spring–damper from the ground to the first coupler, a
    torque on it, a joint spring–damper on the couplers' hinge and a Cartesian
    spring–damper from the ground to the rocker: no force reads the crank."""
    z = (0.0, 0.0, 1.0)
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0), name="driven sprung five-bar")
    for name, start, e1 in [("crank", (0, 0, 0), (0, 1, 0)), ("coupler", (0, 1, 0), (1, 0, 0)),
                            ("coupler2", (1, 1, 0), (1, 0, 0)), ("rocker", (2, 0, 0), (0, 1, 0))]:
        mech.add_body(name, mass=1.0, com=np.add(start, np.multiply(0.5, e1)),
                      inertia=rod_inertia(1.0, 1.0, 0.05, axis=0), origin=start,
                      axes=np.column_stack([e1, np.cross(z, e1), z]))
    mech.add_revolute(nc.GROUND, "crank", point=(0, 0, 0), axis=z,
                      drive=nc.Drive.sinusoid(0.3, 1.0 / np.pi))
    mech.add_revolute("crank", "coupler", point=(0, 1, 0), axis=z)
    mech.add_revolute("coupler", "coupler2", point=(1, 1, 0), axis=z, name="knee")
    mech.add_revolute("coupler2", "rocker", point=(2, 1, 0), axis=z)
    mech.add_revolute(nc.GROUND, "rocker", point=(2, 0, 0), axis=z)
    mech.add_spring(nc.GROUND, "coupler", point_a=(0.5, 2.0, 0.3), point_b=(0.5, 1.0, 0.0),
                    stiffness=30.0, damping=5.0)
    mech.add_torque("coupler", (0.0, 0.0, 2.0))
    mech.add_joint_spring("knee", stiffness=20.0, damping=2.0)
    mech.add_cartesian_spring(nc.GROUND, "rocker", point_a=(2, 1, 0), point_b=(2, 1, 0),
                              stiffness=(20.0, 30.0, 40.0), damping=(1.0, 2.0, 3.0))
    return mech


@pytest.mark.parametrize("build", [
    lambda: nc.models.six_bar(),                       # closed loop, one redundant row
    spring_and_damper_pendulum,                        # stiff spring with damping: ∂a/∂v
    lambda: nc.models.four_bar(),
    driven_sprung_five_bar,                            # all force laws, drive, loop
], ids=["six-bar", "spring-damper", "four-bar", "driven-sprung-five-bar"])
def test_core_jacobian_equals_central_differences(build):
    model = build().build()
    J, reference = core_and_difference_jacobians(model)
    N = model.n_coords
    np.testing.assert_array_equal(J[:N, N:], np.eye(N))
    np.testing.assert_array_equal(J[:N, :N], 0.0)
    scale = np.abs(reference).max()
    np.testing.assert_allclose(J[N:], reference, rtol=0, atol=1e-6 * scale)  # measured ≤ 3.4e-8
    if build is driven_sprung_five_bar:              # the forceless crank's columns: not 0
        assert np.abs(J[N:, :12]).max() > 1.0 and np.abs(J[N:, N:N + 12]).max() > 1.0


@pytest.mark.parametrize("build", [
    spring_and_damper_pendulum,                        # stiff spring with damping: ∂a/∂v
    lambda: nc.models.chain(3),                        # a tree: its rows couple the bodies
], ids=["spring-damper", "chain"])
def test_jacobian_called_back_with_a_reference_solver_equals_the_core_one(build):
    """With ``solver="dense"`` the step's J comes from ``linearize`` (Python's derivative,
    dense KKT solves) through the core's one Jacobian callback; at the same state it
    equals the core's (sensitivity.c's derivative, block solves); measured 0 and 4e-15
    relative. (Models without
    redundant rows: off the constraint manifold J is that of the kept rows, and the
    dense backend may drop another row of a closed loop than the block solver.)"""
    model = build().build()
    core = Radau(model, t_bound=1.0)
    for _ in range(3):
        core.step()
    t, y = core.t, core.y.copy()
    called = Radau(model, t_bound=1.0, solver="dense")
    assert core.compiled and not called.compiled
    J_core, J_called = core.jacobian(t, y), called.jacobian(t, y)
    assert called.n_jacobians == 1
    scale = np.abs(J_core).max()
    np.testing.assert_allclose(J_called, J_core, rtol=0, atol=1e-9 * scale)


OMEGA, R0, V0 = 2.0, np.array([0.3, 0.0, 0.0]), np.array([0.0, 0.5, 0.2])


def oscillator():
    """A ball on a spring of zero rest length to the origin, no gravity: its centre
    moves as r(t) = r0 cos ωt + v0/ω sin ωt, ω = √(k/m) (the ball does not rotate)."""
    mech = nc.Mechanism(gravity=(0.0, 0.0, 0.0), name="oscillator")
    mech.add_body("ball", mass=1.0, com=R0, inertia=nc.box_inertia(1.0, (0.1, 0.1, 0.1)),
                  origin=R0)
    mech.add_spring(nc.GROUND, "ball", point_a=(0.0, 0.0, 0.0), point_b=R0,
                    stiffness=OMEGA**2, rest_length=0.0)
    model = mech.build()
    state = nc.assemble(model).state
    v = state.v.copy()
    v[:3] = V0
    return model, nc.State(0.0, state.p, v)


def elastic_hexapod():
    return nc.models.hexapod("driven", elastic_joints=(1e7, 1e4)).build()


def test_newton_matrices_keep_the_stiff_part_of_the_elastic_hexapod():
    """After 0.5 s (h ≈ 0.02 s) the Newton matrices use J's part in r = 18 orthonormal
    directions (three per leg spring): what K and γ D (γ = μ/h) have outside them, column
    by column, is at most 3% of γ², and with one direction fewer it would not be
    (measured 3.6e-3 and 3.8)."""
    model = elastic_hexapod()
    stepper = Radau(model, t_bound=0.5)
    while stepper.status == "running":
        stepper.step()
    R = stepper._R                       # the last Jacobian (K, D) and the basis made of it
    r = int(R.ctrl[RANK_LU])
    gamma = MU / R.ctrl[H_LU]

    def left_out(U):
        """(largest column of K outside span(U) + γ × that of D) / γ²"""
        rest = [np.linalg.norm(A - U.T @ (U @ A), axis=0).max() for A in (R.K, R.D)]
        return (rest[0] + gamma * rest[1]) / gamma**2

    U = R.basis[:r]
    assert r == 18 < model.n_coords
    np.testing.assert_allclose(U @ U.T, np.eye(r), rtol=0, atol=1e-12)
    assert left_out(U) <= 0.03 < left_out(U[:-1])


def test_elastic_hexapod_reaches_the_dopri5_platform_position():
    """Radau at rtol 10⁻⁶ (Newton with J's stiff part) against DOPRI5 at 10⁻¹⁰ over
    0.1 s: the platform centre within 10⁻⁶ m (measured 6.5e-11 m)."""
    model = elastic_hexapod()
    body, point = model.scenario["output_point"]
    ends = [nc.simulate(model, 0.1, rtol=rtol, t_eval=[0.1], method=method)
            for rtol, method in ((1e-10, "dopri5"), (1e-6, "radau"))]
    assert all(sol.success for sol in ends)
    reference, radau = (sol.point(body, point)[-1] for sol in ends)
    assert np.linalg.norm(radau - reference) <= 1e-6


def test_converges_with_order_five_on_a_harmonic_oscillator():
    """Global error at t = 1 with fixed steps h = 1/8, 1/16, 1/32 (max_step = first_step,
    a tolerance no step fails): it falls by ≈ 2⁵ per halving (measured 6.0e-8, 1.9e-9,
    6.0e-11: ratios 31.6, 31.8)."""
    model, state = oscillator()
    T = 1.0
    exact = R0 * np.cos(OMEGA * T) + V0 / OMEGA * np.sin(OMEGA * T)
    errors = []
    for k in (8, 16, 32):
        h = T / k
        stepper = Radau(model, t_bound=T, rtol=1e-3, state=state, first_step=h, max_step=h)
        while stepper.status == "running":
            stepper.step()
        assert stepper.status == "finished" and stepper.n_steps == k
        assert stepper.n_rejected == 0
        errors.append(np.abs(stepper.y[:3] - exact).max())
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 0.7 * 32) & (ratios < 1.3 * 32)), ratios


def test_energy_of_a_stiff_conservative_system():
    """The elastic pendulum without damping (k = 10⁶ N/m, ω = 1000 s⁻¹) over 2 s at
    rtol = 10⁻⁶: kinetic + gravity + spring energy (|E| ≈ 4.9 J) stays within 10⁻⁵ J
    of its initial value at every step (Radau IIA is not symplectic, but accurate;
    measured 5.4e-7 J in 157 steps)."""
    model = nc.models.spring_pendulum(stiffness=1e6, damping=0.0).build()
    sol = nc.simulate(model, 2.0, rtol=1e-6, method="radau")
    assert sol.success and sol.stats["compiled"]
    assert sol.stats["steps"] < 300
    np.testing.assert_allclose(sol.energy, sol.energy[0], rtol=0, atol=1e-5)


def test_reference_solver_is_called_back_with_the_same_motion():
    """With ``solver="dense"`` the core's step calls the dense backend's factor and solve
    back (and ``linearize`` for J): the same motion as the core's own evaluations."""
    model = nc.models.spring_pendulum(stiffness=1e5).build()
    t_eval = np.linspace(0.0, 0.5, 6)
    core = nc.simulate(model, 0.5, rtol=1e-8, t_eval=t_eval, method="radau")
    dense = nc.simulate(model, 0.5, rtol=1e-8, t_eval=t_eval, method="radau", solver="dense")
    assert core.stats["compiled"] and not dense.stats["compiled"]
    np.testing.assert_allclose(dense.p, core.p, atol=1e-8)
    np.testing.assert_allclose(dense.v, core.v, atol=1e-6)


def pendulum_with_its_spring_in_python(stiffness, damping):
    """``models.spring_pendulum`` with the spring–damper written out as a Python force at
    the ball's centre: ``−(k (l − l0) + c l̇) n``, ``l = |x|``, ``n = x / l`` (the spring's
    ground end at the origin, rest length 1), and a counter of its calls."""
    from natcoord.models.spring_pendulum import polar_initial, polar_to_position
    r0, phi0 = polar_initial(stiffness)[:2]
    centre = polar_to_position(r0, phi0)
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0), name="spring-in-python")
    mech.add_body("ball", mass=1.0, com=centre, inertia=nc.box_inertia(1.0, (0.1, 0.1, 0.1)),
                  origin=centre)
    calls = []

    def spring(t, state):
        calls.append(t)
        x, x_dot = state.p[:3], state.v[:3]          # the ball's centre is its frame origin
        length = np.linalg.norm(x)
        n = x / length
        return -(stiffness * (length - 1.0) + damping * n @ x_dot) * n

    mech.add_force("ball", centre, spring)
    return mech.build(), calls


def test_python_force_and_dense_solver_give_the_core_motion():
    """The stiff elastic pendulum (k = 10⁵ N/m, c = 20 N s/m), released with 5 cm/s along
    the spring so that the stiff mode rings, with its spring law as a Python callable and
    the ``dense`` KKT backend — forces and linear algebra called back from the core's
    step, the Jacobian from ``linearize`` (central differences of the callable) — moves
    as the built-in spring–damper with the core's block solver: spring law and linear
    algebra written independently of the core's. Measured 4e-13 m and 6e-10 m/s apart
    over 0.1 s (239 steps); a damping 1 % off is 1e-7 m and 1.5e-4 m/s apart, a stiffness
    0.1 % off 7e-7 m."""
    k, c = 1e5, 20.0

    def released(model):
        state = nc.assemble(model).state
        v, x = state.v.copy(), state.p[:3]
        v[:3] = 0.05 * x / np.linalg.norm(x)
        return nc.State(0.0, state.p, v)

    core_model = nc.models.spring_pendulum(stiffness=k, damping=c).build()
    python_model, calls = pendulum_with_its_spring_in_python(k, c)
    t_eval = np.linspace(0.0, 0.1, 6)
    core = nc.simulate(core_model, 0.1, rtol=1e-8, t_eval=t_eval, method="radau",
                       initial_state=released(core_model))
    called = nc.simulate(python_model, 0.1, rtol=1e-8, t_eval=t_eval, method="radau",
                         solver="dense", initial_state=released(python_model))
    assert core.stats["compiled"] and not called.stats["compiled"]
    assert called.success and len(calls) > called.stats["steps"]
    assert called.stats["jacobians"] > 0
    np.testing.assert_allclose(called.p, core.p, rtol=0, atol=1e-9)
    np.testing.assert_allclose(called.v, core.v, rtol=0, atol=1e-7)


def test_exception_in_a_python_force_is_the_cause_of_the_failure():
    class Broken(RuntimeError):
        pass

    def force(t, state):
        if t > 0.05:
            raise Broken("force law failed")
        return np.array([0.0, 1.0, 0.0])

    mech = nc.models.spring_pendulum(stiffness=1e4)
    mech.add_force("ball", (0.0, 0.0, 0.0), force)
    with pytest.raises(nc.IntegrationError) as failure:
        nc.simulate(mech.build(), 0.2, method="radau")
    assert isinstance(failure.value.__cause__, Broken)
    partial = failure.value.solution
    assert not partial.success and 0 < partial.t[-1] <= 0.05 + 1e-12


def test_observe_is_energy_and_residuals_on_both_paths():
    """``observe`` (what a driver records): the elastic pendulum at release, at rest
    with the spring at its static stretch s = m g cos φ0 / k, has E = ½ k s² + m g y
    (y = −r cos φ0 the ball's height) and satisfies its rigid-body constraints."""
    k, m, g, phi0 = 1e4, 1.0, 9.81, np.radians(60.0)
    model = nc.models.spring_pendulum(stiffness=k).build()
    stretch = m * g * np.cos(phi0) / k
    energy = 0.5 * k * stretch**2 - m * g * (1.0 + stretch) * np.cos(phi0)
    for solver in ("block", "dense"):
        stepper = Radau(model, t_bound=1.0, solver=solver)
        assert stepper.compiled == (solver == "block")
        observed = stepper.observe(0.0, stepper.y)
        np.testing.assert_allclose(observed[0], energy, rtol=1e-12)
        assert max(observed[1:]) < 1e-12


def test_newton_matrices_that_cannot_fit_are_refused_by_name(monkeypatch):
    """The dense N × N Newton matrices are checked against the memory before a run (here
    a machine of 100 kB: chain(4), N = 48, needs 221 kB of them)."""
    from natcoord.util import resources
    model = nc.models.chain(4).build()
    monkeypatch.setattr(resources, "physical_memory", lambda: 100_000)
    with pytest.raises(ValueError, match=r"Radau's dense Newton matrices .* \(48 coordinates\)"
                                         r".*method='dopri5'"):
        Radau(model, t_bound=1.0)
