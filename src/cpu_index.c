/*
 * cpu_index.c — the CPU kernels of the index and sort ops: topk, argsort, one_hot,
 * bincount, gather, take_along_dim, index_select and scatter (docs/OPS.md, "Index and
 * sort ops").
 *
 * Sorting.  Every sort is reduced to one problem: a stable ascending sort of uint64
 * keys.  A key is the value mapped so that unsigned order is the op's order: floats
 * through their IEEE bits (negatives complemented, positives with the sign bit set),
 * -0.0 first turned into +0.0 (PyTorch compares them equal) and every NaN into the
 * largest key (NaN sorts above +inf); integers with the sign bit flipped; descending
 * order complements the key.  Equal keys keep their positions' order, which is
 * PyTorch's stable order and its tie rule for topk (the lower index first).
 *  - argsort: rows of RADIX_MIN or more keys by an LSD radix sort (one stable counting
 *    pass per 8-bit digit that varies, O(n) per pass), shorter rows by a bottom-up merge
 *    sort (insertion-sorted runs, then branch-free merges), O(n log n); or, when the keys' range R is known (the node's range=R, or keys that are topk
 *    indices over a dim of size R, argmax/argmin/argsort results, through reshape,
 *    permute, slice and expand), a counting sort: histogram, exclusive cumsum, then
 *    each position scattered to its bucket's next slot, O(n + R), which is stable by
 *    construction.  It is chosen when R <= 2n + 16, where it beats the merge sort.
 *  - topk: k <= SF_CPU_TOPK_MAX_K of keys that fit in 32 bits by cpu_topk.c (a
 *    threshold, then one pass over the few keys below it, O(n)); otherwise for
 *    k <= n/8 one pass that keeps the k best (key, position) pairs, in a sorted array
 *    for k <= 32 (blocks of keys that cannot enter are skipped with one vectorizable
 *    test) or a max-heap, O(n log k); for larger k the row is sorted.  Both give the
 *    same result: the k smallest (key, position) pairs in order.
 *
 * Indexing.  gather, take_along_dim and index_select walk the result with the N-d
 * iterator over three operands (the result, the index, and x with its stride along
 * dim zeroed), so each element is one index load, one range check and one element
 * copy; a run along which the index does not change (index_select of rows) is one
 * memcpy.  scatter copies x, then walks the index in row-major order (so the last
 * write wins); reduce=add sums floats in a double work array starting from x's values
 * and rounds once at the end, integers in int64 with wrapping, in the same order as
 * the reference evaluator, so the results are bit-identical to it.
 *
 * Invariants: every index is checked against the size it addresses before it is used
 * (an index out of range returns SCANFUSE_ERROR_VALUE with a message naming the op and
 * the value; the backend then writes no output); element copies move the bytes of
 * one dtype (x and the values result share it); kernels write only their result
 * buffers and the scratch area sized by sf_cpu_index_scratch().
 */
#include "cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------ */
/* Planning: key ranges, scratch sizes, which ops can fail                          */
/* ------------------------------------------------------------------------------ */

/* The size of x along dim (a 0-d tensor is one element). */
static int64_t dim_size(int ndim, const int64_t *shape, int64_t dim) {
    return ndim > 0 ? shape[dim] : 1;
}

/* An exclusive upper bound R of the integer values of value v (all in [0, R)), or 0
 * when nothing is known.  Follows indices through the shape ops that only move or
 * repeat values. */
static int64_t value_range(const scanfuse_fusion *f, int32_t v, int depth) {
    if (depth > 32 || v < 0 || v >= f->nvalues) return 0;
    const sf_value *val = &f->values[v];
    if (val->producer < 0 || val->producer >= f->nnodes) return 0;
    const sf_node *p = &f->nodes[val->producer];
    const sf_value *x = p->nin > 0 ? &f->values[p->in[0]] : NULL;
    switch (p->op) {
    case SF_OP_topk:
        return val->slot == 1 ? dim_size(x->ndim, x->shape, p->a.dim) : 0;
    case SF_OP_argsort: return dim_size(x->ndim, x->shape, p->a.dim);
    case SF_OP_argmax:
    case SF_OP_argmin:
        return (p->a.has_dim && x->ndim > 0) ? x->shape[p->a.dim] : sf_value_numel(x);
    case SF_OP_reshape:
    case SF_OP_permute:
    case SF_OP_slice:
    case SF_OP_expand: return value_range(f, p->in[0], depth + 1);
    default: return 0;
    }
}

