/*
 * test_text.c — the text form: scanfuse_parse, scanfuse_parse_file, scanfuse_print and
 * sf_print_call.
 *
 * What is checked:
 *  - round trip for every op of the table: parse a small program, print, parse the
 *    print, print again; both prints must be equal and both fusions must have the same
 *    inputs, outputs and non-scalar nodes (op, canonical attributes, result types);
 *    a table-driven check makes sure every op of ops.def appears in some program;
 *  - every dtype spelling in input lines; comments, blank lines, CRLF, nested calls;
 *  - names: printed names never collide (a user value called v3, an input named like a
 *    dtype, outputs under other names, an input that is an output);
 *  - exact float literals (0.1, 1e-3, inf, -inf, nan, -0.0, subnormals, INT64_MIN);
 *  - malformed text: the status and the exact "<text>:LINE:COL: " prefix plus a
 *    message substring; arbitrary bytes, very long lines, deep nesting, huge numbers;
 *    a fixed-seed fuzz of random and mutated programs (never a crash; an accepted text
 *    must round-trip);
 *  - every file in examples/ parses and round-trips.
 */
#include "harness.h"
#include "sf.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- comparing fusions ---- */

static bool num_same(const sf_num *a, const sf_num *b) {
    if (a->kind != b->kind || a->i != b->i) return false;
    if (isnan(a->f) || isnan(b->f)) return isnan(a->f) && isnan(b->f);
    return a->f == b->f && signbit(a->f) == signbit(b->f);
}

static bool attrs_same(const sf_attrs *a, const sf_attrs *b) {
    if (a->has_dim != b->has_dim || (a->has_dim && a->dim != b->dim)) return false;
    if (a->has_list != b->has_list || a->nlist != b->nlist) return false;
    for (int i = 0; i < a->nlist; i++)
        if (a->list[i] != b->list[i]) return false;
    if (a->has_start != b->has_start || (a->has_start && !num_same(&a->start, &b->start)))
        return false;
    if (a->has_end != b->has_end || (a->has_end && !num_same(&a->end, &b->end))) return false;
    if (a->has_step != b->has_step || (a->has_step && !num_same(&a->step, &b->step)))
        return false;
    if (a->has_value != b->has_value || (a->has_value && !num_same(&a->value, &b->value)))
        return false;
    return a->diagonal == b->diagonal && a->dtype == b->dtype &&
           a->exclusive == b->exclusive && a->reverse == b->reverse && a->keepdim == b->keepdim;
}

static bool value_type_same(const sf_value *a, const sf_value *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->weak != b->weak) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

/* The literal of an inline scalar input, or NULL: scalars may be re-created in another
 * place, so inputs are compared by value for them. */
static const sf_num *scalar_of(const scanfuse_fusion *f, int32_t id) {
    const sf_value *v = &f->values[id];
    if (v->producer < 0 || f->nodes[v->producer].op != SF_OP_scalar) return NULL;
    return &f->nodes[v->producer].a.value;
}

/* Same inputs, outputs and non-scalar nodes (scalars compared where they are used). */
static bool fusions_same(const scanfuse_fusion *a, const scanfuse_fusion *b, char *why,
                         size_t whylen) {
    if (a->ninputs != b->ninputs) {
        snprintf(why, whylen, "inputs %d vs %d", a->ninputs, b->ninputs);
        return false;
    }
    for (int i = 0; i < a->ninputs; i++) {
        const sf_value *va = &a->values[a->inputs[i]], *vb = &b->values[b->inputs[i]];
        if (strcmp(va->name, vb->name) != 0 || !value_type_same(va, vb)) {
            snprintf(why, whylen, "input %d differs", i);
            return false;
        }
    }
    /* map node results of a to b by walking the non-scalar nodes in order */
    int32_t *map = calloc((size_t)a->nvalues + 1, sizeof *map);
    for (int i = 0; i < a->nvalues; i++) map[i] = -1;
    for (int i = 0; i < a->ninputs; i++) map[a->inputs[i]] = b->inputs[i];
    int jb = 0;
    bool ok = true;
    for (int ia = 0; ia < a->nnodes && ok; ia++) {
        const sf_node *na = &a->nodes[ia];
        if (na->op == SF_OP_scalar) {
            /* a scalar that is an output is a statement; match it as a node */
            bool is_out = false;
            for (int o = 0; o < a->noutputs; o++) is_out |= a->outputs[o] == na->out[0];
            if (!is_out) continue;
        }
        while (jb < b->nnodes && b->nodes[jb].op == SF_OP_scalar) {
            bool is_out = false;
            for (int o = 0; o < b->noutputs; o++) is_out |= b->outputs[o] == b->nodes[jb].out[0];
            if (is_out) break;
            jb++;
        }
        if (jb >= b->nnodes) {
            snprintf(why, whylen, "node %d (%s) missing", ia, sf_op_table[na->op].name);
            ok = false;
            break;
        }
        const sf_node *nb = &b->nodes[jb++];
        if (na->op != nb->op || na->nin != nb->nin || na->nout != nb->nout ||
            !attrs_same(&na->a, &nb->a)) {
            snprintf(why, whylen, "node %d (%s) differs in op or attributes", ia,
                     sf_op_table[na->op].name);
            ok = false;
            break;
        }
        for (int k = 0; k < na->nin && ok; k++) {
            const sf_num *sa = scalar_of(a, na->in[k]), *sb = scalar_of(b, nb->in[k]);
            if (sa || sb) {
                if (!sa || !sb || !num_same(sa, sb) ||
                    !value_type_same(&a->values[na->in[k]], &b->values[nb->in[k]])) {
                    snprintf(why, whylen, "node %d: scalar input %d differs", ia, k);
                    ok = false;
                }
            } else if (map[na->in[k]] != nb->in[k]) {
                snprintf(why, whylen, "node %d: input %d differs", ia, k);
                ok = false;
            }
        }
        for (int k = 0; k < na->nout && ok; k++) {
            if (!value_type_same(&a->values[na->out[k]], &b->values[nb->out[k]])) {
                snprintf(why, whylen, "node %d: result %d type differs", ia, k);
                ok = false;
            }
            map[na->out[k]] = nb->out[k];
        }
    }
    if (ok && a->noutputs != b->noutputs) {
        snprintf(why, whylen, "outputs %d vs %d", a->noutputs, b->noutputs);
        ok = false;
    }
    for (int o = 0; ok && o < a->noutputs; o++) {
        if (strcmp(a->output_names[o], b->output_names[o]) != 0) {
            snprintf(why, whylen, "output %d name %s vs %s", o, a->output_names[o],
                     b->output_names[o]);
            ok = false;
        } else if (scalar_of(a, a->outputs[o]) && scalar_of(b, b->outputs[o])) {
            if (!num_same(scalar_of(a, a->outputs[o]), scalar_of(b, b->outputs[o]))) {
                snprintf(why, whylen, "output %d scalar differs", o);
                ok = false;
            }
        } else if (map[a->outputs[o]] != b->outputs[o]) {
            snprintf(why, whylen, "output %d is another value", o);
            ok = false;
        }
    }
    free(map);
    return ok;
}

