"""scanfuse's scans on NumPy arrays against NumPy float64 / exact int64 references:
every function, dtypes, shapes (0-d, empty, odd sizes), non-contiguous views, negative
dims, exclusive/reverse, dtype=, out=."""
import numpy as np
import pytest

import scanfuse
from reference import FLOAT_DTYPES, INT_DTYPES, NUMPY_DTYPES, assert_scan_close, make_input

OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
SHAPES = [(1,), (7,), (0,), (3, 0, 2), (5, 7), (4, 3, 5), (2, 3, 4, 5), (1000,), (33, 257)]
FLAGS = [(False, False), (True, False), (False, True), (True, True)]


def call(op, x, dim, **kw):
    return getattr(scanfuse, op)(x, dim, **kw)


def dtypes_for(op):
    return FLOAT_DTYPES if op == "logcumsumexp" else NUMPY_DTYPES


@pytest.mark.parametrize("op", OPS)
def test_every_dtype_shape_dim_and_flag(op):
    rng = np.random.default_rng(1234)
    for dt in dtypes_for(op):
        for shape in SHAPES:
            x = make_input(dt, shape, rng, op)
            for dim in range(-len(shape), len(shape)):
                for exclusive, reverse in FLAGS:
                    got = call(op, x, dim, exclusive=exclusive, reverse=reverse)
                    try:
                        assert_scan_close(op, got, x, dim, exclusive=exclusive, reverse=reverse)
                    except AssertionError as e:
                        raise AssertionError("%s %s%s dim=%d exclusive=%s reverse=%s: %s" % (
                            op, dt, shape, dim, exclusive, reverse, e)) from None


@pytest.mark.parametrize("op", OPS)
def test_zero_dim(op):
    for dt in dtypes_for(op):
        x = np.array(3, dtype=dt)
        for dim in (0, -1):
            got = call(op, x, dim)
            assert_scan_close(op, got, x, dim)
            if op in ("cummax", "cummin"):
                assert got.values.shape == () and got.indices.shape == ()
            else:
                assert got.shape == ()


@pytest.mark.parametrize("op", OPS)
def test_non_contiguous_views(op):
    rng = np.random.default_rng(7)
    for dt in ("int32", "float32", "float64") if op != "logcumsumexp" else ("float32", "float64"):
        base = make_input(dt, (12, 17), rng, op)
        views = {
            "transposed": base.T,
            "sliced": base[1::3, ::2],
            "reversed": base[::-1, ::-2],
            "broadcast": np.broadcast_to(base[:1], (5, 17)),
            "3d-swap": make_input(dt, (4, 5, 6), rng, op).transpose(2, 0, 1)[:, 1:, ::2],
        }
        for name, v in views.items():
            assert not v.flags.c_contiguous
            for dim in range(-v.ndim, v.ndim):
                for exclusive, reverse in FLAGS:
                    got = call(op, v, dim, exclusive=exclusive, reverse=reverse)
                    try:
                        assert_scan_close(op, got, v, dim, exclusive=exclusive, reverse=reverse)
                    except AssertionError as e:
                        raise AssertionError("%s %s %s dim=%d: %s" % (op, dt, name, dim, e)) from None
        # the input view is not modified
        before = base.copy()
        call(op, base.T, 0)
        np.testing.assert_array_equal(base, before)


def test_cumsum_matches_numpy_exactly_for_integers():
    x = np.arange(-50, 50, dtype=np.int16).reshape(10, 10)
    np.testing.assert_array_equal(scanfuse.cumsum(x, 1), np.cumsum(x, 1, dtype=np.int64))
    np.testing.assert_array_equal(scanfuse.cumsum(x, 0), np.cumsum(x, 0, dtype=np.int64))


@pytest.mark.parametrize("op", ("cumsum", "cumprod"))
def test_dtype_argument_spellings(op):
    rng = np.random.default_rng(3)
    x = make_input("int32", (6, 9), rng, op)
    for spelling, expect in [
        ("float32", np.float32), ("f32", np.float32), ("<f4", np.float32),
        ("torch.float64", np.float64), ("numpy.float16", np.float16), ("half", np.float16),
        (np.float32, np.float32), (np.dtype("float64"), np.float64), (np.int8, np.int8),
        ("int16", np.int16), (float, np.float64), (int, np.int64), ("long", np.int64),
        ("uint8", np.uint8),
    ]:
        got = call(op, x, 1, dtype=spelling)
        assert got.dtype == np.dtype(expect), spelling
        assert_scan_close(op, got, x, 1, dtype=np.dtype(expect))
    # a float input cast to an integer result dtype (truncation first, then the scan)
    xf = rng.uniform(-4, 4, size=(5, 6))
    got = call(op, xf, 0, dtype="int32")
    assert_scan_close(op, got, xf, 0, dtype=np.int32)


def test_integer_results_wrap_like_twos_complement():
    x = np.full(300, 100, dtype=np.int16)
    got = scanfuse.cumsum(x, 0, dtype="int8")
    expect = np.cumsum(x.astype(np.int64)).astype(np.int8)
    np.testing.assert_array_equal(got, expect)
    x = np.full(70, 3, dtype=np.int64)
    np.testing.assert_array_equal(scanfuse.cumprod(x, 0), np.cumprod(x))  # wraps in int64


