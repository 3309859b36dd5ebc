/*
 * cuda_small.c — small segments on the GPU: a SMALL segment (segment.c: index and sort
 * ops with their neighbours, every result small enough to stay in cache; the MoE
 * routing from topk to the inverse permutation) whose data fits one multiprocessor runs
 * as ONE kernel of SF_SMALL_THREADS-thread blocks instead of one or more launches per
 * node.  At Llama sizes the routing is ~15 kernels of a few µs each for a few KB of data
 * each; the small kernel does all of it in about the time of two launches.
 *
 * How: the segment's nodes are first generated exactly as a segment run node by node has
 * them (sf_cg_emit_node: the same templates, so the same numerics, bit for bit); those
 * kernels stay in the source (a check kernel's report launch, after a failure, and the
 * loader need them) and are never launched on their own.  Each one this kernel runs is
 * copied as a __device__ function ("k<i>_d"); the SMALL kernel then calls them as
 * phases, each with its own sf_args rebuilt from the kernel's one parameter (SfP_k<i>:
 * for every sub-kernel, the address and the strides of each operand, flags, aux[0..2],
 * its error slot and its scratch, packed by the launcher in the order
 * sf_cuda_small_words counts; at most 4 KB, the classic parameter limit; the block
 * copies the words to shared memory first).  Phases are ordered by the memory they
 * share: a phase runs one level after the last earlier phase that writes what it reads
 * or writes, or reads what it writes (a __syncthreads() a level), and phases that share
 * no memory even through others run in different blocks (the components; the Llama
 * routing's score, count and sort chains: 3 blocks).  Intermediates live in the arena as
 * in a node-by-node run (they stay in L1/L2).
 *
 * Which kernels can be called from one block: element-wise kernels and check kernels
 * (grid-stride loops written for 256-thread blocks: in the copy, gridDim.x reads
 * SF_VGRID = blockDim.x / 256, so one block of 1024 threads covers the iteration space
 * as 4 blocks of 256 would), and warp-per-row scans (sf_warp_scan loops over rows by
 * warps of the block).  Sorts have block-level templates of their own here:
 *  - topk with k <= 16 over rows of <= 512: a warp per row (a few rows a warp at once,
 *    so their loads are in flight together), k selection rounds under the sort's total
 *    order (key, position; NaN above every number): round j takes the first item after
 *    round j-1's in that order, so the result is the stable sort's first k, as PyTorch
 *    and the reference have it;
 *  - argsort of integer keys in a known range of <= 256 (the expert ids) over <= 64 rows:
 *    the counting sort of sf_count_sort for a block of any number of warps (histogram,
 *    its scan, then chunks of the row in order, a position's slot found from the counts
 *    of its key in earlier warps and its rank among its warp's peers: stable);
 *  - argsort of an argsort's result along the same dim (the inverse permutation): each
 *    row of the input is a permutation of [0, len), so the stable sort is the scatter
 *    y[key] = position (y[len-1-key] descending), any length, no histogram at all.
 * Any other kernel shape (look-back scans, reductions, long sorts) keeps the segment
 * node by node, as does a segment whose data is not small (below).
 *
 * A leading topk over many rows (grid_topk) is the exception to "one block": on one
 * multiprocessor the Llama router's 2048 x 128 logits alone took 100 µs of the block's
 * 120 µs (Nsight, session 5), so it runs as a pre-kernel, the topk node's own kernel
 * (the same warp-per-row template over a grid, sf_cg_warp_topk), launched just before
 * the small kernel (sf_cuda_kernel.pre1), and the block starts at the next phase.  Its
 * input is then not counted as the block's data.
 *
 * "Small": the distinct values the segment's compute nodes read and write together at
 * most SF_SMALL_KB (1 MiB; tuning "small_kb").  One multiprocessor streams that from L2/HBM in a few µs
 * (the MoE routing at Llama sizes, T=2048, E=128, k=1, touches ~0.6 MB: logits 512 KB);
 * at DeepSeek sizes (T=4096, E=256, k=8: ~3 MB) the per-row topk alone would keep one
 * block busy for longer than the node-by-node kernels take on the whole GPU.
 *
 * Parts: a SMALL segment too large for one block (the routing at DeepSeek sizes: 32768
 * pairs, ~1.4 MB) runs in parts (sf_cg_small_parts): greedily in node order, the longest
 * run of nodes from each node that one block takes becomes a SMALL kernel of its own,
 * and the other nodes run their kernels (element-wise runs of one shape fused into one).
 * A part must save more launches than its block costs (bytes at ~100 B/ns, ~2.5 µs a
 * launch), and holds no counting sort of more than 4096 keys and no element-wise phase
 * of more than 4 elements a thread: those are grid work.  Parts keep node order, and each
 * kernel waits for the one before it, so a part reads what earlier kernels wrote.
 *
 * Errors: a check phase (the node's check kernel, copied) raises that check kernel's error
 * slot exactly as its launch would; after every level with a fallible phase the block
 * reads the slots and, when one is set, stops (uniformly: every thread reads it after the
 * barrier); fallible phases keep their node order across levels, and the launcher
 * reports the first raised slot in node order (cuda_backend.c's run_error, with the
 * check kernel's report launch), so the first failing node is the one reported, with the
 * reference's message, also when blocks raise slots at once.  The outputs of a program
 * that can fail are staged, and every phase clamps its indices, so a phase that runs
 * beside a failing one exposes nothing and reads nothing out of bounds.
 *
 * Views: the launcher materializes a segment's setup nodes before its kernel runs, and a
 * reshape of a non-contiguous value would be a copy of a value this kernel has not
 * written yet.  The segment's own values live in the arena or staging (contiguous) unless
 * they are the caller's outputs; when a reshape reads a non-contiguous one, the launcher
 * runs the segment node by node instead, on the sub-kernels, which are exactly the
 * node-by-node kernels (cuda_backend.c, small_views_ok).  A segment with a reshape of
 * another view of its own values runs node by node always.
 */
#include "cuda_codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SF_SMALL_KB 1024 /* tuning "small_kb" */
#define SF_SMALL_THREADS 1024
#define SF_SMALL_MAXWORDS 512 /* 4 KB of parameter */
#define SF_SMALL_BINS 2048    /* bincount in shared memory up to this many counts */
#define SF_SMALL_LAUNCH_NS 2500 /* a launch's cost in a run (parts of segments, below) */
#define SF_SMALL_BYTES_NS 100   /* bytes a nanosecond one block streams from L2 */

int sf_cuda_small_nd(const scanfuse_fusion *f, const sf_cuda_kernel *k, int op) {
    switch (k->ops[op].mode) {
    case SF_CUOP_ITER: return k->ops[op].space ? k->ndim2 : k->ndim;
    case SF_CUOP_OWN: return f->values[k->ops[op].value].ndim;
    default: return k->ndim;
    }
}

int sf_cuda_small_words(const scanfuse_fusion *f, const sf_cuda_kernel *k) {
    int w = 6; /* flags, aux[0..2], err, scratch */
    for (int op = 0; op < k->nops; op++) w += 1 + sf_cuda_small_nd(f, k, op);
    return w;
}

/* The compute node producing v, following setup nodes down to it (-1: none).  *bad is
 * set when a reshape sits above another kind of view on the way (its launch may copy). */
static int base_producer(const scanfuse_fusion *f, int32_t v, bool *bad) {
    bool reshape_above = false;
    *bad = false;
    for (;;) {
        int p = f->values[v].producer;
        if (p < 0) return -1;
        const sf_node *n = &f->nodes[p];
        if (!sf_node_is_setup(n->op)) return p;
        if (n->nin == 0) return -1;
        if (n->op == SF_OP_reshape) reshape_above = true;
        else if (reshape_above) *bad = true;
        v = n->in[0];
    }
}

/* Device templates of small kernels, emitted once per source (one line of CUDA per
 * string, as in cuda_prelude.c). */
