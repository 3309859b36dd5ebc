/*
 * cpu_rows.c — whole-row kernels of the fused CPU path (cpu_fused.c): row copies that
 * can bypass the cache, and the weighted combine of a few rows,
 *
 *     out[h] = round( sum_j fl32(x_j[h] * w_j) ),  j = 0 .. k-1,
 *
 * which is what mul(rows, weights) -> sum over the k slots -> (cast) computes in the
 * MoE combine, in one pass instead of a pass per op.
 *
 * The combine gives the generic kernels' bytes (docs/OPS.md):
 *  - each product is a float32 multiply (correctly rounded, as the double product
 *    rounded once to float32 is);
 *  - the generic float sum is compensated (sf_cpu_sum2_add, then sf_cpu_sum2_result:
 *    the exact sum of the products rounded once to float32).  Here the products are
 *    summed in plain double (the same additions as the compensated sum's main chain)
 *    with a bound e on that sum's error: |s - exact| <= (k - 1) * 2^-53 * sum |p_j|,
 *    and the compensated value lies even closer to the exact sum.  When s - e and
 *    s + e round to the same float32 (compared bit for bit, so -0 and +0 differ), every
 *    value between them does too (rounding is monotonic), the exact sum and the
 *    compensated value included: that float is the generic result.  Otherwise (the sum
 *    lies within e of a rounding boundary: rare) that element is summed again with
 *    the compensated arithmetic itself.  e is taken generously, (k + 2) * 2^-50 times
 *    the float32 sum of |p_j| (itself within k * 2^-24 of the exact one), which also
 *    covers the rounding of s - e and s + e;
 *  - a sum that is not finite (a NaN or an infinity among the products, or an
 *    overflow) makes the kernel return false: the caller reruns the generic kernels,
 *    which give NaN payloads their own way;
 *  - one slot (k = 1): the compensated sum of one element is 0 + p (-0 becomes +0);
 *  - bfloat16 results round to nearest even from the float32 sum, as a cast does.
 *
 * Streaming: with `stream`, destinations are written with non-temporal stores (no
 * read-for-ownership of lines that are overwritten whole, and no eviction of the
 * data the tile still reads); the writer calls sf_cpu_stream_fence() before anything
 * else may read them.  Bytes are the same either way.
 *
 * bfloat16 rows into bfloat16 results (the MoE combine) have a kernel of their own
 * (pairs_body, pairs_avx512): float32 sums with an error bound, accepted when both
 * ends of the error interval round to the same bfloat16 (see "bfloat16 results"), in
 * even/odd element pairs; on AVX-512 with a bound from max |x_j| and sum |w_j|, and
 * repeated rows (the same row gathered by several slots) multiplied once by their
 * summed weights, with the absolute error terms that needs.  It can also copy the rows
 * it reads (the lazy rows of cpu_fused.c) from the same loads, so that those writes
 * overlap its arithmetic.
 *
 * The combine's loops are compiled for AVX-512, AVX2 and the baseline, picked at run
 * time (sf_cpu_rows_isa forces one, for tests); they hold IEEE float32/float64
 * arithmetic only, without contraction into fused multiply-adds (ISO C mode).  Every
 * result they return is the compensated sum's rounding (the fast paths only decide
 * when that is provable), so every variant gives the same bytes.
 */
#include "cpu.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#include <immintrin.h>
#define ROWS_SSE2 1
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define ROWS_X86_VARIANTS 1
#endif

#if defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define ROWS_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
#endif
#ifndef ROWS_CLONES
#define ROWS_CLONES
#endif

/* Outputs this large are not read back from the cache by a later kernel anyway
 * (about a quarter of the build machine's L3; tests set 0 to cover the streaming code). */
int64_t sf_cpu_rows_nt_min_bytes = (int64_t)8 << 20;

void sf_cpu_row_copy(void *dst, const void *src, size_t n, bool stream) {
#ifdef ROWS_SSE2
    if (stream) {
        char *d = dst;
        const char *s = src;
        size_t head = (16 - ((uintptr_t)d & 15)) & 15; /* stores need 16-byte alignment */
        if (head > n) head = n;
        memcpy(d, s, head);
        d += head;
        s += head;
        n -= head;
        for (; n >= 64; n -= 64, d += 64, s += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
            __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
            _mm_stream_si128((__m128i *)(void *)d, a);
            _mm_stream_si128((__m128i *)(void *)(d + 16), b);
            _mm_stream_si128((__m128i *)(void *)(d + 32), c);
            _mm_stream_si128((__m128i *)(void *)(d + 48), e);
        }
        for (; n >= 16; n -= 16, d += 16, s += 16)
            _mm_stream_si128((__m128i *)(void *)d, _mm_loadu_si128((const __m128i *)(const void *)s));
        memcpy(d, s, n);
        return;
    }
#else
    (void)stream;
#endif
    memcpy(dst, src, n);
}

void sf_cpu_stream_fence(void) {
#ifdef ROWS_SSE2
    _mm_sfence();
#endif
}

static inline float bf16_to_f32(uint16_t h) { return sf_cpu_f32_from_bits((uint32_t)h << 16); }

/* Element i of a row of float32 or bfloat16 as a float. */
static inline float row_at(const void *row, bool bf16, int64_t i) {
    if (bf16) {
        uint16_t h;
        memcpy(&h, (const char *)row + i * 2, 2);
        return bf16_to_f32(h);
    }
    float f;
    memcpy(&f, (const char *)row + i * 4, 4);
    return f;
}

/* The most rows one combine takes (the caller's own limit is the same). */
#define COMB_ROWS_MAX_K 64

