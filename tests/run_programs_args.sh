#!/bin/bash
# run_programs_args.sh SCANFUSE — a CTest: tools/run_programs.sh and random_programs.py
# refuse bad arguments with status 2 and a message (and never run a program for them).
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
[ $fail = 0 ] && echo "run_programs / random_programs: bad arguments refused"
exit $fail
