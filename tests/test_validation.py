"""Bad input fails early and says where and what to change (docs/method.md#3-conventions).

Modelling errors raise ``ValueError`` at ``add_*``/``build()`` time naming the
body or joint; an impossible assembly raises ``AssemblyError`` with the
residual and the joints involved; a failed integration raises
``IntegrationError`` carrying everything integrated so far.
"""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import natcoord as nc

NAN = float("nan")
ROTATION = Rotation.from_rotvec([0.3, 0.4, -0.5]).as_matrix()
ROD = dict(mass=1.0, com=(0.5, 0.0, 0.0), inertia=nc.rod_inertia(1.0, 1.0, 0.05))


@pytest.fixture
def mech():
    """A rod hinged to ground at the origin (gravity −y)."""
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0))
    mech.add_body("rod", **ROD)
    mech.add_revolute(nc.GROUND, "rod", point=(0, 0, 0), axis=(0, 0, 1), name="hinge")
    return mech


def raises(call, *phrases):
    """``call()`` raises ValueError whose message contains every phrase."""
    with pytest.raises(ValueError) as err:
        call()
    for phrase in phrases:
        assert phrase in str(err.value)


BAD_BODIES = {   # change to a valid rod -> phrases the message must contain
    "zero mass": (dict(mass=0.0), ["mass must be a positive"]),
    "negative mass": (dict(mass=-2.0), ["mass must be a positive"]),
    "nan mass": (dict(mass=NAN), ["mass must be a positive finite"]),
    "asymmetric inertia": (dict(inertia=[[0.1, 0.02, 0.0], [0.0, 0.1, 0.0], [0.0, 0.0, 0.1]]),
                           ["not symmetric"]),
    "triangle": (dict(inertia=np.diag([0.1, 0.1, 0.3])), ["triangle inequality"]),
    "line": (dict(inertia=np.diag([0.0, 0.1, 0.1])), ["line or plane", "thickness"]),
    "oblique line": (dict(inertia=ROTATION @ np.diag([0.0, 0.1, 0.1]) @ ROTATION.T),
                     ["line or plane"]),
    "plane": (dict(inertia=np.diag([0.1, 0.2, 0.3])), ["line or plane", "thickness"]),
    "nan inertia": (dict(inertia=np.diag([0.1, NAN, 0.1])), ["inertia", "finite"]),
    "nan com": (dict(com=(0.5, NAN, 0.0)), ["com", "finite"]),
    "inf origin": (dict(origin=(np.inf, 0.0, 0.0)), ["origin", "finite"]),
    "left-handed axes": (dict(axes=np.diag([1.0, 1.0, -1.0])), ["right-handed"]),
}


@pytest.mark.parametrize("change, phrases", BAD_BODIES.values(), ids=BAD_BODIES.keys())
def test_bad_body(mech, change, phrases):
    raises(lambda: mech.add_body("box", **{**ROD, **change}), "'box'", *phrases)
    assert [b.name for b in mech.bodies] == ["rod"]          # nothing half-added


def test_duplicate_body_name(mech):
    raises(lambda: mech.add_body("rod", **ROD), "'rod'", "already used")


BAD_JOINTS = {   # a joint named "pin" -> phrases the message must contain
    "zero axis": (lambda m: m.add_revolute(nc.GROUND, "rod", point=(1, 0, 0), axis=(0, 0, 0),
                                           name="pin"), ["zero length", "give a direction"]),
    "inf axis": (lambda m: m.add_prismatic(nc.GROUND, "rod", point=(1, 0, 0),
                                           axis=(np.inf, 0, 0), name="pin"), ["axis", "finite"]),
    "nan axis": (lambda m: m.add_universal(nc.GROUND, "rod", point=(1, 0, 0), axis_a=(0, 0, 1),
                                           axis_b=(NAN, 1, 0), name="pin"),
                 ["axis_b", "finite"]),
    "nan point": (lambda m: m.add_spherical(nc.GROUND, "rod", point=(1, NAN, 0), name="pin"),
                  ["point", "finite"]),
    "unknown body": (lambda m: m.add_spherical("rod", "arm", point=(1, 0, 0), name="pin"),
                     ["unknown body 'arm'", "'rod'"]),
    "negative length": (lambda m: m.add_distance(nc.GROUND, "rod", point_a=(1, 1, 0),
                                                 point_b=(1, 0, 0), length=-1.0, name="pin"),
                        ["length must be positive"]),
}


