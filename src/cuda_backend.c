/*
 * cuda_backend.c — the CUDA backend's entry in the backend table.
 *
 * The generated-kernel backend (NVRTC, dlopen'd libcuda) is the CUDA issue's work; until
 * it lands, compiling for SCANFUSE_DEVICE_CUDA answers SCANFUSE_ERROR_UNSUPPORTED with a
 * message that says so, rather than pretending.  The core never includes CUDA headers.
 */
#include "sf.h"

static scanfuse_status cuda_supports(const scanfuse_fusion *f, int node, char *msg, size_t msglen) {
    (void)f;
    (void)node;
    sf_msg(msg, msglen,
           "compile: the CUDA backend is not available in this build yet; use the cpu device");
    return SCANFUSE_ERROR_UNSUPPORTED;
}

static scanfuse_status cuda_compile(sf_program *p, char *msg, size_t msglen) {
    (void)p;
    sf_msg(msg, msglen,
           "compile: the CUDA backend is not available in this build yet; use the cpu device");
    return SCANFUSE_ERROR_UNSUPPORTED;
}

static scanfuse_status cuda_run(sf_program *p, const sf_view *inputs, const sf_view *outputs,
                                char *msg, size_t msglen) {
    (void)p;
    (void)inputs;
    (void)outputs;
    sf_msg(msg, msglen, "run: the CUDA backend is not available in this build yet");
    return SCANFUSE_ERROR_UNSUPPORTED;
}

const sf_backend sf_backend_cuda = {"cuda", cuda_supports, cuda_compile, cuda_run, NULL};
