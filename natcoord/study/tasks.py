"""What a study's Dask tasks do on the workers: run grid points and measure them.

:func:`run_task` builds one point's model, simulates it (``repeat``
times), and reduces the solution to one row of measures (``MEASURES``);
:func:`run_batch` runs several points in one task; :func:`reference_task`
makes the reference run of the ``error`` measures, shipped to the runs that
need it as :meth:`Reference.arrays`. Nothing here raises: a failed run is a
row with ``success = False`` and its ``message``.
"""
from __future__ import annotations

import math
import socket

import numpy as np

from ..integrate.simulate import IntegrationError, simulate
from .grid import build, built, full_name, make, plain, split
from .keys import content_of, error_content
from .records import cpu_name

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
    tag = (full_name(spec), sim.get("solver"), sim.get("projection"))
    if tag not in _WARM:
        keep = {k: sim[k] for k in ("solver", "projection", "rtol", "hold_tol") if k in sim}
        t_end = sim.get("t_end", model.scenario["t_end"])
        try:
            simulate(model, min(t_end, 0.05), **keep)
        except Exception:                        # noqa: BLE001 -- the timed run reports it
            pass
        _WARM.add(tag)


def host_and_cpu():
    """This worker's host name and CPU model."""
    return socket.gethostname(), cpu_name()


def run_task(spec, params, measures=DEFAULT_MEASURES, reference=None, repeat=1, warmup=False,
             content=False):
    """One grid point on a worker: build, simulate (``repeat`` times), measure → row (dict).

    ``content``: the row also carries ``"content"``, the hash of the model built
    here (:func:`natcoord.study.keys.content_of`; of the factory's error if it
    raised), from which the study keys the row. Never raises: an exception
    anywhere becomes ``success = False`` and its ``message``.
    """
    groups, custom = measure_spec(measures)
    row = {c: math.nan for c in columns_of(measures)}
    row.update(success=False, message="")
    if "time" in groups:
        row["host"], row["cpu"] = host_and_cpu()
    try:
        fparams, sim = split(params)
        model = _made(spec, fparams, row if content else None)
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


def _made(spec, fparams, row):
    """The built model of one point; its content (or its factory's error's) into
    ``row["content"]`` unless ``row`` is None."""
    try:
        obj = make(spec, fparams)
    except Exception as err:
        if row is not None:
            row["content"] = error_content(err)
        raise
    if row is not None:
        row["content"] = content_of(obj)
    return built(obj)


def run_batch(spec, items, measures=DEFAULT_MEASURES, repeat=1, warmup=False, content=False):
    """Several grid points in one Dask task: :func:`run_task` of each ``(params, reference)``."""
    return [run_task(spec, params, measures, ref, repeat, warmup, content)
            for params, ref in items]


def batch_size(batch, n_points, client):
    """Grid points per task: ``batch``, or (``None``) about eight tasks per worker
    thread, so that short runs do not pay Dask's per-task cost (some ms) each."""
    if batch is not None:
        return validate_batch(batch)
    threads = sum(client.nthreads().values()) or 1
    return max(1, n_points // (8 * threads))


def validate_batch(batch):
    """``batch`` if it is a whole number ≥ 1, else ``ValueError``."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a whole number ≥ 1 (or None: automatic), got {batch!r}")
    return batch


def measure_spec(measures):
    """``(groups, custom)`` of a ``measures`` argument: names of ``MEASURES`` and a dict
    ``name -> f(solution)``; ``ValueError`` for an unknown group."""
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
    groups, custom = measure_spec(measures)
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
            row[name] = plain(function(sol)) if ok else math.nan
        except Exception:                        # noqa: BLE001 -- NaN, the run itself is fine
            row[name] = math.nan
    return row
