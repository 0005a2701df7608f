/* The core's hooks (nc_hooks, dopri5.h) implemented by a Python object: forces and drive
 * laws written in Python and the reference KKT backends, called back from the DOPRI5
 * step as MuJoCo calls its mjcb_* callbacks.
 *
 * The object (natcoord.dynamics.core_run.Callbacks) carries four callables, each None
 * when the model does not need it, and the arrays they exchange with the core:
 *   weights(t)   fills W (n_weights, 3)                     (drive laws in Python)
 *   forces(t)    reads y (2 N,), fills F (4 n, 3)            (added to the core's forces)
 *   factor()     reads G (nnz, 3) and mask (m,), sets mask
 *   solve()      reads r (N,), s (m,), fills x (N,), lam (m,)
 *   force_derivative(t)  reads y (2 N,) and the c directions dy (rows of 2 N), fills dF
 *                (c rows of N): the forces' derivatives along them (the sweep's)
 *   drive_weights(t)     fills dW (c, n_weights, 3): the drive parameters' ∂W/∂θ
 * weights, forces, factor and the sweep's two return 0 or a step status a smaller
 * step may cure
 * (NON_FINITE: a callable returned NaN or inf; SOLVER_FAILED: the backend could not
 * factor), whose reason the object keeps for the run's message.
 * The core copies its operands into those arrays and the results out of them, so a
 * callback never sees the core's own buffers (and may keep what it is given). A callback
 * that raises makes the step return NC_CALLBACK with the exception pending; the step
 * and advance stop at once (the exception is the run's cause, not a step failure),
 * advance returning it with the records so far. Between steps advance also asks for
 * Python's pending signals (interrupted), so that Ctrl-C stops a long chunk. */
#include "dopri5.h"

/* call f(t) (t NaN: f()), returning its result (a new reference) or NULL */
static PyObject *call(PyObject *f, double t)
{
    if (isnan(t))
        return PyObject_CallNoArgs(f);
    PyObject *arg = PyFloat_FromDouble(t);
    if (arg == NULL)
        return NULL;
    PyObject *result = PyObject_CallOneArg(f, arg);
    Py_DECREF(arg);
    return result;
}

/* the status f(t) returned: 0, a step status, or NC_CALLBACK (an exception pending) */
static int64_t status_of(PyObject *f, double t)
{
    PyObject *r = call(f, t);
    if (r == NULL)
        return NC_CALLBACK;
    int64_t status = PyLong_AsLongLong(r);
    Py_DECREF(r);
    return status == -1 && PyErr_Occurred() ? NC_CALLBACK : status;
}

/* f(t)'s status; on success the n doubles it filled (from) copied to out */
static int64_t status_copied(PyObject *f, double t, double *out, const double *from,
                             int64_t n)
{
    int64_t status = status_of(f, t);
    if (status == 0)
        memcpy(out, from, n * sizeof(double));
    return status;
}

static int64_t py_weights(void *p, double t, double *W)
{
    nc_py_hooks *c = p;
    return status_copied(c->weights, t, W, c->W, c->n_W);
}

static int64_t py_forces(void *p, double t, const double *y, double *F)
{
    nc_py_hooks *c = p;
    memcpy(c->y, y, c->n_y * sizeof(double));
    int64_t status = status_of(c->forces, t);
    if (status == 0)
        for (int64_t i = 0; i < c->n_F; i++)
            F[i] += c->F[i];
    return status;
}

static int64_t py_factor(void *p, const double *G, uint8_t *mask)
{
    nc_py_hooks *c = p;
    memcpy(c->G, G, c->n_G * sizeof(double));
    memcpy(c->mask, mask, c->n_s);
    int64_t status = status_of(c->factor, NAN);
    if (status == 0)
        memcpy(mask, c->mask, c->n_s);
    return status;
}

static int64_t py_solve(void *p, const double *r, const double *s, double *x, double *lam)
{
    nc_py_hooks *c = p;
    memcpy(c->r, r, c->n_r * sizeof(double));
    memcpy(c->s, s, c->n_s * sizeof(double));
    PyObject *result = call(c->solve, NAN);
    if (result == NULL)
        return NC_CALLBACK;
    Py_DECREF(result);
    memcpy(x, c->x, c->n_r * sizeof(double));
    memcpy(lam, c->lam, c->n_s * sizeof(double));
    return 0;
}

static int64_t py_force_derivative(void *p, double t, const double *y, const double *dX,
                                   const double *dV, int64_t ld, int64_t c, double *F,
                                   int64_t n)
{
    nc_py_hooks *h = p;
    memcpy(h->y, y, h->n_y * sizeof(double));
    for (int64_t j = 0; j < c; j++) {
        memcpy(h->dy + 2 * n * j, dX + j * ld, n * sizeof(double));
        memcpy(h->dy + 2 * n * j + n, dV + j * ld, n * sizeof(double));
    }
    int64_t status = status_of(h->force_derivative, t);
    if (status == 0)
        for (int64_t i = 0; i < c * n; i++)
            F[i] += h->dF[i];
    return status;
}

