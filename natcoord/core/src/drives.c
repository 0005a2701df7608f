/* Drive laws s(t) and the weights of driven rows (docs/method.md#14-joints).
 *
 * A driven row is Σ_m w_m(t) q_m(p) with w = s (prismatic) or cos s, sin s
 * (revolute); the weight table row k + 1 holds (w, ẇ, ẅ) of weight k, which give
 * g_t and the −∂²g/∂t² part of γ. A law (natcoord.model.drives.Laws) is
 *   PIECEWISE: breaks x_0 ≤ … ≤ x_m (data[:m+1]) and per piece `order` ascending
 *     coefficients of s = Σ_k c_ik (t − x_i)^k on x_i ≤ t < x_{i+1} (the end pieces
 *     extend beyond), evaluated with its derivatives by Horner's scheme;
 *   FOURIER: data = (ω, a_0, a_1, b_1, …, a_K, b_K), s = a_0 + Σ a_k cos kωt + b_k sin kωt,
 *     the harmonics by the angle-addition recurrence (one cos and one sin per call).
 * The same code serves real data and, for the complex-step derivative of a drive's
 * parameter (drives.parameter_weights), C99 double complex data. */
#include "nc_core.h"

enum { PIECEWISE, FOURIER };
enum { WEIGHT_S, WEIGHT_COS, WEIGHT_SIN };

/* law_triple and weight_of for one scalar type: SCALAR, its cos, sin and real part */
#define DEFINE_LAWS(SUFFIX, SCALAR, COS, SIN, REAL)                                         \
    static void law_triple_##SUFFIX(int64_t kind, int64_t pieces, int64_t order,            \
                                    const SCALAR *data, double t, SCALAR out[3])            \
    {                                                                                       \
        SCALAR zero = data[0] * 0.0, s = zero, sd = zero, sdd = zero;                       \
        if (kind == PIECEWISE) {                                                            \
            int64_t lo = 0, hi = pieces - 1;                                                \
            while (lo < hi) {                     /* the last break x_i ≤ t (or x_0) */     \
                int64_t mid = (lo + hi + 1) / 2;                                            \
                if (t >= REAL(data[mid]))                                                   \
                    lo = mid;                                                               \
                else                                                                        \
                    hi = mid - 1;                                                           \
            }                                                                               \
            SCALAR tau = t - data[lo];                                                      \
            const SCALAR *c = data + pieces + 1 + lo * order;                               \
            for (int64_t k = order - 1; k >= 0; k--) {                                      \
                sdd = sdd * tau + 2.0 * sd;                                                 \
                sd = sd * tau + s;                                                          \
                s = s * tau + c[k];                                                         \
            }                                                                               \
        } else {                                                                            \
            SCALAR w = data[0], c1 = COS(w * t), n1 = SIN(w * t), c = c1, n = n1;           \
            s = data[1] + zero;                                                             \
            for (int64_t k = 1; k <= order; k++) {                                          \
                SCALAR a = data[2 * k], b = data[2 * k + 1], kw = (double)k * w;            \
                s += a * c + b * n;                                                         \
                sd += kw * (b * c - a * n);                                                 \
                sdd -= kw * kw * (a * c + b * n);                                           \
                SCALAR next = c * c1 - n * n1;                                              \
                n = n * c1 + c * n1;                                                        \
                c = next;                                                                   \
            }                                                                               \
        }                                                                                   \
        out[0] = s;                                                                         \
        out[1] = sd;                                                                        \
        out[2] = sdd;                                                                       \
    }                                                                                       \
                                                                                            \
    /* (w, ẇ, ẅ) of the weight s, cos s or sin s from (s, ṡ, s̈) */                          \
    static void weight_of_##SUFFIX(int64_t kind, const SCALAR *triple, SCALAR *out)         \
    {                                                                                       \
        SCALAR s = triple[0], sd = triple[1], sdd = triple[2];                              \
        if (kind == WEIGHT_S) {                                                             \
            out[0] = s;                                                                     \
            out[1] = sd;                                                                    \
            out[2] = sdd;                                                                   \
            return;                                                                         \
        }                                                                                   \
        SCALAR c = COS(s), n = SIN(s);                                                      \
        if (kind == WEIGHT_COS) {                                                           \
            out[0] = c;                                                                     \
            out[1] = -n * sd;                                                               \
            out[2] = -c * sd * sd - n * sdd;                                                \
        } else {                                                                            \
            out[0] = n;                                                                     \
            out[1] = c * sd;                                                                \
            out[2] = -n * sd * sd + c * sdd;                                                \
        }                                                                                   \
    }                                                                                       \
                                                                                            \
    /* out[k + 1] = (w, ẇ, ẅ) of weight k of the laws L at time t */                        \
    static void fill_weights_##SUFFIX(const nc_arr *L, double t, SCALAR *out)               \
    {                                                                                       \
        const int64_t *weight_kind = I64(L[L_weight_kind]), *weight_law = I64(L[L_weight_law]); \
        const int64_t *kind = I64(L[L_kind]), *pieces = I64(L[L_pieces]);                   \
        const int64_t *order = I64(L[L_order]), *ptr = I64(L[L_ptr]);                       \
        const SCALAR *data = (const SCALAR *)L[L_data].p;                                   \
        for (int64_t k = 0; k < L[L_weight_kind].size; k++) {                               \
            int64_t l = weight_law[k];                                                      \
            SCALAR triple[3];                                                               \
            law_triple_##SUFFIX(kind[l], pieces[l], order[l], data + ptr[l], t, triple);    \
            weight_of_##SUFFIX(weight_kind[k], triple, out + 3 * (k + 1));                  \
        }                                                                                   \
    }

