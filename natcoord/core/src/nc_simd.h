/* Fixed-size vector arithmetic for the 6×6 block kernels, and their dispatch.
 *
 * A 6-vector (a row of a 6×6 block) is a 4-lane part v4 and a 2-lane part v2 (GCC and
 * Clang vector extensions): one AVX and one SSE register in the AVX2 variant of a
 * kernel, three SSE2 registers in the baseline x86-64 one, plain C elsewhere. Only
 * lane-wise +, −, × are used and contraction into fused multiply-adds is off
 * (-ffp-contract=off in setup.py; ISO C mode too), so every lane rounds exactly as the
 * scalar operation: a kernel's variants, and the scalar loops they replace, agree bit
 * for bit, and results do not depend on the machine.
 *
 * NC_DISPATCH(ret, name, params, args) defines the external function `ret name params`
 * calling the AVX2 clone of the always-inline body `name##_body` where the CPU has AVX2
 * (asked once), the baseline x86-64 one elsewhere (a wheel must run on any x86-64: no
 * -march=native); NC_DISPATCH_VOID(name, params, args) likewise for a void function.
 * The body's helpers must be always-inline too, so that each clone compiles them for
 * its own target. */
#ifndef NC_SIMD_H
#define NC_SIMD_H

#include <string.h>

/* right-hand sides side by side in the lane layout (entry q of side j at NC_LANES q + j):
 * nc_acceleration_derivatives' directional pass (sensitivity.c) and the block solve's
 * lanes (blockldl.c); Python reads it as natcoord.core.engine.LANES to size the
 * scratch of the callers that pass several directions (the sweep, Radau's Jacobian) */
#define NC_LANES 4

#if defined(__GNUC__)
#define NC_INLINE static inline __attribute__((always_inline))
/* a hint to fetch the cache line at p for writing; nothing where the compiler has none */
#define NC_PREFETCH_WRITE(p) __builtin_prefetch((p), 1)
#else
#define NC_INLINE static inline
#define NC_PREFETCH_WRITE(p) ((void)(p))
#endif

#if defined(__GNUC__) && !defined(NC_NO_VECTOR)
#define NC_VECTOR 1
typedef double v4 __attribute__((vector_size(32)));
typedef double v2 __attribute__((vector_size(16)));
/* unaligned views of double arrays (blocks are 8-byte aligned rows of 6) */
typedef double v4u __attribute__((vector_size(32), aligned(8), may_alias));
typedef double v2u __attribute__((vector_size(16), aligned(8), may_alias));
/* Loads, stores and broadcasts as macros, not functions: no vector passes a function
 * boundary (whose ABI differs between the AVX2 and baseline variants). BC4 and BC2
 * take a plain variable; LO2 is the low half of a v4 (a broadcast's, for the 2-lane
 * part of a row). */
#define LD4(p) (*(const v4u *)(p))
#define LD2(p) (*(const v2u *)(p))
#define ST4(p, x) (*(v4u *)(p) = (x))
#define ST2(p, x) (*(v2u *)(p) = (x))
#define BC4(a) ((v4){(a), (a), (a), (a)})
#define BC2(a) ((v2){(a), (a)})
#define LO2(x) ((v2){(x)[0], (x)[1]})
#endif

#if defined(__GNUC__) && defined(__x86_64__) && !defined(NC_NO_DISPATCH)
#define NC_HAS_DISPATCH 1
/* 1 where the CPU has AVX2 (asked once) */
static inline int nc_avx2(void)
{
    static int avx2 = -1;
    if (avx2 < 0)
        avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
    return avx2;
}

#define NC_DISPATCH(ret, name, params, args)                                              \
    __attribute__((target("avx2"))) static ret name##_avx2 params                         \
    {                                                                                     \
        return name##_body args;                                                          \
    }                                                                                     \
    static ret name##_base params                                                         \
    {                                                                                     \
        return name##_body args;                                                          \
    }                                                                                     \
    ret name params                                                                       \
    {                                                                                     \
        return nc_avx2() ? name##_avx2 args : name##_base args;                           \
    }
#define NC_DISPATCH_VOID(name, params, args)                                              \
    __attribute__((target("avx2"))) static void name##_avx2 params                        \
    {                                                                                     \
        name##_body args;                                                                 \
    }                                                                                     \
    static void name##_base params                                                        \
    {                                                                                     \
        name##_body args;                                                                 \
    }                                                                                     \
    void name params                                                                      \
    {                                                                                     \
        if (nc_avx2())                                                                    \
            name##_avx2 args;                                                             \
        else                                                                              \
            name##_base args;                                                             \
    }
#else
#define NC_DISPATCH(ret, name, params, args)                                              \
    ret name params                                                                       \
    {                                                                                     \
        return name##_body args;                                                          \
    }
#define NC_DISPATCH_VOID(name, params, args)                                              \
    void name params                                                                      \
    {                                                                                     \
        name##_body args;                                                                 \
    }
#endif

#endif
