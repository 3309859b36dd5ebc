/*
 * test_accuracy.c — the accuracy target of DESIGN.md §1 for cumsum and sum on the CPU,
 * measured against the EXACT result computed here, plus determinism.
 *
 * Exact sums: every input value (float16, bfloat16, float32, float64) used here is a
 * multiple of 2^-160 and below 2^72, so a fixed-point accumulator of nine signed 64-bit
 * limbs holding 32-bit digits (value = sum limb[k] * 2^(32k - 160)) adds them without
 * any rounding; carries are deferred (2^20 additions of 32-bit digits cannot overflow a
 * limb) and resolved only when a prefix is read out.  The readout to double is within
 * 2^-52 relative of the exact value, far below the tolerances checked:
 *   float16, bfloat16, float32 outputs: |cpu - exact| <= 1 ulp of the output dtype at the
 *     exact value, or <= 2^-40 * sum |x| over the same prefix (cancellation);
 *   float64 outputs: |cpu - exact| <= 2^-40 * sum |x|.
 * Inputs: positive, mixed-sign, wide-magnitude (exponents spanning +-30, float16: its
 * whole range), and cancellation-heavy (large values followed by their negatives plus
 * small noise), lengths 1 .. 2^20, 1-D and 2-D along either dim, inclusive, exclusive and
 * reverse, and dtype= promotions (float16 -> float32, float32 -> float64).
 * Integers: cumsum and sum bit-exact including int32/int16/uint8 result wrap-around and
 * int64 wrap (expected values computed with unsigned arithmetic here).
 * Determinism: the same input run 3 times gives identical bytes, and
 * scanfuse_options.threads 1, 2, 3, 7 give the same bytes as the default (scans, sums, and
 * reductions down the columns, whose blocks of outputs spread over the threads).
 * The CPU's vector paths of row reductions: sums in lanes give bytes that depend on the
 * positions only (cuts, layouts, threads), exact short sums (sf_cpu_sum_exact_*) give
 * the compensated sums' bytes, and row max, min, argmax and argmin give the scalar rules'
 * bytes and indices (NaN payloads, signed zeros, many ties).  Element-wise kernels: exp
 * against expl, float16/bfloat16 stores against the scalar rounding, 64-bit results
 * computed into an operand's own buffer.
 */
#include "harness.h"
#include "sf.h"
#include "cpu.h"
#include "sweep_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------------------------- */
/* Exact fixed-point accumulator                                                      */
/* ---------------------------------------------------------------------------------- */

#define XL 9        /* limbs */
#define XLSB (-160) /* exponent of the least significant bit */

typedef struct xacc {
    int64_t l[XL];
} xacc;

/* Adds (sign) * m * 2^e exactly; returns false if it does not fit the window. */
static bool xacc_add(xacc *a, double x) {
    if (x == 0.0) return true;
    if (!isfinite(x)) return false;
    int e;
    double fr = frexp(fabs(x), &e); /* x = fr * 2^e, fr in [0.5, 1) */
    uint64_t m = (uint64_t)ldexp(fr, 53);
    e -= 53;
    while (m && !(m & 1)) {
        m >>= 1;
        e++;
    }
    int p = e - XLSB, bits = 0;
    for (uint64_t t = m; t; t >>= 1) bits++;
    if (p < 0 || p + bits > 32 * (XL - 1) - 24) return false; /* < 2^72: room for 2^20 terms */
    int k = p / 32, s = p % 32;
    uint64_t m0 = m & 0xFFFFFFFFu, m1 = m >> 32;
    uint64_t t0 = m0 << s, t1 = m1 << s;
    int64_t d0 = (int64_t)(t0 & 0xFFFFFFFFu), d1 = (int64_t)(t0 >> 32) + (int64_t)(t1 & 0xFFFFFFFFu),
            d2 = (int64_t)(t1 >> 32);
    if (x < 0) {
        d0 = -d0;
        d1 = -d1;
        d2 = -d2;
    }
    a->l[k] += d0;
    a->l[k + 1] += d1;
    if (k + 2 < XL) a->l[k + 2] += d2;
    return true;
}

/* The accumulator's value as a double (within 2^-52 relative). */
static double xacc_value(const xacc *a) {
    int64_t l[XL];
    memcpy(l, a->l, sizeof l);
    /* carries: every limb but the top in [0, 2^32) */
    for (int k = 0; k < XL - 1; k++) {
        int64_t c = l[k] >= 0 ? l[k] / 4294967296LL : -((-l[k] + 4294967295LL) / 4294967296LL);
        l[k] -= c * 4294967296LL;
        l[k + 1] += c;
    }
    bool neg = l[XL - 1] < 0;
    if (neg) {
        /* negate the two's-complement-like number and normalize again */
        for (int k = 0; k < XL; k++) l[k] = -l[k];
        for (int k = 0; k < XL - 1; k++) {
            int64_t c = l[k] >= 0 ? l[k] / 4294967296LL : -((-l[k] + 4294967295LL) / 4294967296LL);
            l[k] -= c * 4294967296LL;
            l[k + 1] += c;
        }
    }
    int top = XL - 1;
    while (top > 0 && l[top] == 0) top--;
    double v = 0;
    for (int k = top; k >= 0 && k >= top - 3; k--) v += ldexp((double)l[k], 32 * k + XLSB);
    return neg ? -v : v;
}

/* ---------------------------------------------------------------------------------- */
/* Running a one-op program on the CPU                                                */
/* ---------------------------------------------------------------------------------- */

/* Builds TEXT, compiles it for the CPU with `threads`, runs it on contiguous tensors.
 * Returns the status; the message goes to stderr on failure. */
static scanfuse_status run_text_on(const char *text, scanfuse_device device, int threads, tbuf *in,
                                   tbuf *out);
static scanfuse_status run_text(const char *text, int threads, tbuf *in, tbuf *out) {
    return run_text_on(text, SCANFUSE_DEVICE_CPU, threads, in, out);
}
/* ... on `device` (the reference evaluator: SCANFUSE_DEVICE_REFERENCE) */
static scanfuse_status run_text_on(const char *text, scanfuse_device device, int threads, tbuf *in,
                                   tbuf *out) {
    scanfuse_fusion *f = scanfuse_parse(text, "accuracy");
    scanfuse_status st = f ? scanfuse_fusion_status(f) : SCANFUSE_ERROR_MEMORY;
    if (st != SCANFUSE_OK) {
        fprintf(stderr, "  build failed: %s\n", f ? scanfuse_fusion_error(f) : "NULL");
        scanfuse_fusion_free(f);
        return st;
    }
    scanfuse_options opt;
    scanfuse_options_init(&opt);
    opt.threads = threads;
    opt.device = device;
    scanfuse_program *p = scanfuse_compile(f, &opt);
    st = p ? scanfuse_program_status(p) : SCANFUSE_ERROR_MEMORY;
    if (st == SCANFUSE_OK) st = scanfuse_run(p, &in->dl, 1, &out->dl, 1);
    if (st != SCANFUSE_OK) fprintf(stderr, "  compile/run failed: %s\n", p ? scanfuse_program_error(p) : "NULL");
    scanfuse_program_free(p);
    scanfuse_fusion_free(f);
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* Inputs                                                                             */
/* ---------------------------------------------------------------------------------- */

enum { D_POSITIVE, D_MIXED, D_WIDE, D_CANCEL, D_COUNT };
static const char *const dist_names[D_COUNT] = {"positive", "mixed-sign", "wide-magnitude", "cancellation"};

/* The scale that keeps sums of n values of magnitude <= 1 finite in the dtype. */
static double dtype_scale(scanfuse_dtype dt, int64_t n) {
    if (dt != SCANFUSE_FLOAT16) return 1.0;
    double s = 1.0;
    while (s * (double)n > 30000.0) s /= 2;
    return s;
}

/* One value of a distribution (D_CANCEL's negatives are made by the caller). */
static double gen_value(sf_test_rng *r, int dist, scanfuse_dtype dt, double scale, int64_t j) {
    double u = sf_test_rng_uniform(r);
    switch (dist) {
    case D_POSITIVE: return scale * u;
    case D_MIXED: return scale * (2 * u - 1);
    case D_WIDE: {
        int lo = -30, hi = 30;
        if (dt == SCANFUSE_FLOAT16) {
            lo = -24;
            hi = (int)floor(log2(scale));
        }
        int e = (int)sf_test_rng_int(r, lo, hi);
        double m = 1.0 + sf_test_rng_uniform(r);
        return (sf_test_rng_next(r) & 1 ? -1 : 1) * ldexp(m, e) * (dt == SCANFUSE_FLOAT16 ? 0.5 : 1.0);
    }
    default: /* cancellation: big values, then their negatives, with small noise */
        if (j % 4 == 2) return scale * 1e-3 * (2 * u - 1);
        return scale * (sf_test_rng_next(r) & 1 ? -1 : 1) * (0.5 + u / 2);
    }
}

/* ---------------------------------------------------------------------------------- */
/* Float cumsum / sum accuracy                                                        */
/* ---------------------------------------------------------------------------------- */

typedef struct acc_case {
    scanfuse_dtype in_dt, out_dt;
    int ndim;
    int64_t shape[2];
    int dim;
    bool excl, rev;
    bool is_sum; /* sum(x, dim) instead of cumsum */
    int dist;
} acc_case;

static int case_no;

static void index_of(char *buf, size_t len, int ndim, const int64_t *shape, int64_t j) {
    int64_t idx[2] = {0, 0};
    for (int d = ndim - 1; d >= 0; d--) {
        idx[d] = j % shape[d];
        j /= shape[d];
    }
    sw_shape_str(buf, len, ndim, idx);
}

static void run_accuracy(const acc_case *c) {
    case_no++;
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0xACC0ull + (uint64_t)case_no * 7919u);
    char sh[64], text[512], desc[700];
    sw_shape_str(sh, sizeof sh, c->ndim, c->shape);
    size_t n = 0;
    sw_app(text, sizeof text, &n, "input x: %s%s\ny = %s(x, dim=%d", scanfuse_dtype_name(c->in_dt), sh,
           c->is_sum ? "sum" : "cumsum", c->dim);
    if (c->out_dt != c->in_dt) sw_app(text, sizeof text, &n, ", dtype=%s", scanfuse_dtype_name(c->out_dt));
    if (c->excl) sw_app(text, sizeof text, &n, ", exclusive=true");
    if (c->rev) sw_app(text, sizeof text, &n, ", reverse=true");
    sw_app(text, sizeof text, &n, ")\noutput y\n");
    char one[512];
    sw_oneline(text, one, sizeof one);
    snprintf(desc, sizeof desc, "accuracy #%d (%s inputs) {%s}", case_no, dist_names[c->dist], one);

    tbuf in, out;
    int64_t outshape[2];
    int outnd = c->ndim;
    memcpy(outshape, c->shape, sizeof outshape);
    if (c->is_sum) {
        outnd = c->ndim - 1;
        if (c->ndim == 2 && c->dim == 0) outshape[0] = c->shape[1];
    }
    if (!tb_init(&in, c->in_dt, c->ndim, c->shape, L_CONTIG) ||
        !tb_init(&out, c->out_dt, outnd, outshape, L_CONTIG)) {
        CHECKF(0, "%s: out of memory", desc);
        tb_free(&in);
        return;
    }
    int64_t N = in.numel;
    double *x = malloc(sizeof(double) * (size_t)(N ? N : 1));
    double *ex = malloc(sizeof(double) * (size_t)(N ? N : 1));  /* exact prefix values */
    double *mag = malloc(sizeof(double) * (size_t)(N ? N : 1)); /* prefix sums of |x| */
    if (!x || !ex || !mag) {
        CHECKF(0, "%s: out of memory", desc);
        goto done;
    }
    double scale = dtype_scale(c->out_dt == SCANFUSE_FLOAT16 || c->in_dt == SCANFUSE_FLOAT16 ? SCANFUSE_FLOAT16 : c->in_dt,
                               c->shape[c->dim]);
    /* the logical values, after conversion to the output dtype (the op converts first) */
    int64_t outer = 1, len = c->shape[c->dim], inner = 1;
    for (int d = 0; d < c->dim; d++) outer *= c->shape[d];
    for (int d = c->dim + 1; d < c->ndim; d++) inner *= c->shape[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            /* generate along the line so the cancellation pattern follows the scan */
            double line_prev[4] = {0, 0, 0, 0};
            for (int64_t s = 0; s < len; s++) {
                int64_t pos = (o * len + s) * inner + k;
                double v;
                if (c->dist == D_CANCEL && s % 4 == 3) v = -line_prev[0];
                else v = gen_value(&rng, c->dist, c->in_dt, scale, s);
                sf_store_f64(in.base, pos, c->in_dt, v);
                x[pos] = sf_round_to(sf_load_f64(in.base, pos, c->in_dt), c->out_dt);
                if (s % 4 == 0) line_prev[0] = sf_load_f64(in.base, pos, c->in_dt);
            }
        }
    /* exact prefix sums */
    bool fits = true;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            xacc a;
            memset(&a, 0, sizeof a);
            double m = 0;
            for (int64_t s = 0; s < len; s++) {
                int64_t idx = c->rev ? len - 1 - s : s;
                int64_t pos = (o * len + idx) * inner + k;
                if (c->excl) {
                    ex[pos] = xacc_value(&a);
                    mag[pos] = m;
                }
                fits = xacc_add(&a, x[pos]) && fits;
                m += fabs(x[pos]);
                if (!c->excl) {
                    ex[pos] = c->is_sum && s + 1 < len ? 0 : xacc_value(&a);
                    mag[pos] = m;
                }
            }
        }
    CHECKF(fits, "%s: test bug: an input does not fit the exact accumulator", desc);

    scanfuse_status st = run_text(text, 0, &in, &out);
    if (st != SCANFUSE_OK) {
        CHECKF(0, "%s: run failed: %s", desc, scanfuse_status_string(st));
        goto done;
    }
    /* compare */
    double worst_ulp = 0, worst_rel = 0;
    long bad = 0, cancel = 0;
    int64_t nout = out.numel;
    for (int64_t j = 0; j < nout; j++) {
        int64_t pos;
        if (!c->is_sum) {
            pos = j;
        } else { /* the last element of line j of the scan order */
            int64_t o = c->dim == 0 ? 0 : j, k = c->dim == 0 ? j : 0;
            if (c->ndim == 1) o = k = 0;
            pos = (o * len + (len - 1)) * inner + k;
            if (len == 0) pos = -1;
        }
        double e = pos >= 0 ? ex[pos] : 0.0, M = pos >= 0 ? mag[pos] : 0.0;
        double got = sf_load_f64(out.base, j, c->out_dt);
        double err = fabs(got - e), ulp = sf_ulp(e, c->out_dt);
        bool ok;
        if (!isfinite(got) || !isfinite(sf_round_to(e, c->out_dt))) {
            ok = got == sf_round_to(e, c->out_dt);
        } else if (c->out_dt == SCANFUSE_FLOAT64) {
            ok = err <= ldexp(M, -40);
        } else {
            ok = err <= ulp;
            if (!ok && err <= ldexp(M, -40)) {
                ok = true;
                cancel++;
            }
        }
        if (isfinite(err) && err / ulp > worst_ulp) worst_ulp = err / ulp;
        if (M > 0 && isfinite(err) && err / M > worst_rel) worst_rel = err / M;
        if (!ok) {
            bad++;
            if (bad <= 3) {
                char idx[64];
                index_of(idx, sizeof idx, outnd, outshape, j);
                CHECKF(0, "%s: element %s: cpu %.17g, exact %.17g, error %.3g = %.3g ulp, 2^-40*sum|x| = %.3g",
                       desc, idx, got, e, err, err / ulp, ldexp(M, -40));
            }
        }
    }
    if (bad > 3) CHECKF(0, "%s: %ld elements out of tolerance in all", desc, bad);
    if (!bad) CHECK(true);
    printf("  %-8s -> %-8s %-14s %-12s %-6s%s%s max %.3f ulp, max err/sum|x| = 2^%.1f%s\n",
           scanfuse_dtype_name(c->in_dt), scanfuse_dtype_name(c->out_dt), dist_names[c->dist], sh,
           c->is_sum ? "sum" : "cumsum", c->excl ? " excl" : "", c->rev ? " rev" : "", worst_ulp,
           worst_rel > 0 ? log2(worst_rel) : -INFINITY, cancel ? " (cancellation bound used)" : "");
