/*
 * cuda_index.c — the index and sort ops of the CUDA backend (docs/OPS.md "Index and sort
 * ops"): gather, take_along_dim, index_select, scatter, one_hot, bincount, topk, argsort.
 *
 * Run-time index errors: every op that reads indices (ids, classes, keys with a range)
 * first runs a check kernel over them, unless their range is known statically to fit
 * (sf_int_range); a bad one raises the kernel's error slot with its row-major position
 * (the first bad position wins, as in the reference's loop order) and,
 * in a second "report" launch made only after a failure, its value, so the message names
 * it ("gather: index 7 is out of range (dim 1 has size 5)").  The op's own kernels clamp
 * indices, so nothing is read or written out of bounds, and the run writes no output.
 *
 * Gathers of fused segments are computed inline by the emitter (cuda_codegen.c); the
 * kernels here serve the gathers something reads from memory.  index_select moves whole
 * rows (emit_row_gather).
 *
 * Determinism: scatter computes every destination element from the index elements that
 * can reach it, in row-major order (the last write wins; reduce=add sums in that order
 * starting from x's value, in double for floats, rounded once); bincount counts with
 * integer atomics (exact in any order); topk and argsort sort (key, position) pairs, a
 * total order, so the result is the stable sort whatever the schedule: rows of up to 2048
 * keys in shared memory by one block (bitonic), longer rows as sorted runs of 2048 merged
 * pairwise by merge passes (each item finds its place by a binary search); argsort of
 * integer keys in a known range of at most 1024 (the MoE's expert ids) by a counting
 * sort, one block a row (sf_count_sort).
 */
#include "cuda_codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The split counting sort in two kernels (emitted once into a source that uses it, after
 * the skeletons).  The histograms, chunk-major: cnt[(r * nch + c) * R + b].  The placing
 * pass computes its own starts: chunk c's start for bucket b, the exclusive scan of the
 * counts in (bucket, chunk) order, is the buckets' totals before b plus b's counts in the
 * chunks before c, so each block reads the R x nch counts of its row (L2 hits; a warp's
 * loads 32 buckets of one chunk, 128 contiguous bytes) and scans R totals, and
 * sf_count_split_scan's one-block launch goes (DeepSeek: 8192 counts, a 9.2 µs kernel,
 * NOTES session 12).  The slots are the same, bit for bit. */
static const char *const split_prelude[] = {
    "#define SF_SPLIT_PLACE_SCAN 1",
    "template <class So, bool DESC, int R>",
    "__device__ __forceinline__ void sf_count_split_hist_cm(const sf_args& a, i64 rows, i64 len, i64 range, i64 CH) {",
    "    __shared__ int s_h[R];",
    "    const i64 nch = (len + CH - 1) / CH;",
    "    int* cnt = (int*)a.scratch;",
    "    for (i64 bc = blockIdx.x; bc < rows * nch; bc += gridDim.x) {",
    "        const i64 r = bc / nch, c = bc - r * nch;",
    "        for (int b = threadIdx.x; b < R; b += blockDim.x) s_h[b] = 0;",
    "        __syncthreads();",
    "        sf_count_hist<So, DESC>(a, r, c * CH, (c + 1) * CH < len ? (c + 1) * CH : len, range, s_h);",
    "        __syncthreads();",
    "        for (int b = threadIdx.x; b < R; b += blockDim.x) cnt[bc * R + b] = s_h[b];",
    "        __syncthreads();",
    "    }",
    "}",
    "template <class So, bool DESC, int R>",
    "__device__ __forceinline__ void sf_count_split_place_scan(const sf_args& a, i64 rows, i64 len, i64 range, i64 CH) {",
    "    constexpr int NW = 8;",
    "    __shared__ int s_start[R];",
    "    __shared__ int s_cnt[NW * R];",
    "    __shared__ int s_w[32];",
    "    const i64 nch = (len + CH - 1) / CH;",
    "    const int* cnt = (const int*)a.scratch;",
    "    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;",
    "    for (i64 bc = blockIdx.x; bc < rows * nch; bc += gridDim.x) {",
    "        const i64 r = bc / nch, c = bc - r * nch;",
    "        int carry = 0;",
    "        for (int b0 = 0; b0 < R; b0 += blockDim.x) {",
    "            const int b = b0 + threadIdx.x;",
    "            int tot = 0, before = 0;",
    "            if (b < R) {",
    "                const int* col = cnt + r * nch * R + b;",
    "#pragma unroll 8",
    "                for (i64 q = 0; q < nch; ++q) {",
    "                    const int v = col[q * R];",
    "                    tot += v;",
    "                    before += q < c ? v : 0;",
    "                }",
    "            }",
    "            const int inc = sf_warp_incl(tot, lane);",
    "            if (lane == 31) s_w[w] = inc;",
    "            __syncthreads();",
    "            if (w == 0) s_w[lane] = sf_warp_incl(lane < nw ? s_w[lane] : 0, lane);",
    "            __syncthreads();",
    "            if (b < R) {",
    "                s_start[b] = carry + (w > 0 ? s_w[w - 1] : 0) + inc - tot + before;",
    "#pragma unroll",
    "                for (int q = 0; q < NW; ++q) s_cnt[q * R + b] = 0;",
    "            }",
    "            carry += s_w[nw - 1];",
    "            __syncthreads();",
    "        }",
    "        sf_count_place<So, DESC, R, NW>(a, r, c * CH, (c + 1) * CH < len ? (c + 1) * CH : len, range, s_start, s_cnt);",
    "        __syncthreads();",
    "    }",
    "}",
    NULL};

