"""Issue 11 items 4–5: new joints, Cartesian spring, joint rates, Solution outputs.

The new constraints' rows are checked with the others in ``test_joints.py``
(allowed motion, rank and DOF, ``G`` vs central differences, ``g_t``/``γ`` vs
time derivatives along a trajectory); here each feature is checked against an
independent truth: closed-form
motions (bead on a rotating line, block on an inclined plane, Cardan shaft,
Cartesian oscillator), energy and angular momentum, finite differences.
"""
import sys
import warnings

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import natcoord as nc
from joint_checks import AXIS, CROSS_AXIS, POINT, off_manifold, rotation, two_bodies
from natcoord.dynamics.assembly import describe
from natcoord.model.kinematics import angular_velocity, joint_rate as state_joint_rate

TUMBLE = Rotation.from_rotvec([0.5, -0.9, 0.3]).as_matrix()


def test_universal_keeps_perpendicular_rows_and_rejects_parallel_axes():
    mech = two_bodies()
    mech.add_universal("A", "B", point=POINT, axis_a=AXIS, axis_b=CROSS_AXIS, name="u")
    (label, _), = [(r.label, r) for r in mech.joints[0].rows[3:]]
    assert label == "u: axes ⊥"
    assert mech.joints[0].rows[3].parts[0][1].const == 0.0
    with pytest.raises(ValueError, match="parallel"):
        mech.add_universal("A", "B", point=POINT, axis_a=AXIS, axis_b=AXIS + 1e-6, name="v")


# ------------------------------------------------------------ Cartesian spring
def spring_energy(model, p, springs):
    """Independent ``½ Σ k (d − d0)²`` from rotation matrices (not quadratic forms)."""
    X = p.reshape(-1, 3)

    def world(name, x):
        b = model.bodies[model.body_index[name]]
        o, E = X[4 * b.index], X[4 * b.index + 1:4 * b.index + 4]
        return o + (b.axes.T @ (np.asarray(x) - b.origin)) @ E

    total = 0.0
    for a, xa, b, xb, frame, k, rest in springs:
        H = np.eye(3) if frame is None else \
            model.bodies[model.body_index[frame]].axes @ X[4 * model.body_index[frame] + 1:
                                                           4 * model.body_index[frame] + 4]
        d = H @ (world(b, xb) - world(a, xa))
        total += 0.5 * np.sum(np.asarray(k) * (d - rest) ** 2)
    return total


def test_cartesian_spring_force_is_minus_the_energy_gradient():
    """With a moving frame body (A): f = −∂V/∂p, V independent of the quadratic forms."""
    mech = two_bodies()
    k, rest = (30.0, 50.0, 70.0), (0.1, -0.2, 0.0)
    mech.add_cartesian_spring("A", "B", point_a=(0.2, 0.1, 0.0), point_b=(0.4, -0.3, 0.2),
                              stiffness=k, rest=rest, frame="A")
    model = mech.build()
    springs = [("A", (0.2, 0.1, 0.0), "B", (0.4, -0.3, 0.2), "A", k, rest)]
    p0, v0, _ = off_manifold(model, seed=5)
    assert model.potential_energy(p0) == pytest.approx(spring_energy(model, p0, springs),
                                                       rel=1e-13)
    ws = nc.Workspace(model, "dense")
    f = ws.forces(0.0, p0, v0).copy()
    h = 1e-5
    grad = np.array([(model.potential_energy(p0 + h * e) - model.potential_energy(p0 - h * e))
                     / (2 * h) for e in np.eye(p0.size)])
    np.testing.assert_allclose(f, -grad, rtol=0, atol=1e-7)


def test_cartesian_damper_dissipates_sum_c_ddot_squared():
    mech = two_bodies()
    c = (0.5, 1.5, 2.5)
    mech.add_cartesian_spring(nc.GROUND, "B", point_a=(0, 0, 0), point_b=(0.4, -0.3, 0.2),
                              stiffness=0.0, damping=c)
    model = mech.build()
    p0, v0, _ = off_manifold(model, seed=6)
    b = model.bodies[1]
    rbar = b.axes.T @ (np.array([0.4, -0.3, 0.2]) - b.origin)
    rate = v0.reshape(-1, 3)[4] + rbar @ v0.reshape(-1, 3)[5:8]     # ṙ_b (world x, y, z)
    power = nc.Workspace(model, "dense").forces(0.0, p0, v0) @ v0
    assert power == pytest.approx(-np.sum(np.asarray(c) * rate**2), rel=1e-12)


