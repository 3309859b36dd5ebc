/*
 * cpu_scan_chain.c — the scan kernels whose per-row work is one dependency chain, in
 * plain C: cummax/cummin with 64-bit keys along rows, cummax/cummin of every dtype
 * along columns, and cumprod along rows and columns.  What they compute is defined in
 * cpu_scan_kern.h ("Chain scans"); cpu_scan.c drives them with the same partitions,
 * gathers and threads as the SIMD kernels of cpu_scan_body.h.
 *
 * Why plain C and not the vector layer: a running max or product along a row is a
 * chain of one compare-and-select (or one multiply) per element, which a scalar loop
 * already runs at about two cycles an element (a cmov chain) or at the multiplier's
 * latency; what made the generic path slow was everything around the chain (per-tile
 * conversion to double, gathers, the op switch).  Across columns every column is its
 * own chain, so the column loops are lane-wise and the compiler vectorizes them; they
 * are compiled three times (AVX-512, AVX2, baseline: target clones, picked at load
 * time) and, being integer compares, selects and IEEE multiplies in a fixed order,
 * give the same bits on each.
 *
 * Invariants: a kernel reads only logical [a, b) of its sequence (columns: its
 * columns, every step) and writes only those outputs; the carries it returns are the
 * ones an element-by-element scan of the same range would end with.
 */
#include "cpu_scan_kern.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define CHAIN_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
#endif
#ifndef CHAIN_CLONES
#define CHAIN_CLONES
#endif
#define CH_AI static inline __attribute__((always_inline))

/* ------------------------------------------------------------------------------ */
/* Element access with the dtype a compile-time constant in the specializations      */
/* ------------------------------------------------------------------------------ */