static const char *const small_prelude[] = {
    "// ---- small segments: one block runs the segment (cuda_small.c) ----",
    "#define SF_VGRID (blockDim.x >> 8)",
    "template <bool ISF, bool DESC> __device__ __forceinline__ sf_skey sf_warp_first(sf_skey x) {",
    "#pragma unroll",
    "    for (int d = 16; d > 0; d >>= 1) {",
    "        sf_skey y;",
    "        y.k = __shfl_xor_sync(0xffffffffu, x.k, d);",
    "        y.pos = __shfl_xor_sync(0xffffffffu, x.pos, d);",
    "        if (sf_before<ISF, DESC>(y, x)) x = y;",
    "    }",
    "    return x;",
    "}",
    "// topk: a warp per row, G rows at once (their loads in flight together), lane l holds",
    "// positions l, l+32, ...; round j takes the first item after round j-1's in the total",
    "// order (key, position), so the K results are the stable sort's first K.  The warps of",
    "// the grid share the rows (a grid as the pre-kernel; BLK: this block alone, in a small",
    "// kernel whose blocks run different phases).",
    "template <class So, bool ISF, bool DESC, int ITEMS, int G, bool BLK = false>",
    "__device__ __forceinline__ void sf_topk_warps(const sf_args& a, i64 rows, i64 len, i64 K) {",
    "    const int lane = threadIdx.x & 31;",
    "    const i64 nw = blockDim.x >> 5, vb = BLK ? 0 : (i64)blockIdx.x, vg = BLK ? 1 : (i64)gridDim.x;",
    "    for (i64 r0 = (vb * nw + (threadIdx.x >> 5)) * G; r0 < rows; r0 += vg * nw * G) {",
    "        sf_skey it[G][ITEMS];",
    "#pragma unroll",
    "        for (int g = 0; g < G; ++g)",
    "#pragma unroll",
    "            for (int q = 0; q < ITEMS; ++q) {",
    "                const i64 t = (i64)q * 32 + lane;",
    "                const bool ok = r0 + g < rows && t < len;",
    "                it[g][q].pos = ok ? t : -1;",
    "                it[g][q].k = ok ? So::key(a, r0 + g, t) : 0ull;",
    "            }",
    "#pragma unroll",
    "        for (int g = 0; g < G; ++g) {",
    "            if (r0 + g >= rows) break;",
    "            sf_skey prev;",
    "            prev.k = 0ull;",
    "            prev.pos = -1;",
    "            for (i64 j = 0; j < K; ++j) {",
    "                sf_skey best;",
    "                best.k = 0ull;",
    "                best.pos = -1;",
    "#pragma unroll",
    "                for (int q = 0; q < ITEMS; ++q) {",
    "                    const bool after = j == 0 || sf_before<ISF, DESC>(prev, it[g][q]);",
    "                    if (after && sf_before<ISF, DESC>(it[g][q], best)) best = it[g][q];",
    "                }",
    "                best = sf_warp_first<ISF, DESC>(best);",
    "                if (lane == 0) So::out(a, r0 + g, j, best);",
    "                prev = best;",
    "            }",
    "        }",
    "    }",
    "}",
    "// The same topk with packed items (topk_pack=1, the default where the key's dtype",
    "// allows): an item is one unsigned word W, the key's order-preserving bits (sf_kpack:",
    "// KB bits, the float keys shifted right by KS, the integer keys less LO) above PB bits",
    "// of 2^PB - 1 - position (2^PB > len), so the words order as the stable sort does (the",
    "// larger first) and the padding word 0 comes after every item; a round is a max over",
    "// the lane's items below the last winner, then one warp max (redux.sync; two for 64-bit",
    "// words).  The comparisons in double with NaN tests of sf_before took DeepSeek's 4096",
    "// rows of 256 bfloat16 logits 25.6 µs (NOTES, CUDA session 7).  The winner's key is",
    "// its lane's own (a position's lane and item are fixed), so the outputs keep their bits.",
    "template <bool ISF, bool DESC, int KS, int KB, long long LO> __device__ __forceinline__ u64 sf_kpack(u64 k) {",
    "    u64 m;",
    "    if (ISF) {",
    "        const double x = sf_b2d(k);",
    "        const u64 b = x == 0.0 ? 0ull : k; // -0 and +0: one key",
    "        m = sf_isnan(x) ? ~0ull : ((b >> 63) ? ~b : (b | (1ull << 63)));",
    "        m >>= KS; // (the bits below the dtype's mantissa: all equal)",
    "    } else {",
    "        m = (u64)((i64)k - (i64)LO);",
    "    }",
    "    return DESC ? m : ((1ull << KB) - 1ull) - m;",
    "}",
    "template <bool NARROW> struct sf_word_of { typedef u64 type; };",
    "template <> struct sf_word_of<true> { typedef u32 type; };",
    "__device__ __forceinline__ u32 sf_warp_max_u(u32 x) {",
    "#if __CUDA_ARCH__ >= 800 || !defined(__CUDA_ARCH__)",
    "    return __reduce_max_sync(0xffffffffu, x);",
    "#else",
    "#pragma unroll",
    "    for (int d = 16; d > 0; d >>= 1) {",
    "        const u32 y = __shfl_xor_sync(0xffffffffu, x, d);",
    "        x = y > x ? y : x;",
    "    }",
    "    return x;",
    "#endif",
    "}",
    "__device__ __forceinline__ u64 sf_warp_max_u(u64 x) {",
    "    const u32 hi = sf_warp_max_u((u32)(x >> 32));",
    "    const u32 lo = sf_warp_max_u((u32)(x >> 32) == hi ? (u32)x : 0u);",
    "    return ((u64)hi << 32) | lo;",
    "}",
    "template <class So, bool ISF, bool DESC, int ITEMS, int G, int KS, int KB, long long LO, int PB, bool BLK = false>",
    "__device__ __forceinline__ void sf_topk_packed(const sf_args& a, i64 rows, i64 len, i64 K) {",
    "    typedef typename sf_word_of<KB + PB <= 32>::type W;",
    "    constexpr W PM = (W)(((u64)1 << PB) - 1ull);",
    "    const int lane = threadIdx.x & 31;",
    "    const i64 nw = blockDim.x >> 5, vb = BLK ? 0 : (i64)blockIdx.x, vg = BLK ? 1 : (i64)gridDim.x;",
    "    for (i64 r0 = (vb * nw + (threadIdx.x >> 5)) * G; r0 < rows; r0 += vg * nw * G) {",
    "        u64 key[G][ITEMS];",
    "        W it[G][ITEMS];",
    "#pragma unroll",
    "        for (int g = 0; g < G; ++g)",
    "#pragma unroll",
    "            for (int q = 0; q < ITEMS; ++q) {",
    "                const i64 t = (i64)q * 32 + lane;",
    "                const bool ok = r0 + g < rows && t < len;",
    "                key[g][q] = ok ? So::key(a, r0 + g, t) : 0ull;",
    "                it[g][q] = ok ? ((W)sf_kpack<ISF, DESC, KS, KB, LO>(key[g][q]) << PB) | (PM - (W)t) : (W)0;",
    "            }",
    "#pragma unroll",
    "        for (int g = 0; g < G; ++g) {",
    "            if (r0 + g >= rows) break;",
    "            W prev = 0;",
    "            sf_skey mine; // lane j keeps round j's winner (K <= 16), stored at the end",
    "            mine.pos = 0;",
    "            mine.k = 0ull;",
    "            for (i64 j = 0; j < K; ++j) {",
    "                W best = 0;",
    "#pragma unroll",
    "                for (int q = 0; q < ITEMS; ++q) {",
    "                    const W c = it[g][q];",
    "                    if ((j == 0 || c < prev) && c > best) best = c;",
    "                }",
    "                best = sf_warp_max_u(best);",
    "                prev = best;",
    "                sf_skey w;",
    "                w.pos = (i64)(PM - (best & PM));",
    "                u64 kk = 0ull;",
    "#pragma unroll",
    "                for (int q = 0; q < ITEMS; ++q)",
    "                    if ((i64)q * 32 + lane == w.pos) kk = key[g][q];",
    "                w.k = __shfl_sync(0xffffffffu, kk, (int)(w.pos & 31));",
    "                if (lane == j) mine = w;",
    "            }",
    "            // the K results by K lanes at once (lane 0 storing each round's in turn",
    "            // kept DeepSeek's topk instruction-bound: 8.5 µs, NOTES session 12)",
    "            if (lane < K) So::out(a, r0 + g, lane, mine);",
    "        }",
    "    }",
    "}",
    "// Counting sort of rows whose integer keys lie in [0, range), range <= R (a power of two",
    "// >= 32), by one block of NW warps, the rows in turn: sf_count_sort's algorithm with the",
    "// block's own warp count; sh: (NW + 1) * R ints of shared memory.",
    "template <class So, bool DESC, int R, int NW>",
    "__device__ __forceinline__ void sf_count_sort_blk(const sf_args& a, i64 rows, i64 len, i64 range, int* sh) {",
    "    for (i64 r = 0; r < rows; ++r) sf_count_sort_row<So, DESC, R, NW>(a, r, len, range, sh, sh + R);",
    "}",
    "// The same sort for rows of at most 1024 x IPL keys, in one pass over them (keys read",
    "// once, kept in registers; 3 barriers a row instead of ~9 with 3 reads of the keys:",
    "// the Llama routing's 2048 keys took 6 µs).  Warp w holds positions w*32*IPL + i*32 +",
    "// lane; a key's slot is its bucket's start + the bucket's count in earlier warps + its",
    "// rank in its warp (earlier rounds through the warp's running counts, then earlier",
    "// lanes of its round): the stable order, the same slots as sf_count_sort_row.",
    "// sh: (32 + 1) * R ints (per-warp counts, then bucket starts).",
    "// INV (the sort's result read only as an argsort's input, small_inv=1): the inverse",
    "// permutation written here too, y2[t] = slot of position t (So2's scatter, as",
    "// sf_perm_inverse writes it), so its phase goes.",
    "template <class So, bool DESC, int R, int IPL, bool INV = false, class So2 = So, bool DESC2 = false>",
    "__device__ __forceinline__ void sf_count_sort_1p(const sf_args& a, i64 rows, i64 len, i64 range, int* sh,",
    "                                                 const sf_args* a2 = nullptr) {",
    "    constexpr int NW = 32, TPB = 1024 / R, WPT = NW / TPB; // threads a bucket, warps a thread",
    "    int* s_cnt = sh;            // [NW][R]: counts, then exclusive prefixes over warps",
    "    int* s_start = sh + NW * R; // [R]: bucket totals, then starts",
    "    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;",
    "    for (i64 r = 0; r < rows; ++r) {",
    "        for (int b = lane; b < R; b += 32) s_cnt[w * R + b] = 0;",
    "        __syncwarp();",
    "        int kb[IPL], rk[IPL];",
    "#pragma unroll",
    "        for (int i = 0; i < IPL; ++i) {",
    "            const i64 t = (i64)w * 32 * IPL + i * 32 + lane;",
    "            kb[i] = -1;",
    "            if (t < len) {",
    "                i64 key = (i64)So::key(a, r, t);",
    "                key = key < 0 ? 0 : (key >= range ? range - 1 : key);",
    "                kb[i] = DESC ? (int)(range - 1 - key) : (int)key;",
    "            }",
    "        }",
    "#pragma unroll",
    "        for (int i = 0; i < IPL; ++i) {",
    "            const unsigned peers = __match_any_sync(0xffffffffu, kb[i]);",
    "            const int base = kb[i] >= 0 ? s_cnt[w * R + kb[i]] : 0;",
    "            rk[i] = base + __popc(peers & ((1u << lane) - 1u));",
    "            __syncwarp();",
    "            if (kb[i] >= 0 && lane == __ffs(peers) - 1) s_cnt[w * R + kb[i]] = base + __popc(peers);",
    "            __syncwarp();",
    "        }",
    "        __syncthreads();",
    "        { // each bucket's counts over the warps: TPB consecutive lanes, WPT warps each",
    "            const int b = threadIdx.x / TPB, p = threadIdx.x % TPB;",
    "            int loc[WPT], sum = 0;",
    "#pragma unroll",
    "            for (int q = 0; q < WPT; ++q) {",
    "                loc[q] = s_cnt[(p * WPT + q) * R + b];",
    "                sum += loc[q];",
    "            }",
    "            const int inc = sf_warp_incl<TPB>(sum, p);",
    "            int run = inc - sum;",
    "#pragma unroll",
    "            for (int q = 0; q < WPT; ++q) {",
    "                s_cnt[(p * WPT + q) * R + b] = run;",
    "                run += loc[q];",
    "            }",
    "            if (p == TPB - 1) s_start[b] = inc;",
    "        }",
    "        __syncthreads();",
    "        if (w == 0) sf_bucket_scan<R>(s_start, lane);",
    "        __syncthreads();",
    "#pragma unroll",
    "        for (int i = 0; i < IPL; ++i)",
    "            if (kb[i] >= 0) {",
    "                sf_skey it;",
    "                it.pos = (i64)w * 32 * IPL + i * 32 + lane;",
    "                it.k = 0ull;",
    "                const i64 slot = s_start[kb[i]] + s_cnt[w * R + kb[i]] + rk[i];",
    "                So::out(a, r, slot, it);",
    "                if (INV) {",
    "                    sf_skey iv;",
    "                    iv.pos = slot;",
    "                    iv.k = 0ull;",
    "                    So2::out(*a2, r, DESC2 ? len - 1 - it.pos : it.pos, iv);",
    "                }",
    "            }",
    "        __syncthreads();",
    "    }",
    "}",
    "// argsort of rows that are permutations of [0, len) (an argsort's result): the stable",
    "// sort is the scatter y[key] = position (keys clamped: in bounds whatever the input);",
    "// grid-stride (the node-by-node kernel of such an argsort too; BLK: this block alone).",
    "template <class So, bool DESC, bool BLK = false>",
    "__device__ __forceinline__ void sf_perm_inverse(const sf_args& a, i64 rows, i64 len) {",
    "    const i64 vb = BLK ? 0 : (i64)blockIdx.x, vg = BLK ? 1 : (i64)gridDim.x;",
    "    for (i64 e = vb * blockDim.x + threadIdx.x; e < rows * len; e += vg * blockDim.x) {",
    "        const i64 r = e / len, t = e - r * len;",
    "        i64 key = (i64)So::key(a, r, t);",
    "        key = key < 0 ? 0 : (key >= len ? len - 1 : key);",
    "        sf_skey it;",
    "        it.pos = t;",
    "        it.k = 0ull;",
    "        So::out(a, r, DESC ? len - 1 - key : key, it);",
    "    }",
    "}",
    NULL};

