/*
 * test_npy.c — tests of the .npy reader and writer (src/npy.c).
 *
 * Covers: write/read round trips for every dtype, 0-d, empty and 5-d arrays, strided
 * views; the written header's layout (version 1.0, 64-byte alignment, '\n' end);
 * hand-built files in Fortran order, format versions 2.0 and 3.0, every byte-order
 * character; and every malformed case the reader must reject with a status and a
 * message (bad magic, versions, truncated or lying headers, malformed dicts, missing
 * or extra keys, bad descrs, negative or overflowing shapes, truncated or trailing
 * data), through both sf_npy_parse and sf_npy_read.  Failed writes must leave neither
 * PATH nor PATH.tmp behind.  All temporary files live in one mkdtemp directory.
 */
#include "harness.h"
#include "sf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

static void tmp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

static bool file_exists(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    fclose(fp);
    return true;
}

static bool write_bytes(const char *path, const void *b, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return false;
    bool ok = fwrite(b, 1, n, fp) == n;
    return fclose(fp) == 0 && ok;
}

/* Reads a whole small file into buf; returns its length (or 0 on error). */
static size_t read_bytes(const char *path, unsigned char *buf, size_t cap) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    size_t n = fread(buf, 1, cap, fp);
    fclose(fp);
    return n;
}

/* Builds a .npy image: magic, version, header length (hlen_override when >= 0),
 * the header text, then data.  Returns the total length. */
static size_t build_npy(unsigned char *out, int major, int minor, const char *header,
                        long long hlen_override, const void *data, size_t dlen) {
    static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    size_t k = 0, hl = strlen(header);
    unsigned long long hlen = hlen_override >= 0 ? (unsigned long long)hlen_override : hl;
    memcpy(out, magic, 6);
    k = 6;
    out[k++] = (unsigned char)major;
    out[k++] = (unsigned char)minor;
    if (major == 1) {
        out[k++] = (unsigned char)(hlen & 0xff);
        out[k++] = (unsigned char)((hlen >> 8) & 0xff);
    } else {
        for (int i = 0; i < 4; i++) out[k++] = (unsigned char)((hlen >> (8 * i)) & 0xff);
    }
    memcpy(out + k, header, hl);
    k += hl;
    if (dlen) memcpy(out + k, data, dlen);
    return k + dlen;
}

/* Fills a buffer of dtype dt with recognizable values. */
static void fill_values(void *data, scanfuse_dtype dt, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (sf_dtype_is_float(dt)) sf_store_f64(data, i, dt, (double)i * 0.25 - 3.5);
        else if (dt == SCANFUSE_BOOL) sf_store_i64(data, i, dt, i % 3 == 0);
        else sf_store_i64(data, i, dt, i * 37 - 50);
    }
}

