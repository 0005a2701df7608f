"""Runtime versus integration and projection tolerance: the grid behind the paper's Fig. 5.

:func:`run_grid` runs one model over methods × (solver, projection) ×
projection tolerances × integration tolerances as a study on Dask
(:func:`natcoord.study.sweep.sweep`) and measures each run's error against a
reference run (``rtol = proj_tol = 1e-12``), its drift and its cost
(``COLUMNS``). The notebooks and ``benchmarks/natcoord_bench/tolerance.py``
(``natcoord bench tolerance``) use it.
"""
from __future__ import annotations


import numpy as np

from ..integrate.base import IntegrationError
from ..integrate.simulate import simulate
from ..linalg import default_solver
from ..linalg.base import HOLD_TOL
from .sweep import sweep
from .tasks import Reference as Interpolated

#: CSV columns, in order (units: seconds, metres, joules).
COLUMNS = ("model", "method", "solver", "projection", "rtol", "proj_tol", "hold_tol", "t_end", "repeat",
           "success", "wall_time_median", "wall_time_min", "wall_time_max", "steps",
           "rejected", "rhs", "factorizations", "projection_iterations",
           "active_set_changes", "dropped", "max_constraint_residual",
           "max_velocity_residual", "energy_error", "output_error", "host", "cpu")
#: projections that use ``proj_tol`` (the others run once, with ``proj_tol`` empty)
PROJECTING = ("position+velocity", "velocity")
REFERENCE_TOL = 1e-12


def parse_tolerances(text):
    """``'1e-3:1e-10'`` → one value per decade from 1e-3 to 1e-10; ``'1e-4,1e-6'`` → as listed."""
    if ":" in text:
        first, last = (float(x) for x in text.split(":"))
        decades = round(abs(np.log10(first / last)))
        values = np.logspace(np.log10(first), np.log10(last), decades + 1)
    else:
        values = [float(x) for x in text.split(",")]
    return [float(f"{v:.12g}") for v in values]


class Reference(Interpolated):
    """A reference run at ``rtol = proj_tol = 1e-12``, interpolated to any time.

    The output point by cubic Hermite interpolation of its positions and
    velocities at the reference steps (error O(h⁴), far below the reference's
    own); the energy by a cubic spline.
    """

    def __init__(self, model, t_end, solver=None):
        self.solution = sol = simulate(model, t_end, rtol=REFERENCE_TOL,
                                       proj_tol=REFERENCE_TOL, solver=solver)
        super().__init__(**self.arrays(sol))


def output_error(sol, reference):
    """Largest distance [m] of the output point from the reference over the steps."""
    body, point = sol.model.scenario["output_point"]
    return float(np.linalg.norm(sol.point(body, point) - reference.point(sol.t), axis=1).max())


def measure(model, rtol, proj_tol, t_end, reference=None, solver=None,
            projection="position+velocity", repeat=1, hold_tol=HOLD_TOL, method="dopri5"):
    """One grid point: ``repeat`` identical simulations → a CSV row (dict).

    The output is every accepted step (no extra output projections, which
    would dominate the cost at loose tolerances); errors are the largest over
    the steps. ``energy_error`` is ``max |E(t) − E_ref(t)|``: for a
    conservative model ``E_ref(t) = E(0)`` to the reference accuracy, so it is
    the energy drift. Without a ``reference``, or when a run fails
    (``success = False``), the two errors are left empty. ``hold_tol`` is the
    hysteresis of constraint partitioning (0: none); ``method`` that of ``simulate``.
    """
    walls = []
    for _ in range(repeat):
        try:
            sol = simulate(model, t_end, rtol=rtol, proj_tol=proj_tol, solver=solver,
                           projection=projection, hold_tol=hold_tol, method=method)
        except IntegrationError as err:
            sol = err.solution
        walls.append(sol.stats["wall_time"])
        if not sol.success:
            break
    stats, nan = sol.stats, float("nan")
    row = dict(model=model.name, method=method, solver=solver or default_solver(),
               projection=projection,
               rtol=rtol, proj_tol=proj_tol if projection in PROJECTING else nan,
               hold_tol=hold_tol,
               t_end=t_end, repeat=len(walls), success=sol.success,
               wall_time_median=float(np.median(walls)), wall_time_min=min(walls),
               wall_time_max=max(walls), dropped=len(sol.dropped),
               max_constraint_residual=nan, max_velocity_residual=nan, energy_error=nan,
               output_error=nan,
               **{k: stats[k] for k in ("steps", "rejected", "rhs", "factorizations",
                                        "projection_iterations", "active_set_changes")})
    if sol.success:
        row.update(max_constraint_residual=float(sol.constraint_residual.max()),
                   max_velocity_residual=float(sol.velocity_residual.max()))
    if sol.success and reference is not None:
        row.update(energy_error=float(np.abs(sol.energy - reference.energy(sol.t)).max()),
                   output_error=output_error(sol, reference))
    return row


