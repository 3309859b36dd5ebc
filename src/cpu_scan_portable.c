/*
 * cpu_scan_portable.c — the scan kernels in portable C: the vector layer of
 * cpu_scan_body.h as small fixed-size arrays whose loops compilers vectorize with
 * whatever the target has.  Used on CPUs without AVX2 and on non-x86 machines, and
 * the reference the SIMD variants must match bit for bit.
 *
 * Every float operation is written out in the order cpu_scan_kern.h defines (the
 * Sklansky network of vd_prefix, lane-wise adds elsewhere); integer sums wrap through
 * uint64 so no signed overflow is undefined behaviour.
 */
#include "cpu_scan_kern.h"

#include <math.h>
#include <string.h>

#define SF_ISA(name) sf_scan_portable_##name
#define SF_ISA_NAME "portable"
#define SF_ALIGN64 _Alignas(64)
/* Every vector-layer function is forced inline: passing vector structs through a call
 * would spill them to memory in the innermost loops. */
#define SF_AI static inline __attribute__((always_inline))
#define SF_NOINLINE static __attribute__((noinline))
#define VK_W 8
#define VC_W 4

typedef struct vd {
    double v[8];
} vd;
typedef double vb;
typedef struct vq {
    int64_t v[8];
} vq;
typedef int64_t qb;
typedef struct vk {
    int32_t v[VK_W];
} vk;
typedef struct vc {
    double v[VC_W];
} vc;

/* ---- broadcast doubles ---- */
SF_AI vb vb_set(double d) { return d; }
SF_AI vb vb_add(vb a, vb b) { return a + b; }
SF_AI vb vb_sub(vb a, vb b) { return a - b; }
SF_AI vb vb_finite_or_zero(vb t, vb e) { return isfinite(t) ? e : 0.0; }
SF_AI double vb_get(vb a) { return a; }

/* ---- 8 doubles ---- */
SF_AI vd vd_add(vd a, vd b) {
    for (int k = 0; k < 8; k++) a.v[k] = a.v[k] + b.v[k];
    return a;
}
SF_AI vd vd_addb(vd a, vb b) {
    for (int k = 0; k < 8; k++) a.v[k] = a.v[k] + b;
    return a;
}
/* The in-vector prefix of cpu_scan_kern.h (levels L1, L2, L3). */
SF_AI vd vd_prefix(vd x) {
    double *y = x.v;
    y[1] = y[1] + y[0];
    y[3] = y[3] + y[2];
    y[5] = y[5] + y[4];
    y[7] = y[7] + y[6];
    y[2] = y[2] + y[1];
    y[3] = y[3] + y[1];
    y[6] = y[6] + y[5];
    y[7] = y[7] + y[5];
    y[4] = y[4] + y[3];
    y[5] = y[5] + y[3];
    y[6] = y[6] + y[3];
    y[7] = y[7] + y[3];
    return x;
}
SF_AI vb vd_last(vd y) { return y.v[7]; }
SF_AI vb vd_total(vd x) { return vd_last(vd_prefix(x)); }
SF_AI vd vd_rev(vd x) {
    vd r;
    for (int k = 0; k < 8; k++) r.v[k] = x.v[7 - k];
    return r;
}
SF_AI vd vd_load_lanes(const double *l) {
    vd r;
    memcpy(r.v, l, sizeof r.v);
    return r;
}
SF_AI void vd_store_lanes(double *l, vd v) { memcpy(l, v.v, sizeof v.v); }

/* Element k of a buffer of float dtype dt, as a double (exact), and the rounding
 * store of the scalar helpers. */
