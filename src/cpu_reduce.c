/*
 * cpu_reduce.c — reductions (sum, prod, max, min, mean, argmax, argmin over any set of
 * dims, keepdim or not) and matmul for the CPU backend.
 *
 * Accumulation policy (docs/OPS.md):
 *  - sum/prod/mean convert the input to the result dtype first; float sum and mean
 *    use compensated summation (twice double precision: each output is the exact sum
 *    rounded once; mean divides that sum by the count before the one rounding); float
 *    prod accumulates in double with a carried power of two (sf_prodx: no partial
 *    product over- or underflows); integers in int64 with wrapping;
 *  - max/min propagate NaN; argmax/argmin return the first index of the extreme value
 *    and a NaN counts as the extreme (the first NaN wins); indices are row-major over
 *    the reduced dims (the flattened input when no dim is given);
 *  - matmul accumulates each dot product in double in ascending k (or in wrapping
 *    int64) and rounds once.
 * Each output reduces its elements in row-major order of the reduced dims, whatever
 * the walk below looks like, so results are deterministic.
 *
 * Layout: like the scans, a reduction works on tiles that are either a run of
 * reduced elements of one output ("row mode", when a reduced dim has the smallest
 * stride) or one reduced position of up to SF_CPU_BLOCK neighbouring outputs
 * ("column mode", when a kept dim has the smallest stride).
 */
#include "cpu.h"
#include "cpu_threads.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef enum red_kind {
    R_SUM_F, R_SUM_I, R_PROD_F, R_PROD_I, R_MEAN,
    R_MAX_F, R_MAX_I, R_MIN_F, R_MIN_I,
    R_ARGMAX_F, R_ARGMAX_I, R_ARGMIN_F, R_ARGMIN_I
} red_kind;

typedef struct red_work {
    bool lanes; /* row mode, a float sum in SF_SUM_LANES lanes (hi, lo [0, SF_SUM_LANES)) */
    double hi[SF_CPU_BLOCK], lo[SF_CPU_BLOCK];
    int64_t iv[SF_CPU_BLOCK], idx[SF_CPU_BLOCK];
    double xf[SF_CPU_BLOCK], yf[SF_CPU_BLOCK];
    int64_t xi[SF_CPU_BLOCK], yi[SF_CPU_BLOCK];
} red_work;

static bool red_float_input(red_kind k) {
    return k == R_SUM_F || k == R_PROD_F || k == R_MEAN || k == R_MAX_F || k == R_MIN_F ||
           k == R_ARGMAX_F || k == R_ARGMIN_F;
}

static bool red_float_result(red_kind k) {
    return k == R_SUM_F || k == R_PROD_F || k == R_MEAN || k == R_MAX_F || k == R_MIN_F;
}

static void red_init(red_work *w, red_kind k, int64_t m) {
    double fv = 0.0;
    int64_t iv = 0;
    switch (k) {
    case R_SUM_F: case R_SUM_I: case R_MEAN: break;
    case R_PROD_F: fv = 1.0; break;
    case R_PROD_I: iv = 1; break;
    case R_MAX_F: fv = -INFINITY; break;
    case R_MIN_F: fv = INFINITY; break;
    case R_MAX_I: iv = INT64_MIN; break;
    case R_MIN_I: iv = INT64_MAX; break;
    case R_ARGMAX_F: case R_ARGMAX_I: case R_ARGMIN_F: case R_ARGMIN_I: break;
    }
    for (int64_t j = 0; j < m; j++) {
        w->hi[j] = fv;
        w->lo[j] = 0.0;
        w->iv[j] = iv;
        w->idx[j] = -1;
    }
}

/* Loops over a tile: position t (row-major index r), output j, element q0 + j.  The
 * op switch sits outside it, so the element loop holds one op's code only. */
#define TILE_LOOP(...)                                                                 \
    if (m == 1) { /* row mode: j is the constant 0, so the state can stay in registers */\
        for (int64_t t = 0; t < K; t++) {                                              \
            const int64_t q0 = t, r = r0 + t;                                          \
            const int64_t j = 0;                                                       \
            (void)r;                                                                   \
            { __VA_ARGS__ }                                                            \
        }                                                                              \
    } else {                                                                           \
        for (int64_t t = 0; t < K; t++) {                                              \
            const int64_t q0 = t * m, r = r0 + t;                                      \
            (void)r;                                                                   \
            for (int64_t j = 0; j < m; j++) { __VA_ARGS__ }                            \
        }                                                                              \
    }

/* The float products of a tile of K positions x m > 1 outputs (sf_prodx: hi * 2^iv):
 * for each position, chunks of 64 outputs multiplied in a vector loop that only flags
 * the rare outputs (sf_prodx_flag), then those one by one.  Cloned for AVX2 and
 * AVX-512, whose 64-bit compares vectorize the flags (SSE2 has none). */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define RED_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
#endif
#ifndef RED_CLONES
#define RED_CLONES
#endif
RED_CLONES static void prod_tile_cols(double *restrict hi, int64_t *restrict iv, const double *restrict xf, int64_t K,
                           int64_t m) {
    for (int64_t t = 0; t < K; t++) {
        const double *restrict x = xf + t * m;
        for (int64_t c0 = 0; c0 < m; c0 += 64) {
            const int64_t n = c0 + 64 < m ? 64 : m - c0;
            double tm[64];
            unsigned char fj[64];
            int f = 0;
            for (int64_t j = 0; j < n; j++) {
                tm[j] = hi[c0 + j] * x[c0 + j];
                fj[j] = (unsigned char)sf_prodx_flag(tm[j], x[c0 + j]);
                f |= fj[j];
            }
            if (f)
                for (int64_t j = 0; j < n; j++) {
                    if (!fj[j]) continue;
                    const sf_prodx p = sf_prodx_mul((sf_prodx){hi[c0 + j], iv[c0 + j]}, sf_prodx_of(x[c0 + j]));
                    tm[j] = p.m;
                    iv[c0 + j] = p.e;
                }
            for (int64_t j = 0; j < n; j++) hi[c0 + j] = tm[j];
        }
    }
}

/* One sf_cpu_sum2_add per element, lane by lane (cpu.h).  Whole groups of SF_SUM_LANES
 * go through GCC's vector extension (two AVX2 or one AVX-512 register, or four SSE2
 * ones): the same IEEE operations in every lane, the infinity test as a mask
 * (u - u == 0 exactly when u is finite), so every ISA gives the same bytes. */
typedef double red_v8d __attribute__((vector_size(8 * sizeof(double))));
typedef int64_t red_v8l __attribute__((vector_size(8 * sizeof(int64_t))));
typedef float red_v8f __attribute__((vector_size(8 * sizeof(float))));
_Static_assert(SF_SUM_LANES == 8, "red_v8d holds the lanes");

/* One sf_cpu_sum2_add in each of 8 lanes: *s += *v, its rounding error into *c (dropped
 * where the sum is not finite, as sf_cpu_sum2_add drops it).  Pointers, not values: a
 * 64-byte vector passed by value would change the ABI of the non-AVX-512 clones. */
