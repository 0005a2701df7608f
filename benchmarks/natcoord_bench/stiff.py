"""Stiff mechanisms: DOPRI5 against Radau IIA, and SciPy's Radau in minimal coordinates.

Two problems, each integrated by ``simulate(method="dopri5")`` and
``simulate(method="radau")`` at ``--rtol``:

1. ``pendulum``: the elastic pendulum of :mod:`natcoord.models.spring_pendulum`
   (a 1 kg ball on a spring of ``--stiffness`` N/m and 20 N·s/m from a fixed
   point, released at 60°; natural coordinates, 12 coordinates and 6 rigid-body
   constraints), and the same physical problem in polar coordinates
   ``(r, φ)`` (2 DOF) by ``scipy.integrate.solve_ivp(method="Radau")``; and
   SciPy's Radau on natcoord's own index-1 ODE (natural coordinates, its
   right-hand side and Jacobian, no projection), which separates the effect of
   the coordinates from that of the implementation.
   ``end_error``: distance [m] of the ball at ``t_end`` from SciPy's Radau on
   the polar equations at ``rtol = 1e-12``.
2. ``hexapod``: the driven Stewart–Gough platform with elastic legs
   (``hexapod("driven", elastic_joints=(--leg-stiffness, --leg-damping))``:
   the spherical joints replaced by stiff spring–dampers), where DOPRI5's
   step is limited by stability. ``end_error``: distance of the platform centre
   at ``t_end`` from DOPRI5 at ``rtol = 1e-10``.

One CSV row per run (``COLUMNS``): steps, rejected steps, right-hand-side
evaluations, Jacobians, LU decompositions (of the r × r Newton matrices of J's stiff
part, real and complex counted apart; natcoord/integrate/radau.py) and
Newton iterations (Radau), and the wall time (median over ``--repeat``; for
``simulate`` its ``stats["wall_time"]``). Both the pendulum's spring and the
hexapod's Cartesian springs have their law in the core (natcoord/core/src/forces.c):
DOPRI5 runs in the core alone on both, and so does Radau's step (Newton iteration,
J's stiff subspace, the r × r real and complex LU decompositions and the Woodbury
solves, error estimate,
controller; natcoord/core/src/radau.c) with the core's evaluations and Jacobian
(its columns by ``nc_acceleration_derivative``, the springs' exact derivatives).
The printed summary adds DOPRI5's wall time over Radau's per problem.

``--lu-out`` (data/dense_lu.csv): the core's dense LU with partial pivoting
(natcoord/core/src/dense_lu.c), which factors Radau's Newton matrices: factorization
and one solve of a random real or complex (planes of real and imaginary parts)
``n × n`` matrix, per variant (``baseline`` x86-64, ``avx2`` where the CPU has it),
microseconds (best of ``--repeat`` means of ``LU_CALLS`` calls, less the copy of the
matrix each call needs) and GFlop/s of the factorization's 2n³/3 (real) or 8n³/3
(complex) floating-point operations, for ``--lu-sizes`` (the elastic hexapod's
N = 156 and its stiff subspace's r = 18).

The reference runs (SciPy's Radau) go through the BLAS: on a small machine shared with other work,
OpenBLAS's threads make them slower and the times erratic;
``OPENBLAS_NUM_THREADS=1`` in the environment avoids that, and the CSV header
records it when set.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
from scipy.integrate import solve_ivp

from natcoord.core import engine
from natcoord.integrate.simulate import simulate
from natcoord.models import hexapod, spring_pendulum
from natcoord.models.spring_pendulum import polar_equations, polar_initial, polar_to_position
from natcoord.integrate.radau import Radau
from natcoord.study.records import Progress, text_table, write_csv

COLUMNS = ("problem", "tool", "method", "coordinates", "rtol", "t_end", "repeat", "success",
           "wall_time_median", "wall_time_min", "steps", "rejected", "rhs", "jacobians",
           "lu_decompositions", "newton_iterations", "end_error")
REFERENCE_TOL = 1e-12
LU_COLUMNS = ("n", "kind", "variant", "microseconds", "gflops")
LU_CALLS = 50


def natcoord_row(problem, model, method, rtol, t_end, repeat, output, reference):
    """``simulate`` ``repeat`` times; ``output(sol)``: the point compared with ``reference``."""
    walls = []
    for _ in range(repeat):
        sol = simulate(model, t_end, rtol=rtol, t_eval=[t_end], method=method)
        walls.append(sol.stats["wall_time"])
    s = sol.stats
    return dict(problem=problem, tool="natcoord", method=method,
                coordinates=f"natural ({model.n_coords})", rtol=rtol, t_end=t_end,
                repeat=repeat, success=sol.success, wall_time_median=float(np.median(walls)),
                wall_time_min=min(walls), steps=s["steps"], rejected=s["rejected"],
                rhs=s["rhs"], jacobians=s["jacobians"], lu_decompositions=s["lu_decompositions"],
                newton_iterations=s["newton_iterations"], end_error=float(np.linalg.norm(output(sol) - reference)))


def polar_run(rtol, t_end, stiffness):
    """SciPy's Radau on the polar equations; ``atol = rtol / 100`` (r, φ are O(1))."""
    return solve_ivp(polar_equations(stiffness), (0.0, t_end), polar_initial(stiffness),
                     method="Radau", rtol=rtol, atol=rtol * 1e-2)