done:
    free(x);
    free(ex);
    free(mag);
    tb_free(&in);
    tb_free(&out);
}

static void float_accuracy(void) {
    static const scanfuse_dtype fdts[] = {SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32, SCANFUSE_FLOAT64};
    for (size_t i = 0; i < 4; i++) {
        scanfuse_dtype dt = fdts[i];
        for (int dist = 0; dist < D_COUNT; dist++) {
            acc_case c = {dt, dt, 1, {65537, 0}, 0, false, false, false, dist};
            run_accuracy(&c);
            c.shape[0] = 1000;
            c.excl = true;
            run_accuracy(&c);
            c.excl = false;
            c.rev = true;
            run_accuracy(&c);
            c.rev = false;
            c.is_sum = true;
            c.shape[0] = 65537;
            run_accuracy(&c);
            /* 2-D along either dim: [4096, 64] along dim 0 is DESIGN's motivating case */
            acc_case d = {dt, dt, 2, {4096, 64}, 0, false, false, false, dist};
            run_accuracy(&d);
            d.dim = 1;
            d.shape[0] = 64;
            d.shape[1] = 4096;
            run_accuracy(&d);
            d.is_sum = true;
            run_accuracy(&d);
            d.dim = 0;
            d.shape[0] = 4096;
            d.shape[1] = 64;
            run_accuracy(&d);
        }
        /* short lengths */
        static const int64_t shorts[] = {1, 2, 7, 33};
        for (size_t s = 0; s < 4; s++) {
            acc_case c = {dt, dt, 1, {shorts[s], 0}, 0, s % 2 == 1, s >= 2, false, D_WIDE};
            run_accuracy(&c);
        }
        /* 2^20 */
        acc_case big = {dt, dt, 1, {1 << 20, 0}, 0, false, false, false, dt == SCANFUSE_FLOAT32 ? D_WIDE : D_MIXED};
        run_accuracy(&big);
        big.is_sum = true;
        big.dist = D_POSITIVE;
        run_accuracy(&big);
    }
    /* dtype= promotions */
    acc_case p1 = {SCANFUSE_FLOAT16, SCANFUSE_FLOAT32, 1, {65537, 0}, 0, false, false, false, D_WIDE};
    run_accuracy(&p1);
    acc_case p2 = {SCANFUSE_FLOAT32, SCANFUSE_FLOAT64, 1, {65537, 0}, 0, false, false, false, D_CANCEL};
    run_accuracy(&p2);
    acc_case p3 = {SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32, 2, {4096, 64}, 0, false, false, false, D_POSITIVE};
    run_accuracy(&p3);
    acc_case p4 = {SCANFUSE_FLOAT32, SCANFUSE_FLOAT16, 1, {4099, 0}, 0, false, false, false, D_MIXED};
    run_accuracy(&p4);
}

/* ---------------------------------------------------------------------------------- */
/* Integer cumsum and sum: bit exact, wrapping                                        */
/* ---------------------------------------------------------------------------------- */

static void int_case(scanfuse_dtype in_dt, scanfuse_dtype out_dt, int64_t n, bool is_sum, bool excl,
                     int64_t lo, int64_t hi) {
    case_no++;
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0x1A7ull + (uint64_t)case_no);
    char text[256], one[256];
    size_t k = 0;
    sw_app(text, sizeof text, &k, "input x: %s[%lld]\ny = %s(x, dim=0", scanfuse_dtype_name(in_dt),
           (long long)n, is_sum ? "sum" : "cumsum");
    if (out_dt != SCANFUSE_DTYPE_NONE) sw_app(text, sizeof text, &k, ", dtype=%s", scanfuse_dtype_name(out_dt));
    if (excl) sw_app(text, sizeof text, &k, ", exclusive=true");
    sw_app(text, sizeof text, &k, ")\noutput y\n");
    sw_oneline(text, one, sizeof one);
    scanfuse_dtype rdt = out_dt != SCANFUSE_DTYPE_NONE ? out_dt : SCANFUSE_INT64;
    int64_t sh[1] = {n};
    tbuf in, out;
    if (!tb_init(&in, in_dt, 1, sh, L_CONTIG) || !tb_init(&out, rdt, is_sum ? 0 : 1, sh, L_CONTIG)) {
        CHECKF(0, "out of memory");
        tb_free(&in);
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        int64_t v = sf_test_rng_int(&rng, lo, hi);
        if (in_dt != SCANFUSE_UINT8 && in_dt != SCANFUSE_BOOL && (sf_test_rng_next(&rng) & 1)) v = -v;
        sf_store_i64(in.base, j, in_dt, v);
    }
    scanfuse_status st = run_text(text, 0, &in, &out);
    if (st != SCANFUSE_OK) {
        CHECKF(0, "{%s}: run failed: %s", one, scanfuse_status_string(st));
    } else {
        uint64_t acc = 0;
        long bad = 0;
        for (int64_t j = 0; j < n; j++) {
            /* the input converted to the result dtype first, then summed in int64, wrapped */
            uint64_t v = (uint64_t)sf_wrap_int(sf_load_i64(in.base, j, in_dt), rdt);
            uint64_t before = acc;
            acc += v;
            if (is_sum) continue;
            int64_t want = sf_wrap_int((int64_t)(excl ? before : acc), rdt);
            int64_t got = sf_load_i64(out.base, j, rdt);
            if (got != want && ++bad <= 3)
                CHECKF(0, "{%s}: element %lld: cpu %lld, exact %lld", one, (long long)j, (long long)got, (long long)want);
        }
        if (is_sum) {
            int64_t want = sf_wrap_int((int64_t)acc, rdt), got = sf_load_i64(out.base, 0, rdt);
            CHECKF(got == want, "{%s}: cpu %lld, exact %lld", one, (long long)got, (long long)want);
        } else {
            CHECKF(bad == 0, "{%s}: %ld elements differ", one, bad);
        }
    }
    tb_free(&in);
    tb_free(&out);
}

