/*
 * infer.c — type and shape inference for every op, and the canonical form of its
 * attributes.  This file is where PyTorch's semantics for result dtypes (type
 * promotion with weak scalars and 0-d tensors), broadcasting, reductions, shape ops,
 * creation ops, matmul and the index and sort ops are decided; every other module
 * trusts what it computes.
 *
 * Invariants:
 *  - sf_infer has no side effects on the fusion; on failure it writes "OP: message"
 *    and returns a status, and it never reads outside the fusion's value array or an
 *    attribute list's bounds, whatever the caller passes.
 *  - The canonical attributes are built from zero (memset) with only the fields the
 *    op uses, each normalized, so two nodes with the same meaning have byte-identical
 *    attributes and inferring canonical attributes again reproduces them exactly.
 *  - Every result shape has at most SCANFUSE_MAX_DIMS dims and an element count that
 *    fits in int64.
 */
#include "sf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------------ */
/* Broadcasting and type promotion                                                 */
/* ------------------------------------------------------------------------------ */

bool sf_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                         int64_t *out) {
    if (na < 0 || nb < 0 || na > SF_MAX_DIMS || nb > SF_MAX_DIMS) return false;
    int n = na > nb ? na : nb;
    int64_t tmp[SF_MAX_DIMS];
    /* Align from the right; a missing dim acts as size 1. */
    for (int i = 0; i < n; i++) {
        int64_t sa = i < na ? a[na - 1 - i] : 1;
        int64_t sb = i < nb ? b[nb - 1 - i] : 1;
        int64_t s;
        if (sa == sb) s = sa;
        else if (sa == 1) s = sb;
        else if (sb == 1) s = sa;
        else return false;
        tmp[n - 1 - i] = s;
    }
    /* out may alias a or b, hence the copy at the end. */
    for (int i = 0; i < n; i++) out[i] = tmp[i];
    *nout = n;
    return true;
}

/* PyTorch's combine_categories: the higher tier wins unless the lower tier has a
 * higher category (bool < integer < floating); then the two promote, and a lower
 * float tier beating an integer tier keeps its own dtype through promotion. */
static scanfuse_dtype combine_tiers(scanfuse_dtype higher, scanfuse_dtype lower) {
    if (higher == SCANFUSE_DTYPE_NONE) return lower;
    if (lower == SCANFUSE_DTYPE_NONE) return higher;
    if (sf_dtype_is_float(higher)) return higher;
    if (higher == SCANFUSE_BOOL || sf_dtype_is_float(lower))
        return scanfuse_dtype_promote(higher, lower);
    return higher;
}

scanfuse_dtype sf_result_type(const scanfuse_fusion *f, const int32_t *in, int nin) {
    /* Three tiers: tensors with dims, 0-d tensors, weak (Python-like) scalars. */
    scanfuse_dtype dims = SCANFUSE_DTYPE_NONE, zero = SCANFUSE_DTYPE_NONE,
                   weak = SCANFUSE_DTYPE_NONE;
    if (!f || !in) return SCANFUSE_DTYPE_NONE;
    for (int i = 0; i < nin; i++) {
        if (in[i] < 0 || in[i] >= f->nvalues) continue;
        const sf_value *v = &f->values[in[i]];
        if (!sf_dtype_valid(v->dtype)) continue;
        if (v->weak) {
            /* A Python float is the default dtype (float32), a Python int int64. */
            scanfuse_dtype d = sf_dtype_is_float(v->dtype) ? SCANFUSE_FLOAT32
                               : v->dtype == SCANFUSE_BOOL ? SCANFUSE_BOOL
                                                           : SCANFUSE_INT64;
            weak = weak == SCANFUSE_DTYPE_NONE ? d : scanfuse_dtype_promote(weak, d);
        } else if (v->ndim == 0) {
            zero = zero == SCANFUSE_DTYPE_NONE ? v->dtype : scanfuse_dtype_promote(zero, v->dtype);
        } else {
            dims = dims == SCANFUSE_DTYPE_NONE ? v->dtype : scanfuse_dtype_promote(dims, v->dtype);
        }
    }
    return combine_tiers(dims, combine_tiers(zero, weak));
}

/* ------------------------------------------------------------------------------ */
/* Messages and small checks                                                       */
/* ------------------------------------------------------------------------------ */

