"""Quantities derived from a :class:`~natcoord.model.frozen.Model`, computed once per model.

The model is frozen and holds data only. What solvers and analyses derive
from it (symbolic plans, the assembled initial state) is kept here, in a
table keyed weakly by the model object: an entry lives as long as its model,
and a re-parameterized copy (``Model.with_parameters``) is another key, so
mass-dependent results never leak from a model to its copy.
"""
from __future__ import annotations

import threading
import weakref

_TABLES = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def derived(model, key, build):
    """``build()`` for ``(model, key)``, computed on first use and kept while ``model`` lives.

    ``build`` runs outside the lock (it may derive other quantities); of two
    concurrent first uses, the result stored first is the one both return.
    The value must not refer to ``model`` (it would keep the model alive).
    """
    with _LOCK:
        table = _TABLES.setdefault(model, {})
        if key in table:
            return table[key]
    value = build()
    with _LOCK:
        return table.setdefault(key, value)
