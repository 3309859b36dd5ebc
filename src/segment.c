/*
 * segment.c — the segmenter: groups the nodes of a lowered fusion into kernels
 * (sf_segment, see sf.h), in an order the backends can run them.
 *
 * Node classes:
 *  - pointwise ops (cast and where included) fuse with each other and with one anchor;
 *  - gathers (gather, take_along_dim along a dim, index_select) fuse like pointwise
 *    ops, but read their `x` (and index_select its index) whole, so those operands
 *    come from memory;
 *  - scans and reductions are anchors: a tiled kernel holds at most one;
 *  - setup nodes (views and constants) belong to no kernel of their own: each kernel
 *    that reads one runs its own copy on whole values (a view costs nothing, a
 *    constant is computed where it is used), so they never force a value to memory;
 *  - everything else (matmul, pad, triu/tril, sorts, scatter, and a setup node that is
 *    itself a fusion output) is opaque: a kernel of its own, unless it joins a small
 *    kernel (below).
 *
 * Tiled kernels (phase 1) are grown greedily over producer -> consumer edges,
 * consumers in node order: the producer's group joins the consumer's group when the
 * union is still one tiled kernel:
 *  - at most one anchor;
 *  - one iteration space: without an anchor every pointwise node has the same shape;
 *    with a scan every pointwise node has the scan's shape; with a reduction a
 *    pointwise node has the reduction's input shape (prologue) or result shape
 *    (epilogue), and a prologue node never reads the reduction's result or an
 *    epilogue value (that would be a reduction feeding a pointwise op over another,
 *    broadcast shape: it must not fuse, the result goes to memory first);
 *  - no edge between the two groups passes through a view or a gather's whole operand
 *    (those need their input whole, so an earlier kernel writes it) — except a lazy
 *    producer, below;
 *  - the group graph stays acyclic (no path between the two groups through a third).
 * A value read by two kernels is therefore computed once and written once by the
 * kernel that produces it ("several outputs may leave one kernel"), never recomputed.
 *
 * Lazy rows: an index_select along dim 0 whose result is read only as the `x` of
 * gathers along dim 0 (directly or through reshapes that keep dim 0) in one tiled
 * kernel joins that kernel; there its rows are written on demand, just before the tile
 * that reads them (the MoE pattern: the permuted hidden states are written once and
 * the combine reads them back from cache).
 *
 * Small kernels (phase 2): index and sort ops whose results are small, with their
 * small neighbours (every result of every node at most SF_SMALL_VALUE bytes, the
 * kernel's results at most SF_SMALL_KERNEL), form one kernel run op by op: all of it
 * stays in cache, only its outputs go to memory (MoE routing: topk, the scores, the
 * histogram, the cumsums, the counting sort and the inverse permutation).
 *
 * Kernels are ordered topologically, ties broken by their first node, so the order is
 * deterministic.  With options.fuse = 0 every node except weak scalars is a kernel of
 * its own (the op-by-op reference for fused runs).
 */
#include "sf.h"

#include <stdlib.h>
#include <string.h>

/* A value of at most this many bytes counts as small (it stays in L2). */
#define SF_SMALL_VALUE (512 * 1024)
/* A small kernel's results together (they share the cache). */
#define SF_SMALL_KERNEL (2 * 1024 * 1024)

typedef enum ncls { N_PW, N_GATHER, N_SCAN, N_RED, N_SETUP, N_OPAQUE } ncls;

bool sf_node_is_setup(sf_op op) {
    sf_kind k = sf_op_table[op].kind;
    if (k == SF_KIND_CREATION) return true;
    return op == SF_OP_expand || op == SF_OP_permute || op == SF_OP_slice ||
           op == SF_OP_reshape;
}

void sf_segments_free(sf_segment *segs, int n) {
    if (!segs) return;
    for (int s = 0; s < n; s++) {
        free(segs[s].nodes);
        free(segs[s].inputs);
        free(segs[s].outputs);
    }
    free(segs);
}

typedef struct seg_ctx {
    const scanfuse_fusion *f;
    int nn, nv;
    ncls *cls;       /* per node */
    int *uf;         /* per node: union-find parent (compute nodes only) */
    bool *is_out;    /* per value: a fusion output */
    bool *lazy;      /* per node: an index_select materialized lazily by its consumer */
    bool *small;     /* per group root: a small kernel (op by op) */
    int *mark, *stack; /* scratch for the group graph */
    int *gid;        /* per group root: dense group id (after grouping) */
} seg_ctx;

