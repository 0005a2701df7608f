"""A hostile user against model building, model files, import, the command line,
sweeps and figures: each test is a defect that was found this way, fixed where
it arose.

* A direction whose length overflows a float (components 1e200) is still a
  direction: it was divided by an infinite norm into a zero axis whose
  constraint rows were NaN, and the model built and ran without a word.
* ``save_mechanism`` writes only files ``load_mechanism`` reads: a mass of
  ``True``, a mechanism name that is no string, a scenario with a NaN end time or
  output point were written and then refused on loading.
* Readers never wait: a named pipe given as a model, URDF or MJCF file blocked
  the reader for ever (the URDF reader also read files of any size).
* Importers check ``t_end`` as the file reader does.
* Errors say what to change: a body of 1e-320 kg raised NumPy's "Eigenvalues
  did not converge"; a 1 μm body was told to take "the inertia of its real size",
  which it had; a massless body's error read "nan of the largest".
* The command line and sweeps refuse, in one line, what they cannot hold or
  would silently replace: ``--outputs 10**12`` (a MemoryError traceback),
  ``a:b:n`` grids beyond memory, ``1:inf:3`` (a grid of nan, inf, inf),
  ``--param`` given twice (the last won), ``--repeat 0`` and ``--workers 0``
  (taken for 1 and for the default), ``--samples 0`` (ran a grid instead).
* ``natcoord info --structure`` whose file another writer keeps locked exits 3
  in one line, as ``simulate --out/--plot`` do (it was a traceback).
* ``nc.animate`` names a bad ``frames`` or an empty ``segments``.
"""
import json
import os
import threading

import numpy as np
import pytest

import natcoord as nc
from natcoord import cli
from natcoord.io import modelfile, xml_common
from natcoord.study import command, grid
from natcoord.util import resources

ROD = nc.rod_inertia(1.0, 1.0, 0.05)


def _pendulum(axis=(0.0, 0.0, 1.0), gravity=(0.0, -9.81, 0.0)):
    mech = nc.Mechanism(gravity=gravity, name="pendulum")
    mech.add_body("rod", 1.0, (0.5, 0.0, 0.0), ROD)
    mech.add_revolute("ground", "rod", (0.0, 0.0, 0.0), axis, name="hinge")
    mech.scenario["t_end"] = 1.0
    return mech


# ------------------------------------------------------------------ builder
def test_an_axis_whose_length_overflows_is_still_its_direction():
    """(1e200, 1e200, 1e200) is the direction (1, 1, 1)/√3: the hinge keeps the rod's
    tip in the plane normal to it, as for the axis (1, 1, 1)."""
    huge = _pendulum(axis=(1e200, 1e200, 1e200)).build()
    unit = _pendulum(axis=(1.0, 1.0, 1.0)).build()
    sol_huge, sol_unit = nc.simulate(huge, 1.0), nc.simulate(unit, 1.0)
    u = np.ones(3) / np.sqrt(3.0)
    tip = sol_huge.point("rod", (1.0, 0.0, 0.0))
    assert np.all(np.isfinite(tip))
    assert np.abs(tip @ u - u[0]).max() < 1e-9          # a revolute: axial offset constant
    assert np.ptp(np.linalg.norm(tip, axis=1)) < 1e-9   # and radius constant
    assert np.ptp(tip[:, 1]) > 0.1                      # and it swings under gravity
    np.testing.assert_allclose(sol_huge.p, sol_unit.p, atol=1e-12)


def test_a_denormal_mass_is_named_with_what_to_change():
    mech = nc.Mechanism()
    with pytest.raises(ValueError, match=r"body 'dust': its spatial inertia is numerically "
                                         r"singular .*radii of gyration"):
        mech.add_body("dust", 1e-320, (0.0, 0.0, 0.0), 0.1 * np.eye(3))
    assert mech.bodies == [] and getattr(mech, "calls", []) == []


def test_a_body_far_from_a_metre_is_told_to_change_the_length_unit():
    """A 1 μm rod with its own inertia is refused for conditioning (measured in
    metres); the error must not ask for 'the inertia of its real size' only."""
    mech = nc.Mechanism()
    with pytest.raises(ValueError, match=r"body 'flagellum'.*length unit near its size"):
        mech.add_body("flagellum", 1e-15, (0.5e-6, 0.0, 0.0),
                      nc.rod_inertia(1e-15, 1e-6, 5e-8))


