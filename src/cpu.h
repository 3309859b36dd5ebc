/*
 * cpu.h — internal contracts of the CPU backend, shared by cpu_backend.c (the vtable,
 * value buffers and the node loop), cpu_pointwise.c (element movement, conversions,
 * pointwise, creation and copying shape ops), cpu_scan.c, cpu_reduce.c, cpu_fused.c
 * and cpu_rows.c (its whole-row kernels).
 *
 * The building blocks every kernel uses:
 *  - an N-d iterator (sf_cpu_iter) that walks a shape in row-major order for up to
 *    SF_CPU_MAX_OPS strided operands at once and yields runs along the innermost
 *    (coalesced) dim, so that index arithmetic stays out of the inner loops;
 *  - block conversions (gather/store) between a strided buffer of any dtype and a
 *    contiguous block of doubles or int64s; each has its dtype switch outside the
 *    element loop;
 *  - the compensated-summation helpers of the accurate float sums (Sum2 plus a
 *    round-to-odd step, so narrow results are rounded once).
 *
 * Invariants:
 *  - strides are in elements and may be 0 (broadcast); offsets are element offsets
 *    from the view's data pointer; loads and stores go through memcpy, so no
 *    alignment is assumed;
 *  - a float block holds values exactly representable in its "conversion dtype"
 *    (operands are converted to the op's common dtype as by a cast), an int block holds
 *    values in the range of its conversion dtype;
 *  - kernels write only their own output buffers (contiguous, allocated by
 *    cpu_backend.c), never a caller's tensor; the backend copies outputs at the end.
 */
#ifndef SF_CPU_H
#define SF_CPU_H

#include "sf.h"

#include <math.h>
#include <string.h>

/* Elements per block: the scratch blocks of one kernel stay in L1. */
#define SF_CPU_BLOCK 512
/* Operands of one iterator: an output and up to three inputs. */
#define SF_CPU_MAX_OPS (SF_MAX_IN + 1)

/* ------------------------------------------------------------------------------ */
/* Bit-level conversions (inline: they sit inside the per-dtype element loops)      */
/* ------------------------------------------------------------------------------ */

static inline uint64_t sf_cpu_bits(double v) {
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

static inline double sf_cpu_from_bits(uint64_t b) {
    double v;
    memcpy(&v, &b, 8);
    return v;
}

static inline uint32_t sf_cpu_f32_bits(float v) {
    uint32_t b;
    memcpy(&b, &v, 4);
    return b;
}

static inline float sf_cpu_f32_from_bits(uint32_t b) {
    float v;
    memcpy(&v, &b, 4);
    return v;
}

/* float16 bits -> double (exact). */
static inline double sf_cpu_f16_to_f64(uint16_t h) {
    uint64_t sign = (uint64_t)(h >> 15) << 63;
    unsigned e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0) {
        double v = (double)m * 0x1p-24; /* subnormal (or zero): m * 2^-24 exactly */
        return (h >> 15) ? -v : v;
    }
    if (e == 31) return sf_cpu_from_bits(sign | 0x7FF0000000000000ull | ((uint64_t)m << 42));
    return sf_cpu_from_bits(sign | ((uint64_t)(e + 1008) << 52) | ((uint64_t)m << 42));
}

/* bfloat16 bits -> double (exact). */
static inline double sf_cpu_bf16_to_f64(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Rounds the significand of a finite double (biased exponent field e, fraction m) to
 * a format with `fbits` fraction bits: returns the rounded fraction plus carry (round
 * to nearest even).  Shared by the float16 and bfloat16 encoders. */
static inline uint64_t sf_cpu_round_shift(uint64_t sig, int shift) {
    uint64_t q = sig >> shift, rem = sig & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return q;
}

/* double -> float16 bits, round to nearest even directly from double (no double
 * rounding); the same bits as sf_f64_to_f16 in dtype.c, without its libm calls. */
static inline uint16_t sf_cpu_f64_to_f16(double v) {
    uint64_t b = sf_cpu_bits(v);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000u);
    int e = (int)((b >> 52) & 0x7FF);
    uint64_t m = b & 0xFFFFFFFFFFFFFull;
    if (e == 0x7FF) return (uint16_t)(sign | (m ? 0x7E00u : 0x7C00u));
    int ue = e - 1023;
    if (ue > 15) return (uint16_t)(sign | 0x7C00u);
    if (ue >= -14) /* normal: a carry out of the fraction bumps the exponent (to inf) */
        return (uint16_t)(sign | ((((uint64_t)(ue + 15) << 10) | (m >> 42)) +
                                  (sf_cpu_round_shift(m, 42) - (m >> 42))));
    if (e == 0) return sign;             /* double subnormals are far below float16's */
    int shift = 28 - ue;                 /* subnormal: value / 2^-24 = sig >> shift */
    if (shift > 63) return sign;
    return (uint16_t)(sign | sf_cpu_round_shift(m | (1ull << 52), shift));
}

