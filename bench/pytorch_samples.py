#!/usr/bin/env python3
"""Runs PyTorch's own OpInfo sample inputs for cumsum, cumprod, cummax, cummin and
logcumsumexp through scanfuse, and compares with PyTorch.

For every op, device (cpu, and cuda when torch.cuda is available) and dtype that
PyTorch's OpInfo lists as supported, it takes `op.sample_inputs(device, dtype)` from
torch.testing._internal.common_methods_invocations.op_db and, per sample:

  - runs PyTorch (`torch.<op>(input, *args, **kwargs)`) and scanfuse
    (`scanfuse.<op>(input, dim, dtype=...)`);
  - **dtype/shape**: the results have PyTorch's dtype and shape (values and indices for
    cummax/cummin);
  - **as close**: scanfuse's result is, element by element, at least as close to a
    float64 reference as PyTorch's.  The reference is PyTorch's own op run in float64
    on the same input, converted first to the result dtype as both libraries do
    (integer results: exact int64, then wrapped to the result dtype; cummax/cummin:
    the values and indices must equal the reference's).  For float64 results the
    reference has the same precision as the results, so a slack of
    16 * n * 2^-52 * scale is allowed (n: the scanned length; scale: the running sum
    of |x| for cumsum, |reference| otherwise).

Samples scanfuse does not take (out= variants, unknown kwargs, complex dtypes, non-tensor
inputs) are counted as skipped with a reason.  A sample scanfuse rejects or fails on is
counted as an error with the message (today every cuda sample is one: the CUDA backend
is not built yet).

Usage:
    python3 bench/pytorch_samples.py [--json results.json] [--devices cpu,cuda]
                                     [--ops cumsum,cummax] [--verbose]

Exit status: 0 when every sample that ran matched dtype/shape and was as close;
1 otherwise; 2 when PyTorch (or scanfuse) is not installed.
"""
import argparse
import collections
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import traceback

OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
TAKES_DTYPE = ("cumsum", "cumprod")
TWO_RESULTS = ("cummax", "cummin")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    ap.add_argument("--devices", default=None,
                    help="comma-separated: cpu,cuda (default: cpu, plus cuda if available)")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated subset of " + ",".join(OPS))
    ap.add_argument("--verbose", action="store_true", help="print every failing sample")
    ap.add_argument("--max-failures", type=int, default=20,
                    help="failing samples kept per row in the JSON (default 20)")
    return ap.parse_args(argv)


def git_commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or None
    except Exception:
        return None


def supported_dtypes(op, device_type):
    """The dtypes PyTorch's OpInfo lists for a device type, across torch versions."""
    try:
        return sorted(op.supported_dtypes(device_type), key=str)
    except TypeError:
        pass
    attr = "dtypes" if device_type == "cpu" else "dtypesIfCUDA"
    return sorted(getattr(op, attr, None) or op.dtypes, key=str)


def classify(torch, name, sample):
    """(dim, dtype, None) for a sample scanfuse takes, or (None, None, reason)."""
    inp = sample.input
    if not isinstance(inp, torch.Tensor):
        return None, None, "input is %s, not a tensor" % type(inp).__name__
    if inp.is_complex():
        return None, None, "complex input (out of scope)"
    if inp.layout != torch.strided:
        return None, None, "layout %s" % inp.layout
    args = list(sample.args)
    kwargs = dict(sample.kwargs)
    if "out" in kwargs:
        return None, None, "out= variant"
    dim = None
    if args:
        dim = args.pop(0)
    if "dim" in kwargs:
        if dim is not None:
            return None, None, "dim given twice"
        dim = kwargs.pop("dim")
    if dim is None:
        return None, None, "no dim"
    if not isinstance(dim, int):
        return None, None, "dim is %s (named dims)" % type(dim).__name__
    dtype = None
    if args:
        if name in TAKES_DTYPE and len(args) == 1:
            dtype = args.pop(0)
        else:
            return None, None, "extra positional args %r" % (args,)
    if "dtype" in kwargs:
        if name not in TAKES_DTYPE:
            return None, None, "dtype= kwarg on %s" % name
        dtype = kwargs.pop("dtype")
    if kwargs:
        return None, None, "kwargs %s" % ",".join(sorted(kwargs))
    if dtype is not None and dtype.is_complex:
        return None, None, "complex dtype= (out of scope)"
    return dim, dtype, None


