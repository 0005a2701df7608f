"""natcoord against its peers — Pinocchio, MuJoCo, Exudyn — on identical problems.

Three experiments, one run, one CSV (``data/peers.csv``), one figure:

(a) ``call``: one forward-dynamics evaluation of ``chain(n)`` (docs/benchmarks.md:
    rods 1 kg, 0.5 m, square section 0.05 m, revolute axes alternating x, y,
    joint angles 0.1 rad, gravity −z): natcoord ``accelerations`` with a
    reused Workspace, its bare numeric phase (factor + solve) and
    ``nc.forward(model, data)``, the compiled right-hand side that
    ``simulate`` evaluates (``natcoord-forward``; the three timed by
    :func:`natcoord_bench.scaling.measure`), Pinocchio's ABA
    (``pin.aba``) and MuJoCo's ``mj_forward``. The peers' models are built
    here from the same rod data (MuJoCo from an MJCF string; past the XML
    parser's nesting limit the same model through ``mujoco.MjSpec``). Before
    timing, the physics is checked: natcoord's joint accelerations — from
    the bodies' angular accelerations, ``q̈_i = a_i · (α_i − α_parent)`` —
    against each peer's, at q = 0.1 rad and random joint velocities; the
    largest difference is the row's ``check``.
(b) ``bricard``: the 6-bar (IFToMM A04, ``six_bar()``), 10 s: the largest
    error of P3 against a natcoord reference (``rtol = proj_tol = 1e-12``)
    and the wall time, over a sweep of each tool's accuracy knob — natcoord
    ``rtol`` (DOPRI5 with projection); Exudyn's number of steps (implicit
    generalized-α, index 3, ``ρ∞ = 1``; rigid bodies with Euler parameters
    and revolute joints; the redundant loop constraint needs its dense
    solver with ``ignoreSingularJacobian``); MuJoCo's timestep (RK4; the
    loop is closed by two soft ``connect`` equalities on the joint axis,
    tightened to ``solref = (2 dt, 1)``, ``solimp = (0.9999, 0.9999, …)``,
    the stiffest its ``refsafe`` rule allows). The time to reach an
    accuracy is the fastest run whose error is at or below it; a level no
    run reached within ``--max-seconds`` is "not reached", never estimated.
(c) ``chain``: chain(512) for 1 s at matched accuracy: the worst joint-point
    error ≤ 2.5e-6 m against a natcoord reference at ``rtol = 1e-12`` —
    natcoord (DOPRI5, rtol sweep), Pinocchio (ABA in a fixed-step RK4 loop
    in Python: Pinocchio has no time integrator of its own) and MuJoCo
    (RK4): each refines its knob until the target is met.

Rows have ``COLUMNS``; wall times are medians of ``--repeat`` runs (calls:
medians of samples of many calls). A peer that is not installed is left out
with a message.
"""
from __future__ import annotations

import importlib
import sys
import time

import numpy as np

from natcoord import models
from natcoord.model.body import rod_inertia
from natcoord.dynamics.workspace import accelerations
from natcoord.integrate.simulate import simulate
from natcoord.model.frozen import State
from natcoord.models.families import JOINT_AXES, ANGLE, LENGTH, MASS, SECTION, rotation
from natcoord.models.six_bar import P3, RODS, rod_frame
from . import scaling
from .chain_simulation import joint_points
from natcoord.study.records import Progress, write_csv
from natcoord.study.tolerance import Reference, measure

COLUMNS = ("experiment", "tool", "method", "n", "knob", "knob_value", "t_end", "repeat",
           "time_median_s", "time_min_s", "error_m", "steps", "check", "note")
PEERS = {"pinocchio": "pinocchio", "mujoco": "mujoco", "exudyn": "exudyn"}
GRAVITY = 9.81
LEVELS = (1e-4, 1e-6, 1e-8)          # m: Bricard accuracy levels
CHAIN_TARGET = 2.5e-6                # m: chain(512) worst joint-point error
MJCF_MAX_DEPTH = 400                 # MuJoCo's XML parser refuses deeper nesting (~500)
#: the largest chain each peer is given, and why: MuJoCo 3–4 compile body trees
#: up to depth 1023 (at 1024 ``MjSpec.compile`` fails, "depth limit exceeded in
#: signature computation", without an address-space limit only after
#: exhausting memory); Pinocchio's ``createData`` allocates O(n³) memory (the
#: second-order derivative tensors): it ran out of 16 GB at n = 1000
PEER_MAX_N = {"mujoco": (1023, "MuJoCo compiles body trees up to depth 1023"),
              "pinocchio": (512, "pin.Model.createData needs O(n³) memory (out of 16 GB "
                                 "at n = 1000)")}
#: chain size of the physics cross-check for larger n (within both peers' limits)
CHECK_N = 512


