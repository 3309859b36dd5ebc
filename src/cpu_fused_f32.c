/*
 * cpu_fused_f32.c — the float32 element kernels of the fused CPU path (cpu_fused.c):
 * loads and stores of float32/bfloat16/float64 runs as floats, the fast pointwise ops
 * on blocks of floats, and the float32 sum, each giving the bytes of the generic
 * double-based kernels (see "float32 fast paths" in cpu_fused.c for why), and the
 * reduced dims of a reduction node as sf_cpu_reduce reads them.
 */
#include "cpu.h"

#include <math.h>
#include <string.h>

/* The reduced dims of a reduction node over an input of nd dims (as sf_cpu_reduce
 * reads them). */
void sf_cpu_reduced_dims(const sf_node *n, int nd, bool *red) {
    for (int d = 0; d < SF_MAX_DIMS; d++) red[d] = false;
    bool is_arg = n->op == SF_OP_argmax || n->op == SF_OP_argmin;
    if (is_arg ? n->a.has_dim : n->a.has_list) {
        if (is_arg) {
            if (n->a.dim >= 0 && n->a.dim < nd) red[n->a.dim] = true;
        } else {
            for (int i = 0; i < n->a.nlist; i++)
                if (n->a.list[i] >= 0 && n->a.list[i] < nd) red[n->a.list[i]] = true;
        }
    } else {
        for (int d = 0; d < nd; d++) red[d] = true;
    }
}


/* The block loops below are compiled for AVX-512, AVX2 and the baseline, picked at run
 * time (GCC's target_clones).  They hold float32 and float64 IEEE arithmetic only, with
 * no contraction into fused multiply-adds (ISO C mode), so every clone gives the same
 * bytes.  Not with clang: clang 14 emits no definition for a cloned function with
 * external linkage (the link fails), so clang builds take the baseline loops. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define FUSED_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef FUSED_CLONES
#define FUSED_CLONES
#endif

/* n values of dtype dt (float32, bfloat16, or float64 rounded as a float32 store
 * rounds) at element offsets off, off + stride, ... as floats. */
FUSED_CLONES
void sf_cpu_f32_load(const void *base, scanfuse_dtype dt, int64_t off, int64_t stride, int64_t n,
                     float *restrict out) {
    const char *p = base;
    if (stride == 0) { /* a broadcast operand: one value */
        float v;
        sf_cpu_f32_load(base, dt, off, 1, 1, &v);
        for (int64_t i = 0; i < n; i++) out[i] = v;
        return;
    }
    if (dt == SCANFUSE_FLOAT32) {
        if (stride == 1) {
            const char *q = p + off * 4;
            for (int64_t i = 0; i < n; i++) {
                float v;
                memcpy(&v, q + i * 4, 4);
                out[i] = v;
            }
        } else {
            for (int64_t i = 0; i < n; i++) memcpy(&out[i], p + (off + i * stride) * 4, 4);
        }
    } else if (dt == SCANFUSE_BFLOAT16) {
        if (stride == 1) {
            const char *q = p + off * 2;
            for (int64_t i = 0; i < n; i++) {
                uint16_t h;
                memcpy(&h, q + i * 2, 2);
                out[i] = sf_cpu_f32_from_bits((uint32_t)h << 16);
            }
        } else {
            for (int64_t i = 0; i < n; i++) {
                uint16_t h;
                memcpy(&h, p + (off + i * stride) * 2, 2);
                out[i] = sf_cpu_f32_from_bits((uint32_t)h << 16);
            }
        }
    } else {
        SF_ASSERT(dt == SCANFUSE_FLOAT64);
        for (int64_t i = 0; i < n; i++) {
            double d;
            memcpy(&d, p + (off + i * stride) * 8, 8);
            out[i] = (float)d;
        }
    }
}

/* Stores n floats as float32 or bfloat16 (round to nearest even: add half an ulp of
 * the kept bits minus one, plus the lowest kept bit, then truncate; NaN excluded). */
FUSED_CLONES
void sf_cpu_f32_store(void *base, scanfuse_dtype dt, int64_t off, int64_t stride, int64_t n,
                      const float *restrict x) {
    char *p = base;
    if (dt == SCANFUSE_FLOAT32) {
        if (stride == 1) {
            char *q = p + off * 4;
            for (int64_t i = 0; i < n; i++) memcpy(q + i * 4, &x[i], 4);
        } else {
            for (int64_t i = 0; i < n; i++) memcpy(p + (off + i * stride) * 4, &x[i], 4);
        }
        return;
    }
    SF_ASSERT(dt == SCANFUSE_BFLOAT16);
    if (stride == 1) {
        char *q = p + off * 2;
        for (int64_t i = 0; i < n; i++) {
            uint32_t u = sf_cpu_f32_bits(x[i]);
            uint16_t h = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
            memcpy(q + i * 2, &h, 2);
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            uint32_t u = sf_cpu_f32_bits(x[i]);
            uint16_t h = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
            memcpy(p + (off + i * stride) * 2, &h, 2);
        }
    }
}