def abs_err(torch, x, ref):
    """|x - ref| in float64, with equal values (infinities, NaN with NaN) as 0 and a NaN
    where ref is not NaN as +inf."""
    x = x.double()
    same = (x == ref) | (torch.isnan(x) & torch.isnan(ref))
    d = (x - ref).abs()
    d = torch.where(same, torch.zeros_like(d), d)
    return torch.where(torch.isnan(d), torch.full_like(d, math.inf), d)


def reference(torch, name, x, dim, dtype):
    """PyTorch's op in float64 (exact int64 for integer results) on the same input."""
    fn = getattr(torch, name)
    if name in TAKES_DTYPE:
        rdt = dtype if dtype is not None else (
            torch.int64 if (not x.is_floating_point()) else x.dtype)
    else:
        rdt = x.dtype
    xr = x.to(rdt)  # both libraries convert the input to the result dtype first
    if name in TWO_RESULTS:
        return fn(xr.double() if rdt.is_floating_point else xr.long(), dim), rdt
    if rdt.is_floating_point:
        return fn(xr.double(), dim), rdt
    return fn(xr.long(), dim).to(rdt), rdt  # wraps like two's complement


def compare(torch, name, x, dim, dtype, got, want):
    """(dtype_shape_ok, as_close_ok, detail)."""
    if name in TWO_RESULTS:
        gv, gi = got
        wv, wi = want
        ok_ds = (gv.dtype == wv.dtype and gi.dtype == wi.dtype and tuple(gv.shape) == tuple(wv.shape)
                 and tuple(gi.shape) == tuple(wi.shape))
        if not ok_ds:
            return False, False, "dtype/shape: got %s%s/%s, torch %s%s/%s" % (
                gv.dtype, tuple(gv.shape), gi.dtype, wv.dtype, tuple(wv.shape), wi.dtype)
        (rv, ri), _ = reference(torch, name, x.cpu(), dim, dtype)
        gvc, gic = gv.cpu(), gi.cpu()
        ok_v = bool((abs_err(torch, gvc, rv) == 0).all())
        ok_i = bool(torch.equal(gic, ri))
        if ok_v and ok_i:
            return True, True, ""
        # as close as torch: torch's own values and indices as the bar
        t_ok_v = bool((abs_err(torch, wv.cpu(), rv) == 0).all())
        t_ok_i = bool(torch.equal(wi.cpu(), ri))
        if (ok_v or not t_ok_v) and (ok_i or not t_ok_i):
            return True, True, "torch differs from the reference too"
        return True, False, "values %s, indices %s differ from the float64 reference" % (
            "ok" if ok_v else "NOT", "ok" if ok_i else "NOT")
    ok_ds = got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    if not ok_ds:
        return False, False, "dtype/shape: got %s%s, torch %s%s" % (
            got.dtype, tuple(got.shape), want.dtype, tuple(want.shape))
    ref, rdt = reference(torch, name, x.cpu(), dim, dtype)
    g, w = got.cpu(), want.cpu()
    if not rdt.is_floating_point:
        ok = bool(torch.equal(g, ref)) or bool(torch.equal(g, w))
        return True, ok, "" if ok else "integer result differs from the exact one"
    ref = ref.double()
    e_ours = abs_err(torch, g, ref)
    e_torch = abs_err(torch, w, ref)
    slack = torch.zeros_like(ref)
    if rdt == torch.float64 and ref.dim() > 0:
        n = ref.shape[dim] if ref.numel() else 1
        if name == "cumsum":
            scale = torch.cumsum(x.cpu().to(rdt).double().abs(), dim)
        else:
            scale = ref.abs().nan_to_num(0, posinf=0, neginf=0)
        slack = 16 * n * 2.0 ** -52 * scale
    bad = ~(e_ours <= e_torch + slack)
    if not bool(bad.any()):
        return True, True, ""
    i = int(bad.flatten().nonzero()[0])
    return True, False, "element %d: scanfuse %r, torch %r, float64 reference %r" % (
        i, float(g.flatten()[i].double()), float(w.flatten()[i].double()), float(ref.flatten()[i]))