/* double -> bfloat16 bits, round to nearest even directly from double. */
static inline uint16_t sf_cpu_f64_to_bf16(double v) {
    uint64_t b = sf_cpu_bits(v);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000u);
    int e = (int)((b >> 52) & 0x7FF);
    uint64_t m = b & 0xFFFFFFFFFFFFFull;
    if (e == 0x7FF) return (uint16_t)(sign | (m ? 0x7FC0u : 0x7F80u));
    int ue = e - 1023;
    if (ue > 127) return (uint16_t)(sign | 0x7F80u);
    if (ue >= -126)
        return (uint16_t)(sign | ((((uint64_t)(ue + 127) << 7) | (m >> 45)) +
                                  (sf_cpu_round_shift(m, 45) - (m >> 45))));
    if (e == 0) return sign;
    int shift = -81 - ue; /* subnormal: value / 2^-133 = sig >> shift */
    if (shift > 63) return sign;
    return (uint16_t)(sign | sf_cpu_round_shift(m | (1ull << 52), shift));
}

/* PyTorch's x86 float -> int64 cast (cvttsd2si): NaN and out of range give INT64_MIN. */
static inline int64_t sf_cpu_f64_to_i64(double v) {
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)v;
}

/* The 32-bit cast narrower integer types go through (then wrapped). */
static inline int32_t sf_cpu_f64_to_i32(double v) {
    if (!(v > -2147483649.0 && v < 2147483648.0)) return INT32_MIN;
    return (int32_t)v;
}

/* Wrapping int64 arithmetic: two's complement through uint64, no undefined behaviour. */
static inline int64_t sf_cpu_wrap_u64(uint64_t u) {
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : (int64_t)(u - (uint64_t)INT64_MAX - 1u) + INT64_MIN;
}
static inline int64_t sf_cpu_add_i64(int64_t a, int64_t b) {
    return sf_cpu_wrap_u64((uint64_t)a + (uint64_t)b);
}
static inline int64_t sf_cpu_sub_i64(int64_t a, int64_t b) {
    return sf_cpu_wrap_u64((uint64_t)a - (uint64_t)b);
}
static inline int64_t sf_cpu_mul_i64(int64_t a, int64_t b) {
    return sf_cpu_wrap_u64((uint64_t)a * (uint64_t)b);
}

/* ------------------------------------------------------------------------------ */
/* Compensated accumulation (float cumsum, sum, mean)                                 */
/* ------------------------------------------------------------------------------ */

/* Compensated summation (Ogita-Rump-Oishi Sum2): s carries the plain double sum and
 * c the exact rounding errors of every addition (TwoSum), so s + c is the sum as if
 * computed in twice double precision.  The two chains are independent, so a long row
 * costs one add of latency per element.  Once s is not finite the error term is
 * dropped (inf - inf inside TwoSum would be NaN), so infinities and NaN propagate
 * exactly as plain IEEE addition. */
static inline void sf_cpu_sum2_add(double *s, double *c, double x) {
    double a = *s, t = a + x;
    double bp = t - a;
    double e = (a - (t - bp)) + (x - bp);
    *c += isfinite(t) ? e : 0.0;
    *s = t;
}

