/*
 * cpu_fused.c — tile-by-tile execution of a fused segment (segment.c) on the CPU.
 *
 * A fused segment has an iteration domain D: the anchor's input shape (a scan or
 * reduction), or the common shape of a pointwise chain.  Some dims of D are *whole*:
 * the scanned dim, the reduced dims, and the dims a lazily written row spans.  A tile is
 * a box of D that covers every whole dim entirely; the other dims are cut: one "split"
 * dim into chunks, the dims before it one index at a time, the dims after it entirely,
 * so that a tile holds about FUSED_TILE_BYTES of buffers (stays in L2).  Tiles are
 * numbered in row-major order of the box corners; the tiling depends on the shapes only.
 *
 * Per tile, every compute node (a step) runs in node order on sub-views:
 *  - an operand read from memory (a fusion input, an earlier segment's output, a setup
 *    result) is its whole view restricted to the tile: each of its dims follows the
 *    domain dim it is broadcast along (right-aligned, PyTorch rules) or, when its size
 *    is 1, stays whole; a gather's x stays whole along the gathered dim;
 *  - a value computed in the segment lives in a contiguous tile buffer of its own
 *    dtype in the worker's scratch, or, for a pointwise, cast, gather or one-result
 *    scan result that the segment outputs, straight in its destination;
 *  - a reduction's result and epilogue live in the result space: its dims map to the
 *    kept dims of D (keepdim or not).
 * The kernels are the op-by-op path's own (sf_cpu_pointwise, sf_cpu_copy, sf_cpu_scan,
 * sf_cpu_reduce, sf_cpu_index), and each output element depends only on the elements
 * of its own row (scans), reduced extent (reductions), or itself (pointwise, gathers),
 * all of which lie in one tile — so the bytes are those of the unfused run, for every
 * tiling and thread count.  Float32 steps take fast paths with the same bytes (see
 * "float32 fast paths"); runs of them form chains evaluated block by block in L1.
 *
 * Lazy rows: the segment's index_select P = X[idx] along dim 0 (segment.c) is written
 * row by row: a pre-pass finds, for every row, the one tile that reads it (through the
 * gathers' indices); a tile writes its rows just before its steps run, and rows no
 * single tile owns (unread, or read by several tiles) are written before the tiles.
 *
 * Row combine: a segment that is exactly gather of whole rows -> mul by one weight per
 * row -> sum over the slots -> (cast) (the MoE combine; plan_combine) runs each output
 * row as one sf_cpu_row_combine (cpu_rows.c) over the gathered rows read in place (for
 * lazy rows: the rows of X they are copies of; the combine that first reads a lazy row
 * the tile owns also writes it, past the cache, from the same loads), with the same
 * bytes; a tile it cannot take (a layout, a bad index, a NaN or infinity) runs the
 * steps above instead, after writing the lazy rows the combine did not.
 *
 * Threads: the tiles are handed out in order to the threads of the backend's pool
 * (cpu_threads.h); each thread has its own tile buffers and work area, so which thread
 * runs a tile does not change its bytes.  Errors (integer division by zero, an index
 * out of range) keep the message of the first failing tile in tile order.
 */
#include "cpu.h"

#include "cpu_threads.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Bytes of tile buffers and operand data a tile aims at: about half a core's L2 (1 MB
 * on the build machine): large tiles amortize each step's fixed cost. */
#define FUSED_TILE_BYTES (512 * 1024)
#define FUSED_MIN_TILE 1024
#define FUSED_MAX_TILE (1 << 17)
#define FUSED_ALIGN 64

/* Test hook: when > 0, the elements a tile aims at (tests use tiny tiles so that small
 * programs still run as many tiles on several workers). */
int64_t sf_cpu_fused_tile_elems = 0;

/* ------------------------------------------------------------------------------ */
/* The plan                                                                         */
/* ------------------------------------------------------------------------------ */

typedef enum src_kind { SRC_IO, SRC_VAL, SRC_LIT } src_kind;

/* One operand of a step: where it comes from and how its dims follow the tile. */
typedef struct fopnd {
    src_kind kind;
    int idx;          /* SRC_IO: io index; SRC_VAL: index into vals */
    const sf_num *lit; /* SRC_LIT */
    int8_t map[SF_MAX_DIMS]; /* SRC_IO: per dim the domain dim it follows, -1: whole */
} fopnd;

/* A value computed inside the tiles. */
typedef struct fval {
    int32_t id;
    scanfuse_dtype dtype;
    int ndim;
    int64_t shape[SF_MAX_DIMS];
    int8_t map[SF_MAX_DIMS]; /* per dim the domain dim it follows, -1 when size 1 */
    int dest;                /* io index of its destination (a segment output), or -1 */
    bool direct;             /* computed straight into the destination */
    size_t buf_off;          /* its tile buffer in a worker's scratch (when !direct) */
} fval;

typedef enum step_kind { ST_POINTWISE, ST_CAST, ST_SCAN, ST_REDUCE, ST_INDEX } step_kind;

typedef struct fstep {
    const sf_node *node;
    step_kind kind;
    scanfuse_dtype cdt;
    fopnd in[SF_MAX_IN];
    int out[SF_MAX_OUT]; /* indices into vals */
    bool lazy_reader;    /* ST_INDEX whose x is a view of the lazy rows */
    int fast;            /* a FAST_* float32 path, or SF_FAST_NONE */
    float flit[SF_MAX_IN]; /* literal operands converted to float32 (fast paths) */
    bool sum1;           /* SF_FAST_SUM over one element per output (elementwise) */
    int chain;           /* index of the chain this step starts, or -1 */
} fstep;

/* A chain: consecutive elementwise float32 steps evaluated together, block by block,
 * their intermediate results never leaving L1 (see run_chain). */
#define CHAIN_MAX 8
#define CHAIN_EXT 3 /* operands from outside the chain (the iterator's limit) */
typedef struct fchain {
    int first, count;
    int next;
    int ext_step[CHAIN_EXT], ext_q[CHAIN_EXT]; /* where each outside operand is read */
    int8_t src[CHAIN_MAX][SF_MAX_IN]; /* >= 0: outside operand; < 0: -1 - earlier step */
    bool keep[CHAIN_MAX][SF_MAX_DIMS]; /* per step, the output dims that are not 1 */
} fchain;

/* The lazy producer: P = index_select(X, 0, idx), rows written on demand. */
typedef struct flazy {
    const sf_node *node;
    int x_io, idx_io, dest_io; /* whole views of X, idx and P */
    int64_t rows;
    bool eager; /* some reader's index is computed in the tiles: write every row first */
} flazy;

/* The row combine: steps g (a gather of whole rows along dim 0), g + 1 (mul by a
 * weight per row), g + 2 (sum over the slots) and maybe g + 3 (cast), run as one
 * kernel (sf_cpu_row_combine) that reads the gathered rows in place (see
 * plan_combine). */
#define COMB_MAX_K 64
typedef struct fcomb {
    bool on;
    int wq;       /* the mul's operand that is the weight */
    int last;     /* the last step: its value is the one written */
    bool lazy;    /* the rows are lazy rows: read their source rows of X instead */
    bool stream;  /* write the result past the cache (a large output) */
    bool lazy_stream; /* the same for the lazy rows (then read from X, never from P) */
} fcomb;

struct sf_cpu_fused {
    const scanfuse_fusion *f;
    int nd;
    int64_t dom[SF_MAX_DIMS];
    bool whole[SF_MAX_DIMS];
    int split;        /* the chunked dim, or -1 (one tile) */
    int64_t chunk;    /* chunk length along split */
    int64_t nchunks;
    int64_t ntiles;
    fstep *steps;
    int nsteps;
    fval *vals;
    int nvals;
    int32_t *io;
    int nio;
    size_t worker_bytes;
    size_t work_off; /* the scan/reduction/index work area in a worker's scratch */
    int width;       /* workers used */
    int threads;     /* the threads the program may use (a lone tile's reductions take them) */
    bool has_lazy;
    flazy lazy;
    fchain *chains;
    int nchains;
    size_t owner_off; /* the lazy rows' owner table, after every worker's scratch */
    fcomb comb;
};

void sf_cpu_fused_free(sf_cpu_fused *fp) {
    if (!fp) return;
    free(fp->steps);
    free(fp->chains);
    free(fp->vals);
    free(fp->io);
    free(fp);
}

size_t sf_cpu_fused_scratch_size(const sf_cpu_fused *fp) {
    if (!fp) return 0;
    size_t b = fp->worker_bytes * (size_t)fp->width;
    if (fp->has_lazy) b += (size_t)fp->lazy.rows * sizeof(int64_t);
    return b;
}

