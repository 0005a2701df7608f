"""The robot-model corpus (issue 23, item 6): every MJCF of the dm-control suite and
every URDF of example-robot-data imports, or is refused with one message naming
every element that cannot be imported exactly.

For each imported model, at a few seeded random states, natcoord's joint
accelerations equal the peer's — MuJoCo's ``mj_forward`` (MJCF) or
Pinocchio's ``aba`` (URDF) — to 1e-9 relative, and a passive run of 1 s stays
within 1e-7 m of the peer's (an accurate integration of ``mj_forward`` /
``aba`` with SciPy's DOP853 at rtol 1e-12; to keep the test near 30 s, 0.1 s
for models of more than 12 DOF, and no longer than 1000 decay times of the
fastest joint damper: dog's tail, its armature off, decays at 7e6 /s).

On the MuJoCo side contacts and joint limits are off (``opt.disableflags``),
and so is each feature the import report lists as not modelled — and only
those (:data:`SWITCH_OFF`): the comparison then checks that everything the
report does not list is modelled exactly. On Pinocchio's side the URDF joint
damping natcoord models enters as the torque ``τ = −c q̇`` (Pinocchio reads
``<dynamics damping>`` into ``model.damping``, which its ``aba`` leaves out), ``c``
zero where the report lists the damping as not modelled
(``tests/urdf_peer.py``); the rest of what the report lists Pinocchio leaves out
too. Either way the import warns once, naming every listed element.

example-robot-data's quadrotors (:data:`FREE_FLYING`, every link fixed to the
root) are imported with a free root, as the package's own loaders build them.
``benchmarks/corpus_table.py`` tabulates what :func:`compare_mjcf` and
:func:`compare_urdf` measure (``data/corpus.csv``).

Skipped without mujoco and dm-control (MJCF) or Pinocchio and
example-robot-data (URDF): the ``peers`` and ``models`` extras.
"""
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import natcoord as nc
from natcoord.io.mjcf import APPLIED_ON_REQUEST, from_mujoco
from urdf_peer import damping_torque, natcoord_q, pinocchio_rate

try:
    import mujoco
except ImportError:                     # the URDF half runs without it
    mujoco = None

REL = 1e-9             # joint accelerations, relative to the largest (at least 1)
RUN_TOL = 1e-7         # m, body origins after the passive run
STATES = 2             # random states per model
BIG = 12               # models with more DOF get a 0.1 s passive run (test time)
DECAYS = 1000          # a stiffly damped model's run: this many of its fastest decay times


def _suite_files():
    try:
        folder = resources.files("dm_control") / "suite"
    except ModuleNotFoundError:
        return []
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".xml"))


def suite_path(name):
    return str(resources.files("dm_control") / "suite" / name)


# ------------------------------------------------------------------ MJCF
#: how a feature the import report lists as not modelled is switched off in MuJoCo
def _off_flag(name):
    def switch(m, names):
        m.opt.disableflags |= int(getattr(mujoco.mjtDisableBit, name))
    return switch


def _zero_joint_field(field):
    def switch(m, names):
        for name in names:
            j = m.joint(name)
            dof = slice(m.jnt_dofadr[j.id], m.jnt_dofadr[j.id] + {0: 6, 1: 3}.get(
                int(m.jnt_type[j.id]), 1))
            getattr(m, field)[dof] = 0.0
            if field == "dof_damping":
                m.jnt_stiffness[j.id] = 0.0
    return switch


def _tendons_off(m, names):
    for name in names:
        t = m.tendon(name).id
        m.tendon_stiffness[t] = m.tendon_damping[t] = 0.0


def _equalities_off(m, names):
    for name in names:
        m.eq_active0[m.equality(name).id] = 0


def _fluid_off(m, names):
    m.opt.density = m.opt.viscosity = 0.0


SWITCH_OFF = {
    "contacts": _off_flag("mjDSBL_CONTACT"),
    "joint limits": _off_flag("mjDSBL_LIMIT"),
    "actuators": _off_flag("mjDSBL_ACTUATION"),
    APPLIED_ON_REQUEST: _off_flag("mjDSBL_ACTUATION"),     # a plain run: no actuation
    "sensors": lambda m, names: None,                              # no force
    "friction loss": _off_flag("mjDSBL_FRICTIONLOSS"),
    "armature (rotor inertia: not a constant natural-coordinate mass)":
        _zero_joint_field("dof_armature"),
    "free joint stiffness and damping": _zero_joint_field("dof_damping"),
    "ball joint stiffness and damping": _zero_joint_field("dof_damping"),
    "stiffness and damping of DOF without a joint coordinate": _zero_joint_field("dof_damping"),
    "tendons": _tendons_off,
    "equality constraints other than connect and weld": _equalities_off,
    "inactive equality constraints": lambda m, names: None,       # inactive in both
    "fluid forces": _fluid_off,
    "mocap motion (the body stays at its reference pose)": lambda m, names: None,
}


