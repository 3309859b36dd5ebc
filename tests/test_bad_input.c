/*
 * test_bad_input.c — bad input never crashes and always gives a clear status and a
 * message, through the C API and the text form:
 *   - build errors: dim out of range, dtypes an op rejects, complex dtypes (text,
 *     scanfuse_dtype_parse, DLPack code 5), shapes that do not broadcast or match,
 *     invalid attributes, malformed text with FILE:LINE:COL;
 *   - NULL handles and NULL pointers to every public function that takes a pointer;
 *   - run errors: wrong number of inputs/outputs, tensors with the wrong dtype, shape,
 *     ndim, device, lanes, negative strides, NULL data, outputs with stride 0 along a
 *     dim > 1, and integer division by zero (SCANFUSE_ERROR_VALUE) — every failed run
 *     must leave every output byte untouched (canary-filled buffers with guard zones),
 *     and the program must stay usable;
 *   - compiling for CUDA (absent here) gives SCANFUSE_ERROR_DEVICE or UNSUPPORTED;
 *   - a fusion already in error keeps its first error through later calls.
 * Each check names the status wanted and a substring the message must contain.
 */
#include "harness.h"
#include "sf.h"
#include "sweep_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CHECK_STATUS of harness.h evaluates its argument twice; this evaluates it once. */
#define CHECK_ST(expr, want)                                                             \
    do {                                                                                 \
        scanfuse_status st_once_ = (expr);                                               \
        sf_test_check(st_once_ == (want), __FILE__, __LINE__, "status %s, wanted %s (%s)", \
                      scanfuse_status_string(st_once_), scanfuse_status_string(want), #expr); \
    } while (0)

/* ---------------------------------------------------------------------------------- */
/* Build errors through the text form                                                 */
/* ---------------------------------------------------------------------------------- */

typedef struct text_case {
    const char *text;
    scanfuse_status want;
    const char *needles[3]; /* substrings the message must contain (NULL: none) */
} text_case;

static void check_text(const text_case *c) {
    scanfuse_fusion *f = scanfuse_parse(c->text, "bad.sf");
    CHECKF(f != NULL, "scanfuse_parse returned NULL for {%s}", c->text);
    if (!f) return;
    scanfuse_status st = scanfuse_fusion_status(f);
    const char *msg = scanfuse_fusion_error(f);
    char one[512];
    sw_oneline(c->text, one, sizeof one);
    CHECKF(st == c->want, "{%s}: status '%s', wanted '%s' (message: %s)", one,
           scanfuse_status_string(st), scanfuse_status_string(c->want), msg);
    CHECKF(msg && strncmp(msg, "bad.sf:", 7) == 0, "{%s}: message does not start with FILE:LINE:COL: '%s'", one, msg);
    for (int i = 0; i < 3 && c->needles[i]; i++)
        CHECKF(sf_test_contains(msg, c->needles[i]), "{%s}: message '%s' does not contain '%s'", one, msg,
               c->needles[i]);
    /* a fusion in error cannot be printed or compiled */
    char *printed = scanfuse_print(f);
    CHECKF(printed == NULL, "{%s}: scanfuse_print of a fusion in error gave text", one);
    scanfuse_free(printed);
    scanfuse_program *p = scanfuse_compile(f, NULL);
    CHECKF(p && scanfuse_program_status(p) == SCANFUSE_ERROR_STATE, "{%s}: compile of a fusion in error: %s", one,
           p ? scanfuse_status_string(scanfuse_program_status(p)) : "NULL");
    scanfuse_program_free(p);
    scanfuse_fusion_free(f);
}

static void text_errors(void) {
    static const text_case cases[] = {
        /* dim out of range */
        {"input x: float32[3, 4]\ny = cumsum(x, dim=3)\noutput y\n", SCANFUSE_ERROR_ARGUMENT,
         {"bad.sf:2:", "cumsum", "dim 3 out of range for a 2-d tensor"}},
        {"input x: float32[3, 4]\ny = cumsum(x, dim=-3)\noutput y\n", SCANFUSE_ERROR_ARGUMENT,
         {"cumsum", "dim -3", "out of range"}},
        {"input x: float32[]\ny, i = cummax(x, dim=1)\noutput y\n", SCANFUSE_ERROR_ARGUMENT, {"cummax", "dim 1", "out of range"}},
        {"input x: int32[3, 4]\ny = sum(x, dim=[0, 5])\noutput y\n", SCANFUSE_ERROR_ARGUMENT, {"sum", "dim 5", "out of range"}},
        {"input x: int32[3, 4]\ny = argmax(x, dim=2)\noutput y\n", SCANFUSE_ERROR_ARGUMENT, {"argmax", "dim 2", NULL}},
        {"input x: int32[3, 4]\ny = slice(x, dim=-5, start=0, end=1)\noutput y\n", SCANFUSE_ERROR_ARGUMENT, {"slice", "-5", NULL}},
        {"input x: int32[3, 4]\ny = permute(x, dims=[0, 0])\noutput y\n", SCANFUSE_ERROR_ARGUMENT, {"permute", NULL, NULL}},
        {"input x: int32[3, 4]\ny = permute(x, dims=[0, 2])\noutput y\n", SCANFUSE_ERROR_ARGUMENT, {"permute", NULL, NULL}},
        /* dtypes an op rejects */
        {"input x: int32[5]\ny = logcumsumexp(x, dim=0)\noutput y\n", SCANFUSE_ERROR_DTYPE, {"logcumsumexp", "int32", NULL}},
        {"input a: bool[5]\ninput b: bool[5]\ny = sub(a, b)\noutput y\n", SCANFUSE_ERROR_DTYPE, {"sub", "bool", NULL}},
        {"input x: bool[5]\ny = neg(x)\noutput y\n", SCANFUSE_ERROR_DTYPE, {"neg", "bool", NULL}},
        {"input x: int64[5]\ny = mean(x)\noutput y\n", SCANFUSE_ERROR_DTYPE, {"mean", "int64", NULL}},
        {"input x: uint8[5]\ny = silu(x)\noutput y\n", SCANFUSE_ERROR_DTYPE, {"silu", "uint8", NULL}},
        {"input a: bool[2, 2]\ninput b: bool[2, 2]\ny = matmul(a, b)\noutput y\n", SCANFUSE_ERROR_DTYPE, {"matmul", "bool", NULL}},
        {"input a: float32[2, 2]\ninput b: float16[2, 2]\ny = matmul(a, b)\noutput y\n", SCANFUSE_ERROR_DTYPE, {"matmul", NULL, NULL}},
        {"input c: int32[5]\ninput a: float32[5]\ny = where(c, a, a)\noutput y\n", SCANFUSE_ERROR_DTYPE, {"where", "int32", NULL}},
        /* complex dtypes */
        {"input x: complex64[3]\noutput x\n", SCANFUSE_ERROR_DTYPE, {"bad.sf:1:", "complex", NULL}},
        {"input x: torch.complex128[3]\noutput x\n", SCANFUSE_ERROR_DTYPE, {"complex", NULL, NULL}},
        {"input x: float32[3]\ny = cast(x, dtype=complex64)\noutput y\n", SCANFUSE_ERROR_DTYPE, {"bad.sf:2:", "complex", NULL}},
        {"input x: float32[3]\ny = cumsum(x, dim=0, dtype=cfloat)\noutput y\n", SCANFUSE_ERROR_DTYPE, {"complex", NULL, NULL}},
        {"input x: float32[3]\ny = cumsum(x, dim=0, dtype=<c8)\noutput y\n", SCANFUSE_ERROR_DTYPE, {"complex", NULL, NULL}},
        {"input x: floaty[3]\noutput x\n", SCANFUSE_ERROR_DTYPE, {"floaty", NULL, NULL}},
        /* shapes */
        {"input a: float32[3, 4]\ninput b: float32[5]\ny = add(a, b)\noutput y\n", SCANFUSE_ERROR_SHAPE, {"bad.sf:3:", "add", "[3, 4]"}},
        {"input a: float32[3, 4]\ninput b: float32[5, 6]\ny = matmul(a, b)\noutput y\n", SCANFUSE_ERROR_SHAPE, {"matmul", NULL, NULL}},
        {"input c: bool[2]\ninput a: float32[3]\ny = where(c, a, 1.0)\noutput y\n", SCANFUSE_ERROR_SHAPE, {"where", NULL, NULL}},
        {"input x: float32[3, 4]\ny = reshape(x, shape=[5, 3])\noutput y\n", SCANFUSE_ERROR_SHAPE, {"reshape", NULL, NULL}},
        {"input x: float32[3, 4]\ny = expand(x, size=[3, 5])\noutput y\n", SCANFUSE_ERROR_SHAPE, {"expand", NULL, NULL}},
        {"input x: float32[3, 0]\ny = max(x, dim=1)\noutput y\n", SCANFUSE_ERROR_SHAPE, {"max", NULL, NULL}},
        {"input x: float32[0]\ny = argmin(x)\noutput y\n", SCANFUSE_ERROR_SHAPE, {"argmin", NULL, NULL}},
        {"input x: float32[-3]\noutput x\n", SCANFUSE_ERROR_SHAPE, {"-3", NULL, NULL}},
        /* bad attribute values */
        {"input x: float32[5]\ny = slice(x, dim=0, step=0)\noutput y\n", SCANFUSE_ERROR_ARGUMENT, {"slice", "step", NULL}},
        {"y = arange(0, 10, 0)\noutput y\n", SCANFUSE_ERROR_ARGUMENT, {"arange", "step", NULL}},
        {"y = full(size=[2, -1], fill_value=1)\noutput y\n", SCANFUSE_ERROR_ARGUMENT, {"full", "-1", NULL}},
        {"input x: float32[5]\ny = cumsum(x)\noutput y\n", SCANFUSE_ERROR_ARGUMENT, {"cumsum", "dim", NULL}},
        {"input x: float32[5]\ny = cumsum(x, dim=0, exclusive=3)\noutput y\n", SCANFUSE_ERROR_ARGUMENT, {"cumsum", "exclusive", NULL}},
        {"input x: float32[5]\ny = cumsum(x, dim=0, bogus=1)\noutput y\n", SCANFUSE_ERROR_ARGUMENT, {"cumsum", "bogus", NULL}},
        /* malformed text: FILE:LINE:COL */
        {"input x: float32[5]\ny = cumsum(x, dim=)\noutput y\n", SCANFUSE_ERROR_PARSE, {"bad.sf:2:", NULL, NULL}},
        {"input x: float32[5]\ny = cumsumm(x, dim=0)\noutput y\n", SCANFUSE_ERROR_PARSE, {"bad.sf:2:", "cumsumm", NULL}},
        {"input x: float32[5]\n\n# comment\ny = cumsum(z, dim=0)\noutput y\n", SCANFUSE_ERROR_PARSE, {"bad.sf:4:", "z", NULL}},
        {"input x: float32[5\noutput x\n", SCANFUSE_ERROR_PARSE, {"bad.sf:1:", NULL, NULL}},
        {"input x: float32[5]\noutput nope\n", SCANFUSE_ERROR_PARSE, {"bad.sf:2:", "nope", NULL}},
        {"input x: float32[5]\ninput x: float32[5]\noutput x\n", SCANFUSE_ERROR_PARSE, {"bad.sf:2:", "x", NULL}},
        {"input x: float32[5]\ny = cumsum(x, dim=0\noutput y\n", SCANFUSE_ERROR_PARSE, {"bad.sf:2:", NULL, NULL}},
        {"input x: float32[5]\ny = cumsum(x, dim=0)\ny = cumsum(x, dim=0)\noutput y\n", SCANFUSE_ERROR_PARSE, {"bad.sf:3:", NULL, NULL}},
        {"input x: float32[5]\na, b = cumsum(x, dim=0)\noutput a\n", SCANFUSE_ERROR_PARSE, {"bad.sf:2:", "cumsum", NULL}},
        {"input x: float32[99999999999999999999]\noutput x\n", SCANFUSE_ERROR_PARSE, {"bad.sf:1:", NULL, NULL}},
        {"\x01\x02garbage\n", SCANFUSE_ERROR_PARSE, {"bad.sf:1:", NULL, NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_text(&cases[i]);

    /* a text without outputs parses, but cannot be compiled */
    scanfuse_fusion *f = scanfuse_parse("input x: float32[5]\n", "bad.sf");
    scanfuse_program *p = scanfuse_compile(f, NULL);
    CHECKF(p && scanfuse_program_status(p) != SCANFUSE_OK, "compile of a fusion without outputs succeeded");
    scanfuse_program_free(p);
    scanfuse_fusion_free(f);

    /* a missing file */
    f = scanfuse_parse_file("/nonexistent/dir/file.sf");
    CHECKF(f && scanfuse_fusion_status(f) == SCANFUSE_ERROR_IO, "parse_file of a missing file: %s",
           f ? scanfuse_status_string(scanfuse_fusion_status(f)) : "NULL");
    CHECKF(f && sf_test_contains(scanfuse_fusion_error(f), "/nonexistent/dir/file.sf"), "missing file message: '%s'",
           f ? scanfuse_fusion_error(f) : "");
    scanfuse_fusion_free(f);
}

/* ---------------------------------------------------------------------------------- */
/* Build errors through the C API                                                     */
/* ---------------------------------------------------------------------------------- */

#define CHECK_FUSION(f, want, needle)                                                            \
    do {                                                                                         \
        scanfuse_status st_ = scanfuse_fusion_status(f);                                         \
        CHECKF(st_ == (want), "status '%s', wanted '%s' (message: %s)", scanfuse_status_string(st_), \
               scanfuse_status_string(want), scanfuse_fusion_error(f));                          \
        if (needle)                                                                              \
            CHECKF(sf_test_contains(scanfuse_fusion_error(f), needle),                           \
                   "message '%s' does not contain '%s'", scanfuse_fusion_error(f), (const char *)(needle)); \
    } while (0)

static void api_errors(void) {
    int64_t s34[2] = {3, 4}, s5[1] = {5};
    scanfuse_fusion *f;
    scanfuse_value x, v;

    /* dim out of range, message as in DESIGN.md */
    f = scanfuse_fusion_new();
    x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 2, s34);
    v = scanfuse_cumsum(f, x, 3, SCANFUSE_DTYPE_NONE, 0);
    CHECK(v == SCANFUSE_NO_VALUE);
    CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "cumsum: dim 3 out of range for a 2-d tensor");
    scanfuse_fusion_free(f);

    /* rejected dtypes */
    f = scanfuse_fusion_new();
    x = scanfuse_input(f, "x", SCANFUSE_INT32, 2, s34);
    v = scanfuse_logcumsumexp(f, x, 0, 0);
    CHECK(v == SCANFUSE_NO_VALUE);
    CHECK_FUSION(f, SCANFUSE_ERROR_DTYPE, "logcumsumexp");
    CHECKF(sf_test_contains(scanfuse_fusion_error(f), "int32"), "message '%s' does not name the dtype", scanfuse_fusion_error(f));
    scanfuse_fusion_free(f);

    f = scanfuse_fusion_new();
    scanfuse_value ab[2];
    ab[0] = scanfuse_input(f, "a", SCANFUSE_BOOL, 1, s5);
    ab[1] = scanfuse_input(f, "b", SCANFUSE_BOOL, 1, s5);
    v = scanfuse_op(f, "sub", ab, 2, NULL);
    CHECK(v == SCANFUSE_NO_VALUE);
    CHECK_FUSION(f, SCANFUSE_ERROR_DTYPE, "sub");
    scanfuse_fusion_free(f);

    /* shape mismatch */
    f = scanfuse_fusion_new();
    ab[0] = scanfuse_input(f, "a", SCANFUSE_FLOAT32, 2, s34);
    ab[1] = scanfuse_input(f, "b", SCANFUSE_FLOAT32, 1, s5);
    v = scanfuse_op(f, "add", ab, 2, "");
    CHECK(v == SCANFUSE_NO_VALUE);
    CHECK_FUSION(f, SCANFUSE_ERROR_SHAPE, "add");
    scanfuse_fusion_free(f);

    /* complex: the dtype parser, DLPack, and a cast attribute */
    static const char *const complex_names[] = {"complex64", "complex128", "torch.complex64", "numpy.complex128",
                                                "<c8", "<c16", "cfloat", "cdouble", "complex32", "chalf"};
    for (size_t i = 0; i < sizeof complex_names / sizeof complex_names[0]; i++) {
        scanfuse_dtype d = SCANFUSE_INT16;
        scanfuse_status st = scanfuse_dtype_parse(complex_names[i], &d);
        CHECKF(st == SCANFUSE_ERROR_DTYPE && d == SCANFUSE_INT16, "scanfuse_dtype_parse(\"%s\"): %s, out %d",
               complex_names[i], scanfuse_status_string(st), (int)d);
    }
    {
        scanfuse_dtype d = SCANFUSE_INT16;
        scanfuse_dl_dtype c64 = {SCANFUSE_DL_COMPLEX, 64, 1}, c128 = {SCANFUSE_DL_COMPLEX, 128, 1};
        CHECK_ST(scanfuse_dtype_from_dl(c64, &d), SCANFUSE_ERROR_DTYPE);
        CHECK_ST(scanfuse_dtype_from_dl(c128, &d), SCANFUSE_ERROR_DTYPE);
        scanfuse_dl_dtype opaque = {SCANFUSE_DL_OPAQUE_HANDLE, 64, 1}, lanes = {SCANFUSE_DL_FLOAT, 32, 4},
                          bits = {SCANFUSE_DL_FLOAT, 24, 1}, code = {99, 32, 1};
        CHECK_ST(scanfuse_dtype_from_dl(opaque, &d), SCANFUSE_ERROR_DTYPE);
        CHECK_ST(scanfuse_dtype_from_dl(lanes, &d), SCANFUSE_ERROR_DTYPE);
        CHECK_ST(scanfuse_dtype_from_dl(bits, &d), SCANFUSE_ERROR_DTYPE);
        CHECK_ST(scanfuse_dtype_from_dl(code, &d), SCANFUSE_ERROR_DTYPE);
        CHECK(d == SCANFUSE_INT16);
    }
    f = scanfuse_fusion_new();
    x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
    v = scanfuse_op(f, "cast", &x, 1, "dtype=complex64");
    CHECK(v == SCANFUSE_NO_VALUE);
    CHECK_FUSION(f, SCANFUSE_ERROR_DTYPE, "complex");
    scanfuse_fusion_free(f);

    /* invalid inputs */
    f = scanfuse_fusion_new();
    CHECK(scanfuse_input(f, NULL, SCANFUSE_FLOAT32, 1, s5) == SCANFUSE_NO_VALUE);
    CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "name");
    scanfuse_fusion_free(f);
    f = scanfuse_fusion_new();
    CHECK(scanfuse_input(f, "1x", SCANFUSE_FLOAT32, 1, s5) == SCANFUSE_NO_VALUE);
    CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "1x");
    scanfuse_fusion_free(f);
    f = scanfuse_fusion_new();
    CHECK(scanfuse_input(f, "x", SCANFUSE_FLOAT32, 2, NULL) == SCANFUSE_NO_VALUE);
    CHECKF(scanfuse_fusion_status(f) != SCANFUSE_OK && scanfuse_fusion_error(f)[0], "NULL shape with ndim 2: %s",
           scanfuse_status_string(scanfuse_fusion_status(f)));
    scanfuse_fusion_free(f);
    f = scanfuse_fusion_new();
    CHECK(scanfuse_input(f, "x", SCANFUSE_FLOAT32, 0, NULL) != SCANFUSE_NO_VALUE); /* 0-d: NULL shape is fine */
    CHECK_FUSION(f, SCANFUSE_OK, NULL);
    scanfuse_fusion_free(f);
    static const int bad_ndims[] = {-1, SCANFUSE_MAX_DIMS + 1, 1000};
    int64_t big[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    for (size_t i = 0; i < 3; i++) {
        f = scanfuse_fusion_new();
        CHECK(scanfuse_input(f, "x", SCANFUSE_FLOAT32, bad_ndims[i], big) == SCANFUSE_NO_VALUE);
        scanfuse_status st = scanfuse_fusion_status(f);
        CHECKF(st == SCANFUSE_ERROR_ARGUMENT || st == SCANFUSE_ERROR_SHAPE, "ndim %d: %s", bad_ndims[i],
               scanfuse_status_string(st));
        CHECKF(sf_test_contains(scanfuse_fusion_error(f), "ndim"), "ndim %d: message '%s'", bad_ndims[i],
               scanfuse_fusion_error(f));
        scanfuse_fusion_free(f);
    }
    int64_t neg[2] = {3, -4};
    f = scanfuse_fusion_new();
    CHECK(scanfuse_input(f, "x", SCANFUSE_FLOAT32, 2, neg) == SCANFUSE_NO_VALUE);
    CHECKF(scanfuse_fusion_status(f) != SCANFUSE_OK && sf_test_contains(scanfuse_fusion_error(f), "-4"),
           "negative size: %s", scanfuse_fusion_error(f));
    scanfuse_fusion_free(f);
    int64_t huge[3] = {INT64_MAX / 2, 4, 4};
    f = scanfuse_fusion_new();
    CHECK(scanfuse_input(f, "x", SCANFUSE_FLOAT32, 3, huge) == SCANFUSE_NO_VALUE);
    CHECKF(scanfuse_fusion_status(f) != SCANFUSE_OK, "overflowing size accepted");
    scanfuse_fusion_free(f);
    static const int bad_dtypes[] = {SCANFUSE_DTYPE_NONE, SCANFUSE_NUM_DTYPES, 42, -7};
    for (size_t i = 0; i < 4; i++) {
        f = scanfuse_fusion_new();
        CHECK(scanfuse_input(f, "x", (scanfuse_dtype)bad_dtypes[i], 1, s5) == SCANFUSE_NO_VALUE);
        CHECK_FUSION(f, SCANFUSE_ERROR_DTYPE, "dtype");
        scanfuse_fusion_free(f);
    }
    f = scanfuse_fusion_new();
    scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
    CHECK(scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5) == SCANFUSE_NO_VALUE);
    CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "'x'");
    scanfuse_fusion_free(f);

    /* invalid op calls */
    struct {
        const char *op;
        int nargs;
        bool null_args;
        const char *attrs;
        scanfuse_status want;
        const char *needle;
    } ops[] = {
        {NULL, 1, false, "", SCANFUSE_ERROR_ARGUMENT, "op"},
        {"cumsumm", 1, false, "dim=0", SCANFUSE_ERROR_ARGUMENT, "cumsumm"},
        {"cumsum", 1, true, "dim=0", SCANFUSE_ERROR_ARGUMENT, "cumsum"},
        {"cumsum", -1, false, "dim=0", SCANFUSE_ERROR_ARGUMENT, "cumsum"},
        {"cumsum", 2, false, "dim=0", SCANFUSE_ERROR_ARGUMENT, "cumsum"},
        {"cumsum", 0, false, "dim=0", SCANFUSE_ERROR_ARGUMENT, "cumsum"},
        {"cumsum", 1, false, "dim=", SCANFUSE_ERROR_PARSE, "dim"},
        {"cumsum", 1, false, "dim=0, dim=1", SCANFUSE_ERROR_ARGUMENT, "dim"},
        {"cumsum", 1, false, "dim=0.5", SCANFUSE_ERROR_ARGUMENT, "dim"},
        {"cumsum", 1, false, "dim=0, dtype=complex64", SCANFUSE_ERROR_DTYPE, "complex"},
        {"cummax", 1, false, "dim=0", SCANFUSE_ERROR_ARGUMENT, "cummax"}, /* two results: op2 */
        {"pad", 1, false, "pad=[1]", SCANFUSE_ERROR_ARGUMENT, "pad"},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        f = scanfuse_fusion_new();
        scanfuse_value args[2];
        args[0] = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 2, s34);
        args[1] = args[0];
        scanfuse_status want = ops[i].want;
        v = scanfuse_op(f, ops[i].op, ops[i].null_args ? NULL : args, ops[i].nargs, ops[i].attrs);
        scanfuse_status st = scanfuse_fusion_status(f);
        if (want == SCANFUSE_ERROR_PARSE && st == SCANFUSE_ERROR_ARGUMENT) want = st; /* either is clear */
        CHECKF(v == SCANFUSE_NO_VALUE && st == want, "scanfuse_op(\"%s\", nargs %d, \"%s\"): value %d, %s (%s)",
               ops[i].op ? ops[i].op : "NULL", ops[i].nargs, ops[i].attrs, (int)v, scanfuse_status_string(st),
               scanfuse_fusion_error(f));
        CHECKF(sf_test_contains(scanfuse_fusion_error(f), ops[i].needle), "scanfuse_op(\"%s\", \"%s\"): message '%s' lacks '%s'",
               ops[i].op ? ops[i].op : "NULL", ops[i].attrs, scanfuse_fusion_error(f), ops[i].needle);
        scanfuse_fusion_free(f);
    }
    /* value ids that are not values of the fusion */
    static const scanfuse_value bad_ids[] = {SCANFUSE_NO_VALUE, 1, 999, INT32_MAX, -5};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
        f = scanfuse_fusion_new();
        scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
        scanfuse_value id = bad_ids[i];
        CHECK(scanfuse_op(f, "exp", &id, 1, NULL) == SCANFUSE_NO_VALUE);
        CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "exp");
        scanfuse_fusion_free(f);
        f = scanfuse_fusion_new();
        scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
        CHECK(scanfuse_cumsum(f, id, 0, SCANFUSE_DTYPE_NONE, 0) == SCANFUSE_NO_VALUE);
        CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "cumsum");
        scanfuse_fusion_free(f);
        f = scanfuse_fusion_new();
        scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
        CHECK_ST(scanfuse_output(f, id, "y"), SCANFUSE_ERROR_ARGUMENT);
        CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "output");
        scanfuse_fusion_free(f);
    }
    /* a value of another fusion */
    {
        scanfuse_fusion *g = scanfuse_fusion_new();
        f = scanfuse_fusion_new();
        scanfuse_input(g, "a", SCANFUSE_FLOAT32, 1, s5);
        scanfuse_value gv = scanfuse_input(g, "b", SCANFUSE_FLOAT32, 1, s5);
        scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
        CHECK(scanfuse_cumsum(f, gv, 0, SCANFUSE_DTYPE_NONE, 0) == SCANFUSE_NO_VALUE);
        CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "cumsum");
        scanfuse_fusion_free(f);
        scanfuse_fusion_free(g);
    }
    /* typed helpers: bad flags, bad dtype, NULL result pointers */
    f = scanfuse_fusion_new();
    x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
    CHECK(scanfuse_cumsum(f, x, 0, SCANFUSE_DTYPE_NONE, 0x40) == SCANFUSE_NO_VALUE);
    CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "flags");
    scanfuse_fusion_free(f);
    f = scanfuse_fusion_new();
    x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
    CHECK(scanfuse_cumprod(f, x, 0, (scanfuse_dtype)77, 0) == SCANFUSE_NO_VALUE);
    CHECK_FUSION(f, SCANFUSE_ERROR_DTYPE, "cumprod");
    scanfuse_fusion_free(f);
    f = scanfuse_fusion_new();
    x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
    scanfuse_value iv = 12345;
    CHECK(scanfuse_cummax(f, x, 0, 0, NULL, &iv) != SCANFUSE_OK);
    CHECK(iv == 12345 || iv == SCANFUSE_NO_VALUE);
    CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "cummax");
    scanfuse_fusion_free(f);
    f = scanfuse_fusion_new();
    x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
    CHECK(scanfuse_cummin(f, x, 0, 0, &iv, NULL) != SCANFUSE_OK);
    CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "cummin");
    scanfuse_fusion_free(f);
    f = scanfuse_fusion_new();
    x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
    CHECK(scanfuse_op2(f, "cummax", &x, 1, "dim=0", NULL) != SCANFUSE_OK);
    CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "cummax");
    scanfuse_fusion_free(f);
    f = scanfuse_fusion_new();
    x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
    scanfuse_value two[2] = {7, 7};
    CHECK(scanfuse_op2(f, "cumsum", &x, 1, "dim=0", two) != SCANFUSE_OK);
    CHECK(two[0] == SCANFUSE_NO_VALUE && two[1] == SCANFUSE_NO_VALUE);
    CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "cumsum");
    scanfuse_fusion_free(f);
    /* outputs: bad and duplicate names */
    f = scanfuse_fusion_new();
    x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
    CHECK_ST(scanfuse_output(f, x, "bad name"), SCANFUSE_ERROR_ARGUMENT);
    CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "bad name");
    scanfuse_fusion_free(f);
    f = scanfuse_fusion_new();
    x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
    CHECK_ST(scanfuse_output(f, x, "y"), SCANFUSE_OK);
    CHECK_ST(scanfuse_output(f, x, "y"), SCANFUSE_ERROR_ARGUMENT);
    CHECK_FUSION(f, SCANFUSE_ERROR_ARGUMENT, "'y'");
    scanfuse_fusion_free(f);
    /* introspection out of range */
    f = scanfuse_fusion_new();
    x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 1, s5);
    scanfuse_output(f, x, NULL);
    {
        const char *nm = "unchanged";
        scanfuse_dtype dt = SCANFUSE_INT8;
        int nd = 77;
        int64_t sh[SCANFUSE_MAX_DIMS];
        CHECK_ST(scanfuse_fusion_input_info(f, 1, &nm, &dt, &nd, sh), SCANFUSE_ERROR_ARGUMENT);
        CHECK_ST(scanfuse_fusion_input_info(f, -1, &nm, &dt, &nd, sh), SCANFUSE_ERROR_ARGUMENT);
        CHECK_ST(scanfuse_fusion_output_info(f, 1, &nm, &dt, &nd, sh), SCANFUSE_ERROR_ARGUMENT);
        CHECK_ST(scanfuse_fusion_output_info(f, INT32_MIN, &nm, &dt, &nd, sh), SCANFUSE_ERROR_ARGUMENT);
        /* NULL out-pointers: no crash */
        scanfuse_status st = scanfuse_fusion_input_info(f, 0, NULL, NULL, NULL, NULL);
        CHECKF(st == SCANFUSE_OK || st == SCANFUSE_ERROR_ARGUMENT, "input_info with NULL pointers: %s", scanfuse_status_string(st));
        st = scanfuse_fusion_output_info(f, 0, NULL, NULL, NULL, NULL);
        CHECKF(st == SCANFUSE_OK || st == SCANFUSE_ERROR_ARGUMENT, "output_info with NULL pointers: %s", scanfuse_status_string(st));
    }
    /* the fusion above is fine: the failed introspection calls did not put it in error */
    CHECK_FUSION(f, SCANFUSE_OK, NULL);
    scanfuse_fusion_free(f);
}

