"""Parameter estimation (issue 10, item 3): Gauss–Newton with the trajectory
sensitivities recovers the stiffness and damping of a sprung four-bar from
noisy simulated measurements of a coupler point, within a few standard errors,
and its standard errors are those of the noise level it was given.

Multiple shooting (``shooting=K``) solves the same problem, with the initial
state fixed, so on a well-posed case it finds the single-shooting estimate
with continuous trajectories; from a start far from the truth, where single
shooting slides into a wrong local minimum, its nodes (started from the data)
keep every interval close to the measurements and it finds the truth."""
import warnings

import numpy as np
import pytest

import natcoord as nc
from natcoord.analysis.estimation import _covariance
from test_sensitivities import sprung_four_bar

TRUTH = {"stiffness:0": 50.0, "damping:0": 2.0}
START = {"stiffness:0": 35.0, "damping:0": 3.5}
NOISE = 2e-3                                     # m, standard deviation
T_EVAL = np.linspace(0.05, 2.0, 40)
POINTS = [("coupler1", (1.0, 1.0, 0.0))]
OPTIONS = dict(rtol=1e-8)


def measured(t_eval, options):
    """The true model's coupler point at ``t_eval`` plus noise of σ = NOISE."""
    model = sprung_four_bar()
    sol = nc.simulate(model, t_eval[-1], t_eval=t_eval, **options)
    clean = sol.point(*POINTS[0])[:, None, :]
    return clean + NOISE * np.random.default_rng(1).standard_normal(clean.shape)


def fitted(start, t_eval, options, shooting=1):
    model = sprung_four_bar().with_parameters(start)
    return nc.estimate(model, start, t_eval, POINTS, measured(t_eval, options), sigma=NOISE,
                       shooting=shooting, **options)


@pytest.fixture(scope="module")
def fit():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)     # determined: no warning
        return fitted(START, T_EVAL, OPTIONS)


def test_recovers_stiffness_and_damping_within_three_standard_errors(fit):
    assert fit.success
    for name, x, s in zip(fit.params, fit.theta, fit.std_errors):
        assert abs(x - TRUTH[name]) <= 3.0 * s, fit.table(TRUTH)
        assert s < 0.05 * TRUTH[name]            # and the data do determine it


def test_residual_is_the_noise(fit):
    """At the estimate the weighted residual has unit variance (χ² / N ≈ 1)."""
    N = fit.residuals.size
    assert abs(2.0 * fit.cost / N - 1.0) < 4.0 * np.sqrt(2.0 / N)   # χ²_N: sd √(2/N)
    assert fit.iterations < 20


def test_a_parameter_the_data_do_not_determine_is_named():
    """Gravity along the hinges (z) does not move the planar four-bar: its column of
    the Jacobian vanishes and Gauss–Newton would step along it without bound.
    The estimate refuses at the start, naming it."""
    t_eval = T_EVAL[::4]
    model = sprung_four_bar().with_parameters(START)
    with pytest.raises(ValueError, match=r"the data do not determine gravity:z \(relative "
                                         r"singular value .*\); measure other points or "
                                         r"times, or fix these parameters \(at theta0\)"):
        nc.estimate(model, START | {"gravity:z": 0.0}, t_eval, POINTS,
                    measured(t_eval, OPTIONS), sigma=NOISE, **OPTIONS)