/* Lanes of one register block: s and a stay in registers across the k rows. */
#define LANES 16
/* Elements per call of the block kernel: its results stay in L1. */
#define CHUNK 512

/* y[i] = the combine at elements off .. off + m - 1 (m <= CHUNK), bad[i] set where the
 * plain double sum is too close to a rounding boundary.  Returns the number of those,
 * or -1 when some sum is not finite. */
ROWS_CLONES
static int combine_chunk(const void *const *rows, bool bf16, const float *w, int k, int64_t off,
                         int64_t m, float *restrict y, unsigned char *restrict bad) {
    int nonfinite = 0, nbad = 0;
    const double scale = (double)(k + 2) * 0x1p-50;
    if (k == 1) {
        const float w0 = w[0];
        const char *r0 = (const char *)rows[0];
        for (int64_t i = 0; i < m; i++) {
            float p = row_at(r0, bf16, off + i) * w0;
            float v = 0.0f + p;
            nonfinite |= !(v - v == 0.0f);
            y[i] = v;
        }
        return nonfinite ? -1 : 0;
    }
    for (int64_t i0 = 0; i0 < m; i0 += LANES) {
        int64_t n = m - i0 < LANES ? m - i0 : LANES;
        double s[LANES];
        float a[LANES];
        for (int l = 0; l < LANES; l++) {
            s[l] = 0.0;
            a[l] = 0.0f;
        }
        for (int j = 0; j < k; j++) {
            const char *r = (const char *)rows[j];
            const float wj = w[j];
            if (n == LANES) {
                for (int l = 0; l < LANES; l++) {
                    float p = row_at(r, bf16, off + i0 + l) * wj;
                    s[l] += (double)p;
                    a[l] += fabsf(p);
                }
            } else {
                for (int l = 0; l < n; l++) {
                    float p = row_at(r, bf16, off + i0 + l) * wj;
                    s[l] += (double)p;
                    a[l] += fabsf(p);
                }
            }
        }
        float lo[LANES];
        unsigned char b[LANES];
        for (int l = 0; l < LANES; l++) {
            double e = (double)a[l] * scale;
            float hi = (float)(s[l] + e);
            lo[l] = (float)(s[l] - e);
            nonfinite |= !(s[l] - s[l] == 0.0);
            b[l] = sf_cpu_f32_bits(lo[l]) != sf_cpu_f32_bits(hi);
            nbad += b[l];
        }
        for (int l = 0; l < n; l++) {
            y[i0 + l] = lo[l];
            bad[i0 + l] = b[l];
        }
    }
    return nonfinite ? -1 : nbad;
}

/* ---- bfloat16 results: float32 sums are enough ----
 * A bfloat16 result is bf16(f32(exact sum)), a monotonic function g of the exact sum.
 * The products are summed in float32 (s) along with their magnitudes (a), so that the
 * exact sum lies within d = (2k + 4) * 2^-24 * a of s: the recursive float32 sum errs
 * by at most (k - 1) * 2^-24 * sum |p_j| (to first order), a is within k * 2^-24 of
 * sum |p_j|, and the rest covers the rounding of d and of s -/+ d.  When g(s - d) and
 * g(s + d) are the same bfloat16 (s - d and s + d are floats, so g is one rounding),
 * that is the result; the compensated sum the generic kernels compute lies in the same
 * interval (it is within 2^-100 * sum |p_j| of the exact sum).  Otherwise (within d of
 * a bfloat16 rounding boundary: about (4k + 8) * 2^-16 of the elements) the element is
 * summed again with the compensated arithmetic.  Sixteen lanes per vector (GCC vector
 * extensions: plain float32 and integer arithmetic, lowered per clone). */
typedef float rv_f __attribute__((vector_size(64)));
typedef uint32_t rv_u __attribute__((vector_size(64)));
typedef uint16_t rv_h __attribute__((vector_size(32)));
#define RV 16

/* (Helpers pass vectors by pointer, never by value: the ABI of a vector argument
 * would differ between the clones; they are always inlined anyway.) */
#define RV_INLINE static inline __attribute__((always_inline))

/* 16 elements of a float32 or bfloat16 row from element i, as floats. */
RV_INLINE void load16(rv_f *v, const char *row, bool bf16, int64_t i) {
    if (bf16) {
        rv_h h;
        memcpy(&h, row + i * 2, sizeof h);
        *v = (rv_f)(__builtin_convertvector(h, rv_u) << 16);
    } else {
        memcpy(v, row + i * 4, sizeof *v);
    }
}