static inline __attribute__((always_inline)) void v8_sum2(red_v8d *s, red_v8d *c, const red_v8d *v) {
    const red_v8d u = *s + *v, bp = u - *s;
    const red_v8d e = (*s - (u - bp)) + (*v - bp);
    const red_v8l fin = (u - u) == 0.0; /* all ones where u is finite */
    *c += (red_v8d)((red_v8l)e & fin);
    *s = u;
}

/* sf_cpu_sum2_lanes over doubles (xd) or float32 values widened in the register (xf,
 * exact: a float32 row needs no double copy first, cpu_fused_f32.c); one of them NULL,
 * a constant once inlined into the two entry points below. */
static inline __attribute__((always_inline)) void sum2_lanes(double *restrict hi, double *restrict lo,
                                                             const double *restrict xd, const float *restrict xf,
                                                             int64_t K, int64_t r0) {
#define LANE_X(t) (xd ? xd[t] : (double)xf[t])
    int64_t t = 0;
    for (; t < K && ((r0 + t) % SF_SUM_LANES) != 0; t++) {
        const int l = (int)((r0 + t) % SF_SUM_LANES);
        sf_cpu_sum2_add(&hi[l], &lo[l], LANE_X(t));
    }
    if (t + SF_SUM_LANES <= K) {
        red_v8d s, c;
        memcpy(&s, hi, sizeof s);
        memcpy(&c, lo, sizeof c);
        for (; t + SF_SUM_LANES <= K; t += SF_SUM_LANES) {
            red_v8d v;
            if (xd) {
                memcpy(&v, xd + t, sizeof v);
            } else {
                red_v8f f;
                memcpy(&f, xf + t, sizeof f);
                v = __builtin_convertvector(f, red_v8d);
            }
            v8_sum2(&s, &c, &v);
        }
        memcpy(hi, &s, sizeof s);
        memcpy(lo, &c, sizeof c);
    }
    for (; t < K; t++) sf_cpu_sum2_add(&hi[(r0 + t) % SF_SUM_LANES], &lo[(r0 + t) % SF_SUM_LANES], LANE_X(t));
#undef LANE_X
}

RED_CLONES void sf_cpu_sum2_lanes(double *restrict hi, double *restrict lo, const double *restrict x, int64_t K,
                                  int64_t r0) {
    sum2_lanes(hi, lo, x, NULL, K, r0);
}

RED_CLONES void sf_cpu_sum2_lanes_f32(double *restrict hi, double *restrict lo, const float *restrict x, int64_t K,
                                      int64_t r0) {
    sum2_lanes(hi, lo, NULL, x, K, r0);
}

bool sf_cpu_sum_exact_off = false;

/* sf_cpu_sum_exact_*'s test: amax the largest magnitude's bits (sign cleared), amin1 the
 * smallest nonzero one's bits minus 1 (all ones when every value is zero), of a format
 * whose exponent field starts at bit `shift` and reads `inf` for infinities and NaN. */
static bool exact_range(uint64_t amax, uint64_t amin1, int shift, uint64_t inf, int p, int64_t K) {
    if (amax == 0) return true; /* all zeros: the sum is +0 */
    const int64_t emax = (int64_t)(amax >> shift), emin = (int64_t)((amin1 + 1) >> shift);
    if (emax == (int64_t)inf) return false;
    const int lg = K <= 1 ? 0 : 64 - __builtin_clzll((unsigned long long)(K - 1));
    /* A subnormal's field reads one below its exponent: the bound only grows safer. */
    return emax - emin <= 53 - p - lg;
}

/* The plain sums: any order is the exact one's when the test passes; two vectors of 8
 * lanes, halves folded into halves. */
static inline __attribute__((always_inline)) double plain_sum(const double *restrict xd, const float *restrict xf,
                                                              int64_t K) {
    red_v8d a0 = {0}, a1 = {0};
    int64_t t = 0;
    for (; t + 2 * SF_SUM_LANES <= K; t += 2 * SF_SUM_LANES) {
        red_v8d v0, v1;
        if (xd) {
            memcpy(&v0, xd + t, sizeof v0);
            memcpy(&v1, xd + t + SF_SUM_LANES, sizeof v1);
        } else {
            red_v8f f0, f1;
            memcpy(&f0, xf + t, sizeof f0);
            memcpy(&f1, xf + t + SF_SUM_LANES, sizeof f1);
            v0 = __builtin_convertvector(f0, red_v8d);
            v1 = __builtin_convertvector(f1, red_v8d);
        }
        a0 += v0;
        a1 += v1;
    }
    double sum = 0.0;
    if (t > 0) {
        a0 += a1;
        const red_v8d a4 = a0 + __builtin_shufflevector(a0, a0, 4, 5, 6, 7, 0, 1, 2, 3);
        const red_v8d a2 = a4 + __builtin_shufflevector(a4, a4, 2, 3, 0, 1, 2, 3, 0, 1);
        sum = a2[0] + a2[1];
    }
    for (; t < K; t++) sum += xd ? xd[t] : (double)xf[t];
    return sum;
}

/* The test's extremes are plain loops: GCC turns them into unsigned vector max / min. */
RED_CLONES bool sf_cpu_sum_exact_f32(const float *restrict x, int64_t K, int p, double *s) {
    uint32_t amax = 0, amin1 = UINT32_MAX;
    for (int64_t t = 0; t < K; t++) {
        uint32_t b;
        memcpy(&b, x + t, sizeof b);
        b &= 0x7fffffffu;
        amax = b > amax ? b : amax;
        amin1 = b - 1u < amin1 ? b - 1u : amin1;
    }
    if (!exact_range(amax, amin1 == UINT32_MAX ? UINT64_MAX : amin1, 23, 0xff, p, K)) return false;
    *s = plain_sum(NULL, x, K);
    return true;
}

RED_CLONES bool sf_cpu_sum_exact_f64(const double *restrict x, int64_t K, int p, double *s) {
    uint64_t amax = 0, amin1 = UINT64_MAX;
    for (int64_t t = 0; t < K; t++) {
        uint64_t b;
        memcpy(&b, x + t, sizeof b);
        b &= 0x7fffffffffffffffu;
        amax = b > amax ? b : amax;
        amin1 = b - 1u < amin1 ? b - 1u : amin1;
    }
    if (!exact_range(amax, amin1, 52, 0x7ff, p, K)) return false;
    *s = plain_sum(x, NULL, K);
    return true;
}

/* Column mode's sums: one sf_cpu_sum2_add for each of m outputs (element j of x into
 * output j's chain), the whole groups of 8 in vector lanes as sf_cpu_sum2_lanes takes
 * them (the same IEEE operations, so the same bytes as the scalar chain). */
RED_CLONES static void sum2_cols(double *restrict hi, double *restrict lo, const double *restrict x, int64_t m) {
    int64_t j = 0;
    for (; j + SF_SUM_LANES <= m; j += SF_SUM_LANES) {
        red_v8d s, c, v;
        memcpy(&s, hi + j, sizeof s);
        memcpy(&c, lo + j, sizeof c);
        memcpy(&v, x + j, sizeof v);
        v8_sum2(&s, &c, &v);
        memcpy(hi + j, &s, sizeof s);
        memcpy(lo + j, &c, sizeof c);
    }
    for (; j < m; j++) sf_cpu_sum2_add(&hi[j], &lo[j], x[j]);
}

