/*
 * cuda_rts.c — scans in two kernels, reduce then scan (tunings col_rts=1 and row_rts=1:
 * experiments of issue 5, off by default; bench/NOTES.md, session 17, entry 6).
 *
 * A column scan of the look-back (sf_col_tile_scan) makes each tile wait for the
 * aggregates of the earlier chunks of its columns; in a grid of a few waves those arrive
 * in no useful order, and the H200 measurements point at those waits rather than its
 * bytes or instructions.  Here the first kernel folds every tile and stores the
 * aggregates; the second reads the tiles again (the L2 holds inputs of some tens of MB,
 * so the DRAM sees about one read) and scans them with prefixes that are all there.  The
 * kernel boundary (with programmatic dependent launch, cuda_codegen.c) is the only wait.
 * Look-back rows the same: the first kernel stores each tile's total, the second folds
 * the totals of a row's earlier tiles.
 *
 * Under col_rts=1: scans along an outer dim of at most 64 chunks whose inputs take at
 * most col_rts_mb MB (default 40), the copies under L2 eviction hints (col_rts_hint=0:
 * without).  Under row_rts=1: look-back rows of at most 64 tiles, inputs of at most
 * row_rts_mb MB (default 40).  Otherwise the look-back kernels.
 *
 * The tile walks and passes repeat sf_col_tile_scan's and sf_row_scan's
 * (cuda_skeletons.c) rather than share them, so that the default kernels' text stays the
 * one validated on the GPU until this is measured: if it wins, they merge; if not, this
 * file goes.  The skeletons' text goes into a source once, only when a kernel uses it,
 * so other kernels' sources (and their cache keys) do not change.
 */
#include "cuda_codegen.h"

#include <string.h>

static const char *const rts_skeleton[] = {
    "// Column scans in two kernels (col_rts=1, an experiment of issue 5, off by default;",
    "// cuda_rts.c), for inputs the L2 can hold: PASS 1 folds every tile (the same pass one",
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
    "// Row scans in two kernels (row_rts=1, an experiment, off by default; cuda_rts.c): as",
    "// sf_col_rts, for look-back rows of at most 64 tiles whose inputs the L2 can hold.",
    "// PASS 1 runs each tile's pass one (sf_row_scan's) and stores the tile's total; PASS 2",
    "// runs it again, takes the tile's prefix as the fold of the totals of the row's earlier",
    "// tiles (warp 0, a fixed slice a lane, in lane order: the same bits on every run), and",
    "// runs pass two.",
    "template <class Op, class Io, int THREADS, int ITEMS, int V, bool EXCL, bool STAGE, int PASS>",
    "__device__ __forceinline__ void sf_row_rts(const sf_args& a, i64 rows, i64 len, i64 tpr) {",
    "    typedef typename Op::T T;",
    "    static_assert(PASS == 1 || PASS == 2, \"two passes\");",
    "    constexpr int K = ITEMS / V;",
    "    static_assert(K * V == ITEMS, \"V divides ITEMS\");",
    "    __shared__ T s_warp[THREADS / 32];",
    "    __shared__ T s_pre;",
    "    constexpr int TS = THREADS * ITEMS, SGB = STAGE ? TS * Io::SB : 16;",
    "    __shared__ __align__(16) char s_stage[SGB > 0 ? SGB : 16];",
    "    const int lane = threadIdx.x & 31;",
    "    const i64 ntiles = rows * tpr;",
    "    T* Ag = (T*)(a.scratch + 16); /* tile t's total at t */",
    "    for (i64 tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {",
    "        const i64 r = tile / tpr, j = tile - r * tpr;",
    "        typename Io::B b;",
    "        Io::base(a, r, b);",
    "        const i64 t0 = j * (i64)TS + (i64)(threadIdx.x >> 5) * (32 * ITEMS) + (i64)lane * V;",
    "        sf_row_e<T, K, THREADS, false> e;",
    "        const bool fast = Io::template fast_span<V>(a, b, len, t0, 32 * V, K);",
    "        const int rel = (int)(t0 - j * (i64)TS); /* t0's step in the tile */",
    "        T carry;",
    "        if (STAGE && fast) { /* each thread copies and reads its own strips: no barrier */",
    "#pragma unroll",
    "            for (int k = 0; k < K; ++k)",
    "                Io::template stage<V>(a, b, len, t0 + (i64)k * (32 * V), s_stage, rel + k * (32 * V), TS);",
    "            sf_cp_async_wait();",
    "            sf_row_pass_one<Op, Io, V, K, false, decltype(e), true>(a, b, len, t0, e, carry, s_stage, rel, TS);",
    "        } else if (fast) sf_row_pass_one<Op, Io, V, K, false>(a, b, len, t0, e, carry);",
    "        else sf_row_pass_one<Op, Io, V, K, true>(a, b, len, t0, e, carry);",
    "        T tot;",
    "        T pre = sf_block_excl_warps<Op, THREADS>(carry, s_warp, tot);",
    "        if (PASS == 1) {",
    "            if (threadIdx.x == 0) Ag[tile] = tot;",
    "            __syncthreads(); /* s_warp is reused by the next tile */",
    "            continue;",
    "        }",
    "        if (threadIdx.x < 32) { /* tiles 0 .. j-1 of the row, ceil(j / 32) a lane */",
    "            const i64 per = (j + 31) / 32, k0 = (i64)lane * per, k1 = k0 + per < j ? k0 + per : j;",
    "            T x = Op::id();",
    "            for (i64 k = k0; k < k1; ++k) x = Op::op(x, Ag[r * tpr + k]);",
    "            T all;",
    "            (void)sf_block_excl<Op, 32>(x, (T*)0, all);",
    "            if (threadIdx.x == 0) s_pre = all;",
    "        }",
    "        __syncthreads();",
    "        pre = Op::op(s_pre, pre);",
    "        if (STAGE && fast)",
    "            sf_row_pass_two<Op, Io, V, K, EXCL, false, decltype(e), true>(a, b, len, t0, e, pre, s_stage, rel, TS);",
    "        else if (fast) sf_row_pass_two<Op, Io, V, K, EXCL, false>(a, b, len, t0, e, pre);",
    "        else sf_row_pass_two<Op, Io, V, K, EXCL, true>(a, b, len, t0, e, pre);",
    "        __syncthreads(); /* s_pre, s_warp are reused by the next tile */",
    "    }",
    "}",
    NULL,
};

