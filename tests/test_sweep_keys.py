"""A study's CSV never returns a stale row and never holds a key twice (issue 24, item 5).

Each test is a small spec: an edited factory, a retried failure, two studies
writing one file, an empty grid. Tiny runs (a soft spring pendulum for 0.1 s)
on a Dask worker in this process (``processes=False``): no worker processes
to start, and the worker sees this module's globals, which the tests edit
the way a user edits a factory.
"""
import threading

import numpy as np
import pytest

import natcoord as nc
from natcoord.cli import main as cli_main
from natcoord.study.cluster import close_client, local_client
from natcoord.study.keys import fingerprint, model_content, task_key
from natcoord.study.log import StudyLog, read
from natcoord.study.sweep import sweep
from natcoord.study.tasks import run_task

pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

T_END = 0.1
RUN = dict(simulate_kwargs={"t_end": T_END, "rtol": 1e-4}, measures=("end", "stats"),
           reference=None)
#: what the factories below read: "editing the factory" is changing these
PLANET = {"gravity": 9.81}
BROKEN = {"push": False}


def swing(length=1.0):
    """A soft spring pendulum under ``PLANET["gravity"]``."""
    return nc.models.spring_pendulum(stiffness=200.0, length=length,
                                     gravity=PLANET["gravity"])


def push(t, state):
    """A force that fails (NaN) while ``BROKEN["push"]``."""
    return (np.nan if BROKEN["push"] else 0.0, 0.0, 0.0)


def pushed(length=1.0):
    """The pendulum with a callable force (no model file can store it)."""
    mech = swing(length)
    mech.add_force("ball", (0.0, 0.0, 0.0), push, name="push")
    return mech


@pytest.fixture(scope="module")
def client():
    client = local_client(1, processes=False, threads_per_worker=2)
    yield client
    close_client(client)


@pytest.fixture(autouse=True)
def restore():
    yield
    PLANET["gravity"], BROKEN["push"] = 9.81, False


def data_lines(path):
    """The row lines of a CSV (after the ``#`` header and the column line)."""
    return [line for line in path.read_text().splitlines() if not line.startswith("#")][1:]


# ------------------------------------------------------------------ keys
def test_the_key_hashes_the_built_model_not_the_factory_name():
    before = model_content(swing, {"length": 1.0})
    assert model_content(swing, {"length": 1.0}) == before          # stable
    assert model_content(swing, {"length": 1.5}) != before          # parameters
    PLANET["gravity"] = 1.62                                         # the factory edited
    after = model_content(swing, {"length": 1.0})
    assert after != before
    params = {"length": 1.0, "t_end": T_END}
    assert task_key(swing, params, content=before) != task_key(swing, params, content=after)


def test_built_models_and_callables_are_hashed_by_content():
    model = swing().build()
    assert fingerprint(model) == fingerprint(swing().build())
    assert fingerprint(model) != fingerprint(model.with_parameters({"gravity:y": -1.62}))
    # a callable force: the mechanism has no model file, its code is hashed instead
    assert model_content(pushed, {}) == model_content(pushed, {})
    assert model_content(pushed, {}) != model_content(swing, {})


def broken(length=1.0):
    """A factory that raises: its rows are keyed by its error."""
    raise ValueError(f"no pendulum of length {length}")


@pytest.mark.parametrize("factory", [swing, pushed, broken])
def test_a_task_hashes_the_model_it_runs_as_the_client_would(factory):
    """The task computes its row's content from the model it builds (the client
    does so only for points a resumed file may answer): the same hash."""
    row = run_task(factory, {"length": 1.2, "t_end": T_END}, measures=("end",), content=True)
    assert row["success"] is (factory is not broken)
    assert row["content"] == model_content(factory, {"length": 1.2})


# ------------------------------------------------------------------ stale rows
def test_an_edited_factory_runs_its_points_again(client, tmp_path, capsys):
    """Gravity 9.81 → 1.62 in the factory: the rows of the old model are not returned
    but run again, and the new rows replace the old ones in the file."""
    out = tmp_path / "study.csv"
    grid = {"length": [1.0, 1.5]}
    earth = sweep(swing, grid, client=client, out=out, **RUN)
    PLANET["gravity"] = 1.62
    moon = sweep(swing, grid, client=client, out=out, **RUN)
    assert "2 rows were computed with another model" in capsys.readouterr().err
    assert moon["success"].all()
    assert not set(moon["key"]) & set(earth["key"])
    assert (moon["output_x"] != earth["output_x"]).all()             # really run again
    direct = nc.simulate(swing(1.0).build(), T_END, rtol=1e-4)
    assert moon["steps"][0] == direct.stats["steps"]                 # with the moon's gravity
    stored = read(out)
    assert sorted(stored["key"]) == sorted(moon["key"]) and len(data_lines(out)) == 2
    # unchanged now: resumed, nothing run again
    again = sweep(swing, grid, client=client, out=out, **RUN)
    assert "resuming" in capsys.readouterr().err
    pd.testing.assert_frame_equal(again, moon)


