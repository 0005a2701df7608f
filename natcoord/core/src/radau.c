/* Radau IIA of order 5 with projection: one accepted step per call (radau_step), or many
 * with their outputs, checks and records through dopri5.c's chunked advance loop
 * (radau_advance: nc_advance_with and Radau's stepper table) (Hairer & Wanner,
 * Solving ODEs II, IV.8, the logic of RADAU5; docs/method.md#110-stiff-mechanisms-radau-iia;
 * the Python side, natcoord/integrate/radau.py, sets up the buffers and the constants).
 *
 * y' = F(t, y), y = (p, v), F = (v, a(t, p, v)). Simplified Newton for the stage
 * increments Z in the variables W = (T⁻¹ ⊗ I) Z with one Jacobian
 * J = [[0, I], [K, D]], K = ∂a/∂p, D = ∂a/∂v, needs the real system (γ − J) x = r,
 * γ = μ/h, and the complex one with γ = (α − iβ)/h. Eliminating x_v = γ x_p − r_p
 * leaves the N × N system (γ² − γ D − K) x_p = r_v + (γ − D) r_p — RADAU5's
 * treatment of second-order systems (its M1 = M2 = N structure, IV.8): a quarter of the
 * 2N × 2N matrix's storage and an eighth of its LU. K and D are dense: a is M⁻¹
 * projected onto the constraints, which couples every body of a closed loop or chain.
 * Their stiff part is not: a stiff spring or damper acts on a few coordinates, so the
 * iteration uses J's part in the subspace of the columns of K and γ D that matter at γ²
 * (stiff_basis, factor: J_s = [[0, I], [P K, P D]], which leaves the fixed point, the
 * collocation solution, as it is) and inverts the N × N matrices by Woodbury's identity
 * through r × r ones, factored by the dense LU with partial pivoting of dense_lu.c
 * (r = 18 for the elastic hexapod's N = 156; r = N, J itself, up to two bodies).
 *
 * The evaluations are the core's (nc_rhs and nc_project of dopri5.c) for every model and
 * KKT backend: what the core does not compile (forces and drive laws written in Python,
 * a reference backend's factor and solve) is called back through the same nc_hooks table
 * as DOPRI5's (dopri5.h, callbacks.c), so the right-hand side and the projection rule are
 * one implementation. The Jacobian's columns are the core's too (nc_acceleration_derivatives
 * of sensitivity.c, one solve with the kept factorization each) where the core knows every
 * force law and factors itself; otherwise one narrow Python callback fills K and D
 * (natcoord.dynamics.linearization.linearize, which differentiates the Python force laws
 * and solves with the reference backend). Finite differences of the hooked nc_rhs would
 * need no callback but are not exact (O(√ε) columns, 2N evaluations with a KKT
 * factorization each, against one factorization and 2N solves). */
#include "nc_core.h"
#include "dopri5.h"
#include "sensitivity.h"
#include "radau.h"
#include "dense_lu.h"

/* Hairer's constants (IV.8 and radau5.f), named as in natcoord/integrate/radau.py */
#define NEWTON_MAXITER 7          /* NIT */
#define KEEP_H_LOW 1.0            /* QUOT1, QUOT2: h and the LU kept for h_new/h here */
#define KEEP_H_HIGH 1.2
#define FAC_MIN 0.2               /* 1/FACL: h_new/h ≥ 0.2 */
#define FAC_MAX 8.0               /* 1/FACR: h_new/h ≤ 8 */
#define SAFETY 0.9
#define ERR_ACC_MIN 1e-2          /* floor of ERRACC in the predictive controller */
#define DIVERGENCE 0.99           /* θ taken for divergence */
#define PREDICT_FROM 3            /* first iteration whose prediction may give up (radau.py) */
#define FAC_NEWTON_FAILED 0.5
#define FAC_FIRST_REJECTED 0.1
#define EVALUATION_SHRINK 0.25    /* h after a failed evaluation, as the DOPRI5 step */
#define STIFF_SHARE 0.03          /* J's neglected part's share of the Newton matrix */
#define EXACT_UP_TO 24            /* N up to which the Newton matrices use all of J */
#define JACOBIAN_AT 0.5           /* J's point: this fraction of the step (attempt) */

static const double EPS = 2.220446049250313e-16;

/* what one step reads: the core's tuples, the hooks (dopri5.h) and, for a model whose
 * Jacobian the core cannot compute, the Python callable that computes it (else NULL) */
typedef struct {
    const nc_arr *T, *S, *P, *Wk, *R;
    const nc_hooks *hk;
    int64_t mode;
    PyObject *jacobian;
} radau_ctx;

static inline double dmax(double a, double b) { return a > b ? a : b; }
static inline double dmin(double a, double b) { return a < b ? a : b; }

/* ------------------------------------------------------------ evaluations */
static int64_t half(const radau_ctx *x)
{
    return x->R[R_y].size / 2;
}

/* out = F(t, y) (2 N); out may not overlap y. A status (0: evaluated). */
static int64_t rhs(const radau_ctx *x, double t, const double *y, double *out)
{
    double *W = F64(x->R[R_weights]);
    int64_t status = nc_weights_at(x->T, x->hk, t, W);
    if (status != 0)
        return status;
    return nc_rhs(x->T, x->S, x->P, x->Wk, x->hk, t, y, W, x->mode, out);
}

/* the Python Jacobian jacobian(t) at (t, R.point): its status, or NC_CALLBACK (raised) */
static int64_t call_jacobian(const radau_ctx *x, double t)
{
    PyObject *arg = PyFloat_FromDouble(t);
    if (arg == NULL)
        return NC_CALLBACK;
    PyObject *result = PyObject_CallOneArg(x->jacobian, arg);
    Py_DECREF(arg);
    if (result == NULL)
        return NC_CALLBACK;
    long long status = PyLong_AsLongLong(result);
    Py_DECREF(result);
    return status == -1 && PyErr_Occurred() ? NC_CALLBACK : status;
}

/* R.K = ∂a/∂p, R.D = ∂a/∂v at (t, y): columns j from the derivatives along the unit
 * directions e_j with the KKT matrix factored at y, NC_LANES directions per pass of
 * nc_acceleration_derivatives (its shared parts once per pass; a column's arithmetic
 * is the same alone or beside others), one solve per column; exact for the constraint
 * terms, springs and torques; without the stabilization of Baumgarte's mode, which only
 * slows Newton down. Or from the Python callable. Body by body: its 24 directions
 * (12 in p, 12 in v) are zero outside its slots, so each pass visits only the
 * constraint terms and forces that read them (nc_body_terms, listed once per body), not
 * the whole model (elastic hexapod: ~55 of 444 quadratic terms per body). */
