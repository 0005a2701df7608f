"""Input checks shared by the builder, forces and drives (docs/method.md#3-conventions).

Bad input fails where it enters, with a message naming the body, joint or
force (``where``) and the field (``what``).
"""
from __future__ import annotations

import math
import numbers
import reprlib

import numpy as np

_SIGNS = {None: "a finite number", "positive": "a positive finite number",
          "non-negative": "a non-negative finite number"}


class NonFiniteValue(ValueError, FloatingPointError):
    """A user callback (force, torque, drive) returned NaN or inf.

    A ``ValueError`` naming the callback, and a ``FloatingPointError`` so the
    integrator treats it like any other non-finite evaluation: it retries
    with smaller steps and, failing that, stops keeping the partial solution.
    """


_SHORT = reprlib.Repr()
_SHORT.maxlong, _SHORT.maxstring, _SHORT.maxother = 40, 80, 80


def shown(value) -> str:
    """``repr(value)`` cut to a readable length for error messages: a 400-digit
    integer or a megabyte string from a hostile file must not flood the message."""
    return _SHORT.repr(value)


def float_array(value):
    """``value`` as a float64 array, or None when it is not real (``'abc'``, ragged,
    complex, an integer beyond the float range such as a 400-digit mass). A complex
    NumPy array would be cast with a ComplexWarning, its imaginary part dropped: a
    force returning one ran as a real force."""
    try:
        array = np.asarray(value)
        return None if array.dtype.kind == "c" else np.asarray(array, float)
    except (TypeError, ValueError, OverflowError):
        return None


def number(value, what, where, sign=None) -> float:
    """``value`` as a finite float; ``sign`` ``"positive"`` or ``"non-negative"`` restricts it."""
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        x = math.nan
    if not math.isfinite(x) or (sign == "positive" and x <= 0) or (
            sign == "non-negative" and x < 0):
        raise ValueError(f"{where}: {what} must be {_SIGNS[sign]}, got {shown(value)}")
    return x


def integer(name, value, least):
    """``value`` as an int ``≥ least`` (``TypeError`` for a non-integer, bools included;
    ``name`` says where, e.g. ``"Drive.periodic: samples"``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value!r}")
    return int(value)


def finite_triple(value, what, where, t, hint=""):
    """A callback's result at time ``t`` as 3 floats (shape (3,)), or an error naming it.

    ``hint`` explains the callback's contract when the result has the wrong form.
    """
    a = float_array(value)
    if a is None or a.shape != (3,):
        raise ValueError(f"{where}: {what} must return 3 numbers, got {value!r} at t = {t:g}"
                         f"{hint}")
    if not np.all(np.isfinite(a)):
        raise NonFiniteValue(f"{where}: {what} returned {value!r} at t = {t:g}; "
                             f"it must be finite")
    return a


def parse_value(text):
    """A command-line or CSV value: ``int``, else ``float``, else the text itself."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text
