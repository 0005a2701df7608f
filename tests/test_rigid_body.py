"""Torque-free rigid bodies: conservation laws and Euler's closed-form precession.

Body quantities are recovered from the natural coordinates independently of
the integrator: the frame ``A = [e1 e2 e3]``, the angular velocity
``ω = ½ Σ_k e_k × ė_k`` (from ``ė_k = ω × e_k``), the centre of mass
``r_c = o + A c̄``; and the angular momentum about the world origin
``L = ∫ r × ṙ dm = Σ_kl J4_kl x_k × ẋ_l`` (``r = Σ_k c̄_k x_k``, c̄_0 = 1).
"""
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

import natcoord as nc

RTOL = 1e-10


def frames(sol):
    """Slot vectors X, V (k, 4, 3) of the single body."""
    return sol.p.reshape(-1, 4, 3), sol.v.reshape(-1, 4, 3)


def angular_velocity(X, V):
    return 0.5 * np.cross(X[:, 1:], V[:, 1:]).sum(axis=1)


def angular_momentum_from_J4(J4, X, V):
    """``L = Σ_kl J4_kl x_k × ẋ_l`` about the world origin."""
    return np.einsum("kl,tkli->ti", J4, np.cross(X[:, :, None], V[:, None, :]))


def textbook_momentum_and_energy(body, X, V):
    """``L = r_c × m v_c + A I_c Aᵀ ω`` and ``T = ½ m v_c² + ½ ωᵀ A I_c Aᵀ ω``."""
    A = X[:, 1:].transpose(0, 2, 1)
    omega = angular_velocity(X, V)
    r_c = X[:, 0] + A @ body.com
    v_c = V[:, 0] + V[:, 1:].transpose(0, 2, 1) @ body.com
    I_world = A @ body.inertia @ A.transpose(0, 2, 1)
    spin = np.einsum("tij,tj->ti", I_world, omega)
    L = np.cross(r_c, body.mass * v_c) + spin
    T = 0.5 * body.mass * np.sum(v_c**2, axis=1) + 0.5 * np.sum(omega * spin, axis=1)
    return L, T


def free_body(inertia, com_local, axes, omega, com_velocity=(0.0, 0.0, 0.0)):
    """One body, no gravity, spinning at ``ω`` (world) with the given centre velocity."""
    mech = nc.Mechanism(name="free body")
    origin = np.array([0.2, -0.1, 0.3])
    mech.add_body("body", mass=2.0, com=com_local, inertia=inertia, origin=origin, axes=axes,
                  local=True)
    omega = np.asarray(omega, float)
    mech.set_initial("body", velocity=np.asarray(com_velocity) - np.cross(omega, axes @ com_local),
                     angular_velocity=omega)
    return mech.build()


PRINCIPAL = np.array([0.10, 0.20, 0.25])
Q = Rotation.from_rotvec([0.3, -0.2, 0.5]).as_matrix()        # principal axes in body axes
OMEGA0 = np.array([0.2, 4.0, 0.3])                            # principal-frame components


@pytest.fixture(scope="module")
def tumbling():
    """An asymmetric body spun near its intermediate principal axis (it flips)."""
    axes = Rotation.from_rotvec([-0.4, 0.8, 0.1]).as_matrix()
    model = free_body(Q @ np.diag(PRINCIPAL) @ Q.T, np.array([0.1, -0.05, 0.2]), axes,
                      omega=axes @ Q @ OMEGA0, com_velocity=(0.3, 0.0, -0.2))
    return model, nc.simulate(model, t_end=4.0, rtol=RTOL, t_eval=np.linspace(0, 4, 81))


def test_momentum_from_J4_is_the_textbook_momentum(tumbling):
    """Kinematic identity on an exactly rigid state: any rotation, ω and velocity."""
    model, _ = tumbling
    rng = np.random.default_rng(5)
    A = Rotation.from_rotvec(rng.standard_normal(3)).as_matrix()
    omega, velocity = rng.standard_normal(3), rng.standard_normal(3)
    X = np.vstack([rng.standard_normal(3), A.T])[None]
    V = np.vstack([velocity, np.cross(omega, A.T)])[None]
    L, _ = textbook_momentum_and_energy(model.bodies[0], X, V)
    np.testing.assert_allclose(angular_momentum_from_J4(model.J4[0], X, V), L, rtol=1e-13)


