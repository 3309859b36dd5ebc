/*
 * cpu_scan_kern.h — the contract between the scan dispatcher (cpu_scan.c) and the scan
 * kernels, which exist once per instruction set: AVX-512 (cpu_scan_avx512.c), AVX2
 * (cpu_scan_avx2.c) and portable C (cpu_scan_portable.c), all generated from one body
 * (cpu_scan_body.h) over a small per-ISA vector layer.
 *
 * What a kernel computes is defined here, independently of the instruction set, so
 * that every ISA gives the same bits (tests/test_scan_threads.c compares them):
 *
 * Sequences.  A kernel scans a *logical sequence* (sf_seq): element i of the scan
 * order (0 <= i < len).  Logical i reads input element x0 + xs*i (xs = +1, or -1 for
 * a reverse scan), except that i < lo reads the identity (exclusive scans are the
 * inclusive scan of the input shifted by one: lo = 1, x0 one element back).  Output i
 * goes to element y0 + ys*i (ys = +-1 takes vector stores; any other stride, which
 * only tiles of a fused segment produce, element stores).  Inputs with another stride
 * are gathered by the dispatcher into a contiguous chunk first.
 *
 * Float cumsum (input float16/bfloat16/float32/float64, result the same or wider):
 * values are converted exactly to double.  A row is cut into partitions of
 * SF_SCAN_PART elements (fixed; the last may be shorter), a partition into blocks of
 * SF_SCAN_BLOCK = 64, a block into 8 vectors of 8 lanes.  Within a vector, the
 * in-vector prefix y of x is (the Sklansky network; every step a plain double add):
 *     L1: y1 = x1+x0, y3 = x3+x2, y5 = x5+x4, y7 = x7+x6
 *     L2: y2 = x2+y1, y3 = y3+y1, y6 = x6+y5, y7 = y7+y5
 *     L3: y4..y7 += y3
 * Within a block, T is the running block total (T = -0.0 at the block start; after
 * vector k, T = T + y7).  Within a partition, L = (L.hi, L.lo) is the partition-local
 * double-double carry (-0.0, -0.0 at its start; after each block, TwoSum-accumulate T
 * into it: t = L.hi + T, e = the exact error of that add, L.lo += (t finite ? e : 0),
 * L.hi = t).  With cs the partition carry (below), output i of vector k is
 *     out = y + (T + Cs),   Cs = (L.hi + L.lo) + cs   (per block),
 * rounded once to the result dtype.  Across partitions, c (double-double) starts at
 * (-0.0, -0.0) and c[p+1] = c[p] (+) L_end[p] (sf_dd_add below; a NaN carry becomes
 * the default NaN), cs[p] = c.hi + c.lo.
 * The plain-double error is at most ~16 roundings of |values within one block|, and
 * the carries never accumulate rounding error, so every output is within 2^-48 * sum|x|
 * of the exact prefix before its final rounding (DESIGN.md §1 asks for 2^-40).
 *
 * Integer cumsum (bool/int inputs, integer results other than bool): exact int64
 * arithmetic wrapping like two's complement, stored truncated to the result width;
 * any association gives the same bits.
 *
 * cummax/cummin (32-bit keys: float32, float16, bfloat16, int32, int16, int8, uint8,
 * bool): each element maps to an int32 key whose order is the scan's order (NaN
 * greatest; -0.0 and +0.0 equal; cummin negates the order by ~key), ties go to the
 * later element; exact, so any association gives the same bits.  Values are decoded
 * from the key; where the key is a zero or NaN key the value is copied from the
 * winning input element (sign of zero; a NaN as the generic path stores it: float32
 * quieted, float16/bfloat16 the canonical NaN).
 *
 * Columns (the scanned dim is not the innermost): the same definition for each
 * column's sequence, lane-wise across columns (8 consecutive steps play the role of a
 * vector's 8 lanes), so a column's bits are the bits of the same values scanned as a
 * row.  The result of every scan therefore depends only on the 1-D sequence scanned
 * (and the dtypes and flags), never on the layout, the path, a tiling of the other
 * dims (cpu_fused.c relies on that) or the thread count.
 */
#ifndef SF_CPU_SCAN_KERN_H
#define SF_CPU_SCAN_KERN_H

#include "cpu.h"

#include <stdatomic.h>

