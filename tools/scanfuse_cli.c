/*
 * scanfuse_cli.c — the `scanfuse` command: runs, checks and benchmarks fusion files.
 *
 *   scanfuse run FILE [options]     run a fusion file, print or save its outputs
 *   scanfuse bench FILE [options]   time it against a plain memory copy
 *   scanfuse ops                    list the op table
 *   scanfuse --help | --version
 *
 * Invariants:
 *  - every failure (bad option, missing or malformed file, a mismatching --in array, an
 *    unknown --out name, an unwritable path, a failed compile or run, a failed --check)
 *    ends with exactly one line "scanfuse: ..." on stderr and a non-zero exit status
 *    (2 for a bad command line, 1 otherwise); nothing aborts, whatever the input;
 *  - inputs not given with --in are drawn deterministically from (seed, input index),
 *    so a run reproduces bit for bit;
 *  - outputs are written only after the run succeeded, each through sf_npy_write
 *    (PATH.tmp + rename), so a failed run leaves no output files behind.
 *
 * The --check rule (also in the help text): the program is run a second time on the
 * reference evaluator with float64 (floating outputs) or int64 (bool and integer
 * outputs) result buffers, which receive the reference value before its final rounding.
 * Then, per output:
 *  - bool and integer outputs must equal the reference (wrapped to the output dtype)
 *    exactly; the mismatches are counted;
 *  - NaN and infinities must match exactly (same positions, same signs), comparing with
 *    the reference rounded to the output dtype (a finite reference that rounds to
 *    infinity expects infinity);
 *  - every other floating element passes when its error is at most 2 ulp of the output
 *    dtype at the reference value (|got - ref| / sf_ulp(ref, dtype) <= 2), or when
 *    |got - ref| <= 2^-40 * M (cancellation: results far smaller than the magnitudes
 *    they came from), where M = max |ref| over the output, and for float64 outputs
 *    M = max(1, max |ref|).
 *  The worst ulp error and the worst normalized error |got - ref| / max(M, tiny) are
 *  printed per output.
 */
#include "scanfuse.h"
#include "sf.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define CLI_MAX_PAIRS 64
#define CLI_WARMUP 3

typedef struct cli_pair {
    const char *name; /* points into a copy owned by the pair */
    const char *path;
    char *owned;
    bool used;
} cli_pair;

typedef struct cli_opts {
    const char *cmd; /* "run" or "bench" */
    const char *file;
    scanfuse_options options;
    const char *device_name;
    uint64_t seed;
    cli_pair ins[CLI_MAX_PAIRS];
    int nins;
    cli_pair outs[CLI_MAX_PAIRS];
    int nouts;
    const char *out_dir;
    bool check, segments, json;
    int repeat;
} cli_opts;

/* One tensor the CLI owns: its metadata and a C-order buffer. */
typedef struct cli_tensor {
    const char *name;
    scanfuse_dtype dtype;
    int ndim;
    int64_t shape[SF_MAX_DIMS];
    void *data;
    size_t nbytes;
    int64_t numel;
    scanfuse_dl_tensor dl;
    void *dev; /* --device cuda: the device copy (sf_cuda_alloc), else NULL */
    int dev_id;
} cli_tensor;

/* ------------------------------------------------------------------------------ */
/* Messages                                                                         */
/* ------------------------------------------------------------------------------ */

/* Prints "scanfuse: MESSAGE" as one line on stderr (newlines in library messages are
 * flattened). */
static void fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static void fail(const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    fprintf(stderr, "scanfuse: %s\n", buf);
}

static const char usage_text[] =
    "usage:\n"
    "  scanfuse run FILE [options]     run a fusion file (text form), print or save outputs\n"
    "  scanfuse bench FILE [options]   time a fusion file against a plain memory copy\n"
    "  scanfuse ops                    list the op table with signatures\n"
    "  scanfuse --help | --version\n"
    "\n"
    "options for run and bench:\n"
    "  --device cpu|cuda[:N]|reference where to run (default cpu); cuda copies the inputs\n"
    "                                  to the GPU and the outputs back, outside the timing\n"
    "  --threads N                     worker threads (default 0: every core)\n"
    "  --seed S                        seed of the generated inputs (default 0)\n"
    "  --in NAME=PATH.npy              take input NAME from a .npy file (repeatable);\n"
    "                                  dtype and shape must match the declaration\n"
    "  --cumsum native|matmul|masked-sum   how cumsum is lowered (default native)\n"
    "  --no-fuse                       run op by op instead of fused kernels\n"
    "  --segments                      print the kernels (segments) of the program\n"
    "  --dump-ir[=PASS]                print the IR after PASS (default: every pass)\n"
    "options for run:\n"
    "  --out NAME=PATH.npy             write output NAME to a .npy file (repeatable)\n"
    "  --out-dir DIR                   write every output as DIR/NAME.npy\n"
    "  --check                         compare every output with the reference evaluator\n"
    "options for bench:\n"
    "  --repeat N                      timed runs after 3 warm-up runs (default 20)\n"
    "  --json                          one JSON object per line instead of a table\n"
    "\n"
    "Inputs not given with --in are generated from the seed, per input: floats uniform\n"
    "in [-1, 1), uint8 in [0, 16], other integers in [-8, 8], bool true or false with\n"
    "equal odds.  bfloat16 .npy files use the descr '|V2' (raw little-endian bits).\n"
    "\n"
    "--check runs the program again on the reference evaluator (float64 / int64 results,\n"
    "before their final rounding) and prints the worst error per output.  Integer and\n"
    "bool outputs must match exactly.  NaN and infinities must match in position and\n"
    "sign.  A floating element passes when |got - ref| <= 2 ulp of the output dtype at\n"
    "ref, or when |got - ref| <= 2^-40 * M, M = max |ref| over the output (float64:\n"
    "max(1, max |ref|)).  Any failing output makes the exit status 1.\n"
    "\n"
    "bench reports the median of --repeat runs, the bytes one run must move (inputs read\n"
    "once, outputs written once), GB/s, and the GB/s of a memcpy of the same number of\n"
    "bytes (read + write) timed the same way in the same process; ratio = GB/s / copy.\n"
    "With --device cuda every timed run is waited for; it also reports the time per run\n"
    "of 10 x --repeat (at least 200) runs issued back to back with one wait at the end.\n"
    "\n"
    "Exit status: 0 on success, 1 on an error or a failed check, 2 on a bad command line.\n";

