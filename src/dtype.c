/*
 * dtype.c — the one dtype vocabulary of scanfuse: names and the one parser for every
 * spelling, sizes, DLPack codes, PyTorch type promotion, and exact conversions
 * between doubles and the narrow float formats (float16, bfloat16) and integers.
 *
 * Conversions round to nearest even directly from double (never through float, which
 * would round twice) and follow what PyTorch's CPU kernels produce on x86-64 for
 * casts that C leaves undefined (out-of-range float to integer).
 */
#include "sf.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const dtype_names[SCANFUSE_NUM_DTYPES] = {
    "bool", "uint8", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64"};

static const size_t dtype_sizes[SCANFUSE_NUM_DTYPES] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};

const char *scanfuse_dtype_name(scanfuse_dtype dt) {
    return sf_dtype_valid(dt) ? dtype_names[dt] : "invalid";
}

size_t scanfuse_dtype_size(scanfuse_dtype dt) { return sf_dtype_valid(dt) ? dtype_sizes[dt] : 0; }

sf_category sf_dtype_category(scanfuse_dtype dt) {
    if (dt == SCANFUSE_BOOL) return SF_CAT_BOOL;
    return sf_dtype_is_float(dt) ? SF_CAT_FLOAT : SF_CAT_INT;
}

/* Every accepted spelling, after "torch."/"numpy."/"np." prefixes are removed. */
static const struct {
    const char *name;
    scanfuse_dtype dt;
} dtype_aliases[] = {
    {"bool", SCANFUSE_BOOL},       {"b8", SCANFUSE_BOOL},        {"bool_", SCANFUSE_BOOL},
    {"uint8", SCANFUSE_UINT8},     {"u8", SCANFUSE_UINT8},       {"byte", SCANFUSE_UINT8},
    {"ubyte", SCANFUSE_UINT8},
    {"int8", SCANFUSE_INT8},       {"i8", SCANFUSE_INT8},        {"char", SCANFUSE_INT8},
    {"byte_", SCANFUSE_INT8},
    {"int16", SCANFUSE_INT16},     {"i16", SCANFUSE_INT16},      {"short", SCANFUSE_INT16},
    {"int32", SCANFUSE_INT32},     {"i32", SCANFUSE_INT32},      {"int", SCANFUSE_INT32},
    {"intc", SCANFUSE_INT32},
    {"int64", SCANFUSE_INT64},     {"i64", SCANFUSE_INT64},      {"long", SCANFUSE_INT64},
    {"int_", SCANFUSE_INT64},      {"longlong", SCANFUSE_INT64}, {"intp", SCANFUSE_INT64},
    {"float16", SCANFUSE_FLOAT16}, {"f16", SCANFUSE_FLOAT16},    {"half", SCANFUSE_FLOAT16},
    {"bfloat16", SCANFUSE_BFLOAT16}, {"bf16", SCANFUSE_BFLOAT16},
    {"float32", SCANFUSE_FLOAT32}, {"f32", SCANFUSE_FLOAT32},    {"float", SCANFUSE_FLOAT32},
    {"single", SCANFUSE_FLOAT32},
    {"float64", SCANFUSE_FLOAT64}, {"f64", SCANFUSE_FLOAT64},    {"double", SCANFUSE_FLOAT64},
    {"float_", SCANFUSE_FLOAT64},
};

static bool is_complex_name(const char *s) {
    return strncmp(s, "complex", 7) == 0 || strcmp(s, "cfloat") == 0 ||
           strcmp(s, "cdouble") == 0 || strcmp(s, "chalf") == 0 || strcmp(s, "c64") == 0 ||
           strcmp(s, "c128") == 0 || strcmp(s, "c32") == 0 || strcmp(s, "csingle") == 0 ||
           strcmp(s, "clongdouble") == 0;
}

