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
it is factored as the Cholesky ``−S = L Lᵀ`` with pivot monitoring.

**Constraint partitioning.** Scalar joint row k is *dropped* when its
Cholesky pivot, after eliminating every node and joint row before it,
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

Compiled kernels (Numba) work in buffers allocated once per solver; the
numeric phase loops over nodes without Python and without allocating.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from ..util.jit import njit

from ..model.frozen import JOINT as JOINT_ROW
from ..model.frozen import RIGID
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
    "side_size"])
#: Per-solver buffers of the numeric phase (see :func:`make_work`).
WorkBuffers = namedtuple("WorkBuffers", [
    "B", "inv", "E", "F", "Gj", "floor", "bound", "dropped", "decided", "I6", "y", "S3", "z", "ap"])


# ------------------------------------------------------------------ symbolic
class BlockPlan:
    """Index arrays that drive the kernels, derived from the block structure.

    Blocks (6×6 buffers, leading ``size[q] × size[k]`` used): block ``k < N`` is
    the diagonal of node k (later its Cholesky factor), block ``N + e`` the
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
        # the origin slot adds to a = 0..2, an axis slot (e_k × g) to a = 3..5
        self.jp_stride = np.where(trans, 6, 1)
        self.jp_base = jp_block * 36 + np.where(trans, local, 6 * local) \
            + np.where(self.jp_slot % 4 == 0, 0, 3 * self.jp_stride)
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
        self.arrays = PlanArrays(
            J4=model.J4, J4_min=np.linalg.eigvalsh(model.J4)[:, 0].copy(),
            unit_J4=unit_mass_blocks(model.J4),
            unit_J4_min=np.linalg.eigvalsh(unit_mass_blocks(model.J4))[:, 0].copy(),
            mass_ratio=float(mass_ratio(model.J4)), e_index=self.e_index,
            body_node=self.body_node, size=self.size, sign=self.sign,
            col_ptr=self.col_ptr, col_node=self.col_node, upd_ptr=self.upd_ptr,
            upd_q=self.upd_q, upd_p=self.upd_p, upd_t=self.upd_t, node_row0=self.node_row0,
            jp=self.jp, jp_ptr=self.jp_ptr, jp_row=self.jp_row, jp_slot=self.jp_slot,
            jp_base=self.jp_base, jp_stride=self.jp_stride, jp_axis=self.jp_axis,
            jp_z=self.jp_z, body_axis_ptr=self.body_axis_ptr, row_z=self.row_z,
            side_block=self.side_block, side_body=self.side_body,
            side_trans=self.side_trans, side_row0=self.side_row0,
            side_size=self.side_size)

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

        Counts the block operations (Cholesky ``d³/3``, triangular solves
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


def block_plan(model) -> BlockPlan:
    """The kernels' index arrays of ``model`` (a new plan; a solver builds and owns its own)."""
    return BlockPlan(model, structure(model))


# ------------------------------------------------------------ small kernels
@njit(cache=True, inline="always")
def _cross_add(out, o, a, b):
    """``out[o:o+3] += a × b``."""
    out[o] += a[1] * b[2] - a[2] * b[1]
    out[o + 1] += a[2] * b[0] - a[0] * b[2]
    out[o + 2] += a[0] * b[1] - a[1] * b[0]


@njit(cache=True)
def _axes(G, e_index, i, E):
    """``E[k] = e_{k+1}`` of body i: the Jacobian blocks of ``½(e_k·e_k − 1)``."""
    for k in range(3):
        for a in range(3):
            E[k, a] = G[e_index[i, k], a]


