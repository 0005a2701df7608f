"""URDF read as Pinocchio and KDL read it (issue 23, item 2).

* Links on fixed joints are lumped into their parent: the body's mass,
  centre of mass and inertia about its frame equal the closed-form sums over
  the lumped links (poses composed by hand with SciPy's rotations), and the
  lumped links stay addressable as named frames.
* ``floating_base=True`` makes the root link a free body: 6 more DOF.
* Every link that cannot be a body is named in one error;
  ``inertia_repair=True`` projects non-physical inertias to the nearest
  physical ones (closed form for one violated triangle inequality) and warns.
* Joint ``<dynamics damping>`` is the joint torque ``−c q̇``: closed forms for a
  spinning rotor and a sliding carriage, and Pinocchio's ABA with that torque
  (its ``aba`` leaves out the ``model.damping`` it reads); damping inside a
  compound joint is listed as not modelled.
* Everything not modelled (collision, limits, friction, mimic, transmissions,
  gazebo, …) is named in one warning and on ``import_report``.
* With Pinocchio and example-robot-data installed (the ``peers`` and
  ``models`` extras): real robots have Pinocchio's total mass and DOF, and
  the body accelerations at a random state equal Pinocchio's ABA.
"""

import warnings

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import natcoord as nc
from natcoord.io.urdf import REPAIR_MARGIN
from natcoord.linalg import available_solvers
from urdf_peer import damping_torque, pinocchio_q

# What a robot file has that natcoord does not model (limits, collision geometry,
# gazebo tags, …) is named in one UserWarning per import; the tests of that warning
# below catch it themselves (pytest.warns, catch_warnings), the others let it pass.
pytestmark = pytest.mark.filterwarnings("ignore:.*imported without:UserWarning")

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
    # the frame by name: the same trajectory, its axes turned by the joint angle,
    # the pedestal (fixed in ground) where it is
    assert np.array_equal(sol.point("tool", tip_in_tool, local=True), path)
    turned = Rotation.from_rotvec(np.outer(angle, (0, 0, 1))).as_matrix() @ shoulder[1] @ R
    assert np.abs(sol.rotation("tool") - turned).max() < 1e-9
    assert np.array_equal(sol.point("pedestal", (0, 0, 0), local=True),
                          np.tile(mech.frames["pedestal"].point(), (7, 1)))


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


def test_a_robot_without_links_is_refused(tmp_path):
    """An empty ``<robot>`` (example-robot-data's ur3.urdf, a xacro comment and nothing
    else; Pinocchio refuses it too) is named as such."""
    path = _write(tmp_path, '<robot><!-- xacro output --></robot>')
    with pytest.raises(ValueError, match=r"<robot> has no <link>: the file describes no robot"):
        nc.load_urdf(path)


# --------------------------------------------------------- bad inertias
#: principal moments violating the triangle inequality (I1 + I2 < I3) and one negative
TRIANGLE = (1e-3, 1e-3, 2.2e-3)
NEGATIVE = (-1e-4, 2e-3, 2e-3)


def bad_urdf(second=NEGATIVE, first=TRIANGLE):
    return "\n".join([
        '<robot name="bad">', '<link name="base"/>',
        f'<link name="upper">{_inertial(1.0, com=(0.1, 0, 0), moments=first)}</link>',
        f'<link name="lower">{_inertial(1.0, com=(0.1, 0, 0), moments=second)}</link>',
        f'<link name="hand">{_inertial(0.5, moments=(1e-3, 1e-3, 1e-3))}</link>',
        _joint("j1", "revolute", "base", "upper", axis=(0, 1, 0)),
        _joint("j2", "revolute", "upper", "lower", xyz=(0.3, 0, 0), axis=(0, 1, 0)),
        _joint("j3", "revolute", "lower", "hand", xyz=(0.3, 0, 0), axis=(0, 1, 0)),
        '</robot>'])


def test_every_link_with_a_negative_principal_moment_is_named_in_one_error(tmp_path):
    """A negative principal moment makes the spatial inertia indefinite: refused, every
    such link named at once; a link that only violates the triangle inequality is not
    among them (it is simulated as given, below)."""
    with pytest.raises(ValueError) as err:
        nc.load_urdf(_write(tmp_path, bad_urdf(first=NEGATIVE)))
    message = str(err.value)
    assert "2 link(s) cannot be bodies" in message
    assert '<link name="upper">' in message and '<link name="lower">' in message
    assert message.count("must be positive") == 2
    assert '<link name="hand">' not in message
    assert "inertia_repair=True" in message
    with pytest.raises(ValueError) as err:
        nc.load_urdf(_write(tmp_path, bad_urdf()))
    assert "1 link(s) cannot be bodies" in str(err.value)
    assert '<link name="upper">' not in str(err.value)