def run(argv=None):
    args = parse_args(argv)
    try:
        import torch
        from torch.testing._internal.common_methods_invocations import op_db
    except ImportError as e:
        print("pytorch_samples: PyTorch is not installed (%s); nothing to compare with" % e,
              file=sys.stderr)
        return 2
    try:
        import scanfuse
    except ImportError as e:
        print("pytorch_samples: the scanfuse package is not installed (pip install .): %s" % e,
              file=sys.stderr)
        return 2

    ops = [o for o in args.ops.split(",") if o]
    for o in ops:
        if o not in OPS:
            print("pytorch_samples: unknown op %r (ops: %s)" % (o, ", ".join(OPS)), file=sys.stderr)
            return 2
    if args.devices:
        devices = [d for d in args.devices.split(",") if d]
    else:
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    if "cuda" in devices and not torch.cuda.is_available():
        print("pytorch_samples: --devices cuda but torch.cuda is not available", file=sys.stderr)
        return 2

    opinfos = collections.defaultdict(list)
    for op in op_db:
        if op.name in ops and not getattr(op, "variant_test_name", ""):
            opinfos[op.name].append(op)
    rows = []
    for device in devices:
        for name in ops:
            if not opinfos.get(name):
                rows.append({"device": device, "op": name, "dtype": None, "samples": 0,
                             "note": "no OpInfo entry named %s in this torch" % name})
                continue
            for op in opinfos[name]:
                for dtype in supported_dtypes(op, device):
                    rows.append(run_row(torch, scanfuse, op, name, device, dtype, args))
    print_table(rows)
    totals = collections.Counter()
    for r in rows:
        for k in ("samples", "ran", "skipped", "errors", "dtype_shape_match", "as_close"):
            totals[k] += r.get(k, 0)
    ok = totals["ran"] > 0 and all(
        r.get("dtype_shape_match", 0) == r.get("ran", 0) and r.get("as_close", 0) == r.get("ran", 0)
        for r in rows)
    print("\ntotal: %d samples, %d ran, %d skipped, %d errors, %d dtype/shape matched, "
          "%d at least as close as PyTorch" % (totals["samples"], totals["ran"], totals["skipped"],
                                               totals["errors"], totals["dtype_shape_match"],
                                               totals["as_close"]))
    if args.json:
        doc = {
            "what": "PyTorch OpInfo samples through scanfuse",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "commit": git_commit(),
            "torch": torch.__version__,
            "torch_cuda": getattr(torch.version, "cuda", None),
            "scanfuse": scanfuse.__version__,
            "python": platform.python_version(),
            "machine": platform.platform(),
            "gpu": torch.cuda.get_device_name(0) if "cuda" in devices else None,
            "devices": devices,
            "criteria": {
                "dtype_shape_match": "result dtype and shape equal PyTorch's",
                "as_close": "every element at least as close to a float64 reference (PyTorch "
                            "in float64 on the input converted to the result dtype) as "
                            "PyTorch's; float64 results get a slack of 16*n*2^-52*scale; "
                            "integer results and cummax/cummin must be exact",
            },
            "totals": dict(totals),
            "all_ok": ok,
            "rows": rows,
        }
        d = os.path.dirname(os.path.abspath(args.json))
        os.makedirs(d, exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=False)
            f.write("\n")
        print("wrote %s" % args.json)
    return 0 if ok else 1


