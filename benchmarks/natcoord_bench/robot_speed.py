"""One forward dynamics call on real robots: natcoord against Pinocchio's ABA.

For the example-robot-data URDFs of issue 22's target (ur5, panda, solo12 with a
free-flyer root), at ``--states`` random states (``pin.integrate`` from neutral,
random rates, seeded), in one process and alternated so that a change of load
hits both alike:

* ``forward``: ``nc.forward(model, data)`` on preallocated :class:`nc.Data`
  (natural-coordinate accelerations and multipliers), best of ``--repeat``
  means of ``--count`` calls [µs];
* ``forward+qdd``: the same followed by ``data.qdd`` (joint accelerations: the
  comparable output to ABA's) [µs];
* ``aba``: ``pinocchio.aba(model, data, q, v, τ)`` with the URDF joint dampers' torque
  ``τ = −c q̇`` (which natcoord models and ``aba`` leaves out) [µs].

``ratio`` is natcoord's time over ABA's (issue 22's target: ``forward`` ≤ 3).
Each state's joint accelerations are also compared (``max_rel``: ‖q̈_nc − q̈_aba‖∞ /
‖q̈_aba‖∞), so a fast wrong answer cannot pass unnoticed. Writes
``data/robot_speed.csv``. Needs ``pin`` and ``example-robot-data``
(``pip install natcoord[peers,models]``).
"""
from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path

import numpy as np

import natcoord as nc
from natcoord.study.records import write_csv

from .core_speed import best_mean

ROBOTS = {"ur5": ("ur_description/urdf/ur5_robot.urdf", False),
          "panda": ("panda_description/urdf/panda.urdf", False),
          "solo12": ("solo_description/robots/solo12.urdf", True)}
COLUMNS = ("robot", "bodies", "nv", "measure", "microseconds", "ratio", "max_rel")


def robots_folder():
    """example-robot-data's robot folder, or None when it is not installed."""
    try:
        return Path(metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots"))
    except metadata.PackageNotFoundError:
        return None


def measure(pin, name, path, floating, states, count, repeat, seed):
    """The rows of one robot: forward, forward+qdd and aba at ``states`` random states."""
    model = nc.load_urdf(path, floating_base=floating).build()
    pm = pin.buildModelFromUrdf(str(path), *([pin.JointModelFreeFlyer()] if floating else []))
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    times = {"forward": np.inf, "forward+qdd": np.inf, "aba": np.inf}
    worst = 0.0
    for _ in range(states):
        q = pin.integrate(pm, pin.neutral(pm), rng.uniform(-1.0, 1.0, pm.nv))
        qd = rng.standard_normal(pm.nv)
        # natcoord models the URDF's <dynamics damping> (a joint damper); Pinocchio reads
        # it into model.damping, which aba leaves out: give aba the damper's torque
        tau = -np.asarray(pm.damping) * qd
        data = nc.Data(model, nc.joint_state(model, q, qd))
        nc.forward(model, data)
        expected = pin.aba(pm, pd, q, qd, tau)
        worst = max(worst, np.abs(data.qdd - expected).max() / np.abs(expected).max())
        for _ in range(repeat):          # alternated, one mean each per round
            times["forward"] = min(times["forward"],
                                   1e6 * best_mean(lambda: nc.forward(model, data), count, 1))
            times["forward+qdd"] = min(times["forward+qdd"], 1e6 * best_mean(
                lambda: (nc.forward(model, data), data.qdd), count, 1))
            times["aba"] = min(times["aba"],
                               1e6 * best_mean(lambda: pin.aba(pm, pd, q, qd, tau), count, 1))
    return [dict(robot=name, bodies=model.n_bodies, nv=pm.nv, measure=measure_name,
                 microseconds=us, ratio=us / times["aba"], max_rel=worst)
            for measure_name, us in times.items()]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--states", type=int, default=3, help="random states per robot")
    parser.add_argument("--count", type=int, default=2000, help="calls per timed mean")
    parser.add_argument("--repeat", type=int, default=5, help="timed means per state; best kept")
    parser.add_argument("--seed", type=int, default=22, help="seed of the random states")
    parser.add_argument("--out", default="data/robot_speed.csv", help="CSV file")
    args = parser.parse_args(argv)
    for name in ("states", "count", "repeat"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    try:
        import pinocchio as pin
    except ImportError:
        print("robot_speed: Pinocchio is not installed (pip install natcoord[peers]); "
              "nothing measured", file=sys.stderr)
        return 1
    folder = robots_folder()
    if folder is None:
        print("robot_speed: example-robot-data is not installed (pip install "
              "natcoord[models]); nothing measured", file=sys.stderr)
        return 1
    table = []
    for name, (relative, floating) in ROBOTS.items():
        rows = measure(pin, name, folder / relative, floating, args.states, args.count,
                       args.repeat, args.seed)
        table += rows
        for row in rows:
            print(f"{name:7s} {row['measure']:12s} {row['microseconds']:7.2f} µs  "
                  f"{row['ratio']:5.2f} × aba   (q̈ agrees to {row['max_rel']:.1e})")
    command = (f"python benchmarks/robot_speed.py --states {args.states} --count {args.count} "
               f"--repeat {args.repeat} --seed {args.seed}")
    print(f"written to {write_csv(args.out, table, COLUMNS, command)}")
    return 0
