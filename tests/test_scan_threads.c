/*
 * test_scan_threads.c — the CPU scan kernels and their threading, checked against
 * independent references written from the definitions in src/cpu_scan_kern.h:
 *
 *  1. bytes: every fast-path scan (float cumsum, integer cumsum, cummax/cummin; and
 *     the chain kernels: cummax/cummin of int64/float64 and along columns, cumprod) on
 *     every instruction set this CPU has (avx512, avx2, portable) and 1, 2, 3 and 7
 *     threads must give exactly the bytes of a plain scalar implementation of the
 *     definition (float cumsum: the partition / block / Sklansky-vector structure;
 *     integers: exact wrapping sums; cummax/cummin: PyTorch's rules).  Shapes cover one
 *     long row (several partitions, so the chained carries between threads run), many
 *     rows, columns (the scanned dim outside the innermost), 3-D; inclusive, exclusive,
 *     reverse; contiguous, transposed, sliced and broadcast inputs; outputs that are
 *     strided sub-views (as the fused tile path passes them);
 *  2. special values: NaN, infinities, -0.0 and subnormals through the same comparison;
 *  3. conversions: every vector store (double -> float16, bfloat16, float32, float64,
 *     row and column vectors) against the scalar helpers of cpu.h, bit for bit, on
 *     rounding ties, subnormals, overflow, NaN payloads and random bit patterns;
 *  4. accuracy: float32 cumsum of 2^22 elements (wide magnitudes and cancellation)
 *     and of 2-D tensors along either dim against the exact prefix sums (a 128-bit
 *     fixed-point accumulator): within 1 ulp or 2^-40 * sum|x| (DESIGN.md §1);
 *  5. the public API: a program run with options.threads 1, 2, 3, 7 gives one result.
 * The thread threshold is lowered through sf_cpu_scan_mt_min_bytes so that small
 * tensors still spread over threads.
 */
#include "cpu_scan_kern.h"
#include "harness.h"
#include "sf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------- */
/* References                                                                          */
/* ---------------------------------------------------------------------------------- */

static void ref_sklansky(double *y) {
    y[1] = y[1] + y[0];
    y[3] = y[3] + y[2];
    y[5] = y[5] + y[4];
    y[7] = y[7] + y[6];
    y[2] = y[2] + y[1];
    y[3] = y[3] + y[1];
    y[6] = y[6] + y[5];
    y[7] = y[7] + y[5];
    for (int k = 4; k < 8; k++) y[k] = y[k] + y[3];
}

/* The float cumsum of a logical sequence (identity lanes already in x). */
static void ref_fsum(const double *x, int64_t n, double *out) {
    sf_dd c = {-0.0, -0.0};
    for (int64_t p0 = 0; p0 < n; p0 += SF_SCAN_PART) {
        int64_t p1 = p0 + SF_SCAN_PART < n ? p0 + SF_SCAN_PART : n;
        sf_dd L = {-0.0, -0.0};
        double cs = c.hi + c.lo;
        for (int64_t b0 = p0; b0 < p1; b0 += SF_SCAN_BLOCK) {
            int64_t b1 = b0 + SF_SCAN_BLOCK < p1 ? b0 + SF_SCAN_BLOCK : p1;
            double Cs = (L.hi + L.lo) + cs, T = -0.0;
            for (int64_t v0 = b0; v0 < b1; v0 += 8) {
                double y[8];
                for (int k = 0; k < 8; k++) y[k] = v0 + k < b1 ? x[v0 + k] : -0.0;
                ref_sklansky(y);
                double tc = T + Cs;
                for (int k = 0; k < 8 && v0 + k < b1; k++) out[v0 + k] = y[k] + tc;
                T = T + y[7];
            }
            sf_dd_acc(&L, T);
        }
        c = sf_dd_add(c, L);
    }
}

/* ---------------------------------------------------------------------------------- */
/* Tensors with layouts                                                                */
/* ---------------------------------------------------------------------------------- */

enum { LAY_CONTIG, LAY_TRANSPOSED, LAY_SLICED, LAY_BROADCAST, LAY_COUNT };
static const char *const lay_names[LAY_COUNT] = {"contig", "transposed", "sliced", "broadcast"};

typedef struct tview {
    sf_view v;
    void *mem;
    size_t bytes;
} tview;

/* A view of the logical shape in the given layout (data uninitialized). */
static void tv_make(tview *t, scanfuse_dtype dt, int nd, const int64_t *shape, int lay) {
    int64_t es = (int64_t)scanfuse_dtype_size(dt), n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    memset(t, 0, sizeof *t);
    t->v.dtype = dt;
    t->v.ndim = nd;
    for (int d = 0; d < nd; d++) t->v.shape[d] = shape[d];
    int64_t elems = n;
    if (lay == LAY_TRANSPOSED && nd >= 2) { /* physical order: dims reversed */
        int64_t s = 1;
        for (int d = 0; d < nd; d++) {
            t->v.strides[d] = s;
            s *= shape[d];
        }
    } else if (lay == LAY_SLICED) { /* every other element of a twice longer last dim */
        t->v.strides[nd - 1] = 2;
        int64_t s = 2 * shape[nd - 1];
        for (int d = nd - 2; d >= 0; d--) {
            t->v.strides[d] = s;
            s *= shape[d];
        }
        elems = s;
    } else if (lay == LAY_BROADCAST && nd >= 2) { /* stride 0 along dim 0 */
        int64_t s = 1;
        for (int d = nd - 1; d >= 1; d--) {
            t->v.strides[d] = s;
            s *= shape[d];
        }
        t->v.strides[0] = 0;
        elems = n / shape[0];
    } else {
        int64_t s = 1;
        for (int d = nd - 1; d >= 0; d--) {
            t->v.strides[d] = s;
            s *= shape[d];
        }
    }
    t->bytes = (size_t)((elems > 0 ? elems : 1) * es) + 64;
    t->mem = malloc(t->bytes);
    memset(t->mem, 0xA5, t->bytes);
    t->v.data = t->mem;
}

static int64_t tv_off(const sf_view *v, const int64_t *idx) {
    int64_t o = 0;
    for (int d = 0; d < v->ndim; d++) o += idx[d] * v->strides[d];
    return o;
}

