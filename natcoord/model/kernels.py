"""The constraint kernels: ``g``, ``G``, ``g_t`` and ``γ`` of all constraints at once.

Every row is ``g = Σ_m w_m(t) q_m`` with quadratic forms
``q = Σ c x_a·x_b + Σ d·x_a + c0`` in the slot vectors (see expressions.py).
For one quadratic term ``c x_a·x_b`` with weight ``w`` (and ``ẇ``, ``ẅ``):

    g   += w c x_a·x_b                    G[a] += w c x_b,  G[b] += w c x_a
    g_t += ẇ c x_a·x_b
    γ   −= c (2 w v_a·v_b + 2 ẇ (x_a·v_b + x_b·v_a) + ẅ x_a·x_b)

which is ``G ẍ = −(ġ̇ − G ẍ)`` differentiated twice (eq. 8–10 of the paper and
docs/method.md#13-rigid-body, docs/method.md#15-descriptor-form). Linear and constant terms
follow the same pattern.

The kernels are the compiled core's (natcoord/core/src/constraints.c); this
module names them for the layers above. ``constraint_kernel(terms, X, V, W,
g, g_t, gamma, G)`` takes the model's term arrays as one tuple,
``ConstraintTables.terms`` (packed once per model).
"""
from ..core.engine import constraint_kernel, jacobian_times, jacobian_transpose_times, mass_times

__all__ = ["constraint_kernel", "jacobian_times", "jacobian_transpose_times", "mass_times"]
