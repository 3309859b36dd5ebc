/*
 * test_cuda.c — the CUDA backend's tests.
 *
 * Part A (always; needs NVRTC, not a GPU): every program of part B (fused, and op by op
 * with options.fuse = 0) is planned for sm_90 and its CUDA source compiled through NVRTC
 * (sf_cuda_compile_offline), so a kernel template that does not compile fails CI.  The
 * programs cover every op of the op table: pointwise ops of every dtype (one fused kernel
 * per program, and op by op), casts between every pair of dtypes, every scan in every
 * kernel shape (warp rows, block rows with and without the look-back — also with short
 * look-back groups that exercise the prefix chain —, column scans with and without the
 * look-back, 0-d, empty) with the exclusive and reverse flags, reductions in every kernel
 * shape (warp, block, split block, thread, split thread), the index and sort ops (short
 * and long rows), creation and shape ops, matmul, and fused segments (the examples,
 * prologues and epilogues of scans and reductions).  Without NVRTC the part is skipped
 * with a message.  Compiles run in one process per core.
 *
 * Part B (a CUDA GPU is present; else skipped with "no CUDA GPU: <reason>"): every program
 * runs on the GPU and on the reference evaluator with the same inputs (device copies made
 * with the sf_cuda_* helpers), in three layouts (contiguous; transposed or broadcast
 * inputs with sliced outputs; sliced inputs with transposed outputs), compared element by
 * element per output tolerance class: exact (the reference value rounded once); 1 ulp
 * (4 for float64) for transcendentals; cumsum/sum/mean within 1 ulp or 2^-40 * sum|x|
 * (the magnitude computed by the reference from abs(x) in float64); cumprod/prod within
 * 1 ulp or 2^-38 * |exact| (the GPU multiplies in a tree, the reference in a row; both
 * carry a power of two beside the double, so neither over- nor underflows on the way);
 * logcumsumexp within 1 ulp or 2^-36 * (1 + |exact|); matmul within 1 ulp or 2^-40 *
 * sum|a||b|.  NaN positions and infinities must match exactly.  Every device output has
 * canary guard zones (and canary gaps inside strided outputs) that must stay intact.
 * Then the run-time errors (integer division by zero, out-of-range indices) must give
 * SCANFUSE_ERROR_VALUE with the reference's message and leave every output untouched,
 * a misaligned device pointer must be rejected, and a 2^28-element float32 cumsum must be
 * bit-identical over 10 runs (and within the accuracy target of a double-double
 * reference).  SF_CUDA_TEST_BIG=1 adds a cumsum over 2^31 + 7 uint8 elements into int32
 * (10.6 GB of device memory) and one over 2^31 + 7 float32 elements (17.2 GB), each
 * checked element by element.
 *
 * Environment: SF_CUDA_TEST_FILTER=TEXT runs only the programs whose text or tuning
 * contains TEXT (several: A|B|C; the bad-tensor, determinism and big checks then run only
 * with SF_CUDA_TEST_EXTRAS=1);
 * SF_CUDA_TEST_JOBS=N runs part B's programs in N processes (default: one per two cores,
 * at most 8); SF_CUDA_TEST_VERBOSE=1 prints every program; SF_CUDA_TEST_GEN_ONLY=1 runs part A only
 * (warms the kernel cache, e.g. SCANFUSE_CACHE_DIR, for a later GPU run).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS: part B's workers share their tallies */
#include "cuda_codegen.h"
#include "harness.h"
#include "sf.h"
#include "sweep_util.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { T_EXACT, T_ULP1, T_SUM, T_REL, T_LSE, T_MATMUL };
enum { G_DEFAULT, G_POS, G_UNIT, G_NONZERO, G_SPECIAL, G_FULL, G_INDEX, G_TIES, G_BOOL01, G_ROUND, G_RARE, G_RANGE };

#define MAXOUT 48
#define MAXIN 4

typedef struct prog {
    char *text;    /* the program (inputs x0.., outputs in order) */
    char *reftext; /* the same, plus one magnitude output per SUM/MATMUL output */
    size_t tlen, rlen;
    int nout;
    int tol[MAXOUT];
    int mag[MAXOUT]; /* index of the output's magnitude in reftext's outputs, or -1 */
    char outs[MAXOUT][24];
    char mags[MAXOUT][24];
    int nmag;
    int gen[MAXIN];
    int64_t irange[MAXIN]; /* G_INDEX: values in [0, irange) */
    const char *tune;      /* SCANFUSE_CUDA_TUNE while compiling */
    scanfuse_status expect; /* SCANFUSE_OK, or the status a run must give */
    bool no_unfused;       /* skip the fuse = 0 variant */
} prog;

static prog *progs;
static int nprogs, cap_progs;
static bool verbose;
static const char *filter;

/* ---------------------------------------------------------------------------------- */
/* Building programs                                                                  */
/* ---------------------------------------------------------------------------------- */

static void app(char **s, size_t *len, const char *fmt, va_list ap) {
    char tmp[4096];
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    if (k < 0) return;
    char *n = realloc(*s, *len + (size_t)k + 1);
    if (!n) abort();
    memcpy(n + *len, tmp, (size_t)k + 1);
    *s = n;
    *len += (size_t)k;
}

