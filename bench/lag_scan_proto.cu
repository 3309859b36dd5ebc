// bench/lag_scan_proto.cu — a design experiment, not part of scanfuse: a 1-D float32
// cumsum (double accumulation, deterministic) whose blocks never hold a tile through
// its look-back.  Each block of a grid of co-resident blocks takes tiles in a static
// order (tile b + k * grid at step k) and, at step k:
//   1. issues the loads of its new tile (step k, from DRAM, by cp.async into a shared
//      stage; PF: the next step's tile too) and of its old tile (step k - D, read a
//      second time, into registers: an L2 hit if the L2 still holds it), and the first
//      polls of the states the old tile's prefix needs;
//   2. group duty: if its tile of step k - 1 was the last of a group of G tiles, it
//      folds that group's aggregates (published at steps <= k - 1) and publishes GA;
//   3. folds the new tile and, after the block's first barrier, publishes its
//      aggregate A;
//   4. phase two for the old tile: its exclusive prefix by the fixed formula of
//      scanfuse's look-back (SP of the super-group before, the GA of the groups of its
//      super-group before its own, the A of the tiles of its group before it), folded
//      in a fixed shape, so the same bits on every run; then the tile's scan and stores.
// A new tile's aggregate waits only for the polls of 2 and 4, whose states come from
// earlier steps (D >= 2); the super-group prefix, read after the barrier, from a smaller
// tile's phase two.  So every wait is on something published before it, and nothing
// waits on itself; the grid must be co-resident for the static order (the occupancy
// calculator sizes it; a product would use a cooperative launch or tickets).
// scanfuse's kernels (sf_row_scan) instead hold the tile's stage in shared
// memory from its loads until its prefix is known, about half of a tile's life
// (bench/NOTES.md, sessions 8-13): this measures what freeing it is worth.
// reg_scan (below) holds the waiting tiles in registers instead of reading them again.
// Prototype limits: n a multiple of the tile; float32 only.
//   nvcc -std=c++17 -O3 -arch=sm_90 bench/lag_scan_proto.cu -o build/lag_scan_proto
//   lag_scan_proto [--json FILE] [--only VARIANT] [--log2n N]
//     a table; one JSON object a case appended to FILE; sizes 2^26 and 2^28 unless N
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_check.h"

typedef unsigned long long u64;
typedef unsigned int u32;
typedef long long i64;

static constexpr int THREADS = 256, NW = THREADS / 32, G = 128, G2 = 128;

// A state is a double in two 64-bit words, each [epoch:32 | half:32]: a reader that
// sees the launch's epoch in both has both halves of this launch's value, with no fence.
__device__ __forceinline__ void st_rlx(u64 *p, u64 v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u64 ld_rlx(const u64 *p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void pub(u64 *w, double v, u32 ep) {
    const u64 b = (u64)__double_as_longlong(v);
    st_rlx(w, ((u64)ep << 32) | (b & 0xffffffffull));
    st_rlx(w + 1, ((u64)ep << 32) | (b >> 32));
}
// take_from: the value of the state at w, given a first read (lo, hi) issued earlier
// (so its round trip overlaps other work); polls again until it carries the epoch.
__device__ __forceinline__ double take_from(const u64 *w, u32 ep, u64 lo, u64 hi) {
    while ((u32)(lo >> 32) != ep || (u32)(hi >> 32) != ep) {
        __nanosleep(100);
        lo = ld_rlx(w);
        hi = ld_rlx(w + 1);
    }
    return __longlong_as_double((i64)(((hi & 0xffffffffull) << 32) | (lo & 0xffffffffull)));
}
__device__ __forceinline__ double take(const u64 *w, u32 ep) { return take_from(w, ep, ld_rlx(w), ld_rlx(w + 1)); }

// fixed-shape folds and scans of doubles across a warp
__device__ __forceinline__ double warp_fold(double x) { /* lane 0 holds the fold */
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
    return x;
}
__device__ __forceinline__ double warp_incl(double x, int lane) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const double y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x = y + x;
    }
    return x;
}
// block-wide fold of one value a thread in a fixed shape; every thread gets thread 0's
__device__ __forceinline__ double block_fold(double x, double *s_w, double *s_out) {
    const double w = warp_fold(x);
    if ((threadIdx.x & 31) == 0) s_w[threadIdx.x >> 5] = w;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = s_w[0];
        for (int i = 1; i < NW; ++i) t += s_w[i];
        *s_out = t;
    }
    __syncthreads();
    return *s_out;
}

