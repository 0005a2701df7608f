/* Dense LU with partial pivoting (dense_lu.h) for Radau's reduced Newton matrices
 * γ² − γ D − K (radau.c): N × N, N = 12 n, dense because the constrained accelerations
 * couple every body of a loop or chain; factored up to twice per step (real and
 * complex γ), which makes this the Radau step's largest cost on a mechanism of a few
 * dozen bodies.
 *
 * The algorithm is LAPACK's getrf (Golub & Van Loan, Matrix Computations, 3.4: Gaussian
 * elimination with partial pivoting, right-looking, blocked): columns are factored in
 * panels of NB; each panel's row operations reach the columns right of it as NB
 * row updates a_i ← a_i − l_ik u_k applied to one row at a time while it sits in the
 * L1 cache, each over a contiguous row segment that the compiler vectorizes. Every
 * element receives its updates in the order of the unblocked algorithm (k ascending,
 * one rounded multiply and one rounded subtraction each): blocking changes the order of
 * the loops, not the arithmetic, so the factors are those of the textbook elimination.
 *
 * A complex matrix is two planes, real and imaginary parts, so that the update
 * (a − l u, four real products) runs over contiguous doubles as the real one does; the
 * pivot is the entry of largest |re| + |im| (LAPACK's izamax). The solves and the
 * matrix-vector products are dot products of rows with 8 partial sums (two 4-lane
 * accumulators) added in a fixed order.
 *
 * Round-off: only lane-wise +, −, × and no contraction into fused multiply-adds
 * (-ffp-contract=off, setup.py), so the AVX2 and the baseline x86-64 variants
 * (nc_simd.h's dispatch) and the plain-C fallback give the same bits. */
#include <math.h>

#include "nc_simd.h"
#include "dense_lu.h"

/* panel width: the NB rows of U a trailing row is updated with (NB × N doubles per
 * plane) stay in the L1 cache for N up to a few hundred */
#define NB 8

/* Σ a_j b_j, j < n: 8 partial sums (lanes j mod 8) added pairwise, then the tail */
NC_INLINE double dot(const double *a, const double *b, int64_t n)
{
    int64_t j = 0;
    double sum;
#ifdef NC_VECTOR
    v4 s0 = BC4(0.0), s1 = BC4(0.0);
    for (; j + 8 <= n; j += 8) {
        s0 += LD4(a + j) * LD4(b + j);
        s1 += LD4(a + j + 4) * LD4(b + j + 4);
    }
    v4 s = s0 + s1;
    sum = (s[0] + s[1]) + (s[2] + s[3]);
#else
    double s0[4] = {0.0, 0.0, 0.0, 0.0}, s1[4] = {0.0, 0.0, 0.0, 0.0};
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 4; l++) {
            s0[l] += a[j + l] * b[j + l];
            s1[l] += a[j + 4 + l] * b[j + 4 + l];
        }
    sum = ((s0[0] + s1[0]) + (s0[1] + s1[1])) + ((s0[2] + s1[2]) + (s0[3] + s1[3]));
#endif
    for (; j < n; j++)
        sum += a[j] * b[j];
    return sum;
}

/* a ← a − l u over len entries (complex: planes a, ai, u, ui and l + i li) */
NC_INLINE void row_update(double *restrict a, double *restrict ai, const double *restrict u,
                          const double *restrict ui, double l, double li, int64_t len,
                          int cplx)
{
    if (cplx) {
        for (int64_t j = 0; j < len; j++) {
            double re = l * u[j] - li * ui[j], im = l * ui[j] + li * u[j];
            a[j] -= re;
            ai[j] -= im;
        }
    } else {
        for (int64_t j = 0; j < len; j++)
            a[j] -= l * u[j];
    }
}

/* a ← a − l_0 u_0 − l_1 u_1 − l_2 u_2 − l_3 u_3 (subtracted in that order, as four
 * row_update calls would) over len entries; u_r = u + r n: one load and store of a for
 * four updates */
