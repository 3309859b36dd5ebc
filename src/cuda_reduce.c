/*
 * cuda_reduce.c — reductions (sum, prod, max, min, mean, argmax, argmin) for the CUDA
 * backend, with the pointwise prologue and epilogue of their segment fused in: the
 * kernel shape from the static shape, and the per-kernel `Io` struct the reduction
 * skeletons (cuda_skeletons.c: sf_red_*) are instantiated with.  Float sums and means
 * accumulate in double-double (a thread's run of float32, float16 or bfloat16 elements by
 * TwoSum, OpSumDN), products in double with a carried power of two (sf_px_*),
 * integers in wrapping int64; the operators are the prelude's (cuda_prelude.c).
 *
 * Reductions see the input as nout outputs x nred reduced elements, reduced in a fixed
 * order (a thread's strided run, then an order-preserving tree), splits combined in
 * split order by a second kernel when one output's work is split across blocks.
 */
#include "cuda_codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------ */
/* Reductions                                                                      */
/* ------------------------------------------------------------------------------ */

/* The combine of many splits' partial states (a 1-D reduction has ~1000): one block an
 * output instead of one thread, whose chain of dependent folds (a double-double add is
 * ~11 dependent DADDs) would take tens of µs.  Emitted only into the programs that use
 * it, so no other kernel's text (or cache key) changes. */
static const char *const red_finish_block[] = {
    "#ifndef SF_RED_FINISH_BLOCK",
    "#define SF_RED_FINISH_BLOCK",
    "// Partial (o, s) at o * nsplit + s (sf_red_block's).  Thread t folds splits t, t + 256,",
    "// ... in order, U loads at a time, then the block's fixed tree (sf_block_excl): the",
    "// same bits on every run.",
    "template <class Op, class Io, int U>",
    "__device__ __forceinline__ void sf_red_finish_block(const sf_args& a, i64 nout, i64 nsplit) {",
    "    typedef typename Op::T T;",
    "    __shared__ T s_warp[8];",
    "    const T* part = (const T*)a.scratch;",
    "    for (i64 o = blockIdx.x; o < nout; o += gridDim.x) {",
    "        const T* p = part + o * nsplit;",
    "        T acc = Op::id();",
    "        i64 s = threadIdx.x;",
    "        for (; s + (U - 1) * 256 < nsplit; s += U * 256) {",
    "            T x[U];",
    "#pragma unroll",
    "            for (int u = 0; u < U; ++u) x[u] = p[s + u * 256];",
    "#pragma unroll",
    "            for (int u = 0; u < U; ++u) acc = Op::op(acc, x[u]);",
    "        }",
    "        for (; s < nsplit; s += 256) acc = Op::op(acc, p[s]);",
    "        T tot;",
    "        (void)sf_block_excl<Op, 256>(acc, s_warp, tot);",
    "        if (threadIdx.x == 0) Io::st(a, o, tot);",
    "    }",
    "}",
    "#endif",
    NULL};

/* The combine of a few splits (at most 64, or any count down the columns), a thread an
 * output, with U partials in flight: sf_red_finish (cuda_skeletons.c) waits for each load
 * before the next (the fold between them), so 66 splits of 4096 column sums were ~66
 * L2 round trips in a row, by estimate most of a [4096, 4096] column reduction's 43-48
 * µs (NOTES session 38 entry 4; not yet measured).  The same folds in the same order:
 * the same bits.  Emitted only into the programs that use it. */
static const char *const red_finish_u[] = {
    "#ifndef SF_RED_FINISH_U",
    "#define SF_RED_FINISH_U",
    "// sf_red_finish's folds, U partial loads issued before each U folds.",
    "template <class Op, class Io, int U>",
    "__device__ __forceinline__ void sf_red_finish_u(const sf_args& a, i64 nout, i64 nsplit, bool by_out) {",
    "    typedef typename Op::T T;",
    "    const T* part = (const T*)a.scratch;",
    "    const i64 step = by_out ? 1 : nout;",
    "    for (i64 o = (i64)blockIdx.x * blockDim.x + threadIdx.x; o < nout; o += (i64)gridDim.x * blockDim.x) {",
    "        const T* p = part + (by_out ? o * nsplit : o);",
    "        T acc = Op::id();",
    "        i64 s = 0;",
    "        for (; s + U <= nsplit; s += U) {",
    "            T x[U];",
    "#pragma unroll",
    "            for (int u = 0; u < U; ++u) x[u] = p[(s + u) * step];",
    "#pragma unroll",
    "            for (int v = 0; v < U; ++v) acc = Op::op(acc, x[v]);",
    "        }",
    "        for (; s < nsplit; ++s) acc = Op::op(acc, p[s * step]);",
    "        Io::st(a, o, acc);",
    "    }",
    "}",
    "#endif",
    NULL};

