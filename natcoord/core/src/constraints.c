/* Constraints g, g_t, γ and the Jacobian blocks G of all rows at once (the paper's
 * eqs. 8-10; docs/method.md#13-rigid-body and #15-descriptor-form), and the
 * products with G, Gᵀ and M that the solvers need.
 *
 * Every row is g = Σ_m w_m(t) q_m with quadratic forms q = Σ c x_a·x_b + Σ d·x_a + c0
 * in the slot vectors x (rows of the (4n, 3) coordinate array). For one quadratic
 * term c x_a·x_b with weight (w, ẇ, ẅ):
 *     g += w c x_a·x_b,  G[a] += w c x_b,  G[b] += w c x_a,  g_t += ẇ c x_a·x_b,
 *     γ −= c (2 w v_a·v_b + 2 ẇ (x_a·v_b + x_b·v_a) + ẅ x_a·x_b)
 * (ġ̇ = G a − γ differentiated twice); linear and constant terms likewise. */
#include "nc_core.h"
#include "nc_simd.h"

NC_INLINE double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* The terms of each kind come sorted by row (ConstraintTables): a row's g, g_t and γ are
 * summed in registers while its terms last and stored when the row changes (any order
 * works: a row met again is loaded back), each sum in the order of the terms, as the
 * read-modify-write per term summed them. gamma NULL: γ is not wanted (a projection's
 * evaluations, which use g, g_t and G), its terms and the velocities they read left
 * out — a fifth of the evaluation; g, g_t and G are the same either way. */