static unsigned elem_grid(const sf_cg *g, int64_t n) {
    int64_t blocks = sf_cg_ceil_div(n, 256), cap = (int64_t)(g->sms > 0 ? g->sms : 132) * 32;
    return sf_cg_grid(blocks < cap ? blocks : cap);
}

/* Opens an element-wise kernel over shape (coordinates c<d> of element i). */
static void open_elem(sf_cg *g, sf_cuda_kernel *k, int ndim, const int64_t *shape) {
    int ki = (int)(k - g->pl->k);
    k->ndim = ndim;
    for (int d = 0; d < ndim; d++) k->shape[d] = shape[d];
    int64_t n = sf_numel(ndim, shape);
    k->block = 256;
    k->grid = elem_grid(g, n);
    sf_buf_printf(g->src, "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n", ki);
    sf_buf_printf(g->src, "for (i64 i = (i64)blockIdx.x * 256 + threadIdx.x; i < %lldll; i += (i64)gridDim.x * 256) {\n",
                  (long long)n);
    sf_cg_coords(g->src, "c", "i", ndim, sf_cg_iota_dims, shape);
}

static void close_elem(sf_cg *g) { sf_buf_puts(g->src, "}\n}\n\n"); }

/* A check kernel over value v (integer): lo <= v < hi, else the error slot. */
static void check_kernel(sf_cg *g, int node, int32_t v, int64_t hi, const char *what,
                         const char *range) {
    const sf_value *iv = &g->f->values[v];
    if (sf_value_numel(iv) == 0) return;
    /* indices the compiler can bound (argsort's, topk's, ...) need no check: no kernel,
     * no error slot, and so no staging of the outputs */
    int64_t rlo, rhi;
    if (sf_int_range(g->f, v, &rlo, &rhi) && rlo >= 0 && rhi < hi) return;
    sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_CHECK, node);
    k->err_slot = sf_cg_err_slot(g);
    snprintf(k->err_what, sizeof k->err_what, "%s", what);
    snprintf(k->err_range, sizeof k->err_range, "%s", range);
    int op = sf_cg_operand(k, v, SF_CUOP_OWN, 0, false);
    open_elem(g, k, iv->ndim, iv->shape);
    sf_buf_printf(g->src, "const i64 v = sf_ld_%s(a.ptr[%d], ", sf_cg_sfx(iv->dtype), op);
    sf_cg_offset(g->src, "c", op, iv->ndim, sf_cg_iota_dims, iv->shape);
    sf_buf_printf(g->src, ");\nif (v < 0 || v >= %lldll) sf_report(a, i, v);\n", (long long)hi);
    close_elem(g);
}

bool sf_cg_is_gather(sf_op op) {
    return op == SF_OP_gather || op == SF_OP_take_along_dim || op == SF_OP_index_select;
}

int64_t sf_cg_gather_size(const scanfuse_fusion *f, const sf_node *n, char *range, size_t rlen) {
    const sf_value *x = &f->values[n->in[0]];
    bool flat = n->op == SF_OP_take_along_dim && !n->a.has_dim;
    int64_t size = flat ? sf_value_numel(x) : (x->ndim > 0 ? x->shape[n->a.dim] : 1);
    if (range)
        snprintf(range, rlen, "dim %lld has size %lld", flat ? 0ll : (long long)n->a.dim,
                 (long long)size);
    return size;
}

void sf_cg_gather_check(sf_cg *g, int ni) {
    const sf_node *n = &g->f->nodes[ni];
    char range[64];
    int64_t size = sf_cg_gather_size(g->f, n, range, sizeof range);
    if (sf_value_numel(&g->f->values[n->out[0]]) == 0) return;
    check_kernel(g, ni, n->in[1], size, "index", range);
}

/* index_select with a source of at least one dim: a row-gather kernel.  Result row
 * (o, j) (o over the dims before dim, j over the indices) is source row (o, index[j]),
 * `inner` contiguous elements of the dims after dim.  When the run finds the source and
 * the result contiguous (a.flags) and both addresses aligned, rows move as W-byte words
 * (W the widest of 16, 8, 4 bytes that divides a row and is wider than an element);
 * otherwise element by element through the strides.  Raw copies: the bits of every
 * element are kept (as the reference's copy).  Indices are clamped (their check kernel
 * ran before, unless sf_int_range proves them in range). */
