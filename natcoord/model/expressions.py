"""Affine vector expressions and scalar quadratic forms in natural coordinates.

Every quantity a joint or force needs is linear in the coordinates (docs/method.md#11-coordinates):
a body-fixed point is ``r = C(r̄) p_i = o + r̄1 e1 + r̄2 e2 + r̄3 e3``. We index
the 3-vectors of all bodies as *slots* ``x_s`` (``s = 4 i + k``, k = 0 for the
origin, 1..3 for the axes), so a point or direction is an :class:`Affine`
expression ``Σ α_s x_s + d``. A dot product of two such expressions is a
:class:`Quadratic` ``Σ q_st x_s·x_t + Σ b_s·x_s + c``: every constraint of the
method (rigid-body, point coincidence, perpendicularity, translation
restriction, distance) has this one form, which is what lets a single compiled
kernel evaluate ``g``, ``G`` and ``γ`` for all of them.
"""
from __future__ import annotations

import numpy as np


class Affine:
    """A world vector ``Σ α_s x_s + d`` (terms: slot -> coefficient)."""

    __slots__ = ("terms", "const")

    def __init__(self, terms=None, const=None):
        self.terms = {s: float(c) for s, c in (terms or {}).items() if c != 0.0}
        self.const = np.zeros(3) if const is None else np.asarray(const, float).copy()

    @classmethod
    def body_point(cls, body_index, local_point):
        """``C(r̄) p_i`` with ``c̄ = (1, r̄)`` (eq. 1 of the paper)."""
        s = 4 * body_index
        r = np.asarray(local_point, float)
        return cls({s: 1.0, s + 1: r[0], s + 2: r[1], s + 3: r[2]})

    @classmethod
    def body_direction(cls, body_index, local_direction):
        """``C(ū) p_i`` with ``c̄ = (0, ū)``."""
        s = 4 * body_index
        u = np.asarray(local_direction, float)
        return cls({s + 1: u[0], s + 2: u[1], s + 3: u[2]})

    @classmethod
    def constant(cls, vector):
        return cls({}, vector)

    def __add__(self, other):
        terms = dict(self.terms)
        for s, c in other.terms.items():
            terms[s] = terms.get(s, 0.0) + c
        return Affine(terms, self.const + other.const)

    def __neg__(self):
        return Affine({s: -c for s, c in self.terms.items()}, -self.const)

    def __sub__(self, other):
        return self + (-other)

    def __rmul__(self, scalar):
        return Affine({s: scalar * c for s, c in self.terms.items()}, scalar * self.const)

    def evaluate(self, X):
        """World value for slot vectors ``X`` (shape (4 n_bodies, 3))."""
        return self.const + self.rate(X)

    def rate(self, V):
        """Time derivative for slot velocities ``V`` (the constant part is fixed)."""
        out = np.zeros(3)
        for s, c in self.terms.items():
            out += c * V[s]
        return out


class Quadratic:
    """Scalar ``Σ q_st x_s·x_t + Σ b_s·x_s + c`` (q keyed by sorted slot pairs)."""

    __slots__ = ("quad", "lin", "const")

    def __init__(self, quad=None, lin=None, const=0.0):
        self.quad = dict(quad or {})
        self.lin = dict(lin or {})
        self.const = float(const)

    def __add__(self, other):
        quad = dict(self.quad)
        for k, c in other.quad.items():
            quad[k] = quad.get(k, 0.0) + c
        lin = {s: b.copy() for s, b in self.lin.items()}
        for s, b in other.lin.items():
            lin[s] = lin[s] + b if s in lin else b.copy()
        return Quadratic(quad, lin, self.const + other.const)

    def __rmul__(self, scalar):
        return Quadratic({k: scalar * c for k, c in self.quad.items()},
                         {s: scalar * b for s, b in self.lin.items()},
                         scalar * self.const)

    def __sub__(self, other):
        return self + (-1.0) * other

    def value(self, X):
        """Value for slot vectors ``X`` (shape (..., n_slots, 3)), shape (...)."""
        X = np.asarray(X, float)
        out = np.full(X.shape[:-2], self.const)
        for (s, t), c in self.quad.items():
            out = out + c * np.einsum("...k,...k->...", X[..., s, :], X[..., t, :])
        for s, b in self.lin.items():
            out = out + X[..., s, :] @ b
        return out

    def rate(self, X, V):
        """Time derivative ``∇q(X)·V`` for slot velocities ``V`` (same shape as X)."""
        X, V = np.asarray(X, float), np.asarray(V, float)
        out = np.zeros(X.shape[:-2])
        for (s, t), c in self.quad.items():
            out = out + c * (np.einsum("...k,...k->...", V[..., s, :], X[..., t, :])
                             + np.einsum("...k,...k->...", X[..., s, :], V[..., t, :]))
        for s, b in self.lin.items():
            out = out + V[..., s, :] @ b
        return out

    def gradient(self, X):
        """``∂q/∂x_s`` as slot vectors (n_slots, 3) for one configuration ``X``."""
        X = np.asarray(X, float)
        out = np.zeros_like(X)
        for (s, t), c in self.quad.items():
            out[s] += c * X[t]
            out[t] += c * X[s]
        for s, b in self.lin.items():
            out[s] += b
        return out

    def pruned(self, tol=0.0):
        """Drop exactly-zero terms (they would only add work to the kernel)."""
        quad = {k: c for k, c in self.quad.items() if abs(c) > tol}
        lin = {s: b for s, b in self.lin.items() if np.any(np.abs(b) > tol)}
        return Quadratic(quad, lin, self.const)


def dot(a: Affine, b: Affine) -> Quadratic:
    """``a · b`` for two affine vector expressions (bilinear in the coordinates)."""
    quad = {}
    for s, cs in a.terms.items():
        for t, ct in b.terms.items():
            key = (s, t) if s <= t else (t, s)
            quad[key] = quad.get(key, 0.0) + cs * ct
    lin = {}
    if a.const.any() or b.const.any():          # else no linear terms (two directions)
        for s, cs in a.terms.items():
            lin[s] = lin.get(s, 0.0) + cs * b.const
        for t, ct in b.terms.items():
            lin[t] = lin.get(t, 0.0) + ct * a.const
        lin = {s: np.asarray(v, float) for s, v in lin.items()}
    return Quadratic(quad, lin, float(a.const @ b.const)).pruned()


def stacked(expressions, n_coords):
    """``(C, c₀)``: affine vector expressions ``r_i`` stacked as ``C p + c₀``
    (3 k × n_coords and 3 k,), ``C(α) = α·1`` per slot term."""
    C, c0 = np.zeros((3 * len(expressions), n_coords)), np.zeros(3 * len(expressions))
    for i, expr in enumerate(expressions):
        for slot, coef in expr.terms.items():
            C[3 * i:3 * i + 3, 3 * slot:3 * slot + 3] = coef * _UNIT
        c0[3 * i:3 * i + 3] = expr.const
    return C, c0


def component(a: Affine, k: int) -> Quadratic:
    """Cartesian component ``a_k`` (linear in the coordinates)."""
    return dot(a, Affine.constant(_UNIT[k]))


_UNIT = np.eye(3)