static void P(prog *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void P(prog *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    app(&p->text, &p->tlen, fmt, ap);
    va_end(ap);
    va_start(ap, fmt);
    app(&p->reftext, &p->rlen, fmt, ap);
    va_end(ap);
}

static void R(prog *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void R(prog *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    app(&p->reftext, &p->rlen, fmt, ap);
    va_end(ap);
}

static prog *newprog(void) {
    if (nprogs == cap_progs) {
        cap_progs = cap_progs ? 2 * cap_progs : 256;
        progs = realloc(progs, (size_t)cap_progs * sizeof *progs);
        if (!progs) abort();
    }
    prog *p = &progs[nprogs++];
    memset(p, 0, sizeof *p);
    return p;
}

/* Adds output NAME (already defined) with a tolerance class. */
static void out(prog *p, const char *name, int tol) {
    if (p->nout >= MAXOUT) return;
    snprintf(p->outs[p->nout], sizeof p->outs[0], "%s", name);
    p->tol[p->nout] = tol;
    p->mag[p->nout] = -1;
    p->nout++;
}

/* Adds output NAME with a magnitude: reftext gets `m<k> = EXPR` (a float64 value). */
static void out_mag(prog *p, const char *name, int tol, const char *expr) {
    out(p, name, tol);
    if (p->nout > MAXOUT || !p->nout) return;
    char m[24];
    snprintf(m, sizeof m, "m%d", p->nmag);
    R(p, "%s = %s\n", m, expr);
    snprintf(p->mags[p->nmag], sizeof p->mags[0], "%s", m);
    p->mag[p->nout - 1] = p->nmag++;
}

static void finish(prog *p) {
    P(p, "output ");
    for (int i = 0; i < p->nout; i++) P(p, "%s%s", i ? ", " : "", p->outs[i]);
    for (int i = 0; i < p->nmag; i++) R(p, ", %s", p->mags[i]);
    P(p, "\n");
}

static const char *dn(scanfuse_dtype dt) { return scanfuse_dtype_name(dt); }

static void shape_str(char *buf, size_t len, int nd, const int64_t *s) {
    size_t n = 0;
    buf[0] = '\0';
    sw_app(buf, len, &n, "[");
    for (int d = 0; d < nd; d++) sw_app(buf, len, &n, "%s%lld", d ? ", " : "", (long long)s[d]);
    sw_app(buf, len, &n, "]");
}

static bool accepts(sf_op op, scanfuse_dtype dt) {
    int fl = sf_op_table[op].flags;
    if ((fl & SF_F_FLOAT_ONLY) && !sf_dtype_is_float(dt)) return false;
    if ((fl & SF_F_NO_BOOL) && dt == SCANFUSE_BOOL) return false;
    return true;
}

static bool is_op(sf_op op, const char *name) { return strcmp(sf_op_table[op].name, name) == 0; }

static int pointwise_tol(sf_op op) {
    static const char *const ulp1[] = {"exp", "log", "log1p", "expm1", "rsqrt", "sigmoid",
                                       "tanh", "silu", "pow"};
    for (size_t i = 0; i < sizeof ulp1 / sizeof ulp1[0]; i++)
        if (is_op(op, ulp1[i])) return T_ULP1;
    return T_EXACT;
}

typedef struct shp {
    int nd;
    int64_t s[SF_MAX_DIMS];
} shp;

/* ---- pointwise ---- */

static void prog_unary(scanfuse_dtype dt, shp sh, int gen) {
    prog *p = newprog();
    char s[96];
    shape_str(s, sizeof s, sh.nd, sh.s);
    p->gen[0] = gen;
    P(p, "input x0: %s%s\n", dn(dt), s);
    for (int o = 0; o < SF_NUM_OPS; o++) {
        const sf_op_info *in = &sf_op_table[o];
        if (in->kind != SF_KIND_POINTWISE || in->nin != 1 || o == SF_OP_cast) continue;
        if (!accepts((sf_op)o, dt)) continue;
        char name[24];
        snprintf(name, sizeof name, "u_%s", in->name);
        P(p, "%s = %s(x0)\n", name, in->name);
        out(p, name, pointwise_tol((sf_op)o));
    }
    finish(p);
}

static void prog_casts(scanfuse_dtype dt, shp sh, int gen) {
    prog *p = newprog();
    p->no_unfused = true;
    char s[96];
    shape_str(s, sizeof s, sh.nd, sh.s);
    p->gen[0] = gen;
    P(p, "input x0: %s%s\n", dn(dt), s);
    for (int t = 0; t < SCANFUSE_NUM_DTYPES; t++) {
        char name[24];
        snprintf(name, sizeof name, "c_%s", dn((scanfuse_dtype)t));
        P(p, "%s = cast(x0, %s)\n", name, dn((scanfuse_dtype)t));
        out(p, name, T_EXACT);
    }
    finish(p);
}

static void prog_binary(scanfuse_dtype da, shp sa, scanfuse_dtype db, shp sb, int ga, int gb,
                        bool literals) {
    prog *p = newprog();
    char s1[96], s2[96];
    shape_str(s1, sizeof s1, sa.nd, sa.s);
    shape_str(s2, sizeof s2, sb.nd, sb.s);
    p->gen[0] = ga;
    p->gen[1] = gb;
    P(p, "input x0: %s%s\ninput x1: %s%s\n", dn(da), s1, dn(db), s2);
    scanfuse_dtype pd = scanfuse_dtype_promote(da, db);
    for (int o = 0; o < SF_NUM_OPS; o++) {
        const sf_op_info *in = &sf_op_table[o];
        if (in->kind != SF_KIND_POINTWISE || in->nin != 2) continue;
        if (!accepts((sf_op)o, pd) || !accepts((sf_op)o, da) || !accepts((sf_op)o, db)) continue;
        char name[24];
        snprintf(name, sizeof name, "b_%s", in->name);
        P(p, "%s = %s(x0, x1)\n", name, in->name);
        out(p, name, pointwise_tol((sf_op)o));
        if (literals && o != SF_OP_pow && !(o == SF_OP_sub && da == SCANFUSE_BOOL)) {
            const char *lit = sf_dtype_is_float(da) ? "2.5" : (da == SCANFUSE_BOOL ? "true" : "3");
            if ((o == SF_OP_remainder || o == SF_OP_floor_divide || o == SF_OP_div) && da == SCANFUSE_BOOL)
                continue;
            snprintf(name, sizeof name, "l_%s", in->name);
            P(p, "%s = %s(x0, %s)\n", name, in->name, lit);
            out(p, name, pointwise_tol((sf_op)o));
            snprintf(name, sizeof name, "r_%s", in->name);
            if (o == SF_OP_remainder || o == SF_OP_floor_divide) continue; /* x0 may be 0 */
            P(p, "%s = %s(%s, x0)\n", name, in->name, sf_dtype_is_float(da) ? "-1.75" : lit);
            out(p, name, pointwise_tol((sf_op)o));
        }
    }
    finish(p);
}

static void prog_where(scanfuse_dtype da, scanfuse_dtype db, shp sh) {
    prog *p = newprog();
    char s[96];
    shape_str(s, sizeof s, sh.nd, sh.s);
    p->gen[0] = G_BOOL01;
    p->gen[1] = G_SPECIAL;
    p->gen[2] = G_DEFAULT;
    P(p, "input x0: bool%s\ninput x1: %s%s\ninput x2: %s%s\n", s, dn(da), s, dn(db), s);
    P(p, "w0 = where(x0, x1, x2)\nw1 = where(x0, x1, 0)\nw2 = where(x0, 1.5, x2)\n");
    out(p, "w0", T_EXACT);
    out(p, "w1", T_EXACT);
    out(p, "w2", T_EXACT);
    finish(p);
}

/* ---- scans ---- */

static void prog_scans(scanfuse_dtype dt, shp sh, int dim, const char *tune, int gen) {
    prog *p = newprog();
    p->no_unfused = true; /* every scan is a kernel of its own either way */
    char s[96];
    shape_str(s, sizeof s, sh.nd, sh.s);
    p->gen[0] = gen;
    p->tune = tune;
    P(p, "input x0: %s%s\n", dn(dt), s);
    static const char *const ops[] = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"};
    for (int q = 0; q < 5; q++) {
        if (q == 4 && !sf_dtype_is_float(dt)) continue;
        for (int fl = 0; fl < 4; fl++) {
            bool ex = fl & 1, rv = fl & 2;
            char name[24], call[160];
            snprintf(name, sizeof name, "s%d_%d", q, fl);
            snprintf(call, sizeof call, "%s(x0, dim=%d%s%s)", ops[q], dim, ex ? ", exclusive=true" : "",
                     rv ? ", reverse=true" : "");
            if (q == 2 || q == 3) {
                P(p, "%s, %si = %s\n", name, name, call);
                out(p, name, T_EXACT);
                char iname[28];
                snprintf(iname, sizeof iname, "%si", name);
                out(p, iname, T_EXACT);
            } else if (q == 0) {
                P(p, "%s = %s\n", name, call);
                char m[200];
                snprintf(m, sizeof m, "cumsum(abs(cast(x0, float64)), dim=%d%s%s)", dim,
                         ex ? ", exclusive=true" : "", rv ? ", reverse=true" : "");
                out_mag(p, name, T_SUM, m);
            } else {
                P(p, "%s = %s\n", name, call);
                out(p, name, q == 1 ? T_REL : T_LSE);
            }
        }
    }
    /* an explicit result dtype */
    if (dt != SCANFUSE_FLOAT64) {
        scanfuse_dtype to = sf_dtype_is_float(dt) ? SCANFUSE_FLOAT64 : SCANFUSE_INT32;
        P(p, "sd = cumsum(x0, dim=%d, dtype=%s)\n", dim, dn(to));
        char m[160];
        snprintf(m, sizeof m, "cumsum(abs(cast(x0, float64)), dim=%d)", dim);
        out_mag(p, "sd", T_SUM, m);
    }
    finish(p);
}

/* ---- reductions ---- */

static void prog_reduce(scanfuse_dtype dt, shp sh, const char *dims, bool keep, bool nonempty,
                        int gen) {
    prog *p = newprog();
    p->no_unfused = true;
    char s[96];
    shape_str(s, sizeof s, sh.nd, sh.s);
    p->gen[0] = gen;
    P(p, "input x0: %s%s\n", dn(dt), s);
    const char *kd = keep ? ", keepdim=true" : "";
    char m[200];
    P(p, "r_sum = sum(x0%s%s)\n", dims, kd);
    snprintf(m, sizeof m, "sum(abs(cast(x0, float64))%s%s)", dims, kd);
    out_mag(p, "r_sum", T_SUM, m);
    P(p, "r_prod = prod(x0%s%s)\n", dims, kd);
    out(p, "r_prod", T_REL);
    if (sf_dtype_is_float(dt)) {
        P(p, "r_mean = mean(x0%s%s)\n", dims, kd);
        snprintf(m, sizeof m, "mean(abs(cast(x0, float64))%s%s)", dims, kd);
        out_mag(p, "r_mean", T_SUM, m);
    }
    if (nonempty) {
        P(p, "r_max = max(x0%s%s)\nr_min = min(x0%s%s)\n", dims, kd, dims, kd);
        out(p, "r_max", T_EXACT);
        out(p, "r_min", T_EXACT);
        /* argmax/argmin take one dim (or none) */
        if (strncmp(dims, ", dim=[", 7) != 0) {
            P(p, "r_amax = argmax(x0%s%s)\nr_amin = argmin(x0%s%s)\n", dims, kd, dims, kd);
            out(p, "r_amax", T_EXACT);
            out(p, "r_amin", T_EXACT);
        }
    }
    finish(p);
}

/* ---- raw programs ---- */

static prog *prog_raw(const char *text, int tol_all) {
    prog *p = newprog();
    /* text: inputs and statements; the last line "output a, b, ..." is parsed here */
    const char *o = strncmp(text, "output ", 7) == 0 ? text : strstr(text, "\noutput ");
    if (o && o != text) o++;
    size_t head = o ? (size_t)(o - text) : strlen(text);
    char *h = malloc(head + 1);
    if (!h) abort();
    memcpy(h, text, head);
    h[head] = '\0';
    P(p, "%s", h);
    free(h);
    if (o) {
        char list[1024];
        snprintf(list, sizeof list, "%s", o + 7);
        for (char *tok = strtok(list, ", \n"); tok; tok = strtok(NULL, ", \n")) out(p, tok, tol_all);
    }
    finish(p);
    return p;
}

/* Products whose running value leaves double's range and comes back (G_RANGE: wide
 * magnitudes, some zeros): cumprod in its four forms, prod, and a float64 result,
 * against the reference's in-order product (both carry a power of two: sf_prodx). */
static void prog_prods(scanfuse_dtype dt, shp sh, int dim, const char *tune) {
    prog *p = newprog();
    p->no_unfused = true;
    char s[96];
    shape_str(s, sizeof s, sh.nd, sh.s);
    p->gen[0] = G_RANGE;
    p->tune = tune;
    P(p, "input x0: %s%s\n", dn(dt), s);
    for (int fl = 0; fl < 4; fl++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", fl);
        P(p, "%s = cumprod(x0, dim=%d%s%s)\n", name, dim, fl & 1 ? ", exclusive=true" : "",
          fl & 2 ? ", reverse=true" : "");
        out(p, name, T_REL);
    }
    P(p, "r = prod(x0, dim=%d)\n", dim);
    out(p, "r", T_REL);
    if (dt != SCANFUSE_FLOAT64) {
        P(p, "w = cumprod(x0, dim=%d, dtype=float64)\n", dim);
        out(p, "w", T_REL);
    }
    finish(p);
}

/* An exact program whose first input holds indices in [0, range). */
static prog *prog_index(const char *text, int64_t range) {
    prog *p = prog_raw(text, T_EXACT);
    p->gen[0] = G_INDEX;
    p->irange[0] = range;
    return p;
}

/* ---------------------------------------------------------------------------------- */
/* The program list                                                                   */
/* ---------------------------------------------------------------------------------- */

static shp S1(int64_t a) { shp r = {1, {a}}; return r; }
static shp S2(int64_t a, int64_t b) { shp r = {2, {a, b}}; return r; }
static shp S3(int64_t a, int64_t b, int64_t c) { shp r = {3, {a, b, c}}; return r; }
static shp S0(void) { shp r = {0, {0}}; return r; }

/* Gathers that fuse into pointwise, scan and reduction kernels (the emitter computes
 * them inline; a stored one gets its own kernel, index_select a row-gather kernel):
 *  0, 1  the MoE combine of examples/moe_routing.sf at small sizes: k = 1 with bfloat16
 *        rows of odd length (the row gather's element path), k = 3 with float32 rows (its
 *        16-byte path; permuted is internal: the combine composes both indices)
 *  2     take_along_dim in a reduction's prologue, index not provably in range (a check
 *        kernel, the load clamped)
 *  3     the combine with unproven token and inverse indices (two checks; composed)
 *  4     gather in a cumsum's prologue, and gather / flat take_along_dim in a pointwise
 *        segment
 *  5     a reshape that regroups the gathered rows (the view remapped through the flat
 *        index), unproven indices
 * gather_irange: the valid range of each index input of programs 2..5 (0: not an index). */
static const char *const gather_progs[] = {
    "input logits: float32[64, 8]\ninput hidden: bfloat16[64, 1001]\n"
    "top, expert = topk(logits, 1, dim=1)\nscore = sigmoid(cast(top, float32))\n"
    "pairs = reshape(expert, [64])\nperm = argsort(pairs, stable=true)\n"
    "inverse = argsort(perm, stable=true)\ntoken = floor_divide(perm, 1)\n"
    "permuted = index_select(hidden, 0, token)\n"
    "expert_out = take_along_dim(reshape(permuted, [64, 1, 1001]), reshape(inverse, [64, 1, 1]), dim=0)\n"
    "out = cast(sum(mul(expert_out, reshape(score, [64, 1, 1])), dim=1), bfloat16)\n"
    "output permuted, out\n",
    "input logits: float32[40, 8]\ninput hidden: float32[40, 264]\n"
    "top, expert = topk(logits, 3, dim=1)\nscore = sigmoid(top)\n"
    "pairs = reshape(expert, [120])\nperm = argsort(pairs, stable=true)\n"
    "inverse = argsort(perm, stable=true)\ntoken = floor_divide(perm, 3)\n"
    "permuted = index_select(hidden, 0, token)\n"
    "expert_out = take_along_dim(reshape(permuted, [120, 1, 264]), reshape(inverse, [40, 3, 1]), dim=0)\n"
    "out = sum(mul(expert_out, reshape(score, [40, 3, 1])), dim=1)\n"
    "output score, out\n",
    "input x: float32[50, 300]\ninput i: int64[50, 4]\n"
    "g = take_along_dim(x, i, dim=1)\ns = sum(mul(g, 2.5), dim=1)\noutput s\n",
    "input hidden: float32[40, 264]\ninput token: int64[120]\ninput inv: int64[40, 3]\n"
    "permuted = index_select(hidden, 0, token)\n"
    "e = take_along_dim(reshape(permuted, [120, 1, 264]), reshape(inv, [40, 3, 1]), dim=0)\n"
    "s = sum(e, dim=1)\noutput s\n",
    "input x: bfloat16[8, 1000]\ninput i: int32[8, 1000]\ninput z: float32[1000]\n"
    "c = cumsum(gather(x, 1, i), dim=1)\ny = add(gather(x, 1, i), z)\n"
    "w = take_along_dim(x, i)\noutput c, y, w\n",
    "input hidden: float32[100, 264]\ninput token: int64[300]\ninput inv: int64[100, 1]\n"
    "permuted = index_select(hidden, 0, token)\n"
    "e = take_along_dim(reshape(permuted, [300, 4, 66]), reshape(inv, [100, 1, 1]), dim=0)\n"
    "s = sum(e, dim=1)\noutput s\n",
};
static const int64_t gather_irange[4][MAXIN] = {{0, 300}, {0, 40, 120}, {0, 1000}, {0, 100, 300}};

/* uint8, int64 and a broadcast int32 input of shape eshape summed into int64, scanned
 * along dim both ways (inputs of three widths in one staged tile) */
static void prog_widths(const char *shape, const char *eshape, int dim) {
    prog *p = newprog();
    p->no_unfused = true;
    P(p, "input c: uint8[%s]\ninput d: int64[%s]\ninput e: int32[%s]\n"
         "s = add(add(cast(c, int64), d), expand(cast(e, int64), [%s]))\n"
         "y = cumsum(s, dim=%d)\nyr = cumsum(s, dim=%d, reverse=true, exclusive=true)\n",
      shape, shape, eshape, shape, dim, dim);
    out(p, "y", T_EXACT);
    out(p, "yr", T_EXACT);
    finish(p);
}

/* bfloat16 rows [rows, len] scaled by float32 weights that every row reads, scanned along
 * the rows (flags: the scan's extra attributes), the result cast back to bfloat16 if
 * cast_out; under tune */
static void prog_weighted(int rows, int len, const char *tune, bool cast_out, const char *flags) {
    prog *p = newprog();
    p->no_unfused = true;
    p->tune = tune;
    P(p, "input x: bfloat16[%d, %d]\ninput w: float32[%d]\n", rows, len, len);
    if (cast_out) P(p, "y = cast(cumsum(mul(cast(x, float32), w), dim=-1%s), bfloat16)\n", flags);
    else P(p, "y = cumsum(mul(cast(x, float32), w), dim=-1%s)\n", flags);
    char m[160];
    snprintf(m, sizeof m, "cumsum(abs(mul(cast(x, float64), cast(w, float64))), dim=-1%s)", flags);
    out_mag(p, "y", T_SUM, m);
    finish(p);
}

/* The MoE routing and combine (the examples' form, cuda_combine.c's kernel): router
 * logits [T, E] of ldt, top k, the stable sort of the pairs, its inverse (argsort with
 * inv_flags), token = perm / d, the permuted rows of hidden [rows, H] of hdt and their
 * weighted sum back, cast to out_cast (NULL: none); outputs permuted and out. */
static prog *prog_moe(const char *ldt, int T, int E, int k, const char *hdt, int rows, int H, int d,
                      const char *inv_flags, const char *out_cast, const char *tune) {
    char t[1400], sum[128], outx[160];
    snprintf(sum, sizeof sum, "sum(mul(e, reshape(score, [%d, %d, 1])), dim=1)", T, k);
    if (out_cast) snprintf(outx, sizeof outx, "cast(%s, %s)", sum, out_cast);
    else snprintf(outx, sizeof outx, "%s", sum);
    snprintf(t, sizeof t,
             "input logits: %s[%d, %d]\ninput hidden: %s[%d, %d]\n"
             "top, expert = topk(logits, %d, dim=1)\nscore = sigmoid(%s)\n"
             "pairs = reshape(expert, [%d])\nperm = argsort(pairs, stable=true)\n"
             "inverse = argsort(perm%s)\ntoken = floor_divide(perm, %d)\n"
             "permuted = index_select(hidden, 0, token)\n"
             "e = take_along_dim(reshape(permuted, [%d, 1, %d]), reshape(inverse, [%d, %d, 1]), dim=0)\n"
             "out = %s\noutput permuted, out\n",
             ldt, T, E, hdt, rows, H, k, strcmp(ldt, "float32") ? "cast(top, float32)" : "top", T * k, inv_flags, d,
             T * k, H, T, k, outx);
    prog *q = prog_raw(t, T_EXACT);
    q->tol[1] = T_ULP1;
    q->tune = tune;
    return q;
}

static void build_programs(void) {
    const scanfuse_dtype all[] = {SCANFUSE_BOOL, SCANFUSE_UINT8, SCANFUSE_INT8, SCANFUSE_INT16,
                                  SCANFUSE_INT32, SCANFUSE_INT64, SCANFUSE_FLOAT16,
                                  SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32, SCANFUSE_FLOAT64};
    const int ndt = 10;
    /* pointwise: every op of every dtype, fused into one kernel per program */
    for (int i = 0; i < ndt; i++) {
        scanfuse_dtype dt = all[i];
        bool fl = sf_dtype_is_float(dt);
        prog_unary(dt, S2(3, 33), G_DEFAULT);
        prog_unary(dt, S1(257), fl ? G_SPECIAL : G_FULL);
        if (fl) prog_unary(dt, S2(5, 7), G_POS);
        prog_casts(dt, S1(300), fl ? G_SPECIAL : G_FULL);
        prog_binary(dt, S2(3, 33), dt, S2(3, 33), G_DEFAULT, G_NONZERO, true);
        prog_binary(dt, S2(4, 1), dt, S1(9), fl ? G_SPECIAL : G_FULL, G_NONZERO, false);
    }
    /* float16/bfloat16 rounding from double and float32 at halfway points (the hardware
     * conversions must round once) */
    prog_casts(SCANFUSE_FLOAT64, S1(3000), G_ROUND);
    prog_casts(SCANFUSE_FLOAT32, S1(3000), G_ROUND);
    prog_unary(SCANFUSE_FLOAT32, S0(), G_DEFAULT);
    prog_unary(SCANFUSE_INT32, S2(0, 5), G_DEFAULT);
    /* mixed dtypes */
    const scanfuse_dtype pairs[][2] = {{SCANFUSE_INT32, SCANFUSE_FLOAT16}, {SCANFUSE_UINT8, SCANFUSE_INT8},
                                       {SCANFUSE_BOOL, SCANFUSE_FLOAT32}, {SCANFUSE_INT64, SCANFUSE_FLOAT64},
                                       {SCANFUSE_BFLOAT16, SCANFUSE_FLOAT16}, {SCANFUSE_INT16, SCANFUSE_BFLOAT16},
                                       {SCANFUSE_BOOL, SCANFUSE_INT64}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        prog_binary(pairs[i][0], S2(6, 5), pairs[i][1], S1(5), G_DEFAULT, G_NONZERO, true);
        prog_where(pairs[i][0], pairs[i][1], S2(4, 9));
    }
    /* scans: every kernel shape */
    for (int i = 0; i < ndt; i++) {
        scanfuse_dtype dt = all[i];
        bool fl = sf_dtype_is_float(dt);
        int g = fl ? G_DEFAULT : G_FULL;
        prog_scans(dt, S1(7), 0, NULL, g);
        prog_scans(dt, S1(1000), 0, NULL, g);       /* warp row (ITEMS 32) */
        prog_scans(dt, S1(40000), -1, NULL, g);     /* block rows with look-back */
        prog_scans(dt, S2(3, 33), 1, NULL, g);      /* warp rows */
        prog_scans(dt, S2(33, 3), 0, NULL, g);      /* column, look-back */
        prog_scans(dt, S2(300, 40), 0, NULL, g);    /* column, look-back, several groups */
        prog_scans(dt, S3(2, 50, 5), 1, NULL, g);   /* column with outer dims */
        prog_scans(dt, S0(), 0, NULL, g);           /* 0-d */
        prog_scans(dt, S2(0, 5), 0, NULL, g);       /* empty */
        if (fl) prog_scans(dt, S2(4, 97), 1, NULL, G_TIES); /* NaN, infinities, ties */
        else prog_scans(dt, S2(4, 97), 1, NULL, G_TIES);
    }
    /* products out of double's range and back: look-back rows, warp rows, columns */
    for (int i = 0; i < ndt; i++) {
        if (!sf_dtype_is_float(all[i])) continue;
        prog_prods(all[i], S1(70001), 0, NULL);
        prog_prods(all[i], S2(3, 1000), 1, NULL);
        prog_prods(all[i], S2(300, 40), 0, NULL);
    }
    prog_prods(SCANFUSE_FLOAT32, S2(2100, 64), 0, "col_stream=1,col_l=1");
    /* rows of exactly one raked tile (4096 steps of 16-byte states) */
    prog_prods(SCANFUSE_FLOAT32, S2(5, 4096), 1, NULL);
    prog_prods(SCANFUSE_BFLOAT16, S2(5, 4096), 1, NULL);
    {
        /* a prologue value stored beside the product rows that read it: the epilogue reads
         * the inputs again, so the outputs may not go over the staged inputs (Io::OIP; the
         * raked kernel did not compile, session 36) */
        prog *p = prog_raw("input x: float32[3, 20001]\ninput w: float32[3, 20001]\nq = mul(x, w)\n"
                           "y = cumprod(q, dim=1)\nz = cumprod(q, dim=1, exclusive=true, reverse=true)\n"
                           "output q, y, z\n", T_REL);
        p->gen[0] = G_RANGE;
        p->gen[1] = G_UNIT;
        p->no_unfused = true;
    }
    prog_scans(SCANFUSE_FLOAT32, S2(5, 3000), 1, NULL, G_DEFAULT);  /* block rows, one tile */
    prog_scans(SCANFUSE_FLOAT32, S1(20000), 0, "row_g=2,row_g2=3,row_items=1", G_DEFAULT); /* prefix chain */
    prog_scans(SCANFUSE_INT32, S1(20000), 0, "row_g=3,row_g2=2,row_items=2", G_FULL);
    /* two tiles in flight a block (row_pipe=1, blocks of 256): one long row, many rows of many tiles with
     * prefix chains, float16 through its conversions */
    prog_scans(SCANFUSE_FLOAT32, S1(200003), 0, "row_pipe=1,row_threads=256", G_DEFAULT);
    prog_scans(SCANFUSE_INT64, S2(3, 70001), 1, "row_pipe=1,row_threads=256,row_items=4,row_g=2,row_g2=3", G_FULL);
    prog_scans(SCANFUSE_FLOAT16, S1(100003), 0, "row_pipe=1,row_threads=256", G_DEFAULT);
    /* the previous group's aggregate folded by each tile (lb_ga=1, the default) with
     * small groups: prefix chains across super-groups; and the group aggregate waited
     * for instead (lb_ga=0) */
    prog_scans(SCANFUSE_FLOAT32, S1(200003), 0, "row_g=2,row_g2=3", G_DEFAULT);
    prog_scans(SCANFUSE_INT64, S2(3, 70001), 1, "row_g=3,row_g2=2,row_items=1", G_FULL);
    prog_scans(SCANFUSE_FLOAT16, S1(100003), 0, "row_g=2,row_g2=4", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT32, S1(7000003), 0, "lb_ga=0", G_DEFAULT);
    /* float64 sums in double (session 24): the accuracy bound rests on the folds' depth,
     * so a long chain of small groups (1025 tiles, 171 super-group links) against the
     * exact reference, and the double-double states of before (f64_dd=1) on rows and
     * columns */
    prog_scans(SCANFUSE_FLOAT64, S1(4194307), 0, "row_g=2,row_g2=3", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT64, S2(3, 70001), 1, "f64_dd=1", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT64, S2(300, 40), 0, "f64_dd=1", G_DEFAULT);
    /* raked row tiles (row_rake=1: each thread stores its own outputs; 2: over its inputs
     * in the stage, copied out a warp at a time where they fit there): long rows, prefix
     * chains of small groups, 16-bit inputs and 8-byte states, int32 summed into int64,
     * staged one-tile rows, bfloat16 rows beside weights read by every row */
    prog_scans(SCANFUSE_FLOAT32, S1(200004), 0, "row_rake=2", G_DEFAULT);
    prog_scans(SCANFUSE_BFLOAT16, S2(3, 70000), 1, "row_rake=2,row_g=2,row_g2=3", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT16, S1(100000), 0, "row_rake=1", G_DEFAULT);
    prog_scans(SCANFUSE_INT64, S2(3, 70000), 1, "row_rake=2,row_g=3,row_g2=2,row_items=4", G_FULL);
    prog_scans(SCANFUSE_INT32, S1(100000), 0, "row_rake=2", G_FULL);
    prog_scans(SCANFUSE_FLOAT32, S2(5, 3000), 1, "row_rake=2,row_stage1=1", G_DEFAULT);
    prog_raw("input x: bfloat16[16, 8192]\ninput w: float32[8192]\n"
             "y = cast(cumsum(mul(cast(x, float32), w), dim=-1), bfloat16)\noutput y\n", T_SUM)->tune = "row_rake=2";
    /* ... by default: rows of whole tiles, one tile (runs of 4 chunks of 16 bytes for
     * float32, 2 for bfloat16) or a few, every scan op */
    prog_scans(SCANFUSE_FLOAT32, S2(6, 4096), 1, NULL, G_DEFAULT);
    prog_scans(SCANFUSE_BFLOAT16, S2(5, 4096), 1, NULL, G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT16, S2(3, 65536), 1, NULL, G_DEFAULT);
    prog_scans(SCANFUSE_INT64, S2(3, 4096), 1, NULL, G_FULL);
    prog_scans(SCANFUSE_BFLOAT16, S2(3, 40000), 1, "row_rake=2,row_items=64,row_vec=1", G_DEFAULT); /* 64 chunks */
    /* ... with the rows' tiles taken row after row (row_ilv=0; by default the rows'
     * tickets interleave): rows of whole tiles, one group or several with prefix chains,
     * 16-bit inputs, index outputs, unraked rows (a partial last tile) */
    prog_scans(SCANFUSE_FLOAT32, S2(5, 65536), 1, "row_ilv=0", G_DEFAULT);
    prog_scans(SCANFUSE_BFLOAT16, S2(7, 49152), 1, "row_ilv=0,row_g=2,row_g2=3", G_DEFAULT);
    prog_scans(SCANFUSE_INT64, S2(3, 40961), 1, "row_ilv=0,row_g=3,row_g2=2", G_FULL);
    /* column sums of a 16-bit input in a grid of 8 tiles an SM (1056 on the H200): 8
     * blocks an SM at 32 registers; bfloat16 forward, exclusive reversed and into
     * float32, float16 forward */
    prog_raw("input x: bfloat16[4096, 2112]\ninput w: float16[4096, 2112]\ny = cumsum(x, dim=0)\n"
             "z = cumsum(x, dim=0, exclusive=true, reverse=true)\nh = cumsum(x, dim=0, dtype=float32)\n"
             "v = cumsum(w, dim=0)\noutput y, z, h, v\n",
             T_SUM);
    /* column scans streamed by one block a column block, no look-back (col_stream=1 for
     * any grid): 16-bit sums, every scan op of float32 columns (the 16-byte states of
     * cummax and cummin take the tile kernel), int64 in short chunks, a 3-d tensor with a
     * ring of two stages, a partial last chunk and column block */
    prog_raw("input x: bfloat16[4096, 2112]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\n"
             "output y, z\n", T_SUM)->tune = "col_stream=1";
    prog_scans(SCANFUSE_FLOAT32, S2(3001, 96), 0, "col_stream=1", G_DEFAULT);
    prog_scans(SCANFUSE_INT64, S2(700, 40), 0, "col_stream=1,col_l=2", G_FULL);
    prog_scans(SCANFUSE_FLOAT16, S3(3, 500, 72), 1, "col_stream=1,col_ring=2", G_DEFAULT);
    /* ... its pass two reading the stage again (col_hold=0), blocks of 64 columns, and
     * 1-byte inputs, whose 64 steps a thread a stage are too many to hold (read again
     * by default) */
    prog_raw("input x: bfloat16[1100, 2112]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\n"
             "output y, z\n", T_SUM)->tune = "col_stream=1,col_hold=0,col_ring=3";
    prog_raw("input x: bfloat16[1100, 2112]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\n"
             "output y, z\n", T_SUM)->tune = "col_stream=1,col_w=64";
    prog_raw("input x: uint8[1500, 96]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\n"
             "output y, z\n", T_SUM)->tune = "col_stream=1";
    /* ... chunks of 8 rows (col_l=1), so the carry's levels turn over: 263 chunks of
     * float32 and float64 (past a run of 256; every scan op of float64, whose sums in
     * double need the magnitudes that T_SUM's 2^-40 * sum|x| is measured by), 65538 of
     * int64 (past a run of 65536; 8 columns: a partial column block, read from global
     * memory) and 2049 of 32 int64 columns (staged) */
    prog_raw("input x: float32[2100, 64]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\n"
             "output y, z\n", T_SUM)->tune = "col_stream=1,col_l=1";
    prog_scans(SCANFUSE_FLOAT64, S2(2100, 64), 0, "col_stream=1,col_l=1", G_DEFAULT);
    prog_raw("input x: int64[524300, 8]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\n"
             "output y, z\n", T_SUM)->tune = "col_stream=1,col_l=1";
    prog_raw("input x: int64[16390, 32]\ny = cumsum(x, dim=0)\nz = cumprod(x, dim=0, reverse=true)\n"
             "output y, z\n", T_SUM)->tune = "col_stream=1,col_l=1";
    /* ... and by default, where the grid has about a column block an SM (4160 and 4200
     * columns: 130 and 132 blocks of 32) */
    prog_raw("input x: bfloat16[600, 4160]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\n"
             "h = cumsum(x, dim=0, dtype=float32)\noutput y, z, h\n", T_SUM);
    prog_scans(SCANFUSE_FLOAT32, S2(300, 4200), 0, NULL, G_DEFAULT);
    /* ... in blocks of 64 columns for 16-bit inputs where those are about one an SM
     * (8200 columns: 129 blocks of 64) */
    prog_raw("input x: float16[300, 8200]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\n"
             "output y, z\n", T_SUM);
    {
        /* a staged look-back row of 1-, 8- and 4-byte inputs, reversed and exclusive (the
         * program the CPU emulator needed -fwrapv for, tools/cuda_emu/run.sh) */
        prog *p = newprog();
        P(p, "input c: uint8[2, 40001]\ninput d: int64[2, 40001]\ninput e: int32[2, 40001]\n"
             "s = add(add(cast(c, int64), d), cast(e, int64))\ny = cumsum(s, dim=1, exclusive=true, reverse=true)\n");
        out(p, "y", T_EXACT);
        finish(p);
    }
    {
        /* the vector loads' run-time stride test (row_io1=0; by default for one-input row
         * kernels only) for kernels of several inputs too: look-back rows
         * folding the previous group's aggregates (lb_ga=1), small groups, rows beside
         * per-step weights, inputs of three widths, a row scaled per row */
        static const char *const io0[][2] = {
            {"input x: float32[3000003]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\n"
             "output y, z\n", "row_io1=0"},
            {"input b: int64[3, 70001]\ny, i = cummax(b, dim=1, reverse=true)\noutput y, i\n",
             "row_io1=0,row_g=2,row_g2=3"},
            {"input x: bfloat16[64, 8192]\ninput w: float32[8192]\ny = cast(cumsum(mul(cast(x, float32), w), dim=1), bfloat16)\n"
             "output y\n", "row_io1=0"},
            {"input c: uint8[2, 40001]\ninput d: int64[2, 40001]\ninput e: int32[2, 40001]\n"
             "s = add(add(cast(c, int64), d), cast(e, int64))\ny = cumsum(s, dim=1, exclusive=true, reverse=true)\n"
             "output y\n", "row_io1=0"},
            {"input x: float32[3, 20001]\ninput s: float32[3, 1]\ny = cumsum(mul(x, s), dim=1)\noutput y\n",
             "row_io1=0"},
        };
        for (int i = 0; i < (int)(sizeof io0 / sizeof io0[0]); i++)
            prog_raw(io0[i][0], i == 1 || i == 3 ? T_EXACT : T_SUM)->tune = io0[i][1];
    }
    /* one path an input for one-input row kernels too (row_io1=1; by default only kernels
     * of two or more inputs): look-back rows, one-tile rows of 16-bit floats, an index scan */
    prog_raw("input x: float32[300003]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\n"
             "output y, z\n", T_SUM)->tune = "row_io1=1";
    prog_raw("input x: float16[5, 3000]\ny = cumsum(x, dim=1, reverse=true)\noutput y\n", T_SUM)->tune = "row_io1=1";
    prog_raw("input b: int32[3, 50001]\ny, i = cummin(b, dim=1)\noutput y, i\n", T_EXACT)->tune = "row_io1=1";
    {
        /* rows scaled by a value per row (size 1 along the scan: the one-element path of
         * the vector loads) and by a weight per step (the vector path), look-back rows */
        prog *p = newprog();
        P(p, "input x: float32[3, 20001]\ninput s: float32[3, 1]\ninput w: float32[20001]\n"
             "y = cumsum(mul(mul(x, s), w), dim=1, reverse=true)\n");
        out(p, "y", T_SUM);
        finish(p);
    }
    prog_scans(SCANFUSE_UINT8, S2(3, 9000), 1, "row_items=2", G_FULL); /* V = ITEMS = 2 */
    /* look-back rows are staged in shared memory (cp.async) by default; the register
     * tiles of 512 threads without staging (row_stage=0) */
    prog_scans(SCANFUSE_FLOAT32, S1(200003), 0, "row_stage=0", G_DEFAULT);
    prog_scans(SCANFUSE_INT64, S2(3, 70001), 1, "row_stage=0", G_FULL);
    /* Look-back tickets.  The default: one ticket word a tile, no tiles-done count
     * (lb_ticket=1; the last take resets the word, exercised by every launch after the
     * first).  The counter and tiles-done count of before (lb_ticket=0), relaxed
     * (lb_done=1) or with release and fence (lb_done=0).  Long rows, rows with prefix
     * chains, columns, spinning pollers (lb_wait_ns=0), the tile records of lb_trace=1
     * beside the states. */
    prog_scans(SCANFUSE_FLOAT32, S1(200003), 0, "lb_ticket=0,lb_done=0", G_DEFAULT);
    prog_scans(SCANFUSE_INT64, S2(3, 70001), 1, "lb_ticket=0,lb_wait_ns=0,row_g=2,row_g2=3", G_FULL);
    prog_scans(SCANFUSE_INT32, S2(3000, 33), 0, "lb_ticket=0,lb_done=0,lb_wait_ns=0", G_FULL);
    prog_scans(SCANFUSE_INT32, S2(3000, 33), 0, "lb_ticket=0", G_FULL);
    prog_scans(SCANFUSE_FLOAT32, S1(200003), 0, "lb_ticket=1", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT32, S1(200003), 0, "lb_trace=1", G_DEFAULT);
    prog_scans(SCANFUSE_INT64, S2(3, 70001), 1, "lb_wait_ns=0,row_g=2,row_g2=3", G_FULL);
    prog_scans(SCANFUSE_INT64, S2(5, 40001), 1, "lb_ticket=1,row_g=3,row_g2=2", G_FULL);
    prog_scans(SCANFUSE_INT32, S2(3000, 33), 0, "lb_ticket=1,lb_wait_ns=0", G_FULL);
    /* Static first-wave tiles (lb_w1): by default a look-back row launch that fits the
     * GPU at once is all static, one of up to 8 waves static then tickets (the raked
     * [64, 131072] rows below: 660 static tiles of 1024), more waves all tickets; here
     * also a few static tiles before the tickets (lb_w1=N) on 1-D, rows, raked rows and
     * a non-commutative scan, and none (lb_w1=0). */
    prog_raw("input x: float32[64, 131072]\ny = cumsum(x, dim=1)\nz = cumsum(x, dim=1, exclusive=true, reverse=true)\n"
             "output y, z\n", T_SUM);
    prog_scans(SCANFUSE_FLOAT32, S1(200003), 0, "lb_w1=5", G_DEFAULT);
    prog_scans(SCANFUSE_INT64, S2(3, 70001), 1, "lb_w1=7,row_g=2,row_g2=3", G_FULL);
    prog_scans(SCANFUSE_FLOAT32, S2(5, 65536), 1, "lb_w1=3", G_DEFAULT);
    prog_scans(SCANFUSE_BFLOAT16, S2(3, 70000), 1, "lb_w1=2,row_rake=2", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT32, S1(200003), 0, "lb_w1=0", G_DEFAULT);
    /* The first wave paced by tile (lb_stagger=ns a tile; by default 12 in launches of at
     * most 32 waves): 1-D and raked rows, forced, and off.  Raked look-back rows of
     * float16 / bfloat16 with rare infinities and NaNs and some subnormals (G_RARE;
     * cumsum only: products of such inputs overflow and underflow, and a tree of them
     * may meet inf * 0 where the left-to-right product does not, docs/OPS.md), strips of
     * 2 and 4 steps (wider outputs), dense special values. */
    prog_scans(SCANFUSE_FLOAT32, S1(200003), 0, "lb_stagger=10", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT16, S2(4, 65536), 1, "lb_stagger=12", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT32, S1(200003), 0, "lb_stagger=0", G_DEFAULT);
    {
        static const char *const rare[] = {
            "input x: float16[4, 65536]\ny = cumsum(x, dim=1)\nz = cumsum(x, dim=1, exclusive=true, reverse=true)\noutput y, z\n",
            "input x: bfloat16[3, 49152]\ny = cumsum(x, dim=1, reverse=true)\nz = cumsum(x, dim=1, exclusive=true)\noutput y, z\n",
            "input x: float16[3, 40000]\ny = cumsum(x, dim=1, dtype=float64)\n"
            "z = cumsum(x, dim=1, exclusive=true, reverse=true, dtype=float32)\noutput y, z\n"};
        for (int i = 0; i < 3; i++) {
            prog *p = prog_raw(rare[i], T_SUM);
            p->gen[0] = G_RARE;
            if (i == 2) p->tune = "row_rake=1";
        }
    }
    prog_scans(SCANFUSE_FLOAT16, S2(2, 49152), 1, NULL, G_SPECIAL);
    prog_scans(SCANFUSE_BFLOAT16, S2(3, 49152), 1, NULL, G_DEFAULT);
    /* column tiles staged in shared memory (the default): 1-, 2-, 4- and 8-byte columns
     * (32 columns a tile), 32 steps a thread (col_l=32), a 3-d tensor
     * whose inner column dim holds whole column blocks (64) or not (40: some tiles
     * staged, some read from global memory); the register tiles (col_stage=0) */
    prog_scans(SCANFUSE_BFLOAT16, S2(1000, 192), 0, NULL, G_DEFAULT);
    prog_scans(SCANFUSE_UINT8, S2(700, 256), 0, NULL, G_FULL);
    prog_scans(SCANFUSE_FLOAT32, S2(3000, 96), 0, "col_l=32", G_DEFAULT);
    prog_scans(SCANFUSE_BFLOAT16, S2(1500, 96), 0, "col_l=64", G_DEFAULT); /* an experiment */
    prog_scans(SCANFUSE_INT64, S3(4, 300, 64), 1, NULL, G_FULL);
    prog_scans(SCANFUSE_FLOAT32, S3(4, 300, 40), 1, "col_l=4", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT32, S2(2048, 128), 0, "col_stage=0", G_DEFAULT);
    prog_scans(SCANFUSE_INT32, S2(3000, 33), 0, "col_stage=0", G_FULL);
    {
        /* one-tile rows of bfloat16 scaled by float32 weights that every row reads:
         * strips of 8 (16 bytes of the bfloat16 input, 32 of the weights) */
        prog *p = newprog();
        p->no_unfused = true;
        P(p, "input x: bfloat16[6, 8192]\ninput w: float32[8192]\n"
             "y = cast(cumsum(mul(cast(x, float32), w), dim=-1), bfloat16)\n"
             "z = cumsum(mul(cast(x, float32), w), dim=-1, reverse=true, exclusive=true)\n");
        out_mag(p, "y", T_SUM, "cumsum(abs(mul(cast(x, float64), cast(w, float64))), dim=-1)");
        out_mag(p, "z", T_SUM, "cumsum(abs(mul(cast(x, float64), cast(w, float64))), dim=-1, reverse=true, exclusive=true)");
        finish(p);
    }
    /* one-tile rows in blocks of 128 threads with twice the items (by default for tiles
     * of at most 8 KB; row_threads=128 for any): bfloat16 rows of one whole tile,
     * float16 rows ending mid-tile, float32 rows too, the fused bfloat16 chain with
     * weights read by every row (unstaged: row_stage1=0) */
    prog_scans(SCANFUSE_BFLOAT16, S2(5, 4094), 1, "row_threads=128", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT16, S2(6, 4000), 1, NULL, G_DEFAULT); /* 128 threads by default */
    prog_scans(SCANFUSE_FLOAT32, S2(9, 3001), 1, "row_threads=128", G_DEFAULT);
    prog_weighted(3, 8192, "row_stage1=0,row_threads=128", true, "");
    /* one-tile rows staged in shared memory: every one (row_stage1=1) — bfloat16 rows
     * of one whole tile, float32 rows ending mid-tile (the checked path) — and by
     * default those with weights read by every row (the rows staged, the weights from
     * global memory); the weighted rows unstaged (row_stage1=0), reverse */
    prog_scans(SCANFUSE_BFLOAT16, S2(5, 4096), 1, "row_stage1=1", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT32, S2(7, 3001), 1, "row_stage1=1", G_DEFAULT);
    prog_weighted(6, 4096, NULL, false, ", reverse=true");
    prog_weighted(5, 4096, "row_stage1=0", false, ", reverse=true");
    prog_weighted(4, 3001, NULL, true, ", exclusive=true"); /* rows ending mid-tile */
    /* staged look-back rows beside weights read from global memory in both passes */
    prog_weighted(3, 50001, NULL, false, ", exclusive=true");
    prog_weighted(2, 70000, NULL, true, ", reverse=true");
    {
        /* staged tiles of several inputs: int64 strips of 16 bytes and uint8 strips of
         * 2 bytes (too small to stage: read from global memory) side by side, an input
         * broadcast along the scan, reverse and exclusive (tiles of 8 items a thread) */
        prog_widths("2, 40001", "2, 1", 1);
        /* bfloat16 (8-byte strips) and float32 (16-byte strips) inputs staged together
         * (tiles of 16 items a thread, to fit 40 KB) */
        prog *p = newprog();
        p->no_unfused = true;
        P(p, "input a: bfloat16[3, 30001]\ninput b: float32[3, 30001]\n"
             "z = cumsum(mul(cast(a, float32), b), dim=1)\nzr = cumsum(mul(cast(a, float32), b), dim=1, reverse=true)\n");
        out_mag(p, "z", T_SUM, "cumsum(abs(mul(cast(a, float64), cast(b, float64))), dim=1)");
        out_mag(p, "zr", T_SUM, "cumsum(abs(mul(cast(a, float64), cast(b, float64))), dim=1, reverse=true)");
        finish(p);
        /* the same inputs along columns, staged: 8-byte int64 rows of 256 bytes beside
         * uint8 rows of 32, the broadcast input read from global memory */
        prog_widths("3001, 96", "1, 96", 0);
    }
    /* column tiles (sf_col_tile_scan): prefix chains of small groups over many chunks */
    prog_scans(SCANFUSE_BFLOAT16, S2(1000, 7), 0, "col_g=2,col_g2=3,col_l=2", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT64, S2(1000, 70), 0, "col_g=3,col_g2=2,col_l=1", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT32, S2(777, 300), 0, "col_g=4,col_g2=1,col_l=3", G_DEFAULT); /* G2 = 1 */
    prog_scans(SCANFUSE_INT64, S2(3000, 33), 0, NULL, G_FULL); /* 94 chunks: two levels */
    /* 17-64 chunks: groups of 16 in super-groups of 4 (the [2048, 128] dim 0 shape) */
    prog_scans(SCANFUSE_FLOAT32, S2(2048, 128), 0, NULL, G_DEFAULT);
    prog_scans(SCANFUSE_INT32, S2(2500, 45), 0, NULL, G_FULL);
    prog_scans(SCANFUSE_FLOAT16, S2(2, 70000), 1, NULL, G_DEFAULT); /* 18 tiles per row */
    /* look-back rows in the register tiles of before: 256 threads (row_threads=256,
     * row_stage=0), 32 items a thread (row_items=32) */
    prog_scans(SCANFUSE_FLOAT16, S1(300000), 0, "row_threads=256,row_stage=0", G_DEFAULT);
    prog_scans(SCANFUSE_BFLOAT16, S2(3, 70000), 1, "row_threads=256,row_items=32,row_stage=0", G_DEFAULT);
    prog_scans(SCANFUSE_FLOAT16, S2(2, 70000), 1, "row_items=32", G_DEFAULT);
    /* reductions: every kernel shape */
    for (int i = 0; i < ndt; i++) {
        scanfuse_dtype dt = all[i];
        int g = sf_dtype_is_float(dt) ? G_SPECIAL : G_FULL;
        prog_reduce(dt, S2(3, 33), "", false, true, G_DEFAULT);
        prog_reduce(dt, S2(3, 33), ", dim=-1", true, true, G_DEFAULT);
        prog_reduce(dt, S2(3, 33), ", dim=0", false, true, g);
        prog_reduce(dt, S2(2, 5000), ", dim=1", false, true, G_DEFAULT);   /* block, split */
        prog_reduce(dt, S2(5000, 3), ", dim=0", false, true, G_DEFAULT);   /* thread, split */
        prog_reduce(dt, S3(4, 5, 6), ", dim=[0, 2]", false, true, G_DEFAULT);
        prog_reduce(dt, S0(), "", false, true, G_DEFAULT);
        prog_reduce(dt, S2(0, 4), ", dim=0", false, false, G_DEFAULT);
    }
    /* reductions with outputs beside them: values of the input's shape that the
     * reduction does not read are computed per input element too, not per result (until
     * session 32 they went to the epilogue and were written once a result: found by
     * tools/random_programs.py), narrow outputs among them; row, column, split and full
     * reductions, argmax with keepdim */
    prog_raw("input x: int32[16, 16, 1]\nv = cast(x, int64)\nm = min(v, dim=[1])\nc = cast(v, int8)\n"
             "output c, v, m\n", T_EXACT);
    prog_raw("input x: float32[33, 5]\nb = cast(x, bfloat16)\nm = min(b, dim=[1])\ns = sub(b, -1.5)\n"
             "output s, m, b\n", T_ULP1);
    prog_raw("input x: float32[300, 40]\nv = neg(x)\ny = mul(v, 2)\nm = max(v, dim=[0])\noutput y, m\n", T_EXACT);
    prog_raw("input x: float32[5000, 3]\nv = abs(x)\ny = cast(v, float16)\nm = max(v, dim=0, keepdim=true)\n"
             "output y, m\n", T_ULP1);
    prog_raw("input x: bfloat16[3, 70001]\nt = mul(cast(x, float32), 3)\nb = cast(t, bfloat16)\n"
             "a = argmax(t, dim=1, keepdim=true)\noutput b, a\n", T_ULP1);
    prog_raw("input x: int8[1000]\ny = abs(x)\nz = cast(y, uint8)\ns = sum(y)\noutput z, y, s\n", T_EXACT);
    prog_raw("input x: float32[4, 5, 6]\nv = relu(x)\ny = cast(v, bfloat16)\ns = sum(v, dim=[0, 2])\n"
             "t = mul(s, 2)\noutput y, t\n", T_ULP1);
    /* index and sort ops */
    const scanfuse_dtype idt[] = {SCANFUSE_FLOAT32, SCANFUSE_INT64, SCANFUSE_BFLOAT16, SCANFUSE_UINT8,
                                  SCANFUSE_BOOL, SCANFUSE_FLOAT64};
    for (size_t i = 0; i < sizeof idt / sizeof idt[0]; i++) {
        scanfuse_dtype dt = idt[i];
        char t[2048];
        prog *p;
        snprintf(t, sizeof t,
                 "input x0: %s[4, 6]\ninput x1: int64[4, 3]\n"
                 "g = gather(x0, 1, x1)\nt = take_along_dim(x0, x1, dim=1)\n"
                 "output g, t\n", dn(dt));
        p = prog_raw(t, T_EXACT);
        p->gen[1] = G_INDEX;
        p->irange[1] = 6;
        snprintf(t, sizeof t,
                 "input x0: %s[5, 6]\ninput x1: int32[7]\n"
                 "s = index_select(x0, 0, x1)\ns1 = index_select(x0, 1, x1)\noutput s, s1\n", dn(dt));
        p = prog_raw(t, T_EXACT);
        p->gen[1] = G_INDEX;
        p->irange[1] = 5;
        snprintf(t, sizeof t,
                 "input x0: %s[30]\ninput x1: int16[2, 5]\n"
                 "f = take_along_dim(x0, x1)\noutput f\n", dn(dt));
        p = prog_raw(t, T_EXACT);
        p->gen[1] = G_INDEX;
        p->irange[1] = 30;
        snprintf(t, sizeof t,
                 "input x0: %s[4, 6]\ninput x1: int64[3, 6]\ninput x2: %s[3, 7]\n"
                 "a = scatter(x0, 0, x1, x2)\nb = scatter(x0, 0, x1, x2, reduce=add)\n"
                 "c = scatter(x0, dim=0, index=x1, src=2)\noutput a, b, c\n", dn(dt), dn(dt));
        p = prog_raw(t, T_EXACT);
        p->tol[1] = sf_dtype_is_float(dt) ? T_ULP1 : T_EXACT;
        p->gen[1] = G_INDEX;
        p->irange[1] = 4;
        if (dt != SCANFUSE_BOOL) {
            snprintf(t, sizeof t,
                     "input x0: %s[5, 20]\n"
                     "v, i = topk(x0, 3, dim=1)\nw, j = topk(x0, 4, dim=0, largest=false)\n"
                     "a = argsort(x0, dim=1)\nd = argsort(x0, dim=0, descending=true)\n"
                     "output v, i, w, j, a, d\n", dn(dt));
            p = prog_raw(t, T_EXACT);
            p->gen[0] = G_TIES;
            /* the packed warp topk (sf_topk_packed; float64 and int64 keep sf_topk_warps):
             * 16 of 300 each way, special values and the integer extremes */
            snprintf(t, sizeof t,
                     "input x0: %s[6, 300]\n"
                     "v, i = topk(x0, 16, dim=1)\nw, j = topk(x0, 5, dim=1, largest=false)\n"
                     "output v, i, w, j\n", dn(dt));
            p = prog_raw(t, T_EXACT);
            p->gen[0] = G_SPECIAL;
            snprintf(t, sizeof t,
                     "input x0: %s[3, 5000]\n"
                     "v, i = topk(x0, 10, dim=1)\na = argsort(x0, dim=1, descending=true)\n"
                     "output v, i, a\n", dn(dt));
            p = prog_raw(t, T_EXACT);
            p->gen[0] = G_TIES;
        }
    }
    /* the packed warp topk's other key dtypes (32-bit words: float16, int8, int16; 64-bit:
     * int32), as above (added in session 11 after its last GPU run) */
    const scanfuse_dtype kdt[] = {SCANFUSE_FLOAT16, SCANFUSE_INT8, SCANFUSE_INT16, SCANFUSE_INT32};
    for (size_t i = 0; i < sizeof kdt / sizeof kdt[0]; i++) {
        char t[512];
        snprintf(t, sizeof t,
                 "input x0: %s[6, 300]\n"
                 "v, i = topk(x0, 16, dim=1)\nw, j = topk(x0, 5, dim=1, largest=false)\n"
                 "output v, i, w, j\n", dn(kdt[i]));
        prog_raw(t, T_EXACT)->gen[0] = G_SPECIAL;
    }
    {
        prog_index("input x0: int32[6, 7]\no = one_hot(x0, 9)\nk = argsort(x0, dim=1, range=9)\noutput o, k\n", 9);
        /* counting sorts (sf_count_sort): many chunks of 256, both orders, keys from topk */
        prog_index("input x0: int64[3, 5000]\ninput x1: float32[700, 40]\n"
                   "a = argsort(x0, dim=1, range=100)\nd = argsort(x0, dim=1, range=100, descending=true)\n"
                   "v, i = topk(x1, 2, dim=1)\nr = reshape(i, [1400])\ns = argsort(r)\n"
                   "output a, d, s\n", 100);
        /* (x0's rows above: 5 chunks of 1024 over blocks, sf_count_split_*) and buckets of
         * 1024 over 9 chunks, the last one partial */
        prog_index("input x0: int32[2, 9000]\na = argsort(x0, dim=1, range=700)\n"
                   "d = argsort(x0, dim=1, range=700, descending=true)\noutput a, d\n", 700);
        /* (both above: two kernels, each placing block scanning its row's counts itself,
         * 4 rounds of 256 buckets for 700; the three-kernel form under count_split2=0) */
        prog_index("input x0: int32[2, 9000]\na = argsort(x0, dim=1, range=700)\n"
                   "d = argsort(x0, dim=1, range=700, descending=true)\noutput a, d\n", 700)->tune = "count_split2=0";
        prog_index("input x0: int64[3, 5000]\na = argsort(x0, dim=1, range=100)\noutput a\n", 100)->tune =
            "count_split2=0";
        prog_index("input x0: int64[1000]\nb = bincount(x0, 17)\noutput b\n", 17);
        prog_index("input x0: uint8[300000]\nb = bincount(x0, 256)\noutput b\n", 256);
        /* counts in shared memory first (bin_smem=1, an experiment): 1-d and 2-d ids,
         * a partial last round, 4096 counters */
        prog_index("input x0: int64[32768]\nb = bincount(x0, 256)\noutput b\n", 256)->tune = "bin_smem=1";
        prog_index("input x0: int32[3, 7001]\nr = reshape(x0, [21003])\nb = bincount(r, 4096)\noutput b\n", 4096)->tune =
            "bin_smem=1";
    }
    /* The MoE routing too large for one block (cuda_small.c, sf_cg_small_parts): the
     * topk pre-kernel, one SMALL kernel for the scores, counts and offsets, the split
     * counting sort's kernels; at 8192 pairs the inverse and the tokens are a second
     * SMALL kernel, at 32768 (DeepSeek's) their own kernels */
    for (int i = 0; i < 2; i++) {
        int T = i ? 4096 : 1024, E = i ? 256 : 64;
        char t[900];
        snprintf(t, sizeof t,
                 "input logits: bfloat16[%d, %d]\ntop, expert = topk(logits, 8, dim=1)\n"
                 "score = sigmoid(cast(top, float32))\npairs = reshape(expert, [%d])\n"
                 "counts = bincount(pairs, minlength=%d)\noffsets = cumsum(counts, dim=0, dtype=int32)\n"
                 "starts = pad(offsets, [1, 0])\n"
                 "aligned = cumsum(mul(floor_divide(add(counts, 127), 128), 128), dim=0, exclusive=true)\n"
                 "perm = argsort(pairs, stable=true)\ninverse = argsort(perm, stable=true)\n"
                 "token = floor_divide(perm, 8)\n"
                 "output top, expert, score, counts, offsets, starts, aligned, perm, inverse, token\n",
                 T, E, T * 8, E);
        prog_raw(t, T_EXACT);
        if (i) prog_raw(t, T_EXACT)->tune = "small_part=0"; /* node by node, as before */
    }
    /* creation, shape ops, matmul */
    prog_raw("input x0: float32[3, 4]\n"
             "f = full([3, 4], 2.5)\na = arange(12)\nb = arange(1, 4, 0.5, dtype=float16)\n"
             "c = iota(7, dtype=int8)\ne = expand(reshape(x0, [3, 4, 1]), [2, 3, 4, 5])\n"
             "p = permute(x0, [1, 0])\nsl = slice(x0, 1, 1, 4, 2)\n"
             "pd = pad(x0, [1, 2, -1, 1], 7.5)\nu = triu(x0, 1)\nl = tril(x0, -1)\n"
             "r = reshape(permute(x0, [1, 0]), [12])\ns = add(x0, arange(4))\n"
             "output f, a, b, c, e, p, sl, pd, u, l, r, s\n",
             T_EXACT);
    prog_raw("input x0: int16[2, 3, 4]\n"
             "pd = pad(x0, [0, 1], -3)\nu = triu(x0)\nr = reshape(x0, [4, 6])\n"
             "output pd, u, r\n", T_EXACT);
    const scanfuse_dtype mdt[] = {SCANFUSE_FLOAT32, SCANFUSE_FLOAT64, SCANFUSE_BFLOAT16, SCANFUSE_INT32,
                                  SCANFUSE_INT8};
    for (size_t i = 0; i < sizeof mdt / sizeof mdt[0]; i++) {
        char t[1024];
        const char *d = dn(mdt[i]);
        snprintf(t, sizeof t,
                 "input x0: %s[2, 3, 5]\ninput x1: %s[5, 4]\ninput x2: %s[5]\ninput x3: %s[1, 5, 2]\n"
                 "a = matmul(x0, x1)\nb = matmul(x2, x1)\nc = matmul(x0, x2)\nd = matmul(x2, x2)\n"
                 "e = matmul(x0, x3)\noutput a, b, c, d, e\n", d, d, d, d);
        prog *p = newprog();
        P(p, "%s", t);
        p->text[strstr(p->text, "output") - p->text] = '\0';
        p->tlen = strlen(p->text);
        char *r = strstr(p->reftext, "output");
        *r = '\0';
        p->rlen = strlen(p->reftext);
        const char *nm[] = {"a", "b", "c", "d", "e"};
        const char *mm[] = {"matmul(abs(cast(x0, float64)), abs(cast(x1, float64)))",
                            "matmul(abs(cast(x2, float64)), abs(cast(x1, float64)))",
                            "matmul(abs(cast(x0, float64)), abs(cast(x2, float64)))",
                            "matmul(abs(cast(x2, float64)), abs(cast(x2, float64)))",
                            "matmul(abs(cast(x0, float64)), abs(cast(x3, float64)))"};
        for (int q = 0; q < 5; q++) {
            if (sf_dtype_is_float(mdt[i])) out_mag(p, nm[q], T_MATMUL, mm[q]);
            else out(p, nm[q], T_EXACT);
        }
        finish(p);
    }
    /* fused segments: prologues and epilogues */
    prog_raw("input x0: bfloat16[64, 300]\ninput x1: bfloat16[64, 300]\n"
             "y = cast(cumsum(mul(cast(x0, float32), x1), dim=1), bfloat16)\noutput y\n", T_SUM);
    prog_raw("input x0: float32[300, 64]\ninput x1: float32[64]\n"
             "c = cumsum(add(x0, x1), dim=0, reverse=true)\nd = sub(c, x0)\ne = exp(neg(abs(d)))\n"
             "output c, d, e\n", T_SUM);
    prog_raw("input x0: float16[8, 500]\n"
             "m = max(x0, dim=1, keepdim=true)\ne = exp(sub(x0, m))\ns = sum(e, dim=1, keepdim=true)\n"
             "p = div(e, s)\nc = cumsum(p, dim=1)\nk = lt(sub(c, p), 0.9)\n"
             "output m, e, s, p, c, k\n", T_ULP1);
    prog_raw("input x0: int32[40, 30]\n"
             "c = cumsum(remainder(x0, 7), dim=1, exclusive=true)\nm = mean(cast(c, float32), dim=0)\n"
             "n = mul(sum(eq(c, 3), dim=1), 2)\noutput c, m, n\n", T_SUM);
    prog_raw("input x0: bool[4, 128]\n"
             "c = cumsum(x0, dim=-1)\npos = sub(c, 1)\nposition_ids = where(x0, pos, 1)\n"
             "output position_ids\n", T_EXACT);
    prog_raw("input x0: float32[16]\n"
             "a = cumsum(arange(16, dtype=float32), dim=0)\nb, bi = cummax(mul(x0, arange(16)), dim=0)\n"
             "output a, b, bi\n", T_SUM);
    /* a float sum read by its epilogue: the cast rounds the sum's float32 value, so
     * 1 + 2^-8 + 2^-30 gives RN_bf16(1 + 2^-8) = 1, not the exact sum rounded to bfloat16
     * once (1.0078125) */
    prog_raw("input x0: float32[64, 2]\nar = arange(0, 2, dtype=float32)\n"
             "w = where(eq(ar, 0), 1.00390625, 0.0000000009313225746154785)\ny = add(mul(x0, 0), w)\n"
             "o = cast(sum(y, dim=[1]), bfloat16)\nm = cast(mean(y, dim=[1]), float16)\noutput o, m\n",
             T_EXACT);
    /* the examples */
    const char *ex[] = {"cumsum", "moe_offsets", "moe_slots", "position_ids", "top_p", "moe_routing"};
    for (int i = 0; i < 6; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s.sf", SF_SOURCE_DIR, ex[i]);
        FILE *fp = fopen(path, "r");
        if (!fp) continue;
        static char buf[8192];
        size_t n = fread(buf, 1, sizeof buf - 1, fp);
        fclose(fp);
        buf[n] = '\0';
        /* rename inputs to x0.. is not needed: inputs keep their names */
        prog *p = prog_raw(buf, i == 0 || i == 4 ? T_SUM : T_EXACT);
        if (i == 4) {
            for (int q = 0; q < p->nout; q++) p->tol[q] = q == 1 ? T_SUM : T_ULP1;
        }
        if (i == 2 || i == 5) p->tol[1] = T_ULP1;
        if (i == 5) p->tol[p->nout - 1] = T_ULP1;
    }
    /* gathers computed inline in fused kernels (cuda_codegen.c value_gather) */
    {
        prog *q = prog_raw(gather_progs[0], T_EXACT); /* the MoE combine, k = 1 */
        q->tol[1] = T_ULP1;
        q = prog_raw(gather_progs[1], T_ULP1); /* k = 3 */
        /* the row combine's float32 epilogue (cuda_combine.c, sf_row_combine_f32): k = 1
         * into bfloat16 (the Llama form, lazy rows) and k = 2 into float16 exact against
         * the reference (the float32 sum rounded, then the cast); k = 8 over bfloat16 rows
         * with NaN, infinities and magnitudes far apart (its double-double fallback) */
        q = prog_raw("input logits: float32[64, 8]\ninput hidden: bfloat16[64, 1000]\n"
                     "top, expert = topk(logits, 1, dim=1)\nscore = sigmoid(top)\n"
                     "pairs = reshape(expert, [64])\nperm = argsort(pairs, stable=true)\n"
                     "inverse = argsort(perm, stable=true)\ntoken = floor_divide(perm, 1)\n"
                     "permuted = index_select(hidden, 0, token)\n"
                     "e = take_along_dim(reshape(permuted, [64, 1, 1000]), reshape(inverse, [64, 1, 1]), dim=0)\n"
                     "out = cast(sum(mul(e, reshape(score, [64, 1, 1])), dim=1), bfloat16)\n"
                     "output score, permuted, out\n", T_EXACT);
        q->tol[0] = T_ULP1;
        q = prog_raw("input logits: float32[48, 6]\ninput hidden: float16[48, 64]\n"
                     "top, expert = topk(logits, 2, dim=1)\nscore = sigmoid(top)\n"
                     "pairs = reshape(expert, [96])\nperm = argsort(pairs, stable=true)\n"
                     "inverse = argsort(perm, stable=true)\ntoken = floor_divide(perm, 2)\n"
                     "permuted = index_select(hidden, 0, token)\n"
                     "e = take_along_dim(reshape(permuted, [96, 1, 64]), reshape(inverse, [48, 2, 1]), dim=0)\n"
                     "out = cast(sum(mul(e, reshape(score, [48, 2, 1])), dim=1), float16)\n"
                     "output score, out\n", T_EXACT);
        q->tol[0] = T_ULP1;
        q = prog_raw("input logits: float32[32, 16]\ninput hidden: bfloat16[32, 512]\n"
                     "top, expert = topk(logits, 8, dim=1)\nscore = sigmoid(top)\n"
                     "pairs = reshape(expert, [256])\nperm = argsort(pairs, stable=true)\n"
                     "inverse = argsort(perm, stable=true)\ntoken = floor_divide(perm, 8)\n"
                     "permuted = index_select(hidden, 0, token)\n"
                     "e = take_along_dim(reshape(permuted, [256, 1, 512]), reshape(inverse, [32, 8, 1]), dim=0)\n"
                     "out = cast(sum(mul(e, reshape(score, [32, 8, 1])), dim=1), bfloat16)\n"
                     "output permuted, out\n", T_EXACT);
        q->tol[1] = T_ULP1;
        q->gen[1] = G_SPECIAL;
        /* unproven indices, in range: every index input in its valid range */
        for (int i = 2; i < 6; i++) {
            q = prog_raw(gather_progs[i], T_EXACT);
            q->tol[0] = T_ULP1; /* the sum, the cumsum */
            for (int j = 0; j < MAXIN; j++)
                if (gather_irange[i - 2][j] > 0) {
                    q->gen[j] = G_INDEX;
                    q->irange[j] = gather_irange[i - 2][j];
                }
        }
        /* bad indices: the reference's error and message, outputs untouched
         * (program, input, range that includes bad values) */
        /* ranges about twice the valid one, so that a bad value is all but certain
         * (a narrow margin made a run without any: the test's own flake) */
        const int64_t bad[5][3] = {{2, 1, 400}, {3, 1, 80}, {3, 2, 260}, {4, 1, 2000}, {5, 2, 600}};
        for (int i = 0; i < 5; i++) {
            int w = (int)bad[i][0];
            q = prog_raw(gather_progs[w], T_EXACT);
            for (int j = 0; j < MAXIN; j++)
                if (gather_irange[w - 2][j] > 0) {
                    q->gen[j] = G_INDEX;
                    q->irange[j] = gather_irange[w - 2][j];
                }
            q->irange[bad[i][1]] = bad[i][2];
            q->expect = SCANFUSE_ERROR_VALUE;
        }
    }
    /* the MoE combine as the row kernel (cuda_combine.c): k = 1 over bfloat16 rows of 136
     * (17 vectors: one a lane, most lanes idle) with lazy rows, k = 2 over float32 rows
     * with the composed gather (permuted not stored), then lazy rows with two and four
     * vectors a lane; and reductions over a short dim with outputs enough for V outputs
     * a thread (sf_red_thread_v: nout >= 1024 per SM of a 132-SM GPU, the kept inner
     * extent a multiple of V): a float16 sum over a middle dim, int32 sum and max, float32
     * max and mean over dim 0 */
    {
        prog *q = prog_raw("input logits: float32[2048, 8]\ninput hidden: bfloat16[2048, 136]\n"
                           "top, expert = topk(logits, 1, dim=1)\nscore = sigmoid(cast(top, float32))\n"
                           "pairs = reshape(expert, [2048])\nperm = argsort(pairs, stable=true)\n"
                           "inverse = argsort(perm, stable=true)\ntoken = floor_divide(perm, 1)\n"
                           "permuted = index_select(hidden, 0, token)\n"
                           "expert_out = take_along_dim(reshape(permuted, [2048, 1, 136]), "
                           "reshape(inverse, [2048, 1, 1]), dim=0)\n"
                           "out = cast(sum(mul(expert_out, reshape(score, [2048, 1, 1])), dim=1), bfloat16)\n"
                           "output permuted, out\n",
                           T_EXACT);
        q->tol[1] = T_ULP1;
        prog_raw("input logits: float32[600, 6]\ninput hidden: float32[600, 264]\n"
                 "top, expert = topk(logits, 2, dim=1)\nscore = sigmoid(top)\n"
                 "pairs = reshape(expert, [1200])\nperm = argsort(pairs, stable=true)\n"
                 "inverse = argsort(perm, stable=true)\ntoken = floor_divide(perm, 2)\n"
                 "permuted = index_select(hidden, 0, token)\n"
                 "expert_out = take_along_dim(reshape(permuted, [1200, 1, 264]), reshape(inverse, [600, 2, 1]), dim=0)\n"
                 "out = sum(mul(expert_out, reshape(score, [600, 2, 1])), dim=1)\n"
                 "output score, out\n",
                 T_ULP1);
        /* lazy rows: k = 2 with two vectors a lane, k = 1 with four (the Llama shape);
         * the sliced-input and transposed-output layouts take the element path */
        q = prog_raw("input logits: float32[512, 6]\ninput hidden: bfloat16[512, 256]\n"
                     "top, expert = topk(logits, 2, dim=1)\nscore = sigmoid(top)\n"
                     "pairs = reshape(expert, [1024])\nperm = argsort(pairs, stable=true)\n"
                     "inverse = argsort(perm, stable=true)\ntoken = floor_divide(perm, 2)\n"
                     "permuted = index_select(hidden, 0, token)\n"
                     "expert_out = take_along_dim(reshape(permuted, [1024, 1, 256]), reshape(inverse, [512, 2, 1]), dim=0)\n"
                     "out = cast(sum(mul(expert_out, reshape(score, [512, 2, 1])), dim=1), bfloat16)\n"
                     "output permuted, out\n",
                     T_EXACT);
        q->tol[1] = T_ULP1;
        q = prog_raw("input logits: bfloat16[256, 16]\ninput hidden: float16[256, 512]\n"
                     "top, expert = topk(logits, 1, dim=1)\nscore = sigmoid(cast(top, float32))\n"
                     "pairs = reshape(expert, [256])\nperm = argsort(pairs, stable=true)\n"
                     "inverse = argsort(perm, stable=true)\ntoken = floor_divide(perm, 1)\n"
                     "permuted = index_select(hidden, 0, token)\n"
                     "expert_out = take_along_dim(reshape(permuted, [256, 1, 512]), reshape(inverse, [256, 1, 1]), dim=0)\n"
                     "out = sum(mul(expert_out, reshape(score, [256, 1, 1])), dim=1)\n"
                     "output permuted, out\n",
                     T_EXACT);
        q->tol[1] = T_ULP1;
        /* warps that take several items (comb_grid=B, an experiment: at most B blocks),
         * each loading the next item's index chain ahead: k = 8 with lazy rows (the
         * DeepSeek form), k = 2 with two vectors a lane */
        prog_moe("float32", 96, 16, 8, "bfloat16", 96, 1024, 8, ", stable=true", "bfloat16", "comb_grid=3");
        prog_moe("float32", 500, 6, 2, "bfloat16", 500, 256, 2, ", stable=true", "bfloat16", "comb_grid=5");
        /* the source rows known without loads (direct_rows: J[I[i]] = i / d): d = 4
         * for k = 2 (two tokens' slots a row of X); the same through the loaded index
         * chain (comb_direct=0); an inverse sorted descending, which is no inverse (the
         * chain path, by default) */
        prog_moe("float32", 64, 6, 2, "bfloat16", 32, 256, 4, "", "bfloat16", NULL);
        prog_moe("float32", 64, 6, 2, "bfloat16", 32, 256, 4, "", "bfloat16", "comb_direct=0");
        prog_moe("float32", 64, 6, 2, "bfloat16", 32, 256, 4, ", descending=true", "bfloat16", NULL);
        /* the input rows loaded before the PDL wait (PRE, the default with d = k, as in
         * every program here with d = k), and not (comb_pre=0) */
        prog_moe("float32", 96, 16, 8, "bfloat16", 96, 1024, 8, ", stable=true", "bfloat16", "comb_pre=0");
        /* 8-byte vectors a lane (comb_vec=8, an experiment): k = 8 with lazy rows, k = 2
         * over float32 rows (two elements a vector), k = 1 into float16 */
        prog_moe("float32", 64, 16, 8, "bfloat16", 64, 520, 8, ", stable=true", "bfloat16", "comb_vec=8")->gen[1] =
            G_SPECIAL;
        prog_moe("float32", 300, 6, 2, "float32", 300, 66, 2, ", stable=true", NULL, "comb_vec=8");
        prog_moe("bfloat16", 256, 16, 1, "float16", 256, 516, 1, ", stable=true", "float16", "comb_vec=8");
        prog_raw("input x: float16[3, 5, 65536]\ns = sum(x, dim=1)\noutput s\n", T_ULP1);
        prog_raw("input x: int32[4, 3, 40000]\ns = sum(x, dim=1)\nm = max(x, dim=1)\noutput s, m\n", T_EXACT);
        prog_raw("input x: float32[7, 150000]\nm = max(x, dim=0)\nn = mean(x, dim=0)\noutput m, n\n", T_ULP1);
    }
    /* small segments as one block (cuda_small.c): the routing at small and odd sizes
     * (k = 1, 2, 3; E not a power of two; ties, NaN and infinities in the logits; the
     * inverse as a scatter; the counting sort ascending and descending) */
    const char *const route[] = {
        "input logits: bfloat16[37, 6]\n"
        "top, expert = topk(logits, 1, dim=1)\nscore = sigmoid(cast(top, float32))\n"
        "pairs = reshape(expert, [37])\ncounts = bincount(pairs, minlength=6)\n"
        "offsets = cumsum(counts, dim=0, dtype=int32)\nstarts = pad(offsets, [1, 0])\n"
        "aligned = cumsum(mul(floor_divide(add(counts, 3), 4), 4), dim=0, exclusive=true)\n"
        "perm = argsort(pairs, stable=true)\ninverse = argsort(perm, stable=true)\n"
        "token = floor_divide(perm, 1)\n"
        "output expert, score, counts, offsets, starts, aligned, perm, inverse, token\n",
        "input logits: float32[50, 5]\n"
        "top, expert = topk(logits, 2, dim=1, largest=false)\nscore = sigmoid(top)\n"
        "pairs = reshape(expert, [100])\ncounts = bincount(pairs, minlength=5)\n"
        "offsets = cumsum(counts, dim=0)\nperm = argsort(pairs, descending=true)\n"
        "inverse = argsort(perm, descending=true)\ntoken = floor_divide(perm, 2)\n"
        "output expert, score, counts, offsets, perm, inverse, token\n",
        "input logits: bfloat16[300, 100]\n"
        "top, expert = topk(logits, 3, dim=1)\nscore = sigmoid(cast(top, float32))\n"
        "pairs = reshape(expert, [900])\ncounts = bincount(pairs, minlength=100)\n"
        "offsets = cumsum(counts, dim=0, dtype=int32)\n"
        "perm = argsort(pairs, stable=true)\ninverse = argsort(perm, stable=true)\n"
        "token = floor_divide(perm, 3)\n"
        "output expert, score, counts, offsets, perm, inverse, token\n"};
    for (int i = 0; i < 3; i++) {
        prog *rp = prog_raw(route[i], T_EXACT);
        rp->tol[1] = T_ULP1; /* sigmoid */
        rp->gen[0] = i == 2 ? G_DEFAULT : G_TIES;
    }
    /* ... with the inverse permutation as a phase of its own (small_inv=0; by default the
     * counting sort writes it), both orders */
    for (int i = 1; i < 3; i++) {
        prog *rp = prog_raw(route[i], T_EXACT);
        rp->tol[1] = T_ULP1;
        rp->gen[0] = i == 2 ? G_DEFAULT : G_TIES;
        rp->tune = "small_inv=0";
    }
    /* the one-pass counting sort of the small block (sf_count_sort_1p): several rows of
     * 3 keys a thread into 256 buckets, and 4 keys a thread descending */
    {
        prog_index("input x: int64[4, 3000]\nk = argsort(x, dim=1, range=200, stable=true)\n"
                   "y = argsort(k, dim=1, stable=true)\nc = bincount(reshape(x, [12000]), minlength=200)\n"
                   "output k, y, c\n", 200);
        prog_index("input x: int32[2, 4096]\nk = argsort(x, dim=1, range=256, descending=true, stable=true)\n"
                   "z = add(k, 1)\noutput k, z\n", 256);
    }
    /* a small segment with a float cumsum (rows of topk values) */
    prog_raw("input logits: float32[64, 8]\n"
             "top, idx = topk(logits, 4, dim=1)\nc = cumsum(top, dim=1)\n"
             "cnt = bincount(reshape(idx, [256]), minlength=8)\noutput top, idx, c, cnt\n", T_EXACT)
        ->tol[2] = T_SUM;
    /* run-time errors */
    prog *p = prog_raw("input x0: int32[5, 8]\ninput x1: int32[5, 8]\n"
                       "r = remainder(x0, x1)\nc = cumsum(r, dim=1)\noutput c, r\n", T_EXACT);
    p->gen[1] = G_INDEX; /* contains zeros */
    p->irange[1] = 3;
    p->expect = SCANFUSE_ERROR_VALUE;
    /* ranges wide enough that a bad value is all but certain: 9 for a dim of 6 left all
     * 12 indices in range in 1 run in 130 (the failure of 2026-11-30's GPU run) */
    p = prog_raw("input x0: float32[4, 6]\ninput x1: int64[4, 3]\ng = gather(x0, 1, x1)\noutput g\n", T_EXACT);
    p->gen[1] = G_INDEX;
    p->irange[1] = 60;
    p->expect = SCANFUSE_ERROR_VALUE;
    p = prog_index("input x0: int32[6, 7]\no = one_hot(x0, 4)\noutput o\n", 6);
    p->expect = SCANFUSE_ERROR_VALUE;
    p = prog_index("input x0: int64[3, 9]\nk = argsort(x0, dim=1, range=5)\noutput k\n", 20);
    p->expect = SCANFUSE_ERROR_VALUE;
    /* ... inside a small segment's one kernel: an id out of range (the check phase stops
     * the block; the check kernel's report launch names the value), then a division by
     * zero after valid ids */
    const char *small_err = "input ids: int64[40]\ninput d: int64[8]\n"
                            "c = bincount(ids, minlength=8)\no = cumsum(c, dim=0)\nr = remainder(o, d)\n"
                            "output c, o, r\n";
    p = prog_index(small_err, 40);
    p->gen[1] = G_NONZERO;
    p->expect = SCANFUSE_ERROR_VALUE;
    p = prog_index(small_err, 8);
    p->gen[1] = G_INDEX;
    p->irange[1] = 1; /* every divisor 0 */
    p->expect = SCANFUSE_ERROR_VALUE;
    /* ... and with the small kernel's independent phases in different blocks (the id
     * check apart from the counting): both errors raised, the first in node order is the
     * one reported; then only the later one */
    const char *small_err2 = "input ids: int64[40]\ninput x: int64[8]\ninput d: int64[8]\n"
                             "c = bincount(ids, minlength=8)\no = cumsum(c, dim=0)\nr = remainder(x, d)\n"
                             "s = cumsum(r, dim=0)\nk = argsort(ids, range=8, stable=true)\noutput o, s, k\n";
    for (int i = 0; i < 2; i++) {
        p = prog_index(small_err2, i == 0 ? 40 : 8);
        p->gen[2] = G_INDEX;
        p->irange[2] = 1; /* every divisor 0 */
        p->expect = SCANFUSE_ERROR_VALUE;
    }
    /* ... in a SMALL kernel that is a part of its segment (the sort of 8192 ids runs its
     * own kernels after it, sf_cg_small_parts): an id out of range, a division by zero,
     * and the same program with good inputs */
    const char *part_err = "input ids: int64[8192]\ninput d: int64[8]\n"
                           "c = bincount(ids, minlength=8)\no = cumsum(c, dim=0)\nr = remainder(o, d)\n"
                           "k = argsort(ids, range=8, stable=true)\noutput c, o, r, k\n";
    for (int i = 0; i < 3; i++) {
        p = prog_index(part_err, i == 0 ? 40 : 8);
        p->gen[1] = i == 1 ? G_INDEX : G_NONZERO;
        p->irange[1] = i == 1 ? 1 : p->irange[1];
        p->expect = i < 2 ? SCANFUSE_ERROR_VALUE : SCANFUSE_OK;
    }
}

/* The coverage programs of part A: few programs (NVRTC compiles cost ~0.3 s plus the
 * kernels), each holding many kernels, so that every template is instantiated at least
 * once: every pointwise op and cast of every dtype; every scan op in every kernel shape
 * (warp, block rows with look-back and prefix chain, one-tile block rows, columns with
 * and without look-back, 0-d) with the flags, for each state type (double,
 * double-double (float64 sums under f64_dd=1), int64, value+index of both kinds); every
 * reduction kernel shape for each state type; index and sort ops (short and long rows);
 * creation, shape ops and matmul; the examples and fused prologues/epilogues. */
static prog *covs;
static int ncovs;

static void build_coverage(void) {
    int saved_n = nprogs;
    const scanfuse_dtype all[] = {SCANFUSE_BOOL, SCANFUSE_UINT8, SCANFUSE_INT8, SCANFUSE_INT16,
                                  SCANFUSE_INT32, SCANFUSE_INT64, SCANFUSE_FLOAT16,
                                  SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32, SCANFUSE_FLOAT64};
    /* pointwise and casts: one program per dtype */
    for (int i = 0; i < 10; i++) {
        scanfuse_dtype dt = all[i];
        prog *p = newprog();
        P(p, "input x0: %s[3, 33]\ninput x1: %s[33]\n", dn(dt), dn(dt));
        for (int o = 0; o < SF_NUM_OPS; o++) {
            const sf_op_info *in = &sf_op_table[o];
            if (in->kind != SF_KIND_POINTWISE || o == SF_OP_cast || o == SF_OP_where) continue;
            if (!accepts((sf_op)o, dt)) continue;
            char name[24];
            snprintf(name, sizeof name, "p_%s", in->name);
            if (in->nin == 1) P(p, "%s = %s(x0)\n", name, in->name);
            else P(p, "%s = %s(x0, x1)\n", name, in->name);
            out(p, name, T_EXACT);
        }
        for (int t = 0; t < 10; t++) {
            char name[24];
            snprintf(name, sizeof name, "c_%s", dn(all[t]));
            P(p, "%s = cast(x0, %s)\n", name, dn(all[t]));
            out(p, name, T_EXACT);
        }
        P(p, "w = where(gt(x0, x1), x0, 2)\nl = add(x1, 1)\n");
        out(p, "w", T_EXACT);
        out(p, "l", T_EXACT);
        finish(p);
    }
    /* scans: one program per state type, every kernel shape (the last: float64 sums in
     * double-double, f64_dd=1, on the same shapes as the float64 program) */
    const scanfuse_dtype sdt[] = {SCANFUSE_FLOAT32, SCANFUSE_FLOAT64, SCANFUSE_INT32, SCANFUSE_BOOL,
                                  SCANFUSE_BFLOAT16, SCANFUSE_FLOAT64};
    for (int i = 0; i < 6; i++) {
        scanfuse_dtype dt = sdt[i];
        prog *p = newprog();
        P(p, "input a: %s[40000]\ninput b: %s[3, 33]\ninput c: %s[33, 3]\ninput d: %s[]\ninput e: %s[4, 3000]\ninput f: %s[2, 5, 3]\n",
          dn(dt), dn(dt), dn(dt), dn(dt), dn(dt), dn(dt));
        const char *in[] = {"a", "b", "c", "d", "e", "f"};
        const int dims[] = {0, 1, 0, 0, 1, 1};
        static const char *const ops[] = {"cumsum", "cumprod", "cummax", "logcumsumexp"};
        int k = 0;
        for (int q = 0; q < 4; q++) {
            if (q == 3 && !sf_dtype_is_float(dt)) continue;
            for (int j = 0; j < 6; j++) {
                /* each op on three of the six kernel shapes (which three rotates with the
                 * program), every op and shape meeting across the five programs */
                if ((j + q + i) % 2 == 1 && !(q == 0 && j < 2)) continue;
                char name[24];
                snprintf(name, sizeof name, "s%d", k++);
                const char *fl = (j + q) % 4 == 0 ? "" : (j + q) % 4 == 1 ? ", exclusive=true"
                                 : (j + q) % 4 == 2 ? ", reverse=true" : ", exclusive=true, reverse=true";
                if (q == 2) P(p, "%s, %si = %s(%s, dim=%d%s)\n", name, name, ops[q], in[j], dims[j], fl);
                else P(p, "%s = %s(%s, dim=%d%s)\n", name, ops[q], in[j], dims[j], fl);
                out(p, name, T_EXACT);
            }
        }
        P(p, "mn, mi = cummin(b, dim=1)\n");
        out(p, "mn", T_EXACT);
        finish(p);
        if (i == 5) p->tune = "f64_dd=1";
    }
    {
        prog *p = newprog(); /* the prefix chains of both look-backs */
        P(p, "input a: float32[20000]\ninput b: int64[1000, 7]\n"
             "x = cumsum(a, dim=0)\ny, yi = cummax(b, dim=0, reverse=true)\n");
        out(p, "x", T_EXACT);
        out(p, "y", T_EXACT);
        finish(p);
        p->tune = "row_g=2,row_g2=2,row_items=1,col_g=2,col_g2=2,col_l=1,lb_wait_ns=0";
    }
    {
        prog *p = newprog(); /* two tiles in flight a block (row_pipe=1, blocks of 256), prefix chains */
        P(p, "input a: float32[20001]\ninput b: int64[3, 7001]\n"
             "x = cumsum(a, dim=0, exclusive=true)\ny = cumsum(b, dim=1, reverse=true)\n");
        out(p, "x", T_EXACT);
        out(p, "y", T_EXACT);
        finish(p);
        p->tune = "row_pipe=1,row_threads=256,row_g=2,row_g2=2,row_items=4";
    }
    {
        /* column tiles held in registers (col_stage=0; staged in shared memory by
         * default): float32 columns of several chunks, exclusive and reverse; a 3-d
         * tensor; bfloat16 beside a broadcast float32 */
        prog *p = newprog();
        P(p, "input a: float32[300, 64]\ninput b: int64[3, 200, 40]\ninput c: bfloat16[100, 96]\ninput w: float32[96]\n"
             "x = cumsum(a, dim=0, exclusive=true, reverse=true)\ny, yi = cummax(b, dim=1)\n"
             "z = cumsum(mul(cast(c, float32), w), dim=0)\n");
        out(p, "x", T_EXACT);
        out(p, "y", T_EXACT);
        out(p, "z", T_EXACT);
        finish(p);
        p->tune = "col_stage=0,col_l=4";
    }
    {
        /* the stream column kernel (no look-back; the default for grids of about a
         * column block an SM): sums of a bfloat16 input, exclusive and reversed,
         * logcumsumexp and integer cumprod */
        prog *p = newprog();
        P(p, "input a: bfloat16[300, 4160]\ninput b: int32[300, 4160]\n"
             "x = cumsum(a, dim=0, exclusive=true, reverse=true)\ny = logcumsumexp(cast(a, float32), dim=0)\n"
             "z = cumprod(b, dim=0)\n");
        out(p, "x", T_SUM);
        out(p, "y", T_LSE);
        out(p, "z", T_EXACT);
        finish(p);
    }
    {
        prog *p = newprog(); /* one-tile rows of 128 threads (row_threads=128) */
        P(p, "input a: bfloat16[5, 4096]\nx = cumsum(a, dim=1, reverse=true)\n");
        out(p, "x", T_EXACT);
        finish(p);
        p->tune = "row_threads=128";
    }
    {
        prog *p = newprog(); /* the tile records of look-back rows (lb_trace=1) beside a
                                column look-back */
        P(p, "input a: float32[300000]\ninput b: int32[3000, 40]\nx = cumsum(a, dim=0)\n"
             "y, i = cummax(b, dim=0)\n");
        out(p, "x", T_EXACT);
        out(p, "y", T_EXACT);
        finish(p);
        p->tune = "lb_trace=1";
    }
    {
        prog *p = newprog(); /* one-tile rows staged (row_stage1=1, an experiment) */
        P(p, "input a: bfloat16[5, 4096]\nx = cumsum(a, dim=1, exclusive=true)\n");
        out(p, "x", T_EXACT);
        finish(p);
        p->tune = "row_stage1=1";
    }
    {
        prog *p = newprog(); /* without programmatic dependent launch (pdl=0, the
                                fallback; on by default): a look-back scan, a reduction, a
                                small segment's kernels */
        P(p, "input a: int32[300000]\ninput b: float32[64, 8]\n"
             "x = cumsum(a, dim=0)\nm = max(x)\nv, i = topk(b, 2, dim=1)\n"
             "c = bincount(reshape(i, [128]), minlength=8)\no = cumsum(c, dim=0)\n");
        out(p, "x", T_EXACT);
        out(p, "m", T_EXACT);
        out(p, "i", T_EXACT);
        out(p, "o", T_EXACT);
        finish(p);
        p->tune = "pdl=0";
    }
    {
        prog *p = newprog(); /* a small kernel's counting sort writing the inverse
                                permutation too (small_inv=1, the default), descending */
        P(p, "input x: int64[2, 1000]\nk = argsort(x, dim=1, range=50, stable=true)\n"
             "y = argsort(k, dim=1, descending=true, stable=true)\n");
        out(p, "k", T_EXACT);
        out(p, "y", T_EXACT);
        finish(p);
        p->tune = "small_inv=1";
        p->gen[0] = G_INDEX;
        p->irange[0] = 50;
    }
    /* reductions: every kernel shape, per state type */
    const scanfuse_dtype rdt[] = {SCANFUSE_FLOAT32, SCANFUSE_INT16, SCANFUSE_BOOL};
    for (int i = 0; i < 3; i++) {
        scanfuse_dtype dt = rdt[i];
        bool fl = sf_dtype_is_float(dt);
        prog *p = newprog();
        P(p, "input a: %s[3, 33]\ninput b: %s[2, 5000]\ninput c: %s[5000, 3]\ninput d: %s[4, 5, 6]\ninput e: %s[]\n",
          dn(dt), dn(dt), dn(dt), dn(dt), dn(dt));
        P(p, "r0 = sum(a)\nr1 = prod(b, dim=1)\nr2 = max(c, dim=0)\nr3 = min(d, dim=[0, 2], keepdim=true)\n"
             "r4 = argmax(b, dim=1)\nr5 = argmin(c, dim=0)\nr6 = argmax(d)\nr7 = sum(e)\nr8 = sum(c, dim=0)\n"
             "r9 = max(a, dim=1)\n");
        for (int q = 0; q < 10; q++) {
            char name[8];
            snprintf(name, sizeof name, "r%d", q);
            out(p, name, T_EXACT);
        }
        if (fl) {
            P(p, "r10 = mean(b, dim=1)\nr11 = sum(cast(a, float64), dim=0)\n");
            out(p, "r10", T_EXACT);
            out(p, "r11", T_EXACT);
        }
        finish(p);
    }
    /* index and sort ops */
    prog_raw("input x: float32[4, 6]\ninput i: int64[4, 3]\ninput j: int32[7]\ninput k: int16[2, 5]\n"
             "input y: bfloat16[3, 5000]\ninput z: int32[6, 7]\ninput s: float32[4, 6]\n"
             "g = gather(x, 1, i)\nt = take_along_dim(x, i, dim=1)\nsel = index_select(x, 0, j)\n"
             "f = take_along_dim(x, k)\nsc = scatter(x, 0, i, s)\nsa = scatter(x, 0, i, s, reduce=add)\n"
             "sv = scatter(x, dim=1, index=i, src=2.5)\n"
             "v, vi = topk(x, 3, dim=1)\nw, wi = topk(y, 10, dim=1, largest=false)\n"
             "ar = argsort(y, dim=1, descending=true)\nak = argsort(z, dim=1, range=9)\n"
             "oh = one_hot(z, 9)\nbc = bincount(j, 5)\n"
             "output g, t, sel, f, sc, sa, sv, v, vi, w, wi, ar, ak, oh, bc\n", T_EXACT);
    /* creation, shape ops, matmul */
    prog_raw("input x0: float32[3, 4]\ninput m: bfloat16[2, 3, 5]\ninput n: bfloat16[5, 4]\ninput q: int32[5]\n"
             "f = full([3, 4], 2.5)\na = arange(12)\nb = arange(1, 4, 0.5, dtype=float16)\n"
             "c = iota(7, dtype=int8)\ne = expand(reshape(x0, [3, 4, 1]), [2, 3, 4, 5])\n"
             "p = permute(x0, [1, 0])\nsl = slice(x0, 1, 1, 4, 2)\n"
             "pd = pad(x0, [1, 2, -1, 1], 7.5)\nu = triu(x0, 1)\nl = tril(x0, -1)\n"
             "r = reshape(permute(x0, [1, 0]), [12])\ns = add(x0, arange(4))\n"
             "mm = matmul(m, n)\nmi = matmul(q, q)\n"
             "output f, a, b, c, e, p, sl, pd, u, l, r, s, mm, mi\n", T_EXACT);
    /* fused segments and the examples */
    prog_raw("input x0: bfloat16[64, 300]\ninput x1: bfloat16[64, 300]\ninput x2: float32[300, 64]\ninput x3: float32[64]\n"
             "y = cast(cumsum(mul(cast(x0, float32), x1), dim=1), bfloat16)\n"
             "c = cumsum(add(x2, x3), dim=0, reverse=true)\nd = sub(c, x2)\ne = exp(neg(abs(d)))\n"
             "h = cumsum(arange(16, dtype=float32), dim=0)\nmx = max(x2, dim=1, keepdim=true)\n"
             "sm = div(exp(sub(x2, mx)), sum(exp(sub(x2, mx)), dim=1, keepdim=true))\n"
             "output y, c, d, e, h, sm\n", T_EXACT);
    /* small segments as one block (cuda_small.c): topk of float and bfloat16 keys both
     * ways, the counting sort and the inverse scatter both ways, a check phase, a
     * division slot, warp scans of int64 and float32, pad */
    prog_raw("input logits: float32[50, 5]\ninput lb: bfloat16[37, 6]\ninput ids: int64[40]\ninput d: int64[8]\n"
             "top, expert = topk(logits, 2, dim=1, largest=false)\nscore = sigmoid(top)\n"
             "pairs = reshape(expert, [100])\ncounts = bincount(pairs, minlength=5)\n"
             "offsets = cumsum(counts, dim=0)\nperm = argsort(pairs, descending=true)\n"
             "inverse = argsort(perm, descending=true)\ntoken = floor_divide(perm, 2)\n"
             "t2, e2 = topk(lb, 1, dim=1)\np2 = reshape(e2, [37])\nc2 = bincount(p2, minlength=6)\n"
             "st2 = pad(cumsum(c2, dim=0, dtype=int32), [1, 0])\nq2 = argsort(p2)\ni2 = argsort(q2)\n"
             "fc = cumsum(cast(t2, float32), dim=0)\n"
             "c = bincount(ids, minlength=8)\no = cumsum(c, dim=0)\nr = remainder(o, d)\n"
             "output expert, score, counts, offsets, perm, inverse, token, t2, st2, q2, i2, fc, c, o, r\n",
             T_EXACT);
    const char *ex[] = {"moe_slots", "top_p", "moe_routing"};
    for (int i = 0; i < 3; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s.sf", SF_SOURCE_DIR, ex[i]);
        FILE *fp = fopen(path, "r");
        if (!fp) continue;
        static char buf[8192];
        size_t n = fread(buf, 1, sizeof buf - 1, fp);
        fclose(fp);
        buf[n] = '\0';
        prog_raw(buf, T_EXACT);
    }
    /* gathers fused into pointwise, scan and reduction kernels */
    for (size_t i = 0; i < sizeof gather_progs / sizeof gather_progs[0]; i++) prog_raw(gather_progs[i], T_EXACT);
    /* move them out of the sweep list */
    ncovs = nprogs - saved_n;
    covs = malloc((size_t)(ncovs > 0 ? ncovs : 1) * sizeof *covs);
    if (!covs) abort();
    memcpy(covs, progs + saved_n, (size_t)ncovs * sizeof *covs);
    nprogs = saved_n;
}

/* ---------------------------------------------------------------------------------- */
/* Part A: every program generated and compiled by NVRTC                              */
/* ---------------------------------------------------------------------------------- */

/* SF_CUDA_TEST_FILTER: substrings separated by '|'; a program is wanted if its text or
 * its tuning (SCANFUSE_CUDA_TUNE variant) contains any of them. */
static bool wanted(const prog *p) {
    if (!filter) return true;
    for (const char *f = filter; *f;) {
        const char *bar = strchr(f, '|');
        size_t n = bar ? (size_t)(bar - f) : strlen(f);
        char sub[128];
        if (n > 0 && n < sizeof sub) {
            memcpy(sub, f, n);
            sub[n] = 0;
            if (strstr(p->text, sub) || (p->tune && strstr(p->tune, sub))) return true;
        }
        if (!bar) break;
        f = bar + 1;
    }
    return false;
}

/* Compiles a program for `device` (tune knobs applied; single-threaded callers only) */
static scanfuse_program *compile_prog(const char *text, scanfuse_device device, int fuse,
                                      const char *tune, scanfuse_fusion **fout) {
    scanfuse_fusion *f = scanfuse_parse(text, "<test>");
    if (fout) *fout = f;
    if (scanfuse_fusion_status(f) != SCANFUSE_OK) return NULL;
    scanfuse_options o;
    scanfuse_options_init(&o);
    o.device = device;
    o.fuse = fuse;
    if (tune) setenv("SCANFUSE_CUDA_TUNE", tune, 1);
    scanfuse_program *pr = scanfuse_compile(f, &o);
    if (tune) unsetenv("SCANFUSE_CUDA_TUNE");
    return pr;
}

typedef struct gen_job {
    const prog *list;
    int n;
    int stride; /* this worker takes every stride-th item, from next */
    bool both; /* also the op-by-op form */
    int next;
    bool tuned; /* this pass compiles the programs with tuning knobs */
    pthread_mutex_t lock;
    int failures;
    char first_failure[1024];
} gen_job;

static void *gen_worker(void *arg) {
    gen_job *j = arg;
    for (;;) {
        int i = j->next;
        j->next += j->stride;
        if (i >= 2 * j->n) break;
        const prog *p = &j->list[i / 2];
        /* a program's two forms alternate in item order, so that with two workers each
         * takes fused and op-by-op forms alike (the op-by-op ones are fewer) */
        int fuse = ((i % 2) ^ ((i / 2) % 2)) == 0;
        if (!wanted(p) || (!fuse && (p->no_unfused || !j->both))) continue;
        if ((p->tune != NULL) != j->tuned) continue; /* knobs: compiled on one thread */
        struct timespec c0, c1;
        clock_gettime(CLOCK_MONOTONIC, &c0);
        scanfuse_fusion *f = NULL;
        scanfuse_program *pr = compile_prog(p->text, SCANFUSE_DEVICE_REFERENCE, fuse, NULL, &f);
        char msg[SF_ERR_LEN] = "";
        scanfuse_status st;
        if (!pr || scanfuse_program_status(pr) != SCANFUSE_OK) {
            st = SCANFUSE_ERROR_STATE;
            snprintf(msg, sizeof msg, "does not compile: %s",
                     pr ? scanfuse_program_error(pr) : scanfuse_fusion_error(f));
        } else {
            if (p->tune) setenv("SCANFUSE_CUDA_TUNE", p->tune, 1);
            st = sf_cuda_compile_offline((const sf_program *)pr, 90, NULL, msg, sizeof msg);
            if (p->tune) unsetenv("SCANFUSE_CUDA_TUNE");
        }
        if (st != SCANFUSE_OK) {
            pthread_mutex_lock(&j->lock);
            if (j->failures++ == 0)
                snprintf(j->first_failure, sizeof j->first_failure, "program %d (fuse=%d): %s\n%s",
                         i / 2, fuse, msg, p->text);
            pthread_mutex_unlock(&j->lock);
        }
        clock_gettime(CLOCK_MONOTONIC, &c1);
        if (verbose)
            printf("A %d fuse=%d %s %.2f s: %.60s\n", i / 2, fuse, scanfuse_status_string(st),
                   (c1.tv_sec - c0.tv_sec) + 1e-9 * (c1.tv_nsec - c0.tv_nsec), p->text);
        scanfuse_program_free(pr);
        scanfuse_fusion_free(f);
    }
    return NULL;
}

/* Generates and compiles programs in one process per core (NVRTC does not scale across
 * threads of one process); the children fill the disk cache, so the programs compile
 * again quickly in this process.  Returns the number of failures. */
static int compile_all(const prog *list, int n, bool both, double *secs) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long np = sysconf(_SC_NPROCESSORS_ONLN);
    if (np < 1) np = 1;
    if (np > 64) np = 64;
    fflush(stdout);
    fflush(stderr);
    pid_t kids[64];
    int nk = 0, failures = 0;
    for (long w = 0; w < np; w++) {
        pid_t pid = fork();
        if (pid == 0) {
            gen_job j;
            memset(&j, 0, sizeof j);
            j.list = list;
            j.n = n;
            j.both = both;
            pthread_mutex_init(&j.lock, NULL);
            j.stride = (int)np;
            j.next = (int)w;
            gen_worker(&j);
            j.tuned = true;
            j.next = (int)w;
            gen_worker(&j);
            if (j.failures) printf("FAIL %s\n", j.first_failure);
            fflush(stdout);
            _exit(j.failures > 100 ? 100 : j.failures);
        }
        if (pid > 0) kids[nk++] = pid;
    }
    if (nk == 0) { /* no fork: do it here */
        gen_job j;
        memset(&j, 0, sizeof j);
        j.list = list;
        j.n = n;
        j.both = both;
        j.stride = 1;
        pthread_mutex_init(&j.lock, NULL);
        gen_worker(&j);
        j.tuned = true;
        j.next = 0;
        gen_worker(&j);
        if (j.failures) printf("FAIL %s\n", j.first_failure);
        failures = j.failures;
    }
    for (int k = 0; k < nk; k++) {
        int wst = 0;
        if (waitpid(kids[k], &wst, 0) == kids[k]) {
            if (!WIFEXITED(wst)) failures++;
            else failures += WEXITSTATUS(wst);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *secs = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    CHECKF(failures == 0, "%d generated programs failed to compile", failures);
    return failures;
}

/* The launches of the MoE examples' plans (no GPU, no NVRTC: the plan alone, for sm_90
 * and 132 multiprocessors).  Llama: the topk pre-kernel, the small kernel, the combine.
 * DeepSeek (cuda_small.c's parts): topk, cast and sigmoid as one grid kernel, one SMALL
 * kernel for the counts and offsets, the split sort's two kernels, the inverse, the
 * tokens, the combine.  A part re-emitting a node it took, or a part not taken, shows
 * here as a count that grew. */
static int plan_launches(const char *path) {
    scanfuse_fusion *fu = scanfuse_parse_file(path);
    scanfuse_options o;
    scanfuse_options_init(&o);
    o.device = SCANFUSE_DEVICE_REFERENCE;
    scanfuse_program *pr = fu ? scanfuse_compile(fu, &o) : NULL;
    sf_cuda_plan *pl = NULL;
    char msg[SF_ERR_LEN];
    int n = -1;
    if (pr && sf_cuda_plan_build((const sf_program *)pr, 90, 132, &pl, msg, sizeof msg) == SCANFUSE_OK) {
        const sf_program *p = (const sf_program *)pr;
        n = 0;
        for (int sg = 0; sg < p->nsegments; sg++) {
            if (!pl->seg_fused[sg]) {
                for (int j = 0; j < p->segments[sg].nnodes; j++) n += pl->node_nk[p->segments[sg].nodes[j]];
                continue;
            }
            for (int q = pl->seg_k0[sg]; q < pl->seg_k0[sg] + pl->seg_nk[sg]; q++)
                if (!pl->k[q].small_sub) n += 1 + (pl->k[q].kind == SF_CUK_SMALL && pl->k[q].pre1 > 0);
        }
        sf_cuda_plan_free(pl);
    }
    scanfuse_program_free(pr);
    scanfuse_fusion_free(fu);
    return n;
}

/* The dynamic shared memory of the first column scan kernel of the plan of a one-scan
 * program (the column stream kernel has a ring of stages there, the tile kernel none);
 * -1 if the plan fails or has no column scan. */
static long col_scan_dyn_smem(const char *text) {
    scanfuse_fusion *fu = scanfuse_parse(text, "plan");
    scanfuse_options o;
    scanfuse_options_init(&o);
    o.device = SCANFUSE_DEVICE_REFERENCE;
    scanfuse_program *pr = fu ? scanfuse_compile(fu, &o) : NULL;
    sf_cuda_plan *pl = NULL;
    char msg[SF_ERR_LEN];
    long r = -1;
    if (pr && sf_cuda_plan_build((const sf_program *)pr, 90, 132, &pl, msg, sizeof msg) == SCANFUSE_OK) {
        for (int q = 0; q < pl->nkernels && r < 0; q++)
            if (pl->k[q].kind == SF_CUK_SCAN_COL) r = (long)pl->k[q].dyn_smem;
        sf_cuda_plan_free(pl);
    }
    scanfuse_program_free(pr);
    scanfuse_fusion_free(fu);
    return r;
}

static void plan_checks(void) {
    int l = plan_launches(SF_SOURCE_DIR "/examples/moe_routing.sf");
    int d = plan_launches(SF_SOURCE_DIR "/examples/moe_routing_deepseek.sf");
    CHECKF(l == 3, "the Llama MoE example's plan launches %d kernels, expected 3", l);
    CHECKF(d == 8, "the DeepSeek MoE example's plan launches %d kernels, expected 8", d);
    printf("plans: MoE Llama %d launches, DeepSeek %d\n", l, d);
    /* the column stream kernel carries its prefix in three levels (cuda_scan.c,
     * sf_col_stream_scan), so wide columns stream at any length and float dtype:
     * [4096, 4096] float64 (64 chunks), [65536, 4096] float64 (1024 chunks), float32
     * columns of 2049 chunks, bfloat16 [2^20, 8192] (8192 chunks), int32 */
    static const char *const streamed[] = {
        "input x: float64[4096, 4096]\ny = cumsum(x, dim=0)\noutput y\n",
        "input x: float64[65536, 4096]\ny = cumsum(x, dim=0)\noutput y\n",
        "input x: float32[262145, 4096]\ny = cumsum(x, dim=0)\noutput y\n",
        "input x: bfloat16[1048576, 8192]\ny = cumsum(x, dim=0)\noutput y\n",
        "input x: int32[1048576, 4096]\ny = cumsum(x, dim=0)\noutput y\n",
    };
    for (size_t i = 0; i < sizeof streamed / sizeof streamed[0]; i++) {
        long sm = col_scan_dyn_smem(streamed[i]);
        CHECKF(sm > 0, "%.40s: the stream kernel expected (dynamic shared memory %ld)", streamed[i], sm);
    }
}

static void part_a(void) {
    char msg[SF_ERR_LEN];
    if (sf_cuda_nvrtc_probe(msg, sizeof msg) != SCANFUSE_OK) {
        printf("SKIP part A (NVRTC compiles of every kernel template): NVRTC not loadable: %s\n", msg);
        return;
    }
    double secs;
    compile_all(covs, ncovs, false, &secs);
    printf("part A: %d coverage programs generated and compiled by %s for sm_90 in %.1f s\n", ncovs,
           msg, secs);
}

/* ---------------------------------------------------------------------------------- */
/* Part B: on the GPU against the reference                                           */
/* ---------------------------------------------------------------------------------- */

static double uni(sf_test_rng *r, double lo, double hi) { return lo + (hi - lo) * sf_test_rng_uniform(r); }

static double gen_float(sf_test_rng *r, int gen, scanfuse_dtype dt) {
    switch (gen) {
    case G_POS: return exp2(uni(r, -4, 4));
    case G_UNIT: return (sf_test_rng_next(r) & 1 ? -1 : 1) * uni(r, 0.5, 1.5);
    case G_NONZERO: return (sf_test_rng_next(r) & 1 ? -1 : 1) * uni(r, 0.5, 4);
    case G_SPECIAL:
        if (sf_test_rng_uniform(r) < 0.25) {
            static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 65504.0, -3.0e38,
                                        1.0e-7, 6.0e-5, 1.0e-300, -1.0e-40, 1.0e300, 3.0e9};
            return sp[sf_test_rng_int(r, 0, (int64_t)(sizeof sp / sizeof sp[0]) - 1)];
        }
        return uni(r, -4, 4);
    case G_FULL: return uni(r, -1.0e4, 1.0e4);
    case G_TIES: {
        static const double tv[] = {-2.0, -0.0, 0.0, 1.5, 3.0, NAN, INFINITY, -INFINITY};
        return tv[sf_test_rng_int(r, 0, (int64_t)(sizeof tv / sizeof tv[0]) - 1)];
    }
    case G_BOOL01: return (double)(sf_test_rng_next(r) & 1);
    case G_ROUND: {
        /* halfway points of float16 / bfloat16 (normal, subnormal, past the largest
         * finite), exact or nudged by far less than a float32 ulp: rounding once from
         * double gives the nudged side, a detour through float32 would see a tie */
        const int mb = (sf_test_rng_next(r) & 1) ? 7 : 10;
        const int64_t m = sf_test_rng_int(r, (int64_t)1 << mb, ((int64_t)2 << mb) - 1);
        const int e = (int)sf_test_rng_int(r, -30, 16) - mb;
        const double v = ldexp((double)m + 0.5, e) + (double)sf_test_rng_int(r, -1, 1) * ldexp(1.0, e - 32);
        return (sf_test_rng_next(r) & 1) ? -v : v;
    }
    case G_RARE: { /* infinities and NaNs about once in 3000 (some runs of a raked tile hold
                      one, most none), some values down in the 16-bit subnormals */
        const double u = sf_test_rng_uniform(r);
        if (u < 1.0 / 3000) {
            static const double sp[] = {NAN, INFINITY, -INFINITY};
            return sp[sf_test_rng_int(r, 0, 2)];
        }
        if (u < 0.02) return uni(r, -4, 4) * (u < 0.01 ? 0x1p-20 : 0x1p-130);
        return uni(r, -4, 4);
    }
    case G_RANGE: { /* magnitudes across the dtype's range, a zero about once in 5000: long
                       products wander out of double's range and back (cumprod, prod) */
        if (sf_test_rng_uniform(r) < 1.0 / 5000) return 0.0;
        const double lim = dt == SCANFUSE_FLOAT64 ? 600 : dt == SCANFUSE_FLOAT16 ? 14 : 120;
        return (sf_test_rng_next(r) & 1 ? -1 : 1) * exp2(uni(r, -lim, lim));
    }
    default: return uni(r, -4, 4);
    }
}

static int64_t clampi(int64_t v, scanfuse_dtype dt) {
    if (v < sf_int_min(dt)) return sf_int_min(dt);
    if (v > sf_int_max(dt)) return sf_int_max(dt);
    return v;
}

static int64_t gen_int(sf_test_rng *r, int gen, scanfuse_dtype dt, int64_t irange) {
    int64_t lo = sf_int_min(dt), hi = sf_int_max(dt);
    if (gen == G_INDEX) return sf_test_rng_int(r, 0, irange - 1);
    if (dt == SCANFUSE_BOOL) return gen == G_NONZERO ? 1 : (int64_t)(sf_test_rng_next(r) & 1);
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
    case G_FULL:
    case G_SPECIAL: {
        if (sf_test_rng_uniform(r) < 0.3) {
            const int64_t sp[] = {lo, hi, 0, -1, 1, lo + 1, hi - 1};
            return clampi(sp[sf_test_rng_int(r, 0, 6)], dt);
        }
        return sf_wrap_int((int64_t)sf_test_rng_next(r), dt);
    }
    case G_TIES: return clampi(sf_test_rng_int(r, -2, 2), dt);
    default: return sf_test_rng_int(r, clampi(-20, dt), clampi(20, dt));
    }
}

/* A device copy of a host tbuf (the whole allocation, canaries included). */
typedef struct dbuf {
    void *dev;
    scanfuse_dl_tensor dl;
} dbuf;

static bool dbuf_make(dbuf *d, const tbuf *t) {
    char msg[SF_ERR_LEN];
    memset(d, 0, sizeof *d);
    if (sf_cuda_alloc(0, t->alloc_len, &d->dev, msg, sizeof msg) != SCANFUSE_OK) {
        CHECKF(false, "device allocation of %zu bytes failed: %s", t->alloc_len, msg);
        return false;
    }
    if (sf_cuda_copy_to_device(0, d->dev, t->alloc, t->alloc_len, msg, sizeof msg) != SCANFUSE_OK) {
        CHECKF(false, "copy to the device failed: %s", msg);
        return false;
    }
    d->dl = t->dl;
    d->dl.data = (char *)d->dev + ((unsigned char *)t->dl.data - t->alloc);
    d->dl.device.device_type = SCANFUSE_DL_CUDA;
    d->dl.device.device_id = 0;
    return true;
}

static bool dbuf_back(const dbuf *d, tbuf *t) {
    char msg[SF_ERR_LEN];
    if (sf_cuda_copy_to_host(0, t->alloc, d->dev, t->alloc_len, msg, sizeof msg) != SCANFUSE_OK) {
        CHECKF(false, "copy from the device failed: %s", msg);
        return false;
    }
    return true;
}

static void dbuf_free(dbuf *d) {
    sf_cuda_free(0, d->dev);
    d->dev = NULL;
}

static long long n_compared, n_cases_run;

/* Compares output element y (dtype dt) with the reference's raw value (float64 or
 * int64) under a tolerance class.  mag: the magnitude bound (SUM, MATMUL) or 0. */
static bool close_enough(scanfuse_dtype dt, double y, int64_t iy, double raw, int64_t iraw, int tol,
                         double mag) {
    if (!sf_dtype_is_float(dt)) return iy == sf_wrap_int(iraw, dt);
    double e = sf_round_to(raw, dt);
    if (isnan(raw) || isnan(e)) return isnan(y);
    if (isnan(y)) return false;
    if (isinf(e) || isinf(raw)) return y == e;
    if (tol == T_EXACT) return y == e && (y != 0.0 || signbit(y) == signbit(e));
    double err = fabs(y - raw);
    double u = sf_ulp(raw, dt);
    switch (tol) {
    case T_ULP1: return err <= (dt == SCANFUSE_FLOAT64 ? 4.0 : 1.0) * u;
    case T_SUM: case T_MATMUL: return err <= u || err <= ldexp(mag, -40);
    case T_REL: return err <= u || err <= ldexp(fabs(raw), -38);
    case T_LSE: return err <= u || err <= ldexp(1.0 + fabs(raw), -36);
    default: return false;
    }
}

typedef struct run_set {
    scanfuse_fusion *f;
    int nin, nout;
    tbuf in[MAXIN];
    dbuf din[MAXIN];
    tbuf out[MAXOUT];
    dbuf dout[MAXOUT];
    void *ref[MAXOUT + MAXOUT]; /* reference outputs: double or int64, contiguous */
    int nref;
} run_set;

static int failures_printed;
static char summary[64 * 1024];
static size_t summary_len;
static int last_summary_prog = -1;

/* Prints the first failures in full; every failing program gets one summary line. */
static void report(const prog *p, int pi, int fuse, int layout, const char *what) {
    if (failures_printed++ < 12)
        printf("FAIL program %d (fuse=%d, layout %d): %s\n%s", pi, fuse, layout, what, p->text);
    if (pi != last_summary_prog) {
        last_summary_prog = pi;
        const char *first = p->text;
        const char *nl = strchr(first, '\n');
        sw_app(summary, sizeof summary, &summary_len, "  program %d fuse=%d layout %d [%.*s]: %.150s\n", pi,
               fuse, layout, nl ? (int)(nl - first) : 40, first, what);
    }
}

/* One program in one layout: fused and op by op against the reference. */
static void run_prog(const prog *p, int pi, int layout, scanfuse_program *rp,
                     scanfuse_program *cp[2], scanfuse_fusion *f) {
    run_set rs;
    memset(&rs, 0, sizeof rs);
    int nin = scanfuse_fusion_num_inputs(f), nout = scanfuse_fusion_num_outputs(f);
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0x5eed0000u + (uint64_t)pi * 16u + (uint64_t)layout);
    scanfuse_dl_tensor din_dl[MAXIN], ref_in[MAXIN];
    bool ok = true;
    for (int i = 0; i < nin && ok; i++) {
        const char *name;
        scanfuse_dtype dt;
        int nd;
        int64_t shape[SF_MAX_DIMS];
        scanfuse_fusion_input_info(f, i, &name, &dt, &nd, shape);
        int lay = layout == 0 ? L_CONTIG : layout == 1 ? (nd >= 2 ? L_TRANSPOSED : L_BROADCAST) : L_SLICED;
        if (lay == L_BROADCAST && (nd < 1 || shape[0] != 1)) lay = L_CONTIG;
        tbuf *t = &rs.in[i];
        if (!tb_init(t, dt, nd, shape, lay)) {
            ok = false;
            break;
        }
        for (int64_t j = 0; j < t->numel; j++) {
            int64_t off = tb_offset(t, j);
            int g = p->gen[i];
            if (sf_dtype_is_float(dt)) sf_store_f64(t->base, off, dt, gen_float(&rng, g, dt));
            else sf_store_i64(t->base, off, dt, gen_int(&rng, g, dt, p->irange[i] > 0 ? p->irange[i] : 1));
        }
        ok = dbuf_make(&rs.din[i], t);
        din_dl[i] = rs.din[i].dl;
        ref_in[i] = t->dl;
    }
    /* reference: float64/int64 outputs (raw values) for the program's outputs and mags */
    int nref = scanfuse_fusion_num_outputs((const scanfuse_fusion *)((const sf_program *)rp)->fusion);
    scanfuse_dl_tensor ref_out[2 * MAXOUT];
    int64_t ref_shape[2 * MAXOUT][SF_MAX_DIMS];
    for (int o = 0; o < nref && ok; o++) {
        const sf_program *rpp = (const sf_program *)rp;
        const sf_value *v = &rpp->fusion->values[rpp->fusion->outputs[o]];
        int64_t n = sf_value_numel(v);
        bool fl = sf_dtype_is_float(v->dtype);
        rs.ref[o] = calloc((size_t)(n > 0 ? n : 1), 8);
        memset(&ref_out[o], 0, sizeof ref_out[o]);
        for (int d = 0; d < v->ndim; d++) ref_shape[o][d] = v->shape[d];
        ref_out[o].data = rs.ref[o];
        ref_out[o].device.device_type = SCANFUSE_DL_CPU;
        ref_out[o].ndim = v->ndim;
        ref_out[o].shape = ref_shape[o];
        ref_out[o].dtype = scanfuse_dtype_to_dl(fl ? SCANFUSE_FLOAT64 : SCANFUSE_INT64);
    }
    rs.nref = nref;
    scanfuse_status rst = ok ? scanfuse_run(rp, ref_in, nin, ref_out, nref) : SCANFUSE_ERROR_STATE;
    char refmsg[SF_ERR_LEN];
    snprintf(refmsg, sizeof refmsg, "%s", scanfuse_program_error(rp));
    if (ok && rst != p->expect) {
        char w[SF_ERR_LEN + 64];
        snprintf(w, sizeof w, "reference run: %s (%s)", scanfuse_status_string(rst), refmsg);
        report(p, pi, -1, layout, w);
        CHECK(false);
        ok = false;
    }
    for (int fuse = 1; fuse >= 0 && ok; fuse--) {
        scanfuse_program *pr = cp[fuse];
        if (!pr) continue;
        scanfuse_dl_tensor dout_dl[MAXOUT];
        for (int o = 0; o < nout && ok; o++) {
            const char *name;
            scanfuse_dtype dt;
            int nd;
            int64_t shape[SF_MAX_DIMS];
            scanfuse_fusion_output_info(f, o, &name, &dt, &nd, shape);
            int lay = layout == 0 ? L_CONTIG : layout == 1 ? L_SLICED : (nd >= 2 ? L_TRANSPOSED : L_SLICED);
            tb_free(&rs.out[o]);
            dbuf_free(&rs.dout[o]);
            if (!tb_init(&rs.out[o], dt, nd, shape, lay) || !dbuf_make(&rs.dout[o], &rs.out[o])) {
                ok = false;
                break;
            }
            dout_dl[o] = rs.dout[o].dl;
        }
        if (!ok) break;
        scanfuse_status st = scanfuse_run(pr, din_dl, nin, dout_dl, nout);
        char smsg[SF_ERR_LEN];
        snprintf(smsg, sizeof smsg, "%s", scanfuse_program_error(pr));
        char emsg[SF_ERR_LEN];
        scanfuse_status sy = sf_cuda_synchronize(0, emsg, sizeof emsg);
        if (sy != SCANFUSE_OK) {
            report(p, pi, fuse, layout, emsg);
            CHECK(false);
            ok = false;
            break;
        }
        n_cases_run++;
        if (st != p->expect) {
            char w[2 * SF_ERR_LEN];
            snprintf(w, sizeof w, "cuda run: %s (%s), expected %s", scanfuse_status_string(st), smsg,
                     scanfuse_status_string(p->expect));
            report(p, pi, fuse, layout, w);
            CHECK(false);
            continue;
        }
        for (int o = 0; o < nout; o++) {
            tbuf *t = &rs.out[o];
            if (!dbuf_back(&rs.dout[o], t)) break;
            if (st != SCANFUSE_OK) { /* a failed run writes nothing */
                if (!tb_untouched(t)) {
                    report(p, pi, fuse, layout, "a failed run wrote an output");
                    CHECK(false);
                }
                continue;
            }
            long dmg = tb_find_damage(t);
            if (dmg >= 0) {
                char w[128];
                snprintf(w, sizeof w, "output %d: canary damaged at byte %ld", o, dmg);
                report(p, pi, fuse, layout, w);
                CHECK(false);
            }
            int mi = p->mag[o];
            bool fl = sf_dtype_is_float(t->dt);
            int bad = 0;
            for (int64_t j = 0; j < t->numel; j++) {
                double raw = fl ? ((double *)rs.ref[o])[j] : 0.0;
                int64_t iraw = fl ? 0 : ((int64_t *)rs.ref[o])[j];
                double mag = mi >= 0 ? ((double *)rs.ref[nout + mi])[j] : 0.0;
                double y = fl ? tb_get_f(t, j) : 0.0;
                int64_t iy = fl ? 0 : tb_get_i(t, j);
                n_compared++;
                if (!close_enough(t->dt, y, iy, raw, iraw, p->tol[o], mag)) {
                    if (bad++ < 3) {
                        char w[256];
                        snprintf(w, sizeof w, "output %s (%s) element %lld: got %.17g / %lld, reference %.17g / %lld (mag %.3g)",
                                 p->outs[o], scanfuse_dtype_name(t->dt), (long long)j, y, (long long)iy, raw,
                                 (long long)iraw, mag);
                        report(p, pi, fuse, layout, w);
                    }
                }
            }
            CHECKF(bad == 0, "program %d output %d: %d elements differ", pi, o, bad);
        }
        if (st != SCANFUSE_OK)
            CHECKF(strcmp(smsg, refmsg) == 0, "program %d: message '%s', reference '%s'", pi, smsg, refmsg);
    }
    for (int i = 0; i < nin; i++) {
        dbuf_free(&rs.din[i]);
        tb_free(&rs.in[i]);
    }
    for (int o = 0; o < nout; o++) {
        dbuf_free(&rs.dout[o]);
        tb_free(&rs.out[o]);
    }
    for (int o = 0; o < nref; o++) free(rs.ref[o]);
}

