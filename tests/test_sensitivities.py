"""Trajectory sensitivities (issue 10, item 2): the derivative of the discrete
DOPRI5-with-projection map agrees with central differences of whole
simulations, and stays in the tangent space of the constraints.

The comparison is meaningful only along the same steps, so every run takes a
fixed step (``first_step = max_step``, a loose ``rtol`` that accepts every
step, checked) and a tight projection tolerance ``proj_tol = 1e-13``. The
reference ``(y(θ + ε) − y(θ − ε)) / 2ε`` with ``ε = 1e-6`` relative has
truncation O(ε²) ≈ 1e-12 and projection noise ``proj_tol / ε`` ≈ 1e-7 at worst;
we ask for 1e-7 relative to the largest sensitivity (measured: 3e-10 to 3e-9).
"""
import numpy as np
import pytest

import natcoord as nc
from natcoord.analysis import sensitivity
from natcoord.model.parameters import parameter_value

EPS, RTOL = 1e-6, 1e-7
FIXED = dict(rtol=1e-3, first_step=0.01, max_step=0.01, proj_tol=1e-13)
T_END = 0.6
T_EVAL = np.r_[0.0, np.arange(1, 7) * 0.1 - 0.0045]   # inside steps: dense output


def sprung_four_bar():
    """The planar four-bar (3 redundant rows) with a spring–damper from ground to
    the coupler."""
    mech = nc.models.four_bar()
    mech.add_spring(nc.GROUND, "coupler1", (2.0, 0.0, 0.0), (0.5, 1.0, 0.0),
                    stiffness=50.0, damping=2.0)
    return mech.build()


def trajectory(model, initial_state):
    sol = nc.simulate(model, T_END, t_eval=T_EVAL, initial_state=initial_state, **FIXED)
    assert sol.stats["rejected"] == 0 and sol.stats["steps"] == round(T_END / 0.01)
    return np.hstack([sol.p, sol.v])


def central_difference(run, step):
    return (run(step) - run(-step)) / (2.0 * step)


def computed(sens, column):
    j = sens.columns.index(column)
    return np.hstack([sens.dp[:, :, j], sens.dv[:, :, j]])


def assert_close(mine, reference):
    scale = np.abs(reference).max()
    assert scale > 1e-3                                  # the parameter matters
    assert np.abs(mine - reference).max() <= RTOL * scale


FOUR_BAR_PARAMS = ["stiffness:0", "damping:0", "mass:coupler1", "rest_length:0", "gravity:y"]
SIX_BAR_PARAMS = ["p0", "v0", "mass:rod3"]


@pytest.fixture(scope="module")
def four_bar():
    model = sprung_four_bar()
    return model, nc.sensitivities(model, T_END, params=FOUR_BAR_PARAMS, t_eval=T_EVAL,
                                   **FIXED)


@pytest.mark.parametrize("name", FOUR_BAR_PARAMS)
def test_parameter_sensitivities_match_finite_differences(four_bar, name):
    model, sens = four_bar
    initial, x = nc.assemble(model).state, parameter_value(model, name)

    def run(step):
        return trajectory(model.with_parameters({name: x * (1.0 + step)}), initial) / x
    assert_close(computed(sens, name), central_difference(run, EPS))


@pytest.fixture(scope="module")
def six_bar():
    model = nc.models.six_bar().build()
    return model, nc.sensitivities(model, T_END, params=SIX_BAR_PARAMS, t_eval=T_EVAL,
                                   **FIXED)


@pytest.mark.parametrize("which", ["p0", "v0"])
def test_initial_state_sensitivities_match_finite_differences(six_bar, which):
    """Column i starts from the tangent direction ``z_i``: a simulation from the
    assembled ``(p0 + ε z_i, v0)`` (or ``(p0, v0 + ε z_i)``) differs by ε column i."""
    model, sens = six_bar
    initial = nc.assemble(model).state
    Z = sens.basis[which]
    assert np.allclose(Z.T @ (model.mass_matrix @ Z), np.eye(Z.shape[1]), atol=1e-12)
    for i, z in enumerate(Z.T):
        def run(step):
            p, v = (initial.p + step * z, initial.v) if which == "p0" else \
                (initial.p, initial.v + step * z)
            return trajectory(model, nc.assemble(model, p=p, v=v, proj_tol=1e-14).state)
        assert_close(computed(sens, f"{which}[{i}]"), central_difference(run, EPS))