static void usage(FILE *fp) { fputs(usage_text, fp); }

/* ------------------------------------------------------------------------------ */
/* Command line                                                                     */
/* ------------------------------------------------------------------------------ */

static bool parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-' || *s == '+') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end) return false;
    *out = v;
    return true;
}

static bool parse_pair(const char *opt, const char *arg, cli_pair *p) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) {
        fail("%s expects NAME=PATH, got '%s'", opt, arg);
        return false;
    }
    p->owned = sf_strdup(arg);
    if (!p->owned) {
        fail("out of memory");
        return false;
    }
    p->owned[eq - arg] = '\0';
    p->name = p->owned;
    p->path = p->owned + (eq - arg) + 1;
    p->used = false;
    return true;
}

static void free_opts(cli_opts *o) {
    for (int i = 0; i < o->nins; i++) free(o->ins[i].owned);
    for (int i = 0; i < o->nouts; i++) free(o->outs[i].owned);
}

/* Parses argv[2..] of run/bench.  Returns false (after a message) on a bad line. */
static bool parse_args(int argc, char **argv, cli_opts *o) {
    bool bench = strcmp(o->cmd, "bench") == 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] == '\0') {
            if (o->file) {
                fail("%s: more than one FILE given ('%s' and '%s')", o->cmd, o->file, a);
                return false;
            }
            o->file = a;
            continue;
        }
        /* "--opt=value" or "--opt value" */
        char key[64];
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        size_t klen = eq ? (size_t)(eq - a) : strlen(a);
        if (klen >= sizeof key) klen = sizeof key - 1;
        memcpy(key, a, klen);
        key[klen] = '\0';
        if (eq) val = eq + 1;
#define NEED_VALUE()                                                                    \
    do {                                                                                \
        if (!val) {                                                                     \
            if (i + 1 >= argc) {                                                        \
                fail("option %s needs a value", key);                                   \
                return false;                                                           \
            }                                                                           \
            val = argv[++i];                                                            \
        }                                                                               \
    } while (0)
#define NO_VALUE()                                                                      \
    do {                                                                                \
        if (val) {                                                                      \
            fail("option %s takes no value", key);                                      \
            return false;                                                               \
        }                                                                               \
    } while (0)
#define RUN_ONLY()                                                                      \
    do {                                                                                \
        if (bench) {                                                                    \
            fail("option %s is for 'scanfuse run', not 'bench'", key);                  \
            return false;                                                               \
        }                                                                               \
    } while (0)
        if (strcmp(key, "--device") == 0) {
            NEED_VALUE();
            if (strcmp(val, "cpu") == 0) o->options.device = SCANFUSE_DEVICE_CPU;
            else if (strcmp(val, "cuda") == 0) o->options.device = SCANFUSE_DEVICE_CUDA;
            else if (strncmp(val, "cuda:", 5) == 0) {
                int64_t id;
                if (!parse_i64(val + 5, 0, 1023, &id)) {
                    fail("--device %s: the device number must be 0..1023", val);
                    return false;
                }
                o->options.device = SCANFUSE_DEVICE_CUDA;
                o->options.device_id = (int)id;
            } else if (strcmp(val, "reference") == 0 || strcmp(val, "ref") == 0)
                o->options.device = SCANFUSE_DEVICE_REFERENCE;
            else {
                fail("unknown device '%s' (cpu, cuda, cuda:N or reference)", val);
                return false;
            }
            o->device_name = o->options.device == SCANFUSE_DEVICE_CPU    ? "cpu"
                             : o->options.device == SCANFUSE_DEVICE_CUDA ? "cuda"
                                                                         : "reference";
        } else if (strcmp(key, "--threads") == 0) {
            NEED_VALUE();
            int64_t t;
            if (!parse_i64(val, 0, 4096, &t)) {
                fail("--threads expects an integer in [0, 4096], got '%s'", val);
                return false;
            }
            o->options.threads = (int)t;
        } else if (strcmp(key, "--seed") == 0) {
            NEED_VALUE();
            if (!parse_u64(val, &o->seed)) {
                fail("--seed expects a non-negative integer, got '%s'", val);
                return false;
            }
        } else if (strcmp(key, "--in") == 0 || strcmp(key, "--out") == 0) {
            bool in = strcmp(key, "--in") == 0;
            if (!in) RUN_ONLY();
            NEED_VALUE();
            int *n = in ? &o->nins : &o->nouts;
            cli_pair *arr = in ? o->ins : o->outs;
            if (*n >= CLI_MAX_PAIRS) {
                fail("too many %s options (at most %d)", key, CLI_MAX_PAIRS);
                return false;
            }
            if (!parse_pair(key, val, &arr[*n])) return false;
            for (int j = 0; j < *n; j++) {
                if (strcmp(arr[j].name, arr[*n].name) == 0) {
                    fail("%s %s given twice", key, arr[*n].name);
                    free(arr[*n].owned);
                    return false;
                }
            }
            (*n)++;
        } else if (strcmp(key, "--out-dir") == 0) {
            RUN_ONLY();
            NEED_VALUE();
            if (!*val) {
                fail("--out-dir needs a directory");
                return false;
            }
            o->out_dir = val;
        } else if (strcmp(key, "--check") == 0) {
            RUN_ONLY();
            NO_VALUE();
            o->check = true;
        } else if (strcmp(key, "--cumsum") == 0) {
            NEED_VALUE();
            if (scanfuse_cumsum_mode_parse(val, &o->options.cumsum_mode) != SCANFUSE_OK) {
                fail("unknown cumsum mode '%s' (native, matmul or masked-sum)", val);
                return false;
            }
        } else if (strcmp(key, "--segments") == 0) {
            NO_VALUE();
            o->segments = true;
        } else if (strcmp(key, "--dump-ir") == 0) {
            if (val && !*val) {
                fail("--dump-ir= needs a pass name");
                return false;
            }
            o->options.dump_ir = val ? val : "all";
        } else if (strcmp(key, "--no-fuse") == 0) {
            NO_VALUE();
            o->options.fuse = 0;
        } else if (strcmp(key, "--repeat") == 0) {
            if (!bench) {
                fail("option %s is for 'scanfuse bench', not 'run'", key);
                return false;
            }
            NEED_VALUE();
            int64_t r;
            if (!parse_i64(val, 1, 1000000, &r)) {
                fail("--repeat expects an integer in [1, 1000000], got '%s'", val);
                return false;
            }
            o->repeat = (int)r;
        } else if (strcmp(key, "--json") == 0) {
            if (!bench) {
                fail("option %s is for 'scanfuse bench', not 'run'", key);
                return false;
            }
            NO_VALUE();
            o->json = true;
        } else {
            fail("unknown option '%s' (see scanfuse --help)", a);
            return false;
        }