/* NumPy descr strings: a byte-order character, a kind, a size ("<f4", "|b1"). */
static scanfuse_status parse_descr(const char *s, scanfuse_dtype *out, char *msg,
                                   size_t msglen, const char *orig) {
    char order = s[0], kind = s[1];
    const char *digits = s + 2;
    if (!*digits) return SCANFUSE_ERROR_DTYPE;
    int size = 0;
    for (const char *p = digits; *p; p++) {
        if (*p < '0' || *p > '9' || size > 1000) return SCANFUSE_ERROR_DTYPE;
        size = size * 10 + (*p - '0');
    }
    if (order == '>' && size > 1) {
        sf_msg(msg, msglen, "big-endian dtypes are not supported: '%s'", orig);
        return SCANFUSE_ERROR_DTYPE;
    }
    scanfuse_dtype dt;
    switch (kind) {
    case 'b': if (size != 1) return SCANFUSE_ERROR_DTYPE; dt = SCANFUSE_BOOL; break;
    case 'u': if (size != 1) return SCANFUSE_ERROR_DTYPE; dt = SCANFUSE_UINT8; break;
    case 'i':
        if (size == 1) dt = SCANFUSE_INT8;
        else if (size == 2) dt = SCANFUSE_INT16;
        else if (size == 4) dt = SCANFUSE_INT32;
        else if (size == 8) dt = SCANFUSE_INT64;
        else return SCANFUSE_ERROR_DTYPE;
        break;
    case 'f':
        if (size == 2) dt = SCANFUSE_FLOAT16;
        else if (size == 4) dt = SCANFUSE_FLOAT32;
        else if (size == 8) dt = SCANFUSE_FLOAT64;
        else return SCANFUSE_ERROR_DTYPE;
        break;
    case 'c':
        sf_msg(msg, msglen, "complex dtypes are not supported: '%s'", orig);
        return SCANFUSE_ERROR_DTYPE;
    default: return SCANFUSE_ERROR_DTYPE;
    }
    *out = dt;
    return SCANFUSE_OK;
}

scanfuse_status sf_dtype_parse(const char *name, scanfuse_dtype *out, char *msg, size_t msglen) {
    if (!name) {
        sf_msg(msg, msglen, "no dtype given");
        return SCANFUSE_ERROR_DTYPE;
    }
    const char *s = name;
    if (strncmp(s, "torch.", 6) == 0) s += 6;
    else if (strncmp(s, "numpy.", 6) == 0) s += 6;
    else if (strncmp(s, "np.", 3) == 0) s += 3;
    if (is_complex_name(s)) {
        sf_msg(msg, msglen, "complex dtypes are not supported: '%s'", name);
        return SCANFUSE_ERROR_DTYPE;
    }
    for (size_t i = 0; i < sizeof dtype_aliases / sizeof dtype_aliases[0]; i++) {
        if (strcmp(dtype_aliases[i].name, s) == 0) {
            *out = dtype_aliases[i].dt;
            return SCANFUSE_OK;
        }
    }
    if (s == name && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=') && s[1]) {
        char m[128] = "";
        scanfuse_status st = parse_descr(s, out, m, sizeof m, name);
        if (st == SCANFUSE_OK) return st;
        if (m[0]) {
            sf_msg(msg, msglen, "%s", m);
            return st;
        }
    }
    sf_msg(msg, msglen, "unknown dtype '%s'", name);
    return SCANFUSE_ERROR_DTYPE;
}

scanfuse_status scanfuse_dtype_parse(const char *name, scanfuse_dtype *out) {
    scanfuse_dtype dt;
    scanfuse_status st = sf_dtype_parse(name, &dt, NULL, 0);
    if (st == SCANFUSE_OK && out) *out = dt;
    return st;
}

scanfuse_status scanfuse_dtype_from_dl(scanfuse_dl_dtype dl, scanfuse_dtype *out) {
    if (dl.lanes != 1) return SCANFUSE_ERROR_DTYPE;
    scanfuse_dtype dt;
    switch (dl.code) {
    case SCANFUSE_DL_BOOL:
        if (dl.bits != 8) return SCANFUSE_ERROR_DTYPE;
        dt = SCANFUSE_BOOL;
        break;
    case SCANFUSE_DL_UINT:
        if (dl.bits != 8) return SCANFUSE_ERROR_DTYPE;
        dt = SCANFUSE_UINT8;
        break;
    case SCANFUSE_DL_INT:
        if (dl.bits == 8) dt = SCANFUSE_INT8;
        else if (dl.bits == 16) dt = SCANFUSE_INT16;
        else if (dl.bits == 32) dt = SCANFUSE_INT32;
        else if (dl.bits == 64) dt = SCANFUSE_INT64;
        else return SCANFUSE_ERROR_DTYPE;
        break;
    case SCANFUSE_DL_FLOAT:
        if (dl.bits == 16) dt = SCANFUSE_FLOAT16;
        else if (dl.bits == 32) dt = SCANFUSE_FLOAT32;
        else if (dl.bits == 64) dt = SCANFUSE_FLOAT64;
        else return SCANFUSE_ERROR_DTYPE;
        break;
    case SCANFUSE_DL_BFLOAT:
        if (dl.bits != 16) return SCANFUSE_ERROR_DTYPE;
        dt = SCANFUSE_BFLOAT16;
        break;
    default: return SCANFUSE_ERROR_DTYPE;
    }
    if (out) *out = dt;
    return SCANFUSE_OK;
}