/* Column mode's max (mx) or min of m outputs at one position, by the scalar rules, in
 * vector lanes (selects, so the same bytes).  idx NULL: max/min (a NaN replaces, else a
 * strictly greater (smaller) value); else argmax/argmin at position r (the first element
 * starts an output, idx < 0; a NaN replaces unless the output holds one; else a strictly
 * greater (smaller) value). */
RED_CLONES static void extreme_cols(double *restrict h, int64_t *restrict idx, const double *restrict x, int64_t m,
                                    int64_t r, bool mx) {
    int64_t j = 0;
    for (; j + SF_SUM_LANES <= m; j += SF_SUM_LANES) {
        red_v8d hv, v;
        memcpy(&hv, h + j, sizeof hv);
        memcpy(&v, x + j, sizeof v);
        const red_v8l better = mx ? v > hv : v < hv;
        red_v8l take = (v != v) | better;
        if (idx) {
            red_v8l iv;
            memcpy(&iv, idx + j, sizeof iv);
            take = (iv < 0) | (~(hv != hv) & take);
            iv = (take & r) | (~take & iv);
            memcpy(idx + j, &iv, sizeof iv);
        }
        hv = (red_v8d)(((red_v8l)v & take) | ((red_v8l)hv & ~take));
        memcpy(h + j, &hv, sizeof hv);
    }
    for (; j < m; j++) {
        const double v = x[j];
        const bool better = mx ? v > h[j] : v < h[j];
        if (idx ? idx[j] < 0 || (!isnan(h[j]) && (isnan(v) || better)) : isnan(v) || better) {
            h[j] = v;
            if (idx) idx[j] = r;
        }
    }
}

/* NaN shows as the largest magnitude's bits past an infinity's: *a = max(*a, |v|'s
 * bits) lane by lane (a compare and a select: GCC splits a compare whose mask is kept,
 * as nan |= v != v, into one scalar compare a lane) */
static inline __attribute__((always_inline)) void red_mag_max(red_v8l *a, const red_v8d *v) {
    const red_v8l b = (red_v8l)*v & INT64_MAX, gt = b > *a;
    *a = (b & gt) | (*a & ~gt);
}

/* The vector pass of maxmin_row and argext_row over the whole groups of 8 of x[0..K)
 * (K >= 8): their extreme (of equal ones, any: see below) into *M, and when first is not
 * NULL, the first position holding a value equal to it (each lane keeps the first
 * position of its own extreme: only a strictly better value replaces; of the lanes whose
 * extreme equals *M, the smallest position); false when one holds a NaN. */
static inline __attribute__((always_inline)) bool extreme_groups_of(const double *restrict x, int64_t K, bool mx,
                                                                     double *M, int64_t *first) {
    /* two sets of lanes (positions t % 16) so that two compare-and-select chains overlap;
     * the second stays a copy of the first when K < 16 */
    red_v8d m, m2;
    memcpy(&m, x, sizeof m);
    red_v8l mag = (red_v8l)m & INT64_MAX, at = {0, 1, 2, 3, 4, 5, 6, 7}, pos = at;
    red_v8l at2 = at;
    m2 = m;
    int64_t t = SF_SUM_LANES;
    if (K >= 2 * SF_SUM_LANES) {
        memcpy(&m2, x + t, sizeof m2);
        red_mag_max(&mag, &m2);
        at2 = at + SF_SUM_LANES;
        t += SF_SUM_LANES;
        pos += SF_SUM_LANES;
        for (; t + 2 * SF_SUM_LANES <= K; t += 2 * SF_SUM_LANES) {
            red_v8d v, v2;
            memcpy(&v, x + t, sizeof v);
            memcpy(&v2, x + t + SF_SUM_LANES, sizeof v2);
            red_mag_max(&mag, &v);
            red_mag_max(&mag, &v2);
            pos += 2 * SF_SUM_LANES;
            const red_v8l take = mx ? v > m : v < m, take2 = mx ? v2 > m2 : v2 < m2;
            m = (red_v8d)(((red_v8l)v & take) | ((red_v8l)m & ~take));
            m2 = (red_v8d)(((red_v8l)v2 & take2) | ((red_v8l)m2 & ~take2));
            at = ((pos - SF_SUM_LANES) & take) | (at & ~take);
            at2 = (pos & take2) | (at2 & ~take2);
        }
    }
    for (; t + SF_SUM_LANES <= K; t += SF_SUM_LANES) {
        red_v8d v;
        memcpy(&v, x + t, sizeof v);
        red_mag_max(&mag, &v);
        pos += SF_SUM_LANES;
        const red_v8l take = mx ? v > m : v < m;
        m = (red_v8d)(((red_v8l)v & take) | ((red_v8l)m & ~take));
        at = (pos & take) | (at & ~take);
    }
    /* across the 16 lanes in scalars (GCC splits compares across a vector's own lanes
     * into scalar ones anyway): the extreme (of equal values any: the callers read the
     * value, or the zeros by the rule), then the smallest position holding it */
    double e[2 * SF_SUM_LANES];
    int64_t a[2 * SF_SUM_LANES], g[SF_SUM_LANES];
    memcpy(e, &m, sizeof m);
    memcpy(e + SF_SUM_LANES, &m2, sizeof m2);
    memcpy(a, &at, sizeof at);
    memcpy(a + SF_SUM_LANES, &at2, sizeof at2);
    memcpy(g, &mag, sizeof mag);
    /* by halves (independent pairs, not a chain of 16 dependent compares) */
    int64_t big = 0;
    for (int l = 0; l < SF_SUM_LANES; l++) big = g[l] > big ? g[l] : big;
    for (int w = SF_SUM_LANES; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) e[l] = (mx ? e[l + w] > e[l] : e[l + w] < e[l]) ? e[l + w] : e[l];
    const double Mv = e[0];
    memcpy(e, &m, sizeof m); /* the lanes again, for their positions */
    memcpy(e + SF_SUM_LANES, &m2, sizeof m2);
    for (int l = 0; l < 2 * SF_SUM_LANES; l++) a[l] = e[l] == Mv ? a[l] : INT64_MAX;
    for (int w = SF_SUM_LANES; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) a[l] = a[l + w] < a[l] ? a[l + w] : a[l];
    *M = Mv;
    if (first) *first = a[0];
    return big <= 0x7ff0000000000000;
}

/* mx a constant in each of the two bodies */
RED_CLONES static bool extreme_groups(const double *restrict x, int64_t K, bool mx, double *M, int64_t *first) {
    return mx ? extreme_groups_of(x, K, true, M, first) : extreme_groups_of(x, K, false, M, first);
}

/* Row-mode max (mx) or min of K values into *h by the scalar rule: a NaN replaces (so the
 * last NaN stays), otherwise only a strictly greater (smaller) value replaces (so of
 * equal values the first stays).  The whole groups of 8 are scanned in vector lanes
 * first; where they hold no NaN and their extreme M is not zero, the rule's result over
 * them is M itself (the one double with its value: only zeros have two), so that M
 * enters *h as one element would; otherwise the block goes by the scalar rule. */