/* A reduction's float sum over one output's run of reduced elements (row mode) of more
 * than SF_SUM_LANES_MIN elements: SF_SUM_LANES compensated chains side by side (SIMD),
 * the element at position r of the run in lane r % SF_SUM_LANES, folded in lane order at
 * the end.  The bytes depend on the positions only, not on how a run is cut into tiles
 * or which ISA runs it; a sequential chain costs an add's latency per element (about 4
 * cycles), the lanes about one cycle.  Shorter runs (the MoE combine's slots,
 * cpu_rows.c, among them) keep one sequential chain.
 *   sf_cpu_sum2_lanes:      adds x[0..K) at positions r0 .. r0+K-1 to the lanes (hi, lo:
 *                           SF_SUM_LANES each); _f32: of float32 values (x aligned to 4
 *                           bytes), the same bytes;
 *   sf_cpu_sum2_lanes_fold: the lanes as one (s, c), as sf_cpu_sum2_add leaves it. */
#define SF_SUM_LANES 8
#define SF_SUM_LANES_MIN 64
void sf_cpu_sum2_lanes(double *hi, double *lo, const double *x, int64_t K, int64_t r0);
void sf_cpu_sum2_lanes_f32(double *hi, double *lo, const float *x, int64_t K, int64_t r0);
void sf_cpu_sum2_lanes_fold(const double *hi, const double *lo, double *s, double *c);

/* Runs of more than SF_SUM_CHUNK reduced elements of one output sum in chunks of
 * SF_SUM_CHUNK consecutive positions: each chunk in lanes as above (positions from the
 * chunk's start, which is a multiple of the lane count), folded to (s_k, c_k); then the
 * chunks in order: (S, C) = (s_0, c_0), and for k >= 1 sf_cpu_sum2_add(&S, &C, s_k),
 * C += c_k.  A run of at most SF_SUM_CHUNK is one chunk: the lanes' bytes.  The chunks
 * are independent, so a long run's can be summed on several threads with the same bytes.
 *   sf_sum2_acc: the lanes of the current chunk and the fold of the chunks before it;
 *     _add / _add_f32 take the run's next n elements (positions a->r ...), _result
 *     gives (S, C) of everything taken;
 *   sf_cpu_sum2_long: (S, C) of the K elements at element offsets off, off + rs, ... of
 *     base (dtype dt, converted to cv as sf_cpu_gather_f64 does), the chunks on up to
 *     `threads` threads of the pool. */
#define SF_SUM_CHUNK ((int64_t)1 << 16)
typedef struct sf_sum2_acc {
    double hi[SF_SUM_LANES], lo[SF_SUM_LANES]; /* the current chunk's lanes */
    double S, C;                               /* the chunks before it, folded */
    int64_t r;                                 /* positions taken */
} sf_sum2_acc;
void sf_sum2_acc_init(sf_sum2_acc *a);
void sf_sum2_acc_add(sf_sum2_acc *a, const double *x, int64_t n);
void sf_sum2_acc_add_f32(sf_sum2_acc *a, const float *x, int64_t n);
void sf_sum2_acc_result(const sf_sum2_acc *a, double *s, double *c);
void sf_cpu_sum2_long(const void *base, scanfuse_dtype dt, int64_t off, int64_t rs, int64_t K, scanfuse_dtype cv,
                      int threads, double *s, double *c);

/* Exact short sums.  Values of a p-bit float format (float32: p = 24, float16: 11,
 * bfloat16: 8) are multiples of 2^(e - p + 1), e the smallest nonzero one's exponent,
 * and below 2^(E + 1) in magnitude, E the largest one's.  When
 * E - e <= 53 - p - ceil(log2 K), every partial sum of K of them, in any order, is a
 * multiple of that power below 2^53 times it, so a double: every addition is exact.  The
 * compensated sums (sf_cpu_sum2_add, sf_cpu_sum2_lanes) then end with the exact sum and
 * an error term of +0 in every chain, and a plain double sum in any order ends with the
 * same double (+0 for a zero sum: every chain starts at +0).  So the test and a plain sum
 * in vector lanes stand in for them, with the same bytes, at a third of the operations.
 *   sf_cpu_sum_exact_f32: x[0..K), float32 holding p-bit values; _f64: doubles holding
 *   p-bit values.  True, with the exact sum in *s, when the test passes; false (a NaN or
 *   an infinity among them, or too wide a range of exponents) with *s unspecified. */