NC_INLINE void nc_constraints_body(const nc_arr *T, const double *X, const double *V,
                                   const double *W, double *g, double *g_t, double *gamma,
                                   double *G, int64_t m, int64_t nnz)
{
    memset(g, 0, m * sizeof(double));
    memset(g_t, 0, m * sizeof(double));
    const int with_gamma = gamma != NULL;
    if (with_gamma)
        memset(gamma, 0, m * sizeof(double));
    memset(G, 0, 3 * nnz * sizeof(double));
    int64_t cur = -1;                       /* the row whose sums are in registers */
    double sg = 0.0, st = 0.0, sgam = 0.0;
#define SWITCH_ROW(r)                                                                     \
    if ((r) != cur) {                                                                     \
        if (cur >= 0) {                                                                   \
            g[cur] = sg, g_t[cur] = st;                                                   \
            if (with_gamma)                                                               \
                gamma[cur] = sgam;                                                        \
        }                                                                                 \
        cur = (r);                                                                        \
        sg = g[cur], st = g_t[cur], sgam = with_gamma ? gamma[cur] : 0.0;                 \
    }
    const int64_t *row = I64(T[T_quad_row]), *qa = I64(T[T_quad_a]), *qb = I64(T[T_quad_b]);
    const int64_t *qw = I64(T[T_quad_w]), *ga = I64(T[T_quad_ga]), *gb = I64(T[T_quad_gb]);
    const double *qc = F64(T[T_quad_c]);
    /* Most terms carry weight row 0, the constant (1, 0, 0): for them w c = c, 2 w v·v =
     * 2 v·v and the ẇ terms vanish, the same operations with the factors 1 and 0 left
     * out (x·1 and y + 0·z round to x and y, up to the sign of a zero sum), and W is
     * not read. Checked, not assumed: a table whose row 0 is not (1, 0, 0) takes the
     * general path. */
    const int unit0 = W[0] == 1.0 && W[1] == 0.0 && W[2] == 0.0;
    for (int64_t k = 0; k < T[T_quad_row].size; k++) {
        SWITCH_ROW(row[k])
        /* operands in locals: the stores into G would make the compiler load them again */
        const double *pa = X + 3 * qa[k], *pb = X + 3 * qb[k];
        const double xa[3] = {pa[0], pa[1], pa[2]}, xb[3] = {pb[0], pb[1], pb[2]};
        const double c = qc[k], xx = dot3(xa, xb);
        double wc = c;
        if (unit0 && qw[k] == 0) {
            sg += c * xx;
            if (with_gamma)
                sgam -= c * (2.0 * dot3(V + 3 * qa[k], V + 3 * qb[k]));
        } else {
            const double *w = W + 3 * qw[k], w0 = w[0], w1 = w[1], w2 = w[2];
            wc = w0 * c;
            sg += wc * xx;
            if (w1 != 0.0)
                st += w1 * c * xx;
            if (with_gamma) {
                const double *ua = V + 3 * qa[k], *ub = V + 3 * qb[k];
                const double va[3] = {ua[0], ua[1], ua[2]}, vb[3] = {ub[0], ub[1], ub[2]};
                sgam -= c * (2.0 * w0 * dot3(va, vb) + w2 * xx);
                if (w1 != 0.0) {
                    double xv = 0.0;
                    for (int j = 0; j < 3; j++)
                        xv += xa[j] * vb[j] + xb[j] * va[j];
                    sgam -= 2.0 * w1 * c * xv;
                }
            }
        }
        double *Ga = G + 3 * ga[k], *Gb = G + 3 * gb[k];
        if (Ga == Gb) {                 /* x_a·x_a: both sums in registers, a then b */
            for (int j = 0; j < 3; j++)
                Ga[j] = (Ga[j] + wc * xb[j]) + wc * xa[j];
        } else {
            for (int j = 0; j < 3; j++) {
                Ga[j] += wc * xb[j];
                Gb[j] += wc * xa[j];
            }
        }
    }
    const int64_t *lrow = I64(T[T_lin_row]), *la = I64(T[T_lin_a]), *lw = I64(T[T_lin_w]);
    const int64_t *lg = I64(T[T_lin_g]);
    const double *ld = F64(T[T_lin_d]);
    for (int64_t k = 0; k < T[T_lin_row].size; k++) {
        SWITCH_ROW(lrow[k])
        const double *pd = ld + 3 * k;
        const double d[3] = {pd[0], pd[1], pd[2]};
        double dx = dot3(d, X + 3 * la[k]);
        double *Gk = G + 3 * lg[k];
        if (unit0 && lw[k] == 0) {      /* weight (1, 0, 0): g_t and γ receive 0 */
            sg += dx;
            for (int j = 0; j < 3; j++)
                Gk[j] += d[j];
            continue;
        }
        const double *w = W + 3 * lw[k], w0 = w[0], w1 = w[1], w2 = w[2];
        sg += w0 * dx;
        st += w1 * dx;
        if (with_gamma)
            sgam -= 2.0 * w1 * dot3(d, V + 3 * la[k]) + w2 * dx;
        for (int j = 0; j < 3; j++)
            Gk[j] += w0 * d[j];
    }
    const int64_t *crow = I64(T[T_const_row]), *cw = I64(T[T_const_w]);
    const double *cc = F64(T[T_const_c]);
    for (int64_t k = 0; k < T[T_const_row].size; k++) {
        SWITCH_ROW(crow[k])
        if (unit0 && cw[k] == 0) {
            sg += cc[k];
            continue;
        }
        const double *w = W + 3 * cw[k];
        sg += w[0] * cc[k];
        st += w[1] * cc[k];
        sgam -= w[2] * cc[k];
    }
#undef SWITCH_ROW
    if (cur >= 0) {
        g[cur] = sg, g_t[cur] = st;
        if (with_gamma)
            gamma[cur] = sgam;
    }
}

NC_DISPATCH_VOID(nc_constraints,
                 (const nc_arr *T, const double *X, const double *V, const double *W,
                  double *g, double *g_t, double *gamma, double *G, int64_t m, int64_t nnz),
                 (T, X, V, W, g, g_t, gamma, G, m, nnz))

void nc_jacobian_times(const int64_t *pattern_row, const int64_t *pattern_slot, int64_t nnz,
                       const double *G, const double *V, double *out, int64_t m)
{
    memset(out, 0, m * sizeof(double));
    int64_t cur = -1;                   /* a run of one row summed in a register */
    double sum = 0.0;
    for (int64_t k = 0; k < nnz; k++) {
        if (pattern_row[k] != cur) {
            if (cur >= 0)
                out[cur] = sum;
            cur = pattern_row[k];
            sum = out[cur];
        }
        sum += dot3(G + 3 * k, V + 3 * pattern_slot[k]);
    }
    if (cur >= 0)
        out[cur] = sum;
}

