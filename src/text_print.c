/*
 * text_print.c — writes a fusion in its text form (scanfuse_print) and one node's call
 * text (sf_print_call, also used by segment descriptions).
 *
 * Layout: the inputs in declaration order ("input x: float32[4, 8]"), then every node
 * in order ("y = cumsum(x, dim=1)", "v, i = cummax(x, dim=0)"), then one line
 * "output a, b, ..." in output order.  Calls pass tensors positionally and every other
 * argument by key, in signature order (a tensor parameter that follows a non-tensor
 * one, as in gather(x, dim=1, index=i), is passed by key too), leaving out an argument
 * whose text equals the parameter's default and a none-default argument (dtype, dim, start, end) that
 * inference would arrive at anyway (see omittable()): "cumsum(x, dim=1)", "sum(x)".
 *
 * Round trip: scanfuse_parse(scanfuse_print(f)) builds a fusion with the same inputs
 * (names, dtypes, shapes), the same non-scalar nodes with the same canonical
 * attributes and result types, and the same outputs (names and order); printing that
 * fusion gives the same text.  What may differ are the names of intermediate values
 * and the placement of weak scalars, per the rules below.
 *
 * Naming rules (display names are computed once per print, all distinct):
 *  1. inputs keep their names;
 *  2. a node result that is an output is printed under the name of its first output,
 *     so an output built with a name (scanfuse_output(f, v, "y")) reads "y = ...";
 *  3. other named values keep their names when free and not reserved (true, false,
 *     none, inf, nan);
 *  4. everything else gets "v<id>", or "v<id>_<k>" when a name is already taken, so
 *     generated names never collide with user names;
 *  5. an output whose name differs from its value's display name (an input output
 *     under another name, a value output twice) is written "output VALUE as NAME".
 * Weak scalars (SF_OP_scalar) are written inline as literals where they are used and
 * get no statement of their own, unless the scalar itself is an output.
 * Literals round-trip exactly: integers in decimal, floats as the shortest "%.*g" text
 * that reads back to the same double (always with '.', 'e', inf or nan so that they
 * stay floats), bools as true/false, dtypes by canonical name ("torch.NAME" when a
 * value has that name, since a value name would win).
 *
 * Limits: a weak scalar that nothing uses and that is not an output is not printed
 * (it has no effect); an input named with a reserved word (possible through
 * scanfuse_input) prints, but the parser rejects the name.
 */
#include "sf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A set of strings (open addressing, FNV-1a), to hand out distinct display names in
 * time linear in the fusion's size. */
typedef struct name_set {
    const char **slots;
    size_t cap; /* a power of two, at least twice the number of entries */
} name_set;

static size_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static bool set_contains(const name_set *s, const char *name) {
    for (size_t i = hash_str(name) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (!s->slots[i]) return false;
        if (strcmp(s->slots[i], name) == 0) return true;
    }
}

/* Adds name (not copied: it must outlive the set).  The set never fills up because
 * it is sized for every name that can be added. */
static void set_add(name_set *s, const char *name) {
    size_t i = hash_str(name) & (s->cap - 1);
    while (s->slots[i]) {
        if (strcmp(s->slots[i], name) == 0) return;
        i = (i + 1) & (s->cap - 1);
    }
    s->slots[i] = name;
}

/* How tensor arguments are named: by the printer's table, or (names == NULL) by
 * sf_value_name for one-off call texts. */
typedef struct namer {
    const scanfuse_fusion *f;
    char **names;      /* display name per value id, or NULL */
    const bool *inl;   /* per value id: written inline as a literal, or NULL */
    const name_set *set; /* the display names, with names */
} namer;

/* ---- literals ---- */

static void put_float(sf_buf *out, double v) {
    if (isnan(v)) {
        sf_buf_puts(out, "nan");
        return;
    }
    if (isinf(v)) {
        sf_buf_puts(out, v < 0 ? "-inf" : "inf");
        return;
    }
    char t[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(t, sizeof t, "%.*g", prec, v);
        if (strtod(t, NULL) == v) break;
    }
    /* keep it a float literal: "1" would read back as an integer */
    if (!strchr(t, '.') && !strchr(t, 'e')) {
        size_t n = strlen(t);
        if (n + 3 <= sizeof t) memcpy(t + n, ".0", 3);
    }
    sf_buf_puts(out, t);
}

