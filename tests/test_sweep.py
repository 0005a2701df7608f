"""nc.sweep on a 2-worker LocalCluster (loopback only): results equal a plain
sequential loop of nc.simulate bit for bit, failures are rows, a study resumes,
Monte Carlo is reproducible. Short runs: six-bar for 0.5 s at loose rtol."""
import math

import numpy as np
import pytest

import natcoord as nc
from natcoord.cli import main as cli_main
from natcoord.study import cluster, command
from natcoord.study.grid import expand, split
from natcoord.study.keys import task_key
from natcoord.study.log import read
from natcoord.study.records import as_table
from natcoord.study.sweep import sweep
from natcoord.study.tolerance import Reference

pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

T_END = 0.5
GRID = {"section": [0.05, 0.1], "rtol": [1e-4, 1e-5]}


@pytest.fixture(scope="module")
def client():
    client = cluster.local_client(2)
    yield client
    cluster.close_client(client)


def test_workers_import_this_natcoord(client):
    assert cluster.check_workers(client) == {cluster.natcoord_location()}
    assert all(addr.startswith("tcp://127.0.0.1:") for addr in client.scheduler_info()["workers"])


def test_sweep_equals_sequential_loop(client):
    """Same steps, same end state bitwise, same errors as nc.simulate run here."""
    table = sweep("six-bar", GRID, {"t_end": T_END}, client=client)
    assert list(table["section"]) == [0.05, 0.05, 0.1, 0.1]
    assert list(table["rtol"]) == [1e-4, 1e-5, 1e-4, 1e-5]
    references = {}
    for row in table.to_dict("records"):
        model = nc.models.six_bar(section=row["section"]).build()
        sol = nc.simulate(model, T_END, rtol=row["rtol"])
        P3 = sol.point("rod2", (1, -1, 0))[-1]
        V3 = sol.point_velocity("rod2", (1, -1, 0))[-1]
        assert row["success"] and row["message"] == sol.message
        for k in ("steps", "rejected", "rhs", "factorizations", "projection_iterations"):
            assert row[k] == sol.stats[k], k
        assert row["t_final"] == T_END
        assert [row["output_x"], row["output_y"], row["output_z"]] == P3.tolist()
        assert [row["output_vx"], row["output_vy"], row["output_vz"]] == V3.tolist()
        assert row["energy_drift"] == np.abs(sol.energy - sol.energy[0]).max()
        assert row["dropped"] == 1
        if row["section"] not in references:
            references[row["section"]] = Reference(model, T_END)
        ref = references[row["section"]]
        error = np.linalg.norm(sol.point("rod2", (1, -1, 0)) - ref.point(sol.t), axis=1).max()
        assert row["output_error"] == pytest.approx(error, rel=1e-12, abs=1e-15)
        assert 0 < row["output_error"] < 1e-2
        assert row["wall_time_min"] <= row["wall_time"] <= row["wall_time_max"]
        assert row["host"] and row["cpu"]
    # a tighter tolerance is more accurate, for both sections
    errors = table.set_index(["section", "rtol"])["output_error"]
    for section in GRID["section"]:
        assert errors[section, 1e-5] < errors[section, 1e-4]


def test_failed_runs_become_rows(client):
    grid = [{"section": 0.1}, {"section": 0.1, "max_steps": 2}, {"mass": -1.0},
            {"section": 0.1, "projection": "velocity", "proj_tol": "not a number"}]
    table = sweep("six-bar", grid, {"t_end": T_END, "rtol": 1e-4}, client=client,
                        measures=("end", "stats"))
    assert list(table["success"]) == [True, False, False, False]
    messages = list(table["message"])
    assert "maximum number of steps (2)" in messages[1]
    assert table["steps"][1] + table["rejected"][1] == 2        # partial solution measured
    assert table["t_final"][1] < T_END
    assert "rod1" in messages[2] and "mass" in messages[2]
    assert messages[3].startswith("TypeError")
    assert math.isnan(table["steps"][2])


def test_unknown_parameter_fails_before_any_task():
    with pytest.raises(ValueError, match="not \\['colour'\\]"):
        sweep("six-bar", {"colour": ["red"]}, client="tcp://127.0.0.1:1")


