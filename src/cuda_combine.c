/*
 * cuda_combine.c — the MoE combine as a row kernel on the GPU:
 *
 *     out[t, h] = sum over j < K of  S[row(t, j), h] * W[t, j, 0]      (then the epilogue)
 *
 * where the gathered elements are whole rows of a source S ([R, H]) picked by an index
 * I[t, j] (take_along_dim along dim 0 of a [N, 1, H] view, index [T, K, 1]), or, when
 * that source is itself an index_select P = X[J] of the segment, rows J[I[t, j]] of X
 * (the emitter's composed gather).  The generic reduction kernel (sf_red_thread_v)
 * computes each output element on its own through a chain of three dependent loads
 * (I, J, then two bytes of X): ~1.4 µs a round for 16 bytes a thread, 39 µs at Llama
 * sizes where the bytes take ~10 (NOTES, CUDA session 5).  Here a warp takes 32 x U
 * vectors of 16 bytes (E elements each) of one output row: its lanes load the K indices
 * and weights once (the same for the whole warp), then K x U vectors each at once, and
 * compute every element exactly as the generic kernel does (Cb::elem: the product
 * rounded to the mul's dtype, converted to the sum's compute type, combined by the same
 * Op in slot order, or the plain double sum where that is provably the same (Cb::EXACT),
 * stored by the same Io::st with its epilogue, into registers and out as one vector),
 * so the bits are those of the generic kernel.  Measured (H200, Nsight): Llama 32.1 µs,
 * DeepSeek 289.9 µs in session 5; 18.2 and 195.4 µs in session 11 (NOTES), against
 * floors of 14 and 138 µs.
 *
 * Direct rows: when I is the inverse of a permutation Q (I = argsort(Q), Q an argsort)
 * and J = floor_divide(Q, d), J[I[i]] = i / d, so slot j of row t reads row (t*K + j) / d
 * of X with no load on the way (direct_rows; the MoE routing, d = k: row t itself).
 *
 * Lazy rows: when P is an output of the segment (stored) and I is the inverse of a
 * permutation (an argsort of an argsort's result: every row of P is read by exactly one
 * (t, j)), the thread that reads a row writes it to P from the same loads, and P's own
 * row-gather kernel is not emitted: the bytes become the floor's (X read once, P and
 * the output written once) and one launch goes.
 *
 * Conditions (sf_cg_combine_match): a sum over dim 1 of [T, K, H] (K <= 8) of
 * mul(G, W) (either order, floating dtypes), G = take_along_dim as above of a source
 * in memory or an index_select of the segment, W [T, K, 1] in memory, nothing else of
 * the segment reading G or the product, the indices proven in range (sf_int_range: no
 * check kernel, no error), H a multiple of the 16-byte vector's elements.  Rows that
 * are not contiguous or 16-byte aligned take the element path of the same kernel.
 *
 * Tuning (SCANFUSE_CUDA_TUNE; benchmarks): row_combine=0 (the generic reduction),
 * comb_f32=0 (the generic epilogue), comb_minb=B (blocks an SM), comb_direct=0 (rows
 * through the loaded index chain), comb_pre=0 (no loads before the PDL wait), and the
 * experiments comb_grid=B (at most B blocks,
 * warps taking several items) and comb_vec=8 (8-byte vectors), both measured slower.
 */
#include "cuda_codegen.h"

#include <stdio.h>
#include <string.h>

