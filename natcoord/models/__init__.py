"""Benchmark mechanisms (../shared/BENCHMARKS.md): each returns a ``Mechanism``."""
from .families import chain, tree
from .six_bar import six_bar

#: CLI names -> factory
REGISTRY = {"six-bar": six_bar, "chain": chain, "tree": tree}

__all__ = ["six_bar", "chain", "tree", "REGISTRY"]
