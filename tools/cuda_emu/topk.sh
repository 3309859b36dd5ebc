#!/bin/bash
# tools/cuda_emu/topk.sh — the warp topk of a small kernel's first phase (run.sh: the
# small kernel on the CPU, one block, against the reference evaluator, bit for bit) for
# every key dtype it sorts, largest and smallest: the packed items (sf_topk_packed;
# 32-bit words for bfloat16, float16, int8, uint8 and int16 keys, 64-bit for float32
# and int32) and float64's compare path (sf_topk_warps); float keys from {-2, -0, 0,
# 1.5, 3, NaN, inf, -inf} (ties, signed zeros, NaN above every number; 16 of 40 a row,
# so the smallest reach the zeros), integer keys
# from -20..20.  No GPU needed: a CTest (cuda_emu_topk) when g++ is there.  BUILD
# (default: build) holds libscanfuse.a.  Exit status: the failures.
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d "${TMPDIR:-/tmp}/sf_emu_topk.XXXXXX")
export TMPDIR=$D # run.sh's own directories go with it
trap 'rm -rf "$D"' EXIT
fail=0
n=0
for dt in bfloat16 float16 float32 float64 int8 uint8 int16 int32; do
    case $dt in float*|bfloat*) ties=1 ;; *) ties=0 ;; esac
    for lg in true false; do
        n=$((n + 1))
        printf 'input x: %s[60, 40]\nv, e = topk(x, 16, dim=1, largest=%s)\npairs = reshape(e, [960])\ncounts = bincount(pairs, minlength=40)\nperm = argsort(pairs, stable=true)\noutput v, e, counts, perm\n' \
            $dt $lg > "$D/t.sf"
        if ! out=$("$HERE/run.sh" "$D/t.sf" 0 $ties $n 2>&1); then
            echo "FAIL $dt largest=$lg:"; echo "$out" | tail -5; fail=$((fail + 1))
        fi
    done
done
echo "cuda_emu topk: $n runs, $fail failed"
exit $fail