@njit(cache=True)
def _spatial_inertia(J4, E, out):
    """``Ĩ = TᵀMT`` (6×6) for ``M = J4 ⊗ I3`` and axes ``E[k] = e_{k+1}``."""
    tr = 0.0
    for a in range(3):
        for b in range(a, 3):
            jw = 0.0                                  # J_w = E J Eᵀ
            for k in range(3):
                jk = J4[k + 1, 1] * E[0, b] + J4[k + 1, 2] * E[1, b] + J4[k + 1, 3] * E[2, b]
                jw += E[k, a] * jk
            out[3 + a, 3 + b] = out[3 + b, 3 + a] = -jw
            if a == b:
                tr += jw
    for a in range(3):
        out[3 + a, 3 + a] += tr
        for b in range(3):
            out[a, b] = J4[0, 0] if a == b else 0.0
    c0 = J4[0, 1] * E[0, 0] + J4[0, 2] * E[1, 0] + J4[0, 3] * E[2, 0]
    c1 = J4[0, 1] * E[0, 1] + J4[0, 2] * E[1, 1] + J4[0, 3] * E[2, 1]
    c2 = J4[0, 1] * E[0, 2] + J4[0, 2] * E[1, 2] + J4[0, 3] * E[2, 2]
    # −[c]× above, [c]× below the diagonal (c = Σ m c̄_k e_k)
    out[0, 3], out[0, 4], out[0, 5] = 0.0, c2, -c1
    out[1, 3], out[1, 4], out[1, 5] = -c2, 0.0, c0
    out[2, 3], out[2, 4], out[2, 5] = c1, -c0, 0.0
    for a in range(3):
        for b in range(3):
            out[3 + b, a] = out[a, 3 + b]


@njit(cache=True)
def _reciprocal(E, F):
    """Reciprocal basis ``F[k] = f_k`` with ``f_k · e_l = δ_kl``; False if singular."""
    det = (E[0, 0] * (E[1, 1] * E[2, 2] - E[1, 2] * E[2, 1])
           - E[0, 1] * (E[1, 0] * E[2, 2] - E[1, 2] * E[2, 0])
           + E[0, 2] * (E[1, 0] * E[2, 1] - E[1, 1] * E[2, 0]))
    if not abs(det) > 1e-12:
        return False
    for k in range(3):
        a, b = E[(k + 1) % 3], E[(k + 2) % 3]
        F[k, 0] = (a[1] * b[2] - a[2] * b[1]) / det
        F[k, 1] = (a[2] * b[0] - a[0] * b[2]) / det
        F[k, 2] = (a[0] * b[1] - a[1] * b[0]) / det
    return True


@njit(cache=True)
def _twist_bound(J4_min, E):
    """Upper bound of ``‖(TᵀMT)⁻¹‖``: ``1 / (λ_min(J4) λ_min(TᵀT))``.

    ``|Tξ|² = |v|² + ωᵀ(tr W − W)ω`` with ``W = Σ_k e_k e_kᵀ``; ``λ_max(W)`` is
    bounded by Gershgorin's row sums. ∞ when the bound is not positive.
    """
    trace, gershgorin = 0.0, 0.0
    for a in range(3):
        row = 0.0
        for b in range(3):
            w = E[0, a] * E[0, b] + E[1, a] * E[1, b] + E[2, a] * E[2, b]
            row += abs(w)
            if a == b:
                trace += w
        gershgorin = max(gershgorin, row)
    sigma = min(1.0, trace - gershgorin)
    return 1.0 / (J4_min * sigma) if sigma > 0.0 and J4_min > 0.0 else np.inf


@njit(cache=True)
def _cholesky(A, d, inv, floor):
    """In-place lower Cholesky of the leading d×d block, ``inv = 1/diag(L)``.

    A pivot below ``floor`` (a lower bound of ``λ_min(A)`` in exact arithmetic,
    hence of every pivot) is round-off and raised to it. False if not
    positive definite.
    """
    for r in range(d):
        s = A[r, r]
        for c in range(r):
            s -= A[r, c] * A[r, c]
        if s < floor:
            s = floor
        if not s > 0.0:
            return False
        A[r, r] = np.sqrt(s)
        inv[r] = 1.0 / A[r, r]
        for i in range(r + 1, d):
            t = A[i, r]
            for c in range(r):
                t -= A[i, c] * A[r, c]
            A[i, r] = t * inv[r]
    return True


