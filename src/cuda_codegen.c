/*
 * cuda_codegen.c — the CUDA backend's code generator: plans a compiled program (how each
 * value is stored, which kernels each segment runs, their operands and launch geometry)
 * and emits one CUDA C source holding every kernel (the prelude of cuda_prelude.c and
 * cuda_skeletons.c, then one `extern "C" __global__` function per kernel): element-wise
 * kernels, the planning of values and segments, and the source's assembly.  The value
 * emitter the kernels are built from is cuda_values.c.
 *
 * Semantics follow docs/OPS.md exactly as the reference evaluator implements them:
 * operands are converted to the op's common dtype (weak scalar literals straight from
 * the literal, converted here on the host), floating ops compute in double and round
 * once to the value's dtype, integer ops compute in int64 with wrapping, integer
 * division by zero and out-of-range indices raise the run's error slots.
 *
 * Invariants:
 *  - the generated code depends only on the lowered fusion (dtypes, static shapes,
 *    attributes) and the launch parameters chosen here, never on a run's addresses or
 *    strides, so one compiled image serves every layout;
 *  - every iteration space and every index is 64-bit;
 *  - a value is computed by exactly one kernel and written at most once per run; values
 *    internal to a fused kernel never touch memory (a gather of a fused segment that
 *    something else reads is written by a kernel of its own, not by the fused kernel,
 *    whose iteration space is not the gather's).
 */
#include "cuda_codegen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------ */
/* Element-wise kernels                                                            */
/* ------------------------------------------------------------------------------ */

static void elem_coord(sf_cg_ectx *e, int d, sf_buf *out) {
    e->used_coords = true;
    sf_buf_printf(out, "c%d", d);
}

/* Element-wise kernels name the offset of operand op "o<op>"; the kernel defines it once
 * per element (the linear index on the fast path, else from the coordinates). */
static void elem_off(sf_cg_ectx *e, int op, sf_buf *out) {
    e->used_ops |= 1u << op;
    sf_buf_printf(out, "o%d", op);
}

void sf_cg_ectx_init(sf_cg_ectx *e, sf_cg *g, sf_cuda_kernel *k, sf_buf *b, uint8_t *done,
                     int space) {
    memset(e, 0, sizeof *e);
    e->g = g;
    e->k = k;
    e->b = b;
    e->space = space;
    e->ndim = space ? k->ndim2 : k->ndim;
    e->shape = space ? k->shape2 : k->shape;
    e->done = done;
    memset(done, 0, (size_t)(g->f->nvalues > 0 ? g->f->nvalues : 1));
}

typedef void (*elem_body)(sf_cg_ectx *e, void *arg);

/* The elements a thread takes at a time in a batched element-wise kernel: 32 bytes of its
 * narrowest input (2 to 16 elements; 4 with no input; 1: the one-element loop).  A grid-stride loop of one element
 * a step keeps one load a thread in flight: 8 KB an SM of float32 at 2048 threads, 4 KB
 * of bfloat16, where the H200 needs about 30 KB at its copy rate.  With batches the
 * kernels take 48-64 registers (4-5 blocks an SM), so 20-64 KB (NOTES session 37).
 * A body that calls a double math function (exp, log, tanh, pow, ...: ELEM_HEAVY_U) takes
 * at most 2: float32 exp over 2^26 elements took 364 µs at 8 a thread, 226 at 4, 212 at
 * 2 and 264 at 1 (H200, NOTES session 38).
 * Tuning elem_u=N sets it; elem_u=1: one element a step, the kernel of before. */
#define ELEM_MAX_U 16
#define ELEM_HEAVY_U 2
static int elem_batch(const sf_cg *g, const sf_cuda_kernel *k, uint32_t used, int64_t n, int umax) {
    int narrow = 0;
    for (int i = 0; i < k->nops; i++) {
        if (!(used >> i & 1u) || k->ops[i].out || k->ops[i].mode != SF_CUOP_ITER) continue;
        int sz = (int)scanfuse_dtype_size(g->f->values[k->ops[i].value].dtype);
        if (narrow == 0 || sz < narrow) narrow = sz;
    }
    int u = narrow ? 32 / narrow : 4;
    if (u > umax) u = umax;
    /* ... but no fewer threads than fill the GPU (2048 an SM): a small kernel's batches
     * would put its few elements' latency chains on fewer multiprocessors (DeepSeek's
     * 32768 router scores: 8 blocks of 16 sigmoids a thread instead of 128 blocks) */
    const int64_t fill = (int64_t)(g->sms > 0 ? g->sms : 132) * 2048;
    if (u > n / fill) u = (int)(n / fill);
    u = sf_cg_tune("elem_u", u < 1 ? 1 : u > 16 ? 16 : u);
    return u < 1 ? 1 : u > 16 ? 16 : u;
}

/* The batches of an element-wise kernel (emit_elem_kernel) whose ITER operands are all
 * contiguous (their offset the linear index): U elements of the grid-stride loop a step,
 * i0 + kk * S for kk < U.  Every load of the batch first (the ITER inputs into r<op>[kk]),
 * then the elements' values (the body emitted in vector mode: loads read r<op>[kk],
 * stores write w<op>[kk]), then every store: the loads of the next elements no longer
 * wait behind the previous element's store, which may alias them as far as the compiler
 * knows. */
static void emit_elem_path(sf_cg *g, const sf_cuda_kernel *k, uint32_t used, bool coords, const char *vbody) {
    sf_buf *src = g->src;
    const scanfuse_fusion *f = g->f;
    for (int i = 0; i < k->nops; i++) {
        if (!(used >> i & 1u) || k->ops[i].mode != SF_CUOP_ITER) continue;
        const char *raw = sf_cg_rawtype(f->values[k->ops[i].value].dtype);
        sf_buf_printf(src, "%s %c%d[U];\n", raw, k->ops[i].out ? 'w' : 'r', i);
    }
    static const char *const step = "#pragma unroll\nfor (int kk = 0; kk < U; ++kk) {\nconst i64 i = i0 + kk * S;\n"
                                    "if (i >= N) break;\n";
    sf_buf_puts(src, step);
    for (int i = 0; i < k->nops; i++) {
        if (!(used >> i & 1u) || k->ops[i].mode != SF_CUOP_ITER || k->ops[i].out) continue;
        const char *raw = sf_cg_rawtype(f->values[k->ops[i].value].dtype);
        sf_buf_printf(src, "r%d[kk] = ((const %s*)a.ptr[%d])[i];\n", i, raw, i);
    }
    sf_buf_printf(src, "}\n%s(void)i;\n", step);
    if (coords) sf_cg_coords(src, "c", "i", k->ndim, sf_cg_iota_dims, k->shape);
    sf_buf_puts(src, vbody);
    sf_buf_printf(src, "}\n%s(void)i;\n", step);
    for (int i = 0; i < k->nops; i++) {
        if (!(used >> i & 1u) || k->ops[i].mode != SF_CUOP_ITER || !k->ops[i].out) continue;
        const char *raw = sf_cg_rawtype(f->values[k->ops[i].value].dtype);
        sf_buf_printf(src, "((%s*)a.ptr[%d])[i] = w%d[kk];\n", raw, i, i);
    }
    sf_buf_puts(src, "}\n");
}

