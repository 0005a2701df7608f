"""Trust in the builder, the command line and saved results (issue 8).

Bad builder input names the body, joint or force and the field; callbacks
(forces, drives) are checked where they are read; the CLI rejects bad flag
values before simulating and keeps partial results; saved solutions reload
without pickle.
"""
import numpy as np
import pytest

import natcoord as nc
from natcoord import cli
from natcoord.linalg.base import MassSpreadError, available_solvers
from natcoord.util.checks import NonFiniteValue

NAN = float("nan")
ROD = dict(mass=1.0, com=(0.5, 0.0, 0.0), inertia=nc.rod_inertia(1.0, 1.0, 0.05))


def hinged_rod():
    """A rod hinged to ground at the origin about z (gravity −y)."""
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0))
    mech.add_body("rod", **ROD)
    mech.add_revolute(nc.GROUND, "rod", point=(0, 0, 0), axis=(0, 0, 1), name="hinge")
    return mech


def raises(call, *phrases, error=ValueError):
    """``call()`` raises ``error`` whose message contains every phrase."""
    with pytest.raises(error) as err:
        call()
    for phrase in phrases:
        assert phrase in str(err.value)
    return err.value


# ------------------------------------------------------------------ builder
def _body(**change):
    return lambda m: m.add_body("box", **{**ROD, **change})


def _joint(kind, **args):
    return lambda m: getattr(m, f"add_{kind}")(nc.GROUND, "rod", name="pin", **args)


SPRING = dict(point_a=(1, 1, 0), point_b=(1, 0, 0), stiffness=10.0, name="coil")
AXIS = dict(point=(1, 0, 0), axis=(0, 0, 1))

NON_NUMERIC = {  # builder call -> phrases: where and which field
    "body mass": (_body(mass="abc"), ["body 'box'", "mass", "'abc'"]),
    "body com": (_body(com=("a", 0, 0)), ["body 'box'", "com"]),
    "body inertia": (_body(inertia="abc"), ["body 'box'", "inertia"]),
    "body ragged inertia": (_body(inertia=[[1, 0], [0]]), ["body 'box'", "inertia"]),
    "body origin": (_body(origin=None), ["body 'box'", "origin"]),
    "body axes": (_body(axes=[["a"] * 3] * 3), ["body 'box'", "axes"]),
    "revolute point": (_joint("revolute", point="abc", axis=(0, 0, 1)),
                       ["revolute joint 'pin'", "point"]),
    "revolute axis": (_joint("revolute", point=(1, 0, 0), axis=("x", "y", "z")),
                      ["revolute joint 'pin'", "axis"]),
    "spherical point": (_joint("spherical", point=None), ["spherical joint 'pin'", "point"]),
    "universal axis_a": (_joint("universal", point=(1, 0, 0), axis_a="z", axis_b=(0, 1, 0)),
                         ["universal joint 'pin'", "axis_a"]),
    "cylindrical axis": (_joint("cylindrical", point=(1, 0, 0), axis={"z": 1}),
                         ["cylindrical joint 'pin'", "axis"]),
    "prismatic point": (_joint("prismatic", point={"x": 1}, axis=(1, 0, 0)),
                        ["prismatic joint 'pin'", "point"]),
    "fixed point": (_joint("fixed", point="abc"), ["fixed joint 'pin'", "point"]),
    "distance length": (_joint("distance", point_a=(1, 1, 0), point_b=(1, 0, 0), length="1m"),
                        ["distance joint 'pin'", "length", "'1m'"]),
    "distance point_b": (_joint("distance", point_a=(1, 1, 0), point_b="b"),
                         ["distance joint 'pin'", "point_b"]),
    "spring stiffness": (lambda m: m.add_spring(nc.GROUND, "rod", **{**SPRING, "stiffness": "k"}),
                         ["spring 'coil'", "stiffness", "'k'"]),
    "spring damping": (lambda m: m.add_spring(nc.GROUND, "rod", **SPRING, damping=None),
                       ["spring 'coil'", "damping"]),
    "spring rest_length": (lambda m: m.add_spring(nc.GROUND, "rod", **SPRING, rest_length="x"),
                           ["spring 'coil'", "rest_length"]),
    "spring point_a": (lambda m: m.add_spring(nc.GROUND, "rod", **{**SPRING, "point_a": "a"}),
                       ["spring 'coil'", "point_a"]),
    "force value": (lambda m: m.add_force("rod", point=(1, 0, 0), force=("a", 0, 0)),
                    ["force on 'rod' (#1)", "force must be 3 finite numbers"]),
    "force point": (lambda m: m.add_force("rod", point="tip", force=(0, 1, 0), name="push"),
                    ["force 'push' on 'rod'", "point"]),
    "torque value": (lambda m: m.add_torque("rod", torque="abc"),
                     ["torque on 'rod' (#1)", "torque must be 3 finite numbers"]),
    "initial origin": (lambda m: m.set_initial("rod", origin="abc"),
                       ["initial state of body 'rod'", "origin"]),
    "initial axes": (lambda m: m.set_initial("rod", axes="abc"), ["body 'rod'", "axes"]),
    "initial velocity": (lambda m: m.set_initial("rod", velocity=("fast", 0, 0)),
                         ["initial state of body 'rod'", "velocity"]),
    "initial angular velocity": (lambda m: m.set_initial("rod", angular_velocity="spin"),
                                 ["initial state of body 'rod'", "angular_velocity"]),
    "gravity": (lambda m: nc.Mechanism(gravity="down", name="lab"),
                ["mechanism 'lab'", "gravity"]),
}


