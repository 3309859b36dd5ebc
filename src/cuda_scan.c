/*
 * cuda_scan.c — scans (cumsum, cumprod, cummax, cummin, logcumsumexp) for the CUDA
 * backend (reductions: cuda_reduce.c), each with the pointwise prologue and epilogue of
 * its segment fused in: chooses the kernel shape from
 * the static shape, and emits the per-kernel `Io` struct (how a row is located, how an
 * element is loaded — the prologue computed in registers —, how a state is stored — the
 * epilogue computed in registers, every value that needs memory written) that the
 * skeletons (cuda_skeletons.c: sf_warp_scan, sf_row_scan, sf_col_tile_scan, sf_red_*;
 * sf_col_stream_scan here) are instantiated with.
 *
 * Scans see the scan's shape as rows x len: a row is one position of every dim except
 * the scanned one (row index = row-major order of those dims), a step t of the scan is
 * position t of the scanned dim (len-1-t for reverse scans).
 *  - inner dims all of size 1 and len <= 32*ITEMS: one warp per row;
 *  - inner dims all of size 1, longer rows: blocks of 256 threads over tiles of
 *    THREADS*ITEMS steps (32 KB of the widest operand for look-back rows, whose inputs
 *    are staged in shared memory by cp.async; 512 threads, 64 KB, without staging), each
 *    warp reading its run of the tile as strips in which every lane holds V consecutive
 *    steps (one 16-byte access of the widest input); several
 *    tiles per row are chained by the deterministic two-level look-back (sf_lookback:
 *    tile aggregates within groups of row_g tiles, group aggregates within
 *    super-groups of row_g2 groups, one prefix chain link per super-group);
 *  - otherwise (scan along an outer dim): blocks of 32 columns x 8 row groups
 *    (neighbouring columns are neighbours in memory for contiguous tensors), tiles of
 *    8*L steps staged in shared memory, chained along the scan by the two-level column
 *    look-back (sf_col_tile_scan); where the grid has about a block of 32 columns an
 *    SM or more, one block a column block instead, streaming its chunks in scan order
 *    through a ring of stages and carrying the prefix itself (sf_col_stream_scan,
 *    emitted below into the sources that use it; blocks of 64 columns for 16-bit
 *    inputs where those still make about one an SM).
 * A lane's V consecutive steps use one vector access per operand when every operand is
 * contiguous along the scan and aligned (checked at run time per thread), element
 * accesses otherwise.
 * Accumulation (docs/OPS.md, DESIGN.md §1): float16/bfloat16/float32 sums in double
 * (every tile prefix combined in a fixed order: deterministic, and within 2^-40 * sum|x|),
 * float64 sums in double too (within 2^-43 * sum|x|: scan_kind_for), integers in
 * wrapping int64, products and logcumsumexp in double; every output rounded once.  (A product is associated as a tree, not left
 * to right: where a running product overflows in the left-to-right order but its exact
 * value is finite, the GPU may return that finite value where the CPU returns inf.)
 *
 * Tuning knobs (benchmarks; they change the generated code and so the cache key):
 * SCANFUSE_CUDA_TUNE="row_items=0,row_threads=0,row_g=128,row_g2=128,row_minb=4,warp_max=1024,col_l=0,col_g=0,col_g2=0,col_minb=0,col_stage=1,col_w=32,lb_wait_ns=32,lb_wait_max=512,lb_wait_first=2000,lb_wait_first_min=24,lb_early=-,lb_ticket=1,lb_w1=1,lb_done=1,row_vec=0,row_pipe=0,row_stage=1,row_stage1=2,lb_ga=1,row_io1=2,st16=1,col_stream=-,col_ring=4,col_hold=-,f64_dd=0,lb_stagger=-"
 * (row_items=0, row_threads=0, row_minb (4, 6 or 5 by the kernel), col_l=0, col_g=0 and
 * col_g2=0 choose from the shape;
 * row_threads=256 keeps look-back rows in blocks of 256, row_threads=128 puts one-tile
 * rows in blocks of 128; lb_ticket=0 takes the tile counter and the tiles-done count of
 * before, lb_done applying to that count; lb_w1=0 gives the look-back rows' first wave
 * tickets too (by default its tiles are static in launches of at most 8 waves,
 * sf_take_split), lb_w1=N > 1 makes N tiles static in any launch; row_stage1=2 stages
 * the one-tile rows that read an input again by every row, 1 every one-tile row, 0 none;
 * lb_ga=0 waits for the previous group's aggregate in the row look-back instead of
 * folding its tiles' aggregates;
 * lb_wait_first the row look-back's sleep before its first poll (ns, for tiles that
 * stage 32 KB; in proportion for others), in launches of at least lb_wait_first_min
 * tiles an SM; lb_early=1 publishes every look-back tile's aggregate before pass one's
 * warp scans, 0 none's (by default all but strips of 4 steps a lane);
 * row_io1=2 reads each input of a row kernel of two or more inputs, or of a 16-bit
 * input in several rows, by one path, 1 every row kernel's, 0 none's; st16=1 stores
 * the 16-bit outputs of rows beside an input read by every row with one st.global.v4
 * a strip, 2 every 16-bit output's, 0 none's;
 * col_stream (by default 1 where the grid has about a column block an SM) 1 streams
 * column scans through one block a column block, 0 never; col_ring its stages;
 * col_hold (by default 1 for 16-bit inputs in grids of at most a column block an SM)
 * 1 keeps a thread's steps from pass one to pass two, 2 the same but refills a stage
 * only after that pass two, 0 reads and converts them again); lb_stagger=N paces the
 * look-back rows' first wave, N ns a tile (sf_row_next; by default 12 in launches of at
 * most 32 waves, 0: never).
 * Measurements, never defaults: lb_trace=1 (tile phase records, bench/lb_trace.py).
 * Elsewhere: pdl=0 (no
 * programmatic dependent launch, cuda_codegen.c), pdl_first=0 (the run's first kernel
 * launched without it, cuda_codegen.c), ld16=0 (16-bit vector loads split through
 * a union, as before session 27; cuda_codegen.c), f32eval=0 (float arithmetic in
 * double), comb_*, small_*, topk_pack and count_* (cuda_combine.c, cuda_small.c,
 * cuda_index.c).
 */
#include "cuda_codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pow2_at_least(int64_t v) {
    int p = 1;
    while (p < v) p *= 2;
    return p;
}

int sf_cg_group_nodes(const sf_cg *g, int *out) {
    int n = 0;
    for (int i = 0; i < g->f->nnodes; i++)
        if (g->in_seg[i]) out[n++] = i;
    return n;
}

/* ------------------------------------------------------------------------------ */
/* Element contexts of the scan Io                                                 */
/* ------------------------------------------------------------------------------ */

typedef struct scan_ctx {
    int dim;
} scan_ctx;

static void scan_coord(sf_cg_ectx *e, int d, sf_buf *out) {
    const scan_ctx *u = e->user;
    e->used_coords = true;
    if (d == u->dim) sf_buf_puts(out, "p");
    else sf_buf_printf(out, "b.c[%d]", d);
}

static void scan_off(sf_cg_ectx *e, int op, sf_buf *out) {
    const scan_ctx *u = e->user;
    sf_buf_printf(out, "b.o[%d] + p * a.st[%d][%d]", op, op, u->dim);
}

typedef struct scan_kind {
    char op[64];      /* the operator struct */
    int tsize;        /* bytes of its state */
    const char *elem; /* the element from "x" (the converted input) and "p" */
    const char *val;  /* the result value from state "s" */
    bool index;       /* cummax/cummin: the index result is s.i */
    bool comm;        /* the prelude's sf_comm<op> holds (sums, products, logcumsumexp) */
    const char *const *defs; /* lines the operator needs before the Io (NULL: the prelude's) */
} scan_kind;

/* long_rows: the scan runs as rows of more than one warp's steps (sf_row_scan or the raked
 * tiles: the kernels whose runs OpProdF's lazy normalisation serves). */
static void scan_kind_for(const sf_node *n, scanfuse_dtype dt, int64_t len, bool long_rows, scan_kind *sk) {
    bool fl = sf_dtype_is_float(dt);
    memset(sk, 0, sizeof *sk);
    sk->tsize = 8;
    sk->elem = "x";
    sk->val = "s";
    sk->comm = n->op == SF_OP_cumsum || n->op == SF_OP_cumprod || n->op == SF_OP_logcumsumexp;
    switch (n->op) {
    case SF_OP_cumsum:
        /* float64 sums in double: every output is a fold of its inputs of bounded depth
         * (a strip, the warp and block scans, then at most G-1 tile aggregates, G2-1
         * group aggregates and one link per G*G2 tiles of the look-back: under 600 adds
         * for 2^34 elements of 1-D tiles of 4096), so within 600 * 2^-53 < 2^-43 times
         * sum|x| (DESIGN.md §1 asks 2^-40; the CPU carries blocks in double-double).  In
         * double-double (f64_dd=1, as before) the states are twice as wide and every
         * fold ~20 double operations: H200, NOTES session 24, 1-D 2^27 at 0.31 of copy,
         * bound by the arithmetic.  The column stream kernel carries a column's prefix in
         * three levels (sf_col_stream_scan): its outputs are at most about 600 + nchunks /
         * 65536 adds deep. */
        if (dt == SCANFUSE_FLOAT64 && sf_cg_tune("f64_dd", 0) == 1) {
            snprintf(sk->op, sizeof sk->op, "OpSumDD");
            sk->tsize = 16;
            sk->elem = "sf_dd_make(x)";
            sk->val = "s.hi";
        } else {
            snprintf(sk->op, sizeof sk->op, fl ? "OpSumD" : "OpSumI");
        }
        break;
    case SF_OP_cumprod:
        snprintf(sk->op, sizeof sk->op, fl ? "OpProdD" : "OpProdI");
        if (fl) { /* the product and its power of two (sf_prodx, sf.h) */
            sk->tsize = 16;
            /* float64 inputs brought into the window; narrower ones lie in it, and in
             * long rows their products are normalised once every 3 steps of a raked run
             * (OpProdF, sf_cuda_prod_narrow), their values read by sf_pxf_val.  H200,
             * NOTES session 36 run 1, 1-D 2^26: float32 0.44 -> 0.52 of copy, bfloat16
             * 0.25 -> 0.33.  (Not float64: a factor's state may be anywhere in the
             * window, so a product of two could leave double's range.  Not columns and
             * warp rows: no raked runs, and their kernels stay session 35's, the [4096,
             * 4096] dim 0 one measured 0.50 against 0.46 with sf_pxf_val in run 1.) */
            bool f64 = dt == SCANFUSE_FLOAT64;
            bool lazy = !f64 && long_rows && sf_cg_tune("prod_lazy", 1) != 0; /* prod_lazy=0: OpProdD */
            if (lazy) {
                snprintf(sk->op, sizeof sk->op, "OpProdF");
                sk->defs = sf_cuda_prod_narrow;
            }
            sk->elem = f64 ? "sf_px_make(x)" : "sf_vd_make(x, 0)";
            sk->val = lazy ? "sf_pxf_val(s)" : "sf_px_val(s)";
        }
        break;
    case SF_OP_logcumsumexp: snprintf(sk->op, sizeof sk->op, "OpLse"); break;
    default: { /* cummax, cummin */
        bool mx = n->op == SF_OP_cummax;
        /* Values of at most 4 bytes in rows of fewer than 2^31 steps: a value and a step
         * index of 4 bytes each, so the 8-byte state takes the kernels of sums (the
         * 16-byte states' kernels ran cummax at 0.32-0.55 of copy, NOTES session 35).
         * float16/bfloat16/float32 values compare in float exactly as in double. */
        bool narrow = scanfuse_dtype_size(dt) <= 4 && len <= INT32_MAX;
        if (fl) {
            snprintf(sk->op, sizeof sk->op, "%s%s", mx ? "OpCumMax" : "OpCumMin", narrow ? "F" : "D");
            sk->elem = narrow ? "sf_vf_make((float)x, (int)p)" : "sf_vd_make(x, p)";
        } else {
            int64_t id = mx ? sf_int_min(dt) : sf_int_max(dt);
            const char *name = narrow ? (mx ? "OpCumMaxJ" : "OpCumMinJ") : (mx ? "OpCumMaxI" : "OpCumMinI");
            if (id == INT64_MIN)
                snprintf(sk->op, sizeof sk->op, "%s<(-9223372036854775807ll - 1)>", name);
            else if (id == INT32_MIN)
                snprintf(sk->op, sizeof sk->op, "%s<(-2147483647 - 1)>", name);
            else
                snprintf(sk->op, sizeof sk->op, "%s<(%lld%s)>", name, (long long)id, narrow ? "" : "ll");
            sk->elem = narrow ? "sf_vj_make((int)x, (int)p)" : "sf_vi_make(x, p)";
        }
        sk->tsize = narrow ? 8 : 16;
        sk->val = "s.v";
        sk->index = true;
        break;
    }
    }
}

