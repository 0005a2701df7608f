/* The forward sensitivity sweep on the kept stage factorizations
 * (docs/method.md#18-sensitivities; Python side natcoord/analysis/sensitivity.py).
 *
 * Bock's internal numerical differentiation, done analytically: the derivative of
 * the discrete DOPRI5-with-projection map along the forward run's accepted steps,
 * step sizes frozen. Per stage and direction one solve with the stage's kept
 * factorization,
 *
 *     [[M, Gᵀ], [G, 0]] [da; dλ] = [df − dM a − dGᵀ λ;  dγ − dG a],
 *
 * and per step the projection's derivative, its two solves with stage 6's kept
 * factorization: taken at the unprojected end point y + h Σ b_j K_j (FSAL), it is the
 * one the stepper's simplified Newton projects with (its G̃ a distance δ = |p⁺ − y_new|
 * off G(p⁺), δ of the size of the local error). The right-hand sides G(p⁺) dp and
 * G(p⁺) dv + ∂(G v + g_t)/∂p dp⁺ are evaluated at the projected point, so that
 *     G(p⁺) dp⁺ = (G(p⁺) − G̃) M⁻¹ G̃ᵀ (G̃ M⁻¹ G̃ᵀ)⁻¹ G(p⁺) dp,
 * O(δ) times the incoming G dp, itself O(δ) |dp| (dp is the derivative of a step from
 * the tangent space): the derivative differs from that of a projection factored at p⁺
 * at O(δ²), below the terms O(δ) = O(μ) both neglect (∂G̃ᵀ/∂y μ,
 * LinearizationPoint.projection_derivative); measured, by round-off (≤ 7e-16
 * relative on the tests' four-bar and six-bar and the benchmarks' runs). The forward
 * projection iterates y + M⁻¹ G̃ᵀ μ to g = 0 with that G̃ unless it contracts too
 * slowly; a step whose projection factored again (FS_refactored: δ too large for G̃)
 * is differentiated with a factorization at its projected point, from the dropped rows
 * of its stage 6, and so is the dense output between steps. The right-hand sides:
 * the constraint kernel's terms differentiated in one pass (dG never formed),
 * the applied forces' exact derivative (nc_force_derivative, forces.c, beside their
 * laws), and the parameter
 * columns (Directions, sensitivity.h) as a constant df, a dJ4, a spring tension's
 * ∂T/∂θ or a torque's ½ τ × e_k.
 *
 * What the core does not compile comes through the run's hooks (nc_hooks, dopri5.h),
 * as in the forward step: the weight table of drive laws written in Python, the
 * derivative of forces written in Python (force_derivative), a drive parameter's
 * ∂W/∂θ (drive_weights: the kernel's terms with that table join the right-hand sides,
 * ∂g/∂θ and ∂(G v + g_t)/∂θ the projection's), and a reference backend's factor and
 * solve: its stage factorizations are not kept, so each swept stage is factored again
 * through the hooks at the stage point from the dropped rows the stage had (kept with
 * its multipliers). Built-in models pass no hooks: their sweep is the one above.
 *
 * Slot arrays X, V, F (4 n, 3) are row-major; y = (p, v) is (2 N,) with N = 12 n;
 * the directions of the c columns are (c, 2 N). Nothing here allocates. */
#include "nc_core.h"
#include "dopri5.h"
#include "sensitivity.h"
#include "nc_simd.h"

/* Work[K_clock]: the last swept step's start, size and end; 1 once the first step is
 * swept (sensitivity.T_OLD ...) */
enum { CLOCK_T_OLD, CLOCK_STEP, CLOCK_T_NEW, CLOCK_STARTED };
/* Directions[D_spring_kind] (sensitivity.SPRING_KINDS) */
enum { STIFFNESS, DAMPING, REST_LENGTH };

/* the sweep's tuples and hooks (NULL entries: the compiled model alone), passed together
 * down the call tree */
typedef struct {
    const nc_arr *T, *S, *P, *D, *B;
    const nc_hooks *hk;
} sweep_ctx;

NC_INLINE double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* ------------------------------------------------------------ right-hand sides */

/* the lane layout (nc_acceleration_derivatives): entry q of direction j at L q + j
 * (L = 2 or NC_LANES lanes, sensitivity.h), so that the directional pass below handles
 * L directions in the vector instructions one direction takes */

/* x[0] p[0] + x[xs] p[1] + x[2 xs] p[2] (dot3 of an entry stride xs) */
NC_INLINE double dot3s(const double *x, int64_t xs, const double *p)
{
    return x[0] * p[0] + x[xs] * p[1] + x[2 * xs] * p[2];
}

/* The constraint kernel's terms (constraints.c) differentiated along c directions
 * (dX_j, dV_j) in one pass over the terms, dG never formed (exact: G is affine in p,
 * g_t and γ quadratic):
 *   stage (a stage's right-hand side): s_j = dγ − dG A,  F_j −= dGᵀ λ;
 *   !stage (the velocity projection):   s_j = dG A + dg_t  (A = v; dV, λ, F unused).
 * Entry q of direction j is at dX[j xc + q xs] (dV alike), of s_j at s[j sc + q ss], of
 * F_j at F[j fc + q fs]: one direction (c = 1, strides 1) or c = L directions in the
 * lane layout. A quadratic term c x_a·x_b of weights (w, ẇ, ẅ) in row r puts w c dx_b
 * at slot a and w c dx_a at slot b of dG; with
 *   dG A = w c (dx_b·A_a + dx_a·A_b),   dg_t = ẇ c d(x_a·x_b),
 *   dγ = −c (2 w d(v_a·v_b) + 2 ẇ d(x_a·v_b + x_b·v_a) + ẅ d(x_a·x_b))
 * its share of row r is, collected by direction,
 *   stage:  s_r −= c (dx_b·P_a + dx_a·P_b + dv_b·Q_a + dv_a·Q_b),
 *           P = w A + 2 ẇ v + ẅ x,  Q = 2 w v + 2 ẇ x;
 *   !stage: s_r += c (dx_b·P_a + dx_a·P_b),  P = w A + ẇ x;
 * and (dGᵀλ)_a += w c λ_r dx_b, (dGᵀλ)_b += w c λ_r dx_a. P and Q depend on the point
 * only: computed once per term for all c directions, whose own work is the four
 * products. On an undriven term (ẇ = ẅ = 0: most terms) P = w A and Q = 2 w v are not
 * formed: the products take A and v as they are and the sum is scaled after,
 * s_r −= (w c) (dx_b·A_a + dx_a·A_b + 2 (dv_b·v_a + dv_a·v_b)), the same bits for the
 * usual w = 1 (scaling by 1 and 2 is exact) and twelve products fewer per term, which
 * one direction, not sharing them, felt most (its pass ~15 % faster). A linear term
 * d·x_a: dg_t += ẇ d·dx_a, dγ −= 2 ẇ d·dv_a + ẅ d·dx_a, skipped on undriven rows.
 * Called with constant `stage`, c and strides, so that each caller gets its own
 * branch-free copy, the row sums acc[] stay in registers and, in the lane layout,
 * the c directions' products are vector instructions. A direction's arithmetic is the
 * same in either layout: its results do not depend on the directions beside it. With
 * `terms` (not NULL) only its terms, in the same order: the directions are zero on the
 * slots of all the others (nc_body_terms), whose products would add zeros. */
