#!/bin/bash
# tools/cuda_emu/reductions.sh — the reduction kernels' generated CUDA C (cuda_reduce.c,
# sf_red_* in cuda_skeletons.c) run on the CPU (run.sh with EMU_RED=1: the first reduction
# kernel of each program, then the kernel that combines its splits, each as a grid of one
# block) against the reference evaluator, bit for bit: a block a row (rows of more than
# 2048, or 4096 for max/min/arg* and 2-byte float sums), a warp a row (shorter rows), a thread per output down the columns (split, then
# combined), long vectors (split across blocks; past 64 splits combined by a block,
# sf_red_finish_block); sums (float sums in double-double, narrow elements added by TwoSum
# within a batch, OpSumDN, rounded once, so equal to the exact reference), products, max, min, argmax, argmin,
# means, integers; special values (ties 1) and the strided path (noflags 1).  Every run is
# taken in batches of U loads (sf_red_run; red_u=1, 3, 5 and the default 8), runs that end
# mid-batch included.  Float products: exact powers of two whose running product leaves
# double's range and comes back, against the reference; and random significands, the
# lazy normalisation (OpProdF, prod_lazy=1, the default for factors of at most 4 bytes)
# against the eager one byte for byte.
# No GPU needed: a CTest (cuda_emu_reductions) when g++ is there.  BUILD (default: build)
# holds libscanfuse.a.  Exit status: the failures.
HERE=$(cd "$(dirname "$0")" && pwd)
EMU_KIND=EMU_RED
. "$HERE/lib.sh"
# sums and means: rows of 3001 (a block a row: 11.7 elements a thread, so a batch and a
# partial one), rows of 1000 (a warp a row), columns of 3001 rows (a thread an output,
# split in 47 runs of 64), one vector of 100003 (split across 13 blocks)
prog srow 'input x: float32[37, 3001]\ny = sum(x, dim=1)\noutput y\n'
prog swarp 'input x: bfloat16[50, 1000]\ny = sum(x, dim=1)\noutput y\n'
prog scol 'input x: float32[3001, 70]\ny = sum(x, dim=0)\noutput y\n'
prog svec 'input x: float32[100003]\ny = sum(x)\noutput y\n'
# (a vector split 123 ways: its splits combined by a block, sf_red_finish_block)
prog svecb 'input x: float32[1000003]\ny = sum(x)\noutput y\n'
prog mvecb 'input x: float64[1000003]\ny = max(x)\noutput y\n'
prog avecb 'input x: bfloat16[1000003]\ny = argmin(x)\noutput y\n'
prog mrow 'input x: float16[29, 4099]\ny = mean(x, dim=1)\noutput y\n'
prog f64col 'input x: float64[1500, 33]\ny = mean(x, dim=0)\noutput y\n'
prog irow 'input x: int32[17, 5003]\ny = sum(x, dim=1)\noutput y\n'
prog icol 'input x: int64[2000, 40]\ny = sum(x, dim=0)\noutput y\n'
# 2-byte columns (a thread an output, split in 47 runs of 64 rows, the last of 57)
prog scolb 'input x: bfloat16[3001, 40]\ny = sum(x, dim=0)\noutput y\n'
# a prologue of two inputs, the reduced dims in the middle of three
prog fused 'input a: bfloat16[8, 700, 12]\ninput w: float32[700, 1]\ny = sum(mul(cast(a, float32), w), dim=1)\noutput y\n'
# max, min, argmax, argmin
prog maxrow 'input x: float32[23, 5001]\ny = max(x, dim=1)\noutput y\n'
prog mincol 'input x: bfloat16[2500, 48]\ny = min(x, dim=0)\noutput y\n'
prog argrow 'input x: float32[23, 3001]\ny = argmax(x, dim=1)\noutput y\n'
prog argcol 'input x: int32[2100, 40]\ny = argmin(x, dim=0)\noutput y\n'
prog argvec 'input x: float16[70001]\ny = argmax(x)\noutput y\n'
# rows of 2049-4096 a warp a row: max/min/argmax/argmin of at most 4 bytes, float sums
# and means of 2-byte elements
prog maxw4 'input x: float32[19, 4096]\ny = max(x, dim=1)\noutput y\n'
prog argw4 'input x: float16[11, 3001]\ny = argmin(x, dim=1)\noutput y\n'
prog sumw4 'input x: bfloat16[13, 3999]\ny = mean(x, dim=1)\noutput y\n'
for p in srow swarp scol scolb svec svecb mvecb avecb mrow f64col irow icol fused maxrow mincol argrow argcol argvec maxw4 argw4 sumw4; do
    for tune in pdl=1 red_u=3; do emu $p $tune; done
    emu $p pdl=1 0 1 0 0   # special values (NaN, infinities, signed zeros)
    emu $p red_u=5 0 0 0 1 # strided
