/*
 * test_cli.c — end-to-end tests of the `scanfuse` command (tools/scanfuse_cli.c).
 *
 * Runs the built binary (SF_CLI_PATH) through the shell: every example file with
 * --check, --in/--out round trips through .npy files, --out-dir, --segments,
 * --dump-ir, bench (table and --json with its required keys), determinism of the
 * generated inputs, and bad invocations (missing file, malformed text with its
 * FILE:LINE:COL, --device cuda, unknown options and names, unwritable paths, a failing
 * run that must write nothing), each with its exit status and its one-line message.
 * Temporary files live in one mkdtemp directory, removed at the end.
 */
#include "harness.h"
#include "sf.h"

#include <ctype.h>
#include <stdarg.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SF_CLI_PATH
#error "SF_CLI_PATH must name the built scanfuse binary"
#endif
#ifndef SF_SOURCE_DIR
#error "SF_SOURCE_DIR must name the source tree"
#endif

static char tmpdir[256];
static char out[1 << 16];

static void tmp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

static bool file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Runs `scanfuse ARGS` and returns its exit status; output (stdout + stderr) in `out`. */
static int cli(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static int cli(const char *fmt, ...) {
    char args[3000], cmd[3600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "'%s' %s", SF_CLI_PATH, args);
    return sf_test_run_command(cmd, out, sizeof out);
}

/* Exit status and output of the last command, for failure messages. */
#define CHECK_CLI(cond) CHECKF((cond), "%s\n--- output ---\n%.2000s", #cond, out)

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static const char *const examples[] = {"cumsum", "moe_offsets", "position_ids", "top_p"};

static void test_basics(void) {
    int rc = cli("--version");
    CHECK_CLI(rc == 0 && sf_test_contains(out, "scanfuse " SCANFUSE_VERSION));
    rc = cli("--help");
    CHECK_CLI(rc == 0 && sf_test_contains(out, "usage") && sf_test_contains(out, "--check") &&
              sf_test_contains(out, "2^-40") && sf_test_contains(out, "--json"));
    rc = cli("run --help");
    CHECK_CLI(rc == 0 && sf_test_contains(out, "usage"));
    rc = cli("ops");
    CHECK_CLI(rc == 0);
    for (int i = 0; i < SF_NUM_OPS; i++)
        CHECKF(sf_test_contains(out, sf_op_table[i].name), "ops lacks %s", sf_op_table[i].name);
    CHECK_CLI(sf_test_contains(out, "cumsum(x:tensor, dim:int"));
}

/* Does the file hold a line starting with `prefix`? */
static bool file_has_line(const char *path, const char *prefix) {
    FILE *fp = fopen(path, "r");
    if (!fp) return false;
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, fp)) found = strncmp(line, prefix, strlen(prefix)) == 0;
    fclose(fp);
    return found;
}

static void test_examples(void) {
    /* every example in the repository, including ones this test does not know */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/examples", SF_SOURCE_DIR);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int seen = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            size_t n = strlen(e->d_name);
            if (n < 4 || strcmp(e->d_name + n - 3, ".sf") != 0) continue;
            seen++;
            /* examples too large for --check (the float64 reference) carry this line;
             * tests/test_segment.c checks their segmentation */
            char path[1200];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (file_has_line(path, "# scanfuse-test: segments-only")) continue;
            int rc = cli("run '%s/%s' --check", dir, e->d_name);
            CHECKF(rc == 0 && sf_test_contains(out, "ok"), "%s --check: rc %d\n%.3000s",
                   e->d_name, rc, out);
            CHECKF(!sf_test_contains(out, "FAIL"), "%s: %.3000s", e->d_name, out);
            rc = cli("run '%s/%s' --check --threads 1 --seed 7", dir, e->d_name);
            CHECKF(rc == 0, "%s --check --threads 1 --seed 7: rc %d\n%.3000s", e->d_name, rc, out);
            rc = cli("run '%s/%s' --check --device reference", dir, e->d_name);
            CHECKF(rc == 0, "%s --device reference: rc %d\n%.3000s", e->d_name, rc, out);
        }
        closedir(d);
    }
    CHECK(seen >= 4);
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        int rc = cli("run '%s/examples/%s.sf' --check --no-fuse", SF_SOURCE_DIR, examples[i]);
        CHECKF(rc == 0, "%s --no-fuse: rc %d\n%.3000s", examples[i], rc, out);
        rc = cli("run '%s/examples/%s.sf' --check --cumsum matmul", SF_SOURCE_DIR, examples[i]);
        CHECKF(rc == 0, "%s --cumsum matmul: rc %d\n%.3000s", examples[i], rc, out);
        rc = cli("run '%s/examples/%s.sf' --check --cumsum=masked-sum", SF_SOURCE_DIR,
                 examples[i]);
        CHECKF(rc == 0, "%s --cumsum=masked-sum: rc %d\n%.3000s", examples[i], rc, out);
    }
}

