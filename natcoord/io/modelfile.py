"""Model files: mechanisms as versioned JSON (or YAML) text (docs/model-format.md).

A file lists the builder calls that made the mechanism, grouped by kind:
``bodies`` (``add_body``), ``joints`` (``add_<type>``), ``forces``
(``add_spring``/``add_force``/``add_torque``/…), ``initial`` (``set_initial``),
``joint_rates`` (``set_joint_rate``), ``inputs`` (``add_input``: joint torque
laws), ``frames`` (``attach_frame``, in body coordinates), plus ``name``,
``gravity``, ``scenario``, ``format_version`` and an importer's ``import_report``
(so ``nc.actuator_torques`` and the list of what was not modelled survive a save).
Each entry holds the method's keyword arguments as given (world reference
coordinates unless the entry says ``"local": true``),
so loading replays them through the same public methods and every check of
the builder applies; writing then reading gives the identical model.

Reading trusts no file: it refuses files beyond ``MAX_BYTES``, nesting beyond
``MAX_DEPTH`` and YAML aliases before building any data from them, and checks
the data against the shipped schema in code (the same with or without
``jsonschema``) before replaying it.

A file stores declarative drives (``Drive.constant_rate``, ``Drive.sinusoid``,
``Drive.polynomial``, ``Drive.spline``, ``Drive.fourier``/``Drive.periodic``);
``sample_drives=dt`` stores any other drive as a spline
through its values sampled every ``dt`` over ``[0, t_end]``.
"""
from __future__ import annotations

import functools
import json
import math
import re
import sys
from importlib import resources
from pathlib import Path

import numpy as np

from ..model.drives import Drive
from ..model.inputs import PD
from ..model.mechanism import Mechanism, snapshot
from ..util.atomic import atomic_write
from ..util.checks import number, shown
from .xml_common import read_regular_file

FORMAT = "natcoord-mechanism"
#: most spline knots a sampled drive may store (two numbers each: well within MAX_BYTES)
MAX_SAMPLES = 100_000
FORMAT_VERSION = 1
#: force entries: file ``type`` -> builder method
FORCE_METHODS = {"spring": "add_spring", "force": "add_force", "torque": "add_torque",
                 "cartesian_spring": "add_cartesian_spring", "joint_spring": "add_joint_spring"}
_SECTIONS = ("bodies", "joints", "forces", "initial", "joint_rates", "inputs", "frames")


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
    samples = math.ceil(t_end / dt) + 1
    if samples > MAX_SAMPLES:
        raise ValueError(f"{where}: sample_drives={sample_drives!r} over t_end = {t_end:g} s "
                         f"would store {samples:.3g} spline knots, more than a model file "
                         f"holds ({MAX_SAMPLES}); sample more coarsely (dt >= "
                         f"{t_end / (MAX_SAMPLES - 1):.3g} s) or give the drive a "
                         f"declarative form")
    drive = Drive.coerce(drive, where)
    t = np.linspace(0.0, t_end, max(4, samples))
    return Drive.spline(t, [drive(ti)[0] for ti in t]).spec


def _input_entry(mech, joint, sample_drives, t_end):
    """The file entry of the input on ``joint``: its torque law's spec, a drive law's
    (``τ = s(t)``) or a PD law's with its target's (sampled like a drive's)."""
    law = next(i.law for i in mech.inputs if i.joint == joint)
    where = f"input on joint {joint!r}"
    if isinstance(law, PD):
        torque = {"type": "pd", "kp": law.kp, "kd": law.kd,
                  "target": _drive_spec(law.target, f"{where}: target", sample_drives, t_end)}
    else:
        torque = _drive_spec(law, where, sample_drives, t_end)
    return {"joint": joint, "torque": torque}


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
        elif method == "add_input":
            data["inputs"].append(_input_entry(mech, entry["joint"], sample_drives, t_end))
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
    data["frames"] = [{"name": name, "body": snapshot(f.body), "origin": snapshot(f.origin),
                       "axes": snapshot(f.axes), "local": True,
                       **({"after": snapshot(f.after)} if f.after is not None else {})}
                      for name, f in mech.frames.items()]
    if mech.import_report:
        data["import_report"] = snapshot(mech.import_report)
    for section in ("forces", "initial", "joint_rates", "inputs", "frames"):
        if not data[section]:
            del data[section]
    return data