/* Advances a row-major index; false when done. */
static bool idx_next(int nd, const int64_t *shape, int64_t *idx) {
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

/* ---------------------------------------------------------------------------------- */
/* Values                                                                              */
/* ---------------------------------------------------------------------------------- */

/* A random value for dtype dt; specials: NaN, inf, -0.0, subnormals now and then. */
static void put_random(void *base, int64_t e, scanfuse_dtype dt, sf_test_rng *r, bool specials) {
    uint64_t u = sf_test_rng_next(r);
    if (!sf_dtype_is_float(dt)) {
        int64_t v;
        switch (dt) {
        case SCANFUSE_BOOL: v = (int64_t)(u & 1); break;
        case SCANFUSE_UINT8: v = (int64_t)(u & 0xFF); break;
        case SCANFUSE_INT8: v = (int8_t)(u & 0xFF); break;
        case SCANFUSE_INT16: v = (int16_t)(u & 0xFFFF); break;
        case SCANFUSE_INT32: v = (int32_t)(u & 0xFFFFFFFFu); break;
        default: v = (int64_t)u; break;
        }
        if ((u >> 40) % 16 == 0) v = sf_int_max(dt); /* ties and extremes */
        if ((u >> 40) % 16 == 1) v = sf_int_min(dt);
        sf_store_i64(base, e, dt, v);
        return;
    }
    double v = ldexp(sf_test_rng_uniform(r) * 2 - 1, (int)sf_test_rng_int(r, -6, 6));
    if (dt == SCANFUSE_FLOAT16) v = ldexp(sf_test_rng_uniform(r) * 2 - 1, (int)sf_test_rng_int(r, -8, 2));
    int sel = (int)((u >> 48) % 64);
    if (specials) {
        if (sel == 0) v = NAN;
        else if (sel == 1) v = INFINITY;
        else if (sel == 2) v = -INFINITY;
        else if (sel == 3) v = -0.0;
        else if (sel == 4) v = 0.0;
        else if (sel == 5) v = dt == SCANFUSE_FLOAT16 ? 0x1p-24 : dt == SCANFUSE_FLOAT64 ? 0x1p-1070 : 0x1p-140;
    }
    if (sel == 6 && e > 0) { /* a tie with the previous element */
        int64_t es = (int64_t)scanfuse_dtype_size(dt);
        memcpy((char *)base + e * es, (char *)base + (e - 1) * es, (size_t)es);
        return;
    }
    sf_store_f64(base, e, dt, v);
    if (specials && sel == 7) { /* a NaN with a payload and the sign set */
        if (dt == SCANFUSE_FLOAT32) { uint32_t b = 0xFFC12345u; memcpy((char *)base + 4 * e, &b, 4); }
        if (dt == SCANFUSE_FLOAT64) { uint64_t b = 0xFFF8123456789ABCull; memcpy((char *)base + 8 * e, &b, 8); }
        if (dt == SCANFUSE_FLOAT16 || dt == SCANFUSE_BFLOAT16) {
            uint16_t b = dt == SCANFUSE_FLOAT16 ? 0xFE55u : 0xFFC3u;
            memcpy((char *)base + 2 * e, &b, 2);
        }
    }
}

/* A factor for cumprod: floats near 1 (long products neither overflow nor vanish, so
 * every output is a real test of the order of the multiplies), NaN, inf and zeros
 * among them with specials; integers small, so products wrap only slowly. */
static void put_factor(void *base, int64_t e, scanfuse_dtype dt, sf_test_rng *r, bool specials) {
    uint64_t u = sf_test_rng_next(r);
    if (!sf_dtype_is_float(dt)) {
        sf_store_i64(base, e, dt, dt == SCANFUSE_BOOL ? (u % 64 != 0) : (int64_t)(u % 7) - 3);
        return;
    }
    double v = 1.0 + (sf_test_rng_uniform(r) * 2 - 1) * 0x1p-3;
    int sel = (int)((u >> 48) % 256);
    if (specials && sel == 0) v = NAN;
    else if (specials && sel == 1) v = -INFINITY;
    else if (specials && sel == 2) v = -0.0;
    sf_store_f64(base, e, dt, v);
}

static uint64_t get_bits(const void *base, int64_t e, scanfuse_dtype dt) {
    uint64_t b = 0;
    size_t es = scanfuse_dtype_size(dt);
    memcpy(&b, (const char *)base + e * (int64_t)es, es);
    return b;
}

static bool is_nan_bits(uint64_t b, scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_FLOAT16: return (b & 0x7FFF) > 0x7C00;
    case SCANFUSE_BFLOAT16: return (b & 0x7FFF) > 0x7F80;
    case SCANFUSE_FLOAT32: return (b & 0x7FFFFFFF) > 0x7F800000;
    case SCANFUSE_FLOAT64: return (b & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
    default: return false;
    }
}

/* ---------------------------------------------------------------------------------- */
/* The expected result of a case                                                       */
/* ---------------------------------------------------------------------------------- */

typedef struct scase {
    sf_op op;
    scanfuse_dtype xdt, ydt;
    int nd;
    int64_t shape[3];
    int dim;
    bool excl, rev;
    int lay;
    bool specials;
    bool out_strided; /* outputs are sub-views of wider buffers */
} scase;

/* Fills in and computes the expected outputs (contiguous, ydt / int64 indices). */
static void expected(const scase *c, const sf_view *in, void *ey, int64_t *ei) {
    int nd = c->nd, d = c->dim;
    int64_t n = c->shape[d];
    int64_t oshape[3], idx[3] = {0, 0, 0};
    for (int k = 0; k < nd; k++) oshape[k] = k == d ? 1 : c->shape[k];
    int64_t cstr[3], s = 1;
    for (int k = nd - 1; k >= 0; k--) {
        cstr[k] = s;
        s *= c->shape[k];
    }
    double *xs = malloc(sizeof(double) * (size_t)(n + 1)), *ys = malloc(sizeof(double) * (size_t)(n + 1));
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)(n + 1));
    do {
        /* the logical sequence of this line */
        int64_t ex = c->excl ? 1 : 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t orig = c->rev ? n - 1 - i : i;   /* the output position of logical i */
            int64_t src = c->rev ? n - 1 - i + ex : i - ex; /* the input it reads */
            int64_t id2[3] = {idx[0], idx[1], idx[2]};
            id2[d] = orig;
            pos[i] = tv_off(&(sf_view){.ndim = nd, .strides = {cstr[0], cstr[1], cstr[2]}}, id2);
            id2[d] = src;
            if (i < ex) {
                xs[i] = 0.0;
            } else {
                int64_t e = tv_off(in, id2);
                xs[i] = sf_load_f64(in->data, e, c->xdt);
                /* a float cumsum is defined on x converted to the result dtype (exact
                 * unless dtype= narrows) */
                if (c->op == SF_OP_cumsum && sf_dtype_is_float(c->ydt)) xs[i] = sf_round_to(xs[i], c->ydt);
            }
        }
        if (c->op == SF_OP_cumsum && sf_dtype_is_float(c->ydt)) {
            ref_fsum(xs, n, ys);
            for (int64_t i = 0; i < n; i++) sf_store_f64(ey, pos[i], c->ydt, ys[i]);
        } else if (c->op == SF_OP_cumsum) {
            uint64_t acc = 0;
            for (int64_t i = 0; i < n; i++) {
                int64_t v = 0;
                if (i >= ex) {
                    int64_t id2[3] = {idx[0], idx[1], idx[2]};
                    id2[d] = c->rev ? n - 1 - i + ex : i - ex;
                    v = sf_load_i64(in->data, tv_off(in, id2), c->xdt);
                }
                acc += (uint64_t)v;
                sf_store_i64(ey, pos[i], c->ydt, (int64_t)acc);
            }
        } else if (c->op == SF_OP_cumprod) { /* left to right, in double or wrapping int64 */
            bool fl = sf_dtype_is_float(c->ydt);
            double p = 1.0;
            uint64_t pi = 1;
            for (int64_t i = 0; i < n; i++) {
                if (i >= ex) {
                    int64_t id2[3] = {idx[0], idx[1], idx[2]};
                    id2[d] = c->rev ? n - 1 - i + ex : i - ex;
                    int64_t e = tv_off(in, id2);
                    if (fl) p *= sf_load_f64(in->data, e, c->xdt);
                    else pi *= (uint64_t)sf_load_i64(in->data, e, c->xdt);
                }
                if (fl) sf_store_f64(ey, pos[i], c->ydt, p);
                else sf_store_i64(ey, pos[i], c->ydt, (int64_t)pi);
            }
        } else { /* cummax / cummin */
            bool mn = c->op == SF_OP_cummin, isf = sf_dtype_is_float(c->xdt);
            double best = mn ? (isf ? INFINITY : (double)sf_int_max(c->xdt))
                             : (isf ? -INFINITY : (double)sf_int_min(c->xdt));
            /* integers compare exactly in int64 (int64 values do not fit a double) */
            int64_t ibest = mn ? sf_int_max(c->xdt) : sf_int_min(c->xdt);
            uint64_t bbits = 0;
            if (isf) sf_store_f64(&bbits, 0, c->xdt, best);
            else sf_store_i64(&bbits, 0, c->xdt, ibest);
            int64_t bidx = -1;
            for (int64_t i = 0; i < n; i++) {
                if (i >= ex) {
                    int64_t id2[3] = {idx[0], idx[1], idx[2]};
                    id2[d] = c->rev ? n - 1 - i + ex : i - ex;
                    int64_t e = tv_off(in, id2);
                    double x = sf_load_f64(in->data, e, c->xdt);
                    int64_t xi = isf ? 0 : sf_load_i64(in->data, e, c->xdt);
                    bool take = isf ? isnan(x) || (!isnan(best) && (mn ? x <= best : x >= best))
                                    : (mn ? xi <= ibest : xi >= ibest);
                    if (take) ibest = xi;
                    if (take) {
                        best = x;
                        bbits = get_bits(in->data, e, c->xdt);
                        if (isnan(x)) sf_store_f64(&bbits, 0, c->xdt, x); /* as through double */
                        bidx = id2[d];
                    }
                }
                memcpy((char *)ey + pos[i] * (int64_t)scanfuse_dtype_size(c->ydt), &bbits,
                       scanfuse_dtype_size(c->ydt));
                ei[pos[i]] = bidx;
            }
        }
    } while (idx_next(nd, oshape, idx));
    free(xs);
    free(ys);
    free(pos);
}

