"""Compile every Numba kernel once and store it in the on-disk cache.

``python -m natcoord.warmup`` (run by ``make venv`` after installation) takes
the compilation (10–20 s) out of the first call of a later process: that
process loads the kernels from the cache beside natcoord's sources (see
:mod:`natcoord.util.jit` for why that place, whatever ``NUMBA_CACHE_DIR`` says).
It runs short simulations of tiny models through every code path that
reaches a kernel — every available backend, every stabilization, joints of
each kind, drives, springs and applied forces, loop closures, redundant
constraints — so that each kernel is compiled for the argument types the
library gives it. Running it again with a warm cache just loads the kernels.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def kernels():
    """Every ``cache=True`` Numba dispatcher of natcoord, by qualified name."""
    from numba.core.registry import CPUDispatcher

    from .integrate import compiled, simulate as integrate
    from .analysis import compiled_sensitivity
    from .model import drives
    from .model import kernels as k
    from .linalg import blockldl
    modules = [k, blockldl, compiled, integrate, drives, compiled_sensitivity]
    try:
        from .linalg import cholmod
        modules.append(cholmod)
    except ImportError:
        pass
    return {f"{m.__name__}.{name}": obj for m in modules for name, obj in vars(m).items()
            if isinstance(obj, CPUDispatcher) and obj.__module__ == m.__name__}


def exercise(t_end=0.02):
    """Short runs through every kernel path; returns a list of what was run."""
    from . import models
    from .dynamics.assembly import assemble
    from .dynamics.workspace import accelerations
    from .integrate.simulate import PROJECTIONS, simulate
    from .linalg import available_solvers
    from .model.frozen import State

    ran = []
    six_bar = models.six_bar().build()                     # redundant constraint
    for solver in available_solvers():
        for projection in PROJECTIONS:
            simulate(six_bar, t_end, solver=solver, projection=projection)
            ran.append(f"six-bar {solver} {projection}")
    from .integrate.stepper import DOPRI5
    stepper = DOPRI5(six_bar, t_end)
    stepper.observe(stepper.t, stepper.y)                  # records' energy and residuals
    ran.append("six-bar compiled observe")
    small = [models.chain(8, loops=2).build(),              # loop closures (spherical)
             models.tree(3).build(),
             models.hexapod(scenario="driven").build(),    # universal, prismatic, drive laws
             models.andrews().build(),                      # spring, torque, 9 redundant
             models.four_bar().build()]
    for model in small:
        # at an assembled state, and at the model's own read-only reference
        # coordinates (a different array type for Numba)
        states = (assemble(model).state,
                  State(0.0, model.p_reference, np.zeros(model.n_coords)))
        for solver in available_solvers():
            for state in states:
                accelerations(model, state, solver=solver)
            ran.append(f"{model.name} accelerations {solver}")
        simulate(model, min(t_end, model.scenario.get("t_end", t_end)) / 4, solver="block")
        ran.append(f"{model.name} simulate block")
    from .model.drives import parameter_weights
    hexapod = small[2]
    drive = next(j.drive for j in hexapod.joints if j.drive is not None)
    parameter_weights(hexapod.tables.weights, drive, "cosines.1", 0.0)
    ran.append("drive parameter derivative (complex step through the law)")
    from .analysis.sensitivity import sensitivities
    sensitivities(six_bar, t_end, params=["p0", "mass:rod3"], t_eval=[t_end / 2, t_end])
    ran.append("six-bar sensitivities (the compiled sweep)")
    return ran


def _exercised(dispatcher):
    """Compiled in this process or found in the on-disk cache.

    A kernel called only from other kernels is compiled into its callers, and
    a caller loaded from the cache does not compile it again: its own index
    file (written when it was first compiled) is the evidence. Kernels
    inlined into their callers have no code of their own.
    """
    if dispatcher.signatures or dispatcher.targetoptions.get("inline") == "always":
        return True
    from pathlib import Path
    return Path(dispatcher._cache._cache_file._index_path).exists()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m natcoord.warmup", description=__doc__)
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    ran = exercise()
    seconds = time.perf_counter() - start
    found = kernels()
    missing = sorted(name for name, d in found.items() if not _exercised(d))
    if not args.quiet:
        from .util.jit import cache_location
        places = sorted({cache_location(d.py_func) or "Numba's default (not in-tree)"
                         for d in found.values()})
        print(f"natcoord: {len(found)} Numba kernels compiled or loaded in {seconds:.1f} s "
              f"({len(ran)} short runs); cache: {', '.join(places)}")
    if missing:     # a gap in exercise(): those kernels compile on first use instead
        print(f"natcoord.warmup: warning: kernels not exercised (they will compile on first "
              f"use): {missing}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
