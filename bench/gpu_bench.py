#!/usr/bin/env python3
"""gpu_bench.py — scanfuse's CUDA backend against PyTorch (eager and torch.compile) on the
same inputs, in one run, with a device-to-device copy measured in the same run.

scanfuse is called through ctypes on libscanfuse.so (bench/gpu_run.sh builds it from the
static library), on PyTorch's tensors (DLPack layout, device memory, PyTorch's stream).
Every figure is the median of --repeat timed calls after warm-up, each call timed with
CUDA events (host launch overhead included, as PyTorch eager is measured); scanfuse is
also timed by replaying a CUDA graph of 20 calls (device time per call, no launch gaps),
and the launch-bound shapes (<= 16 MiB) also as 200 calls back to back under one pair of
events (per call, with the host's launch path where that is the slower side), PyTorch too.
Bandwidth counts the bytes of the inputs read once and the outputs written once; ratio
is bandwidth / copy bandwidth.  Before timing, every scanfuse output is checked against a
float64 (or int64) PyTorch reference; the accuracy section reports the largest relative
error of scanfuse, PyTorch on the GPU and the best possible (the exact result rounded
once), and the determinism section hashes 10 runs of a 2^28-element float32 cumsum.

Writes JSON lines to OUT/gpu_bench.jsonl (one object per case) and prints a table last.
"""
import argparse
import ctypes
import hashlib
import json
import os
import statistics
import sys
import time

import torch

# ---------------------------------------------------------------------------------------
# scanfuse through ctypes
# ---------------------------------------------------------------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DL_CODES = {torch.bool: (6, 8), torch.uint8: (1, 8), torch.int8: (0, 8), torch.int16: (0, 16),
            torch.int32: (0, 32), torch.int64: (0, 64), torch.float16: (2, 16),
            torch.bfloat16: (4, 16), torch.float32: (2, 32), torch.float64: (2, 64)}
SF_NAMES = {torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16",
            torch.int32: "int32", torch.int64: "int64", torch.float16: "float16",
            torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64"}


class Scanfuse:
    def __init__(self, lib, offsets):
        self.lib = ctypes.CDLL(lib)
        L = self.lib
        L.scanfuse_parse.restype = ctypes.c_void_p
        L.scanfuse_parse.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        L.scanfuse_fusion_status.argtypes = [ctypes.c_void_p]
        L.scanfuse_fusion_error.restype = ctypes.c_char_p
        L.scanfuse_fusion_error.argtypes = [ctypes.c_void_p]
        L.scanfuse_fusion_free.argtypes = [ctypes.c_void_p]
        L.scanfuse_options_init.argtypes = [ctypes.c_void_p]
        L.scanfuse_compile.restype = ctypes.c_void_p
        L.scanfuse_compile.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        L.scanfuse_program_status.argtypes = [ctypes.c_void_p]
        L.scanfuse_program_error.restype = ctypes.c_char_p
        L.scanfuse_program_error.argtypes = [ctypes.c_void_p]
        L.scanfuse_program_free.argtypes = [ctypes.c_void_p]
        L.scanfuse_program_num_kernels.argtypes = [ctypes.c_void_p]
        L.scanfuse_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(DLTensor), ctypes.c_int,
                                   ctypes.POINTER(DLTensor), ctypes.c_int]
        self.off = offsets  # byte offsets of scanfuse_options fields (from gpu_run.sh)

    def compile(self, text, stream, fuse=1):
        f = self.lib.scanfuse_parse(text.encode(), b"<bench>")
        if self.lib.scanfuse_fusion_status(f) != 0:
            raise RuntimeError(self.lib.scanfuse_fusion_error(f).decode())
        opts = ctypes.create_string_buffer(max(512, self.off["size"] + 64))
        self.lib.scanfuse_options_init(opts)
        ctypes.c_int.from_buffer(opts, self.off["device"]).value = 1  # SCANFUSE_DEVICE_CUDA
        ctypes.c_int.from_buffer(opts, self.off["fuse"]).value = fuse
        ctypes.c_void_p.from_buffer(opts, self.off["cuda_stream"]).value = stream.cuda_stream
        p = self.lib.scanfuse_compile(f, opts)
        self.lib.scanfuse_fusion_free(f)
        if self.lib.scanfuse_program_status(p) != 0:
            err = self.lib.scanfuse_program_error(p).decode()
            self.lib.scanfuse_program_free(p)
            raise RuntimeError(err)
        return Program(self, p)


