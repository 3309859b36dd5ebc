/*
 * fusion.c — the fusion object and the builder API: inputs, ops, outputs, names, the
 * first-error rule, copies.
 *
 * Invariants: values and nodes only grow, in topological order (sf_emit appends a node
 * after checking it through sf_infer); once f->status is not OK every building call is
 * a no-op returning SCANFUSE_NO_VALUE, so the first error and its message survive.
 */
#include "sf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *scanfuse_status_string(scanfuse_status st) {
    switch (st) {
    case SCANFUSE_OK: return "ok";
    case SCANFUSE_ERROR_ARGUMENT: return "invalid argument";
    case SCANFUSE_ERROR_DTYPE: return "invalid dtype";
    case SCANFUSE_ERROR_SHAPE: return "invalid shape";
    case SCANFUSE_ERROR_PARSE: return "parse error";
    case SCANFUSE_ERROR_IO: return "i/o error";
    case SCANFUSE_ERROR_VALUE: return "invalid value";
    case SCANFUSE_ERROR_MEMORY: return "out of memory";
    case SCANFUSE_ERROR_UNSUPPORTED: return "unsupported";
    case SCANFUSE_ERROR_DEVICE: return "device error";
    case SCANFUSE_ERROR_STATE: return "invalid state";
    }
    return "unknown status";
}

void sf_attrs_init(sf_attrs *a) {
    memset(a, 0, sizeof *a);
    a->dtype = SCANFUSE_DTYPE_NONE;
}

scanfuse_status sf_fail(scanfuse_fusion *f, scanfuse_status st, const char *fmt, ...) {
    if (!f) return SCANFUSE_ERROR_STATE;
    if (f->status != SCANFUSE_OK) return f->status;
    f->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->error, sizeof f->error, fmt, ap);
    va_end(ap);
    return st;
}

scanfuse_fusion *scanfuse_fusion_new(void) {
    scanfuse_fusion *f = calloc(1, sizeof *f);
    return f;
}

void scanfuse_fusion_free(scanfuse_fusion *f) {
    if (!f) return;
    for (int i = 0; i < f->nvalues; i++) free(f->values[i].name);
    for (int i = 0; i < f->noutputs; i++) free(f->output_names[i]);
    free(f->values);
    free(f->nodes);
    free(f->inputs);
    free(f->outputs);
    free(f->output_names);
    free(f);
}

scanfuse_status scanfuse_fusion_status(const scanfuse_fusion *f) {
    return f ? f->status : SCANFUSE_ERROR_STATE;
}

const char *scanfuse_fusion_error(const scanfuse_fusion *f) { return f ? f->error : "no fusion"; }

/* Grows an array of elements of size `size` to hold at least `need`. */
static bool grow(void **arr, int *cap, int need, size_t size) {
    if (need <= *cap) return true;
    int c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *p = realloc(*arr, (size_t)c * size);
    if (!p) return false;
    *arr = p;
    *cap = c;
    return true;
}

static int32_t add_value(scanfuse_fusion *f, const sf_value *v) {
    if (!grow((void **)&f->values, &f->cap_values, f->nvalues + 1, sizeof(sf_value))) return -1;
    f->values[f->nvalues] = *v;
    f->values[f->nvalues].name = NULL;
    return f->nvalues++;
}

int32_t sf_find_value(const scanfuse_fusion *f, const char *name) {
    if (!f || !name) return -1;
    for (int i = 0; i < f->nvalues; i++)
        if (f->values[i].name && strcmp(f->values[i].name, name) == 0) return i;
    return -1;
}

scanfuse_status sf_set_value_name(scanfuse_fusion *f, int32_t id, const char *name) {
    if (!f || id < 0 || id >= f->nvalues) return SCANFUSE_ERROR_ARGUMENT;
    char *copy = NULL;
    if (name) {
        copy = sf_strdup(name);
        if (!copy) return sf_fail(f, SCANFUSE_ERROR_MEMORY, "out of memory");
    }
    free(f->values[id].name);
    f->values[id].name = copy;
    return SCANFUSE_OK;
}

const char *sf_value_name(const scanfuse_fusion *f, int32_t id, char *buf, size_t buflen) {
    if (f && id >= 0 && id < f->nvalues && f->values[id].name) return f->values[id].name;
    snprintf(buf, buflen, "v%d", (int)id);
    return buf;
}

