"""Parameter studies and Monte Carlo on Dask: ``nc.sweep`` and ``natcoord sweep``.

``sweep(model, grid)`` runs one :func:`natcoord.simulate` per grid point as a
Dask task and reduces each run, on the worker, to one row of measures::

    table = nc.sweep("six-bar", {"section": [0.05, 0.1], "rtol": [1e-6, 1e-8]},
                     simulate_kwargs={"t_end": 2.0}, out="study.csv")

* ``model``: a registry name (``nc.models.REGISTRY``), a factory (a callable
  returning a ``Mechanism`` or ``Model``; a function defined in a notebook is
  shipped by value) or a built ``Model`` (pickled once to every worker).
  Each task builds its model on the worker from the factory and its
  parameters: nothing heavy travels.
* ``grid``: a dict of lists (their Cartesian product), a list of dicts, or a
  sampler ``rng -> dict`` with ``n_samples`` and ``seed`` (Monte Carlo: sample
  ``i`` draws from its own generator, ``SeedSequence(seed).spawn(...)[i]``, so
  a seed reproduces every sample, whichever worker runs it and however many
  samples are asked for). Parameters that are keywords of ``simulate``
  (``t_end``, ``rtol``, ``proj_tol``, ``solver``, ``projection``, ...) go to
  ``simulate``, the others to the factory.
* ``measures`` (groups of columns, ``MEASURES``): ``end`` state of the
  model's output point (``model.scenario["output_point"]``), ``error`` of the
  output point and the energy against a reference run (``rtol = proj_tol =
  1e-12``; one per distinct set of model parameters and ``t_end``, itself a
  task on the workers, shipped to the runs that need it), ``drift`` (energy
  drift and residuals), ``stats`` (steps, rejected steps, RHS evaluations,
  ...), ``time`` (wall time and the worker's host and CPU); or a dict
  ``name -> f(solution) -> number`` of your own.
* A failed run (``IntegrationError``, a bad parameter, any exception in the
  task, a worker that died) is a row with ``success = False`` and its
  ``message``: the study is never lost.
* ``out="study.csv"``: rows are appended as they finish, under the machine
  header the other experiments write, each with its ``key``: a hash of the
  point (model, parameters, sample), of the **content of the model** it
  builds (bodies, masses, inertias, geometry, joints, forces, gravity,
  scenario: :mod:`natcoord.study.keys`) and of the run settings. Started
  again, the study reuses the rows whose key is in the file (resume after
  an interruption or a crash) and runs the others: after a factory is
  edited (gravity 9.81 → 1.62), the rows of its old model are run again and
  replaced, not returned. One row per key: a failed row run again
  (``retry_failed``) replaces the old one; studies writing one file at once
  take turns under its lock and never append a key twice. With pyarrow
  installed the final table is also written as ``study.parquet``.
* An empty grid (a parameter without values, an empty list, no samples) is
  refused with a ``ValueError`` naming it.
* The result is a pandas ``DataFrame`` (a NumPy structured array without
  pandas), one row per grid point in grid order.
* ``client``: a ``dask.distributed.Client``, or a scheduler address; without
  it a ``LocalCluster`` is started for the study (one single-threaded worker
  process per core, on the loopback interface only) and its dashboard link is
  printed.

Timing studies need care. Every run is timed on its worker, one run at a
time per single-threaded worker (``repeat`` runs give the median, minimum
and maximum), after a short warm-up run per worker so that first-touch
costs (imports, symbolic phases, caches) are not counted; each row records the host and CPU it ran on.
But runs on the other workers execute at the same time: on a shared or
oversubscribed machine they compete for cores, memory bandwidth, caches and
turbo headroom, so a run's wall time depends on what its neighbours do, and
on a heterogeneous cluster rows timed on different CPUs are not comparable.
Compare runtimes only between rows of the same CPU, use one worker per
physical core at most (``--workers 1`` gives undisturbed timings), repeat,
and read the counters (steps, RHS evaluations, factorizations), which are
exact and machine independent, alongside the seconds.
"""
from __future__ import annotations

import math
import sys
import uuid
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from ..integrate.simulate import PROJECTIONS
from ..util.atomic import atomic_path
from ..util.checks import integer
from .cluster import check_workers, close_client, connected, local_client
from .grid import check_factory, expand, is_model, is_scalar, model_name, plain, split
from .keys import Contents, run_settings, task_key
from .log import TEXT, StudyLog
from .records import ThrottledProgress, as_table, format_cell, parse_cell, round_trip
from .tasks import (DEFAULT_MEASURES, REFERENCE, batch_size, columns_of, measure_spec,
                    reference_task, run_batch, validate_batch)