static const char *const combine_prelude[] = {
    "// ---- the row combine (cuda_combine.c) ----",
    "// A warp takes 32 x U vectors of one output row, lane l vectors l, l + 32, ... of its",
    "// segment (each load instruction reads 512 contiguous bytes; a lane's U vectors 64",
    "// bytes apart were an L1/L2 request each: 140 µs at Llama sizes).",
    "// The E results of a vector through Io::st into registers (its one output operand oY",
    "// pointed at a local array: every offset is a constant after unrolling), then one",
    "// store of E * OB bytes: E two-byte stores 16 bytes apart were a partial-sector L2",
    "// write each.",
    "// One output vector: E results of OB bytes from buf, as 16-byte stores (8 bytes: one).",
    "template <int E, int OB>",
    "__device__ __forceinline__ void sf_row_combine_put(const sf_args& a, int oY, i64 o, const uint4* buf) {",
    "    if (E * OB >= 16) {",
    "#pragma unroll",
    "        for (int q = 0; q < E * OB / 16; ++q) ((uint4*)a.ptr[oY])[o * OB / 16 + q] = buf[q];",
    "    } else {",
    "        ((uint2*)a.ptr[oY])[o * OB / 8] = *(const uint2*)buf;",
    "    }",
    "}",
    "template <class Io, int E, int OB>",
    "__device__ __forceinline__ void sf_row_combine_st(const sf_args& a, int oY, i64 o, const typename Io::T* acc) {",
    "    uint4 buf[(E * OB + 15) / 16];",
    "    sf_args b = a;",
    "    b.ptr[oY] = (u64)buf;",
    "    b.st[oY][0] = 0;",
    "    b.st[oY][1] = 1;",
    "#pragma unroll",
    "    for (int e = 0; e < E; ++e) Io::st(b, e, acc[e]);",
    "    sf_row_combine_put<E, OB>(a, oY, o, buf);",
    "}",
    "// The float32 epilogue (Cb::F32: the product and the sum float32, the output the sum",
    "// or a cast of it, E of its OB-byte elements a 16-byte input vector).  The generic",
    "// arithmetic in double cost ~90 instructions an element, ten of them float64",
    "// conversions at 16 a clock an SM: the Llama combine was issue-bound (NOTES, session",
    "// 6).  Same bits: a product of two values of <= 24 significant bits is exact in",
    "// double, so rounding it to float32 is the float32 multiply; one slot's sum is that",
    "// product; K slots sum in double as Cb::EXACT allows, else in double-double, and the",
    "// sum's float32 value is that rounded once; the cast rounds the float32 value.",
    "template <class Op, class Io, class Cb, int E, int K, int OB, class VT>",
    "__device__ __forceinline__ void sf_row_combine_f32(const sf_args& a, int oY, i64 o, const VT* v,",
    "                                                   const float* w32, bool vst) {",
    "    typedef typename Cb::R R;",
    "    typedef typename Cb::O O;",
    "    uint4 buf[(E * OB + 15) / 16];",
    "    O* ov = (O*)buf;",
    "#pragma unroll",
    "    for (int e = 0; e < E; ++e) {",
    "        float f;",
    "        if (K == 1) { // (+ 0: the sum of one -0 is +0, as the reduction's 0 + p gives)",
    "            f = __fadd_rn(__fmul_rn(Cb::cv32(((const R*)&v[0])[e]), w32[0]), 0.0f);",
    "        } else {",
    "            // Cb::EXACT's test on the float32 products' exponent fields: the largest and",
    "            // the smallest nonzero magnitude (NaNs skipped: the sum is NaN either way; a",
    "            // subnormal counts as exponent 0, which only sends more elements to the",
    "            // double-double loop, whose bits are the same)",
    "            double sum = 0.0;",
    "            float mx = 0.0f, mn = __uint_as_float(0x7f800000u);",
    "#pragma unroll",
    "            for (int j = 0; j < K; ++j) {",
    "                const float p = __fmul_rn(Cb::cv32(((const R*)&v[j])[e]), w32[j]);",
    "                sum += (double)p;",
    "                const float ap = fabsf(p);",
    "                mx = fmaxf(mx, ap);",
    "                mn = fminf(mn, ap == 0.0f ? __uint_as_float(0x7f800000u) : ap);",
    "            }",
    "            if ((int)(__float_as_uint(mx) >> 23) - (int)(__float_as_uint(mn) >> 23) <= 26) {",
    "                f = (float)sum;",
    "            } else {",
    "                typename Op::T acc = Op::id();",
    "#pragma unroll",
    "                for (int j = 0; j < K; ++j) acc = Op::op(acc, Cb::elem(Cb::cv(((const R*)&v[j])[e]), (double)w32[j]));",
    "                f = (float)sf_dd_fin(acc, 0);",
    "            }",
    "        }",
    "        if (vst) ov[e] = Cb::out32(f);",
    "        else Io::st(a, o + e, Cb::exact((double)f)); // (Io::st rounds it to this f)",
    "    }",
    "    if (vst) sf_row_combine_put<E, OB>(a, oY, o, buf);",
    "}",
    "// A warp's K slots: lane j < K holds slot j's index chain (I[t, j], then its row, and",
    "// the weight), shuffled to the lanes where used; the next row's chain is loaded while",
    "// this row's vectors are in flight (each chain is two dependent loads: one round trip",
    "// a row exposed, and K x 3 registers a lane, before).",
    "template <class Cb, int K>",
    "__device__ __forceinline__ void sf_row_combine_idx(const sf_args& a, i64 t, int lane, i64 nsrc, i64 nmid, i64& m,",
    "                                                   i64& r, double& w, float& wf) {",
    "    if (lane < K) {",
    "        m = sf_clamp_idx(Cb::idx(a, t, lane), nmid);",
    "        r = sf_clamp_idx(Cb::DIRECT ? Cb::rowd(t, lane) : Cb::row(a, m), nsrc);",
    "        w = Cb::wt(a, t, lane);",
    "        wf = (float)w; // exact (Cb::F32: a weight of at most 32 bits)",
    "    }",
    "}",
    "// Rows that are not contiguous and aligned: element by element, strided; each lane",
    "// reads the slots' indices and weights itself (the lanes' element counts differ, so no",
    "// shuffle here), and holds no per-slot arrays: the registers stay the vector path's.",
    "template <class Op, class Io, class Cb, int E, int K, int U, bool LAZY>",
    "__device__ __forceinline__ void sf_row_combine_elem(const sf_args& a, i64 t, i64 vb, i64 Vr, i64 H, i64 nsrc,",
    "                                                    i64 nmid, int oS, int oP) {",
    "    typedef typename Op::T Acc;",
    "    typedef typename Cb::R R;",
    "    for (int u = 0; u < U; ++u) {",
    "        if (vb + u * 32 >= Vr) continue;",
    "        for (int e = 0; e < E; ++e) {",
    "            const i64 h = (vb + u * 32) * E + e;",
    "            Acc acc = Op::id();",
    "            for (int j = 0; j < K; ++j) {",
    "                const i64 mid = sf_clamp_idx(Cb::idx(a, t, j), nmid);",
    "                const i64 row = sf_clamp_idx(Cb::DIRECT ? Cb::rowd(t, j) : Cb::row(a, mid), nsrc);",
    "                const R x = ((const R*)a.ptr[oS])[row * a.st[oS][0] + h * a.st[oS][1]];",
    "                if (LAZY) ((R*)a.ptr[oP])[mid * a.st[oP][0] + h * a.st[oP][1]] = x;",
    "                acc = Op::op(acc, Cb::elem(Cb::cv(x), Cb::wt(a, t, j)));",
    "            }",
    "            Io::st(a, t * H + h, acc);",
    "        }",
    "    }",
    "}",
    "// A lane's vector: E elements, 16 bytes (8 with tuning comb_vec=8: half the registers",
    "// a slot).",
    "template <int B> struct sf_cvec { typedef uint4 type; };",
    "template <> struct sf_cvec<8> { typedef uint2 type; };",
    "// PRE (the source rows known without loads, Cb::ONE, from a program input; a warp an",
    "// item, the default grid): the kernel waits for its predecessors itself (the",
    "// launcher's PDL) after loading its item's source vectors, which no kernel of the run",
    "// writes (the input was complete before the run's first kernel began), so those loads",
    "// overlap the routing's last kernel; and its loop runs once (no next item's registers).",
    "template <class Op, class Io, class Cb, int E, int K, int U, bool LAZY, int OB, bool PRE = false>",
    "__device__ __forceinline__ void sf_row_combine(const sf_args& a, i64 T, i64 H, i64 nsrc, i64 nmid, int oS, int oP,",
    "                                               int oY) {",
    "    typedef typename Op::T Acc;",
    "    typedef typename Cb::R R;",
    "    typedef typename sf_cvec<E * (int)sizeof(R)>::type VT;",
    "    const i64 Vr = H / E, Sg = (Vr + 32 * U - 1) / (32 * U);",
    "    const int lane = threadIdx.x & 31;",
    "    const bool fast = ((a.flags >> oS) & 1) && a.ptr[oS] % sizeof(VT) == 0 &&",
    "                      (!LAZY || (((a.flags >> oP) & 1) && a.ptr[oP] % sizeof(VT) == 0));",
    "    // OB: the output's element size when the vector store applies (else 0)",
    "    const bool vst = OB > 0 && ((a.flags >> oY) & 1) && a.ptr[oY] % 16 == 0;",
    "    const i64 nwarps = ((i64)gridDim.x * blockDim.x) >> 5;",
    "    i64 wv = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;",
    "    VT pv[U]; // (PRE: each warp takes at most one item, so these are its vectors)",
    "    if constexpr (PRE) {",
    "        if (fast && wv < T * Sg) {",
    "            const i64 t0 = wv / Sg, vb0 = (wv - t0 * Sg) * 32 * U + lane;",
    "            const i64 row0 = sf_clamp_idx(Cb::rowd(t0, 0), nsrc);",
    "#pragma unroll",
    "            for (int u = 0; u < U; ++u)",
    "                if (vb0 + u * 32 < Vr) pv[u] = ((const VT*)a.ptr[oS])[row0 * Vr + vb0 + u * 32];",
    "        }",
    "        asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");",
    "        asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");",
    "    }",
    "    i64 cm = 0, cr = 0;",
    "    double cw = 0.0;",
    "    float cwf = 0.0f;",
    "    if (wv < T * Sg) sf_row_combine_idx<Cb, K>(a, wv / Sg, lane, nsrc, nmid, cm, cr, cw, cwf);",
    "    for (; wv < T * Sg; wv += nwarps) {",
    "        const i64 t = wv / Sg, vb = (wv - t * Sg) * 32 * U + lane;",
    "        const i64 wn = wv + nwarps;",
    "        i64 nm = 0, nr = 0;",
    "        double nw = 0.0;",
    "        float nwf = 0.0f;",
    "        if (fast) {",
    "            VT v[K][U] = {}; // (not carried over from the last row's: fewer registers)",
    "            i64 prow = -1;",
    "#pragma unroll",
    "            for (int j = 0; j < K; ++j) {",
    "                const i64 row = __shfl_sync(0xffffffffu, cr, j);",
    "                // a slot that reads the row of the slot before takes its vectors (the row",
    "                // is the same for the whole warp: the branch never diverges); a token's K",
    "                // slots gathered back from one row (a routing with no expert between, as",
    "                // in the DeepSeek example) load it once, not K times (its L1 traffic;",
    "                // the kernel's time is its stores' and spills', NOTES session 7)",
    "                // (Cb::ONE: known at compile time, so the K slots share one vector's",
    "                // registers: 28 fewer at K = 8, where the kernel spilled, NOTES session 12)",
    "                const bool same = j > 0 && (Cb::ONE || row == prow);",
    "                prow = row;",
    "#pragma unroll",
    "                for (int u = 0; u < U; ++u)",
    "                    if (vb + u * 32 < Vr) {",
    "                        if (same) v[j][u] = v[j > 0 ? j - 1 : 0][u];",
    "                        else if (PRE) v[j][u] = pv[u];",
    "                        else v[j][u] = ((const VT*)a.ptr[oS])[row * Vr + vb + u * 32];",
    "                    }",
    "            }",
    "            if (wn < T * Sg) sf_row_combine_idx<Cb, K>(a, wn / Sg, lane, nsrc, nmid, nm, nr, nw, nwf);",
    "            if (LAZY)",
    "#pragma unroll",
    "                for (int j = 0; j < K; ++j) {",
    "                    const i64 mid = __shfl_sync(0xffffffffu, cm, j);",
    "#pragma unroll",
    "                    for (int u = 0; u < U; ++u)",
    "                        if (vb + u * 32 < Vr) ((VT*)a.ptr[oP])[mid * Vr + vb + u * 32] = v[j][u];",
    "                }",
    "            if constexpr (Cb::F32) { // (an output not contiguous and aligned: Io::st)",
    "                float w32[K];",
    "#pragma unroll",
    "                for (int j = 0; j < K; ++j) w32[j] = __shfl_sync(0xffffffffu, cwf, j);",
    "#pragma unroll",
    "                for (int u = 0; u < U; ++u) {",
    "                    if (vb + u * 32 >= Vr) continue;",
    "                    VT vu[K];",
    "#pragma unroll",
    "                    for (int j = 0; j < K; ++j) vu[j] = v[j][u];",
    "                    sf_row_combine_f32<Op, Io, Cb, E, K, OB, VT>(a, oY, t * H + (vb + u * 32) * E, vu, w32, vst);",
    "                }",
    "            } else {",
    "                double wt[K];",
    "#pragma unroll",
    "                for (int j = 0; j < K; ++j) wt[j] = __shfl_sync(0xffffffffu, cw, j);",
    "#pragma unroll",
    "                for (int u = 0; u < U; ++u) {",
    "                    if (vb + u * 32 >= Vr) continue;",
    "                    Acc res[E];",
    "#pragma unroll",
    "                    for (int e = 0; e < E; ++e) {",
    "                        Acc acc = Op::id();",
    "                        bool done = false;",
    "                        if (Cb::EXACT) { // see Cb::EXACT (one slot: always)",
    "                            double sum = 0.0;",
    "                            int emax = 0, emin = 0x7ff;",
    "#pragma unroll",
    "                            for (int j = 0; j < K; ++j) {",
    "                                const double p = Cb::val(Cb::cv(((const R*)&v[j][u])[e]), wt[j]);",
    "                                sum += p;",
    "                                const int ex = (int)((sf_d2b(p) >> 52) & 0x7ff);",
    "                                emax = p != 0.0 && ex > emax ? ex : emax;",
    "                                emin = p != 0.0 && ex < emin ? ex : emin;",
    "                            }",
    "                            if (emax - emin <= 26) {",
    "                                acc = Cb::exact(sum);",
    "                                done = true;",
    "                            }",
    "                        }",
    "                        if (!done)",
    "#pragma unroll",
    "                            for (int j = 0; j < K; ++j) acc = Op::op(acc, Cb::elem(Cb::cv(((const R*)&v[j][u])[e]), wt[j]));",
    "                        res[e] = acc;",
    "                    }",
    "                    if (vst) sf_row_combine_st<Io, E, OB>(a, oY, t * H + (vb + u * 32) * E, res);",
    "                    else",
    "#pragma unroll",
    "                        for (int e = 0; e < E; ++e) Io::st(a, t * H + (vb + u * 32) * E + e, res[e]);",
    "                }",
    "            }",
    "        } else {",
    "            if (wn < T * Sg) sf_row_combine_idx<Cb, K>(a, wn / Sg, lane, nsrc, nmid, nm, nr, nw, nwf);",
    "            sf_row_combine_elem<Op, Io, Cb, E, K, U, LAZY>(a, t, vb, Vr, H, nsrc, nmid, oS, oP);",
    "        }",
    "        cm = nm;",
    "        cr = nr;",
    "        cw = nw;",
    "        cwf = nwf;",
    "        if constexpr (PRE) break;",
    "    }",
    "}",
    NULL};

