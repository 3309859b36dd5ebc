/*
 * bench_scan.c — the CPU scan benchmark of issue 3: every case of the target
 * table at 1 thread and at all threads, each against a plain memcpy of the same bytes
 * timed in the same run (the ratio is what counts on a shared, noisy machine), and the
 * cumsum decompositions (matmul, masked-sum) against the native scan.
 *
 *   bench_scan [--repeat N] [--json FILE] [--quick] [--only SUBSTRING] [--threads N]
 *
 * Per case: the program is compiled once per thread count; 3 warm-up runs, then the
 * median of N (default 11) timed scanfuse_run calls (CLOCK_MONOTONIC).  bytes = every
 * input read once plus every output written once (scanfuse_program_floor_bytes).  The
 * copy: the same number of bytes (bytes/2 read, bytes/2 written) by memcpy, split in
 * equal slices over the same number of threads, the median of N after 3 warm-ups,
 * measured right after the scan.  Buffers are 64-byte aligned and touched before timing.
 * `--json FILE` appends one JSON object per case (JSON lines).  Not a test: it never
 * fails on a slow result, it reports it.
 */
#include <scanfuse.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_timing.h"

#define WARMUP 3

static void *xalloc(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 64) != 0) {
        fprintf(stderr, "bench_scan: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

/* ---- a multi-threaded memcpy of the same bytes ---- */

typedef struct copy_slice {
    char *dst;
    const char *src;
    size_t n;
} copy_slice;

static void *copy_thread(void *arg) {
    copy_slice *s = arg;
    memcpy(s->dst, s->src, s->n);
    return NULL;
}

static void par_copy(char *dst, const char *src, size_t n, int threads) {
    if (threads <= 1) {
        memcpy(dst, src, n);
        return;
    }
    pthread_t t[64];
    copy_slice s[64];
    size_t per = (n / (size_t)threads + 63) / 64 * 64;
    for (int i = 0; i < threads; i++) {
        size_t a = per * (size_t)i, b = a + per < n ? a + per : n;
        s[i].dst = dst + a;
        s[i].src = src + a;
        s[i].n = b > a ? b - a : 0;
    }
    for (int i = 1; i < threads; i++) pthread_create(&t[i], NULL, copy_thread, &s[i]);
    copy_thread(&s[0]);
    for (int i = 1; i < threads; i++) pthread_join(t[i], NULL);
}

static double time_copy(int64_t bytes, int threads, int repeat) {
    size_t half = (size_t)(bytes / 2 > 0 ? bytes / 2 : 1);
    char *src = xalloc(half), *dst = xalloc(half);
    memset(src, 1, half);
    memset(dst, 0, half);
    double *t = malloc(sizeof(double) * (size_t)repeat);
    for (int i = 0; i < WARMUP + repeat; i++) {
        double t0 = now_s();
        par_copy(dst, src, half, threads);
        double t1 = now_s();
        src[(size_t)i % half] = (char)i;
        if (i >= WARMUP) t[i - WARMUP] = t1 - t0;
    }
    double m = median(t, repeat);
    free(t);
    free(src);
    free(dst);
    return m;
}

/* ---- tensors ---- */

typedef struct tens {
    scanfuse_dl_tensor dl;
    int64_t shape[SCANFUSE_MAX_DIMS];
    void *data;
    size_t bytes;
} tens;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void tens_init(tens *t, scanfuse_dtype dt, int nd, const int64_t *shape, bool fill) {
    memset(t, 0, sizeof *t);
    int64_t n = 1;
    for (int i = 0; i < nd; i++) {
        t->shape[i] = shape[i];
        n *= shape[i];
    }
    size_t es = scanfuse_dtype_size(dt);
    t->bytes = (size_t)n * es;
    t->data = xalloc(t->bytes);
    t->dl.data = t->data;
    t->dl.device.device_type = SCANFUSE_DL_CPU;
    t->dl.ndim = nd;
    t->dl.dtype = scanfuse_dtype_to_dl(dt);
    t->dl.shape = t->shape;
    if (!fill) {
        memset(t->data, 0, t->bytes);
        return;
    }
    unsigned char *p = t->data;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng();
        switch (dt) {
        case SCANFUSE_FLOAT32: { float f = (float)((double)(r >> 11) * 0x1p-53 * 2.0 - 1.0); memcpy(p + 4 * i, &f, 4); break; }
        case SCANFUSE_FLOAT64: { double d = (double)(r >> 11) * 0x1p-53 * 2.0 - 1.0; memcpy(p + 8 * i, &d, 8); break; }
        case SCANFUSE_FLOAT16: { uint16_t h = (uint16_t)(0x3000u | (r & 0x3FFu) | ((r >> 20) & 1u) << 15); memcpy(p + 2 * i, &h, 2); break; }
        case SCANFUSE_BFLOAT16: { uint16_t h = (uint16_t)(0x3E00u | (r & 0x7Fu) | ((r >> 20) & 1u) << 15); memcpy(p + 2 * i, &h, 2); break; }
        case SCANFUSE_INT32: { int32_t v = (int32_t)(r % 2001) - 1000; memcpy(p + 4 * i, &v, 4); break; }
        case SCANFUSE_INT64: { int64_t v = (int64_t)(r % 2000001) - 1000000; memcpy(p + 8 * i, &v, 8); break; }
        default: p[i] = (unsigned char)(r & 1); break;
        }
    }
}

/* ---- one case ---- */

typedef struct bcase {
    const char *name;   /* short label */
    const char *op;     /* cumsum / cummax */
    scanfuse_dtype dt;
    int nd;
    int64_t shape[2];
    int dim;
    const char *target; /* the ratio target, for the table */
    double goal;
} bcase;

typedef struct result {
    double secs, copy_secs;
    int64_t bytes;
    int threads;
    bool ok;
} result;

static char machine[128] = "unknown", commit[64] = "unknown";

static scanfuse_program *compile_text(const char *text, int threads, scanfuse_cumsum_mode mode) {
    scanfuse_fusion *f = scanfuse_parse(text, "bench");
    if (scanfuse_fusion_status(f) != SCANFUSE_OK) {
        fprintf(stderr, "bench_scan: %s\n", scanfuse_fusion_error(f));
        scanfuse_fusion_free(f);
        return NULL;
    }
    scanfuse_options o;
    scanfuse_options_init(&o);
    o.threads = threads;
    o.cumsum_mode = mode;
    scanfuse_program *p = scanfuse_compile(f, &o);
    scanfuse_fusion_free(f);
    if (scanfuse_program_status(p) != SCANFUSE_OK) {
        fprintf(stderr, "bench_scan: compile: %s\n", scanfuse_program_error(p));
        scanfuse_program_free(p);
        return NULL;
    }
    return p;
}

/* Times program p on its inputs; returns the median seconds (< 0 on failure). */
static double time_program(scanfuse_program *p, tens *ins, int nin, tens *outs, int nout, int repeat) {
    scanfuse_dl_tensor din[4], dout[4];
    for (int i = 0; i < nin; i++) din[i] = ins[i].dl;
    for (int i = 0; i < nout; i++) dout[i] = outs[i].dl;
    double *t = malloc(sizeof(double) * (size_t)repeat);
    for (int i = 0; i < WARMUP + repeat; i++) {
        double t0 = now_s();
        scanfuse_status st = scanfuse_run(p, din, nin, dout, nout);
        double t1 = now_s();
        if (st != SCANFUSE_OK) {
            fprintf(stderr, "bench_scan: run: %s\n", scanfuse_program_error(p));
            free(t);
            return -1;
        }
        if (i >= WARMUP) t[i - WARMUP] = t1 - t0;
    }
    double m = median(t, repeat);
    free(t);
    return m;
}

static void shape_str(char *buf, size_t len, int nd, const int64_t *shape) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, len - k, "[");
    for (int i = 0; i < nd; i++) k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    snprintf(buf + k, len - k, "]");
}