#define REAL_PART(x) (x)
DEFINE_LAWS(real, double, cos, sin, REAL_PART)
DEFINE_LAWS(complex, double complex, ccos, csin, creal)

void nc_fill_weights(const nc_arr *L, double t, double *out)
{
    fill_weights_real(L, t, out);
}

/* ------------------------------------------------------------------ wrappers */
/* the laws L fit a weight table `out` of `rows` rows and their data */
static int check_laws(const nc_arr *L, int64_t rows, const char *function)
{
    int64_t n = L[L_kind].size;
    if (L[L_weight_law].size != L[L_weight_kind].size || L[L_pieces].size != n ||
        L[L_order].size != n || L[L_ptr].size != n + 1) {
        PyErr_Format(PyExc_ValueError, "core.%s: inconsistent Laws arrays", function);
        return -1;
    }
    if (rows < L[L_weight_kind].size + 1) {
        PyErr_Format(PyExc_ValueError, "core.%s: the weight table has %lld rows, the laws fill "
                     "%lld", function, (long long)rows, (long long)L[L_weight_kind].size + 1);
        return -1;
    }
    for (int64_t k = 0; k < L[L_weight_law].size; k++)
        if (I64(L[L_weight_law])[k] < 0 || I64(L[L_weight_law])[k] >= n) {
            PyErr_Format(PyExc_ValueError, "core.%s: weight %lld has no law", function,
                         (long long)k);
            return -1;
        }
    if (n > 0 && I64(L[L_ptr])[n] > L[L_data].size) {
        PyErr_Format(PyExc_ValueError, "core.%s: the laws' data are too short", function);
        return -1;
    }
    return 0;
}

/* a weight table (rows, 3) */
static int check_table(const nc_arr *out, const char *function)
{
    if (out->ndim != 2 || out->shape[1] != 3) {
        PyErr_Format(PyExc_ValueError, "core.%s: the weight table must have shape (rows, 3)",
                     function);
        return -1;
    }
    return 0;
}

NC_WRAPPER(fill_weights)
{
    nc_arr l[L_COUNT];
    nc_value a[3] = {{.tuple = l}};
    if (nc_parse(args, nargs, "Lfd", a, "fill_weights") < 0 ||
        check_table(&a[2].arr, "fill_weights") < 0 ||
        check_laws(a[0].tuple, a[2].arr.shape[0], "fill_weights") < 0)
        return NULL;
    fill_weights_real(a[0].tuple, a[1].f, F64(a[2].arr));
    Py_RETURN_NONE;
}

NC_WRAPPER(fill_weights_complex)
{
    nc_arr L[L_COUNT];
    nc_value a[3];
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "core.fill_weights_complex takes 3 arguments, got %zd",
                     nargs);
        return NULL;
    }
    if (nc_unpack(args[0], "qqqqqqZ", L, "Laws (complex data)") < 0 ||
        nc_parse(args + 1, 2, "fZ", a + 1, "fill_weights_complex") < 0 ||
        check_table(&a[2].arr, "fill_weights_complex") < 0 ||
        check_laws(L, a[2].arr.shape[0], "fill_weights_complex") < 0)
        return NULL;
    fill_weights_complex(L, a[1].f, CPLX(a[2].arr));
    Py_RETURN_NONE;
}

NC_WRAPPER(law_triple)
{
    nc_value a[5];
    if (nc_parse(args, nargs, "iiidf", a, "law_triple") < 0)
        return NULL;
    int64_t kind = a[0].i, pieces = a[1].i, order = a[2].i, size = a[3].arr.size;
    int64_t need = kind == PIECEWISE ? pieces + 1 + pieces * order : 2 + 2 * order;
    if ((kind != PIECEWISE && kind != FOURIER) || pieces < 1 || order < 0 || size < need) {
        PyErr_Format(PyExc_ValueError, "core.law_triple: a law of kind %lld with %lld pieces of "
                     "order %lld needs %lld data, got %lld", (long long)kind, (long long)pieces,
                     (long long)order, (long long)need, (long long)size);
        return NULL;
    }
    double triple[3];
    law_triple_real(kind, pieces, order, F64(a[3].arr), a[4].f, triple);
    return Py_BuildValue("(ddd)", triple[0], triple[1], triple[2]);
}

NC_WRAPPER(weight_of)
{
    nc_value a[4];
    if (nc_parse(args, nargs, "ifff", a, "weight_of") < 0)
        return NULL;
    double triple[3] = {a[1].f, a[2].f, a[3].f}, w[3];
    weight_of_real(a[0].i, triple, w);
    return Py_BuildValue("(ddd)", w[0], w[1], w[2]);
}

PyMethodDef nc_drives_methods[] = {
    NC_METHOD(fill_weights, "fill_weights(laws, t, out): out[k + 1] = (w_k, ẇ_k, ẅ_k) at time "
              "t for the weights of Laws `laws` (row 0, the constant 1, is left alone)."),
    NC_METHOD(fill_weights_complex, "fill_weights_complex(laws, t, out): fill_weights for "
              "complex law data and a complex table (the complex-step derivative)."),
    NC_METHOD(law_triple, "law_triple(kind, pieces, order, data, t) -> (s, ṡ, s̈) of a law."),
    NC_METHOD(weight_of, "weight_of(kind, s, ṡ, s̈) -> (w, ẇ, ẅ) of the weight s, cos s or sin s."),
    {NULL, NULL, 0, NULL},
};