template <int ITEMS, int D, int MINB, bool OSTG, bool PF, bool PO = false>
__global__ void __launch_bounds__(THREADS, MINB)
    lag_scan(const float *__restrict__ x, float *__restrict__ y, i64 ntiles, u64 *st, u32 ep) {
    constexpr int K = ITEMS / 4, TS = THREADS * ITEMS; /* float4 strips a thread */
    static_assert(PF || !OSTG, "the old tile staged only beside the prefetch (the order of the copy groups)");
    static_assert(!(PO && OSTG), "PO: the old tile in registers, loaded a step ahead");
    static_assert(D >= 2, "a new tile's aggregate waits for the polls of the old tile's prefix");
    /* tile numbers in 32 bits (the sizes here are at most 2^30 elements) */
    const int ngroups = (int)((ntiles + G - 1) / G);
    u64 *A = st, *GA = A + 2 * ntiles, *SP = GA + 2 * ngroups;
    static_assert(K * NW <= 32, "one warp scans the (strip, warp) totals");
    __shared__ double s_w[NW], s_w1[NW], s_one, s_off[K][NW], s_sw[K][NW];
    __shared__ float4 s_x[PF ? 2 : 1][K * THREADS]; /* new tiles, each thread's own float4s */
    __shared__ float4 s_o[OSTG ? K * THREADS : 1]; /* OSTG: the old tile's too */
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nt = (int)ntiles, grid = gridDim.x, nit = (nt - (int)blockIdx.x + grid - 1) / grid;
    float4 xo[K]; /* PO: the next step's old tile, loaded at the end of this step */
    for (int k = 0; k < nit + D; ++k) {
        const int tn = k < nit ? (int)blockIdx.x + k * grid : -1;
        const int to = k >= D ? (int)blockIdx.x + (k - D) * grid : -1;
        const int tl = k >= 1 && k - 1 < nit ? (int)blockIdx.x + (k - 1) * grid : -1;
        /* the new tile's copies into its stage: no registers held while they are in
         * flight; PF: the next step's tile, issued now, its stage the other of two */
        auto copy_new = [&](int t, int sl) {
            const float4 *p = (const float4 *)(x + (i64)t * TS) + tid;
#pragma unroll
            for (int j = 0; j < K; ++j) {
                const u32 d = (u32)__cvta_generic_to_shared(&s_x[sl][j * THREADS + tid]);
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(p + j * THREADS) : "memory");
            }
        };
        /* the old tile's copies (OSTG) are committed before the next tile's, so that
         * phase two can wait for them alone */
        if (PF && k == 0) {
            if (tn >= 0) copy_new(tn, 0);
            asm volatile("cp.async.commit_group;" ::: "memory");
        }
        if (to >= 0 && (!PO || k == D)) {
            const float4 *p = (const float4 *)(x + (i64)to * TS) + tid;
#pragma unroll
            for (int j = 0; j < K; ++j) {
                if (OSTG) {
                    const u32 d = (u32)__cvta_generic_to_shared(&s_o[j * THREADS + tid]);
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(p + j * THREADS) : "memory");
                } else {
                    xo[j] = __ldcs(p + j * THREADS);
                }
            }
            if (OSTG) asm volatile("cp.async.commit_group;" ::: "memory");
        }
        const int sl = PF ? k & 1 : 0;
        if (PF) {
            if (k + 1 < nit) copy_new(tn + grid, sl ^ 1);
            asm volatile("cp.async.commit_group;" ::: "memory"); /* (empty groups count too) */
        } else if (tn >= 0) {
            copy_new(tn, 0);
            asm volatile("cp.async.commit_group;" ::: "memory");
        }
        /* first reads of the states the old tile's prefix needs, in flight with the loads */
        int g = 0, ji = 0, s = 0, gi = 0;
        const u64 *pw = nullptr;
        u64 plo = 0, phi = 0, slo = 0, shi = 0;
        if (to >= 0) {
            g = to / G, ji = to - g * G, s = g / G2, gi = g - s * G2;
            if (tid < G) {
                if (tid < ji) pw = A + 2 * (g * G + tid);
            } else if (tid - G < gi) {
                pw = GA + 2 * (s * G2 + (tid - G));
            }
            if (pw) plo = ld_rlx(pw), phi = ld_rlx(pw + 1);
            if (tid == 0 && s > 0) slo = ld_rlx(SP + 2 * (s - 1)), shi = ld_rlx(SP + 2 * (s - 1) + 1);
        }
        /* 2. group duty for the tile of step k - 1 (once in G steps of a block; its loads
         * above are in flight meanwhile) */
        if (tl >= 0 && (tl % G == G - 1) && tl + 1 < nt) {
            const int gd = tl / G;
            const double a = tid < G ? take(A + 2 * (gd * G + tid), ep) : 0.0;
            const double ga = block_fold(a, s_w, &s_one);
            if (tid == 0) pub(GA + 2 * gd, ga, ep);
        }
        /* 3. the new tile's fold: each warp's, into s_w1 (the block's after barrier 1) */
        if (tn >= 0) {
            /* this thread's own copies of the new tile (the groups committed after
             * them: the old tile's, PF's next tile, may stay in flight) */
            if ((OSTG && to >= 0) + PF == 2) asm volatile("cp.async.wait_group 2;" ::: "memory");
            else if ((OSTG && to >= 0) + PF == 1) asm volatile("cp.async.wait_group 1;" ::: "memory");
            else asm volatile("cp.async.wait_all;" ::: "memory");
            double f = 0.0;
#pragma unroll
            for (int j = 0; j < K; ++j) {
                const float4 v = s_x[sl][j * THREADS + tid];
                f += ((double)v.x + (double)v.y) + ((double)v.z + (double)v.w);
            }
            const double wf = warp_fold(f);
            if (lane == 0) s_w1[warp] = wf;
        }
        /* 4. the old tile: its predecessors' states (warps 0-3 the tile aggregates, 4-7
         * the group aggregates), each strip's fold and warp scan */
        double lex[K];
        if (to >= 0) {
            const double a = pw ? take_from(pw, ep, plo, phi) : 0.0;
            const double wf = warp_fold(a);
            if (lane == 0) s_w[warp] = wf;
            if (OSTG) {
                if (PF) asm volatile("cp.async.wait_group 1;" ::: "memory");
                else asm volatile("cp.async.wait_all;" ::: "memory");
#pragma unroll
                for (int j = 0; j < K; ++j) xo[j] = s_o[j * THREADS + tid];
            }
#pragma unroll
            for (int j = 0; j < K; ++j) {
                const double sj = ((double)xo[j].x + (double)xo[j].y) + ((double)xo[j].z + (double)xo[j].w);
                const double inc = warp_incl(sj, lane);
                lex[j] = __shfl_up_sync(0xffffffffu, inc, 1);
                if (lane == 31) s_sw[j][warp] = inc;
            }
        }
        __syncthreads(); /* barrier 1 */
        if (warp == 0 && tn >= 0) { /* the new tile's aggregate, published */
            const double agg = warp_fold(lane < NW ? s_w1[lane] : 0.0);
            if (lane == 0) pub(A + 2 * tn, agg, ep);
        }
        if (warp == 1 && to >= 0) { /* the old tile's prefix, and every (strip, warp)'s offset */
            double pre = 0.0;
            if (lane == 0) {
                double SA = s_w[0], SG = s_w[NW / 2];
                for (int w = 1; w < NW / 2; ++w) SA += s_w[w];
                for (int w = NW / 2 + 1; w < NW; ++w) SG += s_w[w];
                pre = SG;
                if (s > 0) pre = take_from(SP + 2 * (s - 1), ep, slo, shi) + SG;
                pre = pre + SA;
                if (ji == G - 1 && gi == G2 - 1 && to + 1 < nt) /* one link per super-group */
                    pub(SP + 2 * s, pre + take(A + 2 * to, ep), ep);
            }
            pre = __shfl_sync(0xffffffffu, pre, 0);
            /* lane i: strip i / NW of warp i % NW, in the tile's order */
            const double v = lane < K * NW ? s_sw[lane / NW][lane % NW] : 0.0;
            const double inc = warp_incl(v, lane), exc = __shfl_up_sync(0xffffffffu, inc, 1);
            if (lane < K * NW) s_off[lane / NW][lane % NW] = lane ? pre + exc : pre;
        }
        __syncthreads(); /* barrier 2 (the next step writes s_w1, s_w and s_sw only after
                            its barrier-free part, read here before this barrier) */
        if (to >= 0) {
            float4 *q = (float4 *)(y + (i64)to * TS) + tid;
#pragma unroll
            for (int j = 0; j < K; ++j) {
                double r = lane ? s_off[j][warp] + lex[j] : s_off[j][warp];
                float4 v;
                r = r + (double)xo[j].x;
                v.x = (float)r;
                r = r + (double)xo[j].y;
                v.y = (float)r;
                r = r + (double)xo[j].z;
                v.z = (float)r;
                r = r + (double)xo[j].w;
                v.w = (float)r;
                __stcs(q + j * THREADS, v);
            }
            if (PO && k + 1 - D < nit) {
                const float4 *p = (const float4 *)(x + (i64)(to + grid) * TS) + tid;
#pragma unroll
                for (int j = 0; j < K; ++j) xo[j] = __ldcs(p + j * THREADS);
            }
        }
    }
}