static int64_t jacobian(const radau_ctx *x, double t, const double *y)
{
    const nc_arr *R = x->R;
    int64_t N = half(x);
    I64(R[R_counts])[RN_JACOBIANS]++;
    if (x->jacobian != NULL) {
        memcpy(F64(R[R_point]), y, 2 * N * sizeof(double));
        return call_jacobian(x, t);
    }
    const nc_arr *S = x->S;
    int64_t status = rhs(x, t, y, F64(R[R_value]));
    if (status != 0)
        return status;
    int64_t m = S[S_lam].size;
    memcpy(F64(R[R_ja]), F64(R[R_value]) + N, N * sizeof(double));
    memcpy(F64(R[R_jlam]), F64(S[S_lam]), m * sizeof(double));
    /* e: NC_LANES unit directions as rows (N each), zero: as many zero rows */
    double *e = F64(R[R_je]), *da = F64(R[R_jda]), *K = F64(R[R_K]), *D = F64(R[R_D]);
    const double *zero = F64(R[R_jzero]), *W = F64(R[R_weights]);
    for (int64_t body = 0; 12 * body < N; body++) {
        nc_terms terms;
        nc_body_terms(x->T, body, I64(R[R_jterms]), &terms);
        for (int64_t j0 = 12 * body; j0 < 12 * body + 12; j0 += NC_LANES) {
            int64_t c = 12 * body + 12 - j0 < NC_LANES ? 12 * body + 12 - j0 : NC_LANES;
            for (int64_t k = 0; k < c; k++)
                e[k * N + j0 + k] = 1.0;
            for (int side = 0; side < 2; side++) {
                double *out = side == 0 ? K : D;
                nc_acceleration_derivatives(x->T, &terms, x->P, x->Wk, NULL, NULL, 0, c, y, y + N,
                                            W, F64(R[R_ja]), F64(R[R_jlam]),
                                            side == 0 ? e : zero, side == 0 ? zero : e, N,
                                            F64(R[R_jF]), N, F64(R[R_js]), F64(R[R_jmu]), m,
                                            F64(R[R_jlanes]), da, N);
                for (int64_t k = 0; k < c; k++)
                    for (int64_t i = 0; i < N; i++)
                        out[i * N + j0 + k] = da[k * N + i];
            }
            for (int64_t k = 0; k < c; k++)
                e[k * N + j0 + k] = 0.0;
        }
    }
    return 0;
}

/* y projected in place at t (per the projection mode; the accepted step's) */
static int64_t project(const radau_ctx *x, double t, double *y)
{
    double *W = F64(x->R[R_weights]);
    int64_t status = nc_weights_at(x->T, x->hk, t, W);
    if (status != 0)
        return status;
    return nc_project(x->T, x->S, x->P, x->Wk, x->hk, y, W, x->mode,
                      F64(x->R[R_ctrl])[RC_PROJ_TOL], 0);
}

/* ------------------------------------------------------------ linear algebra */
/* out (N) = what is left of column j of Mt = [K, γ D]ᵀ (rows: columns) after the
 * basis u_0 … u_(k−1): column − Σ c_ij u_i, c_ij its projections (rows of Uᵀ K and
 * Uᵀ D as stiff_basis keeps them). Gram–Schmidt from the columns as they are, not
 * downdated by each u_i (2 N² flops per basis vector saved, the hexapod's N = 156). */
static void residual(const double *U, const double *Kb, const double *Db, double g,
                     int64_t N, int64_t k, const double *Mt, int64_t j, double *out)
{
    memcpy(out, Mt + j * N, N * sizeof(double));
    for (int64_t i = 0; i < k; i++) {
        double c = j < N ? Kb[i * N + j] : g * Db[i * N + j - N];
        for (int64_t l = 0; l < N; l++)
            out[l] -= c * U[i * N + l];
    }
}

/* J's stiff subspace (the Newton matrices below): an orthonormal basis u_0 … u_(k−1) of
 * the columns of K and γ D, γ = μ/h at the Jacobian's step, by Gram–Schmidt with
 * pivoting (the column of largest remaining norm next, its remainder formed from the
 * projections already computed and reorthogonalized once; the columns themselves are
 * not downdated, only their norms), until the
 * largest remaining columns rK of K and γ rD of γ D satisfy rK + γ rD ≤ STIFF_SHARE γ²
 * (or k = N). Kept: the basis, Uᵀ K, Uᵀ D (the projections Gram–Schmidt computes),
 * Uᵀ K U, Uᵀ D U and, for every k, rK and rD
 * (res), from which factor() takes the dimension its h needs. A stiff force acts on a few
 * coordinates (a spring on the relative motion of two points: 3 directions), so k is
 * small where the Newton matrices are large: 18 for the elastic hexapod's six leg
 * springs, N = 156. Up to N = EXACT_UP_TO (two bodies) the basis spans all of K's and
 * D's columns (to round-off: the Newton matrices of J itself, as cheap there as one
 * evaluation of F), so that Newton's iteration stays exact, e.g. one iteration for a
 * linear system. */
static void stiff_basis(const radau_ctx *x, double h)
{
    const nc_arr *R = x->R;
    int64_t N = half(x), k = 0;
    const double *K = F64(R[R_K]), *D = F64(R[R_D]);
    double *U = F64(R[R_basis]), *Mt = F64(R[R_Mt]), *cn = F64(R[R_cn]), *cn0 = cn + 2 * N;
    double *Kb = F64(R[R_Kb]), *Db = F64(R[R_Db]), *KU = F64(R[R_KU]), *DU = F64(R[R_DU]);
    double *resK = F64(R[R_res]), *resD = resK + N + 1, *c = F64(R[R_bw]), *left = c + 2 * N;
    double g = F64(R[R_coef])[RCOEF_MU] / h, limit = 0.0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < N; j++) {
            Mt[j * N + i] = K[i * N + j];
            Mt[(N + j) * N + i] = g * D[i * N + j];
        }
    for (int64_t j = 0; j < 2 * N; j++)
        cn[j] = cn0[j] = nc_dot(Mt + j * N, Mt + j * N, N);
    for (;; k++) {
        int64_t p = 0;
        double maxK = 0.0, maxD = 0.0;
        for (int64_t j = 0; j < 2 * N; j++) {
            if (cn[j] > cn[p])
                p = j;
            if (j < N)
                maxK = dmax(maxK, cn[j]);
            else
                maxD = dmax(maxD, cn[j]);
        }
        resK[k] = sqrt(maxK), resD[k] = sqrt(maxD) / g;
        if (k == 0)                  /* all of K and D: until what is left is round-off */
            limit = N > EXACT_UP_TO ? STIFF_SHARE * g * g : 64.0 * EPS * (resK[0] + g * resD[0]);
        if (k == N || resK[k] + g * resD[k] <= limit)
            break;
        double *u = U + k * N;
        residual(U, Kb, Db, g, N, k, Mt, p, u);
        for (int pass = 0; pass < 2; pass++) {  /* reorthogonalized once, normalized */
            if (pass == 1)
                for (int64_t i = 0; i < k; i++) {
                    double d = nc_dot(U + i * N, u, N);
                    for (int64_t l = 0; l < N; l++)
                        u[l] -= d * U[i * N + l];
                }
            double norm = sqrt(nc_dot(u, u, N));
            for (int64_t l = 0; l < N; l++)
                u[l] /= norm;
        }
        /* c_j = u · (what is left of column j) = u · column j, u being orthogonal to
         * the earlier u_i: row k of Uᵀ K and of Uᵀ γD */
        nc_matvec(Mt, 2 * N, N, u, c, NULL, NULL);
        for (int64_t j = 0; j < N; j++)
            Kb[k * N + j] = c[j], Db[k * N + j] = c[N + j] / g;
        for (int64_t j = 0; j < 2 * N; j++) {
            /* the norm downdated, recomputed where that cancels (LAPACK's dlaqp2) */
            cn[j] -= c[j] * c[j];
            if (cn[j] <= 1e-8 * cn0[j]) {
                residual(U, Kb, Db, g, N, k + 1, Mt, j, left);
                cn[j] = cn0[j] = nc_dot(left, left, N);
            }
        }
    }
    for (int64_t i = 0; i < k; i++)          /* Uᵀ K U, Uᵀ D U */
        nc_matvec(U, k, N, Kb + i * N, KU + i * N, Db + i * N, DU + i * N);
    F64(R[R_ctrl])[RC_RANK] = (double)k;
}

