"""Joints as full-rank sets of quadratic constraints (docs/method.md#13-rigid-body,
docs/method.md#14-joints).

A joint never uses the vector product (whose three components have rank 2);
it is assembled from four primitives, each a :class:`Quadratic` in the slot
vectors of (at most) two bodies:

* point coincidence  ``C(b̄_i) p_i − C(b̄_j) p_j = 0``     (3 linear rows)
* perpendicularity   ``u(p_i) · w(p_j) = 0``              (1 bilinear row)
* parallelism        ``a · h1 = 0, a · h2 = 0``, h1 ⊥ h2 ⊥ b (2 rows)
* translation restriction ``(r_j − r_i) · h = 0``          (1 row)

Rheonomic drives are the same forms with time-dependent weights: a row is
``Σ_m w_m(t) q_m(p)``; the weights and their first two time derivatives give
``g_t`` and the ``−∂²g/∂t²`` part of ``γ``.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline

from .checks import finite_triple
from .expressions import Affine, Quadratic, component, dot


# --------------------------------------------------------------------- drives
class Drive:
    """A prescribed coordinate ``s(t)`` with its first two derivatives.

    Build from three callables (``Drive(s, s_dot, s_ddot)``), from one callable
    returning the triple (``Drive(f)``), or from samples
    (``Drive.spline(t, s)``, a C² cubic spline). Calling it returns
    ``(s, ṡ, s̈)`` as three finite floats or raises an error naming its joint.
    """

    #: what errors call the drive; the builder puts its joint here
    label = "Drive"
    CONTRACT = ("; a drive returns the triple (s, ṡ, s̈): the prescribed coordinate and its "
                "first two time derivatives at time t. For a function s(t) alone, pass "
                "Drive(s, s_dot, s_ddot) with its derivatives, or Drive.spline(t, s) on "
                "samples of it")

    def __init__(self, position, velocity=None, acceleration=None):
        if velocity is None and acceleration is None:
            self._triple = position
        elif velocity is not None and acceleration is not None:
            self._triple = lambda t: (position(t), velocity(t), acceleration(t))
        else:
            raise ValueError("Drive needs s(t), s'(t) and s''(t): pass all three callables, "
                             "one callable returning the triple, or use Drive.spline(t, s)")

    @classmethod
    def spline(cls, t, s):
        """C² cubic spline (not-a-knot) through the samples ``s`` at times ``t``."""
        t, s = np.asarray(t, float), np.asarray(s, float)
        spl = CubicSpline(t, s)
        return cls(spl, spl.derivative(1), spl.derivative(2))._declare(
            "spline", t=t.tolist(), s=s.tolist())

    # Declarative drives: each carries ``spec``, the dictionary a model file
    # stores (docs/model-format.md); ``Drive.from_spec`` rebuilds it.
    def _declare(self, kind, **parameters):
        self.spec = {"type": kind, **parameters}
        return self

    @classmethod
    def constant_rate(cls, rate, start=0.0):
        """``s(t) = start + rate·t``."""
        rate, start = float(rate), float(start)
        return cls(lambda t: (start + rate * t, rate, 0.0))._declare(
            "constant_rate", rate=rate, start=start)

    @classmethod
    def sinusoid(cls, amplitude, frequency, phase=0.0, offset=0.0):
        """``s(t) = offset + amplitude·sin(2π·frequency·t + phase)`` (frequency in Hz)."""
        a, f, phi, c = (float(x) for x in (amplitude, frequency, phase, offset))
        w = 2.0 * np.pi * f

        def triple(t):
            sin, cos = np.sin(w * t + phi), np.cos(w * t + phi)
            return c + a * sin, a * w * cos, -a * w * w * sin

        return cls(triple)._declare("sinusoid", amplitude=a, frequency=f, phase=phi, offset=c)

    @classmethod
    def polynomial(cls, coefficients):
        """``s(t) = Σ_k c_k t^k`` for ``coefficients = (c_0, c_1, …)``."""
        from numpy.polynomial import polynomial as P
        c = np.atleast_1d(np.asarray(coefficients, float))
        if c.ndim != 1 or c.size == 0 or not np.all(np.isfinite(c)):
            raise ValueError(f"Drive.polynomial: coefficients must be finite numbers "
                             f"(c_0, c_1, …), got {coefficients!r}")
        c1, c2 = P.polyder(c), P.polyder(c, 2)
        return cls(lambda t: (P.polyval(t, c), P.polyval(t, c1), P.polyval(t, c2)))._declare(
            "polynomial", coefficients=c.tolist())

    @classmethod
    def from_spec(cls, spec):
        """The drive a model file's ``{"type": …, parameters}`` describes."""
        makers = {"constant_rate": cls.constant_rate, "sinusoid": cls.sinusoid,
                  "polynomial": cls.polynomial, "spline": cls.spline}
        if not isinstance(spec, dict) or spec.get("type") not in makers:
            raise ValueError(f"drive must be an object with \"type\" one of {sorted(makers)}, "
                             f"got {spec!r}")
        parameters = {k: v for k, v in spec.items() if k != "type"}
        try:
            return makers[spec["type"]](**parameters)
        except TypeError as err:
            raise ValueError(f"{spec['type']} drive: {err}") from None

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