def dl_of(t, keep):
    code, bits = DL_CODES[t.dtype]
    shape = (ctypes.c_int64 * max(1, t.dim()))(*t.shape)
    strides = (ctypes.c_int64 * max(1, t.dim()))(*t.stride())
    keep.append((shape, strides))
    return DLTensor(ctypes.c_void_p(t.data_ptr()), DLDevice(2, t.device.index or 0), t.dim(),
                    DLDataType(code, bits, 1), shape, strides, 0)


class Program:
    def __init__(self, sf, p):
        self.sf, self.p = sf, p
        self.kernels = sf.lib.scanfuse_program_num_kernels(p)

    def bind(self, inputs, outputs):
        """Prepares the DLTensor arrays once, so a call costs one ctypes call."""
        keep = []
        self.ins = (DLTensor * max(1, len(inputs)))(*[dl_of(t, keep) for t in inputs])
        self.outs = (DLTensor * max(1, len(outputs)))(*[dl_of(t, keep) for t in outputs])
        self.nin, self.nout, self.keep = len(inputs), len(outputs), keep
        # The tensors were made on PyTorch's current stream; the program runs on a pool
        # stream, which PyTorch creates non-blocking: without this wait a first run could
        # read inputs still being generated (the 2026-11-30 determinism row was measured
        # without it, see bench/NOTES.md).
        torch.cuda.synchronize()

    def __call__(self):
        st = self.sf.lib.scanfuse_run(self.p, self.ins, self.nin, self.outs, self.nout)
        if st != 0:
            raise RuntimeError(self.sf.lib.scanfuse_program_error(self.p).decode())

    def __del__(self):
        try:
            self.sf.lib.scanfuse_program_free(self.p)
        except Exception:
            pass


# ---------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------


def time_calls(fn, stream, repeat, warmup=3):
    """Median seconds of one call (CUDA events around each call, on `stream`)."""
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            fn()
        stream.synchronize()
        ts = []
        for _ in range(repeat):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(stream)
            fn()
            b.record(stream)
            ts.append((a, b))
        stream.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ts) * 1e-3


def time_graph(fn, stream, calls=20, replays=10):
    """Seconds per call when `calls` calls replay as one CUDA graph (median of replays)."""
    with torch.cuda.stream(stream):
        fn()
        stream.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=stream):
        for _ in range(calls):
            fn()
    with torch.cuda.stream(stream):
        g.replay()
        stream.synchronize()
        ts = []
        for _ in range(replays):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(stream)
            g.replay()
            b.record(stream)
            ts.append((a, b))
        stream.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ts) * 1e-3 / calls


def time_stream(fn, stream, calls=200, replays=5):
    """Seconds per call of `calls` calls issued back to back (one pair of CUDA events
    around them; median of replays): what a caller that does not wait between calls
    pays, the host's launch path included when it is slower than the kernels."""
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
        stream.synchronize()
        ts = []
        for _ in range(replays):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(stream)
            for _ in range(calls):
                fn()
            b.record(stream)
            ts.append((a, b))
        stream.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ts) * 1e-3 / calls


def copy_gbps(stream, nbytes=1 << 30, repeat=20):
    x = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    y = torch.empty_like(x)
    s = time_calls(lambda: y.copy_(x), stream, repeat)
    return 2 * nbytes / s / 1e9


_WRITE_GBPS = []


def write_gbps(stream, nbytes=1 << 30, repeat=20):
    """GB/s of a write-only stream (zero_ of 1 GiB), measured once per run: outputs-heavy
    programs (the MoE combine writes 9x what it reads at DeepSeek sizes) are bounded by
    it as much as by the copy."""
    if not _WRITE_GBPS:
        x = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda")
        _WRITE_GBPS.append(nbytes / time_calls(lambda: x.zero_(), stream, repeat) / 1e9)
        del x
    return _WRITE_GBPS[0]


# ---------------------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------------------


def rand(shape, dtype, gen):
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=torch.float32, device="cuda", generator=gen).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, device="cuda", generator=gen).bool()
    return torch.randint(-100, 100, shape, device="cuda", generator=gen).to(dtype)


