#!/bin/bash
# gpu_run.sh — everything the GPU machine does in one call: build scanfuse (release),
# make libscanfuse.so for the benchmark's ctypes, run the CUDA tests (test_cuda: part B
# runs every op on the GPU against the reference), then bench/gpu_bench.py.
# Logs and JSON go to $OUT (default ./gpu_out).  Usage:
#   bench/gpu_run.sh [test|bench|all] [extra gpu_bench.py args...]
# The kernel cache lives in $SCANFUSE_CACHE_DIR (default: build-cudacache in the tree, so
# a cache warmed elsewhere with SF_CUDA_TEST_GEN_ONLY=1 can travel with the tree).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_out}
mkdir -p "$OUT"
what=${1:-all}
shift || true
export SCANFUSE_CACHE_DIR=${SCANFUSE_CACHE_DIR:-$PWD/build-cudacache}
JOBS=$(nproc 2>/dev/null || echo 8)

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv 2>&1 | tee "$OUT/gpu.txt"
t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu -j "$JOBS" --target scanfuse test_cuda 2>&1 | grep -E "error|Built target" | tail -5
gcc -shared -o build-gpu/libscanfuse.so -Wl,--whole-archive build-gpu/libscanfuse.a -Wl,--no-whole-archive -lm -ldl -lpthread
cat > build-gpu/offsets.c <<'EOF'
#include <stddef.h>
#include <stdio.h>
#include "scanfuse.h"
int main(void) {
    printf("{\"device\": %zu, \"fuse\": %zu, \"cuda_stream\": %zu, \"size\": %zu}\n",
           offsetof(scanfuse_options, device), offsetof(scanfuse_options, fuse),
           offsetof(scanfuse_options, cuda_stream), sizeof(scanfuse_options));
    return 0;
}
EOF
gcc -Iinclude build-gpu/offsets.c -o build-gpu/offsets && build-gpu/offsets > build-gpu/offsets.json
echo "build: $(( $(date +%s) - t0 )) s"

if [ "$what" = test ] || [ "$what" = all ]; then
    t0=$(date +%s)
    (cd build-gpu && SF_CUDA_TEST_BIG=${SF_CUDA_TEST_BIG:-1} timeout ${TEST_TIMEOUT:-300} ./test_cuda) > "$OUT/test_cuda.log" 2>&1
    echo "test_cuda: exit $? in $(( $(date +%s) - t0 )) s"
    grep -E "^(part|SKIP|FAIL|determinism|big|test_cuda)" "$OUT/test_cuda.log" | head -60
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
    t0=$(date +%s)
    PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-300} python3 bench/gpu_bench.py --lib build-gpu/libscanfuse.so \
        --offsets build-gpu/offsets.json --out "$OUT" "$@" 2>&1 | tee "$OUT/bench.log" | tail -60
    echo "bench: $(( $(date +%s) - t0 )) s"
fi
