"""The Dormand–Prince 5(4) pair's continuous extension, as Python sees it.

The step itself — stages, error estimate, PI controller, projection and the
order-4 dense output — is the core's (natcoord/core/src/dopri5.c, coefficients
as in Hairer, Nørsett & Wanner, *Solving ODEs I*, II.5, Table 5.2, and II.6,
eq. 6.12), and so is the sensitivity sweep that differentiates it. Here:
:class:`DenseOutput`, one step's interpolant evaluated by the core.
"""
from __future__ import annotations

import numpy as np

from ..core import engine


def dense_output(y0, y1, K, h, theta):
    """Continuous extension of DOPRI5 at ``t0 + θ h`` (order 4; the core's
    ``nc_interpolate``): ``y0, y1`` (N,), stages ``K`` (7, N), ``θ`` a float or (k,)
    (result (N,) or (k, N)). Linear in ``(y0, y1, K)``: also the derivatives'."""
    theta = np.asarray(theta, float)
    out = np.empty(theta.shape + (np.shape(y0)[-1],))
    engine.interpolate(np.ascontiguousarray(y0, float), np.ascontiguousarray(y1, float),
                       np.ascontiguousarray(K, float), float(h), theta.reshape(-1), out)
    return out


class DenseOutput:
    """The order-4 continuous extension of one DOPRI5 step (:func:`dense_output`)."""

    def __init__(self, t_old, h, y_old, y_new, K):
        self.t_old, self.t, self.h = t_old, t_old + h, h
        self.y_old, self.y_new, self.K = y_old, y_new, K

    def __call__(self, t):
        """``y`` (2 N,) at time ``t`` in ``[t_old, t]``, (k, 2 N) at times (k,) (unprojected)."""
        return dense_output(self.y_old, self.y_new, self.K, self.h,
                            (np.asarray(t, float) - self.t_old) / self.h)