static const sf_node *producer(const scanfuse_fusion *f, int32_t v) {
    int p = f->values[v].producer;
    return p >= 0 ? &f->nodes[p] : NULL;
}

/* The value a chain of reshapes of v starts from. */
static int32_t unreshape(const scanfuse_fusion *f, int32_t v) {
    for (const sf_node *p = producer(f, v); p && p->op == SF_OP_reshape; p = producer(f, v)) v = p->in[0];
    return v;
}

/* Is v computed by a node of the segment being emitted (through views)? */
static bool from_segment(const sf_cg *g, int32_t v) {
    const scanfuse_fusion *f = g->f;
    for (;;) {
        int p = f->values[v].producer;
        if (p < 0) return false;
        if (g->in_seg[p]) return true;
        if (!sf_node_is_setup(f->nodes[p].op) || f->nodes[p].nin == 0) return false;
        v = f->nodes[p].in[0];
    }
}

/* Nodes of the segment reading value v. */
static int readers(const sf_cg *g, int32_t v) {
    const scanfuse_fusion *f = g->f;
    int n = 0;
    for (int i = 0; i < f->nnodes; i++) {
        if (!g->in_seg[i]) continue;
        for (int q = 0; q < f->nodes[i].nin; q++) n += f->nodes[i].in[q] == v;
    }
    return n;
}

