"""The O(n) block rational Cholesky with constraint partitioning (docs/method.md#16-linear-solve).

Block LDLᵀ of ``K = [[M, Gᵀ], [G, 0]]`` over body and joint nodes in the
order and with the fill of :mod:`natcoord.linalg.symbolic`.

**Body nodes.** The pivot of body i is its augmented block
``B_i = [[M̃_i, G_RCᵀ], [G_RC, 0]]``, ``M̃_i`` the mass block plus the updates of
eliminated joints (all of the form ``Cᵀ X C``). It is inverted exactly through
the rigid-body velocities: ``G_RC T = 0`` for ``T ξ = (v, ω×e1, ω×e2, ω×e3)``,
``ξ = (v, ω)``, whatever ``e_k`` (not only orthonormal ones), so the
coordinate block of ``B_i⁻¹`` is ``T (Tᵀ M̃ T)⁻¹ Tᵀ`` (the null-space form of
``H⁻¹ − H⁻¹G_RCᵀ(G_RC H⁻¹ G_RCᵀ)⁻¹G_RC H⁻¹``, ``H = M̃ + G_RCᵀG_RC``). Hence
the factor works with 6×6 body pivots ``Ĩ = TᵀM̃T`` — the spatial inertia
``[[m 1, −[c]×], [[c]×, tr(J_w) 1 − J_w]]`` (``c = Σ m c̄_k e_k``, ``J_w = E J Eᵀ``)
plus the articulated updates — and with joint Jacobians in twist form
``Ĉ = G T``: a row with blocks ``(g_o, g_1, g_2, g_3)`` on a body acts as
``(g_o, Σ_k e_k × g_k)``. The rigid-body rows take part through a particular
solution ``δe_l = Σ_k S_kl f_k`` (``f_k`` the reciprocal basis of ``e_k``,
``e_m · δe_l = S_ml``) and their multipliers ``μ_kl = ½(f_k·z_l + f_l·z_k)``
from the residual ``z = r − M a − G_Jᵀλ_J`` (``G_RCᵀ μ = z``).

**Joint nodes.** Their pivot ``S = −Ĉ P Ĉᵀ + …`` is negative semidefinite;
it is factored as ``S = L D Lᵀ`` (unit ``L``, ``D < 0``) with pivot monitoring.

**Constraint partitioning.** Scalar joint row k is *dropped* when its
pivot ``−D_k``, after eliminating every node and joint row before it,
satisfies ``pivot ≤ drop_tol · ref_k`` (or ``ref_k ≤ 0``), with
``ref_k = Σ_i ĉ_ki (TᵀM_iT)⁻¹ ĉ_kiᵀ = g_k P g_kᵀ`` its pivot before any
joint row is eliminated — only its bodies' rigid-body rows (``P`` as in
:mod:`natcoord.linalg.redundancy`, which uses the same definition in row
order; ``drop_tol`` is the solver's per-row threshold, with the hysteresis of
:class:`~natcoord.linalg.base.KKTSolver`). A dropped row gets multiplier 0,
its right-hand side is ignored and the factorization goes on. Rigid-body rows
are never dropped. ``ref_k`` costs a 6×6 solve per body of the row, so it is
evaluated only for rows whose pivot falls below ``drop_tol`` times the bound
``Σ_i |ĉ_ki|² / (λ_min(J4_i) λ_min(TᵀT))`` ≥ ``ref_k``: rarely but exactly.

**Redundancy is decided on geometry, never on masses.** ``pivot / ref_k`` is
the squared sine of the angle between row k and the rows before it, measured
in the metric ``Ĩ⁻¹``; a body a million times heavier than its neighbour
distorts that angle a millionfold and an independent row looks redundant.
The decision is therefore the one of the *mass-free* metric, every ``J4_i``
scaled to unit mass (:func:`~natcoord.linalg.base.unit_mass_blocks`): since
``Ĩ_i = m_i Ĩ_i⁰``, the true ratio is within a factor ``R = max m / min m``
of the mass-free one, so a row below ``drop_tol / R`` or above
``drop_tol · R`` is decided by the factorization itself, and only a row in
between triggers a factorization in the mass-free metric, whose dropped set
the final factorization follows (:func:`factor_kernel`). With equal masses
(``R = 1``) no row is ever in between.

**Point masses.** A point mass (a massless body too: ``Ĩ = 0``) has no
rotational inertia: its ``Ĩ`` has rank 3 (0), and the true metric is not
within any factor of the mass-free one (where it has a nominal radius of
gyration, :func:`~natcoord.linalg.base.unit_mass_blocks`), so ``R = ∞``:
every row is decided in the mass-free metric, and the factorization in the
true metric follows. In post-order its pivot is ``Ĩ`` plus the Schur updates
``Ĉᵀ (Ĉ Ĩ_c⁻¹ Ĉᵀ)⁻¹ Ĉ`` of the joints to its children — the articulated-body
inertia of Featherstone's algorithm — which is singular where the model is
not: along its child's hinge when that passes through the point (icub's wrist
pitch link), along its child joint's DOF for a massless body. The joint to its
parent, eliminated next, forbids that motion; Pinocchio's ``aba`` pivots on
``SᵀIᴬS`` of that joint for the same reason. So the factorization solves the
augmented-Lagrangian system instead: with ``Ĉ_p`` the parent joint's kept rows
(twist form) and ``ŝ_p`` their right-hand side,
``[[Ĩ + ρ Ĉ_pᵀĈ_p, Ĉᵀ], [Ĉ, 0]] [ξ; λ] = [r̂ + ρ Ĉ_pᵀŝ_p; ŝ]`` — the original
system with ``ρ Ĉ_pᵀ`` times the parent rows ``Ĉ_p ξ = ŝ_p`` added to the body
rows, so the same solution, ``λ`` included, and the same ``μ`` from the true
residual. Its body pivot ``Ĩ + updates + ρ Ĉ_pᵀĈ_p`` is positive definite
exactly when no motion the joints allow costs no energy, which the model
checks when it is built (:func:`natcoord.model.frozen.check_point_masses`).
``ρ`` is the mass the body carries (its subtree's), the scale of its
articulated inertia. ``Ĉ_p`` also touches the parent body: one block more in
the body's column (:mod:`natcoord.linalg.symbolic`). The term is added in the
true metric's forced pass only, where the dropped rows are known (a dropped
row's constraint is not imposed and contributes no term); the mass-free pass
needs none. The floor of a point mass is 0 (``λ_min(J4) = 0``).

The numeric phase runs in the compiled core (``natcoord/core/src/blockldl.c``:
``engine.factor_kernel`` and ``engine.solve_kernel``), in buffers allocated once per
solver, without Python and without allocating; the C code and its comments are
the reference for the kernels' arithmetic.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core import engine
from ..model.frozen import JOINT as JOINT_ROW
from ..model.frozen import RIGID
from ..model.derived import derived
from .base import (DROP_TOL, HOLD_TOL, KKTSolver, MassSpreadError, mass_ratio, refined_solve,
                   unit_mass_blocks)
from .symbolic import BODY, BlockStructure, structure

#: The kernels' read-only arrays (fields of :class:`BlockPlan`, documented there),
#: passed to compiled code as one named tuple.
PlanArrays = namedtuple("PlanArrays", [
    "J4", "J4_min", "unit_J4", "unit_J4_min", "mass_ratio", "e_index", "body_node", "size",
    "sign", "col_ptr", "col_node", "upd_ptr", "upd_q", "upd_p", "upd_t", "node_row0", "jp",
    "jp_ptr", "jp_row", "jp_slot", "jp_base", "jp_stride", "jp_axis", "jp_z",
    "body_axis_ptr", "row_z", "side_block", "side_body", "side_trans", "side_row0",
    "side_size", "jp_e", "al_block", "al_trans", "al_jnode", "al_size", "al_node", "al_copy",
    "al_rho", "al_pair_u", "al_pair_w", "al_pair_t"])
#: Per-solver buffers of the numeric phase (see :func:`make_work`).
WorkBuffers = namedtuple("WorkBuffers", [
    "B", "inv", "E", "F", "Gj", "floor", "bound", "dropped", "decided", "I6", "y", "S3", "z", "ap"])


# ------------------------------------------------------------------ symbolic
class BlockPlan:
    """Index arrays that drive the kernels, derived from the block structure.

    Blocks (6×6 buffers, leading ``size[q] × size[k]`` used): block ``k < N`` is
    the diagonal of node k (later its factor ``L_k``, ``D_k``), block ``N + e`` the
    coupling of column entry ``e`` (node ``col_node[e]`` with node k).
    ``upd_*``: for each node k the pairs ``(e_q, e_p) → target`` of the Schur
    update ``A_qp −= A_qk D_k⁻¹ A_pkᵀ``. ``e_index`` (n, 3): Jacobian blocks
    ``∂g_RC/∂e_k = e_k``. ``jp_*``: joint Jacobian blocks and where their
    twist form goes.
    """

    def __init__(self, model, s: BlockStructure):
        n, N = model.n_bodies, s.n_nodes
        tables = model.tables
        if not np.all(model.row_kind[:6 * n] == RIGID) or \
                not np.all(model.row_kind[6 * n:] == JOINT_ROW):
            raise ValueError("block solver: rows must be 6 rigid-body rows per body, "
                             "then joint rows")
        self.n_bodies, self.n_nodes, self.n_rows = n, N, model.n_rows
        sizes = np.array([b - a for a, b in model.joint_rows], np.int64)
        if sizes.size and sizes.max() > 6:
            raise ValueError("block solver: a joint has more than 6 rows")
        self.size = np.full(N, 6, np.int64)
        self.size[s.kind != BODY] = sizes[s.index[s.kind != BODY]]
        self.sign = np.where(s.kind == BODY, 1.0, -1.0)
        self.body_node = s.body_node
        self.col_ptr, self.col_node = s.col_ptr, s.col_node
        self.n_blocks = N + s.col_node.size
        self._updates(s)
        # rigid rows 6i + k have the block e_{k+1} at slot 4i + 1 + k
        key = tables.pattern_row * (4 * n) + tables.pattern_slot
        want = (6 * np.arange(n)[:, None] + np.arange(3)) * (4 * n) \
            + 4 * np.arange(n)[:, None] + 1 + np.arange(3)
        self.e_index = np.searchsorted(key, want).astype(np.int64)
        assert np.array_equal(key[self.e_index], want)
        # joint rows: node and local row
        rows = np.arange(6 * n, model.n_rows)
        owner = model.row_owner[rows]
        self.row_node = s.joint_node[owner] if rows.size else np.zeros(0, np.int64)
        self.row_local = rows - np.array([model.joint_rows[j][0] for j in owner], np.int64)
        # joint Jacobian blocks -> coupling block, row and orientation
        jp = np.flatnonzero(tables.pattern_row >= 6 * n)
        jnode = self.row_node[tables.pattern_row[jp] - 6 * n]
        bnode = s.body_node[tables.pattern_slot[jp] // 4]
        jp_block = np.array([self.block_of(q, k) for q, k in
                             zip(np.maximum(jnode, bnode), np.minimum(jnode, bnode))], np.int64)
        self.jp = jp
        self.jp_row = tables.pattern_row[jp]
        self.jp_slot = tables.pattern_slot[jp]
        body = self.jp_slot // 4
        trans = bnode > jnode                               # block is 6 × m_j
        local = self.row_local[self.jp_row - 6 * n]
        # entry (r, a) of the block in the flat buffer: base + a·stride, a = 0..5;
        # the origin slot adds to a = 0..2, an axis slot (e_k × g) to a = 3..5.
        # Couplings are stored transposed (blockldl.c): entry (i, c) of A_qk at
        # 36 block + 6 c + i, so the joint's row r is the column of a 6 × m_j block
        # (trans) and the row of an m_j × 6 one; fixed per model, not per call
        self.jp_stride = np.where(trans, 1, 6)
        self.jp_base = jp_block * 36 + np.where(trans, 6 * local, local) \
            + np.where(self.jp_slot % 4 == 0, 0, 3 * self.jp_stride)
        # an axis block's e_k in the (n, 9) axes, read by its twist form; −1: an origin
        k = self.jp_slot % 4
        self.jp_e = np.where(k == 0, -1, 9 * body + 3 * (k - 1))
        # solve: only the axis slots meet a_p and the multipliers μ; by body
        axis = np.flatnonzero(self.jp_slot % 4 != 0)
        self.jp_axis = axis[np.argsort(body[axis], kind="stable")]
        self.body_axis_ptr = np.searchsorted(body[self.jp_axis], np.arange(n + 1))
        self.jp_z = (6 * jnode + local)[self.jp_axis]
        self.row_z = 6 * self.row_node + self.row_local
        self.jp_ptr = np.searchsorted(self.jp_row, np.arange(6 * n, model.n_rows + 1))
        # first joint row (counted from 6 n) of each joint node
        self.node_row0 = np.zeros(N, np.int64)
        self.node_row0[self.row_node[self.row_local == 0]] = np.flatnonzero(self.row_local == 0)
        # reference pivots: each joint's coupling blocks with its bodies, λ_min(J4)
        side = np.unique(np.stack([jp_block, body, trans, jnode], 1), axis=0)
        self.side_block, self.side_body, self.side_trans, side_node = side.T.copy()
        self.side_row0, self.side_size = self.node_row0[side_node], self.size[side_node]
        self._augmentation(model, s)
        self.arrays = PlanArrays(
            J4=model.J4, J4_min=np.linalg.eigvalsh(model.J4)[:, 0].copy(),
            unit_J4=unit_mass_blocks(model),
            unit_J4_min=np.linalg.eigvalsh(unit_mass_blocks(model))[:, 0].copy(),
            mass_ratio=np.inf if any(b.point_mass for b in model.bodies)
            else float(mass_ratio(model.J4)), e_index=self.e_index,
            body_node=self.body_node, size=self.size, sign=self.sign,
            col_ptr=self.col_ptr, col_node=self.col_node, upd_ptr=self.upd_ptr,
            upd_q=self.upd_q, upd_p=self.upd_p, upd_t=self.upd_t, node_row0=self.node_row0,
            jp=self.jp, jp_ptr=self.jp_ptr, jp_row=self.jp_row, jp_slot=self.jp_slot,
            jp_base=self.jp_base, jp_stride=self.jp_stride, jp_axis=self.jp_axis,
            jp_z=self.jp_z, body_axis_ptr=self.body_axis_ptr, row_z=self.row_z,
            side_block=self.side_block, side_body=self.side_body,
            side_trans=self.side_trans, side_row0=self.side_row0,
            side_size=self.side_size, jp_e=self.jp_e, **self.al)

    def _augmentation(self, model, s):
        """``al_*``: the augmented-Lagrangian term ``ρ ĈᵀĈ`` of each augmented body's
        parent joint (module docstring). Per *side* (the joint and one of its bodies):
        the coupling block ``al_block`` (``al_trans`` as ``side_trans``), the joint node
        ``al_jnode`` and its size, the body node, the block ``al_copy`` (appended to the
        blocks) that keeps the side's ``Ĉ`` for the solve, and ``ρ``; per pair of sides
        of one joint, the target block of ``ρ Ĉ_uᵀ Ĉ_w`` (stored as a coupling ``A_uw``)."""
        mass = np.array([b.mass for b in model.bodies])
        subtree = mass.copy()                     # children before parents: post-order
        for b in s.index[s.kind == BODY]:
            if s.parent[b] >= 0:
                subtree[s.parent[b]] += subtree[b]
        sides, rho, pairs = [], [], []
        for b in s.augmented:
            j = s.parent_joint[b]
            jnode = s.joint_node[j]
            first = len(sides)
            for u in sorted(model.joint_bodies[j][model.joint_bodies[j] >= 0],
                            key=lambda u: s.body_node[u]):
                unode = s.body_node[u]
                sides.append((self.block_of(max(jnode, unode), min(jnode, unode)),
                              unode > jnode, jnode, self.size[jnode], unode,
                              self.n_blocks + len(sides)))
                rho.append(subtree[b])
            for w in range(first, len(sides)):      # sides by node: u ≥ w is A_uw
                for u in range(w, len(sides)):
                    pairs.append((u, w, self.block_of(sides[u][4], sides[w][4])))
        self.n_blocks += len(sides)
        side = np.array(sides, np.int64).reshape(-1, 6)
        pair = np.array(pairs, np.int64).reshape(-1, 3)
        self.al = {name: side[:, k].copy() for k, name in enumerate(
            ("al_block", "al_trans", "al_jnode", "al_size", "al_node", "al_copy"))}
        self.al.update(al_rho=np.array(rho, float), al_pair_u=pair[:, 0].copy(),
                       al_pair_w=pair[:, 1].copy(), al_pair_t=pair[:, 2].copy())

    def block_of(self, q, k):
        """Block index of ``A_qk`` (q ≥ k)."""
        if q == k:
            return k
        lo, hi = self.col_ptr[k], self.col_ptr[k + 1]
        e = lo + np.searchsorted(self.col_node[lo:hi], q)
        assert self.col_node[e] == q
        return self.n_nodes + e

    def _updates(self, s):
        ptr, a, b, t = [0], [], [], []
        for k in range(s.n_nodes):
            lo, hi = s.col_ptr[k], s.col_ptr[k + 1]
            for ep in range(lo, hi):
                for eq in range(ep, hi):
                    a.append(eq)
                    b.append(ep)
                    t.append(self.block_of(s.col_node[eq], s.col_node[ep]))
            ptr.append(len(a))
        self.upd_ptr = np.array(ptr, np.int64)
        self.upd_q = np.array(a, np.int64)
        self.upd_p = np.array(b, np.int64)
        self.upd_t = np.array(t, np.int64)

    def flops(self):
        """Floating-point operations of one factorization plus one solve.

        Counts the block operations (LDLᵀ ``d³/3``, triangular solves
        ``d_q d_k²``, Schur updates ``2 d_q d_p d_k`` or ``d_q (d_q + 1) d_k`` on
        a diagonal block, forward and backward substitution ``4 d_q d_k + 2 d_k²``);
        the per-body assembly and the rigid-body transformation add a constant
        per body, not counted.
        """
        d = self.size
        col = np.repeat(np.arange(self.n_nodes), np.diff(self.col_ptr))
        dq, dk = d[self.col_node], d[col]
        upd_k = np.repeat(np.arange(self.n_nodes), np.diff(self.upd_ptr))
        uq, up = d[self.col_node[self.upd_q]], d[self.col_node[self.upd_p]]
        update = np.where(self.upd_q == self.upd_p, uq * (uq + 1), 2 * uq * up) * d[upd_k]
        return int(np.sum(d**3) // 3 + np.sum(dq * dk**2) + np.sum(update)
                   + 4 * np.sum(dq * dk) + 2 * np.sum(d**2))


def _symbolic(model):
    s = structure(model)
    return s, BlockPlan(model, s)


def block_plan(model) -> BlockPlan:
    """The kernels' index arrays of ``model`` (a new plan; a solver builds and owns its own)."""
    return BlockPlan(model, structure(model))