static void int_accuracy(void) {
    /* int32 results wrap like two's complement (PyTorch bit for bit) */
    int_case(SCANFUSE_INT32, SCANFUSE_INT32, 1 << 20, false, false, INT32_MAX / 4, INT32_MAX);
    int_case(SCANFUSE_INT32, SCANFUSE_INT32, 100003, false, true, INT32_MAX / 2, INT32_MAX);
    int_case(SCANFUSE_INT32, SCANFUSE_INT32, 100003, true, false, INT32_MAX / 2, INT32_MAX);
    /* int32 inputs without dtype: int64 results, no wrap */
    int_case(SCANFUSE_INT32, SCANFUSE_DTYPE_NONE, 1 << 20, false, false, INT32_MAX / 2, INT32_MAX);
    int_case(SCANFUSE_INT32, SCANFUSE_DTYPE_NONE, 1 << 20, true, false, INT32_MAX / 2, INT32_MAX);
    /* int64 wrap */
    int_case(SCANFUSE_INT64, SCANFUSE_DTYPE_NONE, 100003, false, false, INT64_MAX / 4, INT64_MAX);
    int_case(SCANFUSE_INT64, SCANFUSE_INT64, 100003, true, false, INT64_MAX / 2, INT64_MAX);
    /* narrow results */
    int_case(SCANFUSE_INT16, SCANFUSE_INT16, 65537, false, false, 1000, INT16_MAX);
    int_case(SCANFUSE_UINT8, SCANFUSE_UINT8, 65537, false, false, 0, 255);
    int_case(SCANFUSE_INT8, SCANFUSE_DTYPE_NONE, 65537, false, true, 0, 127);
    int_case(SCANFUSE_BOOL, SCANFUSE_DTYPE_NONE, 65537, false, false, 0, 1);
    int_case(SCANFUSE_BOOL, SCANFUSE_INT8, 65537, false, false, 0, 1);
    /* int64 values into an int32 result: converted (wrapped) first */
    int_case(SCANFUSE_INT64, SCANFUSE_INT32, 65537, false, false, (int64_t)1 << 40, (int64_t)1 << 50);
}

/* ---------------------------------------------------------------------------------- */
/* Determinism                                                                        */
/* ---------------------------------------------------------------------------------- */

static void determinism_case(scanfuse_dtype dt, int ndim, const int64_t *shape, const char *call) {
    char sh[64], text[256];
    sw_shape_str(sh, sizeof sh, ndim, shape);
    snprintf(text, sizeof text, "input x: %s%s\ny = %s\noutput y\n", scanfuse_dtype_name(dt), sh, call);
    char one[256];
    sw_oneline(text, one, sizeof one);
    scanfuse_fusion *f = scanfuse_parse(text, "accuracy");
    if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
        CHECKF(0, "{%s}: build failed: %s", one, f ? scanfuse_fusion_error(f) : "NULL");
        scanfuse_fusion_free(f);
        return;
    }
    scanfuse_dtype odt;
    int ond;
    int64_t osh[SF_MAX_DIMS];
    const char *nm;
    scanfuse_fusion_output_info(f, 0, &nm, &odt, &ond, osh);
    scanfuse_fusion_free(f);
    tbuf in, first, out;
    memset(&first, 0, sizeof first);
    memset(&out, 0, sizeof out);
    if (!tb_init(&in, dt, ndim, shape, L_CONTIG) || !tb_init(&first, odt, ond, osh, L_CONTIG) ||
        !tb_init(&out, odt, ond, osh, L_CONTIG)) {
        CHECKF(0, "out of memory");
        goto done;
    }
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0xD37ull);
    for (int64_t j = 0; j < in.numel; j++) {
        double u = sf_test_rng_uniform(&rng);
        double v = ldexp(2 * u - 1, (int)sf_test_rng_int(&rng, -12, dt == SCANFUSE_FLOAT16 ? -2 : 12));
        sf_store_f64(in.base, j, dt, v);
    }
    size_t bytes = (size_t)out.numel * out.esize;
    if (run_text(text, 0, &in, &first) != SCANFUSE_OK) {
        CHECKF(0, "{%s}: run failed", one);
        goto done;
    }
    static const int threads[] = {0, 0, 1, 2, 3, 7};
    bool same = true;
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        memset(out.base, 0, bytes);
        scanfuse_status st = run_text(text, threads[t], &in, &out);
        bool ok = st == SCANFUSE_OK && memcmp(out.base, first.base, bytes) == 0;
        CHECKF(ok, "{%s}: %s %d gives different bytes than the first run", one,
               threads[t] ? "threads =" : "repeated run, threads =", threads[t]);
        same = same && ok;
    }
    printf("  %s over 3 runs and threads 1, 2, 3, 7: {%s}\n", same ? "deterministic" : "NOT DETERMINISTIC", one);
done:
    tb_free(&in);
    tb_free(&first);
    tb_free(&out);
}

static void determinism(void) {
    int64_t s1[1] = {1 << 20}, s2[2] = {4096, 64}, s3[2] = {1024, 1024}, s4[3] = {8, 3, 40000};
    determinism_case(SCANFUSE_FLOAT32, 1, s1, "cumsum(x, dim=0)");
    determinism_case(SCANFUSE_FLOAT64, 1, s1, "cumsum(x, dim=0, exclusive=true)");
    determinism_case(SCANFUSE_BFLOAT16, 2, s2, "cumsum(x, dim=0)");
    determinism_case(SCANFUSE_FLOAT16, 2, s2, "cumsum(x, dim=1, reverse=true)");
    determinism_case(SCANFUSE_FLOAT64, 2, s3, "sum(x, dim=1)");
    determinism_case(SCANFUSE_FLOAT32, 1, s1, "sum(x)");
    determinism_case(SCANFUSE_FLOAT16, 1, s1, "sum(x, dtype=float32)");
    determinism_case(SCANFUSE_FLOAT32, 3, s4, "cumsum(x, dim=2)");
    determinism_case(SCANFUSE_FLOAT32, 3, s4, "sum(x, dim=[0, 2])");
    determinism_case(SCANFUSE_FLOAT64, 1, s1, "cumprod(x, dim=0)");
    determinism_case(SCANFUSE_FLOAT32, 1, s1, "logcumsumexp(x, dim=0)");
    /* reductions down the columns: blocks of 512 outputs spread over the pool's threads
     * (sf_cpu_reduce_mt), 1100 outputs so a block of 76 ends them */
    int64_t s5[2] = {1500, 1100};
    determinism_case(SCANFUSE_FLOAT32, 2, s5, "sum(x, dim=0)");
    determinism_case(SCANFUSE_BFLOAT16, 2, s5, "mean(x, dim=0)");
    determinism_case(SCANFUSE_FLOAT64, 2, s5, "prod(x, dim=0)");
    determinism_case(SCANFUSE_FLOAT32, 2, s5, "max(x, dim=0)");
    determinism_case(SCANFUSE_FLOAT16, 2, s5, "argmin(x, dim=0)");
}

/* ---------------------------------------------------------------------------------- */
/* Row sums in lanes (cpu.h, sf_cpu_sum2_lanes): the bytes depend on the positions only */
/* ---------------------------------------------------------------------------------- */

/* The lanes of xd[0..n) (or of xf's float32 values) added in pieces of 1 to 45 elements. */
static void lanes_in_pieces(double *h, double *l, const double *xd, const float *xf, int64_t n, sf_test_rng *rng) {
    for (int64_t a = 0; a < n;) {
        int64_t b = a + (int64_t)sf_test_rng_int(rng, 1, 45);
        if (b > n) b = n;
        if (xd) sf_cpu_sum2_lanes(h, l, xd + a, b - a, a);
        else sf_cpu_sum2_lanes_f32(h, l, xf + a, b - a, a);
        a = b;
    }
}

/* The primitive: a row of wide-magnitude values (and an infinity) added in one call and
 * cut at random points into many (start positions not multiples of the lane count)
 * gives the same lanes, bit for bit, and so does the float32 form on those values rounded
 * to float32; the fold is within DESIGN.md's bound of the exact sum. */
static void lanes_primitive(void) {
    enum { N = 1000 };
    static double x[N];
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0x1A5Eull);
    for (int trial = 0; trial < 20; trial++) {
        xacc ex;
        memset(&ex, 0, sizeof ex);
        double mag = 0.0;
        for (int i = 0; i < N; i++) {
            x[i] = ldexp(2 * sf_test_rng_uniform(&rng) - 1, (int)sf_test_rng_int(&rng, -30, 30));
            x[i] = ldexp(round(ldexp(x[i], 100)), -100); /* a multiple of 2^-100: exact in xacc */
            mag += fabs(x[i]);
            CHECK(xacc_add(&ex, x[i]));
        }
        if (trial == 19) x[N / 2] = INFINITY;
        double h1[SF_SUM_LANES] = {0}, l1[SF_SUM_LANES] = {0}, h2[SF_SUM_LANES] = {0}, l2[SF_SUM_LANES] = {0};
        sf_cpu_sum2_lanes(h1, l1, x, N, 0);
        lanes_in_pieces(h2, l2, x, NULL, N, &rng);
        CHECKF(memcmp(h1, h2, sizeof h1) == 0 && memcmp(l1, l2, sizeof l1) == 0,
               "trial %d: the lanes depend on where the row is cut", trial);
        /* the float32 form (widened in the register) against the double one on the same
         * values rounded to float32, cut at other points */
        static float xf[N];
        static double xw[N];
        for (int i = 0; i < N; i++) xw[i] = xf[i] = (float)x[i];
        double h3[SF_SUM_LANES] = {0}, l3[SF_SUM_LANES] = {0}, h4[SF_SUM_LANES] = {0}, l4[SF_SUM_LANES] = {0};
        sf_cpu_sum2_lanes(h3, l3, xw, N, 0);
        lanes_in_pieces(h4, l4, NULL, xf, N, &rng);
        CHECKF(memcmp(h3, h4, sizeof h3) == 0 && memcmp(l3, l4, sizeof l3) == 0,
               "trial %d: float32 lanes differ from the double lanes of the same values", trial);
        double s, c;
        sf_cpu_sum2_lanes_fold(h1, l1, &s, &c);
        double got = sf_cpu_sum2_result(s, c, SCANFUSE_FLOAT64);
        if (trial == 19) CHECKF(got == INFINITY, "an infinity in a lane: %g", got);
        else CHECKF(fabs(got - xacc_value(&ex)) <= ldexp(mag, -40), "trial %d: %.17g, exact %.17g", trial, got,
                    xacc_value(&ex));
    }
}

/* Programs: sum and mean over reduced dims whose elements come as one run (contiguous),
 * as runs of 37 (every other element), or misaligned, on 1 and 3 threads: the same
 * bytes; float32 and bfloat16 go through the fused float32 path, float64 and float16
 * through the generic one (both lanes by position).  A compensated sum hides which lane
 * took an element almost always, so float64 rows carry a witness that does not: two
 * +2^1023 in one lane overflow, in two lanes they do not.  (A planted error, lanes by
 * the position within each run, fails the float64 cases.) */
