"""A run of the compiled core on one model: its buffers, codes and hooks
(docs/method.md#17-integration).

Everything that calls the core's evaluation, projection or step sets it up here, the
same way: the steppers (:class:`natcoord.integrate.stepper.DOPRI5`,
:class:`natcoord.integrate.radau.Radau`), the per-run :class:`~natcoord.integrate.data.Data`
of ``nc.forward``, the sensitivity sweep and the velocity projection of the assembly
(:mod:`natcoord.dynamics.projection`). A :class:`CoreRun` holds the model's constant
arrays (:data:`~natcoord.model.core_tables.Tables`, built in the model layer), the
per-run buffers (:data:`Buffers`, :func:`make_buffers`), the block solver's plan and
work buffers, and the :class:`Callbacks` of what the core does not compile. This module
also lays out the dense-output segments and the factorization store of the sensitivity
sweep, and names the core's codes (statuses, projection modes, record kinds, counter
and ``ctrl`` indices, as natcoord/core/src/dopri5.h numbers them).

Built-in forces are flattened into the tables
(:func:`~natcoord.model.core_tables.flatten_forces`); their laws are the core's
(natcoord/core/src/forces.c). The others — callable forces and torques, force
classes without a law in the core (:func:`~natcoord.model.core_tables.python_forces`)
— are called back from the core at each stage (:class:`Callbacks`), as MuJoCo calls
its ``mjcb_*`` hooks.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core import engine
from ..linalg import blockldl
from ..linalg.base import MassSpreadError
from ..model.core_tables import packed_tables, python_forces
from ..model.frozen import State

EPS = float(np.finfo(float).eps)

#: status codes of a step attempt (−1: step-size underflow), as dopri5.h numbers
#: them; SOLVER_FAILED: a reference backend could not factor (its LinAlgError, a
#: smaller step may cure it), CALLBACK: a callback raised (the run's exception). Every core function that factors returns these, never the block
#: factorization's own codes (``factor`` in dopri5.c translates them): a
#: factorization code read as a step code took a singular frame for an error
#: rejection and an unpivotable joint's node for a body (an ``IndexError`` in the
#: message)
ACCEPTED, REJECTED, SINGULAR_FRAME, NOT_POSITIVE_DEFINITE, NON_FINITE, \
    POSITION_PROJECTION, VELOCITY_PROJECTION, MAX_ATTEMPTS, CHECK, FULL, FINISHED, \
    UNPIVOTABLE_JOINT, SOLVER_FAILED, CALLBACK = range(14)

#: projection modes, in the order of ``natcoord.integrate.base.PROJECTIONS``
PROJECT_POSITIONS_AND_VELOCITIES, PROJECT_VELOCITIES, NO_PROJECTION, BAUMGARTE = range(4)
MODES = {"position+velocity": PROJECT_POSITIONS_AND_VELOCITIES,
         "velocity": PROJECT_VELOCITIES, "none": NO_PROJECTION, "baumgarte": BAUMGARTE}

#: counters (int64 array): evaluations, factorizations, projection iterations,
#: active-set changes, where the last failure happened (body or node), and the
#: factorizations and projection iterations of those spent on :func:`advance`'s outputs
N_RHS, N_FACT, N_PROJ, N_ACTIVE, FAIL_WHERE, OUT_FACT, OUT_PROJ = range(7)

Buffers = namedtuple("Buffers", [
    "g", "g_t", "gamma", "Gv", "G", "F", "s", "x", "lam", "zero",
    "K", "Kacc", "ystage", "ynew", "ynewacc", "yproj", "yprev", "y", "f",
    "threshold", "dropped", "mask", "rhs_mask", "counts", "ctrl", "tmp", "comb", "stack", "vals",
    "held"])

#: The stage factorizations of accepted steps, kept for the sensitivity sweep
#: (:mod:`natcoord.analysis.sensitivity`): at ``[m, s − 1]`` for step ``m`` and
#: stage ``s = 1 … 6`` the block factor (``B, inv, E, F, Gj`` of
#: :data:`~natcoord.linalg.blockldl.WorkBuffers`), the multipliers λ and the dropped
#: rows (``mask``, from which the sweep refactors a reference backend's stage); per step
#: ``refactored``: whether its projection factored again (its simplified Newton did not
#: converge on stage 6's factorization, which the sweep otherwise projects with).
FactorStore = namedtuple("FactorStore", ["B", "inv", "E", "F", "Gj", "lam", "mask",
                                         "refactored"])

#: ctrl (float64 array): t, h, err_old, last_rejected, err of the last attempt,
#: h of the last accepted step, t before it, proj_tol, rtol, atol, max_step,
#: t_bound, drop_tol, hold_tol, baumgarte α, β, residual and target of a failed
#: projection, 1 while outputs are projected from the dropped set in ``held``
(T_NOW, H, ERR_OLD, LAST_REJECTED, ERR, H_ACC, T_PREV, PROJ_TOL, RTOL, ATOL, MAX_STEP,
 T_BOUND, DROP_TOL, HOLD_TOL, ALPHA, BETA_B, FAIL_RESIDUAL, FAIL_TARGET, HOLDING) = range(19)
N_CTRL = 19


class ProjectionError(RuntimeError):
    """The projection's Newton iteration failed to reach the tolerance."""