/* Everything one inference needs to report an error. */
typedef struct ictx {
    const scanfuse_fusion *f;
    sf_op op;
    const char *name;
    char *msg;
    size_t msglen;
} ictx;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static scanfuse_status fail(const ictx *c, scanfuse_status st, const char *fmt, ...) {
    char body[SF_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    sf_msg(c->msg, c->msglen, "%s: %s", c->name, body);
    return st;
}

/* "[3, 4]" — shapes and lists in messages. */
static const char *fmt_list(char *out, size_t outlen, int n, const int64_t *v) {
    size_t len = (size_t)snprintf(out, outlen, "[");
    for (int i = 0; i < n && len < outlen; i++)
        len += (size_t)snprintf(out + len, outlen - len, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (len < outlen) snprintf(out + len, outlen - len, "]");
    return out;
}

static const char *fmt_num(char *out, size_t outlen, sf_num n) {
    if (n.kind == SF_NUM_INT) snprintf(out, outlen, "%lld", (long long)n.i);
    else if (n.kind == SF_NUM_BOOL) snprintf(out, outlen, "%s", n.i ? "true" : "false");
    else if (isnan(n.f)) snprintf(out, outlen, "nan");
    else if (isinf(n.f)) snprintf(out, outlen, n.f < 0 ? "-inf" : "inf");
    else snprintf(out, outlen, "%.17g", n.f);
    return out;
}

static const char *dt_name(scanfuse_dtype dt) { return scanfuse_dtype_name(dt); }

/* A number in normalized form: every field written (no stale bytes), the double
 * mirror of ints and bools filled, the int field of floats zero. */
static bool put_num(sf_num *dst, sf_num src) {
    memset(dst, 0, sizeof *dst);
    switch (src.kind) {
    case SF_NUM_INT:
        dst->kind = SF_NUM_INT;
        dst->i = src.i;
        dst->f = (double)src.i;
        return true;
    case SF_NUM_BOOL:
        dst->kind = SF_NUM_BOOL;
        dst->i = src.i != 0;
        dst->f = (double)dst->i;
        return true;
    case SF_NUM_FLOAT:
        dst->kind = SF_NUM_FLOAT;
        dst->f = src.f;
        return true;
    }
    return false;
}

static sf_num make_int(int64_t v) {
    sf_num n;
    memset(&n, 0, sizeof n);
    n.kind = SF_NUM_INT;
    n.i = v;
    n.f = (double)v;
    return n;
}

/* Wraps a possibly negative dim into [0, ndim); a 0-d tensor accepts -1 and 0 (as
 * PyTorch does) and maps both to 0. */
static scanfuse_status wrap_dim(const ictx *c, int64_t d, int ndim, int64_t *out) {
    int64_t n = ndim > 0 ? ndim : 1;
    if (d < -n || d >= n)
        return fail(c, SCANFUSE_ERROR_ARGUMENT, "dim %lld out of range for a %d-d tensor",
                    (long long)d, ndim);
    *out = d < 0 ? d + n : d;
    return SCANFUSE_OK;
}

/* The element count of a result must fit in int64. */
static scanfuse_status check_size(const ictx *c, int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (sf_mul_overflow(n, shape[i], &n)) {
            char sb[200];
            return fail(c, SCANFUSE_ERROR_MEMORY, "size overflows int64 (shape %s)",
                        fmt_list(sb, sizeof sb, ndim, shape));
        }
    }
    return SCANFUSE_OK;
}

/* a + b for sizes; false on int64 overflow. */
static bool add_overflow(int64_t a, int64_t b, int64_t *out) {
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return true;
    *out = a + b;
    return false;
}

static scanfuse_status check_list_len(const ictx *c, const sf_attrs *a, const char *pname,
                                      int maxlen) {
    if (a->nlist < 0 || a->nlist > SF_MAX_LIST)
        return fail(c, SCANFUSE_ERROR_ARGUMENT, "argument '%s' has an invalid length %d", pname,
                    a->nlist);
    if (a->nlist > maxlen) {
        char lb[400];
        return fail(c, SCANFUSE_ERROR_ARGUMENT, "argument '%s' %s has %d entries, more than %d",
                    pname, fmt_list(lb, sizeof lb, a->nlist, a->list), a->nlist, maxlen);
    }
    return SCANFUSE_OK;
}

/* A given dtype attribute must be a real dtype. */
static scanfuse_status check_dtype_attr(const ictx *c, scanfuse_dtype dt) {
    if (dt != SCANFUSE_DTYPE_NONE && !sf_dtype_valid(dt))
        return fail(c, SCANFUSE_ERROR_DTYPE, "invalid dtype %d for argument 'dtype'", (int)dt);
    return SCANFUSE_OK;
}

/* An int-valued number attribute (slice bounds). */
static scanfuse_status want_int(const ictx *c, const char *pname, sf_num n, int64_t *out) {
    if (n.kind != SF_NUM_INT) {
        char nb[40];
        return fail(c, SCANFUSE_ERROR_ARGUMENT, "argument '%s' must be an int, got %s %s", pname,
                    n.kind == SF_NUM_FLOAT ? "float" : n.kind == SF_NUM_BOOL ? "bool" : "invalid",
                    fmt_num(nb, sizeof nb, n));
    }
    *out = n.i;
    return SCANFUSE_OK;
}

static scanfuse_status want_num(const ictx *c, const char *pname, sf_num n) {
    if (n.kind != SF_NUM_INT && n.kind != SF_NUM_FLOAT && n.kind != SF_NUM_BOOL)
        return fail(c, SCANFUSE_ERROR_ARGUMENT, "argument '%s' is not a valid number", pname);
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Per-kind inference.  Each handler gets validated inputs and writes res and canon. */
/* ------------------------------------------------------------------------------ */

typedef struct infer_job {
    ictx c;
    const int32_t *in;
    int nin;
    const sf_value *x; /* the first input, or NULL */
    const sf_attrs *a;
    sf_attrs *canon;
    sf_value *res;
} infer_job;

static void set_shape(sf_value *r, int ndim, const int64_t *shape) {
    r->ndim = ndim;
    for (int i = 0; i < ndim; i++) r->shape[i] = shape[i];
}

/* The result dtype of a SUM-rule op (cumsum, cumprod, sum, prod). */
static scanfuse_dtype sum_dtype(scanfuse_dtype given, scanfuse_dtype input) {
    if (given != SCANFUSE_DTYPE_NONE) return given;
    return sf_dtype_is_intlike(input) ? SCANFUSE_INT64 : input;
}

static scanfuse_status infer_pointwise(infer_job *j) {
    const ictx *c = &j->c;
    const scanfuse_fusion *f = c->f;
    const sf_op_info *info = &sf_op_table[c->op];
    sf_value *r = &j->res[0];

    /* Shape: every tensor operand broadcasts against the others. */
    int n = 0;
    int64_t shape[SF_MAX_DIMS];
    for (int i = 0; i < j->nin; i++) {
        const sf_value *v = &f->values[j->in[i]];
        if (i == 0) {
            n = v->ndim;
            for (int d = 0; d < n; d++) shape[d] = v->shape[d];
        } else if (!sf_broadcast_shapes(n, shape, v->ndim, v->shape, &n, shape)) {
            char sa[200], sb[200];
            return fail(c, SCANFUSE_ERROR_SHAPE, "shapes %s and %s do not broadcast",
                        fmt_list(sa, sizeof sa, n, shape),
                        fmt_list(sb, sizeof sb, v->ndim, v->shape));
        }
    }
    set_shape(r, n, shape);

    switch (info->rule) {
    case SF_RULE_SAME: r->dtype = sf_result_type(f, j->in, j->nin); break;
    case SF_RULE_FLOAT: {
        scanfuse_dtype dt = sf_result_type(f, j->in, j->nin);
        r->dtype = sf_dtype_is_intlike(dt) ? SCANFUSE_FLOAT32 : dt;
        break;
    }
    case SF_RULE_BOOL: r->dtype = SCANFUSE_BOOL; break;
    case SF_RULE_CAST:
        if (j->a->dtype == SCANFUSE_DTYPE_NONE)
            return fail(c, SCANFUSE_ERROR_ARGUMENT, "missing required argument 'dtype'");
        r->dtype = j->a->dtype;
        j->canon->dtype = j->a->dtype;
        break;
    case SF_RULE_WHERE: {
        scanfuse_dtype cd = f->values[j->in[0]].dtype;
        if (cd != SCANFUSE_BOOL)
            return fail(c, SCANFUSE_ERROR_DTYPE,
                        "argument 'condition' must have dtype bool, got %s", dt_name(cd));
        r->dtype = sf_result_type(f, j->in + 1, j->nin - 1);
        break;
    }
    case SF_RULE_SUM: case SF_RULE_KEEP: case SF_RULE_CREATE: case SF_RULE_MEAN:
    case SF_RULE_INDEX: case SF_RULE_MATMUL:
        SF_ASSERT(!"pointwise op with a non-pointwise type rule");
        break;
    }
    return SCANFUSE_OK;
}

static scanfuse_status infer_scan(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x;
    int64_t dim = 0;
    scanfuse_status st = wrap_dim(c, j->a->dim, x->ndim, &dim);
    if (st != SCANFUSE_OK) return st;
    j->canon->dim = dim;
    j->canon->has_dim = true;
    j->canon->exclusive = j->a->exclusive;
    j->canon->reverse = j->a->reverse;

    sf_value *r = &j->res[0];
    set_shape(r, x->ndim, x->shape);
    if (sf_op_table[c->op].rule == SF_RULE_SUM) {
        r->dtype = sum_dtype(j->a->dtype, x->dtype);
        j->canon->dtype = r->dtype; /* only ops with a dtype parameter record it */
    } else {
        r->dtype = x->dtype;
    }
    if (sf_op_table[c->op].nout == 2) {
        set_shape(&j->res[1], x->ndim, x->shape);
        j->res[1].dtype = SCANFUSE_INT64;
    }
    return SCANFUSE_OK;
}

/* The shape left after reducing the marked dims (kept as size 1 with keepdim). */
static void reduced_shape(const sf_value *x, const bool *reduced, bool keepdim, sf_value *r) {
    int n = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!reduced[d]) r->shape[n++] = x->shape[d];
        else if (keepdim) r->shape[n++] = 1;
    }
    r->ndim = n;
}

