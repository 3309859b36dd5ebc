/*
 * decompose.c — the cumsum decompositions (sf_pass_decompose_cumsum): rebuilds a
 * fusion with every cumsum node replaced by an equivalent subgraph of other table ops,
 * in one of the two forms frameworks use when a compiler has no scan:
 *
 *   MATMUL      y = x @ U along the scanned dim, U[i][j] = 1 when input i contributes
 *               to output j: triu(ones, 0) inclusive, triu(ones, 1) exclusive,
 *               tril(ones, 0) reverse, tril(ones, -1) reverse exclusive;
 *   MASKED_SUM  y[j] = sum_i where(mask[i, j], x[i], 0), mask = arange(n)[:, None]
 *               OP arange(n)[None, :] with OP le / lt (exclusive) / ge / gt (reverse
 *               exclusive).
 *
 * Both forms first convert x to the result dtype R (cumsum semantics: the input is
 * converted first), move the scanned dim last (permute), flatten the other dims into
 * one batch dim B (reshape to [B, n], or [B, n, 1] for the masked sum, so at most 3
 * dims are ever used whatever the rank), scan, reshape and permute back.  Integer and
 * bool results are computed in int64 (wrapping, exactly as the native scan) and cast
 * back to R at the end; floating results are computed in R itself: matmul and sum
 * accumulate in double or better and round once, so they agree with the native scan
 * to within 1 ulp (the masked sum is exact-rounded like the native scan).
 *
 * Invariants and limits:
 *  - the value replacing a cumsum result has the same dtype and shape, and takes over
 *    its name (so outputs keep their names); it is always a fresh node;
 *  - an empty input (some size 0) becomes full(shape, 0, dtype=R): an empty result;
 *  - a 0-d input becomes cast(x, dtype=R), except an exclusive 0-d cumsum, which is
 *    left native (its identity result is the native scan's business);
 *  - MATMUL follows IEEE multiplication: an infinite x gives NaN (inf * 0) where the
 *    native scan gives an infinity, as in the frameworks that use this form;
 *  - the rebuilt fusion is made through the builder, so it satisfies the IR invariants
 *    by construction; on failure *f is left unchanged.
 */
#include "sf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sf_num num_int(int64_t v) {
    sf_num n;
    n.kind = SF_NUM_INT;
    n.i = v;
    n.f = (double)v;
    return n;
}

/* Emits a one-result node; returns its value id or -1 (the error is in nf). */
static int32_t emit1(scanfuse_fusion *nf, sf_op op, const int32_t *in, int nin,
                     const sf_attrs *a) {
    int32_t out[SF_MAX_OUT] = {-1, -1};
    if (sf_emit(nf, op, in, nin, a, out) != SCANFUSE_OK) return -1;
    return out[0];
}

static int32_t emit_cast(scanfuse_fusion *nf, int32_t x, scanfuse_dtype dt) {
    sf_attrs a;
    sf_attrs_init(&a);
    a.dtype = dt;
    return emit1(nf, SF_OP_cast, &x, 1, &a);
}

static int32_t emit_list_op(scanfuse_fusion *nf, sf_op op, int32_t x, int n,
                            const int64_t *list) {
    sf_attrs a;
    sf_attrs_init(&a);
    a.has_list = true;
    a.nlist = n;
    for (int i = 0; i < n; i++) a.list[i] = list[i];
    return emit1(nf, op, &x, 1, &a);
}

static int32_t emit_full(scanfuse_fusion *nf, int n, const int64_t *shape, int64_t value,
                         scanfuse_dtype dt) {
    sf_attrs a;
    sf_attrs_init(&a);
    a.has_list = true;
    a.nlist = n;
    for (int i = 0; i < n; i++) a.list[i] = shape[i];
    a.value = num_int(value);
    a.has_value = true;
    a.dtype = dt;
    return emit1(nf, SF_OP_full, NULL, 0, &a);
}

static int32_t emit_binary(scanfuse_fusion *nf, sf_op op, int32_t x, int32_t y) {
    int32_t in[2] = {x, y};
    sf_attrs a;
    sf_attrs_init(&a);
    return emit1(nf, op, in, 2, &a);
}

