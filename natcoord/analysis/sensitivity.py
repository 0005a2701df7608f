"""Trajectory sensitivities by internal numerical differentiation (issue 10, item 2;
docs/method.md#18-sensitivities).

Bock's internal numerical differentiation, done analytically: the exact
derivative of the discrete map that :func:`~natcoord.simulate` computes, with
its accepted step sizes frozen. One step of DOPRI5 from the projected state
``y = (p, v)`` (integrate.py) and its derivative along a direction ``dy`` and
a parameter ``θ``:

    Y_s = y + h Σ_j a_sj K_j,      K_s = (v_s, a(t + c_s h, Y_s; θ))
    dY_s = dy + h Σ_j a_sj dK_j,   dK_s = (dv_s, ∂a/∂(p, v) dY_s + ∂a/∂θ)

``∂a`` from :meth:`~natcoord.dynamics.linearization.LinearizationPoint.derivative`: one
factorization per stage, one solve per direction. The new state ``y + h Σ b_j
K_j`` is projected onto ``g = 0``, ``G v + g_t = 0``, and its derivative
through :meth:`~natcoord.dynamics.linearization.LinearizationPoint.projection_derivative`
(the tangent-space projection of ``dp`` in the M-metric and the linearized
velocity constraint). FSAL as in the integrator: the next step's ``K_0`` is
``(v⁺, a)`` of the last stage, ``dK_0 = (dv⁺, da_6)``. Outputs between steps
differentiate the (linear) dense output formula and then the projection.
Rows dropped as redundant stay dropped.

The steps are the forward run's own. The compiled sweep
(:mod:`natcoord.analysis.compiled_sensitivity`) rides along it inside the stepper's
compiled chunks, a few steps behind, with the stage factorizations the
stepper kept for it; the Python sweep re-evaluates the stages from a forward
run that records every accepted state. A function beside ``simulate`` rather
than an option of it: ``simulate`` only hands its chunks to the sweep.
A failed or interrupted run keeps what the compiled sweep reached: the
exception's ``.sensitivities`` (the Python sweep, which starts after the
forward run, has none).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from . import compiled_sensitivity
from ..dynamics.linearization import linearization_point
from ..model.parameters import parameter_value
from ..dynamics.workspace import Workspace
from ..integrate.base import IntegrationError, SimulationInterrupted
from ..integrate.dormand_prince import A, B, C, dense_output
from ..integrate.simulate import simulate
from ..linalg.base import DROP_TOL, HOLD_TOL

#: directions of the initial state (columns: a basis of the tangent space)
INITIAL = ("p0", "v0")
#: use the compiled sweep (:mod:`natcoord.analysis.compiled_sensitivity`) where it applies;
#: False forces the Python sweep
COMPILED = True


@dataclass(frozen=True)
class Sensitivities:
    """A solution and the derivatives of its outputs.

    ``solution``: the :class:`~natcoord.Solution` at the outputs (k of them);
    ``dp``, ``dv`` (k, 12 n, c): ``∂p(t)/∂θ_j``, ``∂v(t)/∂θ_j`` for the columns
    ``columns`` (c labels: ``"p0[i]"``, ``"v0[i]"`` and the parameter names);
    ``basis``: for ``"p0"``/``"v0"`` the (12 n, d) tangent directions ``Z`` the
    columns start from (see :func:`sensitivities`); ``stats``: ``time`` (wall
    time), ``steps``, ``compiled`` (whether the sweep ran compiled, interleaved
    with the forward run) and, for the Python sweep, ``derivative_time`` (the
    sweep after the forward runs).
    """

    solution: object
    columns: tuple
    dp: np.ndarray
    dv: np.ndarray
    basis: dict
    stats: dict

    def point(self, body, point, local=False):
        """``∂r/∂θ`` (k, 3, c) of a body point (``r = C(r̄) p``, §1.1)."""
        expr = self.solution.model.point_expression(body, point, local)
        dX = self.dp.reshape(self.dp.shape[0], -1, 3, self.dp.shape[2])
        return sum(c * dX[:, s] for s, c in expr.terms.items())


def sensitivities(model, t_end, params=INITIAL, t_eval=None, **options):
    """Solution of ``simulate(model, t_end, t_eval=t_eval, **options)`` and
    ``∂(p, v)(t)/∂θ`` at its outputs (module docstring).

    ``params``: names among ``"p0"``, ``"v0"`` and the model parameters of
    :func:`~natcoord.dynamics.linearization.parameter_direction` (``mass:<body>``,
    ``inertia:<body>``, ``gravity:x|y|z``, ``stiffness:<k>``, ``damping:<k>``,
    ``rest_length:<k>``, ``load:<k>``, ``drive:<joint>:<parameter>``). The
    initial state (``initial_state`` or ``assemble(model).state``) is held fixed
    for model parameters; a drive parameter moves the constraint manifold, so
    its initial direction is that of the initial state's projection onto it.

    ``"p0"`` gives d columns, d = dim ker G(p0) (kept rows): the initial
    direction ``(dp0, dv0) = (z_i, w_i)`` with ``Z = (z_1 … z_d)`` an
    M-orthonormal basis of the tangent space (``Zᵀ M Z = 1``) and ``w_i`` the
    M-smallest velocity change that keeps ``G v + g_t = 0`` to first order (the
    derivative of the projection). ``"v0"`` gives d columns ``(0, z_i)``. A
    tangent perturbation ``δp0`` has the coordinates ``Zᵀ M δp0``.

    Only ``method="dopri5"`` with ``projection="position+velocity"`` (the
    defaults) is differentiated. The sweep is compiled
    (:mod:`natcoord.analysis.compiled_sensitivity`) for the models, solver and
    parameters it covers (:func:`~natcoord.analysis.compiled_sensitivity.supported`;
    ``stats["compiled"]``): it rides along the one forward run, in the same
    compiled call, a few steps behind it, reusing the stage factorizations the
    stepper keeps for those steps. Otherwise the sweep is Python, after a
    forward run that records every step (and, with ``t_eval``, a second one
    for the outputs). Returns :class:`Sensitivities`. A failed or interrupted
    run raises as ``simulate`` does; with the compiled sweep the exception also
    carries ``.sensitivities``, those of its partial solution (NaN at a record
    the sweep did not reach; None if no step was taken), else None.
    """
    if options.get("projection", "position+velocity") != "position+velocity":
        raise ValueError(f"sensitivities: projection={options['projection']!r} is not "
                         f"supported; only 'position+velocity' is differentiated")
    if options.get("u") is not None:
        raise ValueError("sensitivities: joint torques u= are not differentiated; model "
                         "the load as a force of the model")
    if options.get("method", "dopri5") != "dopri5":
        raise ValueError(f"sensitivities: method={options['method']!r} is not supported; "
                         f"only the steps of 'dopri5' are differentiated")
    params = _checked(model, params)
    tols = options.get("drop_tol", DROP_TOL), options.get("hold_tol", HOLD_TOL)
    ws = Workspace(model, options.get("solver"), *tols)
    compiled = COMPILED and compiled_sensitivity.supported(model, ws.solver, params)
    start = time.perf_counter()
    stats = {"compiled": compiled}
    tangent = _Tangent(ws, params) if compiled else None
    try:
        if compiled:
            solution = simulate(model, t_end, t_eval=t_eval, _sweep=tangent, **options)
            d_out = tangent.result(solution)
            columns, basis, steps = tangent.columns, tangent.basis, solution.stats["steps"]
        else:
            steps = simulate(model, t_end, **options)
            solution = steps if t_eval is None else simulate(model, t_end, t_eval=t_eval,
                                                             **options)
            tick = time.perf_counter()
            columns, dy, thetas, basis = _initial_directions(
                ws, steps.t[0], np.concatenate([steps.p[0], steps.v[0]]), params)
            d_out = _sweep(ws, steps, solution, dy, thetas)
            stats["derivative_time"], steps = time.perf_counter() - tick, steps.t.size - 1
    except (IntegrationError, SimulationInterrupted) as exc:
        exc.sensitivities = tangent.partial(exc.solution, stats, start) if compiled else None
        if exc.sensitivities is not None:
            exc.args = (f"{exc.args[0]}; the sensitivities reached on .sensitivities",)
        raise
    stats.update(time=time.perf_counter() - start, steps=steps)
    return _sensitivities(solution, columns, d_out, basis, stats)


def _sensitivities(solution, columns, d_out, basis, stats):
    """:class:`Sensitivities` from the derivatives ``d_out`` (k, c, 2N) at the records."""
    n = solution.model.n_coords
    return Sensitivities(solution, columns, d_out[:, :, :n].transpose(0, 2, 1),
                         d_out[:, :, n:].transpose(0, 2, 1), basis, stats)


class _Tangent:
    """The compiled sweep riding along the forward run (``simulate``'s ``_sweep``):
    the initial directions at its first state (:meth:`start`), then the
    stepper's rounds of steps, each differentiated with the stage
    factorizations the stepper kept (:meth:`advance`, in place of the
    stepper's own chunk call)."""

    def __init__(self, ws, params):
        self.ws, self.params = ws, params
        self.sweep = None                          # until start()
        self._parts = []

    def start(self, t, y):
        self.t0 = t
        self.columns, self.dy0, thetas, self.basis = _initial_directions(self.ws, t, y,
                                                                         self.params)
        self.sweep = compiled_sensitivity.Sweep(self.ws.solver, self.ws.dropped, self.dy0,
                                                thetas)

    def advance(self, args, repeat=True):
        """:meth:`~natcoord.analysis.compiled_sensitivity.Sweep.advance`, keeping the derivatives."""
        out = self.sweep.advance(args, repeat)
        self._parts.append(out[-1])
        return out

    def result(self, solution):
        """The derivatives (k, c, 2N) at ``solution``'s records: ``dy0`` at an initial
        record (recorded before the first step), then the swept ones."""
        initial = solution.t.size - sum(part.shape[0] for part in self._parts)
        if initial not in (0, 1):
            raise RuntimeError(f"sensitivities: {solution.t.size - initial} derivatives for "
                               f"{solution.t.size} records")
        parts = [self.dy0[None]] * initial + self._parts
        # one copy at most (each new array of a long run faults its pages in)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def partial(self, solution, stats, start):
        """:class:`Sensitivities` of a failed run's partial ``solution``, or None if it
        failed before the first step: the swept records, then the last accepted
        state (where the sweep stands), NaN at any record it did not reach."""
        if self.sweep is None:
            return None
        swept = self._swept()
        if solution.t.size and solution.t[0] == self.t0:      # recorded before any step
            swept = np.concatenate([self.dy0[None], swept])
        d_out = np.full((solution.t.size,) + self.dy0.shape, np.nan)
        k = min(swept.shape[0], solution.t.size)
        d_out[:k] = swept[:k]
        for t, dy in self.sweep.last_step():       # a final record at the last step's ends
            if k < solution.t.size and solution.t[k] == t:
                d_out[k] = dy
        stats = dict(stats, time=time.perf_counter() - start,
                     steps=solution.stats["steps"])
        return _sensitivities(solution, self.columns, d_out, self.basis, stats)

    def _swept(self):
        return np.concatenate(self._parts) if self._parts else np.zeros((0,) + self.dy0.shape)


def _checked(model, params):
    if isinstance(params, str):
        params = (params,)
    if not params:
        raise ValueError("sensitivities: params names no parameter; give e.g. ['p0'] or "
                         "['mass:<body>']")
    for name in params:
        if name not in INITIAL:
            parameter_value(model, name)         # KeyError naming the parameter
    if len(set(params)) != len(params):
        raise ValueError(f"sensitivities: params {list(params)} name a parameter twice")
    return tuple(params)


def _initial_directions(ws, t, y, params):
    """Column labels, initial ``dy`` (c, 2N), the parameter of each column (or
    None) and the tangent basis, at the initial state ``(t, y = (p, v))``."""
    model, n = ws.model, ws.model.n_coords
    # only initial-state and drive columns start off zero: the rest need no solve here
    moved = any(name in INITIAL or name.startswith("drive:") for name in params)
    at = linearization_point(model, (t, y[:n], y[n:]), workspace=ws) if moved else None
    Z = tangent_basis(ws, at.G) if set(params) & set(INITIAL) else None
    columns, dy, thetas, basis = [], [], [], {}
    zero = np.zeros(n)
    for name in params:
        if name in INITIAL:
            basis[name] = Z
            for i, z in enumerate(np.ascontiguousarray(Z.T)):   # the core takes C order
                columns.append(f"{name}[{i}]")
                dy.append(np.concatenate(at.projection_derivative(z, zero)
                                         if name == "p0" else (zero, z)))
                thetas.append(None)
        else:                      # a drive parameter moves the initial state's manifold
            columns.append(name)
            dy.append(np.concatenate(at.projection_derivative(zero, zero, name))
                      if name.startswith("drive:") else np.zeros(2 * n))
            thetas.append(name)
    return tuple(columns), np.array(dy).reshape(len(columns), 2 * n), thetas, basis


def tangent_basis(ws, G):
    """M-orthonormal basis ``Z`` (N, d) of ``ker G`` (kept rows): ``Z = Z₀ L⁻ᵀ`` with
    ``Z₀`` orthonormal (SVD) and ``L Lᵀ = Z₀ᵀ M Z₀``."""
    model = ws.model
    kept = np.setdiff1d(np.arange(model.n_rows), ws.dropped)
    Z0 = scipy.linalg.null_space(model.tables.csr(G).toarray()[kept])
    L = np.linalg.cholesky(Z0.T @ (model.mass_matrix @ Z0))
    return scipy.linalg.solve_triangular(L, Z0.T, lower=True).T


def _stage(ws, t, y, dy, thetas):
    """``K = (v, a)`` at ``(t, y)`` and ``dK`` (c, 2N) along ``dy`` and ``θ``."""
    n = ws.model.n_coords
    at = linearization_point(ws.model, (t, y[:n], y[n:]), workspace=ws)
    da = [at.derivative(d[:n], d[n:], theta)[0] for d, theta in zip(dy, thetas)]
    return np.concatenate([y[n:], at.a]), np.hstack([dy[:, n:], np.reshape(da, (len(dy), n))])


def _projected(ws, t, p, v, dy, thetas):
    """Derivative (c, 2N) of the projection at the projected ``(t, p, v)``."""
    n = ws.model.n_coords
    at = linearization_point(ws.model, (t, p, v), workspace=ws)
    return np.array([np.concatenate(at.projection_derivative(d[:n], d[n:], theta))
                     for d, theta in zip(dy, thetas)])


def _sweep(ws, steps, out, dy, thetas):
    """``dy`` (c, 2N) at the first step carried along ``steps``; returns the
    derivatives (k, c, 2N) at the outputs ``out`` (a Solution on the same steps)."""
    n, c = ws.model.n_coords, len(thetas)
    result = np.empty((out.t.size, c, 2 * n))
    t, y = steps.t[0], np.concatenate([steps.p[0], steps.v[0]])
    k = 0
    if out.t.size and out.t[0] == t:
        result[0], k = dy, 1
    K, dK = np.empty((7, 2 * n)), np.empty((c, 7, 2 * n))
    K[0], dK[:, 0] = _stage(ws, t, y, dy, thetas)
    for t_new, p_new, v_new in zip(steps.t[1:], steps.p[1:], steps.v[1:]):
        h = t_new - t
        for s in range(1, 7):
            K[s], dK[:, s] = _stage(ws, t + C[s] * h, y + h * (A[s] @ K[:s]),
                                    dy + h * (A[s] @ dK[:, :s]), thetas)
        dy_new = dy + h * (B @ dK[:, :6])             # = dY_6: A[6] = B
        dy_proj = _projected(ws, t_new, p_new, v_new, dy_new, thetas)
        while k < out.t.size and out.t[k] <= t_new:
            if out.t[k] == t_new:
                result[k] = dy_proj
            else:
                theta = (out.t[k] - t) / h
                d_out = np.array([dense_output(dy[j], dy_new[j], dK[j], h, theta)
                                  for j in range(c)])
                result[k] = _projected(ws, out.t[k], out.p[k], out.v[k], d_out, thetas)
            k += 1
        K[0] = np.concatenate([v_new, K[6, n:]])
        dK[:, 0] = np.concatenate([dy_proj[:, n:], dK[:, 6, n:]], axis=1)
        t, y, dy = t_new, np.concatenate([p_new, v_new]), dy_proj
    return result
