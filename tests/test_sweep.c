/*
 * test_sweep.c — the op-by-op sweep: every op of the op table x every dtype it accepts
 * x shape classes, run on SCANFUSE_DEVICE_CPU and on SCANFUSE_DEVICE_REFERENCE with the
 * same inputs, compared element by element.
 *
 * Ops are taken from sf_op_table, so a new row is swept by the generic generator of its
 * kind (pointwise by arity, scans, reductions) or, when no generator knows it, reported:
 * the program fails when an op has no case that ran.  Each case is a fusion text
 * ("input x0: float16[3, 33]\ny0 = cumsum(x0, dim=-1, exclusive=true)\noutput y0"),
 * parsed with scanfuse_parse; for one shape per op x dtype the same op is also built
 * through the C API (scanfuse_op / scanfuse_op2 / the typed scan helpers) and must give
 * the same bytes.
 *
 * Shape classes: 0-d, empty (1-D and 3-D), length 1, 7, 33, 1000 (and 1000003 for 1-D
 * cumsum and sum), 2-D, 3-D, 5-D, size-1 dims, negative dims, inputs that are transposed
 * views, every-other-element slices, stride-0 broadcasts and misaligned pointers with a
 * byte_offset, outputs that are transposed or sliced.  Inputs come from a fixed seed per
 * case (the case number is printed with every failure), in a range that suits the op
 * (positive for log/sqrt/rsqrt, no zero integer divisors, ...); a dedicated pass feeds
 * NaN, infinities, -0.0 and subnormals (floats) and extreme values (integers).
 *
 * Comparison: NaN and infinity positions first (must match exactly); integer and bool
 * outputs bit for bit; float outputs against the reference's unrounded float64 value
 * (the reference is given float64 output tensors), per tolerance class:
 *   EXACT   correctly rounded from double (+ - * / sqrt reciprocal, casts, copies, shape
 *           ops, max/min, floor/ceil, remainder, floor_divide, creation): the CPU value
 *           must be the reference value rounded to the output dtype, sign of zero too
 *   ULP1    transcendentals (exp log log1p expm1 rsqrt sigmoid tanh silu pow): within 1
 *           ulp of the output dtype (float64 outputs: 4 ulp, libm differences)
 *   SUM     cumsum, sum, mean (DESIGN §1): within 1 ulp, or within 2^-40 * M where M is
 *           the sum of |x| over the same prefix or reduced elements (divided by the
 *           count for mean), for the cancellation cases
 *   REL     cumprod, prod (accumulated in double): within 1 ulp or 2^-40 * |result|
 *   LSE     logcumsumexp: within 1 ulp or 2^-40 * (1 + |result| + max |x|)
 *   MATMUL  matmul: within 1 ulp or 2^-40 * sum |a||b| over the dot product
 * Every CPU output has canary guard zones before and after it (and canary gaps inside
 * strided outputs) that must be intact; inputs must be unchanged by a run; before each
 * good run a run with a bad tensor must fail and leave every output byte untouched; a
 * few fused programs hit an integer division by zero and must leave every output
 * untouched too.
 *
 * Environment: SF_SWEEP_OP=NAME sweeps one op; SF_SWEEP_VERBOSE=1 prints every case.
 */
#include "harness.h"
#include "sf.h"
#include "sweep_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NDT SCANFUSE_NUM_DTYPES
#define MAXIN 3
#define MAXOUT 2

/* ---------------------------------------------------------------------------------- */
/* Cases                                                                              */
/* ---------------------------------------------------------------------------------- */

/* G_INDEX: integers in [0, hi) (indices, ids, small-range keys); G_TIES: floats from a
 * few values (ties, -0.0 next to 0.0, NaN and infinities) for the sorts */
enum { G_DEFAULT, G_POS, G_UNIT, G_NONZERO, G_BASE, G_EXPONENT, G_SPECIAL, G_SPECIAL_NZ, G_FULL, G_BOOL, G_INDEX, G_TIES };
enum { T_EXACT, T_ULP1, T_SUM, T_REL, T_LSE, T_MATMUL };
enum { MAG_NONE, MAG_SCAN, MAG_REDUCE };
enum { EXP_OK, EXP_DTYPE, EXP_SHAPE, EXP_ANY };

static const char *const tol_names[] = {"exact", "1ulp", "sum", "rel", "lse", "matmul"};

typedef struct in_spec {
    scanfuse_dtype dt;
    int ndim;
    int64_t shape[SF_MAX_DIMS];
    int gen;
    int layout;
    int64_t hi; /* G_INDEX: values in [0, hi) */
} in_spec;

typedef struct sweep_case {
    sf_op op;
    scanfuse_dtype acct; /* the dtype this case counts for */
    int nin;
    in_spec in[MAXIN];
    char call[512];  /* "cumsum(x0, dim=-1)"; tensor inputs are x0, x1, x2 */
    char attrs[256]; /* the non-tensor arguments of call, for the API build */
    bool api;        /* also build through the C API (args must be x0..x{nin-1}) */
    bool literal;    /* the call holds scalar literals: the result dtype is not checked */
    int tol;
    int mag;
    int dim, raw_dim; /* scans: wrapped and given dim */
    bool excl, rev;
    scanfuse_dtype scan_dtype;
    unsigned redmask; /* reductions: reduced dims (wrapped) */
    bool mean;
    int out_layout;
    int expect;
    const char *label;
    const char *raw_text; /* a whole program instead of in[]/call */
} sweep_case;

static long ran[SF_NUM_OPS][NDT];
static long ncases[SF_NUM_OPS];
static int case_no;
static const char *only_op;
static bool verbose;
static bool quiet; /* the comparator's self-test: count, do not report */
static long long compared[6];   /* float elements compared per tolerance class */
static double worst_ulps[6];    /* the largest error seen per class, in ulps */
static long long compared_int;  /* integer and bool elements compared */

/* ---------------------------------------------------------------------------------- */
/* Op properties                                                                      */
/* ---------------------------------------------------------------------------------- */

static bool is_op(sf_op op, const char *name) { return strcmp(sf_op_table[op].name, name) == 0; }

static bool sig_has(sf_op op, const char *param) {
    const char *s = sf_op_table[op].signature;
    size_t n = strlen(param);
    for (const char *p = s; (p = strstr(p, param)) != NULL; p += n)
        if ((p == s || p[-1] == ' ' || p[-1] == ',') && p[n] == ':') return true;
    return false;
}

/* 1: the op must accept the dtype, 0: it must reject it, -1: either. */
static int accepts(sf_op op, scanfuse_dtype dt) {
    int fl = sf_op_table[op].flags;
    if ((fl & SF_F_FLOAT_ONLY) && !sf_dtype_is_float(dt)) return 0;
    if ((fl & SF_F_NO_BOOL) && dt == SCANFUSE_BOOL) return 0;
    if (sf_op_table[op].kind == SF_KIND_CREATION && dt == SCANFUSE_BOOL &&
        (is_op(op, "arange") || is_op(op, "iota")))
        return -1;
    return 1;
}

static int pointwise_tol(sf_op op) {
    static const char *const ulp1[] = {"exp", "log", "log1p", "expm1", "rsqrt", "sigmoid",
                                       "tanh", "silu", "pow"};
    for (size_t i = 0; i < sizeof ulp1 / sizeof ulp1[0]; i++)
        if (is_op(op, ulp1[i])) return T_ULP1;
    static const char *const exact[] = {
        "neg", "abs", "sqrt", "reciprocal", "relu", "floor", "ceil", "logical_not", "isnan",
        "cast", "add", "sub", "mul", "div", "maximum", "minimum", "remainder", "floor_divide",
        "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "where"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (is_op(op, exact[i])) return T_EXACT;
    return T_ULP1; /* an op this sweep does not know yet */
}

/* The input generator for tensor argument k of op. */
static int default_gen(sf_op op, int k) {
    if (is_op(op, "log") || is_op(op, "log1p") || is_op(op, "sqrt") || is_op(op, "rsqrt"))
        return G_POS;
    if (is_op(op, "reciprocal")) return G_NONZERO;
    if (is_op(op, "cumprod") || is_op(op, "prod")) return G_UNIT;
    if (is_op(op, "pow")) return k == 0 ? G_BASE : G_EXPONENT;
    if ((is_op(op, "div") || is_op(op, "remainder") || is_op(op, "floor_divide")) && k == 1)
        return G_NONZERO;
    return G_DEFAULT;
}

static bool needs_nonzero_int(sf_op op, int k) {
    return k == 1 && (is_op(op, "remainder") || is_op(op, "floor_divide"));
}

static int scan_tol(sf_op op) {
    if (is_op(op, "cumsum")) return T_SUM;
    if (is_op(op, "cumprod")) return T_REL;
    if (is_op(op, "logcumsumexp")) return T_LSE;
    if (is_op(op, "cummax") || is_op(op, "cummin")) return T_EXACT;
    return T_REL;
}

static int reduction_tol(sf_op op) {
    if (is_op(op, "sum") || is_op(op, "mean")) return T_SUM;
    if (is_op(op, "prod")) return T_REL;
    if (is_op(op, "max") || is_op(op, "min") || is_op(op, "argmax") || is_op(op, "argmin"))
        return T_EXACT;
    return T_REL;
}

/* The result dtype the op table's rule gives for inputs of one dtype (NONE: unknown). */
static scanfuse_dtype expected_dtype(const sweep_case *c, scanfuse_dtype attr_dtype) {
    const sf_op_info *info = &sf_op_table[c->op];
    if (c->raw_text || c->literal || c->nin == 0) return SCANFUSE_DTYPE_NONE;
    scanfuse_dtype d = c->in[0].dt;
    for (int i = 1; i < c->nin; i++) {
        if (info->rule == SF_RULE_WHERE && i == 1) d = c->in[1].dt;
        else if (c->in[i].dt != d) return SCANFUSE_DTYPE_NONE;
    }
    switch (info->rule) {
    case SF_RULE_SAME: case SF_RULE_KEEP: case SF_RULE_MATMUL: case SF_RULE_WHERE: return d;
    case SF_RULE_FLOAT: return sf_dtype_is_float(d) ? d : SCANFUSE_FLOAT32;
    case SF_RULE_BOOL: return SCANFUSE_BOOL;
    case SF_RULE_CAST: return attr_dtype;
    case SF_RULE_SUM:
        if (attr_dtype != SCANFUSE_DTYPE_NONE) return attr_dtype;
        return sf_dtype_is_intlike(d) ? SCANFUSE_INT64 : d;
    case SF_RULE_MEAN: return attr_dtype != SCANFUSE_DTYPE_NONE ? attr_dtype : d;
    case SF_RULE_INDEX: return SCANFUSE_INT64;
    case SF_RULE_CREATE: return SCANFUSE_DTYPE_NONE;
    }
    return SCANFUSE_DTYPE_NONE;
}

/* ---------------------------------------------------------------------------------- */
/* Input values                                                                       */
/* ---------------------------------------------------------------------------------- */

static double uni(sf_test_rng *r, double lo, double hi) { return lo + (hi - lo) * sf_test_rng_uniform(r); }

static double gen_float(sf_test_rng *r, int gen) {
    switch (gen) {
    case G_POS: return exp2(uni(r, -4, 4));
    case G_UNIT: return (sf_test_rng_next(r) & 1 ? -1 : 1) * uni(r, 0.5, 1.5);
    case G_NONZERO: return (sf_test_rng_next(r) & 1 ? -1 : 1) * uni(r, 0.5, 4);
    case G_BASE: return uni(r, 0.25, 3);
    case G_EXPONENT: return uni(r, -3, 3);
    case G_SPECIAL:
    case G_SPECIAL_NZ:
        if (sf_test_rng_uniform(r) < 0.25) {
            static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 65504.0,
                                        -3.0e38, 1.0e-7, 6.0e-5, 1.0e-300, -1.0e-40, 1.0e300};
            return sp[sf_test_rng_int(r, 0, (int64_t)(sizeof sp / sizeof sp[0]) - 1)];
        }
        return uni(r, -4, 4);
    case G_FULL: return uni(r, -1.0e4, 1.0e4);
    case G_BOOL: return (double)(sf_test_rng_next(r) & 1);
    case G_TIES: {
        static const double tv[] = {-2.0, -0.0, 0.0, 1.5, 3.0, NAN, INFINITY, -INFINITY};
        return tv[sf_test_rng_int(r, 0, (int64_t)(sizeof tv / sizeof tv[0]) - 1)];
    }
    default: return uni(r, -4, 4);
    }
}

static int64_t clampi(int64_t v, scanfuse_dtype dt) {
    if (v < sf_int_min(dt)) return sf_int_min(dt);
    if (v > sf_int_max(dt)) return sf_int_max(dt);
    return v;
}

static int64_t gen_int(sf_test_rng *r, int gen, scanfuse_dtype dt) {
    int64_t lo = sf_int_min(dt), hi = sf_int_max(dt);
    if (dt == SCANFUSE_BOOL) return gen == G_NONZERO || gen == G_SPECIAL_NZ ? 1 : (int64_t)(sf_test_rng_next(r) & 1);
    switch (gen) {
    case G_POS: return sf_test_rng_int(r, 1, 20);
    case G_UNIT: {
        int64_t v = sf_test_rng_int(r, 1, 2);
        return lo < 0 && (sf_test_rng_next(r) & 1) ? -v : v;
    }
    case G_NONZERO: {
        int64_t v = sf_test_rng_int(r, 1, 9);
        return lo < 0 && (sf_test_rng_next(r) & 1) ? -v : v;
    }
    case G_BASE: return sf_test_rng_int(r, clampi(-4, dt), 4);
    case G_EXPONENT: return sf_test_rng_int(r, clampi(-2, dt), 6);
    case G_FULL: return sf_wrap_int((int64_t)sf_test_rng_next(r), dt);
    case G_SPECIAL:
    case G_SPECIAL_NZ: {
        int64_t v;
        if (sf_test_rng_uniform(r) < 0.3) {
            const int64_t sp[] = {lo, hi, 0, -1, 1, lo + 1, hi - 1};
            v = clampi(sp[sf_test_rng_int(r, 0, 6)], dt);
        } else {
            v = sf_wrap_int((int64_t)sf_test_rng_next(r), dt);
        }
        if (gen == G_SPECIAL_NZ && v == 0) v = lo < 0 ? -1 : 1;
        return v;
    }
    default: return sf_test_rng_int(r, clampi(-20, dt), clampi(20, dt));
    }
}

/* The generator to use for an integer divisor. */
static int nonzero_gen(int gen) {
    return gen == G_SPECIAL || gen == G_FULL || gen == G_SPECIAL_NZ ? G_SPECIAL_NZ : G_NONZERO;
}

/* An input tensor: its buffer and its logical values (row-major). */
typedef struct tin {
    tbuf t;
    double *f;   /* every dtype, as a double */
    int64_t *i;  /* every dtype, as an int64 (floats truncated) */
    unsigned char *saved; /* copy of the allocation, to check the run left it alone */
} tin;