#: ``local_client``/``close_client`` are imported from here too (notebooks/monte_carlo.ipynb)
__all__ = ["sweep", "local_client", "close_client"]


def sweep(model, grid=None, simulate_kwargs=None, measures=DEFAULT_MEASURES, client=None,
          out=None, seed=None, n_samples=None, reference=REFERENCE, repeat=1, warmup=None,
          workers=None, progress=False, command=None, retry_failed=False, batch=None):
    """Run a parameter study or a Monte Carlo study on Dask; one row per run.

    ``model``: registry name, factory or built ``Model``; ``grid``: dict of
    lists (Cartesian product), list of dicts, or a sampler ``rng -> dict``
    (with ``n_samples``; ``seed`` makes it reproducible); ``simulate_kwargs``:
    common keywords (of ``simulate`` or of the factory) of every run;
    ``measures``: groups of ``MEASURES`` and/or a dict ``name -> f(solution)``;
    ``reference``: options of the reference run of the ``error`` measures
    (``None``: no reference, errors NaN); ``repeat``: runs per point (the
    wall time is their median); ``warmup``: one short untimed run per worker
    process first (default: when ``time`` is measured); ``client``: Client,
    scheduler address or None (a LocalCluster of ``workers`` processes);
    ``out``: CSV appended as rows finish, resumed when it exists: a row is
    reused when its key (point, model content, run settings) is asked for
    again, and rows of an edited model are run again and replaced; rows with
    ``success = False`` are run again (and replaced) only with ``retry_failed``;
    ``progress``: progress bar on stderr; ``batch``: grid points per Dask task
    (default: about eight tasks per worker thread; 1 gives one task per run).
    Returns a pandas DataFrame (or a NumPy structured array) in grid order.
    See the module docstring.
    """
    groups, custom = measure_spec(measures)
    if batch is not None:
        validate_batch(batch)
    # 0 or fewer runs per point, or workers, was taken for 1 and the default silently
    integer("repeat", repeat, 1)
    if workers is not None:
        integer("workers", workers, 1)
    monte_carlo = callable(grid)
    if monte_carlo and seed is None:
        seed = np.random.SeedSequence().entropy
        print(f"natcoord: Monte Carlo seed {seed} (pass seed= to reproduce)", file=sys.stderr)
    common = plain(dict(simulate_kwargs or {}))
    expanded = [(sample, {**common, **params}) for sample, params in expand(grid, n_samples, seed)]
    check_factory(model, {k for _, p in expanded for k in split(p)[0]})
    for _, p in expanded:
        if p.get("projection", PROJECTIONS[0]) not in PROJECTIONS:
            raise ValueError(f"projection {p['projection']!r} unknown; choose from "
                             f"{list(PROJECTIONS)}")
    contents, settings = Contents(model), run_settings(groups, custom, reference, repeat)

    def keyed(sample, params, content):
        return task_key(model, params, sample, content, settings)

    # a point's id hashes what it asks for; its row's key also the content of its model,
    # which the task computes where it builds the model (natcoord.study.keys)
    points = [(keyed(sample, params, None), sample, params) for sample, params in expanded]
    pnames = list(dict.fromkeys(k for _, _, p in points for k, v in p.items()
                                if is_scalar(v)))
    columns = (["key", "model"] + (["sample"] if monte_carlo else []) + pnames
               + ["success", "message"] + columns_of(measures))
    name = model_name(model)
    if warmup is None:
        warmup = "time" in groups
    command = command or f"nc.sweep({name!r}, {len(points)} points)"

    def label(key, sample, params):
        row = {"key": key, "model": name, **({"sample": sample} if monte_carlo else {})}
        row.update({k: v for k, v in params.items() if is_scalar(v)})
        return row

    log = StudyLog(out, columns, command) if out is not None else None
    identity = _identity(columns)
    stored = {identity(row) for row in log.rows.values()} if log else set()
    # the keys known before the run: those of a built Model (one content) and of the
    # points a stored row may answer; the others come with their rows
    keys = {pid: keyed(sample, params, contents(split(params)[0]))
            for pid, sample, params in points
            if is_model(model) or identity(label(None, sample, params)) in stored}
    done, replaces, known = {}, None, set(keys.values())
    if log:
        done = {k: r for k, r in log.rows.items() if k in known
                and (not retry_failed or r.get("success") is True)}
        replaces = _replacements([(keys[pid], sample, params) for pid, sample, params in points
                                  if pid in keys], label, identity)
        stale = sum(k not in known and replaces(r) is not None for k, r in log.rows.items())
        if stale:
            print(f"natcoord: {log.path}: {stale} rows were computed with another model or "
                  f"other settings than this study's (a factory edited since?): their points "
                  f"run again and the new rows replace them", file=sys.stderr)
    pending = [pt for pt in points if keys.get(pt[0]) not in done]
    pending = list({pt[0]: pt for pt in pending}.values())      # duplicate points run once
    if log and len(pending) < len(points):
        print(f"natcoord: resuming {log.path}: {len(points) - len(pending)} of {len(points)} "
              f"runs already done", file=sys.stderr)

    def key_of(pid, sample, params, content):
        """The row key of a point run now, from the content its task hashed."""
        if pid not in keys:
            fparams = split(params)[0]
            keys[pid] = keyed(sample, params, contents(fparams) if content is None else content)
        return keys[pid]

    def label_row(pid, sample, params, result):
        key = key_of(pid, sample, params, result.pop("content", None))
        return round_trip({**label(key, sample, params), **result}, text=TEXT)

    try:
        if pending:
            with connected(client, workers, verbose=client is None or progress) as c:
                check_workers(c)
                _submit_all(c, model, pending, measures, groups, reference, repeat, warmup,
                            progress, done, log, label_row, batch)
    finally:
        if log:
            try:
                log.compact(replaces)
            except OSError as err:      # the rows are all in the file, some twice: read() copes
                print(f"natcoord: {log.path}: not compacted ({err})", file=sys.stderr)
    rows = [dict(done[keys[pid]], sample=sample) if monte_carlo else done[keys[pid]]
            for pid, sample, _ in points]
    table = as_table([{c: r.get(c, math.nan) for c in columns} for r in rows], columns)
    if out is not None and hasattr(table, "to_parquet") and find_spec("pyarrow"):
        with atomic_path(Path(out).with_suffix(".parquet")) as temporary:
            table.to_parquet(temporary, index=False)
    return table


