/*
 * test_ref.c — the reference evaluator (SCANFUSE_DEVICE_REFERENCE) against results
 * computed by hand, one small program per op family, through the public API: text
 * form -> scanfuse_parse -> scanfuse_compile -> scanfuse_run on DLTensors.
 *
 * Besides plain values it checks what only the oracle promises: exact scans (a
 * bfloat16 cumsum rounded once from the exact prefix sum), the raw float64/int64
 * outputs (the value before its final rounding or wrapping), strided and unaligned
 * inputs, and that a run-time error leaves the outputs untouched.
 */
#include "harness.h"
#include "sf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 4
#define SENTINEL (-777.0)

/* Values in, values out: ins[i] holds input i's elements (row-major) as doubles,
 * stored into the declared dtype; outs[i] receives output i read back as doubles
 * from a buffer of dtype outdt[i] (SCANFUSE_DTYPE_NONE: the declared dtype), which
 * starts filled with SENTINEL.  Returns the status of the run (or of the step before
 * it that failed, reported through CHECK). */
static scanfuse_status run_text(const char *text, const double *const *ins,
                                const scanfuse_dtype *outdt, double **outs) {
    scanfuse_fusion *f = scanfuse_parse(text, "test_ref");
    scanfuse_status st = scanfuse_fusion_status(f);
    CHECKF(st == SCANFUSE_OK, "parse: %s\n%s", scanfuse_fusion_error(f), text);
    if (st != SCANFUSE_OK) {
        scanfuse_fusion_free(f);
        return st;
    }
    scanfuse_options opt;
    scanfuse_options_init(&opt);
    opt.device = SCANFUSE_DEVICE_REFERENCE;
    scanfuse_program *p = scanfuse_compile(f, &opt);
    st = scanfuse_program_status(p);
    CHECKF(st == SCANFUSE_OK, "compile: %s", scanfuse_program_error(p));
    int nin = scanfuse_fusion_num_inputs(f), nout = scanfuse_fusion_num_outputs(f);
    scanfuse_dl_tensor ti[MAXT], to[MAXT];
    int64_t ishape[MAXT][SCANFUSE_MAX_DIMS], oshape[MAXT][SCANFUSE_MAX_DIMS];
    void *ibuf[MAXT] = {0}, *obuf[MAXT] = {0};
    int64_t on[MAXT] = {0};
    scanfuse_dtype odt[MAXT];
    if (st == SCANFUSE_OK && (nin > MAXT || nout > MAXT)) st = SCANFUSE_ERROR_ARGUMENT;
    for (int i = 0; st == SCANFUSE_OK && i < nin; i++) {
        const char *name;
        scanfuse_dtype dt;
        int nd;
        scanfuse_fusion_input_info(f, i, &name, &dt, &nd, ishape[i]);
        int64_t n = 1;
        for (int d = 0; d < nd; d++) n *= ishape[i][d];
        ibuf[i] = calloc((size_t)n + 1, 8);
        for (int64_t k = 0; k < n; k++) sf_store_f64(ibuf[i], k, dt, ins[i][k]);
        memset(&ti[i], 0, sizeof ti[i]);
        ti[i].data = ibuf[i];
        ti[i].device.device_type = SCANFUSE_DL_CPU;
        ti[i].ndim = nd;
        ti[i].dtype = scanfuse_dtype_to_dl(dt);
        ti[i].shape = ishape[i];
    }
    for (int i = 0; st == SCANFUSE_OK && i < nout; i++) {
        const char *name;
        scanfuse_dtype dt;
        int nd;
        scanfuse_fusion_output_info(f, i, &name, &dt, &nd, oshape[i]);
        odt[i] = (outdt && outdt[i] != SCANFUSE_DTYPE_NONE) ? outdt[i] : dt;
        on[i] = 1;
        for (int d = 0; d < nd; d++) on[i] *= oshape[i][d];
        obuf[i] = calloc((size_t)on[i] + 1, 8);
        for (int64_t k = 0; k < on[i]; k++) sf_store_f64(obuf[i], k, odt[i], SENTINEL);
        memset(&to[i], 0, sizeof to[i]);
        to[i].data = obuf[i];
        to[i].device.device_type = SCANFUSE_DL_CPU;
        to[i].ndim = nd;
        to[i].dtype = scanfuse_dtype_to_dl(odt[i]);
        to[i].shape = oshape[i];
    }
    if (st == SCANFUSE_OK) st = scanfuse_run(p, ti, nin, to, nout);
    for (int i = 0; i < nout && i < MAXT; i++) {
        for (int64_t k = 0; obuf[i] && k < on[i]; k++) outs[i][k] = sf_load_f64(obuf[i], k, odt[i]);
        free(obuf[i]);
    }
    for (int i = 0; i < nin && i < MAXT; i++) free(ibuf[i]);
    scanfuse_program_free(p);
    scanfuse_fusion_free(f);
    return st;
}

