"""Throughput of ``nc.sweep`` on Dask: simulations per second with 1 and 2 workers.

``n`` six-bar runs (10 s each, ``rtol = 1e-6``; rod masses 1 kg + i·1e-4 kg
so that every run is a distinct grid point) are executed three ways, all
through :func:`natcoord.study.tasks.run_task`, the function a sweep's tasks call:

* ``loop``: a plain ``for`` loop in this process — the baseline;
* ``dask``, 1 worker and 2 workers: ``nc.sweep`` on a ``LocalCluster`` of
  single-threaded worker processes (started, and warmed up with one run per
  worker, before the clock starts; its start-up time is its own column),
  once with one run per Dask task (``batch = 1``) and once with the sweep's
  default batching (about eight tasks per worker).

Reported per mode: wall time, throughput (runs/s), speed-up over the loop,
parallel efficiency ``T_1 worker / (w · T_w workers)`` (same batching), and
the overhead per run ``(T_dask − T_loop) / n`` on 1 worker (scheduling,
serialization and the per-row bookkeeping of the study). ``identical``
says whether every measured number of the sweep equals the loop's bit for
bit (the determinism of docs/method.md does not depend on the worker).
"""
from __future__ import annotations

import os
import time

import numpy as np

from natcoord.study.cluster import close_client, local_client
from natcoord.study.records import Progress, text_table, write_csv
from natcoord.study.sweep import sweep
from natcoord.study.tasks import columns_of, run_task

COLUMNS = ("mode", "workers", "batch", "runs", "wall_s", "runs_per_s", "speedup", "efficiency",
           "overhead_per_run_ms", "cluster_start_s", "identical")
#: what each run reduces to: the end state and the work counters (exact numbers)
MEASURES = ("end", "stats")


def grid(n):
    """``n`` distinct six-bar runs: rod masses 1 kg + i·1e-4 kg."""
    return [{"mass": round(1.0 + 1e-4 * i, 6)} for i in range(n)]


def loop(points, t_end, rtol):
    """Rows of a plain loop over :func:`run_task` and its wall time."""
    run_task("six-bar", {"t_end": 0.05, "rtol": rtol})       # compile outside the clock
    start = time.perf_counter()
    rows = [run_task("six-bar", dict(p, t_end=t_end, rtol=rtol), MEASURES) for p in points]
    return rows, time.perf_counter() - start


def on_cluster(points, t_end, rtol, workers, batch):
    """Rows of ``nc.sweep`` on a fresh ``workers``-process LocalCluster with ``batch`` runs
    per task (None: the sweep's default), its wall time and the cluster's start-up time
    (start and one warm-up run per worker, untimed)."""
    start = time.perf_counter()
    client = local_client(workers)
    try:
        client.wait_for_workers(workers)
        client.run(run_task, "six-bar", {"t_end": 0.05, "rtol": rtol})
        started = time.perf_counter()
        table = sweep("six-bar", points, {"t_end": t_end, "rtol": rtol}, MEASURES,
                            client=client, reference=None, warmup=False, batch=batch)
        wall = time.perf_counter() - started
    finally:
        close_client(client)
    return table, wall, started - start


def _same(table, rows):
    """Every measured column of the sweep equal to the loop's, bit for bit."""
    columns = columns_of(MEASURES)
    return all(np.array_equal(np.asarray(table[c], float), [r[c] for r in rows])
               for c in columns)


def run(n=200, t_end=10.0, rtol=1e-6, workers=(1, 2), out="data/throughput.csv",
        progress=True):
    """Measure, print and write the table (``COLUMNS``); returns the rows."""
    points = grid(n)
    bar = Progress(1 + 2 * len(workers), progress)
    bar.show("plain loop")
    rows_loop, t_loop = loop(points, t_end, rtol)
    bar.done += 1
    table = [dict(mode="loop", workers=1, batch="", runs=n, wall_s=t_loop, runs_per_s=n / t_loop,
                  speedup=1.0, efficiency=1.0, overhead_per_run_ms=0.0, cluster_start_s=0.0,
                  identical=True)]
    for batch in (1, None):
        t_one = None
        for w in workers:
            bar.show(f"dask, {w} worker(s), batch {batch or 'auto'}")
            result, wall, startup = on_cluster(points, t_end, rtol, w, batch)
            bar.done += 1
            t_one = wall if w == 1 else t_one
            table.append(dict(mode="dask", workers=w, batch=batch or "auto", runs=n,
                              wall_s=wall, runs_per_s=n / wall,
                              speedup=t_loop / wall,
                              efficiency=np.nan if t_one is None else t_one / (w * wall),
                              overhead_per_run_ms=(1e3 * (wall - t_loop) / n if w == 1
                                                    else np.nan),
                              cluster_start_s=startup, identical=_same(result, rows_loop)))
    bar.show("done")
    command = (f"python benchmarks/throughput.py --runs {n} --t-end {t_end:g} --rtol {rtol:g} "
               f"--workers {' '.join(map(str, workers))}")
    if out:
        write_csv(out, table, COLUMNS, command)
    print(summary(table))
    return table


def summary(table):
    return text_table(table, [("mode", "mode", ""), ("workers", "workers", ""),
                              ("batch", "batch", ""), ("wall [s]", "wall_s", ".2f"),
                              ("runs/s", "runs_per_s", ".1f"), ("speed-up", "speedup", ".2f"),
                              ("efficiency", "efficiency", ".2f"),
                              ("overhead/run [ms]", "overhead_per_run_ms", ".2f"),
                              ("identical", "identical", "")]) \
        + f"\n({os.cpu_count()} cores on this machine)"


def configure(parser):
    parser.add_argument("--runs", type=int, default=200, help="number of six-bar runs")
    parser.add_argument("--t-end", type=float, default=10.0, help="simulated time per run [s]")
    parser.add_argument("--rtol", type=float, default=1e-6, help="integration tolerance")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                        help="cluster sizes to measure (the first should be 1)")
    parser.add_argument("--out", default="data/throughput.csv", help="CSV file ('' for none)")
