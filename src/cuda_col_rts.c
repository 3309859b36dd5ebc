/*
 * cuda_col_rts.c — column scans in two kernels (tuning col_rts=1: an experiment of issue
 * 5, off by default; bench/NOTES.md, session 17).  A column scan of the look-back
 * (sf_col_tile_scan) makes each tile wait for the aggregates of the earlier chunks of its
 * columns; in a grid of a few waves those arrive in no useful order, and the H200
 * measurements point at those waits rather than its bytes or instructions.  Here the first
 * kernel folds every tile and stores the aggregates; the second reads the tiles again
 * (the L2 holds inputs of some tens of MB, so the DRAM sees about one read) and scans
 * them with prefixes that are all there.  The kernel boundary (with programmatic
 * dependent launch, cuda_codegen.c) is the only wait.
 *
 * Under col_rts=1, used for scans along an outer dim of at most 64 chunks whose inputs
 * take at most col_rts_mb MB (default 40), otherwise the look-back kernel; the copies go
 * under L2 eviction hints (col_rts_hint=0: without).  Its tile walk and passes repeat
 * sf_col_tile_scan's (cuda_skeletons.c) rather than share them, so that the default
 * kernels' text stays the one validated on the GPU until this is measured: if it wins,
 * the two merge; if not, this file goes.  The skeleton's text goes into a source once,
 * only when a kernel uses it, so other kernels' sources (and their cache keys) do not
 * change.
 */
#include "cuda_codegen.h"

#include <string.h>

static const char *const rts_skeleton[] = {
    "// Column scans in two kernels (col_rts=1, an experiment of issue 5, off by default;",
    "// cuda_col_rts.c), for inputs the L2 can hold: PASS 1 folds every tile (the same pass one",
    "// and row-group exchange as sf_col_tile_scan) and stores its per-column aggregates in",
    "// the scratch; PASS 2, launched after it, reads each tile again (from the L2 if it kept",
    "// it), takes the tile's prefix as the fold of the aggregates of the earlier chunks of",
    "// its column block (each row group a fixed slice, in index order: the same bits on every",
    "// run), and writes the scan.  No tile waits on another: the kernel boundary is the only",
    "// wait.  Static tile order (no tickets): nothing waits, so no order is needed.",
    "// HINT: the copies under an L2 policy (Io::col_stage_h), evict-last in the first kernel",
    "// and evict-first in the second, so that the second kernel's writes do not push out",
    "// the tiles it has yet to read.",
    "__device__ __forceinline__ u64 sf_l2_policy(bool last) {",
    "    u64 p = 0;",
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800",
    "    if (last) asm volatile(\"createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\" : \"=l\"(p));",
    "    else asm volatile(\"createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\" : \"=l\"(p));",
    "#endif",
    "    (void)last;",
    "    return p;",
    "}",
    "template <class Op, class Io, int W, int RG, int L, bool EXCL, bool STAGE, int PASS, bool HINT = false>",
    "__device__ __forceinline__ void sf_col_rts(const sf_args& a, i64 ncols, i64 len, i64 nchunks, i64 ncb) {",
    "    typedef typename Op::T T;",
    "    static_assert(PASS == 1 || PASS == 2, \"two passes\");",
    "    __shared__ T s_x[RG][W];",
    "    __shared__ T s_pre[W];",
    "    constexpr int NS = RG * L, SGB = STAGE ? NS * W * Io::SB : 16; /* steps a tile */",
    "    constexpr int SUB = L % 8 == 0 ? 8 : L; /* staged steps read at once (registers) */",
    "    __shared__ __align__(16) char s_stage[SGB > 0 ? SGB : 16];",
    "    const int c = (int)threadIdx.x % W, rg = (int)threadIdx.x / W;",
    "    const i64 ntiles = nchunks * ncb;",
    "    T* Ag = (T*)(a.scratch + 16); /* tile t's aggregate of its column c at t * W + c */",
    "    const u64 pol = HINT ? sf_l2_policy(PASS == 1) : 0;",
    "    (void)pol;",
    "    for (i64 tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {",
    "        const i64 ch = tile / ncb, cb = tile - ch * ncb;",
    "        const i64 col = cb * W + c;",
    "        const bool valid = col < ncols;",
    "        typename Io::B b;",
    "        if (valid) Io::base(a, col, b);",
    "        const i64 t0 = ch * (i64)NS + (i64)rg * L, tt0 = ch * (i64)NS;",
    "        bool stg = false;",
    "        if (STAGE) {",
    "            stg = (cb + 1) * W <= ncols && tt0 + NS <= len;",
    "            if constexpr (HINT) stg = stg && Io::template col_stage_h<W, NS, RG * W>(a, cb * W, len, tt0, s_stage, pol);",
    "            else stg = stg && Io::template col_stage<W, NS, RG * W>(a, cb * W, len, tt0, s_stage);",
    "            if (stg) {",
    "                sf_cp_async_wait();",
    "                __syncthreads();",
    "            }",
    "        }",
    "        T agg = Op::id();",
    "        if (stg) {",
    "#pragma unroll",
    "            for (int j = 0; j < L / SUB; ++j) {",
    "                T u[SUB];",
    "                Io::template ld_col_s<W, SUB>(a, b, len, t0 + j * SUB, tt0, NS, s_stage, c, u);",
    "#pragma unroll",
    "                for (int k = 0; k < SUB; ++k) agg = Op::op(agg, u[k]);",
    "            }",
    "        } else {",
    "#pragma unroll 4",
    "            for (int k = 0; k < L; ++k) agg = Op::op(agg, (valid && t0 + k < len) ? Io::ld(a, b, len, t0 + k) : Op::id());",
    "        }",
    "        s_x[rg][c] = agg;",
    "        __syncthreads();",
    "        T run = Op::id(); /* the row groups before this one */",
    "        for (int k = 0; k < rg; ++k) run = Op::op(run, s_x[k][c]);",
    "        if (PASS == 1) {",
    "            if (rg == 0) {",
    "                T tagg = Op::id();",
    "                for (int k = 0; k < RG; ++k) tagg = Op::op(tagg, s_x[k][c]);",
    "                Ag[tile * W + c] = tagg;",
    "            }",
    "            __syncthreads(); /* s_x, s_stage are reused by the next tile */",
    "            continue;",
    "        }",
    "        /* the chunks before ch, ceil(ch / RG) a row group */",
    "        const i64 per = (ch + RG - 1) / RG, k0 = (i64)rg * per, k1 = k0 + per < ch ? k0 + per : ch;",
    "        T x = Op::id();",
    "        for (i64 k = k0; k < k1; ++k) x = Op::op(x, Ag[(k * ncb + cb) * W + c]);",
    "        __syncthreads(); /* every thread has read s_x */",
    "        s_x[rg][c] = x;",
    "        __syncthreads();",
    "        if (rg == 0) {",
    "            T pre = Op::id();",
    "            for (int k = 0; k < RG; ++k) pre = Op::op(pre, s_x[k][c]);",
    "            s_pre[c] = pre;",
    "        }",
    "        __syncthreads();",
    "        run = Op::op(s_pre[c], run);",
    "        auto put = [&](int k, const T& v) { /* step t0 + k of the column, in range */",
    "            if (EXCL) {",
    "                Io::st(a, b, len, t0 + k, run);",
    "                run = Op::op(run, v);",
    "            } else {",
    "                run = Op::op(run, v);",
    "                Io::st(a, b, len, t0 + k, run);",
    "            }",
    "        };",
    "        if (stg) {",
    "#pragma unroll",
    "            for (int j = 0; j < L / SUB; ++j) {",
    "                T u[SUB];",
    "                Io::template ld_col_s<W, SUB>(a, b, len, t0 + j * SUB, tt0, NS, s_stage, c, u);",
    "#pragma unroll",
    "                for (int k = 0; k < SUB; ++k) put(j * SUB + k, u[k]);",
    "            }",
    "        } else if (valid) {",
    "#pragma unroll 4",
    "            for (int k = 0; k < L; ++k)",
    "                if (t0 + k < len) put(k, Io::ld(a, b, len, t0 + k));",
    "        }",
    "        __syncthreads(); /* s_x, s_pre, s_stage are reused by the next tile */",
    "    }",
    "}",
    NULL,
};

