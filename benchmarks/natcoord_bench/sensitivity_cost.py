"""Cost of trajectory sensitivities relative to the forward simulation (issue 10).

For n_θ = 1, 2, 4 parameters: the median wall time of ``nc.sensitivities``
(forward run plus the derivative sweep) over the median wall time of
``nc.simulate`` with the same options, on the sprung hexapod (1 s) and the
six-bar (2 s), both at ``rtol = 1e-8``, runs alternating so that both see
the same machine; the issue's target is ``ratio ≤ 1 + 0.5 n_θ``. The
sweep runs inside the forward run's compiled chunks. Written to
``data/sensitivity_cost.csv``.
"""
from __future__ import annotations

import argparse
import statistics
import time

from natcoord.integrate.simulate import simulate
from natcoord.models import hexapod, six_bar
from natcoord.analysis.sensitivity import sensitivities
from natcoord.study.records import write_csv

CASES = {
    "hexapod-sprung": (lambda: hexapod(leg_springs=(2000.0, 10.0)).build(), 1.0,
                       ["mass:platform", "stiffness:0", "damping:0", "stiffness:1"]),
    "six-bar": (lambda: six_bar().build(), 2.0, ["mass:rod1", "mass:rod2", "mass:rod3",
                                                 "mass:rod4"]),
}
COLUMNS = ("model", "n_theta", "steps", "forward_s", "sensitivity_s", "ratio", "target")
N_THETA = (1, 2, 4)


def timed(run):
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def rows(repeat=3, rtol=1e-8):
    for name, (build, t_end, params) in CASES.items():
        model = build()
        simulate(model, 0.05, rtol=rtol)                       # warm-up, untimed
        sensitivities(model, 0.05, params=params[:1], rtol=rtol)
        forward, total = [], {n: [] for n in N_THETA}
        for _ in range(repeat):                              # alternating: same conditions
            seconds, sol = timed(lambda: simulate(model, t_end, rtol=rtol))
            forward.append(seconds)
            for n in N_THETA:
                total[n].append(timed(lambda: sensitivities(model, t_end, params=params[:n],
                                                            rtol=rtol))[0])
        forward = statistics.median(forward)
        for n in N_THETA:
            median = statistics.median(total[n])
            yield {"model": name, "n_theta": n, "steps": sol.stats["steps"],
                   "forward_s": forward, "sensitivity_s": median, "ratio": median / forward,
                   "target": 1.0 + 0.5 * n}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="runs; the median is reported")
    parser.add_argument("--out", default="data/sensitivity_cost.csv", help="CSV file")
    args = parser.parse_args(argv)
    table = []
    for row in rows(args.repeat):
        table.append(row)
        print(f"{row['model']:15s} n_θ = {row['n_theta']}: {row['sensitivity_s']:.4f} s / "
              f"{row['forward_s']:.4f} s = {row['ratio']:.2f} (target {row['target']:g})")
    path = write_csv(args.out, table, COLUMNS,
                     f"python benchmarks/sensitivity_cost.py --repeat {args.repeat}")
    print(f"written to {path}")
    return 0