static void put_num(sf_buf *out, const sf_num *n) {
    switch (n->kind) {
    case SF_NUM_INT: sf_buf_printf(out, "%lld", (long long)n->i); return;
    case SF_NUM_BOOL: sf_buf_puts(out, n->i ? "true" : "false"); return;
    case SF_NUM_FLOAT: put_float(out, n->f); return;
    }
    sf_buf_puts(out, "nan"); /* unreachable for a valid sf_num */
}

static void put_list(sf_buf *out, const int64_t *list, int n) {
    sf_buf_puts(out, "[");
    for (int i = 0; i < n; i++) sf_buf_printf(out, "%s%lld", i ? ", " : "", (long long)list[i]);
    sf_buf_puts(out, "]");
}

/* Is `name` a display name of some value (so that a dtype word would read as it)? */
static bool name_in_use(const namer *nm, const char *name) {
    if (nm->set) return set_contains(nm->set, name);
    return sf_find_value(nm->f, name) >= 0;
}

static void put_dtype(sf_buf *out, const namer *nm, scanfuse_dtype dt) {
    const char *name = scanfuse_dtype_name(dt);
    if (name_in_use(nm, name)) sf_buf_puts(out, "torch.");
    sf_buf_puts(out, name);
}

/* A tensor argument: its display name, or the literal of an inline weak scalar. */
static void put_tensor(sf_buf *out, const namer *nm, int32_t id) {
    const scanfuse_fusion *f = nm->f;
    if (id < 0 || id >= f->nvalues) {
        sf_buf_printf(out, "<bad value %d>", (int)id);
        return;
    }
    const sf_value *v = &f->values[id];
    bool inline_it;
    if (nm->inl) {
        inline_it = nm->inl[id];
    } else {
        inline_it = v->producer >= 0 && v->producer < f->nnodes &&
                    f->nodes[v->producer].op == SF_OP_scalar && !v->name;
    }
    if (inline_it) {
        put_num(out, &f->nodes[v->producer].a.value);
        return;
    }
    if (nm->names && nm->names[id]) {
        sf_buf_puts(out, nm->names[id]);
        return;
    }
    char buf[32];
    sf_buf_puts(out, sf_value_name(f, id, buf, sizeof buf));
}

/* ---- attributes ---- */

static bool num_equal(const sf_num *a, const sf_num *b) {
    if (a->kind != b->kind || a->i != b->i) return false;
    if (isnan(a->f) || isnan(b->f)) return isnan(a->f) && isnan(b->f);
    return a->f == b->f && signbit(a->f) == signbit(b->f);
}

static bool attrs_equal(const sf_attrs *a, const sf_attrs *b) {
    if (a->has_dim != b->has_dim || (a->has_dim && a->dim != b->dim)) return false;
    if (a->has_list != b->has_list || a->nlist != b->nlist) return false;
    for (int i = 0; i < a->nlist && i < SF_MAX_LIST; i++)
        if (a->list[i] != b->list[i]) return false;
    if (a->has_start != b->has_start || (a->has_start && !num_equal(&a->start, &b->start)))
        return false;
    if (a->has_end != b->has_end || (a->has_end && !num_equal(&a->end, &b->end))) return false;
    if (a->has_step != b->has_step || (a->has_step && !num_equal(&a->step, &b->step)))
        return false;
    if (a->has_value != b->has_value || (a->has_value && !num_equal(&a->value, &b->value)))
        return false;
    return a->diagonal == b->diagonal && a->dtype == b->dtype &&
           a->exclusive == b->exclusive && a->reverse == b->reverse && a->keepdim == b->keepdim &&
           a->has_count == b->has_count && (!a->has_count || a->count == b->count) &&
           a->largest == b->largest && a->sorted == b->sorted &&
           a->descending == b->descending && a->stable == b->stable && a->reduce == b->reduce;
}

/*
 * May parameter p (whose default is none) be left out of node n's call?  Yes when
 * inference, given the attributes without it, arrives at the same canonical
 * attributes and result types: then "cumsum(x, dim=1)" reads back exactly like
 * "cumsum(x, dim=1, dtype=float32)" and "sum(x)" like "sum(x, dim=[0, 1])".  Asked of
 * sf_infer itself, so the answer cannot drift from it.  arange's start/end are never
 * left out: binding moves a lone start to end, which a probe here would not model.
 */
