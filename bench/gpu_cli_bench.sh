#!/bin/bash
# gpu_cli_bench.sh — issue 5's scan table through `scanfuse bench --device cuda`: one
# fusion file per case, each timed (median of --repeat, every run waited for) against a
# device-to-device copy of the same bytes in the same process (column "ratio"; column
# "b2b": the back-to-back times' ratio, runs and copies queued without a wait between
# them, which leaves out the host's wait for each, ~5-10 us).  Faster than
# gpu_bench.py (no float64 reference per case: test_cuda checks correctness), so the
# whole table fits in a couple of minutes.  Optional first argument "profile": also runs
# Nsight Compute on the 1-D float32 scan kernel (sections: speed of light, memory,
# warp states, occupancy) into $OUT/ncu_scan.txt, and the duration of every kernel of
# one run of each MoE example into $OUT/ncu_<example>.txt, and the small kernel's phase
# times (tuning small_prof); PROF_DT=float16 profiles that dtype's scan instead.  "moeprof": only the MoE part of that.  "tune": also times the 1-D scans under
# the SCANFUSE_CUDA_TUNE variants in TUNES and the column scans under those in COLTUNES
# (rows "case@variant" in the JSON).
#   bench/gpu_cli_bench.sh [profile] [tune]   (after bench/gpu_run.sh has built build-gpu;
#   CLI_CASES=REGEX times only the cases it matches)
# JSON lines: $OUT/gpu_cli_bench.jsonl (the CLI's --json object plus "case").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_out}
S=build-gpu/scanfuse
D=$(mktemp -d)
mkdir -p "$OUT"
scan() { # label dtype shape dim [extra attrs]
    printf 'input x: %s[%s]\ny = cumsum(x, dim=%s%s)\noutput y\n' "$2" "$3" "$4" "${5:-}" > "$D/$1.sf"
}
scan 1d_f32_2p28 float32 268435456 0
scan 1d_i64_2p28 int64 268435456 0
scan 1d_f16_2p28 float16 268435456 0
scan 1d_bf16_2p28 bfloat16 268435456 0
scan 1d_i32_i64_2p28 int32 268435456 0 ", dtype=int64"
scan 1d_f64_2p27 float64 134217728 0 # (float64: no target; the 8-byte float beside int64)
scan 1d_f32_2p26 float32 67108864 0
# (2^24 and 2^25: 2048 and 4096 tiles, 16 and 31 an SM, under and over the look-back's
# first-sleep threshold of 24 tiles an SM)
scan 1d_f32_2p24 float32 16777216 0
scan 1d_f32_2p25 float32 33554432 0
scan f32_4096x4096_d0 float32 "4096, 4096" 0
scan f32_4096x4096_d1 float32 "4096, 4096" 1
scan bf16_4096x4096_d0 bfloat16 "4096, 4096" 0
scan bf16_4096x4096_d1 bfloat16 "4096, 4096" 1
scan bf16_8192x8192_d0 bfloat16 "8192, 8192" 0
scan bf16_16384x4096_d0 bfloat16 "16384, 4096" 0
scan f16_4096x4096_d0 float16 "4096, 4096" 0
scan f64_4096x4096_d0 float64 "4096, 4096" 0
scan f64_4096x4096_d1 float64 "4096, 4096" 1
scan f32_64x131072_d1 float32 "64, 131072" 1
scan f16_32x2p20_d1 float16 "32, 1048576" 1
# (the same shape in float32: the issue names no dtype for it)
scan f32_32x2p20_d1 float32 "32, 1048576" 1
scan bf16_32x2p20_d1 bfloat16 "32, 1048576" 1
scan f32_8192x256_d0 float32 "8192, 256" 0
scan f32_2048x128_d0 float32 "2048, 128" 0
scan bf16_2048x128_d0 bfloat16 "2048, 128" 0
scan bool_2048x128_d0 bool "2048, 128" 0
# the bytes of the 1-D 2^28 case in rows of exactly one tile (8192 steps: 256 threads x
# 32 items): the same kernel and streaming with no look-back, so the gap to the 1-D
# figure is the look-back's cost
scan f32_32768x8192_d1 float32 "32768, 8192" 1
printf 'input x: bfloat16[8192, 8192]\ninput w: float32[8192]\ny = cast(cumsum(mul(cast(x, float32), w), dim=-1), bfloat16)\noutput y\n' > "$D/fused_bf16_8192.sf"
cp examples/moe_routing.sf "$D/moe_routing.sf"
cp examples/moe_routing_deepseek.sf "$D/moe_routing_deepseek.sf"
# WRITE_CASES=DIR: only write the cases' fusion files there (bench/warm_cache.sh
# compiles them into the kernel cache on a machine without a GPU)
if [ -n "${WRITE_CASES:-}" ]; then
    mkdir -p "$WRITE_CASES" && cp "$D"/*.sf "$WRITE_CASES"/ && rm -rf "$D"
    exit 0
fi
# (truncated only now: a WRITE_CASES call, as gpu_call.sh's trace stage makes after the
# table, must not wipe the table's JSON)
: > "$OUT/gpu_cli_bench.jsonl"
case " $* " in *" profile "*) profile=1 ;; *) profile=0 ;; esac
case " $* " in *" profile "*|*" moeprof "*) moeprof=1 ;; *) moeprof=0 ;; esac
[ -n "${SKIP_MOEPROF:-}" ] && moeprof=0 # SKIP_MOEPROF=1: profile the scan only
case " $* " in *" tune "*) tunes=${TUNES:-"lb_done=1 row_pipe=1"} ;; *) tunes="" ;; esac
if [ $profile = 1 ] && command -v ncu >/dev/null; then
    scan prof_scan ${PROF_DT:-float32} "${PROF_SHAPE:-67108864}" ${PROF_DIM:-0} # PROF_DT, PROF_SHAPE ("4096, 4096"), PROF_DIM: the profiled scan
    [ -n "${PROF_CASE:-}" ] && cp "$D/$PROF_CASE.sf" "$D/prof_scan.sf" # PROF_CASE=fused_bf16_8192: one of the table's cases instead
    # PROF_EXTRA: more ncu arguments (e.g. "--section ComputeWorkloadAnalysis --section InstructionStats")
    # PROF_TUNES="A B": also profile under those SCANFUSE_CUDA_TUNE variants (ncu_scan_<variant>.txt)
    for pv in default ${PROF_TUNES_SCAN:-}; do
      [ $pv = default ] && { pt=""; nf="$OUT/ncu_scan.txt"; } || { pt=$pv; nf="$OUT/ncu_scan_${pv//[=,]/_}.txt"; }
      SCANFUSE_CUDA_TUNE=$pt timeout 120 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
        --section SourceCounters --section Occupancy --section LaunchStats --section SchedulerStats ${PROF_EXTRA:-} \
        --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_op_read_hit_rate.pct,lts__t_sector_op_write_hit_rate.pct,l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct,lts__t_requests.avg,lts__t_requests.max,lts__t_sectors.avg,lts__t_sectors.max \
        --launch-skip 2 --launch-count 1 \
        "$S" bench "$D/prof_scan.sf" --device cuda --repeat 2 > "$nf" 2>&1
      echo "ncu ${pt:-default}: exit $?"; grep -E "Duration|DRAM Throughput|L1/TEX Hit|L2 Hit|dram__bytes|hit_rate|lts__t_|Registers Per|Achieved Occupancy" "$nf" | head -16
    done
    # warp-stall samples per SASS instruction of the same kernel: where the tiles wait
    timeout 120 ncu --clock-control none --section SourceCounters --section WarpStateStats --launch-skip 2 --launch-count 1 \
        --page source --print-source sass --csv \
        "$S" bench "$D/prof_scan.sf" --device cuda --repeat 2 > "$OUT/ncu_src.csv" 2>&1
    echo "ncu source: exit $?"
    python3 bench/ncu_stalls.py "$OUT/ncu_src.csv" 2>&1 | head -40
fi
# NCU_KERNEL=EXAMPLE:KERNEL (e.g. moe_routing_deepseek:k20): that kernel's memory,
# warp states, occupancy and source counters into $OUT/ncu_detail.txt
if [ -n "${NCU_KERNEL:-}" ] && command -v ncu >/dev/null; then
  timeout 150 ncu --clock-control none --kernel-name "${NCU_KERNEL#*:}" --launch-count 1 --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
      --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats \
      "$S" run "examples/${NCU_KERNEL%%:*}.sf" --device cuda > "$OUT/ncu_detail.txt" 2>&1
  echo "ncu $NCU_KERNEL: exit $?"
  grep -E "Duration|Throughput|Occupancy|Registers Per|Issue Slots|Warp Cycles Per|No Eligible|Active Warps|L1/TEX Hit|L2 Hit|Executed Ipc|Stall" "$OUT/ncu_detail.txt" | head -40
  # the warp-stall samples per SASS instruction of that kernel
  timeout 150 ncu --clock-control none --kernel-name "${NCU_KERNEL#*:}" --launch-count 1 --section SourceCounters \
      --section WarpStateStats --page source --print-source sass --csv \
      "$S" run "examples/${NCU_KERNEL%%:*}.sf" --device cuda > "$OUT/ncu_detail_src.csv" 2>&1
  echo "ncu source: exit $?"
  python3 bench/ncu_stalls.py "$OUT/ncu_detail_src.csv" 2>&1 | head -40
  # NCU_METRICS=a,b,...: those metrics of the same kernel (a separate call: a name this
  # ncu does not know fails only this one) into $OUT/ncu_metrics.txt
  if [ -n "${NCU_METRICS:-}" ]; then
    timeout 150 ncu --clock-control none --kernel-name "${NCU_KERNEL#*:}" --launch-count 1 --metrics "$NCU_METRICS" \
        "$S" run "examples/${NCU_KERNEL%%:*}.sf" --device cuda > "$OUT/ncu_metrics.txt" 2>&1
    echo "ncu metrics: exit $?"; grep -E "__|ERROR" "$OUT/ncu_metrics.txt" | head -30
  fi
fi
if [ $moeprof = 1 ] && command -v ncu >/dev/null; then
  for ex in moe_routing moe_routing_deepseek; do
    timeout 120 ncu --clock-control none --section SpeedOfLight "$S" run examples/$ex.sf --device cuda > "$OUT/ncu_$ex.txt" 2>&1
    echo "ncu $ex: exit $?"
    # where the small kernel's time goes, phase by phase (tuning small_prof: global timer)
    for pt in ${PROF_TUNES:-small_prof=1}; do
        echo "$ex under SCANFUSE_CUDA_TUNE=$pt:"
        # the first run (cold caches) and the last of a `bench` (warm, as in a pipeline)
        SCANFUSE_CUDA_TUNE=$pt timeout 60 "$S" bench examples/$ex.sf --device cuda --repeat 1 2>&1 | grep "small kernel" |
            awk '/phase 0 /{n++} n==1{first=first $0 "\n"} {if (/phase 0 /) last=""; last=last $0 "\n"}
                 END {printf "first run:\n%slast run:\n%s", first, last}' | head -60
    done
    python3 - "$OUT/ncu_$ex.txt" <<'PY'
import re, sys
name, rows = None, []
for line in open(sys.argv[1]):
    m = re.match(r"\s+(k\d+) \((\d+), 1, 1\)x\((\d+), 1, 1\)", line)
    if m: name = m.group(1) + " grid " + m.group(2) + " block " + m.group(3)
    m = re.match(r"\s+Duration\s+(\S+)\s+([\d.,]+)", line)
    if m and name:
        v = float(m.group(2).replace(",", "")); v = v / 1000 if m.group(1) == "ns" else v * 1000 if m.group(1) == "ms" else v
        rows.append((name, v)); name = None
print(sys.argv[1].split("ncu_")[-1][:-4], "kernels:", len(rows), "sum of durations %.1f us" % sum(v for _, v in rows))
for n, v in sorted(rows, key=lambda r: -r[1])[:16]: print("  %-32s %8.1f us" % (n, v))
PY
  done
fi
printf '%-22s %10s %8s %8s %7s %7s\n' case "time us" "GB/s" "copy" ratio "b2b"
for f in "$D"/*.sf; do
    c=$(basename "$f" .sf)
    case "$c" in prof_*) continue ;; esac
    # CLI_CASES=REGEX: only the cases it matches (e.g. "moe|2048x128")
    if [ -n "${CLI_CASES:-}" ] && ! echo "$c" | grep -Eq "$CLI_CASES"; then continue; fi
    line=$(timeout 120 "$S" bench "$f" --device cuda --repeat ${REPEAT:-20} --json 2>"$OUT/err.txt") || {
        echo "$c: FAILED $(tail -2 "$OUT/err.txt")"; continue; }
    echo "$line" | sed "s/^{/{\"case\": \"$c\", /" >> "$OUT/gpu_cli_bench.jsonl"
    python3 -c "import json,sys; d=json.loads(sys.argv[1]); print('%-22s %10.1f %8.0f %8.0f %7.3f %7.3f' % (sys.argv[2], d['seconds']*1e6, d['gbps'], d['copy_gbps'], d['ratio'], d.get('ratio_back_to_back', 0)))" "$line" "$c"
done
coltunes=""
[ -n "$tunes" ] && coltunes=${COLTUNES-"col_l=8 col_g=32,col_g2=1"}
for tv in $tunes $coltunes; do
    cases=${TUNE_CASES:-"1d_f32_2p28 1d_f16_2p28 1d_bf16_2p28 1d_i64_2p28 1d_i32_i64_2p28"}
    case "$tv" in col_*) cases="f32_2048x128_d0 f32_8192x256_d0 f32_4096x4096_d0 bf16_4096x4096_d0" ;; esac
    # TUNE@CASE+CASE: that variant on those cases only (e.g. row_vec=8@fused_bf16_8192)
    case "$tv" in *@*) cases=${tv#*@}; cases=${cases//+/ }; tv=${tv%%@*} ;; esac
    for c in $cases; do
        line=$(SCANFUSE_CUDA_TUNE=$tv timeout 120 "$S" bench "$D/$c.sf" --device cuda --repeat ${REPEAT:-20} --json 2>"$OUT/err.txt") || {
            echo "$c@$tv: FAILED $(tail -2 "$OUT/err.txt")"; continue; }
        echo "$line" | sed "s/^{/{\"case\": \"$c@$tv\", /" >> "$OUT/gpu_cli_bench.jsonl"
        python3 -c "import json,sys; d=json.loads(sys.argv[1]); print('%-40s %10.1f %8.0f %8.0f %7.3f %7.3f' % (sys.argv[2], d['seconds']*1e6, d['gbps'], d['copy_gbps'], d['ratio'], d.get('ratio_back_to_back', 0)))" "$line" "$c@$tv"
    done
done
rm -rf "$D"
