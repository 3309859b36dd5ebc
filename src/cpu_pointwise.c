/*
 * cpu_pointwise.c — element movement for the CPU backend and the kernels built only
 * from it: the N-d iterator, block conversions between strided buffers of any dtype
 * and contiguous double/int64 blocks, strided copies (casts and the copying shape
 * ops: pad, triu, tril), creation ops, and every pointwise op.
 *
 * Invariants:
 *  - every dtype switch sits outside its element loop, and no element loop calls
 *    through a function pointer;
 *  - pointwise ops follow docs/OPS.md: operands are converted to the common dtype
 *    (cdt) first; a float cdt computes in double and the store rounds once to the
 *    result dtype; an integer or bool cdt computes in int64 with wrapping through
 *    uint64, and the store wraps to the result dtype;
 *  - a kernel only writes its own output buffer; a run-time error (integer division
 *    by zero) returns before the backend copies anything to the caller.
 */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------ */
/* The N-d iterator                                                                 */
/* ------------------------------------------------------------------------------ */

void sf_cpu_iter_init(sf_cpu_iter *it, int ndim, const int64_t *shape, int nop,
                      const int64_t *const *strides) {
    SF_ASSERT(nop >= 1 && nop <= SF_CPU_MAX_OPS && ndim >= 0 && ndim <= SF_MAX_DIMS);
    memset(it, 0, sizeof *it);
    it->nop = nop;
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) it->done = true;
        if (shape[d] == 1) continue; /* a size-1 dim never moves any operand */
        /* Merge with the previous kept dim when every operand steps over it exactly
         * as one longer dim would: then the walk order and the offsets are unchanged. */
        bool merge = nd > 0;
        for (int op = 0; op < nop && merge; op++)
            merge = it->stride[op][nd - 1] == strides[op][d] * shape[d];
        if (merge) {
            it->shape[nd - 1] *= shape[d];
            for (int op = 0; op < nop; op++) it->stride[op][nd - 1] = strides[op][d];
        } else {
            it->shape[nd] = shape[d];
            for (int op = 0; op < nop; op++) it->stride[op][nd] = strides[op][d];
            nd++;
        }
    }
    if (nd == 0) { /* 0-d or all ones: one element */
        it->shape[0] = 1;
        for (int op = 0; op < nop; op++) it->stride[op][0] = 0;
        nd = 1;
    }
    it->ndim = nd;
}

int64_t sf_cpu_iter_next(sf_cpu_iter *it, int64_t maxn, int64_t *offs) {
    if (it->done) return 0;
    int last = it->ndim - 1;
    int64_t left = it->shape[last] - it->inner;
    int64_t n = left < maxn ? left : maxn;
    for (int op = 0; op < it->nop; op++)
        offs[op] = it->base[op] + it->inner * it->stride[op][last];
    it->inner += n;
    if (it->inner == it->shape[last]) {
        it->inner = 0;
        int d = last - 1;
        for (; d >= 0; d--) {
            if (++it->idx[d] < it->shape[d]) {
                for (int op = 0; op < it->nop; op++) it->base[op] += it->stride[op][d];
                break;
            }
            it->idx[d] = 0;
            for (int op = 0; op < it->nop; op++)
                it->base[op] -= it->stride[op][d] * (it->shape[d] - 1);
        }
        if (d < 0) it->done = true;
    }
    return n;
}

void sf_cpu_broadcast_strides(const sf_view *in, int ndim, const int64_t *shape,
                              int64_t *strides) {
    int lead = ndim - in->ndim;
    SF_ASSERT(lead >= 0);
    for (int d = 0; d < ndim; d++) {
        int j = d - lead;
        if (j < 0 || in->shape[j] == 1) strides[d] = 0;
        else strides[d] = in->strides[j];
        SF_ASSERT(j < 0 || in->shape[j] == 1 || in->shape[j] == shape[d]);
    }
}

bool sf_cpu_view_is_contiguous(const sf_view *v) {
    int64_t expect = 1;
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] == 0) return true;
        if (v->shape[d] == 1) continue;
        if (v->strides[d] != expect) return false;
        expect *= v->shape[d];
    }
    return true;
}

/* ------------------------------------------------------------------------------ */
/* Block conversions                                                                */
/* ------------------------------------------------------------------------------ */

/* Loops compiled for AVX-512, AVX2 and the baseline, picked at run time (GCC's
 * target_clones; static functions, so clang's clones link too): integer and IEEE double
 * operations only, no contraction, so every clone gives the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define PW_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
#endif
#ifndef PW_CLONES
#define PW_CLONES
#endif

/* One loop per source type: load a T at element offset off + i*stride with memcpy.
 * The unit-stride copy of the loop lets the compiler vectorize it. */
#define LOAD_LOOP(T, out, conv_expr)                                                   \
    do {                                                                               \
        if (stride == 1) {                                                             \
            const char *q_ = p + off * (int64_t)sizeof(T);                             \
            for (int64_t i = 0; i < n; i++) {                                          \
                T x_;                                                                  \
                memcpy(&x_, q_ + i * (int64_t)sizeof(T), sizeof(T));                   \
                out[i] = conv_expr;                                                    \
            }                                                                          \
        } else {                                                                       \
            for (int64_t i = 0; i < n; i++) {                                          \
                T x_;                                                                  \
                memcpy(&x_, p + (off + i * stride) * (int64_t)sizeof(T), sizeof(T));   \
                out[i] = conv_expr;                                                    \
            }                                                                          \
        }                                                                              \
    } while (0)

/* Is every value of dtype `from` exactly representable in float dtype `to`? */
static bool exact_in_float(scanfuse_dtype from, scanfuse_dtype to) {
    switch (to) {
    case SCANFUSE_FLOAT64: return from != SCANFUSE_INT64;
    case SCANFUSE_FLOAT32:
        return from <= SCANFUSE_INT16 || from == SCANFUSE_FLOAT16 ||
               from == SCANFUSE_BFLOAT16 || from == SCANFUSE_FLOAT32;
    case SCANFUSE_FLOAT16:
        return from <= SCANFUSE_INT8 || from == SCANFUSE_FLOAT16;
    case SCANFUSE_BFLOAT16:
        return from <= SCANFUSE_INT8 || from == SCANFUSE_BFLOAT16;
    case SCANFUSE_BOOL: case SCANFUSE_UINT8: case SCANFUSE_INT8: case SCANFUSE_INT16:
    case SCANFUSE_INT32: case SCANFUSE_INT64: case SCANFUSE_DTYPE_NONE:
    case SCANFUSE_NUM_DTYPES: break;
    }
    return true;
}

/* Rounds doubles to a float dtype in place (the cast to that dtype). */
static void round_block(double *x, int64_t n, scanfuse_dtype to) {
    switch (to) {
    case SCANFUSE_FLOAT32:
        for (int64_t i = 0; i < n; i++) x[i] = (double)(float)x[i];
        break;
    case SCANFUSE_FLOAT16:
        for (int64_t i = 0; i < n; i++) x[i] = sf_cpu_f16_to_f64(sf_cpu_f64_to_f16(x[i]));
        break;
    case SCANFUSE_BFLOAT16:
        for (int64_t i = 0; i < n; i++) x[i] = sf_cpu_bf16_to_f64(sf_cpu_f64_to_bf16(x[i]));
        break;
    case SCANFUSE_FLOAT64: case SCANFUSE_BOOL: case SCANFUSE_UINT8: case SCANFUSE_INT8:
    case SCANFUSE_INT16: case SCANFUSE_INT32: case SCANFUSE_INT64: case SCANFUSE_DTYPE_NONE:
    case SCANFUSE_NUM_DTYPES: break;
    }
}

