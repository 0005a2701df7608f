/* The block rational Cholesky with constraint partitioning (docs/method.md#16-linear-solve):
 * the numeric phase of natcoord.linalg.blockldl (whose module docstring derives it) and
 * the range-space matrix of natcoord.linalg.cholmod.
 *
 * Blocks. Every block of Wk.B is a contiguous 6×6 buffer: a diagonal block (a body
 * pivot, the 6×6 twist inertia Ĩ = TᵀM̃T, or a joint pivot of size d ≤ 6) row-major,
 * a coupling V_qk (rows: node q, columns: node k) stored transposed, Vt[6 c + i] = V_ic,
 * so that the kernels' inner loops run over contiguous 6-vectors: the coupling solve
 * V ← V L⁻ᵀ updates a column of V at a time, the Schur update T −= σ X Yᵀ adds outer
 * products of two columns, the forward substitution z_q −= σ V z_k sums columns. The
 * plan (Python) addresses couplings in this stored layout (jp_base, jp_stride). A joint
 * pivot and its couplings use their leading d rows and columns; the padding stays
 * exactly +0 and the kernels skip it (see "Padding" below). The upper triangle of a
 * diagonal block is scratch (the Schur update writes it; nothing reads it).
 *
 * Kernels. The 6×6 operations are written on 6-vectors (a 4-lane and a 2-lane part,
 * nc_simd.h) with fixed trip counts where the nodes are 6 wide, unrolled by -O3; the
 * factorization and the solve are compiled twice, for AVX2 and for baseline x86-64,
 * and the CPU's variant is taken at run time. The solve also takes 2 or NC_LANES
 * right-hand sides side by side (nc_solve_lanes: one pass over the blocks for all of
 * them, the products vectorized across the right-hand sides), the single one being its
 * one-lane case.
 *
 * Round-off. A sum starts at 0.0 and adds its terms by ascending index, products are
 * not contracted into fused multiply-adds (-ffp-contract=off; Clang: the pragma), and
 * vectorizing across independent outputs changes no operation of any one output: both
 * variants, on every machine, give the same bits (those of the scalar loops these
 * replaced). The price is the latency of the sequential pivots (division, ordered
 * sums), which bounds a chain, where every node waits for the one before it; the
 * factorization is LDLᵀ without square roots (the rational Cholesky, ldl6) for that
 * reason: it cut the factorization of chain(512) by 17 % and its solve by 12 % against
 * the Cholesky LLᵀ it replaced (benchmarks/core_speed.py, 2026-11-28).
 */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif
#include "nc_core.h"
#include "nc_simd.h"

enum { FACTORED = NC_FACTORED, SINGULAR_FRAME = NC_FACTOR_SINGULAR_FRAME,
       NOT_POSITIVE_DEFINITE = NC_FACTOR_NOT_POSITIVE_DEFINITE,
       UNPIVOTABLE_JOINT = NC_FACTOR_UNPIVOTABLE_JOINT };

/* The plan's arrays and the work buffers of one call, as plain pointers. */
typedef struct {
    int64_t n, N;                     /* bodies, nodes */
    const double *J4, *J4_min;        /* mass blocks (n, 4, 4) of this pass and λ_min */
    const int64_t *e_index, *body_node, *size, *col_ptr, *col_node, *upd_ptr, *upd_q,
        *upd_p, *upd_t, *node_row0, *jp, *jp_ptr, *jp_row, *jp_slot, *jp_base, *jp_stride,
        *jp_axis, *jp_z, *body_axis_ptr, *row_z, *side_block, *side_body, *side_trans,
        *side_row0, *side_size, *jp_e, *al_block, *al_trans, *al_jnode, *al_size, *al_node,
        *al_copy, *al_pair_u, *al_pair_w, *al_pair_t;
    const double *sign, *al_rho;
    int64_t n_jp, n_side, n_row_z, n_al, n_al_pair;
    double *B, *inv, *E, *F, *Gj, *floor, *bound, *z, *ap;
    int64_t *dropped;
    const uint8_t *decided;
    int64_t n_blocks, m_joint;
} ldl;

static ldl ldl_of(const nc_arr *P, const nc_arr *Wk)
{
    ldl s = {
        .n = P[P_J4].shape[0], .N = P[P_size].size,
        .J4 = F64(P[P_J4]), .J4_min = F64(P[P_J4_min]),
        .e_index = I64(P[P_e_index]), .body_node = I64(P[P_body_node]),
        .size = I64(P[P_size]), .col_ptr = I64(P[P_col_ptr]), .col_node = I64(P[P_col_node]),
        .upd_ptr = I64(P[P_upd_ptr]), .upd_q = I64(P[P_upd_q]), .upd_p = I64(P[P_upd_p]),
        .upd_t = I64(P[P_upd_t]), .node_row0 = I64(P[P_node_row0]), .jp = I64(P[P_jp]),
        .jp_ptr = I64(P[P_jp_ptr]), .jp_row = I64(P[P_jp_row]), .jp_slot = I64(P[P_jp_slot]),
        .jp_base = I64(P[P_jp_base]), .jp_stride = I64(P[P_jp_stride]),
        .jp_axis = I64(P[P_jp_axis]), .jp_z = I64(P[P_jp_z]),
        .body_axis_ptr = I64(P[P_body_axis_ptr]), .row_z = I64(P[P_row_z]),
        .side_block = I64(P[P_side_block]), .side_body = I64(P[P_side_body]),
        .side_trans = I64(P[P_side_trans]), .side_row0 = I64(P[P_side_row0]),
        .side_size = I64(P[P_side_size]), .jp_e = I64(P[P_jp_e]), .sign = F64(P[P_sign]),
        .al_block = I64(P[P_al_block]), .al_trans = I64(P[P_al_trans]),
        .al_jnode = I64(P[P_al_jnode]), .al_size = I64(P[P_al_size]),
        .al_node = I64(P[P_al_node]), .al_copy = I64(P[P_al_copy]),
        .al_pair_u = I64(P[P_al_pair_u]), .al_pair_w = I64(P[P_al_pair_w]),
        .al_pair_t = I64(P[P_al_pair_t]), .al_rho = F64(P[P_al_rho]),
        .n_al = P[P_al_block].size, .n_al_pair = P[P_al_pair_t].size,
        .n_jp = P[P_jp].size, .n_side = P[P_side_block].size, .n_row_z = P[P_row_z].size,
        .B = F64(Wk[WK_B]), .inv = F64(Wk[WK_inv]), .E = F64(Wk[WK_E]), .F = F64(Wk[WK_F]),
        .Gj = F64(Wk[WK_Gj]), .floor = F64(Wk[WK_floor]), .bound = F64(Wk[WK_bound]),
        .z = F64(Wk[WK_z]), .ap = F64(Wk[WK_ap]), .dropped = I64(Wk[WK_dropped]),
        .decided = BOOL(Wk[WK_decided]), .n_blocks = Wk[WK_B].shape[0],
        .m_joint = Wk[WK_bound].size,
    };
    return s;
}

/* ------------------------------------------------------------ small kernels */
/* out[0:3] += a × b, the entries of out, a and b at strides os, as and bs (1, or the
 * lanes of the solve) */
static inline void cross_add(double *out, int os, const double *a, int as, const double *b,
                             int bs)
{
    out[0] += a[as] * b[2 * bs] - a[2 * as] * b[bs];
    out[os] += a[2 * as] * b[0] - a[0] * b[2 * bs];
    out[2 * os] += a[0] * b[bs] - a[as] * b[0];
}

/* E[k] = e_{k+1} of body i: the Jacobian blocks of ½(e_k·e_k − 1) */
static inline void axes(const double *G, const int64_t *e_index, int64_t i, double *E)
{
    for (int k = 0; k < 3; k++)
        for (int a = 0; a < 3; a++)
            E[3 * k + a] = G[3 * e_index[3 * i + k] + a];
}