/* Appends an element-wise kernel over k's shape: a grid-stride loop whose body `body`
 * writes through the element context.  With fast = true, the offsets of the ITER
 * operands are the linear index when the run finds every one of them contiguous (one
 * uniform branch), and the loop takes batches of elem_batch elements a thread
 * (emit_elem_path; the body emitted a second time, in vector mode); the one-element
 * loop follows for launches with a strided operand and for the SMALL kernels' copies
 * (SF_ELEM_ONE).  Returns false when an operand did not fit. */
/* Emits `body` into *b through a fresh element context *e (vector mode: vec), which the
 * caller then reads (operands used, coordinates, overflow).  False when out of memory. */
static bool emit_elem_body(sf_cg *g, sf_cuda_kernel *k, elem_body body, void *arg, bool vec, sf_buf *b,
                           sf_cg_ectx *e) {
    uint8_t *done = sf_malloc((size_t)(g->f->nvalues > 0 ? g->f->nvalues : 1));
    if (!done) return false;
    sf_cg_ectx_init(e, g, k, b, done, 0);
    e->coord = elem_coord;
    e->off = elem_off;
    e->vec = vec;
    body(e, arg);
    free(done);
    e->done = NULL;
    return true;
}

static bool emit_elem_kernel(sf_cg *g, sf_cuda_kernel *k, elem_body body, void *arg, bool fast, int umax) {
    sf_buf *src = g->src;
    int ki = (int)(k - g->pl->k);
    sf_buf bb = {0};
    sf_cg_ectx e;
    if (!emit_elem_body(g, k, body, arg, false, &bb, &e) || e.overflow) {
        free(bb.data);
        return false;
    }
    int64_t n = sf_numel(k->ndim, k->shape);
    int64_t blocks = (n + 255) / 256, cap = (int64_t)(g->sms > 0 ? g->sms : 132) * 32;
    k->block = 256;
    k->grid = sf_cg_grid(blocks < cap ? blocks : cap);
    k->fast_mask = 0;
    bool any_off = false;
    for (int i = 0; i < k->nops; i++) {
        if (!(e.used_ops >> i & 1u) || k->ops[i].mode != SF_CUOP_ITER) continue;
        any_off = true;
        if (fast) k->fast_mask |= 1u << i;
    }
    /* the bodies that take a fast path (pointwise groups, copies, arange/iota) also take
     * batches where every operand is contiguous: emitted again in vector mode, the same
     * values and operands.  A strided operand (a broadcast weight) sends the whole launch
     * down the one-element loop: batches of its 64-bit coordinates were slower (a float32
     * x * w[col] over [4096, 4096]: 0.71 of copy one at a time, 0.56-0.68 in batches of 2
     * to 8, H200, NOTES session 38) */
    int U = fast && k->fast_mask ? elem_batch(g, k, e.used_ops, n, umax) : 1;
    if (U > 1) {
        sf_buf vb = {0};
        sf_cg_ectx ev;
        if (!emit_elem_body(g, k, body, arg, true, &vb, &ev) || ev.overflow) {
            free(bb.data);
            free(vb.data);
            return false;
        }
        SF_ASSERT(ev.used_ops == e.used_ops);
        /* blocks of 256 threads, U elements a thread a step */
        blocks = (n + 256 * U - 1) / (256 * U);
        k->grid = sf_cg_grid(blocks < cap ? blocks : cap);
        sf_buf_printf(src, "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n", ki);
        /* a SMALL kernel's copy of this body (cuda_small.c, emit_copy) defines
         * SF_ELEM_ONE: its phases read a few KB from L2, and the batches' registers
         * would spill in its 1024-thread block */
        sf_buf_printf(src, "#if !SF_ELEM_ONE\nif ((a.flags & %uu) == %uu) {\n", k->fast_mask, k->fast_mask);
        sf_buf_printf(src, "constexpr int U = %d;\nconst i64 N = %lldll, S = (i64)gridDim.x * 256;\n", U,
                      (long long)n);
        sf_buf_puts(src, "for (i64 i0 = (i64)blockIdx.x * 256 + threadIdx.x; i0 < N; i0 += S * U) {\n");
        emit_elem_path(g, k, e.used_ops, ev.used_coords, vb.data ? vb.data : "");
        sf_buf_puts(src, "}\nreturn;\n}\n#endif\n");
        free(vb.data);
    } else {
        sf_buf_printf(src, "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n", ki);
    }
    /* one element a step */
    if (!k->fast_mask) fast = false;
    if (fast)
        sf_buf_printf(src, "const bool fast = (a.flags & %uu) == %uu;\n", k->fast_mask, k->fast_mask);
    sf_buf_printf(src, "for (i64 i = (i64)blockIdx.x * 256 + threadIdx.x; i < %lldll; i += (i64)gridDim.x * 256) {\n",
                  (long long)n);
    /* coordinates: always when the body uses them, else only on the strided path */
    if (e.used_coords || (!fast && any_off)) sf_cg_coords(src, "c", "i", k->ndim, sf_cg_iota_dims, k->shape);
    if (any_off) {
        for (int i = 0; i < k->nops; i++)
            if ((e.used_ops >> i & 1u) && k->ops[i].mode == SF_CUOP_ITER) sf_buf_printf(src, "i64 o%d;\n", i);
        for (int pass = fast ? 0 : 1; pass < 2; pass++) {
            if (fast) sf_buf_puts(src, pass == 0 ? "if (fast) {\n" : "} else {\n");
            if (fast && pass == 1 && !e.used_coords) sf_cg_coords(src, "c", "i", k->ndim, sf_cg_iota_dims, k->shape);
            for (int i = 0; i < k->nops; i++) {
                if (!(e.used_ops >> i & 1u) || k->ops[i].mode != SF_CUOP_ITER) continue;
                if (pass == 0) {
                    sf_buf_printf(src, "o%d = i;\n", i);
                    continue;
                }
                const int64_t *shape = k->ops[i].space ? k->shape2 : k->shape;
                int nd = k->ops[i].space ? k->ndim2 : k->ndim;
                sf_buf_printf(src, "o%d = ", i);
                sf_cg_offset(src, "c", i, nd, sf_cg_iota_dims, shape);
                sf_buf_puts(src, ";\n");
            }
        }
        if (fast) sf_buf_puts(src, "}\n");
    }
    if (bb.data) sf_buf_puts(src, bb.data);
    sf_buf_puts(src, "}\n}\n\n");
    free(bb.data);
    return true;
}

/* A pointwise group: every stored value of the group's nodes, at every element. */
typedef struct pw_arg {
    const int *nodes;
    int n;
} pw_arg;

static void body_pointwise(sf_cg_ectx *e, void *arg) {
    const pw_arg *pa = arg;
    const scanfuse_fusion *f = e->g->f;
    for (int i = 0; i < pa->n; i++) {
        const sf_node *n = &f->nodes[pa->nodes[i]];
        int32_t v = n->out[0];
        if (!sf_cg_stored(e->g, v)) continue;
        sf_cg_value(e, v);
        sf_cg_store(e, v);
    }
}

