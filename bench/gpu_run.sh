#!/bin/bash
# gpu_run.sh — everything the GPU machine does in one call: build scanfuse (release),
# make libscanfuse.so for the benchmark's ctypes, run the CUDA tests (test_cuda: part B
# runs every op on the GPU against the reference), then bench/gpu_bench.py.
# Logs and JSON go to $OUT (default ./gpu_out).  Usage:
#   bench/gpu_run.sh [test|python|bench|all] [extra gpu_bench.py args...]
# "python" installs the package with pip (no build isolation: nothing can be fetched on
# the GPU machine) into build-gpu/site, runs the pytest suite (its CUDA tests run there)
# and bench/pytorch_samples.py on cpu and cuda (JSON: $OUT/pytorch_samples.json).
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
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu -j "$JOBS" --target scanfuse scanfuse_cli test_cuda launch_bench 2>&1 | grep -E "error|Built target" | tail -5
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
    # every example through the CLI on the GPU, checked against the reference evaluator
    for ex in examples/*.sf; do
        if build-gpu/scanfuse run "$ex" --device cuda --check > "$OUT/example.log" 2>&1; then
            echo "example $ex on cuda: ok"
        else
            echo "example $ex on cuda: FAILED"; tail -5 "$OUT/example.log"
        fi
    done
fi
if [ "$what" = python ] || [ "$what" = all ]; then
    t0=$(date +%s)
    rm -rf build-gpu/site
    # PyTorch's OpInfo database imports expecttest, which the GPU image lacks: carried as a
    # wheel in .whl (python3 -m pip download --no-deps -d .whl expecttest).
    if ls .whl/*.whl >/dev/null 2>&1; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target build-gpu/site .whl/*.whl
    fi
    python3 -m pip install -q --no-build-isolation --no-deps --no-cache-dir --target build-gpu/site . \
        > "$OUT/pip.log" 2>&1 || { echo "pip install failed"; tail -20 "$OUT/pip.log"; }
    echo "pip install: $(( $(date +%s) - t0 )) s"
    t0=$(date +%s)
    (cd build-gpu && PYTHONPATH=$PWD/site timeout ${PYTEST_TIMEOUT:-300} python3 -m pytest -q -p no:cacheprovider \
        ../python/tests) > "$OUT/pytest.log" 2>&1
    echo "pytest: exit $? in $(( $(date +%s) - t0 )) s"; tail -15 "$OUT/pytest.log"
    t0=$(date +%s)
    (cd build-gpu && PYTHONPATH=$PWD/site PYTHONUNBUFFERED=1 timeout ${SAMPLES_TIMEOUT:-300} python3 \
        ../bench/pytorch_samples.py --devices cpu,cuda --json "$OUT/pytorch_samples.json") > "$OUT/samples.log" 2>&1
    echo "pytorch_samples: exit $? in $(( $(date +%s) - t0 )) s"; tail -25 "$OUT/samples.log"
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
    t0=$(date +%s)
    PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-300} python3 bench/gpu_bench.py --lib build-gpu/libscanfuse.so \
        --offsets build-gpu/offsets.json --out "$OUT" "$@" 2>&1 | tee "$OUT/bench.log" | tail -60
    echo "bench: $(( $(date +%s) - t0 )) s"
fi