SF_AI double ld_f(const void *p, int k, scanfuse_dtype dt) {
    const char *c = (const char *)p;
    switch (dt) {
    case SCANFUSE_FLOAT16: { uint16_t h; memcpy(&h, c + 2 * k, 2); return sf_cpu_f16_to_f64(h); }
    case SCANFUSE_BFLOAT16: { uint16_t h; memcpy(&h, c + 2 * k, 2); return sf_cpu_bf16_to_f64(h); }
    case SCANFUSE_FLOAT32: { float f; memcpy(&f, c + 4 * k, 4); return f; }
    default: { double d; memcpy(&d, c + 8 * k, 8); return d; }
    }
}
SF_AI void st_f(void *p, int k, scanfuse_dtype dt, double d) {
    char *c = (char *)p;
    switch (dt) {
    case SCANFUSE_FLOAT16: { uint16_t h = sf_cpu_f64_to_f16(d); memcpy(c + 2 * k, &h, 2); return; }
    case SCANFUSE_BFLOAT16: { uint16_t h = sf_cpu_f64_to_bf16(d); memcpy(c + 2 * k, &h, 2); return; }
    case SCANFUSE_FLOAT32: { float f = (float)d; memcpy(c + 4 * k, &f, 4); return; }
    default: memcpy(c + 8 * k, &d, 8); return;
    }
}

SF_AI vd vd_load(const void *p, scanfuse_dtype dt) {
    vd r;
    for (int k = 0; k < 8; k++) r.v[k] = ld_f(p, k, dt);
    return r;
}

SF_AI void vd_store(void *p, vd v, scanfuse_dtype dt, bool nt) {
    (void)nt;
    for (int k = 0; k < 8; k++) st_f(p, k, dt, v.v[k]);
}


/* ---- column vectors: VC_W doubles, lane-wise only ---- */
SF_AI vc vc_set(double d) {
    vc r;
    for (int k = 0; k < VC_W; k++) r.v[k] = d;
    return r;
}
SF_AI vc vc_add(vc a, vc b) {
    for (int k = 0; k < VC_W; k++) a.v[k] = a.v[k] + b.v[k];
    return a;
}
SF_AI vc vc_sub(vc a, vc b) {
    for (int k = 0; k < VC_W; k++) a.v[k] = a.v[k] - b.v[k];
    return a;
}
SF_AI vc vc_finite_or_zero(vc t, vc e) {
    for (int k = 0; k < VC_W; k++) e.v[k] = isfinite(t.v[k]) ? e.v[k] : 0.0;
    return e;
}
SF_AI vc vc_load_lanes(const double *l) {
    vc r;
    memcpy(r.v, l, sizeof r.v);
    return r;
}
SF_AI void vc_store_lanes(double *l, vc v) { memcpy(l, v.v, sizeof v.v); }
SF_AI vc vc_load(const void *p, scanfuse_dtype dt) {
    vc r;
    for (int k = 0; k < VC_W; k++) r.v[k] = ld_f(p, k, dt);
    return r;
}
SF_AI void vc_store(void *p, vc v, scanfuse_dtype dt, bool nt) {
    (void)nt;
    for (int k = 0; k < VC_W; k++) st_f(p, k, dt, v.v[k]);
}

