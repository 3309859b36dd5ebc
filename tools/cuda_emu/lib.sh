# tools/cuda_emu/lib.sh — sourced by scans.sh, reductions.sh and elementwise.sh: a scratch
# directory $D (removed on exit; run.sh's own directories go in it) and their emulator
# runs (run.sh), EMU_JOBS of them at once (default one a CPU).  The runs are independent,
# each in its own directory under $D; a failed run leaves its report in $D/fail.N, and
# emu_report prints and counts them.  Each .sf file is written once (prog, or printf),
# before the runs that read it.  Needs HERE (this directory); EMU_KIND names run.sh's
# variable that picks the kernel (EMU_SCAN, EMU_RED or EMU_ELEM).
D=$(mktemp -d "${TMPDIR:-/tmp}/sf_emu.XXXXXX")
export TMPDIR=$D
export EMU_CACHE=$D/cache # run.sh's binaries, shared by this script's runs
trap 'rm -rf "$D"' EXIT
prog() { # NAME TEXT: $D/NAME.sf, TEXT with printf's escapes
    printf '%b' "$2" > "$D/$1.sf"
}
JOBS=${EMU_JOBS:-$(nproc 2>/dev/null || echo 2)}
n=0
spawn() { # COMMAND...: in the background once fewer than JOBS runs are in flight
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    "$@" &
}
emu_one() { # N PROG TUNE ARGS...
    local k=$1 prog=$2 tune=$3 out
    shift 3
    if ! out=$(env "$EMU_KIND=1" SCANFUSE_CUDA_TUNE="$tune" "$HERE/run.sh" "$D/$prog.sf" "$@" 2>&1); then
        { echo "FAIL $prog $* under $tune:"; echo "$out" | tail -5; } > "$D/fail.$k"
    fi
}
# emu PROG TUNE [irange ties seed noflags]: one run of PROG's kernel under
# SCANFUSE_CUDA_TUNE=TUNE against the reference (seed: the run's number unless given),
# counted (EMU_NTH and EMU_MAG set on the call reach the run)
emu() {
    local prog=$1 tune=$2
    shift 2
    n=$((n + 1))
    [ $# -gt 0 ] || set -- 0 0 $n
    spawn emu_one $n "$prog" "$tune" "$@"
}
emu_ab_one() { # N PROG TUNE_A TUNE_B ARGS...
    local k=$1 prog=$2 ta=$3 tb=$4 t o="$D/ab.$1"
    shift 4
    for t in a b; do
        mkdir -p "$o$t"
        local tune=$ta
        [ $t = b ] && tune=$tb
        env "$EMU_KIND=1" EMU_OUT="$o$t" SCANFUSE_CUDA_TUNE="$tune" "$HERE/run.sh" "$D/$prog.sf" "$@" > /dev/null 2>&1
    done
    if ! ls "$o"a/*.out > /dev/null 2>&1 || ! (cd "$o"a && for f in *.out; do cmp -s "$f" "$o"b/"$f" || exit 1; done); then
        echo "FAIL $prog $*: $ta and $tb differ (or did not run)" > "$D/fail.$k"
    fi
}
# emu_ab PROG TUNE_A TUNE_B [irange ties seed noflags]: PROG's kernel under two tunings
# on the same inputs, every output byte for byte (EMU_OUT; not against the reference)
emu_ab() {
    local prog=$1 ta=$2 tb=$3
    shift 3
    n=$((n + 1))
    [ $# -gt 0 ] || set -- 0 0 $n
    spawn emu_ab_one $n "$prog" "$ta" "$tb" "$@"
}
# emu_report LABEL: waits for every run, prints the failures and the count; the exit
# status is the number of failures
emu_report() {
    wait
    local f fail=0
    for f in "$D"/fail.*; do
        [ -e "$f" ] || continue
        cat "$f"; fail=$((fail + 1))
    done
    echo "$1: $n runs, $fail failed"
    return $fail
}