/* The bfloat16 bits of 16 floats, rounded to nearest even (NaN excluded). */
RV_INLINE void bf16_bits(rv_u *b, const rv_f *v) {
    rv_u u = (rv_u)*v;
    *b = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

/* Elements i .. i + 15 from their sums s and magnitudes a: their bfloat16 results, bad
 * lanes (nonzero: near a rounding boundary) and non-finite lanes (bit 31 set).  No
 * vector comparisons: GCC lowers their masks element by element on some targets. */
RV_INLINE void bf16_check(const rv_f *s, const rv_f *a, float c, uint16_t *restrict h,
                          uint16_t *restrict bad, rv_u *anybad, rv_u *nonfinite) {
    rv_f d = *a * c, l = *s - d, u = *s + d;
    rv_u lo, hi;
    bf16_bits(&lo, &l);
    bf16_bits(&hi, &u);
    rv_u ne = lo ^ hi; /* both below 2^16 */
    *anybad |= ne;
    *nonfinite |= (((rv_u)*s & 0x7F800000u) + 0x00800000u) & 0x80000000u;
    rv_h out = __builtin_convertvector(lo, rv_h), b = __builtin_convertvector(ne, rv_h);
    memcpy(h, &out, sizeof out);
    memcpy(bad, &b, sizeof b);
}

/* One element of a bfloat16 combine, alone (chunk tails): the float32 sum of its k
 * products rounded to bfloat16; *bad when s - c*sum|p| and s + c*sum|p| round to different
 * bfloat16 (the element must be summed again), *nf set when the sum is not finite. */
static inline uint16_t tail_elem(const void *const *rows, bool bf16, const float *w, int k, float c,
                                 int64_t i, bool *bad, int *nf) {
    float s = 0.0f, a = 0.0f;
    for (int j = 0; j < k; j++) {
        float p = row_at(rows[j], bf16, i) * w[j];
        s += p;
        a += fabsf(p);
    }
    float d = a * c;
    uint32_t lo = sf_cpu_f32_bits(s - d), hi = sf_cpu_f32_bits(s + d);
    lo = (lo + 0x7FFFu + ((lo >> 16) & 1u)) >> 16;
    hi = (hi + 0x7FFFu + ((hi >> 16) & 1u)) >> 16;
    *bad = lo != hi;
    *nf |= (sf_cpu_f32_bits(s) & 0x7F800000u) == 0x7F800000u;
    return (uint16_t)lo;
}

/* The bfloat16 combine at elements off .. off + m - 1 (m <= CHUNK, k >= 2) into h[];
 * bad[i] nonzero where the element must be summed again.  Returns the number of bad
 * elements (at least 1 when there are any), or -1 when some sum is not finite. */
ROWS_CLONES
static int combine_chunk_bf16(const void *const *rows, bool bf16, const float *w, int k,
                              int64_t off, int64_t m, uint16_t *restrict h,
                              uint16_t *restrict bad) {
    const float c = (float)(2 * k + 4) * 0x1p-24f;
    rv_u anybad = {0}, nonfinite = {0};
    int64_t i0 = 0;
    for (; i0 + 2 * RV <= m; i0 += 2 * RV) {
        rv_f s0 = {0}, s1 = {0}, a0 = {0}, a1 = {0};
        for (int j = 0; j < k; j++) {
            const char *r = (const char *)rows[j];
            const float wj = w[j];
            rv_f p0, p1;
            load16(&p0, r, bf16, off + i0);
            load16(&p1, r, bf16, off + i0 + RV);
            p0 *= wj;
            p1 *= wj;
            s0 += p0;
            s1 += p1;
            a0 += (rv_f)((rv_u)p0 & 0x7FFFFFFFu);
            a1 += (rv_f)((rv_u)p1 & 0x7FFFFFFFu);
        }
        bf16_check(&s0, &a0, c, h + i0, bad + i0, &anybad, &nonfinite);
        bf16_check(&s1, &a1, c, h + i0 + RV, bad + i0 + RV, &anybad, &nonfinite);
    }
    int nbad = 0, nf = 0;
    for (int l = 0; l < RV; l++) {
        nbad |= anybad[l] != 0;
        nf |= nonfinite[l] != 0;
    }
    for (int64_t i = i0; i < m; i++) { /* the tail, one element at a time */
        bool b;
        h[i] = tail_elem(rows, bf16, w, k, c, off + i, &b, &nf);
        bad[i] = b;
        nbad |= b;
    }
    return nf ? -1 : nbad;
}

/* ---- bfloat16 rows and results: the MoE combine's own kernel ----
 * The same float32 sums and bound as combine_chunk_bf16, with less work per product:
 * 64 bytes of a row (32 bfloat16) are loaded as 16 uint32 pairs, and the even elements
 * are the pairs shifted left by 16, the odd ones the pairs with their low half cleared
 * (two integer operations per 32 elements instead of widening conversions); the sums
 * stay in that even/odd order and the results are packed back into pairs (k >= 2).
 *
 * The block loop can also copy the rows it reads (the lazy rows of the MoE routing,
 * each a copy of a source row) with the same loads: their stores then leave one line at
 * a time between the arithmetic, so the writes to memory overlap the products instead
 * of running before them.  The kernel is compiled for AVX-512, AVX2 and the baseline
 * (rows_isa picks one; a test hook forces the others): the arithmetic is the same IEEE
 * float32 and integer operations in the same order in each, and a result is returned
 * only when it provably equals the compensated sum's, so every variant gives the same
 * bytes. */

/* Picks the variant: 0 = the best the CPU has, 1 = baseline, 2 = AVX2, 3 = AVX-512
 * (tests set 1 and 2 to run the other variants on an AVX-512 machine). */
int sf_cpu_rows_isa = 0;

/* Copies 64 bytes (16-byte aligned dst), past the cache with `stream`.  SSE2 stores: the
 * baseline of x86-64, so every variant has them; a line written by four consecutive
 * stores leaves the write-combining buffer whole. */
RV_INLINE void copy64(char *dst, const char *src, bool stream) {
#ifdef ROWS_SSE2
    if (stream) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)src);
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(src + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(src + 48));
        _mm_stream_si128((__m128i *)(void *)dst, a);
        _mm_stream_si128((__m128i *)(void *)(dst + 16), b);
        _mm_stream_si128((__m128i *)(void *)(dst + 32), c);
        _mm_stream_si128((__m128i *)(void *)(dst + 48), e);
        return;
    }
#else
    (void)stream;
#endif
    memcpy(dst, src, 64);
}

/* The bfloat16 bits of a float's bits in the high half of the result, rounded to nearest
 * even (NaN excluded). */