def test_a_non_physical_inertia_is_simulated_as_pinocchio_reads_it(tmp_path):
    """Principal moments violating only the triangle inequality (no mass distribution
    has them; romeo_small's shoulders) still make a positive definite spatial inertia:
    the link is imported as given, named in the file's one warning and in
    ``import_report["non_physical_inertia"]``. Its q̈ at random states is Pinocchio's
    ``aba`` to 1e-12 relative, with the block factorization and both reference
    backends, and a loop closed through it keeps the same constraint rows in all three
    (redundancy is decided on the spatial inertia, not on the indefinite ``J4``)."""
    pin = pytest.importorskip("pinocchio")
    path = _write(tmp_path, bad_urdf(second=(2e-3, 2e-3, 3e-3)).replace(
        '"revolute"', '"continuous"'))           # urdfdom wants a revolute's limits
    with pytest.warns(UserWarning) as record:
        mech = nc.load_urdf(path)
    ours = [str(w.message) for w in record if str(w.message).startswith(str(path))]
    assert len(ours) == 1 and "links upper have inertias no mass distribution has" in ours[0]
    assert mech.import_report["non_physical_inertia"] == ["upper"]
    model = mech.build()
    js = nc.joint_space(model)
    pm = pin.buildModelFromUrdf(str(path))
    pd = pm.createData()
    assert list(js.v_names) == list(pm.names)[1:]
    rng = np.random.default_rng(8)
    for _ in range(3):
        theta, v = rng.standard_normal(pm.nv), rng.standard_normal(pm.nv)
        expected = pin.aba(pm, pd, pinocchio_q(pm, theta), v, np.zeros(pm.nv))
        st = nc.joint_state(model, theta, v)
        for solver in ("block", "dense", "superlu"):
            a, _, _ = nc.accelerations(model, st, solver=solver)
            qdd = js.accelerations(st.p, st.v, a)
            assert np.abs(qdd - expected).max() <= 1e-12 * np.abs(expected).max(), solver
    if "cholmod" in available_solvers():        # it inverts J4: refused, the body named
        with pytest.raises(ValueError, match=r"\['upper'\].*non-physical inertias"):
            nc.accelerations(model, st, solver="cholmod")
    with pytest.raises(ValueError, match="triangle inequality"):        # the builder's
        nc.Mechanism().add_body("upper", 1.0, (0, 0, 0), np.diag(TRIANGLE))   # default


def test_a_loop_through_a_non_physical_link_drops_the_same_rows_in_every_solver():
    """A planar four-bar whose coupler has a non-physical inertia (J4 indefinite),
    written to a model file and read back: its three redundant loop rows are found by
    the block factorization and by the dense and SuperLU backends alike, and the three
    agree on the accelerations."""
    mech = nc.models.four_bar()
    coupler = mech.bodies[1]
    rebuilt = nc.Mechanism(gravity=mech.gravity)
    for method, arguments in mech.calls:
        if method == "add_body" and arguments["name"] == coupler.name:
            arguments = {**arguments, "inertia": np.diag([1e-3, 1e-3, 2.5e-3]) * coupler.mass,
                         "non_physical_inertia": True}
        getattr(rebuilt, method)(**arguments)
    from natcoord.io.modelfile import from_dict, to_dict
    model = from_dict(to_dict(rebuilt)).build()       # the model file keeps the permission
    assert not model.bodies[1].physical
    results = {}
    for solver in ("block", "dense", "superlu"):
        assembly = nc.assemble(model, solver=solver)
        a, _, info = nc.accelerations(model, assembly.state, solver=solver)
        results[solver] = a, info.dropped
    a_block, dropped_block = results["block"]
    assert dropped_block.size == 3
    for solver in ("dense", "superlu"):
        a, dropped = results[solver]
        assert np.array_equal(dropped, dropped_block), solver
        assert np.abs(a - a_block).max() <= 1e-10 * np.abs(a_block).max(), solver


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