/* A copy of operand 0 into operand 1 (output copies, reshape copies of contiguous
 * layouts are not needed: those alias). */
static void body_copy(sf_cg_ectx *e, void *arg) {
    (void)arg;
    if (e->vec) { /* a batch's elements (emit_elem_path): raw, as loaded */
        e->used_ops |= 3u;
        sf_buf_puts(e->b, "w1[kk] = r0[kk];\n");
        return;
    }
    scanfuse_dtype dt = e->g->f->values[e->k->ops[0].value].dtype;
    const char *s = sf_cg_sfx(dt);
    sf_buf_printf(e->b, "sf_st_%s(a.ptr[1], ", s);
    e->off(e, 1, e->b);
    sf_buf_printf(e->b, ", sf_ld_%s(a.ptr[0], ", s);
    e->off(e, 0, e->b);
    sf_buf_puts(e->b, "));\n");
}

/* ---- opaque element-wise ops (operands set up by their planners) ---- */

/* reshape of a non-contiguous view: element i of the result is element i (row-major) of
 * the input, found by decomposing i over the input's shape (operand 0 is OWN). */
static void body_reshape(sf_cg_ectx *e, void *arg) {
    const sf_value *xv = arg;
    const char *s = sf_cg_sfx(xv->dtype);
    sf_cg_coords(e->b, "d", "i", xv->ndim, sf_cg_iota_dims, xv->shape);
    sf_buf_printf(e->b, "sf_st_%s(a.ptr[1], ", s);
    e->off(e, 1, e->b);
    sf_buf_printf(e->b, ", sf_ld_%s(a.ptr[0], ", s);
    sf_cg_offset(e->b, "d", 0, xv->ndim, sf_cg_iota_dims, xv->shape);
    sf_buf_puts(e->b, "));\n");
}

/* full (one element, viewed with stride 0), materialized scalars, and arange/iota that
 * something reads from memory. */
static void body_create(sf_cg_ectx *e, void *arg) {
    const sf_node *n = arg;
    int32_t v = n->out[0];
    if (n->op == SF_OP_full || n->op == SF_OP_scalar) {
        scanfuse_dtype dt = e->g->f->values[v].dtype;
        sf_buf_printf(e->b, "sf_st_%s(a.ptr[0], 0, ", sf_cg_sfx(dt));
        if (n->op == SF_OP_scalar) sf_cg_lit_cdt(e->b, n->a.value, dt);
        else sf_cg_lit_put(e->b, n->a.value, dt);
        sf_buf_puts(e->b, ");\n");
        return;
    }
    sf_cg_value_inline(e, v);
    if (!e->done[v]) e->done[v] = 1;
    sf_cg_store(e, v);
}

static void body_pad(sf_cg_ectx *e, void *arg) {
    const sf_node *n = arg;
    const scanfuse_fusion *f = e->g->f;
    const sf_value *xv = &f->values[n->in[0]];
    scanfuse_dtype dt = xv->dtype;
    int nd = xv->ndim, np = n->a.nlist / 2;
    int64_t left[SF_MAX_DIMS] = {0};
    for (int j = 0; j < np && j < nd; j++) left[nd - 1 - j] = n->a.list[2 * j];
    sf_buf *b = e->b;
    sf_buf_puts(b, "bool inside = true;\n");
    for (int d = 0; d < nd; d++) {
        sf_buf_printf(b, "const i64 x%d = c%d - (%lldll);\n", d, d, (long long)left[d]);
        sf_buf_printf(b, "inside = inside && x%d >= 0 && x%d < %lldll;\n", d, d, (long long)xv->shape[d]);
    }
    sf_buf_printf(b, "%s v = ", sf_cg_ctype(dt));
    sf_cg_lit_put(b, n->a.value, dt);
    sf_buf_printf(b, ";\nif (inside) v = sf_ld_%s(a.ptr[0], ", sf_cg_sfx(dt));
    sf_cg_offset(b, "x", 0, nd, sf_cg_iota_dims, xv->shape);
    sf_buf_printf(b, ");\nsf_st_%s(a.ptr[1], ", sf_cg_sfx(dt));
    e->off(e, 1, b);
    sf_buf_puts(b, ", v);\n");
}

static void body_tri(sf_cg_ectx *e, void *arg) {
    const sf_node *n = arg;
    scanfuse_dtype dt = e->g->f->values[n->out[0]].dtype;
    int nd = e->k->ndim;
    sf_buf *b = e->b;
    sf_buf_printf(b, "const bool keep = c%d - c%d %s %lldll;\n", nd - 1, nd - 2,
                  n->op == SF_OP_triu ? ">=" : "<=", (long long)n->a.diagonal);
    sf_buf_printf(b, "sf_st_%s(a.ptr[1], ", sf_cg_sfx(dt));
    e->off(e, 1, b);
    sf_buf_printf(b, ", keep ? sf_ld_%s(a.ptr[0], ", sf_cg_sfx(dt));
    e->off(e, 0, b);
    sf_buf_printf(b, ") : (%s)0);\n", sf_cg_ctype(dt));
}

/* matmul: operands 0 and 1 carry strides over the output's dims (MM_A, MM_B) and their
 * k-strides in aux[0], aux[1]; K in aux[2].  Floats: a compensated dot product (Dot2)
 * rounded once; integers: wrapping int64. */
static void body_matmul(sf_cg_ectx *e, void *arg) {
    const sf_node *n = arg;
    scanfuse_dtype dt = e->g->f->values[n->out[0]].dtype;
    const char *s = sf_cg_sfx(dt);
    sf_buf *b = e->b;
    sf_buf_puts(b, "const i64 ox = ");
    sf_cg_offset(b, "c", 0, e->k->ndim, sf_cg_iota_dims, e->k->shape);
    sf_buf_puts(b, ";\nconst i64 ow = ");
    sf_cg_offset(b, "c", 1, e->k->ndim, sf_cg_iota_dims, e->k->shape);
    sf_buf_puts(b, ";\n");
    if (sf_dtype_is_float(dt)) {
        sf_buf_printf(b,
                      "double s = 0.0, cc = 0.0, plain = 0.0;\n"
                      "for (i64 kk = 0; kk < a.aux[2]; ++kk) {\n"
                      "const double x = sf_ld_%s(a.ptr[0], ox + kk * a.aux[0]);\n"
                      "const double w = sf_ld_%s(a.ptr[1], ow + kk * a.aux[1]);\n"
                      "const double pr = x * w, pe = fma(x, w, -pr);\n"
                      "const double t = s + pr, z = t - s;\n"
                      "cc += ((s - (t - z)) + (pr - z)) + pe;\n"
                      "s = t;\nplain += pr;\n}\n"
                      "double r;\n"
                      "if (!sf_isfin(plain) || !sf_isfin(s + cc)) r = plain;\n"
                      "else { sf_dd d; d.hi = s + cc; d.lo = cc - (d.hi - s); r = %s; }\n",
                      s, s, dt == SCANFUSE_FLOAT64 ? "d.hi" : "sf_dd_odd(d)");
    } else {
        sf_buf_printf(b,
                      "u64 acc = 0;\n"
                      "for (i64 kk = 0; kk < a.aux[2]; ++kk)\n"
                      "acc += (u64)sf_ld_%s(a.ptr[0], ox + kk * a.aux[0]) * (u64)sf_ld_%s(a.ptr[1], ow + kk * a.aux[1]);\n"
                      "const i64 r = (i64)acc;\n",
                      s, s);
    }
    sf_buf_printf(b, "sf_st_%s(a.ptr[2], ", s);
    e->off(e, 2, b);
    sf_buf_puts(b, ", r);\n");
}