static void expect(const char *what, const double *got, const double *want, int n) {
    for (int i = 0; i < n; i++) {
        bool ok = got[i] == want[i] || (isnan(got[i]) && isnan(want[i]));
        CHECKF(ok, "%s[%d]: got %.17g, want %.17g", what, i, got[i], want[i]);
    }
}

#define D(...) ((const double[]){__VA_ARGS__})
#define IN(...) ((const double *const[]){__VA_ARGS__})

static double o0[64], o1[64], o2[64], o3[64];
static double *outs[4] = {o0, o1, o2, o3};

/* Runs and expects success. */
static void ok_run(const char *text, const double *const *ins, const scanfuse_dtype *od) {
    scanfuse_status st = run_text(text, ins, od, outs);
    CHECKF(st == SCANFUSE_OK, "run failed (%s):\n%s", scanfuse_status_string(st), text);
}

static void test_cumsum(void) {
    ok_run("input x: float32[3]\n"
           "a = cumsum(x, 0)\n"
           "b = cumsum(x, 0, exclusive=true)\n"
           "c = cumsum(x, 0, reverse=true)\n"
           "d = cumsum(x, 0, exclusive=true, reverse=true)\n"
           "output a, b, c, d\n",
           IN(D(1, 2, 3)), NULL);
    expect("cumsum", o0, D(1, 3, 6), 3);
    expect("cumsum exclusive", o1, D(0, 1, 3), 3);
    expect("cumsum reverse", o2, D(6, 5, 3), 3);
    expect("cumsum exclusive reverse", o3, D(5, 3, 0), 3);

    /* 2-d along each dim; an integer input gives int64 */
    ok_run("input x: int32[2, 3]\n"
           "a = cumsum(x, 1)\n"
           "b = cumsum(x, -2)\n"
           "output a, b\n",
           IN(D(1, 2, 3, 4, 5, 6)), NULL);
    expect("cumsum dim 1", o0, D(1, 3, 6, 4, 9, 15), 6);
    expect("cumsum dim -2", o1, D(1, 2, 3, 5, 7, 9), 6);

    /* int32 result wraps like two's complement; the int64 output shows the raw sum */
    const char *wrap = "input x: int32[2]\ny = cumsum(x, 0, dtype=int32)\noutput y\n";
    ok_run(wrap, IN(D(2147483647, 1)), NULL);
    expect("int32 cumsum wraps", o0, D(2147483647, -2147483648.0), 2);
    ok_run(wrap, IN(D(2147483647, 1)), (const scanfuse_dtype[]){SCANFUSE_INT64});
    expect("int32 cumsum raw", o0, D(2147483647, 2147483648.0), 2);

    /* bfloat16 (8 significant bits): 1 + 2^-8 is a tie (rounds to 1), 1 + 2^-8 + 2^-30
     * is above it (rounds up to 1 + 2^-7).  Accumulating in bfloat16 would give
     * 1, 1, 1; accumulating in float32 then rounding gives 1, 1, 1 too (float32
     * rounds 1 + 2^-8 + 2^-30 to the tie, then ties-to-even). */
    const char *bf = "input x: bfloat16[3]\ny = cumsum(x, 0)\noutput y\n";
    ok_run(bf, IN(D(1, 0x1p-8, 0x1p-30)), NULL);
    expect("bf16 cumsum exact", o0, D(1, 1, 1.0078125), 3);
    ok_run(bf, IN(D(1, 0x1p-8, 0x1p-30)), (const scanfuse_dtype[]){SCANFUSE_FLOAT64});
    expect("bf16 cumsum raw", o0, D(1, 1 + 0x1p-8, 1 + 0x1p-8 + 0x1p-30), 3);

    /* float32: 2^24 + 1 is a tie (-> 2^24), 2^24 + 2 is exact */
    ok_run("input x: float32[3]\ny = cumsum(x, 0)\noutput y\n", IN(D(0x1p24, 1, 1)), NULL);
    expect("f32 cumsum exact", o0, D(0x1p24, 0x1p24, 0x1p24 + 2), 3);

    /* float64 cancellation is exact; infinities and NaN propagate like IEEE */
    const char *f64 = "input x: float64[4]\ny = cumsum(x, 0)\noutput y\n";
    ok_run(f64, IN(D(1e100, 1, -1e100, 0x1p-1074)), NULL);
    expect("f64 cancellation", o0, D(1e100, 1e100, 1, 1), 4);
    ok_run(f64, IN(D(0.1, 0.2, 0.3, -0.6)), NULL);
    expect("f64 exact rounding", o0, D(0.1, 0.30000000000000004, 0.6, 2.7755575615628914e-17), 4);
    ok_run(f64, IN(D(1, INFINITY, 1, -INFINITY)), NULL);
    expect("cumsum inf", o0, D(1, INFINITY, INFINITY, NAN), 4);
    ok_run(f64, IN(D(1, NAN, 1, 2)), NULL);
    expect("cumsum nan", o0, D(1, NAN, NAN, NAN), 4);

    /* bool input, dtype conversion first (float -> int8 truncates, then wraps) */
    ok_run("input x: bool[4]\ny = cumsum(x, 0)\noutput y\n", IN(D(1, 0, 1, 1)), NULL);
    expect("bool cumsum", o0, D(1, 1, 2, 3), 4);
    ok_run("input x: float32[3]\ny = cumsum(x, 0, dtype=int8)\noutput y\n",
           IN(D(100.7, 27.9, 1.5)), NULL);
    expect("cumsum dtype=int8", o0, D(100, 127, -128), 3);

    /* 0-d: a converted copy, even when exclusive; empty: empty */
    ok_run("input x: int8[]\ny = cumsum(x, 0, exclusive=true)\noutput y\n", IN(D(-5)), NULL);
    expect("0-d cumsum", o0, D(-5), 1);
    ok_run("input x: float32[0, 3]\ny = cumsum(x, 1)\nz = sum(x, 0)\noutput y, z\n",
           IN(D(0)), NULL);
    expect("sum over an empty dim", o1, D(0, 0, 0), 3);
}

