"""Radau IIA of order 5 with projection: the implicit index-1 integrator for stiff mechanisms.

The three-stage collocation method (Hairer & Wanner, *Solving ODEs II*, IV.5
and IV.8) integrates ``y' = F(t, y)``, ``y = (p, v)``, ``F = (v, a(t, p, v))``
(docs/method.md#15-descriptor-form); accepted steps are projected onto the
position and velocity constraints as DOPRI5's are (VII.2). The pieces, as in
IV.8 (the RADAU5 code):

* stage increments ``Z = (z1, z2, z3)``, ``z_i = Y_i − y0``, solve
  ``Z = h (A ⊗ I) F(Z)`` by simplified Newton with one Jacobian
  ``J = ∂F/∂y = [[0, I], [∂a/∂p, ∂a/∂v]]``; in the variables
  ``W = (T⁻¹ ⊗ I) Z`` that diagonalize ``A⁻¹ = T Λ T⁻¹`` the iteration
  needs one real system ``(μ/h − J)`` and one complex system
  ``((α − iβ)/h − J)``. It starts from the last step's collocation polynomial,
  watches the contraction rate θ of the increments ``‖ΔW‖`` and stops when
  ``θ/(1 − θ) ‖ΔW‖ ≤ κ·Tol``; it gives up (a smaller ``h``) when θ ≥ 0.99 or when
  the rate predicts no convergence within ``NEWTON_MAXITER`` iterations;
* the error of the embedded order-3 formula ``ŷ1 − y1 = γ0 h f(y0) + Σ e_i z_i``,
  filtered by ``(I − h γ0 J)⁻¹``, filtered a second time (with ``f(y0 + err)``)
  when it fails on the first step or after a rejection;
* the predictive (Gustafsson) step-size controller with the safety factor
  ``fac = min(SAFETY, SAFETY (2 NIT + 1)/(2 NIT + iterations))``, no growth right
  after a rejection, a tenth of the step after a rejected first step;
* the Jacobian is computed at a step's start only when none is kept: it is kept
  while Newton contracts with ``θ ≤ JAC_RATE`` and recomputed after a failed
  Newton iteration or slow convergence; the LU factorizations are kept with
  ``h`` when the proposed change lies in ``KEEP_H`` and ``J`` is kept;
* the collocation polynomial as dense output (order 3 uniformly).

This is the logic of RADAU5 (IV.8 and radau5.f), with its constants, and two
departures measured on benchmarks/stiff.py: slow convergence is predicted from
the third Newton iteration, not the second (``PREDICT_FROM``), and a failed
error test alone does not discard a Jacobian under which Newton contracted
fast (:meth:`Radau._rejected`).

In natural coordinates a stiff spring's direction turns with the bodies, so the
Jacobian of one stage is not that of another. On the elastic pendulum
(``models.spring_pendulum``, k = 10⁶ N/m, ω = 1000 s⁻¹) simplified Newton
contracts slowly once the spring turns by a few hundredths of a radian within a
step (h ≳ 0.01 s at the bottom of the swing), and the velocity along the spring,
which turns any position error δ along it into an oscillation of amplitude ω δ,
holds the error estimate near 0.3 at h ≈ 0.013 s for ``rtol = atol = 1e-6``.
Even with Newton iterated to convergence the 2 s run then takes ~150 steps
where the same problem in polar coordinates (the spring's direction fixed)
takes 90; SciPy's Radau on this module's right-hand side and Jacobian takes 271.

The coefficients ``T, Λ, e`` are computed from the Butcher tableau at import
(``T`` from the eigenvectors of ``A⁻¹``, ``e`` from the order conditions of
the embedded formula with ``γ0 = 1/μ``).

``J`` comes from :func:`natcoord.dynamics.linearization.linearize` (one solve of the
factored KKT system per column, exact for the constraint and spring terms;
without the stabilization terms for ``projection="baumgarte"``, which only
slows Newton down). The Newton matrices are dense 2N × 2N (N = 12 × bodies)
and factored by ``scipy.linalg.lu_factor``: O(N³) per factorization, against
the O(N) right-hand side, at most one real and one complex factorization per
attempted step. That is acceptable here: the benchmark mechanisms have
N ≤ 156, where such an LU costs milliseconds, no more than the Jacobian's
2N KKT solves, and a stiff problem needs far fewer steps than with DOPRI5
(8× to 30× in benchmarks/stiff.py). A mechanism of hundreds of bodies would
want the structure of ``J`` exploited (the second-order form reduces the
systems to N × N, the block solver's sparsity further).

    stepper = Radau(model, t_bound=1.0, rtol=1e-8)
    while stepper.status == "running":
        record = stepper.step()
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import lu_factor, lu_solve

from ..dynamics.assembly import assemble
from ..dynamics.linearization import linearize
from ..dynamics.workspace import Workspace
from .base import EPS_FLOOR, PROJECTIONS, Evaluations, StepRecord, clip_step, initial_step
from ..linalg.base import DROP_TOL, HOLD_TOL
from ..dynamics.projection import ProjectionError

# ------------------------------------------------------------ coefficients (IV.5, Table 5.6)
S6 = np.sqrt(6.0)
A = np.array([[(88 - 7 * S6) / 360, (296 - 169 * S6) / 1800, (-2 + 3 * S6) / 225],
              [(296 + 169 * S6) / 1800, (88 + 7 * S6) / 360, (-2 - 3 * S6) / 225],
              [(16 - S6) / 36, (16 + S6) / 36, 1 / 9]])
C = A.sum(axis=1)                                       # (4 − √6)/10, (4 + √6)/10, 1


def _transformation(A):
    """``T, Λ`` with ``A⁻¹ = T Λ T⁻¹``, ``Λ = [[μ, 0, 0], [0, α, β], [0, −β, α]]``.

    Normalized as RADAU5's: the real eigenvector of unit length with positive
    entries, the complex one with last entry 1 (third row of ``T``: ``(T31, 1, 0)``).
    The Newton increments are measured in these variables ``W``, so the scaling
    fixes what the contraction rate and the stopping test see.
    """
    lam, V = np.linalg.eig(np.linalg.inv(A))
    real, upper = np.argmin(np.abs(lam.imag)), np.argmax(lam.imag)
    v_real = V[:, real].real / np.linalg.norm(V[:, real].real)
    v_real *= np.sign(v_real.sum())
    v_complex = V[:, upper] / V[2, upper]
    T = np.column_stack([v_real, v_complex.real, v_complex.imag])
    return T, np.linalg.inv(T) @ np.linalg.inv(A) @ T


T, LAMBDA = _transformation(A)
TI = np.linalg.inv(T)
MU = LAMBDA[0, 0]                                       # real eigenvalue of A⁻¹, 1/γ0
MU_COMPLEX = LAMBDA[1, 1] - 1j * LAMBDA[1, 2]           # α − iβ
#: ``e`` of the embedded formula: ``b̂`` of order 3 with ``b̂0 = γ0``, ``e = (b̂ − b)ᵀ A⁻¹``
E = (np.linalg.solve(np.vander(C, 3, increasing=True).T, [1 - 1 / MU, 1 / 2, 1 / 3])
     - A[2]) @ np.linalg.inv(A)
#: ``Z = V Q`` with ``V_ik = c_i^(k+1)``: the collocation polynomial ``u(t0 + θh) = y0 + Σ θ^(k+1) Q_k``
P = np.linalg.inv(np.vander(C, 4, increasing=True)[:, 1:])

#: Newton iterations per attempt (Hairer's NIT)
NEWTON_MAXITER = 7
#: Newton contraction rate up to which J is kept for the next step (Hairer's THET):
#: RADAU5 advises 0.1 where Jacobians are costly, as here (2N KKT solves each, against
#: 3 per Newton iteration)
JAC_RATE = 0.1
#: step-size changes in this range keep h and the LU factorizations (Hairer's QUOT1, QUOT2)
KEEP_H = (1.0, 1.2)
#: bounds of the step-size factor (Hairer's FACL = 5, FACR = 1/8: 1/5 ≤ h_new/h ≤ 8)
FAC_MIN, FAC_MAX, SAFETY = 0.2, 8.0, 0.9
#: floor of the last accepted error in the predictive controller (RADAU5's ERRACC)
ERR_ACC_MIN = 1e-2
#: Newton contraction rate taken for divergence (RADAU5: θ ≥ 0.99)
DIVERGENCE = 0.99
#: first iteration whose predicted convergence may abandon the attempt (RADAU5: the
#: second). From the third, θ is RADAU5's geometric mean of the last two ratios; the
#: second has one ratio, which a stiff component the first increment mostly corrects
#: inflates (the elastic pendulum in natural coordinates: ratios 0.6, 0.08, 0.3, …
#: where the iteration converges). Testing from the third iteration costs one more
#: iteration on an attempt that fails; on the pendulum of benchmarks/stiff.py it
#: takes 213 steps (59 rejected, 90 Jacobians) instead of 270 (116, 114), the
#: hexapod's run is the same.
PREDICT_FROM = 3
#: step-size factors after a Newton iteration that diverged, met a non-finite value or
#: used up NEWTON_MAXITER iterations, and after an error rejection of the first step
FAC_NEWTON_FAILED, FAC_FIRST_REJECTED = 0.5, 0.1


class DenseOutput:
    """The collocation polynomial of one Radau step (order 3, IV.8)."""

    def __init__(self, t_old, h, y_old, Q):
        self.t_old, self.t, self.h = t_old, t_old + h, h
        self.y_old, self.Q = y_old, Q

    def __call__(self, t):
        """``y`` (2 N,) at time ``t``, (k, 2 N) at times (k,) (unprojected; extrapolates
        outside the step)."""
        theta = (np.asarray(t, float) - self.t_old) / self.h
        return self.y_old + np.stack([theta, theta**2, theta**3], axis=-1) @ self.Q


class Radau:
    """Radau IIA (order 5) with projection, one accepted step per :meth:`step`.

    Arguments as :func:`natcoord.integrate.simulate.simulate` (``solver`` names the KKT
    backend); ``state``: a consistent initial :class:`~natcoord.model.frozen.State`
    (default ``assemble(model, t=t0).state``). Interface of
    :class:`natcoord.integrate.stepper.DOPRI5`: ``t``, ``y`` ((2 N,) = (p, v), read-only
    view), ``h``, ``status``, ``message``, :meth:`rhs`, :meth:`project`,
    ``dropped``, counters ``n_steps n_rejected n_rhs n_factorizations
    n_projection_iterations n_active_set_changes`` and ``n_jacobians``,
    ``n_lu`` (LU decompositions, real and complex counted apart),
    ``n_newton_iterations``; ``n_rejected`` counts failed error tests and Newton
    iterations that did not converge. Applied forces may be Python callables.
    """

    compiled = False

    def __init__(self, model, t_bound, rtol=1e-6, atol=None, proj_tol=1e-10, state=None,
                 t0=0.0, first_step=None, max_step=np.inf, projection="position+velocity",
                 baumgarte=(10.0, 10.0), drop_tol=DROP_TOL, hold_tol=HOLD_TOL, solver=None):
        if projection not in PROJECTIONS:
            raise ValueError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
        self.model, self.n = model, model.n_coords
        self.ws = Workspace(model, solver, drop_tol, hold_tol)
        if state is None:
            state = assemble(model, t=t0).state
        t0 = float(state.t)
        if not t_bound > t0:
            raise ValueError(f"t_bound ({t_bound}) must be greater than t0 ({t0})")
        self.rtol = rtol
        self.atol = rtol if atol is None else atol
        self.proj_tol, self.projection, self.max_step = proj_tol, projection, max_step
        self.evaluations = Evaluations(self.ws, projection, proj_tol, baumgarte)
        self.t_bound, self.t_old = float(t_bound), t0
        # Hairer's Newton tolerance (fnewt) relative to the error scale
        self.newton_tol = max(10 * np.finfo(float).eps / rtol, min(0.03, rtol ** 0.5))
        self.n_steps = self.n_rejected = 0
        self.n_jacobians = self.n_lu = self.n_newton_iterations = 0
        self.status, self.message = "running", ""
        self._t, self._y = t0, np.concatenate([state.p, state.v])
        self._f = self.rhs(t0, self._y)
        h = first_step or initial_step(self.rhs, t0, self._y, self._f, rtol, self.atol,
                                        t_bound - t0)
        self._h = min(h, max_step)
        self._J = self._lu = self._dense = None
        self._jac_current = False                         # J at the present (t, y)
        self._h_lu = None                                 # h of the LU factorizations
        self._h_acc = self._err_acc = None                # of the last accepted step
        self._faccon = 1.0                                # η = θ/(1 − θ) of the last iteration
        self._theta = JAC_RATE                            # contraction rate of the last step
        self._rejected_last = False                       # the last attempt was rejected
        self._y_view = self._y.view()
        self._y_view.flags.writeable = False

    # ------------------------------------------------------------ state
    @property
    def t(self):
        return self._t

    @property
    def y(self):
        return self._y_view

    @property
    def h(self):
        """Step size the next attempt starts from."""
        return self._h

    n_rhs = nfev = property(lambda self: self.evaluations.n_rhs)
    n_projection_iterations = property(lambda self: self.evaluations.n_projection_iterations)
    n_active_set_changes = property(lambda self: self.evaluations.n_active_set_changes)

    @property
    def n_factorizations(self):
        """KKT factorizations (evaluations, Jacobians and projections)."""
        return self.ws.n_factorizations

    @property
    def dropped(self):
        """Rows dropped as redundant at the last KKT factorization (sorted)."""
        return self.ws.dropped.copy()

    # ------------------------------------------------------------ evaluations
    def rhs(self, t, y):
        """``F = (v, a)`` at ``(t, y)`` (a new array); counts as an evaluation."""
        return self.evaluations.rhs(t, y)

    def project(self, t, y):
        """``y`` projected as an output (a new array; docs/method.md#17-integration):
        factored at ``y`` first, see :func:`~natcoord.dynamics.projection.project_state`."""
        return self.evaluations.project(t, y, fresh=True)

    def jacobian(self, t, y):
        """``J = [[0, I], [∂a/∂p, ∂a/∂v]]`` at ``(t, y)``, from the linearization."""
        lin = linearize(self.model, (t, y[:self.n], y[self.n:]), workspace=self.ws)
        self.n_jacobians += 1
        n = self.n
        J = np.zeros((2 * n, 2 * n))
        J[:n, n:] = np.eye(n)
        J[n:, :n], J[n:, n:] = lin.da_dp, lin.da_dv
        return J

    def _factor(self, h):
        """LU factorizations of the real and complex Newton systems ``(γ − J) x = r``,
        ``γ = μ/h`` and ``γ = (α − iβ)/h``, in RADAU5's form for second-order systems
        (its ``M1 = M2 = N`` structure): with ``J = [[0, I], [K, D]]``, eliminating
        ``x_v = γ x_p − r_p`` leaves the N × N matrix ``γ² − γ D − K`` (a quarter of the
        2N × 2N matrix's storage, an eighth of its LU), see :meth:`_solve`."""
        n = self.n
        K, D = self._J[n:, :n], self._J[n:, n:]
        self._lu = tuple(lu_factor(gamma * (gamma * np.eye(n) - D) - K)
                         for gamma in (MU / h, MU_COMPLEX / h))
        self._h_lu = h
        self.n_lu += 2

    def _solve(self, r):
        """``x`` (2 N,) with ``(μ/h − J) x = r`` from the reduced real factorization of
        :meth:`_factor`: ``(γ² − γ D − K) x_p = r_v + (γ − D) r_p``, ``x_v = γ x_p − r_p``."""
        n, gamma = self.n, MU / self._h_lu
        r_p = r[:n]
        x_p = lu_solve(self._lu[0], r[n:] + gamma * r_p - self._J[n:, n:] @ r_p,
                       check_finite=False)
        return np.concatenate([x_p, gamma * x_p - r_p])

    def _solve_stages(self, R):
        """``ΔW`` (3, 2 N) of one Newton iteration (IV.8): row 0 from the real system,
        rows 1 and 2 as the real and imaginary parts of the complex one with the right-hand
        side ``R[1] + i R[2]``; reduced as in :meth:`_solve`, ``D`` applied to the three
        position parts at once."""
        n = self.n
        real, complex_ = MU / self._h_lu, MU_COMPLEX / self._h_lu
        R_p, R_v = R[:, :n], R[:, n:]
        DR = R_p @ self._J[n:, n:].T
        x0 = lu_solve(self._lu[0], R_v[0] + real * R_p[0] - DR[0], check_finite=False)
        r_p = R_p[1] + 1j * R_p[2]
        x1 = lu_solve(self._lu[1], R_v[1] + 1j * R_v[2] + complex_ * r_p - (DR[1] + 1j * DR[2]),
                      check_finite=False)
        v1 = complex_ * x1 - r_p
        return np.array([np.concatenate([x0, real * x0 - R_p[0]]),
                         np.concatenate([x1.real, v1.real]),
                         np.concatenate([x1.imag, v1.imag])])

    # ------------------------------------------------------------ one attempt
    def _newton(self, t, y, h, scale):
        """Simplified Newton for ``Z`` in the transformed variables ``W = (T⁻¹ ⊗ I) Z``
        (IV.8, RADAU5).

        Starts from the last step's collocation polynomial extrapolated to
        ``t + c_i h`` (zero on the first step). With ``‖ΔW_k‖`` the scaled RMS norm of
        the k-th increment, the contraction rate is ``θ_k = ‖ΔW_k‖/‖ΔW_(k−1)‖``, from the
        third iteration on the geometric mean ``√(θ_k θ_(k−1))`` (a stiff component the
        first increment mostly corrects makes single ratios alternate); stopped when
        ``η ‖ΔW_k‖ ≤ κ·Tol`` (``η = θ/(1 − θ)``, ``κ·Tol = newton_tol``; on the first
        iteration η is the last step's, ``max(η_old, eps)^0.8``); abandoned when
        ``θ ≥ 0.99`` or when ``θ^(NIT−1−k) η ‖ΔW_k‖`` predicts more than
        ``κ·Tol`` after the iterations left.

        Returns ``(Z, iterations, factor)``: ``factor`` is ``None`` when it converged,
        else the step-size factor for the retry: ``0.8 q^(−1/(4 + NIT − 1 − k))`` with
        ``q`` the predicted excess for slow convergence (RADAU5), ``0.5`` for
        divergence, a non-finite evaluation or ``NEWTON_MAXITER`` iterations used up.
        """
        if self._dense is None:
            Z = np.zeros((3, y.size))
        else:
            Z = np.array([self._dense(t + c * h) for c in C]) - self._dense(t)
        W = TI @ Z
        faccon = max(self._faccon, np.finfo(float).eps) ** 0.8
        theta, norm_old, ratio_old = JAC_RATE, None, None
        for k in range(1, NEWTON_MAXITER + 1):
            F = np.array([self.rhs(t + c * h, y + z) for c, z in zip(C, Z)])
            if not np.all(np.isfinite(F)):
                return Z, k, FAC_NEWTON_FAILED
            R = TI @ F - LAMBDA @ W / h
            dW = self._solve_stages(R)
            norm = _rms(dW / scale)
            if 1 < k < NEWTON_MAXITER:
                ratio = norm / norm_old
                theta = ratio if ratio_old is None else np.sqrt(ratio * ratio_old)
                ratio_old = ratio
                if theta >= DIVERGENCE:
                    return Z, k, FAC_NEWTON_FAILED
                faccon = theta / (1 - theta)
                excess = faccon * norm * theta ** (NEWTON_MAXITER - 1 - k) / self.newton_tol
                if excess >= 1 and k >= PREDICT_FROM:
                    self._faccon = faccon
                    excess = max(1e-4, min(20.0, excess))
                    return Z, k, 0.8 * excess ** (-1 / (4 + NEWTON_MAXITER - 1 - k))
            norm_old = max(norm, np.finfo(float).eps)
            W += dW
            Z = T @ W
            if faccon * norm <= self.newton_tol:
                self._faccon, self._theta = faccon, theta
                return Z, k, None
        return Z, NEWTON_MAXITER, FAC_NEWTON_FAILED

    def _error(self, t, y, h, Z, scale, refine):
        """``‖(I − h γ0 J)⁻¹ (γ0 h f(y0) + Σ e_i z_i)‖``, as
        ``(μ/h − J)⁻¹ (f(y0) + μ/h Σ e_i z_i)``; ``refine`` (the first step, or after a
        rejection) and above 1: once more with ``f(y0 + err)`` for ``f(y0)`` (IV.8)."""
        ZE = MU / h * (E @ Z)
        err = self._solve(self._f + ZE)
        size = _rms(err / scale)
        if refine and size >= 1:
            err = self._solve(self.rhs(t, y + err) + ZE)
            size = _rms(err / scale)
        return max(size, 1e-10)

    def _quotient(self, h, err, iterations):
        """``h / h_new`` proposed after an error ``err`` (RADAU5): ``err^(1/4) / fac`` with
        the safety factor ``fac = min(SAFETY, SAFETY (2 NIT + 1)/(2 NIT + iterations))``
        lowered by slow Newton convergence; for an acceptable error also at least
        Gustafsson's predictive ``(h_acc/h) (err²/err_acc)^(1/4) / SAFETY`` from the
        last accepted step ``(h_acc, err_acc)``; clipped to ``[1/FAC_MAX, 1/FAC_MIN]``."""
        fac = min(SAFETY, SAFETY * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + iterations))
        quot = min(1 / FAC_MIN, max(1 / FAC_MAX, err ** 0.25 / fac))
        if err < 1 and self._h_acc is not None:
            predictive = self._h_acc / h * (err ** 2 / self._err_acc) ** 0.25 / SAFETY
            quot = max(quot, min(1 / FAC_MIN, max(1 / FAC_MAX, predictive)))
        return quot

    # ------------------------------------------------------------ stepping
    def step(self, max_attempts=1_000_000):
        """Advance by one accepted step (rejected attempts retried inside).

        Returns a :class:`~natcoord.integrate.stepper.StepRecord`; on failure (step-size
        underflow, an evaluation that keeps failing, ``max_attempts``
        attempts) ``status`` becomes ``"failed"`` and the state stays at the
        last accepted step.
        """
        if self.status != "running":
            raise RuntimeError(f"step() on a {self.status} stepper")
        self.evaluations.resume()          # the Jacobian factors too: not from an output's set
        t, y = self._t, self._y
        rejected, err = 0, np.nan
        for _ in range(max_attempts):
            h = clip_step(self._h, t, self.t_bound, EPS_FLOOR)
            if h < EPS_FLOOR * max(abs(t), 1.0):
                return self._fail(t, err, rejected,
                                  f"step size underflow at t = {t:.6g} (h = {h:.3e})")
            try:
                accepted, err = self._attempt(t, y, h, t_new=self.t_bound
                                              if h == self.t_bound - t else t + h)
            except (ProjectionError, FloatingPointError, np.linalg.LinAlgError) as exc:
                if h < 1e-12 * max(abs(self.t_bound), 1.0):
                    return self._fail(t, err, rejected,
                                      f"evaluation failed at t = {t:.6g}: {exc}")
                self._h, accepted = 0.25 * h, False
                self._rejected(None)
            if accepted:
                self.n_rejected += rejected
                self.n_steps += 1
                if self._t >= self.t_bound:
                    self.status = "finished"
                return StepRecord(t, self._t, h, err, rejected, "accepted")
            rejected += 1
        return self._fail(t, err, rejected,
                          f"no step accepted in {max_attempts} attempts at t = {t:g}")

    def _fail(self, t, err, rejected, message):
        self.n_rejected += rejected
        self.status, self.message = "failed", message
        return StepRecord(t, t, 0.0, err, rejected, "failed", message)

    def _rejected(self, h, newton_failed=True):
        """After a rejected attempt: ``h`` the retry's step (``None``: already set). A
        Jacobian older than this step's start is recomputed after a failed Newton
        iteration (or evaluation), and after a failed error test only if Newton
        contracted slowly (``θ > JAC_RATE``): RADAU5 recomputes it after either, which
        cost the hexapod of benchmarks/stiff.py 6 of its 14 Jacobians."""
        if h is not None:
            self._h = h
        self._rejected_last = True
        if not self._jac_current and (newton_failed or self._theta > JAC_RATE):
            self._J = None

    def _attempt(self, t, y, h, t_new):
        """One attempt of step ``h`` to ``t_new`` (``t_bound`` exactly for the last step),
        RADAU5's logic: returns ``(accepted, error norm)`` and sets the next ``h``.

        The Jacobian is computed at the step's start when none is kept; the LU
        factorizations whenever ``h`` differs from theirs. A Newton failure retries
        with a smaller ``h`` (:meth:`_newton`) and a Jacobian of this step's start, an
        error rejection with the controller's ``h`` (a tenth of ``h`` on the very first
        step; :meth:`_rejected`). After an accepted step (projected) the Jacobian is
        kept if Newton contracted with ``θ ≤ JAC_RATE``, and with it ``h`` and the LU
        factorizations if the proposed change lies in ``KEEP_H``; after a rejection
        ``h`` does not grow.
        """
        if self._J is None:
            self._J, self._lu, self._jac_current = self.jacobian(t, y), None, True
        if self._lu is None or h != self._h_lu:
            self._factor(h)
        scale = self.atol + self.rtol * np.abs(y)
        Z, iterations, failed = self._newton(t, y, h, scale)
        self.n_newton_iterations += iterations
        if failed is not None:
            self._rejected(failed * h)
            return False, np.nan
        y_new = y + Z[-1]
        first = self._dense is None
        err = self._error(t, y, h, Z, scale, refine=first or self._rejected_last)
        h_new = h / self._quotient(h, err, iterations)
        if err >= 1:
            self._rejected(FAC_FIRST_REJECTED * h if first else h_new, newton_failed=False)
            return False, err
        y_proj = self.evaluations.project(t_new, y_new)
        self._f = self.rhs(t_new, y_proj)
        self._dense = DenseOutput(t, h, y.copy(), P @ Z)
        self.t_old, self._t, self._y = t, t_new, y_proj
        self._y_view = y_proj.view()
        self._y_view.flags.writeable = False
        self._h_acc, self._err_acc = h, max(ERR_ACC_MIN, err)
        h_new = min(h_new, self.max_step)
        if self._rejected_last:
            h_new = min(h_new, h)
        self._rejected_last = self._jac_current = False
        if self._theta <= JAC_RATE:
            if KEEP_H[0] <= h_new / h <= KEEP_H[1]:
                h_new = h
        else:
            self._J = None
        self._h = h_new
        return True, err

    def dense_output(self):
        """The collocation polynomial of the last accepted step (a :class:`DenseOutput`)."""
        if self._dense is None:
            raise RuntimeError("dense_output() needs an accepted step")
        return self._dense


def _rms(x):
    return float(np.sqrt(np.mean(x**2)))
