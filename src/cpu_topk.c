/*
 * cpu_topk.c — topk of a few elements (k <= SF_CPU_TOPK_MAX_K) per row, for keys that
 * fit in 32 bits (bool, 8-, 16- and 32-bit integers, float16, bfloat16, float32): the
 * router's "k best of E experts" in MoE routing (k = 1 or 8 of E = 128 or 256).
 *
 * The result is exactly the generic path's (cpu_index.c, select_k): the k smallest
 * (key, position) pairs of the row, in ascending order, where a key is the element
 * mapped to an unsigned integer whose order is the op's order (the same mapping as
 * cpu_index.c's float_key, in 32 bits: NaN the largest key, -0.0 as +0.0, descending
 * order complemented).  Equal keys keep the lower position first (PyTorch's tie rule).
 *
 * How (all O(n), no sorting):
 *  1. the row's keys into a uint32 array, one vectorizable loop per dtype;
 *  2. a threshold: split the row into k disjoint non-empty groups and take the largest
 *     of the groups' minima.  Each group holds an element whose key is <= thr, so at
 *     least k elements have keys <= thr, and every key > thr has k better elements:
 *     it cannot be in the result.  For k = 1 thr is the row's minimum;
 *  3. for k = 1 the first position of the least key; otherwise the positions of the
 *     keys <= thr, in order (a branch-free compaction), then on AVX-512 each one's
 *     rank among them (below), elsewhere one pass over them, inserting each into
 *     a sorted array of at most k (key, position) pairs after every held key <= it;
 *     once k are held, a key enters only when it is strictly smaller than the k-th
 *     (positions only grow, so a tie never displaces an earlier element), and the
 *     threshold tightens to the k-th key minus one.
 * With random logits, step 3 meets only a few dozen candidates per row (about k plus
 * the elements between the k-th key and thr: ~21 for k = 8 of 256), so a row costs a
 * few vector operations per 16 elements plus a little per candidate.  The generic
 * path's scalar keys and branchy insertion took ~2.2 us per row of 256 bfloat16 with
 * k = 8 and ~0.3 us per row of 128 with k = 1 on the build machine; this file takes
 * ~0.15 us and ~0.05 us (bench/NOTES.md).  Branches on the keys' compares are what
 * it avoids: each mispredicted one costs about as much as a row's vector work.
 *
 * Invariants: reads only the row (len elements at off + t * stride of x) and writes
 * only keys[0 .. 2 len) and pos[0 .. k); never fails for the dtypes it accepts.
 */
#include "cpu.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define TOPK_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
#endif
#ifndef TOPK_CLONES
#define TOPK_CLONES
#endif

int sf_cpu_topk_fast = 1;

/* The 32-bit order key of a float whose sign is bit `top` (see cpu_index.c's
 * float_key): negatives complemented, positives with the sign bit set, both zeros the
 * same key, every NaN (magnitude bits above inf_bits) UINT32_MAX.  Branch-free. */
static inline uint32_t key_float(uint32_t b, int top, uint32_t inf_bits) {
    uint32_t sign = (uint32_t)1 << top, low = sign | (sign - 1u), mag = b & (sign - 1u);
    uint32_t neg = 0u - (b >> top);
    uint32_t k = (b ^ (neg & low)) | (sign & ~neg);
    k = mag == 0 ? sign : k;
    return mag > inf_bits ? UINT32_MAX : k;
}

/* One loop per dtype: key of element t (a T at element off + t * stride, loaded with
 * memcpy: rows need not be aligned), flipped for descending order. */
#define KEY32_LOOP(T, expr)                                                            \
    do {                                                                               \
        const char *q_ = (const char *)x + off * (int64_t)sizeof(T);                    \
        if (stride == 1) {                                                             \
            for (int64_t t = 0; t < len; t++) {                                        \
                T v_;                                                                  \
                memcpy(&v_, q_ + t * (int64_t)sizeof(T), sizeof(T));                   \
                keys[t] = (uint32_t)(expr) ^ flip;                                     \
            }                                                                          \
        } else {                                                                       \
            for (int64_t t = 0; t < len; t++) {                                        \
                T v_;                                                                  \
                memcpy(&v_, q_ + t * stride * (int64_t)sizeof(T), sizeof(T));          \
                keys[t] = (uint32_t)(expr) ^ flip;                                     \
            }                                                                          \
        }                                                                              \
    } while (0)