static void test_other_scans(void) {
    const char *cm = "input x: float32[4]\nv, i = cummax(x, 0)\noutput v, i\n";
    ok_run(cm, IN(D(1, 3, 3, 2)), NULL);
    expect("cummax", o0, D(1, 3, 3, 3), 4);
    expect("cummax ties -> later index", o1, D(0, 1, 2, 2), 4);
    ok_run("input x: float32[4]\nv, i = cummax(x, 0, reverse=true)\noutput v, i\n",
           IN(D(1, 3, 3, 2)), NULL);
    expect("cummax reverse", o0, D(3, 3, 3, 2), 4);
    expect("cummax reverse ties -> smaller index", o1, D(1, 1, 2, 3), 4);
    ok_run(cm, IN(D(1, NAN, 5, NAN)), NULL);
    expect("cummax nan", o0, D(1, NAN, NAN, NAN), 4);
    expect("cummax nan index", o1, D(0, 1, 1, 3), 4);
    ok_run("input x: float32[4]\nv, i = cummin(x, 0, exclusive=true)\noutput v, i\n",
           IN(D(2, 1, 1, 0)), NULL);
    expect("cummin exclusive", o0, D(INFINITY, 2, 1, 1), 4);
    expect("cummin exclusive index", o1, D(-1, 0, 1, 2), 4);
    ok_run("input x: int8[3]\nv, i = cummax(x, 0, exclusive=true)\noutput v, i\n",
           IN(D(-3, 5, 5)), NULL);
    expect("int8 cummax exclusive", o0, D(-128, -3, 5), 3);
    expect("int8 cummax exclusive index", o1, D(-1, 0, 1), 3);

    ok_run("input x: int16[4]\ny = cumprod(x, 0)\nz = cumprod(x, 0, dtype=int16, exclusive=true)\n"
           "output y, z\n",
           IN(D(2, -3, 300, 100)), NULL);
    expect("cumprod", o0, D(2, -6, -1800, -180000), 4);
    expect("cumprod int16 exclusive", o1, D(1, 2, -6, -1800), 4);

    ok_run("input x: float64[3]\ny = logcumsumexp(x, 0)\noutput y\n", IN(D(0, 0, -INFINITY)), NULL);
    expect("logcumsumexp", o0, D(0, log(2.0), log(2.0)), 3);
    ok_run("input x: float64[2]\ny = logcumsumexp(x, 0, exclusive=true)\noutput y\n",
           IN(D(INFINITY, INFINITY)), NULL);
    expect("logcumsumexp exclusive inf", o0, D(-INFINITY, INFINITY), 2);
}