static int find(seg_ctx *c, int n) {
    while (c->uf[n] != n) {
        c->uf[n] = c->uf[c->uf[n]];
        n = c->uf[n];
    }
    return n;
}

static bool same_shape(const sf_value *a, const sf_value *b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

static int64_t value_bytes(const scanfuse_fusion *f, int32_t id) {
    const sf_value *v = &f->values[id];
    return sf_value_numel(v) * (int64_t)scanfuse_dtype_size(v->dtype);
}

/* Is input k of node n read whole (a gather's x, index_select's index)? */
static bool whole_input(const sf_node *n, int k) {
    if (n->op == SF_OP_index_select) return true;
    if (n->op == SF_OP_gather || n->op == SF_OP_take_along_dim) return k == 0;
    return false;
}

/* The compute node whose result a value is, looking through setup views; -1 for
 * fusion inputs and constants.  *via_view tells whether a view was crossed. */
static int compute_producer(const seg_ctx *c, int32_t v, bool *via_view) {
    const scanfuse_fusion *f = c->f;
    *via_view = false;
    for (;;) {
        int p = f->values[v].producer;
        if (p < 0) return -1;
        if (c->cls[p] != N_SETUP) return p;
        const sf_node *n = &f->nodes[p];
        if (sf_op_table[n->op].kind == SF_KIND_CREATION || n->nin < 1) return -1;
        *via_view = true;
        v = n->in[0];
    }
}

static ncls classify(const seg_ctx *c, int i, bool fuse) {
    const sf_node *n = &c->f->nodes[i];
    bool output = false;
    for (int k = 0; k < n->nout; k++) output |= c->is_out[n->out[k]];
    if (!fuse) return (n->op == SF_OP_scalar && !output) ? N_SETUP : N_OPAQUE;
    if (sf_node_is_setup(n->op)) return output ? N_OPAQUE : N_SETUP;
    if (n->op == SF_OP_gather || n->op == SF_OP_index_select ||
        (n->op == SF_OP_take_along_dim && n->a.has_dim))
        return N_GATHER;
    switch (sf_op_table[n->op].kind) {
    case SF_KIND_POINTWISE: return N_PW;
    case SF_KIND_SCAN: return N_SCAN;
    case SF_KIND_REDUCTION: return N_RED;
    case SF_KIND_INDEX: case SF_KIND_SHAPE: case SF_KIND_CREATION: case SF_KIND_CONTRACTION:
        break;
    }
    return N_OPAQUE;
}

/* ---- the group graph ---- */

/* Group edges: for each compute node, the groups of the compute producers of its
 * inputs.  Calls visit(ctx, from_group, to_group, via_view) for each; via_view also
 * marks a gather's whole operand. */
typedef void (*edge_fn)(void *ctx, int from, int to, bool via_view);

static void for_each_edge(seg_ctx *c, edge_fn visit, void *ctx) {
    const scanfuse_fusion *f = c->f;
    for (int i = 0; i < c->nn; i++) {
        if (c->cls[i] == N_SETUP) continue;
        int to = find(c, i);
        const sf_node *n = &f->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            bool vv;
            int p = compute_producer(c, n->in[k], &vv);
            if (p < 0) continue;
            vv |= c->cls[i] == N_GATHER && whole_input(n, k);
            int from = find(c, p);
            if (from != to || vv) visit(ctx, from, to, vv);
        }
    }
}

typedef struct path_ctx {
    int a, b;
    bool view_between; /* an edge a<->b through a view or a whole operand */
    int *from, *to;    /* the edges */
    int nedges, cap;
    bool oom;
} path_ctx;

static void collect_edge(void *vctx, int from, int to, bool via_view) {
    path_ctx *pc = vctx;
    bool fa = from == pc->a || from == pc->b, ta = to == pc->a || to == pc->b;
    if (via_view && fa && ta && from != to) pc->view_between = true;
    if (from == to) return;
    if (pc->nedges == pc->cap) {
        int cap = pc->cap ? 2 * pc->cap : 64;
        int *nf = sf_realloc(pc->from, (size_t)cap * sizeof(int));
        if (!nf) {
            pc->oom = true;
            return;
        }
        pc->from = nf;
        int *nt = sf_realloc(pc->to, (size_t)cap * sizeof(int));
        if (!nt) {
            pc->oom = true;
            return;
        }
        pc->to = nt;
        pc->cap = cap;
    }
    pc->from[pc->nedges] = from;
    pc->to[pc->nedges] = to;
    pc->nedges++;
}