static void maxmin_row(double *h, const double *restrict x, int64_t K, bool mx) {
    int64_t t = 0;
    double M;
    if (K >= 2 * SF_SUM_LANES && extreme_groups(x, K - K % SF_SUM_LANES, mx, &M, NULL) && M != 0.0) {
        if (mx ? M > *h : M < *h) *h = M;
        t = K - K % SF_SUM_LANES;
    }
    for (; t < K; t++) {
        const double v = x[t];
        if (isnan(v) || (mx ? v > *h : v < *h)) *h = v;
    }
}

/* Row-mode argmax (mx) or argmin of K values at positions r0.. into (*h, *idx) by the
 * scalar rule: the first element starts it; a NaN replaces unless *h is one already
 * (so the first NaN stays); otherwise only a strictly greater (smaller) value replaces
 * (so of equal values, zeros of either sign among them, the first stays).  Where the
 * block holds no NaN, that rule's answer is the block's extreme M at its first element
 * equal to M, if M beats *h (or nothing started yet): the vector pass finds M and
 * its first position (each lane's first).  A block with a NaN goes by the scalar rule. */
static void argext_row(double *h, int64_t *idx, const double *restrict x, int64_t K, int64_t r0, bool mx) {
    double M;
    int64_t f;
    if (K >= 2 * SF_SUM_LANES && extreme_groups(x, K - K % SF_SUM_LANES, mx, &M, &f)) {
        int64_t t = K - K % SF_SUM_LANES;
        if (*idx < 0 || (!isnan(*h) && (mx ? M > *h : M < *h))) {
            *h = x[f];
            *idx = r0 + f;
        }
        for (; t < K; t++) { /* the tail, after the groups, by the rule */
            const double v = x[t];
            if (!isnan(*h) && (isnan(v) || (mx ? v > *h : v < *h))) {
                *h = v;
                *idx = r0 + t;
            }
        }
        return;
    }
    for (int64_t t = 0; t < K; t++) {
        const double v = x[t];
        if (*idx < 0 || (!isnan(*h) && (isnan(v) || (mx ? v > *h : v < *h)))) {
            *h = v;
            *idx = r0 + t;
        }
    }
}

void sf_cpu_sum2_lanes_fold(const double *hi, const double *lo, double *s, double *c) {
    double fs = 0.0, fc = 0.0;
    for (int l = 0; l < SF_SUM_LANES; l++) {
        sf_cpu_sum2_add(&fs, &fc, hi[l]);
        fc += lo[l];
    }
    *s = fs;
    *c = fc;
}

/* ---- long sums in chunks (cpu.h, SF_SUM_CHUNK) ---- */

void sf_sum2_acc_init(sf_sum2_acc *a) {
    for (int l = 0; l < SF_SUM_LANES; l++) a->hi[l] = a->lo[l] = 0.0;
    a->S = a->C = 0.0;
    a->r = 0;
}

/* (S, C) after one more chunk (s, c); `first`: it is the first. */
static void chunk_fold(double *S, double *C, double s, double c, bool first) {
    if (first) {
        *S = s;
        *C = c;
        return;
    }
    sf_cpu_sum2_add(S, C, s);
    *C += c;
}

/* Ends the chunk whose lanes a holds (a->r at its end). */
static void acc_close_chunk(sf_sum2_acc *a) {
    double s, c;
    sf_cpu_sum2_lanes_fold(a->hi, a->lo, &s, &c);
    chunk_fold(&a->S, &a->C, s, c, a->r <= SF_SUM_CHUNK);
    for (int l = 0; l < SF_SUM_LANES; l++) a->hi[l] = a->lo[l] = 0.0;
}

static void acc_add(sf_sum2_acc *a, const double *xd, const float *xf, int64_t n) {
    while (n > 0) {
        const int64_t in_chunk = a->r % SF_SUM_CHUNK, m = n < SF_SUM_CHUNK - in_chunk ? n : SF_SUM_CHUNK - in_chunk;
        if (xd) sf_cpu_sum2_lanes(a->hi, a->lo, xd, m, in_chunk);
        else sf_cpu_sum2_lanes_f32(a->hi, a->lo, xf, m, in_chunk);
        a->r += m;
        if (a->r % SF_SUM_CHUNK == 0) acc_close_chunk(a);
        if (xd) xd += m;
        else xf += m;
        n -= m;
    }
}

void sf_sum2_acc_add(sf_sum2_acc *a, const double *x, int64_t n) { acc_add(a, x, NULL, n); }
void sf_sum2_acc_add_f32(sf_sum2_acc *a, const float *x, int64_t n) { acc_add(a, NULL, x, n); }

void sf_sum2_acc_result(const sf_sum2_acc *a, double *s, double *c) {
    if (a->r > 0 && a->r % SF_SUM_CHUNK == 0) { /* the last chunk is folded in already */
        *s = a->S;
        *c = a->C;
        return;
    }
    double cs, cc, S = a->S, C = a->C;
    sf_cpu_sum2_lanes_fold(a->hi, a->lo, &cs, &cc);
    chunk_fold(&S, &C, cs, cc, a->r < SF_SUM_CHUNK);
    *s = S;
    *c = C;
}

typedef struct long_sum_job {
    const char *base;
    scanfuse_dtype dt, cv;
    int64_t off, rs, K, nchunks;
    double *part; /* (s_k, c_k) at 2k, 2k + 1 */
    atomic_llong next;
} long_sum_job;

/* Chunk k's (s_k, c_k): its lanes from zero, folded. */
static void long_chunk(const long_sum_job *j, int64_t k, double *s, double *c) {
    const int64_t a = k * SF_SUM_CHUNK, n = j->K - a < SF_SUM_CHUNK ? j->K - a : SF_SUM_CHUNK;
    double hi[SF_SUM_LANES] = {0}, lo[SF_SUM_LANES] = {0};
    if (j->dt == SCANFUSE_FLOAT32 && (j->cv == SCANFUSE_FLOAT32 || j->cv == SCANFUSE_FLOAT64) && j->rs == 1 &&
        (uintptr_t)j->base % sizeof(float) == 0) {
        /* float32 into float32 or wider: the values as they are, widened in registers */
        sf_cpu_sum2_lanes_f32(hi, lo, (const float *)(const void *)j->base + j->off + a, n, 0);
    } else {
        double x[SF_CPU_BLOCK];
        for (int64_t b = 0; b < n; b += SF_CPU_BLOCK) {
            const int64_t m = n - b < SF_CPU_BLOCK ? n - b : SF_CPU_BLOCK;
            sf_cpu_gather_f64(j->base, j->dt, j->off + (a + b) * j->rs, j->rs, m, j->cv, x);
            sf_cpu_sum2_lanes(hi, lo, x, m, b);
        }
    }
    sf_cpu_sum2_lanes_fold(hi, lo, s, c);
}

static void long_sum_task(void *ctx, int tid, int nthreads) {
    long_sum_job *j = ctx;
    (void)tid;
    (void)nthreads;
    for (;;) {
        const int64_t k = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (k >= j->nchunks) break;
        long_chunk(j, k, &j->part[2 * k], &j->part[2 * k + 1]);
    }
}

