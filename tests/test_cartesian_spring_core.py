"""The Cartesian spring–damper's law in the core (issue 22, item 1; natcoord/core/src/forces.c).

``CartesianSpringDamper`` (``Mechanism.add_cartesian_spring``) has its force, energy
and directional derivative in the core, so DOPRI5 and Radau run it without calling
back into Python; it is the only implementation of the law. Checked against
independent computations: the undamped generalized force against −∂V/∂p by central
differences of the potential, the damping force against −Σ c_k ḋ_k ∇d_k with ∇d_k by
central differences of the components; the energy against its closed form from the
components; the derivative (Radau's Jacobian, the compiled sensitivity sweep)
against central differences of ``nc.accelerations`` and of whole simulations; a
sprung hexapod without damping conserves its energy.
"""
import numpy as np
import pytest

import natcoord as nc
from natcoord.core import engine
from natcoord.model.core_tables import make_tables, python_forces
from test_radau_core import core_and_difference_jacobians


def sprung_pair(damping=(0.4, 0.0, 1.3)):
    """Two free bodies joined by a Cartesian spring along axes fixed in body A
    (a moving frame: its reaction acts on A's axes), rest ≠ 0, and one from ground."""
    mech = nc.Mechanism(gravity=(0.0, 0.0, -9.81), name="sprung pair")
    for name, com in (("A", (0.0, 0.0, 0.0)), ("B", (0.6, 0.1, -0.2))):
        mech.add_body(name, mass=1.5, com=com, inertia=np.diag([0.2, 0.25, 0.3]), origin=com)
    mech.add_cartesian_spring("A", "B", point_a=(0.1, 0.2, -0.3), point_b=(0.5, -0.1, 0.4),
                              stiffness=(30.0, 50.0, 70.0), rest=(0.1, -0.2, 0.05),
                              damping=damping, frame="A")
    mech.add_cartesian_spring(nc.GROUND, "A", point_a=(0.0, 0.0, 0.2), point_b=(0.1, 0.0, 0.0),
                              stiffness=(20.0, 10.0, 40.0), damping=damping)
    return mech.build()


def off_the_manifold(model, seed):
    """Slot vectors X, V near the reference, the axes no longer orthonormal: the law
    is a function of the coordinates, not only of rigid configurations."""
    rng = np.random.default_rng(seed)
    X = np.reshape(nc.assemble(model).state.p, (-1, 3)) + 0.05 * rng.standard_normal(
        (4 * model.n_bodies, 3))
    return X, rng.standard_normal(X.shape)


def core_forces(model, X, V):
    """The core's applied generalized forces (gravity taken off)."""
    F = np.zeros_like(X)
    engine.generalized_forces(make_tables(model), X, V, F)
    return F - model.gravity_force


def test_the_core_has_the_law():
    assert not python_forces(sprung_pair())
    assert not python_forces(nc.models.hexapod("driven", elastic_joints=(1e7, 1e4)).build())


def component_gradient(q, X, h=1e-6):
    """∇d of a spring component d (a quadratic form of the coordinates) by central
    differences of its value: exact up to round-off."""
    return np.array([(q.value(X + h * e.reshape(X.shape)) - q.value(X - h * e.reshape(X.shape)))
                     / (2 * h) for e in np.eye(X.size)]).reshape(X.shape)