NC_INLINE void constraint_directional_body(const nc_arr *T, const nc_terms *terms,
                                           const double *X,
                                           const double *V, const double *W,
                                           const double *restrict dX,
                                           const double *restrict dV, const int64_t xc,
                                           const int64_t xs, const int c, const double *A,
                                           const double *lam, const int stage,
                                           double *restrict s, const int64_t sc,
                                           const int64_t ss, int64_t m,
                                           double *restrict F, const int64_t fc,
                                           const int64_t fs)
{
    for (int64_t r = 0; r < m; r++)
        for (int j = 0; j < c; j++)
            s[j * sc + r * ss] = 0.0;
    /* the terms come sorted by row (ConstraintTables): each direction's sum of the
     * current row in a register, stored when the row changes, loaded back if a row is
     * met again (as nc_constraints sums them) */
    int64_t cur = -1;
    double acc[NC_LANES] = {0.0};
    const int64_t *row = I64(T[T_quad_row]), *qa = I64(T[T_quad_a]), *qb = I64(T[T_quad_b]);
    const int64_t *qw = I64(T[T_quad_w]);
    const double *qc = F64(T[T_quad_c]);
    const int64_t n_quad = terms != NULL ? terms->n_quad : T[T_quad_row].size;
    for (int64_t t = 0; t < n_quad; t++) {
        const int64_t k = terms != NULL ? terms->quad[t] : t;
        int64_t r = row[k], a = 3 * qa[k], b = 3 * qb[k];
        if (r != cur) {
            for (int j = 0; j < c; j++) {
                if (cur >= 0)
                    s[j * sc + cur * ss] = acc[j];
                acc[j] = s[j * sc + r * ss];
            }
            cur = r;
        }
        const double *w = W + 3 * qw[k];
        const double w0 = w[0], w1 = w[1], w2 = w[2], cf = qc[k];
        /* the point's factors: in locals, shared by the c directions, or on an undriven
         * term A and V themselves with the scales ks (of the sum) and kq (of its Q part) */
        double Pa[3], Pb[3], Qa[3], Qb[3], ks = 1.0, kq = 1.0;
        const double *pa = Pa, *pb = Pb, *qa = Qa, *qb = Qb;
        if (w1 == 0.0 && w2 == 0.0) {
            pa = A + a, pb = A + b, qa = V + a, qb = V + b;
            ks = w0, kq = 2.0;
        } else {
            for (int i = 0; i < 3; i++) {
                if (stage) {
                    Pa[i] = w0 * A[a + i] + 2.0 * w1 * V[a + i] + w2 * X[a + i];
                    Pb[i] = w0 * A[b + i] + 2.0 * w1 * V[b + i] + w2 * X[b + i];
                    Qa[i] = 2.0 * w0 * V[a + i] + 2.0 * w1 * X[a + i];
                    Qb[i] = 2.0 * w0 * V[b + i] + 2.0 * w1 * X[b + i];
                } else {
                    Pa[i] = w0 * A[a + i] + w1 * X[a + i];
                    Pb[i] = w0 * A[b + i] + w1 * X[b + i];
                }
            }
        }
        const double wc = ks * cf, wl = stage ? w0 * cf * lam[r] : 0.0;
        for (int j = 0; j < c; j++) {
            const double *dx = dX + j * xc;
            double sum = dot3s(dx + b * xs, xs, pa) + dot3s(dx + a * xs, xs, pb);
            if (stage) {
                const double *dv = dV + j * xc;
                sum += kq * (dot3s(dv + b * xs, xs, qa) + dot3s(dv + a * xs, xs, qb));
                acc[j] -= wc * sum;
            } else {
                acc[j] += wc * sum;
            }
        }
        /* dGᵀλ after the sums, the branch on a == b outside the directions' loop (the
         * lanes stay vector instructions). A term x_a·x_a (a fifth of the hexapod's) puts
         * both its updates into slot a: one read-modify-write, a then b as the two did,
         * where the second waited on the first's store (the one direction's pass ~10 %
         * faster) */
        if (stage && a == b) {
            for (int j = 0; j < c; j++)
                for (int i = 0; i < 3; i++) {
                    double *f = F + j * fc + (a + i) * fs;
                    const double d = dX[j * xc + (a + i) * xs];
                    *f = (*f - wl * d) - wl * d;
                }
        } else if (stage) {
            for (int j = 0; j < c; j++)
                for (int i = 0; i < 3; i++) {
                    F[j * fc + (a + i) * fs] -= wl * dX[j * xc + (b + i) * xs];
                    F[j * fc + (b + i) * fs] -= wl * dX[j * xc + (a + i) * xs];
                }
        }
    }
    for (int j = 0; j < c && cur >= 0; j++)
        s[j * sc + cur * ss] = acc[j];
    const int64_t *lrow = I64(T[T_lin_row]), *la = I64(T[T_lin_a]), *lw = I64(T[T_lin_w]);
    const double *ld = F64(T[T_lin_d]);
    const int64_t n_lin = terms != NULL ? terms->n_lin : T[T_lin_row].size;
    for (int64_t t = 0; t < n_lin; t++) {
        const int64_t k = terms != NULL ? terms->lin[t] : t;
        const double *w = W + 3 * lw[k];
        const double w1 = w[1], w2 = w[2];
        if (w1 == 0.0 && w2 == 0.0)
            continue;
        const double *d = ld + 3 * k;
        int64_t r = lrow[k], a = 3 * la[k];
        for (int j = 0; j < c; j++) {
            double ddx = dot3s(dX + j * xc + a * xs, xs, d);
            if (stage)
                s[j * sc + r * ss] -= 2.0 * w1 * dot3s(dV + j * xc + a * xs, xs, d) + w2 * ddx;
            else
                s[j * sc + r * ss] += w1 * ddx;
        }
    }
}