/* Is there a path src -> ... -> dst that leaves src through a group other than dst?
 * (A direct edge src -> dst is fine: the merge absorbs it.) */
static bool indirect_path(seg_ctx *c, const path_ctx *pc, int src, int dst) {
    memset(c->mark, 0, (size_t)c->nn * sizeof *c->mark);
    int sp = 0;
    for (int e = 0; e < pc->nedges; e++)
        if (pc->from[e] == src && pc->to[e] != dst && !c->mark[pc->to[e]]) {
            c->mark[pc->to[e]] = 1;
            c->stack[sp++] = pc->to[e];
        }
    while (sp > 0) {
        int g = c->stack[--sp];
        if (g == dst) return true;
        for (int e = 0; e < pc->nedges; e++)
            if (pc->from[e] == g && !c->mark[pc->to[e]]) {
                c->mark[pc->to[e]] = 1;
                c->stack[sp++] = pc->to[e];
            }
    }
    return false;
}

/* Would merging groups a and b keep the group graph acyclic (and, unless allow_view,
 * cross no view)?  *oom on allocation failure. */
static bool graph_ok(seg_ctx *c, int a, int b, bool allow_view, bool *oom) {
    path_ctx pc = {a, b, false, NULL, NULL, 0, 0, false};
    for_each_edge(c, collect_edge, &pc);
    bool ok = !pc.oom && (allow_view || !pc.view_between) && !indirect_path(c, &pc, a, b) &&
              !indirect_path(c, &pc, b, a);
    *oom = pc.oom;
    free(pc.from);
    free(pc.to);
    return ok;
}

/* ---- phase 1: tiled kernels ---- */

/* The anchor of group g (a root), or -1 (-2: several); *opaque when it holds a node
 * that cannot be tiled. */
static int group_anchor(seg_ctx *c, int g, bool *opaque) {
    int a = -1;
    *opaque = c->small[g];
    for (int i = 0; i < c->nn; i++) {
        if (c->cls[i] == N_SETUP || find(c, i) != g) continue;
        if (c->cls[i] == N_OPAQUE) *opaque = true;
        if (c->cls[i] == N_SCAN || c->cls[i] == N_RED) a = a < 0 ? i : -2;
    }
    return a;
}

/* Does the union of groups ga and gb (roots) form one iteration space?  anchor is the
 * union's anchor node or -1; node `skip` (a lazy producer) stays out of the spaces. */
static bool spaces_ok(seg_ctx *c, int ga, int gb, int anchor, int skip) {
    const scanfuse_fusion *f = c->f;
    const sf_value *dom = NULL, *res = NULL;
    if (anchor >= 0) {
        dom = &f->values[f->nodes[anchor].in[0]];
        res = &f->values[f->nodes[anchor].out[0]];
    }
    bool split = dom && !same_shape(dom, res); /* a reduction with two spaces */
    for (int i = 0; i < c->nn; i++) {
        if ((c->cls[i] != N_PW && c->cls[i] != N_GATHER) || c->lazy[i] || i == skip) continue;
        int g = find(c, i);
        if (g != ga && g != gb) continue;
        const sf_value *o = &f->values[f->nodes[i].out[0]];
        if (!dom) {
            dom = o; /* no anchor: the first pointwise node sets the shape */
            continue;
        }
        if (!res) {
            if (!same_shape(o, dom)) return false;
            continue;
        }
        bool in_dom = same_shape(o, dom), in_res = !in_dom && same_shape(o, res);
        if (!in_dom && !in_res) return false;
        if (!split) continue;
        /* Reads inside the union must stay within the node's space. */
        const sf_node *n = &f->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            if (c->cls[i] == N_GATHER && whole_input(n, k)) continue;
            int p = f->values[n->in[k]].producer;
            if (p < 0 || c->cls[p] == N_SETUP) continue;
            int gp = find(c, p);
            if (gp != ga && gp != gb) continue;
            bool p_res = p == anchor ||
                         ((c->cls[p] == N_PW || c->cls[p] == N_GATHER) &&
                          !same_shape(&f->values[f->nodes[p].out[0]], dom));
            if (p_res != in_res) return false;
        }
    }
    return true;
}