scanfuse_dl_dtype scanfuse_dtype_to_dl(scanfuse_dtype dt) {
    scanfuse_dl_dtype dl = {SCANFUSE_DL_OPAQUE_HANDLE, 0, 1};
    if (!sf_dtype_valid(dt)) return dl;
    dl.bits = (uint8_t)(dtype_sizes[dt] * 8);
    switch (dt) {
    case SCANFUSE_BOOL: dl.code = SCANFUSE_DL_BOOL; break;
    case SCANFUSE_UINT8: dl.code = SCANFUSE_DL_UINT; break;
    case SCANFUSE_INT8: case SCANFUSE_INT16: case SCANFUSE_INT32: case SCANFUSE_INT64:
        dl.code = SCANFUSE_DL_INT; break;
    case SCANFUSE_BFLOAT16: dl.code = SCANFUSE_DL_BFLOAT; break;
    case SCANFUSE_FLOAT16: case SCANFUSE_FLOAT32: case SCANFUSE_FLOAT64:
        dl.code = SCANFUSE_DL_FLOAT; break;
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: break;
    }
    return dl;
}

/* PyTorch's promotion lattice for two dtypes of tensors with dims. */
scanfuse_dtype scanfuse_dtype_promote(scanfuse_dtype a, scanfuse_dtype b) {
    if (!sf_dtype_valid(a)) return b;
    if (!sf_dtype_valid(b)) return a;
    if (a == b) return a;
    if (a > b) { scanfuse_dtype t = a; a = b; b = t; }  /* now a < b in enum order */
    if (a == SCANFUSE_BOOL) return b;
    /* floats */
    if (sf_dtype_is_float(a) && sf_dtype_is_float(b)) {
        if (a == SCANFUSE_FLOAT16 && b == SCANFUSE_BFLOAT16) return SCANFUSE_FLOAT32;
        return b; /* enum order f16 < bf16 < f32 < f64 */
    }
    if (sf_dtype_is_float(b)) return b; /* int with float */
    /* integers: uint8 with a signed int */
    if (a == SCANFUSE_UINT8) return b == SCANFUSE_INT8 ? SCANFUSE_INT16 : b;
    return b; /* signed ints: wider wins */
}

/* ---- integers ---- */

int64_t sf_int_min(scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_BOOL: return 0;
    case SCANFUSE_UINT8: return 0;
    case SCANFUSE_INT8: return INT8_MIN;
    case SCANFUSE_INT16: return INT16_MIN;
    case SCANFUSE_INT32: return INT32_MIN;
    default: return INT64_MIN;
    }
}

int64_t sf_int_max(scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_BOOL: return 1;
    case SCANFUSE_UINT8: return UINT8_MAX;
    case SCANFUSE_INT8: return INT8_MAX;
    case SCANFUSE_INT16: return INT16_MAX;
    case SCANFUSE_INT32: return INT32_MAX;
    default: return INT64_MAX;
    }
}

int64_t sf_wrap_int(int64_t v, scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_BOOL: return v != 0;
    case SCANFUSE_UINT8: return (int64_t)(uint8_t)(uint64_t)v;
    case SCANFUSE_INT8: return (int64_t)(int8_t)(uint8_t)(uint64_t)v;
    case SCANFUSE_INT16: return (int64_t)(int16_t)(uint16_t)(uint64_t)v;
    case SCANFUSE_INT32: return (int64_t)(int32_t)(uint32_t)(uint64_t)v;
    default: return v;
    }
}

int64_t sf_f64_to_int(double v, scanfuse_dtype dt) {
    if (dt == SCANFUSE_BOOL) return v != 0.0; /* NaN != 0 is true, as in PyTorch */
    if (dt == SCANFUSE_INT64) {
        /* cvttsd2si: NaN and out-of-range give INT64_MIN */
        if (isnan(v) || v >= 9223372036854775808.0 || v < -9223372036854775808.0) return INT64_MIN;
        return (int64_t)v;
    }
    /* narrower types convert through int32 (cvttsd2si, 32-bit) and then wrap */
    int32_t i32;
    if (isnan(v) || v >= 2147483648.0 || v <= -2147483649.0) i32 = INT32_MIN;
    else i32 = (int32_t)v;
    return sf_wrap_int(i32, dt);
}

