/*
 * cpu_backend.c — the CPU backend's vtable (sf_backend_cpu): compile-time planning and
 * the run-time node loop that owns every intermediate buffer.
 *
 * A run walks the lowered fusion's nodes in order (op by op for now; the segments a
 * later fusing backend will use are ignored).  Every value is an sf_view:
 *  - fusion inputs are the caller's views, never written;
 *  - expand, permute, slice (and reshape of a contiguous value) are views of their
 *    input's memory, copying nothing;
 *  - full is a one-element buffer broadcast with stride 0;
 *  - every other result is a fresh contiguous buffer of its own dtype.
 * Buffers are reference counted by the values that view them and freed after the
 * last node that reads them.  Outputs are copied into the caller's views only after
 * every node succeeded; a value backed by caller memory is first copied into a buffer
 * when any output view overlaps any input view (outputs may alias inputs).
 *
 * Invariants: a node's inputs are live when it runs; a failed run frees everything
 * and writes nothing; weak scalar literals feeding a pointwise op are converted
 * straight from the literal to the op's common dtype (docs/OPS.md).
 */
#include "cpu.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct cpu_plan {
    int nvalues;
    int32_t *reads;       /* per value: the number of node inputs that read it */
    bool *pinned;         /* per value: an output (kept until the end) */
    scanfuse_dtype *cdt;  /* per node: the common dtype of a pointwise op */
} cpu_plan;

/* Run-time state of one value. */
typedef struct cpu_val {
    sf_view v;
    int32_t buf;   /* the value id whose allocation backs v, or -1 (caller memory) */
    bool live;
} cpu_val;

