"""Rheonomic drives ``s(t)`` and the time-dependent weights of driven rows
(docs/method.md#14-joints).

A drive prescribes a joint coordinate ``s(t)`` with ``ṡ`` and ``s̈``. A driven
row is ``Σ_m w_m(t) q_m(p)`` with the weights ``w = s`` (prismatic) or
``cos s, sin s`` (revolute); :func:`weight_of` maps ``(s, ṡ, s̈)`` to
``(w, ẇ, ẅ)``, which give ``g_t`` and the ``−∂²g/∂t²`` part of ``γ``.

Declarative drives are *laws*, arrays evaluated by one function of the compiled
core (:func:`law_triple`, natcoord/core/src/drives.c) on every path:

* ``PIECEWISE`` polynomials: constant rate, polynomial, C² cubic spline;
* ``FOURIER`` series: a sinusoid, or a periodic function sampled at its
  Fourier interpolant (:meth:`Drive.periodic`).

The compiled stepper fills its weight tables from the laws itself, so a
model whose drives are all laws runs many steps per call; a drive given as
Python callables works everywhere, on the path that returns to Python for
each step's weights. The laws are also what makes a drive's parameters
differentiable (:func:`parameter_weights`: complex step through the same
code of the core, for complex data).
"""
from __future__ import annotations

import copy
import inspect
from collections import namedtuple

import numpy as np

from ..util.checks import finite_triple, float_array, integer, number
from ..core import engine

#: kinds of law
PIECEWISE, FOURIER = 0, 1
#: kinds of weight: ``s``, ``cos s``, ``sin s``
WEIGHT_S, WEIGHT_COS, WEIGHT_SIN = 0, 1, 2

#: the laws of a model's weights 1.. as arrays: weight k+1 is kind
#: ``weight_kind[k]`` of law ``weight_law[k]``; law l is ``kind[l]`` with
#: ``pieces[l]`` pieces of ``order[l]`` terms, data ``data[ptr[l]:ptr[l+1]]``
Laws = namedtuple("Laws", ["weight_kind", "weight_law", "kind", "pieces", "order", "ptr",
                           "data"])


# ------------------------------------------------------------------ compiled
#: ``law_triple(kind, pieces, order, data, t) -> (s, ṡ, s̈)`` of a law at time t (the
#: core, natcoord/core/src/drives.c). ``PIECEWISE``: breaks ``x_0 ≤ … ≤ x_m``
#: (``data[:m+1]``) and, per piece, ``order`` coefficients ``c_ik`` (ascending) of
#: ``s = Σ_k c_ik (t − x_i)^k`` on ``x_i ≤ t < x_{i+1}`` (the end pieces extend beyond),
#: by Horner's scheme. ``FOURIER``: ``data = (ω, a_0, a_1, b_1, …, a_K, b_K)``
#: (K = ``order``), ``s = a_0 + Σ_k a_k cos kωt + b_k sin kωt``, the harmonics by the
#: angle-addition recurrence.
law_triple = engine.law_triple
#: ``weight_of(kind, s, ṡ, s̈) -> (w, ẇ, ẅ)`` of a weight ``s``, ``cos s`` or ``sin s``.
weight_of = engine.weight_of
#: ``fill_weights(laws, t, out)``: ``out[k] = (w_k, ẇ_k, ẅ_k)`` at time t for the
#: weights of ``laws`` (row 0, the constant 1, is left alone).
fill_weights = engine.fill_weights


# ------------------------------------------------------------------ laws
def law(spec):
    """``(kind, pieces, order, data)`` of a declarative drive's ``spec``.

    Values may be complex (the complex step of :func:`parameter_weights`);
    checking them is the constructors' job.
    """
    kind = spec["type"]
    if kind == "constant_rate":
        return PIECEWISE, 1, 2, np.array([0.0, 0.0, spec["start"], spec["rate"]])
    if kind == "polynomial":
        c = np.asarray(spec["coefficients"])
        return PIECEWISE, 1, c.size, np.concatenate([[0.0, 0.0], c])
    if kind == "spline":
        # imported here: scipy.interpolate costs ~0.2 s, a third of importing natcoord,
        # and only spline drives need it
        from scipy.interpolate import CubicSpline
        spline = CubicSpline(np.asarray(spec["t"], float), np.asarray(spec["s"]))
        pieces = spline.c.shape[1]
        return PIECEWISE, pieces, 4, np.concatenate([spline.x, spline.c[::-1].T.ravel()])
    if kind == "sinusoid":
        a, phase = spec["amplitude"], spec["phase"]
        return FOURIER, 1, 1, np.array([2.0 * np.pi * spec["frequency"], spec["offset"],
                                        a * np.sin(phase), a * np.cos(phase)])
    cosines, sines = np.asarray(spec["cosines"]), np.asarray(spec["sines"])   # fourier
    harmonics = np.column_stack([cosines[1:], sines]).ravel()         # a_1, b_1, a_2, …
    return FOURIER, 1, sines.size, np.concatenate([[2.0 * np.pi * spec["frequency"],
                                                    cosines[0]], harmonics])