def test_a_point_mass_is_a_body_with_zero_inertia_and_inertia_repair_leaves_it(tmp_path):
    """A link with mass but (to rounding: icub's 1e-20 kg m²) no inertia is a point mass:
    a body with zero inertia, with or without inertia_repair (nothing to project), whose
    rotation the joint to the link it carries determines (tests/test_point_masses.py);
    a non-physical link next to it is named alone."""
    text = bad_urdf(second=(-5e-20, 5e-20, 0)).replace(_inertial(1.0, com=(0.1, 0, 0),
                                                                 moments=TRIANGLE), "")
    for repair in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")                  # no repair to report
            model = nc.load_urdf(_write(tmp_path, text), inertia_repair=repair).build()
        lower = model.bodies[model.body_index["lower"]]
        assert lower.point_mass and lower.mass == 1.0 and not np.any(lower.inertia)
    with pytest.raises(ValueError) as err:
        nc.load_urdf(_write(tmp_path, bad_urdf(second=(0, 0, 0), first=NEGATIVE)))
    message = str(err.value)
    assert "1 link(s) cannot be bodies" in message and '<link name="upper">' in message
    assert '<link name="lower">' not in message and "inertia_repair=True" in message


# ------------------------------------------- joint damping, and what is not modelled
def _joint_qdd(model, q, qd):
    """natcoord's joint accelerations at joint positions and rates (dicts or arrays)."""
    js = nc.joint_space(model)
    st = nc.joint_state(model, q, qd)
    a, _, _ = nc.accelerations(model, st)
    return dict(zip(js.v_names, js.accelerations(st.p, st.v, a)))


def _limit(lower=-2.0, upper=2.0):
    return f'<limit lower="{lower!r}" upper="{upper!r}" effort="10.0" velocity="3.0"/>'


def _with(joint_xml, *children):
    """A ``_joint`` element with more children (``<dynamics>``, ``<limit>``, …)."""
    return joint_xml.replace("</joint>", "".join(children) + "</joint>")


def test_joint_damping_slows_a_spinning_rotor_and_a_sliding_carriage(tmp_path):
    """``<dynamics damping="c">`` is the joint torque (force) ``−c q̇``. A rotor
    spinning about a vertical axis through its centre of mass (gravity along the
    axis: no torque) and a carriage sliding horizontally (gravity across the
    slide): ``θ̈ = −c θ̇ / I_zz`` and ``s̈ = −c ṡ / m`` in closed form."""
    path = _write(tmp_path, "\n".join([
        '<robot name="damped">', '<link name="base"/>',
        f'<link name="rotor">{_inertial(2.0, moments=(0.2, 0.25, 0.3))}</link>',
        f'<link name="carriage">{_inertial(1.5, moments=(0.01, 0.01, 0.01))}</link>',
        _with(_joint("spin", "continuous", "base", "rotor", xyz=(0, 0, 0.4)),
              '<dynamics damping="0.6"/>'),
        _with(_joint("slide", "prismatic", "base", "carriage", xyz=(1, 0, 0), axis=(1, 0, 0)),
              '<dynamics damping="0.9" friction="0"/>', _limit()),
        '</robot>']))
    model = nc.load_urdf(path).build()
    qdd = _joint_qdd(model, {"spin": 0.7, "slide": 0.1}, {"spin": 1.3, "slide": -0.4})
    assert qdd["spin"] == pytest.approx(-0.6 * 1.3 / 0.3, rel=1e-12)
    assert qdd["slide"] == pytest.approx(-0.9 * -0.4 / 1.5, rel=1e-12)


# An arm with damping on every joint: shoulder (revolute), elbow (continuous),
# extend (prismatic), then a wrist of two perpendicular revolutes through the
# massless link "cross": a compound (universal) joint, whose DOF have no joint
# coordinate for a damper — their damping is listed as not modelled.
DAMPED_ARM = "\n".join([
    '<robot name="damped_arm">', '<link name="base"/>',
    f'<link name="upper">{_inertial(1.2, com=(0.15, 0, 0), moments=(0.002, 0.01, 0.011))}</link>',
    f'<link name="fore">{_inertial(0.8, com=(0.12, 0.01, 0), moments=(0.001, 0.005, 0.0055), products=(1e-4, 0, 0))}</link>',
    f'<link name="slider">{_inertial(0.3, com=(0.02, 0, 0), moments=(1e-4, 2e-4, 2e-4))}</link>',
    '<link name="cross"/>',
    f'<link name="hand">{_inertial(0.4, com=(0.05, 0.01, 0), moments=(3e-4, 5e-4, 6e-4))}</link>',
    _with(_joint("shoulder", "revolute", "base", "upper", xyz=(0, 0, 0.3), axis=(0, 1, 0)),
          '<dynamics damping="0.7"/>', _limit()),
    _with(_joint("elbow", "continuous", "upper", "fore", xyz=(0.3, 0, 0), axis=(0, 1, 0)),
          '<dynamics damping="0.3"/>'),
    _with(_joint("extend", "prismatic", "fore", "slider", xyz=(0.25, 0, 0), axis=(1, 0, 0)),
          '<dynamics damping="2.0"/>', _limit(-0.1, 0.1)),
    _with(_joint("wrist_a", "revolute", "slider", "cross", xyz=(0.05, 0, 0), axis=(0, 0, 1)),
          '<dynamics damping="0.2"/>', _limit()),
    _with(_joint("wrist_b", "revolute", "cross", "hand", axis=(0, 1, 0)),
          '<dynamics damping="0.4"/>', _limit()),
    '</robot>'])