/* The LU factors of the Newton matrices of J's stiff part: with P = U Uᵀ the projector
 * onto the stiff subspace, simplified Newton iterates with J_s = [[0, I], [P K, P D]]
 * instead of J (its fixed point, the collocation solution, is the same), whose reduced
 * matrix γ² − γ P D − P K = γ² − U B, B = Uᵀ(γ D + K) (r × N) inverts by Woodbury's
 * identity through the r × r matrix S = γ² − B U = γ² − γ Uᵀ D U − Uᵀ K U:
 *     (γ² − U B)⁻¹ = (I + U S⁻¹ B)/γ²    (Golub & Van Loan, Matrix Computations, 2.1.4).
 * The neglected (I − P)(γ D + K) changes Newton's contraction by about
 * (rK + |γ| rD)/|γ|² ≤ STIFF_SHARE (measured on the elastic hexapod: the spectral radius
 * of the iteration's error map 2e-6 to 7e-3 with r = 18, where an exact Newton matrix
 * needs two dense N × N LU decompositions). r is the least dimension that satisfies this
 * at γ = μ/h, at most the basis's (all of it, r = N, is exact). The factors of S for
 * γ = μ/h and (α − iβ)/h (the complex one as planes of real and imaginary parts,
 * dense_lu.h); 1 if one is singular. */
static int factor(const radau_ctx *x, double h)
{
    const nc_arr *R = x->R;
    const double *coef = F64(R[R_coef]), *KU = F64(R[R_KU]), *DU = F64(R[R_DU]);
    const double *resK = F64(R[R_res]);
    double *lu = F64(R[R_lu]), *ctrl = F64(R[R_ctrl]), *luc = F64(R[R_luc]);
    int64_t N = half(x), k = (int64_t)ctrl[RC_RANK], r = 0;
    const double *resD = resK + N + 1;
    double g = coef[RCOEF_MU] / h, gr = coef[RCOEF_ALPHA] / h, gi = -coef[RCOEF_BETA] / h;
    while (r < k && (N <= EXACT_UP_TO || resK[r] + g * resD[r] > STIFF_SHARE * g * g))
        r++;
    double *luci = luc + r * r;
    /* γ_c (γ_c − d) − k with γ_c = gr + i gi: (gr² − gi² − gr d − k) + i gi (2 gr − d) */
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < r; j++) {
            double diagonal = i == j, d = DU[i * N + j], kk = KU[i * N + j];
            lu[i * r + j] = g * (g * diagonal - d) - kk;
            luc[i * r + j] = gr * (gr * diagonal - d) - gi * (gi * diagonal) - kk;
            luci[i * r + j] = gr * (gi * diagonal) + gi * (gr * diagonal - d);
        }
    I64(R[R_counts])[RN_LU] += 2;
    ctrl[RC_H_LU] = h;
    ctrl[RC_HAVE_LU] = 1.0;
    ctrl[RC_RANK_LU] = (double)r;
    return nc_lu_factor(lu, NULL, r, I64(R[R_piv])) ||
           nc_lu_factor(luc, luci, r, I64(R[R_pivc]));
}

/* b (+ i bi) ← (γ² − U B)⁻¹ b with B = Uᵀ(γ D + K), γ = gr + i gi (gi = 0, bi NULL:
 * real), by Woodbury from factor()'s LU of S (above): b + U S⁻¹ B b, over γ² */
static void woodbury(const radau_ctx *x, double gr, double gi, double *b, double *bi)
{
    const nc_arr *R = x->R;
    int64_t N = half(x), r = (int64_t)F64(R[R_ctrl])[RC_RANK_LU];
    const double *U = F64(R[R_basis]);
    double *kb = F64(R[R_bw]), *kbi = kb + N, *db = kb + 2 * N, *dbi = kb + 3 * N;
    nc_matvec(F64(R[R_Kb]), r, N, b, kb, bi, kbi);
    nc_matvec(F64(R[R_Db]), r, N, b, db, bi, dbi);
    for (int64_t i = 0; i < r; i++) {                   /* c = γ Uᵀ D b + Uᵀ K b */
        double re = (gr * db[i] - (bi ? gi * dbi[i] : 0.0)) + kb[i];
        double im = bi ? (gr * dbi[i] + gi * db[i]) + kbi[i] : 0.0;
        kb[i] = re, kbi[i] = im;
    }
    if (bi == NULL)
        nc_lu_solve(F64(R[R_lu]), NULL, I64(R[R_piv]), r, kb, NULL);
    else
        nc_lu_solve(F64(R[R_luc]), F64(R[R_luc]) + r * r, I64(R[R_pivc]), r, kb, kbi);
    for (int64_t i = 0; i < r; i++)
        for (int64_t l = 0; l < N; l++) {
            b[l] += kb[i] * U[i * N + l];
            if (bi)
                bi[l] += kbi[i] * U[i * N + l];
        }
    double sr = gr * gr - gi * gi, si = 2.0 * gr * gi, q = sr * sr + si * si;
    for (int64_t l = 0; l < N; l++) {                   /* / γ²: × conj(γ²)/|γ²|² */
        double re = b[l], im = bi ? bi[l] : 0.0;
        b[l] = (re * sr + im * si) / q;
        if (bi)
            bi[l] = (im * sr - re * si) / q;
    }
}