/* The combine of the splits by G lanes an output (red_fin_g=1, an experiment, off by
 * default; emitted only where used): lane g folds splits g*C .. (g+1)*C - 1 in order (U
 * loads in flight, C = ceil(nsplit / G)), then the G lanes' states fold in a fixed tree
 * ((0 1) (2 3)) ...: the same bits on every run, not sf_red_finish_u's (its fold is one
 * chain over the splits).  Nsight on an H100 (NOTES session 41 entry 6): the bfloat16
 * column sum of [4096, 4096] spent 11.9 µs of its ~32 in sf_red_finish_u, 16 blocks of
 * 4096 threads each folding 64 partial states one after another. */
static const char *const red_finish_g[] = {
    "#ifndef SF_RED_FINISH_G",
    "#define SF_RED_FINISH_G",
    "template <class Op, class Io, int G, int U>",
    "__device__ __forceinline__ void sf_red_finish_g(const sf_args& a, i64 nout, i64 nsplit, bool by_out) {",
    "    typedef typename Op::T T;",
    "    const T* part = (const T*)a.scratch;",
    "    const i64 step = by_out ? 1 : nout, C = (nsplit + G - 1) / G;",
    "    const int lane = (int)(threadIdx.x & 31), g = lane % G;",
    "    // warps walk the grid together (the tree's shuffles need every lane)",
    "    const i64 w0 = (i64)blockIdx.x * blockDim.x + (threadIdx.x & ~31u);",
    "    for (i64 w = w0; w < nout * G; w += (i64)gridDim.x * blockDim.x) {",
    "        const i64 o = (w + lane) / G;",
    "        T acc = Op::id();",
    "        if (o < nout) {",
    "            const T* p = part + (by_out ? o * nsplit : o);",
    "            const i64 lo = g * C, hi = lo + C < nsplit ? lo + C : nsplit;",
    "            i64 s = lo;",
    "            for (; s + U <= hi; s += U) {",
    "                T x[U];",
    "#pragma unroll",
    "                for (int u = 0; u < U; ++u) x[u] = p[(s + u) * step];",
    "#pragma unroll",
    "                for (int u = 0; u < U; ++u) acc = Op::op(acc, x[u]);",
    "            }",
    "            for (; s < hi; ++s) acc = Op::op(acc, p[s * step]);",
    "        }",
    "#pragma unroll",
    "        for (int d = 1; d < G; d *= 2) {",
    "            const T other = sf_shdn(acc, d);",
    "            if ((g & (2 * d - 1)) == 0) acc = Op::op(acc, other);",
    "        }",
    "        if (o < nout && g == 0) Io::st(a, o, acc);",
    "    }",
    "}",
    "#endif",
    NULL};

typedef struct red_ctx {
    bool red[SF_MAX_DIMS];
} red_ctx;

static void red_ld_coord(sf_cg_ectx *e, int d, sf_buf *out) {
    const red_ctx *u = e->user;
    if (u->red[d]) sf_buf_printf(out, "r%d", d);
    else sf_buf_printf(out, "b.c[%d]", d);
}

static void red_ld_off(sf_cg_ectx *e, int op, sf_buf *out) {
    const red_ctx *u = e->user;
    sf_buf_printf(out, "b.o[%d]", op);
    for (int d = 0; d < e->ndim; d++)
        if (u->red[d] && e->shape[d] > 1) sf_buf_printf(out, " + r%d * a.st[%d][%d]", d, op, d);
}

static void red_st_coord(sf_cg_ectx *e, int d, sf_buf *out) {
    (void)e;
    sf_buf_printf(out, "c%d", d);
}