/* Host and device buffers of n float32 each for x and y (a failed check naming `what`
 * when one cannot be had; the caller frees what was made), and a hash of n outputs. */
static bool f32_buffers(int64_t n, float **x, float **y, void **dx, void **dy, const char *what) {
    char msg[SF_ERR_LEN];
    *x = malloc((size_t)n * 4);
    *y = malloc((size_t)n * 4);
    if (!*x || !*y || sf_cuda_alloc(0, (size_t)n * 4, dx, msg, sizeof msg) != SCANFUSE_OK ||
        sf_cuda_alloc(0, (size_t)n * 4, dy, msg, sizeof msg) != SCANFUSE_OK) {
        CHECKF(false, "%s: no memory", what);
        return false;
    }
    return true;
}
static uint64_t hash_f32(const float *y, int64_t n) {
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &y[i], 4);
        h = (h ^ b) * 1099511628211ull;
    }
    return h;
}

/* The buffers of one checked run, freed (any of them may be NULL). */
static void release_run(void *dx, void *dy, void *x, void *y, scanfuse_program *pr, scanfuse_fusion *f) {
    sf_cuda_free(0, dx);
    sf_cuda_free(0, dy);
    free(x);
    free(y);
    scanfuse_program_free(pr);
    scanfuse_fusion_free(f);
}