/* ------------------------------------------------------------------------------ */
/* Planning                                                                        */
/* ------------------------------------------------------------------------------ */

void sf_cuda_plan_free(sf_cuda_plan *pl) {
    if (!pl) return;
    free(pl->source);
    free(pl->k);
    free(pl->seg_k0);
    free(pl->seg_nk);
    free(pl->seg_fused);
    free(pl->node_k0);
    free(pl->node_nk);
    free(pl->vkind);
    free(pl->direct_ok);
    free(pl);
}

static sf_cuda_kernel *elem_kernel(sf_cg *g, int node, int ndim, const int64_t *shape) {
    sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_ELEM, node);
    k->ndim = ndim;
    for (int d = 0; d < ndim; d++) k->shape[d] = shape[d];
    return k;
}

static scanfuse_status too_many(char *msg, size_t msglen) {
    sf_msg(msg, msglen, "cuda: a kernel needs more than %d operands", SF_CUDA_MAXOPS);
    return SCANFUSE_ERROR_UNSUPPORTED;
}

/* The largest batch (elem_batch) for a pointwise group's body: ELEM_HEAVY_U where a
 * node calls a double math function, whose slow paths take registers and a stack frame. */
static int pw_batch_max(const scanfuse_fusion *f, const int *nodes, int n) {
    for (int i = 0; i < n; i++) {
        switch (f->nodes[nodes[i]].op) {
        case SF_OP_exp: case SF_OP_log: case SF_OP_log1p: case SF_OP_expm1: case SF_OP_sigmoid:
        case SF_OP_tanh: case SF_OP_silu: case SF_OP_pow:
            return ELEM_HEAVY_U;
        default:
            break;
        }
    }
    return ELEM_MAX_U;
}

/* The kernels of a group of compute nodes (g->in_seg marks them): one pointwise
 * kernel, one scan or reduction with its prologue and epilogue, or one opaque op. */
static scanfuse_status emit_group(sf_cg *g, const int *nodes, int n, int anchor, char *msg,
                                  size_t msglen) {
    const scanfuse_fusion *f = g->f;
    if (anchor >= 0) {
        sf_kind kind = sf_op_table[f->nodes[anchor].op].kind;
        return kind == SF_KIND_SCAN ? sf_cg_scan(g, anchor, msg, msglen)
                                    : sf_cg_reduce(g, anchor, msg, msglen);
    }
    /* a pointwise group iterates over its last pointwise node's shape (gathers of the
     * group are computed inline at its elements) */
    const sf_node *last = &f->nodes[nodes[n - 1]];
    for (int j = n - 1; j > 0 && sf_cg_is_gather(last->op); j--) last = &f->nodes[nodes[j - 1]];
    if (sf_op_table[last->op].kind == SF_KIND_POINTWISE) {
        const sf_value *res = &f->values[last->out[0]];
        if (sf_value_numel(res) == 0) return SCANFUSE_OK;
        sf_cuda_kernel *k = elem_kernel(g, -1, res->ndim, res->shape);
        pw_arg pa = {nodes, n};
        if (!emit_elem_kernel(g, k, body_pointwise, &pa, true, pw_batch_max(f, nodes, n)))
            return too_many(msg, msglen);
        return SCANFUSE_OK;
    }
    SF_ASSERT(n == 1);
    int ni = nodes[0];
    const sf_node *nd = &f->nodes[ni];
    const sf_value *res = &f->values[nd->out[0]];
    if (sf_op_table[nd->op].kind == SF_KIND_INDEX) return sf_cg_index(g, ni, msg, msglen);
    if (sf_value_numel(res) == 0) return SCANFUSE_OK;
    sf_cuda_kernel *k;
    switch (nd->op) {
    case SF_OP_pad:
        k = elem_kernel(g, ni, res->ndim, res->shape);
        sf_cg_operand(k, nd->in[0], SF_CUOP_OWN, 0, false);
        sf_cg_operand(k, nd->out[0], SF_CUOP_ITER, 0, true);
        emit_elem_kernel(g, k, body_pad, (void *)nd, false, 1);
        return SCANFUSE_OK;
    case SF_OP_triu: case SF_OP_tril:
        k = elem_kernel(g, ni, res->ndim, res->shape);
        sf_cg_operand(k, nd->in[0], SF_CUOP_ITER, 0, false);
        sf_cg_operand(k, nd->out[0], SF_CUOP_ITER, 0, true);
        emit_elem_kernel(g, k, body_tri, (void *)nd, false, 1);
        return SCANFUSE_OK;
    case SF_OP_matmul: {
        k = elem_kernel(g, ni, res->ndim, res->shape);
        sf_cg_operand(k, nd->in[0], SF_CUOP_MM_A, 0, false);
        sf_cg_operand(k, nd->in[1], SF_CUOP_MM_B, 0, false);
        sf_cg_operand(k, nd->out[0], SF_CUOP_ITER, 0, true);
        const sf_value *x = &f->values[nd->in[0]];
        k->aux[2] = x->shape[x->ndim - 1];
        emit_elem_kernel(g, k, body_matmul, (void *)nd, false, 1);
        return SCANFUSE_OK;
    }
    default:
        break;
    }
    sf_msg(msg, msglen, "cuda: no kernel for %s", sf_op_table[nd->op].name);
    return SCANFUSE_ERROR_UNSUPPORTED;
}

scanfuse_status sf_cg_emit_node(sf_cg *g, int ni, char *msg, size_t msglen) {
    sf_kind kind = sf_op_table[g->f->nodes[ni].op].kind;
    bool anc = kind == SF_KIND_SCAN || kind == SF_KIND_REDUCTION;
    g->in_seg[ni] = true;
    g->pl->node_k0[ni] = g->pl->nkernels;
    scanfuse_status st = emit_group(g, &ni, 1, anc ? ni : -1, msg, msglen);
    g->pl->node_nk[ni] = g->pl->nkernels - g->pl->node_k0[ni];
    g->in_seg[ni] = false;
    return st;
}

scanfuse_status sf_cg_emit_run(sf_cg *g, const int *nodes, int n, char *msg, size_t msglen) {
    sf_cuda_plan *pl = g->pl;
    int k0 = pl->nkernels;
    for (int j = 0; j < n; j++) g->in_seg[nodes[j]] = true;
    scanfuse_status st = emit_group(g, nodes, n, -1, msg, msglen);
    for (int j = 0; j < n; j++) {
        g->in_seg[nodes[j]] = false;
        pl->node_k0[nodes[j]] = k0;
        pl->node_nk[nodes[j]] = j == 0 ? pl->nkernels - k0 : 0;
    }
    return st;
}

