"""Applied forces as generalized forces on natural coordinates (docs/method.md#12-mass-matrix).

A force ``F`` at body point ``r̄`` contributes ``C(r̄)ᵀ F`` (slot k receives
``c̄_k F``); a torque ``τ`` contributes ``½ τ × e_k`` to each axis ``e_k``, whose
virtual work ``Σ_k ½(τ × e_k)·(δφ × e_k) = τ·δφ`` for an orthonormal frame.
Generalized forces are accumulated into an array of slot vectors (4 n, 3).
Every force carries ``where``, the description its errors name it by.

The spring–dampers here (linear, Cartesian, joint) describe their springs — ends,
coordinates, parameters — for the builder, the model files, ``with_parameters``
and the parameter names; their law, energy and derivative are the compiled
core's alone (natcoord/core/src/forces.c, reached through
:mod:`natcoord.model.core_tables`). Point forces and torques keep ``apply``: a
value given as a callable of ``(t, state)`` is Python the core calls back, and
linearization and the sensitivities scale a load by it.
"""
from __future__ import annotations

import numpy as np

from ..util.checks import finite_triple
from .expressions import Affine


def _value(spec, t, state, where):
    """A constant (validated by the builder) or ``f(t, state)``, checked at every call."""
    if not callable(spec):
        return spec
    return finite_triple(spec(t, state), "f(t, state)", where, t)


def _distribute(F, expr: Affine, force):
    """``F += C(r̄)ᵀ force`` for an affine point expression."""
    for s, c in expr.terms.items():
        F[s] += c * force


class PointForce:
    """A force (constant (3,) or ``f(t, state) -> (3,)``, N) at a body point."""

    def __init__(self, point: Affine, force, where="force"):
        self.point, self.force, self.where = point, force, where

    def apply(self, t, state, X, V, F):
        _distribute(F, self.point, _value(self.force, t, state, self.where))


class Torque:
    """A torque (constant or ``f(t, state)``, N·m) on body ``index``: ``½ τ × e_k``."""

    def __init__(self, index, torque, where="torque"):
        self.index, self.torque, self.where = index, torque, where

    def apply(self, t, state, X, V, F):
        tau = _value(self.torque, t, state, self.where)
        s = 4 * self.index
        E = X[s + 1:s + 4]                 # τ × e_k written out: np.cross costs ~30 µs here
        F[s + 1:s + 4, 0] += 0.5 * (tau[1] * E[:, 2] - tau[2] * E[:, 1])
        F[s + 1:s + 4, 1] += 0.5 * (tau[2] * E[:, 0] - tau[0] * E[:, 2])
        F[s + 1:s + 4, 2] += 0.5 * (tau[0] * E[:, 1] - tau[1] * E[:, 0])


class SpringDamper:
    """Linear spring–damper between two points: tension ``k (l − l0) + c l̇`` along the
    unit vector from a to b (pulling the ends together when stretched), energy
    ``½ k (l − l0)²``. ``a, b`` are the end points' affine expressions."""

    def __init__(self, point_a: Affine, point_b: Affine, stiffness, rest_length, damping,
                 where="spring"):
        self.a, self.b, self.where = point_a, point_b, where
        self.k, self.l0, self.c = float(stiffness), float(rest_length), float(damping)


class CartesianSpringDamper:
    """Per-axis spring–damper between two points (no direction singularity).

    With ``d_k = (r_b − r_a) · h_k`` along three directions ``h_k`` (constant for
    a ground frame, body-fixed otherwise; each a quadratic form of the
    coordinates, ``components``), the energy is ``V = ½ Σ k_k (d_k − d0_k)²`` and the
    generalized force ``f = −Σ_k (k_k (d_k − d0_k) + c_k ḋ_k) ∇d_k`` — exactly
    ``−∂V/∂p`` plus damping, including the reaction on a moving frame body.
    ``rest`` may be zero.
    """

    def __init__(self, components, stiffness, damping, rest):
        self.components = tuple(components)       # Quadratic d_k, k = 0..2
        self.k = np.asarray(stiffness, float)
        self.c = np.asarray(damping, float)
        self.rest = np.asarray(rest, float)


class JointSpringDamper:
    """Spring–damper on one coordinate q of a joint (``Mechanism.add_joint_spring``).

    The joint's own coordinate (:func:`natcoord.model.joints.axial_coordinates`,
    ``universal_coordinates``): a slide ``s = Q(p)`` (``forms`` one quadratic form,
    ``angle`` False) or an angle ``θ = atan2(Q_y(p), Q_x(p))`` (``forms = (Q_x, Q_y)``).
    Energy ``V = ½ k δ²``, ``δ = q − q_rest`` (an angle's δ wrapped into (−π, π]:
    the coordinates hold no winding number), generalized force
    ``f = −(k δ + c q̇) ∇q`` — exactly ``−∂V/∂p`` plus the damping, which on the
    constraint manifold is the joint torque ``τ = −k δ − c θ̇`` about the axis on
    body b and ``−τ`` on body a (a force along the axis for a slide).
    """

    def __init__(self, forms, angle, stiffness, rest, damping, where):
        self.forms, self.angle = tuple(forms), bool(angle)
        self.k, self.rest, self.c = float(stiffness), float(rest), float(damping)
        self.where = where