/* Ĩ = TᵀMT (6×6) for M = J4 ⊗ I3 and axes E[k] = e_{k+1}: [[m 1, −[c]×], [[c]×, tr J_w − J_w]] */
NC_INLINE void spatial_inertia(const double *J4, const double *E, double *out)
{
    double tr = 0.0;
    for (int a = 0; a < 3; a++)
        for (int b = a; b < 3; b++) {
            double jw = 0.0;                      /* J_w = E J Eᵀ */
            for (int k = 0; k < 3; k++) {
                const double *J = J4 + 4 * (k + 1);
                jw += E[3 * k + a] * (J[1] * E[b] + J[2] * E[3 + b] + J[3] * E[6 + b]);
            }
            out[6 * (3 + a) + 3 + b] = out[6 * (3 + b) + 3 + a] = -jw;
            if (a == b)
                tr += jw;
        }
    for (int a = 0; a < 3; a++) {
        out[6 * (3 + a) + 3 + a] += tr;
        for (int b = 0; b < 3; b++)
            out[6 * a + b] = a == b ? J4[0] : 0.0;
    }
    double c[3];                                  /* c = Σ m c̄_k e_k */
    for (int a = 0; a < 3; a++)
        c[a] = J4[1] * E[a] + J4[2] * E[3 + a] + J4[3] * E[6 + a];
    /* −[c]× above, [c]× below the diagonal */
    out[3] = 0.0, out[4] = c[2], out[5] = -c[1];
    out[9] = -c[2], out[10] = 0.0, out[11] = c[0];
    out[15] = c[1], out[16] = -c[0], out[17] = 0.0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            out[6 * (3 + b) + a] = out[6 * a + 3 + b];
}

/* Reciprocal basis F[k] = f_k, f_k · e_l = δ_kl; 0 if the axes are (nearly) singular. */
NC_INLINE int reciprocal(const double *restrict E, double *restrict F)
{
    double det = E[0] * (E[4] * E[8] - E[5] * E[7]) - E[1] * (E[3] * E[8] - E[5] * E[6])
                 + E[2] * (E[3] * E[7] - E[4] * E[6]);
    if (!(fabs(det) > 1e-12))
        return 0;
    double num[9];                          /* the nine divisions by det vectorize */
    for (int k = 0; k < 3; k++) {
        const double *a = E + 3 * ((k + 1) % 3), *b = E + 3 * ((k + 2) % 3);
        num[3 * k] = a[1] * b[2] - a[2] * b[1];
        num[3 * k + 1] = a[2] * b[0] - a[0] * b[2];
        num[3 * k + 2] = a[0] * b[1] - a[1] * b[0];
    }
    for (int i = 0; i < 9; i++)
        F[i] = num[i] / det;
    return 1;
}

/* Upper bound of ‖(TᵀMT)⁻¹‖: 1 / (λ_min(J4) λ_min(TᵀT)), λ_max(Σ e_k e_kᵀ) bounded by
 * Gershgorin's row sums; ∞ when the bound is not positive. */
NC_INLINE double twist_bound(double J4_min, const double *E)
{
    double trace = 0.0, gershgorin = 0.0;
    for (int a = 0; a < 3; a++) {
        double row = 0.0;
        for (int b = 0; b < 3; b++) {
            double w = E[a] * E[b] + E[3 + a] * E[3 + b] + E[6 + a] * E[6 + b];
            row += fabs(w);
            if (a == b)
                trace += w;
        }
        if (row > gershgorin)
            gershgorin = row;
    }
    double sigma = trace - gershgorin < 1.0 ? trace - gershgorin : 1.0;
    return sigma > 0.0 && J4_min > 0.0 ? 1.0 / (J4_min * sigma) : INFINITY;
}

/* In-place LDLᵀ (the rational Cholesky: no square root) of a 6×6 body pivot A, column
 * by column: D_r = A_rr − Σ_{c<r} L_rc W_rc, W_ir = A_ir − Σ_{c<r} L_ic W_rc (i > r),
 * L_ir = W_ir / D_r, with W = L D. The strict lower triangle becomes L (unit diagonal),
 * the diagonal D, inv = 1/D; W is kept in the upper triangle (W_ir at (r, i)), the
 * block's scratch. Per row the pivot chain is one division and three dependent
 * operations, where the Cholesky LLᵀ had a square root too. A pivot below floor (a
 * lower bound of λ_min(A) in exact arithmetic) is round-off and raised to it. 0 if not
 * positive definite. */
NC_INLINE int ldl6(double *restrict A, double *restrict inv, double floor)
{
#pragma GCC unroll 6
    for (int r = 0; r < 6; r++) {
        double D = A[7 * r];
#pragma GCC unroll 6
        for (int c = 0; c < r; c++)
            D -= A[6 * r + c] * A[6 * c + r];
        if (D < floor)
            D = floor;
        if (!(D > 0.0))
            return 0;
        const double id = 1.0 / D;
        A[7 * r] = D;
        inv[r] = id;
#pragma GCC unroll 6
        for (int i = r + 1; i < 6; i++) {
            double w = A[6 * i + r];
#pragma GCC unroll 6
            for (int c = 0; c < r; c++)
                w -= A[6 * i + c] * A[6 * c + r];
            A[6 * r + i] = w;
            A[6 * i + r] = w * id;
        }
    }
    return 1;
}

/* ĉ_i (y, 6) of the joint row on the body of jp[*t] (the row's blocks jp[*t:stop], sorted
 * by body), its axes into E; *t moves past the body's blocks. Returns the body. */
static int64_t twist_row(const double *G, const ldl *s, int64_t *t, int64_t stop, double *E,
                         double *y)
{
    int64_t body = s->jp_slot[*t] / 4;
    axes(G, s->e_index, body, E);
    memset(y, 0, 6 * sizeof(double));
    for (; *t < stop && s->jp_slot[*t] / 4 == body; ++*t) {
        const double *g = G + 3 * s->jp[*t];
        int64_t k = s->jp_slot[*t] % 4;
        if (k == 0)
            y[0] += g[0], y[1] += g[1], y[2] += g[2];
        else
            cross_add(y + 3, 1, E + 3 * (k - 1), 1, g, 1);
    }
    return body;
}

/* ref = Σ_i ĉ_i (TᵀM_iT)⁻¹ ĉ_iᵀ of the joint row with the Jacobian blocks jp[start:stop]
 * (sorted by body): its pivot before any joint row is eliminated. */
static double exact_reference(const double *G, const ldl *s, int64_t start, int64_t stop)
{
    double ref = 0.0, E[9], I6[36], y[12];
    int64_t t = start;
    while (t < stop) {
        int64_t body = twist_row(G, s, &t, stop, E, y);
        spatial_inertia(s->J4 + 16 * body, E, I6);
        if (!ldl6(I6, y + 6, 0.0))
            return 0.0;
        for (int r = 0; r < 6; r++) {         /* ĉ Ĩ⁻¹ ĉᵀ = Σ_r u_r² / D_r, u = L⁻¹ ĉᵀ */
            double acc = y[r];
            for (int c = 0; c < r; c++)
                acc -= I6[6 * r + c] * y[c];
            y[r] = acc;
            ref += acc * acc * y[6 + r];
        }
    }
    return ref;
}

/* A lower bound of exact_reference's value: ½ Σ_i |ĉ_i|² / tr(TᵀM_iT), as
 * ĉ Ĩ⁻¹ ĉᵀ ≥ |ĉ|² / λ_max(Ĩ) ≥ |ĉ|² / tr(Ĩ) for the positive definite Ĩ = TᵀM_iT
 * (tr Ĩ = 3 m + 2 tr(E J Eᵀ)); the factor ½ covers the round-off of both. 0 where a
 * trace is not positive (no bound). */
