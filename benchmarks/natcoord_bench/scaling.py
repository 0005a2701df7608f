"""Time per evaluation versus the number of bodies: the O(n) evidence
(docs/method.md#16-linear-solve).

``natcoord bench scaling`` times one evaluation of the accelerations for the
scalable families of docs/benchmarks.md — ``chain(n)``, ``tree(depth)`` (n = 2^depth − 1)
and ``chain(n, loops=4)`` — with every backend in the same run. Each model is
built and its :class:`~natcoord.dynamics.workspace.Workspace` created (and warmed up)
before timing, so the symbolic phase is excluded. Two medians of ``--repeat``
runs are recorded: the numeric phase (``factor`` + ``solve``, ``g, G, γ, f``
already evaluated) and the whole ``nc.accelerations`` call; for the block solver
also ``nc.forward(model, data)`` (``forward_s``: the compiled core's right-hand
side on per-run data, constraints and forces included, the call ``simulate``
evaluates; issue 22's per-body target is on it). A backend is not
run at an n where its call would take longer than ``--max-seconds`` (its
time extrapolated with the growth measured at the last two sizes). The block
solver's floating-point operations per evaluation (factor + solve, counted
from its symbolic structure) are recorded too.

Rows are merged into ``--out`` (rows of the measured families are replaced)
and the figure ``--figure`` is drawn from the whole file: log–log time per
evaluation against n with fitted slopes, and the flop count against n.
"""
from __future__ import annotations

import gc
import os
import platform
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import numpy as np

from natcoord import models
from natcoord.dynamics.workspace import Workspace, accelerations
from natcoord.integrate.data import Data, forward
from natcoord.linalg import available_solvers
from natcoord.linalg.blockldl import block_plan
from natcoord.linalg.symbolic import structure
from natcoord.model.frozen import State
from natcoord.study.records import cpu_name, read_csv, write_csv
from natcoord.util.atomic import locked

FAMILIES = ("chain", "tree", "loops")
LOOPS = 4
DEFAULT_N = (100, 200, 500, 1000, 2000, 5000, 10000, 20000)
COLUMNS = ("family", "n_bodies", "n_rows", "solver", "repeat", "numeric_s", "numeric_min_s",
           "call_s", "call_min_s", "call_us_per_body", "forward_s", "forward_min_s",
           "forward_us_per_body", "block_flops", "fill_blocks", "dropped", "machine",
           "versions", "date")


def configure(parser):
    parser.add_argument("--family", nargs="+", choices=FAMILIES, default=list(FAMILIES),
                        help="model families (loops = chain(n, loops=4))")
    parser.add_argument("--n", nargs="+", type=int, default=list(DEFAULT_N),
                        help="numbers of bodies (trees: the nearest 2^depth − 1)")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per point (median)")
    parser.add_argument("--solvers", nargs="+", default=None,
                        help="backends (default: all available)")
    parser.add_argument("--max-seconds", type=float, default=5.0,
                        help="skip a backend where one call would take longer (extrapolated)")
    parser.add_argument("--out", default="data/scaling.csv", help="CSV file (rows merged)")
    parser.add_argument("--figure", default="paper/figures/scaling.png", help="figure file")


def family_model(family, n):
    """The model of ``family`` with about ``n`` bodies."""
    if family == "tree":
        return models.tree(max(1, round(np.log2(n + 1)))).build()
    return models.chain(n, loops=LOOPS if family == "loops" else 0).build()


def _timed(function, inner):
    start = time.perf_counter()
    for _ in range(inner):
        function()
    return (time.perf_counter() - start) / inner


