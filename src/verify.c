/*
 * verify.c — the IR verifier: sf_verify checks every invariant listed at the top of
 * sf.h on a built (or rewritten) fusion and names the first violation it finds.
 *
 * What it checks, in this order (structure first, so that later checks, including the
 * call into sf_infer, only ever see valid ids):
 *  1. values: a valid dtype, 0 <= ndim <= SF_MAX_DIMS, sizes >= 0, an element count
 *     that fits in int64, a producer in [-1, nnodes), a producer/slot pair that the
 *     producing node agrees with (node.out[slot] == the value), a name that is NULL or
 *     an identifier, and value names unique;
 *  2. inputs: valid ids of values with producer -1, each listed once, named, and every
 *     producer -1 value listed (so inputs and producer -1 values are the same set);
 *  3. nodes: a valid op, nin/nout equal to the op table's, input ids valid and defined
 *     before the node (a fusion input or a value of an earlier node), result ids valid
 *     and pointing back at this node and slot (so every value has exactly one
 *     producer slot), and re-running sf_infer gives the same canonical attributes and
 *     the same result dtypes, shapes and weak flags, field by field;
 *  4. outputs: valid ids, identifier names, names unique.
 * The verifier never modifies the fusion and never aborts: a violation is reported as
 * SCANFUSE_ERROR_STATE with a message "verify: node 3 (cumsum): ...".
 */
#include "sf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERIFY_FAIL(...)                                                               \
    do {                                                                               \
        sf_msg(msg, msglen, __VA_ARGS__);                                              \
        return SCANFUSE_ERROR_STATE;                                                   \
    } while (0)

static const char *op_name(sf_op op) {
    return (op >= 0 && op < SF_NUM_OPS) ? sf_op_table[op].name : "?";
}

/* Formats a shape as "[3, 5]". */
static void format_shape(int ndim, const int64_t *shape, char *buf, size_t len) {
    size_t pos = 0;
    buf[0] = '\0';
    pos += (size_t)snprintf(buf + pos, len - pos, "[");
    for (int i = 0; i < ndim && pos < len; i++)
        pos += (size_t)snprintf(buf + pos, len - pos, "%s%" PRId64, i ? ", " : "", shape[i]);
    if (pos < len) snprintf(buf + pos, len - pos, "]");
}

static void format_num(const sf_num *n, char *buf, size_t len) {
    switch (n->kind) {
    case SF_NUM_INT: snprintf(buf, len, "%" PRId64, n->i); break;
    case SF_NUM_BOOL: snprintf(buf, len, "%s", n->i ? "true" : "false"); break;
    case SF_NUM_FLOAT: snprintf(buf, len, "%.17g", n->f); break;
    default: snprintf(buf, len, "<kind %d>", (int)n->kind); break;
    }
}

static bool same_double(double a, double b) {
    if (a != a && b != b) return true; /* both NaN */
    return memcmp(&a, &b, sizeof a) == 0;
}

static bool same_num(const sf_num *a, const sf_num *b) {
    return a->kind == b->kind && a->i == b->i && same_double(a->f, b->f);
}

/* Compares two attribute sets field by field.  On a difference writes
 * "attribute FIELD is X, inference gives canonical Y" into buf and returns false. */