def test_mass_sensitivity_of_the_six_bar(six_bar):
    model, sens = six_bar
    initial = nc.assemble(model).state

    def run(step):
        return trajectory(model.with_parameters({"mass:rod3": 1.0 + step}), initial)
    assert_close(computed(sens, "mass:rod3"), central_difference(run, EPS))


@pytest.mark.parametrize("case", ["four_bar", "six_bar"])
def test_sensitivities_stay_in_the_tangent_space(case, request):
    """``G dp = 0`` and ``G dv + ∂(G v + g_t)/∂p dp = 0`` (kept rows) to round-off."""
    model, sens = request.getfixturevalue(case)
    ws = nc.Workspace(model)
    for k, (t, p, v) in enumerate(zip(sens.solution.t, sens.solution.p, sens.solution.v)):
        at = nc.dynamics.linearization.linearization_point(model, (t, p, v), workspace=ws)
        kept = np.setdiff1d(np.arange(model.n_rows), ws.dropped)
        G = model.tables.csr(at.G).toarray()[kept]
        for dp, dv in zip(sens.dp[k].T, sens.dv[k].T):
            scale = max(np.abs(dp).max(), np.abs(dv).max(), 1.0)
            assert np.abs(G @ dp).max() <= 1e-12 * scale
            rate = G @ dv + at.velocity_residual_derivative(dp.reshape(-1, 3))[kept]
            assert np.abs(rate).max() <= 1e-11 * scale


def torqued_four_bar():
    """The sprung four-bar with a constant torque on its crank and a constant
    point force on its coupler (loads 0 and 1)."""
    mech = nc.models.four_bar()
    mech.add_spring(nc.GROUND, "coupler1", (2.0, 0.0, 0.0), (0.5, 1.0, 0.0),
                    stiffness=50.0, damping=2.0)
    mech.add_torque("crank0", (0.0, 0.0, 3.0))
    mech.add_force("coupler1", (0.5, 0.5, 0.0), (2.0, -1.0, 0.0))
    return mech.build()


def cartesian_four_bar():
    """The four-bar with a damped Cartesian spring along axes fixed in its coupler
    (a moving frame) from the crank, and one from ground (laws in the core)."""
    mech = nc.models.four_bar()
    mech.add_cartesian_spring("crank0", "coupler1", (0.0, 0.8, 0.0), (0.5, 1.0, 0.0),
                              stiffness=(40.0, 60.0, 20.0), damping=(1.5, 0.5, 1.0),
                              rest=(0.3, 0.1, 0.0), frame="coupler1")
    mech.add_cartesian_spring(nc.GROUND, "coupler1", (2.0, 0.0, 0.0), (0.5, 1.0, 0.0),
                              stiffness=30.0, damping=2.0)
    return mech.build()


@pytest.mark.parametrize("which", ["p0", "v0"])
def test_cartesian_spring_sensitivities_match_finite_differences(which):
    """The compiled sweep with the Cartesian springs' derivative of the core against
    central differences of whole simulations from perturbed initial states."""
    model = cartesian_four_bar()
    sens = nc.sensitivities(model, T_END, params=[which], t_eval=T_EVAL, **FIXED)
    assert sens.stats["compiled"]
    initial = nc.assemble(model).state
    for i, z in enumerate(sens.basis[which].T):
        def run(step):
            p, v = (initial.p + step * z, initial.v) if which == "p0" else \
                (initial.p, initial.v + step * z)
            return trajectory(model, nc.assemble(model, p=p, v=v, proj_tol=1e-14).state)
        assert_close(computed(sens, f"{which}[{i}]"), central_difference(run, EPS))


@pytest.mark.parametrize("name", ["load:0", "load:1"])
def test_load_sensitivities_match_finite_differences(name):
    """The scales of a constant torque and a constant point force (compiled sweep)
    against central differences of whole simulations with the loads scaled."""
    model = torqued_four_bar()
    sens = nc.sensitivities(model, T_END, params=[name], t_eval=T_EVAL, **FIXED)
    assert sens.stats["compiled"]
    initial = nc.assemble(model).state

    def run(step):
        return trajectory(model.with_parameters({name: 1.0 + step}), initial)
    assert_close(computed(sens, name), central_difference(run, EPS))


