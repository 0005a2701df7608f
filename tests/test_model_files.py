"""Model files (JSON/YAML), URDF and MJCF import.

Round trips: every benchmark written and read back gives the identical
model (constraint tables, labels) and bitwise-equal accelerations. Imports:
the Stewart platform and the four-bar written as URDF (with <loop_joint>) and
as MJCF (with equality connect/weld) match the native models built by
natcoord.models.
"""
import importlib
import json
import subprocess
import sys

import numpy as np
import pytest

import natcoord as nc
from natcoord.io.modelfile import FORMAT_VERSION, from_dict, schema, to_dict

# What a robot file has that natcoord does not model (limits, collision geometry,
# gazebo tags, …) is named in one UserWarning per import; the import report is the
# subject of tests/test_urdf.py and tests/test_corpus.py, not of these tests.
pytestmark = pytest.mark.filterwarnings("ignore:.*imported without:UserWarning")

hx = importlib.import_module("natcoord.models.hexapod")   # the module, not the factory
SMALL = {"chain": {"n": 6, "loops": 1}, "tree": {"depth": 3}, "n-four-bar": {"N": 3}}
CASES = [(name, scenario) for name in nc.models.REGISTRY
         for scenario in (("passive", "driven") if name == "hexapod" else (None,))]


def _build(name, scenario):
    kwargs = dict(SMALL.get(name, {}))
    if scenario:
        kwargs["scenario"] = scenario
    return nc.models.REGISTRY[name](**kwargs)


def _tables(model):
    return {k: v for k, v in vars(model.tables).items() if isinstance(v, np.ndarray)}


# --------------------------------------------------------------- round trips
@pytest.mark.parametrize("name, scenario", CASES)
def test_round_trip(name, scenario, tmp_path):
    """Write, read: identical rows, tables, mass, guess and accelerations
    (bitwise), and writing the read model gives the same file."""
    mech = _build(name, scenario)
    path = tmp_path / "model.json"
    nc.save_mechanism(mech, path)
    loaded = nc.load_mechanism(path)
    A, B = mech.build(), loaded.build()
    assert A.name == B.name and A.scenario == B.scenario
    assert A.row_labels == B.row_labels
    for key, value in _tables(A).items():
        assert np.array_equal(value, _tables(B)[key]), key
    assert np.array_equal(A.J4, B.J4) and np.array_equal(A.gravity, B.gravity)
    assert np.array_equal(A.p_guess, B.p_guess) and np.array_equal(A.v_guess, B.v_guess)
    state = nc.assemble(A).state
    a, _, _ = nc.accelerations(A, state)
    b, _, _ = nc.accelerations(B, state)
    assert np.array_equal(a, b)
    assert to_dict(loaded) == json.loads(path.read_text())      # idempotent
    assert nc.assemble(B).dof == nc.assemble(A).dof
    assert np.array_equal(nc.assemble(B).dropped, nc.assemble(A).dropped)


def _swing(t):
    """A closed-form crank angle s = 0.5 sin 3t and its derivatives."""
    return 0.5 * np.sin(3 * t), 1.5 * np.cos(3 * t), -4.5 * np.sin(3 * t)


def driven_crank():
    """A crank on a revolute joint driven by a Python callable."""
    mech = nc.Mechanism(name="crank", gravity=(0, -9.81, 0))
    mech.add_body("crank", 1.0, com=(0.2, 0, 0), inertia=np.diag([1e-3, 1e-2, 1e-2]))
    mech.add_revolute(nc.GROUND, "crank", point=(0, 0, 0), axis=(0, 0, 1), drive=_swing,
                      name="R")
    return mech