#define SF_SCAN_BLOCK 64
/* Partition length (elements of the scan order): big enough that per-partition work
 * (a carry hand-over between threads) is negligible, small enough that a partition's
 * input stays in a core's L2 (256 KiB of float32) between the reduce and scan passes.
 * Part of the result's definition: never derived from the thread count. */
#define SF_SCAN_PART ((int64_t)1 << 16)
/* The most columns of one column-mode tile (its state, 7 doubles a column, lives on
 * the stack).  Wide tiles read long runs of each step's row (measured: [4096, 4096]
 * along dim 0 reads 20 GB/s with 2048-4096 columns, 10 GB/s with 256); the
 * dispatcher narrows them so every thread gets tiles.  Results do not depend on it. */
#define SF_SCAN_COLTILE 4096

typedef struct sf_dd {
    double hi, lo;
} sf_dd;

/* Bytes per element, inline so that kernels specialized on a constant dtype fold it
 * (scanfuse_dtype_size is an out-of-line call). */
static inline int64_t sf_scan_es(scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_BOOL: case SCANFUSE_UINT8: case SCANFUSE_INT8: return 1;
    case SCANFUSE_INT16: case SCANFUSE_FLOAT16: case SCANFUSE_BFLOAT16: return 2;
    case SCANFUSE_INT32: case SCANFUSE_FLOAT32: return 4;
    default: return 8;
    }
}

/* TwoSum-accumulates s into d (infinities and NaN propagate; the error term is
 * dropped once the sum is not finite). */
static inline void sf_dd_acc(sf_dd *d, double s) {
    double t = d->hi + s;
    double bp = t - d->hi;
    double e = (d->hi - (t - bp)) + (s - bp);
    d->lo = d->lo + (isfinite(t) ? e : 0.0);
    d->hi = t;
}

/* c (+) l: the carry after a partition whose local carry is l. */
static inline sf_dd sf_dd_add(sf_dd c, sf_dd l) {
    sf_dd r = c;
    sf_dd_acc(&r, l.hi);
    r.lo = r.lo + l.lo;
    return r;
}

/* The carry of a cummax/cummin scan: the winning key so far, its original index
 * (-1: the identity) and its value as the bits of the output dtype. */
typedef struct sf_maxc {
    int32_t key;
    int64_t idx;
    uint64_t vbits;
} sf_maxc;

typedef struct sf_seq {
    const void *x;
    int64_t x0, xs, lo;
    void *y;
    int64_t y0, ys;
    int64_t len;
    scanfuse_dtype xdt, ydt;
    bool nt;       /* non-temporal stores allowed (large outputs; used where aligned).
                    * Kernels do not fence them: the dispatcher issues one store fence
                    * per thread before the scan returns (a fence per call would wait
                    * for the write-combining buffers on every short row). */
    bool cached;   /* the whole scan's data fits in a core's L2 (fsum_rows may take the
                    * 8-rows kernel, which wins only there; the bits are the same) */
    /* cummax/cummin: the int64 index output (same mapping as y) and the original
     * index of logical i: ix0 + ixs*i */
    void *yi;
    int64_t ix0, ixs;
    bool is_min;
} sf_seq;

/* Columns: logical step t reads the row at element x0 + xs*t (t >= lo; t < lo is the
 * identity), whose column j is at + j*xc, and writes the row at y0 + ys*t, whose
 * column j is at + j*yc.  Unit column strides take the vector loads and stores. */
typedef struct sf_cols {
    const void *x;
    int64_t x0, xs, lo, xc;
    void *y;
    int64_t y0, ys, yc;
    int64_t nsteps;
    scanfuse_dtype xdt, ydt;
    bool nt;
    /* cummax/cummin (cpu_scan_chain.c): the int64 index output (same offsets as y)
     * and the original index of step t >= lo: ix0 + ixs*t (steps t < lo: -1) */
    void *yi;
    int64_t ix0, ixs;
    bool is_min;
} sf_cols;

