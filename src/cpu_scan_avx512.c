/*
 * cpu_scan_avx512.c — the scan kernels for x86-64 CPUs with AVX-512 F, VL, DQ and BW
 * (plus F16C): the vector layer of cpu_scan_body.h.  Compiled for those features with a
 * target pragma (no global -m flags); cpu_scan.c calls it only after
 * __builtin_cpu_supports confirms them.  On other architectures this file defines
 * nothing.
 *
 * Register widths were chosen by measurement on the build machine (AMD Zen 4, which
 * executes 512-bit operations as two 256-bit halves; bench/NOTES.md):
 *  - the row float sum keeps its 8 doubles in two 256-bit halves and uses AVX-512VL
 *    masked adds for the in-vector prefix (no blends) and 512-bit conversions; the same
 *    network on 512-bit registers needs cross-lane permutes that cost more than they
 *    save there.  On Intel cores, whose shuffles all issue on one port, the whole-register
 *    network has fewer of them (4 against 6 for 8 elements; a float32 cumsum of 2^18 in
 *    L2, 134 against 112 us on an Emerald Rapids Xeon, NOTES session 40): cpu_scan_avx512w.c
 *    compiles this file again with SF_SCAN_AVX512_WIDE, which swaps in that layer
 *    ("avx512w", the same bytes: the same IEEE operations on the same lanes);
 *  - the column sums (lane-wise only), the integer sums (vq: one __m512i, shifts by
 *    valignq) and the cummax keys (vk: 16 int32 lanes) use full 512-bit registers.
 * Narrowing float stores follow the same exact scheme as cpu_scan_avx2.c: round-to-odd
 * to 24 bits on the integer bits, an exact float conversion, then one round to nearest
 * even to float16 (F16C) or bfloat16 (the AVX512-BF16 conversion where the CPU has it,
 * else integer arithmetic); NaN becomes the helpers' canonical NaN; bfloat16 results
 * below 2^-126 go to the scalar helper (there the float would be subnormal, which the
 * BF16 instruction flushes to zero and which would round twice anyway).
 */
#include "cpu_scan_kern.h"

#ifdef SF_SCAN_X86

#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* Set by cpu_scan.c when the CPU also has AVX512-BF16 (only the bfloat16 store uses it;
 * the file is compiled with that feature enabled, and its instruction runs only under
 * this flag). */
#ifndef SF_SCAN_AVX512_WIDE
atomic_bool sf_scan_avx512_bf16 = false;
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx512bf16,avx2,fma,f16c,bmi,bmi2,popcnt"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,avx512bf16,avx2,fma,f16c,bmi,bmi2,popcnt")
#endif

#include <immintrin.h>

#ifdef SF_SCAN_AVX512_WIDE
#define SF_ISA(name) sf_scan_avx512w_##name
#define SF_ISA_NAME "avx512w"
#else
#define SF_ISA(name) sf_scan_avx512_##name
#define SF_ISA_NAME "avx512"
#endif
#define SF_ALIGN64 _Alignas(64)
/* Every vector-layer function is forced inline: passing vector structs through a call
 * would spill them to memory in the innermost loops. */
#define SF_AI static inline __attribute__((always_inline))
#define SF_NOINLINE static __attribute__((noinline))
#define VK_W 16
#define VC_W 8

#ifdef SF_SCAN_AVX512_WIDE
typedef __m512d vd;
typedef __m512d vb;
#else
typedef struct vd {
    __m256d lo, hi;
} vd;
typedef __m256d vb;
#endif
typedef __m512i vq;
typedef __m512i qb;
typedef __m512i vk;
typedef __m512d vc;

/* ---- 8-double conversions on one 512-bit register ---- */

SF_AI __m512d d8_load(const void *p, scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_FLOAT16: return _mm512_cvtps_pd(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)));
    case SCANFUSE_BFLOAT16:
        return _mm512_cvtps_pd(_mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16)));
    case SCANFUSE_FLOAT32: return _mm512_cvtps_pd(_mm256_loadu_ps((const float *)p));
    default: return _mm512_loadu_pd(p);
    }
}