/* ---------------------------------------------------------------------------------- */
/* Running and comparing                                                               */
/* ---------------------------------------------------------------------------------- */

static int case_no;

static void case_str(const scase *c, char *buf, size_t len) {
    char sh[64];
    size_t k = (size_t)snprintf(sh, sizeof sh, "[%lld", (long long)c->shape[0]);
    for (int d = 1; d < c->nd; d++) k += (size_t)snprintf(sh + k, sizeof sh - k, ", %lld", (long long)c->shape[d]);
    snprintf(sh + k, sizeof sh - k, "]");
    snprintf(buf, len, "#%d %s %s->%s %s dim %d%s%s %s%s%s", case_no, sf_op_table[c->op].name,
             scanfuse_dtype_name(c->xdt), scanfuse_dtype_name(c->ydt), sh, c->dim, c->excl ? " excl" : "",
             c->rev ? " rev" : "", lay_names[c->lay], c->specials ? " specials" : "",
             c->out_strided ? " strided-out" : "");
}

/* Compares n elements of dtype dt: bits, except that for sums any two NaNs match (when
 * two NaNs meet, or inf meets -inf, which NaN comes out depends on the operand order the
 * compiler chose; the conversions keep its sign).  cummax/cummin: strictly. */
static int64_t first_diff(const void *got, const void *want, int64_t n, scanfuse_dtype dt, bool strict) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t a = get_bits(got, i, dt), b = get_bits(want, i, dt);
        if (a == b) continue;
        if (!strict && is_nan_bits(a, dt) && is_nan_bits(b, dt)) continue;
        return i;
    }
    return -1;
}

static const char *isas[4];
static int nisas;

/* Runs the case on every ISA and thread count and compares with the reference. */
static void run_case(const scase *c, const int *threads, int nthreads) {
    case_no++;
    sf_test_rng r;
    sf_test_rng_seed(&r, 0x5CA7ull * (uint64_t)case_no + 17);
    tview in;
    tv_make(&in, c->xdt, c->nd, c->shape, c->lay);
    {
        /* fill every reachable element of the input (in row-major order of the view) */
        int64_t idx[3] = {0, 0, 0};
        int64_t shp[3] = {c->shape[0], c->nd > 1 ? c->shape[1] : 1, c->nd > 2 ? c->shape[2] : 1};
        do {
            if (c->op == SF_OP_cumprod) put_factor(in.v.data, tv_off(&in.v, idx), c->xdt, &r, c->specials);
            else put_random(in.v.data, tv_off(&in.v, idx), c->xdt, &r, c->specials);
        } while (idx_next(c->nd, shp, idx));
    }
    int64_t n = 1;
    for (int k = 0; k < c->nd; k++) n *= c->shape[k];
    bool two = c->op == SF_OP_cummax || c->op == SF_OP_cummin;
    size_t ys = scanfuse_dtype_size(c->ydt);
    void *ey = calloc((size_t)n + 1, ys);
    int64_t *ei = calloc((size_t)n + 1, 8);
    expected(c, &in.v, ey, ei);

    sf_node node;
    memset(&node, 0, sizeof node);
    node.op = c->op;
    node.a.dim = c->dim;
    node.a.exclusive = c->excl;
    node.a.reverse = c->rev;
    /* outputs: contiguous, or every third element of a wider buffer along the last dim
     * (a sub-view like the fused tile path's destinations) */
    int64_t wide = c->out_strided ? 3 : 1;
    void *oy = malloc((size_t)(n * wide + 8) * ys);
    int64_t *oi = malloc((size_t)(n * wide + 8) * 8);
    sf_view out0, out1;
    sf_view_contiguous(&out0, oy, c->ydt, c->nd, c->shape);
    sf_view_contiguous(&out1, oi, SCANFUSE_INT64, c->nd, c->shape);
    if (c->out_strided) {
        int64_t s = wide;
        for (int d = c->nd - 1; d >= 0; d--) {
            out0.strides[d] = s;
            s *= c->shape[d];
        }
    }
    void *gy = malloc((size_t)n * ys + 8);
    static char work[1 << 17];
    char desc[256];
    case_str(c, desc, sizeof desc);
    for (int ii = 0; ii < nisas; ii++) {
        sf_cpu_scan_force_isa(isas[ii]);
        for (int t = 0; t < nthreads; t++) {
            memset(oy, 0x5A, (size_t)(n * wide + 8) * ys);
            memset(oi, 0x5A, (size_t)(n * wide + 8) * 8);
            /* every other thread count: the caller's conversion buffer (a narrowing
             * cumsum; the backend passes one from the program's arena), 16 bytes off a
             * 64-byte boundary, as the arena may place it */
            int64_t cb = sf_cpu_scan_conv_bytes(&node, c->xdt, c->ydt, n);
            char *conv = t % 2 && cb > 0 ? malloc((size_t)cb + 64) : NULL;
            sf_cpu_scan_mt(&node, &in.v, &out0, two ? &out1 : NULL, work, threads[t], conv ? conv + 16 : NULL);
            free(conv);
            /* gather the (possibly strided) output back to contiguous order */
            for (int64_t i = 0; i < n; i++)
                memcpy((char *)gy + i * (int64_t)ys, (char *)oy + i * wide * (int64_t)ys, ys);
            int64_t at = first_diff(gy, ey, n, c->ydt, two); /* cummax/cummin: NaN bits too */
            CHECKF(at < 0, "%s on %s, threads %d: element %lld: got %#llx, want %#llx", desc, isas[ii],
                   threads[t], (long long)at, at < 0 ? 0ULL : (unsigned long long)get_bits(gy, at, c->ydt),
                   at < 0 ? 0ULL : (unsigned long long)get_bits(ey, at, c->ydt));
            if (two) {
                int64_t bad = -1;
                for (int64_t i = 0; i < n && bad < 0; i++)
                    if (oi[i] != ei[i]) bad = i;
                CHECKF(bad < 0, "%s on %s, threads %d: index %lld: got %lld, want %lld", desc, isas[ii],
                       threads[t], (long long)bad, bad < 0 ? 0LL : (long long)oi[bad],
                       bad < 0 ? 0LL : (long long)ei[bad]);
            }
            if (c->out_strided) { /* the gaps of a strided output are never written */
                bool intact = true;
                for (int64_t i = 0; i < n && intact; i++)
                    for (int64_t g = 1; g < wide; g++)
                        intact = intact && ((unsigned char *)oy)[(i * wide + g) * (int64_t)ys] == 0x5A;
                CHECKF(intact, "%s on %s: a gap of the strided output was written", desc, isas[ii]);
            }
        }
    }
    sf_cpu_scan_force_isa(NULL);
    free(in.mem);
    free(ey);
    free(ei);
    free(oy);
    free(oi);
    free(gy);
}