/* its three callers' copies, each in an AVX2 and a baseline variant (nc_simd.h): a
 * stage's right-hand side of one direction and of L = 2 or NC_LANES in the lane layout,
 * the velocity projection's of one */
NC_INLINE void nc_stage_directional_body(const nc_arr *T, const nc_terms *terms,
                                         const double *X, const double *V, const double *W,
                                         const double *dX, const double *dV,
                                         const double *A, const double *lam, double *s,
                                         int64_t m, double *F)
{
    constraint_directional_body(T, terms, X, V, W, dX, dV, 0, 1, 1, A, lam, 1, s, 0, 1, m, F,
                                0, 1);
}
NC_DISPATCH_VOID(nc_stage_directional,
                 (const nc_arr *T, const nc_terms *terms, const double *X, const double *V,
                  const double *W, const double *dX, const double *dV, const double *A,
                  const double *lam, double *s, int64_t m, double *F),
                 (T, terms, X, V, W, dX, dV, A, lam, s, m, F))

NC_INLINE void nc_lane_directional_body(const nc_arr *T, const nc_terms *terms,
                                        const double *X, const double *V, const double *W,
                                        const double *dX, const double *dV, const double *A,
                                        const double *lam, double *s, int64_t m, double *F,
                                        int L)
{
    if (L == 2)
        constraint_directional_body(T, terms, X, V, W, dX, dV, 1, 2, 2, A, lam, 1, s, 1, 2, m,
                                    F, 1, 2);
    else
        constraint_directional_body(T, terms, X, V, W, dX, dV, 1, NC_LANES, NC_LANES, A, lam,
                                    1, s, 1, NC_LANES, m, F, 1, NC_LANES);
}
NC_DISPATCH_VOID(nc_lane_directional,
                 (const nc_arr *T, const nc_terms *terms, const double *X, const double *V,
                  const double *W, const double *dX, const double *dV, const double *A,
                  const double *lam, double *s, int64_t m, double *F, int L),
                 (T, terms, X, V, W, dX, dV, A, lam, s, m, F, L))

NC_INLINE void nc_velocity_directional_body(const nc_arr *T, const double *X,
                                            const double *V, const double *W,
                                            const double *dX, double *s, int64_t m)
{
    constraint_directional_body(T, NULL, X, V, W, dX, NULL, 0, 1, 1, V, NULL, 0, s, 0, 1, m,
                                NULL, 0, 1);
}
NC_DISPATCH_VOID(nc_velocity_directional,
                 (const nc_arr *T, const double *X, const double *V, const double *W,
                  const double *dX, double *s, int64_t m),
                 (T, X, V, W, dX, s, m))

/* F += ∂f/∂θ − ∂M/∂θ a of column j (parameter_direction): the constant df, dJ4 of
 * one body times its accelerations A, a spring's ∂T/∂θ n with ∂T/∂k = l − l0,
 * ∂T/∂c = l̇, ∂T/∂l0 = −k, or a torque's generalized force ½ τ × e_k (the
 * derivative of its scale). */
static void parameter_force(const nc_arr *T, const nc_arr *D, int64_t j, const double *X,
                            const double *V, const double *A, double *F)
{
    int64_t size = D[D_df].shape[1] * 3;
    const double *df = F64(D[D_df]) + j * size;
    for (int64_t q = 0; q < size; q++)
        F[q] += df[q];
    int64_t torque = I64(D[D_torque])[j];
    if (torque >= 0)
        nc_torque_forces(&AT2(T[T_tq_vec], torque, 0), 4 * I64(T[T_tq_body])[torque], X, F);
    int64_t body = I64(D[D_body])[j];
    if (body >= 0) {
        const double *dJ4 = F64(D[D_dJ4]) + 16 * j;
        double *Fb = F + 12 * body;
        const double *Ab = A + 12 * body;
        for (int r = 0; r < 4; r++)
            for (int q = 0; q < 4; q++)
                for (int k = 0; k < 3; k++)
                    Fb[3 * r + k] -= dJ4[4 * r + q] * Ab[3 * q + k];
    }
    int64_t i = I64(D[D_spring])[j];
    if (i >= 0) {
        double n[3], rate[3], f[3], dtension;
        double length = nc_spring_frame(T, i, X, V, n, rate);
        switch (I64(D[D_spring_kind])[j]) {
        case STIFFNESS: dtension = length - F64(T[T_sp_l0])[i]; break;
        case DAMPING: dtension = dot3(n, rate); break;
        default: dtension = -F64(T[T_sp_k])[i]; break;
        }
        for (int k = 0; k < 3; k++)
            f[k] = dtension * n[k];
        nc_spring_pair(T, i, F, f);
    }
}

/* ------------------------------------------------------------ one point */

void nc_body_terms(const nc_arr *T, int64_t body, int64_t *buffer, nc_terms *out)
{
    const int64_t *qa = I64(T[T_quad_a]), *qb = I64(T[T_quad_b]), *la = I64(T[T_lin_a]);
    int64_t *list = buffer;
    out->quad = list;
    for (int64_t k = 0; k < T[T_quad_row].size; k++)
        if (qa[k] / 4 == body || qb[k] / 4 == body)
            *list++ = k;
    out->n_quad = list - out->quad;
    out->lin = list;
    for (int64_t k = 0; k < T[T_lin_row].size; k++)
        if (la[k] / 4 == body)
            *list++ = k;
    out->n_lin = list - out->lin;
    out->force = list;
    for (int64_t k = 0; k < T[T_force_kind].size; k++)
        if (nc_force_reads(T, k, body))
            *list++ = k;
    out->n_force = list - out->force;
}

/* s += γ_w − G_w A, F −= G_wᵀ λ: a drive parameter's share of a stage's right-hand side,
 * the kernel's terms with its weight table dW (g, G, g_t, γ are linear in W: with
 * ∂W/∂θ they are ∂/∂θ; LinearizationPoint.derivative). Scratch of bx. */