static bool make_input(tin *x, const in_spec *s, sf_test_rng *r, bool force_nonzero) {
    memset(x, 0, sizeof *x);
    if (!tb_init(&x->t, s->dt, s->ndim, s->shape, s->layout)) return false;
    tbuf *t = &x->t;
    /* poison every position the view does not cover (a read of one shows) */
    for (int64_t k = 0; k < t->span; k++) {
        if (sf_dtype_is_float(t->dt)) sf_store_f64(t->base, k, t->dt, NAN);
        else sf_store_i64(t->base, k, t->dt, sf_int_max(t->dt));
    }
    for (int64_t j = 0; j < t->numel; j++) {
        int64_t off = tb_offset(t, j);
        if (sf_dtype_is_float(t->dt)) sf_store_f64(t->base, off, t->dt, gen_float(r, s->gen));
        else if (s->gen == G_INDEX) sf_store_i64(t->base, off, t->dt, sf_test_rng_int(r, 0, s->hi - 1));
        else sf_store_i64(t->base, off, t->dt, gen_int(r, force_nonzero ? nonzero_gen(s->gen) : s->gen, t->dt));
    }
    size_t n = (size_t)(t->numel > 0 ? t->numel : 1);
    x->f = malloc(n * sizeof(double));
    x->i = malloc(n * sizeof(int64_t));
    x->saved = malloc(t->alloc_len);
    if (!x->f || !x->i || !x->saved) return false;
    for (int64_t j = 0; j < t->numel; j++) {
        x->f[j] = tb_get_f(t, j);
        x->i[j] = tb_get_i(t, j);
    }
    memcpy(x->saved, t->alloc, t->alloc_len);
    return true;
}

static void free_input(tin *x) {
    tb_free(&x->t);
    free(x->f);
    free(x->i);
    free(x->saved);
}

/* ---------------------------------------------------------------------------------- */
/* Magnitudes for the cancellation bound                                              */
/* ---------------------------------------------------------------------------------- */

static double conv_abs(const tin *x, int64_t j, scanfuse_dtype conv) {
    double v = sf_dtype_is_float(x->t.dt) ? x->f[j] : (double)x->i[j];
    if (sf_dtype_is_float(conv)) v = sf_round_to(v, conv);
    return fabs(v);
}

/* m[j] = sum of |x| over the prefix (or suffix, exclusive or not) element j scans. */
static void mag_scan(const tin *x, int dim, bool excl, bool rev, scanfuse_dtype conv, double *m) {
    const tbuf *t = &x->t;
    int64_t outer = 1, n = 1, inner = 1;
    if (t->ndim > 0) {
        for (int d = 0; d < dim; d++) outer *= t->shape[d];
        n = t->shape[dim];
        for (int d = dim + 1; d < t->ndim; d++) inner *= t->shape[d];
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            double acc = 0;
            for (int64_t s = 0; s < n; s++) {
                int64_t idx = rev ? n - 1 - s : s;
                int64_t pos = (o * n + idx) * inner + k;
                double a = conv_abs(x, pos, conv);
                if (excl) {
                    m[pos] = acc;
                    acc += a;
                } else {
                    acc += a;
                    m[pos] = acc;
                }
            }
        }
}

/* m[out] = sum of |x| over the elements reduced into out (mean: divided by the count). */
static void mag_reduce(const tin *x, unsigned mask, bool mean, scanfuse_dtype conv, double *m,
                       int64_t nout) {
    const tbuf *t = &x->t;
    for (int64_t k = 0; k < nout; k++) m[k] = 0;
    int64_t count = 1;
    for (int d = 0; d < t->ndim; d++)
        if (mask & (1u << d)) count *= t->shape[d];
    for (int64_t j = 0; j < t->numel; j++) {
        int64_t rem = j, out = 0, mul = 1;
        for (int d = t->ndim - 1; d >= 0; d--) {
            int64_t idx = rem % t->shape[d];
            rem /= t->shape[d];
            if (!(mask & (1u << d))) {
                out += idx * mul;
                mul *= t->shape[d];
            }
        }
        if (out < nout) m[out] += conv_abs(x, j, conv);
    }
    if (mean && count > 0)
        for (int64_t k = 0; k < nout; k++) m[k] /= (double)count;
}

/* m = matmul(|a|, |b|) with torch.matmul's 1-D promotion and batch broadcasting. */
static void mag_matmul(const tin *a, const tin *b, double *m, int64_t nout) {
    int na = a->t.ndim, nb = b->t.ndim;
    int64_t sa[SF_MAX_DIMS + 1], sb[SF_MAX_DIMS + 1];
    int ra = na, rb = nb;
    if (na == 1) { sa[0] = 1; sa[1] = a->t.shape[0]; ra = 2; }
    else for (int d = 0; d < na; d++) sa[d] = a->t.shape[d];
    if (nb == 1) { sb[0] = b->t.shape[0]; sb[1] = 1; rb = 2; }
    else for (int d = 0; d < nb; d++) sb[d] = b->t.shape[d];
    int64_t M = sa[ra - 2], K = sa[ra - 1], N = sb[rb - 1];
    int nbatch = (ra > rb ? ra : rb) - 2;
    int64_t bshape[SF_MAX_DIMS];
    for (int d = 0; d < nbatch; d++) {
        int da = d - (nbatch - (ra - 2)), db = d - (nbatch - (rb - 2));
        int64_t x = da >= 0 ? sa[da] : 1, y = db >= 0 ? sb[db] : 1;
        bshape[d] = x == 1 ? y : x;
    }
    int64_t nb_total = sw_numel(nbatch, bshape);
    for (int64_t bi = 0; bi < nb_total; bi++) {
        /* batch offsets into a and b */
        int64_t rem = bi, offa = 0, offb = 0, mula = M * K, mulb = K * N;
        for (int d = nbatch - 1; d >= 0; d--) {
            int64_t idx = rem % bshape[d];
            rem /= bshape[d];
            int da = d - (nbatch - (ra - 2)), db = d - (nbatch - (rb - 2));
            if (da >= 0) { offa += (sa[da] == 1 ? 0 : idx) * mula; mula *= sa[da]; }
            if (db >= 0) { offb += (sb[db] == 1 ? 0 : idx) * mulb; mulb *= sb[db]; }
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += fabs(a->f[offa + i * K + k]) * fabs(b->f[offb + k * N + j]);
                int64_t o = (bi * M + i) * N + j;
                if (o < nout) m[o] = acc;
            }
    }
}

/* ---------------------------------------------------------------------------------- */
/* Running one case                                                                   */
/* ---------------------------------------------------------------------------------- */

static void case_text(const sweep_case *c, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = '\0';
    if (c->raw_text) {
        sw_app(buf, len, &n, "%s", c->raw_text);
        return;
    }
    for (int i = 0; i < c->nin; i++) {
        char sh[128];
        sw_shape_str(sh, sizeof sh, c->in[i].ndim, c->in[i].shape);
        sw_app(buf, len, &n, "input x%d: %s%s\n", i, scanfuse_dtype_name(c->in[i].dt), sh);
    }
    if (sf_op_table[c->op].nout == 2) sw_app(buf, len, &n, "y0, y1 = %s\noutput y0, y1\n", c->call);
    else sw_app(buf, len, &n, "y0 = %s\noutput y0\n", c->call);
}

static void index_str(char *buf, size_t len, int ndim, const int64_t *shape, int64_t j) {
    int64_t idx[SF_MAX_DIMS];
    for (int d = ndim - 1; d >= 0; d--) {
        idx[d] = shape[d] ? j % shape[d] : 0;
        j = shape[d] ? j / shape[d] : 0;
    }
    sw_shape_str(buf, len, ndim, idx);
}

/* Builds the case's op through the C API. */
static scanfuse_fusion *api_build(const sweep_case *c) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    if (!f) return NULL;
    scanfuse_value xs[MAXIN];
    for (int i = 0; i < c->nin; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        xs[i] = scanfuse_input(f, name, c->in[i].dt, c->in[i].ndim, c->in[i].shape);
    }
    scanfuse_value out[2] = {SCANFUSE_NO_VALUE, SCANFUSE_NO_VALUE};
    int flags = (c->excl ? SCANFUSE_EXCLUSIVE : 0) | (c->rev ? SCANFUSE_REVERSE : 0);
    int nout = sf_op_table[c->op].nout;
    if (is_op(c->op, "cumsum"))
        out[0] = scanfuse_cumsum(f, xs[0], c->raw_dim, c->scan_dtype, flags);
    else if (is_op(c->op, "cumprod"))
        out[0] = scanfuse_cumprod(f, xs[0], c->raw_dim, c->scan_dtype, flags);
    else if (is_op(c->op, "cummax"))
        scanfuse_cummax(f, xs[0], c->raw_dim, flags, &out[0], &out[1]);
    else if (is_op(c->op, "cummin"))
        scanfuse_cummin(f, xs[0], c->raw_dim, flags, &out[0], &out[1]);
    else if (is_op(c->op, "logcumsumexp"))
        out[0] = scanfuse_logcumsumexp(f, xs[0], c->raw_dim, flags);
    else if (nout == 2)
        scanfuse_op2(f, sf_op_table[c->op].name, xs, c->nin, c->attrs, out);
    else
        out[0] = scanfuse_op(f, sf_op_table[c->op].name, c->nin ? xs : NULL, c->nin, c->attrs);
    for (int k = 0; k < nout; k++) {
        char name[16];
        snprintf(name, sizeof name, "y%d", k);
        scanfuse_output(f, out[k], name);
    }
    return f;
}

/* Compares CPU output o with the reference; returns the number of bad elements. */
static long compare_output(const sweep_case *c, const char *desc, int o, const tbuf *cpu,
                           const tbuf *ref, const double *mag, const tin *ins, int nin) {
    long bad = 0;
    scanfuse_dtype dt = cpu->dt;
    int tol = c->tol;
    if (sf_op_table[c->op].nout == 2 && o == 1) tol = T_EXACT; /* indices */
    double maxabs = 0;
    if (tol == T_LSE && nin > 0)
        for (int64_t j = 0; j < ins[0].t.numel; j++)
            if (isfinite(ins[0].f[j]) && fabs(ins[0].f[j]) > maxabs) maxabs = fabs(ins[0].f[j]);
    for (int64_t j = 0; j < cpu->numel; j++) {
        char why[160] = "";
        char gots[64], wants[64];
        if (sf_dtype_is_intlike(dt)) {
            int64_t cv = tb_get_i(cpu, j), rv = sf_load_i64(ref->base, j, ref->dt);
            if (!quiet) compared_int++;
            if (cv == rv) continue;
            snprintf(gots, sizeof gots, "%lld", (long long)cv);
            snprintf(wants, sizeof wants, "%lld", (long long)rv);
            snprintf(why, sizeof why, "integers differ");
        } else {
            double cv = tb_get_f(cpu, j), rv = sf_load_f64(ref->base, j, ref->dt);
            double rr = sf_round_to(rv, dt);
            snprintf(gots, sizeof gots, "%.17g", cv);
            snprintf(wants, sizeof wants, "%.17g (rounded %.9g)", rv, rr);
            if (isnan(cv) || isnan(rv)) {
                if (isnan(cv) && isnan(rv)) continue;
                snprintf(why, sizeof why, "NaN position differs");
            } else if (isinf(cv) || isinf(rr)) {
                if (cv == rr) continue;
                snprintf(why, sizeof why, "infinity position differs");
            } else {
                double err = fabs(cv - rv), ulp = sf_ulp(rv, dt);
                bool ok;
                if (!quiet) {
                    compared[tol]++;
                    if (err / ulp > worst_ulps[tol]) worst_ulps[tol] = err / ulp;
                }
                double M = 0;
                switch (tol) {
                case T_EXACT:
                    ok = cv == rr && (rr != 0.0 || signbit(cv) == signbit(rr));
                    break;
                case T_ULP1: ok = err <= ulp * (dt == SCANFUSE_FLOAT64 ? 4.0 : 1.0); break;
                default:
                    if (tol == T_REL) M = fabs(rv);
                    else if (tol == T_LSE) M = 1.0 + fabs(rv) + maxabs;
                    else M = mag ? mag[j] : 0.0;
                    ok = err <= ulp || err <= ldexp(M, -40);
                    break;
                }
                if (ok) continue;
                snprintf(why, sizeof why, "error %.3g = %.3g ulp (tolerance %s%s%.3g)", err,
                         err / ulp, tol_names[tol], M > 0 ? ", 2^-40*M = " : "",
                         M > 0 ? ldexp(M, -40) : 0.0);
            }
        }
        bad++;
        if (bad <= 3 && !quiet) {
            char idx[128];
            index_str(idx, sizeof idx, cpu->ndim, cpu->shape, j);
            char inv[256] = "";
            size_t n = 0;
            for (int i = 0; i < nin; i++)
                if (ins[i].t.numel == cpu->numel)
                    sw_app(inv, sizeof inv, &n, " x%d=%.17g", i, ins[i].f[j]);
                else if (ins[i].t.numel == 1)
                    sw_app(inv, sizeof inv, &n, " x%d=%.17g", i, ins[i].f[0]);
            CHECKF(0, "%s\n    output y%d (%s) at %s: cpu %s, reference %s: %s%s%s", desc, o,
                   scanfuse_dtype_name(dt), idx, gots, wants, why, inv[0] ? "; inputs there:" : "",
                   inv);
        }
    }
    if (bad > 3 && !quiet) CHECKF(0, "%s\n    output y%d: %ld elements differ in all", desc, o, bad);
    return bad;
}

