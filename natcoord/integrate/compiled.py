"""Set-up of the compiled DOPRI5 step (docs/method.md#17-integration).

The step itself — stages, error estimate, controller, projection, dense output
and the chunked advance with outputs — runs in the compiled core
(:mod:`natcoord.core`, natcoord/core/src/dopri5.c and forces.c), called by
:class:`natcoord.integrate.stepper.DOPRI5`. This module prepares what the core
reads: the model's constant arrays (:data:`~natcoord.model.core_tables.Tables`,
:func:`~natcoord.model.core_tables.make_tables`, built in the model layer), the
per-run buffers (:data:`Buffers`, :func:`make_buffers`), the dense-output
segments and the factorization store of the sensitivity sweep, and it names the
core's codes (statuses, projection modes, record kinds, counter and
``ctrl`` indices, as natcoord/core/src/dopri5.h numbers them).

Built-in forces are flattened into those tables
(:func:`~natcoord.model.core_tables.flatten_forces`); their laws are the core's
(natcoord/core/src/forces.c). The others — callable forces and torques, force
classes without a law in the core (:func:`~natcoord.model.core_tables.python_forces`)
— are called back from the core at each stage
(:class:`~natcoord.integrate.stepper.Callbacks`).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core import engine

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
    "threshold", "dropped", "mask", "rhs_mask", "counts", "ctrl", "tmp", "comb", "stack", "vals", "scale",
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
                   scale=z(m), held=np.zeros(m, np.bool_))
    S.ctrl[DROP_TOL], S.ctrl[HOLD_TOL] = solver.drop_tol, solver.hold_tol
    S.threshold[:] = solver.drop_tol
    return S


def pack_run(tables, buffers, plan, work):
    """The four tuples of a run — the model's tables, the run's buffers, the block
    solver's plan and work buffers — unpacked for the core once (``engine.pack``),
    in the order its step, rhs and projection take them."""
    return (engine.pack(tables, "T"), engine.pack(buffers, "S"),
            engine.pack(plan.arrays, "P"), engine.pack(work, "W"))


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