static void test_segments_and_ir(void) {
    int rc = cli("run '%s/examples/cumsum.sf' --segments", SF_SOURCE_DIR);
    CHECK_CLI(rc == 0 && sf_test_contains(out, "cumsum"));
    rc = cli("run '%s/examples/cumsum.sf' --dump-ir", SF_SOURCE_DIR);
    CHECK_CLI(rc == 0 && sf_test_contains(out, "cumsum(") && sf_test_contains(out, "input x"));
    rc = cli("run '%s/examples/cumsum.sf' --dump-ir=all", SF_SOURCE_DIR);
    CHECK_CLI(rc == 0 && sf_test_contains(out, "cumsum("));
    rc = cli("run '%s/examples/top_p.sf' --no-fuse --segments", SF_SOURCE_DIR);
    CHECK_CLI(rc == 0);
}

/* Writes a float32 [8, 1000] array of ones, runs cumsum.sf on it, checks y and z. */
static void test_in_out(void) {
    char xpath[512], ypath[512], zpath[512], msg[SF_ERR_LEN];
    tmp_path(xpath, sizeof xpath, "x.npy");
    tmp_path(ypath, sizeof ypath, "y.npy");
    tmp_path(zpath, sizeof zpath, "z.npy");
    static float ones[8 * 1000];
    for (int i = 0; i < 8 * 1000; i++) ones[i] = 1.0f;
    int64_t shape[2] = {8, 1000};
    sf_view v;
    sf_view_contiguous(&v, ones, SCANFUSE_FLOAT32, 2, shape);
    CHECK_STATUS(sf_npy_write(xpath, &v, msg, sizeof msg), SCANFUSE_OK);
    int rc = cli("run '%s/examples/cumsum.sf' --in x=%s --out y=%s --out z=%s --check",
                 SF_SOURCE_DIR, xpath, ypath, zpath);
    CHECK_CLI(rc == 0);
    sf_array a;
    scanfuse_status st = sf_npy_read(ypath, &a, msg, sizeof msg);
    CHECKF(st == SCANFUSE_OK, "%s", msg);
    if (st == SCANFUSE_OK) {
        CHECK_EQ_INT(a.dtype, SCANFUSE_FLOAT32);
        CHECK_EQ_INT(a.ndim, 2);
        CHECK_EQ_INT(a.shape[0], 8);
        CHECK_EQ_INT(a.shape[1], 1000);
        const float *y = a.data;
        bool ok = true;
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 1000; j++) ok &= y[i * 1000 + j] == (float)(j + 1);
        CHECK(ok);
    }
    sf_array_free(&a);
    st = sf_npy_read(zpath, &a, msg, sizeof msg);
    CHECKF(st == SCANFUSE_OK, "%s", msg);
    if (st == SCANFUSE_OK) {
        const float *z = a.data;
        bool ok = true;
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 1000; j++) ok &= z[i * 1000 + j] == (float)(i + 1);
        CHECK(ok);
    }
    sf_array_free(&a);

    /* the output of one run is the input of the next (same dtype and shape) */
    rc = cli("run '%s/examples/cumsum.sf' --in x=%s --out y=%s", SF_SOURCE_DIR, ypath, xpath);
    CHECK_CLI(rc == 0);
    st = sf_npy_read(xpath, &a, msg, sizeof msg);
    if (st == SCANFUSE_OK) CHECK(((float *)a.data)[2] == 6.0f); /* 1 + 2 + 3 */
    sf_array_free(&a);

    /* --out-dir creates the directory and writes every output as NAME.npy */
    char odir[512], p1[600], p2[600];
    tmp_path(odir, sizeof odir, "outs");
    snprintf(p1, sizeof p1, "%s/y.npy", odir);
    snprintf(p2, sizeof p2, "%s/z.npy", odir);
    rc = cli("run '%s/examples/cumsum.sf' --out-dir %s", SF_SOURCE_DIR, odir);
    CHECK_CLI(rc == 0);
    CHECK(file_exists(p1) && file_exists(p2));

    /* determinism: the same seed gives the same bytes (any thread count); another
     * seed gives other inputs */
    char d1[600], d2[600];
    snprintf(d1, sizeof d1, "%s/y1.npy", tmpdir);
    snprintf(d2, sizeof d2, "%s/y2.npy", tmpdir);
    rc = cli("run '%s/examples/cumsum.sf' --seed 5 --out y=%s", SF_SOURCE_DIR, d1);
    CHECK_CLI(rc == 0);
    rc = cli("run '%s/examples/cumsum.sf' --seed 5 --threads 1 --out y=%s", SF_SOURCE_DIR, d2);
    CHECK_CLI(rc == 0);
    sf_array b;
    scanfuse_status s1 = sf_npy_read(d1, &a, msg, sizeof msg);
    scanfuse_status s2 = sf_npy_read(d2, &b, msg, sizeof msg);
    CHECK(s1 == SCANFUSE_OK && s2 == SCANFUSE_OK);
    if (s1 == SCANFUSE_OK && s2 == SCANFUSE_OK)
        CHECK(memcmp(a.data, b.data, 8 * 1000 * sizeof(float)) == 0);
    sf_array_free(&b);
    rc = cli("run '%s/examples/cumsum.sf' --seed 6 --out y=%s", SF_SOURCE_DIR, d2);
    s2 = sf_npy_read(d2, &b, msg, sizeof msg);
    if (s1 == SCANFUSE_OK && s2 == SCANFUSE_OK)
        CHECK(memcmp(a.data, b.data, 8 * 1000 * sizeof(float)) != 0);
    sf_array_free(&a);
    sf_array_free(&b);

    /* bool input through --in (position ids) */
    char mpath[512], ppath[512];
    tmp_path(mpath, sizeof mpath, "mask.npy");
    tmp_path(ppath, sizeof ppath, "pos.npy");
    static unsigned char mask[4 * 128];
    for (int i = 0; i < 4 * 128; i++) mask[i] = (i % 128) >= (i / 128) * 10; /* left pad */
    int64_t mshape[2] = {4, 128};
    sf_view_contiguous(&v, mask, SCANFUSE_BOOL, 2, mshape);
    CHECK_STATUS(sf_npy_write(mpath, &v, msg, sizeof msg), SCANFUSE_OK);
    rc = cli("run '%s/examples/position_ids.sf' --in mask=%s --out position_ids=%s --check",
             SF_SOURCE_DIR, mpath, ppath);
    CHECK_CLI(rc == 0);
    st = sf_npy_read(ppath, &a, msg, sizeof msg);
    if (st == SCANFUSE_OK) {
        CHECK_EQ_INT(a.dtype, SCANFUSE_INT64);
        const int64_t *p = a.data;
        bool ok = true;
        for (int r = 0; r < 4; r++)
            for (int j = 0; j < 128; j++) {
                int64_t want = j >= r * 10 ? j - r * 10 : 1;
                ok &= p[r * 128 + j] == want;
            }
        CHECK(ok);
    } else {
        CHECKF(false, "%s", msg);
    }
    sf_array_free(&a);
}

