/*
 * test_passes.c — the verifier, the pass pipeline, dead-code elimination and the
 * cumsum decompositions.
 *
 *  - cumsum sweep: dtypes x shapes (scan dim first, middle, last) x n in {1, 7, 33} x
 *    exclusive/reverse, compiled in each cumsum mode (native, matmul, masked-sum) on
 *    the reference device and the CPU; every result is compared with the native
 *    reference result: bit-exact for integer results, within 1 ulp of the result dtype
 *    (plus 2^-40 * sum|x| for the double accumulation of matmul) for floats.  Empty and
 *    0-d inputs are run too.
 *  - the IR after the pipeline holds no cumsum in the decomposed modes; the decomposed
 *    fusion keeps the cumsum's value name, dtype and shape.
 *  - sf_verify rejects hand-corrupted IR with a message naming the node.
 *  - DCE removes unused nodes and keeps inputs, names and outputs.
 *  - dump_ir prints the IR after the named pass only.
 * Inputs come from the harness RNG with a fixed seed, so every failure reproduces.
 */
#include "harness.h"
#include "sf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *mode_name(scanfuse_cumsum_mode m) {
    switch (m) {
    case SCANFUSE_CUMSUM_NATIVE: return "native";
    case SCANFUSE_CUMSUM_MATMUL: return "matmul";
    case SCANFUSE_CUMSUM_MASKED_SUM: return "masked-sum";
    }
    return "?";
}

static scanfuse_dl_tensor make_tensor(void *data, scanfuse_dtype dt, int ndim, int64_t *shape) {
    scanfuse_dl_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = SCANFUSE_DL_CPU;
    t.device.device_id = 0;
    t.ndim = ndim;
    t.dtype = scanfuse_dtype_to_dl(dt);
    t.shape = shape;
    t.strides = NULL;
    t.byte_offset = 0;
    return t;
}

static void fill_random(sf_test_rng *rng, void *data, int64_t n, scanfuse_dtype dt) {
    for (int64_t i = 0; i < n; i++) {
        if (dt == SCANFUSE_BOOL)
            sf_store_i64(data, i, dt, (int64_t)(sf_test_rng_next(rng) & 1));
        else if (sf_dtype_is_intlike(dt))
            sf_store_i64(data, i, dt, (int64_t)sf_test_rng_next(rng)); /* full range: wraps */
        else
            sf_store_f64(data, i, dt, 2.0 * sf_test_rng_uniform(rng) - 1.0);
    }
}

typedef struct sweep_case {
    scanfuse_dtype in, dtype_arg;
    int ndim;
    int64_t shape[3];
    int64_t dim;
    int flags;
} sweep_case;

static void describe(const sweep_case *c, char *buf, size_t len) {
    char s[64] = "";
    size_t p = 0;
    for (int d = 0; d < c->ndim; d++)
        p += (size_t)snprintf(s + p, sizeof s - p, "%s%lld", d ? "," : "", (long long)c->shape[d]);
    snprintf(buf, len, "cumsum(%s[%s], dim=%lld, dtype=%s%s%s)", scanfuse_dtype_name(c->in), s,
             (long long)c->dim,
             c->dtype_arg == SCANFUSE_DTYPE_NONE ? "none" : scanfuse_dtype_name(c->dtype_arg),
             (c->flags & SCANFUSE_EXCLUSIVE) ? ", exclusive" : "",
             (c->flags & SCANFUSE_REVERSE) ? ", reverse" : "");
}

/* Compiles and runs the one-cumsum fusion f; returns the status, output in out. */
static scanfuse_status run_one(const scanfuse_fusion *f, scanfuse_device dev,
                               scanfuse_cumsum_mode mode, scanfuse_dl_tensor *in,
                               scanfuse_dl_tensor *out, char *err, size_t errlen) {
    scanfuse_options o;
    scanfuse_options_init(&o);
    o.device = dev;
    o.cumsum_mode = mode;
    o.threads = 2;
    scanfuse_program *p = scanfuse_compile(f, &o);
    scanfuse_status st = scanfuse_program_status(p);
    if (st == SCANFUSE_OK) st = scanfuse_run(p, in, 1, out, 1);
    snprintf(err, errlen, "%s", st == SCANFUSE_OK ? "" : scanfuse_program_error(p));
    if (st == SCANFUSE_OK && mode != SCANFUSE_CUMSUM_NATIVE && in->ndim > 0) {
        char *ir = scanfuse_program_ir(p);
        CHECKF(ir && !sf_test_contains(ir, "cumsum"), "%s IR still holds a cumsum:\n%s",
               mode_name(mode), ir ? ir : "(null)");
        free(ir);
    }
    scanfuse_program_free(p);
    return st;
}

