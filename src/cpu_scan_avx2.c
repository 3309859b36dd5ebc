/*
 * cpu_scan_avx2.c — the scan kernels for x86-64 CPUs with AVX2, FMA and F16C: the
 * vector layer of cpu_scan_body.h on 256-bit registers.  Compiled for those features
 * with a target pragma (no global -m flags), so the library still runs on any x86-64;
 * cpu_scan.c calls these kernels only after __builtin_cpu_supports says the CPU has
 * them.  On other architectures this file defines nothing.
 *
 * Layout: vd (8 doubles) is two __m256d, vb (a broadcast double) one __m256d, vq (8
 * int64) two __m256i, vk (8 int32 keys) one __m256i, vc (a column vector) one __m256d.
 * The in-vector prefix uses only in-lane shuffles (unpacklo) and two cross-lane
 * permutes per vector; the -0.0 shifted into unused lanes is the exact additive
 * identity, so lanes the definition leaves alone come out bit-identical.
 *
 * Narrowing stores round exactly as the scalar helpers of cpu.h: double -> float32 is
 * the hardware's round-to-nearest-even; double -> float16/bfloat16 first rounds to
 * 24 bits by round-to-odd on the integer bits (truncate, then set the last kept bit if
 * anything nonzero was dropped), which the float conversion then keeps exactly, and
 * the final rounding to 11 or 8 bits is to nearest even (F16C for float16, integer
 * arithmetic for bfloat16); NaN becomes the canonical NaN of the helpers.  The one
 * case where that route would round twice — a bfloat16 result below 2^-126, where the
 * float itself is subnormal — is sent to the scalar helper.
 */
#include "cpu_scan_kern.h"

#ifdef SF_SCAN_X86

#include <math.h>
#include <string.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,bmi,bmi2,popcnt"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,popcnt")
#endif

#include <immintrin.h>

#define SF_ISA(name) sf_scan_avx2_##name
#define SF_ISA_NAME "avx2"
#define SF_ALIGN64 _Alignas(64)
/* Every vector-layer function is forced inline: passing vector structs through a call
 * would spill them to memory in the innermost loops. */
#define SF_AI static inline __attribute__((always_inline))
#define SF_NOINLINE static __attribute__((noinline))
#define VK_W 8
#define VC_W 4

typedef struct vd {
    __m256d lo, hi;
} vd;
typedef __m256d vb;
typedef struct vq {
    __m256i lo, hi;
} vq;
typedef __m256i qb;
typedef __m256i vk;
typedef __m256d vc;

/* ---- 4-double helpers: loads and rounding stores ---- */

SF_AI __m256d d4_load(const void *p, scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_FLOAT16: return _mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)p)));
    case SCANFUSE_BFLOAT16: {
        __m128i h = _mm_loadl_epi64((const __m128i *)p);
        return _mm256_cvtps_pd(_mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h)));
    }
    case SCANFUSE_FLOAT32: return _mm256_cvtps_pd(_mm_loadu_ps((const float *)p));
    default: return _mm256_loadu_pd((const double *)p);
    }
}

/* 4 doubles rounded to 24 bits by round-to-odd, then (exactly) to float. */
SF_AI __m128 d4_to_f32_odd(__m256d v) {
    const __m256i low = _mm256_set1_epi64x(0x1FFFFFFF);
    __m256i b = _mm256_castpd_si256(v);
    __m256i dropped = _mm256_and_si256(b, low);
    __m256i sticky = _mm256_andnot_si256(_mm256_cmpeq_epi64(dropped, _mm256_setzero_si256()),
                                         _mm256_set1_epi64x(0x20000000));
    __m256i t = _mm256_or_si256(_mm256_andnot_si256(low, b), sticky);
    return _mm256_cvtpd_ps(_mm256_castsi256_pd(t));
}

/* float bits -> bfloat16 bits (round to nearest even), in the low 16 of each lane. */
SF_AI __m128i f32x4_to_bf16(__m128 f) {
    __m128i b = _mm_castps_si128(f);
    __m128i odd = _mm_and_si128(_mm_srli_epi32(b, 16), _mm_set1_epi32(1));
    __m128i r = _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(b, _mm_set1_epi32(0x7FFF)), odd), 16);
    return r;
}


/* The cold path of d4_store, out of line: a bfloat16 result below 2^-126 is rounded
 * by the scalar helper. */
SF_NOINLINE void d4_store_bf16_scalar(void *p, __m256d v) {
    double l[4];
    _mm256_storeu_pd(l, v);
    for (int k = 0; k < 4; k++) {
        uint16_t h = sf_cpu_f64_to_bf16(l[k]);
        memcpy((char *)p + 2 * k, &h, 2);
    }
}