extern bool sf_cpu_sum_exact_off; /* test hook: the compensated sums only */
#define SF_SUM_EXACT_MAX 4096 /* longer runs do not try (see cpu_fused_f32.c) */
bool sf_cpu_sum_exact_f32(const float *x, int64_t K, int p, double *s);
bool sf_cpu_sum_exact_f64(const double *x, int64_t K, int p, double *s);
/* The p of sf_cpu_sum_exact_* for values of dtype dt, 0 when it does not apply
 * (float64, integers). */
static inline int sf_cpu_sum_exact_bits(scanfuse_dtype dt) {
    if (sf_cpu_sum_exact_off) return 0;
    return dt == SCANFUSE_FLOAT32 ? 24 : dt == SCANFUSE_FLOAT16 ? 11 : dt == SCANFUSE_BFLOAT16 ? 8 : 0;
}

/* Normalizes (s, c) into hi + lo with hi = fl(s + c) (TwoSum); false when the sum is
 * not finite (then *hi is that infinity or NaN and *lo is 0). */
static inline bool sf_cpu_sum2_split(double s, double c, double *hi, double *lo) {
    double h = s + c;
    if (!isfinite(s) || !isfinite(h)) {
        *hi = isfinite(s) ? h : s;
        *lo = 0.0;
        return false;
    }
    double bp = h - s;
    *lo = (s - (h - bp)) + (c - bp);
    *hi = h;
    return true;
}

/* The value hi + lo (normalized) as a double that rounds correctly to any narrower
 * format: round-to-odd to 53 bits, so that a later round-to-nearest to float32,
 * bfloat16 or float16 (all with <= 51 bits) is the exact value rounded once. */
static inline double sf_cpu_dd_to_odd(double hi, double lo) {
    if (lo == 0.0 || !isfinite(hi) || hi == 0.0) return hi;
    uint64_t b = sf_cpu_bits(hi);
    if (b & 1u) return hi;
    if ((lo > 0) == (hi > 0)) b++; /* one step away from zero */
    else b--;                      /* one step toward zero */
    return sf_cpu_from_bits(b);
}

/* The double to store for a compensated sum (s, c) with result dtype dt: the nearest
 * double for float64, the round-to-odd double for narrower floats (the store then
 * rounds once). */
static inline double sf_cpu_sum2_result(double s, double c, scanfuse_dtype dt) {
    double hi, lo;
    if (!sf_cpu_sum2_split(s, c, &hi, &lo)) return hi;
    return dt == SCANFUSE_FLOAT64 ? hi : sf_cpu_dd_to_odd(hi, lo);
}

/* ------------------------------------------------------------------------------ */
/* The N-d iterator                                                                 */
/* ------------------------------------------------------------------------------ */

typedef struct sf_cpu_iter {
    int ndim; /* >= 1 after init: size-1 dims dropped, compatible dims merged */
    int nop;
    int64_t shape[SF_MAX_DIMS];
    int64_t stride[SF_CPU_MAX_OPS][SF_MAX_DIMS];
    int64_t idx[SF_MAX_DIMS];
    int64_t base[SF_CPU_MAX_OPS]; /* element offset of the current innermost row */
    int64_t inner;                /* position along the innermost dim */
    bool done;
} sf_cpu_iter;

/* Starts a walk over `shape` (row-major) for nop operands whose element strides are
 * strides[op][0..ndim).  An empty shape yields nothing; a 0-d shape one element. */
void sf_cpu_iter_init(sf_cpu_iter *it, int ndim, const int64_t *shape, int nop,
                      const int64_t *const *strides);
/* The next run of up to maxn (>= 1) elements along the innermost dim: writes each
 * operand's element offset of the run's first element to offs[op] and returns the
 * run length (0 when done).  Within a run operand op advances by inner_stride(op). */
int64_t sf_cpu_iter_next(sf_cpu_iter *it, int64_t maxn, int64_t *offs);
static inline int64_t sf_cpu_iter_stride(const sf_cpu_iter *it, int op) {
    return it->stride[op][it->ndim - 1];
}

/* Strides of `in` broadcast to (ndim, shape) (PyTorch rules, right-aligned; 0 where
 * the input has size 1 or lacks the dim). */