static void test_bench(void) {
    int rc = cli("bench '%s/examples/cumsum.sf' --repeat 3 --json", SF_SOURCE_DIR);
    CHECK_CLI(rc == 0);
    const char *line = strchr(out, '{');
    CHECK_CLI(line != NULL);
    if (line) {
        const char *keys[] = {"\"file\"", "\"device\"", "\"threads\"", "\"seconds\"", "\"bytes\"",
                              "\"gbps\"", "\"copy_gbps\"", "\"ratio\"", "\"kernels\""};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            CHECKF(sf_test_contains(line, keys[i]), "bench --json lacks %s: %s", keys[i], line);
        const char *b = strstr(line, "\"bytes\": ");
        if (b) CHECKF(atoll(b + 9) == 2 * 8 * 1000 * 4 + 8 * 1000 * 4,
                      "bytes %lld", atoll(b + 9)); /* x read once, y and z written once */
        const char *end = strchr(line, '}');
        CHECK(end != NULL && (end[1] == '\n' || end[1] == '\0'));
    }
    rc = cli("bench '%s/examples/top_p.sf' --repeat 2 --threads 1", SF_SOURCE_DIR);
    CHECK_CLI(rc == 0 && sf_test_contains(out, "GB/s") && sf_test_contains(out, "ratio"));
}

/* A message of the form "scanfuse: PATH:LINE:COL: ..." with the given line. */
static bool has_location(const char *text, const char *file, int line) {
    char pre[700];
    snprintf(pre, sizeof pre, "%s:%d:", file, line);
    const char *p = strstr(text, pre);
    if (!p) return false;
    p += strlen(pre);
    if (!isdigit((unsigned char)*p)) return false;
    while (isdigit((unsigned char)*p)) p++;
    return *p == ':';
}