static bool omittable(const scanfuse_fusion *f, const sf_node *n, const sf_param *p) {
    if (n->op == SF_OP_arange && strcmp(p->name, "dtype") != 0) return false;
    sf_attrs init, probe = n->a;
    sf_attrs_init(&init);
    const char *k = p->name;
    if (strcmp(k, "dim") == 0 && p->kind == SF_P_INT) {
        probe.dim = init.dim;
        probe.has_dim = init.has_dim;
    } else if (p->kind == SF_P_INTS) {
        memcpy(probe.list, init.list, sizeof probe.list);
        probe.nlist = init.nlist;
        probe.has_list = init.has_list;
    } else if (strcmp(k, "dtype") == 0) {
        probe.dtype = init.dtype;
    } else if (strcmp(k, "start") == 0) {
        probe.start = init.start;
        probe.has_start = init.has_start;
    } else if (strcmp(k, "end") == 0) {
        probe.end = init.end;
        probe.has_end = init.has_end;
    } else {
        return false;
    }
    sf_attrs canon;
    sf_value res[SF_MAX_OUT];
    memset(res, 0, sizeof res);
    char msg[SF_ERR_LEN];
    if (sf_infer(f, n->op, n->in, n->nin, &probe, &canon, res, msg, sizeof msg) != SCANFUSE_OK)
        return false;
    if (!attrs_equal(&canon, &n->a)) return false;
    for (int i = 0; i < n->nout && i < SF_MAX_OUT; i++) {
        int32_t id = n->out[i];
        if (id < 0 || id >= f->nvalues) return false;
        const sf_value *v = &f->values[id];
        if (res[i].dtype != v->dtype || res[i].ndim != v->ndim || res[i].weak != v->weak)
            return false;
        for (int d = 0; d < v->ndim && d < SF_MAX_DIMS; d++)
            if (res[i].shape[d] != v->shape[d]) return false;
    }
    return true;
}

/*
 * Writes the value of parameter p of node n into out (without the key).  Returns false
 * when the parameter is "not given" (a none default left unset).
 */
static bool param_text(const namer *nm, const sf_node *n, const sf_param *p, sf_buf *out) {
    const sf_attrs *a = &n->a;
    const char *k = p->name;
    if (strcmp(k, "dim") == 0 && p->kind == SF_P_INT) {
        if (!a->has_dim) return false;
        sf_buf_printf(out, "%lld", (long long)a->dim);
    } else if (p->kind == SF_P_INTS) {
        if (!a->has_list) return false;
        put_list(out, a->list, a->nlist < 0 ? 0 : a->nlist > SF_MAX_LIST ? SF_MAX_LIST : a->nlist);
    } else if (strcmp(k, "dtype") == 0) {
        if (!sf_dtype_valid(a->dtype)) return false;
        put_dtype(out, nm, a->dtype);
    } else if (strcmp(k, "start") == 0) {
        if (!a->has_start) return false;
        put_num(out, &a->start);
    } else if (strcmp(k, "end") == 0) {
        if (!a->has_end) return false;
        put_num(out, &a->end);
    } else if (strcmp(k, "step") == 0) {
        if (!a->has_step) return false;
        put_num(out, &a->step);
    } else if (strcmp(k, "value") == 0 || strcmp(k, "fill_value") == 0) {
        if (!a->has_value) return false;
        put_num(out, &a->value);
    } else if (strcmp(k, "diagonal") == 0) {
        sf_buf_printf(out, "%lld", (long long)a->diagonal);
    } else if (strcmp(k, "exclusive") == 0) {
        sf_buf_puts(out, a->exclusive ? "true" : "false");
    } else if (strcmp(k, "reverse") == 0) {
        sf_buf_puts(out, a->reverse ? "true" : "false");
    } else if (strcmp(k, "keepdim") == 0) {
        sf_buf_puts(out, a->keepdim ? "true" : "false");
    } else if (strcmp(k, "k") == 0 || strcmp(k, "num_classes") == 0 ||
               strcmp(k, "minlength") == 0 || strcmp(k, "range") == 0) {
        if (!a->has_count) return false;
        sf_buf_printf(out, "%lld", (long long)a->count);
    } else if (strcmp(k, "largest") == 0) {
        sf_buf_puts(out, a->largest ? "true" : "false");
    } else if (strcmp(k, "sorted") == 0) {
        sf_buf_puts(out, a->sorted ? "true" : "false");
    } else if (strcmp(k, "descending") == 0) {
        sf_buf_puts(out, a->descending ? "true" : "false");
    } else if (strcmp(k, "stable") == 0) {
        sf_buf_puts(out, a->stable ? "true" : "false");
    } else if (strcmp(k, "reduce") == 0) {
        if (a->reduce == SF_REDUCE_NONE) return false;
        sf_buf_puts(out, sf_reduce_name(a->reduce)); /* a bare word: reduce=add */
    } else {
        return false; /* a parameter without an attribute field: nothing to print */
    }
    return true;
}