/* The look-back's lb_ga=1 (the default: each tile folds the previous group's tile
 * aggregates itself) folds the same aggregates in the same order as waiting for the
 * group's aggregate (lb_ga=0), so it gives the same bits, at the default groups and at
 * groups of 4 and 2 tiles; so does the sleep before the first poll (lb_wait_first).
 * The input makes the order visible: ones beside rare +-2^53 in float32 rows
 * accumulated in double, where (2^53 + 1) + 1 and 2^53 + (1 + 1) differ and a later
 * -2^53 brings the difference down to where the float32 outputs show it. */
static void lookback_variants(void) {
    const int64_t n = (int64_t)1 << 24;
    static const char *const tunes[][2] = {
        {"lb_ga=0", NULL}, {"lb_ga=0,row_g=4,row_g2=8", "row_g=4,row_g2=8"}, {"lb_ga=0,row_g=2", "row_g=2"},
        {"lb_wait_first=0", "lb_wait_first_min=0"}, /* no first sleep, and one at 2048 tiles */
        /* the same with the tile aggregate published before pass one's warp scans (not the
         * default for float32's strips of 4 steps) */
        {"lb_early=1,lb_ga=0", "lb_early=1"}, {"lb_early=1,lb_ga=0,row_g=2", "lb_early=1,row_g=2"},
        {"lb_early=1,lb_wait_first=0", "lb_early=1,lb_wait_first_min=0"},
    };
    const char *text = "input x: float32[16777216]\ny = cumsum(x, dim=0)\noutput y\n";
    float *x = NULL, *y = NULL;
    void *dx = NULL, *dy = NULL;
    char msg[SF_ERR_LEN];
    if (!f32_buffers(n, &x, &y, &dx, &dy, "look-back variants")) goto done;
    sf_test_rng r;
    sf_test_rng_seed(&r, 78);
    for (int64_t i = 0; i < n; i++) {
        double u = sf_test_rng_uniform(&r);
        x[i] = u < 0.0005 ? 9007199254740992.0f : u < 0.001 ? -9007199254740992.0f : u < 0.6 ? 1.0f : -1.0f;
    }
    sf_cuda_copy_to_device(0, dx, x, (size_t)n * 4, msg, sizeof msg);
    int64_t shape[1] = {n};
    scanfuse_dl_tensor tx = {dx, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_FLOAT, 32, 1}, shape, NULL, 0};
    scanfuse_dl_tensor ty = {dy, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_FLOAT, 32, 1}, shape, NULL, 0};
    int same = 0, pairs = (int)(sizeof tunes / sizeof tunes[0]);
    for (int t = 0; t < pairs; t++) {
        uint64_t h[2] = {0, 0};
        for (int side = 0; side < 2; side++) {
            scanfuse_fusion *f = NULL;
            scanfuse_program *pr = compile_prog(text, SCANFUSE_DEVICE_CUDA, 1, tunes[t][side], &f);
            bool ok = pr && scanfuse_program_status(pr) == SCANFUSE_OK;
            CHECKF(ok, "look-back variants: compile under %s: %s", tunes[t][side] ? tunes[t][side] : "the defaults",
                   pr ? scanfuse_program_error(pr) : "no program");
            if (ok) {
                /* twice: the second launch sees the first one's words as stale */
                for (int rep = 0; rep < 2; rep++) CHECK_STATUS(scanfuse_run(pr, &tx, 1, &ty, 1), SCANFUSE_OK);
                sf_cuda_copy_to_host(0, y, dy, (size_t)n * 4, msg, sizeof msg);
                h[side] = hash_f32(y, n);
            }
            scanfuse_program_free(pr);
            scanfuse_fusion_free(f);
        }
        CHECKF(h[0] == h[1] && h[0] != 0, "look-back variants: %s and %s give different bits", tunes[t][0],
               tunes[t][1] ? tunes[t][1] : "the defaults");
        same += h[0] == h[1] && h[0] != 0;
    }
    printf("look-back variants: %d of %d pairs bit-identical\n", same, pairs);
