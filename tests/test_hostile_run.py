"""A hostile user at run time: arrays of the wrong size, another model's buffers,
out-of-range options and interruptions, on the public API (``nc.Workspace``,
``nc.Data``/``nc.forward``, ``nc.accelerations``, ``nc.linearize``,
``nc.joint_reaction``, ``nc.joint_space``, ``nc.simulate``, ``Solution``).

Each test failed before its fix: a compiled kernel read past a short array (no error,
or a segmentation fault next to an unmapped page), a partitioning threshold out of
range silently dropped every joint row, a Ctrl-C while the records' multipliers were
evaluated lost every step of the chunk, complex joint torques ran as real ones, and
NumPy's own reshape and index errors stood in for messages naming the argument.
"""
import numpy as np
import pytest

import natcoord as nc
from natcoord.dynamics.workspace import Workspace


@pytest.fixture(scope="module")
def six():
    return nc.models.six_bar().build()


@pytest.fixture(scope="module")
def four():
    return nc.models.four_bar().build()


# ------------------------------------------- 1. arrays the kernels would read past
@pytest.mark.parametrize("call", [
    lambda ws, p, v: ws.constraints(0.0, p, v),
    lambda ws, p, v: ws.velocity_residual(v),
    lambda ws, p, v: ws.forces(0.0, p, v),
    lambda ws, p, v: ws.accelerations(0.0, p, v),
])
def test_a_short_state_never_reaches_the_workspace_kernels(call):
    """chain(20) has 240 coordinates; 3 given. Before: ``constraint_kernel`` read 237
    numbers past the array and returned (NaN, garbage, or a segmentation fault when
    the array ended at an unmapped page)."""
    model = nc.models.chain(20).build()
    ws = nc.Workspace(model)
    with pytest.raises(ValueError, match=r"must have shape \(240,\).*20 bodies.*\(3,\)"):
        call(ws, np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match="real numbers"):
        call(ws, np.full(240, "x"), np.full(240, "x"))


def test_joint_reaction_checks_its_state(six):
    """``nc.joint_reaction`` checked nothing: a short state went to the kernels."""
    state = nc.assemble(six).state
    with pytest.raises(ValueError, match=r"state.p must have shape \(60,\)"):
        nc.joint_reaction(six, nc.State(0.0, state.p[:12], state.v[:12]), "joint1")
    with pytest.raises(TypeError, match="natcoord.State"):
        nc.joint_reaction(six, (0.0, state.p, state.v), "joint1")
    with pytest.raises(ValueError, match="multipliers must be 60 numbers"):
        nc.joint_reaction(six, state, "joint1", multipliers=np.zeros(3))


@pytest.mark.parametrize("call", [
    lambda model, state, ws: nc.accelerations(model, state, workspace=ws),
    lambda model, state, ws: nc.linearize(model, state, workspace=ws),
    lambda model, state, ws: nc.joint_reaction(model, state, "joint1", workspace=ws),
])
def test_a_workspace_of_another_model_is_refused(six, four, call):
    """A six-bar workspace (60 coordinates) given with a four-bar state (36): before, its
    kernels read 24 numbers past the state, then a core size error named "X, V and F"."""
    state = nc.assemble(four).state
    with pytest.raises(ValueError, match="workspace was made for model 'six-bar'.*'four-bar'"):
        call(four, state, nc.Workspace(six))
    with pytest.raises(TypeError, match="workspace must be a natcoord.Workspace"):
        call(four, state, "ws")


# ---------------------------------------------------------------- 2. nc.Data
@pytest.mark.parametrize("options, match", [
    (dict(drop_tol=2.0), "drop_tol must satisfy 0 < drop_tol < 1"),
    (dict(drop_tol=float("nan")), "drop_tol"),
    (dict(hold_tol=5.0), "hold_tol must satisfy"),
])
def test_data_refuses_partitioning_thresholds_out_of_range(four, options, match):
    """Before: ``Data(four_bar, drop_tol=2.0)`` dropped 20 joint rows and forward gave
    the accelerations of bodies falling freely (9.3 m/s² off), without a word."""
    with pytest.raises(ValueError, match=match):
        nc.Data(four, nc.assemble(four).state, **options)