/* The key range an argsort node sorts with a counting sort, or 0 for the merge sort. */
static int64_t counting_range(const scanfuse_fusion *f, const sf_node *n) {
    if (n->op != SF_OP_argsort) return 0;
    const sf_value *x = &f->values[n->in[0]];
    if (sf_dtype_is_float(x->dtype)) return 0;
    int64_t r = n->a.has_count ? n->a.count : value_range(f, n->in[0], 0);
    if (x->dtype == SCANFUSE_BOOL && (r == 0 || r > 2)) r = 2;
    int64_t len = dim_size(x->ndim, x->shape, n->a.dim);
    if (r <= 0 || len > (INT64_MAX - 16) / 2 || r > 2 * len + 16) return 0;
    return r;
}

bool sf_cpu_index_may_fail(const sf_node *n) {
    /* topk and argsort without a stated range cannot meet a bad value */
    if (n->op == SF_OP_topk) return false;
    if (n->op == SF_OP_argsort) return n->a.has_count;
    return true;
}

/* a + b*c for sizes, saturating (the backend rejects a saturated arena). */
static int64_t sat_madd(int64_t a, int64_t b, int64_t c) {
    int64_t p;
    if (sf_mul_overflow(b, c, &p) || p > INT64_MAX / 4 - a) return INT64_MAX / 4;
    return a + p;
}

int64_t sf_cpu_index_scratch(const scanfuse_fusion *f, const sf_node *n) {
    const sf_value *x = &f->values[n->in[0]];
    int64_t bytes = 8 * SF_CPU_BLOCK; /* an index block */
    switch (n->op) {
    case SF_OP_topk:
    case SF_OP_argsort: {
        int64_t len = dim_size(x->ndim, x->shape, n->a.dim);
        /* loaded values, then two arrays of (key, position) pairs */
        bytes = sat_madd(bytes, len, 8 + 2 * 16);
        int64_t r = counting_range(f, n);
        bytes = sat_madd(bytes, r + 1 > 256 ? r + 1 : 256, 8); /* bucket counts */
        break;
    }
    case SF_OP_scatter:
        /* reduce=add: one double or int64 per result element */
        if (n->a.reduce == SF_REDUCE_ADD) bytes = sat_madd(bytes, sf_value_numel(x), 8);
        break;
    default: break;
    }
    return bytes;
}

/* ------------------------------------------------------------------------------ */
/* Small helpers                                                                    */
/* ------------------------------------------------------------------------------ */

/* "OP: WHAT V is out of range (RANGE)", the reference evaluator's message. */
static scanfuse_status range_error(const sf_node *n, const char *what, int64_t v,
                                   const char *range, char *msg, size_t msglen) {
    sf_msg(msg, msglen, "%s: %s %lld is out of range (%s)", sf_op_table[n->op].name, what,
           (long long)v, range);
    return SCANFUSE_ERROR_VALUE;
}

static scanfuse_status index_error(const sf_node *n, int64_t v, int64_t dim, int64_t size,
                                   char *msg, size_t msglen) {
    char r[96];
    snprintf(r, sizeof r, "dim %lld has size %lld", (long long)dim, (long long)size);
    return range_error(n, "index", v, r, msg, msglen);
}

/* Copies m elements of es bytes between strided positions (element offsets). */
static void copy_run(char *d, int64_t od, int64_t sd, const char *s, int64_t os, int64_t ss,
                     int64_t m, size_t es) {
    int64_t e = (int64_t)es;
    if (sd == 1 && ss == 1) {
        memcpy(d + od * e, s + os * e, (size_t)m * es);
        return;
    }
    for (int64_t i = 0; i < m; i++) memcpy(d + (od + i * sd) * e, s + (os + i * ss) * e, es);
}

/* outer x len x inner around dim (a 0-d view is one row of one element). */
static void split_dim(const sf_view *v, int64_t dim, int64_t *outer, int64_t *len,
                      int64_t *inner) {
    *outer = *len = *inner = 1;
    for (int d = 0; d < v->ndim; d++) {
        if (d < dim) *outer *= v->shape[d];
        else if (d == dim) *len = v->shape[d];
        else *inner *= v->shape[d];
    }
}