static void drive_terms(const nc_arr *T, const nc_beyond *bx, const double *dW,
                        const double *X, const double *V, const double *A,
                        const double *lam, double *s, int64_t m, double *F, int64_t n)
{
    int64_t nnz = T[T_pattern_row].size;
    const int64_t *prow = I64(T[T_pattern_row]), *pslot = I64(T[T_pattern_slot]);
    double *g = bx->gw, *g_t = g + m, *gamma = g_t + m, *GA = gamma + m;
    nc_constraints(T, X, V, dW, g, g_t, gamma, bx->Gw, m, nnz);
    nc_jacobian_times(prow, pslot, nnz, bx->Gw, A, GA, m);
    for (int64_t r = 0; r < m; r++)
        s[r] += gamma[r] - GA[r];
    nc_jacobian_transpose_times(prow, pslot, nnz, bx->Gw, lam, bx->fw, n / 3);
    for (int64_t q = 0; q < n; q++)
        F[q] -= bx->fw[q];
}

/* da_j (at da + j ldo) of [[M, Gᵀ], [G, 0]] [da; dλ] = [df − dM a − dGᵀ λ; dγ − dG a]
 * along the c directions (dX + j ld, dV + j ld) and, with D (not NULL), the parameters
 * of D's columns j0 + j, K factored in Wk at (X, V) with the accelerations A and
 * multipliers lam there (LinearizationPoint.derivative). F (c, n = 12 n_bodies), s (c, m)
 * and mu (m) are scratch, and for c > 1 lanes (NC_LANES (3 n + m)). The force terms
 * of all c directions first, then per NC_LANES of them the constraint terms in one
 * pass and their solves with the kept factorization in one pass over its blocks
 * (nc_solve_lanes), both in the lane layout; a last two in two lanes, a last one alone
 * (nc_solve_kernel): a column's bits do not depend on the columns beside it. With
 * `terms` (not NULL: directions on one body alone, nc_body_terms) the right-hand sides
 * visit only its terms and forces. With bx's hooks or drive tables (nc_beyond) every
 * column goes alone: the hooks' solve takes one right-hand side, and a drive column's
 * terms are added to its plain-layout s and F before its solve. */
int64_t nc_acceleration_derivatives(const nc_arr *T, const nc_terms *terms, const nc_arr *P,
                                    const nc_arr *Wk, const nc_arr *D, const nc_beyond *bx,
                                    int64_t j0, int64_t c, const double *X, const double *V,
                                    const double *W, const double *A, const double *lam,
                                    const double *dX, const double *dV, int64_t ld,
                                    double *F, int64_t n, double *s, double *mu, int64_t m,
                                    double *lanes, double *da, int64_t ldo)
{
    const nc_hooks *hk = bx != NULL ? bx->hk : NULL;
    for (int64_t j = 0; j < c; j++) {
        nc_force_derivative(T, terms, X, V, dX + j * ld, dV + j * ld, F + j * n, n);
        if (D != NULL)
            parameter_force(T, D, j0 + j, X, V, A, F + j * n);
    }
    if (hk != NULL && hk->force_derivative != NULL) {
        int64_t status = hk->force_derivative(hk->ctx, bx->t, X, dX, dV, ld, c, F, n);
        if (status != 0)
            return status;
    }
    const int alone = bx != NULL && ((hk != NULL && hk->solve != NULL) || bx->dW != NULL);
    /* NC_LANES directions at a time; the last one or two as they are or in 2 lanes */
    for (int64_t b = 0; b < c; b += alone ? 1 : NC_LANES) {
        const int width = alone ? 1 : c - b < NC_LANES ? (int)(c - b) : NC_LANES;
        if (width == 1) {
            nc_stage_directional(T, terms, X, V, W, dX + b * ld, dV + b * ld, A, lam, s + b * m, m,
                                 F + b * n);
            if (bx != NULL && bx->dW != NULL && I64(D[D_drive])[j0 + b])
                drive_terms(T, bx, bx->dW + (j0 + b) * bx->wsize, X, V, A, lam, s + b * m, m,
                            F + b * n, n);
            int64_t status = nc_kkt_solve(P, Wk, hk, F + b * n, s + b * m, da + b * ldo, mu);
            if (status != 0)
                return status;
            continue;
        }
        const int L = width == 2 ? 2 : NC_LANES;
        double *xl = lanes, *vl = lanes + L * n, *fl = lanes + 2 * L * n;
        double *sl = lanes + 3 * L * n;
        if (width < L)                           /* a spare lane: a zero direction */
            memset(lanes, 0, 3 * L * n * sizeof(double));
        for (int j = 0; j < width; j++) {        /* into the lane layout */
            const double *dx = dX + (b + j) * ld, *dv = dV + (b + j) * ld, *f = F + (b + j) * n;
            for (int64_t q = 0; q < n; q++) {
                xl[L * q + j] = dx[q];
                vl[L * q + j] = dv[q];
                fl[L * q + j] = f[q];
            }
        }
        nc_lane_directional(T, terms, X, V, W, xl, vl, A, lam, sl, m, fl, L);
        /* the L solves in one pass over the factor, in the lane layout (the multipliers
         * into sl, read before they are written; the accelerations into xl, free now) */
        nc_solve_lanes(fl, sl, P, Wk, xl, sl, L);
        for (int j = 0; j < width; j++)
            for (int64_t q = 0; q < n; q++)
                da[(b + j) * ldo + q] = xl[L * q + j];
    }
    return 0;
}

/* what the sweep's derivatives at time t take from beyond the compiled model
 * (nc_beyond): its hooks and, if the hooks fill them, the drive columns' tables */
static nc_beyond beyond(const sweep_ctx *x, double t)
{
    const nc_arr *B = x->B;
    int with_drives = x->hk != NULL && x->hk->drive_weights != NULL;
    nc_beyond bx = {x->hk, t, with_drives ? F64(B[K_dW]) : NULL, B[K_W].size,
                    F64(B[K_Gw]), F64(B[K_gw]), F64(B[K_fw])};
    return bx;
}

/* the drive columns' tables B[K_dW] at time t (hooks' drive_weights; none: nothing to
 * do); 0 or the hook's status */
static int64_t drive_tables(const sweep_ctx *x, double t)
{
    if (x->hk == NULL || x->hk->drive_weights == NULL)
        return 0;
    return x->hk->drive_weights(x->hk->ctx, t, F64(x->B[K_dW]));
}

