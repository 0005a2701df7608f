"""Speed of the compiled core: one right-hand side, and whole runs per driver.

``rhs``: one right-hand side of the compiled core (``engine.rhs``: constraints,
forces, block factorization and solve) in microseconds, called from Python with
the stepper's packed arguments (``core``), and through ``DOPRI5.rhs`` (``stepper``:
plus the Python method and a new output array), for the six-bar and chain(8).

``simulate``: wall time of :func:`natcoord.simulate` (median of ``--repeat``)
for the six-bar, 10 s at ``rtol = 1e-6``, every step and 1001 outputs, and the
driven hexapod with 1001 outputs, under three drivers in the same process:
``chunked`` (compiled chunks of steps, outputs and checks,
:meth:`~natcoord.integrate.stepper.DOPRI5.advance`; the default, drives included when
they are declarative, as the hexapod's), ``per-step`` (one compiled step per
Python call, checks and outputs in Python: the driver before chunks and still
the one for drives given as Python callables)
and ``python`` (``integrate.COMPILED = False``). ``ratio`` is the per-step
wall time over the row's. Writes ``data/core_speed.csv``.
"""
from __future__ import annotations

import argparse
import statistics
import time
from contextlib import contextmanager

import numpy as np

from natcoord.core import engine
from natcoord.integrate import simulate as integrate
from natcoord.integrate.simulate import simulate
from natcoord.models import chain, hexapod, six_bar
from natcoord.integrate.stepper import DOPRI5
from natcoord.study.records import write_csv

COLUMNS = ("measure", "model", "outputs", "driver", "value", "unit", "ratio", "steps", "rhs")


def rhs_microseconds(model, count=2000, repeat=20):
    """``(core call, stepper.rhs)``: the best of ``repeat`` means over ``count`` calls [µs]."""
    st = DOPRI5(model, 1.0)
    y, W1, out = st.y.copy(), st._W1, np.empty(st.y.size)
    core = stepper = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(count):
            engine.rhs(*st._packed, y, W1, 0, out)
        core = min(core, (time.perf_counter() - t0) / count)
        t0 = time.perf_counter()
        for _ in range(count // 10):
            st.rhs(0.0, y)
        stepper = min(stepper, (time.perf_counter() - t0) / (count // 10))
    return core * 1e6, stepper * 1e6


@contextmanager
def driver(name):
    """Run :func:`simulate` under driver ``name`` (see the module docstring)."""
    saved = integrate.COMPILED, DOPRI5.chunked
    try:
        integrate.COMPILED = name != "python"
        if name == "per-step":
            DOPRI5.chunked = property(lambda self: False)
        yield
    finally:
        integrate.COMPILED, DOPRI5.chunked = saved


def wall_time(model, t_end, rtol, t_eval, name, repeat):
    """``(median wall time [s], solution)`` of ``repeat`` runs after an untimed one."""
    with driver(name):
        simulate(model, min(t_end, 0.05), rtol=rtol)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            sol = simulate(model, t_end, rtol=rtol, t_eval=t_eval)
            times.append(time.perf_counter() - t0)
    return statistics.median(times), sol


def configure(parser):
    parser.add_argument("--t-end", type=float, default=10.0, help="simulated time [s]")
    parser.add_argument("--rtol", type=float, default=1e-6, help="integration tolerance")
    parser.add_argument("--outputs", type=int, default=1001, help="t_eval points")
    parser.add_argument("--repeat", type=int, default=5, help="runs; the median is reported")
    parser.add_argument("--drivers", type=lambda s: s.split(","),
                        default=["chunked", "per-step", "python"],
                        help="comma separated, from chunked, per-step, python")
    parser.add_argument("--out", default="data/core_speed.csv", help="CSV file")


def run(args):
    rows = []
    for name, model in (("six-bar", six_bar().build()), ("chain8", chain(8).build())):
        core, stepper = rhs_microseconds(model)
        for where, value in (("core", core), ("stepper", stepper)):
            rows.append(dict(measure="rhs", model=name, outputs="", driver=where,
                             value=value, unit="us", ratio="", steps="", rhs=""))
            print(f"rhs {name} from {where}: {value:.1f} µs")
    cases = [("six-bar", six_bar().build(), None), ("six-bar", six_bar().build(),
                                                      np.linspace(0, args.t_end, args.outputs)),
             ("hexapod-driven", hexapod(scenario="driven").build(),
              np.linspace(0, args.t_end, args.outputs))]
    for name, model, t_eval in cases:
        times = {}
        for d in args.drivers:
            seconds, sol = wall_time(model, args.t_end, args.rtol, t_eval, d, args.repeat)
            times[d] = seconds
            rows.append(dict(measure="simulate", model=name,
                             outputs="steps" if t_eval is None else t_eval.size, driver=d,
                             value=seconds * 1e3, unit="ms", ratio=None,
                             steps=sol.stats["steps"], rhs=sol.stats["rhs"]))
        for row in rows[-len(args.drivers):]:
            if "per-step" in times:
                row["ratio"] = times["per-step"] / (row["value"] * 1e-3)
            print(f"simulate {name} ({row['outputs']} outputs) {row['driver']}: "
                  f"{row['value']:.1f} ms" + (f", {row['ratio']:.2f}× per-step"
                                               if row["ratio"] else ""))
    path = write_csv(args.out, rows, COLUMNS,
                     f"python benchmarks/core_speed.py --t-end {args.t_end:g} --rtol "
                     f"{args.rtol:g} --outputs {args.outputs} --repeat {args.repeat} "
                     f"--drivers {','.join(args.drivers)}")
    print(f"written to {path}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    configure(parser)
    return run(parser.parse_args(argv))