scanfuse_value scanfuse_input(scanfuse_fusion *f, const char *name, scanfuse_dtype dt, int ndim,
                              const int64_t *shape) {
    if (!f || f->status != SCANFUSE_OK) return SCANFUSE_NO_VALUE;
    if (!sf_is_identifier(name)) {
        sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "input: invalid name '%s'", name ? name : "(null)");
        return SCANFUSE_NO_VALUE;
    }
    if (sf_find_value(f, name) >= 0) {
        sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "input: name '%s' is already defined", name);
        return SCANFUSE_NO_VALUE;
    }
    if (!sf_dtype_valid(dt)) {
        sf_fail(f, SCANFUSE_ERROR_DTYPE, "input %s: invalid dtype %d", name, (int)dt);
        return SCANFUSE_NO_VALUE;
    }
    if (ndim < 0 || ndim > SF_MAX_DIMS || (ndim > 0 && !shape)) {
        sf_fail(f, SCANFUSE_ERROR_SHAPE, "input %s: ndim %d out of range [0, %d]", name, ndim,
                SF_MAX_DIMS);
        return SCANFUSE_NO_VALUE;
    }
    sf_value v;
    memset(&v, 0, sizeof v);
    v.dtype = dt;
    v.ndim = ndim;
    v.producer = -1;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            sf_fail(f, SCANFUSE_ERROR_SHAPE, "input %s: size %lld of dim %d is negative", name,
                    (long long)shape[i], i);
            return SCANFUSE_NO_VALUE;
        }
        if (sf_mul_overflow(n, shape[i], &n) ||
            sf_mul_overflow(n, (int64_t)scanfuse_dtype_size(dt), &(int64_t){0})) {
            sf_fail(f, SCANFUSE_ERROR_SHAPE, "input %s: size overflows", name);
            return SCANFUSE_NO_VALUE;
        }
        v.shape[i] = shape[i];
    }
    if (!grow((void **)&f->inputs, &f->cap_inputs, f->ninputs + 1, sizeof(int32_t))) {
        sf_fail(f, SCANFUSE_ERROR_MEMORY, "out of memory");
        return SCANFUSE_NO_VALUE;
    }
    int32_t id = add_value(f, &v);
    if (id < 0 || sf_set_value_name(f, id, name) != SCANFUSE_OK) {
        sf_fail(f, SCANFUSE_ERROR_MEMORY, "out of memory");
        return SCANFUSE_NO_VALUE;
    }
    f->inputs[f->ninputs++] = id;
    return id;
}

scanfuse_status sf_emit(scanfuse_fusion *f, sf_op op, const int32_t *in, int nin,
                        const sf_attrs *a, int32_t *out) {
    if (!f) return SCANFUSE_ERROR_STATE;
    if (f->status != SCANFUSE_OK) return f->status;
    if ((int)op < 0 || op >= SF_NUM_OPS)
        return sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "unknown op %d", (int)op);
    sf_attrs canon;
    sf_value res[SF_MAX_OUT];
    memset(res, 0, sizeof res);
    char msg[SF_ERR_LEN] = "";
    scanfuse_status st = sf_infer(f, op, in, nin, a, &canon, res, msg, sizeof msg);
    if (st != SCANFUSE_OK) return sf_fail(f, st, "%s", msg[0] ? msg : "invalid op");
    const sf_op_info *info = &sf_op_table[op];
    if (!grow((void **)&f->nodes, &f->cap_nodes, f->nnodes + 1, sizeof(sf_node)) ||
        !grow((void **)&f->values, &f->cap_values, f->nvalues + info->nout, sizeof(sf_value)))
        return sf_fail(f, SCANFUSE_ERROR_MEMORY, "out of memory");
    sf_node *n = &f->nodes[f->nnodes];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->nin = nin;
    for (int i = 0; i < nin; i++) n->in[i] = in[i];
    n->nout = info->nout;
    n->a = canon;
    for (int k = 0; k < info->nout; k++) {
        res[k].producer = f->nnodes;
        res[k].slot = k;
        n->out[k] = add_value(f, &res[k]);
        if (out) out[k] = n->out[k];
    }
    f->nnodes++;
    return SCANFUSE_OK;
}

#define SF_MAX_API_ARGS 16