RV_INLINE void round_hi(rv_u *u) {
    *u = *u + 0x7FFFu + ((*u >> 16) & 1u);
}

/* The elements i0 .. m - 1 of a chunk after its last whole block (the row's last chunk
 * only), one at a time with the bound of pairs_body; nbad and nf carry the block
 * loop's findings, and the result is pairs_body's. */
static int pairs_tail(const char *const *rows, const float *w, int k, float c, int64_t off,
                      int64_t i0, int64_t m, uint32_t *restrict h, uint32_t *restrict bad,
                      int nbad, int nf) {
    if (i0 < m) {
        uint16_t th[2 * RV], tb[2 * RV];
        for (int64_t i = i0; i < m; i++) {
            bool b;
            th[i - i0] = tail_elem((const void *const *)rows, true, w, k, c, off + i, &b, &nf);
            tb[i - i0] = b;
            nbad |= b;
        }
        memcpy(h + i0 / 2, th, (size_t)(m - i0) * 2);
        memcpy(bad + i0 / 2, tb, (size_t)(m - i0) * 2);
    }
    return nf ? -1 : nbad;
}

/* Elements off .. off + m - 1 (m <= CHUNK) of the combine of k bfloat16 rows into
 * bfloat16: h[] gets the results as pairs (element 2i in the low half of h[i]), bad[]
 * nonzero halves where the element must be summed again.  copy[j], when not NULL, gets
 * whole 64-byte aligned lines of rows[j]: with h_j = the bytes before copy[j]'s first
 * line boundary, line L is bytes 64 L + h_j .. 64 L + h_j + 63 of the row, and the
 * block at byte b writes the lines its loads have passed (up to line b / 64 - 1) from
 * line *cnext on, advancing *cnext (lines written whole by consecutive stores leave the
 * write-combining buffers whole: a line split between two blocks, with the other rows'
 * stores in between, goes out in pieces, several times slower: 140 ms instead of 45
 * for the DeepSeek example); the caller copies the heads [0, h_j) before and the bytes
 * from line *cnext on after the row.  Returns the number of bad pairs (at least 1 when
 * there are any), or -1 when some sum is not finite. */
RV_INLINE int pairs_body(const char *const *rows, const float *w, int k, float c, int64_t off,
                         int64_t m, uint32_t *restrict h, uint32_t *restrict bad,
                         char *const *copy, bool cstream, int64_t *cnext) {
    rv_u anybad = {0}, nonfinite = {0};
    int64_t i0 = 0;
    for (; i0 + 2 * RV <= m; i0 += 2 * RV) {
        rv_f se = {0}, so = {0}, ae = {0}, ao = {0};
        int64_t b = (off + i0) * 2;
        for (int j = 0; j < k; j++) {
            const char *src = rows[j] + b;
            rv_u u;
            memcpy(&u, src, sizeof u);
            const float wj = w[j];
            rv_f pe = (rv_f)(u << 16) * wj, po = (rv_f)(u & 0xFFFF0000u) * wj;
            se += pe;
            so += po;
            ae += (rv_f)((rv_u)pe & 0x7FFFFFFFu);
            ao += (rv_f)((rv_u)po & 0x7FFFFFFFu);
        }
        if (*cnext <= b / 64 - 1) { /* the line before this block */
            for (int j = 0; j < k; j++) {
                if (!copy[j]) continue;
                int64_t q = 64 * *cnext + (int64_t)(-(uintptr_t)copy[j] & 63);
                copy64(copy[j] + q, rows[j] + q, cstream);
            }
            ++*cnext;
        }
        rv_f de = ae * c, dO = ao * c;
        rv_u le = (rv_u)(se - de), he = (rv_u)(se + de), lo = (rv_u)(so - dO),
             ho = (rv_u)(so + dO);
        round_hi(&le);
        round_hi(&he);
        round_hi(&lo);
        round_hi(&ho);
        rv_u out = (lo & 0xFFFF0000u) | (le >> 16);
        rv_u bd = ((le ^ he) >> 16) | ((lo ^ ho) & 0xFFFF0000u);
        anybad |= bd;
        nonfinite |= ((((rv_u)se & 0x7F800000u) + 0x00800000u) |
                      (((rv_u)so & 0x7F800000u) + 0x00800000u)) &
                     0x80000000u;
        memcpy(h + i0 / 2, &out, sizeof out);
        memcpy(bad + i0 / 2, &bd, sizeof bd);
    }
    int nbad = 0, nf = 0;
    for (int l = 0; l < RV; l++) {
        nbad |= anybad[l] != 0;
        nf |= nonfinite[l] != 0;
    }
    return pairs_tail(rows, w, k, c, off, i0, m, h, bad, nbad, nf);
}

typedef int (*pairs_fn)(const char *const *, const float *, int, float, float, int64_t,
                        int64_t, uint32_t *restrict, uint32_t *restrict, char *const *, bool,
                        int64_t *);

static int pairs_base(const char *const *rows, const float *w, int k, float c, float cw,
                      int64_t off, int64_t m, uint32_t *restrict h, uint32_t *restrict bad,
                      char *const *copy, bool cstream, int64_t *cnext) {
    (void)cw;
    return pairs_body(rows, w, k, c, off, m, h, bad, copy, cstream, cnext);
}

#ifdef ROWS_X86_VARIANTS
__attribute__((target("avx2,bmi,bmi2,popcnt")))
static int pairs_avx2(const char *const *rows, const float *w, int k, float c, float cw,
                      int64_t off, int64_t m, uint32_t *restrict h, uint32_t *restrict bad,
                      char *const *copy, bool cstream, int64_t *cnext) {
    (void)cw;
    return pairs_body(rows, w, k, c, off, m, h, bad, copy, cstream, cnext);
}

