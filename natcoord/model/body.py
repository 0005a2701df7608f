"""Rigid bodies in natural coordinates: the constant mass matrix
(docs/method.md#12-mass-matrix)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..util.checks import float_array, number

_TOL = 1e-9
#: a central second moment within rounding of zero (relative to the largest
#: moment) is a line or plane distribution; a thin but positive one (tiago's
#: ``arm_1_link``: 1.1e-10 of its largest moment) is a volume, accepted when its
#: spatial inertia is well conditioned (:func:`validate_conditioning`)
_PLANE_TOL = 1e-12
#: rounding of a 3-term dot product, ``Aᵀ x``, relative to its terms' size
_ROUNDING = 4 * np.finfo(float).eps
#: largest condition number of the spatial inertia ``Ĩ/m`` accepted: solves with
#: the body's mass on its rigid motions then keep at least 4 significant digits
_COND_MAX = 1e12


class _Ground:
    """The fixed frame. It is not a body: its coordinates are constants."""

    def __repr__(self):
        return "GROUND"

    def __reduce__(self):       # one GROUND: pickles and copies are it (tests use `is`)
        return "GROUND"


GROUND = _Ground()


@dataclass(frozen=True)
class Body:
    """A moving body: reference placement and mass properties.

    ``origin`` (3,) and ``axes`` (3×3, columns e1 e2 e3) place the body frame in
    the reference configuration; ``com`` (3,) is the centre of mass in body
    axes; ``inertia`` (3×3) the inertia tensor about the centre of mass in body
    axes.
    """

    name: str
    index: int
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    origin: np.ndarray
    axes: np.ndarray

    @property
    def point_mass(self) -> bool:
        """A point mass: zero inertia about the centre of mass (:func:`validate_conditioning`);
        with zero mass too, a massless body (a frame between joints)."""
        return not np.any(self.inertia)

    @property
    def physical(self) -> bool:
        """Whether some mass distribution has this inertia (:func:`physical_inertia`);
        a body without is accepted only as ``add_body(..., non_physical_inertia=True)``."""
        return physical_inertia(self.inertia)

    @property
    def J4(self) -> np.ndarray:
        """4×4 ``J4 = [[m, m c̄ᵀ], [m c̄, J]]`` so that ``M_i = J4 ⊗ I3`` (§1.2).

        ``J = ∫ r̄ r̄ᵀ dm = ½ tr(I_c) 1 − I_c + m c̄ c̄ᵀ`` about the frame origin.
        """
        return mass_block(self.mass, self.com, self.inertia)

    def to_local_point(self, world_point) -> np.ndarray:
        """Body coordinates ``r̄ = Aᵀ (x − o)`` of a reference-configuration point,
        components within the frame's resolution zero (:meth:`resolution`)."""
        d = np.asarray(world_point, float) - self.origin
        floor = self.resolution() * np.abs(d).max() + _ROUNDING * np.abs(self.origin).max()
        return _snapped(self.axes.T @ d, floor)

    def to_local_direction(self, world_direction) -> np.ndarray:
        """Body components ``ū = Aᵀ u`` of a world direction, components within the
        frame's resolution zero (:meth:`resolution`)."""
        u = np.asarray(world_direction, float)
        return _snapped(self.axes.T @ u, self.resolution() * np.abs(u).max())

    def resolution(self) -> float:
        """Relative accuracy of body coordinates in this frame: the axes' deviation from
        orthonormality ``max |AᵀA − 1|`` plus the rounding of ``Aᵀ x``.

        A body component below it (times the vector's size) cannot be told from
        zero: ``A ū`` reproduces ``u`` only to that accuracy. Such components are
        the frame's noise, not geometry — the axes of a chain of rotations drift
        from orthonormality by ~1e-16 per link — yet each would be a term of a
        constraint row and a block of its Jacobian: chain(512)'s revolute rows
        carried 24 quadratic terms per body where 10 are geometry, and 36 Jacobian
        blocks where 24 are, 1.27× the work of ``nc.forward``."""
        A = self.axes
        return float(np.abs(A.T @ A - np.eye(3)).max()) + _ROUNDING

    def to_world_point(self, local_point) -> np.ndarray:
        return self.origin + self.axes @ np.asarray(local_point, float)

    def to_world_direction(self, local_direction) -> np.ndarray:
        return self.axes @ np.asarray(local_direction, float)

    def coordinates(self, origin=None, axes=None) -> np.ndarray:
        """12 natural coordinates ``(o, e1, e2, e3)`` as a 4×3 block."""
        o = self.origin if origin is None else np.asarray(origin, float)
        A = self.axes if axes is None else np.asarray(axes, float)
        return np.vstack([o, A.T])


def _snapped(c, floor):
    """``c`` with the components of size at most ``floor`` set to zero."""
    c[np.abs(c) <= floor] = 0.0
    return c


