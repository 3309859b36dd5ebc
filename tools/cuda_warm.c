/*
 * cuda_warm.c — compiles the CUDA kernels of fusion files offline, for sm_90 on a
 * 132-multiprocessor H200 (the plan a run on that GPU makes), into the kernel cache
 * (SCANFUSE_CACHE_DIR), so a GPU machine that receives the cache starts warm.  No GPU
 * is needed: NVRTC alone.  SCANFUSE_CUDA_TUNE applies as in a run.
 *   gcc -std=c11 -Isrc -Iinclude tools/cuda_warm.c build/libscanfuse.a -lm -ldl -lpthread
 *   SCANFUSE_CACHE_DIR=build-cudacache ./a.out FILE.sf...
 * Exit status: the number of files that failed (parse, plan or NVRTC error).
 */
#include "sf.h"

#include <stdio.h>

int main(int argc, char **argv) {
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        scanfuse_fusion *f = scanfuse_parse_file(argv[i]);
        if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
            fprintf(stderr, "%s: %s\n", argv[i], f ? scanfuse_fusion_error(f) : "out of memory");
            scanfuse_fusion_free(f);
            failed++;
            continue;
        }
        /* the reference device compiles the fusion without touching a GPU; the CUDA plan
         * is then built from the compiled program as the CUDA backend would */
        scanfuse_options o;
        scanfuse_options_init(&o);
        o.device = SCANFUSE_DEVICE_REFERENCE;
        scanfuse_program *p = scanfuse_compile(f, &o);
        char msg[1024] = "";
        scanfuse_status st = SCANFUSE_ERROR_STATE;
        if (p && scanfuse_program_status(p) == SCANFUSE_OK)
            st = sf_cuda_compile_offline((const sf_program *)p, 90, NULL, msg, sizeof msg);
        else
            snprintf(msg, sizeof msg, "%s", p ? scanfuse_program_error(p) : "out of memory");
        if (st != SCANFUSE_OK) {
            fprintf(stderr, "%s: %s\n", argv[i], msg);
            failed++;
        }
        scanfuse_program_free(p);
        scanfuse_fusion_free(f);
    }
    return failed > 125 ? 125 : failed;
}