int sf_cpu_fused_io(const sf_cpu_fused *fp, const int32_t **ids) {
    *ids = fp->io;
    return fp->nio;
}

static int io_index(sf_cpu_fused *fp, int32_t id, int cap) {
    for (int i = 0; i < fp->nio; i++)
        if (fp->io[i] == id) return i;
    SF_ASSERT(fp->nio < cap);
    fp->io[fp->nio] = id;
    return fp->nio++;
}

static int val_index(const sf_cpu_fused *fp, int32_t id) {
    for (int i = 0; i < fp->nvals; i++)
        if (fp->vals[i].id == id) return i;
    return -1;
}

static bool shape_eq(int na, const int64_t *a, int nb, const int64_t *b) {
    if (na != nb) return false;
    for (int d = 0; d < na; d++)
        if (a[d] != b[d]) return false;
    return true;
}

/* A space: how the dims of a shape of `ndim` dims map to domain dims. */
typedef struct space {
    int ndim;
    int64_t shape[SF_MAX_DIMS];
    int8_t map[SF_MAX_DIMS];
} space;

/* The dims of a value of shape (pn, ps) broadcast right-aligned into space sp. */
static void align(const space *sp, int pn, const int64_t *ps, int8_t *map) {
    int lead = sp->ndim - pn;
    SF_ASSERT(lead >= 0);
    for (int k = 0; k < pn; k++) map[k] = ps[k] == 1 ? -1 : sp->map[k + lead];
}

/* ---- float32 fast paths ----
 * Steps whose values are float32 (or bfloat16 widened to float32 exactly) run with
 * float32 arithmetic instead of the double-based kernels.  The bytes are the same:
 * + - * / of float32 operands are correctly rounded in float32, and rounding the
 * double result to float32 gives that same value (double has more than 2*24+2 bits);
 * max, min, neg, abs, relu select or negate exactly; bfloat16 rounds from float32 the
 * way it rounds from the same value in double.  Only NaN payloads could differ (which
 * operand's NaN propagates, when a signalling NaN is quieted), so a run whose results
 * hold a NaN is recomputed with the generic kernel.  The ops (sf_cpu_fast_op) and their
 * block kernels are in cpu_fused_f32.c. */

static bool f32_exact(scanfuse_dtype dt) {
    return dt == SCANFUSE_FLOAT32 || dt == SCANFUSE_BFLOAT16;
}

static int fast_kind(const scanfuse_fusion *f, fstep *s) {
    const sf_node *n = s->node;
    scanfuse_dtype rd = f->values[n->out[0]].dtype;
    if (s->kind == ST_CAST) {
        scanfuse_dtype id = f->values[n->in[0]].dtype;
        if (f32_exact(id) && f32_exact(rd) && id != rd) return SF_FAST_CAST;
        if (id == SCANFUSE_FLOAT64 && rd == SCANFUSE_FLOAT32) return SF_FAST_CAST;
        return SF_FAST_NONE;
    }
    if (s->kind == ST_REDUCE) {
        scanfuse_dtype id = f->values[n->in[0]].dtype;
        return n->op == SF_OP_sum && rd == SCANFUSE_FLOAT32 && f32_exact(id) ? SF_FAST_SUM
                                                                             : SF_FAST_NONE;
    }
    if (s->kind != ST_POINTWISE || s->cdt != SCANFUSE_FLOAT32 || rd != SCANFUSE_FLOAT32)
        return SF_FAST_NONE;
    int k;
    switch (n->op) {
    case SF_OP_add: k = SF_FAST_ADD; break;
    case SF_OP_sub: k = SF_FAST_SUB; break;
    case SF_OP_mul: k = SF_FAST_MUL; break;
    case SF_OP_div: k = SF_FAST_DIV; break;
    case SF_OP_maximum: k = SF_FAST_MAX; break;
    case SF_OP_minimum: k = SF_FAST_MIN; break;
    case SF_OP_neg: k = SF_FAST_NEG; break;
    case SF_OP_abs: k = SF_FAST_ABS; break;
    case SF_OP_relu: k = SF_FAST_RELU; break;
    default: return SF_FAST_NONE;
    }
    for (int q = 0; q < n->nin; q++) {
        if (s->in[q].kind == SRC_LIT) {
            double d;
            sf_cpu_fill_literal_f64(s->in[q].lit, SCANFUSE_FLOAT32, &d, 1);
            s->flit[q] = (float)d; /* exact: d is a float32 value */
        } else if (!f32_exact(f->values[n->in[q]].dtype)) {
            return SF_FAST_NONE;
        }
    }
    return k;
}

/* The map of operand q of a gather node (x: every dim but the gathered one follows the
 * result's space, the gathered one stays whole; index: like the result, index_select's
 * 1-d index along the gathered dim). */
static void gather_map(const sf_node *n, int q, const space *sp, const sf_value *iv,
                       int8_t *map) {
    int dim = (int)n->a.dim;
    if (n->op == SF_OP_index_select && q == 1) {
        if (iv->ndim == 1) map[0] = iv->shape[0] == 1 ? -1 : sp->map[dim];
        return;
    }
    SF_ASSERT(iv->ndim == sp->ndim);
    for (int d = 0; d < iv->ndim; d++)
        map[d] = (iv->shape[d] == 1 || (q == 0 && d == dim)) ? -1 : sp->map[d];
}

/* Is value v `target` itself or a chain of views of it? */
static bool views_value(const scanfuse_fusion *f, int32_t v, int32_t target) {
    for (int depth = 0; depth < 16; depth++) {
        if (v == target) return true;
        int p = f->values[v].producer;
        if (p < 0 || !sf_node_is_setup(f->nodes[p].op) || f->nodes[p].nin < 1) return false;
        v = f->nodes[p].in[0];
    }
    return false;
}

/* Can step s be part of a chain (an elementwise float32 step)? */
static bool chainable(const fstep *s) {
    return (s->fast >= SF_FAST_ADD && s->fast <= SF_FAST_CAST) || (s->fast == SF_FAST_SUM && s->sum1);
}

/* The number of steps reading value vi (as an operand). */
static int readers(const sf_cpu_fused *fp, int vi) {
    int n = 0;
    for (int i = 0; i < fp->nsteps; i++)
        for (int q = 0; q < fp->steps[i].node->nin; q++)
            n += fp->steps[i].in[q].kind == SRC_VAL && fp->steps[i].in[q].idx == vi;
    return n;
}

/* Groups runs of chainable steps: each intermediate result is read only by the next
 * steps of its chain and leaves no copy in memory, all outputs have the same shape once
 * size-1 dims are dropped, and at most CHAIN_EXT operands come from outside. */
static void plan_chains(sf_cpu_fused *fp) {
    for (int i = 0; i < fp->nsteps;) {
        if (!chainable(&fp->steps[i])) {
            i++;
            continue;
        }
        fchain c;
        memset(&c, 0, sizeof c);
        c.first = i;
        int64_t sq0[SF_MAX_DIMS];
        int nsq0 = -1;
        int j = i;
        for (; j < fp->nsteps && j - i < CHAIN_MAX && chainable(&fp->steps[j]); j++) {
            const fstep *s = &fp->steps[j];
            const fval *ov = &fp->vals[s->out[0]];
            /* squeezed output shape */
            int64_t sq[SF_MAX_DIMS];
            int nsq = 0;
            bool keep[SF_MAX_DIMS];
            for (int d = 0; d < ov->ndim; d++) {
                keep[d] = ov->shape[d] != 1;
                if (keep[d]) sq[nsq++] = ov->shape[d];
            }
            if (nsq0 >= 0 && (nsq != nsq0 || memcmp(sq, sq0, (size_t)nsq * sizeof sq[0]) != 0))
                break;
            /* operands: earlier chain steps, or outside (counted) */
            int8_t src[SF_MAX_IN];
            int next = c.next;
            bool ok = true;
            for (int q = 0; q < s->node->nin && ok; q++) {
                const fopnd *o = &s->in[q];
                int from = -1;
                if (o->kind == SRC_VAL)
                    for (int k = i; k < j; k++)
                        if (fp->steps[k].out[0] == o->idx) from = k;
                if (from >= 0) {
                    src[q] = (int8_t)(-1 - (from - i));
                } else if (o->kind == SRC_LIT) {
                    src[q] = 0; /* literals are filled per step; the slot is unused */
                } else if (next < CHAIN_EXT) {
                    c.ext_step[next] = j;
                    c.ext_q[next] = q;
                    src[q] = (int8_t)next++;
                } else {
                    ok = false;
                }
            }
            if (!ok) break;
            if (nsq0 < 0) {
                nsq0 = nsq;
                memcpy(sq0, sq, sizeof sq);
            }
            c.next = next;
            memcpy(c.src[j - i], src, sizeof src);
            memcpy(c.keep[j - i], keep, sizeof keep);
            /* an intermediate must not be needed outside the chain: stop after it */
            bool last = ov->dest >= 0 || j + 1 >= fp->nsteps;
            if (!last) {
                const fstep *nx = &fp->steps[j + 1];
                bool reads = false;
                for (int q = 0; q < nx->node->nin; q++)
                    reads |= nx->in[q].kind == SRC_VAL && nx->in[q].idx == s->out[0];
                last = !reads || readers(fp, s->out[0]) != 1 || !chainable(nx);
            }
            if (last) {
                j++;
                break;
            }
        }
        c.count = j - i;
        if (c.count >= 2) {
            fp->chains[fp->nchains] = c;
            fp->steps[i].chain = fp->nchains++;
        }
        i += c.count > 0 ? c.count : 1;
    }
}

