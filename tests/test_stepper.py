"""The DOPRI5 stepper (natcoord.integrate.stepper): natcoord's one Dormand–Prince 5(4),
in the core, checked against computations that do not share its code.

* order 5 on the closed-form linear oscillator (fixed steps);
* accelerations equal to a dense least-squares solve of the KKT system;
* energy conserved by conservative mechanisms to the tolerance;
* the block solver and the reference backends (dense LU, SuperLU: independent
  linear algebra, called back from the core) give the same motion;
* a force written in Python (called back at every stage) moves the mechanism as
  the same built-in force does; a callback's exception is the run's cause;
* the step-by-step interface and the chunked driver take the same steps.
"""
import numpy as np
import pytest

import natcoord as nc
from natcoord.dynamics.workspace import Workspace
from natcoord.model.core_tables import python_forces
from natcoord.integrate.stepper import DOPRI5, StepRecord
from natcoord.models import REGISTRY

CASES = {"six-bar": ("six-bar", {}, 0.5), "hexapod-passive": ("hexapod", {"scenario": "passive"}, 0.3),
         "hexapod-driven": ("hexapod", {"scenario": "driven"}, 0.3),
         "chain-loops": ("chain", {"n": 8, "loops": 2}, 0.3)}


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    name, params, t_end = CASES[request.param]
    return REGISTRY[name](**params).build(), t_end


def _states(sol):
    return np.hstack([sol.p.reshape(sol.t.size, -1), sol.v.reshape(sol.t.size, -1)])


# ------------------------------------------------------------- closed form
MASS, STIFFNESS, X0, V0 = 2.0, 50.0, 0.1, 0.3
OMEGA = np.sqrt(STIFFNESS / MASS)


def _oscillator(spring):
    """A body on a prismatic joint pulled back by a spring along the axis:
    ``x(t) = x0 cos ωt + (v0/ω) sin ωt``. ``spring``: ``"built-in"`` (add_spring) or
    ``"python"``, the same force ``−k x`` as a callable at the body's origin."""
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0), name="oscillator")
    mech.add_body("slider", mass=MASS, com=(0.05, 0.02, 0.0),
                  inertia=nc.box_inertia(MASS, (0.2, 0.1, 0.1)))
    mech.add_prismatic(nc.GROUND, "slider", point=(0, 0, 0), axis=(1, 0, 0))
    if spring == "built-in":
        mech.add_spring(nc.GROUND, "slider", point_a=(-1, 0, 0), point_b=(0, 0, 0),
                        stiffness=STIFFNESS, rest_length=1.0)
    else:                                  # slot 0 of the only body: its origin o
        mech.add_force("slider", point=(0, 0, 0),
                       force=lambda t, state: (-STIFFNESS * state.p[0], 0.0, 0.0))
    mech.set_initial("slider", origin=(X0, 0, 0), velocity=(V0, 0, 0))
    return mech.build()


def _exact(t):
    return X0 * np.cos(OMEGA * t) + V0 / OMEGA * np.sin(OMEGA * t)


@pytest.mark.parametrize("spring", ["built-in", "python"])
def test_fifth_order_on_the_oscillator(spring):
    """Fixed steps h (first_step = max_step, a tolerance that never rejects): the
    global error at t = 1 falls as h⁵, halving h divides it by ≈ 32."""
    model = _oscillator(spring)

    def error(h):
        sol = nc.simulate(model, 1.0, rtol=1.0, atol=1.0, first_step=h, max_step=h)
        assert sol.stats["steps"] == round(1.0 / h) and sol.stats["rejected"] == 0
        return abs(sol.point("slider", (0, 0, 0))[-1, 0] - _exact(1.0))
    errors = [error(h) for h in (1 / 20, 1 / 40, 1 / 80)]
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(orders > 4.6), orders


