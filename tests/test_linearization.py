"""Linearization (issue 10, item 1): the derivatives of ``(a, λ)`` with respect
to ``p``, ``v`` and model parameters agree with finite differences of
``nc.accelerations`` along directions tangent to the constraints and along
general directions (off the manifold, where the kept-rows system still defines
``a(p, v)``), on the six-bar, the hexapod, a chain with loops and random
mechanisms.

The reference is the fourth-order central difference
``(8 (y₁ − y₋₁) − (y₂ − y₋₂)) / 12h`` with ``h = 1e-3`` along unit directions:
truncation O(h⁴) and round-off O(ε/h) both stay near 1e-11, well below the
1e-7 asked for. Every evaluation reuses one workspace, so the rows dropped at
the base point stay dropped (hysteresis), as in the linearization.
"""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from test_solver_agreement import mechanism_specs, random_mechanism

import natcoord as nc
from natcoord.dynamics.linearization import linearization_point, linearize
from natcoord.model.parameters import loads, springs
from natcoord.model.parameters import parameter_value as parameter_of
from natcoord.models.hexapod import BASE_POINTS, PLATFORM_POINTS

STEP, RTOL = 1e-3, 1e-7


def hexapod_with_springs():
    """The passive hexapod with a spring–damper in every leg and a drag on the platform."""
    mech = nc.models.hexapod()
    for k, (B, P) in enumerate(zip(BASE_POINTS, PLATFORM_POINTS), start=1):
        mech.add_spring(f"cylinder{k}", f"piston{k}", B, P, stiffness=2e4,
                        rest_length=0.9 * np.linalg.norm(P - B), damping=300.0)
    mech.add_force("platform", (0.1, 0.0, 1.0),
                   lambda t, s: -5.0 * np.linalg.norm(s.v[:3]) * s.v[:3])
    mech.add_torque("platform", (0.0, 0.0, 2.0))
    return mech


MODELS = {"six-bar": nc.models.six_bar, "hexapod": hexapod_with_springs,
          "hexapod-driven": lambda: nc.models.hexapod("driven"),
          "andrews": nc.models.andrews,
          "chain-with-loops": lambda: nc.models.chain(8, loops=2),
          # Cartesian spring–dampers in place of the spherical joints (analytic derivative)
          "hexapod-elastic": lambda: nc.models.hexapod("driven",
                                                       elastic_joints=(1e5, 100.0))}


def null_space(model, p):
    ws = nc.Workspace(model, "dense")
    ws.constraints(0.0, p, np.zeros_like(p))
    _, sv, Vt = np.linalg.svd(model.tables.csr(ws.G).toarray())
    return Vt[np.sum(sv > 1e-8 * sv[0]):].T


def moving_state(model, seed=0, t=0.3):
    """The assembled initial state plus a random velocity in the null space of G."""
    initial = nc.assemble(model, t=t).state
    N = null_space(model, initial.p)
    v = initial.v + N @ np.random.default_rng(seed).standard_normal(N.shape[1])
    return nc.State(t, initial.p, v)


def unit(x):
    return x / np.linalg.norm(x)


def central_difference(y, h=STEP):
    """Fourth-order central difference of ``y(s)`` at s = 0."""
    return (8.0 * (y(h) - y(-h)) - (y(2 * h) - y(-2 * h))) / (12.0 * h)


def relative_error(x, reference):
    """Max-norm error relative to the reference (absolute where it is below 1)."""
    return np.abs(x - reference).max() / max(np.abs(reference).max(), 1.0)


def state_difference(model, state, dp, dv):
    """``d(a, λ)`` along ``(dp, dv)`` by differences of ``nc.accelerations``."""
    ws = nc.Workspace(model)
    _, _, base = nc.accelerations(model, state, workspace=ws)

    def solution(s):
        a, lam, info = nc.accelerations(
            model, nc.State(state.t, state.p + s * dp, state.v + s * dv), workspace=ws)
        assert np.array_equal(info.dropped, base.dropped)
        return np.concatenate([a, lam])

    d = central_difference(solution)
    return d[:model.n_coords], d[model.n_coords:]


