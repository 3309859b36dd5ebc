#!/bin/bash
# tools/cuda_emu/parts.sh — SMALL kernels that are parts of a larger small segment
# (cuda_small.c, sf_cg_small_parts: the MoE routing at DeepSeek-like sizes, whose
# counting sort of more than 4096 pairs runs as its own split kernels): each part run on
# the CPU emulator (run.sh, EMU_NTH=n: the n-th SMALL kernel; what earlier kernels wrote
# comes from the reference), against the reference evaluator, bit for bit.  The routing
# with 1024 and 4096 tokens, 64 and 256 experts, k = 8; the leading topk as a phase (the
# emulator's default) and as the grid pre-kernel (small_topk_grid=16384: the first part
# then reads the pre-kernel's output from the reference); and a second part, after a split
# sort, reading what a grid kernel wrote.  No GPU needed: a CTest
# (cuda_emu_parts) when g++ is there.  BUILD (default: build) holds libscanfuse.a.
# Exit status: the failures.
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d "${TMPDIR:-/tmp}/sf_emu_parts.XXXXXX")
export TMPDIR=$D # run.sh's own directories go with it
trap 'rm -rf "$D"' EXIT
fail=0
n=0
run() { # program nth tune ties label
    n=$((n + 1))
    if ! out=$(EMU_NTH=$2 SCANFUSE_CUDA_TUNE=$3 "$HERE/run.sh" "$1" 0 "$4" $n 2>&1) ||
        ! echo "$out" | grep -q "elements, 0 differ"; then
        echo "FAIL $5:"; echo "$out" | tail -5; fail=$((fail + 1))
    fi
}
for te in "1024 64" "4096 256"; do
    set -- $te
    printf 'input logits: bfloat16[%d, %d]\ntop, expert = topk(logits, 8, dim=1)\nscore = sigmoid(cast(top, float32))\npairs = reshape(expert, [%d])\ncounts = bincount(pairs, minlength=%d)\noffsets = cumsum(counts, dim=0, dtype=int32)\nstarts = pad(offsets, [1, 0])\naligned = cumsum(mul(floor_divide(add(counts, 127), 128), 128), dim=0, exclusive=true)\nperm = argsort(pairs, stable=true)\ninverse = argsort(perm, stable=true)\ntoken = floor_divide(perm, 8)\noutput top, expert, score, counts, offsets, starts, aligned, perm, inverse, token\n' \
        $1 $2 $(($1 * 8)) $2 > "$D/r.sf"
    for ties in 0 1; do
        run "$D/r.sf" 1 small_topk_grid=0 $ties "T=$1 E=$2 part 1, topk a phase, ties=$ties"
        run "$D/r.sf" 1 small_topk_grid=16384 $ties "T=$1 E=$2 part 1 after the topk pre-kernel, ties=$ties"
    done
done
# a part after the split sort's kernels and a grid kernel, reading what they wrote
printf 'input ids: int64[8192]\nc1 = bincount(ids, minlength=64)\no1 = cumsum(c1, dim=0)\nperm = argsort(ids, range=64, stable=true)\nq = floor_divide(perm, 128)\nc2 = bincount(q, minlength=64)\no2 = cumsum(c2, dim=0)\noutput o1, perm, q, o2\n' > "$D/s.sf"
for nth in 1 2; do
    n=$((n + 1))
    if ! out=$(EMU_NTH=$nth "$HERE/run.sh" "$D/s.sf" 64 0 $n 2>&1) || ! echo "$out" | grep -q "elements, 0 differ"; then
        echo "FAIL ids part $nth:"; echo "$out" | tail -5; fail=$((fail + 1))
    fi
done
echo "cuda_emu parts: $n runs, $fail failed"
exit $fail
