"""The 6-bar (Bricard) mechanism end to end (docs/benchmarks.md "six_bar").

Five rods and ground in one loop of six revolutes: 30 rigid-body + 30 joint
rows on 60 coordinates. Grübler's count gives 0 DOF, but Bricard's linkage
moves with 1 DOF: the Jacobian is one short of full rank everywhere, and
constraint partitioning must drop exactly one scalar row.
"""
import numpy as np
import pytest

import natcoord as nc
from natcoord.model.frozen import JOINT

PROJ_TOL = 1e-10
P3 = (1.0, -1.0, 0.0)      # output point on rod 2 (docs/benchmarks.md)


@pytest.fixture(scope="module")
def model():
    return nc.models.six_bar().build()


@pytest.fixture(scope="module")
def long_run(model):
    """10 s at rtol = 1e-8 with the default projection (the benchmark scenario)."""
    return nc.simulate(model, t_end=10.0, rtol=1e-8, proj_tol=PROJ_TOL,
                       t_eval=np.linspace(0.0, 10.0, 201))


def dense_jacobian(model, state):
    ws = nc.Workspace(model, "dense")
    ws.constraints(state.t, state.p, state.v)
    return model.tables.csr(ws.G).toarray()


def test_jacobian_is_one_short_of_full_rank(model):
    G = dense_jacobian(model, nc.assemble(model).state)
    sigma = np.linalg.svd(G, compute_uv=False)
    assert G.shape == (60, 60)
    assert sigma[-2] > 1e-3 * sigma[0]          # 59 clearly nonzero singular values ...
    assert sigma[-1] < 1e-13 * sigma[0]         # ... and one zero: rank 59


def test_one_dof_and_exactly_one_dropped_joint_row(model):
    state = nc.assemble(model).state
    _, _, info = nc.accelerations(model, state, solver="dense")
    assembly = nc.assemble(model)
    assert assembly.dof == 1
    assert assembly.dropped.size == 1 and info.dropped.size == 1
    (row,) = info.dropped
    assert model.row_kind[row] == JOINT                      # never a rigid-body row
    kept = np.delete(dense_jacobian(model, state), row, axis=0)
    assert np.linalg.matrix_rank(kept) == 59                 # the rest is independent


def test_moves_and_conserves_energy(long_run):
    """Released at rest under gravity it swings; no damping: energy within 1e-6 J over 10 s."""
    p3 = long_run.point("rod2", P3)
    assert np.ptp(p3, axis=0).max() > 0.1
    assert np.ptp(long_run.energy) <= 1e-6


def test_residuals_at_projection_tolerance(long_run):
    assert long_run.constraint_residual.max() <= PROJ_TOL
    assert long_run.velocity_residual.max() <= PROJ_TOL


def test_without_projection_the_residual_drifts_away(model, long_run):
    free = nc.simulate(model, t_end=10.0, rtol=1e-8, proj_tol=PROJ_TOL, projection="none",
                       t_eval=long_run.t)
    assert free.constraint_residual[-1] > 1e3 * PROJ_TOL
    assert free.constraint_residual[-1] > 100 * free.constraint_residual[1]   # it grows
    assert free.constraint_residual.max() > 1e3 * long_run.constraint_residual.max()


def agree(x, y, rtol=1e-10):
    np.testing.assert_allclose(x, y, rtol=0, atol=rtol * np.abs(y).max())


@pytest.mark.parametrize("when", ["initial", "after 10 s"])
def test_dense_and_superlu_agree(model, long_run, when):
    state = (nc.assemble(model).state if when == "initial" else
             nc.State(long_run.t[-1], long_run.p[-1], long_run.v[-1]))
    a_dense, lam_dense, info_dense = nc.accelerations(model, state, solver="dense")
    a_slu, lam_slu, info_slu = nc.accelerations(model, state, solver="superlu")
    np.testing.assert_array_equal(info_dense.dropped, info_slu.dropped)
    agree(a_slu, a_dense)
    agree(lam_slu, lam_dense)


@pytest.fixture(scope="module")
def short_runs(model):
    """4 s at rtol = 1e-6 under each stabilization; none of them holds the residual
    below the default drift_tol = 1e-6 over 4 s, and each run says so."""
    runs = {}
    for projection in ("none", "velocity", "baumgarte"):
        with pytest.warns(RuntimeWarning, match=f"projection='{projection}'.*exceeds drift_tol"):
            runs[projection] = nc.simulate(model, t_end=4.0, rtol=1e-6, proj_tol=PROJ_TOL,
                                           projection=projection, t_eval=np.linspace(0, 4, 41))
    return runs


def test_velocity_projection_enforces_the_kept_velocity_rows(model, short_runs):
    """``G v + g_t = 0`` on the rows kept by partitioning; positions drift less than without."""
    sol = short_runs["velocity"]
    ws = nc.Workspace(model, "dense")
    keep = np.ones(model.n_rows, bool)
    keep[sol.dropped_rows] = False
    for t, p, v in zip(sol.t, sol.p, sol.v):
        ws.constraints(t, p, v)
        assert np.abs(ws.velocity_residual(v)[keep]).max() <= PROJ_TOL
    assert sol.constraint_residual.max() < 0.3 * short_runs["none"].constraint_residual.max()


def test_baumgarte_keeps_the_residual_bounded(short_runs):
    none, baumgarte = short_runs["none"], short_runs["baumgarte"]
    assert baumgarte.constraint_residual.max() < 0.1 * none.constraint_residual.max()
    assert baumgarte.velocity_residual.max() < 0.3 * none.velocity_residual.max()