/* The AVX-512 kernels (see pairs_avx512). */
#define ROWS_AVX512                                                                         \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,bmi,bmi2,popcnt")))

/* The even and the odd elements of 32 bfloat16 (16 pairs) as floats. */
ROWS_AVX512 static inline __attribute__((always_inline)) __m512 even512(__m512i u) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
}
ROWS_AVX512 static inline __attribute__((always_inline)) __m512 odd512(__m512i u) {
    return _mm512_castsi512_ps(_mm512_and_si512(u, _mm512_set1_epi32((int)0xFFFF0000u)));
}

/* copy64 in one 64-byte store (dst is 64-byte aligned). */
ROWS_AVX512 static inline __attribute__((always_inline)) void copy64_512(char *dst, const char *src,
                                                                        bool stream) {
    __m512i v = _mm512_loadu_si512((const void *)src);
    if (stream) _mm512_stream_si512((void *)dst, v);
    else _mm512_store_si512((void *)dst, v);
}

/* One block's results from its sums se, so and maxima mx (pairs_body's packing), with
 * d = fl(M * cw) + A where M != 0 (see pairs_avx512).  dmax keeps the largest d. */
ROWS_AVX512 static inline __attribute__((always_inline)) void
finish512(__m512 se, __m512 so, __m512i mx, __m512 cwv, __m512 av, uint32_t *h, uint32_t *bad,
          __m512i *anybad, __m512i *nonfinite, __m512i *dmax) {
    const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u), half = _mm512_set1_epi32(0x7FFF);
    const __m512i one = _mm512_set1_epi32(1), expo = _mm512_set1_epi32(0x7F800000);
    const __m512i eone = _mm512_set1_epi32(0x00800000);
    __m512i me = _mm512_slli_epi32(mx, 16), mo = _mm512_and_si512(mx, hi);
    __m512 de = _mm512_mul_ps(_mm512_castsi512_ps(me), cwv);
    __m512 dO = _mm512_mul_ps(_mm512_castsi512_ps(mo), cwv);
    de = _mm512_mask_add_ps(de, _mm512_test_epi32_mask(me, me), de, av);
    dO = _mm512_mask_add_ps(dO, _mm512_test_epi32_mask(mo, mo), dO, av);
    *dmax = _mm512_max_epu32(*dmax, _mm512_max_epu32(_mm512_castps_si512(de),
                                                     _mm512_castps_si512(dO)));
    __m512i r[4];
    r[0] = _mm512_castps_si512(_mm512_sub_ps(se, de));
    r[1] = _mm512_castps_si512(_mm512_add_ps(se, de));
    r[2] = _mm512_castps_si512(_mm512_sub_ps(so, dO));
    r[3] = _mm512_castps_si512(_mm512_add_ps(so, dO));
    for (int e = 0; e < 4; e++) /* round_hi */
        r[e] = _mm512_add_epi32(_mm512_add_epi32(r[e], half),
                                _mm512_and_si512(_mm512_srli_epi32(r[e], 16), one));
    __m512i out = _mm512_or_si512(_mm512_and_si512(r[2], hi), _mm512_srli_epi32(r[0], 16));
    __m512i bd = _mm512_or_si512(_mm512_srli_epi32(_mm512_xor_si512(r[0], r[1]), 16),
                                 _mm512_and_si512(_mm512_xor_si512(r[2], r[3]), hi));
    *anybad = _mm512_or_si512(*anybad, bd);
    __m512i fe = _mm512_add_epi32(_mm512_and_si512(_mm512_castps_si512(se), expo), eone);
    __m512i fo = _mm512_add_epi32(_mm512_and_si512(_mm512_castps_si512(so), expo), eone);
    *nonfinite = _mm512_or_si512(*nonfinite, _mm512_or_si512(fe, fo));
    _mm512_storeu_si512((void *)h, out);
    _mm512_storeu_si512((void *)bad, bd);
}

/* Copies lines *cnext .. last of the rows that have a copy (see pairs_body). */
ROWS_AVX512 static inline __attribute__((always_inline)) void
lines512(const char *const *rows, char *const *copy, const int64_t *cofs, int k, int64_t last,
         int64_t *cnext, bool cstream) {
    if (*cnext > last) return;
    for (int j = 0; j < k; j++) {
        if (!copy[j]) continue;
        for (int64_t L = *cnext; L <= last; L++)
            copy64_512(copy[j] + 64 * L + cofs[j], rows[j] + 64 * L + cofs[j], cstream);
    }
    *cnext = last + 1;
}

/* One slot (pairs_avx512 with k = 1; the caller makes the copies): the generic sum of
 * one product is 0 + p, exact, so the result is p rounded to bfloat16, no bound. */
