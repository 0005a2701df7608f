"""Several joints in one body and chains through massless links: compound joints
(issue 23, item 3; ``Mechanism.add_compound``).

A body on a sequence of hinges and slides moves as MuJoCo moves it — each
DOF applied in turn from the reference pose, later axes carried by earlier
ones — and natcoord models that motion set by one exact constraint set: a
slide-slide-hinge root is a planar joint (3 rows), three hinges through one
point a spherical joint (3 rows) whose coordinates are Davenport angles.
Checked against independent computations:

* MuJoCo ``mj_forward`` and ``mj_inverse`` on MJCF strings written here
  (dm-control's planar walker root, a humanoid's three-hinge hip with oblique
  axes): joint accelerations and joint torques at random states;
* closed forms: the Davenport angles of a product of three rotations, the
  joint-space round trip ``q → state → q``;
* energy over a passive run;
* refused sequences and the separate name spaces of bodies, joints, frames.
"""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import natcoord as nc
from natcoord.dynamics.joint_space import davenport_angles, rotation_about

# What a robot file has that natcoord does not model (limits, collision geometry,
# gazebo tags, …) is named in one UserWarning per import; the import report is the
# subject of tests/test_urdf.py and tests/test_corpus.py, not of these tests.
pytestmark = pytest.mark.filterwarnings("ignore:.*imported without:UserWarning")

GRAVITY = (0.0, 0.0, -9.81)


def _v(x):
    return " ".join(repr(float(c)) for c in x)


def _unit(x):
    x = np.asarray(x, float)
    return x / np.linalg.norm(x)


# A planar walker: a torso on slide x, slide z, hinge y (dm-control's walker and
# cheetah roots), a thigh on a three-hinge hip with oblique axes through one
# point (a humanoid's hip), a shin on a hinge. Each body: MJCF pos and quat
# (w, x, y, z) in its parent, inertial pos, mass, full inertia (body axes), and
# its joints (name, type, pos, axis in the body frame).
BODIES = [
    ("torso", None, (0.1, -0.2, 1.3), (0.9, 0.1, -0.2, 0.3), (0.05, 0.02, -0.1), 3.0,
     (0.12, 0.10, 0.08, 0.01, -0.005, 0.002),
     [("rootx", "slide", (0, 0, 0), (1, 0, 0)), ("rootz", "slide", (0, 0, 0), (0, 0, 1)),
      ("rooty", "hinge", (0.02, 0.0, 0.05), (0, 1, 0))]),
    ("thigh", "torso", (0.0, 0.1, -0.3), (0.95, -0.1, 0.15, 0.05), (0.01, 0.0, -0.15), 1.5,
     (0.03, 0.028, 0.006, 0.001, 0.0, -0.002),
     [("hip_x", "hinge", (0.0, 0.0, 0.05), (1, 0.2, 0)),
      ("hip_z", "hinge", (0.0, 0.0, 0.05), (0.1, 0, 1)),
      ("hip_y", "hinge", (0.0, 0.0, 0.05), (0, 1, -0.3))]),
    ("shin", "thigh", (0.02, 0.0, -0.35), (1, 0, 0, 0), (0.0, 0.01, -0.12), 0.8,
     (0.012, 0.011, 0.002, 0.0, 0.0005, 0.0),
     [("knee", "hinge", (0, 0, 0), (0, 1, 0))]),
]


# A drone-like body on two slides then three hinges through one point (a sliding
# spherical joint, 5 DOF), carrying an arm on a hinge.
SLIDING = [
    ("pod", None, (0.2, 0.1, 0.8), (0.8, 0.2, 0.1, -0.3), (0.02, -0.01, 0.03), 2.0,
     (0.05, 0.06, 0.07, 0.002, 0.001, -0.003),
     [("px", "slide", (0, 0, 0), (1, 0, 0)), ("py", "slide", (0, 0, 0), (0.3, 1, 0)),
      ("r1", "hinge", (0.05, 0.0, 0.1), (0, 0, 1)), ("r2", "hinge", (0.05, 0.0, 0.1), (1, 0, 0.2)),
      ("r3", "hinge", (0.05, 0.0, 0.1), (0, 1, 0))]),
    ("arm", "pod", (0.3, 0.0, 0.0), (1, 0, 0, 0), (0.15, 0.0, 0.0), 0.5,
     (0.001, 0.004, 0.004, 0.0, 0.0, 0.0), [("elbow", "hinge", (0, 0, 0), (0, 0, 1))]),
]
# dm-control humanoid's ankle: two hinges whose lines miss each other (an offset
# universal joint, 4 rows), and a toe on two parallel hinges (a planar 2R, 4 rows).
OFFSET = [
    ("shin", None, (0.0, 0.0, 1.0), (0.9, 0.0, 0.1, 0.2), (0.0, 0.0, -0.2), 1.8,
     (0.03, 0.03, 0.004, 0.0, 0.001, 0.0), [("knee", "hinge", (0, 0, 0), (0, 1, 0))]),
    ("foot", "shin", (0.0, 0.0, -0.45), (1, 0, 0, 0), (0.05, 0.0, -0.02), 0.9,
     (0.002, 0.005, 0.005, 0.0, 0.0003, 0.0),
     [("ankle_y", "hinge", (0, 0, 0.08), (0, 1, 0)),
      ("ankle_x", "hinge", (0, 0, 0.04), (1, 0, 0.5))]),
    ("toe", "foot", (0.12, 0.0, -0.03), (1, 0, 0, 0), (0.03, 0.0, 0.0), 0.2,
     (0.0002, 0.0003, 0.0003, 0.0, 0.0, 0.0),
     [("toe_a", "hinge", (0, 0, 0), (0, 1, 0)), ("toe_b", "hinge", (0.03, 0, 0.01), (0, 1, 0))]),
]