CH_AI uint64_t ld_bits(const void *base, int64_t e, int64_t es) {
    const char *p = (const char *)base + e * es;
    switch (es) {
    case 1: { uint8_t v; memcpy(&v, p, 1); return v; }
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

CH_AI void st_bits(void *base, int64_t e, int64_t es, uint64_t v) {
    char *p = (char *)base + e * es;
    switch (es) {
    case 1: { uint8_t w = (uint8_t)v; memcpy(p, &w, 1); return; }
    case 2: { uint16_t w = (uint16_t)v; memcpy(p, &w, 2); return; }
    case 4: { uint32_t w = (uint32_t)v; memcpy(p, &w, 4); return; }
    default: memcpy(p, &v, 8); return;
    }
}

/* The int64 key of raw bits b of dtype dt for the column kernels (any order-keeping
 * map will do there: keys are only compared with keys of the same kernel): floats by
 * sign-magnitude, NaN greatest, +-0 equal; integers by value; cummin by ~key, NaN
 * still greatest. */
CH_AI int64_t col_key(uint64_t b, scanfuse_dtype dt, bool is_min) {
    int64_t mn = is_min ? -1 : 0, v;
    switch (dt) {
    case SCANFUSE_FLOAT64: return sf_key64(b, dt, is_min);
    case SCANFUSE_FLOAT32: case SCANFUSE_FLOAT16: case SCANFUSE_BFLOAT16: {
        int sh = dt == SCANFUSE_FLOAT32 ? 31 : 15;
        uint64_t mag = dt == SCANFUSE_FLOAT32 ? 0x7FFFFFFFu : 0x7FFFu;
        uint64_t inf = dt == SCANFUSE_FLOAT32 ? 0x7F800000u : dt == SCANFUSE_FLOAT16 ? 0x7C00u : 0x7F80u;
        uint64_t m = b & mag;
        int64_t s = -(int64_t)((b >> sh) & 1u);
        int64_t k = (((int64_t)m ^ s) - s) ^ mn;
        return m > inf ? INT64_MAX : k;
    }
    case SCANFUSE_BOOL: v = b != 0; break;
    case SCANFUSE_UINT8: v = (int64_t)(uint8_t)b; break;
    case SCANFUSE_INT8: v = (int8_t)(uint8_t)b; break;
    case SCANFUSE_INT16: v = (int16_t)(uint16_t)b; break;
    case SCANFUSE_INT32: v = (int32_t)(uint32_t)b; break;
    default: v = (int64_t)b; break;
    }
    return v ^ mn;
}

/* The bits a winner's value is stored with: a NaN as the generic path stores it
 * (through double: float32 quieted, float16/bfloat16 the canonical NaN of cpu.h's
 * encoders), bool as 0/1, everything else unchanged. */
CH_AI uint64_t col_val(uint64_t b, scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_FLOAT32: return (b & 0x7FFFFFFFu) > 0x7F800000u ? b | 0x400000u : b;
    case SCANFUSE_FLOAT16: return (b & 0x7FFFu) > 0x7C00u ? (b & 0x8000u) | 0x7E00u : b;
    case SCANFUSE_BFLOAT16: return (b & 0x7FFFu) > 0x7F80u ? (b & 0x8000u) | 0x7FC0u : b;
    case SCANFUSE_BOOL: return b != 0;
    default: return b;
    }
}

static uint64_t ident_bits(scanfuse_dtype dt, bool is_min) {
    switch (dt) {
    case SCANFUSE_FLOAT64: return sf_ident64_bits(dt, is_min);
    case SCANFUSE_FLOAT32: return is_min ? 0x7F800000u : 0xFF800000u;
    case SCANFUSE_FLOAT16: return is_min ? 0x7C00u : 0xFC00u;
    case SCANFUSE_BFLOAT16: return is_min ? 0x7F80u : 0xFF80u;
    default: { /* the dtype's lowest / highest, truncated to its width */
        int64_t v = is_min ? sf_int_max(dt) : sf_int_min(dt);
        int64_t es = sf_scan_es(dt);
        return es == 8 ? (uint64_t)v : (uint64_t)v & ((1ull << (8 * es)) - 1);
    }
    }
}

/* Float loads and stores in double (exact loads; stores round once, as cpu.h does). */
CH_AI double ld_f(const void *base, int64_t e, scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_FLOAT16: return sf_cpu_f16_to_f64((uint16_t)ld_bits(base, e, 2));
    case SCANFUSE_BFLOAT16: return sf_cpu_bf16_to_f64((uint16_t)ld_bits(base, e, 2));
    case SCANFUSE_FLOAT32: return sf_cpu_f32_from_bits((uint32_t)ld_bits(base, e, 4));
    default: return sf_cpu_from_bits(ld_bits(base, e, 8));
    }
}

CH_AI void st_f(void *base, int64_t e, scanfuse_dtype dt, double v) {
    switch (dt) {
    case SCANFUSE_FLOAT16: st_bits(base, e, 2, sf_cpu_f64_to_f16(v)); return;
    case SCANFUSE_BFLOAT16: st_bits(base, e, 2, sf_cpu_f64_to_bf16(v)); return;
    case SCANFUSE_FLOAT32: st_bits(base, e, 4, sf_cpu_f32_bits((float)v)); return;
    default: st_bits(base, e, 8, sf_cpu_bits(v)); return;
    }
}

/* An integer element as int64 (bool 0/1, integers sign- or zero-extended). */
CH_AI int64_t ld_i(const void *base, int64_t e, scanfuse_dtype dt) {
    uint64_t b = ld_bits(base, e, sf_scan_es(dt));
    switch (dt) {
    case SCANFUSE_BOOL: return b != 0;
    case SCANFUSE_UINT8: return (int64_t)(uint8_t)b;
    case SCANFUSE_INT8: return (int8_t)(uint8_t)b;
    case SCANFUSE_INT16: return (int16_t)(uint16_t)b;
    case SCANFUSE_INT32: return (int32_t)(uint32_t)b;
    default: return (int64_t)b;
    }
}

/* ------------------------------------------------------------------------------ */
/* cummax / cummin with 64-bit keys along a row                                      */
/* ------------------------------------------------------------------------------ */

