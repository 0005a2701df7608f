"""The built-in force laws are the compiled core's alone (issue 22, deliverable 2).

Spring–dampers, joint and Cartesian spring–dampers, constant point forces and
torques have their generalized force, energy and derivative only in
natcoord/core/src/forces.c; the workspace (``nc.accelerations``), ``linearize`` and
``Model.energy`` reach them through :mod:`natcoord.model.core_tables`. Checked here
against independent computations: closed forms (a hanging spring's static
deflection, a displaced ball's restoring acceleration), −∂V/∂p of the energy and
the damping force from central differences of the geometry, and the exact
derivative against central differences of the force. Forces written in Python
stay Python's: the workspace applies them.
"""
import numpy as np
import pytest

import natcoord as nc
from natcoord.model.core_tables import (force_derivative, generalized_forces, python_forces,
                                        spring_parameter_force)
from natcoord.model.forces import PointForce, SpringDamper, Torque
from natcoord.model.parameters import parameter_value
from natcoord.util.checks import NonFiniteValue


def sprung_bodies(damping=0.8):
    """Two free bodies: a spring–damper between them (rest ≠ the current length), one
    from ground, a constant torque and a constant point force."""
    mech = nc.Mechanism(gravity=(0.0, 0.0, -9.81), name="sprung bodies")
    for name, com in (("A", (0.0, 0.0, 0.0)), ("B", (0.7, 0.2, -0.1))):
        mech.add_body(name, mass=1.2, com=com, inertia=np.diag([0.1, 0.2, 0.25]), origin=com)
    mech.add_spring("A", "B", point_a=(0.1, 0.1, 0.0), point_b=(0.6, 0.3, 0.1),
                    stiffness=80.0, rest_length=0.3, damping=damping, name="coil")
    mech.add_spring(nc.GROUND, "A", point_a=(0.0, 0.0, 1.0), point_b=(0.0, 0.1, 0.0),
                    stiffness=40.0, rest_length=0.8, damping=damping)
    mech.add_torque("B", (0.3, -0.2, 0.5))
    mech.add_force("A", (0.2, 0.0, 0.0), (1.0, -2.0, 0.5))
    return mech.build()


def off_the_manifold(model, seed):
    """Slot vectors p, v (12 n,) near the reference, the axes no longer orthonormal."""
    rng = np.random.default_rng(seed)
    p = nc.assemble(model).state.p + 0.05 * rng.standard_normal(model.n_coords)
    return p, rng.standard_normal(model.n_coords)


def forces(model, p, v):
    return generalized_forces(model, p, v, np.zeros((4 * model.n_bodies, 3))).ravel()


def gradient(f, p, h=1e-6):
    """∇f at p by central differences."""
    return np.array([(f(p + h * e) - f(p - h * e)) / (2 * h) for e in np.eye(p.size)])


def test_hanging_spring_rests_at_its_static_deflection():
    """A ball hanging straight down on its spring, stretched by m g / k: no acceleration;
    lowered by a further δ: the spring pulls it back with k δ / m (the force passes
    through the centre, so the axes do not accelerate)."""
    m, k, g = 2.0, 5e3, 9.81
    model = nc.models.spring_pendulum(stiffness=k, damping=0.0, mass=m, angle=0.0,
                                      gravity=g).build()
    state = nc.assemble(model).state
    a, _, _ = nc.accelerations(model, state)
    assert np.abs(a).max() < 1e-9 * g
    delta = 1e-3
    lowered = state.p.copy()
    lowered[1] -= delta                                    # the centre's y
    a, _, _ = nc.accelerations(model, nc.State(0.0, lowered, state.v))
    expected = np.zeros(12)
    expected[1] = k * delta / m
    np.testing.assert_allclose(a, expected, rtol=0, atol=1e-9 * k * delta / m)