/* bfloat16 results below 2^-126 (where the float would be subnormal and round a second
 * time): the scalar helper, out of line. */
SF_NOINLINE void d8_store_bf16_scalar(void *p, __m512d v) {
    double l[8];
    _mm512_storeu_pd(l, v);
    for (int k = 0; k < 8; k++) {
        uint16_t h = sf_cpu_f64_to_bf16(l[k]);
        memcpy((char *)p + 2 * k, &h, 2);
    }
}

/* 8 doubles rounded to 24 bits by round-to-odd, then (exactly) to float. */
SF_AI __m256 d8_to_f32_odd(__m512d v) {
    const __m512i low = _mm512_set1_epi64(0x1FFFFFFF);
    __m512i b = _mm512_castpd_si512(v);
    __mmask8 sticky = _mm512_test_epi64_mask(b, low);
    __m512i t = _mm512_andnot_si512(low, b);
    t = _mm512_mask_or_epi64(t, sticky, t, _mm512_set1_epi64(0x20000000));
    return _mm512_cvtpd_ps(_mm512_castsi512_pd(t));
}

SF_AI void d8_store(void *p, __m512d v, scanfuse_dtype dt, bool nt) {
    switch (dt) {
    case SCANFUSE_FLOAT16: {
        __m128i h = _mm256_cvtps_ph(d8_to_f32_odd(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __mmask8 nan = _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q);
        if (nan) /* inline: NaN-heavy data must not take a slow path */
            h = _mm_mask_blend_epi16(nan, h, _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16((short)0x8000)),
                                                         _mm_set1_epi16(0x7E00)));
        _mm_storeu_si128((__m128i *)p, h);
        return;
    }
    case SCANFUSE_BFLOAT16: {
        __m512d a = _mm512_abs_pd(v);
        __mmask8 tiny = _mm512_cmp_pd_mask(a, _mm512_set1_pd(0x1p-126), _CMP_LT_OQ) &
                        _mm512_cmp_pd_mask(a, _mm512_setzero_pd(), _CMP_GT_OQ);
        if (tiny) {
            d8_store_bf16_scalar(p, v);
            return;
        }
        __m256 f = d8_to_f32_odd(v);
        __mmask8 nan = _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q);
        __m128i h;
        if (atomic_load_explicit(&sf_scan_avx512_bf16, memory_order_relaxed)) {
            /* vcvtneps2bf16 rounds to nearest even like the helper for every float at or
             * above 2^-126 (smaller ones took the scalar path above: the instruction
             * flushes them) and keeps NaN payloads (blended to canonical below) */
            __m128bh c = _mm256_cvtneps_pbh(f);
            memcpy(&h, &c, sizeof h);
        } else {
            __m256i b = _mm256_castps_si256(f);
            __m256i odd = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
            __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7FFF)), odd), 16);
            h = _mm256_cvtepi32_epi16(r);
        }
        if (nan) { /* inline: NaN-heavy data must not take a slow path */
            __m128i sign = _mm_and_si128(_mm256_cvtepi32_epi16(_mm256_srli_epi32(_mm256_castps_si256(f), 16)),
                                         _mm_set1_epi16((short)0x8000));
            h = _mm_mask_blend_epi16(nan, h, _mm_or_si128(sign, _mm_set1_epi16(0x7FC0)));
        }
        _mm_storeu_si128((__m128i *)p, h);
        return;
    }
    case SCANFUSE_FLOAT32: {
        __m256 f = _mm512_cvtpd_ps(v);
        if (nt && ((uintptr_t)p & 31) == 0) _mm256_stream_ps((float *)p, f);
        else _mm256_storeu_ps((float *)p, f);
        return;
    }
    default:
        if (nt && ((uintptr_t)p & 63) == 0) _mm512_stream_pd((double *)p, v);
        else _mm512_storeu_pd((double *)p, v);
        return;
    }
}