static void test_pointwise(void) {
    /* remainder and floor_divide: Python semantics */
    const char *div = "input a: int64[4]\ninput b: int64[4]\n"
                      "r = remainder(a, b)\nq = floor_divide(a, b)\noutput r, q\n";
    ok_run(div, IN(D(-7, 7, -7, 7), D(3, -3, -3, 2)), NULL);
    expect("int remainder", o0, D(2, -2, -1, 1), 4);
    expect("int floor_divide", o1, D(-3, -3, 2, 3), 4);
    scanfuse_status st = run_text(div, IN(D(-7, 7, -7, 7), D(3, 0, -3, 2)), NULL, outs);
    CHECK_STATUS(st, SCANFUSE_ERROR_VALUE);
    expect("division by zero leaves outputs untouched", o0, D(SENTINEL, SENTINEL, SENTINEL, SENTINEL), 4);
    ok_run("input a: float32[4]\ninput b: float32[4]\nr = remainder(a, b)\nq = floor_divide(a, b)\n"
           "output r, q\n",
           IN(D(-5.5, 5.5, 1, -7), D(2, -2, 0, 2)), NULL);
    expect("float remainder", o0, D(0.5, -0.5, NAN, 1), 4);
    expect("float floor_divide", o1, D(-3, -3, INFINITY, -4), 4);

    /* broadcasting, type promotion, weak scalars */
    ok_run("input a: int32[2, 1]\ninput b: float16[3]\ny = add(a, b)\nz = mul(a, 2.5)\noutput y, z\n",
           IN(D(1, 2), D(0.5, 1, 2049)), NULL);
    expect("broadcast add (int32 + float16 -> float16)", o0, D(1.5, 2, 2048, 2.5, 3, 2050), 6);
    expect("int32 * 2.5 -> float32", o1, D(2.5, 5), 2);
    ok_run("input x: float64[2]\ny = add(x, 0.1)\noutput y\n", IN(D(1, 2)), NULL);
    expect("weak float scalar keeps float64", o0, D(1.1, 2.1), 2);
    ok_run("input x: int8[3]\ny = neg(x)\nz = abs(x)\noutput y, z\n", IN(D(-128, 5, -3)), NULL);
    expect("int8 neg wraps", o0, D(-128, -5, 3), 3);
    expect("int8 abs wraps", o1, D(-128, 5, 3), 3);

    ok_run("input c: bool[3]\ninput x: int32[3]\ninput y: float16[3]\n"
           "w = where(c, x, y)\nl = lt(x, y)\nm = maximum(y, x)\noutput w, l, m\n",
           IN(D(1, 0, 1), D(2049, 5, 7), D(0.5, 0.25, NAN)), NULL);
    expect("where (int32 -> float16 rounds)", o0, D(2048, 0.25, 7), 3);
    expect("lt", o1, D(0, 0, 0), 3);
    expect("maximum with NaN", o2, D(2048, 5, NAN), 3);

    ok_run("input x: int32[4]\ninput e: int32[4]\ny = pow(x, e)\noutput y\n",
           IN(D(3, -1, 2, 5), D(4, -3, -1, 0)), NULL);
    expect("int pow", o0, D(81, -1, 0, 1), 4);

    ok_run("input x: float32[4]\na = cast(x, int8)\nb = cast(x, bool)\nc = isnan(x)\noutput a, b, c\n",
           IN(D(-1.5, 0, 300.7, NAN)), NULL);
    expect("cast float32 -> int8", o0, D(-1, 0, 44, 0), 4);
    expect("cast float32 -> bool", o1, D(1, 0, 1, 1), 4);
    expect("isnan", o2, D(0, 0, 0, 1), 4);
    /* raw output of a rounded float: float64 view of a float16 result */
    ok_run("input x: float64[2]\ny = cast(x, float16)\noutput y\n", IN(D(0.1, 65520)),
           (const scanfuse_dtype[]){SCANFUSE_FLOAT64});
    expect("cast raw", o0, D(0.1, 65520), 2);
    ok_run("input x: float64[2]\ny = cast(x, float16)\noutput y\n", IN(D(0.1, 65520)), NULL);
    expect("cast to float16", o0, D(0.0999755859375, INFINITY), 2);
}

