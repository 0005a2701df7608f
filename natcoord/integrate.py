"""Dormand–Prince 5(4) with projection: the index-1 integrator of docs/method.md#17-integration.

The explicit pair (Dormand & Prince 1980; coefficients and dense output as
in Hairer, Nørsett & Wanner, *Solving ODEs I*, II.5–II.6) integrates
``(p, v)' = (v, a)``; accepted steps are projected onto the position and
velocity constraints (Hairer & Wanner, *Solving ODEs II*, VII.2).
"""
from __future__ import annotations

import sys
import time

import numpy as np

from .dynamics import Workspace
from .linalg.base import DROP_TOL, HOLD_TOL
from .projection import ProjectionError, project_positions, project_velocities
from .solution import Solution

C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
A = [np.array([]),
     np.array([1 / 5]),
     np.array([3 / 40, 9 / 40]),
     np.array([44 / 45, -56 / 15, 32 / 9]),
     np.array([19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729]),
     np.array([9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]),
     np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])]
B = A[6]                                   # 5th order weights (FSAL: stage 7 = f(y1))
E = np.array([71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40])
D = np.array([-12715105075 / 11282082432, 0.0, 87487479700 / 32700410799,
              -10690763975 / 1880347072, 701980252875 / 199316789632,
              -1453857185 / 822651844, 69997945 / 29380423])
PROJECTIONS = ("position+velocity", "velocity", "none", "baumgarte")
SAFETY, BETA, FAC_MIN, FAC_MAX = 0.9, 0.04, 0.2, 10.0


class IntegrationError(RuntimeError):
    """The integration failed; ``.solution`` holds everything integrated so far."""

    def __init__(self, message, solution):
        super().__init__(message)
        self.solution = solution


def dense_output(y0, y1, K, h, theta):
    """Continuous extension of DOPRI5 at ``t0 + θ h`` (order 4)."""
    dy = y1 - y0
    r3 = h * K[0] - dy
    r4 = dy - h * K[6] - r3
    r5 = h * (D @ K)
    return y0 + theta * (dy + (1 - theta) * (r3 + theta * (r4 + (1 - theta) * r5)))


class _Run:
    """One integration: state, workspace, counters and recorded outputs."""

    def __init__(self, model, ws, proj_tol, projection, baumgarte, multipliers):
        self.model, self.ws, self.n = model, ws, model.n_coords
        self.proj_tol, self.projection = proj_tol, projection
        self.baumgarte = baumgarte if projection == "baumgarte" else None
        self.multipliers = multipliers
        self.records = []
        self.projection_iterations = 0
        self.active_set_changes = 0
        self._dropped = None

    def rhs(self, t, y):
        p, v = y[:self.n], y[self.n:]
        a, _ = self.ws.accelerations(t, p, v, self.baumgarte)
        dropped = self.ws.solver.dropped
        if self._dropped is not None and not np.array_equal(dropped, self._dropped):
            self.active_set_changes += 1
        self._dropped = dropped.copy()
        return np.concatenate([v, a])

    def project(self, t, y):
        p, v = y[:self.n], y[self.n:]
        positions = self.projection == "position+velocity"
        if positions:
            p, k = project_positions(self.ws, t, p, v, self.proj_tol)
            self.projection_iterations += k
        if self.projection in ("position+velocity", "velocity"):
            v, k = project_velocities(self.ws, t, p, v, self.proj_tol, evaluated=positions)
            self.projection_iterations += k
        return np.concatenate([p, v])

    def record(self, t, y):
        ws, model = self.ws, self.model
        p, v = y[:self.n].copy(), y[self.n:].copy()
        lam = None
        if self.multipliers:
            _, lam = ws.accelerations(t, p, v, self.baumgarte)
        ws.constraints(t, p, v)
        self.records.append((t, p, v, model.energy(p, v), float(np.abs(ws.g).max(initial=0)),
                             float(np.abs(ws.velocity_residual(v)).max(initial=0)), lam))


def _initial_step(rhs, t, y, f0, rtol, atol, direction_end):
    """Starting step (Hairer, Nørsett & Wanner I, II.4)."""
    scale = atol + rtol * np.abs(y)
    d0 = np.sqrt(np.mean((y / scale) ** 2))
    d1 = np.sqrt(np.mean((f0 / scale) ** 2))
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    h0 = min(h0, direction_end)
    f1 = rhs(t + h0, y + h0 * f0)
    d2 = np.sqrt(np.mean(((f1 - f0) / scale) ** 2)) / h0
    h1 = max(1e-6, h0 * 1e-3) if max(d1, d2) <= 1e-15 else (0.01 / max(d1, d2)) ** 0.2
    return min(100 * h0, h1, direction_end)