void sf_cpu_sum2_long(const void *base, scanfuse_dtype dt, int64_t off, int64_t rs, int64_t K, scanfuse_dtype cv,
                      int threads, double *s, double *c) {
    long_sum_job j = {(const char *)base, dt, cv, off, rs, K, K > 0 ? (K + SF_SUM_CHUNK - 1) / SF_SUM_CHUNK : 1, NULL, 0};
    atomic_init(&j.next, 0);
    /* the chunks' partials first (on the pool when there are several threads and chunks
     * and the memory for them), then their fold in order: the same bytes either way */
    if (threads > 1 && j.nchunks > 1) j.part = malloc((size_t)j.nchunks * 2 * sizeof(double));
    if (j.part) {
        sf_pool_run(threads < j.nchunks ? threads : (int)j.nchunks, long_sum_task, &j);
        for (int64_t k = 0; k < j.nchunks; k++) chunk_fold(s, c, j.part[2 * k], j.part[2 * k + 1], k == 0);
        free(j.part);
        return;
    }
    for (int64_t k = 0; k < j.nchunks; k++) {
        double cs, cc;
        long_chunk(&j, k, &cs, &cc);
        chunk_fold(s, c, cs, cc, k == 0);
    }
}

/* Folds a tile of K reduced positions x m outputs (element q = t*m + j; position t
 * has row-major index r0 + t) into the accumulators.  max/min: once NaN, nothing is
 * > NaN, so the NaN stays.  argmax/argmin: the first NaN wins, otherwise only a
 * strictly better value replaces (the first extreme wins). */
static void red_tile(red_work *w, red_kind k, int64_t K, int64_t m, int64_t r0) {
    /* restrict: the blocks are distinct arrays, so the state may live in registers */
    const double *restrict xf = w->xf;
    const int64_t *restrict xi = w->xi;
    double *restrict hi = w->hi, *restrict lo = w->lo;
    int64_t *restrict iv = w->iv, *restrict idx = w->idx;
    switch (k) {
    case R_SUM_F: case R_MEAN:
        if (w->lanes) sf_cpu_sum2_lanes(hi, lo, xf, K, r0);
        else if (K == 1 && m >= SF_SUM_LANES) sum2_cols(hi, lo, xf, m);
        else TILE_LOOP(sf_cpu_sum2_add(&hi[j], &lo[j], xf[q0 + j]);)
        break;
    case R_SUM_I: TILE_LOOP(iv[j] = sf_cpu_add_i64(iv[j], xi[q0 + j]);) break;
    case R_PROD_F: /* the product is hi * 2^iv (sf_prodx) */
        if (m == 1) {
            TILE_LOOP(const sf_prodx p = sf_prodx_mul((sf_prodx){hi[j], iv[j]}, sf_prodx_of(xf[q0 + j]));
                      hi[j] = p.m; iv[j] = p.e;)
        } else {
            prod_tile_cols(hi, iv, xf, K, m);
        }
        break;
    case R_PROD_I: TILE_LOOP(iv[j] = sf_cpu_mul_i64(iv[j], xi[q0 + j]);) break;
    case R_MAX_F: case R_MIN_F: {
        const bool mx = k == R_MAX_F;
        if (m == 1) maxmin_row(&hi[0], xf, K, mx);
        else if (K == 1) extreme_cols(hi, NULL, xf, m, r0, mx);
        else TILE_LOOP(double x = xf[q0 + j]; if (isnan(x) || (mx ? x > hi[j] : x < hi[j])) hi[j] = x;)
        break;
    }
    case R_MAX_I: TILE_LOOP(if (xi[q0 + j] > iv[j]) iv[j] = xi[q0 + j];) break;
    case R_MIN_I: TILE_LOOP(if (xi[q0 + j] < iv[j]) iv[j] = xi[q0 + j];) break;
    case R_ARGMAX_F: case R_ARGMIN_F: {
        const bool mx = k == R_ARGMAX_F;
        if (m == 1) argext_row(&hi[0], &idx[0], xf, K, r0, mx);
        else if (K == 1) extreme_cols(hi, idx, xf, m, r0, mx);
        else TILE_LOOP(double x = xf[q0 + j];
                       if (idx[j] < 0 || (!isnan(hi[j]) && (isnan(x) || (mx ? x > hi[j] : x < hi[j])))) {
                           hi[j] = x;
                           idx[j] = r;
                       })
        break;
    }
    case R_ARGMAX_I:
        TILE_LOOP(int64_t x = xi[q0 + j]; if (idx[j] < 0 || x > iv[j]) { iv[j] = x; idx[j] = r; })
        break;
    case R_ARGMIN_I:
        TILE_LOOP(int64_t x = xi[q0 + j]; if (idx[j] < 0 || x < iv[j]) { iv[j] = x; idx[j] = r; })
        break;
    }
}

/* (s + c) / count, rounded once to dt (through the round-to-odd double). */
static double sum2_div(double s, double c, double count, scanfuse_dtype dt) {
    double hi, lo;
    if (!sf_cpu_sum2_split(s, c, &hi, &lo)) return hi / count;
    double q1 = hi / count;
    if (!isfinite(q1)) return q1; /* count 0: 0/0 is NaN */
    double rem = fma(-q1, count, hi) + lo; /* hi - q1*count exactly, plus the low part */
    double q2 = rem / count;
    double h = q1 + q2;
    double l = q2 - (h - q1);
    return dt == SCANFUSE_FLOAT64 ? h : sf_cpu_dd_to_odd(h, l);
}

/* The results of the m outputs whose accumulators are at [0, m) into yf / yi [to, to+m). */
static void red_values(red_work *w, red_kind k, scanfuse_dtype dt, double count, int64_t to, int64_t m) {
    double *yf = w->yf + to;
    int64_t *yi = w->yi + to;
    switch (k) {
    case R_SUM_F:
        for (int64_t j = 0; j < m; j++) yf[j] = sf_cpu_sum2_result(w->hi[j], w->lo[j], dt);
        break;
    case R_MEAN:
        for (int64_t j = 0; j < m; j++) yf[j] = sum2_div(w->hi[j], w->lo[j], count, dt);
        break;
    case R_PROD_F:
        for (int64_t j = 0; j < m; j++) yf[j] = sf_prodx_value((sf_prodx){w->hi[j], w->iv[j]});
        break;
    case R_MAX_F: case R_MIN_F:
        memcpy(yf, w->hi, (size_t)m * sizeof(double));
        break;
    case R_SUM_I: case R_PROD_I: case R_MAX_I: case R_MIN_I:
        memcpy(yi, w->iv, (size_t)m * sizeof(int64_t));
        break;
    case R_ARGMAX_F: case R_ARGMAX_I: case R_ARGMIN_F: case R_ARGMIN_I:
        memcpy(yi, w->idx, (size_t)m * sizeof(int64_t));
        break;
    }
}

/* Writes yf / yi [0, m) to the output buffer. */
static void red_store(const red_work *w, red_kind k, const sf_view *out, int64_t off, int64_t stride, int64_t m) {
    if (red_float_result(k)) sf_cpu_store_f64(out->data, out->dtype, off, stride, m, w->yf);
    else sf_cpu_store_i64(out->data, out->dtype, off, stride, m, w->yi);
}

/* Writes the results of m outputs to the output buffer. */
static void red_finish(red_work *w, red_kind k, scanfuse_dtype dt, double count,
                       const sf_view *out, int64_t off, int64_t stride, int64_t m) {
    red_values(w, k, dt, count, 0, m);
    red_store(w, k, out, off, stride, m);
}