def measure(model, solver, repeat, sample_seconds=0.02):
    """Median and minimum times [s] of the numeric phase, of the whole call and (block
    solver; else NaN) of ``nc.forward``.

    They are timed alternately (load changes hit them alike); each sample
    averages enough evaluations to last about ``sample_seconds``.
    """
    rng = np.random.default_rng(0)
    state = State(0.0, model.p_reference.copy(), 0.1 * rng.standard_normal(model.n_coords))
    ws = Workspace(model, solver)
    accelerations(model, state, workspace=ws)                  # warm-up
    f, gamma = ws.forces(state.t, state.p, state.v).copy(), ws.gamma.copy()
    data = Data(model, state) if solver == "block" else None

    def numeric():
        ws.factor()
        ws.solve(f, gamma)

    def call():
        accelerations(model, state, workspace=ws)

    def forward_call():
        forward(model, data)

    inner = max(1, int(sample_seconds / _timed(call, 1)))
    numeric_times, call_times, forward_times = [], [], []
    gc.disable()
    try:
        for _ in range(repeat):
            numeric_times.append(_timed(numeric, inner))
            call_times.append(_timed(call, inner))
            if data is not None:
                forward_times.append(_timed(forward_call, inner))
    finally:
        gc.enable()
    forward_times = forward_times or [np.nan]
    return ((float(np.median(numeric_times)), min(numeric_times)),
            (float(np.median(call_times)), min(call_times)),
            (float(np.median(forward_times)), min(forward_times)), ws.dropped.size)


def predicted_time(rows, family, solver, n):
    """Call time at n extrapolated from the last two measured sizes (linear from one)."""
    done = sorted((r["n_bodies"], r["call_s"]) for r in rows
                  if r["family"] == family and r["solver"] == solver)
    if not done:
        return 0.0
    growth = slope(*np.transpose(done[-2:])) if len(done) > 1 else 1.0
    return done[-1][1] * (n / done[-1][0]) ** max(growth, 1.0)


def _versions():
    names = ("numpy", "scipy", "scikit-sparse")
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    return f"python {platform.python_version()}; " + "; ".join(found)


