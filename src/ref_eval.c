/*
 * ref_eval.c — the reference evaluator (backend "reference"): the oracle every other
 * backend is tested against.  It runs the lowered fusion op by op, in float64 for
 * floating values and in exact int64 for bool and integer values, with the most
 * obvious loops (N-d index odometers over contiguous row-major buffers).
 *
 * Invariants:
 *  - Every value is materialized as one contiguous row-major buffer: int64_t[] for
 *    bool and integer dtypes (already wrapped to the dtype), double[] for floating
 *    dtypes (already rounded to the dtype).  The one exception is the result of a
 *    `scalar` node: it keeps the literal as written, because a weak scalar converts
 *    straight from the literal to its consumer's common dtype (docs/OPS.md).  Every
 *    kernel therefore reads its operands through load_f()/load_i(), which convert
 *    (and so round) explicitly to the dtype the kernel computes in.
 *  - A node result that is a fusion output whose view asks for float64 (int64) while
 *    the value's dtype is a narrower float (integer or bool) also keeps the value
 *    before its final rounding (wrapping) in a second "raw" buffer; the output is
 *    written from it.  Every other output is written from the final buffer,
 *    converted to the view's dtype.
 *  - Floating sums (cumsum, sum, mean) are exact: a fixed-point superaccumulator
 *    spanning the whole double range, rounded once per output straight to the result
 *    format (never through an intermediate format).
 *  - Run-time errors (integer division by zero) and allocation failures return a
 *    status before any output is written; the caller's buffers stay untouched.
 *  - Every index derived from attributes is checked against the buffers it reads, so
 *    a malformed node gives an error, never an out-of-bounds access.
 */
#include "sf.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------ */
/* Value buffers                                                                   */
/* ------------------------------------------------------------------------------ */

typedef struct rbuf {
    scanfuse_dtype dt;
    int ndim;
    int64_t shape[SF_MAX_DIMS];
    int64_t n;             /* element count */
    bool isf;              /* float dtype: double storage */
    double *f;             /* final values (float dtypes) */
    int64_t *i;            /* final values (bool and integer dtypes) */
    double *fr;            /* raw values before the final rounding, or NULL */
    int64_t *ir;           /* raw values before the final wrapping, or NULL */
} rbuf;

typedef struct rctx {
    const scanfuse_fusion *fu;
    rbuf *v; /* one per value of fu */
    char *msg;
    size_t msglen;
} rctx;

static bool buf_ready(const rbuf *b) { return b->isf ? b->f != NULL : b->i != NULL; }

static void buf_free(rbuf *b) {
    free(b->f);
    free(b->i);
    free(b->fr);
    free(b->ir);
    b->f = b->fr = NULL;
    b->i = b->ir = NULL;
}

static void *alloc_elems(int64_t n, size_t size) {
    if (n < 0 || (uint64_t)n > SIZE_MAX / size) return NULL;
    return sf_malloc((size_t)n * size);
}

