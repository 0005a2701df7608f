"""The solver interface and the registry of backends."""
from __future__ import annotations

import importlib

import numpy as np

#: backend name -> "module:class" (imported lazily: optional dependencies).
_BACKENDS = {
    "dense": "natcoord.linalg.reference:DenseKKT",
    "superlu": "natcoord.linalg.reference:SuperLUKKT",
    "block": "natcoord.linalg.blockldl:BlockLDL",
    "cholmod": "natcoord.linalg.cholmod:CholmodKKT",
}

#: relative pivot threshold of constraint partitioning (see KKTSolver).
DROP_TOL = 1e-10
#: a row dropped at the previous factorization stays dropped while its
#: relative pivot is below this (hysteresis, see KKTSolver).
HOLD_TOL = 1e-4
#: body mass spread above which the fixed-order solves (block, cholmod) take
#: two steps of iterative refinement: their error grows like ε times the spread.
REFINE_ABOVE = 1e4


#: second moment ``∫ r r ᵀ dm / m`` about the centre of mass (m², in every direction)
#: that a point mass is given in the mass-free metric: its rotations weigh as those
#: of a body with a radius of gyration of about 1 m (see unit_mass_blocks)
POINT_MASS_METRIC = 1.0


def unit_mass_blocks(model):
    """``J4_i / m_i``: every body's mass block scaled to unit mass (n, 4, 4).

    The metric in which constraint partitioning decides redundancy: mass-free,
    so the decision depends on the geometry of the Jacobian only (a body of
    1e12 kg and one of 1e-9 kg count alike), yet each body keeps its own
    radius of gyration, which sets the relative weight of its rotations.

    A point mass has none, and its ``J4`` leaves its rotations out of the
    metric: every row on them would look redundant. Here it has the central
    second moment ``POINT_MASS_METRIC`` in every direction (a massless body:
    unit mass at its frame origin besides). That is a convention, as the
    mass-free metric is: it decides only rows whose angle to the rows before
    them is near the threshold, i.e. dependent to rounding in any metric, or
    not at all.
    """
    mass = model.J4[:, :1, :1]
    unit = model.J4 / np.where(mass > 0.0, mass, 1.0)
    unit[:, 0, 0] = 1.0
    point = [b.index for b in model.bodies if b.point_mass]
    unit[point, 1:, 1:] += POINT_MASS_METRIC * np.eye(3)
    return unit


def mass_ratio(J4):
    """``max m / min m`` over the bodies with mass: how far the mass metric is from the
    mass-free one (a massless body has no rotational inertia either: natcoord.linalg.blockldl
    decides its rows in the mass-free metric)."""
    masses = J4[:, 0, 0][J4[:, 0, 0] > 0.0]
    return masses.max() / masses.min() if masses.size else 1.0


class MassSpreadError(np.linalg.LinAlgError):
    """The body masses span more than a fixed-order backend (block, cholmod) resolves:
    at construction, or at a factorization (a joint row it cannot pivot). Pivoted
    LU (``dense``, ``superlu``) solves the same system."""