def ref_cumsum(x, dim, out_dtype):
    if out_dtype.is_floating_point:
        return torch.cumsum(x.double(), dim)
    return torch.cumsum(x.long(), dim)


def check(name, y, ref, dtype, mag=None):
    """The accuracy target of DESIGN.md §1 against a float64/int64 reference: every output
    within 1 ulp of the exact result, or within 2^-40 * sum|x| (mag, the prefix sums of
    |x|) under cancellation.  Returns the largest error in ulps among the outputs that
    the 1-ulp clause covers (the others pass through the cancellation clause); raises
    when an output meets neither."""
    if not dtype.is_floating_point:
        bad = (y.long() != ref.to(dtype).long()).sum().item()
        if bad:
            raise RuntimeError(f"{name}: {bad} integer outputs differ")
        return 0.0
    yd = y.double()
    err = (yd - ref).abs()
    finfo = torch.finfo(dtype)
    ulp = torch.where(ref.abs() < finfo.tiny, torch.full_like(ref, finfo.tiny * finfo.eps),
                      torch.pow(2.0, torch.floor(torch.log2(ref.abs().clamp_min(finfo.tiny)))) * finfo.eps)
    ok_ulp = err <= ulp
    ok_mag = err <= mag * 2.0 ** -40 if mag is not None else torch.zeros_like(ok_ulp)
    bad = (~(ok_ulp | ok_mag)).sum().item()
    if bad:
        raise RuntimeError(f"{name}: {bad} outputs miss the accuracy target")
    return (err / ulp)[~ok_mag].max().item() if (~ok_mag).any() else 0.0


CASES = [
    # (label, dtype, shape, dim, out dtype)
    ("1d f32 2^28", torch.float32, (1 << 28,), 0, torch.float32),
    ("1d i64 2^28", torch.int64, (1 << 28,), 0, torch.int64),
    ("1d f16 2^28", torch.float16, (1 << 28,), 0, torch.float16),
    ("1d bf16 2^28", torch.bfloat16, (1 << 28,), 0, torch.bfloat16),
    ("1d i32->i64 2^28", torch.int32, (1 << 28,), 0, torch.int64),
    ("1d f32 2^26", torch.float32, (1 << 26,), 0, torch.float32),
    ("1d f32 2^24", torch.float32, (1 << 24,), 0, torch.float32),
    ("f32 [4096,4096] d0", torch.float32, (4096, 4096), 0, torch.float32),
    ("f32 [4096,4096] d1", torch.float32, (4096, 4096), 1, torch.float32),
    ("bf16 [4096,4096] d0", torch.bfloat16, (4096, 4096), 0, torch.bfloat16),
    ("bf16 [4096,4096] d1", torch.bfloat16, (4096, 4096), 1, torch.bfloat16),
    ("f16 [4096,4096] d0", torch.float16, (4096, 4096), 0, torch.float16),
    ("f32 [64,131072] d1", torch.float32, (64, 131072), 1, torch.float32),
    ("f16 [32,2^20] d1", torch.float16, (32, 1 << 20), 1, torch.float16),
    ("f32 [8192,256] d0", torch.float32, (8192, 256), 0, torch.float32),
    ("f32 [2048,128] d0", torch.float32, (2048, 128), 0, torch.float32),
    ("f32 [2048,128] d1", torch.float32, (2048, 128), 1, torch.float32),
    ("bf16 [2048,128] d0", torch.bfloat16, (2048, 128), 0, torch.bfloat16),
    ("bf16 [2048,128] d1", torch.bfloat16, (2048, 128), 1, torch.bfloat16),
    ("i32 [2048,128] d0", torch.int32, (2048, 128), 0, torch.int64),
    ("bool [2048,128] d0", torch.bool, (2048, 128), 0, torch.int64),
]

QUICK = {"1d f32 2^28", "1d f16 2^28", "1d i32->i64 2^28", "1d i64 2^28", "f32 [4096,4096] d0",
         "f32 [4096,4096] d1", "bf16 [4096,4096] d0", "bf16 [4096,4096] d1", "f32 [64,131072] d1",
         "f16 [32,2^20] d1", "f32 [2048,128] d0", "f32 [2048,128] d1", "bf16 [2048,128] d0",
         "bf16 [2048,128] d1"}