/* out (+ i outi) = r_p's stiff damping P D r_p (+ i ...) = U (Uᵀ D r_p) (N) */
static void stiff_damping(const radau_ctx *x, const double *rp, const double *rpi,
                          double *out, double *outi)
{
    const nc_arr *R = x->R;
    int64_t N = half(x), r = (int64_t)F64(R[R_ctrl])[RC_RANK_LU];
    const double *U = F64(R[R_basis]);
    double *c = F64(R[R_bw]), *ci = c + N;
    nc_matvec(F64(R[R_Db]), r, N, rp, c, rpi, ci);
    memset(out, 0, N * sizeof(double));
    if (outi)
        memset(outi, 0, N * sizeof(double));
    for (int64_t i = 0; i < r; i++)
        for (int64_t l = 0; l < N; l++) {
            out[l] += c[i] * U[i * N + l];
            if (outi)
                outi[l] += ci[i] * U[i * N + l];
        }
}

/* x = (μ/h − J_s)⁻¹ r (2 N; x may be r) from the real factors:
 * (γ² − γ P D − P K) x_p = r_v + (γ − P D) r_p, x_v = γ x_p − r_p */
static void solve_real(const radau_ctx *x, const double *r, double *out)
{
    const nc_arr *R = x->R;
    int64_t N = half(x);
    double g = F64(R[R_coef])[RCOEF_MU] / F64(R[R_ctrl])[RC_H_LU], *b = F64(R[R_b]);
    stiff_damping(x, r, NULL, b, NULL);
    for (int64_t i = 0; i < N; i++)
        b[i] = (r[N + i] + g * r[i]) - b[i];
    woodbury(x, g, 0.0, b, NULL);
    for (int64_t i = 0; i < N; i++) {
        out[N + i] = g * b[i] - r[i];
        out[i] = b[i];
    }
}

/* dW (3, 2 N) of one Newton iteration for the right-hand sides Rw (3, 2 N) (IV.8): row 0
 * from the real system, rows 1 and 2 the real and imaginary parts of the complex
 * system's solution for Rw[1] + i Rw[2] (γ = gr + i gi) */
static void solve_stages(const radau_ctx *x, const double *Rw, double *dW)
{
    const nc_arr *R = x->R;
    int64_t N = half(x), N2 = 2 * N;
    const double *coef = F64(R[R_coef]);
    double h = F64(R[R_ctrl])[RC_H_LU];
    double gr = coef[RCOEF_ALPHA] / h, gi = -coef[RCOEF_BETA] / h;
    double *b = F64(R[R_bc]), *bi = b + N;
    solve_real(x, Rw, dW);
    const double *r1 = Rw + N2, *r2 = Rw + 2 * N2;
    stiff_damping(x, r1, r2, b, bi);
    for (int64_t i = 0; i < N; i++) {
        double re = (r1[N + i] + (gr * r1[i] - gi * r2[i])) - b[i];
        double im = (r2[N + i] + (gr * r2[i] + gi * r1[i])) - bi[i];
        b[i] = re, bi[i] = im;
    }
    woodbury(x, gr, gi, b, bi);
    double *w1 = dW + N2, *w2 = dW + 2 * N2;
    for (int64_t i = 0; i < N; i++) {
        w1[N + i] = (gr * b[i] - gi * bi[i]) - r1[i];
        w2[N + i] = (gr * bi[i] + gi * b[i]) - r2[i];
        w1[i] = b[i];
        w2[i] = bi[i];
    }
}

/* RMS of v / scale over k rows of 2 N (the scale repeated per row) */
static double scaled_rms(const double *v, const double *scale, int64_t k, int64_t N2)
{
    double sum = 0.0;
    for (int64_t r = 0; r < k; r++)
        for (int64_t i = 0; i < N2; i++) {
            double q = v[r * N2 + i] / scale[i];
            sum += q * q;
        }
    return sqrt(sum / (double)(k * N2));
}

/* out (3 rows of 2 N) = M (3, 3) applied to the rows of Z */
static void mix3(const double *M, const double *Z, int64_t N2, double *out)
{
    for (int r = 0; r < 3; r++)
        for (int64_t i = 0; i < N2; i++)
            out[r * N2 + i] = M[3 * r] * Z[i] + M[3 * r + 1] * Z[N2 + i]
                              + M[3 * r + 2] * Z[2 * N2 + i];
}

/* ------------------------------------------------------------ one attempt */
/* out (N2) = u(t + s) − u(t) by the last accepted step's collocation polynomial
 * u(t_old + θ h_old) = y_old + Σ θ^(k+1) Q_k, extrapolated beyond its step (t is its end,
 * or the start of a retry; zero before the first step): Newton's starting stage increments
 * and the point of the Jacobian (attempt) */
static void extrapolate(const radau_ctx *x, double t, double s, double *out)
{
    const nc_arr *R = x->R;
    const double *ctrl = F64(R[R_ctrl]), *Q = F64(R[R_Q]);
    int64_t N2 = R[R_y].size;
    if (ctrl[RC_HAVE_DENSE] == 0.0) {                   /* no step yet: u constant */
        memset(out, 0, N2 * sizeof(double));
        return;
    }
    double end = (t - ctrl[RC_T_OLD]) / ctrl[RC_H_OLD];
    double theta = (t + s - ctrl[RC_T_OLD]) / ctrl[RC_H_OLD];
    double w[3] = {theta - end, theta * theta - end * end,
                   theta * theta * theta - end * end * end};
    for (int64_t i = 0; i < N2; i++)
        out[i] = w[0] * Q[i] + w[1] * Q[N2 + i] + w[2] * Q[2 * N2 + i];
}

/* Simplified Newton for Z at (t, y) with step h (IV.8, RADAU5): starts from the last
 * step's collocation polynomial extrapolated to t + c_i h (zero on the first step);
 * θ_k = ‖ΔW_k‖/‖ΔW_(k−1)‖ (from the third iteration the geometric mean of the last two
 * ratios), stops when η ‖ΔW_k‖ ≤ κ·Tol (η = θ/(1 − θ); on the first iteration the last
 * step's η^0.8), gives up when θ ≥ 0.99 or when θ^(NIT−1−k) η ‖ΔW_k‖ predicts more than
 * κ·Tol after the iterations left. Returns a status; *iterations, and *factor: 0 if it
 * converged, else the step-size factor of the retry (0.8 q^(−1/(4 + NIT − 1 − k)) for a
 * predicted excess q, 0.5 for divergence, a non-finite value or NIT iterations used up). */