@pytest.mark.parametrize("t_eval", [T_EVAL, None], ids=["t_eval", "steps"])
@pytest.mark.parametrize("case", ["four_bar", "six_bar", "driven", "torque", "cartesian"])
def test_compiled_sweep_equals_the_python_sweep(case, t_eval, monkeypatch):
    """The compiled sweep (natcoord/compiled_sensitivity.py) computes what the
    Python sweep does, column by column, at dense outputs and at the steps
    (also with compiled drives: the weight table at every stage time; and with
    a constant torque, whose force moves with the crank's axes, and the scales
    of that torque and of a constant point force as parameters; and with Cartesian
    springs, whose derivative is the core's)."""
    model, params = {"four_bar": (sprung_four_bar(), FOUR_BAR_PARAMS),
                     "six_bar": (nc.models.six_bar().build(), SIX_BAR_PARAMS),
                     "driven": (driven_slider(), ["p0", "v0"]),
                     "torque": (torqued_four_bar(), ["p0", "v0", "mass:crank0", "load:0",
                                                     "load:1"]),
                     "cartesian": (cartesian_four_bar(), ["p0", "v0", "mass:coupler1"])}[case]
    compiled = nc.sensitivities(model, T_END, params=params, t_eval=t_eval, **FIXED)
    monkeypatch.setattr(sensitivity, "COMPILED", False)
    python = nc.sensitivities(model, T_END, params=params, t_eval=t_eval, **FIXED)
    assert compiled.stats["compiled"] and not python.stats["compiled"]
    assert compiled.columns == python.columns
    for mine, reference in ((compiled.dp, python.dp), (compiled.dv, python.dv)):
        scale = np.abs(reference).max(axis=(0, 1))
        assert np.all(np.abs(mine - reference).max(axis=(0, 1)) <= 1e-10 * scale)


@pytest.mark.parametrize("options", [{}, {"t_eval": np.linspace(0.0, 1.6, 401)},
                                     {"dense_output": True}],
                         ids=["steps", "t_eval", "dense_output"])
def test_the_compiled_sweep_carries_over_chunks_and_rounds(options, monkeypatch):
    """321 steps: more records than one compiled chunk holds (256) and many rounds
    of the kept factorizations (the sweep follows the stepper a few steps
    behind); the derivatives still equal the Python sweep's, and the solution
    (its continuous extension too) that of a plain simulation."""
    model, params = nc.models.six_bar().build(), ["p0", "mass:rod3"]
    fixed = dict(FIXED, first_step=0.005, max_step=0.005)
    compiled = nc.sensitivities(model, 1.6, params=params, **fixed, **options)
    monkeypatch.setattr(sensitivity, "COMPILED", False)
    python = nc.sensitivities(model, 1.6, params=params, **fixed, **options)
    assert compiled.stats["compiled"] and compiled.stats["steps"] == 321
    for mine, reference in ((compiled.dp, python.dp), (compiled.dv, python.dv)):
        assert np.abs(mine - reference).max() <= 1e-10 * np.abs(reference).max()
    plain = nc.simulate(model, 1.6, **fixed, **options)
    assert np.array_equal(compiled.solution.p, plain.p)
    if "dense_output" in options:
        t = np.linspace(0.0, 1.6, 77)
        assert np.array_equal(compiled.solution.sol(t), plain.sol(t))


@pytest.mark.parametrize("count", [2, 3, 5])
def test_a_column_does_not_depend_on_the_columns_beside_it(four_bar, count):
    """The compiled sweep takes its columns four at a time (``engine.LANES``): their
    constraint terms and their KKT solves in one pass each, side by side (a last two
    in two lanes, a last three in four with an idle one, a last one alone). Every
    column keeps its own operations in their order, so it equals, bit for bit, the
    sweep of its parameter alone."""
    model, _ = four_bar
    params = FOUR_BAR_PARAMS[:count]
    together = nc.sensitivities(model, T_END, params=params, t_eval=T_EVAL, **FIXED)
    assert together.stats["compiled"]
    for name in params:
        alone = nc.sensitivities(model, T_END, params=[name], t_eval=T_EVAL, **FIXED)
        assert np.array_equal(computed(together, name), computed(alone, name))