static long sweep_cases, sweep_runs;

static void sweep_one(sf_test_rng *rng, const sweep_case *c) {
    char what[160];
    describe(c, what, sizeof what);
    sweep_cases++;

    scanfuse_fusion *f = scanfuse_fusion_new();
    int64_t shape[3];
    for (int d = 0; d < c->ndim; d++) shape[d] = c->shape[d];
    scanfuse_value x = scanfuse_input(f, "x", c->in, c->ndim, shape);
    scanfuse_value y = scanfuse_cumsum(f, x, c->dim, c->dtype_arg, c->flags);
    scanfuse_output(f, y, "y");
    if (scanfuse_fusion_status(f) != SCANFUSE_OK) {
        CHECKF(false, "%s: build failed: %s", what, scanfuse_fusion_error(f));
        scanfuse_fusion_free(f);
        return;
    }
    scanfuse_dtype r = f->values[y].dtype;
    int64_t numel = sf_numel(c->ndim, shape);
    size_t isz = scanfuse_dtype_size(c->in), osz = scanfuse_dtype_size(r);
    void *xin = calloc((size_t)(numel ? numel : 1), isz);
    void *want = calloc((size_t)(numel ? numel : 1), osz);
    void *got = calloc((size_t)(numel ? numel : 1), osz);
    fill_random(rng, xin, numel, c->in);
    /* sum |x| of the converted input: bounds the error of double accumulation */
    double absum = 0;
    for (int64_t i = 0; i < numel; i++)
        absum += fabs(sf_dtype_is_intlike(r) ? 0.0 : sf_round_to(sf_load_f64(xin, i, c->in), r));

    scanfuse_dl_tensor tin = make_tensor(xin, c->in, c->ndim, shape);
    scanfuse_dl_tensor twant = make_tensor(want, r, c->ndim, shape);
    scanfuse_dl_tensor tgot = make_tensor(got, r, c->ndim, shape);
    char err[SF_ERR_LEN];
    scanfuse_status st =
        run_one(f, SCANFUSE_DEVICE_REFERENCE, SCANFUSE_CUMSUM_NATIVE, &tin, &twant, err, sizeof err);
    CHECKF(st == SCANFUSE_OK, "%s: native reference: %s", what, err);
    if (st != SCANFUSE_OK) goto done;

    static const scanfuse_device devs[2] = {SCANFUSE_DEVICE_REFERENCE, SCANFUSE_DEVICE_CPU};
    static const scanfuse_cumsum_mode modes[3] = {
        SCANFUSE_CUMSUM_NATIVE, SCANFUSE_CUMSUM_MATMUL, SCANFUSE_CUMSUM_MASKED_SUM};
    for (int di = 0; di < 2; di++) {
        for (int mi = 0; mi < 3; mi++) {
            if (di == 0 && mi == 0) continue;
            const char *dev = di ? "cpu" : "reference";
            memset(got, 0xA5, (size_t)(numel ? numel : 1) * osz);
            sweep_runs++;
            st = run_one(f, devs[di], modes[mi], &tin, &tgot, err, sizeof err);
            CHECKF(st == SCANFUSE_OK, "%s, %s, %s: %s", what, mode_name(modes[mi]), dev, err);
            if (st != SCANFUSE_OK) continue;
            bool all_ok = true;
            for (int64_t i = 0; i < numel && all_ok; i++) {
                bool ok;
                char vals[96];
                if (sf_dtype_is_intlike(r)) {
                    int64_t a = sf_load_i64(want, i, r), b = sf_load_i64(got, i, r);
                    ok = a == b;
                    snprintf(vals, sizeof vals, "%lld vs native %lld", (long long)b, (long long)a);
                } else {
                    double a = sf_load_f64(want, i, r), b = sf_load_f64(got, i, r);
                    double tol = sf_ulp(fmax(fabs(a), fabs(b)), r) + ldexp(absum, -40);
                    ok = (isnan(a) && isnan(b)) || fabs(a - b) <= tol;
                    snprintf(vals, sizeof vals, "%.17g vs native %.17g", b, a);
                }
                if (!ok)
                    CHECKF(false, "%s, %s, %s: element %lld: %s", what, mode_name(modes[mi]), dev,
                           (long long)i, vals);
                all_ok = ok;
            }
            if (all_ok) CHECK(all_ok);
        }
    }
done:
    free(xin);
    free(want);
    free(got);
    scanfuse_fusion_free(f);
}

