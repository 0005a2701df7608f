"""The immutable model: topology, constants and compiled constraint tables."""
from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .drives import Weight, fill_weights, pack
from .joints import rigid_body_rows

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
        self._last_table = None    # (t, table) of the last weight_table
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

    def kernel_args(self):
        return (self.quad_row, self.quad_a, self.quad_b, self.quad_c, self.quad_w,
                self.quad_ga, self.quad_gb, self.lin_row, self.lin_a, self.lin_d,
                self.lin_w, self.lin_g, self.const_row, self.const_c, self.const_w)

    def weight_table(self, t, out):
        """``W[k] = (w_k, ẇ_k, ẅ_k)`` at time t (row 0 is the constant 1).

        The table of the last t is kept: a run evaluates it several times at the
        same t (an output's projection, its check and its record), and drive
        functions in Python cost far more than the kernels they feed. One
        tuple, replaced whole, so concurrent runs of the model read a
        consistent pair.
        """
        last = self._last_table
        if last is not None and last[0] == t:
            out[:] = last[1]
            return out
        out[0] = (1.0, 0.0, 0.0)
        if self.laws is not None:
            fill_weights(self.laws, float(t), out)
        else:
            for k, weight in enumerate(self.weights, start=1):
                out[k] = weight(t)
        if self.weights:
            self._last_table = (t, out.copy())
        return out

    def with_drive(self, old, new):
        """A copy whose weights on drive ``old`` are on drive ``new`` (same structure)."""
        tables = copy.copy(self)
        tables.weights = [Weight(new, w.kind) if w.drive is old else w for w in self.weights]
        tables.laws, tables._last_table = pack(tables.weights), None
        return tables

    def csr(self, G):
        """Jacobian blocks (nnz, 3) as a SciPy CSR matrix (m × 12 n)."""
        return sp.csr_matrix((np.asarray(G).ravel(), self.csr_indices, self.csr_indptr),
                             shape=self.shape)


