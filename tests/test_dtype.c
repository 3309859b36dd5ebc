/*
 * test_dtype.c — the dtype vocabulary: every spelling through the one parser, complex
 * and unknown names rejected, DLPack codes, PyTorch promotion, and the exactness of the
 * float16/bfloat16 conversions (every bit pattern, rounding ties to even, overflow), and
 * the CPU cast kernel's float32 <-> bfloat16 bit-arithmetic path against them.
 */
#include "cpu.h"
#include "harness.h"
#include "sf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void check_parse(const char *name, scanfuse_dtype want) {
    scanfuse_dtype got = SCANFUSE_DTYPE_NONE;
    scanfuse_status st = scanfuse_dtype_parse(name, &got);
    CHECKF(st == SCANFUSE_OK && got == want, "parse '%s' -> %s (status %s)", name,
           scanfuse_dtype_name(got), scanfuse_status_string(st));
}

static void check_reject(const char *name, const char *substr) {
    scanfuse_dtype got = SCANFUSE_INT8;
    char msg[256] = "";
    scanfuse_status st = sf_dtype_parse(name, &got, msg, sizeof msg);
    CHECKF(st == SCANFUSE_ERROR_DTYPE && got == SCANFUSE_INT8 && strstr(msg, substr),
           "reject '%s': status %s, message '%s'", name, scanfuse_status_string(st), msg);
}

/* The CPU cast kernel's float32 <-> bfloat16 path (cpu_pointwise.c, bit arithmetic)
 * against the rounding through double: every sign, exponent and high mantissa half of
 * float32 with low halves at and around the rounding boundary (ties go to even), then
 * every bfloat16 back to float32; contiguous and every-other-element views.  NaNs must
 * stay NaNs of their sign (their payload is not specified). */
static void check_cpu_bf16_casts(void) {
    static const uint16_t lows[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x1234, 0xC000};
    const int64_t nl = (int64_t)(sizeof lows / sizeof *lows), n = 65536 * nl;
    uint32_t *f = malloc((size_t)n * 4);
    uint16_t *h = malloc((size_t)n * 2 * 2);
    uint32_t *g = malloc((size_t)n * 4 * 2);
    if (!f || !h || !g) {
        CHECK(!"out of memory");
        free(f);
        free(h);
        free(g);
        return;
    }
    for (int64_t i = 0; i < n; i++) f[i] = (uint32_t)(i / nl) << 16 | lows[i % nl];
    long bad = 0;
    for (int step = 1; step <= 2; step++) {
        sf_view src, dst;
        sf_view_contiguous(&src, f, SCANFUSE_FLOAT32, 1, &n);
        sf_view_contiguous(&dst, h, SCANFUSE_BFLOAT16, 1, &n);
        dst.strides[0] = step;
        memset(h, 0, (size_t)n * 2 * 2);
        sf_cpu_copy(&dst, &src);
        for (int64_t i = 0; i < n; i++) {
            float x;
            memcpy(&x, &f[i], 4);
            uint16_t got = h[i * step];
            if (isnan(x)) {
                bad += !((got & 0x7F80) == 0x7F80 && (got & 0x7F) && (got >> 15) == (f[i] >> 31));
            } else {
                bad += got != sf_f64_to_bf16((double)x);
            }
        }
        /* bfloat16 -> float32: the 65536 patterns (the high halves just written, step 1) */
        if (step == 1) {
            int64_t m = 65536;
            for (int64_t i = 0; i < m; i++) h[i] = (uint16_t)i;
            sf_view_contiguous(&src, h, SCANFUSE_BFLOAT16, 1, &m);
            sf_view_contiguous(&dst, g, SCANFUSE_FLOAT32, 1, &m);
            dst.strides[0] = 2;
            sf_cpu_copy(&dst, &src);
            for (int64_t i = 0; i < m; i++) {
                float want = sf_bf16_to_f32((uint16_t)i), got;
                memcpy(&got, &g[i * 2], 4);
                bad += isnan(want) ? !isnan(got) : memcmp(&got, &want, 4) != 0;
            }
        }
    }
    CHECKF(bad == 0, "cpu float32 <-> bfloat16 casts: %ld elements differ from the rounding through double", bad);
    free(f);
    free(h);
    free(g);
}

