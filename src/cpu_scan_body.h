/*
 * cpu_scan_body.h — the scan kernels of cpu_scan_kern.h, written once over a small
 * vector layer and included by each ISA file (cpu_scan_avx512.c, cpu_scan_avx2.c,
 * cpu_scan_portable.c), which defines before including it:
 *   SF_ISA(name)   the ISA's name for a kernel (sf_scan_avx2_name, ...)
 *   SF_ISA_NAME    "avx512", "avx2" or "portable"
 *   SF_AI, SF_NOINLINE   forced-inline and out-of-line function prefixes
 *   VK_W, VC_W     lanes of the int32 key vector (16, 8, 8) and of the column vector
 *                  (8, 4, 4)
 *   the types vd (8 doubles), vb (a double broadcast to every lane), vq (8 int64),
 *   qb (an int64 broadcast), vk (VK_W int32), vc (VC_W doubles) and the operations
 *   used below.  Hot paths are forced inline; partial vectors (row ends, the identity
 *   of an exclusive scan) take out-of-line element-wise paths.
 *
 * Every float operation here is one IEEE double operation of the definition in
 * cpu_scan_kern.h, in the same order on every ISA, so all ISAs give the same bits.
 * Element conversions of partial vectors (row ends, the identity lane of an exclusive
 * scan) go through the scalar helpers of cpu.h, which the vector conversions match
 * bit for bit (tests/test_scan_threads.c checks that exhaustively).
 *
 * The impl functions take their dtypes and direction as arguments and are always
 * inlined: the table entries call them with constants for the common combinations, so
 * each of those gets a loop without dtype branches, and with run-time values for the
 * rest (one predictable branch per vector).
 */

/* ------------------------------------------------------------------------------ */
/* Scalar element access (partial vectors)                                          */
/* ------------------------------------------------------------------------------ */

static inline double SF_ISA(sc_ld_f)(const void *base, int64_t e, scanfuse_dtype dt) {
    const char *p = (const char *)base;
    switch (dt) {
    case SCANFUSE_FLOAT16: { uint16_t h; memcpy(&h, p + e * 2, 2); return sf_cpu_f16_to_f64(h); }
    case SCANFUSE_BFLOAT16: { uint16_t h; memcpy(&h, p + e * 2, 2); return sf_cpu_bf16_to_f64(h); }
    case SCANFUSE_FLOAT32: { float f; memcpy(&f, p + e * 4, 4); return f; }
    default: { double d; memcpy(&d, p + e * 8, 8); return d; }
    }
}

static inline void SF_ISA(sc_st_f)(void *base, int64_t e, scanfuse_dtype dt, double v) {
    char *p = (char *)base;
    switch (dt) {
    case SCANFUSE_FLOAT16: { uint16_t h = sf_cpu_f64_to_f16(v); memcpy(p + e * 2, &h, 2); return; }
    case SCANFUSE_BFLOAT16: { uint16_t h = sf_cpu_f64_to_bf16(v); memcpy(p + e * 2, &h, 2); return; }
    case SCANFUSE_FLOAT32: { float f = (float)v; memcpy(p + e * 4, &f, 4); return; }
    default: memcpy(p + e * 8, &v, 8); return;
    }
}

static inline int64_t SF_ISA(sc_ld_i)(const void *base, int64_t e, scanfuse_dtype dt) {
    const char *p = (const char *)base;
    switch (dt) {
    case SCANFUSE_BOOL: return p[e] != 0;
    case SCANFUSE_UINT8: return (uint8_t)p[e];
    case SCANFUSE_INT8: return (int8_t)p[e];
    case SCANFUSE_INT16: { int16_t v; memcpy(&v, p + e * 2, 2); return v; }
    case SCANFUSE_INT32: { int32_t v; memcpy(&v, p + e * 4, 4); return v; }
    default: { int64_t v; memcpy(&v, p + e * 8, 8); return v; }
    }
}

static inline void SF_ISA(sc_st_i)(void *base, int64_t e, scanfuse_dtype dt, int64_t v) {
    char *p = (char *)base;
    uint64_t u = (uint64_t)v;
    switch (dt) {
    case SCANFUSE_UINT8: case SCANFUSE_INT8: { uint8_t b = (uint8_t)u; memcpy(p + e, &b, 1); return; }
    case SCANFUSE_INT16: { uint16_t h = (uint16_t)u; memcpy(p + e * 2, &h, 2); return; }
    case SCANFUSE_INT32: { uint32_t w = (uint32_t)u; memcpy(p + e * 4, &w, 4); return; }
    default: memcpy(p + e * 8, &u, 8); return;
    }
}

/* The raw bits of element e (cummax values: the output dtype is the input's). */
static inline uint64_t SF_ISA(sc_bits)(const void *base, int64_t e, scanfuse_dtype dt) {
    int64_t es = sf_scan_es(dt);
    uint64_t b = 0;
    memcpy(&b, (const char *)base + e * es, (size_t)es); /* little-endian low bytes */
    return b;
}

/* The key of element e, and of the identity of an exclusive scan. */
static inline int32_t SF_ISA(sc_key)(const void *base, int64_t e, scanfuse_dtype dt, bool is_min) {
    const char *p = (const char *)base;
    switch (dt) {
    case SCANFUSE_FLOAT32: { uint32_t b; memcpy(&b, p + e * 4, 4); return sf_key_f32bits(b, is_min); }
    case SCANFUSE_FLOAT16: {
        uint16_t h; memcpy(&h, p + e * 2, 2);
        float f = (float)sf_cpu_f16_to_f64(h); /* exact, NaN stays NaN */
        uint32_t b; memcpy(&b, &f, 4);
        return sf_key_f32bits(b, is_min);
    }
    case SCANFUSE_BFLOAT16: { uint16_t h; memcpy(&h, p + e * 2, 2); return sf_key_f32bits((uint32_t)h << 16, is_min); }
    default: {
        int32_t v = (int32_t)SF_ISA(sc_ld_i)(base, e, dt);
        return is_min ? ~v : v;
    }
    }
}