static void bytes_sweep(void) {
    static const int th[] = {1, 2, 3, 7};
    static const scanfuse_dtype fx[] = {SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32, SCANFUSE_FLOAT64,
                                        SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32, SCANFUSE_BFLOAT16};
    static const scanfuse_dtype fy[] = {SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32, SCANFUSE_FLOAT64,
                                        SCANFUSE_FLOAT32, SCANFUSE_FLOAT32, SCANFUSE_FLOAT64, SCANFUSE_FLOAT64};
    static const scanfuse_dtype ix[] = {SCANFUSE_BOOL, SCANFUSE_UINT8, SCANFUSE_INT8, SCANFUSE_INT16,
                                        SCANFUSE_INT32, SCANFUSE_INT64, SCANFUSE_INT32, SCANFUSE_INT64};
    static const scanfuse_dtype iy[] = {SCANFUSE_INT64, SCANFUSE_INT64, SCANFUSE_INT64, SCANFUSE_INT64,
                                        SCANFUSE_INT64, SCANFUSE_INT64, SCANFUSE_INT32, SCANFUSE_INT16};
    static const scanfuse_dtype mx[] = {SCANFUSE_FLOAT32, SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16, SCANFUSE_INT32,
                                        SCANFUSE_INT16, SCANFUSE_INT8, SCANFUSE_UINT8, SCANFUSE_BOOL};
    /* shapes: 1-D of assorted lengths, rows, columns, 3-D middle dim */
    static const struct {
        int nd;
        int64_t s[3];
        int dim;
    } shapes[] = {
        {1, {1, 0, 0}, 0},     {1, {7, 0, 0}, 0},       {1, {64, 0, 0}, 0},    {1, {203, 0, 0}, 0},
        {2, {9, 130, 0}, 1},   {2, {130, 9, 0}, 0},     {2, {70, 33, 0}, 0},   {3, {3, 67, 11}, 1},
        {2, {5, 1, 0}, 0},     {3, {2, 5, 600}, 1},
    };
    int nsh = (int)(sizeof shapes / sizeof shapes[0]);
    for (int k = 0; k < 8; k++) {
        for (int si = 0; si < nsh; si++) {
            for (int fl = 0; fl < 4; fl++) {
                int lay = (k + si + fl) % LAY_COUNT;
                if (shapes[si].nd < 2 && (lay == LAY_TRANSPOSED || lay == LAY_BROADCAST)) lay = LAY_SLICED;
                scase c = {SF_OP_cumsum, fx[k], fy[k], shapes[si].nd, {shapes[si].s[0], shapes[si].s[1], shapes[si].s[2]},
                           shapes[si].dim, fl & 1, (fl >> 1) & 1, lay, (si + k) % 3 == 0, (si + fl) % 5 == 2};
                run_case(&c, th, 4);
                c.xdt = ix[k];
                c.ydt = iy[k];
                run_case(&c, th, 4);
                c.op = fl % 2 ? SF_OP_cummin : SF_OP_cummax;
                c.xdt = c.ydt = mx[k];
                c.out_strided = false; /* cummax/cummin outputs are always whole buffers */
                run_case(&c, th, 4);
            }
        }
    }
    /* long rows: several partitions, chained over threads (on the second pass every
     * thread computes missing carries itself: the look-back); and many medium rows */
    for (int fl = 0; fl < 8; fl++) {
        sf_cpu_scan_wait_s = fl >= 4 ? 0.0 : 100e-6;
        scase a = {SF_OP_cumsum, SCANFUSE_FLOAT32, SCANFUSE_FLOAT32, 1, {3 * SF_SCAN_PART + 77, 0, 0}, 0,
                   fl & 1, (fl >> 1) & 1, fl == 3 ? LAY_SLICED : LAY_CONTIG, fl == 2, false};
        run_case(&a, th, 4);
        a.xdt = a.ydt = SCANFUSE_FLOAT16;
        run_case(&a, th, 4);
        a.xdt = a.ydt = SCANFUSE_BFLOAT16;
        run_case(&a, th, 2);
        a.xdt = a.ydt = SCANFUSE_FLOAT64;
        run_case(&a, th, 2);
        a.xdt = SCANFUSE_INT32;
        a.ydt = SCANFUSE_INT64;
        run_case(&a, th, 4);
        a.xdt = SCANFUSE_INT64; /* full-range values: the partition sums wrap */
        run_case(&a, th, 2);
        a.op = fl % 2 ? SF_OP_cummin : SF_OP_cummax;
        a.xdt = a.ydt = SCANFUSE_FLOAT32;
        run_case(&a, th, 4);
        scase b = {SF_OP_cumsum, SCANFUSE_FLOAT32, SCANFUSE_FLOAT32, 2, {3, 2 * SF_SCAN_PART + 5, 0}, 1,
                   fl & 1, (fl >> 1) & 1, LAY_CONTIG, false, false};
        run_case(&b, th, 4);
        scase cc = {SF_OP_cumsum, SCANFUSE_FLOAT32, SCANFUSE_FLOAT32, 2, {SF_SCAN_PART + 70, 9, 0}, 0,
                    fl & 1, (fl >> 1) & 1, fl == 1 ? LAY_TRANSPOSED : LAY_CONTIG, false, fl == 2};
        run_case(&cc, th, 4);
    }
    sf_cpu_scan_wait_s = 100e-6;
}

/* float32 rows taken 8 at a time (the AVX-512 rows8 kernel of cpu_scan_avx512.c: row
 * lengths that are multiples of 8, at least 8 rows, unit strides, inclusive) next to
 * the shapes and flags that must still take the one-row kernel (other lengths, the
 * rows left over after the groups of 8, exclusive scans, strided inputs and outputs). */