def test_a_massless_body_without_support_is_named_without_nan():
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0))
    mech.add_body("frame", 0.0, (0.0, 0.0, 0.0), np.zeros((3, 3)))
    mech.add_revolute("ground", "frame", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    with pytest.raises(ValueError, match=r"point masses \['frame'\]") as error:
        mech.build()
    assert "nan" not in str(error.value)


def test_a_distance_error_shows_the_length_as_a_number():
    mech = _pendulum()
    with pytest.raises(ValueError, match=r"length must be positive, got 0\.0$"):
        mech.add_distance("ground", "rod", (1.0, 0.0, 0.0), (1.0, 0.0, 0.0))


# ------------------------------------------------------------------ model files
@pytest.mark.parametrize("make, phrase", [
    (lambda: nc.Mechanism(name=None), "mechanism name must be a string, got None"),
    (lambda: nc.Mechanism().add_body("b", True, (0, 0, 0), np.eye(3)),
     "body 'b': mass must be a number"),
], ids=["name None", "mass True"])
def test_values_a_file_cannot_hold_are_refused_by_the_builder(make, phrase):
    with pytest.raises(ValueError, match=phrase):
        make()


def _edit_name(mech):
    mech.name = 5


def _edit_t_end(mech):
    mech.scenario["t_end"] = float("nan")


def _edit_output_point(mech):
    mech.scenario["output_point"] = ("rod", (1.0, float("nan"), 0.0))


@pytest.mark.parametrize("edit, phrase", [
    (_edit_name, r"name: 5 is not of type 'string'"),
    (_edit_t_end, r"t_end must be a positive finite number, got nan"),
    (_edit_output_point, r"output_point: the point must be 3 finite numbers"),
], ids=["name", "t_end", "output point"])
def test_a_save_that_would_not_load_is_refused_and_the_old_file_kept(edit, phrase, tmp_path):
    path = tmp_path / "pendulum.json"
    nc.save_mechanism(_pendulum(), path)
    before = path.read_bytes()
    mech = _pendulum()
    edit(mech)
    with pytest.raises(ValueError, match=r"pendulum\.json: not written, load_mechanism "
                                         r"would refuse it.*" + phrase):
        nc.save_mechanism(mech, path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["pendulum.json"]
    nc.load_mechanism(path).build()


def test_a_file_with_a_nan_output_point_is_refused(tmp_path):
    data = modelfile.to_dict(_pendulum())
    data["scenario"]["output_point"] = ["rod", [1.0, float("nan"), 0.0]]
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(data))        # Python writes the NaN literal
    with pytest.raises(ValueError, match=r"nan\.json: scenario/output_point: the point must "
                                         r"be 3 finite numbers"):
        nc.load_mechanism(path)


def _robot_files(tmp_path):
    nc.save_mechanism(_pendulum(), tmp_path / "model.json")
    (tmp_path / "robot.urdf").write_text(URDF)
    (tmp_path / "robot.xml").write_text(MJCF)
    return tmp_path


URDF = """<robot name="arm">
  <link name="base"/>
  <link name="rod"><inertial><origin xyz="0.5 0 0"/><mass value="1"/>
    <inertia ixx="0.0004" iyy="0.0835" izz="0.0835" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hinge" type="continuous"><parent link="base"/><child link="rod"/>
    <axis xyz="0 0 1"/></joint>
</robot>
"""
MJCF = """<mujoco model="arm"><worldbody><body name="rod">
  <joint name="hinge" type="hinge" axis="0 0 1"/>
  <inertial pos="0.5 0 0" mass="1" diaginertia="0.0004 0.0835 0.0835"/>
</body></worldbody></mujoco>
"""
READERS = {"model file": (nc.load_mechanism, "model.json"),
           "urdf": (nc.load_urdf, "robot.urdf"), "mjcf": (nc.load_mjcf, "robot.xml")}


@pytest.mark.parametrize("load, name", READERS.values(), ids=READERS.keys())
def test_a_named_pipe_is_refused_without_waiting_for_a_writer(load, name, tmp_path):
    if name.endswith(".xml"):
        pytest.importorskip("mujoco")
    pipe = tmp_path / name
    os.mkfifo(pipe)
    outcome = []

    def read():
        try:
            load(pipe)
        except Exception as err:                   # noqa: BLE001 -- the outcome is checked
            outcome.append(err)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():                          # blocked in open(): release it, then fail
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=10)
        pytest.fail(f"{name}: the reader waited for a writer of the pipe")
    assert len(outcome) == 1 and isinstance(outcome[0], ValueError)
    assert f"cannot read {'model file ' if name == 'model.json' else ''}{pipe}: not a " \
           f"regular file" in str(outcome[0])


