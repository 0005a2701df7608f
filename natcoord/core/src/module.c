/* The extension module natcoord.core.engine: the method tables of every source
 * file of the core joined into one module. */
#include "nc_core.h"
#include "dopri5.h"
#include "radau.h"
#include "sensitivity.h"

static PyObject *py_layout(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "Tables", NC_TABLES_NAMES,
                         "Buffers", NC_BUFFERS_NAMES, "PlanArrays", NC_PLAN_NAMES,
                         "WorkBuffers", NC_WORK_NAMES, "FactorStore", NC_STORE_NAMES,
                         "Laws", NC_LAWS_NAMES, "RadauBuffers", NC_RADAU_NAMES);
}

static PyMethodDef *const tables[] = {
    nc_binding_methods, nc_constraints_methods, nc_drives_methods, nc_forces_methods,
    nc_blockldl_methods, nc_dopri5_methods, nc_sensitivity_methods, nc_radau_methods,
    nc_joint_space_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "engine",
    "natcoord's compiled core (C99): constraints, forces, drives, the block LDL^T, "
    "the DOPRI5 step, the sensitivity sweep, the Radau IIA step and the joint-space rates.", -1, NULL,
};

PyMODINIT_FUNC PyInit_engine(void)
{
    static PyMethodDef layout = {"layout", (PyCFunction)py_layout, METH_NOARGS,
                                 "Field names of the named tuples, as compiled in."};
    if (nc_binding_ready() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *name = PyModule_GetNameObject(m);
    PyObject *f = PyCFunction_NewEx(&layout, NULL, name);
    if (f == NULL || PyModule_AddObject(m, "layout", f) < 0)
        goto fail;
    if (PyModule_AddIntConstant(m, "LANES", NC_LANES) < 0 ||
        PyModule_AddObject(m, "PROJECTION_MARGIN", PyFloat_FromDouble(NC_PROJECTION_MARGIN)) < 0 ||
        PyModule_AddIntConstant(m, "PROJECTION_MAX_ITER", NC_PROJECTION_MAX_ITER) < 0)
        goto fail;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        for (PyMethodDef *def = tables[t]; def->ml_name != NULL; def++) {
            f = PyCFunction_NewEx(def, NULL, name);
            if (f == NULL || PyModule_AddObject(m, def->ml_name, f) < 0)
                goto fail;
        }
    }
    Py_DECREF(name);
    return m;
fail:
    Py_XDECREF(name);
    Py_DECREF(m);
    return NULL;
}