/* How an input's N consecutive steps are read on the vector path (Io::ld_items,
 * ld_items_s): VL_TEST tests its stride along the scan at run time (0: one element N
 * times, else a vector load), VL_VEC is a vector load with no test (the vector path then
 * requires stride 1), VL_ONE one element (size 1 along the scan).  With VL_TEST the
 * compiler may predicate both arms, so every strip pays for both (the fused bfloat16
 * chain's busiest instructions included the untaken arm's PRMT and LEA, NOTES session
 * 13); the other two have one path, chosen at code generation. */
enum { VL_TEST, VL_VEC, VL_ONE };

/* The raw vectors r<op>[N] of the inputs among ops for N consecutive steps from plo, by
 * each input's mode (above): one element, or a vector load from global memory (q<op>)
 * or, with soff, from the staged tile in shared memory (s, rel, ts; inputs whose strip
 * fits a cp.async; the others from global memory). */
static void emit_vec_loads(sf_buf *src, const scanfuse_fusion *f, const sf_cuda_kernel *k, uint32_t ops, int dim,
                           const int *mode, const int *soff) {
    for (int op = 0; op < k->nops; op++) {
        if (!(ops >> op & 1u) || k->ops[op].out) continue;
        const char *raw = sf_cg_rawtype(f->values[k->ops[op].value].dtype);
        if (mode[op] == VL_TEST)
            sf_buf_printf(src, "%s r%d[N];\nif (a.st[%d][%d] == 0) {\n#pragma unroll\nfor (int k = 0; k < N; ++k) r%d[k] = *((const %s*)a.ptr[%d] + b.o[%d]);\n}",
                          raw, op, op, dim, op, raw, op, op);
        else
            sf_buf_printf(src, "%s r%d[N];\n", raw, op);
        if (mode[op] == VL_ONE) {
            sf_buf_printf(src, "#pragma unroll\nfor (int k = 0; k < N; ++k) r%d[k] = *((const %s*)a.ptr[%d] + b.o[%d]);\n",
                          op, raw, op, op);
            continue;
        }
        const char *els = mode[op] == VL_TEST ? " else " : "";
        if (soff && soff[op] >= 0)
            sf_buf_printf(src, "%sif constexpr (sf_stageable<%s, N>::v) sf_vload(r%d, (const %s*)(s + %d * ts + rel * (int)sizeof(%s)));\n"
                               "else sf_vload(r%d, (const %s*)a.ptr[%d] + (b.o[%d] + plo));\n",
                          els, raw, op, raw, soff[op], raw, op, raw, op, op);
        else if (soff) /* not staged: from global memory */
            sf_buf_printf(src, "%ssf_vload(r%d, (const %s*)a.ptr[%d] + (b.o[%d] + plo));\n", els, op, raw, op, op);
        else
            sf_buf_printf(src, "%ssf_vload(r%d, q%d);\n", els, op, op);
    }
}

/* Column tiles staged in shared memory (sf_col_tile_scan's STAGE): the tile's input
 * rows, each W columns of one step, copied by cp.async in 16-byte pieces, so no
 * register holds a load in flight and pass two reads the tile again from shared
 * memory.  Only the inputs that vary along the scan are staged (soff >= 0); the others
 * (broadcast along it by their shape) are one element a column, read from global
 * memory.  Staged input op's part of a tile of n steps starts at byte soff_op * n * W;
 * step j, column c at (j * W + c) * size_op within it (the steps in memory order).
 *   col_stage<W, N, NT>: whether the tile of steps [t0, t0 + N) of columns
 *                 [col0, col0 + W) can be staged (the caller checks the range): for
 *                 every staged input, the W columns are W consecutive elements (stride 1
 *                 on the innermost column dim, and within one run of it or the column
 *                 dims packed), the steps are not a broadcast (stride 0: such a view takes
 *                 the unstaged path, so the reads below need no run-time test) and every
 *                 step's row starts 16-byte aligned; if so, issues the copies of the
 *                 block's NT threads (thread i takes pieces i, i + NT, ..: the loop
 *                 unrolled, so each piece is one address add and one cp.async) and
 *                 returns true.
 *   ld_col_s<N>:  steps t0 .. t0 + N - 1 of column c of a staged tile starting at tt0,
 *                 as ld_items does. */
static void emit_col_stage(sf_buf *src, const scanfuse_fusion *f, const sf_cuda_kernel *k, uint32_t ld_ops, int dim,
                           int nd, const int64_t *shape, bool rev, const int *soff, const char *ldv,
                           const char *elem) {
    int inner = -1;
    for (int d = nd - 1; d >= 0 && inner < 0; d--)
        if (d != dim && shape[d] > 1) inner = d;
    const char *plo_t = rev ? "len - t0 - N" : "t0";
    sf_buf_puts(src, "template <int W, int N, int NT> static __device__ __forceinline__ bool col_stage(const sf_args& a, i64 col0, i64 len, i64 t0, char* s) {\n");
    sf_buf_printf(src, "const i64 plo = %s;\n(void)plo;\nB b0;\nbase(a, col0, b0);\nbool ok = true;\n", plo_t);
    for (int op = 0; op < k->nops; op++) {
        if (!(ld_ops >> op & 1u) || k->ops[op].out || soff[op] < 0) continue;
        const char *raw = sf_cg_rawtype(f->values[k->ops[op].value].dtype);
        if (inner < 0) {
            sf_buf_puts(src, "ok = false;\n");
            continue;
        }
        /* packed: every column dim's stride the product of the inner column dims' sizes */
        sf_buf_printf(src, "{\nbool packed = a.st[%d][%d] == 1", op, inner);
        int64_t prod = shape[inner];
        for (int d = inner - 1; d >= 0; d--) {
            if (d == dim || shape[d] == 1) continue;
            sf_buf_printf(src, " && a.st[%d][%d] == %lldll", op, d, (long long)prod);
            prod *= shape[d];
        }
        sf_buf_printf(src, ";\nconst %s* g = (const %s*)a.ptr[%d] + (b0.o[%d] + plo * a.st[%d][%d]);\n", raw, raw, op, op,
                      op, dim);
        sf_buf_printf(src,
                      "ok = ok && a.st[%d][%d] != 0 && a.st[%d][%d] == 1 && (packed || col0 %% %lldll + W <= %lldll) && "
                      "((u64)g & 15) == 0 && ((a.st[%d][%d] * (i64)sizeof(%s)) & 15) == 0;\n}\n",
                      op, dim, op, inner, (long long)shape[inner], (long long)shape[inner], op, dim, raw);
    }
    sf_buf_puts(src, "if (!ok) return false;\n");
    for (int op = 0; op < k->nops; op++) {
        if (!(ld_ops >> op & 1u) || k->ops[op].out || soff[op] < 0) continue;
        const char *raw = sf_cg_rawtype(f->values[k->ops[op].value].dtype);
        sf_buf_printf(src,
                      "{\n"
                      "constexpr int RB = W * (int)sizeof(%s), PR = RB / 16, JS = NT / PR; /* bytes, pieces a row; rows a round */\n"
                      "static_assert(RB %% 16 == 0 && NT %% PR == 0, \"whole pieces, whole rows a round\");\n"
                      "const i64 rs = a.st[%d][%d] * (i64)sizeof(%s);\n"
                      "const int j0 = (int)threadIdx.x / PR, q0 = (int)threadIdx.x - j0 * PR;\n"
                      "const char* g = (const char*)((const %s*)a.ptr[%d] + (b0.o[%d] + plo * a.st[%d][%d])) + j0 * rs + q0 * 16;\n"
                      "char* d = s + %d * N * W + j0 * RB + q0 * 16;\n"
                      "#pragma unroll\n"
                      "for (int r = 0; r < (N + JS - 1) / JS; ++r)\n"
                      "if (N %% JS == 0 || j0 + r * JS < N) sf_cp_async<16>(d + r * JS * RB, g + (i64)(r * JS) * rs);\n}\n",
                      raw, op, dim, raw, raw, op, op, op, dim, soff[op]);
    }
    sf_buf_puts(src, "return true;\n}\n");
    sf_buf_puts(src, "template <int W, int N> static __device__ __forceinline__ void ld_col_s(const sf_args& a, const B& b, i64 len, i64 t0, i64 tt0, int n, const char* s, int c, T (&v)[N]) {\n");
    sf_buf_printf(src, "const i64 plo = %s;\nconst int rel = (int)(plo - (%s));\n(void)rel;\n", rev ? "len - t0 - N" : "t0",
                  rev ? "len - tt0 - n" : "tt0");
    for (int op = 0; op < k->nops; op++) {
        if (!(ld_ops >> op & 1u) || k->ops[op].out) continue;
        const char *raw = sf_cg_rawtype(f->values[k->ops[op].value].dtype);
        if (soff[op] < 0) /* broadcast along the scan: one element a column */
            sf_buf_printf(src, "%s r%d[N];\n#pragma unroll\nfor (int k = 0; k < N; ++k) r%d[k] = *((const %s*)a.ptr[%d] + b.o[%d]);\n",
                          raw, op, op, raw, op, op);
        else
            sf_buf_printf(src,
                          "%s r%d[N];\n{\nconst %s* q = (const %s*)(s + %d * n * W) + (rel * W + c);\n#pragma unroll\nfor (int k = 0; k < N; ++k) r%d[k] = q[k * W];\n}\n",
                          raw, op, raw, raw, soff[op], op);
    }
    sf_buf_printf(src, "#pragma unroll\nfor (int k = 0; k < N; ++k) {\nconst int kk = %s;\nconst i64 p = plo + kk;\n(void)p;\n",
                  rev ? "N - 1 - k" : "k");
    if (ldv) sf_buf_puts(src, ldv);
    sf_buf_printf(src, "v[k] = %s;\n}\n}\n", elem);
}

/* Column scans with no look-back (the default for grids of about a column block an SM,
 * below; bench/NOTES.md session 18): a block owns W columns and streams their chunks of
 * RG*L steps in scan order through a ring of S stages in dynamic shared memory
 * (cp.async groups), carrying each column's prefix from chunk to chunk.  No ticket, no
 * published states, no waits on other blocks; the fold of a chunk has a fixed shape
 * (each row group's L steps in order, the row groups before it in order, then the
 * carry's three levels), so the same bits on every run.  An output is the fold of at
 * most L + RG + 2*255 + 3 + L operations plus one a 65536 chunks (about 600 for any
 * practical column; a single carry chunk after chunk was nchunks * RG deep, which broke
 * the 2^-40 * sum|x| bound of float sums, DESIGN.md §1, past ~16384 chunks).
 * Emitted into a kernel's source only when chosen, so the other kernels' text, and
 * their cache keys, stay as they were.  Pass one and the output step repeat those of
 * sf_col_tile_scan's staged tile; sharing them would put a helper in the prelude and
 * change every kernel's key (bench/README.md): merge them at the next prelude change.
 * HOLD (below, at the kernel's choice): pass two takes the steps pass one kept in
 * registers instead of reading and converting them again. */