static inline int32_t SF_ISA(identity_key)(scanfuse_dtype dt, bool is_min) {
    /* -inf for cummax, +inf for cummin: the least key of its order */
    if (sf_dtype_is_float(dt)) return sf_key_f32bits(is_min ? 0x7F800000u : 0xFF800000u, is_min);
    return is_min ? ~(int32_t)sf_int_max(dt) : (int32_t)sf_int_min(dt);
}

static inline uint64_t SF_ISA(identity_bits)(scanfuse_dtype dt, bool is_min) {
    switch (dt) {
    case SCANFUSE_FLOAT32: return is_min ? 0x7F800000u : 0xFF800000u;
    case SCANFUSE_FLOAT16: return is_min ? 0x7C00u : 0xFC00u;
    case SCANFUSE_BFLOAT16: return is_min ? 0x7F80u : 0xFF80u;
    default: return (uint64_t)(is_min ? sf_int_max(dt) : sf_int_min(dt));
    }
}

static inline int64_t SF_ISA(min64)(int64_t a, int64_t b) { return a < b ? a : b; }

/* A NaN value of cummax/cummin as the generic path (cpu_scan.c) stores it, which goes
 * through double: float32 quiet (payload kept), float16 and bfloat16 the canonical NaN
 * of the scalar helpers.  So every path gives the same bytes. */
static inline uint64_t SF_ISA(nan_as_generic)(uint64_t bits, scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_FLOAT32: return (bits & 0x7FFFFFFFu) > 0x7F800000u ? bits | 0x400000u : bits;
    case SCANFUSE_FLOAT16: return (bits & 0x7FFFu) > 0x7C00u ? (bits & 0x8000u) | 0x7E00u : bits;
    case SCANFUSE_BFLOAT16: return (bits & 0x7FFFu) > 0x7F80u ? (bits & 0x8000u) | 0x7FC0u : bits;
    default: return bits;
    }
}

/* ------------------------------------------------------------------------------ */
/* Float cumsum along a row                                                          */
/* ------------------------------------------------------------------------------ */

/* Logical [i, i+8) as doubles; full: every lane is a real element (lo <= i, i+8 <= e).
 * The partial case (row ends, an exclusive scan's identity) is out of line. */
SF_NOINLINE vd SF_ISA(fs_ld_part)(const sf_seq *s, int64_t i, int64_t e, scanfuse_dtype xdt) {
    double l[8];
    for (int k = 0; k < 8; k++) {
        int64_t q = i + k;
        if (q < s->lo) l[k] = 0.0;         /* the identity of an exclusive scan */
        else if (q >= e) l[k] = -0.0;      /* past the end: the exact additive identity */
        else l[k] = SF_ISA(sc_ld_f)(s->x, s->x0 + s->xs * q, xdt);
    }
    return vd_load_lanes(l);
}

SF_AI vd SF_ISA(fs_ld)(const sf_seq *s, int64_t i, int64_t e, bool full, scanfuse_dtype xdt,
                       bool rev) {
    if (!full) return SF_ISA(fs_ld_part)(s, i, e, xdt);
    int64_t es = sf_scan_es(xdt);
    if (!rev) return vd_load((const char *)s->x + (s->x0 + i) * es, xdt);
    return vd_rev(vd_load((const char *)s->x + (s->x0 - i - 7) * es, xdt));
}

SF_NOINLINE void SF_ISA(fs_st_part)(const sf_seq *s, int64_t i, int64_t e, vd v, scanfuse_dtype ydt) {
    double l[8];
    vd_store_lanes(l, v);
    for (int k = 0; k < 8 && i + k < e; k++) SF_ISA(sc_st_f)(s->y, s->y0 + s->ys * (i + k), ydt, l[k]);
}

SF_AI void SF_ISA(fs_st)(const sf_seq *s, int64_t i, int64_t e, bool full, vd v,
                         scanfuse_dtype ydt, bool rev) {
    if (!full) {
        SF_ISA(fs_st_part)(s, i, e, v, ydt);
        return;
    }
    int64_t es = sf_scan_es(ydt);
    if (!rev) vd_store((char *)s->y + (s->y0 + i) * es, v, ydt, s->nt);
    else vd_store((char *)s->y + (s->y0 - i - 7) * es, vd_rev(v), ydt, s->nt);
}

/* One block at a time, software-pipelined: first the 8 in-vector prefixes and the
 * running block total T (independent of everything before the block), then the
 * TwoSum of the block total into L, and only then the outputs, whose carry Cs was
 * computed from L one block earlier, so the adds of the carry chain are never on the
 * path of the block's own outputs (10 % on Zen 4). */
