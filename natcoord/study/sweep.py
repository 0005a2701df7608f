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
* ``out="study.csv"``: rows are appended as they finish, keyed by a stable
  hash of the model and parameters (column ``key``), under the machine
  header the other experiments write; started again, the study skips the
  rows already in the file (resume after an interruption or a crash). With
  pyarrow installed the final table is also written as ``study.parquet``.
* The result is a pandas ``DataFrame`` (a NumPy structured array without
  pandas), one row per grid point in grid order.
* ``client``: a ``dask.distributed.Client``, or a scheduler address; without
  it a ``LocalCluster`` is started for the study (one single-threaded worker
  process per core, on the loopback interface only) and its dashboard link is
  printed.

Timing studies need care. Every run is timed on its worker, one run at a
time per single-threaded worker (``repeat`` runs give the median, minimum
and maximum), after a short warm-up run per worker so that Numba
compilation is not counted; each row records the host and CPU it ran on.
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

import csv
import hashlib
import inspect
import itertools
import json
import logging
import math
import os
import socket
import sys
import time
import uuid
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .. import models as _models
from ..integrate.simulate import PROJECTIONS, IntegrationError, simulate

#: keywords of ``simulate`` a grid may set (everything else goes to the factory)
SIMULATE_KEYWORDS = tuple(name for name in inspect.signature(simulate).parameters
                          if name != "model")
#: measure groups -> their columns
MEASURES = {
    "end": ("t_final", "output_x", "output_y", "output_z",
            "output_vx", "output_vy", "output_vz"),
    "error": ("output_error", "energy_error"),
    "drift": ("energy_drift", "max_constraint_residual", "max_velocity_residual", "dropped"),
    "stats": ("steps", "rejected", "rhs", "factorizations", "projection_iterations",
              "active_set_changes"),
    "time": ("wall_time", "wall_time_min", "wall_time_max", "repeat", "host", "cpu"),
}
DEFAULT_MEASURES = ("end", "error", "drift", "stats", "time")
#: options of the reference run (``error`` measures)
REFERENCE = {"rtol": 1e-12, "proj_tol": 1e-12}