def available_peers():
    """``{name: module}`` of the installed peers and ``{name: reason}`` of the others."""
    found, missing = {}, {}
    for name, module in PEERS.items():
        try:
            found[name] = importlib.import_module(module)
        except Exception as err:       # noqa: BLE001 -- any import failure: leave it out
            missing[name] = f"{type(err).__name__}: {err}"
    return found, missing


def _timed_median(function, repeat, sample_seconds=0.02):
    """Median and minimum time [s] of one ``function()`` call (samples of many calls)."""
    function()
    once = scaling._timed(function, 1)
    inner = max(1, int(sample_seconds / max(once, 1e-9)))
    times = [scaling._timed(function, inner) for _ in range(repeat)]
    return float(np.median(times)), min(times)


# =================================================================== chain(n)
def chain_state(n, q, qd):
    """natcoord ``(p, v)`` of chain(n) at joint angles ``q`` and rates ``qd`` (n,).

    Joint k turns rod k about ``JOINT_AXES[k % 2]`` of rod k−1's frame (ground's for
    k = 0); q = 0.1 is the reference configuration. Returns also the world
    joint axes ``(n, 3)`` and angular velocities ``(n, 3)``.
    """
    p, v = np.zeros((n, 4, 3)), np.zeros((n, 4, 3))
    axes, omegas = np.zeros((n, 3)), np.zeros((n, 3))
    R, top, omega, top_velocity = np.eye(3), np.zeros(3), np.zeros(3), np.zeros(3)
    for k in range(n):
        axis = R @ JOINT_AXES[k % 2]
        R = R @ rotation(JOINT_AXES[k % 2], q[k])
        omega = omega + axis * qd[k]
        p[k, 0], p[k, 1:] = top, R.T
        v[k, 0], v[k, 1:] = top_velocity, np.cross(omega, R.T)
        axes[k], omegas[k] = axis, omega
        bottom = top + R @ np.array([0.0, 0.0, -LENGTH])
        top_velocity = top_velocity + np.cross(omega, bottom - top)
        top = bottom
    return p.ravel(), v.ravel(), axes, omegas


def joint_accelerations(a, p, v, axes):
    """Joint accelerations (n,) from natcoord accelerations ``a`` (12 n,).

    ë_k = α × e_k + ω × (ω × e_k) for each body axis, so
    ``α = ½ Σ_k e_k × (ë_k − ω × (ω × e_k))``, and ``q̈_i = a_i · (α_i − α_{i−1})``
    (the axis turns with the parent, so its rate term is ⊥ a_i).
    """
    E = p.reshape(-1, 4, 3)[:, 1:]
    Ed, Edd = v.reshape(-1, 4, 3)[:, 1:], a.reshape(-1, 4, 3)[:, 1:]
    # ω from ė_k = ω × e_k: ω = ½ Σ e_k × ė_k
    omega = 0.5 * np.cross(E, Ed).sum(axis=1)
    rest = Edd - np.cross(omega[:, None, :], np.cross(omega[:, None, :], E))
    alpha = 0.5 * np.cross(E, rest).sum(axis=1)
    relative = alpha - np.vstack([np.zeros(3), alpha[:-1]])
    return np.einsum("ij,ij->i", axes, relative)


def pinocchio_chain(pin, n):
    """Pinocchio model of chain(n): revolute RX/RY joints, rods hanging along −z."""
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, 0.0, -GRAVITY]), np.zeros(3))
    inertia = pin.Inertia(MASS, np.array([0.0, 0.0, -0.5 * LENGTH]),
                          rod_inertia(MASS, LENGTH, SECTION, axis=2))
    parent = 0
    for k in range(n):
        joint = pin.JointModelRX() if k % 2 == 0 else pin.JointModelRY()
        offset = np.zeros(3) if k == 0 else np.array([0.0, 0.0, -LENGTH])
        parent = model.addJoint(parent, joint, pin.SE3(np.eye(3), offset), f"joint{k + 1}")
        model.appendBodyToJoint(parent, inertia, pin.SE3.Identity())
    return model


def _f(values):
    return " ".join(f"{x:.17g}" for x in np.ravel(values))


def chain_mjcf(n, timestep=0.002):
    """MJCF of chain(n): nested bodies at the rods' tops, hinge joints, no geoms."""
    inertia = np.diag(rod_inertia(MASS, LENGTH, SECTION, axis=2))
    body = ""
    for k in range(n - 1, -1, -1):
        pos = np.zeros(3) if k == 0 else np.array([0.0, 0.0, -LENGTH])
        body = (f'<body name="rod{k + 1}" pos="{_f(pos)}"><joint name="joint{k + 1}" '
                f'type="hinge" axis="{_f(JOINT_AXES[k % 2])}"/><inertial pos="0 0 {-0.5 * LENGTH!r}" '
                f'mass="{MASS!r}" diaginertia="{_f(inertia)}"/>{body}</body>')
    return (f'<mujoco model="chain({n})"><option timestep="{timestep!r}" integrator="RK4" '
            f'gravity="0 0 {-GRAVITY!r}"><flag contact="disable"/></option>'
            f'<worldbody>{body}</worldbody></mujoco>')