/* ---- 8 int64 (wrapping) ---- */
SF_AI int64_t wadd(int64_t a, int64_t b) { return sf_cpu_add_i64(a, b); }
SF_AI qb qb_set(int64_t v) { return v; }
SF_AI qb qb_add(qb a, qb b) { return wadd(a, b); }
SF_AI int64_t qb_get(qb a) { return a; }
SF_AI vq vq_set(int64_t v) {
    vq r;
    for (int k = 0; k < 8; k++) r.v[k] = v;
    return r;
}
SF_AI vq vq_add(vq a, vq b) {
    for (int k = 0; k < 8; k++) a.v[k] = wadd(a.v[k], b.v[k]);
    return a;
}
SF_AI vq vq_addb(vq a, qb b) {
    for (int k = 0; k < 8; k++) a.v[k] = wadd(a.v[k], b);
    return a;
}
SF_AI vq vq_prefix(vq x) {
    for (int k = 1; k < 8; k++) x.v[k] = wadd(x.v[k], x.v[k - 1]);
    return x;
}
SF_AI qb vq_last(vq y) { return y.v[7]; }
SF_AI qb vq_sum(vq x) { return vq_last(vq_prefix(x)); }
SF_AI vq vq_rev(vq x) {
    vq r;
    for (int k = 0; k < 8; k++) r.v[k] = x.v[7 - k];
    return r;
}
SF_AI vq vq_load_lanes(const int64_t *l) {
    vq r;
    memcpy(r.v, l, sizeof r.v);
    return r;
}
SF_AI void vq_store_lanes(int64_t *l, vq v) { memcpy(l, v.v, sizeof v.v); }
SF_AI vq vq_load(const void *p, scanfuse_dtype dt) {
    vq r;
    const char *c = (const char *)p;
    for (int k = 0; k < 8; k++) {
        switch (dt) {
        case SCANFUSE_BOOL: r.v[k] = c[k] != 0; break;
        case SCANFUSE_UINT8: r.v[k] = (uint8_t)c[k]; break;
        case SCANFUSE_INT8: r.v[k] = (int8_t)c[k]; break;
        case SCANFUSE_INT16: { int16_t h; memcpy(&h, c + 2 * k, 2); r.v[k] = h; break; }
        case SCANFUSE_INT32: { int32_t w; memcpy(&w, c + 4 * k, 4); r.v[k] = w; break; }
        default: memcpy(&r.v[k], c + 8 * k, 8); break;
        }
    }
    return r;
}
SF_AI void vq_store(void *p, vq v, scanfuse_dtype dt, bool nt) {
    char *c = (char *)p;
    (void)nt;
    for (int k = 0; k < 8; k++) {
        uint64_t u = (uint64_t)v.v[k];
        switch (dt) {
        case SCANFUSE_UINT8: case SCANFUSE_INT8: { uint8_t b = (uint8_t)u; memcpy(c + k, &b, 1); break; }
        case SCANFUSE_INT16: { uint16_t h = (uint16_t)u; memcpy(c + 2 * k, &h, 2); break; }
        case SCANFUSE_INT32: { uint32_t w = (uint32_t)u; memcpy(c + 4 * k, &w, 4); break; }
        default: memcpy(c + 8 * k, &u, 8); break;
        }
    }
}

/* ---- VK_W int32 keys ---- */
SF_AI vk vk_set(int32_t v) {
    vk r;
    for (int k = 0; k < VK_W; k++) r.v[k] = v;
    return r;
}
SF_AI vk vk_iota(void) {
    vk r;
    for (int k = 0; k < VK_W; k++) r.v[k] = k;
    return r;
}
SF_AI vk vk_add(vk a, vk b) {
    for (int k = 0; k < VK_W; k++) a.v[k] = (int32_t)((uint32_t)a.v[k] + (uint32_t)b.v[k]);
    return a;
}
SF_AI vk vk_max(vk a, vk b) {
    for (int k = 0; k < VK_W; k++) a.v[k] = a.v[k] > b.v[k] ? a.v[k] : b.v[k];
    return a;
}
SF_AI vk vk_prefix_max(vk x) {
    for (int k = 1; k < VK_W; k++) x.v[k] = x.v[k] > x.v[k - 1] ? x.v[k] : x.v[k - 1];
    return x;
}
SF_AI vk vk_bcast_last(vk x) { return vk_set(x.v[VK_W - 1]); }
SF_AI vk vk_shift_in(vk v, vk prev) {
    vk r;
    r.v[0] = prev.v[VK_W - 1];
    for (int k = 1; k < VK_W; k++) r.v[k] = v.v[k - 1];
    return r;
}
SF_AI vk vk_select_ge(vk a, vk b, vk t, vk f) {
    for (int k = 0; k < VK_W; k++) t.v[k] = a.v[k] >= b.v[k] ? t.v[k] : f.v[k];
    return t;
}
SF_AI vk vk_select_gt(vk a, vk b, vk t, vk f) {
    for (int k = 0; k < VK_W; k++) t.v[k] = a.v[k] > b.v[k] ? t.v[k] : f.v[k];
    return t;
}
SF_AI unsigned vk_special(vk m, int32_t zkey) {
    unsigned r = 0;
    for (int k = 0; k < VK_W; k++) r |= (unsigned)(m.v[k] == zkey || m.v[k] == INT32_MAX) << k;
    return r;
}
SF_AI vk vk_rev(vk x) {
    vk r;
    for (int k = 0; k < VK_W; k++) r.v[k] = x.v[VK_W - 1 - k];
    return r;
}
SF_AI vk vk_load_lanes(const int32_t *l) {
    vk r;
    memcpy(r.v, l, sizeof r.v);
    return r;
}
SF_AI void vk_store_lanes(int32_t *l, vk v) { memcpy(l, v.v, sizeof v.v); }