static double reference_lower_bound(const double *G, const ldl *s, int64_t start,
                                    int64_t stop)
{
    double bound = 0.0, E[9], y[6];
    int64_t t = start;
    while (t < stop) {
        int64_t body = twist_row(G, s, &t, stop, E, y);
        const double *J4 = s->J4 + 16 * body;
        double tr = 0.0;
        for (int k = 0; k < 3; k++)
            for (int l = 0; l < 3; l++)
                tr += J4[4 * (k + 1) + l + 1] * (E[3 * k] * E[3 * l] + E[3 * k + 1] * E[3 * l + 1]
                                                 + E[3 * k + 2] * E[3 * l + 2]);
        tr = 3.0 * J4[0] + 2.0 * tr;
        if (!(tr > 0.0))
            return 0.0;
        bound += (y[0] * y[0] + y[1] * y[1] + y[2] * y[2] + y[3] * y[3] + y[4] * y[4]
                  + y[5] * y[5]) / tr;
    }
    return 0.5 * bound;
}

/* The drop rule past its cheap test (p ≤ threshold·ratio·bound, rare): p ≤ threshold·ref
 * /ratio drops, p > threshold·ref·ratio keeps, in between is ambiguous (counted in
 * *ambiguous) and drops. A pivot below threshold times a lower bound of ref (the usual
 * round-off pivot of a redundant row) drops without ref's Cholesky solves: the same
 * decision. */
static int drop_decision(const double *G, const ldl *s, int64_t row, double p,
                         double threshold, double ratio, int *ambiguous)
{
    int64_t start = s->jp_ptr[row], stop = s->jp_ptr[row + 1];
    if (p <= threshold * reference_lower_bound(G, s, start, stop) / ratio)
        return 1;
    double ref = exact_reference(G, s, start, stop);
    if (ref > 0.0 && p > threshold * ref / ratio) {
        int dropped = p <= threshold * ref * ratio;
        *ambiguous += dropped;
        return dropped;
    }
    return 1;
}

/* In-place LDLᵀ of a joint pivot A (leading d×d, negative semidefinite: D < 0), as
 * ldl6, dropping redundant joint rows by their pivot p = −D_r (the rule of
 * natcoord.linalg.blockldl's "Constraint partitioning": p ≤ threshold·ref/ratio drops,
 * p > threshold·ref·ratio keeps, in between is ambiguous and counted; forced: follow
 * s->decided, and a kept row with a non-positive pivot returns 1). A dropped row gets
 * a zero column of L and of W and inv = 0; the padding r ≥ d gets inv = 0. */
NC_INLINE int ldl_monitored_d(double *restrict A, int d, double *restrict inv, int64_t row0,
                              const double *G, const double *threshold, double ratio,
                              int forced, const ldl *s)
{
    int ambiguous = 0;
#pragma GCC unroll 6
    for (int r = 0; r < d; r++) {
        double D = A[7 * r];
#pragma GCC unroll 6
        for (int c = 0; c < r; c++)
            D -= A[6 * r + c] * A[6 * c + r];
        const double p = -D;
        int64_t row = row0 + r;
        int dropped;
        if (forced) {
            dropped = s->decided[row];
            if (!dropped && !(p > 0.0))
                return 1;
        } else {
            dropped = p <= threshold[row] * ratio * s->bound[row];
            if (dropped)
                dropped = drop_decision(G, s, row, p, threshold[row], ratio, &ambiguous);
        }
        A[7 * r] = D;
        if (dropped) {
            inv[r] = 0.0;
            for (int i = r + 1; i < d; i++)
                A[6 * i + r] = A[6 * r + i] = 0.0;
            continue;
        }
        const double id = 1.0 / D;
        inv[r] = id;
#pragma GCC unroll 6
        for (int i = r + 1; i < d; i++) {
            double w = A[6 * i + r];
#pragma GCC unroll 6
            for (int c = 0; c < r; c++)
                w -= A[6 * i + c] * A[6 * c + r];
            A[6 * r + i] = w;
            A[6 * i + r] = w * id;
        }
    }
    for (int r = d; r < 6; r++)
        inv[r] = 0.0;
    return ambiguous;
}

NC_INLINE int ldl_monitored(double *A, int d, double *inv, int64_t row0, const double *G,
                            const double *threshold, double ratio, int forced, const ldl *s)
{
    if (d == 5)                             /* revolute and prismatic joints: unrolled */
        return ldl_monitored_d(A, 5, inv, row0, G, threshold, ratio, forced, s);
    return ldl_monitored_d(A, d, inv, row0, G, threshold, ratio, forced, s);
}

/* ------------------------------------------------------------ numeric phase */
/* Body pivots TᵀMT, joint couplings G T (twist form) and the bounds of the reference
 * pivots. Returns a body with a singular frame, or −1. */
NC_INLINE int64_t assemble(const double *G, const ldl *s)
{
    double *B = s->B, *E = s->E;
    memset(B, 0, 36 * s->n_blocks * sizeof(double));
    for (int64_t i = 0; i < s->n; i++) {
        axes(G, s->e_index, i, E + 9 * i);
        if (!reciprocal(E + 9 * i, s->F + 9 * i))
            return i;
        spatial_inertia(s->J4 + 16 * i, E + 9 * i, B + 36 * s->body_node[i]);
    }
    /* twist form (g_o, Σ_k e_k × g_k) of the joint blocks, added into the couplings: a
     * run of blocks into the same three entries (a row's origin, then its axes) is
     * summed in registers, in the same order */
    int64_t run = -1, run_st = 0;
    double a0 = 0.0, a1 = 0.0, a2 = 0.0;
    for (int64_t t = 0; t < s->n_jp; t++) {
        /* the blocks at jp_base run backwards and in jumps (the couplings of the nodes
         * in elimination order, children first): requested two bodies ahead, which the
         * hardware's prefetch does not guess; 2-5 % of chain(10⁴)'s forward, none on
         * chains that stay in cache */
        if (t + 32 < s->n_jp)
            NC_PREFETCH_WRITE(B + s->jp_base[t + 32]);
        const double *g = G + 3 * s->jp[t];
        double g0 = g[0], g1 = g[1], g2 = g[2];
        const int64_t o = s->jp_base[t], st = s->jp_stride[t], ek = s->jp_e[t];
        if (ek >= 0) {                      /* an axis block: the solve reads it in Gj */
            s->Gj[3 * t] = g0, s->Gj[3 * t + 1] = g1, s->Gj[3 * t + 2] = g2;
            /* from the loaded g0..g2: g read again after the stores into Gj (which the
             * compiler must assume may alias it) cost 1.5 % of chain(512)'s forward */
            const double *e = E + ek;
            const double c0 = e[1] * g2 - e[2] * g1, c1 = e[2] * g0 - e[0] * g2;
            g2 = e[0] * g1 - e[1] * g0, g0 = c0, g1 = c1;
        }
        if (o != run || st != run_st) {
            if (run >= 0)
                B[run] = a0, B[run + run_st] = a1, B[run + 2 * run_st] = a2;
            run = o, run_st = st;
            a0 = B[o], a1 = B[o + st], a2 = B[o + 2 * st];
        }
        a0 += g0, a1 += g1, a2 += g2;
    }
    if (run >= 0)
        B[run] = a0, B[run + run_st] = a1, B[run + 2 * run_st] = a2;
    /* λ_min(TᵀM̃T) ≥ λ_min(TᵀMT) ≥ 1 / bound; the bounds kept in ap (free until a solve) */
    double *body_bound = s->ap;
    for (int64_t i = 0; i < s->n; i++) {
        body_bound[i] = twist_bound(s->J4_min[i], E + 9 * i);
        s->floor[s->body_node[i]] = 1.0 / body_bound[i];
    }
    memset(s->bound, 0, s->m_joint * sizeof(double));   /* ref ≤ Σ_i |ĉ_i|² ‖(TᵀM_iT)⁻¹‖ */
    for (int64_t t = 0; t < s->n_side; t++) {
        const double *blk = B + 36 * s->side_block[t];
        double inverse_bound = body_bound[s->side_body[t]];
        for (int64_t r = 0; r < s->side_size[t]; r++) {
            double norm = 0.0;
            for (int a = 0; a < 6; a++) {
                double c = s->side_trans[t] ? blk[6 * r + a] : blk[6 * a + r];
                norm += c * c;
            }
            s->bound[s->side_row0[t] + r] += norm * inverse_bound;
        }
    }
    return -1;
}