void nc_jacobian_transpose_times(const int64_t *pattern_row, const int64_t *pattern_slot,
                                 int64_t nnz, const double *G, const double *lam, double *out,
                                 int64_t n_slots)
{
    memset(out, 0, 3 * n_slots * sizeof(double));
    for (int64_t k = 0; k < nnz; k++) {
        double l = lam[pattern_row[k]];
        for (int j = 0; j < 3; j++)
            out[3 * pattern_slot[k] + j] += G[3 * k + j] * l;
    }
}

void nc_mass_times(const double *J4, int64_t n_bodies, const double *V, double *out)
{
    for (int64_t i = 0; i < n_bodies; i++) {
        const double *J = J4 + 16 * i;
        for (int a = 0; a < 4; a++)
            for (int j = 0; j < 3; j++) {
                double acc = 0.0;
                for (int b = 0; b < 4; b++)
                    acc += J[4 * a + b] * V[3 * (4 * i + b) + j];
                out[3 * (4 * i + a) + j] = acc;
            }
    }
}

/* ------------------------------------------------------------------ wrappers */
NC_WRAPPER(constraint_kernel)
{
    nc_arr t[T_COUNT];
    nc_value a[8] = {{.tuple = t}};
    if (nc_parse(args, nargs, "Cddddddd", a, "constraint_kernel") < 0)
        return NULL;
    nc_constraints(a[0].tuple, F64(a[1].arr), F64(a[2].arr), F64(a[3].arr), F64(a[4].arr),
                   F64(a[5].arr), F64(a[6].arr), F64(a[7].arr), a[4].arr.size,
                   a[7].arr.shape[0]);
    Py_RETURN_NONE;
}

NC_WRAPPER(jacobian_times)
{
    nc_value a[5];
    if (nc_parse(args, nargs, "dqqdd", a, "jacobian_times") < 0)
        return NULL;
    nc_jacobian_times(I64(a[1].arr), I64(a[2].arr), a[1].arr.size, F64(a[0].arr),
                      F64(a[3].arr), F64(a[4].arr), a[4].arr.size);
    Py_RETURN_NONE;
}

NC_WRAPPER(jacobian_transpose_times)
{
    nc_value a[5];
    if (nc_parse(args, nargs, "dqqdd", a, "jacobian_transpose_times") < 0)
        return NULL;
    nc_jacobian_transpose_times(I64(a[1].arr), I64(a[2].arr), a[1].arr.size, F64(a[0].arr),
                                F64(a[3].arr), F64(a[4].arr), a[4].arr.shape[0]);
    Py_RETURN_NONE;
}

NC_WRAPPER(mass_times)
{
    nc_value a[3];
    if (nc_parse(args, nargs, "ddd", a, "mass_times") < 0)
        return NULL;
    nc_mass_times(F64(a[0].arr), a[0].arr.shape[0], F64(a[1].arr), F64(a[2].arr));
    Py_RETURN_NONE;
}

PyMethodDef nc_constraints_methods[] = {
    NC_METHOD(constraint_kernel, "constraint_kernel(terms, X, V, W, g, g_t, gamma, G): fill "
              "g, g_t, γ (m,) and the Jacobian blocks G (nnz, 3) in place; terms: the 15 term "
              "arrays of ConstraintTables.kernel_args() (the first 15 fields of Tables)."),
    NC_METHOD(jacobian_times, "jacobian_times(G, pattern_row, pattern_slot, V, out): out = G V."),
    NC_METHOD(jacobian_transpose_times, "jacobian_transpose_times(G, pattern_row, "
              "pattern_slot, lam, out): out = Gᵀ λ as slot vectors (4 n, 3)."),
    NC_METHOD(mass_times, "mass_times(J4, V, out): out = M V, M_i = J4_i ⊗ I3."),
    {NULL, NULL, 0, NULL},
};