def mujoco_chain(mujoco, n, timestep=0.002, spec=None):
    """MuJoCo model of chain(n): from ``chain_mjcf`` or, deeper than the XML parser
    allows (or with ``spec=True``), the same model through ``mujoco.MjSpec``."""
    if spec is None:
        spec = n > MJCF_MAX_DEPTH
    if not spec:
        return mujoco.MjModel.from_xml_string(chain_mjcf(n, timestep))
    s = mujoco.MjSpec()
    s.option.timestep = timestep
    s.option.integrator = mujoco.mjtIntegrator.mjINT_RK4
    s.option.gravity = [0.0, 0.0, -GRAVITY]
    s.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    inertia = np.diag(rod_inertia(MASS, LENGTH, SECTION, axis=2))
    parent = s.worldbody
    for k in range(n):
        parent = parent.add_body(name=f"rod{k + 1}",
                                 pos=[0.0, 0.0, 0.0 if k == 0 else -LENGTH],
                                 mass=MASS, ipos=[0.0, 0.0, -0.5 * LENGTH],
                                 inertia=list(inertia), explicitinertial=True)
        parent.add_joint(name=f"joint{k + 1}", type=mujoco.mjtJoint.mjJNT_HINGE,
                         axis=list(JOINT_AXES[k % 2]))
    return s.compile()


def chain_cross_check(n, peers, seed=0):
    """Largest |q̈_natcoord − q̈_peer| [rad/s²] per peer, and max |q̈|, at one state."""
    rng = np.random.default_rng(seed)
    q, qd = np.full(n, ANGLE), 0.5 * rng.standard_normal(n)
    model = models.chain(n).build()
    p, v, axes, _ = chain_state(n, q, qd)
    if not np.allclose(p, model.p_reference, atol=1e-12):
        raise AssertionError("chain_state(q = 0.1) is not natcoord's reference configuration")
    a, _, _ = accelerations(model, State(0.0, p, v))
    qdd = joint_accelerations(a, p, v, axes)
    diffs = {}
    if "pinocchio" in peers:
        pin = peers["pinocchio"]
        pm = pinocchio_chain(pin, n)
        diffs["pinocchio"] = float(np.abs(pin.aba(pm, pm.createData(), q, qd, np.zeros(n))
                                          - qdd).max())
    if "mujoco" in peers:
        mujoco = peers["mujoco"]
        m = mujoco_chain(mujoco, n)
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = q, qd
        mujoco.mj_forward(m, d)
        diffs["mujoco"] = float(np.abs(d.qacc - qdd).max())
    return diffs, float(np.abs(qdd).max())


def call_rows(ns, peers, repeat, max_seconds, bar):
    """Experiment (a): time per forward-dynamics call at each n."""
    rows, done = [], {}
    for n in ns:
        diffs, scale = chain_cross_check(min(n, CHECK_N), peers)
        model = models.chain(n).build()
        common = dict(experiment="call", n=n, knob="", knob_value=np.nan, t_end=np.nan,
                      repeat=repeat, error_m=np.nan, steps=np.nan)
        (numeric, numeric_min), (call, call_min), (forward, forward_min), _ = scaling.measure(
            model, "block", repeat)
        nc_check = f"natcoord q̈ up to {scale:.3g} rad/s²"
        rows.append(dict(common, tool="natcoord", method="accelerations (block, Workspace)",
                         time_median_s=call, time_min_s=call_min, check=0.0, note=nc_check))
        rows.append(dict(common, tool="natcoord-numeric", method="block factor + solve",
                         time_median_s=numeric, time_min_s=numeric_min, check=0.0, note=""))
        rows.append(dict(common, tool="natcoord-forward", method="nc.forward(model, data) "
                         "(the core's right-hand side, as simulate evaluates it)",
                         time_median_s=forward, time_min_s=forward_min, check=0.0, note=""))
        q, qd = np.full(n, ANGLE), 0.1 * np.ones(n)
        for name in ("pinocchio", "mujoco"):
            if name not in peers:
                continue
            previous = done.get(name)
            limit, why = PEER_MAX_N[name]
            if n > limit:
                rows.append(dict(common, tool=name, method="", time_median_s=np.nan,
                                 time_min_s=np.nan, check=np.nan,
                                 note=f"not attempted beyond n = {limit}: {why}"))
                continue
            if previous and previous[1] * (n / previous[0]) ** max(previous[2], 1.0) > max_seconds:
                rows.append(dict(common, tool=name, method="", time_median_s=np.nan,
                                 time_min_s=np.nan, check=np.nan,
                                 note=f"skipped: one call extrapolated beyond {max_seconds:g} s"))
                continue
            if name == "pinocchio":
                pin = peers[name]
                pm = pinocchio_chain(pin, n)
                data, tau = pm.createData(), np.zeros(n)

                def call_peer():
                    pin.aba(pm, data, q, qd, tau)
                method = "pin.aba"
            else:
                mujoco = peers[name]
                m = mujoco_chain(mujoco, n)
                d = mujoco.MjData(m)
                d.qpos[:], d.qvel[:] = q, qd

                def call_peer():
                    mujoco.mj_forward(m, d)
                method = "mj_forward" + (" (model via MjSpec)" if n > MJCF_MAX_DEPTH else "")
            med, low = _timed_median(call_peer, repeat)
            check = diffs.get(name, np.nan)
            note = "" if n <= CHECK_N else f"physics check at n={CHECK_N}"
            rows.append(dict(common, tool=name, method=method, time_median_s=med,
                             time_min_s=low, check=check, note=note))
            growth = np.log(med / previous[1]) / np.log(n / previous[0]) if previous else 1.0
            done[name] = (n, med, growth)
        summary = ", ".join(f"{r['tool']} {1e6 * r['time_median_s']:.1f} µs"
                            for r in rows if r["n"] == n)
        checks = ", ".join(f"{k} {v:.1e}" for k, v in diffs.items())
        bar.advance(f"call n={n}: {summary}; |Δq̈| {checks}")
    return rows