/* The augmented-Lagrangian term ρ ĈᵀĈ of the parent joints of point masses
 * (natcoord.linalg.blockldl): each side's twist-form coupling Ĉ (as assembled) is copied
 * to its own block, row r at 6 r + a, the rows decided dropped zeroed (their constraint
 * is not imposed, so no term of theirs may enter); then ρ Ĉ_uᵀ Ĉ_w is added to the blocks
 * A_uw of each pair of the joint's bodies, stored as couplings (entry (i, c) at 6 c + i;
 * a body's diagonal block is symmetric). The solve adds ρ Ĉᵀ ŝ to the right-hand side
 * from the copies (solve_lanes). */
NC_INLINE void augment(const ldl *s)
{
    double *B = s->B;
    for (int64_t k = 0; k < s->n_al; k++) {
        const double *src = B + 36 * s->al_block[k];
        double *dst = B + 36 * s->al_copy[k];
        const int64_t row0 = s->node_row0[s->al_jnode[k]];
        for (int64_t r = 0; r < 6; r++)
            for (int a = 0; a < 6; a++)
                dst[6 * r + a] = r >= s->al_size[k] || s->decided[row0 + r] ? 0.0
                                 : s->al_trans[k] ? src[6 * r + a] : src[6 * a + r];
    }
    for (int64_t t = 0; t < s->n_al_pair; t++) {
        const double *U = B + 36 * s->al_copy[s->al_pair_u[t]];
        const double *W = B + 36 * s->al_copy[s->al_pair_w[t]];
        const double rho = s->al_rho[s->al_pair_u[t]];
        double *T = B + 36 * s->al_pair_t[t];
        for (int i = 0; i < 6; i++)
            for (int c = 0; c < 6; c++) {
                double acc = 0.0;
                for (int r = 0; r < 6; r++)
                    acc += U[6 * r + i] * W[6 * r + c];
                T[6 * c + i] += rho * acc;
            }
    }
}

/* Padding. A joint node of size d < 6 leaves rows and columns d..5 of its blocks, and of
 * the couplings it is a row or column node of, exactly +0: assembly writes none of them,
 * a Schur update adds σ·(+0) to them (a sum that starts at +0 and adds products with a
 * zero factor stays +0), a coupling's padded column is (+0 − Σ (·)·0)·0 = +0 (the
 * padded rows of L are +0 and inv is 0 there). The kernels below therefore skip them:
 * a padded column c of the sum over c adds ±0 to a partial sum that is never −0, and a
 * padded row or column of a target would receive −σ·(+0): skipping either changes no
 * bit of any result. */

/* W ← V L⁻ᵀ for a coupling V stored transposed (Vt[6 c + i] = V_ic) and the unit lower
 * factor L of its column's pivot, of size d (columns r ≥ d are padding): W = L_qk D_k is
 * what the coupling keeps (L_qk = W D_k⁻¹ enters the Schur updates and the solve as W
 * times inv, the multiplication outside the chain of the columns). Each step updates a
 * whole column of V, 6 independent rows (vectorized); every entry sees the operations of
 * the row-by-row loop W_ir = V_ir − Σ_{c<r} W_ic L_rc in the same order. */
NC_INLINE void coupling_solve_d(double *restrict Vt, const double *restrict L, int d)
{
#ifdef NC_VECTOR
    v4 a[6];
    v2 b[6];
#pragma GCC unroll 6
    for (int r = 0; r < d; r++) {
        a[r] = LD4(Vt + 6 * r);
        b[r] = LD2(Vt + 6 * r + 4);
#pragma GCC unroll 6
        for (int c = 0; c < r; c++) {
            const double l = L[6 * r + c];
            a[r] -= a[c] * BC4(l);
            b[r] -= b[c] * BC2(l);
        }
        ST4(Vt + 6 * r, a[r]);
        ST2(Vt + 6 * r + 4, b[r]);
    }
#else
    for (int r = 0; r < d; r++) {
        double *col = Vt + 6 * r;
        for (int c = 0; c < r; c++) {
            const double l = L[6 * r + c], *vc = Vt + 6 * c;
            for (int i = 0; i < 6; i++)
                col[i] -= vc[i] * l;
        }
    }
#endif
}

NC_INLINE void coupling_solve(double *restrict Vt, const double *restrict L, int d)
{
    if (d == 6)                             /* bodies, 6-row joints: unrolled */
        coupling_solve_d(Vt, L, 6);
    else if (d == 5)                        /* revolute and prismatic joints */
        coupling_solve_d(Vt, L, 5);
    else
        coupling_solve_d(Vt, L, d);
}

/* T_xy −= Σ_{c<dk} X_xc D_c⁻¹ Y_yc for row-major T and transposed X, Y
 * (Xt[6 c + x] = X_xc), inv = D⁻¹ of the column's pivot: the Schur update
 * A_qp −= L_qk D_k L_pkᵀ = W_q D_k⁻¹ W_pᵀ of a diagonal target (X = Y = W_q; the upper
 * triangle, never read, in part too) or, on a coupling target stored transposed, its
 * transpose (X = W_p, Y = W_q). dx, dy, dk: the sizes of the nodes of X, Y and of the
 * column (the rest is padding; a dropped row of the column has inv 0). Each sum starts
 * at 0 and adds (X_xc D_c⁻¹) Y_yc by ascending c. */