/* float16 bits -> double (exact), as sf_cpu_f16_to_f64 but by masks, for the vectorizer
 * (it takes no ternaries here): zero and subnormals m * 2^-24, infinities and NaN
 * (payload kept), normal numbers rebiased. */
static inline double f16_to_f64_sel(uint16_t h) {
    const uint64_t sign = (uint64_t)(h >> 15) << 63, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    const uint64_t sub = sf_cpu_bits((double)(int32_t)m * 0x1p-24) | sign;
    const uint64_t big = sign | 0x7FF0000000000000ull | (m << 42);
    const uint64_t nrm = sign | ((e + 1008) << 52) | (m << 42);
    const uint64_t is_sub = (uint64_t)0 - (uint64_t)(e == 0), is_big = (uint64_t)0 - (uint64_t)(e == 31);
    return sf_cpu_from_bits((sub & is_sub) | (big & is_big) | (nrm & ~(is_sub | is_big)));
}

/* The loads of sf_cpu_gather_f64, cloned (a static function: clang 14 leaves exported
 * clones undefined at link time). */
PW_CLONES static void gather_f64(const char *p, scanfuse_dtype dt, int64_t off, int64_t stride, int64_t n,
                                 double *restrict out) {
    switch (dt) {
    case SCANFUSE_BOOL: LOAD_LOOP(uint8_t, out, x_ != 0); break;
    case SCANFUSE_UINT8: LOAD_LOOP(uint8_t, out, (double)x_); break;
    case SCANFUSE_INT8: LOAD_LOOP(int8_t, out, (double)x_); break;
    case SCANFUSE_INT16: LOAD_LOOP(int16_t, out, (double)x_); break;
    case SCANFUSE_INT32: LOAD_LOOP(int32_t, out, (double)x_); break;
    case SCANFUSE_INT64: LOAD_LOOP(int64_t, out, (double)x_); break;
    case SCANFUSE_FLOAT16: LOAD_LOOP(uint16_t, out, f16_to_f64_sel(x_)); break;
    case SCANFUSE_BFLOAT16: LOAD_LOOP(uint16_t, out, sf_cpu_bf16_to_f64(x_)); break;
    case SCANFUSE_FLOAT32: LOAD_LOOP(float, out, (double)x_); break;
    case SCANFUSE_FLOAT64:
        if (stride == 1) memcpy(out, p + off * 8, (size_t)n * 8);
        else LOAD_LOOP(double, out, x_);
        break;
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: SF_ASSERT(!"bad dtype"); break;
    }
}

void sf_cpu_gather_f64(const void *base, scanfuse_dtype dt, int64_t off, int64_t stride,
                       int64_t n, scanfuse_dtype conv, double *out) {
    gather_f64((const char *)base, dt, off, stride, n, out);
    if (sf_dtype_is_float(conv) && !exact_in_float(dt, conv)) round_block(out, n, conv);
}

/* Wraps int64s in place to an integer dtype (two's complement), bool to != 0. */
static void wrap_block(int64_t *x, int64_t n, scanfuse_dtype to) {
    switch (to) {
    case SCANFUSE_BOOL: for (int64_t i = 0; i < n; i++) x[i] = x[i] != 0; break;
    case SCANFUSE_UINT8: for (int64_t i = 0; i < n; i++) x[i] = (uint8_t)(uint64_t)x[i]; break;
    case SCANFUSE_INT8:
        for (int64_t i = 0; i < n; i++) x[i] = (int8_t)(uint8_t)(uint64_t)x[i];
        break;
    case SCANFUSE_INT16:
        for (int64_t i = 0; i < n; i++) x[i] = (int16_t)(uint16_t)(uint64_t)x[i];
        break;
    case SCANFUSE_INT32:
        for (int64_t i = 0; i < n; i++) x[i] = (int32_t)(uint32_t)(uint64_t)x[i];
        break;
    case SCANFUSE_INT64: case SCANFUSE_FLOAT16: case SCANFUSE_BFLOAT16: case SCANFUSE_FLOAT32:
    case SCANFUSE_FLOAT64: case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: break;
    }
}

/* Converts doubles to int64 values of integer dtype `to` as PyTorch's x86 cast does:
 * int64 directly, narrower types through int32 and then wrapped, bool as != 0. */
static void f64_to_int_block(const double *x, int64_t *y, int64_t n, scanfuse_dtype to) {
    if (to == SCANFUSE_BOOL) {
        for (int64_t i = 0; i < n; i++) y[i] = x[i] != 0.0; /* NaN is true */
    } else if (to == SCANFUSE_INT64) {
        for (int64_t i = 0; i < n; i++) y[i] = sf_cpu_f64_to_i64(x[i]);
    } else {
        for (int64_t i = 0; i < n; i++) y[i] = sf_cpu_f64_to_i32(x[i]);
        wrap_block(y, n, to);
    }
}

void sf_cpu_gather_i64(const void *base, scanfuse_dtype dt, int64_t off, int64_t stride,
                       int64_t n, scanfuse_dtype conv, int64_t *out) {
    const char *p = (const char *)base;
    if (sf_dtype_is_float(dt)) {
        double tmp[SF_CPU_BLOCK];
        for (int64_t s = 0; s < n; s += SF_CPU_BLOCK) {
            int64_t m = n - s < SF_CPU_BLOCK ? n - s : SF_CPU_BLOCK;
            sf_cpu_gather_f64(base, dt, off + s * stride, stride, m, dt, tmp);
            f64_to_int_block(tmp, out + s, m, sf_dtype_is_float(conv) ? SCANFUSE_INT64 : conv);
        }
        return;
    }
    switch (dt) {
    case SCANFUSE_BOOL: LOAD_LOOP(uint8_t, out, x_ != 0); break;
    case SCANFUSE_UINT8: LOAD_LOOP(uint8_t, out, (int64_t)x_); break;
    case SCANFUSE_INT8: LOAD_LOOP(int8_t, out, (int64_t)x_); break;
    case SCANFUSE_INT16: LOAD_LOOP(int16_t, out, (int64_t)x_); break;
    case SCANFUSE_INT32: LOAD_LOOP(int32_t, out, (int64_t)x_); break;
    case SCANFUSE_INT64:
        if (stride == 1) memcpy(out, p + off * 8, (size_t)n * 8);
        else LOAD_LOOP(int64_t, out, x_);
        break;
    case SCANFUSE_FLOAT16: case SCANFUSE_BFLOAT16: case SCANFUSE_FLOAT32: case SCANFUSE_FLOAT64:
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: SF_ASSERT(!"bad dtype"); break;
    }
    /* uint8 -> int8 must wrap too, so any narrower-or-different target wraps */
    if (!sf_dtype_is_float(conv) && conv != dt && conv != SCANFUSE_INT64) wrap_block(out, n, conv);
}

#define STORE_LOOP(T, expr)                                                            \
    do {                                                                               \
        if (stride == 1) {                                                             \
            char *q_ = p + off * (int64_t)sizeof(T);                                   \
            for (int64_t i = 0; i < n; i++) {                                          \
                T y_ = (expr);                                                         \
                memcpy(q_ + i * (int64_t)sizeof(T), &y_, sizeof(T));                   \
            }                                                                          \
        } else {                                                                       \
            for (int64_t i = 0; i < n; i++) {                                          \
                T y_ = (expr);                                                         \
                memcpy(p + (off + i * stride) * (int64_t)sizeof(T), &y_, sizeof(T));   \
            }                                                                          \
        }                                                                              \
    } while (0)

