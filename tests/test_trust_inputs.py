"""Hostile inputs to the model readers and the builder (issue 24, cases 2 and 3).

* A small model file cannot hang or take the machine: YAML aliases are
  refused, files are read within ``MAX_BYTES`` and nested at most
  ``MAX_DEPTH`` deep, numbers beyond the float range are refused; every
  refusal is a ``ValueError`` naming the file.
* A model file means the same with or without ``jsonschema`` installed: its
  values are checked against the shipped schema in code.
* MJCF nesting is walked without recursion.
* A builder call that raises changes nothing: neither the model built from
  the mechanism nor the file written from it.
"""
import json
import sys
import time

import numpy as np
import pytest

import natcoord as nc
from natcoord.io import modelfile
from natcoord.io.modelfile import FORCE_METHODS, schema, to_dict

DEEP = 100_000


def _four_bar_dict():
    return json.loads(json.dumps(to_dict(nc.models.four_bar())))


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------ bounded readers
def _alias_bomb():
    """A model file of about 600 bytes whose body ``com`` expands to 10⁸ numbers:
    ``a_k`` lists ten aliases of ``a_{k-1}``, eight levels deep."""
    anchors = ["  a0: &a0 [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]"]
    anchors += [f"  a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 10)}]" for k in range(1, 9)]
    return "\n".join(["format_version: 1", "scenario:", *anchors, "bodies:",
                      "- {name: b, mass: 1.0, com: *a8, inertia: [[1, 0, 0], [0, 1, 0], "
                      "[0, 0, 1]]}", ""])


def test_yaml_aliases_are_refused_at_once(tmp_path):
    pytest.importorskip("yaml")
    text = _alias_bomb()
    assert len(text.encode()) < 700
    path = _write(tmp_path, "bomb.yaml", text)
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"bomb\.yaml: line 4: YAML aliases \(\*a0\) are not "
                                         r"accepted in model files"):
        nc.load_mechanism(path)
    assert time.perf_counter() - start < 0.5


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_deep_nesting_is_refused_without_recursion(tmp_path, suffix):
    """100 000 nested lists (valid JSON and YAML) end in a one-line error, not
    ``RecursionError`` from the parser."""
    if suffix == ".yaml":
        pytest.importorskip("yaml")
    text = '{"format_version": 1, "bodies": ' + "[" * DEEP + "]" * DEEP + "}"
    path = _write(tmp_path, "deep" + suffix, text)
    with pytest.raises(ValueError, match=rf"deep\{suffix}: (line 1: )?nested deeper than "
                                         rf"{modelfile.MAX_DEPTH} levels"):
        nc.load_mechanism(path)


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path):
    data = _four_bar_dict()
    data["name"] = '[{"' * 50 + "\\"
    path = _write(tmp_path, "named.json", json.dumps(data))
    assert nc.load_mechanism(path).name == data["name"]


def test_oversized_file_is_refused_before_parsing(tmp_path, monkeypatch):
    path = _write(tmp_path, "big.json", json.dumps(_four_bar_dict()))
    monkeypatch.setattr(modelfile, "MAX_BYTES", path.stat().st_size - 1)
    with pytest.raises(ValueError, match=r"big\.json: larger than .* the limit of a model file"):
        nc.load_mechanism(path)


def test_unreadable_files_name_the_file(tmp_path):
    binary = tmp_path / "binary.json"
    binary.write_bytes(b'{"name": "\xff"}')
    with pytest.raises(ValueError, match=r"binary\.json: not UTF-8 text"):
        nc.load_mechanism(binary)
    with pytest.raises(ValueError, match=rf"cannot read model file {tmp_path}: Is a directory"):
        nc.load_mechanism(tmp_path)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
@pytest.mark.parametrize("digits, message", [
    ("1" + "0" * 400, r"bodies/0/mass: 1000.*0 is beyond the range of floating-point numbers"),
    ("1.0e+400", r"bodies\[0\] \('crank0'\): body 'crank0': mass must be a positive finite "
                 r"number, got inf"),
    ("9" * 5000, r"Exceeds the limit \(4300 digits\)"),
])
def test_huge_numbers_are_refused(tmp_path, suffix, digits, message):
    """A 400-digit mass is no ``OverflowError`` traceback; 1e400 reads as inf,
    which the builder refuses; 5000 digits pass Python's own limit."""
    if suffix == ".yaml":
        pytest.importorskip("yaml")
    data = _four_bar_dict()
    data["bodies"][0]["mass"] = "MASS"
    path = _write(tmp_path, "huge" + suffix, json.dumps(data).replace('"MASS"', digits))
    with pytest.raises(ValueError, match=rf"huge\{suffix}: .*{message}"):
        nc.load_mechanism(path)


