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
  ``((α − iβ)/h − J)``;
* the error of the embedded order-3 formula ``ŷ1 − y1 = γ0 h f(y0) + Σ e_i z_i``,
  filtered by ``(I − h γ0 J)⁻¹``, refined once on the first step and after a
  rejection;
* the predictive (Gustafsson) step-size controller with Hairer's
  safety factor from the Newton iteration count; the Jacobian is kept while
  Newton contracts (``θ ≤ JAC_RATE``), and so is ``h`` with its LU
  factorizations when the proposed change is small (factor in [1, 1.2]);
* the collocation polynomial as dense output (order 3 uniformly).

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
(6× to 30× in benchmarks/stiff.py). A mechanism of hundreds of bodies would
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
    """``T, Λ`` with ``A⁻¹ = T Λ T⁻¹``, ``Λ = [[μ, 0, 0], [0, α, β], [0, −β, α]]``."""
    lam, V = np.linalg.eig(np.linalg.inv(A))
    real, upper = np.argmin(np.abs(lam.imag)), np.argmax(lam.imag)
    T = np.column_stack([V[:, real].real, V[:, upper].real, V[:, upper].imag])
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

NEWTON_MAXITER = 6
#: Newton contraction rate below which J is kept for the next step (Hairer's THET):
#: RADAU5 advises 0.1 where Jacobians are costly, as here (2N KKT solves each, against
#: 3 per Newton iteration); measured on benchmarks/stiff.py, 0.1 instead of the
#: default 0.001 halves the hexapod's wall time
JAC_RATE = 0.1
#: step-size changes in this range keep h and the LU factorizations (Hairer's QUOT1, QUOT2)
KEEP_H = (1.0, 1.2)
FAC_MIN, FAC_MAX, SAFETY = 0.2, 10.0, 0.9


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
        self._h_lu = None                                 # h of the LU factorizations
        self._err_old = self._h_old = None                # of the last accepted step
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
        """LU of ``μ/h − J`` and ``(α − iβ)/h − J``: the real and complex Newton systems."""
        identity = np.eye(self._J.shape[0])
        self._lu = (lu_factor(MU / h * identity - self._J),
                    lu_factor(MU_COMPLEX / h * identity - self._J))
        self._h_lu = h
        self.n_lu += 2

    # ------------------------------------------------------------ one attempt
    def _newton(self, t, y, h, scale):
        """Simplified Newton for ``Z`` in the transformed variables ``W``, stopped when
        ``θ/(1 − θ) ‖ΔZ‖ < newton_tol`` (θ the contraction rate) or abandoned when it diverges
        or cannot converge within ``NEWTON_MAXITER`` iterations.

        Returns ``(converged, iterations, Z, rate)``; the start is the last
        step's collocation polynomial extrapolated to ``t + c_i h``.
        """
        Z = (np.zeros((3, y.size)) if self._dense is None else
             np.array([self._dense(t + c * h) for c in C]) - y)
        W = TI @ Z
        lu_real, lu_complex = self._lu
        norm_old = rate = None
        for k in range(NEWTON_MAXITER):
            F = np.array([self.rhs(t + c * h, y + z) for c, z in zip(C, Z)])
            if not np.all(np.isfinite(F)):
                break
            R = TI @ F - LAMBDA @ W / h
            dW_complex = lu_solve(lu_complex, R[1] + 1j * R[2])
            dW = np.array([lu_solve(lu_real, R[0]), dW_complex.real, dW_complex.imag])
            norm = _rms((T @ dW) / scale)
            if norm_old is not None:
                rate = norm / norm_old
                if rate >= 1 or rate ** (NEWTON_MAXITER - k) / (1 - rate) * norm > \
                        self.newton_tol:
                    break
            W += dW
            Z = T @ W
            if norm == 0 or (rate is not None and rate / (1 - rate) * norm < self.newton_tol):
                return True, k + 1, Z, rate
            norm_old = norm
        return False, k + 1, Z, rate

    def _error(self, t, y, h, Z, scale, refine):
        """``‖(I − h γ0 J)⁻¹ (γ0 h f(y0) + Σ e_i z_i)‖``, as
        ``(μ/h − J)⁻¹ (f(y0) + μ/h Σ e_i z_i)``; ``refine``: once more with ``f(y0 + err)``."""
        ZE = MU / h * (E @ Z)
        err = lu_solve(self._lu[0], self._f + ZE)
        size = _rms(err / scale)
        if refine and size > 1:
            err = lu_solve(self._lu[0], self.rhs(t, y + err) + ZE)
            size = _rms(err / scale)
        return size

    def _factor_after(self, h, err, iterations):
        """Step-size factor: Gustafsson's predictive controller, safety from the
        Newton iterations."""
        safety = SAFETY * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + iterations)
        factor = safety * max(err, 1e-10) ** -0.25
        if self._err_old is not None and err <= 1:
            predictive = h / self._h_old * (self._err_old / max(err, 1e-10)) ** 0.25
            factor *= min(1.0, predictive)
        return min(FAC_MAX, max(FAC_MIN, factor))

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
        rejected, err, last_rejected = 0, np.nan, False
        for _ in range(max_attempts):
            h = clip_step(self._h, t, self.t_bound, EPS_FLOOR)
            if h < EPS_FLOOR * max(abs(t), 1.0):
                return self._fail(t, err, rejected,
                                  f"step size underflow at t = {t:.6g} (h = {h:.3e})")
            try:
                accepted, err = self._attempt(t, y, h, first=self.n_steps == 0 or last_rejected,
                                              t_new=self.t_bound if h == self.t_bound - t
                                              else t + h)
            except (ProjectionError, FloatingPointError, np.linalg.LinAlgError) as exc:
                if h < 1e-12 * max(abs(self.t_bound), 1.0):
                    return self._fail(t, err, rejected,
                                      f"evaluation failed at t = {t:.6g}: {exc}")
                self._h, accepted = 0.25 * h, False
            if accepted:
                self.n_rejected += rejected
                self.n_steps += 1
                if self._t >= self.t_bound:
                    self.status = "finished"
                return StepRecord(t, self._t, h, err, rejected, "accepted")
            rejected += 1
            last_rejected = True
        return self._fail(t, err, rejected,
                          f"no step accepted in {max_attempts} attempts at t = {t:g}")

    def _fail(self, t, err, rejected, message):
        self.n_rejected += rejected
        self.status, self.message = "failed", message
        return StepRecord(t, t, 0.0, err, rejected, "failed", message)

    def _attempt(self, t, y, h, first, t_new):
        """One attempt of step ``h`` to ``t_new`` (``t_bound`` exactly for the last step);
        returns ``(accepted, error norm)`` and sets the next ``h``."""
        fresh = self._J is None
        if fresh:
            self._J, self._lu = self.jacobian(t, y), None
        if self._lu is None or h != self._h_lu:
            self._factor(h)
        scale = self.atol + self.rtol * np.abs(y)
        converged, iterations, Z, rate = self._newton(t, y, h, scale)
        self.n_newton_iterations += iterations
        if not converged:                              # new J at the same h, else halve h
            if fresh:
                self._h, self._lu = 0.5 * h, None
            self._J = None
            return False, np.nan
        y_new = y + Z[-1]
        scale = self.atol + self.rtol * np.maximum(np.abs(y), np.abs(y_new))
        err = self._error(t, y, h, Z, scale, refine=first)
        factor = self._factor_after(h, err, iterations)
        if first and self._err_old is not None:       # no growth right after a rejection
            factor = min(factor, 1.0)
        if err > 1:
            self._h = h * factor
            return False, err
        y_proj = self.evaluations.project(t_new, y_new)
        self._f = self.rhs(t_new, y_proj)
        self._dense = DenseOutput(t, h, y.copy(), P @ Z)
        self.t_old, self._t, self._y = t, t_new, y_proj
        self._y_view = y_proj.view()
        self._y_view.flags.writeable = False
        self._err_old, self._h_old = max(err, 1e-10), h
        if rate is not None and rate > JAC_RATE:
            self._J = None
        if self._J is not None and KEEP_H[0] <= factor <= KEEP_H[1]:
            factor = 1.0
        self._h = min(h * factor, self.max_step)
        return True, err

    def dense_output(self):
        """The collocation polynomial of the last accepted step (a :class:`DenseOutput`)."""
        if self._dense is None:
            raise RuntimeError("dense_output() needs an accepted step")
        return self._dense


def _rms(x):
    return float(np.sqrt(np.mean(x**2)))