def _mjcf(bodies):
    out = ['<mujoco model="compound">', '<option gravity="0 0 -9.81"/>',
           '<option><flag contact="disable"/></option>', '<worldbody>']
    depth = []
    for name, parent, pos, quat, com, mass, I, joints in bodies:
        while depth and depth[-1] != parent:
            out.append("</body>")
            depth.pop()
        out.append(f'<body name="{name}" pos="{_v(pos)}" quat="{_v(quat)}">')
        out.append(f'<inertial pos="{_v(com)}" mass="{mass!r}" fullinertia="{_v(I)}"/>')
        out += [f'<joint name="{j}" type="{kind}" pos="{_v(p)}" axis="{_v(a)}"/>'
                for j, kind, p, a in joints]
        depth.append(name)
    out += ["</body>"] * len(depth) + ["</worldbody>", "</mujoco>"]
    return "\n".join(out)


def _walker(bodies=BODIES):
    """The natcoord walker (or other bodies) built from the same numbers: bodies
    placed by composing the MJCF poses by hand, joints given in the child's frame
    (``local=True``)."""
    mech = nc.Mechanism(gravity=GRAVITY, name="walker")
    pose = {None: (np.zeros(3), np.eye(3))}
    for name, parent, pos, quat, com, mass, I, joints in bodies:
        x, R = pose[parent]
        w, *xyz = quat
        Rb = R @ Rotation.from_quat([*xyz, w]).as_matrix()
        pose[name] = (x + R @ np.array(pos, float), Rb)
        ixx, iyy, izz, ixy, ixz, iyz = I
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        mech.add_body(name, mass=mass, com=com, inertia=inertia, origin=pose[name][0],
                      axes=Rb, local=True)
        mech.add_compound(nc.GROUND if parent is None else parent, name,
                          [(j, kind, p, a) for j, kind, p, a in joints], local=True)
    return mech


def test_the_joints_of_a_body_become_one_exact_constraint_set():
    """slide x + slide z + hinge y: planar, 3 rows; three hinges through one point:
    spherical, 3 rows; a single hinge: revolute, 5 rows. 3 + 3 + 1 DOF, each DOF
    a column of the joint space named as in the file, in the file's order."""
    model = _walker().build()
    assert [(j.kind, len(j.rows)) for j in model.joints] == [
        ("planar", 3), ("spherical", 3), ("revolute", 5)]
    js = nc.joint_space(model)
    assert js.q_names == js.v_names == tuple(j for b in BODIES for j, *_ in b[7])
    assert nc.assemble(model).dof == 7


@pytest.fixture(scope="module")
def peer():
    mujoco = pytest.importorskip("mujoco")
    mj = mujoco.MjModel.from_xml_string(_mjcf(BODIES))
    return mujoco, mj, mujoco.MjData(mj)


@pytest.mark.parametrize("bodies", [BODIES, SLIDING, OFFSET],
                         ids=["walker", "sliding-ball", "offset-hinges"])
