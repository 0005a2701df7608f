/* The DOPRI5 step of the core (dopri5.c) and the built-in forces (forces.c): what
 * other source files (the sensitivity sweep) call. docs/method.md#17-integration.
 *
 * Tuples are nc_arr arrays indexed by the field enums of nc_fields.h: T Tables,
 * S Buffers, P PlanArrays, Wk WorkBuffers, store FactorStore. Coordinates X, V, F
 * are (4 n, 3) slot arrays, y = (p, v) is (2 N,) with N = 12 n; a weight table W
 * is (n_weights, 3) rows (w, ẇ, ẅ). Nothing here allocates. */
#ifndef NC_DOPRI5_H
#define NC_DOPRI5_H

#include "nc_core.h"

/* The Dormand–Prince 5(4) tableau (Hairer, Nørsett & Wanner I, Table II.5.2): row s
 * of NC_A_DENSE holds the coefficients of stages < s; NC_B_DENSE the 5th-order
 * weights (= row 6, FSAL), NC_E_DENSE the error weights, NC_D_DENSE the dense
 * output's (II.6, eq. 6.12), NC_C_DENSE the stage times. */
extern const double NC_A_DENSE[7][7];
extern const double NC_B_DENSE[7];
extern const double NC_C_DENSE[7];
extern const double NC_D_DENSE[7];
extern const double NC_E_DENSE[7];

/* statuses of a step attempt (compiled.ACCEPTED ...). Every function here that
 * factors returns these, never nc_factor_kernel's own codes (nc_factor translates
 * them): a factorization code read as a step code took a singular frame for an error
 * rejection and an unpivotable joint's node for a body. */
enum {
    NC_ACCEPTED, NC_REJECTED, NC_SINGULAR_FRAME, NC_NOT_POSITIVE_DEFINITE, NC_NON_FINITE,
    NC_POSITION_PROJECTION, NC_VELOCITY_PROJECTION, NC_MAX_ATTEMPTS, NC_CHECK, NC_FULL,
    NC_FINISHED, NC_UNPIVOTABLE_JOINT, NC_SOLVER_FAILED, NC_CALLBACK
};
/* Callbacks: what the core calls back for the parts of a model it does not compile,
 * as MuJoCo's mjcb_* hooks are called: forces and drive laws written in Python, and the
 * factor/solve of the KKT system by a reference backend (dense, SuperLU, CHOLMOD). The
 * step, controller, error norm, projection, dense output, checks and records stay the
 * core's whatever the hooks; a NULL table or a NULL entry is the built-in part alone.
 *
 *  weights  W (n_weights, 3) at time t: the drive laws given as callables (the whole
 *           table; the compiled laws are not evaluated then);
 *  forces   F (4 n, 3) += the generalized forces of the forces without a compiled law
 *           at (t, y) (gravity and the compiled forces are in F already);
 *  factor   factor the KKT matrix at the Jacobian blocks G (nnz, 3), starting from the
 *           dropped rows in mask (m,) (its hysteresis) and leaving the new ones there;
 *  solve    (x, λ) of [[M, Gᵀ], [G, 0]] [x; λ] = [r; s] with the last factorization;
 *  interrupted  nonzero to stop nc_advance between steps (Ctrl-C: the host's pending
 *           signal, its exception set; nc_advance then returns NC_CALLBACK);
 *  force_derivative  F + j n += df_j, the derivative of the forces of `forces` at
 *           (t, y = (X, V)) along the c directions (dX + j ld, dV + j ld) (the sensitivity
 *           sweep: their laws are the host's, so is their derivative);
 *  drive_weights  dW (c, n_weights, 3) at time t: ∂W/∂θ_j of the sweep's columns that
 *           are drive parameters (the others' left alone).
 *
 * Each returns 0; NC_CALLBACK with a Python exception set (the run's: the step stops,
 * the wrappers hand it to Python, callbacks.c); or a status a smaller step may cure,
 * its reason kept by the host: NC_NON_FINITE (a callable returned NaN or inf),
 * NC_SOLVER_FAILED (the backend could not factor). solve returns 0 or NC_CALLBACK. */
typedef struct nc_hooks {
    void *ctx;
    int64_t (*weights)(void *ctx, double t, double *W);
    int64_t (*forces)(void *ctx, double t, const double *y, double *F);
    int64_t (*factor)(void *ctx, const double *G, uint8_t *mask);
    int64_t (*solve)(void *ctx, const double *r, const double *s, double *x, double *lam);
    int (*interrupted)(void *ctx);
    int64_t (*force_derivative)(void *ctx, double t, const double *y, const double *dX,
                                const double *dV, int64_t ld, int64_t c, double *F,
                                int64_t n);
    int64_t (*drive_weights)(void *ctx, double t, double *dW);
} nc_hooks;