static void ensure_small_prelude(sf_buf *dst, const sf_buf *src) {
    if (src->data && strstr(src->data, "#define SF_VGRID")) return;
    for (int i = 0; small_prelude[i]; i++) {
        sf_buf_puts(dst, small_prelude[i]);
        sf_buf_puts(dst, "\n");
    }
}

bool sf_cg_is_perm_sort(const scanfuse_fusion *f, int ni) {
    const sf_node *n = &f->nodes[ni];
    if (n->op != SF_OP_argsort) return false;
    const sf_value *x = &f->values[n->in[0]];
    int p = x->producer;
    return p >= 0 && f->nodes[p].op == SF_OP_argsort && x->ndim > 0 && f->nodes[p].a.dim == n->a.dim &&
           f->values[f->nodes[p].in[0]].ndim == x->ndim;
}

/* A sort kernel of node ni with the sort's operands, 256 threads a block, running one of
 * this file's templates (their text put in the source once). */
static sf_cuda_kernel *template_sort_kernel(sf_cg *g, int ni, const sf_cuda_operand *ops, int nops) {
    ensure_small_prelude(g->src, g->src);
    sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_SORT, ni);
    k->nops = nops;
    memcpy(k->ops, ops, (size_t)nops * sizeof *ops);
    k->block = 256;
    return k;
}

bool sf_cg_perm_sort(sf_cg *g, int ni, const char *so, const sf_cuda_operand *ops, int nops) {
    const scanfuse_fusion *f = g->f;
    if (!sf_cg_is_perm_sort(f, ni)) return false;
    const sf_node *n = &f->nodes[ni];
    const sf_value *x = &f->values[n->in[0]];
    int64_t len = x->shape[n->a.dim], rows = len > 0 ? sf_value_numel(x) / len : 0;
    sf_cuda_kernel *k = template_sort_kernel(g, ni, ops, nops);
    int64_t blocks = (rows * len + 255) / 256, cap = (int64_t)(g->sms > 0 ? g->sms : 132) * 32;
    k->grid = sf_cg_grid(blocks < cap ? blocks : cap);
    sf_buf_printf(g->src,
                  "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                  "sf_perm_inverse<%s, %s>(a, %lldll, %lldll);\n}\n\n",
                  (int)(k - g->pl->k), so, n->a.descending ? "true" : "false", (long long)rows,
                  (long long)len);
    return true;
}

/* topk over rows of <= 512 keys, k <= 16: the warp-per-row template (items per lane, rows
 * a warp at once), the node's kernel whether it runs alone or as a small segment's
 * pre-kernel (below); one 128-thread block a row sorting the whole row took 67.5 µs for
 * DeepSeek's 4096 x 256 router logits (NOTES, CUDA session 5). */
static bool warp_topk_shape(const scanfuse_fusion *f, int ni, int *items, int *grp) {
    const sf_node *n = &f->nodes[ni];
    const sf_value *x = &f->values[n->in[0]];
    if (n->op != SF_OP_topk || x->ndim == 0) return false;
    int64_t len = x->shape[n->a.dim];
    if (len > 16 * 32 || n->a.count > 16) return false;
    *items = (int)((len + 31) / 32);
    if (*items < 1) *items = 1;
    *grp = 16 / *items > 4 ? 4 : 16 / *items;
    if (*grp < 1) *grp = 1;
    return true;
}