/* da_j (at da + j ldo) along the sweep's c directions dY + j ld (dY_j = (dX, dV)) with the
 * sweep's columns' parameters, at the point (t, X, V) with accelerations A and
 * multipliers lam (read where the stepper left them: no copies); 0 or a hook's status */
static int64_t acceleration_derivatives(const sweep_ctx *x, const nc_arr *Wk, double t,
                                        const double *X, const double *V, const double *W,
                                        const double *A, const double *lam, const double *dY,
                                        int64_t ld, double *da, int64_t ldo)
{
    const nc_arr *B = x->B;
    int64_t n = B[K_dy].shape[1] / 2;
    nc_beyond bx = beyond(x, t);
    return nc_acceleration_derivatives(x->T, NULL, x->P, Wk, x->D, &bx, 0, B[K_dy].shape[0],
                                       X, V, W, A, lam, dY, dY + n, ld, F64(B[K_F]), n,
                                       F64(B[K_s]), F64(B[K_mu]), B[K_mu].size,
                                       F64(B[K_lanes]), da, ldo);
}

/* out + j N = (dp⁺, dv⁺) of the projection of the `width` directions dy + j N (columns
 * j0 + j) at the projected (X, V), with G in S[S_G] there and K factored in Wk (there,
 * or stage 6's at the unprojected point: module comment)
 * (LinearizationPoint.projection_derivative):
 *     dp⁺ = dp − M⁻¹Gᵀ (G M⁻¹ Gᵀ)⁻¹ (G dp + ∂g/∂θ)   (one solve with [0; −G dp − ∂g/∂θ])
 *     dv⁺ = dv + Δv,  [Δv; ν] = K⁻¹ [0; −(G dv + ∂(G v + g_t)/∂p dp⁺ + ∂(G v + g_t)/∂θ)]
 * (the ∂/∂θ terms of a drive column only: the kernel's g, g_t and G with its table
 * ∂W/∂θ). Each of the two solves for all the directions at once, in L lanes (L = 2 or
 * NC_LANES, a spare lane zero; L = 1 for one direction: the plain layout), in one pass
 * over the factor (nc_solve_lanes), not 2 c solves one by one (hexapod, four
 * directions: a sensitivity run 2.53 -> 2.38 forward runs). A direction's bits are those
 * of its solve alone. Scratch: the lanes of B[K_lanes] (x, a zero r, s and λ), s (m)
 * and mu (m). Returns 0 or the hooks' solve's status. */
static int64_t projection_derivatives(const sweep_ctx *x, const nc_arr *Wk, const double *X,
                                      const double *V, const double *W, const double *dy,
                                      int64_t j0, int width, double *out)
{
    const nc_arr *T = x->T, *S = x->S, *B = x->B;
    int64_t n = B[K_dy].shape[1] / 2, N = 2 * n, m = B[K_mu].size, nnz = T[T_pattern_row].size;
    const int64_t *prow = I64(T[T_pattern_row]), *pslot = I64(T[T_pattern_slot]);
    const double *G = F64(S[S_G]);
    double *s = F64(B[K_s]), *mu = F64(B[K_mu]);
    const int L = width == 1 ? 1 : width == 2 ? 2 : NC_LANES;
    double *xl = F64(B[K_lanes]), *rl = xl + L * n, *sl = rl + L * n;
    double *lam = L == 1 ? mu : sl;          /* the lanes' λ over their s (nc_solve_lanes) */
    /* a drive column (alone: L = 1): g_w, g_t_w and G_w v with its table (B[K_gw] rows) */
    nc_beyond bx = beyond(x, 0.0);           /* its tables and scratch (no hook call) */
    const int drive = bx.dW != NULL && I64(x->D[D_drive])[j0];
    double *g_w = bx.gw, *g_t_w = g_w + m, *Gv_w = g_t_w + 2 * m;
    if (drive) {
        nc_constraints(T, X, V, bx.dW + j0 * bx.wsize, g_w, g_t_w, NULL, bx.Gw, m, nnz);
        nc_jacobian_times(prow, pslot, nnz, bx.Gw, V, Gv_w, m);
    }
    memset(rl, 0, (L * n + L * m) * sizeof(double));       /* r = 0; spare lanes' s = 0 */
    for (int j = 0; j < width; j++) {
        nc_jacobian_times(prow, pslot, nnz, G, dy + j * N, s, m);
        for (int64_t r = 0; r < m; r++)
            sl[L * r + j] = drive ? -(s[r] + g_w[r]) : -s[r];
    }
    int64_t status = L == 1 ? nc_kkt_solve(x->P, Wk, x->hk, rl, sl, xl, lam) : 0;
    if (L > 1)
        nc_solve_lanes(rl, sl, x->P, Wk, xl, lam, L);
    if (status != 0)
        return status;
    for (int j = 0; j < width; j++) {
        const double *d = dy + j * N;
        double *dp = out + j * N;
        for (int64_t i = 0; i < n; i++)
            dp[i] = d[i] + xl[L * i + j];
        nc_jacobian_times(prow, pslot, nnz, G, d + n, s, m);
        nc_velocity_directional(T, X, V, W, dp, mu, m);
        for (int64_t r = 0; r < m; r++)            /* −(G dv + ∂(G v + g_t)/∂p dp⁺) */
            sl[L * r + j] = drive ? -((s[r] + mu[r]) + (Gv_w[r] + g_t_w[r]))
                                  : -(s[r] + mu[r]);
    }
    for (int j = width; j < L; j++)              /* the spare lane's λ of the first solve */
        for (int64_t r = 0; r < m; r++)
            sl[L * r + j] = 0.0;
    status = L == 1 ? nc_kkt_solve(x->P, Wk, x->hk, rl, sl, xl, lam) : 0;
    if (L > 1)
        nc_solve_lanes(rl, sl, x->P, Wk, xl, lam, L);
    if (status != 0)
        return status;
    for (int j = 0; j < width; j++)
        for (int64_t i = 0; i < n; i++)
            out[j * N + n + i] = dy[j * N + n + i] + xl[L * i + j];
    return 0;
}

/* dK[:, 0] = (dv, da) along the directions dy (c, 2 N) at the first state (t, y) of the
 * run, evaluated and factored there in Wk (later steps take dK_0 from the last stage,
 * FSAL); returns a factorization's or a hook's status. */
