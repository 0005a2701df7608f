"""The DOPRI5 stepper: natcoord's one Dormand–Prince 5(4) integrator (``scipy.integrate.OdeSolver``-like).

:class:`DOPRI5` integrates the index-1 descriptor form of docs/method.md#15-descriptor-form
with the Dormand–Prince 5(4) pair, PI control and projection of
:func:`natcoord.integrate.simulate.simulate`: the stages, the error estimate, the
controller, the projection of an accepted step, the dense output, the outputs and
their checks run in the compiled core (natcoord/core/src/dopri5.c, set up by
:mod:`natcoord.dynamics.core_run`), so Python sees one call per step
(:meth:`DOPRI5.step`) or one call per block of steps (:meth:`DOPRI5.advance`).

Every model and every KKT backend runs it. What the core does not compile is
called back from it through :class:`~natcoord.dynamics.core_run.Callbacks` (``nc_hooks``,
natcoord/core/src/dopri5.h), as MuJoCo calls its ``mjcb_*`` hooks: forces and
torques given as Python callables (and force classes without a law in the core)
at every stage, drive laws given as callables at every stage time, and the
factorization and solve of the KKT system by a reference backend (``dense``,
``superlu``, ``cholmod``) — the step, the controller and the projection rule
stay the core's. A callback costs a Python call per stage; nothing is dropped.

    stepper = DOPRI5(model, t_bound=10.0, rtol=1e-8)
    while stepper.status == "running":
        record = stepper.step()
        y = stepper.y                      # (p, v) after projection
        interpolant = stepper.dense_output()
"""
from __future__ import annotations

import numpy as np

from ..core import engine
from ..dynamics import core_run as cc
from ..dynamics.assembly import assemble
from ..dynamics.core_run import CoreRun
from .base import (EPS_FLOOR, OUTPUT_RECORD, PROJECTIONS, STEP_RECORD, Chunk, StepRecord,
                   Stepper, initial_step)
from .dormand_prince import DenseOutput
from ..linalg import make_solver
from ..linalg.base import DROP_TOL, HOLD_TOL, KKTSolver


#: steps whose dense output one advance() keeps at most (dense=True)
SEGMENTS = 256
#: records allocated at once (advance() writes them in place, chunk after chunk)
RECORD_BLOCK = 1024


def _control(index, doc=None):
    """A read-only float of the compiled control vector ``ctrl[index]``."""
    return property(lambda self: float(self._S.ctrl[index]), doc=doc)


def _counter(index):
    """A read-only counter ``counts[index]`` of the compiled buffers."""
    return property(lambda self: int(self._S.counts[index]))