def test_huge_numbers_in_the_builder():
    mech = nc.Mechanism()
    with pytest.raises(ValueError, match=r"body 'b': mass must be a positive finite number, "
                                         r"got 1000.*\.\.\..*0$"):
        mech.add_body("b", 10**400, com=(0, 0, 0), inertia=np.eye(3))
    with pytest.raises(ValueError, match=r"body 'b': com must be 3 finite numbers"):
        mech.add_body("b", 1.0, com=(10**400, 0, 0), inertia=np.eye(3))


def _nested_mjcf(n):
    """A pendulum of ``n`` bodies, each nested in the one before."""
    body = ('<body pos="0 0 -0.1"><joint axis="0 1 0"/>'
            '<inertial pos="0 0 -0.05" mass="1" diaginertia="1e-3 1e-3 1e-4"/>')
    return f"<mujoco><worldbody>{body * n}{'</body>' * n}</worldbody></mujoco>"


def test_mjcf_deep_nesting_loads(tmp_path):
    """The importer walks MuJoCo's compiled body arrays, not the XML tree: a chain
    of 1000 nested bodies (deeper than MuJoCo's XML parser reads, so built with
    ``MjSpec``) imports; the parser's own refusal names the file."""
    mujoco = pytest.importorskip("mujoco")
    from natcoord.io.mjcf import from_mjmodel
    spec = mujoco.MjSpec()
    parent = spec.worldbody
    for _ in range(1000):
        parent = parent.add_body(pos=[0, 0, -0.1], mass=1.0, ipos=[0, 0, -0.05],
                                 inertia=[1e-3, 1e-3, 1e-4], explicitinertial=True)
        parent.add_joint(type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 1, 0])
    mech = from_mjmodel(spec.compile())
    assert [b.name for b in mech.bodies] == [f"body{k}" for k in range(1, 1001)]
    assert len(mech.joints) == 1000
    assert np.allclose(mech.bodies[-1].origin, (0, 0, -100.0))
    assert mech.joints[1].bodies == (0, 1)
    path = _write(tmp_path, "chain.xml", _nested_mjcf(1000))
    with pytest.raises(ValueError, match=r"chain.xml: MuJoCo cannot compile the file: .*deep"):
        nc.load_mjcf(path)


# ------------------------------------------------ strict, with or without jsonschema
STRICT = {                       # a four-bar value changed -> the path in the error
    "local as a string": (lambda d: d["bodies"][0].update(local="false"),
                          r"bodies/0/local: 'false' is not of type 'boolean'"),
    "local as a number": (lambda d: d["joints"][0].update(local=0),
                          r"joints/0/local: 0 is not of type 'boolean'"),
    "mass as a string": (lambda d: d["bodies"][1].update(mass="2"),
                         r"bodies/1/mass: '2' is not of type 'number'"),
    "mass as a bool": (lambda d: d["bodies"][1].update(mass=True),
                       r"bodies/1/mass: True is not of type 'number'"),
    "gravity of strings": (lambda d: d.update(gravity=["0", "-9.81", "0"]),
                           r"gravity/0: '0' is not of type 'number'"),
    "rate as a string": (lambda d: d.update(joint_rates=[{"joint": "ground0", "rate": "2"}]),
                         r"joint_rates/0/rate: '2' is not valid under any of the given schemas"),
    "t_end as a bool": (lambda d: d["scenario"].update(t_end=True),
                        r"scenario/t_end: True is not of type 'number'"),
    "t_end infinite": (lambda d: d["scenario"].update(t_end=float("inf")),
                       r"scenario: t_end must be a positive finite number, got inf"),
    "unknown joint type": (lambda d: d["joints"][0].update(type="hinge"),
                           r"joints/0/type: 'hinge' is not one of \['revolute'"),
    "stiffness too short": (lambda d: d.update(forces=[{
        "type": "cartesian_spring", "a": "crank0", "b": "ground", "point_a": [0, 1, 0],
        "point_b": [0, 1, 0], "stiffness": [1.0, 2.0]}]),
        r"forces/0/stiffness: \[1.0, 2.0\] is too short"),
}


