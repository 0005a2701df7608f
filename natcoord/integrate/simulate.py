"""``simulate``: the one driver loop of every stepper (docs/method.md#17-integration).

A stepper (:class:`~natcoord.integrate.base.Stepper`: the compiled DOPRI5 of
:mod:`natcoord.integrate.stepper`, or Radau IIA) takes the steps; the driver
hands it the outputs wanted, stores the checked records it returns in chunks
(:meth:`~natcoord.integrate.base.Stepper.advance`), checks what the stepper did
not, reports progress and builds the :class:`Solution` — like
``scipy.integrate.solve_ivp`` over an ``OdeSolver``. Accepted steps are
projected onto the position and velocity constraints (Hairer & Wanner,
*Solving ODEs II*, VII.2) by the stepper.
"""
from __future__ import annotations

import sys
import time
import warnings
from functools import partial

import numpy as np

from ..model import validate
from ..dynamics.assembly import assemble
from ..dynamics.joint_space import JointTorques, joint_space
from ..dynamics.workspace import Workspace
from ..linalg.base import DROP_TOL, HOLD_TOL, MassSpreadError
from ..model.frozen import JOINT
from ..dynamics.projection import describe_rows, threshold
from ..util.resources import check_memory
from .base import (EPS_FLOOR, METHODS, OUTPUT_RECORD, PROJECTIONS, IntegrationError,
                   SimulationInterrupted)
from .radau import Radau
from .solution import ContinuousSolution, Records, Solution
from .stepper import DOPRI5
from ..dynamics.core_run import UNPIVOTABLE_JOINT

#: copies of every output held at once: the records of the run, the Solution's
#: arrays and a reserve while the latter are assembled from the former
OUTPUT_COPIES = 3
#: max_steps above this is no limit (the core counts steps in int64)
MAX_STEPS = 2**62
#: a newly dropped row this far (relative) from the span of the kept rows other
#: than drives depends on a drive: the mechanism locks
LOCKED = 1e-3


class _Abort(Exception):
    """A failure that a smaller step cannot cure; ends the run."""