ROWS_AVX512
static int one_avx512(const char *row, float w, int64_t off, int64_t m, uint32_t *restrict h) {
    const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u), half = _mm512_set1_epi32(0x7FFF);
    const __m512i one = _mm512_set1_epi32(1), expo = _mm512_set1_epi32(0x7F800000);
    const __m512i eone = _mm512_set1_epi32(0x00800000);
    const __m512 wv = _mm512_set1_ps(w), zero = _mm512_setzero_ps();
    __m512i nonfinite = _mm512_setzero_si512();
    int64_t i0 = 0;
    for (; i0 + 2 * RV <= m; i0 += 2 * RV) {
        __m512i u = _mm512_loadu_si512((const void *)(row + (off + i0) * 2));
        __m512 se = _mm512_add_ps(zero, _mm512_mul_ps(even512(u), wv));
        __m512 so = _mm512_add_ps(zero, _mm512_mul_ps(odd512(u), wv));
        __m512i re = _mm512_castps_si512(se), ro = _mm512_castps_si512(so);
        __m512i fe = _mm512_add_epi32(_mm512_and_si512(re, expo), eone);
        __m512i fo = _mm512_add_epi32(_mm512_and_si512(ro, expo), eone);
        nonfinite = _mm512_or_si512(nonfinite, _mm512_or_si512(fe, fo));
        re = _mm512_add_epi32(_mm512_add_epi32(re, half),
                              _mm512_and_si512(_mm512_srli_epi32(re, 16), one));
        ro = _mm512_add_epi32(_mm512_add_epi32(ro, half),
                              _mm512_and_si512(_mm512_srli_epi32(ro, 16), one));
        _mm512_storeu_si512((void *)(h + i0 / 2),
                            _mm512_or_si512(_mm512_and_si512(ro, hi), _mm512_srli_epi32(re, 16)));
    }
    int nf = _mm512_test_epi32_mask(nonfinite, _mm512_set1_epi32((int)0x80000000u)) != 0;
    uint16_t th[2 * RV];
    for (int64_t i = i0; i < m; i++) { /* the tail */
        float p = 0.0f + row_at(row, true, off + i) * w;
        uint32_t u = sf_cpu_f32_bits(p);
        th[i - i0] = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
        nf |= (u & 0x7F800000u) == 0x7F800000u;
    }
    if (i0 < m) memcpy(h + i0 / 2, th, (size_t)(m - i0) * 2);
    return nf ? -1 : 0;
}

/* AVX-512: a cheaper bound, and repeated rows multiplied once.
 *
 * The bound: instead of summing |p_j| (two float operations per 16 products), the
 * kernel keeps M = max_j |x_j| per element (one 16-bit integer maximum per 32 elements)
 * and uses sum_j |x_j w_j| <= M * W with W = sum |w_j|.  The caller passes
 * cw >= (2k + 4) * 2^-24 * W, rounded up (-1 when W is out of the range where that
 * float is accurate: then the kernel is pairs_body), and d = fl(M * cw), plus A below.
 *
 * The sum: the R distinct rows among the k (rows[j] equal as pointers: in the MoE
 * routing, every slot of a token gathers a copy of the token's own row) are each
 * multiplied once, by W_r = the float sum of their slots' weights: s = sum_r fl(x_r W_r)
 * in float32, from +0.  With R = k these are the generic products and s is
 * pairs_body's sum.  Otherwise, against the exact sum S of the generic products
 * fl(x_j w_j): the products err by u = 2^-24 relative (or 2^-150 absolute, below 2^-126)
 * on both sides, the W_r sums by (m_r - 1) u, the sum over the rows by (R - 1) u, and
 * (R - 1) + max (m_r - 1) <= k - 1, so |s - S| <= (k + 1) u (1 + 2^-18) M W + 2k 2^-150:
 * fl(M * cw) covers the first term twice over, less 2^-150 from its own rounding, and
 * A = k 2^-148 the rest; A is left out where M = 0 (all rows are zeros there: the
 * products are zeros, s and S are +0, so d = 0 is exact) so that zero rows stay on the
 * fast path.  The bound assumes no generic product overflows, i.e. M * max|w_j| stays
 * below 2^128: the kernel gives up (-1) when some d exceeds 2^100 (then M W > 2^104).
 * Every zero that could come out with the wrong sign lies in an interval that also
 * holds values of the other sign, which round to the other bfloat16 zero: summed again.
 *
 * The rest is pairs_body's acceptance test, two blocks at a time (each sum's chain of
 * dependent additions then has an independent twin: the chains' latency, not the
 * operations, bounds a one-block loop).  The copies go out COPY_RUN lines at a time
 * per row: runs of a few lines to one row write to memory faster than single lines
 * scattered over the k rows (measured on the build machine: 2 and 16 lines slower). */