static void rows8_sweep(void) {
    static const int th[] = {1, 2, 3, 7};
    static const struct {
        int nd;
        int64_t s[3];
        int dim;
    } shapes[] = {
        {2, {8, 8, 0}, 1},     {2, {8, 128, 0}, 1},   {2, {19, 64, 0}, 1},   {2, {127, 8, 0}, 1},
        {2, {129, 16, 0}, 1},  {2, {9, 72, 0}, 1},    {2, {17, 136, 0}, 1},  {2, {11, 4104, 0}, 1},
        {3, {3, 5, 48}, 2},    {2, {16, 7, 0}, 1},    {2, {16, 127, 0}, 1},  {2, {8, 129, 0}, 1},
        {2, {1, 128, 0}, 1},   {2, {7, 4097, 0}, 1},  {2, {9, SF_SCAN_PART, 0}, 1},
    };
    int nsh = (int)(sizeof shapes / sizeof shapes[0]);
    for (int si = 0; si < nsh; si++) {
        for (int fl = 0; fl < 8; fl++) {
            int lay = fl >= 6 ? (si % 2 ? LAY_BROADCAST : LAY_SLICED) : LAY_CONTIG;
            scase c = {SF_OP_cumsum, SCANFUSE_FLOAT32, SCANFUSE_FLOAT32, shapes[si].nd,
                       {shapes[si].s[0], shapes[si].s[1], shapes[si].s[2]}, shapes[si].dim,
                       fl == 2 || fl == 6, fl & 1, lay, fl == 4 || fl == 5 || fl == 7, fl == 3};
            run_case(&c, th, 4);
        }
    }
}

/* cumsum with a narrowing float dtype= (float32 -> float16 / bfloat16, float64 ->
 * float32 / float16, int32 / int64 -> float32, overflow to inf included): the input is
 * converted, then scanned by the result dtype's kernel. */
static void narrowing_sweep(void) {
    static const int th[] = {1, 2, 3, 7};
    static const scanfuse_dtype nx[] = {SCANFUSE_FLOAT32, SCANFUSE_FLOAT32, SCANFUSE_FLOAT64,
                                        SCANFUSE_FLOAT64, SCANFUSE_INT32, SCANFUSE_INT64};
    static const scanfuse_dtype ny[] = {SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32,
                                        SCANFUSE_FLOAT16, SCANFUSE_FLOAT32, SCANFUSE_FLOAT32};
    static const struct {
        int nd;
        int64_t s[3];
        int dim;
    } shapes[] = {{1, {100003, 0, 0}, 0}, {2, {37, 129, 0}, 1}, {2, {129, 37, 0}, 0}, {3, {3, 7, 5}, 1}};
    for (int k = 0; k < 6; k++)
        for (int si = 0; si < 4; si++)
            for (int fl = 0; fl < 3; fl++) {
                scase c = {SF_OP_cumsum, nx[k], ny[k], shapes[si].nd,
                           {shapes[si].s[0], shapes[si].s[1], shapes[si].s[2]}, shapes[si].dim,
                           fl == 1, fl == 2, fl == 2 ? LAY_TRANSPOSED : LAY_CONTIG, fl == 1, false};
                run_case(&c, th, 4);
            }
}

/* The chain kernels of cpu_scan_chain.c (cummax/cummin of int64 and float64 along
 * rows, cummax/cummin of every dtype along columns, cumprod) against the same
 * references.  One instruction set only: their AVX-512/AVX2/baseline clones are picked
 * at load time, not by sf_cpu_scan_force_isa. */
static void chain_sweep(void) {
    static const int th[] = {1, 2, 3, 7};
    static const struct {
        int nd;
        int64_t s[3];
        int dim;
    } shapes[] = {
        {1, {1, 0, 0}, 0},    {1, {7, 0, 0}, 0},     {1, {1023, 0, 0}, 0},  {1, {4097, 0, 0}, 0},
        {1, {100003, 0, 0}, 0}, {2, {9, 130, 0}, 1}, {2, {130, 9, 0}, 0},   {2, {70, 33, 0}, 0},
        {3, {3, 67, 11}, 1},  {3, {2, 5, 600}, 1},   {2, {5, 1, 0}, 0},
    };
    static const scanfuse_dtype m64[] = {SCANFUSE_INT64, SCANFUSE_FLOAT64};
    static const scanfuse_dtype m32[] = {SCANFUSE_FLOAT32, SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16, SCANFUSE_INT32,
                                         SCANFUSE_INT16, SCANFUSE_INT8, SCANFUSE_UINT8, SCANFUSE_BOOL};
    static const scanfuse_dtype px[] = {SCANFUSE_FLOAT32, SCANFUSE_FLOAT64, SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16,
                                        SCANFUSE_FLOAT16, SCANFUSE_FLOAT32, SCANFUSE_INT32, SCANFUSE_INT64,
                                        SCANFUSE_BOOL, SCANFUSE_INT8, SCANFUSE_INT64, SCANFUSE_BFLOAT16};
    static const scanfuse_dtype py[] = {SCANFUSE_FLOAT32, SCANFUSE_FLOAT64, SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16,
                                        SCANFUSE_FLOAT32, SCANFUSE_FLOAT64, SCANFUSE_INT64, SCANFUSE_INT64,
                                        SCANFUSE_INT64, SCANFUSE_INT32, SCANFUSE_INT16, SCANFUSE_FLOAT64};
    int saved = nisas;
    nisas = 1;
    int nsh = (int)(sizeof shapes / sizeof shapes[0]), k = 0;
    for (int si = 0; si < nsh; si++) {
        for (int fl = 0; fl < 4; fl++, k++) {
            int lay = (si + fl) % LAY_COUNT;
            if (shapes[si].nd < 2 && (lay == LAY_TRANSPOSED || lay == LAY_BROADCAST)) lay = LAY_SLICED;
            scase c = {fl % 2 ? SF_OP_cummin : SF_OP_cummax, SCANFUSE_INT64, SCANFUSE_INT64, shapes[si].nd,
                       {shapes[si].s[0], shapes[si].s[1], shapes[si].s[2]}, shapes[si].dim, fl & 1, (fl >> 1) & 1,
                       lay, (si + fl) % 2 == 0, false};
            for (int m = 0; m < 2; m++) {
                c.xdt = c.ydt = m64[m];
                run_case(&c, th, 4);
            }
            c.xdt = c.ydt = m32[k % 8]; /* columns take the chain kernels for every dtype */
            run_case(&c, th, 4);
            c.op = SF_OP_cumprod;
            for (int m = 0; m < 2; m++) {
                c.xdt = px[(2 * k + m) % 12];
                c.ydt = py[(2 * k + m) % 12];
                c.out_strided = (si + m) % 4 == 1;
                run_case(&c, th, 4);
            }
        }
    }
    /* long rows: several partitions, chained over threads (the second half: every
     * thread computes missing carries itself); cumprod's rows are whole chains */
    for (int fl = 0; fl < 8; fl++) {
        sf_cpu_scan_wait_s = fl >= 4 ? 0.0 : 100e-6;
        scase a = {fl % 2 ? SF_OP_cummin : SF_OP_cummax, SCANFUSE_FLOAT64, SCANFUSE_FLOAT64, 1,
                   {3 * SF_SCAN_PART + 77, 0, 0}, 0, fl & 1, (fl >> 1) & 1, fl == 3 ? LAY_SLICED : LAY_CONTIG,
                   fl % 3 == 0, false};
        run_case(&a, th, 4);
        a.xdt = a.ydt = SCANFUSE_INT64;
        run_case(&a, th, 4);
        scase b = {SF_OP_cumprod, SCANFUSE_FLOAT32, SCANFUSE_FLOAT32, 2, {3, 2 * SF_SCAN_PART + 5, 0}, 1,
                   fl & 1, (fl >> 1) & 1, LAY_CONTIG, fl == 2, false};
        run_case(&b, th, 4);
        b.op = fl % 2 ? SF_OP_cummin : SF_OP_cummax;
        b.xdt = b.ydt = fl < 4 ? SCANFUSE_INT64 : SCANFUSE_FLOAT64;
        run_case(&b, th, 4);
    }
    sf_cpu_scan_wait_s = 100e-6;
    nisas = saved;
}