class _Run:
    """One integration: state, workspace, counters, recorded outputs and the checks
    every projected state passes (docs/method.md#17-integration)."""

    def __init__(self, model, ws, proj_tol, projection, baumgarte, multipliers, drift_tol,
                 method="dopri5", dense=False):
        self.model, self.ws, self.n, self.method = model, ws, model.n_coords, method
        self.proj_tol, self.projection = proj_tol, projection
        self.baumgarte = baumgarte if projection == "baumgarte" else None
        self.multipliers, self.drift_tol = multipliers, drift_tol
        self.drive_rows = np.array([model.joint_rows[j][0] + joint.drive_row
                                    for j, joint in enumerate(model.joints)
                                    if joint.drive is not None], np.int64)
        self.records = Records(model.n_coords)
        self.t = self.y = None                 # last accepted state
        self.steps = self.rejected = 0
        self.drift = None                      # message once the residual exceeds drift_tol
        self.wall = None
        self.dropped_start = np.zeros(0, np.int64)
        self._unlocked = None
        self.stepper = None                    # the stepper object, if one drives the run
        self.sweep = None                      # the compiled sensitivity sweep, if any
        self.pieces = [] if dense else None    # the accepted steps' continuous extensions
        self.lost_multipliers = None           # time of the first record without its λ
        self.output_work = np.zeros(3, np.int64)

    def work(self):
        """Evaluations, KKT factorizations and projection iterations so far, outputs
        included (the stepper's and the records' multipliers')."""
        st = self.stepper
        work = np.array([self.ws.n_rhs, self.ws.n_factorizations, 0], np.int64)
        if st is not None:
            work += [st.n_rhs, st.n_factorizations, st.n_projection_iterations]
        return work

    def accept(self, piece):
        """Keep an accepted step's continuous extension (with ``dense_output=True``)."""
        if self.pieces is not None:
            self.pieces.append(piece)

    def check(self, t, p, v):
        """Stop when a drive row is dropped (the mechanism locks) or, with position and
        velocity projection, when any row, kept or dropped, exceeds the projection
        tolerance; with the weaker stabilizations note when the residual first
        exceeds ``drift_tol``."""
        ws, model = self.ws, self.model
        involved = self.locking()
        if involved is not None:
            raise _Abort(f"the mechanism locks at t = {t:.6g}: the constraint Jacobian "
                         f"loses rank at the drive of {_joints(model, self.drive_rows)}, so "
                         f"the prescribed motion cannot be followed; joints involved: "
                         f"{_joints(model, involved)}; rows dropped: "
                         f"{[model.row_labels[r] for r in ws.dropped]}")
        ws.constraints(t, p, v)
        g, gv = ws.g, ws.velocity_residual(v)
        if self.projection == "position+velocity":
            for name, r, tol in (("‖g‖∞", g, threshold(ws, p, self.proj_tol)),
                                 ("‖G v + g_t‖∞", gv, threshold(ws, v, self.proj_tol, ws.g_t))):
                rows = np.flatnonzero(np.abs(r) > tol)
                if rows.size:
                    raise _Abort(f"constraint violation at t = {t:.6g}: {name} = "
                                 f"{np.abs(r).max():.3e} > {tol:.1e} (proj_tol, or the "
                                 f"round-off floor if larger) in rows\n"
                                 f"{describe_rows(model, r, rows[:10])}\n(a row dropped "
                                 f"as redundant shows up here when it is not in fact "
                                 f"redundant, or near a singular pose, where the Jacobian "
                                 f"loses rank and a dropped row's residual can exceed a "
                                 f"tight proj_tol: IFToMM A02's four-bars stop so at "
                                 f"rtol <= 1e-10, and pass at rtol = 1e-9)")
        elif self.drift is None:
            size = max(np.abs(g).max(initial=0.0), np.abs(gv).max(initial=0.0))
            if size > self.drift_tol:
                self.drift = (f"projection={self.projection!r}: the constraint residual "
                              f"{size:.2e} exceeds drift_tol = {self.drift_tol:g} at "
                              f"t = {t:.6g}")
                warnings.warn(self.drift, RuntimeWarning, stacklevel=4)

    def locking(self):
        """Rows of the dependency that makes a drive redundant, or ``None``.

        A drive row dropped, or a row dropped since the start that is a
        combination of the kept rows only with a drive row's help (its distance
        to the span of the kept non-drive rows exceeds ``LOCKED`` times its norm).
        """
        if not self.drive_rows.size:
            return None
        dropped = self.ws.dropped
        new = np.setdiff1d(dropped, self.dropped_start)
        if not new.size or np.array_equal(dropped, self._unlocked):
            return None
        G = self.model.tables.csr(self.ws.G).toarray()
        kept = np.setdiff1d(np.arange(self.model.n_rows), dropped)
        free = np.setdiff1d(kept, self.drive_rows)
        for r in new:
            if r not in self.drive_rows:
                c = np.linalg.lstsq(G[free].T, G[r], rcond=None)[0]
                if np.linalg.norm(G[free].T @ c - G[r]) <= LOCKED * np.linalg.norm(G[r]):
                    continue
            c = np.linalg.lstsq(G[kept].T, G[r], rcond=None)[0]
            return np.append(kept[np.abs(c) > 1e-6 * np.abs(c).max(initial=0.0)], r)
        self._unlocked = dropped.copy()
        return None

    def observe(self, t, y):
        """``(energy, ‖g‖∞, ‖G v + g_t‖∞)`` at ``(t, y)``."""
        ws, p, v = self.ws, y[:self.n], y[self.n:]
        ws.constraints(t, p, v)
        return (self.model.energy(p, v), np.abs(ws.g).max(initial=0),
                np.abs(ws.velocity_residual(v)).max(initial=0))

    def multipliers_at(self, ts, ys):
        """``(λ, error)``: λ (k, m) at the records ``(ts, ys)``, or None without
        ``multipliers``; the workspace's factorizations count as the outputs' work and
        do not steer the steps. An exception (a force that fails at a record, Ctrl-C)
        is returned, not raised, with NaN from its record on: the records are stored
        before it ends the run."""
        if not self.multipliers:
            return None, None
        ws = self.ws
        dropped = ws.dropped.copy()
        before = self.work()
        lam = np.full((len(ts), self.model.n_rows), np.nan)
        error = None
        for k, (t, y) in enumerate(zip(ts, ys)):
            try:
                lam[k] = ws.accelerations(t, y[:self.n], y[self.n:], self.baumgarte)[1]
            except BaseException as exc:   # noqa: BLE001 - raised once the records are kept
                error = exc
                if self.lost_multipliers is None:
                    self.lost_multipliers = float(t)
                break
        self.output_work += self.work() - before
        ws.dropped = dropped
        return lam, error

    def record(self, t, y, observed=None):
        """Store one record ``(t, y)`` with energy, ``‖g‖∞``, ``‖G v + g_t‖∞``
        (``observed``, else evaluated here) and, if asked for, the multipliers."""
        self.store([t], np.reshape(y, (1, -1)), None if observed is None else [observed])

    def store(self, ts, ys, obs=None):
        """Store the records ``ts`` (k,), ``ys`` (k, 2 N) with ``obs`` (k, 3) (None:
        evaluated here)."""
        if not len(ts):
            return
        if obs is None:
            obs = [self.observe(t, y) for t, y in zip(ts, ys)]
        lam, error = self.multipliers_at(ts, ys)
        self.records.extend(ts, ys, obs, lam)
        if error is not None:
            raise error

    def stats(self):
        """Counters: the integrator's work, the outputs' (projections of ``t_eval``
        points, multipliers of the records) apart; ``wall_time`` from after the first
        evaluation (the symbolic phase and first-touch of the buffers excluded)."""
        st = self.stepper
        output = self.output_work + getattr(st, "output_work", 0)
        rhs, factorizations, projection_iterations = self.work() - output
        active = 0 if st is None else st.n_active_set_changes
        return {"method": self.method, "solver": self.ws.solver_name, "steps": self.steps,
                "rejected": self.rejected, "rhs": int(rhs),
                "factorizations": int(factorizations),
                "projection_iterations": int(projection_iterations),
                "active_set_changes": active,
                "output_rhs": int(output[0]), "output_factorizations": int(output[1]),
                "output_projection_iterations": int(output[2]),
                "compiled": st is not None and st.compiled,
                "jacobians": getattr(st, "n_jacobians", 0),
                "lu_decompositions": getattr(st, "n_lu", 0),
                "newton_iterations": getattr(st, "n_newton_iterations", 0),
                "wall_time": 0.0 if self.wall is None else time.perf_counter() - self.wall}

    def continuous(self):
        """The :class:`~natcoord.integrate.solution.ContinuousSolution` up to the last accepted
        step, or None without ``dense_output``."""
        if self.pieces is None:
            return None
        pieces = [piece for piece in self.pieces if piece.t_old < self.t]
        ts = [piece.t_old for piece in pieces] + [self.t]
        project = self.stepper.project if self.stepper is not None else None
        return ContinuousSolution(ts, pieces, self.y.copy(), project)

    def solution(self):
        return Solution(self.model, self.records, self.stats(), self.dropped_start,
                        self.drift is None, self.drift or "ok", sol=self.continuous(),
                        torques=self.ws.extra_forces)

    def partial(self, message, t_eval):
        """The solution so far after a failure: every output reached and, when that
        is not the last accepted state, the last accepted state as a final record."""
        last_is_step = False
        if self.t is not None and (not self.records.size or self.records.t_last < self.t):
            last_is_step = t_eval is not None
            try:
                self.record(self.t, self.y)
            except Exception as exc:          # noqa: BLE001 - the failure is reported
                if self.records.t_last != self.t:     # kept, without what failed
                    lam = np.full((1, self.model.n_rows), np.nan) if self.multipliers else None
                    self.records.extend([self.t], self.y.reshape(1, -1),
                                        np.full((1, 3), np.nan), lam)
                    what = "energy, residuals" + (" and multipliers" if lam is not None else "")
                    message += (f"; the {what} of the last accepted state (t = {self.t:g}) "
                                f"could not be evaluated (NaN): {exc}")
        if self.lost_multipliers is not None:
            message += (f"; the multipliers are NaN from t = {self.lost_multipliers:g} on "
                        f"(their evaluation failed there)")
        if last_is_step:
            message += (f"; the last record (t = {self.t:g}) is the last accepted step, "
                        f"not a t_eval point")
        return Solution(self.model, self.records, self.stats(), self.dropped_start, False,
                        message, last_record_is_step=last_is_step, sol=self.continuous(),
                        torques=self.ws.extra_forces)


