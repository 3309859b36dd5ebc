/*
 * npy.c — reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0).
 *
 * File layout: the magic "\x93NUMPY", a major and a minor version byte, the header
 * length (2 bytes little-endian for version 1, 4 bytes for versions 2 and 3), the
 * header (a Python dict literal with exactly the keys 'descr', 'fortran_order' and
 * 'shape', padded with spaces and ended by '\n'; latin-1 for versions 1 and 2, utf-8 for
 * version 3), then the raw array data.
 *
 * Invariants:
 *  - every byte read is bounds-checked against the buffer or file length first; the
 *    header length, the shape and the data length are all checked before anything is
 *    allocated or copied, and sizes are computed with overflow checks;
 *  - a successful read yields a C-order sf_array (Fortran-order files are transposed),
 *    bool elements normalized to 0/1; a failed read leaves *out zeroed and returns
 *    SCANFUSE_ERROR_IO (malformed file) or SCANFUSE_ERROR_DTYPE (a complex, big-endian
 *    or otherwise unsupported descr), with a message;
 *  - accepted descrs: byte orders '<', '|' and '=' (this is a little-endian code base,
 *    so '=' means little-endian), and '>' only for one-byte types; kinds b1 u1 i1 i2
 *    i4 i8 f2 f4 f8; '|V2' is bfloat16 (see sf.h: the little-endian bfloat16 bit
 *    pattern as two raw bytes);
 *  - writes produce version 1.0 (2.0 when the header exceeds 65535 bytes), C order,
 *    the header padded so that the data starts at a multiple of 64 bytes; the file is
 *    written to PATH.tmp and renamed onto PATH, and on any failure PATH.tmp is removed,
 *    so a failed write leaves neither a partial PATH nor PATH.tmp behind;
 *  - trailing bytes after the array data are rejected (a header that lies about its
 *    shape is caught in both directions).
 */
#include "sf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* The longest header we accept when reading (NumPy itself refuses headers > 10000
 * bytes by default; this limit only protects against absurd allocations). */
#define NPY_MAX_HEADER ((uint64_t)1 << 24)

/* What the header dict says. */
typedef struct npy_info {
    scanfuse_dtype dtype;
    bool fortran;
    int ndim;
    int64_t shape[SF_MAX_DIMS];
    uint64_t nbytes; /* numel * element size */
} npy_info;

/* ------------------------------------------------------------------------------ */
/* The fixed prefix: magic, version, header length                                 */
/* ------------------------------------------------------------------------------ */

/* Checks the first bytes (len of them available, up to 12 needed).  On success gives
 * the offset where the header text starts and its length. */
static scanfuse_status parse_prefix(const unsigned char *b, size_t len, size_t *hstart,
                                    uint64_t *hlen, char *msg, size_t msglen) {
    size_t m = len < sizeof npy_magic ? len : sizeof npy_magic;
    if (memcmp(b, npy_magic, m) != 0) {
        sf_msg(msg, msglen, "not a .npy file (bad magic)");
        return SCANFUSE_ERROR_IO;
    }
    if (len < 10) {
        sf_msg(msg, msglen, "truncated header: the file has only %zu bytes", len);
        return SCANFUSE_ERROR_IO;
    }
    unsigned major = b[6], minor = b[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0) {
        sf_msg(msg, msglen, "unsupported .npy format version %u.%u (1.0, 2.0 and 3.0 are supported)",
               major, minor);
        return SCANFUSE_ERROR_IO;
    }
    if (major == 1) {
        *hstart = 10;
        *hlen = (uint64_t)b[8] | (uint64_t)b[9] << 8;
    } else {
        if (len < 12) {
            sf_msg(msg, msglen, "truncated header: the file has only %zu bytes", len);
            return SCANFUSE_ERROR_IO;
        }
        *hstart = 12;
        *hlen = (uint64_t)b[8] | (uint64_t)b[9] << 8 | (uint64_t)b[10] << 16 |
                (uint64_t)b[11] << 24;
    }
    if (*hlen > NPY_MAX_HEADER) {
        sf_msg(msg, msglen, "header length %llu is too large", (unsigned long long)*hlen);
        return SCANFUSE_ERROR_IO;
    }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* The header dict                                                                  */
/* ------------------------------------------------------------------------------ */

typedef struct hcursor {
    const char *s;
    size_t n, i;
} hcursor;

static void skip_ws(hcursor *c) {
    while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' || c->s[c->i] == '\n' ||
                           c->s[c->i] == '\r'))
        c->i++;
}