/* ---- column vectors: 8 doubles in one register ---- */
SF_AI vc vc_set(double d) { return _mm512_set1_pd(d); }
SF_AI vc vc_add(vc a, vc b) { return _mm512_add_pd(a, b); }
SF_AI vc vc_sub(vc a, vc b) { return _mm512_sub_pd(a, b); }
SF_AI vc vc_finite_or_zero(vc t, vc e) {
    __mmask8 fin = _mm512_cmp_pd_mask(_mm512_abs_pd(t), _mm512_set1_pd(INFINITY), _CMP_LT_OQ);
    return _mm512_maskz_mov_pd(fin, e);
}
SF_AI vc vc_load_lanes(const double *l) { return _mm512_loadu_pd(l); }
SF_AI void vc_store_lanes(double *l, vc v) { _mm512_storeu_pd(l, v); }
SF_AI vc vc_load(const void *p, scanfuse_dtype dt) { return d8_load(p, dt); }
SF_AI void vc_store(void *p, vc v, scanfuse_dtype dt, bool nt) { d8_store(p, v, dt, nt); }

#ifdef SF_SCAN_AVX512_WIDE
/* ---- broadcast doubles, and 8 doubles, on whole 512-bit registers ---- */
/* (vb is vc's type here: the broadcast operations are the column vectors') */
SF_AI vb vb_set(double d) { return vc_set(d); }
SF_AI vb vb_add(vb a, vb b) { return vc_add(a, b); }
SF_AI vb vb_sub(vb a, vb b) { return vc_sub(a, b); }
SF_AI vb vb_finite_or_zero(vb t, vb e) { return vc_finite_or_zero(t, e); }
SF_AI double vb_get(vb a) { return _mm512_cvtsd_f64(a); }

SF_AI vd vd_add(vd a, vd b) { return _mm512_add_pd(a, b); }
SF_AI vd vd_addb(vd a, vb b) { return _mm512_add_pd(a, b); }
/* The network of the halves' vd_prefix with the same additions on the same lanes: the
 * lanes it leaves alone are not touched (the halves add -0.0 to them: the same value). */
SF_AI vd vd_prefix(vd x) {
    x = _mm512_mask_add_pd(x, 0xAA, x, _mm512_permute_pd(x, 0x00));                   /* L1: 1,3,5,7 += 0,2,4,6 */
    x = _mm512_mask_add_pd(x, 0xCC, x, _mm512_permutex_pd(x, 0x55));                  /* L2: 2,3 += 1; 6,7 += 5 */
    return _mm512_mask_add_pd(x, 0xF0, x, _mm512_permutexvar_pd(_mm512_set1_epi64(3), x)); /* L3: 4-7 += 3 */
}
SF_AI vb vd_last(vd y) { return _mm512_permutexvar_pd(_mm512_set1_epi64(7), y); }
/* ((x0+x1)+(x2+x3)) + ((x4+x5)+(x6+x7)) in every lane, the halves' vd_total's additions. */
SF_AI vb vd_total(vd x) {
    __m512d p = _mm512_add_pd(x, _mm512_permute_pd(x, 0x55));      /* lane 2j: x2j + x2j+1 */
    __m512d q = _mm512_add_pd(p, _mm512_permutex_pd(p, 0x4E));     /* lanes 0, 4: the 4-sums */
    __m512d r = _mm512_add_pd(q, _mm512_shuffle_f64x2(q, q, 0x4E)); /* lane 0: y3 + y7' */
    return _mm512_permutexvar_pd(_mm512_setzero_si512(), r);
}
SF_AI vd vd_rev(vd x) { return _mm512_permutexvar_pd(_mm512_setr_epi64(7, 6, 5, 4, 3, 2, 1, 0), x); }
SF_AI vd vd_load_lanes(const double *l) { return vc_load_lanes(l); }
SF_AI void vd_store_lanes(double *l, vd v) { vc_store_lanes(l, v); }
SF_AI vd vd_load(const void *p, scanfuse_dtype dt) { return vc_load(p, dt); }
SF_AI void vd_store(void *p, vd v, scanfuse_dtype dt, bool nt) { vc_store(p, v, dt, nt); }

