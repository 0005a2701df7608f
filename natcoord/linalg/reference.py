"""Reference backends on the whole KKT matrix: dense LU and SciPy's SuperLU."""
from __future__ import annotations

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .base import KKTSolver
from .redundancy import redundant_rows


class _WholeKKT(KKTSolver):
    """Shared part: drop redundant rows, factor ``K = [[M, G_kᵀ], [G_k, 0]]``.

    Solves take two steps of iterative refinement with ``K``: bodies whose
    masses differ by 1e9–1e12 make ``K`` so badly scaled that LU with partial
    (dense) or threshold (SuperLU) pivoting alone loses up to seven digits.
    """

    _REFINEMENTS = 2

    def _kept(self):
        keep = np.ones(self.model.n_rows, bool)
        keep[self.dropped] = False
        return keep

    def solve(self, r, s):
        n = self.model.n_coords
        rhs = np.concatenate([r, s[self.keep]])
        z = self._solve(rhs)
        for _ in range(self._REFINEMENTS):
            z += self._solve(rhs - self._K @ z)
        lam = np.zeros(self.model.n_rows)
        lam[self.keep] = z[n:]
        return z[:n], lam


class DenseKKT(_WholeKKT):
    """NumPy/LAPACK LU of the dense KKT matrix; redundancy by dense elimination."""

    name = "dense"

    def __init__(self, model, *tolerances):
        super().__init__(model, *tolerances)
        self._M = model.mass_matrix.toarray()

    def factor(self, G):
        G = self.model.tables.csr(G)
        self._update_thresholds()
        self.dropped = redundant_rows(self.model, G, self.row_threshold)
        self.keep = self._kept()
        Gk = G[self.keep].toarray()
        K = np.block([[self._M, Gk.T],
                      [Gk, np.zeros((Gk.shape[0], Gk.shape[0]))]])
        self._K, self._lu = K, la.lu_factor(K, check_finite=False)

    def _solve(self, rhs):
        return la.lu_solve(self._lu, rhs, check_finite=False)


class SuperLUKKT(_WholeKKT):
    """SciPy's SuperLU on the sparse KKT matrix.

    A full-rank Jacobian is factored directly. A tiny or failed pivot *may*
    mean redundant rows: they are found by dense elimination in the range
    space (in the mass-free metric) and dropped, and while any are dropped that
    check runs at each factorization (the redundant set may change along the
    motion). Once that decision is made a tiny pivot is not re-tested: the
    ratio of SuperLU's pivots mixes masses (``m``) with compliances (``1/m``),
    so it spans ``R²`` for a mass spread ``R`` (1e-14 at ``R = 1e7``) however
    independent the kept rows are; only an exactly singular factor fails.
    """

    name = "superlu"
    _PIVOT_RATIO = 1e-12

    def _factor(self, G, check=True):
        Gk = G[self.keep]
        K = sp.bmat([[self.model.mass_matrix, Gk.T], [Gk, None]], format="csc")
        try:
            lu = spla.splu(K)
        except RuntimeError:      # "Factor is exactly singular"
            return None
        d = np.abs(lu.U.diagonal())
        if check and not d.min() > self._PIVOT_RATIO * d.max():
            return None
        self._K = K
        return lu

    def factor(self, G):
        G = self.model.tables.csr(G)
        lu = None
        if self.dropped.size == 0:
            self.keep = self._kept()
            lu = self._factor(G)
        if lu is None:
            self._update_thresholds()
            self.dropped = redundant_rows(self.model, G, self.row_threshold)
            self.keep = self._kept()
            lu = self._factor(G, check=False)    # a tiny pivot is now ill-conditioning
            if lu is None:
                raise np.linalg.LinAlgError("superlu: KKT matrix singular after dropping "
                                            f"{self.dropped.size} redundant rows")
        self._lu = lu

    def _solve(self, rhs):
        return self._lu.solve(rhs)
