"""Parameter estimation (issue 10, item 3): Gauss–Newton with the trajectory
sensitivities recovers the stiffness and damping of a sprung four-bar from
noisy simulated measurements of a coupler point, within a few standard errors,
and its standard errors are those of the noise level it was given.

Multiple shooting (``shooting=K``) solves the same problem, with the initial
state fixed, so on a well-posed case it finds the single-shooting estimate
with continuous trajectories; from a start far from the truth, where single
shooting slides into a wrong local minimum, its nodes (started from the data)
keep every interval close to the measurements and it finds the truth."""
import numpy as np
import pytest

import natcoord as nc
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
    (0, ValueError, "shooting=0"),
    (-2, ValueError, "shooting=-2"),
    (T_EVAL.size + 1, ValueError, "shooting=41 intervals but only 40 measurement times"),
    (2.5, TypeError, "shooting must be an integer"),
    (True, TypeError, "shooting must be an integer"),
])
def test_bad_shooting_is_refused_naming_it(shooting, error, match):
    model = sprung_four_bar()
    data = np.zeros((T_EVAL.size, 1, 3))
    with pytest.raises(error, match=match):
        nc.estimate(model, START, T_EVAL, POINTS, data, shooting=shooting)


def test_multiple_shooting_needs_a_start_inside_the_bounds():
    model = sprung_four_bar()
    with pytest.raises(ValueError, match="theta0 .* strictly inside the bounds"):
        nc.estimate(model, {"damping:0": 0.0}, T_EVAL, POINTS, measured(T_EVAL, OPTIONS),
                    shooting=2, **OPTIONS)