def test_joint_accelerations_and_torques_equal_mujoco(bodies):
    """At random (q, q̇) — large angles, all DOF moving — natcoord's q̈ from its
    natural-coordinate accelerations equals MuJoCo's ``qacc`` (mj_forward), and
    ``nc.inverse_dynamics`` of a random q̈ equals MuJoCo's ``qfrc_inverse``
    (mj_inverse), both to 1e-9 relative: the walker, a body on two slides
    and three hinges (a sliding spherical joint, 1 row) carrying an arm, and a
    leg whose ankle hinges miss each other, with a toe on parallel hinges."""
    mujoco = pytest.importorskip("mujoco")
    mj = mujoco.MjModel.from_xml_string(_mjcf(bodies))
    md = mujoco.MjData(mj)
    model = _walker(bodies).build()
    js = nc.joint_space(model)
    assert mj.nq == mj.nv == js.nv
    rng = np.random.default_rng(23)
    for _ in range(5):
        q = rng.uniform(-1.2, 1.2, js.nq)
        qd = rng.uniform(-2.0, 2.0, js.nv)
        md.qpos[:], md.qvel[:] = q, qd
        mujoco.mj_forward(mj, md)
        state = nc.joint_state(model, q, qd)
        a, _, _ = nc.accelerations(model, state)
        qdd = js.accelerations(state.p, state.v, a)
        assert np.abs(qdd - md.qacc).max() <= 1e-9 * np.abs(md.qacc).max()

        md.qacc[:] = rng.standard_normal(js.nv)
        mujoco.mj_inverse(mj, md)
        tau = nc.inverse_dynamics(model, q, qd, md.qacc.copy())
        assert np.abs(tau - md.qfrc_inverse).max() <= 1e-9 * np.abs(md.qfrc_inverse).max()


def test_body_placements_equal_mujoco(peer):
    """Forward kinematics of q: every body's origin and axes where MuJoCo puts them."""
    mujoco, mj, md = peer
    model = _walker().build()
    js = nc.joint_space(model)
    q = np.random.default_rng(5).uniform(-1.5, 1.5, js.nq)
    md.qpos[:] = q
    mujoco.mj_kinematics(mj, md)
    p = nc.joint_state(model, q).p.reshape(-1, 4, 3)
    for body in model.bodies:
        k = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, body.name)
        assert np.abs(p[body.index, 0] - md.xpos[k]).max() < 1e-13
        assert np.abs(p[body.index, 1:].T - md.xmat[k].reshape(3, 3)).max() < 1e-13


def test_joint_space_round_trip():
    """q → natural-coordinate state → q (and q̇) is the identity away from gimbal lock;
    the state satisfies every constraint (joint_state checks)."""
    model = _walker().build()
    js = nc.joint_space(model)
    rng = np.random.default_rng(7)
    q = rng.uniform(-1.3, 1.3, (6, js.nq))
    qd = rng.standard_normal((6, js.nv))
    for qk, qdk in zip(q, qd):
        state = nc.joint_state(model, qk, qdk)
        assert np.abs(js.positions(state.p) - qk).max() < 1e-12
        assert np.abs(js.velocities(state.p, state.v) - qdk).max() < 1e-12
    dicts = nc.joint_state(model, {"rooty": 0.4, "hip_z": -0.3}, {"rootx": 1.0})
    assert js.positions(dicts.p)[js.q_names.index("hip_z")] == pytest.approx(-0.3, abs=1e-14)


def test_passive_run_conserves_energy():
    """Gravity only: the walker falls and tumbles for 1 s with every DOF moving;
    total energy stays constant to 1e-8 relative of its swing."""
    model = _walker().build()
    js = nc.joint_space(model)
    state = nc.joint_state(model, np.full(js.nq, 0.3), np.linspace(-1.0, 1.0, js.nv))
    sol = nc.simulate(model, 1.0, initial_state=state, rtol=1e-10, proj_tol=1e-12,
                      t_eval=np.linspace(0.0, 1.0, 11))
    swing = np.ptp([model.kinetic_energy(v) for v in sol.v])
    assert swing > 1.0
    assert np.ptp(sol.energy) < 1e-8 * swing
    assert sol.q.shape == (11, js.nq)


# ------------------------------------------------------------ Davenport angles
@pytest.mark.parametrize("axes", [np.eye(3)[[2, 0, 1]],
                                  [_unit((1, 0.2, 0)), _unit((0.1, 0, 1)), _unit((0, 1, -0.3))]])
def test_davenport_angles_invert_the_product_of_three_rotations(axes):
    """R = Rot(u1, θ1) Rot(u2, θ2) Rot(u3, θ3) with SciPy's rotation vectors: the
    angles come back, for Tait–Bryan axes (z, x, y) and oblique ones."""
    rng = np.random.default_rng(3)
    theta = rng.uniform(-1.2, 1.2, (50, 3))
    R = np.stack([np.prod([Rotation.from_rotvec(t * np.asarray(u)) for t, u in zip(row, axes)])
                  .as_matrix() for row in theta])
    assert np.abs(davenport_angles(*axes, R) - theta).max() < 1e-12