def scipy_row(run, coordinates, position, rtol, t_end, repeat, reference):
    """``run()`` (a ``solve_ivp`` call) ``repeat`` times; ``position(y_end)``: the ball."""
    walls = []
    for _ in range(repeat):
        start = time.perf_counter()
        sol = run()
        walls.append(time.perf_counter() - start)
    return dict(problem="pendulum", tool="scipy", method="radau", coordinates=coordinates,
                rtol=rtol, t_end=t_end, repeat=repeat, success=sol.success,
                wall_time_median=float(np.median(walls)), wall_time_min=min(walls),
                steps=sol.t.size - 1, rejected="", rhs=sol.nfev, jacobians=sol.njev,
                lu_decompositions=sol.nlu, newton_iterations="",
                end_error=float(np.linalg.norm(position(sol.y[:, -1]) - reference)))


def pendulum_rows(args, bar):
    t_end, k = args.pendulum_t_end, args.stiffness
    ref = polar_run(REFERENCE_TOL, t_end, k).y[:2, -1]
    reference = polar_to_position(*ref)
    model = spring_pendulum(stiffness=k).build()
    rows = []
    for method in ("dopri5", "radau"):
        bar.show(f"pendulum k = {k:g}: {method}")
        rows.append(natcoord_row("pendulum", model, method, args.rtol, t_end, args.repeat,
                                 lambda sol: sol.p[-1, :3], reference))
        bar.advance(f"{method}: {rows[-1]['steps']} steps")
    bar.show("pendulum: SciPy Radau, polar coordinates")
    rows.append(scipy_row(lambda: polar_run(args.rtol, t_end, k), "polar (2)",
                          lambda y: polar_to_position(*y[:2]), args.rtol, t_end, args.repeat,
                          reference))
    bar.advance(f"SciPy, polar: {rows[-1]['steps']} steps")
    bar.show("pendulum: SciPy Radau, natural coordinates (no projection)")
    ode = Radau(model, t_end, rtol=args.rtol)           # its rhs and jacobian only
    rows.append(scipy_row(lambda: solve_ivp(ode.rhs, (0.0, t_end), ode.y.copy(), method="Radau",
                                            rtol=args.rtol, atol=args.rtol, jac=ode.jacobian),
                          f"natural ({model.n_coords}), no projection", lambda y: y[:3],
                          args.rtol, t_end, args.repeat, reference))
    bar.advance(f"SciPy, natural: {rows[-1]['steps']} steps")
    return rows


def hexapod_rows(args, bar):
    t_end = args.hexapod_t_end
    model = hexapod("driven", elastic_joints=(args.leg_stiffness, args.leg_damping)).build()

    def centre(sol):
        body, point = model.scenario["output_point"]
        return sol.point(body, point)[-1]

    bar.show(f"hexapod k = {args.leg_stiffness:g}: reference (DOPRI5, rtol = 1e-10)")
    reference = centre(simulate(model, t_end, rtol=1e-10, t_eval=[t_end]))
    bar.advance("reference")
    rows = []
    for method in ("dopri5", "radau"):
        bar.show(f"hexapod k = {args.leg_stiffness:g}: {method}")
        rows.append(natcoord_row("hexapod", model, method, args.rtol, t_end, args.repeat,
                                 centre, reference))
        bar.advance(f"{method}: {rows[-1]['steps']} steps")
    return rows


def lu_rows(sizes, repeat):
    """The dense LU's time and GFlop/s per size, real and complex, and variant."""
    rng = np.random.default_rng(0)
    rows = []
    for n in sizes:
        for kind, planes, flops in (("real", (n, n), 2 * n**3 / 3),
                                    ("complex", (2, n, n), 8 * n**3 / 3)):
            A0 = rng.standard_normal(planes)
            b0 = rng.standard_normal(planes[:-1])
            A, b = A0.copy(), b0.copy()
            for variant, name in ((0, "baseline"), (1, "avx2")):
                if engine.dense_lu_solve(A, b, variant) == -1:
                    continue                               # no AVX2 on this CPU
                best = np.inf
                for _ in range(repeat):
                    start = time.perf_counter()
                    for _ in range(LU_CALLS):
                        np.copyto(A, A0)
                        np.copyto(b, b0)
                        engine.dense_lu_solve(A, b, variant)
                    middle = time.perf_counter()
                    for _ in range(LU_CALLS):
                        np.copyto(A, A0)
                        np.copyto(b, b0)
                    copies = time.perf_counter() - middle
                    best = min(best, (middle - start - copies) / LU_CALLS)
                rows.append(dict(n=n, kind=kind, variant=name, microseconds=best * 1e6,
                                 gflops=flops / best * 1e-9))
    return rows