static void test_reductions(void) {
    ok_run("input x: float16[2, 3]\n"
           "s = sum(x, 1, keepdim=true)\nm = mean(x)\np = prod(x, 0)\nmx = max(x, [0, 1])\n"
           "output s, m, p, mx\n",
           IN(D(1, 2, 3, 4, 5, 6)), NULL);
    expect("sum keepdim", o0, D(6, 15), 2);
    expect("mean", o1, D(3.5), 1);
    expect("prod", o2, D(4, 10, 18), 3);
    expect("max", o3, D(6), 1);
    ok_run("input x: float32[2, 2]\na = max(x, 1)\nb = min(x, 0)\noutput a, b\n",
           IN(D(1, NAN, 3, 2)), NULL);
    expect("max nan", o0, D(NAN, 3), 2);
    expect("min nan", o1, D(1, NAN), 2);
    ok_run("input x: int8[4]\ns = sum(x)\ns8 = sum(x, dtype=int8)\noutput s, s8\n",
           IN(D(100, 100, 100, -1)), NULL);
    expect("int sum -> int64", o0, D(299), 1);
    expect("int8 sum wraps", o1, D(43), 1);

    const char *am = "input x: float32[4]\na = argmax(x)\nb = argmin(x)\noutput a, b\n";
    ok_run(am, IN(D(1, 3, 3, 0)), NULL);
    expect("argmax first occurrence", o0, D(1), 1);
    expect("argmin", o1, D(3), 1);
    ok_run(am, IN(D(1, NAN, 3, NAN)), NULL);
    expect("argmax nan", o0, D(1), 1);
    expect("argmin nan", o1, D(1), 1);
    ok_run("input x: int32[2, 3]\na = argmax(x, 1)\nb = argmin(x, 0, keepdim=true)\nc = argmax(x)\n"
           "output a, b, c\n",
           IN(D(5, 7, 7, 9, 1, 9)), NULL);
    expect("argmax dim 1", o0, D(1, 0), 2);
    expect("argmin dim 0 keepdim", o1, D(0, 1, 0), 3);
    expect("argmax flattened", o2, D(3), 1);
}

