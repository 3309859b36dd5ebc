#!/bin/bash
# tools/cuda_emu/elementwise.sh — the element-wise kernels' generated CUDA C
# (cuda_codegen.c: emit_elem_kernel, its batches of elem_u elements a thread) run on the
# CPU (run.sh with EMU_ELEM=1: the first element-wise kernel of each program, as a grid of
# one block whose threads then take every element) against the reference evaluator, bit
# for bit: pointwise chains of every dtype family, broadcast operands (the strided path at
# run time; the emulator lays every buffer out contiguous, so views are not modelled:
# noflags 1 below takes the strided path instead), gathers fused into the chain, several
# outputs, integer division by zero (its error slot), sizes that end mid-batch and ones
# under a block; special values (ties 1) and the strided path for every operand (noflags
# 1: a batched kernel's launch with a strided operand takes its one-element loop); one
# element a step (the default at these sizes) and batches of 3, 5, 8 and 16.
# No GPU needed: a CTest (cuda_emu_elementwise) when g++ is there.  BUILD (default:
# build) holds libscanfuse.a.  Exit status: the failures.
HERE=$(cd "$(dirname "$0")" && pwd)
EMU_KIND=EMU_ELEM
. "$HERE/lib.sh"
prog f32bc 'input x: float32[37, 3001]\ninput w: float32[3001]\ny = add(mul(x, w), 1.5)\noutput y\n'
prog exp 'input x: float32[100003]\ny = exp(x)\noutput y\n'
prog b16 'input x: bfloat16[7, 1001]\ninput s: float16[1001]\ny = cast(sigmoid(mul(cast(x, float32), cast(s, float32))), bfloat16)\nz = tanh(cast(s, float64))\noutput y, z\n'
prog f64 'input x: float64[3, 5, 333]\ninput w: float64[5, 1]\ny = div(sub(x, w), maximum(abs(w), 0.5))\noutput y\n'
prog ints 'input a: int32[9000]\ninput b: int8[9000]\ny = floor_divide(a, add(cast(b, int32), 3))\nz = remainder(cast(a, int64), 7)\noutput y, z\n'
prog div0 'input a: int64[5000]\ninput b: int64[5000]\ny = floor_divide(a, b)\noutput y\n'
prog sel 'input x: float32[2000]\ninput c: bool[2000]\ny = where(logical_and(c, gt(x, 0.0)), x, neg(x))\nm = logical_or(isnan(x), c)\noutput y, m\n'
prog gat 'input x: float32[500, 16]\ninput i: int64[700]\ny = add(index_select(x, 0, i), 1.0)\noutput y\n'
prog tiny 'input x: float32[5, 7]\ny = sqrt(abs(x))\noutput y\n'
prog ar 'input x: float32[4099]\ny = mul(x, arange(0, 4099, dtype=float32))\noutput y\n'
# (these sizes are under the GPU's 270336 threads, so by default one element a step:
# elem_u sets the batches)
for p in f32bc exp b16 f64 ints sel tiny ar; do
    for tune in pdl=1 elem_u=3 elem_u=8 elem_u=16; do emu $p $tune; done
    emu $p elem_u=8 0 1 0 0   # special values (NaN, infinities, signed zeros)
    emu $p elem_u=8 0 0 0 1   # strided: the one-element loop of a batched kernel
done
# past the threshold: batches by default (2 here)
prog big 'input x: bfloat16[600001]\ninput w: float32[600001]\ny = mul(cast(x, float32), w)\noutput y\n'
emu big pdl=1
emu big pdl=1 0 0 0 1
# division by zero (integers in -20..20: the kernel must set its error slot), a gather's
# indices in range (irange 500; out of range, a check kernel of its own reports them)
for tune in pdl=1 elem_u=5 elem_u=16; do
    emu div0 $tune
    emu gat $tune 500 0 0 0
    emu gat $tune 500 0 0 1
done
emu_report "cuda_emu elementwise"