/* ---- floats ---- */

/* Rounds |v| to a binary format with p significant bits, minimum normal exponent emin
 * (subnormals below it) and maximum exponent emax; overflow gives infinity. */
static double round_format(double v, int p, int emin, int emax) {
    if (isnan(v) || isinf(v) || v == 0.0) return v;
    uint64_t bits;
    memcpy(&bits, &v, 8);
    int be = (int)((bits >> 52) & 0x7FF) - 1023;
    if (be >= emin) {
        /* a normal result: round the significand's low 53 - p bits away on the bits,
         * to nearest even (add half an ulp less one, plus the kept part's lowest bit;
         * a carry steps into the next binade), as the quotient below does but without
         * ilogb, ldexp and nearbyint (the reference's checks round ten million values) */
        int drop = 53 - p;
        uint64_t sign = bits & (UINT64_C(1) << 63), mag = bits & ~(UINT64_C(1) << 63);
        mag += (UINT64_C(1) << (drop - 1)) - 1 + ((mag >> drop) & 1);
        mag &= ~((UINT64_C(1) << drop) - 1);
        if ((int)(mag >> 52) - 1023 > emax) return sign ? -INFINITY : INFINITY;
        bits = sign | mag;
        double r;
        memcpy(&r, &bits, 8);
        return r;
    }
    double a = fabs(v);
    int e = ilogb(a);
    if (e < emin) e = emin;
    double quantum = ldexp(1.0, e - (p - 1));
    double r = nearbyint(a / quantum) * quantum;
    double maxfinite = ldexp(2.0 - ldexp(1.0, 1 - p), emax);
    if (r > maxfinite) r = INFINITY;
    return v < 0 ? -r : r;
}

double sf_round_to(double v, scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_FLOAT16: return round_format(v, 11, -14, 15);
    case SCANFUSE_BFLOAT16: return round_format(v, 8, -126, 127);
    case SCANFUSE_FLOAT32: return (double)(float)v;
    default: return v;
    }
}

uint16_t sf_f64_to_f16(double v) {
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    if (isnan(v)) return sign | 0x7E00;
    double r = fabs(round_format(v, 11, -14, 15));
    if (isinf(r)) return sign | 0x7C00;
    if (r == 0.0) return sign;
    int e = ilogb(r);
    if (e < -14) return sign | (uint16_t)(r * 16777216.0); /* subnormal: r / 2^-24 */
    uint16_t mant = (uint16_t)(ldexp(r, 10 - e) - 1024.0);
    return sign | (uint16_t)((e + 15) << 10) | mant;
}

uint16_t sf_f64_to_bf16(double v) {
    if (isnan(v)) return signbit(v) ? 0xFFC0 : 0x7FC0;
    float f = (float)round_format(v, 8, -126, 127); /* exact in float */
    uint32_t bits;
    memcpy(&bits, &f, 4);
    return (uint16_t)(bits >> 16);
}

uint16_t sf_f32_to_f16(float v) { return sf_f64_to_f16((double)v); }

uint16_t sf_f32_to_bf16(float v) {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x7FFFFFu)) return (uint16_t)((bits >> 16) | 0x40);
    uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
    return (uint16_t)((bits + rounding) >> 16);
}

float sf_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    float f;
    if (exp == 0) {
        f = (float)ldexp((double)mant, -24);
        uint32_t b;
        memcpy(&b, &f, 4);
        b |= sign;
        memcpy(&f, &b, 4);
        return f;
    }
    uint32_t bits;
    if (exp == 31) bits = sign | 0x7F800000u | (mant << 13);
    else bits = sign | ((exp + 112) << 23) | (mant << 13);
    memcpy(&f, &bits, 4);
    return f;
}

float sf_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

double sf_ulp(double v, scanfuse_dtype dt) {
    int p, emin;
    switch (dt) {
    case SCANFUSE_FLOAT16: p = 11; emin = -14; break;
    case SCANFUSE_BFLOAT16: p = 8; emin = -126; break;
    case SCANFUSE_FLOAT32: p = 24; emin = -126; break;
    default: p = 53; emin = -1022; break;
    }
    double a = fabs(v);
    int e = (a == 0.0 || isnan(a) || isinf(a)) ? emin : ilogb(a);
    if (e < emin) e = emin;
    return ldexp(1.0, e - (p - 1));
}

/* ---- element access ---- */