def oscillator(k, c=(0.0, 0.0, 0.0), x0=(0.1, -0.2, 0.05), v0=(0.3, 0.0, -0.1), mass=2.0):
    mech = nc.Mechanism(name="cartesian oscillator")
    mech.add_body("m", mass=mass, com=(0, 0, 0), inertia=np.diag([0.1, 0.2, 0.25]))
    mech.add_cartesian_spring(nc.GROUND, "m", point_a=(0, 0, 0), point_b=(0, 0, 0),
                              stiffness=k, damping=c)
    mech.set_initial("m", origin=x0, velocity=v0)
    return mech.build()


def test_cartesian_oscillator_period_and_energy():
    """Zero rest length, free body: x_k = x0 cos ω_k t + v0/ω_k sin ω_k t, ω = √(k/m)."""
    k, m = np.array([8.0, 18.0, 32.0]), 2.0
    x0, v0 = np.array([0.1, -0.2, 0.05]), np.array([0.3, 0.0, -0.1])
    model = oscillator(k, x0=x0, v0=v0, mass=m)
    t = np.linspace(0, 3.0, 61)
    sol = nc.simulate(model, 3.0, rtol=1e-10, t_eval=t)
    w = np.sqrt(k / m)
    exact = x0 * np.cos(np.outer(t, w)) + v0 / w * np.sin(np.outer(t, w))
    err = np.abs(sol.point("m", (0, 0, 0)) - exact).max()
    drift = np.abs(sol.energy - sol.energy[0]).max() / sol.energy[0]
    print(f"oscillator: position error {err:.2e}, relative energy drift {drift:.2e}")
    assert err < 1e-8
    assert drift < 1e-8
    assert sol.energy[0] == pytest.approx(0.5 * m * v0 @ v0 + 0.5 * k @ x0**2, rel=1e-12)
    np.testing.assert_allclose(sol.rotation("m"), np.broadcast_to(np.eye(3), (t.size, 3, 3)),
                               atol=1e-12)


def test_cartesian_damped_oscillator():
    """m ẍ + c ẋ + k x = 0 per axis (underdamped closed form)."""
    k, c, m = np.array([8.0, 18.0, 32.0]), np.array([0.8, 0.0, 2.0]), 2.0
    x0, v0 = np.array([0.1, -0.2, 0.05]), np.array([0.3, 0.0, -0.1])
    sol = nc.simulate(oscillator(k, c, x0, v0, m), 3.0, rtol=1e-10,
                      t_eval=np.linspace(0, 3.0, 31))
    sigma = c / (2 * m)
    wd = np.sqrt(k / m - sigma**2)
    t = sol.t[:, None]
    exact = np.exp(-sigma * t) * (x0 * np.cos(wd * t) + (v0 + sigma * x0) / wd * np.sin(wd * t))
    err = np.abs(sol.point("m", (0, 0, 0)) - exact).max()
    print(f"damped oscillator: position error {err:.2e}")
    assert err < 1e-8


def test_cartesian_spring_with_spinning_frame_conserves_energy():
    """Spring components along axes of a tumbling body: conservative, rest ≠ 0."""
    mech = two_bodies()
    mech.add_cartesian_spring("A", "B", point_a=(0.1, 0.2, -0.3), point_b=(0.5, -0.1, 0.4),
                              stiffness=(20.0, 5.0, 12.0), rest=(0.3, -0.2, 0.5), frame="A")
    mech.set_initial("A", angular_velocity=(1.0, -2.0, 3.0), velocity=(0.1, 0, 0))
    mech.set_initial("B", angular_velocity=(0.5, 0.2, -0.4))
    sol = nc.simulate(mech.build(), 2.0, rtol=1e-10, t_eval=np.linspace(0, 2, 21))
    drift = np.abs(sol.energy - sol.energy[0]).max() / np.abs(sol.energy[0])
    print(f"spinning-frame spring: relative energy drift {drift:.2e}")
    assert drift < 1e-8


