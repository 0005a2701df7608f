"""``natcoord sweep MODEL --param KEY=VALUES ...``: parameter and Monte Carlo studies on Dask.

Each ``--param`` (and ``--rtol``, ``--proj-tol``, ``--t-end``, ``--solver``,
``--projection``) gives a keyword of the model's factory or of
``simulate`` and its values; the study runs their Cartesian product (or,
with ``--samples N``, N samples of their distributions) on a local Dask
cluster or on ``--scheduler ADDR``, one :func:`natcoord.simulate` per point
reduced to one row of measures, appended to ``--out`` as the runs finish.
Started again with the same ``--out``, a study runs only the points whose
rows are not in the file yet (``--retry-failed``: and the failed ones, whose
rows the new ones replace). A row's key hashes the point, the content of the
model it builds and the run settings: rows of a model edited since are run
again and replaced, never returned. A grid without points (``--param
mass=1:2:0``) is refused (exit status 2); exit status 3 when the CSV cannot
be written (another writer kept its lock, the disk is full).

Timings: every run is timed on its worker after a warm-up run, but runs on
the other workers execute at the same time and compete for cores, memory
bandwidth and caches. Compare runtimes only between rows of the same CPU,
use ``--workers 1`` for undisturbed timings, ``--repeat`` runs, and read the
counters (steps, RHS evaluations, factorizations), which are exact.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from .. import models
from ..integrate.simulate import PROJECTIONS
from ..linalg import available_solvers
from .grid import check_points
from .log import NotWritten, check_out
from .records import parse_value
from .sweep import sweep
from .tasks import DEFAULT_MEASURES, MEASURES

#: exit status when the study's CSV cannot be written (``natcoord.cli.NOT_WRITTEN``)
NOT_WRITTEN = 3


def parse_values(text, sample=False):
    """Values of ``--param KEY=TEXT``.

    Grid: ``a:b:n`` n values linspace, ``a:b:n:log`` logspace, ``x,y,z`` a
    list, ``x`` one value. Monte Carlo (``sample=True``) returns a function
    ``rng -> value``: ``a:b`` uniform, ``a:b:log`` log-uniform, ``m~s``
    normal, ``x,y,z`` a uniform choice, ``x`` fixed.
    """
    parts = text.split(":")
    if sample:
        if "~" in text:
            mean, sd = _bounds(text.split("~"), text)
            if sd < 0:
                raise ValueError(f"mean~sd needs sd >= 0, got {text!r}")
            return lambda rng: float(rng.normal(mean, sd))
        if len(parts) in (2, 3) and (len(parts) == 2 or parts[2] == "log"):
            a, b = _bounds(parts[:2], text, log=len(parts) == 3)
            if len(parts) == 3:
                return lambda rng: float(np.exp(rng.uniform(np.log(a), np.log(b))))
            return lambda rng: float(rng.uniform(a, b))
        if len(parts) > 1:
            raise ValueError(f"with --samples give a:b (uniform), a:b:log, mean~sd, a comma "
                             f"list or one value, not {text!r}")
        choices = [parse_value(x) for x in text.split(",")]
        return lambda rng: choices[int(rng.integers(len(choices)))] if len(choices) > 1 \
            else choices[0]
    if len(parts) in (3, 4):
        if len(parts) == 4 and parts[3] != "log":
            raise ValueError(f"a:b:n:log expected, got {text!r}")
        a, b = _bounds(parts[:2], text, log=len(parts) == 4)
        n = int(parts[2])
        if n < 1:
            raise ValueError(f"{text!r} gives {n} values; a:b:n needs n ≥ 1, or the study "
                             f"would run nothing")
        check_points(n, f"{text!r}")
        if len(parts) == 4:
            values = np.logspace(np.log10(a), np.log10(b), n)
        else:
            values = np.linspace(a, b, n)
        return [float(f"{v:.12g}") for v in values]
    if len(parts) != 1:
        raise ValueError(f"give a:b:n, a:b:n:log, a comma list or one value, not {text!r}")
    return [parse_value(x) for x in text.split(",")]


def _bounds(texts, text, log=False):
    """The numbers of a range ``a:b`` (or ``mean~sd``) as floats: finite, and positive
    for a logarithmic range (``1:inf:3`` is not a grid: linspace makes it nan, inf, inf)."""
    values = [float(x) for x in texts]
    if not all(np.isfinite(values)):
        raise ValueError(f"the numbers of {text!r} must be finite")
    if log and min(values) <= 0:
        raise ValueError(f"a logarithmic range needs positive bounds, got {text!r}")
    return values


class Sampler:
    """``rng -> dict`` from ``{name: rng -> value}`` (picklable, ordered)."""

    def __init__(self, draws):
        self.draws = draws

    def __call__(self, rng):
        return {k: f(rng) for k, f in self.draws.items()}


def configure(parser):
    """The arguments of ``natcoord sweep``."""
    parser.add_argument("model", choices=sorted(models.REGISTRY),
                        help="benchmark mechanism (see docs/benchmarks.md)")
    parser.add_argument("--scenario", help="scenario of the model (e.g. hexapod: passive|driven)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUES",
                        help="a factory or simulate keyword and its values: a:b:n (linspace), "
                             "a:b:n:log (logspace), x,y,z, x; with --samples: a:b (uniform), "
                             "a:b:log, mean~sd (normal), x,y,z (choice), x")
    for flag, what in (("--rtol", "integration tolerances"),
                       ("--proj-tol", "projection tolerances"),
                       ("--t-end", "end times [s] (default: the scenario's)")):
        parser.add_argument(flag, metavar="VALUES", help=f"{what}, same forms as --param")
    parser.add_argument("--solver", help=f"backend(s), comma separated, from "
                                         f"{available_solvers()}")
    parser.add_argument("--projection", help=f"stabilization(s), comma separated, from "
                                             f"{list(PROJECTIONS)}")
    parser.add_argument("--measures", default=",".join(DEFAULT_MEASURES),
                        help=f"measure groups, comma separated, from {list(MEASURES)} "
                             f"(default: all)")
    parser.add_argument("--reference", default="1e-12,1e-12", metavar="RTOL,PROJ_TOL",
                        help="tolerances of the reference run of the error measures, or "
                             "'none' (errors NaN) (default 1e-12,1e-12; docs/cli.md: a "
                             "mechanism through singular poses, as the four-bars, needs "
                             "looser ones)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per point; the wall time is their median (default 1)")
    parser.add_argument("--samples", type=int, metavar="N",
                        help="Monte Carlo: N samples of the --param distributions instead "
                             "of their grid")
    parser.add_argument("--seed", type=int, help="seed of the Monte Carlo samples")
    parser.add_argument("--scheduler", metavar="ADDR",
                        help="address of a running Dask scheduler (default: start a "
                             "LocalCluster on 127.0.0.1)")
    parser.add_argument("--workers", type=int,
                        help="workers of the LocalCluster (default: one per core)")
    parser.add_argument("--batch", type=int, metavar="N",
                        help="grid points per Dask task (default: about eight tasks per "
                             "worker; 1: one task per run)")
    parser.add_argument("--retry-failed", action="store_true",
                        help="when resuming, run again the rows that failed")
    parser.add_argument("--out", help="CSV file, appended and resumed (default: "
                                      "data/<model>_sweep.csv)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def describe(args):
    """The command line of ``args`` (the CSV header's command)."""
    words = ["natcoord sweep", args.model]
    words += [f"--scenario {args.scenario}"] if args.scenario else []
    words += [f"--param {p}" for p in args.param]
    for flag in ("rtol", "proj_tol", "t_end", "solver", "projection", "samples", "seed"):
        value = getattr(args, flag)
        if value is not None:
            words.append(f"--{flag.replace('_', '-')} {value}")
    words += [f"--measures {args.measures}", f"--reference {args.reference}",
              f"--repeat {args.repeat}"]
    return " ".join(words)


def reference_options(text):
    """``--reference``'s ``RTOL,PROJ_TOL`` as the reference run's options, None for
    ``none``; ``ValueError`` naming the flag otherwise."""
    if text.strip().lower() == "none":
        return None
    try:
        rtol, proj_tol = (float(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"--reference {text}: give RTOL,PROJ_TOL (two numbers, e.g. "
                         f"1e-10,1e-10) or none") from None
    if not (0 < rtol < 1 and 0 < proj_tol < 1):
        raise ValueError(f"--reference {text}: both tolerances must lie in (0, 1)")
    return {"rtol": rtol, "proj_tol": proj_tol}


def run(args):
    """Run ``natcoord sweep``: 0 when the study ran (failed runs are rows of it), 2 for
    bad input (``ValueError``, reported by the CLI), 3 when the CSV cannot be written."""
    specs = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--param needs KEY=VALUES, got {item!r}")
        if key in specs:        # the last one winning silently would run another study
            raise ValueError(f"--param {key} is given twice ({specs[key][0]} and --param "
                             f"{item}); give all its values in one --param")
        specs[key] = (f"--param {item}", value)
    for flag in ("rtol", "proj_tol", "t_end", "solver", "projection"):
        if getattr(args, flag) is not None:
            if flag in specs:
                raise ValueError(f"{specs[flag][0]} and --{flag.replace('_', '-')} both give "
                                 f"{flag}; give it once")
            specs[flag] = (f"--{flag.replace('_', '-')} {getattr(args, flag)}",
                           getattr(args, flag))
    if args.samples is not None and args.samples < 1:
        raise ValueError(f"--samples {args.samples}: give a number of samples >= 1 (leave "
                         f"--samples out for a grid)")
    reference = reference_options(args.reference)
    fixed = {"scenario": args.scenario} if args.scenario else {}
    measures = tuple(m for m in args.measures.split(",") if m)
    out = check_out(args.out or Path("data") / f"{args.model.replace('-', '_')}_sweep.csv",
                    "--out")
    values = {}
    for key, (given, text) in specs.items():
        try:
            values[key] = parse_values(text, sample=bool(args.samples))
        except ValueError as err:
            raise ValueError(f"{given}: {err}") from None
    grid = Sampler(values) if args.samples else values
    try:
        table = sweep(args.model, grid, fixed, measures=measures, client=args.scheduler,
                      out=out, seed=args.seed, n_samples=args.samples, reference=reference,
                      repeat=args.repeat,
                      workers=args.workers, progress=not args.quiet, command=describe(args),
                      retry_failed=args.retry_failed, batch=args.batch)
    except NotWritten as err:        # locked past the wait by another writer, disk full, ...
        print(f"natcoord: --out {out}: rows not written: {err.reason}", file=sys.stderr)
        return NOT_WRITTEN
    success = np.asarray(table["success"], bool)
    print(f"{success.size} runs ({int((~success).sum())} failed) in {out}")
    if any("reference run failed" in str(m) for m in table["message"]):
        print(f"natcoord: the reference run failed, so the error measures are NaN (the "
              f"rows' message says why); --reference RTOL,PROJ_TOL (now {args.reference}) "
              f"sets its tolerances", file=sys.stderr)
    return 0
