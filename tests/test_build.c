/*
 * test_build.c — the builder's semantics: PyTorch type promotion (weak scalars and
 * 0-d tensors included), shape inference for every op kind, the canonical form of
 * attributes (inferring a node's canonical attributes again reproduces them byte for
 * byte), argument binding and attribute text, and every build-time error with its
 * status and message.
 *
 * Most cases go through the public API (scanfuse_op / scanfuse_op2 with attribute
 * text) and read the result back through the fusion; a few reach sf_infer,
 * sf_bind_args and sf_parse_attr_text directly for inputs the API cannot produce
 * (an invalid dtype enum, a bad value id).
 */
#include "harness.h"
#include "sf.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers ---- */

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define VALS(...) ((const scanfuse_value[]){__VA_ARGS__})

static scanfuse_value input(scanfuse_fusion *f, scanfuse_dtype dt, int ndim, const int64_t *shape) {
    char name[16];
    snprintf(name, sizeof name, "x%d", scanfuse_fusion_num_inputs(f));
    return scanfuse_input(f, name, dt, ndim, shape);
}
#define IN(f, dt, n, ...) input((f), (dt), (n), (n) ? SHAPE(__VA_ARGS__) : NULL)
#define IN0(f, dt) input((f), (dt), 0, NULL)

static void fmt_shape(char *out, size_t len, int n, const int64_t *s) {
    size_t k = (size_t)snprintf(out, len, "[");
    for (int i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(out + k, len - k, "%s%lld", i ? ", " : "", (long long)s[i]);
    if (k < len) snprintf(out + k, len - k, "]");
}

/* The value's dtype and shape ("[3, 4]") are as expected. */
static void expect_at(scanfuse_fusion *f, scanfuse_value v, scanfuse_dtype dt, const char *shape,
                      int line) {
    if (v < 0 || v >= f->nvalues) {
        sf_test_check(false, __FILE__, line, "no value (status %s: %s)",
                      scanfuse_status_string(scanfuse_fusion_status(f)), scanfuse_fusion_error(f));
        return;
    }
    const sf_value *val = &f->values[v];
    char got[128];
    fmt_shape(got, sizeof got, val->ndim, val->shape);
    sf_test_check(val->dtype == dt && strcmp(got, shape) == 0, __FILE__, line,
                  "got %s%s, wanted %s%s", scanfuse_dtype_name(val->dtype), got,
                  scanfuse_dtype_name(dt), shape);
}
#define EXPECT(f, v, dt, shape) expect_at((f), (v), (dt), (shape), __LINE__)

/* The fusion failed with this status and a message containing `sub`; frees it. */
static void expect_err_at(scanfuse_fusion *f, scanfuse_status st, const char *sub, int line) {
    scanfuse_status got = scanfuse_fusion_status(f);
    const char *msg = scanfuse_fusion_error(f);
    sf_test_check(got == st && sf_test_contains(msg, sub), __FILE__, line,
                  "status %s '%s', wanted %s '...%s...'", scanfuse_status_string(got), msg,
                  scanfuse_status_string(st), sub);
    scanfuse_fusion_free(f);
}
#define EXPECT_ERR(f, st, sub) expect_err_at((f), (st), (sub), __LINE__)

static scanfuse_value op1(scanfuse_fusion *f, const char *op, scanfuse_value x, const char *attrs) {
    return scanfuse_op(f, op, &x, 1, attrs);
}
static scanfuse_value op2(scanfuse_fusion *f, const char *op, scanfuse_value x, scanfuse_value y,
                          const char *attrs) {
    scanfuse_value a[2] = {x, y};
    return scanfuse_op(f, op, a, 2, attrs);
}

static bool num_same(const sf_num *a, const sf_num *b) {
    if (a->kind != b->kind || a->i != b->i) return false;
    if (isnan(a->f) || isnan(b->f)) return isnan(a->f) && isnan(b->f);
    return a->f == b->f;
}

static bool attrs_same(const sf_attrs *a, const sf_attrs *b) {
    if (a->dim != b->dim || a->has_dim != b->has_dim || a->nlist != b->nlist ||
        a->has_list != b->has_list)
        return false;
    for (int i = 0; i < SF_MAX_LIST; i++)
        if (a->list[i] != b->list[i]) return false;
    return num_same(&a->start, &b->start) && num_same(&a->end, &b->end) &&
           num_same(&a->step, &b->step) && num_same(&a->value, &b->value) &&
           a->has_start == b->has_start && a->has_end == b->has_end &&
           a->has_step == b->has_step && a->has_value == b->has_value &&
           a->diagonal == b->diagonal && a->dtype == b->dtype && a->exclusive == b->exclusive &&
           a->reverse == b->reverse && a->keepdim == b->keepdim && a->count == b->count &&
           a->has_count == b->has_count && a->largest == b->largest && a->sorted == b->sorted &&
           a->descending == b->descending && a->stable == b->stable && a->reduce == b->reduce;
}

/* Every node of f: inferring its canonical attributes again gives the same attributes
 * (field by field, and byte for byte between two fresh inferences) and the same
 * results. */
static void check_idempotent(const scanfuse_fusion *f) {
    for (int i = 0; i < f->nnodes; i++) {
        const sf_node *n = &f->nodes[i];
        sf_attrs c1, c2;
        sf_value r1[SF_MAX_OUT], r2[SF_MAX_OUT];
        char msg[SF_ERR_LEN] = "";
        scanfuse_status st = sf_infer(f, n->op, n->in, n->nin, &n->a, &c1, r1, msg, sizeof msg);
        CHECKF(st == SCANFUSE_OK, "node %d (%s): re-infer failed: %s", i,
               sf_op_table[n->op].name, msg);
        if (st != SCANFUSE_OK) continue;
        st = sf_infer(f, n->op, n->in, n->nin, &c1, &c2, r2, msg, sizeof msg);
        CHECKF(st == SCANFUSE_OK, "node %d: second re-infer failed: %s", i, msg);
        CHECKF(attrs_same(&c1, &n->a), "node %d (%s): canonical attributes changed", i,
               sf_op_table[n->op].name);
        CHECKF(memcmp(&c1, &c2, sizeof c1) == 0, "node %d (%s): canonical bytes differ", i,
               sf_op_table[n->op].name);
        for (int k = 0; k < n->nout; k++) {
            const sf_value *v = &f->values[n->out[k]];
            bool same = r1[k].dtype == v->dtype && r1[k].ndim == v->ndim && r1[k].weak == v->weak;
            for (int d = 0; same && d < v->ndim; d++) same = r1[k].shape[d] == v->shape[d];
            CHECKF(same, "node %d (%s) result %d differs on re-inference", i,
                   sf_op_table[n->op].name, k);
        }
    }
}

/* ---- type promotion ---- */

static void test_promotion(void) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    scanfuse_value u8 = IN(f, SCANFUSE_UINT8, 1, 3);
    scanfuse_value i8 = IN(f, SCANFUSE_INT8, 1, 3);
    scanfuse_value i32 = IN(f, SCANFUSE_INT32, 1, 3);
    scanfuse_value h = IN(f, SCANFUSE_FLOAT16, 1, 3);
    scanfuse_value bf = IN(f, SCANFUSE_BFLOAT16, 1, 3);
    scanfuse_value b = IN(f, SCANFUSE_BOOL, 1, 3);
    scanfuse_value f64_0d = IN0(f, SCANFUSE_FLOAT64);
    scanfuse_value i64_0d = IN0(f, SCANFUSE_INT64);
    scanfuse_value f32_0d = IN0(f, SCANFUSE_FLOAT32);
    scanfuse_value h_0d = IN0(f, SCANFUSE_FLOAT16);

    EXPECT(f, op2(f, "add", u8, i8, NULL), SCANFUSE_INT16, "[3]");
    EXPECT(f, op2(f, "add", h, bf, NULL), SCANFUSE_FLOAT32, "[3]");
    EXPECT(f, op1(f, "add", i32, "2.5"), SCANFUSE_FLOAT32, "[3]");
    EXPECT(f, op1(f, "add", h, "2.5"), SCANFUSE_FLOAT16, "[3]");
    EXPECT(f, op1(f, "mul", i8, "3"), SCANFUSE_INT8, "[3]");
    EXPECT(f, op1(f, "add", b, "1"), SCANFUSE_INT64, "[3]");
    EXPECT(f, op1(f, "add", b, "1.5"), SCANFUSE_FLOAT32, "[3]");
    EXPECT(f, op1(f, "add", u8, "true"), SCANFUSE_UINT8, "[3]");
    EXPECT(f, op2(f, "add", b, b, NULL), SCANFUSE_BOOL, "[3]");
    /* 0-d tensors: only a higher category matters */
    EXPECT(f, op2(f, "add", i32, f64_0d, NULL), SCANFUSE_FLOAT64, "[3]");
    EXPECT(f, op2(f, "add", f64_0d, i32, NULL), SCANFUSE_FLOAT64, "[3]");
    EXPECT(f, op2(f, "add", i32, i64_0d, NULL), SCANFUSE_INT32, "[3]");
    EXPECT(f, op2(f, "add", h, f32_0d, NULL), SCANFUSE_FLOAT16, "[3]");
    EXPECT(f, op2(f, "add", i32, h_0d, NULL), SCANFUSE_FLOAT16, "[3]");
    EXPECT(f, op2(f, "add", f64_0d, i64_0d, NULL), SCANFUSE_FLOAT64, "[]");
    EXPECT(f, op1(f, "add", i64_0d, "2.5"), SCANFUSE_FLOAT32, "[]");
    EXPECT(f, op1(f, "add", h_0d, "2.5"), SCANFUSE_FLOAT16, "[]");
    /* scalars from the C API */
    scanfuse_value s_i = scanfuse_scalar_int(f, 7);
    scanfuse_value s_f = scanfuse_scalar_float(f, 0.5);
    EXPECT(f, s_i, SCANFUSE_INT64, "[]");
    EXPECT(f, s_f, SCANFUSE_FLOAT32, "[]");
    CHECK(f->values[s_i].weak && f->values[s_f].weak);
    EXPECT(f, op2(f, "add", s_i, s_f, NULL), SCANFUSE_FLOAT32, "[]");
    EXPECT(f, op2(f, "sub", i32, s_f, NULL), SCANFUSE_FLOAT32, "[3]");
    EXPECT(f, op2(f, "sub", h, s_f, NULL), SCANFUSE_FLOAT16, "[3]");
    EXPECT(f, op2(f, "maximum", i8, s_i, NULL), SCANFUSE_INT8, "[3]");
    /* rules */
    EXPECT(f, op2(f, "div", i32, i32, NULL), SCANFUSE_FLOAT32, "[3]");
    EXPECT(f, op1(f, "div", h, "2"), SCANFUSE_FLOAT16, "[3]");
    EXPECT(f, op1(f, "exp", i8, NULL), SCANFUSE_FLOAT32, "[3]");
    EXPECT(f, op1(f, "sqrt", bf, NULL), SCANFUSE_BFLOAT16, "[3]");
    EXPECT(f, op1(f, "isnan", h, NULL), SCANFUSE_BOOL, "[3]");
    EXPECT(f, op2(f, "lt", i32, h, NULL), SCANFUSE_BOOL, "[3]");
    EXPECT(f, op1(f, "neg", i8, NULL), SCANFUSE_INT8, "[3]");
    EXPECT(f, op1(f, "cast", i8, "dtype=torch.bfloat16"), SCANFUSE_BFLOAT16, "[3]");
    EXPECT(f, op1(f, "cast", i8, "f64"), SCANFUSE_FLOAT64, "[3]");
    EXPECT(f, op1(f, "cast", i8, "dtype=<f4"), SCANFUSE_FLOAT32, "[3]");
    {
        scanfuse_value w[3] = {b, i32, s_f};
        EXPECT(f, scanfuse_op(f, "where", w, 3, NULL), SCANFUSE_FLOAT32, "[3]");
        scanfuse_value w2[3] = {b, h, i32};
        EXPECT(f, scanfuse_op(f, "where", w2, 3, NULL), SCANFUSE_FLOAT16, "[3]");
    }
    EXPECT(f, op1(f, "where", b, "1.5, 2"), SCANFUSE_FLOAT32, "[3]");
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_OK);
    check_idempotent(f);

    /* the public introspection sees what inference decided */
    scanfuse_value o = op2(f, "add", u8, i8, NULL);
    scanfuse_status ost = scanfuse_output(f, o, "o");
    CHECK_STATUS(ost, SCANFUSE_OK);
    const char *name = NULL;
    scanfuse_dtype dt = SCANFUSE_DTYPE_NONE;
    int ndim = -1;
    int64_t shape[SCANFUSE_MAX_DIMS];
    CHECK_STATUS(scanfuse_fusion_output_info(f, 0, &name, &dt, &ndim, shape), SCANFUSE_OK);
    CHECK(dt == SCANFUSE_INT16 && ndim == 1 && shape[0] == 3);
    scanfuse_fusion_free(f);

    /* sf_result_type directly: three tiers */
    f = scanfuse_fusion_new();
    int32_t ids[3] = {IN(f, SCANFUSE_INT32, 2, 2, 2), IN0(f, SCANFUSE_FLOAT64),
                      scanfuse_scalar_float(f, 1.0)};
    CHECK_EQ_INT(sf_result_type(f, ids, 3), SCANFUSE_FLOAT64);
    CHECK_EQ_INT(sf_result_type(f, ids + 2, 1), SCANFUSE_FLOAT32);
    int32_t ids2[2] = {ids[0], ids[2]};
    CHECK_EQ_INT(sf_result_type(f, ids2, 2), SCANFUSE_FLOAT32);
    scanfuse_fusion_free(f);
}