double sf_load_f64(const void *base, int64_t i, scanfuse_dtype dt) {
    const char *p = (const char *)base;
    switch (dt) {
    case SCANFUSE_BOOL: return ((const uint8_t *)p)[i] != 0;
    case SCANFUSE_UINT8: return ((const uint8_t *)p)[i];
    case SCANFUSE_INT8: return ((const int8_t *)p)[i];
    case SCANFUSE_INT16: { int16_t x; memcpy(&x, p + i * 2, 2); return x; }
    case SCANFUSE_INT32: { int32_t x; memcpy(&x, p + i * 4, 4); return x; }
    case SCANFUSE_INT64: { int64_t x; memcpy(&x, p + i * 8, 8); return (double)x; }
    case SCANFUSE_FLOAT16: { uint16_t x; memcpy(&x, p + i * 2, 2); return sf_f16_to_f32(x); }
    case SCANFUSE_BFLOAT16: { uint16_t x; memcpy(&x, p + i * 2, 2); return sf_bf16_to_f32(x); }
    case SCANFUSE_FLOAT32: { float x; memcpy(&x, p + i * 4, 4); return x; }
    case SCANFUSE_FLOAT64: { double x; memcpy(&x, p + i * 8, 8); return x; }
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: break;
    }
    SF_ASSERT(!"bad dtype");
    return 0;
}

int64_t sf_load_i64(const void *base, int64_t i, scanfuse_dtype dt) {
    const char *p = (const char *)base;
    switch (dt) {
    case SCANFUSE_BOOL: return ((const uint8_t *)p)[i] != 0;
    case SCANFUSE_UINT8: return ((const uint8_t *)p)[i];
    case SCANFUSE_INT8: return ((const int8_t *)p)[i];
    case SCANFUSE_INT16: { int16_t x; memcpy(&x, p + i * 2, 2); return x; }
    case SCANFUSE_INT32: { int32_t x; memcpy(&x, p + i * 4, 4); return x; }
    case SCANFUSE_INT64: { int64_t x; memcpy(&x, p + i * 8, 8); return x; }
    case SCANFUSE_FLOAT16: case SCANFUSE_BFLOAT16: case SCANFUSE_FLOAT32: case SCANFUSE_FLOAT64:
        return sf_f64_to_int(sf_load_f64(base, i, dt), SCANFUSE_INT64);
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: break;
    }
    SF_ASSERT(!"bad dtype");
    return 0;
}

void sf_store_f64(void *base, int64_t i, scanfuse_dtype dt, double v) {
    char *p = (char *)base;
    switch (dt) {
    case SCANFUSE_FLOAT16: { uint16_t x = sf_f64_to_f16(v); memcpy(p + i * 2, &x, 2); return; }
    case SCANFUSE_BFLOAT16: { uint16_t x = sf_f64_to_bf16(v); memcpy(p + i * 2, &x, 2); return; }
    case SCANFUSE_FLOAT32: { float x = (float)v; memcpy(p + i * 4, &x, 4); return; }
    case SCANFUSE_FLOAT64: memcpy(p + i * 8, &v, 8); return;
    case SCANFUSE_BOOL: case SCANFUSE_UINT8: case SCANFUSE_INT8: case SCANFUSE_INT16:
    case SCANFUSE_INT32: case SCANFUSE_INT64:
        sf_store_i64(base, i, dt, sf_f64_to_int(v, dt));
        return;
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: break;
    }
    SF_ASSERT(!"bad dtype");
}

void sf_store_i64(void *base, int64_t i, scanfuse_dtype dt, int64_t v) {
    char *p = (char *)base;
    switch (dt) {
    case SCANFUSE_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    case SCANFUSE_UINT8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; return;
    case SCANFUSE_INT8: ((int8_t *)p)[i] = (int8_t)sf_wrap_int(v, dt); return;
    case SCANFUSE_INT16: { int16_t x = (int16_t)sf_wrap_int(v, dt); memcpy(p + i * 2, &x, 2); return; }
    case SCANFUSE_INT32: { int32_t x = (int32_t)sf_wrap_int(v, dt); memcpy(p + i * 4, &x, 4); return; }
    case SCANFUSE_INT64: memcpy(p + i * 8, &v, 8); return;
    case SCANFUSE_FLOAT16: case SCANFUSE_BFLOAT16: case SCANFUSE_FLOAT32: case SCANFUSE_FLOAT64:
        sf_store_f64(base, i, dt, (double)v);
        return;
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: break;
    }
    SF_ASSERT(!"bad dtype");
}