static const char *const col_stream_skeleton[] = {
    "#ifndef SF_COL_STREAM",
    "#define SF_COL_STREAM",
    "__device__ __forceinline__ void sf_cp_commit() {",
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800",
    "    asm volatile(\"cp.async.commit_group;\" ::: \"memory\");",
    "#endif",
    "}",
    "template <int N> __device__ __forceinline__ void sf_cp_wait_group() {",
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800",
    "    asm volatile(\"cp.async.wait_group %0;\" ::\"n\"(N) : \"memory\");",
    "#endif",
    "}",
    "template <class Op, class Io, int W, int RG, int L, int S, bool EXCL, bool HOLD, bool EARLY>",
    "__device__ __forceinline__ void sf_col_stream_scan(const sf_args& a, i64 ncols, i64 len, i64 nchunks, i64 ncb) {",
    "    typedef typename Op::T T;",
    "    static_assert(S >= 2 && S <= 32, \"a ring of 2 to 32 stages\");",
    "    __shared__ T s_x[RG][W];",
    "    extern __shared__ __align__(16) char s_ring[];",
    "    constexpr int NS = RG * L, SB = NS * W * Io::SB; /* steps, bytes a stage */",
    "    constexpr int SUB = L % 8 == 0 ? 8 : L;",
    "    const int c = (int)threadIdx.x % W, rg = (int)threadIdx.x / W;",
    "    for (i64 cb = blockIdx.x; cb < ncb; cb += gridDim.x) {",
    "        const i64 col = cb * W + c;",
    "        const bool valid = col < ncols, full = (cb + 1) * W <= ncols;",
    "        typename Io::B b;",
    "        if (valid) Io::base(a, col, b);",
    "        /* chunk q's copies into stage q % S (whole chunks of whole column blocks that",
    "         * pass col_stage's checks; the others are read from global memory) */",
    "        auto issue = [&](i64 q) -> bool {",
    "            return q < nchunks && full && (q + 1) * NS <= len &&",
    "                   Io::template col_stage<W, NS, RG * W>(a, cb * W, len, q * NS, s_ring + (int)(q % S) * SB);",
    "        };",
    "        /* chunks in flight ahead of the one being folded: S - 1, or S with HOLD and EARLY (a",
    "         * stage is then free once its pass one is done, so the next copies go there",
    "         * before pass two instead of after it) */",
    "        constexpr int PF = HOLD && EARLY ? S : S - 1;",
    "        u32 stgm = 0; /* bit q % S: chunk q staged */",
    "        for (int q = 0; q < PF; ++q) {",
    "            if (issue(q)) stgm |= 1u << q;",
    "            sf_cp_commit();",
    "        }",
    "        /* the prefix of the chunks before, carried in three levels so that its chain",
    "         * of operations stays short for any column length: c0 folds the totals of the",
    "         * chunks since the last multiple of 256, c1 those runs of 256 since the last",
    "         * multiple of 65536, c2 the runs of 65536 (the prefix before chunk ch is",
    "         * (c2 (+) c1) (+) c0: at most nchunks/65536 + 2*255 + 2 operations deep) */",
    "        T c0 = Op::id(), c1 = Op::id(), c2 = Op::id();",
    "        for (i64 ch = 0; ch < nchunks; ++ch) {",
    "            sf_cp_wait_group<PF - 1>(); /* this thread's copies of chunk ch are in */",
    "            __syncthreads(); /* everyone's; and chunk ch - 1's stage and s_x are free */",
    "            if (PF < S) {",
    "                const int sn = (int)((ch + S - 1) % S);",
    "                stgm &= ~(1u << sn);",
    "                if (issue(ch + S - 1)) stgm |= 1u << sn;",
    "                sf_cp_commit();",
    "            }",
    "            const int sl = (int)(ch % S);",
    "            const bool stg = (stgm >> sl) & 1u;",
    "            const char* st = s_ring + sl * SB;",
    "            const i64 tt0 = ch * (i64)NS, t0 = tt0 + (i64)rg * L;",
    "            T agg = Op::id();",
    "            T h[HOLD ? L : 1]; /* HOLD: the chunk's values, kept for pass two */",
    "            if (stg) {",
    "#pragma unroll",
    "                for (int j = 0; j < L / SUB; ++j) {",
    "                    T u[SUB];",
    "                    Io::template ld_col_s<W, SUB>(a, b, len, t0 + j * SUB, tt0, NS, st, c, u);",
    "#pragma unroll",
    "                    for (int k = 0; k < SUB; ++k) {",
    "                        agg = Op::op(agg, u[k]);",
    "                        if (HOLD) h[HOLD ? j * SUB + k : 0] = u[k];",
    "                    }",
    "                }",
    "            } else {",
    "#pragma unroll 4",
    "                for (int k = 0; k < L; ++k) agg = Op::op(agg, (valid && t0 + k < len) ? Io::ld(a, b, len, t0 + k) : Op::id());",
    "            }",
    "            s_x[rg][c] = agg;",
    "            __syncthreads(); /* and, with HOLD, chunk ch's stage is read: EARLY refills it */",
    "            if (PF == S) {",
    "                stgm &= ~(1u << sl);",
    "                if (issue(ch + S)) stgm |= 1u << sl;",
    "                sf_cp_commit();",
    "            }",
    "            /* run: the chunks before (+) the row groups before this one in the chunk;",
    "             * tot: the chunk's row groups, folded apart from the carry.  One fold in",
    "             * every row group, its RG reads issued together */",
    "            T xs[RG];",
    "#pragma unroll",
    "            for (int k = 0; k < RG; ++k) xs[k] = s_x[k][c];",
    "            T below = Op::id(), tot = Op::id();",
    "#pragma unroll",
    "            for (int k = 0; k < RG; ++k) {",
    "                if (k == rg) below = tot;",
    "                tot = Op::op(tot, xs[k]);",
    "            }",
    "            T run = Op::op(Op::op(Op::op(c2, c1), c0), below);",
    "            c0 = Op::op(c0, tot);",
    "            if ((ch & 255) == 255) {",
    "                c1 = Op::op(c1, c0);",
    "                c0 = Op::id();",
    "                if ((ch & 65535) == 65535) {",
    "                    c2 = Op::op(c2, c1);",
    "                    c1 = Op::id();",
    "                }",
    "            }",
    "            auto put = [&](int k, const T& x) {",
    "                if (EXCL) {",
    "                    Io::st(a, b, len, t0 + k, run);",
    "                    run = Op::op(run, x);",
    "                } else {",
    "                    run = Op::op(run, x);",
    "                    Io::st(a, b, len, t0 + k, run);",
    "                }",
    "            };",
    "            if (stg && HOLD) {",
    "#pragma unroll",
    "                for (int k = 0; k < L; ++k) put(k, h[HOLD ? k : 0]);",
    "            } else if (stg) {",
    "#pragma unroll",
    "                for (int j = 0; j < L / SUB; ++j) {",
    "                    T u[SUB];",
    "                    Io::template ld_col_s<W, SUB>(a, b, len, t0 + j * SUB, tt0, NS, st, c, u);",
    "#pragma unroll",
    "                    for (int k = 0; k < SUB; ++k) put(j * SUB + k, u[k]);",
    "                }",
    "            } else if (valid) {",
    "#pragma unroll 4",
    "                for (int k = 0; k < L; ++k)",
    "                    if (t0 + k < len) put(k, Io::ld(a, b, len, t0 + k));",
    "            }",
    "        }",
    "        sf_cp_wait_group<0>(); /* the ring is empty before the next column block */",
    "        __syncthreads();",
    "    }",
    "}",
    "#endif",
};

/* The members that the raked row tiles (cuda_rake.c, RK = 2) add to a scan Io, into rk
 * (emitted only into the kernels that rake, as struct Io_kNR : Io_kN, so no other
 * kernel's text changes):
 *   OIP: every output's bytes of a step sit where a staged input's do (the same offset
 *     in the stage, the same size), so a thread may write a chunk's outputs over the
 *     chunk's inputs it has just read, and the outputs read no input again;
 *   st_items_s<N>: the outputs of N steps into the stage at slot rel (as st_items writes
 *     them to global memory);
 *   flush_s<N>: N steps of every output from the stage at slot rel to global memory at
 *     t0 (one vector access each; the caller checked the span with fast_span). */
static bool emit_rake_stores(sf_buf *rk, const scanfuse_fusion *f, const sf_cuda_kernel *k, uint32_t st_ops,
                             uint32_t ld_ops, const int *stg, bool rev, const char *stv) {
    int ooff[SF_CUDA_MAXOPS], ob = 0, nout = 0;
    bool oip = true;
    for (int op = 0; op < k->nops; op++) {
        ooff[op] = -1;
        if (!(st_ops >> op & 1u) || !k->ops[op].out) continue;
        const size_t sz = scanfuse_dtype_size(f->values[k->ops[op].value].dtype);
        ooff[op] = ob;
        ob += (int)sz;
        nout++;
        bool match = false;
        for (int i = 0; i < k->nops; i++)
            match = match || ((ld_ops >> i & 1u) && !k->ops[i].out && stg[i] == ooff[op] &&
                              scanfuse_dtype_size(f->values[k->ops[i].value].dtype) == sz);
        oip = oip && match;
    }
    /* an epilogue that reads an input again (a prologue value stored as an output of its
     * own) reads it from global memory in st_items, which st_items_s has no code for */
    for (int op = 0; op < k->nops; op++)
        if ((st_ops >> op & 1u) && !k->ops[op].out) oip = false;
    sf_buf_printf(rk, "static constexpr bool OIP = %s;\n", oip && nout > 0 ? "true" : "false");
    sf_buf_puts(rk, "template <int N> static __device__ __forceinline__ void st_items_s(const sf_args& a, const B& b, i64 len, i64 t0, char* sg, int rel, int ts, const T (&v)[N]) {\n");
    sf_buf_printf(rk, "const i64 plo = %s;\n(void)plo;\n", rev ? "len - t0 - N" : "t0");
    for (int op = 0; op < k->nops; op++)
        if (ooff[op] >= 0) sf_buf_printf(rk, "%s w%d[N];\n", sf_cg_rawtype(f->values[k->ops[op].value].dtype), op);
    sf_buf_printf(rk, "#pragma unroll\nfor (int k = 0; k < N; ++k) {\nconst int kk = %s;\nconst i64 p = plo + kk;\n(void)p;\n"
                      "const T& s = v[k];\n(void)s;\n", rev ? "N - 1 - k" : "k");
    if (stv) sf_buf_puts(rk, stv);
    sf_buf_puts(rk, "}\n");
    for (int op = 0; op < k->nops; op++)
        if (ooff[op] >= 0) {
            const char *raw = sf_cg_rawtype(f->values[k->ops[op].value].dtype);
            sf_buf_printf(rk, "sf_vstore((%s*)(sg + %d * ts + rel * (int)sizeof(%s)), w%d);\n", raw, ooff[op], raw, op);
        }
    sf_buf_puts(rk, "}\n");
    /* raw bytes, not typed vectors: through sf_vstore's union the compiler split a
     * 16-byte store of 16-bit outputs into four 32-bit ones (see st16 above) */
    sf_buf_puts(rk, "template <int NB> static __device__ __forceinline__ void copy_s(void* d, const void* s) {\n"
                    "if constexpr (NB % 16 == 0) {\n#pragma unroll\nfor (int i = 0; i < NB / 16; ++i) ((uint4*)d)[i] = ((const uint4*)s)[i];\n"
                    "} else if constexpr (NB % 8 == 0) {\n#pragma unroll\nfor (int i = 0; i < NB / 8; ++i) ((uint2*)d)[i] = ((const uint2*)s)[i];\n"
                    "} else if constexpr (NB % 4 == 0) {\n#pragma unroll\nfor (int i = 0; i < NB / 4; ++i) ((u32*)d)[i] = ((const u32*)s)[i];\n"
                    "} else {\n#pragma unroll\nfor (int i = 0; i < NB; ++i) ((char*)d)[i] = ((const char*)s)[i];\n}\n}\n");
    sf_buf_puts(rk, "template <int N> static __device__ __forceinline__ void flush_s(const sf_args& a, const B& b, i64 len, i64 t0, const char* sg, int rel, int ts) {\n");
    sf_buf_printf(rk, "const i64 plo = %s;\n(void)plo;\n", rev ? "len - t0 - N" : "t0");
    for (int op = 0; op < k->nops; op++)
        if (ooff[op] >= 0) {
            const char *raw = sf_cg_rawtype(f->values[k->ops[op].value].dtype);
            sf_buf_printf(rk, "copy_s<N * (int)sizeof(%s)>((%s*)a.ptr[%d] + (b.o[%d] + plo), sg + %d * ts + rel * (int)sizeof(%s));\n",
                          raw, raw, op, op, ooff[op], raw);
        }
    sf_buf_puts(rk, "}\n");
    return oip && nout > 0;
}

