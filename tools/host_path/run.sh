#!/bin/bash
# tools/host_path/run.sh — scanfuse's host time per CUDA run, without a GPU (see
# host_path.c and stub_cuda.c).  Needs build/libscanfuse.a and NVRTC.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
D=$(mktemp -d "${TMPDIR:-/tmp}/sf_host_path.XXXXXX")
gcc -O2 -shared -fPIC "$HERE/stub_cuda.c" -o "$D/libcuda_stub.so"
gcc -O2 -std=c11 -I"$ROOT/include" "$HERE/host_path.c" "$ROOT/build/libscanfuse.a" -lm -ldl -lpthread -o "$D/host_path"
SCANFUSE_CUDA_DRIVER="$D/libcuda_stub.so" "$D/host_path"
rm -rf "$D"