/* ---- shapes per op kind ---- */

static void test_pointwise_shapes(void) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    scanfuse_value a = IN(f, SCANFUSE_FLOAT32, 2, 3, 1);
    scanfuse_value b = IN(f, SCANFUSE_FLOAT32, 1, 4);
    scanfuse_value c = IN(f, SCANFUSE_FLOAT32, 3, 2, 1, 5);
    scanfuse_value e = IN(f, SCANFUSE_FLOAT32, 1, 0);
    scanfuse_value one = IN(f, SCANFUSE_FLOAT32, 1, 1);
    EXPECT(f, op2(f, "add", a, b, NULL), SCANFUSE_FLOAT32, "[3, 4]");
    EXPECT(f, op2(f, "mul", c, a, NULL), SCANFUSE_FLOAT32, "[2, 3, 5]");
    EXPECT(f, op2(f, "add", e, one, NULL), SCANFUSE_FLOAT32, "[0]");
    EXPECT(f, op2(f, "add", one, e, NULL), SCANFUSE_FLOAT32, "[0]");
    EXPECT(f, op1(f, "add", c, "1"), SCANFUSE_FLOAT32, "[2, 1, 5]");
    scanfuse_value cond = IN(f, SCANFUSE_BOOL, 3, 2, 1, 1);
    scanfuse_value w[3] = {cond, a, b};
    EXPECT(f, scanfuse_op(f, "where", w, 3, NULL), SCANFUSE_FLOAT32, "[2, 3, 4]");
    scanfuse_fusion_free(f);

    int64_t sh[SF_MAX_DIMS];
    int n = -1;
    CHECK(sf_broadcast_shapes(2, SHAPE(3, 1), 1, SHAPE(4), &n, sh) && n == 2 && sh[0] == 3 &&
          sh[1] == 4);
    CHECK(sf_broadcast_shapes(0, NULL, 0, NULL, &n, sh) && n == 0);
    CHECK(!sf_broadcast_shapes(2, SHAPE(3, 4), 1, SHAPE(5), &n, sh));
    CHECK(!sf_broadcast_shapes(1, SHAPE(0), 1, SHAPE(2), &n, sh));
}

static void test_scans(void) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    scanfuse_value x = IN(f, SCANFUSE_INT32, 2, 2, 3);
    scanfuse_value h = IN(f, SCANFUSE_FLOAT16, 2, 2, 3);
    scanfuse_value b = IN(f, SCANFUSE_BOOL, 1, 5);
    scanfuse_value z = IN0(f, SCANFUSE_FLOAT32);
    scanfuse_value v = op1(f, "cumsum", x, "dim=-1");
    EXPECT(f, v, SCANFUSE_INT64, "[2, 3]");
    CHECK_EQ_INT(f->nodes[f->values[v].producer].a.dim, 1);
    CHECK_EQ_INT(f->nodes[f->values[v].producer].a.dtype, SCANFUSE_INT64);
    EXPECT(f, op1(f, "cumsum", x, "0, dtype=f32"), SCANFUSE_FLOAT32, "[2, 3]");
    EXPECT(f, op1(f, "cumsum", h, "1, exclusive=true, reverse=true"), SCANFUSE_FLOAT16, "[2, 3]");
    v = op1(f, "cumsum", h, "1, none, true");
    CHECK(v >= 0 && f->nodes[f->values[v].producer].a.exclusive);
    EXPECT(f, op1(f, "cumprod", b, "0"), SCANFUSE_INT64, "[5]");
    EXPECT(f, op1(f, "logcumsumexp", h, "dim=0"), SCANFUSE_FLOAT16, "[2, 3]");
    v = op1(f, "cumsum", z, "dim=-1");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[]");
    CHECK_EQ_INT(f->nodes[f->values[v].producer].a.dim, 0);
    EXPECT(f, scanfuse_cumsum(f, x, -2, SCANFUSE_FLOAT64, SCANFUSE_EXCLUSIVE), SCANFUSE_FLOAT64,
           "[2, 3]");
    scanfuse_value out[2] = {-1, -1};
    CHECK_STATUS(scanfuse_op2(f, "cummax", &h, 1, "dim=1", out), SCANFUSE_OK);
    EXPECT(f, out[0], SCANFUSE_FLOAT16, "[2, 3]");
    EXPECT(f, out[1], SCANFUSE_INT64, "[2, 3]");
    CHECK_STATUS(scanfuse_op2(f, "cummin", &b, 1, "-1, reverse=true", out), SCANFUSE_OK);
    EXPECT(f, out[0], SCANFUSE_BOOL, "[5]");
    EXPECT(f, out[1], SCANFUSE_INT64, "[5]");
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_OK);
    check_idempotent(f);
    scanfuse_fusion_free(f);
}

static void expect_list(scanfuse_fusion *f, scanfuse_value v, const char *want, int line) {
    if (v < 0) {
        sf_test_check(false, __FILE__, line, "no value: %s", scanfuse_fusion_error(f));
        return;
    }
    const sf_attrs *a = &f->nodes[f->values[v].producer].a;
    char got[200];
    fmt_shape(got, sizeof got, a->nlist, a->list);
    sf_test_check(a->has_list && strcmp(got, want) == 0, __FILE__, line,
                  "canonical list %s, wanted %s", got, want);
}
#define EXPECT_LIST(f, v, want) expect_list((f), (v), (want), __LINE__)

static void test_reductions(void) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    scanfuse_value x = IN(f, SCANFUSE_FLOAT32, 3, 2, 3, 4);
    scanfuse_value i8 = IN(f, SCANFUSE_INT8, 2, 2, 3);
    scanfuse_value e = IN(f, SCANFUSE_FLOAT32, 2, 0, 3);
    scanfuse_value z = IN0(f, SCANFUSE_FLOAT32);
    scanfuse_value v = op1(f, "sum", x, "dim=[-1, 0]");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[3]");
    EXPECT_LIST(f, v, "[0, 2]");
    v = op1(f, "sum", x, "[2, 0], true");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[1, 3, 1]");
    v = op1(f, "sum", x, NULL);
    EXPECT(f, v, SCANFUSE_FLOAT32, "[]");
    EXPECT_LIST(f, v, "[0, 1, 2]");
    v = op1(f, "sum", x, "dim=[]");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[]");
    EXPECT_LIST(f, v, "[0, 1, 2]");
    v = op1(f, "sum", x, "dim=1, keepdim=true");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[2, 1, 4]");
    EXPECT_LIST(f, v, "[1]");
    EXPECT(f, op1(f, "sum", i8, "1"), SCANFUSE_INT64, "[2]");
    EXPECT(f, op1(f, "prod", i8, "dtype=float64"), SCANFUSE_FLOAT64, "[]");
    EXPECT(f, op1(f, "sum", i8, "dtype=int8"), SCANFUSE_INT8, "[]");
    EXPECT(f, op1(f, "mean", x, "dim=1"), SCANFUSE_FLOAT32, "[2, 4]");
    EXPECT(f, op1(f, "mean", x, "dim=1, dtype=f64"), SCANFUSE_FLOAT64, "[2, 4]");
    EXPECT(f, op1(f, "max", i8, "dim=1"), SCANFUSE_INT8, "[2]");
    EXPECT(f, op1(f, "min", x, "[0, 1], keepdim=true"), SCANFUSE_FLOAT32, "[1, 1, 4]");
    v = op1(f, "argmax", x, NULL);
    EXPECT(f, v, SCANFUSE_INT64, "[]");
    CHECK(!f->nodes[f->values[v].producer].a.has_dim);
    EXPECT(f, op1(f, "argmax", x, "keepdim=true"), SCANFUSE_INT64, "[1, 1, 1]");
    v = op1(f, "argmin", x, "dim=-2");
    EXPECT(f, v, SCANFUSE_INT64, "[2, 4]");
    CHECK_EQ_INT(f->nodes[f->values[v].producer].a.dim, 1);
    EXPECT(f, op1(f, "argmin", x, "1, true"), SCANFUSE_INT64, "[2, 1, 4]");
    /* empty inputs: sum has an identity; max over a non-empty dim of an empty tensor */
    EXPECT(f, op1(f, "sum", e, "0"), SCANFUSE_FLOAT32, "[3]");
    EXPECT(f, op1(f, "mean", e, NULL), SCANFUSE_FLOAT32, "[]");
    EXPECT(f, op1(f, "max", e, "1"), SCANFUSE_FLOAT32, "[0]");
    EXPECT(f, op1(f, "argmax", e, "1"), SCANFUSE_INT64, "[0]");
    /* 0-d */
    v = op1(f, "sum", z, "dim=0");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[]");
    EXPECT_LIST(f, v, "[]");
    EXPECT(f, op1(f, "max", z, "dim=-1, keepdim=true"), SCANFUSE_FLOAT32, "[]");
    EXPECT(f, op1(f, "argmax", z, "dim=0"), SCANFUSE_INT64, "[]");
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_OK);
    check_idempotent(f);
    scanfuse_fusion_free(f);
}