def pack(weights, replaced=None):
    """:class:`Laws` of ``weights`` (a list of :class:`Weight`), or None if a
    drive has no law. ``replaced`` maps a drive to another law for it."""
    replaced = replaced or {}
    drives = list({id(w.drive): w.drive for w in weights}.values())
    if any(d.law is None for d in drives):
        return None
    laws = [replaced.get(id(d), d.law) for d in drives]
    data = [np.asarray(lw[3]) for lw in laws]
    index = {id(d): i for i, d in enumerate(drives)}

    def i64(x):
        return np.array(x, np.int64)

    return Laws(i64([w.kind for w in weights]), i64([index[id(w.drive)] for w in weights]),
                i64([lw[0] for lw in laws]), i64([lw[1] for lw in laws]),
                i64([lw[2] for lw in laws]), i64(np.cumsum([0] + [d.size for d in data])),
                np.concatenate(data) if data else np.zeros(0))


#: the Laws of a model without compiled drives (no weight is filled)
NO_LAWS = Laws(*(np.zeros(0, np.int64) for _ in range(6)), np.zeros(0))


# ------------------------------------------------------------------ drives
def _vector(value, what, where, least=1):
    """``value`` (a number or a flat sequence of numbers) as a finite 1-D float
    array of at least ``least`` entries, or ``ValueError`` naming ``what``."""
    a = float_array(value)
    a = None if a is None else np.atleast_1d(a)
    if a is None or a.ndim != 1 or a.size < least or not np.all(np.isfinite(a)):
        raise ValueError(f"{where}: {what} must be a flat list of finite numbers"
                         f"{f' (at least {least})' if least else ''}, got {value!r}")
    return a


