"""URDF read as Pinocchio and KDL read it (issue 23, item 2).

* Links on fixed joints are lumped into their parent: the body's mass,
  centre of mass and inertia about its frame equal the closed-form sums over
  the lumped links (poses composed by hand with SciPy's rotations), and the
  lumped links stay addressable as named frames.
* ``floating_base=True`` makes the root link a free body: 6 more DOF.
* Every link that cannot be a body is named in one error;
  ``inertia_repair=True`` projects non-physical inertias to the nearest
  physical ones (closed form for one violated triangle inequality) and warns.
* With Pinocchio and example-robot-data installed (the ``peers`` and
  ``models`` extras): real robots have Pinocchio's total mass and DOF, and
  the body accelerations at a random state equal Pinocchio's ABA.
"""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import natcoord as nc
from natcoord.io.urdf import REPAIR_MARGIN
from urdf_peer import damping_torque, pinocchio_q

E3 = np.eye(3)


def _write(tmp_path, text, name="robot.urdf"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _v(x):
    return " ".join(repr(float(c)) for c in x)


def _inertial(mass, com=(0, 0, 0), rpy=(0, 0, 0), moments=(0, 0, 0), products=(0, 0, 0)):
    """``<inertial>`` with inertia ixx iyy izz, products ixy ixz iyz (in the rpy frame)."""
    (ixx, iyy, izz), (ixy, ixz, iyz) = moments, products
    return (f'<inertial><origin xyz="{_v(com)}" rpy="{_v(rpy)}"/><mass value="{mass!r}"/>'
            f'<inertia ixx="{ixx!r}" iyy="{iyy!r}" izz="{izz!r}" ixy="{ixy!r}" ixz="{ixz!r}" '
            f'iyz="{iyz!r}"/></inertial>')


def _joint(name, kind, parent, child, xyz=(0, 0, 0), rpy=(0, 0, 0), axis=(0, 0, 1)):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{_v(xyz)}" rpy="{_v(rpy)}"/>'
            f'<axis xyz="{_v(axis)}"/></joint>')


# An arm on a revolute shoulder carrying, on fixed joints, a sensor (offset and
# rotated, with its own rotated inertia), a tool tip of zero inertia on the
# sensor, a flat plate (planar inertia: I1 + I2 = I3), and a massless marker; a
# heavy pedestal is fixed to the root. Link: (parent, joint, xyz, rpy, inertial).
SHOULDER = dict(xyz=(0.0, 0.0, 0.5), rpy=(0.0, 0.0, 0.3))
LINKS = {
    "pedestal": ("base", "fixed", (0, 0, 0.1), (0, 0, 0),
                 dict(mass=5.0, moments=(0.1, 0.1, 0.05))),
    "arm": ("base", "revolute", SHOULDER["xyz"], SHOULDER["rpy"],
            dict(mass=2.0, com=(0.2, 0.01, 0.0), rpy=(0.1, 0.2, 0.3),
                 moments=(0.01, 0.02, 0.025), products=(0.001, 0.0, 0.0))),
    "sensor": ("arm", "fixed", (0.4, 0.05, -0.02), (0.5, -0.3, 1.0),
               dict(mass=0.5, com=(0.01, 0.0, 0.02), rpy=(0.2, 0.0, 0.0),
                    moments=(1e-3, 2e-3, 2.5e-3))),
    "tool": ("sensor", "fixed", (0.0, 0.0, 0.08), (0.0, np.pi / 2, 0.0), dict(mass=0.1)),
    "plate": ("arm", "fixed", (-0.1, 0.0, 0.0), (0, 0, 0),
              dict(mass=0.2, moments=(1e-4, 1e-4, 2e-4))),
    "marker": ("tool", "fixed", (0.0, 0.0, 0.01), (0, 0, 0), None),
}


def arm_urdf():
    out = ['<robot name="arm">', '<link name="base"/>']
    for name, (parent, kind, xyz, rpy, inertial) in LINKS.items():
        out.append(f'<link name="{name}">{_inertial(**inertial) if inertial else ""}</link>')
        out.append(_joint(name if kind == "fixed" else "shoulder", kind, parent, name,
                          xyz, rpy))
    return "\n".join(out + ["</robot>"])


def _rpy(rpy):
    """URDF rpy: fixed-axis x, y, z rotations (SciPy's extrinsic 'xyz')."""
    return Rotation.from_euler("xyz", rpy).as_matrix()


def _pose_in(ancestor, link):
    """Origin and axes of ``link`` in the frame of ``ancestor``, composed joint by joint."""
    x, R = np.zeros(3), E3
    chain = []
    while link != ancestor:
        parent, _, xyz, rpy, _ = LINKS[link]
        chain.append((np.array(xyz, float), _rpy(rpy)))
        link = parent
    for xyz, Rj in reversed(chain):
        x, R = x + R @ xyz, R @ Rj
    return x, R


