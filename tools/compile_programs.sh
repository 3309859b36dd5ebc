#!/bin/bash
# compile_programs.sh — the CUDA code generator on random programs, without a GPU: each
# program of tools/random_programs.py is planned for an H200 (sm_90, 132 SMs) and every
# kernel it needs is generated and compiled by NVRTC (tools/cuda_warm.c), JOBS at a time.
# A program whose kernels do not compile is a finding: the generator emitted invalid CUDA
# C for a valid program (session 36: raked stores over the staged inputs where the
# epilogue read an input again; bench/NOTES.md).  The generator runs with
# RP_ANY_PRODUCTS=1 (float cumprod and prod of computed values too: nothing here compares
# values).  Classes, one line a program in RESULTS: OK, NVRTC (a compile error: the
# finding), REJECTED (any other error; every program is valid, so also a finding).
#   tools/compile_programs.sh SEED COUNT [RESULTS]
# BUILD (default: build) holds libscanfuse.a; JOBS (default 2); SCANFUSE_CACHE_DIR
# (default: a temporary directory) keeps the images, so a kernel seen before is not
# compiled again.  Exit status 1 if there is a finding, 2 on bad arguments.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
[ $# -ge 2 ] && [[ "$1" =~ ^[0-9]+$ ]] && [[ "$2" =~ ^[0-9]+$ ]] || {
    echo "usage: compile_programs.sh SEED COUNT [RESULTS]" >&2; exit 2; }
[ -f "$BUILD/libscanfuse.a" ] || { echo "compile_programs.sh: no $BUILD/libscanfuse.a (cmake --build build)" >&2; exit 2; }
D=$(mktemp -d "${TMPDIR:-/tmp}/sf_compile_programs.XXXXXX")
trap 'rm -rf "$D"' EXIT
RESULTS=${3:-$D/results.txt}
: > "$RESULTS" 2>/dev/null || { echo "compile_programs.sh: cannot write $RESULTS" >&2; exit 2; }
export SCANFUSE_CACHE_DIR=${SCANFUSE_CACHE_DIR:-$D/cache}
gcc -std=c11 -O1 -I"$ROOT/src" -I"$ROOT/include" "$ROOT/tools/cuda_warm.c" "$BUILD/libscanfuse.a" -lm -ldl -lpthread \
    -o "$D/warm" || exit 2
mkdir -p "$D/p" && RP_ANY_PRODUCTS=1 python3 "$HERE/random_programs.py" "$1" "$2" "$D/p" > /dev/null || exit 2
one() { # program -> its class line
    local msg
    if msg=$("$D/warm" "$1" 2>&1); then echo "OK $(basename "$1")"
    elif grep -q NVRTC <<< "$msg"; then echo "NVRTC $(basename "$1"): $(head -c 300 <<< "$msg" | tr '\n' ' ')"
    else echo "REJECTED $(basename "$1"): $(head -c 300 <<< "$msg" | tr '\n' ' ')"; fi
}
export -f one
export D
ls "$D"/p/*.sf | xargs -P "${JOBS:-2}" -I{} bash -c 'one {}' > "$RESULTS"
ok=$(grep -c '^OK ' "$RESULTS"); bad=$(grep -vc '^OK ' "$RESULTS")
echo "compile_programs: $(wc -l < "$RESULTS") programs, $ok OK, $bad findings"
grep -v '^OK ' "$RESULTS" | head -20
[ "$bad" -eq 0 ]
