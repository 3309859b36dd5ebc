#!/bin/bash
# run_programs_args.sh SCANFUSE — a CTest: tools/run_programs.sh, random_programs.py,
# compile_programs.sh and bench/prod_bench.sh's CASES refuse bad arguments with status 2
# and a message (and never run a program for them), and run_programs.sh's VARIANTS
# reports planted differences.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$1
fail=0
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
want2() { # WHAT-MESSAGE-PART COMMAND...
    local want=$1 out rc
    shift
    out=$("$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -ne 2 ] || [[ "$out" != *"$want"* ]]; then
        echo "FAIL: $*: status $rc, '$out' (wanted 2 and '$want')"
        fail=1
    fi
}
want2 "too few arguments" "$ROOT/tools/run_programs.sh"
want2 "too few arguments" "$ROOT/tools/run_programs.sh" "$BIN"
want2 "is not an executable" "$ROOT/tools/run_programs.sh" "$W/none" "$W"
want2 "no .sf programs" "$ROOT/tools/run_programs.sh" "$BIN" "$W"
want2 "--generate takes SEED and COUNT" "$ROOT/tools/run_programs.sh" "$BIN" --generate 1
want2 "cannot generate programs" "$ROOT/tools/run_programs.sh" "$BIN" --generate x 5
want2 "usage: random_programs.py" python3 "$ROOT/tools/random_programs.py" 1 2
want2 "usage: random_programs.py" python3 "$ROOT/tools/random_programs.py" -1 2 "$W"
want2 "No such file or directory" python3 "$ROOT/tools/random_programs.py" 1 2 "$W/none"
want2 "usage: compile_programs.sh" "$ROOT/tools/compile_programs.sh" 1
# bench/prod_bench.sh: a CASES that is not a regular expression (it would skip every case)
want2 "is not a regular expression" env CASES='(' OUT="$W" bash "$ROOT/bench/prod_bench.sh" cpu "$BIN"
want2 "usage: compile_programs.sh" "$ROOT/tools/compile_programs.sh" x 5
want2 "no $W/libscanfuse.a" env BUILD="$W" "$ROOT/tools/compile_programs.sh" 1 2
want2 "cannot write $W/none/r.txt" env BUILD="$(dirname "$BIN")" "$ROOT/tools/compile_programs.sh" 1 2 "$W/none/r.txt"
# VARIANTS finds a planted difference: outputs of inputs from another seed
VARIANTS="again|--seed 1" "$ROOT/tools/run_programs.sh" "$BIN" "$ROOT/tests/programs" "$W/r.txt" >/dev/null 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q "^DIFFERENT .* :: variant '--seed 1': .* differs" "$W/r.txt"; then
    echo "FAIL: VARIANTS='again|--seed 1': status $rc, results: $(head -2 "$W/r.txt")"
    fail=1
fi
# ... and a variant that cannot run
VARIANTS="--no-such-option" "$ROOT/tools/run_programs.sh" "$BIN" "$ROOT/tests/programs" "$W/r.txt" >/dev/null 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q "^DIFFERENT .* failed: .*unknown option" "$W/r.txt"; then
    echo "FAIL: VARIANTS=--no-such-option: status $rc, results: $(head -2 "$W/r.txt")"
    fail=1
fi
[ $fail = 0 ] && echo "run_programs / random_programs: bad arguments refused, planted differences found"
exit $fail