static void test_shape_ops(void) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    scanfuse_value a = IN(f, SCANFUSE_FLOAT32, 2, 3, 1);
    scanfuse_value x = IN(f, SCANFUSE_INT32, 3, 2, 3, 4);
    scanfuse_value r = IN(f, SCANFUSE_FLOAT32, 1, 10);
    scanfuse_value e = IN(f, SCANFUSE_FLOAT32, 2, 0, 3);
    scanfuse_value z = IN0(f, SCANFUSE_FLOAT32);
    scanfuse_value b = IN(f, SCANFUSE_BOOL, 1, 3);
    scanfuse_value v;

    v = op1(f, "expand", a, "[2, 3, 4]");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[2, 3, 4]");
    v = op1(f, "expand", a, "size=[-1, 4]");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[3, 4]");
    EXPECT_LIST(f, v, "[3, 4]");
    EXPECT(f, op1(f, "expand", a, "[2, -1, 0]"), SCANFUSE_FLOAT32, "[2, 3, 0]");
    EXPECT(f, op1(f, "expand", z, "[]"), SCANFUSE_FLOAT32, "[]");

    v = op1(f, "reshape", x, "[-1, 4]");
    EXPECT(f, v, SCANFUSE_INT32, "[6, 4]");
    EXPECT_LIST(f, v, "[6, 4]");
    EXPECT(f, op1(f, "reshape", x, "shape=24"), SCANFUSE_INT32, "[24]");
    EXPECT(f, op1(f, "reshape", e, "[-1]"), SCANFUSE_FLOAT32, "[0]");
    EXPECT(f, op1(f, "reshape", e, "[3, 0, 7]"), SCANFUSE_FLOAT32, "[3, 0, 7]");
    EXPECT(f, op1(f, "reshape", z, "[1, 1]"), SCANFUSE_FLOAT32, "[1, 1]");
    EXPECT(f, op1(f, "reshape", z, "[]"), SCANFUSE_FLOAT32, "[]");

    v = op1(f, "permute", x, "[-1, 0, 1]");
    EXPECT(f, v, SCANFUSE_INT32, "[4, 2, 3]");
    EXPECT_LIST(f, v, "[2, 0, 1]");
    EXPECT(f, op1(f, "permute", z, "[]"), SCANFUSE_FLOAT32, "[]");

    v = op1(f, "slice", r, "0, 2, -1, 3");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[3]");
    {
        const sf_attrs *s = &f->nodes[f->values[v].producer].a;
        CHECK(s->has_start && s->has_end && s->start.i == 2 && s->end.i == 9 && s->step.i == 3);
    }
    EXPECT(f, op1(f, "slice", r, "start=-100, end=100"), SCANFUSE_FLOAT32, "[10]");
    v = op1(f, "slice", r, "start=5, end=2");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[0]");
    {
        const sf_attrs *s = &f->nodes[f->values[v].producer].a;
        CHECK(s->start.i == 5 && s->end.i == 5);
    }
    EXPECT(f, op1(f, "slice", x, "dim=-1, start=1"), SCANFUSE_INT32, "[2, 3, 3]");
    EXPECT(f, op1(f, "slice", x, "1, step=2"), SCANFUSE_INT32, "[2, 2, 4]");
    EXPECT(f, op1(f, "slice", x, NULL), SCANFUSE_INT32, "[2, 3, 4]");
    EXPECT(f, op1(f, "slice", e, "0, 1, 3"), SCANFUSE_FLOAT32, "[0, 3]");

    v = op1(f, "pad", a, "[1, 2]");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[3, 4]");
    {
        const sf_attrs *s = &f->nodes[f->values[v].producer].a;
        CHECK(s->has_value && s->value.kind == SF_NUM_FLOAT && s->value.f == 0.0);
    }
    EXPECT(f, op1(f, "pad", x, "[1, 1, -1, 0]"), SCANFUSE_INT32, "[2, 2, 6]");
    v = op1(f, "pad", x, "pad=[0, 1], value=1.5");
    {
        const sf_attrs *s = &f->nodes[f->values[v].producer].a;
        CHECK(s->value.kind == SF_NUM_INT && s->value.i == 1);
    }
    v = op1(f, "pad", b, "[1, 0], value=2");
    {
        const sf_attrs *s = &f->nodes[f->values[v].producer].a;
        CHECK(s->value.kind == SF_NUM_BOOL && s->value.i == 1);
        EXPECT(f, v, SCANFUSE_BOOL, "[4]");
    }
    EXPECT(f, op1(f, "pad", z, "[]"), SCANFUSE_FLOAT32, "[]");
    EXPECT(f, op1(f, "pad", r, "[-10, 0]"), SCANFUSE_FLOAT32, "[0]");

    v = op1(f, "triu", x, NULL);
    EXPECT(f, v, SCANFUSE_INT32, "[2, 3, 4]");
    v = op1(f, "tril", a, "diagonal=-1");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[3, 1]");
    CHECK_EQ_INT(f->nodes[f->values[v].producer].a.diagonal, -1);
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_OK);
    check_idempotent(f);
    scanfuse_fusion_free(f);
}

static void test_creation(void) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    EXPECT(f, scanfuse_op(f, "full", NULL, 0, "[2, 3], 1.5"), SCANFUSE_FLOAT32, "[2, 3]");
    EXPECT(f, scanfuse_op(f, "full", NULL, 0, "size=[4], fill_value=1"), SCANFUSE_INT64, "[4]");
    EXPECT(f, scanfuse_op(f, "full", NULL, 0, "[], true"), SCANFUSE_BOOL, "[]");
    EXPECT(f, scanfuse_op(f, "full", NULL, 0, "[2, 0], 0, dtype=f16"), SCANFUSE_FLOAT16, "[2, 0]");
    EXPECT(f, scanfuse_op(f, "full", NULL, 0, "3, -inf"), SCANFUSE_FLOAT32, "[3]");
    scanfuse_value v = scanfuse_op(f, "arange", NULL, 0, "5");
    EXPECT(f, v, SCANFUSE_INT64, "[5]");
    {
        const sf_attrs *s = &f->nodes[f->values[v].producer].a;
        CHECK(s->has_start && s->start.kind == SF_NUM_INT && s->start.i == 0);
        CHECK(s->has_end && s->end.i == 5 && s->has_step && s->step.i == 1);
        CHECK_EQ_INT(s->dtype, SCANFUSE_INT64);
    }
    EXPECT(f, scanfuse_op(f, "arange", NULL, 0, "end=5"), SCANFUSE_INT64, "[5]");
    EXPECT(f, scanfuse_op(f, "arange", NULL, 0, "0, 1, 0.25"), SCANFUSE_FLOAT32, "[4]");
    EXPECT(f, scanfuse_op(f, "arange", NULL, 0, "10, 0, -3"), SCANFUSE_INT64, "[4]");
    EXPECT(f, scanfuse_op(f, "arange", NULL, 0, "1, 2.5"), SCANFUSE_FLOAT32, "[2]");
    EXPECT(f, scanfuse_op(f, "arange", NULL, 0, "3, 3"), SCANFUSE_INT64, "[0]");
    EXPECT(f, scanfuse_op(f, "arange", NULL, 0, "0, 10, 3, dtype=float64"), SCANFUSE_FLOAT64, "[4]");
    EXPECT(f, scanfuse_op(f, "arange", NULL, 0, "2.5, dtype=int32"), SCANFUSE_INT32, "[3]");
    EXPECT(f, scanfuse_op(f, "arange", NULL, 0, "-9223372036854775807, 9223372036854775807, "
                                                 "9223372036854775807"),
           SCANFUSE_INT64, "[2]");
    EXPECT(f, scanfuse_op(f, "iota", NULL, 0, "4"), SCANFUSE_INT64, "[4]");
    EXPECT(f, scanfuse_op(f, "iota", NULL, 0, "4, dtype=f32"), SCANFUSE_FLOAT32, "[4]");
    v = scanfuse_op(f, "scalar", NULL, 0, "true");
    EXPECT(f, v, SCANFUSE_BOOL, "[]");
    CHECK(v >= 0 && f->values[v].weak);
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_OK);
    check_idempotent(f);
    scanfuse_fusion_free(f);
}

static void test_matmul(void) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    scanfuse_value m23 = IN(f, SCANFUSE_FLOAT32, 2, 2, 3);
    scanfuse_value m34 = IN(f, SCANFUSE_FLOAT32, 2, 3, 4);
    scanfuse_value v3 = IN(f, SCANFUSE_FLOAT32, 1, 3);
    scanfuse_value b4 = IN(f, SCANFUSE_FLOAT32, 4, 5, 1, 2, 3);
    scanfuse_value b3 = IN(f, SCANFUSE_FLOAT32, 3, 4, 3, 6);
    scanfuse_value c = IN(f, SCANFUSE_FLOAT32, 3, 2, 3, 4);
    scanfuse_value i = IN(f, SCANFUSE_INT32, 2, 2, 3);
    scanfuse_value j = IN(f, SCANFUSE_INT32, 1, 3);
    EXPECT(f, op2(f, "matmul", m23, m34, NULL), SCANFUSE_FLOAT32, "[2, 4]");
    EXPECT(f, op2(f, "matmul", v3, v3, NULL), SCANFUSE_FLOAT32, "[]");
    EXPECT(f, op2(f, "matmul", v3, m34, NULL), SCANFUSE_FLOAT32, "[4]");
    EXPECT(f, op2(f, "matmul", m23, v3, NULL), SCANFUSE_FLOAT32, "[2]");
    EXPECT(f, op2(f, "matmul", b4, b3, NULL), SCANFUSE_FLOAT32, "[5, 4, 2, 6]");
    EXPECT(f, op2(f, "matmul", v3, c, NULL), SCANFUSE_FLOAT32, "[2, 4]");
    EXPECT(f, op2(f, "matmul", c, IN(f, SCANFUSE_FLOAT32, 1, 4), NULL), SCANFUSE_FLOAT32, "[2, 3]");
    EXPECT(f, op2(f, "matmul", i, j, NULL), SCANFUSE_INT32, "[2]");
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_OK);
    check_idempotent(f);
    scanfuse_fusion_free(f);
}