/* Stores int64 values already in the range of integer dtype dt. */
static void store_int_values(char *p, scanfuse_dtype dt, int64_t off, int64_t stride,
                             int64_t n, const int64_t *x) {
    switch (dt) {
    case SCANFUSE_BOOL: STORE_LOOP(uint8_t, (uint8_t)(x[i] != 0)); break;
    case SCANFUSE_UINT8: STORE_LOOP(uint8_t, (uint8_t)(uint64_t)x[i]); break;
    case SCANFUSE_INT8: STORE_LOOP(int8_t, (int8_t)x[i]); break;
    case SCANFUSE_INT16: STORE_LOOP(int16_t, (int16_t)x[i]); break;
    case SCANFUSE_INT32: STORE_LOOP(int32_t, (int32_t)x[i]); break;
    case SCANFUSE_INT64:
        if (stride == 1) memcpy(p + off * 8, x, (size_t)n * 8);
        else STORE_LOOP(int64_t, x[i]);
        break;
    case SCANFUSE_FLOAT16: case SCANFUSE_BFLOAT16: case SCANFUSE_FLOAT32: case SCANFUSE_FLOAT64:
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: SF_ASSERT(!"bad dtype"); break;
    }
}

/* n doubles to float16 (bf = false) or bfloat16 bits, rounded to nearest even: the bits
 * of sf_cpu_f64_to_f16 / sf_cpu_f64_to_bf16, in a loop the vectorizer takes.  Results
 * in the format's normal range round by adding half an ulp less one, plus the kept
 * part's lowest bit, to the double's bits (a carry into the exponent is the step to
 * the next binade, or to infinity, as there), and zeros and double subnormals keep
 * their sign; the rest (subnormal results, overflow, infinities, NaN) are redone by the
 * scalar function. */
PW_CLONES static void f64_to_half(const double *restrict x, uint16_t *restrict y, int64_t n, bool bf) {
    const int shift = bf ? 45 : 42;                  /* fraction bits dropped */
    const uint64_t rebias = bf ? 1023 - 127 : 1023 - 15; /* double's bias less the format's */
    const uint64_t emax = bf ? 254 : 30;             /* largest biased normal exponent */
    const uint64_t half = (1ull << (shift - 1)) - 1;
    uint64_t out = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint64_t b = sf_cpu_bits(x[i]), a = b & 0x7FFFFFFFFFFFFFFFull;
        const uint64_t e = a >> 52, sign = (b >> 48) & 0x8000u;
        const uint64_t r = ((a + half + ((a >> shift) & 1)) >> shift) - (rebias << (52 - shift));
        out |= (uint64_t)(e != 0) & (uint64_t)(e - rebias - 1 >= emax); /* (wraps below: e <= rebias) */
        y[i] = (uint16_t)(e == 0 ? sign : sign | r);
    }
    if (out)
        for (int64_t i = 0; i < n; i++) {
            const uint64_t e = (sf_cpu_bits(x[i]) >> 52) & 0x7FF;
            if (e != 0 && e - rebias - 1 >= emax) y[i] = bf ? sf_cpu_f64_to_bf16(x[i]) : sf_cpu_f64_to_f16(x[i]);
        }
}

void sf_cpu_store_f64(void *base, scanfuse_dtype dt, int64_t off, int64_t stride, int64_t n,
                      const double *x) {
    char *p = (char *)base;
    switch (dt) {
    case SCANFUSE_FLOAT16: case SCANFUSE_BFLOAT16: {
        uint16_t h[SF_CPU_BLOCK];
        for (int64_t s = 0; s < n; s += SF_CPU_BLOCK) {
            const int64_t m = n - s < SF_CPU_BLOCK ? n - s : SF_CPU_BLOCK;
            f64_to_half(x + s, h, m, dt == SCANFUSE_BFLOAT16);
            if (stride == 1) memcpy(p + (off + s) * 2, h, (size_t)m * 2);
            else
                for (int64_t i = 0; i < m; i++) memcpy(p + (off + (s + i) * stride) * 2, &h[i], 2);
        }
        return;
    }
    case SCANFUSE_FLOAT32: STORE_LOOP(float, (float)x[i]); return;
    case SCANFUSE_FLOAT64:
        if (stride == 1) memcpy(p + off * 8, x, (size_t)n * 8);
        else STORE_LOOP(double, x[i]);
        return;
    case SCANFUSE_BOOL: case SCANFUSE_UINT8: case SCANFUSE_INT8: case SCANFUSE_INT16:
    case SCANFUSE_INT32: case SCANFUSE_INT64: {
        int64_t tmp[SF_CPU_BLOCK];
        for (int64_t s = 0; s < n; s += SF_CPU_BLOCK) {
            int64_t m = n - s < SF_CPU_BLOCK ? n - s : SF_CPU_BLOCK;
            f64_to_int_block(x + s, tmp, m, dt);
            store_int_values(p, dt, off + s * stride, stride, m, tmp);
        }
        return;
    }
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: break;
    }
    SF_ASSERT(!"bad dtype");
}

void sf_cpu_store_i64(void *base, scanfuse_dtype dt, int64_t off, int64_t stride, int64_t n,
                      const int64_t *x) {
    char *p = (char *)base;
    switch (dt) {
    case SCANFUSE_BOOL: case SCANFUSE_UINT8: case SCANFUSE_INT8: case SCANFUSE_INT16:
    case SCANFUSE_INT32: case SCANFUSE_INT64:
        /* the narrowing casts in store_int_values wrap (two's complement) */
        store_int_values(p, dt, off, stride, n, x);
        return;
    case SCANFUSE_FLOAT16: case SCANFUSE_BFLOAT16: case SCANFUSE_FLOAT32:
    case SCANFUSE_FLOAT64: {
        double tmp[SF_CPU_BLOCK];
        for (int64_t s = 0; s < n; s += SF_CPU_BLOCK) {
            int64_t m = n - s < SF_CPU_BLOCK ? n - s : SF_CPU_BLOCK;
            for (int64_t i = 0; i < m; i++) tmp[i] = (double)x[s + i];
            sf_cpu_store_f64(base, dt, off + s * stride, stride, m, tmp);
        }
        return;
    }
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: break;
    }
    SF_ASSERT(!"bad dtype");
}

void sf_cpu_fill_literal_f64(const sf_num *lit, scanfuse_dtype conv, double *out, int64_t n) {
    double v = lit->kind == SF_NUM_FLOAT ? lit->f : (double)lit->i;
    if (sf_dtype_is_float(conv)) round_block(&v, 1, conv);
    for (int64_t i = 0; i < n; i++) out[i] = v;
}

void sf_cpu_fill_literal_i64(const sf_num *lit, scanfuse_dtype conv, int64_t *out, int64_t n) {
    int64_t v;
    if (lit->kind == SF_NUM_FLOAT) f64_to_int_block(&lit->f, &v, 1, conv);
    else {
        v = lit->i;
        wrap_block(&v, 1, conv);
    }
    for (int64_t i = 0; i < n; i++) out[i] = v;
}

void sf_cpu_store_literal(void *base, scanfuse_dtype dt, const sf_num *lit) {
    if (lit->kind == SF_NUM_FLOAT) sf_cpu_store_f64(base, dt, 0, 1, 1, &lit->f);
    else sf_cpu_store_i64(base, dt, 0, 1, 1, &lit->i);
}

/* ------------------------------------------------------------------------------ */
/* Strided copy                                                                     */
/* ------------------------------------------------------------------------------ */

#define COPY_LOOP(T)                                                                   \
    do {                                                                               \
        for (int64_t i = 0; i < n; i++)                                                \
            memcpy(d + (od + i * sd) * (int64_t)sizeof(T),                             \
                   s + (os + i * ss) * (int64_t)sizeof(T), sizeof(T));                 \
    } while (0)

