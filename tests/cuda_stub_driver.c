/*
 * cuda_stub_driver.c — a stand-in for libcuda with no GPU behind it, loaded through
 * SCANFUSE_CUDA_DRIVER: one device of compute capability 9.0 with 132 multiprocessors;
 * "device memory" is host memory (so copies are real copies); modules and functions
 * are tokens; a launch runs nothing, it is counted and its kind recorded.  It lets CI,
 * which has no GPU, drive the CUDA backend's host side end to end (argument checks,
 * buffer planning, launches, the error-flag read-back) in test_cuda_stub.c, and lets
 * bench/launch_bench.c measure scanfuse's own host cost a run without the driver's.
 *
 * The test reads and sets the stub_* variables through dlsym on the same library.
 * Only the entry points cuda_loader.c and launch_bench.c bind are here; each has the
 * documented signature (the types of cuda_api.h).
 */
#include "cuda_api.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What the test reads: launches made, and for each of the first 64 whether it was a
 * programmatic dependent launch (cuLaunchKernelEx with programmatic stream
 * serialization allowed). */
unsigned long stub_launches;
int stub_launch_pdl[64];
/* What the test sets: when >= 0, device-to-host copies return this byte everywhere
 * instead of the source's bytes (a kernel that "flagged" a run-time error). */
int stub_dtoh_fill = -1;
/* Dynamic shared memory: the device's most a block (the test may lower it), and the
 * most any function has been allowed by cuFuncSetAttribute; a launch asking for more
 * than 48 KB fails unless allowed, as the driver's does. */
int stub_dyn_limit = 232448;
int stub_dyn_allowed;

static int ctx_token, mod_token, fn_token, stream_token, event_token;
static void *current;

sf_CUresult cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }
sf_CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
sf_CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
sf_CUresult cuDeviceGet(sf_CUdevice *d, int ordinal) {
    if (ordinal != 0) return 101; /* CUDA_ERROR_INVALID_DEVICE */
    *d = 0;
    return 0;
}
sf_CUresult cuDeviceGetAttribute(int *v, int attr, sf_CUdevice d) {
    (void)d;
    switch (attr) {
    case SF_CU_ATTR_MULTIPROCESSOR_COUNT: *v = 132; break;
    case SF_CU_ATTR_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case SF_CU_ATTR_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case SF_CU_ATTR_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case SF_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    default: *v = 0;
    }
    return 0;
}
sf_CUresult cuDeviceGetName(char *name, int len, sf_CUdevice d) {
    (void)d;
    if (len > 0) {
        strncpy(name, "scanfuse stub driver", (size_t)len - 1);
        name[len - 1] = '\0';
    }
    return 0;
}
sf_CUresult cuCtxGetCurrent(sf_CUcontext *c) { *c = current; return 0; }
sf_CUresult cuCtxSetCurrent(sf_CUcontext c) { current = c; return 0; }
sf_CUresult cuCtxGetDevice(sf_CUdevice *d) { *d = 0; return current ? 0 : 201; /* INVALID_CONTEXT */ }
/* the thread's context stack, as the driver keeps it (one thread here) */
static sf_CUcontext below[16];
static int depth;
sf_CUresult cuCtxPushCurrent_v2(sf_CUcontext c) {
    if (depth == 16) return 1;
    below[depth++] = current;
    current = c;
    return 0;
}
sf_CUresult cuCtxPopCurrent_v2(sf_CUcontext *c) {
    if (!current) return 201; /* INVALID_CONTEXT */
    if (c) *c = current;
    current = depth > 0 ? below[--depth] : NULL;
    return 0;
}
sf_CUresult cuCtxSynchronize(void) { return 0; }
sf_CUresult cuDevicePrimaryCtxRetain(sf_CUcontext *c, sf_CUdevice d) {
    (void)d;
    *c = (sf_CUcontext)(void *)&ctx_token;
    return 0;
}
sf_CUresult cuModuleLoadData(sf_CUmodule *m, const void *image) {
    *m = image ? (sf_CUmodule)(void *)&mod_token : NULL;
    return image ? 0 : 1;
}
sf_CUresult cuModuleUnload(sf_CUmodule m) { (void)m; return 0; }
sf_CUresult cuModuleGetFunction(sf_CUfunction *f, sf_CUmodule m, const char *name) {
    (void)m;
    *f = (sf_CUfunction)(void *)&fn_token;
    return name && name[0] ? 0 : 500; /* NOT_FOUND */
}
sf_CUresult cuFuncSetAttribute(sf_CUfunction f, int attr, int value) {
    if (!f) return 400; /* INVALID_HANDLE */
    if (attr == SF_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (value < 0 || value > stub_dyn_limit) return 1; /* INVALID_VALUE */
        if (value > stub_dyn_allowed) stub_dyn_allowed = value;
    }
    return 0;
}
static int smem_ok(unsigned smem) { return smem <= 49152 || (int)smem <= stub_dyn_allowed; }

