/*
 * launch_bench.c — what one scanfuse_run costs the host when calls go back to back on a
 * CUDA stream, against the driver's own floor measured in the same process: a launch of
 * an empty kernel, and a device-to-device copy of the same bytes (cuMemcpyDtoDAsync).
 * For the launch-bound shapes ([2048, 128] cumsums: the kernel takes 2-5 us) a caller
 * that queues calls pays max(host time a call, device time a call).
 *
 *   launch_bench [--calls N] [--repeat R] [--json FILE] [--profile]
 *
 * Like PyTorch, the bench makes the device's primary context current and runs on a
 * non-blocking stream of its own.  Per case and per row, R batches of N calls (default
 * 7 x 2000) after a warm-up batch; each batch: host seconds from the first call's
 * start to the last call's return (CLOCK_MONOTONIC), and device seconds between two
 * events recorded around the batch; the medians a call are reported.  Rows:
 *   run       scanfuse_run of the case's program
 *   empty     cuLaunchKernel of an empty one-block kernel (the driver's launch floor)
 *   empty_pdl the same by cuLaunchKernelEx with programmatic stream serialization
 *   copy      cuMemcpyDtoDAsync of the program's bytes (half read, half written)
 *   ctx       cuCtxGetCurrent + cuCtxGetDevice (what a run asks of the driver first)
 * --profile samples the run row's host time with SIGPROF (10 kHz) and prints where the
 * samples fell: the driver library, libc, or a function of this executable
 * (addr2line, when the machine has it).  SCANFUSE_CUDA_DRIVER names another driver
 * library (the same variable the library reads): with the stub driver the tests use
 * (build/libsf_cuda_stub.so, tests/cuda_stub_driver.c: launches run nothing) the run
 * row is scanfuse's own host path alone, on any machine.  Not a test: it reports, it
 * never fails on a figure.
 */
#define _GNU_SOURCE
#include <scanfuse.h>

#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>
#include <time.h>

#include "bench_timing.h"

typedef int CUr;
typedef unsigned long long CUptr;
typedef struct {
    unsigned id, pad;
    union {
        int allowed;
        char raw[64];
    } v;
} cu_attr; /* CUlaunchAttribute: id, padding, a 64-byte value */
typedef struct {
    unsigned gx, gy, gz, bx, by, bz, smem;
    void *stream;
    cu_attr *attrs;
    unsigned nattrs;
} cu_cfg; /* CUlaunchConfig */

static struct {
    CUr (*Init)(unsigned);
    CUr (*DeviceGet)(int *, int);
    CUr (*PrimaryCtxRetain)(void **, int);
    CUr (*CtxSetCurrent)(void *);
    CUr (*CtxGetCurrent)(void **);
    CUr (*CtxGetDevice)(int *);
    CUr (*StreamCreate)(void **, unsigned);
    CUr (*StreamSynchronize)(void *);
    CUr (*EventCreate)(void **, unsigned);
    CUr (*EventRecord)(void *, void *);
    CUr (*EventSynchronize)(void *);
    CUr (*EventElapsedTime)(float *, void *, void *);
    CUr (*MemAlloc)(CUptr *, size_t);
    CUr (*MemsetD8)(CUptr, unsigned char, size_t);
    CUr (*MemcpyDtoDAsync)(CUptr, CUptr, size_t, void *);
    CUr (*ModuleLoadData)(void **, const void *);
    CUr (*ModuleGetFunction)(void **, void *, const char *);
    CUr (*LaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void *, void **, void **);
    CUr (*LaunchKernelEx)(const cu_cfg *, void *, void **, void **);
} cu;
static void *drv_lib;

static void die(const char *what) {
    fprintf(stderr, "launch_bench: %s\n", what);
    exit(2);
}
static void ck(CUr r, const char *what) {
    if (r != 0) {
        fprintf(stderr, "launch_bench: %s failed (CUresult %d)\n", what, r);
        exit(2);
    }
}
static void sym(void *fnptr_addr, size_t size, const char *name, int optional) {
    void *s = dlsym(drv_lib, name);
    if (!s && !optional) {
        fprintf(stderr, "launch_bench: %s not in the driver\n", name);
        exit(2);
    }
    memcpy(fnptr_addr, &s, size);
}
#define SYM(f, name) sym(&cu.f, sizeof cu.f, name, 0)

