"""Shared checks of constraint rows for tests/test_joints.py and tests/test_new_joints.py.

Rigid motions of one body relative to another about ``POINT``, the dense
``g, g_t, γ, G`` of a model, random states off the constraint manifold and
Richardson-extrapolated time derivatives.
"""
import numpy as np
from scipy.spatial.transform import Rotation

import natcoord as nc


def unit(v):
    return np.asarray(v, float) / np.linalg.norm(v)


def rotation(axis, angle):
    return Rotation.from_rotvec(angle * unit(axis)).as_matrix()


T0 = 0.6                                      # evaluation time (drives move)
POINT = np.array([0.3, -0.2, 0.5])
AXIS = unit([1.0, 2.0, -0.5])
CROSS_AXIS = unit(np.cross(AXIS, [0.0, 0.0, 1.0]))   # universal joint's second axis
PAIRS = {"body-body": ("A", "B"), "ground-body": (nc.GROUND, "B"),
         "body-ground": ("A", nc.GROUND)}


def two_bodies():
    """Bodies A and B in general placements (no joint yet)."""
    mech = nc.Mechanism()
    for name, origin, rotvec in (("A", (0.1, 0.2, -0.3), (0.3, -0.5, 0.8)),
                                 ("B", (0.5, -0.1, 0.4), (-0.7, 0.2, 0.4))):
        mech.add_body(name, mass=1.3, com=np.add(origin, (0.1, 0.05, -0.02)),
                      inertia=np.diag([0.02, 0.03, 0.04]), origin=origin,
                      axes=Rotation.from_rotvec(rotvec).as_matrix())
    return mech


class Evaluator:
    """``g, g_t, γ`` (m,) and the dense ``G`` (m × 12 n) of a model at ``(t, p, v)``."""

    def __init__(self, model):
        self.model, self.ws = model, nc.Workspace(model, "dense")

    def __call__(self, t, p, v=None):
        ws = self.ws
        ws.constraints(t, np.asarray(p, float), np.zeros_like(p) if v is None else v)
        return ws.g.copy(), ws.g_t.copy(), ws.gamma.copy(), self.model.tables.csr(ws.G).toarray()


def off_manifold(model, seed):
    """Random ``p0, v0, a0``: the reference configuration perturbed, not consistent."""
    rng = np.random.default_rng(seed)
    n = model.n_coords
    return (model.p_reference + 0.1 * rng.standard_normal(n), rng.standard_normal(n),
            rng.standard_normal(n))


def derivatives_in_t(f, h=1e-2):
    """First and second derivative of ``f(t)`` at 0 (Richardson-extrapolated differences)."""
    def d1(h):
        return (f(h) - f(-h)) / (2 * h)

    def d2(h):
        return (f(h) - 2 * f(0.0) + f(-h)) / h**2
    return (4 * d1(h / 2) - d1(h)) / 3, (4 * d2(h / 2) - d2(h)) / 3


def moved(model, pair, R, d):
    """Coordinates with body b moved by ``x -> POINT + R (x − POINT) + d`` relative to a.

    When b is ground, a moves by the inverse motion instead.
    """
    a, b = pair
    if b is nc.GROUND:
        a, b, R, d = b, a, R.T, -R.T @ np.broadcast_to(d, 3)
    X = model.p_reference.reshape(-1, 3).copy()
    i = model.body_index[b]
    X[4 * i] = POINT + R @ (X[4 * i] - POINT) + d
    X[4 * i + 1:4 * i + 4] = X[4 * i + 1:4 * i + 4] @ R.T
    return X.ravel()