def test_joint_damping_matches_pinocchio_aba_with_the_damping_torque(tmp_path):
    """Pinocchio reads ``<dynamics damping>`` into ``model.damping`` but its ``aba``
    leaves it out: the peer is ``aba(q, q̇, τ = −c q̇)``, with ``c = 0`` on the
    wrist DOF the import report lists as not modelled. At random states natcoord's
    q̈ equals it to 1e-9 relative — and differs from the undamped ``aba`` and from
    one damping the wrist too, so the damping is modelled where it says and only
    there."""
    pin = pytest.importorskip("pinocchio")
    path = _write(tmp_path, DAMPED_ARM)
    with pytest.warns(UserWarning, match="wrist_a, wrist_b"):
        mech = nc.load_urdf(path)
    report = mech.import_report
    assert report["not_modelled"]["stiffness and damping of DOF without a joint coordinate"] \
        == ["wrist_a", "wrist_b"]
    assert sorted((f.where, f.c, f.k) for f in mech.forces) == [
        ("joint spring 'elbow.spring' on 'elbow'", 0.3, 0.0),
        ("joint spring 'extend.spring' on 'extend'", 2.0, 0.0),
        ("joint spring 'shoulder.spring' on 'shoulder'", 0.7, 0.0)]
    model = mech.build()
    pm = pin.buildModelFromUrdf(str(path))
    pd = pm.createData()
    assert list(pm.names)[1:] == ["shoulder", "elbow", "extend", "wrist_a", "wrist_b"]
    assert np.array_equal(pm.damping, [0.7, 0.3, 2.0, 0.2, 0.4])
    rng = np.random.default_rng(4)
    for _ in range(3):
        theta, v = 0.5 * rng.standard_normal(pm.nv), rng.standard_normal(pm.nv)
        q = pinocchio_q(pm, theta)
        expected = pin.aba(pm, pd, q, v, damping_torque(pm, report, v))
        ours = _joint_qdd(model, theta, v)
        ours = np.array([ours[n] for n in list(pm.names)[1:]])
        scale = np.abs(expected).max()
        assert np.abs(ours - expected).max() <= 1e-9 * scale
        undamped = pin.aba(pm, pd, q, v, np.zeros(pm.nv))
        wrist_damped_too = pin.aba(pm, pd, q, v, -pm.damping * v)
        assert np.abs(ours - undamped).max() > 1e-2 * scale
        assert np.abs(ours - wrist_damped_too).max() > 1e-2 * scale


def test_negative_damping_is_refused_naming_the_joint(tmp_path):
    text = DAMPED_ARM.replace('damping="0.3"', 'damping="-0.3"')
    with pytest.raises(ValueError, match=r'<joint name="elbow"> <dynamics>: damping="-0.3" '
                                         r'must be non-negative'):
        nc.load_urdf(_write(tmp_path, text))


