"""Spurious or unclear integrator failures (issue 24, item 4), each fixed at its root.

1. Dense outputs near a singular pose: every output is projected from the
   dropped set of the step it lies in, not from the previous output's, so a
   row dropped at the singular instant is not held dropped (hysteresis) at the
   outputs after it, and outputs never change the steps.
2. The compiled stepper's failures: factorization codes are translated into
   step statuses (an unpivotable joint's node was read as a body: IndexError),
   every status has a message naming its body or joint, and with the default
   solver a run the block elimination cannot pivot runs again with superlu.
3. ``solver=`` holds for the assembly of the initial state too.
4. A millimetre mechanism at tight tolerances: the projection's convergence
   target scales with the mechanism's size, so the dropped (redundant) row of
   the six-bar stays within ``proj_tol``.
"""
import warnings

import numpy as np
import pytest

import natcoord as nc
from natcoord.core import engine
from natcoord.dynamics import core_run as cc
from natcoord.integrate.stepper import DOPRI5
from natcoord.linalg.base import MassSpreadError
from natcoord.model.body import rod_inertia

PROJ_TOL = 1e-10          # simulate's default


def _within_tolerance(sol, tol=PROJ_TOL):
    assert sol.success, sol.message
    assert sol.constraint_residual.max() <= tol
    assert sol.velocity_residual.max() <= tol


# ------------------------------------------------- 1. dense outputs, singular pose
@pytest.fixture(scope="module")
def four_bar():
    return nc.models.four_bar().build()


def _around_the_singular_pose(n):
    """The cranks pass horizontal (one more redundant row) at t ≈ 0.70848."""
    return np.r_[0.0, np.linspace(0.708, 0.709, n), 1.0]


@pytest.mark.parametrize("solver", ["block", "dense"])
def test_dense_outputs_through_the_singular_pose(four_bar, solver):
    """Before: 1001 outputs failed the check at t = 0.70852 (‖G v + g_t‖ 1.05e-10 in
    the row 'top1.1: x', dropped at an earlier output and held); 101 passed. With the
    core's KKT solve and with a reference backend's (called back)."""
    sparse = nc.simulate(four_bar, 1.0, t_eval=_around_the_singular_pose(101), solver=solver)
    dense = nc.simulate(four_bar, 1.0, t_eval=_around_the_singular_pose(1001), solver=solver)
    steps_only = nc.simulate(four_bar, 1.0, solver=solver)
    _within_tolerance(dense)
    assert dense.stats["compiled"] is (solver == "block")
    # outputs do not steer the integrator: the same steps as without t_eval
    assert dense.stats["steps"] == sparse.stats["steps"] == steps_only.stats["steps"]
    assert np.array_equal(dense.p[-1], steps_only.p[-1])
    # each output depends on its own time only: equal at the common times
    common = np.searchsorted(dense.t, sparse.t)
    assert np.allclose(dense.t[common], sparse.t, rtol=0, atol=1e-15)
    assert np.abs(dense.p[common] - sparse.p).max() <= 1e-14
    assert np.abs(dense.v[common] - sparse.v).max() <= 1e-14
    # energy across the millisecond: within the step's interpolation error (1.3e-7
    # relative at rtol=1e-6), smooth from output to output (no jump at the pose)
    energy = dense.energy[(dense.t >= 0.708) & (dense.t <= 0.709)]
    assert np.ptp(energy) <= 1e-6 * abs(dense.energy[0])
    assert np.abs(np.diff(energy, 2)).max() <= 1e-10 * abs(dense.energy[0])


def test_dense_outputs_through_the_singular_pose_with_radau(four_bar):
    sparse = nc.simulate(four_bar, 1.0, method="radau", t_eval=_around_the_singular_pose(101))
    dense = nc.simulate(four_bar, 1.0, method="radau", t_eval=_around_the_singular_pose(1001))
    _within_tolerance(dense)
    common = np.searchsorted(dense.t, sparse.t)
    assert np.abs(dense.p[common] - sparse.p).max() <= 1e-14
    assert dense.stats["steps"] == sparse.stats["steps"]


