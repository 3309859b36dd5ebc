#!/bin/sh
# run_moe_bench.sh — the fusion benchmarks of issue 4: the MoE routing examples and the
# cast/cumsum/cast chain, fused and op by op (--no-fuse), on 1 thread and on every core.
#
#   bench/run_moe_bench.sh [SCANFUSE] [OUT.jsonl]
#
# SCANFUSE defaults to ./build/scanfuse; OUT to stdout.  Each line is `scanfuse bench
# --json` output, with "no_fuse": true added for the op-by-op runs and "loadavg" (the
# 1-minute load average just before the run: on a shared machine, what the figure is
# worth).  The ratio key compares the run with a memcpy of the floor's bytes in the
# same process (see bench/README.md); "all threads" is `--threads 0` (reported as the
# core count).  ROUNDS=N repeats everything N times (interleaved, for ranges);
# ONLY_FUSED=1 leaves out the op-by-op runs.
set -e
S=${1:-./build/scanfuse}
OUT=${2:-/dev/stdout}
DIR=$(dirname "$0")
CHAIN=$(mktemp /tmp/scanfuse_chain.XXXXXX.sf)
cat > "$CHAIN" <<'EOS'
input x: bfloat16[4096, 4096]
input w: float32[4096]
y = cast(cumsum(mul(cast(x, float32), w), dim=-1), bfloat16)
output y
EOS
load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo null; }
for r in $(seq ${ROUNDS:-1}); do
  for f in "$DIR/../examples/moe_routing.sf" "$CHAIN" "$DIR/../examples/moe_routing_deepseek.sf"; do
    for t in 1 0; do
      L=$(load)
      "$S" bench "$f" --threads $t --repeat ${REPEAT:-20} --json |
        sed "s/^{/{\"loadavg\": $L, /" >> "$OUT"
      [ -n "$ONLY_FUSED" ] && continue
      L=$(load)
      "$S" bench "$f" --threads $t --repeat ${REPEAT_NOFUSE:-3} --json --no-fuse |
        sed "s/^{/{\"no_fuse\": true, \"loadavg\": $L, /" >> "$OUT"
    done
  done
done
rm -f "$CHAIN"