# =================================================================== Bricard
def mujoco_bricard_mjcf(timestep):
    """MJCF of the 6-bar: rods 1–5 nested with hinges; joint 6 to ground closed by two
    ``connect`` equalities on its axis (x through (0, 0, 1)), tightened (see module doc)."""
    body = ""
    for k in range(len(RODS) - 1, -1, -1):
        start, end, axis = (np.asarray(x, float) for x in RODS[k])
        parent = np.asarray(RODS[k - 1][0], float) if k else np.zeros(3)
        length = np.linalg.norm(end - start)
        d = (end - start) / length
        I = MASS / 12 * ((length**2 + 0.1**2) * (np.eye(3) - np.outer(d, d))
                         + 2 * 0.1**2 * np.outer(d, d))
        site = f'<site name="P3" pos="{_f(np.asarray(P3) - start)}"/>' if k == 1 else ""
        body = (f'<body name="rod{k + 1}" pos="{_f(start - parent)}"><joint name="joint{k + 1}" '
                f'type="hinge" axis="{_f(axis)}"/><inertial pos="{_f(0.5 * (end - start))}" '
                f'mass="{MASS!r}" fullinertia="{_f([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])}"/>'
                f'{site}{body}</body>')
    soft = f'solref="{2 * timestep!r} 1" solimp="0.9999 0.9999 0.001 0.5 2"'
    rod5 = np.asarray(RODS[4][0], float)
    anchors = [np.array([0.0, 0.0, 1.0]) - rod5, np.array([0.5, 0.0, 1.0]) - rod5]
    equality = "".join(f'<connect body1="rod5" anchor="{_f(a)}" {soft}/>' for a in anchors)
    return (f'<mujoco model="six-bar"><option timestep="{timestep!r}" integrator="RK4" '
            f'gravity="0 {-GRAVITY!r} 0" tolerance="1e-14" iterations="100">'
            f'<flag contact="disable"/></option><worldbody>{body}</worldbody>'
            f'<equality>{equality}</equality></mujoco>')


def run_mujoco_bricard(mujoco, timestep, t_end, every=0.01):
    """(wall time, output times, P3 (k, 3), steps) of one MuJoCo run."""
    m = mujoco.MjModel.from_xml_string(mujoco_bricard_mjcf(timestep))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    per = max(1, int(round(every / timestep)))
    chunks = int(round(t_end / (per * timestep)))
    times, points = [0.0], [d.site_xpos[0].copy()]
    start = time.perf_counter()
    for _ in range(chunks):
        mujoco.mj_step(m, d, nstep=per)
        times.append(d.time)
        points.append(d.site_xpos[0].copy())
    return time.perf_counter() - start, np.array(times), np.array(points), per * chunks


def _exudyn_set(settings, new, old, value):
    """Set an Exudyn simulation setting by its current name, else its pre-1.12 name."""
    for path in (new, old):
        obj, *attrs = [settings] + path.split(".")
        try:
            for a in attrs[:-1]:
                obj = getattr(obj, a)
            setattr(obj, attrs[-1], value)
            return
        except AttributeError:
            continue
    raise AttributeError(f"Exudyn has neither {new} nor {old}")