typedef struct sf_scan_kernels {
    const char *name;
    /* Float cumsum over logical [a, b): a is a multiple of SF_SCAN_BLOCK and b - a is
     * too unless b = len.  cs is the partition carry, L the partition-local carry
     * (in: at a, out: at b).  The reduce variant only advances L. */
    void (*fsum_scan)(const sf_seq *s, int64_t a, int64_t b, double cs, sf_dd *L);
    void (*fsum_reduce)(const sf_seq *s, int64_t a, int64_t b, sf_dd *L);
    /* Float cumsum of `nrows` whole rows of at most SF_SCAN_PART elements each (one
     * partition, so no carry in or out): row r is s shifted by r*xr input and r*yr
     * output elements.  Saves the per-row dispatch of short rows. */
    void (*fsum_rows)(const sf_seq *s, int64_t nrows, int64_t xr, int64_t yr);
    /* Integer cumsum: *carry is the sum before a (in) and before b (out). */
    void (*isum_scan)(const sf_seq *s, int64_t a, int64_t b, int64_t *carry);
    void (*isum_reduce)(const sf_seq *s, int64_t a, int64_t b, int64_t *carry);
    /* cummax/cummin with 32-bit keys: *c is the winner before a (in) and before b. */
    void (*max_scan)(const sf_seq *s, int64_t a, int64_t b, sf_maxc *c);
    void (*max_reduce)(const sf_seq *s, int64_t a, int64_t b, sf_maxc *c);
    /* Column tiles: columns [j0, j1) (j1 - j0 <= SF_SCAN_COLTILE), every step. */
    void (*fsum_cols)(const sf_cols *c, int64_t j0, int64_t j1);
    void (*isum_cols)(const sf_cols *c, int64_t j0, int64_t j1);
    /* Test hook: stores n doubles (a multiple of 8) into dtype ydt through the row
     * (which = 0) or the column (which = 1) vector stores, so tests can compare every
     * vector conversion with the scalar helpers bit for bit. */
    void (*store_test)(const double *in, int64_t n, scanfuse_dtype ydt, void *out, int which);
} sf_scan_kernels;

/* Scans moving at most this many bytes set sf_seq.cached (cpu_scan.c). */
extern int64_t sf_cpu_scan_cached_max_bytes;

extern const sf_scan_kernels sf_scan_portable_kernels;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define SF_SCAN_X86 1
extern const sf_scan_kernels sf_scan_avx2_kernels;
extern const sf_scan_kernels sf_scan_avx512_kernels;
extern const sf_scan_kernels sf_scan_avx512w_kernels; /* the same, whole-register row network */
extern atomic_bool sf_scan_avx512_bf16; /* the AVX-512 kernels may use AVX512-BF16 */
#endif

/* The key of a cummax/cummin over 32-bit keys (see above), and its inverse for
 * non-NaN keys (float dtypes: float32 bits; integer dtypes: the value). */
static inline int32_t sf_key_f32bits(uint32_t b, bool is_min) {
    uint32_t m = b & 0x7FFFFFFFu;
    if (m > 0x7F800000u) return INT32_MAX;
    int32_t k = (b >> 31) ? -(int32_t)m : (int32_t)m;
    return is_min ? ~k : k;
}
static inline uint32_t sf_key_to_f32bits(int32_t k, bool is_min) {
    if (is_min) k = ~k;
    return k < 0 ? (0x80000000u | (uint32_t)(-(int64_t)k)) : (uint32_t)k;
}

/* Which dtypes the kernels take (the dispatcher checks before calling). */
static inline bool sf_scan_fsum_ok(scanfuse_dtype xdt, scanfuse_dtype ydt) {
    if (!sf_dtype_is_float(xdt) || !sf_dtype_is_float(ydt)) return false;
    switch (ydt) {
    case SCANFUSE_FLOAT64: return true;
    case SCANFUSE_FLOAT32: return xdt != SCANFUSE_FLOAT64;
    case SCANFUSE_FLOAT16: case SCANFUSE_BFLOAT16: return xdt == ydt;
    default: return false;
    }
}
static inline bool sf_scan_isum_ok(scanfuse_dtype xdt, scanfuse_dtype ydt) {
    return sf_dtype_is_intlike(xdt) && sf_dtype_is_intlike(ydt) && ydt != SCANFUSE_BOOL;
}
static inline bool sf_scan_max_ok(scanfuse_dtype xdt) { /* 32-bit keys (64-bit: below) */
    return xdt != SCANFUSE_INT64 && xdt != SCANFUSE_FLOAT64;
}