void sf_cpu_broadcast_strides(const sf_view *in, int ndim, const int64_t *shape,
                              int64_t *strides);

/* true when the view is row-major contiguous (size-1 dims ignored). */
bool sf_cpu_view_is_contiguous(const sf_view *v);

/* ------------------------------------------------------------------------------ */
/* Block conversions                                                                */
/* ------------------------------------------------------------------------------ */

/* Loads n elements of dtype dt at element offsets off, off+stride, ... (stride may be
 * negative or 0) as doubles, then converts them to `conv` as a cast would (a float
 * conv rounds; an integer conv is ignored: values are loaded exactly as doubles). */
void sf_cpu_gather_f64(const void *base, scanfuse_dtype dt, int64_t off, int64_t stride,
                       int64_t n, scanfuse_dtype conv, double *out);
/* Loads n elements as int64 converted to the integer or bool dtype `conv` as a cast
 * would (floats truncate PyTorch's way, integers wrap, bool is != 0). */
void sf_cpu_gather_i64(const void *base, scanfuse_dtype dt, int64_t off, int64_t stride,
                       int64_t n, scanfuse_dtype conv, int64_t *out);
/* Stores n doubles into dtype dt (floats round to nearest even, integers cast as
 * PyTorch casts a float). */
void sf_cpu_store_f64(void *base, scanfuse_dtype dt, int64_t off, int64_t stride, int64_t n,
                      const double *x);
/* Stores n int64s into dtype dt (integers wrap, bool is != 0, floats round). */
void sf_cpu_store_i64(void *base, scanfuse_dtype dt, int64_t off, int64_t stride, int64_t n,
                      const int64_t *x);
/* Fills n doubles/int64s with the literal converted to `conv` as a cast would. */
void sf_cpu_fill_literal_f64(const sf_num *lit, scanfuse_dtype conv, double *out, int64_t n);
void sf_cpu_fill_literal_i64(const sf_num *lit, scanfuse_dtype conv, int64_t *out, int64_t n);

/* Element-wise copy between views of the same shape, converting the dtype as a cast
 * would.  Same dtypes copy bytes (memcpy for contiguous runs). */
void sf_cpu_copy(const sf_view *dst, const sf_view *src);

/* ------------------------------------------------------------------------------ */
/* Kernels.  `out` views are contiguous buffers of the node's result dtype and shape. */
/* ------------------------------------------------------------------------------ */

/* A pointwise op (not cast).  cdt is the common dtype the operands are converted to;
 * lit[i] non-NULL means input i is a weak scalar literal, converted straight to cdt. */
scanfuse_status sf_cpu_pointwise(const sf_node *node, scanfuse_dtype cdt, const sf_view *in,
                                 const sf_num *const *lit, const sf_view *out, char *msg,
                                 size_t msglen);
/* scalar, arange, iota (full is a broadcast view made by the backend). */
void sf_cpu_create(const sf_node *node, const sf_view *out);
/* Stores a literal as one element of dtype dt at base. */
void sf_cpu_store_literal(void *base, scanfuse_dtype dt, const sf_num *lit);
void sf_cpu_pad(const sf_node *node, const sf_view *in, const sf_view *out);
void sf_cpu_tri(const sf_node *node, const sf_view *in, const sf_view *out);

/* Scans and reductions take a work area of sf_cpu_scan_work_size() /
 * sf_cpu_reduce_work_size() bytes (8-aligned) from the backend's arena, so a run
 * allocates nothing once its arena exists.  Output views may be the caller's own when
 * they are contiguous (size-1 dims ignored). */
size_t sf_cpu_scan_work_size(void);
size_t sf_cpu_reduce_work_size(void);

/* cumsum, cumprod, cummax, cummin (out1: int64 indices), logcumsumexp, on the calling
 * thread (the fused tile path calls this on sub-views: a scan's bytes depend only on
 * each scanned row's values, never on the layout, the sub-view or the thread count). */
void sf_cpu_scan(const sf_node *node, const sf_view *in, const sf_view *out0,
                 const sf_view *out1, void *work);
