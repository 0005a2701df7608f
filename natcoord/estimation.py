"""Parameter estimation by generalized Gauss–Newton (issue 10, item 3;
docs/method.md#19-parameter-estimation).

Measured body points ``η_kl`` (point l at time t_k) with standard deviations
``σ_kl`` and the model's ``r_l(t_k; θ)``; the weighted residual

    F(θ) = ( (r_l(t_k; θ) − η_kl) / σ_kl )_kl,     min_θ ½ ‖F(θ)‖²

is minimized by ``scipy.optimize.least_squares`` (trust-region Gauss–Newton)
with the Jacobian ``∂F/∂θ = (∂r_l/∂θ (t_k)) / σ_kl`` from
:func:`~natcoord.sensitivities` (single shooting: one simulation from a fixed
initial state). At the solution the covariance of the estimate is the
Gauss–Newton one, ``Cov θ = (JᵀJ)⁻¹`` for known σ, or ``s² (JᵀJ)⁻¹`` with
``s² = ‖F‖² / (N − n_θ)`` when σ is not given.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from .assembly import assemble
from .derivatives import parameter_value
from .integrate import simulate
from .sensitivity import sensitivities


@dataclass(frozen=True)
class Estimate:
    """The result of :func:`estimate`.

    ``params`` names, ``theta`` the estimate, ``theta0`` the start,
    ``std_errors`` and ``covariance`` (Gauss–Newton, module docstring),
    ``residuals`` the weighted residual ``F`` at the estimate and ``cost``
    ``½ ‖F‖²``; ``iterations`` Jacobian evaluations (Gauss–Newton steps) and
    ``evaluations`` residual evaluations; ``time`` wall seconds; ``model`` and
    ``solution`` at the estimate; ``success``/``message`` from the optimizer.
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


def estimate(model, theta0, t_eval, points, data, sigma=None, initial_state=None,
             bounds=None, **options):
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
    constants and rest lengths, unbounded otherwise. ``options`` go to
    :func:`~natcoord.simulate`. Returns an :class:`Estimate`.
    """
    names = tuple(theta0)
    if not names:
        raise ValueError("estimate: theta0 names no parameter")
    x0 = np.array([float(theta0[name]) for name in names])
    for name in names:
        parameter_value(model, name)                   # KeyError naming a bad name
    t_eval = np.asarray(t_eval, float)
    points = [tuple(point) for point in points]
    data = np.asarray(data, float)
    if data.shape != (t_eval.size, len(points), 3):
        raise ValueError(f"estimate: data has shape {data.shape}, expected (len(t_eval), "
                         f"len(points), 3) = {(t_eval.size, len(points), 3)}")
    weight = 1.0 / np.broadcast_to(1.0 if sigma is None else np.asarray(sigma, float),
                                   data.shape)
    if bounds is None:
        bounds = ([0.0 if name.partition(":")[0] in NON_NEGATIVE else -np.inf
                   for name in names], np.inf)
    initial_state = assemble(model).state if initial_state is None else initial_state
    common = dict(options, t_eval=t_eval, initial_state=initial_state)

    def at(theta):
        return model.with_parameters(dict(zip(names, theta)))

    def residual(theta):
        sol = simulate(at(theta), t_eval[-1], **common)
        return ((_stacked(sol.point, points) - data) * weight).ravel()

    def jacobian(theta):
        sens = sensitivities(at(theta), t_eval[-1], params=names, **common)
        return (_stacked(sens.point, points) * weight[..., None]).reshape(-1, len(names))

    start = time.perf_counter()
    fit = least_squares(residual, x0, jac=jacobian, bounds=bounds, x_scale="jac")
    elapsed = time.perf_counter() - start
    J = fit.jac
    covariance = np.linalg.inv(J.T @ J)
    if sigma is None:
        covariance *= 2.0 * fit.cost / max(fit.fun.size - len(names), 1)
    best = at(fit.x)
    return Estimate(names, fit.x, x0, np.sqrt(np.diag(covariance)), covariance, fit.fun,
                    float(fit.cost), int(fit.njev), int(fit.nfev), elapsed, best,
                    simulate(best, t_eval[-1], **common), bool(fit.success), fit.message)


def _stacked(point, points):
    """``point(body, r)`` of every measured point, stacked on axis 1: positions
    (k, len(points), 3) of a Solution, derivatives (k, len(points), 3, n_θ) of
    Sensitivities."""
    return np.stack([point(body, r) for body, r in points], axis=1)