class Drive:
    """A prescribed coordinate ``s(t)`` with its first two derivatives.

    Declarative (compiled; stored by model files): ``Drive.constant_rate``,
    ``Drive.sinusoid``, ``Drive.polynomial``, ``Drive.spline`` (a C² cubic
    spline through samples), ``Drive.fourier`` and ``Drive.periodic`` (a
    periodic function at its Fourier interpolant). Any other motion: from
    three callables (``Drive(s, s_dot, s_ddot)``) or one callable returning
    the triple (``Drive(f)``), evaluated in Python. Calling a drive returns
    ``(s, ṡ, s̈)`` as three finite floats or raises an error naming its joint.
    """

    #: what errors call the drive; the builder puts its joint here
    label = "Drive"
    #: ``(kind, pieces, order, data)`` of a declarative drive (:func:`law`), else None
    law = None
    CONTRACT = ("; a drive returns the triple (s, ṡ, s̈): the prescribed coordinate and its "
                "first two time derivatives at time t. For a function s(t) alone, pass "
                "Drive(s, s_dot, s_ddot) with its derivatives, or Drive.spline(t, s) on "
                "samples of it")

    def __init__(self, position, velocity=None, acceleration=None):
        one = velocity is None and acceleration is None
        if not callable(position) or not (one or callable(velocity) and callable(acceleration)):
            raise ValueError(f"Drive needs s(t), s'(t) and s''(t): pass all three callables, "
                             f"one callable returning the triple, or use Drive.spline(t, s); "
                             f"got {position!r}, {velocity!r}, {acceleration!r}")
        if one:
            self._triple = position
        else:
            self._triple = lambda t: (position(t), velocity(t), acceleration(t))

    # Declarative drives carry ``spec``, the dictionary a model file stores
    # (docs/model-format.md), and its law; ``Drive.from_spec`` rebuilds one.
    @classmethod
    def _declared(cls, kind, **parameters):
        spec = {"type": kind, **parameters}
        lw = law(spec)
        drive = cls(lambda t: law_triple(*lw, float(t)))
        drive.spec, drive.law = spec, lw
        return drive

    @classmethod
    def constant_rate(cls, rate, start=0.0):
        """``s(t) = start + rate·t``."""
        where = "Drive.constant_rate"
        return cls._declared("constant_rate", rate=number(rate, "rate", where),
                             start=number(start, "start", where))

    @classmethod
    def sinusoid(cls, amplitude, frequency, phase=0.0, offset=0.0):
        """``s(t) = offset + amplitude·sin(2π·frequency·t + phase)`` (frequency in Hz, > 0)."""
        where = "Drive.sinusoid"
        return cls._declared("sinusoid", amplitude=number(amplitude, "amplitude", where),
                             frequency=number(frequency, "frequency", where, "positive"),
                             phase=number(phase, "phase", where),
                             offset=number(offset, "offset", where))

    @classmethod
    def polynomial(cls, coefficients):
        """``s(t) = Σ_k c_k t^k`` for ``coefficients = (c_0, c_1, …)``."""
        c = _vector(coefficients, "coefficients (c_0, c_1, …)", "Drive.polynomial")
        return cls._declared("polynomial", coefficients=c.tolist())

    @classmethod
    def spline(cls, t, s):
        """C² cubic spline (not-a-knot) through the samples ``s`` at times ``t``."""
        times, s = _vector(t, "t", "Drive.spline", 2), _vector(s, "s", "Drive.spline", 2)
        if s.size != times.size:
            raise ValueError(f"Drive.spline: s has {s.size} samples but t has {times.size} "
                             f"times; give one sample per time")
        if np.any(np.diff(times) <= 0):
            raise ValueError(f"Drive.spline: t must be strictly increasing, got {t!r}")
        return cls._declared("spline", t=times.tolist(), s=s.tolist())

    @classmethod
    def fourier(cls, frequency, cosines, sines=()):
        """``s(t) = a_0 + Σ_{k≥1} a_k cos(2πk f t) + b_k sin(2πk f t)`` with
        ``cosines = (a_0, a_1, …, a_K)`` and ``sines = (b_1, …, b_K)`` (the shorter
        one padded with zeros); ``f > 0`` in Hz."""
        where = "Drive.fourier"
        frequency = number(frequency, "frequency", where, "positive")
        a = _vector(cosines, "cosines (a_0, a_1, …)", where)
        b = _vector(sines, "sines (b_1, b_2, …)", where, 0)
        b = np.concatenate([b, np.zeros(max(a.size - 1 - b.size, 0))])
        a = np.concatenate([a, np.zeros(max(b.size + 1 - a.size, 0))])
        return cls._declared("fourier", frequency=frequency, cosines=a.tolist(),
                             sines=b.tolist())

    @classmethod
    def periodic(cls, f, period, samples=32, tol=1e-12):
        """The Fourier interpolant of a periodic drive ``f`` (a callable returning
        ``(s, ṡ, s̈)`` with ``s(t + period) = s(t)``) on ``samples`` equidistant
        points: exact to round-off for a smooth function with enough samples.
        Checked against ``f``'s triple halfway between the samples: a relative
        error above ``tol`` raises ``ValueError`` (more samples, or not periodic)."""
        where = "Drive.periodic"
        if not callable(f):
            raise TypeError(f"{where}: f must be a callable returning (s, ṡ, s̈), got {f!r}")
        period = number(period, "period", where, "positive")
        samples = integer(f"{where}: samples", samples, 4)
        tol = number(tol, "tol", where, "positive")

        def triples(times):          # f checked like any drive: 3 finite numbers
            return np.array([finite_triple(f(ti), "f", where, ti, cls.CONTRACT) for ti in times])

        t = period * np.arange(samples) / samples
        c = np.fft.rfft(triples(t)[:, 0]) / samples
        K = (samples - 1) // 2                           # harmonics without the Nyquist one
        drive = cls.fourier(1.0 / period, np.concatenate([[c[0].real], 2.0 * c[1:K + 1].real]),
                            -2.0 * c[1:K + 1].imag)
        mid = t + 0.5 * period / samples
        want = triples(mid)
        got = np.array([drive(ti) for ti in mid])
        scale = np.maximum(np.abs(want).max(axis=0), np.abs(want).max())   # a zero s̈: absolute
        error = np.abs(got - want).max(axis=0) / max(scale.min(), 1e-300)
        if not error.max() <= tol:
            name = getattr(f, "__name__", repr(f))
            raise ValueError(f"{where}: the Fourier interpolant of {name} on {samples} samples "
                             f"misses (s, ṡ, s̈) by {error} (relative) between the samples, "
                             f"more than tol = {tol:g}; use more samples, or check that "
                             f"s(t + {period:g}) = s(t)")
        return drive

    @classmethod
    def from_spec(cls, spec):
        """The drive a model file's ``{"type": …, parameters}`` describes."""
        makers = {"constant_rate": cls.constant_rate, "sinusoid": cls.sinusoid,
                  "polynomial": cls.polynomial, "spline": cls.spline, "fourier": cls.fourier}
        if not isinstance(spec, dict) or spec.get("type") not in makers:
            raise ValueError(f"drive must be an object with \"type\" one of {sorted(makers)}, "
                             f"got {spec!r}")
        parameters = {k: v for k, v in spec.items() if k != "type"}
        maker = makers[spec["type"]]
        try:
            return maker(**parameters)
        except TypeError as err:                       # a missing or unknown key
            keys = list(inspect.signature(maker).parameters)
            raise ValueError(f"{spec['type']} drive: {err}; its keys: {keys}") from None

    @classmethod
    def coerce(cls, drive, where):
        """The drive of joint ``where``, checked by one call at t = 0."""
        if drive is None:
            return None
        if isinstance(drive, (tuple, list)) and len(drive) == 3 and all(map(callable, drive)):
            drive = cls(*drive)
        elif callable(drive) and not isinstance(drive, Drive):
            drive = cls(drive)
        elif not isinstance(drive, Drive):
            raise ValueError(f"{where}: drive must be a Drive, a callable returning (s, s', s''), "
                             f"or a tuple of three callables")
        drive = copy.copy(drive)            # the same Drive may serve several joints
        drive.label = where
        drive(0.0)
        return drive

    def __call__(self, t):
        s, sd, sdd = finite_triple(self._triple(t), "drive", self.label, t, self.CONTRACT)
        return float(s), float(sd), float(sdd)

    # ------------------------------------------------------------ parameters
    def parameter(self, key):
        """The value of parameter ``key`` of a declarative drive: a name of its
        spec (``amplitude``), or ``name.k`` for the k-th entry of a list
        (``coefficients.1``, ``s.3``)."""
        spec = self._spec_for(key)
        name, _, k = key.partition(".")
        return spec[name] if not k else spec[name][int(k)]

    def with_parameter(self, key, value):
        """A copy with parameter ``key`` (:meth:`parameter`) set to ``value``."""
        spec = self._with_value(key, value)
        try:
            drive = Drive.from_spec(spec)
        except ValueError as err:                      # e.g. a frequency set ≤ 0
            raise ValueError(f"{self.label}: parameter {key!r} = {value!r}: {err}") from None
        drive.label = self.label
        return drive

    def _with_value(self, key, value):
        spec = copy.deepcopy(self._spec_for(key))
        name, _, k = key.partition(".")
        if k:
            spec[name][int(k)] = value
        else:
            spec[name] = value
        return spec

    def _spec_for(self, key):
        spec = getattr(self, "spec", None)
        if spec is None:
            raise KeyError(f"{self.label}: a drive given as Python callables has no "
                           f"parameters; build it declaratively (Drive.sinusoid, "
                           f"Drive.polynomial, …) to differentiate or set them")
        name, _, k = key.partition(".")
        fixed = {"type", "t"}                  # a spline's sample times are its grid
        value = spec.get(name)
        if name in fixed or value is None or isinstance(value, list) != bool(k) or (
                k and not (k.isdigit() and int(k) < len(value))):
            names = [n if not isinstance(v, list) else f"{n}.0..{len(v) - 1}"
                     for n, v in spec.items() if n not in fixed]
            raise KeyError(f"{self.label}: {spec['type']} drive has no parameter {key!r}; "
                           f"its parameters: {names}")
        return spec