static void run_case(sweep_case *c) {
    case_no++;
    if (only_op && strcmp(only_op, sf_op_table[c->op].name) != 0) return;
    char text[2048], one[2048], desc[2600];
    case_text(c, text, sizeof text);
    sw_oneline(text, one, sizeof one);
    size_t dn = 0;
    sw_app(desc, sizeof desc, &dn, "case #%d [%s] {%s} in:", case_no, c->label ? c->label : "", one);
    for (int i = 0; i < c->nin; i++) sw_app(desc, sizeof desc, &dn, " %s", sw_layout_name(c->in[i].layout));
    sw_app(desc, sizeof desc, &dn, " out: %s", sw_layout_name(c->out_layout));
    if (verbose) printf("%s\n", desc);

    scanfuse_fusion *f = scanfuse_parse(text, "sweep");
    if (!f) {
        CHECKF(0, "%s: scanfuse_parse returned NULL", desc);
        return;
    }
    scanfuse_status st = scanfuse_fusion_status(f);
    if (c->expect == EXP_DTYPE || c->expect == EXP_SHAPE) {
        scanfuse_status want = c->expect == EXP_DTYPE ? SCANFUSE_ERROR_DTYPE : SCANFUSE_ERROR_SHAPE;
        CHECKF(st == want, "%s: expected status '%s', got '%s' (%s)", desc,
               scanfuse_status_string(want), scanfuse_status_string(st), scanfuse_fusion_error(f));
        if (st != SCANFUSE_OK)
            CHECKF(sf_test_contains(scanfuse_fusion_error(f), sf_op_table[c->op].name),
                   "%s: message does not name the op: '%s'", desc, scanfuse_fusion_error(f));
        scanfuse_fusion_free(f);
        return;
    }
    if (c->expect == EXP_ANY && st != SCANFUSE_OK) {
        scanfuse_fusion_free(f);
        return;
    }
    if (st != SCANFUSE_OK) {
        CHECKF(0, "%s: build failed: %s: %s", desc, scanfuse_status_string(st), scanfuse_fusion_error(f));
        scanfuse_fusion_free(f);
        return;
    }
    int nin = scanfuse_fusion_num_inputs(f), nout = scanfuse_fusion_num_outputs(f);
    if (!c->raw_text) {
        CHECKF(nin == c->nin, "%s: %d inputs", desc, nin);
        CHECKF(nout == sf_op_table[c->op].nout, "%s: %d outputs", desc, nout);
    }
    if (nin > MAXIN || nout > MAXOUT || nin < 0 || nout < 1 || (!c->raw_text && nin != c->nin)) {
        scanfuse_fusion_free(f);
        return;
    }
    scanfuse_dtype odt[MAXOUT];
    int ond[MAXOUT];
    int64_t osh[MAXOUT][SF_MAX_DIMS];
    for (int k = 0; k < nout; k++) {
        const char *nm;
        scanfuse_fusion_output_info(f, k, &nm, &odt[k], &ond[k], osh[k]);
    }
    /* result dtype per the op table's rule */
    if (!c->raw_text) {
        scanfuse_dtype want = expected_dtype(c, c->scan_dtype);
        if (want != SCANFUSE_DTYPE_NONE)
            CHECKF(odt[0] == want, "%s: result dtype %s, expected %s", desc,
                   scanfuse_dtype_name(odt[0]), scanfuse_dtype_name(want));
        if (nout == 2) CHECKF(odt[1] == SCANFUSE_INT64, "%s: second result dtype %s", desc, scanfuse_dtype_name(odt[1]));
        if (sf_op_table[c->op].kind == SF_KIND_SCAN) {
            bool same = ond[0] == c->in[0].ndim;
            for (int d = 0; same && d < ond[0]; d++) same = osh[0][d] == c->in[0].shape[d];
            CHECKF(same, "%s: scan result shape differs from the input's", desc);
        }
    }

    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0x5EEDull * 1000003ull + (uint64_t)case_no);
    tin ins[MAXIN];
    memset(ins, 0, sizeof ins);
    tbuf cpu[MAXOUT], ref[MAXOUT], api_out[MAXOUT];
    memset(cpu, 0, sizeof cpu);
    memset(ref, 0, sizeof ref);
    memset(api_out, 0, sizeof api_out);
    scanfuse_program *pref = NULL, *pcpu = NULL, *papi = NULL;
    scanfuse_fusion *fapi = NULL;
    double *mag = NULL;
    bool ok = true;
    scanfuse_dl_tensor din[MAXIN], dout[MAXOUT], dref[MAXOUT];

    for (int i = 0; i < nin && ok; i++) {
        in_spec s;
        if (c->raw_text) {
            const char *nm;
            s.layout = c->in[i].layout;
            s.gen = c->in[i].gen;
            s.hi = c->in[i].hi;
            scanfuse_fusion_input_info(f, i, &nm, &s.dt, &s.ndim, s.shape);
        } else {
            s = c->in[i];
        }
        bool nz = sf_dtype_is_intlike(s.dt) && !c->raw_text && needs_nonzero_int(c->op, i);
        ok = make_input(&ins[i], &s, &rng, nz);
        din[i] = ins[i].t.dl;
    }
    for (int k = 0; k < nout && ok; k++) {
        scanfuse_dtype rdt = sf_dtype_is_float(odt[k]) ? SCANFUSE_FLOAT64 : odt[k];
        ok = tb_init(&ref[k], rdt, ond[k], osh[k], L_CONTIG) &&
             tb_init(&cpu[k], odt[k], ond[k], osh[k], c->out_layout);
        dref[k] = ref[k].dl;
        dout[k] = cpu[k].dl;
    }
    if (!ok) {
        CHECKF(0, "%s: out of memory", desc);
        goto done;
    }

    scanfuse_options opt;
    scanfuse_options_init(&opt);
    opt.device = SCANFUSE_DEVICE_REFERENCE;
    pref = scanfuse_compile(f, &opt);
    opt.device = SCANFUSE_DEVICE_CPU;
    pcpu = scanfuse_compile(f, &opt);
    if (!pref || !pcpu) {
        CHECKF(0, "%s: compile returned NULL", desc);
        goto done;
    }
    st = scanfuse_program_status(pref);
    if (st != SCANFUSE_OK) {
        CHECKF(0, "%s: reference compile: %s: %s", desc, scanfuse_status_string(st), scanfuse_program_error(pref));
        goto done;
    }
    st = scanfuse_program_status(pcpu);
    if (st != SCANFUSE_OK) {
        CHECKF(0, "%s: cpu compile: %s: %s", desc, scanfuse_status_string(st), scanfuse_program_error(pcpu));
        goto done;
    }
    st = scanfuse_run(pref, din, nin, dref, nout);
    if (st != SCANFUSE_OK) {
        CHECKF(0, "%s: reference run: %s: %s", desc, scanfuse_status_string(st), scanfuse_program_error(pref));
        goto done;
    }

    /* a run with a bad tensor must fail and leave every output byte alone */
    {
        scanfuse_dl_tensor bin[MAXIN], bout[MAXOUT];
        int64_t bshape[SF_MAX_DIMS + 1];
        memcpy(bin, din, sizeof(scanfuse_dl_tensor) * (size_t)nin);
        memcpy(bout, dout, sizeof(scanfuse_dl_tensor) * (size_t)nout);
        if (nin > 0) {
            scanfuse_dl_tensor *b = &bin[nin - 1];
            if (b->ndim == 0) {
                b->ndim = 1;
                bshape[0] = 2;
                b->strides = NULL;
            } else {
                memcpy(bshape, b->shape, sizeof(int64_t) * (size_t)b->ndim);
                bshape[0] = bshape[0] > 0 ? bshape[0] - 1 : 1;
            }
            b->shape = bshape;
        } else {
            scanfuse_dtype wrong = odt[0] == SCANFUSE_BOOL ? SCANFUSE_UINT8 : SCANFUSE_BOOL;
            bout[0].dtype = scanfuse_dtype_to_dl(wrong);
        }
        st = scanfuse_run(pcpu, bin, nin, bout, nout);
        CHECKF(st != SCANFUSE_OK, "%s: run with a bad %s succeeded", desc, nin > 0 ? "input shape" : "output dtype");
        if (st != SCANFUSE_OK) {
            CHECKF(scanfuse_program_error(pcpu) && scanfuse_program_error(pcpu)[0],
                   "%s: failed run without a message", desc);
            for (int k = 0; k < nout; k++)
                CHECKF(tb_untouched(&cpu[k]), "%s: failed run wrote output y%d", desc, k);
        }
    }

    st = scanfuse_run(pcpu, din, nin, dout, nout);
    if (st != SCANFUSE_OK) {
        CHECKF(0, "%s: cpu run: %s: %s", desc, scanfuse_status_string(st), scanfuse_program_error(pcpu));
        goto done;
    }
    for (int i = 0; i < nin; i++)
        CHECKF(memcmp(ins[i].saved, ins[i].t.alloc, ins[i].t.alloc_len) == 0, "%s: the run changed input x%d", desc, i);
    for (int k = 0; k < nout; k++) {
        long dmg = tb_find_damage(&cpu[k]);
        CHECKF(dmg < 0, "%s: output y%d: byte %ld of its buffer (element data starts at %ld) was written outside the tensor",
               desc, k, dmg, (long)(cpu[k].base - cpu[k].alloc));
    }

    /* magnitudes for the cancellation bound of output 0 */
    if (!c->raw_text && sf_dtype_is_float(odt[0]) && (c->tol == T_SUM || c->tol == T_MATMUL)) {
        mag = calloc((size_t)(cpu[0].numel > 0 ? cpu[0].numel : 1), sizeof(double));
        if (mag) {
            if (c->mag == MAG_SCAN) mag_scan(&ins[0], c->dim, c->excl, c->rev, odt[0], mag);
            else if (c->mag == MAG_REDUCE) mag_reduce(&ins[0], c->redmask, c->mean, odt[0], mag, cpu[0].numel);
            else if (c->tol == T_MATMUL && nin == 2) mag_matmul(&ins[0], &ins[1], mag, cpu[0].numel);
        }
    }
    for (int k = 0; k < nout; k++) compare_output(c, desc, k, &cpu[k], &ref[k], k == 0 ? mag : NULL, ins, nin);

    /* the same op built through the C API gives the same bytes */
    if (c->api && !c->raw_text) {
        fapi = api_build(c);
        st = fapi ? scanfuse_fusion_status(fapi) : SCANFUSE_ERROR_MEMORY;
        if (st != SCANFUSE_OK) {
            CHECKF(0, "%s: C API build failed: %s: %s", desc, scanfuse_status_string(st),
                   fapi ? scanfuse_fusion_error(fapi) : "");
            goto done;
        }
        papi = scanfuse_compile(fapi, &opt);
        st = papi ? scanfuse_program_status(papi) : SCANFUSE_ERROR_MEMORY;
        scanfuse_dl_tensor dapi[MAXOUT];
        for (int k = 0; k < nout && st == SCANFUSE_OK; k++) {
            if (!tb_init(&api_out[k], odt[k], ond[k], osh[k], L_CONTIG)) st = SCANFUSE_ERROR_MEMORY;
            dapi[k] = api_out[k].dl;
        }
        if (st == SCANFUSE_OK) st = scanfuse_run(papi, din, nin, dapi, nout);
        if (st != SCANFUSE_OK) {
            CHECKF(0, "%s: C API build: compile/run failed: %s: %s", desc, scanfuse_status_string(st),
                   papi ? scanfuse_program_error(papi) : "");
            goto done;
        }
        for (int k = 0; k < nout; k++) {
            int64_t first = -1;
            for (int64_t j = 0; j < cpu[k].numel && first < 0; j++)
                if (memcmp(api_out[k].base + (size_t)j * api_out[k].esize,
                           cpu[k].base + (size_t)tb_offset(&cpu[k], j) * cpu[k].esize, cpu[k].esize) != 0)
                    first = j;
            CHECKF(first < 0, "%s: the C API build gives different bytes at y%d element %lld", desc, k, (long long)first);
        }
    }

    ran[c->op][c->acct]++;
    ncases[c->op]++;
done:
    free(mag);
    scanfuse_program_free(papi);
    scanfuse_fusion_free(fapi);
    scanfuse_program_free(pref);
    scanfuse_program_free(pcpu);
    for (int i = 0; i < MAXIN; i++) free_input(&ins[i]);
    for (int k = 0; k < MAXOUT; k++) {
        tb_free(&cpu[k]);
        tb_free(&ref[k]);
        tb_free(&api_out[k]);
    }
    scanfuse_fusion_free(f);
}

/* ---------------------------------------------------------------------------------- */
/* Shape classes                                                                      */
/* ---------------------------------------------------------------------------------- */

typedef struct shape_class {
    const char *name;
    int ndim;
    int64_t shape[SF_MAX_DIMS];
    int layout, out_layout;
} shape_class;

