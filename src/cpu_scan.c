/*
 * cpu_scan.c — the scans of the CPU backend: cumsum, cumprod, cummax, cummin and
 * logcumsumexp along any dim, with the exclusive and reverse flags.
 *
 * Accumulation policy (DESIGN.md §1, docs/OPS.md):
 *  - the input is first converted to the result dtype (cumsum/cumprod with dtype=);
 *  - float cumsum accumulates with compensated summation (a double sum plus the exact
 *    errors of its additions, i.e. twice double precision), so each output is the
 *    exact prefix sum rounded once (round-to-odd to double, then one rounding by the
 *    store); an infinity or NaN propagates as IEEE addition would;
 *  - float cumprod and logcumsumexp accumulate in double, rounded once per output;
 *  - integer scans accumulate in int64 with two's-complement wrapping, wrapped to the
 *    result dtype by the store;
 *  - cummax/cummin: ties go to the later element in scan order, a NaN wins and its
 *    index is the latest NaN's; indices point into the unflipped input.
 * Every row is scanned sequentially in a fixed order, so results are deterministic.
 *
 * Layout: the scan works on tiles that are either K steps of one row ("row mode",
 * when the scanned dim is innermost in the output and rows are long) or one step of
 * up to SF_CPU_BLOCK neighbouring rows ("column mode", otherwise), so every gather
 * and store moves a whole block and the accumulators of neighbouring rows advance
 * together.
 */
#include "cpu.h"

#include <math.h>
#include <string.h>

typedef enum scan_kind {
    K_SUM_F, K_SUM_I, K_PROD_F, K_PROD_I, K_MAX_F, K_MAX_I, K_MIN_F, K_MIN_I, K_LSE
} scan_kind;

/* Accumulators of up to SF_CPU_BLOCK rows and the blocks of one tile. */
typedef struct scan_work {
    double hi[SF_CPU_BLOCK], lo[SF_CPU_BLOCK]; /* float state (lo: sum compensation) */
    int64_t iv[SF_CPU_BLOCK];                  /* integer state */
    int64_t idx[SF_CPU_BLOCK];                 /* cummax/cummin index */
    double xf[SF_CPU_BLOCK], yf[SF_CPU_BLOCK];
    int64_t xi[SF_CPU_BLOCK], yi[SF_CPU_BLOCK], yidx[SF_CPU_BLOCK];
} scan_work;

/* log(exp(a) + exp(b)); two equal infinities give that infinity, NaN propagates. */
static inline double log_add_exp(double a, double b) {
    if (isnan(a) || isnan(b)) return a + b;
    double mx = a > b ? a : b, mn = a > b ? b : a;
    if (mx == mn && isinf(mx)) return mx;
    return mx + log1p(exp(mn - mx));
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
    case K_LSE: fv = -INFINITY; break;
    case K_MAX_I: iv = sf_int_min(dt); break; /* bool: false */
    case K_MIN_I: iv = sf_int_max(dt); break; /* bool: true */
    }
    for (int64_t j = 0; j < m; j++) {
        w->hi[j] = fv;
        w->iv[j] = iv;
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
    case K_PROD_F:
        TILE_LOOP(double before = hi[j]; hi[j] *= xf[q0 + j];
                  yf[q0 + j] = excl ? before : hi[j];)
        break;
    case K_LSE:
        TILE_LOOP(double before = hi[j]; hi[j] = log_add_exp(hi[j], xf[q0 + j]);
                  yf[q0 + j] = excl ? before : hi[j];)
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

void sf_cpu_scan(const sf_node *node, const sf_view *in, const sf_view *out0,
                 const sf_view *out1, void *work) {
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
    if (sf_numel(in->ndim, in->shape) == 0) return;

    int d = (int)node->a.dim;
    SF_ASSERT(d >= 0 && d < in->ndim);
    SF_ASSERT(out1 == NULL || (out1->ndim == out0->ndim && sf_cpu_view_is_contiguous(out1) &&
                               sf_cpu_view_is_contiguous(out0)));
    int64_t n = in->shape[d], in_d = in->strides[d], out_d = out0->strides[d];
    bool excl = node->a.exclusive, rev = node->a.reverse;

    /* The other dims, for the walk over rows (out1 shares out0's contiguous layout). */
    int64_t oshape[SF_MAX_DIMS], ostr_in[SF_MAX_DIMS], ostr_out[SF_MAX_DIMS];
    int no = 0;
    bool later_dims = false;
    for (int e = 0; e < in->ndim; e++) {
        if (e == d) continue;
        if (e > d && in->shape[e] > 1) later_dims = true;
        oshape[no] = in->shape[e];
        ostr_in[no] = in->strides[e];
        ostr_out[no] = out0->strides[e];
        no++;
    }
    const int64_t *sp[2] = {ostr_in, ostr_out};
    sf_cpu_iter it;
    int64_t offs[2];

    scan_work *w = work;
    /* Step t of the scan order is position first + t*dir of the scanned dim. */
    int64_t first = rev ? n - 1 : 0, dir = rev ? -1 : 1;

    if (!later_dims && n >= 16) {
        /* Row mode: one row at a time, K contiguous-in-output steps per tile. */
        sf_cpu_iter_init(&it, no, oshape, 2, sp);
        while (sf_cpu_iter_next(&it, 1, offs) > 0) {
            init_state(w, k, dt, 1);
            for (int64_t t0 = 0; t0 < n; t0 += SF_CPU_BLOCK) {
                int64_t K = n - t0 < SF_CPU_BLOCK ? n - t0 : SF_CPU_BLOCK;
                int64_t pos0 = first + t0 * dir;
                load_tile(w, k, in, dt, offs[0] + pos0 * in_d, dir * in_d, K);
                scan_tile(w, k, dt, excl, K, 1, pos0, dir);
                store_tile(w, k, out0, out1, offs[1] + pos0 * out_d, dir * out_d, K);
            }
        }
    } else {
        /* Column mode: up to SF_CPU_BLOCK rows that are neighbours along the innermost
         * other dim advance together, one step per tile. */
        sf_cpu_iter_init(&it, no, oshape, 2, sp);
        int64_t m;
        while ((m = sf_cpu_iter_next(&it, SF_CPU_BLOCK, offs)) > 0) {
            int64_t s_in = sf_cpu_iter_stride(&it, 0), s_out = sf_cpu_iter_stride(&it, 1);
            init_state(w, k, dt, m);
            for (int64_t t = 0; t < n; t++) {
                int64_t pos = first + t * dir;
                load_tile(w, k, in, dt, offs[0] + pos * in_d, s_in, m);
                scan_tile(w, k, dt, excl, 1, m, pos, dir);
                store_tile(w, k, out0, out1, offs[1] + pos * out_d, s_out, m);
            }
        }
    }
}
