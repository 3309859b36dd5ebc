/*
 * copy_stores.c — what one thread's stores cost on this machine: the same 2^27 float32
 * copied by glibc's memcpy, by an AVX-512 loop of ordinary stores, and by one of
 * streaming stores, plus a float32 -> double -> float chain with an add (the shape of a
 * row scan's loads and stores, without its network).  bench/NOTES.md session 40 entry
 * 12 reads the row scan's rate from DRAM against these.  x86-64 with AVX-512 only; not
 * built by CMake:
 *
 *   gcc -O2 -std=gnu11 bench/copy_stores.c -o /tmp/copy_stores && /tmp/copy_stores [ROUNDS]
 *
 * Prints a table, then one JSON object per round (GB/s counted as read + write).
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

__attribute__((target("avx512f"), noinline)) static void copy_ordinary(float *d, const float *s, long n) {
    for (long i = 0; i < n; i += 16) _mm512_storeu_ps(d + i, _mm512_loadu_ps(s + i));
}

__attribute__((target("avx512f"), noinline)) static void copy_streaming(float *d, const float *s, long n) {
    for (long i = 0; i < n; i += 16) _mm512_stream_ps(d + i, _mm512_loadu_ps(s + i));
    _mm_sfence();
}

/* loads widened to double, a running add, narrowed back: ordinary stores */
__attribute__((target("avx512f"), noinline)) static void convert_chain(float *d, const float *s, long n) {
    __m512d acc = _mm512_setzero_pd();
    for (long i = 0; i < n; i += 8) {
        __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(s + i));
        acc = _mm512_add_pd(acc, v);
        _mm256_storeu_ps(d + i, _mm512_cvtpd_ps(_mm512_add_pd(v, acc)));
    }
}

int main(int argc, char **argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 4;
    const long n = 1L << 27;
    float *s = aligned_alloc(64, (size_t)n * 4), *d = aligned_alloc(64, (size_t)n * 4);
    if (!s || !d) return 1;
    memset(s, 1, (size_t)n * 4);
    memset(d, 0, (size_t)n * 4);
    double gb[4][64];
    const char *names[4] = {"memcpy", "ordinary", "streaming", "convert_chain"};
    for (int r = 0; r < rounds && r < 64; r++) {
        for (int k = 0; k < 4; k++) {
            double t = now();
            if (k == 0) memcpy(d, s, (size_t)n * 4);
            else if (k == 1) copy_ordinary(d, s, n);
            else if (k == 2) copy_streaming(d, s, n);
            else convert_chain(d, s, n);
            gb[k][r] = 2.0 * (double)n * 4 / (now() - t) / 1e9;
        }
    }
    printf("%-14s", "round");
    for (int k = 0; k < 4; k++) printf("%14s", names[k]);
    printf("   (GB/s, read + write, 2^27 float32, one thread)\n");
    for (int r = 0; r < rounds && r < 64; r++) {
        printf("%-14d", r + 1);
        for (int k = 0; k < 4; k++) printf("%14.1f", gb[k][r]);
        printf("\n");
    }
    for (int r = 0; r < rounds && r < 64; r++)
        printf("{\"bench\": \"copy_stores\", \"round\": %d, \"bytes\": %ld, \"memcpy_gbps\": %.2f, "
               "\"ordinary_gbps\": %.2f, \"streaming_gbps\": %.2f, \"convert_chain_gbps\": %.2f}\n",
               r + 1, 2 * n * 4, gb[0][r], gb[1][r], gb[2][r], gb[3][r]);
    free(s);
    free(d);
    return 0;
}
