/*
 * test_cuda_stub.c — the CUDA backend's host side, run end to end on a machine without
 * a GPU: the driver is tests/cuda_stub_driver.c (SCANFUSE_CUDA_DRIVER), whose launches
 * run nothing but are counted, so what is checked here is everything scanfuse does
 * around the kernels, with NVRTC compiling the programs for real:
 *   - bad tensors (misaligned, on the CPU, wrong dtype, dims or sizes, NULL data,
 *     negative strides, an output of stride 0, the wrong number of tensors) get their
 *     status and message and launch nothing, and the program runs afterwards;
 *   - a run launches the kernels of its plan, the first one by programmatic dependent
 *     launch unless pdl_first=0; an output that overlaps an input is staged and copied
 *     out (one more kernel);
 *   - a program that can fail at run time reads the error flags back: clean flags give
 *     SCANFUSE_OK, a flag set by the "kernel" gives SCANFUSE_ERROR_VALUE with the
 *     division-by-zero message;
 *   - an empty tensor launches nothing;
 *   - the MoE routing example runs in at most 4 launches, its first one plain.
 * The kernels themselves are checked on a GPU by test_cuda, and in the CPU emulator.
 * Skips (passing) when NVRTC cannot be loaded.
 */
#include "harness.h"
#include "sf.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#ifndef SF_CUDA_STUB_PATH
#error "SF_CUDA_STUB_PATH: the stub driver library (CMakeLists.txt)"
#endif

static unsigned long *launches;
static int *launch_pdl, *dtoh_fill, *dyn_limit, *dyn_allowed;

static scanfuse_program *compile_cuda(const char *text, const char *tune) {
    scanfuse_fusion *f = scanfuse_parse(text, "<stub>");
    CHECKF(scanfuse_fusion_status(f) == SCANFUSE_OK, "parse: %s", scanfuse_fusion_error(f));
    scanfuse_options o;
    scanfuse_options_init(&o);
    o.device = SCANFUSE_DEVICE_CUDA;
    if (tune) setenv("SCANFUSE_CUDA_TUNE", tune, 1);
    scanfuse_program *p = scanfuse_compile(f, &o);
    if (tune) unsetenv("SCANFUSE_CUDA_TUNE");
    scanfuse_fusion_free(f);
    CHECKF(scanfuse_program_status(p) == SCANFUSE_OK, "compile: %s", scanfuse_program_error(p));
    return p;
}

static scanfuse_dl_tensor f32_tensor(void *data, int ndim, int64_t *shape, int64_t *strides) {
    scanfuse_dl_tensor t = {data, {SCANFUSE_DL_CUDA, 0}, ndim, {SCANFUSE_DL_FLOAT, 32, 1}, shape, strides, 0};
    return t;
}

/* One run of p that must fail with `want` and a message containing `words`, launching
 * nothing. */
static void bad_run(scanfuse_program *p, const scanfuse_dl_tensor *in, int nin, const scanfuse_dl_tensor *out,
                    int nout, scanfuse_status want, const char *words) {
    unsigned long before = *launches;
    CHECK_STATUS(scanfuse_run(p, in, nin, out, nout), want);
    CHECKF(sf_test_contains(scanfuse_program_error(p), words), "message '%s' lacks '%s'",
           scanfuse_program_error(p), words);
    CHECK_EQ_INT(*launches, before);
}