def test_gimbal_lock_is_reported_for_rates_and_decomposed_for_positions():
    """Hip z, x, y (the human URDF's): at θx = π/2 the z and y axes align. The
    positions still decompose R (θy = 0, θz takes the whole turn about z);
    the joint rates are not defined there and say so."""
    z, x, y = np.eye(3)[[2, 0, 1]]
    R = rotation_about(z, 0.3) @ rotation_about(x, np.pi / 2) @ rotation_about(y, 0.5)
    angles = davenport_angles(z, x, y, R)
    assert angles[2] == 0.0 and angles[1] == pytest.approx(np.pi / 2, abs=1e-12)
    again = rotation_about(z, angles[0]) @ rotation_about(x, angles[1])
    assert np.abs(again - R).max() < 1e-12

    mech = nc.Mechanism(gravity=GRAVITY)
    mech.add_body("head", 1.0, (0, 0, 0.1), 0.01 * np.eye(3))
    mech.add_compound(nc.GROUND, "head", [("neck_z", "hinge", (0, 0, 0), z),
                                          ("neck_x", "hinge", (0, 0, 0), x),
                                          ("neck_y", "hinge", (0, 0, 0), y)])
    model = mech.build()
    state = nc.joint_state(model, [0.3, np.pi / 2, 0.5])
    js = nc.joint_space(model)
    with pytest.raises(ValueError, match=r"spherical joint 'neck_z\+neck_x\+neck_y'.*gimbal"):
        js.velocities(state.p, state.v)


# ------------------------------------------------------------ refusals and names
@pytest.mark.parametrize("dofs, why", [
    ([("a", "hinge", (0, 0, 0), (0, 0, 1)), ("b", "hinge", (0, 0, 0), (0, 1, 0)),
      ("c", "hinge", (0, 0, 1), (1, 0, 0))], "do not pass through one point"),
    ([("a", "hinge", (0, 0, 0), (0, 0, 1)), ("b", "hinge", (0, 0, 2), (0, 0, -1))],
     "dependent"),
    ([(f"s{k}", "slide", (0, 0, 0), axis) for k, axis in enumerate(
        [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1)])], r"slide axes are \(nearly\) dependent"),
    ([("a", "slide", (0, 0, 0), (1, 0, 0)), ("b", "slide", (0, 0, 0), (0, 1, 0)),
      ("c", "hinge", (0, 0, 0), (1, 0, 0))], "do not span the plane normal"),
    ([("a", "hinge", (0, 0, 0), (0, 0, 1)), ("b", "hinge", (0, 0, 0), (0, 1, 0)),
      ("c", "slide", (0, 0, 0), (1, 0, 0))], "a slide after two or more hinges"),
])
def test_sequences_without_an_exact_constraint_set_are_refused(dofs, why):
    """Three hinges whose lines miss each other, two hinges on one line, four
    slides, a hinge in the plane of its slides, a slide after two hinges:
    ``ValueError`` naming
    the joint, every DOF and what natcoord models; the mechanism is unchanged."""
    mech = nc.Mechanism()
    mech.add_body("link", 1.0, (0, 0, 0), 0.01 * np.eye(3))
    with pytest.raises(ValueError, match=why) as err:
        mech.add_compound(nc.GROUND, "link", dofs, name="arm")
    assert "compound joint 'arm'" in str(err.value)
    assert all(f"'{d[0]}' ({d[1]})" in str(err.value) for d in dofs)
    assert mech.joints == [] and mech.calls[-1][0] == "add_body"


