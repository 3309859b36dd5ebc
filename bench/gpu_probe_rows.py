# gpu_probe_rows.py — a quick check of the row and column scan kernels on the GPU before a
# benchmark trusts them (test_cuda's part B is the full check): cumsum of every scan
# dtype over rows of several lengths (one tile, many tiles, odd lengths that end in a
# partial tile and a partial strip), inputs offset by one element (misaligned: the
# element-wise path) and aligned, inclusive and exclusive, and along dim 0 (the column
# kernels), each compared with the float64 (or int64) scan of the same data: integers
# exactly, floats within one ulp of the output dtype of the exact result (plus
# 2^-40 * sum|x| for cancellation).
#   python3 bench/gpu_probe_rows.py [--json FILE]   (after bench/gpu_run.sh has built)
#   python3 bench/gpu_probe_rows.py --write DIR   (no GPU, no torch: only writes the
#   programs as fusion files, for bench/warm_cache.sh)
import json
import os
import sys

WRITE = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--write" else None
if WRITE:
    class _Dt:  # stand-ins for the torch dtypes, names only
        def __init__(self, name, flt):
            self.name, self.is_floating_point = name, flt

    class torch:  # noqa: N801
        float16, bfloat16, float32, float64 = (_Dt(n, True) for n in ("float16", "bfloat16", "float32", "float64"))
        int32, int64 = _Dt("int32", False), _Dt("int64", False)
    SF_NAMES = {d: d.name for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64,
                                     torch.int32, torch.int64)}
else:
    import torch
    sys.path.insert(0, "bench")
    from gpu_bench import SF_NAMES, Scanfuse  # noqa: E402
    sf = Scanfuse("build-gpu/libscanfuse.so", json.loads(open("build-gpu/offsets.json").read()))
    stream = torch.cuda.Stream()
    g = torch.Generator(device="cuda")
    g.manual_seed(20261130)
CASES = [  # (input dtype, result dtype or None, rows, length)
    (torch.float32, None, 1, 1 << 22), (torch.float32, None, 3, 8192 * 5 + 7),
    (torch.float32, None, 1, 8192 * 3 + 1), (torch.float32, None, 5, 4096),
    (torch.float32, None, 7, 3001), (torch.float16, None, 1, (1 << 20) + 13),
    (torch.bfloat16, None, 2, 65536 + 5), (torch.float64, None, 1, (1 << 20) + 3),
    (torch.int64, None, 1, (1 << 21) + 9), (torch.int64, None, 3, 40000),
    (torch.int32, torch.int64, 1, (1 << 21) + 17), (torch.int32, torch.int32, 2, 70001),
]
# along dim 0 (the column kernels): (input dtype, result dtype, columns, length)
COLS = [(torch.float32, None, 37, 4096 + 3), (torch.float32, None, 256, 20000),
        (torch.bfloat16, None, 64, 9001), (torch.int64, None, 130, 3000),
        (torch.float64, None, 33, 5000)]
rows_out, bad_total = [], 0
for dt, rdt, rows, n, dim in [c + (1,) for c in CASES] + [c + (0,) for c in COLS]:
    for excl in ((False, True) if dt in (torch.float32, torch.int64) else (False,)):
        attrs = ", exclusive=true" if excl else ""
        if rdt is not None:
            attrs += ", dtype=" + SF_NAMES[rdt]
        shape = (rows, n) if dim == 1 else (n, rows)
        text = "input x: %s[%d, %d]\ny = cumsum(x, dim=%d%s)\noutput y\n" % (SF_NAMES[dt], shape[0], shape[1],
                                                                           dim, attrs)
        if WRITE:
            os.makedirs(WRITE, exist_ok=True)
            with open(os.path.join(WRITE, "probe%d.sf" % len(os.listdir(WRITE))), "w") as f:
                f.write(text)
            continue
        prog = sf.compile(text, stream)
        for offset in (0, 1):
            wide = (shape[0], shape[1] + 1)
            if dt.is_floating_point:
                base = torch.randn(wide, device="cuda", generator=g, dtype=torch.float64)
            else:
                base = torch.randint(-1000, 1000, wide, device="cuda", generator=g, dtype=torch.int64)
            xb = base.to(dt)
            x = xb[:, offset:offset + shape[1]]  # offset 1: misaligned, row stride + 1
            odt = rdt or dt
            y = torch.empty(shape, device="cuda", dtype=odt)
            prog.bind([x], [y])
            with torch.cuda.stream(stream):
                y.fill_(7)
                prog()
            stream.synchronize()
            xd = x.double() if dt.is_floating_point else x.long()
            ref = torch.cumsum(xd, dim)
            if excl:
                ref = torch.cat([torch.zeros_like(ref.narrow(dim, 0, 1)), ref.narrow(dim, 0, ref.shape[dim] - 1)], dim)
            if odt.is_floating_point:
                # one ulp of the output dtype at the exact result (frexp: |r| = m 2^e,
                # m in [0.5, 1)); float64's reference is itself a float64 scan, so its
                # check is a sanity bound
                p, emin = {torch.float16: (11, -14), torch.bfloat16: (8, -126),
                           torch.float32: (24, -126), torch.float64: (53, -1022)}[odt]
                e = torch.frexp(ref)[1].double() - 1
                ulp = torch.pow(2.0, torch.clamp(e, min=emin) - p + 1)
                slack = 2.0 ** (-30 if odt == torch.float64 else -40)
                tol = ulp + slack * torch.cumsum(xd.abs(), dim)
                bad = int(((y.double() - ref).abs() > tol).sum())
            else:
                if odt == torch.int32:
                    ref = ((ref + 2 ** 31) % 2 ** 32) - 2 ** 31
                bad = int((y.long() != ref).sum())
            bad_total += bad
            row = {"dtype": SF_NAMES[dt], "result": SF_NAMES[odt], "shape": list(shape), "dim": dim,
                   "exclusive": excl, "offset": offset, "bad": bad}
            rows_out.append(row)
            if bad:
                print("BAD", row)
        del prog
if WRITE:
    sys.exit(0)
print("gpu_probe_rows: %d cases, %d bad elements" % (len(rows_out), bad_total))
if len(sys.argv) > 2 and sys.argv[1] == "--json":
    with open(sys.argv[2], "w") as f:
        for r in rows_out:
            f.write(json.dumps(r) + "\n")