static void test_round_trip(scanfuse_dtype dt, int ndim, const int64_t *shape, const char *tag) {
    char path[512], name[128], msg[SF_ERR_LEN] = "";
    snprintf(name, sizeof name, "rt_%s_%s.npy", scanfuse_dtype_name(dt), tag);
    tmp_path(path, sizeof path, name);
    int64_t n = sf_numel(ndim, shape);
    size_t es = scanfuse_dtype_size(dt);
    unsigned char *data = calloc((size_t)(n ? n : 1), es);
    CHECK(data != NULL);
    if (!data) return;
    fill_values(data, dt, n);
    sf_view v;
    sf_view_contiguous(&v, data, dt, ndim, shape);
    scanfuse_status st = sf_npy_write(path, &v, msg, sizeof msg);
    CHECKF(st == SCANFUSE_OK, "write %s: %s", name, msg);

    /* The header's layout. */
    unsigned char raw[4096];
    size_t len = read_bytes(path, raw, sizeof raw);
    CHECKF(len >= 64, "%s: file length %zu", name, len);
    if (len >= 64) {
        CHECK(memcmp(raw, "\x93NUMPY", 6) == 0);
        CHECK_EQ_INT(raw[6], 1);
        CHECK_EQ_INT(raw[7], 0);
        size_t hlen = (size_t)raw[8] | (size_t)raw[9] << 8;
        CHECKF((10 + hlen) % 64 == 0, "%s: data offset %zu not 64-aligned", name, 10 + hlen);
        if (10 + hlen <= len) {
            CHECK(raw[10 + hlen - 1] == '\n');
            CHECK(raw[10] == '{');
            CHECKF(len == 10 + hlen + (size_t)n * es, "%s: file length %zu", name, len);
        }
        char want[32];
        snprintf(want, sizeof want, "'descr': '%s",
                 dt == SCANFUSE_BFLOAT16 ? "|V2" : dt == SCANFUSE_BOOL ? "|b1"
                 : dt == SCANFUSE_UINT8 ? "|u1" : dt == SCANFUSE_INT8 ? "|i1" : "<");
        raw[len < sizeof raw ? len : sizeof raw - 1] = 0;
        CHECKF(strstr((char *)raw + 10, want) != NULL, "%s: header lacks %s", name, want);
    }
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(!file_exists(tmp));

    sf_array a;
    st = sf_npy_read(path, &a, msg, sizeof msg);
    CHECKF(st == SCANFUSE_OK, "read %s: %s", name, msg);
    if (st == SCANFUSE_OK) {
        CHECK_EQ_INT(a.dtype, dt);
        CHECK_EQ_INT(a.ndim, ndim);
        for (int d = 0; d < ndim; d++) CHECK_EQ_INT(a.shape[d], shape[d]);
        CHECKF(n == 0 || memcmp(a.data, data, (size_t)n * es) == 0, "%s: data differs", name);
        CHECK(a.data != NULL);
    }
    sf_array_free(&a);
    CHECK(a.data == NULL);
    /* The same bytes through sf_npy_parse. */
    if (len > 0 && len < sizeof raw) {
        len = read_bytes(path, raw, sizeof raw);
        st = sf_npy_parse(raw, len, &a, msg, sizeof msg);
        CHECKF(st == SCANFUSE_OK, "parse %s: %s", name, msg);
        if (st == SCANFUSE_OK)
            CHECK(n == 0 || memcmp(a.data, data, (size_t)n * es) == 0);
        sf_array_free(&a);
    }
    remove(path);
    free(data);
}

static void test_round_trips(void) {
    const int64_t s2[2] = {3, 5}, s0[1] = {0}, s5[5] = {2, 1, 3, 2, 2}, se[2] = {0, 3},
                  s1[1] = {7};
    for (int dt = 0; dt < SCANFUSE_NUM_DTYPES; dt++) {
        test_round_trip((scanfuse_dtype)dt, 2, s2, "2d");
        test_round_trip((scanfuse_dtype)dt, 0, s0, "0d");
        test_round_trip((scanfuse_dtype)dt, 1, s1, "1d");
        test_round_trip((scanfuse_dtype)dt, 2, se, "empty");
        test_round_trip((scanfuse_dtype)dt, 5, s5, "5d");
    }
    /* A shape with many digits and 8 dims. */
    const int64_t s8[8] = {1, 1, 1, 1, 1, 1, 1, 0};
    test_round_trip(SCANFUSE_FLOAT32, 8, s8, "8d");
}

/* A transposed (strided) view is written in C order of the view. */
static void test_strided_write(void) {
    char path[512], msg[SF_ERR_LEN] = "";
    tmp_path(path, sizeof path, "strided.npy");
    float src[6] = {0, 1, 2, 3, 4, 5}; /* 2x3 row-major */
    sf_view v;
    v.data = src;
    v.dtype = SCANFUSE_FLOAT32;
    v.ndim = 2;
    v.shape[0] = 3;
    v.shape[1] = 2;
    v.strides[0] = 1;
    v.strides[1] = 3; /* the transpose: 3x2 */
    CHECK_STATUS(sf_npy_write(path, &v, msg, sizeof msg), SCANFUSE_OK);
    sf_array a;
    scanfuse_status st = sf_npy_read(path, &a, msg, sizeof msg);
    CHECK_STATUS(st, SCANFUSE_OK);
    if (st == SCANFUSE_OK) {
        const float want[6] = {0, 3, 1, 4, 2, 5};
        CHECK(memcmp(a.data, want, sizeof want) == 0);
        CHECK_EQ_INT(a.shape[0], 3);
        CHECK_EQ_INT(a.shape[1], 2);
    }
    sf_array_free(&a);
    /* A broadcast view (stride 0), and a bool view with non-0/1 bytes. */
    int32_t one = 42;
    v.data = &one;
    v.dtype = SCANFUSE_INT32;
    v.ndim = 2;
    v.shape[0] = 2;
    v.shape[1] = 3;
    v.strides[0] = 0;
    v.strides[1] = 0;
    CHECK_STATUS(sf_npy_write(path, &v, msg, sizeof msg), SCANFUSE_OK);
    st = sf_npy_read(path, &a, msg, sizeof msg);
    CHECK_STATUS(st, SCANFUSE_OK);
    if (st == SCANFUSE_OK) {
        for (int i = 0; i < 6; i++) CHECK_EQ_INT(((int32_t *)a.data)[i], 42);
    }
    sf_array_free(&a);
    remove(path);
}

