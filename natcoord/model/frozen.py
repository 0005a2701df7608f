"""The frozen model: topology, constants and flattened constraint tables; the state."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ..core.engine import pack as pack_for_core
from . import core_tables
from .body import GROUND, mass_terms
from .drives import Weight, fill_weights, pack
from .joints import rigid_body_rows
from .kernels import constraint_kernel
from .parameters import parameter_changes
from ..util.checks import float_array, shown

RIGID, JOINT = 0, 1


@dataclass(frozen=True)
class State:
    """Time, coordinates ``p`` (12 n,) and velocities ``v`` (12 n,)."""

    t: float
    p: np.ndarray
    v: np.ndarray


def _frozen(a, dtype=None):
    a = np.ascontiguousarray(a, dtype=dtype)
    a.setflags(write=False)
    return a


class ConstraintTables:
    """Rows ``Σ_m w_m(t) q_m`` flattened into term arrays for the kernel.

    Quadratic terms ``(row, a, b, c, w)``, linear terms ``(row, a, d, w)``,
    constant terms ``(row, c, w)``; ``w`` indexes the weight table (0 is the
    constant 1). ``pattern_row/pattern_slot`` list the nonzero 1×3 blocks of
    ``G`` sorted by row then slot; ``quad_ga/quad_gb/lin_g`` point into it.
    """

    def __init__(self, rows, n_slots):
        self.weights = []          # time-dependent weight functions, index 1..
        quad, lin, const = [], [], []
        for r, row in enumerate(rows):
            for weight, q in row.parts:
                w = 0
                if weight is not None:
                    self.weights.append(weight)
                    w = len(self.weights)
                quad += [(r, a, b, c, w) for (a, b), c in q.quad.items()]
                lin += [(r, a, d, w) for a, d in q.lin.items()]
                if q.const != 0.0:
                    const.append((r, q.const, w))
        keys = sorted({(r, a) for r, a, _, _, _ in quad} | {(r, b) for r, _, b, _, _ in quad}
                      | {(r, a) for r, a, _, _ in lin})
        index = {k: i for i, k in enumerate(keys)}
        self.pattern_row = _frozen([k[0] for k in keys], np.int64)
        self.pattern_slot = _frozen([k[1] for k in keys], np.int64)
        self.quad_row = _frozen([t[0] for t in quad], np.int64)
        self.quad_a = _frozen([t[1] for t in quad], np.int64)
        self.quad_b = _frozen([t[2] for t in quad], np.int64)
        self.quad_c = _frozen([t[3] for t in quad], float)
        self.quad_w = _frozen([t[4] for t in quad], np.int64)
        self.quad_ga = _frozen([index[(t[0], t[1])] for t in quad], np.int64)
        self.quad_gb = _frozen([index[(t[0], t[2])] for t in quad], np.int64)
        self.lin_row = _frozen([t[0] for t in lin], np.int64)
        self.lin_a = _frozen([t[1] for t in lin], np.int64)
        self.lin_d = _frozen(np.reshape([t[2] for t in lin], (-1, 3)), float)
        self.lin_w = _frozen([t[3] for t in lin], np.int64)
        self.lin_g = _frozen([index[(t[0], t[1])] for t in lin], np.int64)
        self.const_row = _frozen([t[0] for t in const], np.int64)
        self.const_c = _frozen([t[1] for t in const], float)
        self.const_w = _frozen([t[2] for t in const], np.int64)
        # CSR structure of G (m × 3 n_slots): each block expands to 3 columns.
        counts = np.bincount(self.pattern_row, minlength=len(rows)) * 3
        self.csr_indptr = _frozen(np.concatenate([[0], np.cumsum(counts)]), np.int64)
        self.csr_indices = _frozen((3 * self.pattern_slot[:, None] + np.arange(3)).ravel(),
                                   np.int64)
        self.shape = (len(rows), 3 * n_slots)
        #: the drives' laws (natcoord.model.drives.Laws), or None if a drive is a Python callable
        self.laws = pack(self.weights)

    @property
    def terms(self):
        """The 15 term arrays (:meth:`kernel_args`) unpacked once for the compiled core
        (``core.pack``): the constraint kernel's first argument."""
        packed = self.__dict__.get("_terms")
        if packed is None:
            packed = self.__dict__["_terms"] = pack_for_core(self.kernel_args(), "C")
        return packed

    def __getstate__(self):
        """Pickled without the core's packed view (it is rebuilt on first use)."""
        return {k: v for k, v in self.__dict__.items() if k != "_terms"}

    def kernel_args(self):
        return (self.quad_row, self.quad_a, self.quad_b, self.quad_c, self.quad_w,
                self.quad_ga, self.quad_gb, self.lin_row, self.lin_a, self.lin_d,
                self.lin_w, self.lin_g, self.const_row, self.const_c, self.const_w)

    def weight_table(self, t, out):
        """``W[k] = (w_k, ẇ_k, ẅ_k)`` at time t (row 0 is the constant 1)."""
        out[0] = (1.0, 0.0, 0.0)
        if self.laws is not None:
            fill_weights(self.laws, float(t), out)
        else:
            for k, weight in enumerate(self.weights, start=1):
                out[k] = weight(t)
        return out

    def with_drive(self, old, new):
        """A copy whose weights on drive ``old`` are on drive ``new`` (same structure)."""
        tables = copy.copy(self)
        tables.weights = [Weight(new, w.kind) if w.drive is old else w for w in self.weights]
        tables.laws = pack(tables.weights)
        return tables

    def csr(self, G):
        """Jacobian blocks (nnz, 3) as a SciPy CSR matrix (m × 12 n)."""
        return sp.csr_matrix((np.asarray(G).ravel(), self.csr_indices, self.csr_indptr),
                             shape=self.shape)