/* The scan: one compare and three selects per element on the chain (the key, its
 * original index and its bits), written as conditional expressions so that they
 * compile to conditional moves: a branch would mispredict on data whose maximum
 * changes often.  Logical [a, lo) are the identity of an exclusive scan. */
CH_AI void max64_scan_impl(const sf_seq *s, int64_t a, int64_t b, sf_maxc64 *c,
                           scanfuse_dtype dt, bool is_min, int64_t xs) {
    int64_t ck = c->key, ci = c->idx;
    uint64_t cv = c->vbits;
    const uint64_t *x = (const uint64_t *)s->x;
    uint64_t *y = (uint64_t *)s->y;
    int64_t *yi = (int64_t *)s->yi;
    const int64_t ys = s->ys, y0 = s->y0, x0 = s->x0, ix0 = s->ix0, ixs = s->ixs;
    int64_t i = a;
    for (; i < b && i < s->lo; i++) { /* the identity */
        uint64_t bits = sf_ident64_bits(dt, is_min);
        int64_t k = sf_key64(bits, dt, is_min);
        if (k >= ck) {
            ck = k;
            ci = ix0 + ixs * i;
            cv = bits;
        }
        y[y0 + ys * i] = cv;
        yi[y0 + ys * i] = ci;
    }
    for (; i < b; i++) {
        uint64_t bits;
        memcpy(&bits, x + x0 + xs * i, 8);
        int64_t k = sf_key64(bits, dt, is_min);
        bool ge = k >= ck;
        ck = ge ? k : ck;
        ci = ge ? ix0 + ixs * i : ci;
        cv = ge ? bits : cv;
        memcpy(y + y0 + ys * i, &cv, 8);
        memcpy(yi + y0 + ys * i, &ci, 8);
    }
    c->key = ck;
    c->idx = ci;
    c->vbits = cv;
}

/* The reduce: four independent lanes (element i in lane i % 4), each keeping its best
 * key and the latest position holding it, then the best lane, ties to the later
 * position: the same winner as the scan, at a quarter of the chain's length. */
CH_AI void max64_reduce_impl(const sf_seq *s, int64_t a, int64_t b, sf_maxc64 *c,
                             scanfuse_dtype dt, bool is_min, int64_t xs) {
    enum { NL = 4 };
    int64_t bk[NL], bp[NL];
    for (int l = 0; l < NL; l++) {
        bk[l] = INT64_MIN;
        bp[l] = -1;
    }
    const uint64_t *x = (const uint64_t *)s->x;
    const int64_t x0 = s->x0;
    int64_t i = a;
    for (; i < b && i < s->lo; i++) { /* the identity */
        int64_t k = sf_key64(sf_ident64_bits(dt, is_min), dt, is_min);
        if (k >= bk[0]) {
            bk[0] = k;
            bp[0] = i;
        }
    }
    for (; i + NL <= b; i += NL)
        for (int l = 0; l < NL; l++) {
            uint64_t bits;
            memcpy(&bits, x + x0 + xs * (i + l), 8);
            int64_t k = sf_key64(bits, dt, is_min);
            bool ge = k >= bk[l];
            bk[l] = ge ? k : bk[l];
            bp[l] = ge ? i + l : bp[l];
        }
    for (; i < b; i++) {
        uint64_t bits;
        memcpy(&bits, x + x0 + xs * i, 8);
        int64_t k = sf_key64(bits, dt, is_min);
        if (k >= bk[0]) {
            bk[0] = k;
            bp[0] = i;
        }
    }
    int64_t key = INT64_MIN, w = -1;
    for (int l = 0; l < NL; l++)
        if (bp[l] >= 0 && (w < 0 || bk[l] > key || (bk[l] == key && bp[l] > w))) {
            key = bk[l];
            w = bp[l];
        }
    if (w >= 0 && key >= c->key) {
        c->key = key;
        c->idx = s->ix0 + s->ixs * w;
        if (w < s->lo) c->vbits = sf_ident64_bits(dt, is_min);
        else memcpy(&c->vbits, x + x0 + xs * w, 8);
    }
}

