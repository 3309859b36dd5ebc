/* tools/cuda_emu/gen.c — the emulator's driver, part 1 (run.sh): plans a program, picks
 * its first SMALL kernel (or with EMU_SCAN=1 its first row or column scan kernel, run as
 * a grid of one block, which then takes every tile in turn; EMU_RED=1 its first
 * reduction kernel and the kernel combining its splits; EMU_ELEM=1 its first
 * element-wise kernel), writes the full CUDA source (src.cu), the parameter layout the
 * launcher would pack (launch.inc: every buffer contiguous), the block size (nt), random
 * inputs and the reference's outputs.
 * Usage: gen PROGRAM DIR [irange] [ties] [seed] */
#include "cuda_codegen.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }

static void wfile(const char *dir, const char *name, const void *p, size_t n) {
    char path[512]; snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb"); fwrite(p, 1, n, f); fclose(f);
}

/* The harness's float kind of a dtype (its NaN test): 2 float16, 3 bfloat16, 4 float32,
 * 8 float64, 0 not a float. */
static int float_kind(scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_FLOAT16: return 2;
    case SCANFUSE_BFLOAT16: return 3;
    case SCANFUSE_FLOAT32: return 4;
    case SCANFUSE_FLOAT64: return 8;
    default: return 0;
    }
}

static int32_t base_of(const scanfuse_fusion *f, int32_t v) {
    for (;;) {
        int p = f->values[v].producer;
        if (p < 0 || f->nodes[p].op != SF_OP_reshape) return v;
        v = f->nodes[p].in[0];
    }
}

/* The words of kernel K's sf_args (ptr, st in the iteration space of each operand,
 * aux, scratch, err, epoch, tile_base, flags, pad), every buffer contiguous. */
static void sf_args_words(FILE *fl, const scanfuse_fusion *f, const sf_cuda_kernel *K) {
    int64_t flags = 0;
    for (int op = 0; op < SF_CUDA_MAXOPS; op++)
        if (op < K->nops) fprintf(fl, "{W_PTR, %d, 0},\n", base_of(f, K->ops[op].value));
        else fprintf(fl, "{W_CONST, 0, 0},\n");
    for (int op = 0; op < SF_CUDA_MAXOPS; op++) {
        int64_t stv[8] = {0};
        if (op < K->nops) {
            const sf_value *fv = &f->values[K->ops[op].value];
            /* an operand of space 1 (a reduction's result) iterates over shape2 */
            const int kn = K->ops[op].space ? K->ndim2 : K->ndim;
            const int64_t *ks = K->ops[op].space ? K->shape2 : K->shape;
            int64_t cs[SF_MAX_DIMS], acc = 1, expect = 1;
            for (int d = fv->ndim - 1; d >= 0; d--) { cs[d] = acc; acc *= fv->shape[d]; }
            int lead = kn - fv->ndim;
            bool contig = true;
            if (K->ops[op].mode == SF_CUOP_OWN) { /* its own dims (a gather's source) */
                for (int d = 0; d < fv->ndim; d++) stv[d] = cs[d];
                flags |= (int64_t)1 << op;
                for (int d = 0; d < 8; d++) fprintf(fl, "{W_CONST, %lld, 0},\n", (long long)stv[d]);
                continue;
            }
            for (int d = kn - 1; d >= 0; d--) {
                int j = d - lead;
                stv[d] = (j < 0 || fv->shape[j] == 1) ? 0 : cs[j];
                if (ks[d] == 1) continue;
                contig = contig && stv[d] == expect;
                expect *= ks[d];
            }
            if (contig) flags |= (int64_t)1 << op;
        }
        for (int d = 0; d < 8; d++) fprintf(fl, "{W_CONST, %lld, 0},\n", (long long)stv[d]);
    }
    for (int d = 0; d < 8; d++) fprintf(fl, "{W_CONST, %lld, 0},\n", d == 2 ? (long long)K->aux[2] : 0ll);
    fprintf(fl, "{W_SCRATCH, %lld, 0},\n{W_ERR, %d, 0},\n{W_CONST, 0, 0},\n{W_CONST, 0, 0},\n{W_FLAGS, %lld, 0},\n{W_CONST, 0, 0},\n",
            (long long)K->scratch_off, K->err_slot, (long long)flags);
}