@pytest.mark.parametrize("add, phrases", BAD_JOINTS.values(), ids=BAD_JOINTS.keys())
def test_bad_joint(mech, add, phrases):
    raises(lambda: add(mech), "joint 'pin'", *phrases)
    assert [j.name for j in mech.joints] == ["hinge"]        # nothing half-added


def test_duplicate_joint_name(mech):
    raises(lambda: mech.add_spherical(nc.GROUND, "rod", point=(1, 0, 0), name="hinge"),
           "'hinge'", "already used")


BAD_FORCES = {
    "nan force": (lambda m: m.add_force("rod", point=(1, 0, 0), force=(0, NAN, 0)),
                  ["force on 'rod'"]),
    "nan force point": (lambda m: m.add_force("rod", point=(NAN, 0, 0), force=(0, 1, 0)),
                        ["force on 'rod'"]),
    "inf torque": (lambda m: m.add_torque("rod", torque=(0, 0, np.inf)), ["torque on 'rod'"]),
    "nan stiffness": (lambda m: m.add_spring(nc.GROUND, "rod", point_a=(1, 1, 0),
                                             point_b=(1, 0, 0), stiffness=NAN, name="coil"),
                      ["spring 'coil'", "stiffness"]),
}


@pytest.mark.parametrize("add, phrases", BAD_FORCES.values(), ids=BAD_FORCES.keys())
def test_non_finite_force(mech, add, phrases):
    raises(lambda: add(mech), *phrases)
    assert not mech.forces


def test_non_finite_gravity():
    raises(lambda: nc.Mechanism(gravity=(0.0, NAN, 0.0), name="lab"), "'lab'", "gravity",
           "finite")


@pytest.mark.parametrize("anchor", [(3.0, 0.0, 0.0), (0.0, 3.0, 0.0)],
                         ids=["rod aimed at the anchor", "rod across"])
def test_unreachable_assembly_reports_residual_and_joints(mech, anchor):
    """The hinged rod's tip (1 m from the hinge) cannot get 5 m from a point 3 m away.

    Aimed at the anchor, the rod starts where the distance row looks redundant.
    """
    mech.add_distance(nc.GROUND, "rod", point_a=anchor, point_b=(1, 0, 0), length=5.0,
                      name="reach")
    model = mech.build()
    with pytest.raises(nc.AssemblyError) as err:
        nc.assemble(model)
    message = str(err.value)
    assert "‖g‖∞ = " in message and "did not converge" in message
    assert "joint 'reach'" in message


def partial_solution(model, **options):
    """The solution carried by the IntegrationError of a 2 s run that must fail."""
    with pytest.raises(nc.IntegrationError) as err:
        nc.simulate(model, t_end=2.0, rtol=1e-8, **options)
    sol = err.value.solution
    assert sol.success is False
    assert sol.t.size > 1 and 0.0 < sol.t[-1] < 2.0
    assert np.all(sol.constraint_residual <= 1e-10)      # what is kept is a valid trajectory
    return sol


def test_step_size_underflow_keeps_the_partial_solution(mech):
    """A force that turns NaN at t = 0.3 s: the step size shrinks to nothing there."""
    mech.add_force("rod", point=(1, 0, 0),
                   force=lambda t, state: (0.0, NAN if t > 0.3 else 0.0, 0.0))
    assert partial_solution(mech.build()).t[-1] == pytest.approx(0.3, abs=1e-6)


def test_step_limit_keeps_the_partial_solution(mech):
    stats = partial_solution(mech.build(), max_steps=20).stats
    assert stats["steps"] + stats["rejected"] == 20