/* y[b, j] = sum_i x2[b, i] * U[i, j]; x2 is [B, n] of dtype c. */
static int32_t scan_matmul(scanfuse_fusion *nf, int32_t x2, int64_t n, scanfuse_dtype c,
                           bool exclusive, bool reverse) {
    int64_t nn[2] = {n, n};
    int32_t ones = emit_full(nf, 2, nn, 1, c);
    if (ones < 0) return -1;
    sf_attrs a;
    sf_attrs_init(&a);
    a.diagonal = reverse ? (exclusive ? -1 : 0) : (exclusive ? 1 : 0);
    int32_t u = emit1(nf, reverse ? SF_OP_tril : SF_OP_triu, &ones, 1, &a);
    if (u < 0) return -1;
    return emit_binary(nf, SF_OP_matmul, x2, u);
}

/* y[b, j] = sum_i where(mask[i, j], x3[b, i, 0], 0); x3 is [B, n, 1] of dtype c. */
static int32_t scan_masked_sum(scanfuse_fusion *nf, int32_t x3, int64_t n, scanfuse_dtype c,
                               bool exclusive, bool reverse) {
    sf_attrs a;
    sf_attrs_init(&a);
    a.start = num_int(0);
    a.end = num_int(n);
    a.step = num_int(1);
    a.has_start = a.has_end = a.has_step = true;
    a.dtype = SCANFUSE_INT64;
    int32_t ar = emit1(nf, SF_OP_arange, NULL, 0, &a);
    if (ar < 0) return -1;
    int64_t col[2] = {n, 1}, row[2] = {1, n};
    int32_t ai = emit_list_op(nf, SF_OP_reshape, ar, 2, col);
    if (ai < 0) return -1;
    int32_t aj = emit_list_op(nf, SF_OP_reshape, ar, 2, row);
    if (aj < 0) return -1;
    sf_op cmp = reverse ? (exclusive ? SF_OP_gt : SF_OP_ge) : (exclusive ? SF_OP_lt : SF_OP_le);
    int32_t mask = emit_binary(nf, cmp, ai, aj);
    if (mask < 0) return -1;
    int64_t one[1] = {1};
    int32_t zero = emit_full(nf, 1, one, 0, c);
    if (zero < 0) return -1;
    int32_t in[3] = {mask, x3, zero};
    sf_attrs_init(&a);
    int32_t w = emit1(nf, SF_OP_where, in, 3, &a); /* [B, n, n] */
    if (w < 0) return -1;
    sf_attrs_init(&a);
    a.has_list = true;
    a.nlist = 1;
    a.list[0] = 1;
    a.keepdim = false;
    a.dtype = c;
    return emit1(nf, SF_OP_sum, &w, 1, &a); /* [B, n] */
}

/*
 * Emits the decomposition of cumsum node n (of the old fusion) whose input is x in nf
 * and whose result is res.  Returns the replacing value, -1 on a builder error, or -2
 * to keep the node native.
 */
static int32_t decompose_one(scanfuse_fusion *nf, int32_t x, const sf_node *n,
                             const sf_value *res, scanfuse_cumsum_mode mode) {
    /* nf->values may move as nodes are appended: copy what is needed first. */
    const scanfuse_dtype xdt = nf->values[x].dtype;
    const int d = nf->values[x].ndim;
    int64_t shape[SF_MAX_DIMS];
    for (int i = 0; i < d; i++) shape[i] = nf->values[x].shape[i];
    const scanfuse_dtype r = res->dtype;
    const bool exclusive = n->a.exclusive, reverse = n->a.reverse;

    if (d == 0) return exclusive ? -2 : emit_cast(nf, x, r);
    int64_t numel = sf_numel(d, shape);
    if (numel == 0) return emit_full(nf, d, shape, 0, r);

    const int k = (int)n->a.dim;
    SF_ASSERT(k >= 0 && k < d);
    const int64_t len = shape[k];
    const int64_t batch = numel / len;
    const scanfuse_dtype c = sf_dtype_is_intlike(r) ? SCANFUSE_INT64 : r;

    int32_t v = x;
    if (xdt != r && (v = emit_cast(nf, v, r)) < 0) return -1;
    if (c != r && (v = emit_cast(nf, v, c)) < 0) return -1;

    /* Move the scanned dim last: perm = [0..k-1, k+1..d-1, k]. */
    int64_t perm[SF_MAX_DIMS], inv[SF_MAX_DIMS], pshape[SF_MAX_DIMS];
    for (int i = 0, j = 0; i < d; i++)
        if (i != k) perm[j++] = i;
    perm[d - 1] = k;
    for (int i = 0; i < d; i++) {
        inv[perm[i]] = i;
        pshape[i] = shape[perm[i]];
    }
    const bool permuted = k != d - 1;
    if (permuted && (v = emit_list_op(nf, SF_OP_permute, v, d, perm)) < 0) return -1;

    int32_t y;
    if (mode == SCANFUSE_CUMSUM_MATMUL) {
        int64_t s2[2] = {batch, len};
        if (d != 2 && (v = emit_list_op(nf, SF_OP_reshape, v, 2, s2)) < 0) return -1;
        y = scan_matmul(nf, v, len, c, exclusive, reverse);
    } else {
        int64_t s3[3] = {batch, len, 1};
        if ((v = emit_list_op(nf, SF_OP_reshape, v, 3, s3)) < 0) return -1;
        y = scan_masked_sum(nf, v, len, c, exclusive, reverse);
    }
    if (y < 0) return -1;
    if (d != 2 && (y = emit_list_op(nf, SF_OP_reshape, y, d, pshape)) < 0) return -1;
    if (permuted && (y = emit_list_op(nf, SF_OP_permute, y, d, inv)) < 0) return -1;
    if (c != r && (y = emit_cast(nf, y, r)) < 0) return -1;
    return y;
}