static scanfuse_status op_call(scanfuse_fusion *f, const char *opname, const scanfuse_value *args,
                               int nargs, const char *attrs, int want_out, int32_t *out) {
    if (!f) return SCANFUSE_ERROR_STATE;
    if (f->status != SCANFUSE_OK) return f->status;
    sf_op op = sf_op_lookup(opname);
    if (op == SF_NUM_OPS)
        return sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "unknown op '%s'", opname ? opname : "(null)");
    const sf_op_info *info = &sf_op_table[op];
    if (info->nout != want_out)
        return sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "%s: has %d result%s; use %s", info->name,
                       info->nout, info->nout == 1 ? "" : "s",
                       info->nout == 1 ? "scanfuse_op" : "scanfuse_op2");
    if (nargs < 0 || nargs > SF_MAX_IN || (nargs > 0 && !args))
        return sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "%s: %d tensor arguments given", info->name,
                       nargs);
    sf_arg all[SF_MAX_API_ARGS];
    memset(all, 0, sizeof all);
    int n = 0;
    for (int i = 0; i < nargs; i++) {
        if (args[i] < 0 || args[i] >= f->nvalues)
            return sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "%s: argument %d is not a value of this fusion",
                           info->name, i);
        all[n].kind = SF_ARG_VALUE;
        all[n].value = args[i];
        n++;
    }
    char buf[1024];
    char msg[SF_ERR_LEN] = "";
    if (attrs && *attrs) {
        int more = 0;
        scanfuse_status st = sf_parse_attr_text(attrs, all + n, SF_MAX_API_ARGS - n, &more, buf,
                                                sizeof buf, msg, sizeof msg);
        if (st != SCANFUSE_OK) return sf_fail(f, st, "%s: %s", info->name, msg);
        n += more;
    }
    int32_t in[SF_MAX_IN];
    int nin = 0, bad = -1;
    sf_attrs a;
    sf_attrs_init(&a);
    scanfuse_status st = sf_bind_args(f, op, all, n, in, &nin, &a, msg, sizeof msg, &bad);
    if (st != SCANFUSE_OK) return sf_fail(f, st, "%s", msg);
    return sf_emit(f, op, in, nin, &a, out);
}

scanfuse_value scanfuse_op(scanfuse_fusion *f, const char *op, const scanfuse_value *args,
                           int nargs, const char *attrs) {
    int32_t out[SF_MAX_OUT] = {SCANFUSE_NO_VALUE, SCANFUSE_NO_VALUE};
    if (op_call(f, op, args, nargs, attrs, 1, out) != SCANFUSE_OK) return SCANFUSE_NO_VALUE;
    return out[0];
}

scanfuse_status scanfuse_op2(scanfuse_fusion *f, const char *op, const scanfuse_value *args,
                             int nargs, const char *attrs, scanfuse_value out[2]) {
    int32_t res[SF_MAX_OUT] = {SCANFUSE_NO_VALUE, SCANFUSE_NO_VALUE};
    if (f && f->status == SCANFUSE_OK && !out)
        return sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "%s: NULL pointer for the results",
                       op ? op : "(null)");
    scanfuse_status st = op_call(f, op, args, nargs, attrs, 2, res);
    if (out) {
        out[0] = st == SCANFUSE_OK ? res[0] : SCANFUSE_NO_VALUE;
        out[1] = st == SCANFUSE_OK ? res[1] : SCANFUSE_NO_VALUE;
    }
    return st;
}

static scanfuse_value emit_scalar(scanfuse_fusion *f, sf_num v) {
    if (!f || f->status != SCANFUSE_OK) return SCANFUSE_NO_VALUE;
    sf_attrs a;
    sf_attrs_init(&a);
    a.value = v;
    a.has_value = true;
    int32_t out[SF_MAX_OUT];
    if (sf_emit(f, SF_OP_scalar, NULL, 0, &a, out) != SCANFUSE_OK) return SCANFUSE_NO_VALUE;
    return out[0];
}

scanfuse_value scanfuse_scalar_int(scanfuse_fusion *f, int64_t value) {
    sf_num v = {SF_NUM_INT, value, (double)value};
    return emit_scalar(f, v);
}

scanfuse_value scanfuse_scalar_float(scanfuse_fusion *f, double value) {
    sf_num v = {SF_NUM_FLOAT, 0, value};
    return emit_scalar(f, v);
}