/*
 * Checks the round trip of an already built fusion: print, parse, print again; the
 * texts must be equal and the fusions the same.  Returns the first print (caller
 * frees) or NULL.
 */
static char *check_round_trip_fusion(const scanfuse_fusion *f, const char *label) {
    char *p1 = scanfuse_print(f);
    CHECKF(p1 != NULL, "%s: print returned NULL", label);
    if (!p1) return NULL;
    scanfuse_fusion *g = scanfuse_parse(p1, "<print>");
    CHECKF(scanfuse_fusion_status(g) == SCANFUSE_OK, "%s: reparse failed: %s\n%s", label,
           scanfuse_fusion_error(g), p1);
    if (scanfuse_fusion_status(g) == SCANFUSE_OK) {
        char *p2 = scanfuse_print(g);
        CHECKF(p2 && strcmp(p1, p2) == 0, "%s: prints differ:\n%s---\n%s", label, p1,
               p2 ? p2 : "(null)");
        char why[200] = "";
        CHECKF(fusions_same(f, g, why, sizeof why), "%s: fusions differ: %s\n%s", label, why, p1);
        free(p2);
    }
    scanfuse_fusion_free(g);
    return p1;
}

/* Parses a program that must be valid and checks its round trip. */
static void check_round_trip(const char *text, const char *label) {
    scanfuse_fusion *f = scanfuse_parse(text, NULL);
    CHECKF(scanfuse_fusion_status(f) == SCANFUSE_OK, "%s: parse failed: %s\n%s", label,
           scanfuse_fusion_error(f), text);
    if (scanfuse_fusion_status(f) == SCANFUSE_OK) free(check_round_trip_fusion(f, label));
    scanfuse_fusion_free(f);
}

/* ---- every op ---- */

/* Programs that together use every op of the table, several argument spellings each. */
static const char *const op_programs[] = {
    /* scans */
    "input x: int32[3, 4]\n"
    "a = cumsum(x, 1)\n"
    "b = cumsum(x, dim=-1, dtype=float32, exclusive=true, reverse=true)\n"
    "c = cumprod(x, 0, int64)\n"
    "d = cumprod(x, dim=1, reverse=true)\n"
    "output a, b, c, d\n",
    "input x: float16[5, 2]\n"
    "v, i = cummax(x, dim=0)\n"
    "w, j = cummin(x, -1, exclusive=true)\n"
    "l = logcumsumexp(x, 1, reverse=true)\n"
    "output v, i, w, j, l\n",
    "input s: float32[]\n"
    "a = cumsum(s, 0)\n"
    "b = logcumsumexp(s, dim=-1)\n"
    "output a, b\n",
    /* pointwise */
    "input x: float32[2, 3]\ninput w: float32[3]\ninput i: int16[2, 3]\ninput m: bool[2, 3]\n"
    "a = neg(x)\nb = abs(i)\nc = exp(x)\nd = log(i)\ne = log1p(x)\nf = expm1(x)\n"
    "g = sqrt(x)\nh = rsqrt(x)\nk = reciprocal(i)\nl = sigmoid(x)\nn = tanh(x)\n"
    "o = silu(x)\np = relu(i)\nq = floor(x)\nr = ceil(i)\ns = logical_not(m)\n"
    "t = isnan(x)\nu = cast(x, dtype=f16)\nv = cast(i, torch.bool)\n"
    "output a, b, c, d, e, f, g, h, k, l, n, o, p, q, r, s, t, u, v\n",
    "input x: float32[2, 3]\ninput w: float32[3]\ninput i: int64[2, 1]\n"
    "a = add(x, w)\nb = sub(x, 2.5)\nc = mul(i, 3)\nd = div(i, w)\ne = pow(x, 2)\n"
    "f = maximum(x, -inf)\ng = minimum(i, w)\nh = remainder(i, 7)\n"
    "k = floor_divide(x, w)\nl = eq(x, w)\nm = ne(i, 1)\nn = lt(x, 0.1)\no = le(w, x)\n"
    "p = gt(i, w)\nq = ge(x, nan)\nr = logical_and(l, m)\ns = logical_or(l, true)\n"
    "t = where(l, x, 0.5)\nu = where(condition=m, x=i, other=-1)\n"
    "output a, b, c, d, e, f, g, h, k, l, m, n, o, p, q, r, s, t, u\n",
    /* creation */
    "s = scalar(3)\nt = scalar(2.5)\nu = scalar(true)\n"
    "f = full([2, 3], 1.5)\ng = full(size=[4], fill_value=true)\nh = full([3], 7, dtype=int8)\n"
    "a = arange(5)\nb = arange(1, 10, 2)\nc = arange(0.0, 1.0, 0.25, dtype=float64)\n"
    "d = arange(start=-3, end=3)\ne = arange(10, 0, -3)\n"
    "i = iota(8)\nj = iota(8, dtype=int32)\n"
    "output s, t, u, f, g, h, a, b, c, d, e, i, j\n",
    /* shape */
    "input x: float32[3, 1]\ninput y: int32[3, 4]\n"
    "a = expand(x, [2, 3, 4])\nb = expand(x, size=[-1, 5])\n"
    "c = reshape(y, [12])\nd = reshape(y, shape=[-1, 2])\ne = reshape(x, [3])\n"
    "f = permute(y, [1, 0])\ng = permute(y, dims=[-1, 0])\n"
    "h = slice(y, 1, 1, 3)\ni = slice(y, dim=0, start=-2)\nj = slice(y, 1, step=2)\n"
    "k = slice(y, 1, 5, 100)\n"
    "l = pad(y, [1, 2])\nm = pad(x, [1, 1, 0, 2], value=-1.5)\nn = pad(y, [-1, 0], 3)\n"
    "o = triu(y)\np = tril(y, diagonal=-1)\nq = triu(y, 1)\n"
    "output a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q\n",
    /* reductions */
    "input x: float32[2, 3, 4]\ninput b: bool[5]\n"
    "a = sum(x)\nc = sum(x, 1)\nd = sum(x, [0, 2], keepdim=true, dtype=float64)\n"
    "e = sum(b)\nf = prod(x, dim=-1)\ng = prod(b, 0, dtype=int32)\n"
    "h = max(x, dim=[-1, 0])\ni = min(x)\nj = mean(x, 1, true)\nk = mean(x)\n"
    "l = argmax(x)\nm = argmax(x, dim=1, keepdim=true)\nn = argmin(x, -1)\n"
    "output a, c, d, e, f, g, h, i, j, k, l, m, n\n",
    /* matmul */
    "input a: float32[2, 3]\ninput b: float32[3, 4]\ninput v: float32[3]\n"
    "input bb: float32[5, 3, 4]\n"
    "c = matmul(a, b)\nd = matmul(v, b)\ne = matmul(a, v)\nf = matmul(a, bb)\n"
    "output c, d, e, f\n",
    /* index and sort: torch's positional order, keys, the tensors-first order of the C
     * API, and reduce= as a word or a quoted word */
    "input x: float32[4, 6]\ninput i: int64[4, 3]\ninput n: int32[5]\ninput z: int8[]\n"
    "v, j = topk(x, 3)\nw, k = topk(x, k=2, dim=0, largest=false, sorted=false)\n"
    "y, l = topk(z, 1)\n"
    "a = argsort(x)\nb = argsort(x, 0, true, true)\n"
    "c = argsort(n, descending=true, stable=true, range=8)\nd = argsort(reshape(j, [12]), range=6)\n"
    "o = one_hot(n, 8)\np = one_hot(i, num_classes=6)\nq = bincount(n, minlength=8)\n"
    "g = gather(x, 1, i)\nh = gather(x, dim=0, index=i)\nm = gather(x, i, dim=1)\n"
    "t = take_along_dim(x, i, dim=1)\nu = take_along_dim(x, i)\n"
    "s = index_select(x, 1, n)\nr = index_select(x, index=n, dim=-1)\nr2 = index_select(x, n, 1)\n"
    "e = scatter(x, 1, i, v)\nf = scatter(x, 1, i, 2.5, reduce=add)\n"
    "e2 = scatter(x, 1, i, src=v, reduce=\"add\")\ne3 = scatter(x, i, v, dim=1, reduce='add')\n"
    "e4 = scatter(x, dim=0, index=i, src=-1, reduce=none)\n"
    "output v, j, w, k, y, l, a, b, c, d, o, p, q, g, h, m, t, u, s, r, r2, e, f, e2, e3, e4\n",
};