def _mujoco_peer(path, report):
    """The MuJoCo model with contacts, limits and what natcoord does not model off."""
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
    unknown = set(report["not_modelled"]) - set(SWITCH_OFF)
    assert not unknown, f"the test does not know how to switch off {unknown} in MuJoCo"
    for what, names in report["not_modelled"].items():
        SWITCH_OFF[what](m, names)
    return m


def _random_mujoco_state(m, rng):
    """qpos near qpos0 (hinges and slides ± ~0.3, quaternions turned ~0.3 rad), random qvel."""
    qpos = np.array(m.qpos0)
    mujoco.mj_integratePos(m, qpos, 0.3 * rng.standard_normal(m.nv), 1.0)
    return qpos, rng.standard_normal(m.nv)


def _natcoord_qdd(model, q, qd):
    js = nc.joint_space(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # no loop to close: nothing may change
        st = nc.joint_state(model, q, qd)
    a, _, _ = nc.accelerations(model, st)
    return js.accelerations(st.p, st.v, a), st


def _qpos_rate(m, qpos, qvel):
    """dqpos/dt: ``qvel`` for hinges and slides, ``v`` and ``½ q ⊗ (0, ω)`` (ω in body
    axes, as MuJoCo's ``qvel``) for free and ball joints."""
    out = np.zeros(m.nq)
    for j in range(m.njnt):
        iq, iv, kind = m.jnt_qposadr[j], m.jnt_dofadr[j], int(m.jnt_type[j])
        if kind == mujoco.mjtJoint.mjJNT_FREE:
            out[iq:iq + 3] = qvel[iv:iv + 3]
            iq, iv = iq + 3, iv + 3
        if kind in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            mujoco.mju_mulQuat(out[iq:iq + 4], qpos[iq:iq + 4],
                               np.concatenate([[0.0], qvel[iv:iv + 3]]))
            out[iq:iq + 4] *= 0.5
        else:
            out[iq] = qvel[iv]
    return out


def _mujoco_passive_run(m, qpos, qvel, t_end):
    """MjData at t_end of ``mj_forward`` integrated by DOP853 (rtol 1e-12), the
    quaternions normalized at the end."""
    d = mujoco.MjData(m)

    def rhs(t, y):
        d.qpos[:] = y[:m.nq]
        d.qvel[:] = y[m.nq:]
        mujoco.mj_forward(m, d)
        return np.concatenate([_qpos_rate(m, y[:m.nq], y[m.nq:]), d.qacc])

    sol = solve_ivp(rhs, (0.0, t_end), np.concatenate([qpos, qvel]), method="DOP853",
                    rtol=1e-12, atol=1e-12)
    d.qpos[:], d.qvel[:] = sol.y[:m.nq, -1], sol.y[m.nq:, -1]
    mujoco.mj_normalizeQuat(m, d.qpos)
    mujoco.mj_kinematics(m, d)
    return d


MJCF = _suite_files()


def _refused(model, fmt, message):
    return dict(model=model, format=fmt, status="refused", nv=None, qdd_rel=None,
                run_m=None, t_end=None, reason=message)


def compare_mjcf(path):
    """One suite MJCF: its refusal checked (:func:`_check_mjcf_refusal`), or its import
    report and mass checked and its joint accelerations and passive run measured against
    MuJoCo's. Returns the corpus table's row: ``qdd_rel`` the largest ``|q̈ − q̈_MuJoCo|``
    over the states relative to the largest ``|q̈_MuJoCo|`` (at least 1), ``run_m`` the
    largest distance of a body origin or centre of mass from MuJoCo's after ``t_end``."""
    model_name = Path(path).name
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            mech = nc.load_mjcf(path)
        except ValueError as err:
            _check_mjcf_refusal(path, str(err))
            return _refused(model_name, "mjcf", str(err))
    report = mech.import_report
    ours = [w for w in caught if issubclass(w.category, UserWarning)
            and str(w.message).startswith(path)]
    assert len(ours) == (1 if report["not_modelled"] else 0)
    for what, names in report["not_modelled"].items():       # the one warning names them
        assert all(n in str(ours[0].message) for n in names), what
    model = mech.build()
    m = _mujoco_peer(path, report)
    d = mujoco.MjData(m)
    assert sum(b.mass for b in model.bodies) == pytest.approx(
        sum(m.body_mass[b] for b in range(1, m.nbody) if m.body_weldid[b] != 0), rel=1e-13)
    js = nc.joint_space(model)
    assert js.nv == m.nv
    rng = np.random.default_rng(23)
    qdd_rel = 0.0
    for _ in range(STATES):
        d.qpos[:], d.qvel[:] = _random_mujoco_state(m, rng)
        mujoco.mj_forward(m, d)
        q, qd, expected = from_mujoco(model, d.qpos, d.qvel, d.qacc)
        qdd, st = _natcoord_qdd(model, q, qd)
        want, _ = js.vector(expected, "expected")
        qdd_rel = max(qdd_rel, np.abs(qdd - want).max() / max(1.0, np.abs(want).max()))

    if report["actuators"]:
        assert _actuated_qdd_rel(path, report, model, rng) <= REL

    # passive run from the last state: body origins against MuJoCo's
    t_end = 1.0 if js.nv <= BIG else 0.1
    M = np.zeros((m.nv, m.nv))                     # damping rates c_i (M⁻¹)_ii, as for URDFs
    mujoco.mj_fullM(m, d, M)
    rate = np.max(m.dof_damping * np.diag(np.linalg.inv(M)), initial=0.0)
    t_end = min(t_end, DECAYS / rate) if rate > 0 else t_end
    start_qpos, start_qvel = np.array(d.qpos), np.array(d.qvel)
    sol = nc.simulate(model, t_end=t_end, initial_state=st, rtol=1e-11, atol=1e-12,
                      proj_tol=1e-13)
    end = _mujoco_passive_run(m, start_qpos, start_qvel, t_end)
    worst = 0.0
    for b in model.bodies:           # the MuJoCo body's frame origin and centre of mass
        if b.mass == 0.0:            # a massless frame between a body's joints: no MuJoCo body
            continue
        i = m.body(b.name).id
        for local, there in ((np.zeros(3), end.xpos[i]), (m.body_ipos[i], end.xipos[i])):
            worst = max(worst, np.abs(sol.point(b.name, local, local=True)[-1] - there).max())
    return dict(model=model_name, format="mjcf", status="imported", nv=js.nv,
                qdd_rel=qdd_rel, run_m=worst, t_end=t_end, reason="")


@pytest.mark.skipif(mujoco is None, reason="mujoco is not installed (pip install natcoord[mjcf])")
@pytest.mark.skipif(not MJCF, reason="dm-control is not installed (pip install natcoord[models])")
@pytest.mark.parametrize("name", MJCF)
def test_dm_control_suite_model(name):
    row = compare_mjcf(suite_path(name))
    if row["status"] == "imported":
        assert row["qdd_rel"] <= REL and row["run_m"] <= RUN_TOL, row


def _actuated_qdd_rel(path, report, model, rng):
    """The largest relative |q̈ − q̈_MuJoCo| at a random state and random controls of the
    actuators natcoord applies (``nc.actuator_torques``), the others' force zeroed in
    MuJoCo (what natcoord does not model switched off, as for the passive q̈)."""
    m = _mujoco_peer(path, report)
    m.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)
    applied = [m.actuator(name).id for name in report["actuators"]]
    for u in set(range(m.nu)) - set(applied):
        m.actuator_gainprm[u] = m.actuator_biasprm[u] = 0.0
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = _random_mujoco_state(m, rng)
    d.ctrl[applied] = rng.standard_normal(len(applied))
    mujoco.mj_forward(m, d)
    q, qd, expected = from_mujoco(model, d.qpos, d.qvel, d.qacc)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # no loop to close: nothing may change
        st = nc.joint_state(model, q, qd)
    sol = nc.simulate(model, 1e-3, initial_state=st, t_eval=[0.0],
                      u=nc.actuator_torques(model, d.ctrl[applied]))
    want, _ = nc.joint_space(model).vector(expected, "expected")
    return np.abs(sol.qdd[0] - want).max() / max(1.0, np.abs(want).max())