static const shape_class shapes[] = {
    {"0-d", 0, {0}, L_CONTIG, L_CONTIG},
    {"empty", 1, {0}, L_CONTIG, L_CONTIG},
    {"len1", 1, {1}, L_CONTIG, L_CONTIG},
    {"len7", 1, {7}, L_CONTIG, L_CONTIG},
    {"len33", 1, {33}, L_CONTIG, L_CONTIG},
    {"len1000", 1, {1000}, L_CONTIG, L_CONTIG},
    {"2-D", 2, {3, 33}, L_CONTIG, L_CONTIG},
    {"3-D", 3, {2, 3, 7}, L_CONTIG, L_CONTIG},
    {"5-D", 5, {2, 1, 3, 1, 5}, L_CONTIG, L_CONTIG},
    {"size-1 rows", 2, {1, 7}, L_CONTIG, L_CONTIG},
    {"size-1 cols", 2, {7, 1}, L_CONTIG, L_CONTIG},
    {"empty 3-D", 3, {3, 0, 4}, L_CONTIG, L_CONTIG},
    {"transposed", 2, {33, 7}, L_TRANSPOSED, L_CONTIG},
    {"transposed 3-D", 3, {4, 5, 6}, L_TRANSPOSED, L_CONTIG},
    {"sliced", 1, {500}, L_SLICED, L_CONTIG},
    {"sliced 2-D", 2, {9, 17}, L_SLICED, L_CONTIG},
    {"broadcast", 2, {5, 33}, L_BROADCAST, L_CONTIG},
    {"misaligned", 2, {7, 9}, L_MISALIGNED, L_CONTIG},
    {"transposed out", 2, {4, 33}, L_CONTIG, L_TRANSPOSED},
    {"sliced out", 2, {6, 7}, L_CONTIG, L_SLICED},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* The subset of shape classes used for binary and ternary ops. */
static const int binary_shapes[] = {0, 1, 2, 3, 5, 6, 8, 11, 12, 14, 16, 17, 18};
#define NBINARY ((int)(sizeof binary_shapes / sizeof binary_shapes[0]))

static void case_init(sweep_case *c, sf_op op, scanfuse_dtype acct, const char *label) {
    memset(c, 0, sizeof *c);
    c->op = op;
    c->acct = acct;
    c->label = label;
    c->scan_dtype = SCANFUSE_DTYPE_NONE;
    c->out_layout = L_CONTIG;
    c->expect = EXP_OK;
}

static void add_in(sweep_case *c, scanfuse_dtype dt, int ndim, const int64_t *shape, int gen, int layout) {
    in_spec *s = &c->in[c->nin++];
    s->dt = dt;
    s->ndim = ndim;
    for (int d = 0; d < ndim; d++) s->shape[d] = shape[d];
    s->gen = gen;
    s->layout = layout;
}

/* call = "op(x0, ..., attrs)" with attrs also kept for the API build. */
static void set_call(sweep_case *c, const char *attrs) {
    size_t n = 0;
    c->call[0] = '\0';
    sw_app(c->call, sizeof c->call, &n, "%s(", sf_op_table[c->op].name);
    for (int i = 0; i < c->nin; i++) sw_app(c->call, sizeof c->call, &n, "%sx%d", i ? ", " : "", i);
    if (attrs && attrs[0]) sw_app(c->call, sizeof c->call, &n, "%s%s", c->nin ? ", " : "", attrs);
    sw_app(c->call, sizeof c->call, &n, ")");
    snprintf(c->attrs, sizeof c->attrs, "%s", attrs ? attrs : "");
}

static int wrap_dim(int dim, int ndim) {
    if (ndim == 0) return 0;
    return dim < 0 ? dim + ndim : dim;
}

static const scanfuse_dtype all_dtypes[NDT] = {
    SCANFUSE_BOOL, SCANFUSE_UINT8, SCANFUSE_INT8, SCANFUSE_INT16, SCANFUSE_INT32,
    SCANFUSE_INT64, SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32, SCANFUSE_FLOAT64};

/* One case that must be rejected for its dtype. */
static void reject_case(sf_op op, scanfuse_dtype dt) {
    sweep_case c;
    case_init(&c, op, dt, "rejected dtype");
    int64_t sh[2] = {3, 7};
    for (int i = 0; i < sf_op_table[op].nin; i++)
        add_in(&c, (sf_op_table[op].rule == SF_RULE_WHERE && i == 0) ? SCANFUSE_BOOL : dt, 2, sh, G_DEFAULT, L_CONTIG);
    const char *attrs = "";
    if (sf_op_table[op].kind == SF_KIND_SCAN) attrs = "dim=1";
    else if (sig_has(op, "dtype") && sf_op_table[op].rule == SF_RULE_CAST) attrs = "dtype=float32";
    set_call(&c, attrs);
    c.expect = EXP_DTYPE;
    run_case(&c);
}

/* ---------------------------------------------------------------------------------- */
/* Generators by kind                                                                 */
/* ---------------------------------------------------------------------------------- */

static void scan_case(sf_op op, scanfuse_dtype dt, const shape_class *s, int dim, int flags,
                      scanfuse_dtype rdt, int gen, bool api) {
    sweep_case c;
    case_init(&c, op, dt, s->name);
    add_in(&c, dt, s->ndim, s->shape, gen, s->layout);
    c.out_layout = s->out_layout;
    char attrs[128];
    size_t n = 0;
    attrs[0] = '\0';
    sw_app(attrs, sizeof attrs, &n, "dim=%d", dim);
    if (rdt != SCANFUSE_DTYPE_NONE) sw_app(attrs, sizeof attrs, &n, ", dtype=%s", scanfuse_dtype_name(rdt));
    if (flags & SCANFUSE_EXCLUSIVE) sw_app(attrs, sizeof attrs, &n, ", exclusive=true");
    if (flags & SCANFUSE_REVERSE) sw_app(attrs, sizeof attrs, &n, ", reverse=true");
    set_call(&c, attrs);
    c.tol = scan_tol(op);
    c.mag = MAG_SCAN;
    c.raw_dim = dim;
    c.dim = wrap_dim(dim, s->ndim);
    c.excl = (flags & SCANFUSE_EXCLUSIVE) != 0;
    c.rev = (flags & SCANFUSE_REVERSE) != 0;
    c.scan_dtype = rdt;
    c.api = api;
    run_case(&c);
}

static void gen_scan(sf_op op) {
    bool has_dtype = sig_has(op, "dtype");
    bool is_cumsum = is_op(op, "cumsum");
    for (int di = 0; di < NDT; di++) {
        scanfuse_dtype dt = all_dtypes[di];
        int acc = accepts(op, dt);
        if (acc == 0) {
            reject_case(op, dt);
            continue;
        }
        int gen = default_gen(op, 0);
        for (int k = 0; k < NSHAPES; k++) {
            const shape_class *s = &shapes[k];
            int dims[3], nd = 0;
            if (s->ndim == 0) {
                dims[nd++] = 0;
                dims[nd++] = -1;
            } else {
                dims[nd++] = -1;
                if (s->ndim >= 2) dims[nd++] = 0;
                if (s->ndim >= 3) dims[nd++] = s->ndim / 2;
            }
            for (int q = 0; q < nd; q++) {
                if (s->ndim == 0) { /* a 0-d input scans like a line of one element */
                    scan_case(op, dt, s, dims[q], q == 0 ? 0 : SCANFUSE_REVERSE, SCANFUSE_DTYPE_NONE, gen, k == 0 && q == 0);
                    scan_case(op, dt, s, dims[q], q == 0 ? SCANFUSE_EXCLUSIVE : SCANFUSE_EXCLUSIVE | SCANFUSE_REVERSE,
                              SCANFUSE_DTYPE_NONE, gen, false);
                    continue;
                }
                if (is_cumsum) {
                    for (int fl = 0; fl < 4; fl++)
                        scan_case(op, dt, s, dims[q], fl, SCANFUSE_DTYPE_NONE, gen, false);
                } else {
                    scan_case(op, dt, s, dims[q], 0, SCANFUSE_DTYPE_NONE, gen, false);
                    scan_case(op, dt, s, dims[q], 1 + (k + q) % 3, SCANFUSE_DTYPE_NONE, gen, k == 6 && q == 0);
                }
            }
        }
        /* the API build with flags and a negative dim */
        scan_case(op, dt, &shapes[6], -1, SCANFUSE_EXCLUSIVE | SCANFUSE_REVERSE, SCANFUSE_DTYPE_NONE, gen, true);
        /* dtype= */
        if (has_dtype)
            for (int ri = 0; ri < NDT; ri++) {
                scan_case(op, dt, &shapes[6], -1, ri % 4, all_dtypes[ri], gen, ri == 3);
                scan_case(op, dt, &shapes[5], 0, (ri + 1) % 4, all_dtypes[ri], gen, false);
            }
        /* special values / full-range integers */
        int sgen = sf_dtype_is_float(dt) ? G_SPECIAL : G_FULL;
        for (int fl = 0; fl < 4; fl++) {
            scan_case(op, dt, &shapes[6], -1, fl, SCANFUSE_DTYPE_NONE, sgen, false);
            scan_case(op, dt, &shapes[12], 0, fl, SCANFUSE_DTYPE_NONE, sgen, false);
        }
        if (!sf_dtype_is_float(dt)) scan_case(op, dt, &shapes[5], 0, 0, SCANFUSE_DTYPE_NONE, G_SPECIAL, false);
        if (is_cumsum && dt == SCANFUSE_INT32) {
            scan_case(op, dt, &shapes[5], 0, 0, SCANFUSE_INT32, G_FULL, false); /* int32 wraps */
            scan_case(op, dt, &shapes[6], 1, 1, SCANFUSE_INT8, G_FULL, false);
        }
    }
    /* one long row, for cumsum only */
    if (is_cumsum) {
        static const shape_class big = {"len1000003", 1, {1000003}, L_CONTIG, L_CONTIG};
        scan_case(op, SCANFUSE_FLOAT32, &big, 0, 0, SCANFUSE_DTYPE_NONE, G_DEFAULT, false);
        scan_case(op, SCANFUSE_INT32, &big, -1, SCANFUSE_EXCLUSIVE, SCANFUSE_DTYPE_NONE, G_FULL, false);
    }
}

static void unary_case(sf_op op, scanfuse_dtype dt, const shape_class *s, int gen, const char *attrs,
                       scanfuse_dtype attr_dt, bool api) {
    sweep_case c;
    case_init(&c, op, dt, s->name);
    add_in(&c, dt, s->ndim, s->shape, gen, s->layout);
    c.out_layout = s->out_layout;
    set_call(&c, attrs);
    c.tol = pointwise_tol(op);
    c.scan_dtype = attr_dt;
    c.api = api;
    run_case(&c);
}

static void gen_unary(sf_op op) {
    bool is_cast = sig_has(op, "dtype");
    for (int di = 0; di < NDT; di++) {
        scanfuse_dtype dt = all_dtypes[di];
        if (accepts(op, dt) == 0) {
            reject_case(op, dt);
            continue;
        }
        int gen = default_gen(op, 0);
        for (int k = 0; k < NSHAPES; k++) {
            char attrs[64] = "";
            scanfuse_dtype to = all_dtypes[(di + k) % NDT];
            if (is_cast) snprintf(attrs, sizeof attrs, "dtype=%s", scanfuse_dtype_name(to));
            unary_case(op, dt, &shapes[k], gen, attrs, is_cast ? to : SCANFUSE_DTYPE_NONE, k == 6);
        }
        int sgen = sf_dtype_is_float(dt) ? G_SPECIAL : G_FULL;
        int ntargets = is_cast ? NDT : 1;
        for (int ti = 0; ti < ntargets; ti++) {
            char attrs[64] = "";
            if (is_cast) snprintf(attrs, sizeof attrs, "dtype=%s", scanfuse_dtype_name(all_dtypes[ti]));
            scanfuse_dtype to = is_cast ? all_dtypes[ti] : SCANFUSE_DTYPE_NONE;
            unary_case(op, dt, &shapes[6], sgen, attrs, to, is_cast && ti == 0);
            unary_case(op, dt, &shapes[5], sgen, attrs, to, false);
            if (!sf_dtype_is_float(dt)) unary_case(op, dt, &shapes[5], G_SPECIAL, attrs, to, false);
        }
    }
}

static void nary_case(sf_op op, scanfuse_dtype acct, int nin, const scanfuse_dtype *dts,
                      const int *ndims, const int64_t (*shp)[SF_MAX_DIMS], const int *layouts,
                      const int *gens, int out_layout, const char *label, bool api) {
    sweep_case c;
    case_init(&c, op, acct, label);
    for (int i = 0; i < nin; i++) add_in(&c, dts[i], ndims[i], shp[i], gens[i], layouts[i]);
    c.out_layout = out_layout;
    set_call(&c, "");
    c.tol = pointwise_tol(op);
    c.api = api;
    run_case(&c);
}

/* A case whose call is written out (scalar literals). */
static void literal_case(sf_op op, scanfuse_dtype acct, int nin, const scanfuse_dtype *dts,
                         const int64_t *shape, int ndim, const int *gens, const char *call,
                         const char *label) {
    sweep_case c;
    case_init(&c, op, acct, label);
    for (int i = 0; i < nin; i++) add_in(&c, dts[i], ndim, shape, gens[i], L_CONTIG);
    snprintf(c.call, sizeof c.call, "%s", call);
    c.literal = true;
    c.tol = pointwise_tol(op);
    run_case(&c);
}

static void gen_nary(sf_op op) {
    const sf_op_info *info = &sf_op_table[op];
    int nin = info->nin;
    bool where = info->rule == SF_RULE_WHERE;
    const char *name = info->name;
    for (int di = 0; di < NDT; di++) {
        scanfuse_dtype dt = all_dtypes[di];
        if (accepts(op, dt) == 0) {
            reject_case(op, dt);
            continue;
        }
        scanfuse_dtype dts[MAXIN];
        int gens[MAXIN], ndims[MAXIN], lays[MAXIN];
        int64_t shp[MAXIN][SF_MAX_DIMS];
        for (int i = 0; i < nin; i++) {
            dts[i] = (where && i == 0) ? SCANFUSE_BOOL : dt;
            gens[i] = (where && i == 0) ? G_BOOL : default_gen(op, i);
        }
        /* same shapes */
        for (int b = 0; b < NBINARY; b++) {
            const shape_class *s = &shapes[binary_shapes[b]];
            for (int i = 0; i < nin; i++) {
                ndims[i] = s->ndim;
                memcpy(shp[i], s->shape, sizeof s->shape);
                lays[i] = (i == 0 || b % 2 == 0) ? s->layout : L_CONTIG;
            }
            nary_case(op, dt, nin, dts, ndims, (const int64_t(*)[SF_MAX_DIMS])shp, lays, gens, s->out_layout, s->name, b == 5);
        }
        /* broadcasting */
        static const struct { int ndim[3]; int64_t shape[3][4]; const char *label; } bc[] = {
            {{2, 2, 2}, {{3, 1}, {1, 4}, {3, 4}}, "broadcast [3,1] [1,4]"},
            {{1, 2, 1}, {{5}, {3, 5}, {1}}, "broadcast [5] [3,5]"},
            {{0, 1, 2}, {{0}, {7}, {2, 7}}, "broadcast 0-d"},
            {{3, 2, 1}, {{2, 1, 3}, {4, 1}, {3}}, "broadcast [2,1,3] [4,1]"},
            {{2, 2, 2}, {{3, 0}, {1, 0}, {3, 1}}, "broadcast empty"},
        };
        for (size_t b = 0; b < sizeof bc / sizeof bc[0]; b++) {
            for (int i = 0; i < nin; i++) {
                ndims[i] = bc[b].ndim[i];
                memset(shp[i], 0, sizeof shp[i]);
                for (int d = 0; d < ndims[i]; d++) shp[i][d] = bc[b].shape[i][d];
                lays[i] = L_CONTIG;
            }
            nary_case(op, dt, nin, dts, ndims, (const int64_t(*)[SF_MAX_DIMS])shp, lays, gens, L_CONTIG, bc[b].label, false);
        }
        /* special values: NaN/inf/-0.0 for floats, extreme values for integers */
        for (int r = 0; r < 2; r++) {
            const shape_class *s = &shapes[r ? 12 : 5];
            int sg[MAXIN];
            for (int i = 0; i < nin; i++) {
                ndims[i] = s->ndim;
                memcpy(shp[i], s->shape, sizeof s->shape);
                lays[i] = s->layout;
                if (where && i == 0) sg[i] = G_BOOL;
                else sg[i] = sf_dtype_is_float(dt) ? G_SPECIAL : (r ? G_FULL : G_SPECIAL);
            }
            nary_case(op, dt, nin, dts, ndims, (const int64_t(*)[SF_MAX_DIMS])shp, lays, sg, s->out_layout, "special values", false);
        }
        /* weak scalars and mixed dtypes */
        int64_t sh[2] = {3, 33};
        char call[256];
        if (!where && nin == 2) {
            int g1[1] = {default_gen(op, 0)};
            snprintf(call, sizeof call, "%s(x0, 3)", name);
            literal_case(op, dt, 1, dts, sh, 2, g1, call, "int scalar");
            snprintf(call, sizeof call, "%s(x0, 2.5)", name);
            literal_case(op, dt, 1, dts, sh, 2, g1, call, "float scalar");
            int g2[1] = {default_gen(op, 1)};
            snprintf(call, sizeof call, "%s(2, x0)", name);
            literal_case(op, dt, 1, dts, sh, 2, g2, call, "int scalar first");
            static const scanfuse_dtype partners[] = {SCANFUSE_BOOL, SCANFUSE_UINT8, SCANFUSE_INT8, SCANFUSE_INT32,
                                                      SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32, SCANFUSE_FLOAT64};
            for (size_t p = 0; p < sizeof partners / sizeof partners[0]; p++) {
                scanfuse_dtype u = partners[p];
                if (u == dt || accepts(op, u) != 1) continue;
                if ((info->flags & SF_F_NO_BOOL) && u == SCANFUSE_BOOL) continue;
                scanfuse_dtype md[2] = {dt, u};
                int mg[2] = {default_gen(op, 0), default_gen(op, 1)};
                int64_t mshp[2][SF_MAX_DIMS] = {{3, 33}, {33}};
                int mnd[2] = {2, 1}, ml[2] = {L_CONTIG, L_SLICED};
                nary_case(op, dt, 2, md, mnd, (const int64_t(*)[SF_MAX_DIMS])mshp, ml, mg, L_CONTIG, "mixed dtypes", false);
                md[0] = u;
                md[1] = dt;
                nary_case(op, dt, 2, md, mnd, (const int64_t(*)[SF_MAX_DIMS])mshp, ml, mg, L_CONTIG, "mixed dtypes", false);
            }
        } else if (where) {
            scanfuse_dtype wd[2] = {SCANFUSE_BOOL, dt};
            int wg[2] = {G_BOOL, G_DEFAULT};
            snprintf(call, sizeof call, "where(x0, x1, 0)");
            literal_case(op, dt, 2, wd, sh, 2, wg, call, "int scalar");
            snprintf(call, sizeof call, "where(x0, 1.5, x1)");
            literal_case(op, dt, 2, wd, sh, 2, wg, call, "float scalar");
            static const scanfuse_dtype partners[] = {SCANFUSE_BOOL, SCANFUSE_INT16, SCANFUSE_FLOAT16, SCANFUSE_FLOAT64};
            for (size_t p = 0; p < sizeof partners / sizeof partners[0]; p++) {
                if (partners[p] == dt) continue;
                scanfuse_dtype md[3] = {SCANFUSE_BOOL, dt, partners[p]};
                int mg[3] = {G_BOOL, G_DEFAULT, G_DEFAULT};
                int64_t mshp[3][SF_MAX_DIMS] = {{3, 33}, {3, 33}, {33}};
                int mnd[3] = {2, 2, 1}, ml[3] = {L_CONTIG, L_TRANSPOSED, L_CONTIG};
                nary_case(op, dt, 3, md, mnd, (const int64_t(*)[SF_MAX_DIMS])mshp, ml, mg, L_CONTIG, "mixed dtypes", false);
            }
        }
    }
}

/* Reductions. */
static void reduce_case(sf_op op, scanfuse_dtype dt, const shape_class *s, int variant,
                        scanfuse_dtype rdt, int gen, bool api) {
    bool ints = sig_has(op, "dim") && strstr(sf_op_table[op].signature, "dim:ints") != NULL;
    bool has_keep = sig_has(op, "keepdim");
    sweep_case c;
    case_init(&c, op, dt, s->name);
    add_in(&c, dt, s->ndim, s->shape, gen, s->layout);
    c.out_layout = s->ndim > 2 || variant == 0 ? L_CONTIG : s->out_layout;
    char attrs[128];
    size_t n = 0;
    attrs[0] = '\0';
    unsigned mask = 0;
    switch (variant) {
    case 0: /* every dim */
        for (int d = 0; d < s->ndim; d++) mask |= 1u << d;
        break;
    case 1:
        sw_app(attrs, sizeof attrs, &n, ints ? "dim=[-1]" : "dim=-1");
        mask = 1u << (s->ndim - 1);
        break;
    case 2:
        sw_app(attrs, sizeof attrs, &n, "dim=0");
        if (has_keep) sw_app(attrs, sizeof attrs, &n, ", keepdim=true");
        mask = 1u;
        break;
    default:
        sw_app(attrs, sizeof attrs, &n, "dim=[0, -1]");
        if (has_keep && variant == 4) sw_app(attrs, sizeof attrs, &n, ", keepdim=true");
        mask = 1u | (1u << (s->ndim - 1));
        break;
    }
    if (rdt != SCANFUSE_DTYPE_NONE) sw_app(attrs, sizeof attrs, &n, "%sdtype=%s", n ? ", " : "", scanfuse_dtype_name(rdt));
    set_call(&c, attrs);
    c.tol = reduction_tol(op);
    c.mag = MAG_REDUCE;
    c.redmask = mask;
    c.mean = is_op(op, "mean");
    c.scan_dtype = rdt;
    c.api = api;
    /* reductions without an identity reject reducing a dim of size 0 */
    if (c.tol == T_EXACT) {
        bool empty = false;
        for (int d = 0; d < s->ndim; d++)
            if ((mask & (1u << d)) && s->shape[d] == 0) empty = true;
        if (empty) c.expect = EXP_SHAPE;
    }
    run_case(&c);
}

static void gen_reduction(sf_op op) {
    bool ints = strstr(sf_op_table[op].signature, "dim:ints") != NULL;
    bool has_dtype = sig_has(op, "dtype");
    for (int di = 0; di < NDT; di++) {
        scanfuse_dtype dt = all_dtypes[di];
        if (accepts(op, dt) == 0) {
            reject_case(op, dt);
            continue;
        }
        int gen = default_gen(op, 0);
        for (int k = 0; k < NSHAPES; k++) {
            const shape_class *s = &shapes[k];
            reduce_case(op, dt, s, 0, SCANFUSE_DTYPE_NONE, gen, k == 6);
            if (s->ndim >= 1) reduce_case(op, dt, s, 1, SCANFUSE_DTYPE_NONE, gen, false);
            if (s->ndim >= 2) reduce_case(op, dt, s, 2, SCANFUSE_DTYPE_NONE, gen, k == 7);
            if (s->ndim >= 3 && ints) reduce_case(op, dt, s, 3 + k % 2, SCANFUSE_DTYPE_NONE, gen, false);
        }
        if (has_dtype)
            for (int ri = 0; ri < NDT; ri++) {
                if (accepts(op, all_dtypes[ri]) != 1) continue;
                reduce_case(op, dt, &shapes[6], 1, all_dtypes[ri], gen, ri == NDT - 1);
                reduce_case(op, dt, &shapes[5], 0, all_dtypes[ri], gen, false);
            }
        int sgen = sf_dtype_is_float(dt) ? G_SPECIAL : G_FULL;
        for (int v = 0; v < 3; v++) {
            reduce_case(op, dt, &shapes[6], v, SCANFUSE_DTYPE_NONE, sgen, false);
            reduce_case(op, dt, &shapes[12], v, SCANFUSE_DTYPE_NONE, sgen, false);
        }
        if (!sf_dtype_is_float(dt)) reduce_case(op, dt, &shapes[5], 0, SCANFUSE_DTYPE_NONE, G_SPECIAL, false);
    }
    if (is_op(op, "sum")) {
        static const shape_class big = {"len1000003", 1, {1000003}, L_CONTIG, L_CONTIG};
        reduce_case(op, SCANFUSE_FLOAT32, &big, 0, SCANFUSE_DTYPE_NONE, G_DEFAULT, false);
    }
}

/* Shape ops: a list of (input shape, attributes) per op. */
typedef struct shape_spec {
    int ndim;
    int64_t shape[5];
    int layout;
    const char *attrs;
    const char *int_attrs; /* for integer/bool inputs, if different */
} shape_spec;

static void gen_shape_op(sf_op op) {
    static const shape_spec expand[] = {
        {2, {3, 1}, L_CONTIG, "size=[3, 5]", NULL}, {1, {1}, L_CONTIG, "size=[4, 7]", NULL},
        {1, {7}, L_SLICED, "size=[2, 7]", NULL},    {0, {0}, L_CONTIG, "size=[3]", NULL},
        {2, {2, 1}, L_CONTIG, "size=[-1, 4]", NULL}, {1, {0}, L_CONTIG, "size=[2, 0]", NULL},
        {2, {3, 1}, L_TRANSPOSED, "size=[2, 3, 6]", NULL}, {2, {5, 33}, L_BROADCAST, "size=[5, 33]", NULL},
    };
    static const shape_spec reshape[] = {
        {2, {3, 33}, L_CONTIG, "shape=[99]", NULL},   {3, {2, 3, 7}, L_CONTIG, "shape=[6, -1]", NULL},
        {0, {0}, L_CONTIG, "shape=[1, 1]", NULL},     {3, {3, 0, 4}, L_CONTIG, "shape=[0, 7]", NULL},
        {1, {7}, L_CONTIG, "shape=[7, 1]", NULL},     {2, {33, 7}, L_TRANSPOSED, "shape=[231]", NULL},
        {2, {9, 17}, L_SLICED, "shape=[17, 9]", NULL}, {1, {1}, L_CONTIG, "shape=[]", NULL},
    };
    static const shape_spec permute[] = {
        {3, {2, 3, 7}, L_CONTIG, "dims=[2, 0, 1]", NULL}, {2, {3, 33}, L_CONTIG, "dims=[1, 0]", NULL},
        {5, {2, 1, 3, 1, 5}, L_CONTIG, "dims=[4, 3, 2, 1, 0]", NULL}, {2, {4, 5}, L_CONTIG, "dims=[-1, 0]", NULL},
        {0, {0}, L_CONTIG, "dims=[]", NULL}, {2, {33, 7}, L_TRANSPOSED, "dims=[1, 0]", NULL},
        {3, {3, 0, 4}, L_CONTIG, "dims=[2, 1, 0]", NULL},
    };
    static const shape_spec slice[] = {
        {1, {33}, L_CONTIG, "dim=0, start=3, end=20, step=2", NULL},
        {2, {3, 33}, L_CONTIG, "dim=-1, start=-10", NULL},
        {2, {3, 33}, L_CONTIG, "dim=0, start=1, end=100", NULL},
        {1, {33}, L_CONTIG, "dim=0, start=20, end=5", NULL},
        {1, {1000}, L_CONTIG, "dim=0, start=1, end=999, step=3", NULL},
        {2, {33, 7}, L_TRANSPOSED, "dim=1, start=2, end=6", NULL},
        {1, {500}, L_SLICED, "dim=0, end=-7", NULL},
        {3, {2, 3, 7}, L_CONTIG, "dim=1, start=-100, end=2", NULL},
    };
    static const shape_spec pad[] = {
        {2, {3, 7}, L_CONTIG, "pad=[1, 2], value=1.5", "pad=[1, 2], value=2"},
        {2, {3, 7}, L_CONTIG, "pad=[1, 1, 2, 0]", NULL},
        {2, {3, 7}, L_CONTIG, "pad=[-1, 2]", NULL},
        {1, {7}, L_CONTIG, "pad=[0, 0]", NULL},
        {3, {2, 3, 4}, L_TRANSPOSED, "pad=[1, 1, 1, 1, 1, 1], value=-3", NULL},
        {1, {0}, L_CONTIG, "pad=[2, 1], value=1", NULL},
        {1, {500}, L_SLICED, "pad=[3, -4]", NULL},
    };
    static const shape_spec tri[] = {
        {2, {5, 7}, L_CONTIG, "diagonal=0", NULL},  {2, {5, 7}, L_CONTIG, "diagonal=1", NULL},
        {2, {5, 7}, L_CONTIG, "diagonal=-2", NULL}, {3, {2, 4, 4}, L_CONTIG, "", NULL},
        {2, {3, 0}, L_CONTIG, "", NULL},            {2, {7, 5}, L_TRANSPOSED, "diagonal=2", NULL},
        {2, {33, 33}, L_SLICED, "diagonal=-40", NULL},
    };
    const shape_spec *list = NULL;
    size_t n = 0;
#define PICK(arr) do { list = arr; n = sizeof arr / sizeof arr[0]; } while (0)
    if (is_op(op, "expand")) PICK(expand);
    else if (is_op(op, "reshape")) PICK(reshape);
    else if (is_op(op, "permute")) PICK(permute);
    else if (is_op(op, "slice")) PICK(slice);
    else if (is_op(op, "pad")) PICK(pad);
    else if (is_op(op, "triu") || is_op(op, "tril")) PICK(tri);
#undef PICK
    if (!list) return; /* unknown shape op: reported as having no case */
    for (int di = 0; di < NDT; di++) {
        scanfuse_dtype dt = all_dtypes[di];
        for (size_t i = 0; i < n; i++) {
            sweep_case c;
            case_init(&c, op, dt, "shape op");
            int gen = (i % 3 == 2) ? (sf_dtype_is_float(dt) ? G_SPECIAL : G_FULL) : G_DEFAULT;
            add_in(&c, dt, list[i].ndim, list[i].shape, gen, list[i].layout);
            set_call(&c, (!sf_dtype_is_float(dt) && list[i].int_attrs) ? list[i].int_attrs : list[i].attrs);
            c.tol = T_EXACT;
            c.api = i == 0;
            c.out_layout = (i == 1 && list[i].ndim >= 2) ? L_TRANSPOSED : L_CONTIG;
            run_case(&c);
        }
    }
}

static void creation_case(sf_op op, scanfuse_dtype acct, const char *attrs, int expect, bool api) {
    sweep_case c;
    case_init(&c, op, acct, "creation");
    set_call(&c, attrs);
    c.tol = T_EXACT;
    c.expect = expect;
    c.api = api;
    run_case(&c);
}

static void gen_creation(sf_op op) {
    char a[160];
    if (is_op(op, "scalar")) {
        creation_case(op, SCANFUSE_FLOAT32, "value=2.5", EXP_OK, true);
        creation_case(op, SCANFUSE_INT64, "value=-3", EXP_OK, true);
        creation_case(op, SCANFUSE_BOOL, "value=true", EXP_OK, false);
        return;
    }
    bool known = is_op(op, "full") || is_op(op, "arange") || is_op(op, "iota");
    if (!known) return;
    for (int di = 0; di < NDT; di++) {
        scanfuse_dtype dt = all_dtypes[di];
        const char *nm = scanfuse_dtype_name(dt);
        int exp = accepts(op, dt) == 1 ? EXP_OK : EXP_ANY;
        if (is_op(op, "full")) {
            const char *v = sf_dtype_is_float(dt) ? "2.5" : dt == SCANFUSE_BOOL ? "true" : "7";
            snprintf(a, sizeof a, "size=[3, 4], fill_value=%s, dtype=%s", v, nm);
            creation_case(op, dt, a, exp, true);
            snprintf(a, sizeof a, "size=[], fill_value=-2.5, dtype=%s", nm);
            creation_case(op, dt, a, exp, false);
            snprintf(a, sizeof a, "size=[0, 3], fill_value=1, dtype=%s", nm);
            creation_case(op, dt, a, exp, false);
            snprintf(a, sizeof a, "size=[2, 1, 3, 1, 5], fill_value=-inf, dtype=%s", nm);
            if (sf_dtype_is_float(dt)) creation_case(op, dt, a, exp, false);
            snprintf(a, sizeof a, "size=[1000], fill_value=nan, dtype=%s", nm);
            if (sf_dtype_is_float(dt)) creation_case(op, dt, a, exp, false);
        } else if (is_op(op, "arange")) {
            snprintf(a, sizeof a, "start=0, end=33, step=1, dtype=%s", nm);
            creation_case(op, dt, a, exp, true);
            snprintf(a, sizeof a, "start=100, end=-3, step=-7, dtype=%s", nm);
            if (dt != SCANFUSE_UINT8) creation_case(op, dt, a, exp, false);
            snprintf(a, sizeof a, "start=5, end=5, dtype=%s", nm);
            creation_case(op, dt, a, exp, false);
            if (sf_dtype_is_float(dt)) {
                snprintf(a, sizeof a, "start=-1.5, end=10, step=0.25, dtype=%s", nm);
                creation_case(op, dt, a, exp, false);
                snprintf(a, sizeof a, "start=0, end=1000, step=1, dtype=%s", nm);
                creation_case(op, dt, a, exp, false);
            }
        } else {
            snprintf(a, sizeof a, "end=33, dtype=%s", nm);
            creation_case(op, dt, a, exp, true);
            snprintf(a, sizeof a, "end=1, dtype=%s", nm);
            creation_case(op, dt, a, exp, false);
            snprintf(a, sizeof a, "end=0, dtype=%s", nm);
            creation_case(op, dt, a, exp, false);
        }
    }
    /* default dtypes */
    if (is_op(op, "full")) {
        creation_case(op, SCANFUSE_INT64, "size=[2, 3], fill_value=2", EXP_OK, false);
        creation_case(op, SCANFUSE_FLOAT32, "size=[2, 3], fill_value=2.5", EXP_OK, false);
        creation_case(op, SCANFUSE_BOOL, "size=[2, 3], fill_value=true", EXP_OK, false);
    } else if (is_op(op, "arange")) {
        creation_case(op, SCANFUSE_INT64, "start=5", EXP_OK, true);
        creation_case(op, SCANFUSE_FLOAT32, "start=1.5, end=10, step=0.5", EXP_OK, false);
        creation_case(op, SCANFUSE_INT64, "start=10, end=0, step=-3", EXP_OK, false);
    } else {
        creation_case(op, SCANFUSE_INT64, "end=7", EXP_OK, false);
    }
}

static void gen_matmul(sf_op op) {
    static const struct { int na, nb; int64_t a[4], b[4]; int la, lb; } mm[] = {
        {2, 2, {3, 7}, {7, 5}, L_CONTIG, L_CONTIG},
        {1, 2, {7}, {7, 4}, L_CONTIG, L_CONTIG},
        {2, 1, {3, 7}, {7}, L_CONTIG, L_SLICED},
        {1, 1, {33}, {33}, L_CONTIG, L_CONTIG},
        {3, 2, {2, 3, 7}, {7, 5}, L_CONTIG, L_TRANSPOSED},
        {3, 3, {2, 3, 4}, {2, 4, 5}, L_TRANSPOSED, L_CONTIG},
        {4, 3, {2, 1, 3, 4}, {3, 4, 2}, L_CONTIG, L_CONTIG},
        {2, 2, {3, 0}, {0, 4}, L_CONTIG, L_CONTIG},
        {2, 2, {33, 33}, {33, 33}, L_TRANSPOSED, L_SLICED},
        {2, 2, {1, 1000}, {1000, 2}, L_CONTIG, L_CONTIG},
    };
    for (int di = 0; di < NDT; di++) {
        scanfuse_dtype dt = all_dtypes[di];
        if (accepts(op, dt) == 0) {
            reject_case(op, dt);
            continue;
        }
        for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++)
            for (int sp = 0; sp < (i == 0 || i == 8 ? 2 : 1); sp++) {
                sweep_case c;
                case_init(&c, op, dt, sp ? "special values" : "matmul");
                int g = sp ? (sf_dtype_is_float(dt) ? G_SPECIAL : G_FULL) : G_DEFAULT;
                add_in(&c, dt, mm[i].na, mm[i].a, g, mm[i].la);
                add_in(&c, dt, mm[i].nb, mm[i].b, g, mm[i].lb);
                set_call(&c, "");
                c.tol = T_MATMUL;
                c.api = i == 4 && !sp;
                c.out_layout = i == 0 ? L_TRANSPOSED : L_CONTIG;
                run_case(&c);
            }
    }
    /* mixed dtypes are rejected */
    sweep_case c;
    case_init(&c, op, SCANFUSE_FLOAT32, "mixed dtypes");
    int64_t a[2] = {3, 4}, b[2] = {4, 2};
    add_in(&c, SCANFUSE_FLOAT32, 2, a, G_DEFAULT, L_CONTIG);
    add_in(&c, SCANFUSE_FLOAT16, 2, b, G_DEFAULT, L_CONTIG);
    set_call(&c, "");
    c.expect = EXP_DTYPE;
    run_case(&c);
}