def test_a_trial_point_whose_simulation_fails_is_a_rejected_step(fit, monkeypatch):
    """A simulation that fails at a trial θ (say a step-size underflow) makes
    least_squares shrink its step, as an infinite residual; the fit goes on to the
    estimate it finds without the failure."""
    import natcoord.analysis.estimation as estimation
    calls = []

    def failing_second_call(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise nc.IntegrationError("step size underflow (injected)", None)
        return nc.simulate(*args, **kwargs)
    monkeypatch.setattr(estimation, "simulate", failing_second_call)
    again = fitted(START, T_EVAL, OPTIONS)
    assert len(calls) > 2 and again.success
    assert np.allclose(again.theta, fit.theta, rtol=1e-6)


def test_covariance_warns_of_an_undetermined_combination():
    """Two columns that always move together: their difference is undetermined;
    the covariance names both and its standard errors are infinite or huge."""
    column = np.linspace(1.0, 2.0, 12)
    jac = np.stack([column, 2.0 * column, np.cos(column)], axis=1)
    with pytest.warns(RuntimeWarning, match=r"do not determine a, b \(relative singular"):
        covariance = _covariance(jac, ["a", "b", "c"], np.array([1.0, 1.0, 3.0]))
    assert np.all(np.diag(covariance)[:2] > 1e12)


def test_multiple_shooting_finds_the_single_shooting_estimate(fit):
    """Four intervals (nodes at t = 0.55, 1.05, 1.55): the same minimizer and
    covariance (the condensed Jacobian is the single-shooting one on a
    continuous trajectory), up to the integration tolerance, and continuity
    holds at the solution."""
    shot = fitted(START, T_EVAL, OPTIONS, shooting=4)
    assert shot.success, shot.message
    assert np.allclose(shot.nodes, [0.0, 0.55, 1.05, 1.55])
    assert shot.defects.shape == (3,) and shot.defects.max() < 1e-8
    assert np.all(np.abs(shot.theta - fit.theta) <= 0.01 * fit.std_errors), shot.table(TRUTH)
    assert np.allclose(shot.std_errors, fit.std_errors, rtol=1e-3)
    assert shot.cost == pytest.approx(fit.cost, rel=1e-6)


FAR = {"stiffness:0": 10.0, "damping:0": 0.5}    # a spring 5 times too soft
FAR_EVAL = np.linspace(0.1, 2.0, 20)
FAR_OPTIONS = dict(rtol=1e-6)


def test_multiple_shooting_recovers_the_truth_where_single_shooting_fails():
    """From k = 10, c = 0.5 the simulated coupler swings at a period about twice
    the true one and runs out of phase with the measurements within the 2 s
    horizon: single shooting slides to a spring-free local minimum at the
    bounds (χ² ≈ 10⁵ N). With five intervals (0.4 s each) whose nodes start
    from the measured points and their rates, no interval can run far from the
    data, and the Gauss–Newton iteration with exact linearized continuity
    reaches the truth, χ² ≈ N."""
    single = fitted(FAR, FAR_EVAL, FAR_OPTIONS)
    assert single.theta[0] < 1.0 and 2.0 * single.cost > 1e4 * single.residuals.size
    shot = fitted(FAR, FAR_EVAL, FAR_OPTIONS, shooting=5)
    assert shot.success, shot.message
    for name, x, s in zip(shot.params, shot.theta, shot.std_errors):
        assert abs(x - TRUTH[name]) <= 3.0 * s, shot.table(TRUTH)
    N = shot.residuals.size
    assert abs(2.0 * shot.cost / N - 1.0) < 4.0 * np.sqrt(2.0 / N)
    assert shot.defects.max() < 1e-8


def test_data_of_the_wrong_shape_is_refused():
    model = sprung_four_bar()
    with pytest.raises(ValueError, match="data has shape"):
        nc.estimate(model, START, T_EVAL, POINTS, np.zeros((T_EVAL.size, 3)))


@pytest.mark.parametrize("shooting, error, match", [
    (0, ValueError, "estimate: shooting must be at least 1, got 0"),
    (-2, ValueError, "shooting must be at least 1, got -2"),
    (T_EVAL.size + 1, ValueError, "shooting=41 intervals on 40 measurement times leave the "
                                  "last interval empty .*; use at most 26"),
    (T_EVAL.size, ValueError, "shooting=40 intervals on 40 .*use at most 26"),
    (27, ValueError, "shooting=27 intervals .*use at most 26"),
    (2.5, TypeError, "estimate: shooting must be an integer, got 2.5"),
    (True, TypeError, "shooting must be an integer, got True"),
])
def test_bad_shooting_is_refused_naming_it(shooting, error, match):
    model = sprung_four_bar()
    data = np.zeros((T_EVAL.size, 1, 3))
    with pytest.raises(error, match=match):
        nc.estimate(model, START, T_EVAL, POINTS, data, shooting=shooting)


def test_multiple_shooting_needs_a_start_inside_the_bounds():
    model = sprung_four_bar()
    with pytest.raises(ValueError, match=r"theta0 is not strictly inside the bounds "
                                         r"\(lower < upper\): damping:0 = 0 in \[0, inf\]"):
        nc.estimate(model, {"damping:0": 0.0}, T_EVAL, POINTS, measured(T_EVAL, OPTIONS),
                    shooting=2, **OPTIONS)


DATA = np.zeros((T_EVAL.size, 1, 3))


@pytest.mark.parametrize("change, error, match", [
    (dict(model=nc.Mechanism()), TypeError, "model must be a natcoord.Model"),
    (dict(theta0=["stiffness:0"]), ValueError, r"theta0 must be a non-empty mapping "
                                               r"\{name: start value\}"),
    (dict(theta0={"stiffness:0": np.nan}), ValueError, r"estimate: theta0\['stiffness:0'\]: "
                                                       r"start value must be a finite number"),
    (dict(t_eval=np.r_[T_EVAL[:-1], np.nan]), ValueError, "t_eval contains NaN or infinity"),
    (dict(t_eval=T_EVAL - 1.0), ValueError, r"t_eval must lie in \[t0, t_end\] = \[0, inf\]"),
    (dict(points=None), TypeError, r"points must be a list of \(body, \(x, y, z\)\), got None"),
    (dict(points=[]), ValueError, r"points is empty; give a list of \(body, \(x, y, z\)\)"),
    (dict(points=[("coupler1", (1.0, 1.0))]), ValueError, r"points\[0\] must be \(body, "
                                                         r"\(x, y, z\)\) with finite"),
    (dict(points=[("nobody", (1.0, 1.0, 0.0))]), KeyError, "unknown body 'nobody'"),
    (dict(data="abc"), ValueError, r"data has shape \(\) and is not numeric"),
    (dict(data=np.where(np.arange(DATA.size).reshape(DATA.shape) == 4, np.nan, DATA)),
     ValueError, r"data is NaN or infinite at \(time index, point index, axis\) \[\[1, 0, 1\]\]"),
    (dict(sigma=0.0), ValueError, "sigma must be positive standard deviations.* got 0.0"),
    (dict(sigma=np.nan), ValueError, "sigma must be positive standard deviations.* got nan"),
    (dict(sigma=np.ones(5)), ValueError, r"broadcasts to data's shape \(40, 1, 3\)"),
    (dict(bounds=([40.0, 0.0], np.inf)), ValueError, r"theta0 is not inside the bounds "
                                                     r"\(lower < upper\): stiffness:0 = 35 in "
                                                     r"\[40, inf\]\. Give a start inside"),
    (dict(bounds=([100.0, 0.0], [10.0, np.inf])), ValueError, r"stiffness:0 = 35 in \[100, 10\]"),
    (dict(bounds=([0.0, 0.0, 0.0], np.inf)), ValueError, r"bounds must be a pair \(lower, "
                                                         r"upper\), each a number or 2 numbers"),
    (dict(bounds=[0.0]), ValueError, r"bounds must be a pair"),
])
def test_bad_arguments_are_refused_naming_them(change, error, match):
    arguments = dict(model=sprung_four_bar(), theta0=START, t_eval=T_EVAL, points=POINTS,
                     data=DATA) | change
    with pytest.raises(error, match=match):
        nc.estimate(**arguments)
