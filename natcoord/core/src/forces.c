/* Built-in generalized forces, their energy and their directional derivative
 * (docs/method.md#12-mass-matrix): the one implementation of these force laws. The
 * steppers, the sensitivity sweep and Radau's Jacobian call them here; the Python side
 * (natcoord.model.core_tables: Workspace.forces, linearize, Model.energy) through the
 * wrappers at the end.
 *
 * The applied forces come flattened (model/core_tables.flatten_forces): a point is an affine
 * map r = Σ c_s x_s + d of the slot vectors (affine point e: terms
 * aff_ptr[e] .. aff_ptr[e+1], constant aff_const[e]), and a force f at it has the
 * generalized force C(r̄)ᵀ f = c_s f at each slot s. Gravity is the constant
 * gravity_force; a constant torque τ on a body gives ½ τ × e_k on its axes; a linear
 * spring–damper between points a and b has tension k (l − l0) + c l̇ along their
 * unit direction. A joint spring–damper (model/forces.JointSpringDamper)
 * acts on a joint coordinate made of quadratic forms Q(p) = Σ c x_a·x_b + Σ d·x_a + c0
 * (form f: quadratic terms form_qptr[f] .. form_qptr[f+1], linear terms form_lptr[f] ..
 * form_lptr[f+1], constant form_const[f]): a slide s = Q, an angle θ = atan2(Q_y, Q_x);
 * its generalized force is −(k δ + c q̇) ∇q, δ = q − q_rest (wrapped for an angle).
 * A Cartesian spring–damper (model/forces.CartesianSpringDamper) has three components
 * d_k = (r_b − r_a)·h_k, each a quadratic form (forms cs_form[i] + k), energy
 * V = ½ Σ k_k (d_k − d0_k)² and generalized force −Σ (k_k (d_k − d0_k) + c_k ḋ_k) ∇d_k,
 * −∂V/∂p plus the damping; its directional derivative is exact (the forms' gradients
 * are affine in p). */
#include "dopri5.h"

void nc_affine_point(const nc_arr *T, int64_t e, const double *X, double *out)
{
    const int64_t *ptr = I64(T[T_aff_ptr]), *slot = I64(T[T_aff_slot]);
    const double *coef = F64(T[T_aff_coef]);
    double o0 = 0.0, o1 = 0.0, o2 = 0.0;
    for (int64_t k = ptr[e]; k < ptr[e + 1]; k++) {
        const double *x = X + 3 * slot[k];
        double c = coef[k];
        o0 += c * x[0];
        o1 += c * x[1];
        o2 += c * x[2];
    }
    out[0] = o0;
    out[1] = o1;
    out[2] = o2;
}

/* F += C(r̄)ᵀ (scale · vec) for affine point e */
static void distribute(const nc_arr *T, int64_t e, double *F, double scale, const double *vec)
{
    const int64_t *ptr = I64(T[T_aff_ptr]), *slot = I64(T[T_aff_slot]);
    const double *coef = F64(T[T_aff_coef]);
    double f0 = scale * vec[0], f1 = scale * vec[1], f2 = scale * vec[2];
    for (int64_t k = ptr[e]; k < ptr[e + 1]; k++) {
        double *out = F + 3 * slot[k], c = coef[k];
        out[0] += c * f0;
        out[1] += c * f1;
        out[2] += c * f2;
    }
}

void nc_torque_forces(const double *tau, int64_t s, const double *X, double *F)
{
    for (int64_t a = s + 1; a < s + 4; a++) {
        const double *e = X + 3 * a;
        double *f = F + 3 * a;
        f[0] += 0.5 * (tau[1] * e[2] - tau[2] * e[1]);
        f[1] += 0.5 * (tau[2] * e[0] - tau[0] * e[2]);
        f[2] += 0.5 * (tau[0] * e[1] - tau[1] * e[0]);
    }
}