# ------------------------------------------------------------------ parameters
def _plain(value):
    """Python scalars and lists for hashing and CSV (NumPy scalars, arrays, tuples)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (np.ndarray, tuple, list)):
        return [_plain(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _is_scalar(value):
    return value is None or isinstance(value, (bool, int, float, str))


def model_name(model):
    """Short name of a model spec: registry name, factory name or ``Model.name``."""
    if isinstance(model, str):
        return model
    if hasattr(model, "scenario") and hasattr(model, "name"):       # a built Model
        return model.name
    return getattr(model, "__name__", type(model).__name__)


def _full_name(model):
    if callable(model) and not isinstance(model, str) and hasattr(model, "__qualname__"):
        return f"{model.__module__}:{model.__qualname__}"
    return model_name(model)


def task_key(model, params, sample=None):
    """Stable 16-hex-digit hash of the model and the parameters of one run."""
    doc = {"model": _full_name(model), "params": _plain(params)}
    if sample is not None:
        doc["sample"] = int(sample)
    text = json.dumps(doc, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def expand(grid, n_samples=None, seed=None):
    """Grid points ``[(sample or None, params), ...]`` of a dict, a list or a sampler."""
    if callable(grid):
        if n_samples is None:
            raise ValueError("a sampler grid needs n_samples")
        children = np.random.SeedSequence(seed).spawn(int(n_samples))
        return [(i, _plain(dict(grid(np.random.default_rng(child)))))
                for i, child in enumerate(children)]
    if grid is None:
        return [(None, {})]
    if isinstance(grid, dict):
        keys = list(grid)
        values = [v if isinstance(v, (list, tuple, np.ndarray)) else [v]
                  for v in grid.values()]
        return [(None, _plain(dict(zip(keys, combo)))) for combo in itertools.product(*values)]
    return [(None, _plain(dict(point))) for point in grid]


def split(params):
    """``(factory parameters, simulate parameters)`` of one grid point."""
    sim = {k: v for k, v in params.items() if k in SIMULATE_KEYWORDS}
    return {k: v for k, v in params.items() if k not in sim}, sim


def _factory(spec):
    return _models.factory(spec) if isinstance(spec, str) else spec


def _check_factory(spec, names):
    """Fail early (before any task) on parameters the factory does not take."""
    if not names:
        return
    if hasattr(spec, "n_coords"):
        raise ValueError(f"model parameters {sorted(names)} need a factory, not a built Model")
    try:
        accepted = inspect.signature(_factory(spec)).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind == p.VAR_KEYWORD for p in accepted.values()):
        return
    unknown = sorted(set(names) - set(accepted))
    if unknown:
        raise ValueError(f"model {model_name(spec)!r} takes {sorted(accepted) or 'no'} "
                         f"parameters and simulate takes {list(SIMULATE_KEYWORDS)}, "
                         f"not {unknown}")


def build(spec, params):
    """The model of one task: ``factory(**params)`` built (a Model passes through)."""
    if hasattr(spec, "n_coords"):
        return spec
    obj = _factory(spec)(**params)
    return obj.build() if hasattr(obj, "build") else obj


# ------------------------------------------------------------------ tasks
class Reference:
    """A reference trajectory of the output point and the energy, interpolated.

    The point by cubic Hermite interpolation of its positions and velocities
    at the reference steps (error O(h⁴), far below the reference's own); the
    energy by a cubic spline. ``t`` (k,), ``point``/``velocity`` (k, 3),
    ``energy`` (k,).
    """

    def __init__(self, t, point, velocity, energy):
        from scipy.interpolate import CubicHermiteSpline, CubicSpline
        self.point = CubicHermiteSpline(t, point, velocity)
        self.energy = CubicSpline(t, energy)

    @staticmethod
    def arrays(sol):
        """The arrays of ``Reference(**arrays)`` from a solution (small: ships between workers)."""
        body, point = sol.model.scenario["output_point"]
        return {"t": sol.t, "point": sol.point(body, point),
                "velocity": sol.point_velocity(body, point), "energy": sol.energy}


def reference_task(spec, params, t_end, options):
    """Reference run of one model parameter set: ``Reference.arrays`` or ``{"error": ...}``."""
    try:
        model = build(spec, params)
        t_end = model.scenario["t_end"] if t_end is None else t_end
        return Reference.arrays(simulate(model, t_end, **options))
    except Exception as err:                     # noqa: BLE001 -- becomes the rows' message
        return {"error": f"{type(err).__name__}: {err}"}


_WARM = set()      # (model, solver, projection) already run in this process


def _warm_up(spec, model, sim):
    """A short run per process and (model, solver, projection), so compilation is not timed."""
    tag = (_full_name(spec), sim.get("solver"), sim.get("projection"))
    if tag not in _WARM:
        keep = {k: sim[k] for k in ("solver", "projection", "rtol", "hold_tol") if k in sim}
        t_end = sim.get("t_end", model.scenario["t_end"])
        try:
            simulate(model, min(t_end, 0.05), **keep)
        except Exception:                        # noqa: BLE001 -- the timed run reports it
            pass
        _WARM.add(tag)


def host_and_cpu():
    from .records import cpu_name
    return socket.gethostname(), cpu_name()


def run_task(spec, params, measures=DEFAULT_MEASURES, reference=None, repeat=1, warmup=False):
    """One grid point on a worker: build, simulate (``repeat`` times), measure → row (dict).

    Never raises: an exception anywhere becomes ``success = False`` and its
    ``message``.
    """
    groups, custom = _measure_spec(measures)
    row = {c: math.nan for c in columns_of(measures)}
    row.update(success=False, message="")
    if "time" in groups:
        row["host"], row["cpu"] = host_and_cpu()
    try:
        fparams, sim = split(params)
        model = build(spec, fparams)
        sim = dict(sim)
        t_end = sim.pop("t_end", model.scenario["t_end"])
        if warmup:
            _warm_up(spec, model, dict(sim, t_end=t_end))
        walls = []
        for _ in range(max(int(repeat), 1)):
            try:
                sol = simulate(model, t_end, **sim)
            except IntegrationError as err:
                sol = err.solution
            walls.append(sol.stats["wall_time"])
            if not sol.success:
                break
        row.update(success=bool(sol.success), message=str(sol.message))
        ref = reference
        if "error" in groups and isinstance(reference, dict) and "error" in reference:
            row["message"] += f"; reference run failed: {reference['error']}"
            ref = None
        row.update(_measures(sol, groups, custom, ref, walls))
    except Exception as err:                     # noqa: BLE001 -- a failed run is a row
        row.update(success=False, message=f"{type(err).__name__}: {err}")
    return row


def _measure_spec(measures):
    groups, custom = [], {}
    items = [measures] if isinstance(measures, (str, dict)) else list(measures)
    for item in items:
        if isinstance(item, dict):
            custom.update(item)
        elif item in MEASURES:
            groups.append(item)
        else:
            raise ValueError(f"unknown measure {item!r}: choose from {list(MEASURES)} "
                             f"or pass a dict name -> function(solution)")
    return groups, custom


def columns_of(measures):
    """Measure columns, in order, of a ``measures`` argument."""
    groups, custom = _measure_spec(measures)
    return [c for g in groups for c in MEASURES[g]] + list(custom)


def _measures(sol, groups, custom, reference, walls):
    row, ok, n = {}, sol.success, sol.t.size
    if "end" in groups and n:
        body, point = sol.model.scenario["output_point"]
        x = sol.point(body, point)[-1]
        v = sol.point_velocity(body, point)[-1]
        row.update(t_final=float(sol.t[-1]), output_x=float(x[0]), output_y=float(x[1]),
                   output_z=float(x[2]), output_vx=float(v[0]), output_vy=float(v[1]),
                   output_vz=float(v[2]))
    if "error" in groups and ok and reference is not None:
        if not isinstance(reference, Reference):
            reference = Reference(**reference)
        body, point = sol.model.scenario["output_point"]
        row["output_error"] = float(np.linalg.norm(
            sol.point(body, point) - reference.point(sol.t), axis=1).max())
        row["energy_error"] = float(np.abs(sol.energy - reference.energy(sol.t)).max())
    if "drift" in groups and n:
        row.update(energy_drift=float(np.abs(sol.energy - sol.energy[0]).max()),
                   max_constraint_residual=float(sol.constraint_residual.max()),
                   max_velocity_residual=float(sol.velocity_residual.max()),
                   dropped=len(sol.dropped))
    if "stats" in groups:
        row.update({k: sol.stats[k] for k in MEASURES["stats"]})
    if "time" in groups:
        row.update(wall_time=float(np.median(walls)), wall_time_min=float(min(walls)),
                   wall_time_max=float(max(walls)), repeat=len(walls))
    for name, function in custom.items():
        try:
            row[name] = _plain(function(sol)) if ok else math.nan
        except Exception:                        # noqa: BLE001 -- NaN, the run itself is fine
            row[name] = math.nan
    return row


# ------------------------------------------------------------------ CSV
def _format(value):
    if isinstance(value, float):
        return repr(value)                   # shortest exact round trip
    if value is None:
        return ""
    return str(value)


def _parse(text):
    if text == "":
        return math.nan
    if text in ("True", "False"):
        return text == "True"
    from .records import parse_value
    return parse_value(text)


def _round_trip(row):
    return {k: _parse(_format(v)) for k, v in row.items()}


class _Log:
    """The study's CSV: header on creation, one appended and flushed row per finished run."""

    def __init__(self, path, columns, command):
        from .records import csv_header
        self.path, self.columns, self.rows = Path(path), list(columns), {}
        if self.path.exists() and self.path.stat().st_size:
            with self.path.open(newline="") as f:
                reader = csv.DictReader(line for line in f if not line.startswith("#"))
                if reader.fieldnames != self.columns:
                    raise ValueError(
                        f"{self.path} holds another study (columns {reader.fieldnames}); "
                        f"to resume, ask for the same parameters and measures, or choose "
                        f"another output file")
                for row in reader:
                    if None in row or any(v is None for v in row.values()):
                        continue                         # a row cut short by a crash
                    self.rows[row["key"]] = {k: _parse(v) for k, v in row.items()}
            with self.path.open("rb+") as f:             # a crash may leave half a line
                f.seek(0, os.SEEK_END)
                if f.tell():
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":
                        f.write(b"\n")
            self.file = self.path.open("a", newline="")
            self.writer = csv.DictWriter(self.file, fieldnames=self.columns)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.file = self.path.open("w", newline="")
            self.file.write(csv_header(command))
            self.writer = csv.DictWriter(self.file, fieldnames=self.columns)
            self.writer.writeheader()
            self.file.flush()

    def append(self, row):
        self.writer.writerow({k: _format(row.get(k)) for k in self.columns})
        self.file.flush()

    def close(self):
        self.file.close()


def read(path):
    """The table of a study's CSV (as ``sweep`` returns it, in file order)."""
    with Path(path).open(newline="") as f:
        reader = csv.DictReader(line for line in f if not line.startswith("#"))
        rows = [{k: _parse(v) for k, v in row.items()} for row in reader
                if None not in row and None not in row.values()]
        return _table(rows, reader.fieldnames)


def _table(rows, columns, use_pandas=True):
    """pandas DataFrame, or a NumPy structured array without pandas."""
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None and use_pandas:
        return pd.DataFrame.from_records(rows, columns=columns)

    def dtype(values):
        if values and all(isinstance(v, bool) for v in values):
            return bool
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return np.int64
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return np.float64
        return f"U{max([len(_format(v)) for v in values] + [1])}"

    values = {c: [r.get(c, math.nan) for r in rows] for c in columns}
    dtypes = [(c, dtype(values[c])) for c in columns]
    cells = {c: [_format(v) if isinstance(t, str) and not
                 (isinstance(v, float) and math.isnan(v)) else ("" if isinstance(t, str) else v)
                 for v in values[c]] for c, t in dtypes}
    data = list(zip(*(cells[c] for c in columns)))
    return np.array(data, dtype=dtypes)


# ------------------------------------------------------------------ cluster
def local_client(workers=None, **kwargs):
    """A ``Client`` of a new ``LocalCluster``: one single-threaded worker process per core.

    Loopback only (scheduler, workers and dashboard listen on 127.0.0.1, on
    free ports); BLAS and OpenMP single-threaded in the workers. Closing the
    client closes the cluster.
    """
    from dask.distributed import Client, LocalCluster
    options = dict(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                   processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0",
                   worker_dashboard_address=None, silence_logs=logging.ERROR,
                   env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                        "MKL_NUM_THREADS": "1"})
    options.update(kwargs)
    cluster = LocalCluster(**options)
    client = Client(cluster, set_as_default=False)
    client._natcoord_owns_cluster = True
    return client