#undef NEED_VALUE
#undef NO_VALUE
#undef RUN_ONLY
    }
    if (!o->file) {
        fail("%s: no FILE given (see scanfuse --help)", o->cmd);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------------------ */
/* Tensors                                                                          */
/* ------------------------------------------------------------------------------ */

static void shape_str(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

static void tensor_free(cli_tensor *t) {
    if (t->dev) sf_cuda_free(t->dev_id, t->dev);
    t->dev = NULL;
    free(t->data);
    t->data = NULL;
}

/* Allocates a zeroed C-order buffer for a tensor of the given metadata. */
static bool tensor_alloc(cli_tensor *t, const char *name, scanfuse_dtype dt, int ndim,
                         const int64_t *shape) {
    memset(t, 0, sizeof *t);
    t->name = name;
    t->dtype = dt;
    t->ndim = ndim;
    int64_t numel = 1, nbytes;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        if (sf_mul_overflow(numel, shape[d], &numel)) numel = -1;
    }
    if (numel < 0 || sf_mul_overflow(numel, (int64_t)scanfuse_dtype_size(dt), &nbytes) ||
        (uint64_t)nbytes > (uint64_t)SIZE_MAX) {
        fail("%s: tensor too large", name);
        return false;
    }
    t->numel = numel;
    t->nbytes = (size_t)nbytes;
    t->data = sf_calloc(t->nbytes ? t->nbytes : 1, 1);
    if (!t->data) {
        fail("%s: out of memory allocating %zu bytes", name, t->nbytes);
        return false;
    }
    return true;
}

static void tensor_dl(cli_tensor *t) {
    memset(&t->dl, 0, sizeof t->dl);
    t->dl.data = t->data;
    t->dl.device.device_type = SCANFUSE_DL_CPU;
    t->dl.ndim = t->ndim;
    t->dl.dtype = scanfuse_dtype_to_dl(t->dtype);
    t->dl.shape = t->shape;
    t->dl.strides = NULL;
}

/* --device cuda: gives t a device buffer of its bytes (copied there when `upload`) and
 * sets *dl to describe it; the host buffer stays for --check, printing and --out. */
static bool tensor_to_device(const cli_opts *o, cli_tensor *t, bool upload,
                             scanfuse_dl_tensor *dl) {
    char msg[512];
    t->dev_id = o->options.device_id;
    if (sf_cuda_alloc(t->dev_id, t->nbytes, &t->dev, msg, sizeof msg) != SCANFUSE_OK ||
        (upload && sf_cuda_copy_to_device(t->dev_id, t->dev, t->data, t->nbytes, msg,
                                          sizeof msg) != SCANFUSE_OK)) {
        fail("%s: cannot make its copy on cuda:%d: %s", t->name, t->dev_id, msg);
        return false;
    }
    *dl = t->dl;
    dl->data = t->dev;
    dl->device.device_type = SCANFUSE_DL_CUDA;
    dl->device.device_id = t->dev_id;
    return true;
}

/* --device cuda: waits for the device and copies the outputs back to their host buffers. */
static bool outputs_to_host(cli_tensor *outs, int nout) {
    char msg[512];
    if (nout > 0 && sf_cuda_synchronize(outs[0].dev_id, msg, sizeof msg) != SCANFUSE_OK) {
        fail("cuda: %s", msg);
        return false;
    }
    for (int i = 0; i < nout; i++)
        if (outs[i].dev && sf_cuda_copy_to_host(outs[i].dev_id, outs[i].data, outs[i].dev,
                                                outs[i].nbytes, msg, sizeof msg) != SCANFUSE_OK) {
            fail("%s: cannot copy the output back from cuda: %s", outs[i].name, msg);
            return false;
        }
    return true;
}

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Fills input number `index` from the seed (see the help text for the ranges). */
static void fill_random(cli_tensor *t, uint64_t seed, int index) {
    uint64_t st = seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(index + 1));
    (void)splitmix64(&st);
    for (int64_t i = 0; i < t->numel; i++) {
        uint64_t r = splitmix64(&st);
        switch (sf_dtype_category(t->dtype)) {
        case SF_CAT_BOOL: sf_store_i64(t->data, i, t->dtype, (int64_t)(r >> 63)); break;
        case SF_CAT_INT:
            if (t->dtype == SCANFUSE_UINT8) sf_store_i64(t->data, i, t->dtype, (int64_t)(r % 17));
            else sf_store_i64(t->data, i, t->dtype, (int64_t)(r % 17) - 8);
            break;
        case SF_CAT_FLOAT:
            sf_store_f64(t->data, i, t->dtype, (double)(r >> 11) * 0x1.0p-52 - 1.0);
            break;
        }
    }
}

