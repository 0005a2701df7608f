"""The compiled DOPRI5 stepper (natcoord.integrate.stepper) against the Python path of simulate.

Same step sequence and states to 1e-12 on the six-bar, both hexapod scenarios
and a chain with loops; t_eval outputs; a callable force keeps the Python path.
"""
import numpy as np
import pytest

import natcoord as nc
from natcoord.integrate import simulate as integrate
from natcoord.integrate.compiled import compilable
from natcoord.models import REGISTRY
from natcoord.integrate.stepper import DOPRI5, StepRecord

CASES = {"six-bar": ("six-bar", {}, 0.5), "hexapod-passive": ("hexapod", {"scenario": "passive"}, 0.3),
         "hexapod-driven": ("hexapod", {"scenario": "driven"}, 0.3),
         "chain-loops": ("chain", {"n": 8, "loops": 2}, 0.3)}


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    name, params, t_end = CASES[request.param]
    return REGISTRY[name](**params).build(), t_end


def _python(model, t_end, monkeypatch, **kw):
    with monkeypatch.context() as m:
        m.setattr(integrate, "COMPILED", False)
        return nc.simulate(model, t_end, solver="block", **kw)


def _states(sol):
    return np.hstack([sol.p.reshape(sol.t.size, -1), sol.v.reshape(sol.t.size, -1)])


#: the integrator's work and the outputs', counted apart (scipy's nfev pattern)
COUNTERS = ("steps", "rejected", "rhs", "factorizations", "projection_iterations",
            "active_set_changes", "output_rhs", "output_factorizations",
            "output_projection_iterations")


def test_models_are_compilable(case):
    assert compilable(case[0])


@pytest.mark.parametrize("rtol", [1e-6, 1e-9])
def test_same_steps_as_the_python_path(case, rtol, monkeypatch):
    model, t_end = case
    py = _python(model, t_end, monkeypatch, rtol=rtol)
    co = nc.simulate(model, t_end, solver="block", rtol=rtol)
    assert co.stats["compiled"] and not py.stats["compiled"]
    assert co.success and py.success
    assert co.t.size == py.t.size
    assert np.abs(co.t - py.t).max() <= 1e-12
    assert np.abs(_states(co) - _states(py)).max() <= 1e-12
    for key in COUNTERS:
        assert co.stats[key] == py.stats[key], key
    assert np.abs(co.energy - py.energy).max() <= 1e-10


def test_same_outputs_as_the_python_path(case, monkeypatch):
    model, t_end = case
    t_eval = np.linspace(0.0, t_end, 31)
    py = _python(model, t_end, monkeypatch, rtol=1e-7, t_eval=t_eval)
    co = nc.simulate(model, t_end, solver="block", rtol=1e-7, t_eval=t_eval)
    assert np.array_equal(co.t, py.t)
    assert np.abs(_states(co) - _states(py)).max() <= 1e-12
    for key in COUNTERS:
        assert co.stats[key] == py.stats[key], key
    assert co.stats["output_projection_iterations"] > 0


def test_outputs_do_not_count_as_the_integrator_s_work(monkeypatch):
    model = REGISTRY["six-bar"]().build()
    for compiled in (True, False):
        monkeypatch.setattr(integrate, "COMPILED", compiled)
        steps = nc.simulate(model, 0.5, solver="block", rtol=1e-7)
        outputs = nc.simulate(model, 0.5, solver="block", rtol=1e-7, multipliers=True,
                              t_eval=np.linspace(0.0, 0.5, 31))
        assert outputs.stats["compiled"] == compiled
        for key in ("steps", "rhs", "factorizations", "projection_iterations"):
            assert outputs.stats[key] == steps.stats[key], key
        assert steps.stats["output_rhs"] == steps.stats["output_projection_iterations"] == 0
        assert outputs.stats["output_rhs"] == 31
        assert outputs.stats["output_factorizations"] >= 31


