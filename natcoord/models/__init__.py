"""Benchmark mechanisms (docs/benchmarks.md): each returns a ``Mechanism``."""
from .andrews import andrews
from .families import chain, tree
from .four_bar import four_bar, n_four_bar
from .hexapod import hexapod
from .six_bar import six_bar
from .spring_pendulum import spring_pendulum

#: CLI names -> factory
REGISTRY = {"six-bar": six_bar, "chain": chain, "tree": tree, "hexapod": hexapod,
            "n-four-bar": n_four_bar, "four-bar": four_bar, "andrews": andrews}

__all__ = ["six_bar", "chain", "tree", "hexapod", "n_four_bar", "four_bar", "andrews",
           "spring_pendulum", "REGISTRY"]