@njit(cache=True)
def _exact_reference(G, J4, e_index, jp, jp_slot, start, stop, I6, y, E):
    """``ref = Σ_i ĉ_i (TᵀM_iT)⁻¹ ĉ_iᵀ`` of the joint row with blocks ``jp[start:stop]``."""
    ref = 0.0
    t = start
    while t < stop:
        body = jp_slot[t] // 4
        _axes(G, e_index, body, E)
        y[:] = 0.0
        while t < stop and jp_slot[t] // 4 == body:
            g, k = G[jp[t]], jp_slot[t] % 4
            if k == 0:
                y[0], y[1], y[2] = y[0] + g[0], y[1] + g[1], y[2] + g[2]
            else:
                _cross_add(y, 3, E[k - 1], g)
            t += 1
        _spatial_inertia(J4[body], E, I6)
        if not _cholesky(I6, 6, y[6:], 0.0):
            return 0.0
        for r in range(6):
            acc = y[r]
            for c in range(r):
                acc -= I6[r, c] * y[c]
            y[r] = acc * y[6 + r]
            ref += y[r] * y[r]
    return ref


@njit(cache=True)
def _cholesky_monitored(A, d, inv, row0, G, J4, threshold, ratio, forced, P, W):
    """Lower Cholesky of ``−A`` (leading d×d) dropping redundant joint rows.

    Joint row ``row = row0 + r`` with pivot ``s`` and reference ``ref`` (see
    the module docstring) is dropped when ``s ≤ threshold[row] · ref / ratio``
    and kept when ``s > threshold[row] · ref · ratio``; in between the decision
    is *ambiguous* (counted in the return value, the row dropped for now).
    With ``ratio`` = the spread of body masses, ``s / ref`` lies within a
    factor ``ratio`` of its value in the mass-free metric, so an unambiguous
    decision is the mass-free one. The exact ``ref`` is computed only when
    ``s ≤ threshold · ratio · bound`` (``bound ≥ ref``). ``forced``: the decision
    is ``W.decided[row]`` instead, and a row kept on geometry whose pivot is
    not positive in the true metric stops the elimination (returns 1): the
    masses then span more than the fixed elimination order resolves in double
    precision (its pivot error is ~ε·ratio of its size).
    A dropped row gets a zero column of L and ``inv[r] = 0``.
    """
    ambiguous = 0
    for r in range(d):
        s = -A[r, r]
        for c in range(r):
            s -= A[r, c] * A[r, c]
        row = row0 + r
        if forced:
            dropped = W.decided[row]
            if not dropped and not s > 0.0:
                return 1
        else:
            dropped = s <= threshold[row] * ratio * W.bound[row]
            if dropped:
                ref = _exact_reference(G, J4, P.e_index, P.jp, P.jp_slot, P.jp_ptr[row],
                                       P.jp_ptr[row + 1], W.I6, W.y, W.S3)
                if ref > 0.0 and s > threshold[row] * ref / ratio:
                    dropped = s <= threshold[row] * ref * ratio
                    ambiguous += dropped
        if dropped:
            A[r, r], inv[r] = 1.0, 0.0
            for i in range(r + 1, d):
                A[i, r] = 0.0
            continue
        A[r, r] = np.sqrt(s)
        inv[r] = 1.0 / A[r, r]
        for i in range(r + 1, d):
            t = -A[i, r]
            for c in range(r):
                t -= A[i, c] * A[r, c]
            A[i, r] = t * inv[r]
    return ambiguous


@njit(cache=True, inline="always")
def _forward(L, d, inv, x):
    """``x ← L⁻¹ x``; a dropped row (``inv = 0``) gives 0."""
    for r in range(d):
        t = x[r]
        for c in range(r):
            t -= L[r, c] * x[c]
        x[r] = t * inv[r]


@njit(cache=True, inline="always")
def _backward(L, d, inv, x):
    """``x ← L⁻ᵀ x``; a dropped row gives 0."""
    for r in range(d - 1, -1, -1):
        t = x[r]
        for i in range(r + 1, d):
            t -= L[i, r] * x[i]
        x[r] = t * inv[r]