static void red_st_off(sf_cg_ectx *e, int op, sf_buf *out) {
    sf_cg_offset(out, "c", op, e->ndim, sf_cg_iota_dims, e->shape);
}

/* Marks in pro the segment's nodes computed per element of the anchor's input (its
 * prologue): those the input depends on, and those beside the anchor that have the
 * input's shape and do not read its result (a reduction's sibling outputs: v = cast(x)
 * beside s = sum(x, dim)).  The others are computed per result (the epilogue).
 * false: out of memory. */
static bool mark_prologue(const sf_cg *g, int anchor, bool *pro) {
    const scanfuse_fusion *f = g->f;
    memset(pro, 0, (size_t)(f->nnodes > 0 ? f->nnodes : 1));
    /* the anchor's input and what it is computed from */
    int32_t v = f->nodes[anchor].in[0];
    int p = f->values[v].producer;
    if (p >= 0 && g->in_seg[p]) pro[p] = true;
    for (int i = anchor - 1; i >= 0; i--) {
        if (!pro[i]) continue;
        const sf_node *n = &f->nodes[i];
        for (int j = 0; j < n->nin; j++) {
            int q = f->values[n->in[j]].producer;
            if (q >= 0 && g->in_seg[q]) pro[q] = true;
        }
    }
    /* ... and the nodes beside it: of the input's shape and not reading the anchor's
     * result, directly or through views (nodes are in topological order, so one
     * forward sweep over every node finds those that do).  A segment's pointwise node
     * has either the input's or the result's shape (segment.c); where both shapes are
     * equal, either side computes it right. */
    const sf_value *x = &f->values[v];
    bool *after = sf_calloc((size_t)(f->nnodes > 0 ? f->nnodes : 1), 1);
    if (!after) return false;
    after[anchor] = true;
    for (int i = anchor + 1; i < f->nnodes; i++) {
        const sf_node *n = &f->nodes[i];
        for (int j = 0; j < n->nin && !after[i]; j++) {
            int q = f->values[n->in[j]].producer;
            after[i] = q >= 0 && after[q];
        }
    }
    for (int i = 0; i < f->nnodes; i++) {
        if (!g->in_seg[i] || i == anchor || after[i] || pro[i]) continue;
        const sf_value *y = &f->values[f->nodes[i].out[0]];
        bool same = y->ndim == x->ndim;
        for (int d = 0; same && d < x->ndim; d++) same = y->shape[d] == x->shape[d];
        pro[i] = same;
    }
    free(after);
    return true;
}