SF_AI void
SF_ISA(fsum_impl)(const sf_seq *s, int64_t a, int64_t b, double cs, sf_dd *L, bool store,
                  scanfuse_dtype xdt, scanfuse_dtype ydt, bool rev) {
    vb lh = vb_set(L->hi), ll = vb_set(L->lo), vcs = vb_set(cs);
    const vb nz = vb_set(-0.0);
    const bool yv = s->ys == 1 || s->ys == -1; /* vector stores */
    for (int64_t blk = a; blk < b; blk += SF_SCAN_BLOCK) {
        int64_t e = SF_ISA(min64)(blk + SF_SCAN_BLOCK, b);
        bool full = blk >= s->lo && e - blk == SF_SCAN_BLOCK;
        vb T = nz;
        if (store) {
            vb Cs = vb_add(vb_add(lh, ll), vcs);
            vd y[8];
            vb tk[8];
            int nv = 0;
            for (int64_t i = blk; i < e; i += 8, nv++) {
                bool f = full || (i >= s->lo && i + 8 <= e);
                y[nv] = vd_prefix(SF_ISA(fs_ld)(s, i, e, f, xdt, rev));
                tk[nv] = T;
                T = vb_add(T, vd_last(y[nv]));
            }
            vb t = vb_add(lh, T); /* sf_dd_acc(L, T), lane-wise */
            vb bp = vb_sub(t, lh);
            vb err = vb_add(vb_sub(lh, vb_sub(t, bp)), vb_sub(T, bp));
            ll = vb_add(ll, vb_finite_or_zero(t, err));
            lh = t;
            for (int k = 0; k < nv; k++) {
                int64_t i = blk + 8 * k;
                SF_ISA(fs_st)(s, i, e, yv && i + 8 <= e, vd_addb(y[k], vb_add(tk[k], Cs)), ydt, rev);
            }
        } else {
            if (xdt == SCANFUSE_FLOAT16 && full) {
                /* float16: every partial sum of a block is exact in double (64 multiples
                 * of 2^-24 below 2^16 sum to less than 2^22), so the block total T of the
                 * definition is the exact sum in any order (the sign of a zero sum too:
                 * -0.0 only if every term is): lane-wise first, then across the lanes,
                 * and in memory order even for a reverse scan */
                const char *p = (const char *)s->x +
                                (rev ? s->x0 - blk - (SF_SCAN_BLOCK - 1) : s->x0 + blk) * 2;
                vd acc = vd_load(p, SCANFUSE_FLOAT16);
                for (int k = 1; k < SF_SCAN_BLOCK / 8; k++)
                    acc = vd_add(acc, vd_load(p + 16 * k, SCANFUSE_FLOAT16));
                T = vd_total(acc);
            } else {
                for (int64_t i = blk; i < e; i += 8) {
                    bool f = full || (i >= s->lo && i + 8 <= e);
                    T = vb_add(T, vd_total(SF_ISA(fs_ld)(s, i, e, f, xdt, rev)));
                }
            }
            vb t = vb_add(lh, T);
            vb bp = vb_sub(t, lh);
            vb err = vb_add(vb_sub(lh, vb_sub(t, bp)), vb_sub(T, bp));
            ll = vb_add(ll, vb_finite_or_zero(t, err));
            lh = t;
        }
    }
    L->hi = vb_get(lh);
    L->lo = vb_get(ll);
}

#define FS_CASE(X, Y)                                                                  \
    if (xdt == X && ydt == Y) {                                                        \
        if (rev) SF_ISA(fsum_impl)(s, a, b, cs, L, true, X, Y, true);                  \
        else SF_ISA(fsum_impl)(s, a, b, cs, L, true, X, Y, false);                     \
        return;                                                                        \
    }

static void SF_ISA(fsum_scan)(const sf_seq *s, int64_t a, int64_t b, double cs, sf_dd *L) {
    scanfuse_dtype xdt = s->xdt, ydt = s->ydt;
    bool rev = s->xs < 0;
    FS_CASE(SCANFUSE_FLOAT32, SCANFUSE_FLOAT32)
    FS_CASE(SCANFUSE_FLOAT64, SCANFUSE_FLOAT64)
    FS_CASE(SCANFUSE_FLOAT16, SCANFUSE_FLOAT16)
    FS_CASE(SCANFUSE_BFLOAT16, SCANFUSE_BFLOAT16)
    FS_CASE(SCANFUSE_FLOAT32, SCANFUSE_FLOAT64)
    FS_CASE(SCANFUSE_FLOAT16, SCANFUSE_FLOAT32)
    FS_CASE(SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32)
    FS_CASE(SCANFUSE_FLOAT16, SCANFUSE_FLOAT64)
    FS_CASE(SCANFUSE_BFLOAT16, SCANFUSE_FLOAT64)
    SF_ASSERT(!"fsum_scan: unsupported dtypes");
}
#undef FS_CASE

#define FW_CASE(X, Y)                                                                  \
    if (xdt == X && ydt == Y) {                                                        \
        for (int64_t r = 0; r < nrows; r++) {                                          \
            t.x0 = s->x0 + r * xr;                                                     \
            t.y0 = s->y0 + r * yr;                                                     \
            sf_dd L = {-0.0, -0.0};                                                    \
            if (rev) SF_ISA(fsum_impl)(&t, 0, s->len, -0.0, &L, true, X, Y, true);     \
            else SF_ISA(fsum_impl)(&t, 0, s->len, -0.0, &L, true, X, Y, false);        \
        }                                                                              \
        return;                                                                        \
    }

static void SF_ISA(fsum_rows)(const sf_seq *s, int64_t nrows, int64_t xr, int64_t yr) {
    scanfuse_dtype xdt = s->xdt, ydt = s->ydt;
    bool rev = s->xs < 0;
    sf_seq t = *s;
    SF_ASSERT(s->len <= SF_SCAN_PART);
#ifdef SF_SCAN_ROWS8
    /* float32 rows 8 at a time where the ISA has that kernel and the data is in cache
     * (whole vectors only: no identity lane, no partial vector; unit element strides) */
    if (s->cached && xdt == SCANFUSE_FLOAT32 && ydt == SCANFUSE_FLOAT32 && s->lo == 0 && s->len % 8 == 0 &&
        (s->xs == 1 || s->xs == -1) && s->ys == s->xs && nrows >= 8) {
        int64_t r8 = nrows / 8 * 8;
        for (int64_t r = 0; r < r8; r += 8)
            rows8_f32((const float *)s->x + s->x0 + r * xr, xr, (float *)s->y + s->y0 + r * yr, yr, s->len, rev);
        if (r8 == nrows) return;
        t.x0 += r8 * xr; /* the last nrows % 8 rows: below */
        t.y0 += r8 * yr;
        SF_ISA(fsum_rows)(&t, nrows - r8, xr, yr);
        return;
    }
#endif
    FW_CASE(SCANFUSE_FLOAT32, SCANFUSE_FLOAT32)
    FW_CASE(SCANFUSE_FLOAT64, SCANFUSE_FLOAT64)
    FW_CASE(SCANFUSE_FLOAT16, SCANFUSE_FLOAT16)
    FW_CASE(SCANFUSE_BFLOAT16, SCANFUSE_BFLOAT16)
    for (int64_t r = 0; r < nrows; r++) {
        t.x0 = s->x0 + r * xr;
        t.y0 = s->y0 + r * yr;
        sf_dd L = {-0.0, -0.0};
        SF_ISA(fsum_scan)(&t, 0, s->len, -0.0, &L);
    }
}
#undef FW_CASE