static bool accept(hcursor *c, char ch) {
    skip_ws(c);
    if (c->i < c->n && c->s[c->i] == ch) {
        c->i++;
        return true;
    }
    return false;
}

/* A quoted Python string without escapes, copied into out (cap bytes). */
static bool parse_string(hcursor *c, char *out, size_t cap) {
    skip_ws(c);
    if (c->i >= c->n || (c->s[c->i] != '\'' && c->s[c->i] != '"')) return false;
    char q = c->s[c->i++];
    size_t k = 0;
    while (c->i < c->n && c->s[c->i] != q) {
        if (c->s[c->i] == '\\' || k + 1 >= cap) return false;
        out[k++] = c->s[c->i++];
    }
    if (c->i >= c->n) return false;
    c->i++;
    out[k] = '\0';
    return true;
}

static bool parse_word(hcursor *c, const char *w) {
    skip_ws(c);
    size_t k = strlen(w);
    if (c->n - c->i < k || memcmp(c->s + c->i, w, k) != 0) return false;
    size_t j = c->i + k;
    if (j < c->n && ((c->s[j] >= 'a' && c->s[j] <= 'z') || (c->s[j] >= 'A' && c->s[j] <= 'Z') ||
                     (c->s[j] >= '0' && c->s[j] <= '9') || c->s[j] == '_'))
        return false;
    c->i = j;
    return true;
}

/* Maps a descr string to a dtype. */
static scanfuse_status parse_descr(const char *d, scanfuse_dtype *out, char *msg, size_t msglen) {
    char order = d[0];
    if (order != '<' && order != '>' && order != '|' && order != '=') {
        sf_msg(msg, msglen, "unsupported dtype descr '%s' (no byte-order character)", d);
        return SCANFUSE_ERROR_DTYPE;
    }
    if (strlen(d) < 3) {
        sf_msg(msg, msglen, "unsupported dtype descr '%s'", d);
        return SCANFUSE_ERROR_DTYPE;
    }
    char kind = d[1];
    long size = 0;
    const char *p = d + 2;
    if (!*p) {
        sf_msg(msg, msglen, "unsupported dtype descr '%s'", d);
        return SCANFUSE_ERROR_DTYPE;
    }
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || size > 100000) {
            sf_msg(msg, msglen, "unsupported dtype descr '%s'", d);
            return SCANFUSE_ERROR_DTYPE;
        }
        size = size * 10 + (*p - '0');
    }
    if (kind == 'c') {
        sf_msg(msg, msglen, "complex dtypes are not supported: descr '%s'", d);
        return SCANFUSE_ERROR_DTYPE;
    }
    if (order == '>' && size > 1) {
        sf_msg(msg, msglen, "big-endian dtypes are not supported: descr '%s'", d);
        return SCANFUSE_ERROR_DTYPE;
    }
    scanfuse_dtype dt = SCANFUSE_DTYPE_NONE;
    switch (kind) {
    case 'b': if (size == 1) dt = SCANFUSE_BOOL; break;
    case 'u': if (size == 1) dt = SCANFUSE_UINT8; break;
    case 'i':
        if (size == 1) dt = SCANFUSE_INT8;
        else if (size == 2) dt = SCANFUSE_INT16;
        else if (size == 4) dt = SCANFUSE_INT32;
        else if (size == 8) dt = SCANFUSE_INT64;
        break;
    case 'f':
        if (size == 2) dt = SCANFUSE_FLOAT16;
        else if (size == 4) dt = SCANFUSE_FLOAT32;
        else if (size == 8) dt = SCANFUSE_FLOAT64;
        break;
    case 'V':
        if (size == 2 && order != '>') dt = SCANFUSE_BFLOAT16; /* '|V2': bfloat16 */
        break;
    default: break;
    }
    if (dt == SCANFUSE_DTYPE_NONE) {
        sf_msg(msg, msglen, "unsupported dtype descr '%s'", d);
        return SCANFUSE_ERROR_DTYPE;
    }
    *out = dt;
    return SCANFUSE_OK;
}

