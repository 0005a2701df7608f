"""Real-time factor of the driven hexapod (docs/benchmarks.md, scenario b).

Simulated time over wall time for the Stewart–Gough platform whose six legs
follow the closed-form inverse kinematics of the prescribed platform path
(as compiled Fourier interpolants, ``hexapod.leg_drive``), 10 s at
``rtol = 1e-6``: the median of ``--repeat`` runs, written with the run's
counters and residuals to ``data/hexapod_speed.csv``.
"""
from __future__ import annotations

import argparse

from natcoord.linalg import available_solvers, default_solver
from natcoord.models import hexapod
from natcoord.study.records import Progress, write_csv
from natcoord.study.tolerance import COLUMNS, measure

SPEED_COLUMNS = COLUMNS[:COLUMNS.index("wall_time_max") + 1] + ("realtime_factor",) \
    + COLUMNS[COLUMNS.index("steps"):COLUMNS.index("max_velocity_residual") + 1]


def realtime_factor(model, t_end=10.0, rtol=1e-6, proj_tol=1e-10, solver=None, repeat=5):
    """A CSV row: counters, residuals and ``realtime_factor = t_end / median wall time``."""
    measure(model, rtol, proj_tol, min(t_end, 0.05), solver=solver)   # warm-up, untimed
    row = measure(model, rtol, proj_tol, t_end, solver=solver, repeat=repeat)
    row["realtime_factor"] = t_end / row["wall_time_median"]
    return row


def configure(parser):
    solvers = available_solvers()
    parser.add_argument("--t-end", type=float, default=10.0, help="simulated time [s]")
    parser.add_argument("--rtol", type=float, default=1e-6, help="integration tolerance")
    parser.add_argument("--proj-tol", type=float, default=1e-10, help="projection tolerance")
    parser.add_argument("--repeat", type=int, default=5, help="runs; the median is reported")
    parser.add_argument("--solver", type=lambda s: s.split(","),
                        default=["block" if "block" in solvers else default_solver()],
                        help=f"backend(s), comma separated, from {solvers}")
    parser.add_argument("--out", default="data/hexapod_speed.csv", help="CSV file")


def run(args):
    model = hexapod(scenario="driven").build()
    bar = Progress(len(args.solver))
    rows = []
    for solver in args.solver:
        bar.show(f"{model.name}: {solver}, {args.repeat} runs of {args.t_end:g} s")
        rows.append(realtime_factor(model, args.t_end, args.rtol, args.proj_tol, solver,
                                    args.repeat))
        bar.advance(f"{solver}: {rows[-1]['realtime_factor']:.1f}× real time")
    path = write_csv(args.out, [{k: r[k] for k in SPEED_COLUMNS} for r in rows],
                     SPEED_COLUMNS, f"python benchmarks/hexapod_speed.py --t-end {args.t_end:g} "
                     f"--rtol {args.rtol:g} --proj-tol {args.proj_tol:g} --repeat {args.repeat} "
                     f"--solver {','.join(args.solver)}")
    print(f"real-time factor written to {path}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    configure(parser)
    return run(parser.parse_args(argv))
