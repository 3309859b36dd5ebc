#!/bin/bash
# cub_scan_ref.sh — CUB's DeviceScan beside a copy of the same bytes (bench/cub_scan_ref.cu):
# builds it with nvcc into build/cub_scan_ref when nvcc is there (a GPU machine without
# nvcc runs a binary built on the build machine and carried), then runs it, appending
# one JSON object a case to $OUT/cub_scan_ref.jsonl (default: the current directory).
#   bench/cub_scan_ref.sh          build (if nvcc) and run
#   bench/cub_scan_ref.sh build    build only
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/cub_scan_ref
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
if [ -n "$NVCC" ]; then
    CCCL=$(dirname "$(dirname "$(readlink -f "$NVCC")")")/include/cccl
    mkdir -p build
    "$NVCC" -std=c++17 -O3 -arch=sm_90 ${CCCL:+-I"$CCCL"} bench/cub_scan_ref.cu -o "$BIN"
fi
[ "${1:-}" = build ] && exit 0
[ -x "$BIN" ] || { echo "cub_scan_ref: no nvcc and no $BIN to run"; exit 1; }
"$BIN" --json "${OUT:-.}/cub_scan_ref.jsonl"
