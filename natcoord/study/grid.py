"""The points of a study: grids, Monte Carlo samples, and the models they build.

A grid is a dict of lists (their Cartesian product), a list of dicts, or a
sampler ``rng -> dict`` with ``n_samples`` and ``seed`` (:func:`expand`).
Each point's parameters are split (:func:`split`) into the keywords of
:func:`natcoord.simulate` and the factory's; :func:`build` makes the model
of one point from a model spec: a registry name (``nc.models.REGISTRY``), a
factory (a callable returning a ``Mechanism`` or ``Model``) or a built
``Model``.
"""
from __future__ import annotations

import inspect
import itertools
import math

import numpy as np

from .. import models
from ..integrate.simulate import simulate
from ..util.resources import check_memory

#: keywords of ``simulate`` a grid may set (everything else goes to the factory)
SIMULATE_KEYWORDS = tuple(name for name in inspect.signature(simulate).parameters
                          if name != "model")


def plain(value):
    """Python scalars, lists and dicts (for hashing and CSV) of NumPy scalars, arrays,
    tuples and mappings."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (np.ndarray, tuple, list)):
        return [plain(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def is_scalar(value):
    """A value that fits one CSV cell (a parameter column)."""
    return value is None or isinstance(value, (bool, int, float, str))


def is_model(spec):
    """Is ``spec`` a built ``Model`` (not a registry name or a factory)?"""
    return hasattr(spec, "n_coords")


def model_name(model):
    """Short name of a model spec: registry name, factory name or ``Model.name``."""
    if isinstance(model, str):
        return model
    if hasattr(model, "scenario") and hasattr(model, "name"):       # a built Model
        return model.name
    return getattr(model, "__name__", type(model).__name__)


def full_name(model):
    """``module:qualname`` of a factory, else :func:`model_name`."""
    if callable(model) and not isinstance(model, str) and hasattr(model, "__qualname__"):
        return f"{model.__module__}:{model.__qualname__}"
    return model_name(model)


#: memory a study holds per point (its parameters, key, pending task and row), bytes
POINT_BYTES = 4096


def check_points(n_points, what):
    """``ValueError`` when a study of ``n_points`` would not fit in memory (checked
    before the points are made: ``--param x=0:1:100000000000`` must not end in a
    ``MemoryError`` traceback, nor ``--samples 10**11`` spawn seeds for hours)."""
    check_memory(n_points * POINT_BYTES, f"{what}: a study of {n_points:.4g} points",
                 "give fewer values or samples")


def expand(grid, n_samples=None, seed=None):
    """Grid points ``[(sample or None, params), ...]`` of a dict, a list or a sampler.

    ``ValueError`` for a grid without points: a parameter without values
    (``{"mass": []}``, ``--param mass=1:2:0``), an empty list, no samples; and for
    one of more points than memory holds (:func:`check_points`).
    """
    if callable(grid):
        if n_samples is None:
            raise ValueError("a sampler grid needs n_samples")
        if (isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer))
                or n_samples < 1):
            raise ValueError(f"n_samples must be a whole number ≥ 1, got {n_samples!r}: "
                             f"the study would run nothing")
        check_points(int(n_samples), f"n_samples={n_samples}")
        children = np.random.SeedSequence(seed).spawn(int(n_samples))
        return [(i, plain(dict(grid(np.random.default_rng(child)))))
                for i, child in enumerate(children)]
    if grid is None:
        return [(None, {})]
    if isinstance(grid, dict):
        keys = list(grid)
        values = [v if isinstance(v, (list, tuple, np.ndarray)) else [v]
                  for v in grid.values()]
        empty = [k for k, v in zip(keys, values) if len(v) == 0]
        if empty:
            raise ValueError(f"grid parameter {empty[0]!r} has no values: the study would run "
                             f"nothing (give at least one value, e.g. a:b:n with n ≥ 1)")
        check_points(math.prod(len(v) for v in values),
                     f"the grid of {', '.join(f'{len(v)} {k}' for k, v in zip(keys, values))}")
        return [(None, plain(dict(zip(keys, combo)))) for combo in itertools.product(*values)]
    points = [(None, plain(dict(point))) for point in grid]
    if not points:
        raise ValueError("the grid is an empty list: the study would run nothing")
    return points


def split(params):
    """``(factory parameters, simulate parameters)`` of one grid point."""
    sim = {k: v for k, v in params.items() if k in SIMULATE_KEYWORDS}
    return {k: v for k, v in params.items() if k not in sim}, sim


def factory_of(spec):
    """The factory of a registry name, or ``spec`` itself."""
    return models.factory(spec) if isinstance(spec, str) else spec


def check_factory(spec, names):
    """Fail early (before any task) on parameters the factory does not take."""
    if not names:
        return
    if is_model(spec):
        raise ValueError(f"model parameters {sorted(names)} need a factory, not a built Model")
    try:
        accepted = inspect.signature(factory_of(spec)).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind == p.VAR_KEYWORD for p in accepted.values()):
        return
    unknown = sorted(set(names) - set(accepted))
    if unknown:
        raise ValueError(f"model {model_name(spec)!r} takes {sorted(accepted) or 'no'} "
                         f"parameters and simulate takes {list(SIMULATE_KEYWORDS)}, "
                         f"not {unknown}")


def make(spec, params):
    """What the factory of one point returns (a ``Mechanism`` or a ``Model``; a built
    ``Model`` spec passes through)."""
    if is_model(spec):
        return spec
    return factory_of(spec)(**params)


def build(spec, params):
    """The model of one task: ``factory(**params)`` built (a Model passes through)."""
    return built(make(spec, params))


def built(obj):
    """The ``Model`` of what a factory returned: a ``Mechanism`` built, a Model itself."""
    return obj.build() if hasattr(obj, "build") else obj
