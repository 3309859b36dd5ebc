/* tools/cuda_emu/count.c — kernel definitions and launches of a program's CUDA plan for
 * sm_90 (no GPU): walks the plan as cuda_backend.c's run does (setup kernels, a fused or
 * small segment's kernels, else every node's, then the output copies; reshape copies
 * assumed not needed).  Build: gcc -std=c11 -Isrc -Iinclude tools/cuda_emu/count.c
 * build/libscanfuse.a -lm -ldl -lpthread; run: a.out PROGRAM.sf */
#include "cuda_codegen.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    scanfuse_fusion *f = scanfuse_parse_file(argv[1]);
    if (!f) { printf("parse failed\n"); return 1; }
    scanfuse_options o; scanfuse_options_init(&o); o.device = SCANFUSE_DEVICE_REFERENCE;
    scanfuse_program *prog = scanfuse_compile(f, &o);
    const sf_program *p = (const sf_program *)prog;
    sf_cuda_plan *pl; char msg[512];
    if (sf_cuda_plan_build(p, 90, 132, &pl, msg, sizeof msg) != SCANFUSE_OK) { printf("plan: %s\n", msg); return 1; }
    int defs = 0;
    for (char *s = pl->source; (s = strstr(s, "extern \"C\" __global__")); s++) defs++;
    const scanfuse_fusion *ff = p->fusion;
    int launches = 0;
    char *setup_done = calloc(ff->nnodes + 1, 1);
    for (int s = 0; s < p->nsegments; s++) {
        const sf_segment *seg = &p->segments[s];
        int segl = 0;
        for (int j = 0; j < seg->nnodes; j++) {
            int ni = seg->nodes[j];
            if (sf_node_is_setup(ff->nodes[ni].op)) {
                if (setup_done[ni]) continue;
                setup_done[ni] = 1;
                if (ff->nodes[ni].op == SF_OP_reshape) continue; /* contiguous: a view */
                for (int q = 0; q < pl->node_nk[ni]; q++) if (pl->k[pl->node_k0[ni] + q].node >= 0) segl++;
                continue;
            }
            if (!pl->seg_fused[s]) segl += pl->node_nk[ni];
        }
        if (pl->seg_fused[s]) segl += pl->seg_nk[s];
        if (pl->seg_fused[s] && pl->seg_nk[s] == 1 && pl->k[pl->seg_k0[s]].pre1 > 0) segl++; /* pre-kernel */
        printf("segment %d kind %d: %d launches%s\n", s, seg->kind, segl, pl->seg_fused[s] ? " (fused)" : "");
        launches += segl;
    }
    int copies = 0;
    for (int oi = 0; oi < ff->noutputs; oi++) {
        int32_t v = ff->outputs[oi];
        int first = oi;
        for (int q = 0; q < oi; q++) if (ff->outputs[q] == v) first = q;
        bool direct = pl->vkind[v] == SF_CUV_BUFFER && pl->direct_ok[v] && first == oi;
        if (pl->may_fail || !direct) copies++;
    }
    printf("%s: %d kernel definitions, %d launches + %d output copies = %d (may_fail %d)\n", argv[1], defs,
           launches, copies, launches + copies, pl->may_fail);
    free(setup_done);
    sf_cuda_plan_free(pl);
    scanfuse_program_free(prog);
    scanfuse_fusion_free(f);
    return 0;
}