done:
    release_run(dx, dy, x, y, NULL, NULL);
}

/* A 2^28-element float32 cumsum (32768 tiles, so the look-back sleeps before its first
 * poll): bit-identical over 10 runs, and accurate; under the defaults (the tile
 * aggregate published before pass one's warp scans, 5 blocks an SM) and the kernel of
 * before session 25 (the aggregate after them, 6 blocks: "lb_early=0,row_minb=6"). */
static void determinism(const char *tune) {
    const int64_t n = (int64_t)1 << 28;
    scanfuse_fusion *f = NULL;
    scanfuse_program *pr = compile_prog("input x: float32[268435456]\ny = cumsum(x, dim=0)\noutput y\n", SCANFUSE_DEVICE_CUDA, 1, tune, &f);
    CHECKF(pr && scanfuse_program_status(pr) == SCANFUSE_OK, "compile: %s", pr ? scanfuse_program_error(pr) : "no program");
    float *x = NULL, *y = NULL;
    void *dx = NULL, *dy = NULL;
    char msg[SF_ERR_LEN];
    if (!f32_buffers(n, &x, &y, &dx, &dy, "determinism")) goto done;
    sf_test_rng r;
    sf_test_rng_seed(&r, 77);
    for (int64_t i = 0; i < n; i++) x[i] = (float)uni(&r, -1.0, 1.0) * (float)(1 + (i % 7));
    sf_cuda_copy_to_device(0, dx, x, (size_t)n * 4, msg, sizeof msg);
    int64_t shape[1] = {n};
    scanfuse_dl_tensor tx = {dx, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_FLOAT, 32, 1}, shape, NULL, 0};
    scanfuse_dl_tensor ty = {dy, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_FLOAT, 32, 1}, shape, NULL, 0};
    uint64_t first = 0;
    bool same = true;
    for (int rep = 0; rep < 10; rep++) {
        CHECK_STATUS(scanfuse_run(pr, &tx, 1, &ty, 1), SCANFUSE_OK);
        sf_cuda_copy_to_host(0, y, dy, (size_t)n * 4, msg, sizeof msg);
        uint64_t h = hash_f32(y, n);
        if (rep == 0) first = h;
        else same = same && h == first;
    }
    CHECKF(same, "cumsum of 2^28 float32 elements differs between runs (tune %s)", tune ? tune : "none");
    /* accuracy: a double-double prefix sum on the host */
    double hi = 0, lo = 0, mag = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = x[i], s = hi + v, bp = s - hi;
        lo += (hi - (s - bp)) + (v - bp);
        hi = s;
        mag += fabs(v);
        double e = hi + lo;
        double err = fabs((double)y[i] - e);
        if (!(err <= sf_ulp(e, SCANFUSE_FLOAT32) || err <= ldexp(mag, -40))) bad++;
    }
    CHECKF(bad == 0, "cumsum of 2^28 float32 elements (tune %s): %lld outputs off by more than 1 ulp",
           tune ? tune : "none", (long long)bad);
    printf("determinism%s%s: 10 runs of a 2^28-element float32 cumsum are bit-identical: %s; accurate: %s\n",
           tune ? " under " : "", tune ? tune : "", same ? "yes" : "NO", bad == 0 ? "yes" : "NO");