/* ---------------------------------------------------------------------------------- */
/* NULL handles and pointers to every public function                                 */
/* ---------------------------------------------------------------------------------- */

static void null_pointers(void) {
    int64_t s5[1] = {5};
    scanfuse_value x = 0, vals[2];
    scanfuse_dtype dt = SCANFUSE_INT16;

    CHECK(scanfuse_status_string(SCANFUSE_OK) != NULL);
    CHECK(scanfuse_status_string((scanfuse_status)999) != NULL);
    CHECK(scanfuse_status_string((scanfuse_status)-1) != NULL);
    scanfuse_free(NULL);

    CHECK_ST(scanfuse_dtype_parse(NULL, &dt), SCANFUSE_ERROR_DTYPE);
    CHECK(dt == SCANFUSE_INT16);
    scanfuse_status st = scanfuse_dtype_parse("float32", NULL);
    CHECKF(st == SCANFUSE_OK || st == SCANFUSE_ERROR_ARGUMENT, "dtype_parse with NULL out: %s", scanfuse_status_string(st));
    CHECK_ST(scanfuse_dtype_parse("", &dt), SCANFUSE_ERROR_DTYPE);
    CHECK_ST(scanfuse_dtype_parse("<", &dt), SCANFUSE_ERROR_DTYPE);
    CHECK_ST(scanfuse_dtype_parse("<f99999999999999999999", &dt), SCANFUSE_ERROR_DTYPE);
    CHECK_ST(scanfuse_dtype_parse(">f4", &dt), SCANFUSE_ERROR_DTYPE);
    CHECK(dt == SCANFUSE_INT16);
    scanfuse_dl_dtype f32 = {SCANFUSE_DL_FLOAT, 32, 1};
    st = scanfuse_dtype_from_dl(f32, NULL);
    CHECKF(st == SCANFUSE_OK || st == SCANFUSE_ERROR_ARGUMENT, "dtype_from_dl with NULL out: %s", scanfuse_status_string(st));
    CHECK(strcmp(scanfuse_dtype_name((scanfuse_dtype)99), "invalid") == 0);
    CHECK(strcmp(scanfuse_dtype_name(SCANFUSE_DTYPE_NONE), "invalid") == 0);
    CHECK(scanfuse_dtype_size((scanfuse_dtype)99) == 0);
    CHECK(scanfuse_dtype_size(SCANFUSE_DTYPE_NONE) == 0);
    (void)scanfuse_dtype_to_dl((scanfuse_dtype)99);
    (void)scanfuse_dtype_promote((scanfuse_dtype)99, (scanfuse_dtype)-5);

    /* fusions */
    scanfuse_fusion_free(NULL);
    CHECK_ST(scanfuse_fusion_status(NULL), SCANFUSE_ERROR_STATE);
    CHECK(scanfuse_fusion_error(NULL) != NULL && strcmp(scanfuse_fusion_error(NULL), "no fusion") == 0);
    CHECK(scanfuse_input(NULL, "x", SCANFUSE_FLOAT32, 1, s5) == SCANFUSE_NO_VALUE);
    CHECK(scanfuse_op(NULL, "exp", &x, 1, NULL) == SCANFUSE_NO_VALUE);
    CHECK(scanfuse_op2(NULL, "cummax", &x, 1, "dim=0", vals) == SCANFUSE_ERROR_STATE);
    CHECK(scanfuse_scalar_int(NULL, 3) == SCANFUSE_NO_VALUE);
    CHECK(scanfuse_scalar_float(NULL, 3.5) == SCANFUSE_NO_VALUE);
    CHECK(scanfuse_cumsum(NULL, x, 0, SCANFUSE_DTYPE_NONE, 0) == SCANFUSE_NO_VALUE);
    CHECK(scanfuse_cumprod(NULL, x, 0, SCANFUSE_DTYPE_NONE, 0) == SCANFUSE_NO_VALUE);
    CHECK(scanfuse_logcumsumexp(NULL, x, 0, 0) == SCANFUSE_NO_VALUE);
    CHECK_ST(scanfuse_cummax(NULL, x, 0, 0, &vals[0], &vals[1]), SCANFUSE_ERROR_STATE);
    CHECK_ST(scanfuse_cummin(NULL, x, 0, 0, &vals[0], &vals[1]), SCANFUSE_ERROR_STATE);
    CHECK_ST(scanfuse_cummax(NULL, x, 0, 0, NULL, NULL), SCANFUSE_ERROR_STATE);
    CHECK_ST(scanfuse_output(NULL, x, "y"), SCANFUSE_ERROR_STATE);
    CHECK(scanfuse_fusion_num_inputs(NULL) <= 0);
    CHECK(scanfuse_fusion_num_outputs(NULL) <= 0);
    {
        const char *nm;
        int nd;
        int64_t sh[SCANFUSE_MAX_DIMS];
        CHECK_ST(scanfuse_fusion_input_info(NULL, 0, &nm, &dt, &nd, sh), SCANFUSE_ERROR_STATE);
        CHECK_ST(scanfuse_fusion_output_info(NULL, 0, &nm, &dt, &nd, sh), SCANFUSE_ERROR_STATE);
    }

    /* text */
    scanfuse_fusion *f = scanfuse_parse(NULL, NULL);
    CHECKF(f && scanfuse_fusion_status(f) != SCANFUSE_OK && scanfuse_fusion_error(f)[0],
           "scanfuse_parse(NULL): %s", f ? scanfuse_status_string(scanfuse_fusion_status(f)) : "NULL");
    scanfuse_fusion_free(f);
    f = scanfuse_parse("input x: float32[5]\ny = oops(x\n", NULL); /* NULL filename: "<text>" */
    CHECKF(f && sf_test_contains(scanfuse_fusion_error(f), "<text>:2:"), "parse with NULL filename: '%s'",
           f ? scanfuse_fusion_error(f) : "");
    scanfuse_fusion_free(f);
    f = scanfuse_parse_file(NULL);
    CHECKF(f && scanfuse_fusion_status(f) != SCANFUSE_OK, "scanfuse_parse_file(NULL)");
    scanfuse_fusion_free(f);
    CHECK(scanfuse_print(NULL) == NULL);

    /* options and compiling */
    scanfuse_options_init(NULL);
    scanfuse_cumsum_mode mode = SCANFUSE_CUMSUM_MASKED_SUM;
    CHECK_ST(scanfuse_cumsum_mode_parse(NULL, &mode), SCANFUSE_ERROR_ARGUMENT);
    CHECK_ST(scanfuse_cumsum_mode_parse("bogus", &mode), SCANFUSE_ERROR_ARGUMENT);
    CHECK(mode == SCANFUSE_CUMSUM_MASKED_SUM);
    st = scanfuse_cumsum_mode_parse("native", NULL);
    CHECKF(st == SCANFUSE_OK || st == SCANFUSE_ERROR_ARGUMENT, "cumsum_mode_parse with NULL out: %s", scanfuse_status_string(st));
    scanfuse_options opt;
    scanfuse_options_init(&opt);
    scanfuse_program *p = scanfuse_compile(NULL, &opt);
    CHECKF(p && scanfuse_program_status(p) == SCANFUSE_ERROR_STATE && scanfuse_program_error(p)[0],
           "compile(NULL): %s", p ? scanfuse_status_string(scanfuse_program_status(p)) : "NULL");
    CHECK_ST(scanfuse_run(p, NULL, 0, NULL, 0), SCANFUSE_ERROR_STATE);
    CHECK(scanfuse_program_ir(p) == NULL);
    scanfuse_program_free(p);
    scanfuse_program_free(NULL);
    CHECK_ST(scanfuse_program_status(NULL), SCANFUSE_ERROR_STATE);
    CHECK(scanfuse_program_error(NULL) != NULL);
    CHECK_ST(scanfuse_run(NULL, NULL, 0, NULL, 0), SCANFUSE_ERROR_STATE);
    CHECK(scanfuse_program_ir(NULL) == NULL);
    CHECK(scanfuse_program_segments(NULL) == NULL);
    CHECK(scanfuse_program_num_kernels(NULL) <= 0);
    CHECK(scanfuse_program_floor_bytes(NULL) <= 0);
    CHECK(scanfuse_program_moved_bytes(NULL) <= 0);

    /* compile with NULL options (defaults) or bad options */
    f = scanfuse_parse("input x: float32[5]\ny = cumsum(x, dim=0)\noutput y\n", "ok.sf");
    p = scanfuse_compile(f, NULL);
    st = p ? scanfuse_program_status(p) : SCANFUSE_ERROR_MEMORY;
    CHECKF(st == SCANFUSE_OK || st == SCANFUSE_ERROR_ARGUMENT, "compile with NULL options: %s", scanfuse_status_string(st));
    scanfuse_program_free(p);
    struct {
        int field;
        int value;
        const char *needle;
    } bad_opts[] = {{0, 7, "device"}, {0, -1, "device"}, {1, -3, "threads"}, {2, 9, "cumsum"}, {3, -2, NULL}};
    for (size_t i = 0; i < sizeof bad_opts / sizeof bad_opts[0]; i++) {
        scanfuse_options o;
        scanfuse_options_init(&o);
        if (bad_opts[i].field == 0) o.device = (scanfuse_device)bad_opts[i].value;
        else if (bad_opts[i].field == 1) o.threads = bad_opts[i].value;
        else if (bad_opts[i].field == 2) o.cumsum_mode = (scanfuse_cumsum_mode)bad_opts[i].value;
        else o.device_id = bad_opts[i].value;
        p = scanfuse_compile(f, &o);
        st = p ? scanfuse_program_status(p) : SCANFUSE_ERROR_MEMORY;
        if (bad_opts[i].field == 3) {
            /* a negative device id: the CPU ignores it, or it is rejected; no crash */
            CHECKF(st == SCANFUSE_OK || st == SCANFUSE_ERROR_ARGUMENT || st == SCANFUSE_ERROR_DEVICE,
                   "device_id -2: %s", scanfuse_status_string(st));
        } else {
            CHECKF(st == SCANFUSE_ERROR_ARGUMENT || st == SCANFUSE_ERROR_DEVICE || st == SCANFUSE_ERROR_UNSUPPORTED,
                   "bad option %d=%d: %s", bad_opts[i].field, bad_opts[i].value, scanfuse_status_string(st));
            CHECKF(sf_test_contains(p ? scanfuse_program_error(p) : NULL, bad_opts[i].needle),
                   "bad option %d=%d: message '%s' lacks '%s'", bad_opts[i].field, bad_opts[i].value,
                   p ? scanfuse_program_error(p) : "", bad_opts[i].needle);
            /* a program in error cannot run */
            CHECK_ST(scanfuse_run(p, NULL, 0, NULL, 0), SCANFUSE_ERROR_STATE);
            CHECK(scanfuse_program_ir(p) == NULL);
        }
        scanfuse_program_free(p);
    }
    scanfuse_fusion_free(f);
}