class KKTSolver:
    """Factor and solve ``[[M, Gᵀ], [G, 0]] [x; λ] = [r; s]``.

    Subclasses implement ``factor`` and ``solve``. Constraint partitioning:
    a joint row whose pivot, after eliminating the rows before it, falls below
    ``drop_tol`` times its pivot before elimination is *redundant*; it is
    dropped (``λ = 0``, its right-hand side ignored) and listed in
    ``self.dropped`` (sorted row indices). Rigid-body rows are never dropped.

    The pivots are measured in the mass-free metric of :func:`unit_mass_blocks`
    (redundancy is a property of the geometry, never of the masses); every
    backend applies the same rule and so drops the same number of rows.

    Hysteresis: off the constraint manifold (Runge–Kutta stages, loose
    tolerances) a redundant row is only *nearly* dependent, with a relative
    pivot of order (distance to the manifold)², and keeping it would make the
    accelerations jump. So a row dropped at the previous factorization stays
    dropped while its relative pivot is below ``HOLD_TOL``: ``row_threshold``
    (m,) holds the threshold each row is tested against.
    """

    name = "base"

    #: largest spread of body masses the backend resolves (``LinAlgError`` beyond)
    max_mass_ratio = np.inf

    def __init__(self, model, drop_tol=DROP_TOL, hold_tol=HOLD_TOL):
        self.model = model
        self.drop_tol = float(drop_tol)
        self.hold_tol = max(float(hold_tol), self.drop_tol)   # hold_tol=0: no hysteresis
        self.dropped = np.zeros(0, np.int64)
        self.row_threshold = np.full(model.n_rows, self.drop_tol)
        spread = mass_ratio(model.J4)
        if spread > self.max_mass_ratio:
            raise MassSpreadError(
                f"{self.name}: the body masses span a factor {spread:.1e}; this fixed-order "
                f"elimination loses ~log10 of that in digits and is trusted only up to "
                f"{self.max_mass_ratio:.0e}: use solver='superlu' or 'dense' (pivoted LU), "
                f"or rescale the lightest or heaviest bodies")
        #: iterative refinement of fixed-order solves (see ``refined_solve``)
        self.refine = spread > REFINE_ABOVE

    def _update_thresholds(self):
        """Thresholds for the next factorization from the current dropped set."""
        self.row_threshold[:] = self.drop_tol
        self.row_threshold[self.dropped] = self.hold_tol

    def factor(self, G):
        """Numeric factorization for Jacobian blocks ``G`` (nnz, 3)."""
        raise NotImplementedError

    def solve(self, r, s):
        """``(x, λ)`` for right-hand sides ``r`` (12 n,) and ``s`` (m,)."""
        raise NotImplementedError


class SolverUnavailable(RuntimeError):
    """A backend whose optional dependency is missing."""


def available_solvers():
    """Backends that can be constructed on this machine."""
    names = []
    for name in _BACKENDS:
        try:
            _load(name)
            names.append(name)
        except SolverUnavailable:
            pass
    return names


def default_solver():
    return "block"


def _load(name):
    if not isinstance(name, str) or name not in _BACKENDS:
        raise ValueError(f"unknown solver {name!r}; choose one of {sorted(_BACKENDS)}")
    module, cls = _BACKENDS[name].split(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except ImportError as err:
        raise SolverUnavailable(f"solver {name!r} is unavailable: {err}") from err


def make_solver(model, name=None, drop_tol=DROP_TOL, hold_tol=HOLD_TOL) -> KKTSolver:
    """Construct backend ``name`` for ``model`` (the symbolic phase)."""
    return _load(name or default_solver())(model, drop_tol, hold_tol)


def refined_solve(solver, G, r, s):
    """``solver._solve_once(r, s)`` plus two steps of iterative refinement on
    ``[[M, Gᵀ], [G, 0]]`` (kept rows) when the masses span more than
    ``REFINE_ABOVE``: the fixed elimination order loses ~log10(spread) digits,
    and each step recovers them as long as that loss is well below 16.
    ``G``: the Jacobian values the factorization was made with."""
    from ..model.kernels import jacobian_times, jacobian_transpose_times
    x, lam = solver._solve_once(r, s)
    if not solver.refine:
        return x, lam
    model, tables = solver.model, solver.model.tables
    gt_lam, g_x = np.empty((4 * model.n_bodies, 3)), np.empty(model.n_rows)
    for _ in range(2):
        jacobian_transpose_times(G, tables.pattern_row, tables.pattern_slot, lam, gt_lam)
        jacobian_times(G, tables.pattern_row, tables.pattern_slot, x.reshape(-1, 3), g_x)
        rs = s - g_x
        rs[solver.dropped] = 0.0
        dx, dlam = solver._solve_once(r - model.mass_matrix @ x - gt_lam.ravel(), rs)
        x, lam = x + dx, lam + dlam
    return x, lam