/* float32 <-> float16 casts of n strided elements by the hardware conversion (F16C, in
 * the clone that has it): float32 -> float16 rounds once to nearest even (what the
 * store through double gives, the double being exact), float16 -> float32 is exact.
 * GCC compiles _Float16 casts to vcvtps2ph / vcvtph2ps there and to a library routine
 * in the default clone; clang 14 has no _Float16 on x86, so it keeps the double path. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__FLT16_MANT_DIG__) && \
    defined(__has_attribute)
#if __has_attribute(target_clones)
#define SF_F16_CASTS 1
__extension__ typedef _Float16 half16; /* a GCC extension (ISO/IEC TS 18661-3) */
/* Element accesses go through memcpy: views may be misaligned (the copy loops above do
 * the same); GCC still vectorizes the unit-stride loops. */
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
f32_to_f16(const char *s, int64_t os, int64_t ss, char *d, int64_t od, int64_t sd, int64_t n) {
    s += os * 4;
    d += od * 2;
    if (ss == 1 && sd == 1) {
        for (int64_t i = 0; i < n; i++) {
            float x;
            memcpy(&x, s + i * 4, 4);
            const half16 y = (half16)x;
            memcpy(d + i * 2, &y, 2);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        float x;
        memcpy(&x, s + i * ss * 4, 4);
        const half16 y = (half16)x;
        memcpy(d + i * sd * 2, &y, 2);
    }
}
__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
f16_to_f32(const char *s, int64_t os, int64_t ss, char *d, int64_t od, int64_t sd, int64_t n) {
    s += os * 2;
    d += od * 4;
    if (ss == 1 && sd == 1) {
        for (int64_t i = 0; i < n; i++) {
            half16 x;
            memcpy(&x, s + i * 2, 2);
            const float y = (float)x;
            memcpy(d + i * 4, &y, 4);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        half16 x;
        memcpy(&x, s + i * ss * 2, 2);
        const float y = (float)x;
        memcpy(d + i * sd * 4, &y, 4);
    }
}
#endif
#endif

/* float32 <-> bfloat16 casts of n strided elements by bit arithmetic (any ISA; the
 * compilers vectorize the unit-stride loops): bfloat16 -> float32 is exact (the bits
 * moved up), float32 -> bfloat16 rounds once to nearest even, which is what the store
 * through double gives (the double being exact), and a NaN becomes the quiet NaN of its
 * sign, as sf_cpu_f64_to_bf16 makes it.  The rounding add cannot carry out of the
 * magnitude (at most 0x7F7FFFFF + 0x8000), and a carry into the exponent is the correct
 * rounding up (to infinity above the largest bfloat16). */
static inline uint16_t f32_bits_to_bf16(uint32_t b) {
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)(((b >> 16) & 0x8000u) | 0x7FC0u);
    return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}
static void f32_to_bf16(const char *s, int64_t os, int64_t ss, char *d, int64_t od, int64_t sd, int64_t n) {
    s += os * 4;
    d += od * 2;
    if (ss == 1 && sd == 1) {
        for (int64_t i = 0; i < n; i++) {
            uint32_t b;
            memcpy(&b, s + i * 4, 4);
            const uint16_t h = f32_bits_to_bf16(b);
            memcpy(d + i * 2, &h, 2);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, s + i * ss * 4, 4);
        const uint16_t h = f32_bits_to_bf16(b);
        memcpy(d + i * sd * 2, &h, 2);
    }
}
static void bf16_to_f32(const char *s, int64_t os, int64_t ss, char *d, int64_t od, int64_t sd, int64_t n) {
    s += os * 2;
    d += od * 4;
    if (ss == 1 && sd == 1) {
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, s + i * 2, 2);
            const uint32_t b = (uint32_t)h << 16;
            memcpy(d + i * 4, &b, 4);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, s + i * ss * 2, 2);
        const uint32_t b = (uint32_t)h << 16;
        memcpy(d + i * sd * 4, &b, 4);
    }
}

void sf_cpu_copy(const sf_view *dst, const sf_view *src) {
    SF_ASSERT(dst->ndim == src->ndim);
    const int64_t *st[2] = {dst->strides, src->strides};
    sf_cpu_iter it;
    sf_cpu_iter_init(&it, dst->ndim, dst->shape, 2, st);
    int64_t offs[2], n;
    char *d = (char *)dst->data;
    const char *s = (const char *)src->data;
    int64_t sd = sf_cpu_iter_stride(&it, 0), ss = sf_cpu_iter_stride(&it, 1);
    if (dst->dtype == src->dtype) {
        size_t es = scanfuse_dtype_size(dst->dtype);
        while ((n = sf_cpu_iter_next(&it, INT64_MAX, offs)) > 0) {
            int64_t od = offs[0], os = offs[1];
            if (sd == 1 && ss == 1) {
                memmove(d + od * (int64_t)es, s + os * (int64_t)es, (size_t)n * es);
                continue;
            }
            switch (es) {
            case 1: COPY_LOOP(uint8_t); break;
            case 2: COPY_LOOP(uint16_t); break;
            case 4: COPY_LOOP(uint32_t); break;
            default: COPY_LOOP(uint64_t); break;
            }
        }
        return;
    }
    bool tob = src->dtype == SCANFUSE_FLOAT32 && dst->dtype == SCANFUSE_BFLOAT16;
    if (tob || (src->dtype == SCANFUSE_BFLOAT16 && dst->dtype == SCANFUSE_FLOAT32)) {
        while ((n = sf_cpu_iter_next(&it, INT64_MAX, offs)) > 0) {
            if (tob) f32_to_bf16(s, offs[1], ss, d, offs[0], sd, n);
            else bf16_to_f32(s, offs[1], ss, d, offs[0], sd, n);
        }
        return;
    }
#ifdef SF_F16_CASTS
    bool to16 = src->dtype == SCANFUSE_FLOAT32 && dst->dtype == SCANFUSE_FLOAT16;
    if (to16 || (src->dtype == SCANFUSE_FLOAT16 && dst->dtype == SCANFUSE_FLOAT32)) {
        while ((n = sf_cpu_iter_next(&it, INT64_MAX, offs)) > 0) {
            if (to16) f32_to_f16(s, offs[1], ss, d, offs[0], sd, n);
            else f16_to_f32(s, offs[1], ss, d, offs[0], sd, n);
        }
        return;
    }
#endif
    /* Converting copy through a block: float sources or float destinations go through
     * doubles (the double -> integer store is the float -> int cast), integer to
     * integer through int64 (the store wraps). */
    bool via_f64 = sf_dtype_is_float(src->dtype) || sf_dtype_is_float(dst->dtype);
    double fb[SF_CPU_BLOCK];
    int64_t ib[SF_CPU_BLOCK];
    while ((n = sf_cpu_iter_next(&it, SF_CPU_BLOCK, offs)) > 0) {
        if (via_f64) {
            sf_cpu_gather_f64(s, src->dtype, offs[1], ss, n, src->dtype, fb);
            sf_cpu_store_f64(d, dst->dtype, offs[0], sd, n, fb);
        } else {
            sf_cpu_gather_i64(s, src->dtype, offs[1], ss, n, src->dtype, ib);
            sf_cpu_store_i64(d, dst->dtype, offs[0], sd, n, ib);
        }
    }
}

/* ------------------------------------------------------------------------------ */
/* Pointwise ops                                                                    */
/* ------------------------------------------------------------------------------ */

#define LOOP(body)                                                                     \
    do {                                                                               \
        for (int64_t i = 0; i < n; i++) { body; }                                      \
    } while (0)

