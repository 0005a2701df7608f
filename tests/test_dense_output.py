"""Solution.sol: the continuous solution of simulate(..., dense_output=True).

Built from every accepted step's own interpolant (DOPRI5's order-4 dense output,
Radau's collocation polynomial): at the step times it is the recorded state;
between them it is the interpolant, which ``project=True`` projects as the
``t_eval`` outputs are. The core alone and the core calling a reference KKT
backend back (independent linear algebra) give the same values to round-off; a
failed run keeps it up to its last accepted step.
"""
import numpy as np
import pytest

import natcoord as nc
from natcoord.models import REGISTRY
from natcoord.integrate.stepper import DOPRI5


@pytest.fixture(scope="module")
def six_bar():
    return REGISTRY["six-bar"]().build()


@pytest.fixture(scope="module")
def driven():
    return REGISTRY["hexapod"](scenario="driven").build()


def _states(sol):
    return np.hstack([sol.p, sol.v]).T


def _simulate(model, t_end, solver="block", **kw):
    return nc.simulate(model, t_end, solver=solver, dense_output=True, **kw)


def _midpoints(t):
    return 0.5 * (t[1:] + t[:-1])


PATHS = {"compiled": dict(), "callback": dict(solver="dense"), "radau": dict(method="radau")}


@pytest.mark.parametrize("path", PATHS)
def test_equals_the_records_at_the_step_times(six_bar, path):
    sol = _simulate(six_bar, 0.3, rtol=1e-7, **PATHS[path])
    assert sol.sol.ts.size == sol.t.size and np.array_equal(sol.sol.ts, sol.t)
    assert np.array_equal(sol.sol(sol.t), _states(sol))
    assert np.array_equal(sol.sol(sol.t[-1]), _states(sol)[:, -1])


def test_model_with_drives_per_step_path(driven):
    sol = _simulate(driven, 0.1, rtol=1e-6)
    assert sol.stats["compiled"]
    assert np.array_equal(sol.sol(sol.t), _states(sol))
    t_eval = _midpoints(sol.t)
    out = _simulate(driven, 0.1, rtol=1e-6, t_eval=t_eval)
    assert np.abs(sol.sol(t_eval, project=True) - _states(out)).max() <= 1e-9


@pytest.mark.parametrize("path", ["compiled", "callback"])
def test_between_steps_the_projected_values_are_the_t_eval_outputs(six_bar, path):
    sol = _simulate(six_bar, 0.3, rtol=1e-7, **PATHS[path])
    t_eval = _midpoints(sol.t)
    out = _simulate(six_bar, 0.3, rtol=1e-7, t_eval=t_eval, **PATHS[path])
    assert np.abs(sol.sol(t_eval, project=True) - _states(out)).max() <= 1e-9


@pytest.mark.parametrize("method", ["dopri5", "radau"])
def test_unprojected_values_approach_the_outputs_as_rtol_shrinks(six_bar, method):
    """The interpolant leaves the constraints by its own error only; it shrinks with rtol."""
    differences = []
    for rtol in (1e-5, 1e-7):
        t_eval = np.linspace(0.0, 0.3, 23)
        sol = _simulate(six_bar, 0.3, rtol=rtol, t_eval=t_eval, method=method)
        differences.append(np.abs(sol.sol(t_eval) - _states(sol)).max())
    assert 0 < differences[1] < differences[0] / 10


@pytest.mark.parametrize("method, order", [("dopri5", 4), ("radau", 3)])
def test_order_of_the_interpolant(six_bar, method, order):
    """At fixed steps h (max_step binding), the error at the midpoints of the steps
    falls as h^(order + 1): halving h divides it by about 2^(order + 1)."""
    reference = _simulate(six_bar, 0.5, rtol=1e-12).sol

    def midpoint_error(h):
        sol = _simulate(six_bar, 0.5, rtol=0.1, first_step=h, max_step=h, method=method)
        assert sol.stats["steps"] == round(0.5 / h)
        t = _midpoints(sol.t)
        return np.abs(sol.sol(t) - reference(t, project=True)).max()
    observed = np.log2(midpoint_error(1 / 32) / midpoint_error(1 / 64))
    assert observed > order + 0.5


@pytest.mark.parametrize("solver", ["dense", "superlu"])
def test_block_and_reference_backends_give_the_same_values(six_bar, solver):
    """The KKT systems solved by independent linear algebra (the reference backend
    called back from the core; it drops another of the six-bar's redundant rows, so
    the projected states differ within proj_tol and the step sizes follow): the
    same motion to well within the tolerance."""
    co = _simulate(six_bar, 0.3, rtol=1e-9)
    ref = _simulate(six_bar, 0.3, rtol=1e-9, solver=solver)
    assert co.stats["compiled"] and not ref.stats["compiled"]
    assert ref.stats["solver"] == solver and abs(co.stats["steps"] - ref.stats["steps"]) <= 1
    t = np.linspace(0.0, 0.3, 101)
    assert np.abs(co.sol(t) - ref.sol(t)).max() <= 1e-8


def test_several_chunks(six_bar):
    """Steps stored past the compiled buffers' capacity (256 steps per chunk)."""
    sol = _simulate(six_bar, 1.0, max_step=1 / 512, t_eval=[0.0, 1.0])
    assert sol.stats["steps"] > 256 and len(sol.sol.pieces) == sol.stats["steps"]
    assert np.array_equal(sol.sol([0.0, 1.0]), _states(sol))


def test_times_outside_the_interval_raise(six_bar):
    sol = _simulate(six_bar, 0.1).sol
    for t in (-1e-3, 0.1 + 1e-9, np.nan, [0.05, 0.2]):
        with pytest.raises(ValueError, match=r"outside the integrated interval \[0, 0.1"):
            sol(t)
    with pytest.raises(ValueError, match="1-d array"):
        sol(np.zeros((2, 2)))
    assert sol(0.05).shape == (2 * six_bar.n_coords,)
    assert sol([0.05]).shape == (2 * six_bar.n_coords, 1)


def test_a_failed_run_keeps_it_up_to_the_last_accepted_step(six_bar):
    with pytest.raises(nc.IntegrationError) as info:
        _simulate(six_bar, 1.0, max_steps=5)
    partial = info.value.solution
    assert partial.sol.ts[-1] == partial.t[-1] < 1.0
    assert np.array_equal(partial.sol(partial.t), _states(partial))


def test_not_kept_without_dense_output_nor_saved(six_bar, tmp_path):
    sol = nc.simulate(six_bar, 0.1)
    with pytest.raises(ValueError, match="dense_output=True"):
        sol.sol
    chunk = DOPRI5(six_bar, 0.1).advance()
    assert chunk.steps > 0 and not chunk.pieces
    dense = _simulate(six_bar, 0.1)
    dense.save(tmp_path / "run.npz")
    with pytest.raises(ValueError, match="save"):
        nc.Solution.load(tmp_path / "run.npz").sol