static int64_t newton(const radau_ctx *x, double t, const double *y, double h,
                      int64_t *iterations, double *factor)
{
    const nc_arr *R = x->R;
    int64_t N2 = R[R_y].size;
    double *ctrl = F64(R[R_ctrl]), *Z = F64(R[R_Z]), *W = F64(R[R_W]), *F = F64(R[R_F]);
    double *dW = F64(R[R_dW]), *point = F64(R[R_err]);
    const double *coef = F64(R[R_coef]), *scale = F64(R[R_scale]);
    const double *c = coef + RCOEF_C, *TI = coef + RCOEF_TI, *Tm = coef + RCOEF_T;
    double mu = coef[RCOEF_MU], alpha = coef[RCOEF_ALPHA], beta = coef[RCOEF_BETA];
    double tol = ctrl[RC_NEWTON_TOL];
    for (int r = 0; r < 3; r++)
        extrapolate(x, t, c[r] * h, Z + r * N2);
    mix3(TI, Z, N2, W);
    double faccon = pow(dmax(ctrl[RC_FACCON], EPS), 0.8), theta = ctrl[RC_JAC_RATE];
    double norm_old = 0.0, ratio_old = -1.0;
    *factor = FAC_NEWTON_FAILED;
    for (int64_t k = 1; k <= NEWTON_MAXITER; k++) {
        *iterations = k;
        for (int r = 0; r < 3; r++) {
            for (int64_t i = 0; i < N2; i++)
                point[i] = y[i] + Z[r * N2 + i];
            int64_t status = rhs(x, t + c[r] * h, point, F + r * N2);
            if (status != 0)
                return status;
        }
        for (int64_t i = 0; i < 3 * N2; i++)
            if (!isfinite(F[i]))
                return 0;
        /* R = T⁻¹ F − Λ W / h into F's rows, then ΔW */
        mix3(TI, F, N2, dW);
        for (int64_t i = 0; i < N2; i++) {
            double w0 = W[i], w1 = W[N2 + i], w2 = W[2 * N2 + i];
            F[i] = dW[i] - mu * w0 / h;
            F[N2 + i] = dW[N2 + i] - (alpha * w1 + beta * w2) / h;
            F[2 * N2 + i] = dW[2 * N2 + i] - (alpha * w2 - beta * w1) / h;
        }
        solve_stages(x, F, dW);
        double norm = scaled_rms(dW, scale, 3, N2);
        if (1 < k && k < NEWTON_MAXITER) {
            double ratio = norm / norm_old;
            theta = ratio_old < 0.0 ? ratio : sqrt(ratio * ratio_old);
            ratio_old = ratio;
            if (theta >= DIVERGENCE)
                return 0;
            faccon = theta / (1.0 - theta);
            double excess = faccon * norm * pow(theta, (double)(NEWTON_MAXITER - 1 - k)) / tol;
            if (excess >= 1.0 && k >= PREDICT_FROM) {
                ctrl[RC_FACCON] = faccon;
                excess = dmax(1e-4, dmin(20.0, excess));
                *factor = 0.8 * pow(excess, -1.0 / (4.0 + NEWTON_MAXITER - 1 - k));
                return 0;
            }
        }
        norm_old = dmax(norm, EPS);
        for (int64_t i = 0; i < 3 * N2; i++)
            W[i] += dW[i];
        mix3(Tm, W, N2, Z);
        if (!isfinite(norm))
            return 0;
        if (faccon * norm <= tol) {
            ctrl[RC_FACCON] = faccon;
            ctrl[RC_THETA] = theta;
            *factor = 0.0;
            return 0;
        }
    }
    return 0;
}

/* ‖(I − h γ0 J)⁻¹ (γ0 h f(y0) + Σ e_i z_i)‖, as (μ/h − J)⁻¹ (f(y0) + μ/h Σ e_i z_i) (IV.8,
 * the filtered estimate of the embedded order-3 formula); with `refine` (after a
 * rejection) and above 1: once more with f(y0 + err) for f(y0). A status; *size the
 * norm (at least 1e-10).
 * The second filter removes the estimate's stiff components (for them (μ/h − J)⁻¹ J ≈ −I):
 * RADAU5 applies it on the first step too, where it takes them for a y0 off the slow
 * manifold that the step damps (R(∞) = 0). A weakly damped stiff oscillation at
 * moderate h ω is not damped so (|R(i h ω)| ≈ 0.13 at h ω = 22): the elastic pendulum's
 * first step (h = 0.0225 s from initial_step) ends 2.8e-5 m/s along the spring from the
 * reference, 5.1 times the tolerance, which the filtered estimate reports as 2.25 and the
 * refined one as 0.024, accepted; the spring then rings and holds h near 0.003 s for 20
 * steps. Here the first attempt is judged by the filtered estimate alone: a spurious
 * rejection costs one attempt, its retry being refined as after any rejection. */
static int64_t error_estimate(const radau_ctx *x, double t, const double *y, double h,
                              int refine, double *size)
{
    const nc_arr *R = x->R;
    int64_t N2 = R[R_y].size;
    const double *coef = F64(R[R_coef]), *Z = F64(R[R_Z]), *f = F64(R[R_f]);
    const double *scale = F64(R[R_scale]), *e = coef + RCOEF_E;
    double *err = F64(R[R_err]), *ze = F64(R[R_dW]);
    double g = coef[RCOEF_MU] / h;
    for (int64_t i = 0; i < N2; i++) {
        ze[i] = g * (e[0] * Z[i] + e[1] * Z[N2 + i] + e[2] * Z[2 * N2 + i]);
        err[i] = f[i] + ze[i];
    }
    solve_real(x, err, err);
    *size = scaled_rms(err, scale, 1, N2);
    if (refine && *size >= 1.0) {
        double *value = F64(R[R_F]), *point = value + N2;      /* free after Newton */
        for (int64_t i = 0; i < N2; i++)
            point[i] = y[i] + err[i];
        int64_t status = rhs(x, t, point, value);
        if (status != 0)
            return status;
        for (int64_t i = 0; i < N2; i++)
            err[i] = value[i] + ze[i];
        solve_real(x, err, err);
        *size = scaled_rms(err, scale, 1, N2);
    }
    *size = dmax(*size, 1e-10);
    return 0;
}

/* h / h_new after an error err (RADAU5): err^(1/4)/fac with the safety factor
 * fac = min(SAFETY, SAFETY (2 NIT + 1)/(2 NIT + iterations)) lowered by slow Newton
 * convergence; for an acceptable error also at least Gustafsson's predictive
 * (h_acc/h) (err²/err_acc)^(1/4)/SAFETY; clipped to [1/FAC_MAX, 1/FAC_MIN]. */
static double quotient(const double *ctrl, double h, double err, int64_t iterations)
{
    double fac = dmin(SAFETY, SAFETY * (2 * NEWTON_MAXITER + 1)
                                  / (double)(2 * NEWTON_MAXITER + iterations));
    double quot = dmin(1.0 / FAC_MIN, dmax(1.0 / FAC_MAX, pow(err, 0.25) / fac));
    if (err < 1.0 && ctrl[RC_H_ACC] > 0.0) {
        double predictive = ctrl[RC_H_ACC] / h * pow(err * err / ctrl[RC_ERR_ACC], 0.25)
                            / SAFETY;
        quot = dmax(quot, dmin(1.0 / FAC_MIN, dmax(1.0 / FAC_MAX, predictive)));
    }
    return quot;
}

/* After a rejected attempt, the retry's h (h > 0; else kept). A Jacobian kept from an
 * earlier step is recomputed after a failed Newton iteration or evaluation, and after a
 * failed error test only if Newton contracted slowly (θ > THET, ctrl[RC_JAC_RATE]):
 * RADAU5 recomputes it after either, which cost the hexapod of benchmarks/stiff.py 6 of
 * its 14 Jacobians. */