COMPILE_LABELS = {"1d f32 2^28", "f32 [4096,4096] d0", "f32 [2048,128] d0", "bf16 [2048,128] d0",
                  "f32 [64,131072] d1"}


def run_case(sf, stream, label, dtype, shape, dim, odt, args, copy, gen, out_rows):
    shp = ", ".join(str(s) for s in shape)
    dtn = "" if odt == (torch.int64 if not dtype.is_floating_point else dtype) else f", dtype={SF_NAMES[odt]}"
    text = f"input x: {SF_NAMES[dtype]}[{shp}]\ny = cumsum(x, dim={dim}{dtn})\noutput y\n"
    prog = sf.compile(text, stream)
    x = rand(shape, dtype, gen)
    y = torch.empty(shape, dtype=odt, device="cuda")
    prog.bind([x], [y])
    with torch.cuda.stream(stream):
        prog()
    stream.synchronize()
    mag = torch.cumsum(x.double().abs(), dim) if odt.is_floating_point else None
    err_ulps = check(label, y, ref_cumsum(x, dim, odt), odt, mag)
    del mag
    nbytes = x.numel() * x.element_size() + y.numel() * y.element_size()
    t_sf = time_calls(prog, stream, args.repeat)
    t_sfg = time_graph(prog, stream) if args.graph else None
    tx = lambda: torch.cumsum(x, dim, dtype=odt)
    t_eager = time_calls(tx, stream, args.repeat)
    # the small shapes are launch-bound: also per call when calls go back to back
    small = x.numel() * x.element_size() <= (1 << 24)
    t_sfs = time_stream(prog, stream) if small else None
    t_es = time_stream(tx, stream) if small else None
    t_comp = None
    if args.compile and label in COMPILE_LABELS:
        try:
            fc = torch.compile(lambda a: torch.cumsum(a, dim, dtype=odt))
            t_comp = time_calls(lambda: fc(x), stream, args.repeat, warmup=3)
        except Exception as e:  # torch.compile may fail on some shapes/dtypes
            print(f"torch.compile failed for {label}: {e}", file=sys.stderr)
    row = {"case": label, "dtype": SF_NAMES[dtype], "out_dtype": SF_NAMES[odt], "shape": list(shape),
           "dim": dim, "bytes": nbytes, "kernels": prog.kernels,
           "scanfuse_us": t_sf * 1e6, "scanfuse_gbps": nbytes / t_sf / 1e9,
           "scanfuse_ratio": nbytes / t_sf / 1e9 / copy,
           "scanfuse_graph_us": t_sfg * 1e6 if t_sfg else None,
           "scanfuse_graph_ratio": nbytes / t_sfg / 1e9 / copy if t_sfg else None,
           "torch_eager_us": t_eager * 1e6, "torch_eager_ratio": nbytes / t_eager / 1e9 / copy,
           "torch_compile_us": t_comp * 1e6 if t_comp else None,
           "scanfuse_stream_us": t_sfs * 1e6 if t_sfs else None,
           "torch_eager_stream_us": t_es * 1e6 if t_es else None,
           "max_err_ulps": err_ulps, "copy_gbps": copy}
    out_rows.append(row)
    return row


def fused_case(sf, stream, args, copy, gen, out_rows):
    """cumsum(cast(x, f32) * w) -> bf16 over [8192, 8192] bf16 (x, w, out bytes)."""
    n = 8192
    text = (f"input x: bfloat16[{n}, {n}]\ninput w: bfloat16[{n}, {n}]\n"
            "y = cast(cumsum(mul(cast(x, float32), w), dim=1), bfloat16)\noutput y\n")
    prog = sf.compile(text, stream)
    x, w = rand((n, n), torch.bfloat16, gen), rand((n, n), torch.bfloat16, gen)
    y = torch.empty((n, n), dtype=torch.bfloat16, device="cuda")
    prog.bind([x, w], [y])
    with torch.cuda.stream(stream):
        prog()
    stream.synchronize()
    ref = torch.cumsum(x.double() * w.double(), 1)
    err = check("fused", y, ref, torch.bfloat16, torch.cumsum((x.double() * w.double()).abs(), 1))
    nbytes = 3 * n * n * 2
    t_sf = time_calls(prog, stream, args.repeat)
    t_sfg = time_graph(prog, stream) if args.graph else None
    fe = lambda: torch.cumsum(x.float() * w, 1).to(torch.bfloat16)
    t_eager = time_calls(fe, stream, args.repeat)
    t_comp = None
    if args.compile:
        fc = torch.compile(lambda a, b: torch.cumsum(a.float() * b, 1).to(torch.bfloat16))
        t_comp = time_calls(lambda: fc(x, w), stream, args.repeat)
    row = {"case": "fused cumsum(cast(x)*w)->bf16 [8192,8192]", "bytes": nbytes, "kernels": prog.kernels,
           "scanfuse_us": t_sf * 1e6, "scanfuse_ratio": nbytes / t_sf / 1e9 / copy,
           "scanfuse_graph_us": t_sfg * 1e6 if t_sfg else None,
           "scanfuse_graph_ratio": nbytes / t_sfg / 1e9 / copy if t_sfg else None,
           "torch_eager_us": t_eager * 1e6, "torch_eager_ratio": nbytes / t_eager / 1e9 / copy,
           "torch_compile_us": t_comp * 1e6 if t_comp else None, "max_err_ulps": err, "copy_gbps": copy}
    out_rows.append(row)