/* ---------------------------------------------------------------------------------- */
/* Run errors: every failed run leaves every output byte untouched                    */
/* ---------------------------------------------------------------------------------- */

typedef struct run_fixture {
    scanfuse_program *p;
    tbuf a, b;      /* inputs: a float32[3, 4], b float32[4] */
    tbuf y, z;      /* outputs: y = cumsum(a + b, dim=1) float32[3, 4], z = sum(a) float32[] */
    scanfuse_dl_tensor in[2], out[2];
} run_fixture;

static bool fixture_init(run_fixture *fx) {
    memset(fx, 0, sizeof *fx);
    scanfuse_fusion *f = scanfuse_parse("input a: float32[3, 4]\ninput b: float32[4]\n"
                                        "y = cumsum(add(a, b), dim=1)\nz = sum(a)\noutput y, z\n",
                                        "fixture.sf");
    if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
        CHECKF(0, "fixture: build failed: %s", f ? scanfuse_fusion_error(f) : "NULL");
        scanfuse_fusion_free(f);
        return false;
    }
    fx->p = scanfuse_compile(f, NULL);
    scanfuse_fusion_free(f);
    if (!fx->p || scanfuse_program_status(fx->p) != SCANFUSE_OK) {
        CHECKF(0, "fixture: compile failed: %s", fx->p ? scanfuse_program_error(fx->p) : "NULL");
        return false;
    }
    int64_t s34[2] = {3, 4}, s4[1] = {4};
    if (!tb_init(&fx->a, SCANFUSE_FLOAT32, 2, s34, L_CONTIG) || !tb_init(&fx->b, SCANFUSE_FLOAT32, 1, s4, L_CONTIG) ||
        !tb_init(&fx->y, SCANFUSE_FLOAT32, 2, s34, L_CONTIG) || !tb_init(&fx->z, SCANFUSE_FLOAT32, 0, NULL, L_CONTIG))
        return false;
    for (int i = 0; i < 12; i++) sf_store_f64(fx->a.base, i, SCANFUSE_FLOAT32, i + 1);
    for (int i = 0; i < 4; i++) sf_store_f64(fx->b.base, i, SCANFUSE_FLOAT32, 0.5 * i);
    fx->in[0] = fx->a.dl;
    fx->in[1] = fx->b.dl;
    fx->out[0] = fx->y.dl;
    fx->out[1] = fx->z.dl;
    return true;
}

