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

from dataclasses import dataclass, replace

import numpy as np

from .drives import WEIGHT_COS, WEIGHT_S, WEIGHT_SIN, Drive, Weight
from .expressions import Affine, Quadratic, component, dot


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
    #: a compound joint's DOF (``Mechanism.add_compound``): :class:`Dof`, parent → child
    dofs: tuple = ()

    @property
    def drive_row(self):
        """Index (within this joint) of the rheonomic drive row, or None."""
        return len(self.rows) - 1 if self.drive is not None else None

    def with_drive(self, drive):
        """A copy driven by ``drive``: the same rows, their weights on the new drive."""
        def moved(weight):
            return weight if weight is None or weight.drive is not self.drive \
                else Weight(drive, weight.kind)
        rows = tuple(replace(row, parts=tuple((moved(w), q) for w, q in row.parts))
                     for row in self.rows)
        return replace(self, rows=rows, drive=drive)


@dataclass(frozen=True, eq=False)
class Dof:
    """One DOF of a compound joint: a ``"hinge"`` about or a ``"slide"`` along the
    unit ``axis`` (3,) through ``point`` (3,), world coordinates of the reference
    configuration; its coordinate, named ``name``, is zero there."""

    name: str
    kind: str
    point: np.ndarray
    axis: np.ndarray


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
    h1 = cross(np.eye(3)[np.argmin(np.abs(u))], u)
    h1 /= np.linalg.norm(h1)
    return h1, cross(u, h1)


