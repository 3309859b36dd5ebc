/*
 * ranges.c — what the compiler knows statically about the values of integer tensors:
 * an inclusive range [lo, hi] followed from the ops that made them (the index outputs
 * of topk, argsort, argmax and argmin; views, widening casts, floor division and
 * remainder by a positive literal, adding or subtracting a literal).  Backends use it to
 * drop run-time index checks that cannot fail: a program none of whose checks can fail
 * writes its results straight into the caller's outputs instead of staging them (a
 * failed run must leave the outputs untouched).  In the MoE examples every gather reads
 * indices made by argsort, so neither backend checks them.
 */
#include "sf.h"

static bool range_of(const scanfuse_fusion *f, int32_t v, int64_t *lo, int64_t *hi, int depth) {
    const sf_value *val = &f->values[v];
    if (depth > 32 || val->producer < 0 || sf_dtype_is_float(val->dtype)) return false;
    const sf_node *p = &f->nodes[val->producer];
    const sf_value *x = p->nin > 0 ? &f->values[p->in[0]] : NULL;
    int64_t a, b, c = 0;
    /* a positive integer literal as the second operand */
    bool lit = p->nin == 2 && f->values[p->in[1]].weak &&
               f->values[p->in[1]].producer >= 0 &&
               f->nodes[f->values[p->in[1]].producer].op == SF_OP_scalar &&
               f->nodes[f->values[p->in[1]].producer].a.value.kind == SF_NUM_INT;
    if (lit) c = f->nodes[f->values[p->in[1]].producer].a.value.i;
    const int64_t big = (int64_t)1 << 40; /* keeps the arithmetic below exact */
    switch (p->op) {
    case SF_OP_topk:
        if (val->slot != 1) return false;
        *lo = 0;
        *hi = (x->ndim > 0 ? x->shape[p->a.dim] : 1) - 1;
        return true;
    case SF_OP_argsort:
        *lo = 0;
        *hi = (x->ndim > 0 ? x->shape[p->a.dim] : 1) - 1;
        return true;
    case SF_OP_argmax: case SF_OP_argmin:
        *lo = 0;
        *hi = ((p->a.has_dim && x->ndim > 0) ? x->shape[p->a.dim] : sf_value_numel(x)) - 1;
        return true;
    case SF_OP_reshape: case SF_OP_permute: case SF_OP_slice: case SF_OP_expand:
        return range_of(f, p->in[0], lo, hi, depth + 1);
    case SF_OP_cast:
        if (!range_of(f, p->in[0], lo, hi, depth + 1)) return false;
        return *lo >= sf_int_min(val->dtype) && *hi <= sf_int_max(val->dtype);
    case SF_OP_floor_divide:
        if (!lit || c <= 0 || !range_of(f, p->in[0], &a, &b, depth + 1) || a < 0) return false;
        *lo = a / c;
        *hi = b / c;
        return true;
    case SF_OP_remainder:
        if (!lit || c <= 0) return false;
        *lo = 0;
        *hi = c - 1;
        return true;
    case SF_OP_add: case SF_OP_sub:
        if (!lit || c <= -big || c >= big || !range_of(f, p->in[0], &a, &b, depth + 1) ||
            a <= -big || b >= big)
            return false;
        *lo = p->op == SF_OP_add ? a + c : a - c;
        *hi = p->op == SF_OP_add ? b + c : b - c;
        return *lo >= sf_int_min(val->dtype) && *hi <= sf_int_max(val->dtype);
    default:
        return false;
    }
}

bool sf_index_in_range(const scanfuse_fusion *f, const sf_node *n) {
    const sf_value *x = &f->values[n->in[0]];
    int64_t lo, hi, size;
    int32_t ix = n->nin > 1 ? n->in[1] : n->in[0];
    switch (n->op) {
    case SF_OP_gather: case SF_OP_index_select: case SF_OP_scatter:
        size = x->ndim > 0 ? x->shape[n->a.dim] : 1;
        break;
    case SF_OP_take_along_dim:
        size = !n->a.has_dim ? sf_value_numel(x) : x->ndim > 0 ? x->shape[n->a.dim] : 1;
        break;
    case SF_OP_bincount: case SF_OP_one_hot: case SF_OP_argsort:
        size = n->a.count;
        break;
    default:
        return false;
    }
    return range_of(f, ix, &lo, &hi, 0) && lo >= 0 && hi < size;
}

bool sf_int_range(const scanfuse_fusion *f, int32_t v, int64_t *lo, int64_t *hi) {
    return range_of(f, v, lo, hi, 0);
}