static void lanes_layouts(void) {
    static const scanfuse_dtype dts[] = {SCANFUSE_FLOAT32, SCANFUSE_BFLOAT16, SCANFUSE_FLOAT64, SCANFUSE_FLOAT16};
    static const char *const calls[] = {"sum(x, dim=[1, 2])", "mean(x, dim=[1, 2])", "sum(x, dim=2)"};
    const int64_t shape[3] = {3, 7, 37};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
            char text[256];
            snprintf(text, sizeof text, "input x: %s[3, 7, 37]\ny = %s\noutput y\n", scanfuse_dtype_name(dts[d]),
                     calls[c]);
            int64_t oshape[2] = {3, 7};
            int ond = c == 2 ? 2 : 1;
            tbuf out0, out;
            memset(&out0, 0, sizeof out0);
            memset(&out, 0, sizeof out);
            bool ok = tb_init(&out0, dts[d], ond, oshape, L_CONTIG) && tb_init(&out, dts[d], ond, oshape, L_CONTIG);
            static const int layouts[] = {L_CONTIG, L_SLICED, L_MISALIGNED};
            for (size_t l = 0; l < 3 && ok; l++) {
                tbuf in;
                if (!tb_init(&in, dts[d], 3, shape, layouts[l])) {
                    ok = false;
                    break;
                }
                sf_test_rng rng;
                sf_test_rng_seed(&rng, 0x5A11ull);
                /* large values of far-apart magnitudes, each cancelled by its negative
                 * 100 positions later, among small ones: what remains is the small
                 * values' sum plus the compensation terms' roundings, which depend on
                 * the lanes the elements take, so a lane taking another element shows
                 * in the bytes */
                const int e = dts[d] == SCANFUSE_FLOAT64 ? 200 : dts[d] == SCANFUSE_FLOAT16 ? 10 : 60;
                double *v = malloc((size_t)in.numel * sizeof *v);
                if (!v) {
                    tb_free(&in);
                    ok = false;
                    break;
                }
                for (int64_t j = 0; j < in.numel; j++) v[j] = ldexp(2 * sf_test_rng_uniform(&rng) - 1, -e / 4);
                for (int64_t j = 0; j + 100 < in.numel; j += 2) {
                    if (j % 259 + 100 >= 259 || j % 259 >= 30) continue; /* within one run, before 36 */
                    v[j] = ldexp(1.0 + sf_test_rng_uniform(&rng), (int)sf_test_rng_int(&rng, -e, e));
                    v[j + 100] = -v[j];
                }
                /* float64 over [1, 2]: in each output's run, +M at positions 36 and 44
                 * (one lane, so it overflows) and -M at 47; lanes taken by the position
                 * within a run of 37 instead would give M */
                for (int64_t b = 0; dts[d] == SCANFUSE_FLOAT64 && c < 2 && b < in.numel; b += 259) {
                    v[b + 36] = v[b + 44] = 0x1p1023;
                    v[b + 47] = -0x1p1023;
                }
                for (int64_t j = 0; j < in.numel; j++) sf_store_f64(in.base, tb_offset(&in, j), dts[d], v[j]);
                free(v);
                for (int threads = 1; threads <= 3; threads += 2) {
                    tbuf *o = l == 0 && threads == 1 ? &out0 : &out;
                    memset(o->base, 0, (size_t)o->numel * o->esize);
                    ok = run_text(text, threads, &in, o) == SCANFUSE_OK;
                    if (ok && o == &out)
                        CHECKF(memcmp(out.base, out0.base, (size_t)out.numel * out.esize) == 0,
                               "%s %s, %s layout, %d threads: other bytes than contiguous on 1 thread",
                               scanfuse_dtype_name(dts[d]), calls[c], sw_layout_name(layouts[l]), threads);
                }
                tb_free(&in);
            }
            CHECKF(ok, "%s %s: did not run", scanfuse_dtype_name(dts[d]), calls[c]);
            tb_free(&out0);
            tb_free(&out);
        }
    }
    printf("  row sums in lanes: the same bytes for every cut of the rows, layout and thread count\n");
}

/* The compensated sums of x[0..K) (one chain; the lanes folded) against s: the same
 * bytes, error terms +0; and s the exact sum where xacc holds the values. */
static void exact_row_check(const double *x, int64_t K, double s, const char *what) {
    double h = 0.0, l = 0.0, hl[SF_SUM_LANES] = {0}, ll[SF_SUM_LANES] = {0}, fh, fl;
    xacc ex;
    memset(&ex, 0, sizeof ex);
    bool held = true;
    for (int64_t t = 0; t < K; t++) {
        sf_cpu_sum2_add(&h, &l, x[t]);
        held = held && fabs(x[t]) < 0x1p70 && ldexp(x[t], 160) == round(ldexp(x[t], 160)) && xacc_add(&ex, x[t]);
    }
    sf_cpu_sum2_lanes(hl, ll, x, K, 0);
    sf_cpu_sum2_lanes_fold(hl, ll, &fh, &fl);
    const double pz = 0.0;
    CHECKF(memcmp(&h, &s, sizeof s) == 0 && memcmp(&l, &pz, sizeof l) == 0,
           "%s: the chain ends (%a, %a), the exact test's sum %a", what, h, l, s);
    CHECKF(memcmp(&fh, &s, sizeof s) == 0 && memcmp(&fl, &pz, sizeof fl) == 0,
           "%s: the lanes end (%a, %a), the exact test's sum %a", what, fh, fl, s);
    if (held) CHECKF(xacc_value(&ex) == s, "%s: %a, exact %a", what, s, xacc_value(&ex));
}

/* ---------------------------------------------------------------------------------- */
/* Exact short sums (cpu.h, sf_cpu_sum_exact_*): the compensated sums' bytes            */
/* ---------------------------------------------------------------------------------- */

/* A value of a p-bit format with exponent e (|v| in [2^e, 2^(e+1))): a random p-bit
 * significand, or the largest one (top), or one with its lowest bit set (odd). */
static double pbit_value(sf_test_rng *r, int p, int e, int kind) {
    const int64_t lo = (int64_t)1 << (p - 1), hi = ((int64_t)1 << p) - 1;
    int64_t m = kind == 1 ? hi : sf_test_rng_int(r, lo, hi);
    if (kind == 2) m |= 1;
    return ldexp((double)m, e - (p - 1));
}

/* One row's checks: when sf_cpu_sum_exact_* pass, their sum has the bytes of both
 * compensated forms (one chain, and the 8 lanes folded), whose error terms are +0; it is
 * the exact sum where xacc can hold the values; the float32 and double forms agree.
 * Returns whether the test passed. */
static bool exact_row(const double *x, int64_t K, int p, bool f32, bool normal, const char *what) {
    static float xf[600];
    double s64 = 0.0, s32 = 0.0;
    const bool ok64 = sf_cpu_sum_exact_f64(x, K, p, &s64);
    if (f32) {
        for (int64_t t = 0; t < K; t++) xf[t] = (float)x[t];
        const bool ok32 = sf_cpu_sum_exact_f32(xf, K, p, &s32);
        if (normal) CHECKF(ok32 == ok64, "%s: the float32 test says %d, the double one %d", what, ok32, ok64);
        if (ok32 && ok64) CHECKF(memcmp(&s32, &s64, sizeof s32) == 0, "%s: %a (float32) vs %a", what, s32, s64);
        if (!ok64 && ok32) s64 = s32;
        if (!normal && ok32 && !ok64) { /* the float32 form alone: check it below */
            exact_row_check(x, K, s32, what);
            return true;
        }
    }
    if (ok64) exact_row_check(x, K, s64, what);
    return ok64;
}

/* The primitive over float32 (p 24), float16 (11) and bfloat16 (8) values, rows of K from
 * 1 to 600 whose exponents span the test's limit L = 53 - p - ceil(log2 K) give or take
 * two: random rows, and tight ones (all but one at the largest magnitude and sign, one
 * at the smallest exponent with its lowest bit set); rows at or within the limit must
 * pass.  Then zeros of both signs (+0), infinities and NaN (never pass), float32
 * subnormals, values near float32's largest. */
static void exact_primitive(void) {
    static double x[600];
    static const int ps[] = {24, 11, 8};
    static const int64_t Ks[] = {1, 2, 3, 7, 15, 16, 17, 31, 63, 64, 65, 127, 128, 129, 511, 512, 600};
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0xE7AC7ull);
    int passed = 0, failed = 0;
    char what[160];
    for (size_t pi = 0; pi < 3; pi++) {
        const int p = ps[pi], emin = p == 11 ? -14 : -126, emax = p == 11 ? 15 : 127;
        for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
            const int64_t K = Ks[ki];
            const int lg = K <= 1 ? 0 : 64 - __builtin_clzll((unsigned long long)(K - 1));
            const int lim = 53 - p - lg;
            for (int d = lim - 2; d <= lim + 2; d++) {
                if (d < 0 || d > emax - emin) continue;
                for (int trial = 0; trial < 6; trial++) {
                    const bool tight = trial >= 3;
                    int e0 = (int)sf_test_rng_int(&rng, emin + d, emax);
                    if (trial % 3 == 1) e0 = (int)sf_test_rng_int(&rng, emin + d, emin + d + 2 < emax ? emin + d + 2 : emax);
                    for (int64_t t = 0; t < K; t++) {
                        int e = (int)sf_test_rng_int(&rng, e0 - d, e0);
                        double v = pbit_value(&rng, p, e, 0);
                        if (tight) v = t == K / 2 ? pbit_value(&rng, p, e0 - d, 2) : pbit_value(&rng, p, e0, 1);
                        else if (sf_test_rng_int(&rng, 0, 1)) v = -v;
                        x[t] = v;
                    }
                    if (!tight || K == 1) { x[0] = pbit_value(&rng, p, e0, 0); x[K - 1] = pbit_value(&rng, p, e0 - d, 0); }
                    snprintf(what, sizeof what, "p %d, K %lld, exponents over %d (limit %d), top 2^%d, %s", p,
                             (long long)K, d, lim, e0, tight ? "tight" : "random");
                    const bool ok = exact_row(x, K, p, p != 11, true, what);
                    if (d <= lim) CHECKF(ok, "%s: within the limit, but the test fails", what);
                    passed += ok;
                    failed += !ok;
                }
            }
        }
    }
    /* zeros: +0 from the test, and from the chains */
    for (int64_t K = 1; K <= 130; K += 43) {
        for (int64_t t = 0; t < K; t++) x[t] = t % 2 ? -0.0 : 0.0;
        CHECK(exact_row(x, K, 24, true, true, "zeros of both signs"));
        for (int64_t t = 0; t < K; t++) x[t] = -0.0;
        CHECK(exact_row(x, K, 24, true, true, "negative zeros"));
        x[K / 2] = 0x1.8p-3;
        x[0] = -0x1.8p-3;
        CHECK(exact_row(x, K, 24, true, true, "cancelling to zero"));
        x[K - 1] = INFINITY;
        CHECK(!exact_row(x, K, 24, true, true, "an infinity"));
        x[K - 1] = NAN;
        CHECK(!exact_row(x, K, 24, true, true, "a NaN"));
    }
    /* float32 subnormals among the smallest normals: the float32 form's field 0 reads
     * one below the exponent it stands for; either form passing must be exact */
    for (int trial = 0; trial < 40; trial++) {
        const int64_t K = sf_test_rng_int(&rng, 2, 200);
        for (int64_t t = 0; t < K; t++)
            x[t] = ldexp((double)sf_test_rng_int(&rng, 1, (1 << 23) - 1), -149) * (sf_test_rng_int(&rng, 0, 1) ? 1 : -1);
        x[0] = ldexp(1.0 + sf_test_rng_uniform(&rng), -126 + (int)sf_test_rng_int(&rng, 0, trial % 8));
        x[0] = (float)x[0];
        exact_row(x, K, 24, true, false, "float32 subnormals");
    }
    /* near float32's largest: sums leave float32's range, not double's */
    for (int64_t t = 0; t < 100; t++) x[t] = pbit_value(&rng, 24, 127, 1);
    CHECK(exact_row(x, 100, 24, true, true, "float32's largest values"));
    CHECKF(failed > 100 && passed > 500, "the limits' rows: %d passed, %d failed the test", passed, failed);
    printf("  exact short sums: %d rows passed the test with the compensated sums' bytes, %d did not pass\n",
           passed, failed);
}