def mass_block(mass, com, inertia) -> np.ndarray:
    """``J4`` of §1.2 from mass, centre of mass and central inertia (body axes)."""
    c = np.asarray(com, float)
    I_c = np.asarray(inertia, float)
    J = 0.5 * np.trace(I_c) * np.eye(3) - I_c + mass * np.outer(c, c)
    J4 = np.empty((4, 4))
    J4[0, 0] = mass
    J4[0, 1:] = J4[1:, 0] = mass * c
    J4[1:, 1:] = J
    return J4


def validate_mass_properties(name, mass, inertia, non_physical=False):
    """Physical mass and a volume distribution (``J4`` positive definite).

    The central second moments ``J_c = ½ tr(I) 1 − I`` have eigenvalues
    ``½(I_j + I_k − I_i)``: negative violates the triangle inequality of the
    principal moments, zero is a line or plane mass distribution. Returns
    ``(mass, inertia)`` as float and (3, 3) array. An inertia of exactly zero is a
    point mass, accepted (:func:`validate_conditioning`), and with it a mass of zero:
    a massless body, the frame between two joints that MuJoCo composes in one body
    (natcoord.io.mjcf).

    ``non_physical=True`` accepts positive principal moments that violate the
    triangle inequality, an inertia no mass distribution has but rigid-body
    dynamics can: its spatial inertia ``Ĩ`` (Schur complement ``I_c``) is positive
    definite, and every solve works with ``Ĩ``, not ``J4`` (which is indefinite),
    as Pinocchio and RBDL do with such URDF inertias (:func:`physical_inertia`).
    """
    I = float_array(inertia)
    point = I is not None and I.shape == (3, 3) and not np.any(I)
    if isinstance(mass, (bool, np.bool_)):      # True is 1 to Python, no number to a file
        raise ValueError(f"body {name!r}: mass must be a number (kg), got {mass!r}")
    mass = number(mass, "mass", f"body {name!r}", "non-negative" if point else "positive")
    if point:
        return mass, np.zeros((3, 3))
    if I is None or I.shape != (3, 3) or not np.all(np.isfinite(I)):
        raise ValueError(f"body {name!r}: inertia must be a finite 3×3 matrix, got {inertia!r}")
    scale = max(np.abs(I).max(), np.finfo(float).tiny)
    if np.abs(I - I.T).max() > _TOL * scale:
        raise ValueError(f"body {name!r}: inertia tensor is not symmetric; pass (I + I.T)/2 "
                         f"if the asymmetry is round-off")
    principal = np.linalg.eigvalsh(I)
    if principal.min() < -_TOL * scale:     # a zero moment is a line, reported below
        raise ValueError(f"body {name!r}: principal moments of inertia must be positive, "
                         f"got {principal}")
    second_moments = 0.5 * principal.sum() - principal
    if second_moments.min() < -_TOL * scale:
        if non_physical:
            return mass, I.copy()
        raise ValueError(f"body {name!r}: principal moments {principal} violate the triangle "
                         f"inequality I1 + I2 >= I3; no mass distribution has this inertia "
                         f"(pass non_physical_inertia=True to simulate it as given, as "
                         f"Pinocchio does)")
    if second_moments.min() <= _PLANE_TOL * scale:
        raise ValueError(f"body {name!r}: inertia {principal} describes a line or plane mass "
                         f"distribution (singular J4); natcoord needs a volume: give the body "
                         f"a small thickness")
    return mass, I.copy()


def physical_inertia(inertia) -> bool:
    """Whether some mass distribution has the central inertia ``inertia`` (3×3):
    its principal second moments ``½ tr(I) − I_k`` are not negative beyond rounding
    (the triangle inequality of the principal moments, :func:`validate_mass_properties`)."""
    principal = np.linalg.eigvalsh(np.asarray(inertia, float))
    scale = max(np.abs(principal).max(), np.finfo(float).tiny)
    return bool((0.5 * principal.sum() - principal).min() >= -_TOL * scale)