def run_row(torch, scanfuse, op, name, device, dtype, args):
    row = {"device": device, "op": name, "dtype": str(dtype).replace("torch.", ""),
           "samples": 0, "ran": 0, "skipped": 0, "errors": 0, "dtype_shape_match": 0,
           "as_close": 0, "skip_reasons": collections.Counter(), "error_messages": collections.Counter(),
           "failures": []}
    torch_fn = getattr(torch, name)
    ours_fn = getattr(scanfuse, name)
    try:
        samples = list(op.sample_inputs(device, dtype, requires_grad=False))
    except Exception as e:  # a torch that cannot make samples for this dtype
        row["note"] = "sample_inputs failed: %s" % e
        samples = []
    for sample in samples:
        row["samples"] += 1
        if dtype.is_complex:
            row["skipped"] += 1
            row["skip_reasons"]["complex dtype (out of scope)"] += 1
            continue
        dim, sdtype, reason = classify(torch, name, sample)
        if reason:
            row["skipped"] += 1
            row["skip_reasons"][reason] += 1
            continue
        x = sample.input.detach()
        desc = "%s%s dim=%d%s" % (str(x.dtype).replace("torch.", ""), list(x.shape), dim,
                                  "" if sdtype is None else " dtype=%s" % sdtype)
        try:
            kw = {"dtype": sdtype} if sdtype is not None else {}
            want = torch_fn(x, dim, **kw)
        except Exception as e:
            row["skipped"] += 1
            row["skip_reasons"]["torch raised: %s" % str(e).split("\n")[0][:120]] += 1
            continue
        try:
            got = ours_fn(x, dim, **kw)
            if device == "cuda":
                torch.cuda.synchronize()
        except scanfuse.Error as e:
            row["errors"] += 1
            row["error_messages"][str(e)[:200]] += 1
            continue
        except Exception as e:  # a bug in the binding: count it, keep going
            row["errors"] += 1
            row["error_messages"]["%s: %s" % (type(e).__name__, str(e)[:160])] += 1
            if args.verbose:
                traceback.print_exc()
            continue
        row["ran"] += 1
        ds_ok, close_ok, detail = compare(torch, name, x, dim, sdtype, got, want)
        row["dtype_shape_match"] += ds_ok
        row["as_close"] += close_ok
        if not (ds_ok and close_ok):
            if len(row["failures"]) < args.max_failures:
                row["failures"].append({"sample": desc, "detail": detail})
            if args.verbose:
                print("FAIL %s %s %s: %s" % (device, name, desc, detail))
    row["skip_reasons"] = dict(row["skip_reasons"])
    row["error_messages"] = dict(row["error_messages"])
    return row


def print_table(rows):
    head = ("device", "op", "dtype", "samples", "ran", "skipped", "errors", "dtype/shape", "as close")
    lines = [head]
    for r in rows:
        lines.append((r["device"], r["op"], str(r["dtype"]), str(r.get("samples", 0)),
                      str(r.get("ran", 0)), str(r.get("skipped", 0)), str(r.get("errors", 0)),
                      str(r.get("dtype_shape_match", 0)), str(r.get("as_close", 0))))
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    for k, l in enumerate(lines):
        print("  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(l, widths))))
        if k == 0:
            print("  ".join("-" * w for w in widths))
    notes = collections.Counter()
    for r in rows:
        for reason, n in r.get("skip_reasons", {}).items():
            notes["skipped: " + reason] += n
        for msg, n in r.get("error_messages", {}).items():
            notes["error: " + msg] += n
        if r.get("note"):
            notes["note: " + r["note"]] += 1
    if notes:
        print()
        for msg, n in notes.most_common():
            print("%5d  %s" % (n, msg))


if __name__ == "__main__":
    sys.exit(run())