/* ---- index and sort ops ---- */

/* The canonical attributes of the node that made value v. */
static const sf_attrs *attrs_of(const scanfuse_fusion *f, scanfuse_value v) {
    static sf_attrs none;
    if (v < 0 || v >= f->nvalues || f->values[v].producer < 0) return &none;
    return &f->nodes[f->values[v].producer].a;
}

static scanfuse_value op3(scanfuse_fusion *f, const char *op, scanfuse_value x, scanfuse_value y,
                          scanfuse_value z, const char *attrs) {
    scanfuse_value a[3] = {x, y, z};
    return scanfuse_op(f, op, a, 3, attrs);
}

static void test_index_ops(void) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    scanfuse_value x = IN(f, SCANFUSE_FLOAT32, 2, 4, 6);
    scanfuse_value i = IN(f, SCANFUSE_INT64, 2, 4, 3);
    scanfuse_value n = IN(f, SCANFUSE_INT32, 1, 5);
    scanfuse_value s = IN0(f, SCANFUSE_INT64);
    scanfuse_value z = IN0(f, SCANFUSE_FLOAT16);
    scanfuse_value u = IN(f, SCANFUSE_UINT8, 2, 1, 6);
    scanfuse_value one = IN(f, SCANFUSE_INT16, 1, 1);

    scanfuse_value out[2] = {-1, -1};
    CHECK_STATUS(scanfuse_op2(f, "topk", &x, 1, "3", out), SCANFUSE_OK);
    EXPECT(f, out[0], SCANFUSE_FLOAT32, "[4, 3]");
    EXPECT(f, out[1], SCANFUSE_INT64, "[4, 3]");
    const sf_attrs *a = attrs_of(f, out[0]);
    CHECK(a->has_dim && a->dim == 1 && a->has_count && a->count == 3 && a->largest && a->sorted);
    CHECK_STATUS(scanfuse_op2(f, "topk", &x, 1, "k=2, dim=-2, largest=false, sorted=false", out),
                 SCANFUSE_OK);
    EXPECT(f, out[0], SCANFUSE_FLOAT32, "[2, 6]");
    a = attrs_of(f, out[0]);
    CHECK(a->dim == 0 && a->count == 2 && !a->largest && !a->sorted);
    CHECK_STATUS(scanfuse_op2(f, "topk", &z, 1, "1, dim=0", out), SCANFUSE_OK);
    EXPECT(f, out[0], SCANFUSE_FLOAT16, "[]");
    EXPECT(f, out[1], SCANFUSE_INT64, "[]");
    CHECK_STATUS(scanfuse_op2(f, "topk", &x, 1, "k=0", out), SCANFUSE_OK);
    EXPECT(f, out[0], SCANFUSE_FLOAT32, "[4, 0]");

    scanfuse_value v = op1(f, "argsort", x, NULL);
    EXPECT(f, v, SCANFUSE_INT64, "[4, 6]");
    a = attrs_of(f, v);
    CHECK(a->has_dim && a->dim == 1 && !a->descending && !a->stable && !a->has_count);
    v = op1(f, "argsort", n, "0, true, true, 8");
    EXPECT(f, v, SCANFUSE_INT64, "[5]");
    a = attrs_of(f, v);
    CHECK(a->dim == 0 && a->descending && a->stable && a->has_count && a->count == 8);
    EXPECT(f, op1(f, "argsort", z, NULL), SCANFUSE_INT64, "[]");

    EXPECT(f, op1(f, "one_hot", i, "num_classes=7"), SCANFUSE_INT64, "[4, 3, 7]");
    EXPECT(f, op1(f, "one_hot", s, "3"), SCANFUSE_INT64, "[3]");
    EXPECT(f, op1(f, "one_hot", u, "0"), SCANFUSE_INT64, "[1, 6, 0]");
    v = op1(f, "bincount", n, "minlength=4");
    EXPECT(f, v, SCANFUSE_INT64, "[4]");
    CHECK(attrs_of(f, v)->count == 4);

    /* tensors first (the C API's order) or torch's order in the text */
    v = op2(f, "gather", x, i, "dim=1");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[4, 3]");
    CHECK(attrs_of(f, v)->dim == 1);
    EXPECT(f, op2(f, "gather", x, i, "-1"), SCANFUSE_FLOAT32, "[4, 3]");
    EXPECT(f, op2(f, "gather", x, u, "0"), SCANFUSE_FLOAT32, "[1, 6]");
    EXPECT(f, op2(f, "gather", z, s, "0"), SCANFUSE_FLOAT16, "[]");
    v = op2(f, "take_along_dim", x, i, "dim=1");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[4, 3]");
    v = op2(f, "take_along_dim", x, i, NULL);
    EXPECT(f, v, SCANFUSE_FLOAT32, "[12]");
    CHECK(!attrs_of(f, v)->has_dim);
    EXPECT(f, op2(f, "take_along_dim", x, u, "1"), SCANFUSE_FLOAT32, "[4, 6]");
    EXPECT(f, op2(f, "take_along_dim", x, u, "0"), SCANFUSE_FLOAT32, "[1, 6]");
    EXPECT(f, op2(f, "index_select", x, n, "dim=1"), SCANFUSE_FLOAT32, "[4, 5]");
    EXPECT(f, op2(f, "index_select", x, s, "dim=0"), SCANFUSE_FLOAT32, "[1, 6]");
    EXPECT(f, op2(f, "index_select", z, one, "dim=0"), SCANFUSE_FLOAT16, "[]");
    CHECK_STATUS(scanfuse_op2(f, "topk", &x, 1, "3", out), SCANFUSE_OK);
    v = op3(f, "scatter", x, i, out[0], "dim=1");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[4, 6]");
    CHECK(attrs_of(f, v)->reduce == SF_REDUCE_NONE);
    v = op3(f, "scatter", x, i, out[0], "1, reduce=\"add\"");
    CHECK(attrs_of(f, v)->reduce == SF_REDUCE_ADD && attrs_of(f, v)->dim == 1);
    v = op2(f, "scatter", x, i, "src=2, dim=-1, reduce=add");
    EXPECT(f, v, SCANFUSE_FLOAT32, "[4, 6]");
    CHECK(attrs_of(f, v)->reduce == SF_REDUCE_ADD);
    EXPECT(f, op3(f, "scatter", x, u, x, "0"), SCANFUSE_FLOAT32, "[4, 6]");
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_OK);
    check_idempotent(f);
    scanfuse_fusion_free(f);

    /* shape errors that need other inputs than fx() has */
    f = scanfuse_fusion_new();
    x = IN(f, SCANFUSE_FLOAT32, 2, 4, 6);
    scanfuse_value j = IN(f, SCANFUSE_INT64, 2, 5, 3);
    CHECK(op2(f, "gather", x, j, "dim=1") == SCANFUSE_NO_VALUE);
    EXPECT_ERR(f, SCANFUSE_ERROR_SHAPE, "gather: index size 5 exceeds the size 4 of x at dim 0");
    f = scanfuse_fusion_new();
    x = IN(f, SCANFUSE_FLOAT32, 2, 4, 6);
    j = IN(f, SCANFUSE_INT64, 2, 3, 2);
    CHECK(op2(f, "take_along_dim", x, j, "dim=1") == SCANFUSE_NO_VALUE);
    EXPECT_ERR(f, SCANFUSE_ERROR_SHAPE, "take_along_dim: x and indices do not broadcast at dim 0 (sizes 4 and 3)");
    f = scanfuse_fusion_new();
    x = IN(f, SCANFUSE_FLOAT32, 2, 4, 6);
    j = IN(f, SCANFUSE_INT64, 1, 3);
    CHECK(op2(f, "take_along_dim", x, j, "dim=1") == SCANFUSE_NO_VALUE);
    EXPECT_ERR(f, SCANFUSE_ERROR_SHAPE, "take_along_dim: indices has 1 dims, but x has 2 (they must match)");
    f = scanfuse_fusion_new();
    z = IN0(f, SCANFUSE_FLOAT32);
    j = IN(f, SCANFUSE_INT64, 1, 2);
    CHECK(op2(f, "index_select", z, j, "dim=0") == SCANFUSE_NO_VALUE);
    EXPECT_ERR(f, SCANFUSE_ERROR_SHAPE, "index_select: index must have 1 element to select from a 0-d tensor, got 2");
    f = scanfuse_fusion_new();
    x = IN(f, SCANFUSE_FLOAT32, 2, 4, 6);
    j = IN(f, SCANFUSE_INT64, 2, 4, 3);
    scanfuse_value src = IN(f, SCANFUSE_FLOAT32, 2, 4, 2);
    CHECK(op3(f, "scatter", x, j, src, "dim=1") == SCANFUSE_NO_VALUE);
    EXPECT_ERR(f, SCANFUSE_ERROR_SHAPE, "scatter: index size 3 exceeds the size 2 of src at dim 1");
    f = scanfuse_fusion_new();
    x = IN(f, SCANFUSE_FLOAT32, 2, 4, 6);
    j = IN(f, SCANFUSE_INT64, 2, 5, 3);
    CHECK(op2(f, "scatter", x, j, "dim=1, src=1.0") == SCANFUSE_NO_VALUE);
    EXPECT_ERR(f, SCANFUSE_ERROR_SHAPE, "scatter: index size 5 exceeds the size 4 of x at dim 0");
    f = scanfuse_fusion_new();
    x = IN(f, SCANFUSE_INT8, 8, 1, 1, 1, 1, 1, 1, 1, 2);
    CHECK(op1(f, "one_hot", x, "3") == SCANFUSE_NO_VALUE);
    EXPECT_ERR(f, SCANFUSE_ERROR_ARGUMENT, "one_hot: the result would have 9 dims, more than 8");
    f = scanfuse_fusion_new();
    x = IN(f, SCANFUSE_INT64, 1, 5);
    CHECK(op1(f, "one_hot", x, "4611686018427387904") == SCANFUSE_NO_VALUE); /* 5 * 2^62 */
    EXPECT_ERR(f, SCANFUSE_ERROR_MEMORY, "one_hot: size overflows int64");
}

