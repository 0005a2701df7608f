"""The mutable builder: bodies, joints and forces, validated as they are added."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import joints as J
from .body import GROUND, Body, validate_axes, validate_conditioning, validate_mass_properties
from ..util.checks import float_array, number, shown
from .expressions import Affine, dot
from .forces import CartesianSpringDamper, JointSpringDamper, PointForce, SpringDamper, Torque
from .frozen import Model
from .inputs import JointInput, torque_law


def _vector(value, what, where, unit=False):
    """3 finite numbers (a unit vector if ``unit``), or an error naming ``where`` and ``what``."""
    v = float_array(value)
    if v is None or v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{where}: {what} must be 3 finite numbers, got {shown(value)}")
    if unit:
        # scaled first: the norm of (1e200, 1e200, 1e200) overflows to inf, and v / inf
        # would be a zero "direction" whose rows are NaN
        scale = float(np.abs(v).max())
        w = v / scale if scale > 0.0 else v
        if scale * np.linalg.norm(w) < 1e-12:
            raise ValueError(f"{where}: {what} has zero length; give a direction")
        v = w / np.linalg.norm(w)
    return v


@dataclass(frozen=True, eq=False)
class NamedFrame:
    """A named frame fixed in a body (or in ground): a sensor, a tool flange, a URDF
    link lumped into its parent (docs/model-format.md).

    ``body``: the body's name (``GROUND`` for a frame fixed in the world);
    ``origin`` (3,) and ``axes`` (3×3, columns) place the frame in the body
    frame. A frame adds nothing to the dynamics; it names body-fixed points:
    ``sol.point(name, x, local=True)`` (``= sol.point(f.body, f.point(x),
    local=True)``) is the world trajectory of the point ``x`` given in frame
    ``f``, ``sol.rotation(name)`` its orientation. On ground, ``point`` gives
    world coordinates.

    ``after = (joint, k)``: the frame of a massless link inside a compound
    joint (a URDF chain folded by ``load_urdf``): it moves with ``body`` (the
    joint's body a) and the joint's first k DOF; ``origin`` and ``axes`` are
    its placement in the body frame when those DOF are zero, and
    ``nc.joint_space(model).frame_placement(frame, p)`` its world placement.
    """

    body: object
    origin: np.ndarray
    axes: np.ndarray
    after: tuple | None = None

    def fixed_placement(self):
        """``(origin, axes)`` in the body frame (``ValueError`` for a frame that moves
        with a compound joint: it is not fixed in a body)."""
        if self.after is not None:
            raise ValueError(f"this frame moves with the first {self.after[1]} DOF of "
                             f"compound joint {self.after[0]!r}, not with body "
                             f"{shown(self.body)}: its points are not fixed in a body; use "
                             f"nc.joint_space(model).frame_placement(frame, p)")
        return self.origin, self.axes

    def point(self, local_point=(0.0, 0.0, 0.0)) -> np.ndarray:
        """Body-frame coordinates (3,) of a point given in this frame
        (:meth:`fixed_placement`)."""
        origin, axes = self.fixed_placement()
        return origin + axes @ np.asarray(local_point, float)


#: joint coordinates of the axial joints (the first is the default)
_AXIAL_COORDINATES = {"revolute": ("angle",), "prismatic": ("slide",),
                      "cylindrical": ("slide", "angle")}


class Mechanism:
    """Builder of a multibody model in natural coordinates.

    Points and axes are world coordinates of the reference configuration
    unless ``local=True``, in which case they are in the frame of the first
    body argument that is not ground. ``build()`` returns an immutable
    :class:`~natcoord.model.frozen.Model`.
    """

    def __init__(self, gravity=(0.0, 0.0, 0.0), name="mechanism"):
        if not isinstance(name, str):       # a model file stores the name as text
            raise ValueError(f"mechanism name must be a string, got {shown(name)}")
        self.name = name
        #: the benchmark scenario: ``t_end`` (s) and an ``output_point``
        #: ``(body, world point)`` that plots and error measures follow.
        self.scenario = {"t_end": 10.0}
        self.gravity = _vector(gravity, "gravity", f"mechanism {name!r}")
        self.bodies: list[Body] = []
        self.joints: list[J.Joint] = []
        self.forces: list = []
        self._initial: dict[int, dict] = {}
        #: prescribed initial joint rates ``{(joint, coordinate): rate}``
        self.joint_rates: dict[str, tuple] = {}
        #: declared joint inputs (``add_input``), applied by ``nc.simulate``
        self.inputs: list[JointInput] = []
        # Bodies, joints and frames are three name spaces, as in URDF and MJCF (a
        # joint may be named like a body); a compound joint's DOF are joint names.
        self._by_name: dict[str, Body] = {}
        self._joint_names: set[str] = set()
        #: named frames ``{name: NamedFrame}`` (``attach_frame``), a name space of their own
        self.frames: dict[str, NamedFrame] = {}
        #: what a file importer reported (``natcoord.load_mjcf``: the elements not
        #: modelled, the MuJoCo joints' DOF); carried to ``Model.import_report``
        self.import_report: dict = {}

    # ------------------------------------------------------------- bodies
    def add_body(self, name, mass, com, inertia, origin=(0.0, 0.0, 0.0), axes=None,
                 local=False, non_physical_inertia=False):
        """Add a rigid body; returns its name.

        ``com``: centre of mass (world point unless ``local``); ``inertia``:
        3×3 tensor about the centre of mass in body axes; ``origin``/``axes``:
        reference placement of the body frame (axes as columns). A zero inertia is
        a point mass; a zero mass with it, a massless body (a frame between two
        joints). Either is accepted when the joints to the bodies it carries
        determine its motion, checked by :meth:`build` (docs/method.md §1.2).
        ``non_physical_inertia=True`` accepts positive principal moments that violate
        the triangle inequality (no mass distribution has them; URDF files do, and
        Pinocchio simulates them as given): the dynamics are defined, since every
        solve uses the body's spatial inertia (:func:`~natcoord.model.body.
        validate_mass_properties`).
        """
        if not isinstance(name, str) or not name or name.lower() == "ground":
            raise ValueError(f"body name must be a non-empty string other than 'ground', "
                             f"got {name!r}")
        if name in self._by_name:
            raise ValueError(f"body {name!r}: the name is already used by a body; body names "
                             f"must be unique (joints and frames have name spaces of their own)")
        where = f"body {name!r}"
        origin = _vector(origin, "origin", where)
        A = validate_axes(name, np.eye(3) if axes is None else axes)
        com = _vector(com, "com", where)
        mass, inertia = validate_mass_properties(name, mass, inertia,
                                                 non_physical=bool(non_physical_inertia))
        local_com = com if local else A.T @ (com - origin)
        body = Body(name, len(self.bodies), mass, local_com, inertia, origin, A)
        validate_conditioning(body)
        self.bodies.append(body)
        self._by_name[name] = body
        return name

    def _joint_spec(self, joint, where):
        """The joint named ``joint``, or ``ValueError`` from ``where`` listing the joints."""
        spec = next((j for j in self.joints if j.name == joint), None)
        if spec is None:
            raise ValueError(f"{where}: unknown joint {joint!r}; joints: "
                             f"{[j.name for j in self.joints] or 'none yet'}")
        return spec

    def body(self, ref) -> Body | None:
        """The :class:`Body` named ``ref`` (None for ground)."""
        if ref is GROUND or (isinstance(ref, str) and ref.lower() == "ground"):
            return None
        if isinstance(ref, str) and ref in self._by_name:
            return self._by_name[ref]
        hint = ""
        if isinstance(ref, str) and ref in self._joint_names:
            hint = f" ({ref!r} is a joint, not a body)"
        elif isinstance(ref, str) and ref in self.frames:
            hint = (f" ({ref!r} is a frame, not a body: it is fixed in "
                    f"{shown(self.frames[ref].body)})")
        raise ValueError(f"unknown body {ref!r}{hint}; known bodies: "
                         f"{[b.name for b in self.bodies] or 'none yet'} (or nc.GROUND)")

    def attach_frame(self, name, body, origin=(0.0, 0.0, 0.0), axes=None, local=False,
                     after=None):
        """Name a frame fixed in ``body`` (or ``GROUND``); returns the name.

        ``origin``/``axes`` (columns) place the frame: in the reference
        configuration's world coordinates, or in the body frame if ``local``.
        ``after=(joint, k)``: the frame moves with the first k DOF of compound
        joint ``joint`` from ``body`` (its body a; :class:`NamedFrame`).
        Frames are looked up in ``frames``; model files store them (``frames``).
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"frame name must be a non-empty string, got {shown(name)}")
        where = f"frame {name!r}"
        if name in self.frames:
            raise ValueError(f"{where}: the name is already used; frame names must be unique")
        try:
            b = self.body(body)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        x = _vector(origin, "origin", where)
        try:
            A = validate_axes(name, np.eye(3) if axes is None else axes)
        except ValueError:
            raise ValueError(f"{where}: axes must be an orthonormal right-handed 3×3 matrix "
                             f"(columns e1, e2, e3), got {shown(axes)}") from None
        if after is not None:
            joint = next((j for j in self.joints if j.name == after[0]), None)
            if joint is None or not joint.dofs or not 0 <= after[1] <= len(joint.dofs) \
                    or joint.bodies[0] != (-1 if b is None else b.index):
                raise ValueError(f"{where}: after={shown(after)} must name a compound joint "
                                 f"from body {shown(body)} and a number of its DOF")
            after = (joint.name, int(after[1]))
        if b is not None and not local:
            x, A = b.to_local_point(x), b.axes.T @ A
        self.frames[name] = NamedFrame(GROUND if b is None else b.name, x, A, after)
        return name

    def set_initial(self, body, origin=None, axes=None, velocity=None,
                    angular_velocity=None):
        """Approximate initial placement and velocity of a body (world frame).

        ``velocity`` is that of the frame origin, ``angular_velocity`` ω gives
        ``ė_k = ω × e_k``. ``natcoord.assemble(model)`` makes them consistent.
        """
        b = self.body(body)
        if b is None:
            raise ValueError("set_initial: ground does not move")
        where = f"initial state of body {b.name!r}"
        given = {"origin": origin, "axes": axes, "velocity": velocity,
                 "angular_velocity": angular_velocity}
        checked = {what: validate_axes(b.name, value) if what == "axes" else
                   _vector(value, what, where)
                   for what, value in given.items() if value is not None}
        self._initial.setdefault(b.index, {}).update(checked)

    # ------------------------------------------------------------- joints
    def _joint_frames(self, kind, a, b, name):
        label = name or f"{kind}{len(self.joints) + 1}"
        if not isinstance(label, str) or not label:
            raise ValueError(f"{kind} joint name must be a non-empty string, got {name!r}")
        where = f"{kind} joint {label!r}"
        if label in self._joint_names:
            raise ValueError(f"{where}: the name is already used by a joint (or a compound "
                             f"joint's DOF); joint names must be unique (bodies and frames "
                             f"have name spaces of their own)")
        try:
            ba, bb = self.body(a), self.body(b)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        if ba is None and bb is None:
            raise ValueError(f"{where}: both sides are ground; a joint needs a moving body")
        if ba is bb:
            raise ValueError(f"{where}: connects body {ba.name!r} to itself")
        return label, where, J.Frame(ba), J.Frame(bb)

    def _world(self, fi, fj, value, what, where, local, direction=False):
        v = _vector(value, what, where, unit=direction)
        if not local:
            return v
        body = fi.body or fj.body
        return body.to_world_direction(v) if direction else body.to_world_point(v)

    def _add(self, kind, label, fi, fj, rows, drive=None, coordinates=(), dofs=()):
        bodies = tuple(-1 if f.body is None else f.body.index for f in (fi, fj))
        self.joints.append(J.Joint(label, kind, bodies, tuple(rows), drive, coordinates,
                                   tuple(dofs)))
        self._joint_names.update([label] + [d.name for d in dofs])
        return label

    def _add_axial(self, kind, rows, a, b, point, axis, name, local, drive=None):
        """Joints given by a point and an axis (revolute, cylindrical, prismatic)."""
        label, where, fi, fj = self._joint_frames(kind, a, b, name)
        x = self._world(fi, fj, point, "point", where, local)
        u = self._world(fi, fj, axis, "axis", where, local, direction=True)
        drive = J.Drive.coerce(drive, where)
        driven = () if drive is None else (drive,)
        coordinates = J.axial_coordinates(fi, fj, x, u, _AXIAL_COORDINATES[kind])
        return self._add(kind, label, fi, fj, rows(label, fi, fj, x, u, *driven), drive,
                         coordinates)

    def add_revolute(self, a, b, point, axis, name=None, local=False, drive=None):
        """Revolute joint (5 rows); ``drive`` prescribes the angle θ(t) of b relative to a."""
        return self._add_axial("revolute", J.revolute_rows, a, b, point, axis, name, local,
                               drive)

    def add_spherical(self, a, b, point, name=None, local=False):
        """Spherical joint (3 rows)."""
        label, where, fi, fj = self._joint_frames("spherical", a, b, name)
        x = self._world(fi, fj, point, "point", where, local)
        return self._add("spherical", label, fi, fj, J.spherical_rows(label, fi, fj, x))

    def add_universal(self, a, b, point, axis_a, axis_b, name=None, local=False):
        """Universal joint (4 rows): cross axes ``axis_a`` fixed in a, ``axis_b`` in b.

        The angle α₀ between the cross axes in the reference configuration is
        kept: ``u_a · u_b = cos α₀`` (90° for the standard Cardan joint; other
        angles model a non-perpendicular cross). Parallel axes are rejected:
        the angle constraint is then stationary (rank-deficient).

        Joint coordinates ``"angle_a"`` (about ``axis_a``, first) and
        ``"angle_b"`` (about ``axis_b``): b's rotation relative to a is
        ``Rot(axis_a, θa) Rot(axis_b, θb)``, two hinges through a massless cross
        (:func:`natcoord.model.joints.universal_coordinates`).
        """
        label, where, fi, fj = self._joint_frames("universal", a, b, name)
        x = self._world(fi, fj, point, "point", where, local)
        ua = self._world(fi, fj, axis_a, "axis_a", where, local, direction=True)
        ub = self._world(fi, fj, axis_b, "axis_b", where, local, direction=True)
        cos_angle = float(ua @ ub)
        if abs(cos_angle) <= 1e-9:
            cos_angle = 0.0
        elif abs(cos_angle) > np.cos(np.radians(1.0)):
            raise ValueError(f"{where}: axis_a and axis_b are (nearly) parallel "
                             f"(angle {np.degrees(np.arccos(min(abs(cos_angle), 1.0))):.3g}°); "
                             f"cross axes need an angle of at least 1°, usually 90°")
        return self._add("universal", label, fi, fj,
                         J.universal_rows(label, fi, fj, x, ua, ub, cos_angle),
                         coordinates=J.universal_coordinates(fi, fj, ua, ub))

    def add_compound(self, a, b, dofs, name=None, local=False):
        """Several joints in series from a to b with no body between them (rows 6 − DOF).

        ``dofs``: ``[(dof_name, kind, point, axis), ...]`` with ``kind`` ``"hinge"``
        or ``"slide"``, ordered parent → child as MuJoCo lists the ``<joint>``s of a
        body and a URDF chain runs through massless links: starting from the
        reference configuration, each DOF in turn rotates b about its axis
        through its point (right-handed) or translates b along its axis, the
        axes of later DOF carried along by the earlier ones (MuJoCo's
        ``mj_kinematics``). ``point``, ``axis``: world coordinates of the
        reference configuration, or with ``local=True`` in b's frame (a's when
        b is ground). Each coordinate is zero in the reference configuration.

        The motion set of the sequence is modelled exactly by one constraint set
        (:func:`natcoord.model.joints.compound_joint`: prismatic, translational,
        revolute, cylindrical, pin-in-slot, planar, Schoenflies, universal,
        spherical); the joint's ``kind`` is that set's. Each DOF keeps its name
        as a joint-space column (``nc.joint_space(model).q_names``, ``sol.q``,
        ``nc.joint_state``, ``nc.inverse_dynamics``); DOF names share the joint
        name space. ``name`` defaults to the DOF names joined by ``+``. A
        sequence without such a set raises ``ValueError`` naming the joint and
        its DOF.
        """
        where = f"compound joint {name!r}" if name is not None else "compound joint"
        if isinstance(dofs, (str, bytes, dict)) or not hasattr(dofs, "__len__") \
                or not 1 <= len(dofs) <= 6:
            raise ValueError(f"{where}: dofs must be a list of 1 to 6 (dof_name, kind, point, "
                             f"axis) tuples, got {shown(dofs)}")
        entries = []
        for k, entry in enumerate(dofs):
            if isinstance(entry, (str, bytes, dict)) or not hasattr(entry, "__len__") \
                    or len(entry) != 4:
                raise ValueError(f"{where}: dofs[{k}] must be (dof_name, kind, point, axis), "
                                 f"got {shown(entry)}")
            dof_name, kind = entry[0], entry[1]
            if not isinstance(dof_name, str) or not dof_name:
                raise ValueError(f"{where}: dofs[{k}]: the DOF name must be a non-empty "
                                 f"string, got {shown(dof_name)}")
            if kind not in ("hinge", "slide"):
                raise ValueError(f"{where}: DOF {dof_name!r}: kind must be 'hinge' or 'slide', "
                                 f"got {shown(kind)}")
            entries.append(entry)
        names = [e[0] for e in entries]
        label, where, fi, fj = self._joint_frames(
            "compound", a, b, "+".join(names) if name is None else name)
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"{where}: DOF names {twice} appear twice; each DOF needs its own "
                             f"name")
        used = [n for n in names if n in self._joint_names or (n == label and len(names) > 1)]
        if used:
            raise ValueError(f"{where}: DOF name(s) {used} already name a joint (or this "
                             f"joint); DOF names share the joint name space")
        frame = J.Frame(fj.body or fi.body) if local else fi
        out = []
        for dof_name, kind, point, axis in entries:
            at = f"{where}, DOF {dof_name!r}"
            out.append(J.Dof(dof_name, kind,
                             self._world(frame, fi, point, "point", at, local),
                             self._world(frame, fi, axis, "axis", at, local, direction=True)))
        kind, rows, coordinates = J.compound_joint(label, fi, fj, out)
        return self._add(kind, label, fi, fj, rows, coordinates=coordinates, dofs=out)

    def add_point_on_line(self, a, b, point, axis, name=None, local=False):
        """Point-on-line joint (2 rows): ``point`` of b stays on the line (point, axis) of a.

        Body b may rotate freely about the point and slide along the line;
        ``Solution.joint_coordinate`` reports the slide along ``axis``.
        """
        label, where, fi, fj = self._joint_frames("point_on_line", a, b, name)
        x = self._world(fi, fj, point, "point", where, local)
        u = self._world(fi, fj, axis, "axis", where, local, direction=True)
        return self._add("point_on_line", label, fi, fj,
                         J.point_on_line_rows(label, fi, fj, x, u),
                         coordinates=J.axial_coordinates(fi, fj, x, u, ("slide",)))

    def add_point_on_plane(self, a, b, point, normal, name=None, local=False):
        """Point-on-plane joint (1 row): ``point`` of b stays on the plane (point, normal) of a."""
        label, where, fi, fj = self._joint_frames("point_on_plane", a, b, name)
        x = self._world(fi, fj, point, "point", where, local)
        n = self._world(fi, fj, normal, "normal", where, local, direction=True)
        return self._add("point_on_plane", label, fi, fj,
                         J.point_on_plane_rows(label, fi, fj, x, n))

    def add_cylindrical(self, a, b, point, axis, name=None, local=False):
        """Cylindrical joint (4 rows): rotation about and sliding along ``axis``."""
        return self._add_axial("cylindrical", J.cylindrical_rows, a, b, point, axis, name,
                               local)

    def add_prismatic(self, a, b, point, axis, name=None, local=False, drive=None):
        """Prismatic joint (5 rows); ``drive`` prescribes the slide s(t) of b along axis."""
        return self._add_axial("prismatic", J.prismatic_rows, a, b, point, axis, name, local,
                               drive)

    def add_fixed(self, a, b, point=None, name=None, local=False):
        """Fixed joint (6 rows)."""
        label, where, fi, fj = self._joint_frames("fixed", a, b, name)
        body = fi.body or fj.body
        x = body.origin if point is None else self._world(fi, fj, point, "point", where, local)
        return self._add("fixed", label, fi, fj, J.fixed_rows(label, fi, fj, x))

    def add_distance(self, a, b, point_a, point_b, length=None, name=None):
        """Distance rod ``|r_b − r_a| = L`` (1 row); L defaults to the reference distance."""
        label, where, fi, fj = self._joint_frames("distance", a, b, name)
        xa = _vector(point_a, "point_a", where)
        xb = _vector(point_b, "point_b", where)
        length = float(np.linalg.norm(xb - xa)) if length is None else \
            number(length, "length", where)
        if length <= 0.0:
            raise ValueError(f"{where}: length must be positive, got {length!r}")
        return self._add("distance", label, fi, fj,
                         J.distance_rows(label, fi, fj, xa, xb, length))

    # ------------------------------------------------------------- forces
    def _point_expr(self, ref, point, where, local=False, what="point"):
        """Affine expression of ``point`` on body ``ref`` (a constant on ground)."""
        x = _vector(point, what, where)
        try:
            body = self.body(ref)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        if body is None:
            return Affine.constant(x)
        return Affine.body_point(body.index, x if local else body.to_local_point(x))

    def _force_label(self, what, name, on=""):
        """How errors name a force: ``"force 'push' on 'rod'"``, or unnamed
        ``"force on 'rod' (#3)"``, the third force, torque or spring added."""
        if name is None:
            return f"{what}{on} (#{len(self.forces) + 1})"
        if not isinstance(name, str) or not name:
            raise ValueError(f"{what}{on}: name must be a non-empty string, got {name!r}")
        return f"{what} {name!r}{on}"

    def add_spring(self, a, b, point_a, point_b, stiffness, rest_length=None, damping=0.0,
                   name=None):
        """Linear spring–damper between ``point_a`` (on a) and ``point_b`` (on b).

        The spring must have a length in the reference configuration: the
        direction of its force is undefined where its end points coincide.
        """
        where = self._force_label("spring", name)
        pa = self._point_expr(a, point_a, where, what="point_a")
        pb = self._point_expr(b, point_b, where, what="point_b")
        xa, xb = _vector(point_a, "point_a", where), _vector(point_b, "point_b", where)
        length = np.linalg.norm(xb - xa)
        if length <= 1e-12 * max(np.linalg.norm(xa), np.linalg.norm(xb), 1.0):
            raise ValueError(
                f"{where}: point_a and point_b coincide in the reference configuration, where "
                f"the direction of the spring force is undefined; attach the spring at points "
                f"apart, or model a zero-length spring with add_cartesian_spring")
        rest = length if rest_length is None else number(rest_length, "rest_length", where,
                                                         "non-negative")
        k = number(stiffness, "stiffness", where, "non-negative")
        c = number(damping, "damping", where, "non-negative")
        self.forces.append(SpringDamper(pa, pb, k, rest, c, where))

    def add_cartesian_spring(self, a, b, point_a, point_b, stiffness, damping=(0.0, 0.0, 0.0),
                             rest=(0.0, 0.0, 0.0), frame=GROUND, name=None):
        """Per-axis spring–damper between ``point_a`` (on a) and ``point_b`` (on b).

        Components ``d_k = (r_b − r_a) · h_k`` along the world axes x, y, z
        (``frame=GROUND``) or along directions fixed in body ``frame`` that are
        the world axes in the reference configuration. Force components
        ``−k_k (d_k − rest_k) − c_k ḋ_k`` on b (and the opposite on a); energy
        ``½ Σ k_k (d_k − rest_k)²``. ``stiffness``, ``damping``, ``rest``: 3 numbers
        each (or one number for all axes); zero rest length is fine.
        """
        where = self._force_label("cartesian spring", name)
        pa = self._point_expr(a, point_a, where, what="point_a")
        pb = self._point_expr(b, point_b, where, what="point_b")
        try:
            frame_body = self.body(frame)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        if not pa.terms and not pb.terms:
            raise ValueError(f"{where}: both ends are on ground; a spring needs a moving body")
        values = {}
        for what, value, sign in (("stiffness", stiffness, True), ("damping", damping, True),
                                  ("rest", rest, False)):
            v = np.broadcast_to(np.asarray(value, float), (3,)) if np.ndim(value) == 0 \
                else np.asarray(value, float)
            if v.shape != (3,) or not np.all(np.isfinite(v)) or (sign and np.any(v < 0)):
                raise ValueError(f"{where}: {what} must be one or three finite"
                                 f"{' non-negative' if sign else ''} numbers, got {value!r}")
            values[what] = v.copy()
        E = np.eye(3)
        h = [Affine.constant(E[k]) if frame_body is None else
             Affine.body_direction(frame_body.index, frame_body.to_local_direction(E[k]))
             for k in range(3)]
        components = [dot(pb - pa, hk) for hk in h]
        self.forces.append(CartesianSpringDamper(components, values["stiffness"],
                                                 values["damping"], values["rest"]))

    def add_joint_spring(self, joint, stiffness=0.0, rest=0.0, damping=0.0, coordinate=None,
                         name=None):
        """Spring–damper on a joint coordinate: ``τ = −k (q − rest) − c q̇``.

        Revolute joint: a torque about the axis on body b and its opposite on
        body a (``q`` the angle, rad; ``stiffness`` N·m/rad, ``damping``
        N·m·s/rad); prismatic: a force along the axis (``q`` the slide, m;
        N/m, N·s/m). ``rest`` is the coordinate where the spring is relaxed
        (0: the reference configuration). ``coordinate`` picks one of a
        cylindrical (``"slide"``/``"angle"``) or universal joint's
        (``"angle_a"``/``"angle_b"``) coordinates. Energy ``½ k (q − rest)²``;
        an angle's deflection is taken within (−π, π] of ``rest``: a spring
        wound more than half a turn is not modelled (the natural coordinates
        hold no winding number). MuJoCo's joint ``stiffness``/``springref``
        and ``damping`` (:func:`natcoord.load_mjcf`).
        """
        where = self._force_label("joint spring", name, f" on {joint!r}")
        spec = self._joint_spec(joint, where)
        available = self._free_coordinates(spec, where, "joint springs act on",
                                           "a spring on a prescribed coordinate does nothing")
        which = spec.coordinates[0][0] if coordinate is None else coordinate
        if which not in available:
            raise ValueError(f"{where}: coordinate {which!r} not in {list(available)}")
        k = number(stiffness, "stiffness", where, "non-negative")
        c = number(damping, "damping", where, "non-negative")
        q0 = number(rest, "rest", where)
        forms = available[which]            # an angle is atan2 of two forms, a slide one form
        self.forces.append(JointSpringDamper(forms, len(forms) == 2, k, q0, c, where))

    @staticmethod
    def _free_coordinates(spec, where, use, driven):
        """The joint coordinates (name → forms) of ``spec`` for a spring or an initial
        rate; refused, naming ``where``, for a joint without coordinates (``use``: what
        needs them, the error lists the joints that have some) or a driven one
        (``driven``: why that does not work)."""
        if not spec.coordinates:
            raise ValueError(f"{where}: a {spec.kind} joint has no joint coordinate; {use} "
                             f"revolute, prismatic, cylindrical, universal and point-on-line "
                             f"joints")
        if spec.drive is not None:
            raise ValueError(f"{where}: the joint is driven; {driven}")
        return dict(spec.coordinates)

    def set_joint_rate(self, joint, rate):
        """Prescribe the initial rate of a joint coordinate exactly.

        Revolute: angle rate θ̇ (rad/s, right-handed about the axis, body b
        relative to body a); prismatic, cylindrical, point-on-line: slide rate
        ṡ (m/s). For a cylindrical joint pass ``rate={"slide": ṡ, "angle": θ̇}``,
        for a universal joint ``rate={"angle_a": θ̇a, "angle_b": θ̇b}``, to set
        either or both (a single number sets the first). Assembly adds
        ``θ̇(p, v) = rate`` to the velocity constraints of the M-orthogonal
        velocity projection (the consistent velocity nearest to the
        ``set_initial`` guess with that joint rate).
        """
        spec = self._joint_spec(joint, "set_joint_rate")
        where = f"set_joint_rate of {spec.kind} joint {joint!r}"
        available = list(self._free_coordinates(spec, where, "rates can be set for",
                                                "its rate is the drive's s'(t)"))
        rates = dict(rate) if isinstance(rate, dict) else {available[0]: rate}
        unknown = [c for c in rates if c not in available]
        if unknown:
            raise ValueError(f"{where}: coordinate {unknown[0]!r} not in {available}")
        self.joint_rates.update({(joint, c): number(value, f"rate of {c!r}", where)
                                 for c, value in rates.items()})

    def add_input(self, joint, torque):
        """Actuate a one-DOF joint with a torque law: ``τ(t)`` or a PD law.

        ``torque``: a number (constant), a :class:`~natcoord.model.drives.Drive`
        whose ``s(t)`` is the torque (``Drive.sinusoid``, ``Drive.polynomial``,
        ``Drive.spline``, …), or ``PD(kp, kd, target)``:
        ``τ = kp (q_ref(t) − q) − kd q̇`` (:mod:`natcoord.model.inputs`). Revolute
        joint: N·m about its axis on body b, the opposite on body a; prismatic:
        N along its axis. ``nc.simulate`` applies the inputs unless given
        ``u=`` or ``inputs=False``; model files store them (``inputs``).
        """
        where = f"input on joint {joint!r}"
        spec = self._joint_spec(joint, where)
        if spec.kind not in ("revolute", "prismatic"):
            raise ValueError(f"{where}: a {spec.kind} joint; an input actuates a joint with "
                             f"one DOF (revolute, prismatic); for other joints pass "
                             f"nc.simulate(..., u=u(t, q, qd), actuated=[...])")
        if spec.drive is not None:
            raise ValueError(f"{where}: the joint is driven; a torque on a prescribed "
                             f"coordinate does nothing (remove the drive or the input)")
        if any(i.joint == joint for i in self.inputs):
            raise ValueError(f"{where}: the joint has an input already; give one law per "
                             f"joint (a PD target and a feed-forward torque: pass u= to "
                             f"nc.simulate)")
        self.inputs.append(JointInput(joint, torque_law(torque, where)))

    def _load(self, body, what, value, name):
        """The moving body a force or torque acts on, its label and the value."""
        where = self._force_label(what, name, f" on {body!r}")
        try:
            b = self.body(body)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        if b is None:
            raise ValueError(f"{where}: a {what} on ground does nothing; pick a moving body")
        return b, where, value if callable(value) else _vector(value, what, where)

    def add_force(self, body, point, force, local=False, name=None):
        """Force (N) at a body point: constant (3,) or callable ``f(t, state) -> (3,)``.

        A callable is checked at every call: a result that is not 3 finite
        numbers raises an error naming the force (``name`` or its number).
        """
        _, where, force = self._load(body, "force", force, name)
        self.forces.append(PointForce(self._point_expr(body, point, where, local), force, where))

    def add_torque(self, body, torque, name=None):
        """Torque (N·m) on a body: constant (3,) or callable ``f(t, state) -> (3,)``."""
        b, where, torque = self._load(body, "torque", torque, name)
        self.forces.append(Torque(b.index, torque, where))

    # ------------------------------------------------------------- build
    def initial_guess(self):
        """Approximate initial ``(p, v)`` from reference and ``set_initial`` data."""
        p = np.zeros((4 * len(self.bodies), 3))
        v = np.zeros_like(p)
        for b in self.bodies:
            entry = self._initial.get(b.index, {})
            block = b.coordinates(entry.get("origin"), entry.get("axes"))
            p[4 * b.index:4 * b.index + 4] = block
            v[4 * b.index] = entry.get("velocity", np.zeros(3))
            omega = entry.get("angular_velocity", np.zeros(3))
            v[4 * b.index + 1:4 * b.index + 4] = np.cross(omega, block[1:])
        return p.ravel(), v.ravel()

    def velocity_requests(self):
        """``{body index: {"velocity" and/or "angular_velocity": value}}`` of the
        ``set_initial`` calls that asked for velocities (checked after assembly)."""
        return {i: {k: e[k] for k in ("velocity", "angular_velocity") if k in e}
                for i, e in self._initial.items() if "velocity" in e or "angular_velocity" in e}

    def build(self):
        """Validate and return the frozen :class:`~natcoord.model.frozen.Model`."""
        if not self.bodies:
            raise ValueError(f"mechanism {self.name!r} has no bodies; add_body() first")
        return Model.from_mechanism(self)


# ---------------------------------------------------------------- model files
# Every public ``add_*`` method and ``set_initial``/``set_joint_rate`` is wrapped
# once, here: a call that passed validation is recorded as (method name, its
# arguments as given, arrays as lists, ground as "ground", the resulting name)
# in ``Mechanism.calls``. ``natcoord.io.modelfile`` writes these calls
# (``to_dict``/``save_mechanism``) and replays them through the same methods
# (``from_dict``/``load_mechanism``), so a loaded model passes every check.
#
# A call that raises changes nothing, neither the mechanism nor ``calls``
# (else the model in memory and its saved file differ): every method checks
# all its arguments first and changes the mechanism only in its last
# statements, which store values already checked and cannot fail; the wrapper
# records a call after it returned. The wrapper does not snapshot and restore
# the mechanism instead: copying it on every call would make building an
# n-body mechanism O(n²). tests/test_trust_inputs.py fails a call of every
# wrapped method and compares the mechanism before and after.
def snapshot(value):
    if value is GROUND:
        return "ground"
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [snapshot(v) for v in value]
    if isinstance(value, dict):
        return {k: snapshot(v) for k, v in value.items()}
    return value


def _recorded(method):
    import functools
    import inspect
    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        depth = self.__dict__.get("_call_depth", 0)
        self._call_depth = depth + 1
        try:
            result = method(self, *args, **kwargs)
        finally:
            self._call_depth = depth
        if depth == 0:        # record outermost calls only
            arguments = signature.bind(self, *args, **kwargs).arguments
            arguments = {k: snapshot(v) for k, v in arguments.items() if k != "self"}
            if isinstance(result, str) and "name" in signature.parameters:
                arguments["name"] = result
            self.__dict__.setdefault("calls", []).append((method.__name__, arguments))
        return result

    return wrapper


for _method in [m for m in vars(Mechanism)
                if m.startswith("add_") or m in ("set_initial", "set_joint_rate")]:
    setattr(Mechanism, _method, _recorded(vars(Mechanism)[_method]))