def test_sampled_drives_trajectory(tmp_path):
    """A drive given as a Python callable is stored as a spline through samples
    (``sample_drives``). The crank has 0 DOF: its motion is the drive's. A spline
    through 1 ms samples interpolates s(t) to (5/384) h⁴ max|s⁗| = 5e-13 rad,
    and the projection holds positions on g(p, t) = 0 to proj_tol = 1e-10, so the
    crank tip must agree to well within 1e-9 m over 2 s."""
    mech = driven_crank()
    path = tmp_path / "crank.json"
    nc.save_mechanism(mech, path, sample_drives=1e-3)
    assert json.loads(path.read_text())["joints"][0]["drive"]["type"] == "spline"
    t = np.linspace(0.0, 2.0, 41)
    kw = dict(rtol=1e-8, proj_tol=1e-10, t_eval=t)
    ref = nc.simulate(mech.build(), 2.0, **kw).point("crank", (0.4, 0, 0))
    new = nc.simulate(nc.load_mechanism(path).build(), 2.0, **kw).point("crank", (0.4, 0, 0))
    assert np.abs(ref - new).max() < 1e-9
    assert np.ptp(ref[:, 1]) > 0.3                           # it did swing


def test_declarative_drives_and_yaml(tmp_path):
    """Each declarative drive survives a file and evaluates as its closed form."""
    drives = {"r1": nc.Drive.constant_rate(0.5, start=0.1),
              "r2": nc.Drive.sinusoid(0.2, 1.5, phase=0.3, offset=0.05),
              "r3": nc.Drive.polynomial([0.0, 0.1, -0.2, 0.03]),
              "r4": nc.Drive.spline([0, 0.5, 1, 1.5, 2], [0, 0.1, 0.0, -0.1, 0.2])}
    mech = nc.Mechanism(gravity=(0, 0, -9.81), name="drives")
    for k, (name, drive) in enumerate(drives.items()):
        mech.add_body(f"b{k}", 1.0, com=(k, 0.5, 0), inertia=nc.rod_inertia(1, 1, 0.1, 1),
                      origin=(k, 0, 0))
        mech.add_revolute(nc.GROUND, f"b{k}", point=(k, 0, 0), axis=(0, 0, 1), name=name,
                          drive=drive)
    mech.add_torque("b0", (0, 0, 1.0))
    mech.add_force("b1", point=(1, 1, 0), force=(0, 1.0, 0))
    mech.set_initial("b2", angular_velocity=(0, 0, 0.1))
    data = json.loads(json.dumps(to_dict(mech)))
    loaded = from_dict(data)
    for joint in loaded.joints:
        for t in (0.0, 0.37, 1.9):
            assert np.allclose(joint.drive(t), drives[joint.name](t), rtol=0, atol=1e-15)
    w = 2 * np.pi * 1.5
    assert np.allclose(loaded.joints[1].drive(0.37),
                       (0.05 + 0.2 * np.sin(w * 0.37 + 0.3), 0.2 * w * np.cos(w * 0.37 + 0.3),
                        -0.2 * w * w * np.sin(w * 0.37 + 0.3)))
    assert np.allclose(loaded.joints[2].drive(2.0), (0.1 * 2 - 0.2 * 4 + 0.03 * 8,
                                                     0.1 - 0.4 * 2 + 0.09 * 4, -0.4 + 0.18 * 2))
    yaml = pytest.importorskip("yaml")
    path = tmp_path / "drives.yaml"
    nc.save_mechanism(mech, path)
    assert yaml.safe_load(path.read_text()) == data
    assert to_dict(nc.load_mechanism(path)) == data


def test_schema_accepts_every_benchmark():
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft7Validator(schema())
    for name, scenario in CASES:
        if scenario != "driven":
            validator.validate(json.loads(json.dumps(to_dict(_build(name, scenario)))))


def _four_bar_dict():
    return json.loads(json.dumps(to_dict(nc.models.four_bar())))


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(format_version=FORMAT_VERSION + 1), "newer than this natcoord"),
    (lambda d: d.pop("format_version"), "format_version"),
    (lambda d: d["joints"][1].update(type="hinge"), "joints/1/type"),
    (lambda d: d["joints"][0].update(b="nobody"), "joints[0] ('ground0')"),
    (lambda d: d["bodies"][0].update(mass=-1.0), "bodies/0/mass"),
    (lambda d: d["bodies"][1].update(inertia=np.eye(3).tolist(), mass=1.0, colour="red"),
     "colour"),
])
def test_bad_model_files(mutate, message):
    data = _four_bar_dict()
    mutate(data)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        from_dict(data)


