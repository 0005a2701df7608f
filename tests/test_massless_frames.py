"""Massless bodies: the frames between joints that no single constraint set joins
(issue 23; dm-control dog's scapulae, three hinges on skew lines).

A massless body adds no term to the equations of motion; the block factorization
pivots on it with the joints around it (natcoord.linalg.blockldl). The specs:

* a massless cross between two hinges whose axes meet is the universal joint:
  the same accelerations as ``add_universal``, which has no frame;
* MJCF bodies whose hinges MuJoCo composes in sequence with no exact constraint
  set — three skew hinges (one massless frame), five (two) — give MuJoCo's
  ``mj_forward`` accelerations, each DOF a joint-space column of its own name,
  and a passive run keeps its energy;
* a massless body at the end of a chain is refused (its motion costs nothing).
"""
import numpy as np
import pytest

import natcoord as nc

G = 9.81
ZERO = np.zeros((3, 3))
ARM = np.diag([2e-3, 1e-2, 1e-2])


def _cross(universal):
    """An arm hanging from a Cardan joint at the origin: axes x (fixed in ground), then
    y (fixed in the arm); as one universal joint, or two hinges through a massless cross."""
    mech = nc.Mechanism(gravity=(0.0, 0.0, -G))
    mech.add_body("arm", 1.2, com=(0.1, 0.05, -0.3), inertia=ARM)
    if universal:
        mech.add_universal(nc.GROUND, "arm", point=(0, 0, 0), axis_a=(1, 0, 0),
                           axis_b=(0, 1, 0), name="u")
    else:
        mech.add_body("cross", 0.0, com=(0, 0, 0), inertia=ZERO)
        mech.add_revolute(nc.GROUND, "cross", point=(0, 0, 0), axis=(1, 0, 0), name="a")
        mech.add_revolute("cross", "arm", point=(0, 0, 0), axis=(0, 1, 0), name="b")
    return mech.build()


@pytest.mark.parametrize("solver", ["block", "dense", "superlu"])
def test_a_massless_cross_between_two_hinges_is_a_universal_joint(solver):
    frame, joint = _cross(universal=False), _cross(universal=True)
    js_f, js_u = nc.joint_space(frame), nc.joint_space(joint)
    rng = np.random.default_rng(3)
    for _ in range(4):
        q, qd = rng.uniform(-1.2, 1.2, 2), rng.standard_normal(2)
        out = []
        for model, js, names in ((frame, js_f, ("a", "b")), (joint, js_u, ("u.angle_a",
                                                                            "u.angle_b"))):
            st = nc.joint_state(model, dict(zip(names, q)), dict(zip(names, qd)))
            a, _, _ = nc.accelerations(model, st, solver=solver)
            qdd = dict(zip(js.v_names, js.accelerations(st.p, st.v, a)))
            out.append(np.array([qdd[n] for n in names]))
        assert np.abs(out[0] - out[1]).max() <= 1e-12 * max(1.0, np.abs(out[1]).max())


def test_a_massless_body_at_the_end_of_a_chain_is_refused():
    mech = nc.Mechanism(gravity=(0.0, 0.0, -G))
    mech.add_body("arm", 1.0, com=(0.2, 0, 0), inertia=ARM)
    mech.add_body("tip", 0.0, com=(0.4, 0, 0), inertia=ZERO, origin=(0.4, 0, 0))
    mech.add_revolute(nc.GROUND, "arm", point=(0, 0, 0), axis=(0, 1, 0))
    mech.add_revolute("arm", "tip", point=(0.4, 0, 0), axis=(0, 0, 1))
    with pytest.raises(ValueError, match=r"point masses \['tip'\] turn without kinetic"):
        mech.build()


def test_a_massless_body_needs_zero_inertia():
    mech = nc.Mechanism()
    with pytest.raises(ValueError, match="mass must be a positive"):
        mech.add_body("b", 0.0, com=(0, 0, 0), inertia=np.eye(3))