static void emit_row_gather(sf_cg *g, int ni) {
    const scanfuse_fusion *f = g->f;
    const sf_node *n = &f->nodes[ni];
    const sf_value *x = &f->values[n->in[0]], *ix = &f->values[n->in[1]], *y = &f->values[n->out[0]];
    int nd = x->ndim, dim = (int)n->a.dim;
    int64_t size = x->shape[dim], L = y->shape[dim], outer = 1, inner = 1;
    for (int d = 0; d < dim; d++) outer *= x->shape[d];
    for (int d = dim + 1; d < nd; d++) inner *= x->shape[d];
    int es = (int)scanfuse_dtype_size(x->dtype);
    int64_t rbytes = inner * es;
    int W = rbytes % 16 == 0 ? 16 : rbytes % 8 == 0 ? 8 : rbytes % 4 == 0 ? 4 : 0;
    if (W <= es) W = 0;
    sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_ELEM, ni);
    int ox = sf_cg_operand(k, n->in[0], SF_CUOP_OWN, 0, false);
    int oi = sf_cg_operand(k, n->in[1], SF_CUOP_OWN, 0, false);
    int oy = sf_cg_operand(k, n->out[0], SF_CUOP_OWN, 0, true);
    k->ndim = y->ndim;
    for (int d = 0; d < y->ndim; d++) k->shape[d] = y->shape[d];
    int64_t numel = sf_value_numel(y), words = W ? outer * L * (rbytes / W) : 0;
    k->block = 256;
    k->grid = elem_grid(g, W ? words : numel);
    sf_buf *b = g->src;
    const char *raw = sf_cg_rawtype(x->dtype), *isx = sf_cg_sfx(ix->dtype);
    int64_t rlo, rhi;
    bool proven = sf_int_range(f, n->in[1], &rlo, &rhi) && rlo >= 0 && rhi < size;
    /* the index of result row j */
    char ldj[200], at[48] = "0";
    if (ix->ndim > 0) snprintf(at, sizeof at, "j * a.st[%d][0]", oi);
    if (proven) snprintf(ldj, sizeof ldj, "sf_ld_%s(a.ptr[%d], %s)", isx, oi, at);
    else snprintf(ldj, sizeof ldj, "sf_clamp_idx(sf_ld_%s(a.ptr[%d], %s), %lldll)", isx, oi, at, (long long)size);
    sf_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n",
                  (int)(k - g->pl->k));
    if (W) {
        const char *wt = W == 16 ? "uint4" : W == 8 ? "uint2" : "unsigned int";
        int64_t V = rbytes / W;
        k->fast_mask = (1u << ox) | (1u << oy);
        sf_buf_printf(b,
                      "const bool fast = (a.flags & %uu) == %uu && ((a.ptr[%d] | a.ptr[%d]) %% %d) == 0;\n"
                      "if (fast) {\n"
                      "for (i64 i = (i64)blockIdx.x * 256 + threadIdx.x; i < %lldll; i += (i64)gridDim.x * 256) {\n"
                      "const i64 row = i / %lldll, col = i - row * %lldll;\n"
                      "const i64 o = row / %lldll, j = row - o * %lldll;\n"
                      "const i64 v = %s;\n"
                      "((%s*)a.ptr[%d])[row * %lldll + col] = ((const %s*)a.ptr[%d])[(o * %lldll + v) * %lldll + col];\n"
                      "}\nreturn;\n}\n",
                      k->fast_mask, k->fast_mask, ox, oy, W, (long long)words, (long long)V, (long long)V,
                      (long long)L, (long long)L, ldj, wt, oy, (long long)V, wt, ox, (long long)size,
                      (long long)V);
    }
    /* element path: any strides */
    sf_buf_printf(b, "for (i64 i = (i64)blockIdx.x * 256 + threadIdx.x; i < %lldll; i += (i64)gridDim.x * 256) {\n",
                  (long long)numel);
    sf_cg_coords(b, "c", "i", nd, sf_cg_iota_dims, y->shape);
    sf_buf_printf(b, "const i64 j = c%d;\nconst i64 v = %s;\n", dim, ldj);
    sf_buf_puts(b, "i64 xo = 0;\n");
    for (int d = 0; d < nd; d++) {
        if (d == dim) sf_buf_printf(b, "xo += v * a.st[%d][%d];\n", ox, d);
        else if (x->shape[d] > 1) sf_buf_printf(b, "xo += c%d * a.st[%d][%d];\n", d, ox, d);
    }
    sf_buf_printf(b, "((%s*)a.ptr[%d])[", raw, oy);
    sf_cg_offset(b, "c", oy, nd, sf_cg_iota_dims, y->shape);
    sf_buf_printf(b, "] = ((const %s*)a.ptr[%d])[xo];\n}\n}\n\n", raw, ox);
}

