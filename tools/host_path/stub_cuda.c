/* tools/host_path/stub_cuda.c — a stand-in for libcuda that accepts every call scanfuse
 * makes and does no device work (launches are counted, "device" memory is host memory),
 * so that the host side of a run (argument checks, planning state, launch arguments)
 * can be timed on a machine without a GPU: SCANFUSE_CUDA_DRIVER=path/to/this.so.
 * Reports sm_90 with 132 multiprocessors.  Not a test double for correctness. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
static int the_context = 1;
volatile long stub_launches;

CUresult cuInit(unsigned flags) { (void)flags; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int i) { (void)i; *d = 0; return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev;
    *v = attr == 75 ? 9 : attr == 76 ? 0 : attr == 16 ? 132 : 1024; /* CC major, minor, SMs */
    return 0;
}
CUresult cuDeviceGetName(char *s, int n, int dev) { (void)dev; strncpy(s, "stub", (size_t)n); return 0; }
CUresult cuCtxGetCurrent(void **c) { *c = &the_context; return 0; }
CUresult cuCtxGetDevice(int *d) { *d = 0; return 0; }
CUresult cuCtxPushCurrent_v2(void *c) { (void)c; return 0; }
CUresult cuCtxPopCurrent_v2(void **c) { if (c) *c = &the_context; return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = &the_context; return 0; }
CUresult cuModuleLoadData(void **m, const void *image) { (void)image; *m = &the_context; return 0; }
CUresult cuModuleUnload(void *m) { (void)m; return 0; }
CUresult cuModuleGetFunction(void **f, void *m, const char *name) { (void)m; (void)name; *f = &the_context; return 0; }
CUresult cuFuncSetAttribute(void *f, int attr, int v) { (void)f; (void)attr; (void)v; return 0; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
    (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)stream;
    (void)params; (void)extra;
    stub_launches++;
    return 0;
}
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) { *p = (uint64_t)(uintptr_t)calloc(1, n ? n : 1); return *p ? 0 : 2; }
CUresult cuMemFree_v2(uint64_t p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyDtoD_v2(uint64_t d, uint64_t s, size_t n) {
    memcpy((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
    return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *d, uint64_t s, size_t n, void *stream) {
    (void)stream;
    memcpy(d, (void *)(uintptr_t)s, n);
    return 0;
}
CUresult cuMemsetD8_v2(uint64_t d, unsigned char v, size_t n) { memset((void *)(uintptr_t)d, v, n); return 0; }
CUresult cuMemsetD32Async(uint64_t d, unsigned v, size_t n, void *stream) {
    (void)stream;
    for (size_t i = 0; i < n; i++) ((uint32_t *)(uintptr_t)d)[i] = v;
    return 0;
}
CUresult cuStreamSynchronize(void *stream) { (void)stream; return 0; }
CUresult cuGetErrorString(CUresult e, const char **s) { (void)e; *s = "stub"; return 0; }
CUresult cuGetErrorName(CUresult e, const char **s) { (void)e; *s = "stub"; return 0; }
