#!/bin/bash
# gpu_call.sh — one device call: unpack a kernel cache warmed on the build machine (if
# carried), then run the named stages of bench/gpu_run.sh and bench/gpu_cli_bench.sh,
# each under its own time limit, and pack every log and JSON into one archive in $OUT
# (the device tool returns at most 8 files).  Usage, on the GPU machine:
#   bench/gpu_call.sh "test cli" [cli args: profile tune]
# Stage "build": build only; "test": build + test_cuda + every example on cuda;
# "cudatest": test_cuda alone (SF_CUDA_TEST_FILTER / _EXTRAS apply); "examples": every
# example on cuda, checked; "pybench": gpu_bench.py for PYBENCH_ONLY's filters; "probe": bench/gpu_probe_rows.py; "python":
# pytest + samples; PROBE_TUNES also runs the probe under those variants; "cli": the CLI scan table (gpu_cli_bench.sh); "bench": gpu_bench.py
# "launch": bench/launch_bench.c (host cost a run, driver launch floor; LAUNCH_TUNES);
# "trace": look-back tile phase times (TRACE_CASES x TRACE_TUNES, bench/lb_trace.py;
# KEEP_TRACE=1 keeps each run's records);
# "moeab": the MoE examples by `scanfuse bench` under the default and each MOE_TUNES variant;
# "programs": tests/programs and RANDOM_COUNT random programs from RANDOM_SEED with --check
# (tools/run_programs.sh; VARIANTS="again|again" also runs each twice more and compares
# the bytes);
# "cub": CUB's DeviceScan on the same shapes beside a copy (bench/cub_scan_ref.sh; carry
# build/cub_scan_ref where the GPU machine has no nvcc);
# "ops": reductions and pointwise kernels, defaults against OPS_TUNES, PyTorch beside;
# "ncuops": Nsight Compute on the ops' cases in NCU_CASES under the defaults and NCU_TUNES;
# (PyTorch side by side).
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL=${OUT:-$PWD/gpu_out}
export OUT=$FINAL/work
mkdir -p "$OUT"
stages=$1; shift || true
if [ -f build-cudacache.tar.xz ]; then
    t0=$(date +%s); tar xJf build-cudacache.tar.xz && echo "cache unpacked: $(ls build-cudacache | wc -l) images in $(( $(date +%s) - t0 )) s"
else
    case " $stages " in *" cudatest "*|*" test "*)
        echo "note: no kernel cache carried: test_cuda compiles its ~1000 kernels here (more than 250 s; bench/README.md)" ;;
    esac