/* The row combine's pattern, on the steps of a sum over one dim (the slots, k of them)
 * of a domain [..., k, n]:
 *   g = take_along_dim(x, idx, dim=0) with x [R, 1, ..., 1, n] and idx [..., k, 1], or
 *       index_select(x, 0, idx) with x [R, n] (domain [k, n]): the gathered elements
 *       are whole rows of x, one per (output, slot);
 *   p = mul(g, w) (either order) with w read from memory, one value per (output, slot)
 *       (its last dim is 1), float32 arithmetic (SF_FAST_MUL);
 *   s = sum(p, dim=slots) into float32 (SF_FAST_SUM), then maybe c = cast(s, bfloat16);
 * only the last value leaves the segment, and these are the segment's only steps.
 * Then each output row is sf_cpu_row_combine of k rows of x read in place: no tile
 * buffers, no per-op passes.  Layout conditions (rows contiguous) are checked per tile
 * at run time; a tile that fails them, or meets a NaN, an infinity or a bad index,
 * runs the steps one by one instead (the same bytes, or the generic error). */
static void plan_combine(sf_cpu_fused *fp, const sf_node *anchor) {
    const scanfuse_fusion *f = fp->f;
    fcomb *cb = &fp->comb;
    memset(cb, 0, sizeof *cb);
    int nd = fp->nd;
    if (!anchor || anchor->op != SF_OP_sum || nd < 2 || (fp->nsteps != 3 && fp->nsteps != 4))
        return;
    bool red[SF_MAX_DIMS];
    sf_cpu_reduced_dims(anchor, nd, red);
    for (int d = 0; d < nd; d++)
        if (red[d] != (d == nd - 2)) return;
    if (fp->dom[nd - 2] < 1 || fp->dom[nd - 2] > COMB_MAX_K) return;
    const fstep *g = &fp->steps[0], *m = &fp->steps[1], *sm = &fp->steps[2];
    const sf_node *gn = g->node;
    /* the gather of whole rows */
    if (g->kind != ST_INDEX || g->in[0].kind != SRC_IO || g->in[1].kind != SRC_IO ||
        fp->vals[g->out[0]].dest >= 0 || gn->a.dim != 0)
        return;
    const sf_value *xv = &f->values[gn->in[0]], *iv = &f->values[gn->in[1]];
    const sf_value *gv = &f->values[gn->out[0]];
    if (!f32_exact(gv->dtype) || !shape_eq(gv->ndim, gv->shape, nd, fp->dom)) return;
    if (gn->op == SF_OP_take_along_dim && gn->a.has_dim) {
        if (xv->ndim != nd || iv->ndim != nd || iv->shape[nd - 1] != 1 ||
            xv->shape[nd - 1] != fp->dom[nd - 1])
            return;
        for (int d = 1; d < nd - 1; d++)
            if (xv->shape[d] != 1) return;
    } else if (gn->op == SF_OP_index_select) {
        if (nd != 2 || xv->ndim != 2 || iv->ndim != 1 || xv->shape[1] != fp->dom[1]) return;
    } else {
        return;
    }
    /* the product with one weight per row */
    if (m->fast != SF_FAST_MUL || fp->vals[m->out[0]].dest >= 0) return;
    int wq = -1;
    for (int q = 0; q < 2; q++)
        if (m->in[q].kind == SRC_VAL && m->in[q].idx == g->out[0]) wq = 1 - q;
    if (wq < 0 || m->in[wq].kind != SRC_IO) return;
    const sf_value *wv = &f->values[m->node->in[wq]];
    if (wv->ndim > nd || (wv->ndim > 0 && wv->shape[wv->ndim - 1] != 1)) return;
    /* the sum over the slots, then maybe a cast */
    if (sm->node != anchor || sm->fast != SF_FAST_SUM || sm->in[0].kind != SRC_VAL ||
        sm->in[0].idx != m->out[0])
        return;
    int last = 2;
    if (fp->nsteps == 4) {
        const fstep *c = &fp->steps[3];
        if (c->fast != SF_FAST_CAST || c->in[0].kind != SRC_VAL || c->in[0].idx != sm->out[0] ||
            fp->vals[sm->out[0]].dest >= 0 || !f32_exact(fp->vals[c->out[0]].dtype))
            return;
        last = 3;
    }
    const fval *ov = &fp->vals[fp->steps[last].out[0]];
    if (ov->dest < 0) return;
    /* the lazy rows: read through the index that wrote them, straight from X */
    if (g->lazy_reader) {
        if (!fp->has_lazy || fp->lazy.eager || fp->lazy.node->op != SF_OP_index_select ||
            fp->lazy.node->a.dim != 0 || f->values[fp->lazy.node->in[1]].ndim != 1)
            return;
        const sf_value *pv = &f->values[fp->lazy.node->out[0]];
        cb->lazy = true;
        cb->lazy_stream = (double)sf_value_numel(pv) * (double)scanfuse_dtype_size(pv->dtype) >=
                          (double)sf_cpu_rows_nt_min_bytes;
    }
    cb->stream = (double)sf_value_numel(&f->values[ov->id]) *
                     (double)scanfuse_dtype_size(ov->dtype) >= (double)sf_cpu_rows_nt_min_bytes;
    cb->wq = wq;
    cb->last = last;
    cb->on = true;
}

