/* tools/host_path/host_path.c — scanfuse's own host time per scanfuse_run on the CUDA
 * device, with the driver replaced by stub_cuda.c (no GPU needed): a [2048, 128] float32
 * cumsum along dim 0 and dim 1, 200000 runs each after 1000 warm-up runs.  NVRTC is real
 * (the program is compiled as for sm_90).  run.sh builds and runs both. */
#define _POSIX_C_SOURCE 200809L
#include "scanfuse.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
    for (int dim = 0; dim < 2; dim++) {
        char text[128];
        snprintf(text, sizeof text, "input x: float32[2048, 128]\ny = cumsum(x, dim=%d)\noutput y\n", dim);
        scanfuse_fusion *f = scanfuse_parse(text, "host_path");
        scanfuse_options o;
        scanfuse_options_init(&o);
        o.device = SCANFUSE_DEVICE_CUDA;
        scanfuse_program *p = scanfuse_compile(f, &o);
        scanfuse_fusion_free(f);
        if (scanfuse_program_status(p) != SCANFUSE_OK) {
            printf("compile: %s\n", scanfuse_program_error(p));
            return 1;
        }
        int64_t shape[2] = {2048, 128}, strides[2] = {128, 1};
        void *xd = calloc(2048 * 128, 4), *yd = calloc(2048 * 128, 4);
        scanfuse_dl_tensor x = {0};
        x.data = xd;
        x.device.device_type = SCANFUSE_DL_CUDA;
        x.ndim = 2;
        x.dtype.code = 2; /* float */
        x.dtype.bits = 32;
        x.dtype.lanes = 1;
        x.shape = shape;
        x.strides = strides;
        scanfuse_dl_tensor y = x;
        y.data = yd;
        const int n = 200000;
        for (int i = 0; i < 1000 + n; i++) {
            static double t0;
            if (i == 1000) t0 = now();
            if (scanfuse_run(p, &x, 1, &y, 1) != SCANFUSE_OK) {
                printf("run: %s\n", scanfuse_program_error(p));
                return 1;
            }
            if (i == 1000 + n - 1)
                printf("cumsum [2048, 128] dim %d: %.3f us of host time per run\n", dim, (now() - t0) / n * 1e6);
        }
        scanfuse_program_free(p);
        free(xd);
        free(yd);
    }
    return 0;
}