static void fixture_free(run_fixture *fx) {
    scanfuse_program_free(fx->p);
    tb_free(&fx->a);
    tb_free(&fx->b);
    tb_free(&fx->y);
    tb_free(&fx->z);
}

/* Runs with the given tensors; checks the status is one of want[], the message contains
 * needle, and no output byte changed. */
static void expect_run_failure(run_fixture *fx, const char *what, const scanfuse_dl_tensor *in, int nin,
                               const scanfuse_dl_tensor *out, int nout, const scanfuse_status *want, int nwant,
                               const char *needle) {
    scanfuse_status st = scanfuse_run(fx->p, in, nin, out, nout);
    bool ok = false;
    for (int i = 0; i < nwant; i++) ok = ok || st == want[i];
    const char *msg = scanfuse_program_error(fx->p);
    CHECKF(ok, "%s: status '%s' (message: %s)", what, scanfuse_status_string(st), msg);
    if (st != SCANFUSE_OK) {
        CHECKF(msg && msg[0], "%s: no message", what);
        if (needle) CHECKF(sf_test_contains(msg, needle), "%s: message '%s' lacks '%s'", what, msg, needle);
    }
    CHECKF(tb_untouched(&fx->y) && tb_untouched(&fx->z), "%s: a failed run wrote an output", what);
    memset(fx->y.alloc, SW_CANARY, fx->y.alloc_len);
    memset(fx->z.alloc, SW_CANARY, fx->z.alloc_len);
}