#else
/* ---- broadcast doubles ---- */
SF_AI vb vb_set(double d) { return _mm256_set1_pd(d); }
SF_AI vb vb_add(vb a, vb b) { return _mm256_add_pd(a, b); }
SF_AI vb vb_sub(vb a, vb b) { return _mm256_sub_pd(a, b); }
SF_AI vb vb_finite_or_zero(vb t, vb e) {
    __mmask8 fin = _mm256_cmp_pd_mask(_mm256_andnot_pd(_mm256_set1_pd(-0.0), t), _mm256_set1_pd(INFINITY),
                                      _CMP_LT_OQ);
    return _mm256_maskz_mov_pd(fin, e);
}
SF_AI double vb_get(vb a) { return _mm256_cvtsd_f64(a); }

/* ---- 8 doubles as two 256-bit halves ---- */
SF_AI vd vd_add(vd a, vd b) { return (vd){_mm256_add_pd(a.lo, b.lo), _mm256_add_pd(a.hi, b.hi)}; }
SF_AI vd vd_addb(vd a, vb b) { return (vd){_mm256_add_pd(a.lo, b), _mm256_add_pd(a.hi, b)}; }
SF_AI vd vd_prefix(vd x) {
    const __m256d nz = _mm256_set1_pd(-0.0);
    __m256d a = x.lo, c = x.hi;
    const __m256d one = _mm256_set1_pd(1.0);
    /* L1: lanes 1, 3 += lanes 0, 2.  As fma(x, 1, y), which is x + y rounded once (the
     * same bits), so that these adds can issue on the FMA pipes too. */
    a = _mm256_fmadd_pd(_mm256_unpacklo_pd(nz, a), one, a);
    c = _mm256_fmadd_pd(_mm256_unpacklo_pd(nz, c), one, c);
    a = _mm256_mask_add_pd(a, 0xC, a, _mm256_permute4x64_pd(a, 0x55)); /* L2 */
    c = _mm256_mask_add_pd(c, 0xC, c, _mm256_permute4x64_pd(c, 0x55));
    c = _mm256_add_pd(c, _mm256_permute4x64_pd(a, 0xFF)); /* L3 */
    return (vd){a, c};
}
SF_AI vb vd_last(vd y) { return _mm256_permute4x64_pd(y.hi, 0xFF); }
/* y7 of vd_prefix without the other lanes: ((x3+x2)+(x1+x0)) + ((x7+x6)+(x5+x4)) by
 * horizontal adds (each the same IEEE addition as in the network, operands swapped),
 * broadcast; for the reduce pass. */
SF_AI vb vd_total(vd x) {
    __m256d h = _mm256_hadd_pd(x.lo, x.hi);                  /* x0+x1, x4+x5, x2+x3, x6+x7 */
    __m256d s = _mm256_add_pd(h, _mm256_permute2f128_pd(h, h, 1)); /* lane 0: y3, lane 1: y7' */
    __m256d t = _mm256_add_pd(s, _mm256_permute_pd(s, 0x5));   /* lane 0: y3 + y7' */
    return _mm256_permute4x64_pd(t, 0x00);
}
SF_AI vd vd_rev(vd x) {
    return (vd){_mm256_permute4x64_pd(x.hi, 0x1B), _mm256_permute4x64_pd(x.lo, 0x1B)};
}
SF_AI vd vd_load_lanes(const double *l) { return (vd){_mm256_loadu_pd(l), _mm256_loadu_pd(l + 4)}; }
SF_AI void vd_store_lanes(double *l, vd v) {
    _mm256_storeu_pd(l, v.lo);
    _mm256_storeu_pd(l + 4, v.hi);
}
SF_AI vd vd_load(const void *p, scanfuse_dtype dt) {
    if (dt == SCANFUSE_FLOAT32) {
        const float *f = (const float *)p;
        return (vd){_mm256_cvtps_pd(_mm_loadu_ps(f)), _mm256_cvtps_pd(_mm_loadu_ps(f + 4))};
    }
    if (dt == SCANFUSE_FLOAT64) {
        const double *d = (const double *)p;
        return (vd){_mm256_loadu_pd(d), _mm256_loadu_pd(d + 4)};
    }
    __m512d z = d8_load(p, dt);
    return (vd){_mm512_castpd512_pd256(z), _mm512_extractf64x4_pd(z, 1)};
}
SF_AI void vd_store(void *p, vd v, scanfuse_dtype dt, bool nt) {
    d8_store(p, _mm512_insertf64x4(_mm512_castpd256_pd512(v.lo), v.hi, 1), dt, nt);
}