/* The packed items of sf_topk_packed for keys of dtype dt in rows of len: the key's
 * bits (kb: a float's sign, exponent and mantissa as a double, shifted right past the
 * dtype's mantissa by ks; an integer less its dtype's minimum lo) and the position's
 * (pb, 2^pb > len), at most 64 in all; "ks" etc. as the template's text.  False for
 * float64 and int64 keys (no room) and under tuning topk_pack=0. */
static bool topk_pack(scanfuse_dtype dt, int64_t len, char *tp, size_t tpn) {
    int ks = 0, kb;
    long long lo = 0;
    switch (dt) {
    case SCANFUSE_BFLOAT16: ks = 45; break;
    case SCANFUSE_FLOAT16: ks = 42; break;
    case SCANFUSE_FLOAT32: ks = 29; break;
    case SCANFUSE_BOOL: kb = 1; break;
    case SCANFUSE_UINT8: kb = 8; break;
    case SCANFUSE_INT8: kb = 8, lo = -128; break;
    case SCANFUSE_INT16: kb = 16, lo = -32768; break;
    case SCANFUSE_INT32: kb = 32, lo = -2147483648ll; break;
    default: return false;
    }
    if (ks > 0) kb = 64 - ks;
    int pb = 1;
    while (pb < 62 && ((int64_t)1 << pb) <= len) pb++;
    if (kb + pb > 64 || sf_cg_tune("topk_pack", 1) == 0) return false;
    snprintf(tp, tpn, "%d, %d, (%lldll), %d", ks, kb, lo, pb);
    return true;
}

bool sf_cg_warp_topk(sf_cg *g, int ni, const char *so, const sf_cuda_operand *ops, int nops) {
    const scanfuse_fusion *f = g->f;
    int items, grp;
    if (sf_cg_tune("warp_topk", 1) == 0 || !warp_topk_shape(f, ni, &items, &grp)) return false;
    const sf_node *n = &f->nodes[ni];
    const sf_value *x = &f->values[n->in[0]];
    int64_t len = x->shape[n->a.dim], rows = len > 0 ? sf_value_numel(x) / len : 0;
    sf_cuda_kernel *k = template_sort_kernel(g, ni, ops, nops);
    int sms = g->sms > 0 ? g->sms : 132;
    /* fewer rows a warp while that leaves multiprocessors idle (Llama's 2048 rows at 4 a
     * warp were 64 blocks on 132 multiprocessors) */
    while (grp > 1 && (rows + 8 * grp - 1) / (8 * grp) < 2 * (int64_t)sms) grp /= 2;
    int64_t blocks = (rows + 8 * grp - 1) / (8 * grp), cap = (int64_t)sms * 8;
    k->grid = sf_cg_grid(blocks < cap ? blocks : cap);
    char tp[96];
    bool pack = topk_pack(x->dtype, len, tp, sizeof tp);
    sf_buf_printf(g->src,
                  "extern \"C\" __global__ void __launch_bounds__(256) k%d(const sf_args a) {\n"
                  "sf_topk_%s<%s, %s, %s, %d, %d%s%s>(a, %lldll, %lldll, %lldll);\n}\n\n",
                  (int)(k - g->pl->k), pack ? "packed" : "warps", so,
                  sf_dtype_is_float(x->dtype) ? "true" : "false", n->a.largest ? "true" : "false", items, grp,
                  pack ? ", " : "", pack ? tp : "", (long long)rows, (long long)len, (long long)n->a.count);
    return true;
}

/* Tuning "small_prof=1" (a measurement, never a default): thread 0 reads the global
 * timer after every phase's barrier and prints the times when the kernel ends, so a run
 * shows where the block's time goes (the kernel's whole time is Nsight's). */
static void prof_mark(sf_buf *body, int prof, sf_op op, int *nmark) {
    if (!prof) return;
    sf_buf_printf(body, "if (threadIdx.x == 0) asm volatile(\"mov.u64 %%0, %%%%globaltimer;\" : \"=l\"(sf_tp[%d])); // %s\n",
                  (*nmark)++, sf_op_table[op].name);
}

/* A leading topk over many rows runs as a grid kernel launched just before the small
 * kernel (its "pre-kernel", the same warp-per-row template over every multiprocessor):
 * one block would take ~100 µs over the 2048 x 128 router logits of the Llama sizes,
 * where the other phases together read a few KB.  Threshold in elements (tuning
 * "small_topk_grid"; 0: never). */
static bool grid_topk(const scanfuse_fusion *f, int ni) {
    int items, grp;
    if (!warp_topk_shape(f, ni, &items, &grp) || sf_cg_tune("warp_topk", 1) == 0) return false;
    int64_t lim = sf_cg_tune("small_topk_grid", 16384);
    return lim > 0 && sf_value_numel(&f->values[f->nodes[ni].in[0]]) >= lim;
}

/* How one node runs in the small kernel. */
typedef enum { PH_COPIES, PH_TOPK, PH_COUNT, PH_PERM, PH_BINCOUNT, PH_NONE } ph_kind;

typedef struct small_node {
    ph_kind kind;
    int k0, nk;     /* its kernels */
    int sort_k;     /* PH_TOPK/COUNT/PERM: the first sort kernel (its So struct, operands) */
    int items, grp; /* PH_TOPK */
    int R;          /* PH_COUNT */
    int64_t range;  /* PH_COUNT */
    int inv;        /* PH_COUNT: the PH_PERM node (index in the list) it writes too, or -1 */
    bool folded;    /* PH_PERM written by its input's counting sort */
} small_node;

/* One phase of the block: a sub-kernel's call, and the memory it touches.  Phases that
 * touch nothing another one writes run back to back without a barrier between them
 * (levels, below). */
typedef struct small_phase {
    sf_buf text;   /* "{ // op (node i)\n" its sf_args, its call "}\n" */
    int errw;      /* parameter word of its error slot (a fallible phase), or -1 */
    sf_op op;      /* for the profile marks */
    int32_t rd[2 * SF_CUDA_MAXOPS], wr[2 * SF_CUDA_MAXOPS + 1];
    int nrd, nwr;
    bool all;      /* more operands than the sets hold: treated as touching everything */
    int level;
    int comp;      /* its component: phases that share memory, transitively */
    bool grid_tpl; /* calls sf_warp_scan, which strides by the real grid: block 0 only */
} small_phase;

static int comp_find(int *parent, int i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
}

/* The value whose memory v is (views followed down to what they view). */
static int32_t mem_root(const scanfuse_fusion *f, int32_t v) {
    for (;;) {
        int p = f->values[v].producer;
        if (p < 0 || !sf_node_is_setup(f->nodes[p].op) || f->nodes[p].nin == 0) return v;
        v = f->nodes[p].in[0];
    }
}

/* Adds memory r to phase h's write (or read) set. */
static void phase_touch(small_phase *h, int32_t r, bool write) {
    int32_t *set = write ? h->wr : h->rd;
    int *n = write ? &h->nwr : &h->nrd;
    int cap = write ? (int)(sizeof h->wr / sizeof h->wr[0]) : (int)(sizeof h->rd / sizeof h->rd[0]);
    if (*n < cap) set[(*n)++] = r;
    else h->all = true;
}

/* Adds kernel k's operands to phase h's read and write sets. */
static void phase_operands(const scanfuse_fusion *f, small_phase *h, const sf_cuda_kernel *k) {
    for (int op = 0; op < k->nops; op++) phase_touch(h, mem_root(f, k->ops[op].value), k->ops[op].out);
}

static bool in_set(const int32_t *set, int n, int32_t v) {
    for (int i = 0; i < n; i++)
        if (set[i] == v) return true;
    return false;
}

/* Must phase b wait for phase a (a before b in node order)?  Yes when one writes memory
 * the other reads or writes (a read of memory neither writes needs no order).  The
 * shared memory of the counting sort counts as memory (SMEM_ROOT). */
static bool phases_conflict(const small_phase *a, const small_phase *b) {
    if (a->all || b->all) return true;
    for (int i = 0; i < a->nwr; i++)
        if (in_set(b->rd, b->nrd, a->wr[i]) || in_set(b->wr, b->nwr, a->wr[i])) return true;
    for (int i = 0; i < b->nwr; i++)
        if (in_set(a->rd, a->nrd, b->wr[i])) return true;
    return false;
}
#define SMEM_ROOT (-2)
#define SMEM_BINS_ROOT (-3)