static int64_t first_stage(const sweep_ctx *x, const nc_arr *Wk, double t, const double *y,
                           const double *dy)
{
    const nc_arr *B = x->B;
    int64_t c = B[K_dy].shape[0], N = B[K_dy].shape[1], n = N / 2;
    double *W = F64(B[K_W]), *K0 = F64(B[K_y]);        /* (v, a) at y: B[K_y] is free here */
    int64_t status = nc_weights_at(x->T, x->hk, t, W);
    if (status == 0)
        status = drive_tables(x, t);
    if (status == 0)
        status = nc_rhs(x->T, x->S, x->P, Wk, x->hk, t, y, W,
                        NC_PROJECT_POSITIONS_AND_VELOCITIES, K0);
    if (status != 0)
        return status;
    double *dK = F64(B[K_dK]);
    for (int64_t j = 0; j < c; j++)
        memcpy(dK + 7 * N * j, dy + j * N + n, n * sizeof(double));
    return acceleration_derivatives(x, Wk, t, y, y + n, W, K0 + n, F64(x->S[S_lam]), dy, N,
                                    dK + n, 7 * N);
}

/* out (c, 2 N): the projection's derivative of the directions dy at the projected
 * (t, y), G evaluated there (no accelerations needed, and no γ: the constraints
 * evaluated without its terms, a fifth of the evaluation), K factored in `kept` (a
 * step's stage 6, sweep_chunk) or, kept NULL, factored at y into Wk from the dropped
 * rows of the last swept step's stage 6 (S[S_held], as the stepper projects an output
 * from its integrator's dropped set); a factorization's or a hook's status. The
 * columns in lanes, or one at a time with the hooks' solve or drive columns (as
 * nc_acceleration_derivatives). */
static int64_t projected(const sweep_ctx *x, const nc_arr *Wk, const nc_arr *kept, double t,
                         const double *y, const double *dy, double *out)
{
    const nc_arr *B = x->B, *S = x->S;
    int64_t c = B[K_dy].shape[0], N = B[K_dy].shape[1], n = N / 2;
    double *W = F64(B[K_W]);
    int64_t status = nc_weights_at(x->T, x->hk, t, W);
    if (status == 0)
        status = drive_tables(x, t);
    if (status != 0)
        return status;
    nc_constraints(x->T, y, y + n, W, F64(S[S_g]), F64(S[S_g_t]), NULL, F64(S[S_G]),
                   S[S_g].size, S[S_G].shape[0]);
    if (kept == NULL) {
        nc_set_dropped(S, BOOL(S[S_held]));
        status = nc_factor(S, x->P, Wk, x->hk);
        if (status != 0)
            return status;
        kept = Wk;
    }
    nc_beyond bx = beyond(x, t);
    const int64_t lanes = (x->hk != NULL && x->hk->solve != NULL) || bx.dW != NULL ? 1
                                                                                   : NC_LANES;
    for (int64_t b = 0; b < c && status == 0; b += lanes)
        status = projection_derivatives(x, kept, y, y + n, W, dy + b * N, b,
                                        c - b < lanes ? (int)(c - b) : (int)lanes,
                                        out + b * N);
    return status;
}

/* result[k:] for the records t_out[k:] up to the last swept step's end (B[K_clock]):
 * dy⁺ at the end, else the projected dense output of the derivatives. Returns a
 * status; *k the next record. */
static int64_t outputs(const sweep_ctx *x, const nc_arr *Wk, const double *t_out,
                       const double *y_out, int64_t n_out, double *result, int64_t *k)
{
    const nc_arr *B = x->B;
    const double *clock = F64(B[K_clock]);
    double t_old = clock[CLOCK_T_OLD], h = clock[CLOCK_STEP], t_new = clock[CLOCK_T_NEW];
    int64_t c = B[K_dy].shape[0], N = B[K_dy].shape[1];
    for (; *k < n_out && t_out[*k] <= t_new; (*k)++) {
        double *res = result + *k * c * N;
        if (t_out[*k] == t_new) {
            memcpy(res, F64(B[K_dy]), c * N * sizeof(double));
            continue;
        }
        double theta = (t_out[*k] - t_old) / h, *dout = F64(B[K_dout]);
        for (int64_t j = 0; j < c; j++)
            nc_interpolate(F64(B[K_dyold]) + j * N, F64(B[K_dynew]) + j * N,
                           &AT3(B[K_dK], j, 0, 0), h, theta, N, dout + j * N);
        int64_t status = projected(x, Wk, NULL, t_out[*k], y_out + *k * N, dout, res);
        if (status != 0)
            return status;
    }
    return 0;
}

/* out = y + h Σ_{j<s} a_sj K_j (K (7, N) rows): the stage point Y_s (and dY_s) of the
 * forward run, summed in stage order as dopri5.c's combine (to the sign of a zero sum).
 * One pass over the N components, each sum in a register, with the stage s a constant
 * (nc_stage_point's switch): the inner sum unrolled, the pass over the components is
 * vectorized (each lane rounds as the scalar loop). The former pass per stage through
 * a scratch row, read and written s + 1 times, was 13 % of the six-bar's sweep. */
NC_INLINE void stage_sum(const double *y, double h, const double *K, const int s, int64_t N,
                         double *restrict out)
{
    const double *a = NC_A_DENSE[s];
    for (int64_t q = 0; q < N; q++) {
        double sum = a[0] * K[q];
        for (int j = 1; j < s; j++)
            sum += a[j] * K[j * N + q];
        out[q] = y[q] + h * sum;
    }
}

NC_INLINE void nc_stage_point_body(const double *y, double h, const double *K, int64_t s,
                                int64_t N, double *out)
{
    switch (s) {
    case 1: stage_sum(y, h, K, 1, N, out); break;
    case 2: stage_sum(y, h, K, 2, N, out); break;
    case 3: stage_sum(y, h, K, 3, N, out); break;
    case 4: stage_sum(y, h, K, 4, N, out); break;
    case 5: stage_sum(y, h, K, 5, N, out); break;
    default: stage_sum(y, h, K, 6, N, out); break;
    }
}
NC_DISPATCH_VOID(nc_stage_point,
                 (const double *y, double h, const double *K, int64_t s, int64_t N,
                  double *out),
                 (y, h, K, s, N, out))