static void load_driver(void) {
    const char *env = getenv("SCANFUSE_CUDA_DRIVER");
    drv_lib = dlopen(env && *env ? env : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv_lib) die("no CUDA driver (libcuda.so.1); this bench needs a GPU or a stub driver");
    SYM(Init, "cuInit");
    SYM(DeviceGet, "cuDeviceGet");
    SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SYM(CtxSetCurrent, "cuCtxSetCurrent");
    SYM(CtxGetCurrent, "cuCtxGetCurrent");
    SYM(CtxGetDevice, "cuCtxGetDevice");
    SYM(StreamCreate, "cuStreamCreate");
    SYM(StreamSynchronize, "cuStreamSynchronize");
    SYM(EventCreate, "cuEventCreate");
    SYM(EventRecord, "cuEventRecord");
    SYM(EventSynchronize, "cuEventSynchronize");
    SYM(EventElapsedTime, "cuEventElapsedTime");
    SYM(MemAlloc, "cuMemAlloc_v2");
    SYM(MemsetD8, "cuMemsetD8_v2");
    SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    SYM(ModuleLoadData, "cuModuleLoadData");
    SYM(ModuleGetFunction, "cuModuleGetFunction");
    SYM(LaunchKernel, "cuLaunchKernel");
    sym(&cu.LaunchKernelEx, sizeof cu.LaunchKernelEx, "cuLaunchKernelEx", 1);
}

/* ---- what a row does once ---- */
enum row { ROW_RUN, ROW_EMPTY, ROW_EMPTY_PDL, ROW_COPY, ROW_CTX, NROWS };
static const char *row_name[NROWS] = {"run", "empty", "empty_pdl", "copy", "ctx"};

typedef struct bench_case {
    const char *name, *text;
    scanfuse_program *prog;
    scanfuse_dl_tensor in, out;
    int64_t shape[2];
    size_t bytes; /* input + output */
    CUptr src, dst;
} bench_case;

static void *stream, *empty_fn;

static void call_once(bench_case *c, enum row r) {
    switch (r) {
    case ROW_RUN:
        if (scanfuse_run(c->prog, &c->in, 1, &c->out, 1) != SCANFUSE_OK) {
            fprintf(stderr, "launch_bench: %s: %s\n", c->name, scanfuse_program_error(c->prog));
            exit(2);
        }
        break;
    case ROW_EMPTY:
        ck(cu.LaunchKernel(empty_fn, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL), "cuLaunchKernel");
        break;
    case ROW_EMPTY_PDL: {
        cu_attr at;
        memset(&at, 0, sizeof at);
        at.id = 6; /* CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION */
        at.v.allowed = 1;
        cu_cfg cfg = {1, 1, 1, 32, 1, 1, 0, stream, &at, 1};
        ck(cu.LaunchKernelEx(&cfg, empty_fn, NULL, NULL), "cuLaunchKernelEx");
        break;
    }
    case ROW_COPY:
        ck(cu.MemcpyDtoDAsync(c->dst, c->src, c->bytes / 2, stream), "cuMemcpyDtoDAsync");
        break;
    case ROW_CTX: {
        void *ctx;
        int dev;
        ck(cu.CtxGetCurrent(&ctx), "cuCtxGetCurrent");
        ck(cu.CtxGetDevice(&dev), "cuCtxGetDevice");
        break;
    }
    default: break;
    }
}

/* ---- SIGPROF sampling of the run row ---- */
#define MAX_SAMPLES 200000
static uintptr_t samples[MAX_SAMPLES];
static volatile int nsamples;
static void on_prof(int sig, siginfo_t *si, void *uc_) {
    (void)sig;
    (void)si;
#if defined(__x86_64__)
    ucontext_t *uc = uc_;
    if (nsamples < MAX_SAMPLES) samples[nsamples++] = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#else
    (void)uc_; /* the interrupted address is read on x86-64 only */
#endif
}
static timer_t prof_timer;
static bool prof_on;
/* A timer on the monotonic clock that signals this thread every 50 us of wall time
 * (ITIMER_PROF's resolution is the kernel's tick, too coarse for a loop of a few ms). */
