"""CHOLMOD (scikit-sparse) on the range-space matrix ``S = G M⁻¹ Gᵀ``.

The range-space method for ``[[M, Gᵀ], [G, 0]] [x; λ] = [r; s]``:

    S λ = G M⁻¹ r − s,    x = M⁻¹ (r − Gᵀ λ),

with ``M⁻¹ = blockdiag(J4_i⁻¹ ⊗ I3)``. ``S`` is formed from the Jacobian blocks
by the compiled core (``engine.range_space``) over a pattern fixed once per model; CHOLMOD's
fill-reducing analysis of that pattern is done once per model too, the
numeric factorization at every evaluation. Redundant rows make ``S``
singular: a failed or tiny Cholesky pivot triggers the dense detection of
:mod:`natcoord.linalg.redundancy` (same rule as the other reference backends;
"tiny" allows for the mass spread ``R``, as in the block solver: a relative
pivot above ``drop_tol · R`` is above ``drop_tol`` in the mass-free metric)
and the reduced ``S`` is factored; while rows are dropped, the detection runs
at every factorization (the redundant set may change along a motion).

Importing this module raises ImportError when scikit-sparse is missing, so
the registry reports the backend as unavailable.
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sksparse.cholmod import CholmodError, CholmodWarning, analyze

from ..core import engine
from ..model.kernels import jacobian_times, jacobian_transpose_times, mass_times
from .base import DROP_TOL, HOLD_TOL, KKTSolver, MassSpreadError, mass_ratio, refined_solve
from .redundancy import redundant_rows


class RangeSpacePlan:
    """Pattern of ``S`` (lower triangle, CSC) and the products that fill it.

    The Jacobian is cut into row blocks ``(row, body)`` (4 slots × 3);
    ``S[row_p, row_q] += Σ u_p · g_q`` over the pairs of row blocks of one body
    with ``row_p ≥ row_q``, where ``u_p = (J4⁻¹ ⊗ I3) g_p``.
    """

    def __init__(self, model):
        tables, m = model.tables, model.n_rows
        body = tables.pattern_slot // 4
        keys, self.entry_block = np.unique(tables.pattern_row * model.n_bodies + body,
                                           return_inverse=True)
        self.entry_slot = tables.pattern_slot % 4
        self.block_row, self.block_body = keys // model.n_bodies, keys % model.n_bodies
        p, q = _pairs_within(self.block_body)
        keep = self.block_row[p] >= self.block_row[q]
        p, q = p[keep], q[keep]
        target = self.block_row[q] * m + self.block_row[p]          # column-major, lower
        cells, self.pair_target = np.unique(target, return_inverse=True)
        order = np.argsort(self.pair_target, kind="stable")
        self.pair_p, self.pair_q = p[order], q[order]
        self.pair_target = self.pair_target[order]
        cols, rows = cells // m, cells % m
        self.indices = rows.astype(np.int32)
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=m))]) \
            .astype(np.int32)
        self.diagonal = np.flatnonzero(rows == cols)
        self.shape = (m, m)
        self.Minv = np.linalg.inv(model.J4)
        self._analyses = {}

    def matrix(self, data):
        return sp.csc_matrix((data, self.indices, self.indptr), shape=self.shape)

    def analysis(self, S, dropped):
        """CHOLMOD's symbolic factorization of ``S`` (reduced by ``dropped``), cached."""
        key = tuple(dropped)
        if key not in self._analyses:
            self._analyses[key] = analyze(S, mode="auto", ordering_method="default")
        return self._analyses[key]


def _pairs_within(group):
    """All ordered pairs ``(p, q)`` of indices with ``group[p] == group[q]``."""
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    reps = counts[group[order]]
    first = np.repeat(start[group[order]], reps)
    offset = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    return np.repeat(order, reps), order[first + offset]


