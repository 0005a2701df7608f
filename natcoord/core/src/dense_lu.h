/* Dense LU with partial pivoting for Radau's N × N Newton matrices (dense_lu.c): real
 * matrices, and complex ones stored as two planes (real parts, imaginary parts), each
 * n × n row-major. Every function has a baseline x86-64 and an AVX2 variant chosen at run
 * time (nc_simd.h); both give the same bits. */
#ifndef NC_DENSE_LU_H
#define NC_DENSE_LU_H

#include <stdint.h>

/* A = P L U in place (L unit lower, U upper; piv[k] the row swapped with row k at step
 * k, LAPACK's getrf convention): Ai NULL for a real A, else A + i Ai. 0, or 1 for an
 * exactly zero pivot (A then partly overwritten). */
int nc_lu_factor(double *A, double *Ai, int64_t n, int64_t *piv);
/* b (+ i bi) overwritten by A⁻¹ b from nc_lu_factor's factors (LUi, bi NULL: real). */
void nc_lu_solve(const double *LU, const double *LUi, const int64_t *piv, int64_t n,
                 double *b, double *bi);
/* y = A x for the rows × cols row-major A, and y2 = A x2 unless x2 is NULL (one pass
 * over A) */
void nc_matvec(const double *A, int64_t rows, int64_t cols, const double *x, double *y,
               const double *x2, double *y2);
/* Σ a_j b_j, j < n, with the rounding of the solves' dot products */
double nc_dot(const double *a, const double *b, int64_t n);
/* For tests: the same three operations in one call with the variant taken explicitly
 * (0 baseline, 1 AVX2): factor A (+ i Ai), solve for b (+ i bi) in place. Returns the
 * factorization's status, or −1 if the variant does not exist on this machine. */
int nc_lu_variant(int variant, double *A, double *Ai, int64_t n, int64_t *piv, double *b,
                  double *bi);

#endif
