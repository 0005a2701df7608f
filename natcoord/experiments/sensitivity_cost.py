"""Cost of trajectory sensitivities relative to the forward simulation (issue 10).

For n_θ = 1, 2, 4 parameters: the median wall time of ``nc.sensitivities``
(forward run plus the derivative sweep) over the median wall time of
``nc.simulate`` with the same options, on the sprung hexapod (1 s) and the
six-bar (2 s), both at ``rtol = 1e-8``; the issue's target is
``ratio ≤ 1 + 0.5 n_θ``. Written to ``data/sensitivity_cost.csv``.
"""
from __future__ import annotations

import argparse
import statistics
import time

from ..integrate import simulate
from ..models import hexapod, six_bar
from ..sensitivity import sensitivities
from .tolerance import write_csv

CASES = {
    "hexapod-sprung": (lambda: hexapod(leg_springs=(2000.0, 10.0)).build(), 1.0,
                       ["mass:platform", "stiffness:0", "damping:0", "stiffness:1"]),
    "six-bar": (lambda: six_bar().build(), 2.0, ["mass:rod1", "mass:rod2", "mass:rod3",
                                                 "mass:rod4"]),
}
COLUMNS = ("model", "n_theta", "steps", "forward_s", "sensitivity_s", "sweep_s", "ratio",
           "target")


def median_time(run, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def rows(repeat=3, rtol=1e-8):
    for name, (build, t_end, params) in CASES.items():
        model = build()
        simulate(model, 0.05, rtol=rtol)                       # warm-up, untimed
        forward, sol = median_time(lambda: simulate(model, t_end, rtol=rtol), repeat)
        for n in (1, 2, 4):
            total, sens = median_time(
                lambda: sensitivities(model, t_end, params=params[:n], rtol=rtol), repeat)
            yield {"model": name, "n_theta": n, "steps": sol.stats["steps"],
                   "forward_s": forward, "sensitivity_s": total,
                   "sweep_s": sens.stats["derivative_time"], "ratio": total / forward,
                   "target": 1.0 + 0.5 * n}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="runs; the median is reported")
    parser.add_argument("--out", default="data/sensitivity_cost.csv", help="CSV file")
    args = parser.parse_args(argv)
    table = []
    for row in rows(args.repeat):
        table.append(row)
        print(f"{row['model']:15s} n_θ = {row['n_theta']}: {row['sensitivity_s']:.3f} s / "
              f"{row['forward_s']:.3f} s = {row['ratio']:.1f} (target {row['target']:g})")
    path = write_csv(args.out, table, COLUMNS,
                     f"python benchmarks/sensitivity_cost.py --repeat {args.repeat}")
    print(f"written to {path}")
    return 0