# ------------------------------------------------------------------ set-up
def make_buffers(model, solver):
    """A run's :data:`Buffers`, with the partitioning tolerances of the block
    ``solver`` (drop_tol on every joint row until a factorization drops one, as
    ``KKTSolver._update_thresholds`` starts)."""
    n, m, nnz = model.n_coords, model.n_rows, model.tables.pattern_row.size
    n_joint_rows = m - 6 * model.n_bodies
    z = np.zeros
    S = Buffers(g=z(m), g_t=z(m), gamma=z(m), Gv=z(m), G=z((nnz, 3)),
                   F=z((4 * model.n_bodies, 3)), s=z(m), x=z(n), lam=z(m), zero=z(n),
                   K=z((7, 2 * n)), Kacc=z((7, 2 * n)), ystage=z(2 * n), ynew=z(2 * n),
                   ynewacc=z(2 * n), yproj=z(2 * n), yprev=z(2 * n), y=z(2 * n), f=z(2 * n),
                   threshold=z(n_joint_rows), dropped=np.zeros(n_joint_rows, np.int64),
                   mask=np.zeros(m, np.bool_), rhs_mask=np.zeros(m, np.bool_),
                   counts=np.zeros(7, np.int64), ctrl=z(N_CTRL), tmp=z((5, 3)),
                   comb=z(2 * n), stack=np.zeros((64, 3), np.int64), vals=z(64),
                   held=np.zeros(m, np.bool_))
    S.ctrl[DROP_TOL], S.ctrl[HOLD_TOL] = solver.drop_tol, solver.hold_tol
    S.threshold[:] = solver.drop_tol
    return S


def make_segments(model, capacity):
    """Buffers of :func:`advance` for ``capacity`` steps' dense-output data:
    ``(t_old, h)``, ``(y_old, y_new)``, the stages ``K``."""
    n2 = 2 * model.n_coords
    return np.zeros((capacity, 2)), np.zeros((capacity, 2, n2)), np.zeros((capacity, 7, n2))


def make_store(Wk, n_rows, capacity):
    """A :data:`FactorStore` for ``capacity`` steps of the solver with work buffers ``Wk``
    (``capacity`` 0: nothing is kept). Not zeroed: a factorization writes all it
    solves with, and zeroing megabytes would cost a short run more than its sweep."""
    return FactorStore(*(np.empty((capacity, 6) + a.shape) for a in (Wk.B, Wk.inv, Wk.E,
                                                                      Wk.F, Wk.Gj)),
                       np.empty((capacity, 6, n_rows)), np.empty((capacity, 6, n_rows), bool),
                       np.empty(capacity, bool))


def store_bytes(Wk, n_rows):
    """Bytes of one step of a :data:`FactorStore`."""
    return 6 * (Wk.B.itemsize * (n_rows + sum(a.size for a in (Wk.B, Wk.inv, Wk.E, Wk.F,
                                                                Wk.Gj))) + n_rows) + 1


