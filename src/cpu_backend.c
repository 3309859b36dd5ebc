/*
 * cpu_backend.c — the CPU backend's vtable (sf_backend_cpu): compile-time planning of
 * every buffer a run needs, and the run-time segment loop.
 *
 * A run walks the program's segments (kernels, segment.c) in order.  A segment with
 * one compute node runs op by op on whole values (cpu_exec_node); a fused segment runs
 * its setup nodes (views, constants) op by op, then its compute nodes tile by tile
 * (cpu_fused.c), so its intermediates never get a whole buffer: only the values it
 * outputs do.  Every value that exists whole is an sf_view:
 *  - fusion inputs are the caller's views, never written;
 *  - expand, permute, slice (and reshape of a contiguous value) are views of their
 *    input's memory, copying nothing;
 *  - full is one element broadcast with stride 0;
 *  - every other result is a contiguous buffer of its own dtype: a slot of the
 *    program's arena, or the caller's output tensor itself (see below).
 *
 * Memory plan (compile): shapes are static, so every slot gets an arena offset from a
 * first-fit interval allocation over the segments (a slot lives from the segment that
 * first computes it to the last segment reading any view of it; outputs to the end).
 * The arena is allocated on the first run and kept for later runs (one allocation, no
 * page faults after the first run); a program runs one call at a time.  Scan/reduction
 * work areas, matmul and index scratch and the fused segments' tile buffers live in
 * the arena too, so a run allocates nothing else.  Scans and fused segments use up to
 * options.threads threads of the process-wide pool (cpu_threads.h).
 *
 * Outputs: nothing reaches the caller's outputs unless every node succeeds.  When no
 * node can fail at run time (only integer remainder/floor_divide can: division by
 * zero) and no output view overlaps an input view, a result that is an output with a
 * contiguous view is computed straight into the caller's tensor (saving a pass and a
 * buffer); otherwise results go to the arena and are copied at the end, after any
 * output backed by caller memory was staged (outputs may alias inputs).
 *
 * Invariants: a node's inputs are live when it runs; a failed run writes nothing;
 * weak scalar literals feeding a pointwise op are converted straight from the literal
 * to the op's common dtype (docs/OPS.md).
 */
#include "cpu.h"
#include "cpu_threads.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 64

typedef struct cpu_plan {
    int nvalues, nnodes;
    int64_t *slot;        /* per value: arena offset of its own buffer, or -1 */
    int64_t *scratch;     /* per node: arena offset of its matmul scratch, or -1 */
    int64_t work;         /* arena offset of the scan/reduction work area */
    int32_t *direct;      /* per value: the output it may be computed into, or -1 */
    scanfuse_dtype *cdt;  /* per node: the common dtype of a pointwise op */
    bool may_fail;        /* some node can fail at run time */
    size_t arena_size;
    void *arena;          /* allocated by the first run, kept for later runs */
    /* segments (fused kernels; see cpu_fused.c) */
    int nsegments;
    sf_cpu_fused **fused; /* per segment: its tile plan, or NULL (runs op by op) */
    int64_t *seg_scratch; /* per segment: arena offset of its tile scratch, or -1 */
    int max_io;           /* the most whole views a fused segment needs */
    int threads;          /* threads for scans and fused segments (options.threads resolved) */
} cpu_plan;

/* Run-time state of one value. */
typedef struct cpu_val {
    sf_view v;
    bool live;
    bool caller; /* backed by caller memory (an input, a view of one, or an output) */
} cpu_val;

typedef struct cpu_run {
    const scanfuse_fusion *f;
    const cpu_plan *plan;
    char *arena;
    cpu_val *vals;
    const sf_view *outputs;
    bool direct_ok;   /* results may be computed into the caller's outputs */
    bool *written;    /* per output: already holds its value */
    sf_view *io;      /* whole views handed to a fused segment (plan->max_io) */
    char *msg;
    size_t msglen;
} cpu_run;

static scanfuse_status cpu_supports(const scanfuse_fusion *f, int node, char *msg,
                                    size_t msglen) {
    if (!f || node < 0 || node >= f->nnodes) {
        sf_msg(msg, msglen, "cpu: no such node %d", node);
        return SCANFUSE_ERROR_ARGUMENT;
    }
    return SCANFUSE_OK; /* every op of the table has a kernel (see cpu_exec_node) */
}