def save_mechanism(mech: Mechanism, path, sample_drives=None):
    """Write ``mech`` to ``path``: YAML for ``.yaml``/``.yml`` (needs PyYAML), else JSON.

    Written whole or not at all (:func:`natcoord.util.atomic.atomic_write`): an
    interrupted or failed save leaves an existing model file as it was. What
    :func:`load_mechanism` would refuse (the schema, the scenario) is refused here,
    before anything is written, with the same message.
    """
    data = to_dict(mech, sample_drives=sample_drives)
    path = Path(path)
    # refuse here what load_mechanism would refuse: a file written is a file that loads
    # (a mechanism name or a mass that is no JSON string or number, a scenario edited
    # by hand with a NaN or negative t_end or an output point on no body)
    where = f"{path}: not written, load_mechanism would refuse it"
    _check_schema(data, where)
    _scenario(data["scenario"], mech, where)
    if path.suffix.lower() in (".yaml", ".yml"):
        yaml = _yaml(path)
        text = yaml.safe_dump(data, sort_keys=False)
    else:
        text = json.dumps(data, indent=1) + "\n"
    size = len(text.encode("utf-8"))
    if size > MAX_BYTES:                    # load_mechanism would refuse it
        raise ValueError(f"{path}: the model file would take {size / 2**20:.1f} MiB, more than "
                         f"load_mechanism reads ({MAX_BYTES // 2**20} MiB); sample drives "
                         f"more coarsely (sample_drives=) or store fewer bodies")
    with atomic_write(path, "w", encoding="utf-8") as file:
        file.write(text)


# ------------------------------------------------------------------ reading
#: largest model file read, in bytes: about 16 000 bodies as ``save_mechanism``
#: writes them (a 1000-body chain takes 1 MB). Larger files are refused before
#: they are parsed, so no file can take the machine's memory.
MAX_BYTES = 16 * 2**20
#: deepest nesting of lists and mappings read. A model file needs 5 (file →
#: bodies → entry → inertia → row); the JSON and YAML parsers recurse once per
#: level, so a file nested 100 000 deep would end in ``RecursionError``.
MAX_DEPTH = 20
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_OPENING, _CLOSING = np.frombuffer(b"[{", np.uint8), np.frombuffer(b"]}", np.uint8)


def _yaml(path):
    try:
        import yaml
    except ImportError:
        raise ValueError(f"{path}: YAML model files need PyYAML (pip install pyyaml); "
                         f"JSON files need nothing") from None
    return yaml


@functools.cache
def _bounded_yaml_loader(yaml):
    """PyYAML's safe loader refusing aliases and nesting beyond ``MAX_DEPTH``.

    An alias (``*a``) re-uses a node: eight nested levels of them in 614 bytes
    make 10⁸ values for whatever walks the data (validation, saving), and a
    model file never needs one. The composer recurses once per level, so the
    depth is counted on the way in, long before Python's recursion limit.
    """
    class BoundedLoader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent, index):
            event = self.peek_event()
            line = event.start_mark.line + 1
            if isinstance(event, yaml.AliasEvent):
                raise ValueError(
                    f"line {line}: YAML aliases (*{event.anchor}) are not accepted in model "
                    f"files: a model file never needs them, and nested aliases let a few "
                    f"hundred bytes expand to billions of values; write the values out")
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    raise ValueError(f"line {line}: nested deeper than {MAX_DEPTH} levels "
                                     f"(a model file needs 5)")
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return BoundedLoader


def _json_depth(text) -> int:
    """Deepest nesting of arrays and objects in JSON ``text``, counted without
    parsing it (``json.loads`` recurses per level): the running sum of the
    brackets outside strings."""
    skeleton = np.frombuffer(_JSON_STRING.sub("", text).encode(), np.uint8)
    steps = np.isin(skeleton, _OPENING).astype(np.int64) - np.isin(skeleton, _CLOSING)
    return int(np.cumsum(steps).max(initial=0))


def _read(path):
    """The data of the model file ``path`` (YAML for ``.yaml``/``.yml``, else JSON),
    read within ``MAX_BYTES`` and ``MAX_DEPTH``; every refusal names the file."""
    try:
        raw = read_regular_file(path, MAX_BYTES + 1)
    except OSError as err:
        raise ValueError(f"cannot read model file {path}: {err.strerror or err}") from None
    if len(raw) > MAX_BYTES:
        raise ValueError(f"{path}: larger than {MAX_BYTES // 2**20} MiB, the limit of a "
                         f"model file (natcoord.io.modelfile.MAX_BYTES)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        yaml = _yaml(path)
        try:
            return yaml.load(text, Loader=_bounded_yaml_loader(yaml))
        except yaml.YAMLError as err:
            raise ValueError(f"{path}: not valid YAML: {err}") from None
        except ValueError as err:    # refused above, or an integer beyond Python's digit limit
            raise ValueError(f"{path}: {err}") from None
    if _json_depth(text) > MAX_DEPTH:
        raise ValueError(f"{path}: nested deeper than {MAX_DEPTH} levels "
                         f"(a model file needs 5)")
    try:
        return json.loads(text)
    except ValueError as err:        # JSONDecodeError, or an integer beyond the digit limit
        raise ValueError(f"{path}: not valid JSON: {err}") from None


# Model files are checked against the shipped schema here, in code, rather than
# with jsonschema: a file then means the same whether jsonschema is installed or
# not (without it, ``"local": "false"`` was read as true and ``"mass": "2"`` as
# 2). The checker implements the Draft 7 keywords the schema uses, worded as
# jsonschema words them.
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool,
          "integer": int, "number": (int, float)}