static void profile_start(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_prof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct sigevent se;
    memset(&se, 0, sizeof se);
    se.sigev_notify = SIGEV_THREAD_ID;
    se.sigev_signo = SIGPROF;
    se._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_MONOTONIC, &se, &prof_timer) != 0) {
        fprintf(stderr, "launch_bench: timer_create failed; no profile\n");
        return;
    }
    struct itimerspec it = {{0, 50000}, {0, 50000}};
    timer_settime(prof_timer, 0, &it, NULL);
    prof_on = true;
}
static void profile_stop(void) {
    if (!prof_on) return;
    timer_delete(prof_timer);
    prof_on = false;
}

typedef struct bin {
    char where[160];
    int n;
} bin;
static int cmp_bin(const void *a, const void *b) { return ((const bin *)b)->n - ((const bin *)a)->n; }

/* Where the samples fell: the library's file name, or for this executable the function
 * that addr2line names for the address. */
static void profile_report(void) {
    int n = nsamples;
    bin *bins = calloc((size_t)n + 1, sizeof *bins);
    int nb = 0;
    for (int i = 0; i < n; i++) {
        Dl_info di;
        char where[160] = "?";
        if (dladdr((void *)samples[i], &di) && di.dli_fname) {
            const char *base = strrchr(di.dli_fname, '/');
            base = base ? base + 1 : di.dli_fname;
            Dl_info me;
            bool self = dladdr((void *)(uintptr_t)&profile_report, &me) && me.dli_fbase == di.dli_fbase;
            if (self) {
                char cmd[512];
                snprintf(cmd, sizeof cmd, "addr2line -f -e /proc/%d/exe 0x%lx 2>/dev/null", (int)getpid(),
                         (unsigned long)(samples[i] - (uintptr_t)di.dli_fbase));
                FILE *p = popen(cmd, "r");
                char fn[128] = "";
                if (p && fgets(fn, sizeof fn, p)) fn[strcspn(fn, "\n")] = '\0';
                if (p) pclose(p);
                snprintf(where, sizeof where, "scanfuse/bench: %s", fn[0] ? fn : "?");
            } else {
                snprintf(where, sizeof where, "%s%s%s", base, di.dli_sname ? ": " : "",
                         di.dli_sname ? di.dli_sname : "");
            }
        }
        int j = 0;
        while (j < nb && strcmp(bins[j].where, where) != 0) j++;
        if (j == nb) snprintf(bins[nb++].where, sizeof bins[j].where, "%s", where);
        bins[j].n++;
    }
    qsort(bins, (size_t)nb, sizeof *bins, cmp_bin);
    printf("  profile of the run row: %d samples\n", n);
    for (int j = 0; j < nb && j < 25; j++)
        printf("    %5.1f %%  %s\n", 100.0 * bins[j].n / (n ? n : 1), bins[j].where);
    free(bins);
}

/* An empty kernel, as PTX the driver compiles for whatever GPU it has. */
static const char empty_ptx[] = ".version 7.8\n.target sm_70\n.address_size 64\n"
                                ".visible .entry sf_empty()\n{\n\tret;\n}\n";