#endif /* SF_SCAN_AVX512_WIDE */

/* ---- 8 int64 in one register ---- */
SF_AI qb qb_set(int64_t v) { return _mm512_set1_epi64(v); }
SF_AI qb qb_add(qb a, qb b) { return _mm512_add_epi64(a, b); }
SF_AI int64_t qb_get(qb a) { return _mm_cvtsi128_si64(_mm512_castsi512_si128(a)); }
SF_AI vq vq_set(int64_t v) { return _mm512_set1_epi64(v); }
SF_AI vq vq_add(vq a, vq b) { return _mm512_add_epi64(a, b); }
SF_AI vq vq_addb(vq a, qb b) { return _mm512_add_epi64(a, b); }
SF_AI vq vq_prefix(vq x) {
    const __m512i z = _mm512_setzero_si512();
    x = _mm512_add_epi64(x, _mm512_alignr_epi64(x, z, 7)); /* lane i += lane i-1 */
    x = _mm512_add_epi64(x, _mm512_alignr_epi64(x, z, 6));
    x = _mm512_add_epi64(x, _mm512_alignr_epi64(x, z, 4));
    return x;
}
SF_AI qb vq_last(vq y) { return _mm512_permutexvar_epi64(_mm512_set1_epi64(7), y); }
/* The wrapping total in every lane (not _mm512_reduce_add_epi64, which adds signed
 * 64-bit C integers: overflow there is undefined behaviour). */
SF_AI qb vq_sum(vq x) {
    x = _mm512_add_epi64(x, _mm512_shuffle_i64x2(x, x, 0x4E)); /* swap 256-bit halves */
    x = _mm512_add_epi64(x, _mm512_shuffle_i64x2(x, x, 0xB1)); /* swap 128-bit pairs */
    return _mm512_add_epi64(x, _mm512_shuffle_epi32(x, 0x4E)); /* swap 64-bit lanes */
}
SF_AI vq vq_rev(vq x) { return _mm512_permutexvar_epi64(_mm512_setr_epi64(7, 6, 5, 4, 3, 2, 1, 0), x); }
SF_AI vq vq_load_lanes(const int64_t *l) { return _mm512_loadu_si512(l); }
SF_AI void vq_store_lanes(int64_t *l, vq v) { _mm512_storeu_si512(l, v); }
SF_AI vq vq_load(const void *p, scanfuse_dtype dt) {
    const char *c = (const char *)p;
    switch (dt) {
    case SCANFUSE_BOOL:
        return _mm512_min_epu64(_mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)c)), _mm512_set1_epi64(1));
    case SCANFUSE_UINT8: return _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)c));
    case SCANFUSE_INT8: return _mm512_cvtepi8_epi64(_mm_loadl_epi64((const __m128i *)c));
    case SCANFUSE_INT16: return _mm512_cvtepi16_epi64(_mm_loadu_si128((const __m128i *)c));
    case SCANFUSE_INT32: return _mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)c));
    default: return _mm512_loadu_si512(c);
    }
}
SF_AI void vq_store(void *p, vq v, scanfuse_dtype dt, bool nt) {
    char *c = (char *)p;
    switch (dt) {
    case SCANFUSE_UINT8: case SCANFUSE_INT8: _mm_storel_epi64((__m128i *)c, _mm512_cvtepi64_epi8(v)); return;
    case SCANFUSE_INT16: _mm_storeu_si128((__m128i *)c, _mm512_cvtepi64_epi16(v)); return;
    case SCANFUSE_INT32: {
        __m256i w = _mm512_cvtepi64_epi32(v);
        if (nt && ((uintptr_t)c & 31) == 0) _mm256_stream_si256((__m256i *)c, w);
        else _mm256_storeu_si256((__m256i *)c, w);
        return;
    }
    default:
        if (nt && ((uintptr_t)c & 63) == 0) _mm512_stream_si512((__m512i *)c, v);
        else _mm512_storeu_si512(c, v);
        return;
    }
}