def simulate(model, t_end, rtol=1e-6, atol=None, proj_tol=1e-10, t_eval=None, solver=None,
             projection="position+velocity", initial_state=None, t0=0.0, first_step=None,
             max_step=np.inf, baumgarte=(10.0, 10.0), multipliers=False, progress=False,
             max_steps=1_000_000, drop_tol=DROP_TOL, hold_tol=HOLD_TOL):
    """Integrate the equations of motion from ``t0`` to ``t_end``.

    ``rtol, atol``: local error tolerances of the RK pair (``atol`` defaults to
    ``rtol``: coordinates are O(1) in SI units); ``proj_tol``: tolerance of
    ``‖g‖∞`` and ``‖G v + g_t‖∞`` after projection; ``t_eval``: output times
    (default: every step); ``projection``: one of ``PROJECTIONS``;
    ``baumgarte=(α, β)``: stabilization ``γ − 2α ġ − β² g`` for
    ``projection="baumgarte"``; ``drop_tol``/``hold_tol``: relative pivot
    thresholds of constraint partitioning (``hold_tol=0`` switches its
    hysteresis off, see :class:`~natcoord.linalg.KKTSolver`). Returns a
    :class:`Solution`; raises :class:`IntegrationError` carrying the partial
    solution on failure.
    """
    if projection not in PROJECTIONS:
        raise ValueError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
    if not t_end > t0:
        raise ValueError(f"t_end ({t_end}) must be greater than t0 ({t0})")
    atol = rtol if atol is None else atol
    wall = time.perf_counter()
    ws = Workspace(model, solver, drop_tol, hold_tol)
    state = initial_state if initial_state is not None else model.initial_state(t=t0)
    run = _Run(model, ws, proj_tol, projection, baumgarte, multipliers)
    t_eval = None if t_eval is None else np.asarray(t_eval, float)
    if t_eval is not None and (np.any(np.diff(t_eval) <= 0) or t_eval[0] < t0
                               or t_eval[-1] > t_end):
        raise ValueError("t_eval must be increasing and inside [t0, t_end]")
    next_out = 0
    t = t0
    y = np.concatenate([state.p, state.v])
    f = run.rhs(t, y)
    dropped_start = ws.solver.dropped.copy()
    if t_eval is None or (t_eval.size and t_eval[0] == t0):
        run.record(t, y)
        next_out = 1 if t_eval is not None else 0
    h = first_step or _initial_step(run.rhs, t, y, f, rtol, atol, t_end - t0)
    h = min(h, max_step)
    steps = rejected = 0
    err_old, last_rejected = 1e-4, False
    K = np.empty((7, y.size))
    last_report = time.perf_counter()

    def stats():
        return {"solver": ws.solver.name, "steps": steps, "rejected": rejected,
                "rhs": ws.n_rhs,
                "factorizations": ws.n_factorizations,
                "projection_iterations": run.projection_iterations,
                "active_set_changes": run.active_set_changes,
                "wall_time": time.perf_counter() - wall}

    def fail(message):
        sol = Solution(model, run.records, stats(), dropped_start, False, message)
        raise IntegrationError(f"{message} (partial solution up to t = {t:g} kept on "
                               f"the exception's .solution)", sol)

    while t < t_end:
        if steps + rejected >= max_steps:
            fail(f"maximum number of steps ({max_steps}) reached at t = {t:g}")
        h = min(h, t_end - t)
        if h < 10 * np.finfo(float).eps * max(abs(t), 1.0):
            fail(f"step size underflow at t = {t:.6g} (h = {h:.3e})")
        try:
            K[0] = f
            for s in range(1, 7):
                K[s] = run.rhs(t + C[s] * h, y + h * (A[s] @ K[:s]))
            y_new = y + h * (B @ K[:6])
            scale = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
            err = np.sqrt(np.mean((h * (E @ K) / scale) ** 2))
            if not np.isfinite(err):
                raise FloatingPointError("non-finite state")
            y_proj = run.project(t + h, y_new) if err <= 1.0 else None
        except (ProjectionError, FloatingPointError, np.linalg.LinAlgError) as exc:
            if h < 1e-12 * max(abs(t_end), 1.0):
                fail(f"evaluation failed at t = {t:.6g}: {exc}")
            h *= 0.25
            rejected += 1
            last_rejected = True
            continue
        if err > 1.0:
            rejected += 1
            h *= max(FAC_MIN, SAFETY * err ** -0.2)
            last_rejected = True
            continue
        # accepted step
        steps += 1
        t_new = t + h
        if t_eval is not None:
            while next_out < t_eval.size and t_eval[next_out] <= t_new:
                theta = (t_eval[next_out] - t) / h
                y_out = dense_output(y, y_new, K, h, theta)
                run.record(t_eval[next_out], run.project(t_eval[next_out], y_out))
                next_out += 1
        f = K[6].copy()
        f[:run.n] = y_proj[run.n:]         # FSAL; ṗ = v exactly at the projected state
        t, y = t_new, y_proj
        if t_eval is None:
            run.record(t, y)
        fac = err ** (0.2 - 0.75 * BETA) / err_old ** BETA
        factor = min(FAC_MAX, max(FAC_MIN, SAFETY / max(fac, 1e-10)))
        if last_rejected:
            factor = min(factor, 1.0)
        h = min(h * factor, max_step)
        err_old, last_rejected = max(err, 1e-4), False
        if progress and time.perf_counter() - last_report > 1.0:
            last_report = time.perf_counter()
            print(f"  t = {t:.4g} / {t_end:g} s, {steps} steps, {rejected} rejected",
                  file=sys.stderr, flush=True)
    return Solution(model, run.records, stats(), dropped_start)
