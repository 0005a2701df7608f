"""The constant mass matrix ``M_i = J4 ⊗ I3`` (docs/method.md#12-mass-matrix) against its
definition.

``T = ½ ṗᵀ M ṗ = ∫ ½ |ṙ|² dm`` with ``r = C(r̄) p``, hence ``M = ∫ C(r̄)ᵀ C(r̄) ρ dV``
over the body, and gravity's generalized force is ``∫ C(r̄)ᵀ ρ g dV``. Both
integrals are evaluated by brute force: a tensor-product Gauss–Legendre rule
over a uniform box whose centre is off the frame origin and whose edges are
rotated against the body axes (so ``J4`` is full). The rule is exact for the
quadratic integrand.
"""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import natcoord as nc

GRAVITY = np.array([0.3, -9.81, 1.2])
#: (mass, box edge lengths, centre in body axes, box edges' rotation in body
#:  axes, body-frame origin in the world, body axes' rotation in the world)
BOXES = {
    "slab": (2.5, (0.4, 0.1, 0.25), (0.3, -0.2, 0.15), (0.3, -0.7, 1.1), (1.0, 2.0, -0.5),
             (0.2, 0.4, -0.9)),
    "brick": (0.7, (0.05, 0.3, 0.12), (-0.5, 0.1, 0.8), (-1.2, 0.2, 0.4), (-0.3, 0.0, 0.7),
              (1.5, -0.3, 0.2)),
}


def box_quadrature(size, centre, R_box, order=3):
    """Body-frame points ``r̄`` (k, 3) and volume weights (k,) filling the box."""
    x, w = np.polynomial.legendre.leggauss(order)
    s = np.stack(np.meshgrid(x, x, x, indexing="ij"), -1).reshape(-1, 3)
    weights = np.prod(np.stack(np.meshgrid(w, w, w, indexing="ij"), -1).reshape(-1, 3), 1)
    half = 0.5 * np.asarray(size)
    return centre + (s * half) @ R_box.T, weights * np.prod(half)


def C(r_bar):
    """``C(r̄) = c̄ᵀ ⊗ I3`` (3 × 12), ``c̄ = (1, r̄)`` (docs/method.md#11-coordinates)."""
    return np.kron(np.concatenate([[1.0], r_bar])[None, :], np.eye(3))


@pytest.fixture(scope="module")
def boxes():
    """The model of the two free boxes and, per box, its body-frame quadrature."""
    mech = nc.Mechanism(gravity=GRAVITY)
    quadrature = {}
    for name, (mass, size, centre, rot_box, origin, rot_body) in BOXES.items():
        R_box = Rotation.from_rotvec(rot_box).as_matrix()
        A = Rotation.from_rotvec(rot_body).as_matrix()
        inertia = R_box @ nc.box_inertia(mass, size) @ R_box.T   # about the centre, body axes
        com_world = np.asarray(origin) + A @ np.asarray(centre)
        mech.add_body(name, mass=mass, com=com_world, inertia=inertia, origin=origin, axes=A)
        points, volume = box_quadrature(size, np.asarray(centre), R_box)
        quadrature[name] = (points, volume * mass / np.prod(size))        # dm = ρ dV
    return mech.build(), quadrature


def test_mass_matrix_is_the_volume_integral_of_CtC(boxes):
    model, quadrature = boxes
    M = model.mass_matrix.toarray()
    expected = np.zeros_like(M)
    for name, (points, dm) in quadrature.items():
        block = model.body_slice(name)
        expected[block, block] = sum(w * C(r).T @ C(r) for r, w in zip(points, dm))
    scale = np.abs(expected).max()
    np.testing.assert_allclose(M, expected, rtol=0, atol=1e-12 * scale)


def test_gravity_force_is_the_volume_integral_of_Ct_g(boxes):
    model, quadrature = boxes
    expected = np.zeros(model.n_coords)
    for name, (points, dm) in quadrature.items():
        expected[model.body_slice(name)] = sum(w * C(r).T @ GRAVITY for r, w in zip(points, dm))
    np.testing.assert_allclose(model.gravity_force.ravel(), expected, rtol=0,
                               atol=1e-12 * np.abs(expected).max())