/* A shape tuple: "()", "(3,)", "(3, 4)", trailing comma allowed. */
static scanfuse_status parse_shape(hcursor *c, npy_info *info, char *msg, size_t msglen) {
    if (!accept(c, '(')) {
        sf_msg(msg, msglen, "malformed header: 'shape' is not a tuple");
        return SCANFUSE_ERROR_IO;
    }
    info->ndim = 0;
    if (accept(c, ')')) return SCANFUSE_OK;
    for (;;) {
        skip_ws(c);
        bool neg = false;
        if (c->i < c->n && c->s[c->i] == '-') {
            neg = true;
            c->i++;
        }
        if (c->i >= c->n || c->s[c->i] < '0' || c->s[c->i] > '9') {
            sf_msg(msg, msglen, "malformed header: 'shape' holds a non-integer");
            return SCANFUSE_ERROR_IO;
        }
        int64_t v = 0;
        while (c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9') {
            int d = c->s[c->i++] - '0';
            if (v > (INT64_MAX - d) / 10) {
                sf_msg(msg, msglen, "shape dimension overflows int64");
                return SCANFUSE_ERROR_IO;
            }
            v = v * 10 + d;
        }
        /* Python allows a 'L' suffix in old (Python 2) files */
        if (c->i < c->n && c->s[c->i] == 'L') c->i++;
        if (neg && v != 0) {
            sf_msg(msg, msglen, "negative shape dimension -%lld", (long long)v);
            return SCANFUSE_ERROR_IO;
        }
        if (info->ndim >= SF_MAX_DIMS) {
            sf_msg(msg, msglen, "too many dimensions (at most %d are supported)", SF_MAX_DIMS);
            return SCANFUSE_ERROR_IO;
        }
        info->shape[info->ndim++] = v;
        if (accept(c, ')')) return SCANFUSE_OK;
        if (!accept(c, ',')) {
            sf_msg(msg, msglen, "malformed header: bad 'shape' tuple");
            return SCANFUSE_ERROR_IO;
        }
        if (accept(c, ')')) {
            return SCANFUSE_OK;
        }
    }
}