def test_resume_skips_finished_rows(client, tmp_path):
    out = tmp_path / "study.csv"
    first = sweep("six-bar", {"section": [0.05, 0.1]}, {"t_end": T_END, "rtol": 1e-4},
                        client=client, out=out, measures=("end", "stats", "time"))
    lines = out.read_text().splitlines()
    assert lines[0].startswith("# ") and "nc.sweep" in lines[1]
    # a crash in the middle of writing a row: half a line at the end
    out.write_text("\n".join(lines) + "\n" + lines[-1][:20])
    second = sweep("six-bar", {"section": [0.05, 0.1, 0.2]},
                         {"t_end": T_END, "rtol": 1e-4}, client=client, out=out,
                         measures=("end", "stats", "time"))
    stored = read(out)
    assert len(stored) == 3 and sorted(stored["key"]) == sorted(second["key"])
    # the two finished rows were read back, not run again (same timing to the bit)
    pd.testing.assert_frame_equal(second.iloc[:2], first, check_dtype=False)
    assert second["success"].all() and second["section"].tolist() == [0.05, 0.1, 0.2]
    with pytest.raises(ValueError, match="another study"):
        sweep("six-bar", {"section": [0.1]}, {"t_end": T_END}, client=client, out=out,
                    measures=("end",))


def sampler(rng):
    return {"section": rng.uniform(0.09, 0.11), "mass": rng.normal(1.0, 0.02)}


def test_monte_carlo_is_reproducible(client):
    common = {"t_end": 0.3, "rtol": 1e-4}
    a = sweep("six-bar", sampler, common, n_samples=4, seed=7, client=client,
                    measures=("end", "stats"))
    b = sweep("six-bar", sampler, common, n_samples=2, seed=7, client=client,
                    measures=("end", "stats"))
    assert list(a["sample"]) == [0, 1, 2, 3] and a["success"].all()
    assert len(set(a["section"])) == 4
    pd.testing.assert_frame_equal(a.iloc[:2], b)      # sample i depends on (seed, i) only
    c = sweep("six-bar", sampler, common, n_samples=2, seed=8, client=client,
                    measures=("end",))
    assert not np.isin(c["section"], a["section"]).any()


def test_cli_sweep(client, tmp_path):
    out = tmp_path / "cli.csv"
    assert cli_main(["sweep", "six-bar", "--param", "section=0.05:0.1:2", "--rtol", "1e-4",
                     "--t-end", "0.3", "--measures", "end,stats", "--scheduler",
                     client.scheduler.address, "--out", str(out), "--quiet"]) == 0
    text = out.read_text()
    assert "natcoord sweep six-bar --param section=0.05:0.1:2" in text.splitlines()[1]
    assert read(out)["section"].tolist() == [0.05, 0.1] or \
        sorted(read(out)["section"]) == [0.05, 0.1]
    assert cli_main(["sweep", "six-bar", "--param", "section=0.09:0.11", "--samples", "3",
                     "--seed", "1", "--t-end", "0.3", "--rtol", "1e-4", "--measures", "end",
                     "--scheduler", client.scheduler.address, "--out",
                     str(tmp_path / "mc.csv"), "--quiet"]) == 0
    mc = read(tmp_path / "mc.csv")
    assert sorted(mc["sample"]) == [0, 1, 2] and mc["success"].all()
    assert ((0.09 <= mc["section"]) & (mc["section"] <= 0.11)).all()


def test_cli_sweep_reference_tolerances(client, tmp_path, capsys):
    """IFToMM A02's four-bar passes a singular pose at t ≈ 0.708 where the reference run
    at rtol = proj_tol = 1e-12 stops at the constraint check: the errors are NaN and the
    command says why and what sets the reference; ``--reference 1e-9,1e-10`` gives an
    error of the rtol = 1e-6 run against it below 1e-4 m (its tolerance times the
    motion's metre scale, with room)."""
    common = ["sweep", "four-bar", "--rtol", "1e-6", "--t-end", "1.5", "--measures", "error",
              "--scheduler", client.scheduler.address, "--quiet"]
    assert cli_main(common + ["--out", str(tmp_path / "default.csv")]) == 0
    row = read(tmp_path / "default.csv").iloc[0]
    assert math.isnan(row["output_error"]) and "reference run failed" in row["message"]
    assert "--reference RTOL,PROJ_TOL" in capsys.readouterr().err
    assert cli_main(common + ["--reference", "1e-9,1e-10",
                              "--out", str(tmp_path / "looser.csv")]) == 0
    row = read(tmp_path / "looser.csv").iloc[0]
    assert row["success"] and 0 < row["output_error"] < 1e-4
    assert cli_main(common + ["--reference", "1e-9", "--out", str(tmp_path / "x.csv")]) == 2
    assert "--reference 1e-9: give RTOL,PROJ_TOL" in capsys.readouterr().err


