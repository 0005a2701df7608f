"""MJCF through MuJoCo's compiler (docs/model-format.md#3-mjcf-import): what the
compiler resolves (defaults and classes, ``<include>``, ``<frame>``,
``settotalmass``, ``childclass``) and what natcoord models on top of it (joint
stiffness with ``springref``, damping, gravity compensation, the gravity flag,
two hinges whose axis lines meet, a hinge and an opposed slide, a ball joint,
bodies welded to a parent) give MuJoCo's ``mj_forward`` joint accelerations at
random states, to 1e-10 relative."""
import warnings

import numpy as np
import pytest

import natcoord as nc

mujoco = pytest.importorskip("mujoco")
from natcoord.io.mjcf import from_mujoco  # noqa: E402  (needs mujoco)

INCLUDED = """
<mujoco>
  <body name="tail" pos="0.3 0 -0.5" childclass="stiff">
    <joint name="tail_hinge" axis="1 0 0"/>
    <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.03"/>
  </body>
</mujoco>
"""

FEATURES = """
<mujoco model="features">
  <compiler angle="degree" settotalmass="7.5"/>
  <option gravity="0.3 -0.2 -9.81"><flag contact="disable"/></option>
  <default>
    <joint damping="0.05"/>
    <geom density="800"/>
    <default class="stiff">
      <joint stiffness="2.0" springref="20" damping="0.2"/>
    </default>
  </default>
  <worldbody>
    <frame pos="0 0 1" euler="0 0 30">
      <body name="base" pos="0.1 0 0" euler="10 0 0">
        <joint name="yaw" axis="0 0 1" pos="0 0 0.05"/>
        <geom type="box" size="0.1 0.08 0.05"/>
        <body name="upper" pos="0.2 0 0" gravcomp="0.6">
          <!-- perpendicular hinges, anchors apart on lines that meet at (0, 0.05, 0) -->
          <joint name="roll" axis="0 1 0" pos="0 0.02 0"/>
          <joint name="pitch" axis="1 0 0" pos="0.04 0.05 0" class="stiff"/>
          <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
          <body name="sensor" pos="0.3 0 0.05" euler="0 45 0">
            <geom type="sphere" size="0.03" mass="0.2"/>
          </body>
          <body name="slider" pos="0.3 0 0">
            <joint name="turn" type="hinge" axis="1 0 0"/>
            <joint name="push" type="slide" axis="-1 0 0" stiffness="30" springref="0.05"/>
            <geom type="cylinder" size="0.03 0.05" euler="0 90 0"/>
            <body name="wrist" pos="0.1 0 0">
              <joint name="wrist" type="ball" damping="0"/>
              <geom type="ellipsoid" size="0.05 0.03 0.02" pos="0.05 0 0"/>
            </body>
          </body>
        </body>
      </body>
    </frame>
    <include file="tail.xml"/>
  </worldbody>
</mujoco>
"""


def _files(tmp_path, text=FEATURES):
    (tmp_path / "tail.xml").write_text(INCLUDED)
    path = tmp_path / "features.xml"
    path.write_text(text)
    return path


def _compare(model, m, seed=5, states=3):
    """Largest |q̈ − MuJoCo's| relative to max |q̈| over a few random states."""
    d = mujoco.MjData(m)
    js = nc.joint_space(model)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(states):
        qpos = np.array(m.qpos0)
        mujoco.mj_integratePos(m, qpos, 0.5 * rng.standard_normal(m.nv), 1.0)
        d.qpos[:], d.qvel[:] = qpos, rng.standard_normal(m.nv)
        mujoco.mj_forward(m, d)
        q, qd, expected = from_mujoco(model, d.qpos, d.qvel, d.qacc)
        state = nc.joint_state(model, q, qd)
        a, _, _ = nc.accelerations(model, state)
        want, _ = js.vector(expected, "expected")
        got = js.accelerations(state.p, state.v, a)
        worst = max(worst, np.abs(got - want).max() / np.abs(want).max())
    return worst


