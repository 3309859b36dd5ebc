#!/usr/bin/env python3
"""lb_trace.py — where a look-back row scan's tiles spend their time.

Reads the records that SCANFUSE_CUDA_TUNE=lb_trace=1 makes the row-scan kernel write
and the backend dumps to $SCANFUSE_CUDA_TRACE (one 32-byte record a tile, in tile
order: global-timer start and end in ns, the SM cycles of three phases, the SM id):

  phase 1  start of the block's tile .. its loads done and pass one folded
  phase 2  the look-back (waiting for the aggregates of the tiles before it)
  phase 3  pass two (the outputs written) and the barrier after it

Prints the phase times (cycles turned to ns by the cycles/ns the records themselves
give), how many tiles were in flight on average (sum of tile lifetimes over the
kernel's span), and how far the tiles before a tile were from done when it started
(the 256 tile numbers before it: across row ends too, where rows are shorter).

With --timeline BYTES (the bytes a tile reads, and writes: 32768 for the staged 1-D
tiles), also the memory traffic over time in 2 us bins, each tile's reads spread over its
phase 1 and its writes over its phase 3 (an estimate: phase 1 includes pass one's
arithmetic), and what the kernel's span exceeds the time its bytes take at the rate of
the middle half of the span (the start and the end's cost).

  python3 bench/lb_trace.py TRACE [--json OUT.json] [--label NAME] [--timeline BYTES]
"""
import argparse
import json
import struct
import sys


def pct(xs, p):
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100.0 * len(s)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--json")
    ap.add_argument("--label", default="")
    ap.add_argument("--timeline", type=int, default=0)
    a = ap.parse_args()
    raw = open(a.trace, "rb").read()
    n = len(raw) // 32
    recs = [struct.unpack_from("<QQIIII", raw, 32 * i) for i in range(n)]
    recs = [r for r in recs if r[1] > r[0] > 0]
    if not recs:
        print("no records in", a.trace)
        return 1
    t0 = min(r[0] for r in recs)
    span = max(r[1] for r in recs) - t0
    life = [r[1] - r[0] for r in recs]
    cyc = [r[2] + r[3] + r[4] for r in recs]
    # cycles per ns from the records (the SM clock), over tiles long enough to matter
    clk = sum(cyc) / max(1, sum(life))
    ph = [[r[2 + i] / clk for r in recs] for i in range(3)]
    sms = len(set(r[5] for r in recs))
    inflight = sum(life) / span
    # A tile's aggregate is ready at start + phase 1; for each tile, the latest of those
    # among the 256 tiles before it, less its own start: what the look-back can at best
    # wait for (the real wait adds the polls' round trips).
    ready = [r[0] + r[2] / clk for r in recs]
    lag = []
    for i in range(1, len(recs)):
        lo = max(0, i - 256)
        lag.append(max(ready[lo:i]) - ready[i])
    starts = sorted(r[0] for r in recs)
    gaps = [starts[i + 1] - starts[i] for i in range(len(starts) - 1)]
    out = {
        "label": a.label, "tiles": len(recs), "span_us": span / 1e3, "sms": sms,
        "clock_ghz": clk, "tiles_in_flight": inflight, "per_sm": inflight / max(1, sms),
        "ns_per_tile": span / len(recs),
        "life_ns": {p: pct(life, p) for p in (10, 50, 90, 99)},
        "phase_ns": {name: {p: pct(ph[i], p) for p in (10, 50, 90, 99)}
                     for i, name in enumerate(("load_pass1", "lookback", "pass2"))},
        "phase_mean_ns": {name: sum(ph[i]) / len(ph[i]) for i, name in enumerate(("load_pass1", "lookback", "pass2"))},
        "own_ready_minus_latest_before_ns": {p: pct(lag, p) for p in (10, 50, 90, 99)},
        "start_gap_ns": {p: pct(gaps, p) for p in (50, 90, 99)},
    }
    print("%s: %d tiles on %d SMs in %.1f us (%.2f ns a tile), clock %.2f GHz, %.1f tiles in flight (%.2f an SM)"
          % (a.label or a.trace, len(recs), sms, span / 1e3, span / len(recs), clk, inflight, inflight / max(1, sms)))
    print("  %-12s %9s %9s %9s %9s %9s" % ("ns", "mean", "p10", "p50", "p90", "p99"))
    for i, name in enumerate(("load_pass1", "lookback", "pass2")):
        print("  %-12s %9.0f %9.0f %9.0f %9.0f %9.0f" % (name, out["phase_mean_ns"][name], *[pct(ph[i], p) for p in (10, 50, 90, 99)]))
    print("  %-12s %9.0f %9.0f %9.0f %9.0f %9.0f" % ("lifetime", sum(life) / len(life), *[pct(life, p) for p in (10, 50, 90, 99)]))
    print("  %-12s %9s %9.0f %9.0f %9.0f %9.0f" % ("lag", "", *[pct(lag, p) for p in (10, 50, 90, 99)]))
    print("  (lag: latest aggregate-ready time of the 256 tiles before, less the tile's own; "
          "start gaps p50/p90/p99 %.0f/%.0f/%.0f ns)" % tuple(pct(gaps, p) for p in (50, 90, 99)))
    if a.timeline:
        out["timeline"] = timeline(recs, t0, clk, a.timeline)
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps(out) + "\n")
    return 0


def timeline(recs, t0, clk, tb, bin_ns=2000):
    """Read and write GB/s in bins of bin_ns (printed: the first and last 12 bins)."""
    t1 = max(r[1] for r in recs)
    nb = (t1 - t0) // bin_ns + 1
    rd, wr = [0.0] * nb, [0.0] * nb

    def spread(arr, lo, hi, nbytes):
        hi = max(hi, lo + 1)
        rate = nbytes / (hi - lo)
        i = int(lo // bin_ns)
        while i * bin_ns < hi and i < nb:
            arr[i] += rate * (min(hi, (i + 1) * bin_ns) - max(lo, i * bin_ns))
            i += 1

    for r in recs:
        s, e = r[0] - t0, r[1] - t0
        spread(rd, s, s + r[2] / clk, tb)
        spread(wr, e - r[4] / clk, e, tb)
    tot = [(rd[i] + wr[i]) / bin_ns for i in range(nb)]
    mid = tot[nb // 4: 3 * nb // 4] or tot
    steady = sum(mid) / len(mid)
    ideal = 2.0 * tb * len(recs) / steady
    print("  timeline (GB/s in %d ns bins: read, write):" % bin_ns)
    for i in list(range(min(nb, 12))) + list(range(max(12, nb - 12), nb)):
        print("  %8.0f us %6.0f %6.0f" % (i * bin_ns / 1e3, rd[i] / bin_ns, wr[i] / bin_ns))
    print("  middle half of the span %.0f GB/s; its bytes at that rate %.1f us, span %.1f us: start and end cost %.1f us"
          % (steady, ideal / 1e3, (t1 - t0) / 1e3, (t1 - t0 - ideal) / 1e3))
    return {"bin_ns": bin_ns, "read_gbps": [x / bin_ns for x in rd], "write_gbps": [x / bin_ns for x in wr],
            "steady_gbps": steady, "overhead_us": (t1 - t0 - ideal) / 1e3}


if __name__ == "__main__":
    sys.exit(main())