def _v(x):
    return " ".join(repr(float(c)) for c in x)


def _mjcf(hinges):
    """A torso on a hinge to the world, a limb on ``hinges`` (name, pos, axis in the
    limb's frame), a hand on one more hinge."""
    joints = "".join(f'<joint name="{n}" type="hinge" pos="{_v(p)}" axis="{_v(a)}"/>'
                     for n, p, a in hinges)
    return f"""<mujoco model="skew"><option gravity="0 0 -9.81"/>
<worldbody><body name="torso" pos="0 0 1">
  <inertial pos="0.05 0 0" mass="3" fullinertia="0.05 0.08 0.07 0.004 0 0.002"/>
  <joint name="root" type="hinge" axis="0 1 0"/>
  <body name="limb" pos="0.2 0.1 -0.05" quat="0.95 0.1 -0.2 0.2">
    <inertial pos="0.01 0.02 -0.1" mass="0.4" fullinertia="0.004 0.0035 0.0012 0.0002 0 0"/>
    {joints}
    <body name="hand" pos="0 0.02 -0.25">
      <inertial pos="0 0 -0.05" mass="0.2" fullinertia="0.0006 0.0005 0.0002 0 0 0"/>
      <joint name="wrist" type="hinge" axis="1 0 0"/>
    </body>
  </body>
</body></worldbody></mujoco>"""


#: dog's left scapula: supinate, abduct, extend on three skew lines (one frame)
SCAPULA = [("supinate", (-0.03, 0.0, 0.07), (0, 0, 1)), ("abduct", (0.0, -0.03, 0.0), (1, 0, 0)),
           ("extend", (0.0, 0.02, 0.07), (0.287, 0.958, 0))]
#: five hinges, no two consecutive runs with one constraint set: two frames
FIVE = [("h1", (0.0, 0.0, 0.05), (0, 0, 1)), ("h2", (0.0, -0.03, 0.0), (1, 0, 0)),
        ("h3", (0.02, 0.02, 0.03), (0.3, 1, 0)), ("h4", (0.0, 0.04, -0.02), (0, 0.2, 1)),
        ("h5", (-0.03, 0.0, -0.04), (1, 0.1, 0.4))]


@pytest.mark.parametrize("hinges, frames", [(SCAPULA, 1), (FIVE, 2)], ids=["scapula", "five"])
def test_hinges_without_a_constraint_set_compose_through_massless_frames_as_mujoco(hinges,
                                                                                  frames):
    mujoco = pytest.importorskip("mujoco")
    from natcoord.io.mjcf import from_mjmodel, from_mujoco
    mj = mujoco.MjModel.from_xml_string(_mjcf(hinges))
    md = mujoco.MjData(mj)
    model = from_mjmodel(mj).build()
    assert sum(b.mass == 0.0 for b in model.bodies) == frames
    js = nc.joint_space(model)
    names = ["root", *(n for n, _, _ in hinges), "wrist"]
    assert list(js.v_names) == names                           # MuJoCo's dof order
    rng = np.random.default_rng(11)
    for _ in range(4):
        md.qpos[:], md.qvel[:] = rng.uniform(-1.0, 1.0, mj.nq), rng.standard_normal(mj.nv)
        mujoco.mj_forward(mj, md)
        q, qd, expected = from_mujoco(model, md.qpos, md.qvel, md.qacc)
        st = nc.joint_state(model, q, qd)
        a, _, _ = nc.accelerations(model, st)
        qdd = js.accelerations(st.p, st.v, a)
        want, _ = js.vector(expected, "expected")
        assert np.abs(qdd - want).max() <= 1e-9 * max(1.0, np.abs(want).max())
    sol = nc.simulate(model, 1.0, initial_state=st, rtol=1e-10, proj_tol=1e-12)
    swing = np.ptp([model.kinetic_energy(v) for v in sol.v])
    assert swing > 0.1
    assert np.ptp(sol.energy) < 1e-7 * swing