SF_AI bool d4_needs_scalar_bf16(__m256d v) {
    __m256d a = _mm256_andnot_pd(_mm256_set1_pd(-0.0), v);
    __m256d tiny = _mm256_and_pd(_mm256_cmp_pd(a, _mm256_set1_pd(0x1p-126), _CMP_LT_OQ),
                                 _mm256_cmp_pd(a, _mm256_setzero_pd(), _CMP_GT_OQ));
    return _mm256_movemask_pd(tiny) != 0;
}

SF_AI void d4_store(void *p, __m256d v, scanfuse_dtype dt, bool nt) {
    switch (dt) {
    case SCANFUSE_FLOAT16: {
        __m128 f = d4_to_f32_odd(v);
        __m128i h = _mm_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        /* NaN lanes: sign | 0x7E00, branch-free (data with NaN would take a slow path
         * on every vector otherwise) */
        __m128i nan = _mm_castps_si128(_mm_cmpunord_ps(f, f));
        nan = _mm_packs_epi32(nan, nan);
        __m128i canon = _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16((short)0x8000)), _mm_set1_epi16(0x7E00));
        h = _mm_blendv_epi8(h, canon, nan);
        _mm_storel_epi64((__m128i *)p, h);
        return;
    }
    case SCANFUSE_BFLOAT16: {
        if (d4_needs_scalar_bf16(v)) {
            d4_store_bf16_scalar(p, v);
            return;
        }
        __m128 f = d4_to_f32_odd(v);
        __m128i r = f32x4_to_bf16(f);
        /* NaN lanes (the rounding add may carry out of them): sign | 0x7FC0 */
        __m128i nan = _mm_castps_si128(_mm_cmpunord_ps(f, f));
        __m128i canon = _mm_or_si128(_mm_and_si128(_mm_srli_epi32(_mm_castps_si128(f), 16), _mm_set1_epi32(0x8000)),
                                     _mm_set1_epi32(0x7FC0));
        r = _mm_blendv_epi8(r, canon, nan);
        _mm_storel_epi64((__m128i *)p, _mm_packus_epi32(r, r));
        return;
    }
    case SCANFUSE_FLOAT32: {
        __m128 f = _mm256_cvtpd_ps(v);
        if (nt && ((uintptr_t)p & 15) == 0) _mm_stream_ps((float *)p, f);
        else _mm_storeu_ps((float *)p, f);
        return;
    }
    default:
        if (nt && ((uintptr_t)p & 31) == 0) _mm256_stream_pd((double *)p, v);
        else _mm256_storeu_pd((double *)p, v);
        return;
    }
}

/* ---- broadcast doubles ---- */
SF_AI vb vb_set(double d) { return _mm256_set1_pd(d); }
SF_AI vb vb_add(vb a, vb b) { return _mm256_add_pd(a, b); }
SF_AI vb vb_sub(vb a, vb b) { return _mm256_sub_pd(a, b); }
SF_AI vb vb_finite_or_zero(vb t, vb e) {
    __m256d a = _mm256_andnot_pd(_mm256_set1_pd(-0.0), t);
    return _mm256_and_pd(_mm256_cmp_pd(a, _mm256_set1_pd(INFINITY), _CMP_LT_OQ), e);
}
SF_AI double vb_get(vb a) { return _mm256_cvtsd_f64(a); }

/* ---- 8 doubles ---- */
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
    a = _mm256_add_pd(a, _mm256_blend_pd(nz, _mm256_permute4x64_pd(a, 0x55), 0xC)); /* L2 */
    c = _mm256_add_pd(c, _mm256_blend_pd(nz, _mm256_permute4x64_pd(c, 0x55), 0xC));
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
    int64_t es = sf_scan_es(dt);
    if (dt == SCANFUSE_FLOAT32) {
        __m256 f = _mm256_loadu_ps((const float *)p);
        return (vd){_mm256_cvtps_pd(_mm256_castps256_ps128(f)), _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1))};
    }
    return (vd){d4_load(p, dt), d4_load((const char *)p + 4 * es, dt)};
}
SF_AI void vd_store(void *p, vd v, scanfuse_dtype dt, bool nt) {
    if (dt == SCANFUSE_FLOAT32) {
        __m256 f = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(v.lo)),
                                        _mm256_cvtpd_ps(v.hi), 1);
        if (nt && ((uintptr_t)p & 31) == 0) _mm256_stream_ps((float *)p, f);
        else _mm256_storeu_ps((float *)p, f);
        return;
    }
    int64_t es = sf_scan_es(dt);
    d4_store(p, v.lo, dt, nt);
    d4_store((char *)p + 4 * es, v.hi, dt, nt);
}

