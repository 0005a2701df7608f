"""Applied forces as generalized forces on natural coordinates (docs/method.md#12-mass-matrix).

A force ``F`` at body point ``r̄`` contributes ``C(r̄)ᵀ F`` (slot k receives
``c̄_k F``); a torque ``τ`` contributes ``½ τ × e_k`` to each axis ``e_k``, whose
virtual work ``Σ_k ½(τ × e_k)·(δφ × e_k) = τ·δφ`` for an orthonormal frame.
Generalized forces are accumulated into an array of slot vectors (4 n, 3).
"""
from __future__ import annotations

import numpy as np

from .expressions import Affine


def _value(spec, t, state):
    return np.asarray(spec(t, state) if callable(spec) else spec, float)


def _distribute(F, expr: Affine, force):
    """``F += C(r̄)ᵀ force`` for an affine point expression."""
    for s, c in expr.terms.items():
        F[s] += c * force


class PointForce:
    """A force (constant (3,) or ``f(t, state) -> (3,)``) at a body point."""

    def __init__(self, point: Affine, force):
        self.point, self.force = point, force

    def apply(self, t, state, X, V, F):
        _distribute(F, self.point, _value(self.force, t, state))

    def potential(self, X):
        return 0.0


class Torque:
    """A torque (constant or ``f(t, state)``) on body ``index``: ``½ τ × e_k``."""

    def __init__(self, index, torque):
        self.index, self.torque = index, torque

    def apply(self, t, state, X, V, F):
        tau = _value(self.torque, t, state)
        s = 4 * self.index
        F[s + 1:s + 4] += 0.5 * np.cross(tau, X[s + 1:s + 4])

    def potential(self, X):
        return 0.0


class SpringDamper:
    """Linear spring–damper between two points: tension ``k (l − l0) + c l̇``."""

    def __init__(self, point_a: Affine, point_b: Affine, stiffness, rest_length, damping):
        self.a, self.b = point_a, point_b
        self.k, self.l0, self.c = float(stiffness), float(rest_length), float(damping)

    def apply(self, t, state, X, V, F):
        d = self.b.evaluate(X) - self.a.evaluate(X)
        length = np.linalg.norm(d)
        n = d / length
        rate = n @ (self.b.rate(V) - self.a.rate(V))
        tension = self.k * (length - self.l0) + self.c * rate
        _distribute(F, self.a, tension * n)
        _distribute(F, self.b, -tension * n)

    def potential(self, X):
        length = np.linalg.norm(self.b.evaluate(X) - self.a.evaluate(X))
        return 0.5 * self.k * (length - self.l0) ** 2