#define COPY_RUN 4
ROWS_AVX512
static int pairs_avx512(const char *const *rows, const float *w, int k, float c, float cw,
                        int64_t off, int64_t m, uint32_t *restrict h, uint32_t *restrict bad,
                        char *const *copy, bool cstream, int64_t *cnext) {
    if (k == 1) return one_avx512(rows[0], w[0], off, m, h);
    if (cw < 0.0f) return pairs_body(rows, w, k, c, off, m, h, bad, copy, cstream, cnext);
    const __m512i mag = _mm512_set1_epi16(0x7FFF);
    const __m512 cwv = _mm512_set1_ps(cw);
    __m512i anybad = _mm512_setzero_si512(), nonfinite = _mm512_setzero_si512();
    __m512i dmax = _mm512_setzero_si512();
    /* the copies: line L of row j is at byte 64 L + cofs[j] */
    int64_t cofs[COMB_ROWS_MAX_K];
    bool any = false;
    for (int j = 0; j < k; j++) {
        cofs[j] = (int64_t)(-(uintptr_t)copy[j] & 63);
        any |= copy[j] != NULL;
    }
    /* the distinct rows and their summed weights (slot order) */
    const char *dr[COMB_ROWS_MAX_K];
    float wr[COMB_ROWS_MAX_K];
    int R = 0;
    for (int j = 0; j < k; j++) {
        int r = 0;
        while (r < R && dr[r] != rows[j]) r++;
        if (r == R) {
            dr[R] = rows[j];
            wr[R++] = w[j];
        } else {
            wr[r] += w[j];
        }
    }
    if (R == k) { /* no repeats: the generic products themselves, no A */
        for (int j = 0; j < k; j++) wr[j] = w[j];
    }
    const __m512 av = _mm512_set1_ps(R == k ? 0.0f : (float)k * 0x1p-148f);
    int64_t i0 = 0;
    for (; i0 + 4 * RV <= m; i0 += 4 * RV) {
        __m512 se0 = _mm512_setzero_ps(), so0 = se0, se1 = se0, so1 = se0;
        __m512i mx0 = _mm512_setzero_si512(), mx1 = mx0;
        int64_t b = (off + i0) * 2;
        for (int r = 0; r < R; r++) {
            __m512 wj = _mm512_set1_ps(wr[r]);
            __m512i u0 = _mm512_loadu_si512((const void *)(dr[r] + b));
            __m512i u1 = _mm512_loadu_si512((const void *)(dr[r] + b + 64));
            se0 = _mm512_add_ps(se0, _mm512_mul_ps(even512(u0), wj));
            se1 = _mm512_add_ps(se1, _mm512_mul_ps(even512(u1), wj));
            so0 = _mm512_add_ps(so0, _mm512_mul_ps(odd512(u0), wj));
            so1 = _mm512_add_ps(so1, _mm512_mul_ps(odd512(u1), wj));
            mx0 = _mm512_max_epu16(mx0, _mm512_and_si512(u0, mag));
            mx1 = _mm512_max_epu16(mx1, _mm512_and_si512(u1, mag));
        }
        /* the lines loaded whole (up to byte b + 127: line b / 64), in runs */
        if (any && b / 64 - *cnext + 1 >= COPY_RUN)
            lines512(rows, copy, cofs, k, b / 64, cnext, cstream);
        finish512(se0, so0, mx0, cwv, av, h + i0 / 2, bad + i0 / 2, &anybad, &nonfinite, &dmax);
        finish512(se1, so1, mx1, cwv, av, h + i0 / 2 + RV, bad + i0 / 2 + RV, &anybad,
                  &nonfinite, &dmax);
    }
    if (i0 + 2 * RV <= m) { /* one more block */
        __m512 se = _mm512_setzero_ps(), so = se;
        __m512i mx = _mm512_setzero_si512();
        int64_t b = (off + i0) * 2;
        for (int r = 0; r < R; r++) {
            __m512 wj = _mm512_set1_ps(wr[r]);
            __m512i u = _mm512_loadu_si512((const void *)(dr[r] + b));
            se = _mm512_add_ps(se, _mm512_mul_ps(even512(u), wj));
            so = _mm512_add_ps(so, _mm512_mul_ps(odd512(u), wj));
            mx = _mm512_max_epu16(mx, _mm512_and_si512(u, mag));
        }
        if (any) lines512(rows, copy, cofs, k, b / 64 - 1, cnext, cstream);
        finish512(se, so, mx, cwv, av, h + i0 / 2, bad + i0 / 2, &anybad, &nonfinite, &dmax);
        i0 += 2 * RV;
    }
    int nbad = _mm512_test_epi32_mask(anybad, anybad) != 0;
    int nf = _mm512_test_epi32_mask(nonfinite, _mm512_set1_epi32((int)0x80000000u)) != 0;
    /* (2^100: see above; d >= 0, so its bits compare as integers) */
    nf |= _mm512_cmpgt_epu32_mask(dmax, _mm512_set1_epi32(0x71800000)) != 0;
    /* (the tail's sums are pairs_body's, of the generic products) */
    return pairs_tail(rows, w, k, c, off, i0, m, h, bad, nbad, nf);
}
#endif

/* The variant for sf_cpu_rows_isa and this CPU. */
static pairs_fn pairs_kernel(void) {
#ifdef ROWS_X86_VARIANTS
    int isa = sf_cpu_rows_isa;
    __builtin_cpu_init();
    bool has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
    if ((isa == 0 || isa == 3) && has512 && has2) return pairs_avx512;
    if ((isa == 0 || isa >= 2) && has2) return pairs_avx2;
#endif
    return pairs_base;
}

/* h[i] = y[i] rounded to bfloat16, to nearest even (the values are finite). */
ROWS_CLONES
static void to_bf16(const float *restrict y, uint16_t *restrict h, int64_t m) {
    for (int64_t i = 0; i < m; i++) {
        uint32_t u = sf_cpu_f32_bits(y[i]);
        h[i] = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
    }
}