# ------------------------------------------------------------ physical checks
def test_bead_on_rotating_line():
    """A bead on a line turning at Ω about z: s(t) = r0 (cosh Ωt − 1)."""
    omega, r0 = 1.5, 0.5
    mech = nc.Mechanism(name="bead")
    mech.add_body("rod", mass=1.0, com=(0.5, 0, 0), inertia=nc.rod_inertia(1.0, 1.0, 0.05))
    mech.add_revolute(nc.GROUND, "rod", point=(0, 0, 0), axis=(0, 0, 1), name="spin",
                      drive=nc.Drive(lambda t: (omega * t, omega, 0.0)))
    mech.add_body("bead", mass=0.2, com=(r0, 0, 0), inertia=np.diag([1e-4, 1e-4, 1e-4]),
                  origin=(r0, 0, 0))
    mech.add_point_on_line("rod", "bead", point=(r0, 0, 0), axis=(1, 0, 0), name="slot")
    model = mech.build()
    assert nc.assemble(model).dof == 4            # slide + three free rotations of the bead
    sol = nc.simulate(model, 1.0, rtol=1e-10, t_eval=np.linspace(0, 1, 11))
    s = sol.joint_coordinate("slot")
    exact = r0 * (np.cosh(omega * sol.t) - 1)
    err = np.abs(s - exact).max()
    rate_err = np.abs(sol.joint_rate("slot") - r0 * omega * np.sinh(omega * sol.t)).max()
    radius = np.linalg.norm(sol.point("bead", (r0, 0, 0)), axis=1)
    print(f"bead: slide error {err:.2e}, slide-rate error {rate_err:.2e}")
    assert err < 1e-8 and rate_err < 1e-8
    np.testing.assert_allclose(radius, r0 + exact, atol=1e-8)
    np.testing.assert_allclose(sol.joint_coordinate("spin"), omega * sol.t, atol=1e-10)


def test_block_on_inclined_plane():
    """Frictionless point-on-plane at the COM: acceleration g sin θ down the slope."""
    theta, g = np.radians(25.0), 9.81
    normal = np.array([-np.sin(theta), np.cos(theta), 0.0])
    down = -np.array([np.cos(theta), np.sin(theta), 0.0])
    mech = nc.Mechanism(gravity=(0, -g, 0), name="incline")
    mech.add_body("block", mass=3.0, com=(0, 0, 0), inertia=nc.box_inertia(3.0, (0.2, 0.1, 0.3)),
                  axes=rotation((0, 0, 1), theta))
    mech.add_point_on_plane(nc.GROUND, "block", point=(0, 0, 0), normal=normal, name="slope")
    mech.set_initial("block", velocity=(0, 0, 0.4))
    model = mech.build()
    assert nc.assemble(model).dof == 5
    sol = nc.simulate(model, 1.0, rtol=1e-10, t_eval=np.linspace(0, 1, 11))
    t = sol.t[:, None]
    exact = 0.5 * g * np.sin(theta) * t**2 * down + 0.4 * t * np.array([0, 0, 1.0])
    err = np.abs(sol.point("block", (0, 0, 0)) - exact).max()
    acc = sol.point_acceleration("block", (0, 0, 0))
    acc_err = np.abs(acc - g * np.sin(theta) * down).max()
    print(f"incline: position error {err:.2e}, acceleration error {acc_err:.2e}")
    assert err < 1e-8 and acc_err < 1e-10
    np.testing.assert_allclose(sol.rotation("block"), np.broadcast_to(
        rotation((0, 0, 1), theta), (sol.t.size, 3, 3)), atol=1e-12)


def shafts(beta, cross_angle=90.0, drive=None):
    """Input shaft about x, output shaft about (cos β, sin β, 0), cross at the origin."""
    beta, alpha = np.radians(beta), np.radians(cross_angle)
    d = np.array([np.cos(beta), np.sin(beta), 0.0])
    b0 = np.array([-np.sin(beta), np.cos(beta), 0.0])
    axis_b = np.cos(alpha) * np.array([0, 0, 1.0]) + np.sin(alpha) * b0
    mech = nc.Mechanism(name="cardan")
    inertia = nc.cylinder_inertia(1.0, 0.05, 0.5, axis=0)
    mech.add_body("in", mass=1.0, com=(-0.25, 0, 0), inertia=inertia)
    mech.add_body("out", mass=1.5, com=0.25 * d, inertia=1.5 * inertia,
                  axes=np.column_stack([d, b0, (0, 0, 1.0)]))
    mech.add_revolute(nc.GROUND, "in", point=(0, 0, 0), axis=(1, 0, 0), name="input",
                      drive=drive)
    mech.add_revolute(nc.GROUND, "out", point=(0, 0, 0), axis=d, name="output")
    mech.add_universal("in", "out", point=(0, 0, 0), axis_a=(0, 0, 1), axis_b=axis_b,
                       name="cross")
    return mech, axis_b