/* Allocates the buffers of value vid (and its raw buffer when asked). */
static scanfuse_status buf_alloc(rctx *c, int32_t vid, bool want_raw) {
    const sf_value *sv = &c->fu->values[vid];
    rbuf *b = &c->v[vid];
    if (!sf_dtype_valid(sv->dtype) || sv->ndim < 0 || sv->ndim > SF_MAX_DIMS) {
        sf_msg(c->msg, c->msglen, "reference: value %d has an invalid dtype or rank", (int)vid);
        return SCANFUSE_ERROR_ARGUMENT;
    }
    buf_free(b);
    b->dt = sv->dtype;
    b->ndim = sv->ndim;
    b->n = 1;
    for (int d = 0; d < sv->ndim; d++) {
        b->shape[d] = sv->shape[d];
        if (sv->shape[d] < 0 || sf_mul_overflow(b->n, sv->shape[d], &b->n)) {
            sf_msg(c->msg, c->msglen, "reference: value %d has an invalid shape", (int)vid);
            return SCANFUSE_ERROR_MEMORY;
        }
    }
    b->isf = sf_dtype_is_float(b->dt);
    bool ok;
    if (b->isf) {
        b->f = alloc_elems(b->n, sizeof(double));
        if (want_raw) b->fr = alloc_elems(b->n, sizeof(double));
        ok = b->f && (!want_raw || b->fr);
    } else {
        b->i = alloc_elems(b->n, sizeof(int64_t));
        if (want_raw) b->ir = alloc_elems(b->n, sizeof(int64_t));
        ok = b->i && (!want_raw || b->ir);
    }
    if (!ok) {
        buf_free(b);
        sf_msg(c->msg, c->msglen, "reference: out of memory for a %s value of %lld elements",
               scanfuse_dtype_name(b->dt), (long long)b->n);
        return SCANFUSE_ERROR_MEMORY;
    }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Numbers and conversions                                                         */
/* ------------------------------------------------------------------------------ */

/* uint64 -> int64 two's complement, without implementation-defined conversions. */
static int64_t u2i(uint64_t u) {
    if (u <= (uint64_t)INT64_MAX) return (int64_t)u;
    return -(int64_t)(~u) - 1;
}

typedef struct fmt {
    int p, emin, emax; /* significant bits, min normal exponent, max exponent */
} fmt;

static fmt fmt_of(scanfuse_dtype dt) {
    fmt r;
    switch (dt) {
    case SCANFUSE_FLOAT16: r.p = 11; r.emin = -14; r.emax = 15; break;
    case SCANFUSE_BFLOAT16: r.p = 8; r.emin = -126; r.emax = 127; break;
    case SCANFUSE_FLOAT32: r.p = 24; r.emin = -126; r.emax = 127; break;
    default: r.p = 53; r.emin = -1022; r.emax = 1023; break;
    }
    return r;
}

/* Rounds v to a binary format with p bits, min normal exponent emin (subnormals
 * below), max exponent emax (overflow gives infinity); round to nearest even. */
static double round_p(double v, int p, int emin, int emax) {
    if (isnan(v) || isinf(v) || v == 0.0) return v;
    double a = fabs(v);
    int e = ilogb(a);
    if (e < emin) e = emin;
    double quantum = ldexp(1.0, e - (p - 1));
    double r = nearbyint(a / quantum) * quantum;
    if (r > ldexp(2.0 - ldexp(1.0, 1 - p), emax)) r = INFINITY;
    return v < 0 ? -r : r;
}

/* An int64 converted to a float dtype, rounded once (no detour through double for
 * magnitudes above 2^53). */
static double int_to_float(int64_t v, scanfuse_dtype dt) {
    const int64_t lim = (int64_t)1 << 53;
    if (v >= -lim && v <= lim) return sf_round_to((double)v, dt);
    uint64_t u = v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
    int h = 63;
    while (!((u >> h) & 1u)) h--;
    int sh = h - (fmt_of(dt).p - 1); /* >= 1 since h >= 53 */
    uint64_t q = u >> sh, rem = u & ((UINT64_C(1) << sh) - 1), half = UINT64_C(1) << (sh - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    double r = sf_round_to(ldexp((double)q, sh), dt); /* exact; overflow -> inf */
    return v < 0 ? -r : r;
}

/* Element k of b converted to the float dtype dt. */
static double load_f(const rbuf *b, int64_t k, scanfuse_dtype dt) {
    return b->isf ? sf_round_to(b->f[k], dt) : int_to_float(b->i[k], dt);
}

/* Element k of b converted to the bool/integer dtype dt. */
static int64_t load_i(const rbuf *b, int64_t k, scanfuse_dtype dt) {
    return b->isf ? sf_f64_to_int(b->f[k], dt) : sf_wrap_int(b->i[k], dt);
}

static bool load_truth(const rbuf *b, int64_t k) {
    return b->isf ? b->f[k] != 0.0 : b->i[k] != 0;
}

/* Result writers: the raw value goes to the raw buffer (if any), the value rounded or
 * wrapped to the buffer's dtype to the final buffer. */
static void put_f2(rbuf *b, int64_t k, double raw, double fin) {
    b->f[k] = fin;
    if (b->fr) b->fr[k] = raw;
}
static void put_f(rbuf *b, int64_t k, double raw) { put_f2(b, k, raw, sf_round_to(raw, b->dt)); }
static void put_i(rbuf *b, int64_t k, int64_t raw) {
    b->i[k] = sf_wrap_int(raw, b->dt);
    if (b->ir) b->ir[k] = raw;
}

/* Writes a value computed in double (float kernels) or int64 to b, whatever b's
 * category. */
static void put_any_f(rbuf *b, int64_t k, double raw) {
    if (b->isf) put_f(b, k, raw);
    else put_i(b, k, sf_f64_to_int(raw, b->dt));
}

static double num_f(sf_num n) { return n.kind == SF_NUM_FLOAT ? n.f : (double)n.i; }
static int64_t num_i(sf_num n) {
    return n.kind == SF_NUM_FLOAT ? sf_f64_to_int(n.f, SCANFUSE_INT64) : n.i;
}

/* A number attribute stored into b (full, pad): converted to b's dtype. */
static void put_num(rbuf *b, int64_t k, sf_num n) {
    if (b->isf) put_f(b, k, num_f(n));
    else if (n.kind == SF_NUM_FLOAT) put_i(b, k, sf_f64_to_int(n.f, b->dt));
    else put_i(b, k, n.i);
}

/* Copies element j of src (of the same dtype as dst) to element k of dst. */
static void copy_el(rbuf *dst, int64_t k, const rbuf *src, int64_t j) {
    if (dst->isf) put_f(dst, k, load_f(src, j, dst->dt));
    else put_i(dst, k, load_i(src, j, dst->dt));
}

static void put_zero(rbuf *b, int64_t k) {
    if (b->isf) put_f(b, k, 0.0);
    else put_i(b, k, 0);
}

/*
 * Rounds the double-double hi + lo once to dt: the sum rounded to double is nudged one
 * double ulp toward the tail when it is exactly a tie of dt, which makes the rounding
 * exact for every format narrower than double.
 */
static double round_dd(double hi, double lo, scanfuse_dtype dt) {
    double s = hi + lo;
    if (!isfinite(s)) return sf_round_to(s, dt);
    double z = s - hi, e = (hi - (s - z)) + (lo - z);
    if (dt == SCANFUSE_FLOAT64 || e == 0.0) return sf_round_to(s, dt);
    fmt fm = fmt_of(dt);
    if (round_p(s, fm.p, fm.emin, fm.emax) != s && round_p(s, fm.p + 1, fm.emin, 4000) == s)
        s = nextafter(s, e > 0 ? INFINITY : -INFINITY);
    return sf_round_to(s, dt);
}

/* ------------------------------------------------------------------------------ */
/* Exact summation: a fixed-point superaccumulator                                 */
/* ------------------------------------------------------------------------------ */

/*
 * The sum is an integer multiple of 2^-1074 held in 32-bit limbs (stored in int64 so
 * that additions can be carried lazily); bit position b stands for 2^(b - 1074).  The
 * largest finite double has its top bit at position 2097; 70 limbs leave 140 bits of
 * headroom.  Infinities and NaNs are counted separately.  Only limbs [lo, hi] have
 * been touched: carrying and rounding look at those, not at all 70 (the MoE example's
 * --check rounded 10 million sums of one element each, and walking every limb and
 * every kept bit took most of its time).
 */
#define ACC_LIMBS 70
#define ACC_FLUSH (1 << 20) /* carries are propagated at least this often */

typedef struct sacc {
    int64_t limb[ACC_LIMBS];
    int lo, hi; /* limbs outside [lo, hi] are zero (lo > hi: all are) */
    int pending;
    bool nan, pinf, ninf;
} sacc;

static void acc_init(sacc *a) {
    memset(a, 0, sizeof *a);
    a->lo = ACC_LIMBS;
    a->hi = -1;
}

/* Carries limbs lo .. *hi - 1 into the next, each left in [0, 2^32), then moves up
 * while the top one is outside [-2^31, 2^31) (raising *hi; limbs above *hi are taken
 * as zero, not read), so the value is the top limb, signed, times 2^(32 *hi) plus the
 * nonnegative limbs below it.  A negative value keeps a small negative top limb
 * instead of carrying -1 up to limb 69. */
static void acc_carry(int64_t *t, int lo, int *hi) {
    int k = lo;
    for (;; k++) {
        int64_t v = t[k];
        bool top = k >= *hi;
        if (top && (v >= -(INT64_C(1) << 31) && v < (INT64_C(1) << 31))) break;
        if (k == ACC_LIMBS - 1) break; /* far past double's range: acc_round says so */
        int64_t low = (int64_t)((uint64_t)v & 0xFFFFFFFFu), carry = (v - low) / 4294967296LL;
        t[k] = low;
        if (top) { /* a new top limb: above *hi t holds no limbs (acc_round copies [lo, hi]) */
            t[k + 1] = carry;
            *hi = k + 1;
        } else {
            t[k + 1] += carry;
        }
    }
}

static void acc_add(sacc *a, double x) {
    if (isnan(x)) {
        a->nan = true;
        return;
    }
    if (isinf(x)) {
        if (x > 0) a->pinf = true;
        else a->ninf = true;
        return;
    }
    if (x == 0.0) return;
    int e;
    double m = frexp(fabs(x), &e); /* |x| = m * 2^e, 0.5 <= m < 1 */
    uint64_t mant = (uint64_t)ldexp(m, 53);
    int pos = e - 53 + 1074;
    if (pos < 0) { /* subnormal: the low bits are zero */
        mant >>= -pos;
        pos = 0;
    }
    int L = pos / 32, s = pos % 32;
    uint64_t c0 = (mant << s) & 0xFFFFFFFFu;
    uint64_t rest = s ? mant >> (32 - s) : mant >> 32;
    int64_t c1 = (int64_t)(rest & 0xFFFFFFFFu), c2 = (int64_t)(rest >> 32);
    if (x > 0) {
        a->limb[L] += (int64_t)c0;
        a->limb[L + 1] += c1;
        a->limb[L + 2] += c2;
    } else {
        a->limb[L] -= (int64_t)c0;
        a->limb[L + 1] -= c1;
        a->limb[L + 2] -= c2;
    }
    if (L < a->lo) a->lo = L;
    if (L + 2 > a->hi) a->hi = L + 2;
    if (++a->pending >= ACC_FLUSH) {
        acc_carry(a->limb, a->lo, &a->hi);
        a->pending = 0;
    }
}

/* Limb k of a carried magnitude, zero outside [lo, hi]. */
static uint64_t acc_limb(const int64_t *t, int lo, int hi, int k) {
    return k >= lo && k <= hi ? (uint64_t)t[k] : 0;
}

/* Bits b .. b + 63 of a carried magnitude (b >= 0). */
static uint64_t acc_bits64(const int64_t *t, int lo, int hi, int b) {
    int k = b / 32, s = b % 32;
    uint64_t w = acc_limb(t, lo, hi, k) | acc_limb(t, lo, hi, k + 1) << 32;
    return s ? w >> s | acc_limb(t, lo, hi, k + 2) << (64 - s) : w;
}

/* The exact sum rounded once to the float dtype dt. */
static double acc_round(const sacc *a, scanfuse_dtype dt) {
    if (a->nan || (a->pinf && a->ninf)) return NAN;
    if (a->pinf) return INFINITY;
    if (a->ninf) return -INFINITY;
    if (a->lo > a->hi) return 0.0; /* +0, as PyTorch's sums start from +0 */
    int64_t t[ACC_LIMBS];
    int lo = a->lo, hi = a->hi;
    memcpy(t + lo, a->limb + lo, (size_t)(hi - lo + 1) * sizeof *t);
    acc_carry(t, lo, &hi);
    bool neg = t[hi] < 0;
    if (neg) {
        for (int k = lo; k <= hi; k++) t[k] = -t[k];
        acc_carry(t, lo, &hi);
    }
    while (hi >= lo && t[hi] == 0) hi--;
    if (hi < lo) return 0.0;
    if (t[hi] >> 32) return neg ? -INFINITY : INFINITY; /* limb 69 past 2^32: >= 2^1166 */
    int P = 32 * hi + (63 - __builtin_clzll((unsigned long long)t[hi])); /* the top bit */
    fmt fm = fmt_of(dt);
    int qmin = fm.emin - (fm.p - 1) + 1074;
    int q = P - (fm.p - 1);
    if (q < qmin) q = qmin;
    double r;
    if (q <= 0) { /* every bit kept: the value is below 2^53 * 2^-1074 */
        r = ldexp((double)acc_bits64(t, lo, hi, 0), -1074);
    } else {
        /* the kept bits q .. P (at most 53), the rounding bit q - 1, and whether any
         * bit below it is set */
        int w = P - q + 1;
        uint64_t K = w > 0 ? acc_bits64(t, lo, hi, q) & ((UINT64_C(1) << w) - 1) : 0;
        int rb = q - 1 <= P ? (int)(acc_bits64(t, lo, hi, q - 1) & 1u) : 0;
        int below = q - 1 < P + 1 ? q - 1 : P + 1; /* bits at positions < below */
        bool sticky = false;
        for (int k = lo; k < below / 32 && !sticky; k++) sticky = t[k] != 0;
        if (!sticky && below % 32)
            sticky = (acc_limb(t, lo, hi, below / 32) & ((UINT64_C(1) << (below % 32)) - 1)) != 0;
        if (rb && (sticky || (K & 1u))) K++;
        r = ldexp((double)K, q - 1074);
        if (r > ldexp(2.0 - ldexp(1.0, 1 - fm.p), fm.emax)) r = INFINITY;
    }
    return neg ? -r : r;
}

/* Writes the sum to element k of y: final rounded to y's dtype, raw to float64. */
static void put_acc(rbuf *y, int64_t k, const sacc *a) {
    double fin = acc_round(a, y->dt);
    double raw = (y->fr && y->dt != SCANFUSE_FLOAT64) ? acc_round(a, SCANFUSE_FLOAT64) : fin;
    put_f2(y, k, raw, fin);
}

/* mean = exact sum / count, through a double-double quotient rounded once. */
static void put_mean(rbuf *y, int64_t k, const sacc *a, int64_t count) {
    if (count <= 0) {
        put_f(y, k, NAN);
        return;
    }
    double nd = (double)count;
    double hi = acc_round(a, SCANFUSE_FLOAT64);
    if (!isfinite(hi)) {
        put_f(y, k, hi / nd);
        return;
    }
    sacc r = *a;
    acc_add(&r, -hi);
    double lo = acc_round(&r, SCANFUSE_FLOAT64);
    double q1 = hi / nd;
    double rem = fma(-q1, nd, hi);
    double q2 = (rem + lo) / nd;
    put_f2(y, k, q1 + q2, round_dd(q1, q2, y->dt));
}

/* ------------------------------------------------------------------------------ */
/* Index helpers                                                                   */
/* ------------------------------------------------------------------------------ */

static void contig_strides(int nd, const int64_t *shape, int64_t *st) {
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

/* Strides of b broadcast to an nd-d shape (aligned right; broadcast dims get 0).
 * False if b does not broadcast to it. */
static bool bcast_strides(const rbuf *b, int nd, const int64_t *shape, int64_t *st) {
    if (b->ndim > nd) return false;
    int64_t cs[SF_MAX_DIMS];
    contig_strides(b->ndim, b->shape, cs);
    for (int d = 0; d < nd; d++) {
        int bd = d - (nd - b->ndim);
        if (bd < 0) {
            st[d] = 0;
        } else if (b->shape[bd] == shape[d]) {
            st[d] = b->shape[bd] == 1 ? 0 : cs[bd];
        } else if (b->shape[bd] == 1) {
            st[d] = 0;
        } else {
            return false;
        }
    }
    return true;
}

/* Advances a row-major index; false after the last one. */
static bool next_index(int nd, const int64_t *shape, int64_t *idx) {
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

static int64_t dot_off(int nd, const int64_t *idx, const int64_t *st) {
    int64_t o = 0;
    for (int d = 0; d < nd; d++) o += idx[d] * st[d];
    return o;
}

static bool same_shape(const rbuf *a, const rbuf *b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

static scanfuse_status bad_node(rctx *c, const sf_node *n, const char *what) {
    sf_msg(c->msg, c->msglen, "%s: reference: %s", sf_op_table[n->op].name, what);
    return SCANFUSE_ERROR_SHAPE;
}

/* ------------------------------------------------------------------------------ */
/* Pointwise ops                                                                   */
/* ------------------------------------------------------------------------------ */

/* PyTorch's div_floor for floating values. */
static double floor_div_f(double a, double b) {
    if (b == 0.0) return a / b;
    double mod = fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
    double fd;
    if (div != 0.0) {
        fd = floor(div);
        if (div - fd > 0.5) fd += 1.0;
    } else {
        fd = copysign(0.0, a / b);
    }
    return fd;
}

/* Integer power with wrapping; negative exponents per docs/OPS.md. */
static int64_t ipow(int64_t a, int64_t b) {
    if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b & 1) ? -1 : 1;
        return 0;
    }
    uint64_t r = 1, base = (uint64_t)a;
    while (b) {
        if (b & 1) r *= base;
        base *= base;
        b >>= 1;
    }
    return u2i(r);
}

/* One element in floating arithmetic (operands already in the common dtype). */
static scanfuse_status pw_float(rctx *c, const sf_node *n, double a, double b, rbuf *y,
                                int64_t k) {
    switch (n->op) {
    case SF_OP_neg: put_any_f(y, k, -a); break;
    case SF_OP_abs: put_any_f(y, k, fabs(a)); break;
    case SF_OP_exp: put_any_f(y, k, exp(a)); break;
    case SF_OP_log: put_any_f(y, k, log(a)); break;
    case SF_OP_log1p: put_any_f(y, k, log1p(a)); break;
    case SF_OP_expm1: put_any_f(y, k, expm1(a)); break;
    case SF_OP_sqrt: put_any_f(y, k, sqrt(a)); break;
    case SF_OP_rsqrt: put_any_f(y, k, 1.0 / sqrt(a)); break;
    case SF_OP_reciprocal: put_any_f(y, k, 1.0 / a); break;
    case SF_OP_sigmoid: put_any_f(y, k, 1.0 / (1.0 + exp(-a))); break;
    case SF_OP_tanh: put_any_f(y, k, tanh(a)); break;
    case SF_OP_silu: put_any_f(y, k, a / (1.0 + exp(-a))); break;
    case SF_OP_relu: put_any_f(y, k, isnan(a) ? a : (a > 0.0 ? a : 0.0)); break;
    case SF_OP_floor: put_any_f(y, k, floor(a)); break;
    case SF_OP_ceil: put_any_f(y, k, ceil(a)); break;
    case SF_OP_logical_not: put_i(y, k, a == 0.0); break;
    case SF_OP_isnan: put_i(y, k, isnan(a) != 0); break;
    case SF_OP_add: put_any_f(y, k, a + b); break;
    case SF_OP_sub: put_any_f(y, k, a - b); break;
    case SF_OP_mul: put_any_f(y, k, a * b); break;
    case SF_OP_div: put_any_f(y, k, a / b); break;
    case SF_OP_pow: put_any_f(y, k, pow(a, b)); break;
    case SF_OP_maximum:
        put_any_f(y, k, (isnan(a) || isnan(b)) ? (isnan(a) ? a : b) : (a < b ? b : a));
        break;
    case SF_OP_minimum:
        put_any_f(y, k, (isnan(a) || isnan(b)) ? (isnan(a) ? a : b) : (b < a ? b : a));
        break;
    case SF_OP_remainder: {
        double r = fmod(a, b);
        if (r != 0.0 && ((r < 0) != (b < 0))) r += b;
        put_any_f(y, k, r);
        break;
    }
    case SF_OP_floor_divide: put_any_f(y, k, floor_div_f(a, b)); break;
    case SF_OP_eq: put_i(y, k, a == b); break;
    case SF_OP_ne: put_i(y, k, a != b); break;
    case SF_OP_lt: put_i(y, k, a < b); break;
    case SF_OP_le: put_i(y, k, a <= b); break;
    case SF_OP_gt: put_i(y, k, a > b); break;
    case SF_OP_ge: put_i(y, k, a >= b); break;
    case SF_OP_logical_and: put_i(y, k, a != 0.0 && b != 0.0); break;
    case SF_OP_logical_or: put_i(y, k, a != 0.0 || b != 0.0); break;
    default: return bad_node(c, n, "not a floating pointwise op");
    }
    return SCANFUSE_OK;
}

/* One element in int64 arithmetic (operands already in the common dtype). */
static scanfuse_status pw_int(rctx *c, const sf_node *n, bool isbool, int64_t a, int64_t b,
                              rbuf *y, int64_t k) {
    const char *name = sf_op_table[n->op].name;
    switch (n->op) {
    case SF_OP_neg: put_i(y, k, u2i(0u - (uint64_t)a)); break;
    case SF_OP_abs: put_i(y, k, a < 0 ? u2i(0u - (uint64_t)a) : a); break;
    case SF_OP_relu: put_i(y, k, a > 0 ? a : 0); break;
    case SF_OP_floor:
    case SF_OP_ceil: put_i(y, k, a); break;
    case SF_OP_logical_not: put_i(y, k, a == 0); break;
    case SF_OP_isnan: put_i(y, k, 0); break;
    case SF_OP_add: put_i(y, k, isbool ? (a || b) : u2i((uint64_t)a + (uint64_t)b)); break;
    case SF_OP_sub: put_i(y, k, u2i((uint64_t)a - (uint64_t)b)); break;
    case SF_OP_mul: put_i(y, k, isbool ? (a && b) : u2i((uint64_t)a * (uint64_t)b)); break;
    case SF_OP_pow: put_i(y, k, ipow(a, b)); break;
    case SF_OP_maximum: put_i(y, k, a < b ? b : a); break;
    case SF_OP_minimum: put_i(y, k, b < a ? b : a); break;
    case SF_OP_remainder: {
        if (b == 0) {
            sf_msg(c->msg, c->msglen, "%s: integer division by zero", name);
            return SCANFUSE_ERROR_VALUE;
        }
        int64_t r = b == -1 ? 0 : a % b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        put_i(y, k, r);
        break;
    }
    case SF_OP_floor_divide: {
        if (b == 0) {
            sf_msg(c->msg, c->msglen, "%s: integer division by zero", name);
            return SCANFUSE_ERROR_VALUE;
        }
        int64_t q;
        if (b == -1) {
            q = u2i(0u - (uint64_t)a); /* INT64_MIN // -1 wraps */
        } else {
            q = a / b;
            if (a % b != 0 && ((a < 0) != (b < 0))) q--;
        }
        put_i(y, k, q);
        break;
    }
    case SF_OP_eq: put_i(y, k, a == b); break;
    case SF_OP_ne: put_i(y, k, a != b); break;
    case SF_OP_lt: put_i(y, k, a < b); break;
    case SF_OP_le: put_i(y, k, a <= b); break;
    case SF_OP_gt: put_i(y, k, a > b); break;
    case SF_OP_ge: put_i(y, k, a >= b); break;
    case SF_OP_logical_and: put_i(y, k, a != 0 && b != 0); break;
    case SF_OP_logical_or: put_i(y, k, a != 0 || b != 0); break;
    default:
        /* Ops whose result is floating never compute in an integer common dtype. */
        return bad_node(c, n, "no integer form of this op");
    }
    return SCANFUSE_OK;
}

/* Every pointwise op except cast: operands broadcast to the result shape and are
 * converted to the common dtype; then one element at a time. */
static scanfuse_status k_pointwise(rctx *c, const sf_node *n) {
    rbuf *y = &c->v[n->out[0]];
    const rbuf *x[SF_MAX_IN];
    int64_t st[SF_MAX_IN][SF_MAX_DIMS];
    for (int j = 0; j < n->nin; j++) {
        x[j] = &c->v[n->in[j]];
        if (!bcast_strides(x[j], y->ndim, y->shape, st[j]))
            return bad_node(c, n, "operand does not broadcast to the result shape");
    }
    scanfuse_dtype cdt = y->dt;
    if (sf_op_table[n->op].rule == SF_RULE_BOOL) {
        if (n->nin == 1) {
            cdt = x[0]->dt;
        } else {
            cdt = sf_result_type(c->fu, n->in, n->nin);
            if (!sf_dtype_valid(cdt)) cdt = scanfuse_dtype_promote(x[0]->dt, x[1]->dt);
        }
    }
    bool fl = sf_dtype_is_float(cdt);
    int64_t idx[SF_MAX_DIMS] = {0};
    for (int64_t k = 0; k < y->n; k++) {
        int64_t o[SF_MAX_IN] = {0, 0, 0};
        for (int j = 0; j < n->nin; j++) o[j] = dot_off(y->ndim, idx, st[j]);
        scanfuse_status s = SCANFUSE_OK;
        if (n->op == SF_OP_where) {
            bool t = load_truth(x[0], o[0]);
            const rbuf *src = t ? x[1] : x[2];
            int64_t so = t ? o[1] : o[2];
            if (y->isf) put_f(y, k, load_f(src, so, y->dt));
            else put_i(y, k, load_i(src, so, y->dt));
        } else if (fl) {
            double a = load_f(x[0], o[0], cdt);
            double b = n->nin > 1 ? load_f(x[1], o[1], cdt) : 0.0;
            s = pw_float(c, n, a, b, y, k);
        } else {
            int64_t a = load_i(x[0], o[0], cdt);
            int64_t b = n->nin > 1 ? load_i(x[1], o[1], cdt) : 0;
            s = pw_int(c, n, cdt == SCANFUSE_BOOL, a, b, y, k);
        }
        if (s != SCANFUSE_OK) return s;
        next_index(y->ndim, y->shape, idx);
    }
    return SCANFUSE_OK;
}

static scanfuse_status k_cast(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]];
    rbuf *y = &c->v[n->out[0]];
    if (x->n != y->n) return bad_node(c, n, "input and result sizes differ");
    for (int64_t k = 0; k < y->n; k++) {
        if (y->isf) {
            double raw = x->isf ? x->f[k] : (double)x->i[k];
            put_f2(y, k, raw, load_f(x, k, y->dt));
        } else if (x->isf) {
            put_i(y, k, sf_f64_to_int(x->f[k], y->dt));
        } else {
            put_i(y, k, x->i[k]); /* raw: the source; final: wrapped */
        }
    }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Scans                                                                           */
/* ------------------------------------------------------------------------------ */

static double log_add_exp(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) ? a : b;
    if (a == b && isinf(a)) return a;
    double mx = a > b ? a : b, mn = a > b ? b : a;
    return mx + log1p(exp(mn - mx));
}

typedef struct scan_state {
    sacc acc;
    double fv;
    int64_t fe; /* cumprod of floats: the product is fv * 2^fe (sf_prodx) */
    int64_t iv;
    int64_t idx;
} scan_state;

static void scan_reset(const sf_node *n, const rbuf *y, scan_state *s) {
    s->idx = -1;
    switch (n->op) {
    case SF_OP_cumsum:
        acc_init(&s->acc);
        s->iv = 0;
        break;
    case SF_OP_cumprod:
        s->fv = 1.0;
        s->fe = 0;
        s->iv = 1;
        break;
    case SF_OP_cummax:
        s->fv = -INFINITY;
        s->iv = sf_int_min(y->dt);
        break;
    case SF_OP_cummin:
        s->fv = INFINITY;
        s->iv = sf_int_max(y->dt);
        break;
    default: /* logcumsumexp */
        s->fv = -INFINITY;
        break;
    }
}

/* Folds element off (original position kk along the dim) of x into the state. */
static void scan_update(const sf_node *n, const rbuf *x, const rbuf *y, scan_state *s,
                        int64_t off, int64_t kk) {
    scanfuse_dtype dt = y->dt;
    switch (n->op) {
    case SF_OP_cumsum:
        if (y->isf) acc_add(&s->acc, load_f(x, off, dt));
        else s->iv = u2i((uint64_t)s->iv + (uint64_t)load_i(x, off, dt));
        break;
    case SF_OP_cumprod:
        if (y->isf) {
            sf_prodx p = sf_prodx_mul((sf_prodx){s->fv, s->fe}, sf_prodx_of(load_f(x, off, dt)));
            s->fv = p.m;
            s->fe = p.e;
        } else s->iv = u2i((uint64_t)s->iv * (uint64_t)load_i(x, off, dt));
        break;
    case SF_OP_cummax:
    case SF_OP_cummin: {
        bool mx = n->op == SF_OP_cummax;
        if (y->isf) {
            double v = load_f(x, off, dt);
            if (isnan(v) || (!isnan(s->fv) && (mx ? v >= s->fv : v <= s->fv))) {
                s->fv = v;
                s->idx = kk;
            }
        } else {
            int64_t v = load_i(x, off, dt);
            if (mx ? v >= s->iv : v <= s->iv) {
                s->iv = v;
                s->idx = kk;
            }
        }
        break;
    }
    default: /* logcumsumexp */
        s->fv = log_add_exp(s->fv, load_f(x, off, dt));
        break;
    }
}

static void scan_emit(const sf_node *n, rbuf *y, rbuf *yi, const scan_state *s, int64_t off) {
    if (n->op == SF_OP_cumsum && y->isf) put_acc(y, off, &s->acc);
    else if (n->op == SF_OP_cumprod && y->isf) put_f(y, off, sf_prodx_value((sf_prodx){s->fv, s->fe}));
    else if (y->isf) put_f(y, off, s->fv);
    else put_i(y, off, s->iv);
    if (yi) put_i(yi, off, s->idx);
}

static scanfuse_status k_scan(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]];
    rbuf *y = &c->v[n->out[0]];
    rbuf *yi = n->nout > 1 ? &c->v[n->out[1]] : NULL;
    if (!same_shape(x, y) || (yi && !same_shape(x, yi)))
        return bad_node(c, n, "result shapes differ from the input's");
    if (yi && yi->isf) return bad_node(c, n, "indices must be integers");
    int nd = x->ndim;
    int64_t outer = 1, len = 1, inner = 1;
    if (nd > 0) {
        int64_t dim = n->a.dim;
        if (dim < 0 || dim >= nd) return bad_node(c, n, "dim out of range");
        for (int d = 0; d < nd; d++) {
            if (d < dim) outer *= x->shape[d];
            else if (d == dim) len = x->shape[d];
            else inner *= x->shape[d];
        }
    }
    if (x->n == 0) return SCANFUSE_OK;
    bool excl = n->a.exclusive && nd > 0; /* a 0-d input gives a 0-d copy */
    bool rev = n->a.reverse;
    scan_state *s = sf_malloc(sizeof *s);
    if (!s) {
        sf_msg(c->msg, c->msglen, "%s: out of memory", sf_op_table[n->op].name);
        return SCANFUSE_ERROR_MEMORY;
    }
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t q = 0; q < inner; q++) {
            int64_t base = o * len * inner + q;
            scan_reset(n, y, s);
            for (int64_t t = 0; t < len; t++) {
                int64_t kk = rev ? len - 1 - t : t;
                int64_t off = base + kk * inner;
                if (excl) {
                    scan_emit(n, y, yi, s, off);
                    scan_update(n, x, y, s, off, kk);
                } else {
                    scan_update(n, x, y, s, off, kk);
                    scan_emit(n, y, yi, s, off);
                }
            }
        }
    }
    free(s);
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Reductions                                                                      */
/* ------------------------------------------------------------------------------ */