/* ends of spring i: d = r_b − r_a into d (not normalized); returns |d|² */
static double spring_vector(const nc_arr *T, int64_t i, const double *X, double *d)
{
    int64_t ea = I64(T[T_sp_a])[i], eb = I64(T[T_sp_b])[i];
    double ra[3], rb[3];
    nc_affine_point(T, ea, X, ra);
    nc_affine_point(T, eb, X, rb);
    const double *ca = &AT2(T[T_aff_const], ea, 0), *cb = &AT2(T[T_aff_const], eb, 0);
    for (int j = 0; j < 3; j++)
        d[j] = (cb[j] + rb[j]) - (ca[j] + ra[j]);
    return d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
}

static inline double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Spring i: its unit direction n = d / l and ḋ (d = r_b − r_a); returns l. */
double nc_spring_frame(const nc_arr *T, int64_t i, const double *X, const double *V,
                       double n[3], double rate[3])
{
    int64_t ea = I64(T[T_sp_a])[i], eb = I64(T[T_sp_b])[i];
    double length = sqrt(spring_vector(T, i, X, n)), va[3], vb[3];
    nc_affine_point(T, ea, V, va);
    nc_affine_point(T, eb, V, vb);
    for (int j = 0; j < 3; j++) {
        n[j] /= length;
        rate[j] = vb[j] - va[j];
    }
    return length;
}

/* F += C(r̄_a)ᵀ f − C(r̄_b)ᵀ f: f on spring i's end a, −f on end b */
void nc_spring_pair(const nc_arr *T, int64_t i, double *F, const double f[3])
{
    const int64_t *ptr = I64(T[T_aff_ptr]), *slot = I64(T[T_aff_slot]);
    const double *coef = F64(T[T_aff_coef]);
    int64_t ends[2] = {I64(T[T_sp_a])[i], I64(T[T_sp_b])[i]};
    for (int side = 0; side < 2; side++) {
        double sign = side == 0 ? 1.0 : -1.0;
        for (int64_t k = ptr[ends[side]]; k < ptr[ends[side] + 1]; k++) {
            double c = sign * coef[k];
            double *Fs = F + 3 * slot[k];
            for (int j = 0; j < 3; j++)
                Fs[j] += c * f[j];
        }
    }
}

/* F += the force pair of spring i: T n on end a, −T n on end b, with the tension
 * T = k (l − l0) + c l̇, l̇ = n·ḋ (pulling the ends together when stretched) */
static void spring_forces(const nc_arr *T, int64_t i, const double *X, const double *V,
                          double *F)
{
    double n[3], rate[3], f[3];
    double length = nc_spring_frame(T, i, X, V, n, rate);
    double tension = F64(T[T_sp_k])[i] * (length - F64(T[T_sp_l0])[i])
                     + F64(T[T_sp_c])[i] * dot3(n, rate);
    for (int j = 0; j < 3; j++)
        f[j] = tension * n[j];
    nc_spring_pair(T, i, F, f);
}

/* r_b − r_a of spring i's ends for the slot rates dX (no constant: a derivative) */
static void spring_difference(const nc_arr *T, int64_t i, const double *dX, double out[3])
{
    double da[3];
    nc_affine_point(T, I64(T[T_sp_b])[i], dX, out);
    nc_affine_point(T, I64(T[T_sp_a])[i], dX, da);
    for (int j = 0; j < 3; j++)
        out[j] -= da[j];
}

/* F += the derivative of spring i's force pair along (dX, dV). With l̇ = n·ḋ and
 * T = k (l − l0) + c l̇ (force T n on end a): dl = n·dd, dn = (dd − n dl) / l,
 * dl̇ = ḋ·dn + n·dḋ, d(T n) = (k dl + c dl̇) n + T dn, so with P = 1 − n nᵀ
 * d(T n) = [n (k n + c P ḋ / l)ᵀ + (T / l) P] dd + c n nᵀ dḋ. */
static void spring_derivative(const nc_arr *T, int64_t i, const double *X, const double *V,
                              const double *dX, const double *dV, double *F)
{
    double n[3], rate[3], dd[3], drate[3], dn[3], f[3];
    double length = nc_spring_frame(T, i, X, V, n, rate);
    spring_difference(T, i, dX, dd);
    spring_difference(T, i, dV, drate);
    double k = F64(T[T_sp_k])[i], c = F64(T[T_sp_c])[i];
    double tension = k * (length - F64(T[T_sp_l0])[i]) + c * dot3(n, rate);
    double dl = dot3(n, dd);
    for (int j = 0; j < 3; j++)
        dn[j] = (dd[j] - n[j] * dl) / length;
    double dldot = 0.0;
    for (int j = 0; j < 3; j++)
        dldot += rate[j] * dn[j] + n[j] * drate[j];
    for (int j = 0; j < 3; j++)
        f[j] = (k * dl + c * dldot) * n[j] + tension * dn[j];
    nc_spring_pair(T, i, F, f);
}