/* Word parameters (reduce=add) in attribute text and binding. */
static void test_words(void) {
    CHECK(sf_is_word_param("reduce") && !sf_is_word_param("dim") && !sf_is_word_param(NULL));
    sf_reduce r = SF_REDUCE_NONE;
    CHECK(sf_reduce_parse("add", &r) && r == SF_REDUCE_ADD);
    CHECK(!sf_reduce_parse("sum", &r) && !sf_reduce_parse(NULL, &r));
    CHECK(strcmp(sf_reduce_name(SF_REDUCE_ADD), "add") == 0 &&
          strcmp(sf_reduce_name(SF_REDUCE_NONE), "none") == 0);
    sf_arg args[4];
    char buf[128], msg[256];
    int n = 0;
    scanfuse_status st = sf_parse_attr_text("reduce=add, reduce=\"add\", reduce='mul', reduce=none",
                                            args, 4, &n, buf, sizeof buf, msg, sizeof msg);
    CHECK(st == SCANFUSE_OK && n == 4);
    if (st == SCANFUSE_OK && n == 4) {
        CHECK(args[0].kind == SF_ARG_STR && strcmp(args[0].str, "add") == 0);
        CHECK(args[1].kind == SF_ARG_STR && strcmp(args[1].str, "add") == 0);
        CHECK(args[2].kind == SF_ARG_STR && strcmp(args[2].str, "mul") == 0);
        CHECK(args[3].kind == SF_ARG_NONE);
    }
    /* only word parameters take words */
    st = sf_parse_attr_text("value=add", args, 4, &n, buf, sizeof buf, msg, sizeof msg);
    CHECK(st == SCANFUSE_ERROR_PARSE && sf_test_contains(msg, "unexpected 'add'"));
    st = sf_parse_attr_text("add", args, 4, &n, buf, sizeof buf, msg, sizeof msg);
    CHECK(st == SCANFUSE_ERROR_PARSE);
    st = sf_parse_attr_text("reduce=averyveryveryveryverylongword", args, 4, &n, buf, sizeof buf,
                            msg, sizeof msg);
    CHECK(st == SCANFUSE_ERROR_PARSE && sf_test_contains(msg, "too long"));

    /* binding: a tensor where a non-tensor parameter comes next fills the next tensor
     * parameter; the skipped parameter takes the next positional argument */
    scanfuse_fusion *f = scanfuse_fusion_new();
    scanfuse_value x = IN(f, SCANFUSE_FLOAT32, 2, 2, 3);
    scanfuse_value i = IN(f, SCANFUSE_INT64, 2, 2, 3);
    memset(args, 0, sizeof args);
    args[0].kind = args[1].kind = SF_ARG_VALUE;
    args[0].value = x;
    args[1].value = i;
    args[2].kind = SF_ARG_INT;
    args[2].num.kind = SF_NUM_INT;
    args[2].num.i = 1;
    int32_t in[SF_MAX_IN];
    int nin = 0, bad = -1;
    sf_attrs at;
    st = sf_bind_args(f, SF_OP_gather, args, 3, in, &nin, &at, msg, sizeof msg, &bad);
    CHECK(st == SCANFUSE_OK && nin == 2 && in[0] == x && in[1] == i && at.has_dim && at.dim == 1);
    /* torch's order binds the same */
    sf_arg t = args[1];
    args[1] = args[2];
    args[2] = t;
    st = sf_bind_args(f, SF_OP_gather, args, 3, in, &nin, &at, msg, sizeof msg, &bad);
    CHECK(st == SCANFUSE_OK && nin == 2 && in[0] == x && in[1] == i && at.dim == 1);
    /* a word where a word is not expected */
    args[2].kind = SF_ARG_STR;
    snprintf(args[2].str, sizeof args[2].str, "add");
    st = sf_bind_args(f, SF_OP_gather, args, 3, in, &nin, &at, msg, sizeof msg, &bad);
    CHECK(st == SCANFUSE_ERROR_ARGUMENT && bad == 2 &&
          sf_test_contains(msg, "argument 'index' must be a tensor, got word 'add'"));
    CHECK_EQ_INT(f->nnodes, 0);
    scanfuse_fusion_free(f);
}

/* ---- signatures, attribute text, binding ---- */

static void test_signatures(void) {
    const sf_signature *s = sf_op_signature(SF_OP_cumsum);
    CHECK(s && s->nparams == 5);
    if (s && s->nparams == 5) {
        CHECK(strcmp(s->params[0].name, "x") == 0 && s->params[0].kind == SF_P_TENSOR &&
              !s->params[0].has_default);
        CHECK(strcmp(s->params[1].name, "dim") == 0 && s->params[1].kind == SF_P_INT);
        CHECK(s->params[2].kind == SF_P_DTYPE && s->params[2].has_default &&
              s->params[2].default_none);
        CHECK(s->params[3].kind == SF_P_BOOL && strcmp(s->params[3].default_text, "false") == 0 &&
              !s->params[3].default_none);
    }
    s = sf_op_signature(SF_OP_slice);
    CHECK(s && s->nparams == 5 && strcmp(s->params[4].default_text, "1") == 0);
    CHECK(sf_op_signature(SF_OP_sum)->params[1].kind == SF_P_INTS);
    CHECK(sf_op_signature(SF_OP_full)->params[1].kind == SF_P_NUM);
    CHECK(sf_op_signature(SF_NUM_OPS) == NULL);
    /* every signature names as many tensors as the op has inputs */
    for (int op = 0; op < SF_NUM_OPS; op++) {
        const sf_signature *sg = sf_op_signature((sf_op)op);
        int nt = 0;
        for (int p = 0; p < sg->nparams; p++) nt += sg->params[p].kind == SF_P_TENSOR;
        CHECKF(nt == sf_op_table[op].nin, "%s: %d tensor params, nin %d", sf_op_table[op].name,
               nt, sf_op_table[op].nin);
    }
}

static void test_attr_text(void) {
    sf_arg args[16];
    char buf[256], msg[256];
    int n = -1;
    scanfuse_status st = sf_parse_attr_text(
        " dim = -1, dtype=torch.float16, exclusive=true, l=[1, -2, ], y=inf, z=-inf, w=nan, "
        "v=-2e-3, u=none, t=<f4, s='|b1', 7, False, [], i8",
        args, 16, &n, buf, sizeof buf, msg, sizeof msg);
    CHECK_STATUS(st, SCANFUSE_OK);
    CHECK_EQ_INT(n, 15);
    if (st == SCANFUSE_OK && n == 15) {
        CHECK(strcmp(args[0].key, "dim") == 0 && args[0].kind == SF_ARG_INT && args[0].num.i == -1);
        CHECK(args[1].kind == SF_ARG_DTYPE && args[1].dtype == SCANFUSE_FLOAT16);
        CHECK(args[2].kind == SF_ARG_BOOL && args[2].num.i == 1);
        CHECK(args[3].kind == SF_ARG_LIST && args[3].nlist == 2 && args[3].list[1] == -2);
        CHECK(args[4].kind == SF_ARG_FLOAT && isinf(args[4].num.f) && args[4].num.f > 0);
        CHECK(args[5].kind == SF_ARG_FLOAT && isinf(args[5].num.f) && args[5].num.f < 0);
        CHECK(args[6].kind == SF_ARG_FLOAT && isnan(args[6].num.f));
        CHECK(args[7].kind == SF_ARG_FLOAT && args[7].num.f == -2e-3);
        CHECK(args[8].kind == SF_ARG_NONE);
        CHECK(args[9].kind == SF_ARG_DTYPE && args[9].dtype == SCANFUSE_FLOAT32);
        CHECK(args[10].kind == SF_ARG_DTYPE && args[10].dtype == SCANFUSE_BOOL);
        CHECK(!args[11].key && args[11].kind == SF_ARG_INT && args[11].num.i == 7);
        CHECK(args[12].kind == SF_ARG_BOOL && args[12].num.i == 0);
        CHECK(args[13].kind == SF_ARG_LIST && args[13].nlist == 0);
        CHECK(args[14].kind == SF_ARG_DTYPE && args[14].dtype == SCANFUSE_INT8);
    }
    st = sf_parse_attr_text("-9223372036854775808, 1.5e300, .5", args, 16, &n, buf, sizeof buf,
                            msg, sizeof msg);
    CHECK(st == SCANFUSE_OK && n == 3 && args[0].num.i == INT64_MIN && args[2].num.f == 0.5);
    st = sf_parse_attr_text("", args, 16, &n, buf, sizeof buf, msg, sizeof msg);
    CHECK(st == SCANFUSE_OK && n == 0);

    static const struct {
        const char *text;
        scanfuse_status st;
        const char *sub;
    } bad[] = {
        {"dim=", SCANFUSE_ERROR_PARSE, "expected a value after 'dim='"},
        {"dim=1 2", SCANFUSE_ERROR_PARSE, "expected ','"},
        {"dim=[1, 2", SCANFUSE_ERROR_PARSE, "never closed"},
        {"dim=[1, 2.5]", SCANFUSE_ERROR_PARSE, "integers only"},
        {"dim=1.5.2", SCANFUSE_ERROR_PARSE, "malformed number '1.5.2'"},
        {"dim=12abc", SCANFUSE_ERROR_PARSE, "malformed number"},
        {"dim=99999999999999999999", SCANFUSE_ERROR_PARSE, "does not fit in int64"},
        {"value=1e999", SCANFUSE_ERROR_PARSE, "out of range"},
        {"value=foo", SCANFUSE_ERROR_PARSE, "unexpected 'foo'"},
        {"dtype=foo", SCANFUSE_ERROR_DTYPE, "unknown dtype 'foo'"},
        {"dtype=complex64", SCANFUSE_ERROR_DTYPE, "complex"},
        {"dtype='<c8'", SCANFUSE_ERROR_DTYPE, "complex"},
        {"dim=1,,", SCANFUSE_ERROR_PARSE, "expected a value"},
        {"dim=@", SCANFUSE_ERROR_PARSE, "unexpected character '@'"},
        {"[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]", SCANFUSE_ERROR_PARSE, "at most 16"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        msg[0] = '\0';
        st = sf_parse_attr_text(bad[i].text, args, 16, &n, buf, sizeof buf, msg, sizeof msg);
        CHECKF(st == bad[i].st && sf_test_contains(msg, bad[i].sub),
               "'%s': status %s '%s', wanted %s '%s'", bad[i].text, scanfuse_status_string(st),
               msg, scanfuse_status_string(bad[i].st), bad[i].sub);
    }
    st = sf_parse_attr_text("1, 2, 3", args, 2, &n, buf, sizeof buf, msg, sizeof msg);
    CHECK(st != SCANFUSE_OK && sf_test_contains(msg, "too many arguments"));
    st = sf_parse_attr_text("averyveryverylongkey=1", args, 2, &n, buf, 8, msg, sizeof msg);
    CHECK(st != SCANFUSE_OK);
}

static void test_bind(void) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    scanfuse_value x = IN(f, SCANFUSE_FLOAT32, 2, 2, 3);
    sf_arg args[4];
    memset(args, 0, sizeof args);
    args[0].kind = SF_ARG_VALUE;
    args[0].value = x;
    args[1].kind = SF_ARG_INT;
    args[1].num.kind = SF_NUM_INT;
    args[1].num.i = 1;
    args[2].key = "reverse";
    args[2].kind = SF_ARG_BOOL;
    args[2].num.kind = SF_NUM_BOOL;
    args[2].num.i = 1;
    int32_t in[SF_MAX_IN];
    int nin = -1, bad = 99;
    sf_attrs a;
    char msg[256] = "";
    scanfuse_status st = sf_bind_args(f, SF_OP_cumsum, args, 3, in, &nin, &a, msg, sizeof msg, &bad);
    CHECK_STATUS(st, SCANFUSE_OK);
    CHECK(nin == 1 && in[0] == x && a.has_dim && a.dim == 1 && a.reverse && !a.exclusive &&
          a.dtype == SCANFUSE_DTYPE_NONE && bad == -1);
    /* defaults reach the attributes */
    st = sf_bind_args(f, SF_OP_slice, args, 1, in, &nin, &a, msg, sizeof msg, &bad);
    CHECK(st == SCANFUSE_OK && a.has_dim && a.dim == 0 && a.has_step && a.step.i == 1 &&
          !a.has_start && !a.has_end);
    /* the offending argument's index */
    args[2].key = "foo";
    st = sf_bind_args(f, SF_OP_cumsum, args, 3, in, &nin, &a, msg, sizeof msg, &bad);
    CHECK(st == SCANFUSE_ERROR_ARGUMENT && bad == 2 &&
          sf_test_contains(msg, "cumsum: unexpected argument 'foo'"));
    CHECK_EQ_INT(f->nnodes, 0);
    scanfuse_fusion_free(f);
}