def test_a_python_force_moves_the_mechanism_as_the_built_in_one():
    """The same spring as a built-in law and as a Python callable called back from the
    core at each stage: both follow the closed form within the tolerance's error,
    and each other as closely."""
    t_eval = np.linspace(0.0, 2.0, 41)
    runs = {spring: nc.simulate(_oscillator(spring), 2.0, rtol=1e-10, t_eval=t_eval)
            for spring in ("built-in", "python")}
    assert runs["built-in"].stats["compiled"] and not runs["python"].stats["compiled"]
    x = {k: sol.point("slider", (0, 0, 0))[:, 0] for k, sol in runs.items()}
    for k in x:
        assert np.abs(x[k] - _exact(t_eval)).max() <= 1e-8, k
    assert np.abs(x["built-in"] - x["python"]).max() <= 1e-8
    # the energy the records report counts only the built-in spring's potential
    assert np.ptp(runs["built-in"].energy) <= 1e-8 * abs(runs["built-in"].energy).max()


def test_a_python_torque_equals_the_constant_one():
    """A constant torque given as a value (the core's law) and as a callable."""
    models = []
    for torque in ((0.0, 0.0, 0.7), lambda t, state: (0.0, 0.0, 0.7)):
        mech = REGISTRY["six-bar"]()
        mech.add_torque(mech.bodies[1].name, torque)
        models.append(mech.build())
    assert not python_forces(models[0]) and python_forces(models[1])
    t_eval = np.linspace(0.0, 0.5, 11)
    const, python = (nc.simulate(m, 0.5, rtol=1e-10, t_eval=t_eval) for m in models)
    assert np.abs(_states(const) - _states(python)).max() <= 1e-8
    plain = nc.simulate(REGISTRY["six-bar"]().build(), 0.5, rtol=1e-10, t_eval=t_eval)
    assert np.abs(_states(const) - _states(plain)).max() > 1e-3      # the torque acts


# ------------------------------------------------------------- KKT, energy
def test_accelerations_equal_a_dense_kkt_solve(case):
    """``(v, a)`` of the core at a state off the reference (the end of a short run)
    against ``[[M, Gᵀ], [G, 0]] [a; λ] = [f; γ]`` solved by NumPy's least squares
    (minimum norm: redundant rows need no dropping)."""
    model, t_end = case
    sol = nc.simulate(model, 0.5 * t_end, rtol=1e-8)
    t, p, v = sol.t[-1], sol.p[-1], sol.v[-1]
    st = DOPRI5(model, t + 1.0, state=nc.State(t, p, v))
    a = st.rhs(t, np.concatenate([p, v]))[model.n_coords:]
    ws = Workspace(model, "dense")
    ws.constraints(t, p, v)
    f = ws.forces(t, p, v).copy()
    G = model.tables.csr(ws.G).toarray()
    M = model.mass_matrix.toarray()
    m = G.shape[0]
    K = np.block([[M, G.T], [G, np.zeros((m, m))]])
    reference = np.linalg.lstsq(K, np.concatenate([f, ws.gamma]), rcond=1e-12)[0]
    assert np.abs(a - reference[:model.n_coords]).max() <= 1e-8 * max(1.0, np.abs(a).max())