/* The same on up to `threads` threads (0: every core; cpu_threads.c's pool), giving the
 * same bytes for every thread count.  `work` is used by the calling thread only.  conv:
 * NULL, or a buffer of sf_cpu_scan_conv_bytes bytes (aligned to 8) for the input
 * converted to the result dtype (a narrowing float cumsum; without one, the call
 * allocates it). */
void sf_cpu_scan_mt(const sf_node *node, const sf_view *in, const sf_view *out0,
                    const sf_view *out1, void *work, int threads, void *conv);
/* The bytes of the conversion buffer a scan of node (input dtype xdt, numel elements,
 * result dtype dt) takes: cumsum narrowing to a float dtype with no kernel of its own
 * (float32 -> float16, float64 -> float32, integers -> a float) scans the input
 * converted to dt; 0 for every other scan. */
int64_t sf_cpu_scan_conv_bytes(const sf_node *node, scanfuse_dtype xdt, scanfuse_dtype dt, int64_t numel);
/* The instruction set of the scan kernels: "avx512w" (Intel) or "avx512" (AMD) when the
 * CPU has AVX-512, else "avx2" or "portable" (chosen from the CPU's features).
 * sf_cpu_scan_force_isa selects one for tests (NULL: automatic again); false when the
 * CPU lacks it.  Every ISA gives the same bytes. */
const char *sf_cpu_scan_isa(void);
bool sf_cpu_scan_force_isa(const char *name);
/* Scans moving fewer bytes than this run on one thread, and outputs of at least
 * sf_cpu_scan_nt_min_bytes are written with non-temporal stores (variables for tests
 * and measurements). */
extern int64_t sf_cpu_scan_mt_min_bytes, sf_cpu_scan_nt_min_bytes;
/* Seconds a thread waits for the carry of the partition before its own, on a long row
 * split over threads, before computing it itself (0 in tests: always). */
extern double sf_cpu_scan_wait_s;

/* sum, prod, max, min, mean, argmax, argmin, on the calling thread; _mt: a reduction
 * down the columns (a kept dim has the smallest stride) on up to `threads` threads of the
 * pool, each taking whole blocks of outputs (the same bytes for every thread count). */
void sf_cpu_reduce(const sf_node *node, const sf_view *in, const sf_view *out, void *work);
void sf_cpu_reduce_mt(const sf_node *node, const sf_view *in, const sf_view *out, void *work, int threads);

/* The dims of a reduction over `in` split in two (red[e]: dim e is reduced): the kept
 * dims' shape, input strides and contiguous output strides, the reduced dims' shape and
 * input strides, how many elements each output reduces, and each side's smallest input
 * stride among dims longer than 1 (which side to walk innermost).  Shared by
 * sf_cpu_reduce and the fused float32 sum so that both walk the same order. */
typedef struct sf_red_split {
    int nk, nr;
    int64_t kshape[SF_MAX_DIMS], kin[SF_MAX_DIMS], kout[SF_MAX_DIMS];
    int64_t rshape[SF_MAX_DIMS], rin[SF_MAX_DIMS];
    int64_t rcount, kmin, rmin;
} sf_red_split;
void sf_cpu_red_split(const sf_view *in, const bool *red, sf_red_split *sp);

/* ---- the fused path's float32 element kernels (cpu_fused_f32.c) ---- */

/* The ops the fused path computes on blocks of floats with the generic kernels' bytes
 * (cpu_fused.c, "float32 fast paths", says why they agree). */
enum sf_cpu_fast_op {
    SF_FAST_NONE,
    SF_FAST_ADD, SF_FAST_SUB, SF_FAST_MUL, SF_FAST_DIV, SF_FAST_MAX, SF_FAST_MIN, /* binary */
    SF_FAST_NEG, SF_FAST_ABS, SF_FAST_RELU,                              /* unary */
    SF_FAST_CAST, /* float32/bfloat16 -> float32/bfloat16, float64 -> float32 */
    SF_FAST_SUM   /* sum of float32/bfloat16 into float32 (same arithmetic, fewer passes) */
};

/* The reduced dims of reduction node n over an input of nd dims (red[SF_MAX_DIMS]), as
 * sf_cpu_reduce reads them. */
