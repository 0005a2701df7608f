"""Compiled sensitivity sweep: the derivative of the DOPRI5 run in one Numba call
(issue 10; docs/method.md#18-sensitivities).

The sweep of :mod:`natcoord.analysis.sensitivity` — re-evaluate each stage of every
accepted step, factor the KKT matrix there and solve, per direction,

    [[M, Gᵀ], [G, 0]] [da; dλ] = [df − dM a − dGᵀ λ;  dγ − dG a],

then differentiate the projection and the dense output (linear:
:func:`natcoord.integrate.compiled.interpolate` of the derivatives) — with the forward
run's kernels (:mod:`natcoord.integrate.compiled`: ``rhs`` evaluates and factors,
``solve`` solves) and these right-hand sides:

* ``dγ − dG a`` and ``dGᵀ λ`` (``dG v + dg_t`` for the projection): the
  constraint kernel's terms differentiated in one pass
  (:func:`constraint_directional`; bilinear, exact);
* spring–dampers analytically (:func:`spring_derivative`), constant torques
  ``½ τ × de_k``; gravity and constant point forces do not vary;
* parameters (:func:`natcoord.dynamics.linearization.parameter_direction`): a constant
  ``df`` and ``dJ4`` per column (mass, inertia, gravity, the scale of a
  constant point force), the tension's derivative ``∂T/∂k = l − l0``,
  ``∂T/∂c = l̇``, ``∂T/∂l0 = −k`` of a spring, or the scale of a constant
  torque, whose ``df = ½ τ × e_k`` moves with the body's axes.

For models :func:`natcoord.integrate.compiled.compilable` accepts, the block solver
without refinement, and drives that are absent or compiled; the parameters of
:data:`PARAMETERS`. :func:`natcoord.analysis.sensitivity.sensitivities` keeps its
Python sweep for everything else.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..integrate import compiled as cc
from ..integrate.compiled import (A_DENSE, C_DENSE, affine_point, evaluate_constraints, factor, interpolate, rhs,
                       solve, stage_work, torque_forces, weights_at)
from ..dynamics.linearization import parameter_direction
from ..model.parameters import loads
from ..model.forces import Torque
from ..util.jit import njit
from ..model.kernels import jacobian_times
from ..linalg import make_solver
from ..linalg.base import DROP_TOL, HOLD_TOL

#: memory for the stage factorizations of one round of steps (:func:`advance_swept`):
#: small enough to be read back from the cache
STORE_BYTES = 2 ** 20

#: parameter kinds the compiled sweep differentiates (besides p0, v0)
PARAMETERS = ("mass", "inertia", "gravity", "stiffness", "damping", "rest_length", "load")
#: spring parameters: index in ``Directions.spring_kind``
SPRING_KINDS = ("stiffness", "damping", "rest_length")
STIFFNESS, DAMPING, REST_LENGTH = range(3)

#: per column: constant ``df`` (4 n, 3), the body of ``dJ4`` (−1: none) and
#: ``dJ4`` (4, 4), the spring (−1: none) and which of its parameters, the
#: constant torque whose scale it is (−1: none; its force moves with the axes)
Directions = namedtuple("Directions", ["df", "body", "dJ4", "spring", "spring_kind",
                                       "torque"])

#: the sweep's buffers: the linearization point ``(a, λ)``, the weight table,
#: the stages ``K`` (7, 2N) and their derivatives ``dK`` (c, 7, 2N), directions
#: (c, 2N): ``dy`` at the last step's end, ``dyold`` at its start, the
#: right-hand sides, the ``clock``
Work = namedtuple("Work", [
    "a", "lam", "W", "y", "K", "dK", "dy", "dys", "dyold", "dynew", "dout", "comb",
    "F", "s", "dx", "mu", "tmp", "clock"])

#: ``Work.clock``: the last step's start, size and end; 1 once the first step is swept
T_OLD, STEP, T_NEW, STARTED = range(4)


def supported(model, solver, params):
    """True if the compiled sweep covers ``model`` solved by ``solver`` (a
    :class:`~natcoord.linalg.base.KKTSolver`) and the parameter names ``params``."""
    return (solver.name == "block" and not solver.refine
            and cc.compilable(model)
            and (model.n_weights == 1 or model.tables.laws is not None)
            and all(name in ("p0", "v0") or name.partition(":")[0] in PARAMETERS
                    for name in params))


def directions(model, T, thetas):
    """:data:`Directions` of the columns' parameters (None: an initial-state column);
    ``T`` the model's compiled tables."""
    c, rows = len(thetas), 4 * model.n_bodies
    D = Directions(np.zeros((c, rows, 3)), np.full(c, -1, np.int64), np.zeros((c, 4, 4)),
                   np.full(c, -1, np.int64), np.zeros(c, np.int64), np.full(c, -1, np.int64))
    for j, name in enumerate(thetas):
        if name is None:
            continue
        kind, _, key = name.partition(":")
        if kind in SPRING_KINDS:
            D.spring[j], D.spring_kind[j] = int(key), SPRING_KINDS.index(kind)
            continue
        if kind == "load":                 # a constant point force's df is constant
            load = loads(model)[int(key)]
            if isinstance(load, Torque):
                D.torque[j] = T.force_index[model.forces.index(load)]
            else:
                load.apply(0.0, None, None, None, D.df[j])
            continue
        theta = parameter_direction(model, name, None)        # constant in the state
        D.df[j] = theta.get("df", 0.0)
        for body, dJ4 in theta.get("dM", ()):
            D.body[j], D.dJ4[j] = body, dJ4
    return D