static void test_matmul(void) {
    ok_run("input a: float32[2, 3]\ninput b: float32[3, 2]\ny = matmul(a, b)\noutput y\n",
           IN(D(1, 2, 3, 4, 5, 6), D(7, 8, 9, 10, 11, 12)), NULL);
    expect("matmul 2x3 @ 3x2", o0, D(58, 64, 139, 154), 4);
    ok_run("input a: int32[2, 2, 3]\ninput v: int32[3]\ny = matmul(a, v)\nz = matmul(v, v)\n"
           "output y, z\n",
           IN(D(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12), D(1, 0, -1)), NULL);
    expect("batched matmul @ vector", o0, D(-2, -2, -2, -2), 4);
    expect("dot", o1, D(2), 1);
    ok_run("input a: float64[1, 2, 2]\ninput b: float64[3, 2, 1]\ny = matmul(a, b)\noutput y\n",
           IN(D(1, 2, 3, 4), D(1, 1, 0, 1, 1e17, 1)), NULL);
    expect("broadcast batch matmul", o0, D(3, 7, 2, 4, 1e17 + 2, 3e17 + 4), 6);
}

static void test_shape_and_creation(void) {
    ok_run("input x: int16[2, 3]\n"
           "p = permute(x, [1, 0])\ns = slice(x, 1, 0, 3, 2)\n"
           "d = pad(x, [1, 1, 0, 1], value=9)\nt = triu(x, 1)\noutput p, s, d, t\n",
           IN(D(1, 2, 3, 4, 5, 6)), NULL);
    expect("permute", o0, D(1, 4, 2, 5, 3, 6), 6);
    expect("slice", o1, D(1, 3, 4, 6), 4);
    expect("pad", o2, D(9, 1, 2, 3, 9, 9, 4, 5, 6, 9, 9, 9, 9, 9, 9), 15);
    expect("triu", o3, D(0, 2, 3, 0, 0, 6), 6);
    ok_run("input x: float32[3]\n"
           "e = expand(x, [2, 3])\nr = reshape(e, [3, -1])\nl = tril(r, -1)\noutput e, r, l\n",
           IN(D(1, 2, 3)), NULL);
    expect("expand", o0, D(1, 2, 3, 1, 2, 3), 6);
    expect("reshape", o1, D(1, 2, 3, 1, 2, 3), 6);
    expect("tril", o2, D(0, 0, 3, 0, 2, 3), 6);
    ok_run("a = arange(5)\nb = arange(0.5, 1.6, 0.25)\nc = full([2], 2.5, dtype=int32)\n"
           "d = iota(3, dtype=float16)\noutput a, b, c, d\n",
           NULL, NULL);
    expect("arange", o0, D(0, 1, 2, 3, 4), 5);
    expect("arange float", o1, D(0.5, 0.75, 1, 1.25, 1.5), 5);
    expect("full", o2, D(2, 2), 2);
    expect("iota", o3, D(0, 1, 2), 3);
}