void sf_cpu_reduced_dims(const sf_node *n, int nd, bool *red);
/* n values of dtype dt (float32, bfloat16, or float64 rounded as a float32 store
 * rounds) at element offsets off, off + stride, ... as floats, and back. */
void sf_cpu_f32_load(const void *base, scanfuse_dtype dt, int64_t off, int64_t stride, int64_t n,
                     float *restrict x);
void sf_cpu_f32_store(void *base, scanfuse_dtype dt, int64_t off, int64_t stride, int64_t n,
                      const float *restrict y);
/* sf_cpu_f32_store that also tells whether a value was NaN (true; what it stored for
 * it is then to be rewritten by the caller's generic fallback). */
bool sf_cpu_f32_store_nan(void *base, scanfuse_dtype dt, int64_t off, int64_t stride, int64_t n,
                          const float *restrict y);
bool sf_cpu_f32_has_nan(const float *x, int64_t n);
/* r = op(x, y) on m floats (op an sf_cpu_fast_op); xbc / ybc: x / y is one value. */
void sf_cpu_f32_compute(int op, const float *restrict x, const float *restrict y,
                        float *restrict r, int64_t m, bool xbc, bool ybc);
/* sum of float32/bfloat16 into float32: the generic reduction's bytes. */
void sf_cpu_f32_sum(const sf_node *n, const sf_view *in, const sf_view *out, int threads);

/* matmul.  scratch holds sf_cpu_matmul_scratch() bytes (8-aligned) for contiguous
 * float64/int64 copies of both operands and one accumulator row. */
int64_t sf_cpu_matmul_scratch(int na, const int64_t *ashape, int nb, const int64_t *bshape);
scanfuse_status sf_cpu_matmul(const sf_view *a, const sf_view *b, const sf_view *out,
                              void *scratch, char *msg, size_t msglen);

/* Index and sort ops (cpu_index.c): topk, argsort, one_hot, bincount, gather,
 * take_along_dim, index_select, scatter.  scratch holds sf_cpu_index_scratch() bytes
 * (8-aligned) for the node; out1 is topk's indices (NULL otherwise).  An index out of
 * range returns SCANFUSE_ERROR_VALUE with a message; the results are then garbage and
 * must not reach the caller (sf_cpu_index_may_fail says which nodes can fail). */
int64_t sf_cpu_index_scratch(const scanfuse_fusion *f, const sf_node *node);
bool sf_cpu_index_may_fail(const sf_node *node);
scanfuse_status sf_cpu_index(const scanfuse_fusion *f, const sf_node *node, const sf_view *in,
                             const sf_view *out0, const sf_view *out1, void *scratch, char *msg,
                             size_t msglen);

/* ------------------------------------------------------------------------------ */
/* Fused segments (cpu_fused.c)                                                     */
/* ------------------------------------------------------------------------------ */

/*
 * A fused segment (SF_SEG_POINTWISE, SCAN or REDUCE with two or more compute nodes)
 * planned for tile-by-tile execution.  A tile is a box of the segment's iteration
 * domain that holds whole scanned rows / whole reduced extents; each compute node runs
 * on the tile with the same kernel the op-by-op path uses (sf_cpu_pointwise,
 * sf_cpu_copy, sf_cpu_scan, sf_cpu_reduce, sf_cpu_index) on sub-views, or with a float32
 * fast path proven to give the same bytes; intermediates live in small per-worker tile
 * buffers of their own dtype, and only the segment's outputs are written to their
 * whole buffers (a lazy index_select's rows just before the tiles that read them).
 * Results are therefore the same bytes as running the nodes op by op, for any tiling
 * and thread count.
 */
typedef struct sf_cpu_fused sf_cpu_fused;
/* Plans segment seg of f (cdt: per node, the common dtype of pointwise nodes) for up to
 * `threads` threads of the pool (cpu_threads.h).  NULL with *st and msg set on failure. */
sf_cpu_fused *sf_cpu_fused_plan(const scanfuse_fusion *f, const sf_segment *seg,
                                const scanfuse_dtype *cdt, int threads, scanfuse_status *st,
                                char *msg, size_t msglen);