static void bad_tensors(void *dx, void *dy) {
    scanfuse_program *p = compile_cuda("input x: float32[1000]\ny = cumsum(x, dim=0)\noutput y\n", NULL);
    int64_t shape[1] = {1000}, other[1] = {999}, neg[1] = {-1}, zero[1] = {0}, two[2] = {1000, 1};
    scanfuse_dl_tensor x = f32_tensor(dx, 1, shape, NULL), y = f32_tensor(dy, 1, shape, NULL);
    scanfuse_dl_tensor t = x;
    t.data = (char *)dx + 2;
    bad_run(p, &t, 1, &y, 1, SCANFUSE_ERROR_ARGUMENT, "aligned");
    t = y;
    t.byte_offset = 1;
    bad_run(p, &x, 1, &t, 1, SCANFUSE_ERROR_ARGUMENT, "aligned");
    t = x;
    t.device.device_type = SCANFUSE_DL_CPU;
    bad_run(p, &t, 1, &y, 1, SCANFUSE_ERROR_DEVICE, "is on cpu");
    t = x;
    t.dtype.bits = 64;
    bad_run(p, &t, 1, &y, 1, SCANFUSE_ERROR_DTYPE, "float64");
    t = x;
    t.ndim = 2;
    t.shape = two;
    bad_run(p, &t, 1, &y, 1, SCANFUSE_ERROR_SHAPE, "dims");
    t = x;
    t.shape = other;
    bad_run(p, &t, 1, &y, 1, SCANFUSE_ERROR_SHAPE, "size 999");
    t = x;
    t.data = NULL;
    bad_run(p, &t, 1, &y, 1, SCANFUSE_ERROR_ARGUMENT, "NULL data");
    t = x;
    t.strides = neg;
    bad_run(p, &t, 1, &y, 1, SCANFUSE_ERROR_ARGUMENT, "negative stride");
    t = y;
    t.strides = zero;
    bad_run(p, &x, 1, &t, 1, SCANFUSE_ERROR_ARGUMENT, "stride 0");
    bad_run(p, &x, 0, &y, 1, SCANFUSE_ERROR_ARGUMENT, "inputs given");
    bad_run(p, &x, 1, &y, 2, SCANFUSE_ERROR_ARGUMENT, "outputs given");
    /* the program is not spoiled by the failures */
    unsigned long before = *launches;
    CHECK_STATUS(scanfuse_run(p, &x, 1, &y, 1), SCANFUSE_OK);
    CHECK_EQ_INT(*launches, before + 1);
    scanfuse_program_free(p);
}

static void launches_and_pdl(void *dx, void *dy) {
    int64_t shape[1] = {1000};
    scanfuse_dl_tensor x = f32_tensor(dx, 1, shape, NULL), y = f32_tensor(dy, 1, shape, NULL);
    static const char text[] = "input x: float32[1000]\ny = cumsum(x, dim=0)\noutput y\n";
    for (int variant = 0; variant < 2; variant++) {
        scanfuse_program *p = compile_cuda(text, variant ? "pdl_first=0" : NULL);
        *launches = 0;
        CHECK_STATUS(scanfuse_run(p, &x, 1, &y, 1), SCANFUSE_OK);
        CHECK_EQ_INT(*launches, 1);
        CHECKF(launch_pdl[0] == (variant ? 0 : 1), "first launch %s PDL under %s", launch_pdl[0] ? "with" : "without",
               variant ? "pdl_first=0" : "the defaults");
        /* in place: the output overlaps the input, so it is staged, then copied out by a
         * second kernel, launched by PDL after the first */
        *launches = 0;
        CHECK_STATUS(scanfuse_run(p, &x, 1, &x, 1), SCANFUSE_OK);
        CHECK_EQ_INT(*launches, 2);
        CHECK_EQ_INT(launch_pdl[1], 1);
        scanfuse_program_free(p);
    }
    /* an empty tensor: nothing to launch */
    scanfuse_program *p = compile_cuda("input x: float32[0, 4]\ny = cumsum(x, dim=1)\noutput y\n", NULL);
    int64_t empty[2] = {0, 4};
    scanfuse_dl_tensor ex = f32_tensor(dx, 2, empty, NULL), ey = f32_tensor(dy, 2, empty, NULL);
    *launches = 0;
    CHECK_STATUS(scanfuse_run(p, &ex, 1, &ey, 1), SCANFUSE_OK);
    CHECK_EQ_INT(*launches, 0);
    scanfuse_program_free(p);
}

