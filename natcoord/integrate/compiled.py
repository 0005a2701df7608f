"""Compiled DOPRI5 step: stages, error estimate, controller and projection in Numba.

The kernels here run one whole Dormand–Prince 5(4) step attempt of
:mod:`natcoord.integrate.simulate` without returning to Python: the seven stages (each
the constraint kernel of :mod:`natcoord.model.kernels`, the built-in generalized
forces, the block factorization with constraint partitioning and its solve),
the error norm, the PI controller and, for an accepted step, the simplified
Newton projection of :mod:`natcoord.dynamics.projection`. The math is that of those
modules (same tableau, error norm, controller constants, projection
constants, read from :mod:`natcoord.integrate.dormand_prince` and
:mod:`natcoord.dynamics.projection`), so the step sequence is the same.

Built-in forces are flattened into arrays (:func:`flatten_forces`): gravity
and constant point forces as constant slot forces, constant torques
(``½ τ × e_k``) and linear spring–dampers. Callable forces cannot be
compiled; :func:`flatten_forces` returns ``None`` for such a model and the
caller keeps the Python path.

All buffers are allocated once (:class:`natcoord.integrate.stepper.DOPRI5`); the kernels
allocate nothing.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..model.forces import PointForce, SpringDamper, Torque
from ..model.derived import derived
from ..model.drives import NO_LAWS, fill_weights
from .base import clip_step
from .dormand_prince import A, B, BETA, C, D, E, FAC_MAX, FAC_MIN, SAFETY
from ..model.kernels import constraint_kernel, jacobian_times
from ..util.jit import njit
from ..linalg.blockldl import WorkBuffers, factor_kernel, solve_kernel
from ..linalg.blockldl import FACTORED, SINGULAR_FRAME as FRAME_FAILED, \
    NOT_POSITIVE_DEFINITE as PIVOT_FAILED, UNPIVOTABLE_JOINT as JOINT_FAILED
from ..dynamics.projection import CONTRACTION, MARGIN, ROUNDOFF, size_factor

EPS = float(np.finfo(float).eps)

#: the Butcher tableau as a dense (7, 7) array (row s: coefficients of stages < s)
A_DENSE = np.zeros((7, 7))
for _s in range(1, 7):
    A_DENSE[_s, :_s] = A[_s]
B_DENSE = np.asarray(B, float)
E_DENSE = np.asarray(E, float)
C_DENSE = np.asarray(C, float)
D_DENSE = np.asarray(D, float)

#: status codes of a step attempt (−1: step-size underflow). Every kernel that
#: factors returns these, never :func:`~natcoord.linalg.blockldl.factor_kernel`'s own
#: codes (:func:`factor` translates them): a factorization code read as a step code
#: took a singular frame for an error rejection and an unpivotable joint's node for
#: a body (an ``IndexError`` in the message)
ACCEPTED, REJECTED, SINGULAR_FRAME, NOT_POSITIVE_DEFINITE, NON_FINITE, \
    POSITION_PROJECTION, VELOCITY_PROJECTION, MAX_ATTEMPTS, CHECK, FULL, FINISHED, \
    UNPIVOTABLE_JOINT = range(12)

#: projection modes, in the order of ``natcoord.integrate.base.PROJECTIONS``
PROJECT_POSITIONS_AND_VELOCITIES, PROJECT_VELOCITIES, NO_PROJECTION, BAUMGARTE = range(4)
MODES = {"position+velocity": PROJECT_POSITIONS_AND_VELOCITIES,
         "velocity": PROJECT_VELOCITIES, "none": NO_PROJECTION, "baumgarte": BAUMGARTE}

#: force kinds in the flattened force list
POINT_FORCE, TORQUE, SPRING = 0, 1, 2

#: kinds of the records :func:`advance` writes
STEP_RECORD, OUTPUT_RECORD = 0, 1

#: counters (int64 array): evaluations, factorizations, projection iterations,
#: active-set changes, where the last failure happened (body or node), and the
#: factorizations and projection iterations of those spent on :func:`advance`'s outputs
N_RHS, N_FACT, N_PROJ, N_ACTIVE, FAIL_WHERE, OUT_FACT, OUT_PROJ = range(7)

Tables = namedtuple("Tables", [
    "quad_row", "quad_a", "quad_b", "quad_c", "quad_w", "quad_ga", "quad_gb",
    "lin_row", "lin_a", "lin_d", "lin_w", "lin_g", "const_row", "const_c", "const_w",
    "pattern_row", "pattern_slot", "J4", "gravity_force",
    "force_kind", "force_index", "aff_ptr", "aff_slot", "aff_coef", "aff_const",
    "pf_aff", "pf_vec", "tq_body", "tq_vec", "sp_a", "sp_b", "sp_k", "sp_l0", "sp_c",
    "laws", "size_factor"])

Buffers = namedtuple("Buffers", [
    "g", "g_t", "gamma", "Gv", "G", "F", "s", "x", "lam", "zero",
    "K", "Kacc", "ystage", "ynew", "ynewacc", "yproj", "yprev", "y", "f",
    "threshold", "dropped", "mask", "rhs_mask", "counts", "ctrl", "tmp", "comb", "sq", "stack", "vals", "scale",
    "held"])

#: The stage factorizations of accepted steps, kept for the sensitivity sweep
#: (:mod:`natcoord.analysis.compiled_sensitivity`): at ``[m, s − 1]`` for step ``m`` and
#: stage ``s = 1 … 6`` the block factor (``B, inv, E, F, Gj`` of
#: :data:`~natcoord.linalg.blockldl.WorkBuffers`) and the multipliers λ.
FactorStore = namedtuple("FactorStore", ["B", "inv", "E", "F", "Gj", "lam"])

#: ctrl (float64 array): t, h, err_old, last_rejected, err of the last attempt,
#: h of the last accepted step, t before it, proj_tol, rtol, atol, max_step,
#: t_bound, drop_tol, hold_tol, baumgarte α, β, residual and target of a failed
#: projection, 1 while outputs are projected from the dropped set in ``held``
(T_NOW, H, ERR_OLD, LAST_REJECTED, ERR, H_ACC, T_PREV, PROJ_TOL, RTOL, ATOL, MAX_STEP,
 T_BOUND, DROP_TOL, HOLD_TOL, ALPHA, BETA_B, FAIL_RESIDUAL, FAIL_TARGET, HOLDING) = range(19)
N_CTRL = 19

# ------------------------------------------------------------------ set-up
def compilable(model):
    """True if every applied force of ``model`` has a compiled form."""
    return make_tables(model) is not None


def flatten_forces(model):
    """Applied forces as arrays, in ``model.forces`` order, or None.

    A point is an :class:`~natcoord.model.expressions.Affine` ``Σ c_s x_s + d``; point
    ``e`` has terms ``aff_slot/aff_coef[aff_ptr[e]:aff_ptr[e+1]]`` and constant
    ``aff_const[e]``. Returns None if a force is a callable or of another type.
    """
    kinds, index = [], []
    affines, pf_aff, pf_vec, tq_body, tq_vec = [], [], [], [], []
    sp_a, sp_b, sp_k, sp_l0, sp_c = [], [], [], [], []

    def affine(expr):
        affines.append(expr)
        return len(affines) - 1

    for force in model.forces:
        if type(force) is PointForce and not callable(force.force):
            kinds.append(POINT_FORCE)
            index.append(len(pf_aff))
            pf_aff.append(affine(force.point))
            pf_vec.append(np.asarray(force.force, float).reshape(3))
        elif type(force) is Torque and not callable(force.torque):
            kinds.append(TORQUE)
            index.append(len(tq_body))
            tq_body.append(force.index)
            tq_vec.append(np.asarray(force.torque, float).reshape(3))
        elif type(force) is SpringDamper:
            kinds.append(SPRING)
            index.append(len(sp_a))
            sp_a.append(affine(force.a))
            sp_b.append(affine(force.b))
            sp_k.append(force.k)
            sp_l0.append(force.l0)
            sp_c.append(force.c)
        else:
            return None
    ptr = np.cumsum([0] + [len(a.terms) for a in affines]).astype(np.int64)
    slots = np.array([s for a in affines for s in a.terms], np.int64)
    coefs = np.array([c for a in affines for c in a.terms.values()], float)
    consts = np.array([a.const for a in affines], float).reshape(-1, 3)

    def i64(x):
        return np.array(x, np.int64)

    def f64(x, shape=(-1,)):
        return np.array(x, float).reshape(shape)

    return dict(force_kind=i64(kinds), force_index=i64(index), aff_ptr=ptr, aff_slot=slots,
                aff_coef=coefs, aff_const=consts, pf_aff=i64(pf_aff), pf_vec=f64(pf_vec, (-1, 3)),
                tq_body=i64(tq_body), tq_vec=f64(tq_vec, (-1, 3)), sp_a=i64(sp_a),
                sp_b=i64(sp_b), sp_k=f64(sp_k), sp_l0=f64(sp_l0), sp_c=f64(sp_c))


def make_tables(model):
    """The model's constant arrays for the kernels (a :data:`Tables`), or None; built
    once per model (:func:`~natcoord.model.derived.derived`: every run and sweep reads them)."""
    return derived(model, "compiled tables", lambda: _build_tables(model))


def _build_tables(model):
    forces = flatten_forces(model)
    if forces is None:
        return None
    tables = model.tables
    return Tables(*tables.kernel_args(), tables.pattern_row, tables.pattern_slot,
                  np.ascontiguousarray(model.J4), np.ascontiguousarray(model.gravity_force),
                  **forces, laws=NO_LAWS if tables.laws is None else tables.laws,
                  size_factor=size_factor(model))


def make_block(solver):
    """Plan arrays and work buffers of a :class:`~natcoord.linalg.blockldl.BlockLDL`
    instance (its :data:`PlanArrays` and :data:`WorkBuffers`)."""
    return solver.plan.arrays, solver.work


def make_buffers(model, n_joint_rows):
    n, m, nnz = model.n_coords, model.n_rows, model.tables.pattern_row.size
    z = np.zeros
    return Buffers(g=z(m), g_t=z(m), gamma=z(m), Gv=z(m), G=z((nnz, 3)),
                   F=z((4 * model.n_bodies, 3)), s=z(m), x=z(n), lam=z(m), zero=z(n),
                   K=z((7, 2 * n)), Kacc=z((7, 2 * n)), ystage=z(2 * n), ynew=z(2 * n),
                   ynewacc=z(2 * n), yproj=z(2 * n), yprev=z(2 * n), y=z(2 * n), f=z(2 * n),
                   threshold=z(n_joint_rows), dropped=np.zeros(n_joint_rows, np.int64),
                   mask=np.zeros(m, np.bool_), rhs_mask=np.zeros(m, np.bool_),
                   counts=np.zeros(7, np.int64), ctrl=z(N_CTRL), tmp=z((5, 3)),
                   comb=z(2 * n), sq=z(2 * n), stack=np.zeros((64, 3), np.int64), vals=z(64),
                   scale=z(m), held=np.zeros(m, np.bool_))


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
                       np.empty((capacity, 6, n_rows)))


def store_bytes(Wk, n_rows):
    """Bytes of one step of a :data:`FactorStore`."""
    return Wk.B.itemsize * 6 * (n_rows + sum(a.size for a in (Wk.B, Wk.inv, Wk.E, Wk.F,
                                                               Wk.Gj)))


# ------------------------------------------------------------------ forces
@njit(cache=True)
def affine_point(T, e, X, out):
    """``out = Σ c_s X[s]`` (the rate part of Affine ``e``)."""
    out[0] = out[1] = out[2] = 0.0
    for k in range(T.aff_ptr[e], T.aff_ptr[e + 1]):
        s, c = T.aff_slot[k], T.aff_coef[k]
        out[0] += c * X[s, 0]
        out[1] += c * X[s, 1]
        out[2] += c * X[s, 2]


@njit(cache=True)
def _distribute(T, e, F, scale, vec):
    """``F += C(r̄)ᵀ (scale · vec)`` for point ``e``."""
    for k in range(T.aff_ptr[e], T.aff_ptr[e + 1]):
        s, c = T.aff_slot[k], T.aff_coef[k]
        for j in range(3):
            F[s, j] += c * (scale * vec[j])


@njit(cache=True, inline="always")
def torque_forces(tau, s, X, F):
    """``F[s + k] += ½ τ × X[s + k]``, k = 1, 2, 3: the generalized force of a
    constant torque τ on the body of slots ``s..s+3`` (linear in its axes, so
    with ``X = dX`` also its derivative)."""
    for a in range(1, 4):
        e = X[s + a]
        F[s + a, 0] += 0.5 * (tau[1] * e[2] - tau[2] * e[1])
        F[s + a, 1] += 0.5 * (tau[2] * e[0] - tau[0] * e[2])
        F[s + a, 2] += 0.5 * (tau[0] * e[1] - tau[1] * e[0])


@njit(cache=True)
def generalized_forces(T, X, V, F, tmp):
    """``F`` (4 n, 3): gravity plus the flattened applied forces (docs/method.md#12-mass-matrix).

    ``tmp`` (5, 3) scratch.
    """
    F[:, :] = T.gravity_force
    ra, rb, va, vb, d = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4]
    one = 1.0
    for k in range(T.force_kind.size):
        kind, i = T.force_kind[k], T.force_index[k]
        if kind == POINT_FORCE:                          # constant point force
            _distribute(T, T.pf_aff[i], F, one, T.pf_vec[i])
        elif kind == TORQUE:                             # constant torque: ½ τ × e_k
            torque_forces(T.tq_vec[i], 4 * T.tq_body[i], X, F)
        else:                                            # spring–damper
            ea, eb = T.sp_a[i], T.sp_b[i]
            affine_point(T, ea, X, ra)
            affine_point(T, eb, X, rb)
            affine_point(T, ea, V, va)
            affine_point(T, eb, V, vb)
            for j in range(3):
                d[j] = (T.aff_const[eb, j] + rb[j]) - (T.aff_const[ea, j] + ra[j])
            length = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
            for j in range(3):
                d[j] /= length
            rate = d[0] * (vb[0] - va[0]) + d[1] * (vb[1] - va[1]) + d[2] * (vb[2] - va[2])
            tension = T.sp_k[i] * (length - T.sp_l0[i]) + T.sp_c[i] * rate
            _distribute(T, ea, F, tension, d)
            _distribute(T, eb, F, -tension, d)


@njit(cache=True)
def energy(T, X, V, tmp):
    """Kinetic ``½ vᵀMv`` plus gravity ``−f_g·p`` plus spring energies; ``tmp`` (2, 3)."""
    kin = 0.0
    for i in range(T.J4.shape[0]):
        for a in range(4):
            for b in range(4):
                kin += T.J4[i, a, b] * (V[4 * i + a, 0] * V[4 * i + b, 0]
                                        + V[4 * i + a, 1] * V[4 * i + b, 1]
                                        + V[4 * i + a, 2] * V[4 * i + b, 2])
    pot = 0.0
    for s in range(X.shape[0]):
        for j in range(3):
            pot -= T.gravity_force[s, j] * X[s, j]
    ra, rb = tmp[0], tmp[1]
    for i in range(T.sp_a.size):
        affine_point(T, T.sp_a[i], X, ra)
        affine_point(T, T.sp_b[i], X, rb)
        d2 = 0.0
        for j in range(3):
            dj = (T.aff_const[T.sp_b[i], j] + rb[j]) - (T.aff_const[T.sp_a[i], j] + ra[j])
            d2 += dj * dj
        pot += 0.5 * T.sp_k[i] * (np.sqrt(d2) - T.sp_l0[i]) ** 2
    return 0.5 * kin + pot


# ------------------------------------------------------------ linear algebra
@njit(cache=True)
def evaluate_constraints(T, S, X, V, W):
    constraint_kernel(X, V, W, T.quad_row, T.quad_a, T.quad_b, T.quad_c, T.quad_w, T.quad_ga,
                      T.quad_gb, T.lin_row, T.lin_a, T.lin_d, T.lin_w, T.lin_g, T.const_row,
                      T.const_c, T.const_w, S.g, S.g_t, S.gamma, S.G)


@njit(cache=True)
def _velocity_residual(T, S, V):
    """``S.Gv = G v + g_t`` for the Jacobian in ``S.G``."""
    jacobian_times(S.G, T.pattern_row, T.pattern_slot, V, S.Gv)
    for r in range(S.Gv.size):
        S.Gv[r] += S.g_t[r]


@njit(cache=True)
def factor(T, S, P, Wk):
    """Block factorization of ``S.G`` with partitioning and its hysteresis.

    Returns 0, or the failure of :func:`natcoord.linalg.blockldl.factor_kernel` as a
    step status: ``SINGULAR_FRAME`` (``counts[FAIL_WHERE]`` the body),
    ``NOT_POSITIVE_DEFINITE`` (a body pivot; the node) or ``UNPIVOTABLE_JOINT``
    (a joint row kept on geometry that the masses make unpivotable; the joint's
    node). On success ``S.mask`` marks the dropped rows and the
    thresholds for the next factorization are set as
    ``KKTSolver._update_thresholds`` does: hold_tol on dropped rows, else drop_tol.
    """
    status, where, count = factor_kernel(S.G, S.threshold, P, Wk)
    if status != FACTORED:
        S.counts[FAIL_WHERE] = where
        if status == FRAME_FAILED:
            return SINGULAR_FRAME
        if status == PIVOT_FAILED:
            return NOT_POSITIVE_DEFINITE
        return UNPIVOTABLE_JOINT
    n_rigid = S.mask.size - S.threshold.size
    S.mask[:] = False
    S.threshold[:] = S.ctrl[DROP_TOL]
    for k in range(count):
        S.mask[n_rigid + Wk.dropped[k]] = True
        S.threshold[Wk.dropped[k]] = S.ctrl[HOLD_TOL]
    S.counts[N_FACT] += 1
    return 0


@njit(cache=True)
def _set_dropped(S, mask):
    """``S.mask = mask`` with the thresholds :func:`factor` leaves with that dropped set."""
    n_rigid = S.mask.size - S.threshold.size
    S.mask[:] = mask
    for k in range(S.threshold.size):
        S.threshold[k] = S.ctrl[HOLD_TOL] if mask[n_rigid + k] else S.ctrl[DROP_TOL]


@njit(cache=True)
def hold_for_output(S):
    """Before an output's projection: start from the dropped set (and hysteresis) of
    the integrator's last factorization, kept in ``S.held`` at the first output
    after it; :func:`resume` gives it back to the next step.

    Outputs must neither see each other's dropped sets nor change the steps'.
    Chained, a row an output dropped at a singular pose stayed dropped from
    output to output (its pivot below hold_tol) long after it stopped being
    redundant, and failed the check: the four-bar with 1001 outputs in
    [0.708, 0.709] at t = 0.70852 (‖G v + g_t‖ 1.05e-10 in top1.1: x), while 101
    outputs passed; and the step sequence depended on ``t_eval``.
    """
    if S.ctrl[HOLDING] == 0.0:
        S.held[:] = S.mask
        S.ctrl[HOLDING] = 1.0
    else:
        _set_dropped(S, S.held)


@njit(cache=True)
def resume(S):
    """Before the integrator factors again: its own dropped set back, if outputs were
    projected since (:func:`hold_for_output`)."""
    if S.ctrl[HOLDING] != 0.0:
        _set_dropped(S, S.held)
        S.ctrl[HOLDING] = 0.0


@njit(cache=True)
def solve(T, S, P, Wk, r, s, x, lam):
    """``(x, λ)`` of ``[[M, Gᵀ], [G, 0]] [x; λ] = [r; s]`` with the current factor."""
    solve_kernel(r, s, P, Wk, x, lam)


@njit(cache=True)
def stage_work(Wk, store, m, s):
    """``Wk`` with its factor arrays in ``store[m, s]`` (a :data:`FactorStore`): a
    factorization through it lands there, a solve through it uses the one kept."""
    return WorkBuffers(store.B[m, s], store.inv[m, s], store.E[m, s], store.F[m, s],
                       store.Gj[m, s], Wk.floor, Wk.bound, Wk.dropped, Wk.decided, Wk.I6,
                       Wk.y, Wk.S3, Wk.z, Wk.ap)


@njit(cache=True)
def _keep_factor(Wk, S, store, m, s):
    """Copy the factor in ``Wk`` and the multipliers ``S.lam`` to ``store[m, s]``."""
    store.B[m, s] = Wk.B
    store.inv[m, s] = Wk.inv
    store.E[m, s] = Wk.E
    store.F[m, s] = Wk.F
    store.Gj[m, s] = Wk.Gj
    store.lam[m, s] = S.lam


# ------------------------------------------------------------ evaluations
@njit(cache=True)
def rhs(T, S, P, Wk, y, W, mode, out):
    """``out = (v, a)`` at ``y = (p, v)`` (index-1 form, docs/method.md#15-descriptor-form); returns a status.

    ``mode`` 3 (Baumgarte) stabilizes γ by ``− 2α (G v + g_t) − β² g``.
    Counts evaluations and active-set changes as ``integrate._Run.rhs`` does.
    """
    n = y.size // 2
    X, V = y[:n].reshape(-1, 3), y[n:].reshape(-1, 3)
    evaluate_constraints(T, S, X, V, W)
    generalized_forces(T, X, V, S.F, S.tmp)
    if mode == BAUMGARTE:
        _velocity_residual(T, S, V)
        alpha, beta = S.ctrl[ALPHA], S.ctrl[BETA_B]
        for r in range(S.s.size):
            S.s[r] = S.gamma[r] - 2.0 * alpha * S.Gv[r] - beta ** 2 * S.g[r]
    else:
        S.s[:] = S.gamma
    status = factor(T, S, P, Wk)
    if status != 0:
        return status
    S.counts[N_RHS] += 1
    if S.counts[N_RHS] > 1:
        for r in range(S.mask.size):
            if S.mask[r] != S.rhs_mask[r]:
                S.counts[N_ACTIVE] += 1
                break
    S.rhs_mask[:] = S.mask
    solve(T, S, P, Wk, S.F.reshape(-1), S.s, S.x, S.lam)
    out[:n] = y[n:]
    out[n:] = S.x
    return 0


@njit(cache=True)
def weights_at(T, t, W):
    """The weight table ``W`` at time t from the drives' laws, if they are compiled
    (``T.laws`` empty: the table is constant, or filled by the caller)."""
    if T.laws.weight_kind.size > 0:
        fill_weights(T.laws, t, W)


@njit(cache=True)
def _kept_max(S, r):
    size = 0.0
    for i in range(r.size):
        if not S.mask[i]:
            size = max(size, abs(r[i]))
    return size


@njit(cache=True)
def _threshold(T, S, x, velocity, tol):
    """``projection.threshold``: ``max(tol, ROUNDOFF ε max_rows(|G| |x| (+ |g_t|)))``."""
    scale = S.scale
    scale[:] = 0.0
    X = x.reshape(-1, 3)
    for k in range(T.pattern_row.size):
        s = T.pattern_slot[k]
        scale[T.pattern_row[k]] += (abs(S.G[k, 0]) * abs(X[s, 0]) + abs(S.G[k, 1]) * abs(X[s, 1])
                                    + abs(S.G[k, 2]) * abs(X[s, 2]))
    top = 0.0
    for r in range(scale.size):
        if velocity:
            scale[r] += abs(S.g_t[r])
        top = max(top, scale[r])
    return max(tol, ROUNDOFF * EPS * top)


@njit(cache=True)
def _newton(T, S, P, Wk, x, other, W, velocity, tol, max_iter, fresh):
    """Simplified Newton of ``projection._simplified_newton`` on ``x`` (12 n,) in place.

    ``velocity`` False: the residual is ``g(x)`` (``other`` = v); True:
    ``G v + g_t`` with ``S.G, S.g_t`` as evaluated (``x`` = v). Kept rows are
    converged to ``MARGIN`` times the tolerance times ``T.size_factor`` (see
    :func:`~natcoord.dynamics.projection.size_factor`), raised to its round-off floor
    (:func:`_threshold`). Returns ``(status, iterations)``; status 0, a
    factorization status, or −1 when not converged (``ctrl[FAIL_RESIDUAL]``
    holds the residual, ``ctrl[FAIL_TARGET]`` the target). ``fresh``: factor at
    ``x`` before the first solve.
    """
    n = x.size
    previous = 0.0 if fresh else np.inf
    size = 0.0
    target = 0.0
    for it in range(max_iter):
        if velocity:
            _velocity_residual(T, S, x.reshape(-1, 3))
            r = S.Gv
        else:
            evaluate_constraints(T, S, x.reshape(-1, 3), other.reshape(-1, 3), W)
            r = S.g
        size = _kept_max(S, r)
        target = MARGIN * _threshold(T, S, x, velocity, tol * T.size_factor)
        if size <= target:
            return 0, it
        if size > CONTRACTION * previous:
            status = factor(T, S, P, Wk)
            if status != 0:
                return status, it
        previous = size
        for i in range(r.size):
            S.s[i] = -r[i]
        solve(T, S, P, Wk, S.zero, S.s, S.x, S.lam)
        for i in range(n):
            x[i] = x[i] + S.x[i]
    S.ctrl[FAIL_RESIDUAL] = size
    S.ctrl[FAIL_TARGET] = target
    return -1, max_iter


@njit(cache=True)
def project(T, S, P, Wk, y, W, mode, tol, fresh):
    """Project ``y = (p, v)`` in place as ``integrate._Run.project`` does (``fresh``: as
    ``projection.project_state``, for outputs); returns a status. Leaves ``S``
    evaluated (:func:`evaluate`) at the projected ``y`` in modes 0 and 1."""
    n = y.size // 2
    p, v = y[:n], y[n:]
    if mode == PROJECT_POSITIONS_AND_VELOCITIES:
        status, k = _newton(T, S, P, Wk, p, v, W, False, tol, 8, fresh)
        if status != 0:
            return POSITION_PROJECTION if status < 0 else status
        S.counts[N_PROJ] += k
        fresh = fresh and k == 0
    if mode == PROJECT_POSITIONS_AND_VELOCITIES or mode == PROJECT_VELOCITIES:
        if mode == PROJECT_VELOCITIES:
            evaluate_constraints(T, S, p.reshape(-1, 3), v.reshape(-1, 3), W)
        status, k = _newton(T, S, P, Wk, v, p, W, True, tol, 8, fresh)
        if status != 0:
            return VELOCITY_PROJECTION if status < 0 else status
        S.counts[N_PROJ] += k
    return 0


@njit(cache=True)
def evaluate(T, S, y, W):
    """``S.g, S.g_t, S.gamma, S.G`` and ``S.Gv = G v + g_t`` at ``y = (p, v)``."""
    n = y.size // 2
    V = y[n:].reshape(-1, 3)
    evaluate_constraints(T, S, y[:n].reshape(-1, 3), V, W)
    _velocity_residual(T, S, V)


@njit(cache=True)
def observe(T, S, y, W, evaluated):
    """``(energy, ‖g‖∞, ‖G v + g_t‖∞)`` at ``y`` (all rows), as ``_Run.record`` records;
    ``evaluated``: ``S`` already holds :func:`evaluate` at ``y``."""
    n = y.size // 2
    if not evaluated:
        evaluate(T, S, y, W)
    g_max, gv_max = 0.0, 0.0
    for r in range(S.g.size):
        g_max = max(g_max, abs(S.g[r]))
        gv_max = max(gv_max, abs(S.Gv[r]))
    return energy(T, y[:n].reshape(-1, 3), y[n:].reshape(-1, 3), S.tmp), g_max, gv_max


# ------------------------------------------------------------------ the step
@njit(cache=True)
def _pairwise_block(a, lo, n):
    """NumPy's ``pairwise_sum`` of ``a[lo:lo+n]`` for ``n ≤ 128`` (8 accumulators)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - n % 8:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def pairwise_sum(a, stack, vals):
    """``a.sum()`` in NumPy's pairwise order (so ``np.mean`` rounds the same).

    Blocks of more than 128 split at ``n/2`` rounded down to a multiple of 8,
    as NumPy's recursion does; here without recursion: scratch ``stack`` (64, 3)
    int64 and ``vals`` (64,).
    """
    n = a.size
    if n <= 128:
        return _pairwise_block(a, 0, n)
    # post-order over the split tree: frames (lo, n, state); values on a second stack
    top, vtop = 0, 0
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, n, 0
    while top >= 0:
        lo, m, state = stack[top, 0], stack[top, 1], stack[top, 2]
        if m <= 128:
            vals[vtop] = _pairwise_block(a, lo, m)
            vtop += 1
            top -= 1
            continue
        n2 = m // 2
        n2 -= n2 % 8
        if state == 0:
            stack[top, 2] = 1
            top += 1
            stack[top, 0], stack[top, 1], stack[top, 2] = lo, n2, 0
        elif state == 1:
            stack[top, 2] = 2
            top += 1
            stack[top, 0], stack[top, 1], stack[top, 2] = lo + n2, m - n2, 0
        else:
            vals[vtop - 2] = vals[vtop - 2] + vals[vtop - 1]
            vtop -= 1
            top -= 1
    return vals[0]


@njit(cache=True)
def attempt(T, S, P, Wk, W7, mode, store, m):
    """One DOPRI5 step attempt from ``(ctrl[T_NOW], S.y)`` with ``h = ctrl[H]``.

    Stages as ``integrate.simulate``: ``K[s] = f(t + c_s h, y + h Σ a_sj K[j])``,
    ``K[0]`` the FSAL value ``S.f``; ``y_new = y + h Σ b_j K[j]``; the error
    ``‖h Σ e_j K[j] / (atol + rtol max(|y|, |y_new|))‖_rms``. Accepted
    (err ≤ 1): projected into ``S.yproj``. ``W7[s]`` is the weight table at the
    stage time ``t + c_s h`` (filled here from compiled drives). Returns a
    status; ``ctrl[ERR]`` holds the error. A non-empty ``store`` (a
    :data:`FactorStore`) keeps the stage factorizations at ``store[m]``:
    stages 1–5 are factored in place there (:func:`stage_work`); stage 6
    stays in ``Wk``, which the projection goes on with, and is copied.
    """
    K, y, ys, yn, comb, sq = S.K, S.y, S.ystage, S.ynew, S.comb, S.sq
    N = y.size
    t, h = S.ctrl[T_NOW], S.ctrl[H]
    keep = store.lam.shape[0] > 0
    K[0, :] = S.f
    for s in range(1, 7):
        np.dot(A_DENSE[s, :s], K[:s], comb)       # BLAS, as numpy's A[s] @ K[:s]
        for i in range(N):
            ys[i] = y[i] + h * comb[i]
        weights_at(T, t + C_DENSE[s] * h, W7[s])
        Ws = stage_work(Wk, store, m, s - 1) if keep and s < 6 else Wk
        status = rhs(T, S, P, Ws, ys, W7[s], mode, K[s])
        if status != 0:
            return status
        if keep and s < 6:
            store.lam[m, s - 1] = S.lam
    if keep:
        _keep_factor(Wk, S, store, m, 5)
    rtol, atol = S.ctrl[RTOL], S.ctrl[ATOL]
    np.dot(B_DENSE[:6], K[:6], comb)
    for i in range(N):
        yn[i] = y[i] + h * comb[i]
    np.dot(E_DENSE, K, comb)
    for i in range(N):
        scale = atol + rtol * max(abs(y[i]), abs(yn[i]))
        q = h * comb[i] / scale
        sq[i] = q * q
    err = np.sqrt(pairwise_sum(sq, S.stack, S.vals) / N)
    S.ctrl[ERR] = err
    if not np.isfinite(err):
        return NON_FINITE
    if err > 1.0:
        return REJECTED
    S.yproj[:] = yn
    if mode <= 1:
        return project(T, S, P, Wk, S.yproj, W7[6], mode, S.ctrl[PROJ_TOL], False)
    return ACCEPTED


@njit(cache=True)
def step(T, S, P, Wk, W7, mode, max_attempts, eps_floor, store, m):
    """Attempts until one is accepted, a failure, or ``max_attempts``.

    The step-size logic of ``integrate.simulate``: ``h ← min(h, t_bound − t)``;
    an error rejection shrinks h by ``max(FAC_MIN, SAFETY err^−0.2)``, a failed
    evaluation by 0.25 (unless h is already below ``1e-12 max(|t_bound|, 1)``:
    then the failure status is returned); an accepted step moves ``y ← y_proj``
    (FSAL: ``f ← K[6]`` with ``ṗ = v`` at the projected state) and sets the
    next h by the PI controller. Returns ``(status, rejected attempts)``;
    status ``MAX_ATTEMPTS`` when none was accepted, −1 on step-size underflow.
    ``store, m``: where :func:`attempt` keeps the stage factorizations. Starts
    from the integrator's own dropped set, whatever outputs factored since
    (:func:`resume`).
    """
    c = S.ctrl
    rejected = 0
    N = S.y.size
    n = N // 2
    resume(S)
    for _ in range(max_attempts):
        t = c[T_NOW]
        c[H] = clip_step(c[H], t, c[T_BOUND], eps_floor)
        if c[H] < eps_floor * max(abs(t), 1.0):
            return -1, rejected
        status = attempt(T, S, P, Wk, W7, mode, store, m)
        if status == REJECTED:
            rejected += 1
            c[H] *= max(FAC_MIN, SAFETY * c[ERR] ** -0.2)
            c[LAST_REJECTED] = 1.0
            continue
        if status != ACCEPTED:
            if c[H] < 1e-12 * max(abs(c[T_BOUND]), 1.0):
                return status, rejected
            c[H] *= 0.25
            rejected += 1
            c[LAST_REJECTED] = 1.0
            continue
        err, h = c[ERR], c[H]
        S.yprev[:] = S.y
        S.y[:] = S.yproj
        S.ynewacc[:] = S.ynew
        S.Kacc[:, :] = S.K
        S.f[:] = S.K[6]
        S.f[:n] = S.y[n:]
        c[T_PREV] = t
        c[T_NOW] = c[T_BOUND] if h == c[T_BOUND] - t else t + h
        c[H_ACC] = h
        fac = err ** (0.2 - 0.75 * BETA) / c[ERR_OLD] ** BETA
        fct = min(FAC_MAX, max(FAC_MIN, SAFETY / max(fac, 1e-10)))
        if c[LAST_REJECTED] != 0.0:
            fct = min(fct, 1.0)
        c[H] = min(h * fct, c[MAX_STEP])
        c[ERR_OLD] = max(err, 1e-4)
        c[LAST_REJECTED] = 0.0
        return ACCEPTED, rejected
    return MAX_ATTEMPTS, rejected


# ------------------------------------------------------------------ many steps
@njit(cache=True)
def interpolate(y0, y1, K, h, theta, comb, out):
    """``integrate.dense_output`` of a step ``(y0, y1, K, h)`` at ``t_old + θ h`` into
    ``out`` (the same operations in the same order: ``D @ K`` by BLAS as NumPy's,
    into the scratch ``comb``); linear in ``(y0, y1, K)``, so also the derivative's."""
    np.dot(D_DENSE, K, comb)
    for i in range(out.size):
        dy = y1[i] - y0[i]
        r3 = h * K[0, i] - dy
        r4 = dy - h * K[6, i] - r3
        r5 = h * comb[i]
        out[i] = y0[i] + theta * (dy + (1 - theta) * (r3 + theta * (r4 + (1 - theta) * r5)))


@njit(cache=True)
def dense_point(S, theta, out):
    """:func:`interpolate` of the last accepted step at ``t_old + θ h`` into ``out``."""
    interpolate(S.yprev, S.ynewacc, S.Kacc, S.ctrl[H_ACC], theta, S.comb, out)


@njit(cache=True)
def violated(T, S, y, W, mode, tol, drift_tol, evaluated):
    """True where ``integrate._Run.check`` would act on ``y`` (locking aside): with
    position+velocity projection (mode 0) a row, kept or dropped, of ``g`` or
    ``G v + g_t`` above its :func:`_threshold`; otherwise a residual above ``drift_tol``.
    ``evaluated``: ``S`` already holds :func:`evaluate` at ``y`` (as :func:`project`
    leaves it in modes 0 and 1); either way it does on return."""
    n = y.size // 2
    if not evaluated:
        evaluate(T, S, y, W)
    if mode == PROJECT_POSITIONS_AND_VELOCITIES:
        tol_p = _threshold(T, S, y[:n], False, tol)
        tol_v = _threshold(T, S, y[n:], True, tol)
        for r in range(S.g.size):
            if abs(S.g[r]) > tol_p or abs(S.Gv[r]) > tol_v:
                return True
        return False
    size = 0.0
    for r in range(S.g.size):
        size = max(size, abs(S.g[r]), abs(S.Gv[r]))
    return size > drift_tol


@njit(cache=True)
def _record(T, S, W, t, y, kind, n, rec_t, rec_y, rec_obs, rec_kind):
    """Record ``y`` as :func:`violated` has just evaluated it."""
    rec_t[n] = t
    rec_y[n, :] = y
    rec_kind[n] = kind
    rec_obs[n, 0], rec_obs[n, 1], rec_obs[n, 2] = observe(T, S, y, W, True)


@njit(cache=True)
def _project_output(T, S, P, Wk, y, W, mode):
    """:func:`project` of an output from the integrator's dropped set
    (:func:`hold_for_output`), its work counted in ``OUT_FACT`` and ``OUT_PROJ``."""
    hold_for_output(S)
    fact, proj = S.counts[N_FACT], S.counts[N_PROJ]
    status = project(T, S, P, Wk, y, W, mode, S.ctrl[PROJ_TOL], True)
    S.counts[OUT_FACT] += S.counts[N_FACT] - fact
    S.counts[OUT_PROJ] += S.counts[N_PROJ] - proj
    return status


@njit(cache=True)
def _keep_step(S, m, seg_t, seg_y, seg_K):
    """Store the last accepted step's dense-output data (t_old, h; y_old, y_new; K) at ``m``."""
    seg_t[m, 0], seg_t[m, 1] = S.ctrl[T_PREV], S.ctrl[H_ACC]
    seg_y[m, 0, :] = S.yprev
    seg_y[m, 1, :] = S.ynewacc
    seg_K[m, :, :] = S.Kacc


@njit(cache=True)
def advance(T, S, P, Wk, W7, W1, mode, budget, eps_floor, t_eval, next_out, every_step,
            drift_tol, rec_t, rec_y, rec_obs, rec_kind, seg_t, seg_y, seg_K, store):
    """Accepted steps (:func:`step`) and their records, without returning to Python.

    Records (time, state, :func:`observe`, kind) go to ``rec_*`` in order: every
    accepted step if ``every_step``, else the points ``t_eval[next_out:]`` the
    steps pass (dense output, projected as an accepted step). Every recorded
    state passes :func:`violated` first. For a model without drives or with
    compiled ones (:func:`weights_at` fills ``W7``, ``W1``). With ``seg_t`` not empty, each
    accepted step's dense-output data go to ``seg_t`` (t_old, h), ``seg_y``
    (y_old, y_new) and ``seg_K`` (the stages), checked or not, and with ``store``
    not empty (a :data:`FactorStore` as long as ``seg_t``) its stage
    factorizations to ``store``. Stops when

    * ``t_bound`` is reached and its outputs written (``FINISHED``),
    * the record or step buffers are full (``FULL``; pending outputs of the last
      step are written by the next call),
    * a state fails the check (``CHECK``: record ``n`` holds it, not counted),
    * an output's projection fails (its status; ``rec_kind[n]`` is ``OUTPUT_RECORD``),
    * ``step`` fails (its status; ``rec_kind[n]`` is ``STEP_RECORD``), or ``budget``
      attempts are used (``MAX_ATTEMPTS``).

    Returns ``(status, records, next_out, accepted steps, rejected attempts, stored steps)``.
    """
    c = S.ctrl
    cap = rec_t.size - 1                 # the last slot holds a failing state
    n = steps = rejected = m = 0
    while True:
        while not every_step and next_out < t_eval.size and t_eval[next_out] <= c[T_NOW]:
            if n == cap:
                return FULL, n, next_out, steps, rejected, m
            t_out = t_eval[next_out]
            y = rec_y[n]
            dense_point(S, (t_out - c[T_PREV]) / c[H_ACC], y)
            rec_t[n], rec_kind[n] = t_out, OUTPUT_RECORD
            weights_at(T, t_out, W1)
            status = _project_output(T, S, P, Wk, y, W1, mode)
            if status != 0:
                return status, n, next_out, steps, rejected, m
            if violated(T, S, y, W1, mode, c[PROJ_TOL], drift_tol, mode <= 1):
                return CHECK, n, next_out, steps, rejected, m
            _record(T, S, W1, t_out, y, OUTPUT_RECORD, n, rec_t, rec_y, rec_obs, rec_kind)
            n += 1
            next_out += 1
        if c[T_NOW] >= c[T_BOUND]:
            return FINISHED, n, next_out, steps, rejected, m
        if n == cap or (seg_t.shape[0] > 0 and m == seg_t.shape[0]):
            return FULL, n, next_out, steps, rejected, m
        if steps + rejected >= budget:
            rec_kind[n] = STEP_RECORD
            return MAX_ATTEMPTS, n, next_out, steps, rejected, m
        status, r = step(T, S, P, Wk, W7, mode, budget - steps - rejected, eps_floor, store, m)
        rejected += r
        if status != ACCEPTED:
            rec_kind[n] = STEP_RECORD
            return status, n, next_out, steps, rejected, m
        if seg_t.shape[0] > 0:
            _keep_step(S, m, seg_t, seg_y, seg_K)
            m += 1
        weights_at(T, c[T_NOW], W1)
        if violated(T, S, S.y, W1, mode, c[PROJ_TOL], drift_tol, False):
            rec_t[n], rec_kind[n] = c[T_NOW], STEP_RECORD
            rec_y[n, :] = S.y
            return CHECK, n, next_out, steps, rejected, m
        steps += 1
        if every_step:
            _record(T, S, W1, c[T_NOW], S.y, STEP_RECORD, n, rec_t, rec_y, rec_obs, rec_kind)
            n += 1