class Model:
    """Immutable multibody model in natural coordinates (built by ``Mechanism.build``).

    Rows of ``g`` are ordered: the six rigid-body constraints of each body
    (body order), then every joint's rows (joint order).
    """

    def __init__(self, mech):
        self.name = mech.name
        self.scenario = dict(mech.scenario)
        self.scenario.setdefault("t_end", 10.0)
        last = mech.bodies[-1]
        self.scenario.setdefault("output_point", (last.name, tuple(last.origin)))
        self.bodies = tuple(mech.bodies)
        self.joints = tuple(mech.joints)
        self.forces = tuple(mech.forces)
        self.gravity = _frozen(mech.gravity)
        self.n_bodies = len(self.bodies)
        self.n_coords = 12 * self.n_bodies
        self.body_index = {b.name: b.index for b in self.bodies}
        rows, kind, owner, joint_rows = [], [], [], []
        for b in self.bodies:
            rows += rigid_body_rows(b.index, b.name)
            kind += [RIGID] * 6
            owner += [b.index] * 6
        for j, joint in enumerate(self.joints):
            joint_rows.append((len(rows), len(rows) + len(joint.rows)))
            rows += joint.rows
            kind += [JOINT] * len(joint.rows)
            owner += [j] * len(joint.rows)
        self.n_rows = len(rows)
        self.row_labels = tuple(r.label for r in rows)
        self.row_kind = _frozen(kind, np.int8)
        self.row_owner = _frozen(owner, np.int64)
        self.joint_rows = tuple(joint_rows)
        self.joint_bodies = _frozen(np.reshape([j.bodies for j in self.joints], (-1, 2)),
                                    np.int64)
        self.tables = ConstraintTables(rows, 4 * self.n_bodies)
        self.n_weights = 1 + len(self.tables.weights)
        self._set_mass_terms()
        # prescribed joint rates and set_initial velocities (checked after assembly)
        self.joint_rates = dict(getattr(mech, "joint_rates", {}))
        self.velocity_requests = {
            i: {k: e[k] for k in ("velocity", "angular_velocity") if k in e}
            for i, e in mech._initial.items() if "velocity" in e or "angular_velocity" in e}
        p0, v0 = mech.initial_guess()
        self.p_guess, self.v_guess = _frozen(p0), _frozen(v0)
        self.p_reference = _frozen(np.concatenate([b.coordinates().ravel()
                                                   for b in self.bodies]))

    def _set_mass_terms(self):
        """``J4`` of every body and gravity as the constant generalized force
        ``C(c̄)ᵀ m g`` (§1.2), from ``bodies`` and ``gravity``."""
        self.J4 = _frozen(np.array([b.J4 for b in self.bodies]))
        fg = np.zeros((4 * self.n_bodies, 3))
        for b in self.bodies:
            fg[4 * b.index] = b.mass * self.gravity
            fg[4 * b.index + 1:4 * b.index + 4] = b.mass * np.outer(b.com, self.gravity)
        self.gravity_force = _frozen(fg)

    def with_parameters(self, values):
        """A copy with the named parameters set: ``{"mass:<body>": m,
        "gravity:x|y|z": g_k, "stiffness:<k>" | "damping:<k>" | "rest_length:<k>": x,
        "load:<k>": a scale of the k-th constant point force or torque,
        "drive:<joint>:<parameter>": a parameter of a declarative drive}``
        (names of :func:`natcoord.dynamics.linearization.parameter_direction`; springs numbered
        in the order of ``add_spring``). Topology and the initial guess are
        shared; the mass matrix and gravity force are recomputed (what is derived
        per model, such as the assembly, is the copy's own: :mod:`natcoord.model.derived`).
        ``KeyError``/``ValueError``/``TypeError`` name a bad parameter."""
        from ..dynamics.linearization import parameter_value, set_parameter
        if not isinstance(values, Mapping):
            raise TypeError(f"with_parameters takes a mapping {{name: value}}, e.g. "
                            f"{{'mass:<body>': 2.0}}; got {values!r}")
        new = copy.copy(self)
        new.__dict__.pop("mass_matrix", None)                  # mass-dependent
        new.bodies, new.forces, new.joints, new.gravity = list(self.bodies), \
            list(self.forces), list(self.joints), np.array(self.gravity)
        for name, value in dict(values).items():
            parameter_value(self, name)              # the name exists
            set_parameter(new, name, value)
        new.bodies, new.forces, new.joints = tuple(new.bodies), tuple(new.forces), \
            tuple(new.joints)
        new.gravity = _frozen(new.gravity)
        new._set_mass_terms()
        return new

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
            lines.append(f"  {joint.name:14s} {joint.kind:11s} {names[0]} – {names[1]}: "
                         f"{stop - start} rows{drive}")
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
        for j, joint in enumerate(self.joints):
            if joint.name == name:
                return j, joint
        raise KeyError(f"no joint named {name!r}; joints: {[j.name for j in self.joints]}")

    def point_expression(self, body, point, local=False):
        """Affine expression of a body point (world reference point unless local)."""
        from .expressions import Affine
        if body not in self.body_index:
            raise KeyError(f"unknown body {body!r}; bodies: {list(self.body_index)}")
        b = self.bodies[self.body_index[body]]
        x = np.asarray(point, float)
        return Affine.body_point(b.index, x if local else b.to_local_point(x))

    # --------------------------------------------------------------- energy
    def kinetic_energy(self, v):
        """``T = ½ vᵀ M v`` with ``M_i = J4_i ⊗ I3``."""
        V = np.reshape(v, (self.n_bodies, 4, 3))
        return 0.5 * np.einsum("iak,iab,ibk->", V, self.J4, V)

    def potential_energy(self, p):
        """Gravity ``−Σ m g·r_c = −f_g·p`` plus spring energies."""
        X = np.reshape(p, (-1, 3))
        return -np.sum(self.gravity_force * X) + sum(f.potential(X) for f in self.forces)

    def energy(self, p, v):
        return self.kinetic_energy(v) + self.potential_energy(p)