static void runtime_errors(void *da, void *db, void *dy) {
    scanfuse_program *p = compile_cuda("input a: int32[64]\ninput b: int32[64]\ny = floor_divide(a, b)\noutput y\n", NULL);
    int64_t shape[1] = {64};
    scanfuse_dl_tensor in[2] = {{da, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_INT, 32, 1}, shape, NULL, 0},
                                {db, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_INT, 32, 1}, shape, NULL, 0}};
    scanfuse_dl_tensor y = {dy, {SCANFUSE_DL_CUDA, 0}, 1, {SCANFUSE_DL_INT, 32, 1}, shape, NULL, 0};
    /* the flags are cleared before the kernels and read back after them */
    CHECK_STATUS(scanfuse_run(p, in, 2, &y, 1), SCANFUSE_OK);
    *dtoh_fill = 1; /* every flag reads as set */
    CHECK_STATUS(scanfuse_run(p, in, 2, &y, 1), SCANFUSE_ERROR_VALUE);
    CHECKF(sf_test_contains(scanfuse_program_error(p), "division by zero"), "message: %s",
           scanfuse_program_error(p));
    *dtoh_fill = -1;
    CHECK_STATUS(scanfuse_run(p, in, 2, &y, 1), SCANFUSE_OK);
    scanfuse_program_free(p);
}

/* A column scan wide enough for the stream kernel (one block a column block, 64 KB of
 * dynamic shared memory): it runs once its function is allowed that much (the module is
 * bound when the program compiles); on a device that cannot give it, the compile fails
 * with the driver's error and the amount. */
static void dynamic_shared_memory(void) {
    static const char text[] = "input x: float32[300, 4200]\ny = cumsum(x, dim=0)\noutput y\n";
    int64_t shape[2] = {300, 4200};
    const size_t bytes = 300 * 4200 * 4;
    void *dx = NULL, *dy = NULL;
    char msg[SF_ERR_LEN];
    CHECK_STATUS(sf_cuda_alloc(0, bytes, &dx, msg, sizeof msg), SCANFUSE_OK);
    CHECK_STATUS(sf_cuda_alloc(0, bytes, &dy, msg, sizeof msg), SCANFUSE_OK);
    scanfuse_dl_tensor x = f32_tensor(dx, 2, shape, NULL), y = f32_tensor(dy, 2, shape, NULL);
    *dyn_allowed = 0;
    scanfuse_program *p = compile_cuda(text, NULL);
    *launches = 0;
    if (dx && dy) CHECK_STATUS(scanfuse_run(p, &x, 1, &y, 1), SCANFUSE_OK);
    CHECK_EQ_INT(*launches, 1);
    CHECKF(*dyn_allowed > 49152, "the function was allowed %d bytes", *dyn_allowed);
    scanfuse_program_free(p);
    *dyn_limit = 32768; /* a device with 32 KB a block */
    scanfuse_fusion *f = scanfuse_parse(text, "<stub>");
    scanfuse_options o;
    scanfuse_options_init(&o);
    o.device = SCANFUSE_DEVICE_CUDA;
    p = scanfuse_compile(f, &o);
    CHECK_STATUS(scanfuse_program_status(p), SCANFUSE_ERROR_DEVICE);
    CHECKF(sf_test_contains(scanfuse_program_error(p), "65536 bytes of dynamic shared memory"), "message: %s",
           scanfuse_program_error(p));
    scanfuse_program_free(p);
    scanfuse_fusion_free(f);
    *dyn_limit = 232448;
    sf_cuda_free(0, dx);
    sf_cuda_free(0, dy);
}

/* The MoE routing example (Llama-4 sizes): at most the 4 launches a run, and
 * the first one plain: its combine kernel reads inputs before it waits (SF_OWN_PDL),
 * so the plan keeps pdl_first off. */