NC_INLINE void schur_update_d(double *restrict T, const double *restrict Xt,
                              const double *restrict Yt, const double *restrict inv, int dx,
                              int dy, int dk)
{
#ifdef NC_VECTOR
    /* a diagonal target (X = Y) is read in its lower triangle only: the 2-lane part
     * (columns 4, 5) of rows 0-3 lies above the diagonal and is left out (ldl6 and
     * ldl_monitored overwrite that scratch before reading it) */
    const int diagonal = Xt == Yt;
#pragma GCC unroll 6
    for (int x = 0; x < dx; x++) {
        const int part2 = dy > 4 && (x >= 4 || !diagonal);
        v4 acc4 = {0.0, 0.0, 0.0, 0.0};
        v2 acc2 = {0.0, 0.0};
#pragma GCC unroll 6
        for (int c = 0; c < dk; c++) {
            const double v = Xt[6 * c + x] * inv[c];
            acc4 += BC4(v) * LD4(Yt + 6 * c);
            if (part2)
                acc2 += BC2(v) * LD2(Yt + 6 * c + 4);
        }
        ST4(T + 6 * x, LD4(T + 6 * x) - acc4);
        if (part2)
            ST2(T + 6 * x + 4, LD2(T + 6 * x + 4) - acc2);
    }
#else
    for (int x = 0; x < dx; x++) {
        double acc[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        for (int c = 0; c < dk; c++) {
            const double v = Xt[6 * c + x] * inv[c];
            for (int y = 0; y < dy; y++)
                acc[y] += v * Yt[6 * c + y];
        }
        for (int y = 0; y < dy; y++)
            T[6 * x + y] -= acc[y];
    }
#endif
}

NC_INLINE void schur_update(double *restrict T, const double *restrict Xt,
                            const double *restrict Yt, const double *restrict inv, int dx,
                            int dy, int dk)
{
    /* unrolled for nodes of 6 (bodies, 6-row joints) and 5 rows (revolute, prismatic) */
#define SCHUR_CASE(a, b, c)                                                               \
    case 100 * a + 10 * b + c:                                                            \
        schur_update_d(T, Xt, Yt, inv, a, b, c);                                          \
        return;
    switch (100 * dx + 10 * dy + dk) {
        SCHUR_CASE(6, 6, 6) SCHUR_CASE(6, 6, 5) SCHUR_CASE(6, 5, 6) SCHUR_CASE(5, 6, 6)
        SCHUR_CASE(5, 5, 6) SCHUR_CASE(6, 5, 5) SCHUR_CASE(5, 6, 5) SCHUR_CASE(5, 5, 5)
    default:
        schur_update_d(T, Xt, Yt, inv, dx, dy, dk);
    }
#undef SCHUR_CASE
}

/* The couplings and Schur updates of the column of node k (its pivot factored). */
NC_INLINE void eliminate_column(const ldl *s, int64_t k)
{
    const double *L = s->B + 36 * k, *iv = s->inv + 6 * k;
    double *C = s->B + 36 * s->N;
    const int dk = (int)s->size[k];
    for (int64_t e = s->col_ptr[k]; e < s->col_ptr[k + 1]; e++)
        coupling_solve(C + 36 * e, L, dk);
    for (int64_t u = s->upd_ptr[k]; u < s->upd_ptr[k + 1]; u++) {
        const int64_t q = s->upd_q[u], p = s->upd_p[u];
        schur_update(s->B + 36 * s->upd_t[u], C + 36 * p, C + 36 * q, iv,
                     (int)s->size[s->col_node[p]], (int)s->size[s->col_node[q]], dk);
    }
}

/* the solve's parts that the factorization runs in its sweep (nc_factor_solve_kernel) */
NC_INLINE void solve_prepare(const double *r, const double *s_, const ldl *sp, const int nl);
NC_INLINE void forward_node(const ldl *s, int64_t k, const int nl);

/* Block LDLᵀ in place: diagonal blocks become L_k and D_k (ldl6), couplings
 * W_qk = A_qk L_k⁻ᵀ = L_qk D_k. Returns
 * the failing node or −1; sets the dropped rows (from the first joint row) in s->dropped,
 * their number and the ambiguous decisions. fused: each node's step of the forward
 * substitution (one right-hand side, prepared in s->z) right after its column. */
NC_INLINE int64_t eliminate(const double *G, const double *threshold, double ratio, int forced,
                            int fused, const ldl *s, int64_t *count, int64_t *ambiguous)
{
    *count = *ambiguous = 0;
    for (int64_t k = 0; k < s->N; k++) {
        double *L = s->B + 36 * k, *iv = s->inv + 6 * k;
        if (s->sign[k] > 0.0) {
            if (!ldl6(L, iv, s->floor[k]))
                return k;
            eliminate_column(s, k);
            if (fused)
                forward_node(s, k, 1);
            continue;
        }
        int d = (int)s->size[k];
        *ambiguous += ldl_monitored(L, d, iv, s->node_row0[k], G, threshold, ratio,
                                    forced, s);
        if (forced && *ambiguous)
            return k;
        for (int r = 0; r < d; r++)
            if (iv[r] == 0.0)
                s->dropped[(*count)++] = s->node_row0[k] + r;
        eliminate_column(s, k);
        if (fused)
            forward_node(s, k, 1);
    }
    return -1;
}

/* One assembly and elimination in the metric of the mass blocks J4 (minimal eigenvalues
 * J4_min): FACTORED, SINGULAR_FRAME (body *where), NOT_POSITIVE_DEFINITE (a body pivot,
 * node *where) or, when forced, UNPIVOTABLE_JOINT (joint node *where). With a right-hand
 * side (r, rs; NULL: none; the true metric only) also its forward substitution. */
NC_INLINE int64_t factor_pass(const double *G, const double *J4, const double *J4_min,
                              const double *threshold, double ratio, int forced,
                              const double *r, const double *rs, ldl *s, int64_t *where,
                              int64_t *count, int64_t *ambiguous)
{
    s->J4 = J4, s->J4_min = J4_min;
    *count = *ambiguous = 0;
    *where = assemble(G, s);
    if (*where >= 0)
        return SINGULAR_FRAME;
    if (forced)             /* the true metric's last pass: the decided rows are known */
        augment(s);
    if (r != NULL)          /* after augment: z takes the augmented joints' terms */
        solve_prepare(r, rs, s, 1);
    *where = eliminate(G, threshold, ratio, forced, r != NULL, s, count, ambiguous);
    if (*where < 0)
        return FACTORED;
    return forced && *ambiguous ? UNPIVOTABLE_JOINT : NOT_POSITIVE_DEFINITE;
}

/* Factor in the true metric; a joint row whose keep/drop decision could differ in the
 * mass-free metric (unit-mass blocks) triggers a pass in that metric, whose decision the
 * final factorization in the true metric follows. Bodies of equal mass never need it; a
 * point mass (ratio ∞: the true metric does not bound the mass-free one) always does, and
 * starts there. With a right-hand side (r, rs; NULL: none) each pass in the true metric
 * runs its forward substitution too, the last one's for solve_finish. */
NC_INLINE int64_t factor_body(const double *G, const double *threshold, const nc_arr *P,
                              const nc_arr *Wk, int64_t *where, int64_t *count,
                              const double *r, const double *rs)
{
    ldl s = ldl_of(P, Wk);
    int64_t ambiguous, status;
    for (int pass = isinf(SCALAR(P[P_mass_ratio])) ? 1 : 0;; pass++) {
        /* true metric, mass-free, true metric forced */
        int unit = pass == 1;
        status = factor_pass(G, F64(P[unit ? P_unit_J4 : P_J4]),
                             F64(P[unit ? P_unit_J4_min : P_J4_min]), threshold,
                             pass == 0 ? SCALAR(P[P_mass_ratio]) : 1.0, pass == 2,
                             unit ? NULL : r, rs, &s, where, count, &ambiguous);
        if (status != FACTORED || (pass == 0 && ambiguous == 0) || pass == 2)
            return status;
        if (pass == 1) {
            uint8_t *decided = BOOL(Wk[WK_decided]);
            memset(decided, 0, s.m_joint);
            for (int64_t i = 0; i < *count; i++)
                decided[s.dropped[i]] = 1;
        }
    }
}

NC_INLINE int64_t nc_factor_kernel_body(const double *G, const double *threshold,
                                        const nc_arr *P, const nc_arr *Wk, int64_t *where,
                                        int64_t *count)
{
    return factor_body(G, threshold, P, Wk, where, count, NULL, NULL);
}
NC_DISPATCH(int64_t, nc_factor_kernel,
            (const double *G, const double *threshold, const nc_arr *P, const nc_arr *Wk,
             int64_t *where, int64_t *count),
            (G, threshold, P, Wk, where, count))

/* The solve runs on nl right-hand sides side by side (nl = 1, 2 or NC_LANES), in the lane
 * layout of sensitivity.c: entry q of right-hand side j at nl q + j, of the node vector
 * z too (entry i of node k at nl (6 k + i) + j). One pass over the factor's blocks
 * applies each block to the nl lanes; a lane's operations and their order are those of
 * nl = 1, so each right-hand side's result is bit for bit its own solve's, and for
 * nl > 1 the product of a block entry with the nl lanes is one vector instruction. */

/* x ← L⁻¹ x over the node's d rows, L unit lower (a dropped row's column of L is zero:
 * its entry reaches no other row, and D⁻¹ = 0 removes it; padded rows are left alone:
 * the couplings' padded rows and columns are zero, so they reach no result). Unrolled on
 * registers: only the last product of each row waits for the row before. */
NC_INLINE void forward_d(const double *restrict L, double *restrict x, int d, const int nl)
{
    /* v[nl c + j] is set (row c) before it is read (rows r > c); GCC's may-be-uninitialized
     * analysis loses that for nl > 1 with a variable d, and zeroing v costs 3 % of a run */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
    double v[6 * NC_LANES];
#pragma GCC diagnostic pop
#pragma GCC unroll 6
    for (int r = 0; r < d; r++) {
        double t[NC_LANES];
        for (int j = 0; j < nl; j++)
            t[j] = x[nl * r + j];
#pragma GCC unroll 6
        for (int c = 0; c < r; c++)
            for (int j = 0; j < nl; j++)
                t[j] -= L[6 * r + c] * v[nl * c + j];
        /* x[r] is read only above: stored with v (a copy loop after this one became a
         * memcpy call for a variable d, slowing the single solve) */
        for (int j = 0; j < nl; j++)
            x[nl * r + j] = v[nl * r + j] = t[j];
    }
}

/* x ← L⁻ᵀ D⁻¹ x over the node's d rows. Row r subtracts the rows below it from the
 * last to the first, so that the row just computed, r + 1, comes last: one product
 * and one subtraction per row wait for the row before. */
NC_INLINE void backward_d(const double *restrict L, const double *restrict inv,
                          double *restrict x, int d, const int nl)
{
    double v[6 * NC_LANES];
#pragma GCC unroll 6
    for (int r = d - 1; r >= 0; r--) {
        double t[NC_LANES];
        for (int j = 0; j < nl; j++)
            t[j] = x[nl * r + j] * inv[r];
#pragma GCC unroll 6
        for (int i = d - 1; i > r; i--)
            for (int j = 0; j < nl; j++)
                t[j] -= L[6 * i + r] * v[nl * i + j];
        for (int j = 0; j < nl; j++)        /* as in forward_d */
            x[nl * r + j] = v[nl * r + j] = t[j];
    }
}

NC_INLINE void forward(const double *restrict L, double *restrict x, int d, const int nl)
{
    if (d == 6)
        forward_d(L, x, 6, nl);
    else if (d == 5)
        forward_d(L, x, 5, nl);
    else
        forward_d(L, x, d, nl);
}

NC_INLINE void backward(const double *restrict L, const double *restrict inv,
                        double *restrict x, int d, const int nl)
{
    if (d == 6)
        backward_d(L, inv, x, 6, nl);
    else if (d == 5)
        backward_d(L, inv, x, 5, nl);
    else
        backward_d(L, inv, x, d, nl);
}

/* z_q −= W D⁻¹ z_k (= L_qk z_k) for a coupling W stored transposed, over the column
 * node's dk entries (vectorized over the rows for one lane, as before the lanes (faster
 * there than the lane loops), over the lanes for more; the same operations either
 * way) */
NC_INLINE void coupling_times(const double *restrict Vt, const double *restrict zk,
                              const double *restrict inv, double *restrict zq, int dk,
                              const int nl)
{
#ifdef NC_VECTOR
    if (nl == 1) {                  /* a row of V is a 6-vector: 4 + 2 lanes (nc_simd.h) */
        v4 acc4 = {0.0, 0.0, 0.0, 0.0};
        v2 acc2 = {0.0, 0.0};
#pragma GCC unroll 6
        for (int c = 0; c < dk; c++) {
            const double zc = zk[c] * inv[c];
            acc4 += LD4(Vt + 6 * c) * BC4(zc);
            acc2 += LD2(Vt + 6 * c + 4) * BC2(zc);
        }
        ST4(zq, LD4(zq) - acc4);
        ST2(zq + 4, LD2(zq + 4) - acc2);
        return;
    }
#endif
    double acc[6 * NC_LANES] = {0.0};
#pragma GCC unroll 6
    for (int c = 0; c < dk; c++) {
        double zc[NC_LANES];
        for (int j = 0; j < nl; j++)
            zc[j] = zk[nl * c + j] * inv[c];
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < nl; j++)
                acc[nl * i + j] += Vt[6 * c + i] * zc[j];
    }
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < nl; j++)
            zq[nl * i + j] -= acc[nl * i + j];
}