/* value of quadratic form f at X; its rate at (X, V) into *rate if V is given */
static double form_value(const nc_arr *T, int64_t f, const double *X, const double *V,
                         double *rate)
{
    const int64_t *qp = I64(T[T_form_qptr]), *qa = I64(T[T_form_qa]), *qb = I64(T[T_form_qb]);
    const int64_t *lp = I64(T[T_form_lptr]), *la = I64(T[T_form_la]);
    const double *qc = F64(T[T_form_qc]), *ld = F64(T[T_form_ld]);
    double value = F64(T[T_form_const])[f], r = 0.0;
    for (int64_t k = qp[f]; k < qp[f + 1]; k++) {
        const double *xa = X + 3 * qa[k], *xb = X + 3 * qb[k];
        value += qc[k] * (xa[0] * xb[0] + xa[1] * xb[1] + xa[2] * xb[2]);
        if (V) {
            const double *va = V + 3 * qa[k], *vb = V + 3 * qb[k];
            r += qc[k] * (va[0] * xb[0] + va[1] * xb[1] + va[2] * xb[2]
                          + xa[0] * vb[0] + xa[1] * vb[1] + xa[2] * vb[2]);
        }
    }
    for (int64_t k = lp[f]; k < lp[f + 1]; k++) {
        const double *x = X + 3 * la[k], *d = ld + 3 * k;
        value += d[0] * x[0] + d[1] * x[1] + d[2] * x[2];
        if (V) {
            const double *v = V + 3 * la[k];
            r += d[0] * v[0] + d[1] * v[1] + d[2] * v[2];
        }
    }
    if (V)
        *rate = r;
    return value;
}

/* F += scale H_f dX: the quadratic terms' part of ∇Q_f at dX, which is the change of
 * ∇Q_f along dX (∇Q is affine in X) */
static void form_hessian(const nc_arr *T, int64_t f, const double *dX, double scale, double *F)
{
    const int64_t *qp = I64(T[T_form_qptr]), *qa = I64(T[T_form_qa]), *qb = I64(T[T_form_qb]);
    const double *qc = F64(T[T_form_qc]);
    for (int64_t k = qp[f]; k < qp[f + 1]; k++) {
        double c = scale * qc[k];
        const double *xa = dX + 3 * qa[k], *xb = dX + 3 * qb[k];
        double *fa = F + 3 * qa[k], *fb = F + 3 * qb[k];
        for (int j = 0; j < 3; j++) {
            fa[j] += c * xb[j];
            fb[j] += c * xa[j];
        }
    }
}

/* F += scale ∇Q_f(X) = scale (H_f X + Σ d) */
static void form_gradient(const nc_arr *T, int64_t f, const double *X, double scale, double *F)
{
    const int64_t *lp = I64(T[T_form_lptr]), *la = I64(T[T_form_la]);
    const double *ld = F64(T[T_form_ld]);
    form_hessian(T, f, X, scale, F);
    for (int64_t k = lp[f]; k < lp[f + 1]; k++) {
        double *fa = F + 3 * la[k];
        const double *d = ld + 3 * k;
        for (int j = 0; j < 3; j++)
            fa[j] += scale * d[j];
    }
}

/* Aᵀ H_f B = Σ c (a_a·b_b + a_b·b_a) over the quadratic terms of form f */
static double form_bilinear(const nc_arr *T, int64_t f, const double *A, const double *B)
{
    const int64_t *qp = I64(T[T_form_qptr]), *qa = I64(T[T_form_qa]), *qb = I64(T[T_form_qb]);
    const double *qc = F64(T[T_form_qc]);
    double out = 0.0;
    for (int64_t k = qp[f]; k < qp[f + 1]; k++) {
        const double *aa = A + 3 * qa[k], *ab = A + 3 * qb[k];
        const double *ba = B + 3 * qa[k], *bb = B + 3 * qb[k];
        out += qc[k] * (aa[0] * bb[0] + aa[1] * bb[1] + aa[2] * bb[2]
                        + ab[0] * ba[0] + ab[1] * ba[1] + ab[2] * ba[2]);
    }
    return out;
}