/* ---- errors ---- */

/* A fresh fusion with inputs x0: f32[2, 3], x1: i32[2, 3], x2: bool[2, 3], x3: f32[],
 * x4: f32[0, 3], x5: f32[5]. */
static scanfuse_fusion *fx(scanfuse_value *v) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    v[0] = IN(f, SCANFUSE_FLOAT32, 2, 2, 3);
    v[1] = IN(f, SCANFUSE_INT32, 2, 2, 3);
    v[2] = IN(f, SCANFUSE_BOOL, 2, 2, 3);
    v[3] = IN0(f, SCANFUSE_FLOAT32);
    v[4] = IN(f, SCANFUSE_FLOAT32, 2, 0, 3);
    v[5] = IN(f, SCANFUSE_FLOAT32, 1, 5);
    return f;
}

/* One op call on a fresh fx() fusion that must fail: tensor args by index into fx's
 * inputs (-1 ends the list). */
static void err_case(const char *op, int t0, int t1, int t2, const char *attrs, scanfuse_status st,
                     const char *sub, int line) {
    scanfuse_value v[6];
    scanfuse_fusion *f = fx(v);
    int nodes = f->nnodes;
    scanfuse_value args[3];
    int n = 0;
    if (t0 >= 0) args[n++] = v[t0];
    if (t1 >= 0) args[n++] = v[t1];
    if (t2 >= 0) args[n++] = v[t2];
    const sf_op_info *info = &sf_op_table[sf_op_lookup(op)];
    scanfuse_value r = SCANFUSE_NO_VALUE;
    if (info->nout == 2) {
        scanfuse_value out[2];
        scanfuse_op2(f, op, args, n, attrs, out);
        r = out[0];
    } else {
        r = scanfuse_op(f, op, args, n, attrs);
    }
    sf_test_check(r == SCANFUSE_NO_VALUE, __FILE__, line, "%s(%s) did not fail", op,
                  attrs ? attrs : "");
    /* a failed op appends nothing but the weak scalars its arguments made */
    bool only_scalars = true;
    for (int i = nodes; i < f->nnodes; i++) only_scalars &= f->nodes[i].op == SF_OP_scalar;
    sf_test_check(only_scalars, __FILE__, line, "%s(%s): nodes appended", op, attrs ? attrs : "");
    expect_err_at(f, st, sub, line);
}
#define ERR(op, t0, t1, t2, attrs, st, sub) err_case((op), (t0), (t1), (t2), (attrs), (st), (sub), __LINE__)
#define A SCANFUSE_ERROR_ARGUMENT
#define D SCANFUSE_ERROR_DTYPE
#define S SCANFUSE_ERROR_SHAPE
#define M SCANFUSE_ERROR_MEMORY
#define P SCANFUSE_ERROR_PARSE

