// bench/cub_scan_ref.cu — the field's best single-pass GPU scan, measured beside a copy:
// CUB's DeviceScan (the CUDA toolkit's, the library under PyTorch's 1-D CUDA cumsum) on
// the issue's shapes, each timed against a device-to-device copy of the same bytes (read
// plus written) in the same process.  Rows of a 2-d tensor go through InclusiveSumByKey
// with the row index as the key (CUB has no batched scan); "acc f64" sums float32 in
// double through a transform iterator, the accumulation scanfuse uses.  Not part of the
// build: bench/cub_scan_ref.sh compiles it with nvcc where one is installed.
//   cub_scan_ref [--json FILE]    prints a table, appends one JSON object a case
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cuda_check.h"

static const int REPEAT = 20;

// Median of REPEAT timed runs of f (each bracketed by events on the default stream), and
// the back-to-back time a run (REPEAT runs between two events).
template <class F> static void time_it(F f, double *median_s, double *b2b_s) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    f(); /* warm-up: first-use costs, temporary storage already allocated by the caller */
    CK(cudaDeviceSynchronize());
    std::vector<float> ms(REPEAT);
    for (int i = 0; i < REPEAT; i++) {
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&ms[i], a, b));
    }
    std::sort(ms.begin(), ms.end());
    *median_s = ms[REPEAT / 2] * 1e-3;
    float tot;
    CK(cudaEventRecord(a));
    for (int i = 0; i < REPEAT; i++) f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&tot, a, b));
    *b2b_s = tot * 1e-3 / REPEAT;
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
}

static FILE *g_json;

// One case: scan (a callable taking temporary storage and its size) over `bytes` read
// plus written, against a copy of the same bytes.
template <class Scan> static void run_case(const char *name, size_t in_bytes, size_t out_bytes, Scan scan) {
    size_t tmp_bytes = 0;
    CK(scan(nullptr, tmp_bytes));
    void *tmp = nullptr;
    CK(cudaMalloc(&tmp, tmp_bytes > 0 ? tmp_bytes : 1));
    const size_t moved = in_bytes + out_bytes, half = moved / 2;
    void *c0 = nullptr, *c1 = nullptr;
    CK(cudaMalloc(&c0, half));
    CK(cudaMalloc(&c1, half));
    CK(cudaMemset(c0, 1, half));
    double sm, sb, cm, cb;
    time_it([&] { CK(scan(tmp, tmp_bytes)); }, &sm, &sb);
    time_it([&] { CK(cudaMemcpyAsync(c1, c0, half, cudaMemcpyDeviceToDevice)); }, &cm, &cb);
    const double gbps = moved / sm * 1e-9, copy_gbps = 2.0 * half / cm * 1e-9;
    printf("%-34s %9.1f %9.1f %8.0f %8.0f %7.3f %7.3f\n", name, sm * 1e6, sb * 1e6, gbps, copy_gbps, cm / sm, cb / sb);
    if (g_json)
        fprintf(g_json,
                "{\"case\": \"%s\", \"impl\": \"cub\", \"seconds\": %.9g, \"back_to_back_seconds\": %.9g, "
                "\"bytes\": %zu, \"gbps\": %.2f, \"copy_gbps\": %.2f, \"copy_seconds\": %.9g, "
                "\"copy_back_to_back_seconds\": %.9g, \"ratio\": %.6f, \"ratio_back_to_back\": %.6f}\n",
                name, sm, sb, moved, gbps, copy_gbps, cm, cb, cm / sm, cb / sb);
    CK(cudaFree(tmp));
    CK(cudaFree(c0));
    CK(cudaFree(c1));
}

struct to_f64 {
    __host__ __device__ double operator()(float x) const { return (double)x; }
};
struct to_i64 {
    __host__ __device__ long long operator()(int x) const { return (long long)x; }
};
struct row_of {
    long long len;
    __host__ __device__ long long operator()(long long i) const { return i / len; }
};

template <class T> static T *dev_alloc(size_t n) {
    T *p = nullptr;
    CK(cudaMalloc(&p, n * sizeof(T) + 16));
    CK(cudaMemset(p, 0, n * sizeof(T)));
    return p;
}

struct as_is {};

// 1-D: InclusiveSum of T into U, the input read as it is (a pointer, so CUB's vector
// loads) or through xf (a transform iterator: the sum's type from xf's result).
template <class T, class U, class Xf = as_is> static void one_d(const char *name, long long n, Xf xf = {}) {
    T *x = dev_alloc<T>(n);
    U *y = dev_alloc<U>(n);
    run_case(name, n * sizeof(T), n * sizeof(U), [&](void *tmp, size_t &tb) {
        if constexpr (std::is_same_v<Xf, as_is>)
            return cub::DeviceScan::InclusiveSum(tmp, tb, x, y, n);
        else
            return cub::DeviceScan::InclusiveSum(tmp, tb, thrust::make_transform_iterator(x, xf), y, n);
    });
    CK(cudaFree(x));
    CK(cudaFree(y));
}

// Rows of len steps: InclusiveSumByKey, the key of step i its row i / len.
template <class T> static void rows_of(const char *name, long long rows, long long len) {
    const long long n = rows * len;
    T *x = dev_alloc<T>(n);
    T *y = dev_alloc<T>(n);
    auto keys = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), row_of{len});
    run_case(name, n * sizeof(T), n * sizeof(T), [&](void *tmp, size_t &tb) {
        return cub::DeviceScan::InclusiveSumByKey(tmp, tb, keys, x, y, n);
    });
    CK(cudaFree(x));
    CK(cudaFree(y));
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--json") == 0) {
        if (!(g_json = fopen(argv[2], "a"))) {
            fprintf(stderr, "cub_scan_ref: cannot open %s: %s\n", argv[2], strerror(errno));
            return 1;
        }
    } else if (argc != 1) {
        fprintf(stderr, "usage: cub_scan_ref [--json FILE]\n");
        return 2;
    }
    int dev = 0;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    printf("CUB %d.%d.%d on %s\n", CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION, prop.name);
    printf("%-34s %9s %9s %8s %8s %7s %7s\n", "case", "time us", "b2b us", "GB/s", "copy", "ratio", "b2b");
    const long long n28 = 1ll << 28;
    one_d<float, float>("1d_f32_2p28", n28);
    one_d<long long, long long>("1d_i64_2p28", n28);
    one_d<__half, __half>("1d_f16_2p28", n28);
    one_d<__nv_bfloat16, __nv_bfloat16>("1d_bf16_2p28", n28);
    one_d<int, long long>("1d_i32_i64_2p28", n28, to_i64{});
    one_d<float, float>("1d_f32_2p28 acc f64", n28, to_f64{});
    rows_of<float>("f32_64x131072_d1", 64, 131072);
    rows_of<__half>("f16_32x2p20_d1", 32, 1 << 20);
    rows_of<float>("f32_4096x4096_d1", 4096, 4096);
    if (g_json) fclose(g_json);
    return 0;
}