#define MAX64_CASE(DT, MN, XS)                                                         \
    if (dt == DT && is_min == MN && xs == XS) {                                        \
        if (store) max64_scan_impl(s, a, b, c, DT, MN, XS);                            \
        else max64_reduce_impl(s, a, b, c, DT, MN, XS);                                \
        return;                                                                        \
    }

void sf_scan_max64(const sf_seq *s, int64_t a, int64_t b, sf_maxc64 *c, bool store) {
    const scanfuse_dtype dt = s->xdt;
    const bool is_min = s->is_min;
    const int64_t xs = s->xs;
    SF_ASSERT((dt == SCANFUSE_INT64 || dt == SCANFUSE_FLOAT64) && (xs == 1 || xs == -1));
    MAX64_CASE(SCANFUSE_INT64, false, 1)
    MAX64_CASE(SCANFUSE_INT64, true, 1)
    MAX64_CASE(SCANFUSE_FLOAT64, false, 1)
    MAX64_CASE(SCANFUSE_FLOAT64, true, 1)
    MAX64_CASE(SCANFUSE_INT64, false, -1)
    MAX64_CASE(SCANFUSE_INT64, true, -1)
    MAX64_CASE(SCANFUSE_FLOAT64, false, -1)
    MAX64_CASE(SCANFUSE_FLOAT64, true, -1)
}
#undef MAX64_CASE

/* ------------------------------------------------------------------------------ */
/* cumprod along a row                                                               */
/* ------------------------------------------------------------------------------ */

/* float16 and bfloat16 values of a row go to a block of doubles and out by
 * sf_cpu_store_f64 (the same rounding as st_f, vectorized: in the loop it cost as much
 * as the chain); float32 and float64 ones are stored as they come (through a block a
 * single row ran 8 % slower). */
CH_AI bool prod_buffered(scanfuse_dtype ydt) { return ydt == SCANFUSE_FLOAT16 || ydt == SCANFUSE_BFLOAT16; }

CH_AI void prod_put(const sf_seq *s, scanfuse_dtype ydt, double *v, int64_t i0, int64_t i, double val) {
    if (prod_buffered(ydt)) v[i - i0] = val;
    else st_f(s->y, s->y0 + s->ys * i, ydt, val);
}

/* Float products carry a power of two beside the double (sf_prodx, sf.h): the chain is
 * still one multiply a step (the window test branches off it, taken only when the
 * product leaves [2^-500, 2^500]); the value is two more multiplies by the scales of
 * the power of two, which change only with it. */
CH_AI void prodf_impl(const sf_seq *s, int64_t a, int64_t b, sf_prodx *pf, scanfuse_dtype xdt,
                      scanfuse_dtype ydt, int64_t xs) {
    enum { PB = 256 };
    double v[PB];
    sf_prodx p = *pf;
    int64_t es = p.e;
    double s1, s2;
    sf_prodx_scales(es, &s1, &s2);
    for (int64_t i0 = a; i0 < b; i0 += PB) {
        const int64_t i1 = b - i0 < PB ? b : i0 + PB;
        int64_t i = i0;
        for (; i < i1 && i < s->lo; i++) /* the identity: the product stays */
            prod_put(s, ydt, v, i0, i, p.m * s1 * s2);
        for (; i < i1; i++) {
            p = sf_prodx_times(p, ld_f(s->x, s->x0 + xs * i, xdt), xdt);
            if (__builtin_expect(p.e != es, 0)) sf_prodx_scales(es = p.e, &s1, &s2);
            prod_put(s, ydt, v, i0, i, p.m * s1 * s2);
        }
        if (prod_buffered(ydt)) sf_cpu_store_f64(s->y, ydt, s->y0 + s->ys * i0, s->ys, i1 - i0, v);
    }
    *pf = p;
}

