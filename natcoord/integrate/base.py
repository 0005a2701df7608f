"""What every stepper and the driver share (docs/method.md#17-integration).

The options of :func:`~natcoord.integrate.simulate` (``PROJECTIONS``,
``METHODS``), its exceptions, the step-size floor and the clipping of the last
step, the starting step, the stepper interface (:class:`Stepper`: ``step()``
returning a :class:`StepRecord`, ``dense_output()``, ``project()``, counters,
and ``advance()`` returning a :class:`Chunk`: the core's chunked loop for both of the
core's steppers, DOPRI5 and Radau (:class:`~natcoord.integrate.stepper.CoreStepper`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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


#: kinds of the records of a :class:`Chunk` (``nc_advance``'s, dopri5.h)
STEP_RECORD, OUTPUT_RECORD = 0, 1


@dataclass
class Chunk:
    """What one call of a stepper's ``advance()`` did (:meth:`Stepper.advance`).

    Records ``t`` (k,), ``y`` (k, 2 N), ``obs`` (k, 3: energy, ‖g‖∞,
    ‖G v + g_t‖∞; None: not observed, the driver observes them), ``kind`` (k,:
    ``STEP_RECORD`` or ``OUTPUT_RECORD``), all checked; ``next_out`` the next
    ``t_eval`` index; ``steps`` accepted and ``rejected`` attempts; ``status``
    ``"ok"`` or ``"failed"`` (the stepper's ``message`` says why); ``last``:
    ``(t, y)`` of the last accepted step that passed its check. ``failed``:
    ``(t, y, kind)`` of a state that did not pass the core's check (a step state
    is accepted by the stepper but not in ``steps``: the driver's check decides);
    ``error``: the exception that ended the chunk (a callback's, an output's failed
    projection, a failed check), raised by the driver after storing the records;
    ``pieces``: with ``dense``, the dense output of every step the stepper
    accepted; ``derivatives``: with a ``sweep``, the sensitivities (k, c, 2 N) at
    the records; ``output_work``: the outputs' evaluations, factorizations and
    projection iterations, when the stepper's counters include them.
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
    error: BaseException = None
    pieces: list = ()
    derivatives: np.ndarray = None
    last: tuple = None
    output_work: np.ndarray = field(default_factory=lambda: np.zeros(3, np.int64))


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


class Stepper:
    """The stepper interface :func:`~natcoord.integrate.simulate.simulate`'s one driver
    loop runs (like ``scipy.integrate.OdeSolver``): ``t``, ``y`` (2 N,), ``status``
    (``"running" | "finished" | "failed"``), ``message``, ``dropped``; ``step()`` →
    :class:`StepRecord`; ``dense_output()`` (the last step's interpolant);
    ``project(t, y)`` (an output's projection); counters ``n_steps n_rejected n_rhs
    n_factorizations n_projection_iterations n_active_set_changes``; ``advance()`` →
    :class:`Chunk` (many steps per call, with the outputs at ``t_eval`` and the checks:
    the driver loop calls nothing else per step; DOPRI5 and Radau run it in the core).
    ``compiled``: True when the core runs the steps with nothing called back."""

    compiled = False

    def advance(self, t_eval=None, next_out=0, max_attempts=1_000_000, drift_tol=np.inf,
                capacity=256, dense=False, sweep=None, check=None):
        raise NotImplementedError(f"{type(self).__name__} does not implement advance()")