def test_outputs_are_the_dense_kkt_projection_of_the_interpolant():
    """Each output of the driven hexapod is its step's dense output projected: Newton
    with a fresh dense KKT solve ([[M, Gᵀ], [G, 0]], NumPy) on positions, then on
    velocities, to 1e-14, from the interpolant (Solution.sol, unprojected between steps).
    The core's projection (a factorization at the interpolant, simplified Newton to
    0.1 proj_tol) reaches the same point up to second order in the interpolant's
    distance from the manifold (~1e-7 here), and every row within proj_tol."""
    model = REGISTRY["hexapod"](scenario="driven").build()
    t_eval = np.linspace(0.0, 0.5, 26)[1:]
    sol = nc.simulate(model, 0.5, rtol=1e-6, t_eval=t_eval, dense_output=True)
    assert sol.constraint_residual.max() <= 1e-10 and sol.velocity_residual.max() <= 1e-10
    n, ws = model.n_coords, Workspace(model, "dense")
    M = model.mass_matrix.toarray()
    worst = 0.0
    for k, t in enumerate(sol.t):
        y = sol.sol(t)
        p, v = y[:n].copy(), y[n:].copy()
        for x, velocity in ((p, False), (v, True)):
            for _ in range(8):
                ws.constraints(t, p, v)
                r = ws.velocity_residual(v) if velocity else ws.g
                if np.abs(r).max() <= 1e-14:
                    break
                G = model.tables.csr(ws.G).toarray()
                K = np.block([[M, G.T], [G, np.zeros((G.shape[0],) * 2)]])
                x += np.linalg.solve(K, np.concatenate([np.zeros(n), -r]))[:n]
        assert np.abs(r).max() <= 1e-14
        worst = max(worst, np.abs(np.concatenate([p - sol.p[k], v - sol.v[k]])).max())
    assert worst <= 1e-10


@pytest.mark.parametrize("rtol", [1e-6, 1e-9])
def test_conservative_mechanisms_keep_their_energy(rtol):
    """Six-bar (gravity) and the passive hexapod (gravity and springs without
    damping, if any): the energy drifts by the tolerance's order only."""
    model = REGISTRY["six-bar"]().build()
    sol = nc.simulate(model, 2.0, rtol=rtol)
    assert sol.success
    assert np.ptp(sol.energy) <= 100 * rtol * np.abs(sol.energy).max()
    assert sol.constraint_residual.max() <= 1e-10 and sol.velocity_residual.max() <= 1e-10


# ------------------------------------------------------------- backends
@pytest.mark.parametrize("solver", ["dense", "superlu"])
def test_the_reference_backends_give_the_same_motion(solver):
    """The core's step and projection with the KKT systems factored and solved by a
    reference backend (called back): the same motion as with the block solver."""
    model = REGISTRY["chain"](n=4, loops=1).build()
    t_eval = np.linspace(0.0, 0.3, 16)
    block = nc.simulate(model, 0.3, rtol=1e-9, t_eval=t_eval)
    ref = nc.simulate(model, 0.3, rtol=1e-9, t_eval=t_eval, solver=solver)
    assert ref.success and ref.stats["solver"] == solver and not ref.stats["compiled"]
    assert np.abs(_states(block) - _states(ref)).max() <= 1e-7
    assert ref.constraint_residual.max() <= 1e-10


# ------------------------------------------------------------- callbacks
def test_an_exception_in_a_python_force_is_the_run_s_cause():
    class Broken(RuntimeError):
        pass

    def force(t, state):
        if t > 0.2:
            raise Broken("sensor offline")
        return (0.0, 0.0, 0.0)
    mech = REGISTRY["six-bar"]()
    mech.add_force(mech.bodies[1].name, point=(0, 0, 0), force=force)
    with pytest.raises(nc.IntegrationError) as err:
        nc.simulate(mech.build(), 1.0, t_eval=np.linspace(0, 1, 11))
    assert isinstance(err.value.__cause__, Broken) and "sensor offline" in str(err.value)
    sol = err.value.solution
    assert sol.t[-1] <= 0.2 and sol.t[-2] == pytest.approx(0.1) and not sol.success


def _crank(drive):
    """A bar on a driven revolute joint and a pendulum hung from its tip."""
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0))
    mech.add_body("crank", 1.0, com=(0.25, 0, 0), inertia=nc.box_inertia(1.0, (0.5, 0.05, 0.05)))
    mech.add_body("bob", 0.5, com=(0.5, -0.2, 0), inertia=nc.box_inertia(0.5, (0.05, 0.4, 0.05)),
                  origin=(0.5, 0, 0))
    mech.add_revolute(nc.GROUND, "crank", point=(0, 0, 0), axis=(0, 0, 1), drive=drive)
    mech.add_revolute("crank", "bob", point=(0.5, 0, 0), axis=(0, 0, 1))
    return mech.build()