def test_more_compound_kinds_match_their_motion_sets():
    """Pin-in-slot (slide then hinge, hinge then slide), cylindrical, translational
    (two and three slides), Schoenflies, slides before a three-hinge ball or a
    two-hinge universal (the hinges' point on a line or plane, or free): rows
    6 − DOF, and the joint space's
    forward and inverse maps agree at random q (round trip), with constraint
    rows satisfied (joint_state checks every row)."""
    cases = {
        "pin_slot": [("s", "slide", (0, 0, 0), (1, 0.3, 0)),
                     ("h", "hinge", (0.2, 0, 0), (0, 0, 1))],
        "cylindrical": [("h", "hinge", (0.2, 0.1, 0), (0, 0, 1)),
                        ("s", "slide", (5, 5, 5), (0, 0, -1))],
        "translational": [("s1", "slide", (0, 0, 0), (1, 0, 0)),
                          ("s2", "slide", (0, 0, 0), (1, 1, 0))],
        "schoenflies": [("s1", "slide", (0, 0, 0), (1, 0, 0)),
                        ("h", "hinge", (0, 1, 0), (0, 0, 1)),
                        ("s2", "slide", (0, 0, 0), (0, 1, 0)),
                        ("s3", "slide", (0, 0, 0), (0.2, 0, 1))],
    }
    ball = [("hx", "hinge", (0.1, 0.2, 0), (1, 0, 0)),
            ("hz", "hinge", (0.1, 0.26, 0.3), (0, 0.2, 1)),
            ("hy", "hinge", (0.1, 0.5, 0), (0, 1, 0))]
    cases["sliding_spherical"] = [("s1", "slide", (0, 0, 0), (1, 0, 0.3))] + ball
    cases["sliding_spherical2"] = [("s1", "slide", (0, 0, 0), (1, 0, 0.3)),
                                   ("s2", "slide", (0, 0, 0), (0, 1, 0))] + ball
    cases["sliding_universal"] = cases["sliding_spherical2"][:2] + [
        ("s3", "slide", (0, 0, 0), (0, 0, 1))] + ball[:2]
    cases["slot_after"] = cases["pin_slot"][::-1]
    cases["translational3"] = cases["translational"] + [("s3", "slide", (0, 0, 0), (0, 1, 1))]
    rng = np.random.default_rng(11)
    for label, dofs in cases.items():
        mech = nc.Mechanism(gravity=GRAVITY)
        mech.add_body("b", 1.0, (0.1, 0.2, 0.3), np.diag([0.01, 0.02, 0.025]),
                      origin=(0.3, -0.1, 0.2))
        mech.add_compound(nc.GROUND, "b", dofs)
        model = mech.build()
        assert len(model.joints[0].rows) == 6 - len(dofs), label
        js = nc.joint_space(model)
        q, qd = rng.uniform(-1, 1, js.nq), rng.standard_normal(js.nv)
        state = nc.joint_state(model, q, qd)
        assert np.abs(js.positions(state.p) - q).max() < 1e-12, label
        assert np.abs(js.velocities(state.p, state.v) - qd).max() < 1e-12, label
        assert nc.assemble(model).dof == len(dofs), label


def test_bodies_joints_and_frames_have_separate_name_spaces():
    """A joint may be named like a body, and a DOF like a body (URDF and MJCF allow
    it); a joint name used twice, or a DOF name used by another joint, is refused
    naming the joint name space; a reference to a joint where a body is expected
    says it is a joint."""
    mech = nc.Mechanism()
    mech.add_body("gripper", 1.0, (0, 0, 0), 0.01 * np.eye(3))
    mech.add_revolute(nc.GROUND, "gripper", (0, 0, 0), (0, 0, 1), name="gripper")
    mech.add_body("finger", 1.0, (0, 0, 1), 0.01 * np.eye(3), origin=(0, 0, 1))
    mech.add_compound("gripper", "finger", [("finger", "slide", (0, 0, 1), (1, 0, 0)),
                                            ("roll", "hinge", (0, 0, 1), (1, 0, 0))])
    mech.attach_frame("gripper", "gripper")
    model = mech.build()
    assert nc.joint_space(model).q_names == ("gripper", "finger", "roll")
    with pytest.raises(ValueError, match="already used by a joint"):
        mech.add_prismatic(nc.GROUND, "finger", (0, 0, 0), (1, 0, 0), name="gripper")
    with pytest.raises(ValueError, match=r"DOF name\(s\) \['roll'\] already name a joint"):
        mech.add_compound(nc.GROUND, "finger", [("roll", "hinge", (0, 0, 0), (1, 0, 0))],
                          name="other")
    with pytest.raises(ValueError, match="already used by a body"):
        mech.add_body("finger", 1.0, (0, 0, 0), 0.01 * np.eye(3))
    with pytest.raises(ValueError, match="'roll' is a joint, not a body"):
        mech.add_spherical("roll", "finger", (0, 0, 0))
    with pytest.raises(KeyError, match="'roll' is a DOF of the cylindrical compound joint"):
        model.joint_named("roll")


# ------------------------------------------------------------ URDF chains
def _urdf_joint(name, kind, parent, child, xyz=(0, 0, 0), rpy=(0, 0, 0), axis=(0, 0, 1)):
    limit = ('<limit lower="-3" upper="3" effort="100" velocity="10"/>'
             if kind in ("revolute", "prismatic") else "")    # urdfdom requires one
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{_v(xyz)}" rpy="{_v(rpy)}"/>'
            f'<axis xyz="{_v(axis)}"/>{limit}</joint>')