/* Parses the header text (n bytes, not NUL-terminated). */
static scanfuse_status parse_header(const char *h, size_t n, npy_info *info, char *msg,
                                    size_t msglen) {
    hcursor c = {h, n, 0};
    bool have_descr = false, have_fortran = false, have_shape = false;
    memset(info, 0, sizeof *info);
    info->dtype = SCANFUSE_DTYPE_NONE;
    char descr[64] = "";
    if (!accept(&c, '{')) {
        sf_msg(msg, msglen, "malformed header: expected a dict, got '%.20s'",
               n ? h : "");
        return SCANFUSE_ERROR_IO;
    }
    for (;;) {
        if (accept(&c, '}')) break;
        char key[32];
        if (!parse_string(&c, key, sizeof key)) {
            sf_msg(msg, msglen, "malformed header: expected a quoted key at byte %zu", c.i);
            return SCANFUSE_ERROR_IO;
        }
        if (!accept(&c, ':')) {
            sf_msg(msg, msglen, "malformed header: expected ':' after key '%s'", key);
            return SCANFUSE_ERROR_IO;
        }
        if (strcmp(key, "descr") == 0 && !have_descr) {
            skip_ws(&c);
            if (c.i < c.n && c.s[c.i] == '[') {
                sf_msg(msg, msglen, "structured dtypes are not supported");
                return SCANFUSE_ERROR_DTYPE;
            }
            if (!parse_string(&c, descr, sizeof descr)) {
                sf_msg(msg, msglen, "malformed header: 'descr' is not a short string");
                return SCANFUSE_ERROR_IO;
            }
            have_descr = true;
        } else if (strcmp(key, "fortran_order") == 0 && !have_fortran) {
            if (parse_word(&c, "True")) info->fortran = true;
            else if (parse_word(&c, "False")) info->fortran = false;
            else {
                sf_msg(msg, msglen, "malformed header: 'fortran_order' is not True or False");
                return SCANFUSE_ERROR_IO;
            }
            have_fortran = true;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            scanfuse_status st = parse_shape(&c, info, msg, msglen);
            if (st != SCANFUSE_OK) return st;
            have_shape = true;
        } else {
            bool dup = strcmp(key, "descr") == 0 || strcmp(key, "fortran_order") == 0 ||
                       strcmp(key, "shape") == 0;
            sf_msg(msg, msglen, "malformed header: %s key '%s'", dup ? "duplicate" : "unexpected",
                   key);
            return SCANFUSE_ERROR_IO;
        }
        if (accept(&c, '}')) break;
        if (!accept(&c, ',')) {
            sf_msg(msg, msglen, "malformed header: expected ',' or '}' at byte %zu", c.i);
            return SCANFUSE_ERROR_IO;
        }
    }
    skip_ws(&c);
    while (c.i < c.n && c.s[c.i] == '\0') c.i++; /* tolerate NUL padding */
    if (c.i != c.n) {
        sf_msg(msg, msglen, "malformed header: unexpected text after the dict at byte %zu", c.i);
        return SCANFUSE_ERROR_IO;
    }
    if (!have_descr || !have_fortran || !have_shape) {
        sf_msg(msg, msglen, "malformed header: missing key '%s'",
               !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
        return SCANFUSE_ERROR_IO;
    }
    scanfuse_status st = parse_descr(descr, &info->dtype, msg, msglen);
    if (st != SCANFUSE_OK) return st;
    int64_t numel = 1;
    for (int d = 0; d < info->ndim; d++) {
        if (sf_mul_overflow(numel, info->shape[d], &numel)) {
            sf_msg(msg, msglen, "shape overflows: the element count does not fit in int64");
            return SCANFUSE_ERROR_IO;
        }
    }
    int64_t nbytes;
    if (sf_mul_overflow(numel, (int64_t)scanfuse_dtype_size(info->dtype), &nbytes) ||
        (uint64_t)nbytes > (uint64_t)SIZE_MAX) {
        sf_msg(msg, msglen, "shape overflows: the byte count does not fit");
        return SCANFUSE_ERROR_IO;
    }
    info->nbytes = (uint64_t)nbytes;
    return SCANFUSE_OK;
}

static void shape_text(const npy_info *info, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = '\0';
    k += (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < info->ndim && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", d ? ", " : "", (long long)info->shape[d]);
    if (k < cap) snprintf(buf + k, cap - k, ")");
}

/* ------------------------------------------------------------------------------ */
/* Data                                                                             */
/* ------------------------------------------------------------------------------ */

/* Moves raw file data (info->nbytes at src) into out as C order. */
static scanfuse_status take_data(const npy_info *info, const unsigned char *src, sf_array *out,
                                 char *msg, size_t msglen) {
    size_t n = (size_t)info->nbytes;
    unsigned char *data = sf_malloc(n);
    if (!data) {
        sf_msg(msg, msglen, "out of memory allocating %zu bytes", n);
        return SCANFUSE_ERROR_MEMORY;
    }
    size_t es = scanfuse_dtype_size(info->dtype);
    if (info->fortran && info->ndim > 1 && n > 0) {
        /* Walk the C-order index; the Fortran offset has strides 1, s0, s0*s1, ... */
        int64_t fstride[SF_MAX_DIMS], idx[SF_MAX_DIMS] = {0};
        int64_t s = 1;
        for (int d = 0; d < info->ndim; d++) {
            fstride[d] = s;
            s *= info->shape[d];
        }
        int64_t numel = (int64_t)(n / es), off = 0;
        for (int64_t i = 0; i < numel; i++) {
            memcpy(data + (size_t)i * es, src + (size_t)off * es, es);
            for (int d = info->ndim - 1; d >= 0; d--) {
                if (++idx[d] < info->shape[d]) {
                    off += fstride[d];
                    break;
                }
                off -= fstride[d] * (idx[d] - 1);
                idx[d] = 0;
            }
        }
    } else if (n > 0) {
        memcpy(data, src, n);
    }
    if (info->dtype == SCANFUSE_BOOL)
        for (size_t i = 0; i < n; i++) data[i] = data[i] != 0;
    out->dtype = info->dtype;
    out->ndim = info->ndim;
    for (int d = 0; d < info->ndim; d++) out->shape[d] = info->shape[d];
    out->data = data;
    return SCANFUSE_OK;
}

static void zero_array(sf_array *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    out->dtype = SCANFUSE_DTYPE_NONE;
}

void sf_array_free(sf_array *a) {
    if (!a) return;
    free(a->data);
    zero_array(a);
}

scanfuse_status sf_npy_parse(const void *bytes, size_t len, sf_array *out, char *msg,
                             size_t msglen) {
    zero_array(out);
    if (!out || (!bytes && len)) {
        sf_msg(msg, msglen, "sf_npy_parse: NULL argument");
        return SCANFUSE_ERROR_ARGUMENT;
    }
    const unsigned char *b = bytes;
    size_t hstart;
    uint64_t hlen;
    scanfuse_status st = parse_prefix(b, len, &hstart, &hlen, msg, msglen);
    if (st != SCANFUSE_OK) return st;
    if (hlen > len - hstart) {
        sf_msg(msg, msglen, "header length %llu runs past the end of the file (%zu bytes)",
               (unsigned long long)hlen, len);
        return SCANFUSE_ERROR_IO;
    }
    npy_info info;
    st = parse_header((const char *)b + hstart, (size_t)hlen, &info, msg, msglen);
    if (st != SCANFUSE_OK) return st;
    size_t dstart = hstart + (size_t)hlen, have = len - dstart;
    if (have < info.nbytes) {
        char sh[160];
        shape_text(&info, sh, sizeof sh);
        sf_msg(msg, msglen, "truncated data: shape %s of %s needs %llu bytes, the file has %zu",
               sh, scanfuse_dtype_name(info.dtype), (unsigned long long)info.nbytes, have);
        return SCANFUSE_ERROR_IO;
    }
    if (have > info.nbytes) {
        sf_msg(msg, msglen, "%llu bytes of trailing data after the array",
               (unsigned long long)(have - info.nbytes));
        return SCANFUSE_ERROR_IO;
    }
    st = take_data(&info, b + dstart, out, msg, msglen);
    if (st != SCANFUSE_OK) zero_array(out);
    return st;
}

scanfuse_status sf_npy_read(const char *path, sf_array *out, char *msg, size_t msglen) {
    zero_array(out);
    if (!path || !out) {
        sf_msg(msg, msglen, "sf_npy_read: NULL argument");
        return SCANFUSE_ERROR_ARGUMENT;
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        sf_msg(msg, msglen, "%s: cannot open: %s", path, strerror(errno));
        return SCANFUSE_ERROR_IO;
    }
    char m[SF_ERR_LEN] = "";
    scanfuse_status st = SCANFUSE_OK;
    unsigned char prefix[12];
    char *header = NULL;
    unsigned char *raw = NULL;
    size_t got = fread(prefix, 1, sizeof prefix, fp);
    size_t hstart = 0;
    uint64_t hlen = 0;
    npy_info info;
    if (ferror(fp)) {
        sf_msg(m, sizeof m, "read error: %s", strerror(errno));
        st = SCANFUSE_ERROR_IO;
        goto done;
    }
    st = parse_prefix(prefix, got, &hstart, &hlen, m, sizeof m);
    if (st != SCANFUSE_OK) goto done;
    /* Position at the header (a version-1 header starts inside the 12 bytes read). */
    header = sf_malloc((size_t)hlen);
    if (!header) {
        sf_msg(m, sizeof m, "out of memory");
        st = SCANFUSE_ERROR_MEMORY;
        goto done;
    }
    {
        size_t inprefix = got - hstart;
        if (inprefix > hlen) inprefix = (size_t)hlen;
        memcpy(header, prefix + hstart, inprefix);
        size_t more = (size_t)hlen - inprefix;
        size_t g2 = more ? fread(header + inprefix, 1, more, fp) : 0;
        if (g2 < more) {
            sf_msg(m, sizeof m, "header length %llu runs past the end of the file",
                   (unsigned long long)hlen);
            st = SCANFUSE_ERROR_IO;
            goto done;
        }
        st = parse_header(header, (size_t)hlen, &info, m, sizeof m);
        if (st != SCANFUSE_OK) goto done;
        /* Data bytes already read along with the prefix (a tiny version-1 header). */
        size_t early = got - hstart - inprefix;
        if (early > info.nbytes) {
            sf_msg(m, sizeof m, "%llu bytes of trailing data after the array",
                   (unsigned long long)(early - info.nbytes));
            st = SCANFUSE_ERROR_IO;
            goto done;
        }
        /* A seekable file tells its size: check the data length before allocating, so
         * that a shape that lies about a huge array is an I/O error, not a failed
         * allocation. */
        long here = ftell(fp);
        if (here >= 0 && fseek(fp, 0, SEEK_END) == 0) {
            long end = ftell(fp);
            if (end < here || fseek(fp, here, SEEK_SET) != 0) {
                sf_msg(m, sizeof m, "cannot determine the file size");
                st = SCANFUSE_ERROR_IO;
                goto done;
            }
            uint64_t have = (uint64_t)(end - here) + early;
            if (have < info.nbytes) {
                char sh[160];
                shape_text(&info, sh, sizeof sh);
                sf_msg(m, sizeof m,
                       "truncated data: shape %s of %s needs %llu bytes, the file has %llu", sh,
                       scanfuse_dtype_name(info.dtype), (unsigned long long)info.nbytes,
                       (unsigned long long)have);
                st = SCANFUSE_ERROR_IO;
                goto done;
            }
        } else {
            clearerr(fp);
        }
        raw = sf_malloc((size_t)info.nbytes);
        if (!raw) {
            sf_msg(m, sizeof m, "out of memory allocating %llu bytes",
                   (unsigned long long)info.nbytes);
            st = SCANFUSE_ERROR_MEMORY;
            goto done;
        }
        memcpy(raw, prefix + hstart + inprefix, early);
        size_t want = (size_t)info.nbytes - early;
        size_t g3 = want ? fread(raw + early, 1, want, fp) : 0;
        if (g3 < want) {
            char sh[160];
            shape_text(&info, sh, sizeof sh);
            sf_msg(m, sizeof m, "truncated data: shape %s of %s needs %llu bytes, the file has %zu",
                   sh, scanfuse_dtype_name(info.dtype), (unsigned long long)info.nbytes,
                   early + g3);
            st = SCANFUSE_ERROR_IO;
            goto done;
        }
        if (fgetc(fp) != EOF) {
            sf_msg(m, sizeof m, "trailing data after the array");
            st = SCANFUSE_ERROR_IO;
            goto done;
        }
        if (ferror(fp)) {
            sf_msg(m, sizeof m, "read error: %s", strerror(errno));
            st = SCANFUSE_ERROR_IO;
            goto done;
        }
        st = take_data(&info, raw, out, m, sizeof m);
    }
done:
    fclose(fp);
    free(header);
    free(raw);
    if (st != SCANFUSE_OK) {
        zero_array(out);
        sf_msg(msg, msglen, "%s: %s", path, m);
    }
    return st;
}

/* ------------------------------------------------------------------------------ */
/* Writing                                                                          */
/* ------------------------------------------------------------------------------ */

static const char *descr_of(scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_BOOL: return "|b1";
    case SCANFUSE_UINT8: return "|u1";
    case SCANFUSE_INT8: return "|i1";
    case SCANFUSE_INT16: return "<i2";
    case SCANFUSE_INT32: return "<i4";
    case SCANFUSE_INT64: return "<i8";
    case SCANFUSE_FLOAT16: return "<f2";
    case SCANFUSE_BFLOAT16: return "|V2";
    case SCANFUSE_FLOAT32: return "<f4";
    case SCANFUSE_FLOAT64: return "<f8";
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: break;
    }
    return NULL;
}

/* Writes the view's elements in C order through a staging buffer. */
static bool write_data(FILE *fp, const sf_view *v, size_t es, int64_t numel) {
    bool contiguous = true;
    int64_t expect = 1;
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->strides[d] != expect) contiguous = false;
        expect *= v->shape[d];
    }
    if (contiguous && v->dtype != SCANFUSE_BOOL)
        return fwrite(v->data, es, (size_t)numel, fp) == (size_t)numel;
    enum { CHUNK = 1 << 16 };
    unsigned char *buf = sf_malloc(CHUNK);
    if (!buf) return false;
    const unsigned char *base = v->data;
    int64_t idx[SF_MAX_DIMS] = {0}, off = 0;
    size_t fill = 0;
    bool ok = true;
    for (int64_t i = 0; i < numel && ok; i++) {
        memcpy(buf + fill, base + (size_t)off * es, es);
        if (v->dtype == SCANFUSE_BOOL) buf[fill] = buf[fill] != 0;
        fill += es;
        if (fill + es > CHUNK) {
            ok = fwrite(buf, 1, fill, fp) == fill;
            fill = 0;
        }
        for (int d = v->ndim - 1; d >= 0; d--) {
            if (++idx[d] < v->shape[d]) {
                off += v->strides[d];
                break;
            }
            off -= v->strides[d] * (idx[d] - 1);
            idx[d] = 0;
        }
    }
    if (ok && fill) ok = fwrite(buf, 1, fill, fp) == fill;
    free(buf);
    return ok;
}

