// tools/cuda_emu/harness.cpp — the emulator, part 2 (run.sh): the generated source
// (kernel.inc) and layout (launch.inc) compiled for the CPU; fills the parameter, runs the
// SMALL kernel as one block, prints set error slots, compares outputs and canaries.
#include "shim.h"
#include "kernel.inc"
struct Buf { int v; long long n; int es, in, out, fsz; }; /* fsz: 2 float16, 3 bfloat16, 4 float32, 8 float64, 0 not a float */
static bool is_nan(int fsz, const char *p) {
    uint16_t h; uint32_t f; uint64_t d;
    switch (fsz) {
    case 2: memcpy(&h, p, 2); return (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0;
    case 3: memcpy(&h, p, 2); return (h & 0x7F80u) == 0x7F80u && (h & 0x007Fu) != 0;
    case 4: memcpy(&f, p, 4); return (f & 0x7F800000u) == 0x7F800000u && (f & 0x007FFFFFu) != 0;
    case 8: memcpy(&d, p, 8); return (d & 0x7FF0000000000000ull) == 0x7FF0000000000000ull && (d & 0x000FFFFFFFFFFFFFull) != 0;
    default: return false;
    }
}
enum { W_PTR, W_CONST, W_FLAGS, W_ERR, W_SCRATCH };
struct Word { int kind; long long a, b; };
#include "launch.inc"
static PARAM g_P;
static void body(void) { KERNEL(g_P); }
#ifdef KERNEL2 /* a reduction's finish kernel (gen.c, EMU_RED=1): one block after it */
static PARAM g_P2;
static void body2(void) { KERNEL2(g_P2); }
#endif
/* A parameter from its layout: buffers, scratch and error slots placed. */
static bool fill_param(const Word *words, int nw, void *const *mem, char *scratch, bool noflags, PARAM *P) {
    if (nw != (int)(sizeof(PARAM) / 8)) { fprintf(stderr, "param size %d words, layout %d\n", (int)(sizeof(PARAM) / 8), nw); return false; }
    for (int i = 0; i < nw; i++) {
        const Word &w = words[i];
        uint64_t x = 0;
        if (w.kind == W_PTR) x = (uint64_t)(uintptr_t)mem[w.a];
        else if (w.kind == W_CONST) x = (uint64_t)w.a;
        else if (w.kind == W_FLAGS) x = noflags ? 0 : (uint64_t)w.a;
        else if (w.kind == W_ERR) x = (uint64_t)(uintptr_t)scratch + (w.a >= 0 ? 16 * (uint64_t)w.a : 0);
        else x = (uint64_t)(uintptr_t)scratch + (uint64_t)w.a;
        ((uint64_t *)P)[i] = x; /* the parameter as words (a SMALL kernel's or sf_args) */
    }
    return true;
}
int main(int argc, char **argv) {
    const char *dir = argv[1];
    bool noflags = argc > 2 && atoi(argv[2]);
    static void *mem[100000];
    for (const Buf *b = bufs; b->v >= 0; b++) {
        size_t n = (size_t)b->n * b->es;
        char *m = (char *)malloc(n + 64);
        memset(m, 0xA5, n + 64);  /* garbage where nothing is written yet; canary after */
        if (b->in) { char p[600]; snprintf(p, sizeof p, "%s/v%d.in", dir, b->v); FILE *f = fopen(p, "rb"); if (fread(m, 1, n, f) != n) return 9; fclose(f); }
        mem[b->v] = m;
    }
    char *scratch = (char *)calloc(SCRATCH + 64, 1);
    int nw = (int)(sizeof words / sizeof words[0]);
    if (!fill_param(words, nw, mem, scratch, noflags, &g_P)) return 8;
#ifdef KERNEL2
    if (!fill_param(words2, (int)(sizeof words2 / sizeof words2[0]), mem, scratch, noflags, &g_P2)) return 8;
#endif
    /* the blocks of a small kernel run different phases on disjoint data: one after
     * another here, in reverse with EMU_REVERSE=1 (a result that depends on the order
     * would be a missed conflict) */
    gridDim.x = GRID;
    const bool rev = getenv("EMU_REVERSE") && getenv("EMU_REVERSE")[0] == '1';
    for (unsigned q = 0; q < GRID; q++) {
        blockIdx.x = rev ? GRID - 1 - q : q;
        if (!emu_run(body)) return 7;
    }
#ifdef KERNEL2
    blockIdx.x = 0;
    if (!emu_run(body2)) return 7;
#endif
    int bad = 0;
#ifdef EMU_SCAN_K
    /* a scan kernel resets its ticket word's count for the next launch (the last take,
     * or the last tile with the counters: cuda_skeletons.c); the epoch has advanced */
    for (int i = 0; i < nw; i++) {
        if (words[i].kind != W_SCRATCH) continue;
        uint64_t tw;
        memcpy(&tw, scratch + words[i].a + 8, 8);
        if ((uint32_t)tw != 0) { printf("ticket word not reset: count %u, epoch %u\n", (unsigned)(uint32_t)tw, (unsigned)(tw >> 32)); bad++; }
    }
#endif
    int slots = 0;
    for (int s = 0; s < 8 && 16 * s < SCRATCH; s++) {
        uint64_t k0, k1; memcpy(&k0, scratch + 16 * s, 8); memcpy(&k1, scratch + 16 * s + 8, 8);
        if (k0) printf("error slot %d: %016llx %016llx (first bad position %lld)\n", s, (unsigned long long)k0, (unsigned long long)k1, (long long)~k0);
        slots += k0 != 0;
    }
#ifdef EMU_EXPECT_ERR
    /* an element-wise kernel alone decides a failing run: it must have set a slot */
    if (REF_STATUS != 0 && slots == 0) { printf("the reference failed, no error slot set\n"); return 1; }
#endif
    /* EMU_OUT=DIR: each output also written to DIR/v<id>.out, raw (A/B runs of two
     * builds' kernels on the same inputs compare these) */
    if (const char *od = getenv("EMU_OUT")) {
        for (const Buf *b = bufs; b->v >= 0; b++) {
            if (!b->out) continue;
            char p[600]; snprintf(p, sizeof p, "%s/v%d.out", od, b->v);
            FILE *f = fopen(p, "wb");
            const bool ok = f && fwrite(mem[b->v], 1, (size_t)b->n * b->es, f) == (size_t)b->n * b->es;
            if (f) fclose(f);
            if (!ok) return 9;
        }
    }
    if (REF_STATUS != 0) return 0;
    for (const Buf *b = bufs; b->v >= 0; b++) {
        if (!b->out) continue;
        size_t n = (size_t)b->n * b->es;
        char p[600]; snprintf(p, sizeof p, "%s/v%d.ref", dir, b->v);
        FILE *f = fopen(p, "rb"); char *r = (char *)malloc(n + 1); if (fread(r, 1, n, f) != n) return 9; fclose(f);
        const char *m = (const char *)mem[b->v];
        /* a float64 output with a magnitude (gen.c, EMU_MAG=1): within 2^-40 of it, as
         * DESIGN.md section 1 asks of sums; else bit for bit */
        double *mag = NULL;
        if (b->fsz == 8) {
            snprintf(p, sizeof p, "%s/v%d.mag", dir, b->v);
            FILE *fm = fopen(p, "rb");
            if (fm) {
                mag = (double *)malloc(n);
                if (fread(mag, 1, n, fm) != n) return 9;
                fclose(fm);
            }
        }
        int diff = 0, within = 0;
        for (long long e = 0; e < b->n; e++) {
            if (memcmp(m + e * b->es, r + e * b->es, b->es) == 0) continue;
            if (is_nan(b->fsz, m + e * b->es) && is_nan(b->fsz, r + e * b->es)) continue; /* any NaN matches any NaN */
            if (mag) {
                double x, y;
                memcpy(&x, m + e * 8, 8);
                memcpy(&y, r + e * 8, 8);
                if (fabs(x - y) <= ldexp(fabs(mag[e]), -40)) { within++; continue; }
                if (diff < 3) printf("v%d[%lld]: %.17g ref %.17g (magnitude %.17g)\n", b->v, e, x, y, mag[e]);
                diff++;
                continue;
            }
            if (b->fsz == 4) { float x, y; memcpy(&x, m + e * 4, 4); memcpy(&y, r + e * 4, 4);
                if (diff < 3) printf("v%d[%lld]: %.9g ref %.9g\n", b->v, e, x, y); }
            else if (diff < 3) { long long x = 0, y = 0; memcpy(&x, m + e * b->es, b->es); memcpy(&y, r + e * b->es, b->es); printf("v%d[%lld]: %lld ref %lld (raw)\n", b->v, e, x, y); }
            diff++;
        }
        for (int c = 0; c < 64; c++) if ((unsigned char)m[n + c] != 0xA5) { printf("v%d: canary overwritten\n", b->v); bad++; break; }
        if (mag) printf("output v%d: %lld elements, %d within 2^-40 * sum|x| and not equal\n", b->v, b->n, within);
        printf("output v%d: %lld elements, %d differ\n", b->v, b->n, diff);
        free(mag);
        bad += diff != 0;
    }
    return bad ? 1 : 0;
}