@pytest.mark.parametrize("jsonschema_installed", [True, False])
@pytest.mark.parametrize("case", STRICT)
def test_model_files_are_strict_without_jsonschema(case, jsonschema_installed, monkeypatch,
                                                   tmp_path):
    """``"local": "false"`` was read as true where jsonschema was missing (it is no
    dependency of ``pip install .``): the same file must fail the same way."""
    if not jsonschema_installed:
        monkeypatch.setitem(sys.modules, "jsonschema", None)     # import jsonschema fails
    mutate, message = STRICT[case]
    data = _four_bar_dict()
    mutate(data)
    path = _write(tmp_path, "strict.json", json.dumps(data))
    with pytest.raises(ValueError, match=rf"^{tmp_path / 'strict.json'}: {message}"):
        nc.load_mechanism(path)


def test_in_code_check_refuses_what_jsonschema_refuses():
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft7Validator(schema())
    documents = [_four_bar_dict()]
    for mutate, _ in STRICT.values():
        documents.append(_four_bar_dict())
        mutate(documents[-1])
    drives = [{"type": "sinusoid", "amplitude": 1.0, "frequency": 2.0},
              {"type": "fourier", "frequency": 1.0}, {"type": "spline", "t": [0, 1], "s": [0]},
              {"type": "polynomial", "coefficients": []}, {"type": "bogus"}, "constant"]
    for drive in drives:
        documents.append(_four_bar_dict())
        documents[-1]["joints"][0]["drive"] = drive
    for data in documents:
        refused = modelfile._first_error(data, schema()) is not None
        assert refused == (not validator.is_valid(data)), data


def test_schema_names_every_builder_method():
    """The schema is the only check of joint and force types: it knows them all."""
    definitions = schema()["definitions"]
    joints = {m[len("add_"):] for m in vars(nc.Mechanism) if m.startswith("add_")} \
        - {"body", "input"} - {m[len("add_"):] for m in FORCE_METHODS.values()}
    assert set(definitions["joint"]["properties"]["type"]["enum"]) == joints
    assert set(definitions["force"]["properties"]["type"]["enum"]) == set(FORCE_METHODS)


# ------------------------------------------------------- transactional builder
def _mechanism():
    """The four-bar and a slider on a cylindrical joint ``c`` to ground."""
    mech = nc.models.four_bar()
    mech.add_body("slider", 1.0, com=(3, 0, 0), inertia=np.diag([0.1, 0.2, 0.2]),
                  origin=(3, 0, 0))
    mech.add_cylindrical(nc.GROUND, "slider", point=(3, 0, 0), axis=(1, 0, 0), name="c")
    mech.set_joint_rate("c", {"slide": 0.5})
    return mech


def _state(mech):
    """What a call could change: the file written from the mechanism and the
    model built from it (constraint rows and tables, initial guess, rates, forces)."""
    model = mech.build()
    tables = {k: v.tolist() for k, v in vars(model.tables).items() if isinstance(v, np.ndarray)}
    return (to_dict(mech), model.row_labels, tables, model.p_guess.tolist(),
            model.v_guess.tolist(), dict(model.joint_rates), repr(model.velocity_requests),
            len(model.bodies), len(model.forces))