static result run_case(const bcase *c, int threads, int repeat) {
    result r = {0, 0, 0, threads, false};
    char sh[64], text[512];
    shape_str(sh, sizeof sh, c->nd, c->shape);
    bool two = strcmp(c->op, "cummax") == 0 || strcmp(c->op, "cummin") == 0;
    scanfuse_dtype odt = c->dt;
    if (!two && (c->dt == SCANFUSE_INT32 || c->dt == SCANFUSE_BOOL)) odt = SCANFUSE_INT64;
    if (two)
        snprintf(text, sizeof text, "input x: %s%s\nv, i = %s(x, dim=%d)\noutput v, i\n",
                 scanfuse_dtype_name(c->dt), sh, c->op, c->dim);
    else
        snprintf(text, sizeof text, "input x: %s%s\ny = %s(x, dim=%d)\noutput y\n",
                 scanfuse_dtype_name(c->dt), sh, c->op, c->dim);
    scanfuse_program *p = compile_text(text, threads, SCANFUSE_CUMSUM_NATIVE);
    if (!p) return r;
    tens in, out[2];
    tens_init(&in, c->dt, c->nd, c->shape, true);
    if (strcmp(c->op, "cumprod") == 0) { /* factors near 1 (decays): no underflow to 0 */
        int64_t n = (int64_t)(in.bytes / scanfuse_dtype_size(c->dt));
        for (int64_t i = 0; i < n; i++) {
            if (c->dt == SCANFUSE_FLOAT32) ((float *)in.data)[i] = 1.0f + ((float *)in.data)[i] * 0x1p-10f;
            if (c->dt == SCANFUSE_FLOAT64) ((double *)in.data)[i] = 1.0 + ((double *)in.data)[i] * 0x1p-10;
        }
    }
    tens_init(&out[0], odt, c->nd, c->shape, false);
    if (two) tens_init(&out[1], SCANFUSE_INT64, c->nd, c->shape, false);
    r.secs = time_program(p, &in, 1, out, two ? 2 : 1, repeat);
    r.bytes = scanfuse_program_floor_bytes(p);
    scanfuse_program_free(p);
    free(in.data);
    free(out[0].data);
    if (two) free(out[1].data);
    if (r.secs <= 0) return r;
    r.copy_secs = time_copy(r.bytes, threads, repeat);
    r.ok = true;
    return r;
}

