"""The compiled core's view of the Python side cannot drift from it.

The core reads the named tuples (Tables, Buffers, PlanArrays, WorkBuffers,
FactorStore, Laws; Radau's RadauBuffers) by field enums compiled in from
natcoord/core/src/nc_fields.h and radau.h,
and the step's statuses and ``ctrl``/``counts`` indices from dopri5.h. A field
added on one side only would have the core read the wrong array: the names
compiled in (``engine.layout()``) must be the namedtuples' ``_fields`` in order
(a nested tuple's with its name as prefix), ``engine.pack`` must accept the
tuples the set-up builds (it checks every field's kind and the count), and the
header's codes must be those :mod:`natcoord.dynamics.core_run` names.
"""
import re
from pathlib import Path

import numpy as np
import pytest

import natcoord as nc
from natcoord.core import engine
from natcoord.dynamics import core_run as cc
from natcoord.integrate import radau
from natcoord.integrate.stepper import DOPRI5
from natcoord.linalg import blockldl, make_solver
from natcoord.model.core_tables import Tables, make_tables
from natcoord.model.drives import Laws

SRC = Path(__file__).resolve().parent.parent / "natcoord" / "core" / "src"

TUPLES = {"Tables": Tables, "Buffers": cc.Buffers, "PlanArrays": blockldl.PlanArrays,
          "WorkBuffers": blockldl.WorkBuffers, "FactorStore": cc.FactorStore, "Laws": Laws,
          "RadauBuffers": radau.RadauBuffers}
#: fields that hold a nested named tuple, flattened with their name as prefix
NESTED = {("Tables", "laws"): Laws}


def flattened(name, tuple_type):
    out = []
    for field in tuple_type._fields:
        inner = NESTED.get((name, field))
        out += [f"{field}_{f}" for f in inner._fields] if inner else [field]
    return out


@pytest.mark.parametrize("name", sorted(TUPLES))
def test_layout_is_the_namedtuples_fields(name):
    assert engine.layout()[name].split(",") == flattened(name, TUPLES[name])


def test_layout_names_every_tuple():
    assert set(engine.layout()) == set(TUPLES)


@pytest.fixture(scope="module")
def driven():
    return nc.models.hexapod(scenario="driven").build()


def test_pack_accepts_the_set_up_tuples(driven):
    """Kinds and counts as compiled in: pack refuses a field of another dtype, a
    missing or an extra field."""
    T = make_tables(driven)
    assert T.laws.weight_kind.size > 0 and isinstance(T.size_factor, float)
    solver = make_solver(driven, "block")
    P, Wk = solver.plan.arrays, solver.work
    S = cc.make_buffers(driven, solver)
    store = cc.make_store(Wk, driven.n_rows, 2)
    for t, code in ((T, "T"), (S, "S"), (P, "P"), (Wk, "W"), (store, "F"), (T.laws, "L")):
        engine.pack(t, code)
    with pytest.raises(TypeError):
        engine.pack(S._replace(held=np.zeros(S.mask.size)), "S")     # float, not bool
    with pytest.raises(TypeError):
        engine.pack(tuple(T)[:-1], "T")                                 # no size_factor


def header_enum(text, first):
    """The names of the C enum whose first member is ``first``, in order."""
    body = re.search(r"enum\s*\{\s*(" + first + r"\b[^}]*)\}", text).group(1)
    return [re.sub(r"\s*=.*", "", m.strip()) for m in body.split(",") if m.strip()]


def test_header_codes_are_the_python_names():
    header = (SRC / "dopri5.h").read_text(encoding="utf-8")
    statuses = header_enum(header, "NC_ACCEPTED")
    assert [getattr(cc, s[3:]) for s in statuses] == list(range(len(statuses)))
    assert statuses[-1] == "NC_CALLBACK"
    ctrl = header_enum(header, "CTRL_T_NOW")
    assert ctrl[-1] == "CTRL_COUNT" and len(ctrl) - 1 == cc.N_CTRL
    assert [getattr(cc, c[5:]) for c in ctrl[:-1]] == list(range(cc.N_CTRL))
    counts = header_enum(header, "NC_N_RHS")
    assert [getattr(cc, c[3:]) for c in counts] == list(range(len(counts)))
    core = (SRC / "nc_core.h").read_text(encoding="utf-8")
    factor = header_enum(core, "NC_FACTORED")
    assert len(factor) == 4
    assert (blockldl.FACTORED, blockldl.SINGULAR_FRAME, blockldl.NOT_POSITIVE_DEFINITE,
            blockldl.UNPIVOTABLE_JOINT) == tuple(range(4))


def test_radau_header_codes_are_the_python_names():
    """radau.h's ctrl and counts indices are natcoord.integrate.radau's."""
    header = (SRC / "radau.h").read_text(encoding="utf-8")
    ctrl = header_enum(header, "RC_T_NOW")
    assert ctrl[-1] == "RC_COUNT" and len(ctrl) - 1 == radau.N_CTRL
    assert [getattr(radau, c[3:]) for c in ctrl[:-1]] == list(range(radau.N_CTRL))
    counts = header_enum(header, "RN_JACOBIANS")
    assert [getattr(radau, c[1:]) for c in counts[:-1]] == list(range(len(counts) - 1))
    coef = header_enum(header, "RCOEF_T")
    assert coef[-1] == "RCOEF_COUNT" and radau.COEFFICIENTS.size == 36


def test_hold_for_output_and_resume(driven):
    """The output's dropped set is the step's, and the step gets its own back."""
    stepper = DOPRI5(driven, t_bound=0.1)
    S, c = stepper._S, stepper._S.ctrl
    stepper.step()
    own_mask, own_threshold = S.mask.copy(), S.threshold.copy()
    engine.hold_for_output(stepper._packed[1])
    assert c[cc.HOLDING] == 1.0 and np.array_equal(S.held, own_mask)
    S.mask[:] = True                       # as an output's factorization might leave it
    S.threshold[:] = 0.5
    engine.hold_for_output(stepper._packed[1])
    assert np.array_equal(S.mask, own_mask) and np.array_equal(S.threshold, own_threshold)
    S.mask[:] = True
    engine.resume(stepper._packed[1])
    assert c[cc.HOLDING] == 0.0 and np.array_equal(S.mask, own_mask)
    assert np.array_equal(S.threshold, own_threshold)
    engine.resume(stepper._packed[1])                    # nothing held: left alone
    assert np.array_equal(S.mask, own_mask)
