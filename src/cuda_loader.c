/*
 * cuda_loader.c — finds libcuda and libnvrtc at run time (dlopen on first use), binds the
 * entry points declared in cuda_api.h, chooses the context a program runs in, and offers
 * the small device-memory helpers that tests and tools use (sf_cuda_* in sf.h).
 *
 * Invariants:
 *  - nothing here links against CUDA: a machine without a driver or a GPU gets an
 *    ordinary SCANFUSE_ERROR_DEVICE status with a message that says which step failed;
 *  - each library is loaded once per process (pthread_once); the outcome (the table or
 *    the failure message) is immutable afterwards, so readers need no lock;
 *  - a primary context is retained at most once per device and never released: device
 *    memory and modules created in it stay valid for the life of the process;
 *  - every helper leaves the calling thread's current context as it found it.
 */
#include "cuda_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------ */
/* Symbol binding                                                                  */
/* ------------------------------------------------------------------------------ */

/* dlsym into a function pointer of any type, without an object-to-function cast. */
static bool bind_sym(void *lib, const char *name, void *fnptr_addr, size_t fnptr_size) {
    void *sym = dlsym(lib, name);
    if (!sym) return false;
    memcpy(fnptr_addr, &sym, fnptr_size);
    return true;
}
#define BIND(lib, tbl, field, name, missing)                                            \
    do {                                                                                \
        if (!bind_sym(lib, name, &(tbl)->field, sizeof((tbl)->field)) && !(missing))    \
            (missing) = name;                                                           \
    } while (0)

/* ------------------------------------------------------------------------------ */
/* The driver                                                                      */
/* ------------------------------------------------------------------------------ */

static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static sf_cuda_driver_api drv;
static bool drv_ok;
static char drv_msg[SF_ERR_LEN];

void sf_cuda_errmsg(const sf_cuda_driver_api *d, sf_CUresult r, const char *what, char *msg,
                    size_t msglen) {
    const char *name = NULL, *desc = NULL;
    if (d && d->cuGetErrorName) d->cuGetErrorName(r, &name);
    if (d && d->cuGetErrorString) d->cuGetErrorString(r, &desc);
    sf_msg(msg, msglen, "cuda: %s failed: %s (%s)", what, name ? name : "CUDA error",
           desc ? desc : "no description");
}

