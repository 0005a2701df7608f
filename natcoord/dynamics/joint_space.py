"""Joint space in and out: ``q, q̇, q̈`` and joint torques ``τ`` of a natural-coordinate
model (issue 23, item 5; docs/guide.md#joint-space, conventions in docs/model-format.md).

natcoord integrates body coordinates; a robotics researcher thinks in joint
positions, rates, accelerations and torques. This module maps between the two
exactly, for the joints of a *spanning tree* of the mechanism:

* **The tree.** Joints are taken in the order they were added; a joint of a
  kind with a joint space (revolute, prismatic, cylindrical, universal,
  spherical, fixed: :data:`TREE_DOF`; every compound joint) that links two
  bodies not yet connected
  is a *tree joint*, every other joint a *cut* (loop-closing) joint — what
  URDF calls a ``<loop_joint>``, natcoord imports last. A set of bodies with no
  tree path to ground hangs on a *free joint* (6 DOF, named after its root,
  the set's first body), as Pinocchio's ``root_joint`` of a floating base.
* **Order.** Depth first from ground (then from each free root, in body
  order), a body's child joints in the order they were added: a joint comes
  before the joints beyond it, as in Pinocchio and MuJoCo.
* **Coordinates.** Every joint moves its body ``b`` relative to its body ``a``
  (the order of ``add_revolute(a, b, ...)``), and ``q = 0`` (identity
  quaternions) is the reference configuration. Revolute: the angle θ,
  right-handed about the axis (natcoord's ``joint_coordinate``). Prismatic:
  the slide s along the axis. Cylindrical: ``(s, θ)``. Universal:
  ``(θa, θb)``, b relative to a is ``Rot(axis_a, θa) Rot(axis_b, θb)``.
  Spherical: the unit quaternion ``(x, y, z, w)`` (scalar last, Pinocchio's
  order) of b's rotation relative to a in b's body axes, and ``q̇`` the
  relative angular velocity in b's body axes (3). Free: the position of the
  body frame's origin and its orientation quaternion, both relative to the
  reference placement in its body axes, ``(x, y, z, qx, qy, qz, qw)``, and
  ``q̇ = (v, ω)``: the origin's velocity and the angular velocity in body axes
  (Pinocchio's ``JointModelFreeFlyer``). Compound (``Mechanism.add_compound``):
  one column per DOF, named by the DOF, its angle or slide, the DOF applied in
  turn as MuJoCo applies a body's joints (the product of exponentials,
  :func:`_chain`); read back in closed form (:func:`_compound_coordinates`,
  Davenport angles for three hinges). For a URDF model (body frame = link
  frame, reference = zero joint positions) these are Pinocchio's ``q``, ``v``,
  ``a`` and ``τ``.

**Kinematics** (the recursion of Featherstone's RNEA in world coordinates).
A body's placement is the rigid map ``Φ(y) = D y + d`` of its reference
points, its velocity the twist ``V = (ω, v_O)`` (angular velocity, velocity
of the body point at the world origin), so that a point r moves with
``v_O + ω × r``. A joint's relative twist is ``V_b − V_a = Ξ(q) q̇``, with the
columns of ``Ξ`` the unit twists of its DOF in world coordinates, and
``A_b − A_a = V_a ×ₘ Ξ q̇ + Ξ q̈ + Ξ̇_rel q̇`` (``×ₘ`` the motion cross product;
``Ξ̇_rel`` is non-zero only for the universal and compound joints, whose later
axes turn with the earlier ones). Natural coordinates follow exactly: ``o = Φ(o_ref)``,
``e_k = D A_ref e_k``, ``ȯ = v_O + ω × o``, ``ė_k = ω × e_k``, and the
accelerations alike. Read back, ``ω = ½ Σ e_k × ė_k`` (docs/method.md#11-coordinates)
gives the twists and ``q̇ = Ξ⁺ (V_b − V_a)``. This read-back — the twists of the
DOF fixed in bodies, the bias ``Ξ̇_rel q̇``, q̇ and q̈, looped over a trajectory's
states — runs in the compiled core (``natcoord/core/src/joint_space.c``) on tables
built once here; a compound joint's twists, which depend on its coordinates, are
computed here and handed to it.

**Joint geometry** is read from the model's constraints, not stored twice:
at the reference configuration the relative twists a joint's rows allow form
the null space of its Jacobian (a revolute joint's is the rotation about its
axis line), scaled and signed by the rates of the joint's coordinates
(``natcoord.model.kinematics.rate_row``), which fix the user's axis direction.

**Loops** (:func:`joint_state`): tree joints are exact by construction; the
cut joints' rows ``g_c(q) = 0`` are closed by Newton's method in joint space,
each step the smallest change in the joint-space mass norm ``‖δ‖_{SᵀMS}``
(``S = ∂v/∂q̇``: the mass norm of the body motion, unit-consistent across
angles and slides) of the joints not kept, and ``q̇`` (and ``q̈``) projected
likewise onto ``G_c S q̇ + g_t = 0`` (the M-orthogonal velocity projection of
:mod:`natcoord.dynamics.projection`, restricted to the tree). The change is
returned and warned about.

**Inverse dynamics** (:func:`inverse_dynamics`): with ``a`` from ``(q, q̇, q̈)``,
the equations ``M a + Gᵀ λ = f + C τ`` projected onto the tree's motions
(``Sᵀ G_treeᵀ = 0``, ``Sᵀ C = 1``) give ``τ = Sᵀ (M a − f) + (G_c S)ᵀ λ_c``:
Kane's equations (virtual power), evaluated in O(n) by summing each subtree's
wrench about the world origin and pairing it with the joint's twists — RNEA's
backward pass. Loops: τ of the joints not actuated is zero, which determines
the cut joints' multipliers ``λ_c`` and with them the loop-closure reactions.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular

from ..core import engine
from ..model import validate
from ..model.derived import derived
from ..model.frozen import State
from ..model.joints import common_perpendicular, meeting_point, perpendicular_basis
from ..model.kinematics import rate_row
from ..util.checks import NonFiniteValue, float_array, shown
from .assembly import ASSEMBLY_TOL, AssemblyError
from .projection import describe_rows, threshold
from .reactions import joint_reaction
from .workspace import Workspace

#: joint kinds that can be tree joints, with their degrees of freedom (entries of q̇)
TREE_DOF = {"fixed": 0, "revolute": 1, "prismatic": 1, "cylindrical": 2, "universal": 2,
            "spherical": 3}
#: entries of ``q`` and ``q̇`` per kind, and their column suffixes
_COLUMNS = {
    "fixed": ((), ()),
    "revolute": (("",), ("",)),
    "prismatic": (("",), ("",)),
    "cylindrical": ((".slide", ".angle"), (".slide", ".angle")),
    "universal": ((".angle_a", ".angle_b"), (".angle_a", ".angle_b")),
    "spherical": ((".qx", ".qy", ".qz", ".qw"), (".wx", ".wy", ".wz")),
    "free": ((".x", ".y", ".z", ".qx", ".qy", ".qz", ".qw"),
             (".vx", ".vy", ".vz", ".wx", ".wy", ".wz")),
}
#: a given unit quaternion may be off by this much in norm (it is normalized)
QUATERNION_TOL = 1e-6
#: loop closure or a drive changed an input by more than this (relative to
#: ``max(1, |input|∞)``): warned about
CHANGE_TOL = 1e-8


# ---------------------------------------------------------------- rotations
def _cross(a, b):
    """``a × b`` over the last axis of (..., 3) arrays (broadcast), component by
    component. ``np.cross`` computes the same products, but moves axes and
    checks shapes at every call, most of the time on arrays of a few vectors."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c0 = a1 * b2 - a2 * b1
    out = np.empty(c0.shape + (3,), c0.dtype)
    out[..., 0] = c0
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def _skew(w):
    """``[w]×`` (..., 3, 3)."""
    z = np.zeros_like(w[..., 0])
    return np.stack([np.stack([z, -w[..., 2], w[..., 1]], -1),
                     np.stack([w[..., 2], z, -w[..., 0]], -1),
                     np.stack([-w[..., 1], w[..., 0], z], -1)], -2)


def rotation_about(axis, angle):
    """``Rot(axis, θ)`` (..., 3, 3) for a unit axis (3,) and angles (...): Rodrigues."""
    angle = np.asarray(angle, float)
    K = _skew(np.broadcast_to(axis, angle.shape + (3,)))
    c, s = np.cos(angle)[..., None, None], np.sin(angle)[..., None, None]
    return np.eye(3) + s * K + (1.0 - c) * (K @ K)


def rotation_vector_matrix(w):
    """``exp([w]×)`` (..., 3, 3) of rotation vectors w (..., 3)."""
    w = np.asarray(w, float)
    angle = np.linalg.norm(w, axis=-1)
    safe = np.where(angle > 0.0, angle, 1.0)
    return rotation_about(w / safe[..., None], angle)


def quaternion_matrix(quat):
    """Rotation matrices (..., 3, 3) of unit quaternions ``(x, y, z, w)`` (..., 4)."""
    quat = np.asarray(quat, float)
    x, y, z, w = quat[..., 0], quat[..., 1], quat[..., 2], quat[..., 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)],
        -2)


def matrix_quaternion(R):
    """Unit quaternions ``(x, y, z, w)`` (..., 4) of rotation matrices, ``w ≥ 0``.

    Shepperd's method: from the largest of ``w² , x², y², z²`` (each ``¼(1 ± …)``
    of the diagonal), so no division by a small number.
    """
    R = np.asarray(R, float)
    d0, d1, d2 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    squares = np.stack([1 + d0 - d1 - d2, 1 - d0 + d1 - d2, 1 - d0 - d1 + d2,
                        1 + d0 + d1 + d2], -1)       # 4x², 4y², 4z², 4w²
    k = np.argmax(squares, axis=-1)
    root = np.sqrt(np.take_along_axis(squares, k[..., None], -1))[..., 0]
    # 4 w x, 4 w y, 4 w z and 4 y z, 4 x z, 4 x y
    r = {(i, m): R[..., i, m] for i in range(3) for m in range(3)}
    wx, wy, wz = r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]
    yz, xz, xy = r[2, 1] + r[1, 2], r[0, 2] + r[2, 0], r[1, 0] + r[0, 1]
    candidates = np.stack([np.stack([root, xy / root, xz / root, wx / root], -1),
                           np.stack([xy / root, root, yz / root, wy / root], -1),
                           np.stack([xz / root, yz / root, root, wz / root], -1),
                           np.stack([wx / root, wy / root, wz / root, root], -1)], -2)
    quat = 0.5 * np.take_along_axis(candidates, k[..., None, None], -2)[..., 0, :]
    return np.where(quat[..., 3:] < 0.0, -quat, quat)


def _motion_cross(V, W):
    """Motion cross product ``V ×ₘ W = (ω × ω', ω × v' + v × ω')`` of twists
    ``(ω, v_O)`` (..., 6): the three products in one :func:`_cross` call."""
    c = _cross(V.reshape(V.shape[:-1] + (2, 3)).take(_OMEGA_OMEGA_V, -2),
               W.reshape(W.shape[:-1] + (2, 3)).take(_OMEGA_V_OMEGA, -2))
    out = np.empty(c.shape[:-2] + (6,))
    out[..., :3] = c[..., 0, :]
    out[..., 3:] = c[..., 1, :] + c[..., 2, :]
    return out