/* PyTorch's div_floor for floating types (see docs/OPS.md). */
static double floor_divide_f64(double a, double b) {
    if (b == 0.0) return a / b;
    double mod = fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0.0 && (b < 0) != (mod < 0)) div -= 1.0;
    double fl;
    if (div != 0.0) {
        fl = floor(div);
        if (div - fl > 0.5) fl += 1.0;
    } else {
        fl = copysign(0.0, a / b);
    }
    return fl;
}

/* Exact wrapping integer power; negative exponents per docs/OPS.md. */
static int64_t pow_i64(int64_t a, int64_t b) {
    if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b & 1) ? -1 : 1;
        return 0;
    }
    uint64_t r = 1, x = (uint64_t)a;
    uint64_t e = (uint64_t)b;
    while (e) {
        if (e & 1u) r *= x;
        x *= x;
        e >>= 1;
    }
    return sf_cpu_wrap_u64(r);
}

/* e^x (neg: e^-x) for n doubles, within about half an ulp of double (libm's exp for the few
 * arguments outside about [-707.7, 709.0], for infinities and for NaN).  Table-driven (Tang's method): x = (64m +
 * j) ln2/64 + r with k = 64m + j = round(x 64/ln2) by the magic constant 1.5 * 2^52
 * (which leaves k in the low bits), |r| <= ln2/128 (Cody-Waite: LN2_64_HI has 36
 * significant bits, so k * LN2_64_HI is exact for every |k| < 2^17), e^r - 1 by its
 * Taylor series to r^6/6! (the next term is below 2^-64 of the result), 2^(j/64) from
 * the table as a double and the remainder below it (EXP_TAB, computed here to 80
 * digits), and 2^m through the exponent bits: e^x = 2^m (T_hi + (T_lo + T_hi p)).  IEEE
 * double operations only, no contraction, no branches in the first loop, so every clone
 * gives the same bits; GCC vectorizes it in the AVX2 and AVX-512 clones (the table by
 * scalar loads: its generic tuning emits no gathers).  A float32 result rounded from it is the correctly rounded e^x except where
 * e^x lies within about an ulp of double of a rounding boundary, still within 1 ulp of
 * float32. */
static const double EXP_TAB[64][2] = {
    {0x1.0000000000000p+0, 0.0},
    {0x1.02c9a3e778061p+0, -0x1.19083535b085dp-56},
    {0x1.059b0d3158574p+0, 0x1.d73e2a475b465p-55},
    {0x1.0874518759bc8p+0, 0x1.186be4bb284ffp-57},
    {0x1.0b5586cf9890fp+0, 0x1.8a62e4adc610bp-54},
    {0x1.0e3ec32d3d1a2p+0, 0x1.03a1727c57b53p-59},
    {0x1.11301d0125b51p+0, -0x1.6c51039449b3ap-54},
    {0x1.1429aaea92de0p+0, -0x1.32fbf9af1369ep-54},
    {0x1.172b83c7d517bp+0, -0x1.19041b9d78a76p-55},
    {0x1.1a35beb6fcb75p+0, 0x1.e5b4c7b4968e4p-55},
    {0x1.1d4873168b9aap+0, 0x1.e016e00a2643cp-54},
    {0x1.2063b88628cd6p+0, 0x1.dc775814a8495p-55},
    {0x1.2387a6e756238p+0, 0x1.9b07eb6c70573p-54},
    {0x1.26b4565e27cddp+0, 0x1.2bd339940e9d9p-55},
    {0x1.29e9df51fdee1p+0, 0x1.612e8afad1255p-55},
    {0x1.2d285a6e4030bp+0, 0x1.0024754db41d5p-54},
    {0x1.306fe0a31b715p+0, 0x1.6f46ad23182e4p-55},
    {0x1.33c08b26416ffp+0, 0x1.32721843659a6p-54},
    {0x1.371a7373aa9cbp+0, -0x1.63aeabf42eae2p-54},
    {0x1.3a7db34e59ff7p+0, -0x1.5e436d661f5e3p-56},
    {0x1.3dea64c123422p+0, 0x1.ada0911f09ebcp-55},
    {0x1.4160a21f72e2ap+0, -0x1.ef3691c309278p-58},
    {0x1.44e086061892dp+0, 0x1.89b7a04ef80d0p-59},
    {0x1.486a2b5c13cd0p+0, 0x1.3c1a3b69062f0p-56},
    {0x1.4bfdad5362a27p+0, 0x1.d4397afec42e2p-56},
    {0x1.4f9b2769d2ca7p+0, -0x1.4b309d25957e3p-54},
    {0x1.5342b569d4f82p+0, -0x1.07abe1db13cadp-55},
    {0x1.56f4736b527dap+0, 0x1.9bb2c011d93adp-54},
    {0x1.5ab07dd485429p+0, 0x1.6324c054647adp-54},
    {0x1.5e76f15ad2148p+0, 0x1.ba6f93080e65ep-54},
    {0x1.6247eb03a5585p+0, -0x1.383c17e40b497p-54},
    {0x1.6623882552225p+0, -0x1.bb60987591c34p-54},
    {0x1.6a09e667f3bcdp+0, -0x1.bdd3413b26456p-54},
    {0x1.6dfb23c651a2fp+0, -0x1.bbe3a683c88abp-57},
    {0x1.71f75e8ec5f74p+0, -0x1.16e4786887a99p-55},
    {0x1.75feb564267c9p+0, -0x1.0245957316dd3p-54},
    {0x1.7a11473eb0187p+0, -0x1.41577ee04992fp-55},
    {0x1.7e2f336cf4e62p+0, 0x1.05d02ba15797ep-56},
    {0x1.82589994cce13p+0, -0x1.d4c1dd41532d8p-54},
    {0x1.868d99b4492edp+0, -0x1.fc6f89bd4f6bap-54},
    {0x1.8ace5422aa0dbp+0, 0x1.6e9f156864b27p-54},
    {0x1.8f1ae99157736p+0, 0x1.5cc13a2e3976cp-55},
    {0x1.93737b0cdc5e5p+0, -0x1.75fc781b57ebcp-57},
    {0x1.97d829fde4e50p+0, -0x1.d185b7c1b85d1p-54},
    {0x1.9c49182a3f090p+0, 0x1.c7c46b071f2bep-56},
    {0x1.a0c667b5de565p+0, -0x1.359495d1cd533p-54},
    {0x1.a5503b23e255dp+0, -0x1.d2f6edb8d41e1p-54},
    {0x1.a9e6b5579fdbfp+0, 0x1.0fac90ef7fd31p-54},
    {0x1.ae89f995ad3adp+0, 0x1.7a1cd345dcc81p-54},
    {0x1.b33a2b84f15fbp+0, -0x1.2805e3084d708p-57},
    {0x1.b7f76f2fb5e47p+0, -0x1.5584f7e54ac3bp-56},
    {0x1.bcc1e904bc1d2p+0, 0x1.23dd07a2d9e84p-55},
    {0x1.c199bdd85529cp+0, 0x1.11065895048ddp-55},
    {0x1.c67f12e57d14bp+0, 0x1.2884dff483cadp-54},
    {0x1.cb720dcef9069p+0, 0x1.503cbd1e949dbp-56},
    {0x1.d072d4a07897cp+0, -0x1.cbc3743797a9cp-54},
    {0x1.d5818dcfba487p+0, 0x1.2ed02d75b3707p-55},
    {0x1.da9e603db3285p+0, 0x1.c2300696db532p-54},
    {0x1.dfc97337b9b5fp+0, -0x1.1a5cd4f184b5cp-54},
    {0x1.e502ee78b3ff6p+0, 0x1.39e8980a9cc8fp-55},
    {0x1.ea4afa2a490dap+0, -0x1.e9c23179c2893p-54},
    {0x1.efa1bee615a27p+0, 0x1.dc7f486a4b6b0p-54},
    {0x1.f50765b6e4540p+0, 0x1.9d3e12dd8a18bp-54},
    {0x1.fa7c1819e90d8p+0, 0x1.74853f3a5931ep-55},
};