/* The kernels that materialize setup node ni when something reads it from memory. */
static void emit_setup(sf_cg *g, int ni) {
    const scanfuse_fusion *f = g->f;
    const sf_node *n = &f->nodes[ni];
    sf_cuda_plan *pl = g->pl;
    int32_t v = n->out[0];
    const sf_value *res = &f->values[v];
    int k0 = pl->nkernels;
    pl->node_k0[ni] = k0;
    pl->node_nk[ni] = 0;
    int kind = pl->vkind[v];
    int saved = g->seg;
    g->seg = -1;
    /* (a view without memory is remapped by the kernels that read it) */
    if (sf_value_numel(res) > 0 && kind != SF_CUV_INTERNAL) {
        if (n->op == SF_OP_reshape) {
            sf_cuda_kernel *k = elem_kernel(g, ni, res->ndim, res->shape);
            k->reshape_copy = true;
            sf_cg_operand(k, n->in[0], SF_CUOP_OWN, 0, false);
            sf_cg_operand(k, v, SF_CUOP_ITER, 0, true);
            emit_elem_kernel(g, k, body_reshape, (void *)&f->values[n->in[0]], false, 1);
        } else if (kind == SF_CUV_FULL || kind == SF_CUV_BUFFER) {
            bool one = kind == SF_CUV_FULL;
            sf_cuda_kernel *k = elem_kernel(g, ni, one ? 0 : res->ndim, res->shape);
            sf_cg_operand(k, v, one ? SF_CUOP_OWN : SF_CUOP_ITER, 0, true);
            emit_elem_kernel(g, k, body_create, (void *)n, !one, ELEM_MAX_U);
        }
    }
    g->seg = saved;
    pl->node_nk[ni] = pl->nkernels - k0;
}

static bool is_compute(const scanfuse_fusion *f, int ni) { return !sf_node_is_setup(f->nodes[ni].op); }

/* Is v (or a view of it) read by a node outside segment s, or an output? */
static bool read_elsewhere(const scanfuse_fusion *f, int32_t v, int s, const int *seg_of,
                           const bool *is_out, int depth) {
    if (is_out[v] || depth > 32) return true;
    for (int j = 0; j < f->nnodes; j++) {
        const sf_node *c = &f->nodes[j];
        bool reads = false;
        for (int q = 0; q < c->nin; q++) reads |= c->in[q] == v;
        if (!reads) continue;
        if (sf_cg_is_view_op(c->op)) {
            if (read_elsewhere(f, c->out[0], s, seg_of, is_out, depth + 1)) return true;
        } else if (seg_of[j] != s) {
            return true;
        }
    }
    return false;
}

/* Storage of every value, given which segments run fused. */
static void plan_storage(const sf_program *p, sf_cuda_plan *pl, const bool *fused, int *seg_of) {
    const scanfuse_fusion *f = p->fusion;
    int nv = f->nvalues, nn = f->nnodes;
    bool *is_out = sf_calloc((size_t)(nv > 0 ? nv : 1), 1);
    if (!is_out) return;
    for (int o = 0; o < f->noutputs; o++) is_out[f->outputs[o]] = true;
    for (int v = 0; v < nv; v++) {
        pl->vkind[v] = SF_CUV_BUFFER;
        pl->direct_ok[v] = false;
    }
    for (int i = 0; i < f->ninputs; i++) pl->vkind[f->inputs[i]] = SF_CUV_INPUT;
    for (int i = 0; i < nn; i++) {
        const sf_node *n = &f->nodes[i];
        /* who reads the results */
        bool outside = false, non_pw = false, non_compute = false;
        for (int j = i + 1; j < nn; j++) {
            const sf_node *c = &f->nodes[j];
            bool reads = false;
            for (int q = 0; q < c->nin; q++)
                for (int r = 0; r < n->nout; r++) reads |= c->in[q] == n->out[r];
            if (!reads) continue;
            if (seg_of[i] < 0 || seg_of[j] != seg_of[i] || !fused[seg_of[i]]) outside = true;
            sf_kind ck = sf_op_table[c->op].kind;
            if (!(ck == SF_KIND_POINTWISE && c->op != SF_OP_cast)) non_pw = true;
            if (!(ck == SF_KIND_POINTWISE || ck == SF_KIND_SCAN || ck == SF_KIND_REDUCTION) ||
                sf_node_is_setup(c->op))
                non_compute = true;
        }
        bool out = false;
        for (int r = 0; r < n->nout; r++) out |= is_out[n->out[r]];
        int32_t v = n->out[0];
        switch (n->op) {
        case SF_OP_expand: case SF_OP_permute: case SF_OP_slice: case SF_OP_reshape:
            pl->vkind[v] = SF_CUV_VIEW;
            continue;
        case SF_OP_scalar:
            pl->vkind[v] = (!out && !non_pw) ? SF_CUV_LITERAL : SF_CUV_FULL;
            continue;
        case SF_OP_full:
            pl->vkind[v] = (!out && !non_compute) ? SF_CUV_INLINE : SF_CUV_FULL;
            continue;
        case SF_OP_arange: case SF_OP_iota:
            pl->vkind[v] = (!out && !non_compute) ? SF_CUV_INLINE : SF_CUV_BUFFER;
            continue;
        default:
            break;
        }
        /* a gather of a fused segment is computed inline where the segment reads it,
         * through views too: memory only when something else reads it */
        if (sf_cg_is_gather(n->op) && seg_of[i] >= 0 && fused[seg_of[i]])
            outside = read_elsewhere(f, v, seg_of[i], seg_of, is_out, 0);
        for (int r = 0; r < n->nout; r++) {
            int32_t w = n->out[r];
            bool need = out || outside || seg_of[i] < 0 || !fused[seg_of[i]];
            /* a result some other node of the fused segment reads through memory? no:
             * fused segments read their own values from registers */
            pl->vkind[w] = need ? SF_CUV_BUFFER : SF_CUV_INTERNAL;
            pl->direct_ok[w] = need;
        }
    }
    /* a stored gather of a fused segment has its own kernel, which reads its operands
     * from memory: an inner gather it reads (through views) needs memory too */
    for (int i = nn - 1; i >= 0; i--) {
        const sf_node *n = &f->nodes[i];
        if (!sf_cg_is_gather(n->op) || pl->vkind[n->out[0]] != SF_CUV_BUFFER) continue;
        for (int q = 0; q < 2; q++) {
            int32_t bv = sf_cg_view_base(f, n->in[q]);
            int pb = f->values[bv].producer;
            if (pb >= 0 && sf_cg_is_gather(f->nodes[pb].op) && pl->vkind[bv] == SF_CUV_INTERNAL) {
                pl->vkind[bv] = SF_CUV_BUFFER;
                pl->direct_ok[bv] = true;
            }
        }
    }
    /* views of values without memory have none either (the emitter remaps them) */
    for (int i = 0; i < nn; i++) {
        const sf_node *n = &f->nodes[i];
        if (sf_cg_is_view_op(n->op) && pl->vkind[n->in[0]] == SF_CUV_INTERNAL)
            pl->vkind[n->out[0]] = SF_CUV_INTERNAL;
    }
    free(is_out);
}