@pytest.mark.parametrize("add, phrases", NON_NUMERIC.values(), ids=NON_NUMERIC.keys())
def test_non_numeric_input_names_where_and_field(add, phrases):
    mech = hinged_rod()
    raises(lambda: add(mech), *phrases)
    # nothing half-added
    assert ([b.name for b in mech.bodies], [j.name for j in mech.joints], mech.forces) == (
        ["rod"], ["hinge"], [])


def test_a_thin_plate_is_a_body_and_swings_as_the_compound_pendulum():
    """A 2 kg plate 0.3 m × 0.2 m and 1 µm thick (its thin second moment 7.7e-12 of its
    largest principal moment; tiago's arm_1_link: 1.1e-10): J4/m is conditioned beyond 1e12,
    its spatial inertia is not, and hinged about z at 0.25 m from its centre (the thin
    direction y in the plane of motion) it swings as the compound pendulum,
    θ̈ = −m g d cos θ / (I_zz + m d²) (gravity −y, θ from +x)."""
    m, a, b, t, d, g = 2.0, 0.3, 0.2, 1e-6, 0.25, 9.81
    inertia = m / 12 * np.diag([b**2 + t**2, a**2 + b**2, a**2 + t**2])   # plate in x–z
    mech = nc.Mechanism(gravity=(0.0, -g, 0.0))
    mech.add_body("plate", mass=m, com=(d, 0.0, 0.0), inertia=inertia)
    mech.add_revolute(nc.GROUND, "plate", point=(0, 0, 0), axis=(0, 0, 1), name="hinge")
    model = mech.build()
    assert np.linalg.cond(model.bodies[0].J4 / m) > 1e12
    js = nc.joint_space(model)
    for theta in (0.0, 0.7, -2.0):
        st = nc.joint_state(model, {"hinge": theta})
        a_nc, _, _ = nc.accelerations(model, st)
        qdd = js.accelerations(st.p, st.v, a_nc)[0]
        expected = -m * g * d * np.cos(theta) / (inertia[2, 2] + m * d**2)
        assert qdd == pytest.approx(expected, rel=1e-12, abs=1e-12)
    if "cholmod" in available_solvers():     # its range-space method inverts J4: refused
        raises(lambda: nc.accelerations(model, st, solver="cholmod"), "cholmod", "['plate']",
               "J4/m conditioned", "solver='block'", error=MassSpreadError)