/* Programs: sum and mean over rows (the fused float32 path: float32, bfloat16; the
 * generic one: float16, and mean) of 37, 130 and 600 elements (the last past one load
 * block), contiguous and every other element, on 1 and 3 threads, rows that pass the
 * exact test among rows that do not: the same bytes as with the test off. */
static void exact_programs(void) {
    static const scanfuse_dtype dts[] = {SCANFUSE_FLOAT32, SCANFUSE_BFLOAT16, SCANFUSE_FLOAT16};
    static const char *const calls[] = {"sum(x, dim=1)", "mean(x, dim=1)", "sum(x, dim=[0, 1], dtype=float32)"};
    static const int64_t Ks[] = {37, 130, 600};
    int cases = 0;
    for (size_t d = 0; d < 3; d++) {
        for (size_t c = 0; c < 3; c++) {
            for (size_t ki = 0; ki < 3; ki++) {
                const int64_t shape[2] = {9, Ks[ki]}, oshape[1] = {9};
                char text[256];
                snprintf(text, sizeof text, "input x: %s[9, %lld]\ny = %s\noutput y\n", scanfuse_dtype_name(dts[d]),
                         (long long)Ks[ki], calls[c]);
                for (int layout = L_CONTIG; layout <= L_SLICED; layout += L_SLICED - L_CONTIG) {
                    tbuf in, o1, o2;
                    const int ond = c == 2 ? 0 : 1;
                    bool ok = tb_init(&in, dts[d], 2, shape, layout) &&
                              tb_init(&o1, c == 2 ? SCANFUSE_FLOAT32 : dts[d], ond, oshape, L_CONTIG) &&
                              tb_init(&o2, c == 2 ? SCANFUSE_FLOAT32 : dts[d], ond, oshape, L_CONTIG);
                    CHECK(ok);
                    if (!ok) return;
                    sf_test_rng rng;
                    sf_test_rng_seed(&rng, 0xE7A2ull + d * 7 + c);
                    for (int64_t j = 0; j < in.numel; j++) {
                        const int64_t row = j / Ks[ki];
                        /* rows 0-3 narrow (pass), 4-6 wide (fail), 7 with a tiny value,
                         * 8 with a NaN or an infinity */
                        const int spread = row < 4 ? 4 : row < 7 ? 24 : 6;
                        double v = ldexp(2 * sf_test_rng_uniform(&rng) - 1, -(int)sf_test_rng_int(&rng, 0, spread));
                        if (row == 7 && j % Ks[ki] == 5) v = 0x1p-13;
                        if (row == 8 && j % Ks[ki] == 11) v = c == 1 ? NAN : INFINITY;
                        sf_store_f64(in.base, tb_offset(&in, j), dts[d], v);
                    }
                    for (int threads = 1; threads <= 3 && ok; threads += 2) {
                        sf_cpu_sum_exact_off = true;
                        ok = run_text(text, threads, &in, &o1) == SCANFUSE_OK;
                        sf_cpu_sum_exact_off = false;
                        ok = ok && run_text(text, threads, &in, &o2) == SCANFUSE_OK;
                        CHECKF(ok && memcmp(o1.base, o2.base, (size_t)o1.numel * o1.esize) == 0,
                               "%s, %s layout, %d threads: the exact test changes the bytes", text,
                               sw_layout_name(layout), threads);
                        cases++;
                    }
                    tb_free(&in);
                    tb_free(&o1);
                    tb_free(&o2);
                }
            }
        }
    }
    printf("  exact short sums in programs: %d cases, the bytes of the compensated sums\n", cases);
}

/* Row max and min, argmax and argmin (cpu_reduce.c, maxmin_row and argext_row: groups of
 * 8 in vector lanes), and the same as columns of [K, 9] (extreme_cols: 8 outputs in
 * lanes, one more), against the scalar rules computed here, bit for bit, over K = 1000
 * (two tiles), 100, 40, 24 and 9: NaNs of distinct payloads (max/min: the last one stays;
 * argmax/argmin: the first), in the lanes or only in the tail, zeros of both signs (of
 * equal values the first stays), infinities, extremes repeated. */
static double nan_with(uint64_t payload) {
    uint64_t b = 0x7FF8000000000000ull | (payload & 0xFFFFFFFFull);
    double d;
    memcpy(&d, &b, 8);
    return d;
}

/* The program of maxmin_rule_case: op over the K elements of each of R rows, or of each
 * of R columns of the transposed input (cols). */
static void rule_text(char *text, size_t len, const char *op, int R, int64_t K, bool cols) {
    if (cols)
        snprintf(text, len, "input x: float64[%lld, %d]\ny = %s(x, dim=0)\noutput y\n", (long long)K, R, op);
    else
        snprintf(text, len, "input x: float64[%d, %lld]\ny = %s(x, dim=1)\noutput y\n", R, (long long)K, op);
}

static void maxmin_rule_case(int64_t K) {
    enum { R = 9 };
    int64_t shape[2] = {R, K}, tshape[2] = {K, R}, oshape[1] = {R};
    tbuf in, tin, out, want;
    memset(&tin, 0, sizeof tin);
    memset(&out, 0, sizeof out);
    memset(&want, 0, sizeof want);
    if (!tb_init(&in, SCANFUSE_FLOAT64, 2, shape, L_CONTIG) || !tb_init(&tin, SCANFUSE_FLOAT64, 2, tshape, L_CONTIG) ||
        !tb_init(&out, SCANFUSE_FLOAT64, 1, oshape, L_CONTIG) ||
        !tb_init(&want, SCANFUSE_FLOAT64, 1, oshape, L_CONTIG)) {
        CHECKF(0, "out of memory");
        goto done;
    }
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0x3A11ull + (uint64_t)K);
    double *x = (double *)(void *)in.base;
    for (int r = 0; r < R; r++) {
        double *row = x + r * K;
        for (int64_t j = 0; j < K; j++) row[j] = ldexp(2 * sf_test_rng_uniform(&rng) - 1, (int)sf_test_rng_int(&rng, -20, 20));
        switch (r) {
        case 1: for (int64_t j = 0; j < K; j++) row[j] = (j % 3 == 1) ? 0.0 : -0.0; break; /* zeros only */
        case 2: row[3 % K] = nan_with(11); row[(K * 7) / 10] = nan_with(22); break;
        case 3: row[K - 2 > 0 ? K - 2 : 0] = nan_with(33); break; /* in the tail of 1000 */
        case 4: row[5 % K] = INFINITY; row[(K / 2) | 1] = -INFINITY; break;
        case 5: for (int64_t j = 0; j < K; j++) row[j] = -fabs(row[j]); row[K / 3] = -0.0; row[K / 2] = 0.0; break;
        case 6: row[K / 4] = row[(K * 3) / 4] = 0x1p30; row[(K * 3) / 5] = -0x1p30; break; /* extremes twice */
        case 7: for (int64_t j = 0; j < K; j++) row[j] = (j % 2) ? 0.0 : -0.0; row[K - 1] = nan_with(44); break;
        case 8: /* four values: each extreme many times, first anywhere */
            for (int64_t j = 0; j < K; j++) row[j] = ((double)sf_test_rng_int(&rng, 0, 3) - 1.5) / 1.5;
            break;
        default: break;
        }
    }
    /* the same rows as the columns of [K, 9]: column mode's 9 outputs a position (a group
     * of 8 in vector lanes, extreme_cols, and one more) */
    for (int r = 0; r < R; r++)
        for (int64_t j = 0; j < K; j++) ((double *)(void *)tin.base)[j * R + r] = x[r * K + j];
    for (int mx = 0; mx < 2; mx++) { /* argmin, argmax: the rule's index */
        int64_t wi[R];
        for (int r = 0; r < R; r++) {
            double h = 0.0;
            int64_t id = -1;
            for (int64_t j = 0; j < K; j++) {
                double v = x[r * K + j];
                if (id < 0 || (!isnan(h) && (isnan(v) || (mx ? v > h : v < h)))) {
                    h = v;
                    id = j;
                }
            }
            wi[r] = id;
        }
        for (int cols = 0; cols < 2; cols++) {
            char text[128];
            rule_text(text, sizeof text, mx ? "argmax" : "argmin", R, K, cols);
            for (int threads = 1; threads <= 2; threads++) {
                tbuf yi;
                if (!tb_init(&yi, SCANFUSE_INT64, 1, oshape, L_CONTIG)) break;
                bool ran = run_text(text, threads, cols ? &tin : &in, &yi) == SCANFUSE_OK;
                for (int r = 0; r < R && ran; r++)
                    CHECKF(((int64_t *)(void *)yi.base)[r] == wi[r], "%s over %s of %lld, %d: %lld, rule %lld",
                           mx ? "argmax" : "argmin", cols ? "columns" : "rows", (long long)K, r,
                           (long long)((int64_t *)(void *)yi.base)[r], (long long)wi[r]);
                CHECKF(ran, "%s: did not run", text);
                tb_free(&yi);
            }
        }
    }
    for (int mx = 0; mx < 2; mx++) {
        double *w = (double *)(void *)want.base;
        for (int r = 0; r < R; r++) { /* the scalar rule */
            double h = mx ? -INFINITY : INFINITY;
            for (int64_t j = 0; j < K; j++) {
                double v = x[r * K + j];
                if (isnan(v) || (mx ? v > h : v < h)) h = v;
            }
            w[r] = h;
        }
        for (int cols = 0; cols < 2; cols++) {
            char text[128];
            rule_text(text, sizeof text, mx ? "max" : "min", R, K, cols);
            for (int threads = 1; threads <= 2; threads++) {
                memset(out.base, 0, (size_t)R * 8);
                bool ran = run_text(text, threads, cols ? &tin : &in, &out) == SCANFUSE_OK;
                for (int r = 0; r < R && ran; r++)
                    CHECKF(memcmp(out.base + r * 8, want.base + r * 8, 8) == 0, "%s over %s of %lld, %d: %a, rule %a",
                           mx ? "max" : "min", cols ? "columns" : "rows", (long long)K, r,
                           ((double *)(void *)out.base)[r], w[r]);
                CHECKF(ran, "%s: did not run", text);
            }
        }
    }
done:
    tb_free(&in);
    tb_free(&tin);
    tb_free(&out);
    tb_free(&want);
}

static void maxmin_rule(void) {
    maxmin_rule_case(1000);
    maxmin_rule_case(100);
    maxmin_rule_case(40);
    maxmin_rule_case(24);
    maxmin_rule_case(9);
    printf("  row and column max, min, argmax and argmin: the scalar rules' bytes (NaN payloads, signed zeros)\n");
}

/* ---------------------------------------------------------------------------------- */
/* logcumsumexp: special values, and the row and column walks agreeing bit for bit    */
/* ---------------------------------------------------------------------------------- */

static bool same_f64(double a, double b, int ulps) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs(a - b) <= ulps * (nextafter(fabs(b), INFINITY) - fabs(b));
}