def test_data_and_forward_name_what_they_were_given(six):
    state = nc.assemble(six).state
    with pytest.raises(TypeError, match="state must be a natcoord.State"):
        nc.Data(six, (0.0, state.p, state.v))              # before: AttributeError 't'
    with pytest.raises(TypeError, match="data must be a natcoord.Data.*NoneType"):
        nc.forward(six, None)                               # before: AttributeError 'model'


def test_forward_names_the_force_that_returned_nan():
    """As ``nc.accelerations`` and ``simulate`` do; before: "the state or a force is not
    finite", whichever of the model's forces it was."""
    mech = nc.models.four_bar()
    mech.add_force("crank0", point=(0.0, 0.0, 0.0), force=lambda t, state: (0.0, np.nan, 0.0))
    model = mech.build()
    data = nc.Data(model, nc.assemble(model).state)
    with pytest.raises(np.linalg.LinAlgError, match=r"force on 'crank0'.*must be finite"):
        nc.forward(model, data)


# ------------------------------------------------------------ 3. simulate options
@pytest.mark.parametrize("speed, overflows", [(1e100, False), (1e200, True)])
def test_velocities_whose_square_overflows_are_refused_where_they_enter(six, speed, overflows):
    """γ is quadratic in v (eq. 10): at |v| = 1e200 it is inf in float64 (≈ 1.8e308 is
    the largest), at 1e100 still finite. Before: ``nc.forward`` and ``nc.accelerations``
    returned NaN accelerations without a word; now a state beyond 1e150 is refused where
    it enters (``Data``, ``nc.accelerations``, ``simulate``)."""
    state = nc.assemble(six).state
    fast = nc.State(state.t, state.p, np.full_like(state.v, speed))
    if not overflows:
        data = nc.Data(six, fast)
        nc.forward(six, data)
        a, _, _ = nc.accelerations(six, fast)
        assert np.isfinite(data.a).all() and np.isfinite(a).all()
        return
    for call in (lambda: nc.Data(six, fast), lambda: nc.accelerations(six, fast),
                 lambda: nc.accelerations(six, fast, solver="dense"),
                 lambda: nc.simulate(six, 0.1, initial_state=fast)):
        with pytest.raises(ValueError, match=r"v holds 1e\+200: the constraints are quadratic"):
            call()


@pytest.mark.parametrize("solver", [["block"], 3, "blok"])
def test_a_solver_that_is_not_a_backend_name_is_refused_by_name(four, solver):
    """Before: ``solver=["block"]`` raised "unhashable type: 'list'"."""
    with pytest.raises(ValueError, match="unknown solver.*choose one of"):
        nc.accelerations(four, nc.assemble(four).state, solver=solver)


def test_a_force_returning_a_complex_array_is_refused():
    """NumPy casts a complex array to float with a ComplexWarning, dropping the imaginary
    part: before, such a force ran as a real one and the run succeeded."""
    mech = nc.models.four_bar()
    mech.add_force("crank0", point=(0.0, 0.0, 0.0),
                   force=lambda t, state: np.array([0.0, 1j, 0.0]))
    model = mech.build()
    with pytest.raises(ValueError, match=r"force on 'crank0'.*must return 3 numbers"):
        nc.accelerations(model, nc.assemble(model).state)
    with pytest.raises(nc.IntegrationError, match=r"force on 'crank0'"):
        nc.simulate(model, 0.1)


def test_solution_points_of_ground_and_of_the_wrong_size(four):
    """A point fixed in ground stays where it is (before: KeyError "unknown body GROUND");
    a point of two numbers is named (before: NumPy's broadcast error); a time beyond the
    float range is named (before: OverflowError)."""
    import pickle
    sol = nc.simulate(four, 0.1)
    np.testing.assert_array_equal(sol.point(nc.GROUND, (1.0, 2.0, 3.0)),
                                  np.tile([1.0, 2.0, 3.0], (sol.t.size, 1)))
    assert pickle.loads(pickle.dumps(nc.GROUND)) is nc.GROUND
    with pytest.raises(ValueError, match=r"point must be 3 numbers \(x, y, z\), got \(0, 0\)"):
        sol.point("crank0", (0, 0))
    state = nc.assemble(four).state
    with pytest.raises(ValueError, match="state.t must be finite"):
        nc.accelerations(four, nc.State(10**400, state.p, state.v))