/* gather, take_along_dim, index_select */
static scanfuse_status emit_gather(sf_cg *g, int ni) {
    const scanfuse_fusion *f = g->f;
    const sf_node *n = &f->nodes[ni];
    const sf_value *x = &f->values[n->in[0]], *ix = &f->values[n->in[1]], *y = &f->values[n->out[0]];
    char range[64];
    bool flat = n->op == SF_OP_take_along_dim && !n->a.has_dim;
    int nd = x->ndim;
    int dim = (int)n->a.dim;
    int64_t size = sf_cg_gather_size(f, n, range, sizeof range);
    if (sf_value_numel(y) == 0) return SCANFUSE_OK;
    check_kernel(g, ni, n->in[1], size, "index", range);
    if (n->op == SF_OP_index_select && nd > 0 && size > 0) {
        emit_row_gather(g, ni);
        return SCANFUSE_OK;
    }
    sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_ELEM, ni);
    int ox = sf_cg_operand(k, n->in[0], SF_CUOP_OWN, 0, false);
    int oi = sf_cg_operand(k, n->in[1], SF_CUOP_OWN, 0, false);
    int oy = sf_cg_operand(k, n->out[0], SF_CUOP_ITER, 0, true);
    open_elem(g, k, y->ndim, y->shape);
    sf_buf *b = g->src;
    /* where this element's index is */
    if (flat) {
        sf_cg_coords(b, "q", "i", ix->ndim, sf_cg_iota_dims, ix->shape);
        sf_buf_puts(b, "const i64 io2 = ");
        sf_cg_offset(b, "q", oi, ix->ndim, sf_cg_iota_dims, ix->shape);
        sf_buf_puts(b, ";\n");
    } else if (n->op == SF_OP_index_select) {
        if (ix->ndim > 0 && nd > 0) sf_buf_printf(b, "const i64 io2 = c%d * a.st[%d][0];\n", dim, oi);
        else sf_buf_puts(b, "const i64 io2 = 0;\n");
    } else {
        sf_buf_puts(b, "const i64 io2 = 0");
        for (int d = 0; d < ix->ndim; d++)
            if (ix->shape[d] > 1) sf_buf_printf(b, " + c%d * a.st[%d][%d]", d, oi, d);
        sf_buf_puts(b, ";\n");
    }
    sf_buf_printf(b, "const i64 v = sf_clamp_idx(sf_ld_%s(a.ptr[%d], io2), %lldll);\n",
                  sf_cg_sfx(ix->dtype), oi, (long long)(size > 0 ? size : 1));
    const char *s = sf_cg_sfx(y->dtype);
    if (size == 0) {
        sf_buf_printf(b, "(void)v;\nsf_st_%s(a.ptr[%d], ", s, oy);
        sf_cg_offset(b, "c", oy, y->ndim, sf_cg_iota_dims, y->shape);
        sf_buf_printf(b, ", (%s)0);\n", sf_cg_ctype(y->dtype));
        close_elem(g);
        return SCANFUSE_OK;
    }
    sf_buf_puts(b, "i64 xo = 0;\n");
    if (flat) {
        sf_cg_coords(b, "z", "v", nd, sf_cg_iota_dims, x->shape);
        sf_buf_puts(b, "xo = ");
        sf_cg_offset(b, "z", ox, nd, sf_cg_iota_dims, x->shape);
        sf_buf_puts(b, ";\n");
    } else {
        for (int d = 0; d < nd; d++) {
            if (d == dim) sf_buf_printf(b, "xo += v * a.st[%d][%d];\n", ox, d);
            else if (x->shape[d] > 1) sf_buf_printf(b, "xo += c%d * a.st[%d][%d];\n", d, ox, d);
        }
    }
    sf_buf_printf(b, "sf_st_%s(a.ptr[%d], ", s, oy);
    sf_cg_offset(b, "c", oy, y->ndim, sf_cg_iota_dims, y->shape);
    sf_buf_printf(b, ", sf_ld_%s(a.ptr[%d], xo));\n", s, ox);
    close_elem(g);
    return SCANFUSE_OK;
}