@pytest.mark.parametrize("drive, message", [
    ({"type": "fourier", "frequency": 1.0}, "joints/1/drive: 'cosines' is a required property"),
    ({"type": "fourier", "frequency": 1.0, "cosines": [1.0], "phase": 0.0},
     r"joints/1/drive: Additional properties are not allowed \('phase' was unexpected\)"),
    ({"type": "fourier", "frequency": "1", "cosines": [1.0]},
     "joints/1/drive/frequency: '1' is not of type 'number'"),
    ({"type": "fourier", "frequency": 0.0, "cosines": [1.0]},
     "joints/1/drive/frequency: 0.0 is less than or equal to the minimum of 0"),
    ({"type": "fourier", "frequency": 1.0, "cosines": [1.0], "sines": [[1.0]]},
     r"joints/1/drive/sines/0: \[1.0\] is not of type 'number'"),
    ({"type": "fourier", "frequency": 1.0, "cosines": [float("nan")]},     # JSON's NaN
     r"joints\[1\] \('ground1'\): Drive.fourier: cosines .* must be a flat list of finite"),
    ({"type": "constant_rate", "rate": float("inf")},
     r"joints\[1\] \('ground1'\): Drive.constant_rate: rate must be a finite number, got inf"),
])
def test_bad_drive_specs_name_the_key(drive, message):
    """The schema error of the drive's own type, not "not valid under any of the
    given schemas" (one branch per drive type)."""
    pytest.importorskip("jsonschema")
    data = _four_bar_dict()
    data["joints"][1]["drive"] = drive
    with pytest.raises(ValueError, match=message):
        from_dict(data)


def test_unserializable_mechanisms():
    """Callables have no text form: the error names the joint or force."""
    with pytest.raises(ValueError, match=r"revolute joint 'R'.*Python callable"):
        to_dict(driven_crank())
    mech = nc.models.four_bar()
    mech.add_force("crank0", point=(0, 1, 0), force=lambda t, s: (0, 0, t))
    with pytest.raises(ValueError, match=r"force on 'crank0'.*callable"):
        to_dict(mech)


