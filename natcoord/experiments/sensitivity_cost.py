"""Cost of trajectory sensitivities relative to the forward simulation (issue 10).

For n_θ = 1, 2, 4 parameters: the median wall time of ``nc.sensitivities``
(forward run plus the derivative sweep) over the median wall time of
``nc.simulate`` with the same options, on the sprung hexapod (1 s) and the
six-bar (2 s), both at ``rtol = 1e-8``; the issue's target is
``ratio ≤ 1 + 0.5 n_θ``. Both the forward run and the derivative sweep are
compiled (``--python-sweep``: the sweep of Python, ``sensitivity.COMPILED =
False``, as before the compiled one); ``ratio_python`` relates the sweep
alone to the Python forward path (``integrate.COMPILED = False``). Written to
``data/sensitivity_cost.csv``.
"""
from __future__ import annotations

import argparse
import statistics
import time

from .. import integrate, sensitivity
from ..integrate import simulate
from ..models import hexapod, six_bar
from ..sensitivity import sensitivities
from .records import write_csv

CASES = {
    "hexapod-sprung": (lambda: hexapod(leg_springs=(2000.0, 10.0)).build(), 1.0,
                       ["mass:platform", "stiffness:0", "damping:0", "stiffness:1"]),
    "six-bar": (lambda: six_bar().build(), 2.0, ["mass:rod1", "mass:rod2", "mass:rod3",
                                                 "mass:rod4"]),
}
COLUMNS = ("model", "n_theta", "steps", "forward_s", "sensitivity_s", "sweep_s", "ratio",
           "target", "forward_python_s", "ratio_python")


def median_time(run, repeat):
    """Median wall time of ``run()`` and the results of all runs."""
    times, results = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        results.append(run())
        times.append(time.perf_counter() - start)
    return statistics.median(times), results


def rows(repeat=3, rtol=1e-8):
    for name, (build, t_end, params) in CASES.items():
        model = build()
        simulate(model, 0.05, rtol=rtol)                       # warm-up, untimed
        forward, sol = median_time(lambda: simulate(model, t_end, rtol=rtol), repeat)
        forward_python = median_time(lambda: python_simulate(model, t_end, rtol), repeat)[0]
        for n in (1, 2, 4):
            total, runs = median_time(
                lambda: sensitivities(model, t_end, params=params[:n], rtol=rtol), repeat)
            sweep = statistics.median(sens.stats["derivative_time"] for sens in runs)
            yield {"model": name, "n_theta": n, "steps": sol[0].stats["steps"],
                   "forward_s": forward, "sensitivity_s": total, "sweep_s": sweep,
                   "ratio": total / forward, "target": 1.0 + 0.5 * n,
                   "forward_python_s": forward_python,
                   "ratio_python": 1.0 + sweep / forward_python}


def python_simulate(model, t_end, rtol):
    """``simulate`` on the Python path (the uncompiled driver of integrate.py)."""
    integrate.COMPILED = False
    try:
        return simulate(model, t_end, rtol=rtol)
    finally:
        integrate.COMPILED = True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="runs; the median is reported")
    parser.add_argument("--out", default="data/sensitivity_cost.csv", help="CSV file")
    parser.add_argument("--python-sweep", action="store_true",
                        help="the Python derivative sweep instead of the compiled one")
    args = parser.parse_args(argv)
    sensitivity.COMPILED = not args.python_sweep
    table = []
    for row in rows(args.repeat):
        table.append(row)
        print(f"{row['model']:15s} n_θ = {row['n_theta']}: {row['sensitivity_s']:.3f} s / "
              f"{row['forward_s']:.3f} s = {row['ratio']:.1f} (target {row['target']:g}); "
              f"sweep vs Python forward: 1 + {row['ratio_python'] - 1:.1f}")
    flags = " --python-sweep" if args.python_sweep else ""
    path = write_csv(args.out, table, COLUMNS,
                     f"python benchmarks/sensitivity_cost.py --repeat {args.repeat}{flags}")
    print(f"written to {path}")
    return 0