/* How sort node ni runs in one block, or PH_NONE. */
static ph_kind sort_kind(const sf_cg *g, int ni, small_node *sn) {
    const scanfuse_fusion *f = g->f;
    const sf_node *n = &f->nodes[ni];
    const sf_value *x = &f->values[n->in[0]];
    int nd = x->ndim, dim = nd > 0 ? (int)n->a.dim : 0;
    int64_t len = nd > 0 ? x->shape[dim] : 1;
    int64_t rows = len > 0 ? sf_value_numel(x) / len : 0;
    bool isf = sf_dtype_is_float(x->dtype);
    if (n->op == SF_OP_topk) return warp_topk_shape(f, ni, &sn->items, &sn->grp) ? PH_TOPK : PH_NONE;
    if (isf) return PH_NONE;
    if (sf_cg_is_perm_sort(f, ni)) return PH_PERM;
    int64_t krange = 0, rlo, rhi;
    if (n->a.has_count) krange = n->a.count;
    else if (sf_int_range(f, n->in[0], &rlo, &rhi) && rlo >= 0) krange = rhi + 1;
    if (krange <= 0 || rows > 64 || len >= ((int64_t)1 << 30)) return PH_NONE;
    int R = 32;
    while (R < krange) R *= 2;
    if (R > 256) return PH_NONE;
    sn->R = R;
    sn->range = krange;
    return PH_COUNT;
}

/* Kernel i's function in the source from `from`: *body at its opening brace, *e past its
 * closing brace.  False when absent. */
static bool find_kernel(const char *src, size_t from, int i, size_t *body, size_t *e) {
    char sig[48];
    snprintf(sig, sizeof sig, ") k%d(const sf_args a) {\n", i);
    const char *s = strstr(src + from, sig);
    if (!s) return false;
    const char *start = s;
    while (start > src + from && strncmp(start, "extern \"C\"", 10) != 0) start--;
    if (strncmp(start, "extern \"C\"", 10) != 0) return false;
    const char *open = s + strlen(sig) - 2;
    int depth = 0;
    const char *q = open;
    for (; *q; q++) {
        if (*q == '{') depth++;
        else if (*q == '}' && --depth == 0) break;
    }
    if (!*q) return false;
    *body = (size_t)(open - src);
    *e = (size_t)(q + 1 - src);
    return true;
}

/* Appends kernel i's body as "k<i>_d", a device function of the block (gridDim.x reads
 * SF_VGRID and blockIdx.x 0: the grid-stride loops written for 256-thread blocks cover
 * the space once, in whichever block of the small kernel runs the phase). */
static void emit_copy(sf_buf *out, const char *src, size_t body, size_t e, int i) {
    /* an element-wise body's one-element loop (emit_elem_kernel), not its batches */
    sf_buf_puts(out, "#define SF_ELEM_ONE 1\n");
    sf_buf_printf(out, "static __device__ __forceinline__ void k%d_d(const sf_args& a) ", i);
    const char *p = src + body, *end = src + e;
    while (p < end) {
        const char *g = strstr(p, "gridDim.x"), *b = strstr(p, "blockIdx.x");
        if (g && g >= end) g = NULL;
        if (b && b >= end) b = NULL;
        const char *hit = g && (!b || g < b) ? g : b;
        if (!hit) {
            sf_buf_printf(out, "%.*s", (int)(end - p), p);
            break;
        }
        sf_buf_printf(out, "%.*s%s", (int)(hit - p), p, hit == g ? "SF_VGRID" : "0");
        p = hit + (hit == g ? 9 : 10);
    }
    sf_buf_puts(out, "\n#undef SF_ELEM_ONE\n\n");
}

/* The local sf_args of sub-kernel k from the parameter words from *w on (advanced). */
static void emit_args_as(sf_buf *b, const scanfuse_fusion *f, const sf_cuda_kernel *k, int *w, const char *a) {
    sf_buf_printf(b, "sf_args %s = {};\n", a);
    for (int op = 0; op < k->nops; op++) {
        sf_buf_printf(b, "%s.ptr[%d] = PW[%d];\n", a, op, (*w)++);
        int nd = sf_cuda_small_nd(f, k, op);
        for (int d = 0; d < nd; d++) sf_buf_printf(b, "%s.st[%d][%d] = (i64)PW[%d];\n", a, op, d, (*w)++);
    }
    sf_buf_printf(b, "%s.flags = (i64)PW[%d];\n", a, (*w)++);
    for (int j = 0; j < 3; j++) sf_buf_printf(b, "%s.aux[%d] = (i64)PW[%d];\n", a, j, (*w)++);
    sf_buf_printf(b, "%s.err = PW[%d];\n", a, (*w)++);
    sf_buf_printf(b, "%s.scratch = PW[%d];\n", a, (*w)++);
}

static void emit_args(sf_buf *b, const scanfuse_fusion *f, const sf_cuda_kernel *k, int *w) {
    emit_args_as(b, f, k, w, "a");
}

/* nodes[0..n) as one SMALL kernel (see sf_cg_small); part: they are a run of a larger
 * segment's nodes (sf_cg_small_parts), taken only when one block is likely faster than
 * the launches it saves. */