def run_exudyn_bricard(exu, steps, t_end, every=0.01):
    """(wall time, output times, P3 (k, 3), steps) of one Exudyn run.

    Rigid bodies (``CreateRigidBody``, Euler parameters) and revolute joints
    (``CreateRevoluteJoint``) in the reference configuration; the loop's
    redundant constraint needs the dense solver with
    ``linearSolver.ignoreSingularJacobian = True`` (Exudyn's documented option
    for redundant constraints, its example ``fourBarMechanism3D``).
    """
    import warnings

    from exudyn.utilities import InertiaCuboid
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="exudyn")
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    ground = mbs.CreateGround()
    previous, bodies = ground, []
    for start, end, axis in RODS:
        origin, R = rod_frame(start, end)
        length = float(np.linalg.norm(np.subtract(end, start)))
        inertia = InertiaCuboid(density=MASS / (length * 0.1 * 0.1),
                                sideLengths=[length, 0.1, 0.1]).Translated([0.5 * length, 0, 0])
        body = mbs.CreateRigidBody(inertia=inertia, referencePosition=[float(x) for x in origin],
                                   referenceRotationMatrix=R, gravity=[0.0, -GRAVITY, 0.0])
        mbs.CreateRevoluteJoint(itemNumbers=[previous, body],
                                position=[float(x) for x in start],
                                axis=[float(x) for x in axis])
        previous = body
        bodies.append(body)
    mbs.CreateRevoluteJoint(itemNumbers=[bodies[-1], ground], position=[0.0, 0.0, 1.0],
                            axis=[1.0, 0.0, 0.0])
    origin, R = rod_frame(*RODS[1][:2])
    sensor = mbs.AddSensor(exu.itemInterface.SensorBody(
        bodyNumber=bodies[1], localPosition=[float(x) for x in R.T @ (np.asarray(P3) - origin)],
        outputVariableType=exu.OutputVariableType.Position, storeInternal=True,
        writeToFile=False))
    mbs.Assemble()
    s = exu.SimulationSettings()
    s.timeIntegration.numberOfSteps = int(steps)
    s.timeIntegration.endTime = float(t_end)
    s.timeIntegration.verboseMode = 0
    s.timeIntegration.generalizedAlpha.spectralRadius = 1.0
    s.timeIntegration.newton.useModifiedNewton = True
    s.timeIntegration.newton.relativeTolerance = 1e-12
    s.timeIntegration.newton.absoluteTolerance = 1e-12
    _exudyn_set(s, "solution.file.write", "solutionSettings.writeSolutionToFile", False)
    _exudyn_set(s, "solution.sensors.writePeriod", "solutionSettings.sensorsWritePeriod",
                every)
    _exudyn_set(s, "linearSolver.solverType", "linearSolverType",
                exu.LinearSolverType.EigenDense)
    _exudyn_set(s, "linearSolver.ignoreSingularJacobian",
                "linearSolverSettings.ignoreSingularJacobian", True)
    _exudyn_set(s, "show.statistics", "displayStatistics", False)
    _exudyn_set(s, "show.computationTime", "displayComputationTime", False)
    start = time.perf_counter()
    ok = mbs.SolveDynamic(simulationSettings=s)
    wall = time.perf_counter() - start
    if ok is False:
        raise RuntimeError(f"Exudyn failed with {steps} steps")
    data = np.asarray(mbs.GetSensorStoredData(sensor))
    return wall, data[:, 0], data[:, 1:4], int(steps)


