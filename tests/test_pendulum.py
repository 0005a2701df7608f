"""A rod on a revolute joint, released at 120°: the exact large-amplitude period.

A physical pendulum with moment of inertia ``I_O`` about the pivot, mass m and
pivot–centre distance d, released at rest from θ0, has period

    T = 4 √(I_O / (m g d)) K(k²),   k = sin(θ0 / 2)

with K the complete elliptic integral of the first kind (``scipy.special.ellipk``
takes the parameter m = k²). The simulated period is read from the zero
crossings of the angular velocity (turning points at t = T/2 and T).
"""
import numpy as np
import pytest
from scipy.interpolate import CubicSpline
from scipy.special import ellipk

import natcoord as nc

MASS, LENGTH, SECTION, G = 1.5, 1.2, 0.04, 9.81
THETA0 = np.radians(120.0)


def exact_period():
    d = LENGTH / 2
    I_O = nc.rod_inertia(MASS, LENGTH, SECTION)[2, 2] + MASS * d**2
    return 4 * np.sqrt(I_O / (MASS * G * d)) * ellipk(np.sin(THETA0 / 2) ** 2)


@pytest.fixture(scope="module")
def swing():
    """Angular velocity ω_z(t) over a little more than one period, at rtol = 1e-10."""
    mech = nc.Mechanism(gravity=(0.0, -G, 0.0), name="pendulum")
    e1 = np.array([np.sin(THETA0), -np.cos(THETA0), 0.0])     # down is θ = 0
    axes = np.column_stack([e1, np.cross([0.0, 0.0, 1.0], e1), [0.0, 0.0, 1.0]])
    mech.add_body("rod", mass=MASS, com=0.5 * LENGTH * e1,
                  inertia=nc.rod_inertia(MASS, LENGTH, SECTION), origin=(0, 0, 0), axes=axes)
    mech.add_revolute(nc.GROUND, "rod", point=(0, 0, 0), axis=(0, 0, 1))
    t_end = 1.05 * exact_period()
    sol = nc.simulate(mech.build(), t_end=t_end, rtol=1e-10,
                      t_eval=np.linspace(0.0, t_end, 801))
    X, V = sol.p.reshape(-1, 4, 3), sol.v.reshape(-1, 4, 3)
    omega_z = 0.5 * np.cross(X[:, 1:], V[:, 1:]).sum(axis=1)[:, 2]
    return sol, omega_z


def test_period_matches_the_elliptic_integral(swing):
    sol, omega_z = swing
    turning = CubicSpline(sol.t, omega_z).roots(extrapolate=False)
    turning = turning[turning > 0.1]                 # t = 0 is the release
    T = exact_period()
    assert turning.size == 2
    np.testing.assert_allclose(turning, [T / 2, T], rtol=1e-6)


def test_energy_is_conserved(swing):
    sol, _ = swing
    np.testing.assert_allclose(sol.energy, sol.energy[0], rtol=1e-8)
