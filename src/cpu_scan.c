/*
 * cpu_scan.c — the scans of the CPU backend: cumsum, cumprod, cummax, cummin and
 * logcumsumexp along any dim, with the exclusive and reverse flags, on any number of
 * threads.  This file decides *how* a scan runs; what it computes is fixed by the
 * definitions in cpu_scan_kern.h (fast paths) and docs/OPS.md (everything).
 *
 * Fast paths (SIMD kernels of cpu_scan_{avx512,avx2,portable}.c, chosen once from the
 * CPU's features; sf_cpu_scan_force_isa overrides for tests; and the chain kernels of
 * cpu_scan_chain.c):
 *  - float cumsum of float16/bfloat16/float32/float64 into the same or a wider float,
 *    integer cumsum into an integer result, cummax/cummin of the 32-bit-key dtypes;
 *  - chain kernels: cummax/cummin of int64/float64 along rows, cummax/cummin of every
 *    dtype along columns, cumprod into the same or a wider float (exact input
 *    conversion) or into an integer result, rows and columns;
 *  - "rows" when the scanned dim is innermost in the (contiguous) output: one kernel
 *    call per partition of SF_SCAN_PART elements (short float32 rows of a scan small
 *    enough to be cache-resident: 8 rows at a time on AVX-512, the same bits); an input whose stride along the dim
 *    is not 1 is gathered a chunk at a time into a small buffer, never copied whole;
 *  - "columns" otherwise: the kernels scan tiles of up to SF_SCAN_COLTILE neighbouring
 *    columns (the innermost dims after the scanned one, merged) across all steps.
 * Float cumsum always takes a fast path (rows or columns), so its bits depend on the
 * scanned sequence only (cpu_scan_kern.h): not on layout, tiling or threads.
 *
 * Generic path (logcumsumexp, float cumsum or cumprod with a rounding dtype=
 * conversion or integer inputs): every row is
 * scanned sequentially in double-double (sums) or double, as before (logcumsumexp by
 * the per-element recurrence of lse_tile, its exp and log passes vectorized): tiles that
 * are K steps of one row or one step of up to SF_CPU_BLOCK neighbouring rows.  Integer and
 * max/min scans are exact, so both paths give the same bits.
 *
 * Threads (cpu_threads.c): used when the scan moves at least sf_cpu_scan_mt_min_bytes.
 * Rows (or runs of short rows) and column tiles are independent tasks, claimed in
 * order from an atomic counter.  Long rows that are too few to share out are split by
 * partition and chained: a task reduces its partition (reading it from DRAM into L2),
 * gets the carry into it (published by the task before, or, if that thread is slow,
 * folded from earlier summaries itself: a deterministic look-back), publishes its own
 * outgoing carry = incoming (+) summary, then scans its partition from L2 with the
 * incoming carry (Zhang, Wang and Ross, "Parallel Prefix Sum with SIMD", ADMS 2020:
 * DRAM sees about one read and one write).  Carries are always folded in partition
 * order by the formula a single thread uses, so every thread count gives the same
 * bytes.  Large outputs use non-temporal stores, fenced once per thread.  cumprod is
 * never chained: its left-to-right product cannot be re-associated without changing
 * bits (cpu_scan_kern.h), so its threads share out whole rows and column tiles only.
 */
#include "cpu.h"
#include "cpu_scan_kern.h"
#include "cpu_threads.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Scans that move fewer bytes run on the calling thread: waking workers costs more.
 * A variable so tests can spread small scans over threads. */
int64_t sf_cpu_scan_mt_min_bytes = (int64_t)1 << 20;
/* Outputs at least this large are written with non-temporal stores by the chained
 * partitions of long rows, and on Intel CPUs by whole rows on one thread (they cannot
 * stay in the last-level cache anyway, and skipping the read-for-ownership saves a third
 * of the DRAM traffic; measured to lose on columns on an Intel Xeon, and on whole rows
 * on the AMD build machine).  A variable for measurements. */
int64_t sf_cpu_scan_nt_min_bytes = (int64_t)16 << 20;
/* Scans that move at most this many bytes count as cache-resident (sf_seq.cached): the
 * AVX-512 8-rows float32 kernel, 0.28 against 0.37 ns per element in L2, reads 8 rows
 * at once, which the hardware prefetchers do not follow from DRAM (0.5-1.0 ns per
 * element there against 0.47; bench/NOTES-hD.md).  A variable for measurements. */
int64_t sf_cpu_scan_cached_max_bytes = (int64_t)512 << 10;
/* Elements gathered per kernel call for rows whose input stride is not 1. */
#define SCAN_GATHER (4 * SF_SCAN_BLOCK * 16)
/* How long a chained task waits for its incoming carry before it computes it itself
 * (seconds): a few partition reduces, so that on an idle machine nothing is ever done
 * twice, while a partner thread that lost its core to another process (a shared,
 * noisy 2-core machine) never stalls the others for a whole time slice.  A variable
 * so that tests can force the look-back. */
double sf_cpu_scan_wait_s = 100e-6;

/* ------------------------------------------------------------------------------ */
/* Kernel selection                                                                 */
/* ------------------------------------------------------------------------------ */

static _Atomic(const sf_scan_kernels *) scan_forced;

#ifdef SF_SCAN_X86
#include <cpuid.h>
/* F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports does not
 * know the name "f16c". */
static bool cpu_has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}
#endif

static const sf_scan_kernels *scan_detect(void) {
#ifdef SF_SCAN_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        cpu_has_f16c()) {
        atomic_store_explicit(&sf_scan_avx512_bf16, __builtin_cpu_supports("avx512bf16") != 0,
                              memory_order_relaxed);
        /* Intel: the row network on whole registers (one shuffle port there); AMD Zen 4
         * splits 512-bit shuffles in two, so the halves (cpu_scan_avx512w.c) */
        return __builtin_cpu_is("intel") ? &sf_scan_avx512w_kernels : &sf_scan_avx512_kernels;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c())
        return &sf_scan_avx2_kernels;
#endif
    return &sf_scan_portable_kernels;
}

static const sf_scan_kernels *scan_kernels(void) {
    static _Atomic(const sf_scan_kernels *) detected;
    const sf_scan_kernels *k = atomic_load_explicit(&scan_forced, memory_order_acquire);
    if (k) return k;
    k = atomic_load_explicit(&detected, memory_order_acquire);
    if (!k) {
        k = scan_detect();
        atomic_store_explicit(&detected, k, memory_order_release);
    }
    return k;
}

const char *sf_cpu_scan_isa(void) { return scan_kernels()->name; }

/* Whether the CPU is Intel's (the store policies differ: see the streaming stores). */
static bool scan_on_intel(void) {
#ifdef SF_SCAN_X86
    static atomic_int known; /* 0: not asked yet, 1: no, 2: yes */
    int v = atomic_load_explicit(&known, memory_order_relaxed);
    if (v == 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_is("intel") ? 2 : 1;
        atomic_store_explicit(&known, v, memory_order_relaxed);
    }
    return v == 2;
#else
    return false;
#endif
}

bool sf_cpu_scan_force_isa(const char *name) {
    if (!name) {
        atomic_store_explicit(&scan_forced, NULL, memory_order_release);
        return true;
    }
    const sf_scan_kernels *want = NULL;
    if (strcmp(name, "portable") == 0) want = &sf_scan_portable_kernels;
#ifdef SF_SCAN_X86
    const sf_scan_kernels *best = scan_detect();
    if (strcmp(name, "avx2") == 0 && best != &sf_scan_portable_kernels) want = &sf_scan_avx2_kernels;
    const bool avx512 = best == &sf_scan_avx512_kernels || best == &sf_scan_avx512w_kernels;
    if (strcmp(name, "avx512") == 0 && avx512) want = &sf_scan_avx512_kernels;
    if (strcmp(name, "avx512w") == 0 && avx512) want = &sf_scan_avx512w_kernels;
#endif
    if (!want) return false;
    atomic_store_explicit(&scan_forced, want, memory_order_release);
    return true;
}

