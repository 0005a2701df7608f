/* The DOPRI5 step with projection and dense output, and the chunked advance with
 * outputs (docs/method.md#17-integration).
 *
 * One step attempt runs the seven stages of the Dormand–Prince 5(4) pair on the
 * index-1 descriptor form (docs/method.md#15-descriptor-form: ṗ = v, v̇ = a with
 * [[M, Gᵀ], [G, 0]] [a; λ] = [f; γ]), each stage evaluating the constraints, the
 * forces, the block factorization with constraint partitioning
 * (docs/method.md#16-linear-solve, blockldl.c) and its solve; then the error norm, the
 * PI controller and, for an accepted step, the simplified Newton projection of
 * positions and velocities.
 * This is natcoord's one DOPRI5: every model and every KKT backend runs it, the parts
 * the core does not compile (forces and drive laws written in Python, the reference
 * backends' factor and solve) called back through an nc_hooks table (dopri5.h).
 *
 * y = (p, v) has N = 2 n entries (n = 12 bodies' coordinates); X, V are p, v as
 * (4 bodies, 3) slot arrays. The kernels allocate nothing: all buffers are the
 * Buffers S (nc_fields.h) that Python preallocates per run. */
#include <float.h>

#include "dopri5.h"

/* step-size controller (Hairer, Nørsett & Wanner I, II.4) */
#define SAFETY 0.9
#define BETA 0.04
#define FAC_MIN 0.2
#define FAC_MAX 10.0
/* projection (natcoord's one rule, for the integrators and the assembly alike):
 * refactor when an iteration contracts less than CONTRACTION; converge kept rows to
 * MARGIN × the tolerance times the mechanism's size factor min(1, L / 1 m)
 * (Tables.size_factor, core_tables.size_factor), raised to its round-off floor
 * ROUNDOFF ε max_rows |G| |x|, in at most MAX_NEWTON iterations (dopri5.h: the failure
 * messages name the last two) */
#define CONTRACTION 0.01
#define MARGIN NC_PROJECTION_MARGIN
#define ROUNDOFF 10.0
#define MAX_NEWTON NC_PROJECTION_MAX_ITER