def test_python_drive_laws_are_called_back_per_stage():
    """θ(t) = 0.4 sin(2π·1.5 t) as a declarative law (evaluated by the core) and as
    Python callables (called back at every stage time): the same motion."""
    w = 2 * np.pi * 1.5
    declared = _crank(nc.Drive.sinusoid(0.4, 1.5))
    python = _crank(nc.Drive(lambda t: 0.4 * np.sin(w * t), lambda t: 0.4 * w * np.cos(w * t),
                             lambda t: -0.4 * w * w * np.sin(w * t)))
    assert python.tables.laws is None and declared.tables.laws is not None
    t_eval = np.linspace(0.0, 1.0, 11)
    ref = nc.simulate(declared, 1.0, rtol=1e-10, t_eval=t_eval)
    sol = nc.simulate(python, 1.0, rtol=1e-10, t_eval=t_eval)
    assert ref.stats["compiled"] and not sol.stats["compiled"]
    assert np.abs(_states(sol) - _states(ref)).max() <= 1e-8
    assert sol.constraint_residual.max() <= 1e-10


# ------------------------------------------------------------- interface
#: the integrator's work and the outputs', counted apart (scipy's nfev pattern)
WORK = ("steps", "rhs", "factorizations", "projection_iterations")


@pytest.mark.parametrize("solver", ["block", "dense"])
def test_outputs_do_not_count_as_the_integrator_s_work(solver):
    model = REGISTRY["six-bar"]().build()
    steps = nc.simulate(model, 0.5, solver=solver, rtol=1e-7)
    outputs = nc.simulate(model, 0.5, solver=solver, rtol=1e-7, multipliers=True,
                          t_eval=np.linspace(0.0, 0.5, 31))
    for key in WORK:
        assert outputs.stats[key] == steps.stats[key], key
    assert steps.stats["output_rhs"] == steps.stats["output_projection_iterations"] == 0
    assert outputs.stats["output_rhs"] == 31
    assert outputs.stats["output_factorizations"] >= 31


@pytest.mark.parametrize("solver", ["block", "dense"])
def test_an_output_is_projected_in_one_newton_sweep(solver):
    """Factored at its own point, an output converges in one position and one
    velocity iteration (docs/method.md#17-integration) and meets proj_tol."""
    model = REGISTRY["six-bar"]().build()
    t_eval = np.linspace(0.0, 2.0, 101)[1:]          # t0 is recorded, not projected
    sol = nc.simulate(model, 2.0, solver=solver, rtol=1e-6, t_eval=t_eval)
    assert sol.success
    assert sol.stats["output_factorizations"] <= t_eval.size
    assert sol.stats["output_projection_iterations"] <= 2 * t_eval.size
    assert sol.constraint_residual.max() <= 1e-10


def test_stepper_object_takes_the_driver_s_steps(case):
    """One ``step()`` per call and ``simulate``'s chunks of the core take the same steps;
    each step's dense output starts at the previous state."""
    model, t_end = case
    chunked = nc.simulate(model, t_end, rtol=1e-8)
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
    assert np.array_equal(np.array(ts), chunked.t)
    assert np.array_equal(np.array(ys), _states(chunked))
    assert st.n_steps == chunked.stats["steps"]


@pytest.mark.parametrize("kw, phrase", [({"max_steps": 5}, r"maximum number of steps \(5\)"),
                                        ({"max_step": 1e-17}, "step size underflow")])
@pytest.mark.parametrize("solver", ["block", "dense"])
def test_max_steps_and_underflow(kw, phrase, solver):
    model = REGISTRY["six-bar"]().build()
    with pytest.raises(nc.IntegrationError, match=phrase) as info:
        nc.simulate(model, 1.0, solver=solver, **kw)
    sol = info.value.solution
    assert not sol.success and sol.t[0] == 0.0
    assert sol.constraint_residual.max() <= 1e-10