class CholmodKKT(KKTSolver):
    """Range-space method with CHOLMOD's sparse Cholesky of ``S = G M⁻¹ Gᵀ``."""

    name = "cholmod"
    #: G M⁻¹ Gᵀ sums compliances 1/m: with refinement ~1e-6 up to a spread of
    #: 1e8, worse beyond (1e-3…1e-1 at 1e15)
    max_mass_ratio = 1e8
    #: ``J4⁻¹`` of every body enters ``S``: a thin plate's ``J4`` (a volume, accepted by
    #: the builder, docs/method.md §1.2) is nearly singular, and beyond this condition
    #: number of ``J4/m`` the solves lose more than 12 of 16 digits (tiago_dual's arm
    #: links, 2.1e12: q̈ to 2.4e-6 here, to 3e-15 with block, dense and superlu)
    max_J4_condition = 1e12

    def __init__(self, model, drop_tol=DROP_TOL, hold_tol=HOLD_TOL):
        super().__init__(model, drop_tol, hold_tol)
        mass = model.J4[:, :1, :1]
        # a singular or indefinite J4 (a point mass; a non-physical inertia, add_body's
        # non_physical_inertia) counts as infinitely conditioned: M⁻¹ does not exist or
        # S is not positive definite
        lam = np.linalg.eigvalsh(model.J4 / np.where(mass > 0.0, mass, 1.0)) \
            if model.n_bodies else np.ones((0, 4))
        condition = np.full(len(lam), np.inf)
        np.divide(lam[:, -1], lam[:, 0], out=condition, where=lam[:, 0] > 0.0)
        thin = [b.name for b, c in zip(model.bodies, condition) if c > self.max_J4_condition]
        if thin:
            raise MassSpreadError(
                f"{self.name}: the range-space method inverts each body's J4, and bodies "
                f"{thin} have J4/m conditioned up to {max(condition):.1e} (thin plates, "
                f"point masses, non-physical inertias), "
                f"beyond the {self.max_J4_condition:.0e} it resolves: use solver='block' "
                f"(the default), 'superlu' or 'dense', which solve with the bodies' mass on "
                f"their rigid motions")
        plan = self.plan = RangeSpacePlan(model)        # owned: built once per solver
        n_blocks = plan.block_row.size
        self._G = np.zeros((model.tables.pattern_row.size, 3))
        self._Gd, self._U = np.zeros((n_blocks, 4, 3)), np.zeros((n_blocks, 4, 3))
        self._data = np.zeros(plan.indices.size)
        self._factors = {}
        self._slots = np.zeros((4 * model.n_bodies, 3))
        self._ratio = mass_ratio(model.J4)

    def factor(self, G):
        plan = self.plan
        self._G[:] = G
        engine.range_space(self._G, plan.entry_block, plan.entry_slot, plan.block_body,
                          plan.Minv, plan.pair_p, plan.pair_q, plan.pair_target, self._Gd,
                          self._U, self._data)
        S = plan.matrix(self._data)
        if self.dropped.size == 0 and self._cholesky(S, self._data[plan.diagonal]):
            return
        self._update_thresholds()
        self.dropped = redundant_rows(self.model, self.model.tables.csr(self._G),
                                      self.row_threshold)
        self.keep = np.ones(self.model.n_rows, bool)
        self.keep[self.dropped] = False
        if not self._cholesky(S[self.keep][:, self.keep]):
            raise np.linalg.LinAlgError(f"cholmod: S singular after dropping "
                                        f"{self.dropped.size} redundant rows")

    def _cholesky(self, S, diagonal=None):
        """Factor S; False on a failed pivot or one below ``drop_tol · R · diagonal``."""
        key = tuple(self.dropped)
        if key not in self._factors:
            self._factors[key] = self.plan.analysis(S, self.dropped).copy()
        f = self._factors[key]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", CholmodWarning)   # e.g. a zero pivot
                f.cholesky_inplace(S)
        except (CholmodError, CholmodWarning):
            return False
        if diagonal is not None and np.any(f.D() <= self.drop_tol * self._ratio
                                           * diagonal[f.P()]):
            return False
        self._f = f
        return True

    def solve(self, r, s):
        return refined_solve(self, self._G, r, s)

    def _solve_once(self, r, s):
        tables, m = self.model.tables, self.model.n_rows
        mass_times(self.plan.Minv, np.reshape(r, (-1, 3)), self._slots)          # M⁻¹ r
        u = np.empty(m)
        jacobian_times(self._G, tables.pattern_row, tables.pattern_slot, self._slots, u)
        u -= s
        lam = np.zeros(m)
        if self.dropped.size:
            lam[self.keep] = self._f.solve_A(u[self.keep])
        else:
            lam[:] = self._f.solve_A(u)
        jacobian_transpose_times(self._G, tables.pattern_row, tables.pattern_slot, lam,
                                 self._slots)
        x = np.empty(self.model.n_coords)
        mass_times(self.plan.Minv, np.reshape(r, (-1, 3)) - self._slots, x.reshape(-1, 3))
        return x, lam