class FrozenDict(dict):
    """A ``dict`` that refuses changes (a model's scenario, body index, joint rates).

    A ``dict`` subclass rather than ``types.MappingProxyType`` so that a model
    pickles (Dask sends models to workers)."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("a Model is frozen: build a new one with Mechanism.build() "
                        "or Model.with_parameters()")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __reduce__(self):
        return FrozenDict, (dict(self),)


@dataclass(frozen=True, eq=False)
class Model:
    """Immutable multibody model in natural coordinates (built by ``Mechanism.build``).

    Plain arrays (read-only), tuples and frozen mappings; ``model.name = "x"``
    raises. Rows of ``g`` are ordered: the six rigid-body constraints of each
    body (body order), then every joint's rows (joint order). Equality is
    identity (``eq=False``): two builds are two models, and what is derived
    per model (:mod:`natcoord.model.derived`) is keyed by the object.
    """

    name: str
    scenario: FrozenDict
    bodies: tuple
    joints: tuple
    forces: tuple
    gravity: np.ndarray
    #: body name -> index
    body_index: FrozenDict
    row_labels: tuple
    #: RIGID or JOINT per row
    row_kind: np.ndarray
    #: body (RIGID rows) or joint (JOINT rows) index per row
    row_owner: np.ndarray
    #: (start, stop) of each joint's rows
    joint_rows: tuple
    #: (n_joints, 2) body indices of each joint (−1: ground)
    joint_bodies: np.ndarray
    tables: ConstraintTables
    #: (n, 4, 4) ``J4`` of every body (§1.2)
    J4: np.ndarray
    #: (4 n, 3) gravity as the constant generalized force ``C(c̄)ᵀ m g``
    gravity_force: np.ndarray
    #: prescribed joint rates and ``set_initial`` velocities (checked after assembly)
    joint_rates: FrozenDict
    velocity_requests: FrozenDict
    p_guess: np.ndarray
    v_guess: np.ndarray
    p_reference: np.ndarray
    #: what a file importer reported (natcoord.io.mjcf: the MuJoCo joints' DOF,
    #: ``"not_modelled"``: the elements not modelled, by kind); empty when built in code
    import_report: FrozenDict = field(default_factory=FrozenDict)
    #: declared joint inputs (``natcoord.model.inputs.JointInput``), applied by
    #: ``nc.simulate`` unless it is given ``u=`` or ``inputs=False``
    inputs: tuple = ()
    #: the mechanism's named frames (``Mechanism.frames``: URDF links lumped into a
    #: body, welded MJCF bodies, ``attach_frame``), addressed by name wherever a
    #: body point is (:meth:`point_expression`: ``sol.point("tool0", x, local=True)``)
    frames: FrozenDict = field(default_factory=FrozenDict)

    @classmethod
    def from_mechanism(cls, mech):
        """The frozen model of a builder's bodies, joints and forces (``Mechanism.build``)."""
        scenario = dict(mech.scenario)
        scenario.setdefault("t_end", 10.0)
        last = mech.bodies[-1]
        scenario.setdefault("output_point", (last.name, tuple(last.origin)))
        bodies = tuple(mech.bodies)
        rows, kind, owner, joint_rows = [], [], [], []
        for b in bodies:
            rows += rigid_body_rows(b.index, b.name)
            kind += [RIGID] * 6
            owner += [b.index] * 6
        for j, joint in enumerate(mech.joints):
            joint_rows.append((len(rows), len(rows) + len(joint.rows)))
            rows += joint.rows
            kind += [JOINT] * len(joint.rows)
            owner += [j] * len(joint.rows)
        gravity = _frozen(mech.gravity, float)
        J4, gravity_force = mass_terms(bodies, gravity)
        p0, v0 = mech.initial_guess()
        model = cls(
            name=mech.name, scenario=FrozenDict(scenario), bodies=bodies,
            joints=tuple(mech.joints), forces=tuple(mech.forces), gravity=gravity,
            body_index=FrozenDict({b.name: b.index for b in bodies}),
            row_labels=tuple(r.label for r in rows), row_kind=_frozen(kind, np.int8),
            row_owner=_frozen(owner, np.int64), joint_rows=tuple(joint_rows),
            joint_bodies=_frozen(np.reshape([j.bodies for j in mech.joints], (-1, 2)),
                                 np.int64),
            tables=ConstraintTables(rows, 4 * len(bodies)),
            J4=_frozen(J4), gravity_force=_frozen(gravity_force),
            joint_rates=FrozenDict(mech.joint_rates),
            velocity_requests=FrozenDict(mech.velocity_requests()),
            p_guess=_frozen(p0), v_guess=_frozen(v0),
            p_reference=_frozen(np.concatenate([b.coordinates().ravel() for b in bodies])),
            import_report=FrozenDict(mech.import_report), inputs=tuple(mech.inputs),
            frames=FrozenDict(mech.frames))
        check_point_masses(model)
        return model

    @property
    def n_bodies(self):
        return len(self.bodies)

    @property
    def n_coords(self):
        """12 natural coordinates per body."""
        return 12 * len(self.bodies)

    @property
    def n_rows(self):
        return len(self.row_labels)

    @property
    def n_weights(self):
        """Rows of the weight table: the constant 1 and one per time-dependent weight."""
        return 1 + len(self.tables.weights)

    def with_parameters(self, values):
        """A copy with the named parameters set: ``{"mass:<body>": m,
        "gravity:x|y|z": g_k, "stiffness:<k>" | "damping:<k>" | "rest_length:<k>": x,
        "load:<k>": a scale of the k-th constant point force or torque,
        "drive:<joint>:<parameter>": a parameter of a declarative drive}``
        (:mod:`natcoord.model.parameters`; springs numbered in the order of
        ``add_spring``). Topology and the initial guess are shared; the mass
        terms are recomputed, and what is derived per model (such as the
        assembly) is the copy's own (:mod:`natcoord.model.derived`).
        ``KeyError``/``ValueError``/``TypeError`` name a bad parameter."""
        changes = parameter_changes(self, values)
        J4, gravity_force = mass_terms(changes["bodies"], changes["gravity"])
        changes.update(gravity=_frozen(changes["gravity"], float), J4=_frozen(J4),
                       gravity_force=_frozen(gravity_force))
        return replace(self, **changes)

    # ------------------------------------------------------------------ info
    def __repr__(self):
        return (f"<natcoord.Model {self.name!r}: {self.n_bodies} bodies, "
                f"{len(self.joints)} joints, {self.n_coords} coordinates, "
                f"{self.n_rows} constraints>")

    def describe(self):
        """Text summary of bodies, coordinates, constraints and joints (the rank
        and DOF, found by assembly, are added by :func:`natcoord.dynamics.assembly.describe`)."""
        lines = [repr(self), f"bodies ({self.n_bodies}):"]
        lines += [f"  {b.name:12s} mass {b.mass:g} kg, com (body) {np.round(b.com, 6)}"
                  for b in self.bodies]
        lines += [f"coordinates: {self.n_coords} (12 per body)",
                  f"constraints: {self.n_rows} = {6 * self.n_bodies} rigid-body + "
                  f"{self.n_rows - 6 * self.n_bodies} joint rows"]
        for j, joint in enumerate(self.joints):
            start, stop = self.joint_rows[j]
            names = ["ground" if b < 0 else self.bodies[b].name for b in joint.bodies]
            drive = ", driven" if joint.drive is not None else ""
            dofs = (" (DOF " + ", ".join(f"{d.name}: {d.kind}" for d in joint.dofs) + ")"
                    if joint.dofs else "")
            lines.append(f"  {joint.name:14s} {joint.kind:11s} {names[0]} – {names[1]}: "
                         f"{stop - start} rows{drive}{dofs}")
        lines += [f"input on joint {i.joint!r}: torque "
                  f"{getattr(i.law, 'spec', None) or 'a Python law'}" for i in self.inputs]
        return "\n".join(lines)

    @cached_property
    def mass_matrix(self):
        """The constant sparse ``M = blockdiag(J4_i ⊗ I3)`` (12 n × 12 n)."""
        return sp.block_diag([np.kron(J4, np.eye(3)) for J4 in self.J4], format="csr")

    def body_slice(self, name):
        """Slice of body ``name``'s 12 coordinates in ``p``."""
        i = self.body_index[name]
        return slice(12 * i, 12 * i + 12)

    def joint_named(self, name):
        """``(index, Joint)`` of the joint ``name`` (joints are a name space of their
        own: a body or frame of that name is not looked at)."""
        for j, joint in enumerate(self.joints):
            if joint.name == name:
                return j, joint
        for joint in self.joints:
            if any(d.name == name for d in joint.dofs):
                raise KeyError(f"{name!r} is a DOF of the {joint.kind} compound joint "
                               f"{joint.name!r}, not a joint: its coordinate is the column "
                               f"{name!r} of the joint space (sol.q, nc.joint_state)")
        hint = f" ({name!r} is a body)" if name in self.body_index else ""
        raise KeyError(f"no joint named {name!r}{hint}; joints: "
                       f"{[j.name for j in self.joints]}")

    def placement(self, name):
        """``(body, axes, origin)`` of a body or a named frame (:attr:`frames`): the
        :class:`Body` whose motion its local coordinates follow (None: ground) and, for
        a frame, its axes and origin in that body (None, None for a body itself).
        ``KeyError`` for an unknown name; a frame that moves with a compound joint is
        refused (``NamedFrame.fixed_placement``)."""
        if name is GROUND:                          # the world frame: constant points
            return None, None, None
        if name in self.body_index:
            return self.bodies[self.body_index[name]], None, None
        if name in self.frames:
            frame = self.frames[name]
            origin, axes = frame.fixed_placement()
            body = self.body_index.get(frame.body)
            return (None if body is None else self.bodies[body]), axes, origin
        hint = f" ({name!r} is a joint)" if any(j.name == name for j in self.joints) else ""
        raise KeyError(f"unknown body {name!r}{hint}; bodies: {list(self.body_index)}"
                       + (f"; frames: {list(self.frames)}" if self.frames else ""))

    def point_expression(self, body, point, local=False):
        """Affine expression of a body point (world reference point unless local).

        ``body`` may name a frame (:meth:`placement`): ``local`` points are then in
        the frame's axes from its origin, world reference points follow the body
        the frame is fixed in (a frame fixed in ground gives a constant)."""
        from .expressions import Affine
        b, axes, origin = self.placement(body)
        x = float_array(point)
        if x is None or x.shape != (3,):
            raise ValueError(f"point must be 3 numbers (x, y, z), got {shown(point)}")
        if local and axes is not None:              # the frame's coordinates, the body's
            x = origin + axes @ x
        if b is None:                               # fixed in ground: a world point
            return Affine.constant(x)
        return Affine.body_point(b.index, x if local else b.to_local_point(x))

    # --------------------------------------------------------------- energy
    def kinetic_energy(self, v):
        """``T = ½ vᵀ M v`` with ``M_i = J4_i ⊗ I3``."""
        V = np.reshape(v, (self.n_bodies, 4, 3))
        return 0.5 * np.einsum("iak,iab,ibk->", V, self.J4, V)

    def potential_energy(self, p):
        """Gravity ``−Σ m g·r_c = −f_g·p`` plus the spring energies (the core's,
        natcoord/core/src/forces.c) and the ``potential`` of forces written in Python."""
        p = np.ascontiguousarray(p, dtype=float)
        return self.energy(p, np.zeros_like(p))

    def energy(self, p, v):
        """Kinetic plus potential energy at ``(p, v)`` (12 n each): the core's ``nc_energy``
        (``½ vᵀ M v``, gravity, the built-in springs) and the ``potential(X)`` of the
        forces the core calls back that have one."""
        p, v = (np.ascontiguousarray(x, dtype=float) for x in (p, v))
        X = p.reshape(-1, 3)
        return core_tables.energy(self, p, v) + sum(
            f.potential(X) for f in core_tables.python_forces(self) if hasattr(f, "potential"))