/* z_k −= Vᵀ x_q for a coupling stored transposed: dk dot products of the row node's dq
 * entries, each summed by ascending row */
NC_INLINE void coupling_transpose_times(const double *restrict Vt, const double *restrict xq,
                                        double *restrict zk, int dk, int dq, const int nl)
{
#pragma GCC unroll 6
    for (int c = 0; c < dk; c++) {
        double acc[NC_LANES];
        for (int j = 0; j < nl; j++)
            acc[j] = 0.0;
#pragma GCC unroll 6
        for (int i = 0; i < dq; i++)
            for (int j = 0; j < nl; j++)
                acc[j] += Vt[6 * c + i] * xq[nl * i + j];
        for (int j = 0; j < nl; j++)
            zk[nl * c + j] -= acc[j];
    }
}

/* S −= g lᵀ: S (3 rows of nl lanes) of the joint reaction on one axis, g (3,), l (nl) */
NC_INLINE void minus_outer(double *restrict S, const double *restrict g,
                           const double *restrict l, const int nl)
{
    for (int a = 0; a < 3; a++)
        for (int j = 0; j < nl; j++)
            S[nl * a + j] = S[nl * a + j] - g[a] * l[j];
}

/* (x, λ) of [[M, Gᵀ], [G, 0]] [x; λ] = [r; s] with the factor in Wk for nl right-hand
 * sides in the lane layout (r and x must not overlap; λ may be s, read before λ is
 * written; Wk's z and ap hold nl lanes): the rigid-body rows by a particular solution
 * a_p, the reduced system by forward and backward substitution over the nodes, then
 * a = a_p + T ξ and the rigid-body multipliers μ from G_RCᵀ μ = r − M a − G_Jᵀ λ_J.
 * In three parts: solve_prepare (a_p and the reduced right-hand side z), forward_node
 * (the forward substitution's step at a node) and solve_finish (the rest), so that
 * nc_factor_solve_kernel runs the forward substitution inside the factorization. */

/* a_p (s->ap) and the reduced right-hand side z (s->z) of the solve, in the true metric
 * (s->J4) with the axes E, F and joint blocks Gj of the last assembly */
NC_INLINE void solve_prepare(const double *r, const double *s_, const ldl *sp, const int nl)
{
    const ldl s = *sp;
    const int64_t n = s.n, N = s.N;
    const double *E = s.E, *F = s.F, *Gj = s.Gj, *B = s.B;
    double *z = s.z, *ap = s.ap;
    memset(z, 0, nl * 6 * N * sizeof(double));
    for (int64_t row = 0; row < s.n_row_z; row++)
        for (int j = 0; j < nl; j++)
            z[nl * s.row_z[row] + j] = s_[nl * (6 * n + row) + j];
    for (int64_t i = 0; i < n; i++) {
        /* particular solution of the rigid-body rows: δe_l = Σ_k S_kl f_k */
        const double *si = s_ + nl * 6 * i, *Fi = F + 9 * i, *J = s.J4 + 16 * i;
        const double *ri = r + nl * 12 * i;
        double *api = ap + nl * 12 * i, *zi = z + nl * 6 * s.body_node[i];
        double Sk[9 * NC_LANES], S3[3 * NC_LANES], acc[NC_LANES];
        for (int k = 0; k < 3; k++)
            for (int l = 0; l < 3; l++)
                for (int j = 0; j < nl; j++)
                    Sk[nl * (3 * k + l) + j] = k == l ? si[nl * k + j]
                                                      : 0.5 * si[nl * (2 + k + l) + j];
        for (int l = 0; l < 3; l++)
            for (int a = 0; a < 3; a++) {
                for (int j = 0; j < nl; j++)
                    acc[j] = 0.0;
                for (int k = 0; k < 3; k++)
                    for (int j = 0; j < nl; j++)
                        acc[j] += Sk[nl * (3 * k + l) + j] * Fi[3 * k + a];
                for (int j = 0; j < nl; j++)
                    api[nl * (3 * (1 + l) + a) + j] = acc[j];
            }
        for (int j = 0; j < 3 * nl; j++)
            api[j] = 0.0;
        /* reduced right-hand side Tᵀ (r − M a_p) */
        for (int p = 0; p < 4; p++) {
            for (int a = 0; a < 3; a++) {
                for (int j = 0; j < nl; j++)
                    acc[j] = ri[nl * (3 * p + a) + j];
                for (int q = 1; q < 4; q++)
                    for (int j = 0; j < nl; j++)
                        acc[j] -= J[4 * p + q] * api[nl * (3 * q + a) + j];
                for (int j = 0; j < nl; j++)
                    S3[nl * a + j] = acc[j];
            }
            if (p == 0)
                for (int j = 0; j < 3 * nl; j++)
                    zi[j] = S3[j];
            else
                for (int j = 0; j < nl; j++)
                    cross_add(zi + 3 * nl + j, nl, E + 9 * i + 3 * (p - 1), 1, S3 + j, nl);
        }
        int64_t cur = -1;                  /* − G_J a_p, a run of one entry in registers */
        double zc[NC_LANES] = {0.0};
        for (int64_t u = s.body_axis_ptr[i]; u < s.body_axis_ptr[i + 1]; u++) {
            int64_t t = s.jp_axis[u];
            const double *v = ap + nl * 3 * s.jp_slot[t], *g = Gj + 3 * t;
            if (s.jp_z[u] != cur) {
                for (int j = 0; j < nl && cur >= 0; j++)
                    z[nl * cur + j] = zc[j];
                cur = s.jp_z[u];
                for (int j = 0; j < nl; j++)
                    zc[j] = z[nl * cur + j];
            }
            for (int j = 0; j < nl; j++)
                zc[j] -= g[0] * v[j] + g[1] * v[nl + j] + g[2] * v[2 * nl + j];
        }
        for (int j = 0; j < nl && cur >= 0; j++)
            z[nl * cur + j] = zc[j];
    }
    for (int64_t k = 0; k < s.n_al; k++) {  /* ρ Ĉᵀ ŝ of the augmented joints (augment) */
        const double *Ck = B + 36 * s.al_copy[k], *zj = z + nl * 6 * s.al_jnode[k];
        double *zu = z + nl * 6 * s.al_node[k];
        for (int a = 0; a < 6; a++)
            for (int64_t r = 0; r < s.al_size[k]; r++)
                for (int j = 0; j < nl; j++)
                    zu[nl * a + j] += s.al_rho[k] * Ck[6 * r + a] * zj[nl * r + j];
    }
}

