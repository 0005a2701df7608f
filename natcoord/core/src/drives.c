/* (being ported from Numba: see the helper that owns this file) */
#include "nc_core.h"

PyMethodDef nc_drives_methods[] = {
    {NULL, NULL, 0, NULL},
};
