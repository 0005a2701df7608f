"""The Dormand–Prince 5(4) pair: tableau, step-size controller constants, dense output.

Coefficients as in Hairer, Nørsett & Wanner, *Solving ODEs I*, II.5 (Table 5.2)
and the order-4 continuous extension of II.6 (eq. 6.12); the PI controller of
II.4 (Gustafsson) with ``β = 0.04``. The compiled step
(:mod:`natcoord.integrate.compiled`) and the Python path both read them here.
"""
from __future__ import annotations

import numpy as np

C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
A = [np.array([]),
     np.array([1 / 5]),
     np.array([3 / 40, 9 / 40]),
     np.array([44 / 45, -56 / 15, 32 / 9]),
     np.array([19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729]),
     np.array([9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]),
     np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])]
B = A[6]                                   # 5th order weights (FSAL: stage 7 = f(y1))
E = np.array([71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40])
D = np.array([-12715105075 / 11282082432, 0.0, 87487479700 / 32700410799,
              -10690763975 / 1880347072, 701980252875 / 199316789632,
              -1453857185 / 822651844, 69997945 / 29380423])
SAFETY, BETA, FAC_MIN, FAC_MAX = 0.9, 0.04, 0.2, 10.0


def dense_output(y0, y1, K, h, theta):
    """Continuous extension of DOPRI5 at ``t0 + θ h`` (order 4)."""
    dy = y1 - y0
    r3 = h * K[0] - dy
    r4 = dy - h * K[6] - r3
    r5 = h * (D @ K)
    return y0 + theta * (dy + (1 - theta) * (r3 + theta * (r4 + (1 - theta) * r5)))


class DenseOutput:
    """The order-4 continuous extension of one DOPRI5 step (:func:`dense_output`)."""

    def __init__(self, t_old, h, y_old, y_new, K):
        self.t_old, self.t, self.h = t_old, t_old + h, h
        self.y_old, self.y_new, self.K = y_old, y_new, K

    def __call__(self, t):
        """``y`` (2 N,) at time ``t`` in ``[t_old, t]``, (k, 2 N) at times (k,) (unprojected)."""
        theta = (np.asarray(t, float) - self.t_old) / self.h
        y = dense_output(self.y_old, self.y_new, self.K, self.h, np.reshape(theta, (-1, 1)))
        return y.reshape(theta.shape + (-1,))