/* Merges group ga into gb when the union is one tiled kernel (lazy: ga is the lazy
 * producer `lazy_node` joining through its view).  Returns false on OOM. */
static bool try_merge(seg_ctx *c, int ga, int gb, int lazy_node) {
    if (ga == gb) return true;
    bool oa, ob;
    int aa = group_anchor(c, ga, &oa), ab = group_anchor(c, gb, &ob);
    if (oa || ob || aa == -2 || ab == -2) return true;
    if (aa >= 0 && ab >= 0) return true; /* two anchors never share a kernel */
    int anchor = aa >= 0 ? aa : ab;
    if (!spaces_ok(c, ga, gb, anchor, lazy_node)) return true;
    bool oom;
    bool ok = graph_ok(c, ga, gb, lazy_node >= 0, &oom);
    if (oom) return false;
    if (ok) {
        c->uf[ga] = gb;
        if (lazy_node >= 0) c->lazy[lazy_node] = true;
    }
    return true;
}

/* Can index_select node p be materialized lazily in group g?  Every reader of its
 * result, through reshapes that keep dim 0, must be a gather along dim 0 reading it as
 * x, in group g; and g may hold no other lazy producer. */
static bool readers_ok(seg_ctx *c, int32_t v, int64_t rows, int g, int depth) {
    const scanfuse_fusion *f = c->f;
    if (depth > 8) return false;
    for (int i = 0; i < c->nn; i++) {
        const sf_node *n = &f->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            if (n->in[k] != v) continue;
            if (c->cls[i] == N_SETUP && n->op == SF_OP_reshape) {
                const sf_value *o = &f->values[n->out[0]];
                if (o->ndim < 1 || o->shape[0] != rows) return false;
                if (!readers_ok(c, n->out[0], rows, g, depth + 1)) return false;
                continue;
            }
            if (c->cls[i] != N_GATHER || k != 0 || n->a.dim != 0 || c->lazy[i] ||
                find(c, i) != g)
                return false;
        }
    }
    return true;
}

static bool lazy_ok(seg_ctx *c, int p, int g) {
    const scanfuse_fusion *f = c->f;
    const sf_node *n = &f->nodes[p];
    if (n->op != SF_OP_index_select || n->a.dim != 0 || c->cls[p] != N_GATHER) return false;
    for (int i = 0; i < c->nn; i++) /* alone in its group */
        if (i != p && c->cls[i] != N_SETUP && find(c, i) == find(c, p)) return false;
    for (int i = 0; i < c->nn; i++)
        if (c->lazy[i] && find(c, i) == g) return false;
    const sf_value *v = &f->values[n->out[0]];
    if (v->ndim < 1) return false;
    return readers_ok(c, n->out[0], v->shape[0], g, 0);
}

static scanfuse_status phase_tiled(seg_ctx *c) {
    const scanfuse_fusion *f = c->f;
    for (int i = 0; i < c->nn; i++) {
        if (c->cls[i] == N_SETUP || c->cls[i] == N_OPAQUE) continue;
        const sf_node *n = &f->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            bool vv;
            int prod = compute_producer(c, n->in[k], &vv);
            if (prod < 0 || c->cls[prod] == N_SETUP || c->cls[prod] == N_OPAQUE) continue;
            int lazy_node = -1;
            if (c->cls[i] == N_GATHER && whole_input(n, k)) {
                if (k != 0 || !lazy_ok(c, prod, find(c, i))) continue;
                lazy_node = prod;
            } else if (vv) {
                continue;
            }
            if (!try_merge(c, find(c, prod), find(c, i), lazy_node)) return SCANFUSE_ERROR_MEMORY;
        }
    }
    return SCANFUSE_OK;
}

/* ---- phase 2: small kernels ---- */

/* Bytes of group g's results, or -1 when a node is not small (or cannot run in a small
 * kernel); *has_index when it holds an index or sort op. */