static void rejected_attempt(double *ctrl, double h, int newton_failed)
{
    if (h > 0.0)
        ctrl[RC_H] = h;
    ctrl[RC_REJECTED_LAST] = 1.0;
    if (ctrl[RC_JAC_CURRENT] == 0.0 && (newton_failed || ctrl[RC_THETA] > ctrl[RC_JAC_RATE]))
        ctrl[RC_HAVE_J] = 0.0;
}

/* One attempt of step h to t_new (t_bound exactly for the last step): NC_ACCEPTED,
 * NC_REJECTED (the next h set) or a failed evaluation's status. The Jacobian is computed
 * when none is kept, at the middle of the step (JACOBIAN_AT: y + u(t + h/2) − u(t) on
 * the last step's collocation polynomial u, y itself before the first step; a stiff
 * spring turns within the step, and simplified Newton contracts the slower the larger
 * the angle between J's spring and a stage's, halved from the middle), the LU factors
 * whenever h differs from theirs.
 * After an accepted step (projected) J is kept if Newton contracted with θ ≤ THET
 * (ctrl[RC_JAC_RATE]), and with it h and the LU factors if the proposed change lies in
 * [KEEP_H_LOW, KEEP_H_HIGH]; after a rejection h does not grow. */
static int64_t attempt(const radau_ctx *x, double t, double h, double t_new)
{
    const nc_arr *R = x->R;
    int64_t N2 = R[R_y].size, status;
    double *ctrl = F64(R[R_ctrl]), *y = F64(R[R_y]), *scale = F64(R[R_scale]);
    int64_t *counts = I64(R[R_counts]);
    if (ctrl[RC_HAVE_J] == 0.0) {
        double *point = F64(R[R_err]);                        /* free until Newton */
        double s = ctrl[RC_HAVE_DENSE] != 0.0 ? JACOBIAN_AT * h : 0.0;
        extrapolate(x, t, s, point);
        for (int64_t i = 0; i < N2; i++)
            point[i] += y[i];
        status = jacobian(x, t + s, point);
        if (status != 0)
            return status;
        stiff_basis(x, h);
        ctrl[RC_HAVE_J] = ctrl[RC_JAC_CURRENT] = 1.0;
        ctrl[RC_HAVE_LU] = 0.0;
    }
    if ((ctrl[RC_HAVE_LU] == 0.0 || h != ctrl[RC_H_LU]) && factor(x, h) != 0) {
        ctrl[RC_HAVE_LU] = 0.0;              /* singular: as a failed Newton iteration */
        rejected_attempt(ctrl, FAC_NEWTON_FAILED * h, 1);
        return NC_REJECTED;
    }
    for (int64_t i = 0; i < N2; i++)
        scale[i] = ctrl[RC_ATOL] + ctrl[RC_RTOL] * fabs(y[i]);
    int64_t iterations = 0;
    double failed;
    status = newton(x, t, y, h, &iterations, &failed);
    counts[RN_NEWTON] += iterations;
    if (status != 0)
        return status;
    if (failed != 0.0) {
        ctrl[RC_ERR] = NAN;
        rejected_attempt(ctrl, failed * h, 1);
        return NC_REJECTED;
    }
    int first = ctrl[RC_HAVE_DENSE] == 0.0;
    double err;
    status = error_estimate(x, t, y, h, ctrl[RC_REJECTED_LAST] != 0.0, &err);
    if (status != 0)
        return status;
    ctrl[RC_ERR] = err;
    double h_new = h / quotient(ctrl, h, err, iterations);
    if (err >= 1.0) {
        rejected_attempt(ctrl, first ? FAC_FIRST_REJECTED * h : h_new, 0);
        return NC_REJECTED;
    }
    /* accepted: y_new projected and F there, into scratch until both succeeded */
    const double *Z = F64(R[R_Z]);
    double *y_new = F64(R[R_err]), *f_new = F64(R[R_F]);
    for (int64_t i = 0; i < N2; i++)
        y_new[i] = y[i] + Z[2 * N2 + i];
    status = project(x, t_new, y_new);
    if (status == 0)
        status = rhs(x, t_new, y_new, f_new);
    if (status != 0)
        return status;
    const double *P = F64(R[R_coef]) + RCOEF_P;
    memcpy(F64(R[R_yold]), y, N2 * sizeof(double));
    mix3(P, Z, N2, F64(R[R_Q]));
    memcpy(y, y_new, N2 * sizeof(double));
    memcpy(F64(R[R_f]), f_new, N2 * sizeof(double));
    ctrl[RC_T_OLD] = t;
    ctrl[RC_H_OLD] = h;
    ctrl[RC_T_NOW] = t_new;
    ctrl[RC_HAVE_DENSE] = 1.0;
    ctrl[RC_H_ACC] = h;
    ctrl[RC_ERR_ACC] = dmax(ERR_ACC_MIN, err);
    h_new = dmin(h_new, ctrl[RC_MAX_STEP]);
    if (ctrl[RC_REJECTED_LAST] != 0.0)
        h_new = dmin(h_new, h);
    ctrl[RC_REJECTED_LAST] = ctrl[RC_JAC_CURRENT] = 0.0;
    if (ctrl[RC_THETA] <= ctrl[RC_JAC_RATE]) {
        if (KEEP_H_LOW <= h_new / h && h_new / h <= KEEP_H_HIGH)
            h_new = h;
    } else {
        ctrl[RC_HAVE_J] = 0.0;
    }
    ctrl[RC_H] = h_new;
    return NC_ACCEPTED;
}

/* Attempts from (ctrl[RC_T_NOW], R.y) until one is accepted (NC_ACCEPTED), max_attempts
 * (NC_MAX_ATTEMPTS), a step-size underflow (NC_UNDERFLOW), an evaluation that keeps
 * failing (its status, once h < 1e-12 max(|t_bound|, 1); a failed evaluation retries
 * with h/4 and a Jacobian of its own) or a Python exception (NC_CALLBACK: a
 * callback raised, the exception set; the run's cause, not the step's).
 * *rejected: the attempts rejected. */
static int64_t radau_step(const radau_ctx *x, int64_t max_attempts, double eps_floor,
                          int64_t *rejected)
{
    double *ctrl = F64(x->R[R_ctrl]);
    *rejected = 0;
    nc_resume(x->S);
    for (int64_t k = 0; k < max_attempts; k++) {
        double t = ctrl[RC_T_NOW], t_bound = ctrl[RC_T_BOUND];
        double h = nc_clip_step(ctrl[RC_H], t, t_bound, eps_floor);
        if (h < eps_floor * dmax(fabs(t), 1.0))
            return NC_UNDERFLOW;
        ctrl[RC_H] = h;
        int64_t status = attempt(x, t, h, h == t_bound - t ? t_bound : t + h);
        if (status == NC_ACCEPTED || status == NC_CALLBACK)
            return status;
        if (status != NC_REJECTED) {
            if (h < 1e-12 * dmax(fabs(t_bound), 1.0))
                return status;
            rejected_attempt(ctrl, EVALUATION_SHRINK * h, 1);
        }
        ++*rejected;
    }
    return NC_MAX_ATTEMPTS;
}