def test_cardan_shaft_angle_relation():
    """tan φ2 = cos β tan φ1 and φ̇2/φ̇1 = cos β / (1 − sin²β sin²φ1)."""
    beta = 30.0
    mech, _ = shafts(beta, drive=nc.Drive(lambda t: (2.0 * t + 0.3 * t**2, 2.0 + 0.6 * t, 0.6)))
    model = mech.build()
    assembly = nc.assemble(model)
    assert assembly.dof == 0 and assembly.dropped.size == 3   # the cross's point is implied
    sol = nc.simulate(model, 2.5, rtol=1e-10, t_eval=np.linspace(0, 2.5, 51))
    p1, p2 = sol.joint_coordinate("input"), sol.joint_coordinate("output")
    np.testing.assert_allclose(p1, 2.0 * sol.t + 0.3 * sol.t**2, atol=1e-9)
    cb, sb = np.cos(np.radians(beta)), np.sin(np.radians(beta))
    relation = np.cos(p1) * np.sin(p2) - cb * np.sin(p1) * np.cos(p2)
    ratio = sol.joint_rate("output") / sol.joint_rate("input")
    ratio_err = np.abs(ratio - cb / (1 - sb**2 * np.sin(p1) ** 2)).max()
    print(f"cardan: |relation| {np.abs(relation).max():.2e}, rate-ratio error {ratio_err:.2e}")
    assert np.abs(relation).max() < 1e-9 and ratio_err < 1e-8
    assert np.abs(p2 - p1).max() < np.radians(beta)         # same turn, unwrapped
    assert p1[-1] > 2 * np.pi


def test_non_perpendicular_cross_keeps_its_angle_and_energy():
    beta, alpha = 30.0, 70.0
    mech, axis_b = shafts(beta, cross_angle=alpha)
    mech.set_joint_rate("input", 3.0)
    model = mech.build()
    assert nc.assemble(model).dof == 1
    row = [r.label for r in model.joints[2].rows]
    assert row[-1] == "cross: axes angle"
    sol = nc.simulate(model, 3.0, rtol=1e-10, t_eval=np.linspace(0, 3, 61))
    ua = sol.rotation("in") @ np.array([0, 0, 1.0])
    out = model.bodies[model.body_index["out"]]
    ub = sol.rotation("out") @ (out.axes.T @ axis_b)
    angle_err = np.abs(np.einsum("ki,ki->k", ua, ub) - np.cos(np.radians(alpha))).max()
    drift = np.abs(sol.energy - sol.energy[0]).max() / sol.energy[0]
    print(f"oblique cross: angle error {angle_err:.2e}, relative energy drift {drift:.2e}")
    assert angle_err < 1e-10 and drift < 1e-8
    assert sol.joint_rate("input")[0] == pytest.approx(3.0, abs=1e-10)
    assert sol.joint_coordinate("input")[-1] > 2 * np.pi          # full turns


# ------------------------------------------------------------ joint rates
def four_bar(rate=None, crank_omega=None):
    """Crank A–B, coupler B–C, rocker D–C (a non-parallelogram planar four-bar)."""
    A, B, C, D = (np.array(x, float) for x in ((0, 0, 0), (0, 1, 0), (2, 1.5, 0), (2.5, 0, 0)))
    mech = nc.Mechanism(gravity=(0, -9.81, 0), name="four-bar")
    for name, start, end in (("crank", A, B), ("coupler", B, C), ("rocker", D, C)):
        L = np.linalg.norm(end - start)
        e1 = (end - start) / L
        mech.add_body(name, mass=L, com=0.5 * (start + end), inertia=nc.rod_inertia(L, L, 0.05),
                      origin=start, axes=np.column_stack([e1, np.cross((0, 0, 1), e1),
                                                          (0, 0, 1)]))
    z = (0, 0, 1)
    mech.add_revolute(nc.GROUND, "crank", point=A, axis=z, name="A")
    mech.add_revolute("crank", "coupler", point=B, axis=z, name="B")
    mech.add_revolute("coupler", "rocker", point=C, axis=z, name="C")
    mech.add_revolute(nc.GROUND, "rocker", point=D, axis=z, name="D")
    if crank_omega is not None:
        mech.set_initial("crank", angular_velocity=(0, 0, crank_omega))
    if rate is not None:
        mech.set_joint_rate("A", rate)
    return mech