int sf_cg_tune(const char *key, int def) {
    const char *env = getenv("SCANFUSE_CUDA_TUNE");
    if (!env) return def;
    size_t kl = strlen(key);
    for (const char *p = env; *p;) {
        if (strncmp(p, key, kl) == 0 && p[kl] == '=') return atoi(p + kl + 1);
        const char *c = strchr(p, ',');
        if (!c) break;
        p = c + 1;
    }
    return def;
}

/* Can an integer division or remainder node raise division by zero? */
static bool may_divide_by_zero(const scanfuse_fusion *f, const sf_node *n) {
    if (n->op != SF_OP_remainder && n->op != SF_OP_floor_divide) return false;
    scanfuse_dtype dt = f->values[n->out[0]].dtype;
    if (sf_dtype_is_float(dt)) return false;
    const sf_value *d = &f->values[n->in[1]];
    if (d->weak && d->producer >= 0 && f->nodes[d->producer].op == SF_OP_scalar) {
        sf_num num = f->nodes[d->producer].a.value;
        if ((num.kind == SF_NUM_INT || num.kind == SF_NUM_BOOL) && sf_wrap_int(num.i, dt) != 0)
            return false;
    }
    return true;
}

/* Can gather node ni run inline in fused segment s?  Its source and index come from
 * memory (values of earlier segments, inputs, views of them) or from other gathers of
 * the segment (composed), through views; an index that sf_int_range does not prove in
 * range must be in memory before the segment runs (its check kernel reads it).  Views
 * of it must not be read outside the segment (they have no memory when it has none). */
static bool gather_fusable(const scanfuse_fusion *f, int s, const int *seg_of, const bool *is_out,
                           int ni) {
    const sf_node *n = &f->nodes[ni];
    for (int q = 0; q < 2; q++) {
        int32_t bv = sf_cg_view_base(f, n->in[q]);
        int pb = f->values[bv].producer;
        bool in = pb >= 0 && seg_of[pb] == s;
        if (in && !sf_cg_is_gather(f->nodes[pb].op)) return false;
        if (q == 1 && in && !sf_index_in_range(f, n)) return false;
    }
    for (int j = ni + 1; j < f->nnodes; j++) {
        const sf_node *c = &f->nodes[j];
        if (!sf_cg_is_view_op(c->op) || sf_cg_view_base(f, c->out[0]) != n->out[0]) continue;
        if (read_elsewhere(f, c->out[0], s, seg_of, is_out, 0)) return false;
    }
    return true;
}

/* Programmatic dependent launch (on by default; tuning pdl=0 turns it off): every kernel
 * starts by waiting for the grids before it in the stream (griddepcontrol.wait: they
 * have completed and their writes are visible) and then lets the next kernel launch
 * (griddepcontrol.launch_dependents), so that the launcher's cuLaunchKernelEx with
 * programmatic stream serialization overlaps a kernel's launch with the tail of the one
 * before: the Llama example 48.0 -> 42.5 µs a run, DeepSeek 342.7 -> 330.1 (`scanfuse
 * bench`, H200, NOTES session 7).  The next kernel launches only once every block of
 * this one has started, so a look-back kernel's blocks are never kept from starting.
 * Without the launch attribute (an older driver) the instructions return at once.
 * Returns a new source, each kernel's body with the two instructions first, except a
 * kernel whose body starts with SF_OWN_PDL: it waits where it must itself (the MoE
 * combine loads input rows first, cuda_combine.c); *own: whether there is such a kernel
 * (NULL: out of memory). */
static char *with_pdl(const char *src, bool *own_any) {
    static const char entry[] = "extern \"C\" __global__";
    static const char wait[] = "\nasm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
                               "asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");";
    sf_buf b = {0};
    const char *p = src;
    *own_any = false;
    for (const char *k; (k = strstr(p, entry)); ) {
        const char *open = strchr(k, '{');
        if (!open) break;
        bool own = strncmp(open + 1, "\n" SF_OWN_PDL, strlen(SF_OWN_PDL) + 1) == 0;
        *own_any |= own;
        sf_buf_printf(&b, "%.*s%s", (int)(open + 1 - p), p, own ? "" : wait);
        p = open + 1;
    }
    sf_buf_puts(&b, p);
    return sf_buf_take(&b);
}