#define FR_CASE(X)                                                                     \
    if (xdt == X) {                                                                    \
        if (rev) SF_ISA(fsum_impl)(s, a, b, 0.0, L, false, X, X, true);                \
        else SF_ISA(fsum_impl)(s, a, b, 0.0, L, false, X, X, false);                   \
        return;                                                                        \
    }

static void SF_ISA(fsum_reduce)(const sf_seq *s, int64_t a, int64_t b, sf_dd *L) {
    scanfuse_dtype xdt = s->xdt;
    bool rev = s->xs < 0;
    FR_CASE(SCANFUSE_FLOAT32)
    FR_CASE(SCANFUSE_FLOAT64)
    FR_CASE(SCANFUSE_FLOAT16)
    FR_CASE(SCANFUSE_BFLOAT16)
    SF_ASSERT(!"fsum_reduce: unsupported dtype");
}
#undef FR_CASE

/* ------------------------------------------------------------------------------ */
/* Integer cumsum along a row                                                        */
/* ------------------------------------------------------------------------------ */

SF_NOINLINE vq SF_ISA(is_ld_part)(const sf_seq *s, int64_t i, int64_t e, scanfuse_dtype xdt) {
    int64_t l[8];
    for (int k = 0; k < 8; k++) {
        int64_t q = i + k;
        l[k] = (q < s->lo || q >= e) ? 0 : SF_ISA(sc_ld_i)(s->x, s->x0 + s->xs * q, xdt);
    }
    return vq_load_lanes(l);
}

SF_AI vq SF_ISA(is_ld)(const sf_seq *s, int64_t i, int64_t e, bool full, scanfuse_dtype xdt,
                       bool rev) {
    if (!full) return SF_ISA(is_ld_part)(s, i, e, xdt);
    int64_t es = sf_scan_es(xdt);
    if (!rev) return vq_load((const char *)s->x + (s->x0 + i) * es, xdt);
    return vq_rev(vq_load((const char *)s->x + (s->x0 - i - 7) * es, xdt));
}

SF_AI void
SF_ISA(isum_impl)(const sf_seq *s, int64_t a, int64_t b, int64_t *carry, bool store,
                  scanfuse_dtype xdt, scanfuse_dtype ydt, bool rev) {
    if (!store) { /* exact: lane-wise sums, folded at the end */
        vq acc = vq_set(0);
        for (int64_t i = a; i < b; i += 8) {
            bool f = i >= s->lo && i + 8 <= b;
            acc = vq_add(acc, SF_ISA(is_ld)(s, i, b, f, xdt, rev));
        }
        *carry = (int64_t)((uint64_t)*carry + (uint64_t)qb_get(vq_sum(acc)));
        return;
    }
    qb C = qb_set(*carry);
    int64_t es = sf_scan_es(ydt);
    const bool yv = s->ys == 1 || s->ys == -1; /* vector stores */
    for (int64_t i = a; i < b; i += 8) {
        bool f = i >= s->lo && i + 8 <= b;
        vq y = vq_prefix(SF_ISA(is_ld)(s, i, b, f, xdt, rev));
        vq o = vq_addb(y, C);
        if (yv && i + 8 <= b) {
            if (!rev) vq_store((char *)s->y + (s->y0 + i) * es, o, ydt, s->nt);
            else vq_store((char *)s->y + (s->y0 - i - 7) * es, vq_rev(o), ydt, s->nt);
        } else {
            int64_t l[8];
            vq_store_lanes(l, o);
            for (int k = 0; k < 8 && i + k < b; k++) SF_ISA(sc_st_i)(s->y, s->y0 + s->ys * (i + k), ydt, l[k]);
        }
        C = qb_add(C, vq_last(y));
    }
    *carry = qb_get(C);
}

#define IS_CASE(X, Y)                                                                  \
    if (xdt == X && ydt == Y) {                                                        \
        if (rev) SF_ISA(isum_impl)(s, a, b, carry, store, X, Y, true);                 \
        else SF_ISA(isum_impl)(s, a, b, carry, store, X, Y, false);                    \
        return;                                                                        \
    }

SF_AI void
SF_ISA(isum_dispatch)(const sf_seq *s, int64_t a, int64_t b, int64_t *carry, bool store) {
    scanfuse_dtype xdt = s->xdt, ydt = s->ydt;
    bool rev = s->xs < 0;
    IS_CASE(SCANFUSE_INT64, SCANFUSE_INT64)
    IS_CASE(SCANFUSE_INT32, SCANFUSE_INT64)
    IS_CASE(SCANFUSE_BOOL, SCANFUSE_INT64)
    IS_CASE(SCANFUSE_INT32, SCANFUSE_INT32)
    IS_CASE(SCANFUSE_UINT8, SCANFUSE_INT64)
    if (rev) SF_ISA(isum_impl)(s, a, b, carry, store, xdt, ydt, true);
    else SF_ISA(isum_impl)(s, a, b, carry, store, xdt, ydt, false);
}
#undef IS_CASE

static void SF_ISA(isum_scan)(const sf_seq *s, int64_t a, int64_t b, int64_t *carry) {
    SF_ISA(isum_dispatch)(s, a, b, carry, true);
}

static void SF_ISA(isum_reduce)(const sf_seq *s, int64_t a, int64_t b, int64_t *carry) {
    SF_ISA(isum_dispatch)(s, a, b, carry, false);
}

/* ------------------------------------------------------------------------------ */
/* cummax / cummin along a row (32-bit keys)                                         */
/* ------------------------------------------------------------------------------ */