def cross(a, b):
    """``a × b`` of two 3-vectors: ``np.cross``'s arithmetic without its
    generality, which costs ~30 µs a call (model construction makes many)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


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
            (Weight(drive, WEIGHT_COS), dot(a_j, fi.direction(h2))),
            (Weight(drive, WEIGHT_SIN), -1.0 * dot(a_j, fi.direction(h1))))))
    return rows


def spherical_rows(name, fi, fj, x):
    return _coincidence_rows(name, fi, fj, x)


def universal_rows(name, fi, fj, x, u_i, u_j, cos_angle=0.0):
    """Point coincidence + cross axes at a constant angle (4).

    ``u_i · u_j − cos α₀ = 0``: the perpendicularity primitive with a constant;
    ``cos α₀ = 0`` is the standard (Cardan) joint.
    """
    return _coincidence_rows(name, fi, fj, x) + cross_angle_rows(name, fi, fj, u_i, u_j,
                                                                cos_angle)


def cross_angle_rows(name, fi, fj, u_i, u_j, cos_angle=0.0):
    """``u_i · u_j − cos α₀ = 0``, u_i fixed in body i, u_j in body j (1 row)."""
    if cos_angle == 0.0:
        return _rows(name, [("axes ⊥", perpendicular(fi.direction(u_i), fj.direction(u_j)))])
    return _rows(name, [("axes angle", perpendicular(fi.direction(u_i), fj.direction(u_j))
                         + Quadratic(const=-float(cos_angle)))])


def universal_coordinates(fi, fj, u_i, u_j):
    """Joint coordinates ``("angle_a", ...), ("angle_b", ...)`` of a universal joint.

    The relative rotation of body j is ``Rot(u_i, θa) Rot(u_j, θb)`` (reference
    world axes): first about the cross axis ``u_i`` fixed in body i, then
    about ``u_j`` fixed in body j — two revolute joints in series through a
    massless cross, as Pinocchio's ``JointModelUniversal``. Both angles are zero
    in the reference configuration and right-handed about their axes.

    ``θa``: ``u_j`` rotates about ``u_i`` only by θa, so
    ``θa = atan2(u_j · v2_i, u_j · v1_i)`` with ``v1 ∥`` the part of ``u_j``
    perpendicular to ``u_i`` and ``v2 = u_i × v1``, fixed in body i.
    ``θb``: seen from body j, ``u_i`` rotates about ``u_j`` by −θb, so
    ``θb = atan2(−u_i · w2_j, u_i · w1_j)`` with ``w1 ∥`` the part of ``u_i``
    perpendicular to ``u_j`` and ``w2 = u_j × w1``, fixed in body j. Each is
    a quotient of bilinear forms, as the revolute angle (:func:`axial_coordinates`).
    """
    def across(u, w):
        """Unit part of ``w`` perpendicular to unit ``u``, and ``u ×`` that."""
        v1 = w - (w @ u) * u
        v1 = v1 / np.linalg.norm(v1)
        return v1, cross(u, v1)

    v1, v2 = across(u_i, u_j)
    w1, w2 = across(u_j, u_i)
    a_j, b_i = fj.direction(u_j), fi.direction(u_i)
    return (("angle_a", (dot(a_j, fi.direction(v1)), dot(a_j, fi.direction(v2)))),
            ("angle_b", (dot(b_i, fj.direction(w1)), -1.0 * dot(b_i, fj.direction(w2)))))


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
            (Weight(drive, WEIGHT_S), Quadratic(const=-1.0)))))
    return rows


def fixed_rows(name, fi, fj, x):
    """Point coincidence + three perpendicularities of the frame axes (6)."""
    E = np.eye(3)
    return _coincidence_rows(name, fi, fj, x) + _rows(name, [
        (f"e{k + 1}⊥e{l + 1}", perpendicular(fi.direction(E[k]), fj.direction(E[l])))
        for k, l in ((0, 1), (0, 2), (1, 2))])


def distance_rows(name, fi, fj, xa, xb, length):
    return _rows(name, [("distance", distance(fi.point(xa), fj.point(xb), length))])


# ------------------------------------------------------------ compound joints
#: axes closer than this to parallel (or a set of axes closer to dependent, by the
#: smallest singular value of the unit axes) are refused: the constraint sets below
#: lose rank there, as :meth:`Mechanism.add_universal` refuses cross axes within 1°
_DEPENDENT = np.sin(np.radians(1.0))
#: lines (hinges) meet when their distance is below this times the model's length scale;
#: unit axes are parallel or perpendicular to this tolerance (a set only approximately
#: so would be modelled by a constraint set that is not its motion set)
_MEET_TOL = 1e-9


def _orientation_rows(name, fi, fj):
    """The relative rotation locked: three perpendicularities of the frame axes (3)."""
    E = np.eye(3)
    return _rows(name, [
        (f"e{k + 1}⊥e{l + 1}", perpendicular(fi.direction(E[k]), fj.direction(E[l])))
        for k, l in ((0, 1), (0, 2), (1, 2))])


def _parallel_rows(name, fi, fj, n):
    """The relative rotation about ``n`` only: ``n`` of body i ⊥ h1, h2 of body j (2)."""
    h1, h2 = perpendicular_basis(n)
    return _rows(name, zip(("axis·h1", "axis·h2"),
                           parallel(fi.direction(n), fj.direction(h1), fj.direction(h2))))


def _independent(axes):
    """Whether unit axes (k, 3) are linearly independent by more than 1° (k ≤ 3)."""
    return len(axes) <= 3 and \
        np.linalg.svd(np.asarray(axes), compute_uv=False)[-1] >= _DEPENDENT


def meeting_point(hinges, scale=1.0):
    """The point where the hinges' lines meet (their axes independent), or None.

    Least squares over the lines ``(1 − u uᵀ)(x − c) = 0``; MuJoCo and URDF give a
    point per hinge, but only the line matters."""
    P = [np.eye(3) - np.outer(h.axis, h.axis) for h in hinges]
    x = np.linalg.solve(sum(P), sum(Pk @ h.point for Pk, h in zip(P, hinges)))
    gap = max(np.linalg.norm(Pk @ (x - h.point)) for Pk, h in zip(P, hinges))
    return x if gap <= _MEET_TOL * scale else None


def common_perpendicular(h1, h2):
    """Feet ``(p1, p2)`` of the common perpendicular of two hinge lines: p1 on the
    first, p2 on the second (for parallel lines p1 is the first hinge's point)."""
    u1, u2 = h1.axis, h2.axis
    c = u1 @ u2
    w = h1.point - h2.point
    if 1.0 - abs(c) <= _MEET_TOL:
        p1 = h1.point
        return p1, h2.point + ((p1 - h2.point) @ u2) * u2
    # minimize |h1.point + s u1 − h2.point − t u2|
    s, t = np.linalg.solve([[1.0, -c], [c, -1.0]], [-(w @ u1), -(w @ u2)])
    return h1.point + s * u1, h2.point + t * u2


def _offset_hinge_rows(name, fi, fj, h1, h2):
    """Two hinges whose lines miss each other (4 rows): their common perpendicular
    p1 (on line 1, fixed in body i) → p2 (on line 2, fixed in body j) keeps its
    length d and stays normal to both axes, and the axes keep their angle (for
    parallel axes: parallelism instead of the two normality rows)."""
    p1, p2 = common_perpendicular(h1, h2)
    r1, r2 = fi.point(p1), fj.point(p2)
    d = float(np.linalg.norm(p2 - p1))
    u1, u2 = fi.direction(h1.axis), fj.direction(h2.axis)
    if 1.0 - abs(h1.axis @ h2.axis) <= _MEET_TOL:
        return _parallel_rows(name, fi, fj, h1.axis) + _rows(name, [
            ("in plane", translation_restriction(r1, r2, u1)),
            ("offset", distance(r1, r2, d))])
    cos_angle = float(h1.axis @ h2.axis)
    return _rows(name, [("offset ⊥ axis 1", translation_restriction(r1, r2, u1)),
                        ("offset ⊥ axis 2", translation_restriction(r1, r2, u2)),
                        ("offset", distance(r1, r2, d))]) + cross_angle_rows(
        name, fi, fj, h1.axis, h2.axis, 0.0 if abs(cos_angle) <= _MEET_TOL else cos_angle)


def compound_joint(name, fi, fj, dofs):
    """``(kind, rows, coordinates)``: the exact constraint set of a sequence of hinges
    and slides (:class:`Dof`, parent → child) between bodies i and j, or
    ``ValueError`` naming the joint and its DOF when the sequence has none here.

    The relative motions a sequence allows are a set of rigid motions of
    dimension k (its DOF); where that set is the motion set of a joint with a
    full-rank constraint set in natural coordinates (docs/method.md#14-joints),
    the joint is that set, with k = 6 − rank rows — exact, no massless frame,
    no added coordinates:

    * slides only (independent): prismatic (5 rows); two slides spanning a
      plane: translational in a plane, the orientation locked and a point kept
      on the plane (4); three: translational, the orientation locked (3);
    * one hinge (axis n): revolute (5); with one slide along n, cylindrical (4);
      with one slide along u not along n, a *pin-in-slot*: parallel axes and the
      hinge's point of body j on the slide's line of body i (slide before the
      hinge) or the point of body i on the line of body j (slide after), 4 rows;
      with two slides spanning a plane normal to n, *planar* (slide+slide+hinge
      in any order): parallel axes and a point kept on the plane (3); with three
      independent slides, a *Schoenflies* motion: parallel axes (2);
    * two hinges whose lines meet, axes apart: universal with the cross angle
      kept (4); two hinges whose lines miss each other: an *offset universal*
      (their common perpendicular, from a point of body i to a point of body
      j, keeps its length and stays normal to both axes; the axes keep their
      angle: 4 rows) or, parallel, a *planar 2R* (parallel axes, the
      perpendicular in the plane and of constant length: 4 rows); three hinges
      through one point, independent axes: spherical (3);
      one to three slides before such hinges (*sliding* universal or spherical):
      the hinges' point of body j on the slides' line or plane of body i, or
      free for three slides, and the cross angle of two hinges (6 − DOF rows;
      six DOF, no rows, are refused: that body is a free body).

    The coordinates of the sequence (q per DOF) are the joint space's
    (:mod:`natcoord.dynamics.joint_space`); ``coordinates`` (the quadratic-form
    angle and slide of :func:`axial_coordinates` and
    :func:`universal_coordinates`, for ``sol.joint_coordinate``) are given for
    the revolute, prismatic, cylindrical and universal kinds.
    """
    hinges = [d for d in dofs if d.kind == "hinge"]
    slides = [d for d in dofs if d.kind == "slide"]
    scale = max([1.0] + [float(np.abs(d.point).max()) for d in dofs])
    described = ", ".join(f"{d.name!r} ({d.kind})" for d in dofs)

    def refuse(why):
        return ValueError(f"compound joint {name!r} with DOF {described}: {why}; natcoord "
                          f"models exactly: up to three independent slides; one hinge with "
                          f"up to three slides (a slide along the hinge axis, one slide, two "
                          f"slides spanning the plane normal to the hinge, or three); two "
                          f"hinges; two or three hinges through one point with independent "
                          f"axes, after up to three slides (five DOF at most)")

    if slides and not _independent([d.axis for d in slides]):
        raise refuse("the slide axes are (nearly) dependent")
    if not hinges:
        s = slides[0]
        if len(slides) == 1:
            return ("prismatic", prismatic_rows(name, fi, fj, s.point, s.axis),
                    axial_coordinates(fi, fj, s.point, s.axis, ("slide",)))
        rows = _orientation_rows(name, fi, fj)
        if len(slides) == 2:
            n = cross(slides[0].axis, slides[1].axis)
            rows += point_on_plane_rows(name, fi, fj, s.point, n / np.linalg.norm(n))
        return "translational", rows, ()
    if len(hinges) == 1:
        h = hinges[0]
        n, c = h.axis, h.point
        if not slides:
            return ("revolute", revolute_rows(name, fi, fj, c, n),
                    axial_coordinates(fi, fj, c, n, ("angle",)))
        if len(slides) == 1:
            s = slides[0]
            off_axis = np.linalg.norm(cross(s.axis, n))      # sine of the angle
            if off_axis <= _MEET_TOL:
                return ("cylindrical", cylindrical_rows(name, fi, fj, c, n),
                        axial_coordinates(fi, fj, c, s.axis, ("slide",))
                        + axial_coordinates(fi, fj, c, n, ("angle",)))
            if off_axis < _DEPENDENT:
                raise refuse("the slide is within 1° of the hinge axis but not along it")
            # the slide's line through the hinge point, in the body it is fixed in
            first = dofs.index(s) < dofs.index(h)
            line = point_on_line_rows(name, fi, fj, c, s.axis) if first else \
                point_on_line_rows(name, fj, fi, c, s.axis)
            return "pin_slot", _parallel_rows(name, fi, fj, n) + line, ()
        if len(slides) == 2:
            if max(abs(s.axis @ n) for s in slides) > _MEET_TOL:
                raise refuse("the two slides do not span the plane normal to the hinge axis")
            return ("planar", _parallel_rows(name, fi, fj, n)
                    + point_on_plane_rows(name, fi, fj, c, n), ())
        return "schoenflies", _parallel_rows(name, fi, fj, n), ()
    if len(hinges) == 2 and not slides:
        p1, p2 = common_perpendicular(*hinges)
        offset = np.linalg.norm(p2 - p1)
        parallel_axes = 1.0 - abs(hinges[0].axis @ hinges[1].axis) <= _MEET_TOL
        if offset > _MEET_TOL * scale and (parallel_axes or _independent(
                [h.axis for h in hinges])):
            return ("planar_2r" if parallel_axes else "offset_universal",
                    _offset_hinge_rows(name, fi, fj, *hinges), ())
    if len(hinges) > 3 or not _independent([h.axis for h in hinges]):
        raise refuse("the hinge axes are (nearly) dependent")
    x = meeting_point(hinges, scale)
    if x is None:
        raise refuse("the hinge lines do not pass through one point")
    if slides and max(map(dofs.index, slides)) > min(map(dofs.index, hinges)):
        raise refuse("a slide after two or more hinges")
    if len(slides) + len(hinges) == 6:
        raise refuse("six DOF constrain nothing; leave the body without a joint (a free "
                     "body, whose joint space is a free joint)")
    ua, ub = hinges[0].axis, hinges[1].axis
    cos_angle = float(ua @ ub)
    cos_angle = 0.0 if abs(cos_angle) <= _MEET_TOL else cos_angle
    if not slides:
        if len(hinges) == 3:
            return "spherical", spherical_rows(name, fi, fj, x), ()
        return ("universal", universal_rows(name, fi, fj, x, ua, ub, cos_angle),
                universal_coordinates(fi, fj, ua, ub))
    # slides first: the hinges' point of body j stays in x + span(slides) of body i
    if len(slides) == 1:
        rows = point_on_line_rows(name, fi, fj, x, slides[0].axis)
    elif len(slides) == 2:
        n = cross(slides[0].axis, slides[1].axis)
        rows = point_on_plane_rows(name, fi, fj, x, n / np.linalg.norm(n))
    else:
        rows = []
    if len(hinges) == 2:
        return "sliding_universal", rows + cross_angle_rows(name, fi, fj, ua, ub, cos_angle), ()
    return "sliding_spherical", rows, ()