static void json_string(FILE *fp, const char *s) {
    fputc('"', fp);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(fp, "\\%c", *p);
        else if (*p < 0x20) fprintf(fp, "\\u%04x", *p);
        else fputc(*p, fp);
    }
    fputc('"', fp);
}

/* Prints up to 8 values of an output. */
static void print_summary(const cli_tensor *t) {
    char sh[256];
    shape_str(t->ndim, t->shape, sh, sizeof sh);
    printf("%s: %s%s = [", t->name, scanfuse_dtype_name(t->dtype), sh);
    int64_t n = t->numel < 8 ? t->numel : 8;
    for (int64_t i = 0; i < n; i++) {
        if (i) printf(", ");
        switch (sf_dtype_category(t->dtype)) {
        case SF_CAT_BOOL: printf("%s", sf_load_i64(t->data, i, t->dtype) ? "true" : "false"); break;
        case SF_CAT_INT: printf("%lld", (long long)sf_load_i64(t->data, i, t->dtype)); break;
        case SF_CAT_FLOAT: printf("%.8g", sf_load_f64(t->data, i, t->dtype)); break;
        }
    }
    printf("%s]\n", t->numel > n ? ", ..." : "");
}

/* ------------------------------------------------------------------------------ */
/* --check                                                                          */
/* ------------------------------------------------------------------------------ */

/* Compares output t with its reference ref (float64 or int64, same shape).  Prints one
 * line and returns whether it passes (rule in the file comment). */
static bool check_output(const cli_tensor *t, const cli_tensor *ref) {
    char sh[256];
    shape_str(t->ndim, t->shape, sh, sizeof sh);
    int64_t bad = 0, first_bad = -1;
    if (!sf_dtype_is_float(t->dtype)) {
        for (int64_t i = 0; i < t->numel; i++) {
            int64_t got = sf_load_i64(t->data, i, t->dtype);
            int64_t want = sf_wrap_int(sf_load_i64(ref->data, i, SCANFUSE_INT64), t->dtype);
            if (got != want) {
                if (first_bad < 0) first_bad = i;
                bad++;
            }
        }
        if (bad == 0) {
            printf("check %s %s%s: exact, ok\n", t->name, scanfuse_dtype_name(t->dtype), sh);
            return true;
        }
        printf("check %s %s%s: %lld of %lld elements differ (first at flat index %lld: got %lld, "
               "reference %lld), FAIL\n",
               t->name, scanfuse_dtype_name(t->dtype), sh, (long long)bad, (long long)t->numel,
               (long long)first_bad, (long long)sf_load_i64(t->data, first_bad, t->dtype),
               (long long)sf_wrap_int(sf_load_i64(ref->data, first_bad, SCANFUSE_INT64),
                                      t->dtype));
        return false;
    }
    double maxabs = 0.0;
    for (int64_t i = 0; i < t->numel; i++) {
        double r = sf_load_f64(ref->data, i, SCANFUSE_FLOAT64);
        if (isfinite(r) && fabs(r) > maxabs) maxabs = fabs(r);
    }
    double m = maxabs;
    if (t->dtype == SCANFUSE_FLOAT64 && m < 1.0) m = 1.0;
    double abs_tol = ldexp(m, -40);
    double norm_den = maxabs > 0.0 ? maxabs : 1.0;
    double max_ulp = 0.0, max_norm = 0.0;
    int64_t special_bad = 0;
    for (int64_t i = 0; i < t->numel; i++) {
        double got = sf_load_f64(t->data, i, t->dtype);
        double r = sf_load_f64(ref->data, i, SCANFUSE_FLOAT64);
        double rr = sf_round_to(r, t->dtype);
        bool ok;
        if (!isfinite(rr) || !isfinite(got)) {
            /* NaN/inf: exact match of kind and sign */
            ok = (isnan(rr) && isnan(got)) || (isinf(rr) && got == rr);
            if (!ok) special_bad++;
        } else {
            double err = fabs(got - r);
            double ulps = err / sf_ulp(r, t->dtype);
            double norm = err / norm_den;
            if (ulps > max_ulp) max_ulp = ulps;
            if (norm > max_norm) max_norm = norm;
            ok = ulps <= 2.0 || err <= abs_tol;
        }
        if (!ok) {
            if (first_bad < 0) first_bad = i;
            bad++;
        }
    }
    printf("check %s %s%s: max %.3g ulp, max normalized error %.3g", t->name,
           scanfuse_dtype_name(t->dtype), sh, max_ulp, max_norm);
    if (bad == 0) {
        printf(", ok\n");
        return true;
    }
    printf(", %lld of %lld elements out of tolerance", (long long)bad, (long long)t->numel);
    if (special_bad) printf(" (%lld NaN/inf mismatches)", (long long)special_bad);
    printf(" (first at flat index %lld: got %.17g, reference %.17g), FAIL\n", (long long)first_bad,
           sf_load_f64(t->data, first_bad, t->dtype),
           sf_load_f64(ref->data, first_bad, SCANFUSE_FLOAT64));
    return false;
}