done
for p in srow scol svecb argcol; do emu $p red_u=1; done # one load at a time, as before
# the splits combined by G lanes an output and a fixed tree (red_fin_g=1, an experiment)
for p in scol scolb icol argcol mincol f64col fused; do emu $p red_fin_g=1; done
emu scolb red_fin_g=1 0 1 0 0
emu argcol red_fin_g=1,red_u=3 0 0 0 1
# (a block an output and split, 13 splits of rows of 100000, partials by output)
prog brow 'input x: float32[5, 100000]\ny = sum(x, dim=1)\noutput y\n'
prog browa 'input x: bfloat16[5, 100000]\ny = argmax(x, dim=1)\noutput y\n'
for p in brow browa; do emu $p pdl=1; emu $p red_fin_g=1; done
# float sums of narrow elements add by TwoSum within a batch (OpSumDN, sum_lazy=1, the
# default); sum_lazy=0 is OpSumDD's add an element (the same values rounded once)
for p in srow swarp svecb mrow fused; do emu $p sum_lazy=0; done
# the splits' finish with 8 partials in flight (sf_red_finish_u, the default) and one at
# a time (red_fin_u=1, sf_red_finish)
for p in scol icol argcol; do emu $p red_fin_u=1; done
# products of exact powers of two (any order of the multiplies gives the same bits): the
# running product leaves double's range and comes back; float32 (lazy), float64 (eager)
prog p2row 'input x: int32[11, 6001]\nq = pow(2.0, mul(cast(x, float64), 3.0))\ny = prod(cast(q, float32), dim=1)\noutput y\n'
prog p2col 'input x: int32[3001, 33]\nq = pow(2.0, mul(cast(x, float64), 3.0))\ny = prod(cast(q, float32), dim=0)\noutput y\n'
prog p2vec 'input x: int32[90001]\nq = pow(2.0, mul(cast(x, float64), 3.0))\ny = prod(q)\noutput y\n'
prog p2vecb 'input x: int32[900001]\nq = pow(2.0, mul(cast(x, float64), 3.0))\ny = prod(cast(q, float32))\noutput y\n'
prog p2warp 'input x: int32[40, 1500]\nq = pow(2.0, mul(cast(x, float64), 3.0))\ny = prod(cast(q, bfloat16), dim=1)\noutput y\n'
for p in p2row p2col p2vec p2vecb p2warp; do
    for tune in pdl=1 red_u=1 red_u=5 prod_lazy=0; do emu $p $tune; done
done
# random significands (2^-17.6..2^18.4 a step, or with scale 7 2^-119.6..2^119.4, which
# leave the window in a few steps; a zero and an infinity about once in 28000 steps
# each), lazy against eager byte for byte, in every reduction kernel
lazy() { # name dtype shape dim seed [scale]
    prog "$1" "input x: float32[$3]\ninput k: int32[$3]\nf = mul(add(mul(abs(cast(x, float64)), 0.25), 1.0), pow(2.0, sub(mul(sub(cast(remainder(k, 35), float64), 17.0), ${6:-1.0}), 0.5573)))\ng = div(mul(f, cast(logical_not(logical_and(eq(k, 7), lt(x, -3.0))), float64)), cast(logical_not(logical_and(eq(k, 11), lt(x, -3.0))), float64))\ny = prod(cast(g, $2), dim=$4)\noutput y\n"
    emu_ab "$1" pdl=1 prod_lazy=0 3500 0 "$5"
    emu_ab "$1" red_u=7 prod_lazy=0,red_u=1 3500 0 "$5"
}
lazy lzrow float32 "7, 40001" 1 61
lazy lzwarp float16 "40, 2000" 1 62
lazy lzcol bfloat16 "6001, 33" 0 63
lazy lzvec float32 "200003" 0 64
lazy lzroww float32 "7, 40001" 1 65 7.0
lazy lzcolw float32 "6001, 33" 0 66 7.0
emu_report "cuda_emu reductions"