def test_multipliers_at_outputs_solve_the_kkt_system():
    """The records' multipliers: λ of ``[[M, Gᵀ], [G, 0]] [a; λ] = [f; γ]`` at each
    recorded state, checked through Gᵀ λ = f − M a with a dense solve's a."""
    model = REGISTRY["four-bar"]().build()
    t_eval = np.linspace(0.0, 0.5, 6)
    sol = nc.simulate(model, 0.5, rtol=1e-8, t_eval=t_eval, multipliers=True)
    ws = Workspace(model, "dense")
    M = model.mass_matrix.toarray()
    for t, p, v, lam in zip(sol.t, sol.p, sol.v, sol.lam):
        a, _ = ws.accelerations(t, p, v)
        G = model.tables.csr(ws.G).toarray()
        f = ws.forces(t, p, v)
        assert np.abs(G.T @ lam - (f - M @ a)).max() <= 1e-8 * max(1.0, np.abs(f).max())


def test_forward_calls_python_forces_back():
    """``nc.forward`` on a model with a torque given as a callable: the accelerations of
    the same constant torque built in, and of ``nc.accelerations`` (the workspace)."""
    models = []
    for torque in ((0.0, 0.0, 0.7), lambda t, state: (0.0, 0.0, 0.7)):
        mech = REGISTRY["six-bar"]()
        mech.add_torque(mech.bodies[1].name, torque)
        models.append(mech.build())
    state = nc.assemble(models[0]).state
    built_in, python = (nc.Data(m, state) for m in models)
    for model, data in zip(models, (built_in, python)):
        nc.forward(model, data)
    a, _, _ = nc.accelerations(models[1], state, solver="dense")
    assert np.abs(python.a - built_in.a).max() <= 1e-12 * np.abs(built_in.a).max()
    assert np.abs(python.a - a).max() <= 1e-9 * np.abs(a).max()


class CalledBackSpring:
    """A force class the core has no law for, with a potential (as a user's own force):
    a zero-length spring of stiffness ``k`` from the ground point ``anchor`` to the body
    point ``point`` (an affine expression), ``F = −k (r − anchor)`` at the point,
    ``V = ½ k |r − anchor|²`` — the law of an isotropic Cartesian spring from ground."""

    def __init__(self, point, anchor, k):
        self.point, self.anchor, self.k = point, np.asarray(anchor, float), k

    def apply(self, t, state, X, V, F):
        force = -self.k * (self.point.evaluate(X) - self.anchor)
        for slot, c in self.point.terms.items():
            F[slot] += c * force

    def potential(self, X):
        d = self.point.evaluate(X) - self.anchor
        return 0.5 * self.k * d @ d


def test_a_called_back_force_s_energy_is_recorded():
    """A conservative force without a law in the core (called back) on a hinged rod:
    the records' energy counts its potential, so the conservative run keeps it, as
    with the same Cartesian spring built in (its law in the core)."""
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0))
    mech.add_body("rod", 1.0, com=(0.5, 0, 0), inertia=nc.box_inertia(1.0, (1.0, 0.05, 0.05)))
    mech.add_revolute(nc.GROUND, "rod", point=(0, 0, 0), axis=(0, 0, 1))
    mech.add_cartesian_spring(nc.GROUND, "rod", point_a=(1.0, 0.5, 0), point_b=(1.0, 0, 0),
                              stiffness=40.0)
    built_in = mech.build()
    mech.forces[-1] = CalledBackSpring(built_in.point_expression("rod", (1.0, 0, 0)),
                                       (1.0, 0.5, 0), 40.0)
    called_back = mech.build()
    for model, compiled in ((called_back, False), (built_in, True)):
        sol = nc.simulate(model, 2.0, rtol=1e-10)
        assert sol.stats["compiled"] is compiled
        assert np.ptp(sol.energy) <= 1e-8 * np.abs(sol.energy).max()
        assert np.ptp(sol.energy) < 1e-3 * np.ptp([model.energy(p, 0 * v) for p, v in
                                                  zip(sol.p, sol.v)])