/* out (WK_COUNT): the factorization of stage s of stored step i at its point (Y, W): the
 * kept one in store, or with a reference backend (the hooks' factor; the stepper keeps
 * none of its factorizations) G evaluated and factored again at Y through the hooks,
 * from the dropped rows the stage had, into Wk (not used: the hooks solve). A status. */
static int64_t stage_work(const sweep_ctx *x, const nc_arr *Wk, const nc_arr *store,
                          int64_t i, int64_t s, const double *Y, const double *W, nc_arr *out)
{
    nc_stage_work(Wk, store, i, s, out);
    if (x->hk == NULL || x->hk->factor == NULL)
        return 0;
    const nc_arr *S = x->S;
    int64_t m = S[S_g].size;
    nc_constraints(x->T, Y, Y + S[S_x].size, W, F64(S[S_g]), F64(S[S_g_t]), NULL, F64(S[S_G]),
                   m, S[S_G].shape[0]);
    memcpy(BOOL(S[S_mask]), BOOL(store[FS_mask]) + (6 * i + s) * m, m);
    return nc_factor(S, x->P, Wk, x->hk);
}

/* The directions B[K_dy] (c, 2 N) carried along the forward run's first m accepted
 * steps seg (t_old, h; y_old, y_new; stages K), whose stage factorizations are in
 * store, the last ending at the projected (t_end, y_end):
 *     dY_s = dy + h Σ_j a_sj dK_j,   dK_s = (dv_s, da_s),   dy⁺ = P'(dY_6)
 * with FSAL dK_0 = (dv⁺, da_6) (at the first step ever dK_0 is evaluated and
 * factored at the initial state). result[k] (c, 2 N): the derivative at the record
 * (t_out[k], y_out[k]), records of the previous chunk's last step first. Returns 0
 * or a factorization's or a hook's status. */
static int64_t sweep_chunk(const sweep_ctx *x, const nc_arr *Wk, const nc_segments *seg,
                           const nc_arr *store, int64_t m, double t_end, const double *y_end,
                           const double *t_out, const double *y_out, int64_t n_out,
                           double *result)
{
    const nc_arr *B = x->B;
    int64_t c = B[K_dy].shape[0], N = B[K_dy].shape[1], n = N / 2;
    double *dK = F64(B[K_dK]), *dy = F64(B[K_dy]), *dys = F64(B[K_dys]);
    double *clock = F64(B[K_clock]), *Y = F64(B[K_y]);
    double *W = F64(B[K_W]);
    int64_t k = 0;
    int64_t status = outputs(x, Wk, t_out, y_out, n_out, result, &k);
    for (int64_t i = 0; i < m && status == 0; i++) {
        double t = seg->t[2 * i], h = seg->t[2 * i + 1];
        const double *y = seg->y + 2 * N * i, *K = seg->K + 7 * N * i;
        if (clock[CLOCK_STARTED] == 0.0) {
            status = first_stage(x, Wk, t, y, dy);
            if (status != 0)
                return status;
            clock[CLOCK_STARTED] = 1.0;
        } else {
            for (int64_t j = 0; j < c; j++) {
                double *dKj = dK + 7 * N * j;
                memcpy(dKj, dy + j * N + n, n * sizeof(double));
                memcpy(dKj + n, dKj + 6 * N + n, n * sizeof(double));
            }
        }
        memcpy(F64(B[K_dyold]), dy, c * N * sizeof(double));
        nc_arr Ws[WK_COUNT];                     /* the stage's factorization; last: stage 6 */
        for (int64_t s = 1; s < 7; s++) {
            nc_stage_point(y, h, K, s, N, Y);
            for (int64_t j = 0; j < c; j++)
                nc_stage_point(dy + j * N, h, dK + 7 * N * j, s, N, dys + j * N);
            double ts = t + NC_C_DENSE[s] * h;
            status = nc_weights_at(x->T, x->hk, ts, W);
            if (status == 0)
                status = drive_tables(x, ts);
            if (status == 0)
                status = stage_work(x, Wk, store, i, s - 1, Y, W, Ws);
            if (status != 0)
                return status;
            for (int64_t j = 0; j < c; j++)
                memcpy(dK + (7 * j + s) * N, dys + j * N + n, n * sizeof(double));
            status = acceleration_derivatives(x, Ws, ts, Y, Y + n, W, K + s * N + n,
                                              &AT3(store[FS_lam], i, s - 1, 0), dys, N,
                                              dK + s * N + n, 7 * N);
            if (status != 0)
                return status;
        }
        memcpy(F64(B[K_dynew]), dys, c * N * sizeof(double));     /* dY_6 (A[6] = B) */
        int last = i + 1 == m;
        double t_new = last ? t_end : seg->t[2 * (i + 1)];
        const double *y_new = last ? y_end : seg->y + 2 * N * (i + 1);
        /* projected with stage 6's factorization, taken at the unprojected end point
         * Y_6 = y + h Σ b_j K_j, which the stepper's simplified Newton projected with
         * (module comment); if that factored again, at the projected point from the same
         * dropped rows. Those rows are held for the step's outputs (projected()). */
        int64_t rows = x->S[S_mask].size;
        memcpy(BOOL(x->S[S_held]), BOOL(store[FS_mask]) + (6 * i + 5) * rows, rows);
        status = projected(x, Wk, BOOL(store[FS_refactored])[i] ? NULL : Ws, t_new, y_new,
                           F64(B[K_dynew]), dy);
        clock[CLOCK_T_OLD] = t;
        clock[CLOCK_STEP] = h;
        clock[CLOCK_T_NEW] = t_new;
        if (status == 0)
            status = outputs(x, Wk, t_out, y_out, n_out, result, &k);
    }
    return status;
}

/* ------------------------------------------------------------------ wrapper */

/* advance_swept(T, S, P, Wk, hooks, W7, W1, mode, budget, eps_floor, t_eval, next_out,
 * every_step, drift_tol, rec_t, rec_y, rec_obs, rec_kind, seg_t, seg_y, seg_K, store,
 * S2, Wk2, D, B, rec_d, repeat, sweep_hooks): nc_advance (with the run's hooks, as
 * advance) in rounds of as many steps as store holds, each round swept in the sweep's
 * own buffers S2, Wk2 (and its own hooks: a reference backend's factorizations of its
 * own, the forces' and drive parameters' derivatives) while its factorizations are
 * still in cache; rec_d[k] (c, 2 N) the derivatives at record k. Goes on while a round
 * ends only because the store is full (and repeat). Returns advance's values (records
 * and steps summed over the rounds, stored steps of the last round, the run's callback
 * exception or None) and the sweep's status (0 or a factorization's or a hook's); a
 * sweep hook's exception is raised. */