def validate_conditioning(body):
    """The body's mass on its rigid motions far from singular in floating point,
    whatever the unit of mass.

    The evaluations solve with each body's 6×6 spatial inertia ``Ĩ = TᵀMT``
    (``M`` on the body's rigid velocities): the compiled block factorization
    (``core/src/blockldl.c``), and the reference backends with the KKT matrix,
    whose constraints leave ``M`` only the rigid motions, deciding redundancy
    on ``Ĩ`` too (:mod:`natcoord.linalg.redundancy`). So a thin plate, ``J4``
    nearly singular (tiago's ``arm_1_link``: condition number of ``J4/m``
    2.1e12, q̈ equal to Pinocchio's to 3e-15 with block, dense and superlu), is
    as good as a block. Only ``cholmod``'s range-space method inverts ``J4``; it
    refuses such bodies itself. In body axes
    ``Ĩ/m = [[1, −[c̄]×], [[c̄]×, I_c/m − [c̄]×²]]`` does not depend on the mass
    scale (a 1e-9 kg body with proportionally small inertia is as good as a 1 kg
    one); its condition number is large when the radii of gyration are tiny
    compared with 1 m (nearly a point mass) or with the distance
    of the frame origin from the centre of mass. Beyond ``_COND_MAX`` solves
    with it lose more than 12 of 16 digits: a body whose radii of gyration are
    tiny yet not zero is refused.

    A point mass (inertia exactly zero, :attr:`Body.point_mass`; an importer
    rounds icub's 1e-20 kg m² to it) is the exception: its ``Ĩ`` has rank 3,
    exactly, and no solve inverts it alone. The block factorization pivots on
    ``Ĩ`` plus the articulated inertia of the subtree the body carries
    (:mod:`natcoord.linalg.blockldl`), positive definite when the joints to that
    subtree determine the body's rotation (as in Featherstone's articulated-body
    algorithm, Pinocchio's ``aba``); the reference backends solve the KKT matrix,
    regular on the same condition. A model is checked for it when it is built
    (:func:`natcoord.model.frozen.check_point_masses`).
    """
    if body.point_mass:
        return
    c = body.com
    C = np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])
    with np.errstate(over="ignore"):        # 1 kg m² on 1e-320 kg: radii beyond 1e154 m
        spatial = np.block([[np.eye(3), -C], [C, body.inertia / body.mass - C @ C]])
    lam = np.linalg.eigvalsh(spatial) if np.all(np.isfinite(spatial)) else np.array([0.0, 1.0])
    if lam[0] <= lam[-1] / _COND_MAX:
        cond = lam[-1] / lam[0] if lam[0] > 0 else np.inf
        with np.errstate(over="ignore"):
            radii = np.sqrt(np.maximum(np.linalg.eigvalsh(body.inertia) / body.mass, 0.0))
        raise ValueError(
            f"body {body.name!r}: its spatial inertia is numerically singular (condition "
            f"number of Ĩ/m {cond:.1e} > {_COND_MAX:.0e}): radii of "
            f"gyration {radii} m for a frame origin {np.linalg.norm(body.com):.3g} m from the "
            f"centre of mass; give the inertia of the body's real size (about m·size²), or "
            f"put the frame origin closer to the centre of mass. The condition is measured "
            f"in metres: a body whose real size is far from 1 m (a 1 μm part, a 1000 km "
            f"structure) needs a length unit near its size (μm, km; gravity, points and "
            f"inertias in that unit too)")


def validate_axes(name, axes) -> np.ndarray:
    A = float_array(axes)
    if A is None or A.shape != (3, 3) or not np.all(np.isfinite(A)):
        raise ValueError(f"body {name!r}: axes must be a finite 3×3 matrix (columns e1, e2, e3), "
                         f"got {axes!r}")
    if np.abs(A.T @ A - np.eye(3)).max() > 1e-9 or np.linalg.det(A) < 0:
        raise ValueError(f"body {name!r}: axes must be orthonormal and right-handed "
                         f"(columns e1, e2, e3 of a rotation matrix)")
    return A


def box_inertia(mass, size) -> np.ndarray:
    """Central inertia of a uniform box with edge lengths ``size`` (body axes)."""
    a, b, c = np.asarray(size, float) ** 2
    return mass / 12.0 * np.diag([b + c, a + c, a + b])


def rod_inertia(mass, length, section, axis=0) -> np.ndarray:
    """Uniform square-section rod along body axis ``axis`` (0, 1 or 2)."""
    size = np.full(3, float(section))
    size[axis] = length
    return box_inertia(mass, size)


def cylinder_inertia(mass, radius, length, axis=2) -> np.ndarray:
    """Solid cylinder along body axis ``axis``."""
    lateral = mass * (3 * radius**2 + length**2) / 12.0
    I = np.full(3, lateral)
    I[axis] = 0.5 * mass * radius**2
    return np.diag(I)


def mass_terms(bodies, gravity):
    """``J4`` of every body (n, 4, 4) and gravity as the constant generalized force
    ``C(c̄)ᵀ m g`` (4 n, 3) (docs/method.md#12-mass-matrix)."""
    J4 = np.array([b.J4 for b in bodies])
    gravity_force = np.zeros((4 * len(bodies), 3))
    for k, b in enumerate(bodies):
        gravity_force[4 * k] = b.mass * np.asarray(gravity)
        gravity_force[4 * k + 1:4 * k + 4] = b.mass * np.outer(b.com, gravity)
    return J4, gravity_force