// reg_scan: the waiting tiles held in registers instead of read again.  A ring of NS
// stages takes the new tiles' copies NS - 1 steps ahead; at step k the block folds tile
// k from its stage and publishes its aggregate, copies its own float4s of it into
// registers (which frees the stage for tile k + NS - 1 without a barrier: each thread
// reads only what its own copies wrote), and writes tile k - D from registers once its
// prefix is known.  An SM's tiles then wait in the register file while its shared
// memory keeps loading (session 26, NOTES entry 3).  The same states, formula and
// folds as lag_scan, so the same kind of check; D >= 1 (the group duty comes first in
// a step, so a step's waits are on earlier steps' states, or a smaller tile's SP).
template <int ITEMS, int D, int NS, int MINB>
__global__ void __launch_bounds__(THREADS, MINB)
    reg_scan(const float *__restrict__ x, float *__restrict__ y, i64 ntiles, u64 *st, u32 ep) {
    constexpr int K = ITEMS / 4, TS = THREADS * ITEMS;
    static_assert(D >= 1 && NS >= 2 && NS <= 4, "a lag of at least one step; 2 to 4 stages");
    static_assert(K * NW <= 32, "one warp scans the (strip, warp) totals");
    const int ngroups = (int)((ntiles + G - 1) / G);
    u64 *A = st, *GA = A + 2 * ntiles, *SP = GA + 2 * ngroups;
    __shared__ double s_w[NW], s_w1[NW], s_one, s_off[K][NW], s_sw[K][NW];
    __shared__ float4 s_x[NS][K * THREADS];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nt = (int)ntiles, grid = gridDim.x, nit = (nt - (int)blockIdx.x + grid - 1) / grid;
    float4 h[D][K]; /* h[d]: the tile of step k - 1 - d, kept for its phase two */
    auto copy_in = [&](int step) { /* the copies of this block's tile of `step`, a group */
        if (step < nit) {
            const float4 *p = (const float4 *)(x + (i64)((int)blockIdx.x + step * grid) * TS) + tid;
#pragma unroll
            for (int j = 0; j < K; ++j) {
                const u32 d = (u32)__cvta_generic_to_shared(&s_x[step % NS][j * THREADS + tid]);
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(p + j * THREADS) : "memory");
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory"); /* (empty groups count too) */
    };
    for (int q = 0; q < NS - 1; ++q) copy_in(q);
    for (int k = 0; k < nit + D; ++k) {
        const int tn = k < nit ? (int)blockIdx.x + k * grid : -1;
        const int to = k >= D ? (int)blockIdx.x + (k - D) * grid : -1;
        const int tl = k >= 1 && k - 1 < nit ? (int)blockIdx.x + (k - 1) * grid : -1;
        /* the stage of step k - 1's tile is free (its float4s went to registers): tile
         * k + NS - 1 goes there */
        copy_in(k + NS - 1);
        int g = 0, ji = 0, s = 0, gi = 0;
        const u64 *pw = nullptr;
        u64 plo = 0, phi = 0, slo = 0, shi = 0;
        if (to >= 0) { /* the first polls of the old tile's states */
            g = to / G, ji = to - g * G, s = g / G2, gi = g - s * G2;
            if (tid < G) {
                if (tid < ji) pw = A + 2 * (g * G + tid);
            } else if (tid - G < gi) {
                pw = GA + 2 * (s * G2 + (tid - G));
            }
            if (pw) plo = ld_rlx(pw), phi = ld_rlx(pw + 1);
            if (tid == 0 && s > 0) slo = ld_rlx(SP + 2 * (s - 1)), shi = ld_rlx(SP + 2 * (s - 1) + 1);
        }
        if (tl >= 0 && (tl % G == G - 1) && tl + 1 < nt) { /* group duty */
            const int gd = tl / G;
            const double a = tid < G ? take(A + 2 * (gd * G + tid), ep) : 0.0;
            const double ga = block_fold(a, s_w, &s_one);
            if (tid == 0) pub(GA + 2 * gd, ga, ep);
        }
        float4 hn[K];
        if (tn >= 0) { /* tile k: this thread's copies landed (the NS - 1 groups after may not) */
            if (NS == 2) asm volatile("cp.async.wait_group 1;" ::: "memory");
            else if (NS == 3) asm volatile("cp.async.wait_group 2;" ::: "memory");
            else asm volatile("cp.async.wait_group 3;" ::: "memory");
            double f = 0.0;
#pragma unroll
            for (int j = 0; j < K; ++j) {
                hn[j] = s_x[k % NS][j * THREADS + tid];
                f += ((double)hn[j].x + (double)hn[j].y) + ((double)hn[j].z + (double)hn[j].w);
            }
            const double wf = warp_fold(f);
            if (lane == 0) s_w1[warp] = wf;
        }
        double lex[K];
        if (to >= 0) {
            const double a = pw ? take_from(pw, ep, plo, phi) : 0.0;
            const double wf = warp_fold(a);
            if (lane == 0) s_w[warp] = wf;
#pragma unroll
            for (int j = 0; j < K; ++j) {
                const float4 v = h[D - 1][j];
                const double sj = ((double)v.x + (double)v.y) + ((double)v.z + (double)v.w);
                const double inc = warp_incl(sj, lane);
                lex[j] = __shfl_up_sync(0xffffffffu, inc, 1);
                if (lane == 31) s_sw[j][warp] = inc;
            }
        }
        __syncthreads(); /* barrier 1 */
        if (warp == 0 && tn >= 0) {
            const double agg = warp_fold(lane < NW ? s_w1[lane] : 0.0);
            if (lane == 0) pub(A + 2 * tn, agg, ep);
        }
        if (warp == 1 && to >= 0) {
            double pre = 0.0;
            if (lane == 0) {
                double SA = s_w[0], SG = s_w[NW / 2];
                for (int w = 1; w < NW / 2; ++w) SA += s_w[w];
                for (int w = NW / 2 + 1; w < NW; ++w) SG += s_w[w];
                pre = SG;
                if (s > 0) pre = take_from(SP + 2 * (s - 1), ep, slo, shi) + SG;
                pre = pre + SA;
                if (ji == G - 1 && gi == G2 - 1 && to + 1 < nt)
                    pub(SP + 2 * s, pre + take(A + 2 * to, ep), ep);
            }
            pre = __shfl_sync(0xffffffffu, pre, 0);
            const double v = lane < K * NW ? s_sw[lane / NW][lane % NW] : 0.0;
            const double inc = warp_incl(v, lane), exc = __shfl_up_sync(0xffffffffu, inc, 1);
            if (lane < K * NW) s_off[lane / NW][lane % NW] = lane ? pre + exc : pre;
        }
        __syncthreads(); /* barrier 2 */
        if (to >= 0) {
            float4 *qo = (float4 *)(y + (i64)to * TS) + tid;
#pragma unroll
            for (int j = 0; j < K; ++j) {
                const float4 u = h[D - 1][j];
                double r = lane ? s_off[j][warp] + lex[j] : s_off[j][warp];
                float4 v;
                r = r + (double)u.x;
                v.x = (float)r;
                r = r + (double)u.y;
                v.y = (float)r;
                r = r + (double)u.z;
                v.z = (float)r;
                r = r + (double)u.w;
                v.w = (float)r;
                __stcs(qo + j * THREADS, v);
            }
        }
#pragma unroll
        for (int d = D - 1; d > 0; --d)
#pragma unroll
            for (int j = 0; j < K; ++j) h[d][j] = h[d - 1][j];
#pragma unroll
        for (int j = 0; j < K; ++j) h[0][j] = hn[j];
    }
}

struct variant {
    const char *name;
    void (*launch)(const float *, float *, i64 n, u64 *, u32, int *grid, int *tile);
};

// Launches kern over n elements in tiles of TS on a grid of as many blocks as are
// resident at once (worked out once for each kernel, in *grid); the static tile order
// needs every block resident.
template <class Kernel>
static void launch_tiles(Kernel *kern, int TS, int *grid, const float *x, float *y, i64 n, u64 *st, u32 ep,
                         int *grid_out, int *tile_out) {
    const i64 ntiles = n / TS;
    if (n % TS) {
        fprintf(stderr, "lag_scan_proto: %lld elements are not whole tiles of %d\n", n, TS);
        exit(1);
    }
    if (!*grid) {
        int per = 0, sms = 0, dev = 0;
        CK(cudaGetDevice(&dev));
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, THREADS, 0));
        *grid = per * sms;
    }
    const int g = (int)std::min<i64>(*grid, ntiles);
    kern<<<g, THREADS>>>(x, y, ntiles, st, ep);
    if (grid_out) *grid_out = g;
    if (tile_out) *tile_out = TS;
}