/* The dtype a pointwise node's operands are converted to before computing. */
static scanfuse_dtype common_dtype(const scanfuse_fusion *f, const sf_node *n) {
    scanfuse_dtype res = f->values[n->out[0]].dtype;
    switch (n->op) {
    case SF_OP_eq: case SF_OP_ne: case SF_OP_lt: case SF_OP_le: case SF_OP_gt:
    case SF_OP_ge: case SF_OP_logical_and: case SF_OP_logical_or: {
        scanfuse_dtype c = sf_result_type(f, n->in, n->nin);
        if (!sf_dtype_valid(c)) /* defensive: plain promotion */
            c = scanfuse_dtype_promote(f->values[n->in[0]].dtype, f->values[n->in[1]].dtype);
        return c;
    }
    case SF_OP_logical_not: case SF_OP_isnan: case SF_OP_cast:
        return f->values[n->in[0]].dtype;
    default:
        return res; /* SAME, FLOAT and WHERE rules: the result dtype */
    }
}

/* ---- index ranges: index ops that cannot meet a bad index ----
 * An index op fails only on an index out of range.  When the index values provably lie
 * in range (they are argsort/topk/argmax results, moved by views, divided or reduced
 * modulo by positive literals, ...), the op cannot fail, so it does not stop results
 * from being computed straight into the caller's outputs (see may_fail). */

/* Is the divisor of integer floor_divide/remainder node n a literal that is not 0 once
 * converted to the common dtype cdt (as the kernel converts it)?  Then the node cannot
 * fail, and results may still go straight to the caller's outputs: the MoE examples
 * divide by k, and staging their outputs would copy every output once more. */
static bool divisor_nonzero(const scanfuse_fusion *f, const sf_node *n, scanfuse_dtype cdt) {
    if (n->nin != 2) return false;
    const sf_value *b = &f->values[n->in[1]];
    if (!b->weak || b->producer < 0 || f->nodes[b->producer].op != SF_OP_scalar) return false;
    int64_t v;
    sf_cpu_fill_literal_i64(&f->nodes[b->producer].a.value, cdt, &v, 1);
    return v != 0;
}

/* Shape ops whose result is a view of their input (reshape only sometimes). */
static bool op_is_view(sf_op op) {
    return op == SF_OP_expand || op == SF_OP_permute || op == SF_OP_slice ||
           op == SF_OP_reshape;
}

static void cpu_plan_free(cpu_plan *pl) {
    if (!pl) return;
    free(pl->slot);
    free(pl->scratch);
    free(pl->direct);
    free(pl->cdt);
    free(pl->arena);
    if (pl->fused)
        for (int s = 0; s < pl->nsegments; s++) sf_cpu_fused_free(pl->fused[s]);
    free(pl->fused);
    free(pl->seg_scratch);
    free(pl);
}

/* ---- the memory plan ---- */

typedef struct block {
    int64_t off, size, end; /* end: the last segment that uses it */
} block;

typedef struct arena_alloc {
    block *live; /* sorted by offset */
    int nlive;
    int64_t base; /* slots start here (after the work area) */
    int64_t top;  /* the arena size so far */
} arena_alloc;

/* Drops blocks no longer used at segment `now`. */
static void arena_expire(arena_alloc *al, int now) {
    int k = 0;
    for (int i = 0; i < al->nlive; i++)
        if (al->live[i].end >= now) al->live[k++] = al->live[i];
    al->nlive = k;
}

