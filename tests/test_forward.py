"""``nc.forward(model, data)``: the compiled core's forward dynamics on per-run data.

The accelerations and multipliers agree with an independent solve of the whole
KKT system by dense LU (``solver="dense"``), also for a driven mechanism at
t > 0 and for a mechanism with a redundant loop constraint; bad input is
refused where it enters (the ``Data`` setters), by name.
"""
import numpy as np
import pytest

import natcoord as nc


def dense(model, state):
    a, lam, _ = nc.accelerations(model, state, solver="dense")
    return a, lam


def constraint_forces(model, state, lam):
    """``Gᵀ λ`` (12 n,): unique even where backends drop different redundant rows."""
    ws = nc.Workspace(model, solver="dense")
    ws.constraints(state.t, state.p, state.v)
    return model.tables.csr(ws.G).T @ lam


@pytest.mark.parametrize("factory", [nc.models.six_bar, nc.models.four_bar,
                                     lambda: nc.models.chain(8),
                                     lambda: nc.models.hexapod(scenario="driven")])
def test_forward_agrees_with_a_dense_kkt_solve(factory):
    model = factory().build()
    state = nc.assemble(model, t=0.3).state
    data = nc.Data(model, state)
    nc.forward(model, data)
    a, lam = dense(model, state)
    scale = max(1.0, np.abs(a).max())
    assert np.abs(data.a - a).max() <= 1e-10 * scale
    forces = constraint_forces(model, state, lam)
    np.testing.assert_allclose(constraint_forces(model, state, data.lam), forces,
                               atol=1e-9 * max(1.0, np.abs(forces).max()))


def test_the_four_bar_drops_its_redundant_rows_and_gives_them_no_force():
    """A planar loop closed by revolute joints in 3D: three of its rows (the
    out-of-plane ones) are redundant, as the dense backend finds too."""
    model = nc.models.four_bar().build()
    state = nc.assemble(model).state
    data = nc.Data(model, state)
    nc.forward(model, data)
    assert data.dropped.size == 3 == nc.accelerations(model, state, solver="dense")[2].dropped.size
    np.testing.assert_array_equal(data.lam[data.dropped], 0.0)


def test_new_state_through_the_setters_gives_new_accelerations():
    model = nc.models.six_bar().build()
    state = nc.assemble(model).state
    data = nc.Data(model, state)
    nc.forward(model, data)
    at_rest = data.a.copy()
    sol = nc.simulate(model, 0.2)
    moving = nc.State(sol.t[-1], sol.p[-1], sol.v[-1])
    data.t, data.p = moving.t, moving.p
    data.v = moving.v
    nc.forward(model, data)
    np.testing.assert_allclose(data.a, dense(model, moving)[0], atol=1e-10)
    data.t, data.p, data.v = state.t, state.p, state.v
    nc.forward(model, data)
    np.testing.assert_allclose(data.a, at_rest, atol=1e-12)


@pytest.mark.parametrize("name, value, error, match", [
    ("p", np.zeros(3), ValueError, r"p must have shape \(60,\)"),
    ("v", np.full(60, np.nan), ValueError, r"v contains NaN"),
    ("t", float("inf"), ValueError, r"t must be finite"),
    ("p", np.array(["a"] * 60), TypeError, r"p must be an array of real numbers"),
])
def test_bad_state_is_refused_where_it_enters(name, value, error, match):
    model = nc.models.six_bar().build()
    data = nc.Data(model, nc.assemble(model).state)
    with pytest.raises(error, match=match):
        setattr(data, name, value)


def test_data_of_another_model_is_refused_and_python_forces_are_called_back():
    six = nc.models.six_bar().build()
    four = nc.models.four_bar().build()
    with pytest.raises(ValueError, match="another model"):
        nc.forward(six, nc.Data(four))
    mech = nc.models.four_bar()
    mech.add_force("crank0", point=(0.0, 0.0, 0.0), force=lambda t, state: (0.0, 1.0, 0.0))
    model = mech.build()
    state = nc.assemble(model).state
    data = nc.Data(model, state)
    nc.forward(model, data)
    a, _, _ = nc.accelerations(model, state, solver="dense")
    assert np.abs(data.a - a).max() <= 1e-9 * np.abs(a).max()


def test_a_degenerate_state_names_the_body():
    """The core's factorization failures arrive as step statuses (before: the block
    factorization's own code 1, a singular frame, read as status 1 and reported as
    "the factorization failed (status 1)")."""
    model = nc.models.four_bar().build()
    data = nc.Data(model, nc.assemble(model).state)
    data.p = np.zeros(model.n_coords)                # every frame singular
    with pytest.raises(np.linalg.LinAlgError,
                       match=f"body '{model.bodies[0].name}': singular frame"):
        nc.forward(model, data)


def test_joint_space_views_of_the_data_match_the_double_pendulum_equations():
    """Two rods hinged about z in the x-y plane, gravity −y: q̈ from forward equals
    the textbook M(q) q̈ = τ − h of the double pendulum (rods of length 1, mass 1)."""
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0))
    inertia = nc.rod_inertia(1.0, 1.0, 0.01)
    mech.add_body("rod1", mass=1.0, com=(0.5, 0, 0), inertia=inertia)
    mech.add_body("rod2", mass=1.0, com=(1.5, 0, 0), inertia=inertia, origin=(1, 0, 0))
    mech.add_revolute(nc.GROUND, "rod1", point=(0, 0, 0), axis=(0, 0, 1), name="shoulder")
    mech.add_revolute("rod1", "rod2", point=(1, 0, 0), axis=(0, 0, 1), name="elbow")
    model = mech.build()
    data = nc.Data(model)
    q, qd = np.array([0.3, -0.5]), np.array([0.7, 0.2])
    data.set_joints(q, qd)
    nc.forward(model, data)
    np.testing.assert_allclose(data.q, q, atol=1e-12)
    np.testing.assert_allclose(data.qd, qd, atol=1e-12)
    I = inertia[2, 2] + 0.25                    # a rod about its end
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    M = np.array([[2 * I + 1 + c2, I + 0.5 * c2],      # m l1 lc2 = 0.5
                  [I + 0.5 * c2, I]])
    h = np.array([-0.5 * s2 * (2 * qd[0] * qd[1] + qd[1] ** 2),
                  0.5 * s2 * qd[0] ** 2])
    g = 9.81 * np.array([1.5 * np.cos(q[0]) + 0.5 * np.cos(q[0] + q[1]),
                         0.5 * np.cos(q[0] + q[1])])
    np.testing.assert_allclose(data.qdd, np.linalg.solve(M, -h - g), rtol=1e-9, atol=1e-9)
