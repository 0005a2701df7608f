"""Runtime versus integration and projection tolerance: the paper's Fig. 5.

``natcoord bench tolerance MODEL`` simulates MODEL on the grid of integration
tolerances ``--rtol`` × projection tolerances ``--proj-tol`` (× ``--solver`` ×
``--projection`` × ``--method``, DOPRI5 or Radau IIA) and writes one CSV row per grid point (``COLUMNS``). The
grid runs on Dask (:func:`natcoord.study.sweep`; ``--scheduler ADDR`` or a
LocalCluster of ``--workers`` single-threaded processes, default one per
core): each grid point is one task whose ``--repeat`` runs are timed one
after the other on one worker, after an untimed warm-up run on that worker;
the counters are those of the (deterministic) runs, the wall time is
reported as median, minimum and maximum, and the row names the host and CPU
that timed it. Runs on other workers execute meanwhile and compete for the
machine: for undisturbed timings use ``--workers 1``, and compare runtimes
only between rows of the same CPU (see :mod:`natcoord.study.sweep`). Accuracy is measured
against a reference run at ``rtol = 1e-12``, ``proj_tol = 1e-12``,
interpolated to the accepted steps of each run: the largest distance of the
model's output point (its scenario's ``output_point``: P3 = (1, −1, 0) on
rod 2 for the 6-bar, the platform centre for the hexapod) and the largest
energy difference.
``--work-precision`` compares instead the linear-solver backends and the
stabilizations (see :mod:`natcoord_bench.precision`).
"""
from __future__ import annotations

from pathlib import Path

from natcoord.integrate.base import METHODS, PROJECTIONS
from natcoord.io.source import add_model_arguments, model_from_arguments
from natcoord.linalg import available_solvers, default_solver
from natcoord.linalg.base import HOLD_TOL
from natcoord.study.records import write_csv
from natcoord.study.tolerance import COLUMNS, parse_tolerances, run_grid

def default_out(model_name, kind):
    """``data/<model>_<kind>.csv`` with the CLI model name as a file name."""
    return Path("data") / f"{model_name.replace('-', '_')}_{kind}.csv"


def describe(args, proj_tols):
    """The command line equivalent to ``args``, for the CSV header."""
    def tols(values):
        return ",".join(f"{v:g}" for v in values)
    words = ["natcoord bench tolerance", args.model]
    words += [f"--scenario {args.scenario}"] if args.scenario else []
    words += [f"--param {p}" for p in args.param]
    words += [f"--rtol {tols(args.rtol)} --proj-tol {tols(proj_tols)}",
              f"--repeat {args.repeat} --solver {','.join(args.solver)}"]
    words += [f"--method {','.join(args.method)}"] if args.method != ["dopri5"] else []
    words += [f"--t-end {args.t_end:g}"] if args.t_end is not None else []
    words += [f"--hold-tol {args.hold_tol:g}"] if args.hold_tol != HOLD_TOL else []
    words += [f"--workers {args.workers}"] if args.workers else []
    words += ["--work-precision"] if args.work_precision else \
        [f"--projection {','.join(args.projection)}"]
    return " ".join(words)


def configure(parser):
    add_model_arguments(parser)
    solvers = available_solvers()
    parser.add_argument("--rtol", type=parse_tolerances, default="1e-3:1e-10",
                        help="integration tolerances: 'a:b' one per decade, or a comma list "
                             "(default: 1e-3:1e-10)")
    parser.add_argument("--proj-tol", type=parse_tolerances,
                        help="projection tolerances (default: 1e-4,1e-6,1e-8,1e-10,1e-12; "
                             "with --work-precision: 1e-10)")
    parser.add_argument("--t-end", type=float, help="end time [s] (default: the scenario's)")
    parser.add_argument("--repeat", type=int, default=5,
                        help="runs per grid point; the wall time is their median (default 5)")
    parser.add_argument("--solver", type=lambda s: s.split(","),
                        default=["block" if "block" in solvers else default_solver()],
                        help=f"backend(s), comma separated, from {solvers}")
    parser.add_argument("--projection", type=lambda s: s.split(","), default=[PROJECTIONS[0]],
                        help=f"stabilization(s), comma separated, from {list(PROJECTIONS)}")
    parser.add_argument("--method", type=lambda s: s.split(","), default=["dopri5"],
                        help=f"integration method(s), comma separated, from {list(METHODS)}")
    parser.add_argument("--hold-tol", type=float, default=HOLD_TOL,
                        help=f"hysteresis of constraint partitioning: a dropped row stays "
                             f"dropped while its relative pivot is below this (default "
                             f"{HOLD_TOL:g}; 0 switches the hysteresis off, as in the paper)")
    parser.add_argument("--work-precision", action="store_true",
                        help="compare every backend (position+velocity projection) and every "
                             "stabilization (first --solver) instead of the proj-tol grid")
    parser.add_argument("--scheduler", metavar="ADDR",
                        help="address of a running Dask scheduler (default: a LocalCluster)")
    parser.add_argument("--workers", type=int,
                        help="workers of the LocalCluster (default: one per core; 1 for "
                             "undisturbed timings)")
    parser.add_argument("--out", help="CSV file (default: data/<model>_tolerance.csv, or "
                                      "data/<model>_precision.csv with --work-precision)")


def run(args):
    from .precision import comparison
    model = model_from_arguments(args)
    for name in args.solver:
        if name not in available_solvers():
            raise ValueError(f"solver {name!r} is unavailable; choose from {available_solvers()}")
    for name in args.projection:
        if name not in PROJECTIONS:
            raise ValueError(f"projection {name!r} unknown; choose from {list(PROJECTIONS)}")
    for name in args.method:
        if name not in METHODS:
            raise ValueError(f"--method {name!r} unknown; choose from {list(METHODS)}")
    if args.work_precision:
        combos = comparison(args.solver[0])
        proj_tols = args.proj_tol or [1e-10]
    else:
        combos = [(s, p) for p in args.projection for s in args.solver]
        proj_tols = args.proj_tol or parse_tolerances("1e-4,1e-6,1e-8,1e-10,1e-12")
    rows = run_grid(model, args.rtol, proj_tols, combos, args.t_end, args.repeat,
                    hold_tol=args.hold_tol, client=args.scheduler, workers=args.workers,
                    methods=args.method)
    out = args.out or default_out(args.model, "precision" if args.work_precision else "tolerance")
    path = write_csv(out, rows, COLUMNS, describe(args, proj_tols))
    print(f"{len(rows)} grid points written to {path}")
    return 0
