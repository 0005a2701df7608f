"""Checks of run-time arguments where they enter (``simulate``, ``accelerations``,
``assemble``): each bad value raises ``ValueError``/``TypeError``
naming the argument and what is allowed, before any compiled kernel sees it.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..util.checks import integer, shown
from .frozen import Model, State

#: smallest relative tolerance the RK error estimate can resolve
RTOL_MIN = 100 * np.finfo(float).eps


def _real(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    try:
        return float(value)
    except OverflowError:           # an integer beyond the float range (10**400)
        raise ValueError(f"{name} must be finite, got {shown(value)}") from None


def positive(name, value, finite=True):
    """``value`` as a float ``> 0`` (and finite unless ``finite=False``)."""
    x = _real(name, value)
    if not x > 0 or (finite and not np.isfinite(x)):
        raise ValueError(f"{name} must be a positive {'finite ' if finite else ''}number, "
                         f"got {value!r}")
    return x


def finite(name, value):
    x = _real(name, value)
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return x


def model(value):
    """``value`` if it is a built :class:`~natcoord.Model`."""
    if not isinstance(value, Model):
        raise TypeError(f"model must be a natcoord.Model (build one with Mechanism.build()), "
                        f"got {type(value).__name__}")
    return value


def choice(name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {value!r}")
    return value


#: largest |p|, |v| a state may hold: the constraints are quadratic, and squares beyond
#: ~1.3e154 overflow float64 (|v| ~ 1e200 gave NaN accelerations without a word)
COORDINATE_MAX = 1e150


def coordinates(model, name, x, finite=True):
    """``x`` as a contiguous float array of the model's ``12 n`` coordinates (the
    compiled kernels read that many, whatever the array holds) and, with ``finite``,
    all finite and at most :data:`COORDINATE_MAX` in magnitude."""
    a = np.asarray(x)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {a.dtype}")
    if a.shape != (model.n_coords,):
        raise ValueError(f"{name} must have shape ({model.n_coords},) (12 coordinates per "
                         f"body of {model.name!r}, {model.n_bodies} bodies), got shape "
                         f"{a.shape}")
    largest = np.abs(a).max(initial=0.0) if finite else 0.0
    if not largest <= COORDINATE_MAX:         # one pass: NaN compares false too
        if not np.isfinite(largest):
            raise ValueError(f"{name} contains NaN or infinity at entries "
                             f"{np.flatnonzero(~np.isfinite(a))[:5].tolist()}")
        raise ValueError(f"{name} holds {largest:.3g}: the constraints are quadratic, and "
                         f"squares beyond ~1e154 overflow float64 (NaN accelerations); keep "
                         f"|{name}| <= {COORDINATE_MAX:g}, or use units nearer the motion's "
                         f"scale")
    return np.ascontiguousarray(a, float)


def state(model, value, name="state"):
    """A :class:`State` with finite time and checked ``p``, ``v``."""
    if not isinstance(value, State):
        raise TypeError(f"{name} must be a natcoord.State (e.g. nc.assemble(model).state), "
                        f"got {type(value).__name__}")
    return State(finite(f"{name}.t", value.t), coordinates(model, f"{name}.p", value.p),
                 coordinates(model, f"{name}.v", value.v))


def tolerances(rtol, atol, proj_tol):
    """``(rtol, atol, proj_tol)``: positive finite, ``rtol ≥ RTOL_MIN``."""
    rtol = positive("rtol", rtol)
    if rtol < RTOL_MIN:
        raise ValueError(f"rtol must be at least {RTOL_MIN:.1e} (100 machine epsilons), "
                         f"got {rtol!r}")
    return rtol, positive("atol", atol), positive("proj_tol", proj_tol)


def interval(t0, t_end):
    t0, t_end = finite("t0", t0), finite("t_end", t_end)
    if not t_end > t0:
        raise ValueError(f"t_end ({t_end!r}) must be greater than t0 ({t0!r})")
    return t0, t_end


def output_times(t_eval, t0, t_end):
    """``t_eval`` as a non-empty, finite, strictly increasing 1-D array in ``[t0, t_end]``."""
    if t_eval is None:
        return None
    t = np.asarray(t_eval)
    if t.dtype.kind not in "biuf":
        raise TypeError(f"t_eval must be an array of real numbers, got dtype {t.dtype}")
    t = t.astype(float)
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"t_eval must be a non-empty 1-D array, got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError("t_eval contains NaN or infinity")
    if np.any(np.diff(t) <= 0):
        raise ValueError("t_eval must be strictly increasing")
    if t[0] < t0 or t[-1] > t_end:
        raise ValueError(f"t_eval must lie in [t0, t_end] = [{t0:g}, {t_end:g}], got "
                         f"[{t[0]:g}, {t[-1]:g}]")
    return t


def partitioning(drop_tol, hold_tol):
    """Pivot thresholds of constraint partitioning (see ``KKTSolver``):
    ``0 < drop_tol < 1`` and ``drop_tol ≤ hold_tol < 1``, or ``hold_tol = 0``
    (no hysteresis)."""
    drop_tol, hold_tol = _real("drop_tol", drop_tol), _real("hold_tol", hold_tol)
    if not 0 < drop_tol < 1:
        raise ValueError(f"drop_tol must satisfy 0 < drop_tol < 1, got {drop_tol!r}")
    if not (hold_tol == 0 or drop_tol <= hold_tol < 1):
        raise ValueError(f"hold_tol must satisfy drop_tol ({drop_tol:g}) <= hold_tol < 1, "
                         f"or be 0 to switch hysteresis off; got {hold_tol!r}")
    return drop_tol, hold_tol


def baumgarte(value):
    """``(α, β)``: two non-negative finite numbers."""
    try:
        alpha, beta = value
    except (TypeError, ValueError):
        raise TypeError(f"baumgarte must be a pair (alpha, beta), got {value!r}") from None
    pair = (_real("baumgarte alpha", alpha), _real("baumgarte beta", beta))
    if not all(np.isfinite(x) and x >= 0 for x in pair):
        raise ValueError(f"baumgarte (alpha, beta) must be non-negative and finite, "
                         f"got {value!r}")
    return pair


def steps(first_step, max_step, max_steps):
    first = None if first_step is None else positive("first_step", first_step)
    largest = positive("max_step", max_step, finite=False)
    return first, largest, integer("max_steps", max_steps, 1)
