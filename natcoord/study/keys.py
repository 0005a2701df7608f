"""Keys of a study's rows: what a run computes, hashed.

A row is reused (resume) only when its ``key`` equals the key of the point
asked for now, and the key hashes everything that decides the row:

* the model spec's name and the point's parameters (factory and
  ``simulate`` keywords) and its Monte Carlo sample;
* the **content of the model** the point builds (:func:`model_content`): the
  model-file dictionary of the factory's ``Mechanism``
  (:func:`natcoord.io.modelfile.to_dict`: bodies, masses, inertias,
  geometry, joints, drives, forces, gravity, scenario), or, for a built
  ``Model`` or a mechanism with Python callables that a model file cannot
  store, the model's own arrays and attributes with the callables' code
  (:func:`fingerprint`). Editing a factory (gravity 9.81 → 1.62) changes the
  keys of its points, so their old rows are run again instead of returned;
* the run settings that change a row beyond the parameters (the reference
  run's options for the ``error`` measures, ``repeat`` for the timings, the
  code of custom measures).

The content is computed where the model is built: by the task that runs the
point, from the very object it simulates (a factory call costs about as much
as a short run, so hashing every point on the client first made a
two-worker sweep of six-bar runs no faster than a plain loop). The client
computes it only for the points a resumed log may already hold (a stored row
of the same point), once per distinct set of factory parameters, and once
for a built ``Model``.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import struct
import types

import numpy as np

from ..io.modelfile import to_dict
from .grid import full_name, is_model, make, plain

#: hex digits of a row key
KEY_DIGITS = 16


def task_key(model, params, sample=None, content=None, settings=None):
    """Stable 16-hex-digit key of one run: model spec, parameters, sample, and (when
    given) the model's content hash and the run settings (module docstring)."""
    doc = {"model": full_name(model), "params": plain(params)}
    if sample is not None:
        doc["sample"] = int(sample)
    if content is not None:
        doc["content"] = content
    if settings:
        doc["settings"] = plain(settings)
    text = json.dumps(doc, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_DIGITS]


def run_settings(groups, custom, reference, repeat):
    """The settings of a study that change its rows beyond each point's parameters:
    the reference run's options (``error`` measured), ``repeat`` (``time``
    measured) and the code of custom measures."""
    settings = {}
    if "error" in groups and reference is not None:
        settings["reference"] = dict(reference)
    if "time" in groups:
        settings["repeat"] = int(repeat)
    if custom:
        settings["measures"] = {name: fingerprint(f) for name, f in custom.items()}
    return settings


class Contents:
    """:func:`model_content` of each distinct set of factory parameters, computed once."""

    def __init__(self, spec):
        self.spec, self.known = spec, {}

    def __call__(self, params):
        if is_model(self.spec):
            params = {}
        tag = json.dumps(plain(params), sort_keys=True, default=repr)
        if tag not in self.known:
            self.known[tag] = model_content(self.spec, params)
        return self.known[tag]


def model_content(spec, params):
    """Hash (hex) of the model that ``spec`` and the factory ``params`` build.

    A ``Mechanism``: its model-file dictionary (or, when a drive or force is
    a Python callable, its recorded builder calls with the callables' code);
    a ``Model``: :func:`fingerprint` of it. A factory that raises gives the
    hash of its error, so that its rows are keyed (and run again once the
    factory is mended).
    """
    try:
        obj = make(spec, params)
    except Exception as err:                     # noqa: BLE001 -- the task reports it
        return error_content(err)
    return content_of(obj)


def error_content(err):
    """Hash (hex) of a factory's error: its rows are keyed by it (module docstring)."""
    return _digest({"factory error": f"{type(err).__name__}: {err}"})


def content_of(obj):
    """Hash (hex) of what a factory returned (:func:`model_content`)."""
    if is_model(obj) or not hasattr(obj, "build"):
        return fingerprint(obj)
    try:
        return _digest(to_dict(obj))
    except (ValueError, TypeError):              # callables a model file cannot store
        return fingerprint({"name": obj.name, "gravity": obj.gravity,
                            "scenario": obj.scenario, "calls": getattr(obj, "calls", [])})