static scanfuse_status emit_scan(scanfuse_fusion *f, sf_op op, scanfuse_value x, int64_t dim,
                                 scanfuse_dtype dt, int flags, int32_t *out) {
    if (!f) return SCANFUSE_ERROR_STATE;
    if (f->status != SCANFUSE_OK) return f->status;
    if (x < 0 || x >= f->nvalues)
        return sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "%s: argument 'x' is not a value of this fusion",
                       sf_op_table[op].name);
    if (flags & ~(SCANFUSE_EXCLUSIVE | SCANFUSE_REVERSE))
        return sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "%s: unknown flags 0x%x", sf_op_table[op].name,
                       (unsigned)flags);
    sf_attrs a;
    sf_attrs_init(&a);
    a.dim = dim;
    a.has_dim = true;
    a.dtype = dt;
    a.exclusive = (flags & SCANFUSE_EXCLUSIVE) != 0;
    a.reverse = (flags & SCANFUSE_REVERSE) != 0;
    int32_t in[1] = {x};
    return sf_emit(f, op, in, 1, &a, out);
}

scanfuse_value scanfuse_cumsum(scanfuse_fusion *f, scanfuse_value x, int64_t dim,
                               scanfuse_dtype dtype, int flags) {
    int32_t out[SF_MAX_OUT];
    if (emit_scan(f, SF_OP_cumsum, x, dim, dtype, flags, out) != SCANFUSE_OK) return SCANFUSE_NO_VALUE;
    return out[0];
}

scanfuse_value scanfuse_cumprod(scanfuse_fusion *f, scanfuse_value x, int64_t dim,
                                scanfuse_dtype dtype, int flags) {
    int32_t out[SF_MAX_OUT];
    if (emit_scan(f, SF_OP_cumprod, x, dim, dtype, flags, out) != SCANFUSE_OK) return SCANFUSE_NO_VALUE;
    return out[0];
}

static scanfuse_status scan2(scanfuse_fusion *f, sf_op op, scanfuse_value x, int64_t dim,
                             int flags, scanfuse_value *values, scanfuse_value *indices) {
    int32_t out[SF_MAX_OUT] = {SCANFUSE_NO_VALUE, SCANFUSE_NO_VALUE};
    if (f && f->status == SCANFUSE_OK && (!values || !indices))
        return sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "%s: NULL pointer for the %s result",
                       sf_op_table[op].name, !values ? "values" : "indices");
    scanfuse_status st = emit_scan(f, op, x, dim, SCANFUSE_DTYPE_NONE, flags, out);
    if (values) *values = st == SCANFUSE_OK ? out[0] : SCANFUSE_NO_VALUE;
    if (indices) *indices = st == SCANFUSE_OK ? out[1] : SCANFUSE_NO_VALUE;
    return st;
}

scanfuse_status scanfuse_cummax(scanfuse_fusion *f, scanfuse_value x, int64_t dim, int flags,
                                scanfuse_value *values, scanfuse_value *indices) {
    return scan2(f, SF_OP_cummax, x, dim, flags, values, indices);
}

scanfuse_status scanfuse_cummin(scanfuse_fusion *f, scanfuse_value x, int64_t dim, int flags,
                                scanfuse_value *values, scanfuse_value *indices) {
    return scan2(f, SF_OP_cummin, x, dim, flags, values, indices);
}

scanfuse_value scanfuse_logcumsumexp(scanfuse_fusion *f, scanfuse_value x, int64_t dim, int flags) {
    int32_t out[SF_MAX_OUT];
    if (emit_scan(f, SF_OP_logcumsumexp, x, dim, SCANFUSE_DTYPE_NONE, flags, out) != SCANFUSE_OK)
        return SCANFUSE_NO_VALUE;
    return out[0];
}

scanfuse_status scanfuse_output(scanfuse_fusion *f, scanfuse_value value, const char *name) {
    if (!f) return SCANFUSE_ERROR_STATE;
    if (f->status != SCANFUSE_OK) return f->status;
    if (value < 0 || value >= f->nvalues)
        return sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "output: %d is not a value of this fusion",
                       (int)value);
    char buf[32];
    const char *nm = name ? name : sf_value_name(f, value, buf, sizeof buf);
    if (!sf_is_identifier(nm))
        return sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "output: invalid name '%s'", nm);
    for (int i = 0; i < f->noutputs; i++)
        if (strcmp(f->output_names[i], nm) == 0)
            return sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "output: name '%s' is already an output", nm);
    if (!grow((void **)&f->outputs, &f->cap_outputs, f->noutputs + 1, sizeof(int32_t)))
        return sf_fail(f, SCANFUSE_ERROR_MEMORY, "out of memory");
    char **names = realloc(f->output_names, (size_t)f->cap_outputs * sizeof(char *));
    if (!names) return sf_fail(f, SCANFUSE_ERROR_MEMORY, "out of memory");
    f->output_names = names;
    char *copy = sf_strdup(nm);
    if (!copy) return sf_fail(f, SCANFUSE_ERROR_MEMORY, "out of memory");
    f->outputs[f->noutputs] = value;
    f->output_names[f->noutputs] = copy;
    f->noutputs++;
    return SCANFUSE_OK;
}