#: the largest integer a float holds: a 400-digit mass is refused, not overflowed
_LARGEST = int(sys.float_info.max)


@functools.cache
def _definitions():
    return schema()["definitions"]


def _is(value, kind):
    """Whether ``value`` has the JSON type ``kind`` (a bool is no number)."""
    return isinstance(value, _TYPES[kind]) and (kind == "boolean" or not isinstance(value, bool))


def _kind(branch):
    """The ``type`` constant of a ``oneOf`` branch (a drive or torque law), or None."""
    if "$ref" in branch:
        branch = _definitions()[branch["$ref"].rsplit("/", 1)[-1]]
    return branch.get("properties", {}).get("type", {}).get("const")


def _claims(branch, value):
    """Whether a ``oneOf`` branch is the one meant for ``value``: the law of its
    ``type``, or the branch of the value's JSON type (a number, a vector)."""
    if "$ref" in branch:
        branch = _definitions()[branch["$ref"].rsplit("/", 1)[-1]]
    const = _kind(branch)
    if const is not None:
        return isinstance(value, dict) and value.get("type") == const
    return "type" in branch and _is(value, branch["type"])


def _first_error(value, node, path=()):
    """``(path, message)`` of the first place where ``value`` breaks the schema
    ``node``, or None. Keywords apply to values of their JSON type, as in
    jsonschema. Recursion follows the schema (at most 6 levels), never the data
    beyond it: a value nested deeper fails a ``type`` first."""
    if "$ref" in node:
        node = _definitions()[node["$ref"].rsplit("/", 1)[-1]]
    kind = node.get("type")
    if kind is not None and not _is(value, kind):
        return path, f"{shown(value)} is not of type {kind!r}"
    if "const" in node and value != node["const"]:
        return path, f"{node['const']!r} was expected"
    if "enum" in node and value not in node["enum"]:
        return path, f"{shown(value)} is not one of {node['enum']!r}"
    if _is(value, "number"):
        if isinstance(value, int) and abs(value) > _LARGEST:
            return path, (f"{shown(value)} is beyond the range of floating-point numbers "
                          f"(±1.8e308)")
        if "exclusiveMinimum" in node and value <= node["exclusiveMinimum"]:
            return path, (f"{shown(value)} is less than or equal to the minimum of "
                          f"{node['exclusiveMinimum']!r}")
        if "minimum" in node and value < node["minimum"]:
            return path, f"{shown(value)} is less than the minimum of {node['minimum']!r}"
    if isinstance(value, (str, list)):
        least = node.get("minLength" if isinstance(value, str) else "minItems", 0)
        if len(value) < least:
            short = "should be non-empty" if least == 1 else "is too short"
            return path, f"{shown(value)} {short}"
        if isinstance(value, list) and len(value) > node.get("maxItems", len(value)):
            return path, f"{shown(value)} is too long"
    if isinstance(value, dict):
        missing = [name for name in node.get("required", ()) if name not in value]
        if missing:
            return path, f"{missing[0]!r} is a required property"
        properties, extra = node.get("properties", {}), node.get("additionalProperties", True)
        unexpected = [key for key in value if key not in properties]
        if extra is False and unexpected:
            return path, (f"Additional properties are not allowed ("
                          f"{', '.join(map(repr, unexpected))} "
                          f"{'was' if len(unexpected) == 1 else 'were'} unexpected)")
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            error = sub is not None and _first_error(item, sub, (*path, key))
            if error:
                return error
    if isinstance(value, list) and "items" in node:
        items = node["items"]              # one schema for all, or one per position
        for k, item in enumerate(value):
            sub = items if isinstance(items, dict) else items[k] if k < len(items) else None
            error = sub is not None and _first_error(item, sub, (*path, k))
            if error:
                return error
    if "oneOf" in node:
        valid = sum(not _first_error(value, branch, path) for branch in node["oneOf"])
        if valid > 1:
            return path, f"{shown(value)} is valid under more than one of the given schemas"
        if not valid:
            meant = next((b for b in node["oneOf"] if _claims(b, value)), None)
            if meant:
                return _first_error(value, meant, path)
            kinds = [k for k in map(_kind, node["oneOf"]) if k is not None]
            hint = f" ('type' must be one of {kinds})" if kinds and isinstance(value, dict) \
                else ""
            return path, f"{shown(value)} is not valid under any of the given schemas{hint}"
    return None