def _urdf_link(name, mass=None, com=(0, 0, 0), moments=(0.01, 0.012, 0.008)):
    if mass is None:
        return f'<link name="{name}"/>'
    ixx, iyy, izz = moments
    return (f'<link name="{name}"><inertial><origin xyz="{_v(com)}"/><mass value="{mass!r}"/>'
            f'<inertia ixx="{ixx!r}" iyy="{iyy!r}" izz="{izz!r}" ixy="0.001" ixz="0" iyz="0"/>'
            f'</inertial></link>')


def leg_urdf(extra=""):
    """A pelvis on a slider; a hip of three revolutes through massless links (z, x,
    y, rotated joint frames); a knee; an ankle of two revolutes through a massless
    link, with a sensor link fixed to it; a prismatic then revolute through a
    massless carriage (a pin in a slot)."""
    return "\n".join([
        '<robot name="leg">', _urdf_link("world"), _urdf_link("pelvis", 5.0, (0, 0, 0.05)),
        _urdf_link("hip_virtual"), _urdf_link("hip_virtual_2"),
        _urdf_link("thigh", 2.0, (0, 0, -0.2), (0.03, 0.03, 0.005)),
        _urdf_link("shin", 1.5, (0, 0, -0.2), (0.02, 0.02, 0.004)),
        _urdf_link("ankle_virtual"), _urdf_link("ankle_sensor"),
        _urdf_link("foot", 0.5, (0.05, 0, -0.02), (0.001, 0.003, 0.003)),
        _urdf_link("carriage"), _urdf_link("tool", 0.3, (0.02, 0.01, 0), (0.003, 0.004, 0.005)),
        _urdf_joint("slider", "prismatic", "world", "pelvis", (0, 0, 1.0), axis=(1, 0, 0)),
        _urdf_joint("hip_z", "revolute", "pelvis", "hip_virtual", (0, 0.1, -0.05), (0.1, 0, 0.2)),
        _urdf_joint("hip_x", "revolute", "hip_virtual", "hip_virtual_2", axis=(1, 0, 0)),
        _urdf_joint("hip_y", "revolute", "hip_virtual_2", "thigh", rpy=(0, 0.3, 0),
                    axis=(0, 1, 0)),
        _urdf_joint("knee", "revolute", "thigh", "shin", (0, 0, -0.4), axis=(0, 1, 0)),
        _urdf_joint("ankle_y", "revolute", "shin", "ankle_virtual", (0, 0, -0.4),
                    axis=(0, 1, 0)),
        _urdf_joint("sensor_mount", "fixed", "ankle_virtual", "ankle_sensor", (0.01, 0, 0)),
        _urdf_joint("ankle_x", "revolute", "ankle_virtual", "foot", axis=(1, 0, 0)),
        _urdf_joint("rail", "prismatic", "pelvis", "carriage", (0.1, 0, 0), axis=(0, 0, 1)),
        _urdf_joint("wrist", "revolute", "carriage", "tool", (0.05, 0, 0), axis=(1, 0, 0)),
        extra, '</robot>'])


def test_urdf_chains_through_massless_links_become_compound_joints(tmp_path):
    """Each chain of moving joints through massless links is one compound joint
    from the last link with mass to the next, each URDF joint a DOF keeping its
    name, in Pinocchio's order; the massless links (and a link fixed to one)
    are frames that move with the chain."""
    path = tmp_path / "leg.urdf"
    path.write_text(leg_urdf())
    mech = nc.load_urdf(path)
    model = mech.build()
    assert [b.name for b in model.bodies] == ["pelvis", "thigh", "shin", "foot", "tool"]
    assert [(j.name, j.kind) for j in model.joints] == [
        ("slider", "prismatic"), ("hip_z+hip_x+hip_y", "spherical"), ("knee", "revolute"),
        ("ankle_y+ankle_x", "universal"), ("rail+wrist", "pin_slot")]
    assert nc.joint_space(model).q_names == (
        "slider", "hip_z", "hip_x", "hip_y", "knee", "ankle_y", "ankle_x", "rail", "wrist")
    assert {name: f.after for name, f in mech.frames.items() if f.after} == {
        "hip_virtual": ("hip_z+hip_x+hip_y", 1), "hip_virtual_2": ("hip_z+hip_x+hip_y", 2),
        "ankle_virtual": ("ankle_y+ankle_x", 1), "ankle_sensor": ("ankle_y+ankle_x", 1),
        "carriage": ("rail+wrist", 1)}
    with pytest.raises(ValueError, match="moves with the first 2 DOF of compound joint"):
        mech.frames["hip_virtual_2"].point()


