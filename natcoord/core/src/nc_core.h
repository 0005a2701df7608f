/* natcoord's compiled core: shared types, array access and the argument binding.
 *
 * The Python side keeps its arrays (NumPy, C-contiguous) in named tuples
 * (Tables, Buffers, PlanArrays, WorkBuffers, FactorStore, Laws: nc_fields.h).
 * A kernel receives each tuple as an array of nc_arr descriptors indexed by the
 * field enums, e.g. I64(T[T_quad_row])[k] or AT2(S[S_G], e, j). The core never
 * allocates: every buffer is preallocated by Python and written in place.
 */
#ifndef NC_CORE_H
#define NC_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "nc_fields.h"

#define NC_MAX_DIM 5
/* the constraint terms: the first 15 fields of Tables (ConstraintTables.kernel_args()) */
#define NC_TERMS_KINDS "qqqdqqqqqdqqqdq"


/* One array (or a Python float, kind 'f', kept in .value). */
typedef struct {
    char *p;
    int64_t size;
    int64_t shape[NC_MAX_DIM];
    int ndim;
    char kind;
    double value;
} nc_arr;

#define F64(a) ((double *)(a).p)
#define I64(a) ((int64_t *)(a).p)
#define BOOL(a) ((uint8_t *)(a).p)
#define CPLX(a) ((double complex *)(a).p)
#define SCALAR(a) ((a).value)
/* element (i, j) of a 2-d float64 array, (i, j, k) of a 3-d one */
#define AT2(a, i, j) (F64(a)[(int64_t)(i) * (a).shape[1] + (j)])
#define AT3(a, i, j, k) (F64(a)[((int64_t)(i) * (a).shape[1] + (j)) * (a).shape[2] + (k)])
#define IAT2(a, i, j) (I64(a)[(int64_t)(i) * (a).shape[1] + (j)])

/* Argument specification of a kernel's Python wrapper (nc_parse): one
 * character per argument: d q ? Z arrays of float64, int64, bool, complex128;
 * f a Python float (double), i a Python int (int64), p a truth value (int), o any
 * object (borrowed);
 * T S P W F L R the named tuples Tables, Buffers, PlanArrays, WorkBuffers,
 * FactorStore, Laws, RadauBuffers, C the constraint terms (an nc_arr array each, caller-provided,
 * T_COUNT etc. long). */
typedef union {
    nc_arr arr;
    nc_arr *tuple;
    double f;
    int64_t i;
    PyObject *obj;
} nc_value;

/* Parse `nargs` Python arguments per `spec` into `out`. A tuple slot must point to an
 * nc_arr array of the right size, which a plain named tuple is unpacked into; for a
 * Packed argument (core.pack) the slot is set to the Packed object's own descriptors
 * instead (valid during the call; read-only): a wrapper reads its tuples through
 * out[k].tuple after the call. Returns 0, or -1 with a Python exception set. */
int nc_parse(PyObject *const *args, Py_ssize_t nargs, const char *spec, nc_value *out,
             const char *function);
/* Unpack a named tuple of arrays (nested tuples flattened in order) per `kinds`. */
int nc_unpack(PyObject *tuple, const char *kinds, nc_arr *out, const char *what);
/* The kinds string and name of a tuple code (T S P W F L C D K), or NULL. */
const char *nc_tuple_kinds(char code, const char **what);
/* Packed's type ready (module init). */
int nc_binding_ready(void);
/* One array per kind ('d', 'q', '?', 'Z'); C-contiguous and aligned. */
int nc_array(PyObject *obj, char kind, nc_arr *out, const char *what);

/* Kernels shared between source files (prototypes of their definitions). */
void nc_constraints(const nc_arr *T, const double *X, const double *V, const double *W,
                    double *g, double *g_t, double *gamma, double *G, int64_t m, int64_t nnz);