def test_a_failed_run_keeps_the_sensitivities_it_reached(monkeypatch):
    """``max_steps`` ends the run at t = 0.3: the exception's ``.sensitivities`` are
    those of the complete run at every record reached, the last accepted state
    (recorded in place of the next ``t_eval`` point) included, and agree there
    with the independent Python sweep."""
    model, params = nc.models.six_bar().build(), ["p0", "mass:rod3"]
    complete = nc.sensitivities(model, T_END, params=params, **FIXED)      # every step
    with pytest.raises(nc.IntegrationError, match="maximum number of steps") as failure:
        nc.sensitivities(model, T_END, params=params, t_eval=T_EVAL, max_steps=30, **FIXED)
    partial = failure.value.sensitivities
    assert partial.solution.t[-1] == pytest.approx(0.3) and not partial.solution.success
    reached = np.searchsorted(T_EVAL, 0.3)
    outputs = nc.sensitivities(model, T_END, params=params, t_eval=T_EVAL, **FIXED)
    assert np.array_equal(partial.dp[:reached], outputs.dp[:reached])
    assert np.array_equal(partial.dp[-1], complete.dp[30])
    assert np.array_equal(partial.dv[-1], complete.dv[30])
    monkeypatch.setattr(sensitivity, "COMPILED", False)
    python = nc.sensitivities(model, 0.3, params=params, **FIXED)
    for mine, reference in ((partial.dp[-1], python.dp[-1]), (partial.dv[-1], python.dv[-1])):
        assert np.abs(mine - reference).max() <= 1e-10 * np.abs(reference).max()


def test_the_python_sweep_keeps_what_the_compiled_one_does_not_cover():
    """Drive parameters, and solvers other than the block solver, take the Python sweep."""
    drive = nc.sensitivities(driven_slider(), 0.05, params=["drive:hinge:amplitude"])
    dense = nc.sensitivities(sprung_four_bar(), 0.05, params=["p0"], solver="dense")
    assert not drive.stats["compiled"] and not dense.stats["compiled"]


def test_point_sensitivity_is_the_coordinates_one(four_bar):
    model, sens = four_bar
    tip = sens.point("coupler1", (1.0, 1.0, 0.0))
    X = sens.dp.reshape(T_EVAL.size, -1, 3, len(sens.columns))
    s = model.body_slice("coupler1").start // 3               # rows o, e1, e2, e3
    assert np.allclose(tip, X[:, s] + X[:, s + 1], atol=1e-14)   # r = o + e1 here


def test_with_parameters_leaves_the_model_alone(four_bar):
    model, _ = four_bar
    heavier = model.with_parameters({"mass:coupler1": 3.0, "stiffness:0": 7.0})
    assert parameter_value(heavier, "mass:coupler1") == 3.0
    assert parameter_value(heavier, "stiffness:0") == 7.0
    assert parameter_value(model, "mass:coupler1") == 1.0
    assert parameter_value(model, "stiffness:0") == 50.0
    assert heavier.mass_matrix.sum() != model.mass_matrix.sum()


def test_bad_requests_name_the_argument():
    model = sprung_four_bar()
    with pytest.raises(KeyError, match="stiffness:3"):
        nc.sensitivities(model, 0.1, params=["stiffness:3"])
    with pytest.raises(ValueError, match="params"):
        nc.sensitivities(model, 0.1, params=[])
    with pytest.raises(ValueError, match="projection"):
        nc.sensitivities(model, 0.1, params=["p0"], projection="velocity")
    with pytest.raises(ValueError, match="mass"):
        model.with_parameters({"mass:coupler1": -1.0})


def driven_slider(amplitude=0.5):
    """``two_drives`` of test_drives with the hinge driven by a sinusoid and the
    rail free: the slider's motion (1 DOF) answers the hinge's."""
    from test_drives import two_drives
    return two_drives(nc.Drive.sinusoid(amplitude, 0.7, phase=0.4), None)


def test_drive_parameter_sensitivity_matches_finite_differences():
    """A drive parameter moves the constraint manifold itself, at the start and
    along the run (∂g/∂θ in the projection's derivative): the runs θ ± ε start
    from the base state assembled onto their own manifolds."""
    name = "drive:hinge:amplitude"
    model = driven_slider()
    sens = nc.sensitivities(model, T_END, params=[name], t_eval=T_EVAL, **FIXED)
    initial = nc.assemble(model).state

    def run(step):
        moved = driven_slider(0.5 + step)        # from the base state, assembled as simulate's
        start = nc.assemble(moved, p=initial.p, v=initial.v, proj_tol=1e-14).state
        return trajectory(moved, start)
    assert_close(computed(sens, name), central_difference(run, EPS))
