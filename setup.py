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
    # -O3 lets GCC/Clang vectorize the fixed-size block loops; no -ffast-math, which
    # would reorder sums and change results between machines and compilers
    extra_compile_args=["-std=c99", "-O3", "-Wall", "-Wno-unused-function"],
)

setup(ext_modules=[CORE])