static bool same_attrs(const sf_attrs *have, const sf_attrs *want, char *buf, size_t len) {
    char x[64], y[64];
#define CMP_INT(field)                                                                 \
    if ((int64_t)have->field != (int64_t)want->field) {                                \
        snprintf(buf, len, "attribute %s is %" PRId64 ", inference gives canonical %" PRId64, \
                 #field, (int64_t)have->field, (int64_t)want->field);                 \
        return false;                                                                  \
    }
#define CMP_NUM(field)                                                                 \
    if (!same_num(&have->field, &want->field)) {                                       \
        format_num(&have->field, x, sizeof x);                                         \
        format_num(&want->field, y, sizeof y);                                         \
        snprintf(buf, len, "attribute %s is %s, inference gives canonical %s", #field, x, y); \
        return false;                                                                  \
    }
    CMP_INT(dim)
    CMP_INT(has_dim)
    CMP_INT(has_list)
    CMP_INT(nlist)
    for (int i = 0; i < have->nlist && i < SF_MAX_LIST; i++) {
        if (have->list[i] != want->list[i]) {
            snprintf(buf, len, "attribute list[%d] is %" PRId64 ", inference gives canonical %" PRId64,
                     i, have->list[i], want->list[i]);
            return false;
        }
    }
    CMP_INT(has_start)
    CMP_INT(has_end)
    CMP_INT(has_step)
    CMP_NUM(start)
    CMP_NUM(end)
    CMP_NUM(step)
    CMP_INT(has_value)
    CMP_NUM(value)
    CMP_INT(diagonal)
    if (have->dtype != want->dtype) {
        snprintf(buf, len, "attribute dtype is %s, inference gives canonical %s",
                 have->dtype == SCANFUSE_DTYPE_NONE ? "none" : scanfuse_dtype_name(have->dtype),
                 want->dtype == SCANFUSE_DTYPE_NONE ? "none" : scanfuse_dtype_name(want->dtype));
        return false;
    }
    CMP_INT(exclusive)
    CMP_INT(reverse)
    CMP_INT(keepdim)
    CMP_INT(count)
    CMP_INT(has_count)
    CMP_INT(largest)
    CMP_INT(sorted)
    CMP_INT(descending)
    CMP_INT(stable)
    CMP_INT(reduce)
#undef CMP_INT
#undef CMP_NUM
    return true;
}

static int cmp_names(const void *a, const void *b) {
    const char *const *x = a;
    const char *const *y = b;
    return strcmp(*x, *y);
}

/* Finds a duplicate among n names (NULL entries skipped); returns it or NULL. */
static const char *find_duplicate(const char **names, int n, bool *oom) {
    const char **sorted = sf_malloc((size_t)(n > 0 ? n : 1) * sizeof *sorted);
    *oom = false;
    if (!sorted) {
        *oom = true;
        return NULL;
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (names[i]) sorted[m++] = names[i];
    qsort(sorted, (size_t)m, sizeof *sorted, cmp_names);
    const char *dup = NULL;
    for (int i = 1; i < m && !dup; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) dup = sorted[i];
    free(sorted);
    return dup;
}

static scanfuse_status verify_values(const scanfuse_fusion *f, char *msg, size_t msglen) {
    for (int32_t id = 0; id < f->nvalues; id++) {
        const sf_value *v = &f->values[id];
        if (!sf_dtype_valid(v->dtype))
            VERIFY_FAIL("verify: value %d has an invalid dtype %d", (int)id, (int)v->dtype);
        if (v->ndim < 0 || v->ndim > SF_MAX_DIMS)
            VERIFY_FAIL("verify: value %d has %d dims (0..%d allowed)", (int)id, v->ndim,
                        SF_MAX_DIMS);
        int64_t numel = 1;
        for (int d = 0; d < v->ndim; d++) {
            if (v->shape[d] < 0)
                VERIFY_FAIL("verify: value %d has size %" PRId64 " in dim %d", (int)id,
                            v->shape[d], d);
            if (sf_mul_overflow(numel, v->shape[d], &numel))
                VERIFY_FAIL("verify: value %d has more elements than int64 holds", (int)id);
        }
        if (v->producer < -1 || v->producer >= f->nnodes)
            VERIFY_FAIL("verify: value %d has producer %d (%d nodes)", (int)id,
                        (int)v->producer, f->nnodes);
        if (v->producer >= 0) {
            const sf_node *n = &f->nodes[v->producer];
            if (v->slot < 0 || v->slot >= n->nout || v->slot >= SF_MAX_OUT ||
                n->out[v->slot] != id)
                VERIFY_FAIL("verify: value %d claims to be result %d of node %d (%s), "
                            "which does not produce it",
                            (int)id, v->slot, (int)v->producer, op_name(n->op));
        }
        if (v->name && !sf_is_identifier(v->name))
            VERIFY_FAIL("verify: value %d has the name '%s', not an identifier", (int)id,
                        v->name);
    }
    const char **names = sf_malloc((size_t)(f->nvalues > 0 ? f->nvalues : 1) * sizeof *names);
    if (!names) {
        sf_msg(msg, msglen, "verify: out of memory");
        return SCANFUSE_ERROR_MEMORY;
    }
    for (int32_t id = 0; id < f->nvalues; id++) names[id] = f->values[id].name;
    bool oom;
    const char *dup = find_duplicate(names, f->nvalues, &oom);
    free(names);
    if (oom) {
        sf_msg(msg, msglen, "verify: out of memory");
        return SCANFUSE_ERROR_MEMORY;
    }
    if (dup) VERIFY_FAIL("verify: two values are named '%s'", dup);
    return SCANFUSE_OK;
}

static scanfuse_status verify_inputs(const scanfuse_fusion *f, char *msg, size_t msglen) {
    unsigned char *seen = sf_calloc((size_t)(f->nvalues > 0 ? f->nvalues : 1), 1);
    if (!seen) {
        sf_msg(msg, msglen, "verify: out of memory");
        return SCANFUSE_ERROR_MEMORY;
    }
    scanfuse_status st = SCANFUSE_OK;
    for (int i = 0; i < f->ninputs && st == SCANFUSE_OK; i++) {
        int32_t id = f->inputs[i];
        if (id < 0 || id >= f->nvalues) {
            sf_msg(msg, msglen, "verify: input %d is value %d, out of range (%d values)", i,
                   (int)id, f->nvalues);
            st = SCANFUSE_ERROR_STATE;
        } else if (f->values[id].producer != -1) {
            sf_msg(msg, msglen, "verify: input %d is value %d, which node %d produces", i,
                   (int)id, (int)f->values[id].producer);
            st = SCANFUSE_ERROR_STATE;
        } else if (seen[id]) {
            sf_msg(msg, msglen, "verify: input %d is value %d, listed twice", i, (int)id);
            st = SCANFUSE_ERROR_STATE;
        } else if (!f->values[id].name) {
            sf_msg(msg, msglen, "verify: input %d (value %d) has no name", i, (int)id);
            st = SCANFUSE_ERROR_STATE;
        }
        if (st == SCANFUSE_OK) seen[id] = 1;
    }
    for (int32_t id = 0; id < f->nvalues && st == SCANFUSE_OK; id++) {
        if (f->values[id].producer == -1 && !seen[id]) {
            char nb[64];
            sf_msg(msg, msglen, "verify: value %d (%s) has no producer and is not an input",
                   (int)id, sf_value_name(f, id, nb, sizeof nb));
            st = SCANFUSE_ERROR_STATE;
        }
    }
    free(seen);
    return st;
}

static scanfuse_status verify_node(const scanfuse_fusion *f, int i, char *msg, size_t msglen) {
    const sf_node *n = &f->nodes[i];
    char nb[64];
    if (n->op < 0 || n->op >= SF_NUM_OPS)
        VERIFY_FAIL("verify: node %d has an invalid op %d", i, (int)n->op);
    const sf_op_info *info = &sf_op_table[n->op];
    if (n->nin != info->nin || n->nin < 0 || n->nin > SF_MAX_IN)
        VERIFY_FAIL("verify: node %d (%s): %d inputs, the op takes %d", i, info->name, n->nin,
                    info->nin);
    if (n->nout != info->nout || n->nout < 1 || n->nout > SF_MAX_OUT)
        VERIFY_FAIL("verify: node %d (%s): %d results, the op has %d", i, info->name, n->nout,
                    info->nout);
    for (int k = 0; k < n->nin; k++) {
        int32_t id = n->in[k];
        if (id < 0 || id >= f->nvalues)
            VERIFY_FAIL("verify: node %d (%s): input %d is value %d, out of range (%d values)",
                        i, info->name, k, (int)id, f->nvalues);
        int32_t p = f->values[id].producer;
        if (p >= i)
            VERIFY_FAIL("verify: node %d (%s): input %d (%s) is defined by node %d, not "
                        "before it",
                        i, info->name, k, sf_value_name(f, id, nb, sizeof nb), (int)p);
    }
    for (int k = 0; k < n->nout; k++) {
        int32_t id = n->out[k];
        if (id < 0 || id >= f->nvalues)
            VERIFY_FAIL("verify: node %d (%s): result %d is value %d, out of range (%d values)",
                        i, info->name, k, (int)id, f->nvalues);
        const sf_value *v = &f->values[id];
        if (v->producer != i || v->slot != k)
            VERIFY_FAIL("verify: node %d (%s): result %d (%s) records producer %d slot %d",
                        i, info->name, k, sf_value_name(f, id, nb, sizeof nb),
                        (int)v->producer, v->slot);
    }

    sf_attrs canon;
    sf_value res[SF_MAX_OUT];
    char imsg[SF_ERR_LEN];
    imsg[0] = '\0';
    memset(&canon, 0, sizeof canon);
    memset(res, 0, sizeof res);
    scanfuse_status st =
        sf_infer(f, n->op, n->in, n->nin, &n->a, &canon, res, imsg, sizeof imsg);
    if (st != SCANFUSE_OK)
        VERIFY_FAIL("verify: node %d (%s): inference fails: %s", i, info->name, imsg);
    char diff[256];
    if (!same_attrs(&n->a, &canon, diff, sizeof diff))
        VERIFY_FAIL("verify: node %d (%s): %s", i, info->name, diff);
    for (int k = 0; k < n->nout; k++) {
        const sf_value *v = &f->values[n->out[k]];
        const sf_value *r = &res[k];
        char which[24] = "result";
        if (n->nout > 1) snprintf(which, sizeof which, "result %d", k);
        if (v->dtype != r->dtype)
            VERIFY_FAIL("verify: node %d (%s): %s dtype %s, inference says %s", i, info->name,
                        which, scanfuse_dtype_name(v->dtype), scanfuse_dtype_name(r->dtype));
        bool same_shape = v->ndim == r->ndim;
        for (int d = 0; same_shape && d < v->ndim; d++)
            same_shape = v->shape[d] == r->shape[d];
        if (!same_shape) {
            char s1[160], s2[160];
            format_shape(v->ndim, v->shape, s1, sizeof s1);
            format_shape(r->ndim < 0 || r->ndim > SF_MAX_DIMS ? 0 : r->ndim, r->shape, s2,
                         sizeof s2);
            VERIFY_FAIL("verify: node %d (%s): %s shape %s, inference says %s", i, info->name,
                        which, s1, s2);
        }
        if (v->weak != r->weak)
            VERIFY_FAIL("verify: node %d (%s): %s is %s, inference says %s", i, info->name,
                        which, v->weak ? "weak" : "not weak", r->weak ? "weak" : "not weak");
    }
    return SCANFUSE_OK;
}

static scanfuse_status verify_outputs(const scanfuse_fusion *f, char *msg, size_t msglen) {
    for (int i = 0; i < f->noutputs; i++) {
        int32_t id = f->outputs[i];
        if (id < 0 || id >= f->nvalues)
            VERIFY_FAIL("verify: output %d is value %d, out of range (%d values)", i, (int)id,
                        f->nvalues);
        const char *name = f->output_names ? f->output_names[i] : NULL;
        if (!name) VERIFY_FAIL("verify: output %d has no name", i);
        if (!sf_is_identifier(name))
            VERIFY_FAIL("verify: output %d has the name '%s', not an identifier", i, name);
    }
    if (f->noutputs > 0) {
        bool oom;
        const char *dup = find_duplicate((const char **)f->output_names, f->noutputs, &oom);
        if (oom) {
            sf_msg(msg, msglen, "verify: out of memory");
            return SCANFUSE_ERROR_MEMORY;
        }
        if (dup) VERIFY_FAIL("verify: two outputs are named '%s'", dup);
    }
    return SCANFUSE_OK;
}

scanfuse_status sf_verify(const scanfuse_fusion *f, char *msg, size_t msglen) {
    if (!f) VERIFY_FAIL("verify: no fusion");
    if (f->status != SCANFUSE_OK)
        VERIFY_FAIL("verify: the fusion holds an error: %s", f->error);
    if (f->nvalues < 0 || f->nnodes < 0 || f->ninputs < 0 || f->noutputs < 0 ||
        (f->nvalues > 0 && !f->values) || (f->nnodes > 0 && !f->nodes) ||
        (f->ninputs > 0 && !f->inputs) || (f->noutputs > 0 && !f->outputs))
        VERIFY_FAIL("verify: malformed fusion arrays (%d values, %d nodes, %d inputs, "
                    "%d outputs)",
                    f->nvalues, f->nnodes, f->ninputs, f->noutputs);
    scanfuse_status st = verify_values(f, msg, msglen);
    if (st == SCANFUSE_OK) st = verify_inputs(f, msg, msglen);
    for (int i = 0; i < f->nnodes && st == SCANFUSE_OK; i++) st = verify_node(f, i, msg, msglen);
    if (st == SCANFUSE_OK) st = verify_outputs(f, msg, msglen);
    if (st == SCANFUSE_OK) sf_msg(msg, msglen, "%s", "");
    return st;
}