# ------------------------------------------------- 2. the stepper's failures
def light_crank_four_bar(crank_mass=1e-12, coupler_mass=1.0):
    """The four-bar with cranks of ``crank_mass`` carrying a coupler of ``coupler_mass``."""
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0), name="light-crank four-bar")
    z = (0.0, 0.0, 1.0)

    def rod(name, start, along, mass):
        e1 = np.asarray(along, float)
        mech.add_body(name, mass=mass, com=np.add(start, 0.5 * e1),
                      inertia=rod_inertia(mass, 1.0, 0.05, axis=0), origin=start,
                      axes=np.column_stack([e1, np.cross(z, e1), z]))

    rod("crank0", (0, 0, 0), (0, 1, 0), crank_mass)
    rod("crank1", (1, 0, 0), (0, 1, 0), crank_mass)
    rod("coupler", (0, 1, 0), (1, 0, 0), coupler_mass)
    mech.add_revolute(nc.GROUND, "crank0", point=(0, 0, 0), axis=z, name="ground0")
    mech.add_revolute(nc.GROUND, "crank1", point=(1, 0, 0), axis=z, name="ground1")
    mech.add_revolute("crank0", "coupler", point=(0, 1, 0), axis=z, name="top0")
    mech.add_revolute("coupler", "crank1", point=(1, 1, 0), axis=z, name="top1")
    for crank in ("crank0", "crank1"):
        mech.set_initial(crank, angular_velocity=(0, 0, -1))
    mech.set_initial("coupler", velocity=(1, 0, 0))
    return mech.build()


#: every status of natcoord.dynamics.core_run, and −1 (step-size underflow)
STATUSES = ["ACCEPTED", "REJECTED", "SINGULAR_FRAME", "NOT_POSITIVE_DEFINITE", "NON_FINITE",
            "POSITION_PROJECTION", "VELOCITY_PROJECTION", "MAX_ATTEMPTS", "CHECK", "FULL",
            "FINISHED", "UNPIVOTABLE_JOINT"]


def test_every_status_has_a_readable_message():
    model = light_crank_four_bar()
    stepper = DOPRI5(model, 1.0)
    structure = stepper.solver.structure
    codes = [getattr(cc, name) for name in STATUSES] + [-1]
    assert sorted(codes[:-1]) == list(range(len(STATUSES)))      # none left out
    counts = stepper._S.counts
    # where the factorization failed: body 2 (a body index), the node of body 2,
    # the node of joint 3
    where = {cc.SINGULAR_FRAME: 2, cc.NOT_POSITIVE_DEFINITE: structure.body_node[2],
             cc.UNPIVOTABLE_JOINT: structure.joint_node[3]}
    names = {cc.SINGULAR_FRAME: "'coupler'", cc.NOT_POSITIVE_DEFINITE: "'coupler'",
             cc.UNPIVOTABLE_JOINT: "'top1'"}
    for code in codes:
        counts[cc.FAIL_WHERE] = where.get(code, 0)
        message = stepper.status_message(code, 0.25)
        assert isinstance(message, str) and len(message) > 15, (code, message)
        assert "status" not in message.split()[0], message
        if code in names:
            assert names[code] in message, (code, message)
    assert "masses span" in stepper.status_message(cc.UNPIVOTABLE_JOINT, 0.0)
    assert "underflow" in stepper.status_message(-1, 0.25)


def test_a_failed_factorization_is_a_step_status():
    """Before: the factorization's own codes (1 singular frame, 2 body pivot, 3 joint)
    went out as step statuses (1 REJECTED, 2 SINGULAR_FRAME, 3 NOT_POSITIVE_DEFINITE)."""
    stepper = DOPRI5(light_crank_four_bar(), 1.0)
    S = stepper._S
    S.G[:] = 0.0                                   # every frame singular: body 0 fails
    assert engine.factor(*stepper._packed[1:]) == cc.SINGULAR_FRAME  # dopri5.c's nc_factor
    assert "body 'crank0': singular frame" in stepper.status_message(cc.SINGULAR_FRAME, 0.0)


def test_a_joint_the_block_solver_cannot_pivot_is_named():
    """Before: IntegrationError wrapping IndexError (the joint's node read as a body)."""
    model = light_crank_four_bar()
    with pytest.raises(nc.IntegrationError) as failure:
        nc.simulate(model, 1.0, solver="block")
    message = str(failure.value)
    assert "joint 'top1'" in message and "masses span a factor 1.0e+12" in message
    assert "solver='superlu'" in message
    assert not isinstance(failure.value.__cause__, IndexError)
    partial = failure.value.solution
    assert 0.7 < partial.t[-1] < 0.8 and partial.constraint_residual.max() <= PROJ_TOL


def test_the_default_solver_runs_it_again_with_pivoted_lu():
    """The light cranks pass the singular pose with the default solver, as with dense."""
    model = light_crank_four_bar()
    t_eval = np.linspace(0.0, 1.0, 21)
    with pytest.warns(RuntimeWarning, match="running again with solver='superlu'"):
        sol = nc.simulate(model, 1.0, t_eval=t_eval)
    reference = nc.simulate(model, 1.0, t_eval=t_eval, solver="dense")
    assert sol.stats["solver"] == "superlu"
    _within_tolerance(sol)
    assert np.abs(sol.p - reference.p).max() <= 1e-9
    assert np.abs(sol.v - reference.v).max() <= 1e-8
    # the energy the coupler carries through the pose matches the reference's
    assert np.abs(sol.energy - reference.energy).max() <= 1e-9 * abs(reference.energy[0])
    assert abs(sol.energy[-1] - sol.energy[0]) <= 2e-5 * abs(sol.energy[0])