def test_a_thin_plate_in_a_loop_leaves_the_redundant_rows_to_every_backend_alike():
    """The planar four-bar in 3D (3 redundant rows) with a coupler 1 m × 0.2 m and 10 µm
    thick, its thin direction in the plane of motion (second moment 1e-10 of its
    largest moment): block, dense and superlu drop the same 3 rows and agree to
    round-off (the reference backends decide on the spatial inertia, not on J4⁻¹,
    which dropped 2 rows and left the KKT matrix singular)."""
    z = (0.0, 0.0, 1.0)
    plate = np.array([1.0, 1e-5, 0.2]) ** 2 / 12
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0))
    for name, start, e1 in (("crank0", (0, 0, 0), (0, 1, 0)), ("crank1", (1, 0, 0), (0, 1, 0)),
                            ("coupler", (0, 1, 0), (1, 0, 0))):
        axes = np.column_stack([e1, np.cross(z, e1), z])
        inertia = np.diag(plate.sum() - plate) if name == "coupler" else \
            nc.rod_inertia(1.0, 1.0, 0.05)
        mech.add_body(name, mass=1.0, com=(0.5, 0, 0), inertia=inertia, origin=start,
                      axes=axes, local=True)
    for name, a, b, point in (("g0", nc.GROUND, "crank0", (0, 0, 0)),
                              ("g1", nc.GROUND, "crank1", (1, 0, 0)),
                              ("t0", "crank0", "coupler", (0, 1, 0)),
                              ("t1", "coupler", "crank1", (1, 1, 0))):
        mech.add_revolute(a, b, point=point, axis=z, name=name)
    model = mech.build()
    state = nc.assemble(model).state
    a_block, _, info = nc.accelerations(model, state, solver="block")
    assert len(info.dropped) == 3
    for solver in ("dense", "superlu"):
        a, _, info = nc.accelerations(model, state, solver=solver)
        assert len(info.dropped) == 3
        assert np.abs(a - a_block).max() <= 1e-12


@pytest.mark.parametrize("com", [(0.5, 0.0, 0.0), (0.0, 0.0, 0.0)],
                         ids=["frame at the end", "frame at the centre of mass"])
def test_numerically_singular_J4_is_rejected(com):
    """1 kg with inertia 1e-30 kg·m²: J4 is positive definite on paper only."""
    mech = hinged_rod()
    raises(lambda: mech.add_body("point", mass=1.0, com=com, inertia=1e-30 * np.eye(3)),
           "body 'point'", "numerically singular", "m·size²")
    assert [b.name for b in mech.bodies] == ["rod"]


def test_light_body_with_proportional_inertia_is_accepted():
    """Scaling mass and inertia together leaves the pendulum's accelerations unchanged."""
    def pendulum(scale):
        mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0))
        mech.add_body("rod", mass=scale, com=(0.5, 0.3, 0.0),
                      inertia=scale * nc.rod_inertia(1.0, 1.0, 0.05))
        mech.add_revolute(nc.GROUND, "rod", point=(0, 0, 0), axis=(0, 0, 1))
        model = mech.build()
        return nc.accelerations(model, nc.assemble(model).state, solver="dense")[0]

    a = pendulum(1.0)
    assert np.abs(a).max() > 1.0
    np.testing.assert_allclose(pendulum(1e-9), a, rtol=1e-9, atol=1e-12)


def test_zero_length_spring_is_rejected():
    mech = hinged_rod()
    raises(lambda: mech.add_spring(nc.GROUND, "rod", point_a=(1, 0, 0), point_b=(1, 0, 0),
                                   stiffness=10.0, rest_length=0.0, name="coil"),
           "spring 'coil'", "coincide", "direction", "add_cartesian_spring")
    assert not mech.forces