def _pinocchio_check(path, model, frames, floating=False, samples=4):
    """Largest relative difference of q̈ (natcoord vs Pinocchio ABA at random q, q̇)
    and largest difference of the frames' placements (vs Pinocchio's oMf)."""
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromUrdf(str(path), *([pin.JointModelFreeFlyer()] if floating else []))
    pd = pm.createData()
    js = nc.joint_space(model)
    assert (js.nq, js.nv) == (pm.nq, pm.nv)
    rng = np.random.default_rng(29)
    worst_qdd = worst_frame = 0.0
    for _ in range(samples):
        q = pin.integrate(pm, pin.neutral(pm), 0.8 * rng.standard_normal(pm.nv))
        qd = rng.standard_normal(pm.nv)
        qdd = pin.aba(pm, pd, q, qd, np.zeros(pm.nv))
        state = nc.joint_state(model, q, qd)
        a, _, _ = nc.accelerations(model, state)
        mine = js.accelerations(state.p, state.v, a)
        worst_qdd = max(worst_qdd, np.abs(mine - qdd).max() / np.abs(qdd).max())
        pin.forwardKinematics(pm, pd, q)
        pin.updateFramePlacements(pm, pd)
        for name, frame in frames.items():
            origin, axes = js.frame_placement(frame, state.p)
            M = pd.oMf[pm.getFrameId(name)]
            worst_frame = max(worst_frame, np.abs(origin - M.translation).max(),
                              np.abs(axes - M.rotation).max())
    return worst_qdd, worst_frame


def test_urdf_chains_match_pinocchio(tmp_path):
    """Pinocchio models the massless links as zero-inertia bodies; its ABA and
    natcoord's compound joints give the same q̈ to 1e-9 relative, and every link
    frame (massless ones moving with their chain) is where Pinocchio puts it."""
    path = tmp_path / "leg.urdf"
    path.write_text(leg_urdf())
    mech = nc.load_urdf(path)
    worst_qdd, worst_frame = _pinocchio_check(path, mech.build(), mech.frames)
    assert worst_qdd < 1e-9 and worst_frame < 1e-12


def test_human_urdf_imports_and_matches_pinocchio(robots_folder):
    """example-robot-data's human: hips, spine, neck and shoulders of three revolutes
    through two massless links, ankles, elbows and wrists of two; refused before
    (massless links), now spherical and universal compound joints, on a floating
    base: 6 + 36 DOF as Pinocchio, q̈ equal to 1e-9 relative."""
    path = robots_folder / "human_description/robots/human.urdf"
    mech = nc.load_urdf(path, floating_base=True)
    model = mech.build()
    kinds = [j.kind for j in model.joints if j.dofs]
    assert kinds.count("spherical") == 6 and kinds.count("universal") == 7
    worst_qdd, worst_frame = _pinocchio_check(path, model, mech.frames, floating=True,
                                              samples=2)
    assert worst_qdd < 1e-9 and worst_frame < 1e-12


def test_urdf_massless_links_that_cannot_be_folded_are_refused_or_become_bodies(tmp_path):
    """A massless link at the end of a chain (no inertia decides its motion) is
    named among the links that cannot be bodies; a chain of three revolutes
    through massless links whose axes do not meet in one point has no constraint
    set: its first two (a universal joint) lead to the second massless link, a
    massless body, and the third joins it to the thigh — Pinocchio's q̈ and frames."""
    path = tmp_path / "leaf.urdf"
    path.write_text(leg_urdf(_urdf_link("finger") + _urdf_joint(
        "finger_joint", "revolute", "foot", "finger", (0.1, 0, 0))))
    with pytest.raises(ValueError, match=r'<link name="finger">.*end of a chain'):
        nc.load_urdf(path)
    old_hip = _urdf_joint("hip_y", "revolute", "hip_virtual_2", "thigh", rpy=(0, 0.3, 0),
                          axis=(0, 1, 0))
    offset = leg_urdf().replace(old_hip, old_hip.replace('xyz="0.0 0.0 0.0"',
                                                         'xyz="0.0 0.0 -0.05"'))
    assert offset != leg_urdf()
    path.write_text(offset)
    mech = nc.load_urdf(path)
    model = mech.build()
    assert [(b.name, b.mass) for b in model.bodies if b.point_mass] == [("hip_virtual_2", 0.0)]
    assert [(j.name, j.kind) for j in model.joints][1:3] == [("hip_z+hip_x", "universal"),
                                                            ("hip_y", "revolute")]
    assert nc.joint_space(model).q_names == (
        "slider", "hip_z", "hip_x", "hip_y", "knee", "ankle_y", "ankle_x", "rail", "wrist")
    worst_qdd, worst_frame = _pinocchio_check(path, model, mech.frames)
    assert worst_qdd < 1e-9 and worst_frame < 1e-12
    nc.save_mechanism(mech, tmp_path / "leg.json")     # a massless body keeps its mass 0,
    loaded = nc.load_mechanism(tmp_path / "leg.json")  # the named frames their places
    again = loaded.build()
    assert [(b.name, b.mass) for b in again.bodies if b.point_mass] == [("hip_virtual_2", 0.0)]
    state = nc.assemble(model).state
    assert np.array_equal(nc.accelerations(again, state)[0], nc.accelerations(model, state)[0])
    assert loaded.frames.keys() == mech.frames.keys()
    for name, frame in mech.frames.items():
        placed = nc.joint_space(again).frame_placement(loaded.frames[name], state.p)
        for ours, theirs in zip(placed, nc.joint_space(model).frame_placement(frame, state.p)):
            assert np.array_equal(ours, theirs), name
    moving = next(name for name, frame in mech.frames.items() if frame.after is not None)
    sol = nc.simulate(again, 1e-3, t_eval=[0.0])
    with pytest.raises(ValueError, match="frame_placement"):    # not fixed in a body
        sol.point(moving, (0, 0, 0), local=True)