static void record(int pdl) {
    if (stub_launches < 64) stub_launch_pdl[stub_launches] = pdl;
    stub_launches++;
}
sf_CUresult cuLaunchKernel(sf_CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                           unsigned bz, unsigned smem, sf_CUstream s, void **params, void **extra) {
    (void)s;
    (void)extra;
    (void)params;
    if (!f || !gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024 || !smem_ok(smem)) return 1;
    record(0);
    return 0;
}
sf_CUresult cuLaunchKernelEx(const sf_CUlaunchConfig *cfg, sf_CUfunction f, void **params, void **extra) {
    (void)extra;
    (void)params;
    if (!cfg || !f || !cfg->grid_x || !cfg->block_x || cfg->block_x > 1024 || !smem_ok(cfg->shared_bytes)) return 1;
    int pdl = 0;
    for (unsigned i = 0; i < cfg->num_attrs; i++)
        if (cfg->attrs[i].id == SF_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
            pdl = cfg->attrs[i].value.programmatic_stream_serialization_allowed != 0;
    record(pdl);
    return 0;
}

/* Device memory: 256-byte aligned host memory (the driver's alignment). */
sf_CUresult cuMemAlloc_v2(sf_CUdeviceptr *p, size_t bytes) {
    void *q = NULL;
    if (posix_memalign(&q, 256, bytes ? bytes : 256) != 0) return 2; /* OUT_OF_MEMORY */
    memset(q, 0xA5, bytes ? bytes : 256); /* not zeroed, like the driver's */
    *p = (sf_CUdeviceptr)(uintptr_t)q;
    return 0;
}
sf_CUresult cuMemFree_v2(sf_CUdeviceptr p) {
    free((void *)(uintptr_t)p);
    return 0;
}
static void dtoh(void *dst, sf_CUdeviceptr src, size_t n) {
    if (stub_dtoh_fill >= 0) memset(dst, stub_dtoh_fill, n);
    else memcpy(dst, (const void *)(uintptr_t)src, n);
}
sf_CUresult cuMemcpyHtoD_v2(sf_CUdeviceptr dst, const void *src, size_t n) {
    memcpy((void *)(uintptr_t)dst, src, n);
    return 0;
}
sf_CUresult cuMemcpyDtoH_v2(void *dst, sf_CUdeviceptr src, size_t n) {
    dtoh(dst, src, n);
    return 0;
}
sf_CUresult cuMemcpyDtoD_v2(sf_CUdeviceptr dst, sf_CUdeviceptr src, size_t n) {
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return 0;
}
sf_CUresult cuMemcpyDtoDAsync_v2(sf_CUdeviceptr dst, sf_CUdeviceptr src, size_t n, sf_CUstream s) {
    (void)s;
    return cuMemcpyDtoD_v2(dst, src, n);
}
sf_CUresult cuMemcpyDtoHAsync_v2(void *dst, sf_CUdeviceptr src, size_t n, sf_CUstream s) {
    (void)s;
    dtoh(dst, src, n);
    return 0;
}
sf_CUresult cuMemsetD8_v2(sf_CUdeviceptr dst, unsigned char v, size_t n) {
    memset((void *)(uintptr_t)dst, v, n);
    return 0;
}
sf_CUresult cuMemsetD32Async(sf_CUdeviceptr dst, unsigned v, size_t n, sf_CUstream s) {
    (void)s;
    uint32_t *q = (uint32_t *)(uintptr_t)dst;
    for (size_t i = 0; i < n; i++) q[i] = v;
    return 0;
}
sf_CUresult cuStreamCreate(sf_CUstream *s, unsigned flags) {
    (void)flags;
    *s = (sf_CUstream)(void *)&stream_token;
    return 0;
}
sf_CUresult cuStreamSynchronize(sf_CUstream s) { (void)s; return 0; }
sf_CUresult cuStreamDestroy_v2(sf_CUstream s) { return s ? 0 : 400; /* INVALID_HANDLE */ }
sf_CUresult cuEventCreate(void **e, unsigned flags) {
    (void)flags;
    *e = &event_token;
    return 0;
}
sf_CUresult cuEventRecord(void *e, sf_CUstream s) {
    (void)e;
    (void)s;
    return 0;
}
sf_CUresult cuEventSynchronize(void *e) { (void)e; return 0; }
sf_CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
    (void)a;
    (void)b;
    *ms = 0.0f;
    return 0;
}
sf_CUresult cuGetErrorString(sf_CUresult e, const char **s) {
    *s = e == 0 ? "no error" : "an error of the stub driver";
    return 0;
}
sf_CUresult cuGetErrorName(sf_CUresult e, const char **s) {
    *s = e == 0 ? "CUDA_SUCCESS" : "CUDA_ERROR_STUB";
    return 0;
}