TOPK_CLONES
static void load_keys32(const void *x, scanfuse_dtype dt, int64_t off, int64_t stride,
                        int64_t len, uint32_t flip, uint32_t *restrict keys) {
    const uint32_t ib = UINT32_C(1) << 31;
    switch (dt) {
    case SCANFUSE_BOOL: KEY32_LOOP(uint8_t, v_ != 0); break;
    case SCANFUSE_UINT8: KEY32_LOOP(uint8_t, v_); break;
    case SCANFUSE_INT8: KEY32_LOOP(int8_t, (uint32_t)(int32_t)v_ ^ ib); break;
    case SCANFUSE_INT16: KEY32_LOOP(int16_t, (uint32_t)(int32_t)v_ ^ ib); break;
    case SCANFUSE_INT32: KEY32_LOOP(int32_t, (uint32_t)v_ ^ ib); break;
    case SCANFUSE_FLOAT16: KEY32_LOOP(uint16_t, key_float(v_, 15, 0x7C00u)); break;
    case SCANFUSE_BFLOAT16: KEY32_LOOP(uint16_t, key_float(v_, 15, 0x7F80u)); break;
    case SCANFUSE_FLOAT32: KEY32_LOOP(uint32_t, key_float(v_, 31, 0x7F800000u)); break;
    default: SF_ASSERT(!"topk: no 32-bit keys for this dtype"); break;
    }
}
#undef KEY32_LOOP

/* The largest of the minima of k disjoint non-empty groups of keys[0 .. n), k <= n. */
TOPK_CLONES
static uint32_t group_threshold(const uint32_t *restrict keys, int64_t n, int64_t k) {
    int64_t g = n / k;
    uint32_t thr = 0;
    for (int64_t i = 0; i < k; i++) {
        int64_t a = i * g, b = i == k - 1 ? n : a + g;
        uint32_t m = UINT32_MAX;
        for (int64_t t = a; t < b; t++) m = keys[t] < m ? keys[t] : m;
        thr = m > thr ? m : thr;
    }
    return thr;
}

/* Inserts (key, t) into the sorted held pairs hk/pos (*cnt of at most k) after every
 * held key <= key, the k-th dropping out when full, and lowers *thr once k are held
 * (then only keys below the k-th can enter).  Returns false when no key can enter any
 * more (the k-th key is 0).  The caller passes keys <= *thr only. */
static inline bool insert_pair(uint32_t *hk, int64_t *pos, int64_t *cnt, int64_t k,
                               uint32_t *thr, uint32_t key, int64_t t) {
    int64_t j = *cnt < k ? *cnt : k - 1;
    while (j > 0 && hk[j - 1] > key) {
        hk[j] = hk[j - 1];
        pos[j] = pos[j - 1];
        j--;
    }
    hk[j] = key;
    pos[j] = t;
    if (*cnt < k) ++*cnt;
    if (*cnt == k) {
        if (hk[k - 1] == 0) return false;
        if (hk[k - 1] - 1u < *thr) *thr = hk[k - 1] - 1u;
    }
    return true;
}

/* Step 3 (see the top), portable: the positions of the keys <= thr gathered first by a
 * branch-free compaction into cand (n entries): a branch on each random key's compare
 * mispredicts too often to be cheaper. */