def configure(parser):
    parser.add_argument("--rtol", type=float, default=1e-6, help="integration tolerance")
    parser.add_argument("--repeat", type=int, default=3, help="runs; the median is reported")
    parser.add_argument("--problems", type=lambda s: s.split(","), default=["pendulum", "hexapod"],
                        help="comma separated, from pendulum,hexapod")
    parser.add_argument("--stiffness", type=float, default=1e6,
                        help="pendulum spring stiffness [N/m]")
    parser.add_argument("--pendulum-t-end", type=float, default=2.0, help="[s]")
    parser.add_argument("--leg-stiffness", type=float, default=1e7,
                        help="hexapod leg stiffness [N/m]")
    parser.add_argument("--leg-damping", type=float, default=1e4,
                        help="hexapod leg damping [N s/m]")
    parser.add_argument("--hexapod-t-end", type=float, default=0.5, help="[s]")
    parser.add_argument("--out", default="data/stiff.csv", help="CSV file")
    parser.add_argument("--lu-sizes", type=lambda s: [int(n) for n in s.split(",")],
                        default=[156, 18], help="dense LU sizes n, comma separated")
    parser.add_argument("--lu-out", default="data/dense_lu.csv", help="CSV file of the LU")


def run(args):
    unknown = set(args.problems) - {"pendulum", "hexapod"}
    if unknown:
        raise SystemExit(f"--problems: unknown {sorted(unknown)}; choose from pendulum,hexapod")
    bar = Progress(4 * ("pendulum" in args.problems) + 3 * ("hexapod" in args.problems))
    rows = []
    if "pendulum" in args.problems:
        rows += pendulum_rows(args, bar)
    if "hexapod" in args.problems:
        rows += hexapod_rows(args, bar)
    threads = os.environ.get("OPENBLAS_NUM_THREADS")
    path = write_csv(args.out, rows, COLUMNS,
                     (f"OPENBLAS_NUM_THREADS={threads} " if threads else "") +
                     f"python benchmarks/stiff.py --rtol {args.rtol:g} --repeat {args.repeat} "
                     f"--problems {','.join(args.problems)} --stiffness {args.stiffness:g} "
                     f"--pendulum-t-end {args.pendulum_t_end:g} "
                     f"--leg-stiffness {args.leg_stiffness:g} --leg-damping "
                     f"{args.leg_damping:g} --hexapod-t-end {args.hexapod_t_end:g}")
    print(summary(rows))
    print(f"written to {path}")
    lu = lu_rows(args.lu_sizes, args.repeat)
    path = write_csv(args.lu_out, lu, LU_COLUMNS,
                     f"python benchmarks/stiff.py --repeat {args.repeat} --lu-sizes "
                     f"{','.join(str(n) for n in args.lu_sizes)}")
    print(text_table(lu, [("n", "n", ""), ("kind", "kind", ""), ("variant", "variant", ""),
                          ("µs", "microseconds", ".1f"), ("GFlop/s", "gflops", ".2f")]))
    print(f"written to {path}")
    return 0


def summary(rows):
    """The table as text: problem, tool/method, steps, rejected, RHS, Jacobians, LU,
    Newton iterations, time, error; then DOPRI5's time over Radau's per problem."""
    table = text_table(rows, [("problem", "problem", ""),
                              ("tool", lambda r: f"{r['tool']} {r['method']}", ""),
                              ("coordinates", "coordinates", ""), ("steps", "steps", ""),
                              ("rejected", "rejected", ""), ("rhs", "rhs", ""),
                              ("jac", "jacobians", ""), ("lu", "lu_decompositions", ""),
                              ("newton", "newton_iterations", ""),
                              ("time [s]", "wall_time_median", ".3f"),
                              ("end error", "end_error", ".2e")])
    lines = [table]
    for problem in dict.fromkeys(r["problem"] for r in rows):
        wall = {r["method"]: r["wall_time_median"] for r in rows
                if r["problem"] == problem and r["tool"] == "natcoord"}
        if {"dopri5", "radau"} <= wall.keys():
            lines.append(f"{problem}: DOPRI5 / Radau wall time = "
                         f"{wall['dopri5'] / wall['radau']:.2f}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    configure(parser)
    return run(parser.parse_args(argv))