int scanfuse_fusion_num_inputs(const scanfuse_fusion *f) { return f ? f->ninputs : -1; }
int scanfuse_fusion_num_outputs(const scanfuse_fusion *f) { return f ? f->noutputs : -1; }

static void value_info(const scanfuse_fusion *f, int32_t id, scanfuse_dtype *dtype, int *ndim,
                       int64_t *shape) {
    const sf_value *v = &f->values[id];
    if (dtype) *dtype = v->dtype;
    if (ndim) *ndim = v->ndim;
    if (shape)
        for (int d = 0; d < v->ndim; d++) shape[d] = v->shape[d];
}

scanfuse_status scanfuse_fusion_input_info(const scanfuse_fusion *f, int i, const char **name,
                                           scanfuse_dtype *dtype, int *ndim, int64_t *shape) {
    if (!f) return SCANFUSE_ERROR_STATE;
    if (i < 0 || i >= f->ninputs) return SCANFUSE_ERROR_ARGUMENT;
    if (name) *name = f->values[f->inputs[i]].name;
    value_info(f, f->inputs[i], dtype, ndim, shape);
    return SCANFUSE_OK;
}

scanfuse_status scanfuse_fusion_output_info(const scanfuse_fusion *f, int i, const char **name,
                                            scanfuse_dtype *dtype, int *ndim, int64_t *shape) {
    if (!f) return SCANFUSE_ERROR_STATE;
    if (i < 0 || i >= f->noutputs) return SCANFUSE_ERROR_ARGUMENT;
    if (name) *name = f->output_names[i];
    value_info(f, f->outputs[i], dtype, ndim, shape);
    return SCANFUSE_OK;
}

scanfuse_fusion *sf_fusion_clone(const scanfuse_fusion *f) {
    if (!f) return NULL;
    scanfuse_fusion *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->status = f->status;
    memcpy(c->error, f->error, sizeof c->error);
    bool ok = grow((void **)&c->values, &c->cap_values, f->nvalues, sizeof(sf_value)) &&
              grow((void **)&c->nodes, &c->cap_nodes, f->nnodes, sizeof(sf_node)) &&
              grow((void **)&c->inputs, &c->cap_inputs, f->ninputs, sizeof(int32_t)) &&
              grow((void **)&c->outputs, &c->cap_outputs, f->noutputs, sizeof(int32_t));
    if (ok && f->noutputs) {
        c->output_names = calloc((size_t)c->cap_outputs, sizeof(char *));
        ok = c->output_names != NULL;
    }
    if (!ok) {
        scanfuse_fusion_free(c);
        return NULL;
    }
    for (int i = 0; i < f->nvalues; i++) {
        c->values[i] = f->values[i];
        c->values[i].name = NULL;
    }
    c->nvalues = f->nvalues;
    for (int i = 0; i < f->nvalues; i++) {
        if (f->values[i].name && !(c->values[i].name = sf_strdup(f->values[i].name))) {
            scanfuse_fusion_free(c);
            return NULL;
        }
    }
    if (f->nnodes) memcpy(c->nodes, f->nodes, (size_t)f->nnodes * sizeof(sf_node));
    c->nnodes = f->nnodes;
    if (f->ninputs) memcpy(c->inputs, f->inputs, (size_t)f->ninputs * sizeof(int32_t));
    c->ninputs = f->ninputs;
    for (int i = 0; i < f->noutputs; i++) {
        c->outputs[i] = f->outputs[i];
        if (!(c->output_names[i] = sf_strdup(f->output_names[i]))) {
            c->noutputs = i;
            scanfuse_fusion_free(c);
            return NULL;
        }
        c->noutputs = i + 1;
    }
    return c;
}