class Sweep:
    """The compiled sweep of :func:`natcoord.analysis.sensitivity.sensitivities`, riding along the
    forward run: :meth:`advance` takes the place of :func:`natcoord.integrate.compiled.advance`.

    ``dropped``: the rows the sweep's workspace dropped last, whose hysteresis
    its own factorizations (at the initial state and at the projected points)
    continue; ``dy`` (c, 2N) the directions at the initial state, ``thetas``
    the parameter of each column (None: an initial-state column);
    ``drop_tol``, ``hold_tol``: the block solver's. The stage factorizations
    come from the stepper, kept for :data:`STORE_BYTES` worth of steps at a time.
    """

    def __init__(self, model, dropped, dy, thetas, drop_tol=DROP_TOL, hold_tol=HOLD_TOL):
        solver = make_solver(model, "block", drop_tol, hold_tol)
        self._Wk = solver.work
        S = self._S = cc.make_buffers(model, model.n_rows - 6 * model.n_bodies)
        S.ctrl[cc.DROP_TOL], S.ctrl[cc.HOLD_TOL] = solver.drop_tol, solver.hold_tol
        S.threshold[:] = solver.drop_tol                 # hysteresis: as _update_thresholds
        S.threshold[dropped - 6 * model.n_bodies] = solver.hold_tol
        self._B = B = _work(model, len(thetas))
        model.tables.weight_table(0.0, B.W)              # constant rows (all, without drives)
        B.dy[:] = dy
        self._D = directions(model, cc.make_tables(model), thetas)
        steps = max(1, STORE_BYTES // cc.store_bytes(self._Wk, model.n_rows))
        self._segments = cc.make_segments(model, steps)
        self._store = cc.make_store(self._Wk, model.n_rows, steps)
        self._derivatives = np.zeros((0,) + dy.shape)

    def advance(self, args, repeat=True):
        """:func:`advance_swept` with the stepper's arguments ``args`` (those of
        :func:`natcoord.integrate.compiled.advance` up to the records); ``repeat`` False:
        one round only (the caller reads the steps' dense output from the
        returned segments). Returns ``cc.advance``'s six values with ``m``
        counting the last round's steps, the segments, and the derivatives
        (n, c, 2N) at the ``n`` records."""
        records = args[-1]
        if self._derivatives.shape[0] != records.shape[0]:
            self._derivatives = np.zeros((records.shape[0],) + self._B.dy.shape)
        *out, swept = advance_swept(*args, *self._segments, self._store, self._S, self._Wk,
                                    self._D, self._B, self._derivatives, repeat)
        if swept != 0:
            raise np.linalg.LinAlgError(f"compiled sensitivity sweep: factorization status "
                                        f"{swept}")
        return (*out, self._segments, self._derivatives[:out[1]].copy())

    def last_step(self):
        """``(t, derivatives)`` at the start and at the end of the last step swept (none
        before the first)."""
        B = self._B
        if B.clock[STARTED] == 0.0:
            return ()
        return (B.clock[T_OLD], B.dyold.copy()), (B.clock[T_NEW], B.dy.copy())


def _work(model, c):
    n, m, rows = model.n_coords, model.n_rows, 4 * model.n_bodies
    z = np.zeros
    return Work(a=z(n), lam=z(m), W=z((model.n_weights, 3)), y=z(2 * n), K=z((7, 2 * n)),
                dK=z((c, 7, 2 * n)), dy=z((c, 2 * n)), dys=z((c, 2 * n)), dyold=z((c, 2 * n)),
                dynew=z((c, 2 * n)), dout=z((c, 2 * n)), comb=z(2 * n), F=z((rows, 3)),
                s=z(m), dx=z(n), mu=z(m), tmp=z((8, 3)),
                clock=np.array([0.0, 0.0, -np.inf, 0.0]))


# ------------------------------------------------------------ right-hand sides
@njit(cache=True)
def constraint_directional(T, X, V, W, dX, dV, A, lam, level, s, F):
    """The constraint kernel's terms (:func:`natcoord.model.kernels.constraint_kernel`)
    differentiated along ``(dX, dV)`` in one pass, ``dG`` never formed (exact:
    ``G`` is affine in p, ``g_t`` and γ quadratic):

    * ``level = 2``, a stage's right-hand side: ``s = dγ − dG A``, ``F −= dGᵀ λ``;
    * ``level = 1``, the velocity projection: ``s = dG A + dg_t`` (``A = v``;
      ``dV``, ``λ`` and ``F`` unused).

    A quadratic term ``c x_a·x_b`` of weights ``(w, ẇ, ẅ)`` in row r puts
    ``w c dx_b`` at slot a and ``w c dx_a`` at slot b of ``dG``, so

        (dG A)_r += w c (dx_b·A_a + dx_a·A_b),  (dGᵀλ)_a += w c λ_r dx_b,  (dGᵀλ)_b += w c λ_r dx_a,
        dg_t += ẇ c d(x_a·x_b),  dγ −= c (2 w d(v_a·v_b) + 2 ẇ d(x_a·v_b + x_b·v_a) + ẅ d(x_a·x_b));

    a linear term ``d·x_a``: ``dg_t += ẇ d·dx_a``, ``dγ −= 2 ẇ d·dv_a + ẅ d·dx_a``.
    The time-derivative weights are zero on undriven rows; their products are skipped.
    """
    s[:] = 0.0
    stage = level == 2
    for k in range(T.quad_row.size):
        r, a, b, c = T.quad_row[k], T.quad_a[k], T.quad_b[k], T.quad_c[k]
        w0, w1, w2 = W[T.quad_w[k], 0], W[T.quad_w[k], 1], W[T.quad_w[k], 2]
        wc = w0 * c
        dGA = 0.0
        for j in range(3):
            dGA += dX[b, j] * A[a, j] + dX[a, j] * A[b, j]
        dxx = 0.0
        if (w2 != 0.0 and stage) or (w1 != 0.0 and not stage):
            for j in range(3):
                dxx += dX[a, j] * X[b, j] + X[a, j] * dX[b, j]
        if not stage:
            s[r] += wc * dGA + w1 * c * dxx
            continue
        dvv = 0.0
        for j in range(3):
            dvv += dV[a, j] * V[b, j] + V[a, j] * dV[b, j]
        dxv = 0.0
        if w1 != 0.0:
            for j in range(3):
                dxv += dX[a, j] * V[b, j] + X[a, j] * dV[b, j] + dX[b, j] * V[a, j] \
                    + X[b, j] * dV[a, j]
        s[r] -= c * (2.0 * w0 * dvv + 2.0 * w1 * dxv + w2 * dxx) + wc * dGA
        wl = wc * lam[r]
        for j in range(3):
            F[a, j] -= wl * dX[b, j]
            F[b, j] -= wl * dX[a, j]
    for k in range(T.lin_row.size):
        w1, w2 = W[T.lin_w[k], 1], W[T.lin_w[k], 2]
        if w1 == 0.0 and w2 == 0.0:
            continue
        r, a, d = T.lin_row[k], T.lin_a[k], T.lin_d[k]
        ddx = d[0] * dX[a, 0] + d[1] * dX[a, 1] + d[2] * dX[a, 2]
        if stage:
            ddv = d[0] * dV[a, 0] + d[1] * dV[a, 1] + d[2] * dV[a, 2]
            s[r] -= 2.0 * w1 * ddv + w2 * ddx
        else:
            s[r] += w1 * ddx


@njit(cache=True)
def _spring_frame(T, i, X, V, tmp):
    """Spring ``i``: ``n = d / l`` into ``tmp[0]``, ``ḋ`` into ``tmp[1]`` (``d = r_b − r_a``);
    returns ``l``. Scratch ``tmp[2:4]``."""
    ea, eb = T.sp_a[i], T.sp_b[i]
    affine_point(T, ea, X, tmp[2])
    affine_point(T, eb, X, tmp[3])
    for j in range(3):
        tmp[0, j] = (T.aff_const[eb, j] + tmp[3, j]) - (T.aff_const[ea, j] + tmp[2, j])
    length = np.sqrt(tmp[0, 0] ** 2 + tmp[0, 1] ** 2 + tmp[0, 2] ** 2)
    affine_point(T, ea, V, tmp[2])
    affine_point(T, eb, V, tmp[3])
    for j in range(3):
        tmp[0, j] /= length
        tmp[1, j] = tmp[3, j] - tmp[2, j]
    return length


@njit(cache=True)
def _apply_pair(T, i, F, f):
    """``F += C(r̄_a)ᵀ f − C(r̄_b)ᵀ f``: ``f`` on spring ``i``'s end a, ``−f`` on b."""
    for e, sign in ((T.sp_a[i], 1.0), (T.sp_b[i], -1.0)):
        for k in range(T.aff_ptr[e], T.aff_ptr[e + 1]):
            s, c = T.aff_slot[k], sign * T.aff_coef[k]
            for j in range(3):
                F[s, j] += c * f[j]


@njit(cache=True)
def spring_derivative(T, i, X, V, dX, dV, F, tmp):
    """``F +=`` the derivative of spring ``i``'s force pair along ``(dX, dV)``.

    With ``l̇ = n·ḋ``, ``T = k (l − l0) + c l̇`` (force ``T n`` on a):
    ``dl = n·dd``, ``dn = (dd − n dl) / l``, ``dl̇ = ḋ·dn + n·dḋ`` and
    ``d(T n) = (k dl + c dl̇) n + T dn`` (``SpringLinearization`` in derivatives.py).
    """
    length = _spring_frame(T, i, X, V, tmp)
    n, rate, dd, drate, f = tmp[0], tmp[1], tmp[4], tmp[5], tmp[6]
    affine_point(T, T.sp_b[i], dX, dd)
    affine_point(T, T.sp_a[i], dX, tmp[2])
    dd -= tmp[2]
    affine_point(T, T.sp_b[i], dV, drate)
    affine_point(T, T.sp_a[i], dV, tmp[2])
    drate -= tmp[2]
    k, c = T.sp_k[i], T.sp_c[i]
    tension = k * (length - T.sp_l0[i]) + c * (n[0] * rate[0] + n[1] * rate[1] + n[2] * rate[2])
    dl = n[0] * dd[0] + n[1] * dd[1] + n[2] * dd[2]
    dn = tmp[7]
    for j in range(3):
        dn[j] = (dd[j] - n[j] * dl) / length
    dldot = 0.0
    for j in range(3):
        dldot += rate[j] * dn[j] + n[j] * drate[j]
    for j in range(3):
        f[j] = (k * dl + c * dldot) * n[j] + tension * dn[j]
    _apply_pair(T, i, F, f)


@njit(cache=True)
def force_derivative(T, X, V, dX, dV, F, tmp):
    """``F = ∂f/∂p dp + ∂f/∂v dv`` (4 n, 3) of the flattened forces: springs
    (:func:`spring_derivative`) and constant torques ``½ τ × de_k``."""
    F[:, :] = 0.0
    for k in range(T.force_kind.size):
        kind, i = T.force_kind[k], T.force_index[k]
        if kind == cc.TORQUE:
            torque_forces(T.tq_vec[i], 4 * T.tq_body[i], dX, F)
        elif kind == cc.SPRING:
            spring_derivative(T, i, X, V, dX, dV, F, tmp)


@njit(cache=True)
def parameter_force(T, D, j, X, V, A, F, tmp):
    """``F += ∂f/∂θ − ∂M/∂θ a`` of column ``j`` (``parameter_direction``): the constant
    ``df``, ``dJ4`` of one body times its accelerations, a spring's
    ``∂T/∂θ n`` with ``∂T/∂k = l − l0``, ``∂T/∂c = l̇``, ``∂T/∂l0 = −k``, or a
    torque's generalized force ``½ τ × e_k`` (its scale's derivative)."""
    F += D.df[j]
    if D.torque[j] >= 0:
        torque_forces(T.tq_vec[D.torque[j]], 4 * T.tq_body[D.torque[j]], X, F)
    b = D.body[j]
    if b >= 0:
        for r in range(4):
            for q in range(4):
                for k in range(3):
                    F[4 * b + r, k] -= D.dJ4[j, r, q] * A[4 * b + q, k]
    i = D.spring[j]
    if i >= 0:
        length = _spring_frame(T, i, X, V, tmp)
        n, rate = tmp[0], tmp[1]
        kind = D.spring_kind[j]
        if kind == STIFFNESS:
            dtension = length - T.sp_l0[i]
        elif kind == DAMPING:
            dtension = n[0] * rate[0] + n[1] * rate[1] + n[2] * rate[2]
        else:
            dtension = -T.sp_k[i]
        for k in range(3):
            tmp[6, k] = dtension * n[k]
        _apply_pair(T, i, F, tmp[6])


# ------------------------------------------------------------ one point
@njit(cache=True)
def acceleration_derivative(T, S, P, Wk, D, B, j, X, V, W, dX, dV, da):
    """``da`` of ``[[M, Gᵀ], [G, 0]] [da; dλ] = [df − dM a − dGᵀ λ; dγ − dG a]`` along
    ``(dX, dV)`` and column ``j``'s parameter, with ``K`` factored at ``(X, V)``
    and ``(a, λ)`` in ``B.a, B.lam`` (``LinearizationPoint.derivative``)."""
    A, F, s = B.a.reshape(-1, 3), B.F, B.s
    force_derivative(T, X, V, dX, dV, F, B.tmp)
    parameter_force(T, D, j, X, V, A, F, B.tmp)
    constraint_directional(T, X, V, W, dX, dV, A, B.lam, 2, s, F)
    solve(T, S, P, Wk, F.reshape(-1), s, da, B.mu)


@njit(cache=True)
def projection_derivative(T, S, P, Wk, B, X, V, W, dy, out):
    """``out = (dp⁺, dv⁺)`` of the projection at the projected ``(X, V)`` with ``K`` and
    ``G`` (``S.G``) there (``LinearizationPoint.projection_derivative``):

        dp⁺ = dp − M⁻¹Gᵀ (G M⁻¹ Gᵀ)⁻¹ G dp     (one solve with [0; −G dp])
        dv⁺ = dv + Δv,  [Δv; ν] = K⁻¹ [0; −(G dv + ∂(G v + g_t)/∂p dp⁺)]
    """
    n, s = dy.size // 2, B.s
    dp, dv = out[:n], out[n:]
    jacobian_times(S.G, T.pattern_row, T.pattern_slot, dy[:n].reshape(-1, 3), s)
    s *= -1.0
    solve(T, S, P, Wk, S.zero, s, B.dx, B.mu)
    for i in range(n):
        dp[i] = dy[i] + B.dx[i]
    dP = dp.reshape(-1, 3)
    jacobian_times(S.G, T.pattern_row, T.pattern_slot, dy[n:].reshape(-1, 3), s)
    constraint_directional(T, X, V, W, dP, V, V, B.lam, 1, B.mu, B.F)
    s += B.mu                                      # + ∂(G v + g_t)/∂p dp⁺
    s *= -1.0
    solve(T, S, P, Wk, S.zero, s, B.dx, B.mu)
    for i in range(n):
        dv[i] = dy[n + i] + B.dx[i]


@njit(cache=True)
def stage(T, S, P, Wk, D, B, t, y, dys, s):
    """``K[s] = (v, a)`` at ``(t, y)`` (factored there) and ``dK[:, s] = (dv, da)`` along
    the directions ``dys`` (c, 2N); returns a factorization status."""
    weights_at(T, t, B.W)
    status = rhs(T, S, P, Wk, y, B.W, 0, B.K[s])
    if status != 0:
        return status
    n = y.size // 2
    B.a[:] = B.K[s][n:]
    B.lam[:] = S.lam
    X, V = y[:n].reshape(-1, 3), y[n:].reshape(-1, 3)
    for j in range(dys.shape[0]):
        d, dK = dys[j], B.dK[j][s]
        dK[:n] = d[n:]
        acceleration_derivative(T, S, P, Wk, D, B, j, X, V, B.W, d[:n].reshape(-1, 3),
                                d[n:].reshape(-1, 3), dK[n:])
    return 0


@njit(cache=True)
def projected(T, S, P, Wk, B, t, y, dy, out):
    """``out`` (c, 2N): :func:`projection_derivative` of the directions ``dy`` at the
    projected ``(t, y)``, factored there (no accelerations needed); returns a
    factorization status."""
    weights_at(T, t, B.W)
    n = y.size // 2
    X, V = y[:n].reshape(-1, 3), y[n:].reshape(-1, 3)
    evaluate_constraints(T, S, X, V, B.W)
    status = factor(T, S, P, Wk)
    if status != 0:
        return status
    for j in range(dy.shape[0]):
        projection_derivative(T, S, P, Wk, B, X, V, B.W, dy[j], out[j])
    return 0


@njit(cache=True)
def _outputs(T, S, P, Wk, B, t_out, y_out, result, k):
    """``result[k:]`` for the records ``t_out[k:]`` up to the last swept step's end
    (``B.clock``): ``dy⁺`` at the end, else the projected dense output of the
    derivatives. Returns ``(status, next k)``."""
    t_old, h, t_new = B.clock[T_OLD], B.clock[STEP], B.clock[T_NEW]
    while k < t_out.size and t_out[k] <= t_new:
        if t_out[k] == t_new:
            result[k] = B.dy
        else:
            for j in range(B.dy.shape[0]):
                interpolate(B.dyold[j], B.dynew[j], B.dK[j], h, (t_out[k] - t_old) / h,
                            B.comb, B.dout[j])
            status = projected(T, S, P, Wk, B, t_out[k], y_out[k], B.dout, result[k])
            if status != 0:
                return status, k
        k += 1
    return 0, k


@njit(cache=True)
def sweep_chunk(T, S, P, Wk, D, B, seg_t, seg_y, seg_K, store, m, t_end, y_end, t_out, y_out,
                result):
    """The directions ``B.dy`` (c, 2N) carried along the forward run's first ``m``
    accepted steps ``(t_old, h)``, ``(y_old, y_new)``, stages ``K`` in ``seg_*``, whose stage
    factorizations are ``store`` (:data:`natcoord.integrate.compiled.FactorStore`), the
    last ending at the projected ``(t_end, y_end)`` (module docstring of
    :mod:`natcoord.analysis.sensitivity`):

        dY_s = dy + h Σ_j a_sj dK_j,   dK_s = (dv_s, da_s),   dy⁺ = P'(dY_6)

    with FSAL ``dK_0 = (dv⁺, da_6)`` (at the first step ever, ``dK_0`` is
    evaluated and factored at the initial state). ``result[k]`` (c, 2N): the
    derivative at the record ``(t_out[k], y_out[k])`` (:func:`_outputs`;
    records of the previous chunk's last step first). Returns 0 or a
    factorization status.
    """
    c, N = B.dy.shape
    n = N // 2
    dK, dy, dys, clock = B.dK, B.dy, B.dys, B.clock
    status, k = _outputs(T, S, P, Wk, B, t_out, y_out, result, 0)
    for i in range(m):
        if status != 0:
            return status
        t, h, y, K = seg_t[i, 0], seg_t[i, 1], seg_y[i, 0], seg_K[i]
        if clock[STARTED] == 0.0:
            status = stage(T, S, P, Wk, D, B, t, y, dy, 0)
            if status != 0:
                return status
            clock[STARTED] = 1.0
        else:
            for j in range(c):
                dK[j, 0, :n] = dy[j, n:]
                dK[j, 0, n:] = dK[j, 6, n:]
        B.dyold[:, :] = dy
        for s in range(1, 7):
            np.dot(A_DENSE[s, :s], K[:s], B.comb)      # Y_s as the forward run formed it
            for q in range(N):
                B.y[q] = y[q] + h * B.comb[q]
            for j in range(c):
                np.dot(A_DENSE[s, :s], dK[j][:s], B.comb)
                for q in range(N):
                    dys[j, q] = dy[j, q] + h * B.comb[q]
            weights_at(T, t + C_DENSE[s] * h, B.W)
            B.a[:] = K[s, n:]
            B.lam[:] = store.lam[i, s - 1]
            X, V = B.y[:n].reshape(-1, 3), B.y[n:].reshape(-1, 3)
            Ws = stage_work(Wk, store, i, s - 1)
            for j in range(c):
                d = dys[j]
                dK[j, s, :n] = d[n:]
                acceleration_derivative(T, S, P, Ws, D, B, j, X, V, B.W, d[:n].reshape(-1, 3),
                                        d[n:].reshape(-1, 3), dK[j, s, n:])
        B.dynew[:, :] = dys                              # dY_6 (A[6] = B)
        t_new, y_new = (seg_t[i + 1, 0], seg_y[i + 1, 0]) if i + 1 < m else (t_end, y_end)
        status = projected(T, S, P, Wk, B, t_new, y_new, B.dynew, dy)
        clock[T_OLD], clock[STEP], clock[T_NEW] = t, h, t_new
        if status == 0:
            status, k = _outputs(T, S, P, Wk, B, t_out, y_out, result, k)
    return status


@njit(cache=True)
def advance_swept(T, S, P, Wk, W7, W1, mode, budget, eps_floor, t_eval, next_out, every_step,
                  drift_tol, rec_t, rec_y, rec_obs, rec_kind, seg_t, seg_y, seg_K, store, S2,
                  Wk2, D, B, rec_d, repeat):
    """:func:`natcoord.integrate.compiled.advance` in rounds of as many steps as ``store`` holds,
    each round swept (:func:`sweep_chunk`, in the sweep's own buffers ``S2``,
    ``Wk2``) while its factorizations are still in cache; ``rec_d[k]`` (c, 2N)
    the derivatives at record k. Goes on while a round ends only because the
    store is full (and ``repeat``). Returns ``advance``'s values, records and
    steps summed over the rounds (``m`` of the last round), and the sweep's
    status (0, or a factorization's status).
    """
    n0 = steps = rejected = 0
    cap = rec_t.size - 1
    while True:
        status, n, next_out, s, r, m = cc.advance(
            T, S, P, Wk, W7, W1, mode, budget - steps - rejected, eps_floor, t_eval, next_out,
            every_step, drift_tol, rec_t[n0:], rec_y[n0:], rec_obs[n0:], rec_kind[n0:], seg_t,
            seg_y, seg_K, store)
        steps += s
        rejected += r
        swept = sweep_chunk(T, S2, P, Wk2, D, B, seg_t, seg_y, seg_K, store, m,
                            S.ctrl[cc.T_NOW], S.y, rec_t[n0:n0 + n], rec_y[n0:n0 + n],
                            rec_d[n0:n0 + n])
        n0 += n
        if swept != 0 or not repeat or status != cc.FULL or m < seg_t.shape[0] or n0 == cap:
            return status, n0, next_out, steps, rejected, m, swept