template <int ITEMS, int D, int MINB, bool OSTG, bool PF, bool PO = false>
static void launch_v(const float *x, float *y, i64 n, u64 *st, u32 ep, int *grid_out, int *tile_out) {
    static int grid = 0;
    launch_tiles(lag_scan<ITEMS, D, MINB, OSTG, PF, PO>, THREADS * ITEMS, &grid, x, y, n, st, ep, grid_out, tile_out);
}

template <int ITEMS, int D, int NS, int MINB>
static void launch_r(const float *x, float *y, i64 n, u64 *st, u32 ep, int *grid_out, int *tile_out) {
    static int grid = 0;
    launch_tiles(reg_scan<ITEMS, D, NS, MINB>, THREADS * ITEMS, &grid, x, y, n, st, ep, grid_out, tile_out);
}

static const variant variants[] = {
    {"i16_lag2_4blk", launch_v<16, 2, 4, false, false>},
    {"reg_i16_d1_s2_3blk", launch_r<16, 1, 2, 3>},
    {"reg_i16_d1_s2_4blk", launch_r<16, 1, 2, 4>},
    {"reg_i8_d1_s3_4blk", launch_r<8, 1, 3, 4>},
    {"reg_i8_d1_s3_5blk", launch_r<8, 1, 3, 5>},
    {"reg_i8_d2_s3_4blk", launch_r<8, 2, 3, 4>},
    {"reg_i8_d1_s4_4blk", launch_r<8, 1, 4, 4>},
    {"reg_i16_d2_s2_2blk", launch_r<16, 2, 2, 2>},
};