def _check_mjcf_refusal(path, message):
    """One message naming every body whose joint list the builder refuses — each body's
    list offered to the importer's dispatch alone, in a mechanism of its own, with
    MuJoCo's anchors and axes — and nothing else (the suite has no massless bodies:
    MuJoCo refuses them)."""
    from natcoord.io.mjcf import Refusal, body_joints
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    if all(m.body_weldid[b] == 0 for b in range(m.nbody)):
        assert message == f"{path}: cannot be imported exactly (1 element): no body moves " \
                          f"(every body is welded to the world); natcoord needs at least one"
        return
    expected = {m.body(b).name for b in range(1, m.nbody)
                if m.body_weldid[b] == b and _refused_alone(m, d, b, body_joints, Refusal)}
    assert expected
    assert message.startswith(f"{path}: cannot be imported exactly ({len(expected)} element")
    named = [part.split('"')[1] for part in message.split("; <")]
    assert sorted(named) == sorted(expected)


def _refused_alone(m, d, b, body_joints, Refusal):
    """Whether the dispatch refuses body b's joints between two unit bodies."""
    mech = nc.Mechanism()
    for name, i in (("parent", m.body_parentid[b]), ("child", b)):
        mech.add_body(name, 1.0, com=d.xpos[i], inertia=np.eye(3) * 0.1, origin=d.xpos[i],
                      axes=d.xmat[i].reshape(3, 3))
    joints = [{"name": m.joint(j).name, "kind": {0: "free", 1: "ball", 2: "slide", 3: "hinge"}[
        int(m.jnt_type[j])], "point": np.array(d.xanchor[j]), "axis": np.array(d.xaxis[j])}
        for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b])]
    try:
        body_joints(mech, "parent", "child", joints)
    except Refusal:
        return True
    return False