/* ---- column vectors: 4 doubles ---- */
SF_AI vc vc_set(double d) { return _mm256_set1_pd(d); }
SF_AI vc vc_add(vc a, vc b) { return _mm256_add_pd(a, b); }
SF_AI vc vc_sub(vc a, vc b) { return _mm256_sub_pd(a, b); }
SF_AI vc vc_finite_or_zero(vc t, vc e) { return vb_finite_or_zero(t, e); }
SF_AI vc vc_load_lanes(const double *l) { return _mm256_loadu_pd(l); }
SF_AI void vc_store_lanes(double *l, vc v) { _mm256_storeu_pd(l, v); }
SF_AI vc vc_load(const void *p, scanfuse_dtype dt) { return d4_load(p, dt); }
SF_AI void vc_store(void *p, vc v, scanfuse_dtype dt, bool nt) { d4_store(p, v, dt, nt); }

/* ---- 8 int64 ---- */
SF_AI qb qb_set(int64_t v) { return _mm256_set1_epi64x(v); }
SF_AI qb qb_add(qb a, qb b) { return _mm256_add_epi64(a, b); }
SF_AI int64_t qb_get(qb a) { return _mm256_extract_epi64(a, 0); }
SF_AI vq vq_set(int64_t v) { return (vq){_mm256_set1_epi64x(v), _mm256_set1_epi64x(v)}; }
SF_AI vq vq_add(vq a, vq b) { return (vq){_mm256_add_epi64(a.lo, b.lo), _mm256_add_epi64(a.hi, b.hi)}; }
SF_AI vq vq_addb(vq a, qb b) { return (vq){_mm256_add_epi64(a.lo, b), _mm256_add_epi64(a.hi, b)}; }
SF_AI __m256i q4_prefix(__m256i x) {
    const __m256i z = _mm256_setzero_si256();
    x = _mm256_add_epi64(x, _mm256_blend_epi32(_mm256_permute4x64_epi64(x, 0x90), z, 0x03));
    x = _mm256_add_epi64(x, _mm256_blend_epi32(_mm256_permute4x64_epi64(x, 0x40), z, 0x0F));
    return x;
}
SF_AI vq vq_prefix(vq x) {
    __m256i a = q4_prefix(x.lo), c = q4_prefix(x.hi);
    return (vq){a, _mm256_add_epi64(c, _mm256_permute4x64_epi64(a, 0xFF))};
}
SF_AI qb vq_last(vq y) { return _mm256_permute4x64_epi64(y.hi, 0xFF); }
SF_AI qb vq_sum(vq x) {
    __m256i t = _mm256_add_epi64(x.lo, x.hi);
    t = _mm256_add_epi64(t, _mm256_permute4x64_epi64(t, 0x4E));
    return _mm256_add_epi64(t, _mm256_shuffle_epi32(t, 0x4E));
}
SF_AI vq vq_rev(vq x) {
    return (vq){_mm256_permute4x64_epi64(x.hi, 0x1B), _mm256_permute4x64_epi64(x.lo, 0x1B)};
}
SF_AI vq vq_load_lanes(const int64_t *l) {
    return (vq){_mm256_loadu_si256((const __m256i *)l), _mm256_loadu_si256((const __m256i *)(l + 4))};
}
SF_AI void vq_store_lanes(int64_t *l, vq v) {
    _mm256_storeu_si256((__m256i *)l, v.lo);
    _mm256_storeu_si256((__m256i *)(l + 4), v.hi);
}
SF_AI vq vq_load(const void *p, scanfuse_dtype dt) {
    const char *c = (const char *)p;
    switch (dt) {
    case SCANFUSE_BOOL: case SCANFUSE_UINT8: {
        int32_t w0, w1;
        memcpy(&w0, c, 4);
        memcpy(&w1, c + 4, 4);
        __m256i a = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(w0)), b = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(w1));
        if (dt == SCANFUSE_BOOL) {
            const __m256i one = _mm256_set1_epi64x(1);
            a = _mm256_min_epu32(a, one);
            b = _mm256_min_epu32(b, one);
        }
        return (vq){a, b};
    }
    case SCANFUSE_INT8: {
        int32_t w0, w1;
        memcpy(&w0, c, 4);
        memcpy(&w1, c + 4, 4);
        return (vq){_mm256_cvtepi8_epi64(_mm_cvtsi32_si128(w0)), _mm256_cvtepi8_epi64(_mm_cvtsi32_si128(w1))};
    }
    case SCANFUSE_INT16:
        return (vq){_mm256_cvtepi16_epi64(_mm_loadl_epi64((const __m128i *)c)),
                    _mm256_cvtepi16_epi64(_mm_loadl_epi64((const __m128i *)(c + 8)))};
    case SCANFUSE_INT32: {
        __m256i w = _mm256_loadu_si256((const __m256i *)c);
        return (vq){_mm256_cvtepi32_epi64(_mm256_castsi256_si128(w)),
                    _mm256_cvtepi32_epi64(_mm256_extracti128_si256(w, 1))};
    }
    default:
        return (vq){_mm256_loadu_si256((const __m256i *)c), _mm256_loadu_si256((const __m256i *)(c + 32))};
    }
}
SF_AI void vq_store(void *p, vq v, scanfuse_dtype dt, bool nt) {
    char *c = (char *)p;
    if (dt == SCANFUSE_INT64) {
        if (nt && ((uintptr_t)c & 31) == 0) {
            _mm256_stream_si256((__m256i *)c, v.lo);
            _mm256_stream_si256((__m256i *)(c + 32), v.hi);
        } else {
            _mm256_storeu_si256((__m256i *)c, v.lo);
            _mm256_storeu_si256((__m256i *)(c + 32), v.hi);
        }
        return;
    }
    /* the low 32 bits of each lane, in order */
    const __m256i pick = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    __m128i a = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(v.lo, pick));
    __m128i b = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(v.hi, pick));
    if (dt == SCANFUSE_INT32) {
        _mm_storeu_si128((__m128i *)c, a);
        _mm_storeu_si128((__m128i *)(c + 16), b);
        return;
    }
    uint32_t l[8];
    _mm_storeu_si128((__m128i *)l, a);
    _mm_storeu_si128((__m128i *)(l + 4), b);
    for (int k = 0; k < 8; k++) {
        if (dt == SCANFUSE_INT16) { uint16_t h = (uint16_t)l[k]; memcpy(c + 2 * k, &h, 2); }
        else { uint8_t y = (uint8_t)l[k]; memcpy(c + k, &y, 1); }
    }
}

