#!/bin/bash
# A/B of session 41's test-time changes on this machine: old = 0e7304d (tools and build in
# /tmp/wt0, /tmp/wt0b), new = HEAD (/work/main, build-dev); each timed alone, in turn.
set -u
OUT=$1
t() { local s=$(date +%s.%N); "$@" > /dev/null 2>&1; local rc=$?; echo "$(echo "$(date +%s.%N) - $s" | bc) $rc"; }
emit() { echo "{\"case\": \"$1\", \"build\": \"$2\", \"seconds\": $3, \"rc\": $4, \"machine\": \"Intel Xeon (Emerald Rapids, model 207), KVM, 2 cores\"}" >> "$OUT"; echo "$1 $2 $3 rc $4"; }
for round in 1 2; do
  for b in old new; do
    if [ $b = old ]; then R=/tmp/wt0; B=/tmp/wt0b; else R=/work/main; B=/work/main/build-dev; fi
    read s rc < <(t env BUILD=$B bash $R/tools/cuda_emu/scans.sh); emit "cuda_emu scans.sh" $b $s $rc
    read s rc < <(t env BUILD=$B bash $R/tools/cuda_emu/reductions.sh); emit "cuda_emu reductions.sh" $b $s $rc
    read s rc < <(t $B/scanfuse run /work/main/examples/moe_routing.sf --device reference); emit "moe_routing --device reference" $b $s $rc
    read s rc < <(t $B/test_cli); emit "test_cli" $b $s $rc
  done
done
for b in old new; do
  rm -rf /tmp/pyab && git clone -q /work/main /tmp/pyab && (cd /tmp/pyab && git checkout -q $([ $b = old ] && echo 0e7304d || echo HEAD))
  read s rc < <(t make -C /tmp/pyab test-python); emit "make test-python (fresh clone)" $b $s $rc
done