class CoreStepper(Stepper):
    """What the core's two steppers (:class:`DOPRI5`, :class:`~natcoord.integrate.radau.Radau`)
    share: the core's run of ``model`` with the KKT backend ``solver``
    (:class:`~natcoord.dynamics.core_run.CoreRun`: buffers, and the callbacks of what
    the core does not compile); :meth:`advance`, the core's one chunked loop (``nc_advance_with``), each stepper handing it its own call
    (``_advance``), segments (``_make_segments``, ``_piece``) and previous state
    (``_previous``); the evaluations of ``F``, of
    an output's projection and of the records (``rhs``, ``project``, ``observe``: the
    core's ``nc_rhs``, ``nc_project``, one implementation for every stepper, model and
    backend), the counters, the dropped rows, and the messages and exceptions of the
    core's statuses. ``compiled``: nothing is called back."""

    def _set_up(self, model, solver, forces, projection, proj_tol, baumgarte, drop_tol,
                hold_tol):
        """The core's tables, buffers and hooks (``solver``: a name or a
        :class:`~natcoord.linalg.base.KKTSolver` of the model to share, whose
        factorization the stepper overwrites); returns the work buffers."""
        if projection not in PROJECTIONS:
            raise ValueError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
        self.model = model
        self.solver = (solver if isinstance(solver, KKTSolver) else
                       make_solver(model, solver, drop_tol, hold_tol))
        self._run = run = CoreRun(model, self.solver, forces)
        self._S = S = run.S
        self._hooks, self._packed = run.hooks, run.packed
        self.compiled = run.hooks is None          # the core alone, nothing called back
        self._potential = run.callbacks.potential if run.callbacks.conservative else None
        self._mode = cc.MODES[projection]
        self._W1 = np.zeros((model.n_weights, 3))
        model.tables.weight_table(0.0, self._W1)          # constant row 0
        S.ctrl[cc.ALPHA], S.ctrl[cc.BETA_B] = baumgarte
        S.ctrl[cc.PROJ_TOL] = proj_tol
        self.proj_tol, self.projection = proj_tol, projection
        self._records, self._used, self._segments = None, 0, None
        self._no_outputs = np.zeros(0)
        return run.work

    n_rhs = nfev = _counter(cc.N_RHS)
    n_factorizations = _counter(cc.N_FACT)
    n_projection_iterations = _counter(cc.N_PROJ)
    n_active_set_changes = _counter(cc.N_ACTIVE)

    @property
    def dropped(self):
        """Rows dropped as redundant at the last factorization (sorted)."""
        return np.flatnonzero(self._S.mask)

    def _weights(self, t, out):
        if self.model.n_weights > 1:
            self.model.tables.weight_table(t, out)
        return out

    @property
    def output_work(self):
        """Of the counters, the work of the outputs :meth:`advance` projected:
        ``[evaluations (0), factorizations, projection iterations]``."""
        return np.array([0, self._S.counts[cc.OUT_FACT], self._S.counts[cc.OUT_PROJ]])

    # ------------------------------------------------------------ many steps
    def _check_sweep(self, sweep):
        """Raise if ``sweep`` cannot ride along this stepper (DOPRI5's: any model and
        backend)."""

    def advance(self, t_eval=None, next_out=0, max_attempts=1_000_000, drift_tol=np.inf,
                capacity=256, dense=False, sweep=None, check=None):
        """Accepted steps and their records in one call of the core (``nc_advance_with``
        of natcoord/core/src/dopri5.c, one loop for both steppers, each taking its own
        steps); the :class:`~natcoord.integrate.base.Stepper` interface.

        Records every accepted step (``t_eval`` None) or the points
        ``t_eval[next_out:]`` the steps pass (the stepper's dense output, projected
        from the dropped set of their step); each recorded state is checked first by
        the core (all rows within the projection tolerance with
        ``projection="position+velocity"``, else residuals within ``drift_tol``;
        ``check`` is not needed). Returns a :class:`Chunk`; on a step failure
        ``status`` becomes ``"failed"`` as in :meth:`step`, a callback's exception is
        ``Chunk.error``. ``dense``: keep each accepted step's dense output
        (``Chunk.pieces``). ``sweep``: a
        :class:`~natcoord.analysis.sensitivity.Sweep` that differentiates
        DOPRI5's steps as they are taken (``Chunk.derivatives``).
        """
        if self.status != "running":
            raise RuntimeError(f"advance() on a {self.status} stepper")
        self._check_sweep(sweep)
        records = self._record_space(capacity)
        if self._hooks is not None:
            self._hooks.failure = ""
        every = t_eval is None
        t_eval = self._no_outputs if every else np.ascontiguousarray(t_eval, float)
        options = (max_attempts, EPS_FLOOR, t_eval, next_out, every, drift_tol, *records)
        status, n, next_out, steps, rejected, m, segments, derivatives, error = \
            self._advance(options, dense, capacity, sweep)
        self.n_steps += steps
        self.n_rejected += rejected
        self._used += n
        rec_t, rec_y, rec_obs, rec_kind = records
        pieces = [self._piece(*segments, k) for k in range(m)] if dense else []
        obs = rec_obs[:n]
        if self._potential is not None:
            obs[:, 0] += [self._potential(y[:self.model.n_coords]) for y in rec_y[:n]]
        chunk = Chunk(rec_t[:n], rec_y[:n], obs, rec_kind[:n], next_out, steps, rejected,
                      "ok", pieces=pieces, derivatives=derivatives,
                      last=(self.t, self.y.copy()))
        if status == cc.FINISHED:
            self.status = "finished"
        elif status == cc.CHECK:
            chunk.failed = (float(rec_t[n]), rec_y[n].copy(), int(rec_kind[n]))
            if rec_kind[n] == STEP_RECORD:
                self.n_steps += 1             # accepted; the caller's check decides
                chunk.last = self._previous()
        elif status == cc.CALLBACK:            # a callback's exception, or Ctrl-C
            chunk.error = error
            self.status, self.failure = "failed", status
            self.message = f"{type(error).__name__}: {error}"
        elif status != cc.FULL and rec_kind[n] == OUTPUT_RECORD:
            chunk.error = self._error(status, self.t)
        elif status != cc.FULL:
            self._failed(status, max_attempts)
            chunk.status = "failed"
        return chunk

    def _record_space(self, capacity):
        """Record arrays for ``capacity`` records and a failing state, in which the core
        writes them in place: views past the records of earlier calls, so that a
        :class:`Chunk`'s records (views too) are never overwritten, in a new block
        when the current one is used up."""
        if self._records is None or self._records[0].size - self._used < capacity + 1:
            size, n2 = max(capacity + 1, RECORD_BLOCK), 2 * self.model.n_coords
            self._records = (np.empty(size), np.empty((size, n2)), np.empty((size, 3)),
                             np.empty(size, np.int64))
            self._used = 0
        return tuple(a[self._used:] for a in self._records)

    def _segment_space(self, steps):
        """The segments (``_make_segments``) for ``steps`` steps' dense output, kept from
        call to call while their size does not change."""
        if self._segments is None or self._segments[0].shape[0] != steps:
            self._segments = self._make_segments(steps)
        return self._segments

    # ------------------------------------------------------------ evaluations
    def status_message(self, status, t):
        """One line on a status of :mod:`natcoord.dynamics.core_run` (a step attempt's,
        ``advance``'s, or −1: step-size underflow) at time ``t`` (:meth:`CoreRun.message
        <natcoord.dynamics.core_run.CoreRun.message>` but for the two that are the
        stepper's)."""
        if status == cc.FINISHED:
            return f"t_bound = {self.t_bound:g} reached"
        if status == -1:
            return f"step size underflow at t = {t:.6g} (h = {min(self.h, self.t_bound - t):.3e})"
        return self._run.message(status, t)

    def _error(self, status, t):
        """The exception of a failed evaluation or output projection with ``status``."""
        return self._run.error(status, t, self.status_message(status, t))

    def _failed(self, status, max_attempts):
        """Enter the ``"failed"`` status for a failed step of the core (``failure``: its
        status)."""
        t = self.t
        if status == -1:
            message = self.status_message(status, t)
        elif status == cc.MAX_ATTEMPTS:
            message = f"no step accepted in {max_attempts} attempts at t = {t:g}"
        else:
            message = f"evaluation failed at t = {t:.6g}: {self.status_message(status, t)}"
        self.status, self.message, self.failure = "failed", message, status

    def rhs(self, t, y):
        """``(v, a)`` at ``(t, y)`` (a new array); counts as an evaluation."""
        out = np.empty(self.model.n_coords * 2)
        y = np.ascontiguousarray(y, float)
        status = engine.rhs(*self._packed, self._hooks, float(t), y,
                            self._weights(t, self._W1), self._mode, out)
        if status:
            raise self._error(status, t)
        return out

    def accelerations(self, t, y):
        """``(a, λ)`` at ``(t, y)`` (new arrays), as ``Workspace.accelerations``."""
        out = self.rhs(t, y)
        return out[self.model.n_coords:], self._S.lam.copy()

    def project(self, t, y):
        """``y`` projected as an output (a new array): factored at ``y`` first, from the
        dropped set of the last step (``nc_hold_for_output`` in natcoord/core/src/dopri5.c)."""
        y = np.array(y, float)
        engine.hold_for_output(self._packed[1])
        return self._run.project(t, y, self._weights(t, self._W1), self._mode, self.proj_tol)

    def observe(self, t, y):
        """``(energy, ‖g‖∞, ‖G v + g_t‖∞)`` at ``(t, y)`` — what ``simulate`` records."""
        y = np.ascontiguousarray(y, float)
        obs = engine.observe(self._packed[0], self._packed[1], y,
                             self._weights(t, self._W1), False)
        if self._potential is not None:
            obs = (obs[0] + self._potential(y[:self.model.n_coords]), *obs[1:])
        return obs