def check_output_memory(model, count, what, hint):
    """``check_memory`` of ``count`` outputs of ``model``: each keeps p, v and its
    measures (the Solution's arrays), :data:`OUTPUT_COPIES` times over."""
    check_memory(count * (2 * model.n_coords + 8) * 8 * OUTPUT_COPIES,
                 f"{what} ({model.n_coords} coordinates each)", hint)


def _joints(model, rows):
    return ", ".join(sorted({repr(model.joints[model.row_owner[r]].name) for r in rows
                             if model.row_kind[r] == JOINT})) or "none"


def simulate(model, t_end, rtol=1e-6, atol=None, proj_tol=1e-10, t_eval=None, solver=None,
             projection="position+velocity", initial_state=None, t0=None, first_step=None,
             max_step=np.inf, baumgarte=(10.0, 10.0), multipliers=False, progress=False,
             max_steps=1_000_000, drop_tol=DROP_TOL, hold_tol=HOLD_TOL, drift_tol=1e-6,
             method="dopri5", dense_output=False, u=None, actuated=None, inputs=True,
             _sweep=None):
    """Integrate the equations of motion from ``t0`` to ``t_end`` (docs/method.md#17-integration).

    ``method``: ``"dopri5"`` (default), the explicit Dormand–Prince 5(4) pair of
    the compiled core, for every model and solver (forces and drive laws given as
    Python callables and the reference solvers are called back from it,
    ``stats["compiled"]`` False); or ``"radau"``, the implicit Radau IIA of
    order 5 (:class:`natcoord.integrate.radau.Radau`, docs/method.md#110-stiff-mechanisms-radau-iia)
    for stiff mechanisms (stiff springs, light bodies on stiff supports), with
    the same projection, checks, outputs and :class:`Solution`; its
    ``stats`` add ``jacobians``, ``lu_decompositions`` and ``newton_iterations``.

    ``u``: joint torques, a callable ``u(t, q, qd)`` of the joint positions and
    rates (:func:`~natcoord.joint_space`'s order) returning the forces of the
    ``actuated`` joints (names; default every joint with DOF), one per DOF in
    ``actuated``'s order: N·m about a revolute axis (on body b, the opposite on a),
    N along a prismatic axis (:class:`~natcoord.dynamics.joint_space.JointTorques`);
    called back from the core at every stage (Radau's Jacobian differentiates it by
    central differences, as a force written in Python). A result of the
    wrong size raises ``ValueError`` naming the joints (at ``t0`` already, before
    integrating); NaN or inf is a failed evaluation, as for a force. Without ``u``
    the model's declared inputs (``model.inputs``: ``Mechanism.add_input``, a model
    file's ``inputs``) are applied; an explicit ``u`` replaces them, and
    ``inputs=False`` runs without them. ``u`` may also be a ready
    :class:`~natcoord.dynamics.joint_space.JointTorques`, which names its joints
    itself — as :func:`~natcoord.actuator_torques` returns for an MJCF model's
    MuJoCo actuators at given controls.

    ``rtol, atol``: local error tolerances of the RK pair (``atol`` defaults to
    ``rtol``: coordinates are O(1) in SI units; ``rtol ≥ 100 ε``); ``proj_tol``:
    tolerance of ``‖g‖∞`` and ``‖G v + g_t‖∞`` after projection, raised to the
    round-off floor ``10 ε max(|G| |x|)`` where that is larger (fast bodies at a
    tight ``proj_tol``, see :func:`~natcoord.dynamics.projection.threshold`); ``t_eval``:
    output times (default: every step); ``projection``: one of ``PROJECTIONS``;
    ``baumgarte=(α, β)``: stabilization ``γ − 2α ġ − β² g`` for
    ``projection="baumgarte"``; ``drop_tol``/``hold_tol``: relative pivot
    thresholds of constraint partitioning, ``0 < drop_tol ≤ hold_tol < 1``
    (``hold_tol=0`` switches its hysteresis off, see
    :class:`~natcoord.linalg.KKTSolver`). ``solver``: the KKT backend
    (``"block"``, ``"dense"``, ``"superlu"``, ``"cholmod"``), for the run and
    for the assembly of its initial state; None: ``"block"``, or ``"superlu"``
    (pivoted LU) where the fixed-order block elimination cannot resolve the
    spread of the body masses: from the start when they span more than it is
    trusted with, and by running again (with a ``RuntimeWarning``) when it
    meets a joint row it cannot pivot (a light body carrying a heavy one near a
    singular pose); a solver given by name is kept, and such a run fails.

    ``initial_state``: a consistent :class:`State` (default
    ``assemble(model, t=t0).state``); its residuals must be within ``proj_tol``,
    otherwise ``ValueError`` (make one with :func:`~natcoord.assemble`).
    ``t0`` defaults to ``initial_state.t`` (or 0) and must agree with it.

    Checks: with ``projection="position+velocity"`` every projected state
    (steps and outputs) must satisfy *all* rows, dropped ones included, within
    the projection tolerance; otherwise :class:`IntegrationError` names the
    rows. With the weaker stabilizations the run continues past
    ``‖g‖∞`` or ``‖G v + g_t‖∞ > drift_tol`` but warns (``RuntimeWarning``) and
    reports ``success=False`` with the time it happened. A drive row dropped as
    redundant (the mechanism locks) is an :class:`IntegrationError`.

    Returns a :class:`Solution`. Every failure, an exception raised by a force
    or drive function included, raises :class:`IntegrationError` chained to its
    cause, and Ctrl-C raises :class:`SimulationInterrupted` (a
    ``KeyboardInterrupt``); both carry on ``.solution`` every output reached
    and the last accepted state (``success=False``; with ``t_eval`` the last
    accepted step is appended, ``solution.last_record_is_step``).
    ``stats["wall_time"]`` excludes the first evaluation (compilation).

    ``stats`` counts the integrator's work (as scipy's ``nfev``): ``steps``,
    ``rejected``, ``rhs`` (evaluations of ``(v, a)``), ``factorizations`` (of the
    KKT matrix), ``projection_iterations``, ``active_set_changes``; the work spent
    on outputs (the projection of ``t_eval`` points, the multipliers of the
    records) apart in ``output_rhs``, ``output_factorizations`` and
    ``output_projection_iterations``.

    ``dense_output=True``: ``Solution.sol`` is a callable ``sol(t)`` (as
    ``solve_ivp``'s) giving ``y = (p, v)``, (2 N,) at a scalar ``t`` or (2 N, k) at
    k times within the integrated interval (else ``ValueError``), from every
    accepted step's own interpolant (DOPRI5's order-4 dense output, Radau's
    collocation polynomial): the recorded state at the step times, *unprojected*
    between them (off the constraints by the interpolation error);
    ``sol(t, project=True)`` projects each value as ``t_eval`` outputs are. It
    stores every step's interpolant data (DOPRI5: 10 × 2 N floats per step),
    so it is off by default. A failed run's ``.solution.sol`` reaches its last
    accepted step.
    """
    call = dict(locals())                # the arguments as given, for a run again (solver)
    validate.model(model)
    rtol, atol, proj_tol = validate.tolerances(rtol, rtol if atol is None else atol, proj_tol)
    validate.choice("projection", projection, PROJECTIONS)
    validate.choice("method", method, METHODS)
    baumgarte = validate.baumgarte(baumgarte)
    drift_tol = validate.positive("drift_tol", drift_tol, finite=False)
    drop_tol, hold_tol = validate.partitioning(drop_tol, hold_tol)
    first_step, max_step, max_steps = validate.steps(first_step, max_step, max_steps)
    if initial_state is not None:
        initial_state = validate.state(model, initial_state, "initial_state")
        if t0 is not None and validate.finite("t0", t0) != initial_state.t:
            raise ValueError(f"t0 ({t0!r}) differs from initial_state.t "
                             f"({initial_state.t!r}); leave t0 out to start at the state's time")
    t0 = initial_state.t if initial_state is not None else 0.0 if t0 is None else t0
    t0, t_end = validate.interval(t0, t_end)
    shortest = EPS_FLOOR * max(abs(t0), 1.0)      # the steppers' step-size floor at t0
    if t_end - t0 < shortest:
        raise ValueError(f"t_end - t0 = {t_end - t0:.3g} s is shorter than the smallest step "
                         f"at t0 = {t0:g} ({shortest:.3g} s = 10 machine epsilons × "
                         f"max(|t0|, 1)): integrate over a longer interval, or measure time "
                         f"from nearer 0")
    max_steps = min(max_steps, MAX_STEPS)
    t_eval = validate.output_times(t_eval, t0, t_end)
    if t_eval is not None:
        check_output_memory(model, t_eval.size, f"t_eval with {t_eval.size} points",
                            "ask for fewer output points, or for sol.sol (dense_output=True) "
                            "and evaluate it where needed")
    if u is None and actuated is not None:
        raise ValueError("actuated names the joints of u's torques: pass u=callable too")
    if isinstance(u, JointTorques) and actuated is not None:
        raise ValueError(f"u is a JointTorques, which names its joints "
                         f"({list(u.names)}): leave actuated out")
    if isinstance(u, JointTorques) and u.js is not joint_space(model):
        raise ValueError(f"u: these joint torques were made for another model than "
                         f"{model.name!r}; make them from the model you simulate")
    declared = JointTorques.of_inputs(model) if u is None and inputs else None
    torques = (u,) if isinstance(u, JointTorques) else \
        (JointTorques(model, u, actuated),) if u is not None else \
        (declared,) if declared is not None else ()
    ws = _workspace(model, solver, drop_tol, hold_tol)
    ws.extra_forces = torques
    if initial_state is None:
        # with the run's solver: block (the cached default assembly) refuses masses that
        # span more than 1e12, for which superlu or dense was chosen
        initial_state = assemble(model, t=t0, solver=None if ws.solver_name == "block"
                                 else ws.solver_name).state
    else:
        _consistent(ws, initial_state, proj_tol)
    run = _Run(model, ws, proj_tol, projection, baumgarte, multipliers, drift_tol, method,
               bool(dense_output))
    # _sweep: natcoord.analysis.sensitivity's derivative sweep, which runs the compiled stepper's
    # chunks itself to differentiate the steps as they are taken (not a user option)
    run.sweep = _sweep
    run.t, run.y = t0, np.concatenate([initial_state.p, initial_state.v])
    for force in torques:                  # u's result checked before the run
        js = force.js
        force.torques(t0, js.positions(initial_state.p),
                      js.velocities(initial_state.p, initial_state.v))
    try:
        options = dict(state=initial_state, first_step=first_step, max_step=max_step,
                       projection=projection, baumgarte=baumgarte, drop_tol=drop_tol,
                       hold_tol=hold_tol)
        # the workspace's solver: one symbolic phase per run
        if method == "radau":
            run.stepper = Radau(model, t_end, rtol, atol, proj_tol, solver=ws.solver,
                                forces=torques, **options)
        else:
            run.stepper = DOPRI5(model, t_end, rtol, atol, proj_tol, solver=ws.solver,
                                 forces=torques, **options)
        run.dropped_start = run.stepper.dropped.copy()
        _check_step(run, run.t, run.y)
        run.wall = time.perf_counter()
        if _sweep is not None:
            _sweep.start(run.t, run.y)
        _drive(run, t_end, t_eval, max_steps, progress)
    except KeyboardInterrupt as exc:
        message = f"interrupted at t = {run.t:g}"
        raise SimulationInterrupted(f"{message} (partial solution on .solution)",
                                    run.partial(message, t_eval)) from exc
    except Exception as exc:
        message = str(exc) if isinstance(exc, _Abort) else \
            f"{type(exc).__name__} after t = {run.t:.6g}: {exc}"
        if solver is None and _sweep is None and _cannot_pivot(run, exc):
            warnings.warn(f"{message}; running again with solver='superlu' (pivoted LU; "
                          f"pass it to skip the block attempt)", RuntimeWarning, stacklevel=2)
            return simulate(**{**call, "solver": "superlu"})
        sol = run.partial(message, t_eval)
        raise IntegrationError(f"{message} (partial solution up to t = {run.t:g} kept on "
                               f"the exception's .solution)", sol) from exc
    return run.solution()