static void test_every_op(void) {
    int nprog = (int)(sizeof op_programs / sizeof op_programs[0]);
    for (int i = 0; i < nprog; i++) {
        char label[32];
        snprintf(label, sizeof label, "op program %d", i);
        check_round_trip(op_programs[i], label);
    }
    /* every op of the table is used by some program (new rows need a program here) */
    for (int op = 0; op < SF_NUM_OPS; op++) {
        char pat[40];
        snprintf(pat, sizeof pat, " %s(", sf_op_table[op].name);
        bool found = false;
        for (int i = 0; i < nprog && !found; i++) found = strstr(op_programs[i], pat) != NULL;
        CHECKF(found, "op %s has no round-trip program", sf_op_table[op].name);
    }
}

/* The printer's form of a few calls, which are part of the text format. */
static void test_print_form(void) {
    scanfuse_fusion *f = scanfuse_parse(
        "input x: int32[3, 4]\n"
        "y = cumsum(x, 1, dtype=int64, exclusive=true)\n"
        "z = add(x, 2.5)\n"
        "s = sum(x)\n"
        "output y, z, s\n",
        NULL);
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_OK);
    char *p = scanfuse_print(f);
    const char *want = "input x: int32[3, 4]\n"
                       "y = cumsum(x, dim=1, exclusive=true)\n"
                       "z = add(x, 2.5)\n"
                       "s = sum(x)\n"
                       "output y, z, s\n";
    CHECKF(p && strcmp(p, want) == 0, "print:\n%s---wanted:\n%s", p ? p : "(null)", want);
    free(p);
    /* sf_print_call: one node, scalars inline */
    if (scanfuse_fusion_status(f) == SCANFUSE_OK) {
        for (int i = 0; i < f->nnodes; i++) {
            if (f->nodes[i].op != SF_OP_add) continue;
            sf_buf b = {0};
            sf_print_call(f, &f->nodes[i], &b);
            char *c = sf_buf_take(&b);
            CHECKF(c && strcmp(c, "add(x, 2.5)") == 0, "print_call: %s", c ? c : "(null)");
            free(c);
        }
    }
    scanfuse_fusion_free(f);
    /* index ops: a tensor after a non-tensor parameter goes by key, reduce as a word */
    f = scanfuse_parse("input x: float32[4, 6]\ninput i: int64[4, 3]\n"
                       "g = gather(x, 1, i)\ns = scatter(x, 1, i, 2.5, reduce=\"add\")\n"
                       "v, j = topk(x, 2, largest=false)\nt = take_along_dim(x, i)\n"
                       "output g, s, v, j, t\n",
                       NULL);
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_OK);
    p = scanfuse_print(f);
    want = "input x: float32[4, 6]\ninput i: int64[4, 3]\n"
           "g = gather(x, dim=1, index=i)\n"
           "s = scatter(x, dim=1, index=i, src=2.5, reduce=add)\n"
           "v, j = topk(x, k=2, dim=1, largest=false)\n"
           "t = take_along_dim(x, i)\n"
           "output g, s, v, j, t\n";
    CHECKF(p && strcmp(p, want) == 0, "print:\n%s---wanted:\n%s", p ? p : "(null)", want);
    free(p);
    scanfuse_fusion_free(f);
    /* a NULL fusion or one in an error state prints as NULL */
    CHECK(scanfuse_print(NULL) == NULL);
    scanfuse_fusion *bad = scanfuse_parse("y = neg(q)\n", NULL);
    CHECK(scanfuse_print(bad) == NULL);
    scanfuse_fusion_free(bad);
}

/* ---- dtypes, comments, layout ---- */