sf_cpu_fused *sf_cpu_fused_plan(const scanfuse_fusion *f, const sf_segment *seg,
                                const scanfuse_dtype *cdt, int threads, scanfuse_status *st,
                                char *msg, size_t msglen) {
    *st = SCANFUSE_ERROR_MEMORY;
    sf_cpu_fused *fp = sf_calloc(1, sizeof *fp);
    int cap = 2 * SF_MAX_IN * seg->nnodes + 2 * seg->nnodes + 1;
    if (!fp) goto oom;
    fp->steps = sf_calloc((size_t)seg->nnodes, sizeof *fp->steps);
    fp->chains = sf_calloc((size_t)seg->nnodes, sizeof *fp->chains);
    fp->vals = sf_calloc((size_t)(2 * seg->nnodes), sizeof *fp->vals);
    fp->io = sf_calloc((size_t)cap, sizeof *fp->io);
    if (!fp->steps || !fp->chains || !fp->vals || !fp->io) goto oom;

    /* The domain and its whole dims; the spaces of domain and result. */
    space dsp, rsp;
    const sf_node *anchor = seg->anchor >= 0 ? &f->nodes[seg->anchor] : NULL;
    const sf_value *dv = NULL;
    if (anchor) {
        dv = &f->values[anchor->in[0]];
    } else {
        for (int j = 0; j < seg->nnodes && !dv; j++)
            if (!sf_node_is_setup(f->nodes[seg->nodes[j]].op) && seg->nodes[j] != seg->lazy)
                dv = &f->values[f->nodes[seg->nodes[j]].out[0]];
    }
    SF_ASSERT(dv && dv->ndim >= 0 && dv->ndim <= SF_MAX_DIMS);
    fp->nd = dv->ndim < SF_MAX_DIMS ? dv->ndim : SF_MAX_DIMS; /* (bounded for the compiler) */
    dsp.ndim = fp->nd;
    for (int d = 0; d < fp->nd; d++) {
        fp->dom[d] = dv->shape[d];
        dsp.shape[d] = dv->shape[d];
        dsp.map[d] = (int8_t)d;
    }
    rsp = dsp;
    if (anchor && sf_op_table[anchor->op].kind == SF_KIND_SCAN) {
        if (fp->nd > 0) fp->whole[anchor->a.dim] = true;
    } else if (anchor) {
        sf_cpu_reduced_dims(anchor, fp->nd, fp->whole);
        const sf_value *rv = &f->values[anchor->out[0]];
        rsp.ndim = rv->ndim;
        int k = 0;
        for (int d = 0; d < rv->ndim; d++) rsp.shape[d] = rv->shape[d];
        if (rv->ndim == fp->nd) {
            for (int d = 0; d < rv->ndim; d++) rsp.map[d] = (int8_t)d; /* keepdim */
        } else {
            for (int d = 0; d < fp->nd; d++)
                if (!fp->whole[d]) rsp.map[k++] = (int8_t)d;
            SF_ASSERT(k == rv->ndim);
        }
    }

    fp->f = f;
    size_t index_work = 0;
    if (seg->lazy >= 0) {
        /* the lazy rows: read X and idx whole, write P whole (a segment output) */
        const sf_node *n = &f->nodes[seg->lazy];
        fp->has_lazy = true;
        fp->lazy.node = n;
        fp->lazy.x_io = io_index(fp, n->in[0], cap);
        fp->lazy.idx_io = io_index(fp, n->in[1], cap);
        fp->lazy.dest_io = io_index(fp, n->out[0], cap);
        fp->lazy.rows = f->values[n->out[0]].shape[0];
        index_work = (size_t)sf_cpu_index_scratch(f, n);
    }

    /* Steps and the values they compute. */
    for (int j = 0; j < seg->nnodes; j++) {
        const sf_node *n = &f->nodes[seg->nodes[j]];
        if (sf_node_is_setup(n->op) || seg->nodes[j] == seg->lazy) continue;
        fstep *s = &fp->steps[fp->nsteps++];
        s->node = n;
        s->cdt = cdt ? cdt[seg->nodes[j]] : SCANFUSE_DTYPE_NONE;
        sf_kind k = sf_op_table[n->op].kind;
        s->kind = k == SF_KIND_SCAN ? ST_SCAN : k == SF_KIND_REDUCTION ? ST_REDUCE
                  : k == SF_KIND_INDEX ? ST_INDEX : n->op == SF_OP_cast ? ST_CAST : ST_POINTWISE;
        SF_ASSERT(k == SF_KIND_SCAN || k == SF_KIND_REDUCTION || k == SF_KIND_POINTWISE ||
                  n->op == SF_OP_gather || n->op == SF_OP_index_select ||
                  (n->op == SF_OP_take_along_dim && n->a.has_dim));
        if (s->kind == ST_INDEX) {
            size_t w = (size_t)sf_cpu_index_scratch(f, n);
            if (w > index_work) index_work = w;
        }
        /* the space its result lives in */
        const sf_value *ov = &f->values[n->out[0]];
        const space *osp;
        if (s->kind == ST_REDUCE) osp = &rsp;
        else if (shape_eq(ov->ndim, ov->shape, dsp.ndim, dsp.shape)) osp = &dsp;
        else osp = &rsp;
        SF_ASSERT(shape_eq(ov->ndim, ov->shape, osp->ndim, osp->shape));
        /* operands: the anchor reads in the domain, a pointwise node in its own space */
        const space *isp = s->kind == ST_REDUCE ? &dsp : osp;
        for (int q = 0; q < n->nin; q++) {
            int32_t id = n->in[q];
            const sf_value *iv = &f->values[id];
            fopnd *o = &s->in[q];
            int vi = val_index(fp, id);
            SF_ASSERT(vi < 0 || s->kind != ST_INDEX ||
                      (q == 1 && n->op != SF_OP_index_select)); /* whole operands */
            if (vi >= 0) {
                o->kind = SRC_VAL;
                o->idx = vi;
                int8_t m[SF_MAX_DIMS];
                align(isp, iv->ndim, iv->shape, m);
                for (int d = 0; d < iv->ndim; d++) SF_ASSERT(m[d] == fp->vals[vi].map[d]);
                continue;
            }
            if (s->kind == ST_POINTWISE && iv->weak && iv->producer >= 0 &&
                f->nodes[iv->producer].op == SF_OP_scalar) {
                o->kind = SRC_LIT; /* converted straight to the common dtype, as op by op */
                o->lit = &f->nodes[iv->producer].a.value;
                continue;
            }
            o->kind = SRC_IO;
            o->idx = io_index(fp, id, cap);
            if (s->kind == ST_INDEX) {
                gather_map(n, q, isp, iv, o->map);
                if (q == 0 && fp->has_lazy && views_value(f, id, fp->lazy.node->out[0]))
                    s->lazy_reader = true;
            } else {
                align(isp, iv->ndim, iv->shape, o->map);
            }
        }
        if (s->lazy_reader && s->in[1].kind != SRC_IO) fp->lazy.eager = true;
        for (int r = 0; r < n->nout; r++) {
            fval *v = &fp->vals[fp->nvals];
            const sf_value *rv = &f->values[n->out[r]];
            s->out[r] = fp->nvals++;
            v->id = n->out[r];
            v->dtype = rv->dtype;
            v->ndim = rv->ndim;
            memcpy(v->shape, rv->shape, sizeof v->shape);
            align(osp, rv->ndim, rv->shape, v->map);
            v->dest = -1;
        }
        /* Pointwise kernels and one-result scans write any strided view; a reduction
         * (and cummax/cummin) wants a contiguous result, so it goes through a buffer. */
        bool can_direct = s->kind == ST_POINTWISE || s->kind == ST_CAST ||
                          s->kind == ST_INDEX || (s->kind == ST_SCAN && n->nout == 1);
        for (int r = 0; r < n->nout; r++) {
            fval *v = &fp->vals[s->out[r]];
            for (int o = 0; o < seg->noutputs; o++)
                if (seg->outputs[o] == v->id) v->dest = io_index(fp, v->id, cap);
            v->direct = v->dest >= 0 && can_direct;
        }
        s->fast = fast_kind(f, s);
        s->chain = -1;
        if (s->fast == SF_FAST_SUM) { /* one element per output: the sum is elementwise */
            bool red[SF_MAX_DIMS];
            int64_t count = 1;
            sf_cpu_reduced_dims(n, fp->nd, red);
            for (int d = 0; d < fp->nd; d++)
                if (red[d]) count *= fp->dom[d];
            s->sum1 = count == 1;
        }
    }

    plan_chains(fp);
    plan_combine(fp, anchor);

    /* A lazy row must be read by one tile only (else it is written before the tiles,
     * out of cache): tiles keep the dims a lazy reader's rows span whole. */
    bool cut_ok[SF_MAX_DIMS];
    for (int d = 0; d < fp->nd; d++) cut_ok[d] = !fp->whole[d];
    for (int i = 0; i < fp->nsteps; i++) {
        const fstep *rd = &fp->steps[i];
        if (!rd->lazy_reader) continue;
        const sf_value *xv = &f->values[rd->node->in[0]];
        for (int d = 0; d < xv->ndim; d++)
            if (rd->in[0].map[d] >= 0) cut_ok[rd->in[0].map[d]] = false;
    }

    /* Tiling: bytes per domain element of the buffers and operands of a tile. */
    /* (operands smaller than the domain count by their share of it: a [H] weight
     * broadcast over [T, H] costs nothing per element) */
    double per_elem = 0;
    double dom_n = (double)(sf_numel(fp->nd, fp->dom) > 0 ? sf_numel(fp->nd, fp->dom) : 1);
    for (int i = 0; i < fp->nvals; i++) per_elem += (double)scanfuse_dtype_size(fp->vals[i].dtype);
    for (int i = 0; i < fp->nio; i++) {
        const sf_value *v = &f->values[fp->io[i]];
        double share = (double)sf_value_numel(v) / dom_n;
        per_elem += (double)scanfuse_dtype_size(v->dtype) * (share < 1.0 ? share : 1.0);
    }
    if (per_elem < 1) per_elem = 1;
    int64_t target = (int64_t)((double)FUSED_TILE_BYTES / per_elem);
    if (target < FUSED_MIN_TILE) target = FUSED_MIN_TILE;
    if (target > FUSED_MAX_TILE) target = FUSED_MAX_TILE;
    if (sf_cpu_fused_tile_elems > 0) target = sf_cpu_fused_tile_elems;
    int64_t unit = 1;
    bool empty = false;
    for (int d = 0; d < fp->nd; d++) {
        if (fp->dom[d] == 0) empty = !fp->whole[d] || empty;
        fp->whole[d] = !cut_ok[d]; /* from here on: the dims no tile cuts */
        if (fp->whole[d] && fp->dom[d] > 0) unit *= fp->dom[d];
    }
    /* The split: going outward over the cut dims, the first one that does not fit
     * into the tile whole (or the outermost).  Compared in double: no overflow. */
    fp->split = -1;
    fp->chunk = 1;
    fp->nchunks = 1;
    double inner = (double)unit;
    for (int d = fp->nd - 1; d >= 0; d--) {
        if (fp->whole[d]) continue;
        fp->split = d;
        if (inner * (double)fp->dom[d] >= (double)target) break;
        inner *= (double)fp->dom[d];
    }
    if (fp->split >= 0) {
        int64_t in_after = 1;
        for (int d = fp->split + 1; d < fp->nd; d++)
            if (!fp->whole[d]) in_after *= fp->dom[d];
        int64_t per = unit * in_after;
        int64_t c = per > 0 ? target / per : fp->dom[fp->split];
        if (c < 1) c = 1;
        /* a cut innermost dim keeps runs of at least 64 elements, past the budget if it
         * must: each step pays a gather, a dispatch and a store a run (a column scan over
         * [2048, 128] with a pointwise epilogue: runs of 16, 1.96 ms; of 64, 1.46 ms; NOTES
         * session 39 entry 8) */
        if (fp->split == fp->nd - 1 && c < 64) c = 64;
        if (c > fp->dom[fp->split]) c = fp->dom[fp->split];
        if (c < 1) c = 1;
        fp->chunk = c;
        fp->nchunks = fp->dom[fp->split] > 0 ? (fp->dom[fp->split] + c - 1) / c : 0;
    }
    fp->ntiles = empty ? 0 : fp->nchunks;
    for (int d = 0; d < fp->split && !empty; d++)
        if (!fp->whole[d]) fp->ntiles *= fp->dom[d];

    /* Per-worker scratch: the tile buffers, then the work area. */
    int64_t ext[SF_MAX_DIMS];
    for (int d = 0; d < fp->nd; d++) {
        if (fp->whole[d] || fp->split < 0 || d > fp->split) ext[d] = fp->dom[d];
        else if (d == fp->split) ext[d] = fp->chunk;
        else ext[d] = 1;
    }
    size_t off = 0;
    for (int i = 0; i < fp->nvals; i++) {
        fval *v = &fp->vals[i];
        if (v->direct) continue;
        int64_t n = 1;
        for (int k = 0; k < v->ndim; k++) n *= v->map[k] < 0 ? 1 : ext[v->map[k]];
        v->buf_off = off;
        size_t bytes = (size_t)n * scanfuse_dtype_size(v->dtype);
        off += (bytes + FUSED_ALIGN - 1) / FUSED_ALIGN * FUSED_ALIGN;
    }
    fp->work_off = off;
    size_t work = index_work;
    if (anchor) {
        size_t ws = sf_cpu_scan_work_size(), wr = sf_cpu_reduce_work_size();
        if (ws > work) work = ws;
        if (wr > work) work = wr;
    }
    off += (work + FUSED_ALIGN - 1) / FUSED_ALIGN * FUSED_ALIGN;
    fp->worker_bytes = off > 0 ? off : FUSED_ALIGN;
    fp->width = threads < 1 ? 1 : threads;
    fp->threads = fp->width;
    if (fp->ntiles < fp->width) fp->width = fp->ntiles > 0 ? (int)fp->ntiles : 1;
    fp->owner_off = fp->worker_bytes * (size_t)fp->width;
    *st = SCANFUSE_OK;
    return fp;
oom:
    sf_cpu_fused_free(fp);
    sf_msg(msg, msglen, "cpu: out of memory planning a fused kernel");
    return NULL;
}