class _Weight:
    """Time-dependent weight ``w(t)`` of one part of a rheonomic row."""

    def __init__(self, drive, kind):
        self.drive, self.kind = drive, kind

    def __call__(self, t):
        """``(w, ẇ, ẅ)`` at time t."""
        s, sd, sdd = self.drive(t)
        if self.kind == "s":
            return s, sd, sdd
        c, n = np.cos(s), np.sin(s)
        if self.kind == "cos":
            return c, -n * sd, -c * sd * sd - n * sdd
        return n, c * sd, -n * sd * sd + c * sdd  # "sin"


@dataclass(frozen=True)
class ConstraintRow:
    """One scalar constraint ``Σ_m w_m(t) q_m`` (weight ``None`` means 1)."""

    label: str
    parts: tuple


@dataclass(frozen=True)
class Joint:
    name: str
    kind: str
    bodies: tuple      # (index or -1 for ground, index or -1)
    rows: tuple        # ConstraintRow, ...
    drive: Drive | None = None
    #: joint coordinates ``((name, quadratics), ...)``: ``("angle", (x, y))`` with
    #: θ = atan2(y, x), ``("slide", (s,))`` (see :func:`axial_coordinates`)
    coordinates: tuple = ()

    @property
    def drive_row(self):
        """Index (within this joint) of the rheonomic drive row, or None."""
        return len(self.rows) - 1 if self.drive is not None else None


# ---------------------------------------------------------------- primitives
def rigid_body_rows(body_index, name):
    """The six quadratic rigid-body constraints ``g_RC`` (eq. 8 of the paper)."""
    e = [Affine.body_direction(body_index, np.eye(3)[k]) for k in range(3)]
    rows = [ConstraintRow(f"{name}: |e{k + 1}|", (
        (None, 0.5 * dot(e[k], e[k]) + Quadratic(const=-0.5)),)) for k in range(3)]
    rows += [ConstraintRow(f"{name}: e{k + 1}·e{l + 1}", ((None, dot(e[k], e[l])),))
             for k, l in ((0, 1), (0, 2), (1, 2))]
    return rows


def coincidence(ri: Affine, rj: Affine):
    """Point coincidence ``r_i − r_j = 0`` (3 linear rows)."""
    return [component(ri - rj, k) for k in range(3)]


def perpendicular(u: Affine, w: Affine):
    """Perpendicularity ``u · w = 0`` (1 bilinear row)."""
    return dot(u, w)


def parallel(a: Affine, h1: Affine, h2: Affine):
    """Parallelism of ``a`` with ``b`` as ``a·h1 = a·h2 = 0``, ``h1 ⊥ h2 ⊥ b`` (rank 2)."""
    return [dot(a, h1), dot(a, h2)]


def translation_restriction(ri: Affine, rj: Affine, h: Affine):
    """``(r_j − r_i) · h = 0`` for a body-fixed direction h."""
    return dot(rj - ri, h)


def distance(ri: Affine, rj: Affine, length):
    """``½(|r_j − r_i|² − L²) = 0``."""
    d = rj - ri
    return 0.5 * dot(d, d) + Quadratic(const=-0.5 * length**2)


def perpendicular_basis(u):
    """Unit ``h1, h2`` with ``(h1, h2, u)`` right-handed orthonormal."""
    u = np.asarray(u, float)
    seed = np.eye(3)[np.argmin(np.abs(u))]
    h1 = np.cross(seed, u)
    h1 /= np.linalg.norm(h1)
    return h1, np.cross(u, h1)


# ----------------------------------------------------------------- joint types
class Frame:
    """Points and directions fixed in one body (or ground) of a joint."""

    def __init__(self, body):
        self.body = body  # Body or None for ground

    def point(self, x):
        if self.body is None:
            return Affine.constant(x)
        return Affine.body_point(self.body.index, self.body.to_local_point(x))

    def direction(self, u):
        if self.body is None:
            return Affine.constant(u)
        return Affine.body_direction(self.body.index, self.body.to_local_direction(u))


def _rows(name, labelled):
    return [ConstraintRow(f"{name}: {label}", ((None, q),)) for label, q in labelled]


def _coincidence_rows(name, fi, fj, x):
    return _rows(name, zip(("x", "y", "z"), coincidence(fi.point(x), fj.point(x))))