def run_grid(model, rtols, proj_tols, combos, t_end=None, repeat=1, progress=True,
             hold_tol=HOLD_TOL, client=None, workers=None, methods=("dopri5",)):
    """Rows (``COLUMNS``) over ``methods`` × ``combos`` (solver, projection) × ``proj_tols``
    × ``rtols``.

    Projections that do not use ``proj_tol`` run once per ``rtol``. The grid
    runs on Dask through :func:`natcoord.study.sweep` (``client``: a Client,
    a scheduler address, or None for a LocalCluster of ``workers`` processes):
    one task per grid point, the ``repeat`` timed runs of a point one after
    the other on one single-threaded worker, after an untimed warm-up run per
    worker so that compilation and caches do not count; the reference run is
    a task too (DOPRI5, whatever ``methods``). Each row records the host and CPU that timed it; see
    :mod:`natcoord.study.sweep` on timing several runs at once.
    """
    t_end = model.scenario["t_end"] if t_end is None else t_end
    points = [(m, s, p, tol, rtol) for m in methods for s, p in combos
              for tol in (proj_tols if p in PROJECTING else [proj_tols[0]]) for rtol in rtols]
    # the study measures the drift of the weaker stabilizations: not a failure here
    grid = [dict(method=m, solver=s or default_solver(), projection=p, proj_tol=tol, rtol=rtol,
                 hold_tol=hold_tol, t_end=t_end, drift_tol=np.inf)
            for m, s, p, tol, rtol in points]
    reference = dict(rtol=REFERENCE_TOL, proj_tol=REFERENCE_TOL, solver=combos[0][0])
    table = sweep(model, grid, measures=("error", "drift", "stats", "time"),
                        reference=reference, repeat=repeat, warmup=True, client=client,
                        workers=workers, progress=progress)
    records = table.to_dict("records") if hasattr(table, "to_dict") else \
        [dict(zip(table.dtype.names, r.tolist())) for r in table]
    return [grid_row(model, r) for r in records]


def grid_row(model, r):
    """A row of ``COLUMNS`` from a row of :func:`natcoord.study.sweep`."""
    nan, ok = float("nan"), bool(r["success"])
    row = dict(model=model.name, method=r["method"], solver=r["solver"],
               projection=r["projection"], rtol=r["rtol"],
               proj_tol=r["proj_tol"] if r["projection"] in PROJECTING else nan,
               hold_tol=r["hold_tol"], t_end=r["t_end"], repeat=_int(r["repeat"]), success=ok,
               wall_time_median=r["wall_time"], wall_time_min=r["wall_time_min"],
               wall_time_max=r["wall_time_max"],
               **{k: _int(r[k]) for k in ("steps", "rejected", "rhs", "factorizations",
                                          "projection_iterations", "active_set_changes",
                                          "dropped")},
               max_constraint_residual=r["max_constraint_residual"] if ok else nan,
               max_velocity_residual=r["max_velocity_residual"] if ok else nan,
               energy_error=r["energy_error"], output_error=r["output_error"],
               host=r["host"], cpu=r["cpu"])
    return {k: row[k] for k in COLUMNS}


def _int(value):
    """Counters as int (they come back as float when a failed row leaves them empty)."""
    return int(value) if isinstance(value, (int, float)) and value == value else value