void nc_jacobian_times(const int64_t *pattern_row, const int64_t *pattern_slot, int64_t nnz,
                       const double *G, const double *V, double *out, int64_t m);
void nc_jacobian_transpose_times(const int64_t *pattern_row, const int64_t *pattern_slot,
                                 int64_t nnz, const double *G, const double *lam, double *out,
                                 int64_t n_slots);
void nc_mass_times(const double *J4, int64_t n_bodies, const double *V, double *out);

/* Statuses of nc_factor_kernel (natcoord.linalg.blockldl.FACTORED ...). They are not
 * step statuses: nc_factor (dopri5.c) translates them, and every function of the
 * DOPRI5 step returns step statuses only (dopri5.h). */
enum { NC_FACTORED, NC_FACTOR_SINGULAR_FRAME, NC_FACTOR_NOT_POSITIVE_DEFINITE,
       NC_FACTOR_UNPIVOTABLE_JOINT };

/* blockldl.c: the numeric phase with constraint partitioning (docs/method.md#16);
 * G (nnz, 3) Jacobian blocks, threshold the joint rows' relative pivot thresholds;
 * returns the status (NC_FACTORED 0, NC_FACTOR_SINGULAR_FRAME 1 (*where the body),
 * NC_FACTOR_NOT_POSITIVE_DEFINITE 2 (a body pivot, *where the node),
 * NC_FACTOR_UNPIVOTABLE_JOINT 3 (*where the joint's node)) and sets *count (dropped
 * rows in Wk[WK_dropped]). */
int64_t nc_factor_kernel(const double *G, const double *threshold, const nc_arr *P,
                         const nc_arr *Wk, int64_t *where, int64_t *count);
/* nc_factor_kernel, then (status NC_FACTORED) nc_solve_kernel(r, s, P, Wk, x, lam), bit
 * for bit, the solve's forward substitution inside the factorization's sweep */
int64_t nc_factor_solve_kernel(const double *G, const double *threshold, const nc_arr *P,
                               const nc_arr *Wk, int64_t *where, int64_t *count,
                               const double *r, const double *s, double *x, double *lam);
/* (x, λ) of [[M, Gᵀ], [G, 0]] [x; λ] = [r; s] with the factor in Wk; r, x (12 n,), s, λ (m,) */
void nc_solve_kernel(const double *r, const double *s, const nc_arr *P, const nc_arr *Wk,
                     double *x, double *lam);
/* nc_solve_kernel on nl = 2 or NC_LANES (nc_simd.h) right-hand sides at once, in the lane
 * layout (entry q of side j at nl q + j), each bit for bit its own nc_solve_kernel; λ may
 * be s (Wk's z and ap hold NC_LANES lanes, blockldl.make_work) */
void nc_solve_lanes(const double *r, const double *s, const nc_arr *P, const nc_arr *Wk,
                    double *x, double *lam, int nl);

/* drives.c: out[k + 1] = (w, ẇ, ẅ) of the weights of the laws L (the 7 Laws fields,
 * e.g. &T[T_laws_weight_kind]) at time t; row 0 (the constant 1) is left alone. */
void nc_fill_weights(const nc_arr *L, double t, double *out);

/* Method tables of the core's source files, joined by module.c. */
extern PyMethodDef nc_binding_methods[];
extern PyMethodDef nc_constraints_methods[];
extern PyMethodDef nc_drives_methods[];
extern PyMethodDef nc_forces_methods[];
extern PyMethodDef nc_blockldl_methods[];
extern PyMethodDef nc_dopri5_methods[];
extern PyMethodDef nc_sensitivity_methods[];
extern PyMethodDef nc_radau_methods[];
extern PyMethodDef nc_joint_space_methods[];

/* Declare a fast-call wrapper. */
#define NC_WRAPPER(name) static PyObject *py_##name(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
#define NC_METHOD(name, doc) {#name, (PyCFunction)(void (*)(void))py_##name, METH_FASTCALL, doc}

#endif
