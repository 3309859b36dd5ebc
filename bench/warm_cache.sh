#!/bin/bash
# warm_cache.sh — fills the kernel cache for a device call on a machine without a GPU:
# every CUDA kernel of the examples, of gpu_probe_rows.py, of prod_bench.sh and of gpu_cli_bench.sh's cases (with each tuning
# variant named in TUNES / COLTUNES, as that script would run them; prod_bench's
# reduction and pointwise cases under OPS_TUNES too), compiled offline by
# NVRTC for sm_90 (tools/cuda_warm.c), then packed as build-cudacache.tar.xz, which
# bench/gpu_call.sh unpacks on the GPU machine (carry it: it is small, the images
# compress ~25x).  test_cuda's programs: SF_CUDA_TEST_GEN_ONLY=1 build/test_cuda with the
# same SCANFUSE_CACHE_DIR first.  Needs build/libscanfuse.a (cmake --build build).
#   bench/warm_cache.sh            (TUNES="a=1 b=2,c=3" COLTUNES="..." as for gpu_cli_bench,
#                                   PROBE_TUNES="..." for the probe run under a variant)
set -uo pipefail
cd "$(dirname "$0")/.."
export SCANFUSE_CACHE_DIR=$PWD/build-cudacache
W=$(mktemp -d)
gcc -std=c11 -O1 -Isrc -Iinclude tools/cuda_warm.c build/libscanfuse.a -lm -ldl -lpthread -o "$W/warm" || exit 1
OUT="$W/out" WRITE_CASES="$W/cases" bash bench/gpu_cli_bench.sh
python3 bench/gpu_probe_rows.py --write "$W/probe"
WRITE_CASES="$W/prod" bash bench/prod_bench.sh cuda none
"$W/warm" examples/*.sf "$W"/cases/*.sf "$W"/probe/*.sf "$W"/prod/*.sf
for tv in ${TUNES:-}; do
    case "$tv" in
        *@*) cs=${tv#*@}; SCANFUSE_CUDA_TUNE=${tv%%@*} "$W/warm" $(for c in ${cs//+/ }; do echo "$W/cases/$c.sf"; done) ;;
        *) SCANFUSE_CUDA_TUNE=$tv "$W/warm" "$W"/cases/1d_*.sf ;;
    esac
done
for tv in ${COLTUNES:-}; do SCANFUSE_CUDA_TUNE=$tv "$W/warm" "$W"/cases/*_d0.sf; done
# OPS_TUNES: prod_bench's reduction and pointwise cases under each variant (gpu_call.sh's
# "ops" stage; by default the one-load-at-a-time kernels of before session 37)
for tv in ${OPS_TUNES-red_u=1,elem_u=1,red_fin_block=0,prod_lazy=0}; do
    SCANFUSE_CUDA_TUNE=$tv "$W/warm" "$W"/prod/sum_*.sf "$W"/prod/max_*.sf "$W"/prod/mean_*.sf "$W"/prod/argmax_*.sf \
        "$W"/prod/prod_sq*.sf "$W"/prod/pw_*.sf
done
# PROBE_TUNES: the probe's cases under each variant (gpu_probe_rows.py run with
# SCANFUSE_CUDA_TUNE set checks a variant against float64 before it is timed)
for tv in ${PROBE_TUNES:-}; do SCANFUSE_CUDA_TUNE=$tv "$W/warm" "$W"/probe/*.sf; done
rm -rf "$W"
tar cJf build-cudacache.tar.xz build-cudacache
echo "warm_cache: $(ls "$SCANFUSE_CACHE_DIR" | wc -l) images, $(du -h build-cudacache.tar.xz | cut -f1) packed"
