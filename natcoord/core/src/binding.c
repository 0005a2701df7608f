/* The binding: NumPy arrays (via the buffer protocol) and named tuples of arrays
 * into nc_arr descriptors. Pointers stay valid while the Python objects live: the
 * caller (a Python function holding the arrays) outlives every kernel call, and a
 * NumPy array never moves its data while referenced. */
#include "nc_core.h"
#include "sensitivity.h"

static const char *kind_name(char kind)
{
    switch (kind) {
    case 'd': return "float64";
    case 'q': return "int64";
    case '?': return "bool";
    case 'Z': return "complex128";
    default: return "?";
    }
}

static int format_matches(const char *format, char kind)
{
    if (format == NULL)
        return kind == 'b';
    if (*format == '<' || *format == '=' || *format == '@')
        format++;
    switch (kind) {
    case 'd': return strcmp(format, "d") == 0;
    case 'q': return strcmp(format, "q") == 0 || strcmp(format, "l") == 0;
    case '?': return strcmp(format, "?") == 0;
    case 'Z': return strcmp(format, "Zd") == 0;
    }
    return 0;
}

int nc_array(PyObject *obj, char kind, nc_arr *out, const char *what)
{
    /* Not PyBUF_WRITABLE: the model's constant arrays are read-only NumPy arrays,
     * and asking for writable buffers first would cost a failed request each. */
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Format(PyExc_TypeError, "core: %s must be a C-contiguous %s array, got %.80s",
                     what, kind_name(kind), Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (!format_matches(view.format, kind) || view.ndim > NC_MAX_DIM) {
        PyErr_Format(PyExc_TypeError, "core: %s must be a %s array (format %s, %d dimensions)",
                     what, kind_name(kind), view.format ? view.format : "B", view.ndim);
        PyBuffer_Release(&view);
        return -1;
    }
    out->p = view.buf;
    out->ndim = view.ndim;
    out->kind = kind;
    out->size = 1;
    for (int d = 0; d < NC_MAX_DIM; d++)
        out->shape[d] = d < view.ndim ? view.shape[d] : 1;
    for (int d = 0; d < view.ndim; d++)
        out->size *= view.shape[d];
    PyBuffer_Release(&view);
    return 0;
}

static int unpack_into(PyObject *tuple, const char **kinds, nc_arr **out, const char *what)
{
    if (!PyTuple_Check(tuple)) {
        PyErr_Format(PyExc_TypeError, "core: %s must be a named tuple, got %.80s", what,
                     Py_TYPE(tuple)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k);
        char kind = **kinds;
        if (kind == '\0' || kind == ')') {
            PyErr_Format(PyExc_TypeError, "core: %s has more fields than the core knows (%zd)",
                         what, k);
            return -1;
        }
        if (kind == '(') {
            (*kinds)++;
            if (unpack_into(item, kinds, out, what) < 0)
                return -1;
            if (**kinds != ')') {
                PyErr_Format(PyExc_TypeError, "core: a nested tuple of %s is too short", what);
                return -1;
            }
            (*kinds)++;
            continue;
        }
        if (kind == 'f') {
            double x = PyFloat_AsDouble(item);
            if (x == -1.0 && PyErr_Occurred())
                return -1;
            (*out)->value = x;
            (*out)->p = (char *)&(*out)->value;
            (*out)->size = 1;
            (*out)->ndim = 0;
            (*out)->kind = 'f';
        } else if (nc_array(item, kind, *out, what) < 0) {
            /* the field's position is formatted only on failure: building names
             * for every field of every call would cost more than small kernels */
            PyObject *type, *value, *traceback;
            PyErr_Fetch(&type, &value, &traceback);
            PyErr_Format(PyExc_TypeError, "core: field %zd of %s: %S", k, what, value);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(traceback);
            return -1;
        }
        (*out)++;
        (*kinds)++;
    }
    return 0;
}

int nc_unpack(PyObject *tuple, const char *kinds, nc_arr *out, const char *what)
{
    const char *k = kinds;
    if (unpack_into(tuple, &k, &out, what) < 0)
        return -1;
    if (*k != '\0') {
        PyErr_Format(PyExc_TypeError, "core: %s has fewer fields than the core knows", what);
        return -1;
    }
    return 0;
}

static const char *tuple_kinds(char code, const char **what)
{
    switch (code) {
    case 'T': *what = "Tables"; return NC_TABLES_KINDS;
    case 'S': *what = "Buffers"; return NC_BUFFERS_KINDS;
    case 'P': *what = "PlanArrays"; return NC_PLAN_KINDS;
    case 'W': *what = "WorkBuffers"; return NC_WORK_KINDS;
    case 'F': *what = "FactorStore"; return NC_STORE_KINDS;
    case 'L': *what = "Laws"; return NC_LAWS_KINDS;
    case 'C': *what = "constraint terms"; return NC_TERMS_KINDS;
    case 'D': *what = "Directions"; return NC_DIRECTIONS_KINDS;
    case 'K': *what = "sweep Work"; return NC_SWEEP_KINDS;
    }
    return NULL;
}

int nc_parse(PyObject *const *args, Py_ssize_t nargs, const char *spec, nc_value *out,
             const char *function)
{
    Py_ssize_t n = (Py_ssize_t)strlen(spec);
    if (nargs != n) {
        PyErr_Format(PyExc_TypeError, "core.%s takes %zd arguments, got %zd", function, n, nargs);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        char code = spec[k];
        const char *what = NULL, *kinds = tuple_kinds(code, &what);
        if (kinds != NULL) {
            if (nc_unpack(args[k], kinds, out[k].tuple, what) < 0)
                return -1;
        } else if (code == 'f') {
            out[k].f = PyFloat_AsDouble(args[k]);
            if (out[k].f == -1.0 && PyErr_Occurred())
                return -1;
        } else if (code == 'i') {
            out[k].i = PyLong_AsLongLong(args[k]);
            if (out[k].i == -1 && PyErr_Occurred())
                return -1;
        } else if (code == 'p') {
            int truth = PyObject_IsTrue(args[k]);
            if (truth < 0)
                return -1;
            out[k].i = truth;
        } else if (nc_array(args[k], code, &out[k].arr, "an argument") < 0) {
            PyObject *type, *value, *traceback;
            PyErr_Fetch(&type, &value, &traceback);
            PyErr_Format(PyExc_TypeError, "core.%s, argument %zd: %S", function, k + 1, value);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(traceback);
            return -1;
        }
    }
    return 0;
}