def test_joint_rate_is_assembled_exactly():
    model = four_bar(rate=2 * np.pi).build()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        state = nc.assemble(model).state
    X, V = state.p.reshape(-1, 3), state.v.reshape(-1, 3)
    rate = state_joint_rate(model, "A", X, V)
    ws = nc.Workspace(model, "dense")
    ws.constraints(0.0, state.p, state.v)
    print(f"joint rate error {abs(rate - 2 * np.pi):.2e}, "
          f"‖G v + g_t‖∞ {np.abs(ws.velocity_residual(state.v)).max():.2e}")
    assert rate == pytest.approx(2 * np.pi, abs=1e-10)
    assert np.abs(ws.velocity_residual(state.v)).max() < 1e-10
    # the crank's angular velocity about z is the ground joint's rate
    omega = 0.5 * np.cross(X[1:4], V[1:4]).sum(axis=0)
    np.testing.assert_allclose(omega, [0, 0, 2 * np.pi], atol=1e-10)
    # the same with another backend
    other = nc.assemble(model, solver="superlu", proj_tol=1e-12).state
    assert state_joint_rate(model, "A", other.p.reshape(-1, 3), other.v.reshape(-1, 3)) \
        == pytest.approx(2 * np.pi, abs=1e-10)


def test_changed_initial_velocity_warns():
    model = four_bar(crank_omega=2 * np.pi).build()
    with pytest.warns(UserWarning, match="crank.*angular_velocity.*set_joint_rate"):
        state = nc.assemble(model).state
    rate = state_joint_rate(model, "A", state.p.reshape(-1, 3), state.v.reshape(-1, 3))
    assert abs(rate - 2 * np.pi) > 0.1     # the M-orthogonal projection shared it out
    # consistent request plus the exact rate: no warning
    model = four_bar(rate=2 * np.pi, crank_omega=2 * np.pi).build()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nc.assemble(model)


@pytest.mark.parametrize("kind", ["cylindrical", "prismatic", "point_on_line"])
def test_slide_and_angle_rates(kind):
    """Slide (and, cylindrical, angle) rates of a body on a tilted axis, both exact."""
    mech = nc.Mechanism(gravity=(0, -9.81, 0))
    mech.add_body("slider", mass=2.0, com=(0.1, 0.2, 0.3), inertia=np.diag([0.02, 0.03, 0.04]),
                  axes=TUMBLE)
    getattr(mech, f"add_{kind}")(nc.GROUND, "slider", point=POINT, axis=AXIS, name="j")
    rates = {"slide": 0.7, "angle": -1.3} if kind == "cylindrical" else {"slide": 0.7}
    mech.set_joint_rate("j", rates if kind == "cylindrical" else 0.7)
    model = mech.build()
    state = nc.assemble(model).state
    X, V = state.p.reshape(-1, 3), state.v.reshape(-1, 3)
    for coordinate, rate in rates.items():
        assert state_joint_rate(model, "j", X, V, coordinate) == pytest.approx(rate, abs=1e-12)
    point_velocity = V[0] + (TUMBLE.T @ (POINT - 0)) @ V[1:4]
    assert point_velocity @ AXIS == pytest.approx(0.7, abs=1e-12)
    if kind == "cylindrical":
        np.testing.assert_allclose(angular_velocity(X, V, 0), -1.3 * AXIS, atol=1e-12)
    sol = nc.simulate(model, 0.5, rtol=1e-10, t_eval=np.linspace(0, 0.5, 6))
    if kind != "point_on_line":   # slide along a fixed axis under gravity: s = ṡ0 t + ½ g·u t²
        exact = 0.7 * sol.t + 0.5 * (-9.81 * AXIS[1]) * sol.t**2
        np.testing.assert_allclose(sol.joint_coordinate("j"), exact, atol=1e-9)


