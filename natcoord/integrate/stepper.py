"""A DOPRI5 stepper whose whole step runs in compiled code (``scipy.integrate.OdeSolver``-like).

:class:`DOPRI5` integrates the index-1 descriptor form of docs/method.md#15-descriptor-form with the
Dormand–Prince 5(4) pair, PI control and projection of
:func:`natcoord.integrate.simulate.simulate`, and produces the same steps: the stages,
the error estimate, the controller and the projection of an accepted step run
in the compiled core (natcoord/core/src/dopri5.c, set up by
:mod:`natcoord.integrate.compiled`), so Python sees one call per step, or one call per
block of steps (:meth:`DOPRI5.advance`). Declarative drives
(:mod:`natcoord.model.drives`) are compiled laws the core evaluates; a
drive given as Python callables makes it one call per step *attempt*, the
weight tables evaluated here at the stage times and passed in.

Requirements: the ``block`` solver, and applied forces with a compiled form
(gravity, spring–dampers, constant point forces, constant torques). A model
with a callable force raises ``ValueError`` here; ``simulate`` keeps its
Python path for it (see :func:`natcoord.integrate.compiled.compilable`).

    stepper = DOPRI5(model, t_bound=10.0, rtol=1e-8)
    while stepper.status == "running":
        record = stepper.step()
        y = stepper.y                      # (p, v) after projection
        interpolant = stepper.dense_output()
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import compiled as cc
from ..core import engine
from ..dynamics.assembly import assemble
from .base import EPS_FLOOR, PROJECTIONS, StepRecord, clip_step, initial_step
from .dormand_prince import DenseOutput
from ..linalg import make_solver
from ..linalg import blockldl
from ..linalg.base import DROP_TOL, HOLD_TOL, MassSpreadError
from ..dynamics.projection import ProjectionError


@dataclass
class Chunk:
    """What one call of :meth:`DOPRI5.advance` did.

    Records ``t`` (k,), ``y`` (k, 2 N), ``obs`` (k, 3: energy, ‖g‖∞,
    ‖G v + g_t‖∞), ``kind`` (k,: ``compiled.STEP_RECORD`` or ``OUTPUT_RECORD``),
    all checked; ``next_out`` the next ``t_eval`` index; ``steps`` accepted and
    ``rejected`` attempts; ``status`` ``"ok"`` or ``"failed"`` (the stepper's
    ``message`` says why). ``failed``: ``(t, y, kind)`` of a state that did
    not pass the check (a step state is accepted by the stepper but not in
    ``steps``); ``error``: the exception of an output whose projection failed;
    ``pieces``: with ``dense``, the :class:`~natcoord.integrate.simulate.DenseOutput` of
    every step the stepper accepted (that of ``failed`` included);
    ``derivatives``: with a ``sweep``, the sensitivities (k, c, 2 N) at the records.
    """

    t: np.ndarray
    y: np.ndarray
    obs: np.ndarray
    kind: np.ndarray
    next_out: int
    steps: int
    rejected: int
    status: str
    failed: tuple = None
    error: Exception = None
    pieces: list = ()
    derivatives: np.ndarray = None


def _control(index, doc=None):
    """A read-only float of the compiled control vector ``ctrl[index]``."""
    return property(lambda self: float(self._S.ctrl[index]), doc=doc)


def _counter(index):
    """A read-only counter ``counts[index]`` of the compiled buffers."""
    return property(lambda self: int(self._S.counts[index]))


class DOPRI5:
    """Compiled Dormand–Prince 5(4) with projection, one call per step.

    Arguments as :func:`natcoord.integrate.simulate.simulate`; ``state``: a consistent
    initial :class:`~natcoord.model.frozen.State` (default ``assemble(model, t=t0).state``).
    Attributes: ``t``, ``y`` ((2 N,) = (p, v), read-only view), ``h`` (next step),
    ``status`` (``"running" | "finished" | "failed"``), counters ``n_steps``,
    ``n_rejected``, ``n_rhs`` (like scipy's ``nfev``), ``n_factorizations``,
    ``n_projection_iterations``, ``n_active_set_changes``; ``dropped`` the rows
    dropped at the last factorization; ``failure`` the status of the failed step
    (a :mod:`natcoord.integrate.compiled` code, None before), described by
    :meth:`status_message`.
    """

    compiled = True

    def __init__(self, model, t_bound, rtol=1e-6, atol=None, proj_tol=1e-10, state=None,
                 t0=0.0, first_step=None, max_step=np.inf, projection="position+velocity",
                 baumgarte=(10.0, 10.0), drop_tol=DROP_TOL, hold_tol=HOLD_TOL):
        if projection not in PROJECTIONS:
            raise ValueError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
        tables = cc.make_tables(model)
        if tables is None:
            raise ValueError(f"model {model.name!r} has a force without a compiled form (a "
                             f"callable force or torque): use simulate(), which keeps the "
                             f"Python path for it")
        self.model = model
        self.solver = make_solver(model, "block", drop_tol, hold_tol)
        n = model.n_coords
        self._S = S = cc.make_buffers(model, self.solver)
        # the four named tuples unpacked for the core once, not on every call
        self._packed = cc.pack_run(tables, S, self.solver)
        self._mode = cc.MODES[projection]
        self._python_drives = model.n_weights > 1 and model.tables.laws is None
        self._W7 = np.zeros((7, model.n_weights, 3))
        self._W1 = np.zeros((model.n_weights, 3))
        for W in (*self._W7, self._W1):
            model.tables.weight_table(0.0, W)             # constant row 0 (and all rows
        atol = rtol if atol is None else atol             # without drives)
        c = S.ctrl
        c[cc.RTOL], c[cc.ATOL], c[cc.PROJ_TOL], c[cc.MAX_STEP] = rtol, atol, proj_tol, max_step
        c[cc.ALPHA], c[cc.BETA_B] = baumgarte
        c[cc.ERR_OLD] = 1e-4
        c[cc.T_BOUND] = float(t_bound)
        if state is None:
            state = assemble(model, t=t0).state
        t0 = float(state.t) if state is not None else float(t0)
        if not t_bound > t0:
            raise ValueError(f"t_bound ({t_bound}) must be greater than t0 ({t0})")
        S.y[:n], S.y[n:] = state.p, state.v
        c[cc.T_NOW] = c[cc.T_PREV] = t0
        self.rtol, self.atol, self.proj_tol = rtol, atol, proj_tol
        self.t_bound, self.projection = float(t_bound), projection
        self.n_steps = self.n_rejected = 0
        self.status, self.message, self.failure = "running", "", None
        S.f[:] = self.rhs(t0, S.y)
        self.dropped_start = self.dropped
        h = first_step or initial_step(self.rhs, t0, S.y.copy(), S.f.copy(), rtol, atol,
                                        t_bound - t0)
        c[cc.H] = min(h, max_step)
        self._records = self._segments = None
        self._no_outputs = np.zeros(0)
        self._no_store = cc.make_store(self.solver.work, model.n_rows, 0)
        self._y_view = S.y.view()
        self._y_view.flags.writeable = False

    # ------------------------------------------------------------ state
    t = _control(cc.T_NOW)
    t_old = _control(cc.T_PREV)
    h = _control(cc.H, "Step size the next attempt starts from.")

    @property
    def y(self):
        return self._y_view

    n_rhs = nfev = _counter(cc.N_RHS)
    n_factorizations = _counter(cc.N_FACT)
    n_projection_iterations = _counter(cc.N_PROJ)
    n_active_set_changes = _counter(cc.N_ACTIVE)

    @property
    def output_work(self):
        """Of the counters, the work of the outputs :meth:`advance` projected:
        ``[evaluations (0), factorizations, projection iterations]``."""
        return np.array([0, self._S.counts[cc.OUT_FACT], self._S.counts[cc.OUT_PROJ]])

    @property
    def dropped(self):
        """Rows dropped as redundant at the last factorization (sorted)."""
        return np.flatnonzero(self._S.mask)

    def _weights(self, t, out):
        if self.model.n_weights > 1:
            self.model.tables.weight_table(t, out)
        return out

    # ------------------------------------------------------------ evaluations
    #: the step statuses of a failed factorization and the solver's own codes
    _FACTOR_FAILURES = {cc.SINGULAR_FRAME: blockldl.SINGULAR_FRAME,
                        cc.NOT_POSITIVE_DEFINITE: blockldl.NOT_POSITIVE_DEFINITE,
                        cc.UNPIVOTABLE_JOINT: blockldl.UNPIVOTABLE_JOINT}

    def status_message(self, status, t):
        """One line on a status of :mod:`natcoord.integrate.compiled` (a step
        attempt's, ``advance``'s, or −1: step-size underflow) at time ``t``; a failed
        factorization names its body or joint (``counts[FAIL_WHERE]``) as the block
        solver's own error does."""
        S, c = self._S, self._S.ctrl
        if status in self._FACTOR_FAILURES:
            return self.solver.failure(self._FACTOR_FAILURES[status],
                                       int(S.counts[cc.FAIL_WHERE]))
        if status in (cc.POSITION_PROJECTION, cc.VELOCITY_PROJECTION):
            what = "position" if status == cc.POSITION_PROJECTION else "velocity"
            return (f"{what} projection: residual of the kept rows "
                    f"{c[cc.FAIL_RESIDUAL]:.3e} > {c[cc.FAIL_TARGET]:.1e} (= 0.1 × "
                    f"max(proj_tol × min(1, size in m), round-off floor)) after 8 iterations")
        messages = {
            cc.ACCEPTED: f"step accepted: t = {t:.6g}",
            cc.REJECTED: f"step rejected at t = {t:.6g}: error estimate {c[cc.ERR]:.3e} > 1",
            cc.NON_FINITE: f"non-finite state at t = {t:.6g} (the error estimate is "
                           f"{c[cc.ERR]:.3e})",
            cc.MAX_ATTEMPTS: f"no step accepted within the attempts allowed at t = {t:g}",
            cc.CHECK: f"a recorded state at t = {t:.6g} failed the constraint check",
            cc.FULL: f"record buffers full at t = {t:.6g} (the next call goes on)",
            cc.FINISHED: f"t_bound = {c[cc.T_BOUND]:g} reached",
            -1: f"step size underflow at t = {t:.6g} (h = {min(c[cc.H], c[cc.T_BOUND] - t):.3e})",
        }
        return messages.get(status, f"unknown status {status} at t = {t:.6g}")

    def _error(self, status, t):
        """The exception of a failed evaluation or output projection with ``status``."""
        message = self.status_message(status, t)
        if status in (cc.POSITION_PROJECTION, cc.VELOCITY_PROJECTION):
            return ProjectionError(message)
        if status == cc.UNPIVOTABLE_JOINT:
            return MassSpreadError(message)
        return np.linalg.LinAlgError(message)

    def rhs(self, t, y):
        """``(v, a)`` at ``(t, y)`` (a new array); counts as an evaluation."""
        out = np.empty(self.model.n_coords * 2)
        y = np.ascontiguousarray(y, float)
        status = engine.rhs(*self._packed, y,
                           self._weights(t, self._W1), self._mode, out)
        if status:
            raise self._error(status, t)
        return out

    def accelerations(self, t, y):
        """``(a, λ)`` at ``(t, y)`` (new arrays), as ``Workspace.accelerations``."""
        out = self.rhs(t, y)
        return out[self.model.n_coords:], self._S.lam.copy()

    def project(self, t, y):
        """``y`` projected as an output (a new array): factored at ``y`` first, see
        :func:`~natcoord.dynamics.projection.project_state`, from the dropped set of
        the last step (``hold_for_output`` in natcoord/core/src/dopri5.c)."""
        y = np.array(y, float)
        engine.hold_for_output(self._packed[1])
        status = engine.project(*self._packed, y,
                               self._weights(t, self._W1), self._mode, self.proj_tol, True)
        if status:
            raise self._error(status, t)
        return y

    def observe(self, t, y):
        """``(energy, ‖g‖∞, ‖G v + g_t‖∞)`` at ``(t, y)`` — what ``simulate`` records."""
        return engine.observe(self._packed[0], self._packed[1], np.ascontiguousarray(y, float),
                             self._weights(t, self._W1), False)

    # ------------------------------------------------------------ stepping
    def step(self, max_attempts=1_000_000):
        """Advance by one accepted step (rejected attempts retried inside).

        Returns a :class:`StepRecord`; on failure (step-size underflow, an
        evaluation that keeps failing, ``max_attempts`` attempts) ``status``
        becomes ``"failed"`` and the state stays at the last accepted step.
        """
        if self.status != "running":
            raise RuntimeError(f"step() on a {self.status} stepper")
        c = self._S.ctrl
        t_old = self.t
        rejected = 0
        eps_floor = EPS_FLOOR
        if not self._python_drives:
            status, rejected = engine.step(*self._packed, self._W7, self._mode,
                                          max_attempts, eps_floor, self._no_store, 0)
        else:
            status = cc.MAX_ATTEMPTS
            W7, weights = self._W7, self.model.tables.weight_table
            for _ in range(max_attempts):
                h = clip_step(c[cc.H], t_old, c[cc.T_BOUND], eps_floor)
                for s in range(1, 6):
                    weights(t_old + cc.C_DENSE[s] * h, W7[s])
                W7[6] = W7[5]                                # c_6 = c_7 = 1
                status, r = engine.step(*self._packed, W7, self._mode, 1,
                                       eps_floor, self._no_store, 0)
                rejected += r
                if status != cc.MAX_ATTEMPTS:
                    break
        self.n_rejected += rejected
        err = float(c[cc.ERR])
        if status == cc.ACCEPTED:
            self.n_steps += 1
            if self.t >= self.t_bound:
                self.status = "finished"
            return StepRecord(t_old, self.t, float(c[cc.H_ACC]), err, rejected, "accepted")
        self._failed(status, max_attempts)
        return StepRecord(t_old, t_old, 0.0, err, rejected, "failed", self.message)

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

    # ------------------------------------------------------------ many steps
    @property
    def chunked(self):
        """True if :meth:`advance` can run many steps per call (a model without drives
        given as Python callables)."""
        return not self._python_drives

    def advance(self, t_eval=None, next_out=0, max_attempts=1_000_000, drift_tol=np.inf,
                capacity=256, dense=False, sweep=None):
        """Accepted steps and their records in one call of the core (``advance`` of
        natcoord/core/src/dopri5.c).

        Records every accepted step (``t_eval`` None) or the points
        ``t_eval[next_out:]`` the steps pass (dense output, projected); each
        recorded state is checked first (all rows within the projection
        tolerance with ``projection="position+velocity"``, else residuals
        within ``drift_tol``). Returns a :class:`Chunk`; on a step failure
        ``status`` becomes ``"failed"`` as in :meth:`step`. ``dense``: keep each
        accepted step's dense output (``Chunk.pieces``). ``sweep``: a
        :class:`~natcoord.analysis.compiled_sensitivity.Sweep` that differentiates the
        steps as they are taken (``Chunk.derivatives``). Only for
        :attr:`chunked` steppers.
        """
        if not self.chunked:
            raise RuntimeError("advance() needs a model without drives given as Python "
                               "callables; use step()")
        if self.status != "running":
            raise RuntimeError(f"advance() on a {self.status} stepper")
        if self._records is None or self._records[0].size != capacity + 1:
            n2 = 2 * self.model.n_coords
            self._records = (np.zeros(capacity + 1), np.zeros((capacity + 1, n2)),
                             np.zeros((capacity + 1, 3)), np.zeros(capacity + 1, np.int64))
        every = t_eval is None
        t_eval = self._no_outputs if every else np.ascontiguousarray(t_eval, float)
        args = (*self._packed, self._W7, self._W1, self._mode,
                max_attempts, 10 * np.finfo(float).eps, t_eval, next_out, every, drift_tol,
                *self._records)
        derivatives = None
        if sweep is None:
            if self._segments is None or self._segments[0].shape[0] != capacity * dense:
                self._segments = cc.make_segments(self.model, capacity * dense)
            segments = self._segments
            status, n, next_out, steps, rejected, m = engine.advance(*args, *segments,
                                                                    self._no_store)
        else:                # steps in rounds that fit the sweep's store (pieces: one round)
            status, n, next_out, steps, rejected, m, segments, derivatives = sweep.advance(
                args, repeat=not dense)
        self.n_steps += steps
        self.n_rejected += rejected
        rec_t, rec_y, rec_obs, rec_kind = self._records
        seg_t, seg_y, seg_K = segments
        pieces = [DenseOutput(float(seg_t[k, 0]), float(seg_t[k, 1]), seg_y[k, 0].copy(),
                              seg_y[k, 1].copy(), seg_K[k].copy())
                  for k in range(m)] if dense else []
        chunk = Chunk(rec_t[:n].copy(), rec_y[:n].copy(), rec_obs[:n].copy(),
                      rec_kind[:n].copy(), next_out, steps, rejected, "ok", pieces=pieces,
                      derivatives=derivatives)
        if status == cc.FINISHED:
            self.status = "finished"
        elif status == cc.CHECK:
            chunk.failed = (float(rec_t[n]), rec_y[n].copy(), int(rec_kind[n]))
            if rec_kind[n] == cc.STEP_RECORD:
                self.n_steps += 1             # accepted; the caller's check decides
        elif status != cc.FULL and rec_kind[n] == cc.OUTPUT_RECORD:
            chunk.error = self._error(status, self.t)
        elif status != cc.FULL:
            self._failed(status, max_attempts)
            chunk.status = "failed"
        return chunk

    def dense_output(self):
        """The order-4 interpolant of the last accepted step (a :class:`DenseOutput`)."""
        S = self._S
        if self.n_steps == 0:
            raise RuntimeError("dense_output() needs an accepted step")
        return DenseOutput(self.t_old, float(S.ctrl[cc.H_ACC]), S.yprev.copy(),
                           S.ynewacc.copy(), S.Kacc.copy())