static scanfuse_status small_group(sf_cg *g, const int *nodes, int n, bool part, bool *taken, char *msg,
                                   size_t msglen) {
    const scanfuse_fusion *f = g->f;
    sf_cuda_plan *pl = g->pl;
    *taken = false;
    if (n < 2 || sf_cg_tune("small", 1) == 0) return SCANFUSE_OK;
    /* the data: every distinct value the compute nodes read or write */
    size_t nv = (size_t)(f->nvalues > 0 ? f->nvalues : 1);
    uint8_t *seen = sf_calloc(nv, 1);
    bool *in_list = sf_calloc((size_t)(f->nnodes > 0 ? f->nnodes : 1), 1);
    small_node *sn = sf_calloc((size_t)n, sizeof *sn);
    if (!seen || !in_list || !sn) {
        free(seen);
        free(in_list);
        free(sn);
        sf_msg(msg, msglen, "cuda: out of memory");
        return SCANFUSE_ERROR_MEMORY;
    }
    for (int j = 0; j < n; j++) in_list[nodes[j]] = true;
    int64_t bytes = 0;
    bool ok = true;
    bool pre = grid_topk(f, nodes[0]); /* node 0 runs as the pre-kernel: its input is not
                                          the block's to read */
    for (int j = 0; j < n && ok; j++) {
        const sf_node *nd = &f->nodes[nodes[j]];
        for (int q = 0; q < nd->nin + nd->nout; q++) {
            if (j == 0 && pre && q < nd->nin) continue;
            int32_t v = q < nd->nin ? nd->in[q] : nd->out[q - nd->nin];
            int kind = pl->vkind[v];
            if (seen[v] || kind == SF_CUV_LITERAL || kind == SF_CUV_INLINE) continue;
            seen[v] = 1;
            bytes += sf_value_numel(&f->values[v]) * (int64_t)scanfuse_dtype_size(f->values[v].dtype);
        }
    }
    ok = bytes <= (int64_t)sf_cg_tune("small_kb", SF_SMALL_KB) * 1024;
    /* a reshape of another view of this segment's values would be copied before the
     * kernel runs (see the header) */
    for (int i = 0; i < f->nnodes && ok; i++) {
        if (f->nodes[i].op != SF_OP_reshape) continue;
        bool bad;
        int p = base_producer(f, f->nodes[i].out[0], &bad);
        if (p >= 0 && in_list[p] && bad) ok = false;
    }
    free(seen);
    free(in_list);
    if (!ok) {
        free(sn);
        return SCANFUSE_OK;
    }
    /* the node-by-node kernels, as they would run */
    size_t src0 = g->src->len;
    int nk0 = pl->nkernels, nerr0 = pl->nerr;
    bool fail0 = pl->may_fail;
    scanfuse_status st = SCANFUSE_OK;
    for (int j = 0; j < n && ok; j++) {
        int ni = nodes[j];
        sn[j].k0 = pl->nkernels;
        st = sf_cg_emit_node(g, ni, msg, msglen);
        sn[j].nk = pl->nkernels - sn[j].k0;
        if (st != SCANFUSE_OK) {
            ok = false;
            break;
        }
        const sf_node *nd = &f->nodes[ni];
        bool sort = nd->op == SF_OP_topk || nd->op == SF_OP_argsort;
        sn[j].kind = PH_COPIES;
        sn[j].sort_k = -1;
        sn[j].inv = -1;
        for (int q = sn[j].k0; q < sn[j].k0 + sn[j].nk && ok; q++) {
            const sf_cuda_kernel *k = &pl->k[q];
            if (sort && k->kind == SF_CUK_SORT) {
                if (sn[j].sort_k < 0) sn[j].sort_k = q;
                continue;
            }
            ok = (k->kind == SF_CUK_ELEM || k->kind == SF_CUK_CHECK || k->kind == SF_CUK_SCAN_WARP) &&
                 k->ntiles == 0 && k->scratch_bytes == 0;
        }
        if (ok && sn[j].sort_k >= 0) {
            sn[j].kind = sort_kind(g, ni, &sn[j]);
            ok = sn[j].kind != PH_NONE;
        }
        /* bincount (its kernels: a check if its ids are not proven, zeroing, counting):
         * one phase counting into shared memory (tuning small_bincount=0: its kernels) */
        int nelem = 0;
        for (int q = sn[j].k0; q < sn[j].k0 + sn[j].nk; q++) nelem += pl->k[q].kind == SF_CUK_ELEM;
        if (ok && nd->op == SF_OP_bincount && nelem == 2 && nd->a.count <= SF_SMALL_BINS &&
            sf_cg_tune("small_bincount", 1) != 0)
            sn[j].kind = PH_BINCOUNT;
    }
    /* An inverse permutation (PH_PERM) of a one-pass counting sort's result in the list:
     * the sort writes it too (sf_count_sort_1p's INV), and its own phase goes: the Llama
     * routing's sort chain is its small kernel's longest (8.2 µs, NOTES session 12; no
     * gain in session 7, when it was not).  Tuning small_inv=0: its own phase. */
    for (int j2 = 0; j2 < n && ok && sf_cg_tune("small_inv", 1) == 1; j2++) {
        const sf_node *n2 = &f->nodes[nodes[j2]];
        if (sn[j2].kind != PH_PERM) continue;
        bool all_sort = true;
        for (int q = sn[j2].k0; q < sn[j2].k0 + sn[j2].nk; q++)
            all_sort = all_sort && pl->k[q].kind == SF_CUK_SORT && pl->k[q].err_slot < 0;
        int p = f->values[n2->in[0]].producer;
        for (int j1 = 0; j1 < j2 && all_sort; j1++) {
            if (nodes[j1] != p || sn[j1].kind != PH_COUNT || sn[j1].inv >= 0) continue;
            const sf_value *x = &f->values[f->nodes[p].in[0]];
            int64_t len = x->ndim > 0 ? x->shape[x->ndim > 0 ? (int)f->nodes[p].a.dim : 0] : 1;
            if (len < 1 || len > 4 * SF_SMALL_THREADS || sf_cg_tune("count_1p", 1) == 0) continue;
            sn[j1].inv = j2;
            sn[j2].folded = true;
        }
    }
    pre = pre && ok && sn[0].kind == PH_TOPK && sn[0].nk == 1;
    /* A counting sort of more than 4096 keys a row (several rounds of barriers) is never
     * worth a block: one block took 166 µs over DeepSeek's 32768 pairs (NOTES session 6),
     * its split kernels ~20.  A part of a segment: the launches it saves against one
     * block's time.  Every sub-kernel would launch on its own (~SF_SMALL_LAUNCH_NS each
     * in a graph with PDL, H200: DeepSeek's 16 routing kernels took ~37 µs, NOTES
     * session 11); the block streams its data at ~SF_SMALL_BYTES_NS from L2 on one
     * multiprocessor. */
    for (int j = 0; j < n && ok; j++) {
        if (sn[j].kind != PH_COUNT) continue;
        const sf_node *nd = &f->nodes[nodes[j]];
        const sf_value *x = &f->values[nd->in[0]];
        ok = (x->ndim > 0 ? x->shape[nd->a.dim] : 1) <= 4 * SF_SMALL_THREADS;
    }
    if (ok && part) {
        int64_t saved = (int64_t)(pl->nkernels - nk0) - 1 - (pre ? 1 : 0);
        ok = bytes / SF_SMALL_BYTES_NS <= saved * SF_SMALL_LAUNCH_NS;
        /* An element-wise phase of more than 4 elements a thread is no block's work
         * either: its loop waits a round trip an element, and its arithmetic runs on one
         * multiprocessor (DeepSeek's cast and sigmoid over 32768 scores took 5 and 12 µs
         * there, H200, NOTES session 12; as one grid kernel ~3) */
        for (int j = 0; j < n && ok; j++) {
            if (sn[j].kind != PH_COPIES) continue;
            for (int q = sn[j].k0; q < sn[j].k0 + sn[j].nk && ok; q++) {
                const sf_cuda_kernel *k = &pl->k[q];
                int64_t m = 1;
                for (int d = 0; d < k->ndim; d++) m *= k->shape[d];
                ok = k->kind == SF_CUK_SCAN_WARP || m <= 4 * SF_SMALL_THREADS;
            }
        }
    }
    int words = 0;
    for (int q = nk0; q < pl->nkernels && ok; q++) words += sf_cuda_small_words(f, &pl->k[q]);
    if (st == SCANFUSE_ERROR_UNSUPPORTED || st == SCANFUSE_OK) st = SCANFUSE_OK;
    if (!ok || words > SF_SMALL_MAXWORDS || g->src->oom) {
        /* back to the state before: the caller runs the segment node by node */
        pl->nkernels = nk0;
        pl->nerr = nerr0;
        pl->may_fail = fail0;
        g->src->len = src0;
        if (g->src->data) g->src->data[src0] = '\0';
        free(sn);
        return st;
    }
    /* device copies of the kernels the block calls, and the phases calling them */
    sf_buf dev = {0}, body = {0};
    const char *src = g->src->data;
    ensure_small_prelude(&dev, g->src);
    int shared = 0, bins = 0, w = 0, nmark = 0, nph = 0;
    bool split_ok = true;
    int prof = sf_cg_tune("small_prof", 0);
    sf_cuda_kernel *sub = pl->k;
    small_phase *ph = sf_calloc((size_t)(pl->nkernels - nk0 + 1), sizeof *ph);
    if (!ph) {
        free(sn);
        sf_msg(msg, msglen, "cuda: out of memory");
        return SCANFUSE_ERROR_MEMORY;
    }
    for (int j = 0; j < n; j++) {
        const sf_node *nd = &f->nodes[nodes[j]];
        for (int q = sn[j].k0; q < sn[j].k0 + sn[j].nk; q++) {
            const sf_cuda_kernel *k = &sub[q];
            sf_buf args = {0};
            emit_args(&args, f, k, &w); /* in sub-kernel order: the launcher packs them so */
            bool bin = sn[j].kind == PH_BINCOUNT && k->kind == SF_CUK_ELEM;
            if ((j == 0 && pre) || (k->kind == SF_CUK_SORT && (q != sn[j].sort_k || sn[j].folded)) ||
                (bin && k->nops == 1)) {
                free(args.data); /* the pre-kernel's phase, a sort's other kernels or one its
                                    input's sort writes, bincount's zeroing */
                continue;
            }
            small_phase *h = &ph[nph++];
            h->errw = -1;
            h->op = nd->op;
            sf_buf *t = &h->text;
            sf_buf_printf(t, "{ // %s (node %d)\n%s", sf_op_table[nd->op].name, nodes[j], args.data);
            free(args.data);
            if (k->kind == SF_CUK_SORT) {
                for (int r = sn[j].k0; r < sn[j].k0 + sn[j].nk; r++) phase_operands(f, h, &sub[r]);
                const sf_value *x = &f->values[nd->in[0]];
                int dim = x->ndim > 0 ? (int)nd->a.dim : 0;
                int64_t len = x->ndim > 0 ? x->shape[dim] : 1;
                int64_t rows = len > 0 ? sf_value_numel(x) / len : 0;
                bool desc = nd->op == SF_OP_topk ? nd->a.largest : nd->a.descending;
                const char *df = desc ? "true" : "false";
                char tp[96];
                bool pack = sn[j].kind == PH_TOPK && topk_pack(x->dtype, len, tp, sizeof tp);
                if (sn[j].kind == PH_TOPK)
                    sf_buf_printf(t, "sf_topk_%s<So_k%d, %s, %s, %d, %d%s%s, true>(a, %lldll, %lldll, %lldll);\n",
                                  pack ? "packed" : "warps", q, sf_dtype_is_float(x->dtype) ? "true" : "false", df,
                                  sn[j].items, sn[j].grp, pack ? ", " : "", pack ? tp : "", (long long)rows,
                                  (long long)len, (long long)nd->a.count);
                else if (sn[j].kind == PH_COUNT) {
                    int need = (SF_SMALL_THREADS / 32 + 1) * sn[j].R;
                    if (need > shared) shared = need;
                    phase_touch(h, SMEM_ROOT, true);
                    /* rows of at most 4096 keys in one pass (tuning count_1p=0: never) */
                    int ipl = (int)((len + SF_SMALL_THREADS - 1) / SF_SMALL_THREADS);
                    if (sn[j].inv >= 0) { /* and the inverse permutation (small_inv=1) */
                        const small_node *s2 = &sn[sn[j].inv];
                        int w2 = 0;
                        for (int r = nk0; r < s2->sort_k; r++) w2 += sf_cuda_small_words(f, &sub[r]);
                        emit_args_as(t, f, &sub[s2->sort_k], &w2, "a2");
                        for (int r = s2->k0; r < s2->k0 + s2->nk; r++) phase_operands(f, h, &sub[r]);
                        sf_buf_printf(t,
                                      "sf_count_sort_1p<So_k%d, %s, %d, %d, true, So_k%d, %s>(a, %lldll, %lldll, %lldll, s_sm, &a2);\n",
                                      q, df, sn[j].R, ipl, s2->sort_k,
                                      f->nodes[nodes[sn[j].inv]].a.descending ? "true" : "false", (long long)rows,
                                      (long long)len, (long long)sn[j].range);
                    } else if (ipl >= 1 && ipl <= 4 && sf_cg_tune("count_1p", 1) != 0)
                        sf_buf_printf(t, "sf_count_sort_1p<So_k%d, %s, %d, %d>(a, %lldll, %lldll, %lldll, s_sm);\n", q,
                                      df, sn[j].R, ipl, (long long)rows, (long long)len, (long long)sn[j].range);
                    else
                        sf_buf_printf(t, "sf_count_sort_blk<So_k%d, %s, %d, %d>(a, %lldll, %lldll, %lldll, s_sm);\n", q,
                                      df, sn[j].R, SF_SMALL_THREADS / 32, (long long)rows, (long long)len,
                                      (long long)sn[j].range);
                } else {
                    sf_buf_printf(t, "sf_perm_inverse<So_k%d, %s, true>(a, %lldll, %lldll);\n", q, df,
                                  (long long)rows, (long long)len);
                }
                sf_buf_puts(t, "}\n");
                continue;
            }
            phase_operands(f, h, k);
            if (bin) { /* counting into shared memory, then every count stored; the ids
                          * are loaded 8 a thread at once (their latencies overlap: one
                          * round trip a round, not one an id) */
                const sf_value *x = &f->values[nd->in[0]];
                int ox = k->ops[0].out ? 1 : 0, oy = 1 - ox;
                int64_t C = nd->a.count, N = sf_value_numel(x);
                if (C > bins) bins = (int)C;
                phase_touch(h, SMEM_BINS_ROOT, true);
                sf_buf_printf(t,
                              "for (int b = threadIdx.x; b < %lld; b += blockDim.x) s_bins[b] = 0;\n"
                              "__syncthreads();\n"
                              "for (i64 i0 = threadIdx.x; i0 < %lldll; i0 += 8 * (i64)blockDim.x) {\n"
                              "i64 v[8];\n"
                              "#pragma unroll\n"
                              "for (int u = 0; u < 8; ++u) {\n"
                              "const i64 i = i0 + u * (i64)blockDim.x;\n"
                              "v[u] = -1;\n"
                              "if (i < %lldll) {\n",
                              (long long)C, (long long)N, (long long)N);
                sf_cg_coords(t, "c", "i", x->ndim, sf_cg_iota_dims, x->shape);
                sf_buf_printf(t, "v[u] = sf_ld_%s(a.ptr[%d], ", sf_cg_sfx(x->dtype), ox);
                sf_cg_offset(t, "c", ox, x->ndim, sf_cg_iota_dims, x->shape);
                sf_buf_printf(t,
                              ");\n}\n}\n"
                              "#pragma unroll\n"
                              "for (int u = 0; u < 8; ++u) if (v[u] >= 0 && v[u] < %lldll) atomicAdd(&s_bins[v[u]], 1);\n}\n"
                              "__syncthreads();\n"
                              "for (int b = threadIdx.x; b < %lld; b += blockDim.x) sf_st_i64(a.ptr[%d], b * a.st[%d][0], (i64)s_bins[b]);\n"
                              "}\n",
                              (long long)C, (long long)C, oy, oy);
                continue;
            }
            size_t bo = 0, e = 0;
            bool found = find_kernel(src, src0, q, &bo, &e);
            SF_ASSERT(found);
            emit_copy(&dev, src, bo, e, q);
            sf_buf_printf(t, "k%d_d(a);\n}\n", q);
            if (k->kind == SF_CUK_SCAN_WARP) {
                h->grid_tpl = true;
                if (k->grid > 4) split_ok = false; /* > 32 rows: block 0's stride would skip rows */
            }
            if (k->err_slot >= 0) h->errw = w - 2; /* its a.err word */
        }
    }
    /* Levels: a phase runs one level after the last earlier phase it conflicts with (as
     * early as its data allows), fallible phases in node order among themselves (so the
     * first error in node order is still the one reported: the block stops after a
     * level with a raised slot); one barrier a level.  The Llama routing's 12 phases take
     * 5 levels; that saved ~1 µs, not the barriers' share predicted: a phase's time is
     * mostly its own chain of dependent loads (NOTES, session 6).  Tuning small_level=0:
     * one phase a level, as in node order. */
    int levels = sf_cg_tune("small_level", 1) != 0;
    int nlev = 0, fail_level = 0;
    for (int i = 0; i < nph; i++) {
        int lv = levels ? 0 : i;
        for (int p = 0; p < i && levels; p++)
            if (ph[p].level + 1 > lv && phases_conflict(&ph[p], &ph[i])) lv = ph[p].level + 1;
        if (ph[i].errw >= 0) {
            if (lv < fail_level) lv = fail_level;
            fail_level = lv;
        }
        ph[i].level = lv;
        if (lv + 1 > nlev) nlev = lv + 1;
    }
    /* Blocks: phases that share no memory with each other, even through others (the
     * components of the conflict relation), run in different blocks at once: the
     * Llama routing's score chain, its count chain and its sort chain (NOTES, session
     * 6: one multiprocessor ran them one after another).  Components with a
     * sf_warp_scan phase run in block 0 (that template strides by the real grid; fine
     * for at most 32 rows, else one block).  Errors: each block stops after its own
     * failing phase; the launcher reports the first raised slot in node order, as one
     * block would.  Tuning small_split=0: one block. */
    int *parent = sf_malloc((size_t)(nph > 0 ? nph : 1) * sizeof *parent);
    int *blk_of = sf_malloc((size_t)(nph > 0 ? nph : 1) * sizeof *blk_of);
    if (!parent || !blk_of) {
        free(parent);
        free(blk_of);
        for (int i = 0; i < nph; i++) free(ph[i].text.data);
        free(ph);
        free(dev.data);
        free(body.data);
        free(sn);
        sf_msg(msg, msglen, "cuda: out of memory");
        return SCANFUSE_ERROR_MEMORY;
    }
    for (int i = 0; i < nph; i++) parent[i] = i;
    for (int i = 0; i < nph; i++)
        for (int p = 0; p < i; p++)
            if (phases_conflict(&ph[p], &ph[i])) parent[comp_find(parent, i)] = comp_find(parent, p);
    int nblk = 1;
    bool split = split_ok && levels && sf_cg_tune("small_split", 1) != 0;
    for (int i = 0; i < nph; i++) blk_of[i] = -1;
    /* block 0: the components with a sf_warp_scan phase (or everything) */
    for (int i = 0; i < nph; i++)
        if (!split || ph[i].grid_tpl) blk_of[comp_find(parent, i)] = 0;
    for (int i = 0; i < nph; i++) {
        int r = comp_find(parent, i);
        if (blk_of[r] < 0) blk_of[r] = nblk++;
        ph[i].comp = blk_of[r];
    }
    /* a split with nothing in block 0: renumber from 0 */
    bool any0 = false;
    for (int i = 0; i < nph; i++) any0 |= ph[i].comp == 0;
    if (!any0) {
        for (int i = 0; i < nph; i++) ph[i].comp--;
        nblk--;
    }
    free(parent);
    free(blk_of);
    for (int b = 0; b < nblk; b++) {
        if (nblk > 1) sf_buf_printf(&body, "%sif (blockIdx.x == %d) {\n", b ? "else " : "", b);
        for (int lv = 0; lv < nlev; lv++) {
            sf_op last = SF_OP_add;
            bool any = false;
            for (int i = 0; i < nph; i++)
                if (ph[i].level == lv && ph[i].comp == b) {
                    sf_buf_puts(&body, ph[i].text.data);
                    last = ph[i].op;
                    any = true;
                }
            if (!any) continue;
            sf_buf_puts(&body, "__syncthreads();\n");
            prof_mark(&body, prof, last, &nmark);
            /* stop at the first failing node (its slot holds the error) */
            for (int i = 0; i < nph; i++)
                if (ph[i].level == lv && ph[i].comp == b && ph[i].errw >= 0)
                    sf_buf_printf(&body, "if (*(volatile const u64*)PW[%d] != 0ull) return;\n", ph[i].errw);
        }
        if (nblk > 1) sf_buf_puts(&body, "}\n");
    }
    for (int i = 0; i < nph; i++) free(ph[i].text.data);
    free(ph);
    int nsub = pl->nkernels - nk0;
    /* the pre-kernel: the topk node's own kernel, the grid template (sf_cg_warp_topk) */
    int pre_k = pre ? sn[0].sort_k : -1;
    sf_cuda_kernel *k = sf_cg_new_kernel(g, SF_CUK_SMALL, nodes[0]);
    int ki = (int)(k - pl->k);
    k->sub0 = nk0;
    k->nsub = nsub;
    k->pre1 = pre_k + 1;
    k->block = SF_SMALL_THREADS;
    k->grid = (unsigned)nblk;
    if (dev.data) sf_buf_puts(g->src, dev.data);
    sf_buf_printf(g->src, "struct SfP_k%d { u64 w[%d]; };\n", ki, w > 0 ? w : 1);
    sf_buf_printf(g->src, "extern \"C\" __global__ void __launch_bounds__(%d) k%d(const SfP_k%d P) {\n",
                  SF_SMALL_THREADS, ki, ki);
    if (shared > 0) sf_buf_printf(g->src, "__shared__ int s_sm[%d];\n", shared);
    if (bins > 0) sf_buf_printf(g->src, "__shared__ int s_bins[%d];\n", bins);
    /* The parameter words in shared memory, all loaded at once: read where a phase needs
     * them, each was a constant-bank miss on the phase's critical path (a phase that
     * only stores zeros took 0.7 µs, NOTES session 6).  Tuning small_pw=0: from the
     * parameter. */
    int nw = w > 0 ? w : 1;
    if (sf_cg_tune("small_pw", 1) != 0)
        sf_buf_printf(g->src,
                      "__shared__ u64 PW[%d];\n"
                      "for (int i = threadIdx.x; i < %d; i += blockDim.x) PW[i] = P.w[i];\n"
                      "__syncthreads();\n",
                      nw, nw);
    else
        sf_buf_puts(g->src, "const u64* const PW = P.w;\n");
    if (prof && nmark > 0)
        sf_buf_printf(g->src, "u64 sf_tp[%d] = {};\nu64 sf_t0;\nasm volatile(\"mov.u64 %%0, %%%%globaltimer;\" : \"=l\"(sf_t0));\n",
                      nmark);
    if (body.data) sf_buf_puts(g->src, body.data);
    if (prof && nmark > 0)
        sf_buf_printf(g->src,
                      "if (threadIdx.x == 0) for (int i = 0; i < %d; ++i) if (sf_tp[i])\n"
                      "printf(\"small kernel k%d: phase %%d ends at %%llu ns (block %%d)\\n\", i, sf_tp[i] - sf_t0, (int)blockIdx.x);\n",
                      nmark, ki);
    sf_buf_puts(g->src, "}\n\n");
    free(dev.data);
    free(body.data);
    free(sn);
    *taken = true;
    return SCANFUSE_OK;
}

