"""Named model parameters: reading one and making a re-parameterized copy of a model.

A parameter is named by a string (``PARAMETER_NAMES``): a body's mass, a
scale of its central inertia, a gravity component, a spring's stiffness,
damping or rest length, a scale of a constant load, or a parameter of a
declarative drive. :mod:`natcoord.dynamics.linearization` differentiates
along these names; :func:`with_parameters` sets them on a copy of a frozen
:class:`~natcoord.model.frozen.Model`.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from ..util.checks import number
from .forces import PointForce, SpringDamper, Torque


def springs(model):
    """The model's spring–dampers in the order they were added."""
    return [f for f in model.forces if isinstance(f, SpringDamper)]


def loads(model):
    """The model's point forces and torques in the order they were added."""
    return [f for f in model.forces if isinstance(f, (PointForce, Torque))]


def parameter_value(model, name):
    """The current value of a named parameter (``inertia:<body>`` and ``load:<k>``
    are scales: 1)."""
    if not isinstance(name, str):
        raise TypeError(f"a parameter name is a string ({PARAMETER_NAMES}), got {name!r}")
    kind, _, key = name.partition(":")
    if kind == "load":
        named_load(model, name, key)
        return 1.0
    if kind == "drive":
        return driven_joint(model, name, key)[1].drive.parameter(key.rpartition(":")[2])
    if kind in ("mass", "inertia"):
        body = named_body(model, name, key)
        return body.mass if kind == "mass" else 1.0
    if kind == "gravity" and key in ("x", "y", "z"):
        return float(model.gravity["xyz".index(key)])
    if kind in SPRING_ATTRIBUTES:
        return getattr(named_spring(model, name, key), SPRING_ATTRIBUTES[kind])
    raise KeyError(f"unknown parameter {name!r}: use {PARAMETER_NAMES}")


#: the forms of parameter names
PARAMETER_NAMES = ("mass:<body>, inertia:<body>, gravity:x|y|z, stiffness:<k>, damping:<k>, "
                   "rest_length:<k>, load:<k> or drive:<joint>:<parameter>")
#: spring parameter -> SpringDamper attribute
SPRING_ATTRIBUTES = {"stiffness": "k", "damping": "c", "rest_length": "l0"}


def parameter_changes(model, values):
    """The fields of a frozen model that setting ``values`` (``{name: value}``)
    changes: a dict of new field values for ``dataclasses.replace`` (:meth:`Model.with_parameters`).

    Every name is checked first (``KeyError``/``ValueError``/``TypeError`` name a
    bad one); the model is only read.
    """
    if not isinstance(values, Mapping):
        raise TypeError(f"with_parameters takes a mapping {{name: value}}, e.g. "
                        f"{{'mass:<body>': 2.0}}; got {values!r}")
    values = dict(values)
    for name in values:
        parameter_value(model, name)                 # the name exists
    draft = SimpleNamespace(bodies=list(model.bodies), forces=list(model.forces),
                            joints=list(model.joints), gravity=np.array(model.gravity),
                            tables=model.tables, body_index=model.body_index)
    for name, value in values.items():
        _set_parameter(draft, name, value)
    return {"bodies": tuple(draft.bodies), "forces": tuple(draft.forces),
            "joints": tuple(draft.joints), "gravity": draft.gravity, "tables": draft.tables}


def _set_parameter(model, name, value):
    """Set one parameter on ``model``, a draft namespace of a model's ``bodies``,
    ``forces``, ``joints`` (lists), ``gravity`` (array) and ``tables``."""
    kind, _, key = name.partition(":")
    if kind == "drive":
        j, joint = driven_joint(model, name, key)
        drive = joint.drive.with_parameter(key.rpartition(":")[2], number(value, "value", name))
        model.joints[j] = joint.with_drive(drive)
        model.tables = model.tables.with_drive(joint.drive, drive)
        return
    if kind == "inertia":
        raise ValueError(f"parameter {name!r} is a scale of the central inertia at 1; "
                         f"to set it, build the model with the inertia wanted")
    if kind == "mass":
        body = named_body(model, name, key)
        model.bodies[body.index] = replace(body, mass=number(value, "mass", name, "positive"))
    elif kind == "gravity":
        model.gravity["xyz".index(key)] = number(value, "value", name)
    elif kind == "load":
        load = named_load(model, name, key)
        attribute = "force" if isinstance(load, PointForce) else "torque"
        if callable(getattr(load, attribute)):
            raise ValueError(f"parameter {name!r}: the load is a function of (t, state); "
                             f"scale it inside that function instead")
        new = copy.copy(load)
        setattr(new, attribute, number(value, "scale", name) * np.asarray(getattr(load, attribute), float))
        model.forces[next(i for i, f in enumerate(model.forces) if f is load)] = new
    else:
        spring = named_spring(model, name, key)
        new = copy.copy(spring)
        setattr(new, SPRING_ATTRIBUTES[kind], number(value, kind, name, "non-negative"))
        model.forces[next(i for i, f in enumerate(model.forces) if f is spring)] = new


def named_load(model, name, key):
    return numbered(loads(model), name, key, "point forces and torques are numbered {} in "
                                              "the order they were added")


def driven_joint(model, name, key):
    """``(index, joint)`` of the driven joint of a ``drive:<joint>:<parameter>`` name."""
    joint_name, _, parameter = key.rpartition(":")
    driven = {j.name: i for i, j in enumerate(model.joints) if j.drive is not None}
    if joint_name not in driven or not parameter:
        undriven = any(j.name == joint_name for j in model.joints) and parameter
        raise KeyError(f"parameter {name!r}: " + (f"joint {joint_name!r} has no drive; "
                       if undriven else "") + f"use drive:<joint>:<parameter> with a driven "
                       f"joint of {list(driven)}")
    return driven[joint_name], model.joints[driven[joint_name]]


def named_body(model, name, key):
    if key not in model.body_index:
        raise KeyError(f"parameter {name!r}: unknown body {key!r}; bodies: "
                       f"{list(model.body_index)}")
    return model.bodies[model.body_index[key]]


def named_spring(model, name, key):
    return numbered(springs(model), name, key, "springs are numbered {} in the order of "
                                                "add_spring")


def numbered(items, name, key, numbering):
    """``items[int(key)]``, or ``KeyError`` saying ``numbering`` (with ``0..n−1`` for ``{}``)."""
    if not key.isdigit() or int(key) >= len(items):
        raise KeyError(f"parameter {name!r}: " + numbering.format(f"0..{len(items) - 1}"))
    return items[int(key)]