bool sf_cg_col_rts_wanted(int64_t nchunks, int64_t in_bytes) {
    if (sf_cg_tune("col_rts", 0) != 1) return false;
    int64_t mb = sf_cg_tune("col_rts_mb", 40);
    return nchunks > 1 && nchunks <= 64 && in_bytes <= (mb << 20);
}

/* The skeletons' text into the source, before its first kernel that uses them. */
static void skeleton_once(sf_cg *g) {
    if (g->rts_text) return;
    g->rts_text = true;
    for (int i = 0; rts_skeleton[i]; i++) {
        sf_buf_puts(g->src, rts_skeleton[i]);
        sf_buf_puts(g->src, "\n");
    }
}

void sf_cg_col_rts(sf_cg *g, int ki, const sf_col_rts_shape *s) {
    sf_buf *src = g->src;
    skeleton_once(g);
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

bool sf_cg_row_rts_wanted(int64_t tpr, int64_t in_bytes) {
    if (sf_cg_tune("row_rts", 0) != 1) return false;
    int64_t mb = sf_cg_tune("row_rts_mb", 40);
    return tpr > 1 && tpr <= 64 && in_bytes <= (mb << 20);
}

void sf_cg_row_rts(sf_cg *g, int ki, const sf_row_rts_shape *s) {
    sf_buf *src = g->src;
    skeleton_once(g);
    sf_cuda_kernel *k = &g->pl->k[ki];
    k->kind = SF_CUK_SCAN_ROW;
    k->block = (unsigned)s->threads;
    k->grid = sf_cg_grid(s->rows * s->tpr);
    k->ntiles = 0; /* static tile order: no tickets */
    k->scratch_bytes = 16 + s->rows * s->tpr * s->tsize; /* the tiles' totals after 16 bytes */
    sf_cuda_kernel *k2 = sf_cg_twin_kernel(g, ki, SF_CUK_SCAN_ROW); /* reads the totals */
    k = &g->pl->k[ki];
    k2->block = k->block;
    k2->grid = k->grid;
    /* the second kernel at most 5 blocks of 256 an SM: at 6 (40 registers) its strip
     * states across the prefix spill 86 bytes, at 5 (48) 46 (float32 [64, 131072]);
     * row_rts_minb2=B: B */
    int bps2 = s->threads == 256 && s->bps > 5 ? 5 : s->bps;
    bps2 = sf_cg_tune("row_rts_minb2", bps2);
    if (bps2 < 1 || bps2 > 8) bps2 = s->bps;
    for (int pass = 1; pass <= 2; pass++)
        sf_buf_printf(src,
                      "extern \"C\" __global__ void __launch_bounds__(%d, %d) k%d(const sf_args a) {\n"
                      "sf_row_rts<%s::Op, %s, %d, %d, %d, %s, %s, %d>(a, %lldll, %lldll, %lldll);\n}\n\n",
                      s->threads, pass == 1 ? s->bps : bps2, ki + pass - 1, s->io, s->io, s->threads, s->items, s->vec,
                      s->excl ? "true" : "false", s->stage ? "true" : "false", pass, (long long)s->rows,
                      (long long)s->len, (long long)s->tpr);
}