def max_bf16_ulps(out, ref):
    """The largest distance of out from ref, in bfloat16 epsilons of |ref|."""
    ulp = torch.finfo(torch.bfloat16).eps * ref.float().abs().clamp_min(1e-30)
    return float(((out.float() - ref.float()).abs() / ulp).max())


def example_case(sf, stream, args, copy, gen, out_rows, path, label):
    """An example program (MoE routing): scanfuse's time on random inputs."""
    text = open(path).read()
    prog = sf.compile(text, stream)
    inputs, outputs = [], []
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("input "):
            name, rest = line[6:].split(":")
            dt, shp = rest.strip().split("[")
            shape = [int(s) for s in shp.rstrip("]").split(",") if s.strip()]
            tdt = {v: k for k, v in SF_NAMES.items()}[dt.strip()]
            inputs.append(rand(shape, tdt, gen))
    # output tensors from the program's declared outputs: compile with the reference to
    # learn shapes is not exposed; use the fusion introspection through the C API
    L = sf.lib
    L.scanfuse_fusion_num_outputs.argtypes = [ctypes.c_void_p]
    L.scanfuse_fusion_output_info.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                             ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
                                             ctypes.POINTER(ctypes.c_int64)]
    f = L.scanfuse_parse(text.encode(), b"<ex>")
    nbytes = sum(t.numel() * t.element_size() for t in inputs)
    inv = {0: torch.bool, 1: torch.uint8, 2: torch.int8, 3: torch.int16, 4: torch.int32, 5: torch.int64,
           6: torch.float16, 7: torch.bfloat16, 8: torch.float32, 9: torch.float64}
    for i in range(L.scanfuse_fusion_num_outputs(f)):
        nm, dt, nd = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int()
        shape = (ctypes.c_int64 * 8)()
        L.scanfuse_fusion_output_info(f, i, ctypes.byref(nm), ctypes.byref(dt), ctypes.byref(nd), shape)
        t = torch.empty([shape[d] for d in range(nd.value)], dtype=inv[dt.value], device="cuda")
        outputs.append(t)
        nbytes += t.numel() * t.element_size()
    L.scanfuse_fusion_free(f)
    wbytes = sum(t.numel() * t.element_size() for t in outputs)
    prog.bind(inputs, outputs)
    t_sf = time_calls(prog, stream, args.repeat)
    t_sfg = time_graph(prog, stream) if args.graph else None
    row = {"case": label, "bytes": nbytes, "kernels": prog.kernels, "scanfuse_us": t_sf * 1e6,
           "scanfuse_graph_us": t_sfg * 1e6 if t_sfg else None,
           "floor_us": nbytes / (copy * 1e9) * 1e6, "copy_gbps": copy,
           "write_gbps": write_gbps(stream), "floor_writes_us": wbytes / (write_gbps(stream) * 1e9) * 1e6}
    if label in MOE_K:  # the same program in PyTorch, on the same inputs, eager and compiled
        fn = lambda: torch_moe(inputs[0], inputs[1], MOE_K[label])  # noqa: E731
        row["torch_eager_us"] = time_calls(fn, stream, args.repeat) * 1e6
        try:
            fc = torch.compile(lambda a, b: torch_moe(a, b, MOE_K[label]))
            row["torch_compile_us"] = time_calls(lambda: fc(inputs[0], inputs[1]), stream, args.repeat) * 1e6
        except Exception as e:  # noqa: BLE001 (torch.compile may fail)
            print(f"torch.compile failed for {label}: {e}", file=sys.stderr)
        # scanfuse's outputs against PyTorch's: the routing exactly, the combine within 1 ulp
        ref = torch_moe(inputs[0], inputs[1], MOE_K[label])
        with torch.cuda.stream(stream):
            prog()
        stream.synchronize()
        same = all(torch.equal(outputs[i], ref[i]) for i in range(len(ref) - 1))
        row["routing_equal_torch"] = bool(same)
        row["combine_max_ulps_vs_torch"] = max_bf16_ulps(outputs[-1], ref[-1])
        # Where the routing differs: torch.topk leaves the order of equal logits open,
        # scanfuse's topk takes the lower expert id first (docs/OPS.md).  So: are the
        # chosen logits the same values (the differences are ties only), do scanfuse's
        # experts follow that rule exactly (a stable descending sort), and, routed by
        # scanfuse's experts, does PyTorch compute every other output the same?
        logits, k = inputs[0], MOE_K[label]
        e_sf, e_t = outputs[0], ref[0]
        row["tokens_routed_differently"] = int((e_sf != e_t).any(1).sum())
        row["routing_differs_only_at_ties"] = bool(torch.equal(logits.gather(1, e_sf), logits.gather(1, e_t)))
        stable = torch.sort(logits.float(), dim=1, descending=True, stable=True).indices[:, :k]
        row["experts_equal_stable_rule"] = bool(torch.equal(e_sf, stable))
        ref2 = torch_moe(logits, inputs[1], k, expert=e_sf)
        names = ["expert", "score", "counts", "offsets", "starts", "aligned", "perm", "inverse", "permuted"]
        row["outputs_differing_on_same_routing"] = [names[i] for i in range(len(ref2) - 1)
                                                    if not torch.equal(outputs[i], ref2[i])]
        # the router scores (sigmoid in float32): each side's distance from the float64
        # sigmoid of the same logits, in float32 ulps of it, and from each other
        exact = torch.sigmoid(logits.gather(1, e_sf).double())
        f32ulp = lambda t: (t.double() - exact).abs() / (exact.abs() * 2.0 ** -23)  # noqa: E731
        row["score_max_ulps_scanfuse"] = float(f32ulp(outputs[1]).max())
        row["score_max_ulps_torch"] = float(f32ulp(ref2[1]).max())
        row["score_differing"] = int((outputs[1] != ref2[1]).sum())
        row["combine_max_ulps_on_same_routing"] = max_bf16_ulps(outputs[-1], ref2[-1])
        print(f"{label}: scanfuse {t_sf * 1e6:.1f} us (graph {row['scanfuse_graph_us'] or 0:.1f}) | "
              f"torch eager {row['torch_eager_us']:.1f} us, compile {row.get('torch_compile_us') or 0:.1f} us; "
              f"routing equal {same} ({row['tokens_routed_differently']} tokens differ, ties only "
              f"{row['routing_differs_only_at_ties']}, lower id first {row['experts_equal_stable_rule']}), "
              f"combine {row['combine_max_ulps_vs_torch']:.2f} ulp apart; on scanfuse's routing, outputs "
              f"differing {row['outputs_differing_on_same_routing'] or 'none'}, combine "
              f"{row['combine_max_ulps_on_same_routing']:.2f} ulp; scores {row['score_differing']} differ, "
              f"from float64 {row['score_max_ulps_scanfuse']:.2f} ulp (scanfuse) / "
              f"{row['score_max_ulps_torch']:.2f} (torch)", flush=True)
    out_rows.append(row)