size_t sf_cpu_reduce_work_size(void) { return sizeof(red_work); }

void sf_cpu_red_split(const sf_view *in, const bool *red, sf_red_split *sp) {
    sp->nk = sp->nr = 0;
    sp->rcount = 1;
    sp->kmin = sp->rmin = INT64_MAX;
    for (int e = 0; e < in->ndim; e++) {
        if (red[e]) {
            sp->rshape[sp->nr] = in->shape[e];
            sp->rin[sp->nr] = in->strides[e];
            sp->rcount *= in->shape[e];
            if (in->shape[e] > 1 && in->strides[e] < sp->rmin) sp->rmin = in->strides[e];
            sp->nr++;
        } else {
            sp->kshape[sp->nk] = in->shape[e];
            sp->kin[sp->nk] = in->strides[e];
            if (in->shape[e] > 1 && in->strides[e] < sp->kmin) sp->kmin = in->strides[e];
            sp->nk++;
        }
    }
    int64_t stride = 1;
    for (int i = sp->nk - 1; i >= 0; i--) {
        sp->kout[i] = stride;
        stride *= sp->kshape[i] > 0 ? sp->kshape[i] : 1;
    }
}

/* Integer sums into int64 read straight from memory.  Wrapping addition is associative
 * and commutative, so any order gives the bytes of the element-by-element chain; these
 * loops skip the gather into a block (a bool or int32 column sum spent most of its time
 * there).  int_direct: x's dtype converts to int64 exactly (bool as 0 or 1); the callers
 * also ask for data aligned to its element size (the loops load through typed pointers). */
static bool int_direct(scanfuse_dtype dt) {
    return dt == SCANFUSE_BOOL || dt == SCANFUSE_UINT8 || dt == SCANFUSE_INT8 || dt == SCANFUSE_INT16 ||
           dt == SCANFUSE_INT32 || dt == SCANFUSE_INT64;
}

#define RED_INT_CASES(X)                                                                 \
    X(SCANFUSE_BOOL, uint8_t, v != 0)                                                    \
    X(SCANFUSE_UINT8, uint8_t, v)                                                        \
    X(SCANFUSE_INT8, int8_t, v)                                                          \
    X(SCANFUSE_INT16, int16_t, v)                                                        \
    X(SCANFUSE_INT32, int32_t, v)                                                        \
    X(SCANFUSE_INT64, int64_t, v)

/* acc[j] += x[j], j < m (x: m contiguous elements of dtype dt). */
RED_CLONES static void int_add_cols(int64_t *restrict acc, const void *restrict x, scanfuse_dtype dt, int64_t m) {
    switch (dt) {
#define X(D, T, E)                                                                       \
    case D: {                                                                            \
        const T *restrict p = x;                                                         \
        for (int64_t j = 0; j < m; j++) {                                                \
            const T v = p[j];                                                            \
            acc[j] = (int64_t)((uint64_t)acc[j] + (uint64_t)(int64_t)(E));               \
        }                                                                                \
        return;                                                                          \
    }
        RED_INT_CASES(X)
#undef X
    default: SF_ASSERT(!"int_add_cols: not an integer dtype");
    }
}

/* The wrapping sum of K elements of dtype dt at x, x + rs, ... (rs in elements). */
RED_CLONES static int64_t int_sum_run(const void *restrict x, scanfuse_dtype dt, int64_t K, int64_t rs) {
    uint64_t s = 0;
    switch (dt) {
#define X(D, T, E)                                                                       \
    case D: {                                                                            \
        const T *restrict p = x;                                                         \
        if (rs == 1) {                                                                   \
            for (int64_t t = 0; t < K; t++) {                                            \
                const T v = p[t];                                                        \
                s += (uint64_t)(int64_t)(E);                                             \
            }                                                                            \
        } else {                                                                         \
            for (int64_t t = 0; t < K; t++) {                                            \
                const T v = p[t * rs];                                                   \
                s += (uint64_t)(int64_t)(E);                                             \
            }                                                                            \
        }                                                                                \
        break;                                                                           \
    }
        RED_INT_CASES(X)
#undef X
    default: SF_ASSERT(!"int_sum_run: not an integer dtype");
    }
    return (int64_t)s;
}

/* Column mode (neighbouring outputs advance together, one reduced position per tile)
 * over the blocks of up to SF_CPU_BLOCK outputs b with b % nthreads == tid: each output's
 * reduced elements in the same order whatever the thread count, so the same bytes. */
#ifndef RED_COLS_AHEAD
#define RED_COLS_AHEAD 4
#endif
typedef struct red_cols_job {
    const sf_view *in, *out;
    const sf_red_split *sp;
    red_kind k;
    scanfuse_dtype cv;
    double count;
    red_work *w0; /* thread 0's work area (the others use their own) */
} red_cols_job;

static void red_cols(void *ctx, int tid, int nthreads) {
    const red_cols_job *jb = ctx;
    const sf_red_split *sp = jb->sp;
    const sf_view *in = jb->in;
    const red_kind k = jb->k;
    red_work local, *w = tid == 0 ? jb->w0 : &local;
    w->lanes = false;
    const int64_t *ksp[2] = {sp->kin, sp->kout};
    const int64_t *rsp[1] = {sp->rin};
    sf_cpu_iter kit, rit;
    int64_t koffs[2], roffs[1] = {0}, m, K; /* roffs: 0 when the reduced dims are empty (K = 0) */
    const int64_t esz = (int64_t)scanfuse_dtype_size(in->dtype);
    sf_cpu_iter_init(&kit, sp->nk, sp->kshape, 2, ksp);
    for (int64_t b = 0; (m = sf_cpu_iter_next(&kit, SF_CPU_BLOCK, koffs)) > 0; b++) {
        if (b % nthreads != tid) continue;
        int64_t s_in = sf_cpu_iter_stride(&kit, 0), s_out = sf_cpu_iter_stride(&kit, 1);
        red_init(w, k, m);
        sf_cpu_iter_init(&rit, sp->nr, sp->rshape, 1, rsp);
        const bool direct = k == R_SUM_I && s_in == 1 && jb->cv == SCANFUSE_INT64 && int_direct(in->dtype) &&
                            (uintptr_t)in->data % (uintptr_t)esz == 0;
        int64_t r = 0;
        while ((K = sf_cpu_iter_next(&rit, INT64_MAX, roffs)) > 0) {
            int64_t rs = sf_cpu_iter_stride(&rit, 0);
            for (int64_t t = 0; direct && t < K; t++, r++)
                int_add_cols(w->iv, (const char *)in->data + (koffs[0] + roffs[0] + t * rs) * esz, in->dtype, m);
            for (int64_t t = 0; !direct && t < K; t++, r++) {
                int64_t off = koffs[0] + roffs[0] + t * rs;
                if (s_in == 1 && t + RED_COLS_AHEAD < K) {
                    const char *q = (const char *)in->data + (off + RED_COLS_AHEAD * rs) * esz;
                    for (int64_t c = 0; c < m * esz; c += 64) __builtin_prefetch(q + c);
                }
                if (red_float_input(k))
                    sf_cpu_gather_f64(in->data, in->dtype, off, s_in, m, jb->cv, w->xf);
                else
                    sf_cpu_gather_i64(in->data, in->dtype, off, s_in, m, jb->cv, w->xi);
                red_tile(w, k, 1, m, r);
            }
        }
        red_finish(w, k, jb->out->dtype, jb->count, jb->out, koffs[1], s_out, m);
    }
}