SF_NOINLINE vk SF_ISA(mx_ld_part)(const sf_seq *s, int64_t i, int64_t e, scanfuse_dtype xdt,
                                  bool is_min, int32_t ident) {
    int32_t l[VK_W];
    for (int k = 0; k < VK_W; k++) {
        int64_t q = i + k;
        if (q < s->lo) l[k] = ident;
        else if (q >= e) l[k] = INT32_MIN; /* after the last element: never read back */
        else l[k] = SF_ISA(sc_key)(s->x, s->x0 + s->xs * q, xdt, is_min);
    }
    return vk_load_lanes(l);
}

SF_AI vk SF_ISA(mx_ld)(const sf_seq *s, int64_t i, int64_t e, bool full, scanfuse_dtype xdt,
                       bool rev, bool is_min, int32_t ident) {
    if (!full) return SF_ISA(mx_ld_part)(s, i, e, xdt, is_min, ident);
    int64_t es = sf_scan_es(xdt);
    if (!rev) return vk_load_key((const char *)s->x + (s->x0 + i) * es, xdt, is_min);
    return vk_rev(vk_load_key((const char *)s->x + (s->x0 - i - (VK_W - 1)) * es, xdt, is_min));
}

SF_AI void
SF_ISA(max_impl)(const sf_seq *s, int64_t a, int64_t b, sf_maxc *c, bool store,
                 scanfuse_dtype xdt, bool rev) {
    const bool is_min = s->is_min, isf = sf_dtype_is_float(xdt);
    const int32_t ident = SF_ISA(identity_key)(xdt, is_min);
    const int32_t zkey = is_min ? -1 : 0; /* the key of +-0.0 */
    const int64_t es = sf_scan_es(xdt);
    vk M = vk_set(c->key), R = vk_set(-1);
    const vk iota = vk_iota(), none = vk_set(-1);
    for (int64_t i = a; i < b; i += VK_W) {
        bool f = i >= s->lo && i + VK_W <= b;
        vk k = SF_ISA(mx_ld)(s, i, b, f, xdt, rev, is_min, ident);
        vk mv = vk_max(vk_prefix_max(k), M);          /* the running max at each lane */
        vk mp = vk_shift_in(mv, M);                   /* ... before each lane */
        vk cand = vk_select_ge(k, mp, vk_add(iota, vk_set((int32_t)(i - a))), none);
        if (i + VK_W > b) /* lanes past the end never win (their key may tie) */
            cand = vk_select_gt(vk_set((int32_t)(b - i)), iota, cand, none);
        vk iv = vk_max(vk_prefix_max(cand), R);       /* its position (-1: the carry) */
        if (store) {
            int32_t kl[VK_W], il[VK_W];
            vk_store_lanes(kl, mv);
            vk_store_lanes(il, iv);
            unsigned special = isf ? vk_special(mv, zkey) : 0u;
            if (f && (s->ys == 1 || s->ys == -1)) {
                int64_t yo = rev ? s->y0 - i - (VK_W - 1) : s->y0 + i;
                vk vals = rev ? vk_rev(mv) : mv, idx = rev ? vk_rev(iv) : iv;
                vk_store_val((char *)s->y + yo * es, vals, xdt, is_min, s->nt);
                vk_store_idx((int64_t *)s->yi + yo, idx, s->ix0 + s->ixs * a, s->ixs, c->idx,
                             s->nt);
            } else {
                for (int k2 = 0; k2 < VK_W && i + k2 < b; k2++) {
                    int64_t yo = s->y0 + s->ys * (i + k2);
                    uint64_t bits;
                    if (xdt == SCANFUSE_FLOAT32) bits = sf_key_to_f32bits(kl[k2], is_min);
                    else if (xdt == SCANFUSE_FLOAT16) {
                        uint32_t fb = sf_key_to_f32bits(kl[k2], is_min);
                        float fv;
                        memcpy(&fv, &fb, 4);
                        bits = sf_cpu_f64_to_f16(fv);
                    } else if (xdt == SCANFUSE_BFLOAT16) bits = sf_key_to_f32bits(kl[k2], is_min) >> 16;
                    else bits = (uint64_t)(int64_t)(is_min ? ~kl[k2] : kl[k2]);
                    memcpy((char *)s->y + yo * es, &bits, (size_t)es);
                    int64_t ix = il[k2] < 0 ? c->idx : s->ix0 + s->ixs * (a + il[k2]);
                    memcpy((int64_t *)s->yi + yo, &ix, 8);
                }
            }
            /* zero and NaN keys: the winner's own bits (sign of zero, NaN payload) */
            for (int k2 = 0; special && k2 < VK_W; k2++, special >>= 1) {
                if (!(special & 1u) || i + k2 >= b) continue;
                int64_t yo = s->y0 + s->ys * (i + k2), w = il[k2];
                uint64_t bits = w < 0 ? c->vbits
                                      : SF_ISA(sc_bits)(s->x, s->x0 + s->xs * (a + w), xdt);
                bits = SF_ISA(nan_as_generic)(bits, xdt);
                memcpy((char *)s->y + yo * es, &bits, (size_t)es);
            }
        }
        M = vk_bcast_last(mv);
        R = vk_bcast_last(iv);
    }
    int32_t rl[VK_W], ml[VK_W];
    vk_store_lanes(rl, R);
    vk_store_lanes(ml, M);
    if (rl[0] >= 0) {
        int64_t q = a + rl[0];
        c->key = ml[0];
        c->idx = s->ix0 + s->ixs * q;
        c->vbits = q < s->lo ? SF_ISA(identity_bits)(xdt, is_min)
                             : SF_ISA(sc_bits)(s->x, s->x0 + s->xs * q, xdt);
    }
}

