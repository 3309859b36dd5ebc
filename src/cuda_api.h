/*
 * cuda_api.h — the slice of the CUDA driver API and of NVRTC that the CUDA backend
 * uses, declared from their documented ABI, and the loader that resolves it at run time
 * (cuda_loader.c).  No CUDA header is ever included: the types below are the ABI's
 * (handles are opaque pointers, CUdevice is an int, CUdeviceptr a 64-bit integer, every
 * call returns an int status, 0 meaning success), and the functions are looked up with
 * dlopen/dlsym in libcuda.so.1 and libnvrtc.so.{13,12} on first use.
 *
 * Invariants:
 *  - sf_cuda_driver()/sf_cuda_nvrtc() load at most once per process (thread-safe); a
 *    failure is remembered with its message and returned on every later call;
 *  - versioned driver entry points are bound to the names the driver's header maps the
 *    plain names to (cuMemAlloc_v2, ...), so the signatures below are those of the
 *    current ABI;
 *  - a context obtained through sf_cuda_ctx_enter is current on the calling thread
 *    until the matching sf_cuda_ctx_leave.
 */
#ifndef SF_CUDA_API_H
#define SF_CUDA_API_H

#include "sf.h"

#include <stddef.h>

typedef int sf_CUresult;
typedef int sf_CUdevice;
typedef unsigned long long sf_CUdeviceptr;
typedef struct sf_CUctx_st *sf_CUcontext;
typedef struct sf_CUmod_st *sf_CUmodule;
typedef struct sf_CUfunc_st *sf_CUfunction;
typedef struct sf_CUstream_st *sf_CUstream;
typedef int sf_nvrtcResult;
typedef struct sf_nvrtcProgram_st *sf_nvrtcProgram;

/* Driver API enumerators used here (values from the documented ABI). */
enum {
    SF_CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    SF_CU_ATTR_MAX_THREADS_PER_MULTIPROCESSOR = 39,
    SF_CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
    SF_CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
    SF_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    SF_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    SF_CU_POINTER_ATTRIBUTE_CONTEXT = 1,
    SF_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    SF_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
};

/* cuLaunchKernelEx's configuration (CUlaunchConfig / CUlaunchAttribute of the ABI: the
 * attribute's id padded to 8 bytes, then a 64-byte value union; an int for the one
 * attribute used here, programmatic stream serialization). */
typedef struct sf_CUlaunchAttribute {
    int id;
    char pad_[4];
    union {
        char bytes[64];
        int programmatic_stream_serialization_allowed;
    } value;
} sf_CUlaunchAttribute;
typedef struct sf_CUlaunchConfig {
    unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
    struct sf_CUstream_st *stream;
    sf_CUlaunchAttribute *attrs;
    unsigned num_attrs;
} sf_CUlaunchConfig;

typedef struct sf_cuda_driver_api {
    sf_CUresult (*cuInit)(unsigned flags);
    sf_CUresult (*cuDriverGetVersion)(int *version);
    sf_CUresult (*cuDeviceGetCount)(int *count);
    sf_CUresult (*cuDeviceGet)(sf_CUdevice *dev, int ordinal);
    sf_CUresult (*cuDeviceGetAttribute)(int *value, int attrib, sf_CUdevice dev);
    sf_CUresult (*cuDeviceGetName)(char *name, int len, sf_CUdevice dev);
    sf_CUresult (*cuCtxGetCurrent)(sf_CUcontext *ctx);
    sf_CUresult (*cuCtxGetDevice)(sf_CUdevice *dev);
    sf_CUresult (*cuCtxPushCurrent)(sf_CUcontext ctx);
    sf_CUresult (*cuCtxPopCurrent)(sf_CUcontext *ctx);
    sf_CUresult (*cuCtxSynchronize)(void);
    sf_CUresult (*cuDevicePrimaryCtxRetain)(sf_CUcontext *ctx, sf_CUdevice dev);
    sf_CUresult (*cuModuleLoadData)(sf_CUmodule *mod, const void *image);
    sf_CUresult (*cuModuleUnload)(sf_CUmodule mod);
    sf_CUresult (*cuModuleGetFunction)(sf_CUfunction *fn, sf_CUmodule mod, const char *name);
    sf_CUresult (*cuFuncSetAttribute)(sf_CUfunction fn, int attrib, int value);
    sf_CUresult (*cuLaunchKernel)(sf_CUfunction fn, unsigned gx, unsigned gy, unsigned gz,
                                  unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                  sf_CUstream stream, void **params, void **extra);
    /* NULL when the driver lacks it (before CUDA 12): programmatic dependent launch
     * is then not used */
    sf_CUresult (*cuLaunchKernelEx)(const sf_CUlaunchConfig *config, sf_CUfunction fn, void **params,
                                    void **extra);
    sf_CUresult (*cuMemAlloc)(sf_CUdeviceptr *p, size_t bytes);
    sf_CUresult (*cuMemFree)(sf_CUdeviceptr p);
    sf_CUresult (*cuMemcpyHtoD)(sf_CUdeviceptr dst, const void *src, size_t bytes);
    sf_CUresult (*cuMemcpyDtoH)(void *dst, sf_CUdeviceptr src, size_t bytes);
    sf_CUresult (*cuMemcpyDtoD)(sf_CUdeviceptr dst, sf_CUdeviceptr src, size_t bytes);
    sf_CUresult (*cuMemcpyDtoHAsync)(void *dst, sf_CUdeviceptr src, size_t bytes,
                                     sf_CUstream stream);
    sf_CUresult (*cuMemsetD8)(sf_CUdeviceptr dst, unsigned char value, size_t n);
    sf_CUresult (*cuMemsetD32Async)(sf_CUdeviceptr dst, unsigned value, size_t n,
                                    sf_CUstream stream);
    sf_CUresult (*cuStreamSynchronize)(sf_CUstream stream);
    sf_CUresult (*cuStreamCreate)(sf_CUstream *stream, unsigned flags);
    sf_CUresult (*cuStreamDestroy)(sf_CUstream stream);
    sf_CUresult (*cuGetErrorString)(sf_CUresult err, const char **s);
    sf_CUresult (*cuGetErrorName)(sf_CUresult err, const char **s);
} sf_cuda_driver_api;