/* sf_cpu_f32_store that also tells whether a value was NaN (then what it stored for it is
 * garbage, to be rewritten by the caller's fallback). */
FUSED_CLONES
bool sf_cpu_f32_store_nan(void *base, scanfuse_dtype dt, int64_t off, int64_t stride, int64_t n,
                          const float *restrict x) {
    char *p = base;
    int nan = 0;
    if (dt == SCANFUSE_FLOAT32 && stride == 1) {
        char *q = p + off * 4;
        for (int64_t i = 0; i < n; i++) {
            nan |= x[i] != x[i];
            memcpy(q + i * 4, &x[i], 4);
        }
        return nan != 0;
    }
    if (dt == SCANFUSE_BFLOAT16 && stride == 1) {
        char *q = p + off * 2;
        for (int64_t i = 0; i < n; i++) {
            uint32_t u = sf_cpu_f32_bits(x[i]);
            nan |= x[i] != x[i];
            uint16_t h = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
            memcpy(q + i * 2, &h, 2);
        }
        return nan != 0;
    }
    for (int64_t i = 0; i < n; i++) nan |= x[i] != x[i];
    if (!nan) sf_cpu_f32_store(base, dt, off, stride, n, x);
    return nan != 0;
}

FUSED_CLONES
bool sf_cpu_f32_has_nan(const float *x, int64_t n) {
    int nan = 0;
    for (int64_t i = 0; i < n; i++) nan |= x[i] != x[i];
    return nan != 0;
}

/* r = op(x, y) on m floats; a cast copies (the store rounds).  A binary op whose y (or
 * x) is one value repeated (ybc / xbc) reads it once. */
FUSED_CLONES
void sf_cpu_f32_compute(int op, const float *restrict x, const float *restrict y,
                         float *restrict r, int64_t m, bool xbc, bool ybc) {
    if ((xbc || ybc) && op >= SF_FAST_ADD && op <= SF_FAST_DIV) {
        if (ybc && !xbc) {
            const float b = y[0];
            switch (op) {
            case SF_FAST_ADD: for (int64_t i = 0; i < m; i++) r[i] = x[i] + b; return;
            case SF_FAST_SUB: for (int64_t i = 0; i < m; i++) r[i] = x[i] - b; return;
            case SF_FAST_MUL: for (int64_t i = 0; i < m; i++) r[i] = x[i] * b; return;
            case SF_FAST_DIV: for (int64_t i = 0; i < m; i++) r[i] = x[i] / b; return;
            default: break;
            }
        } else if (xbc && !ybc) {
            const float a = x[0];
            switch (op) {
            case SF_FAST_ADD: for (int64_t i = 0; i < m; i++) r[i] = a + y[i]; return;
            case SF_FAST_SUB: for (int64_t i = 0; i < m; i++) r[i] = a - y[i]; return;
            case SF_FAST_MUL: for (int64_t i = 0; i < m; i++) r[i] = a * y[i]; return;
            case SF_FAST_DIV: for (int64_t i = 0; i < m; i++) r[i] = a / y[i]; return;
            default: break;
            }
        }
    }
    switch (op) {
    case SF_FAST_ADD: for (int64_t i = 0; i < m; i++) r[i] = x[i] + y[i]; break;
    case SF_FAST_SUB: for (int64_t i = 0; i < m; i++) r[i] = x[i] - y[i]; break;
    case SF_FAST_MUL: for (int64_t i = 0; i < m; i++) r[i] = x[i] * y[i]; break;
    case SF_FAST_DIV: for (int64_t i = 0; i < m; i++) r[i] = x[i] / y[i]; break;
    case SF_FAST_MAX: /* a NaN operand gives NaN here, then the generic kernel */
        for (int64_t i = 0; i < m; i++)
            r[i] = x[i] != x[i] ? x[i] : (y[i] != y[i] ? y[i] : (x[i] < y[i] ? y[i] : x[i]));
        break;
    case SF_FAST_MIN:
        for (int64_t i = 0; i < m; i++)
            r[i] = x[i] != x[i] ? x[i] : (y[i] != y[i] ? y[i] : (y[i] < x[i] ? y[i] : x[i]));
        break;
    case SF_FAST_NEG: for (int64_t i = 0; i < m; i++) r[i] = -x[i]; break;
    case SF_FAST_ABS: for (int64_t i = 0; i < m; i++) r[i] = fabsf(x[i]); break;
    case SF_FAST_RELU: /* -0 gives +0, NaN stays NaN */
        for (int64_t i = 0; i < m; i++) r[i] = x[i] > 0.0f ? x[i] : (x[i] != x[i] ? x[i] : 0.0f);
        break;
    case SF_FAST_CAST: for (int64_t i = 0; i < m; i++) r[i] = x[i]; break;
    case SF_FAST_SUM: /* one element: the compensated sum gives 0 + x (-0 becomes +0) */
        for (int64_t i = 0; i < m; i++) r[i] = 0.0f + x[i];
        break;
    default: SF_ASSERT(!"not a fast elementwise step"); break;
    }
}