class Callbacks:
    """What the core calls back for ``model`` run with the KKT backend ``solver``
    (``nc_hooks`` of natcoord/core/src/dopri5.h, bound in callbacks.c).

    ``weights(t)``: the drive laws given as Python callables into ``W``;
    ``forces(t)``: the forces without a compiled law (:func:`~natcoord.model.core_tables.python_forces`)
    and the run's ``forces`` (joint torques) at the state in ``y``, into ``F`` (the
    core adds them to its own);
    ``factor()``/``solve()``: a reference backend on ``G`` with the dropped rows
    in ``mask`` (its hysteresis), solving ``r, s`` into ``x, lam``;
    ``force_derivative(t)``/``drive_weights(t)``: the sensitivity sweep's (None here;
    :class:`natcoord.analysis.sensitivity.SweepHooks` sets them and sizes their
    arrays ``dy``, ``dF``, ``dW``). Each is None
    when not needed; :attr:`needed` is False when none is (the core runs alone).
    A callable's NaN or inf (``FloatingPointError``) and a backend's
    ``LinAlgError`` are step failures a smaller step may cure, as the core's own
    (their reason in ``failure``); any other exception stops the run (``step()``
    raises it, ``advance()`` returns it with the records before it).
    """

    def __init__(self, model, solver, forces=()):
        n, m = model.n_coords, model.n_rows
        self.model = model
        self.python_forces = [*python_forces(model), *forces]
        #: those with a potential energy the records count (a user's force class may
        #: define one; loads and joint torques have none)
        self.conservative = [force for force in self.python_forces
                             if hasattr(force, "potential")]
        self.solver = None if solver.name == "block" else solver
        self.W = np.zeros((model.n_weights, 3))
        model.tables.weight_table(0.0, self.W)
        self.y, self.F = np.zeros(2 * n), np.zeros((4 * model.n_bodies, 3))
        self.G, self.mask = np.zeros((model.tables.pattern_row.size, 3)), np.zeros(m, bool)
        self.r, self.s, self.x, self.lam = np.zeros(n), np.zeros(m), np.zeros(n), np.zeros(m)
        python_drives = model.n_weights > 1 and model.tables.laws is None
        self.weights = self._weights if python_drives else None
        self.forces = self._forces if self.python_forces else None
        self.factor = self._factor if self.solver is not None else None
        self.solve = self._solve if self.solver is not None else None
        self.force_derivative = self.drive_weights = None
        self.dy, self.dF, self.dW = np.zeros((0, 2 * n)), np.zeros((0, n)), np.zeros(0)
        self.failure = ""          # the last step failure's reason

    @property
    def needed(self):
        return any(f is not None for f in (self.weights, self.forces, self.factor,
                                           self.force_derivative, self.drive_weights))

    def _weights(self, t):
        try:
            self.model.tables.weight_table(t, self.W)
        except FloatingPointError as exc:        # a drive law's NaN: a step failure
            self.failure = str(exc)
            return NON_FINITE
        return 0

    def _forces(self, t):
        n = self.y.size // 2
        y = self.y.copy()                                  # the callables may keep it
        p, v = y[:n], y[n:]
        F = self.F
        F[:] = 0.0
        state, X, V = State(t, p, v), p.reshape(-1, 3), v.reshape(-1, 3)
        try:
            for force in self.python_forces:
                force.apply(t, state, X, V, F)
        except FloatingPointError as exc:        # a force's NaN: a step failure
            self.failure = str(exc)
            return NON_FINITE
        return 0

    def _factor(self):
        solver = self.solver
        solver.dropped = np.flatnonzero(self.mask)
        try:
            solver.factor(self.G)
        except np.linalg.LinAlgError as exc:     # a smaller step may cure it, as a block
            self.failure = str(exc)              # factorization's failure
            return SOLVER_FAILED
        self.mask[:] = False
        self.mask[solver.dropped] = True
        return 0

    def _solve(self):
        self.x[:], self.lam[:] = self.solver.solve(self.r, self.s)

    def potential(self, p):
        """The potential energy of the called-back forces that have one at ``p``."""
        X = p.reshape(-1, 3)
        return sum(force.potential(X) for force in self.conservative)