# ------------------------------------------------------------ numeric phase
@njit(cache=True)
def _assemble(G, J4, J4_min, P, W):
    """Body pivots ``TᵀMT``, joint couplings ``G T`` and the bounds of the reference pivots.

    Returns a body with a singular frame, or −1.
    """
    B, E = W.B, W.E
    B[:] = 0.0
    for i in range(J4.shape[0]):
        _axes(G, P.e_index, i, E[i])
        if not _reciprocal(E[i], W.F[i]):
            return i
        _spatial_inertia(J4[i], E[i], B[P.body_node[i]])
    flat = B.reshape(-1)
    for t in range(P.jp.size):                      # twist form (g_o, Σ_k e_k × g_k)
        g = G[P.jp[t]]
        g0, g1, g2 = g[0], g[1], g[2]
        W.Gj[t, 0], W.Gj[t, 1], W.Gj[t, 2] = g0, g1, g2
        k, o, st = P.jp_slot[t] % 4, P.jp_base[t], P.jp_stride[t]
        if k:
            e = E[P.jp_slot[t] // 4, k - 1]
            g0, g1, g2 = e[1] * g2 - e[2] * g1, e[2] * g0 - e[0] * g2, e[0] * g1 - e[1] * g0
        flat[o] += g0
        flat[o + st] += g1
        flat[o + 2 * st] += g2
    for i in range(J4.shape[0]):    # λ_min(TᵀM̃T) ≥ λ_min(TᵀMT) ≥ 1 / bound
        W.floor[P.body_node[i]] = 1.0 / _twist_bound(J4_min[i], E[i])
    bound = W.bound
    bound[:] = 0.0                  # ref ≤ Σ_i |ĉ_i|² ‖(TᵀM_iT)⁻¹‖
    for t in range(P.side_block.size):
        blk, i = B[P.side_block[t]], P.side_body[t]
        inverse_bound = _twist_bound(J4_min[i], E[i])
        for r in range(P.side_size[t]):
            norm = 0.0
            for a in range(6):
                c = blk[a, r] if P.side_trans[t] else blk[r, a]
                norm += c * c
            bound[P.side_row0[t] + r] += norm * inverse_bound
    return -1


@njit(cache=True)
def _eliminate(G, J4, threshold, ratio, forced, P, W):
    """Block LDLᵀ in place: diagonal blocks become L_k, couplings ``V_qk = A_qk L_k⁻ᵀ``.

    Returns ``(failing body node or −1, number of dropped rows, ambiguous
    decisions)``; the dropped joint rows (numbered from the first joint row)
    are written to ``W.dropped``.
    """
    B, size, col_node = W.B, P.size, P.col_node
    N = size.size
    count = ambiguous = 0
    for k in range(N):
        d, L, iv = size[k], B[k], W.inv[k]
        if P.sign[k] > 0.0:
            if not _cholesky(L, d, iv, W.floor[k]):
                return k, count, ambiguous
        else:
            ambiguous += _cholesky_monitored(L, d, iv, P.node_row0[k], G, J4, threshold,
                                             ratio, forced, P, W)
            if forced and ambiguous:
                return k, count, ambiguous
            for r in range(d):
                if iv[r] == 0.0:
                    W.dropped[count] = P.node_row0[k] + r
                    count += 1
        for e in range(P.col_ptr[k], P.col_ptr[k + 1]):   # V = A L⁻ᵀ, rows independent
            V = B[N + e]
            for r in range(d):
                for i in range(size[col_node[e]]):
                    t = V[i, r]
                    for c in range(r):
                        t -= V[i, c] * L[r, c]
                    V[i, r] = t * iv[r]
        s = P.sign[k]
        for u in range(P.upd_ptr[k], P.upd_ptr[k + 1]):   # A_qp −= σ V_q V_pᵀ
            eq, ep = P.upd_q[u], P.upd_p[u]
            Vq, Vp, T = B[N + eq], B[N + ep], B[P.upd_t[u]]
            for i in range(size[col_node[eq]]):
                for j in range(i + 1 if eq == ep else size[col_node[ep]]):
                    acc = 0.0
                    for c in range(d):
                        acc += Vq[i, c] * Vp[j, c]
                    T[i, j] -= s * acc
    return -1, count, ambiguous


#: statuses of the factorization (``factor_kernel``)
FACTORED, SINGULAR_FRAME, NOT_POSITIVE_DEFINITE, UNPIVOTABLE_JOINT = range(4)


@njit(cache=True)
def _factor_pass(G, J4, J4_min, threshold, ratio, forced, P, W):
    """One assembly and elimination in the metric of the mass blocks ``J4``.

    Returns ``(status, where, dropped count, ambiguous decisions)``: FACTORED,
    SINGULAR_FRAME (body ``where``), NOT_POSITIVE_DEFINITE (a body pivot, node
    ``where``) or, when ``forced``, UNPIVOTABLE_JOINT (a joint row kept on
    geometry that cannot be pivoted in the true metric, joint node ``where``).
    """
    bad = _assemble(G, J4, J4_min, P, W)
    if bad >= 0:
        return SINGULAR_FRAME, bad, 0, 0
    node, count, ambiguous = _eliminate(G, J4, threshold, ratio, forced, P, W)
    if node < 0:
        return FACTORED, node, count, ambiguous
    return (UNPIVOTABLE_JOINT if forced and ambiguous else NOT_POSITIVE_DEFINITE), node, \
        count, ambiguous


@njit(cache=True)
def factor_kernel(G, threshold, P, W):
    """The numeric phase with constraint partitioning decided on geometry (§1.6).

    Factors in the true metric; a joint row whose keep/drop decision could
    differ in the mass-free metric (unit-mass blocks, see ``_cholesky_monitored``)
    triggers a pass in that metric, whose decision the final factorization in
    the true metric then follows. Bodies of equal mass never need it.
    ``threshold`` (joint rows): relative pivot thresholds (hysteresis).
    Returns ``(status, where, dropped count)`` as ``_factor_pass``.
    """
    status, where, count, ambiguous = _factor_pass(G, P.J4, P.J4_min, threshold,
                                                   P.mass_ratio, False, P, W)
    if status != FACTORED or ambiguous == 0:
        return status, where, count
    status, where, count, _ = _factor_pass(G, P.unit_J4, P.unit_J4_min, threshold, 1.0,
                                           False, P, W)
    if status != FACTORED:
        return status, where, count
    W.decided[:] = False
    for i in range(count):
        W.decided[W.dropped[i]] = True
    status, where, count, _ = _factor_pass(G, P.J4, P.J4_min, threshold, 1.0, True, P, W)
    return status, where, count


@njit(cache=True)
def solve_kernel(r, s, P, W, x, lam):
    """``(x, λ)`` of ``[[M, Gᵀ], [G, 0]] [x; λ] = [r; s]`` with the factor in ``W.B``."""
    J4, E, F, Gj, B, size, sign = P.J4, W.E, W.F, W.Gj, W.B, P.size, P.sign
    col_ptr, col_node, inv, z, ap, S3 = P.col_ptr, P.col_node, W.inv, W.z, W.ap, W.S3
    n, N = J4.shape[0], size.size
    R, A = r.reshape(-1, 3), x.reshape(-1, 3)
    z[:] = 0.0
    zf = z.reshape(-1)
    for row in range(P.row_z.size):
        zf[P.row_z[row]] = s[6 * n + row]
    # particular solution a_p of the rigid-body rows: δe_l = Σ_k S_kl f_k
    for i in range(n):
        b = 6 * i
        for l in range(3):
            for a in range(3):
                acc = 0.0
                for k in range(3):
                    skl = s[b + k] if k == l else 0.5 * s[b + 2 + k + l]
                    acc += skl * F[i, k, a]
                ap[4 * i + 1 + l, a] = acc
        ap[4 * i] = 0.0
        # reduced right-hand side Tᵀ (r − M a_p)
        zi = z[P.body_node[i]]
        for p in range(4):
            for a in range(3):
                acc = R[4 * i + p, a]
                for q in range(1, 4):
                    acc -= J4[i, p, q] * ap[4 * i + q, a]
                S3[0, a] = acc
            if p == 0:
                zi[0], zi[1], zi[2] = S3[0, 0], S3[0, 1], S3[0, 2]
            else:
                _cross_add(zi, 3, E[i, p - 1], S3[0])
        for u in range(P.body_axis_ptr[i], P.body_axis_ptr[i + 1]):    # joint rows − G_J a_p
            t = P.jp_axis[u]
            v = ap[P.jp_slot[t]]
            zf[P.jp_z[u]] -= Gj[t, 0] * v[0] + Gj[t, 1] * v[1] + Gj[t, 2] * v[2]
    # forward and backward substitution over the nodes
    for k in range(N):
        d = size[k]
        _forward(B[k], d, inv[k], z[k])
        for e in range(col_ptr[k], col_ptr[k + 1]):
            V, zq = B[N + e], z[col_node[e]]
            for i in range(size[col_node[e]]):
                acc = 0.0
                for c in range(d):
                    acc += V[i, c] * z[k, c]
                zq[i] -= sign[k] * acc
    for k in range(N - 1, -1, -1):
        d = size[k]
        for e in range(col_ptr[k], col_ptr[k + 1]):
            V, xq = B[N + e], z[col_node[e]]
            for c in range(d):
                acc = 0.0
                for i in range(size[col_node[e]]):
                    acc += V[i, c] * xq[i]
                z[k, c] -= acc
        _backward(B[k], d, inv[k], z[k])
        for c in range(d):
            z[k, c] *= sign[k]
    # natural coordinates: a = a_p + T ξ; λ_J; μ from G_RCᵀ μ = r − M a − G_Jᵀ λ_J
    for row in range(P.row_z.size):
        lam[6 * n + row] = zf[P.row_z[row]]
    for i in range(n):
        xi = z[P.body_node[i]]
        A[4 * i, 0], A[4 * i, 1], A[4 * i, 2] = xi[0], xi[1], xi[2]
        for k in range(3):
            A[4 * i + 1 + k] = ap[4 * i + 1 + k]
            _cross_add(A[4 * i + 1 + k], 0, xi[3:], E[i, k])
        for p in range(1, 4):
            for a in range(3):
                acc = R[4 * i + p, a]
                for q in range(4):
                    acc -= J4[i, p, q] * A[4 * i + q, a]
                S3[p - 1, a] = acc
        for u in range(P.body_axis_ptr[i], P.body_axis_ptr[i + 1]):    # − G_Jᵀ λ_J
            t = P.jp_axis[u]
            w, l = S3[P.jp_slot[t] % 4 - 1], lam[P.jp_row[t]]
            w[0], w[1], w[2] = w[0] - Gj[t, 0] * l, w[1] - Gj[t, 1] * l, w[2] - Gj[t, 2] * l
        b = 6 * i
        for k in range(3):
            for l in range(k, 3):             # μ_kl = ½ (f_k · z_l + f_l · z_k)
                fz = 0.0
                for a in range(3):
                    fz += F[i, k, a] * S3[l, a] + F[i, l, a] * S3[k, a]
                lam[b + k if k == l else b + 2 + k + l] = 0.5 * fz


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
        S3=np.zeros((3, 3)), z=np.zeros((N, 6)), ap=np.zeros((4 * n, 3)))