/* Element offset in v of the row (o, q): o the row-major index over dims [0, dim),
 * q over dims (dim, ndim). */
static int64_t row_offset(const sf_view *v, int64_t dim, int64_t o, int64_t q) {
    int64_t off = 0;
    for (int d = v->ndim - 1; d > dim; d--) {
        off += (q % v->shape[d]) * v->strides[d];
        q /= v->shape[d];
    }
    for (int d = (int)dim - 1; d >= 0; d--) {
        off += (o % v->shape[d]) * v->strides[d];
        o /= v->shape[d];
    }
    return off;
}

/* Element offset in v of the element with row-major index j. */
static int64_t flat_offset(const sf_view *v, int64_t j) {
    int64_t off = 0;
    for (int d = v->ndim - 1; d >= 0; d--) {
        off += (j % v->shape[d]) * v->strides[d];
        j /= v->shape[d];
    }
    return off;
}

static void contig_strides(int nd, const int64_t *shape, int64_t *st) {
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

static void put_i64(void *base, int64_t k, int64_t v) { memcpy((char *)base + k * 8, &v, 8); }
static int64_t get_i64(const void *base, int64_t k) {
    int64_t v;
    memcpy(&v, (const char *)base + k * 8, 8);
    return v;
}

/* ------------------------------------------------------------------------------ */
/* Sorting                                                                          */
/* ------------------------------------------------------------------------------ */

typedef struct kv {
    uint64_t key;
    int64_t pos;
} kv;

/* Order-preserving keys straight from the bits of an IEEE format whose sign is bit
 * `top` (see the top of the file): negatives complemented, positives with the sign bit
 * set, -0.0 as +0.0, every NaN the largest key.  Branch-free, so the loops vectorize. */
static inline uint64_t float_key(uint64_t b, int top, uint64_t inf_bits) {
    uint64_t sign = UINT64_C(1) << top, mag = b & (sign - 1);
    uint64_t neg = (uint64_t)0 - (b >> top); /* all ones for a negative value */
    uint64_t k = (b ^ (neg & (sign | (sign - 1)))) | (sign & ~neg);
    k = mag == 0 ? sign : k;                 /* -0.0 and +0.0 */
    return mag > inf_bits ? UINT64_MAX : k;  /* NaN */
}

/* One loop per dtype: load a T at off + t*stride, make its key, flip it for
 * descending order (xor with all ones). */
#define KEY_LOOP(T, expr)                                                              \
    do {                                                                               \
        const char *q_ = p + off * (int64_t)sizeof(T);                                 \
        if (stride == 1) {                                                             \
            for (int64_t t = 0; t < len; t++) {                                        \
                T v_;                                                                  \
                memcpy(&v_, q_ + t * (int64_t)sizeof(T), sizeof(T));                   \
                keys[t] = (expr) ^ flip;                                               \
            }                                                                          \
        } else {                                                                       \
            for (int64_t t = 0; t < len; t++) {                                        \
                T v_;                                                                  \
                memcpy(&v_, q_ + t * stride * (int64_t)sizeof(T), sizeof(T));          \
                keys[t] = (expr) ^ flip;                                               \
            }                                                                          \
        }                                                                              \
    } while (0)

/* Keys of row (off, stride, len) of x. */
static void load_keys(const sf_view *x, int64_t off, int64_t stride, int64_t len, bool desc,
                      uint64_t *keys) {
    const char *p = x->data;
    const uint64_t flip = desc ? UINT64_MAX : 0, ib = UINT64_C(1) << 63;
    switch (x->dtype) {
    case SCANFUSE_BOOL: KEY_LOOP(uint8_t, (uint64_t)(v_ != 0)); break;
    case SCANFUSE_UINT8: KEY_LOOP(uint8_t, (uint64_t)v_); break;
    case SCANFUSE_INT8: KEY_LOOP(int8_t, (uint64_t)(int64_t)v_ ^ ib); break;
    case SCANFUSE_INT16: KEY_LOOP(int16_t, (uint64_t)(int64_t)v_ ^ ib); break;
    case SCANFUSE_INT32: KEY_LOOP(int32_t, (uint64_t)(int64_t)v_ ^ ib); break;
    case SCANFUSE_INT64: KEY_LOOP(int64_t, (uint64_t)v_ ^ ib); break;
    case SCANFUSE_FLOAT16: KEY_LOOP(uint16_t, float_key(v_, 15, 0x7C00u)); break;
    case SCANFUSE_BFLOAT16: KEY_LOOP(uint16_t, float_key(v_, 15, 0x7F80u)); break;
    case SCANFUSE_FLOAT32: KEY_LOOP(uint32_t, float_key(v_, 31, 0x7F800000u)); break;
    case SCANFUSE_FLOAT64:
        KEY_LOOP(uint64_t, float_key(v_, 63, UINT64_C(0x7FF0000000000000)));
        break;
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: SF_ASSERT(!"bad dtype"); break;
    }
}
#undef KEY_LOOP

/* Lexicographic (key, position): a total order, since positions differ. */
static bool kv_less(const kv *a, const kv *b) {
    return a->key < b->key || (a->key == b->key && a->pos < b->pos);
}

#define SORT_RUN 32

/* Stable sort of a[0..n) by key (tmp: n more pairs).  Insertion-sorted runs of
 * SORT_RUN, then bottom-up merges that take from the left run on ties. */
static void merge_sort(kv *a, kv *tmp, int64_t n) {
    for (int64_t s = 0; s < n; s += SORT_RUN) {
        int64_t e = s + SORT_RUN < n ? s + SORT_RUN : n;
        for (int64_t i = s + 1; i < e; i++) {
            kv cur = a[i];
            int64_t j = i;
            while (j > s && a[j - 1].key > cur.key) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = cur;
        }
    }
    kv *src = a, *dst = tmp;
    for (int64_t w = SORT_RUN; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            /* branch-free: the compare of random keys is unpredictable */
            while (i < mid && j < hi) {
                kv l = src[i], r = src[j];
                int64_t right = r.key < l.key;
                dst[o].key = right ? r.key : l.key;
                dst[o].pos = right ? r.pos : l.pos;
                o++;
                j += right;
                i += 1 - right;
            }
            while (i < mid) dst[o++] = src[i++];
            while (j < hi) dst[o++] = src[j++];
        }
        kv *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

/* Stable LSD radix sort of a[0..n) by key (tmp: n more pairs, count: 256 entries):
 * one counting-sort pass per 8-bit digit, skipping the digits every key shares (so
 * float32 keys take at most 4 passes, small integers 1 or 2). */
static void radix_sort(kv *a, kv *tmp, int64_t n, int64_t *count) {
    uint64_t any = 0, all = UINT64_MAX;
    for (int64_t t = 0; t < n; t++) {
        any |= a[t].key;
        all &= a[t].key;
    }
    uint64_t vary = any ^ all;
    kv *src = a, *dst = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        if (!((vary >> shift) & 0xFF)) continue;
        memset(count, 0, 256 * sizeof *count);
        for (int64_t t = 0; t < n; t++) count[(src[t].key >> shift) & 0xFF]++;
        int64_t run = 0;
        for (int d = 0; d < 256; d++) {
            int64_t c = count[d];
            count[d] = run;
            run += c;
        }
        for (int64_t t = 0; t < n; t++) dst[count[(src[t].key >> shift) & 0xFF]++] = src[t];
        kv *sw = src;
        src = dst;
        dst = sw;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

/* Rows at least this long are radix sorted; shorter ones merge sorted. */
#define RADIX_MIN 128

/* Max-heap (by kv_less) of h[0..n): restores the heap below i. */
static void sift_down(kv *h, int64_t n, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && kv_less(&h[m], &h[l])) m = l;
        if (r < n && kv_less(&h[m], &h[r])) m = r;
        if (m == i) return;
        kv t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Topk selects at most this many by insertion into a sorted array, more with a heap. */
#define SMALL_K 32

/* The k smallest (key, position) pairs of keys[0..n), sorted ascending into h[0..k),
 * 1 <= k <= n.  Positions are visited in increasing order, so a later key displaces
 * the current k-th only when it is strictly smaller (ties keep the lower index). */
static void select_k(const uint64_t *keys, int64_t n, int64_t k, kv *h) {
    if (k <= SMALL_K) {
        /* a sorted array: one compare per key, O(k) work per (rare) insertion; blocks
         * of keys none of which beats the current k-th are skipped with one
         * vectorizable test */
        for (int64_t t0 = 0; t0 < n; t0 += 16) {
            int64_t t1 = t0 + 16 < n ? t0 + 16 : n;
            if (t0 >= k && t1 - t0 == 16) {
                uint64_t thr = h[k - 1].key;
                int any = 0;
                for (int64_t t = t0; t < t1; t++) any |= keys[t] < thr;
                if (!any) continue;
            }
            for (int64_t t = t0; t < t1; t++) {
                uint64_t key = keys[t];
                int64_t m = t < k ? t : k; /* pairs held */
                if (m == k && key >= h[k - 1].key) continue;
                /* the slot after every held key <= key (a branch-free count), then
                 * shift the rest up by one, dropping the k-th when full */
                int64_t j = 0;
                for (int64_t i = 0; i < m; i++) j += h[i].key <= key;
                int64_t move = (m < k ? m : k - 1) - j;
                if (move > 0) memmove(&h[j + 1], &h[j], (size_t)move * sizeof *h);
                h[j].key = key;
                h[j].pos = t;
            }
        }
        return;
    }
    for (int64_t t = 0; t < k; t++) {
        h[t].key = keys[t];
        h[t].pos = t;
    }
    for (int64_t i = k / 2 - 1; i >= 0; i--) sift_down(h, k, i);
    for (int64_t t = k; t < n; t++) {
        if (keys[t] < h[0].key) {
            h[0].key = keys[t];
            h[0].pos = t;
            sift_down(h, k, 0);
        }
    }
    for (int64_t m = k - 1; m > 0; m--) { /* heapsort: the largest goes last */
        kv t = h[0];
        h[0] = h[m];
        h[m] = t;
        sift_down(h, m, 0);
    }
}

/* argsort (vals NULL) and topk (vals: the values result). */
static scanfuse_status run_sort(const scanfuse_fusion *f, const sf_node *n, const sf_view *x,
                                const sf_view *vals, const sf_view *idx, char *scratch,
                                char *msg, size_t msglen) {
    bool topk = n->op == SF_OP_topk;
    int64_t dim = x->ndim > 0 ? n->a.dim : 0;
    int64_t outer, len, inner;
    split_dim(x, dim, &outer, &len, &inner);
    int64_t k = topk ? n->a.count : len;
    bool desc = topk ? n->a.largest : n->a.descending;
    int64_t stride = x->ndim > 0 ? x->strides[dim] : 0;
    if (outer == 0 || inner == 0 || len == 0) return SCANFUSE_OK;
    /* scratch: [index block][len loaded values][len pairs][len pairs][counts: 256 for a
     * radix pass, range + 1 for the counting sort] */
    char *p = scratch + 8 * SF_CPU_BLOCK;
    void *tmp = p;
    kv *a = (kv *)(void *)(p + 8 * len);
    kv *b = a + len;
    int64_t *counts = (int64_t *)(void *)(b + len);
    int64_t range = counting_range(f, n);
    int64_t stated = n->op == SF_OP_argsort && n->a.has_count ? n->a.count : 0;
    char rtext[64];
    snprintf(rtext, sizeof rtext, "range=%lld", (long long)stated);
    size_t es = scanfuse_dtype_size(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            int64_t off = row_offset(x, dim, o, q);
            int64_t ob = o * k * inner + q; /* the row's first result element */
            if (range > 0) {
                /* counting sort: bucket sizes, their exclusive cumsum, then every
                 * position to the next slot of its bucket (in order: stable) */
                int64_t *v = tmp;
                sf_cpu_gather_i64(x->data, x->dtype, off, stride, len, x->dtype, v);
                memset(counts, 0, (size_t)(range + 1) * sizeof *counts);
                for (int64_t t = 0; t < len; t++) {
                    if (v[t] < 0 || v[t] >= range) {
                        char r[64];
                        snprintf(r, sizeof r, "range=%lld", (long long)range);
                        return range_error(n, "key", v[t], stated ? rtext : r, msg, msglen);
                    }
                    counts[desc ? range - 1 - v[t] : v[t]]++;
                }
                int64_t run = 0;
                for (int64_t bk = 0; bk < range; bk++) {
                    int64_t c = counts[bk];
                    counts[bk] = run;
                    run += c;
                }
                for (int64_t t = 0; t < len; t++) {
                    int64_t bk = desc ? range - 1 - v[t] : v[t];
                    put_i64(idx->data, ob + counts[bk]++ * inner, t);
                }
                continue;
            }
            if (stated) {
                int64_t *v = tmp;
                sf_cpu_gather_i64(x->data, x->dtype, off, stride, len, x->dtype, v);
                for (int64_t t = 0; t < len; t++)
                    if (v[t] < 0 || v[t] >= stated)
                        return range_error(n, "key", v[t], rtext, msg, msglen);
            }
            int64_t best[SF_CPU_TOPK_MAX_K]; /* a few best: O(len), no sort (cpu_topk.c) */
            if (topk && k > 0 && sf_cpu_topk_small(x, off, stride, len, k, desc, tmp, best)) {
                for (int64_t t = 0; t < k; t++) {
                    int64_t at = ob + t * inner;
                    put_i64(idx->data, at, best[t]);
                    if (vals)
                        copy_run(vals->data, at, 1, x->data, off + best[t] * stride, 1, 1, es);
                }
                continue;
            }
            uint64_t *keys = tmp;
            load_keys(x, off, stride, len, desc, keys);
            const kv *res = a;
            if (topk && k < len && k <= len / 8) {
                if (k == 0) continue;
                select_k(keys, len, k, a);
            } else {
                for (int64_t t = 0; t < len; t++) {
                    a[t].key = keys[t];
                    a[t].pos = t;
                }
                if (len >= RADIX_MIN) radix_sort(a, b, len, counts);
                else merge_sort(a, b, len);
            }
            for (int64_t t = 0; t < k; t++) {
                int64_t at = ob + t * inner;
                put_i64(idx->data, at, res[t].pos);
                if (vals)
                    copy_run(vals->data, at, 1, x->data, off + res[t].pos * stride, 1, 1, es);
            }
        }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* one_hot, bincount                                                                */
/* ------------------------------------------------------------------------------ */

static scanfuse_status run_ids(const sf_node *n, const sf_view *x, const sf_view *out,
                               int64_t *blk, char *msg, size_t msglen) {
    bool oh = n->op == SF_OP_one_hot;
    int64_t C = n->a.count;
    int64_t nout = 1;
    for (int d = 0; d < out->ndim; d++) nout *= out->shape[d];
    if (nout > 0) memset(out->data, 0, (size_t)nout * 8);
    char r[64];
    snprintf(r, sizeof r, "%s=%lld", oh ? "num_classes" : "minlength", (long long)C);
    const int64_t *st[1] = {x->strides};
    sf_cpu_iter it;
    sf_cpu_iter_init(&it, x->ndim, x->shape, 1, st);
    int64_t sx = sf_cpu_iter_stride(&it, 0), offs[1], m, e = 0;
    while ((m = sf_cpu_iter_next(&it, SF_CPU_BLOCK, offs)) > 0) {
        sf_cpu_gather_i64(x->data, x->dtype, offs[0], sx, m, x->dtype, blk);
        for (int64_t i = 0; i < m; i++, e++) {
            int64_t v = blk[i];
            if (v < 0 || v >= C) return range_error(n, oh ? "class" : "id", v, r, msg, msglen);
            if (oh) put_i64(out->data, e * C + v, 1);
            else put_i64(out->data, v, get_i64(out->data, v) + 1);
        }
    }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* gather, take_along_dim, index_select                                             */
/* ------------------------------------------------------------------------------ */

static scanfuse_status run_gather(const sf_node *n, const sf_view *x, const sf_view *ix,
                                  const sf_view *out, int64_t *blk, char *msg, size_t msglen) {
    size_t es = scanfuse_dtype_size(x->dtype);
    char *od = out->data;
    const char *xd = x->data;
    int64_t offs[3], m;
    if (n->op == SF_OP_take_along_dim && !n->a.has_dim) {
        /* flattened: result j is x.flat[indices.flat[j]] */
        int64_t xn = 1, ost[SF_MAX_DIMS];
        for (int d = 0; d < x->ndim; d++) xn *= x->shape[d];
        contig_strides(ix->ndim, ix->shape, ost);
        const int64_t *st[2] = {ost, ix->strides};
        sf_cpu_iter it;
        sf_cpu_iter_init(&it, ix->ndim, ix->shape, 2, st);
        int64_t so = sf_cpu_iter_stride(&it, 0), si = sf_cpu_iter_stride(&it, 1);
        while ((m = sf_cpu_iter_next(&it, SF_CPU_BLOCK, offs)) > 0) {
            sf_cpu_gather_i64(ix->data, ix->dtype, offs[1], si, m, ix->dtype, blk);
            for (int64_t i = 0; i < m; i++) {
                if (blk[i] < 0 || blk[i] >= xn) return index_error(n, blk[i], 0, xn, msg, msglen);
                copy_run(od, offs[0] + i * so, 1, xd, flat_offset(x, blk[i]), 1, 1, es);
            }
        }
        return SCANFUSE_OK;
    }
    int nd = out->ndim;
    int64_t dim = x->ndim > 0 ? n->a.dim : 0;
    int64_t size = dim_size(x->ndim, x->shape, dim);
    int64_t xs_dim = x->ndim > 0 ? x->strides[dim] : 0;
    int64_t ist[SF_MAX_DIMS], xst[SF_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        /* x: its own strides, none along dim (the index supplies that coordinate),
         * none where it has size 1 (take_along_dim broadcasts it) */
        xst[d] = (d == dim || x->shape[d] == 1) ? 0 : x->strides[d];
        if (n->op == SF_OP_index_select)
            ist[d] = (d == dim && ix->ndim == 1) ? ix->strides[0] : 0;
        else
            ist[d] = ix->shape[d] == 1 ? 0 : ix->strides[d];
    }
    const int64_t *st[3] = {out->strides, ist, xst};
    sf_cpu_iter it;
    sf_cpu_iter_init(&it, nd, out->shape, 3, st);
    int64_t so = sf_cpu_iter_stride(&it, 0), si = sf_cpu_iter_stride(&it, 1),
            sx = sf_cpu_iter_stride(&it, 2);
    /* a run along which the index stays put is one strided (often contiguous) copy */
    int64_t maxn = si == 0 ? INT64_MAX : SF_CPU_BLOCK;
    while ((m = sf_cpu_iter_next(&it, maxn, offs)) > 0) {
        if (si == 0) {
            int64_t v;
            sf_cpu_gather_i64(ix->data, ix->dtype, offs[1], 0, 1, ix->dtype, &v);
            if (v < 0 || v >= size) return index_error(n, v, dim, size, msg, msglen);
            copy_run(od, offs[0], so, xd, offs[2] + v * xs_dim, sx, m, es);
            continue;
        }
        sf_cpu_gather_i64(ix->data, ix->dtype, offs[1], si, m, ix->dtype, blk);
        for (int64_t i = 0; i < m; i++) {
            int64_t v = blk[i];
            if (v < 0 || v >= size) return index_error(n, v, dim, size, msg, msglen);
            copy_run(od, offs[0] + i * so, 1, xd, offs[2] + i * sx + v * xs_dim, 1, 1, es);
        }
    }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* scatter                                                                          */
/* ------------------------------------------------------------------------------ */

static scanfuse_status run_scatter(const scanfuse_fusion *f, const sf_node *n, const sf_view *x,
                                   const sf_view *ix, const sf_view *src, const sf_view *out,
                                   char *scratch, char *msg, size_t msglen) {
    scanfuse_dtype dt = x->dtype;
    size_t es = scanfuse_dtype_size(dt);
    bool isf = sf_dtype_is_float(dt), add = n->a.reduce == SF_REDUCE_ADD;
    int nd = x->ndim;
    int64_t dim = nd > 0 ? n->a.dim : 0;
    int64_t size = dim_size(nd, x->shape, dim);
    int64_t os_dim = nd > 0 ? out->strides[dim] : 0;
    int64_t *blk = (int64_t *)(void *)scratch;
    char *work = scratch + 8 * SF_CPU_BLOCK;
    int64_t nx = 1;
    for (int d = 0; d < nd; d++) nx *= x->shape[d];

    /* src: a weak scalar from a literal is converted straight to x's dtype */
    const sf_value *sv = &f->values[n->in[2]];
    const sf_num *lit = NULL;
    if (sv->weak && sv->producer >= 0 && f->nodes[sv->producer].op == SF_OP_scalar)
        lit = &f->nodes[sv->producer].a.value;
    unsigned char litb[8];
    double litf = 0.0;
    int64_t liti = 0;
    if (lit) {
        sf_cpu_store_literal(litb, dt, lit);
        if (isf) sf_cpu_fill_literal_f64(lit, dt, &litf, 1);
        else sf_cpu_fill_literal_i64(lit, dt, &liti, 1);
    }
    bool scalar_src = sv->weak;

    sf_cpu_copy(out, x);
    double *accf = (double *)(void *)work;
    int64_t *acci = (int64_t *)(void *)work;
    if (add && nx > 0) {
        if (isf) sf_cpu_gather_f64(out->data, dt, 0, 1, nx, dt, accf);
        else sf_cpu_gather_i64(out->data, dt, 0, 1, nx, dt, acci);
    }

    int64_t tst[SF_MAX_DIMS], sst[SF_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        tst[d] = d == dim ? 0 : out->strides[d]; /* the index supplies the dim coordinate */
        sst[d] = (scalar_src || src->ndim != nd) ? 0 : src->strides[d];
    }
    const int64_t *st[3] = {ix->strides, sst, tst};
    sf_cpu_iter it;
    sf_cpu_iter_init(&it, ix->ndim, ix->shape, 3, st);
    int64_t si = sf_cpu_iter_stride(&it, 0), ss = sf_cpu_iter_stride(&it, 1),
            stt = sf_cpu_iter_stride(&it, 2);
    int64_t offs[3], m;
    double fb[SF_CPU_BLOCK];
    int64_t ib[SF_CPU_BLOCK];
    while ((m = sf_cpu_iter_next(&it, SF_CPU_BLOCK, offs)) > 0) {
        sf_cpu_gather_i64(ix->data, ix->dtype, offs[0], si, m, ix->dtype, blk);
        if (add && !lit) {
            if (isf) sf_cpu_gather_f64(src->data, dt, offs[1], ss, m, dt, fb);
            else sf_cpu_gather_i64(src->data, dt, offs[1], ss, m, dt, ib);
        }
        for (int64_t i = 0; i < m; i++) {
            int64_t v = blk[i];
            if (v < 0 || v >= size) return index_error(n, v, dim, size, msg, msglen);
            int64_t t = offs[2] + i * stt + v * os_dim;
            if (!add) {
                if (lit) memcpy((char *)out->data + t * (int64_t)es, litb, es);
                else copy_run(out->data, t, 1, src->data, offs[1] + i * ss, 1, 1, es);
            } else if (isf) {
                accf[t] += lit ? litf : fb[i];
            } else {
                acci[t] = sf_cpu_add_i64(acci[t], lit ? liti : ib[i]);
            }
        }
    }
    if (add && nx > 0) {
        if (isf) sf_cpu_store_f64(out->data, dt, 0, 1, nx, accf);
        else sf_cpu_store_i64(out->data, dt, 0, 1, nx, acci);
    }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Entry point                                                                      */
/* ------------------------------------------------------------------------------ */

scanfuse_status sf_cpu_index(const scanfuse_fusion *f, const sf_node *n, const sf_view *in,
                             const sf_view *out0, const sf_view *out1, void *scratch, char *msg,
                             size_t msglen) {
    char *sc = scratch;
    int64_t *blk = scratch;
    switch (n->op) {
    case SF_OP_topk: return run_sort(f, n, &in[0], out0, out1, sc, msg, msglen);
    case SF_OP_argsort: return run_sort(f, n, &in[0], NULL, out0, sc, msg, msglen);
    case SF_OP_one_hot:
    case SF_OP_bincount: return run_ids(n, &in[0], out0, blk, msg, msglen);
    case SF_OP_gather:
    case SF_OP_take_along_dim:
    case SF_OP_index_select: return run_gather(n, &in[0], &in[1], out0, blk, msg, msglen);
    case SF_OP_scatter: return run_scatter(f, n, &in[0], &in[1], &in[2], out0, sc, msg, msglen);
    default: break;
    }
    sf_msg(msg, msglen, "cpu: %s is not an index op", sf_op_table[n->op].name);
    return SCANFUSE_ERROR_UNSUPPORTED;
}