/* ------------------------------------------------------------------------------ */
/* Running tiles                                                                    */
/* ------------------------------------------------------------------------------ */

typedef struct fused_run {
    const sf_cpu_fused *fp;
    const sf_view *io;
    char *scratch;
    atomic_llong next; /* the next tile to hand out */
    pthread_mutex_t mu;
    atomic_int failed;
    int64_t err_tile;
    scanfuse_status err;
    char err_msg[SF_ERR_LEN];
} fused_run;

/* A whole view restricted to the tile box [lo, hi): dims following domain dim j take
 * its range, the others stay whole. */
static void restrict_view(const sf_view *whole, const int8_t *map, const int64_t *lo,
                          const int64_t *hi, sf_view *out) {
    *out = *whole;
    int64_t es = (int64_t)scanfuse_dtype_size(whole->dtype), off = 0;
    for (int k = 0; k < whole->ndim; k++) {
        if (map[k] < 0) continue;
        off += lo[map[k]] * whole->strides[k];
        out->shape[k] = hi[map[k]] - lo[map[k]];
    }
    out->data = (char *)whole->data + off * es;
}

static void val_view(const fused_run *fr, const fval *v, char *wscratch, const int64_t *lo,
                     const int64_t *hi, sf_view *out) {
    if (v->direct) {
        restrict_view(&fr->io[v->dest], v->map, lo, hi, out);
        return;
    }
    int64_t shape[SF_MAX_DIMS];
    for (int k = 0; k < v->ndim; k++)
        shape[k] = v->map[k] < 0 ? v->shape[k] : hi[v->map[k]] - lo[v->map[k]];
    sf_view_contiguous(out, wscratch + v->buf_off, v->dtype, v->ndim, shape);
}

/* Tile number t -> its box. */
static void tile_box(const sf_cpu_fused *fp, int64_t t, int64_t *lo, int64_t *hi) {
    for (int d = 0; d < fp->nd; d++) {
        lo[d] = 0;
        hi[d] = fp->dom[d];
    }
    if (fp->split < 0) return;
    int64_t c = t % fp->nchunks;
    t /= fp->nchunks;
    lo[fp->split] = c * fp->chunk;
    hi[fp->split] = lo[fp->split] + fp->chunk < fp->dom[fp->split] ? lo[fp->split] + fp->chunk
                                                                    : fp->dom[fp->split];
    for (int d = fp->split - 1; d >= 0; d--) {
        if (fp->whole[d]) continue;
        lo[d] = t % fp->dom[d];
        hi[d] = lo[d] + 1;
        t /= fp->dom[d];
    }
}

/* A 1-d view of a run: n elements from element offset off with step stride. */
static void run_view(const sf_view *v, int64_t off, int64_t stride, int64_t n, sf_view *out) {
    memset(out, 0, sizeof *out);
    out->data = (char *)v->data + off * (int64_t)scanfuse_dtype_size(v->dtype);
    out->dtype = v->dtype;
    out->ndim = 1;
    out->shape[0] = n;
    out->strides[0] = stride;
}

/* A fast pointwise step or cast on tile views (see the fast path notes above). */
static scanfuse_status fast_pointwise(const fstep *s, const sf_view *in, const sf_num *const *lit,
                                      const sf_view *out, char *msg, size_t msglen) {
    const sf_node *n = s->node;
    int nin = n->nin;
    int64_t st[SF_CPU_MAX_OPS][SF_MAX_DIMS];
    const int64_t *sp[SF_CPU_MAX_OPS];
    for (int d = 0; d < out->ndim; d++) st[0][d] = out->strides[d];
    sp[0] = st[0];
    for (int k = 0; k < nin; k++) {
        if (lit[k]) memset(st[k + 1], 0, sizeof st[k + 1]);
        else sf_cpu_broadcast_strides(&in[k], out->ndim, out->shape, st[k + 1]);
        sp[k + 1] = st[k + 1];
    }
    sf_cpu_iter it;
    sf_cpu_iter_init(&it, out->ndim, out->shape, nin + 1, sp);
    float a[2][SF_CPU_BLOCK], r[SF_CPU_BLOCK];
    for (int k = 0; k < nin && k < 2; k++)
        if (lit[k])
            for (int i = 0; i < SF_CPU_BLOCK; i++) a[k][i] = s->flit[k];
    int64_t offs[SF_CPU_MAX_OPS], m;
    while ((m = sf_cpu_iter_next(&it, SF_CPU_BLOCK, offs)) > 0) {
        for (int k = 0; k < nin; k++)
            if (!lit[k])
                sf_cpu_f32_load(in[k].data, in[k].dtype, offs[k + 1], sf_cpu_iter_stride(&it, k + 1), m,
                         a[k]);
        sf_cpu_f32_compute(s->fast, a[0], a[1], r, m, false, false);
        int64_t so = sf_cpu_iter_stride(&it, 0);
        if (!sf_cpu_f32_has_nan(r, m)) {
            sf_cpu_f32_store(out->data, out->dtype, offs[0], so, m, r);
            continue;
        }
        /* a NaN: this run again with the generic kernel, for its exact NaN bytes */
        sf_view o1, i1[SF_MAX_IN];
        run_view(out, offs[0], so, m, &o1);
        for (int k = 0; k < nin; k++)
            if (!lit[k]) run_view(&in[k], offs[k + 1], sf_cpu_iter_stride(&it, k + 1), m, &i1[k]);
        if (s->fast == SF_FAST_CAST) {
            sf_cpu_copy(&o1, &i1[0]);
        } else {
            scanfuse_status st2 = sf_cpu_pointwise(n, s->cdt, i1, lit, &o1, msg, msglen);
            if (st2 != SCANFUSE_OK) return st2;
        }
    }
    return SCANFUSE_OK;
}

