#!/usr/bin/env python3
"""torch_prod_ref.py: PyTorch's side of bench/prod_bench.sh on a CUDA GPU.

Times torch.cumprod, torch.cummax, torch.cummin, the reductions (torch.prod, sum, amax,
mean, argmax) and the pointwise expressions (eager: one kernel an op; with --compile
also torch.compile, which fuses them) on prod_bench.sh's cuda cases, CUDA events,
median of --repeat calls after 3 warm-up calls, each beside a device-to-device copy of
the same bytes (inputs read plus outputs written, as `scanfuse bench` counts them)
timed in the same process, and prints a table and one JSON line per case and
implementation (--json appends them to a file).  Needs PyTorch with CUDA.
    python3 bench/torch_prod_ref.py [--repeat N] [--json FILE] [--cases REGEX] [--compile]
"""
import argparse
import json
import re
import sys

import torch

BIG, SIDE = 1 << 26, 4096
# (label, op, dtype, shape, dim): the labels of prod_bench.sh
CASES = [
    ("cumprod_1d_f32", "cumprod", torch.float32, (BIG,), 0),
    ("cumprod_1d_bf16", "cumprod", torch.bfloat16, (BIG,), 0),
    ("cumprod_1d_f64", "cumprod", torch.float64, (BIG,), 0),
    ("cumprod_sq_f32_d0", "cumprod", torch.float32, (SIDE, SIDE), 0),
    ("cumprod_sq_f32_d1", "cumprod", torch.float32, (SIDE, SIDE), 1),
    ("cumprod_2048x128_f32_d0", "cumprod", torch.float32, (2048, 128), 0),
    ("cummax_1d_f32", "cummax", torch.float32, (BIG,), 0),
    ("cummax_1d_f64", "cummax", torch.float64, (BIG,), 0),
    ("cummin_1d_i32", "cummin", torch.int32, (BIG,), 0),
    ("cummax_sq_f32_d0", "cummax", torch.float32, (SIDE, SIDE), 0),
    ("cummax_sq_f32_d1", "cummax", torch.float32, (SIDE, SIDE), 1),
    ("cummax_sq_f64_d0", "cummax", torch.float64, (SIDE, SIDE), 0),
    ("prod_sq_f32_d0", "prod", torch.float32, (SIDE, SIDE), 0),
    ("prod_sq_f32_d1", "prod", torch.float32, (SIDE, SIDE), 1),
    ("sum_1d_f32", "sum", torch.float32, (BIG,), None),
    ("sum_sq_f32_d0", "sum", torch.float32, (SIDE, SIDE), 0),
    ("sum_sq_f32_d1", "sum", torch.float32, (SIDE, SIDE), 1),
    ("sum_sq_bf16_d0", "sum", torch.bfloat16, (SIDE, SIDE), 0),
    ("sum_sq_bf16_d1", "sum", torch.bfloat16, (SIDE, SIDE), 1),
    ("sum_2048x128_f32_d0", "sum", torch.float32, (2048, 128), 0),
    ("sum_2048x128_f32_d1", "sum", torch.float32, (2048, 128), 1),
    ("max_sq_f32_d0", "amax", torch.float32, (SIDE, SIDE), 0),
    ("max_sq_f32_d1", "amax", torch.float32, (SIDE, SIDE), 1),
    ("mean_sq_bf16_d1", "mean", torch.bfloat16, (SIDE, SIDE), 1),
    ("argmax_sq_f32_d1", "argmax", torch.float32, (SIDE, SIDE), 1),
    ("sum_sq_i32_d1", "sum", torch.int32, (SIDE, SIDE), 1),
    ("pw_exp_1d_f32", "exp", torch.float32, (BIG,), None),
    ("pw_muladd_f32", "muladd", torch.float32, (SIDE, SIDE), None),
    ("pw_muladd_bc_f32", "muladd_bc", torch.float32, (SIDE, SIDE), None),
    ("pw_cast_bf16", "cast2", torch.bfloat16, (BIG,), None),
    ("pw_add_1d_i64", "add3", torch.int64, (BIG,), None),
]
# reductions: the output's element size (torch.sum of int32 gives int64, argmax int64;
# scanfuse's sum of int32 is int64 as well)
REDUCTIONS = {"prod", "sum", "amax", "mean", "argmax"}
# pointwise (x * w + 1.5 with w of x's shape or broadcast along the rows; a bfloat16
# cast chain as scanfuse computes it; moved bytes: inputs plus the output)
POINTWISE = {"exp", "muladd", "muladd_bc", "cast2", "add3"}