/* scatter: each destination element from x and the index elements of its row. */
static scanfuse_status emit_scatter(sf_cg *g, int ni) {
    const scanfuse_fusion *f = g->f;
    const sf_node *n = &f->nodes[ni];
    const sf_value *x = &f->values[n->in[0]], *ix = &f->values[n->in[1]], *sv = &f->values[n->in[2]];
    const sf_value *y = &f->values[n->out[0]];
    int nd = x->ndim, dim = (int)n->a.dim;
    int64_t size = nd > 0 ? x->shape[dim] : 1;
    char range[64];
    snprintf(range, sizeof range, "dim %lld has size %lld", (long long)n->a.dim, (long long)size);
    check_kernel(g, ni, n->in[1], size, "index", range);
    if (sf_value_numel(y) == 0) return SCANFUSE_OK;
    bool lit = g->pl->vkind[n->in[2]] == SF_CUV_LITERAL;
    bool add = n->a.reduce == SF_REDUCE_ADD;
    scanfuse_dtype dt = y->dtype;
    sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_ELEM, ni);
    int ox = sf_cg_operand(k, n->in[0], SF_CUOP_OWN, 0, false);
    int oi = sf_cg_operand(k, n->in[1], SF_CUOP_OWN, 0, false);
    int os = lit ? -1 : sf_cg_operand(k, n->in[2], SF_CUOP_OWN, 0, false);
    int oy = sf_cg_operand(k, n->out[0], SF_CUOP_ITER, 0, true);
    open_elem(g, k, y->ndim, y->shape);
    sf_buf *b = g->src;
    const char *s = sf_cg_sfx(dt), *ct = sf_cg_ctype(dt);
    sf_buf_printf(b, "%s v = sf_ld_%s(a.ptr[%d], ", ct, s, ox);
    sf_cg_offset(b, "c", ox, nd, sf_cg_iota_dims, x->shape);
    sf_buf_puts(b, ");\n");
    bool facc = add && sf_dtype_is_float(dt);
    if (facc) sf_buf_puts(b, "double acc = v;\n");
    sf_buf_puts(b, "bool inrow = true;\n");
    for (int d = 0; d < nd; d++)
        if (d != dim) sf_buf_printf(b, "inrow = inrow && c%d < %lldll;\n", d, (long long)ix->shape[d]);
    int64_t jn = nd > 0 ? ix->shape[dim] : sf_value_numel(ix);
    sf_buf_printf(b, "if (inrow) for (i64 j = 0; j < %lldll; ++j) {\n", (long long)jn);
    sf_buf_printf(b, "const i64 q = sf_ld_%s(a.ptr[%d], 0", sf_cg_sfx(ix->dtype), oi);
    for (int d = 0; d < ix->ndim; d++) {
        if (d == dim) sf_buf_printf(b, " + j * a.st[%d][%d]", oi, d);
        else if (ix->shape[d] > 1) sf_buf_printf(b, " + c%d * a.st[%d][%d]", d, oi, d);
    }
    if (nd > 0) sf_buf_printf(b, ");\nif (q == c%d) {\n", dim);
    else sf_buf_puts(b, ");\nif (q == 0) {\n");
    sf_buf_printf(b, "const %s w = ", ct);
    if (lit) {
        sf_cg_lit_cdt(b, f->nodes[sv->producer].a.value, dt);
    } else {
        sf_buf t = {0};
        sf_buf_printf(&t, "sf_ld_%s(a.ptr[%d], 0", sf_cg_sfx(sv->dtype), os);
        for (int d = 0; d < sv->ndim; d++) {
            if (d == dim) sf_buf_printf(&t, " + j * a.st[%d][%d]", os, d);
            else sf_buf_printf(&t, " + c%d * a.st[%d][%d]", d, os, d);
        }
        sf_buf_puts(&t, ")");
        sf_cg_conv(b, sv->dtype, dt, t.data);
        free(t.data);
    }
    sf_buf_puts(b, ";\n");
    if (!add) sf_buf_puts(b, "v = w;\n");
    else if (facc) sf_buf_puts(b, "acc += w;\n");
    else if (dt == SCANFUSE_BOOL) sf_buf_puts(b, "v = (i64)(v != 0 || w != 0);\n");
    else sf_buf_puts(b, "v = sf_iadd(v, w);\n");
    sf_buf_puts(b, "}\n}\n");
    sf_buf_printf(b, "sf_st_%s(a.ptr[%d], ", s, oy);
    sf_cg_offset(b, "c", oy, y->ndim, sf_cg_iota_dims, y->shape);
    sf_buf_printf(b, ", %s);\n", facc ? "acc" : "v");
    close_elem(g);
    return SCANFUSE_OK;
}

