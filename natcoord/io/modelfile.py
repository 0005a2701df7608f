"""Model files: mechanisms as versioned JSON (or YAML) text (docs/model-format.md).

A file lists the builder calls that made the mechanism, grouped by kind:
``bodies`` (``add_body``), ``joints`` (``add_<type>``), ``forces``
(``add_spring``/``add_force``/``add_torque``/…), ``initial`` (``set_initial``),
``joint_rates`` (``set_joint_rate``), plus ``name``, ``gravity``, ``scenario``
and ``format_version``. Each entry holds the method's keyword arguments as
given (world reference coordinates unless the entry says ``"local": true``),
so loading replays them through the same public methods and every check of
the builder applies; writing then reading gives the identical model.

A file stores declarative drives (``Drive.constant_rate``, ``Drive.sinusoid``,
``Drive.polynomial``, ``Drive.spline``, ``Drive.fourier``/``Drive.periodic``);
``sample_drives=dt`` stores any other drive as a spline
through its values sampled every ``dt`` over ``[0, t_end]``.
"""
from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

import numpy as np

from ..model.drives import Drive
from ..model.mechanism import Mechanism, snapshot
from ..util.atomic import atomic_write

FORMAT = "natcoord-mechanism"
FORMAT_VERSION = 1
#: force entries: file ``type`` -> builder method
FORCE_METHODS = {"spring": "add_spring", "force": "add_force", "torque": "add_torque",
                 "cartesian_spring": "add_cartesian_spring"}
_SECTIONS = ("bodies", "joints", "forces", "initial", "joint_rates")


def schema():
    """The JSON Schema of model files shipped with the package (a dict)."""
    text = resources.files("natcoord.io").joinpath("schema/mechanism.schema.json").read_text(
        encoding="utf-8")
    return json.loads(text)


# ------------------------------------------------------------------ writing
def _drive_spec(drive, where, sample_drives, t_end):
    if drive is None:
        return None
    spec = getattr(drive, "spec", None)
    if spec is not None:
        return dict(spec)
    if sample_drives is None:
        raise ValueError(
            f"{where}: its drive is a Python callable, which a model file cannot store; "
            f"build it with Drive.constant_rate, Drive.sinusoid, Drive.polynomial, "
            f"Drive.spline or Drive.periodic, or pass sample_drives=dt to store it as a cubic spline through "
            f"samples every dt seconds over [0, t_end]")
    dt = float(sample_drives)
    if not dt > 0.0:
        raise ValueError(f"sample_drives must be a positive time step, got {sample_drives!r}")
    drive = Drive.coerce(drive, where)
    t = np.linspace(0.0, t_end, max(4, math.ceil(t_end / dt) + 1))
    return Drive.spline(t, [drive(ti)[0] for ti in t]).spec


def to_dict(mech: Mechanism, sample_drives=None) -> dict:
    """The model-file dictionary of ``mech`` (JSON-compatible).

    Raises ``ValueError`` naming the joint or force that a file cannot hold:
    a drive without a declarative form (unless ``sample_drives`` is given),
    a force or torque given as a callable.
    """
    scenario = snapshot(dict(mech.scenario))
    t_end = float(scenario.get("t_end", 10.0))
    if "output_point" in scenario:
        body, point = scenario["output_point"]
        scenario["output_point"] = [body, [float(x) for x in point]]
    data = {"format": FORMAT, "format_version": FORMAT_VERSION, "name": mech.name,
            "gravity": [float(g) for g in mech.gravity],
            **{section: [] for section in _SECTIONS}, "scenario": scenario}
    kinds = {method: kind for kind, method in FORCE_METHODS.items()}
    for method, arguments in getattr(mech, "calls", []):
        entry = {k: v for k, v in arguments.items() if v is not None}
        if method == "add_body":
            data["bodies"].append(entry)
        elif method == "set_initial":
            data["initial"].append(entry)
        elif method == "set_joint_rate":
            data["joint_rates"].append(entry)
        elif method in kinds:
            for key in ("force", "torque"):
                if callable(entry.get(key)):
                    raise ValueError(
                        f"{kinds[method]} on {entry.get('body')!r}: a {key} given as a Python "
                        f"callable cannot be stored in a model file; only constant forces and "
                        f"torques (3 numbers) can")
            data["forces"].append({"type": kinds[method], **entry})
        else:
            kind = method[len("add_"):]
            where = f"{kind} joint {entry.get('name')!r}"
            if "drive" in entry:
                entry["drive"] = _drive_spec(entry["drive"], where, sample_drives, t_end)
            data["joints"].append({"type": kind, **entry})
    for section in ("forces", "initial", "joint_rates"):
        if not data[section]:
            del data[section]
    return data


def save_mechanism(mech: Mechanism, path, sample_drives=None):
    """Write ``mech`` to ``path``: YAML for ``.yaml``/``.yml`` (needs PyYAML), else JSON.

    Written whole or not at all (:func:`natcoord.util.atomic.atomic_write`): an
    interrupted or failed save leaves an existing model file as it was.
    """
    data = to_dict(mech, sample_drives=sample_drives)
    path = Path(path)
    if path.suffix.lower() in (".yaml", ".yml"):
        yaml = _yaml(path)
        text = yaml.safe_dump(data, sort_keys=False)
    else:
        text = json.dumps(data, indent=1) + "\n"
    with atomic_write(path, "w", encoding="utf-8") as file:
        file.write(text)