def _second_moment_about_origin(links):
    """Mass, first moment and inertia about the frame origin of ``arm`` summed over links."""
    mass, first, inertia = 0.0, np.zeros(3), np.zeros((3, 3))
    for name in links:
        spec = LINKS[name][4]
        if spec is None:
            continue
        x, R = _pose_in("arm", name)
        Ri = R @ _rpy(spec.get("rpy", (0, 0, 0)))
        (ixx, iyy, izz), (ixy, ixz, iyz) = (spec.get("moments", (0, 0, 0)),
                                            spec.get("products", (0, 0, 0)))
        I_c = Ri @ np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]) @ Ri.T
        r = x + R @ np.array(spec.get("com", (0, 0, 0)), float)
        m = spec["mass"]
        mass, first = mass + m, first + m * r
        inertia += I_c + m * (r @ r * E3 - np.outer(r, r))
    return mass, first, inertia


# ------------------------------------------------------------------ lumping
def test_fixed_links_are_lumped_with_exact_mass_centre_and_inertia(tmp_path):
    """The arm body carries the sensor, tool, plate and marker: total mass, first
    moment and inertia about the arm frame equal the sum over the four links
    (parallel-axis theorem, rotated into the arm frame). The zero-inertia tool and
    the planar plate would each be refused as a body; lumped, they disappear.
    The pedestal, fixed to the root, joins ground."""
    mech = nc.load_urdf(_write(tmp_path, arm_urdf()))
    model = mech.build()
    assert [b.name for b in model.bodies] == ["arm"]
    assert [(j.name, j.kind) for j in model.joints] == [("shoulder", "revolute")]
    mass, first, inertia_about_origin = _second_moment_about_origin(
        ["arm", "sensor", "tool", "plate", "marker"])
    arm = model.bodies[0]
    c = arm.com
    assert arm.mass == pytest.approx(mass, rel=1e-15)
    assert np.allclose(arm.mass * c, first, rtol=0, atol=1e-15)
    about_origin = arm.inertia + arm.mass * (c @ c * E3 - np.outer(c, c))
    assert np.allclose(about_origin, inertia_about_origin, rtol=0, atol=1e-15)
    assert nc.assemble(model).dof == 1


def test_lumped_links_stay_named_frames(tmp_path):
    """Every link that is not a body is a frame of the body it went into (the root
    and the pedestal: of ground), placed as the joints place it; the documented
    ``sol.point(frame.body, frame.point(x), local=True)`` follows a point given in
    the frame: about the shoulder axis (world z through (0, 0, 0.5)) by the
    joint angle."""
    mech = nc.load_urdf(_write(tmp_path, arm_urdf()))
    assert set(mech.frames) == {"base", "pedestal", "sensor", "tool", "plate", "marker"}
    assert mech.frames["pedestal"].body is nc.GROUND
    assert np.allclose(mech.frames["pedestal"].point(), (0, 0, 0.1), rtol=0, atol=1e-15)
    shoulder = (np.array(SHOULDER["xyz"]), _rpy(SHOULDER["rpy"]))
    for name in ("sensor", "tool", "plate", "marker"):
        frame = mech.frames[name]
        x, R = _pose_in("arm", name)
        assert frame.body == "arm"
        assert np.allclose(frame.origin, x, rtol=0, atol=1e-15)
        assert np.allclose(frame.axes, R, rtol=0, atol=1e-15)
    mech.set_joint_rate("shoulder", 2.0)
    model = mech.build()
    sol = nc.simulate(model, 0.3, rtol=1e-10, proj_tol=1e-12, t_eval=np.linspace(0, 0.3, 7))
    tip_in_tool = np.array([0.0, 0.0, 0.05])
    x, R = _pose_in("arm", "tool")
    tip_reference = shoulder[0] + shoulder[1] @ (x + R @ tip_in_tool)
    tool = mech.frames["tool"]
    path = sol.point(tool.body, tool.point(tip_in_tool), local=True)
    angle = sol.joint_coordinate("shoulder")
    expected = shoulder[0] + Rotation.from_rotvec(np.outer(angle, (0, 0, 1))).apply(
        tip_reference - shoulder[0])
    assert np.abs(path - expected).max() < 1e-9
    assert angle[-1] == pytest.approx(0.6, rel=1e-6)


def test_floating_base_adds_a_free_root_with_six_more_dof(tmp_path):
    """``floating_base=True``: the root link is a body on no joint (it carries the
    pedestal), the arm keeps its one revolute: 1 + 6 DOF."""
    path = _write(tmp_path, arm_urdf())
    fixed = nc.load_urdf(path).build()
    floating = nc.load_urdf(path, floating_base=True).build()
    assert [b.name for b in floating.bodies] == ["base", "arm"]
    assert floating.bodies[0].mass == 5.0
    assert len(floating.joints) == len(fixed.joints) == 1
    assert nc.assemble(floating).dof == nc.assemble(fixed).dof + 6 == 7
    assert floating.n_rows == fixed.n_rows + 6          # the base's rigid-body rows only