def _digest(document):
    text = json.dumps(plain(document), sort_keys=True, default=repr, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def fingerprint(obj):
    """SHA-256 (hex) of an object's content: numbers, text, arrays (dtype, shape,
    bytes), lists, mappings, the attributes of objects (by class), functions by
    their code, constants, defaults and closures. Deterministic across processes
    (no ``id`` or memory address enters it); objects seen twice are hashed once."""
    hasher = hashlib.sha256()
    _feed(hasher, obj, {})      # id -> object: kept alive, so no id is reused meanwhile
    return hasher.hexdigest()


def _feed(h, obj, seen):
    def tag(text):
        h.update(text.encode() + b"\0")

    if obj is None or isinstance(obj, (bool, str)):
        tag(f"{type(obj).__name__}:{obj}")
    elif isinstance(obj, int):
        tag(f"int:{obj}")
    elif isinstance(obj, float):
        tag("float:" + ("nan" if math.isnan(obj) else struct.pack("<d", obj).hex()))
    elif isinstance(obj, complex):
        tag(f"complex:{obj!r}")
    elif isinstance(obj, bytes):
        tag("bytes")
        h.update(obj)
    elif isinstance(obj, np.generic):
        _feed(h, obj.item(), seen)
    elif isinstance(obj, np.ndarray):
        tag(f"array:{obj.dtype.str}:{obj.shape}")
        if obj.dtype.hasobject:
            for item in obj.ravel():
                _feed(h, item, seen)
        else:
            h.update(np.ascontiguousarray(obj).tobytes())
    elif id(obj) in seen:
        tag(f"seen:{type(obj).__qualname__}")
    else:
        seen[id(obj)] = obj
        _feed_container(h, obj, seen, tag)


def _feed_container(h, obj, seen, tag):
    if isinstance(obj, (list, tuple)):
        tag(f"{type(obj).__name__}:{len(obj)}")
        for item in obj:
            _feed(h, item, seen)
    elif isinstance(obj, dict):
        tag(f"dict:{len(obj)}")
        for key in sorted(obj, key=repr):
            _feed(h, key, seen)
            _feed(h, obj[key], seen)
    elif isinstance(obj, (set, frozenset)):
        tag(f"set:{len(obj)}")
        for item in sorted(obj, key=repr):
            _feed(h, item, seen)
    elif isinstance(obj, types.FunctionType):
        tag(f"function:{obj.__module__}:{obj.__qualname__}")
        _feed_code(h, obj.__code__, seen)
        _feed(h, obj.__defaults__, seen)
        _feed(h, obj.__kwdefaults__, seen)
        _feed(h, [cell.cell_contents if _filled(cell) else None
                  for cell in obj.__closure__ or ()], seen)
    elif isinstance(obj, types.MethodType):
        tag("method")
        _feed(h, obj.__func__, seen)
        _feed(h, obj.__self__, seen)
    elif isinstance(obj, functools.partial):
        tag("partial")
        _feed(h, [obj.func, obj.args, obj.keywords], seen)
    elif isinstance(obj, types.CodeType):
        _feed_code(h, obj, seen)
    elif isinstance(obj, (types.BuiltinFunctionType, types.ModuleType, type)) or callable(obj) \
            and not hasattr(obj, "__dict__") and not hasattr(obj, "__slots__"):
        tag(f"named:{getattr(obj, '__module__', '')}:"
            f"{getattr(obj, '__qualname__', getattr(obj, '__name__', type(obj).__name__))}")
    else:
        cls = type(obj)
        tag(f"object:{cls.__module__}:{cls.__qualname__}")
        state = dict(getattr(obj, "__dict__", {}))
        for name in getattr(cls, "__slots__", ()):
            if hasattr(obj, name):
                state[name] = getattr(obj, name)
        _feed(h, state, seen)


def _feed_code(h, code, seen):
    h.update(b"code\0" + code.co_code)
    _feed(h, [c for c in code.co_consts], seen)
    _feed(h, list(code.co_names), seen)


def _filled(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True