MOE_K = {"moe_routing": 1, "moe_routing_deepseek": 8}  # k of each MoE example


def torch_moe(logits, hidden, k, align=128, expert=None):
    """examples/moe_routing*.sf in PyTorch, output for output (the histogram by scatter_add:
    bincount would wait for the host).  expert: route by these expert ids [T, k] instead
    of torch.topk's (whose order among equal logits is unspecified)."""
    T, E = logits.shape
    H = hidden.shape[1]
    if expert is None:
        top, expert = torch.topk(logits, k, dim=1)
    else:
        top = logits.gather(1, expert)
    score = torch.sigmoid(top.float())
    pairs = expert.reshape(T * k)
    counts = torch.zeros(E, dtype=torch.int64, device=logits.device).scatter_add_(0, pairs, torch.ones_like(pairs))
    offsets = torch.cumsum(counts, 0, dtype=torch.int32)
    starts = torch.nn.functional.pad(offsets, (1, 0))
    padded = (counts + align - 1) // align * align
    aligned = torch.cumsum(padded, 0) - padded
    perm = torch.argsort(pairs, stable=True)
    inverse = torch.argsort(perm, stable=True)
    token = perm // k
    permuted = hidden.index_select(0, token)
    expert_out = permuted.index_select(0, inverse).reshape(T, k, H)
    out = (expert_out * score.reshape(T, k, 1)).sum(1).to(hidden.dtype)
    return expert, score, counts, offsets, starts, aligned, perm, inverse, permuted, out