int main(int argc, char **argv) {
    int calls = 2000, repeat = 7, prof = 0;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--profile")) prof = 1;
        else {
            fprintf(stderr, "usage: launch_bench [--calls N] [--repeat R] [--json FILE] [--profile]\n");
            return 2;
        }
    }
    if (calls < 1 || repeat < 1 || repeat > 99) die("--calls >= 1, 1 <= --repeat <= 99");
    const char *tune = getenv("SCANFUSE_CUDA_TUNE");
    if (!tune || strpbrk(tune, "\"\\")) tune = ""; /* named in the JSON as it is */
    load_driver();
    int dev;
    void *ctx, *mod, *ev0, *ev1;
    ck(cu.Init(0), "cuInit");
    ck(cu.DeviceGet(&dev, 0), "cuDeviceGet");
    ck(cu.PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    ck(cu.CtxSetCurrent(ctx), "cuCtxSetCurrent");
    ck(cu.StreamCreate(&stream, 1), "cuStreamCreate");
    ck(cu.EventCreate(&ev0, 0), "cuEventCreate");
    ck(cu.EventCreate(&ev1, 0), "cuEventCreate");
    ck(cu.ModuleLoadData(&mod, empty_ptx), "cuModuleLoadData (empty kernel)");
    ck(cu.ModuleGetFunction(&empty_fn, mod, "sf_empty"), "cuModuleGetFunction");

    bench_case cases[] = {
        {.name = "f32_2048x128_d0", .text = "input x: float32[2048, 128]\ny = cumsum(x, dim=0)\noutput y\n"},
        {.name = "f32_2048x128_d1", .text = "input x: float32[2048, 128]\ny = cumsum(x, dim=1)\noutput y\n"},
        {.name = "bf16_2048x128_d0", .text = "input x: bfloat16[2048, 128]\ny = cumsum(x, dim=0)\noutput y\n"},
    };
    int ncases = (int)(sizeof cases / sizeof cases[0]);
    FILE *jf = json ? fopen(json, "a") : NULL;
    if (json && !jf) die("cannot open the --json file");
    printf("%-18s %-10s %12s %12s\n", "case", "row", "host us/call", "device us/call");
    for (int ci = 0; ci < ncases; ci++) {
        bench_case *c = &cases[ci];
        scanfuse_fusion *f = scanfuse_parse(c->text, c->name);
        if (scanfuse_fusion_status(f) != SCANFUSE_OK) die(scanfuse_fusion_error(f));
        scanfuse_options o;
        scanfuse_options_init(&o);
        o.device = SCANFUSE_DEVICE_CUDA;
        o.cuda_stream = stream;
        c->prog = scanfuse_compile(f, &o);
        scanfuse_fusion_free(f);
        if (scanfuse_program_status(c->prog) != SCANFUSE_OK) die(scanfuse_program_error(c->prog));
        bool bf = strstr(c->name, "bf16") != NULL;
        c->shape[0] = 2048;
        c->shape[1] = 128;
        size_t nbytes = (size_t)2048 * 128 * (bf ? 2 : 4);
        c->bytes = 2 * nbytes;
        ck(cu.MemAlloc(&c->src, nbytes), "cuMemAlloc");
        ck(cu.MemAlloc(&c->dst, nbytes), "cuMemAlloc");
        ck(cu.MemsetD8(c->src, 0, nbytes), "cuMemsetD8");
        scanfuse_dl_dtype dt = bf ? (scanfuse_dl_dtype){SCANFUSE_DL_BFLOAT, 16, 1}
                                  : (scanfuse_dl_dtype){SCANFUSE_DL_FLOAT, 32, 1};
        c->in = (scanfuse_dl_tensor){(void *)(uintptr_t)c->src, {SCANFUSE_DL_CUDA, 0}, 2, dt, c->shape, NULL, 0};
        c->out = c->in;
        c->out.data = (void *)(uintptr_t)c->dst;
        for (int r = 0; r < NROWS; r++) {
            if (r == ROW_EMPTY_PDL && !cu.LaunchKernelEx) continue;
            double host[99], devt[99];
            for (int b = -1; b < repeat; b++) {
                ck(cu.StreamSynchronize(stream), "cuStreamSynchronize");
                if (prof && r == ROW_RUN && b == 0) profile_start();
                ck(cu.EventRecord(ev0, stream), "cuEventRecord");
                double t0 = now_s();
                for (int i = 0; i < calls; i++) call_once(c, (enum row)r);
                double t1 = now_s();
                ck(cu.EventRecord(ev1, stream), "cuEventRecord");
                ck(cu.EventSynchronize(ev1), "cuEventSynchronize");
                if (prof && r == ROW_RUN && b == repeat - 1) profile_stop();
                float ms = 0;
                ck(cu.EventElapsedTime(&ms, ev0, ev1), "cuEventElapsedTime");
                if (b < 0) continue; /* warm-up */
                host[b] = (t1 - t0) / calls;
                devt[b] = 1e-3 * ms / calls;
            }
            double h = median(host, repeat), d = median(devt, repeat);
            printf("%-18s %-10s %12.2f %12.2f\n", c->name, row_name[r], h * 1e6, d * 1e6);
            if (jf)
                fprintf(jf, "{\"case\": \"%s\", \"row\": \"%s\", \"tune\": \"%s\", \"host_us\": %.4f, "
                            "\"device_us\": %.4f, \"calls\": %d, \"repeat\": %d, \"bytes\": %zu}\n",
                        c->name, row_name[r], tune, h * 1e6, d * 1e6, calls, repeat, c->bytes);
            if (prof && r == ROW_RUN) {
                profile_report();
                nsamples = 0;
            }
        }
        scanfuse_program_free(c->prog);
    }
    if (jf) fclose(jf);
    return 0;
}