/* The input's dims split into kept dims (iterated for the outputs, in order) and
 * reduced dims (iterated per output, row-major). */
typedef struct redplan {
    int nk, nr;
    int64_t ksz[SF_MAX_DIMS], kst[SF_MAX_DIMS], rsz[SF_MAX_DIMS], rst[SF_MAX_DIMS];
    int64_t nout, nred;
} redplan;

static bool plan_reduce(const rbuf *x, const int64_t *dims, int ndims, redplan *p) {
    bool red[SF_MAX_DIMS] = {false};
    if (ndims < 0 || ndims > SF_MAX_DIMS) return false;
    for (int j = 0; j < ndims; j++) {
        if (dims[j] < 0 || dims[j] >= x->ndim || red[dims[j]]) return false;
        red[dims[j]] = true;
    }
    int64_t cs[SF_MAX_DIMS];
    contig_strides(x->ndim, x->shape, cs);
    p->nk = p->nr = 0;
    p->nout = p->nred = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (red[d]) {
            p->rsz[p->nr] = x->shape[d];
            p->rst[p->nr++] = cs[d];
            p->nred *= x->shape[d];
        } else {
            p->ksz[p->nk] = x->shape[d];
            p->kst[p->nk++] = cs[d];
            p->nout *= x->shape[d];
        }
    }
    return true;
}