static void print_call(const namer *nm, const sf_node *n, sf_buf *out) {
    const scanfuse_fusion *f = nm->f;
    if ((int)n->op < 0 || n->op >= SF_NUM_OPS) {
        sf_buf_printf(out, "<bad op %d>()", (int)n->op);
        return;
    }
    sf_buf_puts(out, sf_op_table[n->op].name);
    sf_buf_puts(out, "(");
    bool first = true;
    const sf_signature *sig = sf_op_signature(n->op);
    /* Parameters in signature order: tensors positionally while every parameter before
     * them is a tensor (all of them for most ops), by key after a non-tensor parameter
     * (gather(x, dim=1, index=i)), so a literal in a later tensor slot cannot be read
     * as the non-tensor parameter before it. */
    bool keyed = false;
    int t = 0;
    for (int i = 0; sig && i < sig->nparams; i++) {
        const sf_param *p = &sig->params[i];
        if (p->kind == SF_P_TENSOR) {
            if (t >= n->nin || t >= SF_MAX_IN) continue;
            if (!first) sf_buf_puts(out, ", ");
            if (keyed) sf_buf_printf(out, "%s=", p->name);
            put_tensor(out, nm, n->in[t++]);
            first = false;
            continue;
        }
        keyed = true;
        sf_buf val = {0};
        bool given = param_text(nm, n, p, &val);
        char *text = sf_buf_take(&val);
        if (!text) {
            out->oom = true;
            return;
        }
        bool skip = !given;
        if (!skip && p->has_default && !p->default_none && strcmp(text, p->default_text) == 0)
            skip = true;
        if (!skip && p->default_none && omittable(f, n, p)) skip = true;
        if (!skip) {
            sf_buf_printf(out, "%s%s=%s", first ? "" : ", ", p->name, text);
            first = false;
        }
        free(text);
    }
    sf_buf_puts(out, ")");
}

void sf_print_call(const scanfuse_fusion *f, const sf_node *n, sf_buf *out) {
    if (!f || !n || !out) return;
    namer nm = {f, NULL, NULL, NULL};
    print_call(&nm, n, out);
}

/* ---- the name table ---- */

static bool is_reserved(const char *s) {
    return strcmp(s, "true") == 0 || strcmp(s, "false") == 0 || strcmp(s, "none") == 0 ||
           strcmp(s, "inf") == 0 || strcmp(s, "nan") == 0;
}

/* Claims `name` for value id if it is free; copies it.  Returns false if taken (or on
 * OOM, with *oom set). */
static bool claim(name_set *s, char **names, int32_t id, const char *name, bool *oom) {
    if (set_contains(s, name)) return false;
    char *copy = sf_strdup(name);
    if (!copy) {
        *oom = true;
        return false;
    }
    names[id] = copy;
    set_add(s, copy);
    return true;
}