static int64_t py_drive_weights(void *p, double t, double *dW)
{
    nc_py_hooks *h = p;
    return status_copied(h->drive_weights, t, dW, h->dW, h->n_dW);
}

/* Python's pending signals (Ctrl-C): their exception set, nonzero */
static int py_interrupted(void *p)
{
    (void)p;
    return PyErr_CheckSignals() != 0;
}

/* attribute `name` of obj: None (*out NULL), or a callable */
static int callable_attribute(PyObject *obj, const char *name, PyObject **out)
{
    PyObject *f = PyObject_GetAttrString(obj, name);
    if (f == NULL)
        return -1;
    /* borrowed: obj keeps it alive during the call */
    Py_DECREF(f);
    if (f == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyCallable_Check(f)) {
        PyErr_Format(PyExc_TypeError, "core: Callbacks.%s must be callable or None", name);
        return -1;
    }
    *out = f;
    return 0;
}

/* the float64 (or bool, kind '?') array attribute `name` of obj */
static int array_attribute(PyObject *obj, const char *name, char kind, void **data,
                           int64_t *size)
{
    PyObject *a = PyObject_GetAttrString(obj, name);
    if (a == NULL)
        return -1;
    nc_arr arr;
    int status = nc_array(a, kind, &arr, name);
    Py_DECREF(a);                      /* obj keeps the array (and its data) alive */
    if (status < 0)
        return -1;
    *data = arr.p;
    *size = arr.size;
    return 0;
}

int nc_py_hooks_from(PyObject *obj, nc_py_hooks *ctx, const nc_hooks **hk)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->table.ctx = ctx;
    ctx->table.interrupted = py_interrupted;
    *hk = &ctx->table;
    if (obj == Py_None)
        return 0;
    int64_t n_mask, n_x, n_lam;
    if (callable_attribute(obj, "weights", &ctx->weights) < 0 ||
        callable_attribute(obj, "forces", &ctx->forces) < 0 ||
        callable_attribute(obj, "factor", &ctx->factor) < 0 ||
        callable_attribute(obj, "solve", &ctx->solve) < 0 ||
        callable_attribute(obj, "force_derivative", &ctx->force_derivative) < 0 ||
        callable_attribute(obj, "drive_weights", &ctx->drive_weights) < 0 ||
        array_attribute(obj, "dy", 'd', (void **)&ctx->dy, &ctx->n_dy) < 0 ||
        array_attribute(obj, "dF", 'd', (void **)&ctx->dF, &ctx->n_dF) < 0 ||
        array_attribute(obj, "dW", 'd', (void **)&ctx->dW, &ctx->n_dW) < 0 ||
        array_attribute(obj, "W", 'd', (void **)&ctx->W, &ctx->n_W) < 0 ||
        array_attribute(obj, "y", 'd', (void **)&ctx->y, &ctx->n_y) < 0 ||
        array_attribute(obj, "F", 'd', (void **)&ctx->F, &ctx->n_F) < 0 ||
        array_attribute(obj, "G", 'd', (void **)&ctx->G, &ctx->n_G) < 0 ||
        array_attribute(obj, "mask", '?', (void **)&ctx->mask, &n_mask) < 0 ||
        array_attribute(obj, "r", 'd', (void **)&ctx->r, &ctx->n_r) < 0 ||
        array_attribute(obj, "s", 'd', (void **)&ctx->s, &ctx->n_s) < 0 ||
        array_attribute(obj, "x", 'd', (void **)&ctx->x, &n_x) < 0 ||
        array_attribute(obj, "lam", 'd', (void **)&ctx->lam, &n_lam) < 0)
        return -1;
    if (n_mask != ctx->n_s || n_x != ctx->n_r || n_lam != ctx->n_s || ctx->n_y != 2 * ctx->n_r ||
        ctx->n_F != ctx->n_r || ctx->n_dy != 2 * ctx->n_dF) {
        PyErr_SetString(PyExc_ValueError, "core: the Callbacks' arrays do not fit each other "
                        "(y 2 N, F, r, x N; mask, s, lam m entries; dy c rows of 2 N, dF of "
                        "N)");
        return -1;
    }
    ctx->table.weights = ctx->weights ? py_weights : NULL;
    ctx->table.forces = ctx->forces ? py_forces : NULL;
    ctx->table.factor = ctx->factor ? py_factor : NULL;
    ctx->table.solve = ctx->solve ? py_solve : NULL;
    ctx->table.force_derivative = ctx->force_derivative ? py_force_derivative : NULL;
    ctx->table.drive_weights = ctx->drive_weights ? py_drive_weights : NULL;
    return 0;
}

PyObject *nc_py_take_error(int64_t status)
{
    if (status != NC_CALLBACK || !PyErr_Occurred())
        Py_RETURN_NONE;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL)
        PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
}