def test_compound_joints_round_trip_through_model_files(tmp_path):
    """save_mechanism / load_mechanism replay add_compound: same rows, same q names."""
    mech = _walker()
    nc.save_mechanism(mech, tmp_path / "walker.json")
    again = nc.load_mechanism(tmp_path / "walker.json").build()
    model = mech.build()
    assert again.row_labels == model.row_labels
    assert nc.joint_space(again).q_names == nc.joint_space(model).q_names
    state = nc.assemble(model).state
    assert np.abs(nc.accelerations(again, state)[0] - nc.accelerations(model, state)[0]).max() \
        < 1e-12


def test_a_free_root_named_like_a_joint_gets_its_own_name():
    """A free body whose name a joint also has: the free joint is ``<body>.free``,
    so both keep their columns."""
    mech = nc.Mechanism()
    mech.add_body("base", 1.0, (0, 0, 0), 0.01 * np.eye(3))
    mech.add_body("arm", 1.0, (1, 0, 0), 0.01 * np.eye(3), origin=(1, 0, 0))
    mech.add_revolute("base", "arm", (1, 0, 0), (0, 0, 1), name="base")
    js = nc.joint_space(mech.build())
    assert js.joint_names == ("base.free", "base")
    assert js.q_names[-1] == "base" and js.q_names[0] == "base.free.x"


def test_a_compound_joint_reached_from_its_child_side():
    """The tree may reach a compound joint from its body b (here ground is b): q
    still moves b relative to a. Round trip q → state → q, and at the passive
    accelerations (the KKT solve) inverse dynamics needs zero torque (Kane's
    equations, an independent computation)."""
    mech = nc.Mechanism(gravity=GRAVITY)
    mech.add_body("pod", 2.0, (0.1, 0.0, 0.05), np.diag([0.02, 0.03, 0.025]), origin=(0, 0, 1))
    mech.add_compound("pod", nc.GROUND, [("x", "slide", (0, 0, 1), (1, 0, 0)),
                                         ("z", "slide", (0, 0, 1), (0, 0, 1)),
                                         ("pitch", "hinge", (0.1, 0, 1), (0, 1, 0))])
    mech.add_body("arm", 0.5, (0.3, 0.0, 1.0), np.diag([0.001, 0.004, 0.004]),
                  origin=(0.2, 0, 1))
    mech.add_compound("pod", "arm", [("ay", "hinge", (0.2, 0, 1), (0, 1, 0)),
                                     ("ax", "hinge", (0.2, 0, 1.05), (1, 0, 0))])
    model = mech.build()
    js = nc.joint_space(model)
    assert js.tree[0].reversed and js.q_names == ("x", "z", "pitch", "ay", "ax")
    q, qd = np.array([0.3, -0.2, 0.7, -0.4, 0.5]), np.array([0.5, -1.0, 2.0, 1.5, -0.7])
    state = nc.joint_state(model, q, qd)
    assert np.abs(js.positions(state.p) - q).max() < 1e-12
    assert np.abs(js.velocities(state.p, state.v) - qd).max() < 1e-12
    a, _, _ = nc.accelerations(model, state)
    qdd = js.accelerations(state.p, state.v, a)
    tau = nc.inverse_dynamics(model, q, qd, qdd)
    assert np.abs(tau).max() < 1e-10 * max(1.0, np.abs(qdd).max())