static scanfuse_status infer_reduction(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x;
    const sf_attrs *a = j->a;
    sf_attrs *k = j->canon;
    sf_value *r = &j->res[0];
    bool reduced[SF_MAX_DIMS] = {false};
    bool no_identity = c->op == SF_OP_max || c->op == SF_OP_min || c->op == SF_OP_argmax ||
                       c->op == SF_OP_argmin;
    k->keepdim = a->keepdim;

    if (c->op == SF_OP_argmax || c->op == SF_OP_argmin) {
        if (!a->has_dim) {
            /* Over the flattened input; keepdim gives a shape of ones. */
            if (sf_value_numel(x) == 0)
                return fail(c, SCANFUSE_ERROR_SHAPE,
                            "cannot reduce an empty tensor (the op has no identity)");
            for (int d = 0; d < x->ndim; d++) reduced[d] = true;
        } else {
            int64_t dim = 0;
            scanfuse_status st = wrap_dim(c, a->dim, x->ndim, &dim);
            if (st != SCANFUSE_OK) return st;
            if (x->ndim > 0) {
                if (x->shape[dim] == 0)
                    return fail(c, SCANFUSE_ERROR_SHAPE,
                                "cannot reduce dim %lld of size 0 (the op has no identity)",
                                (long long)dim);
                reduced[dim] = true;
            }
            k->dim = dim;
            k->has_dim = true;
        }
        reduced_shape(x, reduced, a->keepdim, r);
        r->dtype = SCANFUSE_INT64;
        return SCANFUSE_OK;
    }

    /* sum/prod/max/min/mean: a list of dims; none (or PyTorch's legacy []) is all. */
    scanfuse_status st = check_list_len(c, a, "dim", SF_MAX_LIST);
    if (st != SCANFUSE_OK) return st;
    if (!a->has_list || a->nlist == 0) {
        for (int d = 0; d < x->ndim; d++) reduced[d] = true;
    } else {
        bool seen[SF_MAX_DIMS] = {false};
        for (int i = 0; i < a->nlist; i++) {
            int64_t dim = 0;
            st = wrap_dim(c, a->list[i], x->ndim, &dim);
            if (st != SCANFUSE_OK) return st;
            /* A 0-d tensor has one addressable "dim" (0) but nothing to reduce. */
            if (seen[dim])
                return fail(c, SCANFUSE_ERROR_ARGUMENT,
                            "dim %lld appears more than once in the list of dims",
                            (long long)dim);
            seen[dim] = true;
            if (x->ndim > 0) reduced[dim] = true;
        }
    }
    k->nlist = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!reduced[d]) continue;
        if (no_identity && x->shape[d] == 0)
            return fail(c, SCANFUSE_ERROR_SHAPE,
                        "cannot reduce dim %d of size 0 (the op has no identity)", d);
        k->list[k->nlist++] = d;
    }
    k->has_list = true;
    reduced_shape(x, reduced, a->keepdim, r);

    switch (sf_op_table[c->op].rule) {
    case SF_RULE_SUM:
        r->dtype = sum_dtype(a->dtype, x->dtype);
        k->dtype = r->dtype;
        break;
    case SF_RULE_MEAN:
        if (a->dtype != SCANFUSE_DTYPE_NONE && !sf_dtype_is_float(a->dtype))
            return fail(c, SCANFUSE_ERROR_DTYPE,
                        "argument 'dtype' must be a floating dtype, got %s", dt_name(a->dtype));
        r->dtype = a->dtype != SCANFUSE_DTYPE_NONE ? a->dtype : x->dtype;
        k->dtype = r->dtype;
        break;
    case SF_RULE_KEEP: r->dtype = x->dtype; break;
    case SF_RULE_SAME: case SF_RULE_FLOAT: case SF_RULE_BOOL: case SF_RULE_CAST:
    case SF_RULE_WHERE: case SF_RULE_CREATE: case SF_RULE_INDEX: case SF_RULE_MATMUL:
        SF_ASSERT(!"reduction with an unexpected type rule");
        break;
    }
    return SCANFUSE_OK;
}

static scanfuse_status infer_expand(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x;
    const sf_attrs *a = j->a;
    scanfuse_status st = check_list_len(c, a, "size", SF_MAX_DIMS);
    if (st != SCANFUSE_OK) return st;
    char lb[400], sb[200];
    fmt_list(lb, sizeof lb, a->nlist, a->list);
    fmt_list(sb, sizeof sb, x->ndim, x->shape);
    if (a->nlist < x->ndim)
        return fail(c, SCANFUSE_ERROR_ARGUMENT,
                    "size %s has fewer dims than the %d-d input of shape %s", lb, x->ndim, sb);
    int lead = a->nlist - x->ndim; /* new dims are prepended */
    sf_value *r = &j->res[0];
    for (int i = 0; i < a->nlist; i++) {
        int64_t s = a->list[i];
        if (i < lead) {
            if (s < 0)
                return fail(c, SCANFUSE_ERROR_ARGUMENT,
                            "size %lld is not allowed for the new leading dim %d (size %s)",
                            (long long)s, i, lb);
            r->shape[i] = s;
            continue;
        }
        int64_t in = x->shape[i - lead];
        if (s == -1) {
            r->shape[i] = in;
        } else if (s < 0) {
            return fail(c, SCANFUSE_ERROR_ARGUMENT, "negative size %lld in size %s",
                        (long long)s, lb);
        } else if (s == in || in == 1) {
            r->shape[i] = s;
        } else {
            return fail(c, SCANFUSE_ERROR_SHAPE,
                        "cannot expand dim %d of size %lld to size %lld (shape %s to %s)",
                        i - lead, (long long)in, (long long)s, sb, lb);
        }
    }
    r->ndim = a->nlist;
    r->dtype = x->dtype;
    for (int i = 0; i < r->ndim; i++) j->canon->list[i] = r->shape[i];
    j->canon->nlist = r->ndim;
    j->canon->has_list = true;
    return SCANFUSE_OK;
}