/* ------------------------------------------------------------------------------ *
 * Chain scans (cpu_scan_chain.c): plain C compiled for AVX-512, AVX2 and baseline x86
 * (target clones) — one kernel each, since their bits do not depend on the ISA:
 *
 * cummax/cummin with 64-bit keys (int64, float64) along rows: the key of an int64 is
 * the value, of a float64 its sign-magnitude bits as an integer (-0.0 and +0.0 equal,
 * NaN INT64_MAX); cummin takes ~key (NaN stays INT64_MAX); ties go to the later
 * element.  Values are the winner's own bits (float64 NaN payloads as the generic path
 * keeps them).  Exact, so any association (a partition reduce, lanes) gives the same
 * bits as the element-by-element scan.
 *
 * cummax/cummin along columns (every dtype, the scanned dim not innermost): the same
 * rules column by column, keys widened to int64, values the winner's bits (a NaN as
 * the generic path stores it, as for the 32-bit-key rows; bool as 0/1).
 *
 * cumprod, rows and columns: left to right, p_i = p_{i-1} * x_i, in double for float
 * results (the input converted exactly: same dtype or a narrower float) and in
 * wrapping int64 for integer results, rounded once per output — the generic path's
 * and the reference evaluator's own order, so the bits are theirs.  A float product
 * cannot be re-associated without changing bits, so a long row is one chain: rows and
 * columns run in parallel, the partitions of one row do not.
 * ------------------------------------------------------------------------------ */

typedef struct sf_maxc64 {
    int64_t key, idx;
    uint64_t vbits;
} sf_maxc64;

/* The key of bits b of dtype dt (int64 or float64) and of the identity of an
 * exclusive scan (-inf / lowest for cummax, +inf / highest for cummin). */
static inline int64_t sf_key64(uint64_t b, scanfuse_dtype dt, bool is_min) {
    int64_t mn = is_min ? -1 : 0;
    if (dt != SCANFUSE_FLOAT64) return (int64_t)b ^ mn;
    uint64_t m = b & 0x7FFFFFFFFFFFFFFFull;
    int64_t s = -(int64_t)(b >> 63);
    int64_t k = (((int64_t)m ^ s) - s) ^ mn;
    return m > 0x7FF0000000000000ull ? INT64_MAX : k;
}
static inline uint64_t sf_ident64_bits(scanfuse_dtype dt, bool is_min) {
    if (dt == SCANFUSE_FLOAT64) return is_min ? 0x7FF0000000000000ull : 0xFFF0000000000000ull;
    return is_min ? (uint64_t)INT64_MAX : (uint64_t)INT64_MIN;
}

/* cummax/cummin over logical [a, b) of a row (int64/float64): *c is the winner before
 * a (in) and before b (out); store = false only advances *c (a partition reduce). */
void sf_scan_max64(const sf_seq *s, int64_t a, int64_t b, sf_maxc64 *c, bool store);
/* cumprod over logical [a, b) of a row: *pf (float results) or *pi (integer results)
 * is the product before a (in) and before b (out). */
void sf_scan_prod(const sf_seq *s, int64_t a, int64_t b, sf_prodx *pf, int64_t *pi);
/* Float cumprod of nrows whole rows: row r's input at s's offsets + r*xr, its output at
 * + r*yr (unit input steps); the bits of sf_scan_prod on each row from the identity. */
void sf_scan_prod_rows(const sf_seq *s, int64_t nrows, int64_t xr, int64_t yr);
/* Column tiles of cummax/cummin (any dtype, xdt == ydt) and cumprod. */
void sf_scan_max_cols(const sf_cols *c, int64_t j0, int64_t j1);
void sf_scan_prod_cols(const sf_cols *c, int64_t j0, int64_t j1);

static inline bool sf_scan_prod_ok(scanfuse_dtype xdt, scanfuse_dtype ydt) {
    if (sf_dtype_is_float(ydt)) /* x converts to ydt exactly */
        return sf_dtype_is_float(xdt) && (xdt == ydt || ydt == SCANFUSE_FLOAT64 ||
                                          (ydt == SCANFUSE_FLOAT32 && xdt != SCANFUSE_FLOAT64));
    return sf_dtype_is_intlike(xdt) && ydt != SCANFUSE_BOOL;
}

#endif /* SF_CPU_SCAN_KERN_H */