static int64_t small_bytes(seg_ctx *c, int g, bool *has_index) {
    const scanfuse_fusion *f = c->f;
    int64_t total = 0;
    *has_index = c->small[g];
    for (int i = 0; i < c->nn; i++) {
        if (c->cls[i] == N_SETUP || find(c, i) != g) continue;
        const sf_node *n = &f->nodes[i];
        sf_kind k = sf_op_table[n->op].kind;
        if (k == SF_KIND_CONTRACTION || c->lazy[i]) return -1;
        if (k == SF_KIND_INDEX) *has_index = true;
        for (int r = 0; r < n->nout; r++) {
            int64_t b = value_bytes(f, n->out[r]);
            if (b > SF_SMALL_VALUE) return -1;
            total += b;
        }
    }
    return total;
}

static scanfuse_status phase_small(seg_ctx *c) {
    const scanfuse_fusion *f = c->f;
    for (int i = 0; i < c->nn; i++) {
        if (c->cls[i] == N_SETUP) continue;
        const sf_node *n = &f->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            bool vv;
            int prod = compute_producer(c, n->in[k], &vv);
            if (prod < 0 || c->cls[prod] == N_SETUP) continue;
            int ga = find(c, prod), gb = find(c, i);
            if (ga == gb) continue;
            bool ia, ib;
            int64_t ba = small_bytes(c, ga, &ia), bb = small_bytes(c, gb, &ib);
            if (ba < 0 || bb < 0 || !(ia || ib) || ba + bb > SF_SMALL_KERNEL) continue;
            bool oom;
            /* op by op, a view inside the kernel is fine */
            bool ok = graph_ok(c, ga, gb, true, &oom);
            if (oom) return SCANFUSE_ERROR_MEMORY;
            if (!ok) continue;
            c->uf[ga] = gb;
            c->small[gb] = true;
        }
    }
    return SCANFUSE_OK;
}

/* ---- building the segment array ---- */

/* Adds node i and the setup nodes it reads (transitively) to the set. */
static void add_with_setup(const seg_ctx *c, int i, bool *in) {
    if (in[i]) return;
    in[i] = true;
    const sf_node *n = &c->f->nodes[i];
    for (int k = 0; k < n->nin; k++) {
        int p = c->f->values[n->in[k]].producer;
        if (p >= 0 && c->cls[p] == N_SETUP) add_with_setup(c, p, in);
    }
}

/* Fills one segment's node list and kind from the membership set `in`. */
static scanfuse_status fill_segment(seg_ctx *c, sf_segment *s, const bool *in, bool small) {
    const scanfuse_fusion *f = c->f;
    int cnt = 0;
    for (int i = 0; i < c->nn; i++) cnt += in[i];
    s->nodes = sf_malloc((size_t)(cnt ? cnt : 1) * sizeof(int));
    if (!s->nodes) return SCANFUSE_ERROR_MEMORY;
    s->nnodes = 0;
    s->anchor = -1;
    s->lazy = -1;
    int ncompute = 0;
    bool all_pw = true;
    for (int i = 0; i < c->nn; i++) {
        if (!in[i]) continue;
        s->nodes[s->nnodes++] = i;
        if (c->cls[i] == N_SETUP) continue;
        ncompute++;
        if (c->lazy[i]) s->lazy = i;
        /* The kind follows the ops (also with fuse = 0, where every node is opaque to
         * the grouping): a lone scan is still a scan kernel. */
        sf_kind k = sf_op_table[f->nodes[i].op].kind;
        if ((k == SF_KIND_SCAN || k == SF_KIND_REDUCTION) && !sf_node_is_setup(f->nodes[i].op))
            s->anchor = i;
        if (k != SF_KIND_POINTWISE && c->cls[i] != N_GATHER) all_pw = false;
    }
    if (small && ncompute > 1) {
        s->kind = SF_SEG_SMALL;
        s->anchor = -1;
    } else if (s->anchor >= 0) {
        s->kind = sf_op_table[f->nodes[s->anchor].op].kind == SF_KIND_SCAN ? SF_SEG_SCAN
                                                                          : SF_SEG_REDUCE;
    } else if (all_pw && ncompute > 0) {
        s->kind = SF_SEG_POINTWISE;
    } else {
        s->kind = SF_SEG_OPAQUE;
    }
    return SCANFUSE_OK;
}