SF_AI void
SF_ISA(max_dispatch)(const sf_seq *s, int64_t a, int64_t b, sf_maxc *c, bool store) {
    bool rev = s->xs < 0;
    if (s->xdt == SCANFUSE_FLOAT32) {
        if (rev) SF_ISA(max_impl)(s, a, b, c, store, SCANFUSE_FLOAT32, true);
        else SF_ISA(max_impl)(s, a, b, c, store, SCANFUSE_FLOAT32, false);
    } else {
        if (rev) SF_ISA(max_impl)(s, a, b, c, store, s->xdt, true);
        else SF_ISA(max_impl)(s, a, b, c, store, s->xdt, false);
    }
}

static void SF_ISA(max_scan)(const sf_seq *s, int64_t a, int64_t b, sf_maxc *c) {
    SF_ISA(max_dispatch)(s, a, b, c, true);
}

/* The reduce pass: per lane the best (key, position) with ties to the later position,
 * then the best lane with the same rule — the last occurrence of the greatest key, as
 * the scan's carry would have it, at a fraction of the scan's work. */
SF_AI void SF_ISA(max_red_impl)(const sf_seq *s, int64_t a, int64_t b, sf_maxc *c,
                                scanfuse_dtype xdt, bool rev) {
    const bool is_min = s->is_min;
    const int32_t ident = SF_ISA(identity_key)(xdt, is_min);
    const vk iota = vk_iota(), none = vk_set(-1);
    vk bk = vk_set(INT32_MIN), bi = none;
    for (int64_t i = a; i < b; i += VK_W) {
        bool f = i >= s->lo && i + VK_W <= b;
        vk k = SF_ISA(mx_ld)(s, i, b, f, xdt, rev, is_min, ident);
        vk pos = vk_add(iota, vk_set((int32_t)(i - a)));
        if (i + VK_W > b) /* lanes past the end: never a candidate */
            pos = vk_select_gt(vk_set((int32_t)(b - i)), iota, pos, none);
        /* k >= best (the later wins ties), only in lanes that hold an element */
        vk ni = vk_select_ge(k, bk, pos, bi), nk = vk_max(k, bk);
        bi = vk_select_gt(pos, none, ni, bi);
        bk = vk_select_gt(pos, none, nk, bk);
    }
    int32_t kl[VK_W], il[VK_W];
    vk_store_lanes(kl, bk);
    vk_store_lanes(il, bi);
    int32_t key = INT32_MIN;
    int64_t w = -1;
    for (int l = 0; l < VK_W; l++)
        if (il[l] >= 0 && (w < 0 || kl[l] > key || (kl[l] == key && il[l] > w))) {
            key = kl[l];
            w = il[l];
        }
    if (w >= 0 && key >= c->key) {
        int64_t q = a + w;
        c->key = key;
        c->idx = s->ix0 + s->ixs * q;
        c->vbits = q < s->lo ? SF_ISA(identity_bits)(xdt, is_min)
                             : SF_ISA(sc_bits)(s->x, s->x0 + s->xs * q, xdt);
    }
}

static void SF_ISA(max_reduce)(const sf_seq *s, int64_t a, int64_t b, sf_maxc *c) {
    bool rev = s->xs < 0;
    if (s->xdt == SCANFUSE_FLOAT32) {
        if (rev) SF_ISA(max_red_impl)(s, a, b, c, SCANFUSE_FLOAT32, true);
        else SF_ISA(max_red_impl)(s, a, b, c, SCANFUSE_FLOAT32, false);
    } else {
        if (rev) SF_ISA(max_red_impl)(s, a, b, c, s->xdt, true);
        else SF_ISA(max_red_impl)(s, a, b, c, s->xdt, false);
    }
}

/* ------------------------------------------------------------------------------ */
/* Columns                                                                           */
/* ------------------------------------------------------------------------------ */

/* Loads step row xr (NULL: the identity row of an exclusive scan; FILL: past the
 * end) at columns [j, j + VC_W) of which `nv` exist. */
SF_NOINLINE vc SF_ISA(fc_ld_part)(const char *xr, int64_t j, int64_t nv, int64_t xc,
                                  scanfuse_dtype xdt) {
    double l[VC_W];
    for (int k = 0; k < VC_W; k++)
        l[k] = k < nv ? SF_ISA(sc_ld_f)(xr, (j + k) * xc, xdt) : -0.0;
    return vc_load_lanes(l);
}

SF_AI vc SF_ISA(fc_ld)(const char *xr, int64_t j, int64_t nv, int64_t xc, scanfuse_dtype xdt,
                       int kind) {
    if (kind == 1) return vc_set(0.0);
    if (kind == 2) return vc_set(-0.0);
    if (nv == VC_W && xc == 1) return vc_load(xr + j * sf_scan_es(xdt), xdt);
    return SF_ISA(fc_ld_part)(xr, j, nv, xc, xdt);
}

SF_NOINLINE void SF_ISA(fc_st_part)(char *yr, int64_t j, int64_t nv, int64_t yc, vc v,
                                    scanfuse_dtype ydt) {
    double l[VC_W];
    vc_store_lanes(l, v);
    for (int k = 0; k < nv; k++) SF_ISA(sc_st_f)(yr, (j + k) * yc, ydt, l[k]);
}

SF_AI void SF_ISA(fc_st)(char *yr, int64_t j, int64_t nv, int64_t yc, vc v, scanfuse_dtype ydt,
                         bool nt) {
    if (nv == VC_W && yc == 1) vc_store(yr + j * sf_scan_es(ydt), v, ydt, nt);
    else SF_ISA(fc_st_part)(yr, j, nv, yc, v, ydt);
}

/* The float cumsum of every column of the tile, by the definition of cpu_scan_kern.h
 * applied to each column's sequence of steps: groups of 8 steps take the place of
 * the 8 lanes of a row vector, so the Sklansky network runs lane-wise across 8 step
 * vectors and every column gets the bits its row-mode scan would get. */