static void run_errors(void) {
    run_fixture fx;
    if (!fixture_init(&fx)) {
        fixture_free(&fx);
        return;
    }
    static const scanfuse_status arg[] = {SCANFUSE_ERROR_ARGUMENT};
    static const scanfuse_status dtype[] = {SCANFUSE_ERROR_DTYPE, SCANFUSE_ERROR_ARGUMENT};
    static const scanfuse_status shape[] = {SCANFUSE_ERROR_SHAPE, SCANFUSE_ERROR_ARGUMENT};
    static const scanfuse_status device[] = {SCANFUSE_ERROR_DEVICE, SCANFUSE_ERROR_ARGUMENT, SCANFUSE_ERROR_UNSUPPORTED};
    scanfuse_dl_tensor in[3], out[3];

    /* counts and NULL arrays */
    expect_run_failure(&fx, "one input of two", fx.in, 1, fx.out, 2, arg, 1, "input");
    memcpy(in, fx.in, sizeof fx.in);
    in[2] = fx.in[0];
    expect_run_failure(&fx, "three inputs of two", in, 3, fx.out, 2, arg, 1, "input");
    expect_run_failure(&fx, "one output of two", fx.in, 2, fx.out, 1, arg, 1, "output");
    expect_run_failure(&fx, "no outputs", fx.in, 2, fx.out, 0, arg, 1, "output");
    expect_run_failure(&fx, "-1 inputs", fx.in, -1, fx.out, 2, arg, 1, "input");
    expect_run_failure(&fx, "NULL inputs", NULL, 2, fx.out, 2, arg, 1, "input");
    expect_run_failure(&fx, "NULL outputs", fx.in, 2, NULL, 2, arg, 1, "output");

#define RESET() do { memcpy(in, fx.in, sizeof fx.in); memcpy(out, fx.out, sizeof fx.out); } while (0)
    int64_t wrong_shape[2] = {3, 5}, wrong_ndim[3] = {3, 4, 1}, neg_strides[2] = {-4, 1}, out_s0[2] = {0, 1},
            ok_s0[1] = {0}, big_stride[2] = {INT64_MAX / 2, 1}, s1[2] = {1, 4};
    /* dtype */
    RESET();
    in[0].dtype.bits = 64;
    expect_run_failure(&fx, "input with dtype float64", in, 2, out, 2, dtype, 2, "'a'");
    RESET();
    out[0].dtype = scanfuse_dtype_to_dl(SCANFUSE_INT32);
    expect_run_failure(&fx, "output with dtype int32", in, 2, out, 2, dtype, 2, "'y'");
    RESET();
    in[1].dtype.code = SCANFUSE_DL_COMPLEX;
    in[1].dtype.bits = 64;
    expect_run_failure(&fx, "complex input (DLPack code 5)", in, 2, out, 2, dtype, 2, "complex");
    RESET();
    in[0].dtype.lanes = 2;
    expect_run_failure(&fx, "input with 2 lanes", in, 2, out, 2, dtype, 2, "'a'");
    /* shape and ndim */
    RESET();
    in[0].shape = wrong_shape;
    expect_run_failure(&fx, "input with shape [3, 5]", in, 2, out, 2, shape, 2, "'a'");
    RESET();
    out[0].shape = wrong_shape;
    expect_run_failure(&fx, "output with shape [3, 5]", in, 2, out, 2, shape, 2, "'y'");
    RESET();
    in[0].ndim = 3;
    in[0].shape = wrong_ndim;
    expect_run_failure(&fx, "input with 3 dims", in, 2, out, 2, shape, 2, "'a'");
    RESET();
    out[1].ndim = 1;
    out[1].shape = s1;
    expect_run_failure(&fx, "0-d output given 1 dim", in, 2, out, 2, shape, 2, "'z'");
    RESET();
    in[0].ndim = -1;
    expect_run_failure(&fx, "input with ndim -1", in, 2, out, 2, shape, 2, "'a'");
    RESET();
    in[0].ndim = 100;
    expect_run_failure(&fx, "input with ndim 100", in, 2, out, 2, shape, 2, "'a'");
    RESET();
    in[0].shape = NULL;
    expect_run_failure(&fx, "input with NULL shape", in, 2, out, 2, shape, 2, "'a'");
    /* strides */
    RESET();
    in[0].strides = neg_strides;
    expect_run_failure(&fx, "input with a negative stride", in, 2, out, 2, arg, 1, "stride");
    RESET();
    out[0].strides = neg_strides;
    expect_run_failure(&fx, "output with a negative stride", in, 2, out, 2, arg, 1, "stride");
    RESET();
    out[0].strides = out_s0;
    expect_run_failure(&fx, "output with stride 0 along a dim of size 3", in, 2, out, 2, arg, 1, "stride");
    RESET();
    in[0].strides = big_stride;
    {
        static const scanfuse_status big[] = {SCANFUSE_ERROR_ARGUMENT, SCANFUSE_ERROR_MEMORY, SCANFUSE_ERROR_SHAPE};
        expect_run_failure(&fx, "input with an overflowing stride", in, 2, out, 2, big, 3, "stride");
    }
    /* data */
    RESET();
    in[1].data = NULL;
    expect_run_failure(&fx, "input with NULL data", in, 2, out, 2, arg, 1, "'b'");
    RESET();
    out[1].data = NULL;
    expect_run_failure(&fx, "output with NULL data", in, 2, out, 2, arg, 1, "'z'");
    /* devices */
    RESET();
    in[0].device.device_type = SCANFUSE_DL_CUDA;
    expect_run_failure(&fx, "CUDA input to a CPU program", in, 2, out, 2, device, 3, "'a'");
    RESET();
    out[0].device.device_type = SCANFUSE_DL_CUDA_MANAGED;
    out[0].device.device_id = 3;
    expect_run_failure(&fx, "CUDA managed output to a CPU program", in, 2, out, 2, device, 3, "'y'");
    RESET();
    in[1].device.device_type = 99;
    expect_run_failure(&fx, "unknown device type", in, 2, out, 2, device, 3, "'b'");

    /* the program stays usable, and accepts what the header allows */
    RESET();
    scanfuse_status st = scanfuse_run(fx.p, in, 2, out, 2);
    CHECKF(st == SCANFUSE_OK, "good run after failed runs: %s (%s)", scanfuse_status_string(st), scanfuse_program_error(fx.p));
    double y0 = sf_load_f64(fx.y.base, 0, SCANFUSE_FLOAT32), y11 = sf_load_f64(fx.y.base, 11, SCANFUSE_FLOAT32),
           z = sf_load_f64(fx.z.base, 0, SCANFUSE_FLOAT32);
    CHECKF(y0 == 1.0 && y11 == 9 + 10.5 + 12 + 13.5 && z == 78.0,
           "good run values: y[0] %g, y[11] %g, z %g", y0, y11, z);
    CHECK(tb_find_damage(&fx.y) < 0 && tb_find_damage(&fx.z) < 0);
    /* stride 0 on an output dim of size 1, a broadcast input, and NULL data for an empty tensor */
    RESET();
    in[1].strides = ok_s0; /* b broadcast: every element is b[0] */
    st = scanfuse_run(fx.p, in, 2, out, 2);
    CHECKF(st == SCANFUSE_OK, "broadcast (stride 0) input: %s (%s)", scanfuse_status_string(st), scanfuse_program_error(fx.p));
    CHECKF(sf_load_f64(fx.y.base, 3, SCANFUSE_FLOAT32) == 1 + 2 + 3 + 4, "broadcast input: y[0, 3] = %g",
           sf_load_f64(fx.y.base, 3, SCANFUSE_FLOAT32));
    fixture_free(&fx);

    {
        scanfuse_fusion *f = scanfuse_parse("input x: float32[1, 5]\ninput e: int32[0, 3]\n"
                                            "y = cumsum(x, dim=1)\nw = sum(e, dim=0)\noutput y, w\n", "s0.sf");
        scanfuse_program *p = scanfuse_compile(f, NULL);
        int64_t sx[2] = {1, 5}, se[2] = {0, 3}, sw[1] = {3}, st0[2] = {0, 1};
        tbuf x, y, w;
        float xv[5] = {1, 2, 3, 4, 5};
        bool ok = tb_init(&x, SCANFUSE_FLOAT32, 2, sx, L_CONTIG) && tb_init(&y, SCANFUSE_FLOAT32, 2, sx, L_CONTIG) &&
                  tb_init(&w, SCANFUSE_INT64, 1, sw, L_CONTIG);
        if (ok && p && scanfuse_program_status(p) == SCANFUSE_OK) {
            memcpy(x.base, xv, sizeof xv);
            scanfuse_dl_tensor e = {NULL, {SCANFUSE_DL_CPU, 0}, 2, scanfuse_dtype_to_dl(SCANFUSE_INT32), se, NULL, 0};
            scanfuse_dl_tensor ins[2] = {x.dl, e}, outs[2] = {y.dl, w.dl};
            outs[0].strides = st0; /* stride 0 along the dim of size 1 */
            st = scanfuse_run(p, ins, 2, outs, 2);
            CHECKF(st == SCANFUSE_OK, "output stride 0 on a size-1 dim, NULL data of an empty input: %s (%s)",
                   scanfuse_status_string(st), scanfuse_program_error(p));
            CHECKF(sf_load_f64(y.base, 4, SCANFUSE_FLOAT32) == 15.0 && sf_load_i64(w.base, 2, SCANFUSE_INT64) == 0,
                   "values: %g %lld", sf_load_f64(y.base, 4, SCANFUSE_FLOAT32), (long long)sf_load_i64(w.base, 2, SCANFUSE_INT64));
        } else {
            CHECKF(0, "stride-0 fixture failed: %s", p ? scanfuse_program_error(p) : scanfuse_fusion_error(f));
        }
        tb_free(&x);
        tb_free(&y);
        tb_free(&w);
        scanfuse_program_free(p);
        scanfuse_fusion_free(f);
    }
#undef RESET
}