def test_compiled_features_match_mj_forward(tmp_path):
    path = _files(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mech = nc.load_mjcf(path)
    assert not [w for w in caught if str(path) in str(w.message)]     # all modelled
    m = mujoco.MjModel.from_xml_path(str(path))
    model = mech.build()
    # the sensor body is welded to "upper": lumped, and kept as a frame
    assert [b.name for b in model.bodies] == ["base", "upper", "slider", "wrist", "tail"]
    assert mech.frames["sensor"].body == "upper"
    assert sum(b.mass for b in model.bodies) == pytest.approx(7.5, rel=1e-13)   # settotalmass
    kinds = {j.name: j.kind for j in model.joints}
    assert kinds == {"yaw": "revolute", "roll": "universal", "turn": "cylindrical",
                     "wrist": "spherical", "tail_hinge": "revolute"}
    dofs = mech.import_report["dofs"]       # a joint named like its body: separate name spaces
    assert (dofs["wrist"]["joint"], dofs["wrist"]["coordinate"]) == ("wrist", "ball")
    assert (dofs["pitch"]["joint"], dofs["pitch"]["coordinate"]) == ("roll", "angle_b")
    assert dofs["push"]["sign"] == -1                   # natcoord's slide axis is the hinge's
    assert _compare(model, m) < 1e-10


def test_gravity_flag_and_disabled_passive_forces(tmp_path):
    """``<flag gravity="disable" spring="disable"/>``: no gravity (nor gravity
    compensation), no joint stiffness; damping stays."""
    text = FEATURES.replace('<flag contact="disable"/>',
                            '<flag contact="disable" gravity="disable" spring="disable"/>')
    path = _files(tmp_path, text)
    mech = nc.load_mjcf(path)
    assert np.array_equal(mech.gravity, np.zeros(3))
    assert all(f.k == 0.0 and f.c > 0.0 for f in mech.forces)     # dampers only
    m = mujoco.MjModel.from_xml_path(str(path))
    assert _compare(mech.build(), m) < 1e-10


def test_not_modelled_elements_are_named_once(tmp_path):
    """Limits, armature, an actuator, a tendon and a sensor: one warning naming each,
    the same list on the model; contacts of colliding geoms too."""
    text = FEATURES.replace('<flag contact="disable"/>', "").replace('<joint name="yaw" axis="0 0 1" pos="0 0 0.05"/>',
                            '<joint name="yaw" axis="0 0 1" pos="0 0 0.05" range="-30 30" '
                            'armature="0.01"/>')
    text = text.replace("</worldbody>", """</worldbody>
      <tendon><fixed name="couple"><joint joint="yaw" coef="1"/></fixed></tendon>
      <actuator><motor name="drive" joint="yaw" gear="50"/></actuator>
      <sensor><jointpos name="angle" joint="yaw"/></sensor>""")
    path = _files(tmp_path, text)
    with pytest.warns(UserWarning) as caught:
        model = nc.load_mjcf(path).build()
    ours = [w for w in caught if str(w.message).startswith(str(path))]
    assert len(ours) == 1
    report = model.import_report["not_modelled"]
    assert report["joint limits"] == ["yaw"]
    assert report["armature (rotor inertia: not a constant natural-coordinate mass)"] == ["yaw"]
    assert report["tendons"] == ["couple"]
    # the motor acts only in a run given its torques (nc.actuator_torques)
    assert report["actuators (applied only with u=nc.actuator_torques(model, ctrl))"] == [
        "drive"]
    assert model.import_report["actuators"] == {"drive": {
        "joint": "yaw", "gear": 50.0, "gain": 1.0, "bias": (0.0, 0.0, 0.0), "ctrlrange": None,
        "forcerange": None}}
    assert report["sensors"] == ["angle"]
    assert len(report["contacts"]) == 6                 # every geom collides by default
    message = str(ours[0].message)
    assert all(name in message for names in report.values() for name in names)


def test_refusal_names_every_element(tmp_path):
    """Three refusals in one message: a hinge then a ball joint in one body (no constraint
    set, and a ball is no DOF to compose through a massless frame), a body whose
    inertia is a plane's (MuJoCo accepts it; natcoord needs a volume), a connect whose
    points do not meet at qpos0 (a weld with another relpose)."""
    text = """
    <mujoco>
      <worldbody>
        <body name="cart"><joint name="x" axis="1 0 0"/><joint name="a" type="ball"
          pos="0.3 0.1 0"/>
          <geom size="0.1"/></body>
        <body name="arm" pos="1 0 0"><joint name="h" axis="0 1 0"/>
          <body name="plate" pos="0.5 0 0"><joint name="g" axis="0 1 0"/>
            <inertial pos="0 0 0" mass="1" diaginertia="0.5 0.5 1"/>
            <body name="hand" pos="0.1 0 0"><joint name="k" axis="0 1 0"/><geom size="0.05"/>
            </body></body><geom size="0.1"/></body>
      </worldbody>
      <equality><weld name="loop" body1="cart" body2="arm" relpose="0 0 0 1 0 0 0"/></equality>
    </mujoco>"""
    path = tmp_path / "bad.xml"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        nc.load_mjcf(path)
    message = str(err.value)
    assert message.startswith(f"{path}: cannot be imported exactly (3 elements): ")
    assert '<body name="cart">: ' in message and "'x+a'" in message \
        and "DOF 'a': kind must be 'hinge' or 'slide', got 'ball'" in message
    assert '<body name="plate">: body \'plate\': inertia [0.5 0.5 1. ] describes a line or ' \
           'plane mass distribution' in message
    assert '<equality><weld name="loop">: its two points are 1 m apart at qpos0' in message


def test_connect_and_weld_between_sites(tmp_path):
    """A four-bar closed by a site-based connect: one DOF, the loop exact."""
    text = """
    <mujoco>
      <worldbody>
        <body name="crank"><joint axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 0.5" size="0.02"/>
          <site name="crank_tip" pos="0 0 0.5"/>
          <body name="coupler" pos="0 0 0.5"><joint axis="0 1 0"/>
            <geom type="capsule" fromto="0 0 0 1 0 0" size="0.02"/>
            <site name="coupler_tip" pos="1 0 0"/></body></body>
        <body name="rocker" pos="1 0 0"><joint axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 0.5" size="0.02"/>
          <site name="rocker_tip" pos="0 0 0.5"/></body>
      </worldbody>
      <equality><connect site1="coupler_tip" site2="rocker_tip"/></equality>
    </mujoco>"""
    path = tmp_path / "four_bar.xml"
    path.write_text(text)
    with pytest.warns(UserWarning, match="contacts"):
        model = nc.load_mjcf(path).build()
    assert [j.kind for j in model.joints] == ["revolute"] * 3 + ["spherical"]
    assert nc.assemble(model).dof == 1
    sol = nc.simulate(model, t_end=1.0, rtol=1e-9, proj_tol=1e-12)
    assert np.abs(sol.point("coupler", (1, 0, 0.5)) - sol.point("rocker", (1, 0, 0.5))).max() \
        < 1e-11


def test_free_body_listed_first(tmp_path):
    """A free box listed before a pendulum: MuJoCo's qpos has the free joint first,
    natcoord's joint space the ground tree first (free roots follow); by name the
    accelerations agree."""
    text = """
    <mujoco><option><flag contact="disable"/></option>
      <worldbody>
        <body name="box" pos="1 0 2" euler="10 20 30"><freejoint name="float"/>
          <geom type="box" size="0.1 0.2 0.3"/></body>
        <body name="pole" pos="0 0 1"><joint name="swing" axis="0 1 0" damping="0.1"/>
          <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03"/></body>
      </worldbody>
    </mujoco>"""
    path = tmp_path / "mixed.xml"
    path.write_text(text)
    model = nc.load_mjcf(path).build()
    m = mujoco.MjModel.from_xml_path(str(path))
    assert [m.joint(j).name for j in range(m.njnt)] == ["float", "swing"]
    assert nc.joint_space(model).joint_names == ("swing", "box")
    assert _compare(model, m) < 1e-12


ACTUATORS = """
  <actuator>
    <motor name="spin" joint="yaw" gear="3" ctrlrange="-1 1"/>
    <position name="hold" joint="pitch" kp="4" gear="1.5"/>
    <velocity name="brake" joint="push" kv="2" forcerange="-0.5 0.5"/>
    <general name="bent" joint="tail_hinge" gainprm="2" biastype="affine"
             biasprm="0.3 -1 -0.2"/>
    <motor name="twist" joint="wrist" gear="0 0 1 0 0 0"/>
    <general name="lag" joint="turn" dyntype="filter" dynprm="0.1"/>
  </actuator>
"""


def test_actuators_as_joint_torques(tmp_path):
    """MuJoCo's motor, position, velocity and affine-bias actuators on hinge and slide
    DOF (one inside a universal joint, one on an opposed slide), with a control and a
    force clamp, applied by ``nc.actuator_torques``: the run's q̈ at random states is
    MuJoCo's ``mj_forward`` q̈ with the same ``ctrl``, to 1e-10 relative. A ball
    joint's motor and a filtered actuator are named as not modelled. The position
    actuator's joint has a ``ref``: its length is ``gear · qpos``, qpos0 included."""
    text = FEATURES.replace('class="stiff"/>', 'class="stiff" ref="15"/>', 1)
    path = _files(tmp_path, text.replace("</worldbody>", "</worldbody>" + ACTUATORS))
    with pytest.warns(UserWarning) as caught:
        model = nc.load_mjcf(path).build()
    assert "twist, lag" in str(caught[0].message)
    report = model.import_report["not_modelled"]
    assert report["actuators"] == ["twist", "lag"]
    assert report["actuators (applied only with u=nc.actuator_torques(model, ctrl))"] == [
        "spin", "hold", "brake", "bent"]
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    js = nc.joint_space(model)
    rng = np.random.default_rng(3)
    ctrl = {"spin": 2.5, "hold": -0.4, "brake": 5.0, "bent": 0.7}    # spin beyond its range
    for _ in range(3):
        qpos = np.array(m.qpos0)
        mujoco.mj_integratePos(m, qpos, 0.5 * rng.standard_normal(m.nv), 1.0)
        d.qpos[:], d.qvel[:] = qpos, rng.standard_normal(m.nv)
        d.ctrl[:] = [ctrl.get(m.actuator(u).name, 0.0) for u in range(m.nu)]
        mujoco.mj_forward(m, d)
        assert abs(d.actuator_force[m.actuator("brake").id]) == 0.5     # force clamped
        q, qd, expected = from_mujoco(model, d.qpos, d.qvel, d.qacc)
        state = nc.joint_state(model, q, qd)
        sol = nc.simulate(model, 1e-3, initial_state=state, t_eval=[0.0],
                          u=nc.actuator_torques(model, ctrl))
        want, _ = js.vector(expected, "expected")
        assert np.abs(sol.qdd[0] - want).max() < 1e-10 * np.abs(want).max()


def test_actuator_controls_are_checked(tmp_path):
    """Controls are refused with the actuators' names: a wrong count, an unknown name,
    NaN; a model without applicable actuators says why."""
    path = _files(tmp_path, FEATURES.replace("</worldbody>", "</worldbody>" + ACTUATORS))
    with pytest.warns(UserWarning):
        model = nc.load_mjcf(path).build()
    with pytest.raises(ValueError, match=r"4 finite numbers, one per actuator \['spin', "):
        nc.actuator_torques(model, [1.0, 2.0])
    with pytest.raises(ValueError, match=r"unknown actuators \['twist'\]"):
        nc.actuator_torques(model, {"twist": 1.0})
    with pytest.raises(ValueError, match="finite"):
        nc.simulate(model, 0.1, u=nc.actuator_torques(model, lambda t, q, qd: [np.nan] * 4))
    with pytest.raises(ValueError, match="no MuJoCo actuator natcoord applies"):
        nc.actuator_torques(nc.load_mjcf(_files(tmp_path)).build(), [])


def test_one_actuator_takes_a_bare_number(tmp_path):
    """A pendulum's one motor (gear 3) driven by a bare number, not a list: the hinge's
    q̈ at rest, hanging, is gear·ctrl / I about the hinge, MuJoCo's too."""
    path = tmp_path / "motor.xml"
    path.write_text("""<mujoco><worldbody><body name="arm"><joint name="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -0.5" mass="2" diaginertia="0.1 0.1 0.1"/></body></worldbody>
      <actuator><motor name="drive" joint="hinge" gear="3"/></actuator></mujoco>""")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = nc.load_mjcf(path).build()
    sol = nc.simulate(model, 1e-3, t_eval=[0.0], u=nc.actuator_torques(model, 0.25))
    inertia = 0.1 + 2 * 0.5 ** 2                    # about the hinge: I_c + m d²
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    d.ctrl[:] = 0.25
    mujoco.mj_forward(m, d)
    assert sol.qdd[0, 0] == pytest.approx(3 * 0.25 / inertia, rel=1e-12)
    assert sol.qdd[0, 0] == pytest.approx(d.qacc[0], rel=1e-12)


def test_actuators_and_welded_bodies_survive_a_model_file(tmp_path):
    """A saved and reloaded MJCF model keeps its import report, so the motor still
    drives the hinge as MuJoCo's does, and the body welded to the arm stays a named
    frame where MuJoCo puts that body."""
    path = tmp_path / "motor.xml"
    path.write_text("""<mujoco><worldbody><body name="arm"><joint name="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -0.5" mass="2" diaginertia="0.1 0.1 0.1"/>
      <body name="tip" pos="0.1 0 -1"><inertial pos="0 0 0" mass="0.5"
      diaginertia="0.01 0.01 0.01"/></body></body></worldbody>
      <actuator><motor name="drive" joint="hinge" gear="3"/></actuator></mujoco>""")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = nc.load_mjcf(path)
    nc.save_mechanism(mech, tmp_path / "motor.json")
    again = nc.load_mechanism(tmp_path / "motor.json")
    assert again.import_report["actuators"]["drive"]["gear"] == 3.0
    model = again.build()
    sol = nc.simulate(model, 1e-3, t_eval=[0.0], u=nc.actuator_torques(model, 0.25))
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    d.ctrl[:] = 0.25
    mujoco.mj_forward(m, d)
    assert sol.qdd[0, 0] == pytest.approx(d.qacc[0], rel=1e-12)
    tip = again.frames["tip"]
    assert np.abs(sol.point(tip.body, tip.origin, local=True)[0] - d.body("tip").xpos).max() \
        < 1e-15