BAD_CALLBACKS = {  # add a load whose callable misbehaves -> error type, phrases
    "nan force": (lambda m: m.add_force("rod", point=(1, 0, 0), name="push",
                                        force=lambda t, s: (0.0, NAN, 0.0)),
                  NonFiniteValue, ["force 'push' on 'rod'", "finite"]),
    "inf torque": (lambda m: m.add_torque("rod", torque=lambda t, s: np.array([0, 0, np.inf])),
                   NonFiniteValue, ["torque on 'rod' (#1)", "finite"]),
    "short force": (lambda m: m.add_force("rod", point=(1, 0, 0), force=lambda t, s: (1.0, 2.0)),
                    ValueError, ["force on 'rod' (#1)", "must return 3 numbers"]),
    "text torque": (lambda m: m.add_torque("rod", torque=lambda t, s: "abc", name="motor"),
                    ValueError, ["torque 'motor' on 'rod'", "must return 3 numbers"]),
}


@pytest.mark.parametrize("add, error, phrases", BAD_CALLBACKS.values(),
                         ids=BAD_CALLBACKS.keys())
def test_bad_force_callback_named_at_first_evaluation(add, error, phrases):
    mech = hinged_rod()
    add(mech)
    model = mech.build()
    raises(lambda: nc.accelerations(model, nc.assemble(model).state), *phrases, error=error)


def test_force_turning_nan_names_the_force_in_the_integration_error():
    mech = hinged_rod()
    mech.add_force("rod", point=(1, 0, 0), name="push",
                   force=lambda t, state: (0.0, NAN if t > 0.3 else 0.0, 0.0))
    err = raises(lambda: nc.simulate(mech.build(), t_end=1.0), "force 'push' on 'rod'",
                 error=nc.IntegrationError)
    assert err.solution.t[-1] == pytest.approx(0.3, abs=1e-6)


BAD_DRIVES = {   # drive= value -> phrases
    "plain function": (lambda t: 0.5 * t,
                       ["(s, ṡ, s̈)", "Drive(s, s_dot, s_ddot)", "Drive.spline", "got 0.0"]),
    "pair": (lambda t: (t, 1.0), ["must return 3 numbers", "(s, ṡ, s̈)"]),
    "nan": (nc.Drive(lambda t: np.sqrt(t - 1.0), lambda t: 0.0, lambda t: 0.0), ["finite"]),
}


@pytest.mark.parametrize("drive, phrases", BAD_DRIVES.values(), ids=BAD_DRIVES.keys())
@pytest.mark.parametrize("kind", ["revolute", "prismatic"])
def test_bad_drive_is_rejected_when_added(kind, drive, phrases):
    mech = hinged_rod()
    add = getattr(mech, f"add_{kind}")
    with np.errstate(invalid="ignore"):
        raises(lambda: add("rod", nc.GROUND, point=(1, 0, 0), axis=(0, 0, 1), drive=drive,
                           name="crank"), f"{kind} joint 'crank'", *phrases)
    assert [j.name for j in mech.joints] == ["hinge"]


def test_one_drive_on_two_joints_names_each():
    """A Drive serves several joints; each copy names its own joint."""
    mech = hinged_rod()
    mech.add_body("arm", **{**ROD, "origin": (1, 0, 0), "com": (1.5, 0, 0)})
    drive = nc.Drive(lambda t: (0.1 * t, 0.1, 0.0))
    mech.add_prismatic(nc.GROUND, "rod", (0, 0, 0), (1, 0, 0), drive=drive, name="a")
    mech.add_prismatic("rod", "arm", (1, 0, 0), (1, 0, 0), drive=drive, name="b")
    assert [j.drive.label for j in mech.joints[1:]] == ["prismatic joint 'a'",
                                                        "prismatic joint 'b'"]
    assert mech.joints[2].drive(2.0) == (0.2, 0.1, 0.0)


# ------------------------------------------------------------ saved results
@pytest.fixture(scope="module")
def six_bar():
    model = nc.models.six_bar().build()
    sol = nc.simulate(model, 0.05, t_eval=np.linspace(0.0, 0.05, 6), multipliers=True)
    sol.settings = {"t_end": 0.05, "rtol": 1e-6, "solver": sol.stats["solver"]}
    return model, sol


