#!/bin/bash
# run_programs.sh — differential test of a directory of programs (random ones from
# tools/random_programs.py, or tests/programs): each run by `scanfuse run FILE --check`
# (the result against the float64 reference on inputs generated from the seed), JOBS at
# a time, and classified:
#   OK        ran, every output within the check's tolerance;
#   REJECTED  refused with an error (every program given is valid: a finding);
#   MISMATCH  a failed check (a wrong answer);
#   CRASH     killed by a signal, a sanitizer report, or over TIMEOUT seconds;
#   DIFFERENT (with VARIANTS) an output whose bytes differ between the checked run and
#             a run under a variant (DESIGN.md: bit-identical on every run and for
#             every thread count), or a variant run that failed.
# Prints a summary and the findings; exit status 1 if there is any finding, 2 on bad
# arguments (with a message).
#   tools/run_programs.sh SCANFUSE DIR [RESULTS] [-- run options, e.g. --device cuda]
#   tools/run_programs.sh SCANFUSE --generate SEED COUNT [RESULTS] [-- options]
# (--generate writes the programs to a temporary directory first.)  JOBS (default 4),
# TIMEOUT (default 120).  VARIANTS: '|'-separated extra run options ("again" for none),
# e.g. VARIANTS="--threads 1|--threads 3" or, on a GPU, VARIANTS="again|again": every
# program that passes its check runs again under each, and its outputs (--out-dir) must
# equal the checked run's byte for byte.
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
export BIN TIMEOUT=${TIMEOUT:-120} VARIANTS=${VARIANTS:-}
export SANITIZER_REPORT="AddressSanitizer\|LeakSanitizer\|runtime error:"
# same_as_checked FILE DIR OPTIONS...: runs FILE under each variant into DIR/1, DIR/2, ...
# and compares every output with DIR/0's; prints the first difference, if any
same_as_checked() {
    local f=$1 d=$2 i=0 v o vs
    shift 2
    IFS='|' read -ra vs <<< "$VARIANTS"
    for v in "${vs[@]}"; do
        i=$((i + 1))
        [ "$v" = again ] && v=""
        # (word splitting of $v is wanted: a variant is a list of options)
        # shellcheck disable=SC2086
        if ! timeout "$TIMEOUT" "$BIN" run "$f" "$@" $v --out-dir "$d/$i" > "$d/log" 2>&1 ||
           grep -q "$SANITIZER_REPORT" "$d/log"; then
            echo "variant '$v' failed: $(tail -2 "$d/log" | tr '\n' ' ')"
            return
        fi
        for o in "$d"/0/*.npy; do
            [ -e "$o" ] || continue
            cmp -s "$o" "$d/$i/$(basename "$o")" || { echo "variant '$v': $(basename "$o" .npy) differs"; return; }
        done
    done
}
one() {
    local f=$1 out rc bad d="" diff="" keep=()
    shift
    if [ -n "$VARIANTS" ]; then # the checked run's outputs, for same_as_checked
        d=$(mktemp -d "${TMPDIR:-/tmp}/sf_same.XXXXXX")
        keep=(--out-dir "$d/0")
    fi
    out=$(timeout "$TIMEOUT" "$BIN" run "$f" --check "$@" "${keep[@]}" 2>&1)
    rc=$?
    if echo "$out" | grep -q "$SANITIZER_REPORT"; then rc=99; fi
    [ $rc = 0 ] && [ -n "$d" ] && diff=$(same_as_checked "$f" "$d" "$@")
    [ -n "$d" ] && rm -rf "$d"
    if [ -n "$diff" ]; then
        echo "DIFFERENT $f :: $diff"
    elif [ $rc = 0 ]; then
        echo "OK $f"
    elif [ $rc -ge 2 ]; then
        echo "CRASH $f (status $rc) :: $(echo "$out" | grep -v '^v[0-9]*:' | tail -3 | tr '\n' ' ')"
    else
        bad=$(echo "$out" | grep '^check ' | grep -v ', ok$' | head -3 | tr '\n' ' ')
        if [ -n "$bad" ]; then echo "MISMATCH $f :: $bad"; else echo "REJECTED $f :: $(echo "$out" | head -2 | tr '\n' ' ')"; fi
    fi
}
export -f one same_as_checked
ls "$DIR"/*.sf | xargs -P "${JOBS:-4}" -I{} bash -c 'one "$@"' _ {} "$@" > "$RES"
n=$(wc -l < "$RES")
sum="programs ($*): $n run, $(grep -c '^OK' "$RES") ok, $(grep -c '^REJECTED' "$RES") rejected,"
sum="$sum $(grep -c '^MISMATCH' "$RES") mismatched, $(grep -c '^CRASH' "$RES") crashed"
[ -n "$VARIANTS" ] && sum="$sum, $(grep -c '^DIFFERENT' "$RES") different under variants $VARIANTS"
echo "$sum"
grep -v '^OK' "$RES" | head -20
[ "$n" -gt 0 ] && ! grep -qv '^OK' "$RES"