@pytest.mark.parametrize("load, name", READERS.values(), ids=READERS.keys())
def test_the_readers_still_read_regular_files(load, name, tmp_path):
    if name.endswith(".xml"):
        pytest.importorskip("mujoco")
    model = load(_robot_files(tmp_path) / name).build()
    assert model.n_bodies == 1 and [j.name for j in model.joints] == ["hinge"]


def test_an_oversized_urdf_is_refused_before_parsing(tmp_path, monkeypatch):
    path = _robot_files(tmp_path) / "robot.urdf"
    monkeypatch.setattr(xml_common, "MAX_XML_BYTES", len(URDF) - 1)
    with pytest.raises(ValueError, match=r"robot\.urdf: larger than"):
        nc.load_urdf(path)
    monkeypatch.setattr(xml_common, "MAX_XML_BYTES", len(URDF))
    assert nc.load_urdf(path).build().n_bodies == 1


@pytest.mark.parametrize("t_end", [-1.0, 0.0, float("nan"), "abc"])
@pytest.mark.parametrize("load, name", [v for k, v in READERS.items() if k != "model file"],
                         ids=["urdf", "mjcf"])
def test_importers_refuse_a_bad_t_end_as_the_file_reader_does(load, name, t_end, tmp_path):
    if name.endswith(".xml"):
        pytest.importorskip("mujoco")
    with pytest.raises(ValueError, match=r"t_end must be a positive finite number"):
        load(_robot_files(tmp_path) / name, t_end=t_end)


# ------------------------------------------------------------------ command line
def _cli(capsys, *argv):
    try:
        status = cli.main(list(argv))
    except SystemExit as exit_:
        status = exit_.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


def test_more_outputs_than_memory_holds_is_one_line_and_exit_2(capsys):
    status, _, err = _cli(capsys, "simulate", "chain", "--param", "n=3", "--outputs",
                          str(10**12), "--quiet")
    assert status == 2
    assert err.startswith("natcoord: --outputs 1000000000000 (36 coordinates each) would "
                          "take about")
    assert "simulating" not in err                 # refused before the run starts


@pytest.mark.parametrize("argv, phrase", [
    (["info", "chain", "--param", "n=3", "--param", "n=4"], "--param n is given twice"),
    (["info", "hexapod", "--scenario", "passive", "--param", "scenario=driven"],
     "both give the scenario"),
], ids=["param twice", "scenario twice"])
def test_a_parameter_given_twice_is_refused(capsys, argv, phrase):
    status, out, err = _cli(capsys, *argv)
    assert status == 2 and phrase in err and not out


# ------------------------------------------------------------------ sweeps
@pytest.mark.parametrize("text, sample, phrase", [
    ("1:inf:3", False, "must be finite"),
    ("nan:1:3", False, "must be finite"),
    ("-1:2:3:log", False, "positive bounds"),
    ("0:1:log", True, "positive bounds"),
    ("1:inf", True, "must be finite"),
    ("1~-0.5", True, "sd >= 0"),
])
def test_ranges_without_a_meaning_are_refused(text, sample, phrase):
    with pytest.raises(ValueError, match=phrase):
        command.parse_values(text, sample=sample)


def test_ranges_with_a_meaning_still_parse():
    assert command.parse_values("1:100:3:log") == [1.0, 10.0, 100.0]
    assert command.parse_values("0:1:3") == [0.0, 0.5, 1.0]
    rng = np.random.default_rng(0)
    assert 1.0 <= command.parse_values("1:10:log", sample=True)(rng) <= 10.0