/* ---- 8 int32 keys ---- */
SF_AI vk vk_set(int32_t v) { return _mm256_set1_epi32(v); }
SF_AI vk vk_iota(void) { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
SF_AI vk vk_add(vk a, vk b) { return _mm256_add_epi32(a, b); }
SF_AI vk vk_max(vk a, vk b) { return _mm256_max_epi32(a, b); }
/* max is idempotent, so shifting copies of earlier lanes in (instead of an identity)
 * leaves every prefix unchanged */
SF_AI vk vk_prefix_max(vk x) {
    x = _mm256_max_epi32(x, _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6)));
    x = _mm256_max_epi32(x, _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(0, 0, 0, 1, 2, 3, 4, 5)));
    x = _mm256_max_epi32(x, _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 2, 3)));
    return x;
}
SF_AI vk vk_bcast_last(vk x) { return _mm256_permutevar8x32_epi32(x, _mm256_set1_epi32(7)); }
SF_AI vk vk_shift_in(vk v, vk prev) {
    __m256i s = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6));
    return _mm256_blend_epi32(s, prev, 0x01);
}
SF_AI vk vk_select_ge(vk a, vk b, vk t, vk f) {
    return _mm256_blendv_epi8(t, f, _mm256_cmpgt_epi32(b, a));
}
SF_AI vk vk_select_gt(vk a, vk b, vk t, vk f) {
    return _mm256_blendv_epi8(f, t, _mm256_cmpgt_epi32(a, b));
}
SF_AI unsigned vk_special(vk m, int32_t zkey) {
    __m256i s = _mm256_or_si256(_mm256_cmpeq_epi32(m, _mm256_set1_epi32(zkey)),
                                _mm256_cmpeq_epi32(m, _mm256_set1_epi32(INT32_MAX)));
    return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(s));
}
SF_AI vk vk_rev(vk x) { return _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0)); }
SF_AI vk vk_load_lanes(const int32_t *l) { return _mm256_loadu_si256((const __m256i *)l); }
SF_AI void vk_store_lanes(int32_t *l, vk v) { _mm256_storeu_si256((__m256i *)l, v); }