/* A strided (transposed) input at an odd address. */
static void test_strided_input(void) {
    scanfuse_fusion *f = scanfuse_parse("input x: float32[2, 3]\ny = cumsum(x, 1)\noutput y\n", NULL);
    CHECK_STATUS(scanfuse_fusion_status(f), SCANFUSE_OK);
    scanfuse_options opt;
    scanfuse_options_init(&opt);
    opt.device = SCANFUSE_DEVICE_REFERENCE;
    scanfuse_program *p = scanfuse_compile(f, &opt);
    CHECK_STATUS(scanfuse_program_status(p), SCANFUSE_OK);
    unsigned char raw[64];
    float colmajor[6] = {1, 4, 2, 5, 3, 6}; /* [[1,2,3],[4,5,6]] stored column by column */
    memcpy(raw + 1, colmajor, sizeof colmajor);
    int64_t shape[2] = {2, 3}, strides[2] = {1, 2};
    scanfuse_dl_tensor in;
    memset(&in, 0, sizeof in);
    in.data = raw;
    in.byte_offset = 1;
    in.device.device_type = SCANFUSE_DL_CPU;
    in.ndim = 2;
    in.dtype = scanfuse_dtype_to_dl(SCANFUSE_FLOAT32);
    in.shape = shape;
    in.strides = strides;
    double out[6] = {0};
    int64_t ostrides[2] = {1, 2}; /* write transposed too */
    scanfuse_dl_tensor o = in;
    o.data = out;
    o.byte_offset = 0;
    o.dtype = scanfuse_dtype_to_dl(SCANFUSE_FLOAT64);
    o.strides = ostrides;
    CHECK_STATUS(scanfuse_run(p, &in, 1, &o, 1), SCANFUSE_OK);
    expect("strided cumsum", out, D(1, 4, 3, 9, 6, 15), 6);
    scanfuse_program_free(p);
    scanfuse_fusion_free(f);
}

/* Exact prefix sums against an independent computation: random values of the input
 * dtype, each k * 2^s with a full-width integer significand k and s in a window of
 * at most 40 binades, so every prefix sum is an integer times 2^(the window's bottom)
 * that fits in 128 bits; the test rounds that integer to the dtype itself (nearest,
 * ties to even, subnormals and overflow included) and expects the reference's cumsum
 * to match every bit.  Windows near the bottom of each format cover its subnormals;
 * signs are random, so prefixes cancel to a few bits and the rounding bit and the
 * sticky bits lie limbs apart in the reference's accumulator. */
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

static double round_i128(i128 S, int unit, int p, int emin, int emax) {
    if (S == 0) return 0.0;
    bool neg = S < 0;
    u128 m = neg ? -(u128)S : (u128)S;
    int P = 127;
    while (!((m >> P) & 1)) P--;
    int q = P - (p - 1); /* the lowest kept bit, in units of 2^unit */
    int qmin = emin - (p - 1) - unit;
    if (q < qmin) q = qmin;
    double r;
    if (q <= 0) {
        r = ldexp((double)(uint64_t)m, unit);
    } else {
        u128 K = m >> q, rest = m & (((u128)1 << q) - 1);
        u128 half = (u128)1 << (q - 1);
        if (rest > half || (rest == half && (K & 1))) K++;
        r = ldexp((double)(uint64_t)K, q + unit);
        if (r > ldexp(2.0 - ldexp(1.0, 1 - p), emax)) r = INFINITY;
    }
    return neg ? -r : r;
}