def test_a_grid_beyond_memory_is_refused_before_it_is_made(monkeypatch):
    with pytest.raises(ValueError, match=r"'0:1:100000000000': a study of 1e\+11 points"):
        command.parse_values("0:1:100000000000")
    monkeypatch.setattr(resources, "physical_memory", lambda: 2**20)     # 1 MiB
    with pytest.raises(ValueError, match=r"the grid of 10 a, 100 b: a study of 1000 points"):
        grid.expand({"a": list(range(10)), "b": list(range(100))})
    with pytest.raises(ValueError, match=r"n_samples=1000: a study of 1000 points"):
        grid.expand(lambda rng: {"a": 1.0}, n_samples=1000, seed=1)
    assert len(grid.expand({"a": [1, 2]})) == 2


@pytest.mark.parametrize("keyword, value, phrase", [
    ("repeat", 0, "repeat must be at least 1, got 0"),
    ("workers", 0, "workers must be at least 1, got 0"),
])
def test_sweep_refuses_zero_repeats_and_workers_before_any_task(keyword, value, phrase):
    with pytest.raises(ValueError, match=phrase):
        nc.sweep("four-bar", {"gravity": [9.81]}, **{keyword: value})


@pytest.mark.parametrize("argv, phrase", [
    (["--samples", "0"], "--samples 0: give a number of samples >= 1"),
    (["--param", "gravity=1", "--param", "gravity=2"], "--param gravity is given twice"),
    (["--param", "rtol=1e-6", "--rtol", "1e-8"], "both give rtol"),
], ids=["no samples", "param twice", "rtol twice"])
def test_sweep_command_refuses_what_it_would_replace(capsys, tmp_path, argv, phrase):
    out = tmp_path / "study.csv"
    status, _, err = _cli(capsys, "sweep", "four-bar", *argv, "--out", str(out), "--quiet")
    assert status == 2 and phrase in err
    assert not out.exists()


# ------------------------------------------------------------------ figures
@pytest.fixture(scope="module")
def swing():
    return nc.simulate(_pendulum().build(), 0.2)


@pytest.mark.parametrize("kwargs, phrase", [
    ({"frames": 0}, "frames must be at least 1, got 0"),
    ({"fps": 0}, "fps must be a positive number"),
    ({"segments": []}, "segments is empty"),
])
def test_animate_names_the_argument(swing, kwargs, phrase):
    pytest.importorskip("matplotlib")
    with pytest.raises(ValueError, match=phrase):
        nc.animate(swing, **kwargs)


def test_info_structure_locked_by_another_writer_exits_3_in_one_line(capsys, tmp_path,
                                                                      monkeypatch):
    """As simulate's --out and --plot do (docs/cli.md: exit status 3); it was a
    FileLocked traceback."""
    pytest.importorskip("matplotlib")
    from natcoord.util import atomic
    monkeypatch.setattr(atomic, "LOCK_TIMEOUT", 0.2)
    figure = tmp_path / "structure.png"
    with atomic.locked(figure):
        status, out, err = _cli(capsys, "info", "four-bar", "--structure", str(figure))
    assert status == 3
    assert err.startswith(f"natcoord: --structure {figure}: diagram not written: ")
    assert not figure.exists()


# ------------------------------------------------------------------ benchmark factories
@pytest.mark.parametrize("call, error, phrase", [
    (lambda: nc.models.chain("abc"), TypeError, r"chain\(n='abc'\): n must be an integer"),
    (lambda: nc.models.chain(3.5), TypeError, r"n must be an integer, got 3.5"),
    (lambda: nc.models.chain(True), TypeError, r"n must be an integer, got True"),
    (lambda: nc.models.chain(8, loops=-1), ValueError, r"loops must be at least 0"),
    (lambda: nc.models.tree("x"), TypeError, r"depth must be an integer"),
    (lambda: nc.models.n_four_bar(2.5), TypeError, r"N must be an integer, got 2.5"),
])
def test_benchmark_factories_name_a_count_that_is_not_a_whole_number(call, error, phrase):
    """Before: "'<' not supported between 'str' and 'int'", "'float' object cannot be
    interpreted as an integer", and chain(True) built a one-rod chain."""
    with pytest.raises(error, match=phrase):
        call()
