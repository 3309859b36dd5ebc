"""Random programs (tools/random_programs.py) run on inputs of other layouts: every
output must be bit-identical to the run on contiguous copies of the same values.

The layouts: every other element of a larger buffer along one dim, the dims stored in
another order, an offset into a larger buffer, and a broadcast (stride 0) along a dim
whose values are then equal.  A backend's result depends on the values only (DESIGN.md:
bit-identical on every run), so a difference is a strided-path bug, as is an error
that the contiguous run does not raise.  bfloat16 programs are left out (NumPy has no
bfloat16 to build their inputs from), and so are bfloat16 results (scanfuse.Tensor).
"""
import os
import random
import re
import sys

import numpy as np
import pytest

import scanfuse

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
sys.path.insert(0, TOOLS)
random_programs = pytest.importorskip("random_programs")

NP = {"float32": np.float32, "float16": np.float16, "float64": np.float64, "int32": np.int32,
      "int64": np.int64, "uint8": np.uint8, "int8": np.int8, "int16": np.int16, "bool": np.bool_}
DECL = re.compile(r"^input (\w+): (\w+)\[([^\]]*)\]", re.M)


def values(r, dt, shape):
    g = np.random.default_rng(r.randrange(1 << 30))
    if dt == "bool":
        return g.integers(0, 2, shape).astype(np.bool_)
    if dt in ("float32", "float16", "float64"):
        return g.uniform(-1, 1, shape).astype(NP[dt])
    if dt == "uint8":
        return g.integers(0, 17, shape).astype(np.uint8)
    return g.integers(-8, 9, shape).astype(NP[dt])


def relayout(r, a):
    """A view holding a's values in another layout (a broadcast also makes a's values
    equal along its dim, so that the contiguous twin holds them too)."""
    if a.ndim == 0:
        return a
    k = r.random()
    if k < 0.35:
        d = r.randrange(a.ndim)
        shape = list(a.shape)
        shape[d] *= 2
        big = np.zeros(shape, a.dtype)
        sl = [slice(None)] * a.ndim
        sl[d] = slice(0, None, 2)
        big[tuple(sl)] = a
        return big[tuple(sl)]
    if k < 0.7:
        p = list(range(a.ndim))
        r.shuffle(p)
        return np.transpose(np.ascontiguousarray(np.transpose(a, p)), np.argsort(p))
    if k < 0.85:
        big = np.zeros(a.size + 3, a.dtype)
        big[3:] = a.reshape(-1)
        return big[3:].reshape(a.shape)
    d = r.randrange(a.ndim)
    if a.shape[d] < 2:
        return a
    b = np.broadcast_to(np.take(a, [0], axis=d), a.shape)
    a[...] = b
    return b


def same(x, y):
    if not isinstance(x, np.ndarray):  # a bfloat16 result: not compared
        return True
    return (x.shape == y.shape and x.dtype == y.dtype and
            np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes())


def cases(first):
    """(seed, text, [(contiguous input, the same values in another layout)]) of the
    programs of seeds first .. first + 99 that have no bfloat16 input."""
    for seed in range(first, first + 100):
        text = random_programs.Gen(seed).program()
        decls = DECL.findall(text or "")
        if not text or any(dt == "bfloat16" for _, dt, _ in decls):
            continue
        r = random.Random(seed)
        pairs = []
        for _, dt, dims in decls:
            a = values(r, dt, [int(v) for v in dims.split(",")] if dims.strip() else [])
            v = relayout(r, a)
            pairs.append((np.ascontiguousarray(a), v))
        yield seed, text, pairs


@pytest.mark.parametrize("first", [0, 100, 200])
def test_random_programs_layouts_bit_identical(first):
    compared = 0
    for seed, text, pairs in cases(first):
        prog = scanfuse.compile(text)
        want = prog.run([a for a, _ in pairs])
        got = prog.run([v for _, v in pairs])
        layouts = [(v.shape, v.strides) for _, v in pairs]
        for name in want:
            assert same(want[name], got[name]), "program %d, output %s, inputs %s:\n%s" % (
                seed, name, layouts, text)
        compared += 1
    assert compared >= 60


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def raw(torch, t):
    """t's bytes in row-major order (bfloat16 through int16: NumPy has no bfloat16)."""
    t = t.contiguous().cpu()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def to_cuda(torch, v):
    """v's values on the GPU in v's own layout (a broadcast as an expand of its one row)."""
    t = torch.from_numpy(np.ascontiguousarray(v))
    if v.ndim and 0 in v.strides and v.size:
        d = v.strides.index(0)
        return t.narrow(d, 0, 1).contiguous().cuda().expand(*v.shape)
    step = [s // v.itemsize for s in v.strides]
    g = torch.empty_strided(v.shape, step, dtype=t.dtype, device="cuda")
    g.copy_(t)
    return g


@pytest.mark.parametrize("first", [0, 100, 200])
def test_random_programs_layouts_bit_identical_on_cuda(first):
    """The same on the CUDA backend, with torch tensors of the same layouts."""
    torch = _torch_cuda()
    if torch is None:
        pytest.skip("no CUDA device through PyTorch")
    compared = 0
    for seed, text, pairs in cases(first):
        try:
            prog = scanfuse.compile(text, device="cuda")
        except scanfuse.Error as e:
            if e.status == "unsupported":
                pytest.skip("scanfuse's CUDA backend is not available: %s" % e)
            raise
        contig = [to_cuda(torch, a) for a, _ in pairs]
        other = [to_cuda(torch, v) for _, v in pairs]
        want = prog.run(contig)
        got = prog.run(other)
        layouts = [(tuple(v.shape), v.stride()) for v in other]
        for name in want:
            w, g = want[name], got[name]
            assert w.dtype == g.dtype and w.shape == g.shape, (seed, name)
            assert raw(torch, w) == raw(torch, g), "program %d, output %s, inputs %s:\n%s" % (
                seed, name, layouts, text)
        compared += 1
    assert compared >= 60