bool sf_cpu_row_combine(const void *const *rows, scanfuse_dtype xdt, const float *w, int k,
                        int64_t n, void *out, scanfuse_dtype odt, bool stream,
                        void *const *copy, bool copy_stream) {
    SF_ASSERT(k >= 1 && (xdt == SCANFUSE_FLOAT32 || xdt == SCANFUSE_BFLOAT16) &&
              (odt == SCANFUSE_FLOAT32 || odt == SCANFUSE_BFLOAT16));
    bool bf16 = xdt == SCANFUSE_BFLOAT16;
    _Alignas(64) float y[CHUNK];
    _Alignas(64) uint16_t h[CHUNK];
    _Alignas(64) uint32_t hp[CHUNK / 2], badp[CHUNK / 2];
    unsigned char bad[CHUNK];
    uint16_t bad16[CHUNK];
    size_t oes = scanfuse_dtype_size(odt), xes = scanfuse_dtype_size(xdt);
    /* One slot: the AVX-512 kernel has a loop without the acceptance test (the sum is
     * exact); elsewhere the generic loop below (measured faster than pairs_body, whose
     * test one slot does not need).  Its copies go chunk by chunk, just before the
     * chunk's arithmetic (measured faster than within the kernel for one slot). */
    pairs_fn pk = bf16 && odt == SCANFUSE_BFLOAT16 ? pairs_kernel() : NULL;
#ifdef ROWS_X86_VARIANTS
    bool pairs = pk && (k > 1 || pk == pairs_avx512);
#else
    bool pairs = pk && k > 1;
#endif
    const float c = (float)(2 * k + 4) * 0x1p-24f;
    /* pairs_avx512's constant: (2k + 4) * 2^-24 * sum |w_j|, rounded up (the double
     * sum errs by less than 2^-40), where that float is accurate */
    double wsum = 0.0;
    for (int j = 0; j < k; j++) wsum += fabs((double)w[j]);
    double cwd = (double)(2 * k + 4) * 0x1p-24 * wsum * (1.0 + 0x1p-20);
    const float cw = cwd >= 0x1p-100 && cwd <= 0x1p100 ? (float)cwd : -1.0f;
    /* The copies the pairs kernel makes as it reads (k >= 2): all but each row's head
     * (the bytes before its first line boundary, copied here) and the bytes after the
     * last line it reached (copied at the end).  The others are copied chunk by chunk
     * below, just before the chunk is read. */
    char *kcopy[COMB_ROWS_MAX_K];
    bool any_copy = false;
    SF_ASSERT(k <= COMB_ROWS_MAX_K);
    size_t nb = (size_t)n * 2;
    int64_t cnext = 0; /* the next line the kernel copies (see pairs_body) */
    for (int j = 0; j < k; j++) {
        kcopy[j] = NULL;
        if (!copy || !copy[j]) continue;
        any_copy = true;
        if (pairs && k > 1) {
            kcopy[j] = copy[j];
            size_t hd = (size_t)(-(uintptr_t)copy[j] & 63);
            sf_cpu_row_copy(copy[j], rows[j], hd < nb ? hd : nb, copy_stream);
        }
    }
    for (int64_t off = 0; off < n; off += CHUNK) {
        int64_t m = n - off < CHUNK ? n - off : CHUNK;
        char *dst = (char *)out + (size_t)off * oes;
        for (int j = 0; any_copy && j < k; j++)
            if (copy[j] && !kcopy[j])
                sf_cpu_row_copy((char *)copy[j] + (size_t)off * xes,
                                (const char *)rows[j] + (size_t)off * xes, (size_t)m * xes,
                                copy_stream);
        if (pairs) {
            int nbad = pk((const char *const *)rows, w, k, c, cw, off, m, hp, badp, kcopy,
                          copy_stream, &cnext);
            if (nbad < 0) return false;
            for (int64_t i = 0; i < m && nbad > 0; i++) {
                if (!(badp[i / 2] >> (i & 1 ? 16 : 0) & 0xFFFFu)) continue;
                double hs = 0.0, ls = 0.0; /* the generic compensated sum, in slot order */
                for (int j = 0; j < k; j++)
                    sf_cpu_sum2_add(&hs, &ls, (double)(row_at(rows[j], bf16, off + i) * w[j]));
                uint32_t u = sf_cpu_f32_bits((float)sf_cpu_sum2_result(hs, ls, SCANFUSE_FLOAT32));
                u = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
                hp[i / 2] = i & 1 ? (hp[i / 2] & 0xFFFFu) | u << 16 : (hp[i / 2] & 0xFFFF0000u) | u;
            }
            sf_cpu_row_copy(dst, hp, (size_t)m * 2, stream);
            if (off + m < n) continue;
            for (int j = 0; j < k; j++) { /* the rest of the rows the kernel copied */
                if (!kcopy[j]) continue;
                size_t from = (size_t)(-(uintptr_t)copy[j] & 63) + 64 * (size_t)cnext;
                if (from < nb)
                    sf_cpu_row_copy(kcopy[j] + from, (const char *)rows[j] + from, nb - from,
                                    copy_stream);
            }
            continue;
        }
        if (odt == SCANFUSE_BFLOAT16 && k > 1) {
            int nbad = combine_chunk_bf16(rows, bf16, w, k, off, m, h, bad16);
            if (nbad < 0) return false;
            for (int64_t i = 0; i < m && nbad > 0; i++) {
                if (!bad16[i]) continue;
                double hs = 0.0, ls = 0.0; /* the generic compensated sum, in slot order */
                for (int j = 0; j < k; j++)
                    sf_cpu_sum2_add(&hs, &ls, (double)(row_at(rows[j], bf16, off + i) * w[j]));
                uint32_t u = sf_cpu_f32_bits((float)sf_cpu_sum2_result(hs, ls, SCANFUSE_FLOAT32));
                h[i] = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
            }
            sf_cpu_row_copy(dst, h, (size_t)m * 2, stream);
            continue;
        }
        int nbad = combine_chunk(rows, bf16, w, k, off, m, y, bad);
        if (nbad < 0) return false;
        for (int64_t i = 0; i < m && nbad > 0; i++) {
            if (!bad[i]) continue;
            /* near a rounding boundary: the generic compensated sum, in slot order */
            double hs = 0.0, ls = 0.0;
            for (int j = 0; j < k; j++)
                sf_cpu_sum2_add(&hs, &ls, (double)(row_at(rows[j], bf16, off + i) * w[j]));
            y[i] = (float)sf_cpu_sum2_result(hs, ls, SCANFUSE_FLOAT32);
            nbad--;
        }
        if (odt == SCANFUSE_FLOAT32) {
            sf_cpu_row_copy(dst, y, (size_t)m * 4, stream);
        } else {
            to_bf16(y, h, m);
            sf_cpu_row_copy(dst, h, (size_t)m * 2, stream);
        }
    }
    return true;
}