int main(void) {
    /* spellings */
    const char *f16[] = {"float16", "f16", "half", "torch.float16", "torch.half", "numpy.float16",
                         "np.float16", "<f2", "=f2"};
    for (size_t i = 0; i < sizeof f16 / sizeof *f16; i++) check_parse(f16[i], SCANFUSE_FLOAT16);
    const char *bf16[] = {"bfloat16", "bf16", "torch.bfloat16"};
    for (size_t i = 0; i < sizeof bf16 / sizeof *bf16; i++) check_parse(bf16[i], SCANFUSE_BFLOAT16);
    check_parse("float32", SCANFUSE_FLOAT32);
    check_parse("torch.float", SCANFUSE_FLOAT32);
    check_parse("<f4", SCANFUSE_FLOAT32);
    check_parse("double", SCANFUSE_FLOAT64);
    check_parse("<f8", SCANFUSE_FLOAT64);
    check_parse("torch.long", SCANFUSE_INT64);
    check_parse("<i8", SCANFUSE_INT64);
    check_parse("torch.int", SCANFUSE_INT32);
    check_parse("i32", SCANFUSE_INT32);
    check_parse("<i4", SCANFUSE_INT32);
    check_parse("int16", SCANFUSE_INT16);
    check_parse("torch.short", SCANFUSE_INT16);
    check_parse("|i1", SCANFUSE_INT8);
    check_parse("uint8", SCANFUSE_UINT8);
    check_parse("|u1", SCANFUSE_UINT8);
    check_parse("bool", SCANFUSE_BOOL);
    check_parse("|b1", SCANFUSE_BOOL);
    check_parse("torch.bool", SCANFUSE_BOOL);
    check_parse("numpy.bool_", SCANFUSE_BOOL);
    for (int d = 0; d < SCANFUSE_NUM_DTYPES; d++) check_parse(scanfuse_dtype_name((scanfuse_dtype)d), (scanfuse_dtype)d);

    check_reject("complex64", "complex dtypes are not supported");
    check_reject("torch.complex128", "complex dtypes are not supported");
    check_reject("<c8", "complex dtypes are not supported");
    check_reject(">f4", "big-endian");
    check_reject("float128", "unknown dtype 'float128'");
    check_reject("", "unknown dtype");
    check_reject("<f", "unknown dtype");
    check_reject("Float32", "unknown dtype");
    CHECK_STATUS(scanfuse_dtype_parse(NULL, NULL), SCANFUSE_ERROR_DTYPE);
    CHECK(strcmp(scanfuse_dtype_name((scanfuse_dtype)99), "invalid") == 0);
    CHECK_EQ_INT(scanfuse_dtype_size((scanfuse_dtype)-5), 0);

    /* DLPack */
    for (int d = 0; d < SCANFUSE_NUM_DTYPES; d++) {
        scanfuse_dtype back = SCANFUSE_DTYPE_NONE;
        CHECK_STATUS(scanfuse_dtype_from_dl(scanfuse_dtype_to_dl((scanfuse_dtype)d), &back), SCANFUSE_OK);
        CHECK_EQ_INT(back, d);
    }
    scanfuse_dtype dummy;
    CHECK_STATUS(scanfuse_dtype_from_dl((scanfuse_dl_dtype){SCANFUSE_DL_COMPLEX, 64, 1}, &dummy), SCANFUSE_ERROR_DTYPE);
    CHECK_STATUS(scanfuse_dtype_from_dl((scanfuse_dl_dtype){SCANFUSE_DL_FLOAT, 32, 4}, &dummy), SCANFUSE_ERROR_DTYPE);
    CHECK_STATUS(scanfuse_dtype_from_dl((scanfuse_dl_dtype){SCANFUSE_DL_UINT, 16, 1}, &dummy), SCANFUSE_ERROR_DTYPE);

    /* promotion (torch.promote_types) */
    CHECK_EQ_INT(scanfuse_dtype_promote(SCANFUSE_UINT8, SCANFUSE_INT8), SCANFUSE_INT16);
    CHECK_EQ_INT(scanfuse_dtype_promote(SCANFUSE_INT8, SCANFUSE_UINT8), SCANFUSE_INT16);
    CHECK_EQ_INT(scanfuse_dtype_promote(SCANFUSE_UINT8, SCANFUSE_INT32), SCANFUSE_INT32);
    CHECK_EQ_INT(scanfuse_dtype_promote(SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16), SCANFUSE_FLOAT32);
    CHECK_EQ_INT(scanfuse_dtype_promote(SCANFUSE_INT64, SCANFUSE_FLOAT16), SCANFUSE_FLOAT16);
    CHECK_EQ_INT(scanfuse_dtype_promote(SCANFUSE_BOOL, SCANFUSE_UINT8), SCANFUSE_UINT8);
    CHECK_EQ_INT(scanfuse_dtype_promote(SCANFUSE_BOOL, SCANFUSE_BOOL), SCANFUSE_BOOL);
    CHECK_EQ_INT(scanfuse_dtype_promote(SCANFUSE_FLOAT32, SCANFUSE_FLOAT64), SCANFUSE_FLOAT64);
    CHECK_EQ_INT(scanfuse_dtype_promote(SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32), SCANFUSE_FLOAT32);

    /* float16: every bit pattern survives f16 -> f32 -> f16 and f16 -> f64 -> f16 */
    long bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = sf_f16_to_f32((uint16_t)h);
        uint16_t back = sf_f32_to_f16(f);
        bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
        if (nan ? !isnan(f) : back != h) bad++;
        if (!nan && sf_f64_to_f16((double)f) != h) bad++;
        float b = sf_bf16_to_f32((uint16_t)h);
        bool bnan = (h & 0x7F80) == 0x7F80 && (h & 0x7F);
        if (bnan ? !isnan(b) : sf_f32_to_bf16(b) != h || sf_f64_to_bf16((double)b) != h) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    /* rounding: ties to even, directly from double (no double rounding) */
    CHECK_EQ_INT(sf_f64_to_f16(1.0 + 0x1p-11), 0x3C00);               /* tie -> even (1.0) */
    CHECK_EQ_INT(sf_f64_to_f16(1.0 + 3 * 0x1p-11), 0x3C02);           /* tie -> even (up) */
    CHECK_EQ_INT(sf_f64_to_f16(1.0 + 0x1p-11 + 0x1p-40), 0x3C01);     /* just above the tie */
    CHECK_EQ_INT(sf_f64_to_f16(65504.0), 0x7BFF);
    CHECK_EQ_INT(sf_f64_to_f16(65519.99), 0x7BFF);
    CHECK_EQ_INT(sf_f64_to_f16(65520.0), 0x7C00);                      /* overflow to inf */
    CHECK_EQ_INT(sf_f64_to_f16(0x1p-25), 0x0000);                      /* tie to even zero */
    CHECK_EQ_INT(sf_f64_to_f16(0x1p-25 + 0x1p-60), 0x0001);
    CHECK_EQ_INT(sf_f64_to_f16(-0.0), 0x8000);
    CHECK_EQ_INT(sf_f64_to_bf16(1.0 + 0x1p-8), 0x3F80);
    CHECK_EQ_INT(sf_f64_to_bf16(1.0 + 0x1p-8 + 0x1p-30), 0x3F81);
    CHECK(sf_round_to(1.0 + 0x1p-11, SCANFUSE_FLOAT16) == 1.0);
    CHECK(sf_round_to(0.1, SCANFUSE_FLOAT32) == (double)0.1f);
    CHECK(sf_ulp(1.0, SCANFUSE_FLOAT16) == 0x1p-10);
    CHECK(sf_ulp(1.0, SCANFUSE_BFLOAT16) == 0x1p-7);
    CHECK(sf_ulp(0.0, SCANFUSE_FLOAT32) == 0x1p-149);

    /* float -> integer casts as PyTorch's CPU gives them on x86-64 */
    CHECK_EQ_INT(sf_f64_to_int(-2.7, SCANFUSE_INT64), -2);
    CHECK_EQ_INT(sf_f64_to_int(NAN, SCANFUSE_INT64), INT64_MIN);
    CHECK_EQ_INT(sf_f64_to_int(1e30, SCANFUSE_INT64), INT64_MIN);
    CHECK_EQ_INT(sf_f64_to_int(300.0, SCANFUSE_INT8), 44);
    CHECK_EQ_INT(sf_f64_to_int(-1.0, SCANFUSE_UINT8), 255);
    CHECK_EQ_INT(sf_f64_to_int(NAN, SCANFUSE_BOOL), 1);
    CHECK_EQ_INT(sf_wrap_int(INT64_C(0x180000000), SCANFUSE_INT32), INT32_MIN);
    CHECK_EQ_INT(sf_wrap_int(-1, SCANFUSE_UINT8), 255);
    check_cpu_bf16_casts();
    return sf_test_finish("test_dtype");
}