# ------------------------------------------------------------ small kernels


# ------------------------------------------------------------ numeric phase


#: statuses of the factorization (``factor_kernel``)
FACTORED, SINGULAR_FRAME, NOT_POSITIVE_DEFINITE, UNPIVOTABLE_JOINT = range(4)


# ------------------------------------------------------------------ solver
def make_work(plan: BlockPlan) -> WorkBuffers:
    """Buffers of one factorization (the per-run data of the block solver)."""
    n, N, m_joint = plan.n_bodies, plan.n_nodes, plan.n_rows - 6 * plan.n_bodies
    return WorkBuffers(
        B=np.zeros((plan.n_blocks, 6, 6)),       # blocks, then L and V in place
        inv=np.zeros((N, 6)),                    # 1 / diag(L), 0 on dropped rows
        E=np.zeros((n, 3, 3)), F=np.zeros((n, 3, 3)), Gj=np.zeros((plan.jp.size, 3)),
        floor=np.zeros(N),
        bound=np.zeros(m_joint), dropped=np.zeros(m_joint, np.int64),
        decided=np.zeros(m_joint, np.bool_), I6=np.zeros((6, 6)), y=np.zeros(12),
        S3=np.zeros((3, 3)),
        # the solve's node vector and particular solution, for up to LANES right-hand
        # sides side by side (core nc_solve_lanes)
        z=np.zeros((engine.LANES * N, 6)), ap=np.zeros((engine.LANES * 4 * n, 3)))