# ------------------------------------------------------------------ URDF
def _urdf_files():
    from importlib import metadata
    try:
        share = metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots")
    except metadata.PackageNotFoundError:
        return []
    return sorted(str(p.relative_to(share)) for p in share.rglob("*.urdf"))


def _check_urdf_refusal(pin, path, message):
    """One message. Where links cannot be bodies, it names exactly the bodies whose
    lumped inertia in Pinocchio (which lumps fixed links alike) natcoord cannot simulate
    — massless, a point mass (radii of gyration under 1 µm), a negative principal
    moment, or a principal second moment within rounding (1e-12) of zero relative to
    the largest moment (a line or plane; a thin plate is a volume) — except
    Pinocchio's massless universal-joint crosses, which natcoord models. A negative
    second moment with positive principal moments (non-physical, but a positive
    definite spatial inertia) is simulated as given, as Pinocchio does."""
    assert message.startswith(str(path))
    if "cannot be bodies" not in message:
        assert message.count(str(path)) == 1
        return
    pm = pin.buildModelFromUrdf(str(path))
    named = {line.split('"')[1] for line in message.splitlines()[1:]
             if line.startswith("  <link")}
    bad = set()
    for i in range(1, pm.njoints):
        inertia = pm.inertias[i]
        principal = np.linalg.eigvalsh(inertia.inertia)
        second = 0.5 * principal.sum() - principal
        if inertia.mass <= 0 or np.abs(principal).max() <= 1e-12 * inertia.mass \
                or principal.min() < 0 or abs(second).min() <= 1e-12 * np.abs(principal).max():
            bad.add(next(f.name for f in pm.frames if f.parentJoint == i
                         and f.type == pin.FrameType.BODY))
    assert message.split(": ", 1)[1].startswith(f"{len(named)} link(s) cannot be bodies")
    # Pinocchio's massless crosses of universal joints are natcoord's universal joints
    assert named <= bad and all(pm.inertias[pm.frames[pm.getFrameId(n)].parentJoint].mass
                                == 0 for n in bad - named), (named, bad)


URDF = _urdf_files()
#: URDFs that describe free-flying robots: every link is fixed to the root, so fixed to
#: the world nothing would move. example-robot-data's own loaders build them with a free
#: flyer (``HectorLoader``, ``IrisLoader``: ``free_flyer = True``); they are imported
#: so, with ``floating_base=True``, and compared with Pinocchio's free-flyer model
FREE_FLYING = {"hector_description/robots/quadrotor_base.urdf",
               "iris_description/robots/iris_simple.urdf"}