/* Keeps the first error in tile order (tile -1: before the tiles). */
static void fail_tile(fused_run *fr, int64_t t, scanfuse_status st, const char *msg) {
    pthread_mutex_lock(&fr->mu);
    if (!atomic_load(&fr->failed) || t < fr->err_tile) {
        fr->err_tile = t;
        fr->err = st;
        snprintf(fr->err_msg, sizeof fr->err_msg, "%s", msg);
    }
    atomic_store(&fr->failed, 1);
    pthread_mutex_unlock(&fr->mu);
}

/* The row length of a view whose dims after the first are row-major contiguous (size-1
 * dims ignored), or -1. */
static int64_t row_elems(const sf_view *v) {
    int64_t n = 1;
    for (int d = v->ndim - 1; d >= 1; d--) {
        if (v->shape[d] == 1) continue;
        if (v->strides[d] != n) return -1;
        n *= v->shape[d];
    }
    return n;
}

/* Writes row r of the lazy result: P[r] = X[idx[r]], one row copy when both have
 * contiguous rows (past the cache when the combine reads X instead), else by the op's
 * own kernel (which also reports an index out of range). */
static scanfuse_status lazy_row(const fused_run *fr, int64_t r, void *work, char *msg,
                                size_t msglen) {
    const flazy *lz = &fr->fp->lazy;
    const sf_view *X = &fr->io[lz->x_io], *I = &fr->io[lz->idx_io], *P = &fr->io[lz->dest_io];
    int64_t len = row_elems(P);
    if (len >= 0 && len == row_elems(X) && X->dtype == P->dtype && I->ndim == 1) {
        int64_t v;
        sf_cpu_gather_i64(I->data, I->dtype, r * I->strides[0], 0, 1, I->dtype, &v);
        if (v >= 0 && v < X->shape[0]) {
            int64_t es = (int64_t)scanfuse_dtype_size(P->dtype);
            sf_cpu_row_copy((char *)P->data + r * P->strides[0] * es,
                            (const char *)X->data + v * X->strides[0] * es, (size_t)(len * es),
                            fr->fp->comb.lazy_stream);
            return SCANFUSE_OK;
        }
    }
    sf_view in[2], out;
    in[0] = fr->io[lz->x_io];
    in[1] = fr->io[lz->idx_io];
    out = fr->io[lz->dest_io];
    int64_t ies = (int64_t)scanfuse_dtype_size(in[1].dtype);
    int64_t oes = (int64_t)scanfuse_dtype_size(out.dtype);
    in[1].data = (char *)in[1].data + r * in[1].strides[0] * ies;
    in[1].shape[0] = 1;
    out.data = (char *)out.data + r * out.strides[0] * oes;
    out.shape[0] = 1;
    return sf_cpu_index(fr->fp->f, lz->node, in, &out, NULL, work, msg, msglen);
}

/* Calls visit(ctx, row) for every index a lazy reader reads in the box [lo, hi). */
static void lazy_rows_of_box(const fused_run *fr, const int64_t *lo, const int64_t *hi,
                             bool (*visit)(void *, int64_t), void *ctx) {
    const sf_cpu_fused *fp = fr->fp;
    for (int i = 0; i < fp->nsteps; i++) {
        const fstep *s = &fp->steps[i];
        if (!s->lazy_reader) continue;
        sf_view iv;
        restrict_view(&fr->io[s->in[1].idx], s->in[1].map, lo, hi, &iv);
        const int64_t *st[1] = {iv.strides};
        sf_cpu_iter it;
        sf_cpu_iter_init(&it, iv.ndim, iv.shape, 1, st);
        int64_t off, m, blk[SF_CPU_BLOCK];
        while ((m = sf_cpu_iter_next(&it, SF_CPU_BLOCK, &off)) > 0) {
            sf_cpu_gather_i64(iv.data, iv.dtype, off, sf_cpu_iter_stride(&it, 0), m, iv.dtype, blk);
            for (int64_t k = 0; k < m; k++)
                if (blk[k] >= 0 && blk[k] < fp->lazy.rows && !visit(ctx, blk[k])) return;
        }
    }
}

typedef struct owner_ctx {
    int64_t *owner;
    int64_t tile;
    const fused_run *fr;
    void *work;
    char *msg;
    scanfuse_status st;
} owner_ctx;

/* Pre-pass: a row read by one tile only is that tile's (-1: unread, -2: shared). */
static bool mark_owner(void *vctx, int64_t r) {
    owner_ctx *o = vctx;
    int64_t w = o->owner[r];
    o->owner[r] = w == -1 ? o->tile : (w == o->tile ? w : -2);
    return true;
}

/* In a tile: write the rows it owns (then mark them done, -3). */
static bool write_owned(void *vctx, int64_t r) {
    owner_ctx *o = vctx;
    if (o->owner[r] != o->tile) return true;
    o->st = lazy_row(o->fr, r, o->work, o->msg, SF_ERR_LEN);
    o->owner[r] = -3;
    return o->st == SCANFUSE_OK;
}

/* The shape value v has in the tile box [lo, hi). */
static void val_tile_shape(const fval *v, const int64_t *lo, const int64_t *hi, int64_t *shape) {
    for (int k = 0; k < v->ndim; k++)
        shape[k] = v->map[k] < 0 ? v->shape[k] : hi[v->map[k]] - lo[v->map[k]];
}

/* A chain on one tile: block by block, every step on float blocks in L1, only the last
 * step's result stored.  Returns false (having stored part of the tile, maybe) when a
 * result is NaN: the caller then runs the chain's steps one by one, which rewrites the
 * same bytes and gets the NaN bytes of the generic kernels. */