/* A contiguous 1-D tensor of dtype dt holding x[0..n) (each stored as a store rounds
 * it).  false: out of memory. */
static bool tb_values(tbuf *t, scanfuse_dtype dt, int64_t n, const double *x) {
    if (!tb_init(t, dt, 1, &n, 0)) return false;
    for (int64_t j = 0; j < n; j++) sf_store_f64(t->base, tb_offset(t, j), dt, x[j]);
    return true;
}

static void lse_cases(void) {
    /* -inf adds nothing, an infinite maximum gives that infinity, NaN propagates, the
     * exclusive scan starts at -inf */
    const double x[] = {-INFINITY, -INFINITY, 0.0, 0.0, -INFINITY, 5.0, INFINITY, 1.0, NAN, 2.0};
    const double l25 = log(2.0 + exp(5.0));
    const double incl[] = {-INFINITY, -INFINITY, 0.0, log(2.0), log(2.0), l25, INFINITY, INFINITY, NAN, NAN};
    int64_t n = 10;
    /* float64 results take the log_add_exp chain, float32 ones the (max, sum) kernel */
    for (int f32 = 0; f32 < 2; f32++)
        for (int excl = 0; excl < 2; excl++) {
            scanfuse_dtype dt = f32 ? SCANFUSE_FLOAT32 : SCANFUSE_FLOAT64;
            tbuf in, out;
            CHECK(tb_values(&in, dt, n, x) && tb_init(&out, dt, 1, &n, 0));
            char text[160];
            snprintf(text, sizeof text, "input x: %s[10]\ny = logcumsumexp(x, dim=0%s)\noutput y\n",
                     f32 ? "float32" : "float64", excl ? ", exclusive=true" : "");
            CHECK(run_text(text, 1, &in, &out) == SCANFUSE_OK);
            for (int64_t j = 0; j < n; j++) {
                double want = excl ? (j ? incl[j - 1] : -INFINITY) : incl[j];
                if (f32) want = (double)(float)want; /* the correctly rounded float32 */
                double got = tb_get_f(&out, j);
                CHECKF(f32 ? (isnan(want) ? isnan(got) : got == want) : same_f64(got, want, 2),
                       "logcumsumexp %s%s element %lld: %.17g, want %.17g", f32 ? "float32" : "float64",
                       excl ? " (exclusive)" : "", (long long)j, got, want);
            }
            tb_free(&in);
            tb_free(&out);
        }
    /* the same values scanned as rows ([3, n], dim 1: the row walk) and as columns
     * ([n, 3], dim 0: the column walk), across tile boundaries, with -inf and a few
     * large jumps of the maximum */
    enum { LEN = 1500, COLS = 3 };
    int64_t srow[2] = {COLS, LEN}, scol[2] = {LEN, COLS};
    tbuf ri, ro, ci, co;
    CHECK(tb_init(&ri, SCANFUSE_FLOAT32, 2, srow, 0) && tb_init(&ro, SCANFUSE_FLOAT32, 2, srow, 0) &&
          tb_init(&ci, SCANFUSE_FLOAT32, 2, scol, 0) && tb_init(&co, SCANFUSE_FLOAT32, 2, scol, 0));
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 77);
    for (int64_t c = 0; c < COLS; c++)
        for (int64_t t = 0; t < LEN; t++) {
            double v = 4.0 * sf_test_rng_uniform(&rng) - 2.0;
            if (t % 97 == 5) v = -INFINITY;
            if (t % 331 == 7) v += 40.0 * (double)(t / 331);
            sf_store_f64(ri.base, tb_offset(&ri, c * LEN + t), ri.dt, v);
            sf_store_f64(ci.base, tb_offset(&ci, t * COLS + c), ci.dt, v);
        }
    CHECK(run_text("input x: float32[3, 1500]\ny = logcumsumexp(x, dim=1)\noutput y\n", 1, &ri, &ro) ==
          SCANFUSE_OK);
    CHECK(run_text("input x: float32[1500, 3]\ny = logcumsumexp(x, dim=0)\noutput y\n", 1, &ci, &co) ==
          SCANFUSE_OK);
    int64_t bad = 0;
    for (int64_t c = 0; c < COLS; c++)
        for (int64_t t = 0; t < LEN; t++) {
            double a = tb_get_f(&ro, c * LEN + t), b = tb_get_f(&co, t * COLS + c);
            bad += memcmp(&a, &b, sizeof a) != 0;
        }
    CHECKF(bad == 0, "logcumsumexp: %lld elements differ between the row and column walks",
           (long long)bad);
    tb_free(&ri);
    tb_free(&ro);
    tb_free(&ci);
    tb_free(&co);
}

/* ---------------------------------------------------------------------------------- */
/* float16 / bfloat16 stores and loads: the vectorized blocks against the scalar ones   */
/* ---------------------------------------------------------------------------------- */

static void half_store_cases(void) {
    enum { N = 6007 };
    double *x = malloc(N * sizeof *x);
    uint16_t *got = malloc(3 * N * sizeof *got);
    CHECK(x != NULL && got != NULL);
    if (!x || !got) {
        free(x);
        free(got);
        return;
    }
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 515);
    for (int bf = 0; bf < 2; bf++) {
        const scanfuse_dtype dt = bf ? SCANFUSE_BFLOAT16 : SCANFUSE_FLOAT16;
        const int keep = bf ? 7 : 10, emin = bf ? -126 : -14, emax = bf ? 127 : 15;
        for (int64_t j = 0; j < N; j++) {
            const double u = sf_test_rng_uniform(&rng);
            const int kind = (int)(j % 6);
            if (kind == 0) { /* any bits: NaN, infinities, subnormals, out of range */
                const uint64_t b = sf_test_rng_next(&rng);
                memcpy(&x[j], &b, 8);
            } else if (kind == 1) { /* a tie or a hair either side, at any exponent in range */
                const int e = (int)sf_test_rng_int(&rng, emin - 12, emax + 1);
                const double q = ldexp(floor(ldexp(1.0 + u, keep)) + 0.5, e - keep);
                const int64_t side = sf_test_rng_int(&rng, -1, 1);
                x[j] = side == 0 ? q : side > 0 ? nextafter(q, INFINITY) : nextafter(q, -INFINITY);
            } else if (kind == 2) { /* the edges: largest finite, smallest normal */
                const double big = ldexp(2.0 - ldexp(1.0, -keep), emax), tiny = ldexp(1.0, emin);
                const double edge[] = {big, nextafter(big, INFINITY), big + ldexp(1.0, emax - keep - 1),
                                       nextafter(big + ldexp(1.0, emax - keep - 1), 0.0), tiny,
                                       nextafter(tiny, 0.0), tiny - ldexp(1.0, emin - keep - 1), 0.0, -0.0,
                                       4.9e-324};
                x[j] = edge[sf_test_rng_int(&rng, 0, 9)];
            } else { /* ordinary values over the format's range and a little past it */
                x[j] = ldexp(2.0 * u - 1.0, (int)sf_test_rng_int(&rng, emin - 14, emax + 2));
            }
            if (sf_test_rng_next(&rng) & 1) x[j] = -x[j];
        }
        /* stride 1 and 3 in one call; then element by element (stride 0 below), so that
         * no other element of a block sends the whole block down the scalar path */
        for (int stride = 0; stride <= 3; stride += stride ? 2 : 1) {
            memset(got, 0xA5, 3 * N * sizeof *got);
            if (stride) sf_cpu_store_f64(got, dt, 1, stride, N - 1, x); /* from element 1: an odd start */
            else
                for (int64_t j = 0; j < N - 1; j++) sf_cpu_store_f64(got, dt, 1 + j, 1, 1, &x[j]);
            int64_t bad = 0;
            for (int64_t j = 0; j < N - 1; j++) {
                const uint16_t want = bf ? sf_cpu_f64_to_bf16(x[j]) : sf_cpu_f64_to_f16(x[j]);
                const uint16_t g = got[1 + j * (stride ? stride : 1)];
                if (g != want && bad++ < 3)
                    fprintf(stderr, "  %s store of %a: %04x, want %04x\n", scanfuse_dtype_name(dt), x[j], g, want);
            }
            CHECKF(bad == 0 && got[0] == 0xA5A5, "%s stores (%s): %lld of %d differ from the scalar rounding",
                   scanfuse_dtype_name(dt), stride == 0 ? "one at a time" : stride == 1 ? "stride 1" : "stride 3",
                   (long long)bad, N - 1);
        }
    }
    /* and back: every float16 and bfloat16 bit pattern loaded as a double (the loads'
     * vectorized conversion) against the scalar one, bit for bit (NaN payloads too) */
    uint16_t *all = malloc(65536 * sizeof *all);
    double *back = malloc(65536 * sizeof *back);
    CHECK(all != NULL && back != NULL);
    for (int bf = 0; all && back && bf < 2; bf++) {
        const scanfuse_dtype dt = bf ? SCANFUSE_BFLOAT16 : SCANFUSE_FLOAT16;
        for (int64_t j = 0; j < 65536; j++) all[j] = (uint16_t)j;
        sf_cpu_gather_f64(all, dt, 0, 1, 65536, SCANFUSE_FLOAT64, back);
        int64_t bad = 0;
        for (int64_t j = 0; j < 65536; j++) {
            const double want = bf ? sf_cpu_bf16_to_f64((uint16_t)j) : sf_cpu_f16_to_f64((uint16_t)j);
            bad += memcmp(&want, &back[j], 8) != 0;
        }
        CHECKF(bad == 0, "%s loads: %lld of 65536 bit patterns differ from the scalar conversion",
               scanfuse_dtype_name(dt), (long long)bad);
    }
    free(all);
    free(back);
    free(x);
    free(got);
}

/* ---------------------------------------------------------------------------------- */
/* exp and the ops built on it (sigmoid, silu): the CPU's table-driven e^x against      */
/* libm's, over double's whole range, its edges and the arguments that leave the table */
/* ---------------------------------------------------------------------------------- */

