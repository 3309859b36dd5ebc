/*
 * util.c — allocation wrappers, growable strings, small checks and the assert hook.
 * Everything here is free of policy: callers decide what an error means.
 */
#include "sf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sf_assert_fail(const char *cond, const char *file, int line) {
    fprintf(stderr, "scanfuse: internal error: %s (%s:%d)\n", cond, file, line);
    abort();
}

void *sf_malloc(size_t n) { return malloc(n ? n : 1); }

void *sf_calloc(size_t n, size_t size) { return calloc(n ? n : 1, size ? size : 1); }

void *sf_realloc(void *p, size_t n) { return realloc(p, n ? n : 1); }

char *sf_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void scanfuse_free(void *p) { free(p); }

bool sf_mul_overflow(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0) return true;
    if (a != 0 && b > INT64_MAX / a) return true;
    *out = a * b;
    return false;
}

bool sf_is_identifier(const char *s) {
    if (!s || !*s) return false;
    if (!(isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
    for (const char *p = s + 1; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_')) return false;
    return true;
}

void sf_msg(char *msg, size_t msglen, const char *fmt, ...) {
    if (!msg || msglen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msglen, fmt, ap);
    va_end(ap);
}

int64_t sf_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

int64_t sf_value_numel(const sf_value *v) { return sf_numel(v->ndim, v->shape); }

void sf_view_contiguous(sf_view *v, void *data, scanfuse_dtype dt, int ndim,
                        const int64_t *shape) {
    v->data = data;
    v->dtype = dt;
    v->ndim = ndim;
    int64_t stride = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        v->shape[i] = shape[i];
        v->strides[i] = stride;
        stride *= shape[i] > 0 ? shape[i] : 1;
    }
}

/* ---- growable strings ---- */

static bool buf_reserve(sf_buf *b, size_t extra) {
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
        b->oom = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

void sf_buf_printf(sf_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !buf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sf_buf_puts(sf_buf *b, const char *s) {
    size_t n = strlen(s);
    if (!buf_reserve(b, n)) return;
    memcpy(b->data + b->len, s, n + 1);
    b->len += n;
}

char *sf_buf_take(sf_buf *b) {
    if (b->oom) {
        free(b->data);
        b->data = NULL;
        return NULL;
    }
    if (!b->data && !buf_reserve(b, 0)) return NULL;
    char *s = b->data;
    s[b->len] = '\0';
    b->data = NULL;
    b->len = b->cap = 0;
    return s;
}
