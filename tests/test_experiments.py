"""The runtime-vs-tolerance machinery and paper/figures.py on a tiny grid (no timings)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import natcoord as nc
from natcoord.cli import main as cli_main
from natcoord.study import records, tolerance
from natcoord_bench import hexapod_speed, precision

ROOT = Path(__file__).resolve().parents[1]
T_END = 1.0
RTOLS = [1e-4, 1e-5, 1e-6, 1e-7, 1e-8]


def load_figures():
    spec = importlib.util.spec_from_file_location("figures", ROOT / "paper" / "figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def six_bar():
    return nc.models.six_bar().build()


@pytest.fixture(scope="module")
def grid(six_bar):
    return tolerance.run_grid(six_bar, RTOLS, [1e-10], [(None, "position+velocity")],
                              t_end=T_END, progress=False)


def test_parse_tolerances():
    assert tolerance.parse_tolerances("1e-3:1e-6") == [1e-3, 1e-4, 1e-5, 1e-6]
    assert tolerance.parse_tolerances("1e-4,1e-6,1e-12") == [1e-4, 1e-6, 1e-12]


def test_reference_interpolates_its_own_trajectory(six_bar):
    """Hermite interpolation between reference steps matches output at those times."""
    ref = tolerance.Reference(six_bar, 0.5)
    times = np.array([0.0123, 0.2345, 0.4567])
    direct = nc.simulate(six_bar, 0.5, rtol=1e-12, proj_tol=1e-12, t_eval=times)
    np.testing.assert_allclose(ref.point(times), direct.point("rod2", (1, -1, 0)), atol=1e-9)
    np.testing.assert_allclose(ref.energy(times), direct.energy, atol=1e-9)


def test_csv_schema_and_round_trip(grid, tmp_path):
    path = records.write_csv(tmp_path / "six_bar_tolerance.csv", grid, tolerance.COLUMNS,
                               "test grid")
    header = [line for line in path.read_text().splitlines() if not line.startswith("#")][0]
    assert tuple(header.split(",")) == tolerance.COLUMNS
    rows = records.read_csv(path)
    assert [r["rtol"] for r in rows] == RTOLS
    for row in rows:
        assert row["success"] is True and row["model"] == "six-bar"
        assert row["dropped"] == 1                                   # docs/benchmarks.md
        assert row["max_constraint_residual"] <= 1e-10
        assert row["wall_time_min"] <= row["wall_time_median"] <= row["wall_time_max"]
        assert row["rhs"] >= 6 * row["steps"]                        # DOPRI5: 6 stages/step


def test_error_falls_monotonically_with_rtol(grid):
    errors = [r["output_error"] for r in grid]
    assert np.all(np.diff(errors) < 0), errors
    # tolerance proportionality: four decades of rtol buy at least three of error
    assert errors[0] / errors[-1] > 1e3
    energy = [r["energy_error"] for r in grid]
    assert energy[-1] < 1e-2 * energy[0]


def test_monotone_decades():
    figures = load_figures()
    table = {"rtol": np.array([1e-3, 1e-4, 1e-5, 1e-6]),
             "output_error": np.array([1e-2, 1e-3, 2e-3, 1e-4])}
    assert figures.monotone_decades(table) == pytest.approx(1.0)
    table["output_error"] = np.array([1e-2, 1e-3, 1e-4, 1e-5])
    assert figures.monotone_decades(table) == pytest.approx(3.0)


def test_work_precision_compares_backends_and_stabilizations():
    combos = precision.comparison("dense")
    assert {s for s, p in combos if p == "position+velocity"} == set(nc.available_solvers())
    assert {p for s, p in combos if s == "dense"} == set(precision.STABILIZATIONS)


def test_cli_and_figures(six_bar, grid, tmp_path):
    """``natcoord bench tolerance``, then every figure and the results table."""
    data = tmp_path / "data"
    assert cli_main(["bench", "tolerance", "six-bar", "--rtol", "1e-4:1e-5", "--t-end", "0.3",
                     "--repeat", "1", "--work-precision", "--out",
                     str(data / "six_bar_precision.csv")]) == 0
    rows = records.read_csv(data / "six_bar_precision.csv")
    assert len(rows) == 2 * len(precision.comparison(rows[0]["solver"]))
    # Baumgarte stabilization lets the constraints drift; projection holds them
    drift = {(r["projection"], r["rtol"]): r["max_constraint_residual"] for r in rows}
    for rtol in (1e-4, 1e-5):
        assert drift["position+velocity", rtol] <= 1e-10 < drift["baumgarte", rtol]
    records.write_csv(data / "six_bar_tolerance.csv", grid, tolerance.COLUMNS, "test grid")
    figures = load_figures()
    results = figures.main(data, tmp_path / "figures", tmp_path, diagrams=False)
    for name in ("six_bar_runtime_vs_tol.png", "six_bar_work_precision.png"):
        assert (tmp_path / "figures" / name).stat().st_size > 10_000
    assert results["six_bar_monotone_decades_max"] == "4"
    assert "| `six_bar_time_at_target` |" in (tmp_path / "results.md").read_text()
    assert figures.render("P3 in {{six_bar_time_at_target}} s", results) == \
        f"P3 in {results['six_bar_time_at_target']} s"
    with pytest.raises(KeyError, match="no_such_number"):
        figures.render("{{no_such_number}}", results)


def test_hexapod_speed_row(tmp_path):
    model = nc.models.hexapod(scenario="driven").build()
    row = hexapod_speed.realtime_factor(model, t_end=0.1, repeat=2)
    assert row["success"] and row["repeat"] == 2
    assert row["dropped"] == 0                                       # docs/benchmarks.md
    assert row["max_constraint_residual"] <= 1e-10 and row["max_velocity_residual"] <= 1e-10