/* Row mode when each output's reduced elements are one run of K <= SF_CPU_BLOCK at
 * stride rs (offset roff from the output's own): blocks of up to SF_CPU_BLOCK outputs,
 * each output gathered and folded as the general row mode folds it (so the same bytes),
 * its result kept until the block is stored at once.  The general loop pays an
 * iterator's start and a store per output, which dominates short rows (an argmax over
 * the rows of [2048, 128]: NOTES session 40).  A float sum whose values pass the exact
 * test (sf_cpu_sum_exact_f64) takes its plain sum, the compensated sum's bytes; after
 * many misses in a call it stops trying (the bytes are the same either way). */
static void red_rows(red_work *w, red_kind k, scanfuse_dtype cv, const sf_view *in, const sf_view *out,
                     const sf_red_split *sp, int64_t K, int64_t rs, int64_t roff, double count) {
    const int64_t *ksp[2] = {sp->kin, sp->kout};
    sf_cpu_iter kit;
    int64_t koffs[2], m;
    const bool fin = red_float_input(k);
    const int64_t esz = (int64_t)scanfuse_dtype_size(in->dtype);
    const bool int_sum = k == R_SUM_I && cv == SCANFUSE_INT64 && int_direct(in->dtype) &&
                         (uintptr_t)in->data % (uintptr_t)esz == 0;
    int exact_p = k == R_SUM_F || k == R_MEAN ? sf_cpu_sum_exact_bits(cv) : 0;
    int64_t misses = 0, hits = 0;
    sf_cpu_iter_init(&kit, sp->nk, sp->kshape, 2, ksp);
    while ((m = sf_cpu_iter_next(&kit, SF_CPU_BLOCK, koffs)) > 0) {
        const int64_t s_in = sf_cpu_iter_stride(&kit, 0), s_out = sf_cpu_iter_stride(&kit, 1);
        for (int64_t j = 0; j < m; j++) {
            const int64_t off = koffs[0] + j * s_in + roff;
            if (int_sum) {
                w->yi[j] = int_sum_run((const char *)in->data + off * esz, in->dtype, K, rs);
                continue;
            }
            if (fin) sf_cpu_gather_f64(in->data, in->dtype, off, rs, K, cv, w->xf);
            else sf_cpu_gather_i64(in->data, in->dtype, off, rs, K, cv, w->xi);
            double S;
            if (exact_p && sf_cpu_sum_exact_f64(w->xf, K, exact_p, &S)) {
                w->hi[0] = S;
                w->lo[0] = 0.0;
                hits++;
            } else {
                if (exact_p && ++misses > hits + 64) exact_p = 0;
                red_init(w, k, w->lanes ? SF_SUM_LANES : 1);
                red_tile(w, k, K, 1, 0);
                if (w->lanes) sf_cpu_sum2_lanes_fold(w->hi, w->lo, &w->hi[0], &w->lo[0]);
            }
            red_values(w, k, out->dtype, count, j, 1);
        }
        red_store(w, k, out, koffs[1], s_out, m);
    }
}

/* Column mode runs on the pool past this many input elements (and with 2 blocks of
 * outputs or more); below it a thread's wake-up costs more than it saves. */
#define RED_COLS_MT_MIN ((int64_t)1 << 16)

void sf_cpu_reduce(const sf_node *node, const sf_view *in, const sf_view *out, void *work) {
    sf_cpu_reduce_mt(node, in, out, work, 1);
}

void sf_cpu_reduce_mt(const sf_node *node, const sf_view *in, const sf_view *out, void *work, int threads) {
    const sf_attrs *a = &node->a;
    int nd = in->ndim;
    bool reduced[SF_MAX_DIMS] = {false};
    bool is_arg = node->op == SF_OP_argmax || node->op == SF_OP_argmin;
    if (is_arg ? a->has_dim : a->has_list) {
        if (is_arg) {
            SF_ASSERT(a->dim >= 0 && a->dim < (nd > 0 ? nd : 1));
            if (nd > 0) reduced[a->dim] = true;
        } else {
            for (int i = 0; i < a->nlist; i++) {
                SF_ASSERT(a->list[i] >= 0 && a->list[i] < nd);
                reduced[a->list[i]] = true;
            }
        }
    } else {
        for (int e = 0; e < nd; e++) reduced[e] = true;
    }

    /* The conversion dtype: the result dtype for sum/prod/mean (the input is cast to
     * it first), the input's own for max/min/argmax/argmin. */
    scanfuse_dtype cv = is_arg ? in->dtype : out->dtype;
    bool fl = sf_dtype_is_float(cv);
    red_kind k;
    switch (node->op) {
    case SF_OP_sum: k = fl ? R_SUM_F : R_SUM_I; break;
    case SF_OP_prod: k = fl ? R_PROD_F : R_PROD_I; break;
    case SF_OP_mean: k = R_MEAN; SF_ASSERT(fl); break;
    case SF_OP_max: k = fl ? R_MAX_F : R_MAX_I; break;
    case SF_OP_min: k = fl ? R_MIN_F : R_MIN_I; break;
    case SF_OP_argmax: k = fl ? R_ARGMAX_F : R_ARGMAX_I; break;
    case SF_OP_argmin: k = fl ? R_ARGMIN_F : R_ARGMIN_I; break;
    default: SF_ASSERT(!"not a reduction"); return;
    }

    /* Split the dims: kept ones (walked with the contiguous output) and reduced ones. */
    sf_red_split sp;
    sf_cpu_red_split(in, reduced, &sp);
    if (sf_numel(sp.nk, sp.kshape) == 0) return;

    red_work *w = work;
    const int64_t *ksp[2] = {sp.kin, sp.kout};
    const int64_t *rsp[1] = {sp.rin};
    sf_cpu_iter kit, rit;
    int64_t koffs[2], roffs[1] = {0}, K; /* roffs: 0 when the reduced dims are empty (K = 0) */
    double count = (double)sp.rcount;

    w->lanes = false;
    if (sp.kmin < sp.rmin) {
        red_cols_job jb = {in, out, &sp, k, cv, count, w};
        const int64_t nout = sf_numel(sp.nk, sp.kshape);
        /* (at least this many blocks: outputs in several runs split into more) */
        const int64_t blocks = (nout + SF_CPU_BLOCK - 1) / SF_CPU_BLOCK;
        int nt = threads > 1 && nout * sp.rcount >= RED_COLS_MT_MIN ? threads : 1;
        if (nt > blocks) nt = (int)blocks;
        if (nt > 1) sf_pool_run(nt, red_cols, &jb);
        else red_cols(&jb, 0, 1);
    } else {
        /* Row mode: one output at a time, runs of its reduced elements per tile. */
        w->lanes = (k == R_SUM_F || k == R_MEAN) && sp.rcount > SF_SUM_LANES_MIN;
        sf_cpu_iter_init(&rit, sp.nr, sp.rshape, 1, rsp);
        K = sf_cpu_iter_next(&rit, INT64_MAX, roffs);
        if (K == sp.rcount && K <= SF_CPU_BLOCK) {
            red_rows(w, k, cv, in, out, &sp, K, sf_cpu_iter_stride(&rit, 0), roffs[0], count);
            return;
        }
        /* one run past SF_SUM_CHUNK: its chunks on the threads (sf_cpu_sum2_long) */
        const bool long_run = w->lanes && K == sp.rcount && K > SF_SUM_CHUNK;
        const int64_t rs1 = sf_cpu_iter_stride(&rit, 0), roff1 = roffs[0];
        sf_cpu_iter_init(&kit, sp.nk, sp.kshape, 2, ksp);
        while (sf_cpu_iter_next(&kit, 1, koffs) > 0) {
            red_init(w, k, 1);
            if (long_run) {
                sf_cpu_sum2_long(in->data, in->dtype, koffs[0] + roff1, rs1, K, cv, threads, &w->hi[0], &w->lo[0]);
                red_finish(w, k, out->dtype, count, out, koffs[1], 1, 1);
                continue;
            }
            sf_sum2_acc acc; /* the lanes, in chunks (cpu.h) */
            sf_sum2_acc_init(&acc);
            sf_cpu_iter_init(&rit, sp.nr, sp.rshape, 1, rsp);
            int64_t r = 0, n;
            while ((n = sf_cpu_iter_next(&rit, SF_CPU_BLOCK, roffs)) > 0) {
                int64_t rs = sf_cpu_iter_stride(&rit, 0), off = koffs[0] + roffs[0];
                if (red_float_input(k))
                    sf_cpu_gather_f64(in->data, in->dtype, off, rs, n, cv, w->xf);
                else
                    sf_cpu_gather_i64(in->data, in->dtype, off, rs, n, cv, w->xi);
                if (w->lanes) sf_sum2_acc_add(&acc, w->xf, n);
                else red_tile(w, k, n, 1, r);
                r += n;
            }
            if (w->lanes) sf_sum2_acc_result(&acc, &w->hi[0], &w->lo[0]);
            red_finish(w, k, out->dtype, count, out, koffs[1], 1, 1);
        }
    }
}