scanfuse_status sf_cg_small(sf_cg *g, const int *nodes, int n, bool *taken, char *msg,
                            size_t msglen) {
    return small_group(g, nodes, n, false, taken, msg, msglen);
}

/* Can nodes[e] join the run of element-wise nodes nodes[i..e) (all pointwise, results of
 * one shape)?  The run's kernel launches where its first node would (cuda_backend.c,
 * also when the segment falls back to node by node), so a later node may read only what
 * is ready there: the run's own results, program inputs, constants without memory, and
 * what the first node reads (not a view the segment materializes between the nodes). */
static bool pointwise_run(const sf_cg *g, const int *nodes, int i, int e) {
    const scanfuse_fusion *f = g->f;
    const sf_node *na = &f->nodes[nodes[i]], *nb = &f->nodes[nodes[e]];
    if (sf_op_table[na->op].kind != SF_KIND_POINTWISE || sf_op_table[nb->op].kind != SF_KIND_POINTWISE ||
        sf_cg_is_gather(na->op) || sf_cg_is_gather(nb->op))
        return false;
    const sf_value *x = &f->values[na->out[0]], *y = &f->values[nb->out[0]];
    if (x->ndim != y->ndim) return false;
    for (int d = 0; d < x->ndim; d++)
        if (x->shape[d] != y->shape[d]) return false;
    for (int q = 0; q < nb->nin; q++) {
        int32_t v = nb->in[q];
        int p = f->values[v].producer, kind = g->pl->vkind[v];
        bool ready = p < 0 || kind == SF_CUV_LITERAL || kind == SF_CUV_INLINE;
        for (int j = i; j < e && !ready; j++) ready = nodes[j] == p;
        for (int r = 0; r < na->nin && !ready; r++) ready = na->in[r] == v;
        if (!ready) return false;
    }
    return true;
}