# ------------------------------------------------------------------ reading
def _yaml(path):
    try:
        import yaml
    except ImportError:
        raise ValueError(f"{path}: YAML model files need PyYAML (pip install pyyaml); "
                         f"JSON files need nothing") from None
    return yaml


def _validate_schema(data, source):
    try:
        import jsonschema
    except ImportError:          # the replay below still checks every value
        return
    validator = jsonschema.Draft7Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = _specific(errors[0])
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise ValueError(f"{source}: {where}: {err.message}")


def _specific(err):
    """For a ``oneOf`` failure (a drive or force of a known ``type``), the first
    error of that type's branch, which says what is wrong (a missing, unknown or
    bad key); else ``err`` itself ("not valid under any of the given schemas")."""
    if err.validator != "oneOf":
        return err
    other_types = {e.schema_path[0] for e in err.context
                   if list(e.schema_path)[1:] == ["properties", "type", "const"]}
    return next((e for e in err.context if e.schema_path[0] not in other_types), err)


def _replay(method, entry, what, source):
    try:
        return method(**entry)
    except TypeError as err:
        import inspect
        accepted = [p for p in inspect.signature(method).parameters if p != "self"]
        raise ValueError(f"{source}: {what}: {err}; accepted keys: {accepted}") from None
    except ValueError as err:
        raise ValueError(f"{source}: {what}: {err}") from None


def from_dict(data, source="model") -> Mechanism:
    """Rebuild a :class:`Mechanism` from a model-file dictionary.

    Checks the dictionary against the shipped JSON Schema (when ``jsonschema``
    is installed), then replays every entry through the public builder
    methods; errors name the file, the section and the entry.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{source}: a model file holds one object (mapping), "
                         f"got {type(data).__name__}")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError(f"{source}: format_version must be an integer "
                         f"(this natcoord writes {FORMAT_VERSION}), got {version!r}")
    if version > FORMAT_VERSION:
        raise ValueError(f"{source}: format_version {version} is newer than this natcoord "
                         f"reads ({FORMAT_VERSION}); upgrade natcoord")
    _validate_schema(data, source)
    unknown = set(data) - {"format", "format_version", "name", "gravity", "scenario",
                           *_SECTIONS}
    if unknown:
        raise ValueError(f"{source}: unknown top-level keys {sorted(unknown)}")
    try:
        mech = Mechanism(gravity=data.get("gravity", (0.0, 0.0, 0.0)),
                         name=data.get("name", "mechanism"))
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None

    def entries(section):
        items = data.get(section, [])
        if not isinstance(items, list):
            raise ValueError(f"{source}: {section} must be a list")
        for k, item in enumerate(items):
            if not isinstance(item, dict):
                raise ValueError(f"{source}: {section}[{k}] must be an object")
            yield f"{section}[{k}]" + (f" ({item['name']!r})" if "name" in item else ""), \
                dict(item)

    for what, entry in entries("bodies"):
        _replay(mech.add_body, entry, what, source)
    for what, entry in entries("joints"):
        kind = entry.pop("type", None)
        joints = sorted(m[len("add_"):] for m in vars(Mechanism) if m.startswith("add_")
                        and m != "add_body" and m not in FORCE_METHODS.values())
        if kind not in joints:
            raise ValueError(f"{source}: {what}: unknown joint type {kind!r}; "
                             f"known: {joints}")
        if entry.get("drive") is not None:
            try:
                entry["drive"] = Drive.from_spec(entry["drive"])
            except ValueError as err:
                raise ValueError(f"{source}: {what}: {err}") from None
        _replay(getattr(mech, f"add_{kind}"), entry, what, source)
    for what, entry in entries("forces"):
        kind = entry.pop("type", None)
        method = getattr(mech, FORCE_METHODS.get(kind, ""), None)
        if method is None:
            raise ValueError(f"{source}: {what}: unknown force type {kind!r}; known: "
                             f"{[k for k, m in FORCE_METHODS.items() if hasattr(mech, m)]}")
        _replay(method, entry, what, source)
    for what, entry in entries("initial"):
        _replay(mech.set_initial, entry, what, source)
    for what, entry in entries("joint_rates"):
        if not hasattr(mech, "set_joint_rate"):
            raise ValueError(f"{source}: {what}: this natcoord has no set_joint_rate")
        _replay(mech.set_joint_rate, entry, what, source)
    scenario = dict(data.get("scenario", {}))
    if "t_end" in scenario:
        t_end = scenario["t_end"]
        if isinstance(t_end, bool) or not isinstance(t_end, (int, float)) or not t_end > 0:
            raise ValueError(f"{source}: scenario.t_end must be a positive number, "
                             f"got {t_end!r}")
        scenario["t_end"] = float(t_end)
    if "output_point" in scenario:
        try:
            body, point = scenario["output_point"]
            mech.body(body)
            point = tuple(float(x) for x in point)
            assert len(point) == 3
        except (ValueError, TypeError, AssertionError):
            raise ValueError(f"{source}: scenario.output_point must be [body name, [x, y, z]] "
                             f"naming a body, got {scenario['output_point']!r}") from None
        scenario["output_point"] = (body, point)
    mech.scenario = {"t_end": 10.0, **scenario}
    return mech


def load_mechanism(path) -> Mechanism:
    """Read a model file (JSON; YAML for ``.yaml``/``.yml`` when PyYAML is installed).

    Returns the :class:`Mechanism`; call ``.build()`` for the model.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"cannot read model file {path}: {err.strerror or err}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        yaml = _yaml(path)
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise ValueError(f"{path}: not valid YAML: {err}") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not valid JSON: {err}") from None
    return from_dict(data, source=str(path))