static void free_names(char **names, int n) {
    if (!names) return;
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* Fills names[] (display names, rules 1-4 above) and inl[] (inline scalars). */
static bool assign_names(const scanfuse_fusion *f, char **names, bool *inl, int *first_out,
                         name_set *set_out) {
    int nv = f->nvalues;
    size_t cap = 16;
    while (cap < 2 * (size_t)nv + 16) cap *= 2;
    name_set set = {calloc(cap, sizeof(const char *)), cap};
    if (!set.slots) return false;
    bool oom = false;

    for (int i = 0; i < nv; i++) first_out[i] = -1;
    for (int o = f->noutputs - 1; o >= 0; o--) {
        int32_t id = f->outputs[o];
        if (id >= 0 && id < nv) first_out[id] = o;
    }
    for (int i = 0; i < nv; i++) {
        const sf_value *v = &f->values[i];
        inl[i] = v->producer >= 0 && v->producer < f->nnodes &&
                 f->nodes[v->producer].op == SF_OP_scalar && first_out[i] < 0;
    }
    /* 1: inputs */
    for (int k = 0; k < f->ninputs && !oom; k++) {
        int32_t id = f->inputs[k];
        if (id < 0 || id >= nv || names[id]) continue;
        const char *nm = f->values[id].name;
        if (nm) claim(&set, names, id, nm, &oom);
    }
    /* 2: node results that are outputs take their first output's name */
    for (int i = 0; i < nv && !oom; i++) {
        if (names[i] || f->values[i].producer < 0 || first_out[i] < 0) continue;
        const char *on = f->output_names ? f->output_names[first_out[i]] : NULL;
        if (on && sf_is_identifier(on) && !is_reserved(on)) claim(&set, names, i, on, &oom);
    }
    /* 3: other user names */
    for (int i = 0; i < nv && !oom; i++) {
        const char *nm = f->values[i].name;
        if (names[i] || inl[i] || !nm || !sf_is_identifier(nm) || is_reserved(nm)) continue;
        claim(&set, names, i, nm, &oom);
    }
    /* 4: fresh names */
    for (int i = 0; i < nv && !oom; i++) {
        if (names[i] || inl[i]) continue;
        char buf[48];
        snprintf(buf, sizeof buf, "v%d", i);
        for (long k = 1; !claim(&set, names, i, buf, &oom) && !oom; k++)
            snprintf(buf, sizeof buf, "v%d_%ld", i, k);
    }
    *set_out = set; /* the caller frees set.slots */
    return !oom;
}

/* ---- the whole fusion ---- */

char *scanfuse_print(const scanfuse_fusion *f) {
    if (!f || f->status != SCANFUSE_OK) return NULL;
    int nv = f->nvalues;
    char **names = calloc(nv > 0 ? (size_t)nv : 1, sizeof(char *));
    bool *inl = calloc(nv > 0 ? (size_t)nv : 1, sizeof(bool));
    int *first_out = calloc(nv > 0 ? (size_t)nv : 1, sizeof(int));
    name_set set = {NULL, 0};
    if (!names || !inl || !first_out || !assign_names(f, names, inl, first_out, &set)) {
        free(set.slots);
        free_names(names, nv);
        free(inl);
        free(first_out);
        return NULL;
    }
    namer nm = {f, names, inl, &set};
    sf_buf out = {0};

    for (int k = 0; k < f->ninputs; k++) {
        int32_t id = f->inputs[k];
        if (id < 0 || id >= nv) continue;
        const sf_value *v = &f->values[id];
        sf_buf_printf(&out, "input %s: %s", names[id] ? names[id] : "?",
                      scanfuse_dtype_name(v->dtype));
        int64_t shape[SF_MAX_DIMS];
        int nd = v->ndim < 0 ? 0 : v->ndim > SF_MAX_DIMS ? SF_MAX_DIMS : v->ndim;
        memcpy(shape, v->shape, sizeof shape);
        put_list(&out, shape, nd);
        sf_buf_puts(&out, "\n");
    }
    for (int i = 0; i < f->nnodes; i++) {
        const sf_node *n = &f->nodes[i];
        if (n->op == SF_OP_scalar && n->nout == 1 && n->out[0] >= 0 && n->out[0] < nv &&
            inl[n->out[0]])
            continue; /* written inline where it is used */
        for (int r = 0; r < n->nout && r < SF_MAX_OUT; r++) {
            int32_t id = n->out[r];
            const char *name = id >= 0 && id < nv && names[id] ? names[id] : "?";
            sf_buf_printf(&out, "%s%s", r ? ", " : "", name);
        }
        sf_buf_puts(&out, " = ");
        print_call(&nm, n, &out);
        sf_buf_puts(&out, "\n");
    }
    if (f->noutputs > 0) {
        sf_buf_puts(&out, "output ");
        for (int o = 0; o < f->noutputs; o++) {
            int32_t id = f->outputs[o];
            const char *vn = id >= 0 && id < nv && names[id] ? names[id] : "?";
            const char *on = f->output_names ? f->output_names[o] : vn;
            if (o) sf_buf_puts(&out, ", ");
            if (strcmp(vn, on) == 0) sf_buf_puts(&out, vn);
            else sf_buf_printf(&out, "%s as %s", vn, on);
        }
        sf_buf_puts(&out, "\n");
    }
    free(set.slots);
    free_names(names, nv);
    free(inl);
    free(first_out);
    return sf_buf_take(&out);
}