/* Inputs, outputs and bytes of every segment, once all node lists exist. */
static scanfuse_status fill_io(seg_ctx *c, sf_segment *segs, int nseg) {
    const scanfuse_fusion *f = c->f;
    int nv = c->nv;
    /* producer segment of each value computed by a compute node */
    int *prod_seg = sf_malloc((size_t)(nv ? nv : 1) * sizeof(int));
    bool *read_elsewhere = sf_calloc((size_t)(nv ? nv : 1), sizeof(bool));
    int *seen = sf_malloc((size_t)(nv ? nv : 1) * sizeof(int));
    if (!prod_seg || !read_elsewhere || !seen) {
        free(prod_seg);
        free(read_elsewhere);
        free(seen);
        return SCANFUSE_ERROR_MEMORY;
    }
    for (int v = 0; v < nv; v++) {
        prod_seg[v] = -1;
        seen[v] = -1;
    }
    for (int s = 0; s < nseg; s++)
        for (int j = 0; j < segs[s].nnodes; j++) {
            int i = segs[s].nodes[j];
            if (c->cls[i] == N_SETUP) continue;
            for (int k = 0; k < f->nodes[i].nout; k++) prod_seg[f->nodes[i].out[k]] = s;
        }
    for (int s = 0; s < nseg; s++)
        for (int j = 0; j < segs[s].nnodes; j++) {
            const sf_node *n = &f->nodes[segs[s].nodes[j]];
            for (int k = 0; k < n->nin; k++) {
                int32_t v = n->in[k];
                if (prod_seg[v] >= 0 && prod_seg[v] != s) read_elsewhere[v] = true;
            }
        }
    scanfuse_status st = SCANFUSE_OK;
    for (int s = 0; s < nseg && st == SCANFUSE_OK; s++) {
        sf_segment *seg = &segs[s];
        int nin = 0, nout = 0;
        /* first pass counts, second fills */
        for (int pass = 0; pass < 2; pass++) {
            nin = nout = 0;
            for (int j = 0; j < seg->nnodes; j++) {
                int i = seg->nodes[j];
                const sf_node *n = &f->nodes[i];
                for (int k = 0; k < n->nin; k++) {
                    int32_t v = n->in[k];
                    int p = f->values[v].producer;
                    bool inside = false;
                    for (int q = 0; q < seg->nnodes && !inside; q++) inside = seg->nodes[q] == p;
                    if (inside || f->values[v].weak) continue;
                    if (seen[v] == 2 * s + pass) continue;
                    seen[v] = 2 * s + pass;
                    if (pass) {
                        seg->inputs[nin] = v;
                        seg->bytes_read += value_bytes(f, v);
                    }
                    nin++;
                }
                if (c->cls[i] == N_SETUP) continue;
                for (int k = 0; k < n->nout; k++) {
                    int32_t v = n->out[k];
                    /* a lazy producer's rows are written whole, whatever reads them */
                    if (!c->is_out[v] && !read_elsewhere[v] && !c->lazy[i]) continue;
                    if (pass) {
                        seg->outputs[nout] = v;
                        seg->bytes_written += value_bytes(f, v);
                    }
                    nout++;
                }
            }
            if (pass == 0) {
                seg->inputs = sf_malloc((size_t)(nin ? nin : 1) * sizeof(int32_t));
                seg->outputs = sf_malloc((size_t)(nout ? nout : 1) * sizeof(int32_t));
                seg->bytes_read = seg->bytes_written = 0;
                if (!seg->inputs || !seg->outputs) {
                    st = SCANFUSE_ERROR_MEMORY;
                    break;
                }
            }
        }
        seg->ninputs = nin;
        seg->noutputs = nout;
    }
    free(prod_seg);
    free(read_elsewhere);
    free(seen);
    return st;
}

typedef struct order_ctx {
    int *indeg;
    int ng;
    const int *dense; /* root node -> dense group id */
    bool *adj;        /* ng x ng */
} order_ctx;

static void order_edge(void *vctx, int from, int to, bool via_view) {
    (void)via_view;
    order_ctx *o = vctx;
    if (from == to) return;
    int a = o->dense[from], b = o->dense[to];
    if (!o->adj[(size_t)a * (size_t)o->ng + (size_t)b]) {
        o->adj[(size_t)a * (size_t)o->ng + (size_t)b] = true;
        o->indeg[b]++;
    }
}

