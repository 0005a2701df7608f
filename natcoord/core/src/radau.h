/* Radau IIA of order 5 with projection (radau.c; Python side natcoord/integrate/radau.py,
 * docs/method.md#110-stiff-mechanisms-radau-iia): the field layout of its named tuple
 * RadauBuffers (nc_parse code 'R') and the indices of its ctrl and counts arrays.
 * y = (p, v) is (2 N,), N = 12 n; m constraint rows. */
#ifndef NC_RADAU_H
#define NC_RADAU_H

/* RadauBuffers (integrate/radau.py make_buffers): ctrl (RC_COUNT), counts (RN_COUNT),
 * coef (the method's coefficients, RCOEF_COUNT), the state y and f = F(t, y), the dense
 * output's y_old and Q (3, 2 N), the Jacobian's blocks K = ∂a/∂p and D = ∂a/∂v (N, N),
 * the reduced Newton matrices' LU factors (real lu, piv; complex luc (2, N, N: real and
 * imaginary parts, dense_lu.h), pivc), the stage
 * increments Z, W = T⁻¹ Z, their right-hand sides F and Newton steps dW (3, 2 N), the
 * error scale and estimate (2 N), the point of the Python Jacobian and the value of the
 * core's (2 N), scratch b (N) and bc (2, N: a complex vector's parts), the Jacobian's a, λ,
 * and per pass of NC_LANES columns F, s (NC_LANES, N | m), μ, unit directions, zero rows
 * and da (NC_LANES, N),
 * J's stiff subspace (radau.c stiff_basis): its orthonormal basis U as rows u_k (N, N),
 * Uᵀ K and Uᵀ D (N, N), Uᵀ K U and Uᵀ D U (N, N), the basis's scratch: the columns of K
 * and γ D as rows (2 N, N), their squared norms (2, 2 N: now and when last computed
 * in full), the largest remaining column norms
 * of K and D after k basis vectors (2, N + 1), scratch (4, N) for the Woodbury solves
 * and the basis,
 * the directional pass's lanes (NC_LANES (3 N + m)), the weight table (n_weights, 3) and
 * the lists of one body's terms (int64: the model's quadratic and linear constraint
 * terms and applied forces, nc_body_terms) */
enum {
    R_ctrl, R_counts, R_coef, R_y, R_f, R_yold, R_Q, R_K, R_D, R_lu, R_piv, R_luc, R_pivc,
    R_Z, R_W, R_F, R_dW, R_scale, R_err, R_point, R_value, R_b, R_bc, R_ja, R_jlam, R_jF,
    R_js, R_jmu, R_je, R_jzero, R_jda, R_basis, R_Kb, R_Db, R_KU, R_DU, R_Mt, R_cn, R_res,
    R_bw, R_jlanes, R_weights, R_jterms, R_COUNT
};
#define NC_RADAU_KINDS "dqddddddddqdqdddddddddddddddddddddddddddddq"
#define NC_RADAU_NAMES "ctrl,counts,coef,y,f,yold,Q,K,D,lu,piv,luc,pivc,Z,W,F,dW,scale," \
    "err,point,value,b,bc,ja,jlam,jF,js,jmu,je,jzero,jda,basis,Kb,Db,KU,DU,Mt,cn,res,bw,jlanes," \
    "weights,jterms"

/* ctrl (float64): time and step, tolerances (rtol, atol, proj_tol), max_step, t_bound,
 * Newton's tolerance κ·Tol, the contraction rate up to which J is kept (RADAU5's THET),
 * h of the LU factors, the last accepted step's h and error
 * (Gustafsson), η = θ/(1 − θ) and θ of the last Newton iteration, the dense output's
 * t_old and h, the last attempt's error, flags (1/0): a Jacobian kept, computed at
 * this step's start, LU factors kept, a dense output exists, the last attempt rejected;
 * the stiff subspace's dimension computed with the Jacobian and the dimension the LU
 * factors use */
enum {
    RC_T_NOW, RC_H, RC_RTOL, RC_ATOL, RC_PROJ_TOL, RC_MAX_STEP, RC_T_BOUND, RC_NEWTON_TOL,
    RC_JAC_RATE, RC_H_LU, RC_H_ACC, RC_ERR_ACC, RC_FACCON, RC_THETA, RC_T_OLD, RC_H_OLD,
    RC_ERR, RC_HAVE_J, RC_JAC_CURRENT, RC_HAVE_LU, RC_HAVE_DENSE, RC_REJECTED_LAST, RC_RANK,
    RC_RANK_LU, RC_COUNT
};
/* counts (int64): Jacobians, LU decompositions (real and complex apart), Newton
 * iterations */
enum { RN_JACOBIANS, RN_LU, RN_NEWTON, RN_COUNT };
/* coef: T (3, 3), T⁻¹ (3, 3), μ, α, β (A⁻¹ = T Λ T⁻¹), e (3), P (3, 3: Q = P Z), c (3) */
enum { RCOEF_T = 0, RCOEF_TI = 9, RCOEF_MU = 18, RCOEF_ALPHA = 19, RCOEF_BETA = 20,
       RCOEF_E = 21, RCOEF_P = 24, RCOEF_C = 33, RCOEF_COUNT = 36 };
#endif