def bricard_rows(peers, t_end, rtols, exudyn_steps, mujoco_steps, repeat, max_seconds, bar):
    """Experiment (b): P3 error against wall time for each tool's sweep."""
    model = models.six_bar().build()
    reference = Reference(model, t_end)
    simulate(model, 0.05)                                       # warm-up, untimed
    bar.advance(f"bricard: reference, {reference.solution.stats['steps']} steps")
    common = dict(experiment="bricard", n=model.n_bodies, t_end=t_end, check=np.nan)
    rows = []
    for rtol in rtols:
        r = measure(model, rtol, 1e-10 if rtol >= 1e-10 else 1e-12, t_end, reference,
                    repeat=repeat)
        rows.append(dict(common, tool="natcoord", method="DOPRI5 + projection",
                         knob="rtol", knob_value=rtol, repeat=r["repeat"],
                         time_median_s=r["wall_time_median"], time_min_s=r["wall_time_min"],
                         error_m=r["output_error"], steps=r["steps"], note=""))
    bar.advance(f"bricard natcoord: {len(rows)} rtols")
    sweeps = []
    if "exudyn" in peers:
        sweeps.append(("exudyn", "generalized-α ρ∞=1 (index 3)", "steps", exudyn_steps,
                       lambda k: run_exudyn_bricard(peers["exudyn"], k, t_end)))
    if "mujoco" in peers:
        sweeps.append(("mujoco", "RK4, connect solref=(2dt,1) solimp=0.9999", "timestep",
                       [t_end / k for k in mujoco_steps],
                       lambda dt: run_mujoco_bricard(peers["mujoco"], dt, t_end)))
    for tool, method, knob, values, run in sweeps:
        for value in values:
            walls = []
            try:
                for _ in range(repeat):
                    wall, times, points, steps = run(value)
                    walls.append(wall)
                    if wall > max_seconds / 4:
                        break
            except Exception as err:        # noqa: BLE001 -- a peer's failure is a row
                rows.append(dict(common, tool=tool, method=method, knob=knob,
                                 knob_value=value, repeat=0, time_median_s=np.nan,
                                 time_min_s=np.nan, error_m=np.nan, steps=np.nan,
                                 note=f"failed: {type(err).__name__}: {err}"))
                continue
            error = float(np.linalg.norm(points - reference.point(times), axis=1).max())
            rows.append(dict(common, tool=tool, method=method, knob=knob, knob_value=value,
                             repeat=len(walls), time_median_s=float(np.median(walls)),
                             time_min_s=min(walls), error_m=error, steps=steps, note=""))
            if error <= LEVELS[-1] or np.median(walls) * 2.5 > max_seconds:
                break            # finest level reached, or the next run would be too long
        bar.advance(f"bricard {tool}: " + ", ".join(
            f"{r['error_m']:.1e} m in {r['time_median_s']:.2f} s" for r in rows
            if r["tool"] == tool))
    return rows


def time_to_accuracy(rows, tool, level):
    """Fastest median wall time of ``tool``'s rows with ``error_m <= level`` (NaN: none)."""
    ok = [r["time_median_s"] for r in rows if r["tool"] == tool and r["error_m"] <= level]
    return min(ok) if ok else float("nan")


# =================================================================== chain(512), 1 s
def rk4_pinocchio(pin, pm, q0, t_end, steps, outputs):
    """Fixed-step RK4 of ``q̈ = ABA(q, q̇)``; joint origins (outputs+1, n, 3) and wall time."""
    data = pm.createData()
    n = pm.nv
    tau = np.zeros(n)
    h = t_end / steps
    per = steps // outputs
    q, v = q0.copy(), np.zeros(n)
    out = np.zeros((outputs + 1, n, 3))

    def record(k):
        pin.forwardKinematics(pm, data, q)
        for j in range(1, n + 1):
            out[k, j - 1] = data.oMi[j].translation

    record(0)
    wall = 0.0
    for k in range(outputs):
        start = time.perf_counter()
        for _ in range(per):
            a1 = pin.aba(pm, data, q, v, tau).copy()
            v2 = v + 0.5 * h * a1
            a2 = pin.aba(pm, data, q + 0.5 * h * v, v2, tau).copy()
            v3 = v + 0.5 * h * a2
            a3 = pin.aba(pm, data, q + 0.5 * h * v2, v3, tau).copy()
            v4 = v + h * a3
            a4 = pin.aba(pm, data, q + h * v3, v4, tau).copy()
            q = q + h / 6 * (v + 2 * v2 + 2 * v3 + v4)
            v = v + h / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
        wall += time.perf_counter() - start
        record(k + 1)
    return wall, out


def rk4_mujoco(mujoco, m, q0, t_end, steps, outputs):
    """MuJoCo's RK4 with ``timestep = t_end / steps``; body origins and wall time."""
    m.opt.timestep = t_end / steps
    d = mujoco.MjData(m)
    d.qpos[:] = q0
    mujoco.mj_forward(m, d)
    per = steps // outputs
    out = [d.xpos[1:].copy()]
    wall = 0.0
    for _ in range(outputs):
        start = time.perf_counter()
        mujoco.mj_step(m, d, nstep=per)
        wall += time.perf_counter() - start
        out.append(d.xpos[1:].copy())
    return wall, np.array(out)