/* δ = q − q_rest of joint spring i (an angle's wrapped into (−π, π] by whole turns: the
 * coordinates hold no winding number); with V, the rate q̇ into *rate */
static double joint_deflection(const nc_arr *T, int64_t i, const double *X, const double *V,
                               double *rate, double *x, double *y)
{
    int64_t f0 = I64(T[T_js_f0])[i], f1 = I64(T[T_js_f1])[i];
    double rest = F64(T[T_js_rest])[i], rx = 0.0, ry = 0.0;
    *x = form_value(T, f0, X, V, &rx);
    if (f1 < 0) {                                        /* slide */
        if (V)
            *rate = rx;
        return *x - rest;
    }
    *y = form_value(T, f1, X, V, &ry);
    double r2 = *x * *x + *y * *y;
    if (V)
        *rate = (*x * ry - *y * rx) / r2;
    const double pi = 3.14159265358979323846, turn = 2.0 * pi;
    double d = atan2(*y, *x) - rest;
    return pi - fmod(fmod(pi - d, turn) + turn, turn);
}

static void joint_spring_forces(const nc_arr *T, int64_t i, const double *X, const double *V,
                                double *F)
{
    double rate = 0.0, x = 0.0, y = 0.0;
    double delta = joint_deflection(T, i, X, V, &rate, &x, &y);
    double tension = F64(T[T_js_k])[i] * delta + F64(T[T_js_c])[i] * rate;
    int64_t f0 = I64(T[T_js_f0])[i], f1 = I64(T[T_js_f1])[i];
    if (f1 < 0) {
        form_gradient(T, f0, X, -tension, F);
        return;
    }
    double r2 = x * x + y * y;            /* ∇θ = (x ∇Q_y − y ∇Q_x) / r² */
    form_gradient(T, f1, X, -tension * x / r2, F);
    form_gradient(T, f0, X, tension * y / r2, F);
}

/* F += ∂f/∂p dX + ∂f/∂v dV of joint spring i: with
 * T = k δ + c q̇ and f = −T ∇q, df = −(dT ∇q + T d∇q), dT = k ∇q·dX + c (d∇q·V + ∇q·dV);
 * a slide's d∇q = H dX; an angle's ∇θ = (x ∇y − y ∇x) / r², so with dx = ∇x·dX,
 * dy = ∇y·dX and σ = 2 (x dx + y dy) / r²,
 *   d∇θ = (dx ∇y + x H_y dX − dy ∇x − y H_x dX) / r² − σ ∇θ. */
static void joint_spring_derivative(const nc_arr *T, int64_t i, const double *X,
                                    const double *V, const double *dX, const double *dV,
                                    double *F)
{
    int64_t f0 = I64(T[T_js_f0])[i], f1 = I64(T[T_js_f1])[i];
    double k = F64(T[T_js_k])[i], c = F64(T[T_js_c])[i];
    double rate = 0.0, x = 0.0, y = 0.0;
    double tension = k * joint_deflection(T, i, X, V, &rate, &x, &y) + c * rate;
    if (f1 < 0) {                                        /* slide */
        double along = 0.0, dv = 0.0;
        form_value(T, f0, X, dX, &along);
        form_value(T, f0, X, dV, &dv);
        double dtension = k * along + c * (form_bilinear(T, f0, dX, V) + dv);
        form_gradient(T, f0, X, -dtension, F);
        form_hessian(T, f0, dX, -tension, F);
        return;
    }
    double dx = 0.0, dy = 0.0, vx = 0.0, vy = 0.0, wx = 0.0, wy = 0.0;
    form_value(T, f0, X, dX, &dx);
    form_value(T, f1, X, dX, &dy);
    form_value(T, f0, X, V, &vx);
    form_value(T, f1, X, V, &vy);
    form_value(T, f0, X, dV, &wx);
    form_value(T, f1, X, dV, &wy);
    double r2 = x * x + y * y, sigma = 2.0 * (x * dx + y * dy) / r2;
    double dgrad_v = (dx * vy + x * form_bilinear(T, f1, dX, V) - dy * vx
                      - y * form_bilinear(T, f0, dX, V)) / r2 - sigma * rate;
    double dtension = k * (x * dy - y * dx) / r2 + c * (dgrad_v + (x * wy - y * wx) / r2);
    form_gradient(T, f1, X, -(dtension * x + tension * (dx - sigma * x)) / r2, F);
    form_gradient(T, f0, X, (dtension * y + tension * (dy - sigma * y)) / r2, F);
    form_hessian(T, f1, dX, -tension * x / r2, F);
    form_hessian(T, f0, dX, tension * y / r2, F);
}