def test_bool_inputs():
    x = np.array([[True, False, True], [True, True, False]])
    np.testing.assert_array_equal(scanfuse.cumsum(x, 1), [[1, 1, 2], [1, 2, 2]])
    assert scanfuse.cumsum(x, 1).dtype == np.int64
    v, i = scanfuse.cummax(x, 1)
    assert v.dtype == np.bool_
    np.testing.assert_array_equal(v, [[True, True, True], [True, True, True]])
    np.testing.assert_array_equal(i, [[0, 0, 2], [0, 1, 1]])


def test_cummax_cummin_ties_and_nan():
    x = np.array([1.0, 3.0, 3.0, np.nan, 5.0, np.nan, 7.0])
    v, i = scanfuse.cummax(x, 0)
    np.testing.assert_array_equal(v, [1, 3, 3, np.nan, np.nan, np.nan, np.nan])
    np.testing.assert_array_equal(i, [0, 1, 2, 3, 3, 5, 5])
    v, i = scanfuse.cummin(np.array([2, 1, 1, 3], np.int32), 0)
    np.testing.assert_array_equal(v, [2, 1, 1, 1])
    np.testing.assert_array_equal(i, [0, 1, 2, 2])
    # reverse: indices point into the unflipped input; on ties the smaller index wins
    v, i = scanfuse.cummax(np.array([3, 1, 3, 2], np.int64), 0, reverse=True)
    np.testing.assert_array_equal(v, [3, 3, 3, 2])
    np.testing.assert_array_equal(i, [0, 2, 2, 3])
    # exclusive: the identity and index -1 first
    v, i = scanfuse.cummax(np.array([1.5, -2.0, 4.0], np.float32), 0, exclusive=True)
    np.testing.assert_array_equal(v, [-np.inf, 1.5, 1.5])
    np.testing.assert_array_equal(i, [-1, 0, 0])
    assert type(scanfuse.cummax(x, 0)).__name__ == "cummax"
    assert scanfuse.cummin(x, 0)._fields == ("values", "indices")


def test_exclusive_offsets_moe_style():
    counts = np.array([3, 0, 2, 5], dtype=np.int64)
    np.testing.assert_array_equal(scanfuse.cumsum(counts, 0, exclusive=True), [0, 3, 3, 5])
    np.testing.assert_array_equal(scanfuse.cumsum(counts, 0, reverse=True), [10, 7, 7, 5])
    np.testing.assert_array_equal(scanfuse.cumsum(counts, 0, exclusive=True, reverse=True),
                                  [7, 7, 5, 0])


def test_special_float_values():
    x = np.array([1.0, np.inf, -np.inf, 2.0], np.float32)
    got = scanfuse.cumsum(x, 0)
    assert got[0] == 1 and got[1] == np.inf and np.isnan(got[2]) and np.isnan(got[3])
    got = scanfuse.logcumsumexp(np.array([-np.inf, -np.inf, 0.0]), 0)
    np.testing.assert_array_equal(got, [-np.inf, -np.inf, 0.0])
    got = scanfuse.logcumsumexp(np.array([np.inf, np.inf]), 0)
    np.testing.assert_array_equal(got, [np.inf, np.inf])


def test_float16_cumsum_is_accurate():
    # A long float16 cumsum: accumulating in float16 would drift by whole units.
    x = np.full(4096, 0.1, dtype=np.float16)
    got = scanfuse.cumsum(x, 0)
    exact = np.cumsum(x.astype(np.float64))
    np.testing.assert_array_equal(got, exact.astype(np.float16))


def test_unaligned_and_offset_views():
    buf = np.zeros(8 * 20 + 1, np.uint8)
    x = buf[1:].view(np.float64)  # misaligned float64 data
    x[:] = np.arange(20)
    got = scanfuse.cumsum(x, 0)
    np.testing.assert_array_equal(got, np.cumsum(np.arange(20.0)))


def test_results_are_numpy_arrays_that_own_their_memory():
    x = np.arange(10.0)
    y = scanfuse.cumsum(x, 0)
    assert isinstance(y, np.ndarray)
    assert y.flags.writeable
    y[0] = 42.0  # writable, independent of the input
    assert x[0] == 0.0
    del x
    z = y.copy()
    np.testing.assert_array_equal(y, z)


def test_threads_setting_gives_identical_results():
    x = np.random.default_rng(5).normal(size=(64, 300)).astype(np.float32)
    old = scanfuse.get_num_threads()
    try:
        scanfuse.set_num_threads(1)
        a = scanfuse.cumsum(x, 1)
        scanfuse.set_num_threads(0)
        b = scanfuse.cumsum(x, 1)
    finally:
        scanfuse.set_num_threads(old)
    assert a.tobytes() == b.tobytes()


def test_program_cache_is_reused_across_strides():
    scanfuse.clear_cache()
    x = np.ones((8, 6), np.float32)
    scanfuse.cumsum(x, 1)
    scanfuse.cumsum(np.asfortranarray(x), 1)
    scanfuse.cumsum(np.ones((16, 6), np.float32)[::2], 1)
    info = scanfuse.cache_info()
    assert info["misses"] == 1 and info["hits"] == 2 and info["size"] == 1
