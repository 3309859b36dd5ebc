"""CUDA tensors go to scanfuse's CUDA backend on the tensor's device, without a copy.
Skipped without a CUDA device (torch.cuda); a scanfuse built without a usable CUDA
backend raises scanfuse.Error with status 'unsupported', which these tests turn into a
skip naming the C library's message."""
import pytest

import scanfuse
from reference import exact_scan

torch = pytest.importorskip("torch", reason="PyTorch is not installed (CUDA tests use torch.cuda)")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)


def seeded(seed):
    """A CUDA random generator from a fixed seed: the same inputs on every run."""
    return torch.Generator(device="cuda").manual_seed(seed)


def run_or_skip(fn):
    try:
        return fn()
    except scanfuse.Error as e:
        if e.status in ("unsupported",):
            pytest.skip("scanfuse's CUDA backend is not available: %s" % e)
        raise


@pytest.mark.parametrize("dtype", [torch.int32, torch.float16, torch.bfloat16, torch.float32,
                                   torch.float64], ids=str)
def test_cumsum_on_cuda_matches_float64(dtype):
    x = torch.randn(64, 513, device="cuda", dtype=torch.float64, generator=seeded(5))
    x = (x * 4).to(dtype)
    y = run_or_skip(lambda: scanfuse.cumsum(x, 1))
    want = torch.cumsum(x, 1)
    assert y.device == x.device and y.dtype == want.dtype and y.shape == want.shape
    ref = torch.cumsum(x.double(), 1)
    if dtype == torch.float64:
        # DESIGN.md §1: float64 outputs within 2^-40 of the prefix's sum of magnitudes
        # (the GPU folds in double, in a fixed tree: not always closer than torch's
        # sequential sum, so torch's error is no bound here)
        ref = torch.from_numpy(exact_scan("cumsum", x.cpu().numpy(), 1)).to(x.device)
        assert bool(((y - ref).abs() <= 2.0 ** -40 * torch.cumsum(x.abs(), 1)).all())
    elif dtype.is_floating_point:
        e_ours = (y.double() - ref).abs()
        e_torch = (want.double() - ref).abs()
        assert bool((e_ours <= e_torch + torch.finfo(dtype).eps * ref.abs()).all())
    else:
        assert torch.equal(y, want)


def test_out_in_place_on_cuda():
    x = torch.randn(16, 1000, device="cuda", generator=seeded(6))
    out = torch.empty_like(x)
    ptr = out.data_ptr()
    r = run_or_skip(lambda: scanfuse.cumsum(x, 1, out=out))
    assert r is out and out.data_ptr() == ptr
    torch.testing.assert_close(out, torch.cumsum(x.double(), 1).float())


def test_scans_on_cuda():
    x = torch.randn(8, 300, device="cuda", generator=seeded(7))
    v, i = run_or_skip(lambda: scanfuse.cummax(x, 1))
    w = torch.cummax(x, 1)
    assert torch.equal(v, w.values) and torch.equal(i, w.indices)
    torch.testing.assert_close(run_or_skip(lambda: scanfuse.logcumsumexp(x, 1)),
                               torch.logcumsumexp(x, 1))


def test_cpu_program_refuses_cuda_tensors():
    prog = scanfuse.compile("input x: float32[4]\ny = cumsum(x, 0)\noutput y")
    with pytest.raises(scanfuse.Error, match="is on cuda but the program runs on the cpu"):
        prog(x=torch.ones(4, device="cuda"))


def test_cupy_arrays_if_present():
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(10, dtype=cupy.float32)
    y = run_or_skip(lambda: scanfuse.cumsum(x, 0))
    assert isinstance(y, cupy.ndarray)
    assert cupy.allclose(y, cupy.cumsum(x))
