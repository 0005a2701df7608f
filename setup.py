"""Build of natcoord's compiled core (natcoord/core/src, C99) into natcoord.core.engine.

Metadata and dependencies live in setup.cfg; this file only declares the extension,
compiled by the machine's C compiler during ``pip install`` (no JIT at run time).
"""
from glob import glob

from setuptools import Extension, setup

CORE = Extension(
    "natcoord.core.engine",
    sources=sorted(glob("natcoord/core/src/*.c")),
    depends=sorted(glob("natcoord/core/src/*.h")),
    # -O3 unrolls the fixed-size block loops; the kernels' AVX2 variants are chosen at
    # run time (natcoord/core/src/nc_simd.h), not by -march, so the wheel runs on any
    # x86-64. No -ffast-math, which would reorder sums, and no contraction into fused
    # multiply-adds (-ffp-contract=off; an AVX2 variant could contract): results do not
    # change between machines, compilers or the variant taken
    extra_compile_args=["-std=c99", "-O3", "-ffp-contract=off", "-Wall",
                        "-Wno-unused-function"],
)

setup(ext_modules=[CORE])