CH_AI void prodi_impl(const sf_seq *s, int64_t a, int64_t b, int64_t *pi, scanfuse_dtype xdt,
                      scanfuse_dtype ydt, int64_t xs) {
    uint64_t p = (uint64_t)*pi;
    const int64_t ey = sf_scan_es(ydt);
    int64_t i = a;
    for (; i < b && i < s->lo; i++) st_bits(s->y, s->y0 + s->ys * i, ey, p);
    for (; i < b; i++) {
        p *= (uint64_t)ld_i(s->x, s->x0 + xs * i, xdt);
        st_bits(s->y, s->y0 + s->ys * i, ey, p);
    }
    *pi = sf_cpu_wrap_u64(p);
}

/* Float cumprod of nrows rows at element strides xr (input) and yr (output) from row
 * s's, four rows at a time: four independent chains interleaved, where one row's chain
 * waits a multiply's latency every step.  Each row's steps are prodf_impl's, in its
 * order, so the same bits. */
CH_AI void prodf_rows_impl(const sf_seq *s, int64_t nrows, int64_t xr, int64_t yr, scanfuse_dtype xdt,
                           scanfuse_dtype ydt, int64_t xs) {
    enum { PB = 256, R = 4 };
    double v[R][PB]; /* (every dtype through blocks here: float32 10 % faster than stores in the loop) */
    int64_t r = 0;
    for (; r + R <= nrows; r += R) {
        sf_prodx p[R];
        int64_t es[R];
        double s1[R], s2[R];
        for (int k = 0; k < R; k++) {
            p[k] = (sf_prodx){1.0, 0};
            es[k] = 0;
            sf_prodx_scales(0, &s1[k], &s2[k]);
        }
        const int64_t x0 = s->x0 + r * xr, y0 = s->y0 + r * yr;
        for (int64_t i0 = 0; i0 < s->len; i0 += PB) {
            const int64_t i1 = s->len - i0 < PB ? s->len : i0 + PB;
            int64_t i = i0;
            for (; i < i1 && i < s->lo; i++)
                for (int k = 0; k < R; k++) v[k][i - i0] = 1.0;
            for (; i < i1; i++)
                for (int k = 0; k < R; k++) {
                    p[k] = sf_prodx_times(p[k], ld_f(s->x, x0 + k * xr + xs * i, xdt), xdt);
                    if (__builtin_expect(p[k].e != es[k], 0)) sf_prodx_scales(es[k] = p[k].e, &s1[k], &s2[k]);
                    v[k][i - i0] = p[k].m * s1[k] * s2[k];
                }
            for (int k = 0; k < R; k++) sf_cpu_store_f64(s->y, ydt, y0 + k * yr + s->ys * i0, s->ys, i1 - i0, v[k]);
        }
    }
    for (; r < nrows; r++) { /* the last few alone */
        sf_seq t = *s;
        t.x0 += r * xr;
        t.y0 += r * yr;
        sf_prodx p = {1.0, 0};
        prodf_impl(&t, 0, t.len, &p, xdt, ydt, xs);
    }
}

#define PF_CASE(X, Y)                                                                  \
    if (xdt == X && ydt == Y) {                                                        \
        if (xs == 1) prodf_impl(s, a, b, pf, X, Y, 1);                                 \
        else prodf_impl(s, a, b, pf, X, Y, -1);                                        \
        return;                                                                        \
    }
#define PI_CASE(X, Y)                                                                  \
    if (xdt == X && ydt == Y) {                                                        \
        if (xs == 1) prodi_impl(s, a, b, pi, X, Y, 1);                                 \
        else prodi_impl(s, a, b, pi, X, Y, -1);                                        \
        return;                                                                        \
    }