/* F −= Σ_k T_k ∇d_k, T_k = k_k (d_k − d0_k) + c_k ḋ_k: Cartesian spring i */
static void cartesian_spring_forces(const nc_arr *T, int64_t i, const double *X,
                                    const double *V, double *F)
{
    int64_t f = I64(T[T_cs_form])[i];
    const double *k = &AT2(T[T_cs_k], i, 0), *c = &AT2(T[T_cs_c], i, 0);
    const double *rest = &AT2(T[T_cs_rest], i, 0);
    for (int j = 0; j < 3; j++) {
        double rate = 0.0, d = form_value(T, f + j, X, V, &rate);
        form_gradient(T, f + j, X, -(k[j] * (d - rest[j]) + c[j] * rate), F);
    }
}

/* F += ∂f/∂p dX + ∂f/∂v dV of Cartesian spring i:
 * with ∇d_k affine in p (H_k dX its change along dX),
 *   dT_k = k_k ∇d_k·dX + c_k (dXᵀ H_k V + ∇d_k·dV),   df = −Σ_k (dT_k ∇d_k + T_k H_k dX). */
static void cartesian_spring_derivative(const nc_arr *T, int64_t i, const double *X,
                                        const double *V, const double *dX, const double *dV,
                                        double *F)
{
    int64_t f = I64(T[T_cs_form])[i];
    const double *k = &AT2(T[T_cs_k], i, 0), *c = &AT2(T[T_cs_c], i, 0);
    const double *rest = &AT2(T[T_cs_rest], i, 0);
    for (int j = 0; j < 3; j++) {
        double rate = 0.0, along = 0.0, dv = 0.0;
        double d = form_value(T, f + j, X, V, &rate);
        form_value(T, f + j, X, dX, &along);             /* ∇d_k·dX */
        form_value(T, f + j, X, dV, &dv);                /* ∇d_k·dV */
        double tension = k[j] * (d - rest[j]) + c[j] * rate;
        double dtension = k[j] * along + c[j] * (form_bilinear(T, f + j, dX, V) + dv);
        form_gradient(T, f + j, X, -dtension, F);
        form_hessian(T, f + j, dX, -tension, F);
    }
}

void nc_generalized_forces(const nc_arr *T, const double *X, const double *V, double *F)
{
    memcpy(F, F64(T[T_gravity_force]), T[T_gravity_force].size * sizeof(double));
    const int64_t *kind = I64(T[T_force_kind]), *index = I64(T[T_force_index]);
    for (int64_t k = 0; k < T[T_force_kind].size; k++) {
        int64_t i = index[k];
        if (kind[k] == NC_POINT_FORCE) {
            distribute(T, I64(T[T_pf_aff])[i], F, 1.0, &AT2(T[T_pf_vec], i, 0));
        } else if (kind[k] == NC_TORQUE) {
            nc_torque_forces(&AT2(T[T_tq_vec], i, 0), 4 * I64(T[T_tq_body])[i], X, F);
        } else if (kind[k] == NC_JOINT_SPRING) {
            joint_spring_forces(T, i, X, V, F);
        } else if (kind[k] == NC_CARTESIAN_SPRING) {
            cartesian_spring_forces(T, i, X, V, F);
        } else {                                         /* spring–damper */
            spring_forces(T, i, X, V, F);
        }
    }
}