static void drv_load(void) {
    const char *env = getenv("SCANFUSE_CUDA_DRIVER");
    const char *names[] = {env && env[0] ? env : "libcuda.so.1", "libcuda.so", NULL};
    void *lib = NULL;
    const char *err = "not found";
    for (int i = 0; names[i] && !lib; i++) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib) err = dlerror();
    }
    if (!lib) {
        sf_msg(drv_msg, sizeof drv_msg, "no CUDA driver: %s", err ? err : "libcuda.so.1 not found");
        return;
    }
    const char *missing = NULL;
    sf_cuda_driver_api *t = &drv;
    BIND(lib, t, cuInit, "cuInit", missing);
    BIND(lib, t, cuDriverGetVersion, "cuDriverGetVersion", missing);
    BIND(lib, t, cuDeviceGetCount, "cuDeviceGetCount", missing);
    BIND(lib, t, cuDeviceGet, "cuDeviceGet", missing);
    BIND(lib, t, cuDeviceGetAttribute, "cuDeviceGetAttribute", missing);
    BIND(lib, t, cuDeviceGetName, "cuDeviceGetName", missing);
    BIND(lib, t, cuCtxGetCurrent, "cuCtxGetCurrent", missing);
    BIND(lib, t, cuCtxGetDevice, "cuCtxGetDevice", missing);
    BIND(lib, t, cuCtxPushCurrent, "cuCtxPushCurrent_v2", missing);
    BIND(lib, t, cuCtxPopCurrent, "cuCtxPopCurrent_v2", missing);
    BIND(lib, t, cuCtxSynchronize, "cuCtxSynchronize", missing);
    BIND(lib, t, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
    BIND(lib, t, cuModuleLoadData, "cuModuleLoadData", missing);
    BIND(lib, t, cuModuleUnload, "cuModuleUnload", missing);
    BIND(lib, t, cuModuleGetFunction, "cuModuleGetFunction", missing);
    BIND(lib, t, cuFuncSetAttribute, "cuFuncSetAttribute", missing);
    BIND(lib, t, cuLaunchKernel, "cuLaunchKernel", missing);
    BIND(lib, t, cuMemAlloc, "cuMemAlloc_v2", missing);
    BIND(lib, t, cuMemFree, "cuMemFree_v2", missing);
    BIND(lib, t, cuMemcpyHtoD, "cuMemcpyHtoD_v2", missing);
    BIND(lib, t, cuMemcpyDtoH, "cuMemcpyDtoH_v2", missing);
    BIND(lib, t, cuMemcpyDtoD, "cuMemcpyDtoD_v2", missing);
    BIND(lib, t, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", missing);
    BIND(lib, t, cuMemsetD8, "cuMemsetD8_v2", missing);
    BIND(lib, t, cuMemsetD32Async, "cuMemsetD32Async", missing);
    BIND(lib, t, cuStreamSynchronize, "cuStreamSynchronize", missing);
    BIND(lib, t, cuStreamCreate, "cuStreamCreate", missing);
    BIND(lib, t, cuStreamDestroy, "cuStreamDestroy_v2", missing);
    BIND(lib, t, cuGetErrorString, "cuGetErrorString", missing);
    BIND(lib, t, cuGetErrorName, "cuGetErrorName", missing);
    if (missing) {
        sf_msg(drv_msg, sizeof drv_msg, "CUDA driver too old: %s not found in libcuda", missing);
        return;
    }
    if (!bind_sym(lib, "cuLaunchKernelEx", &drv.cuLaunchKernelEx, sizeof drv.cuLaunchKernelEx))
        drv.cuLaunchKernelEx = NULL; /* optional */
    sf_CUresult r = drv.cuInit(0);
    if (r != 0) {
        char m[SF_ERR_LEN];
        sf_cuda_errmsg(&drv, r, "cuInit", m, sizeof m);
        sf_msg(drv_msg, sizeof drv_msg, "no usable CUDA driver or GPU (%s)", m);
        return;
    }
    int n = 0;
    r = drv.cuDeviceGetCount(&n);
    if (r != 0 || n <= 0) {
        sf_msg(drv_msg, sizeof drv_msg, "no CUDA device (the driver reports %d)", n);
        return;
    }
    drv_ok = true;
}

const sf_cuda_driver_api *sf_cuda_driver(char *msg, size_t msglen) {
    pthread_once(&drv_once, drv_load);
    if (!drv_ok) {
        sf_msg(msg, msglen, "%s", drv_msg);
        return NULL;
    }
    return &drv;
}

/* ------------------------------------------------------------------------------ */
/* NVRTC                                                                           */
/* ------------------------------------------------------------------------------ */

static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;
static sf_cuda_nvrtc_api nv;
static bool nv_ok;
static char nv_msg[SF_ERR_LEN];

static void nvrtc_load(void) {
    const char *env = getenv("SCANFUSE_NVRTC");
    char cand[12][512];
    int nc = 0;
    if (env && env[0]) snprintf(cand[nc++], sizeof cand[0], "%s", env);
    const char *sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    for (int i = 0; i < 3; i++) snprintf(cand[nc++], sizeof cand[0], "%s", sonames[i]);
    const char *home = getenv("CUDA_HOME");
    if (!home || !home[0]) home = getenv("CUDA_PATH");
    const char *dirs[] = {home && home[0] ? home : NULL, "/usr/local/cuda"};
    for (int d = 0; d < 2; d++) {
        if (!dirs[d]) continue;
        snprintf(cand[nc++], sizeof cand[0], "%s/lib64/libnvrtc.so.13", dirs[d]);
        snprintf(cand[nc++], sizeof cand[0], "%s/lib64/libnvrtc.so.12", dirs[d]);
        snprintf(cand[nc++], sizeof cand[0], "%s/lib64/libnvrtc.so", dirs[d]);
    }
    void *lib = NULL;
    const char *err = NULL;
    for (int i = 0; i < nc && !lib; i++) {
        lib = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib && !err) err = dlerror();
    }
    if (!lib) {
        sf_msg(nv_msg, sizeof nv_msg, "NVRTC not found (libnvrtc.so.13/.12; set SCANFUSE_NVRTC): %s",
               err ? err : "no candidate");
        return;
    }
    const char *missing = NULL;
    sf_cuda_nvrtc_api *t = &nv;
    BIND(lib, t, nvrtcVersion, "nvrtcVersion", missing);
    BIND(lib, t, nvrtcCreateProgram, "nvrtcCreateProgram", missing);
    BIND(lib, t, nvrtcCompileProgram, "nvrtcCompileProgram", missing);
    BIND(lib, t, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", missing);
    BIND(lib, t, nvrtcGetProgramLog, "nvrtcGetProgramLog", missing);
    BIND(lib, t, nvrtcGetPTXSize, "nvrtcGetPTXSize", missing);
    BIND(lib, t, nvrtcGetPTX, "nvrtcGetPTX", missing);
    BIND(lib, t, nvrtcDestroyProgram, "nvrtcDestroyProgram", missing);
    BIND(lib, t, nvrtcGetErrorString, "nvrtcGetErrorString", missing);
    if (missing) {
        sf_msg(nv_msg, sizeof nv_msg, "NVRTC too old: %s not found", missing);
        return;
    }
    const char *opt = NULL; /* optional entry points */
    BIND(lib, t, nvrtcGetCUBINSize, "nvrtcGetCUBINSize", opt);
    BIND(lib, t, nvrtcGetCUBIN, "nvrtcGetCUBIN", opt);
    BIND(lib, t, nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", opt);
    BIND(lib, t, nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", opt);
    (void)opt;
    if (nv.nvrtcVersion(&nv.major, &nv.minor) != 0) {
        sf_msg(nv_msg, sizeof nv_msg, "NVRTC: nvrtcVersion failed");
        return;
    }
    nv_ok = true;
}

const sf_cuda_nvrtc_api *sf_cuda_nvrtc(char *msg, size_t msglen) {
    pthread_once(&nvrtc_once, nvrtc_load);
    if (!nv_ok) {
        sf_msg(msg, msglen, "%s", nv_msg);
        return NULL;
    }
    return &nv;
}

/* ------------------------------------------------------------------------------ */
/* Contexts                                                                        */
/* ------------------------------------------------------------------------------ */

#define MAX_DEVICES 64
static pthread_mutex_t prim_lock = PTHREAD_MUTEX_INITIALIZER;
static sf_CUcontext prim_ctx[MAX_DEVICES];

scanfuse_status sf_cuda_ctx_enter(int device_id, sf_cuda_ctx *c, char *msg, size_t msglen) {
    memset(c, 0, sizeof *c);
    const sf_cuda_driver_api *d = sf_cuda_driver(msg, msglen);
    if (!d) return SCANFUSE_ERROR_DEVICE;
    sf_CUcontext cur = NULL;
    sf_CUresult r = d->cuCtxGetCurrent(&cur);
    if (r != 0) {
        sf_cuda_errmsg(d, r, "cuCtxGetCurrent", msg, msglen);
        return SCANFUSE_ERROR_DEVICE;
    }
    if (cur) {
        c->ctx = cur;
        r = d->cuCtxGetDevice(&c->dev);
        if (r != 0) {
            sf_cuda_errmsg(d, r, "cuCtxGetDevice", msg, msglen);
            return SCANFUSE_ERROR_DEVICE;
        }
        return SCANFUSE_OK;
    }
    int n = 0;
    d->cuDeviceGetCount(&n);
    if (device_id < 0 || device_id >= n || device_id >= MAX_DEVICES) {
        sf_msg(msg, msglen, "cuda: device %d does not exist (%d device%s)", device_id, n,
               n == 1 ? "" : "s");
        return SCANFUSE_ERROR_DEVICE;
    }
    r = d->cuDeviceGet(&c->dev, device_id);
    if (r != 0) {
        sf_cuda_errmsg(d, r, "cuDeviceGet", msg, msglen);
        return SCANFUSE_ERROR_DEVICE;
    }
    pthread_mutex_lock(&prim_lock);
    if (!prim_ctx[device_id]) r = d->cuDevicePrimaryCtxRetain(&prim_ctx[device_id], c->dev);
    sf_CUcontext pc = prim_ctx[device_id];
    pthread_mutex_unlock(&prim_lock);
    if (r != 0 || !pc) {
        sf_cuda_errmsg(d, r, "cuDevicePrimaryCtxRetain", msg, msglen);
        return SCANFUSE_ERROR_DEVICE;
    }
    r = d->cuCtxPushCurrent(pc);
    if (r != 0) {
        sf_cuda_errmsg(d, r, "cuCtxPushCurrent", msg, msglen);
        return SCANFUSE_ERROR_DEVICE;
    }
    c->ctx = pc;
    c->pushed = true;
    return SCANFUSE_OK;
}

void sf_cuda_ctx_leave(sf_cuda_ctx *c) {
    if (!c->pushed) return;
    const sf_cuda_driver_api *d = sf_cuda_driver(NULL, 0);
    sf_CUcontext popped = NULL;
    if (d) d->cuCtxPopCurrent(&popped);
    c->pushed = false;
}

scanfuse_status sf_cuda_device_info(sf_CUdevice dev, sf_cuda_devinfo *info, char *msg,
                                    size_t msglen) {
    memset(info, 0, sizeof *info);
    const sf_cuda_driver_api *d = sf_cuda_driver(msg, msglen);
    if (!d) return SCANFUSE_ERROR_DEVICE;
    int major = 0, minor = 0;
    sf_CUresult r = d->cuDeviceGetAttribute(&major, SF_CU_ATTR_COMPUTE_CAPABILITY_MAJOR, dev);
    if (r == 0) r = d->cuDeviceGetAttribute(&minor, SF_CU_ATTR_COMPUTE_CAPABILITY_MINOR, dev);
    if (r == 0) r = d->cuDeviceGetAttribute(&info->sms, SF_CU_ATTR_MULTIPROCESSOR_COUNT, dev);
    if (r == 0)
        r = d->cuDeviceGetAttribute(&info->max_threads_per_sm,
                                    SF_CU_ATTR_MAX_THREADS_PER_MULTIPROCESSOR, dev);
    if (r != 0) {
        sf_cuda_errmsg(d, r, "cuDeviceGetAttribute", msg, msglen);
        return SCANFUSE_ERROR_DEVICE;
    }
    info->arch = 10 * major + minor;
    if (d->cuDeviceGetName(info->name, (int)sizeof info->name, dev) != 0)
        snprintf(info->name, sizeof info->name, "CUDA device");
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Helpers exported through sf.h (tests, tools)                                     */
/* ------------------------------------------------------------------------------ */

scanfuse_status sf_cuda_probe(int device_id, char *msg, size_t msglen) {
    sf_cuda_ctx c;
    scanfuse_status st = sf_cuda_ctx_enter(device_id, &c, msg, msglen);
    if (st != SCANFUSE_OK) return st;
    sf_cuda_devinfo info;
    st = sf_cuda_device_info(c.dev, &info, msg, msglen);
    sf_cuda_ctx_leave(&c);
    if (st == SCANFUSE_OK)
        sf_msg(msg, msglen, "%s, sm_%d, %d multiprocessors", info.name, info.arch, info.sms);
    return st;
}

scanfuse_status sf_cuda_nvrtc_probe(char *msg, size_t msglen) {
    const sf_cuda_nvrtc_api *n = sf_cuda_nvrtc(msg, msglen);
    if (!n) return SCANFUSE_ERROR_DEVICE;
    sf_msg(msg, msglen, "NVRTC %d.%d", n->major, n->minor);
    return SCANFUSE_OK;
}

scanfuse_status sf_cuda_alloc(int device_id, size_t bytes, void **dptr, char *msg,
                              size_t msglen) {
    *dptr = NULL;
    sf_cuda_ctx c;
    scanfuse_status st = sf_cuda_ctx_enter(device_id, &c, msg, msglen);
    if (st != SCANFUSE_OK) return st;
    const sf_cuda_driver_api *d = sf_cuda_driver(NULL, 0);
    sf_CUdeviceptr p = 0;
    sf_CUresult r = d->cuMemAlloc(&p, bytes ? bytes : 1);
    sf_cuda_ctx_leave(&c);
    if (r != 0) {
        sf_cuda_errmsg(d, r, "cuMemAlloc", msg, msglen);
        return SCANFUSE_ERROR_MEMORY;
    }
    *dptr = (void *)(uintptr_t)p;
    return SCANFUSE_OK;
}

void sf_cuda_free(int device_id, void *dptr) {
    if (!dptr) return;
    sf_cuda_ctx c;
    if (sf_cuda_ctx_enter(device_id, &c, NULL, 0) != SCANFUSE_OK) return;
    const sf_cuda_driver_api *d = sf_cuda_driver(NULL, 0);
    d->cuMemFree((sf_CUdeviceptr)(uintptr_t)dptr);
    sf_cuda_ctx_leave(&c);
}

/* The synchronous copies and fills: one call of the driver inside the device's context. */
typedef enum { XFER_TO_DEVICE, XFER_TO_HOST, XFER_ON_DEVICE, XFER_FILL } xfer_kind;

static scanfuse_status xfer(int device_id, xfer_kind kind, void *dst, const void *src, int byte,
                            size_t bytes, char *msg, size_t msglen) {
    if (bytes == 0) return SCANFUSE_OK;
    sf_cuda_ctx c;
    scanfuse_status st = sf_cuda_ctx_enter(device_id, &c, msg, msglen);
    if (st != SCANFUSE_OK) return st;
    const sf_cuda_driver_api *d = sf_cuda_driver(NULL, 0);
    sf_CUdeviceptr ddst = (sf_CUdeviceptr)(uintptr_t)dst, dsrc = (sf_CUdeviceptr)(uintptr_t)src;
    sf_CUresult r = 0;
    const char *what = "";
    switch (kind) {
    case XFER_TO_DEVICE:
        what = "cuMemcpyHtoD";
        r = d->cuMemcpyHtoD(ddst, src, bytes);
        break;
    case XFER_TO_HOST:
        what = "cuMemcpyDtoH";
        r = d->cuMemcpyDtoH(dst, dsrc, bytes);
        break;
    case XFER_ON_DEVICE:
        what = "cuMemcpyDtoD";
        r = d->cuMemcpyDtoD(ddst, dsrc, bytes);
        break;
    case XFER_FILL:
        what = "cuMemsetD8";
        r = d->cuMemsetD8(ddst, (unsigned char)byte, bytes);
        break;
    }
    sf_cuda_ctx_leave(&c);
    if (r != 0) {
        sf_cuda_errmsg(d, r, what, msg, msglen);
        return SCANFUSE_ERROR_DEVICE;
    }
    return SCANFUSE_OK;
}

scanfuse_status sf_cuda_copy_to_device(int device_id, void *dst, const void *src, size_t bytes,
                                       char *msg, size_t msglen) {
    return xfer(device_id, XFER_TO_DEVICE, dst, src, 0, bytes, msg, msglen);
}

scanfuse_status sf_cuda_copy_to_host(int device_id, void *dst, const void *src, size_t bytes,
                                     char *msg, size_t msglen) {
    return xfer(device_id, XFER_TO_HOST, dst, src, 0, bytes, msg, msglen);
}

scanfuse_status sf_cuda_copy_on_device(int device_id, void *dst, const void *src, size_t bytes,
                                       char *msg, size_t msglen) {
    return xfer(device_id, XFER_ON_DEVICE, dst, src, 0, bytes, msg, msglen);
}

scanfuse_status sf_cuda_memset(int device_id, void *dst, int byte, size_t bytes, char *msg,
                               size_t msglen) {
    return xfer(device_id, XFER_FILL, dst, NULL, byte, bytes, msg, msglen);
}

scanfuse_status sf_cuda_stream_create(int device_id, void **stream, char *msg, size_t msglen) {
    *stream = NULL;
    sf_cuda_ctx c;
    scanfuse_status st = sf_cuda_ctx_enter(device_id, &c, msg, msglen);
    if (st != SCANFUSE_OK) return st;
    const sf_cuda_driver_api *d = sf_cuda_driver(NULL, 0);
    sf_CUstream s = NULL;
    sf_CUresult r = d->cuStreamCreate(&s, 1 /* CU_STREAM_NON_BLOCKING */);
    sf_cuda_ctx_leave(&c);
    if (r != 0) {
        sf_cuda_errmsg(d, r, "cuStreamCreate", msg, msglen);
        return SCANFUSE_ERROR_DEVICE;
    }
    *stream = s;
    return SCANFUSE_OK;
}

void sf_cuda_stream_destroy(int device_id, void *stream) {
    if (!stream) return;
    sf_cuda_ctx c;
    if (sf_cuda_ctx_enter(device_id, &c, NULL, 0) != SCANFUSE_OK) return;
    sf_cuda_driver(NULL, 0)->cuStreamDestroy((sf_CUstream)stream);
    sf_cuda_ctx_leave(&c);
}

scanfuse_status sf_cuda_synchronize(int device_id, char *msg, size_t msglen) {
    sf_cuda_ctx c;
    scanfuse_status st = sf_cuda_ctx_enter(device_id, &c, msg, msglen);
    if (st != SCANFUSE_OK) return st;
    const sf_cuda_driver_api *d = sf_cuda_driver(NULL, 0);
    sf_CUresult r = d->cuCtxSynchronize();
    sf_cuda_ctx_leave(&c);
    if (r != 0) {
        sf_cuda_errmsg(d, r, "cuCtxSynchronize", msg, msglen);
        return SCANFUSE_ERROR_DEVICE;
    }
    return SCANFUSE_OK;
}