done:
    release_run(dx, dy, x, y, pr, f);
}

/* A misaligned device pointer is rejected; a tensor on the CPU is rejected. */
static void bad_tensors(void) {
    scanfuse_fusion *f = NULL;
    scanfuse_program *pr = compile_prog("input x: float32[8]\ny = cumsum(x, dim=0)\noutput y\n", SCANFUSE_DEVICE_CUDA, 1, NULL, &f);
    void *d = NULL;
    char msg[SF_ERR_LEN];
    if (sf_cuda_alloc(0, 256, &d, msg, sizeof msg) == SCANFUSE_OK) {
        int64_t shape[1] = {8};
        scanfuse_dl_tensor tx = {(char *)d + 1, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_FLOAT, 32, 1}, shape, NULL, 0};
        scanfuse_dl_tensor ty = {(char *)d + 128, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_FLOAT, 32, 1}, shape, NULL, 0};
        CHECK_STATUS(scanfuse_run(pr, &tx, 1, &ty, 1), SCANFUSE_ERROR_ARGUMENT);
        CHECK(sf_test_contains(scanfuse_program_error(pr), "aligned"));
        float h[8] = {0};
        scanfuse_dl_tensor th = {h, {SCANFUSE_DL_CPU, 0}, 1, {SCANFUSE_DL_FLOAT, 32, 1}, shape, NULL, 0};
        CHECK_STATUS(scanfuse_run(pr, &th, 1, &ty, 1), SCANFUSE_ERROR_DEVICE);
        tx.data = d;
        CHECK_STATUS(scanfuse_run(pr, &tx, 1, &ty, 1), SCANFUSE_OK);
    }
    sf_cuda_free(0, d);
    scanfuse_program_free(pr);
    scanfuse_fusion_free(f);
}