def run(args):
    solvers = args.solvers or available_solvers()
    unknown = set(solvers) - set(available_solvers())
    if unknown:
        raise ValueError(f"unavailable solvers {sorted(unknown)}; "
                         f"available: {available_solvers()}")
    common = dict(machine=f"{cpu_name()} ({os.cpu_count()} cores)",
                  versions=_versions(),
                  date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    rows = []
    for family in args.family:
        for n in sorted(set(args.n)):
            model = family_model(family, n)
            if any(r["family"] == family and r["n_bodies"] == model.n_bodies for r in rows):
                continue                                          # tree depths repeat
            flops = block_plan(model).flops()
            fill = structure(model).n_fill
            for solver in solvers:
                if predicted_time(rows, family, solver, model.n_bodies) > args.max_seconds:
                    continue
                (numeric, numeric_min), (call, call_min), (fwd, fwd_min), dropped = measure(
                    model, solver, args.repeat)
                rows.append(dict(family=family, n_bodies=model.n_bodies, n_rows=model.n_rows,
                                 solver=solver, repeat=args.repeat, numeric_s=numeric,
                                 numeric_min_s=numeric_min, call_s=call, call_min_s=call_min,
                                 call_us_per_body=1e6 * call / model.n_bodies,
                                 forward_s=fwd, forward_min_s=fwd_min,
                                 forward_us_per_body=1e6 * fwd / model.n_bodies,
                                 block_flops=flops, fill_blocks=fill, dropped=dropped,
                                 **common))
                print(f"{family:6s} n={model.n_bodies:6d} {solver:8s} numeric "
                      f"{1e6 * numeric / model.n_bodies:8.2f} µs/body, call "
                      f"{1e6 * call / model.n_bodies:8.2f} µs/body"
                      + (f", nc.forward {1e6 * fwd / model.n_bodies:8.2f} µs/body"
                         if solver == "block" else ""), flush=True)
    out = Path(args.out)
    write_rows(out, rows, replace_families=args.family)
    print(f"rows merged into {out}")
    if args.figure:
        plot_scaling(out, args.figure)
        print(f"figure written to {args.figure}")
    print(summary(read_rows(out)))
    return 0


def read_rows(path):
    """Rows of a scaling CSV (numbers parsed by :func:`natcoord.study.records.read_csv`)."""
    return read_csv(path)


def write_rows(path, rows, replace_families):
    """Write ``rows``, keeping the rows of other families already in ``path``.

    Atomic, under the file's lock; floats exactly (kept rows are written back
    as they were read). Under the ``#`` machine header of every natcoord CSV
    (the machine of the last run); as rows of several runs are merged here,
    each row also names its machine, versions and date in its own columns.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path):                    # read, merge and rewrite: one writer at a time
        kept = []
        if path.exists():
            kept = [r for r in read_rows(path) if r["family"] not in replace_families]
        write_csv(path, kept + rows, COLUMNS, command="natcoord bench scaling (rows of several runs merged)",
                  digits=None, lock=False)


def slope(n, values):
    """Least-squares slope of ``log values`` against ``log n``."""
    return float(np.polyfit(np.log(n), np.log(values), 1)[0])


def _series(rows, family, solver, key):
    sel = sorted((r["n_bodies"], r[key]) for r in rows
                 if r["family"] == family and r["solver"] == solver)
    return np.array([s[0] for s in sel]), np.array([s[1] for s in sel])


def summary(rows):
    """Slopes, µs per body and speed ratios at the n nearest 10 000, as text."""
    lines = []
    solvers = sorted({r["solver"] for r in rows}, key=lambda s: (s != "block", s))
    for family in FAMILIES:
        if not any(r["family"] == family for r in rows):
            continue
        lines.append(f"{family}:")
        n_block, _ = _series(rows, family, "block", "call_s")
        near = n_block[np.argmin(np.abs(np.log(n_block / 1e4)))] if n_block.size else None
        at = {r["solver"]: r for r in rows if r["family"] == family and r["n_bodies"] == near}
        for solver in solvers:
            n, call = _series(rows, family, solver, "call_s")
            if n.size < 2:
                continue
            _, numeric = _series(rows, family, solver, "numeric_s")
            text = (f"  {solver:8s} n {n[0]}–{n[-1]}: slope call {slope(n, call):.3f}, "
                    f"numeric {slope(n, numeric):.3f}")
            if solver in at:
                r = at[solver]
                text += (f"; at n={near}: numeric {1e6 * r['numeric_s'] / near:.2f} µs/body, "
                         f"call {1e6 * r['call_s'] / near:.2f} µs/body")
                if solver == "block" and np.isfinite(r.get("forward_s", np.nan)):
                    text += f", nc.forward {1e6 * r['forward_s'] / near:.2f} µs/body"
                if solver != "block" and "block" in at:
                    text += f", {r['call_s'] / at['block']['call_s']:.1f}× block's call"
            lines.append(text)
    return "\n".join(lines)


def _label(text, n, values):
    return text + (f" (slope {slope(n, values):.2f})" if n.size > 1 else "")


def plot_scaling(csv_path, png_path):
    """Log–log time per evaluation and block flops against n (fitted slopes)."""
    from natcoord.util.optional import pyplot
    plt = pyplot("plot_scaling")

    rows = read_rows(csv_path)
    families = [f for f in FAMILIES if any(r["family"] == f for r in rows)]
    solvers = sorted({r["solver"] for r in rows}, key=lambda s: (s != "block", s))
    colours = dict(zip(solvers, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    titles = dict(chain="chain(n)", tree="tree(depth), n = 2^depth − 1",
                  loops=f"chain(n, loops={LOOPS})")
    fig, axes = plt.subplots(1, len(families) + 1, figsize=(4.2 * (len(families) + 1), 4.2),
                             constrained_layout=True)
    for ax, family in zip(axes, families):
        for solver in solvers:
            n, call = _series(rows, family, solver, "call_s")
            if n.size == 0:
                continue
            ax.loglog(n, call, "o-", color=colours[solver], label=_label(solver, n, call),
                      ms=4)
            if solver == "block":
                _, numeric = _series(rows, family, solver, "numeric_s")
                ax.loglog(n, numeric, "s--", color=colours[solver], ms=3,
                          label=_label("block factor+solve", n, numeric))
                n_fwd, fwd = _series(rows, family, solver, "forward_s")
                known = np.isfinite(fwd)          # rows of runs before the column: NaN
                if known.any():
                    ax.loglog(n_fwd[known], fwd[known], "^:", color=colours[solver], ms=3,
                              label=_label("block nc.forward", n_fwd[known], fwd[known]))
        ax.set(title=titles[family], xlabel="bodies n", ylabel="time per evaluation [s]")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    ax = axes[-1]
    for family in families:
        n, flops = _series(rows, family, solvers[0], "block_flops")
        ax.loglog(n, flops, "o-", ms=4, label=_label(titles[family], n, flops))
    ax.set(title="block LDLᵀ: flops per factor + solve", xlabel="bodies n", ylabel="flops")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    Path(png_path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path, dpi=150)
    plt.close(fig)