def test_joint_rate_errors():
    mech = four_bar()
    mech.set_joint_rate("A", 1.0)
    mech.set_joint_rate("D", 1.0)          # 1 DOF: the second rate is determined
    with pytest.raises(nc.AssemblyError, match="cannot be prescribed"):
        nc.assemble(mech.build())
    with pytest.raises(ValueError, match="unknown joint"):
        four_bar().set_joint_rate("Q", 1.0)
    mech, _ = shafts(30.0, drive=nc.Drive(lambda t: (t, 1.0, 0.0)))
    with pytest.raises(ValueError, match="driven"):
        mech.set_joint_rate("input", 1.0)
    mech.add_spherical("in", "out", point=(0, 0, 0), name="ball")   # a universal has two
    with pytest.raises(ValueError, match="no joint coordinate"):
        mech.set_joint_rate("ball", 1.0)
    with pytest.raises(ValueError, match="both ends are on ground"):
        mech.add_cartesian_spring(nc.GROUND, nc.GROUND, (0, 0, 0), (1, 0, 0), stiffness=1.0)


# ------------------------------------------------------------ Solution outputs
def skew_part(A):
    return 0.5 * np.array([A[..., 2, 1] - A[..., 1, 2], A[..., 0, 2] - A[..., 2, 0],
                           A[..., 1, 0] - A[..., 0, 1]]).T


def test_spinning_body_orientation_and_angular_velocity():
    """Driven spin about a tilted axis: R(t) = Rot(u, Ωt) A0, ω = Ω u, a = −Ω² r⊥."""
    omega, centre = 2.5, np.array([0.2, -0.1, 0.3])
    A0 = Rotation.from_rotvec([0.3, 0.7, -0.2]).as_matrix()
    mech = nc.Mechanism(gravity=(0, 0, -9.81))
    mech.add_body("top", mass=1.0, com=(0.4, 0.1, 0.5), inertia=np.diag([0.02, 0.03, 0.04]),
                  origin=(0.5, 0.2, 0.1), axes=A0)
    mech.add_revolute(nc.GROUND, "top", point=centre, axis=AXIS, name="spin",
                      drive=nc.Drive(lambda t: (omega * t, omega, 0.0)))
    sol = nc.simulate(mech.build(), 2.0, rtol=1e-10, t_eval=np.linspace(0, 2, 21))
    expected = np.array([rotation(AXIS, omega * t) @ A0 for t in sol.t])
    R = sol.rotation("top")
    q = sol.quaternion("top")
    w_world, w_body = sol.angular_velocity("top"), sol.angular_velocity("top", frame="body")
    print(f"spin: rotation error {np.abs(R - expected).max():.2e}, "
          f"ω error {np.abs(w_world - omega * AXIS).max():.2e}")
    np.testing.assert_allclose(R, expected, atol=1e-9)
    np.testing.assert_allclose(w_world, np.broadcast_to(omega * AXIS, w_world.shape), atol=1e-9)
    np.testing.assert_allclose(w_body, np.einsum("kji,j->ki", expected, omega * AXIS), atol=1e-9)
    np.testing.assert_allclose(Rotation.from_quat(q[:, [1, 2, 3, 0]]).as_matrix(), R, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-12)
    assert q[0, 0] >= 0 and np.all(np.einsum("ki,ki->k", q[1:], q[:-1]) > 0)   # continuous
    np.testing.assert_allclose(sol.joint_coordinate("spin"), omega * sol.t, atol=1e-9)
    np.testing.assert_allclose(sol.joint_rate("spin"), omega, atol=1e-9)
    x = np.array([0.9, 0.4, -0.2])
    r = sol.point("top", x) - centre
    r_perp = r - np.outer(r @ AXIS, AXIS)
    np.testing.assert_allclose(sol.point_acceleration("top", x), -omega**2 * r_perp, atol=1e-8)
    assert sol.a.shape == sol.v.shape