/* Inputs expanded along the scan (stride 0 on a dim of size > 1, as PyTorch's expand
 * gives).  Rows: in a row kernel of two or more inputs (row_io1=2) the vector path
 * takes an input that varies along the scan by its shape only at stride 1, so these
 * take the element path; x[r][t] = r + 1 through a [4, 1] buffer, w[t] = 2 through one
 * element: y[r][t] = 2 (r + 1) (t + 1).  Columns (col = true): a staged column tile
 * copies the inputs that vary along the scan by their shape and reads them from shared
 * memory with no run-time test (an expanded one sends its tiles down the unstaged
 * path), the others from global memory; x[t][c] = c + 1 through a [1, 64] buffer,
 * w[c] = 2: y[t][c] = 2 (c + 1) (t + 1).
 * Exact either way. */
static void expanded_inputs(bool col) {
    const int64_t n0 = col ? 3000 : 4, n1 = col ? 64 : 30001;
    scanfuse_fusion *f = NULL;
    scanfuse_program *pr = compile_prog(col ? "input x: float32[3000, 64]\ninput w: float32[64]\n"
                                              "y = cumsum(mul(x, w), dim=0)\noutput y\n"
                                            : "input x: float32[4, 30001]\ninput w: float32[30001]\n"
                                              "y = cumsum(mul(x, w), dim=1)\noutput y\n",
                                        SCANFUSE_DEVICE_CUDA, 1, NULL, &f);
    CHECKF(pr && scanfuse_program_status(pr) == SCANFUSE_OK, "compile: %s", pr ? scanfuse_program_error(pr) : "no program");
    const int64_t nx = col ? n1 : n0; /* the distinct elements of x */
    float hx[64] = {0}, hw[1] = {2}; /* (all 64 copied; the rows use 4) */
    for (int64_t i = 0; i < nx; i++) hx[i] = (float)(i + 1);
    float *y = malloc((size_t)(n0 * n1) * 4);
    void *dx = NULL, *dw = NULL, *dy = NULL;
    char msg[SF_ERR_LEN];
    if (!y || sf_cuda_alloc(0, sizeof hx, &dx, msg, sizeof msg) != SCANFUSE_OK ||
        sf_cuda_alloc(0, 16, &dw, msg, sizeof msg) != SCANFUSE_OK ||
        sf_cuda_alloc(0, (size_t)(n0 * n1) * 4, &dy, msg, sizeof msg) != SCANFUSE_OK) {
        CHECKF(false, "expanded inputs: no memory");
        goto done;
    }
    sf_cuda_copy_to_device(0, dx, hx, sizeof hx, msg, sizeof msg);
    sf_cuda_copy_to_device(0, dw, hw, sizeof hw, msg, sizeof msg);
    int64_t xs[2] = {n0, n1}, xst[2] = {col ? 0 : 1, col ? 1 : 0}, ws[1] = {n1}, wst[1] = {0};
    scanfuse_dl_tensor in[2] = {{dx, {SCANFUSE_DL_CUDA, 0}, 2, {SCANFUSE_DL_FLOAT, 32, 1}, xs, xst, 0},
                                {dw, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_FLOAT, 32, 1}, ws, wst, 0}};
    scanfuse_dl_tensor ty = {dy, {SCANFUSE_DL_CUDA, 0}, 2, {SCANFUSE_DL_FLOAT, 32, 1}, xs, NULL, 0};
    CHECK_STATUS(scanfuse_run(pr, in, 2, &ty, 1), SCANFUSE_OK);
    sf_cuda_copy_to_host(0, y, dy, (size_t)(n0 * n1) * 4, msg, sizeof msg);
    int64_t bad = 0;
    for (int64_t r = 0; r < n0; r++)
        for (int64_t t = 0; t < n1; t++)
            bad += y[r * n1 + t] != (float)(2 * (r + 1) * (t + 1)); /* both shapes */
    CHECKF(bad == 0, "expanded inputs (%s): %lld outputs wrong", col ? "columns" : "rows", (long long)bad);
    printf("expanded inputs (stride 0 along the scan, %s): %s\n", col ? "columns" : "rows", bad == 0 ? "ok" : "WRONG");
done:
    sf_cuda_free(0, dx);
    sf_cuda_free(0, dw);
    sf_cuda_free(0, dy);
    free(y);
    scanfuse_program_free(pr);
    scanfuse_fusion_free(f);
}

/* A 1-D cumsum of one input expanded along the scan (one element at stride 0): the
 * staged look-back tiles take such an input on their vector path, reading its element from global memory (VL_TEST's broadcast arm,
 * cuda_scan.c).  x = 1 everywhere: y[t] = t + 1, exact in float32; bfloat16 rounds it
 * once (to nearest even, from float32, itself exact).  Several tiles and a partial
 * last one. */