PW_CLONES static void exp_f64(const double *restrict a, double *restrict r, int64_t n, bool neg) {
    const double MAGIC = 0x1.8p52, INV_LN2_64 = 0x1.71547652b82fep+6;
    const double LN2_64_HI = 0x1.62e42fefa0000p-7, LN2_64_LO = 0x1.cf79abc9e3b3ap-46;
    uint64_t out = 0; /* nonzero: some k outside [-1021 * 64, 1022 * 64 + 63] */
    for (int64_t i = 0; i < n; i++) {
        /* No clamp (it would stop the vectorizer): for any x, NaN and infinities too, j
         * indexes the table and the integer arithmetic wraps; such k are redone below. */
        const double x = neg ? -a[i] : a[i];
        const double t = x * INV_LN2_64 + MAGIC;
        const double kd = t - MAGIC;
        const double rr = (x - kd * LN2_64_HI) - kd * LN2_64_LO;
        /* kb = k + 1021 * 64 >= 0 in range: j and the biased exponent m + 1023 by shifts */
        const uint64_t kb = sf_cpu_bits(t) - sf_cpu_bits(MAGIC) + 1021 * 64;
        const uint64_t j = kb & 63, m = (kb >> 6) + 2;
        out |= kb > 2043 * 64 + 63;
        double p = 1.0 / 720.0;
        p = p * rr + 1.0 / 120.0;
        p = p * rr + 1.0 / 24.0;
        p = p * rr + 1.0 / 6.0;
        p = p * rr + 0.5;
        p = p * rr * rr + rr;
        const double th = EXP_TAB[j][0], tl = EXP_TAB[j][1];
        r[i] = (th + (tl + th * p)) * sf_cpu_from_bits(m << 52);
    }
    if (out) /* (rare: results below 2^-1021 or above 2^1022, infinities, NaN) */
        for (int64_t i = 0; i < n; i++) {
            const double x = neg ? -a[i] : a[i];
            const double t = x * INV_LN2_64 + MAGIC;
            const uint64_t kb = sf_cpu_bits(t) - sf_cpu_bits(MAGIC) + 1021 * 64;
            if (kb > 2043 * 64 + 63) r[i] = exp(x);
        }
}

/* where's select of n 8-byte values (int64s or doubles, as bits through memcpy):
 * r = c ? a : b, with the condition as a mask so the loop has no branch and vectorizes. */
PW_CLONES static void where_select(const void *restrict a, const void *restrict b, const int64_t *restrict c,
                                   void *restrict r, int64_t n) {
    const char *pa = a, *pb = b;
    char *pr = r;
    for (int64_t i = 0; i < n; i++) {
        uint64_t x, y;
        memcpy(&x, pa + 8 * i, 8);
        memcpy(&y, pb + 8 * i, 8);
        const uint64_t m = (uint64_t)0 - (uint64_t)(c[i] != 0), z = (x & m) | (y & ~m);
        memcpy(pr + 8 * i, &z, 8);
    }
}

/* Unary ops computed in double; r gets the (unrounded) results. */
PW_CLONES static void unary_f64(sf_op op, const double *a, double *r, int64_t n) {
    switch (op) {
    case SF_OP_neg: LOOP(r[i] = -a[i]); break;
    case SF_OP_abs: LOOP(r[i] = fabs(a[i])); break;
    case SF_OP_exp: exp_f64(a, r, n, false); break;
    case SF_OP_log: LOOP(r[i] = log(a[i])); break;
    case SF_OP_log1p: LOOP(r[i] = log1p(a[i])); break;
    case SF_OP_expm1: LOOP(r[i] = expm1(a[i])); break;
    case SF_OP_sqrt: LOOP(r[i] = sqrt(a[i])); break;
    case SF_OP_rsqrt: LOOP(r[i] = 1.0 / sqrt(a[i])); break;
    case SF_OP_reciprocal: LOOP(r[i] = 1.0 / a[i]); break;
    case SF_OP_sigmoid:
        exp_f64(a, r, n, true);
        LOOP(r[i] = 1.0 / (1.0 + r[i]));
        break;
    case SF_OP_tanh: LOOP(r[i] = tanh(a[i])); break;
    case SF_OP_silu:
        exp_f64(a, r, n, true);
        LOOP(r[i] = a[i] / (1.0 + r[i]));
        break;
    case SF_OP_relu: LOOP(r[i] = a[i] > 0.0 ? a[i] : (isnan(a[i]) ? a[i] : 0.0)); break; /* -0 gives +0 */
    case SF_OP_floor: LOOP(r[i] = floor(a[i])); break;
    case SF_OP_ceil: LOOP(r[i] = ceil(a[i])); break;
    default: SF_ASSERT(!"not a float unary op"); break;
    }
}

/* Unary ops with an int64 result from double operands (bool results). */
static void unary_f64_to_i64(sf_op op, const double *a, int64_t *r, int64_t n) {
    switch (op) {
    case SF_OP_logical_not: LOOP(r[i] = a[i] == 0.0); break;
    case SF_OP_isnan: LOOP(r[i] = isnan(a[i]) != 0); break;
    default: SF_ASSERT(!"not a float predicate"); break;
    }
}

static void unary_i64(sf_op op, const int64_t *a, int64_t *r, int64_t n) {
    switch (op) {
    case SF_OP_neg: LOOP(r[i] = sf_cpu_sub_i64(0, a[i])); break;
    case SF_OP_abs: LOOP(r[i] = a[i] < 0 ? sf_cpu_sub_i64(0, a[i]) : a[i]); break;
    case SF_OP_relu: LOOP(r[i] = a[i] < 0 ? 0 : a[i]); break;
    case SF_OP_floor: case SF_OP_ceil: LOOP(r[i] = a[i]); break;
    case SF_OP_logical_not: LOOP(r[i] = a[i] == 0); break;
    case SF_OP_isnan: LOOP(r[i] = 0); break;
    default: SF_ASSERT(!"not an integer unary op"); break;
    }
}

/* Binary ops on doubles.  Returns true when the result is in rf (a float), false
 * when it is in ri (a bool). */
PW_CLONES static bool binary_f64(sf_op op, const double *a, const double *b, double *rf, int64_t *ri,
                                 int64_t n) {
    switch (op) {
    case SF_OP_add: LOOP(rf[i] = a[i] + b[i]); return true;
    case SF_OP_sub: LOOP(rf[i] = a[i] - b[i]); return true;
    case SF_OP_mul: LOOP(rf[i] = a[i] * b[i]); return true;
    case SF_OP_div: LOOP(rf[i] = a[i] / b[i]); return true;
    case SF_OP_pow: LOOP(rf[i] = pow(a[i], b[i])); return true;
    case SF_OP_maximum: /* NaN propagates; equal values (-0, +0) keep the first */
        LOOP(rf[i] = isnan(a[i]) ? a[i] : (isnan(b[i]) ? b[i] : (a[i] < b[i] ? b[i] : a[i])));
        return true;
    case SF_OP_minimum:
        LOOP(rf[i] = isnan(a[i]) ? a[i] : (isnan(b[i]) ? b[i] : (b[i] < a[i] ? b[i] : a[i])));
        return true;
    case SF_OP_remainder:
        LOOP({
            double m = fmod(a[i], b[i]);
            if (m != 0.0 && (b[i] < 0) != (m < 0)) m += b[i];
            rf[i] = m;
        });
        return true;
    case SF_OP_floor_divide: LOOP(rf[i] = floor_divide_f64(a[i], b[i])); return true;
    case SF_OP_eq: LOOP(ri[i] = a[i] == b[i]); return false;
    case SF_OP_ne: LOOP(ri[i] = a[i] != b[i]); return false;
    case SF_OP_lt: LOOP(ri[i] = a[i] < b[i]); return false;
    case SF_OP_le: LOOP(ri[i] = a[i] <= b[i]); return false;
    case SF_OP_gt: LOOP(ri[i] = a[i] > b[i]); return false;
    case SF_OP_ge: LOOP(ri[i] = a[i] >= b[i]); return false;
    case SF_OP_logical_and: LOOP(ri[i] = (a[i] != 0.0) & (b[i] != 0.0)); return false;
    case SF_OP_logical_or: LOOP(ri[i] = (a[i] != 0.0) | (b[i] != 0.0)); return false;
    default: SF_ASSERT(!"not a binary op"); return true;
    }
}