static bool in_range(const scanfuse_fusion *f, int32_t v, int64_t size) {
    int64_t lo, hi;
    return sf_int_range(f, v, &lo, &hi) && lo >= 0 && hi < size;
}

static bool is_float(scanfuse_dtype dt) {
    return dt == SCANFUSE_FLOAT16 || dt == SCANFUSE_BFLOAT16 || dt == SCANFUSE_FLOAT32 ||
           dt == SCANFUSE_FLOAT64;
}

/* The MoE routing's identity: with I = argsort(Q) (ascending, 1-D) of a permutation Q
 * of [0, n) (Q itself an argsort), I is Q's inverse, so Q[I[i]] = i; with J =
 * floor_divide(Q, d) for a positive literal d, J[I[i]] = i / d.  Returns d when ib
 * (I, through reshapes) and jv (J) are so made, else 0 (tuning comb_direct=0: always 0).
 * The combine then knows each slot's source row, t * K + j over d, without the two
 * dependent loads of I and J: in the DeepSeek combine the warps' stall samples sat on
 * that chain (37 %, NOTES session 11). */
static int64_t direct_rows(const scanfuse_fusion *f, int32_t ib, int32_t jv, int64_t n) {
    int ip = f->values[ib].producer, jp = f->values[jv].producer;
    if (sf_cg_tune("comb_direct", 1) == 0 || ip < 0 || jp < 0 || !sf_cg_is_perm_sort(f, ip)) return 0;
    const sf_node *in = &f->nodes[ip], *jn = &f->nodes[jp];
    const sf_value *q = &f->values[in->in[0]];
    if (in->a.descending || q->ndim != 1 || q->shape[0] != n || f->values[ib].ndim != 1) return 0;
    if (jn->op != SF_OP_floor_divide || jn->nin != 2 || jn->in[0] != in->in[0]) return 0;
    const sf_value *dv = &f->values[jn->in[1]];
    if (!dv->weak || dv->producer < 0 || f->nodes[dv->producer].op != SF_OP_scalar ||
        f->nodes[dv->producer].a.value.kind != SF_NUM_INT || f->nodes[dv->producer].a.value.i <= 0)
        return 0;
    return f->nodes[dv->producer].a.value.i;
}