/* ---- 16 int32 keys ---- */
SF_AI vk vk_set(int32_t v) { return _mm512_set1_epi32(v); }
SF_AI vk vk_iota(void) { return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
SF_AI vk vk_add(vk a, vk b) { return _mm512_add_epi32(a, b); }
SF_AI vk vk_max(vk a, vk b) { return _mm512_max_epi32(a, b); }
SF_AI vk vk_prefix_max(vk x) {
    const __m512i lo = _mm512_set1_epi32(INT32_MIN);
    x = _mm512_max_epi32(x, _mm512_alignr_epi32(x, lo, 15)); /* lane i vs lane i-1 */
    x = _mm512_max_epi32(x, _mm512_alignr_epi32(x, lo, 14));
    x = _mm512_max_epi32(x, _mm512_alignr_epi32(x, lo, 12));
    x = _mm512_max_epi32(x, _mm512_alignr_epi32(x, lo, 8));
    return x;
}
SF_AI vk vk_bcast_last(vk x) { return _mm512_permutexvar_epi32(_mm512_set1_epi32(15), x); }
SF_AI vk vk_shift_in(vk v, vk prev) { return _mm512_alignr_epi32(v, prev, 15); }
SF_AI vk vk_select_ge(vk a, vk b, vk t, vk f) {
    return _mm512_mask_blend_epi32(_mm512_cmpge_epi32_mask(a, b), f, t);
}
SF_AI vk vk_select_gt(vk a, vk b, vk t, vk f) {
    return _mm512_mask_blend_epi32(_mm512_cmpgt_epi32_mask(a, b), f, t);
}
SF_AI unsigned vk_special(vk m, int32_t zkey) {
    return (unsigned)(_mm512_cmpeq_epi32_mask(m, _mm512_set1_epi32(zkey)) |
                      _mm512_cmpeq_epi32_mask(m, _mm512_set1_epi32(INT32_MAX)));
}
SF_AI vk vk_rev(vk x) {
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), x);
}
SF_AI vk vk_load_lanes(const int32_t *l) { return _mm512_loadu_si512(l); }
SF_AI void vk_store_lanes(int32_t *l, vk v) { _mm512_storeu_si512(l, v); }

SF_AI vk vk_key_bits(__m512i b, bool is_min) {
    __m512i m = _mm512_and_si512(b, _mm512_set1_epi32(0x7FFFFFFF));
    __m512i k = _mm512_mask_sub_epi32(m, _mm512_movepi32_mask(b), _mm512_setzero_si512(), m);
    if (is_min) k = _mm512_xor_si512(k, _mm512_set1_epi32(-1));
    return _mm512_mask_mov_epi32(k, _mm512_cmpgt_epi32_mask(m, _mm512_set1_epi32(0x7F800000)),
                                 _mm512_set1_epi32(INT32_MAX));
}
SF_AI vk vk_load_key(const void *p, scanfuse_dtype dt, bool is_min) {
    const char *c = (const char *)p;
    __m512i v;
    switch (dt) {
    case SCANFUSE_FLOAT32: return vk_key_bits(_mm512_loadu_si512(c), is_min);
    case SCANFUSE_FLOAT16:
        return vk_key_bits(_mm512_castps_si512(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)c))), is_min);
    case SCANFUSE_BFLOAT16:
        return vk_key_bits(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)c)), 16),
                           is_min);
    case SCANFUSE_INT32: v = _mm512_loadu_si512(c); break;
    case SCANFUSE_INT16: v = _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)c)); break;
    case SCANFUSE_INT8: v = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)c)); break;
    case SCANFUSE_UINT8: v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)c)); break;
    default: /* bool */
        v = _mm512_min_epu32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)c)), _mm512_set1_epi32(1));
        break;
    }
    return is_min ? _mm512_xor_si512(v, _mm512_set1_epi32(-1)) : v;
}