static scanfuse_status infer_reshape(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x;
    const sf_attrs *a = j->a;
    scanfuse_status st = check_list_len(c, a, "shape", SF_MAX_DIMS);
    if (st != SCANFUSE_OK) return st;
    char lb[400];
    fmt_list(lb, sizeof lb, a->nlist, a->list);
    int64_t numel = sf_value_numel(x);
    int infer_at = -1;
    int64_t known = 1;
    bool overflow = false;
    for (int i = 0; i < a->nlist; i++) {
        int64_t s = a->list[i];
        if (s == -1) {
            if (infer_at >= 0)
                return fail(c, SCANFUSE_ERROR_ARGUMENT, "only one dim may be -1, got shape %s",
                            lb);
            infer_at = i;
        } else if (s < 0) {
            return fail(c, SCANFUSE_ERROR_ARGUMENT, "negative size %lld in shape %s",
                        (long long)s, lb);
        } else if (!overflow && sf_mul_overflow(known, s, &known)) {
            overflow = true;
        }
    }
    sf_value *r = &j->res[0];
    for (int i = 0; i < a->nlist; i++) r->shape[i] = a->list[i];
    r->ndim = a->nlist;
    if (infer_at >= 0) {
        if (!overflow && known == 0)
            return fail(c, SCANFUSE_ERROR_ARGUMENT,
                        "cannot infer the -1 in shape %s for an input of %lld elements "
                        "(it could be any size)",
                        lb, (long long)numel);
        if (overflow || numel % known != 0)
            return fail(c, SCANFUSE_ERROR_SHAPE, "shape %s is invalid for an input of %lld elements",
                        lb, (long long)numel);
        r->shape[infer_at] = numel / known;
    } else if (overflow || known != numel) {
        return fail(c, SCANFUSE_ERROR_SHAPE, "shape %s is invalid for an input of %lld elements",
                    lb, (long long)numel);
    }
    r->dtype = x->dtype;
    for (int i = 0; i < r->ndim; i++) j->canon->list[i] = r->shape[i];
    j->canon->nlist = r->ndim;
    j->canon->has_list = true;
    return SCANFUSE_OK;
}

static scanfuse_status infer_permute(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x;
    const sf_attrs *a = j->a;
    scanfuse_status st = check_list_len(c, a, "dims", SF_MAX_DIMS);
    if (st != SCANFUSE_OK) return st;
    char lb[400];
    fmt_list(lb, sizeof lb, a->nlist, a->list);
    if (a->nlist != x->ndim)
        return fail(c, SCANFUSE_ERROR_ARGUMENT,
                    "dims %s has %d entries, but the input is a %d-d tensor", lb, a->nlist,
                    x->ndim);
    bool seen[SF_MAX_DIMS] = {false};
    sf_value *r = &j->res[0];
    for (int i = 0; i < a->nlist; i++) {
        int64_t d = 0;
        st = wrap_dim(c, a->list[i], x->ndim, &d);
        if (st != SCANFUSE_OK) return st;
        if (seen[d])
            return fail(c, SCANFUSE_ERROR_ARGUMENT,
                        "dims %s is not a permutation (dim %lld repeats)", lb, (long long)d);
        seen[d] = true;
        j->canon->list[i] = d;
        r->shape[i] = x->shape[d];
    }
    r->ndim = x->ndim;
    r->dtype = x->dtype;
    j->canon->nlist = a->nlist;
    j->canon->has_list = true;
    return SCANFUSE_OK;
}

static scanfuse_status infer_slice(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x;
    const sf_attrs *a = j->a;
    if (x->ndim == 0) return fail(c, SCANFUSE_ERROR_ARGUMENT, "cannot slice a 0-d tensor");
    int64_t dim = 0;
    /* dim defaults to 0 (the signature's default), read even without has_dim */
    scanfuse_status st = wrap_dim(c, a->has_dim ? a->dim : 0, x->ndim, &dim);
    if (st != SCANFUSE_OK) return st;
    int64_t size = x->shape[dim];
    int64_t start = 0, end = size, step = 1;
    if (a->has_start && (st = want_int(c, "start", a->start, &start)) != SCANFUSE_OK) return st;
    if (a->has_end && (st = want_int(c, "end", a->end, &end)) != SCANFUSE_OK) return st;
    if (a->has_step && (st = want_int(c, "step", a->step, &step)) != SCANFUSE_OK) return st;
    if (step <= 0)
        return fail(c, SCANFUSE_ERROR_ARGUMENT, "step must be positive, got %lld",
                    (long long)step);
    /* PyTorch's clamping: negative bounds count from the end, then clamp to [0, size],
     * and an end before the start gives an empty slice. */
    if (start < 0) start = start + size < 0 ? 0 : start + size;
    if (start > size) start = size;
    if (end < 0) end = end + size < 0 ? 0 : end + size;
    if (end > size) end = size;
    if (end < start) end = start;
    int64_t len = end - start;
    sf_value *r = &j->res[0];
    set_shape(r, x->ndim, x->shape);
    r->shape[dim] = len == 0 ? 0 : (len - 1) / step + 1;
    r->dtype = x->dtype;
    sf_attrs *k = j->canon;
    k->dim = dim;
    k->has_dim = true;
    put_num(&k->start, make_int(start));
    put_num(&k->end, make_int(end));
    put_num(&k->step, make_int(step));
    k->has_start = k->has_end = k->has_step = true;
    return SCANFUSE_OK;
}

static scanfuse_status infer_pad(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x;
    const sf_attrs *a = j->a;
    scanfuse_status st = check_list_len(c, a, "pad", SF_MAX_LIST);
    if (st != SCANFUSE_OK) return st;
    char lb[400];
    fmt_list(lb, sizeof lb, a->nlist, a->list);
    if (a->nlist % 2 != 0)
        return fail(c, SCANFUSE_ERROR_ARGUMENT,
                    "pad %s has odd length %d (it holds pairs, last dim first)", lb, a->nlist);
    if (a->nlist / 2 > x->ndim)
        return fail(c, SCANFUSE_ERROR_ARGUMENT,
                    "pad %s of length %d is too long for a %d-d tensor", lb, a->nlist, x->ndim);
    sf_value *r = &j->res[0];
    set_shape(r, x->ndim, x->shape);
    for (int p = 0; p < a->nlist / 2; p++) {
        int d = x->ndim - 1 - p;
        int64_t s;
        if (add_overflow(x->shape[d], a->list[2 * p], &s) ||
            add_overflow(s, a->list[2 * p + 1], &s))
            return fail(c, SCANFUSE_ERROR_MEMORY, "size overflows int64 (pad %s)", lb);
        if (s < 0)
            return fail(c, SCANFUSE_ERROR_SHAPE,
                        "pad %s makes dim %d of size %lld negative (%lld)", lb, d,
                        (long long)x->shape[d], (long long)s);
        r->shape[d] = s;
    }
    r->dtype = x->dtype;

    /* The fill value in the input's category, so backends need no conversion. */
    sf_num v = a->has_value ? a->value : make_int(0);
    if ((st = want_num(c, "value", v)) != SCANFUSE_OK) return st;
    put_num(&v, v); /* a bool is exactly 0 or 1 from here on */
    sf_num conv;
    memset(&conv, 0, sizeof conv);
    double vd = v.kind == SF_NUM_FLOAT ? v.f : (double)v.i;
    switch (sf_dtype_category(x->dtype)) {
    case SF_CAT_FLOAT:
        conv.kind = SF_NUM_FLOAT;
        conv.f = vd;
        break;
    case SF_CAT_INT:
        conv.kind = SF_NUM_INT;
        conv.i = v.kind == SF_NUM_FLOAT ? sf_f64_to_int(v.f, SCANFUSE_INT64) : v.i;
        break;
    case SF_CAT_BOOL:
        conv.kind = SF_NUM_BOOL;
        conv.i = v.kind == SF_NUM_FLOAT ? v.f != 0.0 : v.i != 0; /* NaN is true */
        break;
    }
    sf_attrs *k = j->canon;
    put_num(&k->value, conv);
    k->has_value = true;
    for (int i = 0; i < a->nlist; i++) k->list[i] = a->list[i];
    k->nlist = a->nlist;
    k->has_list = true;
    return SCANFUSE_OK;
}