static void test_errors(void) {
    /* dims */
    ERR("cumsum", 0, -1, -1, "dim=3", A, "cumsum: dim 3 out of range for a 2-d tensor");
    ERR("cumsum", 0, -1, -1, "dim=-3", A, "cumsum: dim -3 out of range for a 2-d tensor");
    ERR("cumsum", 3, -1, -1, "dim=1", A, "cumsum: dim 1 out of range for a 0-d tensor");
    ERR("cumsum", 3, -1, -1, "dim=-2", A, "dim -2 out of range for a 0-d tensor");
    ERR("cummax", 0, -1, -1, "dim=2", A, "cummax: dim 2 out of range");
    ERR("sum", 0, -1, -1, "dim=[0, 2]", A, "sum: dim 2 out of range for a 2-d tensor");
    ERR("sum", 0, -1, -1, "dim=[1, -1]", A, "sum: dim 1 appears more than once");
    ERR("argmax", 0, -1, -1, "dim=5", A, "argmax: dim 5 out of range");
    /* dtypes */
    ERR("logcumsumexp", 1, -1, -1, "dim=0", D, "logcumsumexp: expected a floating dtype, got int32");
    ERR("silu", 1, -1, -1, NULL, D, "silu: expected a floating dtype, got int32");
    ERR("mean", 1, -1, -1, NULL, D, "mean: expected a floating dtype, got int32");
    ERR("mean", 2, -1, -1, "dtype=f32", D, "mean: expected a floating dtype, got bool");
    ERR("mean", 0, -1, -1, "dtype=int32", D, "mean: argument 'dtype' must be a floating dtype, got int32");
    ERR("sub", 2, 2, -1, NULL, D, "sub: argument 'x' has dtype bool");
    ERR("sub", 0, 2, -1, NULL, D, "sub: argument 'other' has dtype bool");
    ERR("sub", 1, -1, -1, "true", D, "sub: argument 'other' has dtype bool");
    ERR("neg", 2, -1, -1, NULL, D, "neg: argument 'x' has dtype bool");
    ERR("matmul", 2, 2, -1, NULL, D, "matmul: argument 'x' has dtype bool");
    ERR("where", 0, 0, 0, NULL, D, "where: argument 'condition' must have dtype bool, got float32");
    ERR("cast", 0, -1, -1, NULL, A, "cast: missing required argument 'dtype'");
    ERR("cast", 0, -1, -1, "dtype=complex64", D, "cast: complex dtypes are not supported");
    ERR("cast", 0, -1, -1, "dtype=float128", D, "unknown dtype 'float128'");
    ERR("arange", -1, -1, -1, "5, dtype=bool", D, "arange: dtype bool is not supported");
    /* broadcasting and shapes */
    ERR("add", 0, 5, -1, NULL, S, "add: shapes [2, 3] and [5] do not broadcast");
    ERR("where", 2, 0, 5, NULL, S, "where: shapes [2, 3] and [5] do not broadcast");
    ERR("reshape", 0, -1, -1, "[4, 2]", S, "reshape: shape [4, 2] is invalid for an input of 6 elements");
    ERR("reshape", 0, -1, -1, "[-1, -1]", A, "reshape: only one dim may be -1");
    ERR("reshape", 0, -1, -1, "[-1, 4]", S, "reshape: shape [-1, 4] is invalid for an input of 6");
    ERR("reshape", 4, -1, -1, "[0, -1]", A, "reshape: cannot infer the -1");
    ERR("reshape", 0, -1, -1, "[-2, -3]", A, "reshape: negative size -2");
    ERR("reshape", 3, -1, -1, "[1, 1, 1, 1, 1, 1, 1, 1, 1]", A, "more than 8");
    ERR("expand", 0, -1, -1, "[2, 5]", S, "expand: cannot expand dim 1 of size 3 to size 5");
    ERR("expand", 0, -1, -1, "[3]", A, "expand: size [3] has fewer dims than the 2-d input");
    ERR("expand", 0, -1, -1, "[-1, 2, 3]", A, "expand: size -1 is not allowed for the new leading dim 0");
    ERR("expand", 0, -1, -1, "[2, -2]", A, "expand: negative size -2");
    ERR("permute", 0, -1, -1, "[0, 0]", A, "permute: dims [0, 0] is not a permutation");
    ERR("permute", 0, -1, -1, "[0]", A, "permute: dims [0] has 1 entries, but the input is a 2-d tensor");
    ERR("permute", 0, -1, -1, "[0, 2]", A, "permute: dim 2 out of range");
    ERR("slice", 0, -1, -1, "step=0", A, "slice: step must be positive, got 0");
    ERR("slice", 0, -1, -1, "1, 0, 3, -1", A, "slice: step must be positive, got -1");
    ERR("slice", 3, -1, -1, NULL, A, "slice: cannot slice a 0-d tensor");
    ERR("slice", 0, -1, -1, "dim=2", A, "slice: dim 2 out of range");
    ERR("pad", 0, -1, -1, "[1, 2, 3]", A, "pad: pad [1, 2, 3] has odd length 3");
    ERR("pad", 5, -1, -1, "[1, 1, 1, 1]", A, "pad: pad [1, 1, 1, 1] of length 4 is too long for a 1-d tensor");
    ERR("pad", 0, -1, -1, "[-2, -2]", S, "pad: pad [-2, -2] makes dim 1 of size 3 negative (-1)");
    ERR("pad", 0, -1, -1, "[9223372036854775807, 0]", M, "size overflows");
    ERR("triu", 5, -1, -1, NULL, A, "triu: expected a tensor with at least 2 dims, got a 1-d tensor");
    ERR("tril", 3, -1, -1, NULL, A, "tril: expected a tensor with at least 2 dims, got a 0-d tensor");
    ERR("max", 4, -1, -1, "dim=0", S, "max: cannot reduce dim 0 of size 0");
    ERR("min", 4, -1, -1, NULL, S, "min: cannot reduce dim 0 of size 0");
    ERR("argmax", 4, -1, -1, NULL, S, "argmax: cannot reduce an empty tensor");
    ERR("argmin", 4, -1, -1, "dim=0", S, "argmin: cannot reduce dim 0 of size 0");
    ERR("matmul", 0, 0, -1, NULL, S, "matmul: shapes [2, 3] and [2, 3] cannot be multiplied (3 != 2)");
    ERR("matmul", 0, 1, -1, NULL, D, "matmul: expected both arguments to have the same dtype, got float32 and int32");
    ERR("matmul", 3, 0, -1, NULL, S, "matmul: both arguments need at least 1 dim");
    /* creation */
    ERR("arange", -1, -1, -1, "0, 5, 0", A, "arange: step must be nonzero");
    ERR("arange", -1, -1, -1, "0.0, 5, 0.0", A, "arange: step must be nonzero");
    ERR("arange", -1, -1, -1, "5, 0", A, "arange: step 1 is inconsistent with start 5 and end 0");
    ERR("arange", -1, -1, -1, "0, 5, -1", A, "arange: step -1 is inconsistent with start 0 and end 5");
    ERR("arange", -1, -1, -1, "0, nan", A, "arange: unsupported range 0 to nan");
    ERR("arange", -1, -1, -1, "-9223372036854775807, 9223372036854775807", M, "arange: size overflows");
    ERR("arange", -1, -1, -1, "0, 1e30, 1e-30", M, "arange: size overflows");
    ERR("iota", -1, -1, -1, "-3", A, "iota: step 1 is inconsistent with start 0 and end -3");
    ERR("full", -1, -1, -1, "[2, -1], 0", A, "full: negative size -1 in size [2, -1]");
    ERR("full", -1, -1, -1, "[4294967296, 4294967296], 0", M, "full: size overflows");
    ERR("full", -1, -1, -1, "[1, 1, 1, 1, 1, 1, 1, 1, 1], 0", A, "more than 8");
    ERR("expand", 0, -1, -1, "[4294967296, 4294967296, 2, 3]", M, "expand: size overflows");
    /* binding */
    ERR("cumsum", 0, -1, -1, "dim=1, foo=2", A, "cumsum: unexpected argument 'foo'");
    ERR("cumsum", 0, -1, -1, "1, dim=1", A, "cumsum: argument 'dim' given twice");
    ERR("cumsum", 0, -1, -1, "dim=1, dim=0", A, "cumsum: argument 'dim' given twice");
    ERR("cumsum", 0, -1, -1, NULL, A, "cumsum: missing required argument 'dim'");
    ERR("cumsum", 0, -1, -1, "dim=1.5", A, "cumsum: argument 'dim' must be an int, got float 1.5");
    ERR("cumsum", 0, -1, -1, "dim=true", A, "cumsum: argument 'dim' must be an int, got bool true");
    ERR("cumsum", 0, -1, -1, "dim=none", A, "cumsum: argument 'dim' must be an int, got none");
    ERR("cumsum", 0, -1, -1, "0, f32, 1", A, "cumsum: argument 'exclusive' must be a bool, got int 1");
    ERR("cumsum", 0, -1, -1, "dtype=1", A, "cumsum: argument 'dtype' must be a dtype, got int 1");
    ERR("cumsum", 0, -1, -1, "dim=0, 1", A, "cumsum: positional argument follows keyword argument");
    ERR("add", 0, 0, -1, "3", A, "add: too many positional arguments");
    ERR("add", 0, -1, -1, "[1, 2]", A, "add: argument 'other' must be a tensor, got list [1, 2]");
    ERR("add", 0, -1, -1, "f16", A, "add: argument 'other' must be a tensor, got dtype float16");
    ERR("add", 0, -1, -1, NULL, A, "add: missing required argument 'other'");
    ERR("sum", 0, -1, -1, "dim=1.0", A, "sum: argument 'dim' must be an int or a list of ints, got float 1");
    ERR("full", -1, -1, -1, "[2], [1]", A, "full: argument 'fill_value' must be a number, got list [1]");
    ERR("scalar", -1, -1, -1, NULL, A, "scalar: missing required argument 'value'");
    /* index and sort ops */
    ERR("topk", 0, -1, -1, "k=4", A, "topk: k 4 out of range for dim 1 of size 3");
    ERR("topk", 0, -1, -1, "k=-1", A, "topk: k -1 out of range for dim 1");
    ERR("topk", 0, -1, -1, "2, dim=2", A, "topk: dim 2 out of range for a 2-d tensor");
    ERR("topk", 3, -1, -1, "k=2", A, "topk: k 2 out of range for a 0-d tensor (k must be 1)");
    ERR("topk", 4, -1, -1, "k=1, dim=0", A, "topk: k 1 out of range for dim 0 of size 0");
    ERR("topk", 2, -1, -1, "k=1", D, "topk: argument 'x' has dtype bool");
    ERR("topk", 0, -1, -1, NULL, A, "topk: missing required argument 'k'");
    ERR("topk", 0, -1, -1, "k=1.5", A, "topk: argument 'k' must be an int, got float 1.5");
    ERR("argsort", 0, -1, -1, "range=3", D, "argsort: argument 'range' needs integer keys, got float32");
    ERR("argsort", 1, -1, -1, "range=0", A, "argsort: range must be at least 1, got 0");
    ERR("argsort", 1, -1, -1, "dim=-3", A, "argsort: dim -3 out of range for a 2-d tensor");
    ERR("argsort", 1, -1, -1, "descending=1", A, "argsort: argument 'descending' must be a bool");
    ERR("one_hot", 0, -1, -1, "3", D, "one_hot: argument 'x' must have an integer dtype, got float32");
    ERR("one_hot", 2, -1, -1, "3", D, "one_hot: argument 'x' must have an integer dtype, got bool");
    ERR("one_hot", 1, -1, -1, "-1", A, "one_hot: num_classes must be >= 0, got -1");
    ERR("one_hot", 1, -1, -1, NULL, A, "one_hot: missing required argument 'num_classes'");
    ERR("bincount", 1, -1, -1, "4", S, "bincount: expected a 1-d tensor, got a 2-d tensor");
    ERR("bincount", 1, -1, -1, "minlength=-2", A, "bincount: minlength must be >= 0, got -2");
    ERR("bincount", 5, -1, -1, "4", D, "bincount: argument 'x' must have an integer dtype");
    ERR("gather", 0, 1, -1, "dim=2", A, "gather: dim 2 out of range for a 2-d tensor");
    ERR("gather", 0, 0, -1, "dim=1", D, "gather: argument 'index' must have an integer dtype, got float32");
    ERR("gather", 0, 2, -1, "dim=1", D, "gather: argument 'index' must have an integer dtype, got bool");
    ERR("gather", 5, 1, -1, "dim=0", S, "gather: index has 2 dims, but x has 1 (they must match)");
    ERR("gather", 0, 1, -1, NULL, A, "gather: missing required argument 'dim'");
    ERR("gather", 0, 1, -1, "1, 2", A, "gather: too many positional arguments");
    ERR("gather", 0, -1, -1, "1", A, "gather: missing required argument 'index'");
    ERR("index_select", 0, 1, -1, "dim=0", S, "index_select: index must be 1-d or 0-d, got a 2-d tensor");
    ERR("index_select", 0, 5, -1, "dim=0", D, "index_select: argument 'index' must have an integer dtype");
    ERR("take_along_dim", 0, 0, -1, NULL, D, "take_along_dim: argument 'indices' must have an integer dtype");
    ERR("take_along_dim", 0, 1, -1, "dim=-3", A, "take_along_dim: dim -3 out of range");
    ERR("scatter", 0, 1, 1, "dim=0", D, "scatter: src has dtype int32, but x has float32 (they must match)");
    ERR("scatter", 0, 1, 5, "dim=0", S, "scatter: src has 1 dims, but x has 2 (they must match)");
    ERR("scatter", 0, 1, 0, "dim=0, reduce=mul", A, "scatter: argument 'reduce' must be none or add, got 'mul'");
    ERR("scatter", 0, 1, 0, "dim=0, reduce=1", A, "scatter: argument 'reduce' must be a word, got int 1");
    ERR("scatter", 0, 1, 0, "0, reduce=add, reduce=add", A, "scatter: argument 'reduce' given twice");
    ERR("scatter", 0, 0, 0, "dim=0", D, "scatter: argument 'index' must have an integer dtype");
    ERR("scatter", 5, 1, 0, "dim=0", S, "scatter: index has 2 dims, but x has 1 (they must match)");
    /* attribute text, prefixed by the op */
    ERR("cumsum", 0, -1, -1, "dim=", P, "cumsum: column 5: expected a value after 'dim='");
    ERR("cumsum", 0, -1, -1, "dim=1 exclusive", P, "expected ','");

    /* the C API reports through the same inference */
    scanfuse_value v[6];
    scanfuse_fusion *f = fx(v);
    CHECK(scanfuse_cumsum(f, v[0], 2, SCANFUSE_DTYPE_NONE, 0) == SCANFUSE_NO_VALUE);
    EXPECT_ERR(f, A, "cumsum: dim 2 out of range for a 2-d tensor");
    f = fx(v);
    CHECK(scanfuse_logcumsumexp(f, v[1], 0, 0) == SCANFUSE_NO_VALUE);
    EXPECT_ERR(f, D, "logcumsumexp: expected a floating dtype, got int32");
    f = fx(v);
    {
        scanfuse_value vi, ix;
        CHECK_STATUS(scanfuse_cummax(f, v[3], 1, 0, &vi, &ix), A);
    }
    EXPECT_ERR(f, A, "cummax: dim 1 out of range for a 0-d tensor");

    /* the first error stays; later calls do nothing */
    f = fx(v);
    op1(f, "cumsum", v[0], "dim=7");
    CHECK(op1(f, "neg", v[0], NULL) == SCANFUSE_NO_VALUE);
    EXPECT_ERR(f, A, "dim 7");
}

