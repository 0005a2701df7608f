"""The Dormand–Prince 5(4) integrator (docs/method.md#17-integration) on a closed-form mechanism.

A body on a prismatic joint to ground, pulled back by a spring along the
joint axis (gravity acts across the axis and is carried by the joint), is a
linear oscillator: ``x(t) = x0 cos ωt + (v0/ω) sin ωt``, ``ω = √(k/m)``.
"""
import numpy as np
import pytest

import natcoord as nc

MASS, STIFFNESS, X0, V0 = 2.0, 50.0, 0.1, 0.3
OMEGA = np.sqrt(STIFFNESS / MASS)


def exact(t):
    return X0 * np.cos(OMEGA * t) + V0 / OMEGA * np.sin(OMEGA * t)


@pytest.fixture(scope="module")
def oscillator():
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0), name="oscillator")
    mech.add_body("slider", mass=MASS, com=(0.05, 0.02, 0.0),
                  inertia=nc.box_inertia(MASS, (0.2, 0.1, 0.1)))
    mech.add_prismatic(nc.GROUND, "slider", point=(0, 0, 0), axis=(1, 0, 0))
    mech.add_spring(nc.GROUND, "slider", point_a=(-1, 0, 0), point_b=(0, 0, 0),
                    stiffness=STIFFNESS, rest_length=1.0)
    mech.set_initial("slider", origin=(X0, 0, 0), velocity=(V0, 0, 0))
    return mech.build()


def position_error(sol):
    return np.abs(sol.point("slider", (0, 0, 0))[:, 0] - exact(sol.t))


def test_dense_output_is_fourth_order(oscillator):
    """One step of size h, output inside it: the continuous extension's local error is
    O(h⁵) (order 4), so halving h divides it by ≈ 32 (a cubic Hermite would give 16)."""
    steps = [0.1, 0.05, 0.025]
    errors = []
    for h in steps:
        sol = nc.simulate(oscillator, t_end=h, rtol=1.0, atol=1.0, first_step=h,
                          t_eval=[0.4 * h])
        assert sol.stats["steps"] == 1
        errors.append(position_error(sol)[0])
    assert np.all(np.array(errors[:-1]) / errors[1:] > 2**4.5)


def test_global_error_follows_the_tolerance(oscillator):
    """Errors at dense outputs over 3 periods shrink in proportion to rtol."""
    t_eval = np.linspace(0.0, 4.0, 97)
    errors = np.array([position_error(nc.simulate(oscillator, t_end=4.0, rtol=rtol,
                                                  t_eval=t_eval)).max()
                       for rtol in (1e-5, 1e-7, 1e-9)])
    assert np.all(errors <= 30 * np.array([1e-5, 1e-7, 1e-9]))
    assert np.all(errors[:-1] / errors[1:] > 20)


def test_statistics_are_consistent():
    """FSAL: each attempted step costs six evaluations; every evaluation factors once."""
    model = nc.models.six_bar().build()
    sol = nc.simulate(model, t_end=1.0, rtol=1e-6, first_step=0.5)   # too long: rejected
    stats = sol.stats
    assert stats["rejected"] >= 1
    assert sol.t.size == stats["steps"] + 1 and sol.t[-1] == 1.0 and np.all(np.diff(sol.t) > 0)
    assert 0 <= stats["rhs"] - 6 * (stats["steps"] + stats["rejected"]) <= 2
    assert stats["factorizations"] >= stats["rhs"]
    # at rtol = 1e-6 every step leaves the manifold by far more than proj_tol
    assert stats["projection_iterations"] >= stats["steps"]
    assert stats["wall_time"] > 0.0


@pytest.mark.parametrize("path", ["compiled", "callback", "radau"])
def test_steps_that_do_not_divide_the_interval_exactly_end_at_t_end(path):
    """Ten steps of 0.04 sum to 0.39999999999999997: the last one must end at 0.4, not
    leave a 6e-17 sliver that no step can cover (which was a step-size underflow)."""
    model = nc.models.six_bar().build()
    sol = nc.simulate(model, 0.4, rtol=1e-3, first_step=0.04, max_step=0.04,
                      solver="dense" if path == "callback" else "block",
                      method="radau" if path == "radau" else "dopri5")
    assert sol.success and sol.t[-1] == 0.4