/* ------------------------------------------------------------ many steps */
/* the collocation polynomial of a step at θ: out (N2) = y_old + θ Q_0 + θ² Q_1 + θ³ Q_2
 * (u(t_old + θ h) = y_old + Σ θ^(k+1) Q_k, order 3 uniformly: IV.8); out may not
 * overlap y_old or Q */
static void collocation(const double *y_old, const double *Q, double theta, int64_t N2,
                        double *out)
{
    double w[3] = {theta, theta * theta, theta * theta * theta};
    for (int64_t i = 0; i < N2; i++)
        out[i] = y_old[i] + (w[0] * Q[i] + w[1] * Q[N2 + i] + w[2] * Q[2 * N2 + i]);
}

/* Radau's entries of the stepper table that nc_advance_with (dopri5.c) drives: the same
 * loop, outputs, projection of outputs, checks and records as DOPRI5's */
static int64_t advance_step(void *ctx, int64_t max_attempts, double eps_floor, int64_t k,
                            int64_t *rejected)
{
    (void)k;                                /* no factor store: DOPRI5's sensitivity sweep */
    return radau_step(ctx, max_attempts, eps_floor, rejected);
}

static void advance_interpolate(void *ctx, double t, double *out)
{
    const nc_arr *R = ((const radau_ctx *)ctx)->R;
    const double *ctrl = F64(R[R_ctrl]);
    collocation(F64(R[R_yold]), F64(R[R_Q]), (t - ctrl[RC_T_OLD]) / ctrl[RC_H_OLD],
                R[R_y].size, out);
}

/* the last accepted step's polynomial as segment k: (t_old, h), y_old (1 row), Q (3) */
static void advance_keep(void *ctx, int64_t k, const nc_segments *seg)
{
    const nc_arr *R = ((const radau_ctx *)ctx)->R;
    const double *ctrl = F64(R[R_ctrl]);
    int64_t N2 = R[R_y].size;
    seg->t[2 * k] = ctrl[RC_T_OLD];
    seg->t[2 * k + 1] = ctrl[RC_H_OLD];
    memcpy(seg->y + k * N2, F64(R[R_yold]), N2 * sizeof(double));
    memcpy(seg->K + 3 * k * N2, F64(R[R_Q]), 3 * N2 * sizeof(double));
}

/* ------------------------------------------------------------------ wrappers */
static int fits(const nc_arr *R, int64_t N, int64_t m, const char *function)
{
    int ok = R[R_ctrl].size >= RC_COUNT && R[R_counts].size >= RN_COUNT &&
             R[R_coef].size == RCOEF_COUNT && R[R_y].size == 2 * N && R[R_K].size == N * N &&
             R[R_D].size == N * N && R[R_lu].size == N * N && R[R_luc].size == 2 * N * N &&
             R[R_piv].size == N && R[R_pivc].size == N && R[R_Z].size == 6 * N &&
             R[R_W].size == 6 * N && R[R_F].size == 6 * N && R[R_dW].size == 6 * N &&
             R[R_Q].size == 6 * N && R[R_f].size == 2 * N && R[R_yold].size == 2 * N &&
             R[R_scale].size == 2 * N && R[R_err].size == 2 * N &&
             R[R_point].size == 2 * N && R[R_value].size == 2 * N && R[R_b].size == N &&
             R[R_bc].size == 2 * N && R[R_ja].size == N && R[R_jF].size == NC_LANES * N &&
             R[R_je].size == NC_LANES * N && R[R_jzero].size == NC_LANES * N &&
             R[R_jda].size == NC_LANES * N && R[R_jlam].size == m &&
             R[R_js].size == NC_LANES * m && R[R_jmu].size == m &&
             R[R_jlanes].size == NC_LANES * (3 * N + m) &&
             R[R_basis].size == N * N && R[R_Kb].size == N * N && R[R_Db].size == N * N &&
             R[R_KU].size == N * N && R[R_DU].size == N * N && R[R_Mt].size == 2 * N * N &&
             R[R_cn].size == 4 * N && R[R_res].size == 2 * (N + 1) && R[R_bw].size == 4 * N;
    if (!ok)
        PyErr_Format(PyExc_ValueError, "core.%s: the RadauBuffers do not fit the model "
                     "(integrate/radau.py make_buffers)", function);
    return ok ? 0 : -1;
}

/* The context of a wrapper call from its parsed arguments T, S, P, Wk, hooks, R, mode
 * (a[0..6]) and the Jacobian callable or None (jac); ctx holds the hooks during the call.
 * 0, or -1 with an exception set. */
static int context(const nc_value *a, PyObject *jac, nc_py_hooks *ctx, radau_ctx *x,
                   const char *function)
{
    *x = (radau_ctx){a[0].tuple, a[1].tuple, a[2].tuple, a[3].tuple, a[5].tuple, NULL, a[6].i,
                     jac == Py_None ? NULL : jac};
    if (jac != Py_None && !PyCallable_Check(jac)) {
        PyErr_Format(PyExc_TypeError, "core.%s: jacobian must be callable or None", function);
        return -1;
    }
    const nc_arr *S = x->S, *R = x->R;
    if (fits(R, S[S_x].size, S[S_lam].size, function) < 0)
        return -1;
    if (R[R_weights].ndim != 2 || R[R_weights].shape[1] != 3 ||
        R[R_weights].shape[0] <= x->T[T_laws_weight_kind].size) {
        PyErr_Format(PyExc_ValueError, "core.%s: the weight table must have shape "
                     "(n_weights, 3)", function);
        return -1;
    }
    return nc_py_hooks_from(a[4].obj, ctx, &x->hk);
}

NC_WRAPPER(radau_step)
{
    nc_arr t[T_COUNT], s[S_COUNT], p[P_COUNT], w[WK_COUNT], r[R_COUNT];
    nc_value a[10] = {{.tuple = t}, {.tuple = s}, {.tuple = p}, {.tuple = w}, {.tuple = NULL}, {.tuple = r}};
    nc_py_hooks ctx;
    radau_ctx x;
    if (nc_parse(args, nargs, "TSPWoRiifo", a, "radau_step") < 0 ||
        context(a, a[9].obj, &ctx, &x, "radau_step") < 0)
        return NULL;
    int64_t rejected, status = radau_step(&x, a[7].i, a[8].f, &rejected);
    if (status == NC_CALLBACK)
        return NULL;
    return Py_BuildValue("(LL)", (long long)status, (long long)rejected);
}

