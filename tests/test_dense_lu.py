"""The dense LU of Radau's Newton matrices (natcoord/core/src/dense_lu.c), against LAPACK.

* Real and complex systems (the complex ones stored as planes of real and imaginary
  parts, as Radau's step keeps them) solve to what ``numpy.linalg.solve`` (LAPACK's
  getrf/getrs) gives, for sizes below, at and across the panel width (8) and at the
  elastic hexapod's N = 156, including matrices that need row exchanges.
* An exactly singular matrix is reported (status 1), not divided by zero.
* The baseline x86-64 and the AVX2 variants give the same bits (only lane-wise
  arithmetic, no fused multiply-adds).
"""
import numpy as np
import pytest

from natcoord.core import engine

SIZES = [1, 2, 7, 8, 9, 17, 40, 156]


def solve(A, b, variant=0):
    """``A⁻¹ b`` by the core (complex A, b as planes), with its status."""
    cplx = np.iscomplexobj(A)
    planes = (lambda z: np.ascontiguousarray(np.stack([z.real, z.imag]))) if cplx else \
        (lambda z: np.array(z, float))
    LU, x = planes(A), planes(b)
    status = engine.dense_lu_solve(LU, x, variant)
    return status, (x[0] + 1j * x[1] if cplx else x)


def system(n, cplx, seed):
    """A random, well-conditioned ``A`` with a zero first pivot (a row exchange is
    needed at step 0) and small diagonal entries (more exchanges later), and ``b``."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    b = rng.standard_normal(n)
    if cplx:
        A = A + 1j * rng.standard_normal((n, n))
        b = b + 1j * rng.standard_normal(n)
    A[np.diag_indices(n)] *= 1e-3
    if n > 1:
        A[0, 0] = 0.0
        A[1, 0] += 1.0                           # keeps A regular
    return A, b


@pytest.mark.parametrize("cplx", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("n", SIZES)
def test_solves_as_lapack(n, cplx):
    A, b = system(n, cplx, seed=n)
    status, x = solve(A, b)
    assert status == 0
    expected = np.linalg.solve(A, b)
    scale = np.linalg.cond(A) * np.abs(expected).max()
    assert np.abs(x - expected).max() <= 1e-13 * scale
    assert np.abs(A @ x - b).max() <= 1e-12 * np.abs(A).max() * np.abs(x).max() * n


@pytest.mark.parametrize("cplx", [False, True], ids=["real", "complex"])
def test_singular_matrix_is_reported(cplx):
    A, b = system(12, cplx, seed=1)
    A[:, 5] = 0.0                                # no pivot in column 5
    status, _ = solve(A, b)
    assert status == 1


@pytest.mark.parametrize("cplx", [False, True], ids=["real", "complex"])
def test_avx2_and_baseline_variants_give_the_same_bits(cplx):
    A, b = system(156, cplx, seed=7)
    base_status, base = solve(A, b, variant=0)
    avx2_status, avx2 = solve(A, b, variant=1)
    assert base_status == 0
    if avx2_status == -1:                        # no AVX2 on this CPU: nothing to compare
        return
    assert avx2_status == 0
    assert np.array_equal(base, avx2)