def chain_rows(peers, n, t_end, rtols, steps0, repeat, max_seconds, bar, outputs=50):
    """Experiment (c): each tool refined until the worst joint-point error ≤ CHAIN_TARGET."""
    model = models.chain(n).build()
    t_eval = np.linspace(0.0, t_end, outputs + 1)
    reference = joint_points(simulate(model, t_end, rtol=1e-12, proj_tol=1e-12,
                                      t_eval=t_eval))
    bar.advance(f"chain({n}): reference")
    common = dict(experiment="chain", n=n, t_end=t_end, check=np.nan)
    rows = []
    simulate(model, 0.01)                                           # warm-up
    for rtol in rtols:
        runs = [simulate(model, t_end, rtol=rtol, t_eval=t_eval) for _ in range(repeat)]
        walls = [s.stats["wall_time"] for s in runs]
        error = float(np.linalg.norm(joint_points(runs[-1]) - reference, axis=-1).max())
        rows.append(dict(common, tool="natcoord", method="DOPRI5 + projection (block)",
                         knob="rtol", knob_value=rtol, repeat=repeat,
                         time_median_s=float(np.median(walls)), time_min_s=min(walls),
                         error_m=error, steps=runs[-1].stats["steps"], note=""))
        if error <= CHAIN_TARGET:
            break
    q0 = np.full(n, ANGLE)
    integrators = []
    if "pinocchio" in peers:
        pin = peers["pinocchio"]
        pm = pinocchio_chain(pin, n)
        integrators.append(("pinocchio", "RK4 (Python loop) + pin.aba",
                            lambda k: rk4_pinocchio(pin, pm, q0, t_end, k, outputs)))
    if "mujoco" in peers:
        mujoco = peers["mujoco"]
        m = mujoco_chain(mujoco, n)
        integrators.append(("mujoco", "RK4 (mj_step)",
                            lambda k: rk4_mujoco(mujoco, m, q0, t_end, k, outputs)))
    for tool, method, run in integrators:
        steps = steps0
        while True:
            walls, out = [], None
            for _ in range(repeat):
                wall, out = run(steps)
                walls.append(wall)
                if wall > max_seconds / 4:
                    break
            error = float(np.linalg.norm(out - reference, axis=-1).max())
            rows.append(dict(common, tool=tool, method=method, knob="steps", knob_value=steps,
                             repeat=len(walls), time_median_s=float(np.median(walls)),
                             time_min_s=min(walls), error_m=error, steps=steps, note=""))
            if error <= CHAIN_TARGET:
                break
            if np.median(walls) * 2.5 > max_seconds:
                rows[-1]["note"] = f"target not reached within {max_seconds:g} s"
                break
            # RK4: error ∝ h⁴; aim a little past the target, at least double
            factor = max(2.0, 1.15 * (error / CHAIN_TARGET) ** 0.25)
            steps = int(np.ceil(steps * factor / outputs)) * outputs
        bar.advance(f"chain({n}) {tool}: {rows[-1]['error_m']:.2e} m in "
                    f"{rows[-1]['time_median_s']:.2f} s ({steps} steps)")
    return rows


# =================================================================== driver
def configure(parser):
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: small n, 1 s of the 6-bar, chain(16) (seconds)")
    parser.add_argument("--n", type=int, nargs="+", default=[8, 16, 64, 256, 512, 1024, 4096],
                        help="chain sizes for the per-call timing")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions (median)")
    parser.add_argument("--max-seconds", type=float, default=30.0,
                        help="budget per run: longer calls/runs are not attempted")
    parser.add_argument("--out", default="data/peers.csv", help="CSV file")
    parser.add_argument("--figure", default="paper/figures/peers.png", help="figure file")


def settings(args):
    if args.quick:
        return dict(ns=[8, 16], bricard_t=1.0, rtols=[1e-4, 1e-6, 1e-8],
                    exudyn_steps=[100, 1000], mujoco_steps=[100, 1000],
                    chain_n=16, chain_t=0.2, chain_rtols=[1e-6, 1e-7, 1e-8], steps0=50,
                    repeat=1, max_seconds=min(args.max_seconds, 10.0))
    return dict(ns=args.n, bricard_t=10.0,
                rtols=[1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11],
                exudyn_steps=[1000, 2000, 5000, 10000, 20000, 50000, 100000],
                mujoco_steps=[2000, 5000, 10000, 20000, 50000, 100000],
                chain_n=512, chain_t=1.0, chain_rtols=[1e-6, 5e-7, 2e-7, 1e-7, 5e-8],
                steps0=100, repeat=args.repeat, max_seconds=args.max_seconds)


def run(args):
    peers, missing = available_peers()
    for name, reason in missing.items():
        print(f"peers: {name} is not installed ({reason}); left out "
              f"(pip install 'natcoord[peers]')", file=sys.stderr)
    cfg = settings(args)
    bricard_peers = len(set(peers) & {"exudyn", "mujoco"})
    chain_peers = len(set(peers) & {"pinocchio", "mujoco"})
    bar = Progress(len(cfg["ns"]) + 2 + bricard_peers + 1 + chain_peers)
    start = time.perf_counter()
    rows = call_rows(cfg["ns"], peers, cfg["repeat"], cfg["max_seconds"], bar)
    rows += bricard_rows(peers, cfg["bricard_t"], cfg["rtols"], cfg["exudyn_steps"],
                         cfg["mujoco_steps"], cfg["repeat"], cfg["max_seconds"], bar)
    rows += chain_rows(peers, cfg["chain_n"], cfg["chain_t"], cfg["chain_rtols"], cfg["steps0"],
                       cfg["repeat"], cfg["max_seconds"], bar)
    versions = "; ".join(f"{name} {getattr(mod, '__version__', '?')}"
                         for name, mod in peers.items())
    command = ("python benchmarks/peers.py" + (" --quick" if args.quick else
               f" --n {' '.join(map(str, args.n))} --repeat {args.repeat}")
               + f" --max-seconds {args.max_seconds:g}; peers: {versions or 'none'}")
    path = write_csv(args.out, [{k: r.get(k, "") for k in COLUMNS} for r in rows], COLUMNS,
                     command)
    print(f"peers: {len(rows)} rows written to {path} in {time.perf_counter() - start:.0f} s")
    print(summary(rows))
    if args.figure:
        plot_peers(path, args.figure)
        print(f"figure written to {args.figure}")
    return 0