static void test_dtype_spellings(void) {
    static const struct {
        const char *spelling;
        scanfuse_dtype dt;
    } cases[] = {
        {"bool", SCANFUSE_BOOL},         {"b8", SCANFUSE_BOOL},
        {"torch.bool", SCANFUSE_BOOL},   {"|b1", SCANFUSE_BOOL},
        {"uint8", SCANFUSE_UINT8},       {"u8", SCANFUSE_UINT8},
        {"byte", SCANFUSE_UINT8},        {"|u1", SCANFUSE_UINT8},
        {"int8", SCANFUSE_INT8},         {"i8", SCANFUSE_INT8},
        {"char", SCANFUSE_INT8},         {"|i1", SCANFUSE_INT8},
        {"int16", SCANFUSE_INT16},       {"i16", SCANFUSE_INT16},
        {"short", SCANFUSE_INT16},       {"<i2", SCANFUSE_INT16},
        {"int32", SCANFUSE_INT32},       {"i32", SCANFUSE_INT32},
        {"int", SCANFUSE_INT32},         {"<i4", SCANFUSE_INT32},
        {"int64", SCANFUSE_INT64},       {"i64", SCANFUSE_INT64},
        {"long", SCANFUSE_INT64},        {"=i8", SCANFUSE_INT64},
        {"np.int64", SCANFUSE_INT64},    {"float16", SCANFUSE_FLOAT16},
        {"f16", SCANFUSE_FLOAT16},       {"half", SCANFUSE_FLOAT16},
        {"torch.float16", SCANFUSE_FLOAT16}, {"numpy.float16", SCANFUSE_FLOAT16},
        {"<f2", SCANFUSE_FLOAT16},       {"bfloat16", SCANFUSE_BFLOAT16},
        {"bf16", SCANFUSE_BFLOAT16},     {"torch.bfloat16", SCANFUSE_BFLOAT16},
        {"float32", SCANFUSE_FLOAT32},   {"f32", SCANFUSE_FLOAT32},
        {"float", SCANFUSE_FLOAT32},     {"<f4", SCANFUSE_FLOAT32},
        {"numpy.float32", SCANFUSE_FLOAT32}, {"float64", SCANFUSE_FLOAT64},
        {"f64", SCANFUSE_FLOAT64},       {"double", SCANFUSE_FLOAT64},
        {"<f8", SCANFUSE_FLOAT64},       {"torch.float64", SCANFUSE_FLOAT64},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[160];
        snprintf(text, sizeof text,
                 "input x: %s[2, 3]\ny = cast(x, dtype=%s)\nz = cast(x, %s)\noutput x, y, z\n",
                 cases[i].spelling, cases[i].spelling, cases[i].spelling);
        scanfuse_fusion *f = scanfuse_parse(text, NULL);
        CHECKF(scanfuse_fusion_status(f) == SCANFUSE_OK, "dtype %s: %s", cases[i].spelling,
               scanfuse_fusion_error(f));
        if (scanfuse_fusion_status(f) == SCANFUSE_OK) {
            for (int o = 0; o < 3; o++) {
                scanfuse_dtype dt;
                int nd;
                int64_t shape[SCANFUSE_MAX_DIMS];
                scanfuse_fusion_output_info(f, o, NULL, &dt, &nd, shape);
                CHECKF(dt == cases[i].dt && nd == 2 && shape[0] == 2 && shape[1] == 3,
                       "dtype %s: output %d is %s", cases[i].spelling, o,
                       scanfuse_dtype_name(dt));
            }
            free(check_round_trip_fusion(f, cases[i].spelling));
        }
        scanfuse_fusion_free(f);
    }
    /* 0-d and empty shapes */
    scanfuse_fusion *f = scanfuse_parse("input s: f64[]\ninput e: i8[0, 3]\noutput s, e\n", NULL);
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_OK);
    char *p = scanfuse_print(f);
    CHECKF(p && strcmp(p, "input s: float64[]\ninput e: int8[0, 3]\noutput s, e\n") == 0,
           "0-d print: %s", p ? p : "(null)");
    free(p);
    scanfuse_fusion_free(f);
}

static void test_layout(void) {
    const char *text = "# a comment line\n"
                       "\n"
                       "   \t\n"
                       "input x: float32[4, 8]   # trailing comment\r\n"
                       "\t input   y :  f32 [ 8 ]\n"
                       "  # indented comment\n"
                       "z=add(x,y)#tight\n"
                       "w = mul( z , 2 )\n"
                       "output z\n"
                       "output w # several output lines\n"
                       "# the end, without a newline";
    scanfuse_fusion *f = scanfuse_parse(text, NULL);
    CHECKF(scanfuse_fusion_status(f) == SCANFUSE_OK, "layout: %s", scanfuse_fusion_error(f));
    CHECK_EQ_INT(scanfuse_fusion_num_inputs(f), 2);
    CHECK_EQ_INT(scanfuse_fusion_num_outputs(f), 2);
    if (scanfuse_fusion_status(f) == SCANFUSE_OK) free(check_round_trip_fusion(f, "layout"));
    scanfuse_fusion_free(f);

    /* nested calls become unnamed values, emitted before their user */
    f = scanfuse_parse("input x: bfloat16[4, 8]\n"
                       "s = sigmoid(cast(max(x, dim=1), float32))\n"
                       "output s\n",
                       NULL);
    CHECKF(scanfuse_fusion_status(f) == SCANFUSE_OK, "nested: %s", scanfuse_fusion_error(f));
    if (scanfuse_fusion_status(f) == SCANFUSE_OK) {
        CHECK_EQ_INT(f->nnodes, 3);
        char *p = check_round_trip_fusion(f, "nested");
        CHECKF(p && strstr(p, "v1 = max(x, dim=[1])\nv2 = cast(v1, dtype=float32)\n"
                              "s = sigmoid(v2)\n"),
               "nested print: %s", p ? p : "(null)");
        free(p);
    }
    scanfuse_fusion_free(f);

    /* values may be called input, output, as, or like a dtype */
    check_round_trip("input input: f32[2]\ninput output: f32[2]\ninput f32: f32[2]\n"
                     "as = add(input, output)\nint = cast(as, dtype=int)\n"
                     "k = cast(f32, dtype=float32)\n"
                     "output as, int, output, k\n",
                     "keyword-like names");
}

/* ---- names ---- */

static void test_names(void) {
    /* a user value named like a generated name */
    scanfuse_fusion *f = scanfuse_fusion_new();
    int64_t shape[2] = {2, 3};
    scanfuse_value x = scanfuse_input(f, "v1", SCANFUSE_FLOAT32, 2, shape);
    scanfuse_value a = scanfuse_op(f, "neg", &x, 1, NULL);        /* id 1: "v1" is taken */
    scanfuse_value b = scanfuse_op(f, "exp", &a, 1, NULL);
    scanfuse_value two = scanfuse_scalar_float(f, 2.0);           /* inline literal */
    scanfuse_value args[2] = {b, two};
    scanfuse_value c = scanfuse_op(f, "mul", args, 2, NULL);
    scanfuse_output(f, c, "result");                              /* printed as result = */
    scanfuse_output(f, x, "same_as_input");                       /* an alias */
    scanfuse_output(f, c, "again");                               /* one value twice */
    scanfuse_output(f, a, NULL);                                  /* named v1 by default? */
    CHECKF(scanfuse_fusion_status(f) == SCANFUSE_OK, "names: %s", scanfuse_fusion_error(f));
    if (scanfuse_fusion_status(f) == SCANFUSE_OK) {
        char *p = check_round_trip_fusion(f, "names");
        CHECKF(p && strstr(p, "result = mul(") && strstr(p, ", 2.0)") &&
                   strstr(p, "v1 as same_as_input") && strstr(p, "result as again"),
               "names print:\n%s", p ? p : "(null)");
        /* the generated name of value 1 must not be v1 (the input's name) */
        CHECKF(p && !strstr(p, "v1 = neg"), "generated name collides:\n%s", p ? p : "(null)");
        free(p);
    }
    scanfuse_fusion_free(f);

    /* a dtype attribute whose name is also a value's name */
    check_round_trip("input float16: f32[3]\ny = cast(float16, dtype=torch.float16)\n"
                     "z = cumsum(float16, 0, dtype=float64)\noutput y, z\n",
                     "dtype-named value");
    f = scanfuse_parse("input float16: f32[3]\ny = cast(float16, dtype=torch.float16)\noutput y\n",
                       NULL);
    char *p = scanfuse_print(f);
    CHECKF(p && strstr(p, "cast(float16, dtype=torch.float16)"), "dtype-named print: %s",
           p ? p : "(null)");
    free(p);
    scanfuse_fusion_free(f);

    /* a weak scalar that is itself an output gets a statement */
    check_round_trip("input x: f32[2]\ns = scalar(1.5)\ny = add(x, s)\noutput y, s\n",
                     "scalar output");
}