TOPK_CLONES
static int64_t select_base(const uint32_t *restrict keys, int64_t n, int64_t k, uint32_t thr,
                           uint32_t *restrict cand, uint32_t *hk, int64_t *pos) {
    int64_t nc = 0, cnt = 0;
    for (int64_t t = 0; t < n; t++) {
        cand[nc] = (uint32_t)t;
        nc += keys[t] <= thr;
    }
    for (int64_t c = 0; c < nc; c++) {
        uint32_t key = keys[cand[c]];
        if (key <= thr && !insert_pair(hk, pos, &cnt, k, &thr, key, cand[c])) break;
    }
    return cnt;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define TOPK_AVX512 1
/* Candidates ranked all against all (below) when there are at most this many. */
#define RANK_MAX 64

/* Step 3 on AVX-512, without branches on the data: one compare per 16 keys gives a
 * mask of the candidates, compressed into cand (n entries; each 16-lane store lies
 * within them, since nc <= t0); then each candidate's rank among all of them by
 * (key, position), packed as key * 2^32 + position (distinct, since positions are),
 * places the k of rank < k directly.  More than RANK_MAX candidates (many ties at the
 * threshold) go through insert_pair instead. */
__attribute__((target("avx512f,popcnt")))
static int64_t select_512(const uint32_t *restrict keys, int64_t n, int64_t k, uint32_t thr,
                          uint32_t *restrict cand, uint32_t *hk, int64_t *pos) {
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i tv = _mm512_set1_epi32((int)thr);
    int64_t nc = 0, t0 = 0;
    for (; t0 + 16 <= n; t0 += 16) {
        __mmask16 m = _mm512_cmple_epu32_mask(_mm512_loadu_si512((const void *)(keys + t0)), tv);
        __m512i ix = _mm512_add_epi32(iota, _mm512_set1_epi32((int)t0));
        _mm512_storeu_si512((void *)(cand + nc), _mm512_maskz_compress_epi32(m, ix));
        nc += __builtin_popcount((unsigned)m);
    }
    for (; t0 < n; t0++) {
        cand[nc] = (uint32_t)t0;
        nc += keys[t0] <= thr;
    }
    if (nc > RANK_MAX) {
        int64_t cnt = 0;
        for (int64_t c = 0; c < nc; c++) {
            uint32_t key = keys[cand[c]];
            if (key <= thr && !insert_pair(hk, pos, &cnt, k, &thr, key, cand[c])) break;
        }
        return cnt;
    }
    /* padded with the largest value, which no candidate's packed key reaches */
    _Alignas(64) uint64_t pk[RANK_MAX];
    int64_t nv = (nc + 7) / 8;
    for (int64_t c = 0; c < nv * 8; c++)
        pk[c] = c < nc ? (uint64_t)keys[cand[c]] << 32 | cand[c] : UINT64_MAX;
    /* rank[c] = how many packed keys are below pk[c]: eight candidates per vector,
     * each compared with every candidate broadcast (counts stay in the vector) */
    _Alignas(64) uint64_t rank[RANK_MAX];
    for (int64_t v = 0; v < nv; v++) {
        __m512i mine = _mm512_load_si512((const void *)(pk + 8 * v)), r = _mm512_setzero_si512();
        const __m512i one = _mm512_set1_epi64(1);
        for (int64_t c = 0; c < nc; c++) {
            __mmask8 below = _mm512_cmplt_epu64_mask(_mm512_set1_epi64((long long)pk[c]), mine);
            r = _mm512_mask_add_epi64(r, below, r, one);
        }
        _mm512_store_si512((void *)(rank + 8 * v), r);
    }
    /* ranks are distinct, and 0 .. k - 1 all occur (nc >= k): place those, the others
     * into a spare slot (no branch on the data) */
    int64_t slot[SF_CPU_TOPK_MAX_K + 1];
    for (int64_t c = 0; c < nc; c++) slot[rank[c] < (uint64_t)k ? rank[c] : (uint64_t)k] = cand[c];
    for (int64_t j = 0; j < k; j++) pos[j] = slot[j];
    return k;
}

/* 1: select_512 (the CPU has AVX-512F), 0: select_base, -1: not asked yet. */
static int topk_avx512 = -1;
#endif

/* Positions of the k smallest (key, position) pairs of keys[0 .. n), in order.  cand:
 * n scratch entries (n < 2^32). */
static void select_small(const uint32_t *keys, int64_t n, int64_t k, uint32_t *cand,
                         int64_t *pos) {
    uint32_t hk[SF_CPU_TOPK_MAX_K];
    uint32_t thr = group_threshold(keys, n, k);
    if (k == 1) { /* thr is the least key: its first position (the tie rule) */
        int64_t t = 0;
        while (keys[t] != thr) t++;
        pos[0] = t;
        return;
    }
    int64_t cnt;
#ifdef TOPK_AVX512
    int v = __atomic_load_n(&topk_avx512, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("popcnt");
        __atomic_store_n(&topk_avx512, v, __ATOMIC_RELAXED);
    }
    if (v && sf_cpu_topk_fast != 2) cnt = select_512(keys, n, k, thr, cand, hk, pos);
    else cnt = select_base(keys, n, k, thr, cand, hk, pos);
#else
    cnt = select_base(keys, n, k, thr, cand, hk, pos);
#endif
    SF_ASSERT(cnt == k);
}

bool sf_cpu_topk_small(const sf_view *x, int64_t off, int64_t stride, int64_t len, int64_t k,
                       bool desc, uint32_t *keys, int64_t *pos) {
    if (!sf_cpu_topk_fast || k < 1 || k > SF_CPU_TOPK_MAX_K || k > len || len > UINT32_MAX)
        return false;
    switch (x->dtype) {
    case SCANFUSE_BOOL: case SCANFUSE_UINT8: case SCANFUSE_INT8: case SCANFUSE_INT16:
    case SCANFUSE_INT32: case SCANFUSE_FLOAT16: case SCANFUSE_BFLOAT16: case SCANFUSE_FLOAT32:
        break;
    default: return false;
    }
    load_keys32(x->data, x->dtype, off, stride, len, desc ? UINT32_MAX : 0u, keys);
    select_small(keys, len, k, keys + len, pos);
    return true;
}