def compare_urdf(folder, relative):
    """One example-robot-data URDF (``FREE_FLYING`` ones with a free root): its refusal
    checked (:func:`_check_urdf_refusal`), or its import report checked and its joint
    accelerations and passive run measured against Pinocchio's; the corpus table's row
    (``qdd_rel``, ``run_m`` as in :func:`compare_mjcf`, body origins)."""
    import pinocchio as pin
    path = folder / relative
    floating = relative in FREE_FLYING
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            mech = nc.load_urdf(path, floating_base=floating)
        except ValueError as err:
            _check_urdf_refusal(pin, path, str(err))
            return _refused(relative, "urdf", str(err))
    report = mech.import_report
    ours = [w for w in caught if issubclass(w.category, UserWarning)
            and str(w.message).startswith(str(path))]
    assert len(ours) == (1 if report["not_modelled"] or report["non_physical_inertia"] else 0)
    for what, names in report["not_modelled"].items():       # the one warning names them
        assert all(n in str(ours[0].message) for n in names), what
    assert all(n in str(ours[0].message) for n in report["non_physical_inertia"])
    model = mech.build()
    pm = pin.buildModelFromUrdf(str(path), *([pin.JointModelFreeFlyer()] if floating else []))
    pd = pm.createData()
    js = nc.joint_space(model)
    names, columns = list(pm.names)[1:], list(js.v_names)
    if floating:                     # Pinocchio's root_joint: natcoord's free root body
        assert js.joint_names[0] == model.bodies[0].name
        names, columns = names[1:], columns[6:]
    assert columns == names                                 # one column per URDF joint
    rng = np.random.default_rng(23)
    qdd_rel = 0.0
    for _ in range(STATES):
        q = pin.integrate(pm, pin.neutral(pm), 0.5 * rng.standard_normal(pm.nv))
        v = rng.standard_normal(pm.nv)
        expected = pin.aba(pm, pd, q, v, damping_torque(pm, report, v))
        qdd, st = _natcoord_qdd(model, natcoord_q(pm, q), v)
        # relative to at least 1 rad/s²: a free flyer's q̈ in its own axes can be ~0
        qdd_rel = max(qdd_rel, np.abs(qdd - expected).max() / max(1.0, np.abs(expected).max()))

    # the run is as long as the test can afford in explicit steps: the damper of a light
    # joint (Allegro's fingers: c/I ≈ 2e6 /s) decays in microseconds, and both sides
    # integrate explicitly; the damping rate of DOF i is c_i (M⁻¹)_ii at the start
    t_end = 1.0 if js.nv <= BIG else 0.1
    rate = np.max(-damping_torque(pm, report, np.ones(pm.nv))
                  * np.diag(np.linalg.inv(pin.crba(pm, pd, q))))
    t_end = min(t_end, DECAYS / rate) if rate > 0 else t_end
    sol = nc.simulate(model, t_end=t_end, initial_state=st, rtol=1e-11, atol=1e-12,
                      proj_tol=1e-13)
    ref = solve_ivp(lambda t, y: np.concatenate([
        pinocchio_rate(pm, y[:pm.nq], y[pm.nq:]),
        pin.aba(pm, pd, y[:pm.nq], y[pm.nq:], damping_torque(pm, report, y[pm.nq:]))]),
        (0.0, t_end), np.concatenate([q, v]), method="DOP853", rtol=1e-12, atol=1e-12)
    pin.framesForwardKinematics(pm, pd, pin.normalize(pm, ref.y[:pm.nq, -1]))
    worst = max(np.abs(sol.point(b.name, np.zeros(3), local=True)[-1]
                       - pd.oMf[pm.getFrameId(b.name, pin.BODY)].translation).max()
                for b in model.bodies)
    return dict(model=relative, format="urdf", status="imported", nv=js.nv,
                qdd_rel=qdd_rel, run_m=worst, t_end=t_end, reason="")


@pytest.mark.skipif(not URDF, reason="example-robot-data is not installed "
                                     "(pip install natcoord[models])")
@pytest.mark.parametrize("relative", URDF)
def test_example_robot_data_model(relative, robots_folder):
    pytest.importorskip("pinocchio")
    row = compare_urdf(robots_folder, relative)
    if row["status"] == "imported":
        assert row["qdd_rel"] <= REL and row["run_m"] <= RUN_TOL, row