def _identity(columns):
    """``row -> identity``: a row's point as the file stores it (model name, sample and
    parameter columns), whatever its key."""
    id_columns = columns[1:columns.index("success")]

    def identity(row):
        return tuple(format_cell(parse_cell(format_cell(row.get(c)))) for c in id_columns)
    return identity


def _replacements(points, label, identity):
    """``row -> key``: the key of this study's point (``(key, sample, params)``) that
    supersedes a stored row computed for the same point (:func:`_identity`) with
    another key (another model content or other settings); ``None`` for rows of
    other points. Points told apart only by parameters that are not columns (lists)
    supersede nothing."""
    found = {}
    for key, sample, params in points:
        found.setdefault(identity(label(key, sample, params)), set()).add(key)
    unique = {ident: next(iter(keys)) for ident, keys in found.items() if len(keys) == 1}

    def replaces(row):
        key = unique.get(identity(row))
        return key if key is not None and key != row.get("key") else None
    return replaces


def _submit_all(client, model, pending, measures, groups, reference, repeat, warmup,
                progress, done, log, label_row, batch):
    from dask.distributed import as_completed
    token = uuid.uuid4().hex[:8]
    spec = model
    if is_model(model):                                # a built Model
        spec = client.scatter(model, broadcast=True, hash=False)
    refs, items = {}, []
    for pid, sample, params in pending:
        ref = None
        if "error" in groups and reference is not None:
            fparams, sim = split(params)
            rkey = task_key(model, {"model": fparams, "t_end": sim.get("t_end")})
            if rkey not in refs:
                refs[rkey] = client.submit(reference_task, spec, fparams, sim.get("t_end"),
                                           dict(reference), key=f"nc-reference-{rkey}-{token}",
                                           priority=10)
            ref = refs[rkey]
        items.append(((pid, sample, params), ref))
    size = batch_size(batch, len(items), client)
    futures = {}
    for start in range(0, len(items), size):
        chunk = items[start:start + size]
        fut = client.submit(run_batch, spec, [(point[2], ref) for point, ref in chunk],
                            measures, repeat, warmup, not is_model(model),
                            key=f"nc-run-{chunk[0][0][0]}-{len(chunk)}-{token}")
        futures[fut] = [point for point, _ in chunk]
    bar = ThrottledProgress(len(items), progress)
    failures = 0
    try:
        for fut in as_completed(list(futures), loop=client.loop):
            points = futures.pop(fut)
            try:
                results = fut.result()
            except Exception as err:                          # noqa: BLE001 -- worker died
                results = [{"success": False, "message": f"{type(err).__name__}: {err}"}] \
                    * len(points)
            fut.release()
            rows = [label_row(pid, sample, params, result)
                    for (pid, sample, params), result in zip(points, results)]
            if log:
                rows = log.append(rows)       # another study may have written some keys first
            for row in rows:
                done[row["key"]] = row
                failures += not row["success"]
                bar.advance(f"{failures} failed" if failures else "")
    finally:
        if futures:                                           # interrupted: stop the rest
            client.cancel(list(futures) + list(refs.values()))
