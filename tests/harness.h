/*
 * harness.h — the tiny test framework every tests/test_*.c program uses.
 *
 * A test program calls CHECK()/CHECK_EQ_INT()/CHECK_STATUS() as often as it likes and
 * ends main() with `return sf_test_finish("name");`, which prints the closing line
 * "N passed, N failed" and returns the exit status CTest reads.  Random inputs come
 * from sf_test_rng, a fixed-seed generator, so every failure reproduces.
 */
#ifndef SF_TEST_HARNESS_H
#define SF_TEST_HARNESS_H

#include "scanfuse.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

extern long sf_test_passed, sf_test_failed;

void sf_test_check(bool ok, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#define CHECK(cond) sf_test_check((cond), __FILE__, __LINE__, "%s", #cond)
#define CHECKF(cond, ...) sf_test_check((cond), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_EQ_INT(a, b)                                                              \
    sf_test_check((long long)(a) == (long long)(b), __FILE__, __LINE__,                 \
                  "%s == %s (%lld vs %lld)", #a, #b, (long long)(a), (long long)(b))
/* Evaluates `st` once (it is often a call). */
#define CHECK_STATUS(st, want)                                                          \
    do {                                                                                \
        scanfuse_status sf_check_st_ = (st), sf_check_want_ = (want);                   \
        sf_test_check(sf_check_st_ == sf_check_want_, __FILE__, __LINE__,               \
                      "status %s, wanted %s (%s)", scanfuse_status_string(sf_check_st_), \
                      scanfuse_status_string(sf_check_want_), #st);                     \
    } while (0)

/* Prints "NAME: N passed, N failed" and returns 0 when nothing failed. */
int sf_test_finish(const char *name);

/* xoshiro256** seeded by splitmix64: deterministic across platforms. */
typedef struct sf_test_rng {
    uint64_t s[4];
} sf_test_rng;
void sf_test_rng_seed(sf_test_rng *r, uint64_t seed);
uint64_t sf_test_rng_next(sf_test_rng *r);
double sf_test_rng_uniform(sf_test_rng *r);               /* [0, 1) */
int64_t sf_test_rng_int(sf_test_rng *r, int64_t lo, int64_t hi); /* [lo, hi] */

/* Does the text contain the substring?  (NULL-safe.) */
bool sf_test_contains(const char *text, const char *needle);

/* Runs a shell command, captures stdout+stderr into out (NUL-terminated, truncated to
 * outlen), returns the exit status (or -1). */
int sf_test_run_command(const char *cmd, char *out, size_t outlen);

#endif