static scanfuse_status infer_tri(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x;
    if (x->ndim < 2)
        return fail(c, SCANFUSE_ERROR_ARGUMENT,
                    "expected a tensor with at least 2 dims, got a %d-d tensor", x->ndim);
    set_shape(&j->res[0], x->ndim, x->shape);
    j->res[0].dtype = x->dtype;
    j->canon->diagonal = j->a->diagonal;
    return SCANFUSE_OK;
}

/* The default dtype of a created tensor from a number, like torch.full: bool, int64,
 * or the default float dtype. */
static scanfuse_dtype dtype_of_num(sf_num n) {
    if (n.kind == SF_NUM_BOOL) return SCANFUSE_BOOL;
    if (n.kind == SF_NUM_INT) return SCANFUSE_INT64;
    return SCANFUSE_FLOAT32;
}

static scanfuse_status infer_scalar(infer_job *j) {
    const ictx *c = &j->c;
    if (!j->a->has_value) return fail(c, SCANFUSE_ERROR_ARGUMENT, "missing required argument 'value'");
    scanfuse_status st = want_num(c, "value", j->a->value);
    if (st != SCANFUSE_OK) return st;
    put_num(&j->canon->value, j->a->value);
    j->canon->has_value = true;
    j->res[0].ndim = 0;
    j->res[0].dtype = dtype_of_num(j->a->value);
    j->res[0].weak = true;
    return SCANFUSE_OK;
}

static scanfuse_status infer_full(infer_job *j) {
    const ictx *c = &j->c;
    const sf_attrs *a = j->a;
    scanfuse_status st = check_list_len(c, a, "size", SF_MAX_DIMS);
    if (st != SCANFUSE_OK) return st;
    char lb[400];
    fmt_list(lb, sizeof lb, a->nlist, a->list);
    for (int i = 0; i < a->nlist; i++)
        if (a->list[i] < 0)
            return fail(c, SCANFUSE_ERROR_ARGUMENT, "negative size %lld in size %s",
                        (long long)a->list[i], lb);
    if (!a->has_value)
        return fail(c, SCANFUSE_ERROR_ARGUMENT, "missing required argument 'fill_value'");
    if ((st = want_num(c, "fill_value", a->value)) != SCANFUSE_OK) return st;
    sf_value *r = &j->res[0];
    set_shape(r, a->nlist, a->list);
    r->dtype = a->dtype != SCANFUSE_DTYPE_NONE ? a->dtype : dtype_of_num(a->value);
    sf_attrs *k = j->canon;
    for (int i = 0; i < a->nlist; i++) k->list[i] = a->list[i];
    k->nlist = a->nlist;
    k->has_list = true;
    put_num(&k->value, a->value);
    k->has_value = true;
    k->dtype = r->dtype;
    return SCANFUSE_OK;
}

/* arange and iota: length ceil((end - start) / step), exact in int64 when every bound
 * is an integer, in double otherwise (as PyTorch computes it). */
static scanfuse_status infer_arange(infer_job *j) {
    const ictx *c = &j->c;
    const sf_attrs *a = j->a;
    sf_num start = make_int(0), end, step = make_int(1);
    scanfuse_status st;
    if (c->op == SF_OP_iota) {
        if (!a->has_end) return fail(c, SCANFUSE_ERROR_ARGUMENT, "missing required argument 'end'");
        end = a->end;
    } else if (a->has_end) {
        end = a->end;
        if (a->has_start) start = a->start;
        if (a->has_step) step = a->step;
    } else if (a->has_start) {
        end = a->start; /* arange(n) is arange(0, n) */
        if (a->has_step) step = a->step;
    } else {
        return fail(c, SCANFUSE_ERROR_ARGUMENT, "missing required argument 'end'");
    }
    if ((st = want_num(c, "start", start)) != SCANFUSE_OK) return st;
    if ((st = want_num(c, "end", end)) != SCANFUSE_OK) return st;
    if ((st = want_num(c, "step", step)) != SCANFUSE_OK) return st;
    /* Normalize first (a bool is 0 or 1, ints mirror into f) so that the arithmetic
     * below sees exactly what the canonical attributes will hold. */
    put_num(&start, start);
    put_num(&end, end);
    put_num(&step, step);

    bool all_int = start.kind != SF_NUM_FLOAT && end.kind != SF_NUM_FLOAT && step.kind != SF_NUM_FLOAT;
    scanfuse_dtype dt = a->dtype != SCANFUSE_DTYPE_NONE ? a->dtype
                        : all_int                       ? SCANFUSE_INT64
                                                        : SCANFUSE_FLOAT32;
    if (dt == SCANFUSE_BOOL)
        return fail(c, SCANFUSE_ERROR_DTYPE, "dtype bool is not supported");

    char s0[40], s1[40], s2[40];
    fmt_num(s0, sizeof s0, start);
    fmt_num(s1, sizeof s1, end);
    fmt_num(s2, sizeof s2, step);
    int64_t len;
    if (all_int) {
        int64_t lo = start.i, hi = end.i, sp = step.i;
        if (sp == 0) return fail(c, SCANFUSE_ERROR_ARGUMENT, "step must be nonzero");
        if ((sp > 0 && hi < lo) || (sp < 0 && hi > lo))
            return fail(c, SCANFUSE_ERROR_ARGUMENT,
                        "step %s is inconsistent with start %s and end %s", s2, s0, s1);
        /* The distance in uint64 covers every int64 pair (at most 2^64 - 1), so the
         * length is exact; only a length beyond int64 is an error. */
        uint64_t ud = sp > 0 ? (uint64_t)hi - (uint64_t)lo : (uint64_t)lo - (uint64_t)hi;
        uint64_t us = sp > 0 ? (uint64_t)sp : (uint64_t)0 - (uint64_t)sp;
        uint64_t ulen = ud / us + (ud % us != 0);
        if (ulen > (uint64_t)INT64_MAX)
            return fail(c, SCANFUSE_ERROR_MEMORY, "size overflows int64 (range %s to %s)", s0, s1);
        len = (int64_t)ulen;
    } else {
        double lo = start.f, hi = end.f, sp = step.f;
        if (!isfinite(lo) || !isfinite(hi) || !isfinite(sp))
            return fail(c, SCANFUSE_ERROR_ARGUMENT, "unsupported range %s to %s with step %s", s0,
                        s1, s2);
        if (sp == 0) return fail(c, SCANFUSE_ERROR_ARGUMENT, "step must be nonzero");
        if ((sp > 0 && hi < lo) || (sp < 0 && hi > lo))
            return fail(c, SCANFUSE_ERROR_ARGUMENT,
                        "step %s is inconsistent with start %s and end %s", s2, s0, s1);
        double n = ceil((hi - lo) / sp);
        if (!(n < 9223372036854775808.0))
            return fail(c, SCANFUSE_ERROR_MEMORY, "size overflows int64 (range %s to %s)", s0, s1);
        len = (int64_t)n;
    }
    sf_value *r = &j->res[0];
    r->ndim = 1;
    r->shape[0] = len;
    r->dtype = dt;
    sf_attrs *k = j->canon;
    put_num(&k->start, start);
    put_num(&k->end, end);
    put_num(&k->step, step);
    k->has_start = k->has_end = k->has_step = true;
    k->dtype = dt;
    return SCANFUSE_OK;
}

