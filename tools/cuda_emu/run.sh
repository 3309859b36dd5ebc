#!/bin/bash
# tools/cuda_emu/run.sh — runs the first small-segment kernel (cuda_small.c) of a fusion
# program on the CPU, one CUDA block of 1024 threads emulated by fibers (shim.h), and
# compares the segment's outputs with the reference evaluator's, bit for bit.  No GPU
# needed: it executes the generated CUDA C (NVRTC-free: g++ with the shim), so the block
# templates, barriers, warp exchanges and the parameter packing are exercised here.
#   tools/cuda_emu/run.sh PROGRAM [irange] [ties] [seed] [noflags]
#     irange: integer inputs in [0, irange) (0: -20..20); ties=1: float inputs from
#     {-2, -0, 0, 1.5, 3, NaN, inf, -inf}, ties=2: float inputs drawn as the integers are
#     (sums exact in double); noflags=1: every operand takes the strided path.
# BUILD (default: build) holds libscanfuse.a.  Exit status 0: outputs identical (or the
# reference failed and the error slots are printed).  EMU_SCAN=1: the first row or column scan
# kernel instead, as a grid of one block (scans.sh runs a set of them under tunings).
# EMU_RED=1: the first reduction kernel instead, then the kernel that combines its splits
# (if any), each as a grid of one block (reductions.sh).  EMU_ELEM=1: the first
# element-wise kernel of a segment, as a grid of one block (elementwise.sh).
# EMU_OUT=DIR: the outputs also written to DIR/v<id>.out (A/B runs of two builds).
# EMU_MAG=1: float64 outputs within 2^-40 of their sum|x| (the reference run on |x|)
# count as equal: float64 sums are summed in double (sum programs only).
# EMU_OPT: g++'s optimisation level for the harness (default -O0).
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
# the emulator runs the small kernel alone: a leading topk stays one of its phases
export SCANFUSE_CUDA_TUNE=${SCANFUSE_CUDA_TUNE:-small_topk_grid=0}
D=$(mktemp -d "${TMPDIR:-/tmp}/sf_cuda_emu.XXXXXX")
# EMU_CACHE=DIR (lib.sh sets one a script): gen built once, and each harness binary kept
# under the hash of what it is compiled from, for the runs that differ only in their
# inputs (a binary is written under a temporary name and renamed: runs in parallel)
GEN=$D/gen
if [ -n "${EMU_CACHE:-}" ]; then
    mkdir -p "$EMU_CACHE"
    GEN=$EMU_CACHE/gen
fi
if [ ! -x "$GEN" ]; then
    gcc -O1 -std=c11 -I"$ROOT/src" -I"$ROOT/include" "$HERE/gen.c" "$BUILD/libscanfuse.a" -lm -ldl -lpthread -o "$D/gen"
    [ "$GEN" = "$D/gen" ] || mv -f "$D/gen" "$GEN"
fi
"$GEN" "$1" "$D" "${2:-0}" "${3:-0}" "${4:-1}"
"$HERE/xform.sh" "$D/src.cu" > "$D/kernel.inc"
# -O0: since the fibers switch without system calls (shim.h), compiling is most of a
# run's time, and -O1 took 0.5 s a kernel against -O0's 0.3 s (session 41).
# -fwrapv: with the row scans' one-path vector loads (session 13), g++ 12 -O1 left the
# second row of a staged, reversed row of 1-, 8- and 4-byte inputs unwritten unless
# signed overflow wraps (-fwrapv, -fno-strict-overflow or -fno-ivopts), though UBSan
# finds no overflow there and clang++ -O1, g++ -O0 and -O2 all compute it right; the
# same program runs on the GPU in test_cuda (bench/NOTES.md, session 13); kept, so that
# EMU_OPT=-O1 (or -O2) builds the harness as that session did
H=$D/h
if [ -n "${EMU_CACHE:-}" ]; then
    H=$EMU_CACHE/h.$( (cat "$D/nt" "$D/kernel.inc" "$D/launch.inc"; echo "${EMU_OPT:-}") | sha1sum | cut -c1-40)
fi
if [ ! -x "$H" ]; then
    g++ -std=c++17 ${EMU_OPT:--O0} -fwrapv -w -DEMU_NT="$(cat "$D/nt")" -I"$HERE" -I"$D" "$HERE/harness.cpp" -o "$D/h"
    [ "$H" = "$D/h" ] || mv -f "$D/h" "$H"
fi
"$H" "$D" "${5:-0}"