static scanfuse_status k_reduce(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]];
    rbuf *y = &c->v[n->out[0]];
    redplan p;
    if (!plan_reduce(x, n->a.list, n->a.nlist, &p)) return bad_node(c, n, "invalid dims");
    if (p.nout != y->n) return bad_node(c, n, "result size does not match the dims");
    if (y->n == 0) return SCANFUSE_OK;
    scanfuse_dtype dt = y->dt;
    sacc *acc = sf_malloc(sizeof *acc);
    if (!acc) {
        sf_msg(c->msg, c->msglen, "%s: out of memory", sf_op_table[n->op].name);
        return SCANFUSE_ERROR_MEMORY;
    }
    bool mx = n->op == SF_OP_max;
    int64_t kidx[SF_MAX_DIMS] = {0};
    for (int64_t o = 0; o < p.nout; o++) {
        int64_t base = dot_off(p.nk, kidx, p.kst);
        int64_t ridx[SF_MAX_DIMS] = {0};
        acc_init(acc);
        double fv = n->op == SF_OP_prod ? 1.0 : mx ? -INFINITY : INFINITY;
        int64_t fe = 0; /* prod of floats: fv * 2^fe (sf_prodx) */
        int64_t iv = n->op == SF_OP_prod ? 1
                     : (n->op == SF_OP_sum || n->op == SF_OP_mean) ? 0
                     : mx ? sf_int_min(dt) : sf_int_max(dt);
        for (int64_t r = 0; r < p.nred; r++) {
            int64_t off = base + dot_off(p.nr, ridx, p.rst);
            switch (n->op) {
            case SF_OP_sum:
            case SF_OP_mean:
                if (y->isf) acc_add(acc, load_f(x, off, dt));
                else iv = u2i((uint64_t)iv + (uint64_t)load_i(x, off, dt));
                break;
            case SF_OP_prod:
                if (y->isf) {
                    sf_prodx pr = sf_prodx_mul((sf_prodx){fv, fe}, sf_prodx_of(load_f(x, off, dt)));
                    fv = pr.m;
                    fe = pr.e;
                } else iv = u2i((uint64_t)iv * (uint64_t)load_i(x, off, dt));
                break;
            default: /* max, min: NaN propagates (the first NaN is kept) */
                if (y->isf) {
                    double v = load_f(x, off, dt);
                    if (isnan(v)) {
                        if (!isnan(fv)) fv = v;
                    } else if (!isnan(fv) && (mx ? v > fv : v < fv)) {
                        fv = v;
                    }
                } else {
                    int64_t v = load_i(x, off, dt);
                    if (mx ? v > iv : v < iv) iv = v;
                }
                break;
            }
            next_index(p.nr, p.rsz, ridx);
        }
        if (n->op == SF_OP_mean) {
            if (y->isf) put_mean(y, o, acc, p.nred);
            else put_i(y, o, p.nred ? iv / p.nred : 0);
        } else if (n->op == SF_OP_sum && y->isf) {
            put_acc(y, o, acc);
        } else if (n->op == SF_OP_prod && y->isf) {
            put_f(y, o, sf_prodx_value((sf_prodx){fv, fe}));
        } else if (y->isf) {
            put_f(y, o, fv);
        } else {
            put_i(y, o, iv);
        }
        next_index(p.nk, p.ksz, kidx);
    }
    free(acc);
    return SCANFUSE_OK;
}