#: smallest kinetic energy, relative to the largest, of a motion the joints allow
#: (bodies at unit mass: geometry only) when the model has point masses; the bound of
#: a body's own spatial inertia (natcoord.model.body._COND_MAX)
_KINETIC_MIN = 1e-12


def check_point_masses(model):
    """``ValueError`` naming the point masses of a motion without kinetic energy.

    A point mass (:attr:`~natcoord.model.body.Body.point_mass`) has no rotational
    inertia (a massless body no inertia at all): its rotation about its point
    costs no energy unless the joints to the bodies it carries turn them with it.
    Where nothing does — a point mass at the end of a chain on a joint whose axis
    passes through its point, or on a spherical joint; icub's head and neck links
    at the reference configuration —
    the mass matrix is singular on the joints' motions and no solver has an
    answer (Pinocchio's ``crba`` is singular there too). Checked at the reference
    configuration, in the mass-free metric (every body at unit mass, so that a
    spread of masses is not taken for a singularity): the smallest eigenvalue of
    ``M`` on the null space of the Jacobian. Dense, ``O((12 n)³)``, and only for
    models with point masses.
    """
    if not any(b.point_mass for b in model.bodies):
        return
    from scipy.linalg import eigh, null_space      # here: only models with point masses
    tables, m = model.tables, model.n_rows
    W = tables.weight_table(0.0, np.empty((model.n_weights, 3)))
    g, g_t, gamma = np.empty(m), np.empty(m), np.empty(m)
    G = np.empty((tables.pattern_row.size, 3))
    X = model.p_reference.reshape(-1, 3)
    constraint_kernel(tables.terms, X, np.zeros_like(X), W, g, g_t, gamma, G)
    N = null_space(tables.csr(G).toarray())
    unit = sp.block_diag([np.kron(J4 / (J4[0, 0] or 1.0), np.eye(3)) for J4 in model.J4])
    energy, motion = eigh(N.T @ (unit @ N))
    if energy[0] > _KINETIC_MIN * energy[-1]:
        return
    speed = np.linalg.norm((N @ motion[:, 0]).reshape(model.n_bodies, 12), axis=1)
    moving = [b.name for b in model.bodies if b.point_mass and speed[b.index] > 1e-6 * speed.max()]
    ratio = energy[0] / energy[-1] if energy[-1] > 0 else 0.0    # all massless: no energy
    raise ValueError(
        f"point masses {moving} turn without kinetic energy at the reference configuration "
        f"(smallest kinetic energy of a motion the joints allow {ratio:.1e} "
        f"of the largest, bodies at unit mass): a point mass has no rotational inertia, and "
        f"no joint to a body it carries turns that body with it (a point mass at the end of "
        f"a chain on a joint through its point?); the mass matrix is singular. Give the "
        f"bodies the inertia of their shape")