_OMEGA_OMEGA_V, _OMEGA_V_OMEGA = np.array([0, 0, 1]), np.array([0, 1, 0])


#: the kinds of a DOF for the core (natcoord/core/src/joint_space.c): a slide, a turn,
#: a twist the caller gives (a compound joint's)
_DOF_SLIDE, _DOF_TURN, _DOF_GIVEN = 0, 1, 2
#: an empty argument of the core (no accelerations)
_EMPTY = np.empty(0)


# ---------------------------------------------------------------- the tree
@dataclass(frozen=True, eq=False)
class TreeJoint:
    """One joint of the spanning tree: how it places its child body.

    ``kind``: a key of :data:`TREE_DOF` or ``"free"``; ``index``: the model
    joint (−1 for a free joint); ``a``, ``b``: the joint's bodies (−1
    ground), its coordinates move b relative to a; ``child``: the body it
    places (b, or a when the tree reaches the joint from b). Geometry in the
    reference configuration (world): ``point`` on the axes, ``axes`` (k, 3)
    (revolute, prismatic, cylindrical: ``[u]``; universal: ``[u_a, u_b]``; compound:
    the DOF's axes, the point the world origin),
    ``frame`` the reference axes of body b (columns; identity for ground).
    ``q``, ``v``: slices of the joint's entries in ``q`` and ``q̇``.
    """

    name: str
    kind: str
    index: int
    a: int
    b: int
    child: int
    point: np.ndarray
    axes: np.ndarray
    frame: np.ndarray
    q: slice
    v: slice
    drive: object = None
    #: a compound joint's DOF (``natcoord.model.joints.Dof``, parent → child) and the
    #: kind of its constraint set (``"planar"``, ``"spherical"``, …)
    dofs: tuple = ()
    structure: str = ""

    @property
    def nq(self):
        return self.q.stop - self.q.start

    @property
    def nv(self):
        return self.v.stop - self.v.start

    @property
    def reversed(self):
        """The tree reaches this joint from its body b: it places body a."""
        return self.child == self.a


