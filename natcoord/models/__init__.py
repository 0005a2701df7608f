"""Benchmark mechanisms (docs/benchmarks.md): each returns a ``Mechanism``.

``build(name, **params)`` builds a registered one by its command-line name::

    model = nc.models.build("chain", n=100, loops=2)
"""
import inspect

from .andrews import andrews
from .families import chain, tree
from .four_bar import four_bar, n_four_bar
from .hexapod import hexapod
from .six_bar import six_bar
from .spring_pendulum import spring_pendulum

#: CLI names -> factory
REGISTRY = {"six-bar": six_bar, "chain": chain, "tree": tree, "hexapod": hexapod,
            "n-four-bar": n_four_bar, "four-bar": four_bar, "andrews": andrews,
            "spring-pendulum": spring_pendulum}



def factory(name):
    """The factory of the registered model ``name`` (``ValueError`` naming the choices)."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown model {name!r}; choose from {sorted(REGISTRY)}") from None


def parameters(name):
    """The keyword parameters of model ``name``'s factory (``inspect.Parameter`` by name)."""
    return inspect.signature(factory(name)).parameters


def check_parameters(name, names):
    """``ValueError`` unless the factory of ``name`` takes every one of ``names`` and
    ``names`` covers its parameters without a default."""
    accepted = parameters(name)
    unknown = sorted(set(names) - set(accepted))
    missing = [k for k, p in accepted.items() if p.default is p.empty and k not in names]
    if unknown or missing:
        raise ValueError(f"model {name!r} takes the parameters {list(accepted) or 'none'}"
                         + (f", not {unknown}" if unknown else "")
                         + (f"; give {missing}" if missing else ""))


def build(name, **params):
    """The registered model ``name`` built with its factory's keyword ``params``."""
    check_parameters(name, params)
    return factory(name)(**params).build()


__all__ = ["build", "factory", "parameters", "check_parameters", "six_bar", "chain", "tree", "hexapod", "n_four_bar", "four_bar", "andrews",
           "spring_pendulum", "REGISTRY"]
