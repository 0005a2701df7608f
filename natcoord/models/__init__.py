"""Benchmark mechanisms (../shared/BENCHMARKS.md): each returns a ``Mechanism``."""
from .six_bar import six_bar

#: CLI names -> factory
REGISTRY = {"six-bar": six_bar}

__all__ = ["six_bar", "REGISTRY"]
