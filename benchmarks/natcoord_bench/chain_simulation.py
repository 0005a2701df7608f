"""Whole-simulation benchmark: chain(n) for 1 s, worst joint-point error vs wall time.

The error is the largest distance, over all joint points (the rods' top
points) and output times, from a reference run at rtol = 1e-12. The worst
point, not the tip: the tip nearly free-falls and is easy to get right.
Writes one CSV row per rtol (wall time: median of ``--repeat`` runs).
"""
from __future__ import annotations

import sys

import numpy as np

from natcoord import models
from natcoord.integrate.simulate import simulate
from natcoord.study.records import write_csv

COLUMNS = ("n", "t_end", "rtol", "solver", "wall_median_s", "wall_min_s", "steps", "rejected",
           "rhs", "factorizations", "worst_joint_error_m")


def joint_points(sol):
    """Body origins = joint points of the chain, (k, n, 3)."""
    return sol.p.reshape(sol.t.size, -1, 4, 3)[:, :, 0, :]


def configure(parser):
    parser.add_argument("--n", type=int, default=512, help="number of rods")
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--rtol", type=float, nargs="+", default=[1e-5, 1e-6, 1e-7])
    parser.add_argument("--repeat", type=int, default=3, help="runs per rtol (median)")
    parser.add_argument("--solver", default=None, help="backend (default: block)")
    parser.add_argument("--out", default="data/chain_simulation.csv")


def run(args):
    model = models.chain(args.n).build()
    t_eval = np.linspace(0.0, args.t_end, 51)
    print(f"reference run of chain({args.n}) at rtol=1e-12 ...", file=sys.stderr)
    reference = joint_points(simulate(model, args.t_end, rtol=1e-12, t_eval=t_eval,
                                      solver=args.solver))
    rows = []
    for rtol in args.rtol:
        runs = [simulate(model, args.t_end, rtol=rtol, t_eval=t_eval, solver=args.solver)
                for _ in range(args.repeat)]
        walls = [sol.stats["wall_time"] for sol in runs]
        stats = runs[-1].stats
        error = np.linalg.norm(joint_points(runs[-1]) - reference, axis=-1).max()
        rows.append(dict(n=args.n, t_end=args.t_end, rtol=rtol, solver=stats["solver"],
                         wall_median_s=float(np.median(walls)), wall_min_s=min(walls),
                         worst_joint_error_m=float(error),
                         **{k: stats[k] for k in COLUMNS[6:10]}))
        print(f"  rtol={rtol:g}: {rows[-1]['wall_median_s']:.3f} s, worst joint-point error "
              f"{error:.2e} m, {stats['steps']} steps", file=sys.stderr)
    path = write_csv(args.out, rows, COLUMNS,
                     f"natcoord bench chain --n {args.n} --t-end {args.t_end:g} --rtol "
                     f"{' '.join(f'{r:g}' for r in args.rtol)} --repeat {args.repeat}")
    print(f"wrote {path}")