SF_AI void
SF_ISA(fcols_impl)(const sf_cols *c, int64_t j0, int64_t j1, scanfuse_dtype xdt,
                   scanfuse_dtype ydt) {
    enum { W = SF_SCAN_COLTILE };
    SF_ALIGN64 double T[W], Cs[W], lh[W], ll[W], ch[W], cl[W], cp[W];
    const int64_t w = j1 - j0, n = c->nsteps;
    const int64_t ex = sf_scan_es(xdt), ey = sf_scan_es(ydt);
    SF_ASSERT(w > 0 && w <= W);
    const int64_t wr = (w + VC_W - 1) / VC_W * VC_W;
    for (int64_t j = 0; j < wr; j++) lh[j] = ll[j] = ch[j] = cl[j] = cp[j] = -0.0;
    const vc nz = vc_set(-0.0);
    for (int64_t p0 = 0; p0 < n; p0 += SF_SCAN_PART) {
        int64_t p1 = SF_ISA(min64)(p0 + SF_SCAN_PART, n);
        for (int64_t b0 = p0; b0 < p1; b0 += SF_SCAN_BLOCK) {
            int64_t b1 = SF_ISA(min64)(b0 + SF_SCAN_BLOCK, p1);
            for (int64_t j = 0; j < wr; j += VC_W) {
                vc_store_lanes(T + j, nz);
                vc_store_lanes(Cs + j, vc_add(vc_add(vc_load_lanes(lh + j), vc_load_lanes(ll + j)),
                                              vc_load_lanes(cp + j)));
            }
            for (int64_t g0 = b0; g0 < b1; g0 += 8) {
                const char *xr[8];
                char *yr[8];
                int kind[8];
                bool nt[8];
                for (int k = 0; k < 8; k++) {
                    int64_t t = g0 + k;
                    kind[k] = t >= b1 ? 2 : t < c->lo ? 1 : 0;
                    xr[k] = kind[k] ? NULL
                                    : (const char *)c->x + (c->x0 + c->xs * t + j0 * c->xc) * ex;
                    yr[k] = t < b1 ? (char *)c->y + (c->y0 + c->ys * t + j0 * c->yc) * ey : NULL;
                    nt[k] = c->nt;
                }
                for (int64_t j = 0; j < w; j += VC_W) {
                    int64_t nv = SF_ISA(min64)(VC_W, w - j);
                    vc y0 = SF_ISA(fc_ld)(xr[0], j, nv, c->xc, xdt, kind[0]);
                    vc y1 = SF_ISA(fc_ld)(xr[1], j, nv, c->xc, xdt, kind[1]);
                    vc y2 = SF_ISA(fc_ld)(xr[2], j, nv, c->xc, xdt, kind[2]);
                    vc y3 = SF_ISA(fc_ld)(xr[3], j, nv, c->xc, xdt, kind[3]);
                    vc y4 = SF_ISA(fc_ld)(xr[4], j, nv, c->xc, xdt, kind[4]);
                    vc y5 = SF_ISA(fc_ld)(xr[5], j, nv, c->xc, xdt, kind[5]);
                    vc y6 = SF_ISA(fc_ld)(xr[6], j, nv, c->xc, xdt, kind[6]);
                    vc y7 = SF_ISA(fc_ld)(xr[7], j, nv, c->xc, xdt, kind[7]);
                    y1 = vc_add(y1, y0); /* L1 */
                    y3 = vc_add(y3, y2);
                    y5 = vc_add(y5, y4);
                    y7 = vc_add(y7, y6);
                    y2 = vc_add(y2, y1); /* L2 */
                    y3 = vc_add(y3, y1);
                    y6 = vc_add(y6, y5);
                    y7 = vc_add(y7, y5);
                    y4 = vc_add(y4, y3); /* L3 */
                    y5 = vc_add(y5, y3);
                    y6 = vc_add(y6, y3);
                    y7 = vc_add(y7, y3);
                    vc tb = vc_load_lanes(T + j);
                    vc tc = vc_add(tb, vc_load_lanes(Cs + j));
                    if (yr[0]) SF_ISA(fc_st)(yr[0], j, nv, c->yc, vc_add(y0, tc), ydt, nt[0]);
                    if (yr[1]) SF_ISA(fc_st)(yr[1], j, nv, c->yc, vc_add(y1, tc), ydt, nt[1]);
                    if (yr[2]) SF_ISA(fc_st)(yr[2], j, nv, c->yc, vc_add(y2, tc), ydt, nt[2]);
                    if (yr[3]) SF_ISA(fc_st)(yr[3], j, nv, c->yc, vc_add(y3, tc), ydt, nt[3]);
                    if (yr[4]) SF_ISA(fc_st)(yr[4], j, nv, c->yc, vc_add(y4, tc), ydt, nt[4]);
                    if (yr[5]) SF_ISA(fc_st)(yr[5], j, nv, c->yc, vc_add(y5, tc), ydt, nt[5]);
                    if (yr[6]) SF_ISA(fc_st)(yr[6], j, nv, c->yc, vc_add(y6, tc), ydt, nt[6]);
                    if (yr[7]) SF_ISA(fc_st)(yr[7], j, nv, c->yc, vc_add(y7, tc), ydt, nt[7]);
                    vc_store_lanes(T + j, vc_add(tb, y7));
                }
            }
            /* the block total into L (sf_dd_acc, lane-wise) */
            for (int64_t j = 0; j < wr; j += VC_W) {
                vc h = vc_load_lanes(lh + j), tt = vc_load_lanes(T + j);
                vc t = vc_add(h, tt), bp = vc_sub(t, h);
                vc err = vc_add(vc_sub(h, vc_sub(t, bp)), vc_sub(tt, bp));
                vc_store_lanes(ll + j, vc_add(vc_load_lanes(ll + j), vc_finite_or_zero(t, err)));
                vc_store_lanes(lh + j, t);
            }
        }
        /* the partition's carry into c (sf_dd_add, lane-wise); L restarts */
        for (int64_t j = 0; j < wr; j += VC_W) {
            vc h = vc_load_lanes(ch + j), s = vc_load_lanes(lh + j);
            vc t = vc_add(h, s), bp = vc_sub(t, h);
            vc err = vc_add(vc_sub(h, vc_sub(t, bp)), vc_sub(s, bp));
            vc lo = vc_add(vc_add(vc_load_lanes(cl + j), vc_finite_or_zero(t, err)), vc_load_lanes(ll + j));
            vc_store_lanes(ch + j, t);
            vc_store_lanes(cl + j, lo);
            vc_store_lanes(cp + j, vc_add(t, lo));
            for (int k = 0; k < VC_W; k++) /* a NaN carry is the default NaN (cpu_scan.c) */
                if (isnan(ch[j + k]) || isnan(cl[j + k])) {
                    ch[j + k] = cp[j + k] = NAN;
                    cl[j + k] = 0.0;
                }
            vc_store_lanes(lh + j, nz);
            vc_store_lanes(ll + j, nz);
        }
    }
}