ARRAYS = ("t", "p", "v", "energy", "constraint_residual", "velocity_residual", "lam",
          "dropped_rows")


def test_solution_round_trip(six_bar, tmp_path):
    model, sol = six_bar
    assert sol.lam is not None and sol.dropped       # the six-bar has a redundant row
    sol.save(tmp_path / "run.npz")
    back = nc.Solution.load(tmp_path / "run.npz", model=model)
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(back, name), getattr(sol, name), err_msg=name)
    assert (back.stats, back.settings, back.dropped, back.success, back.message) == (
        sol.stats, sol.settings, sol.dropped, True, sol.message)
    assert back.model is model
    body, x = model.scenario["output_point"]
    np.testing.assert_array_equal(back.point(body, x), sol.point(body, x))
    np.testing.assert_array_equal(back.joint_multipliers("joint4"),
                                  sol.joint_multipliers("joint4"))


def test_loaded_without_model(six_bar, tmp_path):
    model, sol = six_bar
    sol.save(tmp_path / "run.npz")
    back = nc.Solution.load(tmp_path / "run.npz")
    np.testing.assert_array_equal(back.p, sol.p)
    assert back.model.name == "six-bar" and back.model.row_labels == model.row_labels
    raises(lambda: back.point("rod2", (0, 0, 0)), "model=", "six-bar", error=AttributeError)
    back.save(tmp_path / "again.npz")                  # a detached solution saves again
    np.testing.assert_array_equal(nc.Solution.load(tmp_path / "again.npz").lam, sol.lam)


def test_load_rejects_another_model(six_bar, tmp_path):
    sol = six_bar[1]
    sol.save(tmp_path / "run.npz")
    raises(lambda: nc.Solution.load(tmp_path / "run.npz", model=nc.models.chain(3).build()),
           "saved from model 'six-bar'", "'rod2'", "pass the model the file was saved from")


def test_saved_file_needs_no_pickle(six_bar, tmp_path):
    sol = six_bar[1]
    sol.save(tmp_path / "run.npz")
    with np.load(tmp_path / "run.npz", allow_pickle=False) as data:
        kinds = {name: data[name].dtype.kind for name in data.files}
    assert "O" not in kinds.values() and {"metadata", "lam", "p"} <= set(kinds)
    # and load never unpickles: an object array in the file is refused
    np.savez(tmp_path / "evil.npz", **{n: getattr(sol, n) for n in ARRAYS},
             dropped=np.array(sol.dropped), metadata=np.array(["x", {"a": 1}], dtype=object))
    raises(lambda: nc.Solution.load(tmp_path / "evil.npz"), "allow_pickle")


def test_partial_solution_round_trip(tmp_path):
    model = hinged_rod().build()
    with pytest.raises(nc.IntegrationError) as err:
        nc.simulate(model, 2.0, max_steps=10)
    err.value.solution.save(tmp_path / "partial.npz")
    back = nc.Solution.load(tmp_path / "partial.npz", model=model)
    assert back.success is False and "maximum number of steps" in back.message
    assert back.lam is None and back.t[-1] == err.value.solution.t[-1] < 2.0


# --------------------------------------------------------------- command line
def run_cli(capsys, *argv):
    """``(exit status, stdout, stderr)`` of ``natcoord simulate ...``."""
    try:
        status = cli.main(["simulate", *argv])
    except SystemExit as exit_:
        status = exit_.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


BAD_FLAGS = {  # argv -> phrase of the one-line message
    "negative outputs": (["six-bar", "--outputs", "-1"], "--outputs"),
    "zero rtol": (["six-bar", "--rtol", "0"], "--rtol"),
    "nan rtol": (["six-bar", "--rtol", "nan"], "--rtol"),
    "negative t-end": (["six-bar", "--t-end", "-1"], "--t-end"),
    "text parameter": (["six-bar", "--param", "mass=abc"], "mass=abc"),
    "text size": (["chain", "--param", "n=abc"], "'chain'"),
    "missing size": (["chain"], "give ['n']"),
    "unknown parameter": (["six-bar", "--param", "n=3"], "not ['n']"),
    "scenario of a model without": (["six-bar", "--scenario", "driven"], "not ['scenario']"),
    "unknown scenario": (["hexapod", "--scenario", "flying"], "choose one of"),
    "out suffix": (["six-bar", "--out", "run.txt"], "must end in .npz"),
    "plot suffix": (["six-bar", "--plot", "run.jpg"], "must end in .png or .pdf or .svg"),
}