bool sf_cg_combine_match(const sf_cg *g, int anchor, sf_cg_combine *c) {
    const scanfuse_fusion *f = g->f;
    memset(c, 0, sizeof *c);
    if (anchor < 0 || sf_cg_tune("row_combine", 1) == 0) return false;
    const sf_node *sn = &f->nodes[anchor];
    if (sn->op != SF_OP_sum || sn->nin != 1 || sn->a.nlist != 1 || sn->a.list[0] != 1) return false;
    const sf_value *x = &f->values[sn->in[0]], *y = &f->values[sn->out[0]];
    if (x->ndim != 3 || y->ndim != 2 || !is_float(y->dtype)) return false;
    int64_t T = x->shape[0], K = x->shape[1], H = x->shape[2];
    if (K < 1 || K > 8 || T < 1 || H < 1) return false;
    /* the product with one weight per (t, j) */
    const sf_node *mn = producer(f, sn->in[0]);
    if (!mn || mn->op != SF_OP_mul || !g->in_seg[f->values[sn->in[0]].producer] || !is_float(x->dtype) ||
        readers(g, sn->in[0]) != 1 || g->pl->vkind[sn->in[0]] == SF_CUV_BUFFER)
        return false;
    int gq = -1;
    for (int q = 0; q < 2; q++) {
        const sf_node *p = producer(f, mn->in[q]);
        if (p && p->op == SF_OP_take_along_dim && g->in_seg[f->values[mn->in[q]].producer]) gq = q;
    }
    if (gq < 0 || mn->in[0] == mn->in[1]) return false;
    int32_t gv = mn->in[gq], wv = mn->in[1 - gq];
    const sf_value *w = &f->values[wv];
    if (readers(g, gv) != 1 || w->ndim != 3 || w->shape[0] != T || w->shape[1] != K || w->shape[2] != 1 ||
        !is_float(w->dtype) || from_segment(g, wv))
        return false;
    int wk = g->pl->vkind[wv];
    if (wk != SF_CUV_INPUT && wk != SF_CUV_BUFFER && wk != SF_CUV_VIEW) return false;
    /* G = take_along_dim(P viewed as [N, 1, H], I viewed as [T, K, 1], dim=0) */
    const sf_node *tn = producer(f, gv);
    const sf_value *xv = &f->values[tn->in[0]], *iv = &f->values[tn->in[1]];
    if (!tn->a.has_dim || tn->a.dim != 0 || xv->ndim != 3 || xv->shape[1] != 1 || xv->shape[2] != H ||
        iv->ndim != 3 || iv->shape[0] != T || iv->shape[1] != K || iv->shape[2] != 1 ||
        from_segment(g, tn->in[1]))
        return false;
    int ik = g->pl->vkind[tn->in[1]];
    if (ik != SF_CUV_INPUT && ik != SF_CUV_BUFFER && ik != SF_CUV_VIEW) return false;
    int32_t pv = unreshape(f, tn->in[0]);
    const sf_value *p = &f->values[pv];
    int64_t N = xv->shape[0];
    if (p->ndim != 2 || p->shape[0] != N || p->shape[1] != H || !in_range(f, tn->in[1], N)) return false;
    c->sum = anchor;
    c->mul = f->values[sn->in[0]].producer;
    c->take = f->values[gv].producer;
    c->w = wv;
    c->iv = tn->in[1];
    c->T = T;
    c->K = K;
    c->H = H;
    c->sel = -1;
    c->j = -1;
    c->p = -1;
    c->nmid = N;
    const sf_node *pn = producer(f, pv);
    if (pn && g->in_seg[f->values[pv].producer]) {
        /* P = index_select(X, 0, J) of the segment: rows J[I] of X */
        if (pn->op != SF_OP_index_select || pn->a.dim != 0) return false;
        const sf_value *X = &f->values[pn->in[0]], *J = &f->values[pn->in[1]];
        if (X->ndim != 2 || X->shape[1] != H || J->ndim != 1 || J->shape[0] != N ||
            from_segment(g, pn->in[0]) || from_segment(g, pn->in[1]) || !in_range(f, pn->in[1], X->shape[0]))
            return false;
        c->sel = f->values[pv].producer;
        c->src = pn->in[0];
        c->j = pn->in[1];
        c->nsrc = X->shape[0];
        c->jdiv = direct_rows(f, unreshape(f, tn->in[1]), pn->in[1], N);
        /* lazy: P stored, read only here, and I (through reshapes) a permutation of [0, N) */
        if (g->pl->vkind[pv] == SF_CUV_BUFFER) {
            int32_t ib = unreshape(f, tn->in[1]);
            int ip = f->values[ib].producer;
            if (ip < 0 || !sf_cg_is_perm_sort(f, ip) || f->values[ib].ndim != 1 || f->values[ib].shape[0] != N ||
                N != T * K)
                return false;
            for (int i = 0; i < f->nnodes; i++) { /* its only reader in the segment: the view G reads */
                if (!g->in_seg[i] || i == c->take) continue;
                for (int q = 0; q < f->nodes[i].nin; q++)
                    if (unreshape(f, f->nodes[i].in[q]) == pv) return false;
            }
            c->p = pv;
        }
    } else {
        c->src = pv;
        c->nsrc = N;
    }
    const sf_value *s = &f->values[c->src];
    if (!is_float(s->dtype) || s->dtype != f->values[gv].dtype || s->dtype == SCANFUSE_FLOAT64) return false;
    /* 16-byte vectors a lane; tuning comb_vec=8: 8-byte ones (an experiment) */
    c->E = (sf_cg_tune("comb_vec", 16) == 8 ? 8 : 16) / (int)scanfuse_dtype_size(s->dtype);
    if (H % c->E != 0) return false;
    c->U = 1;
    for (int u = 4; u > 1 && c->U == 1; u /= 2)
        if (u * K <= 4 && (H / c->E) % u == 0) c->U = u;
    return true;
}