/* ------------------------------------------------------------------------------ */
/* Generic path                                                                     */
/* ------------------------------------------------------------------------------ */

typedef enum scan_kind {
    K_SUM_F, K_SUM_I, K_PROD_F, K_PROD_I, K_MAX_F, K_MAX_I, K_MIN_F, K_MIN_I, K_LSE
} scan_kind;

/* Accumulators of up to SF_CPU_BLOCK rows and the blocks of one tile. */
typedef struct scan_work {
    double hi[SF_CPU_BLOCK], lo[SF_CPU_BLOCK]; /* float state (lo: sum compensation) */
    double sh[SF_CPU_BLOCK], last[SF_CPU_BLOCK]; /* logcumsumexp: sum's high part, value */
    double ta[SF_CPU_BLOCK], tb[SF_CPU_BLOCK];   /* logcumsumexp: per-element temporaries */
    int64_t iv[SF_CPU_BLOCK];                  /* integer state */
    int64_t idx[SF_CPU_BLOCK];                 /* cummax/cummin index */
    double xf[SF_CPU_BLOCK], yf[SF_CPU_BLOCK];
    int64_t xi[SF_CPU_BLOCK], yi[SF_CPU_BLOCK], yidx[SF_CPU_BLOCK];
} scan_work;

/* ---- logcumsumexp ------------------------------------------------------------- *
 * float16/bfloat16/float32 results (float64 ones keep log_add_exp's chain, below).
 * Per row, the state is the running maximum M and S = sum_j exp(x_j - M) as a
 * double-double (S >= 1 once a finite element is in: the maximum's own term is 1).
 * Element x: M' = max(M, x), S' = S * exp(M - M') + exp(x - M') (TwoSum into the
 * double-double; the rescale is exactly 1 while the maximum stays), value
 * M' + log(S'.hi + S'.lo).  The recurrence is per element, so tiles, row or column
 * walks and thread counts all give the same bits; the two exponentials and the log of
 * a whole tile are computed in separate, branch-free passes (below) that vectorize,
 * where each step used to call libm's exp and log1p in a chain.  Error: a few ulps of double in S and its log, far inside the
 * float32 ulp and the 2^-36 * (1 + |exact|) of docs/OPS.md.  An infinite maximum gives
 * that infinity (log of S = 1), a NaN propagates, -inf elements add nothing. */

/* float64 results keep the chain of log(exp(a) + exp(b)) (as the reference evaluator
 * computes it): the double pipeline below is a few ulps of double off, which is nothing
 * to a float32 result but is visible in a float64 one.  Two equal infinities give that
 * infinity, NaN propagates. */
static inline double log_add_exp(double a, double b) {
    if (isnan(a) || isnan(b)) return a + b;
    double mx = a > b ? a : b, mn = a > b ? b : a;
    if (mx == mn && isinf(mx)) return mx;
    return mx + log1p(exp(mn - mx));
}

/* e^x for x <= 0 (0 below -708, where it is below every S's ulp; exactly 1 at 0):
 * x = k ln2 + r, |r| <= ln2/2 (Cody-Waite: ln2's high part has 32 significant bits, so
 * k * LN2_HI is exact), e^r by its Taylor series to r^13/13!, scaled by 2^k through the
 * exponent bits.  No branches, no integer conversions: the magic constant 1.5 * 2^52
 * rounds x*log2(e) to the integer k and leaves k in the low bits. */
static inline double exp_nonpos(double x) {
    const double MAGIC = 0x1.8p52, LOG2E = 0x1.71547652b82fep0;
    const double LN2_HI = 0x1.62e42feep-1, LN2_LO = 0x1.a39ef35793c76p-33;
    double xc = x > -708.0 ? x : -708.0;
    double t = xc * LOG2E + MAGIC;
    double k = t - MAGIC;
    double r = (xc - k * LN2_HI) - k * LN2_LO;
    double p = 1.0 / 6227020800.0; /* 1/13! */
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    int64_t ki = (int64_t)(sf_cpu_bits(t) - sf_cpu_bits(MAGIC));
    double scale = sf_cpu_from_bits((uint64_t)(ki + 1023) << 52);
    return x > -708.0 ? p * scale : 0.0;
}

/* log(s) for finite s >= 1: s = 2^e * f with f in [sqrt(1/2), sqrt(2)), log f =
 * 2 atanh((f-1)/(f+1)) by its series (|z| <= 0.172: eleven terms), e * ln2 in two
 * parts.  Exactly 0 at s = 1. */