const double NC_A_DENSE[7][7] = {
    {0.0},
    {1.0 / 5},
    {3.0 / 40, 9.0 / 40},
    {44.0 / 45, -56.0 / 15, 32.0 / 9},
    {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
    {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
    {35.0 / 384, 0.0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84},
};
const double NC_B_DENSE[7] = {35.0 / 384, 0.0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784,
                              11.0 / 84, 0.0};
const double NC_C_DENSE[7] = {0.0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1.0, 1.0};
const double NC_D_DENSE[7] = {-12715105075.0 / 11282082432.0, 0.0,
                              87487479700.0 / 32700410799.0, -10690763975.0 / 1880347072.0,
                              701980252875.0 / 199316789632.0, -1453857185.0 / 822651844.0,
                              69997945.0 / 29380423.0};
const double NC_E_DENSE[7] = {71.0 / 57600, 0.0, -71.0 / 16695, 71.0 / 1920,
                              -17253.0 / 339200, 22.0 / 525, -1.0 / 40};

/* max and min of two floats, the first unless the second is larger (smaller): NaN in
 * the second argument leaves the first */
static inline double py_max(double a, double b)
{
    return b > a ? b : a;
}

static inline double py_min(double a, double b)
{
    return b < a ? b : a;
}

/* ------------------------------------------------------------ stage sums */
/* out = Σ_j a_j K[j] over the first s rows of K (s, N): one pass over out, the s ≤ 7
 * terms of an entry summed in a register in order j = 0, 1, … */
static void combine(const double *a, int s, const double *K, int64_t N, double *out)
{
    for (int64_t i = 0; i < N; i++) {
        double sum = 0.0;
        for (int j = 0; j < s; j++)
            sum += a[j] * K[j * N + i];
        out[i] = sum;
    }
}

/* ------------------------------------------------------------ linear algebra */
void nc_evaluate_constraints(const nc_arr *T, const nc_arr *S, const double *X,
                             const double *V, const double *W)
{
    nc_constraints(T, X, V, W, F64(S[S_g]), F64(S[S_g_t]), F64(S[S_gamma]), F64(S[S_G]),
                   S[S_g].size, S[S_G].shape[0]);
}

/* S.g, S.g_t and S.G at (X, V): nc_evaluate_constraints without γ, which only the
 * right-hand side solves with (a projection's and a check's evaluations leave S.gamma
 * as the last one left it) */
static void evaluate_geometry(const nc_arr *T, const nc_arr *S, const double *X,
                              const double *V, const double *W)
{
    nc_constraints(T, X, V, W, F64(S[S_g]), F64(S[S_g_t]), NULL, F64(S[S_G]), S[S_g].size,
                   S[S_G].shape[0]);
}

/* S.Gv = G v + g_t for the Jacobian in S.G */
static void velocity_residual(const nc_arr *T, const nc_arr *S, const double *V)
{
    double *Gv = F64(S[S_Gv]);
    const double *g_t = F64(S[S_g_t]);
    nc_jacobian_times(I64(T[T_pattern_row]), I64(T[T_pattern_slot]), T[T_pattern_row].size,
                      F64(S[S_G]), V, Gv, S[S_Gv].size);
    for (int64_t r = 0; r < S[S_Gv].size; r++)
        Gv[r] += g_t[r];
}

/* Hysteresis of the partitioning (KKTSolver._update_thresholds): a dropped row keeps
 * being dropped until its pivot exceeds hold_tol, a kept one until it falls below
 * drop_tol (docs/method.md#16-linear-solve), after the block factorization returned
 * status with where and count dropped rows. A failure is returned as a step status,
 * never as nc_factor_kernel's own code. */
static int64_t partitioned(const nc_arr *S, const nc_arr *Wk, int64_t status, int64_t where,
                           int64_t count)
{
    int64_t *counts = I64(S[S_counts]);
    if (status != NC_FACTORED) {
        counts[NC_FAIL_WHERE] = where;
        if (status == NC_FACTOR_SINGULAR_FRAME)
            return NC_SINGULAR_FRAME;
        if (status == NC_FACTOR_NOT_POSITIVE_DEFINITE)
            return NC_NOT_POSITIVE_DEFINITE;
        return NC_UNPIVOTABLE_JOINT;
    }
    uint8_t *mask = BOOL(S[S_mask]);
    double *threshold = F64(S[S_threshold]);
    const double *ctrl = F64(S[S_ctrl]);
    const int64_t *dropped = I64(Wk[WK_dropped]);
    int64_t n_joint = S[S_threshold].size, n_rigid = S[S_mask].size - n_joint;
    memset(mask, 0, S[S_mask].size);
    for (int64_t r = 0; r < n_joint; r++)
        threshold[r] = ctrl[CTRL_DROP_TOL];
    for (int64_t k = 0; k < count; k++) {
        mask[n_rigid + dropped[k]] = 1;
        threshold[dropped[k]] = ctrl[CTRL_HOLD_TOL];
    }
    counts[NC_N_FACT]++;
    return 0;
}

int64_t nc_factor(const nc_arr *S, const nc_arr *P, const nc_arr *Wk, const nc_hooks *hk)
{
    int64_t where = 0, count = 0;
    if (hk != NULL && hk->factor != NULL) {      /* a reference backend: its own hysteresis */
        int64_t status = hk->factor(hk->ctx, F64(S[S_G]), BOOL(S[S_mask]));
        if (status == 0)
            I64(S[S_counts])[NC_N_FACT]++;
        return status;
    }
    int64_t status = nc_factor_kernel(F64(S[S_G]), F64(S[S_threshold]), P, Wk, &where, &count);
    return partitioned(S, Wk, status, where, count);
}

void nc_set_dropped(const nc_arr *S, const uint8_t *mask)
{
    double *threshold = F64(S[S_threshold]);
    const double *ctrl = F64(S[S_ctrl]);
    int64_t n_joint = S[S_threshold].size, n_rigid = S[S_mask].size - n_joint;
    memcpy(BOOL(S[S_mask]), mask, S[S_mask].size);
    for (int64_t k = 0; k < n_joint; k++)
        threshold[k] = mask[n_rigid + k] ? ctrl[CTRL_HOLD_TOL] : ctrl[CTRL_DROP_TOL];
}

/* Outputs must neither see each other's dropped sets nor change the steps'. Chained, a
 * row an output dropped at a singular pose stayed dropped from output to output (its
 * pivot below hold_tol) long after it stopped being redundant, and failed the check:
 * the four-bar with 1001 outputs in [0.708, 0.709] at t = 0.70852 (‖G v + g_t‖
 * 1.05e-10 in top1.1: x), while 101 outputs passed; and the step sequence depended on
 * t_eval. */
void nc_hold_for_output(const nc_arr *S)
{
    double *ctrl = F64(S[S_ctrl]);
    if (ctrl[CTRL_HOLDING] == 0.0) {
        memcpy(BOOL(S[S_held]), BOOL(S[S_mask]), S[S_mask].size);
        ctrl[CTRL_HOLDING] = 1.0;
    } else {
        nc_set_dropped(S, BOOL(S[S_held]));
    }
}

void nc_resume(const nc_arr *S)
{
    double *ctrl = F64(S[S_ctrl]);
    if (ctrl[CTRL_HOLDING] != 0.0) {
        nc_set_dropped(S, BOOL(S[S_held]));
        ctrl[CTRL_HOLDING] = 0.0;
    }
}

void nc_stage_work(const nc_arr *Wk, const nc_arr *store, int64_t m, int64_t s, nc_arr *out)
{
    static const int fields[5][2] = {{WK_B, FS_B}, {WK_inv, FS_inv}, {WK_E, FS_E},
                                     {WK_F, FS_F}, {WK_Gj, FS_Gj}};
    memcpy(out, Wk, WK_COUNT * sizeof(nc_arr));
    for (int f = 0; f < 5; f++) {
        nc_arr *a = &out[fields[f][0]];
        a->p = (char *)(F64(store[fields[f][1]]) + (6 * m + s) * a->size);
    }
}

/* the multipliers S.lam and the dropped rows S.mask of a stage to store[m, s]: the
 * sweep's right-hand side reads the multipliers, and a reference backend's
 * factorization (not kept) is redone by the sweep from that stage's dropped rows */
static void keep_stage(const nc_arr *S, const nc_arr *store, int64_t m, int64_t s)
{
    int64_t rows = S[S_lam].size;
    memcpy(F64(store[FS_lam]) + (6 * m + s) * rows, F64(S[S_lam]), rows * sizeof(double));
    memcpy(BOOL(store[FS_mask]) + (6 * m + s) * rows, BOOL(S[S_mask]), rows);
}

/* copy the factor in Wk and the stage's multipliers and dropped rows to store[m, s] */
static void keep_factor(const nc_arr *Wk, const nc_arr *S, const nc_arr *store, int64_t m,
                        int64_t s)
{
    nc_arr kept[WK_COUNT];
    nc_stage_work(Wk, store, m, s, kept);
    for (int f = WK_B; f <= WK_Gj; f++)
        memcpy(kept[f].p, Wk[f].p, Wk[f].size * sizeof(double));
    keep_stage(S, store, m, s);
}

/* ------------------------------------------------------------ evaluations */
int64_t nc_weights_at(const nc_arr *T, const nc_hooks *hk, double t, double *W)
{
    if (hk != NULL && hk->weights != NULL)
        return hk->weights(hk->ctx, t, W);
    if (T[T_laws_weight_kind].size > 0)
        nc_fill_weights(&T[T_laws_weight_kind], t, W);
    return 0;
}

int64_t nc_rhs(const nc_arr *T, const nc_arr *S, const nc_arr *P, const nc_arr *Wk,
               const nc_hooks *hk, double t, const double *y, const double *W, int64_t mode,
               double *out)
{
    int64_t n = S[S_x].size, m = S[S_s].size;
    const double *X = y, *V = y + n;
    double *s = F64(S[S_s]);
    const double *gamma = F64(S[S_gamma]);
    nc_evaluate_constraints(T, S, X, V, W);
    nc_generalized_forces(T, X, V, F64(S[S_F]));
    if (hk != NULL && hk->forces != NULL) {
        int64_t status = hk->forces(hk->ctx, t, y, F64(S[S_F]));
        if (status != 0)
            return status;
    }
    if (mode == NC_BAUMGARTE) {          /* γ − 2α (G v + g_t) − β² g */
        const double *ctrl = F64(S[S_ctrl]), *Gv = F64(S[S_Gv]), *g = F64(S[S_g]);
        double alpha = ctrl[CTRL_ALPHA], beta = ctrl[CTRL_BETA_B];
        velocity_residual(T, S, V);
        for (int64_t r = 0; r < m; r++)
            s[r] = gamma[r] - 2.0 * alpha * Gv[r] - beta * beta * g[r];
    } else {
        memcpy(s, gamma, m * sizeof(double));
    }
    /* the block solver factors and solves in one sweep (nc_factor_solve_kernel: the
     * same bits as nc_factor then nc_kkt_solve, 3.5 % faster on chain(512)); a reference
     * backend's hooks in two calls */
    const int hooked = hk != NULL && (hk->factor != NULL || hk->solve != NULL);
    int64_t status, where = 0, count = 0;
    if (hooked) {
        status = nc_factor(S, P, Wk, hk);
    } else {
        status = nc_factor_solve_kernel(F64(S[S_G]), F64(S[S_threshold]), P, Wk, &where, &count,
                                        F64(S[S_F]), s, F64(S[S_x]), F64(S[S_lam]));
        status = partitioned(S, Wk, status, where, count);
    }
    if (status != 0)
        return status;
    int64_t *counts = I64(S[S_counts]);
    uint8_t *mask = BOOL(S[S_mask]), *rhs_mask = BOOL(S[S_rhs_mask]);
    counts[NC_N_RHS]++;
    if (counts[NC_N_RHS] > 1 && memcmp(mask, rhs_mask, m) != 0)
        counts[NC_N_ACTIVE]++;               /* the dropped rows changed */
    memcpy(rhs_mask, mask, m);
    if (hooked) {
        status = nc_kkt_solve(P, Wk, hk, F64(S[S_F]), s, F64(S[S_x]), F64(S[S_lam]));
        if (status != 0)
            return status;
    }
    memmove(out, y + n, n * sizeof(double));
    memcpy(out + n, F64(S[S_x]), n * sizeof(double));
    return 0;
}

/* largest |a_i| over i < len not skipped (skip NULL: all), 0 for none; NaN passed over
 * as py_max does. Four partial maxima, one dependent comparison per four entries: the
 * result does not depend on the order */
static double abs_max(const double *a, const uint8_t *skip, int64_t len)
{
    double top[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t i = 0;
    for (; i + 4 <= len; i += 4)
        for (int j = 0; j < 4; j++)
            top[j] = py_max(top[j], skip && skip[i + j] ? 0.0 : fabs(a[i + j]));
    for (; i < len; i++)
        top[0] = py_max(top[0], skip && skip[i] ? 0.0 : fabs(a[i]));
    return py_max(py_max(top[0], top[1]), py_max(top[2], top[3]));
}

/* largest |r| over the kept rows */
static double kept_max(const nc_arr *S, const double *r)
{
    return abs_max(r, BOOL(S[S_mask]), S[S_mask].size);
}

/* max over the m rows of |G| |x| (+ |rate|): the size of the terms a residual row sums
 * (rate NULL: none, the positions' g). Rows in order: the tables keep the pattern sorted
 * by row (ConstraintTables), so each row's sum stays in a register. */
static double threshold_top(const nc_arr *T, int64_t m, const double *G, const double *rate,
                            const double *x)
{
    const int64_t *row = I64(T[T_pattern_row]), *slot = I64(T[T_pattern_slot]);
    int64_t nnz = T[T_pattern_row].size, k = 0;
    double top = 0.0;
    for (int64_t r = 0; r < m; r++) {
        double sum = 0.0;
        for (; k < nnz && row[k] == r; k++) {
            const double *Gk = G + 3 * k, *xs = x + 3 * slot[k];
            sum += fabs(Gk[0]) * fabs(xs[0]) + fabs(Gk[1]) * fabs(xs[1])
                   + fabs(Gk[2]) * fabs(xs[2]);
        }
        if (rate != NULL)
            sum += fabs(rate[r]);
        top = py_max(top, sum);
    }
    return top;
}

/* An upper bound of threshold_top in one pass over G and x without the rows: every
 * block of G is in one row, so a row's Σ |G_k| |x| is at most ‖x‖∞ Σ_k ‖G_k‖₁ over all
 * blocks (+ max |g_t|). Doubled, it stays a bound whatever the rounding of either side's
 * sums (relative errors of the order 3 nnz ε); the four partial sums only make the pass
 * short (threshold_top adds each row in order, one dependent addition after another). */
static double top_bound(const nc_arr *T, const nc_arr *S, const double *x, int velocity)
{
    const double *G = F64(S[S_G]), *g_t = F64(S[S_g_t]);
    int64_t len = 3 * T[T_pattern_row].size, i = 0;
    double sum[4] = {0.0, 0.0, 0.0, 0.0};
    for (; i + 4 <= len; i += 4)
        for (int j = 0; j < 4; j++)
            sum[j] += fabs(G[i + j]);
    for (; i < len; i++)
        sum[0] += fabs(G[i]);
    double rate = velocity ? abs_max(g_t, NULL, S[S_g_t].size) : 0.0;
    return 2.0 * (((sum[0] + sum[1]) + (sum[2] + sum[3])) * abs_max(x, NULL, S[S_x].size)
                  + rate);
}

/* max(tol, ROUNDOFF ε top), top = threshold_top: the tolerance a residual summing terms
 * of size |G| |x| can be held to */
static inline double threshold_of(double top, double tol)
{
    return py_max(tol, ROUNDOFF * DBL_EPSILON * top);
}

double nc_threshold(const nc_arr *T, int64_t m, const double *G, const double *rate,
                    const double *x, double tol)
{
    return threshold_of(threshold_top(T, m, G, rate, x), tol);
}

/* Simplified Newton (projection._simplified_newton) on x (n,) in place: the residual
 * g(x) (other = v) or, with `velocity`, G v + g_t with S.G, S.g_t as evaluated
 * (x = v); [[M, Gᵀ], [G, 0]] [Δx; μ] = [0; −r] with the current factorization,
 * refactored at x when an iteration contracts less than CONTRACTION (fresh: before
 * the first solve). Kept rows are converged to MARGIN × tol × T.size_factor, raised to
 * its round-off floor (threshold). Returns 0, a failed factorization's step status, or
 * −1 when not converged (ctrl[FAIL_RESIDUAL], ctrl[FAIL_TARGET]); *iterations the
 * solves. */
static int64_t newton(const nc_arr *T, const nc_arr *S, const nc_arr *P, const nc_arr *Wk,
                      const nc_hooks *hk, double *x, const double *other, const double *W, int velocity,
                      double tol, int fresh, int64_t *iterations, double *top)
{
    int64_t n = S[S_x].size, m = S[S_s].size;
    double *s = F64(S[S_s]), *dx = F64(S[S_x]), *ctrl = F64(S[S_ctrl]);
    const double *r = velocity ? F64(S[S_Gv]) : F64(S[S_g]);
    double previous = fresh ? 0.0 : INFINITY, size = 0.0, target = 0.0;
    for (int64_t it = 0; it < MAX_NEWTON; it++) {
        if (velocity)
            velocity_residual(T, S, x);
        else
            evaluate_geometry(T, S, x, other, W);
        size = kept_max(S, r);
        *iterations = it;
        /* The target MARGIN threshold_of(top, tol size_factor) is the larger of floor =
         * MARGIN tol size_factor and MARGIN ROUNDOFF ε top: below floor, converged
         * without top; above MARGIN ROUNDOFF ε top_bound (≥ that of top) and floor, not
         * converged without top either — an output's first iterate, some 1e-7 off the
         * manifold, is, and threshold_top was most of its cost beyond the factorization
         * and solves. Top itself only in between, and on the last iteration for the
         * failure's target. *top −1: not computed. */
        double floor = MARGIN * (tol * SCALAR(T[T_size_factor]));
        *top = -1.0;
        target = floor;
        if (size <= floor)
            return 0;
        if (size <= MARGIN * ROUNDOFF * DBL_EPSILON * top_bound(T, S, x, velocity) ||
            it == MAX_NEWTON - 1) {
            *top = threshold_top(T, m, F64(S[S_G]), velocity ? F64(S[S_g_t]) : NULL, x);
            target = MARGIN * threshold_of(*top, tol * SCALAR(T[T_size_factor]));
            if (size <= target)
                return 0;
        }
        if (size > CONTRACTION * previous) {
            int64_t status = nc_factor(S, P, Wk, hk);
            if (status != 0)
                return status;
        }
        previous = size;
        for (int64_t i = 0; i < m; i++)
            s[i] = -r[i];
        int64_t status = nc_kkt_solve(P, Wk, hk, F64(S[S_zero]), s, dx, F64(S[S_lam]));
        if (status != 0)
            return status;
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] + dx[i];
    }
    ctrl[CTRL_FAIL_RESIDUAL] = size;
    ctrl[CTRL_FAIL_TARGET] = target;
    *iterations = MAX_NEWTON;
    return -1;
}

/* Positions, then velocities (mode 1: velocities only), docs/method.md#17-integration:
 * a step's projection starts from its last stage's factorization (taken at the
 * unprojected end point, within the local error of the manifold: one or two
 * iterations); an output, up to a step away from it, is factored at its own point
 * first (fresh). Leaves S evaluated (evaluate) at the projected y; tops (if not NULL): threshold_top of the
 * positions and the velocities there (mode 0), −1 where newton did not need it. */
static int64_t project(const nc_arr *T, const nc_arr *S, const nc_arr *P, const nc_arr *Wk,
                       const nc_hooks *hk, double *y, const double *W, int64_t mode, double tol, int fresh,
                       double *tops)
{
    int64_t n = S[S_x].size, k = 0, status;
    int64_t *counts = I64(S[S_counts]);
    double *p = y, *v = y + n, top[2];
    if (mode == NC_PROJECT_POSITIONS_AND_VELOCITIES) {
        status = newton(T, S, P, Wk, hk, p, v, W, 0, tol, fresh, &k, &top[0]);
        if (status != 0)
            return status < 0 ? NC_POSITION_PROJECTION : status;
        counts[NC_N_PROJ] += k;
        fresh = fresh && k == 0;
    }
    if (mode == NC_PROJECT_POSITIONS_AND_VELOCITIES || mode == NC_PROJECT_VELOCITIES) {
        if (mode == NC_PROJECT_VELOCITIES)
            evaluate_geometry(T, S, p, v, W);
        status = newton(T, S, P, Wk, hk, v, p, W, 1, tol, fresh, &k, &top[1]);
        if (status != 0)
            return status < 0 ? NC_VELOCITY_PROJECTION : status;
        counts[NC_N_PROJ] += k;
    }
    if (tops != NULL && mode == NC_PROJECT_POSITIONS_AND_VELOCITIES)
        tops[0] = top[0], tops[1] = top[1];
    return 0;
}

int64_t nc_project(const nc_arr *T, const nc_arr *S, const nc_arr *P, const nc_arr *Wk,
                   const nc_hooks *hk, double *y, const double *W, int64_t mode, double tol,
                   int fresh)
{
    return project(T, S, P, Wk, hk, y, W, mode, tol, fresh, NULL);
}

/* S.g, S.g_t, S.G and S.Gv = G v + g_t at y */
static void evaluate(const nc_arr *T, const nc_arr *S, const double *y, const double *W)
{
    int64_t n = S[S_x].size;
    evaluate_geometry(T, S, y, y + n, W);
    velocity_residual(T, S, y + n);
}

/* obs = (energy, ‖g‖∞, ‖G v + g_t‖∞) at y (all rows); `evaluated`: S holds evaluate(y) */
static void observe(const nc_arr *T, const nc_arr *S, const double *y, const double *W,
                    int evaluated, double *obs)
{
    const double *g = F64(S[S_g]), *Gv = F64(S[S_Gv]);
    double g_max = 0.0, gv_max = 0.0;
    if (!evaluated)
        evaluate(T, S, y, W);
    for (int64_t r = 0; r < S[S_g].size; r++) {
        g_max = py_max(g_max, fabs(g[r]));
        gv_max = py_max(gv_max, fabs(Gv[r]));
    }
    obs[0] = nc_energy(T, y, y + S[S_x].size);
    obs[1] = g_max;
    obs[2] = gv_max;
}

/* ------------------------------------------------------------------ the step */
double nc_clip_step(double h, double t, double t_bound, double eps_floor)
{
    double remaining = t_bound - t;
    return h > remaining - eps_floor * py_max(fabs(t_bound), 1.0) ? remaining : h;
}

/* One attempt from (ctrl[T_NOW], S.y) with h = ctrl[H]: K[s] = f(t + c_s h,
 * y + h Σ a_sj K[j]), K[0] the FSAL value S.f; y_new = y + h Σ b_j K[j]; the error
 * ‖h Σ e_j K[j] / (atol + rtol max(|y|, |y_new|))‖_rms in ctrl[ERR]. Accepted
 * (err ≤ 1): projected into S.yproj. W7[s]: the weight table at t + c_s h (filled here
 * from compiled laws). A non-empty store keeps the stage factorizations at store[m]:
 * stages 1–5 are factored in place there, stage 6 in Wk (which the projection goes on
 * with) is copied, and whether the projection factored again (FS_refactored). */
static int64_t attempt(const nc_arr *T, const nc_arr *S, const nc_arr *P, const nc_arr *Wk,
                       const nc_hooks *hk, const nc_arr *W7, int64_t mode, const nc_arr *store, int64_t m)
{
    int64_t N = S[S_y].size, table = W7->size / 7;
    double *K = F64(S[S_K]), *y = F64(S[S_y]), *ys = F64(S[S_ystage]), *yn = F64(S[S_ynew]);
    double *comb = F64(S[S_comb]), *ctrl = F64(S[S_ctrl]);
    double t = ctrl[CTRL_T_NOW], h = ctrl[CTRL_H];
    int keep = store[FS_lam].shape[0] > 0;
    nc_arr stage_work[WK_COUNT];
    memcpy(K, F64(S[S_f]), N * sizeof(double));
    for (int s = 1; s < 7; s++) {
        double *W = F64(*W7) + s * table;
        combine(NC_A_DENSE[s], s, K, N, comb);
        for (int64_t i = 0; i < N; i++)
            ys[i] = y[i] + h * comb[i];
        int64_t status = nc_weights_at(T, hk, t + NC_C_DENSE[s] * h, W);
        if (status != 0)
            return status;
        const nc_arr *Ws = Wk;
        if (keep && s < 6) {
            nc_stage_work(Wk, store, m, s - 1, stage_work);
            Ws = stage_work;
        }
        status = nc_rhs(T, S, P, Ws, hk, t + NC_C_DENSE[s] * h, ys, W, mode, K + s * N);
        if (status != 0)
            return status;
        if (keep && s < 6)
            keep_stage(S, store, m, s - 1);
    }
    if (keep)
        keep_factor(Wk, S, store, m, 5);
    double rtol = ctrl[CTRL_RTOL], atol = ctrl[CTRL_ATOL];
    combine(NC_B_DENSE, 6, K, N, comb);
    for (int64_t i = 0; i < N; i++)
        yn[i] = y[i] + h * comb[i];
    combine(NC_E_DENSE, 7, K, N, comb);
    double sum = 0.0;                  /* the error's RMS norm (Hairer I, II.4, eq. 4.11) */
    for (int64_t i = 0; i < N; i++) {
        double q = h * comb[i] / (atol + rtol * py_max(fabs(y[i]), fabs(yn[i])));
        sum += q * q;
    }
    double err = sqrt(sum / N);
    ctrl[CTRL_ERR] = err;
    if (!isfinite(err))
        return NC_NON_FINITE;
    if (err > 1.0)
        return NC_REJECTED;
    memcpy(F64(S[S_yproj]), yn, N * sizeof(double));
    if (mode > NC_PROJECT_VELOCITIES)
        return NC_ACCEPTED;
    int64_t *counts = I64(S[S_counts]), factored = counts[NC_N_FACT];
    int64_t status = nc_project(T, S, P, Wk, hk, F64(S[S_yproj]), F64(*W7) + 6 * table, mode,
                                ctrl[CTRL_PROJ_TOL], 0);
    if (keep)       /* the sweep projects with stage 6's factorization unless this is set */
        BOOL(store[FS_refactored])[m] = counts[NC_N_FACT] != factored;
    return status;
}

/* Attempts until one is accepted, a failure, or max_attempts: h ← clip_step(h); an
 * error rejection shrinks h by max(FAC_MIN, SAFETY err^−0.2), a failed evaluation by
 * 0.25 (below 1e-12 max(|t_bound|, 1) its status is returned); an accepted step moves
 * y ← y_proj (FSAL: f ← K[6] with ṗ = v at the projected state) and sets the next h
 * by the PI controller (Gustafsson, β = 0.04). NC_UNDERFLOW: h under the floor. Starts
 * from the integrator's own dropped set, whatever outputs factored since (nc_resume). */
int64_t nc_step(const nc_arr *T, const nc_arr *S, const nc_arr *P, const nc_arr *Wk,
                const nc_hooks *hk, const nc_arr *W7, int64_t mode, int64_t max_attempts, double eps_floor,
                const nc_arr *store, int64_t m, int64_t *rejected)
{
    double *c = F64(S[S_ctrl]), *y = F64(S[S_y]), *f = F64(S[S_f]);
    int64_t N = S[S_y].size, n = N / 2;
    *rejected = 0;
    nc_resume(S);
    for (int64_t k = 0; k < max_attempts; k++) {
        double t = c[CTRL_T_NOW];
        c[CTRL_H] = nc_clip_step(c[CTRL_H], t, c[CTRL_T_BOUND], eps_floor);
        if (c[CTRL_H] < eps_floor * py_max(fabs(t), 1.0))
            return NC_UNDERFLOW;
        int64_t status = attempt(T, S, P, Wk, hk, W7, mode, store, m);
        if (status == NC_REJECTED) {
            ++*rejected;
            c[CTRL_H] *= py_max(FAC_MIN, SAFETY * pow(c[CTRL_ERR], -0.2));
            c[CTRL_LAST_REJECTED] = 1.0;
            continue;
        }
        if (status == NC_CALLBACK)          /* a Python exception: the run's, not the step's */
            return status;
        if (status != NC_ACCEPTED) {
            if (c[CTRL_H] < 1e-12 * py_max(fabs(c[CTRL_T_BOUND]), 1.0))
                return status;
            c[CTRL_H] *= 0.25;
            ++*rejected;
            c[CTRL_LAST_REJECTED] = 1.0;
            continue;
        }
        double err = c[CTRL_ERR], h = c[CTRL_H];
        memcpy(F64(S[S_yprev]), y, N * sizeof(double));
        memcpy(y, F64(S[S_yproj]), N * sizeof(double));
        memcpy(F64(S[S_ynewacc]), F64(S[S_ynew]), N * sizeof(double));
        memcpy(F64(S[S_Kacc]), F64(S[S_K]), 7 * N * sizeof(double));
        memcpy(f, F64(S[S_K]) + 6 * N, N * sizeof(double));
        memcpy(f, y + n, n * sizeof(double));
        c[CTRL_T_PREV] = t;
        c[CTRL_T_NOW] = h == c[CTRL_T_BOUND] - t ? c[CTRL_T_BOUND] : t + h;
        c[CTRL_H_ACC] = h;
        double fac = pow(err, 0.2 - 0.75 * BETA) / pow(c[CTRL_ERR_OLD], BETA);
        double fct = py_min(FAC_MAX, py_max(FAC_MIN, SAFETY / py_max(fac, 1e-10)));
        if (c[CTRL_LAST_REJECTED] != 0.0)
            fct = py_min(fct, 1.0);
        c[CTRL_H] = py_min(h * fct, c[CTRL_MAX_STEP]);
        c[CTRL_ERR_OLD] = py_max(err, 1e-4);
        c[CTRL_LAST_REJECTED] = 0.0;
        return NC_ACCEPTED;
    }
    return NC_MAX_ATTEMPTS;
}

/* ------------------------------------------------------------------ many steps */
void nc_interpolate(const double *y0, const double *y1, const double *K, double h,
                    double theta, int64_t N, double *out)
{
    const double *K6 = K + 6 * N;
    combine(NC_D_DENSE, 7, K, N, out);          /* D K, then the interpolant in place */
    for (int64_t i = 0; i < N; i++) {
        double dy = y1[i] - y0[i];
        double r3 = h * K[i] - dy;
        double r4 = dy - h * K6[i] - r3;
        double r5 = h * out[i];
        out[i] = y0[i] + theta * (dy + (1 - theta) * (r3 + theta * (r4 + (1 - theta) * r5)));
    }
}

/* True where simulate's check would act on y (locking aside): with position+velocity
 * projection a row, kept or dropped, of g or G v + g_t above its threshold; otherwise
 * a residual above drift_tol. `evaluated`: S holds evaluate(y) (as nc_project leaves
 * it in modes 0 and 1); either way it does on return. tops: threshold_top of y's
 * positions and velocities where known (project's; −1 or NULL: not known). */
static int violated(const nc_arr *T, const nc_arr *S, const double *y, const double *W,
                    int64_t mode, double tol, double drift_tol, int evaluated,
                    const double *tops)
{
    int64_t n = S[S_x].size, m = S[S_g].size;
    const double *g = F64(S[S_g]), *Gv = F64(S[S_Gv]);
    if (!evaluated)
        evaluate(T, S, y, W);
    if (mode == NC_PROJECT_POSITIONS_AND_VELOCITIES) {
        /* the thresholds are at least tol: within it, no row is above them */
        int64_t r = 0;
        while (r < m && !(fabs(g[r]) > tol || fabs(Gv[r]) > tol))
            r++;
        if (r == m)
            return 0;
        const double *G = F64(S[S_G]), *g_t = F64(S[S_g_t]);
        double top_p = tops && tops[0] >= 0.0 ? tops[0] : threshold_top(T, m, G, NULL, y);
        double top_v = tops && tops[1] >= 0.0 ? tops[1] : threshold_top(T, m, G, g_t, y + n);
        double tol_p = threshold_of(top_p, tol), tol_v = threshold_of(top_v, tol);
        for (r = 0; r < m; r++)
            if (fabs(g[r]) > tol_p || fabs(Gv[r]) > tol_v)
                return 1;
        return 0;
    }
    double size = 0.0;
    for (int64_t r = 0; r < m; r++) {
        size = py_max(py_max(size, fabs(g[r])), fabs(Gv[r]));
    }
    return size > drift_tol;
}

/* record y (as violated has just evaluated it) at row k */
static void record(const nc_arr *T, const nc_arr *S, const double *W, double t,
                   const double *y, int64_t kind, int64_t k, const nc_records *rec)
{
    int64_t N = S[S_y].size;
    rec->t[k] = t;
    if (rec->y + k * N != y)
        memcpy(rec->y + k * N, y, N * sizeof(double));
    rec->kind[k] = kind;
    observe(T, S, y, W, 1, rec->obs + 3 * k);
}

/* nc_project of an output from the integrator's dropped set (nc_hold_for_output), its
 * work counted in OUT_FACT and OUT_PROJ */
static int64_t project_output(const nc_arr *T, const nc_arr *S, const nc_arr *P,
                              const nc_arr *Wk, const nc_hooks *hk, double *y, const double *W, int64_t mode,
                              double *tops)
{
    nc_hold_for_output(S);
    int64_t *counts = I64(S[S_counts]);
    int64_t fact = counts[NC_N_FACT], proj = counts[NC_N_PROJ];
    int64_t status = project(T, S, P, Wk, hk, y, W, mode, F64(S[S_ctrl])[CTRL_PROJ_TOL], 1,
                             tops);
    counts[NC_OUT_FACT] += counts[NC_N_FACT] - fact;
    counts[NC_OUT_PROJ] += counts[NC_N_PROJ] - proj;
    return status;
}

/* ------------------------------------------------------------ DOPRI5 as a stepper */
/* what DOPRI5's table (nc_advance) reads */
typedef struct {
    const nc_arr *T, *S, *P, *Wk, *W7, *store;
    const nc_hooks *hk;
    int64_t mode;
} dopri5_ctx;

static int64_t dopri5_step(void *ctx, int64_t max_attempts, double eps_floor, int64_t k,
                           int64_t *rejected)
{
    const dopri5_ctx *x = ctx;
    return nc_step(x->T, x->S, x->P, x->Wk, x->hk, x->W7, x->mode, max_attempts, eps_floor,
                   x->store, k, rejected);
}

static void dopri5_interpolate(void *ctx, double t, double *out)
{
    const nc_arr *S = ((const dopri5_ctx *)ctx)->S;
    const double *c = F64(S[S_ctrl]);
    nc_interpolate(F64(S[S_yprev]), F64(S[S_ynewacc]), F64(S[S_Kacc]), c[CTRL_H_ACC],
                   (t - c[CTRL_T_PREV]) / c[CTRL_H_ACC], S[S_y].size, out);
}

/* the last accepted step's dense-output data (t_old, h; y_old, y_new; K) at k */
static void dopri5_keep(void *ctx, int64_t k, const nc_segments *seg)
{
    const nc_arr *S = ((const dopri5_ctx *)ctx)->S;
    int64_t N = S[S_y].size;
    const double *ctrl = F64(S[S_ctrl]);
    seg->t[2 * k] = ctrl[CTRL_T_PREV];
    seg->t[2 * k + 1] = ctrl[CTRL_H_ACC];
    memcpy(seg->y + 2 * k * N, F64(S[S_yprev]), N * sizeof(double));
    memcpy(seg->y + (2 * k + 1) * N, F64(S[S_ynewacc]), N * sizeof(double));
    memcpy(seg->K + 7 * k * N, F64(S[S_Kacc]), 7 * N * sizeof(double));
}

/* Accepted steps (st->step) and their records: every accepted step if every_step,
 * else the points t_eval[next_out:] the steps pass (st's dense output, projected as an
 * accepted step); every recorded state passes `violated` first. Stops when t_bound is
 * reached and its outputs written (FINISHED), the records or segments are full (FULL;
 * pending outputs are written by the next call), a state fails the check (CHECK:
 * record `records` holds it), an output's projection fails (its status, kind
 * OUTPUT_RECORD), a step fails (its status, kind STEP_RECORD), or `budget` attempts
 * are used (MAX_ATTEMPTS). */
nc_progress nc_advance_with(const nc_stepper *st, const nc_arr *T, const nc_arr *S,
                            const nc_arr *P, const nc_arr *Wk, const nc_hooks *hk, double *W1,
                            int64_t mode, int64_t budget, double eps_floor,
                            const double *t_eval, int64_t n_eval, int64_t next_out,
                            int every_step, double drift_tol, const nc_records *rec,
                            const nc_segments *seg)
{
    double *y = st->y, proj_tol = F64(S[S_ctrl])[CTRL_PROJ_TOL];
    int64_t N = S[S_y].size, cap = rec->capacity;
    nc_progress out = {0, 0, next_out, 0, 0, 0};
    for (;;) {
        while (!every_step && out.next_out < n_eval && t_eval[out.next_out] <= *st->t) {
            if (out.records == cap) {
                out.status = NC_FULL;
                return out;
            }
            double t_out = t_eval[out.next_out], *yk = rec->y + out.records * N;
            st->interpolate(st->ctx, t_out, yk);
            rec->t[out.records] = t_out;
            rec->kind[out.records] = NC_OUTPUT_RECORD;
            double tops[2];
            out.status = nc_weights_at(T, hk, t_out, W1);
            if (out.status == 0)
                out.status = project_output(T, S, P, Wk, hk, yk, W1, mode, tops);
            if (out.status != 0)
                return out;
            if (violated(T, S, yk, W1, mode, proj_tol, drift_tol,
                         mode <= NC_PROJECT_VELOCITIES,
                         mode == NC_PROJECT_POSITIONS_AND_VELOCITIES ? tops : NULL)) {
                out.status = NC_CHECK;
                return out;
            }
            record(T, S, W1, t_out, yk, NC_OUTPUT_RECORD, out.records, rec);
            out.records++;
            out.next_out++;
        }
        if (*st->t >= *st->t_bound) {
            out.status = NC_FINISHED;
            return out;
        }
        if (out.records == cap || (seg->capacity > 0 && out.stored == seg->capacity)) {
            out.status = NC_FULL;
            return out;
        }
        if (out.steps + out.rejected >= budget) {
            rec->kind[out.records] = NC_STEP_RECORD;
            out.status = NC_MAX_ATTEMPTS;
            return out;
        }
        if (hk != NULL && hk->interrupted != NULL && out.steps > 0 &&
            hk->interrupted(hk->ctx)) {          /* Ctrl-C between steps */
            rec->kind[out.records] = NC_STEP_RECORD;
            out.status = NC_CALLBACK;
            return out;
        }
        int64_t rejected;
        out.status = st->step(st->ctx, budget - out.steps - out.rejected, eps_floor,
                              out.stored, &rejected);
        out.rejected += rejected;
        if (out.status != NC_ACCEPTED) {
            rec->kind[out.records] = NC_STEP_RECORD;
            return out;
        }
        if (seg->capacity > 0)
            st->keep(st->ctx, out.stored++, seg);
        out.status = nc_weights_at(T, hk, *st->t, W1);
        if (out.status != 0) {
            rec->kind[out.records] = NC_STEP_RECORD;
            return out;
        }
        if (violated(T, S, y, W1, mode, proj_tol, drift_tol, 0, NULL)) {
            rec->t[out.records] = *st->t;
            rec->kind[out.records] = NC_STEP_RECORD;
            memcpy(rec->y + out.records * N, y, N * sizeof(double));
            out.status = NC_CHECK;
            return out;
        }
        out.steps++;
        if (every_step) {
            record(T, S, W1, *st->t, y, NC_STEP_RECORD, out.records, rec);
            out.records++;
        }
    }
}

nc_progress nc_advance(const nc_arr *T, const nc_arr *S, const nc_arr *P, const nc_arr *Wk,
                       const nc_hooks *hk, const nc_arr *W7, double *W1, int64_t mode, int64_t budget,
                       double eps_floor, const double *t_eval, int64_t n_eval,
                       int64_t next_out, int every_step, double drift_tol,
                       const nc_records *rec, const nc_segments *seg, const nc_arr *store)
{
    dopri5_ctx x = {T, S, P, Wk, W7, store, hk, mode};
    double *c = F64(S[S_ctrl]);
    nc_stepper st = {&x, dopri5_step, dopri5_interpolate, dopri5_keep, F64(S[S_y]),
                     &c[CTRL_T_NOW], &c[CTRL_T_BOUND]};
    return nc_advance_with(&st, T, S, P, Wk, hk, W1, mode, budget, eps_floor, t_eval, n_eval,
                           next_out, every_step, drift_tol, rec, seg);
}

/* ------------------------------------------------------------------ wrappers */
/* arguments that Python passes unchecked by type: their sizes, before a kernel reads */
static int require(int ok, const char *function, const char *what)
{
    if (!ok)
        PyErr_Format(PyExc_ValueError, "core.%s: %s", function, what);
    return ok ? 0 : -1;
}

/* a weight table (n_weights, 3) that holds the laws' rows */
static int weight_table(const nc_arr *T, const nc_arr *W, int64_t leading,
                        const char *function)
{
    int d = W->ndim - 2;
    return require(d >= 0 && W->shape[d + 1] == 3 && (d == 0 || W->shape[0] == leading) &&
                   W->shape[d] > T[T_laws_weight_kind].size, function,
                   leading ? "the stage weight tables must have shape (7, n_weights, 3)"
                           : "the weight table must have shape (n_weights, 3)");
}

/* Buffers as make_buffers lays them out for this core: ctrl of CTRL_COUNT entries and
 * held as long as mask (a stale Buffers would be read and written past their ends) */
static int buffers(const nc_arr *S, const char *function)
{
    return require(S[S_ctrl].size >= CTRL_COUNT && S[S_held].size == S[S_mask].size &&
                   S[S_threshold].size <= S[S_mask].size, function,
                   "the Buffers do not fit the core (ctrl of N_CTRL entries, held as long "
                   "as mask: compiled.make_buffers)");
}

/* a state (2 n,) of the run's buffers */
static int state(const nc_arr *S, const nc_arr *y, const char *function, const char *what)
{
    return require(y->size == S[S_y].size, function, what);
}

NC_WRAPPER(rhs)
{
    nc_arr t[T_COUNT], s[S_COUNT], p[P_COUNT], w[WK_COUNT];
    nc_value a[10] = {{.tuple = t}, {.tuple = s}, {.tuple = p}, {.tuple = w}};
    nc_py_hooks ctx;
    const nc_hooks *hk;
    if (nc_parse(args, nargs, "TSPWofddid", a, "rhs") < 0)
        return NULL;
    const nc_arr *T = a[0].tuple, *S = a[1].tuple, *P = a[2].tuple, *Wk = a[3].tuple;
    if (state(S, &a[6].arr, "rhs", "y must have 2 n entries") < 0 ||
        state(S, &a[9].arr, "rhs", "out must have 2 n entries") < 0 ||
        weight_table(T, &a[7].arr, 0, "rhs") < 0 || nc_py_hooks_from(a[4].obj, &ctx, &hk) < 0)
        return NULL;
    int64_t status = nc_rhs(T, S, P, Wk, hk, a[5].f, F64(a[6].arr), F64(a[7].arr), a[8].i,
                            F64(a[9].arr));
    return status == NC_CALLBACK ? NULL : PyLong_FromLongLong(status);
}

NC_WRAPPER(project)
{
    nc_arr t[T_COUNT], s[S_COUNT], p[P_COUNT], w[WK_COUNT];
    nc_value a[10] = {{.tuple = t}, {.tuple = s}, {.tuple = p}, {.tuple = w}};
    nc_py_hooks ctx;
    const nc_hooks *hk;
    if (nc_parse(args, nargs, "TSPWoddifp", a, "project") < 0)
        return NULL;
    const nc_arr *T = a[0].tuple, *S = a[1].tuple, *P = a[2].tuple, *Wk = a[3].tuple;
    if (buffers(S, "project") < 0 ||
        state(S, &a[5].arr, "project", "y must have 2 n entries") < 0 ||
        weight_table(T, &a[6].arr, 0, "project") < 0 || nc_py_hooks_from(a[4].obj, &ctx, &hk) < 0)
        return NULL;
    int64_t status = nc_project(T, S, P, Wk, hk, F64(a[5].arr), F64(a[6].arr), a[7].i,
                                a[8].f, (int)a[9].i);
    return status == NC_CALLBACK ? NULL : PyLong_FromLongLong(status);
}

NC_WRAPPER(threshold)
{
    nc_arr t[T_COUNT];
    nc_value a[5] = {{.tuple = t}};
    if (nc_parse(args, nargs, "Tdddf", a, "threshold") < 0)
        return NULL;
    const nc_arr *T = a[0].tuple;
    const int64_t *row = I64(T[T_pattern_row]);
    int64_t nnz = T[T_pattern_row].size, rows = nnz > 0 ? row[nnz - 1] + 1 : 0;
    int64_t m = a[3].arr.size > 0 ? a[3].arr.size : rows;   /* positions: the G rows */
    if (a[1].arr.size != 3 * nnz || a[2].arr.size != 12 * T[T_J4].shape[0] || m < rows) {
        PyErr_SetString(PyExc_ValueError, "core.threshold: G must have 3 nnz entries, x 12 n "
                        "and rate m (or none)");
        return NULL;
    }
    double *rate = a[3].arr.size > 0 ? F64(a[3].arr) : NULL;
    return PyFloat_FromDouble(nc_threshold(T, m, F64(a[1].arr), rate, F64(a[2].arr), a[4].f));
}

NC_WRAPPER(observe)
{
    nc_arr t[T_COUNT], s[S_COUNT];
    nc_value a[5] = {{.tuple = t}, {.tuple = s}};
    double obs[3];
    if (nc_parse(args, nargs, "TSddp", a, "observe") < 0)
        return NULL;
    const nc_arr *T = a[0].tuple, *S = a[1].tuple;
    if (state(S, &a[2].arr, "observe", "y must have 2 n entries") < 0 ||
        weight_table(T, &a[3].arr, 0, "observe") < 0)
        return NULL;
    observe(T, S, F64(a[2].arr), F64(a[3].arr), (int)a[4].i, obs);
    return Py_BuildValue("(ddd)", obs[0], obs[1], obs[2]);
}

/* a FactorStore of `capacity` steps or none */
static int factor_store(const nc_arr *store, const nc_arr *S, const nc_arr *Wk,
                        int64_t capacity, const char *function)
{
    int64_t steps = store[FS_lam].shape[0];
    if (steps == 0)
        return 0;
    int ok = steps >= capacity && store[FS_lam].size == 6 * steps * S[S_lam].size
             && store[FS_mask].size == store[FS_lam].size && store[FS_refactored].size == steps;
    for (int f = 0; f < 5; f++)
        ok = ok && store[f].size == 6 * steps * Wk[f].size;
    return require(ok, function, "the FactorStore does not fit the work buffers and steps");
}

NC_WRAPPER(step)
{
    nc_arr t[T_COUNT], s[S_COUNT], p[P_COUNT], w[WK_COUNT], f[FS_COUNT];
    nc_value a[11] = {{.tuple = t}, {.tuple = s}, {.tuple = p}, {.tuple = w}};
    nc_py_hooks ctx;
    const nc_hooks *hk;
    a[9].tuple = f;
    if (nc_parse(args, nargs, "TSPWodiifFi", a, "step") < 0)
        return NULL;
    const nc_arr *T = a[0].tuple, *S = a[1].tuple, *P = a[2].tuple, *Wk = a[3].tuple;
    const nc_arr *store = a[9].tuple;
    if (buffers(S, "step") < 0 ||
        weight_table(T, &a[5].arr, 7, "step") < 0 ||
        factor_store(store, S, Wk, a[10].i + 1, "step") < 0 ||
        nc_py_hooks_from(a[4].obj, &ctx, &hk) < 0)
        return NULL;
    int64_t rejected, status = nc_step(T, S, P, Wk, hk, &a[5].arr, a[6].i, a[7].i, a[8].f,
                                       store, a[10].i, &rejected);
    if (status == NC_CALLBACK)
        return NULL;
    return Py_BuildValue("(LL)", (long long)status, (long long)rejected);
}

int nc_advance_buffers(const nc_value *a, int64_t N, int64_t y_rows, int64_t k_rows,
                       const char *function, nc_records *rec, nc_segments *seg)
{
    int64_t rows = a[0].arr.size, steps = a[4].arr.shape[0];
    if (require(rows >= 1 && a[1].arr.size == rows * N && a[2].arr.size == 3 * rows &&
                a[3].arr.size == rows, function,
                "the records must be (k,), (k, 2 n), (k, 3) and (k,) arrays, k ≥ 1") < 0)
        return -1;
    if (a[4].arr.size != 2 * steps || a[5].arr.size != y_rows * N * steps ||
        a[6].arr.size != k_rows * N * steps) {
        PyErr_Format(PyExc_ValueError, "core.%s: the segments must be (c, 2), (c, %lld, 2 n) "
                     "and (c, %lld, 2 n) arrays", function, (long long)y_rows,
                     (long long)k_rows);
        return -1;
    }
    *rec = (nc_records){F64(a[0].arr), F64(a[1].arr), F64(a[2].arr), I64(a[3].arr), rows - 1};
    *seg = (nc_segments){F64(a[4].arr), F64(a[5].arr), F64(a[6].arr), steps};
    return 0;
}

PyObject *nc_advance_result(nc_progress out)
{
    return Py_BuildValue("(LLLLLLN)", (long long)out.status, (long long)out.records,
                         (long long)out.next_out, (long long)out.steps,
                         (long long)out.rejected, (long long)out.stored,
                         nc_py_take_error(out.status));
}

NC_WRAPPER(advance)
{
    nc_arr t[T_COUNT], s[S_COUNT], p[P_COUNT], w[WK_COUNT], f[FS_COUNT];
    nc_value b[22] = {{.tuple = t}, {.tuple = s}, {.tuple = p}, {.tuple = w}};
    nc_py_hooks ctx;
    const nc_hooks *hk;
    nc_records rec;
    nc_segments seg;
    b[21].tuple = f;
    if (nc_parse(args, nargs, "TSPWoddiifdipfdddqdddF", b, "advance") < 0 ||
        nc_py_hooks_from(b[4].obj, &ctx, &hk) < 0)
        return NULL;
    nc_value a[21];                      /* the arguments after the hooks, as numbered below */
    memcpy(a, b, 4 * sizeof(nc_value));
    memcpy(a + 4, b + 5, 17 * sizeof(nc_value));
    const nc_arr *T = a[0].tuple, *S = a[1].tuple, *P = a[2].tuple, *Wk = a[3].tuple;
    const nc_arr *store = a[20].tuple;
    if (buffers(S, "advance") < 0 || weight_table(T, &a[4].arr, 7, "advance") < 0 ||
        weight_table(T, &a[5].arr, 0, "advance") < 0 ||
        nc_advance_buffers(a + 13, S[S_y].size, 2, 7, "advance", &rec, &seg) < 0 ||
        factor_store(store, S, Wk, seg.capacity, "advance") < 0 ||
        require(store[FS_lam].shape[0] == 0 || seg.capacity > 0, "advance",
                "a FactorStore needs segments") < 0)
        return NULL;
    nc_progress out = nc_advance(T, S, P, Wk, hk, &a[4].arr, F64(a[5].arr), a[6].i, a[7].i,
                                 a[8].f, F64(a[9].arr), a[9].arr.size, a[10].i, (int)a[11].i,
                                 a[12].f, &rec, &seg, store);
    return nc_advance_result(out);
}

NC_WRAPPER(factor)
{
    nc_arr s[S_COUNT], p[P_COUNT], w[WK_COUNT];
    nc_value a[3] = {{.tuple = s}, {.tuple = p}, {.tuple = w}};
    if (nc_parse(args, nargs, "SPW", a, "factor") < 0)
        return NULL;
    const nc_arr *S = a[0].tuple, *P = a[1].tuple, *Wk = a[2].tuple;
    if (buffers(S, "factor") < 0 ||
        require(S[S_G].ndim == 2 && S[S_G].shape[1] == 3 &&
                S[S_threshold].size == Wk[WK_bound].size &&
                S[S_dropped].size == Wk[WK_bound].size &&
                S[S_mask].size == S[S_threshold].size + 6 * P[P_J4].shape[0], "factor",
                "the Buffers do not fit the solver's plan and work buffers") < 0)
        return NULL;
    return PyLong_FromLongLong(nc_factor(S, P, Wk, NULL));
}

NC_WRAPPER(hold_for_output)
{
    nc_arr s[S_COUNT];
    nc_value a[1] = {{.tuple = s}};
    if (nc_parse(args, nargs, "S", a, "hold_for_output") < 0 ||
        buffers(a[0].tuple, "hold_for_output") < 0)
        return NULL;
    nc_hold_for_output(a[0].tuple);
    Py_RETURN_NONE;
}

NC_WRAPPER(resume)
{
    nc_arr s[S_COUNT];
    nc_value a[1] = {{.tuple = s}};
    if (nc_parse(args, nargs, "S", a, "resume") < 0 || buffers(a[0].tuple, "resume") < 0)
        return NULL;
    nc_resume(a[0].tuple);
    Py_RETURN_NONE;
}

NC_WRAPPER(interpolate)
{
    nc_value a[6];
    if (nc_parse(args, nargs, "dddfdd", a, "interpolate") < 0)
        return NULL;
    int64_t N = a[0].arr.size, k = a[4].arr.size;
    if (require(a[1].arr.size == N && a[2].arr.size == 7 * N && a[5].arr.size == k * N,
                "interpolate", "y0, y1 must be (N,), K (7, N), theta (k,) and out (k, N)") < 0)
        return NULL;
    for (int64_t j = 0; j < k; j++)
        nc_interpolate(F64(a[0].arr), F64(a[1].arr), F64(a[2].arr), a[3].f, F64(a[4].arr)[j],
                       N, F64(a[5].arr) + j * N);
    Py_RETURN_NONE;
}

NC_WRAPPER(clip_step)
{
    nc_value a[4];
    if (nc_parse(args, nargs, "ffff", a, "clip_step") < 0)
        return NULL;
    return PyFloat_FromDouble(nc_clip_step(a[0].f, a[1].f, a[2].f, a[3].f));
}

PyMethodDef nc_dopri5_methods[] = {
    NC_METHOD(rhs, "rhs(T, S, P, Wk, hooks, t, y, W, mode, out) -> status: out = (v, a) at "
              "(t, y = (p, v)) "
              "with the weight table W (index-1 form; mode 3, Baumgarte, stabilizes γ); "
              "counts an evaluation and a change of the dropped rows."),
    NC_METHOD(project, "project(T, S, P, Wk, hooks, y, W, mode, tol, fresh) -> status: y "
              "projected "
              "in place (positions, then velocities; fresh: factored at y first, as for "
              "outputs)."),
    NC_METHOD(threshold, "threshold(T, G, x, rate, tol) -> the tolerance a residual G x + "
              "rate can be held to, max(tol, ROUNDOFF ε max_rows (|G| |x| + |rate|)) (rate "
              "empty: none; positions x = p, velocities x = v and rate = g_t)."),
    NC_METHOD(observe, "observe(T, S, y, W, evaluated) -> (energy, ‖g‖∞, ‖G v + g_t‖∞) at y."),
    NC_METHOD(step, "step(T, S, P, Wk, hooks, W7, mode, max_attempts, eps_floor, store, m) -> "
              "(status, rejected): DOPRI5 attempts from (ctrl[T_NOW], S.y) until one is "
              "accepted (and projected), a failure, or max_attempts; status −1: step-size "
              "underflow. A non-empty FactorStore keeps the stage factorizations at store[m]."),
    NC_METHOD(advance, "advance(T, S, P, Wk, hooks, W7, W1, mode, budget, eps_floor, t_eval, "
              "next_out, every_step, drift_tol, rec_t, rec_y, rec_obs, rec_kind, seg_t, "
              "seg_y, seg_K, store) -> (status, records, next_out, steps, rejected, stored, "
              "error): "
              "accepted steps and their checked records (every step, or the t_eval points "
              "by dense output) until finished, full, a failure or budget attempts. hooks: a "
              "Callbacks object or None (callbacks.c); a callback's exception (status "
              "CALLBACK, Ctrl-C included) is returned last, else None."),
    NC_METHOD(factor, "factor(S, P, Wk) -> status: the block factorization of S.G with "
              "partitioning and hysteresis (S.mask, S.threshold); 0 or a step status "
              "(SINGULAR_FRAME, NOT_POSITIVE_DEFINITE, UNPIVOTABLE_JOINT; where: "
              "counts[FAIL_WHERE])."),
    NC_METHOD(hold_for_output, "hold_for_output(S): before an output's projection, start "
              "from the dropped set (and hysteresis) of the integrator's last factorization, "
              "kept in S.held at the first output after it (ctrl[HOLDING] set)."),
    NC_METHOD(resume, "resume(S): the integrator's own dropped set back, if outputs were "
              "projected since hold_for_output (step calls it first)."),
    NC_METHOD(interpolate, "interpolate(y0, y1, K, h, theta, out): the dense output of a step "
              "(y0 → y1, stages K (7, N), size h) at the fractions theta (k,) into out (k, N) "
              "(Hairer, Nørsett & Wanner I, II.6, eq. 6.12)."),
    NC_METHOD(clip_step, "clip_step(h, t, t_bound, eps_floor) -> float: h, or the whole "
              "remainder t_bound − t when h would leave a sliver below the step-size floor "
              "eps_floor · max(|t_bound|, 1)."),
    {NULL, NULL, 0, NULL},
};
