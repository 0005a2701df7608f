"""Joint reactions (issue 10, item 5): the force and torque each joint exerts,
from the minimum-norm multipliers, against hand statics of the four-bar and
Newton–Euler balances of every body of the six-bar (locked and moving)."""
import numpy as np
import pytest

import natcoord as nc
from natcoord.models.four_bar import GRAVITY, MASS
from natcoord.models.six_bar import RODS, rod_frame
from natcoord.dynamics.reactions import joint_reaction, minimum_norm_multipliers

W = MASS * GRAVITY          # weight of one four-bar rod (N)
UP = np.array([0.0, 1.0, 0.0])


def at_rest(model):
    p = nc.assemble(model).state.p
    return nc.State(0.0, p, np.zeros_like(p))


# ------------------------------------------------------------- four-bar
def test_four_bar_hand_statics():
    """Cranks vertical, coupler on top, at rest: an equilibrium (gravity along
    the cranks). The coupler's weight splits equally between its two pins; each
    ground pin carries its crank plus half the coupler; no pin carries a torque
    and, the weight being along the cranks, no pin a horizontal force."""
    model = nc.models.four_bar().build()
    state = at_rest(model)
    a, _, _ = nc.accelerations(model, state)
    assert np.abs(a).max() < 1e-12
    expected = {"ground0": 1.5 * W * UP,      # ground on crank0
                "top0.1": 0.5 * W * UP,       # crank0 on the coupler
                "top1.1": -0.5 * W * UP,      # coupler on crank1 (pushes it down)
                "ground1": 1.5 * W * UP}      # ground on crank1
    for joint, force in expected.items():
        reaction = joint_reaction(model, state, joint)
        np.testing.assert_allclose(reaction.force, force, atol=1e-12 * W)
        np.testing.assert_allclose(reaction.torque, 0.0, atol=1e-12 * W)


def test_four_bar_reaction_in_body_axes():
    """crank1's e1 points up its length: the coupler pushes it along −e1. In the
    coupler's axes (e1 along +x, e2 = +y) the same force is along −e2."""
    model = nc.models.four_bar().build()
    state = at_rest(model)
    np.testing.assert_allclose(joint_reaction(model, state, "top1.1", frame="b").force,
                               [-0.5 * W, 0.0, 0.0], atol=1e-12 * W)
    np.testing.assert_allclose(joint_reaction(model, state, "top1.1", frame="a").force,
                               [0.0, -0.5 * W, 0.0], atol=1e-12 * W)
    with pytest.raises(ValueError, match="frame"):
        joint_reaction(model, state, "top1.1", frame="crank1")


# ------------------------------------------------------------ six-bar
def six_bar(locked):
    """The six-bar; ``locked``: joint1 driven at a constant angle (0 DOF, static)."""
    mech = nc.Mechanism(gravity=(0.0, -9.81, 0.0), name="six-bar")
    previous = nc.GROUND
    for k, (start, end, axis) in enumerate(RODS, start=1):
        origin, axes = rod_frame(start, end)
        name = mech.add_body(f"rod{k}", mass=1.0, com=0.5 * np.add(start, end),
                             inertia=nc.rod_inertia(1.0, 1.0, 0.1), origin=origin, axes=axes)
        drive = (lambda t: (0.0, 0.0, 0.0)) if locked and k == 1 else None
        mech.add_revolute(previous, name, point=start, axis=axis, name=f"joint{k}",
                          drive=drive)
        previous = name
    mech.add_revolute("rod5", nc.GROUND, point=(0, 0, 1), axis=(1, 0, 0), name="joint6")
    return mech.build()


def centre_of_mass(body, X):
    """World centre of mass ``C(c̄) p`` of ``body`` for slot vectors X."""
    return np.concatenate([[1.0], body.com]) @ X[4 * body.index:4 * body.index + 4]


def joint_wrench_on(model, state, body):
    """Σ over the body's joints of their force and torque on it, torque about its
    centre of mass: ``+`` reaction where it is body b, ``−`` where it is body a."""
    c = centre_of_mass(body, state.p.reshape(-1, 3))
    force, torque = np.zeros(3), np.zeros(3)
    for j, joint in enumerate(model.joints):
        a, b = model.joint_bodies[j]
        if body.index in (a, b):
            r = joint_reaction(model, state, joint.name)
            sign = 1.0 if b == body.index else -1.0
            force += sign * r.force
            torque += sign * (r.torque + np.cross(r.point - c, r.force))
    return force, torque