class CoreRun:
    """The core's arguments for ``model`` run with the KKT backend ``solver`` (a
    :class:`~natcoord.linalg.base.KKTSolver`, whose factorization the core
    overwrites): ``S`` the run's :data:`Buffers`; ``callbacks`` its
    :class:`Callbacks` (``forces``: the run's forces beside the model's) and
    ``hooks`` the same or None when the core runs alone (nothing to call back);
    ``work`` the block work buffers; ``packed`` the four tuples the core's step, rhs
    and projection take — the model's tables (packed once per model), the buffers, the
    block solver's plan and work buffers — unpacked for the core once. With a reference backend the block plan and work buffers are
    laid out but not used (the hooks factor and solve)."""

    def __init__(self, model, solver, forces=()):
        self.model, self.solver = model, solver
        self.S = make_buffers(model, solver)
        self.callbacks = Callbacks(model, solver, forces)
        self.hooks = self.callbacks if self.callbacks.needed else None
        plan, self.work = ((solver.plan, solver.work) if self.callbacks.solver is None else
                           (plan := blockldl.block_plan(model), blockldl.make_work(plan)))
        self.packed = (packed_tables(model), engine.pack(self.S, "S"),
                       engine.pack(plan.arrays, "P"), engine.pack(self.work, "W"))

    #: the step statuses of a failed factorization and the solver's own codes
    _FACTOR_FAILURES = {SINGULAR_FRAME: blockldl.SINGULAR_FRAME,
                        NOT_POSITIVE_DEFINITE: blockldl.NOT_POSITIVE_DEFINITE,
                        UNPIVOTABLE_JOINT: blockldl.UNPIVOTABLE_JOINT}

    def message(self, status, t):
        """One line on a status of this module's codes at time ``t`` (a step attempt's
        or ``advance``'s; the steppers word the two that need their own state,
        FINISHED and step-size underflow); a failed factorization names its body or
        joint (``counts[FAIL_WHERE]``) as the block solver's own error does."""
        S, c = self.S, self.S.ctrl
        failure = self.callbacks.failure
        if status in self._FACTOR_FAILURES:
            return self.solver.failure(self._FACTOR_FAILURES[status],
                                       int(S.counts[FAIL_WHERE]))
        if status in (POSITION_PROJECTION, VELOCITY_PROJECTION):
            what = "position" if status == POSITION_PROJECTION else "velocity"
            return (f"{what} projection: residual of the kept rows {c[FAIL_RESIDUAL]:.3e} > "
                    f"{c[FAIL_TARGET]:.1e} (= {engine.PROJECTION_MARGIN:g} × max(proj_tol × "
                    f"min(1, size in m), round-off floor)) after "
                    f"{engine.PROJECTION_MAX_ITER} iterations")
        messages = {
            ACCEPTED: f"step accepted: t = {t:.6g}",
            REJECTED: f"step rejected at t = {t:.6g}: error estimate {c[ERR]:.3e} > 1",
            NON_FINITE: (f"{failure} (t = {t:.6g})" if failure else
                         f"non-finite state at t = {t:.6g} (the error estimate is "
                         f"{c[ERR]:.3e})"),
            MAX_ATTEMPTS: f"no step accepted within the attempts allowed at t = {t:g}",
            CHECK: f"a recorded state at t = {t:.6g} failed the constraint check",
            FULL: f"record buffers full at t = {t:.6g} (the next call goes on)",
            SOLVER_FAILED: f"{self.solver.name}: {failure} at t = {t:.6g}",
            CALLBACK: f"a callback raised at t = {t:.6g}",
        }
        return messages.get(status, f"unknown status {status} at t = {t:.6g}")

    def error(self, status, t, message=None):
        """The exception of a failed evaluation or projection with ``status`` (its
        ``message``, default :meth:`message`)."""
        message = self.message(status, t) if message is None else message
        if status in (POSITION_PROJECTION, VELOCITY_PROJECTION):
            return ProjectionError(message)
        if status == UNPIVOTABLE_JOINT:
            return MassSpreadError(message)
        return np.linalg.LinAlgError(message)

    def project(self, t, y, W, mode, tol, fresh=True):
        """``y`` (2 N,) projected in place at time ``t`` (weight table ``W``) by the core's
        one projection rule (``nc_project``, natcoord/core/src/dopri5.c; ``mode``
        PROJECT_VELOCITIES: the velocities alone; ``fresh``: factored at ``y`` first);
        raises :meth:`error` on failure."""
        self.callbacks.failure = ""
        status = engine.project(*self.packed, self.hooks, y, W, mode, tol, fresh)
        if status:
            raise self.error(status, t)
        return y