/* Whether value v, broadcast against a kernel of nd dims, varies along the kernel's dim
 * of len steps (its dims aligned to the kernel's last ones). */
static bool scan_varying(const sf_value *v, int dim, int nd, int64_t len) {
    int vd = dim - (nd - v->ndim);
    return len > 1 && vd >= 0 && vd < v->ndim && v->shape[vd] == len;
}

/* The Io struct of a scan kernel.  Returns false when an operand did not fit.  *sb: the
 * bytes a step of the inputs Io::stage copies (SB); *nbc: how many inputs of a row
 * kernel are read again by every row while varying along the scan (not staged). */
static bool emit_scan_io(sf_cg *g, sf_cuda_kernel *k, const char *io, const scan_kind *sk,
                         int anchor, int *sbp, int *nbcp, sf_buf *rk, bool *oipp) {
    const scanfuse_fusion *f = g->f;
    const sf_node *n = &f->nodes[anchor];
    const sf_value *x = &f->values[n->in[0]], *y = &f->values[n->out[0]];
    int dim = (int)n->a.dim, nd = x->ndim;
    bool rev = n->a.reverse;
    scanfuse_dtype dt = y->dtype;
    const char *pexpr = rev ? "len - 1 - t" : "t";
    int *nodes = sf_malloc((size_t)(f->nnodes > 0 ? f->nnodes : 1) * sizeof *nodes);
    uint8_t *done = sf_malloc((size_t)(f->nvalues > 0 ? f->nvalues : 1));
    if (!nodes || !done) {
        free(nodes);
        free(done);
        return false;
    }
    int nn = sf_cg_group_nodes(g, nodes);
    scan_ctx u = {dim};
    bool ok = true;
    sf_buf ldb = {0}, ldv = {0}, stb = {0}, stv = {0};
    uint32_t ld_ops = 0, st_ops = 0;
    for (int pass = 0; pass < 4; pass++) {
        /* 0: ld (element), 1: ld (vector), 2: st (element), 3: st (vector) */
        bool vec = pass == 1 || pass == 3, isst = pass >= 2;
        sf_buf *b = pass == 0 ? &ldb : pass == 1 ? &ldv : pass == 2 ? &stb : &stv;
        sf_cg_ectx e;
        sf_cg_ectx_init(&e, g, k, b, done, 0);
        e.coord = scan_coord;
        e.off = scan_off;
        e.user = &u;
        e.vec = vec;
        if (!isst) {
            sf_cg_value(&e, n->in[0]);
            sf_buf_printf(b, "const %s x = ", sf_cg_ctype(dt));
            char name[24];
            snprintf(name, sizeof name, "v%d", (int)n->in[0]);
            sf_cg_conv(b, x->dtype, dt, name);
            sf_buf_printf(b, ";\n");
        } else {
            e.nanchor = sk->index ? 2 : 1;
            e.anchor_val[0] = n->out[0];
            e.anchor_expr[0] = sk->val; /* the anchor's result from the state */
            e.anchor_round[0] = true;
            if (sk->index) {
                e.anchor_val[1] = n->out[1];
                e.anchor_expr[1] = "s.i";
            }
            for (int i = 0; i < nn; i++) {
                const sf_node *m = &f->nodes[nodes[i]];
                for (int r = 0; r < m->nout; r++) {
                    if (!sf_cg_stored(g, m->out[r])) continue;
                    sf_cg_value(&e, m->out[r]);
                    sf_cg_store(&e, m->out[r]);
                }
            }
        }
        if (e.overflow) ok = false;
        if (pass == 0) ld_ops = e.used_ops;
        if (pass == 2) st_ops = e.used_ops;
    }
    sf_buf *src = g->src;
    if (ok) {
        sf_cg_put_lines(src, sk->defs);
        sf_buf_printf(src, "struct %s {\ntypedef %s Op;\ntypedef Op::T T;\n", io, sk->op);
        sf_buf_printf(src, "struct B { i64 o[%d]; i64 c[%d]; };\n", k->nops > 0 ? k->nops : 1,
                      nd > 0 ? nd : 1);
        sf_buf_puts(src, "static __device__ __forceinline__ void base(const sf_args& a, i64 r, B& b) {\n");
        int other[SF_MAX_DIMS], no = 0;
        for (int d = 0; d < nd; d++)
            if (d != dim) other[no++] = d;
        sf_cg_coords(src, "c", "r", no, other, x->shape);
        for (int j = 0; j < no; j++) sf_buf_printf(src, "b.c[%d] = c%d;\n", other[j], other[j]);
        for (int op = 0; op < k->nops; op++) {
            sf_buf_printf(src, "b.o[%d] = ", op);
            sf_cg_offset(src, "c", op, no, other, x->shape);
            sf_buf_puts(src, ";\n");
        }
        sf_buf_puts(src, "}\n");
        /* one element */
        sf_buf_puts(src, "static __device__ __forceinline__ T ld(const sf_args& a, const B& b, i64 len, i64 t) {\n");
        sf_buf_printf(src, "(void)len;\nconst i64 p = %s;\n(void)p;\n", pexpr);
        if (ldb.data) sf_buf_puts(src, ldb.data);
        sf_buf_printf(src, "return %s;\n}\n", sk->elem);
        sf_buf_puts(src, "static __device__ __forceinline__ void st(const sf_args& a, const B& b, i64 len, i64 t, const T& s) {\n");
        sf_buf_printf(src, "(void)len;\nconst i64 p = %s;\n(void)p;\n(void)s;\n", pexpr);
        if (stb.data) sf_buf_puts(src, stb.data);
        sf_buf_puts(src, "}\n");
        /* N consecutive steps: vector accesses when every operand used is contiguous
         * along the scan and aligned, or (inputs) one element there.  One path an input
         * (VL_VEC, VL_ONE; an expanded input, stride 0 along the scan despite its size,
         * then takes the element path) for kernels that read two or more inputs, the
         * run-time test (VL_TEST) for one input.  H200, NOTES session 13, in one run: the
         * fused bfloat16 chain (two inputs) 0.644 -> 0.721 of copy with one path, but
         * one-input rows slower with it (1-D float32 0.747 -> 0.703, one-tile float32
         * rows 0.909 -> 0.861: ptxas spills more around the straight-line loads).
         * One path too for a 16-bit input in rows of a kernel of several rows (NOTES
         * session 27 run 1, in one run: float16 [32, 2^20] 0.720 -> 0.755, bfloat16
         * [4096, 4096] dim 1 0.873 -> 0.884; 1-D float16 and bfloat16 0.77 / 0.76 ->
         * 0.75 / 0.74 with it, so not for one row).  row_io1=1: one path always, 0: never. */
        int mode[SF_CUDA_MAXOPS], nin = 0;
        bool narrow = false;
        for (int op = 0; op < k->nops; op++)
            if ((ld_ops >> op & 1u) && !k->ops[op].out) {
                nin++;
                narrow = narrow || scanfuse_dtype_size(f->values[k->ops[op].value].dtype) == 2;
            }
        /* a row kernel (nothing after the scanned dim) */
        bool row_kernel = true;
        for (int d = dim + 1; d < nd; d++)
            if (x->shape[d] != 1) row_kernel = false;
        bool many_rows = row_kernel && sf_value_numel(x) > x->shape[dim];
        int io1 = sf_cg_tune("row_io1", 2);
        bool one_path = io1 == 1 || (io1 == 2 && (nin >= 2 || (narrow && many_rows)));
        for (int op = 0; op < k->nops; op++)
            mode[op] = !one_path ? VL_TEST
                     : scan_varying(&f->values[k->ops[op].value], dim, nd, x->shape[dim]) ? VL_VEC : VL_ONE;
        /* a row kernel's inputs read again by every row while varying along the scan (a
         * weight vector): *nbcp */
        int reread = 0;
        for (int op = 0; op < k->nops; op++) {
            if (!(ld_ops >> op & 1u) || k->ops[op].out) continue;
            const sf_value *v = &f->values[k->ops[op].value];
            reread += row_kernel && sf_value_numel(v) != sf_value_numel(x) && scan_varying(v, dim, nd, x->shape[dim]);
        }
        *nbcp = reread;
        const int st16 = sf_cg_tune("st16", 1);
        for (int w = 0; w < 2; w++) {
            bool isst = w == 1;
            uint32_t ops = isst ? st_ops : ld_ops;
            /* CK = false: the caller has checked the whole span with fast_span, so the
             * accesses are straight-line code (no branch between one strip's load and
             * the next: the compiler can issue a tile's loads together) */
            if (!isst)
                sf_buf_puts(src, "template <int N, bool CK = true> static __device__ __forceinline__ void ld_items(const sf_args& a, const B& b, i64 len, i64 t0, T (&v)[N]) {\n");
            else
                sf_buf_puts(src, "template <int N, bool CK = true> static __device__ __forceinline__ void st_items(const sf_args& a, const B& b, i64 len, i64 t0, const T (&v)[N]) {\n");
            sf_buf_printf(src, "const i64 plo = %s;\nbool fast = !CK || t0 + N <= len;\n", rev ? "len - t0 - N" : "t0");
            for (int op = 0; op < k->nops; op++) {
                if (!(ops >> op & 1u)) continue;
                const char *raw = sf_cg_rawtype(f->values[k->ops[op].value].dtype);
                sf_buf_printf(src, "%s* q%d = (%s*)a.ptr[%d] + (b.o[%d] + plo);\n", raw, op, raw, op, op);
                if (k->ops[op].out) /* outputs: contiguous and aligned */
                    sf_buf_printf(src, "fast = fast && (!CK || (a.st[%d][%d] == 1 && sf_valigned<%s, N>(q%d)));\n", op,
                                  dim, raw, op);
                else if (mode[op] == VL_VEC) /* inputs along the scan: contiguous and aligned too */
                    sf_buf_printf(src, "fast = fast && (!CK || (a.st[%d][%d] == 1 && sf_valigned<%s, N>(q%d)));\n", op,
                                  dim, raw, op);
                else if (mode[op] == VL_TEST) /* or broadcast along the scan (stride 0: one element) */
                    sf_buf_printf(src, "fast = fast && (!CK || a.st[%d][%d] == 0 || (a.st[%d][%d] == 1 && sf_valigned<%s, N>(q%d)));\n",
                                  op, dim, op, dim, raw, op);
            }
            sf_buf_puts(src, "if (fast) {\n");
            for (int op = 0; op < k->nops; op++)
                if ((ops >> op & 1u) && k->ops[op].out)
                    sf_buf_printf(src, "%s w%d[N];\n", sf_cg_rawtype(f->values[k->ops[op].value].dtype), op);
            emit_vec_loads(src, f, k, ops, dim, mode, NULL);
            sf_buf_printf(src, "#pragma unroll\nfor (int k = 0; k < N; ++k) {\nconst int kk = %s;\nconst i64 p = plo + kk;\n(void)p;\n",
                          rev ? "N - 1 - k" : "k");
            if (!isst) {
                if (ldv.data) sf_buf_puts(src, ldv.data);
                sf_buf_printf(src, "v[k] = %s;\n", sk->elem);
            } else {
                sf_buf_puts(src, "const T& s = v[k];\n(void)s;\n");
                if (stv.data) sf_buf_puts(src, stv.data);
            }
            sf_buf_puts(src, "}\n");
            for (int op = 0; op < k->nops; op++)
                if ((ops >> op & 1u) && k->ops[op].out) {
                    /* 16-bit outputs, 8 a lane, in rows beside an input read by every row
                     * (the fused chain's kind): packed into one uint4 by shifts and stored
                     * by one st.global.v4.  Through sf_vstore (and through a plain uint4
                     * store too) the compiler stored the first strip of a thread as four
                     * 32-bit stores: in the fused bfloat16 chain 7/4 of the output's
                     * sectors were written.  H200, NOTES session 14 run 6, in one run:
                     * the fused chain 0.753 -> 0.811 of copy; the 1-D bfloat16 and
                     * float16 scans within 1 %, bfloat16 [4096, 4096] dim 1 0.842 ->
                     * 0.797, so those keep sf_vstore.  st16=2: every 16-bit output,
                     * st16=0: none. */
                    if (scanfuse_dtype_size(f->values[k->ops[op].value].dtype) == 2 &&
                        (st16 == 2 || (st16 == 1 && reread > 0)))
                        sf_buf_printf(src, "if constexpr (N == 8) {\nuint4 pk;\n"
                                           "pk.x = (u32)w%d[0] | (u32)w%d[1] << 16;\npk.y = (u32)w%d[2] | (u32)w%d[3] << 16;\n"
                                           "pk.z = (u32)w%d[4] | (u32)w%d[5] << 16;\npk.w = (u32)w%d[6] | (u32)w%d[7] << 16;\n"
                                           "#if defined(__CUDA_ARCH__)\n"
                                           "asm volatile(\"st.global.v4.u32 [%%0], {%%1, %%2, %%3, %%4};\" :: \"l\"(q%d), \"r\"(pk.x), \"r\"(pk.y), \"r\"(pk.z), \"r\"(pk.w));\n"
                                           "#else\n*(uint4*)q%d = pk;\n#endif\n"
                                           "} else sf_vstore(q%d, w%d);\n",
                                      op, op, op, op, op, op, op, op, op, op, op, op);
                    else
                        sf_buf_printf(src, "sf_vstore(q%d, w%d);\n", op, op);
                }
            if (!isst)
                sf_buf_puts(src, "} else {\n#pragma unroll\nfor (int k = 0; k < N; ++k) v[k] = (t0 + k < len) ? ld(a, b, len, t0 + k) : Op::id();\n}\n}\n");
            else
                sf_buf_puts(src, "} else {\n#pragma unroll\nfor (int k = 0; k < N; ++k) if (t0 + k < len) st(a, b, len, t0 + k, v[k]);\n}\n}\n");
        }
        /* Staged loads (sf_row_scan's STAGE): the inputs of pass one's strips copied
         * into the block's shared memory by cp.async, then read from there by both
         * passes.  Input op i's part of a tile of ts steps starts at byte off_i * ts
         * (off_i: the bytes a step of the inputs before it), step rel of the tile at
         * rel * size_i within it.  A strip whose copy is not 4, 8 or 16 bytes, and
         * broadcast inputs, are read from global memory as in ld_items. */
        int sb = 0, soff[SF_CUDA_MAXOPS];
        for (int op = 0; op < k->nops; op++) {
            soff[op] = sb;
            if (!(ld_ops >> op & 1u) || k->ops[op].out) continue;
            const sf_value *v = &f->values[k->ops[op].value];
            if (!row_kernel && !scan_varying(v, dim, nd, x->shape[dim])) soff[op] = -1;
            else sb += (int)scanfuse_dtype_size(v->dtype);
        }
        /* Row kernels stage only the inputs they stream (of the kernel's full size);
         * inputs read again by every row (a weight vector along the scan) come from
         * the L1 or L2 in both passes (soff -1), so the stage holds one copy of the
         * streamed bytes and no block copies the weights into it row after row.  Column
         * kernels stage every input that varies along the scan (soff above); the others
         * are one element a column (read from global memory, no stage bytes). */
        int rsoff[SF_CUDA_MAXOPS], rsb = 0;
        for (int op = 0; op < k->nops; op++) {
            rsoff[op] = rsb;
            if (!(ld_ops >> op & 1u) || k->ops[op].out) continue;
            const sf_value *v = &f->values[k->ops[op].value];
            if (row_kernel && sf_value_numel(v) != sf_value_numel(x)) {
                rsoff[op] = -1;
            } else {
                rsb += (int)scanfuse_dtype_size(v->dtype);
            }
        }
        const int *stg = row_kernel ? rsoff : soff;
        if (row_kernel) sb = rsb;
        sf_buf_printf(src, "static constexpr int SB = %d; /* staged bytes a step */\n", sb);
        *sbp = sb;
        sf_buf_puts(src, "template <int N> static __device__ __forceinline__ void stage(const sf_args& a, const B& b, i64 len, i64 t0, char* s, int rel, int ts) {\n");
        sf_buf_printf(src, "const i64 plo = %s;\n(void)plo;\n", rev ? "len - t0 - N" : "t0");
        for (int op = 0; op < k->nops; op++) {
            if (!(ld_ops >> op & 1u) || k->ops[op].out) continue;
            const char *raw = sf_cg_rawtype(f->values[k->ops[op].value].dtype);
            if (stg[op] < 0) continue;
            sf_buf_printf(src, "if constexpr (sf_stageable<%s, N>::v) if (a.st[%d][%d] == 1) sf_cp_async<N * (int)sizeof(%s)>(s + %d * ts + rel * (int)sizeof(%s), (const %s*)a.ptr[%d] + (b.o[%d] + plo));\n",
                          raw, op, dim, raw, stg[op], raw, raw, op, op);
        }
        sf_buf_puts(src, "}\n");
        sf_buf_puts(src, "template <int N> static __device__ __forceinline__ void ld_items_s(const sf_args& a, const B& b, i64 len, i64 t0, const char* s, int rel, int ts, T (&v)[N]) {\n");
        sf_buf_printf(src, "const i64 plo = %s;\n", rev ? "len - t0 - N" : "t0");
        emit_vec_loads(src, f, k, ld_ops, dim, mode, stg);
        sf_buf_printf(src, "#pragma unroll\nfor (int k = 0; k < N; ++k) {\nconst int kk = %s;\nconst i64 p = plo + kk;\n(void)p;\n",
                      rev ? "N - 1 - k" : "k");
        if (ldv.data) sf_buf_puts(src, ldv.data);
        sf_buf_printf(src, "v[k] = %s;\n}\n}\n", sk->elem);
        /* Whether strips of N steps starting at t0, t0 + stride, ..., t0 + (count-1) *
         * stride are all in range and take the vector path: every output, and every
         * input that varies along the scan, is contiguous and aligned at t0; stride is a
         * multiple of N, so the alignment holds for every strip. */
        sf_buf_puts(src, "template <int N> static __device__ __forceinline__ bool fast_span(const sf_args& a, const B& b, i64 len, i64 t0, i64 stride, int count) {\n");
        sf_buf_printf(src, "const i64 tl = t0 + (i64)(count - 1) * stride;\nif (tl + N > len) return false;\nconst i64 plo = %s;\nbool fast = true;\n",
                      rev ? "len - tl - N" : "t0");
        uint32_t all = ld_ops | st_ops;
        for (int op = 0; op < k->nops; op++) {
            if (!(all >> op & 1u)) continue;
            const char *raw = sf_cg_rawtype(f->values[k->ops[op].value].dtype);
            if (k->ops[op].out)
                sf_buf_printf(src, "fast = fast && a.st[%d][%d] == 1 && sf_valigned<%s, N>((%s*)a.ptr[%d] + (b.o[%d] + plo));\n",
                              op, dim, raw, raw, op, op);
            else if (mode[op] == VL_VEC)
                sf_buf_printf(src, "fast = fast && a.st[%d][%d] == 1 && sf_valigned<%s, N>((%s*)a.ptr[%d] + (b.o[%d] + plo));\n",
                              op, dim, raw, raw, op, op);
            else if (mode[op] == VL_TEST)
                sf_buf_printf(src, "fast = fast && (a.st[%d][%d] == 0 || (a.st[%d][%d] == 1 && sf_valigned<%s, N>((%s*)a.ptr[%d] + (b.o[%d] + plo))));\n",
                              op, dim, op, dim, raw, raw, op, op);
        }
        sf_buf_puts(src, "return fast;\n}\n");
        *oipp = emit_rake_stores(rk, f, k, st_ops, ld_ops, stg, rev, stv.data);
        emit_col_stage(src, f, k, ld_ops, dim, nd, x->shape, rev, soff, ldv.data, sk->elem);
        sf_buf_puts(src, "};\n");
    }
    free(ldb.data);
    free(ldv.data);
    free(stb.data);
    free(stv.data);
    free(nodes);
    free(done);
    return ok;
}

