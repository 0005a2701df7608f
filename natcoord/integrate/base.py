"""What every stepper and the driver share (docs/method.md#17-integration).

The options of :func:`~natcoord.integrate.simulate` (``PROJECTIONS``,
``METHODS``), its exceptions, the step-size floor and the clipping of the last
step, the starting step, the record a ``step()`` returns, and the counted
evaluations of ``F = (v, a)`` and of the projection that the Python steppers
(Radau, the Python DOPRI5 path) use.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dynamics.projection import project_state
from ..core import engine

PROJECTIONS = ("position+velocity", "velocity", "none", "baumgarte")
#: integration methods of :func:`simulate`: DOPRI5 (explicit) and Radau IIA (implicit,
#: :mod:`natcoord.integrate.radau`)
METHODS = ("dopri5", "radau")
#: smallest step relative to max(|t|, 1): below it the step size has underflowed
EPS_FLOOR = 10 * np.finfo(float).eps
#: ``clip_step(h, t, t_bound, eps_floor)``: the step from ``t`` toward ``t_bound``: ``h``,
#: or the whole remainder when ``h`` would leave a sliver below the step-size floor
#: ``eps_floor · max(|t_bound|, 1)`` (a floating-point remainder that no later step
#: could cover); the core's (natcoord/core/src/dopri5.c), which its step uses.
clip_step = engine.clip_step


class IntegrationError(RuntimeError):
    """The integration failed; ``.solution`` holds everything integrated so far
    (``success=False``, the reason in ``.message``)."""

    def __init__(self, message, solution):
        super().__init__(message)
        self.solution = solution


class SimulationInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`simulate`: still a ``KeyboardInterrupt`` (a script
    stops as it would), carrying everything integrated so far on ``.solution``."""

    def __init__(self, message, solution):
        super().__init__(message)
        self.solution = solution


@dataclass(frozen=True)
class StepRecord:
    """What one call of :meth:`DOPRI5.step` did.

    ``t_old → t`` with step ``h`` (0 if none was accepted), ``err`` the error
    norm of the last attempt, ``rejected`` attempts before it; ``status``
    ``"accepted"`` or ``"failed"`` with ``message``.
    """

    t_old: float
    t: float
    h: float
    err: float
    rejected: int
    status: str
    message: str = ""


def initial_step(rhs, t, y, f0, rtol, atol, direction_end):
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


class Evaluations:
    """``F = (v, a)`` and the projection of docs/method.md#17-integration, evaluated on a
    :class:`~natcoord.dynamics.workspace.Workspace` and counted as an integrator counts them:
    the Python DOPRI5 path and :class:`~natcoord.integrate.radau.Radau` share them."""

    def __init__(self, ws, projection, proj_tol, baumgarte):
        self.ws, self.n = ws, ws.model.n_coords
        self.projection, self.proj_tol = projection, proj_tol
        self.baumgarte = baumgarte if projection == "baumgarte" else None
        self.n_rhs = self.n_projection_iterations = self.n_active_set_changes = 0
        self._dropped = None
        self._held = None          # the integrator's dropped set while outputs are projected

    def resume(self):
        """Give the integrator back its own dropped set (and so its hysteresis), if
        outputs were projected since its last factorization (see :meth:`project`)."""
        if self._held is not None:
            self.ws.dropped = self._held
            self._held = None

    def rhs(self, t, y):
        """``(v, a)`` at ``(t, y)`` (a new array); a change of the dropped rows is counted."""
        self.resume()
        p, v = y[:self.n], y[self.n:]
        a, _ = self.ws.accelerations(t, p, v, self.baumgarte)
        self.n_rhs += 1
        dropped = self.ws.dropped
        if self._dropped is not None and not np.array_equal(dropped, self._dropped):
            self.n_active_set_changes += 1
        self._dropped = dropped.copy()
        return np.concatenate([v, a])

    def project(self, t, y, fresh=False):
        """``y`` projected per ``self.projection`` (a new array); ``fresh`` as
        :func:`~natcoord.dynamics.projection.project_state` (for outputs).

        An output (``fresh``) starts from the dropped set of the integrator's last
        factorization, kept at the first output after it and given back by
        :meth:`resume`: chained from output to output, a row dropped at a singular
        pose stayed dropped (below hold_tol) long after it stopped being redundant
        and failed the check only with dense ``t_eval``, and the outputs changed
        the steps (the same in the core: ``hold_for_output`` in natcoord/core/src/dopri5.c).
        """
        if not fresh:
            self.resume()
        elif self._held is None:
            self._held = self.ws.dropped.copy()
        else:
            self.ws.dropped = self._held
        p, v, k = project_state(self.ws, t, y[:self.n], y[self.n:], self.proj_tol,
                                self.projection, fresh)
        self.n_projection_iterations += k
        return np.concatenate([p, v])