def revolute_rows(name, fi, fj, x, u, drive=None):
    """Point coincidence + parallel axes (5); a drive adds the angle θ(t).

    The drive row locks ``a_j · (cos θ h2_i − sin θ h1_i) = 0`` with ``a_j = h1`` in
    the reference configuration: θ is the right-handed rotation of body j
    relative to body i about ``u``, zero in the reference configuration.
    """
    h1, h2 = perpendicular_basis(u)
    rows = _coincidence_rows(name, fi, fj, x)
    rows += _rows(name, zip(("axis·h1", "axis·h2"),
                            parallel(fi.direction(u), fj.direction(h1), fj.direction(h2))))
    if drive is not None:
        a_j = fj.direction(h1)
        rows.append(ConstraintRow(f"{name}: drive θ(t)", (
            (_Weight(drive, "cos"), dot(a_j, fi.direction(h2))),
            (_Weight(drive, "sin"), -1.0 * dot(a_j, fi.direction(h1))))))
    return rows


def spherical_rows(name, fi, fj, x):
    return _coincidence_rows(name, fi, fj, x)


def universal_rows(name, fi, fj, x, u_i, u_j, cos_angle=0.0):
    """Point coincidence + cross axes at a constant angle (4).

    ``u_i · u_j − cos α₀ = 0``: the perpendicularity primitive with a constant;
    ``cos α₀ = 0`` is the standard (Cardan) joint.
    """
    if cos_angle == 0.0:
        return _coincidence_rows(name, fi, fj, x) + _rows(
            name, [("axes ⊥", perpendicular(fi.direction(u_i), fj.direction(u_j)))])
    return _coincidence_rows(name, fi, fj, x) + _rows(
        name, [("axes angle", perpendicular(fi.direction(u_i), fj.direction(u_j))
                + Quadratic(const=-float(cos_angle)))])


def point_on_line_rows(name, fi, fj, x, u):
    """A point x of body j stays on the line (x, u) fixed in body i (2 rows).

    Two translation restrictions ``(r_j − r_i) · h_k = 0`` with ``h1 ⊥ h2 ⊥ u``
    fixed in body i.
    """
    h1, h2 = perpendicular_basis(u)
    return _rows(name, [
        (f"on line ⊥ h{k + 1}", translation_restriction(fi.point(x), fj.point(x),
                                                          fi.direction(h)))
        for k, h in enumerate((h1, h2))])


def point_on_plane_rows(name, fi, fj, x, n):
    """A point x of body j stays on the plane (x, normal n) fixed in body i (1 row)."""
    return _rows(name, [("on plane", translation_restriction(fi.point(x), fj.point(x),
                                                             fi.direction(n)))])


def axial_coordinates(fi, fj, x, u, kinds):
    """Joint coordinates of body j relative to body i for a joint (x, u).

    ``"angle"``: θ = atan2(a_j·h2_i, a_j·h1_i) with ``a_j = h1`` fixed in body j,
    the convention of the revolute drive (right-handed about u, zero in the
    reference configuration). ``"slide"``: s = (r_j − r_i)·u_i, the convention
    of the prismatic drive.
    """
    h1, h2 = perpendicular_basis(u)
    out = []
    for kind in kinds:
        if kind == "angle":
            a_j = fj.direction(h1)
            out.append(("angle", (dot(a_j, fi.direction(h1)), dot(a_j, fi.direction(h2)))))
        else:
            out.append(("slide", (translation_restriction(fi.point(x), fj.point(x),
                                                          fi.direction(u)),)))
    return tuple(out)


def cylindrical_rows(name, fi, fj, x, u):
    """Parallel axes + two translation restrictions (4)."""
    h1, h2 = perpendicular_basis(u)
    rows = _rows(name, zip(("axis·h1", "axis·h2"),
                           parallel(fi.direction(u), fj.direction(h1), fj.direction(h2))))
    return rows + _rows(name, [
        (f"slide ⊥ h{k + 1}", translation_restriction(fi.point(x), fj.point(x), fi.direction(h)))
        for k, h in enumerate((h1, h2))])


def prismatic_rows(name, fi, fj, x, u, drive=None):
    """Cylindrical + twist lock (5); a drive adds the displacement s(t).

    The drive row is ``(r_j − r_i) · u − s(t) = 0``: s is the displacement of
    body j relative to body i along ``u``, zero in the reference configuration.
    """
    h1, h2 = perpendicular_basis(u)
    rows = cylindrical_rows(name, fi, fj, x, u)
    rows += _rows(name, [("twist", perpendicular(fi.direction(h1), fj.direction(h2)))])
    if drive is not None:
        rows.append(ConstraintRow(f"{name}: drive s(t)", (
            (None, translation_restriction(fi.point(x), fj.point(x), fi.direction(u))),
            (_Weight(drive, "s"), Quadratic(const=-1.0)))))
    return rows


def fixed_rows(name, fi, fj, x):
    """Point coincidence + three perpendicularities of the frame axes (6)."""
    E = np.eye(3)
    return _coincidence_rows(name, fi, fj, x) + _rows(name, [
        (f"e{k + 1}⊥e{l + 1}", perpendicular(fi.direction(E[k]), fj.direction(E[l])))
        for k, l in ((0, 1), (0, 2), (1, 2))])


def distance_rows(name, fi, fj, xa, xb, length):
    return _rows(name, [("distance", distance(fi.point(xa), fj.point(xb), length))])