/* step-size underflow (step's status) */
#define NC_UNDERFLOW (-1)
/* projection modes, in the order of natcoord.integrate.base.PROJECTIONS */
enum { NC_PROJECT_POSITIONS_AND_VELOCITIES, NC_PROJECT_VELOCITIES, NC_NO_PROJECTION,
       NC_BAUMGARTE };
/* kinds of the flattened forces (Tables.force_kind) */
enum { NC_POINT_FORCE, NC_TORQUE, NC_SPRING, NC_JOINT_SPRING, NC_CARTESIAN_SPRING };
/* kinds of the records of nc_advance */
enum { NC_STEP_RECORD, NC_OUTPUT_RECORD };
/* S[S_counts] (int64): evaluations, factorizations, projection iterations, active-set
 * changes, where the last failure happened, the outputs' factorizations and iterations */
enum { NC_N_RHS, NC_N_FACT, NC_N_PROJ, NC_N_ACTIVE, NC_FAIL_WHERE, NC_OUT_FACT,
       NC_OUT_PROJ };
/* S[S_ctrl] (float64): see compiled.py's ctrl (CTRL_HOLDING: 1 while outputs are
 * projected from the dropped set kept in S[S_held], nc_hold_for_output) */
enum { CTRL_T_NOW, CTRL_H, CTRL_ERR_OLD, CTRL_LAST_REJECTED, CTRL_ERR, CTRL_H_ACC,
       CTRL_T_PREV, CTRL_PROJ_TOL, CTRL_RTOL, CTRL_ATOL, CTRL_MAX_STEP, CTRL_T_BOUND,
       CTRL_DROP_TOL, CTRL_HOLD_TOL, CTRL_ALPHA, CTRL_BETA_B, CTRL_FAIL_RESIDUAL,
       CTRL_FAIL_TARGET, CTRL_HOLDING, CTRL_COUNT };

/* ------------------------------------------------------------------ forces.c */
/* out = Σ c_s X[s] over the terms of affine point e (its rate part, no constant) */
void nc_affine_point(const nc_arr *T, int64_t e, const double *X, double *out);
/* F[s + k] += ½ τ × X[s + k], k = 1, 2, 3 (a constant torque on the body of slots
 * s..s+3; linear in the axes, so with X = dX also its derivative) */
void nc_torque_forces(const double *tau, int64_t s, const double *X, double *F);
/* F = gravity + the flattened applied forces at (X, V) (docs/method.md#12-mass-matrix) */
void nc_generalized_forces(const nc_arr *T, const double *X, const double *V, double *F);
/* spring i's unit direction n = d / l and the rate ḋ of d = r_b − r_a; returns l */
double nc_spring_frame(const nc_arr *T, int64_t i, const double *X, const double *V,
                       double n[3], double rate[3]);
/* F += C(r̄_a)ᵀ f − C(r̄_b)ᵀ f: f on spring i's end a, −f on end b */
void nc_spring_pair(const nc_arr *T, int64_t i, double *F, const double f[3]);
/* Some of the terms of the constraint kernel and the applied forces, as ascending
 * indices: those that read one body's slots (nc_body_terms, sensitivity.c), the only ones
 * whose derivative along a direction on that body alone is not zero. NULL: all terms. */
typedef struct {
    const int64_t *quad, *lin, *force;
    int64_t n_quad, n_lin, n_force;
} nc_terms;
/* whether the flattened applied force k reads a slot of body (its derivative along a
 * direction on that body alone may not be zero) */
int nc_force_reads(const nc_arr *T, int64_t k, int64_t body);
/* F (size entries) = ∂f/∂p dX + ∂f/∂v dV of the flattened applied forces at (X, V)
 * (with terms, of its forces only): exact (gravity and constant point forces do not
 * vary) */
void nc_force_derivative(const nc_arr *T, const nc_terms *terms, const double *X,
                         const double *V, const double *dX, const double *dV, double *F,
                         int64_t size);
/* ½ vᵀ M v − f_g·p + the springs' ½ k (l − l0)², the joint springs' ½ k δ² and the
 * Cartesian springs' ½ Σ k_k (d_k − d0_k)² */
double nc_energy(const nc_arr *T, const double *X, const double *V);

/* ------------------------------------------------------------------ dopri5.c */
/* S[S_g], S[S_g_t], S[S_gamma], S[S_G] at (X, V) with weights W */
void nc_evaluate_constraints(const nc_arr *T, const nc_arr *S, const double *X,
                             const double *V, const double *W);
/* W's driven rows at time t from T's laws (none: W is left alone), or the whole table
 * from the hooks' weights; 0 or NC_CALLBACK */
