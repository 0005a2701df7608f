/* The binding: NumPy arrays (via the buffer protocol) and named tuples of arrays
 * into nc_arr descriptors. Pointers stay valid while the Python objects live: the
 * caller (a Python function holding the arrays) outlives every kernel call, and a
 * NumPy array never moves its data while referenced. */
#include "nc_core.h"
#include "sensitivity.h"
#include "radau.h"

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

const char *nc_tuple_kinds(char code, const char **what)
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
    case 'R': *what = "RadauBuffers"; return NC_RADAU_KINDS;
    }
    return NULL;
}

/* ------------------------------------------------------------------ packed
 * A named tuple unpacked once: Packed keeps the tuple (so its arrays live) and
 * the descriptors, and a kernel call copies the descriptors instead of asking
 * every array for its buffer again. A stepper's Tables, Buffers, PlanArrays and
 * WorkBuffers hold ~120 arrays: unpacking them cost ~19 µs per call. */
#define NC_PACKED_MAX 64

typedef struct {
    PyObject_HEAD
    char code;
    Py_ssize_t count;
    PyObject *source;
    nc_arr arrs[NC_PACKED_MAX];
} Packed;

static void packed_dealloc(Packed *self)
{
    Py_XDECREF(self->source);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject PackedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "natcoord.core.engine.Packed",
    .tp_basicsize = sizeof(Packed),
    .tp_dealloc = (destructor)packed_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A named tuple of arrays, or one array, unpacked once for the core (core.pack).",
};

static Py_ssize_t count_arrays(const char *kinds)
{
    Py_ssize_t n = 0;
    for (; *kinds; kinds++)
        n += *kinds != '(' && *kinds != ')';
    return n;
}

static PyObject *py_pack(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    const char *code, *what = NULL, *kinds;
    if (nargs != 2 || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "core.pack(named_tuple, code): code one of "
                        "T S P W F L C D K R, or d q ? Z for one array");
        return NULL;
    }
    code = PyUnicode_AsUTF8(args[1]);
    if (code == NULL)
        return NULL;
    /* one array of kind d q ? Z packed alone: an argument passed every call (a state, an
     * output) without a buffer request each time (~0.1 µs apiece, a tenth of the
     * fixed cost of nc.forward) */
    if (strlen(code) == 1 && strchr("dq?Z", code[0]) != NULL) {
        Packed *packed = PyObject_New(Packed, &PackedType);
        if (packed == NULL)
            return NULL;
        packed->code = code[0];
        packed->count = 1;
        Py_INCREF(args[0]);
        packed->source = args[0];
        if (nc_array(args[0], code[0], packed->arrs, "a packed array") < 0) {
            Py_DECREF(packed);
            return NULL;
        }
        return (PyObject *)packed;
    }
    kinds = strlen(code) == 1 ? nc_tuple_kinds(code[0], &what) : NULL;
    if (kinds == NULL || count_arrays(kinds) > NC_PACKED_MAX) {
        PyErr_Format(PyExc_ValueError, "core.pack: unknown tuple code %R", args[1]);
        return NULL;
    }
    Packed *packed = PyObject_New(Packed, &PackedType);
    if (packed == NULL)
        return NULL;
    packed->code = code[0];
    packed->count = count_arrays(kinds);
    Py_INCREF(args[0]);
    packed->source = args[0];
    if (nc_unpack(args[0], kinds, packed->arrs, what) < 0) {
        Py_DECREF(packed);
        return NULL;
    }
    /* a Python float field points into its descriptor: into this object now */
    for (Py_ssize_t k = 0; k < packed->count; k++)
        if (packed->arrs[k].kind == 'f')
            packed->arrs[k].p = (char *)&packed->arrs[k].value;
    return (PyObject *)packed;
}

PyMethodDef nc_binding_methods[] = {
    {"pack", (PyCFunction)(void (*)(void))py_pack, METH_FASTCALL,
     "pack(named_tuple, code) -> Packed: the tuple's arrays unpacked once, for every "
     "later kernel call (code as in nc_core.h: T Tables, S Buffers, P PlanArrays, "
     "W WorkBuffers, F FactorStore, L Laws, C constraint terms, D Directions, K Work, "
     "R RadauBuffers); or pack(array, kind) -> Packed: one array (kind d q ? Z), passed "
     "in its place to any kernel argument of that kind."},
    {NULL, NULL, 0, NULL},
};

int nc_binding_ready(void)
{
    return PyType_Ready(&PackedType);
}

/* descriptors of argument `obj` for tuple code `code`: a Packed object's own (no copy:
 * ~120 descriptors of 72 bytes were copied per call), else unpacked into *out */
static int tuple_argument(PyObject *obj, char code, const char *kinds, const char *what,
                          nc_arr **out)
{
    if (Py_IS_TYPE(obj, &PackedType)) {
        Packed *packed = (Packed *)obj;
        if (packed->code != code) {
            PyErr_Format(PyExc_TypeError, "core: a packed '%c' tuple where %s is expected",
                         packed->code, what);
            return -1;
        }
        *out = packed->arrs;
        return 0;
    }
    return nc_unpack(obj, kinds, *out, what);
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
        const char *what = NULL, *kinds = nc_tuple_kinds(code, &what);
        if (kinds != NULL) {
            if (tuple_argument(args[k], code, kinds, what, &out[k].tuple) < 0)
                return -1;
        } else if (code == 'f') {
            out[k].f = PyFloat_AsDouble(args[k]);
            if (out[k].f == -1.0 && PyErr_Occurred())
                return -1;
        } else if (code == 'i') {
            out[k].i = PyLong_AsLongLong(args[k]);
            if (out[k].i == -1 && PyErr_Occurred())
                return -1;
        } else if (code == 'o') {
            out[k].obj = args[k];
        } else if (code == 'p') {
            int truth = PyObject_IsTrue(args[k]);
            if (truth < 0)
                return -1;
            out[k].i = truth;
        } else if (Py_IS_TYPE(args[k], &PackedType) && ((Packed *)args[k])->code == code) {
            out[k].arr = ((Packed *)args[k])->arrs[0];
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