def test_asymmetric_body_follows_eulers_equations(tumbling):
    """Principal-frame ω against ``I ω̇ = (I ω) × ω`` integrated by SciPy; ω2 reverses."""
    _, sol = tumbling
    X, V = frames(sol)
    omega = np.einsum("tki,ti->tk", X[:, 1:], angular_velocity(X, V)) @ Q

    def euler(t, w):
        return np.cross(PRINCIPAL * w, w) / PRINCIPAL
    expected = solve_ivp(euler, (0.0, sol.t[-1]), OMEGA0, t_eval=sol.t, rtol=1e-12,
                         atol=1e-12).y.T
    assert expected[:, 1].min() < -0.9 * OMEGA0[1]
    np.testing.assert_allclose(omega, expected, rtol=0, atol=1e-8 * np.linalg.norm(OMEGA0))


def test_asymmetric_body_conserves_energy_and_angular_momentum(tumbling):
    model, sol = tumbling
    X, V = frames(sol)
    L, T = textbook_momentum_and_energy(model.bodies[0], X, V)
    np.testing.assert_allclose(T, T[0], rtol=5e-9)
    np.testing.assert_allclose(L, np.broadcast_to(L[0], L.shape), rtol=0,
                               atol=5e-9 * np.linalg.norm(L[0]))


@pytest.fixture(scope="module")
def spinning_top():
    """Axisymmetric body (``I1 = I2 ≠ I3`` about body e3), COM at rest, body ω = (ω1, 0, ω3)."""
    axes = Rotation.from_rotvec([0.5, 0.2, -0.3]).as_matrix()
    omega_body = np.array([1.5, 0.0, 6.0])
    model = free_body(np.diag([0.20, 0.20, 0.08]), np.array([0.05, 0.1, -0.2]), axes,
                      omega=axes @ omega_body)
    sol = nc.simulate(model, t_end=3.0, rtol=RTOL, t_eval=np.linspace(0, 3, 61))
    I1, _, I3 = np.diag(model.bodies[0].inertia)
    return I1, I3, omega_body, sol


def test_symmetry_axis_precesses_about_L_at_L_over_I1(spinning_top):
    """Space frame: e3 turns about L at ``|L|/I1``, at a constant nutation angle."""
    I1, _, _, sol = spinning_top
    X, V = frames(sol)
    L, _ = textbook_momentum_and_energy(sol.model.bodies[0], X[:1], V[:1])
    n = L[0] / np.linalg.norm(L[0])
    u = np.cross(n, [1.0, 0.0, 0.0])
    u /= np.linalg.norm(u)
    w = np.cross(n, u)
    e3 = X[:, 3]
    np.testing.assert_allclose(e3 @ n, e3[0] @ n, atol=1e-9)
    phi = np.unwrap(np.arctan2(e3 @ w, e3 @ u))
    np.testing.assert_allclose(phi - phi[0], np.linalg.norm(L[0]) / I1 * sol.t, rtol=0,
                               atol=1e-8)


def test_body_frame_omega_rotates_at_euler_rate(spinning_top):
    """Body frame: ``ω1 + i ω2 = ω⊥ exp(iΩt)``, ``Ω = ω3 (I3 − I1)/I1``, ω3 constant."""
    I1, I3, omega0, sol = spinning_top
    X, V = frames(sol)
    omega_body = np.einsum("tki,ti->tk", X[:, 1:], angular_velocity(X, V))
    Omega = omega0[2] * (I3 - I1) / I1
    np.testing.assert_allclose(omega_body[:, 2], omega0[2], rtol=2e-9)
    np.testing.assert_allclose(omega_body[:, 0] + 1j * omega_body[:, 1],
                               omega0[0] * np.exp(1j * Omega * sol.t), rtol=0, atol=2e-8)