static void test_exact_sums(void) {
    static const struct {
        const char *name;
        int p, emin, emax, lo, hi; /* the window of value exponents s: [lo, hi] */
    } fm[] = {
        {"float64", 53, -1022, 1023, -30, 10},    {"float64", 53, -1022, 1023, -1074, -1040},
        {"float32", 24, -126, 127, -20, 20},      {"float32", 24, -126, 127, -149, -120},
        {"float32", 24, -126, 127, 80, 104},      {"bfloat16", 8, -126, 127, -10, 30},
        {"bfloat16", 8, -126, 127, -133, -110},   {"bfloat16", 8, -126, 127, 100, 120},
        {"float16", 11, -14, 15, -24, 5},         {"float16", 11, -14, 15, -6, 5},
    };
    uint64_t st = 0x9E3779B97F4A7C15u;
    double x[64];
    int bad = 0;
    for (size_t f = 0; f < sizeof fm / sizeof fm[0]; f++) {
        char text[200];
        snprintf(text, sizeof text, "input x: %s[64]\ny = cumsum(x, 0)\noutput y\n", fm[f].name);
        for (int trial = 0; trial < 40; trial++) {
            i128 S = 0;
            double want[64];
            for (int i = 0; i < 64; i++) {
                st = st * 6364136223846793005u + 1442695040888963407u;
                uint64_t k = (st >> 11) & ((UINT64_C(1) << fm[f].p) - 1);
                if (trial % 4 == 0) k &= ~(uint64_t)0xF; /* short significands: ties */
                int s = fm[f].lo + (int)((st >> 3) % (uint64_t)(fm[f].hi - fm[f].lo + 1));
                if (trial % 4 == 1) s = fm[f].lo + (int)((st >> 3) % 4); /* one narrow band */
                bool neg = (st >> 63) & 1;
                x[i] = ldexp((double)k, s) * (neg ? -1 : 1);
                i128 term = (i128)k << (s - fm[f].lo);
                S += neg ? -term : term;
                want[i] = round_i128(S, fm[f].lo, fm[f].p, fm[f].emin, fm[f].emax);
            }
            ok_run(text, IN(x), NULL);
            for (int i = 0; i < 64; i++) {
                bool same = o0[i] == want[i] && signbit(o0[i]) == signbit(want[i]);
                if (!same && bad++ < 8)
                    CHECKF(false, "%s exact cumsum, window [%d, %d], trial %d, [%d]: got %a, want %a",
                           fm[f].name, fm[f].lo, fm[f].hi, trial, i, o0[i], want[i]);
            }
        }
    }
    CHECKF(bad == 0, "exact cumsums: %d elements differ", bad);

    /* long runs of one sign: +-0.75 adds 3 * 2^16 to limb 33 each step, so its carry
     * opens limb 34 after ~11000 steps (a reference that read that limb before writing
     * it failed 29078 prefixes here); +-2^-1074 fills the bottom limb.  The prefix
     * sums are exact in float32 and float64. */
    enum { N = 40000 };
    static double xs[N], ys[N], zs[N];
    double *lo[2] = {ys, zs};
    for (int sign = -1; sign <= 1; sign += 2) {
        for (int i = 0; i < N; i++) xs[i] = 0.75 * sign;
        CHECK_STATUS(run_text("input x: float32[40000]\ny = cumsum(x, 0)\n"
                              "z = cumsum(x, 0, dtype=float64)\noutput y, z\n",
                              IN(xs), NULL, lo), SCANFUSE_OK);
        int wrong = 0;
        for (int i = 0; i < N; i++) wrong += ys[i] != 0.75 * sign * (i + 1) || zs[i] != ys[i];
        CHECKF(wrong == 0, "cumsum of %d x %g: %d prefixes wrong", N, 0.75 * sign, wrong);
        for (int i = 0; i < N; i++) xs[i] = sign * 0x1p-1074;
        CHECK_STATUS(run_text("input x: float64[40000]\ny = cumsum(x, 0)\noutput y\n", IN(xs),
                              NULL, lo), SCANFUSE_OK);
        wrong = 0;
        for (int i = 0; i < N; i++) wrong += ys[i] != sign * (i + 1) * 0x1p-1074;
        CHECKF(wrong == 0, "cumsum of %d x %g: %d prefixes wrong", N, sign * 0x1p-1074, wrong);
    }
}

int main(void) {
    test_cumsum();
    test_other_scans();
    test_pointwise();
    test_reductions();
    test_matmul();
    test_shape_and_creation();
    test_strided_input();
    test_exact_sums();
    return sf_test_finish("test_ref");
}