static void emit_json(FILE *jf, const char *kind, const bcase *c, const result *r, int repeat,
                      const char *mode, double native_secs) {
    if (!jf) return;
    char sh[64];
    shape_str(sh, sizeof sh, c->nd, c->shape);
    double gbps = (double)r->bytes / r->secs * 1e-9;
    fprintf(jf, "{\"bench\": \"bench_scan\", \"kind\": \"%s\", \"case\": \"%s\", \"op\": \"%s\", "
                "\"dtype\": \"%s\", \"shape\": \"%s\", \"dim\": %d, \"threads\": %d, "
                "\"seconds\": %.9g, \"bytes\": %lld, \"gbps\": %.6g, ",
            kind, c->name, c->op, scanfuse_dtype_name(c->dt), sh, c->dim, r->threads, r->secs,
            (long long)r->bytes, gbps);
    if (mode) {
        fprintf(jf, "\"cumsum_mode\": \"%s\", \"native_seconds\": %.9g, \"slowdown_vs_native\": %.6g, ",
                mode, native_secs, r->secs / native_secs);
    } else {
        double cg = (double)r->bytes / r->copy_secs * 1e-9;
        fprintf(jf, "\"copy_gbps\": %.6g, \"ratio\": %.6g, \"target\": %.3g, ", cg, gbps / cg, c->goal);
    }
    fprintf(jf, "\"repeat\": %d, \"machine\": \"%s\", \"commit\": \"%s\"}\n", repeat, machine, commit);
    fflush(jf);
}