/* Bytes of the widest element a kernel reads or writes (1 if none). */
static int widest(const scanfuse_fusion *f, const sf_cuda_kernel *k) {
    int w = 1;
    for (int op = 0; op < k->nops; op++) {
        int s = (int)scanfuse_dtype_size(f->values[k->ops[op].value].dtype);
        if (s > w) w = s;
    }
    return w > 16 ? 16 : w;
}
/* Bytes of the widest element among the operands of n elements, the ones a kernel of n
 * elements streams (the others are broadcast: read again and again); 1 if none. */
static int widest_streamed(const scanfuse_fusion *f, const sf_cuda_kernel *k, int64_t n) {
    int w = 1;
    for (int op = 0; op < k->nops; op++) {
        const sf_value *v = &f->values[k->ops[op].value];
        int s = (int)scanfuse_dtype_size(v->dtype);
        if (sf_value_numel(v) == n && s > w) w = s;
    }
    return w > 16 ? 16 : w;
}

/* The kernel's input operands (not outputs). */
static int count_inputs(const sf_cuda_kernel *k) {
    int c = 0;
    for (int op = 0; op < k->nops; op++)
        if (!k->ops[op].out) c++;
    return c;
}

/* A 0-d scan: the input converted (index 0), with the group's pointwise nodes. */
typedef struct scan0_arg {
    int anchor;
} scan0_arg;

static void body_scan0(sf_cg_ectx *e, void *arg) {
    const scan0_arg *sa = arg;
    const scanfuse_fusion *f = e->g->f;
    const sf_node *n = &f->nodes[sa->anchor];
    scanfuse_dtype dt = f->values[n->out[0]].dtype;
    sf_cg_value(e, n->in[0]);
    char name[24];
    snprintf(name, sizeof name, "v%d", (int)n->in[0]);
    sf_buf_printf(e->b, "const %s s0 = ", sf_cg_ctype(dt));
    sf_cg_conv(e->b, f->values[n->in[0]].dtype, dt, name);
    sf_buf_puts(e->b, ";\n");
    e->nanchor = n->nout;
    e->anchor_val[0] = n->out[0];
    e->anchor_expr[0] = "s0";
    if (n->nout > 1) {
        e->anchor_val[1] = n->out[1];
        e->anchor_expr[1] = "(i64)0";
    }
    for (int i = 0; i < f->nnodes; i++) {
        if (!e->g->in_seg[i]) continue;
        const sf_node *m = &f->nodes[i];
        for (int r = 0; r < m->nout; r++) {
            if (!sf_cg_stored(e->g, m->out[r])) continue;
            sf_cg_value(e, m->out[r]);
            sf_cg_store(e, m->out[r]);
        }
    }
}

static void elem_coord0(sf_cg_ectx *e, int d, sf_buf *out) {
    (void)e;
    (void)d;
    sf_buf_puts(out, "0");
}
static void elem_off0(sf_cg_ectx *e, int op, sf_buf *out) {
    (void)e;
    (void)op;
    sf_buf_puts(out, "0");
}