def _check_schema(data, source):
    """Refuse ``data`` where it breaks the shipped schema, naming the file and the
    path of the value: ``model.json: bodies/0/local: 'false' is not of type 'boolean'``."""
    error = _first_error(data, schema())
    if error:
        path, message = error
        raise ValueError(f"{source}: {'/'.join(map(str, path)) or '(top level)'}: {message}")


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

    Checks the dictionary against the shipped JSON Schema (in code, the same
    with or without ``jsonschema`` installed), then replays every entry
    through the public builder methods; errors name the file, the section
    and the entry.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{source}: a model file holds one object (mapping), "
                         f"got {type(data).__name__}")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError(f"{source}: format_version must be an integer "
                         f"(this natcoord writes {FORMAT_VERSION}), got {shown(version)}")
    if version > FORMAT_VERSION:
        raise ValueError(f"{source}: format_version {version} is newer than this natcoord "
                         f"reads ({FORMAT_VERSION}); upgrade natcoord")
    _check_schema(data, source)
    try:
        mech = Mechanism(gravity=data.get("gravity", (0.0, 0.0, 0.0)),
                         name=data.get("name", "mechanism"))
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None

    def entries(section):
        for k, item in enumerate(data.get(section, [])):
            yield f"{section}[{k}]" + (f" ({item['name']!r})" if "name" in item else ""), \
                dict(item)

    for what, entry in entries("bodies"):
        _replay(mech.add_body, entry, what, source)
    for what, entry in entries("joints"):
        kind = entry.pop("type")
        if entry.get("drive") is not None:
            try:
                entry["drive"] = Drive.from_spec(entry["drive"])
            except ValueError as err:
                raise ValueError(f"{source}: {what}: {err}") from None
        _replay(getattr(mech, f"add_{kind}"), entry, what, source)
    for what, entry in entries("forces"):
        _replay(getattr(mech, FORCE_METHODS[entry.pop("type")]), entry, what, source)
    for what, entry in entries("initial"):
        _replay(mech.set_initial, entry, what, source)
    for what, entry in entries("joint_rates"):
        _replay(mech.set_joint_rate, entry, what, source)
    for k, entry in enumerate(data.get("inputs", [])):
        _replay(mech.add_input, dict(entry), f"inputs[{k}] (joint {entry['joint']!r})", source)
    for what, entry in entries("frames"):
        _replay(mech.attach_frame, entry, what, source)
    mech.import_report = dict(data.get("import_report", {}))
    mech.scenario = {"t_end": 10.0, **_scenario(data.get("scenario", {}), mech, source)}
    return mech


def _scenario(scenario, mech, source):
    """The scenario of a model file checked against ``mech``: ``t_end`` a positive
    finite number, ``output_point`` a body of ``mech`` (or ground) and 3 finite
    numbers; ``ValueError`` naming ``source`` otherwise."""
    scenario = dict(scenario)
    if "t_end" in scenario:
        scenario["t_end"] = number(scenario["t_end"], "t_end", f"{source}: scenario", "positive")
    if "output_point" in scenario:
        where = f"{source}: scenario/output_point"
        try:
            body, point = scenario["output_point"]
            mech.body(body)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: {err}") from None
        point = np.asarray(point, float) if np.shape(point) == (3,) else None
        if point is None or not np.all(np.isfinite(point)):
            raise ValueError(f"{where}: the point must be 3 finite numbers, got "
                             f"{shown(scenario['output_point'][1])}")
        scenario["output_point"] = (body, tuple(float(x) for x in point))
    return scenario


def load_mechanism(path) -> Mechanism:
    """Read a model file (JSON; YAML for ``.yaml``/``.yml`` when PyYAML is installed).

    Returns the :class:`Mechanism`; call ``.build()`` for the model. Files
    beyond ``MAX_BYTES`` or nested beyond ``MAX_DEPTH``, and YAML aliases, are
    refused with an error naming the file.
    """
    path = Path(path)
    return from_dict(_read(path), source=str(path))