class Weight:
    """Time-dependent weight ``w(t)`` of one part of a driven row: ``s``, ``cos s``
    or ``sin s`` (``kind``) of the drive's ``s``."""

    def __init__(self, drive, kind):
        self.drive, self.kind = drive, kind

    def __call__(self, t):
        """``(w, ẇ, ẅ)`` at time t."""
        return weight_of(self.kind, *self.drive(t))


#: step of the complex-step derivative (exact to round-off for any size this small)
COMPLEX_STEP = 1e-30


def parameter_weights(weights, drive, key):
    """The function ``t ↦ ∂W/∂θ`` (n_weights, 3) for parameter ``key`` of ``drive``:
    the complex step ``Im W(θ + iε) / ε`` through :func:`law` and the core's
    :func:`fill_weights` for complex data (no subtraction, so exact to round-off);
    row 0 and the weights of other drives are zero. The complex laws are built
    once (the sensitivity sweep asks at every stage time); each call returns a new
    array."""
    complex_law = law(drive._with_value(key, drive.parameter(key) + 1j * COMPLEX_STEP))
    laws = pack(weights, {id(drive): complex_law})
    laws = laws._replace(data=laws.data.astype(complex))
    others = 1 + np.flatnonzero([w.drive is not drive for w in weights])
    out = np.zeros((len(weights) + 1, 3), complex)

    def table(t):
        engine.fill_weights_complex(laws, float(t), out)
        dW = out.imag / COMPLEX_STEP
        dW[others] = 0.0
        return dW
    return table