/* Checks that parsing `bytes` fails with status `want` and a message containing
 * `needle`, and that *out stays zeroed. */
static void expect_parse_fail(const void *bytes, size_t len, scanfuse_status want,
                              const char *needle, const char *what) {
    sf_array a;
    memset(&a, 0x5a, sizeof a);
    char msg[SF_ERR_LEN] = "";
    scanfuse_status st = sf_npy_parse(bytes, len, &a, msg, sizeof msg);
    CHECKF(st == want, "%s: status %s, wanted %s (message '%s')", what,
           scanfuse_status_string(st), scanfuse_status_string(want), msg);
    CHECKF(sf_test_contains(msg, needle), "%s: message '%s' lacks '%s'", what, msg, needle);
    CHECKF(a.data == NULL && a.ndim == 0, "%s: output not zeroed", what);
    if (st == SCANFUSE_OK) sf_array_free(&a);
}

/* The same through a file and sf_npy_read (the message gets the path prefix). */
static void expect_read_fail(const void *bytes, size_t len, scanfuse_status want,
                             const char *needle, const char *what) {
    char path[512], msg[SF_ERR_LEN] = "";
    tmp_path(path, sizeof path, "bad.npy");
    CHECK(write_bytes(path, bytes, len));
    sf_array a;
    memset(&a, 0x5a, sizeof a);
    scanfuse_status st = sf_npy_read(path, &a, msg, sizeof msg);
    CHECKF(st == want, "%s (file): status %s, wanted %s (message '%s')", what,
           scanfuse_status_string(st), scanfuse_status_string(want), msg);
    CHECKF(sf_test_contains(msg, needle), "%s (file): message '%s' lacks '%s'", what, msg, needle);
    CHECKF(sf_test_contains(msg, path), "%s (file): message '%s' lacks the path", what, msg);
    CHECKF(a.data == NULL && a.ndim == 0, "%s (file): output not zeroed", what);
    if (st == SCANFUSE_OK) sf_array_free(&a);
    remove(path);
}

static void expect_fail(const void *bytes, size_t len, scanfuse_status want, const char *needle,
                        const char *what) {
    expect_parse_fail(bytes, len, want, needle, what);
    expect_read_fail(bytes, len, want, needle, what);
}

/* Parses a hand-built image and returns it (status OK expected). */
static bool expect_parse_ok(const void *bytes, size_t len, sf_array *a, const char *what) {
    char msg[SF_ERR_LEN] = "";
    scanfuse_status st = sf_npy_parse(bytes, len, a, msg, sizeof msg);
    CHECKF(st == SCANFUSE_OK, "%s: %s", what, msg);
    /* and through a file */
    char path[512];
    tmp_path(path, sizeof path, "good.npy");
    CHECK(write_bytes(path, bytes, len));
    sf_array b;
    scanfuse_status st2 = sf_npy_read(path, &b, msg, sizeof msg);
    CHECKF(st2 == SCANFUSE_OK, "%s (file): %s", what, msg);
    if (st == SCANFUSE_OK && st2 == SCANFUSE_OK) {
        size_t nb = (size_t)sf_numel(a->ndim, a->shape) * scanfuse_dtype_size(a->dtype);
        CHECKF(b.dtype == a->dtype && b.ndim == a->ndim &&
                   (nb == 0 || memcmp(a->data, b.data, nb) == 0),
               "%s: file and memory reads differ", what);
    }
    sf_array_free(&b);
    remove(path);
    return st == SCANFUSE_OK;
}

