/*
 * cpu_scan_avx512w.c — the AVX-512 scan kernels again ("avx512w"), with the row float
 * sum's 8 doubles on whole 512-bit registers instead of two 256-bit halves: fewer
 * shuffles, which is what Intel cores (one shuffle port) are short of.  cpu_scan.c
 * picks them on Intel CPUs with AVX-512, the halves ("avx512") on AMD's.  Every other
 * kernel is the same code as avx512; see cpu_scan_avx512.c and bench/NOTES.md
 * (session 40) for the measurements.
 */
#define SF_SCAN_AVX512_WIDE 1
#include "cpu_scan_avx512.c"