/* First fit among the live blocks; returns the offset. */
static int64_t arena_place(arena_alloc *al, int64_t size, int64_t end) {
    size = (size + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    int64_t at = al->base;
    int pos = 0;
    for (; pos < al->nlive; pos++) {
        if (at + size <= al->live[pos].off) break;
        int64_t e = al->live[pos].off + al->live[pos].size;
        if (e > at) at = e;
    }
    memmove(&al->live[pos + 1], &al->live[pos], (size_t)(al->nlive - pos) * sizeof(block));
    al->live[pos] = (block){at, size, end};
    al->nlive++;
    if (at + size > al->top) al->top = at + size;
    return at;
}

/* Bytes of a value's buffer; false when it overflows. */
static bool value_bytes(const sf_value *v, int64_t *bytes) {
    int64_t n = sf_value_numel(v);
    return !sf_mul_overflow(n, (int64_t)scanfuse_dtype_size(v->dtype), bytes) &&
           *bytes <= INT64_MAX / 2;
}

/* A segment runs tile by tile (cpu_fused.c) when it fuses two or more compute nodes, or
 * is one reduction over its input's innermost dim: its tiles (whole rows, a block of
 * outputs each) then run on the pool's threads (an argmax over the rows of [2048, 2048]
 * float32: 5.6 ms op by op, 2.8 ms tiled on 2 cores; the same bytes, NOTES session 37).
 * Not a reduction down the columns: its tiles are narrow column blocks, read a short
 * piece a row (a product over dim 0 of [2048, 2048] ran slower tiled); op by op it
 * spreads its blocks of 512 outputs over the pool instead (sf_cpu_reduce_mt: 2x on 2
 * cores, NOTES session 38 entry 5).  Or is one element-wise op (a cast included) of at
 * least sf_cpu_tile_pointwise_min outputs: op by op it runs on one thread, tiled its tiles
 * spread over the pool (NOTES session 40).
 * Otherwise its nodes run op by op on whole values. */
int64_t sf_cpu_tile_pointwise_min = (int64_t)1 << 18;
static bool segment_is_tiled(const scanfuse_fusion *f, const sf_segment *seg) {
    if (seg->kind == SF_SEG_OPAQUE || seg->kind == SF_SEG_SMALL) return false;
    int compute = 0;
    bool rows = false, wide = false;
    for (int j = 0; j < seg->nnodes; j++) {
        const sf_node *n = &f->nodes[seg->nodes[j]];
        compute += !sf_node_is_setup(n->op);
        if (sf_op_table[n->op].kind == SF_KIND_POINTWISE && !sf_node_is_setup(n->op)) {
            const sf_value *o = &f->values[n->out[0]];
            wide = sf_numel(o->ndim, o->shape) >= sf_cpu_tile_pointwise_min;
        }
        if (sf_op_table[n->op].kind == SF_KIND_REDUCTION) {
            int nd = f->values[n->in[0]].ndim;
            bool red[SF_MAX_DIMS];
            sf_cpu_reduced_dims(n, nd, red);
            rows = nd > 0 && red[nd - 1];
        }
    }
    return compute >= 2 || (compute == 1 && (rows || wide));
}

static bool segment_outputs(const sf_segment *seg, int32_t v) {
    for (int o = 0; o < seg->noutputs; o++)
        if (seg->outputs[o] == v) return true;
    return false;
}

static scanfuse_status cpu_compile(sf_program *p, char *msg, size_t msglen) {
    const scanfuse_fusion *f = p->fusion;
    int nv = f->nvalues, nn = f->nnodes, ns = p->nsegments;
    scanfuse_status st = SCANFUSE_ERROR_MEMORY;
    int32_t *last = NULL, *parent = NULL, *born = NULL;
    int64_t *end = NULL;
    arena_alloc al = {NULL, 0, 0, 0};
    cpu_plan *pl = sf_calloc(1, sizeof *pl);
    if (!pl) goto fail;
    pl->nvalues = nv;
    pl->nnodes = nn;
    pl->slot = sf_malloc((size_t)nv * sizeof *pl->slot);
    pl->scratch = sf_malloc((size_t)nn * sizeof *pl->scratch);
    pl->direct = sf_malloc((size_t)nv * sizeof *pl->direct);
    pl->cdt = sf_calloc((size_t)nn, sizeof *pl->cdt);
    last = sf_malloc((size_t)nv * sizeof *last);
    parent = sf_malloc((size_t)nv * sizeof *parent);
    end = sf_malloc((size_t)nv * sizeof *end);
    born = sf_malloc((size_t)nv * sizeof *born);
    al.live = sf_malloc((size_t)(nv + 2 * nn + ns + 1) * sizeof *al.live);
    pl->nsegments = ns;
    pl->fused = sf_calloc((size_t)(ns ? ns : 1), sizeof *pl->fused);
    pl->seg_scratch = sf_malloc((size_t)(ns ? ns : 1) * sizeof *pl->seg_scratch);
    if (!pl->slot || !pl->scratch || !pl->direct || !pl->cdt || !last || !parent || !end ||
        !born || !al.live || !pl->fused || !pl->seg_scratch)
        goto fail;

    /* Liveness in segment order: a value is born in the first segment that computes it
     * (setup nodes may run in several) and lives to the last segment reading it
     * (outputs: past the last segment). */
    bool need_work = false;
    for (int v = 0; v < nv; v++) {
        pl->slot[v] = -1;
        pl->direct[v] = -1;
        parent[v] = -1;
        born[v] = -1;
        last[v] = 0;
    }
    for (int s = 0; s < ns; s++) {
        const sf_segment *seg = &p->segments[s];
        pl->seg_scratch[s] = -1;
        for (int j = 0; j < seg->nnodes; j++) {
            const sf_node *n = &f->nodes[seg->nodes[j]];
            for (int k = 0; k < n->nin; k++) last[n->in[k]] = s;
            for (int k = 0; k < n->nout; k++) {
                if (born[n->out[k]] < 0) born[n->out[k]] = s;
                last[n->out[k]] = s;
            }
        }
    }
    for (int i = 0; i < nn; i++) {
        const sf_node *n = &f->nodes[i];
        if ((st = cpu_supports(f, i, msg, msglen)) != SCANFUSE_OK) goto fail_msg;
        if (op_is_view(n->op)) parent[n->out[0]] = n->in[0];
        sf_kind kind = sf_op_table[n->op].kind;
        if (kind == SF_KIND_SCAN || kind == SF_KIND_REDUCTION) need_work = true;
        pl->scratch[i] = -1;
        pl->cdt[i] = kind == SF_KIND_POINTWISE ? common_dtype(f, n) : SCANFUSE_DTYPE_NONE;
        if ((n->op == SF_OP_remainder || n->op == SF_OP_floor_divide) &&
            !sf_dtype_is_float(pl->cdt[i]) && !divisor_nonzero(f, n, pl->cdt[i]))
            pl->may_fail = true;
        if (kind == SF_KIND_INDEX && sf_cpu_index_may_fail(n) && !sf_index_in_range(f, n))
            pl->may_fail = true; /* bad indices */
    }
    for (int o = f->noutputs - 1; o >= 0; o--) {
        last[f->outputs[o]] = ns;
        pl->direct[f->outputs[o]] = o; /* the first output of that value */
    }
    /* A slot lives until the last read of any value viewing it. */
    for (int v = 0; v < nv; v++) end[v] = last[v];
    for (int v = 0; v < nv; v++)
        for (int32_t a = parent[v]; a >= 0; a = parent[a])
            if (last[v] > end[a]) end[a] = last[v];

    if (need_work) {
        size_t ws = sf_cpu_scan_work_size(), wr = sf_cpu_reduce_work_size();
        al.base = (int64_t)((ws > wr ? ws : wr) + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    }
    al.top = al.base;
    pl->work = 0;
    pl->threads = sf_pool_threads(p->options.threads);
    pl->max_io = 0;
    for (int s = 0; s < ns; s++) {
        const sf_segment *seg = &p->segments[s];
        arena_expire(&al, s);
        bool tiled = segment_is_tiled(f, seg);
        if (tiled) {
            pl->fused[s] = sf_cpu_fused_plan(f, seg, pl->cdt, pl->threads, &st, msg, msglen);
            if (!pl->fused[s]) goto fail_msg;
            const int32_t *ids;
            int nio = sf_cpu_fused_io(pl->fused[s], &ids);
            if (nio > pl->max_io) pl->max_io = nio;
        }
        for (int j = 0; j < seg->nnodes; j++) {
            int i = seg->nodes[j];
            const sf_node *n = &f->nodes[i];
            bool setup = sf_node_is_setup(n->op);
            for (int k = 0; k < n->nout; k++) {
                int32_t v = n->out[k];
                if (born[v] != s || pl->slot[v] >= 0) continue;
                if (n->op == SF_OP_expand || n->op == SF_OP_permute || n->op == SF_OP_slice)
                    continue; /* pure views */
                /* inside a tiled segment only what leaves it gets a whole buffer */
                if (tiled && !setup && !segment_outputs(seg, v)) continue;
                int64_t bytes = 8; /* full: one element */
                if (n->op != SF_OP_full && !value_bytes(&f->values[v], &bytes)) {
                    sf_msg(msg, msglen, "cpu: a value of %s is too large",
                           sf_op_table[n->op].name);
                    st = SCANFUSE_ERROR_MEMORY;
                    goto fail_msg;
                }
                pl->slot[v] = arena_place(&al, bytes, end[v]);
            }
            if (n->op == SF_OP_matmul) {
                const sf_value *a = &f->values[n->in[0]], *b = &f->values[n->in[1]];
                pl->scratch[i] = arena_place(&al, sf_cpu_matmul_scratch(a->ndim, a->shape,
                                                                        b->ndim, b->shape), s);
            }
            if (sf_op_table[n->op].kind == SF_KIND_INDEX)
                pl->scratch[i] = arena_place(&al, sf_cpu_index_scratch(f, n), s);
            if (n->op == SF_OP_cumsum && !tiled) { /* a narrowing cumsum's converted input */
                const sf_value *x = &f->values[n->in[0]];
                int64_t cb = sf_cpu_scan_conv_bytes(n, x->dtype, f->values[n->out[0]].dtype,
                                                    sf_value_numel(x));
                if (cb > 0) pl->scratch[i] = arena_place(&al, cb, s);
            }
        }
        if (tiled)
            pl->seg_scratch[s] =
                arena_place(&al, (int64_t)sf_cpu_fused_scratch_size(pl->fused[s]), s);
        if (al.top > INT64_MAX / 4 || (uint64_t)al.top > (uint64_t)SIZE_MAX / 2) {
            sf_msg(msg, msglen, "cpu: the program needs too much memory");
            st = SCANFUSE_ERROR_MEMORY;
            goto fail_msg;
        }
    }
    pl->arena_size = (size_t)al.top;
    free(last);
    free(parent);
    free(end);
    free(born);
    free(al.live);
    p->backend_state = pl;
    return SCANFUSE_OK;
fail:
    sf_msg(msg, msglen, "cpu: out of memory");
fail_msg:
    free(last);
    free(parent);
    free(end);
    free(born);
    free(al.live);
    cpu_plan_free(pl);
    return st;
}

static void cpu_release(sf_program *p) {
    cpu_plan_free(p->backend_state);
    p->backend_state = NULL;
}

/* ---- result buffers ---- */

/* Gives value id its buffer: the caller's output when allowed, else its arena slot. */
static void val_result(cpu_run *r, int32_t id) {
    const sf_value *fv = &r->f->values[id];
    cpu_val *v = &r->vals[id];
    int32_t o = r->plan->direct[id];
    v->live = true;
    if (r->direct_ok && o >= 0 && sf_cpu_view_is_contiguous(&r->outputs[o])) {
        v->v = r->outputs[o];
        v->caller = true;
        r->written[o] = true;
        return;
    }
    SF_ASSERT(r->plan->slot[id] >= 0);
    sf_view_contiguous(&v->v, r->arena + r->plan->slot[id], fv->dtype, fv->ndim, fv->shape);
    v->caller = false;
}

/* Makes value id a view `view` of the memory behind value src. */
static void val_alias(cpu_run *r, int32_t id, int32_t src, const sf_view *view) {
    cpu_val *v = &r->vals[id];
    v->v = *view;
    v->caller = r->vals[src].caller;
    v->live = true;
}

/* ---- view-only shape ops ---- */

static void view_expand(const sf_value *res, const sf_view *in, sf_view *out) {
    *out = *in;
    out->ndim = res->ndim;
    int lead = res->ndim - in->ndim;
    for (int d = 0; d < res->ndim; d++) {
        int j = d - lead;
        out->shape[d] = res->shape[d];
        out->strides[d] = (j < 0 || in->shape[j] != res->shape[d]) ? 0 : in->strides[j];
    }
}

static void view_permute(const sf_node *n, const sf_view *in, sf_view *out) {
    *out = *in;
    for (int d = 0; d < in->ndim; d++) {
        int64_t s = n->a.list[d];
        SF_ASSERT(s >= 0 && s < in->ndim);
        out->shape[d] = in->shape[s];
        out->strides[d] = in->strides[s];
    }
}

static void view_slice(const sf_node *n, const sf_value *res, const sf_view *in, sf_view *out) {
    *out = *in;
    int d = (int)n->a.dim;
    SF_ASSERT(d >= 0 && d < in->ndim && n->a.step.i >= 1);
    out->shape[d] = res->shape[d];
    out->strides[d] = in->strides[d] * n->a.step.i;
    /* an empty result keeps the base pointer: no offset past the end is formed */
    if (sf_value_numel(res) > 0)
        out->data = (char *)in->data + n->a.start.i * in->strides[d] *
                                           (int64_t)scanfuse_dtype_size(in->dtype);
}

/* ---- the node loop ---- */

/* Runs node i: fills vals[] for its results. */
static scanfuse_status cpu_exec_node(cpu_run *r, int i) {
    const scanfuse_fusion *f = r->f;
    const sf_node *n = &f->nodes[i];
    sf_view in[SF_MAX_IN];
    for (int k = 0; k < n->nin; k++) {
        SF_ASSERT(r->vals[n->in[k]].live);
        in[k] = r->vals[n->in[k]].v;
    }
    int32_t o0 = n->out[0];
    const sf_value *res = &f->values[o0];
    void *work = r->arena + r->plan->work;
    switch (n->op) {
    /* scans */
    case SF_OP_cumsum: case SF_OP_cumprod: case SF_OP_logcumsumexp:
        val_result(r, o0);
        sf_cpu_scan_mt(n, &in[0], &r->vals[o0].v, NULL, work, r->plan->threads,
                       r->plan->scratch[i] >= 0 ? r->arena + r->plan->scratch[i] : NULL);
        return SCANFUSE_OK;
    case SF_OP_cummax: case SF_OP_cummin:
        val_result(r, o0);
        val_result(r, n->out[1]);
        sf_cpu_scan_mt(n, &in[0], &r->vals[o0].v, &r->vals[n->out[1]].v, work,
                       r->plan->threads, NULL);
        return SCANFUSE_OK;

    /* pointwise */
    case SF_OP_neg: case SF_OP_abs: case SF_OP_exp: case SF_OP_log: case SF_OP_log1p:
    case SF_OP_expm1: case SF_OP_sqrt: case SF_OP_rsqrt: case SF_OP_reciprocal:
    case SF_OP_sigmoid: case SF_OP_tanh: case SF_OP_silu: case SF_OP_relu: case SF_OP_floor:
    case SF_OP_ceil: case SF_OP_logical_not: case SF_OP_isnan: case SF_OP_add: case SF_OP_sub:
    case SF_OP_mul: case SF_OP_div: case SF_OP_pow: case SF_OP_maximum: case SF_OP_minimum:
    case SF_OP_remainder: case SF_OP_floor_divide: case SF_OP_eq: case SF_OP_ne: case SF_OP_lt:
    case SF_OP_le: case SF_OP_gt: case SF_OP_ge: case SF_OP_logical_and: case SF_OP_logical_or:
    case SF_OP_where: {
        const sf_num *lit[SF_MAX_IN] = {NULL, NULL, NULL};
        for (int k = 0; k < n->nin; k++) {
            const sf_value *iv = &f->values[n->in[k]];
            if (iv->weak && iv->producer >= 0 && f->nodes[iv->producer].op == SF_OP_scalar)
                lit[k] = &f->nodes[iv->producer].a.value;
        }
        val_result(r, o0);
        return sf_cpu_pointwise(n, r->plan->cdt[i], in, lit, &r->vals[o0].v, r->msg,
                                r->msglen);
    }
    case SF_OP_cast:
        val_result(r, o0);
        sf_cpu_copy(&r->vals[o0].v, &in[0]);
        return SCANFUSE_OK;

    /* creation */
    case SF_OP_scalar: case SF_OP_arange: case SF_OP_iota:
        val_result(r, o0);
        sf_cpu_create(n, &r->vals[o0].v);
        return SCANFUSE_OK;
    case SF_OP_full: {
        /* one element broadcast over the shape: nothing bigger is ever written */
        cpu_val *v = &r->vals[o0];
        sf_view_contiguous(&v->v, r->arena + r->plan->slot[o0], res->dtype, res->ndim,
                           res->shape);
        for (int d = 0; d < res->ndim; d++) v->v.strides[d] = 0;
        v->live = true;
        v->caller = false;
        sf_cpu_store_literal(v->v.data, res->dtype, &n->a.value);
        return SCANFUSE_OK;
    }

    /* shape ops: views where possible, strided copies otherwise */
    case SF_OP_expand: {
        sf_view v;
        view_expand(res, &in[0], &v);
        val_alias(r, o0, n->in[0], &v);
        return SCANFUSE_OK;
    }
    case SF_OP_permute: {
        sf_view v;
        view_permute(n, &in[0], &v);
        val_alias(r, o0, n->in[0], &v);
        return SCANFUSE_OK;
    }
    case SF_OP_slice: {
        sf_view v;
        view_slice(n, res, &in[0], &v);
        val_alias(r, o0, n->in[0], &v);
        return SCANFUSE_OK;
    }
    case SF_OP_reshape: {
        if (sf_cpu_view_is_contiguous(&in[0])) {
            sf_view v;
            sf_view_contiguous(&v, in[0].data, in[0].dtype, res->ndim, res->shape);
            val_alias(r, o0, n->in[0], &v);
            return SCANFUSE_OK;
        }
        val_result(r, o0);
        sf_view flat;
        sf_view_contiguous(&flat, r->vals[o0].v.data, res->dtype, in[0].ndim, in[0].shape);
        sf_cpu_copy(&flat, &in[0]);
        return SCANFUSE_OK;
    }
    case SF_OP_pad:
        val_result(r, o0);
        sf_cpu_pad(n, &in[0], &r->vals[o0].v);
        return SCANFUSE_OK;
    case SF_OP_triu: case SF_OP_tril:
        val_result(r, o0);
        sf_cpu_tri(n, &in[0], &r->vals[o0].v);
        return SCANFUSE_OK;

    /* reductions and contraction */
    case SF_OP_sum: case SF_OP_prod: case SF_OP_max: case SF_OP_min: case SF_OP_mean:
    case SF_OP_argmax: case SF_OP_argmin:
        val_result(r, o0);
        sf_cpu_reduce_mt(n, &in[0], &r->vals[o0].v, work, r->plan->threads);
        return SCANFUSE_OK;
    case SF_OP_matmul:
        val_result(r, o0);
        return sf_cpu_matmul(&in[0], &in[1], &r->vals[o0].v, r->arena + r->plan->scratch[i],
                             r->msg, r->msglen);

    /* index and sort ops (cpu_index.c) */
    case SF_OP_topk: case SF_OP_argsort: case SF_OP_one_hot: case SF_OP_bincount:
    case SF_OP_gather: case SF_OP_take_along_dim: case SF_OP_index_select: case SF_OP_scatter:
        for (int k = 0; k < n->nout; k++) val_result(r, n->out[k]);
        return sf_cpu_index(f, n, in, &r->vals[o0].v, n->nout > 1 ? &r->vals[n->out[1]].v : NULL,
                            r->arena + r->plan->scratch[i], r->msg, r->msglen);

    case SF_NUM_OPS: break;
    }
    sf_msg(r->msg, r->msglen, "cpu: unknown op %d", (int)n->op);
    return SCANFUSE_ERROR_UNSUPPORTED;
}

/* Runs segment s: op by op, or (a fused segment) its setup nodes on whole values, then
 * its compute nodes tile by tile into the buffers of the values it outputs. */
static scanfuse_status cpu_exec_segment(cpu_run *r, const sf_program *p, int s) {
    const sf_segment *seg = &p->segments[s];
    cpu_plan *pl = p->backend_state;
    const sf_cpu_fused *fp = pl->fused[s];
    scanfuse_status st;
    if (!fp) {
        for (int j = 0; j < seg->nnodes; j++)
            if ((st = cpu_exec_node(r, seg->nodes[j])) != SCANFUSE_OK) return st;
        return SCANFUSE_OK;
    }
    /* destinations first: the views of a lazily written result are setup nodes */
    for (int o = 0; o < seg->noutputs; o++) val_result(r, seg->outputs[o]);
    for (int j = 0; j < seg->nnodes; j++)
        if (sf_node_is_setup(r->f->nodes[seg->nodes[j]].op) &&
            (st = cpu_exec_node(r, seg->nodes[j])) != SCANFUSE_OK)
            return st;
    const int32_t *ids;
    int nio = sf_cpu_fused_io(fp, &ids);
    for (int i = 0; i < nio; i++) {
        SF_ASSERT(r->vals[ids[i]].live);
        r->io[i] = r->vals[ids[i]].v;
    }
    return sf_cpu_fused_run(fp, r->io, r->arena + pl->seg_scratch[s], r->msg, r->msglen);
}

/* The bytes [lo, hi) a view can touch (empty views touch nothing). */
static bool view_range(const sf_view *v, uintptr_t *lo, uintptr_t *hi) {
    int64_t last = 0;
    for (int d = 0; d < v->ndim; d++) {
        if (v->shape[d] == 0) return false;
        last += (v->shape[d] - 1) * v->strides[d];
    }
    int64_t es = (int64_t)scanfuse_dtype_size(v->dtype);
    *lo = (uintptr_t)v->data;
    *hi = *lo + (uintptr_t)((last + 1) * es);
    return true;
}

static bool views_overlap(const sf_view *a, const sf_view *b) {
    uintptr_t alo, ahi, blo, bhi;
    if (!view_range(a, &alo, &ahi) || !view_range(b, &blo, &bhi)) return false;
    return alo < bhi && blo < ahi;
}

static scanfuse_status cpu_run_program(sf_program *p, const sf_view *inputs,
                                       const sf_view *outputs, char *msg, size_t msglen) {
    const scanfuse_fusion *f = p->fusion;
    cpu_plan *pl = p->backend_state;
    if (!pl || pl->nvalues != f->nvalues || pl->nnodes != f->nnodes ||
        pl->nsegments != p->nsegments) {
        sf_msg(msg, msglen, "cpu: program not compiled");
        return SCANFUSE_ERROR_STATE;
    }
    if (!pl->arena) {
        pl->arena = sf_malloc(pl->arena_size);
        if (!pl->arena) {
            sf_msg(msg, msglen, "cpu: out of memory allocating %zu bytes", pl->arena_size);
            return SCANFUSE_ERROR_MEMORY;
        }
    }
    int nv = f->nvalues, no = f->noutputs;
    void **staged = NULL;
    cpu_run r = {f, pl, pl->arena, NULL, outputs, false, NULL, NULL, msg, msglen};
    r.vals = sf_calloc((size_t)nv, sizeof *r.vals);
    r.written = sf_calloc((size_t)no, sizeof *r.written);
    r.io = sf_calloc((size_t)(pl->max_io ? pl->max_io : 1), sizeof *r.io);
    staged = sf_calloc((size_t)no, sizeof *staged);
    scanfuse_status st = SCANFUSE_OK;
    if (!r.vals || !r.written || !r.io || !staged) {
        sf_msg(msg, msglen, "cpu: out of memory");
        st = SCANFUSE_ERROR_MEMORY;
        goto done;
    }
    /* Outputs may alias inputs: then nothing is computed into an output directly, and
     * outputs still backed by caller memory are staged before any is written. */
    bool overlap = false;
    for (int o = 0; o < no && !overlap; o++)
        for (int i = 0; i < f->ninputs && !overlap; i++)
            overlap = views_overlap(&outputs[o], &inputs[i]);
    r.direct_ok = !overlap && !pl->may_fail;
    for (int i = 0; i < f->ninputs; i++) {
        cpu_val *v = &r.vals[f->inputs[i]];
        v->v = inputs[i];
        v->live = true;
        v->caller = true;
    }
    for (int s = 0; s < p->nsegments; s++)
        if ((st = cpu_exec_segment(&r, p, s)) != SCANFUSE_OK) goto done;

    if (overlap) {
        for (int o = 0; o < no; o++) {
            const cpu_val *v = &r.vals[f->outputs[o]];
            if (!v->caller) continue;
            const sf_value *fv = &f->values[f->outputs[o]];
            int64_t bytes;
            if (!value_bytes(fv, &bytes) || !(staged[o] = sf_malloc((size_t)bytes))) {
                sf_msg(msg, msglen, "cpu: out of memory staging output %d", o);
                st = SCANFUSE_ERROR_MEMORY;
                goto done;
            }
        }
        for (int o = 0; o < no; o++) {
            if (!staged[o]) continue;
            cpu_val *v = &r.vals[f->outputs[o]];
            const sf_value *fv = &f->values[f->outputs[o]];
            sf_view dst;
            sf_view_contiguous(&dst, staged[o], fv->dtype, fv->ndim, fv->shape);
            sf_cpu_copy(&dst, &v->v);
        }
    }
    for (int o = 0; o < no; o++) {
        if (r.written[o]) continue;
        const cpu_val *v = &r.vals[f->outputs[o]];
        SF_ASSERT(v->live && v->v.ndim == outputs[o].ndim);
        if (staged[o]) {
            const sf_value *fv = &f->values[f->outputs[o]];
            sf_view src;
            sf_view_contiguous(&src, staged[o], fv->dtype, fv->ndim, fv->shape);
            sf_cpu_copy(&outputs[o], &src);
        } else {
            sf_cpu_copy(&outputs[o], &v->v);
        }
    }
done:
    if (staged)
        for (int o = 0; o < no; o++) free(staged[o]);
    free(staged);
    free(r.vals);
    free(r.written);
    free(r.io);
    return st;
}

const sf_backend sf_backend_cpu = {"cpu", cpu_supports, cpu_compile, cpu_run_program,
                                   cpu_release};