static void test_fortran(void) {
    unsigned char img[512];
    /* 2x3 float32, Fortran order: column-major data a[0,0], a[1,0], a[0,1], ... */
    const float fdata[6] = {0, 10, 1, 11, 2, 12};
    size_t n = build_npy(img, 1, 0, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n",
                         -1, fdata, sizeof fdata);
    sf_array a;
    if (expect_parse_ok(img, n, &a, "fortran 2x3")) {
        const float want[6] = {0, 1, 2, 10, 11, 12};
        CHECK(memcmp(a.data, want, sizeof want) == 0);
        CHECK_EQ_INT(a.ndim, 2);
        sf_array_free(&a);
    }
    /* 2x3x4 int16 Fortran: element (i, j, k) = 100 i + 10 j + k stored column-major. */
    int16_t f3[24], c3[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                int16_t val = (int16_t)(100 * i + 10 * j + k);
                f3[i + 2 * j + 6 * k] = val;
                c3[i * 12 + j * 4 + k] = val;
            }
    n = build_npy(img, 1, 0, "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3, 4)}",
                  -1, f3, sizeof f3);
    if (expect_parse_ok(img, n, &a, "fortran 2x3x4")) {
        CHECK(memcmp(a.data, c3, sizeof c3) == 0);
        sf_array_free(&a);
    }
    /* Fortran order of a 1-d and a 0-d array is the same as C order. */
    const double d1[3] = {1.5, 2.5, 3.5};
    n = build_npy(img, 1, 0, "{'descr': '<f8', 'fortran_order': True, 'shape': (3,), }\n", -1,
                  d1, sizeof d1);
    if (expect_parse_ok(img, n, &a, "fortran 1d")) {
        CHECK(memcmp(a.data, d1, sizeof d1) == 0);
        sf_array_free(&a);
    }
    /* Empty Fortran array. */
    n = build_npy(img, 1, 0, "{'descr': '<f8', 'fortran_order': True, 'shape': (0, 4), }\n", -1,
                  NULL, 0);
    if (expect_parse_ok(img, n, &a, "fortran empty")) {
        CHECK_EQ_INT(a.shape[0], 0);
        CHECK_EQ_INT(a.shape[1], 4);
        sf_array_free(&a);
    }
}

static void test_versions_and_descrs(void) {
    unsigned char img[512];
    sf_array a;
    const int32_t v[3] = {7, -8, 9};
    /* version 2.0 (4-byte header length) */
    size_t n = build_npy(img, 2, 0, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }  \n",
                         -1, v, sizeof v);
    if (expect_parse_ok(img, n, &a, "version 2")) {
        CHECK_EQ_INT(a.dtype, SCANFUSE_INT32);
        CHECK(memcmp(a.data, v, sizeof v) == 0);
        sf_array_free(&a);
    }
    /* version 3.0 (utf-8 header), double-quoted keys, no spaces */
    n = build_npy(img, 3, 0, "{\"descr\":\"<i4\",\"fortran_order\":False,\"shape\":(3,)}\n", -1, v,
                  sizeof v);
    if (expect_parse_ok(img, n, &a, "version 3")) {
        CHECK(memcmp(a.data, v, sizeof v) == 0);
        sf_array_free(&a);
    }
    /* key order does not matter; '=' is native (little-endian here) */
    n = build_npy(img, 1, 0, "{'shape': (3,), 'fortran_order': False, 'descr': '=i4'}\n", -1, v,
                  sizeof v);
    if (expect_parse_ok(img, n, &a, "'=' byte order")) {
        CHECK(memcmp(a.data, v, sizeof v) == 0);
        sf_array_free(&a);
    }
    /* '|' and '>' are fine for one-byte types; bool bytes are normalized to 0/1 */
    const unsigned char b[4] = {0, 1, 2, 255};
    n = build_npy(img, 1, 0, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }\n", -1, b,
                  sizeof b);
    if (expect_parse_ok(img, n, &a, "bool")) {
        const unsigned char want[4] = {0, 1, 1, 1};
        CHECK_EQ_INT(a.dtype, SCANFUSE_BOOL);
        CHECK(memcmp(a.data, want, 4) == 0);
        sf_array_free(&a);
    }
    n = build_npy(img, 1, 0, "{'descr': '>u1', 'fortran_order': False, 'shape': (4,), }\n", -1, b,
                  sizeof b);
    if (expect_parse_ok(img, n, &a, "'>u1'")) {
        CHECK_EQ_INT(a.dtype, SCANFUSE_UINT8);
        CHECK(memcmp(a.data, b, 4) == 0);
        sf_array_free(&a);
    }
    /* '|V2' is bfloat16 */
    const uint16_t bf[2] = {0x3f80, 0xc000}; /* 1.0, -2.0 */
    n = build_npy(img, 1, 0, "{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }\n", -1, bf,
                  sizeof bf);
    if (expect_parse_ok(img, n, &a, "bfloat16")) {
        CHECK_EQ_INT(a.dtype, SCANFUSE_BFLOAT16);
        CHECK(sf_load_f64(a.data, 0, SCANFUSE_BFLOAT16) == 1.0);
        CHECK(sf_load_f64(a.data, 1, SCANFUSE_BFLOAT16) == -2.0);
        sf_array_free(&a);
    }
    /* 0-d */
    const double one = 4.25;
    n = build_npy(img, 1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }\n", -1, &one,
                  sizeof one);
    if (expect_parse_ok(img, n, &a, "0-d")) {
        CHECK_EQ_INT(a.ndim, 0);
        CHECK(*(double *)a.data == 4.25);
        sf_array_free(&a);
    }
    /* a header of one short line without padding, data right after (v1, tiny) */
    n = build_npy(img, 1, 0, "{'descr':'|u1','fortran_order':False,'shape':(4,)}", -1, b, 4);
    if (expect_parse_ok(img, n, &a, "unpadded header")) sf_array_free(&a);
}