/* Runs the reference evaluator on the same inputs and checks every output. */
static int run_check(const scanfuse_fusion *fusion, const cli_opts *o, cli_tensor *ins, int nin,
                     cli_tensor *outs, int nout) {
    scanfuse_options ro;
    scanfuse_options_init(&ro);
    ro.device = SCANFUSE_DEVICE_REFERENCE;
    ro.threads = o->options.threads;
    scanfuse_program *rp = scanfuse_compile(fusion, &ro);
    if (!rp) {
        fail("out of memory");
        return 1;
    }
    if (scanfuse_program_status(rp) != SCANFUSE_OK) {
        fail("%s: cannot compile for the reference evaluator: %s", o->file,
             scanfuse_program_error(rp));
        scanfuse_program_free(rp);
        return 1;
    }
    cli_tensor *refs = sf_calloc((size_t)(nout > 0 ? nout : 1), sizeof *refs);
    scanfuse_dl_tensor *din = sf_calloc((size_t)(nin > 0 ? nin : 1), sizeof *din);
    scanfuse_dl_tensor *dout = sf_calloc((size_t)(nout > 0 ? nout : 1), sizeof *dout);
    int rc = 1, nref = 0;
    if (!refs || !din || !dout) {
        fail("out of memory");
        goto done;
    }
    for (int i = 0; i < nin; i++) din[i] = ins[i].dl;
    for (int i = 0; i < nout; i++) {
        scanfuse_dtype wide = sf_dtype_is_float(outs[i].dtype) ? SCANFUSE_FLOAT64 : SCANFUSE_INT64;
        if (!tensor_alloc(&refs[i], outs[i].name, wide, outs[i].ndim, outs[i].shape)) goto done;
        nref++;
        tensor_dl(&refs[i]);
        dout[i] = refs[i].dl;
    }
    scanfuse_status st = scanfuse_run(rp, din, nin, dout, nout);
    if (st != SCANFUSE_OK) {
        fail("%s: the reference evaluator failed: %s", o->file, scanfuse_program_error(rp));
        goto done;
    }
    rc = 0;
    int failed = 0;
    for (int i = 0; i < nout; i++)
        if (!check_output(&outs[i], &refs[i])) failed++;
    fflush(stdout);
    if (failed) {
        fail("%s: --check failed for %d of %d outputs", o->file, failed, nout);
        rc = 1;
    }
done:
    for (int i = 0; i < nref; i++) tensor_free(&refs[i]);
    free(refs);
    free(din);
    free(dout);
    scanfuse_program_free(rp);
    return rc;
}

/* ------------------------------------------------------------------------------ */
/* bench                                                                            */
/* ------------------------------------------------------------------------------ */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static volatile unsigned char bench_sink;

/* Median seconds of a memcpy that reads and writes `bytes` in total. */
static bool time_copy(int64_t bytes, int repeat, double *secs) {
    size_t half = (size_t)(bytes / 2 > 0 ? bytes / 2 : 1);
    unsigned char *src = sf_malloc(half), *dst = sf_malloc(half);
    double *t = sf_malloc(sizeof(double) * (size_t)repeat);
    if (!src || !dst || !t) {
        free(src);
        free(dst);
        free(t);
        return false;
    }
    memset(src, 1, half);
    memset(dst, 0, half);
    for (int i = 0; i < CLI_WARMUP + repeat; i++) {
        double t0 = now_seconds();
        memcpy(dst, src, half);
        double t1 = now_seconds();
        bench_sink = (unsigned char)(bench_sink + dst[(size_t)i % half]);
        src[(size_t)i % half] = (unsigned char)i;
        if (i >= CLI_WARMUP) t[i - CLI_WARMUP] = t1 - t0;
    }
    *secs = median(t, repeat);
    free(src);
    free(dst);
    free(t);
    return true;
}

/* Median seconds of a device-to-device copy that reads and writes `bytes` in total (the
 * --device cuda baseline; each copy waited for, as each timed run is), and the seconds a
 * copy of b2b issued back to back with one wait at the end (as the runs' back-to-back
 * time is taken). */
static bool time_copy_cuda(int device_id, int64_t bytes, int repeat, int b2b, double *secs, double *b2b_secs) {
    size_t half = (size_t)(bytes / 2 > 0 ? bytes / 2 : 1);
    void *src = NULL, *dst = NULL;
    char msg[512];
    double *t = sf_malloc(sizeof(double) * (size_t)repeat);
    bool ok = t && sf_cuda_alloc(device_id, half, &src, msg, sizeof msg) == SCANFUSE_OK &&
              sf_cuda_alloc(device_id, half, &dst, msg, sizeof msg) == SCANFUSE_OK &&
              sf_cuda_memset(device_id, src, 1, half, msg, sizeof msg) == SCANFUSE_OK;
    for (int i = 0; ok && i < CLI_WARMUP + repeat; i++) {
        double t0 = now_seconds();
        ok = sf_cuda_copy_on_device(device_id, dst, src, half, msg, sizeof msg) == SCANFUSE_OK &&
             sf_cuda_synchronize(device_id, msg, sizeof msg) == SCANFUSE_OK;
        double t1 = now_seconds();
        if (i >= CLI_WARMUP) t[i - CLI_WARMUP] = t1 - t0;
    }
    double b0 = now_seconds();
    for (int i = 0; ok && i < b2b; i++)
        ok = sf_cuda_copy_on_device(device_id, dst, src, half, msg, sizeof msg) == SCANFUSE_OK;
    ok = ok && sf_cuda_synchronize(device_id, msg, sizeof msg) == SCANFUSE_OK;
    *b2b_secs = b2b > 0 ? (now_seconds() - b0) / b2b : 0.0;
    if (ok) *secs = median(t, repeat);
    else fail("%s", t ? msg : "out of memory");
    sf_cuda_free(device_id, src);
    sf_cuda_free(device_id, dst);
    free(t);
    return ok;
}