def _workspace(model, solver, drop_tol, hold_tol):
    """The run's :class:`Workspace`; ``solver=None``: block, or superlu when the body
    masses span more than block resolves (:class:`~natcoord.linalg.base.MassSpreadError`)."""
    try:
        return Workspace(model, solver, drop_tol, hold_tol)
    except MassSpreadError:
        if solver is not None:
            raise
        return Workspace(model, "superlu", drop_tol, hold_tol)


def _cannot_pivot(run, exc):
    """True if the run failed because the block elimination could not pivot a joint
    row for the spread of the masses (the compiled stepper's status, or a
    :class:`~natcoord.linalg.base.MassSpreadError` behind the failure)."""
    if getattr(run.stepper, "failure", None) == UNPIVOTABLE_JOINT:
        return True
    while exc is not None:
        if isinstance(exc, MassSpreadError):
            return True
        exc = exc.__cause__
    return False


def _consistent(ws, state, proj_tol):
    """Raise ``ValueError`` unless ``state`` satisfies every constraint row within
    ``proj_tol`` (or its round-off floor)."""
    ws.constraints(state.t, state.p, state.v)
    g, gv = np.abs(ws.g).max(initial=0.0), np.abs(ws.velocity_residual(state.v)).max(initial=0.0)
    tol_p = threshold(ws, state.p, proj_tol)
    tol_v = threshold(ws, state.v, proj_tol, ws.g_t)
    if g > tol_p or gv > tol_v:
        raise ValueError(f"initial_state violates the constraints: ‖g‖∞ = {g:.3e}, "
                         f"‖G v + g_t‖∞ = {gv:.3e} (proj_tol = {proj_tol:.1e}); assemble "
                         f"consistent values with nc.assemble(model, p=..., v=..., t=...)")