def test_spring_force_is_minus_the_energy_gradient_plus_its_damping():
    """Undamped, the core's force (gravity, springs, torque and point force) equals
    −∂V/∂p of the model's potential plus the loads' generalized force; the damping adds
    −c l̇ ∇l per spring, with ∇l from central differences of the ends' distance and
    l̇ = ∇l·v."""
    model, undamped = sprung_bodies(), sprung_bodies(damping=0.0)
    p, v = off_the_manifold(model, seed=5)
    loads = np.zeros((4 * model.n_bodies, 3))
    for load in model.forces:
        if isinstance(load, (PointForce, Torque)):
            load.apply(0.0, None, p.reshape(-1, 3), v.reshape(-1, 3), loads)
    F0 = forces(undamped, p, v)
    expected = -gradient(undamped.potential_energy, p) + loads.ravel()
    assert np.abs(F0 - loads.ravel() - undamped.gravity_force.ravel()).max() > 1.0
    np.testing.assert_allclose(F0, expected, rtol=0, atol=1e-7 * np.abs(expected).max())

    damping = np.zeros(model.n_coords)
    for spring in model.forces:
        if isinstance(spring, SpringDamper):
            def length(q, spring=spring):
                X = q.reshape(-1, 3)
                return np.linalg.norm(spring.b.evaluate(X) - spring.a.evaluate(X))
            grad = gradient(length, p)
            damping -= spring.c * (grad @ v) * grad
    assert np.abs(damping).max() > 0.1
    np.testing.assert_allclose(forces(model, p, v) - F0, damping, rtol=0,
                               atol=1e-8 * np.abs(damping).max())


@pytest.mark.parametrize("kind, step", [("stiffness", 10.0), ("damping", 0.5),
                                        ("rest_length", 0.1)])
def test_spring_parameter_force_is_the_force_s_parameter_derivative(kind, step):
    """``∂f/∂θ`` of a spring's stiffness, damping or rest length (linearize's parameter
    columns) against the central difference of the force of two models with the
    parameter moved: the force is affine in each, so the difference is exact up to
    round-off."""
    model = sprung_bodies()
    p, v = off_the_manifold(model, seed=6)
    name = f"{kind}:0"
    value = parameter_value(model, name)
    up, down = (model.with_parameters({name: value + s * step}) for s in (1, -1))
    numeric = (forces(up, p, v) - forces(down, p, v)) / (2 * step)
    analytic = spring_parameter_force(model, 0, kind, p, v,
                                      np.zeros((4 * model.n_bodies, 3))).ravel()
    assert np.abs(numeric).max() > 0.1
    np.testing.assert_allclose(analytic, numeric, rtol=0, atol=1e-9 * np.abs(numeric).max())


def every_kind():
    """A spring–damper, a Cartesian spring–damper on a moving frame, joint springs on
    a hinge and a slide, a constant torque and point force."""
    mech = nc.Mechanism(gravity=(0.0, 0.0, -9.81), name="every kind")
    mech.add_body("arm", 1.0, com=(0.5, 0, 0), inertia=np.diag([0.01, 0.1, 0.1]))
    mech.add_body("slider", 0.5, com=(1.0, 0.2, 0), inertia=np.diag([0.02, 0.02, 0.03]),
                  origin=(1.0, 0.2, 0))
    mech.add_body("free", 0.8, com=(0.3, -0.6, 0.2), inertia=np.diag([0.05, 0.06, 0.07]),
                  origin=(0.3, -0.6, 0.2))
    mech.add_revolute(nc.GROUND, "arm", point=(0, 0, 0), axis=(0, 0, 1), name="hinge")
    mech.add_prismatic("arm", "slider", point=(1.0, 0.2, 0), axis=(1, 0, 0), name="slide")
    mech.add_joint_spring("hinge", stiffness=3.0, rest=0.2, damping=0.4)
    mech.add_joint_spring("slide", stiffness=30.0, rest=0.05, damping=0.7)
    mech.add_spring("arm", "free", point_a=(0.8, 0, 0), point_b=(0.3, -0.5, 0.2),
                    stiffness=50.0, rest_length=0.4, damping=1.1)
    mech.add_cartesian_spring("slider", "free", point_a=(1.0, 0.2, 0.1),
                              point_b=(0.4, -0.6, 0.2), stiffness=(20.0, 30.0, 40.0),
                              damping=(0.3, 0.2, 0.1), rest=(0.1, 0.0, -0.05), frame="slider")
    mech.add_torque("free", (0.1, 0.4, -0.3))
    mech.add_force("slider", (1.0, 0.2, 0), (0.0, 2.0, 1.0))
    return mech.build()