def assert_directional_derivatives(model, state, directions):
    lin = linearize(model, state)
    for dp, dv in directions:
        da, dlam = state_difference(model, state, dp, dv)
        assert relative_error(lin.da_dp @ dp + lin.da_dv @ dv, da) < RTOL
        assert relative_error(lin.dlam_dp @ dp + lin.dlam_dv @ dv, dlam) < RTOL


@pytest.mark.parametrize("name", ["six-bar", "hexapod", "chain-with-loops"])
def test_derivatives_along_the_constraints(name):
    """Directions in the null space of G: the mechanism's own motions (the
    driven hexapod has none)."""
    model = MODELS[name]().build()
    state = moving_state(model)
    N = null_space(model, state.p)
    rng = np.random.default_rng(1)
    directions = [(unit(N @ rng.standard_normal(N.shape[1])),
                   unit(N @ rng.standard_normal(N.shape[1]))) for _ in range(3)]
    assert_directional_derivatives(model, state, directions)


@pytest.mark.parametrize("name", MODELS)
def test_derivatives_in_general_directions(name):
    """Any (dp, dv), off the constraint manifold, and every single coordinate."""
    model = MODELS[name]().build()
    state = moving_state(model)
    rng = np.random.default_rng(2)
    n = model.n_coords
    directions = [(unit(rng.standard_normal(n)), unit(rng.standard_normal(n)))
                  for _ in range(3)]
    directions += [(np.eye(n)[k], np.zeros(n)) for k in (0, n // 2 + 1, n - 1)]
    directions += [(np.zeros(n), np.eye(n)[k]) for k in (1, n // 2, n - 2)]
    assert_directional_derivatives(model, state, directions)


def test_dropped_rows_stay_dropped():
    """The six-bar's redundant row keeps λ = 0 and dλ = 0 in every direction."""
    model = nc.models.six_bar().build()
    lin = linearize(model, moving_state(model))
    assert lin.dropped.size == 1
    assert not lin.lam[lin.dropped].any()
    assert not lin.dlam_dp[lin.dropped].any() and not lin.dlam_dv[lin.dropped].any()


def test_one_factorization_serves_every_direction():
    """``linearization_point`` factors once; a direction's derivative is linear
    in it at any scale, and ``linearize`` is its columns (state as a tuple)."""
    model = nc.models.six_bar().build()
    state = moving_state(model)
    at = linearization_point(model, state)
    factorizations = at.ws.n_factorizations
    u = unit(np.random.default_rng(4).standard_normal(model.n_coords))
    da, dlam = at.derivative(dp=u, dv=u)
    for scale in (1e-9, 1e6):
        da_s, dlam_s = at.derivative(dp=scale * u, dv=scale * u)
        np.testing.assert_allclose(da_s / scale, da, atol=1e-12 * np.abs(da).max())
        np.testing.assert_allclose(dlam_s / scale, dlam, atol=1e-12 * np.abs(dlam).max())
    assert at.ws.n_factorizations == factorizations
    lin = linearize(model, (state.t, state.p, state.v))
    np.testing.assert_allclose(lin.da_dp @ u + lin.da_dv @ u, da, atol=1e-12 * np.abs(da).max())


# ------------------------------------------------------------- parameters
def with_parameter(factory, name, delta):
    """The model of ``factory()`` with parameter ``name`` moved by ``delta``."""
    mech = factory()
    kind, _, key = name.partition(":")
    if kind in ("mass", "inertia"):
        i = [b.name for b in mech.bodies].index(key)
        body = mech.bodies[i]
        mech.bodies[i] = (replace(body, mass=body.mass + delta) if kind == "mass" else
                          replace(body, inertia=(1.0 + delta) * body.inertia))
    elif kind == "gravity":
        mech.gravity = mech.gravity + delta * np.eye(3)["xyz".index(key)]
    elif kind == "load":
        load = loads(mech)[int(key)]
        attribute = "torque" if hasattr(load, "torque") else "force"
        setattr(load, attribute, (1.0 + delta) * np.asarray(getattr(load, attribute)))
    else:
        spring = springs(mech)[int(key)]
        attribute = {"stiffness": "k", "damping": "c", "rest_length": "l0"}[kind]
        setattr(spring, attribute, getattr(spring, attribute) + delta)
    return mech.build()


def parameter_value(model, name):
    kind, _, key = name.partition(":")
    if kind == "mass":
        return model.bodies[model.body_index[key]].mass
    if kind in ("inertia", "load"):
        return 1.0
    if kind == "gravity":
        return np.linalg.norm(model.gravity)      # the scale of a component's step
    spring = springs(model)[int(key)]
    return {"stiffness": spring.k, "damping": spring.c, "rest_length": spring.l0}[kind]


PARAMETERS = {
    "six-bar": ["mass:rod2", "inertia:rod3", "gravity:x", "gravity:y"],
    "hexapod": ["mass:platform", "mass:piston3", "inertia:platform", "gravity:z",
                "stiffness:0", "damping:2", "rest_length:5"],
    "chain-with-loops": ["mass:rod5", "inertia:rod1", "gravity:z"],
    "andrews": ["load:0", "mass:crank"],                 # the driving torque
}


@pytest.mark.parametrize("name, param", [(m, p) for m in PARAMETERS for p in PARAMETERS[m]])
def test_parameter_derivatives(name, param):
    """``∂(a, λ)/∂θ`` against differences of models rebuilt with θ ± h."""
    model = MODELS[name]().build()
    state = moving_state(model)
    lin = linearize(model, state, params=[param])
    scale = parameter_value(model, param)

    def solution(s):
        moved = with_parameter(MODELS[name], param, s * scale)
        a, lam, _ = nc.accelerations(moved, state)
        return np.concatenate([a, lam])

    d = central_difference(solution) / scale
    assert relative_error(lin.da_dtheta[:, 0], d[:model.n_coords]) < RTOL
    assert relative_error(lin.dlam_dtheta[:, 0], d[model.n_coords:]) < RTOL


def test_unknown_parameter_names_the_choices():
    model = nc.models.six_bar().build()
    with pytest.raises(KeyError, match="mass:<body>"):
        linearize(model, nc.assemble(model).state, params=["length:rod1"])
    with pytest.raises(KeyError, match="unknown body"):
        linearize(model, nc.assemble(model).state, params=["mass:rod9"])


# ------------------------------------------------------ random mechanisms
@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=mechanism_specs())
def test_random_mechanisms(spec):
    mech = random_mechanism(**spec)
    model = mech.build()
    p = model.p_reference.copy()
    N = null_space(model, p)
    rng = np.random.default_rng(3)
    state = nc.State(0.0, p, N @ rng.standard_normal(N.shape[1]) if N.size else 0.0 * p)
    n = model.n_coords
    directions = [(unit(rng.standard_normal(n)), unit(rng.standard_normal(n)))]
    if N.size:
        directions.append((unit(N @ rng.standard_normal(N.shape[1])), np.zeros(n)))
    assert_directional_derivatives(model, state, directions)


def test_a_load_enters_linearly():
    """Doubling Andrews' driving torque moves (a, λ) by exactly ∂(a, λ)/∂(load scale)."""
    model = nc.models.andrews().build()
    state = moving_state(model)
    doubled = model.with_parameters({"load:0": 2.0})
    a1, lam1, _ = nc.accelerations(model, state)
    a2, lam2, _ = nc.accelerations(doubled, state)
    lin = linearize(model, state, params=["load:0"])
    assert relative_error(lin.da_dtheta[:, 0], a2 - a1) < 1e-9
    assert relative_error(lin.dlam_dtheta[:, 0], lam2 - lam1) < 1e-9
    with pytest.raises(KeyError, match="numbered 0..0"):
        model.with_parameters({"load:1": 2.0})


# ------------------------------------------------------------- drive parameters
HINGE = {"type": "sinusoid", "amplitude": 0.5, "frequency": 0.7, "phase": 0.4, "offset": 0.1}
RAIL = {"type": "spline", "t": [0.0, 0.5, 1.0, 1.5, 2.0], "s": [0.0, 0.1, 0.25, 0.2, 0.05]}


def drives_moved(name=None, delta=0.0):
    """``two_drives`` with declarative drives, parameter ``name`` of one moved by ``delta``
    in its spec (the model is built from scratch, not by ``with_parameters``)."""
    from test_drives import two_drives
    specs = {"hinge": dict(HINGE), "rail": {**RAIL, "s": list(RAIL["s"])}}
    if name is not None:
        _, joint, key = name.split(":")
        field, _, k = key.partition(".")
        if k:
            specs[joint][field][int(k)] += delta
        else:
            specs[joint][field] += delta
    return two_drives(*(nc.Drive.from_spec(specs[j]) for j in ("hinge", "rail")))


@pytest.mark.parametrize("param", ["drive:hinge:amplitude", "drive:hinge:frequency",
                                   "drive:hinge:phase", "drive:rail:s.2"])
def test_drive_parameter_derivatives(param):
    """``∂(a, λ)/∂θ`` of a drive's parameter (complex step through its compiled law)
    against differences of models rebuilt with θ ± h; ``with_parameters`` gives
    the rebuilt model's accelerations bitwise."""
    model = drives_moved()
    state = nc.assemble(model, t=0.6).state
    lin = linearize(model, state, params=[param])

    def solution(s):
        a, lam, _ = nc.accelerations(drives_moved(param, s), state)
        return np.concatenate([a, lam])

    d = central_difference(solution)
    assert relative_error(lin.da_dtheta[:, 0], d[:model.n_coords]) < RTOL
    assert relative_error(lin.dlam_dtheta[:, 0], d[model.n_coords:]) < RTOL
    assert np.abs(d[:model.n_coords]).max() > 1e-3              # the parameter matters
    moved = model.with_parameters({param: parameter_of(model, param) + 0.01})
    assert np.array_equal(nc.accelerations(moved, state)[0],
                          nc.accelerations(drives_moved(param, 0.01), state)[0])


def test_drive_parameters_name_their_choices():
    model = drives_moved()
    with pytest.raises(KeyError, match=r"driven joint of \['hinge', 'rail'\]"):
        linearize(model, nc.assemble(model).state, params=["drive:crank:amplitude"])
    with pytest.raises(KeyError, match=r"amplitude.*frequency.*phase.*offset"):
        linearize(model, nc.assemble(model).state, params=["drive:hinge:rate"])
    with pytest.raises(KeyError, match=r"s\.0\.\.4"):
        model.with_parameters({"drive:rail:t.1": 0.6})


def test_bad_parameter_names_fail_before_any_solve(monkeypatch):
    """Names are checked up front (no linearization point is solved for); one name
    given as a string is one parameter, not its characters."""
    model = drives_moved()
    state = nc.assemble(model).state
    with monkeypatch.context() as m:
        m.setattr(nc.dynamics.linearization, "linearization_point", lambda *a, **k: pytest.fail("solved"))
        with pytest.raises(TypeError, match=r"a parameter name is a string \(mass:<body>.*\), "
                                            r"got 3"):
            linearize(model, state, params=[3])
        with pytest.raises(KeyError, match=r"joint 'crank'|driven joint of"):
            linearize(model, state, params=["drive:crank:amplitude"])
    assert linearize(model, state, params="drive:hinge:phase").params == ("drive:hinge:phase",)
    with pytest.raises(TypeError, match=r"with_parameters takes a mapping \{name: value\}, "
                                        r"e.g. .*; got \['drive:hinge:amplitude'\]"):
        model.with_parameters(["drive:hinge:amplitude"])


def test_a_bad_state_is_refused_naming_it():
    model = drives_moved()
    state = nc.assemble(model).state
    with pytest.raises(TypeError, match=r"state must be a natcoord.State .* got NoneType"):
        linearize(model, None)
    with pytest.raises(ValueError, match=r"state\.p"):
        linearize(model, (0.0, np.full_like(state.p, np.nan), state.v))
    with pytest.raises(ValueError, match=r"state\.v"):
        linearize(model, nc.State(0.0, state.p, state.v[:-1]))
    tuple_form = linearize(model, (state.t, state.p, state.v))
    assert np.array_equal(tuple_form.a, linearize(model, state).a)