/* ---------------------------------------------------------------------------------- */
/* Conversions                                                                         */
/* ---------------------------------------------------------------------------------- */

static void conversions(void) {
    const int64_t N = 1 << 20;
    double *v = malloc(sizeof(double) * (size_t)N);
    sf_test_rng r;
    sf_test_rng_seed(&r, 0xC0417ull);
    int64_t k = 0;
    /* float16 and bfloat16 rounding ties and their neighbours */
    for (int e = -30; e <= 17 && k + 64 < N; e++)
        for (int m = 0; m < 16; m++) {
            double base = ldexp(1.0 + m / 16.0, e);
            double h16 = ldexp(1.0, e - 11), h8 = ldexp(1.0, e - 8);
            v[k++] = base + h16;
            v[k++] = nextafter(base + h16, INFINITY);
            v[k++] = nextafter(base + h16, 0);
            v[k++] = -(base + h8);
            v[k++] = base + h8 + ldexp(1.0, e - 40);
            v[k++] = base + 3 * h16;
        }
    static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 65504.0, 65519.99, 65520.0,
                                      65520.000001, -65520.0, 0x1p-24, 0x1p-25, 0x1.8p-25, 0x1p-26,
                                      0x1p-14, 0x1.ff8p-15, 0x1p-126, 0x1p-127, 0x1.fep-127, 0x1p-133,
                                      0x1p-134, 0x1.8p-134, 0x1p-149, 0x1p-150, 0x1.0000001p-150, 0x1p-1074,
                                      3.4028235677973366e38, 3.4028235e38 * 1.0000001, 1e300, -1e300,
                                      0x1.fefp127, 0x1.ff0p127, 0x1.ff1p127};
    for (size_t s = 0; s < sizeof specials / sizeof specials[0]; s++) v[k++] = specials[s];
    uint64_t nanbits[] = {0x7FF0000000000001ull, 0xFFF0000000000001ull, 0x7FF8000000000000ull,
                          0x7FF00000DEADBEEFull, 0xFFFFFFFFFFFFFFFFull, 0x7FF7FFFFE0000000ull};
    for (size_t s = 0; s < sizeof nanbits / sizeof nanbits[0]; s++) memcpy(&v[k++], &nanbits[s], 8);
    /* random bit patterns with exponents in and around every target's range */
    while (k < N) {
        uint64_t b = sf_test_rng_next(&r);
        int sel = (int)(b % 4);
        double x;
        if (sel == 0) memcpy(&x, &b, 8);
        else x = ldexp((double)(b >> 11) * 0x1p-53 + 0.5, (int)sf_test_rng_int(&r, sel == 1 ? -30 : -160, sel == 1 ? 18 : 130));
        if (b & (1ull << 63)) x = -x;
        v[k++] = x;
    }
    static const scanfuse_dtype dts[] = {SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32, SCANFUSE_FLOAT64};
    void *out = malloc((size_t)N * 8);
    const sf_scan_kernels *ks[4] = {NULL, NULL, NULL, NULL};
    for (int ii = 0; ii < nisas; ii++) {
        sf_cpu_scan_force_isa(isas[ii]);
        if (strcmp(isas[ii], "portable") == 0) ks[ii] = &sf_scan_portable_kernels;
#ifdef SF_SCAN_X86
        if (strcmp(isas[ii], "avx2") == 0) ks[ii] = &sf_scan_avx2_kernels;
        if (strcmp(isas[ii], "avx512") == 0) ks[ii] = &sf_scan_avx512_kernels;
        if (strcmp(isas[ii], "avx512w") == 0) ks[ii] = &sf_scan_avx512w_kernels;
#endif
    }
    sf_cpu_scan_force_isa(NULL);
    for (int ii = 0; ii < nisas; ii++) {
        if (!ks[ii]) continue;
        for (int di = 0; di < 4; di++)
            for (int which = 0; which < 2; which++) {
                ks[ii]->store_test(v, N, dts[di], out, which);
                int64_t bad = -1;
                uint64_t want = 0, got = 0;
                for (int64_t i = 0; i < N && bad < 0; i++) {
                    switch (dts[di]) {
                    case SCANFUSE_FLOAT16: want = sf_cpu_f64_to_f16(v[i]); break;
                    case SCANFUSE_BFLOAT16: want = sf_cpu_f64_to_bf16(v[i]); break;
                    case SCANFUSE_FLOAT32: { float f = (float)v[i]; uint32_t b; memcpy(&b, &f, 4); want = b; break; }
                    default: memcpy(&want, &v[i], 8); break;
                    }
                    got = get_bits(out, i, dts[di]);
                    if (got != want && !(dts[di] >= SCANFUSE_FLOAT32 && is_nan_bits(got, dts[di]) &&
                                         is_nan_bits(want, dts[di])))
                        bad = i;
                }
                CHECKF(bad < 0, "conversion to %s on %s (%s vectors): %a gives %#llx, the scalar helper %#llx",
                       scanfuse_dtype_name(dts[di]), isas[ii], which ? "column" : "row", bad < 0 ? 0.0 : v[bad],
                       (unsigned long long)got, (unsigned long long)want);
            }
    }
    free(v);
    free(out);
}

/* ---------------------------------------------------------------------------------- */
/* Accuracy against exact prefix sums                                                  */
/* ---------------------------------------------------------------------------------- */

__extension__ typedef __int128 i128;
#define FIX_LSB (-80) /* every input below is a multiple of 2^-80 */

static i128 to_fix(double x) { return (i128)ldexp(x, -FIX_LSB); } /* exact for our inputs */
static double from_fix(i128 v) {
    bool neg = v < 0;
    if (neg) v = -v;
    double hi = (double)(int64_t)(v >> 64), lo = (double)(uint64_t)v;
    double r = ldexp(hi, 64 + FIX_LSB) + ldexp(lo, FIX_LSB); /* within 2^-52 relative */
    return neg ? -r : r;
}

/* A float32 value of magnitude in [2^-40, 2^12), sign random; cancellation: every
 * fourth element undoes the one three before, plus noise. */
static float acc_value(sf_test_rng *r, int dist, const float *prev, int64_t i) {
    if (dist == 1 && i % 4 == 3) return -prev[i - 3];
    int e = dist == 0 ? (int)sf_test_rng_int(r, -20, 10) : (int)sf_test_rng_int(r, -40, 11);
    double m = 1.0 + sf_test_rng_uniform(r);
    float f = (float)ldexp(m, e);
    return (sf_test_rng_next(r) & 1) ? -f : f;
}