static scanfuse_status generate(const sf_program *p, sf_cuda_plan *pl, const bool *fused,
                                int *bad_seg, char *msg, size_t msglen) {
    const scanfuse_fusion *f = p->fusion;
    int nn = f->nnodes;
    *bad_seg = -1;
    pl->nkernels = 0;
    pl->nerr = 0;
    pl->may_fail = false;
    sf_buf src = {0};
    sf_buf_printf(&src, "#define SF_MAXOPS %d\n", SF_CUDA_MAXOPS);
    /* the look-back's first back-off sleep (ns; 0: spin) */
    sf_buf_printf(&src, "#define SF_WAIT_NS %du\n", sf_cg_tune("lb_wait_ns", 32));
    /* ... doubled up to this (ns) */
    sf_buf_printf(&src, "#define SF_WAIT_MAX %du\n", sf_cg_tune("lb_wait_max", 512));
    /* a relaxed tiles-done count, no fence (sf_tile_done; lb_done=0: release + fence) */
    sf_buf_printf(&src, "#define SF_LB_DONE %d\n", sf_cg_tune("lb_done", 1) == 0 ? 0 : 1);
    /* look-back tickets (sf_take_tile): 1 (the default) one word a tile for the tile
     * number and the epoch, no tiles-done count; 0 a tile counter and a tiles-done count
     * (H200, NOTES session 10: 1-D float32 0.684 -> 0.699, [8192, 256] dim 0 0.658 ->
     * 0.694) */
    sf_buf_printf(&src, "#define SF_LB_TICKET %d\n", sf_cg_tune("lb_ticket", 1) == 0 ? 0 : 1);
    /* row tiles' tickets interleaved across the rows (sf_row_next; row_ilv=0: row after
     * row).  H200, NOTES session 21 runs 2 and 4, against row_ilv=0 in the same runs:
     * float32 [64, 131072] 0.710-0.757 -> 0.743-0.798 of copy (back to back 26.7 -> 24.7
     * us a call), float16 [32, 2^20] 0.659-0.689 -> 0.706-0.729 (53.1 -> 47.3 us); the
     * look-back's wait a tile 4.3 -> 3.1 us and 5.5 -> 3.6 us (lb_trace=1) */
    sf_buf_printf(&src, "#define SF_ROW_ILV %d\n", sf_cg_tune("row_ilv", 1) == 0 ? 0 : 1);
    /* the row look-back's sleep before its first poll of tile aggregates (sf_lookback;
     * ns, lb_wait_first=0: none), in launches of at least SF_WAIT_FIRST_MIN tiles
     * (lb_wait_first_min tiles an SM).  H200, NOTES session 22 runs 1-4, against no
     * sleep in the same runs: 1-D 2^28 float32 0.75 -> 0.82, int64 0.74 -> 0.83, float16
     * 0.68 -> 0.73, bfloat16 0.64 -> 0.69, int32 -> int64 0.67 -> 0.76, 2^26 float32
     * 0.73 -> 0.79, 2^25 (31 tiles an SM) 0.71-0.74 -> 0.73-0.76 (1200-3000 ns all within
     * 0.02 of 2000; 4500 lost it all); launches of one or two waves of tiles ([64,
     * 131072]: 8 tiles an SM, [32, 2^20] float16: 16) gained nothing, or lost */
    int wfirst = sf_cg_tune("lb_wait_first", 2000), wmin = sf_cg_tune("lb_wait_first_min", 24);
    sf_buf_printf(&src, "#define SF_WAIT_FIRST %du\n", wfirst < 0 ? 0 : wfirst);
    sf_buf_printf(&src, "#define SF_WAIT_FIRST_MIN %lldll\n",
                  (long long)(wmin < 0 ? 0 : wmin) * (pl->sms > 0 ? pl->sms : 132));
    /* a measurement, never a default: lb_trace=1 records each look-back row tile's phase
     * times (sf_trace_rec, bench/lb_trace.py) */
    sf_buf_printf(&src, "#define SF_TRACE %d\n", sf_cg_tune("lb_trace", 0) == 1 ? 1 : 0);
    /* 16-bit vector loads split into their elements by a mask and a shift (sf_vload):
     * a bfloat16's high half widens by one AND instead of a byte permute and a shift
     * (ld16=0: through a union, as before) */
    sf_buf_printf(&src, "#define SF_LD16 %d\n", sf_cg_tune("ld16", 1) == 0 ? 0 : 1);
    sf_cg_put_lines(&src, sf_cuda_prelude);
    sf_cg_put_lines(&src, sf_cuda_skeletons);
    sf_buf_puts(&src, "\n// ---- kernels ----\n");
    bool *in_seg = sf_calloc((size_t)(nn > 0 ? nn : 1), 1);
    int *list = sf_malloc((size_t)(nn > 0 ? nn : 1) * sizeof *list);
    bool *setup_done = sf_calloc((size_t)(nn > 0 ? nn : 1), 1);
    if (!in_seg || !list || !setup_done) {
        free(in_seg);
        free(list);
        free(setup_done);
        free(src.data);
        sf_msg(msg, msglen, "cuda: out of memory");
        return SCANFUSE_ERROR_MEMORY;
    }
    sf_cg g = {f, pl, &src, pl->sms, in_seg, -1};
    scanfuse_status st = SCANFUSE_OK;
    for (int s = 0; s < p->nsegments && st == SCANFUSE_OK; s++) {
        const sf_segment *seg = &p->segments[s];
        g.seg = s;
        /* setup nodes first (once per program) */
        for (int j = 0; j < seg->nnodes; j++) {
            int ni = seg->nodes[j];
            if (is_compute(f, ni) || setup_done[ni]) continue;
            setup_done[ni] = true;
            emit_setup(&g, ni);
        }
        pl->seg_k0[s] = pl->nkernels;
        pl->seg_fused[s] = false;
        int nl = 0;
        for (int j = 0; j < seg->nnodes; j++)
            if (is_compute(f, seg->nodes[j])) list[nl++] = seg->nodes[j];
        if (nl == 0) {
            pl->seg_nk[s] = 0;
            continue;
        }
        /* a small segment: one kernel of one block when it fits (cuda_small.c); its one
         * kernel is launched as a fused segment's */
        if (!fused[s] && seg->kind == SF_SEG_SMALL) {
            bool taken = false;
            st = sf_cg_small(&g, list, nl, &taken, msg, msglen);
            if (taken) {
                pl->seg_k0[s] = pl->nkernels - 1;
                pl->seg_nk[s] = 1;
                pl->seg_fused[s] = true;
                continue;
            }
            int groups = 0;
            if (st == SCANFUSE_OK) st = sf_cg_small_parts(&g, list, nl, &groups, msg, msglen);
            if (groups > 0) {
                pl->seg_nk[s] = pl->nkernels - pl->seg_k0[s];
                pl->seg_fused[s] = true;
                continue;
            }
        }
        if (fused[s]) {
            for (int j = 0; j < nl; j++) in_seg[list[j]] = true;
            int anchor = seg->anchor;
            if (anchor >= 0 && !is_compute(f, anchor)) anchor = -1;
            /* gathers: a stored one gets its own kernel (its shape is not the fused
             * kernel's iteration space), with its index check, unless the row combine
             * writes its rows (cuda_combine.c); an inline one its check */
            sf_cg_combine cm;
            int lazy = anchor >= 0 && sf_cg_combine_match(&g, anchor, &cm) && cm.p >= 0 ? cm.sel : -1;
            for (int j = 0; j < nl && st == SCANFUSE_OK; j++) {
                int ni = list[j];
                if (!sf_cg_is_gather(f->nodes[ni].op) || ni == lazy) continue;
                if (pl->vkind[f->nodes[ni].out[0]] == SF_CUV_BUFFER) st = sf_cg_index(&g, ni, msg, msglen);
                else sf_cg_gather_check(&g, ni);
            }
            if (st != SCANFUSE_OK) {
                for (int j = 0; j < nl; j++) in_seg[list[j]] = false;
                break;
            }
            st = emit_group(&g, list, nl, anchor, msg, msglen);
            for (int j = 0; j < nl; j++) in_seg[list[j]] = false;
            if (st == SCANFUSE_ERROR_UNSUPPORTED) *bad_seg = s;
        } else {
            for (int j = 0; j < nl && st == SCANFUSE_OK; j++) {
                int ni = list[j];
                in_seg[ni] = true;
                sf_kind kind = sf_op_table[f->nodes[ni].op].kind;
                bool anc = kind == SF_KIND_SCAN || kind == SF_KIND_REDUCTION;
                pl->node_k0[ni] = pl->nkernels;
                st = emit_group(&g, &ni, 1, anc ? ni : -1, msg, msglen);
                pl->node_nk[ni] = pl->nkernels - pl->node_k0[ni];
                in_seg[ni] = false;
            }
        }
        pl->seg_nk[s] = pl->nkernels - pl->seg_k0[s];
    }
    /* Copies into outputs that are not computed in place. */
    g.seg = -1;
    pl->out_k0 = pl->nkernels;
    for (int o = 0; o < f->noutputs && st == SCANFUSE_OK; o++) {
        const sf_value *v = &f->values[f->outputs[o]];
        sf_cuda_kernel *k = elem_kernel(&g, -1, v->ndim, v->shape);
        sf_cg_operand(k, f->outputs[o], SF_CUOP_ITER, 0, false);
        int op = sf_cg_operand(k, f->outputs[o], SF_CUOP_ITER, 0, true);
        k->ops[op].out_index = o;
        if (sf_value_numel(v) > 0) emit_elem_kernel(&g, k, body_copy, NULL, true, ELEM_MAX_U);
    }
    free(in_seg);
    free(list);
    free(setup_done);
    if (st != SCANFUSE_OK) {
        free(src.data);
        return st;
    }
    /* Scratch: [error slots, 16 bytes each][each kernel's part, 256-aligned]. */
    int64_t off = ((int64_t)pl->nerr * 16 + 255) / 256 * 256;
    if (off == 0) off = 256;
    for (int i = 0; i < pl->nkernels; i++) {
        sf_cuda_kernel *k = &pl->k[i];
        if (k->scratch_bytes < 0 && i > 0) {
            k->scratch_off = pl->k[i - 1].scratch_off;
            continue;
        }
        if (k->scratch_bytes <= 0) continue;
        k->scratch_off = off;
        off += (k->scratch_bytes + 255) / 256 * 256;
    }
    pl->scratch_bytes = off;
    pl->source = sf_buf_take(&src);
    if (pl->source && sf_cg_tune("pdl", 1) == 1) {
        bool own = false;
        char *pdl = with_pdl(pl->source, &own);
        free(pl->source);
        pl->source = pdl;
        pl->pdl = true;
        /* The run's first kernel with the same attribute: after the kernel of the caller
         * or of the previous run before it in the stream, it may then launch before that
         * one has finished (when that one lets it), and waits for it in
         * griddepcontrol.wait, so calls queued back to back do not pay a launch gap
         * each.  Only when every kernel waits before it touches memory: an SF_OWN_PDL
         * kernel reads its inputs first, which a caller's kernel still running (or the
         * previous run's last one, when the caller chains runs) may be writing. */
        pl->pdl_first = !own && sf_cg_tune("pdl_first", 1) == 1;
    }
    if (!pl->source) {
        sf_msg(msg, msglen, "cuda: out of memory");
        return SCANFUSE_ERROR_MEMORY;
    }
    return SCANFUSE_OK;
}