NAN = float("nan")
#: a revolute joint of the four-bar
_REVOLUTE = next(j.name for j in nc.models.four_bar().joints if j.kind == "revolute")
FAILING_CALLS = {                # method -> calls that fail after a valid first part
    "set_initial": [dict(body="coupler1", origin=(0.3, 1, 0), velocity=(NAN, 0, 0)),
                    dict(body="crank0", axes=np.eye(3), angular_velocity="spin")],
    "set_joint_rate": [dict(joint="c", rate={"slide": 2, "bogus": 1}),
                       dict(joint="c", rate={"slide": 2, "angle": "fast"})],
    "add_body": [dict(name="extra", mass=1.0, com=(0, 0, 0), inertia=np.eye(3),
                      origin=(NAN, 0, 0)),
                 dict(name="slider", mass=1.0, com=(0, 0, 0), inertia=np.eye(3))],
    "add_revolute": [dict(a="crank0", b="slider", point=(0, 0, 0), axis=(0, 0, 0)),
                     dict(a="crank0", b="slider", point=(0, 0, 0), axis=(0, 0, 1),
                          drive="not a drive")],
    "add_spherical": [dict(a="crank0", b="slider", point=(0, 0, 0), name="c")],
    "add_universal": [dict(a="crank0", b="slider", point=(0, 0, 0), axis_a=(0, 0, 1),
                           axis_b=(0, 0, 2))],
    "add_compound": [dict(a="crank0", b="slider", dofs=[("u", "hinge", (0, 0, 0), (0, 0, 1)),
                                                        ("v", "hinge", (0, 0, 0), (0, 1, 0)),
                                                        ("w", "hinge", (0, 0, 1), (1, 0, 0))]),
                     dict(a="crank0", b="slider", dofs=[("u", "hinge", (0, 0, 0), (0, 0, 1)),
                                                        ("c", "slide", (0, 0, 0), (1, 0, 0))])],
    "add_point_on_line": [dict(a="crank0", b="slider", point=(0, 0, 0), axis=(0, 0, NAN))],
    "add_point_on_plane": [dict(a="crank0", b="nobody", point=(0, 0, 0), normal=(0, 0, 1))],
    "add_cylindrical": [dict(a="slider", b="slider", point=(0, 0, 0), axis=(1, 0, 0))],
    "add_prismatic": [dict(a="ground", b="ground", point=(0, 0, 0), axis=(1, 0, 0))],
    "add_fixed": [dict(a="crank0", b="slider", point=(0, 0, "x"))],
    "add_distance": [dict(a="crank0", b="slider", point_a=(0, 0, 0), point_b=(1, 0, 0),
                          length=-1.0)],
    "add_spring": [dict(a="crank0", b="slider", point_a=(0, 1, 0), point_b=(0, 1, 0),
                        stiffness=10.0)],
    "add_cartesian_spring": [dict(a="crank0", b="slider", point_a=(0, 1, 0),
                                  point_b=(3, 0, 0), stiffness=(1, 1, -1))],
    "add_joint_spring": [dict(joint="c", stiffness=1.0, coordinate="twist"),
                         dict(joint="c", stiffness=-1.0)],
    "add_force": [dict(body="ground", point=(0, 0, 0), force=(1, 0, 0))],
    "add_torque": [dict(body="slider", torque=(0, 0, np.inf))],
    "add_input": [dict(joint="c", torque=1.0),
                  dict(joint=_REVOLUTE, torque={"type": "pd", "kp": -1.0, "kd": 0.0, "target": 0.1}),
                  dict(joint=_REVOLUTE, torque="strong")],
}


def test_every_recorded_method_has_a_failing_call():
    recorded = {m for m in vars(nc.Mechanism)
                if m.startswith("add_") or m in ("set_initial", "set_joint_rate")}
    assert set(FAILING_CALLS) == recorded


@pytest.mark.parametrize("method, kwargs", [(m, kw) for m, calls in FAILING_CALLS.items()
                                            for kw in calls])
def test_failed_call_changes_nothing(method, kwargs):
    mech = _mechanism()
    before, calls = _state(mech), list(mech.calls)
    with pytest.raises(ValueError):
        getattr(mech, method)(**kwargs)
    assert mech.calls == calls
    assert _state(mech) == before


def test_saved_file_matches_the_model_after_a_failed_call(tmp_path):
    """The probe's case: the origin of a refused ``set_initial`` stayed in the
    model but not in the file (0.18 apart)."""
    mech = _mechanism()
    with pytest.raises(ValueError, match="velocity must be 3 finite numbers"):
        mech.set_initial("coupler1", origin=(0.3, 1, 0), velocity=(NAN, 0, 0))
    nc.save_mechanism(mech, tmp_path / "after.json")
    loaded = nc.load_mechanism(tmp_path / "after.json")
    assert _state(loaded) == _state(mech)


@pytest.mark.parametrize("call", [
    lambda m: nc.simulate(m, 0.1),
    lambda m: nc.assemble(m),
    lambda m: nc.Data(m),
    lambda m: nc.accelerations(m, nc.assemble(nc.models.six_bar().build()).state),
    lambda m: nc.joint_state(m, [0.0]),
    lambda m: nc.inverse_dynamics(m, [0.0], [0.0], [0.0]),
    lambda m: nc.joint_space(m),
], ids=["simulate", "assemble", "Data", "accelerations", "joint_state", "inverse_dynamics",
        "joint_space"])
def test_an_unbuilt_mechanism_is_refused_with_the_fix(call):
    """Passing the builder where the frozen model belongs (a first-day mistake) is one
    TypeError that says to call build(), from every entry point, not an AttributeError
    from deep inside."""
    with pytest.raises(TypeError, match=r"model must be a natcoord.Model \(build one with "
                                        r"Mechanism.build\(\)\), got Mechanism"):
        call(nc.models.six_bar())
