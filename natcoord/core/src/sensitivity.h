/* Field layout of the sensitivity sweep's named tuples (natcoord/analysis/
 * sensitivity.py: Directions, Work), as nc_fields.h for the forward run's;
 * nc_parse codes 'D' and 'K'. All fields are arrays. */
#ifndef NC_SENSITIVITY_H
#define NC_SENSITIVITY_H

/* per column j: constant df (4 n, 3), the body of dJ4 (-1: none) and dJ4 (4, 4),
 * the spring (-1: none) and which of its parameters, the torque whose scale it is,
 * 1 if it is a drive parameter (its ∂W/∂θ from the hooks' drive_weights) */
enum {
    D_df,
    D_body,
    D_dJ4,
    D_spring,
    D_spring_kind,
    D_torque,
    D_drive,
    D_COUNT
};
#define NC_DIRECTIONS_KINDS "dqdqqqq"
#define NC_DIRECTIONS_NAMES "df,body,dJ4,spring,spring_kind,torque,drive"

/* the sweep's buffers (all float64) */
enum {
    K_W,
    K_y,
    K_dK,
    K_dy,
    K_dys,
    K_dyold,
    K_dynew,
    K_dout,
    K_F,
    K_s,
    K_mu,
    K_clock,
    K_lanes,
    K_dW,
    K_Gw,
    K_gw,
    K_fw,
    K_COUNT
};
#define NC_SWEEP_KINDS "ddddddddddddddddd"
#define NC_SWEEP_NAMES "W,y,dK,dy,dys,dyold,dynew,dout,F,s,mu,clock,lanes,dW,Gw,gw,fw"

#include "nc_core.h"
#include "dopri5.h"                 /* nc_terms */

/* NC_LANES: directions side by side in nc_acceleration_derivatives' directional pass
 * and solve (the lane layout, sensitivity.c) */
#include "nc_simd.h"

/* What a derivative takes from beyond the core's compiled model (NULL: nothing): the
 * hooks' force_derivative (the forces written in Python) and solve (a reference backend
 * factored at the point), at time t; the drive-parameter columns' weight tables
 * ∂W/∂θ (column j's at dW + j wsize; NULL: no column is one) and their scratch Gw
 * (nnz, 3), gw (4, m), fw (n). Any of these takes the columns one at a time. */
typedef struct {
    const nc_hooks *hk;
    double t;
    const double *dW;
    int64_t wsize;
    double *Gw, *gw, *fw;
} nc_beyond;

/* da_j (at da + j ldo) of [[M, Gᵀ], [G, 0]] [da; dλ] = [df − dM a − dGᵀ λ; dγ − dG a]
 * along the c directions (dX + j ld, dV + j ld) (and, D not NULL, the parameters of the
 * Directions D's columns j0 + j) with K factored in Wk at (X, V, weights W),
 * accelerations A and multipliers lam there; F (c, n = 12 n_bodies), s (c, m) and
 * mu (m) scratch, for c > 1 also lanes (4 (3 n + m)) and Wk's z and ap
 * holding NC_LANES lanes (nc_solve_lanes). Exact for the constraint terms,
 * springs, joint and Cartesian springs and torques (the forces of `bx`'s hooks: theirs).
 * The right-hand sides' shared parts are computed once for the c columns; with `terms`
 * (not NULL), directions that are zero outside one body's slots, of its terms and
 * forces only (nc_body_terms). V is X + n with bx's force_derivative. Returns 0 or a
 * hook's status. */
int64_t nc_acceleration_derivatives(const nc_arr *T, const nc_terms *terms, const nc_arr *P,
                                    const nc_arr *Wk, const nc_arr *D, const nc_beyond *bx,
                                    int64_t j0, int64_t c, const double *X, const double *V,
                                    const double *W, const double *A, const double *lam,
                                    const double *dX, const double *dV, int64_t ld,
                                    double *F, int64_t n, double *s, double *mu, int64_t m,
                                    double *lanes, double *da, int64_t ldo);
/* the constraint kernel's terms and applied forces that read a slot of body, into out
 * (its lists in buffer: T's quadratic and linear terms and forces' count entries at
 * most); a direction zero outside the body's slots has a non-zero derivative only in
 * them (the kernel's terms and the force laws read only their own slots) */
void nc_body_terms(const nc_arr *T, int64_t body, int64_t *buffer, nc_terms *out);
#endif
