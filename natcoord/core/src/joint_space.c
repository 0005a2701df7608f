/* Joint space out: the DOF twists Ξ of a model's tree joints and the joint rates q̇ and
 * accelerations q̈ of natural coordinates (natcoord/dynamics/joint_space.py, its module
 * docstring "Kinematics"; docs/method.md#11-coordinates).
 *
 * For one state, per tree joint with DOF (bodies a and b, −1 ground):
 *   the bodies' twists V = (ω, v_O) and spatial accelerations A = (α, a_O) from their slots
 *     ω = ½ Σ e_k × ė_k,  v_O = ȯ − ω × o,  α = ½ Σ e_k × ë_k,  a_O = ö − α × o − ω × ȯ;
 *   the DOF's unit twists (rows of Ξ): turning about the axis w through the point c,
 *     (w, c × w); sliding along w, (0, w); w and c fixed in their bodies, so sums of the
 *     slots (o, e1, e2, e3) with constant weights (JointSpace._dof_tables; weight 1 on
 *     o for a point, 0 for a direction); a compound joint's twists depend on its
 *     coordinates and are given by the caller (DOF_GIVEN rows are read, not written);
 *   q̇_j = Ξ⁺ (V_b − V_a) and, from A_b − A_a = V_a ×ₘ Ξᵀ q̇ + Ξᵀ q̈ + β,
 *     q̈_j = Ξ⁺ (A_b − A_a − V_a ×ₘ Ξᵀ q̇_j − β_j),  Ξ⁺ = (Ξ Ξᵀ)⁻¹ Ξ,
 *     with the bias β_j = Ξ̇_rel q̇ = Σ_{i<k} q̇_i q̇_k Ξ_i ×ₘ Ξ_k of a joint whose later
 *     axes turn with the earlier (universal, compound; zero for the others).
 * A trajectory's states are looped over here, so that its cost is per state, not the
 * fixed cost of NumPy calls on arrays of a few vectors (which made q̈ of one state cost
 * 20–35 times Pinocchio's ABA).
 *
 * Tables (int64 unless said):
 *   dofs (nv, 3): per q̇ column the axis body, the point body, the kind (DOF_*);
 *   weights (nv, 8) float64: the axis's four slot weights, then the point's;
 *   joints (nj, 5): per joint with DOF a, b, its first q̇ column, its DOF count, and
 *     whether its axes are chained (β ≠ 0). */
#include "nc_core.h"

enum { DOF_SLIDE, DOF_TURN, DOF_GIVEN };
enum { DOF_AXIS_BODY, DOF_POINT_BODY, DOF_KIND, DOF_FIELDS };
enum { J_A, J_B, J_START, J_COUNT, J_CHAINED, J_FIELDS };
#define DOF_WEIGHTS 8
/* a joint's DOF: at most a free joint's 6 */
#define MAX_JOINT_DOF 6