static void test_malformed(void) {
    unsigned char img[1024];
    const float f[4] = {1, 2, 3, 4};
    const char *good = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n";
    size_t n;

    /* magic and version */
    n = build_npy(img, 1, 0, good, -1, f, sizeof f);
    img[1] = 'X';
    expect_fail(img, n, SCANFUSE_ERROR_IO, "bad magic", "bad magic");
    expect_fail("hello", 5, SCANFUSE_ERROR_IO, "bad magic", "short text");
    expect_fail("", 0, SCANFUSE_ERROR_IO, "truncated", "empty file");
    n = build_npy(img, 4, 0, good, -1, f, sizeof f);
    expect_fail(img, n, SCANFUSE_ERROR_IO, "version 4.0", "version 4");
    n = build_npy(img, 1, 1, good, -1, f, sizeof f);
    expect_fail(img, n, SCANFUSE_ERROR_IO, "version 1.1", "version 1.1");
    n = build_npy(img, 0, 0, good, -1, f, sizeof f);
    expect_fail(img, n, SCANFUSE_ERROR_IO, "version", "version 0");

    /* truncated header / lying header length */
    n = build_npy(img, 1, 0, good, -1, f, sizeof f);
    expect_fail(img, 8, SCANFUSE_ERROR_IO, "truncated header", "truncated before length");
    expect_fail(img, 9, SCANFUSE_ERROR_IO, "truncated header", "truncated in length");
    expect_fail(img, 30, SCANFUSE_ERROR_IO, "runs past the end", "truncated in header");
    n = build_npy(img, 2, 0, good, -1, f, sizeof f);
    expect_fail(img, 11, SCANFUSE_ERROR_IO, "truncated header", "v2 truncated in length");
    n = build_npy(img, 1, 0, good, 60000, f, sizeof f);
    expect_fail(img, n, SCANFUSE_ERROR_IO, "runs past the end", "header length lies");
    n = build_npy(img, 2, 0, good, 0xFFFFFFFFll, f, sizeof f);
    expect_fail(img, n, SCANFUSE_ERROR_IO, "header length", "huge v2 header length");
    n = build_npy(img, 3, 0, good, 100000, f, sizeof f);
    expect_fail(img, n, SCANFUSE_ERROR_IO, "runs past the end", "v3 header length lies");

    /* malformed dicts */
    static const struct {
        const char *header, *needle, *what;
    } bad[] = {
        {"'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", "malformed header", "no brace"},
        {"{'descr' '<f4', 'fortran_order': False, 'shape': (4,), }\n", "expected ':'", "no colon"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (4,), }\n", "expected ','", "no comma"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), \n", "malformed header", "no close"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), } x\n", "after the dict", "garbage after"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (4,), }\n", "malformed header", "bad quote"},
        {"{descr: '<f4', 'fortran_order': False, 'shape': (4,), }\n", "quoted key", "bare key"},
        {"{'fortran_order': False, 'shape': (4,), }\n", "missing key 'descr'", "no descr"},
        {"{'descr': '<f4', 'shape': (4,), }\n", "missing key 'fortran_order'", "no fortran_order"},
        {"{'descr': '<f4', 'fortran_order': False, }\n", "missing key 'shape'", "no shape"},
        {"{}\n", "missing key", "empty dict"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'extra': 1}\n", "unexpected key 'extra'", "extra key"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}\n", "duplicate key", "duplicate key"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (4,), }\n", "fortran_order", "bad bool"},
        {"{'descr': '<f4', 'fortran_order': Falsely, 'shape': (4,), }\n", "fortran_order", "bad bool prefix"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [4], }\n", "not a tuple", "shape list"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4.0,), }\n", "bad 'shape'", "float dim"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }\n", "non-integer", "name dim"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, }\n", "non-integer", "unclosed shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }\n", "negative", "negative dim"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", "overflows", "digit overflow"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n", "overflows", "numel overflow"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2305843009213693952,), }\n", "overflows", "bytes overflow"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }\n", "too many dimensions", "9 dims"},
        {"", "malformed header", "empty header"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = build_npy(img, 1, 0, bad[i].header, -1, f, sizeof f);
        expect_fail(img, n, SCANFUSE_ERROR_IO, bad[i].needle, bad[i].what);
    }

    /* descrs */
    static const struct {
        const char *descr, *needle;
    } bad_descr[] = {
        {">f4", "big-endian"}, {">i8", "big-endian"}, {"<c8", "complex"}, {"<c16", "complex"},
        {"<u2", "unsupported dtype"}, {"<u8", "unsupported dtype"}, {"<f16", "unsupported dtype"},
        {"<i3", "unsupported dtype"}, {"|V4", "unsupported dtype"}, {"|O", "unsupported dtype"},
        {"<U8", "unsupported dtype"}, {"f4", "unsupported dtype"}, {"<", "unsupported dtype"},
        {"", "unsupported dtype"}, {"<b2", "unsupported dtype"}, {"<M8[ns]", "unsupported dtype"},
    };
    for (size_t i = 0; i < sizeof bad_descr / sizeof bad_descr[0]; i++) {
        char header[160];
        snprintf(header, sizeof header,
                 "{'descr': '%s', 'fortran_order': False, 'shape': (4,), }\n", bad_descr[i].descr);
        n = build_npy(img, 1, 0, header, -1, f, sizeof f);
        expect_fail(img, n, SCANFUSE_ERROR_DTYPE, bad_descr[i].needle, bad_descr[i].descr);
    }
    n = build_npy(img, 1, 0,
                  "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }\n", -1, f,
                  sizeof f);
    expect_fail(img, n, SCANFUSE_ERROR_DTYPE, "structured", "structured descr");

    /* data shorter or longer than the shape says */
    n = build_npy(img, 1, 0, good, -1, f, sizeof f - 1);
    expect_fail(img, n, SCANFUSE_ERROR_IO, "truncated data", "data one byte short");
    n = build_npy(img, 1, 0, good, -1, f, 0);
    expect_fail(img, n, SCANFUSE_ERROR_IO, "truncated data", "no data");
    n = build_npy(img, 1, 0,
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }\n", -1, f,
                  sizeof f);
    expect_fail(img, n, SCANFUSE_ERROR_IO, "truncated data", "shape lies");
    n = build_npy(img, 1, 0,
                  "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000, 1000), }\n",
                  -1, f, sizeof f);
    expect_fail(img, n, SCANFUSE_ERROR_IO, "truncated data", "shape lies about 8 EB");
    n = build_npy(img, 1, 0, good, -1, f, sizeof f);
    img[n++] = 0;
    expect_fail(img, n, SCANFUSE_ERROR_IO, "trailing data", "one trailing byte");
    n = build_npy(img, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }\n", -1, f,
                  sizeof f);
    expect_fail(img, n, SCANFUSE_ERROR_IO, "trailing data", "empty shape with data");
    /* a tiny v1 header whose data was read along with the prefix */
    n = build_npy(img, 1, 0, "{}", 0, f, sizeof f);
    expect_fail(img, n, SCANFUSE_ERROR_IO, "malformed header", "zero-length header");

    /* NULL arguments */
    sf_array a;
    char msg[SF_ERR_LEN];
    CHECK(sf_npy_parse(NULL, 10, &a, msg, sizeof msg) != SCANFUSE_OK);
    CHECK(sf_npy_parse(img, n, NULL, msg, sizeof msg) != SCANFUSE_OK);
    CHECK(sf_npy_read(NULL, &a, msg, sizeof msg) != SCANFUSE_OK);
    sf_array_free(NULL);
}