static double median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2] * 1e-3;
}

int main(int argc, char **argv) {
    const char *json = NULL, *only = NULL;
    int log2n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--log2n") && i + 1 < argc) {
            char *end;
            const long v = strtol(argv[++i], &end, 10);
            log2n = *end || end == argv[i] || v < 20 || v > 30 ? -1 : (int)v;
            if (log2n < 0) {
                fprintf(stderr, "lag_scan_proto: --log2n %s: sizes from 2^20 to 2^30 only\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: lag_scan_proto [--json FILE] [--only VARIANT] [--log2n 20..30]\n");
            return 2;
        }
    }
    if (only) {
        bool known = false;
        for (const variant &v : variants) known |= !strcmp(only, v.name);
        if (!known) {
            fprintf(stderr, "lag_scan_proto: no variant %s\n", only);
            return 2;
        }
    }
    FILE *jf = json ? fopen(json, "a") : NULL;
    if (json && !jf) {
        fprintf(stderr, "lag_scan_proto: cannot open %s: %s\n", json, strerror(errno));
        return 2;
    }
    std::vector<i64> sizes = {(i64)1 << 26, (i64)1 << 28};
    if (log2n) sizes = {(i64)1 << log2n};
    const int REPEAT = 20;
    printf("%-20s %10s %10s %10s %7s %s\n", "variant", "n", "scan us", "copy us", "ratio", "check");
    for (i64 n : sizes) {
        std::vector<float> hx(n);
        u64 s = 0x9e3779b97f4a7c15ull;
        for (i64 i = 0; i < n; i++) { /* uniform in [-1, 1) */
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            hx[i] = (float)((double)(s >> 11) * 0x1p-52 - 1.0);
        }
        /* the reference: an exact running sum in two doubles (Neumaier), its magnitude */
        std::vector<double> ref(n), mag(n);
        double hi = 0, lo = 0, m = 0;
        for (i64 i = 0; i < n; i++) {
            const double v = hx[i], t = hi + v;
            lo += fabs(hi) >= fabs(v) ? (hi - t) + v : (v - t) + hi;
            hi = t;
            m += fabs(v);
            ref[i] = hi + lo;
            mag[i] = m;
        }
        float *dx, *dy, *dc;
        u64 *st;
        CK(cudaMalloc(&dx, n * 4));
        CK(cudaMalloc(&dy, n * 4));
        CK(cudaMalloc(&dc, n * 4));
        CK(cudaMalloc(&st, (n / 1024 + 1024) * 64));
        CK(cudaMemset(st, 0, (n / 1024 + 1024) * 64));
        CK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        std::vector<float> ms(REPEAT);
        auto time_copy = [&]() {
            for (int r = 0; r < REPEAT; r++) {
                CK(cudaEventRecord(e0));
                CK(cudaMemcpyAsync(dc, dx, n * 4, cudaMemcpyDeviceToDevice));
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&ms[r], e0, e1));
            }
            return median(ms);
        };
        time_copy();
        u32 ep = 0;
        std::vector<float> hy(n), hy2(n);
        for (const variant &v : variants) {
            if (only && strcmp(only, v.name) != 0) continue;
            int grid = 0, tile = 0;
            v.launch(dx, dy, n, st, ++ep, &grid, &tile);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(hy.data(), dy, n * 4, cudaMemcpyDeviceToHost));
            i64 bad = 0;
            for (i64 i = 0; i < n; i++) {
                const double e = fabs((double)hy[i] - ref[i]);
                const double u = ldexp(1.0, std::max(ilogb(ref[i]) - 23, -149));
                if (!(e <= u || e <= ldexp(mag[i], -40))) {
                    if (bad < 3) fprintf(stderr, "%s n=%lld: y[%lld] = %.9g, reference %.17g\n", v.name, n, i, hy[i], ref[i]);
                    bad++;
                }
            }
            std::vector<float> t(REPEAT);
            for (int r = 0; r < REPEAT; r++) {
                CK(cudaEventRecord(e0));
                v.launch(dx, dy, n, st, ++ep, NULL, NULL);
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&t[r], e0, e1));
            }
            const double scan_s = median(t);
            const double copy_s = time_copy();
            CK(cudaMemcpy(hy2.data(), dy, n * 4, cudaMemcpyDeviceToHost));
            const bool same = memcmp(hy.data(), hy2.data(), n * 4) == 0; /* 21 runs later */
            printf("%-20s %10lld %10.1f %10.1f %7.3f %s%s (grid %d, tile %d)\n", v.name, n, scan_s * 1e6,
                   copy_s * 1e6, copy_s / scan_s, bad ? "WRONG" : "ok", same ? "" : " NOT-DETERMINISTIC", grid, tile);
            if (jf)
                fprintf(jf,
                        "{\"case\": \"lag_proto_f32_%lld\", \"variant\": \"%s\", \"seconds\": %.9g, \"copy_seconds\": %.9g, "
                        "\"ratio\": %.4f, \"bad\": %lld, \"bit_identical\": %s, \"grid\": %d, \"tile\": %d}\n",
                        n, v.name, scan_s, copy_s, copy_s / scan_s, bad, same ? "true" : "false", grid, tile);
        }
        CK(cudaFree(dx));
        CK(cudaFree(dy));
        CK(cudaFree(dc));
        CK(cudaFree(st));
    }
    if (jf) fclose(jf);
    return 0;
}