/* Integer division by zero at run time: SCANFUSE_ERROR_VALUE, outputs untouched, also when
 * an output aliases an input. */
static void division_by_zero(void) {
    static const char *const ops[] = {"remainder", "floor_divide"};
    static const scanfuse_dtype dts[] = {SCANFUSE_UINT8, SCANFUSE_INT8, SCANFUSE_INT16, SCANFUSE_INT32, SCANFUSE_INT64};
    for (int o = 0; o < 2; o++)
        for (int d = 0; d < 5; d++) {
            char text[256];
            const char *nm = scanfuse_dtype_name(dts[d]);
            snprintf(text, sizeof text, "input a: %s[64]\ninput b: %s[64]\ny = %s(a, b)\nc = cumsum(a, dim=0)\noutput y, c\n",
                     nm, nm, ops[o]);
            scanfuse_fusion *f = scanfuse_parse(text, "div.sf");
            scanfuse_program *p = scanfuse_compile(f, NULL);
            if (!p || scanfuse_program_status(p) != SCANFUSE_OK) {
                CHECKF(0, "%s %s: compile failed: %s", ops[o], nm, p ? scanfuse_program_error(p) : "NULL");
                scanfuse_program_free(p);
                scanfuse_fusion_free(f);
                continue;
            }
            int64_t s[1] = {64};
            tbuf a, b, y, c;
            tb_init(&a, dts[d], 1, s, L_CONTIG);
            tb_init(&b, dts[d], 1, s, L_CONTIG);
            tb_init(&y, dts[d], 1, s, L_CONTIG);
            tb_init(&c, SCANFUSE_INT64, 1, s, L_CONTIG);
            for (int pos = 0; pos < 64; pos += 21) { /* the zero at the start, middle and end */
                for (int i = 0; i < 64; i++) {
                    sf_store_i64(a.base, i, dts[d], i % 7 + 1);
                    sf_store_i64(b.base, i, dts[d], i == pos || (pos == 63 && i == 63) ? 0 : i % 3 + 1);
                }
                scanfuse_dl_tensor in[2] = {a.dl, b.dl}, out[2] = {y.dl, c.dl};
                scanfuse_status st = scanfuse_run(p, in, 2, out, 2);
                CHECKF(st == SCANFUSE_ERROR_VALUE, "%s %s, zero at %d: status %s (%s)", ops[o], nm, pos,
                       scanfuse_status_string(st), scanfuse_program_error(p));
                CHECKF(sf_test_contains(scanfuse_program_error(p), ops[o]) &&
                           sf_test_contains(scanfuse_program_error(p), "division by zero"),
                       "%s %s: message '%s'", ops[o], nm, scanfuse_program_error(p));
                CHECKF(tb_untouched(&y) && tb_untouched(&c), "%s %s, zero at %d: a failed run wrote an output", ops[o], nm, pos);
                /* the output aliasing input a: a must be unchanged after the failure */
                unsigned char saved[64 * 8];
                memcpy(saved, a.base, (size_t)64 * a.esize);
                out[0] = a.dl;
                st = scanfuse_run(p, in, 2, out, 2);
                CHECKF(st == SCANFUSE_ERROR_VALUE && memcmp(saved, a.base, (size_t)64 * a.esize) == 0 && tb_untouched(&c),
                       "%s %s: failed run with y aliasing a: %s, or a buffer changed", ops[o], nm, scanfuse_status_string(st));
            }
            /* and without a zero the same program runs (also in place) */
            for (int i = 0; i < 64; i++) sf_store_i64(b.base, i, dts[d], i % 3 + 1);
            scanfuse_dl_tensor in[2] = {a.dl, b.dl}, out[2] = {y.dl, c.dl};
            scanfuse_status st = scanfuse_run(p, in, 2, out, 2);
            CHECKF(st == SCANFUSE_OK, "%s %s without a zero: %s (%s)", ops[o], nm, scanfuse_status_string(st), scanfuse_program_error(p));
            out[0] = a.dl; /* in place: every output is computed before any is written */
            st = scanfuse_run(p, in, 2, out, 2);
            bool same = st == SCANFUSE_OK;
            for (int i = 0; i < 64 && same; i++) same = sf_load_i64(a.base, i, dts[d]) == sf_load_i64(y.base, i, dts[d]);
            CHECKF(same, "%s %s: in-place run differs from the out-of-place one", ops[o], nm);
            tb_free(&a);
            tb_free(&b);
            tb_free(&y);
            tb_free(&c);
            scanfuse_program_free(p);
            scanfuse_fusion_free(f);
        }
    /* the reference evaluator reports it the same way */
    scanfuse_fusion *f = scanfuse_parse("input a: int32[4]\ninput b: int32[4]\ny = remainder(a, b)\noutput y\n", "div.sf");
    scanfuse_options opt;
    scanfuse_options_init(&opt);
    opt.device = SCANFUSE_DEVICE_REFERENCE;
    scanfuse_program *p = scanfuse_compile(f, &opt);
    int32_t av[4] = {1, 2, 3, 4}, bv[4] = {1, 0, 1, 1};
    int64_t s4[1] = {4};
    tbuf y;
    tb_init(&y, SCANFUSE_INT32, 1, s4, L_CONTIG);
    scanfuse_dl_tensor in[2] = {{av, {SCANFUSE_DL_CPU, 0}, 1, {SCANFUSE_DL_INT, 32, 1}, s4, NULL, 0},
                                {bv, {SCANFUSE_DL_CPU, 0}, 1, {SCANFUSE_DL_INT, 32, 1}, s4, NULL, 0}};
    scanfuse_status st = p ? scanfuse_run(p, in, 2, &y.dl, 1) : SCANFUSE_ERROR_MEMORY;
    CHECKF(st == SCANFUSE_ERROR_VALUE && tb_untouched(&y), "reference: remainder by zero: %s", scanfuse_status_string(st));
    tb_free(&y);
    scanfuse_program_free(p);
    scanfuse_fusion_free(f);
}