/* ---------------------------------------------------------------------------------- */
/* Index and sort ops                                                                 */
/* ---------------------------------------------------------------------------------- */

/* One tensor argument of an index-op case. */
typedef struct ix_arg {
    int ndim;
    int64_t shape[4];
    int layout;
} ix_arg;

static const scanfuse_dtype index_dtypes[] = {SCANFUSE_INT64, SCANFUSE_INT32, SCANFUSE_INT16,
                                              SCANFUSE_UINT8, SCANFUSE_INT8};

/* A case whose inputs are given one by one; `call` NULL means op(x0, ..., attrs). */
static void ix_case(sf_op op, scanfuse_dtype acct, const char *label, int nin,
                    const scanfuse_dtype *dts, const ix_arg *args, const int *gens,
                    const int64_t *his, const char *attrs, const char *call, bool api,
                    int out_layout, int expect) {
    sweep_case c;
    case_init(&c, op, acct, label);
    for (int i = 0; i < nin; i++) {
        add_in(&c, dts[i], args[i].ndim, args[i].shape, gens[i], args[i].layout);
        c.in[i].hi = his ? his[i] : 0;
    }
    if (call) {
        snprintf(c.call, sizeof c.call, "%s", call);
        c.literal = true;
    } else {
        set_call(&c, attrs);
    }
    c.tol = T_EXACT; /* copies, positions, counts, and scatter-add's double sums */
    c.api = api && !call;
    c.out_layout = out_layout;
    c.expect = expect;
    run_case(&c);
}