static scanfuse_status infer_matmul(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = &c->f->values[j->in[0]];
    const sf_value *y = &c->f->values[j->in[1]];
    char sa[200], sb[200];
    fmt_list(sa, sizeof sa, x->ndim, x->shape);
    fmt_list(sb, sizeof sb, y->ndim, y->shape);
    if (x->ndim == 0 || y->ndim == 0)
        return fail(c, SCANFUSE_ERROR_SHAPE,
                    "both arguments need at least 1 dim, got shapes %s and %s", sa, sb);
    if (x->dtype != y->dtype)
        return fail(c, SCANFUSE_ERROR_DTYPE,
                    "expected both arguments to have the same dtype, got %s and %s",
                    dt_name(x->dtype), dt_name(y->dtype));
    /* 1-D operands act as a row (left) or column (right) vector. */
    int64_t kx = x->shape[x->ndim - 1];
    int64_t ky = y->ndim == 1 ? y->shape[0] : y->shape[y->ndim - 2];
    if (kx != ky)
        return fail(c, SCANFUSE_ERROR_SHAPE, "shapes %s and %s cannot be multiplied (%lld != %lld)",
                    sa, sb, (long long)kx, (long long)ky);
    int bx = x->ndim > 2 ? x->ndim - 2 : 0, by = y->ndim > 2 ? y->ndim - 2 : 0;
    int nb;
    int64_t batch[SF_MAX_DIMS];
    if (!sf_broadcast_shapes(bx, x->shape, by, y->shape, &nb, batch)) {
        char ba[200], bb[200];
        return fail(c, SCANFUSE_ERROR_SHAPE, "batch shapes %s and %s do not broadcast (shapes %s and %s)",
                    fmt_list(ba, sizeof ba, bx, x->shape), fmt_list(bb, sizeof bb, by, y->shape),
                    sa, sb);
    }
    sf_value *r = &j->res[0];
    int n = 0;
    for (int i = 0; i < nb; i++) r->shape[n++] = batch[i];
    if (x->ndim >= 2) r->shape[n++] = x->shape[x->ndim - 2];
    if (y->ndim >= 2) r->shape[n++] = y->shape[y->ndim - 1];
    r->ndim = n;
    r->dtype = x->dtype;
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Index and sort ops                                                              */
/* ------------------------------------------------------------------------------ */

/* Indices and ids are integers: any integer dtype (PyTorch wants int64; narrower ones
 * are accepted as they hold the same values), never bool or floating. */
static scanfuse_status want_index_dtype(const ictx *c, const char *pname, const sf_value *v) {
    if (!sf_dtype_is_intlike(v->dtype) || v->dtype == SCANFUSE_BOOL)
        return fail(c, SCANFUSE_ERROR_DTYPE, "argument '%s' must have an integer dtype, got %s",
                    pname, dt_name(v->dtype));
    return SCANFUSE_OK;
}

/* The dim of an op with a required dim (gather, index_select, scatter). */
static scanfuse_status want_dim(const infer_job *j, int64_t *dim) {
    if (!j->a->has_dim) return fail(&j->c, SCANFUSE_ERROR_ARGUMENT, "missing required argument 'dim'");
    return wrap_dim(&j->c, j->a->dim, j->x->ndim, dim);
}

/* topk and argsort: dim defaults to -1 (raw attributes may leave it unset). */
static scanfuse_status sort_dim(const infer_job *j, int64_t *dim) {
    return wrap_dim(&j->c, j->a->has_dim ? j->a->dim : -1, j->x->ndim, dim);
}

static scanfuse_status infer_topk(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x;
    const sf_attrs *a = j->a;
    int64_t dim = 0;
    scanfuse_status st = sort_dim(j, &dim);
    if (st != SCANFUSE_OK) return st;
    if (!a->has_count) return fail(c, SCANFUSE_ERROR_ARGUMENT, "missing required argument 'k'");
    int64_t k = a->count;
    if (x->ndim == 0) {
        /* a 0-d tensor is one element: its only top-k is itself */
        if (k != 1)
            return fail(c, SCANFUSE_ERROR_ARGUMENT, "k %lld out of range for a 0-d tensor (k must be 1)",
                        (long long)k);
    } else if (k < 0 || k > x->shape[dim]) {
        return fail(c, SCANFUSE_ERROR_ARGUMENT, "k %lld out of range for dim %lld of size %lld",
                    (long long)k, (long long)dim, (long long)x->shape[dim]);
    }
    for (int r = 0; r < 2; r++) {
        set_shape(&j->res[r], x->ndim, x->shape);
        if (x->ndim > 0) j->res[r].shape[dim] = k;
    }
    j->res[0].dtype = x->dtype;
    j->res[1].dtype = SCANFUSE_INT64;
    sf_attrs *kc = j->canon;
    kc->dim = dim;
    kc->has_dim = true;
    kc->count = k;
    kc->has_count = true;
    kc->largest = a->largest;
    kc->sorted = a->sorted;
    return SCANFUSE_OK;
}

static scanfuse_status infer_argsort(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x;
    const sf_attrs *a = j->a;
    int64_t dim = 0;
    scanfuse_status st = sort_dim(j, &dim);
    if (st != SCANFUSE_OK) return st;
    sf_attrs *kc = j->canon;
    if (a->has_count) {
        /* range=R states that every key is in [0, R): integer keys only */
        if (sf_dtype_is_float(x->dtype))
            return fail(c, SCANFUSE_ERROR_DTYPE, "argument 'range' needs integer keys, got %s",
                        dt_name(x->dtype));
        if (a->count < 1)
            return fail(c, SCANFUSE_ERROR_ARGUMENT, "range must be at least 1, got %lld",
                        (long long)a->count);
        kc->count = a->count;
        kc->has_count = true;
    }
    set_shape(&j->res[0], x->ndim, x->shape);
    j->res[0].dtype = SCANFUSE_INT64;
    kc->dim = dim;
    kc->has_dim = true;
    kc->descending = a->descending;
    kc->stable = a->stable;
    return SCANFUSE_OK;
}

/* one_hot and bincount: integer ids and a static class count. */
static scanfuse_status infer_ids(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x;
    const sf_attrs *a = j->a;
    bool oh = c->op == SF_OP_one_hot;
    const char *pname = oh ? "num_classes" : "minlength";
    scanfuse_status st = want_index_dtype(c, "x", x);
    if (st != SCANFUSE_OK) return st;
    if (!a->has_count) return fail(c, SCANFUSE_ERROR_ARGUMENT, "missing required argument '%s'", pname);
    if (a->count < 0)
        return fail(c, SCANFUSE_ERROR_ARGUMENT,
                    "%s must be >= 0, got %lld (the result size is static: PyTorch's size "
                    "inferred from the data is not supported)",
                    pname, (long long)a->count);
    sf_value *r = &j->res[0];
    if (oh) {
        if (x->ndim + 1 > SF_MAX_DIMS)
            return fail(c, SCANFUSE_ERROR_ARGUMENT, "the result would have %d dims, more than %d",
                        x->ndim + 1, SF_MAX_DIMS);
        set_shape(r, x->ndim, x->shape);
        r->shape[x->ndim] = a->count;
        r->ndim = x->ndim + 1;
    } else {
        if (x->ndim != 1)
            return fail(c, SCANFUSE_ERROR_SHAPE, "expected a 1-d tensor, got a %d-d tensor", x->ndim);
        r->ndim = 1;
        r->shape[0] = a->count;
    }
    r->dtype = SCANFUSE_INT64;
    j->canon->count = a->count;
    j->canon->has_count = true;
    return SCANFUSE_OK;
}

static scanfuse_status infer_gather(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x, *ix = &c->f->values[j->in[1]];
    const char *iname = c->op == SF_OP_take_along_dim ? "indices" : "index";
    scanfuse_status st = want_index_dtype(c, iname, ix);
    if (st != SCANFUSE_OK) return st;
    sf_value *r = &j->res[0];
    r->dtype = x->dtype;
    if (c->op == SF_OP_take_along_dim && !j->a->has_dim) {
        /* torch.take_along_dim without dim: both flattened */
        r->ndim = 1;
        r->shape[0] = sf_value_numel(ix);
        return SCANFUSE_OK;
    }
    int64_t dim = 0;
    if ((st = want_dim(j, &dim)) != SCANFUSE_OK) return st;
    j->canon->dim = dim;
    j->canon->has_dim = true;
    if (c->op == SF_OP_index_select) {
        if (ix->ndim > 1)
            return fail(c, SCANFUSE_ERROR_SHAPE, "index must be 1-d or 0-d, got a %d-d tensor",
                        ix->ndim);
        int64_t m = sf_value_numel(ix);
        set_shape(r, x->ndim, x->shape);
        if (x->ndim > 0) r->shape[dim] = m;
        else if (m != 1)
            return fail(c, SCANFUSE_ERROR_SHAPE,
                        "index must have 1 element to select from a 0-d tensor, got %lld",
                        (long long)m);
        return SCANFUSE_OK;
    }
    if (ix->ndim != x->ndim)
        return fail(c, SCANFUSE_ERROR_SHAPE, "%s has %d dims, but x has %d (they must match)",
                    iname, ix->ndim, x->ndim);
    set_shape(r, ix->ndim, ix->shape);
    for (int d = 0; d < x->ndim; d++) {
        if (d == dim) continue;
        int64_t xs = x->shape[d], is = ix->shape[d];
        if (c->op == SF_OP_take_along_dim) {
            /* every dim but `dim` broadcasts */
            if (xs != is && xs != 1 && is != 1)
                return fail(c, SCANFUSE_ERROR_SHAPE,
                            "x and indices do not broadcast at dim %d (sizes %lld and %lld)", d,
                            (long long)xs, (long long)is);
            r->shape[d] = xs == 1 ? is : xs;
        } else if (is > xs) {
            return fail(c, SCANFUSE_ERROR_SHAPE, "index size %lld exceeds the size %lld of x at dim %d",
                        (long long)is, (long long)xs, d);
        }
    }
    return SCANFUSE_OK;
}

static scanfuse_status infer_scatter(infer_job *j) {
    const ictx *c = &j->c;
    const sf_value *x = j->x, *ix = &c->f->values[j->in[1]], *src = &c->f->values[j->in[2]];
    scanfuse_status st = want_index_dtype(c, "index", ix);
    if (st != SCANFUSE_OK) return st;
    int64_t dim = 0;
    if ((st = want_dim(j, &dim)) != SCANFUSE_OK) return st;
    if (j->a->reduce != SF_REDUCE_NONE && j->a->reduce != SF_REDUCE_ADD)
        return fail(c, SCANFUSE_ERROR_ARGUMENT, "invalid reduce %d", (int)j->a->reduce);
    if (ix->ndim != x->ndim)
        return fail(c, SCANFUSE_ERROR_SHAPE, "index has %d dims, but x has %d (they must match)",
                    ix->ndim, x->ndim);
    /* src is a tensor of x's dtype, or a number (a weak scalar, converted to x's dtype:
     * PyTorch's scatter(x, dim, index, value)) */
    if (!src->weak) {
        if (src->ndim != x->ndim)
            return fail(c, SCANFUSE_ERROR_SHAPE, "src has %d dims, but x has %d (they must match)",
                        src->ndim, x->ndim);
        if (src->dtype != x->dtype)
            return fail(c, SCANFUSE_ERROR_DTYPE, "src has dtype %s, but x has %s (they must match)",
                        dt_name(src->dtype), dt_name(x->dtype));
        for (int d = 0; d < x->ndim; d++)
            if (ix->shape[d] > src->shape[d])
                return fail(c, SCANFUSE_ERROR_SHAPE,
                            "index size %lld exceeds the size %lld of src at dim %d",
                            (long long)ix->shape[d], (long long)src->shape[d], d);
    }
    for (int d = 0; d < x->ndim; d++)
        if (d != dim && ix->shape[d] > x->shape[d])
            return fail(c, SCANFUSE_ERROR_SHAPE, "index size %lld exceeds the size %lld of x at dim %d",
                        (long long)ix->shape[d], (long long)x->shape[d], d);
    set_shape(&j->res[0], x->ndim, x->shape);
    j->res[0].dtype = x->dtype;
    j->canon->dim = dim;
    j->canon->has_dim = true;
    j->canon->reduce = j->a->reduce;
    return SCANFUSE_OK;
}

static scanfuse_status infer_index(infer_job *j) {
    switch (j->c.op) {
    case SF_OP_topk: return infer_topk(j);
    case SF_OP_argsort: return infer_argsort(j);
    case SF_OP_one_hot: case SF_OP_bincount: return infer_ids(j);
    case SF_OP_gather: case SF_OP_take_along_dim: case SF_OP_index_select: return infer_gather(j);
    case SF_OP_scatter: return infer_scatter(j);
    default: break;
    }
    SF_ASSERT(!"index op without inference");
    return SCANFUSE_ERROR_UNSUPPORTED;
}

/* ------------------------------------------------------------------------------ */
/* The entry point                                                                 */
/* ------------------------------------------------------------------------------ */

static bool sig_has_param(sf_op op, const char *name) {
    const sf_signature *sig = sf_op_signature(op);
    for (int p = 0; sig && p < sig->nparams; p++)
        if (strcmp(sig->params[p].name, name) == 0) return true;
    return false;
}

/* The name of the k-th tensor parameter, for messages. */
static const char *tensor_param_name(sf_op op, int k) {
    const sf_signature *sig = sf_op_signature(op);
    for (int p = 0; sig && p < sig->nparams; p++)
        if (sig->params[p].kind == SF_P_TENSOR && k-- == 0) return sig->params[p].name;
    return "?";
}

scanfuse_status sf_infer(const scanfuse_fusion *f, sf_op op, const int32_t *in, int nin,
                         const sf_attrs *a, sf_attrs *canon, sf_value *res, char *msg,
                         size_t msglen) {
    if ((int)op < 0 || op >= SF_NUM_OPS) {
        sf_msg(msg, msglen, "unknown op (%d)", (int)op);
        return SCANFUSE_ERROR_ARGUMENT;
    }
    const sf_op_info *info = &sf_op_table[op];
    ictx c = {f, op, info->name, msg, msglen};
    if (!f) return fail(&c, SCANFUSE_ERROR_STATE, "no fusion");
    if (!canon || !res) return fail(&c, SCANFUSE_ERROR_ARGUMENT, "no room for the results");
    sf_attrs given;
    if (!a) {
        sf_attrs_init(&given);
        a = &given;
    }
    if (nin != info->nin)
        return fail(&c, SCANFUSE_ERROR_ARGUMENT, "expected %d tensor argument%s, got %d", info->nin,
                    info->nin == 1 ? "" : "s", nin);
    if (nin > 0 && !in) return fail(&c, SCANFUSE_ERROR_ARGUMENT, "no tensor arguments given");
    for (int i = 0; i < nin; i++) {
        const char *pn = tensor_param_name(op, i);
        if (in[i] < 0 || in[i] >= f->nvalues)
            return fail(&c, SCANFUSE_ERROR_ARGUMENT,
                        "argument '%s' is not a value of this fusion (id %d)", pn, (int)in[i]);
        const sf_value *v = &f->values[in[i]];
        if (!sf_dtype_valid(v->dtype) || v->ndim < 0 || v->ndim > SF_MAX_DIMS)
            return fail(&c, SCANFUSE_ERROR_ARGUMENT, "argument '%s' (id %d) is malformed", pn,
                        (int)in[i]);
        if ((info->flags & SF_F_FLOAT_ONLY) && !sf_dtype_is_float(v->dtype))
            return fail(&c, SCANFUSE_ERROR_DTYPE, "expected a floating dtype, got %s",
                        dt_name(v->dtype));
        if ((info->flags & SF_F_NO_BOOL) && v->dtype == SCANFUSE_BOOL)
            return fail(&c, SCANFUSE_ERROR_DTYPE,
                        "argument '%s' has dtype bool, which this op does not support", pn);
    }
    bool has_dtype = sig_has_param(op, "dtype");
    if (has_dtype) {
        scanfuse_status st = check_dtype_attr(&c, a->dtype);
        if (st != SCANFUSE_OK) return st;
    }

    /* Results are written to locals first so that a failure leaves res untouched. */
    sf_attrs k;
    memset(&k, 0, sizeof k);
    k.dtype = SCANFUSE_DTYPE_NONE;
    sf_value r[SF_MAX_OUT];
    memset(r, 0, sizeof r);
    for (int i = 0; i < SF_MAX_OUT; i++) {
        r[i].producer = -1;
        r[i].slot = i;
        r[i].dtype = SCANFUSE_DTYPE_NONE;
    }
    infer_job j = {c, in, nin, nin > 0 ? &f->values[in[0]] : NULL, a, &k, r};

    scanfuse_status st = SCANFUSE_OK;
    switch (info->kind) {
    case SF_KIND_POINTWISE: st = infer_pointwise(&j); break;
    case SF_KIND_SCAN: st = infer_scan(&j); break;
    case SF_KIND_REDUCTION: st = infer_reduction(&j); break;
    case SF_KIND_CONTRACTION: st = infer_matmul(&j); break;
    case SF_KIND_INDEX: st = infer_index(&j); break;
    case SF_KIND_SHAPE:
        if (op == SF_OP_expand) st = infer_expand(&j);
        else if (op == SF_OP_reshape) st = infer_reshape(&j);
        else if (op == SF_OP_permute) st = infer_permute(&j);
        else if (op == SF_OP_slice) st = infer_slice(&j);
        else if (op == SF_OP_pad) st = infer_pad(&j);
        else if (op == SF_OP_triu || op == SF_OP_tril) st = infer_tri(&j);
        else SF_ASSERT(!"shape op without inference");
        break;
    case SF_KIND_CREATION:
        if (op == SF_OP_scalar) st = infer_scalar(&j);
        else if (op == SF_OP_full) st = infer_full(&j);
        else if (op == SF_OP_arange || op == SF_OP_iota) st = infer_arange(&j);
        else SF_ASSERT(!"creation op without inference");
        if (st == SCANFUSE_OK && !sf_dtype_valid(r[0].dtype))
            st = fail(&c, SCANFUSE_ERROR_DTYPE, "invalid result dtype");
        break;
    }
    if (st != SCANFUSE_OK) return st;

    for (int i = 0; i < info->nout; i++) {
        SF_ASSERT(sf_dtype_valid(r[i].dtype));
        SF_ASSERT(r[i].ndim >= 0 && r[i].ndim <= SF_MAX_DIMS);
        st = check_size(&c, r[i].ndim, r[i].shape);
        if (st != SCANFUSE_OK) return st;
    }
    /* memcpy, not assignment: the zeroed padding of k must reach canon too. */
    memcpy(canon, &k, sizeof k);
    for (int i = 0; i < info->nout; i++) res[i] = r[i];
    return SCANFUSE_OK;
}