static void test_sweep(void) {
    static const struct {
        scanfuse_dtype in, dtype_arg;
    } dts[] = {
        {SCANFUSE_BOOL, SCANFUSE_DTYPE_NONE},     {SCANFUSE_INT32, SCANFUSE_DTYPE_NONE},
        {SCANFUSE_INT64, SCANFUSE_DTYPE_NONE},    {SCANFUSE_FLOAT32, SCANFUSE_DTYPE_NONE},
        {SCANFUSE_FLOAT64, SCANFUSE_DTYPE_NONE},  {SCANFUSE_FLOAT16, SCANFUSE_DTYPE_NONE},
        {SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32},    {SCANFUSE_BFLOAT16, SCANFUSE_DTYPE_NONE},
        {SCANFUSE_INT32, SCANFUSE_INT32},         {SCANFUSE_UINT8, SCANFUSE_FLOAT32},
    };
    static const int64_t ns[] = {1, 7, 33};
    sf_test_rng rng;
    sf_test_rng_seed(&rng, 0x5CA9F05EULL);
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            int64_t n = ns[ni];
            /* {ndim, shape, dim}: the scanned dim last, first, in the middle */
            const struct {
                int ndim;
                int64_t shape[3];
                int64_t dim;
            } shapes[] = {
                {1, {n, 0, 0}, 0},  {2, {3, n, 0}, 1},  {2, {n, 5, 0}, 0},
                {3, {2, 3, n}, -1}, {3, {2, n, 3}, 1},  {3, {n, 2, 3}, 0},
            };
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                for (int flags = 0; flags < 4; flags++) {
                    sweep_case c;
                    memset(&c, 0, sizeof c);
                    c.in = dts[t].in;
                    c.dtype_arg = dts[t].dtype_arg;
                    c.ndim = shapes[s].ndim;
                    for (int d = 0; d < 3; d++) c.shape[d] = shapes[s].shape[d];
                    c.dim = shapes[s].dim;
                    c.flags = flags;
                    sweep_one(&rng, &c);
                }
            }
        }
    }
    /* empty dims and 0-d inputs */
    const struct {
        int ndim;
        int64_t shape[3];
        int64_t dim;
    } edge[] = {
        {2, {3, 0, 0}, 1}, {2, {0, 4, 0}, 1}, {1, {0, 0, 0}, 0}, {3, {2, 0, 3}, 2}, {0, {0}, 0},
    };
    for (size_t e = 0; e < sizeof edge / sizeof edge[0]; e++) {
        for (int flags = 0; flags < 4; flags++) {
            sweep_case c;
            memset(&c, 0, sizeof c);
            c.in = (e & 1) ? SCANFUSE_FLOAT32 : SCANFUSE_INT32;
            c.dtype_arg = SCANFUSE_DTYPE_NONE;
            c.ndim = edge[e].ndim;
            for (int d = 0; d < 3; d++) c.shape[d] = edge[e].shape[d];
            c.dim = edge[e].dim;
            c.flags = flags;
            sweep_one(&rng, &c);
        }
    }
}

/* x: f32[3, 5]; y = cumsum(x, 1) named "offsets"; z = neg(y); outputs z, y. */
static scanfuse_fusion *small_fusion(scanfuse_value *py, scanfuse_value *pz) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    int64_t shape[2] = {3, 5};
    scanfuse_value x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 2, shape);
    scanfuse_value y = scanfuse_cumsum(f, x, 1, SCANFUSE_DTYPE_NONE, 0);
    scanfuse_value z = scanfuse_op(f, "neg", &y, 1, NULL);
    if (y >= 0) sf_set_value_name(f, y, "offsets");
    scanfuse_output(f, z, "z");
    scanfuse_output(f, y, NULL);
    if (py) *py = y;
    if (pz) *pz = z;
    return f;
}