/* ------------------------------------------------------------------------------ */
/* matmul                                                                           */
/* ------------------------------------------------------------------------------ */

int64_t sf_cpu_matmul_scratch(int na, const int64_t *ashape, int nb, const int64_t *bshape) {
    /* contiguous 8-byte copies of both operands and one accumulator row of m */
    int64_t m = nb >= 2 ? bshape[nb - 1] : 1;
    return 8 * (sf_numel(na, ashape) + sf_numel(nb, bshape) + m);
}

scanfuse_status sf_cpu_matmul(const sf_view *a, const sf_view *b, const sf_view *out,
                              void *scratch, char *msg, size_t msglen) {
    int na = a->ndim, nb = b->ndim;
    SF_ASSERT(na >= 1 && nb >= 1);
    int64_t n = na >= 2 ? a->shape[na - 2] : 1, kk = a->shape[na - 1];
    int64_t kb = nb >= 2 ? b->shape[nb - 2] : b->shape[0], m = nb >= 2 ? b->shape[nb - 1] : 1;
    /* Batch dims, broadcast; per batch index the matrix offsets of a and b (in
     * matrices of the contiguous copies, 0 along a broadcast dim). */
    int abat = na > 2 ? na - 2 : 0, bbat = nb > 2 ? nb - 2 : 0;
    int nbat = abat > bbat ? abat : bbat;
    int64_t bshape[SF_MAX_DIMS], astr[SF_MAX_DIMS], bstr[SF_MAX_DIMS];
    int64_t as = 1, bs = 1;
    for (int i = nbat - 1; i >= 0; i--) {
        int ia = i - (nbat - abat), ib = i - (nbat - bbat);
        int64_t sa = ia >= 0 ? a->shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
        bshape[i] = sa > sb ? sa : sb;
        if (sa == 0 || sb == 0) bshape[i] = 0;
        astr[i] = sa == 1 ? 0 : as;
        bstr[i] = sb == 1 ? 0 : bs;
        as *= sa > 0 ? sa : 1;
        bs *= sb > 0 ? sb : 1;
    }
    int64_t nbatches = sf_numel(nbat, bshape);
    if (kk != kb || nbatches * n * m != sf_numel(out->ndim, out->shape)) {
        sf_msg(msg, msglen, "matmul: operand shapes do not match the result");
        return SCANFUSE_ERROR_SHAPE;
    }
    if (nbatches * n * m == 0) return SCANFUSE_OK;

    bool fl = sf_dtype_is_float(out->dtype);
    scanfuse_dtype wide = fl ? SCANFUSE_FLOAT64 : SCANFUSE_INT64;
    char *ab = scratch, *bb = ab + 8 * sf_numel(na, a->shape);
    char *acc = bb + 8 * sf_numel(nb, b->shape);
    sf_view av, bv;
    sf_view_contiguous(&av, ab, wide, na, a->shape);
    sf_view_contiguous(&bv, bb, wide, nb, b->shape);
    sf_cpu_copy(&av, a); /* exact: every dtype fits float64 / int64 */
    sf_cpu_copy(&bv, b);

    int64_t bidx[SF_MAX_DIMS] = {0}, aoff = 0, boff = 0;
    for (int64_t batch = 0; batch < nbatches; batch++) {
        for (int64_t i = 0; i < n; i++) {
            /* i-k-j: each output accumulates its products in ascending k */
            if (fl) {
                const double *A = (const double *)(void *)ab + (aoff * n + i) * kk;
                const double *Bm = (const double *)(void *)bb + boff * kk * m;
                double *c = (double *)(void *)acc;
                for (int64_t j = 0; j < m; j++) c[j] = 0.0;
                for (int64_t p = 0; p < kk; p++) {
                    double aip = A[p];
                    const double *brow = Bm + p * m;
                    for (int64_t j = 0; j < m; j++) c[j] += aip * brow[j];
                }
                sf_cpu_store_f64(out->data, out->dtype, (batch * n + i) * m, 1, m, c);
            } else {
                const int64_t *A = (const int64_t *)(void *)ab + (aoff * n + i) * kk;
                const int64_t *Bm = (const int64_t *)(void *)bb + boff * kk * m;
                uint64_t *c = (uint64_t *)(void *)acc;
                for (int64_t j = 0; j < m; j++) c[j] = 0;
                for (int64_t p = 0; p < kk; p++) {
                    uint64_t aip = (uint64_t)A[p];
                    const int64_t *brow = Bm + p * m;
                    for (int64_t j = 0; j < m; j++) c[j] += aip * (uint64_t)brow[j];
                }
                int64_t *ci = (int64_t *)(void *)acc;
                for (int64_t j = 0; j < m; j++) ci[j] = sf_cpu_wrap_u64(c[j]);
                sf_cpu_store_i64(out->data, out->dtype, (batch * n + i) * m, 1, m, ci);
            }
        }
        /* advance the batch odometer */
        for (int d = nbat - 1; d >= 0; d--) {
            aoff += astr[d];
            boff += bstr[d];
            if (++bidx[d] < bshape[d]) break;
            aoff -= astr[d] * bshape[d];
            boff -= bstr[d] * bshape[d];
            bidx[d] = 0;
        }
    }
    return SCANFUSE_OK;
}
