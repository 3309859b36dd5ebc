#!/bin/bash
# run_programs.sh — differential test of a directory of programs (random ones from
# tools/random_programs.py, or tests/programs): each run by `scanfuse run FILE --check`
# (the result against the float64 reference on inputs generated from the seed), JOBS at
# a time, and classified:
#   OK        ran, every output within the check's tolerance;
#   REJECTED  refused with an error (every program given is valid: a finding);
#   MISMATCH  a failed check (a wrong answer);
#   CRASH     killed by a signal, a sanitizer report, or over TIMEOUT seconds.
# Prints a summary and the findings; exit status 1 if there is any finding, 2 on bad
# arguments (with a message).
#   tools/run_programs.sh SCANFUSE DIR [RESULTS] [-- run options, e.g. --device cuda]
#   tools/run_programs.sh SCANFUSE --generate SEED COUNT [RESULTS] [-- options]
# (--generate writes the programs to a temporary directory first.)  JOBS (default 4),
# TIMEOUT (default 120).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
usage() {
    echo "run_programs.sh: $1" >&2
    echo "usage: run_programs.sh SCANFUSE DIR|--generate SEED COUNT [RESULTS] [-- run options]" >&2
    exit 2
}
[ $# -ge 2 ] || usage "too few arguments"
BIN=$1
shift
[ -x "$BIN" ] || usage "$BIN is not an executable"
TMP=""
if [ "$1" = --generate ]; then
    [ $# -ge 3 ] || usage "--generate takes SEED and COUNT"
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/sf_programs.XXXXXX")
    trap 'rm -rf "$TMP"' EXIT
    python3 "$HERE/random_programs.py" "$2" "$3" "$TMP" >/dev/null || usage "cannot generate programs $2 $3"
    DIR=$TMP
    shift 3
else
    DIR=$1
    shift
    ls "$DIR"/*.sf >/dev/null 2>&1 || usage "no .sf programs in $DIR"
fi
RES=${TMP:-$DIR}/results.txt
if [ $# -gt 0 ] && [ "$1" != -- ]; then RES=$1; shift; fi
[ "${1:-}" = -- ] && shift
export BIN TIMEOUT=${TIMEOUT:-120}
one() {
    local f=$1 out rc bad
    shift
    out=$(timeout "$TIMEOUT" "$BIN" run "$f" --check "$@" 2>&1)
    rc=$?
    if echo "$out" | grep -q "AddressSanitizer\|LeakSanitizer\|runtime error:"; then rc=99; fi
    if [ $rc = 0 ]; then
        echo "OK $f"
    elif [ $rc -ge 2 ]; then
        echo "CRASH $f (status $rc) :: $(echo "$out" | grep -v '^v[0-9]*:' | tail -3 | tr '\n' ' ')"
    else
        bad=$(echo "$out" | grep '^check ' | grep -v ', ok$' | head -3 | tr '\n' ' ')
        if [ -n "$bad" ]; then echo "MISMATCH $f :: $bad"; else echo "REJECTED $f :: $(echo "$out" | head -2 | tr '\n' ' ')"; fi
    fi
}
export -f one
ls "$DIR"/*.sf | xargs -P "${JOBS:-4}" -I{} bash -c 'one "$@"' _ {} "$@" > "$RES"
n=$(wc -l < "$RES")
echo "programs ($*): $n run, $(grep -c '^OK' "$RES") ok, $(grep -c '^REJECTED' "$RES") rejected," \
     "$(grep -c '^MISMATCH' "$RES") mismatched, $(grep -c '^CRASH' "$RES") crashed"
grep -v '^OK' "$RES" | head -20
[ "$n" -gt 0 ] && ! grep -qv '^OK' "$RES"