static int threads_used(int requested) {
    if (requested > 0) return requested;
#ifdef _SC_NPROCESSORS_ONLN
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n > 0) return (int)n;
#endif
    return 1;
}

static int do_bench(const cli_opts *o, scanfuse_program *p, cli_tensor *ins, int nin,
                    cli_tensor *outs, int nout, const scanfuse_dl_tensor *din,
                    const scanfuse_dl_tensor *dout) {
    int repeat = o->repeat;
    double *t = sf_malloc(sizeof(double) * (size_t)repeat);
    if (!t) {
        fail("out of memory");
        return 1;
    }
    bool cuda = o->options.device == SCANFUSE_DEVICE_CUDA;
    char msg[512];
    for (int i = 0; i < CLI_WARMUP + repeat; i++) {
        double t0 = now_seconds();
        scanfuse_status st = scanfuse_run(p, din, nin, dout, nout);
        if (st == SCANFUSE_OK && cuda &&
            sf_cuda_synchronize(o->options.device_id, msg, sizeof msg) != SCANFUSE_OK) {
            fail("%s: cuda: %s", o->file, msg);
            free(t);
            return 1;
        }
        double t1 = now_seconds();
        if (st != SCANFUSE_OK) {
            fail("%s: run failed: %s", o->file, scanfuse_program_error(p));
            free(t);
            return 1;
        }
        if (i >= CLI_WARMUP) t[i - CLI_WARMUP] = t1 - t0;
    }
    double secs = median(t, repeat);
    free(t);
    /* back to back: runs issued without waiting between them (one wait at the end), per
     * run; on the GPU this is what a caller that queues runs pays, the host's launch path
     * included where it is the slower side */
    int b2b = cuda ? (repeat * 10 < 200 ? 200 : repeat * 10) : 0; /* (CPU runs are synchronous) */
    double b0 = now_seconds();
    for (int i = 0; i < b2b; i++)
        if (scanfuse_run(p, din, nin, dout, nout) != SCANFUSE_OK) {
            fail("%s: run failed: %s", o->file, scanfuse_program_error(p));
            return 1;
        }
    if (cuda && sf_cuda_synchronize(o->options.device_id, msg, sizeof msg) != SCANFUSE_OK) {
        fail("%s: cuda: %s", o->file, msg);
        return 1;
    }
    double b2b_secs = b2b > 0 ? (now_seconds() - b0) / b2b : secs;
    int64_t bytes = scanfuse_program_floor_bytes(p);
    if (bytes <= 0) {
        bytes = 0;
        for (int i = 0; i < nin; i++) bytes += (int64_t)ins[i].nbytes;
        for (int i = 0; i < nout; i++) bytes += (int64_t)outs[i].nbytes;
    }
    int64_t moved = scanfuse_program_moved_bytes(p);
    int kernels = scanfuse_program_num_kernels(p);
    double copy_secs = 0.0, copy_b2b = 0.0;
    if (cuda ? !time_copy_cuda(o->options.device_id, bytes, repeat, b2b, &copy_secs, &copy_b2b)
             : !time_copy(bytes, repeat, &copy_secs)) {
        if (!cuda) fail("out of memory");
        return 1;
    }
    double gbps = secs > 0 ? (double)bytes / secs * 1e-9 : 0.0;
    double copy_gbps = copy_secs > 0 ? (double)bytes / copy_secs * 1e-9 : 0.0;
    double ratio = copy_gbps > 0 ? gbps / copy_gbps : 0.0;
    int threads = threads_used(o->options.threads);
    if (o->json) {
        printf("{\"file\": ");
        json_string(stdout, o->file);
        printf(", \"device\": ");
        json_string(stdout, o->device_name);
        printf(", \"threads\": %d, \"seconds\": %.9g, \"bytes\": %lld, \"gbps\": %.6g, "
               "\"copy_gbps\": %.6g, \"ratio\": %.6g, \"kernels\": %d, \"moved_bytes\": %lld, "
               "\"repeat\": %d, \"back_to_back_seconds\": %.9g",
               threads, secs, (long long)bytes, gbps, copy_gbps, ratio, kernels,
               (long long)moved, repeat, b2b_secs);
        /* cuda: the copy back to back too, and the ratio of the two back-to-back times */
        if (cuda)
            printf(", \"copy_back_to_back_seconds\": %.9g, \"ratio_back_to_back\": %.6g", copy_b2b,
                   b2b_secs > 0 ? copy_b2b / b2b_secs : 0.0);
        printf("}\n");
    } else {
        printf("%-32s %-9s %7s %7s %14s %12s %10s %10s %7s\n", "file", "device", "threads",
               "kernels", "bytes", "time (us)", "GB/s", "copy GB/s", "ratio");
        printf("%-32s %-9s %7d %7d %14lld %12.3f %10.3f %10.3f %7.3f\n", o->file, o->device_name,
               threads, kernels, (long long)bytes, secs * 1e6, gbps, copy_gbps, ratio);
        if (cuda)
            printf("back to back: %.3f us per run, the copy %.3f us (ratio %.3f)\n", b2b_secs * 1e6, copy_b2b * 1e6,
                   b2b_secs > 0 ? copy_b2b / b2b_secs : 0.0);
    }
    fflush(stdout);
    return 0;
}

/* ------------------------------------------------------------------------------ */
/* run / bench                                                                      */
/* ------------------------------------------------------------------------------ */

static char *join_path(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *s = sf_malloc(a + b + 6);
    if (!s) return NULL;
    memcpy(s, dir, a);
    size_t k = a;
    if (a && dir[a - 1] != '/') s[k++] = '/';
    memcpy(s + k, name, b);
    memcpy(s + k + b, ".npy", 5);
    return s;
}