static void test_verify(void) {
    char msg[SF_ERR_LEN];
    scanfuse_value y, z;
    scanfuse_fusion *f = small_fusion(&y, &z);
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_OK);
    if (scanfuse_fusion_status(f) != SCANFUSE_OK) {
        fprintf(stderr, "build: %s\n", scanfuse_fusion_error(f));
        scanfuse_fusion_free(f);
        return;
    }
    CHECK_STATUS(sf_verify(f, msg, sizeof msg), SCANFUSE_OK);

    /* a wrong dtype on a value */
    scanfuse_fusion *c = sf_fusion_clone(f);
    c->values[y].dtype = SCANFUSE_INT64;
    CHECK_STATUS(sf_verify(c, msg, sizeof msg), SCANFUSE_ERROR_STATE);
    CHECKF(sf_test_contains(msg, "verify: node 0 (cumsum): result dtype int64, inference says float32"),
           "message: %s", msg);
    /* the pipeline reports it too, and leaves the fusion alone */
    scanfuse_options o;
    scanfuse_options_init(&o);
    msg[0] = '\0';
    CHECK_STATUS(sf_run_passes(&c, &o, msg, sizeof msg), SCANFUSE_ERROR_STATE);
    CHECKF(sf_test_contains(msg, "node 0 (cumsum)"), "message: %s", msg);
    scanfuse_fusion_free(c);

    /* a wrong shape */
    c = sf_fusion_clone(f);
    c->values[z].shape[1] = 4;
    CHECK_STATUS(sf_verify(c, msg, sizeof msg), SCANFUSE_ERROR_STATE);
    CHECKF(sf_test_contains(msg, "node 1 (neg): result shape [3, 4], inference says [3, 5]"),
           "message: %s", msg);
    scanfuse_fusion_free(c);

    /* a node reading a later value */
    c = sf_fusion_clone(f);
    c->nodes[0].in[0] = z;
    CHECK_STATUS(sf_verify(c, msg, sizeof msg), SCANFUSE_ERROR_STATE);
    CHECKF(sf_test_contains(msg, "verify: node 0 (cumsum): input 0") &&
               sf_test_contains(msg, "defined by node 1, not before it"),
           "message: %s", msg);
    scanfuse_fusion_free(c);

    /* a non-canonical attribute */
    c = sf_fusion_clone(f);
    c->nodes[0].a.dtype = SCANFUSE_DTYPE_NONE;
    CHECK_STATUS(sf_verify(c, msg, sizeof msg), SCANFUSE_ERROR_STATE);
    CHECKF(sf_test_contains(msg, "node 0 (cumsum): attribute dtype is none, inference gives "
                                 "canonical float32"),
           "message: %s", msg);
    scanfuse_fusion_free(c);

    /* producer/slot disagreement and a value with no producer */
    c = sf_fusion_clone(f);
    c->values[z].slot = 1;
    CHECK_STATUS(sf_verify(c, msg, sizeof msg), SCANFUSE_ERROR_STATE);
    CHECKF(sf_test_contains(msg, "claims to be result 1 of node 1 (neg)"), "message: %s", msg);
    scanfuse_fusion_free(c);
    c = sf_fusion_clone(f);
    c->values[z].producer = -1;
    CHECK_STATUS(sf_verify(c, msg, sizeof msg), SCANFUSE_ERROR_STATE);
    CHECKF(sf_test_contains(msg, "no producer and is not an input"), "message: %s", msg);
    scanfuse_fusion_free(c);

    /* op arity, duplicate output names, duplicate value names */
    c = sf_fusion_clone(f);
    c->nodes[1].nin = 2;
    c->nodes[1].in[1] = 0;
    CHECK_STATUS(sf_verify(c, msg, sizeof msg), SCANFUSE_ERROR_STATE);
    CHECKF(sf_test_contains(msg, "node 1 (neg): 2 inputs, the op takes 1"), "message: %s", msg);
    scanfuse_fusion_free(c);
    c = sf_fusion_clone(f);
    free(c->output_names[1]);
    c->output_names[1] = sf_strdup("z");
    CHECK_STATUS(sf_verify(c, msg, sizeof msg), SCANFUSE_ERROR_STATE);
    CHECKF(sf_test_contains(msg, "two outputs are named 'z'"), "message: %s", msg);
    scanfuse_fusion_free(c);
    c = sf_fusion_clone(f);
    sf_set_value_name(c, z, "x");
    CHECK_STATUS(sf_verify(c, msg, sizeof msg), SCANFUSE_ERROR_STATE);
    CHECKF(sf_test_contains(msg, "two values are named 'x'"), "message: %s", msg);
    scanfuse_fusion_free(c);
    scanfuse_fusion_free(f);
}

static int count_op(const scanfuse_fusion *f, sf_op op) {
    int k = 0;
    for (int i = 0; i < f->nnodes; i++) k += f->nodes[i].op == op;
    return k;
}