/* ---- literals ---- */

/* Parses "y = add(x, LIT)" and returns the scalar's value. */
static bool literal_value(const char *lit, sf_num *out) {
    char text[200];
    snprintf(text, sizeof text, "input x: float64[2]\ny = add(x, %s)\noutput y\n", lit);
    scanfuse_fusion *f = scanfuse_parse(text, NULL);
    bool ok = scanfuse_fusion_status(f) == SCANFUSE_OK;
    CHECKF(ok, "literal %s: %s", lit, scanfuse_fusion_error(f));
    if (ok) {
        const sf_num *n = NULL;
        for (int i = 0; i < f->nnodes; i++)
            if (f->nodes[i].op == SF_OP_add) n = scalar_of(f, f->nodes[i].in[1]);
        ok = n != NULL;
        if (n) *out = *n;
        free(check_round_trip_fusion(f, lit));
    }
    scanfuse_fusion_free(f);
    return ok;
}

static void test_literals(void) {
    sf_num n;
    if (literal_value("0.1", &n)) CHECK(n.kind == SF_NUM_FLOAT && n.f == 0.1);
    if (literal_value("1e-3", &n)) CHECK(n.kind == SF_NUM_FLOAT && n.f == 1e-3);
    if (literal_value("2.", &n)) CHECK(n.kind == SF_NUM_FLOAT && n.f == 2.0);
    if (literal_value(".5", &n)) CHECK(n.kind == SF_NUM_FLOAT && n.f == 0.5);
    if (literal_value("inf", &n)) CHECK(n.kind == SF_NUM_FLOAT && isinf(n.f) && n.f > 0);
    if (literal_value("-inf", &n)) CHECK(n.kind == SF_NUM_FLOAT && isinf(n.f) && n.f < 0);
    if (literal_value("+inf", &n)) CHECK(n.kind == SF_NUM_FLOAT && isinf(n.f) && n.f > 0);
    if (literal_value("nan", &n)) CHECK(n.kind == SF_NUM_FLOAT && isnan(n.f));
    if (literal_value("-0.0", &n)) CHECK(n.kind == SF_NUM_FLOAT && n.f == 0 && signbit(n.f));
    if (literal_value("1e999", &n)) CHECK(n.kind == SF_NUM_FLOAT && isinf(n.f));
    if (literal_value("4.9406564584124654e-324", &n))
        CHECK(n.kind == SF_NUM_FLOAT && n.f == 4.9406564584124654e-324);
    if (literal_value("1.7976931348623157e308", &n))
        CHECK(n.kind == SF_NUM_FLOAT && n.f == 1.7976931348623157e308);
    if (literal_value("0.30000000000000004", &n))
        CHECK(n.kind == SF_NUM_FLOAT && n.f == 0.30000000000000004);
    if (literal_value("-9223372036854775808", &n)) CHECK(n.kind == SF_NUM_INT && n.i == INT64_MIN);
    if (literal_value("9223372036854775807", &n)) CHECK(n.kind == SF_NUM_INT && n.i == INT64_MAX);
    if (literal_value("true", &n)) CHECK(n.kind == SF_NUM_BOOL && n.i == 1);
    if (literal_value("false", &n)) CHECK(n.kind == SF_NUM_BOOL && n.i == 0);

    /* random doubles print and read back bit for bit */
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 12345);
    for (int i = 0; i < 200; i++) {
        uint64_t bits = sf_test_rng_next(&rng);
        double d;
        memcpy(&d, &bits, sizeof d);
        if (isnan(d)) continue;
        scanfuse_fusion *f = scanfuse_fusion_new();
        int64_t shape[1] = {2};
        scanfuse_value x = scanfuse_input(f, "x", SCANFUSE_FLOAT64, 1, shape);
        scanfuse_value args[2] = {x, scanfuse_scalar_float(f, d)};
        scanfuse_output(f, scanfuse_op(f, "add", args, 2, NULL), "y");
        char label[64];
        snprintf(label, sizeof label, "double %a", d);
        if (scanfuse_fusion_status(f) == SCANFUSE_OK) free(check_round_trip_fusion(f, label));
        scanfuse_fusion_free(f);
    }
}

/* ---- malformed text ---- */

/* Parses text and checks the status, the exact message prefix and a substring. */
static void check_error(const char *text, scanfuse_status want, const char *prefix,
                        const char *needle, int line) {
    scanfuse_fusion *f = scanfuse_parse(text, NULL);
    CHECKF(f != NULL, "line %d: parse returned NULL", line);
    if (!f) return;
    scanfuse_status st = scanfuse_fusion_status(f);
    const char *msg = scanfuse_fusion_error(f);
    sf_test_check(st == want, __FILE__, line, "status %s, wanted %s (%s)",
                  scanfuse_status_string(st), scanfuse_status_string(want), msg);
    sf_test_check(strncmp(msg, prefix, strlen(prefix)) == 0, __FILE__, line,
                  "message '%s' does not start with '%s'", msg, prefix);
    sf_test_check(sf_test_contains(msg, needle), __FILE__, line,
                  "message '%s' lacks '%s'", msg, needle);
    scanfuse_fusion_free(f);
}
#define CHECK_ERROR(text, st, prefix, needle) check_error(text, st, prefix, needle, __LINE__)