void sf_scan_prod(const sf_seq *s, int64_t a, int64_t b, sf_prodx *pf, int64_t *pi) {
    const scanfuse_dtype xdt = s->xdt, ydt = s->ydt;
    const int64_t xs = s->xs;
    SF_ASSERT(sf_scan_prod_ok(xdt, ydt) && (xs == 1 || xs == -1));
    if (sf_dtype_is_float(ydt)) {
        PF_CASE(SCANFUSE_FLOAT32, SCANFUSE_FLOAT32)
        PF_CASE(SCANFUSE_FLOAT64, SCANFUSE_FLOAT64)
        PF_CASE(SCANFUSE_FLOAT16, SCANFUSE_FLOAT16)
        PF_CASE(SCANFUSE_BFLOAT16, SCANFUSE_BFLOAT16)
        prodf_impl(s, a, b, pf, xdt, ydt, xs);
    } else {
        PI_CASE(SCANFUSE_INT64, SCANFUSE_INT64)
        PI_CASE(SCANFUSE_INT32, SCANFUSE_INT64)
        PI_CASE(SCANFUSE_INT32, SCANFUSE_INT32)
        prodi_impl(s, a, b, pi, xdt, ydt, xs);
    }
}
#undef PI_CASE
#undef PF_CASE

void sf_scan_prod_rows(const sf_seq *s, int64_t nrows, int64_t xr, int64_t yr) {
    const scanfuse_dtype xdt = s->xdt, ydt = s->ydt;
    const int64_t xs = s->xs;
    SF_ASSERT(sf_scan_prod_ok(xdt, ydt) && sf_dtype_is_float(ydt) && (xs == 1 || xs == -1));
#define PF_CASE(X, Y)                                                                  \
    if (xdt == X && ydt == Y) {                                                        \
        if (xs == 1) prodf_rows_impl(s, nrows, xr, yr, X, Y, 1);                       \
        else prodf_rows_impl(s, nrows, xr, yr, X, Y, -1);                              \
        return;                                                                        \
    }
    PF_CASE(SCANFUSE_FLOAT32, SCANFUSE_FLOAT32)
    PF_CASE(SCANFUSE_FLOAT64, SCANFUSE_FLOAT64)
    PF_CASE(SCANFUSE_FLOAT16, SCANFUSE_FLOAT16)
    PF_CASE(SCANFUSE_BFLOAT16, SCANFUSE_BFLOAT16)
    prodf_rows_impl(s, nrows, xr, yr, xdt, ydt, xs);
}
#undef PF_CASE

/* ------------------------------------------------------------------------------ */
/* Columns                                                                           */
/* ------------------------------------------------------------------------------ */

/* cummax/cummin of columns [j0, j1): per column the winner's stored bits and index
 * (its key is recomputed from the bits: the stored NaN and bool forms keep the key),
 * one lane-wise pass per step; unit column strides take the loop the compiler
 * vectorizes. */
CH_AI void maxc_impl(const sf_cols *c, int64_t j0, int64_t j1, scanfuse_dtype dt, bool is_min,
                     bool unit) {
    _Alignas(64) uint64_t cv[SF_SCAN_COLTILE];
    _Alignas(64) int64_t ci[SF_SCAN_COLTILE];
    const int64_t w = j1 - j0, es = sf_scan_es(dt);
    const int64_t xc = unit ? 1 : c->xc, yc = unit ? 1 : c->yc;
    SF_ASSERT(w > 0 && w <= SF_SCAN_COLTILE);
    const uint64_t id = ident_bits(dt, is_min);
    for (int64_t j = 0; j < w; j++) {
        cv[j] = id;
        ci[j] = -1;
    }
    for (int64_t t = 0; t < c->nsteps; t++) {
        const int64_t yo = c->y0 + c->ys * t + j0 * c->yc;
        char *restrict yr = (char *)c->y + yo * es;
        int64_t *restrict ir = (int64_t *)c->yi + yo;
        if (t >= c->lo) {
            const char *restrict xr = (const char *)c->x + (c->x0 + c->xs * t + j0 * c->xc) * es;
            const int64_t tix = c->ix0 + c->ixs * t;
            for (int64_t j = 0; j < w; j++) {
                uint64_t b = ld_bits(xr, j * xc, es);
                bool ge = col_key(b, dt, is_min) >= col_key(cv[j], dt, is_min);
                cv[j] = ge ? col_val(b, dt) : cv[j];
                ci[j] = ge ? tix : ci[j];
            }
        }
        for (int64_t j = 0; j < w; j++) {
            st_bits(yr, j * yc, es, cv[j]);
            ir[j * yc] = ci[j];
        }
    }
}

