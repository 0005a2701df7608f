"""natcoord's compiled core (C99, ``natcoord/core/src``), built at install.

Constraint and force evaluation, drive laws, the block LDLᵀ with constraint
partitioning, the DOPRI5 step with projection and dense output, the
sensitivity sweep and the joint-space rates, each implemented once, in C. The
kernels read the named tuples of arrays the Python layer prepares once per model
and run
(``natcoord/core/src/nc_fields.h``) and write into preallocated buffers.
"""
from . import engine

__all__ = ["engine"]