SF_AI vk vk_load_key(const void *p, scanfuse_dtype dt, bool is_min) {
    vk r;
    const char *c = (const char *)p;
    for (int k = 0; k < VK_W; k++) {
        uint32_t b;
        switch (dt) {
        case SCANFUSE_FLOAT32: memcpy(&b, c + 4 * k, 4); r.v[k] = sf_key_f32bits(b, is_min); break;
        case SCANFUSE_FLOAT16: {
            uint16_t h;
            memcpy(&h, c + 2 * k, 2);
            float f = (float)sf_cpu_f16_to_f64(h);
            memcpy(&b, &f, 4);
            r.v[k] = sf_key_f32bits(b, is_min);
            break;
        }
        case SCANFUSE_BFLOAT16: {
            uint16_t h;
            memcpy(&h, c + 2 * k, 2);
            r.v[k] = sf_key_f32bits((uint32_t)h << 16, is_min);
            break;
        }
        default: {
            int32_t v;
            switch (dt) {
            case SCANFUSE_BOOL: v = c[k] != 0; break;
            case SCANFUSE_UINT8: v = (uint8_t)c[k]; break;
            case SCANFUSE_INT8: v = (int8_t)c[k]; break;
            case SCANFUSE_INT16: { int16_t h; memcpy(&h, c + 2 * k, 2); v = h; break; }
            default: memcpy(&v, c + 4 * k, 4); break;
            }
            r.v[k] = is_min ? ~v : v;
            break;
        }
        }
    }
    return r;
}

SF_AI void vk_store_val(void *p, vk keys, scanfuse_dtype dt, bool is_min, bool nt) {
    char *c = (char *)p;
    (void)nt;
    for (int k = 0; k < VK_W; k++) {
        int32_t key = keys.v[k];
        switch (dt) {
        case SCANFUSE_FLOAT32: { uint32_t b = sf_key_to_f32bits(key, is_min); memcpy(c + 4 * k, &b, 4); break; }
        case SCANFUSE_FLOAT16: {
            uint32_t b = sf_key_to_f32bits(key, is_min);
            float f;
            memcpy(&f, &b, 4);
            uint16_t h = sf_cpu_f64_to_f16(f);
            memcpy(c + 2 * k, &h, 2);
            break;
        }
        case SCANFUSE_BFLOAT16: {
            uint16_t h = (uint16_t)(sf_key_to_f32bits(key, is_min) >> 16);
            memcpy(c + 2 * k, &h, 2);
            break;
        }
        default: {
            int32_t v = is_min ? ~key : key;
            uint32_t u = (uint32_t)v;
            if (dt == SCANFUSE_INT32) memcpy(c + 4 * k, &u, 4);
            else if (dt == SCANFUSE_INT16) { uint16_t h = (uint16_t)u; memcpy(c + 2 * k, &h, 2); }
            else { uint8_t b = (uint8_t)u; memcpy(c + k, &b, 1); }
            break;
        }
        }
    }
}

SF_AI void vk_store_idx(int64_t *p, vk rel, int64_t base, int64_t dir, int64_t carry,
                                bool nt) {
    (void)nt;
    for (int k = 0; k < VK_W; k++) {
        int64_t v = rel.v[k] < 0 ? carry : base + dir * rel.v[k];
        memcpy(p + k, &v, 8);
    }
}

#include "cpu_scan_body.h"