static void test_decompose_ir(void) {
    char msg[SF_ERR_LEN];
    static const scanfuse_cumsum_mode modes[2] = {SCANFUSE_CUMSUM_MATMUL,
                                                  SCANFUSE_CUMSUM_MASKED_SUM};
    for (int m = 0; m < 2; m++) {
        scanfuse_value y;
        scanfuse_fusion *f = small_fusion(&y, NULL);
        if (scanfuse_fusion_status(f) != SCANFUSE_OK) {
            CHECKF(false, "build: %s", scanfuse_fusion_error(f));
            scanfuse_fusion_free(f);
            return;
        }
        scanfuse_fusion *c = sf_fusion_clone(f);
        msg[0] = '\0';
        CHECK_STATUS(sf_pass_decompose_cumsum(&c, modes[m], msg, sizeof msg), SCANFUSE_OK);
        CHECK_STATUS(sf_verify(c, msg, sizeof msg), SCANFUSE_OK);
        CHECK_EQ_INT(count_op(c, SF_OP_cumsum), 0);
        if (modes[m] == SCANFUSE_CUMSUM_MATMUL) CHECK_EQ_INT(count_op(c, SF_OP_matmul), 1);
        else CHECK_EQ_INT(count_op(c, SF_OP_sum), 1);
        int32_t off = sf_find_value(c, "offsets");
        CHECK(off >= 0);
        CHECK_EQ_INT(c->noutputs, 2);
        if (off >= 0 && c->noutputs == 2) {
            CHECK_EQ_INT(c->outputs[1], off);
            CHECK(strcmp(c->output_names[1], "offsets") == 0);
            CHECK(strcmp(c->output_names[0], "z") == 0);
            CHECK_EQ_INT(c->values[off].dtype, SCANFUSE_FLOAT32);
            CHECK_EQ_INT(c->values[off].ndim, 2);
            CHECK_EQ_INT(c->values[off].shape[0], 3);
            CHECK_EQ_INT(c->values[off].shape[1], 5);
        }
        scanfuse_fusion_free(c);

        /* through the public pipeline */
        scanfuse_options o;
        scanfuse_options_init(&o);
        o.device = SCANFUSE_DEVICE_REFERENCE;
        o.cumsum_mode = modes[m];
        scanfuse_program *p = scanfuse_compile(f, &o);
        CHECKF(scanfuse_program_status(p) == SCANFUSE_OK, "compile: %s",
               scanfuse_program_error(p));
        char *ir = scanfuse_program_ir(p);
        CHECKF(ir && !sf_test_contains(ir, "cumsum"), "IR:\n%s", ir ? ir : "(null)");
        if (modes[m] == SCANFUSE_CUMSUM_MATMUL)
            CHECKF(sf_test_contains(ir, "matmul"), "IR:\n%s", ir ? ir : "(null)");
        else
            CHECKF(sf_test_contains(ir, "where") && sf_test_contains(ir, "sum("), "IR:\n%s",
                   ir ? ir : "(null)");
        CHECKF(sf_test_contains(ir, "offsets"), "IR:\n%s", ir ? ir : "(null)");
        free(ir);
        scanfuse_program_free(p);
        scanfuse_fusion_free(f);
    }
    /* native mode leaves the cumsum */
    scanfuse_fusion *f = small_fusion(NULL, NULL);
    scanfuse_options o;
    scanfuse_options_init(&o);
    o.device = SCANFUSE_DEVICE_REFERENCE;
    scanfuse_program *p = scanfuse_compile(f, &o);
    char *ir = scanfuse_program_ir(p);
    CHECKF(sf_test_contains(ir, "cumsum"), "IR:\n%s", ir ? ir : "(null)");
    free(ir);
    scanfuse_program_free(p);
    scanfuse_fusion_free(f);
}