static void test_files(void) {
    char path[512], msg[SF_ERR_LEN] = "";
    sf_array a;
    /* missing file */
    tmp_path(path, sizeof path, "does_not_exist.npy");
    scanfuse_status st = sf_npy_read(path, &a, msg, sizeof msg);
    CHECK_STATUS(st, SCANFUSE_ERROR_IO);
    CHECKF(sf_test_contains(msg, "cannot open") && sf_test_contains(msg, path), "msg '%s'", msg);
    CHECK(a.data == NULL);
    /* a directory */
    st = sf_npy_read(tmpdir, &a, msg, sizeof msg);
    CHECK_STATUS(st, SCANFUSE_ERROR_IO);
    CHECK(a.data == NULL);

    /* a failed write (directory missing) leaves neither PATH nor PATH.tmp */
    char bad[600], badtmp[700];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.npy", tmpdir);
    snprintf(badtmp, sizeof badtmp, "%s.tmp", bad);
    float x[3] = {1, 2, 3};
    int64_t shape[1] = {3};
    sf_view v;
    sf_view_contiguous(&v, x, SCANFUSE_FLOAT32, 1, shape);
    st = sf_npy_write(bad, &v, msg, sizeof msg);
    CHECK_STATUS(st, SCANFUSE_ERROR_IO);
    CHECKF(sf_test_contains(msg, bad), "msg '%s'", msg);
    CHECK(!file_exists(bad));
    CHECK(!file_exists(badtmp));

    /* writing onto a directory's name fails at the rename and removes PATH.tmp */
    char dirpath[512], dirtmp[600];
    tmp_path(dirpath, sizeof dirpath, "subdir");
    snprintf(dirtmp, sizeof dirtmp, "%s.tmp", dirpath);
    CHECK(mkdir(dirpath, 0777) == 0);
    st = sf_npy_write(dirpath, &v, msg, sizeof msg);
    CHECK_STATUS(st, SCANFUSE_ERROR_IO);
    CHECK(!file_exists(dirtmp));

    /* a failed write does not replace an existing file */
    tmp_path(path, sizeof path, "keep.npy");
    CHECK_STATUS(sf_npy_write(path, &v, msg, sizeof msg), SCANFUSE_OK);
    sf_view badv = v;
    badv.dtype = SCANFUSE_DTYPE_NONE;
    CHECK_STATUS(sf_npy_write(path, &badv, msg, sizeof msg), SCANFUSE_ERROR_DTYPE);
    badv = v;
    badv.shape[0] = -1;
    CHECK(sf_npy_write(path, &badv, msg, sizeof msg) != SCANFUSE_OK);
    badv = v;
    badv.data = NULL;
    CHECK(sf_npy_write(path, &badv, msg, sizeof msg) != SCANFUSE_OK);
    st = sf_npy_read(path, &a, msg, sizeof msg);
    CHECK_STATUS(st, SCANFUSE_OK);
    if (st == SCANFUSE_OK) CHECK(memcmp(a.data, x, sizeof x) == 0);
    sf_array_free(&a);
    /* overwriting an existing file works */
    x[0] = 9;
    CHECK_STATUS(sf_npy_write(path, &v, msg, sizeof msg), SCANFUSE_OK);
    st = sf_npy_read(path, &a, msg, sizeof msg);
    if (st == SCANFUSE_OK) CHECK(((float *)a.data)[0] == 9.0f);
    sf_array_free(&a);
    remove(path);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sf_test_npy_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "mkdtemp failed\n");
        return 1;
    }
    test_round_trips();
    test_strided_write();
    test_fortran();
    test_versions_and_descrs();
    test_malformed();
    test_files();
    char sub[512];
    tmp_path(sub, sizeof sub, "subdir");
    rmdir(sub);
    if (rmdir(tmpdir) != 0) fprintf(stderr, "could not remove %s (files left behind?)\n", tmpdir);
    return sf_test_finish("test_npy");
}