NC_WRAPPER(radau_jacobian)
{
    nc_arr t[T_COUNT], s[S_COUNT], p[P_COUNT], w[WK_COUNT], r[R_COUNT];
    nc_value a[9] = {{.tuple = t}, {.tuple = s}, {.tuple = p}, {.tuple = w}, {.tuple = NULL}, {.tuple = r}};
    nc_py_hooks ctx;
    radau_ctx x;
    if (nc_parse(args, nargs, "TSPWoRifo", a, "radau_jacobian") < 0 ||
        context(a, a[8].obj, &ctx, &x, "radau_jacobian") < 0)
        return NULL;
    int64_t status = jacobian(&x, a[7].f, F64(x.R[R_point]));
    return status == NC_CALLBACK ? NULL : PyLong_FromLongLong(status);
}

NC_WRAPPER(radau_advance)
{
    nc_arr t[T_COUNT], s[S_COUNT], p[P_COUNT], w[WK_COUNT], r[R_COUNT];
    nc_value a[22] = {{.tuple = t}, {.tuple = s}, {.tuple = p}, {.tuple = w}, {.tuple = NULL}, {.tuple = r}};
    nc_py_hooks ctx;
    radau_ctx x;
    nc_records rec;
    nc_segments seg;
    if (nc_parse(args, nargs, "TSPWoRiodifdipfdddqddd", a, "radau_advance") < 0 ||
        context(a, a[7].obj, &ctx, &x, "radau_advance") < 0)
        return NULL;
    const nc_arr *W1 = &a[8].arr, *R = x.R;
    if (W1->ndim != 2 || W1->size != R[R_weights].size || W1->shape[1] != 3) {
        PyErr_SetString(PyExc_ValueError, "core.radau_advance: the weight table W1 must have "
                        "shape (n_weights, 3)");
        return NULL;
    }
    if (nc_advance_buffers(a + 15, R[R_y].size, 1, 3, "radau_advance", &rec, &seg) < 0)
        return NULL;
    double *ctrl = F64(R[R_ctrl]);
    nc_stepper st = {&x, advance_step, advance_interpolate, advance_keep, F64(R[R_y]),
                     &ctrl[RC_T_NOW], &ctrl[RC_T_BOUND]};
    nc_progress out = nc_advance_with(&st, x.T, x.S, x.P, x.Wk, x.hk, F64(*W1), x.mode, a[9].i,
                                      a[10].f, F64(a[11].arr), a[11].arr.size, a[12].i,
                                      (int)a[13].i, a[14].f, &rec, &seg);
    return nc_advance_result(out);
}

NC_WRAPPER(radau_interpolate)
{
    nc_value a[4];
    if (nc_parse(args, nargs, "dddd", a, "radau_interpolate") < 0)
        return NULL;
    int64_t N2 = a[0].arr.size, k = a[2].arr.size;
    if (a[1].arr.size != 3 * N2 || a[3].arr.size != k * N2) {
        PyErr_SetString(PyExc_ValueError, "core.radau_interpolate: y_old must be (N,), Q "
                        "(3, N), theta (k,) and out (k, N)");
        return NULL;
    }
    for (int64_t j = 0; j < k; j++)
        collocation(F64(a[0].arr), F64(a[1].arr), F64(a[2].arr)[j], N2, F64(a[3].arr) + j * N2);
    Py_RETURN_NONE;
}

/* the dense LU's test entry (dense_lu.h nc_lu_variant): A (n, n) real or (2, n, n) real
 * and imaginary parts, factored in place; b (n,) or (2, n) solved in place */
NC_WRAPPER(dense_lu_solve)
{
    nc_value a[3];
    if (nc_parse(args, nargs, "ddi", a, "dense_lu_solve") < 0)
        return NULL;
    nc_arr A = a[0].arr, b = a[1].arr;
    int cplx = A.ndim == 3;
    int64_t n = b.shape[b.ndim - 1];
    if (!(A.ndim == 2 + cplx && b.ndim == 1 + cplx && A.shape[cplx] == n &&
          A.shape[cplx + 1] == n && (!cplx || (A.shape[0] == 2 && b.shape[0] == 2)))) {
        PyErr_SetString(PyExc_ValueError, "core.dense_lu_solve: A must be (n, n) with b (n,), "
                        "or (2, n, n) with b (2, n) for a complex system");
        return NULL;
    }
    int64_t *piv = PyMem_Malloc((n > 0 ? n : 1) * sizeof(int64_t));
    if (piv == NULL)
        return PyErr_NoMemory();
    int status = nc_lu_variant((int)a[2].i, F64(A), cplx ? F64(A) + n * n : NULL, n, piv,
                               F64(b), cplx ? F64(b) + n : NULL);
    PyMem_Free(piv);
    return PyLong_FromLong(status);
}

PyMethodDef nc_radau_methods[] = {
    NC_METHOD(dense_lu_solve, "dense_lu_solve(A, b, variant) -> status: the dense LU of "
              "Radau's Newton matrices (dense_lu.c) with its variant taken explicitly (0 "
              "baseline, 1 AVX2): A (n, n), or (2, n, n) as real and imaginary parts, "
              "factored in place and b (n,) or (2, n) overwritten by A⁻¹ b; status 0, 1 for "
              "a zero pivot, −1 if the variant does not exist on this machine."),
    NC_METHOD(radau_step, "radau_step(T, S, P, Wk, hooks, R, mode, max_attempts, eps_floor, "
              "jacobian) -> (status, rejected): Radau IIA attempts from (R.ctrl[T], R.y) until "
              "one is accepted and projected, a failure, or max_attempts (status −1: "
              "step-size underflow). hooks: a Callbacks object or None, as for step; "
              "jacobian: None (the core's) or jacobian(t) -> status filling R.K and R.D at "
              "(t, R.point). A callback's exception propagates."),
    NC_METHOD(radau_advance, "radau_advance(T, S, P, Wk, hooks, R, mode, jacobian, W1, budget, "
              "eps_floor, t_eval, next_out, every_step, drift_tol, rec_t, rec_y, rec_obs, "
              "rec_kind, seg_t, seg_y, seg_K) -> (status, records, next_out, steps, rejected, "
              "stored, error): advance (dopri5.c's nc_advance_with) with Radau's steps: "
              "accepted steps and their checked records (every step, or the t_eval points by "
              "the collocation polynomial, projected) until finished, full, a failure or "
              "budget attempts; segments (c, 2), (c, 1, 2 n): y_old, (c, 3, 2 n): Q."),
    NC_METHOD(radau_interpolate, "radau_interpolate(y_old, Q, theta, out): the collocation "
              "polynomial of a Radau step, y_old + Σ θ^(k+1) Q_k, at the fractions theta (k,) "
              "into out (k, N)."),
    NC_METHOD(radau_jacobian, "radau_jacobian(T, S, P, Wk, hooks, R, mode, t, jacobian) -> "
              "status: R.K = ∂a/∂p and R.D = ∂a/∂v at (t, R.point), as radau_step computes "
              "them."),
    {NULL, NULL, 0, NULL},
};