/* m compensated additions (hi[j], lo[j]) += x[j]: the arithmetic of sf_cpu_sum2_add,
 * without its branch so that it vectorizes: t - t is 0 exactly when t is finite. */
FUSED_CLONES
static void sum2_add_block(double *restrict hi, double *restrict lo, const float *restrict x,
                           int64_t m) {
    for (int64_t j = 0; j < m; j++) {
        double a = hi[j], v = (double)x[j], t = a + v;
        double bp = t - a;
        double e = (a - (t - bp)) + (v - bp);
        lo[j] += t - t == 0.0 ? e : 0.0;
        hi[j] = t;
    }
}

/* The row mode of sf_cpu_f32_sum when each output's reduced elements are one run of K
 * at stride rs (offset roff from the output's): blocks of outputs from kit, each summed
 * as the general loop sums it, or by the exact test's plain sum (sf_cpu_sum_exact_f32:
 * the same bytes) while it keeps passing, or, past SF_SUM_CHUNK, in chunks on up to
 * `threads` threads (sf_cpu_sum2_long); one store a block.  False (nothing done) when a
 * run would not fit the load buffer. */
static bool f32_rows_sum(const sf_view *in, const sf_view *out, sf_cpu_iter *kit, int64_t K, int64_t rs,
                         int64_t roff, bool lanes, int threads) {
    const bool in_place = in->dtype == SCANFUSE_FLOAT32 && rs == 1 && (uintptr_t)in->data % sizeof(float) == 0;
    const bool chunked = lanes && K > SF_SUM_CHUNK; /* sf_cpu_sum2_long: on the pool */
    if (!in_place && !chunked && K > SF_CPU_BLOCK) return false;
    float x[SF_CPU_BLOCK], y[SF_CPU_BLOCK];
    double hi[SF_SUM_LANES], lo[SF_SUM_LANES];
    /* long runs almost never pass (the range allowed shrinks with log2 K: 17 binades at
     * 4096 float32 values, 5 at 2^24) and a failed test costs a pass over the run */
    int exact_p = K <= SF_SUM_EXACT_MAX ? sf_cpu_sum_exact_bits(in->dtype) : 0;
    int64_t koffs[2], m, misses = 0, hits = 0;
    while ((m = sf_cpu_iter_next(kit, SF_CPU_BLOCK, koffs)) > 0) {
        const int64_t s_in = sf_cpu_iter_stride(kit, 0), s_out = sf_cpu_iter_stride(kit, 1);
        for (int64_t j = 0; j < m; j++) {
            const int64_t off = koffs[0] + j * s_in + roff;
            double h = 0.0, l = 0.0;
            if (chunked) {
                sf_cpu_sum2_long(in->data, in->dtype, off, rs, K, SCANFUSE_FLOAT32, threads, &h, &l);
                y[j] = (float)sf_cpu_sum2_result(h, l, SCANFUSE_FLOAT32);
                continue;
            }
            const float *xs = x;
            if (in_place) xs = (const float *)in->data + off;
            else sf_cpu_f32_load(in->data, in->dtype, off, rs, K, x);
            const bool exact = exact_p && sf_cpu_sum_exact_f32(xs, K, exact_p, &h);
            if (exact) hits++;
            else if (exact_p && ++misses > hits + 64) exact_p = 0;
            if (!exact && lanes) {
                for (int q = 0; q < SF_SUM_LANES; q++) hi[q] = lo[q] = 0.0;
                sf_cpu_sum2_lanes_f32(hi, lo, xs, K, 0);
                sf_cpu_sum2_lanes_fold(hi, lo, &h, &l);
            } else if (!exact) {
                h = 0.0;
                for (int64_t t = 0; t < K; t++) sf_cpu_sum2_add(&h, &l, (double)xs[t]);
            }
            y[j] = (float)sf_cpu_sum2_result(h, l, SCANFUSE_FLOAT32);
        }
        sf_cpu_f32_store(out->data, out->dtype, koffs[1], s_out, m, y);
    }
    return true;
}

/* sum into float32 of float32/bfloat16 values: the generic reduction's arithmetic
 * (compensated sums in double, each output's elements in row-major order of the reduced
 * dims, rounded once), reading floats straight from the tile.  One element per output
 * is 0 + x rounded (what the compensated sum of one element gives). */
