"""Constraint rows ``g``, their Jacobian ``G``, ``g_t`` and ``γ``
(docs/method.md#13-rigid-body, #14-joints, #15-descriptor-form).

Each joint type, between two bodies and to ground on either side, is checked
against independent truths:

* kinematics: the relative motion the joint allows (rotation about its axis,
  sliding along it, ...; a drive's prescribed angle or slide) satisfies its
  rows, and its rows are independent (rank = 6 − joint DOF);
* ``G`` against central differences of ``g`` at a configuration off the
  constraint manifold;
* along ``p(t) = p0 + t v0 + ½ t² a0``: ``dg/dt = G v0 + g_t`` and
  ``d²g/dt² = G a0 − γ`` (γ = −(g̈ − G p̈)), both by differences in t;
* ``g_t`` against differences of ``g`` in t at fixed p.
"""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import natcoord as nc
from joint_checks import (AXIS, CROSS_AXIS, PAIRS, POINT, T0, Evaluator, derivatives_in_t,
                          moved, off_manifold, rotation, two_bodies, unit)

OTHER_POINT = np.array([-0.4, 0.6, 0.1])      # distance rod's far end
OBLIQUE_AXIS = unit(CROSS_AXIS + 0.6 * AXIS)   # 59° to AXIS
IN_PLANE = unit(np.cross(AXIS, CROSS_AXIS))
TUMBLE = Rotation.from_rotvec([0.5, -0.9, 0.3]).as_matrix()
THETA = nc.Drive(lambda t: 0.4 * np.sin(2 * t) + 0.3 * t**2,
                 lambda t: 0.8 * np.cos(2 * t) + 0.6 * t,
                 lambda t: -1.6 * np.sin(2 * t) + 0.6)
SLIDE = nc.Drive(lambda t: (0.2 * np.sin(3 * t), 0.6 * np.cos(3 * t), -1.8 * np.sin(3 * t)))


#: kind -> (add the joint between a and b, number of rows,
#:          allowed motion of b relative to a at time t: (rotation R, shift d) about POINT)
JOINTS = {
    "revolute": (lambda m, a, b: m.add_revolute(a, b, point=POINT, axis=AXIS, name="j"),
                 5, lambda t: (rotation(AXIS, 0.7), 0.0)),
    "revolute drive": (lambda m, a, b: m.add_revolute(a, b, point=POINT, axis=AXIS, name="j",
                                                      drive=THETA),
                       6, lambda t: (rotation(AXIS, THETA(t)[0]), 0.0)),
    "spherical": (lambda m, a, b: m.add_spherical(a, b, point=POINT, name="j"),
                  3, lambda t: (Rotation.from_rotvec([0.5, -0.9, 0.3]).as_matrix(), 0.0)),
    "universal": (lambda m, a, b: m.add_universal(a, b, point=POINT, axis_a=AXIS,
                                                  axis_b=CROSS_AXIS, name="j"),
                  4, lambda t: (rotation(AXIS, 0.5) @ rotation(CROSS_AXIS, -0.8), 0.0)),
    "cylindrical": (lambda m, a, b: m.add_cylindrical(a, b, point=POINT, axis=AXIS, name="j"),
                    4, lambda t: (rotation(AXIS, 0.7), 0.3 * AXIS)),
    "prismatic": (lambda m, a, b: m.add_prismatic(a, b, point=POINT, axis=AXIS, name="j"),
                  5, lambda t: (np.eye(3), 0.3 * AXIS)),
    "prismatic drive": (lambda m, a, b: m.add_prismatic(a, b, point=POINT, axis=AXIS,
                                                        name="j", drive=SLIDE),
                        6, lambda t: (np.eye(3), SLIDE(t)[0] * AXIS)),
    "fixed": (lambda m, a, b: m.add_fixed(a, b, point=POINT, name="j"),
              6, lambda t: (np.eye(3), 0.0)),
    "distance": (lambda m, a, b: m.add_distance(a, b, point_a=POINT, point_b=OTHER_POINT,
                                                name="j"),
                 1, lambda t: (Rotation.from_rotvec([-0.4, 0.2, 1.1]).as_matrix(), 0.0)),
    "universal oblique": (lambda m, a, b: m.add_universal(a, b, point=POINT, axis_a=AXIS,
                                                          axis_b=OBLIQUE_AXIS, name="j"),
                          4, lambda t: (rotation(AXIS, 0.5) @ rotation(OBLIQUE_AXIS, -0.8),
                                        0.0)),
    "point on line": (lambda m, a, b: m.add_point_on_line(a, b, point=POINT, axis=AXIS,
                                                          name="j"),
                      2, lambda t: (TUMBLE, 0.3 * AXIS)),
    "point on plane": (lambda m, a, b: m.add_point_on_plane(a, b, point=POINT, normal=AXIS,
                                                            name="j"),
                       1, lambda t: (TUMBLE, 0.3 * CROSS_AXIS - 0.2 * IN_PLANE)),
}


