/*
 * harness.c — counters, the closing line, a reproducible RNG and command capture for
 * the C test programs (see harness.h).
 */
#include "harness.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

long sf_test_passed, sf_test_failed;

void sf_test_check(bool ok, const char *file, int line, const char *fmt, ...) {
    if (ok) {
        sf_test_passed++;
        return;
    }
    sf_test_failed++;
    if (sf_test_failed <= 50) {
        fprintf(stderr, "FAIL %s:%d: ", file, line);
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
}

int sf_test_finish(const char *name) {
    printf("%s: %ld passed, %ld failed\n", name, sf_test_passed, sf_test_failed);
    return sf_test_failed ? 1 : 0;
}

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void sf_test_rng_seed(sf_test_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t sf_test_rng_next(sf_test_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double sf_test_rng_uniform(sf_test_rng *r) {
    return (double)(sf_test_rng_next(r) >> 11) * 0x1.0p-53;
}

int64_t sf_test_rng_int(sf_test_rng *r, int64_t lo, int64_t hi) {
    uint64_t span = (uint64_t)(hi - lo) + 1;
    if (span == 0) return (int64_t)sf_test_rng_next(r);
    return lo + (int64_t)(sf_test_rng_next(r) % span);
}

bool sf_test_contains(const char *text, const char *needle) {
    return text && needle && strstr(text, needle) != NULL;
}

int sf_test_run_command(const char *cmd, char *out, size_t outlen) {
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t n = 0;
    if (outlen) out[0] = '\0';
    while (outlen && n + 1 < outlen) {
        size_t got = fread(out + n, 1, outlen - 1 - n, p);
        if (got == 0) break;
        n += got;
    }
    if (outlen) out[n] = '\0';
    char sink[256];
    while (fread(sink, 1, sizeof sink, p) > 0) {
    }
    int st = pclose(p);
    if (st == -1) return -1;
    return (st >> 8) & 0xff;
}