static bool write_output(const cli_tensor *t, const char *path) {
    sf_view v;
    sf_view_contiguous(&v, t->data, t->dtype, t->ndim, t->shape);
    char msg[SF_ERR_LEN];
    if (sf_npy_write(path, &v, msg, sizeof msg) != SCANFUSE_OK) {
        fail("cannot write output %s: %s", t->name, msg);
        return false;
    }
    return true;
}

/* Loads or generates every input.  Returns false after a message. */
static bool load_inputs(const scanfuse_fusion *f, cli_opts *o, cli_tensor *ins, int nin,
                        int *nloaded) {
    for (int i = 0; i < nin; i++) {
        const char *name;
        scanfuse_dtype dt;
        int ndim;
        int64_t shape[SF_MAX_DIMS];
        if (scanfuse_fusion_input_info(f, i, &name, &dt, &ndim, shape) != SCANFUSE_OK) {
            fail("%s: cannot read the declaration of input %d", o->file, i);
            return false;
        }
        cli_pair *pair = NULL;
        for (int j = 0; j < o->nins; j++)
            if (strcmp(o->ins[j].name, name) == 0) pair = &o->ins[j];
        if (!pair) {
            if (!tensor_alloc(&ins[i], name, dt, ndim, shape)) return false;
            (*nloaded)++;
            fill_random(&ins[i], o->seed, i);
        } else {
            pair->used = true;
            sf_array arr;
            char msg[SF_ERR_LEN];
            if (sf_npy_read(pair->path, &arr, msg, sizeof msg) != SCANFUSE_OK) {
                fail("--in %s: %s", name, msg);
                return false;
            }
            bool same = arr.dtype == dt && arr.ndim == ndim;
            for (int d = 0; same && d < ndim; d++) same = arr.shape[d] == shape[d];
            if (!same) {
                char got[256], want[256];
                shape_str(arr.ndim, arr.shape, got, sizeof got);
                shape_str(ndim, shape, want, sizeof want);
                fail("--in %s=%s: the file holds %s%s, but the fusion declares %s: %s%s", name,
                     pair->path, scanfuse_dtype_name(arr.dtype), got, name,
                     scanfuse_dtype_name(dt), want);
                sf_array_free(&arr);
                return false;
            }
            memset(&ins[i], 0, sizeof ins[i]);
            ins[i].name = name;
            ins[i].dtype = dt;
            ins[i].ndim = ndim;
            for (int d = 0; d < ndim; d++) ins[i].shape[d] = shape[d];
            ins[i].numel = sf_numel(ndim, shape);
            ins[i].nbytes = (size_t)ins[i].numel * scanfuse_dtype_size(dt);
            ins[i].data = arr.data; /* ownership moves to ins[i] */
            (*nloaded)++;
        }
        tensor_dl(&ins[i]);
    }
    for (int j = 0; j < o->nins; j++) {
        if (!o->ins[j].used) {
            fail("--in %s: the fusion has no input named '%s'", o->ins[j].name, o->ins[j].name);
            return false;
        }
    }
    return true;
}