/* one_hot and bincount */
static scanfuse_status emit_ids(sf_cg *g, int ni) {
    const scanfuse_fusion *f = g->f;
    const sf_node *n = &f->nodes[ni];
    const sf_value *x = &f->values[n->in[0]], *y = &f->values[n->out[0]];
    bool oh = n->op == SF_OP_one_hot;
    int64_t C = n->a.count;
    char range[64];
    snprintf(range, sizeof range, "%s=%lld", oh ? "num_classes" : "minlength", (long long)C);
    check_kernel(g, ni, n->in[0], C, oh ? "class" : "id", range);
    if (sf_value_numel(y) == 0) return SCANFUSE_OK;
    sf_buf *b = g->src;
    if (oh) {
        sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_ELEM, ni);
        int ox = sf_cg_operand(k, n->in[0], SF_CUOP_OWN, 0, false);
        int oy = sf_cg_operand(k, n->out[0], SF_CUOP_ITER, 0, true);
        open_elem(g, k, y->ndim, y->shape);
        sf_buf_printf(b, "const i64 v = sf_ld_%s(a.ptr[%d], ", sf_cg_sfx(x->dtype), ox);
        sf_cg_offset(b, "c", ox, x->ndim, sf_cg_iota_dims, x->shape);
        sf_buf_printf(b, ");\nsf_st_i64(a.ptr[%d], ", oy);
        sf_cg_offset(b, "c", oy, y->ndim, sf_cg_iota_dims, y->shape);
        sf_buf_printf(b, ", (i64)(v == c%d));\n", y->ndim - 1);
        close_elem(g);
        return SCANFUSE_OK;
    }
    /* bincount: zero the counts, then count with 64-bit atomics */
    sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_ELEM, ni);
    int oy = sf_cg_operand(k, n->out[0], SF_CUOP_ITER, 0, true);
    open_elem(g, k, y->ndim, y->shape);
    sf_buf_printf(b, "sf_st_i64(a.ptr[%d], c0 * a.st[%d][0], 0);\n", oy, oy);
    close_elem(g);
    if (sf_value_numel(x) == 0) return SCANFUSE_OK;
    k = sf_cg_new_kernel(g, SF_CUK_ELEM, ni);
    int ox = sf_cg_operand(k, n->in[0], SF_CUOP_OWN, 0, false);
    oy = sf_cg_operand(k, n->out[0], SF_CUOP_OWN, 0, true); /* y is 1-d */
    /* bin_smem=1 (an experiment, not yet run on a GPU): each block counts 4096 ids a
     * round into shared memory, then adds its nonzero counts to y, so 256 counters see
     * a few thousand global atomics instead of one an id (DeepSeek's 32768 ids: 7.5 µs,
     * NOTES session 11) */
    int64_t nx = sf_value_numel(x);
    bool smem = sf_cg_tune("bin_smem", 0) == 1 && C <= 4096 && nx > 4096;
    if (smem) {
        int ki = (int)(k - g->pl->k);
        k->ndim = x->ndim;
        for (int d = 0; d < x->ndim; d++) k->shape[d] = x->shape[d];
        k->block = 256;
        k->grid = sf_cg_grid(sf_cg_ceil_div(nx, 4096));
        sf_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n", ki);
        sf_buf_printf(b, "__shared__ unsigned s_h[%lld];\nfor (int q = threadIdx.x; q < %lld; q += 256) s_h[q] = 0u;\n"
                         "__syncthreads();\n", (long long)C, (long long)C);
        sf_buf_printf(b, "for (i64 i = (i64)blockIdx.x * 256 + threadIdx.x; i < %lldll; i += (i64)gridDim.x * 256) {\n",
                      (long long)nx);
        sf_cg_coords(b, "c", "i", x->ndim, sf_cg_iota_dims, x->shape);
    } else {
        open_elem(g, k, x->ndim, x->shape);
    }
    sf_buf_printf(b, "const i64 v = sf_ld_%s(a.ptr[%d], ", sf_cg_sfx(x->dtype), ox);
    sf_cg_offset(b, "c", ox, x->ndim, sf_cg_iota_dims, x->shape);
    if (smem) {
        sf_buf_printf(b, ");\nif (v >= 0 && v < %lldll) atomicAdd(&s_h[v], 1u);\n}\n__syncthreads();\n", (long long)C);
        sf_buf_printf(b, "for (int q = threadIdx.x; q < %lld; q += 256)\n"
                         "if (s_h[q]) atomicAdd((unsigned long long*)((i64*)a.ptr[%d] + q * a.st[%d][0]), (unsigned long long)s_h[q]);\n"
                         "}\n\n", (long long)C, oy, oy);
        return SCANFUSE_OK;
    }
    sf_buf_printf(b, ");\nif (v >= 0 && v < %lldll) atomicAdd((unsigned long long*)((i64*)a.ptr[%d] + v * a.st[%d][0]), 1ull);\n",
                  (long long)C, oy, oy);
    close_elem(g);
    return SCANFUSE_OK;
}