#define MC_CASE(DT)                                                                    \
    case DT:                                                                           \
        if (unit) {                                                                    \
            if (mn) maxc_impl(c, j0, j1, DT, true, true);                              \
            else maxc_impl(c, j0, j1, DT, false, true);                                \
        } else {                                                                       \
            if (mn) maxc_impl(c, j0, j1, DT, true, false);                             \
            else maxc_impl(c, j0, j1, DT, false, false);                               \
        }                                                                              \
        return;

CHAIN_CLONES static void max_cols(const sf_cols *c, int64_t j0, int64_t j1) {
    const bool unit = c->xc == 1 && c->yc == 1, mn = c->is_min;
    SF_ASSERT(c->xdt == c->ydt);
    switch (c->xdt) {
        MC_CASE(SCANFUSE_FLOAT32)
        MC_CASE(SCANFUSE_FLOAT64)
        MC_CASE(SCANFUSE_FLOAT16)
        MC_CASE(SCANFUSE_BFLOAT16)
        MC_CASE(SCANFUSE_INT64)
        MC_CASE(SCANFUSE_INT32)
        MC_CASE(SCANFUSE_INT16)
        MC_CASE(SCANFUSE_INT8)
        MC_CASE(SCANFUSE_UINT8)
        MC_CASE(SCANFUSE_BOOL)
    default: SF_ASSERT(!"max_cols: unsupported dtype");
    }
}
#undef MC_CASE

/* (The clones are static, the exported names plain calls: clang 14 leaves an exported
 * target_clones function undefined at link time.) */
void sf_scan_max_cols(const sf_cols *c, int64_t j0, int64_t j1) { max_cols(c, j0, j1); }

/* cumprod of columns [j0, j1): per column the running product (sf_prodx or wrapping
 * int64), one multiply per step and column, in step order: the row scan's bits. */