def test_tumbling_body_angular_velocity_vs_finite_differences():
    """Torque-free asymmetric top: ω× = Ṙ Rᵀ (differences), L = R I Rᵀ ω constant."""
    inertia = np.diag([0.2, 0.3, 0.4])
    mech = nc.Mechanism()
    A0 = Rotation.from_rotvec([0.4, -0.3, 0.9]).as_matrix()
    mech.add_body("top", mass=1.0, com=(0, 0, 0), inertia=inertia, axes=A0)
    mech.set_initial("top", angular_velocity=(1.0, 2.0, 3.0))
    h = 2e-4
    t = np.sort(np.concatenate([np.linspace(0.1, 1.9, 7) + d for d in (-h, 0.0, h)]))
    sol = nc.simulate(mech.build(), 2.0, rtol=1e-11, t_eval=t)
    R, w = sol.rotation("top"), sol.angular_velocity("top")
    Rdot = (R[2::3] - R[0::3]) / (2 * h)
    w_fd = skew_part(Rdot @ np.swapaxes(R[1::3], 1, 2))
    L = np.einsum("kij,jl,kml,km->ki", R, inertia, R, w)
    print(f"tumbling: ω vs FD {np.abs(w_fd - w[1::3]).max():.2e}, "
          f"|ΔL| {np.abs(L - L[0]).max():.2e}")
    np.testing.assert_allclose(w_fd, w[1::3], atol=1e-6)
    np.testing.assert_allclose(L, np.broadcast_to(L[0], L.shape), atol=1e-8)
    state = nc.assemble(sol.model).state                          # requested, consistent
    np.testing.assert_allclose(angular_velocity(state.p.reshape(-1, 3), state.v.reshape(-1, 3),
                                                0), [1.0, 2.0, 3.0], atol=1e-12)
    wb = sol.angular_velocity("top", frame="body")
    np.testing.assert_allclose(np.einsum("kij,kj->ki", R, wb), w, atol=1e-14)


@pytest.fixture(scope="module")
def pendulum():
    """A rod looping about z (it goes over the top): unwrapped angle > 2π."""
    mech = nc.Mechanism(gravity=(0, -9.81, 0), name="pendulum")
    mech.add_body("rod", mass=1.0, com=(0.5, 0, 0), inertia=nc.rod_inertia(1.0, 1.0, 0.05))
    mech.add_revolute(nc.GROUND, "rod", point=(0, 0, 0), axis=(0, 0, 1), name="pivot")
    mech.set_joint_rate("pivot", 8.0)
    h = 2e-4
    t = np.sort(np.concatenate([np.linspace(0.05, 1.95, 11) + d for d in (-h, 0.0, h)]))
    return nc.simulate(mech.build(), 2.0, rtol=1e-11, t_eval=np.concatenate([[0.0], t])), h


def test_pendulum_joint_angle_and_rate(pendulum):
    sol, h = pendulum
    theta = sol.joint_coordinate("pivot")
    tip = sol.point("rod", (1, 0, 0))
    expected = np.unwrap(np.arctan2(tip[:, 1], tip[:, 0]))
    rate = sol.joint_rate("pivot")
    rate_fd = (theta[3::3] - theta[1::3]) / (2 * h)
    print(f"pendulum: angle vs atan2 {np.abs(theta - expected).max():.2e}, "
          f"rate vs FD {np.abs(rate_fd - rate[2::3]).max():.2e}")
    np.testing.assert_allclose(theta, expected, atol=1e-12)
    assert theta[0] == 0.0 and theta[-1] > 2 * np.pi
    assert rate[0] == pytest.approx(8.0, abs=1e-10)
    np.testing.assert_allclose(rate_fd, rate[2::3], atol=1e-5)
    np.testing.assert_allclose(sol.angular_velocity("rod")[:, 2], rate, atol=1e-10)


def test_describe_plot_animate(pendulum, capsys):
    sol, _ = pendulum
    text = describe(sol.model)
    assert "degrees of freedom: 1" in text and "pivot" in text
    from natcoord.cli import main
    assert main(["info", "four-bar"]) == 0
    assert capsys.readouterr().out.strip() == describe(nc.models.four_bar().build())
    import matplotlib
    from matplotlib.animation import FuncAnimation
    matplotlib.use("Agg")
    fig = sol.plot(point=("rod", (1, 0, 0)))
    assert len(fig.axes) == 4
    anims = [sol.animate(frames=3), nc.animate(sol, frames=2)]
    assert all(isinstance(a, FuncAnimation) for a in anims)
    for a in anims:
        a.to_jshtml()
    assert nc.plot is nc.viz.plotting.plot_solution


def test_to_dataframe(pendulum):
    sol, _ = pendulum
    pd = pytest.importorskip("pandas")
    df = sol.to_dataframe()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["t", "rod.x", "rod.y", "rod.z", "energy",
                                "constraint_residual", "velocity_residual"]
    assert df.shape == (sol.t.size, 7)
    np.testing.assert_array_equal(df["rod.y"], sol.p[:, 1])


def test_to_dataframe_without_pandas(pendulum, monkeypatch):
    sol, _ = pendulum
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        sol.to_dataframe()