/* argmax/argmin: the first index of the extreme value; a NaN is the extreme (the
 * first NaN wins).  Without a dim the index is into the flattened input. */
static scanfuse_status k_argreduce(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]];
    rbuf *y = &c->v[n->out[0]];
    redplan p;
    int64_t dims[SF_MAX_DIMS];
    int nd = 0;
    if (n->a.has_dim && x->ndim > 0) {
        dims[nd++] = n->a.dim;
    } else {
        for (int d = 0; d < x->ndim; d++) dims[nd++] = d;
    }
    if (!plan_reduce(x, dims, nd, &p)) return bad_node(c, n, "dim out of range");
    if (p.nout != y->n || y->isf) return bad_node(c, n, "result does not match the input");
    bool mx = n->op == SF_OP_argmax;
    int64_t kidx[SF_MAX_DIMS] = {0};
    for (int64_t o = 0; o < p.nout; o++) {
        int64_t base = dot_off(p.nk, kidx, p.kst);
        int64_t ridx[SF_MAX_DIMS] = {0};
        int64_t best_i = 0, bi = 0;
        double bf = 0.0;
        for (int64_t r = 0; r < p.nred; r++) {
            int64_t off = base + dot_off(p.nr, ridx, p.rst);
            if (x->isf) {
                double v = load_f(x, off, x->dt);
                if (r == 0 || (!isnan(bf) && (isnan(v) || (mx ? v > bf : v < bf)))) {
                    bf = v;
                    bi = r;
                }
            } else {
                int64_t v = x->i[off];
                if (r == 0 || (mx ? v > best_i : v < best_i)) {
                    best_i = v;
                    bi = r;
                }
            }
            next_index(p.nr, p.rsz, ridx);
        }
        put_i(y, o, bi);
        next_index(p.nk, p.ksz, kidx);
    }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* matmul                                                                          */
/* ------------------------------------------------------------------------------ */

static scanfuse_status k_matmul(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]], *w = &c->v[n->in[1]];
    rbuf *y = &c->v[n->out[0]];
    int nx = x->ndim, nw = w->ndim;
    if (nx < 1 || nw < 1) return bad_node(c, n, "both operands need at least one dim");
    int64_t K = x->shape[nx - 1];
    int64_t m = nx == 1 ? 1 : x->shape[nx - 2];
    int64_t kw = nw == 1 ? w->shape[0] : w->shape[nw - 2];
    int64_t nn = nw == 1 ? 1 : w->shape[nw - 1];
    if (K != kw) return bad_node(c, n, "inner dimensions differ");
    /* Row and contraction strides inside one matrix. */
    int64_t xs_m = nx == 1 ? 0 : K, xs_k = 1;
    int64_t ws_k = nw == 1 ? 1 : nn, ws_n = nw == 1 ? 0 : 1;
    /* Batch dims broadcast, aligned right. */
    int xb = nx > 2 ? nx - 2 : 0, wb = nw > 2 ? nw - 2 : 0;
    int nb = xb > wb ? xb : wb;
    int64_t bshape[SF_MAX_DIMS], bxs[SF_MAX_DIMS], bws[SF_MAX_DIMS];
    int64_t xcs[SF_MAX_DIMS], wcs[SF_MAX_DIMS];
    contig_strides(nx, x->shape, xcs);
    contig_strides(nw, w->shape, wcs);
    int64_t nbatch = 1;
    for (int d = 0; d < nb; d++) {
        int dx = d - (nb - xb), dw = d - (nb - wb);
        int64_t sx = dx >= 0 ? x->shape[dx] : 1, sw = dw >= 0 ? w->shape[dw] : 1;
        if (sx != sw && sx != 1 && sw != 1) return bad_node(c, n, "batch dims do not broadcast");
        bshape[d] = sx == 1 ? sw : sx;
        bxs[d] = (dx >= 0 && sx != 1) ? xcs[dx] : 0;
        bws[d] = (dw >= 0 && sw != 1) ? wcs[dw] : 0;
        nbatch *= bshape[d];
    }
    int64_t total;
    if (sf_mul_overflow(nbatch, m, &total) || sf_mul_overflow(total, nn, &total) || total != y->n)
        return bad_node(c, n, "result size does not match the operands");
    scanfuse_dtype dt = y->dt;
    int64_t bidx[SF_MAX_DIMS] = {0};
    for (int64_t bt = 0; bt < nbatch; bt++) {
        int64_t xo = dot_off(nb, bidx, bxs), wo = dot_off(nb, bidx, bws);
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < nn; j++) {
                int64_t yo = (bt * m + i) * nn + j;
                if (y->isf) {
                    /* Dot2 (compensated dot product): nearly exact, then rounded once;
                     * with infinities or NaNs the plain double sum is used. */
                    double s = 0.0, cc = 0.0, plain = 0.0;
                    for (int64_t kk = 0; kk < K; kk++) {
                        double a = load_f(x, xo + i * xs_m + kk * xs_k, dt);
                        double b = load_f(w, wo + kk * ws_k + j * ws_n, dt);
                        double pr = a * b, pe = fma(a, b, -pr);
                        double t = s + pr, z = t - s;
                        cc += ((s - (t - z)) + (pr - z)) + pe;
                        s = t;
                        plain += pr;
                    }
                    if (!isfinite(plain) || !isfinite(s + cc)) put_f(y, yo, plain);
                    else put_f2(y, yo, s + cc, round_dd(s, cc, dt));
                } else {
                    uint64_t acc = 0;
                    for (int64_t kk = 0; kk < K; kk++) {
                        uint64_t a = (uint64_t)load_i(x, xo + i * xs_m + kk * xs_k, dt);
                        uint64_t b = (uint64_t)load_i(w, wo + kk * ws_k + j * ws_n, dt);
                        acc += a * b;
                    }
                    put_i(y, yo, u2i(acc));
                }
            }
        }
        next_index(nb, bshape, bidx);
    }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Creation                                                                        */
/* ------------------------------------------------------------------------------ */

static scanfuse_status k_create(rctx *c, const sf_node *n) {
    rbuf *y = &c->v[n->out[0]];
    const sf_attrs *a = &n->a;
    switch (n->op) {
    case SF_OP_scalar:
        if (y->n != 1) return bad_node(c, n, "a scalar has one element");
        if (y->isf) put_f2(y, 0, num_f(a->value), num_f(a->value)); /* the literal, unrounded */
        else put_num(y, 0, a->value);
        break;
    case SF_OP_full:
        for (int64_t k = 0; k < y->n; k++) put_num(y, k, a->value);
        break;
    default: { /* arange, iota: element k is start + k * step */
        sf_num start = a->start, step = a->step;
        if (n->op == SF_OP_iota) {
            memset(&start, 0, sizeof start);
            start.kind = SF_NUM_INT;
            step = start;
            step.i = 1;
            step.f = 1.0;
        }
        if (y->isf) {
            double s0 = num_f(start), st = num_f(step);
            for (int64_t k = 0; k < y->n; k++) put_f(y, k, s0 + (double)k * st);
        } else {
            uint64_t s0 = (uint64_t)num_i(start), st = (uint64_t)num_i(step);
            for (int64_t k = 0; k < y->n; k++) put_i(y, k, u2i(s0 + (uint64_t)k * st));
        }
        break;
    }
    }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Shape ops (results are copies)                                                  */
/* ------------------------------------------------------------------------------ */

static scanfuse_status k_expand(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]];
    rbuf *y = &c->v[n->out[0]];
    int64_t st[SF_MAX_DIMS];
    if (!bcast_strides(x, y->ndim, y->shape, st))
        return bad_node(c, n, "input does not expand to the result shape");
    int64_t idx[SF_MAX_DIMS] = {0};
    for (int64_t k = 0; k < y->n; k++) {
        copy_el(y, k, x, dot_off(y->ndim, idx, st));
        next_index(y->ndim, y->shape, idx);
    }
    return SCANFUSE_OK;
}

static scanfuse_status k_reshape(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]];
    rbuf *y = &c->v[n->out[0]];
    if (x->n != y->n) return bad_node(c, n, "element counts differ");
    for (int64_t k = 0; k < y->n; k++) copy_el(y, k, x, k);
    return SCANFUSE_OK;
}

static scanfuse_status k_permute(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]];
    rbuf *y = &c->v[n->out[0]];
    int nd = x->ndim;
    if (n->a.nlist != nd || y->ndim != nd) return bad_node(c, n, "permutation length differs");
    bool seen[SF_MAX_DIMS] = {false};
    int64_t cs[SF_MAX_DIMS], st[SF_MAX_DIMS];
    contig_strides(nd, x->shape, cs);
    for (int d = 0; d < nd; d++) {
        int64_t pd = n->a.list[d];
        if (pd < 0 || pd >= nd || seen[pd] || y->shape[d] != x->shape[pd])
            return bad_node(c, n, "invalid permutation");
        seen[pd] = true;
        st[d] = cs[pd];
    }
    int64_t idx[SF_MAX_DIMS] = {0};
    for (int64_t k = 0; k < y->n; k++) {
        copy_el(y, k, x, dot_off(nd, idx, st));
        next_index(nd, y->shape, idx);
    }
    return SCANFUSE_OK;
}