/* The forward substitution's step at node k (its column factored): z_k ← L_k⁻¹ z_k,
 * then z_q −= L_qk z_k for the nodes q below it. After the steps of all nodes before
 * it, z_k has all its terms: the steps run in the order of the nodes, from
 * solve_lanes or inside the factorization's sweep. */
NC_INLINE void forward_node(const ldl *s, int64_t k, const int nl)
{
    const double *C = s->B + 36 * s->N, *iv = s->inv + 6 * k;
    const int dk = (int)s->size[k];
    double *zk = s->z + nl * 6 * k;
    forward(s->B + 36 * k, zk, dk, nl);
    for (int64_t e = s->col_ptr[k]; e < s->col_ptr[k + 1]; e++) {
        double *zq = s->z + nl * 6 * s->col_node[e];
        if (dk == 6)
            coupling_times(C + 36 * e, zk, iv, zq, 6, nl);
        else if (dk == 5)
            coupling_times(C + 36 * e, zk, iv, zq, 5, nl);
        else
            coupling_times(C + 36 * e, zk, iv, zq, dk, nl);
    }
}

/* The backward substitution, λ_J, a = a_p + T ξ and μ, after the forward substitution */
NC_INLINE void solve_finish(const double *r, const ldl *sp, double *x, double *lam,
                            const int nl)
{
    const ldl s = *sp;
    const int64_t n = s.n, N = s.N;
    const double *E = s.E, *F = s.F, *Gj = s.Gj, *B = s.B, *C = B + 36 * N;
    double *z = s.z, *ap = s.ap;
    for (int64_t k = N - 1; k >= 0; k--) {  /* backward substitution */
        const int dk = (int)s.size[k];
        double *zk = z + nl * 6 * k;
        for (int64_t e = s.col_ptr[k]; e < s.col_ptr[k + 1]; e++) {
            const int dq = (int)s.size[s.col_node[e]];
            const double *xq = z + nl * 6 * s.col_node[e];
            if (dk == 6 && dq == 6)
                coupling_transpose_times(C + 36 * e, xq, zk, 6, 6, nl);
            else if (dk == 5 && dq == 6)
                coupling_transpose_times(C + 36 * e, xq, zk, 5, 6, nl);
            else if (dk == 6 && dq == 5)
                coupling_transpose_times(C + 36 * e, xq, zk, 6, 5, nl);
            else
                coupling_transpose_times(C + 36 * e, xq, zk, dk, dq, nl);
        }
        backward(B + 36 * k, s.inv + 6 * k, zk, dk, nl);
    }
    for (int64_t row = 0; row < s.n_row_z; row++)
        for (int j = 0; j < nl; j++)
            lam[nl * (6 * n + row) + j] = z[nl * s.row_z[row] + j];
    for (int64_t i = 0; i < n; i++) {
        const double *xi = z + nl * 6 * s.body_node[i], *Fi = F + 9 * i;
        const double *J = s.J4 + 16 * i, *ri = r + nl * 12 * i, *api = ap + nl * 12 * i;
        double *A = x + nl * 12 * i, S3[9 * NC_LANES], acc[NC_LANES];
        for (int j = 0; j < 3 * nl; j++)
            A[j] = xi[j];
        for (int k = 0; k < 3; k++) {
            double *Ak = A + nl * 3 * (1 + k);
            for (int j = 0; j < 3 * nl; j++)
                Ak[j] = api[nl * 3 * (1 + k) + j];
            for (int j = 0; j < nl; j++)
                cross_add(Ak + j, nl, xi + 3 * nl + j, nl, E + 9 * i + 3 * k, 1);
        }
        for (int p = 1; p < 4; p++)
            for (int a = 0; a < 3; a++) {
                for (int j = 0; j < nl; j++)
                    acc[j] = ri[nl * (3 * p + a) + j];
                for (int q = 0; q < 4; q++)
                    for (int j = 0; j < nl; j++)
                        acc[j] -= J[4 * p + q] * A[nl * (3 * q + a) + j];
                for (int j = 0; j < nl; j++)
                    S3[nl * (3 * (p - 1) + a) + j] = acc[j];
            }
        for (int64_t u = s.body_axis_ptr[i]; u < s.body_axis_ptr[i + 1]; u++) { /* − G_Jᵀ λ_J */
            int64_t t = s.jp_axis[u];
            const double *l = lam + nl * s.jp_row[t], *g = Gj + 3 * t;
            switch ((uint64_t)s.jp_slot[t] % 4) {   /* constant indices: S3 in registers */
            case 1:
                minus_outer(S3, g, l, nl);
                break;
            case 2:
                minus_outer(S3 + 3 * nl, g, l, nl);
                break;
            default:
                minus_outer(S3 + 6 * nl, g, l, nl);
            }
        }
        for (int k = 0; k < 3; k++)
            for (int l = k; l < 3; l++) {       /* μ_kl = ½ (f_k · z_l + f_l · z_k) */
                for (int j = 0; j < nl; j++)
                    acc[j] = 0.0;
                for (int a = 0; a < 3; a++)
                    for (int j = 0; j < nl; j++)
                        acc[j] += Fi[3 * k + a] * S3[nl * (3 * l + a) + j]
                                  + Fi[3 * l + a] * S3[nl * (3 * k + a) + j];
                for (int j = 0; j < nl; j++)
                    lam[nl * (k == l ? 6 * i + k : 6 * i + 2 + k + l) + j] = 0.5 * acc[j];
            }
    }
}

/* the solve on its own: its three parts in a row */
NC_INLINE void solve_lanes(const double *r, const double *s_, const nc_arr *P,
                           const nc_arr *Wk, double *x, double *lam, const int nl)
{
    const ldl s = ldl_of(P, Wk);
    solve_prepare(r, s_, &s, nl);
    for (int64_t k = 0; k < s.N; k++)
        forward_node(&s, k, nl);
    solve_finish(r, &s, x, lam, nl);
}

NC_INLINE void nc_solve_kernel_body(const double *r, const double *s, const nc_arr *P,
                                    const nc_arr *Wk, double *x, double *lam)
{
    solve_lanes(r, s, P, Wk, x, lam, 1);
}
NC_DISPATCH_VOID(nc_solve_kernel,
                 (const double *r, const double *s, const nc_arr *P, const nc_arr *Wk,
                  double *x, double *lam),
                 (r, s, P, Wk, x, lam))

/* nc_factor_kernel, then (FACTORED) nc_solve_kernel(r, s, P, Wk, x, lam), the same
 * operations in the same order, with its forward substitution run inside the
 * factorization's sweep: a node's step right after its column, while its blocks are
 * in cache, the substitution's chain of dependent operations beside the elimination's */