CH_AI void prodc_impl(const sf_cols *c, int64_t j0, int64_t j1, scanfuse_dtype xdt,
                      scanfuse_dtype ydt, bool unit) {
    _Alignas(64) double pf[SF_SCAN_COLTILE]; /* float products: pf * 2^pe (sf_prodx) */
    _Alignas(64) int64_t pe[SF_SCAN_COLTILE];
    _Alignas(64) double ps1[SF_SCAN_COLTILE], ps2[SF_SCAN_COLTILE]; /* sf_prodx_scales(pe) */
    _Alignas(64) uint64_t pi[SF_SCAN_COLTILE];
    const int64_t w = j1 - j0, ex = sf_scan_es(xdt), ey = sf_scan_es(ydt);
    const int64_t xc = unit ? 1 : c->xc, yc = unit ? 1 : c->yc;
    const bool fl = sf_dtype_is_float(ydt);
    SF_ASSERT(w > 0 && w <= SF_SCAN_COLTILE);
    for (int64_t j = 0; j < w; j++) {
        pf[j] = 1.0;
        pe[j] = 0;
        ps1[j] = ps2[j] = 1.0;
        pi[j] = 1;
    }
    for (int64_t t = 0; t < c->nsteps; t++) {
        char *restrict yr = (char *)c->y + (c->y0 + c->ys * t + j0 * c->yc) * ey;
        const char *restrict xr = (const char *)c->x + (c->x0 + c->xs * t + j0 * c->xc) * ex;
        const bool id = t < c->lo; /* the identity row: the product stays */
        if (fl) {
            /* chunks of 64 columns: the multiplies and the values in one vector loop
             * that also flags the rare columns (sf_prodx_flag), then those columns again,
             * one by one, from the products before the step */
            for (int64_t c0 = 0; c0 < w; c0 += 64) {
                const int64_t n = c0 + 64 < w ? 64 : w - c0;
                double *restrict m = pf + c0;
                const double *restrict s1 = ps1 + c0, *restrict s2 = ps2 + c0;
                if (id) {
                    for (int64_t j = 0; j < n; j++) st_f(yr, (c0 + j) * yc, ydt, m[j] * s1[j] * s2[j]);
                    continue;
                }
                double before[64];
                unsigned char fj[64];
                int f = 0;
                for (int64_t j = 0; j < n; j++) {
                    const double x = ld_f(xr, (c0 + j) * xc, xdt);
                    before[j] = m[j];
                    m[j] *= x;
                    fj[j] = (unsigned char)sf_prodx_flag(m[j], x);
                    f |= fj[j];
                    st_f(yr, (c0 + j) * yc, ydt, m[j] * s1[j] * s2[j]);
                }
                if (!f) continue;
                for (int64_t j = 0; j < n; j++) {
                    if (!fj[j]) continue;
                    const int64_t q = c0 + j;
                    const sf_prodx p = sf_prodx_times((sf_prodx){before[j], pe[q]}, ld_f(xr, q * xc, xdt), xdt);
                    m[j] = p.m;
                    if (p.e != pe[q]) sf_prodx_scales(pe[q] = p.e, &ps1[q], &ps2[q]);
                    st_f(yr, q * yc, ydt, m[j] * ps1[q] * ps2[q]);
                }
            }
        } else {
            if (!id)
                for (int64_t j = 0; j < w; j++) pi[j] = pi[j] * (uint64_t)ld_i(xr, j * xc, xdt);
            for (int64_t j = 0; j < w; j++) st_bits(yr, j * yc, ey, pi[j]);
        }
    }
}

#define PC_CASE(X, Y)                                                                  \
    if (xdt == X && ydt == Y) {                                                        \
        if (unit) prodc_impl(c, j0, j1, X, Y, true);                                   \
        else prodc_impl(c, j0, j1, X, Y, false);                                       \
        return;                                                                        \
    }

CHAIN_CLONES static void prod_cols_tile(const sf_cols *c, int64_t j0, int64_t j1) {
    const scanfuse_dtype xdt = c->xdt, ydt = c->ydt;
    const bool unit = c->xc == 1 && c->yc == 1;
    PC_CASE(SCANFUSE_FLOAT32, SCANFUSE_FLOAT32)
    PC_CASE(SCANFUSE_FLOAT64, SCANFUSE_FLOAT64)
    PC_CASE(SCANFUSE_FLOAT16, SCANFUSE_FLOAT16)
    PC_CASE(SCANFUSE_BFLOAT16, SCANFUSE_BFLOAT16)
    PC_CASE(SCANFUSE_INT64, SCANFUSE_INT64)
    PC_CASE(SCANFUSE_INT32, SCANFUSE_INT64)
    prodc_impl(c, j0, j1, xdt, ydt, false);
}
#undef PC_CASE

/* Column tiles of at most 512 columns, each walked over every step: a float column keeps
 * 32 bytes of state (the product, its power of two and two scales), and 512 columns of
 * it stay in the L1 cache. */
static void prod_cols(const sf_cols *c, int64_t j0, int64_t j1) {
    SF_ASSERT(sf_scan_prod_ok(c->xdt, c->ydt));
    for (int64_t a = j0; a < j1; a += 512) prod_cols_tile(c, a, a + 512 < j1 ? a + 512 : j1);
}

void sf_scan_prod_cols(const sf_cols *c, int64_t j0, int64_t j1) { prod_cols(c, j0, j1); }