static void accuracy_case(int nd, const int64_t *shape, int dim, int dist, int threads) {
    int64_t n = 1;
    for (int k = 0; k < nd; k++) n *= shape[k];
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    sf_test_rng r;
    sf_test_rng_seed(&r, 0xACCull + (uint64_t)n + (uint64_t)dim * 7 + (uint64_t)dist);
    int64_t len = shape[dim], inner = 1;
    for (int k = dim + 1; k < nd; k++) inner *= shape[k];
    int64_t outer = n / (len * inner);
    /* generate along each line so the cancellation pattern follows the scan */
    float *line = malloc(sizeof(float) * (size_t)len);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            for (int64_t i = 0; i < len; i++) {
                line[i] = acc_value(&r, dist, line, i);
                x[(o * len + i) * inner + q] = line[i];
            }
        }
    sf_node node;
    memset(&node, 0, sizeof node);
    node.op = SF_OP_cumsum;
    node.a.dim = dim;
    sf_view in, out;
    sf_view_contiguous(&in, x, SCANFUSE_FLOAT32, nd, shape);
    sf_view_contiguous(&out, y, SCANFUSE_FLOAT32, nd, shape);
    static char work[1 << 17];
    sf_cpu_scan_mt(&node, &in, &out, NULL, work, threads, NULL);
    long bad = 0;
    double worst = 0; /* the largest error as a fraction of its tolerance */
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            i128 acc = 0;
            double mag = 0;
            for (int64_t i = 0; i < len; i++) {
                int64_t e = (o * len + i) * inner + q;
                acc += to_fix(x[e]);
                mag += fabs((double)x[e]);
                double ex = from_fix(acc), got = y[e];
                double err = fabs(got - ex), ulp = sf_ulp(ex, SCANFUSE_FLOAT32);
                double tol = ulp > ldexp(mag, -40) ? ulp : ldexp(mag, -40);
                if (err / tol > worst) worst = err / tol;
                if (err > ulp && err > ldexp(mag, -40) && bad++ < 3)
                    CHECKF(0, "accuracy: float32 cumsum %lld elements dim %d dist %d: element %lld: %.9g vs exact %.17g",
                           (long long)n, dim, dist, (long long)e, got, ex);
            }
        }
    CHECKF(bad == 0, "accuracy: %ld elements out of tolerance", bad);
    if (nd > 1)
        printf("  accuracy: float32 [%lld, %lld] dim %d", (long long)shape[0], (long long)shape[1], dim);
    else
        printf("  accuracy: float32 [%lld]", (long long)shape[0]);
    printf(" %s, threads %d: max error %.3f of its tolerance (1 ulp or 2^-40 sum|x|)\n",
           dist ? "cancellation" : "wide magnitudes", threads, worst);
    free(x);
    free(y);
    free(line);
}

static void accuracy(void) {
    int64_t s1[1] = {(int64_t)1 << 22};
    accuracy_case(1, s1, 0, 0, 0);
    accuracy_case(1, s1, 0, 1, 2);
    int64_t s2[2] = {4096, 512};
    accuracy_case(2, s2, 0, 1, 0);
    accuracy_case(2, s2, 1, 1, 3);
    int64_t s3[2] = {3, 1 << 20};
    accuracy_case(2, s3, 1, 0, 2);
}

/* ---------------------------------------------------------------------------------- */
/* Partition summaries: the reduce pass against the scan's own carry                   */
/* ---------------------------------------------------------------------------------- */

/* The chained path folds a partition's summary from fsum_reduce when another thread
 * scans it, and the scan's own outgoing carry on one thread; both must be the same
 * bits (NaN: any NaN, the dispatcher makes every NaN carry the default NaN).  The
 * float16 reduce sums a block in another order than the scan (its sums are exact), so
 * this drives it directly with blocks that stress exactness and order: the largest
 * values, subnormals, zeros of both signs (an all -0.0 block sums to -0.0), +-inf and
 * NaN, in both directions and with exclusive shifts, on every instruction set.  float32
 * and float64 rows take the vector total (vd_total: the network's additions with their
 * operands swapped) instead; they run the same comparison on random magnitudes, mostly
 * -0.0, cancelling pairs and the extremes. */
static void reduce_vs_scan(void) {
    const int64_t n = 9 * SF_SCAN_BLOCK + 13;
    unsigned char *x = malloc(8 * (size_t)(n + 2));
    unsigned char *y = malloc(8 * (size_t)(n + 2));
    sf_test_rng r;
    sf_test_rng_seed(&r, 0xF16ull);
    static const uint16_t pool[] = {0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x03FF, 0x0000, 0x8000, 0x3C00,
                                    0xBC00, 0x7C00, 0xFC00, 0x7E00, 0xFE55, 0x0400, 0x7BFE, 0x8400};
    static const double wide_pool[] = {0x1.fffffep127, -0x1.fffffep127, 0x1p-149, -0x1p-149, 0x1p-126, 0.0, -0.0, 1.0,
                                       -1.0, INFINITY, -INFINITY, NAN, 0x1.fffffffffffffp1023, -0x1p-1074, 3.0, -0x1p100};
    static const scanfuse_dtype dts[] = {SCANFUSE_FLOAT16, SCANFUSE_FLOAT32, SCANFUSE_FLOAT64};
    int checked = 0;
    for (int di = 0; di < 3; di++) {
        const scanfuse_dtype dt = dts[di];
        for (int round = 0; round < (dt == SCANFUSE_FLOAT16 ? 400 : 100); round++) {
            /* kind 0: random values; 1: extremes from the pool; 2: mostly -0.0; 3: finite
             * values that cancel to an exact zero block; the special values only sometimes */
            int kind = round % 4;
            bool specials = round % 3 == 0;
            for (int64_t i = 0; i < n; i++) {
                uint64_t u = sf_test_rng_next(&r);
                if (dt == SCANFUSE_FLOAT16) {
                    uint16_t h, *xh = (uint16_t *)(void *)x;
                    if (kind == 0) h = (uint16_t)(u & 0xFFFF);
                    else if (kind == 1) h = pool[u % 16];
                    else if (kind == 2) h = (u % 97) ? 0x8000 : (uint16_t)((u >> 8) & 0xFFFF);
                    else h = (uint16_t)(0x5000 + (u >> 8) % 0x2BFF) ^ (uint16_t)((i & 1) << 15);
                    if (kind == 3 && (i & 1)) h = xh[i - 1] ^ 0x8000; /* the negation of the one before */
                    bool special = (h & 0x7C00) == 0x7C00;
                    if (special && !specials) h &= 0xBFFF;
                    xh[i] = h;
                    continue;
                }
                double v;
                if (kind == 0) v = ldexp(sf_test_rng_uniform(&r) * 2 - 1, (int)(u % 81) - 40);
                else if (kind == 1) v = wide_pool[u % 16];
                else if (kind == 2) v = (u % 97) ? -0.0 : ldexp(sf_test_rng_uniform(&r), (int)(u % 41) - 20);
                else v = ldexp(1.0 + sf_test_rng_uniform(&r), (int)(u % 61) - 30);
                if (kind == 3 && (i & 1)) v = -sf_load_f64(x, i - 1, dt);
                if (!isfinite(v) && !specials) v = 0.5;
                sf_store_f64(x, i, dt, v);
            }
            for (int ii = 0; ii < nisas; ii++) {
                const sf_scan_kernels *K = &sf_scan_portable_kernels;
#ifdef SF_SCAN_X86
                if (strcmp(isas[ii], "avx2") == 0) K = &sf_scan_avx2_kernels;
                if (strcmp(isas[ii], "avx512") == 0) K = &sf_scan_avx512_kernels;
                if (strcmp(isas[ii], "avx512w") == 0) K = &sf_scan_avx512w_kernels;
#endif
                for (int fl = 0; fl < 4; fl++) {
                    bool rev = fl & 1;
                    int64_t ex = (fl >> 1) & 1, len = n - 1;
                    sf_seq s;
                    memset(&s, 0, sizeof s);
                    s.x = x;
                    s.xs = rev ? -1 : 1;
                    s.x0 = rev ? len - 1 + ex : -ex;
                    s.lo = ex;
                    s.y = y;
                    s.ys = rev ? -1 : 1;
                    s.y0 = rev ? len - 1 : 0;
                    s.len = len;
                    s.xdt = s.ydt = dt;
                    /* whole and split ranges: a reduce starts at a block boundary */
                    for (int64_t a = 0; a < len; a += 3 * SF_SCAN_BLOCK) {
                        sf_dd ls = {-0.0, -0.0}, lr = {-0.0, -0.0};
                        K->fsum_scan(&s, a, len, -0.0, &ls);
                        K->fsum_reduce(&s, a, len, &lr);
                        bool same = (isnan(ls.hi) && isnan(lr.hi)) ||
                                    (memcmp(&ls.hi, &lr.hi, 8) == 0 && memcmp(&ls.lo, &lr.lo, 8) == 0);
                        CHECKF(same, "%s reduce vs scan on %s: round %d kind %d%s%s from %lld: reduce (%a, %a), scan (%a, %a)",
                               scanfuse_dtype_name(dt), isas[ii], round, kind, rev ? " rev" : "", ex ? " excl" : "",
                               (long long)a, lr.hi, lr.lo, ls.hi, ls.lo);
                        checked++;
                    }
                }
            }
        }
    }
    printf("  partition summaries (float16, float32, float64): %d reduce/scan pairs identical\n", checked);
    free(x);
    free(y);
}