void sf_cpu_f32_sum(const sf_node *n, const sf_view *in, const sf_view *out, int threads) {
    int nd = in->ndim;
    bool red[SF_MAX_DIMS];
    sf_cpu_reduced_dims(n, nd, red);
    sf_red_split sp;
    sf_cpu_red_split(in, red, &sp);
    if (sf_numel(sp.nk, sp.kshape) == 0) return;
    const int64_t *ksp[2] = {sp.kin, sp.kout};
    const int64_t *rsp[1] = {sp.rin};
    sf_cpu_iter kit, rit;
    int64_t koffs[2], roffs[1] = {0}, m, K; /* roffs: 0 when the reduced dims are empty (K = 0) */
    float x[SF_CPU_BLOCK], y[SF_CPU_BLOCK];
    double hi[SF_CPU_BLOCK], lo[SF_CPU_BLOCK];
    sf_cpu_iter_init(&kit, sp.nk, sp.kshape, 2, ksp);
    if (sp.rcount == 1 || sp.kmin < sp.rmin) {
        /* neighbouring outputs advance together, one reduced position at a time */
        while ((m = sf_cpu_iter_next(&kit, SF_CPU_BLOCK, koffs)) > 0) {
            int64_t s_in = sf_cpu_iter_stride(&kit, 0), s_out = sf_cpu_iter_stride(&kit, 1);
            if (sp.rcount == 1) {
                sf_cpu_f32_load(in->data, in->dtype, koffs[0], s_in, m, x);
                for (int64_t j = 0; j < m; j++) y[j] = (float)(0.0 + (double)x[j]);
                sf_cpu_f32_store(out->data, out->dtype, koffs[1], s_out, m, y);
                continue;
            }
            for (int64_t j = 0; j < m; j++) hi[j] = lo[j] = 0.0;
            sf_cpu_iter_init(&rit, sp.nr, sp.rshape, 1, rsp);
            while ((K = sf_cpu_iter_next(&rit, INT64_MAX, roffs)) > 0) {
                int64_t rs = sf_cpu_iter_stride(&rit, 0);
                for (int64_t t = 0; t < K; t++) {
                    sf_cpu_f32_load(in->data, in->dtype, koffs[0] + roffs[0] + t * rs, s_in, m, x);
                    sum2_add_block(hi, lo, x, m);
                }
            }
            for (int64_t j = 0; j < m; j++)
                y[j] = (float)sf_cpu_sum2_result(hi[j], lo[j], SCANFUSE_FLOAT32);
            if (s_out == 1) {
                memcpy((char *)out->data + koffs[1] * 4, y, (size_t)m * 4);
            } else {
                for (int64_t j = 0; j < m; j++)
                    memcpy((char *)out->data + (koffs[1] + j * s_out) * 4, &y[j], 4);
            }
        }
        return;
    }
    /* one output at a time, runs of its reduced elements (long runs in lanes, as
     * sf_cpu_reduce sums them) */
    const bool lanes = sp.rcount > SF_SUM_LANES_MIN;
    sf_cpu_iter_init(&rit, sp.nr, sp.rshape, 1, rsp);
    K = sf_cpu_iter_next(&rit, INT64_MAX, roffs);
    if (K == sp.rcount && f32_rows_sum(in, out, &kit, K, sf_cpu_iter_stride(&rit, 0), roffs[0], lanes, threads))
        return;
    while (sf_cpu_iter_next(&kit, 1, koffs) > 0) {
        double h = 0.0, l = 0.0;
        sf_sum2_acc acc;
        sf_sum2_acc_init(&acc);
        sf_cpu_iter_init(&rit, sp.nr, sp.rshape, 1, rsp);
        while ((K = sf_cpu_iter_next(&rit, SF_CPU_BLOCK, roffs)) > 0) {
            const int64_t rs = sf_cpu_iter_stride(&rit, 0);
            /* a contiguous, aligned float32 run is read in place */
            const float *xs = x;
            const char *run = in->dtype == SCANFUSE_FLOAT32 && rs == 1
                                  ? (const char *)in->data + (koffs[0] + roffs[0]) * 4 : NULL;
            if (run && (uintptr_t)run % sizeof(float) == 0)
                xs = (const float *)(const void *)run;
            else
                sf_cpu_f32_load(in->data, in->dtype, koffs[0] + roffs[0], rs, K, x);
            if (lanes) {
                sf_sum2_acc_add_f32(&acc, xs, K);
            } else {
                for (int64_t t = 0; t < K; t++) sf_cpu_sum2_add(&h, &l, (double)xs[t]);
            }
        }
        if (lanes) sf_sum2_acc_result(&acc, &h, &l);
        float r32 = (float)sf_cpu_sum2_result(h, l, SCANFUSE_FLOAT32);
        memcpy((char *)out->data + koffs[1] * 4, &r32, 4);
    }
}