class BlockLDL(KKTSolver):
    """Block rational Cholesky, O(n) for trees and a fixed number of loops."""

    name = "block"
    #: with refinement ~1e-8 up to a spread of 1e12; at 1e15 a pivot of a light
    #: body's loop is pure round-off (ε times the spread)
    max_mass_ratio = 1e12

    def __init__(self, model, drop_tol=DROP_TOL, hold_tol=HOLD_TOL):
        super().__init__(model, drop_tol, hold_tol)
        # the solver owns its symbolic phase and index arrays (both O(n), built once
        # per solver: a run's workspace and stepper each hold one)
        self.structure = structure(model)
        self.plan = BlockPlan(model, self.structure)
        self.work = make_work(self.plan)
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
                    f"masses span a factor {self.plan.arrays.mass_ratio:.1e}, more than the "
                    f"fixed elimination order resolves in double precision; use "
                    f"solver='superlu' or 'dense' (pivoted LU), or rescale the lightest or "
                    f"heaviest bodies")
        if status == SINGULAR_FRAME:
            body, why = where, "singular frame"
        else:
            body, why = self.structure.index[where], "pivot not positive definite"
        return (f"block: body {self.model.bodies[body].name!r}: {why}; its axes e1, e2, e3 "
                f"must stay linearly independent (is the state far off the constraints?)")

    def factor(self, G):
        if self.refine:
            self._G[:] = G        # the Jacobian of this factorization, for refinement
        self._update_thresholds()
        status, where, count = factor_kernel(G, self._joint_threshold, self.plan.arrays,
                                             self.work)
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
        solve_kernel(np.ascontiguousarray(r, float), np.ascontiguousarray(s, float),
                     self.plan.arrays, self.work, x, lam)
        return x, lam