SF_AI void vk_store_val(void *p, vk keys, scanfuse_dtype dt, bool is_min, bool nt) {
    char *c = (char *)p;
    __m512i k = is_min ? _mm512_xor_si512(keys, _mm512_set1_epi32(-1)) : keys;
    switch (dt) {
    case SCANFUSE_INT32:
        if (nt && ((uintptr_t)c & 63) == 0) _mm512_stream_si512((__m512i *)c, k);
        else _mm512_storeu_si512(c, k);
        return;
    case SCANFUSE_INT16: _mm256_storeu_si256((__m256i *)c, _mm512_cvtepi32_epi16(k)); return;
    case SCANFUSE_INT8: case SCANFUSE_UINT8: case SCANFUSE_BOOL:
        _mm_storeu_si128((__m128i *)c, _mm512_cvtepi32_epi8(k));
        return;
    default: break;
    }
    __mmask16 neg = _mm512_movepi32_mask(k);
    __m512i m = _mm512_abs_epi32(k);
    __m512i bits = _mm512_mask_or_epi32(m, neg, m, _mm512_set1_epi32((int32_t)0x80000000u));
    switch (dt) {
    case SCANFUSE_FLOAT32:
        if (nt && ((uintptr_t)c & 63) == 0) _mm512_stream_si512((__m512i *)c, bits);
        else _mm512_storeu_si512(c, bits);
        return;
    case SCANFUSE_FLOAT16:
        _mm256_storeu_si256((__m256i *)c, _mm512_cvtps_ph(_mm512_castsi512_ps(bits),
                                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        return;
    default: /* bfloat16: the high halves, exactly */
        _mm256_storeu_si256((__m256i *)c, _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16)));
        return;
    }
}

SF_AI void vk_store_idx(int64_t *p, vk rel, int64_t base, int64_t dir, int64_t carry,
                                bool nt) {
    __m512i r0 = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(rel));
    __m512i r1 = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(rel, 1));
    __m512i b = _mm512_set1_epi64(base), cv = _mm512_set1_epi64(carry), z = _mm512_setzero_si512();
    __m512i i0 = dir > 0 ? _mm512_add_epi64(b, r0) : _mm512_sub_epi64(b, r0);
    __m512i i1 = dir > 0 ? _mm512_add_epi64(b, r1) : _mm512_sub_epi64(b, r1);
    i0 = _mm512_mask_mov_epi64(i0, _mm512_cmplt_epi64_mask(r0, z), cv);
    i1 = _mm512_mask_mov_epi64(i1, _mm512_cmplt_epi64_mask(r1, z), cv);
    if (nt && ((uintptr_t)p & 63) == 0) {
        _mm512_stream_si512((__m512i *)p, i0);
        _mm512_stream_si512((__m512i *)(p + 8), i1);
    } else {
        _mm512_storeu_si512(p, i0);
        _mm512_storeu_si512(p + 8, i1);
    }
}

/* ---- float32 cumsum of 8 rows at once (fsum_rows of cpu_scan_body.h) ---- *
 * Short rows through the row kernel cost ~0.37 ns per element in L2 (its in-vector
 * network needs 6 shuffles per 8 elements, and the conversions and adds share the
 * same pipes).  Here 8 rows advance together: an 8x8 block of floats (8 elements of 8
 * rows) is transposed so that register k holds element k of every row, and the network
 * of cpu_scan_kern.h runs lane-wise across the 8 registers, exactly as the column
 * kernel runs it across 8 steps, so every row gets the bits of its row-mode scan (the
 * same IEEE double operations in the same order; a lane is a row).  The first level of
 * the network and the output adds are issued as fma(b, 1, a): the same value as
 * a + b (a sum's NaN payload is not part of the result's definition), on the FMA pipes
 * that the shuffles and conversions leave idle.  Measured in L2 on Zen 4: 0.28 ns per
 * element against 0.37; from DRAM it loses (8 rows at once defeat the hardware
 * prefetchers), so fsum_rows takes it only for cache-resident scans (sf_seq.cached;
 * bench/NOTES.md entry 13). */