def test_a_pivotable_spread_keeps_the_compiled_block_solver():
    """No needless fallback: cranks of 1e-3 kg run on the compiled block path."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sol = nc.simulate(light_crank_four_bar(1e-3), 1.0)
    assert sol.stats["solver"] == "block" and sol.stats["compiled"]
    _within_tolerance(sol)


# ------------------------------------------------- 3. solver= in the assembly
@pytest.fixture(scope="module")
def spread_six_bar():
    """Masses spanning 1e24: beyond the block solver (1e12)."""
    return nc.models.six_bar(mass=[1e-12, 1, 1e12, 1, 1]).build()


def test_the_assembly_uses_the_run_s_solver(spread_six_bar):
    """Before: simulate(..., solver='superlu') failed in the assembly with "block: the
    body masses span a factor 1.0e+24 … use solver='superlu'"."""
    runs = {name: nc.simulate(spread_six_bar, 1.0, solver=name, t_eval=np.linspace(0, 1, 11))
            for name in ("superlu", "dense")}
    for name, sol in runs.items():
        assert sol.stats["solver"] == name
        _within_tolerance(sol)
        # released at rest: energy conserved, relative to the 1e12 kg rod's
        assert np.ptp(sol.energy) <= 5e-6 * np.abs(sol.energy).max()
        # the one redundant row of Bricard's loop, as at the assembly with that solver
        assert len(sol.dropped) == nc.assemble(spread_six_bar, solver=name).dropped.size == 1
    assert np.abs(runs["superlu"].p - runs["dense"].p).max() <= 1e-9


def test_the_default_solver_chooses_pivoted_lu_for_such_masses(spread_six_bar):
    sol = nc.simulate(spread_six_bar, 0.2)
    assert sol.stats["solver"] == "superlu"
    _within_tolerance(sol)


def test_block_by_name_refuses_such_masses_clearly(spread_six_bar):
    with pytest.raises(MassSpreadError, match=r"masses span a factor 1\.0e\+24.*superlu"):
        nc.simulate(spread_six_bar, 1.0, solver="block")


# ------------------------------------------------- 4. a millimetre six-bar
LENGTH = 1e-3


@pytest.fixture(scope="module")
def tiny_six_bar():
    return nc.models.six_bar(length=LENGTH, section=0.1 * LENGTH).build()


@pytest.mark.parametrize("rtol, solver", [(1e-6, "block"), (1e-8, "block"), (1e-10, "block"),
                                          (1e-6, "dense")])
def test_a_millimetre_six_bar_at_tight_tolerances(tiny_six_bar, rtol, solver):
    """Before: rtol=1e-10 failed at t = 0.01967 on the dropped row 'joint4: axis·h2'
    (‖G v + g_t‖ 1.03e-10): its kept rows were held to 1e-11 m, which is 1e-8 of the
    mechanism, and the dropped axis row is a combination of them with weights ~1/L.
    The dense backend (called back; ~1 ms per factorization in Python) at the
    loosest tolerance only: 2900 steps at 1e-10 take it 16 s."""
    sol = nc.simulate(tiny_six_bar, 1.0, rtol=rtol, solver=solver)
    _within_tolerance(sol)
    assert len(sol.dropped) == 1                   # Bricard's loop: one redundant row
    assert np.ptp(sol.energy) <= 100 * rtol * np.abs(sol.energy).max()


def test_the_millimetre_six_bar_is_a_scaled_copy_of_the_metre_one(tiny_six_bar):
    """Same section ratio, gravity only: positions scale by L, time by √L (axes equal)."""
    tau = np.linspace(0.0, 2.0, 9)
    tiny = nc.simulate(tiny_six_bar, 2.0 * np.sqrt(LENGTH), rtol=1e-10,
                       t_eval=np.sqrt(LENGTH) * tau)
    unit = nc.simulate(nc.models.six_bar().build(), 2.0, rtol=1e-10, t_eval=tau)
    _within_tolerance(tiny)
    X, Y = tiny.p.reshape(tau.size, -1, 3), unit.p.reshape(tau.size, -1, 3)
    origin = np.arange(X.shape[1]) % 4 == 0
    assert np.abs(X[:, origin] / LENGTH - Y[:, origin]).max() <= 1e-8
    assert np.abs(X[:, ~origin] - Y[:, ~origin]).max() <= 1e-8
