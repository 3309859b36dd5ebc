/*
 * sweep_util.h — shared helpers of the sweep, accuracy and bad-input test programs:
 * strided tensor buffers with canary guard zones, element offsets, and a small string
 * appender.  Header-only (static functions), because every tests/test_*.c is its own
 * program and helper .c files are not compiled.
 *
 * A tbuf is one allocation laid out as [GUARD canary bytes][misalignment][byte_offset]
 * [the elements' span][GUARD canary bytes]; its DLTensor points into it.  A tbuf must
 * not be moved after tb_init (its DLTensor points at its own shape/strides arrays).
 */
#ifndef SF_SWEEP_UTIL_H
#define SF_SWEEP_UTIL_H

#include "harness.h"
#include "sf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SW_CANARY 0xA5
#define SW_GUARD 64

/* How a tensor is laid out in its buffer. */
enum {
    L_CONTIG,      /* row-major, strides NULL                                      */
    L_TRANSPOSED,  /* column-major: a transposed view of a compact array (ndim >= 2) */
    L_SLICED,      /* every other element along every dim ([::2, ::2, ...])          */
    L_BROADCAST,   /* stride 0 along dim 0                                         */
    L_MISALIGNED,  /* row-major, explicit strides, data 1 byte off alignment, byte_offset */
    L_NLAYOUTS
};

static inline const char *sw_layout_name(int layout) {
    static const char *const names[L_NLAYOUTS] = {"contig", "transposed", "sliced", "broadcast",
                                                  "misaligned"};
    return layout >= 0 && layout < L_NLAYOUTS ? names[layout] : "?";
}

typedef struct tbuf {
    unsigned char *alloc;
    size_t alloc_len;
    unsigned char *base; /* element offset 0 */
    size_t esize;
    scanfuse_dtype dt;
    int ndim;
    int64_t shape[SF_MAX_DIMS];
    int64_t strides[SF_MAX_DIMS];
    int64_t numel;
    int64_t span; /* elements from base covered by the view */
    int layout;
    scanfuse_dl_tensor dl;
} tbuf;

static inline int64_t sw_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* Allocates and fills the whole buffer with the canary.  Returns false when out of
 * memory.  `layout` falls back to L_CONTIG where it does not apply (ndim too small). */
static inline bool tb_init(tbuf *t, scanfuse_dtype dt, int ndim, const int64_t *shape, int layout) {
    memset(t, 0, sizeof *t);
    t->dt = dt;
    t->esize = scanfuse_dtype_size(dt);
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
    t->numel = sw_numel(ndim, shape);
    if ((layout == L_TRANSPOSED && ndim < 2) || (layout != L_CONTIG && ndim < 1)) layout = L_CONTIG;
    t->layout = layout;
    /* strides */
    int64_t s = 1;
    switch (layout) {
    case L_TRANSPOSED:
        for (int d = 0; d < ndim; d++) {
            t->strides[d] = s;
            s *= shape[d] > 0 ? shape[d] : 1;
        }
        break;
    case L_SLICED:
        s = 2;
        for (int d = ndim - 1; d >= 0; d--) {
            t->strides[d] = s;
            s *= 2 * (shape[d] > 0 ? shape[d] : 1);
        }
        break;
    case L_BROADCAST:
        for (int d = ndim - 1; d >= 1; d--) {
            t->strides[d] = s;
            s *= shape[d] > 0 ? shape[d] : 1;
        }
        t->strides[0] = 0;
        break;
    default:
        for (int d = ndim - 1; d >= 0; d--) {
            t->strides[d] = s;
            s *= shape[d] > 0 ? shape[d] : 1;
        }
        break;
    }
    t->span = 0;
    if (t->numel > 0) {
        t->span = 1;
        for (int d = 0; d < ndim; d++) t->span += (shape[d] - 1) * t->strides[d];
    }
    size_t misalign = layout == L_MISALIGNED ? 1 : 0;
    uint64_t byte_offset = layout == L_MISALIGNED ? 3 * t->esize : 0;
    t->alloc_len = 2 * SW_GUARD + misalign + (size_t)byte_offset + (size_t)t->span * t->esize;
    t->alloc = malloc(t->alloc_len);
    if (!t->alloc) return false;
    memset(t->alloc, SW_CANARY, t->alloc_len);
    t->base = t->alloc + SW_GUARD + misalign + byte_offset;
    t->dl.data = t->alloc + SW_GUARD + misalign;
    t->dl.byte_offset = byte_offset;
    t->dl.device.device_type = SCANFUSE_DL_CPU;
    t->dl.device.device_id = 0;
    t->dl.ndim = ndim;
    t->dl.dtype = scanfuse_dtype_to_dl(dt);
    t->dl.shape = t->shape;
    t->dl.strides = layout == L_CONTIG ? NULL : t->strides;
    return true;
}

static inline void tb_free(tbuf *t) {
    free(t->alloc);
    t->alloc = NULL;
}

/* Element offset (in elements from base) of the element with row-major index j. */
static inline int64_t tb_offset(const tbuf *t, int64_t j) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t n = t->shape[d];
        off += (j % n) * t->strides[d];
        j /= n;
    }
    return off;
}

static inline double tb_get_f(const tbuf *t, int64_t j) { return sf_load_f64(t->base, tb_offset(t, j), t->dt); }
static inline int64_t tb_get_i(const tbuf *t, int64_t j) { return sf_load_i64(t->base, tb_offset(t, j), t->dt); }

/* Checks that every byte of the allocation that is not an element byte still holds
 * the canary.  Returns the index (from alloc) of the first damaged byte, or -1. */
static inline long tb_find_damage(const tbuf *t) {
    unsigned char *mask = calloc(t->alloc_len ? t->alloc_len : 1, 1);
    if (!mask) return -1;
    size_t base = (size_t)(t->base - t->alloc);
    for (int64_t j = 0; j < t->numel; j++)
        memset(mask + base + (size_t)tb_offset(t, j) * t->esize, 1, t->esize);
    long bad = -1;
    for (size_t k = 0; k < t->alloc_len; k++)
        if (!mask[k] && t->alloc[k] != SW_CANARY) {
            bad = (long)k;
            break;
        }
    free(mask);
    return bad;
}

/* True when every byte of the allocation still holds the canary. */
static inline bool tb_untouched(const tbuf *t) {
    for (size_t k = 0; k < t->alloc_len; k++)
        if (t->alloc[k] != SW_CANARY) return false;
    return true;
}

/* Appends printf output to buf[*n..len), never overflowing. */
static inline void sw_app(char *buf, size_t len, size_t *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static inline void sw_app(char *buf, size_t len, size_t *n, const char *fmt, ...) {
    if (*n >= len) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *n, len - *n, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    *n += (size_t)k;
    if (*n >= len) *n = len - 1;
}

/* "[3, 33]" */
static inline void sw_shape_str(char *buf, size_t len, int ndim, const int64_t *shape) {
    size_t n = 0;
    buf[0] = '\0';
    sw_app(buf, len, &n, "[");
    for (int d = 0; d < ndim; d++) sw_app(buf, len, &n, "%s%lld", d ? ", " : "", (long long)shape[d]);
    sw_app(buf, len, &n, "]");
}

/* The text with newlines replaced by "; " (for one-line messages). */
static inline void sw_oneline(const char *text, char *out, size_t len) {
    size_t n = 0;
    out[0] = '\0';
    for (const char *p = text; *p && n + 3 < len; p++) {
        if (*p == '\n') {
            if (p[1]) {
                out[n++] = ';';
                out[n++] = ' ';
            }
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
}

#endif