static void test_dce(void) {
    char msg[SF_ERR_LEN];
    scanfuse_fusion *f = scanfuse_fusion_new();
    int64_t shape[1] = {4};
    scanfuse_value x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, shape);
    scanfuse_value unused_in = scanfuse_input(f, "w", SCANFUSE_INT32, 1, shape);
    scanfuse_value u = scanfuse_op(f, "neg", &x, 1, NULL);        /* dead */
    scanfuse_value u2 = scanfuse_op(f, "exp", &u, 1, NULL);       /* dead */
    scanfuse_value e = scanfuse_op(f, "exp", &x, 1, NULL);        /* live */
    scanfuse_value mx[2];
    scanfuse_value ein = e;
    scanfuse_op2(f, "cummax", &ein, 1, "dim=0", mx);              /* live: values used */
    scanfuse_value s = scanfuse_op(f, "sigmoid", &mx[0], 1, NULL);
    (void)unused_in;
    (void)u2;
    if (e >= 0) sf_set_value_name(f, e, "ex");
    scanfuse_output(f, s, "out");
    if (scanfuse_fusion_status(f) != SCANFUSE_OK) {
        CHECKF(false, "build: %s", scanfuse_fusion_error(f));
        scanfuse_fusion_free(f);
        return;
    }
    CHECK_EQ_INT(f->nnodes, 5);
    scanfuse_fusion *c = sf_fusion_clone(f);
    CHECK_STATUS(sf_pass_dce(&c, msg, sizeof msg), SCANFUSE_OK);
    CHECK_STATUS(sf_verify(c, msg, sizeof msg), SCANFUSE_OK);
    CHECK_EQ_INT(c->nnodes, 3);
    CHECK_EQ_INT(count_op(c, SF_OP_neg), 0);
    CHECK_EQ_INT(count_op(c, SF_OP_exp), 1);
    CHECK_EQ_INT(count_op(c, SF_OP_cummax), 1);
    CHECK_EQ_INT(c->ninputs, 2);
    CHECK(c->ninputs == 2 && strcmp(c->values[c->inputs[1]].name, "w") == 0);
    CHECK(sf_find_value(c, "ex") >= 0);
    CHECK(c->noutputs == 1 && strcmp(c->output_names[0], "out") == 0);
    scanfuse_fusion_free(c);

    scanfuse_options o;
    scanfuse_options_init(&o);
    o.device = SCANFUSE_DEVICE_REFERENCE;
    scanfuse_program *p = scanfuse_compile(f, &o);
    CHECKF(scanfuse_program_status(p) == SCANFUSE_OK, "compile: %s", scanfuse_program_error(p));
    char *ir = scanfuse_program_ir(p);
    CHECKF(ir && !sf_test_contains(ir, "neg(") && sf_test_contains(ir, "cummax"), "IR:\n%s",
           ir ? ir : "(null)");
    free(ir);
    scanfuse_program_free(p);
    scanfuse_fusion_free(f);
}

/* Compiles with dump_ir set and returns what went to stderr. */
static char *capture_dump(const scanfuse_fusion *f, const char *pass) {
    fflush(stderr);
    FILE *tmp = tmpfile();
    if (!tmp) return NULL;
    int saved = dup(fileno(stderr));
    dup2(fileno(tmp), fileno(stderr));
    scanfuse_options o;
    scanfuse_options_init(&o);
    o.device = SCANFUSE_DEVICE_REFERENCE;
    o.cumsum_mode = SCANFUSE_CUMSUM_MATMUL;
    o.dump_ir = pass;
    scanfuse_program *p = scanfuse_compile(f, &o);
    fflush(stderr);
    dup2(saved, fileno(stderr));
    close(saved);
    scanfuse_program_free(p);
    long len = ftell(tmp);
    char *text = calloc((size_t)(len > 0 ? len : 0) + 1, 1);
    rewind(tmp);
    if (text && len > 0 && fread(text, 1, (size_t)len, tmp) != (size_t)len) text[0] = '\0';
    fclose(tmp);
    return text;
}

static void test_dump(void) {
    scanfuse_fusion *f = small_fusion(NULL, NULL);
    char *d = capture_dump(f, "decompose");
    CHECKF(sf_test_contains(d, "# IR after decompose") && !sf_test_contains(d, "# IR after dce") &&
               !sf_test_contains(d, "# IR after verify") && sf_test_contains(d, "matmul"),
           "dump: %s", d ? d : "(null)");
    free(d);
    d = capture_dump(f, "all");
    CHECKF(sf_test_contains(d, "# IR after verify") && sf_test_contains(d, "# IR after decompose") &&
               sf_test_contains(d, "# IR after dce"),
           "dump: %s", d ? d : "(null)");
    free(d);
    d = capture_dump(f, NULL);
    CHECKF(d && !sf_test_contains(d, "# IR after"), "dump: %s", d ? d : "(null)");
    free(d);
    scanfuse_fusion_free(f);
}

int main(void) {
    test_verify();
    test_dce();
    test_decompose_ir();
    test_dump();
    test_sweep();
    printf("cumsum sweep: %ld cases, %ld compiled runs compared with the native reference\n",
           sweep_cases, sweep_runs);
    return sf_test_finish("test_passes");
}