class BlockLDL(KKTSolver):
    """Block rational Cholesky, O(n) for trees and a fixed number of loops."""

    name = "block"
    #: with refinement ~1e-8 up to a spread of 1e12; at 1e15 a pivot of a light
    #: body's loop is pure round-off (ε times the spread)
    max_mass_ratio = 1e12

    def __init__(self, model, drop_tol=DROP_TOL, hold_tol=HOLD_TOL):
        super().__init__(model, drop_tol, hold_tol)
        # the symbolic phase and index arrays (both O(n), read-only) once per model:
        # building them took ~3 ms of a 10 ms hexapod run, per solver
        self.structure, self.plan = derived(model, "block plan", lambda: _symbolic(model))
        self.work = make_work(self.plan)
        self._packed = (engine.pack(self.plan.arrays, "P"), engine.pack(self.work, "W"))
        self._none = np.zeros(0, np.int64)
        self._joint_threshold = self.row_threshold[6 * model.n_bodies:]   # a view
        self._G = np.zeros((model.tables.pattern_row.size, 3)) if self.refine else None

    def failure(self, status, where):
        """The message of a failed :func:`factor_kernel` (``status``, ``where``: a body
        for SINGULAR_FRAME, else a node), naming the body or joint; the compiled
        stepper reports its failed factorizations with it too."""
        if status == UNPIVOTABLE_JOINT:
            joint = self.model.joints[self.structure.index[where]]
            return (f"block: the rows of joint {joint.name!r} are independent (decided on "
                    f"the geometry) but cannot be pivoted in the mass metric: the body "
                    f"masses span a factor {mass_ratio(self.model.J4):.1e}, more than the "
                    f"fixed elimination order resolves in double precision; use "
                    f"solver='superlu' or 'dense' (pivoted LU), or rescale the lightest or "
                    f"heaviest bodies")
        if status == SINGULAR_FRAME:
            body, why = where, "singular frame"
        else:
            body, why = self.structure.index[where], "pivot not positive definite"
            if self.model.bodies[body].point_mass:
                return (f"block: body {self.model.bodies[body].name!r}: {why}: a point mass "
                        f"whose rotation its joints no longer determine (a joint axis through "
                        f"its point?), or whose axes e1, e2, e3 are far from independent")
        return (f"block: body {self.model.bodies[body].name!r}: {why}; its axes e1, e2, e3 "
                f"must stay linearly independent (is the state far off the constraints?)")

    def factor(self, G):
        if self.refine:
            self._G[:] = G        # the Jacobian of this factorization, for refinement
        self._update_thresholds()
        status, where, count = engine.factor_kernel(G, self._joint_threshold, *self._packed)
        if status != FACTORED:
            error = MassSpreadError if status == UNPIVOTABLE_JOINT else np.linalg.LinAlgError
            raise error(self.failure(status, where))
        self.dropped = (np.sort(self.work.dropped[:count]) + 6 * self.plan.n_bodies if count
                        else self._none)

    def solve(self, r, s):
        return refined_solve(self, self._G, r, s)

    def _solve_once(self, r, s):
        x = np.empty(self.model.n_coords)
        lam = np.empty(self.model.n_rows)
        engine.solve_kernel(np.ascontiguousarray(r, float), np.ascontiguousarray(s, float),
                           *self._packed, x, lam)
        return x, lam