int64_t nc_weights_at(const nc_arr *T, const nc_hooks *hk, double t, double *W);
/* block factorization of S[S_G] into Wk with partitioning and hysteresis (S[S_mask],
 * S[S_threshold]); 0 or the failure as a step status: NC_SINGULAR_FRAME
 * (S[S_counts][NC_FAIL_WHERE] the body), NC_NOT_POSITIVE_DEFINITE (a body pivot; the
 * node) or NC_UNPIVOTABLE_JOINT (a joint row kept on geometry that the masses make
 * unpivotable; the joint's node). A solve with it is nc_solve_kernel(r, s, P, Wk, x, λ). */
int64_t nc_factor(const nc_arr *S, const nc_arr *P, const nc_arr *Wk, const nc_hooks *hk);
/* Before an output's projection: start from the dropped set (and hysteresis) of the
 * integrator's last factorization, kept in S[S_held] at the first output after it
 * (ctrl[CTRL_HOLDING] set); nc_resume gives it back to the next step. */
void nc_hold_for_output(const nc_arr *S);
/* Before the integrator factors again: its own dropped set back, if outputs were
 * projected since (nc_hold_for_output). nc_step calls it first. */
void nc_resume(const nc_arr *S);
/* S[S_mask] = mask (not S[S_mask] itself) with the thresholds nc_factor leaves with that
 * dropped set: its hysteresis goes on from there */
void nc_set_dropped(const nc_arr *S, const uint8_t *mask);
/* out (12 n + 12 n) = (v, a) at (t, y); factors into Wk, S[S_lam] the multipliers; a
 * status */
int64_t nc_rhs(const nc_arr *T, const nc_arr *S, const nc_arr *P, const nc_arr *Wk,
               const nc_hooks *hk, double t, const double *y, const double *W, int64_t mode,
               double *out);
/* the projection's margin (kept rows converge to it times the tolerance) and its
 * iterations at most; module.c exports them for the failure messages Python words */
#define NC_PROJECTION_MARGIN 0.1
#define NC_PROJECTION_MAX_ITER 8
/* max(tol, ROUNDOFF ε max over the m rows of (|G| |x| + |rate|)), rate NULL: none
 * (positions x = p; velocities x = v, rate = g_t): the tolerance a residual G x + rate
 * can be held to */
double nc_threshold(const nc_arr *T, int64_t m, const double *G, const double *rate,
                    const double *x, double tol);
/* project y in place (fresh: factor at y first, as for outputs); a step status
 * (NC_POSITION_PROJECTION, NC_VELOCITY_PROJECTION or a failed factorization's) */
int64_t nc_project(const nc_arr *T, const nc_arr *S, const nc_arr *P, const nc_arr *Wk,
                   const nc_hooks *hk, double *y, const double *W, int64_t mode, double tol,
                   int fresh);
/* the dense output of a step (y0, y1, K (7, N), h) at θ into out (N,), which must not
 * overlap the inputs (linear in (y0, y1, K): also the derivatives') */
void nc_interpolate(const double *y0, const double *y1, const double *K, double h,
                    double theta, int64_t N, double *out);
/* out (WK_COUNT): Wk with its factor arrays (B, inv, E, F, Gj) those of store[m, s] */
void nc_stage_work(const nc_arr *Wk, const nc_arr *store, int64_t m, int64_t s, nc_arr *out);
/* (x, λ) of the KKT system with the last factorization: the block solve in Wk, or the
 * hooks' (hk NULL or without solve: the block solve); 0 or the hook's status. Inline:
 * the step's every solve goes through it, as a direct call of the block solve. */
static inline int64_t nc_kkt_solve(const nc_arr *P, const nc_arr *Wk, const nc_hooks *hk,
                                   const double *r, const double *s, double *x, double *lam)
{
    if (hk != NULL && hk->solve != NULL)
        return hk->solve(hk->ctx, r, s, x, lam);
    nc_solve_kernel(r, s, P, Wk, x, lam);
    return 0;
}
/* h clipped to t_bound (natcoord.integrate.base.clip_step) */
double nc_clip_step(double h, double t, double t_bound, double eps_floor);

/* One accepted step (or a failure): returns a status (NC_UNDERFLOW: the step size fell
 * below the floor), *rejected the attempts rejected. W7 (7, n_weights, 3): the stage
 * weight tables; a non-empty store keeps the stage factorizations at store[m]. */
int64_t nc_step(const nc_arr *T, const nc_arr *S, const nc_arr *P, const nc_arr *Wk,
                const nc_hooks *hk, const nc_arr *W7, int64_t mode, int64_t max_attempts, double eps_floor,
                const nc_arr *store, int64_t m, int64_t *rejected);

/* The records nc_advance writes: rows 0 .. capacity (the last for a failing state)
 * of t, y (N,), obs (3,: energy, ‖g‖∞, ‖G v + g_t‖∞), kind */