static void cross(const double *a, const double *b, double *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* the motion cross product (ω, v) ×ₘ (ω', v') = (ω × ω', ω × v' + v × ω') */
static void motion_cross(const double *V, const double *W, double *out)
{
    double t[3];
    cross(V, W, out);
    cross(V, W + 3, out + 3);
    cross(V + 3, W, t);
    for (int i = 0; i < 3; i++)
        out[3 + i] += t[i];
}

static double dot(const double *a, const double *b, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* slot m (0 the origin, 1–3 the axes) of body `body` in one state's slots X (4 n, 3);
 * ground (−1) is the world frame: origin 0, the world axes */
static void slot(const double *X, int64_t body, int m, double out[3])
{
    if (body >= 0) {
        memcpy(out, X + 12 * body + 3 * m, 3 * sizeof(double));
        return;
    }
    out[0] = out[1] = out[2] = 0.0;
    if (m > 0)
        out[m - 1] = 1.0;
}

/* the unit twist (6) of a DOF that is not DOF_GIVEN, at one state's slots X */
static void dof_twist(const double *X, const int64_t *dof, const double *weights, double *xi)
{
    double w[3] = {0.0, 0.0, 0.0}, c[3] = {0.0, 0.0, 0.0}, s[3];
    for (int m = 0; m < 4; m++) {
        slot(X, dof[DOF_AXIS_BODY], m, s);
        for (int i = 0; i < 3; i++)
            w[i] += weights[m] * s[i];
        slot(X, dof[DOF_POINT_BODY], m, s);
        for (int i = 0; i < 3; i++)
            c[i] += weights[4 + m] * s[i];
    }
    if (dof[DOF_KIND] == DOF_TURN) {
        memcpy(xi, w, 3 * sizeof(double));
        cross(c, w, xi + 3);
    } else {
        xi[0] = xi[1] = xi[2] = 0.0;
        memcpy(xi + 3, w, 3 * sizeof(double));
    }
}

/* the twists of one state's DOF (Xi (nv, 6)) that are not DOF_GIVEN */
static void state_twists(const int64_t *dofs, const double *weights, int64_t nv,
                         const double *X, double *Xi)
{
    for (int64_t k = 0; k < nv; k++)
        if (dofs[DOF_FIELDS * k + DOF_KIND] != DOF_GIVEN)
            dof_twist(X, dofs + DOF_FIELDS * k, weights + DOF_WEIGHTS * k, Xi + 6 * k);
}

/* β = Σ_{i<k} q̇_i q̇_k Ξ_i ×ₘ Ξ_k (6) of one joint; Xi, qd of its own DOF */
static void joint_bias(const int64_t *joint, const double *Xi, const double *qd, double *out)
{
    double t[6];
    memset(out, 0, 6 * sizeof(double));
    if (!joint[J_CHAINED])
        return;
    for (int64_t k = 1; k < joint[J_COUNT]; k++)
        for (int64_t i = 0; i < k; i++) {
            motion_cross(Xi + 6 * i, Xi + 6 * k, t);
            for (int c = 0; c < 6; c++)
                out[c] += qd[i] * qd[k] * t[c];
        }
}

/* the twist V (6) and, when Xa is not NULL, the spatial acceleration A (6) of body
 * `body` from one state's slots, slot velocities and accelerations (ground: zero) */
static void body_motion(const double *X, const double *Xv, const double *Xa, int64_t body,
                        double *V, double *A)
{
    double t[3], u[3];
    memset(V, 0, 6 * sizeof(double));
    memset(A, 0, 6 * sizeof(double));
    if (body < 0)
        return;
    const double *B = X + 12 * body, *Bv = Xv + 12 * body, *Ba = Xa ? Xa + 12 * body : NULL;
    for (int k = 1; k < 4; k++) {
        cross(B + 3 * k, Bv + 3 * k, t);
        for (int i = 0; i < 3; i++)
            V[i] += 0.5 * t[i];
        if (Ba != NULL) {
            cross(B + 3 * k, Ba + 3 * k, t);
            for (int i = 0; i < 3; i++)
                A[i] += 0.5 * t[i];
        }
    }
    cross(V, B, t);
    for (int i = 0; i < 3; i++)
        V[3 + i] = Bv[i] - t[i];
    if (Ba != NULL) {
        cross(A, B, t);
        cross(V, Bv, u);
        for (int i = 0; i < 3; i++)
            A[3 + i] = Ba[i] - t[i] - u[i];
    }
}

/* The Cholesky factor L (m × m, lower) of the Gram matrix Ξ Ξᵀ of a joint's m twists:
 * Ξ⁺ r = (Ξ Ξᵀ)⁻¹ Ξ r is then two triangular solves, the factor shared by q̇ and q̈.
 * Returns -1 where the twists are dependent (a non-positive pivot). */
static int gram_factor(const double *Xi, int64_t m, double *L)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j <= i; j++) {
            double s = dot(Xi + 6 * i, Xi + 6 * j, 6);
            for (int64_t k = 0; k < j; k++)
                s -= L[m * i + k] * L[m * j + k];
            if (i == j) {
                if (!(s > 0.0))
                    return -1;
                L[m * i + i] = sqrt(s);
            } else {
                L[m * i + j] = s / L[m * j + j];
            }
        }
    return 0;
}

/* x (m) = Ξ⁺ r for the twists Xi (m, 6) with the factor L of gram_factor */
static void gram_solve(const double *Xi, int64_t m, const double *L, const double *r,
                       double *x)
{
    for (int64_t i = 0; i < m; i++) {        /* L y = Ξ r */
        double s = dot(Xi + 6 * i, r, 6);
        for (int64_t k = 0; k < i; k++)
            s -= L[m * i + k] * x[k];
        x[i] = s / L[m * i + i];
    }
    for (int64_t i = m - 1; i >= 0; i--) {   /* Lᵀ x = y */
        double s = x[i];
        for (int64_t k = i + 1; k < m; k++)
            s -= L[m * k + i] * x[k];
        x[i] = s / L[m * i + i];
    }
}

/* q̇ (nv) and, when Xa is not NULL, q̈ (nv) of one state; Xi (nv, 6) its twists with the
 * DOF_GIVEN rows filled (the others are written). Returns -1 and the joint in *where
 * where a joint's twists are dependent. */
static int state_rates(const int64_t *dofs, const double *weights, int64_t nv,
                       const int64_t *joints, int64_t nj, const double *X, const double *Xv,
                       const double *Xa, double *Xi, double *qd, double *qdd, int64_t *where)
{
    double Va[6], Vb[6], Aa[6], Ab[6], r[6], rel[6], t[6], bias[6];
    double L[MAX_JOINT_DOF * MAX_JOINT_DOF];
    state_twists(dofs, weights, nv, X, Xi);
    for (int64_t j = 0; j < nj; j++) {
        const int64_t *joint = joints + J_FIELDS * j;
        int64_t s = joint[J_START], m = joint[J_COUNT];
        const double *xi = Xi + 6 * s;
        if (gram_factor(xi, m, L) < 0) {
            *where = j;
            return -1;
        }
        body_motion(X, Xv, Xa, joint[J_A], Va, Aa);
        body_motion(X, Xv, Xa, joint[J_B], Vb, Ab);
        for (int c = 0; c < 6; c++)
            r[c] = Vb[c] - Va[c];
        gram_solve(xi, m, L, r, qd + s);
        if (Xa == NULL)
            continue;
        /* A_b − A_a = V_a ×ₘ Ξᵀ q̇ + Ξᵀ q̈ + β (module docstring of joint_space.py) */
        memset(rel, 0, sizeof rel);
        for (int64_t k = 0; k < m; k++)
            for (int c = 0; c < 6; c++)
                rel[c] += xi[6 * k + c] * qd[s + k];
        motion_cross(Va, rel, t);
        joint_bias(joint, xi, qd + s, bias);
        for (int c = 0; c < 6; c++)
            r[c] = Ab[c] - Aa[c] - t[c] - bias[c];
        gram_solve(xi, m, L, r, qdd + s);
    }
    return 0;
}

/* ------------------------------------------------------------------ wrappers */
static int fail(const char *function, const char *message, const char *argument,
                int64_t got, int64_t want)
{
    PyErr_Format(PyExc_ValueError, "core.%s: %s %s (got %lld, want %lld)", function,
                 argument, message, (long long)got, (long long)want);
    return -1;
}

/* The tables' shapes and entries against the number of bodies n and of DOF nv (a body
 * index is −1 or below n; the joints' DOF consecutive ranges of q̇ columns, at most
 * MAX_JOINT_DOF each, covering all nv); a table passed as NULL is not checked. A wrong
 * table would read out of bounds: the check costs a pass over nv + joints rows. */
static int check_tables(const char *function, const nc_arr *dofs, const nc_arr *weights,
                        const nc_arr *joints, int64_t n, int64_t nv)
{
    if (dofs != NULL) {
        if (dofs->ndim != 2 || dofs->shape[1] != DOF_FIELDS)
            return fail(function, "must have shape (nv, 3): columns", "dofs", dofs->shape[1],
                        DOF_FIELDS);
        if (dofs->shape[0] != nv)
            return fail(function, "must have one row per q̇ column: rows", "dofs",
                        dofs->shape[0], nv);
        for (int64_t k = 0; k < nv; k++) {
            const int64_t *d = I64(*dofs) + DOF_FIELDS * k;
            for (int f = DOF_AXIS_BODY; f <= DOF_POINT_BODY; f++)
                if (d[f] < -1 || d[f] >= n)
                    return fail(function, "names a body out of range:", "dofs", d[f], n);
            if (d[DOF_KIND] < DOF_SLIDE || d[DOF_KIND] > DOF_GIVEN)
                return fail(function, "has an unknown kind:", "dofs", d[DOF_KIND], DOF_GIVEN);
        }
    }
    if (weights != NULL && (weights->ndim != 2 || weights->shape[0] != nv
                            || weights->shape[1] != DOF_WEIGHTS))
        return fail(function, "must have shape (nv, 8): size", "weights", weights->size,
                    nv * DOF_WEIGHTS);
    if (joints != NULL) {
        if (joints->ndim != 2 || joints->shape[1] != J_FIELDS)
            return fail(function, "must have shape (joints, 5): columns", "joints",
                        joints->shape[1], J_FIELDS);
        int64_t next = 0;
        for (int64_t j = 0; j < joints->shape[0]; j++) {
            const int64_t *jt = I64(*joints) + J_FIELDS * j;
            if (jt[J_A] < -1 || jt[J_A] >= n || jt[J_B] < -1 || jt[J_B] >= n)
                return fail(function, "names a body out of range: a joint's body", "joints",
                            jt[J_A] < -1 || jt[J_A] >= n ? jt[J_A] : jt[J_B], n);
            if (jt[J_START] != next || jt[J_COUNT] < 1 || jt[J_COUNT] > MAX_JOINT_DOF)
                return fail(function, "must list the q̇ columns in order, 1 to 6 per joint: "
                            "a joint's first column", "joints", jt[J_START], next);
            next += jt[J_COUNT];
        }
        if (next != nv)
            return fail(function, "must cover the q̇ columns: total", "joints", next, nv);
    }
    return 0;
}

/* the number of states k of slots X (k, 4 n, 3), the argument `name` */
static int states_of(const char *function, const char *name, const nc_arr *X, int64_t n,
                     int64_t *k)
{
    if (n < 1 || X->size % (12 * n) != 0)
        return fail(function, "must hold 12 n numbers per state, n ≥ 1 bodies: its size",
                    name, X->size, 12 * n);
    *k = X->size / (12 * n);
    return 0;
}

static int check_size(const char *function, const char *argument, const nc_arr *a,
                      int64_t want)
{
    return a->size == want ? 0 : fail(function, "has the wrong size", argument, a->size, want);
}

NC_WRAPPER(joint_twists)
{
    nc_value a[5];
    int64_t k;
    if (nc_parse(args, nargs, "qdidd", a, "joint_twists") < 0)
        return NULL;
    int64_t nv = a[0].arr.shape[0], n = a[2].i;
    if (states_of("joint_twists", "X", &a[3].arr, n, &k) < 0
        || check_tables("joint_twists", &a[0].arr, &a[1].arr, NULL, n, nv) < 0
        || check_size("joint_twists", "Xi (nv × 6 per state of X)", &a[4].arr, 6 * nv * k) < 0)
        return NULL;
    for (int64_t s = 0; s < k; s++)
        state_twists(I64(a[0].arr), F64(a[1].arr), nv, F64(a[3].arr) + 12 * n * s,
                     F64(a[4].arr) + 6 * nv * s);
    Py_RETURN_NONE;
}

NC_WRAPPER(joint_bias)
{
    nc_value a[4];
    if (nc_parse(args, nargs, "qddd", a, "joint_bias") < 0)
        return NULL;
    const nc_arr *joints = &a[0].arr, *Xi = &a[1].arr;
    int64_t nj = joints->shape[0], nv = Xi->ndim >= 2 ? Xi->shape[Xi->ndim - 2] : -1;
    if (Xi->ndim < 2 || Xi->shape[Xi->ndim - 1] != 6) {
        fail("joint_bias", "must have shape (..., nv, 6): its last axis", "Xi",
             Xi->shape[Xi->ndim > 0 ? Xi->ndim - 1 : 0], 6);
        return NULL;
    }
    int64_t k = nv > 0 ? Xi->size / (6 * nv) : 0;
    /* the bodies are not read here: any index passes */
    if (check_tables("joint_bias", NULL, NULL, joints, INT64_MAX, nv) < 0
        || check_size("joint_bias", "qd (nv per state of Xi)", &a[2].arr, nv * k) < 0
        || check_size("joint_bias", "out (joints × 6 per state of Xi)", &a[3].arr,
                      6 * nj * k) < 0)
        return NULL;
    for (int64_t s = 0; s < k; s++)
        for (int64_t j = 0; j < nj; j++) {
            const int64_t *joint = I64(*joints) + J_FIELDS * j;
            int64_t start = joint[J_START];
            joint_bias(joint, F64(*Xi) + 6 * (nv * s + start), F64(a[2].arr) + nv * s + start,
                       F64(a[3].arr) + 6 * (nj * s + j));
        }
    Py_RETURN_NONE;
}

NC_WRAPPER(joint_rates)
{
    nc_value a[10];
    int64_t k, where = -1;
    if (nc_parse(args, nargs, "qdqidddddd", a, "joint_rates") < 0)
        return NULL;
    const nc_arr *dofs = &a[0].arr, *joints = &a[2].arr, *X = &a[4].arr, *Xv = &a[5].arr,
        *Xa = &a[6].arr, *Xi = &a[7].arr, *qd = &a[8].arr, *qdd = &a[9].arr;
    int64_t nv = dofs->shape[0], n = a[3].i, nj = joints->shape[0];
    const char *f = "joint_rates";
    int accelerations = Xa->size > 0 || qdd->size > 0;
    if (states_of(f, "p", X, n, &k) < 0 || check_tables(f, dofs, &a[1].arr, joints, n, nv) < 0
        || check_size(f, "v (as p)", Xv, 12 * n * k) < 0
        || check_size(f, "Xi (nv × 6 per state of p)", Xi, 6 * nv * k) < 0
        || check_size(f, "qd (nv per state of p)", qd, nv * k) < 0
        || (accelerations && (check_size(f, "a (as p, or empty)", Xa, 12 * n * k) < 0
                              || check_size(f, "qdd (as qd, or empty with a)", qdd,
                                            nv * k) < 0)))
        return NULL;
    for (int64_t s = 0; s < k; s++) {
        if (state_rates(I64(*dofs), F64(a[1].arr), nv, I64(*joints), nj,
                        F64(*X) + 12 * n * s, F64(*Xv) + 12 * n * s,
                        accelerations ? F64(*Xa) + 12 * n * s : NULL, F64(*Xi) + 6 * nv * s,
                        F64(*qd) + nv * s, accelerations ? F64(*qdd) + nv * s : NULL,
                        &where) < 0) {
            PyErr_Format(PyExc_ValueError, "core.joint_rates: the twists of joint %lld are "
                         "dependent at state %lld: its rates are not defined there",
                         (long long)where, (long long)s);
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

PyMethodDef nc_joint_space_methods[] = {
    NC_METHOD(joint_twists, "joint_twists(dofs, weights, n, X, Xi): the unit twists "
              "(ω, v_O) of the DOF of kind slide or turn into Xi (k, nv, 6) at slots X "
              "(k, 4 n, 3); rows of kind given are left alone."),
    NC_METHOD(joint_bias, "joint_bias(joints, Xi, qd, out): out (k, joints, 6) = "
              "Σ_{i<k} q̇_i q̇_k Ξ_i ×ₘ Ξ_k per joint with chained axes, else 0."),
    NC_METHOD(joint_rates, "joint_rates(dofs, weights, joints, n, p, v, a, Xi, qd, qdd): "
              "q̇ (k, nv) and, unless a and qdd are empty, q̈ of natural coordinates "
              "(k, 12 n); Xi (k, nv, 6) the twists, rows of kind given filled by the caller."),
    {NULL, NULL, 0, NULL},
};