scanfuse_status sf_cg_combine_emit(sf_cg *g, sf_cuda_kernel *k, const char *io, const sf_cg_combine *c,
                                   const char *elem, scanfuse_dtype cdt, char *msg, size_t msglen) {
    const scanfuse_fusion *f = g->f;
    sf_buf *src = g->src;
    int ki = (int)(k - g->pl->k);
    int oS = sf_cg_operand(k, c->src, SF_CUOP_OWN, 0, false);
    int oI = sf_cg_operand(k, c->iv, SF_CUOP_OWN, 0, false);
    int oW = sf_cg_operand(k, c->w, SF_CUOP_OWN, 0, false);
    int oJ = c->j >= 0 ? sf_cg_operand(k, c->j, SF_CUOP_OWN, 0, false) : 0;
    int oP = c->p >= 0 ? sf_cg_operand(k, c->p, SF_CUOP_OWN, 0, true) : 0;
    if (oS < 0 || oI < 0 || oW < 0 || oJ < 0 || oP < 0) {
        sf_msg(msg, msglen, "cuda: a kernel needs more than %d operands", SF_CUDA_MAXOPS);
        return SCANFUSE_ERROR_UNSUPPORTED;
    }
    if (!strstr(src->data ? src->data : "", "sf_row_combine(const sf_args"))
        for (int i = 0; combine_prelude[i]; i++) {
            sf_buf_puts(src, combine_prelude[i]);
            sf_buf_puts(src, "\n");
        }
    scanfuse_dtype sdt = f->values[c->src].dtype, mdt = f->values[f->nodes[c->mul].out[0]].dtype;
    const sf_value *iv = &f->values[c->iv], *wv = &f->values[c->w];
    sf_buf_printf(src, "struct Cb_k%d {\ntypedef %s R;\n", ki, sf_cg_rawtype(sdt));
    sf_buf_printf(src, "static __device__ __forceinline__ double cv(R x) { return sf_cv_%s(x); }\n",
                  sf_cg_sfx(sdt));
    sf_buf_printf(src,
                  "static __device__ __forceinline__ i64 idx(const sf_args& a, i64 t, i64 j) "
                  "{ return sf_ld_%s(a.ptr[%d], t * a.st[%d][0] + j * a.st[%d][1]); }\n",
                  sf_cg_sfx(iv->dtype), oI, oI, oI);
    if (c->j >= 0)
        sf_buf_printf(src,
                      "static __device__ __forceinline__ i64 row(const sf_args& a, i64 m) "
                      "{ return sf_ld_%s(a.ptr[%d], m * a.st[%d][0]); }\n",
                      sf_cg_sfx(f->values[c->j].dtype), oJ, oJ);
    else
        sf_buf_puts(src, "static __device__ __forceinline__ i64 row(const sf_args& a, i64 m) "
                         "{ (void)a; return m; }\n");
    /* DIRECT: slot j of row t reads source row rowd(t, j) (direct_rows) */
    sf_buf_printf(src, "static const bool DIRECT = %s;\n", c->jdiv > 0 ? "true" : "false");
    /* ONE: d = K, every slot of row t reads row t itself (the MoE routing) */
    sf_buf_printf(src, "static const bool ONE = %s;\n", c->jdiv > 0 && c->jdiv == c->K ? "true" : "false");
    sf_buf_printf(src, "static __device__ __forceinline__ i64 rowd(i64 t, i64 j) { return (t * %lldll + j) / %lldll; }\n",
                  (long long)c->K, (long long)(c->jdiv > 0 ? c->jdiv : 1));
    sf_buf_printf(src,
                  "static __device__ __forceinline__ double wt(const sf_args& a, i64 t, i64 j) "
                  "{ return sf_ld_%s(a.ptr[%d], t * a.st[%d][0] + j * a.st[%d][1]); }\n",
                  sf_cg_sfx(wv->dtype), oW, oW, oW);
    /* val: the product as the mul node rounds it, converted as the reduction's ld
     * converts its input; elem: the reduction's element of it */
    sf_buf_printf(src, "static __device__ __forceinline__ %s val(double g, double w) {\n", sf_cg_ctype(cdt));
    if (mdt == SCANFUSE_FLOAT64) sf_buf_puts(src, "const double p = g * w;\n");
    else sf_buf_printf(src, "const double p = sf_r_%s(g * w);\n", sf_cg_sfx(mdt));
    sf_buf_puts(src, "return ");
    sf_cg_conv(src, mdt, cdt, "p");
    sf_buf_puts(src, ";\n}\n");
    sf_buf_printf(src,
                  "static __device__ __forceinline__ %s::T elem(double g, double w) {\n"
                  "const %s x = val(g, w);\nreturn %s;\n}\n",
                  io, sf_cg_ctype(cdt), elem);
    /* EXACT: the double-double sum of K products of at most 24 significant bits (a
     * float32, bfloat16 or float16 product, converted to a float sum type) is their plain
     * double sum when their exponents lie within 26 of each other: every partial sum
     * is then a multiple of the smallest one's last bit below 2^53 of it, so exact, and
     * the double-double sum is (that, 0) bit for bit.  The kernel checks the exponents
     * per element and takes the double-double loop otherwise (the same bits either way,
     * about a tenth of the float64 additions). */
    bool exact = strcmp(elem, "sf_dd_make(x)") == 0 && sf_dtype_is_float(cdt) &&
                 (mdt == SCANFUSE_FLOAT32 || mdt == SCANFUSE_BFLOAT16 || mdt == SCANFUSE_FLOAT16) &&
                 (cdt == SCANFUSE_FLOAT64 || scanfuse_dtype_size(cdt) >= scanfuse_dtype_size(mdt));
    sf_buf_printf(src, "static const bool EXACT = %s;\n", exact ? "true" : "false");
    if (exact)
        sf_buf_printf(src, "static __device__ __forceinline__ %s::T exact(double s) { return sf_dd_make(s); }\n};\n", io);
    else
        sf_buf_printf(src, "static __device__ __forceinline__ %s::T exact(double s) { (void)s; return %s::Op::id(); }\n};\n",
                      io, io);
    /* the vector store of the results: one output operand written by Io::st (the
     * reduction's space-1 operands), E of its elements 8, 16 or 32 bytes */
    int oY = -1, nout = 0, ob = 0;
    for (int q = 0; q < k->nops; q++)
        if (k->ops[q].out && k->ops[q].space == 1 && k->ops[q].mode == SF_CUOP_ITER) {
            oY = q;
            nout++;
        }
    if (nout == 1) {
        ob = (int)scanfuse_dtype_size(f->values[k->ops[oY].value].dtype);
        if (c->E * ob != 8 && c->E * ob != 16 && c->E * ob != 32) ob = 0;
    }
    /* the float32 epilogue (sf_row_combine_f32) when the stored value is the float32 sum
     * itself or a cast of it to float32, bfloat16 or float16, from float32 products of
     * operands exact in float32 (tuning comb_f32=0: the generic epilogue) */
    scanfuse_dtype odt = ob > 0 ? f->values[k->ops[oY].value].dtype : SCANFUSE_FLOAT64;
    int32_t yv = f->nodes[c->sum].out[0], zv = ob > 0 ? k->ops[oY].value : -1;
    const sf_node *zn = zv >= 0 ? producer(f, zv) : NULL;
    bool f32 = ob > 0 && sf_cg_tune("comb_f32", 1) != 0 && mdt == SCANFUSE_FLOAT32 &&
               cdt == SCANFUSE_FLOAT32 && f->values[yv].dtype == SCANFUSE_FLOAT32 &&
               strcmp(elem, "sf_dd_make(x)") == 0 && sdt != SCANFUSE_FLOAT64 && wv->dtype != SCANFUSE_FLOAT64 &&
               (zv == yv || (zn && zn->op == SF_OP_cast && zn->in[0] == yv)) &&
               (odt == SCANFUSE_FLOAT32 || odt == SCANFUSE_BFLOAT16 || odt == SCANFUSE_FLOAT16);
    /* (F32 implies EXACT: its elements stored through Io::st take Cb::exact's value) */
    SF_ASSERT(!f32 || exact);
    sf_buf_printf(src, "struct Cb32_k%d {\nstatic const bool F32 = %s;\ntypedef %s O;\n", ki,
                  f32 ? "true" : "false", f32 ? sf_cg_rawtype(odt) : "u16");
    const char *raw = sf_cg_rawtype(sdt);
    if (sdt == SCANFUSE_BFLOAT16)
        sf_buf_printf(src, "static __device__ __forceinline__ float cv32(%s x) { return __uint_as_float((u32)x << 16); }\n",
                      raw);
    else if (sdt == SCANFUSE_FLOAT16)
        sf_buf_printf(src,
                      "static __device__ __forceinline__ float cv32(%s x) "
                      "{ float r; asm(\"cvt.f32.f16 %%0, %%1;\" : \"=f\"(r) : \"h\"(x)); return r; }\n",
                      raw);
    else
        sf_buf_printf(src, "static __device__ __forceinline__ float cv32(%s x) { return (float)x; }\n", raw);
    const char *out32 = !f32 ? "(void)f; return 0;"
                        : odt == SCANFUSE_BFLOAT16 ? "return sf_f32_bf16(f);"
                        : odt == SCANFUSE_FLOAT16  ? "return sf_f32_f16(f);"
                                                   : "return f;";
    sf_buf_printf(src, "static __device__ __forceinline__ O out32(float f) { %s }\n};\n", out32);
    sf_buf_printf(src, "struct Cbx_k%d : Cb_k%d, Cb32_k%d {};\n", ki, ki, ki);
    if (oY < 0) oY = 0;
    int64_t vr = c->H / c->E, seg = (vr + 32 * c->U - 1) / (32 * c->U);
    int64_t threads = c->T * seg * 32;
    /* at least 3 blocks of 256 an SM for k >= 4 (k = 8 takes ~124 registers, 2 blocks;
     * 3 spill 128 bytes and DeepSeek's example ran 381.7 -> 364.4 µs, NOTES); tuning
     * comb_minb=B */
    int minb = sf_cg_tune("comb_minb", c->K >= 4 ? 3 : 0);
    /* a warp an item (one row segment) by default; comb_grid=B (an experiment): at most
     * B blocks, so each warp takes several items and loads the next item's index chain
     * while this item's vectors are in flight */
    int64_t blocks = (threads + 255) / 256;
    int cap = sf_cg_tune("comb_grid", 0);
    if (cap > 0 && blocks > cap) blocks = cap;
    k->grid = sf_cg_grid(blocks);
    char lb[32] = "256";
    if (minb > 0 && minb <= 8) snprintf(lb, sizeof lb, "256, %d", minb);
    /* PRE: the source rows known without loads from a program input (which no kernel of
     * the run writes: outputs that overlap an input are staged): the first vectors load
     * before the kernel waits for the routing (SF_OWN_PDL: the launcher's PDL wait is
     * the kernel's own; tuning comb_pre=0: at its start, as every kernel's) */
    bool pre = c->jdiv > 0 && c->jdiv == c->K && g->pl->vkind[c->src] == SF_CUV_INPUT && cap == 0 &&
               sf_cg_tune("comb_pre", 1) != 0;
    sf_buf_printf(src,
                  "extern \"C\" __global__ void __launch_bounds__(%s) k%d(const sf_args a) {\n%s"
                  "sf_row_combine<%s::Op, %s, Cbx_k%d, %d, %d, %d, %s, %d%s>(a, %lldll, %lldll, %lldll, %lldll, %d, %d, %d);\n}\n\n",
                  lb, ki, pre ? SF_OWN_PDL "\n" : "", io, io, ki, c->E, (int)c->K, c->U, c->p >= 0 ? "true" : "false",
                  ob, pre ? ", true" : "", (long long)c->T, (long long)c->H, (long long)c->nsrc, (long long)c->nmid,
                  oS, oP, oY);
    return SCANFUSE_OK;
}
