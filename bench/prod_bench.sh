#!/bin/bash
# prod_bench.sh — float cumprod and prod, cummax, the other reductions and pointwise
# kernels through `scanfuse bench`, each case timed (median of --repeat, every run waited for) against a
# copy of the same bytes in the same process (column "ratio"), for one or two builds side
# by side: the products' state is a double and a carried power of two (sf_prodx, 16
# bytes on the GPU) since session 34, so this measures what that costs against a build
# from before it.  bench/torch_prod_ref.py times PyTorch on the same cases.
#   bench/prod_bench.sh DEVICE BIN [OLD_BIN]     (DEVICE: cpu or cuda)
# SCANFUSE_CUDA_TUNE applies to both builds and is recorded ("tune"); CASES=REGEX runs
# only the cases it matches.
# JSON lines: $OUT/prod_bench.jsonl (the CLI's --json object plus "case", "build", "tune").
set -uo pipefail
cd "$(dirname "$0")/.."
DEV=${1:?usage: bench/prod_bench.sh DEVICE BIN [OLD_BIN]}
NEW=${2:?usage: bench/prod_bench.sh DEVICE BIN [OLD_BIN]}
OLD=${3:-}
OUT=${OUT:-$PWD/gpu_out}
REPEAT=${REPEAT:-20}
mkdir -p "$OUT"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
big=67108864; side=4096
[ "$DEV" = cpu ] && { big=16777216; side=2048; }
case_() { # label body
    printf '%b' "$2" > "$D/$1.sf"
}
case_ cumprod_1d_f32 "input x: float32[$big]\ny = cumprod(x, dim=0)\noutput y\n"
case_ cumprod_1d_bf16 "input x: bfloat16[$big]\ny = cumprod(x, dim=0)\noutput y\n"
# decays near 1 (linear attention): the product stays within double's window, so its
# power of two stays 0 (the random inputs above, in [-1, 1), make it 0 in the output
# after a few hundred steps)
case_ cumprod_1d_f32_near1 "input x: float32[$big]\ny = cumprod(add(mul(x, 0.001), 1.0), dim=0)\noutput y\n"
case_ cumprod_1d_f64 "input x: float64[$big]\ny = cumprod(x, dim=0)\noutput y\n"
case_ cumprod_sq_f32_d0 "input x: float32[$side, $side]\ny = cumprod(x, dim=0)\noutput y\n"
case_ cumprod_sq_f32_d1 "input x: float32[$side, $side]\ny = cumprod(x, dim=1)\noutput y\n"
case_ cumprod_2048x128_f32_d0 "input x: float32[2048, 128]\ny = cumprod(x, dim=0)\noutput y\n"
# cummax: a value and an index, whose arithmetic is a compare: float64 keeps a 16-byte
# state (what the scan skeletons cost with states of that size), float32 and int32 an
# 8-byte one since session 35
case_ cummax_1d_f32 "input x: float32[$big]\ny, i = cummax(x, dim=0)\noutput y, i\n"
case_ cummax_1d_f64 "input x: float64[$big]\ny, i = cummax(x, dim=0)\noutput y, i\n"
case_ cummin_1d_i32 "input x: int32[$big]\ny, i = cummin(x, dim=0)\noutput y, i\n"
case_ cummax_sq_f32_d0 "input x: float32[$side, $side]\ny, i = cummax(x, dim=0)\noutput y, i\n"
case_ cummax_sq_f32_d1 "input x: float32[$side, $side]\ny, i = cummax(x, dim=1)\noutput y, i\n"
case_ cummax_sq_f64_d0 "input x: float64[$side, $side]\ny, i = cummax(x, dim=0)\noutput y, i\n"
case_ prod_sq_f32_d0 "input x: float32[$side, $side]\ny = prod(x, dim=0)\noutput y\n"
case_ prod_sq_f32_d1 "input x: float32[$side, $side]\ny = prod(x, dim=1)\noutput y\n"
# the other reductions (session 37: never timed on the GPU before): a float32 sum is
# summed in double, bfloat16 in float32 widened (DESIGN.md's accumulation policy), max a
# compare, argmax a value and an index; over the rows (dim 1), down the columns (dim 0)
# and over one long vector; [2048, 128] the size of a top-k combine's sums
case_ sum_1d_f32 "input x: float32[$big]\ny = sum(x)\noutput y\n"
case_ sum_sq_f32_d0 "input x: float32[$side, $side]\ny = sum(x, dim=0)\noutput y\n"
case_ sum_sq_f32_d1 "input x: float32[$side, $side]\ny = sum(x, dim=1)\noutput y\n"
case_ sum_sq_bf16_d0 "input x: bfloat16[$side, $side]\ny = sum(x, dim=0)\noutput y\n"
case_ sum_sq_bf16_d1 "input x: bfloat16[$side, $side]\ny = sum(x, dim=1)\noutput y\n"
case_ sum_2048x128_f32_d0 "input x: float32[2048, 128]\ny = sum(x, dim=0)\noutput y\n"
case_ sum_2048x128_f32_d1 "input x: float32[2048, 128]\ny = sum(x, dim=1)\noutput y\n"
case_ max_sq_f32_d0 "input x: float32[$side, $side]\ny = max(x, dim=0)\noutput y\n"
case_ max_sq_f32_d1 "input x: float32[$side, $side]\ny = max(x, dim=1)\noutput y\n"
case_ mean_sq_bf16_d1 "input x: bfloat16[$side, $side]\ny = mean(x, dim=1)\noutput y\n"
case_ argmax_sq_f32_d1 "input x: float32[$side, $side]\ny = argmax(x, dim=1)\noutput y\n"
case_ sum_sq_i32_d1 "input x: int32[$side, $side]\ny = sum(x, dim=1)\noutput y\n"
# pointwise kernels (session 37: batches of elements a thread, elem_u): contiguous
# operands, a broadcast weight (the strided path), a 16-bit cast chain, int64
case_ pw_exp_1d_f32 "input x: float32[$big]\ny = exp(x)\noutput y\n"
case_ pw_silu_1d_f32 "input x: float32[$big]\ny = silu(x)\noutput y\n"
case_ pw_sigmoid_1d_bf16 "input x: bfloat16[$big]\ny = sigmoid(x)\noutput y\n"
case_ pw_muladd_f32 "input x: float32[$side, $side]\ninput w: float32[$side, $side]\ny = add(mul(x, w), 1.5)\noutput y\n"
case_ pw_muladd_bc_f32 "input x: float32[$side, $side]\ninput w: float32[$side]\ny = add(mul(x, w), 1.5)\noutput y\n"
case_ pw_cast_bf16 "input x: bfloat16[$big]\ny = cast(mul(cast(x, float32), 2.0), bfloat16)\noutput y\n"
case_ pw_add_1d_i64 "input x: int64[$big]\ny = add(x, 3)\noutput y\n"
# WRITE_CASES=DIR: only write the cases' fusion files there (bench/warm_cache.sh)
if [ -n "${WRITE_CASES:-}" ]; then
    mkdir -p "$WRITE_CASES" && cp "$D"/*.sf "$WRITE_CASES"/
    exit 0
fi
TUNE=${SCANFUSE_CUDA_TUNE:-}
[[ "" =~ ${CASES:-.} ]]
[ $? -eq 2 ] && { echo "prod_bench.sh: CASES='$CASES' is not a regular expression" >&2; exit 2; }
printf '%-26s %-5s %-22s %12s %8s\n' case build tune "time (us)" ratio
for f in "$D"/*.sf; do
    c=$(basename "$f" .sf)
    [[ "$c" =~ ${CASES:-.} ]] || continue
    for b in new old; do
        bin=$NEW; [ $b = old ] && bin=$OLD
        [ -n "$bin" ] || continue
        line=$(timeout 120 "$bin" bench "$f" --device "$DEV" --repeat "$REPEAT" --json 2>&1 | tail -1)
        case "$line" in
            \{*) echo "{\"case\": \"$c\", \"build\": \"$b\", \"tune\": \"$TUNE\", ${line#\{}" >> "$OUT/prod_bench.jsonl"
                 python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%-26s %-5s %-22s %12.1f %8.3f" % (sys.argv[2], sys.argv[3], sys.argv[4], d["seconds"]*1e6, d["ratio"]))' \
                     "$line" "$c" "$b" "$TUNE" ;;
            *) echo "$c $b: $line" ;;
        esac
    done
done