/* The size of x along dim (0-d: 1). */
static int64_t ix_size(const ix_arg *x, int dim) {
    if (x->ndim == 0) return 1;
    return x->shape[dim < 0 ? dim + x->ndim : dim];
}

/* topk and argsort: keys of every dtype, shapes, flags, special values and ties. */
static void gen_sort_op(sf_op op, bool topk) {
    static const struct {
        ix_arg x;
        const char *topk_attrs, *sort_attrs;
        int out_layout;
    } cs[] = {
        {{0, {0}, L_CONTIG}, "k=1", "", L_CONTIG},
        {{0, {0}, L_CONTIG}, "k=1, dim=0, largest=false", "dim=0, descending=true", L_CONTIG},
        {{1, {1}, L_CONTIG}, "k=1", "stable=true", L_CONTIG},
        {{1, {7}, L_CONTIG}, "k=3", "", L_CONTIG},
        {{1, {7}, L_CONTIG}, "k=7, largest=false", "descending=true", L_CONTIG},
        {{1, {1000}, L_CONTIG}, "k=8", "stable=true", L_CONTIG},
        {{1, {1000}, L_CONTIG}, "k=600, largest=false", "descending=true, stable=true", L_CONTIG},
        {{1, {1000}, L_CONTIG}, "k=0", "dim=-1", L_CONTIG},
        {{2, {3, 33}, L_CONTIG}, "k=2, dim=0", "dim=0", L_TRANSPOSED},
        {{2, {3, 33}, L_CONTIG}, "k=5, dim=-1, sorted=false", "dim=1, descending=true", L_CONTIG},
        {{2, {3, 33}, L_CONTIG}, "k=33, dim=1, largest=false", "dim=-2, descending=true", L_SLICED},
        {{3, {2, 3, 7}, L_CONTIG}, "k=2, dim=1", "dim=1", L_CONTIG},
        {{3, {3, 0, 4}, L_CONTIG}, "k=3, dim=2", "dim=2", L_CONTIG},
        {{3, {3, 0, 4}, L_CONTIG}, "k=0, dim=1", "dim=1, descending=true", L_CONTIG},
        {{2, {33, 7}, L_TRANSPOSED}, "k=4, dim=0", "dim=0, stable=true", L_CONTIG},
        {{1, {500}, L_SLICED}, "k=20", "descending=true", L_CONTIG},
        {{2, {5, 33}, L_BROADCAST}, "k=3", "", L_CONTIG},
        {{2, {7, 9}, L_MISALIGNED}, "k=4, dim=0, largest=false", "dim=0", L_CONTIG},
        {{2, {64, 256}, L_CONTIG}, "k=8, dim=1", "dim=1, descending=true", L_CONTIG},
    };
    const int ncs = (int)(sizeof cs / sizeof cs[0]);
    for (int di = 0; di < NDT; di++) {
        scanfuse_dtype dt = all_dtypes[di];
        if (accepts(op, dt) == 0) {
            ix_arg x = {2, {3, 7}, L_CONTIG};
            ix_case(op, dt, "rejected dtype", 1, &dt, &x, (int[]){G_DEFAULT}, NULL,
                    topk ? "k=1" : "", NULL, false, L_CONTIG, EXP_DTYPE);
            continue;
        }
        bool fl = sf_dtype_is_float(dt);
        for (int i = 0; i < ncs; i++) {
            const char *attrs = topk ? cs[i].topk_attrs : cs[i].sort_attrs;
            /* plain values, then values with many ties (and NaN, +-inf, -0.0) */
            int g0 = G_DEFAULT, g1 = fl ? G_TIES : (dt == SCANFUSE_BOOL ? G_BOOL : G_INDEX);
            int64_t hi[1] = {3};
            ix_case(op, dt, "sort", 1, &dt, &cs[i].x, &g0, hi, attrs, NULL, i == 9, cs[i].out_layout,
                    EXP_OK);
            ix_case(op, dt, "ties", 1, &dt, &cs[i].x, &g1, hi, attrs, NULL, false, L_CONTIG, EXP_OK);
            if (i == 5 || i == 9) {
                int g2 = fl ? G_SPECIAL : G_FULL;
                ix_case(op, dt, "special values", 1, &dt, &cs[i].x, &g2, hi, attrs, NULL, false,
                        L_CONTIG, EXP_OK);
            }
        }
        /* argsort with a stated key range: a counting sort when the range is small, a
         * merge sort with the range checked otherwise */
        if (!topk && !fl) {
            static const struct { ix_arg x; int64_t hi; const char *attrs; } rg[] = {
                {{1, {1000}, L_CONTIG}, 5, "range=5"},
                {{1, {1000}, L_CONTIG}, 2, "range=2, descending=true, stable=true"},
                {{2, {3, 33}, L_TRANSPOSED}, 7, "dim=0, range=7"},
                {{2, {3, 33}, L_CONTIG}, 33, "dim=1, range=33, descending=true"},
                {{1, {7}, L_CONTIG}, 100, "range=100000"},
                {{3, {3, 0, 4}, L_CONTIG}, 1, "dim=1, range=1"},
            };
            for (size_t i = 0; i < sizeof rg / sizeof rg[0]; i++) {
                int g = dt == SCANFUSE_BOOL ? G_BOOL : G_INDEX;
                int64_t hi = dt == SCANFUSE_INT8 && rg[i].hi > 127 ? 127 : rg[i].hi;
                if (dt == SCANFUSE_BOOL && rg[i].hi < 2) continue;
                ix_case(op, dt, "range", 1, &dt, &rg[i].x, &g, &hi, rg[i].attrs, NULL, i == 0,
                        L_CONTIG, EXP_OK);
            }
        }
    }
    if (!topk) {
        /* a float key range is rejected */
        ix_arg x = {1, {7}, L_CONTIG};
        ix_case(op, SCANFUSE_FLOAT32, "range of floats", 1, (scanfuse_dtype[]){SCANFUSE_FLOAT32}, &x,
                (int[]){G_DEFAULT}, NULL, "range=4", NULL, false, L_CONTIG, EXP_DTYPE);
        /* keys known to be small (topk indices, argmax) sort by counting: routing-like
         * programs, stable ascending and descending */
        static const char *const progs[] = {
            "input x0: float32[128, 16]\nv, e = topk(x0, 2, dim=1)\nf = reshape(e, [256])\n"
            "y0 = argsort(f, stable=true)\ny1 = argsort(f, descending=true)\noutput y0, y1\n",
            "input x0: bfloat16[300, 64]\nv, e = topk(x0, 8, dim=-1, largest=false)\n"
            "y0 = argsort(e, dim=0, stable=true)\ny1 = argsort(permute(e, [1, 0]))\noutput y0, y1\n",
            "input x0: float16[1000, 4]\nm = argmax(x0, dim=1)\ny0 = argsort(m, stable=true)\n"
            "y1 = argsort(slice(m, 0, 5, 600, 3), descending=true)\noutput y0, y1\n",
        };
        for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
            sweep_case c;
            case_init(&c, op, SCANFUSE_INT64, "counting sort");
            c.raw_text = progs[i];
            c.tol = T_EXACT;
            run_case(&c);
        }
    }
}

/* one_hot and bincount: integer ids in range. */
static void gen_ids_op(sf_op op, bool oh) {
    static const struct { ix_arg x; int64_t c; } cs[] = {
        {{0, {0}, L_CONTIG}, 4},      {{1, {7}, L_CONTIG}, 5},       {{1, {1}, L_CONTIG}, 1},
        {{1, {1000}, L_CONTIG}, 13},  {{1, {0}, L_CONTIG}, 3},       {{1, {0}, L_CONTIG}, 0},
        {{1, {500}, L_SLICED}, 9},    {{2, {3, 33}, L_CONTIG}, 3},   {{3, {3, 0, 4}, L_CONTIG}, 2},
        {{2, {33, 7}, L_TRANSPOSED}, 7}, {{2, {5, 33}, L_BROADCAST}, 6}, {{1, {1000}, L_CONTIG}, 300},
    };
    for (int di = 0; di < NDT; di++) {
        scanfuse_dtype dt = all_dtypes[di];
        ix_arg x1 = {1, {7}, L_CONTIG};
        if (!sf_dtype_is_intlike(dt) || dt == SCANFUSE_BOOL) {
            ix_case(op, dt, "rejected dtype", 1, &dt, &x1, (int[]){G_DEFAULT}, NULL,
                    oh ? "num_classes=3" : "minlength=3", NULL, false, L_CONTIG, EXP_DTYPE);
            continue;
        }
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            if (!oh && cs[i].x.ndim != 1) continue; /* bincount: 1-d ids */
            int64_t hi = cs[i].c;
            if (hi - 1 > sf_int_max(dt)) hi = sf_int_max(dt) + 1;
            if (hi == 0 && cs[i].x.shape[0] != 0) continue;
            char attrs[64];
            snprintf(attrs, sizeof attrs, oh ? "num_classes=%lld" : "minlength=%lld", (long long)cs[i].c);
            ix_case(op, dt, "ids", 1, &dt, &cs[i].x, (int[]){G_INDEX}, &hi, attrs, NULL, i == 1,
                    i == 7 ? L_TRANSPOSED : L_CONTIG, EXP_OK);
        }
    }
    if (!oh) { /* bincount takes 1-d ids */
        ix_arg x = {2, {3, 4}, L_CONTIG};
        ix_case(op, SCANFUSE_INT64, "2-d ids", 1, (scanfuse_dtype[]){SCANFUSE_INT64}, &x,
                (int[]){G_INDEX}, (int64_t[]){3}, "minlength=3", NULL, false, L_CONTIG, EXP_SHAPE);
    }
}

/* gather, take_along_dim, index_select: x of every dtype, indices of every integer
 * dtype, in range. */