def test_nothing_moves_without_floating_base(tmp_path):
    path = _write(tmp_path, '<robot name="drone"><link name="frame">'
                  f'{_inertial(1.5, moments=(0.01, 0.01, 0.015))}</link></robot>')
    with pytest.raises(ValueError, match="nothing moves; pass floating_base=True"):
        nc.load_urdf(path)
    assert nc.assemble(nc.load_urdf(path, floating_base=True).build()).dof == 6


# --------------------------------------------------------- bad inertias
#: principal moments violating the triangle inequality (I1 + I2 < I3) and one negative
TRIANGLE = (1e-3, 1e-3, 2.2e-3)
NEGATIVE = (-1e-4, 2e-3, 2e-3)


def bad_urdf(second=NEGATIVE):
    return "\n".join([
        '<robot name="bad">', '<link name="base"/>',
        f'<link name="upper">{_inertial(1.0, com=(0.1, 0, 0), moments=TRIANGLE)}</link>',
        f'<link name="lower">{_inertial(1.0, com=(0.1, 0, 0), moments=second)}</link>',
        f'<link name="hand">{_inertial(0.5, moments=(1e-3, 1e-3, 1e-3))}</link>',
        _joint("j1", "revolute", "base", "upper", axis=(0, 1, 0)),
        _joint("j2", "revolute", "upper", "lower", xyz=(0.3, 0, 0), axis=(0, 1, 0)),
        _joint("j3", "revolute", "lower", "hand", xyz=(0.3, 0, 0), axis=(0, 1, 0)),
        '</robot>'])


def test_every_non_physical_link_is_named_in_one_error(tmp_path):
    with pytest.raises(ValueError) as err:
        nc.load_urdf(_write(tmp_path, bad_urdf()))
    message = str(err.value)
    assert "2 link(s) cannot be bodies" in message
    assert '<link name="upper">' in message and "triangle inequality" in message
    assert '<link name="lower">' in message and "must be positive" in message
    assert '<link name="hand">' not in message
    assert "inertia_repair=True" in message


def _principal(I):
    return np.linalg.eigvalsh(I)


def test_inertia_repair_projects_to_the_nearest_physical_inertia_and_warns(tmp_path):
    """One violated triangle inequality: the nearest tensor (Frobenius) moves the
    principal moments onto the face λ1 + λ2 − λ3 = 2 s_min along its normal,
    λ + δ (1, 1, −1) with δ = (λ3 − λ1 − λ2 + 2 s_min)/3, s_min the margin times
    ½ tr I. Both repaired inertias are physical (each principal second moment at
    least that margin), keep their principal axes and stay within 10 % of the original;
    the warning names both links with their change."""
    with pytest.warns(UserWarning) as record:
        model = nc.load_urdf(_write(tmp_path, bad_urdf()), inertia_repair=True).build()
    assert len(record) == 1
    message = str(record[0].message)
    assert "replaced 2 non-physical" in message
    assert '<link name="upper">' in message and '<link name="lower">' in message
    assert message.count("change") == 2
    bodies = {b.name: b for b in model.bodies}
    lam = np.array(TRIANGLE)
    s_min = REPAIR_MARGIN * 0.5 * lam.sum()
    delta = (lam[2] - lam[0] - lam[1] + 2 * s_min) / 3
    assert np.allclose(bodies["upper"].inertia, np.diag(lam + delta * np.array([1, 1, -1])),
                       rtol=0, atol=1e-18)
    for name, original in (("upper", TRIANGLE), ("lower", NEGATIVE)):
        I = bodies[name].inertia
        assert np.abs(I - np.diag(np.diag(I))).max() < 1e-18          # principal axes kept
        second_moments = 0.5 * _principal(I).sum() - _principal(I)
        assert second_moments.min() >= (1 - 1e-9) * REPAIR_MARGIN * 0.5 * sum(original)
        change = np.linalg.norm(I - np.diag(original)) / np.linalg.norm(original)
        assert 0 < change < 0.1, (name, change)
    assert np.array_equal(bodies["hand"].inertia, 1e-3 * E3)        # physical: untouched


def test_inertia_repair_cannot_invent_the_inertia_of_a_point_mass(tmp_path):
    with pytest.raises(ValueError, match=r'<link name="lower">.*a point mass has no inertia'):
        nc.load_urdf(_write(tmp_path, bad_urdf(second=(0, 0, 0))), inertia_repair=True)