int main(int argc, char **argv) {
    int repeat = 11, only_threads = -1;
    const char *json = NULL, *only = NULL;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) json = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) only_threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0) quick = true;
        else {
            fprintf(stderr, "usage: bench_scan [--repeat N] [--json FILE] [--quick] [--only SUBSTRING] [--threads N]\n");
            return 2;
        }
    }
    if (repeat < 9) repeat = 9;
    const char *e = getenv("BENCH_MACHINE");
    if (e) snprintf(machine, sizeof machine, "%s", e);
    e = getenv("BENCH_COMMIT");
    if (e) snprintf(commit, sizeof commit, "%s", e);
    FILE *jf = json ? fopen(json, "a") : NULL;
    if (json && !jf) {
        fprintf(stderr, "bench_scan: cannot open %s\n", json);
        return 2;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int all = ncpu > 0 ? (int)ncpu : 1;
    const int64_t N = quick ? (int64_t)1 << 22 : (int64_t)1 << 26;
    const int64_t S = quick ? 1024 : 4096;
    const bcase cases[] = {
        {"f32 1-D", "cumsum", SCANFUSE_FLOAT32, 1, {N, 0}, 0, ">= 0.75", 0.75},
        {"f64 1-D", "cumsum", SCANFUSE_FLOAT64, 1, {N, 0}, 0, ">= 0.75", 0.75},
        {"i64 1-D", "cumsum", SCANFUSE_INT64, 1, {N, 0}, 0, ">= 0.75", 0.75},
        {"i32->i64 1-D", "cumsum", SCANFUSE_INT32, 1, {N, 0}, 0, ">= 0.75", 0.75},
        {"f16 1-D", "cumsum", SCANFUSE_FLOAT16, 1, {N, 0}, 0, ">= 0.60", 0.60},
        {"bf16 1-D", "cumsum", SCANFUSE_BFLOAT16, 1, {N, 0}, 0, ">= 0.60", 0.60},
        {"f32 [S,S] dim 0", "cumsum", SCANFUSE_FLOAT32, 2, {S, S}, 0, ">= 0.75", 0.75},
        {"f32 [S,S] dim 1", "cumsum", SCANFUSE_FLOAT32, 2, {S, S}, 1, ">= 0.75", 0.75},
        {"f32 [65536,128] dim 1", "cumsum", SCANFUSE_FLOAT32, 2, {quick ? 8192 : 65536, 128}, 1, ">= 0.70", 0.70},
        {"f32 [128,65536] dim 0", "cumsum", SCANFUSE_FLOAT32, 2, {128, quick ? 8192 : 65536}, 0, ">= 0.70", 0.70},
        {"cummax f32 1-D", "cummax", SCANFUSE_FLOAT32, 1, {N, 0}, 0, ">= 0.60", 0.60},
        /* beyond the table (no target of its own; cummax's 0.60 for reference):
         * the chain kernels of cpu_scan_chain.c */
        {"cummax i64 1-D", "cummax", SCANFUSE_INT64, 1, {N, 0}, 0, "(0.60)", 0.60},
        {"cummin f64 1-D", "cummin", SCANFUSE_FLOAT64, 1, {N, 0}, 0, "(0.60)", 0.60},
        {"cummax f32 [S,S] dim 0", "cummax", SCANFUSE_FLOAT32, 2, {S, S}, 0, "(0.60)", 0.60},
        {"cummin i64 [S,S] dim 0", "cummin", SCANFUSE_INT64, 2, {S, S}, 0, "(0.60)", 0.60},
        {"cumprod f32 1-D", "cumprod", SCANFUSE_FLOAT32, 1, {N, 0}, 0, "-", 0},
        {"cumprod f64 1-D", "cumprod", SCANFUSE_FLOAT64, 1, {N, 0}, 0, "-", 0},
        {"cumprod f32 [S,S] dim 0", "cumprod", SCANFUSE_FLOAT32, 2, {S, S}, 0, "-", 0},
        {"cumprod f32 [S,S] dim 1", "cumprod", SCANFUSE_FLOAT32, 2, {S, S}, 1, "-", 0},
    };
    int ncases = (int)(sizeof cases / sizeof cases[0]);
    printf("bench_scan: repeat %d (median), machine %s, %d online cpus\n", repeat, machine, all);
    printf("%-24s %-6s %7s %12s %10s %10s %10s %7s %8s\n", "case", "shape", "threads", "bytes",
           "time ms", "GB/s", "copy GB/s", "ratio", "target");
    for (int ci = 0; ci < ncases; ci++) {
        const bcase *c = &cases[ci];
        if (only && !strstr(c->name, only)) continue;
        int tl[2] = {1, all}, ntl = all > 1 ? 2 : 1;
        if (only_threads >= 0) {
            tl[0] = only_threads == 0 ? all : only_threads;
            ntl = 1;
        }
        for (int ti = 0; ti < ntl; ti++) {
            result r = run_case(c, tl[ti], repeat);
            if (!r.ok) {
                printf("%-24s failed\n", c->name);
                continue;
            }
            double gbps = (double)r.bytes / r.secs * 1e-9, cg = (double)r.bytes / r.copy_secs * 1e-9;
            char sh[64];
            shape_str(sh, sizeof sh, c->nd, c->shape);
            printf("%-24s %-6s %7d %12lld %10.3f %10.2f %10.2f %7.3f %8s%s\n", c->name,
                   c->nd == 1 ? "1-D" : "2-D", r.threads, (long long)r.bytes, r.secs * 1e3, gbps, cg,
                   gbps / cg, c->target, gbps / cg >= c->goal ? "" : "  (missed)");
            emit_json(jf, "ratio", c, &r, repeat, NULL, 0);
        }
        fflush(stdout);
    }

    /* The decompositions: cumsum of float32 [n] natively, as x @ triu(ones) and as
     * sum(where(i <= j, x, 0)); O(n^2) work, so the ratio to native grows with n. */
    if (!only || strstr("decomposition", only)) {
        printf("\n%-24s %7s %14s %14s %14s\n", "decomposition", "n", "native ms", "matmul ms", "masked-sum ms");
        static const int64_t ns[] = {128, 1024, 8192};
        for (int k = 0; k < 3; k++) {
            int64_t n = ns[k];
            char text[256];
            snprintf(text, sizeof text, "input x: float32[%lld]\ny = cumsum(x, dim=0)\noutput y\n", (long long)n);
            double secs[3] = {0, 0, 0};
            static const scanfuse_cumsum_mode modes[3] = {SCANFUSE_CUMSUM_NATIVE, SCANFUSE_CUMSUM_MATMUL,
                                                          SCANFUSE_CUMSUM_MASKED_SUM};
            static const char *const mnames[3] = {"native", "matmul", "masked-sum"};
            for (int m = 0; m < 3; m++) {
                scanfuse_program *p = compile_text(text, 1, modes[m]);
                if (!p) continue;
                tens in, out;
                int64_t sh[1] = {n};
                tens_init(&in, SCANFUSE_FLOAT32, 1, sh, true);
                tens_init(&out, SCANFUSE_FLOAT32, 1, sh, false);
                secs[m] = time_program(p, &in, 1, &out, 1, repeat);
                bcase c = {"decomposition", "cumsum", SCANFUSE_FLOAT32, 1, {n, 0}, 0, "", 0};
                result r = {secs[m], 0, scanfuse_program_floor_bytes(p), 1, true};
                if (secs[m] > 0) emit_json(jf, "decomposition", &c, &r, repeat, mnames[m], secs[0]);
                scanfuse_program_free(p);
                free(in.data);
                free(out.data);
            }
            printf("%-24s %7lld %14.4f %14.4f %14.4f   (matmul %.0fx, masked-sum %.0fx native)\n",
                   "cumsum f32 1-D, 1 thread", (long long)n, secs[0] * 1e3, secs[1] * 1e3, secs[2] * 1e3,
                   secs[1] / secs[0], secs[2] / secs[0]);
        }
    }
    if (jf) fclose(jf);
    return 0;
}