/* Binary ops on int64s (wrapping).  Returns false on an integer division by zero. */
static bool binary_i64(sf_op op, const int64_t *a, const int64_t *b, int64_t *r, int64_t n) {
    switch (op) {
    case SF_OP_add: LOOP(r[i] = sf_cpu_add_i64(a[i], b[i])); break;
    case SF_OP_sub: LOOP(r[i] = sf_cpu_sub_i64(a[i], b[i])); break;
    case SF_OP_mul: LOOP(r[i] = sf_cpu_mul_i64(a[i], b[i])); break;
    case SF_OP_pow: LOOP(r[i] = pow_i64(a[i], b[i])); break;
    case SF_OP_maximum: LOOP(r[i] = a[i] > b[i] ? a[i] : b[i]); break;
    case SF_OP_minimum: LOOP(r[i] = a[i] < b[i] ? a[i] : b[i]); break;
    case SF_OP_remainder:
        for (int64_t i = 0; i < n; i++) {
            if (b[i] == 0) return false;
            int64_t m = b[i] == -1 ? 0 : a[i] % b[i]; /* INT64_MIN % -1 is UB in C */
            if (m != 0 && (m < 0) != (b[i] < 0)) m += b[i];
            r[i] = m;
        }
        break;
    case SF_OP_floor_divide:
        for (int64_t i = 0; i < n; i++) {
            if (b[i] == 0) return false;
            if (b[i] == -1) {
                r[i] = sf_cpu_sub_i64(0, a[i]); /* INT64_MIN // -1 wraps */
                continue;
            }
            int64_t q = a[i] / b[i];
            if (a[i] % b[i] != 0 && ((a[i] < 0) != (b[i] < 0))) q -= 1;
            r[i] = q;
        }
        break;
    case SF_OP_eq: LOOP(r[i] = a[i] == b[i]); break;
    case SF_OP_ne: LOOP(r[i] = a[i] != b[i]); break;
    case SF_OP_lt: LOOP(r[i] = a[i] < b[i]); break;
    case SF_OP_le: LOOP(r[i] = a[i] <= b[i]); break;
    case SF_OP_gt: LOOP(r[i] = a[i] > b[i]); break;
    case SF_OP_ge: LOOP(r[i] = a[i] >= b[i]); break;
    case SF_OP_logical_and: LOOP(r[i] = (a[i] != 0) & (b[i] != 0)); break;
    case SF_OP_logical_or: LOOP(r[i] = (a[i] != 0) | (b[i] != 0)); break;
    default: SF_ASSERT(!"not an integer binary op"); break;
    }
    return true;
}

/* Predicates whose result is bool whatever the operand dtype. */
static bool op_is_predicate(sf_op op) {
    return op == SF_OP_logical_not || op == SF_OP_isnan || op == SF_OP_eq || op == SF_OP_ne ||
           op == SF_OP_lt || op == SF_OP_le || op == SF_OP_gt || op == SF_OP_ge ||
           op == SF_OP_logical_and || op == SF_OP_logical_or;
}