def test_an_interval_below_the_step_size_floor_is_refused_by_name(six):
    """The steppers' smallest step at t0 = 0 is 10 ε ≈ 2.2e-15 s. Before: an
    IntegrationError "step size underflow at t = 0" that did not say why."""
    with pytest.raises(ValueError, match=r"t_end - t0 = 1e-15 s is shorter than the smallest"):
        nc.simulate(six, 1e-15)
    state = nc.assemble(six).state
    late = nc.State(1e15, state.p, state.v)                  # floor 2.2 s at t0 = 1e15 s
    with pytest.raises(ValueError, match="measure time from nearer 0"):
        nc.simulate(six, 1e15 + 1.0, initial_state=late)
    assert nc.simulate(six, 1e-12).t[-1] == 1e-12             # above the floor: integrated


def test_max_steps_beyond_int64_means_no_limit(six):
    """Before: an IntegrationError "OverflowError after t = 0: int too big to convert"."""
    sol = nc.simulate(six, 0.1, max_steps=10**30)
    assert sol.success and sol.t[-1] == 0.1


def test_complex_joint_torques_are_refused(six):
    """Before: the imaginary part was dropped (a ComplexWarning) and the run reported
    success with the passive motion."""
    with pytest.raises(ValueError, match=r"u\(t, q, qd\).*returned.*5 numbers"):
        nc.simulate(six, 0.1, u=lambda t, q, qd: np.full(5, 3j))


# --------------------------------------------------- 4. nothing integrated is lost
def test_a_force_failing_at_the_start_keeps_the_initial_state_with_multipliers():
    """With ``multipliers=True`` the initial record needs the force; before, its failure
    left a Solution with no record at all (and every accessor then failed in NumPy's
    reshape)."""
    mech = nc.models.six_bar()
    mech.add_force("rod1", point=(0.0, 0.0, 0.0), force=lambda t, state: 1 / 0)
    model = mech.build()
    with pytest.raises(nc.IntegrationError) as err:
        nc.simulate(model, 1.0, multipliers=True)
    sol = err.value.solution
    np.testing.assert_array_equal(sol.t, [0.0])
    np.testing.assert_array_equal(sol.p[0], nc.assemble(model).state.p)
    assert np.isnan(sol.lam).all() and "multipliers are NaN from t = 0" in sol.message
    assert sol.point("rod1", (1.0, 0.0, 0.0)).shape == (1, 3)


def test_ctrl_c_while_the_multipliers_are_evaluated_keeps_every_step(six, monkeypatch):
    """Ctrl-C (raised here in the multipliers' solve at the records past 0.3 s) once the
    core has integrated a chunk of steps. Before: the chunk — here the whole run — was
    lost and the Solution held the initial state alone."""
    reference = nc.simulate(six, 1.0)
    solve = Workspace.accelerations

    def interrupted(ws, t, p, v, baumgarte=None):
        if t > 0.3:
            raise KeyboardInterrupt
        return solve(ws, t, p, v, baumgarte)
    monkeypatch.setattr(Workspace, "accelerations", interrupted)
    with pytest.raises(nc.SimulationInterrupted) as err:
        nc.simulate(six, 1.0, multipliers=True)
    sol = err.value.solution
    np.testing.assert_array_equal(sol.t, reference.t)        # the same steps, all kept
    np.testing.assert_array_equal(sol.p, reference.p)
    late = sol.t > 0.3
    assert np.isnan(sol.lam[late]).all() and np.isfinite(sol.lam[~late]).all()
    assert "multipliers are NaN from t = " in sol.message and sol.success is False


def test_a_solution_without_records_answers_with_empty_arrays(six):
    """Before: ``reshape(0, -1, 3)`` raised "cannot reshape array of size 0"."""
    sol = nc.Solution(six, [], {}, [], success=False, message="failed at once")
    assert sol.point("rod1", (1.0, 0.0, 0.0)).shape == (0, 3)
    assert sol.rotation("rod1").shape == (0, 3, 3)
    assert sol.q.shape == (0, 5)


# ------------------------------------------------------------------ 5. joint space
def test_joint_space_names_arrays_of_the_wrong_size(six):
    """Before: "cannot reshape array of size 10 into shape (3)" and an IndexError."""
    js = nc.joint_space(six)
    with pytest.raises(ValueError, match=r"p must hold the 12 n = 60 coordinates.*\(10,\)"):
        js.positions(np.zeros(10))
    with pytest.raises(ValueError, match=r"q must have 5 columns.*\(1,\)"):
        js.forward([0.1])
    with pytest.raises(TypeError, match="q must be real numbers"):
        js.forward(["a"] * 5)
