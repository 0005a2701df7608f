"""Linearization of the descriptor form (issue 10, item 1).

The index-1 system ``M a + Gᵀ λ = f(p, v; θ)``, ``G a = γ(p, v)`` (dynamics.py)
differentiated along a direction ``(dp, dv, dθ)``:

    [[M, Gᵀ], [G, 0]] [da; dλ] = [df − dM a − dGᵀ λ;  dγ − dG a]

The matrix is the one already factored for ``(a, λ)``, so every direction
costs one solve, O(n) with the block solver (Pinocchio's
``computeABADerivatives`` in spirit: ``∂a/∂p, ∂a/∂v`` and here also ``∂λ``
and ``∂/∂θ``). Natural coordinates make the right-hand side exact and cheap:

* ``G`` is affine in p and ``γ`` quadratic in ``(p, v)``, so the central
  difference ``dG = (G(p + dp) − G(p − dp)) / 2`` (likewise ``dγ`` with
  ``(p ± dp, v ± dv)``) has no truncation error: it is the derivative.
* ``M`` depends on the mass parameters only; gravity is constant in p.
* The built-in applied forces (spring–dampers, Cartesian and joint
  spring–dampers, constant point forces and torques) are differentiated
  exactly by the core (``nc_force_derivative``, natcoord/core/src/forces.c,
  beside their laws; Radau's Jacobian and the sensitivity sweep use
  the same function). Forces written in Python (callables of ``(t, state)``,
  force classes of their own) by central differences of their ``apply``
  alone, step ``FORCE_STEP``: O(step²) (:func:`python_force_derivative`, which
  the sensitivity sweep calls back too).

Rows dropped as redundant at the base point stay dropped: the derivative is
that of the kept-rows system, the function ``(p, v) ↦ a`` that
:func:`natcoord.accelerations` evaluates with the same dropped set (also off
the constraint manifold).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import validate
from ..model.core_tables import force_derivative, python_forces, spring_parameter_force
from ..model.drives import parameter_weights
from .workspace import workspace_of
from ..model.kernels import constraint_kernel, jacobian_times, jacobian_transpose_times
from ..model.frozen import State
from ..model.parameters import (PARAMETER_NAMES, SPRING_ATTRIBUTES, driven_joint, named_body,
                                named_load, named_spring, parameter_value)

#: relative step of the central differences of the forces written in Python.
FORCE_STEP = 1e-5


@dataclass(frozen=True)
class Linearization:
    """``(a, λ)`` at a state and their derivatives.

    ``da_dp, da_dv`` (N, N) and ``dlam_dp, dlam_dv`` (m, N) with ``N = 12 n``;
    ``da_dtheta`` (N, k) and ``dlam_dtheta`` (m, k) for the names in
    ``params``; ``dropped`` the rows held at ``λ = dλ = 0``.
    """

    a: np.ndarray
    lam: np.ndarray
    da_dp: np.ndarray
    da_dv: np.ndarray
    dlam_dp: np.ndarray
    dlam_dv: np.ndarray
    da_dtheta: np.ndarray
    dlam_dtheta: np.ndarray
    params: tuple
    dropped: np.ndarray


def linearize(model, state, params=(), solver=None, workspace=None):
    """Derivatives of the accelerations and multipliers at ``state``.

    ``state`` is a :class:`~natcoord.State` or a tuple ``(t, p, v)``;
    ``params`` names model parameters (see :func:`parameter_direction`).
    One factorization, one solve per column; constraint and spring terms
    exact, other applied forces by central differences (module docstring).
    Returns a :class:`Linearization`.
    """
    params = (params,) if isinstance(params, str) else tuple(params)
    for name in params:
        parameter_value(model, name)     # a bad name fails before the 24 n solves
    if isinstance(state, tuple) and len(state) == 3:
        state = State(*state)
    at = linearization_point(model, validate.state(model, state), solver, workspace)
    unit = np.eye(model.n_coords)
    d_p = [at.derivative(dp=e) for e in unit]
    d_v = [at.derivative(dv=e) for e in unit]
    d_th = [at.derivative(param=name) for name in params]
    N, m = model.n_coords, model.n_rows
    return Linearization(at.a, at.lam, _stack(d_p, 0, N), _stack(d_v, 0, N),
                         _stack(d_p, 1, m), _stack(d_v, 1, m), _stack(d_th, 0, N),
                         _stack(d_th, 1, m), tuple(params), at.ws.dropped.copy())


def linearization_point(model, state, solver=None, workspace=None):
    """Solve for ``(a, λ)`` at ``state`` and keep the factorization for directions.

    Returns a :class:`LinearizationPoint`, whose ``derivative(dp, dv, param)``
    costs one solve: the building block of :func:`linearize`; its
    ``projection_derivative`` gives the sensitivities' initial directions.
    """
    t, p, v = state if isinstance(state, tuple) else (state.t, state.p, state.v)
    p, v = (np.array(x, float) for x in (p, v))
    ws = workspace_of(model, workspace, solver)
    a, lam = (x.copy() for x in ws.accelerations(t, p, v))
    return LinearizationPoint(model, ws, t, p, v, a, lam)


def _stack(pairs, k, rows):
    """Columns ``pair[k]`` of the ``(da, dλ)`` pairs as a (rows, len(pairs)) array."""
    return np.column_stack([pair[k] for pair in pairs]) if pairs else np.zeros((rows, 0))


class LinearizationPoint:
    """The base point ``(t, p, v, a, λ)`` with ``K`` factored in ``ws``."""

    def __init__(self, model, ws, t, p, v, a, lam):
        self.model, self.ws, self.t = model, ws, t
        self.a, self.lam = a, lam
        self.X, self.V, self.A = p.reshape(-1, 3), v.reshape(-1, 3), a.reshape(-1, 3)
        self.W = model.tables.weight_table(t, np.zeros((model.n_weights, 3)))
        self.G = ws.G.copy()

    def derivative(self, dp=None, dv=None, param=None):
        """``(da, dλ)`` along ``(dp, dv)`` plus a unit step of parameter ``param``.

        ``[da; dλ] = K⁻¹ [df − dM a − dGᵀ λ;  dγ − dG a]``. A drive parameter
        moves the weight table W, in which g, G, g_t and γ are linear: its
        ``dG, dγ`` are the kernel's at the base point with the table ``∂W/∂θ``.
        """
        dX = np.zeros_like(self.X) if dp is None else np.reshape(dp, (-1, 3))
        dV = np.zeros_like(self.V) if dv is None else np.reshape(dv, (-1, 3))
        r = self.force_derivative(dX, dV)
        theta = {} if param is None else parameter_direction(self.model, param, self)
        r += theta.get("df", 0.0)
        for body, dJ4 in theta.get("dM", ()):
            r[4 * body:4 * body + 4] -= dJ4 @ self.A[4 * body:4 * body + 4]
        dgamma, dG = self.constraint_derivative(dX, dV)
        if "dW" in theta:                      # a drive parameter moves the weights
            _, _, dgamma_w, dG_w = self._constraint_terms(self.X, self.V, theta["dW"])
            dgamma, dG = dgamma + dgamma_w, dG + dG_w
        r -= self._transpose_times(dG, self.lam)
        s = dgamma - self._times(dG, self.A)
        da, dlam = self.ws.solve(r.ravel(), s)
        return da.copy(), dlam.copy()

    def constraint_derivative(self, dX, dV):
        """``(dγ, dG)``: exact central differences (γ quadratic, G affine).

        The odd part of a quadratic is linear: ``dγ = s (γ(x + u) − γ(x − u)) / 2``
        for ``(dX, dV) = s u``, u scaled to unit max-norm against round-off.
        """
        scale = max(np.abs(dX).max(), np.abs(dV).max())
        if scale == 0.0:
            return np.zeros(self.model.n_rows), np.zeros((self.model.tables.pattern_row.size, 3))
        dX, dV = dX / scale, dV / scale
        _, _, gamma_p, G_p = self._constraint_terms(self.X + dX, self.V + dV)
        _, _, gamma_m, G_m = self._constraint_terms(self.X - dX, self.V - dV)
        return 0.5 * scale * (gamma_p - gamma_m), 0.5 * scale * (G_p - G_m)

    def velocity_residual_derivative(self, dX):
        """``∂(G v + g_t)/∂p dp`` at the base ``v``: exact central difference
        (``G`` affine in p, ``g_t`` at most quadratic), scaled as in
        :meth:`constraint_derivative`."""
        scale = np.abs(dX).max()
        if scale == 0.0:
            return np.zeros(self.model.n_rows)
        dX = dX / scale
        _, g_t_p, _, G_p = self._constraint_terms(self.X + dX, self.V)
        _, g_t_m, _, G_m = self._constraint_terms(self.X - dX, self.V)
        return 0.5 * scale * (self._times(G_p - G_m, self.V) + g_t_p - g_t_m)

    def projection_derivative(self, dp, dv, param=None):
        """Derivative of the projection of projection.py at this (projected) point.

        The projected ``(p⁺, v⁺)`` satisfies ``g(p⁺) = 0``, ``G v⁺ + g_t = 0``
        and moves from the unprojected point along ``M⁻¹ Gᵀ μ``; linearized
        (``K`` factored here, dropped rows ignored as in the projection):

            [[M, Gᵀ], [G, 0]] [Δp; μ] = [0; −G dp],                      dp⁺ = dp + Δp
            [[M, Gᵀ], [G, 0]] [Δv; ν] = [0; −(G dv + ∂(G v + g_t)/∂p dp⁺)],
                                                                     dv⁺ = dv + Δv

        i.e. the M-orthogonal projection of ``dp`` onto the tangent space and
        of ``dv`` onto the linearized velocity constraint. A drive parameter
        ``param`` moves the constraints themselves: ``∂g/∂θ`` joins ``G dp`` and
        ``∂(G v + g_t)/∂θ`` the velocity right-hand side. Terms of the size of
        the multipliers μ (the residual before projection) are neglected:
        the Jacobian of the simplified Newton factorization and ``∂M/∂θ``
        multiply μ. The sweep of :func:`~natcoord.sensitivities` solves these at a
        step's end with ``K`` factored where the integrator's Newton factored it, at
        the unprojected end point (``G̃`` a distance δ = O(μ) off): the right-hand
        sides as here, which changes the result at O(δ²), below the terms neglected
        (module docstring of :mod:`natcoord.analysis.sensitivity`).
        """
        zero = np.zeros(self.model.n_coords)
        position = self._times(self.G, np.reshape(dp, (-1, 3)))
        rate = np.zeros(self.model.n_rows)
        if param is not None and param.startswith("drive:"):     # it moves the manifold
            dW = parameter_direction(self.model, param, self)["dW"]
            g_w, g_t_w, _, G_w = self._constraint_terms(self.X, self.V, dW)
            position += g_w
            rate += self._times(G_w, self.V) + g_t_w
        dp = dp + self.ws.solve(zero, -position)[0]
        rate += self._times(self.G, np.reshape(dv, (-1, 3)))
        rate += self.velocity_residual_derivative(np.reshape(dp, (-1, 3)))
        return dp, dv + self.ws.solve(zero, -rate)[0]

    def _constraint_terms(self, X, V, W=None):
        """``(g, g_t, γ, G)`` at ``(X, V)`` with the weight table ``W`` (default: at t)."""
        tables, m = self.model.tables, self.model.n_rows
        g, g_t, gamma = np.zeros(m), np.zeros(m), np.zeros(m)
        G = np.zeros((tables.pattern_row.size, 3))
        constraint_kernel(tables.terms, X, V, self.W if W is None else W, g, g_t,
                          gamma, G)
        return g, g_t, gamma, G

    def _times(self, G, V):
        out = np.zeros(self.model.n_rows)
        jacobian_times(G, self.model.tables.pattern_row, self.model.tables.pattern_slot, V, out)
        return out

    def _transpose_times(self, G, lam):
        out = np.zeros_like(self.X)
        jacobian_transpose_times(G, self.model.tables.pattern_row,
                                 self.model.tables.pattern_slot, lam, out)
        return out

    def force_derivative(self, dX, dV):
        """``df = ∂f/∂p dp + ∂f/∂v dv`` (4 n, 3): the built-in forces' exact derivative
        (the core's), the forces written in Python's — the model's and the workspace's
        (a run's joint torques) — by central differences; gravity is constant."""
        dX, dV = np.ascontiguousarray(dX, dtype=float), np.ascontiguousarray(dV, dtype=float)
        F = force_derivative(self.model, self.X, self.V, dX, dV, np.empty_like(self.X))
        python_force_derivative((*python_forces(self.model), *self.ws.extra_forces),
                                self.t, self.X, self.V, dX, dV, F)
        return F


def python_force_derivative(forces, t, X, V, dX, dV, F):
    """``F += (f(x + h dx) − f(x − h dx)) / 2h``: the derivative of the applied
    ``forces`` written in Python at ``(t, X, V)`` (slot arrays (4 n, 3)) along
    ``(dX, dV)``, by central differences of their ``apply`` alone, all forces at once;
    ``h dx`` has max-norm ``FORCE_STEP · max(1, |x|∞)``. The one law of their
    derivative: :func:`linearize` and the sensitivity sweep (its ``force_derivative``
    hook) use it. A zero direction adds nothing."""
    size = max(np.abs(dX).max(), np.abs(dV).max())
    if not forces or size == 0.0:
        return F
    h = FORCE_STEP * max(1.0, np.abs(X).max(), np.abs(V).max()) / size
    for sign in (1.0, -1.0):
        Xs, Vs = X + sign * h * dX, V + sign * h * dV
        out = np.zeros_like(F)
        state = State(t, Xs.ravel(), Vs.ravel())
        for force in forces:
            force.apply(t, state, Xs, Vs, out)
        F += sign / (2.0 * h) * out
    return F


# ------------------------------------------------------------- parameters
def drive_parameter_weights(model, name):
    """``t ↦ ∂W/∂θ`` (n_weights, 3) of the drive parameter ``name``
    (``"drive:<joint>:<parameter>"``; :func:`~natcoord.model.drives.parameter_weights`)."""
    key = name.partition(":")[2]
    drive = driven_joint(model, name, key)[1].drive
    return parameter_weights(model.tables.weights, drive, key.rpartition(":")[2])


def parameter_direction(model, name, at):
    """``dM`` and ``df`` of one named parameter at the base point ``at``.

    * ``"mass:<body>"``: the mass m with centre of mass and central inertia
      fixed: ``dJ4 = [[1, c̄ᵀ], [c̄, c̄ c̄ᵀ]]``, ``df = C(c̄)ᵀ g``.
    * ``"inertia:<body>"``: a scale s of the central inertia ``s I_c`` at
      s = 1: ``dJ4 = [[0, 0], [0, ½ tr(I_c) 1 − I_c]]``.
    * ``"gravity:x|y|z"``: a component of g: ``df = C(c̄)ᵀ m e_k`` per body.
    * ``"stiffness:<k>"``, ``"damping:<k>"``, ``"rest_length:<k>"``: of the
      k-th spring (0-based, order of ``add_spring``): ``df = ∂T/∂θ`` times the
      spring's unit force pair, ``∂T/∂k = l − l0``, ``∂T/∂c = l̇``, ``∂T/∂l0 = −k``,
      by the core's law (:func:`~natcoord.model.core_tables.spring_parameter_force`).
    * ``"load:<k>"``: a scale s of the k-th point force or torque (0-based,
      order of ``add_force``/``add_torque``) at s = 1: the load is linear in
      s, so ``df`` is its generalized force at the base point, exactly, also
      for a load given as a function of ``(t, state)``.
    * ``"drive:<joint>:<parameter>"``: a parameter of a declarative drive
      (``amplitude``, ``rate``, ``coefficients.1``, ``s.3``, …; see
      :meth:`~natcoord.Drive.parameter`): ``dW = ∂W/∂θ``, the derivative of
      the weight table (complex step through the compiled law, exact).
    """
    kind, _, key = name.partition(":")
    if kind == "drive":
        return {"dW": drive_parameter_weights(model, name)(at.t)}
    df = np.zeros((4 * model.n_bodies, 3))
    if kind in ("mass", "inertia"):
        body = named_body(model, name, key)
        c = np.concatenate([[1.0], body.com])
        if kind == "inertia":
            dJ4 = np.zeros((4, 4))
            dJ4[1:, 1:] = 0.5 * np.trace(body.inertia) * np.eye(3) - body.inertia
            return {"dM": [(body.index, dJ4)]}
        df[4 * body.index:4 * body.index + 4] = np.outer(c, model.gravity)
        return {"dM": [(body.index, np.outer(c, c))], "df": df}
    if kind == "gravity" and key in ("x", "y", "z"):
        e = np.eye(3)["xyz".index(key)]
        for body in model.bodies:
            c = np.concatenate([[1.0], body.com])
            df[4 * body.index:4 * body.index + 4] = body.mass * np.outer(c, e)
        return {"df": df}
    if kind in SPRING_ATTRIBUTES:
        named_spring(model, name, key)           # a spring's number, or the KeyError
        spring_parameter_force(model, int(key), kind, at.X, at.V, df)
        return {"df": df}
    if kind == "load":
        load = named_load(model, name, key)
        load.apply(at.t, State(at.t, at.X.ravel(), at.V.ravel()), at.X, at.V, df)
        return {"df": df}
    raise KeyError(f"unknown parameter {name!r}: use {PARAMETER_NAMES}")
