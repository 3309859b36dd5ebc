#!/bin/sh
# run_moe_bench.sh — the fusion benchmarks of issue 4: the MoE routing examples and the
# cast/cumsum/cast chain, fused and op by op (--no-fuse), on 1 thread and on every core.
#
#   bench/run_moe_bench.sh [SCANFUSE] [OUT.jsonl]
#
# SCANFUSE defaults to ./build/scanfuse; OUT to stdout.  Each line is `scanfuse bench
# --json` output, with "no_fuse": true added for the op-by-op runs.  The ratio key
# compares the run with a memcpy of the floor's bytes in the same process (see
# bench/README.md); "all threads" is `--threads 0` (reported as the core count).
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
for f in "$DIR/../examples/moe_routing.sf" "$CHAIN" "$DIR/../examples/moe_routing_deepseek.sf"; do
  for t in 1 0; do
    "$S" bench "$f" --threads $t --repeat ${REPEAT:-20} --json >> "$OUT"
    "$S" bench "$f" --threads $t --repeat ${REPEAT_NOFUSE:-3} --json --no-fuse |
      sed 's/^{/{"no_fuse": true, /' >> "$OUT"
  done
done
rm -f "$CHAIN"
