#!/bin/sh
# bench_scan.sh — the CPU scan benchmark of issue 3 in one run: the C program
# bench_scan (every target case at 1 thread and all threads, each against a memcpy of
# the same bytes, and the cumsum decompositions), then NumPy's cumsum on the same
# cases in the same run, merged into one JSON-lines file with the speed-up over NumPy.
#
#   bench/bench_scan.sh [OUT.json]        (default: bench/results/cpu-$MACHINE-$DATE.json)
#
# Environment: BUILD (default build-perf; must hold bench_scan), MACHINE (a short name
# for the results file, default from the CPU model), DATE (default today), REPEAT
# (default 11), PYTHON (a python with numpy; default: $BUILD/venv/bin/python if it
# exists, else python3 — without numpy the NumPy part is skipped, not failed).
# OPENBLAS_* / OMP_* do not matter: np.cumsum is a single-threaded loop.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build-perf}
case $build in /*) ;; *) build=$root/$build ;; esac
bin=$build/bench_scan
[ -x "$bin" ] || { echo "bench_scan.sh: $bin not built (cmake --build $build --target bench_scan)" >&2; exit 2; }
machine=${MACHINE:-$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo 2>/dev/null | head -1 | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')-$(nproc)c}
date=${DATE:-$(date +%F)}
repeat=${REPEAT:-11}
out=${1:-$root/bench/results/cpu-$machine-$date.json}
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if git -C "$root" diff --quiet HEAD -- src include bench 2>/dev/null; then :; else commit="$commit+dirty"; fi
py=${PYTHON:-}
if [ -z "$py" ]; then
    if [ -x "$build/venv/bin/python" ]; then py=$build/venv/bin/python; else py=python3; fi
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "== bench_scan (machine $machine, commit $commit, $(date -u +%FT%TZ), load: $(cut -d' ' -f1-3 /proc/loadavg))"
BENCH_MACHINE=$machine BENCH_COMMIT=$commit "$bin" --repeat "$repeat" --json "$tmp"
echo
echo "== NumPy cumsum, same run"
"$py" - "$tmp" "$repeat" "$machine" "$commit" <<'EOF' || echo "(NumPy part skipped)"
import json, sys, time
path, repeat, machine, commit = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    import numpy as np
except ImportError:
    print("numpy is not importable with", sys.executable, "- skipped")
    sys.exit(0)
rows = [json.loads(l) for l in open(path) if l.strip()]

def med(f):
    for _ in range(3):
        f()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]

rng = np.random.default_rng(1)
N = 1 << 26
cases = [("f32 1-D", "float32", (N,), 0), ("f64 1-D", "float64", (N,), 0),
         ("i32->i64 1-D", "int32", (N,), 0), ("f16 1-D", "float16", (N,), 0),
         ("f32 [S,S] dim 0", "float32", (4096, 4096), 0), ("f32 [S,S] dim 1", "float32", (4096, 4096), 1)]
out = []
for name, dt, shape, dim in cases:
    if dt.startswith("int"):
        x = rng.integers(-1000, 1000, size=shape, dtype=dt)
    else:
        x = (rng.random(shape, dtype="float64") * 2 - 1).astype(dt)
    y = np.cumsum(x, axis=dim)
    ybytes = x.nbytes + y.nbytes
    t = med(lambda: np.cumsum(x, axis=dim, out=y))
    src = np.ones(ybytes // 2, dtype=np.uint8); dst = np.empty_like(src)
    tc = med(lambda: np.copyto(dst, src))
    ours = {r["threads"]: r["seconds"] for r in rows if r.get("kind") == "ratio" and r.get("case") == name}
    rec = {"bench": "bench_scan.sh", "kind": "numpy", "case": name, "dtype": dt, "shape": str(list(shape)),
           "dim": dim, "numpy": np.__version__, "seconds": t, "bytes": ybytes, "gbps": ybytes / t * 1e-9,
           "copy_gbps": ybytes / tc * 1e-9, "ratio": tc / t,
           "speedup_1_thread": (t / ours[1]) if 1 in ours else None,
           "speedup_all_threads": (t / ours[max(ours)]) if ours else None,
           "repeat": repeat, "machine": machine, "commit": commit}
    out.append(rec)
    s1 = rec["speedup_1_thread"]; sa = rec["speedup_all_threads"]
    print("%-18s numpy %8.2f ms %6.2f GB/s (copy %6.2f GB/s, ratio %.3f)   scanfuse is %sx (1 thread), %sx (all threads) faster"
          % (name, t * 1e3, rec["gbps"], rec["copy_gbps"], rec["ratio"],
             "%.1f" % s1 if s1 else "?", "%.1f" % sa if sa else "?"))
with open(path, "a") as f:
    for r in out:
        f.write(json.dumps(r) + "\n")
EOF
mkdir -p "$(dirname "$out")"
cp "$tmp" "$out"
echo
echo "results: $out"