@pytest.mark.parametrize("argv, phrase", BAD_FLAGS.values(), ids=BAD_FLAGS.keys())
def test_bad_flags_exit_2_without_traceback(capsys, argv, phrase):
    status, _, err = run_cli(capsys, *argv)
    assert status == 2 and phrase in err


def test_unwritable_outputs_are_found_before_simulating(capsys, tmp_path):
    (tmp_path / "file").write_text("")
    (tmp_path / "dir.npz").mkdir()
    for flag, path, phrase in (("--out", tmp_path / "file" / "run.npz", "not a directory"),
                               ("--out", tmp_path / "dir.npz", "cannot write"),
                               ("--plot", tmp_path / "file" / "sub" / "f.png", "not a directory")):
        status, _, err = run_cli(capsys, "six-bar", flag, str(path))
        assert status == 2 and phrase in err and "simulating" not in err
    created = tmp_path / "new" / "run.npz"
    run_cli(capsys, "six-bar", "--out", str(created), "--rtol", "nan")
    assert not created.exists()                        # the check leaves no empty file


def test_simulate_writes_results_and_figure(capsys, tmp_path):
    status, out, _ = run_cli(capsys, "six-bar", "--t-end", "0.02", "--outputs", "4", "--quiet",
                             "--out", str(tmp_path / "a" / "run.npz"),
                             "--plot", str(tmp_path / "run.png"))
    assert status == 0 and "PARTIAL" not in out
    sol = nc.Solution.load(tmp_path / "a" / "run.npz")
    assert sol.success and sol.t.size == 5 and sol.t[-1] == pytest.approx(0.02)
    assert {k: sol.settings[k] for k in ("model", "t_end", "rtol", "projection")} == {
        "model": "six-bar", "t_end": 0.02, "rtol": 1e-6, "projection": "position+velocity"}
    assert (tmp_path / "run.png").stat().st_size > 0


def _failing_simulate(model, t_end, **options):
    """simulate limited to 5 steps: an IntegrationError with a partial solution."""
    return nc.simulate(model, t_end, **{**options, "max_steps": 5})


class _Interrupt(KeyboardInterrupt):
    def __init__(self, solution):
        super().__init__()
        self.solution = solution


def _interrupted_simulate(model, t_end, **options):
    """What Ctrl-C looks like when the integrator keeps the partial solution."""
    try:
        _failing_simulate(model, t_end, **options)
    except nc.IntegrationError as err:
        raise _Interrupt(err.solution) from None


@pytest.mark.parametrize("fake, status", [(_failing_simulate, 1), (_interrupted_simulate, 130)],
                         ids=["integration failure", "interrupt"])
def test_partial_result_is_written_and_marked(capsys, tmp_path, monkeypatch, fake, status):
    monkeypatch.setattr(cli, "simulate", fake)
    code, out, _ = run_cli(capsys, "six-bar", "--t-end", "1", "--quiet",
                           "--out", str(tmp_path / "run.npz"))
    assert code == status and "PARTIAL" in out and "partial trajectory written" in out
    sol = nc.Solution.load(tmp_path / "run.npz")
    assert sol.success is False and 0.0 < sol.t[-1] < 1.0


def test_interrupt_without_solution_exits_130(capsys, tmp_path, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "simulate", interrupt)
    code, _, err = run_cli(capsys, "six-bar", "--out", str(tmp_path / "run.npz"))
    assert code == 130 and "interrupted" in err and not (tmp_path / "run.npz").exists()