def close_client(client):
    """Close ``client`` and, when ``local_client`` started it, its cluster."""
    cluster = client.cluster if getattr(client, "_natcoord_owns_cluster", False) else None
    client.close()
    if cluster is not None:
        cluster.close()


def _natcoord_location():
    import natcoord
    return os.path.dirname(os.path.abspath(natcoord.__file__))


@contextmanager
def _connected(client, workers, verbose):
    if client is None:
        client = local_client(workers)
        if verbose:
            print(f"natcoord: LocalCluster with {len(client.scheduler_info()['workers'])} "
                  f"workers; dashboard: {client.dashboard_link}", file=sys.stderr, flush=True)
        try:
            yield client
        finally:
            close_client(client)
    elif isinstance(client, str):
        from dask.distributed import Client
        client = Client(client, set_as_default=False)
        if verbose:
            print(f"natcoord: connected to {client.scheduler.address}; dashboard: "
                  f"{client.dashboard_link}", file=sys.stderr, flush=True)
        try:
            yield client
        finally:
            client.close()
    else:
        yield client


def check_workers(client):
    """Warn when the workers import another natcoord than this process does."""
    here = _natcoord_location()
    there = set(client.run(_natcoord_location).values())
    if there and there != {here}:
        warnings.warn(f"Dask workers import natcoord from {sorted(there)}, this process from "
                      f"{here}: results may differ (set PYTHONPATH for the workers)",
                      stacklevel=3)
    return there