static void gen_gather_op(sf_op op) {
    typedef struct { ix_arg x, ix; int dim; const char *attrs; } gcase;
    static const gcase gather[] = {
        {{2, {3, 33}, L_CONTIG}, {2, {3, 5}, L_CONTIG}, 1, "dim=1"},
        {{2, {3, 33}, L_CONTIG}, {2, {2, 33}, L_TRANSPOSED}, 0, "dim=0"},
        {{2, {3, 33}, L_CONTIG}, {2, {1, 40}, L_CONTIG}, 1, "dim=-1"},
        {{0, {0}, L_CONTIG}, {0, {0}, L_CONTIG}, 0, "dim=0"},
        {{3, {2, 3, 7}, L_CONTIG}, {3, {2, 2, 7}, L_CONTIG}, 1, "dim=1"},
        {{3, {2, 3, 7}, L_CONTIG}, {3, {1, 3, 4}, L_SLICED}, 2, "dim=2"},
        {{2, {33, 7}, L_TRANSPOSED}, {2, {10, 7}, L_CONTIG}, 0, "dim=0"},
        {{2, {5, 33}, L_BROADCAST}, {2, {5, 4}, L_CONTIG}, 1, "dim=1"},
        {{2, {3, 33}, L_CONTIG}, {2, {3, 0}, L_CONTIG}, 1, "dim=1"},
        {{2, {9, 17}, L_SLICED}, {2, {4, 17}, L_SLICED}, 0, "dim=0"},
        {{2, {7, 9}, L_MISALIGNED}, {2, {7, 20}, L_MISALIGNED}, 1, "dim=1"},
    };
    static const gcase take[] = {
        {{2, {3, 33}, L_CONTIG}, {2, {3, 5}, L_CONTIG}, 1, "dim=1"},
        {{2, {3, 7}, L_CONTIG}, {2, {1, 4}, L_CONTIG}, 1, "dim=1"},
        {{2, {1, 7}, L_CONTIG}, {2, {3, 2}, L_TRANSPOSED}, 1, "dim=-1"},
        {{3, {2, 3, 7}, L_CONTIG}, {3, {2, 1, 7}, L_CONTIG}, 1, "dim=1"},
        {{2, {3, 7}, L_TRANSPOSED}, {2, {2, 5}, L_CONTIG}, -1, ""},
        {{0, {0}, L_CONTIG}, {0, {0}, L_CONTIG}, 0, "dim=0"},
        {{0, {0}, L_CONTIG}, {1, {3}, L_CONTIG}, -1, ""},
        {{2, {3, 33}, L_SLICED}, {2, {3, 33}, L_TRANSPOSED}, 0, "dim=0"},
        {{2, {5, 33}, L_BROADCAST}, {2, {5, 0}, L_CONTIG}, 1, "dim=1"},
    };
    static const gcase sel[] = {
        {{2, {3, 33}, L_CONTIG}, {1, {10}, L_CONTIG}, 1, "dim=1"},
        {{2, {3, 33}, L_CONTIG}, {1, {5}, L_SLICED}, 0, "dim=0"},
        {{2, {3, 33}, L_CONTIG}, {0, {0}, L_CONTIG}, 1, "dim=-1"},
        {{0, {0}, L_CONTIG}, {1, {1}, L_CONTIG}, 0, "dim=0"},
        {{0, {0}, L_CONTIG}, {0, {0}, L_CONTIG}, 0, "dim=-1"},
        {{2, {1000, 7}, L_CONTIG}, {1, {50}, L_CONTIG}, 0, "dim=0"},
        {{3, {2, 3, 7}, L_CONTIG}, {1, {0}, L_CONTIG}, 2, "dim=2"},
        {{2, {33, 7}, L_TRANSPOSED}, {1, {20}, L_CONTIG}, 0, "dim=0"},
        {{2, {5, 33}, L_BROADCAST}, {1, {40}, L_CONTIG}, 0, "dim=0"},
        {{3, {4, 5, 6}, L_TRANSPOSED}, {1, {9}, L_CONTIG}, 1, "dim=1"},
    };
    const gcase *list;
    size_t n;
    if (is_op(op, "gather")) { list = gather; n = sizeof gather / sizeof gather[0]; }
    else if (is_op(op, "take_along_dim")) { list = take; n = sizeof take / sizeof take[0]; }
    else { list = sel; n = sizeof sel / sizeof sel[0]; }
    for (int di = 0; di < NDT; di++) {
        scanfuse_dtype dt = all_dtypes[di];
        for (size_t i = 0; i < n; i++) {
            const gcase *g = &list[i];
            scanfuse_dtype it = index_dtypes[((size_t)di + i) % 5];
            int64_t hi = g->dim < 0 ? sw_numel(g->x.ndim, g->x.shape) : ix_size(&g->x, g->dim);
            if (hi - 1 > sf_int_max(it)) it = SCANFUSE_INT64;
            scanfuse_dtype dts[2] = {dt, it};
            ix_arg args[2] = {g->x, g->ix};
            int gens[2] = {sf_dtype_is_float(dt) && i % 3 == 2 ? G_SPECIAL : G_DEFAULT, G_INDEX};
            if (!sf_dtype_is_float(dt) && i % 3 == 2) gens[0] = G_FULL;
            int64_t his[2] = {0, hi};
            ix_case(op, dt, "gather", 2, dts, args, gens, his, g->attrs, NULL, i == 0,
                    i == 1 ? L_TRANSPOSED : L_CONTIG, EXP_OK);
        }
        /* indices must be integers */
        ix_arg args[2] = {{2, {3, 7}, L_CONTIG}, {2, {3, 7}, L_CONTIG}};
        if (list == sel) args[1] = (ix_arg){1, {4}, L_CONTIG};
        scanfuse_dtype bad = di % 2 ? SCANFUSE_FLOAT32 : SCANFUSE_BOOL;
        ix_case(op, dt, "float index", 2, (scanfuse_dtype[]){dt, bad}, args,
                (int[]){G_DEFAULT, G_BOOL}, NULL, "dim=1", NULL, false, L_CONTIG, EXP_DTYPE);
    }
}

/* scatter: plain (the last write wins) and reduce=add, tensor and literal sources. */
static void gen_scatter_op(sf_op op) {
    typedef struct { ix_arg x, ix, src; int dim; } scase;
    static const scase cs[] = {
        {{2, {3, 33}, L_CONTIG}, {2, {3, 5}, L_CONTIG}, {2, {3, 5}, L_CONTIG}, 1},
        {{2, {3, 33}, L_CONTIG}, {2, {2, 5}, L_TRANSPOSED}, {2, {3, 8}, L_CONTIG}, 0},
        {{2, {5, 4}, L_CONTIG}, {2, {5, 4}, L_CONTIG}, {2, {5, 4}, L_SLICED}, 0},
        {{0, {0}, L_CONTIG}, {0, {0}, L_CONTIG}, {0, {0}, L_CONTIG}, 0},
        {{3, {2, 3, 7}, L_CONTIG}, {3, {2, 3, 2}, L_CONTIG}, {3, {2, 3, 7}, L_CONTIG}, 2},
        {{2, {3, 33}, L_CONTIG}, {2, {3, 0}, L_CONTIG}, {2, {3, 1}, L_CONTIG}, 1},
        {{2, {33, 7}, L_TRANSPOSED}, {2, {40, 7}, L_CONTIG}, {2, {40, 7}, L_CONTIG}, 0},
        {{2, {5, 33}, L_BROADCAST}, {2, {5, 33}, L_CONTIG}, {2, {5, 33}, L_BROADCAST}, 1},
        {{1, {1000}, L_CONTIG}, {1, {3000}, L_CONTIG}, {1, {3000}, L_CONTIG}, 0},
    };
    for (int di = 0; di < NDT; di++) {
        scanfuse_dtype dt = all_dtypes[di];
        bool fl = sf_dtype_is_float(dt);
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            const scase *c = &cs[i];
            scanfuse_dtype it = index_dtypes[((size_t)di + i) % 5];
            int64_t hi = ix_size(&c->x, c->dim);
            if (hi - 1 > sf_int_max(it)) it = SCANFUSE_INT64;
            scanfuse_dtype dts[3] = {dt, it, dt};
            ix_arg args[3] = {c->x, c->ix, c->src};
            int gv = i % 3 == 2 ? (fl ? G_SPECIAL : G_FULL) : G_DEFAULT;
            int gens[3] = {gv, G_INDEX, gv};
            int64_t his[3] = {0, hi, 0};
            char attrs[64];
            snprintf(attrs, sizeof attrs, "dim=%d", c->dim);
            ix_case(op, dt, "scatter", 3, dts, args, gens, his, attrs, NULL, i == 0, L_CONTIG, EXP_OK);
            snprintf(attrs, sizeof attrs, "dim=%d, reduce=%s", c->dim, i % 2 ? "\"add\"" : "add");
            ix_case(op, dt, "scatter add", 3, dts, args, gens, his, attrs, NULL, i == 1,
                    i == 0 ? L_TRANSPOSED : L_CONTIG, EXP_OK);
            /* a number as the source, converted straight to x's dtype */
            if (i == 0 || i == 4 || i == 8) {
                const char *lit = dt == SCANFUSE_BOOL ? "true" : fl ? "-2.75" : "3";
                char call[160];
                snprintf(call, sizeof call, "scatter(x0, %d, x1, %s)", c->dim, lit);
                ix_case(op, dt, "literal src", 2, dts, args, gens, his, NULL, call, false, L_CONTIG, EXP_OK);
                snprintf(call, sizeof call, "scatter(x0, x1, src=%s, dim=%d, reduce=add)",
                         dt == SCANFUSE_BOOL ? "1" : "2.5", c->dim);
                ix_case(op, dt, "literal src add", 2, dts, args, gens, his, NULL, call, false,
                        L_CONTIG, EXP_OK);
            }
        }
        /* src must have x's dtype */
        scanfuse_dtype other = dt == SCANFUSE_FLOAT32 ? SCANFUSE_FLOAT64 : SCANFUSE_FLOAT32;
        ix_arg args[3] = {cs[0].x, cs[0].ix, cs[0].src};
        ix_case(op, dt, "src dtype", 3, (scanfuse_dtype[]){dt, SCANFUSE_INT64, other}, args,
                (int[]){G_DEFAULT, G_INDEX, G_DEFAULT}, (int64_t[]){0, 3, 0}, "dim=1", NULL, false,
                L_CONTIG, EXP_DTYPE);
    }
}

static void gen_index(sf_op op) {
    if (is_op(op, "topk")) gen_sort_op(op, true);
    else if (is_op(op, "argsort")) gen_sort_op(op, false);
    else if (is_op(op, "one_hot")) gen_ids_op(op, true);
    else if (is_op(op, "bincount")) gen_ids_op(op, false);
    else if (is_op(op, "gather") || is_op(op, "take_along_dim") || is_op(op, "index_select"))
        gen_gather_op(op);
    else if (is_op(op, "scatter")) gen_scatter_op(op);
    /* an index op no generator knows is reported as having no case */
}

/* The counting sort written as IR (histogram, exclusive cumsum, ranks within each
 * bucket, scatter: how a segmenter can lower argsort of small-range keys) must equal
 * argsort's stable order, on the CPU and on the reference. */
static const char *const counting_ir_text =
    "input logits: float32[512, 16]\n"
    "v, e = topk(logits, 2, dim=1)\n"
    "k = reshape(e, [1024])\n"
    "starts = cumsum(bincount(k, 16), dim=0, exclusive=true)\n"
    "rank = gather(cumsum(one_hot(k, 16), dim=0, exclusive=true), 1, reshape(k, [1024, 1]))\n"
    "slot = add(reshape(rank, [1024]), index_select(starts, 0, k))\n"
    "perm = scatter(full([1024], 0), 0, slot, iota(1024))\n"
    "y0 = argsort(k, stable=true)\n"
    "same = min(eq(perm, y0))\n"
    "output y0, perm, same\n";

static void counting_sort_ir_case(void) {
    if (only_op && strcmp(only_op, "argsort") != 0) return;
    case_no++;
    scanfuse_fusion *f = scanfuse_parse(counting_ir_text, "sweep");
    if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
        CHECKF(0, "counting sort as IR: build failed: %s", f ? scanfuse_fusion_error(f) : "NULL");
        scanfuse_fusion_free(f);
        return;
    }
    int64_t lsh[2] = {512, 16}, n = 1024;
    static int64_t cpu_order[1024];
    tbuf lg, y0, perm, same;
    bool ok = tb_init(&lg, SCANFUSE_FLOAT32, 2, lsh, L_CONTIG) &&
              tb_init(&y0, SCANFUSE_INT64, 1, &n, L_CONTIG) &&
              tb_init(&perm, SCANFUSE_INT64, 1, &n, L_CONTIG) &&
              tb_init(&same, SCANFUSE_BOOL, 0, NULL, L_CONTIG);
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0xC0FFEEull + (uint64_t)case_no);
    for (int64_t j = 0; ok && j < lg.numel; j++)
        sf_store_f64(lg.base, j, SCANFUSE_FLOAT32, (double)sf_test_rng_int(&rng, 0, 6)); /* ties */
    for (int dev = 0; ok && dev < 2; dev++) {
        scanfuse_options opt;
        scanfuse_options_init(&opt);
        opt.device = dev ? SCANFUSE_DEVICE_REFERENCE : SCANFUSE_DEVICE_CPU;
        scanfuse_program *p = scanfuse_compile(f, &opt);
        scanfuse_dl_tensor din[1] = {lg.dl}, dout[3] = {y0.dl, perm.dl, same.dl};
        scanfuse_status st = p ? scanfuse_program_status(p) : SCANFUSE_ERROR_MEMORY;
        if (st == SCANFUSE_OK) st = scanfuse_run(p, din, 1, dout, 3);
        CHECKF(st == SCANFUSE_OK, "counting sort as IR (%s): %s", dev ? "reference" : "cpu",
               p ? scanfuse_program_error(p) : "NULL");
        if (st == SCANFUSE_OK) {
            CHECKF(tb_get_i(&same, 0) == 1 && memcmp(y0.base, perm.base, (size_t)n * 8) == 0,
                   "counting sort as IR (%s) differs from argsort", dev ? "reference" : "cpu");
            if (dev == 0) memcpy(cpu_order, y0.base, sizeof cpu_order);
            else CHECKF(memcmp(cpu_order, y0.base, sizeof cpu_order) == 0,
                        "counting sort as IR: the cpu and reference argsorts differ");
        }
        scanfuse_program_free(p);
    }
    CHECKF(ok, "counting sort as IR: out of memory");
    ncases[SF_OP_argsort]++;
    tb_free(&lg);
    tb_free(&y0);
    tb_free(&perm);
    tb_free(&same);
    scanfuse_fusion_free(f);
}

/* ---------------------------------------------------------------------------------- */
/* Index ops given bad indices at run time: an error status, every output untouched    */
/* ---------------------------------------------------------------------------------- */

/* Each program reads index input `i` (int64[4]) or `k` (int64[4] keys); the bad value
 * is written at position 2 of that input. */