def test_force_derivative_of_every_built_in_kind():
    """The core's exact directional derivative (linearize, Radau's Jacobian, the
    sensitivity sweep) against central differences of the core's force, off the
    constraint manifold, along a random direction in (p, v)."""
    model = every_kind()
    assert not python_forces(model)
    p, v = off_the_manifold(model, seed=7)
    rng = np.random.default_rng(8)
    dp, dv = rng.standard_normal(p.size), rng.standard_normal(v.size)
    h = 1e-6
    numeric = (forces(model, p + h * dp, v + h * dv) - forces(model, p - h * dp, v - h * dv)) \
        / (2 * h)
    analytic = force_derivative(model, p, v, dp, dv, np.zeros((4 * model.n_bodies, 3)))
    assert np.abs(numeric).max() > 1.0
    np.testing.assert_allclose(analytic.ravel(), numeric, rtol=0,
                               atol=1e-7 * np.abs(numeric).max())


def test_workspace_applies_the_forces_written_in_python():
    """A callable torque is Python's: the workspace applies it after the core's laws,
    giving the accelerations of the same torque built in."""
    models = []
    for torque in ((0.1, 0.4, -0.3), lambda t, state: (0.1, 0.4, -0.3)):
        mech = nc.Mechanism(gravity=(0.0, 0.0, -9.81))
        mech.add_body("free", 0.8, com=(0.3, -0.6, 0.2), inertia=np.diag([0.05, 0.06, 0.07]))
        mech.add_spring(nc.GROUND, "free", point_a=(0, 0, 1.0), point_b=(0.3, -0.6, 0.2),
                        stiffness=50.0, rest_length=0.4, damping=1.1)
        mech.add_torque("free", torque)
        models.append(mech.build())
    assert not python_forces(models[0]) and len(python_forces(models[1])) == 1
    state = nc.assemble(models[0]).state
    built_in, python = (nc.accelerations(m, state)[0] for m in models)
    np.testing.assert_allclose(python, built_in, rtol=0, atol=1e-12 * np.abs(built_in).max())


def test_coincident_spring_ends_are_named():
    """Where a spring's ends meet, its direction is undefined: the workspace names the
    spring instead of returning NaN accelerations."""
    model = nc.models.spring_pendulum(stiffness=1e3, angle=0.0).build()
    p = nc.assemble(model).state.p.copy()
    p[:3] = 0.0                                          # the ball's centre at the anchor
    with pytest.raises(NonFiniteValue, match="spring 'spring': its end points coincide"):
        nc.accelerations(model, nc.State(0.0, p, np.zeros_like(p)))


def test_the_cores_force_functions_refuse_arrays_of_another_size():
    """Arrays that are not the model's 4 n × 3 slot vectors are refused by name before
    the core reads them (the six-bar: 5 moving bodies, 60 entries)."""
    from natcoord.core import engine
    from natcoord.model.core_tables import packed_tables
    T, short, right = packed_tables(nc.models.six_bar().build()), np.zeros(3), np.zeros(60)
    with pytest.raises(ValueError, match=r"core.energy: X and V must have 60 entries"):
        engine.energy(T, short, short)
    with pytest.raises(ValueError, match=r"core.generalized_forces: X, V and F must have 60"):
        engine.generalized_forces(T, right, right, short)
    with pytest.raises(ValueError, match=r"core.force_derivative: X, V, dX, dV and F must"):
        engine.force_derivative(T, right, right, right, short, right)