int main(int argc, char **argv) {
    const char *dir = argv[2];
    int64_t irange = argc > 3 ? atoll(argv[3]) : 0;
    int ties = argc > 4 ? atoi(argv[4]) : 0;
    if (argc > 5) rs ^= (uint64_t)atoll(argv[5]) * 0x2545F4914F6CDD1Dull;
    scanfuse_fusion *fu = scanfuse_parse_file(argv[1]);
    scanfuse_options o; scanfuse_options_init(&o); o.device = SCANFUSE_DEVICE_REFERENCE;
    scanfuse_program *prog = scanfuse_compile(fu, &o);
    const sf_program *p = (const sf_program *)prog;
    const scanfuse_fusion *f = p->fusion;
    sf_cuda_plan *pl; char msg[512];
    if (sf_cuda_plan_build(p, 90, 132, &pl, msg, sizeof msg) != SCANFUSE_OK) { printf("plan: %s\n", msg); return 1; }
    /* EMU_RED=1: a reduction kernel, and the kernel that combines its splits after it;
     * EMU_ELEM=1: an element-wise kernel of a segment (not an output's copy).  They take
     * sf_args, as the scans do, so "scan" below means an sf_args kernel. */
    const bool red = getenv("EMU_RED") && getenv("EMU_RED")[0] == '1';
    const bool elem = getenv("EMU_ELEM") && getenv("EMU_ELEM")[0] == '1';
    const bool scan = red || elem || (getenv("EMU_SCAN") && getenv("EMU_SCAN")[0] == '1');
    /* EMU_NTH=n: the n-th such kernel (default 1) */
    int nth = getenv("EMU_NTH") ? atoi(getenv("EMU_NTH")) : 1, ki = -1;
    for (int i = 0; i < pl->nkernels && ki < 0; i++) {
        const sf_cuda_kkind kd = pl->k[i].kind;
        if (red ? kd == SF_CUK_RED_BLOCK || kd == SF_CUK_RED_WARP || kd == SF_CUK_RED_THREAD
                : elem ? kd == SF_CUK_ELEM && pl->k[i].seg >= 0 && !pl->k[i].small_sub
                : scan ? kd == SF_CUK_SCAN_ROW || kd == SF_CUK_SCAN_COL : kd == SF_CUK_SMALL)
            if (--nth == 0) ki = i;
    }
    if (ki < 0) {
        printf(red ? "no reduction kernel\n" : elem ? "no element-wise kernel\n" : scan ? "no block scan kernel\n" : "no small kernel\n");
        return 2;
    }
    const sf_cuda_kernel *K = &pl->k[ki];
    const int fin = red && ki + 1 < pl->nkernels && pl->k[ki + 1].kind == SF_CUK_RED_FINISH ? ki + 1 : -1;
    if (fin >= 0 && pl->k[fin].block != K->block) { printf("finish kernel of another block size\n"); return 2; }
    char path[512]; snprintf(path, sizeof path, "%s/src.cu", dir);
    FILE *fs = fopen(path, "w"); fputs(pl->source, fs); fclose(fs);
    /* inputs */
    int ni = f->ninputs, no = f->noutputs;
    scanfuse_dl_tensor *tin = calloc(ni, sizeof *tin), *tout = calloc(no, sizeof *tout);
    for (int i = 0; i < ni; i++) {
        const sf_value *v = &f->values[f->inputs[i]];
        int64_t n = sf_value_numel(v); size_t es = scanfuse_dtype_size(v->dtype);
        void *buf = calloc(n ? n : 1, es);
        for (int64_t e = 0; e < n; e++) {
            double x; int64_t ix;
            static const double tv[] = {-2.0, -0.0, 0.0, 1.5, 3.0, NAN, INFINITY, -INFINITY};
            if (ties == 1) x = tv[rnd() % 8]; else x = ((double)(rnd() >> 11) / 9007199254740992.0) * 8 - 4;
            ix = irange > 0 ? (int64_t)(rnd() % (uint64_t)irange) : (int64_t)(rnd() % 41) - 20;
            if (ties == 2) x = (double)ix; /* integer-valued floats: float64 sums exact in double */
            if (ties == 3) { /* rare infinities and NaNs, some subnormals of float16 / bfloat16 */
                const uint64_t u = rnd() % 8192;
                if (u < 3) x = tv[5 + u];
                else if (u < 200) x *= u % 2 ? 0x1p-20 : 0x1p-130;
            }
            if (sf_dtype_is_float(v->dtype)) sf_store_f64(buf, e, v->dtype, x);
            else sf_store_i64(buf, e, v->dtype, ix);
        }
        tin[i].data = buf; tin[i].device.device_type = SCANFUSE_DL_CPU; tin[i].ndim = v->ndim;
        tin[i].dtype = scanfuse_dtype_to_dl(v->dtype); tin[i].shape = (int64_t *)v->shape;
        char nm[64]; snprintf(nm, sizeof nm, "v%d.in", f->inputs[i]);
        wfile(dir, nm, buf, (size_t)n * es);
    }
    for (int i = 0; i < no; i++) {
        const sf_value *v = &f->values[f->outputs[i]];
        tout[i].data = calloc(sf_value_numel(v) + 1, scanfuse_dtype_size(v->dtype));
        tout[i].device.device_type = SCANFUSE_DL_CPU; tout[i].ndim = v->ndim;
        tout[i].dtype = scanfuse_dtype_to_dl(v->dtype); tout[i].shape = (int64_t *)v->shape;
    }
    scanfuse_status st = scanfuse_run(prog, tin, ni, tout, no);
    printf("reference: %s %s\n", scanfuse_status_string(st), st ? scanfuse_program_error(prog) : "");
    for (int i = 0; i < no && st == SCANFUSE_OK; i++) {
        const sf_value *v = &f->values[f->outputs[i]];
        char nm[64]; snprintf(nm, sizeof nm, "v%d.ref", f->outputs[i]);
        wfile(dir, nm, tout[i].data, (size_t)sf_value_numel(v) * scanfuse_dtype_size(v->dtype));
    }
    /* EMU_MAG=1 (sum programs): the program run again on |x| gives each float64 output's
     * magnitude, the sum|x| that the harness's tolerance for float64 sums (summed in
     * double, so a few ulps from the reference) is measured by (v<id>.mag) */
    if (st == SCANFUSE_OK && getenv("EMU_MAG") && getenv("EMU_MAG")[0] == '1') {
        for (int i = 0; i < ni; i++) {
            const sf_value *v = &f->values[f->inputs[i]];
            if (!sf_dtype_is_float(v->dtype)) continue;
            for (int64_t e = 0; e < sf_value_numel(v); e++)
                sf_store_f64(tin[i].data, e, v->dtype, fabs(sf_load_f64(tin[i].data, e, v->dtype)));
        }
        if (scanfuse_run(prog, tin, ni, tout, no) != SCANFUSE_OK) { printf("magnitudes: %s\n", scanfuse_program_error(prog)); return 1; }
        for (int i = 0; i < no; i++) {
            const sf_value *v = &f->values[f->outputs[i]];
            if (v->dtype != SCANFUSE_FLOAT64) continue;
            char nm[64]; snprintf(nm, sizeof nm, "v%d.mag", f->outputs[i]);
            wfile(dir, nm, tout[i].data, (size_t)sf_value_numel(v) * 8);
        }
    }
    /* the parameter layout: W(kind, a, b) per word; buffers per base value */
    snprintf(path, sizeof path, "%s/launch.inc", dir);
    FILE *fl = fopen(path, "w");
    if (scan)
        fprintf(fl, "#define KERNEL k%d\n#define PARAM sf_args\n#define SCRATCH %lld\n#define REF_STATUS %d\n#define GRID 1\n%s",
                ki, (long long)pl->scratch_bytes, (int)st,
                elem ? "#define EMU_EXPECT_ERR 1\n" : red ? "" : "#define EMU_SCAN_K 1\n");
    else
        fprintf(fl, "#define KERNEL k%d\n#define PARAM SfP_k%d\n#define SCRATCH %lld\n#define REF_STATUS %d\n#define GRID %u\n",
                ki, ki, (long long)pl->scratch_bytes, (int)st, pl->k[ki].grid);
    snprintf(path, sizeof path, "%s/nt", dir);
    FILE *fn = fopen(path, "w");
    fprintf(fn, "%u\n", scan ? K->block : 1024u);
    fclose(fn);
    fprintf(fl, "static const Buf bufs[] = {\n");
    bool *used = calloc(f->nvalues, 1);
    for (int op = 0; scan && op < K->nops; op++) used[base_of(f, K->ops[op].value)] = true;
    for (int op = 0; fin >= 0 && op < pl->k[fin].nops; op++) used[base_of(f, pl->k[fin].ops[op].value)] = true;
    for (int q = 0; !scan && q < K->nsub; q++) {
        const sf_cuda_kernel *k = &pl->k[K->sub0 + q];
        if (K->sub0 + q == K->pre1 - 1) continue; /* the pre-kernel: not emulated */
        for (int op = 0; op < k->nops; op++) used[base_of(f, k->ops[op].value)] = true;
    }
    /* a SMALL kernel that is a part of its segment (cuda_small.c, sf_cg_small_parts) may
     * read what earlier kernels wrote: a program output not written by its own
     * sub-kernels is loaded from the reference's result, as an input, and not compared */
    bool *own = calloc(f->nvalues, 1);
    for (int q = 0; !scan && q < K->nsub; q++) {
        const sf_cuda_kernel *k = &pl->k[K->sub0 + q];
        if (K->sub0 + q == K->pre1 - 1) continue; /* the pre-kernel: not emulated */
        for (int op = 0; op < k->nops; op++)
            if (k->ops[op].out) own[base_of(f, k->ops[op].value)] = true;
    }
    for (int v = 0; v < f->nvalues; v++) {
        if (!used[v]) continue;
        const sf_value *fv = &f->values[v];
        bool isin = false, isout = false;
        for (int i = 0; i < ni; i++) isin |= f->inputs[i] == v;
        for (int i = 0; i < no; i++) isout |= f->outputs[i] == v;
        if (!scan && isout && !isin && !own[v] && fv->producer >= 0) {
            char src[600], dst[600];
            snprintf(src, sizeof src, "%s/v%d.ref", dir, v);
            snprintf(dst, sizeof dst, "%s/v%d.in", dir, v);
            if (rename(src, dst) != 0) { printf("no reference for v%d\n", v); return 3; }
            isin = true;
            isout = false;
        }
        if (fv->producer >= 0 && sf_node_is_setup(f->nodes[fv->producer].op)) { printf("unsupported view v%d\n", v); return 3; }
        fprintf(fl, "{%d, %lld, %d, %d, %d, %d},\n", v, (long long)sf_value_numel(fv), (int)scanfuse_dtype_size(fv->dtype),
                isin, isout, float_kind(fv->dtype));
    }
    fprintf(fl, "{-1, 0, 0, 0, 0, 0}};\nstatic const Word words[] = {\n");
    if (scan) sf_args_words(fl, f, K);
    for (int q = 0; !scan && q < K->nsub; q++) {
        const sf_cuda_kernel *k = &pl->k[K->sub0 + q];
        int64_t flags = 0;
        for (int op = 0; op < k->nops; op++) {
            int32_t v = k->ops[op].value, b = base_of(f, v);
            const sf_value *fv = &f->values[v];
            fprintf(fl, "{W_PTR, %d, 0},\n", b);
            int nd = sf_cuda_small_nd(f, k, op);
            int64_t cs[SF_MAX_DIMS], acc = 1;
            for (int d = fv->ndim - 1; d >= 0; d--) { cs[d] = acc; acc *= fv->shape[d]; }
            for (int d = 0; d < nd; d++) {
                int64_t s = 0;
                if (k->ops[op].mode == SF_CUOP_OWN) s = cs[d];
                else {
                    int lead = nd - fv->ndim, j = d - lead;
                    s = (j < 0 || fv->shape[j] == 1) ? 0 : cs[j];
                }
                fprintf(fl, "{W_CONST, %lld, 0},\n", (long long)s);
            }
            flags |= (int64_t)1 << op;
        }
        fprintf(fl, "{W_FLAGS, %lld, 0},\n{W_CONST, 0, 0},\n{W_CONST, 0, 0},\n{W_CONST, %lld, 0},\n", (long long)flags,
                (long long)k->aux[2]);
        fprintf(fl, "{W_ERR, %d, 0},\n{W_SCRATCH, %lld, 0},\n", k->err_slot, (long long)k->scratch_off);
    }
    fprintf(fl, "};\n");
    if (fin >= 0) { /* the finish kernel, run after it */
        fprintf(fl, "#define KERNEL2 k%d\nstatic const Word words2[] = {\n", fin);
        sf_args_words(fl, f, &pl->k[fin]);
        fprintf(fl, "};\n");
    }
    fclose(fl);
    return 0;
}