/* ---------------------------------------------------------------------------------- */
/* The public API with options.threads                                                 */
/* ---------------------------------------------------------------------------------- */

static void api_threads(void) {
    static const char *const texts[] = {
        "input x: float32[300007]\ny = cumsum(x, dim=0, exclusive=true)\noutput y\n",
        "input x: bfloat16[1000, 700]\ny = cumsum(x, dim=0, dtype=float32)\noutput y\n",
        "input x: float32[200003]\nv, i = cummax(x, dim=0, reverse=true)\noutput v, i\n",
        "input x: int32[3, 200000]\ny = cumsum(x, dim=1)\noutput y\n",
        "input x: float64[2000, 300]\ny = cumprod(x, dim=1)\noutput y\n",
    };
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        scanfuse_fusion *f = scanfuse_parse(texts[t], "threads");
        CHECKF(scanfuse_fusion_status(f) == SCANFUSE_OK, "parse: %s", scanfuse_fusion_error(f));
        int nin = scanfuse_fusion_num_inputs(f), nout = scanfuse_fusion_num_outputs(f);
        (void)nin;
        const char *name;
        scanfuse_dtype dt;
        int nd;
        int64_t sh[SCANFUSE_MAX_DIMS];
        scanfuse_fusion_input_info(f, 0, &name, &dt, &nd, sh);
        int64_t n = 1;
        for (int k = 0; k < nd; k++) n *= sh[k];
        size_t es = scanfuse_dtype_size(dt);
        void *x = malloc((size_t)n * es);
        sf_test_rng r;
        sf_test_rng_seed(&r, 99 + t);
        for (int64_t i = 0; i < n; i++) put_random(x, i, dt, &r, false);
        scanfuse_dl_tensor din = {x, {SCANFUSE_DL_CPU, 0}, nd, scanfuse_dtype_to_dl(dt), sh, NULL, 0};
        void *first[2] = {NULL, NULL};
        size_t obytes[2] = {0, 0};
        static const int th[] = {1, 2, 3, 7, 0};
        for (int ti = 0; ti < 5; ti++) {
            scanfuse_options o;
            scanfuse_options_init(&o);
            o.threads = th[ti];
            scanfuse_program *p = scanfuse_compile(f, &o);
            scanfuse_dl_tensor dout[2];
            int64_t osh[2][SCANFUSE_MAX_DIMS];
            void *ob[2] = {NULL, NULL};
            for (int k = 0; k < nout; k++) {
                const char *on;
                scanfuse_dtype odt;
                int ond;
                scanfuse_fusion_output_info(f, k, &on, &odt, &ond, osh[k]);
                obytes[k] = (size_t)n * scanfuse_dtype_size(odt);
                ob[k] = malloc(obytes[k]);
                scanfuse_dl_tensor o2 = {ob[k], {SCANFUSE_DL_CPU, 0}, ond, scanfuse_dtype_to_dl(odt), osh[k], NULL, 0};
                dout[k] = o2;
            }
            CHECK_STATUS(scanfuse_run(p, &din, 1, dout, nout), SCANFUSE_OK);
            for (int k = 0; k < nout; k++) {
                if (ti == 0) {
                    first[k] = ob[k];
                } else {
                    CHECKF(memcmp(first[k], ob[k], obytes[k]) == 0, "program %zu output %d: threads %d differ from 1",
                           t, k, th[ti]);
                    free(ob[k]);
                }
            }
            scanfuse_program_free(p);
        }
        for (int k = 0; k < nout; k++) free(first[k]);
        free(x);
        scanfuse_fusion_free(f);
    }
}

int main(void) {
    nisas = 0;
    isas[nisas++] = "portable";
    if (sf_cpu_scan_force_isa("avx2")) isas[nisas++] = "avx2";
    if (sf_cpu_scan_force_isa("avx512")) isas[nisas++] = "avx512";
    if (sf_cpu_scan_force_isa("avx512w")) isas[nisas++] = "avx512w";
    sf_cpu_scan_force_isa(NULL);
    printf("scan kernels: %s (checking", sf_cpu_scan_isa());
    for (int i = 0; i < nisas; i++) printf(" %s", isas[i]);
#ifdef SF_SCAN_X86
    printf("; AVX512-BF16 conversions %s", atomic_load(&sf_scan_avx512_bf16) ? "on" : "off");
#endif
    printf(")\n");
    int64_t saved = sf_cpu_scan_mt_min_bytes;
    sf_cpu_scan_mt_min_bytes = 0; /* spread even small scans over threads */
    conversions();
    bytes_sweep();
    rows8_sweep();
    chain_sweep();
    narrowing_sweep();
    reduce_vs_scan();
    printf("  %d byte-exact cases over %d instruction sets and 1, 2, 3, 7 threads\n", case_no, nisas);
    accuracy();
    sf_cpu_scan_mt_min_bytes = saved;
    api_threads();
    return sf_test_finish("test_scan_threads");
}