NC_WRAPPER(advance_swept)
{
    nc_arr t[T_COUNT], s[S_COUNT], p[P_COUNT], w[WK_COUNT], f[FS_COUNT];
    nc_arr s2[S_COUNT], w2[WK_COUNT], d[D_COUNT], b[K_COUNT];
    nc_value v[29] = {{.tuple = t}, {.tuple = s}, {.tuple = p}, {.tuple = w}};
    v[21].tuple = f;
    v[22].tuple = s2;
    v[23].tuple = w2;
    v[24].tuple = d;
    v[25].tuple = b;
    nc_py_hooks run_ctx, sweep_ctx_hooks;
    const nc_hooks *hk, *sweep_hk;
    if (nc_parse(args, nargs, "TSPWoddiifdipfdddqdddFSWDKdpo", v, "advance_swept") < 0 ||
        nc_py_hooks_from(v[4].obj, &run_ctx, &hk) < 0 ||
        nc_py_hooks_from(v[28].obj, &sweep_ctx_hooks, &sweep_hk) < 0)
        return NULL;
    const nc_arr *T = v[0].tuple, *S = v[1].tuple, *P = v[2].tuple, *Wk = v[3].tuple;
    const nc_arr *store = v[21].tuple, *S2 = v[22].tuple, *Wk2 = v[23].tuple;
    const nc_arr *D = v[24].tuple, *B = v[25].tuple;
    const nc_arr *W7 = &v[5].arr, *t_eval = &v[10].arr, *rec_t = &v[14].arr;
    const nc_arr *rec_y = &v[15].arr, *rec_obs = &v[16].arr, *rec_kind = &v[17].arr;
    const nc_arr *rec_d = &v[26].arr;
    int64_t mode = v[7].i, budget = v[8].i, next_out = v[11].i, every_step = v[12].i;
    int64_t repeat = v[27].i;
    double eps_floor = v[9].f, drift_tol = v[13].f;
    nc_segments seg = {F64(v[18].arr), F64(v[19].arr), F64(v[20].arr), v[18].arr.shape[0]};
    int64_t N = rec_y->shape[1], cap = rec_t->size - 1, dsize = B[K_dy].size;
    if (B[K_lanes].size < NC_LANES * (3 * (B[K_dy].shape[1] / 2) + B[K_mu].size)) {
        PyErr_Format(PyExc_ValueError, "core.advance_swept: Work.lanes must hold %d (3 n + m) "
                     "entries (sensitivity.LANES = NC_LANES)", NC_LANES);
        return NULL;
    }
    if (Wk2[WK_z].size < NC_LANES * 6 * P[P_size].size
        || Wk2[WK_ap].size < NC_LANES * 12 * P[P_J4].shape[0]) {
        PyErr_Format(PyExc_ValueError, "core.advance_swept: the sweep's WorkBuffers z and ap "
                     "must hold %d lanes (natcoord.linalg.blockldl.make_work)", NC_LANES);
        return NULL;
    }
    if (sweep_ctx_hooks.force_derivative != NULL
        && sweep_ctx_hooks.n_dy < B[K_dy].size) {
        PyErr_SetString(PyExc_ValueError, "core.advance_swept: the sweep hooks' dy must hold "
                        "the sweep's directions");
        return NULL;
    }
    if (sweep_ctx_hooks.drive_weights != NULL && sweep_ctx_hooks.n_dW != B[K_dW].size) {
        PyErr_SetString(PyExc_ValueError, "core.advance_swept: the sweep hooks' dW must be "
                        "the sweep Work's dW");
        return NULL;
    }
    sweep_ctx x = {T, S2, P, D, B, sweep_hk};
    nc_progress out = {0};
    int64_t n0 = 0, steps = 0, rejected = 0, swept;
    PyObject *error = NULL;
    for (;;) {
        nc_records rec = {F64(*rec_t) + n0, F64(*rec_y) + n0 * N, F64(*rec_obs) + 3 * n0,
                          I64(*rec_kind) + n0, cap - n0};
        out = nc_advance(T, S, P, Wk, hk, W7, F64(v[6].arr), mode, budget - steps - rejected,
                         eps_floor, F64(*t_eval), t_eval->size, next_out, (int)every_step,
                         drift_tol, &rec, &seg, store);
        next_out = out.next_out;
        steps += out.steps;
        rejected += out.rejected;
        /* the run's exception taken before the sweep calls Python (it sweeps the steps
         * taken before it) */
        error = nc_py_take_error(out.status);
        swept = sweep_chunk(&x, Wk2, &seg, store, out.stored, F64(S[S_ctrl])[CTRL_T_NOW],
                            F64(S[S_y]), rec.t, rec.y, out.records,
                            F64(*rec_d) + n0 * dsize);
        n0 += out.records;
        if (swept == NC_CALLBACK) {                 /* a sweep hook raised */
            Py_XDECREF(error);
            return NULL;
        }
        if (swept != 0 || !repeat || out.status != NC_FULL || out.stored < seg.capacity
            || n0 == cap)
            break;
        Py_DECREF(error);                           /* None: the round ended full */
    }
    return Py_BuildValue("LLLLLLNL", (long long)out.status, (long long)n0, (long long)next_out,
                         (long long)steps, (long long)rejected, (long long)out.stored, error,
                         (long long)swept);
}

PyMethodDef nc_sensitivity_methods[] = {
    NC_METHOD(advance_swept,
              "advance_swept(T, S, P, Wk, hooks, W7, W1, mode, budget, eps_floor, t_eval, "
              "next_out, every_step, drift_tol, rec_t, rec_y, rec_obs, rec_kind, seg_t, seg_y, "
              "seg_K, store, S2, Wk2, D, B, rec_d, repeat, sweep_hooks) -> (status, records, "
              "next_out, steps, rejected, stored, error, swept): the stepper's advance in "
              "rounds of the store's capacity, each round's derivatives swept on its kept "
              "stage factorizations (docs/method.md#18-sensitivities)."),
    {NULL, NULL, 0, NULL},
};