/* ---------------------------------------------------------------------------------- */
/* CUDA without a GPU backend, and the first error kept                               */
/* ---------------------------------------------------------------------------------- */

static void cuda_device(void) {
    scanfuse_fusion *f = scanfuse_parse("input x: float32[5]\ny = cumsum(x, dim=0)\noutput y\n", "cuda.sf");
    scanfuse_options opt;
    scanfuse_options_init(&opt);
    opt.device = SCANFUSE_DEVICE_CUDA;
    scanfuse_program *p = scanfuse_compile(f, &opt);
    scanfuse_status st = p ? scanfuse_program_status(p) : SCANFUSE_ERROR_MEMORY;
    if (st == SCANFUSE_OK) {
        printf("note: a CUDA device compiled here; the CUDA error path is not exercised\n");
    } else {
        CHECKF(st == SCANFUSE_ERROR_DEVICE || st == SCANFUSE_ERROR_UNSUPPORTED, "compile for cuda: %s (%s)",
               scanfuse_status_string(st), scanfuse_program_error(p));
        const char *msg = scanfuse_program_error(p);
        CHECKF(msg && strlen(msg) > 10 && (sf_test_contains(msg, "cuda") || sf_test_contains(msg, "CUDA")),
               "compile for cuda: message '%s' does not say why", msg);
        CHECK_ST(scanfuse_run(p, NULL, 0, NULL, 0), SCANFUSE_ERROR_STATE);
        CHECK(scanfuse_program_ir(p) == NULL);
    }
    scanfuse_program_free(p);
    scanfuse_fusion_free(f);
#ifdef SF_CLI_PATH
    /* the CLI answers --device cuda with a one-line message and a non-zero exit, no crash */
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof cmd, "'%s' run '%s/examples/cumsum.sf' --device cuda", SF_CLI_PATH, SF_SOURCE_DIR);
    FILE *probe = fopen(SF_SOURCE_DIR "/examples/cumsum.sf", "r");
    FILE *cli = fopen(SF_CLI_PATH, "rb");
    if (cli) fclose(cli);
    if (probe) fclose(probe);
    if (probe && cli) {
        int rc = sf_test_run_command(cmd, out, sizeof out);
        if (rc == 0) {
            printf("note: the CLI ran on CUDA here\n");
        } else {
            CHECKF(rc > 0 && rc < 128, "scanfuse run --device cuda: exit status %d (crash?): %s", rc, out);
            CHECKF(sf_test_contains(out, "cuda") || sf_test_contains(out, "CUDA"), "scanfuse run --device cuda: '%s'", out);
        }
    }