static void test_errors(void) {
    const char *X = "input x: f32[2, 3]\n";
    char t[512];
#define T(s) (snprintf(t, sizeof t, "%s%s", X, s), t)
    CHECK_ERROR(T("y = cumsun(x, 0)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:5: ",
                "unknown op 'cumsun'");
    CHECK_ERROR(T("y = neg(q)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:9: ", "undefined name 'q'");
    CHECK_ERROR(T("output q\n"), SCANFUSE_ERROR_PARSE, "<text>:2:8: ", "undefined name 'q'");
    CHECK_ERROR("input x: flaot32[4]\n", SCANFUSE_ERROR_DTYPE, "<text>:1:10: ",
                "unknown dtype 'flaot32'");
    CHECK_ERROR(T("y = cast(x, dtype=flaot32)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:19: ",
                "undefined name 'flaot32'");
    CHECK_ERROR(T("y = cast(x, dtype=torch.flaot32)\n"), SCANFUSE_ERROR_DTYPE, "<text>:2:19: ",
                "unknown dtype 'torch.flaot32'");
    CHECK_ERROR("input x: complex64[4]\n", SCANFUSE_ERROR_DTYPE, "<text>:1:10: ", "complex");
    CHECK_ERROR("input x: <c8[4]\n", SCANFUSE_ERROR_DTYPE, "<text>:1:10: ", "complex");
    CHECK_ERROR(T("y = cast(x, complex128)\n"), SCANFUSE_ERROR_DTYPE, "<text>:2:13: ", "complex");
    CHECK_ERROR("input x: f32[4, 8\n", SCANFUSE_ERROR_PARSE, "<text>:1:13: ", "missing ']'");
    CHECK_ERROR("input x: f32 4, 8]\n", SCANFUSE_ERROR_PARSE, "<text>:1:14: ", "expected '['");
    CHECK_ERROR("input x: f32\n", SCANFUSE_ERROR_PARSE, "<text>:1:13: ", "expected '['");
    CHECK_ERROR("input x f32[4]\n", SCANFUSE_ERROR_PARSE, "<text>:1:9: ", "expected ':'");
    CHECK_ERROR("input x: f32[1, 2, 3, 4, 5, 6, 7, 8, 9]\n", SCANFUSE_ERROR_SHAPE,
                "<text>:1:13: ", "more than 8 dims");
    CHECK_ERROR("input x: f32[2, -1]\n", SCANFUSE_ERROR_SHAPE, "<text>:1:13: ", "negative");
    CHECK_ERROR("input x: f32[2.5]\n", SCANFUSE_ERROR_PARSE, "<text>:1:14: ", "expected an integer");
    CHECK_ERROR(T("y = reshape(x, [6, 1\n"), SCANFUSE_ERROR_PARSE, "<text>:2:16: ",
                "unterminated list");
    CHECK_ERROR(T("y = reshape(x, [6, 1.5])\n"), SCANFUSE_ERROR_PARSE, "<text>:2:20: ",
                "expected an integer");
    CHECK_ERROR(T("y = cumsum(x, dim=2)\n"), SCANFUSE_ERROR_ARGUMENT, "<text>:2:1: ",
                "out of range");
    CHECK_ERROR(T("\n\n  y = add(x, reshape(x, [3, 2]))\n"), SCANFUSE_ERROR_SHAPE,
                "<text>:4:3: ", "add");
    CHECK_ERROR(T("y = neg(reshape(x, [7]))\n"), SCANFUSE_ERROR_SHAPE, "<text>:2:9: ",
                "reshape");
    CHECK_ERROR(T("a, b = neg(x)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:1: ",
                "neg has 1 result, but 2 names are given");
    CHECK_ERROR(T("a = cummax(x, 0)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:1: ",
                "cummax has 2 results, but 1 name is given");
    CHECK_ERROR(T("a = neg(cummax(x, 0))\n"), SCANFUSE_ERROR_PARSE, "<text>:2:9: ",
                "cannot be used as an argument");
    CHECK_ERROR(T("a, b, c = cummax(x, 0)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:1: ",
                "cummax has 2 results, but 3 names are given");
    CHECK_ERROR(T("a, b, c, d = cummax(x, 0)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:10: ",
                "more than 2 result names");
    CHECK_ERROR(T("a, a = cummax(x, 0)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:4: ", "twice");
    CHECK_ERROR(T("input x: f32[4]\n"), SCANFUSE_ERROR_PARSE, "<text>:2:7: ",
                "redefined name 'x'");
    CHECK_ERROR(T("x = neg(x)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:1: ", "redefined name 'x'");
    CHECK_ERROR(T("inf = neg(x)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:1: ", "reserved");
    CHECK_ERROR(T("output x, x\n"), SCANFUSE_ERROR_ARGUMENT, "<text>:2:11: ", "already an output");
    CHECK_ERROR("", SCANFUSE_ERROR_PARSE, "<text>:1:1: ", "empty");
    CHECK_ERROR("# only a comment\n\n", SCANFUSE_ERROR_PARSE, "<text>:1:1: ", "empty");
    CHECK_ERROR("\x01\xff\x80 garbage\n", SCANFUSE_ERROR_PARSE, "<text>:1:1: ",
                "unexpected byte 0x01");
    CHECK_ERROR(T("y = neg(x) \xc3\xa9\n"), SCANFUSE_ERROR_PARSE, "<text>:2:12: ",
                "unexpected byte 0xc3 after the statement");
    CHECK_ERROR(T("y = neg(x\n"), SCANFUSE_ERROR_PARSE, "<text>:2:8: ", "missing ')'");
    CHECK_ERROR(T("y = neg(x # comment)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:8: ", "missing ')'");
    CHECK_ERROR(T("y = neg(x) z\n"), SCANFUSE_ERROR_PARSE, "<text>:2:12: ",
                "after the statement");
    CHECK_ERROR(T("y = neg(x);\n"), SCANFUSE_ERROR_PARSE, "<text>:2:11: ", "';'");
    CHECK_ERROR(T("y = neg x\n"), SCANFUSE_ERROR_PARSE, "<text>:2:9: ", "expected '('");
    CHECK_ERROR(T("y neg(x)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:3: ", "expected '='");
    CHECK_ERROR(T("y = (x)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:5: ", "expected an op name");
    CHECK_ERROR(T("y = add(x,, x)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:11: ", "expected an argument");
    CHECK_ERROR(T("y = add(x x)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:11: ", "expected ',' or ')'");
    CHECK_ERROR(T("y = neg()\n"), SCANFUSE_ERROR_ARGUMENT, "<text>:2:5: ", "missing required");
    CHECK_ERROR(T("y = cumsum(x, 0, bogus=1)\n"), SCANFUSE_ERROR_ARGUMENT, "<text>:2:18: ",
                "unexpected argument 'bogus'");
    CHECK_ERROR(T("y = cumsum(x, dim=1.5)\n"), SCANFUSE_ERROR_ARGUMENT, "<text>:2:15: ",
                "argument 'dim' must be an int");
    CHECK_ERROR(T("y = add(x, 1x)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:13: ", "in number");
    CHECK_ERROR(T("y = add(x, 1e)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:13: ", "exponent");
    CHECK_ERROR(T("y = add(x, -)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:12: ", "expected a number");
    CHECK_ERROR(T("y = add(x, -foo)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:12: ", "expected a number");
    CHECK_ERROR(T("y = add(x, 99999999999999999999)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:12: ",
                "out of the range of int64");
    CHECK_ERROR("input x: f32[99999999999999999999999]\n", SCANFUSE_ERROR_PARSE, "<text>:1:14: ",
                "out of the range");
    CHECK_ERROR(T("y = add(x, 9223372036854775808)\n"), SCANFUSE_ERROR_PARSE, "<text>:2:12: ",
                "out of the range");
    CHECK_ERROR("input\n", SCANFUSE_ERROR_PARSE, "<text>:1:6: ", "expected a name after 'input'");
    CHECK_ERROR(T("output\n"), SCANFUSE_ERROR_PARSE, "<text>:2:7: ", "expected a name");
    CHECK_ERROR(T("output x as\n"), SCANFUSE_ERROR_PARSE, "<text>:2:12: ",
                "expected an output name after 'as'");
    CHECK_ERROR(T("output x y\n"), SCANFUSE_ERROR_PARSE, "<text>:2:10: ", "after the statement");
    CHECK_ERROR(T("y = cumsum(x, [[[[1]]]])\n"), SCANFUSE_ERROR_PARSE, "<text>:2:16: ",
                "expected a number");
#undef T
    /* index and sort ops */
    const char *XI = "input x: f32[2, 3]\ninput i: i64[2, 3]\n";
#define T(s) (snprintf(t, sizeof t, "%s%s", XI, s), t)
    CHECK_ERROR(T("y = scatter(x, 1, i, x, reduce=mul)\n"), SCANFUSE_ERROR_ARGUMENT,
                "<text>:3:25: ", "scatter: argument 'reduce' must be none or add, got 'mul'");
    CHECK_ERROR(T("y = scatter(x, 1, i, x, reduce=i)\n"), SCANFUSE_ERROR_ARGUMENT,
                "<text>:3:25: ", "got 'i'");
    CHECK_ERROR(T("y = scatter(x, 1, i, x, reduce=\"add)\n"), SCANFUSE_ERROR_PARSE,
                "<text>:3:32: ", "unterminated");
    CHECK_ERROR(T("y = scatter(x, 1, i, x, reduce=\"\")\n"), SCANFUSE_ERROR_PARSE,
                "<text>:3:32: ", "empty");
    CHECK_ERROR(T("y = cumsum(x, dim=\"add\")\n"), SCANFUSE_ERROR_PARSE, "<text>:3:19: ",
                "unexpected");
    CHECK_ERROR(T("y = gather(x, 1, x)\n"), SCANFUSE_ERROR_DTYPE, "<text>:3:1: ",
                "gather: argument 'index' must have an integer dtype, got float32");
    CHECK_ERROR(T("y, j = topk(x, 4)\n"), SCANFUSE_ERROR_ARGUMENT, "<text>:3:1: ",
                "topk: k 4 out of range for dim 1 of size 3");
    CHECK_ERROR(T("y = topk(x, 2)\n"), SCANFUSE_ERROR_PARSE, "<text>:3:1: ", "2 results");
    CHECK_ERROR(T("y = argsort(x, range=4)\n"), SCANFUSE_ERROR_DTYPE, "<text>:3:1: ",
                "argument 'range' needs integer keys");
#undef T

    /* a named file in messages */
    scanfuse_fusion *f = scanfuse_parse("input x: f32[2]\ny = nope(x)\n", "prog.sf");
    CHECKF(strncmp(scanfuse_fusion_error(f), "prog.sf:2:5: unknown op 'nope'", 30) == 0, "%s",
           scanfuse_fusion_error(f));
    scanfuse_fusion_free(f);
    /* NULL text */
    f = scanfuse_parse(NULL, NULL);
    CHECK(scanfuse_fusion_status(f) != SCANFUSE_OK);
    scanfuse_fusion_free(f);
}

/* Long lines, deep nesting, huge numbers. */
static void test_limits(void) {
    size_t n = 100000;
    char *t = malloc(n + 200);
    /* a 100000-character undefined name: a short message with the right column */
    strcpy(t, "input x: f32[2]\ny = neg(");
    size_t len = strlen(t);
    memset(t + len, 'a', n);
    strcpy(t + len + n, ")\n");
    CHECK_ERROR(t, SCANFUSE_ERROR_PARSE, "<text>:2:9: ", "undefined name 'aaaa");
    scanfuse_fusion *f = scanfuse_parse(t, NULL);
    CHECK(strlen(scanfuse_fusion_error(f)) < 200);
    scanfuse_fusion_free(f);
    /* 100000 spaces before a statement: the column counts them */
    memset(t, ' ', n);
    strcpy(t + n, "y = neg(q)\n");
    CHECK_ERROR(t, SCANFUSE_ERROR_PARSE, "<text>:1:100009: ", "undefined name 'q'");
    /* a 100000-character comment and a 100000-digit number */
    t[0] = '#';
    memset(t + 1, 'z', n);
    strcpy(t + n + 1, "\ninput x: f32[2]\noutput x\n");
    f = scanfuse_parse(t, NULL);
    CHECKF(scanfuse_fusion_status(f) == SCANFUSE_OK, "long comment: %s", scanfuse_fusion_error(f));
    scanfuse_fusion_free(f);
    strcpy(t, "input x: f32[2]\ny = add(x, ");
    len = strlen(t);
    memset(t + len, '7', n);
    strcpy(t + len + n, ")\n");
    CHECK_ERROR(t, SCANFUSE_ERROR_PARSE, "<text>:2:12: ", "out of the range");
    /* ... the same digits as a float: overflows to inf, like strtod */
    strcpy(t + len + n, ".5)\noutput y\n");
    f = scanfuse_parse(t, NULL);
    CHECKF(scanfuse_fusion_status(f) == SCANFUSE_OK, "long float: %s", scanfuse_fusion_error(f));
    scanfuse_fusion_free(f);
    /* a 100000-character line of garbage */
    for (size_t i = 0; i < n; i++) t[i] = (char)(1 + i % 254);
    t[n] = '\0';
    CHECK_ERROR(t, SCANFUSE_ERROR_PARSE, "<text>:1:1: ", "unexpected");
    /* a list with 100000 entries */
    strcpy(t, "input x: f32[2]\ny = reshape(x, [");
    len = strlen(t);
    for (size_t i = 0; i < n / 3; i++) memcpy(t + len + 3 * i, "1, ", 3);
    strcpy(t + len + 3 * (n / 3), "2])\n");
    CHECK_ERROR(t, SCANFUSE_ERROR_PARSE, "<text>:2:", "more than 16 entries");
    free(t);

    /* deep nesting: 100000 nested calls and 100000 brackets are errors, not crashes */
    size_t depth = 100000;
    t = malloc(depth * 5 + 100);
    strcpy(t, "input x: f32[2]\ny = ");
    len = strlen(t);
    for (size_t i = 0; i < depth; i++) memcpy(t + len + 4 * i, "neg(", 4);
    len += 4 * depth;
    t[len++] = 'x';
    memset(t + len, ')', depth);
    strcpy(t + len + depth, "\n");
    CHECK_ERROR(t, SCANFUSE_ERROR_PARSE, "<text>:2:", "nested more than");
    strcpy(t, "input x: f32[2]\ny = reshape(x, ");
    len = strlen(t);
    memset(t + len, '[', depth);
    strcpy(t + len + depth, "\n");
    CHECK_ERROR(t, SCANFUSE_ERROR_PARSE, "<text>:2:17: ", "expected a number");
    /* moderate nesting works */
    strcpy(t, "input x: f32[2]\ny = ");
    len = strlen(t);
    for (size_t i = 0; i < 20; i++) memcpy(t + len + 4 * i, "neg(", 4);
    len += 80;
    t[len++] = 'x';
    memset(t + len, ')', 20);
    strcpy(t + len + 20, "\noutput y\n");
    f = scanfuse_parse(t, NULL);
    CHECKF(scanfuse_fusion_status(f) == SCANFUSE_OK, "20 nested: %s", scanfuse_fusion_error(f));
    CHECK_EQ_INT(f->nnodes, 20);
    scanfuse_fusion_free(f);
    free(t);

    /* many statements */
    sf_buf b = {0};
    sf_buf_puts(&b, "input x: f32[2]\n");
    sf_buf_puts(&b, "v0 = neg(x)\n");
    for (int i = 1; i < 2000; i++) sf_buf_printf(&b, "v%d = add(v%d, %d)\n", i, i - 1, i);
    sf_buf_puts(&b, "output v1999\n");
    char *big = sf_buf_take(&b);
    check_round_trip(big, "2000 statements");
    free(big);
}

/* Random bytes and mutated programs: never a crash; accepted texts round-trip. */
static void test_fuzz(void) {
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 2024);
    static const char alphabet[] = "abxyz_01239.-+e[](),:=#<|> \t\nfinputoaclsmd";
    char buf[512];
    for (int iter = 0; iter < 3000; iter++) {
        int len = (int)sf_test_rng_int(&rng, 0, (int64_t)sizeof buf - 1);
        for (int i = 0; i < len; i++) {
            if (iter % 2) buf[i] = (char)sf_test_rng_int(&rng, 1, 255);
            else buf[i] = alphabet[sf_test_rng_int(&rng, 0, (int64_t)sizeof alphabet - 2)];
        }
        buf[len] = '\0';
        scanfuse_fusion *f = scanfuse_parse(buf, NULL);
        CHECK(f != NULL);
        if (scanfuse_fusion_status(f) == SCANFUSE_OK) free(check_round_trip_fusion(f, "fuzz"));
        else CHECKF(strncmp(scanfuse_fusion_error(f), "<text>:", 7) == 0, "fuzz message: %s",
                    scanfuse_fusion_error(f));
        scanfuse_fusion_free(f);
    }
    /* mutations of valid programs: replace, delete or duplicate a byte */
    int nprog = (int)(sizeof op_programs / sizeof op_programs[0]);
    for (int iter = 0; iter < 3000; iter++) {
        const char *src = op_programs[iter % nprog];
        size_t n = strlen(src);
        char *m = malloc(n + 2);
        memcpy(m, src, n + 1);
        size_t at = (size_t)sf_test_rng_int(&rng, 0, (int64_t)n - 1);
        int kind = (int)sf_test_rng_int(&rng, 0, 2);
        if (kind == 0) {
            m[at] = alphabet[sf_test_rng_int(&rng, 0, (int64_t)sizeof alphabet - 2)];
        } else if (kind == 1) {
            memmove(m + at, m + at + 1, n - at);
        } else {
            memmove(m + at + 1, m + at, n - at + 1);
        }
        scanfuse_fusion *f = scanfuse_parse(m, NULL);
        CHECK(f != NULL);
        if (scanfuse_fusion_status(f) == SCANFUSE_OK) free(check_round_trip_fusion(f, "mutation"));
        else CHECKF(strncmp(scanfuse_fusion_error(f), "<text>:", 7) == 0, "mutation message: %s",
                    scanfuse_fusion_error(f));
        scanfuse_fusion_free(f);
        free(m);
    }
}

/* ---- files ---- */

static void test_files(void) {
    scanfuse_fusion *f = scanfuse_parse_file("/nonexistent/dir/prog.sf");
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_ERROR_IO);
    CHECKF(strcmp(scanfuse_fusion_error(f),
                  "cannot open '/nonexistent/dir/prog.sf': No such file or directory") == 0,
           "%s", scanfuse_fusion_error(f));
    scanfuse_fusion_free(f);
    f = scanfuse_parse_file(SF_SOURCE_DIR "/examples");
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_ERROR_IO);
    scanfuse_fusion_free(f);

    /* every example parses and round-trips (there may be none yet) */
    const char *dirs[] = {SF_SOURCE_DIR "/examples", SF_SOURCE_DIR "/tests/golden"};
    for (int d = 0; d < 2; d++) {
        DIR *dir = opendir(dirs[d]);
        if (!dir) continue;
        struct dirent *e;
        while ((e = readdir(dir)) != NULL) {
            size_t n = strlen(e->d_name);
            if (n < 4 || strcmp(e->d_name + n - 3, ".sf") != 0) continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
            f = scanfuse_parse_file(path);
            CHECKF(scanfuse_fusion_status(f) == SCANFUSE_OK, "%s: %s", path,
                   scanfuse_fusion_error(f));
            if (scanfuse_fusion_status(f) == SCANFUSE_OK) {
                char *p = check_round_trip_fusion(f, path);
                /* a golden file's .expected holds its exact print */
                char exp[1100];
                snprintf(exp, sizeof exp, "%.*s.expected", (int)(strlen(path) - 3), path);
                FILE *fp = fopen(exp, "rb");
                if (fp && p) {
                    char want[65536];
                    size_t got = fread(want, 1, sizeof want - 1, fp);
                    want[got] = '\0';
                    CHECKF(strcmp(want, p) == 0, "%s: print differs from %s:\n%s", path, exp, p);
                }
                if (fp) fclose(fp);
                free(p);
            }
            scanfuse_fusion_free(f);
        }
        closedir(dir);
    }
}

int main(void) {
    test_every_op();
    test_print_form();
    test_dtype_spellings();
    test_layout();
    test_names();
    test_literals();
    test_errors();
    test_limits();
    test_fuzz();
    test_files();
    return sf_test_finish("test_text");
}