SF_AI void rows8_tr(__m256 *r) { /* 8x8 float transpose */
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

#define SF_SCAN_ROWS8 1
/* Rows r = 0..7 of logical length n (a multiple of 8, at most SF_SCAN_PART; inclusive):
 * row r reads logical i at x[r*xr + i] (rev: x[r*xr - i]) and writes y likewise. */
SF_AI void rows8_f32_impl(const float *x, int64_t xr, float *y, int64_t yr, int64_t n, bool rev) {
    const __m512d nz = _mm512_set1_pd(-0.0), one = _mm512_set1_pd(1.0);
    __m512d lh = nz, ll = nz;
    for (int64_t blk = 0; blk < n; blk += SF_SCAN_BLOCK) {
        int64_t e = blk + SF_SCAN_BLOCK < n ? blk + SF_SCAN_BLOCK : n;
        __m512d Cs = _mm512_add_pd(_mm512_add_pd(lh, ll), nz); /* (L.hi + L.lo) + cs, cs = -0.0 */
        __m512d T = nz;
        for (int64_t i = blk; i < e; i += 8) {
            __m256 r[8];
            int64_t o = rev ? -i - 7 : i; /* the lowest address of the 8 elements */
            for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_ps(x + k * xr + o);
            rows8_tr(r);
            __m512d v[8];
            for (int k = 0; k < 8; k++) v[k] = _mm512_cvtps_pd(r[rev ? 7 - k : k]);
            v[1] = _mm512_fmadd_pd(v[0], one, v[1]); /* L1 */
            v[3] = _mm512_fmadd_pd(v[2], one, v[3]);
            v[5] = _mm512_fmadd_pd(v[4], one, v[5]);
            v[7] = _mm512_fmadd_pd(v[6], one, v[7]);
            v[2] = _mm512_add_pd(v[2], v[1]); /* L2 */
            v[3] = _mm512_add_pd(v[3], v[1]);
            v[6] = _mm512_add_pd(v[6], v[5]);
            v[7] = _mm512_add_pd(v[7], v[5]);
            v[4] = _mm512_add_pd(v[4], v[3]); /* L3 */
            v[5] = _mm512_add_pd(v[5], v[3]);
            v[6] = _mm512_add_pd(v[6], v[3]);
            v[7] = _mm512_add_pd(v[7], v[3]);
            __m512d tc = _mm512_add_pd(T, Cs);
            T = _mm512_add_pd(T, v[7]);
            for (int k = 0; k < 8; k++) r[rev ? 7 - k : k] = _mm512_cvtpd_ps(_mm512_fmadd_pd(tc, one, v[k]));
            rows8_tr(r);
            for (int k = 0; k < 8; k++) _mm256_storeu_ps(y + k * yr + o, r[k]);
        }
        __m512d t = _mm512_add_pd(lh, T), bp = _mm512_sub_pd(t, lh); /* sf_dd_acc, lane-wise */
        __m512d err = _mm512_add_pd(_mm512_sub_pd(lh, _mm512_sub_pd(t, bp)), _mm512_sub_pd(T, bp));
        __mmask8 fin = _mm512_cmp_pd_mask(_mm512_abs_pd(t), _mm512_set1_pd(INFINITY), _CMP_LT_OQ);
        ll = _mm512_add_pd(ll, _mm512_maskz_mov_pd(fin, err));
        lh = t;
    }
}
static void rows8_f32(const float *x, int64_t xr, float *y, int64_t yr, int64_t n, bool rev) {
    if (rev) rows8_f32_impl(x, xr, y, yr, n, true);
    else rows8_f32_impl(x, xr, y, yr, n, false);
}

#include "cpu_scan_body.h"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif /* SF_SCAN_X86 */