scanfuse_status sf_segment_program(sf_program *p) {
    const scanfuse_fusion *f = p->fusion;
    bool fuse = p->options.fuse != 0;
    seg_ctx c;
    memset(&c, 0, sizeof c);
    c.f = f;
    c.nn = f->nnodes;
    c.nv = f->nvalues;
    size_t nn1 = (size_t)(c.nn ? c.nn : 1), nv1 = (size_t)(c.nv ? c.nv : 1);
    c.cls = sf_malloc(nn1 * sizeof *c.cls);
    c.uf = sf_malloc(nn1 * sizeof *c.uf);
    c.is_out = sf_calloc(nv1, sizeof *c.is_out);
    c.lazy = sf_calloc(nn1, sizeof *c.lazy);
    c.small = sf_calloc(nn1, sizeof *c.small);
    c.mark = sf_malloc(nn1 * sizeof *c.mark);
    c.stack = sf_malloc(nn1 * sizeof *c.stack);
    c.gid = sf_malloc(nn1 * sizeof *c.gid);
    int *first = sf_malloc(nn1 * sizeof(int)), *order = sf_malloc(nn1 * sizeof(int));
    int *indeg = sf_calloc(nn1, sizeof(int));
    bool *in = sf_calloc(nn1, sizeof(bool)), *placed = sf_calloc(nn1, sizeof(bool));
    bool *adj = NULL;
    sf_segment *segs = NULL;
    int ng = 0;
    scanfuse_status st = SCANFUSE_ERROR_MEMORY;
    if (!c.cls || !c.uf || !c.is_out || !c.lazy || !c.small || !c.mark || !c.stack || !c.gid ||
        !first || !order || !indeg || !in || !placed)
        goto done;
    for (int o = 0; o < f->noutputs; o++) c.is_out[f->outputs[o]] = true;
    for (int i = 0; i < c.nn; i++) {
        c.cls[i] = classify(&c, i, fuse);
        c.uf[i] = i;
    }
    if (fuse && (phase_tiled(&c) != SCANFUSE_OK || phase_small(&c) != SCANFUSE_OK)) goto done;

    /* Dense group ids, numbered by their first node. */
    for (int i = 0; i < c.nn; i++) c.gid[i] = -1;
    for (int i = 0; i < c.nn; i++) {
        if (c.cls[i] == N_SETUP) continue;
        int r = find(&c, i);
        if (c.gid[r] < 0) {
            c.gid[r] = ng;
            first[ng] = i;
            ng++;
        }
    }
    /* Topological order of the groups; among ready groups the one whose first node
     * comes first. */
    adj = sf_calloc((size_t)(ng ? ng : 1) * (size_t)(ng ? ng : 1), sizeof(bool));
    if (!adj) goto done;
    order_ctx oc = {indeg, ng, c.gid, adj};
    for_each_edge(&c, order_edge, &oc);
    for (int k = 0; k < ng; k++) {
        int pick = -1;
        for (int g = 0; g < ng && pick < 0; g++)
            if (!placed[g] && indeg[g] == 0) pick = g;
        SF_ASSERT(pick >= 0); /* the merges keep the group graph acyclic */
        placed[pick] = true;
        order[k] = pick;
        for (int g = 0; g < ng; g++)
            if (adj[(size_t)pick * (size_t)ng + (size_t)g]) indeg[g]--;
    }

    segs = sf_calloc((size_t)(ng ? ng : 1), sizeof *segs);
    if (!segs) goto done;
    for (int k = 0; k < ng; k++) {
        int g = order[k], root = first[g];
        memset(in, 0, nn1 * sizeof *in);
        for (int i = 0; i < c.nn; i++)
            if (c.cls[i] != N_SETUP && c.gid[find(&c, i)] == g) add_with_setup(&c, i, in);
        root = find(&c, root);
        if (fill_segment(&c, &segs[k], in, c.small[root]) != SCANFUSE_OK) goto done_free;
    }
    if (fill_io(&c, segs, ng) != SCANFUSE_OK) goto done_free;
    sf_segments_free(p->segments, p->nsegments);
    p->segments = segs;
    p->nsegments = ng;
    segs = NULL;
    st = SCANFUSE_OK;
done_free:
    if (segs) sf_segments_free(segs, ng);
done:
    free(c.cls);
    free(c.uf);
    free(c.is_out);
    free(c.lazy);
    free(c.small);
    free(c.mark);
    free(c.stack);
    free(c.gid);
    free(first);
    free(order);
    free(indeg);
    free(in);
    free(placed);
    free(adj);
    return st;
}