def test_parse_values():
    assert command.parse_values("0.5:2:4") == [0.5, 1.0, 1.5, 2.0]
    assert command.parse_values("1e-6:1e-8:3:log") == [1e-6, 1e-7, 1e-8]
    assert command.parse_values("0.05,0.1") == [0.05, 0.1]
    assert command.parse_values("block") == ["block"]
    rng = np.random.default_rng(0)
    assert 0.5 <= command.parse_values("0.5:2", sample=True)(rng) <= 2.0
    assert 1e-8 <= command.parse_values("1e-8:1e-6:log", sample=True)(rng) <= 1e-6
    assert command.parse_values("a,b", sample=True)(rng) in ("a", "b")
    with pytest.raises(ValueError):
        command.parse_values("1:2:3", sample=True)


def test_grid_expansion_and_keys():
    points = expand({"a": [1, 2], "b": [3.0, 4.0, 5.0]})
    assert [p for _, p in points][:2] == [{"a": 1, "b": 3.0}, {"a": 1, "b": 4.0}]
    assert len(points) == 6
    assert split({"rtol": 1e-6, "mass": 2.0, "t_end": 1.0}) == \
        ({"mass": 2.0}, {"rtol": 1e-6, "t_end": 1.0})
    key = task_key("six-bar", {"mass": 2.0, "rtol": 1e-6})
    assert key == task_key("six-bar", {"rtol": 1e-6, "mass": np.float64(2.0)})
    assert key != task_key("six-bar", {"mass": 2.0, "rtol": 1e-7})


def test_table_without_pandas():
    rows = [{"key": "a", "steps": 3, "success": True, "x": 0.5, "message": "ok"},
            {"key": "b", "steps": math.nan, "success": False, "x": 1.5, "message": "boom"}]
    table = as_table(rows, ["key", "steps", "success", "x", "message"], use_pandas=False)
    assert table.dtype["steps"] == np.float64 and table.dtype["success"] == bool
    assert table["message"].tolist() == ["ok", "boom"] and table["x"].tolist() == [0.5, 1.5]


def test_throughput_benchmark_rows_equal_the_plain_loop(tmp_path):
    """benchmarks/throughput.py: the sweep's rows on 1 and 2 workers, one run per task or
    batched, equal the loop's bit for bit."""
    from natcoord_bench import throughput
    rows = throughput.run(n=4, t_end=0.3, workers=(1, 2), out=tmp_path / "t.csv",
                          progress=False)
    assert [(r["mode"], r["workers"], r["batch"]) for r in rows] == [
        ("loop", 1, ""), ("dask", 1, 1), ("dask", 2, 1), ("dask", 1, "auto"), ("dask", 2, "auto")]
    assert all(r["identical"] for r in rows)
    assert all(r["runs_per_s"] > 0 for r in rows)
    assert (tmp_path / "t.csv").read_text().startswith("# ")


def test_batched_tasks_give_the_same_rows(client):
    """Several grid points per Dask task change nothing in the table."""
    grid = {"mass": [0.8, 1.0, 1.2], "rtol": [1e-5, 1e-7]}
    kwargs = dict(simulate_kwargs={"t_end": 0.2}, measures=("end", "stats"), client=client,
                  reference=None)
    one = nc.sweep("six-bar", grid, batch=1, **kwargs)
    batched = nc.sweep("six-bar", grid, batch=4, **kwargs)
    assert one.drop(columns="key").equals(batched.drop(columns="key"))
    with pytest.raises(ValueError, match="batch must be a whole number"):
        nc.sweep("six-bar", grid, batch=0, **kwargs)