def test_bad_files_on_disk(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(ValueError, match="bad.json: not valid JSON"):
        nc.load_mechanism(bad)
    with pytest.raises(ValueError, match="cannot read model file"):
        nc.load_mechanism(tmp_path / "missing.json")


# ----------------------------------------------------- URDF / MJCF generators
def _v(x):
    return " ".join(repr(float(c)) for c in x)


def _rpy(R):
    """Roll, pitch, yaw with ``R = Rz(y) Ry(p) Rx(r)``."""
    return (np.arctan2(R[2, 1], R[2, 2]), -np.arcsin(np.clip(R[2, 0], -1, 1)),
            np.arctan2(R[1, 0], R[0, 0]))


def _quat(R):
    """Quaternion (w, x, y, z) of a rotation matrix (Shepperd)."""
    from scipy.spatial.transform import Rotation
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return (w, x, y, z)


def _urdf_inertial(mass, com, I):
    return (f'<inertial><origin xyz="{_v(com)}"/><mass value="{mass!r}"/>'
            f'<inertia ixx="{float(I[0, 0])!r}" iyy="{float(I[1, 1])!r}" izz="{float(I[2, 2])!r}" '
            f'ixy="{float(I[0, 1])!r}" ixz="{float(I[0, 2])!r}" '
            f'iyz="{float(I[1, 2])!r}"/></inertial>')


def _mjcf_inertial(mass, com, I):
    return (f'<inertial pos="{_v(com)}" mass="{mass!r}" '
            f'fullinertia="{_v([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])}"/>')


def _bodies(mech):
    return {b.name: b for b in mech.bodies}


def hexapod_urdf():
    """The passive hexapod: universal = two revolutes around a massless cross link,
    platform on a floating joint, the six spherical joints as <loop_joint>s."""
    mech = hx.hexapod("passive")
    B = _bodies(mech)
    out = ['<robot name="hexapod-urdf">', '<link name="base"/>']
    p = B["platform"]
    out.append(f'<link name="platform">{_urdf_inertial(p.mass, p.com, p.inertia)}</link>')
    out.append(f'<joint name="free" type="floating"><parent link="base"/>'
               f'<child link="platform"/><origin xyz="{_v(p.origin)}"/></joint>')
    for k in range(1, 7):
        c, s = B[f"cylinder{k}"], B[f"piston{k}"]
        length = float(np.linalg.norm(s.origin - c.origin))
        out += [f'<link name="cross{k}"/>',
                f'<link name="cylinder{k}">{_urdf_inertial(c.mass, c.com, c.inertia)}</link>',
                f'<link name="piston{k}">{_urdf_inertial(s.mass, s.com, s.inertia)}</link>',
                f'<joint name="U{k}a" type="continuous"><parent link="base"/>'
                f'<child link="cross{k}"/><origin xyz="{_v(c.origin)}" rpy="{_v(_rpy(c.axes))}"/>'
                f'<axis xyz="1 0 0"/></joint>',
                f'<joint name="U{k}" type="continuous"><parent link="cross{k}"/>'
                f'<child link="cylinder{k}"/><axis xyz="0 1 0"/></joint>',
                f'<joint name="P{k}" type="prismatic"><parent link="cylinder{k}"/>'
                f'<child link="piston{k}"/><origin xyz="0 0 {length!r}"/><axis xyz="0 0 1"/>'
                f'<limit lower="-0.2" upper="0.2" effort="1000" velocity="1"/></joint>']
    for k in range(1, 7):
        out.append(f'<loop_joint name="S{k}" type="spherical"><parent link="piston{k}"/>'
                   f'<child link="platform"/><origin xyz="0 0 0"/></loop_joint>')
    return "\n".join(out + ["</robot>"])


def hexapod_mjcf():
    """The passive hexapod: two hinges in one body (universal), a slide, and
    the platform on a freejoint held by six equality connects."""
    mech = hx.hexapod("passive")
    B = _bodies(mech)
    p = B["platform"]
    out = ['<mujoco model="hexapod-mjcf">', '<compiler angle="radian"/>',
           '<option gravity="0 0 -9.81" timestep="0.001"/>', '<worldbody>',
           '<geom type="plane" size="2 2 0.1"/>',
           f'<body name="platform" pos="{_v(p.origin)}"><freejoint/>'
           f'{_mjcf_inertial(p.mass, p.com, p.inertia)}'
           f'<geom type="cylinder" size="0.5 0.025"/></body>']
    for k in range(1, 7):
        c, s = B[f"cylinder{k}"], B[f"piston{k}"]
        length = float(np.linalg.norm(s.origin - c.origin))
        out.append(f'<body name="cylinder{k}" pos="{_v(c.origin)}" quat="{_v(_quat(c.axes))}">'
                   f'<joint name="U{k}" type="hinge" axis="1 0 0"/>'
                   f'<joint name="U{k}b" type="hinge" axis="0 1 0"/>'
                   f'{_mjcf_inertial(c.mass, c.com, c.inertia)}'
                   f'<body name="piston{k}" pos="0 0 {length!r}">'
                   f'<joint name="P{k}" type="slide" axis="0 0 1" range="-0.2 0.2"/>'
                   f'{_mjcf_inertial(s.mass, s.com, s.inertia)}</body></body>')
    out += ['</worldbody>', '<equality>']
    out += [f'<connect name="S{k}" body1="piston{k}" body2="platform" anchor="0 0 0"/>'
            for k in range(1, 7)]
    out += ['</equality>', '<actuator><motor joint="P1"/></actuator>', '</mujoco>']
    return "\n".join(out)


def four_bar_urdf():
    B = _bodies(nc.models.four_bar())
    out = ['<robot name="four-bar-urdf">', '<link name="ground"/>']
    for name in ("crank0", "crank1", "coupler1"):
        b = B[name]
        out.append(f'<link name="{name}">{_urdf_inertial(b.mass, b.com, b.inertia)}</link>')
    for name, parent, child in (("ground0", "ground", "crank0"), ("ground1", "ground", "crank1"),
                                ("top0.1", "crank0", "coupler1")):
        P, C = (np.zeros(3), np.eye(3)) if parent == "ground" else (B[parent].origin,
                                                                     B[parent].axes)
        x, R = C.T @ (B[child].origin - P), C.T @ B[child].axes
        out.append(f'<joint name="{name}" type="revolute"><parent link="{parent}"/>'
                   f'<child link="{child}"/><origin xyz="{_v(x)}" rpy="{_v(_rpy(R))}"/>'
                   f'<axis xyz="0 0 1"/><dynamics damping="0.0"/></joint>')
    out.append('<loop_joint name="top1.1" type="revolute"><parent link="coupler1"/>'
               '<child link="crank1"/><origin xyz="1 0 0"/><axis xyz="0 0 1"/></loop_joint>')
    return "\n".join(out + ["</robot>"])


def four_bar_mjcf():
    """crank1 carries the coupler (hinge top1.1); the connect closes the loop at crank0."""
    B = _bodies(nc.models.four_bar())
    c0, c1, cp = B["crank0"], B["crank1"], B["coupler1"]
    return "\n".join([
        '<mujoco model="four-bar-mjcf">', '<option gravity="0 -9.81 0"/>', '<worldbody>',
        f'<body name="crank0" euler="0 0 90"><joint name="ground0" axis="0 0 1"/>'
        f'{_mjcf_inertial(c0.mass, c0.com, c0.inertia)}</body>',
        f'<body name="crank1" pos="1 0 0" axisangle="0 0 1 90">'
        f'<joint name="ground1" axis="0 0 1"/>{_mjcf_inertial(c1.mass, c1.com, c1.inertia)}',
        f'<body name="coupler1" pos="{_v(c1.axes.T @ (cp.origin - c1.origin))}" '
        f'quat="{_v(_quat(c1.axes.T @ cp.axes))}">'
        f'<joint name="top1.1" pos="1 0 0" axis="0 0 1"/>'
        f'{_mjcf_inertial(cp.mass, cp.com, cp.inertia)}</body></body>',
        '</worldbody>', '<equality><connect name="top0.1" body1="coupler1" body2="crank0" '
        'anchor="0 0 0"/></equality>', '</mujoco>'])


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def _compare_at_initial_state(native, imported, tol):
    """Same bodies (names, order, frames, mass), same DOF, same accelerations at
    the native model's consistent initial state (which both coordinate sets share)."""
    assert [b.name for b in imported.bodies] == [b.name for b in native.bodies]
    assert np.abs(imported.J4 - native.J4).max() < 1e-12
    assert np.abs(imported.p_reference - native.p_reference).max() < 1e-14
    assert nc.assemble(imported).dof == nc.assemble(native).dof
    state = nc.assemble(native).state
    a, _, _ = nc.accelerations(native, state)
    b, _, _ = nc.accelerations(imported, state)
    assert np.abs(a - b).max() <= tol * np.abs(a).max()
    return a, b


# ------------------------------------------------------------- hexapod import
@pytest.fixture(scope="module")
def native_passive():
    t = np.linspace(0.0, 1.0, 21)
    model = hx.hexapod("passive").build()
    sol = nc.simulate(model, 1.0, rtol=1e-10, proj_tol=1e-12, t_eval=t)
    return model, sol


@pytest.mark.parametrize("fmt", ["urdf", "mjcf"])
def test_stewart_platform_import(fmt, tmp_path, native_passive):
    """URDF/MJCF Stewart platform = native hexapod: 6 DOF, accelerations at the
    initial state to 1e-12 (the frames pass through rpy angles/quaternions: 1e-16
    rounding), and the platform centre over the first second to 1e-9 m (the
    issue's acceptance; both runs at rtol 1e-10, so integration error ≈ 1e-11)."""
    text = hexapod_urdf() if fmt == "urdf" else hexapod_mjcf()
    path = _write(tmp_path, f"hexapod.{'urdf' if fmt == 'urdf' else 'xml'}", text)
    if fmt == "urdf":
        mech = nc.load_urdf(path)
    else:                   # contacts, the legs' limits and the actuator are named, not modelled
        with pytest.warns(UserWarning, match="imported without contacts: .*joint limits: P1"):
            mech = nc.load_mjcf(path)
    model = mech.build()
    native, ref = native_passive
    assert sorted(j.kind for j in model.joints) == sorted(j.kind for j in native.joints)
    _compare_at_initial_state(native, model, 1e-12)
    sol = nc.simulate(model, 1.0, rtol=1e-10, proj_tol=1e-12, t_eval=ref.t)
    error = np.abs(sol.point("platform", hx.PLATFORM_CENTRE)
                   - ref.point("platform", hx.PLATFORM_CENTRE)).max()
    assert error < 1e-9, error
    assert ref.point("platform", hx.PLATFORM_CENTRE)[-1, 2] < 0.9    # it moved


@pytest.mark.parametrize("fmt", ["urdf", "mjcf"])
def test_four_bar_import(fmt, tmp_path):
    """The four-bar with its loop closed by a <loop_joint> revolute (URDF) or an
    equality connect (MJCF, 3 rows instead of 5: fewer redundant rows, same
    motion): 1 DOF, accelerations equal at the native consistent state."""
    text = four_bar_urdf() if fmt == "urdf" else four_bar_mjcf()
    path = _write(tmp_path, f"four.{'urdf' if fmt == 'urdf' else 'xml'}", text)
    model = (nc.load_urdf(path, gravity=(0, -9.81, 0)) if fmt == "urdf"
             else nc.load_mjcf(path)).build()
    native = nc.models.four_bar().build()
    _compare_at_initial_state(native, model, 1e-12)
    assert nc.assemble(model).dropped.size == (3 if fmt == "urdf" else 1)


def test_urdf_loop_joints_argument(tmp_path):
    """Loop closures passed to load_urdf instead of <loop_joint> elements."""
    text = "\n".join(line for line in four_bar_urdf().splitlines()
                     if not line.startswith("<loop_joint"))
    path = _write(tmp_path, "tree.urdf", text)
    loop = {"name": "top1.1", "type": "revolute", "parent": "coupler1", "child": "crank1",
            "xyz": (1, 0, 0), "axis": (0, 0, 1)}
    model = nc.load_urdf(path, gravity=(0, -9.81, 0), loop_joints=[loop]).build()
    _compare_at_initial_state(nc.models.four_bar().build(), model, 1e-12)
    with pytest.raises(ValueError, match="loop_joints entries"):
        nc.load_urdf(path, loop_joints=[{"name": "x", "colour": "red"}])


def test_mjcf_weld_and_nested_weld(tmp_path):
    """A pendulum made of two bodies: welded by <equality><weld> (second body on a
    freejoint) equals the native add_fixed; nested without a joint, MuJoCo welds
    the second body to the first, which natcoord lumps into one body (mass,
    centre of mass and inertia by the parallel-axis theorem) with the same motion
    and keeps as a named frame."""
    I = nc.rod_inertia(1.0, 1.0, 0.1, axis=1)
    native = nc.Mechanism(gravity=(0, 0, -9.81))
    native.add_body("a", 1.0, com=(0, 0, -0.5), inertia=I)
    native.add_body("b", 2.0, com=(0.3, 0, -1.0), inertia=2 * I, origin=(0, 0, -1.0))
    native.add_revolute(nc.GROUND, "a", point=(0, 0, 0), axis=(0, 1, 0), name="hinge")
    native.add_fixed("a", "b")
    native.set_joint_rate("hinge", 0.5)
    native = native.build()
    ia = _mjcf_inertial(1.0, (0, 0, -0.5), I)
    ib = _mjcf_inertial(2.0, (0.3, 0, 0), 2 * I)
    weld = (f'<mujoco><worldbody><body name="a"><joint axis="0 1 0"/>{ia}</body>'
            f'<body name="b" pos="0 0 -1"><freejoint/>{ib}</body></worldbody>'
            f'<equality><weld body1="a" body2="b" anchor="0 0 -1"/></equality></mujoco>')
    model = nc.load_mjcf(_write(tmp_path, "weld.xml", weld)).build()
    assert nc.assemble(model).dof == 1
    _compare_at_initial_state(native, model, 1e-12)

    nested = (f'<mujoco><worldbody><body name="a"><joint axis="0 1 0"/>{ia}'
              f'<body name="b" pos="0 0 -1">{ib}</body></body></worldbody></mujoco>')
    mech = nc.load_mjcf(_write(tmp_path, "nested.xml", nested))
    (body,) = mech.bodies
    com = (1.0 * np.array([0, 0, -0.5]) + 2.0 * np.array([0.3, 0, -1.0])) / 3.0
    inertia = sum(Ik + mk * ((x - com) @ (x - com) * np.eye(3) - np.outer(x - com, x - com))
                  for mk, x, Ik in ((1.0, np.array([0, 0, -0.5]), I),
                                    (2.0, np.array([0.3, 0, -1.0]), 2 * I)))
    assert body.mass == pytest.approx(3.0, rel=1e-14)
    assert np.allclose(body.com, com, rtol=0, atol=1e-14)
    assert np.allclose(body.inertia, inertia, rtol=0, atol=1e-13)
    assert np.allclose(mech.frames["b"].origin, (0, 0, -1.0), rtol=0, atol=1e-15)
    lumped = mech.build()
    state = nc.assemble(native).state
    a_native, _, _ = nc.accelerations(native, state)
    a, _, _ = nc.accelerations(lumped, nc.State(0.0, state.p[:12], state.v[:12]))
    assert np.abs(a - a_native[:12]).max() <= 1e-12 * np.abs(a_native).max()


@pytest.mark.parametrize("fmt, text, message", [
    ("urdf", '<robot><link name="a"/><link name="b"/></robot>', "single root link"),
    ("urdf", '<robot><link name="a"/><link name="b"/><joint name="j" type="planar">'
             '<parent link="a"/><child link="b"/></joint></robot>',
     r'<joint name="j">: type \'planar\''),
    ("urdf", '<robot><link name="a"/><link name="b"/><joint name="j" type="revolute">'
             '<parent link="a"/><child link="c"/></joint></robot>', "child link 'c'"),
    ("urdf", '<robot><link name="a"/><link name="b"/><joint name="j" type="revolute">'
             '<parent link="a"/><child link="b"/></joint></robot>',
     r'<link name="b">: has no <inertial>'),
    ("urdf", '<robot><link name="a"/><link name="b"><inertial><mass value="1"/>'
             '<inertia ixx="1" iyy="1" izz="1"/></inertial></link><joint name="j" '
             'type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0"/></joint>'
             '</robot>', r'<joint name="j"> <axis>: xyz="0 0" must be 3'),
    ("urdf", '<robot><link name="a"', "not well-formed"),
    ("urdf", '<mujoco/>', "expected <robot>"),
    ("mjcf", '<mujoco><worldbody><body name="x"><joint/></body></worldbody></mujoco>',
     r"bad.xml: MuJoCo cannot compile the file: .*mass"),
    ("mjcf", '<mujoco><worldbody><body name="x"><joint name="a" type="hinge"/>'
             '<joint name="b" type="ball" pos="0 1 0"/>'
             '<inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/></body></worldbody>'
             '</mujoco>', r'<body name="x">: compound joint .*DOF .b.: kind must be .hinge. or '
                          r'.slide., got .ball.'),
    ("mjcf", '<mujoco><worldbody><body name="x"><joint/><inertial pos="0 0 0" mass="1" '
             'diaginertia="1 1 1"/></body><body name="y" pos="1 0 0"><joint/>'
             '<inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/></body></worldbody>'
             '<equality><weld body1="x" body2="y" relpose="0 0 0 1 0 0 0"/></equality>'
             '</mujoco>', r'<equality><weld name="equality0">: its two points are 1 m apart'),
    ("mjcf", '<mujoco><worldbody><body name="x"><joint/><inertial pos="0 0 0" mass="-1" '
             'diaginertia="1 1 1"/></body></worldbody></mujoco>',
     r"MuJoCo cannot compile the file"),
])
def test_bad_robot_files(fmt, text, message, tmp_path):
    path = _write(tmp_path, f"bad.{'urdf' if fmt == 'urdf' else 'xml'}", text)
    with pytest.raises(ValueError, match=message):
        (nc.load_urdf if fmt == "urdf" else nc.load_mjcf)(path)


@pytest.mark.parametrize("load", [nc.load_urdf, nc.load_mjcf, nc.load_mechanism],
                         ids=["urdf", "mjcf", "model file"])
def test_a_missing_file_or_a_folder_is_named(load, tmp_path):
    """Every reader says the same thing of a path it cannot read, naming it."""
    for path, why in ((tmp_path / "missing.xml", "No such file or directory"),
                      (tmp_path, "directory")):
        with pytest.raises(ValueError, match=f"cannot read.*{path.name}.*{why}"):
            load(path)


# ---------------------------------------------------------------------- CLI
def test_cli_model_file(tmp_path):
    """``natcoord info|simulate FILE`` accept model files like benchmark names."""
    path = tmp_path / "four.json"
    nc.save_mechanism(nc.models.four_bar(), path)
    urdf = _write(tmp_path, "four.urdf", four_bar_urdf())
    from natcoord.cli import main
    assert main(["info", str(path)]) == 0
    assert main(["info", str(urdf)]) == 0
    assert main(["simulate", str(path), "--t-end", "0.05", "--quiet", "--outputs", "5"]) == 0
    result = subprocess.run([sys.executable, "-m", "natcoord.cli", "info", "no-such-model"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "neither a benchmark" in result.stderr


# -------------------------------------------------------- MJCF geom inertia
def _capsule_by_quadrature(r, half, density):
    """Mass and central (lateral, axial) inertia of a capsule by slicing into discs."""
    from scipy.integrate import quad
    top = half + r

    def radius2(z):
        return r * r if abs(z) <= half else max(r * r - (abs(z) - half) ** 2, 0.0)

    pts = [-half, half]
    m = quad(lambda z: density * np.pi * radius2(z), -top, top, points=pts)[0]
    lateral = quad(lambda z: density * np.pi * radius2(z) * (radius2(z) / 4 + z * z),
                   -top, top, points=pts, epsabs=1e-14)[0]
    axial = quad(lambda z: density * np.pi * radius2(z) ** 2 / 2, -top, top, points=pts,
                 epsabs=1e-14)[0]
    return m, lateral, axial


def test_mjcf_inertia_from_geoms(tmp_path):
    """A body of a box, a cylinder given by fromto and a capsule, without <inertial>:
    mass, centre of mass and inertia from the solids, checked against natcoord's
    box/cylinder formulas, a quadrature of the capsule and the parallel-axis theorem."""
    text = ('<mujoco><compiler angle="radian"/><worldbody><body name="b" pos="0 0 1">'
            '<joint type="ball"/>'
            '<geom type="box" size="0.1 0.2 0.3" pos="0.5 0 0" density="500"/>'
            '<geom type="cylinder" size="0.05" fromto="0 0 0 0 0 -0.8" mass="2.0"/>'
            '<geom type="capsule" size="0.04 0.15" pos="0 0.3 0" euler="1.5707963267948966 0 0"/>'
            '</body></worldbody></mujoco>')
    with pytest.warns(UserWarning, match="imported without contacts: geom0 of b"):
        body = nc.load_mjcf(_write(tmp_path, "geoms.xml", text)).bodies[0]
    box_m = 500 * 0.2 * 0.4 * 0.6
    cap_m, cap_lat, cap_ax = _capsule_by_quadrature(0.04, 0.15, 1000.0)
    parts = [(box_m, np.array([0.5, 0, 0]), nc.box_inertia(box_m, (0.2, 0.4, 0.6))),
             (2.0, np.array([0, 0, -0.4]), nc.cylinder_inertia(2.0, 0.05, 0.8)),
             # capsule axis along world −y after rotating +90° about x
             (cap_m, np.array([0, 0.3, 0]), np.diag([cap_lat, cap_ax, cap_lat]))]
    m = sum(p[0] for p in parts)
    c = sum(p[0] * p[1] for p in parts) / m
    I = sum(Ig + mk * ((x - c) @ (x - c) * np.eye(3) - np.outer(x - c, x - c))
            for mk, x, Ig in parts)
    assert body.mass == pytest.approx(m, rel=1e-12)
    assert np.allclose(body.com, c, rtol=0, atol=1e-14)
    assert np.allclose(body.inertia, I, rtol=0, atol=1e-10 * np.abs(I).max())