static inline double log_ge1(double s) {
    const double MAGIC = 0x1.8p52;
    const double LN2_HI = 0x1.62e42feep-1, LN2_LO = 0x1.a39ef35793c76p-33;
    uint64_t b = sf_cpu_bits(s);
    int64_t e = (int64_t)(b >> 52) - 1023;
    double f = sf_cpu_from_bits((b & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
    bool big = f > 0x1.6a09e667f3bcdp0;
    f = big ? f * 0.5 : f;
    e = big ? e + 1 : e;
    double ed = sf_cpu_from_bits(sf_cpu_bits(MAGIC) + (uint64_t)e) - MAGIC;
    double z = (f - 1.0) / (f + 1.0), z2 = z * z;
    double p = 1.0 / 23.0;
    p = p * z2 + 1.0 / 21.0;
    p = p * z2 + 1.0 / 19.0;
    p = p * z2 + 1.0 / 17.0;
    p = p * z2 + 1.0 / 15.0;
    p = p * z2 + 1.0 / 13.0;
    p = p * z2 + 1.0 / 11.0;
    p = p * z2 + 1.0 / 9.0;
    p = p * z2 + 1.0 / 7.0;
    p = p * z2 + 1.0 / 5.0;
    p = p * z2 + 1.0 / 3.0;
    p = p * z2 + 1.0;
    return ed * LN2_HI + (2.0 * z * p + ed * LN2_LO);
}

/* The element-wise passes of a logcumsumexp tile, cloned for AVX-512 and AVX2 (picked
 * at run time) so that they vectorize; IEEE double operations only, with no contraction
 * into fused multiply-adds (ISO C mode), so every clone gives the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define LSE_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
#endif
#ifndef LSE_CLONES
#define LSE_CLONES
#endif

LSE_CLONES static void lse_exp_pass(double *restrict a, double *restrict d, int64_t n) {
    for (int64_t q = 0; q < n; q++) {
        a[q] = exp_nonpos(a[q]);
        d[q] = exp_nonpos(d[q]);
    }
}

LSE_CLONES static void lse_log_pass(double *restrict y, const double *restrict a, int64_t n) {
    for (int64_t q = 0; q < n; q++) {
        double sv = a[q] >= 1.0 && a[q] < INFINITY ? a[q] : 1.0;
        y[q] = y[q] + log_ge1(sv);
    }
}

/* One tile of logcumsumexp: K steps x m rows (element q = t*m + j), state of row j in
 * hi (M), sh/lo (S), last (the value so far, for exclusive outputs). */
static void lse_tile(scan_work *w, bool excl, int64_t K, int64_t m) {
    double *restrict M = w->hi, *restrict SH = w->sh, *restrict SL = w->lo;
    double *restrict last = w->last;
    const double *restrict x = w->xf;
    double *restrict a = w->ta, *restrict d = w->tb, *restrict y = w->yf;
    const int64_t n = K * m;
    /* pass 1 (in order): the running maxima; a = M_old - M_new and d = x - M_new
     * (arguments of the two exponentials) where M_new is finite, else NaN markers */
#define LSE_MAX(mv)                                                                     \
    do {                                                                                \
        double mo = mv, xv = x[q];                                                      \
        double mn = isnan(mo) ? mo : isnan(xv) ? xv : (xv > mo ? xv : mo);              \
        mv = mn;                                                                        \
        y[q] = mn;                                                                      \
        bool fin = isfinite(mn);                                                        \
        a[q] = fin ? (mo == -INFINITY ? -INFINITY : mo - mn) : 0.0;                     \
        d[q] = fin ? xv - mn : 0.0;                                                     \
    } while (0)
    if (m == 1) {
        double mv = M[0];
        for (int64_t q = 0; q < K; q++) LSE_MAX(mv);
        M[0] = mv;
    } else {
        for (int64_t t = 0; t < K; t++)
            for (int64_t j = 0; j < m; j++) {
                const int64_t q = t * m + j;
                LSE_MAX(M[j]);
            }
    }
#undef LSE_MAX
    /* pass 2 (vectorized): the exponentials */
    lse_exp_pass(a, d, n);
    /* pass 3 (in order): S = S * rescale + term, as a double-double; a = S's value.
     * A rescale of exactly 1 (the maximum stayed) skips its two products: the same bits,
     * one multiply less on the dependency chain.  Rows (m = 1) keep S in registers. */
#define LSE_STEP(shv, slv)                                                              \
    do {                                                                                \
        if (!isfinite(y[q])) { /* an infinite maximum or a NaN: the value is M */      \
            a[q] = 1.0;                                                                 \
            break;                                                                      \
        }                                                                               \
        double hi = shv, lo = slv, e = d[q];                                            \
        if (a[q] != 1.0) {                                                              \
            hi *= a[q];                                                                 \
            lo *= a[q];                                                                 \
        }                                                                               \
        double sum = hi + e, bb = sum - hi;                                             \
        lo += (hi - (sum - bb)) + (e - bb);                                             \
        shv = sum;                                                                      \
        slv = lo;                                                                       \
        a[q] = sum + lo;                                                                \
    } while (0)
    if (m == 1) {
        double sh = SH[0], sl = SL[0];
        for (int64_t q = 0; q < K; q++) LSE_STEP(sh, sl);
        SH[0] = sh;
        SL[0] = sl;
    } else {
        for (int64_t t = 0; t < K; t++)
            for (int64_t j = 0; j < m; j++) {
                const int64_t q = t * m + j;
                LSE_STEP(SH[j], SL[j]);
            }
    }
#undef LSE_STEP
    /* pass 4 (vectorized): value = M + log(S) (log 1 = 0 for the markers) */
    lse_log_pass(y, a, n);
    /* exclusive outputs: each element gets its row's value before it */
    if (excl) {
        for (int64_t t = 0; t < K; t++)
            for (int64_t j = 0; j < m; j++) {
                const int64_t q = t * m + j;
                double v = y[q];
                y[q] = last[j];
                last[j] = v;
            }
    }
}

static void init_state(scan_work *w, scan_kind k, scanfuse_dtype dt, int64_t m) {
    for (int64_t j = 0; j < m; j++) {
        w->hi[j] = 0.0;
        w->lo[j] = 0.0;
        w->iv[j] = 0;
        w->idx[j] = -1;
    }
    double fv = 0.0;
    int64_t iv = 0;
    switch (k) {
    case K_SUM_F: case K_SUM_I: break;
    case K_PROD_F: fv = 1.0; break;
    case K_PROD_I: iv = 1; break;
    case K_MAX_F: fv = -INFINITY; break;
    case K_MIN_F: fv = INFINITY; break;
    case K_LSE: fv = -INFINITY; break; /* M; S = 0 + 0 and the value -inf below */
    case K_MAX_I: iv = sf_int_min(dt); break; /* bool: false */
    case K_MIN_I: iv = sf_int_max(dt); break; /* bool: true */
    }
    for (int64_t j = 0; j < m; j++) {
        w->hi[j] = fv;
        w->iv[j] = iv;
        w->lo[j] = w->sh[j] = 0.0;
        w->last[j] = -INFINITY;
    }
}

/* Loops over a tile: step t (position pos of the scanned dim), row j, element q0 + j.
 * The op switch sits outside it, so the element loop holds one op's code only. */
#define TILE_LOOP(...)                                                                 \
    if (m == 1) { /* row mode: j is the constant 0, so the state can stay in registers */\
        for (int64_t t = 0; t < K; t++) {                                              \
            const int64_t pos = pos0 + t * dpos, q0 = t;                               \
            const int64_t j = 0;                                                       \
            (void)pos;                                                                 \
            { __VA_ARGS__ }                                                            \
        }                                                                              \
    } else {                                                                           \
        for (int64_t t = 0; t < K; t++) {                                              \
            const int64_t pos = pos0 + t * dpos, q0 = t * m;                           \
            (void)pos;                                                                 \
            for (int64_t j = 0; j < m; j++) { __VA_ARGS__ }                            \
        }                                                                              \
    }

/* Advances the accumulators over a tile of K steps x m rows (element q = t*m + j is
 * step t of row j; step t is position pos0 + t*dpos of the scanned dim) and writes
 * the outputs: the state after (inclusive) or before (exclusive) each element.
 * cummax/cummin follow PyTorch: take x if isnan(x) or (!isnan(best) and x >= best). */
static void scan_tile(scan_work *w, scan_kind k, scanfuse_dtype dt, bool excl, int64_t K,
                      int64_t m, int64_t pos0, int64_t dpos) {
    /* restrict: the blocks are distinct arrays, so the state may live in registers */
    const double *restrict xf = w->xf;
    const int64_t *restrict xi = w->xi;
    double *restrict hi = w->hi, *restrict lo = w->lo, *restrict yf = w->yf;
    int64_t *restrict iv = w->iv, *restrict idx = w->idx, *restrict yi = w->yi;
    int64_t *restrict yidx = w->yidx;
    switch (k) {
    case K_SUM_F:
        if (excl) {
            TILE_LOOP(yf[q0 + j] = sf_cpu_sum2_result(hi[j], lo[j], dt);
                      sf_cpu_sum2_add(&hi[j], &lo[j], xf[q0 + j]);)
        } else {
            TILE_LOOP(sf_cpu_sum2_add(&hi[j], &lo[j], xf[q0 + j]);
                      yf[q0 + j] = sf_cpu_sum2_result(hi[j], lo[j], dt);)
        }
        break;
    case K_PROD_F: /* the product is hi * 2^iv (sf_prodx) */
        TILE_LOOP(const sf_prodx before = {hi[j], iv[j]};
                  const sf_prodx after = sf_prodx_mul(before, sf_prodx_of(xf[q0 + j]));
                  hi[j] = after.m; iv[j] = after.e;
                  yf[q0 + j] = sf_prodx_value(excl ? before : after);)
        break;
    case K_LSE:
        if (dt == SCANFUSE_FLOAT64) { /* every bit counts: the reference's own chain */
            TILE_LOOP(double before = hi[j]; hi[j] = log_add_exp(hi[j], xf[q0 + j]);
                      yf[q0 + j] = excl ? before : hi[j];)
        } else {
            lse_tile(w, excl, K, m);
        }
        break;
    case K_SUM_I:
        TILE_LOOP(int64_t before = iv[j]; iv[j] = sf_cpu_add_i64(iv[j], xi[q0 + j]);
                  yi[q0 + j] = excl ? before : iv[j];)
        break;
    case K_PROD_I:
        TILE_LOOP(int64_t before = iv[j]; iv[j] = sf_cpu_mul_i64(iv[j], xi[q0 + j]);
                  yi[q0 + j] = excl ? before : iv[j];)
        break;
    case K_MAX_F:
        TILE_LOOP(double x = xf[q0 + j], before = hi[j]; int64_t before_i = idx[j];
                  if (isnan(x) || (!isnan(hi[j]) && x >= hi[j])) { hi[j] = x; idx[j] = pos; }
                  yf[q0 + j] = excl ? before : hi[j];
                  yidx[q0 + j] = excl ? before_i : idx[j];)
        break;
    case K_MIN_F:
        TILE_LOOP(double x = xf[q0 + j], before = hi[j]; int64_t before_i = idx[j];
                  if (isnan(x) || (!isnan(hi[j]) && x <= hi[j])) { hi[j] = x; idx[j] = pos; }
                  yf[q0 + j] = excl ? before : hi[j];
                  yidx[q0 + j] = excl ? before_i : idx[j];)
        break;
    case K_MAX_I:
        TILE_LOOP(int64_t x = xi[q0 + j], before = iv[j], before_i = idx[j];
                  if (x >= iv[j]) { iv[j] = x; idx[j] = pos; }
                  yi[q0 + j] = excl ? before : iv[j];
                  yidx[q0 + j] = excl ? before_i : idx[j];)
        break;
    case K_MIN_I:
        TILE_LOOP(int64_t x = xi[q0 + j], before = iv[j], before_i = idx[j];
                  if (x <= iv[j]) { iv[j] = x; idx[j] = pos; }
                  yi[q0 + j] = excl ? before : iv[j];
                  yidx[q0 + j] = excl ? before_i : idx[j];)
        break;
    }
}

static bool kind_is_float(scan_kind k) {
    return k == K_SUM_F || k == K_PROD_F || k == K_MAX_F || k == K_MIN_F || k == K_LSE;
}

/* Loads a tile's input block (n elements from element offset off, step stride). */
static void load_tile(scan_work *w, scan_kind k, const sf_view *in, scanfuse_dtype dt,
                      int64_t off, int64_t stride, int64_t n) {
    if (kind_is_float(k)) sf_cpu_gather_f64(in->data, in->dtype, off, stride, n, dt, w->xf);
    else sf_cpu_gather_i64(in->data, in->dtype, off, stride, n, dt, w->xi);
}

static void store_tile(const scan_work *w, scan_kind k, const sf_view *out0,
                       const sf_view *out1, int64_t off, int64_t stride, int64_t n) {
    if (kind_is_float(k)) sf_cpu_store_f64(out0->data, out0->dtype, off, stride, n, w->yf);
    else sf_cpu_store_i64(out0->data, out0->dtype, off, stride, n, w->yi);
    if (out1) sf_cpu_store_i64(out1->data, out1->dtype, off, stride, n, w->yidx);
}


size_t sf_cpu_scan_work_size(void) { return sizeof(scan_work); }

typedef struct generic_job {
    scan_kind k;
    scanfuse_dtype dt;
    bool excl, row_mode;
    const sf_view *in, *out0, *out1;
    int64_t n, in_d, out_d, first, dir;
    int no;
    int64_t oshape[SF_MAX_DIMS], ostr_in[SF_MAX_DIMS], ostr_out[SF_MAX_DIMS];
    void *work; /* the caller's work area (thread 0) */
} generic_job;

/* Item i of the walk (a row, or a group of up to SF_CPU_BLOCK rows) is done by thread
 * i % nth: every item is independent, so the assignment does not change any bytes. */
static void generic_task(void *ctx, int tid, int nth) {
    const generic_job *g = ctx;
    scan_work local;
    scan_work *w = tid == 0 ? (scan_work *)g->work : &local;
    const int64_t *sp[2] = {g->ostr_in, g->ostr_out};
    sf_cpu_iter it;
    int64_t offs[2], m, item = 0;
    sf_cpu_iter_init(&it, g->no, g->oshape, 2, sp);
    if (g->row_mode) {
        while (sf_cpu_iter_next(&it, 1, offs) > 0) {
            if (item++ % nth != tid) continue;
            init_state(w, g->k, g->dt, 1);
            for (int64_t t0 = 0; t0 < g->n; t0 += SF_CPU_BLOCK) {
                int64_t K = g->n - t0 < SF_CPU_BLOCK ? g->n - t0 : SF_CPU_BLOCK;
                int64_t pos0 = g->first + t0 * g->dir;
                load_tile(w, g->k, g->in, g->dt, offs[0] + pos0 * g->in_d, g->dir * g->in_d, K);
                scan_tile(w, g->k, g->dt, g->excl, K, 1, pos0, g->dir);
                store_tile(w, g->k, g->out0, g->out1, offs[1] + pos0 * g->out_d, g->dir * g->out_d, K);
            }
        }
    } else {
        while ((m = sf_cpu_iter_next(&it, SF_CPU_BLOCK, offs)) > 0) {
            if (item++ % nth != tid) continue;
            int64_t s_in = sf_cpu_iter_stride(&it, 0), s_out = sf_cpu_iter_stride(&it, 1);
            init_state(w, g->k, g->dt, m);
            for (int64_t t = 0; t < g->n; t++) {
                int64_t pos = g->first + t * g->dir;
                load_tile(w, g->k, g->in, g->dt, offs[0] + pos * g->in_d, s_in, m);
                scan_tile(w, g->k, g->dt, g->excl, 1, m, pos, g->dir);
                store_tile(w, g->k, g->out0, g->out1, offs[1] + pos * g->out_d, s_out, m);
            }
        }
    }
}

static void generic_scan(scan_kind k, int d, bool excl, bool rev, const sf_view *in,
                         const sf_view *out0, const sf_view *out1, void *work, int threads) {
    generic_job g;
    memset(&g, 0, sizeof g);
    g.k = k;
    g.dt = out0->dtype;
    g.excl = excl;
    g.in = in;
    g.out0 = out0;
    g.out1 = out1;
    g.n = in->shape[d];
    g.in_d = in->strides[d];
    g.out_d = out0->strides[d];
    g.first = rev ? g.n - 1 : 0;
    g.dir = rev ? -1 : 1;
    g.work = work;
    /* The other dims, for the walk over rows (out1 shares out0's contiguous layout). */
    bool later_dims = false;
    for (int e = 0; e < in->ndim; e++) {
        if (e == d) continue;
        if (e > d && in->shape[e] > 1) later_dims = true;
        g.oshape[g.no] = in->shape[e];
        g.ostr_in[g.no] = in->strides[e];
        g.ostr_out[g.no] = out0->strides[e];
        g.no++;
    }
    /* Row mode: one row at a time, K contiguous-in-output steps per tile.  Column
     * mode: up to SF_CPU_BLOCK rows that are neighbours along the innermost other dim
     * advance together, one step per tile. */
    g.row_mode = !later_dims && g.n >= 16;
    sf_pool_run(threads, generic_task, &g);
}

/* ------------------------------------------------------------------------------ */
/* Fast paths: shared state                                                          */
/* ------------------------------------------------------------------------------ */

/* FK_MAX64 and FK_PROD run the chain kernels of cpu_scan_chain.c. */
typedef enum fast_kind { FK_FSUM, FK_ISUM, FK_MAX, FK_MAX64, FK_PROD } fast_kind;

/* The carry of a scan at a partition boundary. */
typedef struct scarry {
    sf_dd d;       /* FK_FSUM */
    int64_t i;     /* FK_ISUM, FK_PROD of integers */
    sf_maxc m;     /* FK_MAX */
    sf_maxc64 m64; /* FK_MAX64 */
    sf_prodx p;    /* FK_PROD of floats */
} scarry;

/* Per chained task (one partition of one row): its summary (part_reduce) and its
 * incoming carry, each written once by the task's owner (the carry: by the owner of
 * the task before it) and flagged in `state` with release order. */
enum { SLOT_AGG = 1, SLOT_CIN = 2 };
typedef struct part_slot {
    _Alignas(64) atomic_int state;
    scarry agg, cin;
} part_slot;

typedef struct row_job {
    const sf_scan_kernels *K;
    fast_kind kind;
    const sf_view *in, *out0, *out1;
    int64_t n, nrows, in_d, out_d, Q, rows_per_task, ntasks;
    bool excl, rev, is_min, nt, unit, chained, cached;
    int nod;
    int64_t oshape[SF_MAX_DIMS], ois[SF_MAX_DIMS], oos[SF_MAX_DIMS];
    atomic_llong next;
    part_slot *slots; /* chained: one per task */
} row_job;

/* The logical sequence of row r (see sf_seq); *io gets the row's input offset. */
static void row_seq(const row_job *j, int64_t r, sf_seq *s, int64_t *io) {
    int64_t ii = 0, oo = 0, rem = r;
    for (int k = j->nod - 1; k >= 0; k--) {
        int64_t q = rem % j->oshape[k];
        rem /= j->oshape[k];
        ii += q * j->ois[k];
        oo += q * j->oos[k];
    }
    int64_t n = j->n, ex = j->excl ? 1 : 0, od = j->out_d;
    memset(s, 0, sizeof *s);
    s->x = j->in->data;
    s->xdt = j->in->dtype;
    s->y = j->out0->data;
    s->ydt = j->out0->dtype;
    s->yi = j->out1 ? j->out1->data : NULL;
    s->lo = ex;
    s->len = n;
    s->nt = j->nt;
    s->cached = j->cached;
    s->is_min = j->is_min;
    if (!j->rev) {
        s->x0 = ii - ex;
        s->xs = 1;
        s->y0 = oo;
        s->ys = od;
        s->ix0 = -ex;
        s->ixs = 1;
    } else {
        s->x0 = ii + n - 1 + ex;
        s->xs = -1;
        s->y0 = oo + (n - 1) * od;
        s->ys = -od;
        s->ix0 = n - 1 + ex;
        s->ixs = -1;
    }
    *io = ii;
}

static scarry carry_init(const row_job *j) {
    scarry c;
    memset(&c, 0, sizeof c);
    c.d.hi = c.d.lo = -0.0;
    if (j->kind == FK_MAX) {
        scanfuse_dtype dt = j->in->dtype;
        bool mn = j->is_min;
        if (sf_dtype_is_float(dt)) {
            c.m.key = sf_key_f32bits(mn ? 0x7F800000u : 0xFF800000u, mn);
            c.m.vbits = dt == SCANFUSE_FLOAT32 ? (mn ? 0x7F800000u : 0xFF800000u)
                        : dt == SCANFUSE_FLOAT16 ? (mn ? 0x7C00u : 0xFC00u)
                                                  : (mn ? 0x7F80u : 0xFF80u);
        } else {
            int64_t v = mn ? sf_int_max(dt) : sf_int_min(dt);
            c.m.key = mn ? ~(int32_t)v : (int32_t)v;
            c.m.vbits = (uint64_t)v;
        }
        c.m.idx = -1;
    }
    if (j->kind == FK_MAX64) {
        c.m64.vbits = sf_ident64_bits(j->in->dtype, j->is_min);
        c.m64.key = sf_key64(c.m64.vbits, j->in->dtype, j->is_min);
        c.m64.idx = -1;
    }
    c.p = (sf_prodx){1.0, 0};
    if (j->kind == FK_PROD) c.i = 1;
    return c;
}

/* Copies logical [a, b) of a row whose input stride is not 1 into tmp, in the order
 * the kernels read it (reversed for a reverse scan; see row_range). */
#define GATHER_LOOP(ES)                                                                \
    for (int64_t q = qa; q < b; q++) {                                                 \
        int64_t orig = j->rev ? n - 1 - q + ex : q - ex;                               \
        int64_t ti = j->rev ? b - 1 - q : q - a;                                       \
        memcpy(t + ti * ES, x + (io + orig * j->in_d) * ES, ES);                       \
    }

static void gather_row(const row_job *j, int64_t io, int64_t a, int64_t b, void *tmp) {
    int64_t n = j->n, ex = j->excl ? 1 : 0, qa = a > ex ? a : ex;
    const char *x = (const char *)j->in->data;
    char *t = (char *)tmp;
    switch (scanfuse_dtype_size(j->in->dtype)) { /* fixed sizes: the copies inline */
    case 1: GATHER_LOOP(1) break;
    case 2: GATHER_LOOP(2) break;
    case 4: GATHER_LOOP(4) break;
    default: GATHER_LOOP(8) break;
    }
}
#undef GATHER_LOOP

enum { OP_SCAN, OP_REDUCE };

static void row_kernel(const row_job *j, const sf_seq *s, int64_t a, int64_t b, int op, double cs,
                       sf_dd *L, scarry *c) {
    const sf_scan_kernels *K = j->K;
    switch (j->kind) {
    case FK_FSUM:
        if (op == OP_SCAN) K->fsum_scan(s, a, b, cs, L);
        else K->fsum_reduce(s, a, b, L);
        break;
    case FK_ISUM:
        if (op == OP_SCAN) K->isum_scan(s, a, b, &c->i);
        else K->isum_reduce(s, a, b, &c->i);
        break;
    case FK_MAX:
        if (op == OP_SCAN) K->max_scan(s, a, b, &c->m);
        else K->max_reduce(s, a, b, &c->m);
        break;
    case FK_MAX64: sf_scan_max64(s, a, b, &c->m64, op == OP_SCAN); break;
    case FK_PROD: SF_ASSERT(op == OP_SCAN); sf_scan_prod(s, a, b, &c->p, &c->i); break;
    }
}

/* A row whose input stride is not 1: the kernel runs on chunks gathered into a buffer
 * (out of line: the buffer is big, and most rows never need it). */
static __attribute__((noinline)) void row_gathered(const row_job *j, const sf_seq *s, int64_t io,
                                                   int64_t a, int64_t b, int op, double cs,
                                                   sf_dd *L, scarry *c) {
    _Alignas(64) char tmp[SCAN_GATHER * 8];
    for (int64_t ca = a; ca < b;) {
        int64_t cb = ca + SCAN_GATHER < b ? ca + SCAN_GATHER : b;
        gather_row(j, io, ca, cb, tmp);
        sf_seq t = *s;
        t.x = tmp;
        t.x0 = j->rev ? cb - 1 : -ca;
        t.xs = j->rev ? -1 : 1;
        row_kernel(j, &t, ca, cb, op, cs, L, c);
        ca = cb;
    }
}

/* Runs the kernel over logical [a, b) of the row (a a multiple of SF_SCAN_BLOCK).
 * FK_FSUM: cs is the partition carry (scan) and *L the partition-local carry; FK_ISUM
 * and FK_MAX: c is the running carry, advanced. */
static inline void row_range(const row_job *j, const sf_seq *s, int64_t io, int64_t a, int64_t b,
                             int op, double cs, sf_dd *L, scarry *c) {
    if (j->unit) row_kernel(j, s, a, b, op, cs, L, c);
    else row_gathered(j, s, io, a, b, op, cs, L, c);
}

/* Orders this thread's non-temporal stores before whatever the caller does next (the
 * pool's completion handshake does not order write-combining stores). */
static void nt_fence(bool nt) {
#ifdef SF_SCAN_X86
    if (nt) __builtin_ia32_sfence();
#else
    (void)nt;
#endif
}

static sf_dd fsum_carry(sf_dd c, sf_dd l);

/* Scans partition [a, b) of a row with incoming carry c; returns the outgoing carry. */
static scarry part_scan(const row_job *j, const sf_seq *s, int64_t io, int64_t a, int64_t b,
                        scarry c) {
    if (j->kind == FK_FSUM) {
        sf_dd L = {-0.0, -0.0};
        row_range(j, s, io, a, b, OP_SCAN, c.d.hi + c.d.lo, &L, &c);
        c.d = fsum_carry(c.d, L);
    } else {
        row_range(j, s, io, a, b, OP_SCAN, 0.0, NULL, &c);
    }
    /* the identity of a reverse exclusive cummax/cummin has index -1, not n */
    if ((j->kind == FK_MAX || j->kind == FK_MAX64) && j->excl && j->rev && a == 0) {
        nt_fence(j->nt); /* the kernel may have streamed this element */
        ((int64_t *)s->yi)[s->y0] = -1;
    }
    return c;
}

/* The summary of partition [a, b) that part_combine folds into a carry. */
static scarry part_reduce(const row_job *j, const sf_seq *s, int64_t io, int64_t a, int64_t b) {
    scarry l;
    memset(&l, 0, sizeof l);
    l.d.hi = l.d.lo = -0.0;
    l.m.key = INT32_MIN; /* every element beats it */
    l.m.idx = -1;
    l.m64.key = INT64_MIN;
    l.m64.idx = -1;
    row_range(j, s, io, a, b, OP_REDUCE, 0.0, &l.d, &l);
    return l;
}

/* c (+) L for float sums.  A NaN carry is made the one default NaN: which NaN a sum of
 * two NaNs (or of +inf and -inf) gives depends on operand order, and the reduce and
 * scan kernels may order the same additions differently, so without this a NaN's sign
 * could depend on whether a partition's carry came from a reduce (several threads) or
 * from the scan itself (one thread). */
static sf_dd fsum_carry(sf_dd c, sf_dd l) {
    sf_dd r = sf_dd_add(c, l);
    if (isnan(r.hi) || isnan(r.lo)) {
        r.hi = NAN;
        r.lo = 0.0;
    }
    return r;
}

static scarry part_combine(const row_job *j, scarry c, scarry l) {
    switch (j->kind) {
    case FK_FSUM: c.d = fsum_carry(c.d, l.d); break;
    case FK_ISUM: c.i = sf_cpu_add_i64(c.i, l.i); break;
    case FK_MAX:
        if (l.m.idx != -1 && l.m.key >= c.m.key) c.m = l.m; /* ties: the later wins */
        break;
    case FK_MAX64:
        if (l.m64.idx != -1 && l.m64.key >= c.m64.key) c.m64 = l.m64;
        break;
    case FK_PROD: SF_ASSERT(!"cumprod partitions are not chained"); break;
    }
    return c;
}

static void row_whole(const row_job *j, int64_t r) {
    sf_seq s;
    int64_t io;
    row_seq(j, r, &s, &io);
    scarry c = carry_init(j);
    for (int64_t a = 0; a < j->n; a += SF_SCAN_PART) {
        int64_t b = a + SF_SCAN_PART < j->n ? a + SF_SCAN_PART : j->n;
        c = part_scan(j, &s, io, a, b, c);
    }
}

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The carry into chained task k (partition p of its row).  Normally the owner of task
 * k-1 publishes it soon; if it does not within sf_cpu_scan_wait_s (that thread lost its
 * core),
 * look back: from the nearest earlier task whose incoming carry is known, fold the
 * partitions up to k in order, using their published summaries or reducing them here.
 * The fold is the same sequence of part_combine calls the owners would make, so the
 * carry has the same bits whoever computes it. */
static scarry part_carry_in(const row_job *j, const sf_seq *s, int64_t io, int64_t k, int64_t p) {
    part_slot *me = &j->slots[k];
    if (p == 0) return carry_init(j);
    unsigned spins = 0;
    double t0 = -1;
    while (!(atomic_load_explicit(&me->state, memory_order_acquire) & SLOT_CIN)) {
        if ((spins & 63) == 63) {
            double t = wall_s();
            if (t0 < 0) t0 = t;
            else if (t - t0 > sf_cpu_scan_wait_s) break;
        }
        sf_pool_relax(&spins);
    }
    if (atomic_load_explicit(&me->state, memory_order_acquire) & SLOT_CIN) return me->cin;
    int64_t first = k - p, i = k - 1;
    while (i > first && !(atomic_load_explicit(&j->slots[i].state, memory_order_acquire) & SLOT_CIN)) i--;
    scarry c = i == first ? carry_init(j) : j->slots[i].cin;
    for (; i < k; i++) {
        part_slot *q = &j->slots[i];
        int64_t qa = (i - first) * SF_SCAN_PART, qb = qa + SF_SCAN_PART < j->n ? qa + SF_SCAN_PART : j->n;
        scarry l = atomic_load_explicit(&q->state, memory_order_acquire) & SLOT_AGG
                       ? q->agg
                       : part_reduce(j, s, io, qa, qb);
        c = part_combine(j, c, l);
    }
    return c;
}

static void row_task(void *ctx, int tid, int nth) {
    row_job *j = ctx;
    (void)tid;
    for (;;) {
        int64_t k = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (k >= j->ntasks) break;
        if (!j->chained) {
            int64_t r0 = k * j->rows_per_task, r1 = r0 + j->rows_per_task;
            if (r1 > j->nrows) r1 = j->nrows;
            if (j->kind == FK_FSUM && j->unit && j->Q == 1 && j->nod <= 1) {
                /* short rows at a constant stride: one kernel call for the lot */
                sf_seq s;
                int64_t io;
                row_seq(j, r0, &s, &io);
                j->K->fsum_rows(&s, r1 - r0, j->nod ? j->ois[0] : 0, j->nod ? j->oos[0] : 0);
                continue;
            }
            if (j->kind == FK_PROD && j->unit && j->nod <= 1 && sf_dtype_is_float(j->out0->dtype)) {
                /* float cumprod rows at a constant stride: four chains at a time */
                sf_seq s;
                int64_t io;
                row_seq(j, r0, &s, &io);
                sf_scan_prod_rows(&s, r1 - r0, j->nod ? j->ois[0] : 0, j->nod ? j->oos[0] : 0);
                continue;
            }
            for (int64_t r = r0; r < r1; r++) row_whole(j, r);
            continue;
        }
        /* chained partitions: task k is partition p of row r */
        int64_t r = k / j->Q, p = k % j->Q;
        int64_t a = p * SF_SCAN_PART, b = a + SF_SCAN_PART < j->n ? a + SF_SCAN_PART : j->n;
        bool more = p + 1 < j->Q && nth > 1;
        sf_seq s;
        int64_t io;
        row_seq(j, r, &s, &io);
        part_slot *me = &j->slots[k];
        scarry local;
        if (more) {
            local = part_reduce(j, &s, io, a, b);
            me->agg = local;
            atomic_fetch_or_explicit(&me->state, SLOT_AGG, memory_order_release);
        }
        scarry c = part_carry_in(j, &s, io, k, p);
        if (p + 1 < j->Q) {
            scarry next = more ? part_combine(j, c, local) : c;
            if (more) {
                j->slots[k + 1].cin = next;
                atomic_fetch_or_explicit(&j->slots[k + 1].state, SLOT_CIN, memory_order_release);
                part_scan(j, &s, io, a, b, c);
            } else { /* one thread: the scan's own outgoing carry, the same bits */
                next = part_scan(j, &s, io, a, b, c);
                j->slots[k + 1].cin = next;
                atomic_fetch_or_explicit(&j->slots[k + 1].state, SLOT_CIN, memory_order_release);
            }
        } else {
            part_scan(j, &s, io, a, b, c);
        }
    }
    nt_fence(j->nt);
}

/* ------------------------------------------------------------------------------ */
/* Fast paths: columns                                                               */
/* ------------------------------------------------------------------------------ */

typedef struct col_job {
    const sf_scan_kernels *K;
    fast_kind kind;
    sf_cols proto;
    const sf_view *in, *out0;
    int64_t n, W, tile, ntiles, ntasks, in_d, out_d;
    bool excl, rev;
    int nod;
    int64_t oshape[SF_MAX_DIMS], ois[SF_MAX_DIMS], oos[SF_MAX_DIMS];
    atomic_llong next;
} col_job;

static void col_task(void *ctx, int tid, int nth) {
    col_job *j = ctx;
    (void)tid;
    (void)nth;
    for (;;) {
        int64_t k = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (k >= j->ntasks) break;
        int64_t o = k / j->ntiles, tile = k % j->ntiles;
        int64_t ii = 0, oo = 0, rem = o;
        for (int e = j->nod - 1; e >= 0; e--) {
            int64_t q = rem % j->oshape[e];
            rem /= j->oshape[e];
            ii += q * j->ois[e];
            oo += q * j->oos[e];
        }
        sf_cols c = j->proto;
        int64_t ex = j->excl ? 1 : 0;
        c.x0 = ii + (j->rev ? j->n - 1 + ex : -ex) * j->in_d;
        c.xs = (j->rev ? -1 : 1) * j->in_d;
        c.y0 = oo + (j->rev ? j->n - 1 : 0) * j->out_d;
        c.ys = (j->rev ? -1 : 1) * j->out_d;
        c.ix0 = j->rev ? j->n - 1 + ex : -ex; /* the original index of step t */
        c.ixs = j->rev ? -1 : 1;
        int64_t j0 = tile * j->tile, j1 = j0 + j->tile < j->W ? j0 + j->tile : j->W;
        switch (j->kind) {
        case FK_FSUM: j->K->fsum_cols(&c, j0, j1); break;
        case FK_ISUM: j->K->isum_cols(&c, j0, j1); break;
        case FK_MAX: case FK_MAX64: sf_scan_max_cols(&c, j0, j1); break;
        case FK_PROD: sf_scan_prod_cols(&c, j0, j1); break;
        }
    }
    nt_fence(j->proto.nt);
}

/* ------------------------------------------------------------------------------ */
/* Entry points                                                                      */
/* ------------------------------------------------------------------------------ */

void sf_cpu_scan(const sf_node *node, const sf_view *in, const sf_view *out0,
                 const sf_view *out1, void *work) {
    sf_cpu_scan_mt(node, in, out0, out1, work, 1, NULL);
}

/* A cumsum whose float result dtype has a kernel of its own and the input's pair none:
 * it converts first (below). */
static bool narrowing_cumsum(const sf_node *node, scanfuse_dtype xdt, scanfuse_dtype dt) {
    return node->op == SF_OP_cumsum && sf_dtype_is_float(dt) && xdt != dt && !sf_scan_fsum_ok(xdt, dt) &&
           sf_scan_fsum_ok(dt, dt);
}

int64_t sf_cpu_scan_conv_bytes(const sf_node *node, scanfuse_dtype xdt, scanfuse_dtype dt, int64_t numel) {
    if (!narrowing_cumsum(node, xdt, dt) || numel <= 0) return 0;
    return (numel * (int64_t)scanfuse_dtype_size(dt) + 63) / 64 * 64;
}

void sf_cpu_scan_mt(const sf_node *node, const sf_view *in, const sf_view *out0,
                    const sf_view *out1, void *work, int threads, void *conv) {
    scanfuse_dtype dt = out0->dtype;
    bool fl = sf_dtype_is_float(dt);
    scan_kind k;
    switch (node->op) {
    case SF_OP_cumsum: k = fl ? K_SUM_F : K_SUM_I; break;
    case SF_OP_cumprod: k = fl ? K_PROD_F : K_PROD_I; break;
    case SF_OP_cummax: k = fl ? K_MAX_F : K_MAX_I; break;
    case SF_OP_cummin: k = fl ? K_MIN_F : K_MIN_I; break;
    case SF_OP_logcumsumexp: k = K_LSE; SF_ASSERT(fl); break;
    default: SF_ASSERT(!"not a scan"); return;
    }
    SF_ASSERT((out1 != NULL) == (k == K_MAX_F || k == K_MAX_I || k == K_MIN_F || k == K_MIN_I));

    if (in->ndim == 0) { /* a 0-d input gives the input converted, index 0 */
        sf_cpu_copy(out0, in);
        if (out1) {
            int64_t zero = 0;
            sf_cpu_store_i64(out1->data, out1->dtype, 0, 1, 1, &zero);
        }
        return;
    }
    int64_t numel = sf_numel(in->ndim, in->shape);
    if (numel == 0) return;

    int d = (int)node->a.dim;
    SF_ASSERT(d >= 0 && d < in->ndim);
    SF_ASSERT(out1 == NULL || (out1->ndim == out0->ndim && sf_cpu_view_is_contiguous(out1) &&
                               sf_cpu_view_is_contiguous(out0)));
    bool excl = node->a.exclusive, rev = node->a.reverse;

    int nth = sf_pool_threads(threads);
    int64_t bytes = numel * (int64_t)(scanfuse_dtype_size(in->dtype) + scanfuse_dtype_size(dt) +
                                      (out1 ? 8 : 0));
    if (bytes < sf_cpu_scan_mt_min_bytes) nth = 1;

    fast_kind fk;
    bool fast;
    if (k == K_SUM_F) {
        fk = FK_FSUM;
        fast = sf_scan_fsum_ok(in->dtype, dt);
    } else if (k == K_SUM_I) {
        fk = FK_ISUM;
        fast = sf_scan_isum_ok(in->dtype, dt);
    } else if (k == K_MAX_F || k == K_MAX_I || k == K_MIN_F || k == K_MIN_I) {
        fk = sf_scan_max_ok(in->dtype) ? FK_MAX : FK_MAX64;
        fast = in->dtype == dt;
    } else if (k == K_PROD_F || k == K_PROD_I) {
        fk = FK_PROD;
        fast = sf_scan_prod_ok(in->dtype, dt);
    } else {
        fk = FK_FSUM;
        fast = false;
    }
    /* The scanned dim is innermost in the contiguous output unless a later dim has
     * size > 1: then the scan runs across columns. */
    int last_big = -1;
    for (int e = in->ndim - 1; e > d; e--)
        if (in->shape[e] > 1) {
            last_big = e;
            break;
        }
    bool row_mode = last_big < 0;
    if (narrowing_cumsum(node, in->dtype, dt)) {
        /* cumsum(x, dtype=d) narrowing to a float dtype (float32 -> float16, float64 ->
         * float32, integers -> any float): the op is defined on x converted to d (docs/
         * OPS.md), so convert it, then take d's own kernel, whose bits depend only on the
         * scanned sequence.  The buffer: the caller's (the program's arena, kept between
         * runs: allocating it per call cost a third of the time in page faults), else
         * allocated here; when it cannot be had, the generic path */
        void *tmp = conv ? conv : aligned_alloc(64, (size_t)sf_cpu_scan_conv_bytes(node, in->dtype, dt, numel));
        if (tmp) {
            sf_view cv;
            sf_view_contiguous(&cv, tmp, dt, in->ndim, in->shape);
            sf_cpu_copy(&cv, in);
            sf_cpu_scan_mt(node, &cv, out0, out1, work, threads, NULL);
            if (!conv) free(tmp);
            return;
        }
    }
    if (!fast) {
        generic_scan(k, d, excl, rev, in, out0, out1, work, nth);
        return;
    }
    const sf_scan_kernels *K = scan_kernels();
    int64_t n = in->shape[d];
    bool nt = numel * (int64_t)(scanfuse_dtype_size(dt) + (out1 ? 8 : 0)) >= sf_cpu_scan_nt_min_bytes;

    if (row_mode) {
        row_job job, *j = &job;
        memset(j, 0, sizeof *j);
        j->K = K;
        j->kind = fk;
        j->in = in;
        j->out0 = out0;
        j->out1 = out1;
        j->n = n;
        j->in_d = in->strides[d];
        j->out_d = out0->strides[d]; /* 1 unless out0 is a tile of a fused segment */
        j->excl = excl;
        j->rev = rev;
        j->is_min = node->op == SF_OP_cummin;
        j->unit = j->in_d == 1;
        j->cached = bytes <= sf_cpu_scan_cached_max_bytes;
        for (int e = 0; e < in->ndim; e++) {
            if (e == d || in->shape[e] == 1) continue;
            int pk = j->nod - 1;
            if (pk >= 0 && j->ois[pk] == in->strides[e] * in->shape[e] &&
                j->oos[pk] == out0->strides[e] * in->shape[e]) { /* merges with the dim before */
                j->oshape[pk] *= in->shape[e];
                j->ois[pk] = in->strides[e];
                j->oos[pk] = out0->strides[e];
                continue;
            }
            j->oshape[j->nod] = in->shape[e];
            j->ois[j->nod] = in->strides[e];
            j->oos[j->nod] = out0->strides[e];
            j->nod++;
        }
        j->nrows = numel / n;
        j->Q = (n + SF_SCAN_PART - 1) / SF_SCAN_PART;
        atomic_init(&j->next, 0);
        if (nth > 1 && j->Q > 1 && j->nrows < 2 * (int64_t)nth && fk != FK_PROD &&
            (j->slots = calloc((size_t)(j->nrows * j->Q), sizeof *j->slots)) != NULL) {
            j->chained = true;
            j->ntasks = j->nrows * j->Q;
            /* streaming stores pay off here (24 vs 19 GB/s at 2 threads on the build
             * machine), not for whole rows (12 vs 15 GB/s on [4096, 2048], bench/NOTES.md) */
            j->nt = nt;
            for (int64_t t = 0; t < j->ntasks; t++) atomic_init(&j->slots[t].state, 0);
        } else { /* (no memory for the slots: one thread, the same bytes) */
            /* (cumprod's rows are whole chains: threads share out the rows there are) */
            if (j->Q > 1 && j->nrows < 2 * (int64_t)nth && (fk != FK_PROD || j->nrows == 1)) nth = 1;
            /* whole rows per task: about one partition's worth of data each */
            int64_t rpt = SF_SCAN_PART / n;
            j->rows_per_task = rpt < 1 ? 1 : rpt;
            j->ntasks = (j->nrows + j->rows_per_task - 1) / j->rows_per_task;
            /* whole rows on one thread stream their stores on Intel CPUs: float32 1-D
             * 2^26 47-49 vs 42 ms, float64 85-89 vs 62-65 on an Emerald Rapids Xeon, rows
             * of [4096, 4096] 12.3-12.5 vs 10.9-11.2 (bench/NOTES.md session 40); on the
             * AMD build machine whole rows lost with them (12 vs 15 GB/s at two threads) */
            j->nt = nt && nth == 1 && scan_on_intel();
        }
        sf_pool_run(nth, row_task, j);
        free(j->slots);
        return;
    }

    /* Columns: the innermost dims after d that merge into one run of constant input
     * stride are the columns; every other dim but d is walked. */
    col_job cj;
    memset(&cj, 0, sizeof cj);
    cj.K = K;
    cj.kind = fk;
    cj.in = in;
    cj.out0 = out0;
    cj.n = n;
    cj.in_d = in->strides[d];
    cj.out_d = out0->strides[d];
    cj.excl = excl;
    cj.rev = rev;
    int64_t W = in->shape[last_big], xc = in->strides[last_big], yc = out0->strides[last_big];
    int first_col = last_big;
    for (int e = last_big - 1; e > d; e--) {
        if (in->shape[e] == 1) continue;
        if (in->strides[e] != xc * W || out0->strides[e] != yc * W) break;
        W *= in->shape[e];
        first_col = e;
    }
    for (int e = 0; e < in->ndim; e++) {
        if (e == d || e >= first_col || in->shape[e] == 1) continue;
        cj.oshape[cj.nod] = in->shape[e];
        cj.ois[cj.nod] = in->strides[e];
        cj.oos[cj.nod] = out0->strides[e];
        cj.nod++;
    }
    /* dims after d that did not merge (only when the input is permuted): walked too */
    for (int e = d + 1; e < first_col; e++) {
        if (in->shape[e] == 1) continue;
        cj.oshape[cj.nod] = in->shape[e];
        cj.ois[cj.nod] = in->strides[e];
        cj.oos[cj.nod] = out0->strides[e];
        cj.nod++;
    }
    cj.W = W;
    cj.proto.x = in->data;
    cj.proto.xc = xc;
    cj.proto.yc = yc;
    cj.proto.lo = excl ? 1 : 0;
    cj.proto.y = out0->data;
    cj.proto.nsteps = n;
    cj.proto.xdt = in->dtype;
    cj.proto.ydt = dt;
    cj.proto.yi = out1 ? out1->data : NULL;
    cj.proto.is_min = node->op == SF_OP_cummin;
    /* no streaming stores: each step writes 8 rows a vector at a time, so lines fill in
     * pieces from 8 places at once.  On the AMD build machine they won at one thread (19
     * vs 16 GB/s on [4096, 4096] along dim 0) and lost at two (11 or 37 GB/s by how the
     * output's address fell relative to the input's); on an Intel Xeon (Emerald Rapids,
     * KVM) they cost 4x at one thread (32-34 vs 7-8 ms; bench/NOTES.md session 40). */
    cj.proto.nt = false;
    int64_t outer = numel / (n * W);
    /* tiles as wide as allowed, but one per thread when the outer dims do not already
     * give every thread work (a multiple of 64 columns; wider beats better balance) */
    int64_t tile = SF_SCAN_COLTILE;
    if (nth > 1 && outer < (int64_t)nth) {
        int64_t want = ((int64_t)nth + outer - 1) / outer;
        int64_t t = (W + want - 1) / want;
        t = (t + 63) / 64 * 64;
        if (t < tile) tile = t < 256 ? 256 : t;
    }
    cj.tile = tile;
    cj.ntiles = (W + tile - 1) / tile;
    cj.ntasks = outer * cj.ntiles;
    atomic_init(&cj.next, 0);
    /* no more threads than tasks: an idle worker may take the one task and read it from
     * the other core's cache ([2048, 128] along dim 0 with two threads: 195 us with a
     * second woken, 89 without; NOTES session 40) */
    if (cj.ntasks < nth) nth = (int)cj.ntasks;
    sf_pool_run(nth, col_task, &cj);
}