#endif
}

static void first_error_kept(void) {
    int64_t s34[2] = {3, 4};
    scanfuse_fusion *f = scanfuse_fusion_new();
    scanfuse_value x = scanfuse_input(f, "x", SCANFUSE_FLOAT32, 2, s34);
    scanfuse_value ok = scanfuse_cumsum(f, x, 1, SCANFUSE_DTYPE_NONE, 0);
    CHECK(ok != SCANFUSE_NO_VALUE);
    CHECK(scanfuse_cumsum(f, x, 7, SCANFUSE_DTYPE_NONE, 0) == SCANFUSE_NO_VALUE); /* first error */
    char first[512];
    snprintf(first, sizeof first, "%s", scanfuse_fusion_error(f));
    CHECKF(sf_test_contains(first, "dim 7"), "first error: '%s'", first);
    /* later calls, good or bad, do nothing and return NO_VALUE / the first status */
    CHECK(scanfuse_logcumsumexp(f, x, 0, 0) == SCANFUSE_NO_VALUE);
    scanfuse_value args[2] = {x, x};
    CHECK(scanfuse_op(f, "add", args, 2, NULL) == SCANFUSE_NO_VALUE);
    CHECK(scanfuse_op(f, "nonexistent", args, 2, NULL) == SCANFUSE_NO_VALUE);
    CHECK(scanfuse_input(f, "z", SCANFUSE_INT32, 1, s34) == SCANFUSE_NO_VALUE);
    CHECK(scanfuse_input(f, "9bad", (scanfuse_dtype)50, -1, NULL) == SCANFUSE_NO_VALUE);
    CHECK(scanfuse_scalar_int(f, 1) == SCANFUSE_NO_VALUE);
    CHECK(scanfuse_scalar_float(f, 1.0) == SCANFUSE_NO_VALUE);
    scanfuse_value pair[2] = {5, 5};
    CHECK_ST(scanfuse_op2(f, "cummax", &x, 1, "dim=0", pair), SCANFUSE_ERROR_ARGUMENT);
    CHECK(pair[0] == SCANFUSE_NO_VALUE && pair[1] == SCANFUSE_NO_VALUE);
    scanfuse_value v1 = 5, v2 = 5;
    CHECK_ST(scanfuse_cummin(f, x, 0, 0, &v1, &v2), SCANFUSE_ERROR_ARGUMENT);
    CHECK(v1 == SCANFUSE_NO_VALUE && v2 == SCANFUSE_NO_VALUE);
    CHECK_ST(scanfuse_output(f, ok, "y"), SCANFUSE_ERROR_ARGUMENT);
    CHECK_ST(scanfuse_fusion_status(f), SCANFUSE_ERROR_ARGUMENT);
    CHECKF(strcmp(first, scanfuse_fusion_error(f)) == 0, "the first error changed: '%s' -> '%s'", first,
           scanfuse_fusion_error(f));
    CHECK(scanfuse_fusion_num_outputs(f) == 0);
    CHECK(scanfuse_print(f) == NULL);
    scanfuse_program *p = scanfuse_compile(f, NULL);
    CHECKF(p && scanfuse_program_status(p) == SCANFUSE_ERROR_STATE && sf_test_contains(scanfuse_program_error(p), "dim 7"),
           "compile of a fusion in error: %s '%s'", p ? scanfuse_status_string(scanfuse_program_status(p)) : "NULL",
           p ? scanfuse_program_error(p) : "");
    scanfuse_program_free(p);
    scanfuse_fusion_free(f);

    /* the same through the text form: the first bad line is reported */
    f = scanfuse_parse("input x: float32[3, 4]\ny = cumsum(x, dim=9)\nz = logcumsumexp(cast(x, dtype=int32), dim=0)\noutput y\n",
                       "first.sf");
    CHECKF(f && scanfuse_fusion_status(f) == SCANFUSE_ERROR_ARGUMENT && sf_test_contains(scanfuse_fusion_error(f), "first.sf:2:"),
           "text: first error: %s '%s'", f ? scanfuse_status_string(scanfuse_fusion_status(f)) : "NULL",
           f ? scanfuse_fusion_error(f) : "");
    scanfuse_fusion_free(f);
}

int main(void) {
    text_errors();
    api_errors();
    null_pointers();
    run_errors();
    division_by_zero();
    cuda_device();
    first_error_kept();
    return sf_test_finish("test_bad_input");
}