# ------------------------------------------------------- real robot models
ROBOTS = {"ur5": ("ur_description/urdf/ur5_robot.urdf", False),
          "panda": ("panda_description/urdf/panda.urdf", False),
          "solo12": ("solo_description/robots/solo12.urdf", True)}


def _natural_state(model, pin, pm, pd):
    """natcoord ``(p, v)`` of Pinocchio's placements and velocities of the body
    frames (after ``forwardKinematics``): ``o``, ``e_k``, ``ȯ`` and ``ė_k = ω × e_k``."""
    p, v = np.zeros((model.n_bodies, 4, 3)), np.zeros((model.n_bodies, 4, 3))
    for i, body in enumerate(model.bodies):
        frame = pm.getFrameId(body.name, pin.BODY)
        placement = pin.updateFramePlacement(pm, pd, frame)
        twist = pin.getFrameVelocity(pm, pd, frame, pin.LOCAL_WORLD_ALIGNED)
        R = placement.rotation
        p[i] = np.vstack([placement.translation, R.T])
        v[i] = np.vstack([twist.linear, np.cross(twist.angular, R.T)])
    return p.ravel(), v.ravel()


@pytest.mark.parametrize("robot", sorted(ROBOTS))
def test_robot_matches_pinocchio(robot, robots_folder):
    """Total mass and DOF as Pinocchio's; finite passive accelerations at the
    reference state; at a random state (q near neutral, random q̇) every body's
    ``ö`` and ``ë_k`` equal Pinocchio's ABA with forward kinematics to 1e-9
    relative (the joint-space comparison is the corpus test's). The joint damping
    (panda's) enters Pinocchio's ABA as the torque ``−c q̇``: ``aba`` leaves out the
    ``model.damping`` it reads."""
    pin = pytest.importorskip("pinocchio")
    relative, floating = ROBOTS[robot]
    path = robots_folder / relative
    mech = nc.load_urdf(path, floating_base=floating)
    model = mech.build()
    pm = pin.buildModelFromUrdf(str(path), *([pin.JointModelFreeFlyer()] if floating else []))
    pd = pm.createData()
    assert sum(b.mass for b in model.bodies) == pytest.approx(
        sum(pm.inertias[k].mass for k in range(1, pm.njoints)), rel=1e-14)
    asm = nc.assemble(model)
    assert asm.dof == pm.nv
    a, _, _ = nc.accelerations(model, asm.state)
    assert np.all(np.isfinite(a))

    rng = np.random.default_rng(23)
    q = pin.integrate(pm, pin.neutral(pm), 0.5 * rng.standard_normal(pm.nv))
    qd = rng.standard_normal(pm.nv)
    qdd = pin.aba(pm, pd, q, qd, damping_torque(pm, mech.import_report, qd))
    pin.forwardKinematics(pm, pd, q, qd, qdd)
    p, v = _natural_state(model, pin, pm, pd)
    a, _, info = nc.accelerations(model, nc.State(0.0, p, v))
    assert info.constraint_residual < 1e-12 and info.velocity_residual < 1e-12
    expected = np.zeros((model.n_bodies, 4, 3))
    for i, body in enumerate(model.bodies):
        frame = pm.getFrameId(body.name, pin.BODY)
        R = pd.oMf[frame].rotation
        twist = pin.getFrameVelocity(pm, pd, frame, pin.LOCAL_WORLD_ALIGNED)
        alpha = pin.getFrameAcceleration(pm, pd, frame, pin.LOCAL_WORLD_ALIGNED).angular
        omega = twist.angular
        expected[i, 0] = pin.getFrameClassicalAcceleration(pm, pd, frame,
                                                           pin.LOCAL_WORLD_ALIGNED).linear
        expected[i, 1:] = np.cross(alpha, R.T) + np.cross(omega, np.cross(omega, R.T))
    assert np.abs(a - expected.ravel()).max() <= 1e-9 * np.abs(expected).max()


def test_the_command_line_takes_the_urdf_options(tmp_path, capsys):
    """``natcoord info robot.urdf --inertia-repair`` / ``--floating-base``; refused
    for a benchmark and without the option, in one line each (exit 2)."""
    from natcoord.cli import main
    bad = _write(tmp_path, bad_urdf())
    assert main(["info", str(bad)]) == 2
    assert "inertia_repair=True" in capsys.readouterr().err
    with pytest.warns(UserWarning, match="upper"):
        assert main(["info", str(bad), "--inertia-repair"]) == 0
    drone = _write(tmp_path, '<robot name="drone"><link name="frame">'
                   f'{_inertial(1.5, moments=(0.01, 0.01, 0.015))}</link></robot>', "drone.urdf")
    capsys.readouterr()
    assert main(["info", str(drone), "--floating-base"]) == 0
    assert "degrees of freedom: 6" in capsys.readouterr().out
    assert main(["info", "six-bar", "--floating-base"]) == 2
    assert "apply to URDF files" in capsys.readouterr().err