typedef struct cpu_run {
    const scanfuse_fusion *f;
    const cpu_plan *plan;
    cpu_val *vals;
    void **mem;      /* per value id: the allocation it made (or NULL) */
    int32_t *refs;   /* per value id: the number of live values viewing mem[id] */
    int32_t *left;   /* per value: reads still to come */
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

static void cpu_plan_free(cpu_plan *pl) {
    if (!pl) return;
    free(pl->reads);
    free(pl->pinned);
    free(pl->cdt);
    free(pl);
}

static scanfuse_status cpu_compile(sf_program *p, char *msg, size_t msglen) {
    const scanfuse_fusion *f = p->fusion;
    cpu_plan *pl = sf_calloc(1, sizeof *pl);
    if (!pl) goto oom;
    pl->nvalues = f->nvalues;
    pl->reads = sf_calloc((size_t)f->nvalues, sizeof *pl->reads);
    pl->pinned = sf_calloc((size_t)f->nvalues, sizeof *pl->pinned);
    pl->cdt = sf_calloc((size_t)f->nnodes, sizeof *pl->cdt);
    if (!pl->reads || !pl->pinned || !pl->cdt) goto oom;
    for (int i = 0; i < f->nnodes; i++) {
        const sf_node *n = &f->nodes[i];
        scanfuse_status st = cpu_supports(f, i, msg, msglen);
        if (st != SCANFUSE_OK) {
            cpu_plan_free(pl);
            return st;
        }
        for (int k = 0; k < n->nin; k++) pl->reads[n->in[k]]++;
        pl->cdt[i] = sf_op_table[n->op].kind == SF_KIND_POINTWISE ? common_dtype(f, n)
                                                                   : SCANFUSE_DTYPE_NONE;
    }
    for (int i = 0; i < f->noutputs; i++) pl->pinned[f->outputs[i]] = true;
    p->backend_state = pl;
    return SCANFUSE_OK;
oom:
    cpu_plan_free(pl);
    sf_msg(msg, msglen, "cpu: out of memory");
    return SCANFUSE_ERROR_MEMORY;
}

static void cpu_release(sf_program *p) {
    cpu_plan_free(p->backend_state);
    p->backend_state = NULL;
}

/* ---- buffers ---- */

/* Drops one reference to the buffer behind value id. */
static void val_drop(cpu_run *r, int32_t id) {
    cpu_val *v = &r->vals[id];
    if (!v->live) return;
    v->live = false;
    if (v->buf >= 0 && --r->refs[v->buf] == 0) {
        free(r->mem[v->buf]);
        r->mem[v->buf] = NULL;
    }
}

/* Allocates a contiguous buffer for value id (shape and dtype of the value). */
static scanfuse_status val_alloc(cpu_run *r, int32_t id) {
    const sf_value *fv = &r->f->values[id];
    int64_t n = sf_value_numel(fv), bytes;
    if (sf_mul_overflow(n, (int64_t)scanfuse_dtype_size(fv->dtype), &bytes) ||
        (uint64_t)bytes > (uint64_t)SIZE_MAX) {
        sf_msg(r->msg, r->msglen, "cpu: a %lld-element value is too large", (long long)n);
        return SCANFUSE_ERROR_MEMORY;
    }
    void *p = sf_malloc((size_t)bytes);
    if (!p) {
        sf_msg(r->msg, r->msglen, "cpu: out of memory allocating %lld bytes", (long long)bytes);
        return SCANFUSE_ERROR_MEMORY;
    }
    r->mem[id] = p;
    r->refs[id] = 1;
    cpu_val *v = &r->vals[id];
    sf_view_contiguous(&v->v, p, fv->dtype, fv->ndim, fv->shape);
    v->buf = id;
    v->live = true;
    return SCANFUSE_OK;
}

/* Makes value id a view `view` of the memory behind value src. */
static void val_alias(cpu_run *r, int32_t id, int32_t src, const sf_view *view) {
    cpu_val *v = &r->vals[id];
    v->v = *view;
    v->buf = r->vals[src].buf;
    v->live = true;
    if (v->buf >= 0) r->refs[v->buf]++;
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
    scanfuse_status st = SCANFUSE_OK;
    switch (n->op) {
    /* scans */
    case SF_OP_cumsum: case SF_OP_cumprod: case SF_OP_logcumsumexp:
        if ((st = val_alloc(r, o0)) != SCANFUSE_OK) return st;
        return sf_cpu_scan(n, &in[0], &r->vals[o0].v, NULL, r->msg, r->msglen);
    case SF_OP_cummax: case SF_OP_cummin:
        if ((st = val_alloc(r, o0)) != SCANFUSE_OK) return st;
        if ((st = val_alloc(r, n->out[1])) != SCANFUSE_OK) return st;
        return sf_cpu_scan(n, &in[0], &r->vals[o0].v, &r->vals[n->out[1]].v, r->msg,
                           r->msglen);

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
        if ((st = val_alloc(r, o0)) != SCANFUSE_OK) return st;
        return sf_cpu_pointwise(n, r->plan->cdt[i], in, lit, &r->vals[o0].v, r->msg,
                                r->msglen);
    }
    case SF_OP_cast:
        if ((st = val_alloc(r, o0)) != SCANFUSE_OK) return st;
        sf_cpu_copy(&r->vals[o0].v, &in[0]);
        return SCANFUSE_OK;

    /* creation */
    case SF_OP_scalar: case SF_OP_arange: case SF_OP_iota:
        if ((st = val_alloc(r, o0)) != SCANFUSE_OK) return st;
        sf_cpu_create(n, &r->vals[o0].v);
        return SCANFUSE_OK;
    case SF_OP_full: {
        /* one element broadcast over the shape: nothing bigger is ever written */
        void *p = sf_malloc(8);
        if (!p) {
            sf_msg(r->msg, r->msglen, "cpu: out of memory");
            return SCANFUSE_ERROR_MEMORY;
        }
        sf_cpu_store_literal(p, res->dtype, &n->a.value);
        cpu_val *v = &r->vals[o0];
        r->mem[o0] = p;
        r->refs[o0] = 1;
        v->buf = o0;
        v->live = true;
        v->v.data = p;
        v->v.dtype = res->dtype;
        v->v.ndim = res->ndim;
        for (int d = 0; d < res->ndim; d++) {
            v->v.shape[d] = res->shape[d];
            v->v.strides[d] = 0;
        }
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
        if ((st = val_alloc(r, o0)) != SCANFUSE_OK) return st;
        sf_view flat;
        sf_view_contiguous(&flat, r->vals[o0].v.data, res->dtype, in[0].ndim, in[0].shape);
        sf_cpu_copy(&flat, &in[0]);
        return SCANFUSE_OK;
    }
    case SF_OP_pad:
        if ((st = val_alloc(r, o0)) != SCANFUSE_OK) return st;
        sf_cpu_pad(n, &in[0], &r->vals[o0].v);
        return SCANFUSE_OK;
    case SF_OP_triu: case SF_OP_tril:
        if ((st = val_alloc(r, o0)) != SCANFUSE_OK) return st;
        sf_cpu_tri(n, &in[0], &r->vals[o0].v);
        return SCANFUSE_OK;

    /* reductions and contraction */
    case SF_OP_sum: case SF_OP_prod: case SF_OP_max: case SF_OP_min: case SF_OP_mean:
    case SF_OP_argmax: case SF_OP_argmin:
        if ((st = val_alloc(r, o0)) != SCANFUSE_OK) return st;
        return sf_cpu_reduce(n, &in[0], &r->vals[o0].v, r->msg, r->msglen);
    case SF_OP_matmul:
        if ((st = val_alloc(r, o0)) != SCANFUSE_OK) return st;
        return sf_cpu_matmul(n, &in[0], &in[1], &r->vals[o0].v, r->msg, r->msglen);

    case SF_NUM_OPS: break;
    }
    sf_msg(r->msg, r->msglen, "cpu: unknown op %d", (int)n->op);
    return SCANFUSE_ERROR_UNSUPPORTED;
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
    const cpu_plan *pl = p->backend_state;
    if (!pl || pl->nvalues != f->nvalues) {
        sf_msg(msg, msglen, "cpu: program not compiled");
        return SCANFUSE_ERROR_STATE;
    }
    int nv = f->nvalues;
    cpu_run r = {f, pl, NULL, NULL, NULL, NULL, msg, msglen};
    r.vals = sf_calloc((size_t)nv, sizeof *r.vals);
    r.mem = sf_calloc((size_t)nv, sizeof *r.mem);
    r.refs = sf_calloc((size_t)nv, sizeof *r.refs);
    r.left = sf_calloc((size_t)nv, sizeof *r.left);
    scanfuse_status st = SCANFUSE_OK;
    if (!r.vals || !r.mem || !r.refs || !r.left) {
        sf_msg(msg, msglen, "cpu: out of memory");
        st = SCANFUSE_ERROR_MEMORY;
        goto done;
    }
    memcpy(r.left, pl->reads, (size_t)nv * sizeof *r.left);
    for (int i = 0; i < f->ninputs; i++) {
        cpu_val *v = &r.vals[f->inputs[i]];
        v->v = inputs[i];
        v->buf = -1;
        v->live = true;
    }
    for (int i = 0; i < f->nnodes && st == SCANFUSE_OK; i++) {
        st = cpu_exec_node(&r, i);
        if (st != SCANFUSE_OK) break;
        const sf_node *n = &f->nodes[i];
        /* free what no later node reads (results nobody reads, inputs read last here) */
        for (int k = 0; k < n->nin; k++) {
            int32_t id = n->in[k];
            if (--r.left[id] == 0 && !pl->pinned[id]) val_drop(&r, id);
        }
        for (int k = 0; k < n->nout; k++) {
            int32_t id = n->out[k];
            if (r.left[id] == 0 && !pl->pinned[id]) val_drop(&r, id);
        }
    }
    if (st != SCANFUSE_OK) goto done;

    /* Outputs may alias inputs: if any output view overlaps any input view, first move
     * every output still backed by caller memory into a buffer of its own. */
    bool overlap = false;
    for (int o = 0; o < f->noutputs && !overlap; o++)
        for (int i = 0; i < f->ninputs && !overlap; i++)
            overlap = views_overlap(&outputs[o], &inputs[i]);
    if (overlap) {
        for (int o = 0; o < f->noutputs; o++) {
            int32_t id = f->outputs[o];
            cpu_val *v = &r.vals[id];
            if (v->buf >= 0) continue;
            sf_view src = v->v;
            v->live = false;
            if ((st = val_alloc(&r, id)) != SCANFUSE_OK) goto done;
            sf_view dst = v->v;
            dst.ndim = src.ndim;
            for (int d = 0; d < src.ndim; d++) dst.shape[d] = src.shape[d];
            sf_cpu_copy(&dst, &src);
        }
    }
    for (int o = 0; o < f->noutputs; o++) {
        const cpu_val *v = &r.vals[f->outputs[o]];
        SF_ASSERT(v->live && v->v.ndim == outputs[o].ndim);
        sf_cpu_copy(&outputs[o], &v->v);
    }
done:
    if (r.vals && r.mem) {
        for (int id = 0; id < nv; id++) free(r.mem[id]);
    }
    free(r.vals);
    free(r.mem);
    free(r.refs);
    free(r.left);
    return st;
}

const sf_backend sf_backend_cpu = {"cpu", cpu_supports, cpu_compile, cpu_run_program,
                                   cpu_release};