static scanfuse_status k_slice(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]];
    rbuf *y = &c->v[n->out[0]];
    int nd = x->ndim;
    int64_t dim = n->a.dim, start = num_i(n->a.start), step = num_i(n->a.step);
    if (y->ndim != nd || dim < 0 || dim >= nd || step < 1 || start < 0)
        return bad_node(c, n, "invalid slice");
    for (int d = 0; d < nd; d++)
        if (d != dim && y->shape[d] != x->shape[d]) return bad_node(c, n, "invalid slice");
    int64_t cnt = y->shape[dim];
    if (cnt > 0 && (start >= x->shape[dim] || (x->shape[dim] - 1 - start) / step < cnt - 1))
        return bad_node(c, n, "slice reaches past the input");
    int64_t cs[SF_MAX_DIMS], idx[SF_MAX_DIMS] = {0};
    contig_strides(nd, x->shape, cs);
    for (int64_t k = 0; k < y->n; k++) {
        int64_t off = 0;
        for (int d = 0; d < nd; d++)
            off += (d == dim ? start + idx[d] * step : idx[d]) * cs[d];
        copy_el(y, k, x, off);
        next_index(nd, y->shape, idx);
    }
    return SCANFUSE_OK;
}

static scanfuse_status k_pad(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]];
    rbuf *y = &c->v[n->out[0]];
    int nd = x->ndim;
    int np = n->a.nlist / 2;
    if (y->ndim != nd || n->a.nlist % 2 != 0 || np > nd) return bad_node(c, n, "invalid pad");
    int64_t left[SF_MAX_DIMS] = {0};
    for (int j = 0; j < np; j++) {
        int d = nd - 1 - j;
        left[d] = n->a.list[2 * j];
        int64_t right = n->a.list[2 * j + 1];
        if (x->shape[d] + left[d] + right != y->shape[d]) return bad_node(c, n, "invalid pad");
    }
    for (int d = 0; d < nd - np; d++)
        if (y->shape[d] != x->shape[d]) return bad_node(c, n, "invalid pad");
    int64_t cs[SF_MAX_DIMS], idx[SF_MAX_DIMS] = {0};
    contig_strides(nd, x->shape, cs);
    for (int64_t k = 0; k < y->n; k++) {
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < nd && inside; d++) {
            int64_t xi = idx[d] - left[d];
            if (xi < 0 || xi >= x->shape[d]) inside = false;
            else off += xi * cs[d];
        }
        if (inside) copy_el(y, k, x, off);
        else put_num(y, k, n->a.value);
        next_index(nd, y->shape, idx);
    }
    return SCANFUSE_OK;
}

static scanfuse_status k_tri(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]];
    rbuf *y = &c->v[n->out[0]];
    int nd = x->ndim;
    if (!same_shape(x, y) || nd < 2) return bad_node(c, n, "needs a tensor of 2 or more dims");
    int64_t diag = n->a.diagonal;
    int64_t idx[SF_MAX_DIMS] = {0};
    for (int64_t k = 0; k < y->n; k++) {
        int64_t dj = idx[nd - 1] - idx[nd - 2];
        bool keep = n->op == SF_OP_triu ? dj >= diag : dj <= diag;
        if (keep) copy_el(y, k, x, k);
        else put_zero(y, k);
        next_index(nd, y->shape, idx);
    }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Index and sort ops                                                              */
/* ------------------------------------------------------------------------------ */

/* A run-time index error: the op, the offending value and what it had to fit. */
static scanfuse_status index_error(rctx *c, const sf_node *n, const char *what, int64_t v,
                                   const char *range) {
    sf_msg(c->msg, c->msglen, "%s: %s %lld is out of range (%s)", sf_op_table[n->op].name, what,
           (long long)v, range);
    return SCANFUSE_ERROR_VALUE;
}

/* Checks 0 <= v < size for an index along dim; writes the message otherwise. */
static scanfuse_status check_index(rctx *c, const sf_node *n, int64_t v, int64_t dim,
                                   int64_t size) {
    if (v >= 0 && v < size) return SCANFUSE_OK;
    char r[96];
    snprintf(r, sizeof r, "dim %lld has size %lld", (long long)dim, (long long)size);
    return index_error(c, n, "index", v, r);
}

/* One key of a sort: its value (float or int), and its position along the dim. */
typedef struct sort_item {
    double f;
    int64_t i;
    int64_t pos;
    bool isf;
} sort_item;

/* Ascending key order: NaN above everything (all NaNs equal), -0.0 equal to +0.0. */
static int key_cmp(const sort_item *a, const sort_item *b) {
    if (a->isf) {
        bool an = isnan(a->f), bn = isnan(b->f);
        if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
        return a->f < b->f ? -1 : a->f > b->f ? 1 : 0;
    }
    return a->i < b->i ? -1 : a->i > b->i ? 1 : 0;
}

/* Equal keys keep their order (lower position first): a total order, so qsort gives
 * exactly the stable sort. */
static int pos_cmp(const sort_item *a, const sort_item *b) {
    return a->pos < b->pos ? -1 : a->pos > b->pos ? 1 : 0;
}
static int sort_asc(const void *p, const void *q) {
    int r = key_cmp(p, q);
    return r ? r : pos_cmp(p, q);
}
static int sort_desc(const void *p, const void *q) {
    int r = key_cmp(q, p);
    return r ? r : pos_cmp(p, q);
}

/* outer x len x inner around dim (0-d: one row of length 1). */
static void split_dim(const rbuf *x, int64_t dim, int64_t *outer, int64_t *len, int64_t *inner) {
    *outer = *len = *inner = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (d < dim) *outer *= x->shape[d];
        else if (d == dim) *len = x->shape[d];
        else *inner *= x->shape[d];
    }
}

/* argsort and topk: each row along dim sorted stably (descending for argsort's
 * descending and topk's largest); topk keeps the first k. */
static scanfuse_status k_sort(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]];
    rbuf *y = &c->v[n->out[0]];
    bool topk = n->op == SF_OP_topk;
    rbuf *yi = topk ? &c->v[n->out[1]] : y;
    int64_t dim = n->a.dim;
    if (x->ndim > 0 && (dim < 0 || dim >= x->ndim)) return bad_node(c, n, "dim out of range");
    int64_t outer, len, inner;
    split_dim(x, dim, &outer, &len, &inner);
    int64_t k = topk ? n->a.count : len;
    if (k < 0 || k > len || yi->isf || yi->n != outer * k * inner ||
        (topk && y->n != yi->n))
        return bad_node(c, n, "result size does not match");
    bool desc = topk ? n->a.largest : n->a.descending;
    if (n->op == SF_OP_argsort && n->a.has_count) {
        if (x->isf) return bad_node(c, n, "range needs integer keys");
        char r[64];
        snprintf(r, sizeof r, "range=%lld", (long long)n->a.count);
        for (int64_t e = 0; e < x->n; e++)
            if (x->i[e] < 0 || x->i[e] >= n->a.count) return index_error(c, n, "key", x->i[e], r);
    }
    if (x->n == 0) return SCANFUSE_OK;
    sort_item *it = alloc_elems(len, sizeof *it);
    if (!it && len > 0) {
        sf_msg(c->msg, c->msglen, "%s: out of memory", sf_op_table[n->op].name);
        return SCANFUSE_ERROR_MEMORY;
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            int64_t base = o * len * inner + q;
            for (int64_t t = 0; t < len; t++) {
                int64_t off = base + t * inner;
                it[t].isf = x->isf;
                it[t].f = x->isf ? x->f[off] : 0.0;
                it[t].i = x->isf ? 0 : x->i[off];
                it[t].pos = t;
            }
            if (len > 1) qsort(it, (size_t)len, sizeof *it, desc ? sort_desc : sort_asc);
            int64_t obase = o * k * inner + q;
            for (int64_t t = 0; t < k; t++) {
                int64_t yo = obase + t * inner;
                put_i(yi, yo, it[t].pos);
                if (topk) copy_el(y, yo, x, base + it[t].pos * inner);
            }
        }
    free(it);
    return SCANFUSE_OK;
}

/* one_hot: out[..., v] = 1 for the id v of each element; bincount: counts of ids. */
static scanfuse_status k_ids(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]];
    rbuf *y = &c->v[n->out[0]];
    int64_t C = n->a.count;
    if (x->isf || y->isf || C < 0) return bad_node(c, n, "invalid ids or result");
    bool oh = n->op == SF_OP_one_hot;
    int64_t want = C;
    if ((oh && sf_mul_overflow(x->n, C, &want)) || y->n != want)
        return bad_node(c, n, "result size does not match");
    char r[64];
    snprintf(r, sizeof r, "%s=%lld", oh ? "num_classes" : "minlength", (long long)C);
    for (int64_t e = 0; e < x->n; e++)
        if (x->i[e] < 0 || x->i[e] >= C) return index_error(c, n, oh ? "class" : "id", x->i[e], r);
    for (int64_t e = 0; e < y->n; e++) put_i(y, e, 0);
    for (int64_t e = 0; e < x->n; e++) {
        int64_t t = oh ? e * C + x->i[e] : x->i[e];
        put_i(y, t, y->i[t] + 1);
    }
    return SCANFUSE_OK;
}

/* gather, take_along_dim, index_select: every result element copies one element of x,
 * found by replacing its coordinate along dim with an index. */