# ------------------------------------------------------------------ one row per key
def test_retry_failed_replaces_the_failed_row(client, tmp_path, capsys):
    """A failed row run again with retry_failed=True takes the old row's place:
    one row per key, not three rows for two points."""
    out = tmp_path / "study.csv"
    grid = {"length": [1.0, 1.5]}
    BROKEN["push"] = True
    first = sweep(pushed, grid, client=client, out=out, **RUN)
    assert not first["success"].any() and "push" in first["message"][0]
    BROKEN["push"] = False                     # mended outside the model: same keys
    kept = sweep(pushed, grid, client=client, out=out, **RUN)
    assert not kept["success"].any()           # without retry_failed the rows stand
    retried = sweep(pushed, grid, client=client, out=out, retry_failed=True, **RUN)
    assert retried["success"].all() and list(retried["key"]) == list(first["key"])
    assert len(data_lines(out)) == 2
    stored = read(out)
    assert stored["success"].all() and sorted(stored["key"]) == sorted(first["key"])


def test_two_logs_of_one_file_append_each_key_once(tmp_path):
    """Two studies opened the file before either wrote: the second does not append
    the key the first appended meanwhile, and takes the first's row for it."""
    out, columns = tmp_path / "study.csv", ["key", "x", "success", "message"]
    a = StudyLog(out, columns, "a")
    b = StudyLog(out, columns, "b")
    a.append([{"key": "k1", "x": 1.0, "success": True, "message": "a"},
              {"key": "k2", "x": 2.0, "success": True, "message": "a"}])
    held = b.append([{"key": "k2", "x": 20.0, "success": True, "message": "b"},
                     {"key": "k3", "x": 3.0, "success": True, "message": "b"}])
    assert [(r["key"], r["message"]) for r in held] == [("k2", "a"), ("k3", "b")]
    a.append([{"key": "k3", "x": 30.0, "success": True, "message": "a"}])
    assert [line.split(",")[0] for line in data_lines(out)] == ["k1", "k2", "k3"]
    assert list(read(out)["message"]) == ["a", "a", "b"]


def test_two_sweeps_into_one_file_at_once(client, tmp_path):
    """Two studies with overlapping grids write one CSV at the same time: every key
    once in the file, and each study's table agrees with it."""
    out = tmp_path / "study.csv"
    tables = {}

    def study(name, lengths):
        tables[name] = sweep(swing, {"length": lengths}, client=client, out=out, batch=1,
                             **RUN)

    other = threading.Thread(target=study, args=("a", [1.0, 1.1, 1.2, 1.3, 1.4]))
    other.start()
    study("b", [1.2, 1.3, 1.4, 1.5, 1.6])
    other.join()
    keys = [line.split(",")[0] for line in data_lines(out)]
    assert len(keys) == len(set(keys)) == 7
    stored = read(out).set_index("key")
    for table in tables.values():
        assert table["success"].all()
        for row in table.to_dict("records"):
            assert stored.loc[row["key"], "output_x"] == row["output_x"]


# ------------------------------------------------------------------ empty grids
@pytest.mark.parametrize("grid, n_samples, match", [
    ({"length": [1.0], "mass": []}, None, "'mass' has no values"),
    ([], None, "empty list"),
    (lambda rng: {"length": rng.uniform(1, 2)}, 0, "n_samples"),
])
def test_an_empty_grid_is_refused(grid, n_samples, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        sweep(swing, grid, n_samples=n_samples, seed=1, out=tmp_path / "s.csv",
              client="tcp://127.0.0.1:1", **RUN)             # refused before connecting
    assert not (tmp_path / "s.csv").exists()


def test_the_command_line_refuses_an_empty_grid_and_a_directory(tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert cli_main(["sweep", "six-bar", "--param", "mass=1:2:0", "--out", str(out),
                     "--scheduler", "tcp://127.0.0.1:1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--param mass=1:2:0" in err and "n ≥ 1" in err and len(err.splitlines()) == 1
    assert not out.exists()
    assert cli_main(["sweep", "six-bar", "--param", "mass=1", "--out", str(tmp_path),
                     "--scheduler", "tcp://127.0.0.1:1", "--quiet"]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_keys_that_look_like_numbers_stay_keys(tmp_path):
    """A hex key such as ``5e12…`` or ``1234…`` is read back as the same text."""
    out, columns = tmp_path / "study.csv", ["key", "success", "message"]
    keys = ["5e12345678901234", "1234567890123456", "00ab"]
    StudyLog(out, columns, "test").append([{"key": k, "success": True, "message": ""}
                                           for k in keys])
    assert list(StudyLog(out, columns, "again").rows) == keys
    assert list(read(out)["key"]) == keys