scanfuse_status sf_cpu_pointwise(const sf_node *node, scanfuse_dtype cdt, const sf_view *in,
                                 const sf_num *const *lit, const sf_view *out, char *msg,
                                 size_t msglen) {
    sf_op op = node->op;
    int nin = node->nin;
    SF_ASSERT(nin >= 1 && nin <= SF_MAX_IN);
    bool fdom = sf_dtype_is_float(cdt);
    bool is_where = op == SF_OP_where;

    int64_t st[SF_CPU_MAX_OPS][SF_MAX_DIMS];
    const int64_t *sp[SF_CPU_MAX_OPS];
    for (int d = 0; d < out->ndim; d++) st[0][d] = out->strides[d];
    sp[0] = st[0];
    for (int k = 0; k < nin; k++) {
        if (lit[k]) memset(st[k + 1], 0, sizeof st[k + 1]);
        else sf_cpu_broadcast_strides(&in[k], out->ndim, out->shape, st[k + 1]);
        sp[k + 1] = st[k + 1];
    }
    sf_cpu_iter it;
    sf_cpu_iter_init(&it, out->ndim, out->shape, nin + 1, sp);

    /* Scratch: operand blocks in the compute domain, the where-condition as int64. */
    static const int64_t B = SF_CPU_BLOCK;
    double fa[SF_MAX_IN][SF_CPU_BLOCK], fr[SF_CPU_BLOCK];
    int64_t ia[SF_MAX_IN][SF_CPU_BLOCK], ir[SF_CPU_BLOCK];
    for (int k = 0; k < nin; k++) {
        if (!lit[k]) continue;
        if (is_where && k == 0) sf_cpu_fill_literal_i64(lit[k], SCANFUSE_BOOL, ia[0], B);
        else if (fdom) sf_cpu_fill_literal_f64(lit[k], cdt, fa[k], B);
        else sf_cpu_fill_literal_i64(lit[k], cdt, ia[k], B);
    }

    /* 64-bit operands already in the compute domain (float64 with cdt float64, int64 with
     * cdt int64) and running along unit strides are read where they lie, and a result of
     * the output's own 64-bit type is computed straight into it, instead of copying
     * blocks in and out (the copies were a third of an int64 step's time, NOTES session
     * 40); the same values either way.  Not a result that overlaps an operand read in
     * place: the kernels may take their arguments as restrict. */
    const scanfuse_dtype dtype64 = fdom ? SCANFUSE_FLOAT64 : SCANFUSE_INT64;
    bool in_place[SF_MAX_IN] = {false, false, false};
    for (int k = 0; k < nin; k++)
        in_place[k] = !lit[k] && !(is_where && k == 0) && cdt == dtype64 && in[k].dtype == dtype64 &&
                      (uintptr_t)in[k].data % 8 == 0;
    const bool out_f64 = out->dtype == SCANFUSE_FLOAT64 && (uintptr_t)out->data % 8 == 0;
    const bool out_i64 = out->dtype == SCANFUSE_INT64 && (uintptr_t)out->data % 8 == 0;

    int64_t offs[SF_CPU_MAX_OPS], n;
    while ((n = sf_cpu_iter_next(&it, B, offs)) > 0) {
        const double *fx[SF_MAX_IN] = {fa[0], fa[1], fa[2]};
        const int64_t *ix[SF_MAX_IN] = {ia[0], ia[1], ia[2]};
        const char *lo[SF_MAX_IN] = {NULL, NULL, NULL};
        for (int k = 0; k < nin; k++) {
            if (lit[k]) continue;
            int64_t s = sf_cpu_iter_stride(&it, k + 1);
            if (in_place[k] && s == 1) {
                lo[k] = (const char *)in[k].data + offs[k + 1] * 8;
                if (fdom) fx[k] = (const double *)(const void *)lo[k];
                else ix[k] = (const int64_t *)(const void *)lo[k];
            } else if (is_where && k == 0) {
                sf_cpu_gather_i64(in[0].data, in[0].dtype, offs[1], s, n, SCANFUSE_BOOL, ia[0]);
            } else if (fdom) {
                sf_cpu_gather_f64(in[k].data, in[k].dtype, offs[k + 1], s, n, cdt, fa[k]);
            } else {
                sf_cpu_gather_i64(in[k].data, in[k].dtype, offs[k + 1], s, n, cdt, ia[k]);
            }
        }
        const int64_t so = sf_cpu_iter_stride(&it, 0);
        bool to_dst = (out_f64 || out_i64) && so == 1;
        char *dst = to_dst ? (char *)out->data + offs[0] * 8 : NULL;
        for (int k = 0; k < nin && to_dst; k++) /* [dst, dst + 8n) against each operand read in place */
            if (lo[k] && dst < lo[k] + n * 8 && lo[k] < dst + n * 8) to_dst = false;
        double *rf = to_dst && out_f64 ? (double *)(void *)dst : fr;
        int64_t *ri = to_dst && out_i64 ? (int64_t *)(void *)dst : ir;
        bool res_f;
        if (is_where) {
            res_f = fdom;
            /* selects by a mask, not a branch: a random condition mispredicted every
             * other element (5.3 ns an element, NOTES session 39 entry 7) */
            if (fdom) where_select(fx[1], fx[2], ia[0], rf, n);
            else where_select(ix[1], ix[2], ia[0], ri, n);
        } else if (nin == 1) {
            if (!fdom) {
                unary_i64(op, ix[0], ri, n);
                res_f = false;
            } else if (op_is_predicate(op)) {
                unary_f64_to_i64(op, fx[0], ri, n);
                res_f = false;
            } else {
                unary_f64(op, fx[0], rf, n);
                res_f = true;
            }
        } else if (fdom) {
            res_f = binary_f64(op, fx[0], fx[1], rf, ri, n);
        } else {
            res_f = false;
            if (!binary_i64(op, ix[0], ix[1], ri, n)) {
                sf_msg(msg, msglen, "%s: integer division by zero", sf_op_table[op].name);
                return SCANFUSE_ERROR_VALUE;
            }
        }
        if (res_f ? rf == fr : ri == ir) {
            if (res_f) sf_cpu_store_f64(out->data, out->dtype, offs[0], so, n, fr);
            else sf_cpu_store_i64(out->data, out->dtype, offs[0], so, n, ir);
        }
    }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Creation and copying shape ops                                                   */
/* ------------------------------------------------------------------------------ */

void sf_cpu_create(const sf_node *node, const sf_view *out) {
    const sf_attrs *a = &node->a;
    if (node->op == SF_OP_scalar) {
        sf_cpu_store_literal(out->data, out->dtype, &a->value);
        return;
    }
    SF_ASSERT(node->op == SF_OP_arange || node->op == SF_OP_iota);
    SF_ASSERT(out->ndim == 1);
    int64_t len = out->shape[0];
    /* Integer dtypes with integer bounds are exact in int64; everything else is
     * start + i*step in double, rounded once by the store. */
    bool exact_int = !sf_dtype_is_float(out->dtype) && a->start.kind != SF_NUM_FLOAT &&
                     a->step.kind != SF_NUM_FLOAT;
    double fb[SF_CPU_BLOCK];
    int64_t ib[SF_CPU_BLOCK];
    for (int64_t s = 0; s < len; s += SF_CPU_BLOCK) {
        int64_t n = len - s < SF_CPU_BLOCK ? len - s : SF_CPU_BLOCK;
        if (exact_int) {
            LOOP(ib[i] = sf_cpu_add_i64(a->start.i, sf_cpu_mul_i64(s + i, a->step.i)));
            sf_cpu_store_i64(out->data, out->dtype, s, 1, n, ib);
        } else {
            double start = a->start.kind == SF_NUM_FLOAT ? a->start.f : (double)a->start.i;
            double step = a->step.kind == SF_NUM_FLOAT ? a->step.f : (double)a->step.i;
            LOOP(fb[i] = start + (double)(s + i) * step);
            sf_cpu_store_f64(out->data, out->dtype, s, 1, n, fb);
        }
    }
}

void sf_cpu_pad(const sf_node *node, const sf_view *in, const sf_view *out) {
    /* Fill everything with the value (a one-element source broadcast with stride 0),
     * then copy the part of the input that survives the padding/cropping. */
    uint64_t cell = 0;
    sf_cpu_store_literal(&cell, out->dtype, &node->a.value);
    sf_view fill = *out;
    fill.data = &cell;
    for (int d = 0; d < fill.ndim; d++) fill.strides[d] = 0;
    sf_cpu_copy(out, &fill);

    sf_view src = *in, dst = *out;
    int npairs = node->a.nlist / 2;
    for (int d = 0; d < out->ndim; d++) {
        int pair = out->ndim - 1 - d; /* pairs run from the last dim backwards */
        int64_t lo = pair < npairs ? node->a.list[2 * pair] : 0;
        int64_t src0 = lo < 0 ? -lo : 0, dst0 = lo > 0 ? lo : 0;
        int64_t len_src = in->shape[d] - src0, len_dst = out->shape[d] - dst0;
        int64_t len = len_src < len_dst ? len_src : len_dst;
        if (len <= 0) return; /* nothing of the input survives */
        src.data = (char *)src.data + src0 * in->strides[d] * (int64_t)scanfuse_dtype_size(in->dtype);
        dst.data = (char *)dst.data + dst0 * out->strides[d] * (int64_t)scanfuse_dtype_size(out->dtype);
        src.shape[d] = dst.shape[d] = len;
    }
    sf_cpu_copy(&dst, &src);
}

void sf_cpu_tri(const sf_node *node, const sf_view *in, const sf_view *out) {
    sf_cpu_copy(out, in);
    SF_ASSERT(out->ndim >= 2 && sf_cpu_view_is_contiguous(out));
    int64_t rows = out->shape[out->ndim - 2], cols = out->shape[out->ndim - 1];
    int64_t count = sf_numel(out->ndim, out->shape);
    if (count == 0) return;
    int64_t mats = count / (rows * cols);
    size_t es = scanfuse_dtype_size(out->dtype);
    /* Clamp the diagonal so i + diag cannot overflow; beyond +-(size+1) nothing changes. */
    int64_t diag = node->a.diagonal;
    if (diag > cols + 1) diag = cols + 1;
    if (diag < -rows - 1) diag = -rows - 1;
    bool upper = node->op == SF_OP_triu;
    char *p = (char *)out->data;
    for (int64_t m = 0; m < mats; m++) {
        for (int64_t i = 0; i < rows; i++) {
            char *row = p + ((m * rows + i) * cols) * (int64_t)es;
            int64_t z0, z1; /* zero the columns [z0, z1): zero bits are 0 in every dtype */
            if (upper) { /* keep j - i >= diag */
                z0 = 0;
                z1 = i + diag;
            } else { /* keep j - i <= diag */
                z0 = i + diag + 1;
                z1 = cols;
            }
            if (z0 < 0) z0 = 0;
            if (z1 > cols) z1 = cols;
            if (z1 > z0) memset(row + z0 * (int64_t)es, 0, (size_t)(z1 - z0) * es);
        }
    }
}