def summary(rows):
    """The table of the report, as text."""
    lines = ["per call [µs]:"]
    for n in sorted({r["n"] for r in rows if r["experiment"] == "call"}):
        cells = [f"{r['tool']} {1e6 * r['time_median_s']:.1f}" for r in rows
                 if r["experiment"] == "call" and r["n"] == n]
        checks = [f"{r['tool']} {r['check']:.1e}" for r in rows if r["experiment"] == "call"
                  and r["n"] == n and r["tool"] in ("pinocchio", "mujoco")]
        lines.append(f"  n={n}: " + ", ".join(cells) + "; |Δq̈| " + ", ".join(checks))
    bricard = [r for r in rows if r["experiment"] == "bricard"]
    lines.append("bricard: time [s] to P3 error ≤ " + ", ".join(f"{x:g}" for x in LEVELS))
    for tool in dict.fromkeys(r["tool"] for r in bricard):
        times = [time_to_accuracy(bricard, tool, x) for x in LEVELS]
        best = np.nanmin([r["error_m"] for r in bricard if r["tool"] == tool])
        lines.append(f"  {tool}: " + ", ".join("not reached" if np.isnan(t) else f"{t:.3g}"
                                               for t in times)
                     + f" (smallest error {best:.1e} m)")
    chain = [r for r in rows if r["experiment"] == "chain"]
    if chain:
        lines.append(f"chain({chain[0]['n']}), {chain[0]['t_end']:g} s, worst joint-point error "
                     f"≤ {CHAIN_TARGET:g} m:")
        for tool in dict.fromkeys(r["tool"] for r in chain):
            t = time_to_accuracy(chain, tool, CHAIN_TARGET)
            last = [r for r in chain if r["tool"] == tool][-1]
            lines.append(f"  {tool}: " + ("not reached" if np.isnan(t) else f"{t:.3g} s")
                         + f" ({last['knob']} {last['knob_value']:g}, error "
                           f"{last['error_m']:.2e} m)")
    return "\n".join(lines)


def plot_peers(csv_path, png_path):
    """Work–precision (6-bar, chain) and time per call against n, one line per tool."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    from natcoord.study.records import read_csv
    rows = read_csv(csv_path)
    tools = list(dict.fromkeys(r["tool"] for r in rows))
    colours = dict(zip(tools, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.4), constrained_layout=True)
    calls = [r for r in rows if r["experiment"] == "call"]
    for tool in dict.fromkeys(r["tool"] for r in calls):
        sel = sorted((r["n"], r["time_median_s"]) for r in calls
                     if r["tool"] == tool and r["time_median_s"] == r["time_median_s"])
        if sel:
            n, t = np.transpose(sel)
            ax[0].loglog(n, t, "o-" if tool != "natcoord-numeric" else "s--", ms=4,
                         color=colours[tool], label=tool)
    ax[0].set(xlabel="chain(n): bodies n", ylabel="time per forward-dynamics call [s]",
              title="(a) one evaluation, chain(n)")
    for a, experiment, title, target in (
            (ax[1], "bricard", "(b) 6-bar (Bricard), P3 error", LEVELS),
            (ax[2], "chain", "(c) chain, worst joint-point error", (CHAIN_TARGET,))):
        sel = [r for r in rows if r["experiment"] == experiment]
        for tool in dict.fromkeys(r["tool"] for r in sel):
            pts = sorted((r["error_m"], r["time_median_s"]) for r in sel
                         if r["tool"] == tool and r["error_m"] == r["error_m"])   # failed: NaN
            if not pts:
                continue
            e, t = np.transpose(pts)
            a.loglog(e, t, "o-", ms=4, color=colours[tool], label=tool)
        for level in target:
            a.axvline(level, color="k", ls="--", lw=0.8)
        if sel:
            title += f", {sel[0]['t_end']:g} s" + (f", n={sel[0]['n']:.0f}"
                                                    if experiment == "chain" else "")
        a.set(xlabel="max error against the reference [m]", ylabel="wall time [s]",
              title=title)
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=8)
    Path(png_path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path, dpi=150)
    plt.close(fig)
