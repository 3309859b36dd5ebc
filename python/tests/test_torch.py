"""scanfuse against PyTorch's own CPU results, where torch is installed."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")

import numpy as np  # noqa: E402

import scanfuse  # noqa: E402
from reference import exact_scan  # noqa: E402

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def make(dtype, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    if not dtype.is_floating_point:
        return torch.randint(-5 if dtype != torch.uint8 else 0, 6, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def close_or_better(got, ours_ref, theirs, slack=None):
    """scanfuse must be at least as close to the float64 reference as torch (or exact),
    give or take one ulp of the result, or `slack` (per element) where given."""
    ref = ours_ref.double()
    e_ours = (got.double() - ref).abs().nan_to_num(0)
    e_torch = (theirs.double() - ref).abs().nan_to_num(0)
    tol = torch.finfo(got.dtype).eps * ref.abs().nan_to_num(0) + 1e-300 if got.dtype.is_floating_point else 0
    if slack is not None:
        tol = torch.maximum(torch.as_tensor(tol, dtype=torch.float64), slack)
    assert bool((e_ours <= e_torch + tol).all())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_cumsum_cumprod_match_torch(op, dtype):
    for shape in [(), (0,), (7,), (5, 9), (3, 4, 5)]:
        x = make(dtype, shape)
        for dim in range(-max(1, len(shape)), max(1, len(shape))):
            want = getattr(torch, op)(x, dim)
            got = getattr(scanfuse, op)(x, dim)
            assert isinstance(got, torch.Tensor)
            assert got.dtype == want.dtype and got.shape == want.shape
            if dtype.is_floating_point:
                # float64: the exact scan rounded once (torch's own float64 scan rounds
                # at every step, so it is no reference for a float64 result)
                ref = (torch.from_numpy(exact_scan(op, x.double().numpy(), dim))
                       if x.dim() and dtype == torch.float64 else getattr(torch, op)(x.double(), dim))
                # float64 cumsum: the contract of DESIGN.md §1 is 2^-40 * sum|x| (blocks
                # are summed in double, carries in double-double), not 1 ulp
                slack = (torch.cumsum(x.double().abs(), dim) * 2.0 ** -40
                         if op == "cumsum" and dtype == torch.float64 else None)
                close_or_better(got, ref, want, slack)
            else:
                assert torch.equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_match_torch(op, dtype):
    for shape in [(), (0,), (9,), (6, 7)]:
        x = make(dtype, shape, seed=3)
        if dtype.is_floating_point and x.numel() > 2:
            x.view(-1)[2] = float("nan")
        for dim in range(-max(1, len(shape)), max(1, len(shape))):
            want = getattr(torch, op)(x, dim)
            got = getattr(scanfuse, op)(x, dim)
            assert got.values.dtype == want.values.dtype and got.indices.dtype == torch.int64
            assert torch.equal(got.values.nan_to_num(123.0), want.values.nan_to_num(123.0))
            assert torch.equal(got.indices, want.indices)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_logcumsumexp_matches_torch(dtype):
    x = make(dtype, (6, 40), seed=4) * 4
    for dim in (0, 1, -1):
        want = torch.logcumsumexp(x, dim)
        got = scanfuse.logcumsumexp(x, dim)
        assert got.dtype == want.dtype and got.shape == want.shape
        close_or_better(got, torch.logcumsumexp(x.double(), dim), want)


def test_dtype_argument_takes_torch_dtypes():
    x = make(torch.int32, (4, 5))
    for dt in (torch.float16, torch.bfloat16, torch.float64, torch.int8):
        got = scanfuse.cumsum(x, 1, dtype=dt)
        want = torch.cumsum(x, 1, dtype=dt)
        assert got.dtype == want.dtype
        if not dt.is_floating_point:
            assert torch.equal(got, want)


def test_bfloat16_is_more_accurate_than_bf16_accumulation():
    x = torch.full((4096,), 0.01, dtype=torch.bfloat16)
    got = scanfuse.cumsum(x, 0)
    exact = torch.cumsum(x.double(), 0)
    assert got.dtype == torch.bfloat16
    assert torch.equal(got, exact.to(torch.bfloat16))


def test_out_in_place_same_data_ptr():
    x = make(torch.float32, (8, 33))
    out = torch.empty(8, 33)
    ptr = out.data_ptr()
    r = scanfuse.cumsum(x, 1, out=out)
    assert r is out and out.data_ptr() == ptr
    torch.testing.assert_close(out, torch.cumsum(x.double(), 1).float())
    v, i = torch.empty(8, 33), torch.empty(8, 33, dtype=torch.int64)
    scanfuse.cummax(x, 0, out=(v, i))
    want = torch.cummax(x, 0)
    assert torch.equal(v, want.values) and torch.equal(i, want.indices)


def test_non_contiguous_torch_views():
    x = make(torch.float64, (10, 12))
    for v in (x.t(), x[::2, 1::3], x.expand(3, 10, 12)[1]):
        for dim in (0, 1):
            torch.testing.assert_close(scanfuse.cumsum(v, dim), torch.cumsum(v, dim))


def test_results_share_memory_with_scanfuse_buffers():
    y = scanfuse.cumsum(torch.ones(5), 0)
    y2 = torch.from_dlpack(y)  # torch tensors re-export fine
    assert y2.data_ptr() == y.data_ptr()


def test_errors_with_torch_inputs():
    with pytest.raises(scanfuse.Error, match="complex dtypes are not supported"):
        scanfuse.cumsum(torch.ones(3, dtype=torch.complex64), 0)
    with pytest.raises(scanfuse.Error, match="dim 2 out of range"):
        scanfuse.cumsum(torch.ones(3, 4), 2)
    with pytest.raises(scanfuse.Error, match="complex"):
        scanfuse.cumsum(torch.ones(3), 0, dtype=torch.complex128)