fi
export SCANFUSE_CACHE_DIR=$PWD/build-cudacache
for s in $stages; do
    t0=$(date +%s)
    case $s in
        test) SF_CUDA_TEST_BIG=${SF_CUDA_TEST_BIG:-0} TEST_TIMEOUT=${TEST_TIMEOUT:-240} bash bench/gpu_run.sh test ;;
        python) bash bench/gpu_run.sh python ;;
        launch) # the host's cost of a run against the driver's launch floor (launch_bench.c),
                # under the defaults and each SCANFUSE_CUDA_TUNE variant of LAUNCH_TUNES
                [ -x build-gpu/launch_bench ] || bash bench/gpu_run.sh none >/dev/null
                for tv in default ${LAUNCH_TUNES-pdl_first=0}; do
                    [ "$tv" = default ] && t="" || t=$tv
                    echo "launch_bench under SCANFUSE_CUDA_TUNE=$t:"
                    prof=; [ "$tv" = default ] && prof=--profile
                    SCANFUSE_CUDA_TUNE=$t timeout 120 build-gpu/launch_bench --json "$OUT/launch_bench.jsonl" $prof 2>&1 | tail -60
                done ;;
        bench) bash bench/gpu_run.sh bench ;;
        build) bash bench/gpu_run.sh none ;;
        pybench) # gpu_bench.py (scanfuse and PyTorch eager side by side, CUDA events, graph
                 # replay) for each ';'-separated --only filter in PYBENCH_ONLY
                 IFS=';' read -ra only <<< "${PYBENCH_ONLY:-[2048,128];moe}"
                 n=0
                 for o in "${only[@]}"; do
                     n=$((n + 1))
                     sel=(--only "$o")
                     [ "$o" = checks ] && sel=(--checks-only) # accuracy and 2^28 determinism
                     PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-100} python3 bench/gpu_bench.py --lib build-gpu/libscanfuse.so \
                         --offsets build-gpu/offsets.json --out "$OUT" --graph "${sel[@]}" --tag "_$n" 2>&1 | tail -25
                 done ;;
        cudatest) (cd build-gpu && timeout ${TEST_TIMEOUT:-240} ./test_cuda) > "$OUT/test_cuda.log" 2>&1
                  echo "test_cuda: exit $?"
                  grep -E "^(part|SKIP|FAIL|determinism|big|test_cuda)" "$OUT/test_cuda.log" | head -40 ;;
        programs) # tests/programs (what random programs once caught), then RANDOM_COUNT random
                  # programs from RANDOM_SEED, each with --check on the GPU (tools/run_programs.sh;
                  # their kernels compile here unless warmed and carried, ~1 s each)
                  [ -x build-gpu/scanfuse ] || bash bench/gpu_run.sh none >/dev/null
                  JOBS=16 tools/run_programs.sh build-gpu/scanfuse tests/programs "$OUT/programs.txt" -- --device cuda
                  if [ "${RANDOM_COUNT:-0}" -gt 0 ]; then
                      JOBS=16 timeout ${PROGRAMS_TIMEOUT:-300} tools/run_programs.sh build-gpu/scanfuse --generate \
                          "${RANDOM_SEED:-1}" "$RANDOM_COUNT" "$OUT/random_programs.txt" -- --device cuda
                  fi ;;
        probe) timeout ${PROBE_TIMEOUT:-150} python3 bench/gpu_probe_rows.py --json "$OUT/probe_rows.jsonl"
               for tv in ${PROBE_TUNES:-}; do # the same float64 check under each variant
                   echo "probe under SCANFUSE_CUDA_TUNE=$tv:"
                   SCANFUSE_CUDA_TUNE=$tv timeout ${PROBE_TIMEOUT:-150} python3 bench/gpu_probe_rows.py \
                       --json "$OUT/probe_rows_${tv//[=,]/_}.jsonl"
               done ;;
        examples) # EX_TIMEOUT: the DeepSeek example's float64 reference check alone takes ~85 s
                  for ex in examples/*.sf; do
                      timeout ${EX_TIMEOUT:-150} build-gpu/scanfuse run "$ex" --device cuda --check > "$OUT/example.log" 2>&1
                      rc=$?
                      if [ $rc = 0 ]; then echo "example $ex on cuda: ok"
                      elif [ $rc = 124 ]; then echo "example $ex on cuda: TIMED OUT after ${EX_TIMEOUT:-150} s (not checked)"
                      else echo "example $ex on cuda: FAILED"; tail -5 "$OUT/example.log"; fi
                  done ;;
        moeab) # the MoE examples by `scanfuse bench` (median of 20) under the default and
               # each SCANFUSE_CUDA_TUNE variant of MOE_TUNES, in one process each, one run
               [ -x build-gpu/scanfuse ] || bash bench/gpu_run.sh none >/dev/null
               for ex in moe_routing moe_routing_deepseek; do
                   for tv in default ${MOE_TUNES:-}; do
                       [ "$tv" = default ] && t="" || t=$tv
                       line=$(SCANFUSE_CUDA_TUNE=$t timeout 120 build-gpu/scanfuse bench examples/$ex.sf --device cuda \
                           --repeat 20 --json 2>&1 | tail -1)
                       echo "{\"case\": \"$ex@$tv\", ${line#\{}" >> "$OUT/moe_ab.jsonl"
                       python3 -c "import json,sys; d=json.loads(sys.argv[1]); print('%-44s %9.1f us' % (sys.argv[2], d['seconds']*1e6))" \
                           "$line" "$ex@$tv" || echo "$ex@$tv: $line"
                   done
               done ;;
        trace) # where look-back tiles spend their time (bench/lb_trace.py): for each case of
               # TRACE_CASES (gpu_cli_bench.sh's names) and variant of TRACE_TUNES, one bench
               # of 3 runs under lb_trace=1; the last launch's records are read
               [ -x build-gpu/scanfuse ] || bash bench/gpu_run.sh none >/dev/null
               td=$(mktemp -d); WRITE_CASES=$td bash bench/gpu_cli_bench.sh
               for c in ${TRACE_CASES:-1d_f32_2p28}; do
                   for tv in default ${TRACE_TUNES:-}; do
                       [ "$tv" = default ] && t=lb_trace=1 || t=lb_trace=1,$tv
                       rm -f "$OUT/trace.bin"
                       SCANFUSE_CUDA_TUNE=$t SCANFUSE_CUDA_TRACE=$OUT/trace.bin timeout 120 build-gpu/scanfuse bench \
                           "$td/$c.sf" --device cuda --repeat 3 > /dev/null 2>"$OUT/err.txt" || tail -2 "$OUT/err.txt"
                       python3 bench/lb_trace.py "$OUT/trace.bin" --label "$c@$tv" --json "$OUT/lb_trace.jsonl" --timeline ${TRACE_BYTES:-32768}
                       # KEEP_TRACE=1: the records themselves come back too (gzipped)
                       [ -n "${KEEP_TRACE:-}" ] && gzip -c "$OUT/trace.bin" > "$OUT/trace_${c}_${tv//[=,]/_}.bin.gz"
                   done
               done
               rm -rf "$td" "$OUT/trace.bin" ;;
        cub) timeout ${CUB_TIMEOUT:-120} bash bench/cub_scan_ref.sh ;; # CUB's DeviceScan beside a copy
        ops) # reductions and pointwise kernels (session 37's batches) beside PyTorch:
             # prod_bench.sh's OPS_CASES under the defaults and each OPS_TUNES variant (by
             # default red_u=1,elem_u=1,red_fin_block=0,prod_lazy=0: the kernels of
             # before), then torch_prod_ref.py
             [ -x build-gpu/scanfuse ] || bash bench/gpu_run.sh none >/dev/null
             oc=${OPS_CASES:-^(sum|max|mean|argmax|prod_sq|pw_)}
             for tv in default ${OPS_TUNES-red_u=1,elem_u=1,red_fin_block=0,prod_lazy=0}; do
                 [ "$tv" = default ] && t="" || t=$tv
                 SCANFUSE_CUDA_TUNE=$t REPEAT=${REPEAT:-15} CASES=$oc timeout ${OPS_TIMEOUT:-200} \
                     bash bench/prod_bench.sh cuda build-gpu/scanfuse
             done
             # (OPS_COMPILE=1: torch.compile too, ~5-20 s of compiling a case)
             timeout ${OPS_TIMEOUT:-200} python3 bench/torch_prod_ref.py --repeat ${REPEAT:-15} --cases "$oc" \
                 ${OPS_COMPILE:+--compile} --json "$OUT/torch_ops_ref.jsonl" ;;
        ncuops) # Nsight Compute on prod_bench.sh's cases matching NCU_CASES (default: the
                # [4096, 4096] sums down the columns), one run's kernels (k0, k1, ...: the
                # pass and its finish) under the defaults and each NCU_TUNES variant: every
                # kernel's duration, DRAM throughput, occupancy and warp states, in
                # $OUT/ncu_<case>[_<variant>].txt
                [ -x build-gpu/scanfuse ] || bash bench/gpu_run.sh none >/dev/null
                cd_=$(mktemp -d); WRITE_CASES=$cd_ bash bench/prod_bench.sh cuda build-gpu/scanfuse >/dev/null
                for f in "$cd_"/*.sf; do
                    c=$(basename "$f" .sf)
                    [[ "$c" =~ ${NCU_CASES:-^sum_sq_(f32|bf16)_d0$} ]] || continue
                    for tv in default ${NCU_TUNES:-}; do
                        [ "$tv" = default ] && { t=""; nf="$OUT/ncu_$c.txt"; } || { t=$tv; nf="$OUT/ncu_${c}_${tv//[=,]/_}.txt"; }
                        SCANFUSE_CUDA_TUNE=$t timeout 120 ncu --clock-control none --section SpeedOfLight \
                            --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
                            --section LaunchStats --kernel-name regex:'^k[0-9]+$' --launch-skip 4 --launch-count 4 \
                            build-gpu/scanfuse bench "$f" --device cuda --repeat 2 > "$nf" 2>&1
                        echo "ncu $c ${t:-default}: exit $?"
                        grep -E "^  k[0-9]+|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Grid Size" "$nf" | head -24
                    done
                done ;;
        cli) [ -x build-gpu/scanfuse ] || bash bench/gpu_run.sh none >/dev/null
             timeout ${CLI_TIMEOUT:-330} bash bench/gpu_cli_bench.sh "$@" ;;
    esac 2>&1 | tee "$OUT/stage_$s.txt" | tail -${TAIL:-45}
    echo "== stage $s: $(( $(date +%s) - t0 )) s"
    # packed after every stage: a call cut short by its time limit still returns the rest
    tar czf "$FINAL/results.tgz" -C "$OUT" .
done
cp "$OUT"/*.jsonl "$FINAL"/ 2>/dev/null
ls -la "$FINAL"