static void exp_cases(void) {
    const double edge[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1e-300, -1e-300, 4.9e-324,
                           0x1.62e42fefa39efp-7, -0x1.62e42fefa39efp-7, 0x1.62e42fefa39efp-8,
                           708.0, 708.39, 708.4, 709.0, 709.7, 709.78, 709.79, 710.0, 1e300,
                           -708.0, -708.39, -708.4, -709.0, -744.4, -745.1, -745.2, -1e300,
                           87.0, 88.72, 88.73, 89.0, -87.3, -103.9, -104.0};
    const int64_t ne = (int64_t)(sizeof edge / sizeof edge[0]);
    const int64_t n = 20011; /* edges, then random arguments; not a multiple of any block */
    double *x = malloc((size_t)n * sizeof *x);
    CHECK(x != NULL);
    if (!x) return;
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 4242);
    for (int64_t j = 0; j < n; j++) {
        double u = sf_test_rng_uniform(&rng);
        x[j] = j < ne ? edge[j] : j % 3 == 0 ? 1460.0 * u - 750.0 : j % 3 == 1 ? 2.0 * u - 1.0 : 200.0 * u - 105.0;
    }
    static const char *const ops[3] = {"exp", "sigmoid", "silu"};
    for (int f32 = 0; f32 < 2; f32++)
        for (int o = 0; o < 3; o++) {
            scanfuse_dtype dt = f32 ? SCANFUSE_FLOAT32 : SCANFUSE_FLOAT64;
            tbuf in, out;
            CHECK(tb_values(&in, dt, n, x) && tb_init(&out, dt, 1, &n, 0));
            char text[160];
            snprintf(text, sizeof text, "input x: %s[%lld]\ny = %s(x)\noutput y\n", f32 ? "float32" : "float64",
                     (long long)n, ops[o]);
            CHECK(run_text(text, 2, &in, &out) == SCANFUSE_OK);
            int64_t bad = 0;
            for (int64_t j = 0; j < n; j++) {
                const double a = tb_get_f(&in, j), e = exp(o == 0 ? a : -a);
                double want = o == 0 ? e : o == 1 ? 1.0 / (1.0 + e) : a / (1.0 + e);
                if (f32) want = (double)(float)want;
                const double got = tb_get_f(&out, j);
                /* float64: within an ulp of libm's (exp) or of its formula (sigmoid, silu:
                 * their own roundings on top); float32: libm's rounded, or an ulp off it
                 * where e^x lies within an ulp of double of a rounding boundary */
                bool ok;
                if (!f32 && o == 0 && LDBL_MANT_DIG >= 64 && isfinite(want) && want > 0x1p-1021)
                    /* against e^x to 64 bits or more: the table method's bound, half an ulp
                     * and a little (a wrong table entry or term is an ulp or more) */
                    ok = fabsl((long double)got - expl((long double)a)) <= 0.53L * (nextafter(got, INFINITY) - got);
                else if (!f32) ok = same_f64(got, want, o == 0 ? 1 : 3);
                else if (isnan(want) || isinf(want)) ok = same_f64(got, want, 0);
                else ok = fabs(got - want) <= nextafterf((float)fabs(want), INFINITY) - (float)fabs(want);
                if (!ok && bad++ < 3)
                    fprintf(stderr, "  %s %s(%.17g) = %.17g, want %.17g\n", f32 ? "float32" : "float64", ops[o], a,
                            got, want);
            }
            CHECKF(bad == 0, "%s of %s: %lld of %lld elements outside the bound", ops[o], f32 ? "float32" : "float64",
                   (long long)bad, (long long)n);
            tb_free(&in);
            tb_free(&out);
        }
    free(x);
}

/* ---------------------------------------------------------------------------------- */
/* cumprod/prod: a power of two carried beside the double (sf_prodx), so the running   */
/* product leaves double's range and comes back, and every walk agrees bit for bit     */
/* ---------------------------------------------------------------------------------- */

/* One sequence: x[n] of dtype dt, its inclusive cumprod want[n] (exact powers of two
 * times small integers, so every value is known), prod = want[n - 1]. */
static void prod_sequence(scanfuse_dtype dt, const double *x, const double *want, int64_t n) {
    const char *dn = scanfuse_dtype_name(dt);
    for (int form = 0; form < 3; form++) { /* inclusive, exclusive, prod */
        tbuf in, out;
        int64_t one = 1;
        CHECK(tb_values(&in, dt, n, x) && tb_init(&out, dt, form == 2 ? 0 : 1, form == 2 ? &one : &n, 0));
        char text[200];
        snprintf(text, sizeof text, "input x: %s[%lld]\ny = %s\noutput y\n", dn, (long long)n,
                 form == 0 ? "cumprod(x, dim=0)" : form == 1 ? "cumprod(x, dim=0, exclusive=true)" : "prod(x)");
        for (int dev = 0; dev < 2; dev++) {
            CHECK(run_text_on(text, dev ? SCANFUSE_DEVICE_REFERENCE : SCANFUSE_DEVICE_CPU, 1, &in, &out) ==
                  SCANFUSE_OK);
            for (int64_t j = 0; j < (form == 2 ? 1 : n); j++) {
                double w = form == 2 ? want[n - 1] : form == 1 ? (j ? want[j - 1] : 1.0) : want[j];
                w = sf_round_to(w, dt);
                double got = tb_get_f(&out, j);
                CHECKF(got == w || (isnan(got) && isnan(w)), "%s %s on the %s, element %lld: %.17g, want %.17g",
                       dn, form == 0 ? "cumprod" : form == 1 ? "exclusive cumprod" : "prod",
                       dev ? "reference" : "CPU", (long long)j, got, w);
            }
        }
        tb_free(&in);
        tb_free(&out);
    }
}

static void prod_cases(void) {
    /* float64: under double's range and back, a subnormal input, over it and back, then a
     * zero times a stretch that overflows on its own (0, not NaN) */
    const double x64[] = {0x1p-600, 0x1p-600, 0x1p600, 0x1p600, 0x1p-1074, 0x1p1000, 0x1p74, 3.0,
                          0x1p1023, 0x1p1023, 0x1p-1023, 0x1p-1023, 5.0, 0.0, 0x1p1000, 0x1p1000, 7.0};
    const double w64[] = {0x1p-600, 0.0, 0x1p-600, 1.0, 0x1p-1074, 0x1p-74, 1.0, 3.0,
                          INFINITY, INFINITY, INFINITY, 3.0, 15.0, 0.0, 0.0, 0.0, 0.0};
    prod_sequence(SCANFUSE_FLOAT64, x64, w64, (int64_t)(sizeof x64 / sizeof x64[0]));
    /* float32: eleven factors of 2^100 (2^1100 overflows double), eleven of 2^-100, 0.5 */
    double x32[23], w32[23];
    for (int j = 0; j < 23; j++) {
        x32[j] = j < 11 ? 0x1p100 : j < 22 ? 0x1p-100 : 0.5;
        int e = j < 11 ? 100 * (j + 1) : j < 22 ? 100 * (21 - j) : -1;
        w32[j] = e > 1023 ? INFINITY : ldexp(1.0, e);
    }
    prod_sequence(SCANFUSE_FLOAT32, x32, w32, 23);

    /* the same wide-magnitude values (products of up to ~2^2000 either way, zeros, an
     * infinity) scanned as rows ([6, n], dim 1: the row chain), as columns ([n, 6], dim 0:
     * the column walk), at 1 and 3 threads, as float64 results of float32 inputs (the
     * generic path), and by the reference: all in order, so all the same bits */
    enum { LEN = 3000, COLS = 6 }; /* (six rows: the row kernel's four at a time, then two) */
    int64_t srow[2] = {COLS, LEN}, scol[2] = {LEN, COLS};
    tbuf ri, ro, ci, co, rr, gi, go;
    CHECK(tb_init(&ri, SCANFUSE_FLOAT32, 2, srow, 0) && tb_init(&ro, SCANFUSE_FLOAT32, 2, srow, 0) &&
          tb_init(&ci, SCANFUSE_FLOAT32, 2, scol, 0) && tb_init(&co, SCANFUSE_FLOAT32, 2, scol, 0) &&
          tb_init(&rr, SCANFUSE_FLOAT32, 2, srow, 0) && tb_init(&gi, SCANFUSE_FLOAT32, 2, srow, 0) &&
          tb_init(&go, SCANFUSE_FLOAT64, 2, srow, 0));
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0x9E0D);
    for (int64_t c = 0; c < COLS; c++)
        for (int64_t t = 0; t < LEN; t++) {
            double v = (sf_test_rng_next(&rng) & 1 ? -1 : 1) * exp2(240.0 * sf_test_rng_uniform(&rng) - 120.0);
            if (t % 1009 == 500 + c) v = 0.0;
            if (c == 2 && t == 2500) v = INFINITY;
            sf_store_f64(ri.base, tb_offset(&ri, c * LEN + t), ri.dt, v);
            sf_store_f64(gi.base, tb_offset(&gi, c * LEN + t), gi.dt, v);
            sf_store_f64(ci.base, tb_offset(&ci, t * COLS + c), ci.dt, v);
        }
    static const char row[] = "input x: float32[6, 3000]\ny = cumprod(x, dim=1)\noutput y\n";
    static const char col[] = "input x: float32[3000, 6]\ny = cumprod(x, dim=0)\noutput y\n";
    static const char gen[] = "input x: float32[6, 3000]\ny = cumprod(x, dim=1, dtype=float64)\noutput y\n";
    CHECK(run_text_on(row, SCANFUSE_DEVICE_REFERENCE, 1, &ri, &rr) == SCANFUSE_OK);
    int64_t nonfinite = 0, finite = 0;
    for (int64_t q = 0; q < COLS * LEN; q++) {
        double v = tb_get_f(&rr, q);
        if (isfinite(v) && v != 0) finite++;
        else nonfinite++;
    }
    CHECKF(finite > 100 && nonfinite > 100, "prod walks: %lld finite nonzero and %lld other results (want both)",
           (long long)finite, (long long)nonfinite);
    for (int threads = 1; threads <= 3; threads += 2) {
        CHECK(run_text(row, threads, &ri, &ro) == SCANFUSE_OK);
        CHECK(run_text(col, threads, &ci, &co) == SCANFUSE_OK);
        CHECK(run_text(gen, threads, &gi, &go) == SCANFUSE_OK);
        int64_t bad_row = 0, bad_col = 0, bad_gen = 0;
        for (int64_t c = 0; c < COLS; c++)
            for (int64_t t = 0; t < LEN; t++) {
                double want = tb_get_f(&rr, c * LEN + t), a = tb_get_f(&ro, c * LEN + t);
                double b = tb_get_f(&co, t * COLS + c), g = sf_round_to(tb_get_f(&go, c * LEN + t), SCANFUSE_FLOAT32);
                bad_row += memcmp(&a, &want, sizeof a) != 0;
                bad_col += memcmp(&b, &want, sizeof b) != 0;
                bad_gen += memcmp(&g, &want, sizeof g) != 0 && !(isnan(g) && isnan(want));
            }
        CHECKF(bad_row == 0 && bad_col == 0 && bad_gen == 0,
               "cumprod walks at %d threads: %lld (rows), %lld (columns), %lld (float64 results) of %d "
               "elements differ from the reference", threads, (long long)bad_row, (long long)bad_col,
               (long long)bad_gen, COLS * LEN);
    }
    tb_free(&ri);
    tb_free(&ro);
    tb_free(&ci);
    tb_free(&co);
    tb_free(&rr);
    tb_free(&gi);
    tb_free(&go);
}

/* ---------------------------------------------------------------------------------- */

static void self_test(void) {
    /* the exact accumulator: (2^60 + 1) - 2^60 with tiny values around */
    xacc a;
    memset(&a, 0, sizeof a);
    CHECK(xacc_add(&a, ldexp(1, 60)));
    CHECK(xacc_add(&a, ldexp(1, -100)));
    CHECK(xacc_add(&a, -ldexp(1, 60)));
    CHECK(xacc_value(&a) == ldexp(1, -100));
    CHECK(xacc_add(&a, -ldexp(3, -100)));
    CHECK(xacc_value(&a) == -ldexp(1, -99));
    memset(&a, 0, sizeof a);
    double naive = 0;
    for (int i = 0; i < 1000; i++) {
        CHECK(xacc_add(&a, 0.1));
        naive += 0.1;
    }
    CHECK(fabs(xacc_value(&a) - 100.0) < 1e-12 && xacc_value(&a) != naive);
}

/* Long sums in chunks (cpu.h, SF_SUM_CHUNK): the definition written out here with scalar
 * compensated additions (8 chains a chunk by position, folded, chunks folded in order)
 * against programs on 1, 2 and 3 threads: float32 sums into float32 (the fused float32
 * path, its chunks on the pool), into float64 and means (the generic path), bfloat16 and
 * strided float32 (loaded), and a sum over two dims whose runs of 70001 cross the chunk
 * boundaries (the chunked lanes of sf_sum2_acc).  Values of wide magnitudes, cancelling in
 * part, so that the compensation terms carry bits that a different fold would change. */