typedef struct {
    double *t, *y, *obs;
    int64_t *kind;
    int64_t capacity;
} nc_records;
/* Dense-output data of accepted steps: t (2,: t_old, h), y (2, N: y_old, y_new),
 * K (7, N); capacity 0: none kept */
typedef struct {
    double *t, *y, *K;
    int64_t capacity;
} nc_segments;
typedef struct {
    int64_t status, records, next_out, steps, rejected, stored;
} nc_progress;

/* A stepper nc_advance_with drives, as a table of what differs between DOPRI5 and
 * Radau (in the style of nc_hooks): the loop, the outputs, their projection, the
 * checks, the records, the segments' bookkeeping, the budget and Ctrl-C are one.
 *
 *  step         one accepted step from (*t, y), at most max_attempts attempts: a step
 *               status (NC_ACCEPTED, NC_UNDERFLOW, a failure's) and *rejected; k: the
 *               segment the step will be kept at (DOPRI5's factor store);
 *  interpolate  the last accepted step's dense output at time t into out (N,), which
 *               overlaps nothing the stepper keeps;
 *  keep         the last accepted step's dense-output data as segment k;
 *  y, t, t_bound  the state (N,), and the current time and end in the stepper's ctrl. */
typedef struct nc_stepper {
    void *ctx;
    int64_t (*step)(void *ctx, int64_t max_attempts, double eps_floor, int64_t k,
                    int64_t *rejected);
    void (*interpolate)(void *ctx, double t, double *out);
    void (*keep)(void *ctx, int64_t k, const nc_segments *seg);
    double *y;
    const double *t, *t_bound;
} nc_stepper;

/* compiled.advance: accepted steps and their records until finished, full, a failed
 * check or step, or `budget` attempts; with store[FS_lam].shape[0] > 0 the stage
 * factorizations of the stored steps are kept in store. */
nc_progress nc_advance(const nc_arr *T, const nc_arr *S, const nc_arr *P, const nc_arr *Wk,
                       const nc_hooks *hk, const nc_arr *W7, double *W1, int64_t mode, int64_t budget,
                       double eps_floor, const double *t_eval, int64_t n_eval,
                       int64_t next_out, int every_step, double drift_tol,
                       const nc_records *rec, const nc_segments *seg, const nc_arr *store);
/* the chunked advance of any stepper (nc_advance's loop, its records and statuses):
 * st's accepted steps, the outputs t_eval[next_out:] by st's dense output projected
 * as DOPRI5's (from the dropped set of their step) and every recorded state checked;
 * W1 (n_weights, 3) the weight table of the checks and outputs */
nc_progress nc_advance_with(const nc_stepper *st, const nc_arr *T, const nc_arr *S,
                            const nc_arr *P, const nc_arr *Wk, const nc_hooks *hk, double *W1,
                            int64_t mode, int64_t budget, double eps_floor,
                            const double *t_eval, int64_t n_eval, int64_t next_out,
                            int every_step, double drift_tol, const nc_records *rec,
                            const nc_segments *seg);
/* An advance wrapper's record and segment arguments a[0..6] (rec_t, rec_y, rec_obs,
 * rec_kind, seg_t, seg_y, seg_K) checked against the state size N, with y_rows and
 * k_rows rows of N per segment in seg_y and seg_K: 0, or −1 with a ValueError naming
 * `function` */
int nc_advance_buffers(const nc_value *a, int64_t N, int64_t y_rows, int64_t k_rows,
                       const char *function, nc_records *rec, nc_segments *seg);
/* the tuple an advance wrapper returns: (status, records, next_out, steps, rejected,
 * stored, error) */
PyObject *nc_advance_result(nc_progress out);

/* ------------------------------------------------------------------ callbacks.c */
/* The hooks of a Python Callbacks object (natcoord.dynamics.core_run.Callbacks) for one
 * wrapper call: *hk points at ctx's table; for None (the built-in model) a table with
 * only `interrupted` (Python's pending signals), so that Ctrl-C stops a long advance.
 * ctx must live during the call. Returns 0, or -1 with a Python exception set. */
typedef struct nc_py_hooks nc_py_hooks;
struct nc_py_hooks {
    PyObject *weights, *forces, *factor, *solve, *force_derivative, *drive_weights;
    double *W, *y, *F, *G, *r, *s, *x, *lam, *dy, *dF, *dW;
    uint8_t *mask;
    int64_t n_W, n_y, n_F, n_G, n_r, n_s, n_dy, n_dF, n_dW;
    nc_hooks table;
};
int nc_py_hooks_from(PyObject *obj, nc_py_hooks *ctx, const nc_hooks **hk);
/* After a wrapper's kernel returned `status`: for NC_CALLBACK the pending Python
 * exception (a new reference, cleared), else None (a new reference), so that advance
 * returns its records with it. */
PyObject *nc_py_take_error(int64_t status);

#endif
