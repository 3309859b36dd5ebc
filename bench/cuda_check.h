// bench/cuda_check.h — CK(call): the standalone CUDA runtime benchmarks' error check
// (bench/cub_scan_ref.cu, bench/lag_scan_proto.cu): a failed call prints where and why
// and exits, since a benchmark that goes on after a failed call times nothing real.
#ifndef SF_BENCH_CUDA_CHECK_H
#define SF_BENCH_CUDA_CHECK_H
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

#endif