typedef struct sf_cuda_nvrtc_api {
    int major, minor; /* nvrtcVersion */
    sf_nvrtcResult (*nvrtcVersion)(int *major, int *minor);
    sf_nvrtcResult (*nvrtcCreateProgram)(sf_nvrtcProgram *prog, const char *src,
                                         const char *name, int nheaders,
                                         const char *const *headers,
                                         const char *const *include_names);
    sf_nvrtcResult (*nvrtcCompileProgram)(sf_nvrtcProgram prog, int nopts,
                                          const char *const *opts);
    sf_nvrtcResult (*nvrtcGetProgramLogSize)(sf_nvrtcProgram prog, size_t *size);
    sf_nvrtcResult (*nvrtcGetProgramLog)(sf_nvrtcProgram prog, char *log);
    sf_nvrtcResult (*nvrtcGetCUBINSize)(sf_nvrtcProgram prog, size_t *size);
    sf_nvrtcResult (*nvrtcGetCUBIN)(sf_nvrtcProgram prog, char *cubin);
    sf_nvrtcResult (*nvrtcGetPTXSize)(sf_nvrtcProgram prog, size_t *size);
    sf_nvrtcResult (*nvrtcGetPTX)(sf_nvrtcProgram prog, char *ptx);
    sf_nvrtcResult (*nvrtcDestroyProgram)(sf_nvrtcProgram *prog);
    const char *(*nvrtcGetErrorString)(sf_nvrtcResult r);
    sf_nvrtcResult (*nvrtcGetNumSupportedArchs)(int *n); /* may be NULL (old NVRTC) */
    sf_nvrtcResult (*nvrtcGetSupportedArchs)(int *archs); /* may be NULL */
} sf_cuda_nvrtc_api;

/* The loaded driver (cuInit done, at least one device), or NULL with a message saying
 * why ("no CUDA driver: libcuda.so.1: cannot open shared object file", "no CUDA
 * device", ...). */
const sf_cuda_driver_api *sf_cuda_driver(char *msg, size_t msglen);
/* The loaded NVRTC, or NULL with a message. */
const sf_cuda_nvrtc_api *sf_cuda_nvrtc(char *msg, size_t msglen);

/* "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)" into msg. */
void sf_cuda_errmsg(const sf_cuda_driver_api *d, sf_CUresult r, const char *what, char *msg,
                    size_t msglen);

/* The context a CUDA program runs in: the caller's current context when there is one,
 * else the primary context of device `device_id` (retained once per process and kept),
 * pushed for the duration. */
typedef struct sf_cuda_ctx {
    sf_CUcontext ctx;
    sf_CUdevice dev;
    bool pushed;
} sf_cuda_ctx;
scanfuse_status sf_cuda_ctx_enter(int device_id, sf_cuda_ctx *c, char *msg, size_t msglen);
void sf_cuda_ctx_leave(sf_cuda_ctx *c);

/* Properties of a device the code generator and the launcher need. */
typedef struct sf_cuda_devinfo {
    int arch;    /* 10 * major + minor, e.g. 90 */
    int sms;     /* multiprocessors */
    int max_threads_per_sm;
    char name[96];
} sf_cuda_devinfo;
scanfuse_status sf_cuda_device_info(sf_CUdevice dev, sf_cuda_devinfo *info, char *msg,
                                    size_t msglen);

#endif /* SF_CUDA_API_H */
