"""Compiled kernels: ``g``, ``G``, ``g_t`` and ``γ`` of all constraints at once.

Every row is ``g = Σ_m w_m(t) q_m`` with quadratic forms
``q = Σ c x_a·x_b + Σ d·x_a + c0`` in the slot vectors (see expressions.py).
For one quadratic term ``c x_a·x_b`` with weight ``w`` (and ``ẇ``, ``ẅ``):

    g   += w c x_a·x_b                    G[a] += w c x_b,  G[b] += w c x_a
    g_t += ẇ c x_a·x_b
    γ   −= c (2 w v_a·v_b + 2 ẇ (x_a·v_b + x_b·v_a) + ẅ x_a·x_b)

which is ``G ẍ = −(ġ̇ − G ẍ)`` differentiated twice (eq. 8–10 of the paper and
docs/method.md#13-rigid-body, docs/method.md#15-descriptor-form). Linear and constant terms
follow the same pattern.
"""
from __future__ import annotations

from ..util.jit import njit


@njit(cache=True)
def constraint_kernel(X, V, W, quad_row, quad_a, quad_b, quad_c, quad_w, quad_ga, quad_gb,
                      lin_row, lin_a, lin_d, lin_w, lin_g, const_row, const_c, const_w,
                      g, g_t, gamma, G):
    """Fill ``g, g_t, γ`` (m,) and the Jacobian blocks ``G`` (nnz, 3) in place."""
    g[:] = 0.0
    g_t[:] = 0.0
    gamma[:] = 0.0
    G[:] = 0.0
    for k in range(quad_row.size):
        r, a, b = quad_row[k], quad_a[k], quad_b[k]
        c = quad_c[k]
        w0, w1, w2 = W[quad_w[k], 0], W[quad_w[k], 1], W[quad_w[k], 2]
        xx = X[a, 0] * X[b, 0] + X[a, 1] * X[b, 1] + X[a, 2] * X[b, 2]
        vv = V[a, 0] * V[b, 0] + V[a, 1] * V[b, 1] + V[a, 2] * V[b, 2]
        g[r] += w0 * c * xx
        gamma[r] -= c * (2.0 * w0 * vv + w2 * xx)
        if w1 != 0.0:
            xv = 0.0
            for j in range(3):
                xv += X[a, j] * V[b, j] + X[b, j] * V[a, j]
            g_t[r] += w1 * c * xx
            gamma[r] -= 2.0 * w1 * c * xv
        ga, gb = quad_ga[k], quad_gb[k]
        for j in range(3):
            G[ga, j] += w0 * c * X[b, j]
            G[gb, j] += w0 * c * X[a, j]
    for k in range(lin_row.size):
        r, a = lin_row[k], lin_a[k]
        w0, w1, w2 = W[lin_w[k], 0], W[lin_w[k], 1], W[lin_w[k], 2]
        dx = lin_d[k, 0] * X[a, 0] + lin_d[k, 1] * X[a, 1] + lin_d[k, 2] * X[a, 2]
        dv = lin_d[k, 0] * V[a, 0] + lin_d[k, 1] * V[a, 1] + lin_d[k, 2] * V[a, 2]
        g[r] += w0 * dx
        g_t[r] += w1 * dx
        gamma[r] -= 2.0 * w1 * dv + w2 * dx
        for j in range(3):
            G[lin_g[k], j] += w0 * lin_d[k, j]
    for k in range(const_row.size):
        w = const_w[k]
        g[const_row[k]] += W[w, 0] * const_c[k]
        g_t[const_row[k]] += W[w, 1] * const_c[k]
        gamma[const_row[k]] -= W[w, 2] * const_c[k]


@njit(cache=True)
def jacobian_times(G, pattern_row, pattern_slot, V, out):
    """``out = G V`` for Jacobian blocks ``G`` (nnz, 3) and slot vectors V."""
    out[:] = 0.0
    for k in range(pattern_row.size):
        s = pattern_slot[k]
        out[pattern_row[k]] += G[k, 0] * V[s, 0] + G[k, 1] * V[s, 1] + G[k, 2] * V[s, 2]


@njit(cache=True)
def jacobian_transpose_times(G, pattern_row, pattern_slot, lam, out):
    """``out = Gᵀ λ`` as slot vectors (4 n, 3)."""
    out[:] = 0.0
    for k in range(pattern_row.size):
        s, r = pattern_slot[k], pattern_row[k]
        for j in range(3):
            out[s, j] += G[k, j] * lam[r]


@njit(cache=True)
def mass_times(J4, V, out):
    """``out = M V`` with ``M_i = J4_i ⊗ I3`` (slot vectors, docs/method.md#12-mass-matrix)."""
    for i in range(J4.shape[0]):
        for a in range(4):
            for j in range(3):
                acc = 0.0
                for b in range(4):
                    acc += J4[i, a, b] * V[4 * i + b, j]
                out[4 * i + a, j] = acc