/* Inputs the API cannot produce: sf_emit/sf_infer directly. */
static void test_internal_errors(void) {
    scanfuse_value v[6];
    scanfuse_fusion *f = fx(v);
    sf_attrs a, canon;
    sf_value res[SF_MAX_OUT];
    char msg[SF_ERR_LEN];
    int32_t in[3] = {v[0], v[1], 99};

    sf_attrs_init(&a);
    a.dim = 0;
    a.has_dim = true;
    a.dtype = (scanfuse_dtype)42;
    res[0].dtype = SCANFUSE_INT8; /* must survive a failure */
    CHECK_STATUS(sf_infer(f, SF_OP_cumsum, in, 1, &a, &canon, res, msg, sizeof msg), D);
    CHECKF(sf_test_contains(msg, "cumsum: invalid dtype 42 for argument 'dtype'"), "%s", msg);
    CHECK_EQ_INT(res[0].dtype, SCANFUSE_INT8);

    sf_attrs_init(&a);
    CHECK_STATUS(sf_infer(f, SF_OP_add, in + 1, 2, &a, &canon, res, msg, sizeof msg), A);
    CHECKF(sf_test_contains(msg, "add: argument 'other' is not a value of this fusion (id 99)"),
           "%s", msg);
    int32_t neg[1] = {-1};
    CHECK_STATUS(sf_infer(f, SF_OP_neg, neg, 1, &a, &canon, res, msg, sizeof msg), A);
    CHECK_STATUS(sf_infer(f, SF_OP_add, in, 1, &a, &canon, res, msg, sizeof msg), A);
    CHECKF(sf_test_contains(msg, "add: expected 2 tensor arguments, got 1"), "%s", msg);
    CHECK_STATUS(sf_infer(f, SF_OP_neg, in, 1, NULL, &canon, res, msg, sizeof msg), SCANFUSE_OK);

    /* slice bounds must be ints; a list length out of range is rejected, not read */
    sf_attrs_init(&a);
    a.has_start = true;
    a.start.kind = SF_NUM_FLOAT;
    a.start.f = 1.5;
    CHECK_STATUS(sf_infer(f, SF_OP_slice, in, 1, &a, &canon, res, msg, sizeof msg), A);
    CHECKF(sf_test_contains(msg, "slice: argument 'start' must be an int, got float 1.5"), "%s",
           msg);
    sf_attrs_init(&a);
    a.nlist = 1000;
    a.has_list = true;
    CHECK_STATUS(sf_infer(f, SF_OP_reshape, in, 1, &a, &canon, res, msg, sizeof msg), A);
    a.nlist = -3;
    CHECK_STATUS(sf_infer(f, SF_OP_sum, in, 1, &a, &canon, res, msg, sizeof msg), A);

    /* broadcasting that overflows the element count */
    scanfuse_value big1 = IN(f, SCANFUSE_FLOAT32, 2, (int64_t)1 << 40, 1);
    scanfuse_value big2 = IN(f, SCANFUSE_FLOAT32, 2, 1, (int64_t)1 << 40);
    CHECK(op2(f, "add", big1, big2, NULL) == SCANFUSE_NO_VALUE);
    EXPECT_ERR(f, M, "add: size overflows int64");

    /* sf_emit: a canonical node can be emitted again from its own attributes */
    f = fx(v);
    scanfuse_value s = op1(f, "slice", v[0], "1, -2, 100");
    CHECK(s >= 0);
    if (s >= 0) {
        sf_node n = f->nodes[f->values[s].producer];
        int32_t out[SF_MAX_OUT];
        CHECK_STATUS(sf_emit(f, n.op, n.in, n.nin, &n.a, out), SCANFUSE_OK);
        EXPECT(f, out[0], SCANFUSE_FLOAT32, "[2, 2]");
    }
    scanfuse_fusion_free(f);
}

/* Weak scalars created while binding become scalar nodes ahead of the op. */
static void test_weak_scalar_nodes(void) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    scanfuse_value x = IN(f, SCANFUSE_FLOAT16, 1, 4);
    scanfuse_value y = op1(f, "mul", x, "other=-0.5");
    EXPECT(f, y, SCANFUSE_FLOAT16, "[4]");
    CHECK_EQ_INT(f->nnodes, 2);
    if (f->nnodes == 2) {
        CHECK(f->nodes[0].op == SF_OP_scalar && f->nodes[0].a.value.kind == SF_NUM_FLOAT &&
              f->nodes[0].a.value.f == -0.5);
        CHECK(f->values[f->nodes[0].out[0]].weak);
        CHECK(f->nodes[1].in[1] == f->nodes[0].out[0]);
    }
    /* a rejected call makes no scalar */
    int before = f->nnodes;
    scanfuse_op(f, "add", &x, 1, "2, 3");
    CHECK_EQ_INT(f->nnodes, before);
    scanfuse_fusion_free(f);
}

/* Random attribute text and random attributes, bound and inferred against every op:
 * nothing may crash or read out of bounds (run under the sanitizer build), every
 * failure must carry a message, and every success must be canonical (idempotent). */
static void test_fuzz(void) {
    static const char *const pieces[] = {
        "dim", "=", "-1", "0", "2", "9", ",", " ", "[", "]", "1.5", "-inf", "nan", "true",
        "none", "f32", "int8", "<f4", "'|b1'", "dtype", "keepdim", "size", "step", "start",
        "end", "value", "pad", "-9223372036854775808", "1e400", "foo", "@", "exclusive",
        "fill_value", "diagonal", "shape", "dims", "4294967296", "-2", "3"};
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 12345);
    scanfuse_value v[6];
    scanfuse_fusion *f = fx(v);
    int ok_count = 0;
    for (int iter = 0; iter < 20000; iter++) {
        char text[256];
        size_t len = 0;
        int npieces = (int)sf_test_rng_int(&rng, 0, 12);
        text[0] = '\0';
        for (int i = 0; i < npieces; i++) {
            const char *pc = pieces[sf_test_rng_int(&rng, 0, (int64_t)(sizeof pieces / sizeof pieces[0]) - 1)];
            size_t pl = strlen(pc);
            if (len + pl + 1 >= sizeof text) break;
            memcpy(text + len, pc, pl + 1);
            len += pl;
        }
        sf_op op = (sf_op)sf_test_rng_int(&rng, 0, SF_NUM_OPS - 1);
        sf_arg args[16];
        int n = 0;
        char buf[256], msg[SF_ERR_LEN] = "";
        int nt = sf_op_table[op].nin;
        for (int i = 0; i < nt; i++) {
            memset(&args[n], 0, sizeof args[n]);
            args[n].kind = SF_ARG_VALUE;
            args[n].value = v[sf_test_rng_int(&rng, 0, 5)];
            n++;
        }
        int more = 0;
        scanfuse_status st = sf_parse_attr_text(text, args + n, 16 - n, &more, buf, sizeof buf,
                                                msg, sizeof msg);
        if (st != SCANFUSE_OK) {
            CHECKF(msg[0] != '\0', "'%s': failed without a message", text);
            continue;
        }
        n += more;
        int32_t in[SF_MAX_IN];
        int nin = 0;
        sf_attrs a;
        st = sf_bind_args(f, op, args, n, in, &nin, &a, msg, sizeof msg, NULL);
        if (st != SCANFUSE_OK) {
            CHECKF(msg[0] != '\0', "%s('%s'): bind failed without a message",
                   sf_op_table[op].name, text);
            if (f->status != SCANFUSE_OK) {
                scanfuse_fusion_free(f);
                f = fx(v);
            }
            continue;
        }
        sf_attrs c1, c2;
        sf_value r1[SF_MAX_OUT], r2[SF_MAX_OUT];
        msg[0] = '\0';
        st = sf_infer(f, op, in, nin, &a, &c1, r1, msg, sizeof msg);
        if (st != SCANFUSE_OK) {
            CHECKF(sf_test_contains(msg, sf_op_table[op].name), "%s('%s'): message '%s'",
                   sf_op_table[op].name, text, msg);
            continue;
        }
        ok_count++;
        st = sf_infer(f, op, in, nin, &c1, &c2, r2, msg, sizeof msg);
        CHECKF(st == SCANFUSE_OK && memcmp(&c1, &c2, sizeof c1) == 0,
               "%s('%s'): not idempotent (%s)", sf_op_table[op].name, text, msg);
        for (int k = 0; st == SCANFUSE_OK && k < sf_op_table[op].nout; k++) {
            bool same = r1[k].dtype == r2[k].dtype && r1[k].ndim == r2[k].ndim;
            for (int d = 0; same && d < r1[k].ndim; d++) same = r1[k].shape[d] == r2[k].shape[d];
            CHECKF(same, "%s('%s'): results differ on re-inference", sf_op_table[op].name, text);
        }
        /* Keep the fusion small: weak scalars from binding pile up otherwise. */
        if (f->nvalues > 200) {
            scanfuse_fusion_free(f);
            f = fx(v);
        }
    }
    CHECKF(ok_count > 500, "only %d random calls were valid", ok_count);

    /* Raw attribute structs with hostile fields straight into sf_infer. */
    static const int64_t ints[] = {0, 1, -1, 2, 3, -2, 5, 9, INT64_MAX, INT64_MIN, 4294967296};
    const int nints = (int)(sizeof ints / sizeof ints[0]);
    for (int iter = 0; iter < 20000; iter++) {
        sf_op op = (sf_op)sf_test_rng_int(&rng, 0, SF_NUM_OPS - 1);
        sf_attrs a;
        sf_attrs_init(&a);
        a.dim = ints[sf_test_rng_int(&rng, 0, nints - 1)];
        a.has_dim = sf_test_rng_int(&rng, 0, 1);
        a.nlist = (int)sf_test_rng_int(&rng, -1, SF_MAX_LIST + 1);
        for (int i = 0; i < SF_MAX_LIST; i++) a.list[i] = ints[sf_test_rng_int(&rng, 0, nints - 1)];
        a.has_list = sf_test_rng_int(&rng, 0, 1);
        sf_num *nums[4] = {&a.start, &a.end, &a.step, &a.value};
        for (int i = 0; i < 4; i++) {
            nums[i]->kind = (sf_numkind)sf_test_rng_int(&rng, 0, 3);
            nums[i]->i = ints[sf_test_rng_int(&rng, 0, nints - 1)];
            nums[i]->f = (double)sf_test_rng_int(&rng, -3, 3) / 2.0;
        }
        a.has_start = sf_test_rng_int(&rng, 0, 1);
        a.has_end = sf_test_rng_int(&rng, 0, 1);
        a.has_step = sf_test_rng_int(&rng, 0, 1);
        a.has_value = sf_test_rng_int(&rng, 0, 1);
        a.dtype = (scanfuse_dtype)sf_test_rng_int(&rng, -2, SCANFUSE_NUM_DTYPES);
        a.keepdim = sf_test_rng_int(&rng, 0, 1);
        int32_t in[SF_MAX_IN];
        for (int i = 0; i < SF_MAX_IN; i++) in[i] = v[sf_test_rng_int(&rng, 0, 5)];
        sf_attrs c1, c2;
        sf_value r1[SF_MAX_OUT], r2[SF_MAX_OUT];
        char msg[SF_ERR_LEN] = "";
        scanfuse_status st = sf_infer(f, op, in, sf_op_table[op].nin, &a, &c1, r1, msg, sizeof msg);
        if (st != SCANFUSE_OK) {
            CHECKF(sf_test_contains(msg, sf_op_table[op].name), "%s: message '%s'",
                   sf_op_table[op].name, msg);
            continue;
        }
        st = sf_infer(f, op, in, sf_op_table[op].nin, &c1, &c2, r2, msg, sizeof msg);
        CHECKF(st == SCANFUSE_OK && memcmp(&c1, &c2, sizeof c1) == 0,
               "%s: raw attributes not idempotent (%s)", sf_op_table[op].name, msg);
    }
    scanfuse_fusion_free(f);
}

int main(void) {
    test_promotion();
    test_pointwise_shapes();
    test_scans();
    test_reductions();
    test_shape_ops();
    test_creation();
    test_matmul();
    test_index_ops();
    test_words();
    test_signatures();
    test_attr_text();
    test_bind();
    test_errors();
    test_internal_errors();
    test_weak_scalar_nodes();
    test_fuzz();
    return sf_test_finish("test_build");
}
