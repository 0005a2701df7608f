"""Parameter estimation by generalized Gauss–Newton (issue 10, item 3;
docs/method.md#19-parameter-estimation).

Measured body points ``η_kl`` (point l at time t_k) with standard deviations
``σ_kl`` and the model's ``r_l(t_k; θ)``; the weighted residual

    F(θ) = ( (r_l(t_k; θ) − η_kl) / σ_kl )_kl,     min_θ ½ ‖F(θ)‖²

Single shooting (``shooting=1``, the default): one simulation from the fixed
initial state, minimized by ``scipy.optimize.least_squares`` (trust-region
Gauss–Newton) with the Jacobian ``∂F/∂θ = (∂r_l/∂θ (t_k)) / σ_kl`` from
:func:`~natcoord.sensitivities`.

Multiple shooting (``shooting=K``; Bock 1983, 1987): the horizon is cut at
K − 1 measurement times ``τ_1 < … < τ_{K−1}`` into K intervals; interval k is
simulated from its own node state ``s_k = (p_k, v_k)`` (``s_0`` the fixed
initial state, ``τ_0`` its time) and the nodes are unknowns beside θ:

    min ½ Σ_k ‖F_k(s_k, θ)‖²   s.t.   h_k = L_{k+1} (y(τ_{k+1}; s_k, θ) − s_{k+1}) = 0,

``F_k`` the residuals of the measurements in ``[τ_k, τ_{k+1})``. A node stays
on the constraint manifold: it moves by ``T_k ξ_k`` and is re-assembled
(:func:`~natcoord.assemble`), with minimal coordinates ``ξ_k``
(2 d, d the degrees of freedom) and ``T_k = [[Z, 0], [W, Z]]`` the tangent
directions ``"p0"``, ``"v0"`` of :func:`~natcoord.sensitivities` (``Z`` an
M-orthonormal basis of ``ker G``, ``W`` the velocity change keeping
``G v + g_t = 0``); ``L_k (dp, dv) = (Zᵀ M dp, Zᵀ M (dv − W Zᵀ M dp))`` is its
left inverse (``L_k T_k = 1``), the defect in the same coordinates.

Generalized Gauss–Newton with the linearized continuity conditions satisfied
exactly, by condensing: with ``A_k, B_k = L_{k+1} ∂y(τ_{k+1})/∂(ξ_k, θ)`` and
``D_k, E_k = ∂F_k/∂(ξ_k, θ)`` (sensitivities of each interval),

    ξ_{k+1} = h_k + A_k ξ_k + B_k Δθ,  ξ_0 = 0   ⇒   ξ_k = c_k + S_k Δθ,
    Δθ = argmin ‖Σ_k (F_k + D_k c_k) + (E_k + D_k S_k) Δθ‖².

The step ``α Δx`` is damped by the natural monotonicity test
``‖Δx̄(x + α Δx)‖ ≤ (1 − α/2) ‖Δx‖``, ``Δx̄`` the increment at the trial point
with the Jacobian held (the natural level function; Bock 1987, Deuflhard),
``Δθ`` scaled by ``|θ0|``; iterations stop once a full step is below
``XTOL``. The nodes start from the data: the states of a simulation with the
start parameters at the node times, moved (least M-norm, in the tangent
space) to fit the measured points there and their rates (central differences
of the data), as far as the points determine the state.

Covariance: the Gauss–Newton one, ``Cov θ = (JᵀJ)⁻¹`` for known σ, or
``s² (JᵀJ)⁻¹`` with ``s² = ‖F‖² / (N − n_θ)`` when σ is not given; for
multiple shooting ``J`` is the condensed ``(E_k + D_k S_k)_k``, the
covariance of the constrained problem (on a continuous trajectory it equals
the single-shooting Jacobian).
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..model import validate
from ..dynamics.assembly import AssemblyError, assemble
from ..util.checks import float_array, integer, number
from ..dynamics.linearization import linearization_point
from ..model.parameters import parameter_value
from ..dynamics.workspace import Workspace
from ..model.expressions import stacked
from ..integrate.simulate import IntegrationError, simulate
from ..model.frozen import State
from .sensitivity import INITIAL, tangent_basis, sensitivities

#: multiple shooting: stop once a full step has scaled norm ‖(Δθ / |θ0|, ξ)‖ below this
XTOL = 1e-8
#: multiple shooting: Gauss–Newton iterations (Jacobians) at most
MAX_ITERATIONS = 50
#: multiple shooting: smallest damping factor α tried
MIN_STEP = 1e-4
#: node start from the data: relative singular-value cutoff, iterations and
#: step tolerance of the position fit
NODE_RCOND, NODE_ITERATIONS, NODE_TOL = 1e-6, 10, 1e-12
#: a direction of θ (relative to |θ|) is undetermined by the data when its singular
#: value of the weighted Jacobian is below this fraction of the largest
UNDETERMINED = 1e-8


@dataclass(frozen=True)
class Estimate:
    """The result of :func:`estimate`.

    ``params`` names, ``theta`` the estimate, ``theta0`` the start,
    ``std_errors`` and ``covariance`` (Gauss–Newton, module docstring),
    ``residuals`` the weighted residual ``F`` at the estimate and ``cost``
    ``½ ‖F‖²``; ``iterations`` Jacobian evaluations (Gauss–Newton steps) and
    ``evaluations`` residual evaluations; ``time`` wall seconds; ``model`` and
    ``solution`` at the estimate; ``success``/``message`` from the optimizer.
    ``nodes``: the shooting node times ``τ_0 … τ_{K−1}`` (``τ_0`` the initial
    time); ``defects``: ``max |s_{k+1} − y(τ_{k+1}; s_k, θ)|`` over ``(p, v)``
    per inner node at the estimate (empty for single shooting).
    """

    params: tuple
    theta: np.ndarray
    theta0: np.ndarray
    std_errors: np.ndarray
    covariance: np.ndarray
    residuals: np.ndarray
    cost: float
    iterations: int
    evaluations: int
    time: float
    model: object
    solution: object
    success: bool
    message: str
    nodes: np.ndarray
    defects: np.ndarray

    def table(self, truth=None):
        """Text table: start, estimate ± standard error (and truth and the error
        in standard errors when ``truth`` maps names to values)."""
        head = f"{'parameter':16s} {'start':>12s} {'estimate':>12s} {'std error':>11s}"
        lines = [head + ("" if truth is None else f" {'truth':>12s} {'error/σ':>8s}")]
        for name, x0, x, s in zip(self.params, self.theta0, self.theta, self.std_errors):
            line = f"{name:16s} {x0:12.6g} {x:12.6g} {s:11.3g}"
            if truth is not None:
                line += f" {truth[name]:12.6g} {(x - truth[name]) / s:8.2f}"
            lines.append(line)
        return "\n".join(lines)


#: parameters that are physical only when non-negative (the lower bound by default)
NON_NEGATIVE = ("mass", "stiffness", "damping", "rest_length")


@dataclass(frozen=True)
class _Fit:
    """What either solver hands back: the estimate, the weighted residual, the
    Jacobian for the covariance, counters, status and continuity defects."""

    x: np.ndarray
    fun: np.ndarray
    jac: np.ndarray
    iterations: int
    evaluations: int
    success: bool
    message: str
    defects: np.ndarray


def estimate(model, theta0, t_eval, points, data, sigma=None, initial_state=None,
             bounds=None, shooting=1, **options):
    """Estimate model parameters from measured body point positions.

    ``model``: a :class:`~natcoord.Model`; ``theta0``: ``{name: start value}``
    with names of :meth:`~natcoord.Model.with_parameters` (``mass:<body>``,
    ``gravity:x|y|z``, ``stiffness:<k>``, ``damping:<k>``, ``rest_length:<k>``,
    ``load:<k>`` a scale of a constant point force or torque),
    set on ``model`` at every evaluation. ``t_eval`` (k,) measurement times,
    ``points`` a list of ``(body, point)`` (world reference coordinates, as in
    :meth:`Solution.point`), ``data`` (k, len(points), 3) the measured
    positions, ``sigma`` their standard deviations (scalar or broadcastable to
    ``data``; ``None``: unknown, estimated from the residual). The initial state
    (default ``assemble(model).state``) is held fixed. ``bounds``: as in
    ``least_squares``, ``(lower, upper)``; by default 0 below masses, spring
    constants and rest lengths, unbounded otherwise.

    ``shooting``: the number K of shooting intervals. 1 (default): single
    shooting, ``least_squares`` with the sensitivities as Jacobian. K > 1:
    Bock's multiple shooting with node states at K − 1 measurement times
    (``t_eval[round(k · len(t_eval) / K)]``, k = 1 … K − 1, the last before
    the last measurement time, so K ≲ 2/3 len(t_eval)) as further
    unknowns, started from the data, solved by a generalized Gauss–Newton
    iteration that satisfies the linearized continuity conditions exactly
    (condensing) with a natural-monotonicity step damping; bounds keep θ
    strictly inside by shortening the step (module docstring). ``options`` go
    to :func:`~natcoord.simulate`. Returns an :class:`Estimate`. Bad arguments
    (non-finite data or start, ``sigma`` ≤ 0, a start outside the bounds, …)
    raise ``ValueError``/``TypeError``/``KeyError`` naming them. Parameters the
    data do not determine (:data:`UNDETERMINED`) are refused at ``theta0`` with
    single shooting and reported by a ``RuntimeWarning`` at the estimate; a trial
    point whose simulation fails is a rejected step.
    """
    names, x0 = _start(validate.model(model), theta0)
    initial_state = assemble(model).state if initial_state is None else \
        validate.state(model, initial_state, "initial_state")
    t_eval = validate.output_times(t_eval, initial_state.t, np.inf)
    points = _points(model, points)
    data, weight = _measurements(data, sigma, (t_eval.size, len(points), 3))
    starts = _node_indices(shooting, t_eval)
    bounds = _bounds(bounds, names, x0, strict=starts.size > 1)

    def at(theta):
        return model.with_parameters(dict(zip(names, theta)))

    start = time.perf_counter()
    if starts.size == 1:
        fit = _single_shooting(at, names, x0, t_eval, points, data, weight, bounds,
                               dict(options, t_eval=t_eval, initial_state=initial_state))
    else:
        problem = _Shooting(model, at, names, t_eval, points, data, weight, starts, options)
        fit = problem.solve(x0, bounds, problem.nodes_from_data(x0, initial_state))
    elapsed = time.perf_counter() - start
    covariance = _covariance(fit.jac, names, fit.x)
    if sigma is None:
        covariance *= fit.fun @ fit.fun / max(fit.fun.size - len(names), 1)
    best = at(fit.x)
    solution = simulate(best, t_eval[-1], t_eval=t_eval, initial_state=initial_state, **options)
    nodes = np.r_[initial_state.t, t_eval[starts[1:]]]
    return Estimate(names, fit.x, x0, np.sqrt(np.diag(covariance)), covariance, fit.fun,
                    0.5 * float(fit.fun @ fit.fun), fit.iterations, fit.evaluations, elapsed,
                    best, solution, fit.success, fit.message, nodes, fit.defects)


def _start(model, theta0):
    """Names and start values of ``theta0``: a non-empty mapping of parameter names
    of ``model`` to finite numbers (``KeyError`` naming an unknown name)."""
    if not isinstance(theta0, Mapping) or not theta0:
        raise ValueError(f"estimate: theta0 must be a non-empty mapping {{name: start value}}, "
                         f"e.g. {{'mass:<body>': 1.0}}; got {theta0!r}")
    for name in theta0:
        parameter_value(model, name)
    return tuple(theta0), np.array([number(x, "start value", f"estimate: theta0[{name!r}]")
                                    for name, x in theta0.items()])


def _undetermined(jac, names, theta):
    """``(names, ratio, svd)``: the parameters of a combination the data do not
    determine — its singular value of the Jacobian, every column scaled by
    ``|θ|`` (units aside), at most ``UNDETERMINED`` times the largest (``ratio``) —
    or ``[]``; ``svd = (scale, s, vt)`` of the scaled Jacobian."""
    scale = np.where(theta != 0.0, np.abs(theta), 1.0)
    _, s, vt = np.linalg.svd(jac * scale, full_matrices=False)
    ratio = s[-1] / s[0] if s[0] > 0.0 else 0.0
    weights = np.abs(vt[-1])
    involved = [name for name, w in zip(names, weights) if w >= 0.1 * weights.max()] \
        if ratio <= UNDETERMINED else []
    return involved, ratio, (scale, s, vt)


def _undetermined_message(names, ratio):
    return (f"estimate: the data do not determine {', '.join(names)} (relative singular "
            f"value of the Jacobian {ratio:.1e}); measure other points or times, or fix "
            f"these parameters")


def _covariance(jac, names, theta):
    """``(JᵀJ)⁻¹`` by the SVD of ``J``, with a ``RuntimeWarning`` naming the parameters
    the data do not determine at the estimate (:func:`_undetermined`): their
    standard errors are then huge or infinite, not a measure of the fit."""
    undetermined, ratio, (scale, s, vt) = _undetermined(jac, names, theta)
    if undetermined:
        warnings.warn(_undetermined_message(undetermined, ratio) + "; their standard errors "
                      "are meaningless", RuntimeWarning, stacklevel=3)
    with np.errstate(divide="ignore", invalid="ignore"):
        covariance = (vt.T / s**2) @ vt
    covariance = np.where(np.isnan(covariance), np.inf, covariance)
    return covariance * np.outer(scale, scale)


def _points(model, points):
    """``points`` as a non-empty list of ``(body, r)``: a body of ``model`` and 3
    finite coordinates; the error names a bad entry."""
    if isinstance(points, (str, bytes)) or not hasattr(points, "__iter__"):
        raise TypeError(f"estimate: points must be a list of (body, (x, y, z)), "
                        f"got {points!r}")
    points = list(points)
    if not points:
        raise ValueError("estimate: points is empty; give a list of (body, (x, y, z))")
    for k, point in enumerate(points):
        r = float_array(point[-1]) if isinstance(point, (tuple, list)) and point else None
        if r is None or len(point) != 2 or r.shape != (3,) or not np.all(np.isfinite(r)):
            raise ValueError(f"estimate: points[{k}] must be (body, (x, y, z)) with finite "
                             f"coordinates, got {point!r}")
        model.point_expression(*point)            # KeyError naming an unknown body
    return [tuple(point) for point in points]


def _measurements(data, sigma, shape):
    """``data`` (finite, of ``shape``) and the weights ``1 / sigma`` broadcast to it
    (``sigma`` positive; ``inf`` weighs a measurement out, ``None`` is 1)."""
    values = float_array(data)
    if values is None or values.shape != shape:
        raise ValueError(f"estimate: data has shape {np.shape(data)}"
                         f"{'' if values is not None else ' and is not numeric'}, expected "
                         f"numbers of shape (len(t_eval), len(points), 3) = {shape}")
    bad = np.argwhere(~np.isfinite(values))
    if bad.size:
        raise ValueError(f"estimate: data is NaN or infinite at (time index, point index, "
                         f"axis) {bad[:5].tolist()}; drop those measurement times")
    try:
        s = np.broadcast_to(np.asarray(1.0 if sigma is None else sigma, float), shape)
    except (TypeError, ValueError):
        s = None
    if s is None or not np.all(s > 0):                 # NaN fails s > 0 too
        raise ValueError(f"estimate: sigma must be positive standard deviations, one number "
                         f"or an array that broadcasts to data's shape {shape}; got {sigma!r}")
    return values, 1.0 / s


def _bounds(bounds, names, x0, strict):
    """``(lower, upper)`` arrays of ``bounds`` (default: 0 below the
    :data:`NON_NEGATIVE` parameters) with ``x0`` inside, strictly for multiple
    shooting (which keeps θ inside); the error names the parameters outside."""
    if bounds is None:
        bounds = ([0.0 if name.partition(":")[0] in NON_NEGATIVE else -np.inf
                   for name in names], np.inf)
    try:
        lower, upper = (np.broadcast_to(np.asarray(b, float), x0.shape) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"estimate: bounds must be a pair (lower, upper), each a number or "
                         f"{len(names)} numbers (one per parameter of {list(names)}); got "
                         f"{bounds!r}") from None
    inside = (lower < x0) & (x0 < upper) if strict else (lower <= x0) & (x0 <= upper)
    outside = [f"{n} = {x:g} in [{lo:g}, {hi:g}]" for n, x, lo, hi, ok
               in zip(names, x0, lower, upper, inside & (lower < upper)) if not ok]
    if outside:
        raise ValueError(f"estimate: theta0 is not {'strictly ' if strict else ''}inside "
                         f"the bounds (lower < upper): {'; '.join(outside)}"
                         f"{'; multiple shooting keeps θ inside' if strict else ''}. Give a "
                         f"start inside the bounds, or other bounds")
    return lower, upper


def _node_indices(shooting, t_eval):
    """First measurement index of each of the ``shooting`` intervals:
    ``round(k · len(t_eval) / K)`` (0 for k = 0). Each interval must end after
    its node, so the last node must come before the last measurement time;
    ``ValueError``/``TypeError`` naming ``shooting`` otherwise."""
    def starts(K):
        return np.rint(np.arange(K) * t_eval.size / K).astype(int)

    shooting = integer("estimate: shooting", shooting, 1)
    if shooting > 1 and starts(shooting)[-1] >= t_eval.size - 1:
        most = max(K for K in range(1, shooting) if K == 1 or starts(K)[-1] < t_eval.size - 1)
        raise ValueError(f"estimate: shooting={shooting} intervals on {t_eval.size} "
                         f"measurement times leave the last interval empty (nodes are "
                         f"measurement times); use at most {most}")
    return starts(shooting)


def _single_shooting(at, names, x0, t_eval, points, data, weight, bounds, common):
    """``least_squares`` on ``F(θ)`` from one simulation per evaluation."""
    def residual(theta):
        try:
            sol = simulate(at(theta), t_eval[-1], **common)
        except IntegrationError:
            if np.array_equal(theta, x0):
                raise
            return np.full(data.size, np.inf)     # a failed trial: least_squares shrinks its step
        return ((_stacked(sol.point, points) - data) * weight).ravel()

    def jacobian(theta):
        sens = sensitivities(at(theta), t_eval[-1], params=names, **common)
        jac = (_stacked(sens.point, points) * weight[..., None]).reshape(-1, len(names))
        if np.array_equal(theta, x0):     # Gauss–Newton would step without bound along it
            undetermined, ratio, _ = _undetermined(jac, names, theta)
            if undetermined:
                raise ValueError(_undetermined_message(undetermined, ratio) + " (at theta0)")
        return jac

    from scipy.optimize import least_squares   # here: a third of natcoord's import time
    fit = least_squares(residual, x0, jac=jacobian, bounds=bounds, x_scale="jac")
    return _Fit(fit.x, fit.fun, fit.jac, int(fit.njev), int(fit.nfev), bool(fit.success),
                fit.message, np.zeros(0))


def _stacked(point, points):
    """``point(body, r)`` of every measured point, stacked on axis 1: positions
    (k, len(points), 3) of a Solution, derivatives (k, len(points), 3, n_θ) of
    Sensitivities."""
    return np.stack([point(body, r) for body, r in points], axis=1)


@dataclass(frozen=True)
class _Linearized:
    """The multiple-shooting problem linearized at ``(θ, s)``: per interval k the
    residuals ``F[k]``, ``D[k] = ∂F_k/∂ξ_k``, ``E[k] = ∂F_k/∂θ``; per inner node
    the defects ``h[k]``, ``A[k]``, ``B[k]`` (module docstring) and ``defects``
    ``max |s_{k+1} − y(τ_{k+1})|``; per node the tangent directions ``T[k]``
    (2 N, 2 d) and their left inverse ``L[k]`` (none for the fixed ``s_0``)."""

    F: list
    D: list
    E: list
    h: list
    A: list
    B: list
    T: list
    L: list
    defects: np.ndarray


class _Shooting:
    """Multiple shooting over the measurement grid (module docstring)."""

    def __init__(self, model, at, names, t_eval, points, data, weight, starts, options):
        self.model, self.at, self.names, self.options = model, at, names, options
        self.points, self.data, self.weight = points, data, weight
        self.t_eval, self.starts = t_eval, starts
        self.measured = [slice(a, b) for a, b in zip(starts, np.r_[starts[1:], t_eval.size])]
        self.ends = np.r_[t_eval[starts[1:]], t_eval[-1]]
        self.C, self.c0 = _point_map(model, points)

    def outputs(self, k, node):
        """Output times of interval k: its node, its measurements, its end."""
        return np.unique(np.r_[node.t, self.t_eval[self.measured[k]], self.ends[k]])

    def measured_points(self, k, point, times):
        """``point(body, r)`` of every measured point (positions or their
        derivatives) at the measurement times of interval k among ``times``."""
        return _stacked(point, self.points)[np.searchsorted(times, self.t_eval[self.measured[k]])]

    def residual(self, k, point, times):
        """``F_k``: the weighted residuals of interval k's run."""
        return ((self.measured_points(k, point, times) - self.data[self.measured[k]])
                * self.weight[self.measured[k]]).ravel()

    # ------------------------------------------------------------ evaluation
    def evaluate(self, theta, nodes, L):
        """``F_k`` and the defects ``h_k`` in the coordinates ``L``, one simulation
        per interval; and ``max |s_{k+1} − y(τ_{k+1})|`` per inner node."""
        model, F, ends = self.at(theta), [], []
        for k, node in enumerate(nodes):
            times = self.outputs(k, node)
            sol = simulate(model, self.ends[k], t_eval=times, initial_state=node, **self.options)
            F.append(self.residual(k, sol.point, times))
            ends.append(np.r_[sol.p[-1], sol.v[-1]])
        return (F,) + _defects(nodes, ends, L)

    def linearize(self, theta, nodes):
        """Residuals, defects and their derivatives from the sensitivities of every
        interval (:class:`_Linearized`)."""
        model, n = self.at(theta), self.model.n_coords
        F, D, E, T, L, Y, ends = [], [], [], [], [None], [], []
        for k, node in enumerate(nodes):
            times = self.outputs(k, node)
            sens = sensitivities(model, self.ends[k], params=(INITIAL if k else ()) + self.names,
                                 t_eval=times, initial_state=node, **self.options)
            F.append(self.residual(k, sens.solution.point, times))
            dF = (self.measured_points(k, sens.point, times)
                  * self.weight[self.measured[k]][..., None]).reshape(F[-1].size, -1)
            m = len(sens.columns) - len(self.names)      # 2 d node columns (0 for s_0)
            dy = np.concatenate([sens.dp, sens.dv], axis=1)     # (outputs, 2 N, columns)
            D.append(dF[:, :m])
            E.append(dF[:, m:])
            T.append(dy[0, :, :m])
            if k:
                L.append(_left_inverse(model, sens.basis["p0"], dy[0, n:, :m // 2]))
            Y.append(dy[-1])
            ends.append(np.r_[sens.solution.p[-1], sens.solution.v[-1]])
        A = [L_k @ Y_k[:, :T_k.shape[1]] for L_k, Y_k, T_k in zip(L[1:], Y, T)]
        B = [L_k @ Y_k[:, T_k.shape[1]:] for L_k, Y_k, T_k in zip(L[1:], Y, T)]
        h, defects = _defects(nodes, ends, L)
        return _Linearized(F, D, E, h, A, B, T, L, defects)

    # ------------------------------------------------------------ Gauss–Newton
    def solve(self, x0, bounds, nodes):
        """Damped generalized Gauss–Newton (module docstring); returns a :class:`_Fit`."""
        lower, upper = bounds                          # x0 strictly inside (_bounds)
        scale = np.where(x0 != 0.0, np.abs(x0), 1.0)

        def norm(dtheta, xi):
            """``‖(Δθ / |θ0|, ξ_1, …, ξ_{K−1})‖``"""
            return np.sqrt(np.sum((dtheta / scale) ** 2) + sum(x @ x for x in xi))

        theta, evaluations = x0, 0
        for iteration in range(1, MAX_ITERATIONS + 1):
            lin = self.linearize(theta, nodes)
            dtheta, xi, J = _increment(lin, lin.F, lin.h)
            size = norm(dtheta, xi)
            alpha = _to_bounds(theta, dtheta, lower, upper)
            while True:
                try:
                    trial = self.moved(nodes, lin.T, [alpha * x for x in xi])
                    F, h, defects = self.evaluate(theta + alpha * dtheta, trial, lin.L)
                    level = norm(*_increment(lin, F, h)[:2])
                except (IntegrationError, AssemblyError):
                    level = np.inf
                evaluations += 1
                if level <= (1.0 - 0.5 * alpha) * size:
                    break
                alpha *= 0.5
                if alpha < MIN_STEP:
                    return _Fit(theta, np.concatenate(lin.F), J, iteration, evaluations, False,
                                f"step damped below {MIN_STEP} without a decrease of the "
                                f"natural level function", lin.defects)
            theta, nodes = theta + alpha * dtheta, trial
            if alpha == 1.0 and size <= XTOL:
                return _Fit(theta, np.concatenate(F), J, iteration, evaluations, True,
                            f"full step of scaled norm {size:.1e} <= XTOL", defects)
        return _Fit(theta, np.concatenate(F), J, MAX_ITERATIONS, evaluations, False,
                    f"no convergence in {MAX_ITERATIONS} iterations", defects)

    # ------------------------------------------------------------ nodes
    def moved(self, nodes, T, xi):
        """Nodes moved by ``T_k ξ_k`` and re-assembled (``s_0`` stays)."""
        n = self.model.n_coords
        return nodes[:1] + [self.assembled(node, node.p + (T_k @ x)[:n], node.v + (T_k @ x)[n:])
                            for node, T_k, x in zip(nodes[1:], T[1:], xi[1:])]

    def assembled(self, node, p, v):
        return assemble(self.model, p=p, v=v, t=node.t, solver=self.options.get("solver")).state

    def nodes_from_data(self, theta, initial_state):
        """``s_0`` and the nodes at ``τ_1 … τ_{K−1}``: the states of a simulation
        with the start parameters, each moved to fit the measured points and
        their rates (central differences of the data) there."""
        model = self.at(theta)
        taus = self.t_eval[self.starts[1:]]
        sol = simulate(model, taus[-1], t_eval=taus, initial_state=initial_state, **self.options)
        rates = np.gradient(self.data, self.t_eval, axis=0)
        ws = Workspace(model, self.options.get("solver"))
        return [initial_state] + [
            self.fitted(model, ws, State(t, p, v), self.data[i].ravel(), rates[i].ravel(),
                        self.weight[i].ravel())
            for i, t, p, v in zip(self.starts[1:], sol.t, sol.p, sol.v)]

    def fitted(self, model, ws, node, eta, rate, w):
        """``node`` moved in its tangent space, by the least M-norm that fits the
        measured points ``η = C p + c₀`` (Gauss–Newton on the manifold), then its
        velocity likewise to fit their rates ``C v`` (linear: ``G Z = 0``).
        Directions the points do not determine (singular values below
        ``NODE_RCOND``) keep the simulated state."""
        def tangent_step(node, residual):
            Z = tangent_basis(ws, linearization_point(model, node, workspace=ws).G)
            return Z @ np.linalg.lstsq(w[:, None] * (self.C @ Z), w * residual,
                                       rcond=NODE_RCOND)[0]

        for _ in range(NODE_ITERATIONS):
            step = tangent_step(node, eta - self.C @ node.p - self.c0)
            node = self.assembled(node, node.p + step, node.v)
            if np.abs(step).max() <= NODE_TOL:
                break
        return self.assembled(node, node.p, node.v + tangent_step(node, rate - self.C @ node.v))


def _defects(nodes, ends, L):
    """``h_k = L_{k+1} (y(τ_{k+1}; s_k, θ) − s_{k+1})`` and ``max |y − s_{k+1}|``
    per inner node from the interval end states ``ends``."""
    gaps = [end - np.r_[node.p, node.v] for end, node in zip(ends, nodes[1:])]
    return [L_k @ gap for L_k, gap in zip(L[1:], gaps)], np.array([np.abs(g).max() for g in gaps])


def _increment(lin, F, h):
    """Condensing (module docstring): ``Δθ``, the node steps ``ξ_k`` (``ξ_0``
    empty) and the condensed Jacobian ``(E_k + D_k S_k)_k``, for the residuals
    ``F`` and defects ``h`` with the derivatives of ``lin``."""
    c, S = [np.zeros(0)], [np.zeros((0, lin.E[0].shape[1]))]
    for h_k, A_k, B_k in zip(h, lin.A, lin.B):
        c.append(h_k + A_k @ c[-1])
        S.append(B_k + A_k @ S[-1])
    J = np.vstack([E_k + D_k @ S_k for D_k, E_k, S_k in zip(lin.D, lin.E, S)])
    f = np.concatenate([F_k + D_k @ c_k for F_k, D_k, c_k in zip(F, lin.D, c)])
    dtheta = -np.linalg.lstsq(J, f, rcond=None)[0]
    return dtheta, [c_k + S_k @ dtheta for c_k, S_k in zip(c, S)], J


def _left_inverse(model, Z, W):
    """``L`` (2 d, 2 N) with ``L (dp, dv) = (Zᵀ M dp, Zᵀ M (dv − W Zᵀ M dp))``: the
    coordinates of a tangent vector ``T ξ = (Z a, W a + Z b)``, ``L T = 1``."""
    ZtM = (model.mass_matrix @ Z).T
    return np.block([[ZtM, np.zeros_like(ZtM)], [-ZtM @ W @ ZtM, ZtM]])


def _to_bounds(theta, dtheta, lower, upper):
    """The largest ``α ≤ 1`` with ``θ + α Δθ`` at most 0.99 of the way to a bound."""
    bound = np.where(dtheta > 0.0, upper, lower)
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(dtheta != 0.0, (bound - theta) / dtheta, np.inf)
    return min(1.0, 0.99 * room.min())


def _point_map(model, points):
    """``(C, c₀)``: the measured points stacked, ``r = C p + c₀`` (3 l × 12 n, 3 l)."""
    return stacked([model.point_expression(body, r) for body, r in points], model.n_coords)