scanfuse_status sf_npy_write(const char *path, const sf_view *v, char *msg, size_t msglen) {
    if (!path || !v || !*path) {
        sf_msg(msg, msglen, "sf_npy_write: no path or no view");
        return SCANFUSE_ERROR_ARGUMENT;
    }
    const char *descr = descr_of(v->dtype);
    if (!descr) {
        sf_msg(msg, msglen, "%s: cannot write dtype %d", path, (int)v->dtype);
        return SCANFUSE_ERROR_DTYPE;
    }
    if (v->ndim < 0 || v->ndim > SF_MAX_DIMS) {
        sf_msg(msg, msglen, "%s: bad number of dimensions %d", path, v->ndim);
        return SCANFUSE_ERROR_ARGUMENT;
    }
    int64_t numel = 1;
    for (int d = 0; d < v->ndim; d++) {
        if (v->shape[d] < 0 || v->strides[d] < 0 || sf_mul_overflow(numel, v->shape[d], &numel)) {
            sf_msg(msg, msglen, "%s: bad shape or strides", path);
            return SCANFUSE_ERROR_ARGUMENT;
        }
    }
    size_t es = scanfuse_dtype_size(v->dtype);
    if (numel > 0 && !v->data) {
        sf_msg(msg, msglen, "%s: no data", path);
        return SCANFUSE_ERROR_ARGUMENT;
    }

    /* The header: the dict, spaces, '\n'; prefix + header a multiple of 64. */
    char dict[512];
    int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
    for (int d = 0; d < v->ndim; d++)
        k += snprintf(dict + k, sizeof dict - (size_t)k, "%s%lld", d ? ", " : "",
                      (long long)v->shape[d]);
    k += snprintf(dict + k, sizeof dict - (size_t)k, "%s), }", v->ndim == 1 ? "," : "");
    size_t dlen = (size_t)k;
    int major = 1;
    size_t prefix = 10;
    size_t total = (prefix + dlen + 1 + 63) / 64 * 64;
    if (total - prefix > 65535) {
        major = 2;
        prefix = 12;
        total = (prefix + dlen + 1 + 63) / 64 * 64;
    }
    size_t hlen = total - prefix;
    unsigned char head[1024];
    SF_ASSERT(total <= sizeof head);
    memcpy(head, npy_magic, 6);
    head[6] = (unsigned char)major;
    head[7] = 0;
    if (major == 1) {
        head[8] = (unsigned char)(hlen & 0xff);
        head[9] = (unsigned char)(hlen >> 8);
    } else {
        for (int i = 0; i < 4; i++) head[8 + i] = (unsigned char)(hlen >> (8 * i));
    }
    memcpy(head + prefix, dict, dlen);
    memset(head + prefix + dlen, ' ', hlen - dlen - 1);
    head[total - 1] = '\n';

    size_t plen = strlen(path);
    char *tmp = sf_malloc(plen + 5);
    if (!tmp) {
        sf_msg(msg, msglen, "%s: out of memory", path);
        return SCANFUSE_ERROR_MEMORY;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        sf_msg(msg, msglen, "%s: cannot write: %s", path, strerror(errno));
        free(tmp);
        return SCANFUSE_ERROR_IO;
    }
    bool ok = fwrite(head, 1, total, fp) == total;
    if (ok && numel > 0) ok = write_data(fp, v, es, numel);
    int err = errno;
    if (fflush(fp) != 0) {
        ok = false;
        err = errno;
    }
    if (fclose(fp) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        remove(tmp);
        free(tmp);
        sf_msg(msg, msglen, "%s: write failed: %s", path, strerror(err));
        return SCANFUSE_ERROR_IO;
    }
    if (rename(tmp, path) != 0) {
        err = errno;
        remove(tmp);
        free(tmp);
        sf_msg(msg, msglen, "%s: cannot rename the temporary file into place: %s", path,
               strerror(err));
        return SCANFUSE_ERROR_IO;
    }
    free(tmp);
    return SCANFUSE_OK;
}
