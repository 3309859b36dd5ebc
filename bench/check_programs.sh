#!/bin/bash
# check_programs.sh — a CTest (bench_cuda_programs): the standalone CUDA benchmark programs
# (bench/cub_scan_ref.cu, bench/lag_scan_proto.cu) compile with nvcc for sm_90, and
# lag_scan_proto refuses bad arguments with status 2 and a message before it touches a
# GPU (so this runs on a machine without one).  Exit 77 (skipped) without nvcc.
set -uo pipefail
cd "$(dirname "$0")/.."
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
if [ -z "$NVCC" ]; then echo "SKIP: no nvcc"; exit 77; fi
CCCL=$(dirname "$(dirname "$(readlink -f "$NVCC")")")/include/cccl
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail=0
"$NVCC" -std=c++17 -O3 -arch=sm_90 -I"$CCCL" bench/cub_scan_ref.cu -o "$W/cub_scan_ref" || { echo "FAIL: cub_scan_ref.cu"; fail=1; }
"$NVCC" -std=c++17 -O3 -arch=sm_90 bench/lag_scan_proto.cu -o "$W/lag_scan_proto" || { echo "FAIL: lag_scan_proto.cu"; exit 1; }
bad() { # ARGS... EXPECTED-MESSAGE-PART (last argument)
    local want=${*: -1} out rc
    out=$("$W/lag_scan_proto" "${@:1:$#-1}" 2>&1); rc=$?
    if [ $rc -ne 2 ] || [[ "$out" != *"$want"* ]]; then
        echo "FAIL: lag_scan_proto ${*:1:$#-1}: status $rc, '$out' (wanted 2 and '$want')"; fail=1
    fi
}
bad --bogus "usage:"
bad --json "usage:"
bad --log2n 40 "sizes from 2^20 to 2^30 only"
bad --log2n abc "sizes from 2^20 to 2^30 only"
bad --only nope "no variant nope"
bad --json /nonexistent/dir/x.jsonl "cannot open /nonexistent/dir/x.jsonl"
[ $fail = 0 ] && echo "bench CUDA programs: compiled; bad arguments refused"
exit $fail
