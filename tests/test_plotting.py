"""plot_solution: the energy panel says what it shows (drift only for conservative models)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import natcoord as nc  # noqa: E402
from natcoord.viz.plotting import plot_solution  # noqa: E402


@pytest.fixture(scope="module")
def driven():
    return nc.models.hexapod(scenario="driven").build()


def test_driven_model_energy_panel_is_not_called_drift(driven):
    sol = nc.simulate(driven, 0.2, t_eval=np.linspace(0.0, 0.2, 21))
    fig = plot_solution(sol)
    title = fig.axes[3].get_title()
    assert "drift" not in title and "drive" in title
    plt.close(fig)


def test_driven_model_with_multipliers_shows_the_energy_balance(driven):
    sol = nc.simulate(driven, 0.2, t_eval=np.linspace(0.0, 0.2, 21), multipliers=True)
    fig = plot_solution(sol)
    ax = fig.axes[3]
    assert ax.get_title() == "energy balance of the drives"
    change, work, balance = (line.get_ydata() for line in ax.lines)
    assert np.abs(balance).max() < 1e-3 * np.abs(change).max()   # drive work = ΔE
    plt.close(fig)


def test_conservative_model_energy_panel_is_drift():
    sol = nc.simulate(nc.models.six_bar().build(), 0.2)
    fig = plot_solution(sol)
    assert fig.axes[3].get_title() == "mechanical energy drift"
    plt.close(fig)