static void bad_index_cases(void) {
    static const struct {
        const char *op, *text, *what;
        int64_t bad;
    } bc[] = {
        {"gather", "input x: float32[3, 5]\ninput i: int64[4]\ns = cumsum(x, dim=1)\n"
                   "g = gather(x, 1, expand(reshape(i, [1, 4]), [3, 4]))\noutput s, g\n", "index", 5},
        {"gather", "input x: float32[3, 5]\ninput i: int64[4]\ng = gather(x, 1, reshape(i, [1, 4]))\n"
                   "output g\n", "index", -1},
        {"take_along_dim", "input x: int32[3, 5]\ninput i: int64[4]\n"
                           "t = take_along_dim(x, reshape(i, [1, 4]), dim=1)\nu = take_along_dim(x, i)\n"
                           "output t, u\n", "index", 15},
        {"take_along_dim", "input x: int32[3, 5]\ninput i: int64[4]\n"
                           "t = take_along_dim(x, reshape(i, [4, 1]), dim=0)\noutput t\n", "index", -3},
        {"index_select", "input x: bfloat16[6, 5]\ninput i: int64[4]\ns = index_select(x, 0, i)\n"
                         "output s, x\n", "index", 6},
        {"index_select", "input x: bfloat16[6, 5]\ninput i: int64[4]\ns = index_select(x, 1, i)\n"
                         "output s\n", "index", -1},
        {"scatter", "input x: float16[3, 5]\ninput i: int64[4]\n"
                    "s = scatter(x, 1, expand(reshape(i, [1, 4]), [3, 4]), 1.0)\noutput s\n", "index", 5},
        {"scatter", "input x: int64[3, 5]\ninput i: int64[4]\n"
                    "s = scatter(x, 0, reshape(i, [1, 4]), reshape(i, [1, 4]), reduce=add)\noutput s\n",
         "index", -2},
        {"one_hot", "input i: int64[4]\no = one_hot(i, 4)\nc = cumsum(i, 0)\noutput c, o\n", "class", 4},
        {"one_hot", "input i: int64[4]\no = one_hot(i, 4)\noutput o\n", "class", -1},
        {"bincount", "input i: int64[4]\nb = bincount(i, minlength=3)\noutput b\n", "id", 3},
        {"bincount", "input i: int64[4]\nb = bincount(i, 3)\noutput b, i\n", "id", -7},
        {"argsort", "input i: int64[4]\na = argsort(i, range=3, stable=true)\noutput a\n", "key", 3},
        {"argsort", "input i: int64[4]\na = argsort(i, range=3, descending=true)\noutput a\n", "key", -1},
        {"argsort", "input i: int64[4]\na = argsort(i, range=1000000)\noutput a\n", "key", 1000000},
    };
    for (size_t b = 0; b < sizeof bc / sizeof bc[0]; b++) {
        if (only_op && strcmp(only_op, bc[b].op) != 0) continue;
        case_no++;
        char desc[900], one[700];
        sw_oneline(bc[b].text, one, sizeof one);
        snprintf(desc, sizeof desc, "case #%d (bad index %lld) {%s}", case_no, (long long)bc[b].bad, one);
        scanfuse_fusion *f = scanfuse_parse(bc[b].text, "sweep");
        if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
            CHECKF(0, "%s: build failed: %s", desc, f ? scanfuse_fusion_error(f) : "NULL");
            scanfuse_fusion_free(f);
            continue;
        }
        int nin = scanfuse_fusion_num_inputs(f), nout = scanfuse_fusion_num_outputs(f);
        tbuf ins[2], outs[3];
        memset(ins, 0, sizeof ins);
        memset(outs, 0, sizeof outs);
        scanfuse_dl_tensor din[2], dout[3];
        bool ok = nin <= 2 && nout <= 3;
        for (int k = 0; k < nin && ok; k++) {
            const char *nm;
            scanfuse_dtype dt;
            int nd;
            int64_t sh[SF_MAX_DIMS];
            scanfuse_fusion_input_info(f, k, &nm, &dt, &nd, sh);
            ok = tb_init(&ins[k], dt, nd, sh, L_CONTIG);
            for (int64_t j = 0; ok && j < ins[k].numel; j++) {
                bool is_idx = strcmp(nm, "i") == 0;
                int64_t v = is_idx ? (j == 2 ? bc[b].bad : j % 3) : j % 5;
                if (sf_dtype_is_float(dt)) sf_store_f64(ins[k].base, tb_offset(&ins[k], j), dt, (double)v);
                else sf_store_i64(ins[k].base, tb_offset(&ins[k], j), dt, v);
            }
            din[k] = ins[k].dl;
        }
        for (int k = 0; k < nout && ok; k++) {
            const char *nm;
            scanfuse_dtype dt;
            int nd;
            int64_t sh[SF_MAX_DIMS];
            scanfuse_fusion_output_info(f, k, &nm, &dt, &nd, sh);
            ok = tb_init(&outs[k], dt, nd, sh, k % 2 ? L_TRANSPOSED : L_CONTIG);
            dout[k] = outs[k].dl;
        }
        char badtext[32];
        snprintf(badtext, sizeof badtext, "%s %lld", bc[b].what, (long long)bc[b].bad);
        for (int dev = 0; ok && dev < 2; dev++) {
            scanfuse_options opt;
            scanfuse_options_init(&opt);
            opt.device = dev ? SCANFUSE_DEVICE_REFERENCE : SCANFUSE_DEVICE_CPU;
            scanfuse_program *p = scanfuse_compile(f, &opt);
            scanfuse_status st = p ? scanfuse_program_status(p) : SCANFUSE_ERROR_MEMORY;
            if (st == SCANFUSE_OK) {
                st = scanfuse_run(p, din, nin, dout, nout);
                const char *msg = scanfuse_program_error(p);
                CHECKF(st == SCANFUSE_ERROR_VALUE, "%s (%s): status %s, expected 'invalid value' (%s)",
                       desc, dev ? "reference" : "cpu", scanfuse_status_string(st), msg);
                CHECKF(sf_test_contains(msg, bc[b].op) && sf_test_contains(msg, badtext) &&
                           sf_test_contains(msg, "out of range"),
                       "%s (%s): message '%s' should name %s and '%s'", desc,
                       dev ? "reference" : "cpu", msg, bc[b].op, badtext);
                for (int k = 0; k < nout; k++)
                    CHECKF(tb_untouched(&outs[k]), "%s (%s): failed run wrote output %d", desc,
                           dev ? "reference" : "cpu", k);
                for (int k = 0; k < nin; k++)
                    CHECKF(tb_find_damage(&ins[k]) < 0, "%s: input %d damaged", desc, k);
            } else {
                CHECKF(0, "%s: compile failed: %s", desc, p ? scanfuse_program_error(p) : "NULL");
            }
            scanfuse_program_free(p);
        }
        CHECKF(ok, "%s: out of memory", desc);
        sf_op op = sf_op_lookup(bc[b].op);
        if (op < SF_NUM_OPS) ncases[op]++;
        for (int k = 0; k < 2; k++) tb_free(&ins[k]);
        for (int k = 0; k < 3; k++) tb_free(&outs[k]);
        scanfuse_fusion_free(f);
    }
}

/* ---------------------------------------------------------------------------------- */
/* Fused programs that fail at run time: every output stays untouched                 */
/* ---------------------------------------------------------------------------------- */

static void division_by_zero_cases(void) {
    static const scanfuse_dtype ints[] = {SCANFUSE_UINT8, SCANFUSE_INT8, SCANFUSE_INT16, SCANFUSE_INT32, SCANFUSE_INT64};
    static const char *const ops[] = {"remainder", "floor_divide"};
    for (size_t o = 0; o < 2; o++)
        for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
            if (only_op && strcmp(only_op, ops[o]) != 0) continue;
            case_no++;
            const char *nm = scanfuse_dtype_name(ints[i]);
            char text[512];
            snprintf(text, sizeof text,
                     "input a: %s[3, 333]\ninput b: %s[3, 333]\ns = cumsum(a, dim=-1)\n"
                     "r = %s(a, b)\nt = sum(r, dim=1)\noutput s, r, t\n", nm, nm, ops[o]);
            char desc[700];
            char one[600];
            sw_oneline(text, one, sizeof one);
            snprintf(desc, sizeof desc, "case #%d (division by zero) {%s}", case_no, one);
            scanfuse_fusion *f = scanfuse_parse(text, "sweep");
            if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
                CHECKF(0, "%s: build failed: %s", desc, f ? scanfuse_fusion_error(f) : "NULL");
                scanfuse_fusion_free(f);
                continue;
            }
            int64_t sh[2] = {3, 333};
            tbuf a, b, out[3];
            bool ok = tb_init(&a, ints[i], 2, sh, L_CONTIG) && tb_init(&b, ints[i], 2, sh, L_TRANSPOSED);
            for (int k = 0; k < 3; k++) memset(&out[k], 0, sizeof out[k]);
            scanfuse_dtype odt[3];
            int ond[3];
            int64_t osh[3][SF_MAX_DIMS];
            for (int k = 0; k < 3 && ok; k++) {
                const char *n;
                scanfuse_fusion_output_info(f, k, &n, &odt[k], &ond[k], osh[k]);
                ok = tb_init(&out[k], odt[k], ond[k], osh[k], L_CONTIG);
            }
            if (ok) {
                for (int64_t j = 0; j < a.numel; j++) {
                    sf_store_i64(a.base, tb_offset(&a, j), a.dt, j % 17 + 1);
                    sf_store_i64(b.base, tb_offset(&b, j), b.dt, j == a.numel - 1 ? 0 : j % 5 + 1);
                }
                scanfuse_options opt;
                scanfuse_options_init(&opt);
                scanfuse_program *p = scanfuse_compile(f, &opt);
                scanfuse_dl_tensor din[2] = {a.dl, b.dl}, dout[3] = {out[0].dl, out[1].dl, out[2].dl};
                scanfuse_status st = p ? scanfuse_program_status(p) : SCANFUSE_ERROR_MEMORY;
                if (st == SCANFUSE_OK) {
                    st = scanfuse_run(p, din, 2, dout, 3);
                    CHECKF(st == SCANFUSE_ERROR_VALUE, "%s: status %s, expected 'value' (%s)", desc,
                           scanfuse_status_string(st), scanfuse_program_error(p));
                    CHECKF(sf_test_contains(scanfuse_program_error(p), "division by zero") &&
                               sf_test_contains(scanfuse_program_error(p), ops[o]),
                           "%s: message '%s'", desc, scanfuse_program_error(p));
                    for (int k = 0; k < 3; k++)
                        CHECKF(tb_untouched(&out[k]), "%s: failed run wrote output %d", desc, k);
                } else {
                    CHECKF(0, "%s: compile failed: %s", desc, scanfuse_program_error(p));
                }
                scanfuse_program_free(p);
                int op = sf_op_lookup(ops[o]);
                if (op < SF_NUM_OPS) ncases[op]++;
            } else {
                CHECKF(0, "%s: out of memory", desc);
            }
            tb_free(&a);
            tb_free(&b);
            for (int k = 0; k < 3; k++) tb_free(&out[k]);
            scanfuse_fusion_free(f);
        }
}

/* ---------------------------------------------------------------------------------- */
/* Self-test of the comparator and the guard zones                                    */
/* ---------------------------------------------------------------------------------- */

static void self_test(void) {
    int64_t sh[1] = {6};
    tbuf cpu, ref;
    if (!tb_init(&cpu, SCANFUSE_FLOAT16, 1, sh, L_SLICED) || !tb_init(&ref, SCANFUSE_FLOAT64, 1, sh, L_CONTIG)) {
        CHECKF(0, "self-test: out of memory");
        tb_free(&cpu);
        return;
    }
    CHECK(tb_find_damage(&cpu) < 0 && tb_untouched(&cpu));
    double u = sf_ulp(1.0, SCANFUSE_FLOAT16);
    /* reference (unrounded) and cpu values: element by element */
    const double r[6] = {1.0 + 0.3 * u, 2.0, NAN, 1.0, INFINITY, 0.0};
    const double g[6] = {1.0, 2.0 + 4 * u, 1.0, 1.0 + u, INFINITY, -0.0};
    for (int j = 0; j < 6; j++) {
        sf_store_f64(ref.base, j, SCANFUSE_FLOAT64, r[j]);
        sf_store_f64(cpu.base, tb_offset(&cpu, j), SCANFUSE_FLOAT16, g[j]);
    }
    CHECK(tb_find_damage(&cpu) < 0 && !tb_untouched(&cpu));
    sweep_case c;
    case_init(&c, (sf_op)0, SCANFUSE_FLOAT16, "self-test");
    quiet = true;
    c.tol = T_EXACT; /* bad: 2 (2 ulp), 3 (NaN), 4 (1 ulp), 6 (sign of zero) */
    long bad_exact = compare_output(&c, "self-test", 0, &cpu, &ref, NULL, NULL, 0);
    c.tol = T_ULP1; /* bad: 2, 3 */
    long bad_ulp = compare_output(&c, "self-test", 0, &cpu, &ref, NULL, NULL, 0);
    double mag[6] = {0, 0x1p40, 0, 0, 0, 0};
    c.tol = T_SUM; /* bad: 3 (element 2 passes the 2^-40 * M bound) */
    long bad_sum = compare_output(&c, "self-test", 0, &cpu, &ref, mag, NULL, 0);
    quiet = false;
    CHECKF(bad_exact == 4 && bad_ulp == 2 && bad_sum == 1, "comparator self-test: %ld %ld %ld", bad_exact, bad_ulp, bad_sum);
    /* a write into the gap of the sliced buffer and into a guard zone are caught */
    cpu.base[cpu.esize] ^= 1;
    CHECK(tb_find_damage(&cpu) == (long)(cpu.base - cpu.alloc) + (long)cpu.esize);
    cpu.base[cpu.esize] ^= 1;
    cpu.alloc[cpu.alloc_len - 1] = 0;
    CHECK(tb_find_damage(&cpu) == (long)cpu.alloc_len - 1);
    tb_free(&cpu);
    tb_free(&ref);
}

/* ---------------------------------------------------------------------------------- */

int main(void) {
    only_op = getenv("SF_SWEEP_OP");
    if (only_op && !only_op[0]) only_op = NULL;
    verbose = getenv("SF_SWEEP_VERBOSE") && getenv("SF_SWEEP_VERBOSE")[0] == '1';
    clock_t t0 = clock();
    self_test();
    for (int o = 0; o < SF_NUM_OPS; o++) {
        sf_op op = (sf_op)o;
        /* every generator runs even with SF_SWEEP_OP set, so case numbers (and the
         * seeds derived from them) stay the same; run_case skips the other ops */
        switch (sf_op_table[op].kind) {
        case SF_KIND_SCAN: gen_scan(op); break;
        case SF_KIND_POINTWISE:
            if (sf_op_table[op].nin == 1) gen_unary(op);
            else gen_nary(op);
            break;
        case SF_KIND_REDUCTION: gen_reduction(op); break;
        case SF_KIND_SHAPE: gen_shape_op(op); break;
        case SF_KIND_CREATION: gen_creation(op); break;
        case SF_KIND_CONTRACTION:
            if (is_op(op, "matmul")) gen_matmul(op);
            break;
        case SF_KIND_INDEX: gen_index(op); break;
        }
    }
    division_by_zero_cases();
    bad_index_cases();
    counting_sort_ir_case();

    printf("op x dtype pairs that ran (cases per op):\n");
    for (int o = 0; o < SF_NUM_OPS; o++) {
        if (only_op && strcmp(only_op, sf_op_table[o].name) != 0) continue;
        char line[256];
        size_t n = 0;
        sw_app(line, sizeof line, &n, "  %s:", sf_op_table[o].name);
        for (int d = 0; d < NDT; d++)
            if (ran[o][d]) sw_app(line, sizeof line, &n, " %s", scanfuse_dtype_name((scanfuse_dtype)d));
        sw_app(line, sizeof line, &n, " (%ld cases)", ncases[o]);
        printf("%s\n", line);
        CHECKF(ncases[o] > 0, "op '%s' (kind %d) has no sweep case that ran", sf_op_table[o].name,
               (int)sf_op_table[o].kind);
    }
    printf("elements compared: %lld integer/bool (bit-exact)", compared_int);
    for (int t = 0; t < 6; t++) printf(", %lld %s (worst %.3g ulp)", compared[t], tol_names[t], worst_ulps[t]);
    printf("\n");
    printf("%d cases in %.1f s of CPU time\n", case_no, (double)(clock() - t0) / CLOCKS_PER_SEC);
    return sf_test_finish("test_sweep");
}