def _check_step(run, t, y):
    """:meth:`_Run.check` of a state a stepper object produced: the workspace
    takes the stepper's dropped set (and, for the locking test, ``G`` at the state)."""
    p, v = y[:run.n], y[run.n:]
    run.ws.dropped = run.stepper.dropped
    if run.drive_rows.size:
        run.ws.constraints(t, p, v)
    run.check(t, p, v)


def _drive(run, t_end, t_eval, max_steps, progress):
    """The driver loop of every stepper ``run.stepper``: chunks of accepted steps with
    their records (:meth:`~natcoord.integrate.base.Stepper.advance`: in the core for
    DOPRI5 and Radau, which check each state there; from ``step()`` for a stepper
    without an ``advance`` of its own, each state checked by :func:`_check_step`),
    stored as they come; then what a chunk stopped for (the end, a full buffer, a
    state that failed the core's check, a failure, an exception) and progress."""
    stepper = run.stepper
    check = partial(_check_step, run)
    next_out = 0
    if t_eval is None or t_eval[0] == run.t:
        run.record(run.t, run.y)
        next_out = 1 if t_eval is not None else 0
    last_report = time.perf_counter()
    while stepper.status == "running":
        budget = max_steps - run.steps - run.rejected
        if budget <= 0:
            raise _Abort(f"maximum number of steps ({max_steps}) reached at t = {run.t:g}")
        drift_tol = np.inf if run.drift is not None else run.drift_tol
        # the outputs left in one chunk (the core writes them in place), else 256 steps
        capacity = 256 if t_eval is None else max(t_eval.size - next_out, 1)
        chunk = stepper.advance(t_eval, next_out, budget, drift_tol, capacity,
                                dense=run.pieces is not None, sweep=run.sweep, check=check)
        for piece in chunk.pieces:
            run.accept(piece)
        run.rejected += chunk.rejected
        run.steps += chunk.steps
        run.output_work += chunk.output_work
        next_out = chunk.next_out
        if chunk.t.size:
            try:
                run.store(chunk.t, chunk.y, chunk.obs)
            except BaseException:
                if run.records.t_last == chunk.t[-1]:    # all kept, their λ failed
                    run.t, run.y = chunk.last
                raise
        run.t, run.y = chunk.last
        if chunk.error is not None:
            raise chunk.error
        if chunk.status == "failed":
            if run.steps + run.rejected >= max_steps:
                raise _Abort(f"maximum number of steps ({max_steps}) reached at t = {run.t:g}")
            raise _Abort(stepper.message)
        if chunk.failed is not None:             # raises, or warns of the drift once
            t, y, kind = chunk.failed
            _check_step(run, t, y)
            if kind == OUTPUT_RECORD:
                next_out += 1
            else:
                run.steps += 1
                run.t, run.y = t, y
            if kind == OUTPUT_RECORD or t_eval is None:
                run.record(t, y, stepper.observe(t, y))
        if progress and time.perf_counter() - last_report > 1.0:
            last_report = time.perf_counter()
            print(f"  t = {run.t:.4g} / {t_end:g} s, {run.steps} steps, {run.rejected} "
                  f"rejected", file=sys.stderr, flush=True)