/* whether a slot of slots[0 .. count) is one of body's four (4 body .. 4 body + 3) */
static int slots_in_body(const int64_t *slots, int64_t count, int64_t body)
{
    for (int64_t k = 0; k < count; k++)
        if (slots[k] / 4 == body)
            return 1;
    return 0;
}

/* whether quadratic form f reads a slot of body */
static int form_reads(const nc_arr *T, int64_t f, int64_t body)
{
    const int64_t *qp = I64(T[T_form_qptr]), *lp = I64(T[T_form_lptr]);
    return slots_in_body(I64(T[T_form_qa]) + qp[f], qp[f + 1] - qp[f], body)
           || slots_in_body(I64(T[T_form_qb]) + qp[f], qp[f + 1] - qp[f], body)
           || slots_in_body(I64(T[T_form_la]) + lp[f], lp[f + 1] - lp[f], body);
}

/* whether affine point e reads a slot of body */
static int point_reads(const nc_arr *T, int64_t e, int64_t body)
{
    const int64_t *ptr = I64(T[T_aff_ptr]);
    return slots_in_body(I64(T[T_aff_slot]) + ptr[e], ptr[e + 1] - ptr[e], body);
}

int nc_force_reads(const nc_arr *T, int64_t k, int64_t body)
{
    int64_t i = I64(T[T_force_index])[k];
    switch (I64(T[T_force_kind])[k]) {
    case NC_TORQUE: return I64(T[T_tq_body])[i] == body;
    case NC_SPRING:
        return point_reads(T, I64(T[T_sp_a])[i], body) || point_reads(T, I64(T[T_sp_b])[i], body);
    case NC_JOINT_SPRING: {
        int64_t f1 = I64(T[T_js_f1])[i];
        return form_reads(T, I64(T[T_js_f0])[i], body) || (f1 >= 0 && form_reads(T, f1, body));
    }
    case NC_CARTESIAN_SPRING: {
        int64_t f = I64(T[T_cs_form])[i];
        return form_reads(T, f, body) || form_reads(T, f + 1, body) || form_reads(T, f + 2, body);
    }
    default: return 0;                                   /* a constant point force */
    }
}

/* F = ∂f/∂p dp + ∂f/∂v dv (4 n, 3) of the flattened forces: springs, joint and Cartesian
 * springs (forces.c) and constant torques ½ τ × de_k; gravity and constant point forces
 * do not vary. With `terms`, of its forces only (the others' derivative is zero along
 * the direction: nc_body_terms). */
void nc_force_derivative(const nc_arr *T, const nc_terms *terms, const double *X,
                         const double *V, const double *dX, const double *dV, double *F,
                         int64_t size)
{
    memset(F, 0, size * sizeof(double));
    const int64_t *kind = I64(T[T_force_kind]), *index = I64(T[T_force_index]);
    int64_t count = terms != NULL ? terms->n_force : T[T_force_kind].size;
    for (int64_t f = 0; f < count; f++) {
        int64_t k = terms != NULL ? terms->force[f] : f, i = index[k];
        if (kind[k] == NC_TORQUE)
            nc_torque_forces(&AT2(T[T_tq_vec], i, 0), 4 * I64(T[T_tq_body])[i], dX, F);
        else if (kind[k] == NC_SPRING)
            spring_derivative(T, i, X, V, dX, dV, F);
        else if (kind[k] == NC_JOINT_SPRING)
            joint_spring_derivative(T, i, X, V, dX, dV, F);
        else if (kind[k] == NC_CARTESIAN_SPRING)
            cartesian_spring_derivative(T, i, X, V, dX, dV, F);
    }
}