bool sf_cg_col_rts_wanted(int64_t nchunks, int64_t in_bytes) {
    if (sf_cg_tune("col_rts", 0) != 1) return false;
    int64_t mb = sf_cg_tune("col_rts_mb", 40);
    return nchunks > 1 && nchunks <= 64 && in_bytes <= (mb << 20);
}

void sf_cg_col_rts(sf_cg *g, int ki, const sf_col_rts_shape *s) {
    sf_buf *src = g->src;
    if (!g->rts_text) {
        g->rts_text = true;
        for (int i = 0; rts_skeleton[i]; i++) {
            sf_buf_puts(src, rts_skeleton[i]);
            sf_buf_puts(src, "\n");
        }
    }
    sf_cuda_kernel *k = &g->pl->k[ki];
    k->kind = SF_CUK_SCAN_COL;
    k->block = 256;
    k->grid = sf_cg_grid(s->nchunks * s->ncb);
    k->ntiles = 0; /* static tile order: no tickets */
    k->scratch_bytes = 16 + s->nchunks * s->ncb * s->w * s->tsize; /* the aggregates after 16 bytes */
    sf_cuda_kernel *k2 = sf_cg_twin_kernel(g, ki, SF_CUK_SCAN_COL); /* reads the aggregates */
    k = &g->pl->k[ki];
    k2->grid = k->grid;
    /* the second kernel at most 6 blocks an SM: at 8 (32 registers) the prefix and
     * pass two spill (28 bytes, bfloat16 [4096, 4096]); 40 registers do not */
    const char *lbs2 = strcmp(s->lbs, ", 8") == 0 || strcmp(s->lbs, ", 7") == 0 ? ", 6" : s->lbs;
    for (int pass = 1; pass <= 2; pass++)
        sf_buf_printf(src,
                      "extern \"C\" __global__ void __launch_bounds__(256%s) k%d(const sf_args a) {\n"
                      "sf_col_rts<%s::Op, %s, %d, %d, %d, %s, %s, %d%s>(a, %lldll, %lldll, %lldll, %lldll);\n}\n\n",
                      pass == 1 ? s->lbs : lbs2, ki + pass - 1, s->io, s->io, s->w, s->rg, s->l,
                      s->excl ? "true" : "false", s->stage ? "true" : "false", pass, s->hint && s->stage ? ", true" : "",
                      (long long)s->ncols, (long long)s->len, (long long)s->nchunks, (long long)s->ncb);
}