static void SF_ISA(fsum_cols)(const sf_cols *c, int64_t j0, int64_t j1) {
    scanfuse_dtype xdt = c->xdt, ydt = c->ydt;
    if (xdt == SCANFUSE_FLOAT32 && ydt == SCANFUSE_FLOAT32)
        SF_ISA(fcols_impl)(c, j0, j1, SCANFUSE_FLOAT32, SCANFUSE_FLOAT32);
    else if (xdt == SCANFUSE_FLOAT64 && ydt == SCANFUSE_FLOAT64)
        SF_ISA(fcols_impl)(c, j0, j1, SCANFUSE_FLOAT64, SCANFUSE_FLOAT64);
    else if (xdt == SCANFUSE_FLOAT16 && ydt == SCANFUSE_FLOAT16)
        SF_ISA(fcols_impl)(c, j0, j1, SCANFUSE_FLOAT16, SCANFUSE_FLOAT16);
    else if (xdt == SCANFUSE_BFLOAT16 && ydt == SCANFUSE_BFLOAT16)
        SF_ISA(fcols_impl)(c, j0, j1, SCANFUSE_BFLOAT16, SCANFUSE_BFLOAT16);
    else
        SF_ISA(fcols_impl)(c, j0, j1, xdt, ydt);
}

SF_AI void
SF_ISA(icols_impl)(const sf_cols *c, int64_t j0, int64_t j1, scanfuse_dtype xdt,
                   scanfuse_dtype ydt) {
    SF_ALIGN64 int64_t acc[SF_SCAN_COLTILE];
    const int64_t w = j1 - j0, wf = w & ~(int64_t)7;
    const int64_t ex = sf_scan_es(xdt), ey = sf_scan_es(ydt);
    SF_ASSERT(w > 0 && w <= SF_SCAN_COLTILE);
    for (int64_t j = 0; j < w; j++) acc[j] = 0;
    for (int64_t t = 0; t < c->nsteps; t++) {
        char *yr = (char *)c->y + (c->y0 + c->ys * t + j0 * c->yc) * ey;
        if (t < c->lo) { /* the identity row of an exclusive scan: the carry is 0 */
            for (int64_t j = 0; j < w; j++) SF_ISA(sc_st_i)(yr, j * c->yc, ydt, 0);
            continue;
        }
        const char *xr = (const char *)c->x + (c->x0 + c->xs * t + j0 * c->xc) * ex;
        bool nt = c->nt, vec = c->xc == 1 && c->yc == 1;
        for (int64_t j = 0; vec && j < wf; j += 8) {
            vq l = vq_add(vq_load_lanes(acc + j), vq_load(xr + j * ex, xdt));
            vq_store_lanes(acc + j, l);
            vq_store(yr + j * ey, l, ydt, nt);
        }
        for (int64_t j = vec ? wf : 0; j < w; j++) {
            acc[j] = (int64_t)((uint64_t)acc[j] + (uint64_t)SF_ISA(sc_ld_i)(xr, j * c->xc, xdt));
            SF_ISA(sc_st_i)(yr, j * c->yc, ydt, acc[j]);
        }
    }
}

static void SF_ISA(isum_cols)(const sf_cols *c, int64_t j0, int64_t j1) {
    if (c->xdt == SCANFUSE_INT64 && c->ydt == SCANFUSE_INT64)
        SF_ISA(icols_impl)(c, j0, j1, SCANFUSE_INT64, SCANFUSE_INT64);
    else if (c->xdt == SCANFUSE_INT32 && c->ydt == SCANFUSE_INT64)
        SF_ISA(icols_impl)(c, j0, j1, SCANFUSE_INT32, SCANFUSE_INT64);
    else if (c->xdt == SCANFUSE_BOOL && c->ydt == SCANFUSE_INT64)
        SF_ISA(icols_impl)(c, j0, j1, SCANFUSE_BOOL, SCANFUSE_INT64);
    else
        SF_ISA(icols_impl)(c, j0, j1, c->xdt, c->ydt);
}

static void SF_ISA(store_test)(const double *in, int64_t n, scanfuse_dtype ydt, void *out, int which) {
    int64_t es = sf_scan_es(ydt);
    for (int64_t i = 0; i + 8 <= n; i += 8) {
        if (which == 0) {
            vd_store((char *)out + i * es, vd_load_lanes(in + i), ydt, false);
        } else {
            for (int64_t k = 0; k < 8; k += VC_W)
                vc_store((char *)out + (i + k) * es, vc_load_lanes(in + i + k), ydt, false);
        }
    }
}

const sf_scan_kernels SF_ISA(kernels) = {
    SF_ISA_NAME,
    SF_ISA(fsum_scan), SF_ISA(fsum_reduce), SF_ISA(fsum_rows),
    SF_ISA(isum_scan), SF_ISA(isum_reduce),
    SF_ISA(max_scan), SF_ISA(max_reduce),
    SF_ISA(fsum_cols), SF_ISA(isum_cols),
    SF_ISA(store_test),
};