def median_seconds(fn, repeat):
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    times.sort()
    return times[len(times) // 2]


def make_input(dtype, shape, gen):
    if dtype.is_floating_point:  # near 1, so products stay finite for a while
        return (1.0 + 0.001 * torch.randn(shape, generator=gen, device="cuda")).to(dtype)
    return torch.randint(-1000, 1000, shape, generator=gen, device="cuda", dtype=dtype)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", default="")
    ap.add_argument("--cases", default="", help="only the cases this regular expression finds")
    ap.add_argument("--compile", action="store_true",
                    help="also time torch.compile of each case (a compile of ~5-20 s a case)")
    args = ap.parse_args()
    try:
        re.compile(args.cases)
    except re.error as e:
        print("torch_prod_ref: --cases %r is not a regular expression: %s" % (args.cases, e), file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_prod_ref: no CUDA device", file=sys.stderr)
        return 1
    gen = torch.Generator(device="cuda")
    gen.manual_seed(35)
    rows = []
    print("%-26s %-13s %12s %12s %8s" % ("case", "impl", "torch (us)", "copy (us)", "ratio"))
    for label, op, dtype, shape, dim in CASES:
        if not re.search(args.cases, label):
            continue
        x = make_input(dtype, shape, gen)
        if op == "cumprod":
            fn = lambda: torch.cumprod(x, dim)
            out_bytes = x.numel() * x.element_size()
        elif op in POINTWISE:
            w = make_input(dtype, shape if op == "muladd" else shape[-1:], gen)
            fn = {"exp": lambda: torch.exp(x), "muladd": lambda: x * w + 1.5, "muladd_bc": lambda: x * w + 1.5,
                  "cast2": lambda: (x.float() * 2.0).bfloat16(), "add3": lambda: x + 3}[op]
            out_bytes = x.numel() * x.element_size()
            if op.startswith("muladd"):  # the second input too, as scanfuse counts it
                out_bytes += w.numel() * w.element_size()
        elif op in REDUCTIONS:
            f = getattr(torch, op)
            fn = (lambda: f(x)) if dim is None else (lambda: f(x, dim))
            y = fn()
            out_bytes = y.numel() * y.element_size()
            del y
        else:  # values and int64 indices
            f = torch.cummax if op == "cummax" else torch.cummin
            fn = lambda: f(x, dim)
            out_bytes = x.numel() * (x.element_size() + 8)
        moved = x.numel() * x.element_size() + out_bytes
        src = torch.empty(moved // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        impls = [("torch_eager", fn)]
        if args.compile:  # a function of its own, so each case compiles once
            impls.append(("torch_compile", torch.compile(lambda: fn())))
        for impl, f_ in impls:
            t = median_seconds(f_, args.repeat)
            tc = median_seconds(lambda: dst.copy_(src), args.repeat)
            rec = {"case": label, "impl": impl, "torch": torch.__version__, "seconds": t,
                   "copy_seconds": tc, "moved_bytes": moved, "ratio": tc / t,
                   "device": torch.cuda.get_device_name()}
            rows.append(rec)
            print("%-26s %-13s %12.1f %12.1f %8.3f" % (label, impl, t * 1e6, tc * 1e6, tc / t))
        del x, src, dst
    if args.json:
        with open(args.json, "a") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
