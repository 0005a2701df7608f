"""``nc.assemble``: the consistent initial state and the constraint rank found there.

The six-bar's reference configuration is consistent and at rest, so its
assembly leaves it as it is (the state ``Model.initial_state()`` gave), with
one DOF and one redundant row (docs/benchmarks.md). A state off the manifold
is projected onto it; bad arguments are named. The assembly and the solvers'
symbolic plans are derived per model, outside the frozen model.
"""

import numpy as np
import pytest

import natcoord as nc
from natcoord.dynamics.assembly import ASSEMBLY_TOL
from natcoord.linalg.blockldl import block_plan


@pytest.fixture(scope="module")
def model():
    return nc.models.six_bar().build()


def test_six_bar_assembles_in_place_with_one_dof(model):
    a = nc.assemble(model)
    assert isinstance(a, nc.Assembly) and isinstance(a.state, nc.State)
    assert (a.dof, a.rank) == (1, model.n_rows - 1)
    assert a.state.t == 0.0
    np.testing.assert_array_equal(a.state.p, model.p_reference)
    np.testing.assert_array_equal(a.state.v, np.zeros(model.n_coords))
    assert [model.row_labels[r] for r in a.dropped] == ["joint4: axis·h2"]
    assert nc.assemble(model) is a                          # derived once per model


def test_dropped_rows_are_those_the_workspace_reports(model):
    a = nc.assemble(model)
    ws = nc.Workspace(model)
    ws.constraints(a.state.t, a.state.p, a.state.v)
    ws.factor()
    np.testing.assert_array_equal(a.dropped, ws.dropped)
    assert not a.dropped.flags.writeable


def test_a_state_off_the_manifold_is_projected_onto_it(model):
    rng = np.random.default_rng(1)
    p = model.p_reference + 1e-3 * rng.standard_normal(model.n_coords)
    v = 0.1 * rng.standard_normal(model.n_coords)
    a = nc.assemble(model, p=p, v=v, t=0.5)
    ws = nc.Workspace(model)
    ws.constraints(a.state.t, a.state.p, a.state.v)
    assert a.state.t == 0.5 and np.abs(a.state.p - p).max() > 1e-4
    assert np.abs(ws.g).max() <= ASSEMBLY_TOL
    assert np.abs(ws.velocity_residual(a.state.v)).max() <= ASSEMBLY_TOL
    assert a.dof == 1


def test_bad_p_is_refused_by_name(model):
    with pytest.raises(ValueError, match=r"^p must have shape \(60,\)"):
        nc.assemble(model, p=np.zeros(59))
    with pytest.raises(ValueError, match=r"^proj_tol must be a positive"):
        nc.assemble(model, proj_tol=0.0)
    with pytest.raises(nc.AssemblyError, match=r"at round-off: proj_tol = 1.0e-300 cannot be "
                                               r"reached; use a larger one \(default 1e-12\)"):
        nc.assemble(model, p=model.p_reference + 1e-3, proj_tol=1e-300)


@pytest.mark.parametrize("arguments, error, match", [
    (dict(t=np.array([0.0, 1.0])), TypeError, r"^t must be a real number, got array"),
    (dict(t=np.nan), ValueError, r"^t must be finite, got nan"),
    (dict(model=nc.models.six_bar()), TypeError, r"^model must be a natcoord.Model \(build "
                                                 r"one with Mechanism.build\(\)\), got Mechanism"),
])
def test_bad_t_and_model_are_refused_by_name(model, arguments, error, match):
    with pytest.raises(error, match=match):
        nc.assemble(**{"model": model, **arguments})


def test_a_reparameterized_copy_derives_its_own_assembly_and_plans(model):
    heavy = model.with_parameters({"mass:rod2": 10.0})
    assert nc.assemble(heavy) is not nc.assemble(model)
    np.testing.assert_array_equal(block_plan(heavy).arrays.J4, heavy.J4)
    assert not np.array_equal(block_plan(model).arrays.J4, heavy.J4)
    nc.simulate(heavy, 0.05)
    assert not {"_symbolic", "_default_initial"} & set(heavy.__dict__)


@pytest.mark.parametrize("solver", ["block", "dense"])
def test_assembled_velocities_are_the_mass_orthogonal_projection_of_the_guess(model, solver):
    """The assembly projects velocities with the integrators' own rule (the core's
    ``nc_project``); the result is the closest consistent velocity in the mass norm,
    ``min ½ (v − v₀)ᵀ M (v − v₀)`` s.t. ``G v + g_t = 0`` on the kept rows, which a dense
    KKT solve of NumPy gives independently."""
    rng = np.random.default_rng(7)
    state = nc.assemble(model).state
    guess = rng.standard_normal(model.n_coords)
    a = nc.assemble(model, p=state.p, v=guess, solver=solver)
    ws = nc.Workspace(model)
    ws.constraints(0.0, a.state.p, a.state.v)
    keep = np.setdiff1d(np.arange(model.n_rows), a.dropped)
    G = model.tables.csr(ws.G).toarray()[keep]
    M = model.mass_matrix.toarray()
    K = np.block([[M, G.T], [G, np.zeros((keep.size, keep.size))]])
    dv = np.linalg.solve(K, np.concatenate([np.zeros(model.n_coords),
                                            -(G @ guess + ws.g_t[keep])]))[:model.n_coords]
    np.testing.assert_allclose(a.state.v, guess + dv, rtol=0, atol=1e-12 * np.abs(guess).max())
    assert np.abs(ws.velocity_residual(a.state.v)).max() <= ASSEMBLY_TOL


def test_the_round_off_floor_of_a_residual_is_ten_epsilon_of_its_largest_row(model):
    """``threshold`` (the core's ``nc_threshold``): ``max(tol, 10 ε max_rows (|G| |x| +
    |rate|))``, the size below which a residual's sum of terms is round-off; here against
    the same sum taken by NumPy on the sparse Jacobian."""
    from natcoord.dynamics.projection import threshold
    ws = nc.Workspace(model)
    state = nc.assemble(model).state
    x = 1e8 * np.random.default_rng(3).standard_normal(model.n_coords)   # far above tol
    ws.constraints(0.0, state.p, x)
    G = abs(model.tables.csr(ws.G))
    eps = np.finfo(float).eps
    top_p, top_v = (G @ np.abs(x)).max(), (G @ np.abs(x) + np.abs(ws.g_t)).max()
    assert threshold(ws, x, 1e-30) == pytest.approx(10 * eps * top_p, rel=1e-13)
    assert threshold(ws, x, 1e-30, ws.g_t) == pytest.approx(10 * eps * top_v, rel=1e-13)
    assert threshold(ws, x, 1.0) == 1.0                     # a loose tolerance stands