static void moe_plan(void) {
    scanfuse_fusion *f = scanfuse_parse_file(SF_SOURCE_DIR "/examples/moe_routing.sf");
    CHECKF(scanfuse_fusion_status(f) == SCANFUSE_OK, "parse: %s", scanfuse_fusion_error(f));
    scanfuse_options o;
    scanfuse_options_init(&o);
    o.device = SCANFUSE_DEVICE_CUDA;
    scanfuse_program *p = scanfuse_compile(f, &o);
    CHECKF(scanfuse_program_status(p) == SCANFUSE_OK, "compile: %s", scanfuse_program_error(p));
    int nin = scanfuse_fusion_num_inputs(f), nout = scanfuse_fusion_num_outputs(f);
    scanfuse_dl_tensor t[16];
    int64_t shapes[16][8];
    void *mem[16] = {NULL};
    bool ok = scanfuse_program_status(p) == SCANFUSE_OK && nin + nout <= 16;
    char msg[SF_ERR_LEN];
    for (int i = 0; ok && i < nin + nout; i++) {
        const char *name;
        scanfuse_dtype dt;
        int nd;
        if (i < nin) scanfuse_fusion_input_info(f, i, &name, &dt, &nd, shapes[i]);
        else scanfuse_fusion_output_info(f, i - nin, &name, &dt, &nd, shapes[i]);
        size_t bytes = (size_t)sf_numel(nd, shapes[i]) * scanfuse_dtype_size(dt);
        ok = sf_cuda_alloc(0, bytes, &mem[i], msg, sizeof msg) == SCANFUSE_OK;
        scanfuse_dl_tensor ti = {mem[i], {SCANFUSE_DL_CUDA, 0}, nd, scanfuse_dtype_to_dl(dt), shapes[i], NULL, 0};
        t[i] = ti;
    }
    CHECKF(ok, "moe plan: %d inputs, %d outputs, no memory?", nin, nout);
    if (ok) {
        *launches = 0;
        CHECK_STATUS(scanfuse_run(p, t, nin, t + nin, nout), SCANFUSE_OK);
        CHECKF(*launches >= 1 && *launches <= 4, "MoE Llama: %lu launches a run", *launches);
        CHECK_EQ_INT(launch_pdl[0], 0);
        printf("MoE Llama on the stub driver: %lu launches a run, the first without PDL\n", *launches);
    }
    for (int i = 0; i < nin + nout && i < 16; i++) sf_cuda_free(0, mem[i]);
    scanfuse_program_free(p);
    scanfuse_fusion_free(f);
}

int main(void) {
    setenv("SCANFUSE_CUDA_DRIVER", SF_CUDA_STUB_PATH, 1);
    char msg[SF_ERR_LEN];
    if (sf_cuda_nvrtc_probe(msg, sizeof msg) != SCANFUSE_OK) {
        printf("SKIP test_cuda_stub: no NVRTC to compile the programs with: %s\n", msg);
        return sf_test_finish("test_cuda_stub");
    }
    /* the loader opens the same library, so these are the stub's own variables */
    void *lib = dlopen(SF_CUDA_STUB_PATH, RTLD_NOW | RTLD_LOCAL);
    CHECKF(lib != NULL, "dlopen %s: %s", SF_CUDA_STUB_PATH, dlerror());
    if (!lib) return sf_test_finish("test_cuda_stub");
    launches = dlsym(lib, "stub_launches");
    launch_pdl = dlsym(lib, "stub_launch_pdl");
    dtoh_fill = dlsym(lib, "stub_dtoh_fill");
    dyn_limit = dlsym(lib, "stub_dyn_limit");
    dyn_allowed = dlsym(lib, "stub_dyn_allowed");
    CHECK(launches && launch_pdl && dtoh_fill && dyn_limit && dyn_allowed);
    CHECK_STATUS(sf_cuda_probe(0, msg, sizeof msg), SCANFUSE_OK);
    CHECKF(sf_test_contains(msg, "stub"), "probe: %s", msg);
    void *d[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) CHECK_STATUS(sf_cuda_alloc(0, 4096, &d[i], msg, sizeof msg), SCANFUSE_OK);
    if (launches && launch_pdl && dtoh_fill && dyn_limit && dyn_allowed && d[0] && d[1] && d[2]) {
        bad_tensors(d[0], d[1]);
        launches_and_pdl(d[0], d[1]);
        runtime_errors(d[0], d[1], d[2]);
        moe_plan();
        dynamic_shared_memory();
    }
    for (int i = 0; i < 3; i++) sf_cuda_free(0, d[i]);
    return sf_test_finish("test_cuda_stub");
}