static scanfuse_status k_gather(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]], *ix = &c->v[n->in[1]];
    rbuf *y = &c->v[n->out[0]];
    if (ix->isf || y->dt != x->dt) return bad_node(c, n, "invalid operands");
    if (n->op == SF_OP_take_along_dim && !n->a.has_dim) { /* flattened */
        if (y->n != ix->n) return bad_node(c, n, "result size does not match");
        for (int64_t e = 0; e < y->n; e++) {
            scanfuse_status st = check_index(c, n, ix->i[e], 0, x->n);
            if (st != SCANFUSE_OK) return st;
            copy_el(y, e, x, ix->i[e]);
        }
        return SCANFUSE_OK;
    }
    int nd = x->ndim;
    int64_t dim = n->a.dim;
    if (y->ndim != nd || (nd > 0 && (dim < 0 || dim >= nd))) return bad_node(c, n, "dim out of range");
    int64_t size = nd > 0 ? x->shape[dim] : 1;
    int64_t xs[SF_MAX_DIMS], is[SF_MAX_DIMS];
    contig_strides(nd, x->shape, xs);
    contig_strides(ix->ndim, ix->shape, is);
    /* the coordinates of y must address x (and the index) everywhere but along dim */
    bool sel = n->op == SF_OP_index_select;
    if (!sel && ix->ndim != nd) return bad_node(c, n, "index rank differs");
    for (int d = 0; d < nd; d++) {
        bool ok = d == dim || x->shape[d] == y->shape[d] ||
                  (n->op == SF_OP_gather ? y->shape[d] <= x->shape[d] : x->shape[d] == 1);
        if (!sel) ok = ok && (ix->shape[d] == y->shape[d] || (d != dim && ix->shape[d] == 1));
        if (!ok) return bad_node(c, n, "result shape does not fit the operands");
    }
    int64_t idx[SF_MAX_DIMS] = {0};
    for (int64_t e = 0; e < y->n; e++) {
        int64_t io; /* where the index of this element is */
        if (n->op == SF_OP_index_select) {
            io = nd > 0 ? idx[dim] : 0;
            if (io >= ix->n) return bad_node(c, n, "index too short");
        } else {
            io = 0;
            for (int d = 0; d < nd; d++) io += (ix->shape[d] == 1 ? 0 : idx[d]) * is[d];
        }
        int64_t v = ix->i[io];
        scanfuse_status st = check_index(c, n, v, dim, size);
        if (st != SCANFUSE_OK) return st;
        int64_t xo = 0;
        for (int d = 0; d < nd; d++)
            xo += (d == dim ? v : (x->shape[d] == 1 ? 0 : idx[d])) * xs[d];
        copy_el(y, e, x, xo);
        next_index(nd, y->shape, idx);
    }
    return SCANFUSE_OK;
}

/* scatter: y = x, then for every index element in row-major order its src element goes
 * to y at the index's coordinates with dim replaced by the index (the last write wins),
 * or is added (reduce=add: floats sum in double from x's value, rounded once). */
static scanfuse_status k_scatter(rctx *c, const sf_node *n) {
    const rbuf *x = &c->v[n->in[0]], *ix = &c->v[n->in[1]], *src = &c->v[n->in[2]];
    rbuf *y = &c->v[n->out[0]];
    const sf_value *sv = &c->fu->values[n->in[2]];
    int nd = x->ndim;
    int64_t dim = n->a.dim;
    if (!same_shape(x, y) || ix->isf || ix->ndim != nd || (nd > 0 && (dim < 0 || dim >= nd)))
        return bad_node(c, n, "invalid operands");
    bool scalar = sv->weak;
    if (!scalar && src->ndim != nd) return bad_node(c, n, "src rank differs");
    for (int d = 0; d < nd; d++)
        if ((!scalar && ix->shape[d] > src->shape[d]) || (d != dim && ix->shape[d] > x->shape[d]))
            return bad_node(c, n, "index larger than src or x");
    int64_t size = nd > 0 ? x->shape[dim] : 1;
    int64_t xs[SF_MAX_DIMS], ss[SF_MAX_DIMS] = {0}; /* a scalar src: no strides, all 0 */
    contig_strides(nd, x->shape, xs);
    contig_strides(src->ndim, src->shape, ss);
    bool add = n->a.reduce == SF_REDUCE_ADD;
    double *acc = NULL;
    if (add && y->isf) {
        acc = alloc_elems(y->n, sizeof *acc);
        if (!acc && y->n > 0) {
            sf_msg(c->msg, c->msglen, "scatter: out of memory");
            return SCANFUSE_ERROR_MEMORY;
        }
        for (int64_t e = 0; e < y->n; e++) acc[e] = x->f[e];
    }
    for (int64_t e = 0; e < y->n; e++) copy_el(y, e, x, e);
    int64_t idx[SF_MAX_DIMS] = {0};
    scanfuse_status st = SCANFUSE_OK;
    for (int64_t e = 0; e < ix->n; e++) {
        int64_t v = ix->i[e];
        st = check_index(c, n, v, dim, size);
        if (st != SCANFUSE_OK) break;
        int64_t yo = 0, so = 0;
        for (int d = 0; d < nd; d++) {
            yo += (d == dim ? v : idx[d]) * xs[d];
            so += idx[d] * ss[d];
        }
        if (scalar) so = 0;
        if (!add) copy_el(y, yo, src, so);
        else if (y->isf) acc[yo] += load_f(src, so, y->dt);
        else put_i(y, yo, u2i((uint64_t)y->i[yo] + (uint64_t)load_i(src, so, y->dt)));
        next_index(nd, ix->shape, idx);
    }
    if (st == SCANFUSE_OK && acc)
        for (int64_t e = 0; e < y->n; e++) put_f(y, e, acc[e]);
    free(acc);
    return st;
}

/* ------------------------------------------------------------------------------ */
/* Dispatch                                                                        */
/* ------------------------------------------------------------------------------ */

/* One case per op and no default: an op added to ops.def without a kernel here fails
 * the build (-Wswitch under -Werror). */
static scanfuse_status run_node(rctx *c, const sf_node *n) {
    switch (n->op) {
    case SF_OP_cumsum:
    case SF_OP_cumprod:
    case SF_OP_cummax:
    case SF_OP_cummin:
    case SF_OP_logcumsumexp: return k_scan(c, n);
    case SF_OP_neg:
    case SF_OP_abs:
    case SF_OP_exp:
    case SF_OP_log:
    case SF_OP_log1p:
    case SF_OP_expm1:
    case SF_OP_sqrt:
    case SF_OP_rsqrt:
    case SF_OP_reciprocal:
    case SF_OP_sigmoid:
    case SF_OP_tanh:
    case SF_OP_silu:
    case SF_OP_relu:
    case SF_OP_floor:
    case SF_OP_ceil:
    case SF_OP_logical_not:
    case SF_OP_isnan:
    case SF_OP_add:
    case SF_OP_sub:
    case SF_OP_mul:
    case SF_OP_div:
    case SF_OP_pow:
    case SF_OP_maximum:
    case SF_OP_minimum:
    case SF_OP_remainder:
    case SF_OP_floor_divide:
    case SF_OP_eq:
    case SF_OP_ne:
    case SF_OP_lt:
    case SF_OP_le:
    case SF_OP_gt:
    case SF_OP_ge:
    case SF_OP_logical_and:
    case SF_OP_logical_or:
    case SF_OP_where: return k_pointwise(c, n);
    case SF_OP_cast: return k_cast(c, n);
    case SF_OP_scalar:
    case SF_OP_full:
    case SF_OP_arange:
    case SF_OP_iota: return k_create(c, n);
    case SF_OP_expand: return k_expand(c, n);
    case SF_OP_reshape: return k_reshape(c, n);
    case SF_OP_permute: return k_permute(c, n);
    case SF_OP_slice: return k_slice(c, n);
    case SF_OP_pad: return k_pad(c, n);
    case SF_OP_triu:
    case SF_OP_tril: return k_tri(c, n);
    case SF_OP_sum:
    case SF_OP_prod:
    case SF_OP_max:
    case SF_OP_min:
    case SF_OP_mean: return k_reduce(c, n);
    case SF_OP_argmax:
    case SF_OP_argmin: return k_argreduce(c, n);
    case SF_OP_matmul: return k_matmul(c, n);
    case SF_OP_topk:
    case SF_OP_argsort: return k_sort(c, n);
    case SF_OP_one_hot:
    case SF_OP_bincount: return k_ids(c, n);
    case SF_OP_gather:
    case SF_OP_take_along_dim:
    case SF_OP_index_select: return k_gather(c, n);
    case SF_OP_scatter: return k_scatter(c, n);
    case SF_NUM_OPS: break;
    }
    sf_msg(c->msg, c->msglen, "reference: unknown op %d", (int)n->op);
    return SCANFUSE_ERROR_UNSUPPORTED;
}

static bool op_known(sf_op op) {
    switch (op) {
    case SF_OP_cumsum: case SF_OP_cumprod: case SF_OP_cummax: case SF_OP_cummin:
    case SF_OP_logcumsumexp:
    case SF_OP_neg: case SF_OP_abs: case SF_OP_exp: case SF_OP_log: case SF_OP_log1p:
    case SF_OP_expm1: case SF_OP_sqrt: case SF_OP_rsqrt: case SF_OP_reciprocal:
    case SF_OP_sigmoid: case SF_OP_tanh: case SF_OP_silu: case SF_OP_relu: case SF_OP_floor:
    case SF_OP_ceil: case SF_OP_logical_not: case SF_OP_isnan: case SF_OP_cast:
    case SF_OP_add: case SF_OP_sub: case SF_OP_mul: case SF_OP_div: case SF_OP_pow:
    case SF_OP_maximum: case SF_OP_minimum: case SF_OP_remainder: case SF_OP_floor_divide:
    case SF_OP_eq: case SF_OP_ne: case SF_OP_lt: case SF_OP_le: case SF_OP_gt: case SF_OP_ge:
    case SF_OP_logical_and: case SF_OP_logical_or: case SF_OP_where:
    case SF_OP_scalar: case SF_OP_full: case SF_OP_arange: case SF_OP_iota:
    case SF_OP_expand: case SF_OP_reshape: case SF_OP_permute: case SF_OP_slice:
    case SF_OP_pad: case SF_OP_triu: case SF_OP_tril:
    case SF_OP_sum: case SF_OP_prod: case SF_OP_max: case SF_OP_min: case SF_OP_mean:
    case SF_OP_argmax: case SF_OP_argmin:
    case SF_OP_matmul:
    case SF_OP_topk: case SF_OP_argsort: case SF_OP_one_hot: case SF_OP_bincount:
    case SF_OP_gather: case SF_OP_take_along_dim: case SF_OP_index_select: case SF_OP_scatter:
        return true;
    case SF_NUM_OPS: break;
    }
    return false;
}