static int cmd_run(cli_opts *o) {
    bool bench = strcmp(o->cmd, "bench") == 0;
    /* A clear message for a missing or unreadable file, whatever the parser says. */
    FILE *probe = fopen(o->file, "rb");
    if (!probe) {
        fail("%s: cannot open: %s", o->file, strerror(errno));
        return 1;
    }
    fclose(probe);
    struct stat fsb;
    if (stat(o->file, &fsb) == 0 && S_ISDIR(fsb.st_mode)) {
        fail("%s: is a directory, not a fusion file", o->file);
        return 1;
    }
    scanfuse_fusion *f = scanfuse_parse_file(o->file);
    if (!f) {
        fail("out of memory");
        return 1;
    }
    if (scanfuse_fusion_status(f) != SCANFUSE_OK) {
        const char *m = scanfuse_fusion_error(f);
        fail("%s", m && *m ? m : scanfuse_status_string(scanfuse_fusion_status(f)));
        scanfuse_fusion_free(f);
        return 1;
    }
    int rc = 1;
    int nin = scanfuse_fusion_num_inputs(f), nout = scanfuse_fusion_num_outputs(f);
    int nloaded = 0, nalloc = 0;
    cli_tensor *ins = NULL, *outs = NULL;
    scanfuse_dl_tensor *din = NULL, *dout = NULL;
    scanfuse_program *p = NULL;
    const char **out_paths = NULL; /* per output: --out path (borrowed) */
    if (nin < 0 || nout < 0) {
        fail("%s: cannot read the fusion's inputs and outputs", o->file);
        goto done;
    }
    if (nout == 0) {
        fail("%s: the fusion has no outputs (add an 'output NAME' line)", o->file);
        goto done;
    }
    ins = sf_calloc((size_t)(nin ? nin : 1), sizeof *ins);
    outs = sf_calloc((size_t)nout, sizeof *outs);
    din = sf_calloc((size_t)(nin ? nin : 1), sizeof *din);
    dout = sf_calloc((size_t)nout, sizeof *dout);
    out_paths = sf_calloc((size_t)nout, sizeof *out_paths);
    if (!ins || !outs || !din || !dout || !out_paths) {
        fail("out of memory");
        goto done;
    }
    /* Output metadata and the --out names first: fail fast on a typo. */
    for (int i = 0; i < nout; i++) {
        const char *name;
        scanfuse_dtype dt;
        int ndim;
        int64_t shape[SF_MAX_DIMS];
        if (scanfuse_fusion_output_info(f, i, &name, &dt, &ndim, shape) != SCANFUSE_OK) {
            fail("%s: cannot read the declaration of output %d", o->file, i);
            goto done;
        }
        if (!tensor_alloc(&outs[i], name, dt, ndim, shape)) goto done;
        nalloc++;
        tensor_dl(&outs[i]);
        dout[i] = outs[i].dl;
    }
    for (int j = 0; j < o->nouts; j++) {
        int found = -1;
        for (int i = 0; i < nout; i++)
            if (strcmp(outs[i].name, o->outs[j].name) == 0) found = i;
        if (found < 0) {
            char names[512];
            size_t k = 0;
            names[0] = '\0';
            for (int i = 0; i < nout && k < sizeof names; i++)
                k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", i ? ", " : "",
                                      outs[i].name);
            fail("--out %s: the fusion has no output named '%s' (outputs: %s)", o->outs[j].name,
                 o->outs[j].name, names);
            goto done;
        }
        out_paths[found] = o->outs[j].path;
    }
    if (o->out_dir) {
        struct stat sb;
        if (stat(o->out_dir, &sb) != 0) {
            if (mkdir(o->out_dir, 0777) != 0) {
                fail("--out-dir %s: cannot create the directory: %s", o->out_dir,
                     strerror(errno));
                goto done;
            }
        } else if (!S_ISDIR(sb.st_mode)) {
            fail("--out-dir %s: not a directory", o->out_dir);
            goto done;
        }
    }
    if (!load_inputs(f, o, ins, nin, &nloaded)) goto done;
    for (int i = 0; i < nin; i++) din[i] = ins[i].dl;
    if (o->options.device == SCANFUSE_DEVICE_CUDA) {
        for (int i = 0; i < nin; i++)
            if (!tensor_to_device(o, &ins[i], true, &din[i])) goto done;
        for (int i = 0; i < nout; i++)
            if (!tensor_to_device(o, &outs[i], false, &dout[i])) goto done;
    }

    p = scanfuse_compile(f, &o->options);
    if (!p) {
        fail("out of memory");
        goto done;
    }
    if (scanfuse_program_status(p) != SCANFUSE_OK) {
        fail("%s: cannot compile for device %s: %s", o->file, o->device_name,
             scanfuse_program_error(p));
        goto done;
    }
    if (o->segments) {
        char *seg = scanfuse_program_segments(p);
        if (seg) {
            fputs(seg, stdout);
            if (*seg && seg[strlen(seg) - 1] != '\n') fputc('\n', stdout);
        }
        scanfuse_free(seg);
        fflush(stdout);
    }
    if (bench) {
        rc = do_bench(o, p, ins, nin, outs, nout, din, dout);
        goto done;
    }
    if (scanfuse_run(p, din, nin, dout, nout) != SCANFUSE_OK) {
        fail("%s: run failed: %s", o->file, scanfuse_program_error(p));
        goto done;
    }
    if (o->options.device == SCANFUSE_DEVICE_CUDA && !outputs_to_host(outs, nout)) goto done;
    for (int i = 0; i < nout; i++) print_summary(&outs[i]);
    fflush(stdout);
    for (int i = 0; i < nout; i++) {
        if (out_paths[i] && !write_output(&outs[i], out_paths[i])) goto done;
        if (o->out_dir) {
            char *path = join_path(o->out_dir, outs[i].name);
            if (!path) {
                fail("out of memory");
                goto done;
            }
            bool ok = write_output(&outs[i], path);
            free(path);
            if (!ok) goto done;
        }
    }
    rc = 0;
    if (o->check) rc = run_check(f, o, ins, nin, outs, nout);
done:
    scanfuse_program_free(p);
    for (int i = 0; i < nloaded; i++) tensor_free(&ins[i]);
    for (int i = 0; i < nalloc; i++) tensor_free(&outs[i]);
    free(ins);
    free(outs);
    free(din);
    free(dout);
    free((void *)out_paths);
    scanfuse_fusion_free(f);
    return rc;
}

/* ------------------------------------------------------------------------------ */
/* ops                                                                              */
/* ------------------------------------------------------------------------------ */

static const char *kind_name(sf_kind k) {
    switch (k) {
    case SF_KIND_POINTWISE: return "pointwise";
    case SF_KIND_REDUCTION: return "reduction";
    case SF_KIND_SCAN: return "scan";
    case SF_KIND_INDEX: return "index";
    case SF_KIND_SHAPE: return "shape";
    case SF_KIND_CREATION: return "creation";
    case SF_KIND_CONTRACTION: return "contraction";
    }
    return "?";
}

static int cmd_ops(void) {
    printf("%-14s %-12s %-8s %s\n", "op", "kind", "results", "signature");
    for (int i = 0; i < SF_NUM_OPS; i++) {
        const sf_op_info *op = &sf_op_table[i];
        printf("%-14s %-12s %-8d %s(%s)\n", op->name, kind_name(op->kind), op->nout, op->name,
               op->signature);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        fail("no command given (run, bench, ops; see scanfuse --help)");
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("scanfuse %s\n", SCANFUSE_VERSION);
        return 0;
    }
    if (strcmp(cmd, "ops") == 0) {
        if (argc > 2) {
            fail("ops takes no arguments");
            return 2;
        }
        return cmd_ops();
    }
    if (strcmp(cmd, "run") != 0 && strcmp(cmd, "bench") != 0) {
        fail("unknown command '%s' (run, bench, ops; see scanfuse --help)", cmd);
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    }
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.cmd = cmd;
    scanfuse_options_init(&o.options);
    o.device_name = "cpu";
    o.repeat = 20;
    if (!parse_args(argc, argv, &o)) {
        free_opts(&o);
        return 2;
    }
    int rc = cmd_run(&o);
    free_opts(&o);
    return rc;
}
