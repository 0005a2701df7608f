"""Speed of the compiled core: the kernels, one right-hand side, and whole runs,
as issue 22's targets state them (ratios in one run).

``rhs``: one right-hand side of the compiled core (``engine.rhs``: constraints, forces,
drives, block factorization and solve) in microseconds, called from Python with the
stepper's packed arguments (``core``), and through ``DOPRI5.rhs`` (``stepper``: plus the
Python method and a new output array), for the six-bar, chain(8) and the driven hexapod
(best of ``--repeat`` means); ``six-bar+python-torque``: the six-bar with a torque given
as a Python callable (returning zeros), which the core calls back at every evaluation.

``forward``: chain(8) ``nc.forward(model, data)`` and, where MuJoCo is installed,
``mj_forward`` on the same chain at the same state (``natcoord_bench.peers``); ``ratio``
is natcoord's time over MuJoCo's (target ≤ 2).

``factor+solve``: the block factorization with partitioning and one solve (``engine.factor``
and ``engine.solve_kernel`` on the stepper's buffers) of the six-bar, chain(8), the
driven hexapod and chain(512): µs, the floating-point operations of one factorization
and solve (``BlockPlan.flops()``, the count of ``scaling.py``'s ``block_flops``) and
GFlop/s.

``simulate``: wall time of :func:`natcoord.simulate` (median of ``--repeat``) for the
six-bar, 10 s at ``--rtol`` (1e-8), every step and 1001 outputs, the driven hexapod,
10 s at ``--hexapod-rtol`` (1e-6) with 1001 outputs, and the six-bar with 1001 outputs
and a torque given as a Python callable (``six-bar+python-torque``: the core calls it
back at every stage); ``driver`` is ``chunked``: the core's advance loop (many steps,
outputs and checks per call, :meth:`~natcoord.integrate.stepper.CoreStepper.advance`),
the only driver since the Python per-step loop was removed (its last measurement, in
data/core_speed.csv of 2026-11-25 15:23: 4.6× slower on the six-bar with 1001
outputs). ``realtime`` is simulated over wall time, ``core_ms`` the part of a run spent
in the core's ``advance`` (the rest is Python: set-up, records, solution).
Writes ``data/core_speed.csv``.
"""
from __future__ import annotations

import argparse
import statistics
import time
from contextlib import contextmanager

import numpy as np

import natcoord as nc
from natcoord.core import engine
from natcoord.integrate.simulate import simulate
from natcoord.integrate.stepper import DOPRI5
from natcoord.linalg.blockldl import block_plan
from natcoord.model.frozen import State
from natcoord.models import chain, hexapod, six_bar
from natcoord.study.records import write_csv

COLUMNS = ("measure", "model", "outputs", "driver", "value", "unit", "ratio", "steps", "rhs",
           "flops", "gflops", "realtime", "core_ms")


def best_mean(function, count, repeat):
    """The best of ``repeat`` means over ``count`` calls of ``function()`` [s]."""
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(count):
            function()
        best = min(best, (time.perf_counter() - t0) / count)
    return best