/* The last node a part starting at nodes[i] could reach, from what is known before any
 * code is generated (so the search below emits only candidates that can pass, not every
 * run of a long segment): a part holds no element-wise node of more than 4 elements a
 * thread, no more bytes than small_kb (its results' bytes alone), and at most 64 nodes
 * (each has a sub-kernel of at least 8 parameter words, SF_SMALL_MAXWORDS in all).
 * Each is a bound small_group applies too, so the parts found are the same. */
static int part_end(const sf_cg *g, const int *nodes, int i, int n) {
    const scanfuse_fusion *f = g->f;
    int64_t bytes = 0, lim = (int64_t)sf_cg_tune("small_kb", SF_SMALL_KB) * 1024;
    int j = i;
    for (; j < n && j - i < SF_SMALL_MAXWORDS / 8; j++) {
        const sf_node *nd = &f->nodes[nodes[j]];
        const sf_value *y = &f->values[nd->out[0]];
        if (sf_op_table[nd->op].kind == SF_KIND_POINTWISE && !sf_cg_is_gather(nd->op) &&
            sf_value_numel(y) > 4 * SF_SMALL_THREADS)
            break;
        for (int q = 0; q < nd->nout; q++) {
            int32_t v = nd->out[q];
            int kind = g->pl->vkind[v];
            if (kind != SF_CUV_LITERAL && kind != SF_CUV_INLINE)
                bytes += sf_value_numel(&f->values[v]) * (int64_t)scanfuse_dtype_size(f->values[v].dtype);
        }
        if (bytes > lim) break;
    }
    return j - 1;
}

/* Greedy, in node order: from each node, the longest run that small_group takes becomes
 * one SMALL kernel, else the node runs its own kernels.  Runs keep node order, so every
 * value a run reads was written by an earlier launch (each kernel waits for the one
 * before it). */
scanfuse_status sf_cg_small_parts(sf_cg *g, const int *nodes, int n, int *groups, char *msg, size_t msglen) {
    sf_cuda_plan *pl = g->pl;
    *groups = 0;
    if (n < 3 || sf_cg_tune("small", 1) == 0 || sf_cg_tune("small_part", 1) == 0) return SCANFUSE_OK;
    size_t src0 = g->src->len;
    int nk0 = pl->nkernels, nerr0 = pl->nerr;
    bool fail0 = pl->may_fail;
    scanfuse_status st = SCANFUSE_OK;
    for (int i = 0; i < n && st == SCANFUSE_OK;) {
        bool taken = false;
        int j = part_end(g, nodes, i, n);
        for (; j > i; j--) {
            st = small_group(g, nodes + i, j - i + 1, true, &taken, msg, msglen);
            if (st != SCANFUSE_OK || taken) break;
        }
        if (st != SCANFUSE_OK) break;
        if (taken) {
            const sf_cuda_kernel *k = &pl->k[pl->nkernels - 1];
            for (int q = k->sub0; q < k->sub0 + k->nsub; q++) pl->k[q].small_sub = true;
            ++*groups;
            i = j + 1;
            continue;
        }
        /* else a run of element-wise nodes of one shape (the routing's cast and
         * sigmoid) as one kernel, or the node alone */
        int e = i + 1;
        while (e < n && pointwise_run(g, nodes, i, e)) e++;
        st = e - i > 1 ? sf_cg_emit_run(g, nodes + i, e - i, msg, msglen) : sf_cg_emit_node(g, nodes[i], msg, msglen);
        i = e;
    }
    if (st != SCANFUSE_OK || *groups == 0 || g->src->oom) {
        /* as before: the caller runs the segment node by node (or reports st) */
        *groups = 0;
        pl->nkernels = nk0;
        pl->nerr = nerr0;
        pl->may_fail = fail0;
        g->src->len = src0;
        if (g->src->data) g->src->data[src0] = '\0';
    }
    return st;
}