/* topk and argsort */
static scanfuse_status emit_sort(sf_cg *g, int ni) {
    const scanfuse_fusion *f = g->f;
    const sf_node *n = &f->nodes[ni];
    const sf_value *x = &f->values[n->in[0]], *y = &f->values[n->out[0]];
    bool topk = n->op == SF_OP_topk;
    int nd = x->ndim, dim = nd > 0 ? (int)n->a.dim : 0;
    int64_t len = nd > 0 ? x->shape[dim] : 1;
    int64_t K = topk ? n->a.count : len;
    int64_t rows = len > 0 ? sf_value_numel(x) / len : 0;
    if (n->op == SF_OP_argsort && n->a.has_count) {
        char range[64];
        snprintf(range, sizeof range, "range=%lld", (long long)n->a.count);
        check_kernel(g, ni, n->in[0], n->a.count, "key", range);
    }
    if (sf_value_numel(y) == 0 || rows == 0 || K == 0) return SCANFUSE_OK;
    bool desc = topk ? n->a.largest : n->a.descending;
    bool isf = sf_dtype_is_float(x->dtype);
    sf_buf *b = g->src;
    /* the So struct: keys of x, outputs of items */
    int ki0 = g->pl->nkernels;
    char so[32];
    snprintf(so, sizeof so, "So_k%d", ki0);
    int other[SF_MAX_DIMS], no = 0;
    for (int d = 0; d < nd; d++)
        if (d != dim) other[no++] = d;
    /* operands are the same for every kernel of the sort: 0 x, 1 values or positions,
     * 2 indices (topk) */
    sf_cuda_operand ops[3];
    int nops = topk ? 3 : 2;
    memset(ops, 0, sizeof ops);
    for (int q = 0; q < nops; q++) {
        ops[q].value = q == 0 ? n->in[0] : n->out[q - 1];
        ops[q].mode = SF_CUOP_OWN;
        ops[q].out = q > 0;
        ops[q].out_index = -1;
    }
    sf_buf_printf(b, "struct %s {\n", so);
    sf_buf_puts(b, "static __device__ __forceinline__ u64 key(const sf_args& a, i64 r, i64 t) {\n");
    sf_cg_coords(b, "c", "r", no, other, x->shape);
    sf_buf_printf(b, "const i64 o = (");
    sf_cg_offset(b, "c", 0, no, other, x->shape);
    if (nd > 0) sf_buf_printf(b, ") + t * a.st[0][%d];\n", dim);
    else sf_buf_puts(b, ") + 0 * t;\n");
    if (isf) sf_buf_printf(b, "return sf_d2b(sf_ld_%s(a.ptr[0], o));\n}\n", sf_cg_sfx(x->dtype));
    else sf_buf_printf(b, "return (u64)sf_ld_%s(a.ptr[0], o);\n}\n", sf_cg_sfx(x->dtype));
    sf_buf_puts(b, "static __device__ __forceinline__ void out(const sf_args& a, i64 r, i64 j, const sf_skey& it) {\n");
    sf_cg_coords(b, "c", "r", no, other, y->shape);
    for (int q = 1; q < nops; q++) {
        sf_buf_printf(b, "const i64 o%d = (", q);
        sf_cg_offset(b, "c", q, no, other, y->shape);
        if (nd > 0) sf_buf_printf(b, ") + j * a.st[%d][%d];\n", q, dim);
        else sf_buf_puts(b, ") + 0 * j;\n");
    }
    if (topk) {
        if (isf) sf_buf_printf(b, "sf_st_%s(a.ptr[1], o1, sf_b2d(it.k));\n", sf_cg_sfx(y->dtype));
        else sf_buf_printf(b, "sf_st_%s(a.ptr[1], o1, (i64)it.k);\n", sf_cg_sfx(y->dtype));
        sf_buf_puts(b, "sf_st_i64(a.ptr[2], o2, it.pos);\n}\n};\n");
    } else {
        sf_buf_puts(b, "sf_st_i64(a.ptr[1], o1, it.pos);\n}\n};\n");
    }
    const char *tf = isf ? "true" : "false", *df = desc ? "true" : "false";
    int sms = g->sms > 0 ? g->sms : 132;
    /* argsort of a permutation (the MoE's inverse): a scatter (cuda_small.c) */
    if (!topk && sf_cg_perm_sort(g, ni, so, ops, nops)) return SCANFUSE_OK;
    /* topk of short rows: a warp a row (cuda_small.c) */
    if (topk && sf_cg_warp_topk(g, ni, so, ops, nops)) return SCANFUSE_OK;
    /* argsort of integer keys in a known small range (range=, or made by topk/argsort):
     * a counting sort, one block a row (as the CPU, for R <= 2n + 16) */
    int64_t krange = 0, rlo, rhi;
    if (!topk && !isf) {
        if (n->a.has_count) krange = n->a.count;
        else if (sf_int_range(f, n->in[0], &rlo, &rhi) && rlo >= 0) krange = rhi + 1;
    }
    if (krange > 0 && krange <= 1024 && krange <= 2 * len + 16 && len < ((int64_t)1 << 30)) {
        int R = 32;
        while (R < krange) R *= 2;
        /* a few long rows (DeepSeek's 32768 (token, slot) pairs: one block took 166 µs):
         * chunks of CH over many blocks, in three passes (histograms, starts, placing);
         * at most 65536 chunks in all, so the counts (R ints a chunk) stay bounded */
        int64_t CH = 1024;
        while (rows * sf_cg_ceil_div(len, CH) > 65536) CH *= 2;
        const int64_t nch = sf_cg_ceil_div(len, CH);
        if (rows < sms && nch >= 4 && sf_cg_tune("count_split", 1)) {
            static const char *const pass[5] = {"sf_count_split_hist<%s, %s, %d>(a, %lldll, %lldll, %lldll, %lldll);\n",
                                                "sf_count_split_scan<%d>(a, %lldll, %lldll, %lldll);\n",
                                                "sf_count_split_place<%s, %s, %d>(a, %lldll, %lldll, %lldll, %lldll);\n",
                                                "sf_count_split_place_scan<%s, %s, %d>(a, %lldll, %lldll, %lldll, %lldll);\n",
                                                "sf_count_split_hist_cm<%s, %s, %d>(a, %lldll, %lldll, %lldll, %lldll);\n"};
            /* two kernels when a row's counts are few (each placing block reads them all:
             * at most 64 chunks and 16384 counts; tuning count_split2=0: three) */
            bool two = nch <= 64 && R * nch <= 16384 && sf_cg_tune("count_split2", 1) != 0;
            if (two && !strstr(b->data ? b->data : "", "#define SF_SPLIT_PLACE_SCAN"))
                for (int i = 0; split_prelude[i]; i++) {
                    sf_buf_puts(b, split_prelude[i]);
                    sf_buf_puts(b, "\n");
                }
            for (int q = 0; q < 3; q++) {
                if (two && q == 1) continue;
                sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_SORT, ni);
                k->nops = nops;
                memcpy(k->ops, ops, sizeof ops);
                k->block = q == 1 ? 1024 : 256; /* the starts: 8192 counts a round */
                int64_t blocks = q == 1 ? rows : rows * nch;
                k->grid = sf_cg_grid(blocks < (int64_t)sms * 64 ? blocks : (int64_t)sms * 64);
                k->scratch_bytes = q == 0 ? rows * R * nch * 4 : -1;
                sf_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%u) k%d(const sf_args a) {\n",
                              k->block, (int)(k - g->pl->k));
                if (q == 1) sf_buf_printf(b, pass[1], R, (long long)rows, (long long)len, (long long)CH);
                else
                    sf_buf_printf(b, pass[two ? (q == 2 ? 3 : 4) : q], so, df, R, (long long)rows, (long long)len,
                                  (long long)krange, (long long)CH);
                sf_buf_puts(b, "}\n\n");
            }
            return SCANFUSE_OK;
        }
        sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_SORT, ni);
        k->nops = nops;
        memcpy(k->ops, ops, sizeof ops);
        k->block = 256;
        k->grid = sf_cg_grid(rows < (int64_t)sms * 64 ? rows : (int64_t)sms * 64);
        sf_buf_printf(b,
                      "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                      "sf_count_sort<%s, %s, %d>(a, %lldll, %lldll, %lldll);\n}\n\n",
                      (int)(k - g->pl->k), so, df, R, (long long)rows, (long long)len,
                      (long long)krange);
        return SCANFUSE_OK;
    }
    if (len <= 2048) {
        int P = 1;
        while (P < len) P *= 2;
        if (P < 2) P = 2;
        sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_SORT, ni);
        k->nops = nops;
        memcpy(k->ops, ops, sizeof ops);
        k->block = P >= 512 ? 256 : (unsigned)(P / 2 < 32 ? 32 : P / 2);
        k->grid = sf_cg_grid(rows < (int64_t)sms * 64 ? rows : (int64_t)sms * 64);
        sf_buf_printf(b,
                      "extern \"C\" __global__ void __launch_bounds__(%u) k%d(const sf_args a) {\n"
                      "sf_sort_small<%s, %s, %s, %d>(a, %lldll, %lldll, %lldll);\n}\n\n",
                      k->block, (int)(k - g->pl->k), so, tf, df, P, (long long)rows, (long long)len,
                      (long long)K);
        return SCANFUSE_OK;
    }
    /* long rows: runs of 2048, merge passes, emit */
    int64_t items = rows * len;
    int64_t half = items * 16; /* bytes of one buffer of items */
    sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_SORT, ni);
    k->nops = nops;
    memcpy(k->ops, ops, sizeof ops);
    k->scratch_bytes = 2 * half;
    k->block = 256;
    k->grid = sf_cg_grid(rows * sf_cg_ceil_div(len, 2048));
    sf_buf_printf(b,
                  "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                  "sf_sort_chunks<%s, %s, %s, 2048>(a, %lldll, %lldll, (sf_skey*)a.scratch);\n}\n\n",
                  (int)(k - g->pl->k), so, tf, df, (long long)rows, (long long)len);
    int parity = 0; /* the buffer holding the current runs */
    for (int64_t w = 2048; w < len; w *= 2) {
        sf_cuda_kernel *m = sf_cg_new_kernel(g, SF_CUK_SORT, ni);
        m->nops = nops;
        memcpy(m->ops, ops, sizeof ops);
        m->scratch_bytes = -1;
        m->block = 256;
        m->grid = sf_cg_grid(sf_cg_ceil_div(items, 256) < (int64_t)sms * 64 ? sf_cg_ceil_div(items, 256) : (int64_t)sms * 64);
        sf_buf_printf(b,
                      "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                      "sf_merge_pass<%s, %s>((const sf_skey*)(a.scratch + %lldull), (sf_skey*)(a.scratch + %lldull), %lldll, %lldll, %lldll);\n}\n\n",
                      (int)(m - g->pl->k), tf, df, (long long)(parity ? half : 0),
                      (long long)(parity ? 0 : half), (long long)rows, (long long)len, (long long)w);
        parity ^= 1;
    }
    sf_cuda_kernel *e = sf_cg_new_kernel(g, SF_CUK_SORT, ni);
    e->nops = nops;
    memcpy(e->ops, ops, sizeof ops);
    e->scratch_bytes = -1;
    e->block = 256;
    e->grid = elem_grid(g, rows * K);
    sf_buf_printf(b,
                  "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                  "sf_sort_emit<%s>(a, (const sf_skey*)(a.scratch + %lldull), %lldll, %lldll, %lldll);\n}\n\n",
                  (int)(e - g->pl->k), so, (long long)(parity ? half : 0), (long long)rows,
                  (long long)len, (long long)K);
    return SCANFUSE_OK;
}

scanfuse_status sf_cg_index(sf_cg *g, int node, char *msg, size_t msglen) {
    const sf_node *n = &g->f->nodes[node];
    switch (n->op) {
    case SF_OP_gather: case SF_OP_take_along_dim: case SF_OP_index_select:
        return emit_gather(g, node);
    case SF_OP_scatter: return emit_scatter(g, node);
    case SF_OP_one_hot: case SF_OP_bincount: return emit_ids(g, node);
    case SF_OP_topk: case SF_OP_argsort: return emit_sort(g, node);
    default: break;
    }
    sf_msg(msg, msglen, "cuda: %s is not an index op", sf_op_table[n->op].name);
    return SCANFUSE_ERROR_UNSUPPORTED;
}