@pytest.fixture(params=list(PAIRS), scope="module")
def pair(request):
    return PAIRS[request.param]


@pytest.fixture(params=list(JOINTS), scope="module")
def kind(request):
    return request.param


@pytest.fixture(scope="module")
def model(kind, pair):
    """Bodies A and B in general placements (both always present), joined by ``kind``."""
    mech = two_bodies()
    add, _, _ = JOINTS[kind]
    add(mech, *pair)
    return mech.build()


def joint_rows(model):
    start, stop = model.joint_rows[0]
    return slice(start, stop)


def test_allowed_motion_satisfies_the_joint(model, kind, pair):
    _, _, motion = JOINTS[kind]
    g, _, _, _ = Evaluator(model)(T0, moved(model, pair, *motion(T0)))
    np.testing.assert_allclose(g, 0.0, atol=1e-14)


def test_rows_are_independent(model, kind):
    """Full-rank constraint sets: rank of [rigid rows; joint rows] = 12 + rows (§1.4), so
    two bodies and one joint keep 12 − rows degrees of freedom."""
    _, rows, _ = JOINTS[kind]
    _, _, _, G = Evaluator(model)(0.0, model.p_reference)
    assert model.n_rows == 12 + rows
    assert np.linalg.matrix_rank(G) == 12 + rows
    assert nc.assemble(model).dof == 12 - rows


def test_jacobian_is_the_derivative_of_g(model):
    evaluate, h = Evaluator(model), 1e-3
    p0, _, _ = off_manifold(model, seed=1)
    _, _, _, G = evaluate(T0, p0)
    G_fd = np.column_stack([(evaluate(T0, p0 + h * e)[0] - evaluate(T0, p0 - h * e)[0]) / (2 * h)
                            for e in np.eye(p0.size)])
    np.testing.assert_allclose(G, G_fd, rtol=0, atol=1e-10)


def test_g_t_is_the_partial_time_derivative(model):
    evaluate = Evaluator(model)
    p0, _, _ = off_manifold(model, seed=2)
    _, g_t, _, _ = evaluate(T0, p0)
    expected, _ = derivatives_in_t(lambda s: evaluate(T0 + s, p0)[0])
    np.testing.assert_allclose(g_t, expected, rtol=0, atol=1e-8)


def test_gamma_is_minus_the_second_derivative_not_in_G(model):
    """Along p(t) = p0 + t v0 + ½t² a0: ġ = G v0 + g_t and g̈ = G a0 − γ."""
    evaluate = Evaluator(model)
    p0, v0, a0 = off_manifold(model, seed=3)
    _, g_t, gamma, G = evaluate(T0, p0, v0)
    g_dot, g_ddot = derivatives_in_t(lambda s: evaluate(T0 + s, p0 + s * v0 + 0.5 * s**2 * a0)[0])
    np.testing.assert_allclose(G @ v0 + g_t, g_dot, rtol=0, atol=1e-8)
    np.testing.assert_allclose(G @ a0 - gamma, g_ddot, rtol=0, atol=1e-7)


def test_rigid_body_rows_closed_form():
    """``g_RC``, its ``e_kᵀ`` Jacobian blocks and ``γ = −(ė_k·ė_l)(1 + [k≠l])`` (§1.3)."""
    mech = nc.Mechanism()
    mech.add_body("A", mass=1.0, com=(0, 0, 0), inertia=np.diag([0.02, 0.03, 0.04]))
    model = mech.build()
    p0, v0, _ = off_manifold(model, seed=4)
    g, _, gamma, G = Evaluator(model)(0.0, p0, v0)
    E, Ed = p0.reshape(4, 3)[1:], v0.reshape(4, 3)[1:]
    pairs = [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]
    half = np.array([0.5, 0.5, 0.5, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(g, [half[r] * E[k] @ E[l] - half[r] * (k == l)
                                   for r, (k, l) in enumerate(pairs)], atol=1e-15)
    np.testing.assert_allclose(gamma, [-2 * half[r] * Ed[k] @ Ed[l]
                                       for r, (k, l) in enumerate(pairs)], atol=1e-14)
    expected = np.zeros((6, 12))
    for r, (k, l) in enumerate(pairs):
        expected[r, 3 * (k + 1):3 * (k + 2)] += half[r] * E[l]
        expected[r, 3 * (l + 1):3 * (l + 2)] += half[r] * E[k]
    np.testing.assert_allclose(G, expected, atol=1e-15)