# Every URDF element that acts on a real robot but not in natcoord, once: contacts
# (collision geometry, named or not), position limits (not on the continuous
# elbow), effort and velocity limits, friction, a <dynamics> attribute outside the
# specification, safety controller, calibration, mimic, damping of a floating
# joint and of a spherical loop joint, transmission and ros2_control (actuators),
# gazebo extensions (two for one link: named once), a sensor, and elements URDF
# does not define. Not listed: visual geometry and materials (rendering only, as
# MuJoCo's URDF compiler discards them) and anything on a fixed joint, which does
# not move; the shoulder's damping is modelled.
EVERYTHING = "\n".join([
    '<robot name="everything">',
    '<material name="grey"><color rgba="0.5 0.5 0.5 1"/></material>',
    '<link name="base"/>',
    f'<link name="arm">{_inertial(2.0, com=(0.2, 0, 0), moments=(0.01, 0.02, 0.025))}'
    '<visual name="arm_look"><geometry><box size="0.4 0.05 0.05"/></geometry>'
    '<material name="grey"/></visual>'
    '<collision name="arm_shell"><geometry><box size="0.4 0.05 0.05"/></geometry></collision>'
    '<collision><geometry><sphere radius="0.03"/></geometry></collision>'
    '<contact><lateral_friction value="1.0"/></contact></link>',
    f'<link name="forearm">{_inertial(1.0, com=(0.15, 0, 0), moments=(0.004, 0.008, 0.009))}'
    '</link>',
    f'<link name="tool">{_inertial(0.2, moments=(1e-4, 1e-4, 1e-4))}</link>',
    f'<link name="drone">{_inertial(1.5, moments=(0.01, 0.01, 0.015))}</link>',
    _with(_joint("shoulder", "revolute", "base", "arm", xyz=(0, 0, 0.5)),
          '<dynamics damping="0.1" friction="0.2" K="7000"/>', _limit(),
          '<safety_controller soft_lower_limit="-1.9" soft_upper_limit="1.9" k_position="10" '
          'k_velocity="1"/>', '<calibration rising="0.1"/>'),
    _with(_joint("elbow", "continuous", "arm", "forearm", xyz=(0.4, 0, 0)),
          '<limit effort="5.0" velocity="2.0"/>',
          '<mimic joint="shoulder" multiplier="2.0" offset="0.1"/>'),
    _with(_joint("tool_mount", "fixed", "forearm", "tool", xyz=(0.3, 0, 0)),
          '<dynamics damping="1.0" friction="1.0"/>', _limit()),
    _with(_joint("drone_joint", "floating", "base", "drone", xyz=(0.7, 0, 0.5)),
          '<dynamics damping="0.5"/>'),
    '<loop_joint name="tie" type="spherical"><parent link="forearm"/><child link="drone"/>'
    '<origin xyz="0.3 0 0"/><dynamics damping="0.05"/></loop_joint>',
    '<transmission name="shoulder_trans"><type>transmission_interface/SimpleTransmission'
    '</type><joint name="shoulder"/></transmission>',
    '<ros2_control name="hardware" type="system"/>',
    '<gazebo reference="arm"><mu1>0.9</mu1></gazebo>',
    '<gazebo reference="arm"><selfCollide>true</selfCollide></gazebo>',
    '<gazebo><plugin name="control" filename="libcontrol.so"/></gazebo>',
    '<sensor name="imu" update_rate="100"><parent link="arm"/></sensor>',
    '<keyframe name="home"/>',
    '</robot>'])
NOT_MODELLED = {
    "free joint stiffness and damping": ["drone_joint"],
    "ball joint stiffness and damping": ["tie"],
    "actuators": ["shoulder_trans", "hardware"],
    "gazebo extensions": ["arm", "the robot"],
    "sensors": ["imu"],
    "elements natcoord does not read": ["<keyframe>", "<contact> of link arm",
                                        "<dynamics K> of joint shoulder"],
    "contacts": ["arm_shell", "collision1 of arm"],
    "joint limits": ["shoulder"],
    "effort and velocity limits (actuator properties)": ["shoulder", "elbow"],
    "friction loss": ["shoulder"],
    "safety controllers (soft limits)": ["shoulder"],
    "calibration (reference positions)": ["shoulder"],
    "mimic joints (a coupling of two joint coordinates)": ["elbow"],
}


def test_everything_not_modelled_is_named_in_one_warning_and_the_import_report(tmp_path):
    path = _write(tmp_path, EVERYTHING)
    with pytest.warns(UserWarning) as caught:
        mech = nc.load_urdf(path)
    ours = [w for w in caught if str(w.message).startswith(str(path))]
    assert len(ours) == 1
    message = str(ours[0].message)
    assert mech.import_report == {"source": str(path), "format": "urdf",
                                  "not_modelled": NOT_MODELLED, "non_physical_inertia": []}
    for what, names in NOT_MODELLED.items():
        assert f"{what}: {', '.join(names)}" in message
    for silent in ("arm_look", "grey", "tool_mount", "tool"):
        assert silent not in message
    assert [(f.where, f.c) for f in mech.forces] == [
        ("joint spring 'shoulder.spring' on 'shoulder'", 0.1)]
    model = mech.build()                                       # carried to the model
    assert model.import_report["not_modelled"] == NOT_MODELLED
    assert nc.assemble(model).dof == 2 + 3                     # arm, forearm; drone on the tie


def test_a_urdf_of_links_and_joints_only_imports_without_a_warning(tmp_path):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mech = nc.load_urdf(_write(tmp_path, arm_urdf()))
    assert mech.import_report["not_modelled"] == {} and mech.forces == []


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