static void long_def(const double *x, int64_t K, double *S, double *C) {
    *S = *C = 0.0;
    for (int64_t a = 0; a < K || (K == 0 && a == 0); a += SF_SUM_CHUNK) {
        double hi[8] = {0}, lo[8] = {0}, s = 0.0, c = 0.0;
        for (int64_t p = a; p < K && p < a + SF_SUM_CHUNK; p++) sf_cpu_sum2_add(&hi[(p - a) % 8], &lo[(p - a) % 8], x[p]);
        for (int l = 0; l < 8; l++) {
            sf_cpu_sum2_add(&s, &c, hi[l]);
            c += lo[l];
        }
        if (a == 0) {
            *S = s;
            *C = c;
        } else {
            sf_cpu_sum2_add(S, C, s);
            *C += c;
        }
        if (K == 0) break;
    }
}

/* Runs text (x in `in`, the scalar result in `out`) at 1 to 3 threads, by th_step, and
 * expects the result's bytes to be want's; returns the runs made. */
static int long_sum_runs(const char *text, const char *what, int th_step, tbuf *in, tbuf *out, double want) {
    int runs = 0;
    for (int th = 1; th <= 3; th += th_step) {
        bool ran = run_text(text, th, in, out) == SCANFUSE_OK;
        double got = ran ? tb_get_f(out, 0) : NAN;
        CHECKF(ran && memcmp(&got, &want, sizeof got) == 0, "%s (%d threads): %a, the chunked definition %a",
               what, th, got, want);
        runs++;
    }
    return runs;
}

static void long_sums(void) {
    static const int64_t Ks[] = {SF_SUM_CHUNK + 1, 3 * SF_SUM_CHUNK + 77, 1048581};
    static const char *const calls[] = {"sum(x)", "sum(x, dtype=float64)", "mean(x)"};
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0x10C5ull);
    int cases = 0;
    for (int ki = 0; ki < 3; ki++) {
        const int64_t K = Ks[ki];
        double *v = malloc((size_t)K * sizeof *v);
        if (!v) {
            CHECKF(0, "out of memory");
            return;
        }
        for (int di = 0; di < 2; di++) {
            const scanfuse_dtype dt = di ? SCANFUSE_BFLOAT16 : SCANFUSE_FLOAT32;
            for (int64_t i = 0; i < K; i++) {
                double u = ldexp(2 * sf_test_rng_uniform(&rng) - 1, (int)sf_test_rng_int(&rng, -12, 12));
                if (i % 1000 == 7) u = ldexp(1.0, 30); /* big ones, taken back 500 later */
                if (i % 1000 == 507) u = -ldexp(1.0, 30);
                v[i] = sf_round_to(u, dt);
            }
            double S, C;
            long_def(v, K, &S, &C);
            for (int ci = 0; ci < 3; ci++) {
                const scanfuse_dtype rd = ci == 1 ? SCANFUSE_FLOAT64 : dt == SCANFUSE_BFLOAT16 && ci == 2 ? dt : ci == 0 ? SCANFUSE_FLOAT32 : dt;
                char text[160];
                if (ci == 0)
                    snprintf(text, sizeof text, "input x: %s[%lld]\ny = sum(x, dtype=float32)\noutput y\n",
                             scanfuse_dtype_name(dt), (long long)K);
                else
                    snprintf(text, sizeof text, "input x: %s[%lld]\ny = %s\noutput y\n", scanfuse_dtype_name(dt),
                             (long long)K, calls[ci]);
                double want;
                if (ci == 2) {
                    /* sum2_div of cpu_reduce.c: (S + C) / K rounded once */
                    double hi = S + C, lo = C - (hi - S), q1 = hi / (double)K;
                    double rem = fma(-q1, (double)K, hi) + lo, q2 = rem / (double)K, h = q1 + q2;
                    want = sf_round_to(rd == SCANFUSE_FLOAT64 ? h : sf_cpu_dd_to_odd(h, q2 - (h - q1)), rd);
                } else {
                    want = sf_round_to(sf_cpu_sum2_result(S, C, rd), rd);
                }
                for (int layout = 0; layout < 2; layout++) {
                    const int64_t shape[1] = {K};
                    tbuf in, out;
                    memset(&out, 0, sizeof out);
                    if (!tb_init(&in, dt, 1, shape, layout ? L_SLICED : L_CONTIG)) {
                        CHECKF(0, "out of memory");
                        continue;
                    }
                    for (int64_t i = 0; i < K; i++) sf_store_f64(in.base, tb_offset(&in, i), dt, v[i]);
                    if (tb_init(&out, rd, 0, NULL, L_CONTIG)) {
                        char what[200];
                        snprintf(what, sizeof what, "%s (%s)", text, layout ? "strided" : "contiguous");
                        cases += long_sum_runs(text, what, 1, &in, &out, want);
                        tb_free(&out);
                    }
                    tb_free(&in);
                }
            }
        }
        free(v);
    }
    /* float32 summed into float16: each value rounded to float16 first (the conversion
     * of the result dtype), then the chunks */
    {
        const int64_t K = 2 * SF_SUM_CHUNK + 5, shape[1] = {K};
        tbuf in, out;
        double *v = malloc((size_t)K * sizeof *v);
        if (v && tb_init(&in, SCANFUSE_FLOAT32, 1, shape, L_CONTIG) && tb_init(&out, SCANFUSE_FLOAT16, 0, NULL, L_CONTIG)) {
            for (int64_t i = 0; i < K; i++) {
                const double u = (float)ldexp(2 * sf_test_rng_uniform(&rng) - 1, (int)sf_test_rng_int(&rng, -20, 3));
                sf_store_f64(in.base, tb_offset(&in, i), SCANFUSE_FLOAT32, u);
                v[i] = sf_round_to(u, SCANFUSE_FLOAT16);
            }
            double S, C;
            long_def(v, K, &S, &C);
            const double want = sf_round_to(sf_cpu_sum2_result(S, C, SCANFUSE_FLOAT16), SCANFUSE_FLOAT16);
            cases += long_sum_runs("input x: float32[131077]\ny = sum(x, dtype=float16)\noutput y\n",
                                   "float32 summed into float16", 2, &in, &out, want);
            tb_free(&out);
            tb_free(&in);
        }
        free(v);
    }
    /* runs of 70001 in [3, 70001]: the reduced positions cross chunk boundaries inside runs */
    {
        const int64_t R = 3, L = 70001, shape[2] = {R, L};
        tbuf in, out;
        if (tb_init(&in, SCANFUSE_FLOAT64, 2, shape, L_CONTIG) && tb_init(&out, SCANFUSE_FLOAT64, 0, NULL, L_CONTIG)) {
            double *v = malloc((size_t)(R * L) * sizeof *v);
            if (v) {
                for (int64_t i = 0; i < R * L; i++) {
                    v[i] = ldexp(2 * sf_test_rng_uniform(&rng) - 1, (int)sf_test_rng_int(&rng, -40, 40));
                    sf_store_f64(in.base, tb_offset(&in, i), SCANFUSE_FLOAT64, v[i]);
                }
                double S, C;
                long_def(v, R * L, &S, &C);
                const double want = sf_cpu_sum2_result(S, C, SCANFUSE_FLOAT64);
                cases += long_sum_runs("input x: float64[3, 70001]\ny = sum(x, dim=[0, 1])\noutput y\n",
                                       "sum over [3, 70001]", 1, &in, &out, want);
                free(v);
            }
            tb_free(&out);
        }
        tb_free(&in);
    }
    printf("  long sums in chunks of %lld: %d runs with the definition's bytes\n", (long long)SF_SUM_CHUNK, cases);
}

/* sf_cpu_pointwise reads 64-bit operands in place and computes a 64-bit result straight
 * into its output, except where the output overlaps an operand read in place: then the
 * result goes through its block as before.  An output that is exactly an operand (a
 * buffer reused in place) must still get op(operands): where (restrict-qualified
 * kernel) and add over int64 and float64, 1000 elements (two blocks). */
static void pointwise_in_place_cases(void) {
    enum { N = 1000 };
    static int64_t xi[N], yi[N], wi[N];
    static double xf[N], yf[N], wf[N];
    static uint8_t c[N];
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0x1D9ull);
    const sf_num *lit[SF_MAX_IN] = {NULL, NULL, NULL};
    int bad = 0;
    for (int fl = 0; fl < 2; fl++) {
        for (int op = 0; op < 2; op++) { /* add(x, y) into x; where(c, x, y) into x */
            for (int i = 0; i < N; i++) {
                c[i] = (uint8_t)sf_test_rng_int(&rng, 0, 1);
                xi[i] = sf_test_rng_int(&rng, -1000, 1000);
                yi[i] = sf_test_rng_int(&rng, -1000, 1000);
                xf[i] = (double)xi[i] / 7;
                yf[i] = (double)yi[i] / 3;
                wi[i] = op ? (c[i] ? xi[i] : yi[i]) : xi[i] + yi[i];
                wf[i] = op ? (c[i] ? xf[i] : yf[i]) : xf[i] + yf[i];
            }
            const scanfuse_dtype dt = fl ? SCANFUSE_FLOAT64 : SCANFUSE_INT64;
            void *x = fl ? (void *)xf : (void *)xi, *y = fl ? (void *)yf : (void *)yi;
            const int64_t shape[1] = {N};
            sf_view in[SF_MAX_IN], out;
            memset(in, 0, sizeof in);
            sf_node node;
            memset(&node, 0, sizeof node);
            node.op = op ? SF_OP_where : SF_OP_add;
            node.nin = op ? 3 : 2;
            if (op) {
                sf_view_contiguous(&in[0], c, SCANFUSE_BOOL, 1, shape);
                sf_view_contiguous(&in[1], x, dt, 1, shape);
                sf_view_contiguous(&in[2], y, dt, 1, shape);
            } else {
                sf_view_contiguous(&in[0], x, dt, 1, shape);
                sf_view_contiguous(&in[1], y, dt, 1, shape);
            }
            sf_view_contiguous(&out, x, dt, 1, shape);
            char msg[128];
            CHECK(sf_cpu_pointwise(&node, dt, in, lit, &out, msg, sizeof msg) == SCANFUSE_OK);
            for (int i = 0; i < N; i++)
                bad += fl ? memcmp(&xf[i], &wf[i], 8) != 0 : xi[i] != wi[i];
        }
    }
    CHECKF(bad == 0, "element-wise ops computed into an operand: %d wrong elements", bad);
    printf("  element-wise ops into an operand's own buffer: where and add, int64 and float64\n");
}

int main(void) {
    clock_t t0 = clock();
    self_test();
    printf("float cumsum/sum vs the exact result (worst error per case):\n");
    float_accuracy();
    int_accuracy();
    printf("determinism:\n");
    determinism();
    lanes_primitive();
    lanes_layouts();
    exact_primitive();
    exact_programs();
    long_sums();
    maxmin_rule();
    lse_cases();
    exp_cases();
    half_store_cases();
    pointwise_in_place_cases();
    prod_cases();
    printf("%.1f s of CPU time\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    return sf_test_finish("test_accuracy");
}