double nc_energy(const nc_arr *T, const double *X, const double *V)
{
    const double *J4 = F64(T[T_J4]), *fg = F64(T[T_gravity_force]);
    double kin = 0.0, pot = 0.0;
    for (int64_t i = 0; i < T[T_J4].shape[0]; i++)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++) {
                const double *va = V + 3 * (4 * i + a), *vb = V + 3 * (4 * i + b);
                kin += J4[16 * i + 4 * a + b] * (va[0] * vb[0] + va[1] * vb[1] + va[2] * vb[2]);
            }
    for (int64_t k = 0; k < T[T_gravity_force].size; k++)
        pot -= fg[k] * X[k];
    for (int64_t i = 0; i < T[T_sp_a].size; i++) {
        double d[3], stretch = sqrt(spring_vector(T, i, X, d)) - F64(T[T_sp_l0])[i];
        pot += 0.5 * F64(T[T_sp_k])[i] * (stretch * stretch);
    }
    for (int64_t i = 0; i < T[T_js_k].size; i++) {
        double x, y, unused, delta = joint_deflection(T, i, X, NULL, &unused, &x, &y);
        pot += 0.5 * F64(T[T_js_k])[i] * (delta * delta);
    }
    for (int64_t i = 0; i < T[T_cs_form].size; i++) {
        int64_t f = I64(T[T_cs_form])[i];
        for (int j = 0; j < 3; j++) {
            double stretch = form_value(T, f + j, X, NULL, NULL) - AT2(T[T_cs_rest], i, j);
            pot += 0.5 * AT2(T[T_cs_k], i, j) * (stretch * stretch);
        }
    }
    return 0.5 * kin + pot;
}

/* ------------------------------------------------------------------ wrappers */
/* The wrappers' arguments: the tables T and `count` arrays of 4 n × 3 entries each,
 * named `names` in the error; 0, or -1 with an exception set. */
static int parse_slot_arrays(PyObject *const *args, Py_ssize_t nargs, nc_value *a, int count,
                             const char *function, const char *names)
{
    char kinds[8] = "T";
    for (int k = 1; k <= count; k++)
        kinds[k] = 'd';
    kinds[count + 1] = '\0';
    if (nc_parse(args, nargs, kinds, a, function) < 0)
        return -1;
    int64_t size = a[0].tuple[T_gravity_force].size;
    for (int k = 1; k <= count; k++)
        if (a[k].arr.size != size) {
            PyErr_Format(PyExc_ValueError, "core.%s: %s must have %lld entries (4 n x 3)",
                         function, names, (long long)size);
            return -1;
        }
    return 0;
}

NC_WRAPPER(generalized_forces)
{
    nc_arr t[T_COUNT];
    nc_value a[4] = {{.tuple = t}};
    if (parse_slot_arrays(args, nargs, a, 3, "generalized_forces", "X, V and F") < 0)
        return NULL;
    nc_generalized_forces(a[0].tuple, F64(a[1].arr), F64(a[2].arr), F64(a[3].arr));
    Py_RETURN_NONE;
}

NC_WRAPPER(energy)
{
    nc_arr t[T_COUNT];
    nc_value a[3] = {{.tuple = t}};
    if (parse_slot_arrays(args, nargs, a, 2, "energy", "X and V") < 0)
        return NULL;
    return PyFloat_FromDouble(nc_energy(a[0].tuple, F64(a[1].arr), F64(a[2].arr)));
}

NC_WRAPPER(force_derivative)
{
    nc_arr t[T_COUNT];
    nc_value a[6] = {{.tuple = t}};
    if (parse_slot_arrays(args, nargs, a, 5, "force_derivative", "X, V, dX, dV and F") < 0)
        return NULL;
    const nc_arr *T = a[0].tuple;
    int64_t size = T[T_gravity_force].size;
    nc_force_derivative(T, NULL, F64(a[1].arr), F64(a[2].arr), F64(a[3].arr), F64(a[4].arr),
                        F64(a[5].arr), size);
    Py_RETURN_NONE;
}

PyMethodDef nc_forces_methods[] = {
    NC_METHOD(generalized_forces, "generalized_forces(T, X, V, F): F (4 n, 3) = gravity plus "
              "the built-in applied forces of Tables T at positions X and velocities V."),
    NC_METHOD(force_derivative, "force_derivative(T, X, V, dX, dV, F): F (4 n, 3) = ∂f/∂p dX "
              "+ ∂f/∂v dV of the built-in applied forces of Tables T at (X, V), exact."),
    NC_METHOD(energy, "energy(T, X, V) -> float: ½ vᵀMv − f_g·p + the springs' ½ k (l − l0)² + the joint springs' ½ k δ² + the Cartesian springs' ½ Σ k_k (d_k − d0_k)²."),
    {NULL, NULL, 0, NULL},
};