scanfuse_status sf_pass_decompose_cumsum(scanfuse_fusion **pf, scanfuse_cumsum_mode mode,
                                         char *msg, size_t msglen) {
    if (!pf || !*pf) {
        sf_msg(msg, msglen, "decompose: no fusion");
        return SCANFUSE_ERROR_STATE;
    }
    const scanfuse_fusion *f = *pf;
    if (f->status != SCANFUSE_OK) {
        sf_msg(msg, msglen, "decompose: %s", f->error);
        return SCANFUSE_ERROR_STATE;
    }
    if (mode == SCANFUSE_CUMSUM_NATIVE) return SCANFUSE_OK;
    if (mode != SCANFUSE_CUMSUM_MATMUL && mode != SCANFUSE_CUMSUM_MASKED_SUM) {
        sf_msg(msg, msglen, "decompose: invalid cumsum mode %d", (int)mode);
        return SCANFUSE_ERROR_ARGUMENT;
    }
    bool any = false;
    for (int i = 0; i < f->nnodes && !any; i++) any = f->nodes[i].op == SF_OP_cumsum;
    if (!any) return SCANFUSE_OK; /* nothing to rewrite: keep the fusion as it is */

    int32_t *map = sf_malloc((size_t)(f->nvalues > 0 ? f->nvalues : 1) * sizeof *map);
    scanfuse_fusion *nf = scanfuse_fusion_new();
    scanfuse_status st = SCANFUSE_OK;
    if (!map || !nf) {
        sf_msg(msg, msglen, "decompose: out of memory");
        st = SCANFUSE_ERROR_MEMORY;
        goto done;
    }
    for (int32_t id = 0; id < f->nvalues; id++) map[id] = -1;

    st = sf_rebuild_inputs(f, nf, map, "decompose", msg, msglen);
    for (int i = 0; i < f->nnodes && st == SCANFUSE_OK; i++) {
        const sf_node *n = &f->nodes[i];
        int32_t in[SF_MAX_IN], out[SF_MAX_OUT] = {-1, -1};
        for (int k = 0; k < n->nin; k++) {
            in[k] = map[n->in[k]];
            SF_ASSERT(in[k] >= 0);
        }
        char what[48];
        snprintf(what, sizeof what, "node %d (%s)", i, sf_op_table[n->op].name);
        if (n->op == SF_OP_cumsum) {
            int32_t y = decompose_one(nf, in[0], n, &f->values[n->out[0]], mode);
            if (y == -1) {
                st = sf_rebuild_error("decompose", nf, what, msg, msglen);
                break;
            }
            if (y >= 0) {
                map[n->out[0]] = y;
                continue;
            }
            /* y == -2: keep this cumsum native */
        }
        if (sf_emit(nf, n->op, in, n->nin, &n->a, out) != SCANFUSE_OK) {
            st = sf_rebuild_error("decompose", nf, what, msg, msglen);
            break;
        }
        for (int k = 0; k < n->nout; k++) map[n->out[k]] = out[k];
    }
    if (st == SCANFUSE_OK) st = sf_rebuild_names_outputs(f, nf, map, "decompose", msg, msglen);
done:
    free(map);
    if (st != SCANFUSE_OK) {
        scanfuse_fusion_free(nf);
        return st;
    }
    scanfuse_fusion_free(*pf);
    *pf = nf;
    return SCANFUSE_OK;
}