scanfuse_status sf_cuda_plan_build(const sf_program *p, int arch, int sms, sf_cuda_plan **out,
                                   char *msg, size_t msglen) {
    *out = NULL;
    const scanfuse_fusion *f = p->fusion;
    if (!f) {
        sf_msg(msg, msglen, "cuda: no fusion");
        return SCANFUSE_ERROR_STATE;
    }
    sf_cuda_plan *pl = sf_calloc(1, sizeof *pl);
    bool *fused = NULL, *is_out = NULL;
    int *seg_of = NULL;
    scanfuse_status st = SCANFUSE_ERROR_MEMORY;
    if (!pl) goto fail;
    pl->arch = arch;
    pl->sms = sms;
    size_t nv = (size_t)(f->nvalues > 0 ? f->nvalues : 1), nn = (size_t)(f->nnodes > 0 ? f->nnodes : 1);
    size_t ns = (size_t)(p->nsegments > 0 ? p->nsegments : 1);
    pl->vkind = sf_calloc(nv, sizeof *pl->vkind);
    pl->direct_ok = sf_calloc(nv, sizeof *pl->direct_ok);
    pl->node_k0 = sf_calloc(nn, sizeof *pl->node_k0);
    pl->node_nk = sf_calloc(nn, sizeof *pl->node_nk);
    pl->seg_k0 = sf_calloc(ns, sizeof *pl->seg_k0);
    pl->seg_nk = sf_calloc(ns, sizeof *pl->seg_nk);
    pl->seg_fused = sf_calloc(ns, sizeof *pl->seg_fused);
    /* at most: per node 3 (check, main, finish / sort steps are counted in cuda_index.c's
     * bound), plus setup kernels, plus output copies */
    /* + a small segment's kernel and pre-kernel, and the SMALL kernels of segments run
     * in parts (at most one per two nodes) */
    size_t cap = (size_t)f->noutputs + 8 + 2 * ns + nn;
    for (int i = 0; i < f->nnodes; i++) /* sorts: chunk sort, up to 40 merge passes, emit */
        cap += (f->nodes[i].op == SF_OP_argsort || f->nodes[i].op == SF_OP_topk) ? 48 : 4;
    pl->k = sf_calloc(cap, sizeof *pl->k);
    fused = sf_calloc(ns, sizeof *fused);
    seg_of = sf_malloc(nn * sizeof *seg_of);
    is_out = sf_calloc(nv, 1);
    if (!pl->vkind || !pl->direct_ok || !pl->node_k0 || !pl->node_nk || !pl->seg_k0 ||
        !pl->seg_nk || !pl->seg_fused || !pl->k || !fused || !seg_of || !is_out)
        goto fail;
    for (int o = 0; o < f->noutputs; o++) is_out[f->outputs[o]] = true;
    for (int i = 0; i < f->nnodes; i++) seg_of[i] = -1;
    for (int s = 0; s < p->nsegments; s++) {
        const sf_segment *seg = &p->segments[s];
        int ncompute = 0;
        for (int j = 0; j < seg->nnodes; j++)
            if (is_compute(f, seg->nodes[j])) {
                seg_of[seg->nodes[j]] = s;
                ncompute++;
            }
        /* the fused templates hold pointwise nodes around at most one scan or reduction
         * (a lazy index_select, whose rows the CPU writes on demand, is a stored gather
         * here: its own row-gather kernel runs first) */
        bool ok = (seg->kind == SF_SEG_POINTWISE || seg->kind == SF_SEG_SCAN ||
                   seg->kind == SF_SEG_REDUCE) && ncompute > 0;
        /* ... and gathers (computed inline, see gather_fusable) */
        bool body = false, fallible = false, unproven = false;
        for (int j = 0; j < seg->nnodes && ok; j++) {
            int ni = seg->nodes[j];
            if (!is_compute(f, ni)) continue;
            const sf_node *n = &f->nodes[ni];
            sf_kind kind = sf_op_table[n->op].kind;
            if (kind == SF_KIND_POINTWISE || ni == seg->anchor) {
                body = true;
                fallible |= may_divide_by_zero(f, n);
                continue;
            }
            ok = sf_cg_is_gather(n->op) && gather_fusable(f, s, seg_of, is_out, ni);
            unproven |= !sf_index_in_range(f, n);
        }
        /* the check kernels of unproven indices run before the fused kernel: with a
         * division that can fail in the same kernel, the first error of the reference's
         * node order could be reported second */
        fused[s] = ok && body && !(fallible && unproven);
    }
    for (int attempt = 0; attempt <= p->nsegments; attempt++) {
        plan_storage(p, pl, fused, seg_of);
        int bad = -1;
        free(pl->source);
        pl->source = NULL;
        st = generate(p, pl, fused, &bad, msg, msglen);
        if (st == SCANFUSE_OK) break;
        /* a fused segment the templates cannot hold (too many operands): node by node */
        if (bad < 0 || !fused[bad]) goto fail_msg;
        fused[bad] = false;
    }
    if (st != SCANFUSE_OK) goto fail_msg;
    for (int s = 0; s < p->nsegments; s++) pl->seg_fused[s] = fused[s] || pl->seg_fused[s];
    free(fused);
    free(seg_of);
    free(is_out);
    *out = pl;
    return SCANFUSE_OK;
fail:
    sf_msg(msg, msglen, "cuda: out of memory");
fail_msg:
    free(fused);
    free(seg_of);
    free(is_out);
    sf_cuda_plan_free(pl);
    return st;
}
