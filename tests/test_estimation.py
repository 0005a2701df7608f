"""Parameter estimation (issue 10, item 3): Gauss–Newton with the trajectory
sensitivities recovers the stiffness and damping of a sprung four-bar from
noisy simulated measurements of a coupler point, within a few standard errors,
and its standard errors are those of the noise level it was given."""
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


@pytest.fixture(scope="module")
def fit():
    model = sprung_four_bar()
    sol = nc.simulate(model, T_EVAL[-1], t_eval=T_EVAL, **OPTIONS)
    clean = sol.point(*POINTS[0])[:, None, :]
    data = clean + NOISE * np.random.default_rng(1).standard_normal(clean.shape)
    return nc.estimate(model.with_parameters(START), START, T_EVAL, POINTS, data,
                       sigma=NOISE, **OPTIONS)


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


def test_data_of_the_wrong_shape_is_refused():
    model = sprung_four_bar()
    with pytest.raises(ValueError, match="data has shape"):
        nc.estimate(model, START, T_EVAL, POINTS, np.zeros((T_EVAL.size, 3)))