def newton_euler(model, state, body):
    """``(m a_c − m g, dL_c/dt)`` with ``ω = ½ Σ e_k × ė_k``, ``ω̇ = ½ Σ e_k × ë_k``."""
    a, _, _ = nc.accelerations(model, state)
    s = slice(4 * body.index, 4 * body.index + 4)
    X, V, A = (np.reshape(x, (-1, 3))[s] for x in (state.p, state.v, a))
    c = np.concatenate([[1.0], body.com])
    omega = 0.5 * np.cross(X[1:], V[1:]).sum(axis=0)
    omega_dot = 0.5 * np.cross(X[1:], A[1:]).sum(axis=0)
    I = X[1:].T @ body.inertia @ X[1:]            # R I_c Rᵀ, R = [e1 e2 e3]
    return (body.mass * (c @ A - model.gravity),
            I @ omega_dot + np.cross(omega, I @ omega))


def moving_state(model, seed=0):
    """The assembled configuration with a random velocity in the null space of G."""
    p = nc.assemble(model).state.p
    ws = nc.Workspace(model, "dense")
    ws.constraints(0.0, p, np.zeros_like(p))
    _, sv, Vt = np.linalg.svd(model.tables.csr(ws.G).toarray())
    null = Vt[np.sum(sv > 1e-8 * sv[0]):]
    return nc.State(0.0, p, null.T @ np.random.default_rng(seed).standard_normal(len(null)))


@pytest.mark.parametrize("locked", [True, False], ids=["locked", "moving"])
def test_six_bar_bodies_obey_newton_euler(locked):
    """Each rod: Σ joint forces + m g = m a_c and Σ joint torques = dL_c/dt
    (both zero when joint1 is locked and the mechanism hangs still)."""
    model = six_bar(locked)
    state = at_rest(model) if locked else moving_state(model)
    assert nc.assemble(model).dropped.size == 1
    for body in model.bodies:
        force, torque = joint_wrench_on(model, state, body)
        inertial_force, inertial_torque = newton_euler(model, state, body)
        np.testing.assert_allclose(force, inertial_force, atol=1e-10)
        np.testing.assert_allclose(torque, inertial_torque, atol=1e-10)
        if locked:
            assert np.abs(inertial_force + body.mass * model.gravity).max() < 1e-10


def test_locked_six_bar_hangs_on_its_two_ground_joints():
    """The ground joints carry the loop's whole weight, 5 m g, and its moment."""
    model = six_bar(locked=True)
    state = at_rest(model)
    on_rod1 = joint_reaction(model, state, "joint1")
    on_rod5 = -np.array(joint_reaction(model, state, "joint6")[:2])   # ground is its body b
    joint6 = joint_reaction(model, state, "joint6").point
    weight = sum(b.mass for b in model.bodies) * model.gravity
    np.testing.assert_allclose(on_rod1.force + on_rod5[0] + weight, 0.0, atol=1e-10)
    X = state.p.reshape(-1, 3)
    moment = sum(np.cross(centre_of_mass(b, X), b.mass * model.gravity) for b in model.bodies)
    about_origin = (on_rod1.torque + np.cross(on_rod1.point, on_rod1.force)
                    + on_rod5[1] + np.cross(joint6, on_rod5[0]))
    np.testing.assert_allclose(about_origin + moment, 0.0, atol=1e-10)


def test_minimum_norm_multipliers_do_not_depend_on_the_dropped_row():
    """Any λ with the same Gᵀλ (another choice of redundant row) gives the same λ̂,
    and λ̂ is no longer than the solver's."""
    model = six_bar(locked=True)
    state = at_rest(model)
    ws = nc.Workspace(model)
    _, lam = ws.accelerations(state.t, state.p, state.v)
    G = model.tables.csr(ws.G).toarray()
    U, _, _ = np.linalg.svd(G)
    other = lam + 3.0 * U[:, -1]                 # a left null vector of G: same Gᵀλ
    np.testing.assert_allclose(G.T @ other, G.T @ lam, atol=1e-10)
    best = minimum_norm_multipliers(model, ws, lam)
    np.testing.assert_allclose(minimum_norm_multipliers(model, ws, other), best, atol=1e-10)
    assert np.linalg.norm(best) <= np.linalg.norm(lam)


def test_solution_joint_reaction_follows_the_trajectory():
    model = nc.models.four_bar().build()
    sol = nc.simulate(model, 0.2, t_eval=np.linspace(0.0, 0.2, 5))
    reaction = sol.joint_reaction("top1.1", frame="b")
    assert reaction.force.shape == reaction.torque.shape == reaction.point.shape == (5, 3)
    last = nc.State(sol.t[-1], sol.p[-1], sol.v[-1])
    np.testing.assert_allclose(reaction.force[-1],
                               joint_reaction(model, last, "top1.1", frame="b").force,
                               rtol=1e-12, atol=1e-12)