/* ------------------------------------------------------------------------------ */
/* The backend                                                                     */
/* ------------------------------------------------------------------------------ */

static scanfuse_status ref_supports(const scanfuse_fusion *f, int node, char *msg,
                                    size_t msglen) {
    if (!f || node < 0 || node >= f->nnodes) {
        sf_msg(msg, msglen, "reference: no node %d", node);
        return SCANFUSE_ERROR_ARGUMENT;
    }
    if (!op_known(f->nodes[node].op)) {
        sf_msg(msg, msglen, "reference: unknown op %d", (int)f->nodes[node].op);
        return SCANFUSE_ERROR_UNSUPPORTED;
    }
    return SCANFUSE_OK;
}

static scanfuse_status ref_compile(sf_program *p, char *msg, size_t msglen) {
    if (!p || !p->fusion) {
        sf_msg(msg, msglen, "reference: no fusion");
        return SCANFUSE_ERROR_STATE;
    }
    for (int k = 0; k < p->fusion->nnodes; k++) {
        scanfuse_status st = ref_supports(p->fusion, k, msg, msglen);
        if (st != SCANFUSE_OK) return st;
    }
    p->backend_state = NULL;
    return SCANFUSE_OK;
}

static void ref_release(sf_program *p) { (void)p; }

/* Does output view v want the raw (unrounded/unwrapped) form of a value of dtype dt? */
static bool wants_raw(scanfuse_dtype dt, scanfuse_dtype vdt) {
    if (dt == vdt) return false;
    if (sf_dtype_is_float(dt)) return vdt == SCANFUSE_FLOAT64;
    return vdt == SCANFUSE_INT64;
}

/* A view must match its value's shape, have a real dtype, non-negative strides and
 * data when it has elements. */
static scanfuse_status check_view(rctx *c, const sf_view *vw, int32_t vid, const char *what,
                                  int i) {
    const sf_value *sv = &c->fu->values[vid];
    bool ok = vw->ndim == sv->ndim && sf_dtype_valid(vw->dtype);
    int64_t n = 1;
    for (int d = 0; ok && d < sv->ndim; d++) {
        ok = vw->shape[d] == sv->shape[d] && vw->strides[d] >= 0;
        n *= sv->shape[d] > 0 ? sv->shape[d] : 0;
    }
    if (ok && n > 0 && !vw->data) ok = false;
    if (!ok) {
        sf_msg(c->msg, c->msglen, "reference: %s %d does not match its declared shape", what, i);
        return SCANFUSE_ERROR_SHAPE;
    }
    return SCANFUSE_OK;
}

static scanfuse_status load_input(rctx *c, const sf_view *vw, int32_t vid) {
    scanfuse_status st = buf_alloc(c, vid, false);
    if (st != SCANFUSE_OK) return st;
    rbuf *b = &c->v[vid];
    bool vf = sf_dtype_is_float(vw->dtype);
    int64_t idx[SF_MAX_DIMS] = {0};
    for (int64_t k = 0; k < b->n; k++) {
        int64_t off = dot_off(vw->ndim, idx, vw->strides);
        if (b->isf) b->f[k] = sf_round_to(sf_load_f64(vw->data, off, vw->dtype), b->dt);
        else if (vf) b->i[k] = sf_f64_to_int(sf_load_f64(vw->data, off, vw->dtype), b->dt);
        else b->i[k] = sf_wrap_int(sf_load_i64(vw->data, off, vw->dtype), b->dt);
        next_index(vw->ndim, vw->shape, idx);
    }
    return SCANFUSE_OK;
}

static void store_output(const rbuf *b, const sf_view *vw) {
    bool raw = wants_raw(b->dt, vw->dtype);
    int64_t idx[SF_MAX_DIMS] = {0};
    for (int64_t k = 0; k < b->n; k++) {
        int64_t off = dot_off(vw->ndim, idx, vw->strides);
        if (b->isf) sf_store_f64(vw->data, off, vw->dtype, (raw && b->fr) ? b->fr[k] : b->f[k]);
        else sf_store_i64(vw->data, off, vw->dtype, (raw && b->ir) ? b->ir[k] : b->i[k]);
        next_index(vw->ndim, vw->shape, idx);
    }
}

/* Checks a node's value ids before it runs. */
static scanfuse_status check_node(rctx *c, const sf_node *n, int k) {
    const scanfuse_fusion *f = c->fu;
    bool ok = n->nin >= 0 && n->nin <= SF_MAX_IN && n->nout >= 1 && n->nout <= SF_MAX_OUT &&
              op_known(n->op) && n->nin == sf_op_table[n->op].nin &&
              n->nout == sf_op_table[n->op].nout;
    for (int j = 0; ok && j < n->nin; j++)
        ok = n->in[j] >= 0 && n->in[j] < f->nvalues && buf_ready(&c->v[n->in[j]]);
    for (int j = 0; ok && j < n->nout; j++) ok = n->out[j] >= 0 && n->out[j] < f->nvalues;
    if (!ok) {
        sf_msg(c->msg, c->msglen, "reference: node %d is malformed", k);
        return SCANFUSE_ERROR_STATE;
    }
    return SCANFUSE_OK;
}

static scanfuse_status ref_run(sf_program *p, const sf_view *inputs, const sf_view *outputs,
                               char *msg, size_t msglen) {
    if (!p || !p->fusion) {
        sf_msg(msg, msglen, "reference: no program");
        return SCANFUSE_ERROR_STATE;
    }
    const scanfuse_fusion *f = p->fusion;
    if ((f->ninputs > 0 && !inputs) || (f->noutputs > 0 && !outputs)) {
        sf_msg(msg, msglen, "reference: missing tensors");
        return SCANFUSE_ERROR_ARGUMENT;
    }
    size_t nv = (size_t)(f->nvalues > 0 ? f->nvalues : 1);
    rctx c;
    c.fu = f;
    c.msg = msg;
    c.msglen = msglen;
    c.v = sf_calloc(nv, sizeof *c.v);
    int *last_use = sf_malloc(nv * sizeof *last_use);
    bool *is_out = sf_calloc(nv, sizeof *is_out);
    bool *raw = sf_calloc(nv, sizeof *raw);
    scanfuse_status st = SCANFUSE_OK;
    if (!c.v || !last_use || !is_out || !raw) {
        sf_msg(msg, msglen, "reference: out of memory");
        st = SCANFUSE_ERROR_MEMORY;
        goto done;
    }
    for (int32_t v = 0; v < f->nvalues; v++) last_use[v] = -1;
    for (int k = 0; k < f->nnodes; k++)
        for (int j = 0; j < f->nodes[k].nin && j < SF_MAX_IN; j++) {
            int32_t v = f->nodes[k].in[j];
            if (v >= 0 && v < f->nvalues) last_use[v] = k;
        }
    for (int i = 0; i < f->noutputs && st == SCANFUSE_OK; i++) {
        int32_t v = f->outputs[i];
        if (v < 0 || v >= f->nvalues) {
            sf_msg(msg, msglen, "reference: output %d names no value", i);
            st = SCANFUSE_ERROR_STATE;
            break;
        }
        is_out[v] = true;
        if (wants_raw(f->values[v].dtype, outputs[i].dtype)) raw[v] = true;
        st = check_view(&c, &outputs[i], v, "output", i);
    }
    for (int i = 0; i < f->ninputs && st == SCANFUSE_OK; i++) {
        int32_t v = f->inputs[i];
        if (v < 0 || v >= f->nvalues) {
            sf_msg(msg, msglen, "reference: input %d names no value", i);
            st = SCANFUSE_ERROR_STATE;
            break;
        }
        st = check_view(&c, &inputs[i], v, "input", i);
        if (st == SCANFUSE_OK) st = load_input(&c, &inputs[i], v);
    }
    for (int k = 0; k < f->nnodes && st == SCANFUSE_OK; k++) {
        const sf_node *n = &f->nodes[k];
        st = check_node(&c, n, k);
        for (int j = 0; j < n->nout && st == SCANFUSE_OK; j++)
            st = buf_alloc(&c, n->out[j], raw[n->out[j]]);
        if (st == SCANFUSE_OK) st = run_node(&c, n);
        if (st != SCANFUSE_OK) break;
        /* Free what no later node reads. */
        for (int j = 0; j < n->nin; j++)
            if (last_use[n->in[j]] == k && !is_out[n->in[j]]) buf_free(&c.v[n->in[j]]);
        for (int j = 0; j < n->nout; j++)
            if (last_use[n->out[j]] < 0 && !is_out[n->out[j]]) buf_free(&c.v[n->out[j]]);
    }
    for (int i = 0; i < f->noutputs && st == SCANFUSE_OK; i++) {
        if (!buf_ready(&c.v[f->outputs[i]])) {
            sf_msg(msg, msglen, "reference: output %d was not computed", i);
            st = SCANFUSE_ERROR_STATE;
        }
    }
    /* Everything computed: now, and only now, write the outputs. */
    for (int i = 0; i < f->noutputs && st == SCANFUSE_OK; i++)
        store_output(&c.v[f->outputs[i]], &outputs[i]);
done:
    if (c.v)
        for (int32_t v = 0; v < f->nvalues; v++) buf_free(&c.v[v]);
    free(c.v);
    free(last_use);
    free(is_out);
    free(raw);
    return st;
}

const sf_backend sf_backend_reference = {"reference", ref_supports, ref_compile, ref_run,
                                         ref_release};