scanfuse_status sf_cg_reduce(sf_cg *g, int anchor, char *msg, size_t msglen) {
    const scanfuse_fusion *f = g->f;
    const sf_node *n = &f->nodes[anchor];
    const sf_value *x = &f->values[n->in[0]], *y = &f->values[n->out[0]];
    if (sf_value_numel(y) == 0) return SCANFUSE_OK;
    bool arg = n->op == SF_OP_argmax || n->op == SF_OP_argmin;
    red_ctx u;
    memset(&u, 0, sizeof u);
    if (arg) {
        if (n->a.has_dim && x->ndim > 0) u.red[n->a.dim] = true;
        else
            for (int d = 0; d < x->ndim; d++) u.red[d] = true;
    } else {
        for (int j = 0; j < n->a.nlist; j++) {
            if (n->a.list[j] < 0 || n->a.list[j] >= x->ndim) {
                sf_msg(msg, msglen, "%s: cuda: invalid reduced dim", sf_op_table[n->op].name);
                return SCANFUSE_ERROR_SHAPE;
            }
            u.red[n->a.list[j]] = true;
        }
    }
    int kd[SF_MAX_DIMS], rd[SF_MAX_DIMS], nkd = 0, nrd = 0;
    int64_t nout = 1, nred = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (u.red[d]) {
            rd[nrd++] = d;
            nred *= x->shape[d];
        } else {
            kd[nkd++] = d;
            nout *= x->shape[d];
        }
    }
    scanfuse_dtype xdt = x->dtype, dt = y->dtype;
    scanfuse_dtype cdt = arg ? xdt : dt; /* the dtype elements are compared/summed in */
    bool fl = sf_dtype_is_float(cdt);
    const char *op, *elem = "x";
    const char *const *defs = NULL; /* lines the operator needs, emitted before the Io */
    int tsize = 8;
    sf_buf val = {0};
    switch (n->op) {
    case SF_OP_sum:
    case SF_OP_mean:
        if (fl) {
            op = "OpSumDD";
            /* elements of at most 4 bytes: a run adds them by TwoSum and renormalises
             * once a batch (OpSumDN; sum_lazy=0: OpSumDD's add an element) */
            if (cdt != SCANFUSE_FLOAT64 && sf_cg_tune("sum_lazy", 1) != 0) {
                op = "OpSumDN";
                defs = sf_cuda_sum_narrow;
            }
            tsize = 16;
            elem = "sf_dd_make(x)";
            /* the value is the result rounded to its dtype (once: sf_dd_fin's round-to-odd
             * keeps the next rounding single), as an epilogue that reads it (a cast to
             * bfloat16: RN_bf16(RN_f32(exact))) must see it; a plain store rounds the same */
            if (n->op == SF_OP_mean)
                sf_buf_printf(&val, "sf_dd_fin(sf_dd_divn(s, %.17g), %d)", (double)nred,
                              dt == SCANFUSE_FLOAT64);
            else
                sf_buf_printf(&val, "sf_dd_fin(s, %d)", dt == SCANFUSE_FLOAT64);
        } else {
            op = "OpSumI";
        }
        break;
    case SF_OP_prod:
        op = fl ? "OpProdD" : "OpProdI";
        if (fl) { /* the product and its power of two (sf_prodx, sf.h) */
            tsize = 16;
            elem = cdt == SCANFUSE_FLOAT64 ? "sf_px_make(x)" : "sf_vd_make(x, 0)"; /* (sf_prodx_times) */
            sf_buf_puts(&val, "sf_px_val(s)");
            /* factors of at most 4 bytes: a thread's run normalises every third product
             * (OpProdF, as the raked scan runs do: the same bits); the runs end
             * normalised (sf_red_run), so the value is sf_px_val's.  prod_lazy=0: OpProdD */
            if (cdt != SCANFUSE_FLOAT64 && sf_cg_tune("prod_lazy", 1) != 0) {
                op = "OpProdF";
                defs = sf_cuda_prod_narrow;
            }
        }
        break;
    case SF_OP_max: op = fl ? "OpMaxD" : "OpMaxI"; break;
    case SF_OP_min: op = fl ? "OpMinD" : "OpMinI"; break;
    default:
        op = fl ? (n->op == SF_OP_argmax ? "OpArgD<true>" : "OpArgD<false>")
                : (n->op == SF_OP_argmax ? "OpArgI<true>" : "OpArgI<false>");
        tsize = 16;
        elem = fl ? "sf_vd_make(x, j)" : "sf_vi_make(x, j)";
        sf_buf_puts(&val, "s.i");
        break;
    }
    if (!val.data) sf_buf_puts(&val, "s");

    sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_RED_THREAD, anchor);
    int ki = (int)(k - g->pl->k);
    k->ndim = x->ndim;
    for (int d = 0; d < x->ndim; d++) k->shape[d] = x->shape[d];
    k->ndim2 = y->ndim;
    for (int d = 0; d < y->ndim; d++) k->shape2[d] = y->shape[d];

    int *nodes = sf_malloc((size_t)(f->nnodes > 0 ? f->nnodes : 1) * sizeof *nodes);
    bool *pro = sf_malloc((size_t)(f->nnodes > 0 ? f->nnodes : 1));
    uint8_t *done = sf_malloc((size_t)(f->nvalues > 0 ? f->nvalues : 1));
    if (!nodes || !pro || !done || !mark_prologue(g, anchor, pro)) {
        free(nodes);
        free(pro);
        free(done);
        free(val.data);
        sf_msg(msg, msglen, "cuda: out of memory");
        return SCANFUSE_ERROR_MEMORY;
    }
    int nn = sf_cg_group_nodes(g, nodes);
    bool ok = true;
    /* ld: the prologue at reduced element j of output o (stores of prologue values that
     * need memory happen here: each element is loaded exactly once) */
    sf_buf ldb = {0}, stb = {0};
    sf_cg_ectx e;
    sf_cg_ectx_init(&e, g, k, &ldb, done, 0);
    e.coord = red_ld_coord;
    e.off = red_ld_off;
    e.user = &u;
    sf_cg_value(&e, n->in[0]);
    for (int i = 0; i < nn; i++) {
        const sf_node *m = &f->nodes[nodes[i]];
        if (!pro[nodes[i]] || !sf_cg_stored(g, m->out[0])) continue;
        sf_cg_value(&e, m->out[0]);
        sf_cg_store(&e, m->out[0]);
    }
    ok = ok && !e.overflow;
    /* st: the epilogue at output o */
    sf_cg_ectx_init(&e, g, k, &stb, done, 1);
    e.coord = red_st_coord;
    e.off = red_st_off;
    e.user = &u;
    e.nanchor = 1;
    e.anchor_val[0] = n->out[0];
    e.anchor_expr[0] = val.data; /* normalized to the result's dtype as it is defined */
    e.anchor_round[0] = true;
    for (int i = 0; i < nn; i++) {
        const sf_node *m = &f->nodes[nodes[i]];
        if (pro[nodes[i]] || !sf_cg_stored(g, m->out[0])) continue;
        sf_cg_value(&e, m->out[0]);
        sf_cg_store(&e, m->out[0]);
    }
    ok = ok && !e.overflow;
    free(nodes);
    free(pro);
    free(done);
    if (!ok) {
        free(ldb.data);
        free(stb.data);
        free(val.data);
        sf_msg(msg, msglen, "cuda: a kernel needs more than %d operands", SF_CUDA_MAXOPS);
        return SCANFUSE_ERROR_UNSUPPORTED;
    }

    sf_buf *src = g->src;
    char io[32];
    snprintf(io, sizeof io, "Io_k%d", ki);
    sf_cg_put_lines(src, defs);
    sf_buf_printf(src, "struct %s {\ntypedef %s Op;\ntypedef Op::T T;\n", io, op);
    sf_buf_printf(src, "struct B { i64 o[%d]; i64 c[%d]; };\n", k->nops > 0 ? k->nops : 1,
                  x->ndim > 0 ? x->ndim : 1);
    sf_buf_puts(src, "static __device__ __forceinline__ void base(const sf_args& a, i64 o, B& b) {\n");
    sf_cg_coords(src, "c", "o", nkd, kd, x->shape);
    for (int j = 0; j < nkd; j++) sf_buf_printf(src, "b.c[%d] = c%d;\n", kd[j], kd[j]);
    for (int q = 0; q < k->nops; q++) {
        sf_buf_printf(src, "b.o[%d] = ", q);
        if (k->ops[q].space == 0) sf_cg_offset(src, "c", q, nkd, kd, x->shape);
        else sf_buf_puts(src, "0");
        sf_buf_puts(src, ";\n");
    }
    sf_buf_puts(src, "(void)a;\n}\n");
    /* shift: the base of output o + v from output o's, when both lie in one run of the
     * innermost kept dim (sf_red_thread_v) */
    int kl = nkd > 0 ? kd[nkd - 1] : 0;
    sf_buf_puts(src, "static __device__ __forceinline__ void shift(const sf_args& a, B& b, i64 v) {\n");
    if (nkd > 0) {
        sf_buf_printf(src, "b.c[%d] += v;\n", kl);
        for (int q = 0; q < k->nops; q++)
            if (k->ops[q].space == 0) sf_buf_printf(src, "b.o[%d] += v * a.st[%d][%d];\n", q, q, kl);
    }
    sf_buf_puts(src, "(void)a;\n(void)b;\n(void)v;\n}\n");
    sf_buf_puts(src, "static __device__ __forceinline__ T ld(const sf_args& a, const B& b, i64 j) {\n");
    sf_cg_coords(src, "r", "j", nrd, rd, x->shape);
    if (ldb.data) sf_buf_puts(src, ldb.data);
    sf_buf_printf(src, "const %s x = ", sf_cg_ctype(cdt));
    char name[24];
    snprintf(name, sizeof name, "v%d", (int)n->in[0]);
    sf_cg_conv(src, xdt, cdt, name);
    sf_buf_printf(src, ";\n(void)j;\nreturn %s;\n}\n", elem);
    sf_buf_puts(src, "static __device__ __forceinline__ void st(const sf_args& a, i64 o, const T& s) {\n");
    int yd[SF_MAX_DIMS];
    for (int d = 0; d < y->ndim; d++) yd[d] = d;
    sf_cg_coords(src, "c", "o", y->ndim, yd, y->shape);
    if (stb.data) sf_buf_puts(src, stb.data);
    sf_buf_puts(src, "(void)a;\n}\n};\n");
    free(ldb.data);
    free(stb.data);
    free(val.data);

    /* the MoE combine's form: a row kernel (cuda_combine.c) */
    sf_cg_combine cm;
    if (fl && sf_cg_combine_match(g, anchor, &cm)) return sf_cg_combine_emit(g, k, io, &cm, elem, cdt, msg, msglen);
    int sms = g->sms > 0 ? g->sms : 132;
    int last = -1; /* the input's innermost dim of size > 1 */
    for (int d = x->ndim - 1; d >= 0 && last < 0; d--)
        if (x->shape[d] > 1) last = d;
    bool inner = last >= 0 && u.red[last];
    int64_t nsplit = 1;
    /* loads in flight a thread (sf_red_run's batches): 8, so 2048 threads an SM keep
     * 64 KB of float32 in flight, twice what the copy's rate needs (NOTES session 37) */
    int U = sf_cg_tune("red_u", 8);
    if (U < 1) U = 1;
    if (U > 32) U = 32;
    /* a warp a row up to rows of 2048, a block a row past them.  Max, min, argmax and
     * argmin of elements of at most 4 bytes, and float sums and means of 2-byte elements,
     * up to rows of 4096: over [4096, 4096] a block a row spends most of its time in the
     * block's tree after 16 elements a thread (H200, NOTES session 38 entry 3: argmax
     * float32 0.55 → 0.77 of copy, max 0.75 → 0.90, bfloat16 sum 0.35 → 0.56, mean 0.36 →
     * 0.55), where float32 and int32 sums lost (0.64 → 0.57, 0.89 → 0.68).  Tuning
     * red_warp_max sets the bound. */
    int64_t warp_max = 2048;
    const int xsz = (int)scanfuse_dtype_size(xdt);
    const bool extreme = n->op == SF_OP_max || n->op == SF_OP_min || arg;
    const bool fsum = (n->op == SF_OP_sum || n->op == SF_OP_mean) && fl;
    if ((extreme && xsz <= 4) || (fsum && xsz <= 2)) warp_max = 4096;
    warp_max = sf_cg_tune("red_warp_max", (int)warp_max);
    if (inner && nred <= warp_max) {
        k->kind = SF_CUK_RED_WARP;
        int64_t blocks = sf_cg_ceil_div(nout, 8);
        k->grid = sf_cg_grid(blocks < (int64_t)sms * 64 ? blocks : (int64_t)sms * 64);
        sf_buf_printf(src,
                      "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                      "sf_red_block<%s::Op, %s, 32, %d>(a, %lldll, %lldll, 1);\n}\n\n",
                      ki, io, io, U, (long long)nout, (long long)nred);
    } else if (inner) {
        k->kind = SF_CUK_RED_BLOCK;
        if (nout < (int64_t)sms * 4) {
            nsplit = sf_cg_ceil_div((int64_t)sms * 8, nout);
            int64_t most = sf_cg_ceil_div(nred, 8192);
            if (nsplit > most) nsplit = most;
            if (nsplit < 1) nsplit = 1;
        }
        k->grid = sf_cg_grid(nout * nsplit);
        sf_buf_printf(src,
                      "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                      "sf_red_block<%s::Op, %s, 256, %d>(a, %lldll, %lldll, %lldll);\n}\n\n",
                      ki, io, io, U, (long long)nout, (long long)nred, (long long)nsplit);
    } else {
        k->kind = SF_CUK_RED_THREAD;
        /* V outputs a thread when there are outputs enough that no split is needed:
         * V * (the narrowest operand's size) = 16 bytes in flight per output run */
        int narrow = 8;
        for (int q = 0; q < k->nops; q++) {
            int sz = (int)scanfuse_dtype_size(f->values[k->ops[q].value].dtype);
            if (k->ops[q].space == 0 && sz < narrow) narrow = sz;
        }
        int V = 16 / narrow > 8 ? 8 : 16 / narrow;
        if (nkd > 0 && V > 1 && x->shape[kl] % V == 0 && nout >= (int64_t)sms * 1024 &&
            sf_cg_tune("red_v", 1)) {
            k->grid = sf_cg_grid(sf_cg_ceil_div(nout / V, 256));
            sf_buf_printf(src,
                          "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                          "sf_red_thread_v<%s::Op, %s, %d>(a, %lldll, %lldll);\n}\n\n",
                          ki, io, io, V, (long long)nout, (long long)nred);
            return SCANFUSE_OK;
        }
        if (nout < (int64_t)sms * 1024) {
            nsplit = sf_cg_ceil_div((int64_t)sms * 2048, nout);
            int64_t most = sf_cg_ceil_div(nred, 64);
            if (nsplit > most) nsplit = most;
            if (nsplit < 1) nsplit = 1;
        }
        k->grid = sf_cg_grid(sf_cg_ceil_div(nout * nsplit, 256));
        sf_buf_printf(src,
                      "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                      "sf_red_thread<%s::Op, %s, %d>(a, %lldll, %lldll, %lldll);\n}\n\n",
                      ki, io, io, U, (long long)nout, (long long)nred, (long long)nsplit);
    }
    if (nsplit > 1) {
        k->scratch_bytes = nout * nsplit * tsize;
        sf_cuda_kernel *k2 = sf_cg_twin_kernel(g, ki, SF_CUK_RED_FINISH);
        k = &g->pl->k[ki];
        /* many splits (few outputs: sf_red_block's, at most ~1056): a block an output */
        if (k->kind == SF_CUK_RED_BLOCK && nsplit > 64 && sf_cg_tune("red_fin_block", 1) != 0) {
            k2->grid = sf_cg_grid(nout < (int64_t)sms * 8 ? nout : (int64_t)sms * 8);
            sf_cg_put_lines(src, red_finish_block);
            sf_buf_printf(src,
                          "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                          "sf_red_finish_block<%s::Op, %s, %d>(a, %lldll, %lldll);\n}\n\n",
                          ki + 1, io, io, U, (long long)nout, (long long)nsplit);
            return SCANFUSE_OK;
        }
        k2->grid = sf_cg_grid(sf_cg_ceil_div(nout, 256));
        /* U partials in flight a thread (red_fin_u; 1: sf_red_finish, one at a time) */
        int fu = sf_cg_tune("red_fin_u", 8);
        fu = fu < 1 ? 1 : fu > 16 ? 16 : fu;
        const char *by_out = k->kind == SF_CUK_RED_BLOCK ? "true" : "false";
        if (sf_cg_tune("red_fin_g", 0) != 0) {
            /* G lanes an output: enough threads for the GPU, at most the splits, a power
             * of two up to 32 */
            int G = 1;
            while (G < 32 && G * 2 <= nsplit && (int64_t)G * nout < (int64_t)sms * 1024) G *= 2;
            k2->grid = sf_cg_grid(sf_cg_ceil_div(nout * G, 256));
            sf_cg_put_lines(src, red_finish_g);
            sf_buf_printf(src,
                          "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                          "sf_red_finish_g<%s::Op, %s, %d, %d>(a, %lldll, %lldll, %s);\n}\n\n",
                          ki + 1, io, io, G, fu > 4 ? 4 : fu, (long long)nout, (long long)nsplit, by_out);
            return SCANFUSE_OK;
        }
        if (fu > 1) {
            sf_cg_put_lines(src, red_finish_u);
            sf_buf_printf(src,
                          "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                          "sf_red_finish_u<%s::Op, %s, %d>(a, %lldll, %lldll, %s);\n}\n\n",
                          ki + 1, io, io, fu, (long long)nout, (long long)nsplit, by_out);
        } else {
            sf_buf_printf(src,
                          "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                          "sf_red_finish<%s::Op, %s>(a, %lldll, %lldll, %s);\n}\n\n",
                          ki + 1, io, io, (long long)nout, (long long)nsplit, by_out);
        }
    }
    return SCANFUSE_OK;
}