def test_core_force_is_minus_the_energy_gradient_plus_the_damping():
    """Undamped: the core's force is −∂V/∂p of the potential by central differences.
    Damped: the difference is −Σ_k c_k ḋ_k ∇d_k, with ∇d_k by central differences of
    the components and ḋ_k = ∇d_k·v. The core's energy is the closed form
    ½ vᵀ M v − f_g·p + ½ Σ k_k (d_k − d0_k)² of the components' values."""
    model = sprung_pair()
    X, V = off_the_manifold(model, seed=4)
    undamped = sprung_pair(damping=0.0)
    F0 = core_forces(undamped, X, V)
    h = 1e-6
    grad = np.array([(undamped.potential_energy(X.ravel() + h * e)
                      - undamped.potential_energy(X.ravel() - h * e)) / (2 * h)
                     for e in np.eye(X.size)]).reshape(X.shape) + undamped.gravity_force
    assert np.abs(grad).max() > 1.0
    np.testing.assert_allclose(F0, -grad, rtol=0, atol=1e-7 * np.abs(grad).max())

    damping = np.zeros_like(X)
    for force in model.forces:
        for q, c in zip(force.components, force.c):
            grad_q = component_gradient(q, X)
            damping -= c * np.sum(grad_q * V) * grad_q
    assert np.abs(damping).max() > 1.0
    np.testing.assert_allclose(core_forces(model, X, V) - F0, damping, rtol=0,
                               atol=1e-9 * np.abs(damping).max())

    springs = sum(0.5 * k * (q.value(X) - d0) ** 2 for force in model.forces
                  for q, k, d0 in zip(force.components, force.k, force.rest))
    closed_form = (model.kinetic_energy(V.ravel()) - np.sum(model.gravity_force * X) + springs)
    assert engine.energy(make_tables(model), X, V) == pytest.approx(closed_form, rel=1e-14)


@pytest.mark.parametrize("build", [
    sprung_pair,
    lambda: nc.models.hexapod("driven", elastic_joints=(1e4, 30.0)).build(),
], ids=["pair", "elastic-hexapod"])
def test_core_derivative_equals_central_differences(build):
    """Radau's Jacobian, the core's ``nc_acceleration_derivative`` (its force term the
    Cartesian springs' exact derivative), against central differences of the
    accelerations (``nc.accelerations``, the core's force law)."""
    model = build()
    J, reference = core_and_difference_jacobians(model)
    N = model.n_coords
    scale = np.abs(reference).max()
    np.testing.assert_allclose(J[N:], reference, rtol=0, atol=1e-8 * scale)  # measured ≤ 1e-10


def test_undamped_sprung_hexapod_conserves_energy():
    """The passive hexapod with its spherical joints replaced by stiff Cartesian springs
    and no damping, released under gravity: the springs and gravity exchange energy
    (the legs sag), the total stays constant, with DOPRI5 and Radau, both compiled."""
    model = nc.models.hexapod("passive", elastic_joints=(1e5, 0.0)).build()
    for method, rtol, tol in (("dopri5", 1e-10, 1e-9), ("radau", 1e-8, 1e-8)):
        sol = nc.simulate(model, 0.5, rtol=rtol, method=method, t_eval=np.linspace(0, 0.5, 26))
        assert sol.success and sol.stats["compiled"], method
        e = np.asarray(sol.energy)
        potential = [model.potential_energy(p) for p in sol.p]
        assert np.ptp(potential) > 1.0                 # energy did change form
        assert np.ptp(e) <= tol * np.ptp(potential), method


def test_damping_dissipates_sum_c_ddot_squared():
    """dE/dt = −Σ c_k ḋ_k² along a compiled run (the trapezoidal rule on fine outputs)."""
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0))
    mech.add_body("rod", 1.0, com=(0.5, 0, 0), inertia=nc.box_inertia(1.0, (1.0, 0.05, 0.05)))
    mech.add_revolute(nc.GROUND, "rod", point=(0, 0, 0), axis=(0, 0, 1))
    c = np.array([0.3, 0.7, 0.0])
    mech.add_cartesian_spring(nc.GROUND, "rod", point_a=(1.0, 0.5, 0), point_b=(1.0, 0, 0),
                              stiffness=40.0, damping=c)
    model = mech.build()
    t = np.linspace(0.0, 1.0, 4001)
    sol = nc.simulate(model, 1.0, t_eval=t, rtol=1e-11, atol=1e-12, proj_tol=1e-13)
    assert sol.stats["compiled"]
    rate = np.gradient(sol.point("rod", (1.0, 0, 0)), t, axis=0, edge_order=2)
    power = -(rate**2) @ c
    dissipated = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1]) * np.diff(t))])
    e = np.asarray(sol.energy)
    assert np.abs(e - e[0] - dissipated).max() < 1e-5 * np.abs(dissipated).max()