void sf_cpu_fused_free(sf_cpu_fused *fp);
/* Scratch bytes of one run (every worker's tile buffers and scan/reduction work). */
size_t sf_cpu_fused_scratch_size(const sf_cpu_fused *fp);
/* The values the run needs whole views of, in io order: values read from outside the
 * tiles (inputs, earlier segments' outputs, setup results) and the segment's outputs
 * (their destinations).  Returns the count; *ids points into the plan. */
int sf_cpu_fused_io(const sf_cpu_fused *fp, const int32_t **ids);
/* Runs every tile.  io[i] is the whole view of value ids[i] (live; destinations
 * allocated).  scratch: sf_cpu_fused_scratch_size() bytes.  Only the destinations are
 * written.  An error (integer division by zero, an index out of range) is reported for
 * the first failing tile; destinations then hold garbage. */
scanfuse_status sf_cpu_fused_run(const sf_cpu_fused *fp, const sf_view *io, void *scratch,
                                 char *msg, size_t msglen);
/* Test hook: elements per tile for plans made while it is > 0 (0: sized for L2). */
extern int64_t sf_cpu_fused_tile_elems;
/* A segment of one element-wise op with at least this many outputs runs tiled, on the
 * pool (cpu_backend.c); a variable so that tests can compare it with the op-by-op run. */
extern int64_t sf_cpu_tile_pointwise_min;

/* ------------------------------------------------------------------------------ */
/* Row kernels of the fused path (cpu_rows.c)                                       */
/* ------------------------------------------------------------------------------ */

/* Copies n bytes; with `stream` the destination is written with non-temporal stores
 * where the CPU has them (no read-for-ownership, no cache pollution): the writer calls
 * sf_cpu_stream_fence() before another thread may read what it wrote. */
void sf_cpu_row_copy(void *dst, const void *src, size_t n, bool stream);
void sf_cpu_stream_fence(void);
/* The weighted combine of k <= 64 rows of float32 or bfloat16 (xdt): out[h] = the sum
 * over j < k of fl32(rows[j][h] * w[j]), h < n, rounded once to odt (float32 or
 * bfloat16), the same bytes as mul -> compensated sum -> cast (see cpu_rows.c).  With
 * `copy` (k entries, NULL or not), copy[j] also gets the n elements of rows[j], read
 * once for both (`copy_stream`: as `stream`).  Returns false, with out and the copies
 * partly written, when a sum is not finite (the caller then recomputes with the
 * generic kernels).  `stream`: as in sf_cpu_row_copy. */
bool sf_cpu_row_combine(const void *const *rows, scanfuse_dtype xdt, const float *w, int k,
                        int64_t n, void *out, scanfuse_dtype odt, bool stream,
                        void *const *copy, bool copy_stream);
/* Test hook: the combine's kernel variant (0: the best this CPU has; 1: baseline,
 * 2: AVX2, 3: AVX-512, each where the CPU has it, else the next lower). */
extern int sf_cpu_rows_isa;
/* Fused kernels write outputs (and lazy rows) of at least this many bytes with
 * streaming stores (a variable for tests and measurements). */
extern int64_t sf_cpu_rows_nt_min_bytes;

/* ------------------------------------------------------------------------------ */
/* topk of a few elements per row (cpu_topk.c)                                      */
/* ------------------------------------------------------------------------------ */

#define SF_CPU_TOPK_MAX_K 32
/* The positions of the k best elements (1 <= k <= SF_CPU_TOPK_MAX_K, k <= len) of the
 * row of len elements at element off + t * stride of x, best first, ties to the lower
 * position: the same as cpu_index.c's generic topk, in O(len).  keys: 2 * len scratch
 * entries.  Returns false (writing nothing) for a dtype without 32-bit keys (64-bit
 * ones), a k out of that range, or when sf_cpu_topk_fast is 0. */
bool sf_cpu_topk_small(const sf_view *x, int64_t off, int64_t stride, int64_t len, int64_t k,
                       bool desc, uint32_t *keys, int64_t *pos);
/* Test hook: 0 sends every topk down the generic path, 2 takes cpu_topk.c without its
 * AVX-512 loop (1: the default, the best this CPU has). */
extern int sf_cpu_topk_fast;

#endif /* SF_CPU_H */
