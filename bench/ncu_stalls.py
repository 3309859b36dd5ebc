#!/usr/bin/env python3
"""ncu_stalls.py — summarize Nsight Compute's source page (--page source --print-source
sass --csv) of one kernel: the SASS instructions with the most warp-stall samples, and
the samples summed by opcode, so a device run's log says where the warps wait, and
the instructions executed summed by opcode (per step with STEPS=N).
    python3 bench/ncu_stalls.py ncu_src.csv [top]
The CSV's column names differ between Nsight Compute versions: the sample columns are
found by name ("Sampling"), the instruction text by "Source"."""
import csv
import os
import sys


def opcode(text):
    """The opcode of a SASS line without its predicate and modifiers ("@P0 LDS.128 ..." -> "LDS")."""
    words = text.split()
    if not words:
        return "?"
    op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    return op.split(".")[0]


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    lines = open(path, errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if '"Source"' in l or l.startswith('"Address"')), None)
    if start is None:
        print("ncu_stalls: no source table in", path)
        print("\n".join(lines[:20]))
        return
    rows = list(csv.reader(lines[start:]))
    head = rows[0]
    src = next((i for i, h in enumerate(head) if h == "Source"), None)
    samp = [i for i, h in enumerate(head) if "Sampling" in h]
    if src is None or not samp:
        print("ncu_stalls: columns", head)
        return
    print("sample columns:", [head[i] for i in samp])
    other = [i for i, h in enumerate(head) if i not in samp and i != src]

    def num(s):
        try:
            return float(s.replace(",", ""))
        except ValueError:
            return 0.0

    data = []
    for r in rows[1:]:
        if len(r) <= max(samp + [src]):
            continue
        data.append((num(r[samp[0]]), [num(r[i]) for i in samp], r[src].strip(), r))
    total = sum(d[0] for d in data) or 1.0
    print("instructions %d, samples %d" % (len(data), total))
    print("top instructions by %s:" % head[samp[0]])
    for s, ss, text, r in sorted(data, key=lambda d: -d[0])[:top]:
        print("  %5.1f%%  %-60s %s" % (100 * s / total, text[:60], " ".join("%g" % x for x in ss)))
    by_op = {}
    for s, _, text, _ in data:
        op = opcode(text)
        by_op[op] = by_op.get(op, 0) + s
    print("samples by opcode:")
    for op, s in sorted(by_op.items(), key=lambda kv: -kv[1])[:15]:
        print("  %5.1f%%  %s" % (100 * s / total, op))
    # warp instructions executed, by opcode (the column "Instructions Executed", when
    # present); with STEPS=N in the environment also thread instructions a step
    # (32 * warp instructions / N): where an issue-bound kernel's instructions go
    ex = next((i for i, h in enumerate(head) if h == "Instructions Executed"), None)
    if ex is not None:
        by_op_x = {}
        for _, _, text, r in data:
            op = opcode(text)
            by_op_x[op] = by_op_x.get(op, 0) + num(r[ex])
        tot_x = sum(by_op_x.values()) or 1.0
        try:
            steps = float(os.environ.get("STEPS", "0") or 0)
        except ValueError:
            sys.exit("ncu_stalls: STEPS must be a number of steps, not %r" % os.environ["STEPS"])
        per = (lambda v: "  %5.2f a step" % (32 * v / steps)) if steps > 0 else (lambda v: "")
        print("warp instructions executed %d%s; by opcode:" % (tot_x, per(tot_x)))
        for op, v in sorted(by_op_x.items(), key=lambda kv: -kv[1])[:20]:
            print("  %5.1f%%  %-10s%s" % (100 * v / tot_x, op, per(v)))
    # per-reason columns when present (names like "stall_long_sb")
    reasons = [i for i in other if head[i].lower().startswith("stall") or "Stall" in head[i]]
    if reasons:
        sums = [(head[i], sum(num(r[i]) for r in rows[1:] if len(r) > i)) for i in reasons]
        print("stall columns:", ", ".join("%s %g" % kv for kv in sorted(sums, key=lambda kv: -kv[1])[:10]))


if __name__ == "__main__":
    main()
