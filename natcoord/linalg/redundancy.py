"""Redundant constraints by sequential elimination in the range space.

Used by the reference backends. With ``P = M⁻¹ − M⁻¹G_Rᵀ(G_R M⁻¹G_Rᵀ)⁻¹G_R M⁻¹
= T (TᵀMT)⁻¹ Tᵀ`` (``T`` spanning the null space of ``G_R``)
in the mass-free metric (``M`` with every body scaled to unit mass,
:func:`~natcoord.linalg.base.unit_mass_blocks`: redundancy is geometry)
(block diagonal: the rigid-body rows ``G_R`` eliminated body by body, never
dropped), the joint rows' Schur complement is ``S_J = G_J P G_Jᵀ``. Its
Cholesky factorization in row order drops row k when the pivot is below
``threshold_k · (S_J)_kk``: the row is then (numerically) a combination of the
rows kept before it. This is the constraint partitioning of docs/method.md#16-linear-solve,
done densely.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..model.frozen import RIGID
from .base import unit_mass_blocks


def rigid_body_projector(model, G):
    """Per-body ``P_i`` (n, 12, 12) for Jacobian ``G`` (CSR, m × 12 n), mass-free metric."""
    n = model.n_bodies
    rigid = G[:6 * n].tocoo()
    body = rigid.row // 6
    GR = np.zeros((n, 6, 12))
    np.add.at(GR, (body, rigid.row % 6, rigid.col - 12 * body), rigid.data)
    # P = T (Tᵀ M T)⁻¹ Tᵀ for T spanning the null space of G_R (the body's rigid
    # velocities; the same matrix for M positive definite), so that only the 6×6
    # spatial inertia TᵀMT is inverted, as the block factorization does: a thin
    # plate's J4 is nearly singular, its spatial inertia is not (docs/method.md §1.2)
    M = np.einsum("iab,kl->iakbl", unit_mass_blocks(model), np.eye(3)).reshape(n, 12, 12)
    T = np.linalg.svd(GR)[2][:, 6:].transpose(0, 2, 1)   # (n, 12, 6)
    return T @ np.linalg.solve(T.transpose(0, 2, 1) @ M @ T, T.transpose(0, 2, 1))


def redundant_rows(model, G, row_threshold):
    """Sorted indices of joint rows dropped by sequential elimination.

    ``row_threshold`` (m,): relative pivot threshold of each row.
    """
    assert np.all(model.row_kind[:6 * model.n_bodies] == RIGID)
    n = model.n_bodies
    P = rigid_body_projector(model, G)
    P = sp.bsr_matrix((P, np.arange(n), np.arange(n + 1)), shape=(12 * n, 12 * n))
    GJ = G[6 * n:]
    S = np.asarray((GJ @ P @ GJ.T).todense())
    reference = np.diag(S).copy()
    threshold = row_threshold[6 * n:]
    dropped = []
    for k in range(S.shape[0]):
        pivot = S[k, k]
        if pivot <= threshold[k] * reference[k] or reference[k] <= 0.0:
            dropped.append(k)
            S[k, :] = 0.0
            S[:, k] = 0.0
            continue
        S[k + 1:, k + 1:] -= np.outer(S[k + 1:, k], S[k, k + 1:]) / pivot
    return np.asarray(dropped, np.int64) + 6 * n