def rhs_microseconds(model, count=2000, repeat=20):
    """``(core call, stepper.rhs)``: the best of ``repeat`` means over ``count`` calls [µs]."""
    st = DOPRI5(model, 1.0)
    y, W1, out, hooks = st.y.copy(), st._W1, np.empty(st.y.size), st._hooks
    core = stepper = np.inf
    for _ in range(repeat):           # alternated: a change of load hits both alike
        core = min(core, best_mean(lambda: engine.rhs(*st._packed, hooks, 0.0, y, W1, 0, out),
                                   count, 1))
        stepper = min(stepper, best_mean(lambda: st.rhs(0.0, y), max(count // 10, 1), 1))
    return core * 1e6, stepper * 1e6


def factor_solve(model, count, repeat):
    """``(µs, flops)`` of one block factorization and one solve on the stepper's buffers
    (the state's Jacobian and right-hand side, as ``engine.rhs`` left them)."""
    st = DOPRI5(model, 1.0)
    pk, S = st._packed, st._S
    engine.rhs(*pk, None, 0.0, st.y.copy(), st._W1, 0, np.empty(st.y.size))
    F = S.F.ravel()

    def once():
        engine.factor(pk[1], pk[2], pk[3])
        engine.solve_kernel(F, S.s, pk[2], pk[3], S.x, S.lam)
    return best_mean(once, count, repeat) * 1e6, block_plan(model).flops()


def forward_rows(n, repeat):
    """chain(n): ``nc.forward`` and, if MuJoCo imports, ``mj_forward`` at the same state."""
    from natcoord_bench import peers as pe
    model = chain(n).build()
    q, qd = np.full(n, pe.ANGLE), 0.1 * np.ones(n)
    p, v, _, _ = pe.chain_state(n, q, qd)
    data = nc.Data(model, State(0.0, p, v))
    ours = lambda: nc.forward(model, data)            # noqa: E731
    theirs = None
    found, _ = pe.available_peers()
    if "mujoco" in found:
        mujoco = found["mujoco"]
        m = pe.mujoco_chain(mujoco, n)
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = q, qd
        theirs = lambda: mujoco.mj_forward(m, d)      # noqa: E731
    t_ours = t_theirs = np.inf
    for _ in range(repeat):                           # alternated, best of each
        t_ours = min(t_ours, best_mean(ours, 2000, 1))
        if theirs is not None:
            t_theirs = min(t_theirs, best_mean(theirs, 2000, 1))
    rows = [dict(measure="forward", model=f"chain{n}", driver="nc.forward", value=t_ours * 1e6,
                 unit="us", ratio=t_ours / t_theirs if theirs is not None else "")]
    if theirs is not None:
        rows.append(dict(measure="forward", model=f"chain{n}", driver="mj_forward",
                         value=t_theirs * 1e6, unit="us", ratio=1.0))
    return rows


@contextmanager
def core_clock():
    """Seconds spent in ``engine.advance`` while inside (a list: [seconds])."""
    spent, advance = [0.0], engine.advance

    def timed(*args):
        t0 = time.perf_counter()
        try:
            return advance(*args)
        finally:
            spent[0] += time.perf_counter() - t0
    engine.advance = timed
    try:
        yield spent
    finally:
        engine.advance = advance


def wall_time(model, t_end, rtol, t_eval, repeat):
    """``(median wall time [s], median core time [s], solution)`` of ``repeat`` runs after
    an untimed one."""
    simulate(model, min(t_end, 0.05), rtol=rtol)
    times, cores = [], []
    for _ in range(repeat):
        with core_clock() as spent:
            t0 = time.perf_counter()
            sol = simulate(model, t_end, rtol=rtol, t_eval=t_eval)
            times.append(time.perf_counter() - t0)
        cores.append(spent[0])
    return statistics.median(times), statistics.median(cores), sol


def configure(parser):
    parser.add_argument("--t-end", type=float, default=10.0, help="simulated time [s]")
    parser.add_argument("--rtol", type=float, default=1e-8, help="the six-bar's tolerance")
    parser.add_argument("--hexapod-rtol", type=float, default=1e-6,
                        help="the driven hexapod's tolerance")
    parser.add_argument("--outputs", type=int, default=1001, help="t_eval points")
    parser.add_argument("--repeat", type=int, default=5, help="runs; the median is reported")
    parser.add_argument("--out", default="data/core_speed.csv", help="CSV file")


def run(args):
    rows = []
    six, c8, hexd = six_bar().build(), chain(8).build(), hexapod(scenario="driven").build()
    mech = six_bar()
    mech.add_torque(mech.bodies[1].name, lambda t, state: (0.0, 0.0, 0.0))
    six_python = mech.build()
    for name, model in (("six-bar", six), ("six-bar+python-torque", six_python),
                        ("chain8", c8), ("hexapod-driven", hexd)):
        core, stepper = rhs_microseconds(model)
        for where, value in (("core", core), ("stepper", stepper)):
            rows.append(dict(measure="rhs", model=name, driver=where, value=value, unit="us"))
            print(f"rhs {name} from {where}: {value:.2f} µs")
    for row in forward_rows(8, 4 * args.repeat):
        rows.append(row)
        print(f"forward {row['model']} {row['driver']}: {row['value']:.2f} µs"
              + (f", {row['ratio']:.2f}× MuJoCo" if row["driver"] == "nc.forward"
                 and row["ratio"] != "" else ""))
    for name, model, count in (("six-bar", six, 2000), ("chain8", c8, 2000),
                               ("hexapod-driven", hexd, 500), ("chain512", chain(512).build(), 20)):
        us, flops = factor_solve(model, count, 4 * args.repeat)
        rows.append(dict(measure="factor+solve", model=name, driver="core", value=us, unit="us",
                         flops=flops, gflops=flops / us * 1e-3))
        print(f"factor+solve {name}: {us:.2f} µs, {flops} flops, {flops / us * 1e-3:.2f} GFlop/s")
    t_eval = np.linspace(0, args.t_end, args.outputs)
    cases = [("six-bar", six, args.rtol, None), ("six-bar", six, args.rtol, t_eval),
             ("six-bar+python-torque", six_python, args.rtol, t_eval),
             ("hexapod-driven", hexd, args.hexapod_rtol, t_eval)]
    for name, model, rtol, outputs in cases:
        seconds, core, sol = wall_time(model, args.t_end, rtol, outputs, args.repeat)
        row = dict(measure="simulate", model=name,
                   outputs="steps" if outputs is None else outputs.size, driver="chunked",
                   value=seconds * 1e3, unit="ms", steps=sol.stats["steps"],
                   rhs=sol.stats["rhs"], realtime=args.t_end / seconds, core_ms=core * 1e3)
        rows.append(row)
        print(f"simulate {name} (rtol {rtol:g}, {row['outputs']} outputs): "
              f"{row['value']:.1f} ms, {row['realtime']:.0f}× real time, "
              f"{row['core_ms']:.1f} ms in the core")
    path = write_csv(args.out, [{c: r.get(c, "") for c in COLUMNS} for r in rows], COLUMNS,
                     f"python benchmarks/core_speed.py --t-end {args.t_end:g} --rtol "
                     f"{args.rtol:g} --hexapod-rtol {args.hexapod_rtol:g} --outputs "
                     f"{args.outputs} --repeat {args.repeat}")
    print(f"written to {path}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    configure(parser)
    return run(parser.parse_args(argv))