NC_INLINE void row_update4(double *restrict a, double *restrict ai, const double *restrict u,
                           const double *restrict ui, int64_t n, const double *l,
                           const double *li, int64_t len, int cplx)
{
    double l0 = l[0], l1 = l[1], l2 = l[2], l3 = l[3];
    const double *u0 = u, *u1 = u + n, *u2 = u + 2 * n, *u3 = u + 3 * n;
    if (cplx) {
        double m0 = li[0], m1 = li[1], m2 = li[2], m3 = li[3];
        const double *v0 = ui, *v1 = ui + n, *v2 = ui + 2 * n, *v3 = ui + 3 * n;
        for (int64_t j = 0; j < len; j++) {
            double re = a[j], im = ai[j];
            re -= l0 * u0[j] - m0 * v0[j], im -= l0 * v0[j] + m0 * u0[j];
            re -= l1 * u1[j] - m1 * v1[j], im -= l1 * v1[j] + m1 * u1[j];
            re -= l2 * u2[j] - m2 * v2[j], im -= l2 * v2[j] + m2 * u2[j];
            re -= l3 * u3[j] - m3 * v3[j], im -= l3 * v3[j] + m3 * u3[j];
            a[j] = re, ai[j] = im;
        }
    } else {
        for (int64_t j = 0; j < len; j++) {
            double x = a[j];
            x -= l0 * u0[j];
            x -= l1 * u1[j];
            x -= l2 * u2[j];
            x -= l3 * u3[j];
            a[j] = x;
        }
    }
}

/* 1/(ar + i ai) by Smith's scaling (no overflow of ar² + ai²) */
NC_INLINE void reciprocal(double ar, double ai, double *rr, double *ri)
{
    if (fabs(ar) >= fabs(ai)) {
        double r = ai / ar, d = ar + ai * r;
        *rr = 1.0 / d;
        *ri = -r / d;
    } else {
        double r = ar / ai, d = ai + ar * r;
        *rr = r / d;
        *ri = -1.0 / d;
    }
}

NC_INLINE double magnitude(const double *A, const double *Ai, int64_t at, int cplx)
{
    return cplx ? fabs(A[at]) + fabs(Ai[at]) : fabs(A[at]);
}

NC_INLINE void swap_rows(double *A, int64_t n, int64_t k, int64_t p)
{
    for (int64_t j = 0; j < n; j++) {
        double s = A[k * n + j];
        A[k * n + j] = A[p * n + j];
        A[p * n + j] = s;
    }
}

/* getrf for real (cplx 0, Ai unused) and complex matrices */
NC_INLINE int factor(double *A, double *Ai, int64_t n, int64_t *piv, int cplx)
{
    for (int64_t k0 = 0; k0 < n; k0 += NB) {
        int64_t k1 = k0 + NB < n ? k0 + NB : n;
        /* the panel: columns k0 … k1 − 1 below the diagonal, unblocked */
        for (int64_t k = k0; k < k1; k++) {
            int64_t p = k;
            double best = magnitude(A, Ai, k * n + k, cplx);
            for (int64_t i = k + 1; i < n; i++) {
                double size = magnitude(A, Ai, i * n + k, cplx);
                if (size > best)
                    best = size, p = i;
            }
            piv[k] = p;
            if (best == 0.0)
                return 1;
            if (p != k) {
                swap_rows(A, n, k, p);
                if (cplx)
                    swap_rows(Ai, n, k, p);
            }
            double inv = 1.0 / A[k * n + k], invi = 0.0;
            if (cplx)
                reciprocal(A[k * n + k], Ai[k * n + k], &inv, &invi);
            for (int64_t i = k + 1; i < n; i++) {
                double l = A[i * n + k] * inv, li = 0.0;
                if (cplx) {
                    double re = A[i * n + k], im = Ai[i * n + k];
                    l = re * inv - im * invi, li = re * invi + im * inv;
                    Ai[i * n + k] = li;
                }
                A[i * n + k] = l;
                row_update(A + i * n + k + 1, cplx ? Ai + i * n + k + 1 : NULL,
                           A + k * n + k + 1, cplx ? Ai + k * n + k + 1 : NULL, l, li,
                           k1 - k - 1, cplx);
            }
        }
        /* the panel's rows of U right of it: forward substitution with the panel's L */
        int64_t len = n - k1;
        for (int64_t r = k0 + 1; r < k1; r++)
            for (int64_t k = k0; k < r; k++)
                row_update(A + r * n + k1, cplx ? Ai + r * n + k1 : NULL, A + k * n + k1,
                           cplx ? Ai + k * n + k1 : NULL, A[r * n + k],
                           cplx ? Ai[r * n + k] : 0.0, len, cplx);
        /* the trailing rows: the panel's NB updates, one row at a time, four per pass */
        for (int64_t i = k1; i < n; i++) {
            double *a = A + i * n, *ai = cplx ? Ai + i * n : NULL;
            int64_t k = k0;
            for (; k + 4 <= k1; k += 4)
                row_update4(a + k1, cplx ? ai + k1 : NULL, A + k * n + k1,
                            cplx ? Ai + k * n + k1 : NULL, n, a + k, cplx ? ai + k : NULL,
                            len, cplx);
            for (; k < k1; k++)
                row_update(a + k1, cplx ? ai + k1 : NULL, A + k * n + k1,
                           cplx ? Ai + k * n + k1 : NULL, a[k], cplx ? ai[k] : 0.0, len, cplx);
        }
    }
    return 0;
}