static bool run_chain(const fused_run *fr, const fchain *c, char *ws, const int64_t *lo,
                      const int64_t *hi) {
    const sf_cpu_fused *fp = fr->fp;
    const fstep *last = &fp->steps[c->first + c->count - 1];
    const fval *lv = &fp->vals[last->out[0]];
    sf_view out;
    val_view(fr, lv, ws, lo, hi, &out);
    /* the iteration: the last output's dims that are not 1 */
    int nd = 0;
    int64_t shape[SF_MAX_DIMS], st[CHAIN_EXT + 1][SF_MAX_DIMS];
    const int64_t *sp[CHAIN_EXT + 1];
    for (int d = 0; d < out.ndim; d++)
        if (c->keep[c->count - 1][d]) {
            shape[nd] = out.shape[d];
            st[0][nd] = out.strides[d];
            nd++;
        }
    sp[0] = st[0];
    sf_view ext[CHAIN_EXT];
    for (int k = 0; k < c->next; k++) {
        const fstep *s = &fp->steps[c->ext_step[k]];
        const fopnd *o = &s->in[c->ext_q[k]];
        if (o->kind == SRC_VAL) val_view(fr, &fp->vals[o->idx], ws, lo, hi, &ext[k]);
        else restrict_view(&fr->io[o->idx], o->map, lo, hi, &ext[k]);
        const fval *sv = &fp->vals[s->out[0]];
        int64_t sshape[SF_MAX_DIMS], bst[SF_MAX_DIMS];
        val_tile_shape(sv, lo, hi, sshape);
        sf_view xv = ext[k];
        if (s->kind == ST_REDUCE && xv.ndim > sv->ndim) {
            /* a sum of one element a result (sum1) without keepdim: its input has the
             * domain's dims, the reduced ones (all of extent 1) dropped in the result */
            bool red[SF_MAX_DIMS];
            sf_cpu_reduced_dims(s->node, xv.ndim, red);
            int kept = 0;
            for (int d = 0; d < xv.ndim; d++)
                if (!red[d]) {
                    xv.shape[kept] = xv.shape[d];
                    xv.strides[kept] = xv.strides[d];
                    kept++;
                }
            xv.ndim = kept;
        }
        sf_cpu_broadcast_strides(&xv, sv->ndim, sshape, bst);
        int e = 0;
        for (int d = 0; d < sv->ndim; d++)
            if (c->keep[c->ext_step[k] - c->first][d]) st[k + 1][e++] = bst[d];
        SF_ASSERT(e == nd);
        sp[k + 1] = st[k + 1];
    }
    sf_cpu_iter it;
    sf_cpu_iter_init(&it, nd, shape, c->next + 1, sp);
    float e[CHAIN_EXT][SF_CPU_BLOCK], r[CHAIN_MAX][SF_CPU_BLOCK];
    const float *res[CHAIN_MAX]; /* each step's result block (a cast aliases its input) */
    bool res_bc[CHAIN_MAX];      /* ... one value repeated */
    int64_t offs[CHAIN_EXT + 1], m;
    while ((m = sf_cpu_iter_next(&it, SF_CPU_BLOCK, offs)) > 0) {
        bool ebc[CHAIN_EXT];
        for (int k = 0; k < c->next; k++) {
            int64_t es = sf_cpu_iter_stride(&it, k + 1);
            ebc[k] = es == 0; /* a broadcast operand: load its one value */
            sf_cpu_f32_load(ext[k].data, ext[k].dtype, offs[k + 1], es, ebc[k] ? 1 : m, e[k]);
        }
        for (int j = 0; j < c->count; j++) {
            const fstep *s = &fp->steps[c->first + j];
            const float *x[2] = {NULL, NULL};
            bool bc[2] = {false, false};
            for (int q = 0; q < s->node->nin && q < 2; q++) {
                int8_t src = c->src[j][q];
                if (s->in[q].kind == SRC_LIT) {
                    x[q] = &s->flit[q];
                    bc[q] = true;
                } else if (src >= 0) {
                    x[q] = e[src];
                    bc[q] = ebc[src];
                } else {
                    x[q] = res[-1 - src];
                    bc[q] = res_bc[-1 - src];
                }
            }
            bool inner_bf16 = s->fast == SF_FAST_CAST && j + 1 < c->count &&
                              fp->vals[s->out[0]].dtype == SCANFUSE_BFLOAT16;
            if (s->fast == SF_FAST_CAST && !inner_bf16) { /* no copy: the store rounds */
                res[j] = x[0];
                res_bc[j] = bc[0];
                continue;
            }
            /* every operand one value: one result, itself repeated */
            bool all_bc = bc[0] && (s->node->nin < 2 || bc[1]);
            int64_t mm = all_bc ? 1 : m;
            /* a lone broadcast operand of max/min is expanded: fast_compute reads those
             * elementwise (+ - * / read it once) */
            float tmp[2][SF_CPU_BLOCK];
            bool arith = s->fast >= SF_FAST_ADD && s->fast <= SF_FAST_DIV && s->node->nin == 2;
            for (int q = 0; q < s->node->nin && q < 2 && mm > 1; q++)
                if (bc[q] && !arith) {
                    for (int64_t i = 0; i < mm; i++) tmp[q][i] = x[q][0];
                    x[q] = tmp[q];
                    bc[q] = false;
                }
            sf_cpu_f32_compute(s->fast, x[0], x[1], r[j], mm, bc[0], bc[1]);
            if (inner_bf16) { /* an inner cast to bfloat16 rounds now (NaN stays NaN) */
                for (int64_t i = 0; i < mm; i++) {
                    uint32_t u = sf_cpu_f32_bits(r[j][i]);
                    float q = sf_cpu_f32_from_bits(((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16) << 16);
                    r[j][i] = r[j][i] != r[j][i] ? r[j][i] : q;
                }
            }
            res[j] = r[j];
            res_bc[j] = mm == 1 && m > 1;
        }
        const float *y = res[c->count - 1];
        if (res_bc[c->count - 1]) { /* every input was one value */
            for (int64_t i = 1; i < m; i++) r[0][i] = y[0];
            r[0][0] = y[0];
            y = r[0];
        }
        if (sf_cpu_f32_store_nan(out.data, out.dtype, offs[0], sf_cpu_iter_stride(&it, 0), m, y))
            return false;
    }
    return true;
}

/* The row combine on one tile t (plan_combine).  Returns false, having written nothing
 * the steps would not rewrite, when the tile must run step by step: a layout it does
 * not handle, an index out of range (the steps report it), or a sum that is not
 * finite (the steps give the NaN bytes).  Lazy rows: each row the tile owns is written
 * by the combine that first reads it (the same loads feed both, and its stores overlap
 * the arithmetic), then marked written (-3) once that combine has succeeded; rows left
 * unmarked (the tile failed, or never reached them) are written by the caller. */
static bool run_combine(const fused_run *fr, int64_t t, const int64_t *lo, const int64_t *hi) {
    const sf_cpu_fused *fp = fr->fp;
    const fcomb *cb = &fp->comb;
    const fstep *g = &fp->steps[0], *m = &fp->steps[1];
    const fval *ov = &fp->vals[fp->steps[cb->last].out[0]];
    int nd = fp->nd;
    int64_t n = hi[nd - 1] - lo[nd - 1], K = hi[nd - 2] - lo[nd - 2];
    sf_view xv, iv, wv, out;
    restrict_view(&fr->io[g->in[0].idx], g->in[0].map, lo, hi, &xv);
    restrict_view(&fr->io[g->in[1].idx], g->in[1].map, lo, hi, &iv);
    restrict_view(&fr->io[m->in[cb->wq].idx], m->in[cb->wq].map, lo, hi, &wv);
    restrict_view(&fr->io[ov->dest], ov->map, lo, hi, &out);
    size_t xes = scanfuse_dtype_size(xv.dtype), oes = scanfuse_dtype_size(out.dtype);
    if (n > 1 && (xv.strides[xv.ndim - 1] != 1 || out.strides[out.ndim - 1] != 1)) return false;
    /* where row r of x is: x itself, or (lazy rows) the row of X it was copied from */
    const char *rbase = xv.data;
    int64_t rstride = xv.strides[0], nrows = xv.shape[0];
    const sf_view *lidx = NULL, *P = NULL;
    int64_t *owner = NULL;
    if (cb->lazy) {
        const sf_view *X = &fr->io[fp->lazy.x_io];
        P = &fr->io[fp->lazy.dest_io];
        int64_t plen = row_elems(P), xlen = row_elems(X);
        if (plen < 0 || xlen != plen || X->dtype != xv.dtype || xv.data != P->data ||
            xv.strides[0] != P->strides[0] || xv.shape[0] != P->shape[0] ||
            sf_numel(xv.ndim - 1, xv.shape + 1) != plen)
            return false; /* (the tile keeps rows whole: xv starts at a row's start) */
        lidx = &fr->io[fp->lazy.idx_io];
        rbase = X->data;
        rstride = X->strides[0];
        nrows = X->shape[0];
        owner = (int64_t *)(void *)(fr->scratch + fp->owner_off);
    }
    /* element strides of the index, the weight and the output over the tile's domain */
    int64_t tshape[SF_MAX_DIMS], ist[SF_MAX_DIMS], wst[SF_MAX_DIMS], ost[SF_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        tshape[d] = hi[d] - lo[d];
        ost[d] = 0;
    }
    if (g->node->op == SF_OP_index_select) {
        ist[0] = iv.shape[0] == 1 ? 0 : iv.strides[0];
        ist[1] = 0;
    } else {
        sf_cpu_broadcast_strides(&iv, nd, tshape, ist);
    }
    sf_cpu_broadcast_strides(&wv, nd, tshape, wst);
    for (int k = 0; k < out.ndim; k++)
        if (ov->map[k] >= 0) ost[ov->map[k]] += out.strides[k];
    /* every output row of the tile: the dims before the slots, row-major */
    int64_t pos[SF_MAX_DIMS] = {0}, nout = sf_numel(nd - 2, tshape);
    const void *rows[COMB_MAX_K];
    void *copy[COMB_MAX_K];
    int64_t prow[COMB_MAX_K];
    float w[COMB_MAX_K];
    for (int64_t o = 0; o < nout; o++) {
        int64_t ioff = 0, woff = 0, ooff = 0;
        for (int d = 0; d < nd - 2; d++) {
            ioff += pos[d] * ist[d];
            woff += pos[d] * wst[d];
            ooff += pos[d] * ost[d];
        }
        for (int64_t j = 0; j < K; j++) {
            int64_t r;
            sf_cpu_gather_i64(iv.data, iv.dtype, ioff + j * ist[nd - 2], 0, 1, iv.dtype, &r);
            if (r < 0 || r >= xv.shape[0]) return false;
            /* a lazy row of this tile not yet written, and not by an earlier slot */
            prow[j] = -1;
            copy[j] = NULL;
            bool mine = owner && owner[r] == t;
            for (int64_t q = 0; mine && q < j; q++) mine = prow[q] != r;
            if (mine) {
                prow[j] = r;
                copy[j] = (char *)P->data + r * P->strides[0] * (int64_t)xes;
            }
            if (lidx)
                sf_cpu_gather_i64(lidx->data, lidx->dtype, r * lidx->strides[0], 0, 1, lidx->dtype,
                                  &r);
            if (r < 0 || r >= nrows) return false;
            rows[j] = rbase + r * rstride * (int64_t)xes;
            sf_cpu_f32_load(wv.data, wv.dtype, woff + j * wst[nd - 2], 1, 1, &w[j]);
        }
        if (!sf_cpu_row_combine(rows, xv.dtype, w, (int)K, n, (char *)out.data + ooff * (int64_t)oes,
                                out.dtype, cb->stream, owner ? copy : NULL, cb->lazy_stream))
            return false;
        for (int64_t j = 0; owner && j < K; j++)
            if (prow[j] >= 0) owner[prow[j]] = -3;
        for (int d = nd - 3; d >= 0; d--) { /* the next output row */
            if (++pos[d] < tshape[d]) break;
            pos[d] = 0;
        }
    }
    return true;
}

static void run_tile(void *ctx, int64_t t, int worker) {
    fused_run *fr = ctx;
    const sf_cpu_fused *fp = fr->fp;
    if (atomic_load(&fr->failed)) return;
    char *ws = fr->scratch + (size_t)worker * fp->worker_bytes;
    void *work = ws + fp->work_off;
    int64_t lo[SF_MAX_DIMS], hi[SF_MAX_DIMS];
    tile_box(fp, t, lo, hi);
    char msg[SF_ERR_LEN];
    /* The row combine writes the lazy rows it reads itself (run_combine); the rest are
     * written here, after it (all of them when it cannot take the tile). */
    bool comb_done = false, comb_rows = fp->comb.on && fp->comb.lazy;
    if (fp->comb.on && comb_rows) comb_done = run_combine(fr, t, lo, hi);
    if (fp->has_lazy && !fp->lazy.eager) {
        owner_ctx oc = {(int64_t *)(void *)(fr->scratch + fp->owner_off), t, fr, work, msg,
                        SCANFUSE_OK};
        lazy_rows_of_box(fr, lo, hi, write_owned, &oc);
        if (oc.st != SCANFUSE_OK) {
            fail_tile(fr, t, oc.st, msg);
            return;
        }
    }
    if (fp->comb.on && !comb_rows) comb_done = run_combine(fr, t, lo, hi);
    if (comb_done) {
        if (fp->comb.stream || fp->comb.lazy_stream) sf_cpu_stream_fence();
        return;
    }
    int chain_end = -1; /* steps before it were done by a chain */
    for (int i = 0; i < fp->nsteps; i++) {
        const fstep *s = &fp->steps[i];
        if (i < chain_end) continue;
        if (s->chain >= 0) {
            const fchain *c = &fp->chains[s->chain];
            if (run_chain(fr, c, ws, lo, hi)) {
                chain_end = c->first + c->count;
                const fval *v = &fp->vals[fp->steps[chain_end - 1].out[0]];
                if (v->dest >= 0 && !v->direct) { /* a buffered output goes out now */
                    sf_view src, dst;
                    val_view(fr, v, ws, lo, hi, &src);
                    restrict_view(&fr->io[v->dest], v->map, lo, hi, &dst);
                    sf_cpu_copy(&dst, &src);
                }
                continue;
            }
        }
        const sf_node *n = s->node;
        sf_view in[SF_MAX_IN], out[SF_MAX_OUT];
        const sf_num *lit[SF_MAX_IN] = {NULL, NULL, NULL};
        memset(in, 0, sizeof in);
        for (int q = 0; q < n->nin; q++) {
            const fopnd *o = &s->in[q];
            if (o->kind == SRC_LIT) lit[q] = o->lit;
            else if (o->kind == SRC_VAL) val_view(fr, &fp->vals[o->idx], ws, lo, hi, &in[q]);
            else restrict_view(&fr->io[o->idx], o->map, lo, hi, &in[q]);
        }
        for (int r = 0; r < n->nout; r++) val_view(fr, &fp->vals[s->out[r]], ws, lo, hi, &out[r]);
        scanfuse_status st = SCANFUSE_OK;
        msg[0] = '\0';
        /* a lone tile's long sums spread their chunks over the program's threads */
        const int inner = fp->ntiles == 1 ? fp->threads : 1;
        if (s->fast == SF_FAST_SUM) {
            sf_cpu_f32_sum(n, &in[0], &out[0], inner);
        } else if (s->fast != SF_FAST_NONE) {
            st = fast_pointwise(s, in, lit, &out[0], msg, sizeof msg);
        } else switch (s->kind) {
        case ST_POINTWISE:
            st = sf_cpu_pointwise(n, s->cdt, in, lit, &out[0], msg, sizeof msg);
            break;
        case ST_INDEX:
            st = sf_cpu_index(fp->f, n, in, &out[0], NULL, work, msg, sizeof msg);
            break;
        case ST_CAST: sf_cpu_copy(&out[0], &in[0]); break;
        case ST_SCAN: sf_cpu_scan(n, &in[0], &out[0], n->nout > 1 ? &out[1] : NULL, work); break;
        case ST_REDUCE: sf_cpu_reduce_mt(n, &in[0], &out[0], work, inner); break;
        }
        if (st != SCANFUSE_OK) {
            fail_tile(fr, t, st, msg);
            return;
        }
        /* results the segment outputs but computed in a buffer go out now */
        for (int r = 0; r < n->nout; r++) {
            const fval *v = &fp->vals[s->out[r]];
            if (v->dest < 0 || v->direct) continue;
            sf_view dst;
            restrict_view(&fr->io[v->dest], v->map, lo, hi, &dst);
            sf_cpu_copy(&dst, &out[r]);
        }
    }
}

/* One pool thread: takes tiles in order until none is left. */
static void tile_task(void *ctx, int tid, int nthreads) {
    fused_run *fr = ctx;
    (void)nthreads;
    for (;;) {
        long long t = atomic_fetch_add(&fr->next, 1);
        if (t >= fr->fp->ntiles) break;
        run_tile(fr, (int64_t)t, tid);
    }
}

scanfuse_status sf_cpu_fused_run(const sf_cpu_fused *fp, const sf_view *io, void *scratch,
                                 char *msg, size_t msglen) {
    fused_run fr;
    memset(&fr, 0, sizeof fr);
    fr.fp = fp;
    fr.io = io;
    fr.scratch = scratch;
    atomic_init(&fr.failed, 0);
    atomic_init(&fr.next, 0);
    fr.err = SCANFUSE_OK;
    if (pthread_mutex_init(&fr.mu, NULL) != 0) {
        sf_msg(msg, msglen, "cpu: cannot create a mutex");
        return SCANFUSE_ERROR_MEMORY;
    }
    if (fp->has_lazy) {
        /* Owners of the lazy rows, then every row no single tile owns, before the
         * tiles (so a tile only ever reads rows that are written). */
        int64_t *owner = (int64_t *)(void *)((char *)scratch + fp->owner_off);
        for (int64_t r = 0; r < fp->lazy.rows; r++) owner[r] = -1;
        owner_ctx oc = {owner, 0, &fr, (char *)scratch + fp->work_off, NULL, SCANFUSE_OK};
        int64_t lo[SF_MAX_DIMS], hi[SF_MAX_DIMS];
        for (int64_t t = 0; t < fp->ntiles && !fp->lazy.eager; t++) {
            tile_box(fp, t, lo, hi);
            oc.tile = t;
            lazy_rows_of_box(&fr, lo, hi, mark_owner, &oc);
        }
        char emsg[SF_ERR_LEN];
        for (int64_t r = 0; r < fp->lazy.rows; r++) {
            if (!fp->lazy.eager && owner[r] >= 0) continue;
            scanfuse_status st = lazy_row(&fr, r, oc.work, emsg, sizeof emsg);
            if (st != SCANFUSE_OK) {
                fail_tile(&fr, -1, st, emsg);
                break;
            }
        }
        if (fp->comb.lazy_stream) sf_cpu_stream_fence();
    }
    if (!atomic_load(&fr.failed)) {
        if (fp->width > 1 && fp->ntiles > 1) sf_pool_run(fp->width, tile_task, &fr);
        else tile_task(&fr, 0, 1);
    }
    pthread_mutex_destroy(&fr.mu);
    if (atomic_load(&fr.failed)) {
        sf_msg(msg, msglen, "%s", fr.err_msg);
        return fr.err;
    }
    return SCANFUSE_OK;
}