def accuracy(sf, stream, gen, out_rows):
    """Largest relative error against float64 (positive inputs), as in ANCHORS.md."""
    for dtype, shape, dim in [(torch.float16, (65536,), 0), (torch.float16, (4096, 64), 0),
                              (torch.bfloat16, (65536,), 0), (torch.bfloat16, (4096, 64), 0),
                              (torch.float32, (4096, 64), 0)]:
        x = torch.rand(shape, device="cuda", generator=gen).to(dtype)
        ref = torch.cumsum(x.double(), dim)
        prog = sf.compile(f"input x: {SF_NAMES[dtype]}[{', '.join(map(str, shape))}]\n"
                          f"y = cumsum(x, dim={dim})\noutput y\n", stream)
        y = torch.empty(shape, dtype=dtype, device="cuda")
        prog.bind([x], [y])
        with torch.cuda.stream(stream):
            prog()
        stream.synchronize()
        rel = lambda t: ((t.double() - ref).abs() / ref.abs()).max().item()
        out_rows.append({"accuracy": f"{SF_NAMES[dtype]} {list(shape)} dim {dim}",
                         "scanfuse": rel(y), "torch_cuda": rel(torch.cumsum(x, dim)), "best": rel(ref.to(dtype))})


def determinism(sf, stream, gen, out_rows, n=1 << 28, runs=10):
    prog = sf.compile(f"input x: float32[{n}]\ny = cumsum(x, dim=0)\noutput y\n", stream)
    x = torch.randn(n, device="cuda", generator=gen)
    y = torch.empty_like(x)
    prog.bind([x], [y])
    first, same = None, True
    for _ in range(runs):
        with torch.cuda.stream(stream):
            y.fill_(float("nan"))
            prog()
            if first is None:  # on the same stream: the next fill_ must not overtake it
                first = y.clone()
        stream.synchronize()
        # bit for bit (NaN-free data)
        same = same and bool(torch.equal(y.view(torch.int32), first.view(torch.int32)))
    digest = hashlib.sha256(first.view(torch.int32)[:: 4096].cpu().numpy().tobytes()).hexdigest()[:16]
    out_rows.append({"determinism": f"float32 [{n}] cumsum x {runs}", "identical": same, "sample_hash": digest})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--offsets", required=True, help="JSON: byte offsets of scanfuse_options fields")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--compile", action="store_true", help="also time torch.compile (subset)")
    ap.add_argument("--graph", action="store_true", help="also time scanfuse by CUDA graph replay")
    ap.add_argument("--only", default="", help="run the cases whose label contains this")
    ap.add_argument("--tag", default="")
    ap.add_argument("--quick", action="store_true", help="the main cases of issue 5's table only")
    ap.add_argument("--checks-only", action="store_true",
                    help="only the accuracy and determinism sections (no timed cases)")
    args = ap.parse_args()
    sf = Scanfuse(args.lib, json.loads(open(args.offsets).read()))
    stream = torch.cuda.Stream()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    rows = []
    copy = copy_gbps(stream)
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, copy {copy:.0f} GB/s", flush=True)
    for c in ([] if args.checks_only else CASES):
        if (args.only and args.only not in c[0]) or (args.quick and c[0] not in QUICK):
            continue
        try:
            r = run_case(sf, stream, *c, args, copy, gen, rows)
            print(f"{r['case']:24s} sf {r['scanfuse_us']:9.1f} us ({r['scanfuse_ratio']:.2f})"
                  + (f" graph {r['scanfuse_graph_us']:8.1f} us ({r['scanfuse_graph_ratio']:.2f})" if r['scanfuse_graph_us'] else "")
                  + f"  eager {r['torch_eager_us']:9.1f} us ({r['torch_eager_ratio']:.2f})"
                  + (f"  compile {r['torch_compile_us']:8.1f}" if r['torch_compile_us'] else "")
                  + f"  err {r['max_err_ulps']:.2f} ulp", flush=True)
        except Exception as e:
            print(f"{c[0]}: FAILED: {e}", flush=True)
            rows.append({"case": c[0], "error": str(e)})
        torch.cuda.empty_cache()
    if not args.checks_only and (not args.only or "fused" in args.only):
        try:
            fused_case(sf, stream, args, copy, gen, rows)
        except Exception as e:
            print(f"fused: FAILED: {e}", flush=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for ex in (["moe_routing"] if args.quick else ["moe_routing", "moe_routing_deepseek", "moe_slots"]):
        path = os.path.join(root, "examples", ex + ".sf")
        if not args.checks_only and (not args.only or "moe" in args.only) and os.path.exists(path):
            try:
                example_case(sf, stream, args, copy, gen, rows, path, ex)
            except Exception as e:
                print(f"{ex}: FAILED: {e}", flush=True)
    if not args.only:
        accuracy(sf, stream, gen, rows)
        determinism(sf, stream, gen, rows)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"gpu_bench{args.tag}.jsonl"), "w") as fp:
        for r in rows:
            fp.write(json.dumps(r) + "\n")
    print("\n=== summary (ratio = GB/s / copy GB/s; us per call, median) ===")
    print(f"copy {copy:.0f} GB/s")
    for r in rows:
        if "floor_us" in r and "torch_eager_us" in r:
            print(f"{r['case'][:34]:34s} sf {r['scanfuse_us']:8.1f}"
                  + (f" g {r['scanfuse_graph_us']:8.1f}" if r.get('scanfuse_graph_us') else "")
                  + f" us, {r['kernels']} kernels, floor {r['floor_us']:.1f} us"
                  + (f" (the writes alone {r['floor_writes_us']:.1f} us at {r['write_gbps']:.0f} GB/s)"
                     if r.get('floor_writes_us') else "")
                  + f" | eager {r['torch_eager_us']:.1f}"
                  + (f" | comp {r['torch_compile_us']:.1f}" if r.get('torch_compile_us') else ""))
        elif "scanfuse_us" in r and "torch_eager_us" in r:
            g = r.get("scanfuse_graph_us")
            print(f"{r['case'][:34]:34s} sf {r['scanfuse_us']:8.1f} ({r['scanfuse_ratio']:.2f})"
                  + (f" g {g:8.1f} ({r['scanfuse_graph_ratio']:.2f})" if g else "")
                  + f" | eager {r['torch_eager_us']:8.1f} ({r['torch_eager_ratio']:.2f})"
                  + (f" | comp {r['torch_compile_us']:7.1f}" if r.get('torch_compile_us') else "")
                  + (f" | back to back sf {r['scanfuse_stream_us']:.1f} eager {r['torch_eager_stream_us']:.1f} us"
                     if r.get('scanfuse_stream_us') else ""))
        elif "scanfuse_us" in r:
            print(f"{r['case'][:34]:34s} sf {r['scanfuse_us']:8.1f}"
                  + (f" g {r['scanfuse_graph_us']:8.1f}" if r.get('scanfuse_graph_us') else "")
                  + f" us, {r['kernels']} kernels, floor {r['floor_us']:.1f} us")
        elif "accuracy" in r:
            print(f"acc {r['accuracy']:28s} sf {r['scanfuse']:.2e} torch {r['torch_cuda']:.2e} best {r['best']:.2e}")
        elif "determinism" in r:
            print(f"determinism {r['determinism']}: {'identical' if r['identical'] else 'DIFFERENT'}")
        elif "error" in r:
            print(f"{r['case']}: ERROR {r['error'][:100]}")


if __name__ == "__main__":
    main()