/* getrs: the row swaps, L y = P b (unit L), U x = y; row by row as dot products */
NC_INLINE void solve(const double *LU, const double *LUi, const int64_t *piv, int64_t n,
                     double *b, double *bi, int cplx)
{
    for (int64_t k = 0; k < n; k++) {
        int64_t p = piv[k];
        double s = b[p];
        b[p] = b[k], b[k] = s;
        if (cplx)
            s = bi[p], bi[p] = bi[k], bi[k] = s;
    }
    for (int64_t i = 1; i < n; i++) {
        const double *row = LU + i * n;
        if (cplx) {
            const double *rowi = LUi + i * n;
            double re = dot(row, b, i) - dot(rowi, bi, i);
            double im = dot(row, bi, i) + dot(rowi, b, i);
            b[i] -= re;
            bi[i] -= im;
        } else {
            b[i] -= dot(row, b, i);
        }
    }
    for (int64_t i = n - 1; i >= 0; i--) {
        const double *row = LU + i * n + i + 1;
        int64_t len = n - i - 1;
        if (cplx) {
            const double *rowi = LUi + i * n + i + 1;
            double re = b[i] - (dot(row, b + i + 1, len) - dot(rowi, bi + i + 1, len));
            double im = bi[i] - (dot(row, bi + i + 1, len) + dot(rowi, b + i + 1, len));
            double inv, invi;
            reciprocal(LU[i * n + i], LUi[i * n + i], &inv, &invi);
            b[i] = re * inv - im * invi;
            bi[i] = re * invi + im * inv;
        } else {
            b[i] = (b[i] - dot(row, b + i + 1, len)) / LU[i * n + i];
        }
    }
}

NC_INLINE int nc_lu_factor_body(double *A, double *Ai, int64_t n, int64_t *piv)
{
    return Ai == NULL ? factor(A, NULL, n, piv, 0) : factor(A, Ai, n, piv, 1);
}

NC_INLINE void nc_lu_solve_body(const double *LU, const double *LUi, const int64_t *piv,
                                int64_t n, double *b, double *bi)
{
    if (LUi == NULL)
        solve(LU, NULL, piv, n, b, NULL, 0);
    else
        solve(LU, LUi, piv, n, b, bi, 1);
}

NC_INLINE void nc_matvec_body(const double *A, int64_t rows, int64_t cols, const double *x,
                              double *y, const double *x2, double *y2)
{
    for (int64_t i = 0; i < rows; i++) {
        y[i] = dot(A + i * cols, x, cols);
        if (x2 != NULL)
            y2[i] = dot(A + i * cols, x2, cols);
    }
}

NC_INLINE double nc_dot_body(const double *a, const double *b, int64_t n)
{
    return dot(a, b, n);
}

NC_DISPATCH(int, nc_lu_factor, (double *A, double *Ai, int64_t n, int64_t *piv),
            (A, Ai, n, piv))
NC_DISPATCH_VOID(nc_lu_solve, (const double *LU, const double *LUi, const int64_t *piv,
                               int64_t n, double *b, double *bi), (LU, LUi, piv, n, b, bi))
NC_DISPATCH_VOID(nc_matvec, (const double *A, int64_t rows, int64_t cols, const double *x,
                             double *y, const double *x2, double *y2),
                 (A, rows, cols, x, y, x2, y2))
NC_DISPATCH(double, nc_dot, (const double *a, const double *b, int64_t n), (a, b, n))

int nc_lu_variant(int variant, double *A, double *Ai, int64_t n, int64_t *piv, double *b,
                  double *bi)
{
    int status;
#ifdef NC_HAS_DISPATCH
    if (variant == 1 && !nc_avx2())
        return -1;
    status = variant == 1 ? nc_lu_factor_avx2(A, Ai, n, piv) : nc_lu_factor_base(A, Ai, n, piv);
    if (status == 0) {
        if (variant == 1)
            nc_lu_solve_avx2(A, Ai, piv, n, b, bi);
        else
            nc_lu_solve_base(A, Ai, piv, n, b, bi);
    }
#else
    if (variant == 1)
        return -1;
    status = nc_lu_factor(A, Ai, n, piv);
    if (status == 0)
        nc_lu_solve(A, Ai, piv, n, b, bi);
#endif
    return status;
}