NC_INLINE int64_t nc_factor_solve_kernel_body(const double *G, const double *threshold,
                                              const nc_arr *P, const nc_arr *Wk,
                                              int64_t *where, int64_t *count, const double *r,
                                              const double *s, double *x, double *lam)
{
    int64_t status = factor_body(G, threshold, P, Wk, where, count, r, s);
    if (status == FACTORED) {
        const ldl st = ldl_of(P, Wk);
        solve_finish(r, &st, x, lam, 1);
    }
    return status;
}
NC_DISPATCH(int64_t, nc_factor_solve_kernel,
            (const double *G, const double *threshold, const nc_arr *P, const nc_arr *Wk,
             int64_t *where, int64_t *count, const double *r, const double *s, double *x,
             double *lam),
            (G, threshold, P, Wk, where, count, r, s, x, lam))

/* nl = 2 or NC_LANES right-hand sides in the lane layout */
NC_INLINE void nc_solve_lanes_body(const double *r, const double *s, const nc_arr *P,
                                   const nc_arr *Wk, double *x, double *lam, int nl)
{
    if (nl == 2)
        solve_lanes(r, s, P, Wk, x, lam, 2);
    else
        solve_lanes(r, s, P, Wk, x, lam, NC_LANES);
}
NC_DISPATCH_VOID(nc_solve_lanes,
                 (const double *r, const double *s, const nc_arr *P, const nc_arr *Wk,
                  double *x, double *lam, int nl),
                 (r, s, P, Wk, x, lam, nl))

/* ------------------------------------------------------------ range space (CHOLMOD) */
/* data of S = G M⁻¹ Gᵀ (lower triangle) from the Jacobian blocks G (nnz, 3): row blocks
 * Gd (4 slots × 3) of each (row, body), U = (M_b⁻¹ ⊗ I3) Gd, data[target] += U_p · Gd_q. */
static void range_space(const double *G, const int64_t *entry_block, const int64_t *entry_slot,
                        int64_t nnz, const int64_t *block_body, int64_t n_blocks,
                        const double *Minv, const int64_t *pair_p, const int64_t *pair_q,
                        const int64_t *pair_target, int64_t n_pairs, double *Gd, double *U,
                        double *data, int64_t n_data)
{
    memset(Gd, 0, 12 * n_blocks * sizeof(double));
    for (int64_t e = 0; e < nnz; e++)
        for (int c = 0; c < 3; c++)
            Gd[12 * entry_block[e] + 3 * entry_slot[e] + c] = G[3 * e + c];
    for (int64_t b = 0; b < n_blocks; b++) {
        const double *J = Minv + 16 * block_body[b], *g = Gd + 12 * b;
        for (int sl = 0; sl < 4; sl++)
            for (int c = 0; c < 3; c++) {
                double acc = 0.0;
                for (int t = 0; t < 4; t++)
                    acc += J[4 * sl + t] * g[3 * t + c];
                U[12 * b + 3 * sl + c] = acc;
            }
    }
    memset(data, 0, n_data * sizeof(double));
    for (int64_t k = 0; k < n_pairs; k++) {
        const double *up = U + 12 * pair_p[k], *gq = Gd + 12 * pair_q[k];
        double acc = 0.0;
        for (int sl = 0; sl < 4; sl++)
            acc += up[3 * sl] * gq[3 * sl] + up[3 * sl + 1] * gq[3 * sl + 1]
                   + up[3 * sl + 2] * gq[3 * sl + 2];
        data[pair_target[k]] += acc;
    }
}

/* ------------------------------------------------------------------ wrappers */
NC_WRAPPER(factor_kernel)
{
    nc_arr p[P_COUNT], w[WK_COUNT];
    nc_value a[4] = {[2] = {.tuple = p}, [3] = {.tuple = w}};
    if (nc_parse(args, nargs, "ddPW", a, "factor_kernel") < 0)
        return NULL;
    const nc_arr *P = a[2].tuple, *Wk = a[3].tuple;
    /* the last Jacobian block the plan reads: its last joint block, else its last axis */
    const nc_arr *jp = &P[P_jp], *e_index = &P[P_e_index];
    int64_t last = jp->size ? I64(*jp)[jp->size - 1] : I64(*e_index)[e_index->size - 1];
    if (a[0].arr.ndim != 2 || a[0].arr.shape[1] != 3 || a[0].arr.shape[0] <= last
        || a[1].arr.size != Wk[WK_bound].size) {
        PyErr_Format(PyExc_ValueError, "core.factor_kernel: G must be (nnz, 3) with more than "
                     "%lld rows and threshold (%lld,) for this plan", (long long)last,
                     (long long)Wk[WK_bound].size);
        return NULL;
    }
    int64_t where, count;
    int64_t status = nc_factor_kernel(F64(a[0].arr), F64(a[1].arr), P, Wk, &where, &count);
    return Py_BuildValue("LLL", (long long)status, (long long)where, (long long)count);
}

NC_WRAPPER(solve_kernel)
{
    nc_arr p[P_COUNT], w[WK_COUNT];
    nc_value a[6] = {[2] = {.tuple = p}, [3] = {.tuple = w}};
    if (nc_parse(args, nargs, "ddPWdd", a, "solve_kernel") < 0)
        return NULL;
    const nc_arr *P = a[2].tuple, *Wk = a[3].tuple;
    int64_t n = P[P_J4].shape[0], m = 6 * n + Wk[WK_bound].size;
    if (a[0].arr.size != 12 * n || a[4].arr.size != 12 * n || a[1].arr.size != m
        || a[5].arr.size != m) {
        PyErr_Format(PyExc_ValueError, "core.solve_kernel: r and x must have %lld entries, "
                     "s and lam %lld", (long long)(12 * n), (long long)m);
        return NULL;
    }
    if (a[0].arr.p == a[4].arr.p) {
        PyErr_SetString(PyExc_ValueError, "core.solve_kernel: x must not be r");
        return NULL;
    }
    nc_solve_kernel(F64(a[0].arr), F64(a[1].arr), P, Wk, F64(a[4].arr), F64(a[5].arr));
    Py_RETURN_NONE;
}

NC_WRAPPER(range_space)
{
    nc_value a[11];
    if (nc_parse(args, nargs, "dqqqdqqqddd", a, "range_space") < 0)
        return NULL;
    if (a[0].arr.size != 3 * a[1].arr.size) {
        PyErr_SetString(PyExc_ValueError, "core.range_space: G must be (nnz, 3) for the plan");
        return NULL;
    }
    range_space(F64(a[0].arr), I64(a[1].arr), I64(a[2].arr), a[1].arr.size, I64(a[3].arr),
                a[3].arr.size, F64(a[4].arr), I64(a[5].arr), I64(a[6].arr), I64(a[7].arr),
                a[5].arr.size, F64(a[8].arr), F64(a[9].arr), F64(a[10].arr), a[10].arr.size);
    Py_RETURN_NONE;
}

PyMethodDef nc_blockldl_methods[] = {
    NC_METHOD(factor_kernel, "factor_kernel(G, threshold, P, Wk) -> (status, where, count): "
              "the block LDLᵀ with constraint partitioning of the Jacobian blocks G (nnz, 3) "
              "into Wk (natcoord.linalg.blockldl.BlockLDL); threshold: the joint rows' "
              "relative pivot thresholds; dropped rows in Wk.dropped[:count]."),
    NC_METHOD(solve_kernel, "solve_kernel(r, s, P, Wk, x, lam): (x, λ) of "
              "[[M, Gᵀ], [G, 0]] [x; λ] = [r; s] with the factor in Wk, written in place."),
    NC_METHOD(range_space, "range_space(G, entry_block, entry_slot, block_body, Minv, pair_p, "
              "pair_q, pair_target, Gd, U, data): data of S = G M⁻¹ Gᵀ (lower triangle, "
              "natcoord.linalg.cholmod.RangeSpacePlan) in place; Gd, U scratch (blocks, 4, 3)."),
    {NULL, NULL, 0, NULL},
};