static void expanded_1d(bool bf16) {
    const int64_t n = 100003;
    scanfuse_fusion *f = NULL;
    scanfuse_program *pr = compile_prog(bf16 ? "input x: bfloat16[100003]\ny = cumsum(x, dim=0)\noutput y\n"
                                             : "input x: float32[100003]\ny = cumsum(x, dim=0)\noutput y\n",
                                        SCANFUSE_DEVICE_CUDA, 1, NULL, &f);
    CHECKF(pr && scanfuse_program_status(pr) == SCANFUSE_OK, "compile: %s", pr ? scanfuse_program_error(pr) : "no program");
    const size_t es = bf16 ? 2 : 4;
    const float one = 1.0f;
    const uint16_t one16 = sf_f32_to_bf16(1.0f);
    unsigned char *y = malloc((size_t)n * es);
    void *dx = NULL, *dy = NULL;
    char msg[SF_ERR_LEN];
    if (!pr || scanfuse_program_status(pr) != SCANFUSE_OK) goto done;
    if (!y || sf_cuda_alloc(0, 16, &dx, msg, sizeof msg) != SCANFUSE_OK ||
        sf_cuda_alloc(0, (size_t)n * es, &dy, msg, sizeof msg) != SCANFUSE_OK) {
        CHECKF(false, "expanded 1-D input: no memory");
        goto done;
    }
    sf_cuda_copy_to_device(0, dx, bf16 ? (const void *)&one16 : (const void *)&one, es, msg, sizeof msg);
    int64_t xs[1] = {n}, xst[1] = {0};
    const scanfuse_dl_dtype dt = {bf16 ? SCANFUSE_DL_BFLOAT : SCANFUSE_DL_FLOAT, bf16 ? 16 : 32, 1};
    scanfuse_dl_tensor in = {dx, {SCANFUSE_DL_CUDA, 0}, 1, dt, xs, xst, 0};
    scanfuse_dl_tensor ty = {dy, {SCANFUSE_DL_CUDA, 0}, 1, dt, xs, NULL, 0};
    CHECK_STATUS(scanfuse_run(pr, &in, 1, &ty, 1), SCANFUSE_OK);
    sf_cuda_copy_to_host(0, y, dy, (size_t)n * es, msg, sizeof msg);
    int64_t bad = 0;
    for (int64_t t = 0; t < n; t++) {
        const float e = (float)(t + 1);
        if (bf16) {
            uint16_t got;
            memcpy(&got, y + t * 2, 2);
            bad += got != sf_f32_to_bf16(e);
        } else {
            float got;
            memcpy(&got, y + t * 4, 4);
            bad += got != e;
        }
    }
    CHECKF(bad == 0, "expanded 1-D %s input: %lld outputs wrong", bf16 ? "bfloat16" : "float32", (long long)bad);
    printf("expanded 1-D %s input (stride 0): %s\n", bf16 ? "bfloat16" : "float32", bad == 0 ? "ok" : "WRONG");
done:
    release_run(dx, dy, NULL, y, pr, f);
}

/* Runs queued back to back, each reading the previous one's output and writing the
 * buffer the run before it read (A -> B -> A -> ...), with no wait between them: with
 * pdl_first (the default) a run's first kernel may launch while the previous run's last
 * one is still running, and must wait for it before it reads or writes.  int32 cumsums
 * wrap, so any number of runs has an exact answer (uint32 arithmetic on the host).  A
 * look-back row (2^22 elements, 6 runs) and a column scan of [2048, 128] (20 runs, short
 * kernels: the most overlap), on the legacy default stream and on a non-blocking stream
 * of the program's (as PyTorch's are). */
static void chained_runs(void) {
    static const struct { const char *text; int64_t rows, cols; int dim, runs; } cs[] = {
        {"input x: int32[4194304]\ny = cumsum(x, dim=0, dtype=int32)\noutput y\n", 1, 4194304, 1, 6},
        {"input x: int32[2048, 128]\ny = cumsum(x, dim=0, dtype=int32)\noutput y\n", 2048, 128, 0, 20},
    };
    char msg[SF_ERR_LEN];
    void *stream = NULL;
    CHECK_STATUS(sf_cuda_stream_create(0, &stream, msg, sizeof msg), SCANFUSE_OK);
    for (int c = 0; c < 2 * (int)(sizeof cs / sizeof cs[0]); c++) {
        const int ci = c / 2;
        void *on = c % 2 ? stream : NULL;
        const int64_t rows = cs[ci].rows, cols = cs[ci].cols, n = rows * cols;
        scanfuse_fusion *f = scanfuse_parse(cs[ci].text, "<test>");
        scanfuse_options o;
        scanfuse_options_init(&o);
        o.device = SCANFUSE_DEVICE_CUDA;
        o.cuda_stream = on;
        scanfuse_program *pr = scanfuse_compile(f, &o);
        bool ok = scanfuse_program_status(pr) == SCANFUSE_OK && (on || c % 2 == 0);
        CHECKF(ok, "chained runs: compile: %s", scanfuse_program_error(pr));
        uint32_t *h = malloc((size_t)n * 4), *got = malloc((size_t)n * 4);
        void *d[2] = {NULL, NULL};
        if (!ok) goto next;
        if (!h || !got || sf_cuda_alloc(0, (size_t)n * 4, &d[0], msg, sizeof msg) != SCANFUSE_OK ||
            sf_cuda_alloc(0, (size_t)n * 4, &d[1], msg, sizeof msg) != SCANFUSE_OK) {
            CHECKF(false, "chained runs: no memory");
            goto next;
        }
        sf_test_rng r;
        sf_test_rng_seed(&r, 79 + (uint64_t)c);
        for (int64_t i = 0; i < n; i++) h[i] = (uint32_t)(sf_test_rng_next(&r) % 5);
        sf_cuda_copy_to_device(0, d[0], h, (size_t)n * 4, msg, sizeof msg);
        int64_t shape[2] = {rows, cols};
        const int nd = rows == 1 ? 1 : 2;
        int64_t *sh = rows == 1 ? shape + 1 : shape;
        for (int k = 0; k < cs[ci].runs; k++) {
            scanfuse_dl_tensor tx = {d[k % 2], {SCANFUSE_DL_CUDA, 0}, nd, {SCANFUSE_DL_INT, 32, 1}, sh, NULL, 0};
            scanfuse_dl_tensor ty = tx;
            ty.data = d[(k + 1) % 2];
            CHECK_STATUS(scanfuse_run(pr, &tx, 1, &ty, 1), SCANFUSE_OK);
            /* the same on the host, along the scanned dim */
            const int64_t len = cs[ci].dim == 0 ? rows : cols, step = cs[ci].dim == 0 ? cols : 1;
            for (int64_t q = 0; q < (cs[ci].dim == 0 ? cols : 1); q++) {
                uint32_t s = 0;
                for (int64_t t = 0; t < len; t++) {
                    s += h[q + t * step];
                    h[q + t * step] = s;
                }
            }
        }
        /* the copy runs on the legacy stream, which a non-blocking stream does not order */
        CHECK_STATUS(sf_cuda_synchronize(0, msg, sizeof msg), SCANFUSE_OK);
        sf_cuda_copy_to_host(0, got, d[cs[ci].runs % 2], (size_t)n * 4, msg, sizeof msg);
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) bad += got[i] != h[i];
        CHECKF(bad == 0, "chained runs (%s, %s stream): %lld outputs wrong after %d runs", cs[ci].text,
               on ? "a non-blocking" : "the default", (long long)bad, cs[ci].runs);
        printf("chained runs: %d runs of a %s int32 cumsum back to back on %s stream: %s\n", cs[ci].runs,
               rows == 1 ? "2^22-element" : "[2048, 128] dim 0", on ? "a non-blocking" : "the default",
               bad == 0 ? "ok" : "WRONG");
    next:
        sf_cuda_free(0, d[0]);
        sf_cuda_free(0, d[1]);
        free(h);
        free(got);
        scanfuse_program_free(pr);
        scanfuse_fusion_free(f);
    }
    sf_cuda_stream_destroy(0, stream);
}

/* A well-mixed 64-bit hash of z (splitmix64's output function). */
static uint64_t splitmix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 2^31 + 7 float32 elements through the 1-D look-back (262145 tiles, far past the
 * static and paced first waves): integer values in {-2, -1, 1, 2} drawn by a hash of
 * the position (so the sums walk about, to +-82609: a tile read or written at the
 * wrong place shows), whose partial sums are exact in double, so every output must be
 * the float32 rounding of the exact sum. */
static void big_f32(void) {
    const int64_t n = ((int64_t)1 << 31) + 7;
    scanfuse_fusion *f = NULL;
    scanfuse_program *pr = compile_prog("input x: float32[2147483655]\ny = cumsum(x, dim=0)\noutput y\n",
                                        SCANFUSE_DEVICE_CUDA, 1, NULL, &f);
    CHECKF(pr && scanfuse_program_status(pr) == SCANFUSE_OK, "compile: %s", pr ? scanfuse_program_error(pr) : "no program");
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
    void *dx = NULL, *dy = NULL;
    char msg[SF_ERR_LEN];
    if (!pr || !x || !y || sf_cuda_alloc(0, (size_t)n * 4, &dx, msg, sizeof msg) != SCANFUSE_OK ||
        sf_cuda_alloc(0, (size_t)n * 4, &dy, msg, sizeof msg) != SCANFUSE_OK) {
        printf("SKIP big float32: %s\n", pr ? msg : "no program");
        goto done;
    }
    static const float vals[4] = {-2.0f, -1.0f, 1.0f, 2.0f};
    for (int64_t i = 0; i < n; i++) x[i] = vals[splitmix64((uint64_t)i) >> 62];
    CHECK_STATUS(sf_cuda_copy_to_device(0, dx, x, (size_t)n * 4, msg, sizeof msg), SCANFUSE_OK);
    int64_t shape[1] = {n};
    scanfuse_dl_tensor tx = {dx, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_FLOAT, 32, 1}, shape, NULL, 0};
    scanfuse_dl_tensor ty = {dy, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_FLOAT, 32, 1}, shape, NULL, 0};
    CHECK_STATUS(scanfuse_run(pr, &tx, 1, &ty, 1), SCANFUSE_OK);
    CHECK_STATUS(sf_cuda_copy_to_host(0, y, dy, (size_t)n * 4, msg, sizeof msg), SCANFUSE_OK);
    int64_t s = 0, bad = 0, first = -1, big_s = 0;
    for (int64_t i = 0; i < n; i++) {
        s += (int64_t)x[i];
        big_s = llabs(s) > big_s ? llabs(s) : big_s;
        if (y[i] != (float)s && bad++ == 0) first = i;
    }
    CHECKF(bad == 0, "float32 cumsum over 2^31+7 elements: %lld wrong outputs, the first at %lld", (long long)bad,
           (long long)first);
    printf("big: cumsum of 2^31+7 float32 elements (partial sums up to %lld): %s\n", (long long)big_s,
           bad ? "WRONG" : "ok");
done:
    release_run(dx, dy, x, y, pr, f);
}

/* 2^31 + 7 elements: cumsum of uint8 into int32 (wrapping), every output checked. */
static void big(void) {
    const int64_t n = ((int64_t)1 << 31) + 7;
    scanfuse_fusion *f = NULL;
    scanfuse_program *pr = compile_prog("input x: uint8[2147483655]\ny = cumsum(x, dim=0, dtype=int32)\noutput y\n", SCANFUSE_DEVICE_CUDA, 1, NULL, &f);
    CHECKF(pr && scanfuse_program_status(pr) == SCANFUSE_OK, "compile: %s", pr ? scanfuse_program_error(pr) : "no program");
    uint8_t *x = malloc((size_t)n);
    int32_t *y = malloc((size_t)n * 4);
    void *dx = NULL, *dy = NULL;
    char msg[SF_ERR_LEN];
    if (!x || !y || sf_cuda_alloc(0, (size_t)n, &dx, msg, sizeof msg) != SCANFUSE_OK ||
        sf_cuda_alloc(0, (size_t)n * 4, &dy, msg, sizeof msg) != SCANFUSE_OK) {
        printf("SKIP big: %s\n", msg);
        goto done;
    }
    for (int64_t i = 0; i < n; i++) x[i] = (uint8_t)((((uint64_t)i * 2654435761u) >> 13) & 3);
    sf_cuda_copy_to_device(0, dx, x, (size_t)n, msg, sizeof msg);
    int64_t shape[1] = {n};
    scanfuse_dl_tensor tx = {dx, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_UINT, 8, 1}, shape, NULL, 0};
    scanfuse_dl_tensor ty = {dy, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_INT, 32, 1}, shape, NULL, 0};
    CHECK_STATUS(scanfuse_run(pr, &tx, 1, &ty, 1), SCANFUSE_OK);
    CHECK_STATUS(sf_cuda_copy_to_host(0, y, dy, (size_t)n * 4, msg, sizeof msg), SCANFUSE_OK);
    uint32_t s = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        s += x[i];
        if ((uint32_t)y[i] != s) bad++;
    }
    CHECKF(bad == 0, "cumsum over 2^31+7 elements: %lld wrong outputs", (long long)bad);
    printf("big: cumsum of 2^31+7 uint8 elements into int32: %s\n", bad ? "WRONG" : "ok");
done:
    release_run(dx, dy, x, y, pr, f);
}

/* One program of part B, fused and op by op, in its layouts.  Returns whether it ran. */
static bool part_b_program(int pi) {
    const prog *p = &progs[pi];
    if (!wanted(p)) return false;
    if (verbose) printf("B %d\n%s", pi, p->text);
    scanfuse_fusion *f = NULL, *fr = NULL;
    scanfuse_program *rp = compile_prog(p->reftext, SCANFUSE_DEVICE_REFERENCE, 1, NULL, &fr);
    scanfuse_program *cp[2] = {NULL, NULL};
    cp[1] = compile_prog(p->text, SCANFUSE_DEVICE_CUDA, 1, p->tune, &f);
    scanfuse_fusion *f0 = NULL;
    if (!p->no_unfused) cp[0] = compile_prog(p->text, SCANFUSE_DEVICE_CUDA, 0, p->tune, &f0);
    bool ok = rp && scanfuse_program_status(rp) == SCANFUSE_OK && cp[1] &&
              scanfuse_program_status(cp[1]) == SCANFUSE_OK &&
              (!cp[0] || scanfuse_program_status(cp[0]) == SCANFUSE_OK);
    if (!ok) {
        char w[SF_ERR_LEN * 2];
        snprintf(w, sizeof w, "compile: reference: %s; cuda: %s; cuda op by op: %s",
                 rp ? scanfuse_program_error(rp) : scanfuse_fusion_error(fr),
                 cp[1] ? scanfuse_program_error(cp[1]) : scanfuse_fusion_error(f),
                 cp[0] ? scanfuse_program_error(cp[0]) : "-");
        report(p, pi, 1, 0, w);
        CHECK(false);
    } else {
        for (int layout = 0; layout < (p->expect != SCANFUSE_OK ? 1 : 3); layout++) run_prog(p, pi, layout, rp, cp, f);
    }
    scanfuse_program_free(rp);
    scanfuse_program_free(cp[0]);
    scanfuse_program_free(cp[1]);
    scanfuse_fusion_free(f);
    scanfuse_fusion_free(f0);
    scanfuse_fusion_free(fr);
    return ok;
}

/* What part B's worker processes share: the next program to take and their tallies. */
typedef struct part_b_shared {
    atomic_int next;
    atomic_long passed, failed, programs, runs, compared;
    atomic_int probe_ok;
    char probe_msg[SF_ERR_LEN];
} part_b_shared;

/* A worker: takes programs from the shared counter until none is left, then adds its
 * tallies to the shared ones and prints its failing programs.  Runs in a child. */
static void part_b_worker(part_b_shared *sh) {
    int run = 0;
    for (;;) {
        int pi = atomic_fetch_add(&sh->next, 1);
        if (pi >= nprogs) break;
        run += part_b_program(pi);
    }
    atomic_fetch_add(&sh->passed, sf_test_passed);
    atomic_fetch_add(&sh->failed, sf_test_failed);
    atomic_fetch_add(&sh->programs, run);
    atomic_fetch_add(&sh->runs, n_cases_run);
    atomic_fetch_add(&sh->compared, n_compared);
    if (summary_len) printf("part B: failing programs (first failure each):\n%s", summary);
    fflush(stdout);
}

/* Part B's programs run in SF_CUDA_TEST_JOBS processes (default: one per two cores, at
 * most 8), each with its own CUDA context, taking the next program from a counter in
 * shared memory: the float64 reference on the host, not the GPU, is most of part B's
 * time (282 s in one process for 444 programs).  The processes are forked before this
 * one touches CUDA (a context does not survive a fork), so the GPU is probed in a child
 * too; the single-program checks run here afterwards. */
static void part_b(void) {
    part_b_shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        CHECKF(false, "part B: no shared memory for its workers");
        return;
    }
    memset(sh, 0, sizeof *sh);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        atomic_store(&sh->probe_ok, sf_cuda_probe(0, sh->probe_msg, sizeof sh->probe_msg) == SCANFUSE_OK);
        _exit(0);
    }
    int wst = 0;
    if (pid < 0 || waitpid(pid, &wst, 0) != pid || !WIFEXITED(wst))
        snprintf(sh->probe_msg, sizeof sh->probe_msg, "the probe's process failed");
    if (!atomic_load(&sh->probe_ok)) {
        printf("SKIP part B (runs on the GPU against the reference): no CUDA GPU: %s\n", sh->probe_msg);
        munmap(sh, sizeof *sh);
        return;
    }
    printf("part B on %s\n", sh->probe_msg);
    double secs;
    compile_all(progs, nprogs, true, &secs);
    printf("part B: %d programs x 2 generated and compiled in %.1f s\n", nprogs, secs);
    long jobs = sysconf(_SC_NPROCESSORS_ONLN) / 2;
    const char *js = getenv("SF_CUDA_TEST_JOBS");
    if (js && *js) jobs = strtol(js, NULL, 10);
    if (jobs < 1) jobs = 1;
    if (jobs > 8) jobs = 8;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t kids[8];
    int nk = 0;
    fflush(stdout);
    for (long w = 0; w < jobs; w++) {
        pid_t k = fork();
        if (k == 0) {
            sf_test_passed = sf_test_failed = 0;
            part_b_worker(sh);
            _exit(0);
        }
        if (k > 0) kids[nk++] = k;
    }
    if (nk == 0) part_b_worker(sh); /* no fork: here, its tallies this process's own */
    for (int k = 0; k < nk; k++) {
        wst = 0;
        if (waitpid(kids[k], &wst, 0) != kids[k] || !WIFEXITED(wst) || WEXITSTATUS(wst) != 0)
            CHECKF(false, "part B: worker %d died (%s %d)", k, WIFSIGNALED(wst) ? "signal" : "status",
                   WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
    }
    if (nk > 0) {
        sf_test_passed += atomic_load(&sh->passed);
        sf_test_failed += atomic_load(&sh->failed);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("part B: %ld programs, %ld runs, %ld elements compared in %.1f s by %d processes\n",
           atomic_load(&sh->programs), atomic_load(&sh->runs), atomic_load(&sh->compared),
           (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec), nk > 0 ? nk : 1);
    munmap(sh, sizeof *sh);
    /* a filtered run skips these unless SF_CUDA_TEST_EXTRAS=1 */
    const char *x = getenv("SF_CUDA_TEST_EXTRAS");
    if (!filter || (x && strcmp(x, "1") == 0)) {
        bad_tensors();
        determinism(NULL);
        determinism("lb_early=0,row_minb=6");
        lookback_variants();
        expanded_inputs(false);
        expanded_inputs(true);
        expanded_1d(false);
        expanded_1d(true);
        chained_runs();
        const char *b = getenv("SF_CUDA_TEST_BIG");
        if (b && strcmp(b, "1") == 0) {
            big();
            big_f32();
        }
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* a log cut by a time limit still shows how far it got */
    verbose = getenv("SF_CUDA_TEST_VERBOSE") && strcmp(getenv("SF_CUDA_TEST_VERBOSE"), "1") == 0;
    filter = getenv("SF_CUDA_TEST_FILTER");
    if (filter && !filter[0]) filter = NULL;
    /* the op signatures are parsed on first use, without a lock: warm them up here,
     * before part A's threads parse programs concurrently */
    scanfuse_fusion_free(scanfuse_parse("input x: float32[2]\ny = cumsum(x, dim=0)\noutput y\n", NULL));
    build_coverage();
    plan_checks();
    part_a();
    build_programs();
    const char *g = getenv("SF_CUDA_TEST_GEN_ONLY");
    if (g && strcmp(g, "1") == 0) { /* warm the kernel cache with part B's programs */
        double secs;
        compile_all(progs, nprogs, true, &secs);
        printf("part B's %d programs x 2 generated and compiled in %.1f s\n", nprogs, secs);
    } else {
        part_b();
    }
    for (int i = 0; i < nprogs; i++) {
        free(progs[i].text);
        free(progs[i].reftext);
    }
    for (int i = 0; i < ncovs; i++) {
        free(covs[i].text);
        free(covs[i].reftext);
    }
    free(progs);
    free(covs);
    return sf_test_finish("test_cuda");
}