def test_an_output_is_projected_in_one_newton_sweep(monkeypatch):
    """Factored at its own point, an output converges in one position and one
    velocity iteration (docs/method.md#17-integration) and meets proj_tol."""
    model = REGISTRY["six-bar"]().build()
    t_eval = np.linspace(0.0, 2.0, 101)[1:]          # t0 is recorded, not projected
    for compiled in (True, False):
        monkeypatch.setattr(integrate, "COMPILED", compiled)
        sol = nc.simulate(model, 2.0, solver="block", rtol=1e-6, t_eval=t_eval)
        assert sol.success and sol.stats["compiled"] == compiled
        assert sol.stats["output_factorizations"] <= t_eval.size
        assert sol.stats["output_projection_iterations"] <= 2 * t_eval.size
        assert sol.constraint_residual.max() <= 1e-10


def test_stepper_object(case, monkeypatch):
    model, t_end = case
    py = _python(model, t_end, monkeypatch, rtol=1e-8)
    st = DOPRI5(model, t_end, rtol=1e-8)
    ts, ys = [st.t], [st.y.copy()]
    while st.status == "running":
        record = st.step()
        assert isinstance(record, StepRecord) and record.status == "accepted"
        assert record.t == pytest.approx(record.t_old + record.h, abs=1e-15)
        ts.append(st.t)
        ys.append(st.y.copy())
        dense = st.dense_output()
        assert np.abs(dense(record.t_old) - ys[-2]).max() <= 1e-12
    assert st.status == "finished" and st.t == t_end
    assert np.array_equal(np.array(ts), py.t)
    assert np.abs(np.array(ys) - _states(py)).max() <= 1e-12
    assert st.n_steps == py.stats["steps"]


def test_callable_force_keeps_the_python_path():
    mech = REGISTRY["six-bar"]()
    ref = nc.simulate(mech.build(), 0.1, solver="block")
    mech.add_torque(mech.bodies[0].name if isinstance(mech.bodies, list) else
                    next(iter(mech.bodies)), lambda t, state: np.zeros(3))
    model = mech.build()
    assert not compilable(model)
    with pytest.raises(ValueError, match="compiled form"):
        DOPRI5(model, 0.1)
    sol = nc.simulate(model, 0.1, solver="block")
    assert sol.success and not sol.stats["compiled"] and ref.stats["compiled"]
    assert np.array_equal(sol.t, ref.t)
    assert np.abs(_states(sol) - _states(ref)).max() <= 1e-12


def test_max_steps_and_underflow_match(monkeypatch):
    model = REGISTRY["six-bar"]().build()
    for kw in ({"max_steps": 5}, {"max_step": 1e-17}):
        errors = []
        for compiled in (False, True):
            monkeypatch.setattr(integrate, "COMPILED", compiled)
            with pytest.raises(integrate.IntegrationError) as info:
                nc.simulate(model, 1.0, solver="block", **kw)
            errors.append(info.value)
        py, co = (e.solution for e in errors)
        assert str(errors[0]).split(" (partial")[0] == str(errors[1]).split(" (partial")[0]
        assert np.array_equal(py.t, co.t) and np.abs(_states(py) - _states(co)).max() <= 1e-12


def test_multipliers_at_outputs(monkeypatch):
    """With multipliers the Python path's records refactor its workspace, and the next
    output's simplified Newton starts from that factorization; the compiled path's records
    leave the stepper alone. Outputs agree to the projection tolerance, steps exactly."""
    model = REGISTRY["six-bar"]().build()
    t_eval = np.linspace(0.0, 0.5, 31)
    py = _python(model, 0.5, monkeypatch, rtol=1e-7, t_eval=t_eval, multipliers=True)
    co = nc.simulate(model, 0.5, solver="block", rtol=1e-7, t_eval=t_eval, multipliers=True)
    assert co.stats["steps"] == py.stats["steps"] and np.array_equal(co.t, py.t)
    assert np.abs(_states(co) - _states(py)).max() <= 1e-9
    assert np.abs(co.lam - py.lam).max() <= 1e-6 * np.abs(py.lam).max()