class _Bar:
    """``Progress`` bar of the experiments, redrawn at most every ``every`` seconds."""

    def __init__(self, total, enabled, every=1.0):
        from .records import Progress
        self.bar, self.every, self.last = Progress(total, enabled), every, -math.inf

    def advance(self, label=""):
        bar = self.bar
        bar.done += 1
        now = time.perf_counter()
        if bar.done == bar.total:
            bar.done -= 1
            bar.advance(label)
        elif now - self.last >= self.every or bar.tty:
            bar.show(label)
            self.last = now


# ------------------------------------------------------------------ sweep
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
    ``out``: CSV appended as rows finish, resumed when it exists (rows with
    ``success = False`` are run again only with ``retry_failed``);
    ``progress``: progress bar on stderr; ``batch``: grid points per Dask task
    (default: about eight tasks per worker thread; 1 gives one task per run).
    Returns a pandas DataFrame (or a NumPy structured array) in grid order.
    See the module docstring.
    """
    groups, custom = _measure_spec(measures)
    if batch is not None:
        validate_batch(batch)
    monte_carlo = callable(grid)
    if monte_carlo and seed is None:
        seed = np.random.SeedSequence().entropy
        print(f"natcoord: Monte Carlo seed {seed} (pass seed= to reproduce)", file=sys.stderr)
    common = _plain(dict(simulate_kwargs or {}))
    points = []
    for sample, params in expand(grid, n_samples, seed):
        params = {**common, **params}
        points.append((task_key(model, params, sample), sample, params))
    fnames = {k for _, _, p in points for k in split(p)[0]}
    _check_factory(model, fnames)
    for _, _, p in points:
        if p.get("projection", PROJECTIONS[0]) not in PROJECTIONS:
            raise ValueError(f"projection {p['projection']!r} unknown; choose from "
                             f"{list(PROJECTIONS)}")
    pnames = list(dict.fromkeys(k for _, _, p in points for k, v in p.items()
                                if _is_scalar(v)))
    columns = (["key", "model"] + (["sample"] if monte_carlo else []) + pnames
               + ["success", "message"] + columns_of(measures))
    name = model_name(model)
    if warmup is None:
        warmup = "time" in groups
    command = command or f"nc.sweep({name!r}, {len(points)} points)"

    log = _Log(out, columns, command) if out is not None else None
    done = dict(log.rows) if log else {}
    if retry_failed:
        done = {k: r for k, r in done.items() if r.get("success") is True}
    pending = [pt for pt in points if pt[0] not in done]
    pending = list({pt[0]: pt for pt in pending}.values())      # duplicate points run once
    if log and len(pending) < len(points):
        print(f"natcoord: resuming {log.path}: {len(points) - len(pending)} of {len(points)} "
              f"runs already done", file=sys.stderr)

    def label_row(key, sample, params, result):
        row = {"key": key, "model": name, **({"sample": sample} if monte_carlo else {})}
        row.update({k: v for k, v in params.items() if _is_scalar(v)})
        row.update(result)
        return _round_trip(row)

    try:
        if pending:
            with _connected(client, workers, verbose=client is None or progress) as c:
                check_workers(c)
                _submit_all(c, model, pending, measures, groups, reference, repeat, warmup,
                            progress, done, log, label_row, batch)
    finally:
        if log:
            log.close()
    rows = [dict(done[key], sample=sample) if monte_carlo else done[key]
            for key, sample, _ in points]
    table = _table([{c: r.get(c, math.nan) for c in columns} for r in rows], columns)
    if out is not None and hasattr(table, "to_parquet"):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            pass
        else:
            table.to_parquet(Path(out).with_suffix(".parquet"), index=False)
    return table


def run_batch(spec, items, measures=DEFAULT_MEASURES, repeat=1, warmup=False):
    """Several grid points in one Dask task: :func:`run_task` of each ``(params, reference)``."""
    return [run_task(spec, params, measures, ref, repeat, warmup) for params, ref in items]


def batch_size(batch, n_points, client):
    """Grid points per task: ``batch``, or (``None``) about eight tasks per worker
    thread, so that short runs do not pay Dask's per-task cost (some ms) each."""
    if batch is not None:
        return validate_batch(batch)
    threads = sum(client.nthreads().values()) or 1
    return max(1, n_points // (8 * threads))


def validate_batch(batch):
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a whole number ≥ 1 (or None: automatic), got {batch!r}")
    return batch


def _submit_all(client, model, pending, measures, groups, reference, repeat, warmup,
                progress, done, log, label_row, batch):
    from dask.distributed import as_completed
    token = uuid.uuid4().hex[:8]
    spec = model
    if hasattr(model, "n_coords"):                                # a built Model
        spec = client.scatter(model, broadcast=True, hash=False)
    refs, items = {}, []
    for key, sample, params in pending:
        ref = None
        if "error" in groups and reference is not None:
            fparams, sim = split(params)
            rkey = task_key(model, {"model": fparams, "t_end": sim.get("t_end")})
            if rkey not in refs:
                refs[rkey] = client.submit(reference_task, spec, fparams, sim.get("t_end"),
                                           dict(reference), key=f"nc-reference-{rkey}-{token}",
                                           priority=10)
            ref = refs[rkey]
        items.append(((key, sample, params), ref))
    size = batch_size(batch, len(items), client)
    futures = {}
    for start in range(0, len(items), size):
        chunk = items[start:start + size]
        fut = client.submit(run_batch, spec, [(point[2], ref) for point, ref in chunk],
                            measures, repeat, warmup,
                            key=f"nc-run-{chunk[0][0][0]}-{len(chunk)}-{token}")
        futures[fut] = [point for point, _ in chunk]
    bar = _Bar(len(items), progress)
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
            for (key, sample, params), result in zip(points, results):
                row = label_row(key, sample, params, result)
                done[key] = row
                if log:
                    log.append(row)
                failures += not row["success"]
                bar.advance(f"{failures} failed" if failures else "")
    finally:
        if futures:                                           # interrupted: stop the rest
            client.cancel(list(futures) + list(refs.values()))


# ------------------------------------------------------------------ command line
def parse_values(text, sample=False):
    """Values of ``--param KEY=TEXT``.

    Grid: ``a:b:n`` n values linspace, ``a:b:n:log`` logspace, ``x,y,z`` a
    list, ``x`` one value. Monte Carlo (``sample=True``) returns a function
    ``rng -> value``: ``a:b`` uniform, ``a:b:log`` log-uniform, ``m~s``
    normal, ``x,y,z`` a uniform choice, ``x`` fixed.
    """
    from .records import parse_value
    parts = text.split(":")
    if sample:
        if "~" in text:
            mean, sd = (float(x) for x in text.split("~"))
            return lambda rng: float(rng.normal(mean, sd))
        if len(parts) in (2, 3) and (len(parts) == 2 or parts[2] == "log"):
            a, b = float(parts[0]), float(parts[1])
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
        a, b, n = float(parts[0]), float(parts[1]), int(parts[2])
        if len(parts) == 4:
            if parts[3] != "log":
                raise ValueError(f"a:b:n:log expected, got {text!r}")
            values = np.logspace(np.log10(a), np.log10(b), n)
        else:
            values = np.linspace(a, b, n)
        return [float(f"{v:.12g}") for v in values]
    if len(parts) != 1:
        raise ValueError(f"give a:b:n, a:b:n:log, a comma list or one value, not {text!r}")
    return [parse_value(x) for x in text.split(",")]


class _Sampler:
    """``rng -> dict`` from ``{name: rng -> value}`` (picklable, ordered)."""

    def __init__(self, draws):
        self.draws = draws

    def __call__(self, rng):
        return {k: f(rng) for k, f in self.draws.items()}


def configure(parser):
    from ..linalg import available_solvers
    parser.add_argument("model", choices=sorted(_models.REGISTRY),
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


def _describe(args):
    words = ["natcoord sweep", args.model]
    words += [f"--scenario {args.scenario}"] if args.scenario else []
    words += [f"--param {p}" for p in args.param]
    for flag in ("rtol", "proj_tol", "t_end", "solver", "projection", "samples", "seed"):
        value = getattr(args, flag)
        if value is not None:
            words.append(f"--{flag.replace('_', '-')} {value}")
    words += [f"--measures {args.measures}", f"--repeat {args.repeat}"]
    return " ".join(words)


def run(args):
    specs = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--param needs KEY=VALUES, got {item!r}")
        specs[key] = value
    for flag in ("rtol", "proj_tol", "t_end", "solver", "projection"):
        if getattr(args, flag) is not None:
            specs[flag] = getattr(args, flag)
    fixed = {"scenario": args.scenario} if args.scenario else {}
    measures = tuple(m for m in args.measures.split(",") if m)
    out = args.out or Path("data") / f"{args.model.replace('-', '_')}_sweep.csv"
    if args.samples:
        grid = _Sampler({k: parse_values(v, sample=True) for k, v in specs.items()})
    else:
        grid = {k: parse_values(v) for k, v in specs.items()}
    table = sweep(args.model, grid, fixed, measures=measures, client=args.scheduler,
                  out=out, seed=args.seed, n_samples=args.samples, repeat=args.repeat,
                  workers=args.workers, progress=not args.quiet, command=_describe(args),
                  retry_failed=args.retry_failed, batch=args.batch)
    success = np.asarray(table["success"], bool)
    print(f"{success.size} runs ({int((~success).sum())} failed) in {out}")
    return 0