static scanfuse_status scan0(sf_cg *g, int anchor, char *msg, size_t msglen) {
    sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_ELEM, anchor);
    k->ndim = 0;
    k->block = 32;
    k->grid = 1;
    int ki = (int)(k - g->pl->k);
    uint8_t *done = sf_calloc((size_t)(g->f->nvalues > 0 ? g->f->nvalues : 1), 1);
    if (!done) {
        sf_msg(msg, msglen, "cuda: out of memory");
        return SCANFUSE_ERROR_MEMORY;
    }
    sf_buf body = {0};
    sf_cg_ectx e;
    memset(&e, 0, sizeof e);
    e.g = g;
    e.k = k;
    e.b = &body;
    e.coord = elem_coord0;
    e.off = elem_off0;
    e.done = done;
    scan0_arg sa = {anchor};
    body_scan0(&e, &sa);
    free(done);
    if (e.overflow) {
        free(body.data);
        sf_msg(msg, msglen, "cuda: a kernel needs more than %d operands", SF_CUDA_MAXOPS);
        return SCANFUSE_ERROR_UNSUPPORTED;
    }
    sf_buf_printf(g->src,
                  "extern \"C\" __global__ void __launch_bounds__(32) k%d(const sf_args a) {\n"
                  "if (blockIdx.x != 0 || threadIdx.x != 0) return;\n%s}\n\n",
                  ki, body.data ? body.data : "");
    free(body.data);
    return SCANFUSE_OK;
}