class JointSpace:
    """The joint space of a model: its tree, cut joints, the layout of q and q̇.

    Build it with :func:`joint_space` (computed once per model). Attributes:
    ``joint_names`` (the joints with DOF, in q order), ``q_names`` (nq,) and
    ``v_names`` (nv,) the columns of ``q`` and of ``q̇``/``q̈``/``τ``,
    ``nq``, ``nv``, ``cut_joints`` (names of the loop-closing joints),
    ``tree`` (:class:`TreeJoint`, fixed joints included, in q order).
    Methods map natural coordinates to joint space (``positions``,
    ``velocities``, ``accelerations``, batched over leading axes) and back
    (``forward``).
    """

    def __init__(self, model):
        self.n_bodies = model.n_bodies
        self._body_index = dict(model.body_index)
        self.origins = np.array([b.origin for b in model.bodies]).reshape(-1, 3)
        self.frames = np.array([b.axes for b in model.bodies]).reshape(-1, 3, 3)
        tree_edges, cut = _spanning_tree(model)
        self.tree = _ordered_tree(model, tree_edges, self.origins, self.frames)
        self.cut_joints = tuple(model.joints[j].name for j in cut)
        self.cut_rows = np.array([r for j in cut for r in range(*model.joint_rows[j])],
                                 np.int64)
        moving = [j for j in self.tree if j.nv > 0]
        self.joints = tuple(moving)
        self.joint_names = tuple(j.name for j in moving)
        self.nq = sum(j.nq for j in moving)
        self.nv = sum(j.nv for j in moving)
        self.q_names = tuple(name for j in moving for name in _column_names(j, 0))
        self.v_names = tuple(name for j in moving for name in _column_names(j, 1))
        #: a compound joint's DOF by name: (joint, index of the DOF)
        self._dofs = {d.name: (j, k) for j in moving for k, d in enumerate(j.dofs)}
        self._by_name = {j.name: j for j in moving}
        self._fixed_names = {j.name: j.kind for j in self.tree if j.nv == 0}
        #: q columns that are angles, and the first columns of quaternions (x, y, z, w)
        angles = {"revolute": (0,), "cylindrical": (1,), "universal": (0, 1)}
        self.angle_columns = np.array(
            [j.q.start + k for j in moving for k in angles.get(j.kind, ())]
            + [j.q.start + k for j in moving for k, d in enumerate(j.dofs) if d.kind == "hinge"],
            np.int64)
        self._dof_tables(moving)
        self.quaternion_columns = np.array([j.q.stop - 4 for j in moving
                                            if j.kind in ("spherical", "free")], np.int64)

    def __repr__(self):
        return (f"<natcoord.JointSpace: {len(self.joints)} joints, nq = {self.nq}, "
                f"nv = {self.nv}, cut joints {list(self.cut_joints)}>")

    def _dof_tables(self, moving):
        """The tables of the DOF (one per q̇ column) and of the joints with DOF, built once,
        for the core's twists, bias and rates (``natcoord/core/src/joint_space.c``) and
        the NumPy operations over all DOF of :meth:`forward` and :meth:`subtree_forces`.

        A DOF of a joint that is not compound is the unit twist of an axis fixed in
        one body turning about a point fixed in one body, or sliding along it
        (:func:`_dof_geometry`); axis and point in their bodies' axes (:meth:`_local`)
        make them weighted sums of the bodies' slot vectors (origin, e_1, e_2, e_3).
        Compound joints' twists depend on their coordinates (:func:`_compound_twists`):
        their rows are of kind "given", filled by :meth:`twists` before the core's call.
        """
        dofs, weights = [], []
        for j in moving:
            if j.kind == "compound":
                dofs += [(-1, -1, _DOF_GIVEN)] * j.nv
                weights += [np.zeros(8)] * j.nv
                continue
            for body, u, on, turning in _dof_geometry(j):
                dofs.append((body, on, _DOF_TURN if turning else _DOF_SLIDE))
                weights.append(np.concatenate([[0.0], self._local(body, u),
                                               [1.0], self._local(on, j.point, True)]))
        self._compound = tuple(j for j in moving if j.kind == "compound")
        #: per joint with DOF: its bodies a, b, first q̇ column, DOF count, and whether a
        #: DOF's axis turns with the DOF before it (universal and compound joints: the
        #: bias Ξ̇_rel q̇ of :meth:`_bias`)
        joints = np.array([(j.a, j.b, j.v.start, j.nv, j.kind in ("universal", "compound"))
                           for j in moving], np.int64).reshape(-1, 5)
        # unpacked for the core once (engine.pack): a call then skips the buffer requests
        self._core_dofs = engine.pack(np.array(dofs, np.int64).reshape(-1, 3), "q")
        self._core_weights = engine.pack(np.array(weights, float).reshape(-1, 8), "d")
        self._core_joints = engine.pack(joints, "q")
        joint_of = np.array([i for i, j in enumerate(moving) for _ in range(j.nv)], np.int64)
        #: ``Ξ_j q̇_j`` summed per joint: the incidence (joints, nv)
        self._incidence = (joint_of[None, :] == np.arange(len(moving))[:, None]).astype(float)
        #: per DOF: the body its joint places, and −1 where the tree reaches the
        #: joint from its body b (``subtree_forces``)
        self._dof_child = np.array([j.child for j in moving], np.int64)[joint_of]
        self._dof_sign = np.array([-1.0 if j.reversed else 1.0 for j in moving])[joint_of]

    def _local(self, body, x, point=False):
        """A reference-world direction (or ``point``) x (3,) in the reference axes of
        ``body`` (relative to its origin): ``Aᵀ (x − o_ref)``; ground's axes are the
        world's."""
        if body < 0:
            return np.asarray(x, float)
        return self.frames[body].T @ (x - self.origins[body] if point else x)

    def neutral(self):
        """``q`` (nq,) of the reference configuration: zeros, identity quaternions."""
        q = np.zeros(self.nq)
        for j in self.joints:
            if j.kind in ("spherical", "free"):
                q[j.q.stop - 1] = 1.0
        return q

    def joint(self, name):
        """The :class:`TreeJoint` of a joint with DOF (``ValueError`` naming the others)."""
        if name not in self._by_name:
            raise ValueError(self._unknown(name, "joint"))
        return self._by_name[name]

    def v_slice(self, name):
        """The ``q̇`` columns (slice) of a joint with DOF, or of one DOF of a compound
        joint by its name."""
        if name in self._dofs:
            j, k = self._dofs[name]
            return slice(j.v.start + k, j.v.start + k + 1)
        return self.joint(name).v

    def _unknown(self, name, what):
        if name in self.cut_joints:
            return (f"{what} {name!r} closes a loop (a cut joint): its coordinates follow "
                    f"from the tree joints {list(self.joint_names)}")
        if name in self._fixed_names:
            return f"{what} {name!r} is a {self._fixed_names[name]} joint: it has no DOF"
        return (f"unknown {what} {name!r}; joints with DOF (in order): {list(self.joint_names)}"
                + (f"; DOF of compound joints: {list(self._dofs)}" if self._dofs else ""))

    # ------------------------------------------------------------ arguments
    def vector(self, values, what, size_of="v"):
        """``(values, given)``: ``values`` as a checked (nq,) or (nv,) array — from an
        array in joint-space order or a dict ``{joint name or column name: value(s)}``
        (columns left out neutral: zero, identity quaternion) — and the mask of the
        columns given. ``None``: all neutral, none given."""
        n, names, sl = ((self.nq, self.q_names, "q") if size_of == "q"
                        else (self.nv, self.v_names, "v"))
        given = np.zeros(n, bool)
        if values is None:
            return (self.neutral() if size_of == "q" else np.zeros(n)), given
        if isinstance(values, dict):
            out = self.neutral() if size_of == "q" else np.zeros(n)
            for key, value in values.items():
                joint = self._by_name.get(key)
                if joint is None and key in names:           # one column by its name
                    out[names.index(key)] = _number(value, f"{what}[{key!r}]")
                    given[names.index(key)] = True
                    continue
                if joint is None:
                    raise ValueError(f"{what}: " + self._unknown(key, "joint"))
                s = getattr(joint, sl)
                entry = np.atleast_1d(_floats(value, f"{what}[{key!r}]"))
                if entry.shape != (s.stop - s.start,):
                    raise ValueError(f"{what}[{key!r}]: the {joint.kind} joint takes "
                                     f"{s.stop - s.start} number(s) "
                                     f"({', '.join(names[s])}), got shape {entry.shape}")
                out[s] = entry
                given[s] = True
        else:
            out = _floats(values, what)
            if out.shape != (n,):
                raise ValueError(f"{what} must have shape ({n},): one entry per column "
                                 f"{list(names)}, or be a dict by joint name; got shape "
                                 f"{out.shape}")
            out = out.copy()
            given[:] = True
        bad = np.flatnonzero(~np.isfinite(out))
        if bad.size:
            raise ValueError(f"{what} is NaN or infinite at {[names[i] for i in bad[:5]]}")
        if size_of == "q":
            for j in self.joints:
                if j.kind in ("spherical", "free"):
                    quat = out[j.q.stop - 4:j.q.stop]
                    norm = np.linalg.norm(quat)
                    if abs(norm - 1.0) > QUATERNION_TOL:
                        raise ValueError(f"{what}: the quaternion (x, y, z, w) of {j.kind} "
                                         f"joint {j.name!r} has norm {norm:.9g}; give a unit "
                                         f"quaternion")
                    out[j.q.stop - 4:j.q.stop] = quat / norm
        return out, given

    # ------------------------------------------------------------ forward
    def placements(self, q):
        """Body placements ``(D, d)`` (..., n + 1, 3, 3) and (..., n + 1, 3), the last
        entry ground (index −1), of joint positions q (..., nq)."""
        q = np.asarray(q, float)
        lead = q.shape[:-1]
        D = np.broadcast_to(np.eye(3), lead + (self.n_bodies + 1, 3, 3)).copy()
        d = np.zeros(lead + (self.n_bodies + 1, 3))
        for j in self.tree:
            Drel, shift = self._relative(j, q[..., j.q])
            c = j.point
            parent = j.b if j.reversed else j.a
            Dp, dp = D[..., parent, :, :], d[..., parent, :]
            # Φ_rel(y) = Drel (y − c) + c + shift: the joint's motion of b relative to a
            if not j.reversed:       # Φ_b = Φ_a ∘ Φ_rel
                D[..., j.b, :, :] = Dp @ Drel
                d[..., j.b, :] = _mv(Dp, c + shift - _mv(Drel, c)) + dp
            else:                    # Φ_a = Φ_b ∘ Φ_rel⁻¹
                Dt = np.swapaxes(Drel, -1, -2)
                D[..., j.a, :, :] = Dp @ Dt
                d[..., j.a, :] = _mv(Dp, c - _mv(Dt, c + shift)) + dp
        return D, d

    def _relative(self, j, qj):
        """``(D_rel, shift)`` of b relative to a in reference world coordinates."""
        lead = qj.shape[:-1]
        eye = np.broadcast_to(np.eye(3), lead + (3, 3))
        zero = np.zeros(lead + (3,))
        if j.kind == "revolute":
            return rotation_about(j.axes[0], qj[..., 0]), zero
        if j.kind == "prismatic":
            return eye, qj[..., :1] * j.axes[0]
        if j.kind == "cylindrical":
            return rotation_about(j.axes[0], qj[..., 1]), qj[..., :1] * j.axes[0]
        if j.kind == "universal":
            return (rotation_about(j.axes[0], qj[..., 0])
                    @ rotation_about(j.axes[1], qj[..., 1])), zero
        if j.kind == "compound":
            return _chain(j, qj)[-1]             # the joint point is the world origin
        A = j.frame
        if j.kind == "spherical":
            return A @ quaternion_matrix(qj) @ A.T, zero
        if j.kind == "free":
            return A @ quaternion_matrix(qj[..., 3:]) @ A.T, _mv(A, qj[..., :3])
        return eye, zero

    def twists(self, X, q=None):
        """``Ξ`` (..., nv, 6): the world unit twists (ω, v_O) of every DOF (row per q̇
        column) at slot vectors X (..., 4 n, 3).

        A turning DOF about axis ``w`` through the point ``c``: ``(w, c × w)``; a
        sliding one ``(0, w)``; fixed in their bodies, w and c are weighted sums of
        the slots (:meth:`_dof_tables`), evaluated by the core. A compound joint's
        twists depend on its coordinates (``q``, or read from X when not given):
        :func:`_compound_twists`."""
        X = np.ascontiguousarray(X, float)
        Xi = self._compound_rows(X, q)
        engine.joint_twists(self._core_dofs, self._core_weights, self.n_bodies, X, Xi)
        return Xi

    def _compound_rows(self, X, q=None):
        """Twists (..., nv, 6) with the compound joints' rows filled (the others to be
        written by the core)."""
        Xi = np.empty(X.shape[:-2] + (self.nv, 6))
        if self._compound:
            D, d = self._poses(X)
            for j in self._compound:
                qj = (self._joint_positions(j, D, d) if q is None
                      else np.asarray(q, float)[..., j.q])
                Xi[..., j.v, :] = _compound_twists(j, D, d, qj)
        return Xi

    def _bias(self, Xi, qd):
        """``Ξ̇_rel q̇`` (..., joints, 6) of every joint: a DOF's axis turns with the DOF
        before it in a series, ``Σ_{i<k} q̇_i q̇_k Ξ_i ×ₘ Ξ_k`` — the universal joint's
        second axis with the first (a rotation ``θ̇a θ̇b ω_a × ω_b`` about the joint
        point), each DOF of a compound joint with those before it; zero for the
        other kinds (the spherical and free joints' axes are body b's, which turn
        with the joint's own ω: ``ω × ω = 0``). Evaluated by the core, which uses it
        for :meth:`accelerations` too."""
        lead = np.broadcast_shapes(Xi.shape[:-2], qd.shape[:-1])
        out = np.empty(lead + (len(self.joints), 6))
        engine.joint_bias(self._core_joints,
                          np.ascontiguousarray(np.broadcast_to(Xi, lead + Xi.shape[-2:])),
                          np.ascontiguousarray(np.broadcast_to(qd, lead + qd.shape[-1:])), out)
        return out

    def forward(self, q, qd=None, qdd=None):
        """Natural coordinates ``(p, v, a)`` (..., 12 n) of joint-space ``(q, q̇, q̈)``.

        ``q̇`` and ``q̈`` default to zero; the result is exact (no projection):
        every tree joint's rows hold to round-off.
        """
        q = self._joint_array(q, "q", self.nq, self.q_names)
        lead = q.shape[:-1]
        qd = (np.zeros(lead + (self.nv,)) if qd is None else
              self._joint_array(qd, "qd", self.nv, self.v_names))
        lead = np.broadcast_shapes(lead, qd.shape[:-1])
        D, d = self.placements(q)
        V = np.zeros(lead + (self.n_bodies + 1, 6))
        A = None
        if qdd is not None:
            qdd = self._joint_array(qdd, "qdd", self.nv, self.v_names)
            A = np.zeros(lead + (self.n_bodies + 1, 6))
        X = self._coordinates(D, d)
        Xi = self.twists(X, q)
        # every joint's relative twist Ξ q̇, and the parts of its relative acceleration
        # that need no parent's motion, Ξ q̈ + Ξ̇_rel q̇, at once (per joint)
        rel = self._incidence @ (Xi * qd[..., :, None])
        if A is not None:
            own = self._incidence @ (Xi * qdd[..., :, None]) + self._bias(Xi, qd)
        n = 0
        for j in self.tree:
            parent = j.b if j.reversed else j.a
            if j.nv == 0:
                V[..., j.child, :] = V[..., parent, :]
                if A is not None:
                    A[..., j.child, :] = A[..., parent, :]
                continue
            sign = -1.0 if j.reversed else 1.0
            V[..., j.child, :] = V[..., parent, :] + sign * rel[..., n, :]
            if A is not None:
                change = _motion_cross(V[..., j.a, :], rel[..., n, :]) + own[..., n, :]
                A[..., j.child, :] = A[..., parent, :] + sign * change
            n += 1
        out = (X.reshape(X.shape[:-2] + (-1,)),
               _natural_velocity(X, V[..., :-1, :]).reshape(lead + (-1,)))
        if A is not None:
            out += (_natural_acceleration(X, V[..., :-1, :], A[..., :-1, :])
                    .reshape(lead + (-1,)),)
        return out

    def _coordinates(self, D, d):
        """Slot vectors (..., 4 n, 3) of the bodies placed by ``(D, d)``."""
        Dn = D[..., :-1, :, :]
        o = np.einsum("...ij,...j->...i", Dn, self.origins) + d[..., :-1, :]
        R = Dn @ self.frames
        X = np.concatenate([o[..., None, :], np.swapaxes(R, -1, -2)], -2)
        return X.reshape(X.shape[:-3] + (-1, 3))

    def jacobian(self, q):
        """``S = ∂v/∂q̇`` (12 n, nv) at joint positions ``q`` (nq,)."""
        _, v = self.forward(q, np.eye(self.nv))
        return v.T.copy()

    # ------------------------------------------------------------ read back
    def _poses(self, X):
        """``(D, d)`` of slot vectors X (..., 4 n, 3), ground appended."""
        lead = X.shape[:-2]
        B = X.reshape(lead + (self.n_bodies, 4, 3))
        R = np.swapaxes(B[..., 1:, :], -1, -2)
        D = np.broadcast_to(np.eye(3), lead + (self.n_bodies + 1, 3, 3)).copy()
        d = np.zeros(lead + (self.n_bodies + 1, 3))
        D[..., :-1, :, :] = R @ np.swapaxes(self.frames, -1, -2)
        d[..., :-1, :] = B[..., 0, :] - np.einsum("...ij,...j->...i", D[..., :-1, :, :],
                                                  self.origins)
        return D, d

    def positions(self, p, continuous=False):
        """Joint positions ``q`` (..., nq) of coordinates ``p`` (..., 12 n).

        Angles in (−π, π]; quaternions with ``w ≥ 0``. ``continuous``: ``p`` is a
        trajectory (k, 12 n) and q follows it: angles unwrapped along it (as
        ``Solution.joint_coordinate``), each quaternion the sign nearer its
        predecessor (the first with ``w ≥ 0``).
        """
        q = self._positions(p)
        if continuous and q.ndim == 2 and q.shape[0]:
            q[:, self.angle_columns] = np.unwrap(q[:, self.angle_columns], axis=0)
            for start in self.quaternion_columns:
                quat = q[:, start:start + 4]
                flips = np.einsum("ki,ki->k", quat[1:], quat[:-1]) < 0.0
                sign = np.concatenate([[1.0], np.where(np.cumsum(flips) % 2, -1.0, 1.0)])
                q[:, start:start + 4] = quat * sign[:, None]
        return q

    @staticmethod
    def _joint_array(x, name, size, names):
        """``x`` (..., size) as floats, or an error naming ``name`` and its columns."""
        x = _floats(x, name)
        if x.ndim == 0 or x.shape[-1] != size:
            raise ValueError(f"{name} must have {size} columns {shown(list(names))} along its "
                             f"last axis, got shape {x.shape}")
        return x

    def _slot_vectors(self, p, name="p"):
        """Coordinates ``p`` (..., 12 n) as slot vectors (..., 4 n, 3), or an error naming
        ``name`` (a NumPy reshape error before; none for ``(0, 12 n)``, no states)."""
        p = _floats(p, name)
        if p.ndim == 0 or p.shape[-1] != 12 * self.n_bodies:
            raise ValueError(f"{name} must hold the 12 n = {12 * self.n_bodies} coordinates "
                             f"of {self.n_bodies} bodies along its last axis, got shape "
                             f"{p.shape}")
        return p.reshape(p.shape[:-1] + (4 * self.n_bodies, 3))

    def _positions(self, p):
        X = self._slot_vectors(p)
        D, d = self._poses(X)
        q = np.zeros(X.shape[:-2] + (self.nq,))
        for j in self.joints:
            q[..., j.q] = self._joint_positions(j, D, d)
        return q

    def _joint_positions(self, j, D, d):
        """The coordinates (..., nq_j) of joint j between bodies placed by ``(D, d)``."""
        Da, Db = D[..., j.a, :, :], D[..., j.b, :, :]
        Drel = np.swapaxes(Da, -1, -2) @ Db
        c = j.point
        shift = _mv(np.swapaxes(Da, -1, -2), _mv(Db, c) + d[..., j.b, :] - d[..., j.a, :]) - c
        return self._coordinates_of(j, Drel, shift)

    def _coordinates_of(self, j, Drel, shift):
        if j.kind == "compound":
            return _compound_coordinates(j, Drel, shift)
        if j.kind == "revolute":
            return _angle_about(j.axes[0], Drel)[..., None]
        if j.kind == "prismatic":
            return (shift @ j.axes[0])[..., None]
        if j.kind == "cylindrical":
            return np.stack([shift @ j.axes[0], _angle_about(j.axes[0], Drel)], -1)
        if j.kind == "universal":
            return _universal_angles(*j.axes, Drel)
        Q = matrix_quaternion(j.frame.T @ Drel @ j.frame)
        if j.kind == "spherical":
            return Q
        return np.concatenate([_mv(j.frame.T, shift), Q], -1)

    def frame_placement(self, frame, p):
        """World origin (..., 3) and axes (..., 3, 3, columns) of a named frame
        (``Mechanism.frames``) at coordinates ``p`` (..., 12 n).

        A frame fixed in a body moves with it; a frame with ``after = (joint, k)``
        (a massless link inside a compound joint) moves with body a and the
        joint's first k DOF: ``Φ_a ∘ E_1 ∘ … ∘ E_k`` of its reference placement
        (:func:`_chain`)."""
        X = self._slot_vectors(p)
        D, d = self._poses(X)
        index = -1 if not isinstance(frame.body, str) else self._body_index[frame.body]
        A, o = (np.eye(3), np.zeros(3)) if index < 0 else (self.frames[index],
                                                          self.origins[index])
        y, axes = o + A @ frame.origin, A @ frame.axes     # reference world placement
        DG, tG = D[..., index, :, :], d[..., index, :]
        if frame.after is not None:
            joint_name, k = frame.after
            if joint_name not in self._by_name:
                raise ValueError(self._unknown(joint_name, "joint"))
            j = self._by_name[joint_name]
            Dk, tk = _chain(j, self._joint_positions(j, D, d))[k]
            DG, tG = DG @ Dk, _mv(DG, tk) + tG
        return _mv(DG, y) + tG, DG @ axes

    def velocities(self, p, v):
        """Joint velocities ``q̇`` (..., nv) of coordinates and velocities (..., 12 n)."""
        return self._rates(p, v)[0]

    def accelerations(self, p, v, a):
        """Joint accelerations ``q̈`` (..., nv) of coordinates, velocities and
        accelerations (..., 12 n) (``a`` from :func:`natcoord.accelerations`)."""
        return self._rates(p, v, a)[1]

    def _rates(self, p, v, a=None):
        """``(q̇, q̈)`` (..., nv) of coordinates, velocities and (given) accelerations
        (..., 12 n), q̈ None without ``a``: the core's ``joint_rates``, per state
        ``q̇_j = Ξ_j⁺ (V_b − V_a)`` and ``Ξ_j q̈_j = A_b − A_a − V_a ×ₘ Ξ_j q̇_j −
        Ξ̇_rel q̇`` (module docstring) with the bodies' twists and accelerations read
        from the slots (docs/method.md#11-coordinates)."""
        p = np.ascontiguousarray(p, float)
        lead = p.shape[:-1]
        X = p.reshape(lead + (p.shape[-1] // 3, 3))      # (not −1: no states is a trajectory)
        Xi = self._compound_rows(X)
        for j in self._compound:
            _check_regular(j, Xi[..., j.v, :])
        qd = np.empty(lead + (self.nv,))
        qdd = _EMPTY if a is None else np.empty(qd.shape)
        engine.joint_rates(self._core_dofs, self._core_weights, self._core_joints,
                           self.n_bodies, p, np.ascontiguousarray(v, float),
                           _EMPTY if a is None else np.ascontiguousarray(a, float), Xi, qd, qdd)
        return qd, (None if a is None else qdd)

    # ------------------------------------------------------------ loops and dynamics
    def retract(self, q, dv):
        """``q`` moved by a tangent step ``dv`` (nv,): angles and slides add, rotations
        turn by ``exp(δω)`` in body axes (and free origins move by ``R δv``)."""
        q = np.array(q, float)
        for j in self.joints:
            step = dv[j.v]
            if j.kind == "spherical":
                q[j.q] = matrix_quaternion(quaternion_matrix(q[j.q])
                                           @ rotation_vector_matrix(step))
            elif j.kind == "free":
                Q = quaternion_matrix(q[j.q][3:])
                q[j.q.start:j.q.start + 3] += Q @ step[:3]
                q[j.q.start + 3:j.q.stop] = matrix_quaternion(Q @ rotation_vector_matrix(step[3:]))
            else:
                q[j.q] += step
        return q

    def subtree_forces(self, X, Y):
        """Joint forces ``τ`` (nv,) that balance generalized forces ``Y`` (4 n, 3) on the
        bodies: ``τ = Sᵀ y``, by summing wrenches down the tree (RNEA's backward pass).

        A body's share of ``Y`` is the wrench ``(T_O, F)`` about the world origin,
        ``F = Y_o``, ``T_O = Σ e_k × Y_ek + o × F`` (its power at a twist ``(ω, v_O)``
        is ``ω·T_O + v_O·F``); a joint's τ pairs its twists with the wrench of the
        subtree it carries (minus, when the tree reaches it from body b).
        """
        B, Yb = X.reshape(-1, 4, 3), Y.reshape(-1, 4, 3)
        W = np.zeros((self.n_bodies + 1, 6))
        W[:-1, 3:] = Yb[:, 0]
        W[:-1, :3] = _cross(B[:, 1:], Yb[:, 1:]).sum(axis=1) + _cross(B[:, 0], Yb[:, 0])
        for j in reversed(self.tree):
            W[j.b if j.reversed else j.a] += W[j.child]
        return self._dof_sign * np.einsum("ki,ki->k", self.twists(X), W[self._dof_child])


def _dof_geometry(j):
    """``(axis body, axis, point body, turning)`` of each DOF of a tree joint j that is
    not compound, in q̇ order: the axis (reference world) is fixed in the axis body,
    the point it turns about (``j.point``) in the point body."""
    if j.kind == "revolute":
        return [(j.a, j.axes[0], j.a, True)]
    if j.kind == "prismatic":
        return [(j.a, j.axes[0], j.a, False)]
    if j.kind == "cylindrical":
        return [(j.a, j.axes[0], j.a, False), (j.a, j.axes[0], j.a, True)]
    if j.kind == "universal":
        return [(j.a, j.axes[0], j.a, True), (j.b, j.axes[1], j.a, True)]
    body_axes = list(j.frame.T)                 # body b's reference axes
    if j.kind == "spherical":
        return [(j.b, u, j.a, True) for u in body_axes]
    # free: the origin's velocity along, then the rotations about, body b's axes
    return [(j.b, u, j.b, False) for u in body_axes] + [(j.b, u, j.b, True) for u in body_axes]


def _mv(M, x):
    return np.einsum("...ij,...j->...i", M, x)


# ---------------------------------------------------------------- compound joints
def _column_names(j, which):
    """The q (``which`` 0) or q̇ (1) column names of tree joint j: a compound joint's
    DOF names, else the joint's name and the kind's suffixes."""
    if j.kind == "compound":
        return tuple(d.name for d in j.dofs)
    return tuple(j.name + suffix for suffix in _COLUMNS[j.kind][which])


def _chain(j, qj):
    """The rigid maps ``(D, t)`` (``y ↦ D y + t``, reference world coordinates) of the
    partial products ``E_1 ∘ … ∘ E_k``, k = 0 … n, of a compound joint's DOF at
    coordinates qj (..., n): ``E_k`` rotates about hinge k's line by ``q_k`` or
    translates along slide k by ``q_k``. The last is the joint's motion of body b
    relative to body a (the product of exponentials: each DOF's axis carried by
    the DOF before it, MuJoCo's ``mj_kinematics``)."""
    lead = qj.shape[:-1]
    D = np.broadcast_to(np.eye(3), lead + (3, 3))
    t = np.zeros(lead + (3,))
    out = [(D, t)]
    for k, dof in enumerate(j.dofs):
        if dof.kind == "hinge":
            Rk = rotation_about(dof.axis, qj[..., k])
            tk = dof.point - _mv(Rk, dof.point)
            D, t = D @ Rk, _mv(D, tk) + t
        else:
            t = _mv(D, qj[..., k:k + 1] * dof.axis) + t
        out.append((D, t))
    return out


def _compound_twists(j, D, d, qj):
    """A compound joint's unit twists (..., n, 6) at coordinates qj (..., n) between
    bodies placed by ``(D, d)``: DOF k's reference twist ξ_k (a hinge ``(u, c × u)``,
    a slide ``(0, u)``) carried by body a's placement and the DOF before it,
    ``Ad(Φ_a ∘ E_1 ∘ … ∘ E_{k−1}) ξ_k`` (the product of exponentials, Murray, Li &
    Sastry 1994, §3.2)."""
    Da, da = D[..., j.a, :, :], d[..., j.a, :]
    rows = []
    for dof, (Dk, tk) in zip(j.dofs, _chain(j, qj)):
        DG, tG = Da @ Dk, _mv(Da, tk) + da
        if dof.kind == "hinge":
            w = _mv(DG, dof.axis)
            v = _mv(DG, _cross(dof.point, dof.axis)) + _cross(tG, w)
        else:
            v = _mv(DG, dof.axis)
            w = np.zeros_like(v)
        rows.append(np.concatenate([w, v], -1))
    return np.stack(rows, -2)


def _signed_angle(u, v, w):
    """The angle (...) about unit u (3,) that turns v into w (..., 3) (their parts
    normal to u; zero where either part vanishes)."""
    v = v - (v @ u)[..., None] * u
    w = w - (w @ u)[..., None] * u
    return np.arctan2(_cross(v, w) @ u, np.einsum("...i,...i->...", v, w))


def davenport_angles(u1, u2, u3, R):
    """``(θ1, θ2, θ3)`` (..., 3) with ``R = Rot(u1, θ1) Rot(u2, θ2) Rot(u3, θ3)``, for
    unit axes (3,) with ``u1 · (u2 × u3) ≠ 0`` and rotations R (..., 3, 3).

    Davenport angles (Shuster & Markley, "Generalization of Euler angles",
    J. Astronaut. Sci. 51(2), 2003, in the active, reference-axes form):
    ``u1ᵀ R u3 = u1ᵀ Rot(u2, θ2) u3 = a cos θ2 + b sin θ2 + (u1·u2)(u2·u3)`` with
    ``a = u1·u3 − (u1·u2)(u2·u3)``, ``b = u1·(u2 × u3)`` (Rodrigues) gives θ2 on
    the branch through 0, ``θ2 = φ − sgn(b) arccos(x/r)``, ``φ = atan2(b, a)``,
    ``r = √(a² + b²)`` (for perpendicular axes ``θ2 ∈ [−π/2, π/2]``); then
    ``Rot(u1, θ1) Rot(u2, θ2) u3 = R u3`` gives θ1 and
    ``Rot(u3, −θ3) Rot(u2, −θ2) u1 = Rᵀ u1`` gives θ3. *Gimbal lock*, where
    ``Rot(u2, θ2) u3 ∥ u1`` (the first and last axes aligned, θ1 and θ3 not
    separate): θ3 = 0 and θ1 takes the whole turn about u1; rates are not
    defined there (the joint space's rates raise ``ValueError``).
    """
    u1, u2, u3 = (np.asarray(u, float) for u in (u1, u2, u3))
    R = np.asarray(R, float)
    a = u1 @ u3 - (u1 @ u2) * (u2 @ u3)
    b = u1 @ _cross(u2, u3)
    x = np.einsum("i,...ij,j->...", u1, R, u3) - (u1 @ u2) * (u2 @ u3)
    r = np.hypot(a, b)
    theta2 = np.arctan2(b, a) - np.sign(b) * np.arccos(np.clip(x / r, -1.0, 1.0))
    R2 = rotation_about(u2, theta2)
    v = _mv(R2, u3)
    locked = np.linalg.norm(v - (v @ u1)[..., None] * u1, axis=-1) < 1e-12
    theta1 = _signed_angle(u1, v, _mv(R, u3))
    theta3 = -_signed_angle(u3, _mv(np.swapaxes(R2, -1, -2), u1),
                            _mv(np.swapaxes(R, -1, -2), u1))
    # locked: R = Rot(u1, θ1) R2 with θ3 = 0, θ1 the turn of R R2ᵀ about u1
    h = perpendicular_basis(u1)[0]
    whole = _signed_angle(u1, np.broadcast_to(h, v.shape), _mv(R @ np.swapaxes(R2, -1, -2), h))
    theta1 = np.where(locked, whole, theta1)
    theta3 = np.where(locked, 0.0, theta3)
    return np.stack([theta1, theta2, theta3], -1)


def _compound_coordinates(j, Drel, shift):
    """A compound joint's coordinates (..., n) from its motion ``y ↦ Drel y + shift``.

    The hinges' angles first: two or three hinges through one point c, the
    universal joint's angles or the Davenport angles (:func:`davenport_angles`)
    of ``Drel``; two hinges whose lines miss each other, the turn of their
    common perpendicular about the first axis, then the rest of the rotation
    about the second; one hinge (point c on its line), the rotation of ``Drel`` about
    its axis. The slides then move c by ``T(c) − c = Σ s_k w_k`` (the rotations
    about c leave it in place), ``w_k = u_k`` for a slide before the hinge(s)
    and ``Rot(n, θ) u_k`` after one hinge — linear in s (least squares over the
    independent ``w_k``). A planar joint whose hinge lies between its two
    slides is singular where the turned slide is parallel to the other: there
    ``ValueError`` names the joint.
    """
    hinges = [k for k, dof in enumerate(j.dofs) if dof.kind == "hinge"]
    slides = [k for k, dof in enumerate(j.dofs) if dof.kind == "slide"]
    out = np.zeros(Drel.shape[:-2] + (len(j.dofs),))
    axes = [j.dofs[k].axis for k in hinges]
    c, rotation = np.zeros(3), None
    if len(hinges) == 3:
        out[..., hinges] = davenport_angles(*axes, Drel)
    elif j.structure in ("offset_universal", "planar_2r"):
        # the first angle turns the common perpendicular p1 → p2 about axis 1; the
        # second is what remains of the rotation, Rot(u2, θ2) = Rot(u1, θ1)ᵀ Drel
        p1, p2 = common_perpendicular(*j.dofs)
        theta1 = _signed_angle(axes[0], np.broadcast_to(p2 - p1, Drel.shape[:-1]),
                               _mv(Drel, p2) + shift - p1)
        out[..., 0] = theta1
        out[..., 1] = _angle_about(axes[1], np.swapaxes(rotation_about(axes[0], theta1), -1, -2)
                                   @ Drel)
        return out
    elif len(hinges) == 2:
        out[..., hinges] = _universal_angles(*axes, Drel)
    elif hinges:
        out[..., hinges[0]] = _angle_about(axes[0], Drel)
        rotation = rotation_about(axes[0], out[..., hinges[0]])
    if hinges:
        c = meeting_point([j.dofs[k] for k in hinges]) if len(hinges) > 1 \
            else j.dofs[hinges[0]].point
    if not slides:
        return out
    after = hinges[0] if hinges else len(j.dofs)
    W = np.stack([np.broadcast_to(j.dofs[k].axis, Drel.shape[:-1]) if k < after
                  else _mv(rotation, j.dofs[k].axis) for k in slides], -1)
    moved = _mv(Drel, c) + shift - c
    WtW = np.swapaxes(W, -1, -2) @ W
    if np.min(np.linalg.eigvalsh(WtW), initial=1.0) < 1e-12:
        raise ValueError(f"{j.structure} joint {j.name!r}: its coordinates are singular in "
                         f"this configuration (a slide turned by the hinge before it is "
                         f"parallel to another slide): the slides' coordinates are not "
                         f"defined here")
    out[..., slides] = np.linalg.solve(WtW, np.einsum("...ji,...j->...i", W, moved)[..., None])[
        ..., 0]
    return out


def _check_regular(j, Xi):
    """``ValueError`` where a compound joint's twists Xi (..., n, 6) are dependent
    (gimbal lock of its angles, or a singular slide arrangement): its rates are not
    defined there."""
    s = np.linalg.svd(Xi, compute_uv=False)
    scale = np.maximum(s[..., 0], 1.0)
    if np.any(s[..., -1] < 1e-9 * scale):
        raise ValueError(f"{j.structure} joint {j.name!r} (DOF "
                         f"{', '.join(d.name for d in j.dofs)}) is at a singular configuration "
                         f"of its coordinates (gimbal lock: the first and last hinge axes "
                         f"aligned): its joint rates are not defined here; the natural-"
                         f"coordinate motion is (the joint itself is a regular constraint set)")


def _across(u, w):
    """Unit part of ``w`` perpendicular to unit ``u``, and ``u ×`` that (the universal
    joint's angle bases, as ``natcoord.model.joints.universal_coordinates``)."""
    v1 = w - (w @ u) * u
    v1 = v1 / np.linalg.norm(v1)
    return v1, _cross(u, v1)


def _angle_about(u, Drel):
    """The angle θ (...) of rotations ``Drel = Rot(u, θ)`` (..., 3, 3): how far they turn
    ``h1 ⊥ u`` about u, ``atan2(Drel h1 · h2, Drel h1 · h1)`` (the revolute drive's
    convention, ``natcoord.model.joints.axial_coordinates``)."""
    h1, h2 = perpendicular_basis(u)
    r = _mv(Drel, h1)
    return np.arctan2(r @ h2, r @ h1)


def _universal_angles(ua, ub, Drel):
    """``(θa, θb)`` (..., 2) with ``Drel = Rot(ua, θa) Rot(ub, θb)`` (the quotients of
    ``natcoord.model.joints.universal_coordinates``): ``ub`` turns about ``ua`` by θa,
    and seen from body b ``ua`` turns about ``ub`` by −θb."""
    v1, v2 = _across(ua, ub)
    w1, w2 = _across(ub, ua)
    sb = _mv(Drel, ub)
    sa = _mv(np.swapaxes(Drel, -1, -2), ua)
    return np.stack([np.arctan2(sb @ v2, sb @ v1), np.arctan2(-(sa @ w2), sa @ w1)], -1)


def _natural_velocity(X, T):
    """Slot velocities (..., 4 n, 3) of twists T (..., n, 6): ``ȯ = v_O + ω × o``,
    ``ė_k = ω × e_k``."""
    B = X.reshape(X.shape[:-2] + (-1, 4, 3))
    lead = np.broadcast_shapes(B.shape[:-2], T.shape[:-1])
    B = np.broadcast_to(B, lead + (4, 3))
    w = T[..., None, :3]
    out = _cross(w, B)
    out[..., 0, :] += T[..., 3:]
    return out.reshape(lead[:-1] + (-1, 3))


def _natural_acceleration(X, T, A):
    """Slot accelerations of twists T and spatial accelerations A (..., n, 6):
    ``ö = a_O + α × o + ω × ȯ``, ``ë_k = α × e_k + ω × ė_k``."""
    B = X.reshape(X.shape[:-2] + (-1, 4, 3))
    lead = np.broadcast_shapes(B.shape[:-2], T.shape[:-1], A.shape[:-1])
    B = np.broadcast_to(B, lead + (4, 3))
    w, alpha = T[..., None, :3], A[..., None, :3]
    Bv = _cross(w, B)
    Bv[..., 0, :] += T[..., 3:]
    out = _cross(alpha, B) + _cross(w, Bv)
    out[..., 0, :] += A[..., 3:]
    return out.reshape(lead[:-1] + (-1, 3))


def _spanning_tree(model):
    """``(tree edges, cut joints)``: joints in model order; one of a kind in
    :data:`TREE_DOF` joining two unconnected parts is a tree edge (union–find,
    ground a node), every other joint is cut."""
    n = model.n_bodies
    root = list(range(n + 1))          # node n is ground

    def find(i):
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    tree, cut = [], []
    for j, spec in enumerate(model.joints):
        a, b = (int(x) if x >= 0 else n for x in spec.bodies)
        if (spec.kind in TREE_DOF or spec.dofs) and find(a) != find(b):
            root[find(a)] = find(b)
            tree.append(j)
        else:
            cut.append(j)
    return tree, cut


def _ordered_tree(model, edges, origins, frames):
    """The :class:`TreeJoint` list, depth first from ground and then from each free
    root (body order), children in model order; ``q``/``q̇`` slices assigned."""
    adjacent = {}
    for j in edges:
        a, b = (int(x) for x in model.joints[j].bodies)
        adjacent.setdefault(a, []).append(j)
        adjacent.setdefault(b, []).append(j)
    placed, ordered, reached_by = {-1}, [], {}   # ordered: (model joint or None, child)

    def visit(start):
        """Depth first (pre-order) from ``start``, children in model order."""
        stack = [start]
        while stack:
            node = stack.pop()
            if node != start:
                ordered.append((reached_by[node], node))
            children = []
            for j in adjacent.get(node, ()):
                a, b = (int(x) for x in model.joints[j].bodies)
                other = b if a == node else a
                if other not in placed:
                    placed.add(other)
                    reached_by[other] = j
                    children.append(other)
            stack.extend(reversed(children))

    visit(-1)
    # A part with no path to ground hangs on a free joint at its root: the first of its
    # bodies (body order) that no tree joint has as its second body b — a URDF or MJCF
    # root link — else its first body.
    children = {int(model.joints[j].bodies[1]) for j in edges}
    for body in range(model.n_bodies):
        if body in placed:
            continue
        part, stack = {body}, [body]
        while stack:
            for j in adjacent.get(stack.pop(), ()):
                for other in (int(x) for x in model.joints[j].bodies):
                    if other not in part:
                        part.add(other)
                        stack.append(other)
        roots = sorted(part - children)
        root = roots[0] if roots else body
        placed.add(root)
        ordered.append((None, root))
        visit(root)
    reference = np.asarray(model.p_reference, float).reshape(-1, 3)
    joint_names = {j.name for j in model.joints} | {d.name for j in model.joints for d in j.dofs}
    tree, iq, iv = [], 0, 0
    for j, child in ordered:
        if j is None:
            name, kind, a, b, index = model.bodies[child].name, "free", -1, child, -1
            if name in joint_names:        # joints have a name space of their own
                name += ".free"
            point, axes, drive = origins[child], np.zeros((0, 3)), None
        else:
            spec = model.joints[j]
            name, kind, index, drive = spec.name, spec.kind, j, spec.drive
            a, b = (int(x) for x in spec.bodies)
            if spec.dofs:
                kind = "compound"
                point, axes = np.zeros(3), _compound_geometry(model, j, reference)
            else:
                point, axes = _geometry(model, j, reference)
        nq = len(spec.dofs) if kind == "compound" else len(_COLUMNS[kind][0])
        nv = len(spec.dofs) if kind == "compound" else len(_COLUMNS[kind][1])
        frame = np.eye(3) if b < 0 else frames[b]
        for arr in (point, axes, frame):
            arr.setflags(write=False)
        compound = (spec.dofs, spec.kind) if kind == "compound" else ((), "")
        tree.append(TreeJoint(name, kind, index, a, b, child, point, axes, frame,
                              slice(iq, iq + nq), slice(iv, iv + nv), drive, *compound))
        iq, iv = iq + nq, iv + nv
    return tuple(tree)


def _twist_jacobian(spec, X, rows):
    """``(K, fields, s)``: the rates (len(rows), 6) of a joint's ``rows`` under the six
    unit relative twists ``ξ = (ω, v_O)`` of its body b with respect to a at the
    configuration X (4 n, 3) (when b is ground, a moves by −ξ); ``fields`` the six
    slot velocity fields, ``s`` the moving body's first slot."""
    a, b = (int(x) for x in spec.bodies)
    moving, sign = (b, 1.0) if b >= 0 else (a, -1.0)
    s = 4 * moving
    fields = []
    for k in range(6):
        twist = sign * np.eye(6)[k]
        V = np.zeros_like(X)
        V[s] = twist[3:] + _cross(twist[:3], X[s])
        V[s + 1:s + 4] = _cross(twist[:3], X[s + 1:s + 4])
        fields.append(V)
    K = np.array([[sum(part.rate(X, V) for _, part in row.parts) for V in fields]
                  for row in rows]).reshape(len(rows), 6)
    return K, fields, s


def _geometry(model, j, X):
    """``(point, axes)`` of tree joint j from its rows at the reference configuration X.

    The relative twists ``ξ = (ω, v_O)`` of b with respect to a that keep the
    joint's rows (drive rows aside) are the null space of ``K = G_J E``, ``E``
    the 6 body velocity fields of unit twists (when b is ground, a moves by −ξ).
    The joint coordinates' rates ``C ξ`` (``rate_row``) scale and sign that
    basis, ``N = null (C null)⁻¹``: a revolute joint's column is its axis
    ``(u, −u × x)``, a prismatic joint's ``(0, u)``. The joint point is where
    the rotational columns move nothing, ``ω × x = −v_O`` (least squares).
    """
    spec = model.joints[j]
    rows = [row for r, row in enumerate(spec.rows) if r != spec.drive_row]
    K, fields, s = _twist_jacobian(spec, X, rows)
    dof = TREE_DOF[spec.kind]
    _, sv, Vt = np.linalg.svd(np.vstack([K, np.zeros((6, 6))]))
    rank = int(np.sum(sv > 1e-9 * max(sv[0], 1.0)))
    if rank != 6 - dof:
        raise ValueError(f"{spec.kind} joint {spec.name!r}: its rows allow {6 - rank} "
                         f"relative motions at the reference configuration, a {spec.kind} "
                         f"joint {dof}; the joint space cannot use it as a tree joint")
    origin = X[s]
    if dof == 0:
        return origin.copy(), np.zeros((0, 3))
    null = Vt[rank:].T
    if spec.coordinates:
        C = np.array([[rate_row(model, spec.name, X, name) @ V.ravel() for V in fields]
                      for name, _ in spec.coordinates])
        N = null @ np.linalg.inv(C @ null)
    else:
        N = null
    if spec.kind == "prismatic":
        return origin.copy(), _unit(N[3:, 0], spec)[None]
    turning = [N[:, k] for k in range(dof)]
    if spec.kind == "cylindrical":      # coordinates (slide, angle)
        turning = turning[1:]
    if spec.kind in ("revolute", "cylindrical"):
        # the axis point nearest to the moving body's origin r: x = r + u × v(r)
        u = _unit(turning[0][:3], spec)
        x = origin + _cross(u, turning[0][3:] + _cross(turning[0][:3], origin))
        return x, u[None]
    # the point the rotations leave in place: ω × x = −v_O for every column
    lhs = np.vstack([_skew(col[:3]) for col in turning])
    rhs = -np.concatenate([col[3:] for col in turning])
    point = np.linalg.lstsq(lhs, rhs, rcond=None)[0]
    if spec.kind == "universal":
        return point, np.array([_unit(col[:3], spec) for col in turning])
    return point, np.zeros((0, 3))        # spherical


def _compound_geometry(model, j, X):
    """The axes (n, 3) of compound joint j, after checking that its rows allow exactly
    the relative twists of its DOF at the reference configuration X: the rows'
    velocity Jacobian K (as :func:`_geometry`) has rank 6 − n and ``K ξ_k = 0``
    for each DOF's reference twist ξ_k (a guard: the constraint set of
    ``natcoord.model.joints.compound_joint`` is the sequence's motion set)."""
    spec = model.joints[j]
    K, _, _ = _twist_jacobian(spec, X, spec.rows)
    xi = np.array([np.concatenate([d.axis, _cross(d.point, d.axis)]) if d.kind == "hinge"
                   else np.concatenate([np.zeros(3), d.axis]) for d in spec.dofs]).T
    sv = np.linalg.svd(np.vstack([K, np.zeros((6, 6))]), compute_uv=False)
    rank = int(np.sum(sv > 1e-9 * max(sv[0], 1.0)))
    scale = max(1.0, np.abs(K).max())
    if rank != 6 - len(spec.dofs) or np.abs(K @ xi).max() > 1e-9 * scale * max(
            1.0, np.abs(xi).max()):
        raise ValueError(f"{spec.kind} joint {spec.name!r}: its rows do not allow exactly the "
                         f"motions of its DOF {[d.name for d in spec.dofs]} at the reference "
                         f"configuration; the joint space cannot use it")
    return np.array([d.axis for d in spec.dofs])


def _unit(w, spec):
    norm = np.linalg.norm(w)
    if abs(norm - 1.0) > 1e-6:
        raise ValueError(f"{spec.kind} joint {spec.name!r}: its coordinate rates and rows "
                         f"disagree at the reference configuration (axis length {norm:.6g})")
    return w / norm


class JointTorques:
    """Joint torques ``u(t, q, q̇)`` as an applied force (``simulate(..., u=...)``).

    ``u(t, q, qd)`` gets the joint positions ``q`` (nq,) and rates ``q̇`` (nv,) of
    the whole joint space (:class:`JointSpace`'s order) and returns the forces of
    the ``actuated`` joints (default: every joint with DOF) in the units of their
    q̇ columns, in ``actuated``'s order: N·m about a revolute joint's axis, N along a
    prismatic joint's, ``(N, N·m)`` for a cylindrical one, a spherical joint's
    torque and a free joint's force and torque in body b's axes (Pinocchio's
    ``τ``, as :func:`inverse_dynamics` returns it).

    A joint's τ acts on its body b and, opposite, on its body a (ground takes
    nothing): the wrench ``W = (T, F)`` about the world origin with
    ``F = Σ τ_k u_k`` over its sliding DOF and ``T = Σ τ_k ω_k + x × F`` over its
    turning DOF (``x`` the joint point the rotations turn about), whose power on
    the relative twist ``Ξ q̇`` is ``τ·q̇`` (``Ξᵀ W = τ``: the columns are unit and
    orthogonal; a compound joint's may be skew, and its W is corrected within span Ξ
    until ``Ξᵀ W = τ``). On body i it is the generalized force ``Y_o = F``,
    ``Y_ek = ½ T' × e_k``, ``T' = T − o × F`` (docs/method.md#12-mass-matrix).
    Evaluated in Python and called back from the core at every stage.
    """

    #: True for the torques of the model's declared inputs (:meth:`of_inputs`),
    #: which a model (and so a loaded solution's) can rebuild; False for a ``u``
    declared = False

    def __init__(self, model, u, actuated=None):
        if not callable(u):
            raise TypeError(f"u must be a callable u(t, q, qd) returning the joint torques, "
                            f"got {shown(u)}")
        self.js = js = joint_space(model)
        names = (js.joint_names if actuated is None else
                 [actuated] if isinstance(actuated, str) else list(actuated))
        if not names:
            raise ValueError(f"u: {model.name!r} has no joint with DOF to actuate")
        if len(set(names)) != len(names):
            raise ValueError(f"actuated names a joint twice: {names}")
        self.joints = [js.joint(name) for name in names]
        self.u, self.names = u, tuple(names)
        self.size = sum(j.nv for j in self.joints)
        self.where = (f"u(t, q, qd) (the forces of joints {list(self.names)}, "
                      f"{self.size} numbers)")

    @classmethod
    def of_inputs(cls, model):
        """The joint torques of ``model.inputs`` (``Mechanism.add_input``), or None
        without inputs: each input's law evaluated at its joint's ``q``, ``q̇``."""
        if not model.inputs:
            return None
        js = joint_space(model)
        columns = []
        for i in model.inputs:
            try:
                j = js.joint(i.joint)
            except ValueError as err:
                raise ValueError(f"input on joint {i.joint!r}: {err}; only tree joints can "
                                 f"take an input") from None
            columns.append((i, j.q.start, j.v.start, j.q.start in js.angle_columns))

        def u(t, q, qd):
            return [i.torque(t, q[iq], qd[iv], angle) for i, iq, iv, angle in columns]
        torques = cls(model, u, [i.joint for i in model.inputs])
        torques.declared = True
        return torques

    @classmethod
    def of_actuators(cls, model, ctrl):
        """The joint torques of the MuJoCo actuators of an MJCF model
        (``model.import_report["actuators"]``, :func:`natcoord.io.mjcf.load_mjcf`) at
        the controls ``ctrl``: one number per actuator in the report's order, a dict
        ``{actuator: control}`` (others 0, as MuJoCo's ``ctrl`` starts), or a callable
        ``ctrl(t, q, qd)`` of the joint space returning either.

        MuJoCo's law for a joint transmission (``mj_fwdActuation``): the control
        clamped to ``ctrlrange``, ``f = gain·ctrl + b₀ + b₁ L + b₂ L̇`` with the length
        ``L = gear · qpos`` (MuJoCo's ``qpos = qpos0 + sign · q``) and ``L̇ = gear ·
        qvel``, f clamped to ``forcerange``, the joint force ``gear · f`` — in
        natcoord's sign, ``sign · gear · f``. Actuators on one DOF add up."""
        report = getattr(model, "import_report", None) or {}
        actuators = report.get("actuators") or {}
        if not actuators:
            raise ValueError(f"model {model.name!r} has no MuJoCo actuator natcoord applies "
                             f"(import_report['actuators'] is empty): actuator_torques needs "
                             f"an MJCF model with joint-transmission actuators of fixed gain "
                             f"and affine bias (motor, position, velocity)")
        js = joint_space(model)
        names = tuple(actuators)
        dof = [report["dofs"][a["joint"]] for a in actuators.values()]
        iq = np.array([js.q_names.index(d["column"]) for d in dof], np.int64)
        iv = np.array([js.v_names.index(d["column"]) for d in dof], np.int64)
        sign = np.array([d["sign"] for d in dof], float)
        qpos0 = np.array([report["qpos0"][d["qpos"]] for d in dof], float)
        gear, gain = (np.array([a[k] for a in actuators.values()], float)
                      for k in ("gear", "gain"))
        bias = np.array([a["bias"] for a in actuators.values()], float).reshape(-1, 3)

        def bounds(key):
            r = [a[key] or (-np.inf, np.inf) for a in actuators.values()]
            return np.array(r, float).reshape(-1, 2).T
        ctrl_lo, ctrl_hi = bounds("ctrlrange")
        force_lo, force_hi = bounds("forcerange")
        owners = {js.v_names[i] for i in iv}
        joints = [j for j in js.joints if any(js.v_names[k] in owners
                                              for k in range(j.v.start, j.v.stop))]
        # where each actuated DOF's column lands in u's output (the joints' DOF in order)
        out_of = {c: k for k, c in enumerate(c for j in joints for c in range(j.v.start,
                                                                              j.v.stop))}
        slot = np.array([out_of[i] for i in iv], np.int64)
        size = len(out_of)

        def controls(t, q, qd):
            raw = ctrl(t, q, qd) if callable(ctrl) else ctrl
            if isinstance(raw, dict):
                unknown = sorted(set(raw) - set(names))
                if unknown:
                    raise ValueError(f"ctrl names unknown actuators {unknown}; the actuators "
                                     f"natcoord applies: {list(names)}")
                raw = [raw.get(a, 0.0) for a in names]
            c = float_array(raw)
            if c is not None and c.ndim == 0 and len(names) == 1:
                c = c.reshape(1)                 # one actuator: a bare number is its control
            if c is None or c.shape != (len(names),) or not np.all(np.isfinite(c)):
                raise ValueError(f"ctrl{'(t, q, qd)' if callable(ctrl) else ''} gave "
                                 f"{shown(raw)} at t = {t:g}: it must be {len(names)} finite "
                                 f"number{'s' * (len(names) > 1)}, one per actuator "
                                 f"{list(names)} (or a dict by name)")
            return c

        def u(t, q, qd):
            c = np.clip(controls(t, q, qd), ctrl_lo, ctrl_hi)
            length = gear * (qpos0 + sign * q[iq])
            rate = gear * sign * qd[iv]
            force = np.clip(gain * c + bias[:, 0] + bias[:, 1] * length + bias[:, 2] * rate,
                            force_lo, force_hi)
            tau = np.zeros(size)
            np.add.at(tau, slot, sign * gear * force)
            return tau

        if not callable(ctrl):
            controls(0.0, None, None)        # a constant ctrl refused before the run
        return cls(model, u, [j.name for j in joints])

    def torques(self, t, q, qd):
        """``u(t, q, qd)`` checked: ``(size,)`` finite floats, else an error naming u."""
        raw = self.u(t, q, qd)
        tau = float_array(raw)
        if tau is None or tau.shape != (self.size,) and not (self.size == 1 and tau.ndim == 0):
            raise ValueError(f"{self.where} returned {shown(raw)} at t = {t:g}; it must "
                             f"return {self.size} numbers, one per DOF of "
                             f"{[f'{j.name} ({j.kind}, {j.nv})' for j in self.joints]}")
        if not np.all(np.isfinite(tau)):
            raise NonFiniteValue(f"{self.where} returned {shown(raw)} at t = {t:g}; it "
                                 f"must be finite")
        return tau.reshape(self.size)

    def apply(self, t, state, X, V, F):
        js = self.js
        p, v = state.p, state.v
        tau = self.torques(t, js.positions(p), js.velocities(p, v))
        D, d = js._poses(X)
        B = X.reshape(-1, 4, 3)
        Y = F.reshape(-1, 4, 3)
        k = 0
        twists = js.twists(X)
        for j in self.joints:
            Xi = twists[j.v].T
            tj, k = tau[k:k + j.nv], k + j.nv
            turning = np.linalg.norm(Xi[:3], axis=0) > 0.5
            force = Xi[3:, ~turning] @ tj[~turning]
            on = j.b if j.kind == "free" else j.a      # the body the rotations' point is on
            x = D[on] @ j.point + d[on]
            torque = Xi[:3, turning] @ tj[turning] + _cross(x, force)
            if j.kind == "compound":
                # Couples τ_k ω_k and forces τ_k u_k have power τ_k on DOF k only when the
                # DOF's twists are orthonormal, as for every other kind; a compound joint's
                # axes may be skew: add the least-norm wrench in span Ξ that makes
                # Ξᵀ W = τ exact (a wrench in null Ξᵀ is the joint's reaction's business)
                W = np.concatenate([torque, force])
                W += Xi @ np.linalg.solve(Xi.T @ Xi, tj - Xi.T @ W)
                torque, force = W[:3], W[3:]
            for body, sign in ((j.b, 1.0), (j.a, -1.0)):
                if body >= 0:
                    rest = sign * (torque - _cross(B[body, 0], force))
                    Y[body, 0] += sign * force
                    Y[body, 1:] += 0.5 * _cross(rest, B[body, 1:])


def joint_space(model) -> JointSpace:
    """The :class:`JointSpace` of a model (its tree, cut joints, q and q̇ layout),
    computed once per model."""
    model = validate.model(model)
    return derived(model, "joint space", lambda: JointSpace(model))


def _floats(value, what):
    """``value`` as a float array, or ``TypeError`` naming ``what``."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):     # ragged
        raw = None
    if raw is None or raw.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be real numbers, got {shown(value)}")
    return raw.astype(float)


def _number(value, what):
    out = _floats(value, what)
    if out.shape not in ((), (1,)):
        raise ValueError(f"{what}: one number, got shape {out.shape}")
    return float(out.reshape(-1)[0])


# ---------------------------------------------------------------- joint space in
@dataclass(frozen=True)
class JointState(State):
    """A consistent :class:`~natcoord.model.frozen.State` made from joint space.

    ``t, p, v`` as any state; ``q`` (nq,) and ``qd`` (nv,) the joint positions
    and velocities it realizes, ``q_change``/``qd_change`` how far loop
    closure moved them from the values given (zero for a tree).
    Column names: ``nc.joint_space(model).q_names`` / ``.v_names``.
    """

    q: np.ndarray
    qd: np.ndarray
    q_change: np.ndarray
    qd_change: np.ndarray


def joint_state(model, q=None, qd=None, t=0.0, keep=(), tol=ASSEMBLY_TOL,
                max_iter=50) -> JointState:
    """The consistent natural-coordinate state of joint positions ``q`` and rates ``qd``.

    ``q``: an array (nq,) in joint-space order (``nc.joint_space(model).q_names``:
    depth first from ground, a body's joints in the order they were added) or
    a dict ``{joint name: value}`` (a number for one DOF, an array for more;
    a column name such as ``"u.angle_b"`` sets one entry); joints left out
    are at their reference value (zero, identity quaternion). ``qd``: the
    same for rates (nv,), zero when left out. Conventions in the module
    docstring and docs/model-format.md (Pinocchio's for URDF models).

    Bodies are placed by forward kinematics along the spanning tree from
    ground, exactly. Driven tree joints take their drive's ``s(t), ṡ(t)``
    (a given value must agree). Loop-closing joints are then closed by
    Newton's method in joint space (module docstring) changing the joints
    not named in ``keep`` as little as possible in the mass norm, and the
    rates are projected likewise; the change is the result's ``q_change``
    and ``qd_change`` and a ``UserWarning`` names the joints moved most when
    it exceeds ``CHANGE_TOL`` relative. Loops that cannot be closed raise
    :class:`~natcoord.AssemblyError` naming the rows.

    Returns a :class:`JointState` (a :class:`~natcoord.State`, usable as
    ``simulate(..., initial_state=...)``).
    """
    model = validate.model(model)
    t = validate.finite("t", t)
    tol = validate.positive("tol", tol)
    js = joint_space(model)
    q, qd, _, kept = _driven(js, t, js.vector(q, "q", "q"), js.vector(qd, "qd"), None, keep)
    given_q, given_qd = q.copy(), qd.copy()
    ws = Workspace(model)
    if js.cut_rows.size:
        q = _close_positions(js, model, ws, t, q, kept, tol, max_iter)
        qd = _close_rates(js, model, ws, t, q, qd, kept)
    _report(js, "joint_state", given_q, q, given_qd, qd)
    p, v = js.forward(q, qd)
    _check_constraints(model, ws, t, p, v)
    return JointState(t, p, v, q, qd, q - given_q, qd - given_qd)


def _driven(js, t, q, qd, qdd, keep):
    """``(q, qd, qdd, kept)``: the drives' ``s, ṡ, s̈`` on driven tree joints, and the
    mask (nv,) of the joints loop closure holds (``keep`` and the driven ones).

    ``q``, ``qd``, ``qdd``: ``(values, given mask)`` from :meth:`JointSpace.vector`
    (``qdd`` may be None); a given value that is not the drive's raises.
    """
    kept = np.zeros(js.nv, bool)
    for name in (keep,) if isinstance(keep, str) else keep:
        kept[js.v_slice(name)] = True
    out = [None if x is None else x[0].copy() for x in (q, qd, qdd)]
    for j in js.joints:
        if j.drive is None:
            continue
        law = [float(x) for x in j.drive(t)]
        # a driven revolute or prismatic joint: one coordinate (q index = v index)
        for what, pair, values, value in zip(("q", "qd", "qdd"), (q, qd, qdd), out, law):
            if pair is None:
                continue
            index = j.q.start if what == "q" else j.v.start
            if pair[1][index] and abs(values[index] - value) > CHANGE_TOL * max(1.0, abs(value)):
                raise ValueError(f"{what}: joint {j.name!r} is driven: its {what} at t = "
                                 f"{t:g} is the drive's {value!r}, not {float(values[index])!r} "
                                 f"(leave it out of a dict, or give the drive's value)")
            values[index] = value
        kept[j.v] = True
    return (*out, kept)


def _report(js, where, q0, q1, qd0, qd1, qdd0=None, qdd1=None):
    """Warn when loop closure or drives moved the given joint-space values."""
    lines = []
    for what, before, after, names in (("q", q0, q1, js.q_names), ("qd", qd0, qd1, js.v_names),
                                       ("qdd", qdd0, qdd1, js.v_names)):
        if before is None:
            continue
        change = np.abs(after - before)
        limit = CHANGE_TOL * max(1.0, np.abs(before).max(initial=0.0))
        if change.max(initial=0.0) > limit:
            worst = np.argsort(-change)[:3]
            lines.append(f"{what} by up to {change.max():.3g} (" + ", ".join(
                f"{names[i]}: {before[i]:.6g} -> {after[i]:.6g}" for i in worst
                if change[i] > limit) + ")")
    if lines:
        warnings.warn(f"{where}: closing the loops (cut joints {list(js.cut_joints)}) "
                      "changed " + "; ".join(lines) + ". Give consistent values, or name "
                      "the joints to hold with keep=[...]", UserWarning, stacklevel=3)


def _cut_system(js, model, ws, t, q, v=None):
    """``(p, g_c, J = G_c S, S)`` at ``q`` (and rates ``v``, for ``ws.g_t``): the cut
    rows' residuals and their joint-space Jacobian; ``ws`` holds the evaluation."""
    p, vv = js.forward(q, None if v is None else v)
    ws.constraints(t, p, vv)
    S = js.jacobian(q)
    J = (model.tables.csr(ws.G)[js.cut_rows] @ S)
    return p, ws.g[js.cut_rows].copy(), np.asarray(J), S


def _metric_solve(model, S, J, r, free):
    """Smallest step ``δ`` (nv,) in the mass norm ``‖δ‖_{SᵀMS}`` over the ``free`` DOF
    with ``J δ = r`` (least squares when r is out of reach, minimum norm when J has
    dependent rows: the redundant rows of a planar loop)."""
    delta = np.zeros(S.shape[1])
    if not free.any():
        return delta
    Sf = S[:, free]
    W = Sf.T @ (model.mass_matrix @ Sf)
    L = np.linalg.cholesky(W)
    K = solve_triangular(L, J[:, free].T, lower=True).T       # J_f L⁻ᵀ
    y = np.linalg.lstsq(K, r, rcond=1e-10)[0]
    delta[free] = solve_triangular(L.T, y, lower=False)
    return delta


def _close_positions(js, model, ws, t, q, kept, tol, max_iter):
    """Newton in joint space on the cut rows ``g_c(q) = 0`` (step halving)."""
    free = ~kept
    for _ in range(max_iter):
        p, g, J, S = _cut_system(js, model, ws, t, q)
        residual = np.abs(g).max(initial=0.0)
        target = threshold(ws, p, tol)
        if residual <= target:
            return q
        delta = _metric_solve(model, S, J, -g, free)
        step = 1.0
        while True:
            trial = js.retract(q, step * delta)
            p, _ = js.forward(trial)
            ws.constraints(t, p, np.zeros_like(p))
            if np.abs(ws.g[js.cut_rows]).max() < residual or step < 1e-3:
                break
            step *= 0.5
        q = trial
    p, g, _, _ = _cut_system(js, model, ws, t, q)
    worst = js.cut_rows[np.argsort(-np.abs(g))[:5]]
    held = [js.joints[i].name for i in range(len(js.joints)) if kept[js.joints[i].v].any()]
    raise AssemblyError(
        f"the loops of {model.name!r} did not close from the given q in {max_iter} Newton "
        f"iterations: largest residuals of the cut joints\n"
        f"{describe_rows(model, ws.g, worst)}\n"
        f"Check that the joint positions can close the loops"
        + (f" with {held} held" if held else "") + ".")


def _close_rates(js, model, ws, t, q, qd, kept):
    """``q̇`` projected onto ``G_c S q̇ + g_t = 0`` in the mass norm (held joints kept)."""
    p, _, J, S = _cut_system(js, model, ws, t, q, qd)
    residual = J @ qd + ws.g_t[js.cut_rows]
    return qd + _linear_closure(js, model, S, J, residual, kept, "qd", "G v + g_t")


def _close_accelerations(js, model, ws, t, q, qd, qdd, kept):
    """``q̈`` projected onto the cut rows' acceleration constraint ``G_c a = γ_c``."""
    p, v, a = js.forward(q, qd, qdd)
    ws.constraints(t, p, v)
    S = js.jacobian(q)
    Gc = model.tables.csr(ws.G)[js.cut_rows]
    J = np.asarray(Gc @ S)
    residual = Gc @ a - ws.gamma[js.cut_rows]
    return qdd + _linear_closure(js, model, S, J, residual, kept, "qdd", "G a − γ")


def _linear_closure(js, model, S, J, residual, kept, what, rows):
    """The change of ``what`` that zeroes the cut rows' ``residual`` (velocity or
    acceleration level), or ``AssemblyError`` when the joints not kept cannot."""
    delta = _metric_solve(model, S, J, -residual, ~kept)
    left = np.abs(J @ delta + residual).max(initial=0.0)
    if left > 1e-9 * max(1.0, np.abs(residual).max(initial=0.0), np.abs(J).max(initial=0.0)):
        held = [j.name for j in js.joints if kept[j.v].any()]
        raise AssemblyError(f"{what} cannot close the loops (cut joints {list(js.cut_joints)}) "
                            f"with {held} held: {rows} of the cut rows stays {left:.3g}; hold "
                            f"fewer joints or give consistent values")
    return delta


def _check_constraints(model, ws, t, p, v):
    """Every constraint holds at the state made (a guard against a wrong geometry)."""
    ws.constraints(t, p, v)
    limit = threshold(ws, p, 1e-9)
    rows = np.flatnonzero(np.abs(ws.g) > limit)
    if rows.size:
        raise AssertionError(f"joint space of {model.name!r}: the state made violates\n"
                             f"{describe_rows(model, ws.g, rows[:5])}")


def actuator_torques(model, ctrl) -> JointTorques:
    """The joint torques of an MJCF model's MuJoCo actuators at the controls ``ctrl``,
    for ``simulate(model, t_end, u=actuator_torques(model, ctrl))``
    (:meth:`JointTorques.of_actuators`: which actuators, ``ctrl``'s forms, MuJoCo's law)."""
    return JointTorques.of_actuators(validate.model(model), ctrl)


# ---------------------------------------------------------------- torques out
def inverse_dynamics(model, q=None, qd=None, qdd=None, t=0.0, actuated=None, keep=(),
                     reactions=False):
    """Joint forces ``τ`` (nv,) that produce joint accelerations ``qdd`` at ``(q, qd)``.

    ``q``, ``qd``, ``qdd`` as in :func:`joint_state` (arrays in joint-space order
    or dicts by joint name; rates and accelerations zero when left out). τ is in
    the units of q̇'s columns: N·m for angles, N for slides; a spherical
    joint's torque and a free joint's force and torque in body b's axes (as
    Pinocchio's ``rnea``). It balances gravity and every force of the model
    (springs, applied forces and torques) at time ``t``; τ of a driven joint
    is its drive's force (``sol.drive_force``).

    Method (module docstring): natural-coordinate accelerations ``a`` from
    forward kinematics of ``(q, q̇, q̈)``, then ``τ = Sᵀ (M a − f)`` summed down
    the tree in O(n) (RNEA's backward pass in natural coordinates).

    Loops: the motion must close the loops (``q``, ``qd`` and ``qdd`` are
    projected onto them, keeping ``keep``, with a warning, as in
    :func:`joint_state`), and the torques are determined only once it is said
    which joints are driven: ``actuated`` names them (driven joints count
    always); the others get ``τ = 0``, which fixes the cut joints' multipliers
    ``λ_c`` in ``τ = Sᵀ (M a − f) + (G_c S)ᵀ λ_c``. ``actuated`` on a tree
    checks that the passive joints need no torque. A motion the actuated
    joints cannot produce raises ``ValueError``. ``reactions=True`` returns
    ``(τ, {cut joint: natcoord.Reaction})``: the force and torque each
    loop-closing joint exerts on its body b (as :func:`natcoord.joint_reaction`).
    """
    model = validate.model(model)
    t = validate.finite("t", t)
    js = joint_space(model)
    q, qd, qdd, kept = _driven(js, t, js.vector(q, "q", "q"), js.vector(qd, "qd"),
                               js.vector(qdd, "qdd"), keep)
    given_q, given_qd, given_qdd = q.copy(), qd.copy(), qdd.copy()
    active = np.zeros(js.nv, bool)
    if actuated is None and js.cut_rows.size:
        raise ValueError(
            f"inverse_dynamics: {model.name!r} has loops (cut joints {list(js.cut_joints)}): "
            f"the joint torques are determined only with the driven joints named: pass "
            f"actuated=[...] (joints {list(js.joint_names)}), as many DOF as the "
            f"mechanism has")
    if actuated is None:
        active[:] = True
    else:
        for name in [actuated] if isinstance(actuated, str) else actuated:
            active[js.v_slice(name)] = True
        for j in js.joints:
            if j.drive is not None:
                active[j.v] = True
    ws = Workspace(model)
    if js.cut_rows.size:
        q = _close_positions(js, model, ws, t, q, kept, ASSEMBLY_TOL, 50)
        qd = _close_rates(js, model, ws, t, q, qd, kept)
        qdd = _close_accelerations(js, model, ws, t, q, qd, qdd, kept)
    _report(js, "inverse_dynamics", given_q, q, given_qd, qd, given_qdd, qdd)
    p, v, a = js.forward(q, qd, qdd)
    X = p.reshape(-1, 3)
    Y = np.einsum("iab,ibk->iak", model.J4, a.reshape(-1, 4, 3)).reshape(-1, 3) \
        - ws.forces(t, p, v).reshape(-1, 3)
    tau = js.subtree_forces(X, Y)             # Sᵀ (M a − f)
    scale = max(1.0, np.abs(tau).max(initial=0.0))
    lam_cut = np.zeros(js.cut_rows.size)
    if js.cut_rows.size:
        ws.constraints(t, p, v)
        J = np.asarray(model.tables.csr(ws.G)[js.cut_rows] @ js.jacobian(q))
        # passive joints: 0 = τ_tree + J_pᵀ λ  →  λ; actuated: τ = τ_tree + J_aᵀ λ
        lam_cut = np.linalg.lstsq(J[:, ~active].T, -tau[~active], rcond=1e-10)[0]
        tau = tau + J.T @ lam_cut
    passive = ~active
    if passive.any() and np.abs(tau[passive]).max() > 1e-8 * scale:
        worst = np.flatnonzero(passive)[np.argsort(-np.abs(tau[passive]))[:3]]
        raise ValueError(
            "inverse_dynamics: the actuated joints cannot produce this motion: the passive "
            "joints would need " + ", ".join(f"{js.v_names[i]}: {tau[i]:.6g}" for i in worst)
            + "; actuate more joints (as many DOF as the mechanism has) or give a motion "
            "they can produce")
    tau[passive] = 0.0
    if not reactions:
        return tau
    state = State(t, p, v)
    lam = np.zeros(model.n_rows)
    lam[js.cut_rows] = lam_cut
    return tau, {name: joint_reaction(model, state, name, multipliers=lam)
                 for name in js.cut_joints}