static bool write_text(const char *path, const char *text) {
    FILE *fp = fopen(path, "w");
    if (!fp) return false;
    fputs(text, fp);
    return fclose(fp) == 0;
}

static void test_errors(void) {
    char path[512], bad[512];

    /* command line */
    int rc = cli("%s", "");
    CHECK_CLI(rc != 0 && sf_test_contains(out, "scanfuse: "));
    rc = cli("frobnicate");
    CHECK_CLI(rc == 2 && sf_test_contains(out, "unknown command"));
    rc = cli("run");
    CHECK_CLI(rc == 2 && sf_test_contains(out, "no FILE"));
    rc = cli("run '%s/examples/cumsum.sf' --frob", SF_SOURCE_DIR);
    CHECK_CLI(rc == 2 && sf_test_contains(out, "unknown option '--frob'") && count_lines(out) == 1);
    rc = cli("run '%s/examples/cumsum.sf' --threads", SF_SOURCE_DIR);
    CHECK_CLI(rc == 2 && sf_test_contains(out, "needs a value"));
    rc = cli("run '%s/examples/cumsum.sf' --threads many", SF_SOURCE_DIR);
    CHECK_CLI(rc == 2 && sf_test_contains(out, "--threads"));
    rc = cli("run '%s/examples/cumsum.sf' --seed -1", SF_SOURCE_DIR);
    CHECK_CLI(rc == 2 && sf_test_contains(out, "--seed"));
    rc = cli("run '%s/examples/cumsum.sf' --device tpu", SF_SOURCE_DIR);
    CHECK_CLI(rc == 2 && sf_test_contains(out, "unknown device 'tpu'"));
    rc = cli("run '%s/examples/cumsum.sf' --cumsum fast", SF_SOURCE_DIR);
    CHECK_CLI(rc == 2 && sf_test_contains(out, "cumsum mode"));
    rc = cli("run '%s/examples/cumsum.sf' --in x", SF_SOURCE_DIR);
    CHECK_CLI(rc == 2 && sf_test_contains(out, "NAME=PATH"));
    rc = cli("run '%s/examples/cumsum.sf' --repeat 3", SF_SOURCE_DIR);
    CHECK_CLI(rc == 2 && sf_test_contains(out, "bench"));
    rc = cli("bench '%s/examples/cumsum.sf' --repeat 0", SF_SOURCE_DIR);
    CHECK_CLI(rc == 2 && sf_test_contains(out, "--repeat"));
    rc = cli("run a.sf b.sf");
    CHECK_CLI(rc == 2 && sf_test_contains(out, "more than one FILE"));

    /* files */
    tmp_path(path, sizeof path, "missing.sf");
    rc = cli("run %s", path);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "scanfuse: ") && sf_test_contains(out, path) &&
              count_lines(out) == 1);
    rc = cli("bench %s --json", path);
    CHECK_CLI(rc != 0 && sf_test_contains(out, path));
    rc = cli("run %s", tmpdir); /* a directory */
    CHECK_CLI(rc != 0 && sf_test_contains(out, "scanfuse: "));

    tmp_path(bad, sizeof bad, "bad.sf");
    CHECK(write_text(bad, "input x: float32[4]\ny = cumsum(x, dim=)\noutput y\n"));
    rc = cli("run %s", bad);
    CHECK_CLI(rc != 0 && has_location(out, bad, 2) && sf_test_contains(out, "scanfuse: ") &&
              count_lines(out) == 1);
    CHECK(write_text(bad, "input x: float32[4]\ny = cumsum(x, dim=5)\noutput y\n"));
    rc = cli("run %s", bad);
    CHECK_CLI(rc != 0 && has_location(out, bad, 2) && sf_test_contains(out, "dim"));
    CHECK(write_text(bad, "input x: float32[4]\n\n\ny = frobnicate(x)\noutput y\n"));
    rc = cli("run %s --check", bad);
    CHECK_CLI(rc != 0 && has_location(out, bad, 4));
    CHECK(write_text(bad, "\x93NUMPY binary junk \x01\x02\n"));
    rc = cli("run %s", bad);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "scanfuse: "));
    CHECK(write_text(bad, "input x: float32[4]\n"));
    rc = cli("run %s", bad);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "no outputs"));

    /* devices: the CUDA backend answers with a clear error (or runs, where it exists) */
    rc = cli("run '%s/examples/cumsum.sf' --device cuda", SF_SOURCE_DIR);
    CHECK_CLI(rc == 0 || (sf_test_contains(out, "cuda") && count_lines(out) == 1));
    rc = cli("bench '%s/examples/cumsum.sf' --device cuda:0 --repeat 3", SF_SOURCE_DIR);
    CHECK_CLI(rc == 0 || (sf_test_contains(out, "cuda") && count_lines(out) == 1));
    rc = cli("run '%s/examples/cumsum.sf' --device cuda:x", SF_SOURCE_DIR);
    CHECK_CLI(rc == 2 && sf_test_contains(out, "device number must be 0..1023"));
    rc = cli("run '%s/examples/cumsum.sf' --device cuda:99999", SF_SOURCE_DIR);
    CHECK_CLI(rc == 2 && sf_test_contains(out, "device number must be 0..1023"));

    /* --in / --out names and files */
    rc = cli("run '%s/examples/cumsum.sf' --in q=%s/x.npy", SF_SOURCE_DIR, tmpdir);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "no input named 'q'"));
    rc = cli("run '%s/examples/cumsum.sf' --in x=%s/none.npy", SF_SOURCE_DIR, tmpdir);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "none.npy") && sf_test_contains(out, "cannot open"));
    rc = cli("run '%s/examples/cumsum.sf' --in x=%s", SF_SOURCE_DIR, bad);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "--in x"));
    rc = cli("run '%s/examples/cumsum.sf' --in x=a.npy --in x=b.npy", SF_SOURCE_DIR);
    CHECK_CLI(rc == 2 && sf_test_contains(out, "given twice"));
    /* a file of the wrong dtype, and of the wrong shape */
    char wpath[512], msg[SF_ERR_LEN];
    tmp_path(wpath, sizeof wpath, "wrong.npy");
    static double dz[8 * 1000];
    int64_t shape[2] = {8, 1000};
    sf_view v;
    sf_view_contiguous(&v, dz, SCANFUSE_FLOAT64, 2, shape);
    CHECK_STATUS(sf_npy_write(wpath, &v, msg, sizeof msg), SCANFUSE_OK);
    rc = cli("run '%s/examples/cumsum.sf' --in x=%s", SF_SOURCE_DIR, wpath);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "float64[8, 1000]") &&
              sf_test_contains(out, "declares") && sf_test_contains(out, "float32[8, 1000]"));
    shape[0] = 4;
    shape[1] = 2000;
    sf_view_contiguous(&v, dz, SCANFUSE_FLOAT32, 2, shape);
    CHECK_STATUS(sf_npy_write(wpath, &v, msg, sizeof msg), SCANFUSE_OK);
    rc = cli("run '%s/examples/cumsum.sf' --in x=%s", SF_SOURCE_DIR, wpath);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "float32[4, 2000]"));

    rc = cli("run '%s/examples/cumsum.sf' --out w=%s/w.npy", SF_SOURCE_DIR, tmpdir);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "no output named 'w'") &&
              sf_test_contains(out, "y, z"));
    rc = cli("run '%s/examples/cumsum.sf' --out y=%s/no/such/dir/y.npy", SF_SOURCE_DIR, tmpdir);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "cannot write output y"));
    char nodir[600];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/y.npy.tmp", tmpdir);
    CHECK(!file_exists(nodir));
    rc = cli("run '%s/examples/cumsum.sf' --out-dir %s/no/such/dir", SF_SOURCE_DIR, tmpdir);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "--out-dir"));
    rc = cli("run '%s/examples/cumsum.sf' --out-dir %s", SF_SOURCE_DIR, bad);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "not a directory"));

    /* a run that fails at run time (integer division by zero) writes no output */
    CHECK(write_text(bad, "input x: int32[4]\ny = remainder(x, 0)\noutput y\n"));
    char never[512];
    tmp_path(never, sizeof never, "never.npy");
    rc = cli("run %s --out y=%s", bad, never);
    CHECK_CLI(rc != 0 && sf_test_contains(out, "scanfuse: ") && count_lines(out) == 1);
    CHECK(!file_exists(never));
}

/* Removes the temporary directory's known contents. */
static void cleanup(void) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (strncmp(tmpdir, "/tmp/sf_test_cli_", 17) == 0 && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sf_test_cli_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "mkdtemp failed\n");
        return 1;
    }
    test_basics();
    test_errors();
    test_examples();
    test_segments_and_ir();
    test_in_out();
    test_bench();
    cleanup();
    return sf_test_finish("test_cli");
}