scanfuse_status sf_cg_scan(sf_cg *g, int anchor, char *msg, size_t msglen) {
    const scanfuse_fusion *f = g->f;
    const sf_node *n = &f->nodes[anchor];
    const sf_value *x = &f->values[n->in[0]], *y = &f->values[n->out[0]];
    if (sf_value_numel(y) == 0) return SCANFUSE_OK;
    if (x->ndim == 0) return scan0(g, anchor, msg, msglen);
    int dim = (int)n->a.dim;
    SF_ASSERT(dim >= 0 && dim < x->ndim);
    int64_t len = x->shape[dim], inner = 1, numel = sf_value_numel(y);
    for (int d = dim + 1; d < x->ndim; d++) inner *= x->shape[d];
    int64_t rows = numel / len;
    scan_kind sk;
    /* (warp_max below: 512 steps for the 16-byte states that long_rows matters to) */
    scan_kind_for(n, y->dtype, len, inner == 1 && len > sf_cg_tune("warp_max", 512), &sk);
    sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_SCAN_WARP, anchor);
    int ki = (int)(k - g->pl->k);
    k->ndim = x->ndim;
    for (int d = 0; d < x->ndim; d++) k->shape[d] = x->shape[d];
    char io[32];
    snprintf(io, sizeof io, "Io_k%d", ki);
    int inb = 0; /* the bytes a step that staged tiles hold (Io::SB) */
    int nbc = 0; /* inputs read again by every row, varying along the scan */
    sf_buf rkm = {0}; /* the members of the raked row tiles' Io (row_rake=2) */
    bool oip = false; /* the outputs fit over the staged inputs (Io::OIP) */
    if (!emit_scan_io(g, k, io, &sk, anchor, &inb, &nbc, &rkm, &oip)) {
        free(rkm.data);
        sf_msg(msg, msglen, "cuda: a kernel needs more than %d operands", SF_CUDA_MAXOPS);
        return SCANFUSE_ERROR_UNSUPPORTED;
    }
    sf_buf *src = g->src;
    bool excl = n->a.exclusive;
    int sms = g->sms > 0 ? g->sms : 132;
    int warp_max = sf_cg_tune("warp_max", sk.tsize > 8 ? 512 : 1024);
    if (inner == 1 && len <= warp_max) {
        k->kind = SF_CUK_SCAN_WARP;
        int items = pow2_at_least(sf_cg_ceil_div(len, 32));
        k->block = 256;
        int64_t blocks = sf_cg_ceil_div(rows, 8);
        k->grid = sf_cg_grid(blocks < (int64_t)sms * 64 ? blocks : (int64_t)sms * 64);
        sf_buf_printf(src,
                      "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                      "sf_warp_scan<%s::Op, %s, %d, %s>(a, %lldll, %lldll);\n}\n\n",
                      ki, io, io, items, excl ? "true" : "false", (long long)rows, (long long)len);
    } else if (inner == 1) {
        k->kind = SF_CUK_SCAN_ROW;
        /* Rows longer than one tile of 256 x 16 steps (the look-back path) take tiles of
         * 64 KB of the widest operand: 512 threads of 8 strips of 16-byte accesses (64
         * items of 2 bytes, 32 of 4, 16 of 8).  Every tile pays one look-back, so the
         * tile's bytes, not its steps, set its cost: with the 256 x 32-step tiles of
         * before, a bfloat16 1-D scan ran at 0.44 of copy and float32 at 0.65; with these
         * 0.60 and 0.66 (H200, NOTES session 7).  More than 8 strips a thread spill (each
         * keeps a state across the look-back).  Single-tile rows keep 256 x 16, which
         * fills the block for rows of 4096. */
        int v16 = 16 / widest(g->f, k);
        const int rkt = sf_cg_tune("row_rake", -1);
        /* Look-back rows of a 16-byte state whose operator may fold in any order (float
         * cumprod; sf_comm), outputs over the staged inputs: raked (row_rake=2, 32 steps a
         * thread).  Their strip scans cost 4 shuffles a step of each warp scan, their
         * strip states spill at 5 blocks an SM (48 registers, 120 bytes of stack for
         * float64).  H200, NOTES session 35 run 1, against the strips in the same run:
         * 1-D 2^26 float32 0.30 -> 0.40 of copy, float64 0.32 -> 0.50; 6 blocks an SM
         * (40 registers, float32 0.40 -> 0.44 against 5, run 3).  Rows of one whole tile
         * staged and raked too (run 3: [4096, 4096] dim 1 float32 0.49 -> 0.69).  Not
         * cummax of float64 (0.43 -> 0.20 raked). */
        const bool rake16 = rkt < 0 && sk.tsize > 8 && sk.comm && oip && nbc == 0;
        int items = sf_cg_tune("row_items", 0);
        if (items <= 0) {
            /* 16-byte states (float cumprod; float64/int64 cummax/cummin): 16 steps a
             * thread (H200, NOTES session 34 run 4, against 8: cumprod float32 1-D 0.23 ->
             * 0.29 of copy, rows of 4096 0.29 -> 0.49, bfloat16 1-D 0.15 -> 0.19); 32 on
             * the raked look-back rows of rake16 below (staged tiles of up to 40 KB) */
            items = sk.tsize > 8 ? (rake16 && len > 256 * 32 ? 32 : 16) : len > 256 * 16 ? 8 * v16 : 16;
            if (items > 64) items = 64;
        }
        /* two-level look-back groups (tile aggregates, group aggregates): a tile fetches at
         * most G-1 + G2-1 aggregates in one round; one chain link per G*G2 tiles */
        int gsz = sf_cg_tune("row_g", 128), g2 = sf_cg_tune("row_g2", 128);
        if (gsz > 128) gsz = 128;
        if (gsz < 1) gsz = 1;
        if (g2 > 128) g2 = 128;
        if (g2 < 1) g2 = 1;
        /* rows that need a look-back even with 256 threads: 512 (the same registers a
         * thread, 2 blocks an SM); row_threads=256 keeps 256 */
        int threads = sk.tsize <= 8 && len > 256 * (int64_t)items ? 512 : 256;
        threads = sf_cg_tune("row_threads", threads) == 256 ? 256 : threads;
        /* Look-back tiles staged in shared memory by cp.async (sf_row_scan's STAGE):
         * blocks of 256, a tile's inputs within 40 KB of static shared memory, 6 blocks
         * an SM.  Against the 512-thread register tiles on the H200 (NOTES session 8):
         * 1-D float16 0.60 -> 0.61-0.62, bfloat16 0.61 -> 0.62, int32 -> int64 0.60 ->
         * 0.64, [32, 2^20] float16 0.57-0.59 -> 0.63, [64, 131072] 0.66 -> 0.67-0.69,
         * float32 and int64 unchanged (0.66), in two runs.  row_stage=0: the register
         * tiles.  (Two stages a block, the next tile's copies issued before the current
         * tile's look-back, measured far slower for 1-D: 0.13-0.29, NOTES session 8.) */
        bool stage = sf_cg_tune("row_stage", 1) == 1 && g->pl->arch >= 80 && inb > 0 &&
                     len > 256 * (int64_t)items;
        /* One-tile rows staged too (no look-back: the stage frees the registers that
         * held the loads), when the row's streamed inputs fit 40 KB: by default for
         * rows that also read an input again by every row along the scan (bfloat16
         * rows scaled by float32 weights: the weights are not staged, and their loads
         * held beside the row's pushed the kernel to 4 blocks an SM); row_stage1=1:
         * every one-tile row (measured no faster for one input, NOTES session 9),
         * row_stage1=0: none. */
        /* Raked tiles by default (row_rake unset; below): where every output fits over the
         * staged inputs and no input is read again by every row; one-tile rows are then
         * staged too */
        const bool rake_auto = rkt < 0 && oip && nbc == 0 && sk.tsize <= 8;
        int st1 = sf_cg_tune("row_stage1", 2);
        /* (and rows of one whole tile of rake16's 16-byte states, raked below) */
        const bool rake16_one = rake16 && len == 256 * (int64_t)items;
        if (!stage && (st1 == 1 || (st1 == 2 && (nbc > 0 || rake_auto || rake16_one))) && g->pl->arch >= 80 && inb > 0 &&
            len <= 256 * (int64_t)items && 256 * (int64_t)items * inb <= 40960)
            stage = true;
        if (stage) { /* wide inputs: shorter tiles */
            int it = items;
            while (256 * (int64_t)it * inb > 40960 && it > v16) it /= 2;
            stage = 256 * (int64_t)it * inb <= 40960;
            if (stage) {
                items = it;
                threads = 256;
            }
        }
        /* One-tile rows of at most 8 KB of streamed input a tile: blocks of 128 with twice
         * the items, so twice the blocks an SM (8 of 64 registers a thread) hold twice the
         * bytes in flight.  H200 (NOTES session 9): bfloat16 [4096, 4096] dim 1 0.73 ->
         * 0.80 of copy; 16 KB tiles lost (float32 [4096, 4096] dim 1 0.96 -> 0.89,
         * rows of 8192 float32 0.92 -> 0.44).  row_threads=128 forces it for every
         * one-tile row, row_threads=256 keeps 256. */
        int rthr = sf_cg_tune("row_threads", 0);
        bool small_tile = 256 * (int64_t)items * widest_streamed(g->f, k, rows * len) <= 8192;
        if ((rthr == 128 || (rthr == 0 && small_tile)) && threads == 256 && !stage &&
            len <= threads * (int64_t)items && items <= 32) {
            threads = 128;
            items *= 2;
            gsz = gsz > 64 ? 64 : gsz; /* (sf_lookback: at most one aggregate a thread of a half) */
            g2 = g2 > 64 ? 64 : g2;
        }
        /* Raked tiles (cuda_rake.c): a thread scans ITEMS consecutive steps of the staged
         * tile itself.  row_rake=1: each thread stores its outputs; 2: it writes them over
         * its inputs in the stage and each warp copies its part out in coalesced strips
         * (where the outputs fit there, Io::OIP; else as 1).  By default (rake_auto) 2 for
         * rows of whole tiles, one or up to 128 a row: H200, NOTES session 20 runs 4 and
         * 6, against row_rake=0 in the same runs, one-tile float32 rows [32768, 8192]
         * 0.914-0.916 -> 0.940-0.975 of copy and [4096, 4096] 0.954-0.961 -> 0.965-0.979,
         * float16 [32, 2^20] 0.665-0.676 -> 0.675-0.693, [64, 131072] level (0.72-0.78
         * both); not the 1-D scans (float32 0.742 -> 0.702, float16 0.677 -> 0.644,
         * bfloat16 level), nor rows read beside weights (each thread's own run of the
         * weights, uncoalesced: the fused bfloat16 chain 0.817 -> 0.387), nor partial
         * tiles (read step by step from global memory).  (A warp of the block kept for
         * the look-back, polling from the tile's start, measured slower: removed, NOTES
         * session 20.  So did rows scanned by thread block clusters of 4-16 blocks that
         * fold their tiles' totals through distributed shared memory instead of the
         * look-back, with one stage a block or two: [64, 131072] 0.64-0.71 against 0.735,
         * [32, 2^20] 0.34-0.57 against 0.714; removed, NOTES session 21.) */
        int rake = stage && threads == 256 && (rkt == 1 || rkt == 2) ? rkt : 0;
        int64_t tile = threads * (int64_t)items;
        int64_t tpr = sf_cg_ceil_div(len, tile);
        int64_t ntiles = rows * tpr;
        bool lb = tpr > 1;
        if (rake_auto && stage && threads == 256 && len % tile == 0 && tpr <= 128) rake = 2;
        if (rake16 && (lb || rake16_one) && stage && threads == 256) rake = 2;
        k->block = threads;
        k->grid = sf_cg_grid(lb ? ntiles : rows);
        if (lb) {
            int64_t ngr = rows * sf_cg_ceil_div(tpr, gsz), nsup = rows * sf_cg_ceil_div(tpr, (int64_t)gsz * g2);
            int64_t nst = ntiles + ngr + nsup;
            k->ntiles = ntiles;
            /* the header, then every state as self-validating words (8 bytes per 4) */
            k->scratch_bytes = 16 + nst * 2 * sk.tsize;
            if (sf_cg_tune("lb_trace", 0) == 1) { /* sf_trace_rec a tile after the states */
                k->trace_bytes = ntiles * 32;
                k->scratch_bytes += k->trace_bytes;
            }
        }
        /* strips of V steps a lane: one 16-byte access for the widest operand, so every
         * warp access, loads and stores, is one contiguous run (int32 -> int64 1-D on the
         * H200: 0.47 of copy with V from the input, 0.56 from the output; row_vec=N: V = N).
         * One-tile rows leave out inputs read again by every row (from the L1 or L2):
         * bfloat16 rows scaled by float32 weights, [8192, 8192], 0.60 -> 0.64 of copy with
         * 16-byte accesses of the bfloat16 input (NOTES session 9). */
        int vec = sf_cg_tune("row_vec", 0);
        if (vec <= 0 || (vec & (vec - 1)) != 0) vec = 16 / (lb ? widest(g->f, k) : widest_streamed(g->f, k, rows * len));
        if (vec > items) vec = items;
        /* 4 blocks an SM (64 registers a thread): a batch of strips in flight and the
         * states kept across the look-back fit without spills (6 spilled); staged tiles
         * hold no loads in registers: 6 blocks an SM (40 registers; a few spill, and 5
         * or 4 blocks measured slower).  (Tiles kept in registers between the passes,
         * measured slower in session 3, and strip states in shared memory, never the
         * faster, were removed in session 8; staging took their place.) */
        /* One-tile rows of one input, states of at most 8 bytes and at most 4 strips a
         * thread: 6 blocks (of 256, or 12 of 128), 40 registers, 0-12 bytes spilled
         * (H200, NOTES session 10: float32 [4096, 4096] dim 1 0.940 -> 0.967, bfloat16
         * 0.802 -> 0.849); 8 strips or a second input (the fused chain's weights) spill
         * 130-210 bytes there: 0.918 -> 0.616 for float32 rows of 8192, 0.653 -> 0.521
         * for the fused bfloat16 chain. */
        bool lean = !lb && !stage && sk.tsize <= 8 && count_inputs(k) == 1 && items / vec <= 4;
        /* Staged one-tile rows beside an input read again by every row (the fused
         * chain's weights): 5 blocks an SM, 48 registers, 8 bytes spilled, against 6 at
         * 40 registers with 56 spilled, whose spill traffic shares the L1 with the
         * weights.  H200, NOTES session 14, the fused bfloat16 chain against 6 blocks in
         * the same run: 0.725 -> 0.756 of copy (run 3), 0.715 -> 0.763 (run 4). */
        /* Look-back tiles of one 8-byte input (int64 1-D: 16-20 bytes spilled at 6 blocks,
         * none at 5) and raked look-back rows of 4-byte inputs (float32 [64, 131072]: 28
         * spilled at 6, none at 5): 5 blocks an SM.  H200, NOTES session 24 runs 1-2,
         * against 6 in the same runs: 1-D int64 0.83 -> 0.86 of copy, float32 [64, 131072]
         * 0.76-0.78 -> 0.78-0.81, float32 [32, 2^20] 0.78 -> 0.83; 5 measured level or
         * slower for the 1-D float32, float16 and int32 -> int64 strips (the last stops
         * spilling too) and the raked float16 rows [32, 2^20]. */
        /* Unraked look-back tiles of strips of 4 steps a lane (1-D float32) whose tile
         * aggregate can be published early (sf_comm: sums, products, logcumsumexp): 5
         * blocks an SM with the early aggregate (below).  H200, NOTES session 24 runs 2
         * and 6 and session 25 run 2, against 6 blocks without it in the same runs:
         * 2^28 float32 +1 %, +2 %, +2 % (0.82 -> 0.84 of copy), 2^26 -2 %, +1 %, +0.3 %. */
        bool e45 = lb && stage && !rake && vec == 4 && sk.comm;
        bool lb5 = lb && stage && ((rake && inb == 4 && sk.tsize <= 8) || (!rake && inb == 8 && widest(g->f, k) == 8) || e45);
        /* Unraked look-back tiles of 16-byte states: 4 blocks an SM (64 registers; at 5,
         * 48 registers and 112 bytes of stack for float64 cummax).  H200, NOTES session 35
         * run 1, 1-D 2^26 float64 against 5 in the same run: cummax 0.43 -> 0.57 of copy,
         * cumprod unraked 0.32 -> 0.35. */
        const bool lb16 = lb && sk.tsize > 8 && !rake;
        int minb = sf_cg_tune("row_minb", lb16 ? 4 : (stage && !lb && nbc > 0) || lb5 ? 5 : stage || lean ? 6 : 4);
        if (minb < 1) minb = 1;
        if (minb > 8) minb = 8;
        /* row_pipe=1 (an experiment, bench/NOTES.md): two tiles in flight a block of a
         * persistent grid, so a tile's look-back wait overlaps the next tile's loads;
         * the two tiles' strip states must fit 32 KB of shared memory */
        if (lb && threads == 256 && sf_cg_tune("row_pipe", 0) == 1 &&
            2 * (int64_t)(items / vec) * 256 * sk.tsize <= 32768) {
            int64_t cap = (int64_t)sms * minb;
            k->grid = sf_cg_grid(ntiles < cap ? ntiles : cap);
            sf_buf_printf(src,
                          "extern \"C\" __global__ void __launch_bounds__(256, %d) k%d(const sf_args a) {\n"
                          "sf_row_scan_pipe<%s::Op, %s, 256, %d, %d, %d, %d, %s>(a, %lldll, %lldll, %lldll);\n}\n\n",
                          minb, ki, io, io, items, vec, gsz, g2, excl ? "true" : "false", (long long)rows,
                          (long long)len, (long long)tpr);
            free(rkm.data);
            return SCANFUSE_OK;
        }
        int bps = threads == 512 ? (minb + 1) / 2 : threads == 128 ? 2 * minb : minb;
        /* lb_ga=1 (the default): a tile folds the previous group's tile aggregates itself
         * instead of waiting for that group's aggregate (sf_lookback's GAL; the same
         * bits).  H200, NOTES session 13 run 2, in one run: 1-D float32 0.699 -> 0.748
         * of copy, float16 0.627 -> 0.675, int64 0.706 -> 0.740, bfloat16 0.631 -> 0.639. */
        bool gal = lb && sf_cg_tune("lb_ga", 1) == 1;
        /* Look-back tiles publish their aggregate from the lanes' strip folds, before pass
         * one's warp scans (sf_row_scan's EARLY_AGG; sums, products, logcumsumexp): a tile
         * then waits for its predecessors' loads, not for their scans too.  H200, NOTES
         * session 23 runs 2-3, 1-D 2^28 against lb_early=0 in the same runs: bfloat16
         * 0.69 -> 0.74 of copy, float16 0.73 -> 0.75-0.76, int32 -> int64 0.75-0.76 ->
         * 0.82, int64 level (0.83); float32 lost (0.82 -> 0.80, 2^26 0.79 -> 0.70, 2^25
         * 0.75-0.76 -> 0.65-0.70; its phase trace showed the look-back 1.3 us shorter
         * and the loads and pass two as much longer, not why), so strips of 4 steps a
         * lane (4-byte operands) keep the aggregate after the scans at 6 blocks an SM;
         * at 5 (e45 above, the default for them since session 25) they publish it early
         * too.  lb_early=0 / 1: never / always. */
        int lbe = sf_cg_tune("lb_early", -1);
        bool early = lb && (lbe == 1 || (lbe < 0 && (vec != 4 || (e45 && minb == 5))));
        /* Static first-wave tiles (sf_take_split) in launches of at most 8 waves: the
         * blocks that fit the GPU at once scan tile blockIdx.x and issue its loads before
         * they take their ticket, where each would otherwise wait for a take of the one
         * word that every block of the wave makes at once.  H200, NOTES session 28 run 1,
         * two rounds against lb_w1=0 in the same run: float32 [64, 131072] (1.6 waves)
         * 0.772 / 0.768 -> 0.841 / 0.846 of copy, [32, 2^20] (6.2) 0.809 / 0.824 -> 0.838 /
         * 0.837, float16 [32, 2^20] (2.6) 0.751 / 0.773 -> 0.768 / 0.773, 1-D float32 2^24
         * (3.1) 0.686 / 0.710 -> 0.732 / 0.718, 2^25 (6.2) level; in launches of more waves
         * only the first gains and every tile runs the longer code: 2^26 (12) 0.795 ->
         * 0.775, 2^28 float32 0.835 -> 0.821, int32 -> int64 0.848 -> 0.818, the others
         * level.  lb_w1=0: never; lb_w1=N > 1: N static tiles in any launch (tests of the
         * tickets after a few static tiles). */
        int64_t w1 = 0;
        const int w1t = sf_cg_tune("lb_w1", 1);
        if (lb && w1t >= 1) {
            w1 = w1t == 1 ? (int64_t)sms * bps : w1t;
            if (w1t == 1 && ntiles > 8 * w1) w1 = 0;
            if (w1 > ntiles) w1 = ntiles;
            if (w1 >= 4096 || ntiles - w1 >= ((int64_t)1 << 20)) w1 = 0;
        }
        /* The first wave paced by tile (sf_row_next's STG, ns a tile, for the NRES blocks
         * that fit the GPU at once), by default 12 ns in launches of at most 32 waves.
         * H200, NOTES session 29 run 6, one round against the default in the same run:
         * 1-D float32 2^26 (12 waves) 0.788 -> 0.827 of copy, 2^24 (3) 0.723 -> 0.760,
         * bfloat16 2^28 (21) 0.763 -> 0.776; float32 2^28 (50 waves) 0.825 -> 0.819, so
         * not there; [64, 131072] and float32 [32, 2^20] level (0.81-0.84).
         * lb_stagger=0: never; N: N ns in any look-back launch. */
        const int64_t nres = (int64_t)sms * bps;
        int stg = sf_cg_tune("lb_stagger", -1);
        if (stg < 0) stg = ntiles <= 32 * nres ? 12 : 0;
        if (!lb) stg = 0;
        /* the trailing template arguments W1, STG, NRES (both row skeletons end with them),
         * and sf_row_scan's GAL, EARLY_AGG before them, up to the last that differs from
         * its default */
        char w1s[64] = "";
        if (stg > 0) snprintf(w1s, sizeof w1s, ", %lld, %d, %lld", (long long)w1, stg, (long long)nres);
        else if (w1 > 0) snprintf(w1s, sizeof w1s, ", %lld", (long long)w1);
        char tail[96] = "";
        if (w1s[0])
            snprintf(tail, sizeof tail, ", %s, %s%s", gal ? "true" : "false", early ? "true" : "false", w1s);
        else if (early) snprintf(tail, sizeof tail, ", %s, true", gal ? "true" : "false");
        else if (gal) snprintf(tail, sizeof tail, ", true");
        if (rake) {
            char rio[40];
            snprintf(rio, sizeof rio, "%sR", io);
            sf_cg_put_lines(src, sf_cuda_rake_skeleton);
            sf_buf_printf(src, "struct %s : %s {\n%s};\n", rio, io, rkm.data ? rkm.data : "");
            sf_buf_printf(src,
                          "extern \"C\" __global__ void __launch_bounds__(%d, %d) k%d(const sf_args a) {\n"
                          "sf_row_rake_scan<%s::Op, %s, %d, %d, %d, %d, %d, %s, %s, %s, %d%s>(a, %lldll, %lldll, %lldll);\n}\n\n",
                          threads, bps, ki, rio, rio, threads, items, vec, gsz, g2, lb ? "true" : "false",
                          excl ? "true" : "false", gal ? "true" : "false", rake, w1s, (long long)rows,
                          (long long)len, (long long)tpr);
        } else {
            sf_buf_printf(src,
                          "extern \"C\" __global__ void __launch_bounds__(%d, %d) k%d(const sf_args a) {\n"
                          "sf_row_scan<%s::Op, %s, %d, %d, %d, %d, %d, %s, %s, %s%s>(a, %lldll, %lldll, %lldll);\n}\n\n",
                          threads, bps, ki, io, io, threads, items, vec, gsz, g2, lb ? "true" : "false",
                          excl ? "true" : "false", stage ? "true" : "false", tail, (long long)rows, (long long)len,
                          (long long)tpr);
        }
    } else {
        /* a block of W = 32 columns x RG = 8 row groups, L steps a thread
         * (sf_col_tile_scan).  (W columns of the widest input making 128 bytes, 64 or 128
         * for 2- and 1-byte inputs, measured slower on the H200: bfloat16 [4096, 4096]
         * 0.64 against 0.67 of copy, [2048, 128] 15.3 against 13.7 us a call, bool 22.7
         * against 15.7, NOTES session 9; col_w=64 or 128 gives them.  One block per 8
         * columns with no look-back, measured slower in session 2, was removed in
         * session 8.) */
        k->kind = SF_CUK_SCAN_COL;
        int64_t ncols = rows;
        int w = sf_cg_tune("col_w", 32);
        if (w != 64 && w != 128) w = 32;
        int rg = 256 / w;
        /* Tiles staged in shared memory by cp.async (sf_col_tile_scan's STAGE): no tile
         * held in registers across the look-back, 40 registers, 6 blocks an SM (the
         * register tiles: 62, 4), at most 40 KB of inputs a tile (shorter tiles for wide
         * or many inputs).  H200, NOTES session 9: [4096, 4096] float32 dim 0 0.52 ->
         * 0.70 of copy at 16 steps a thread, 0.76 at 32; bfloat16 0.32 -> 0.52 / 0.62.
         * col_stage=0: the register tiles. */
        bool stage = sf_cg_tune("col_stage", 1) == 1 && g->pl->arch >= 80 && inb > 0;
        int l = sf_cg_tune("col_l", 0);
        if (l <= 0) {
            /* 16 steps a thread (16-byte states too: H200, NOTES session 34 run 4, against
             * 8: [4096, 4096] float32 cummax 0.55 -> 0.80 of copy, cumprod 0.39 -> 0.50);
             * 8 where 16 leaves fewer than two
             * tiles an SM (fewer than 8 measured slower: [2048, 128] 22.7 us at 2 steps,
             * 16.9 us at 8); staged, 32 where that still leaves 8 tiles an SM ([8192,
             * 256], 4 tiles an SM at 16 steps: 0.68 at 16, 0.64 at 32) */
            l = 16;
            if (l > 8 && sf_cg_ceil_div(len, (int64_t)rg * l) * sf_cg_ceil_div(ncols, w) < 2 * (int64_t)sms) l = 8;
            if (stage && l == 16 && sk.tsize <= 8 &&
                sf_cg_ceil_div(len, (int64_t)rg * 32) * sf_cg_ceil_div(ncols, w) >= 8 * (int64_t)sms)
                l = 32;
        }
        if (l > (stage ? 64 : 32)) l = stage ? 64 : 32; /* col_l=64: staged only (an experiment) */
        while (stage && (int64_t)rg * l * w * inb > 40960) {
            if (l <= 4) stage = false;
            else l /= 2;
        }
        int64_t nchunks = sf_cg_ceil_div(len, (int64_t)rg * l);
        int64_t ncb = sf_cg_ceil_div(ncols, w);
        /* Grids of about a column block an SM or more: the stream kernel above (no
         * look-back, no ticket), for staged scans with states of at most 8 bytes and
         * several chunks: 4 stages of 16 KB (64 KB of dynamic shared memory, one block an
         * SM).  H200, NOTES session 18 entries 6-7, against the tile kernel in the same
         * runs: bfloat16 [4096, 4096] dim 0 36.3-38.4 -> 34.5-36.8 us, [8192, 8192] 99.6
         * -> 90.9-93.5, float32 [4096, 4096] 49.8-51.6 -> 44.0-45.9, [16384, 4096]
         * unchanged (104 us); where it has fewer blocks than SMs, far slower ([8192, 256]
         * 16.6 -> 70.6).  Blocks of 512 threads or of 16 columns were slower.  col_stream=0:
         * the tile kernel; =1 the stream kernel for any grid; col_ring=S stages (2-8);
         * col_l=L at most L steps a thread a stage. */
        const bool wide = ncb * 8 >= 7 * (int64_t)sms; /* about a column block an SM */
        /* The stream kernel's geometry.  16-bit inputs in grids of about a block of 64
         * columns an SM or more: blocks of 64 columns (a whole 128-byte line of each row,
         * one block an SM where blocks of 32 made two): bfloat16 [8192, 8192] dim 0 90.9
         * -> 80.6-81.3 us (NOTES session 19, run 3). */
        int sw = w;
        if (sf_cg_tune("col_w", 0) == 0 && inb == 2 && sf_cg_ceil_div(ncols, 64) * 8 >= 7 * (int64_t)sms) sw = 64;
        const int srg = 256 / sw;
        int ls = 64, lt = sf_cg_tune("col_l", 0);
        if (lt > 0 && lt < ls) ls = lt;
        while ((int64_t)srg * ls * sw * inb > 16384 && ls > 1) ls /= 2;
        const int64_t nch = sf_cg_ceil_div(len, (int64_t)srg * ls);
        if (sf_cg_tune("col_stream", wide ? 1 : 0) == 1 && stage && sk.tsize <= 8 && nchunks > 1) {
            const int64_t sncb = sf_cg_ceil_div(ncols, sw);
            int ring = sf_cg_tune("col_ring", 4);
            if (ring < 2) ring = 2;
            if (ring > 8) ring = 8;
            /* HOLD: a thread keeps its steps' values from pass one for pass two (at most
             * 64 registers of them; one block an SM leaves 255 a thread) instead of
             * reading and converting them again: a float16/bfloat16 step's conversions
             * to and from double two, not three, and the stage free for the next copies
             * before pass two (EARLY).  H200, NOTES session 19 (three passes, against
             * col_hold=0 in the same run): bfloat16 [4096, 4096] dim 0 34.9-35.5 ->
             * 29.3-31.4 us, float16 32.7-34.8 -> 30.7-31.0, bfloat16 [16384, 4096]
             * 98.3-100.2 -> 84.6-85.9; but bfloat16 [8192, 8192] (two blocks an SM)
             * 91.3-92.4 -> 97.4-99.2 and float32 [4096, 4096] (16 steps a thread)
             * 46.5-48.2 -> 47.3-48.9.  So by default: 32 steps a thread or more, at most
             * a column block an SM.  col_hold=1 holds with EARLY, 2 without, 0 never. */
            const int hm = sf_cg_tune("col_hold", ls >= 32 && sncb <= (int64_t)sms ? 1 : 0);
            const bool hold = (hm == 1 || hm == 2) && ls * sk.tsize <= 256;
            k->block = 256;
            k->grid = sf_cg_grid(sncb);
            k->dyn_smem = (unsigned)(ring * (int64_t)srg * ls * sw * inb);
            for (size_t i = 0; i < sizeof col_stream_skeleton / sizeof col_stream_skeleton[0]; i++)
                sf_buf_printf(src, "%s\n", col_stream_skeleton[i]);
            sf_buf_printf(src,
                          "extern \"C\" __global__ void __launch_bounds__(256, 1) k%d(const sf_args a) {\n"
                          "sf_col_stream_scan<%s::Op, %s, %d, %d, %d, %d, %s, %s, %s>(a, %lldll, %lldll, %lldll, %lldll);\n}\n\n",
                          ki, io, io, sw, srg, ls, ring, excl ? "true" : "false", hold ? "true" : "false",
                          hold && hm == 1 ? "true" : "false",
                          (long long)ncols, (long long)len,
                          (long long)nch, (long long)sncb);
            free(rkm.data);
            return SCANFUSE_OK;
        }
        int64_t ntiles = nchunks * ncb;
        /* up to 16 chunks: one group (a tile folds every earlier aggregate of its
         * columns in one round); up to 64: groups of 16 in super-groups of 4 (one group
         * of up to 64 measured slower on the H200: [8192, 256] 0.51 against 0.60 of
         * copy, [2048, 128] 16.8 against 14.4 us a call, NOTES session 7); else groups
         * of 32 in super-groups of 32 */
        int gsz = sf_cg_tune("col_g", 0), g2 = sf_cg_tune("col_g2", 0);
        if (gsz <= 0) gsz = nchunks <= 16 ? (int)pow2_at_least(nchunks) : nchunks <= 64 ? 16 : 32;
        if (g2 <= 0) g2 = nchunks <= 16 ? 1 : nchunks <= 64 ? 4 : 32;
        if (gsz > 64) gsz = 64;
        if (g2 > 64) g2 = 64;
        if (gsz < 1) gsz = 1;
        if (g2 < 1) g2 = 1;
        k->block = 256;
        k->grid = sf_cg_grid(ntiles);
        if (nchunks > 1) {
            int64_t ngr = ncb * sf_cg_ceil_div(nchunks, gsz);
            int64_t nsup = ncb * sf_cg_ceil_div(nchunks, (int64_t)gsz * g2);
            int64_t nst = ntiles + ngr + nsup;
            k->ntiles = ntiles;
            k->scratch_bytes = 16 + nst * w * 2 * sk.tsize; /* self-validating words */
        }
        /* staged: as many blocks an SM as the stage leaves room for, up to 6 (40
         * registers, no spills at 16 or 32 steps for states up to 8 bytes; wider states
         * spill, so no bound); col_minb=B: B */
        int64_t sbytes = (int64_t)rg * l * w * inb + 4608; /* the stage, the exchange arrays */
        int cminb = stage && sk.tsize <= 8 ? (int)(232448 / sbytes < 6 ? 232448 / sbytes : 6) : 0;
        /* Sums of one 16-bit input in grids of at least 8 tiles an SM: 8 blocks an SM
         * (32 registers, no spills for cumsum; logcumsumexp spills 364 bytes there, so
         * only sums; 8-bit inputs spill a little and were not measured).  The kernel is issue-bound there, not memory-bound
         * (NOTES session 15, entry 5); H200, bfloat16 [4096, 4096] dim 0 in five runs:
         * 0.673-0.699 -> 0.699-0.742 of copy (entries 4, 6).  Float32 columns and short
         * grids ([2048, 128]) gained nothing or lost with it. */
        if (cminb == 6 && n->op == SF_OP_cumsum && count_inputs(k) == 1 && inb == 2 && 232448 / sbytes >= 8 &&
            ntiles >= 8 * (int64_t)sms)
            cminb = 8;
        cminb = sf_cg_tune("col_minb", cminb);
        if (cminb > 8) cminb = 8;
        char lbs[16] = "";
        if (cminb > 1) snprintf(lbs, sizeof lbs, ", %d", cminb);
        sf_buf_printf(src,
                      "extern \"C\" __global__ void __launch_bounds__(256%s) k%d(const sf_args a) {\n"
                      "sf_col_tile_scan<%s::Op, %s, %d, %d, %d, %d, %d, %s%s>(a, %lldll, %lldll, %lldll, %lldll);\n}\n\n",
                      lbs, ki, io, io, w, rg, l, gsz, g2, excl ? "true" : "false", stage ? ", true" : "", (long long)ncols,
                      (long long)len, (long long)nchunks, (long long)ncb);
    }
    free(rkm.data);
    return SCANFUSE_OK;
}