class DOPRI5(CoreStepper):
    """Compiled Dormand–Prince 5(4) with projection, one call per step or per chunk.

    Arguments as :func:`natcoord.integrate.simulate.simulate` (``solver`` names the KKT
    backend: ``"block"`` is the core's, the others are called back; or is a
    :class:`~natcoord.linalg.base.KKTSolver` of the model to share, whose factorization
    the stepper overwrites at every call); ``forces``: applied forces of the run beside
    the model's (objects with ``apply(t, state, X, V, F)``, called back: simulate's
    joint torques); ``state``: a consistent
    initial :class:`~natcoord.model.frozen.State` (default ``assemble(model, t=t0).state``).
    Attributes: ``t``, ``y`` ((2 N,) = (p, v), read-only view), ``h`` (next step),
    ``status`` (``"running" | "finished" | "failed"``), counters ``n_steps``,
    ``n_rejected``, ``n_rhs`` (like scipy's ``nfev``), ``n_factorizations``,
    ``n_projection_iterations``, ``n_active_set_changes``; ``dropped`` the rows
    dropped at the last factorization; ``failure`` the status of the failed step
    (a :mod:`natcoord.dynamics.core_run` code, None before), described by
    :meth:`status_message`.
    """

    def __init__(self, model, t_bound, rtol=1e-6, atol=None, proj_tol=1e-10, state=None,
                 t0=0.0, first_step=None, max_step=np.inf, projection="position+velocity",
                 baumgarte=(10.0, 10.0), drop_tol=DROP_TOL, hold_tol=HOLD_TOL, solver="block",
                 forces=()):
        work = self._set_up(model, solver, forces, projection, proj_tol, baumgarte, drop_tol,
                            hold_tol)
        S, n = self._S, model.n_coords
        self._W7 = np.zeros((7, model.n_weights, 3))
        for W in self._W7:
            model.tables.weight_table(0.0, W)             # constant row 0 (and all rows
        atol = rtol if atol is None else atol             # without drives)
        c = S.ctrl
        c[cc.RTOL], c[cc.ATOL], c[cc.MAX_STEP] = rtol, atol, max_step
        c[cc.ERR_OLD] = 1e-4
        c[cc.T_BOUND] = float(t_bound)
        if state is None:
            state = assemble(model, t=t0).state
        t0 = float(state.t) if state is not None else float(t0)
        if not t_bound > t0:
            raise ValueError(f"t_bound ({t_bound}) must be greater than t0 ({t0})")
        S.y[:n], S.y[n:] = state.p, state.v
        c[cc.T_NOW] = c[cc.T_PREV] = t0
        self.rtol, self.atol = rtol, atol
        self.t_bound = float(t_bound)
        self.n_steps = self.n_rejected = 0
        self.status, self.message, self.failure = "running", "", None
        S.f[:] = self.rhs(t0, S.y)
        self.dropped_start = self.dropped
        h = first_step or initial_step(self.rhs, t0, S.y.copy(), S.f.copy(), rtol, atol,
                                        t_bound - t0)
        c[cc.H] = min(h, max_step)
        self._no_store = cc.make_store(work, model.n_rows, 0)
        self._y_view = S.y.view()
        self._y_view.flags.writeable = False

    # ------------------------------------------------------------ state
    t = _control(cc.T_NOW)
    t_old = _control(cc.T_PREV)
    h = _control(cc.H, "Step size the next attempt starts from.")

    @property
    def y(self):
        return self._y_view

    # ------------------------------------------------------------ stepping
    def step(self, max_attempts=1_000_000):
        """Advance by one accepted step (rejected attempts retried inside).

        Returns a :class:`StepRecord`; on failure (step-size underflow, an
        evaluation that keeps failing, ``max_attempts`` attempts) ``status``
        becomes ``"failed"`` and the state stays at the last accepted step. A
        callback's exception propagates.
        """
        if self.status != "running":
            raise RuntimeError(f"step() on a {self.status} stepper")
        c = self._S.ctrl
        t_old = self.t
        if self._hooks is not None:
            self._hooks.failure = ""
        status, rejected = engine.step(*self._packed, self._hooks, self._W7, self._mode,
                                       max_attempts, EPS_FLOOR, self._no_store, 0)
        self.n_rejected += rejected
        err = float(c[cc.ERR])
        if status == cc.ACCEPTED:
            self.n_steps += 1
            if self.t >= self.t_bound:
                self.status = "finished"
            return StepRecord(t_old, self.t, float(c[cc.H_ACC]), err, rejected, "accepted")
        self._failed(status, max_attempts)
        return StepRecord(t_old, t_old, 0.0, err, rejected, "failed", self.message)

    # ------------------------------------------------------------ many steps
    def _make_segments(self, steps):
        return cc.make_segments(self.model, steps)

    def _advance(self, options, dense, capacity, sweep):
        args = (*self._packed, self._hooks, self._W7, self._W1, self._mode, *options)
        if sweep is None:
            segments = self._segment_space(min(capacity, SEGMENTS) * dense)
            *progress, error = engine.advance(*args, *segments, self._no_store)
            return (*progress, segments, None, error)
        # steps in rounds that fit the sweep's store (pieces: one round)
        return sweep.advance(args, repeat=not dense)

    @staticmethod
    def _piece(seg_t, seg_y, seg_K, k):
        return DenseOutput(float(seg_t[k, 0]), float(seg_t[k, 1]), seg_y[k, 0].copy(),
                           seg_y[k, 1].copy(), seg_K[k].copy())

    def _previous(self):
        return self.t_old, self._S.yprev.copy()

    def dense_output(self):
        """The order-4 interpolant of the last accepted step (a :class:`DenseOutput`)."""
        S = self._S
        if self.n_steps == 0:
            raise RuntimeError("dense_output() needs an accepted step")
        return DenseOutput(self.t_old, float(S.ctrl[cc.H_ACC]), S.yprev.copy(),
                           S.ynewacc.copy(), S.Kacc.copy())