SF_AI vk vk_key_bits(__m256i b, bool is_min) {
    __m256i m = _mm256_and_si256(b, _mm256_set1_epi32(0x7FFFFFFF));
    __m256i s = _mm256_srai_epi32(b, 31);
    __m256i k = _mm256_sub_epi32(_mm256_xor_si256(m, s), s); /* -m where negative */
    if (is_min) k = _mm256_xor_si256(k, _mm256_set1_epi32(-1));
    __m256i nan = _mm256_cmpgt_epi32(m, _mm256_set1_epi32(0x7F800000));
    return _mm256_blendv_epi8(k, _mm256_set1_epi32(INT32_MAX), nan);
}
SF_AI vk vk_load_key(const void *p, scanfuse_dtype dt, bool is_min) {
    const char *c = (const char *)p;
    __m256i v;
    switch (dt) {
    case SCANFUSE_FLOAT32: return vk_key_bits(_mm256_loadu_si256((const __m256i *)c), is_min);
    case SCANFUSE_FLOAT16:
        return vk_key_bits(_mm256_castps_si256(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)c))), is_min);
    case SCANFUSE_BFLOAT16:
        return vk_key_bits(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)c)), 16),
                           is_min);
    case SCANFUSE_INT32: v = _mm256_loadu_si256((const __m256i *)c); break;
    case SCANFUSE_INT16: v = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)c)); break;
    case SCANFUSE_INT8: v = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)c)); break;
    case SCANFUSE_UINT8: v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)c)); break;
    default: /* bool */
        v = _mm256_min_epu32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)c)), _mm256_set1_epi32(1));
        break;
    }
    return is_min ? _mm256_xor_si256(v, _mm256_set1_epi32(-1)) : v;
}

SF_AI void vk_store_val(void *p, vk keys, scanfuse_dtype dt, bool is_min, bool nt) {
    char *c = (char *)p;
    __m256i k = is_min ? _mm256_xor_si256(keys, _mm256_set1_epi32(-1)) : keys;
    if (!sf_dtype_is_float(dt)) {
        if (dt == SCANFUSE_INT32) {
            if (nt && ((uintptr_t)c & 31) == 0) _mm256_stream_si256((__m256i *)c, k);
            else _mm256_storeu_si256((__m256i *)c, k);
            return;
        }
        int32_t l[8];
        _mm256_storeu_si256((__m256i *)l, k);
        for (int j = 0; j < 8; j++) {
            if (dt == SCANFUSE_INT16) { int16_t h = (int16_t)l[j]; memcpy(c + 2 * j, &h, 2); }
            else { uint8_t y = (uint8_t)l[j]; memcpy(c + j, &y, 1); }
        }
        return;
    }
    __m256i s = _mm256_srai_epi32(k, 31);
    __m256i m = _mm256_sub_epi32(_mm256_xor_si256(k, s), s);
    __m256i bits = _mm256_or_si256(m, _mm256_and_si256(s, _mm256_set1_epi32((int32_t)0x80000000u)));
    switch (dt) {
    case SCANFUSE_FLOAT32:
        if (nt && ((uintptr_t)c & 31) == 0) _mm256_stream_si256((__m256i *)c, bits);
        else _mm256_storeu_si256((__m256i *)c, bits);
        return;
    case SCANFUSE_FLOAT16:
        _mm_storeu_si128((__m128i *)c, _mm256_cvtps_ph(_mm256_castsi256_ps(bits), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        return;
    default: { /* bfloat16: the high halves, exactly */
        __m256i h = _mm256_srli_epi32(bits, 16);
        __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        _mm_storeu_si128((__m128i *)c, packed);
        return;
    }
    }
}

SF_AI void vk_store_idx(int64_t *p, vk rel, int64_t base, int64_t dir, int64_t carry,
                                bool nt) {
    __m256i r0 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(rel));
    __m256i r1 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(rel, 1));
    __m256i b = _mm256_set1_epi64x(base), cv = _mm256_set1_epi64x(carry), z = _mm256_setzero_si256();
    __m256i i0 = dir > 0 ? _mm256_add_epi64(b, r0) : _mm256_sub_epi64(b, r0);
    __m256i i1 = dir > 0 ? _mm256_add_epi64(b, r1) : _mm256_sub_epi64(b, r1);
    i0 = _mm256_blendv_epi8(i0, cv, _mm256_cmpgt_epi64(z, r0));
    i1 = _mm256_blendv_epi8(i1, cv, _mm256_cmpgt_epi64(z, r1));
    if (nt && ((uintptr_t)p & 31) == 0) {
        _mm256_stream_si256((__m256i *)p, i0);
        _mm256_stream_si256((__m256i *)(p + 4), i1);
    } else {
        _mm256_storeu_si256((__m256i *)p, i0);
        _mm256_storeu_si256((__m256i *)(p + 4), i1);
    }
}

#include "cpu_scan_body.h"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif /* SF_SCAN_X86 */
