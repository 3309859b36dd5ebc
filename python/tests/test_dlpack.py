"""The DLPack protocol, both directions: consuming versioned and legacy capsules
(renaming, deleters, versions, flags), exporting scanfuse.Tensor results, bfloat16,
and out= writing in place without a copy."""
import gc
import sys

import numpy as np
import pytest

import scanfuse
from dlpack_producer import (CtypesProducer, Wrapper, bfloat16_to_float32, capsule_name,
                             numpy_of)

READ_ONLY = 1


# ---------------------------------------------------------------------------------
# consuming
# ---------------------------------------------------------------------------------

def test_versioned_capsule_is_renamed_and_deleted_once():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    p = CtypesProducer(a, versioned=True)
    y = scanfuse.cumsum(p, 1)
    np.testing.assert_array_equal(np.from_dlpack(y), np.cumsum(a, 1))
    assert len(p.capsules) == 1
    assert capsule_name(p.capsules[0]) == "used_dltensor_versioned"
    assert p.deleted == 1


def test_legacy_producer_falls_back_to_legacy_capsule():
    a = np.arange(10, dtype=np.int32)
    p = CtypesProducer(a, versioned=False, legacy_signature=True)
    y = scanfuse.cumsum(p, 0)
    np.testing.assert_array_equal(np.from_dlpack(y), np.cumsum(a))
    assert capsule_name(p.capsules[-1]) == "used_dltensor"
    assert p.deleted == 1


def test_legacy_capsule_from_a_versioned_signature():
    # A producer that takes max_version but still answers with a legacy capsule.
    p = CtypesProducer(np.ones(5), versioned=False)
    assert list(np.from_dlpack(scanfuse.cumsum(p, 0))) == [1, 2, 3, 4, 5]
    assert capsule_name(p.capsules[-1]) == "used_dltensor" and p.deleted == 1


def test_null_strides_mean_compact():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    p = CtypesProducer(a, null_strides=True)
    np.testing.assert_array_equal(np.from_dlpack(scanfuse.cumsum(p, 0)), np.cumsum(a, 0))
    assert p.deleted == 1


def test_unsupported_major_version_is_not_consumed():
    p = CtypesProducer(np.ones(4), major=2)
    with pytest.raises(scanfuse.Error, match=r"DLPack version 2\.0 is not supported"):
        scanfuse.cumsum(p, 0)
    assert capsule_name(p.capsules[-1]) == "dltensor_versioned"  # left to its producer
    assert p.deleted == 0


@pytest.mark.parametrize("kw, match", [
    (dict(dtype_code=5), "complex dtypes are not supported"),
    (dict(dtype_code=3), "unsupported DLPack dtype"),
    (dict(ndim_override=9), "at most 8"),
    (dict(device_type=4), "device type 4 are not supported"),
])
def test_bad_tensors_are_released(kw, match):
    p = CtypesProducer(np.ones(4, np.float32), **kw)
    with pytest.raises(scanfuse.Error, match=match):
        scanfuse.cumsum(p, 0)
    assert p.deleted == 1
    assert capsule_name(p.capsules[-1]) == "used_dltensor_versioned"


def test_read_only_output_is_refused_and_released():
    out = CtypesProducer(np.zeros(4), flags=READ_ONLY)
    with pytest.raises(scanfuse.Error, match="read-only"):
        scanfuse.cumsum(np.ones(4), 0, out=out)
    assert out.deleted == 1
    # a read-only *input* is fine
    x = CtypesProducer(np.ones(4), flags=READ_ONLY)
    assert list(np.from_dlpack(scanfuse.cumsum(x, 0))) == [1, 2, 3, 4]
    assert x.deleted == 1


def test_read_only_numpy_output():
    out = np.zeros(3)
    out.flags.writeable = False
    with pytest.raises(scanfuse.Error, match="read-only|readonly"):
        scanfuse.cumsum(np.ones(3), 0, out=out)
    assert (out == 0).all()


def test_run_failure_releases_everything():
    x = CtypesProducer(np.ones((2, 3)))
    out = CtypesProducer(np.zeros((3, 2)))
    with pytest.raises(scanfuse.Error, match="size"):
        scanfuse.cumsum(x, 0, out=out)
    assert x.deleted == 1 and out.deleted == 1
    assert (out.array == 0).all()


def test_not_a_capsule_and_failing_producers():
    class Bad:
        def __dlpack__(self, **kw):
            return 42

    class Raising:
        def __dlpack__(self, **kw):
            raise BufferError("cannot export this")

    with pytest.raises(scanfuse.Error, match="not a DLPack capsule"):
        scanfuse.cumsum(Bad(), 0)
    with pytest.raises(scanfuse.Error, match="cannot export this") as info:
        scanfuse.cumsum(Raising(), 0)
    assert isinstance(info.value.__cause__, BufferError)


def test_numpy_exports_are_released():
    a = np.arange(100.0)
    base = sys.getrefcount(a)
    for _ in range(100):
        scanfuse.cumsum(a, 0)
        scanfuse.cummax(a, 0)
        scanfuse.cumsum(Wrapper(a, legacy=True), 0)
        out = np.empty(100)
        scanfuse.cumsum(a, 0, out=out)
    gc.collect()
    assert sys.getrefcount(a) == base


# ---------------------------------------------------------------------------------
# exporting
# ---------------------------------------------------------------------------------

def test_unknown_producers_get_a_scanfuse_tensor():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    t = scanfuse.cumsum(Wrapper(a), 1)
    assert isinstance(t, scanfuse.Tensor)
    assert t.shape == (2, 3) and t.dtype == "int64" and t.ndim == 2 and t.strides == (3, 1)
    assert t.nbytes == 48 and t.device == "cpu"
    assert t.__dlpack_device__() == (1, 0)
    assert "shape=(2, 3)" in repr(t) and "int64" in repr(t)
    v = np.from_dlpack(t)
    np.testing.assert_array_equal(v, np.cumsum(a, 1))
    assert v.ctypes.data == t.data_ptr  # no copy


def test_tensor_capsules_keep_the_buffer_alive():
    t = scanfuse.cumsum(Wrapper(np.arange(5.0)), 0)
    base = sys.getrefcount(t)
    legacy = t.__dlpack__()
    versioned = t.__dlpack__(max_version=(1, 0))
    old = t.__dlpack__(max_version=(0, 8))
    assert capsule_name(legacy) == "dltensor"
    assert capsule_name(versioned) == "dltensor_versioned"
    assert capsule_name(old) == "dltensor"
    assert sys.getrefcount(t) == base + 3
    del legacy, versioned, old  # never consumed: the capsules release themselves
    assert sys.getrefcount(t) == base
    v = np.from_dlpack(t)
    assert sys.getrefcount(t) == base + 1
    del t  # the consumer keeps the buffer alive
    gc.collect()
    np.testing.assert_array_equal(v, [0, 1, 3, 6, 10])
    del v


def test_tensor_dlpack_options():
    t = scanfuse.cumsum(Wrapper(np.arange(4.0)), 0)
    with pytest.raises(BufferError, match="cpu"):
        t.__dlpack__(dl_device=(2, 0))
    assert capsule_name(t.__dlpack__(dl_device=(1, 0))) == "dltensor"
    c = np.from_dlpack(t, copy=True)
    assert c.ctypes.data != t.data_ptr
    np.testing.assert_array_equal(c, [0, 1, 3, 6])
    with pytest.raises(BufferError):
        t.__dlpack__(copy=True)  # a copy needs a versioned capsule to say so
    s = np.from_dlpack(t, copy=False)
    assert s.ctypes.data == t.data_ptr


def test_scanfuse_consumes_its_own_tensors():
    t = scanfuse.cumsum(Wrapper(np.ones((3, 4), np.float32)), 1)
    base = sys.getrefcount(t)
    u = scanfuse.cumsum(t, 0)
    assert isinstance(u, scanfuse.Tensor)
    np.testing.assert_array_equal(np.from_dlpack(u), np.cumsum(np.cumsum(np.ones((3, 4)), 1), 0))
    assert sys.getrefcount(t) == base


def test_empty_and_zero_dim_tensors_export():
    e = scanfuse.cumsum(Wrapper(np.zeros((0, 3))), 1)
    assert e.shape == (0, 3) and np.from_dlpack(e).shape == (0, 3)
    z = scanfuse.cumsum(Wrapper(np.array(2.5)), 0)
    assert z.shape == () and float(np.from_dlpack(z)) == 2.5


def test_bfloat16_results_and_inputs():
    x = np.arange(10, dtype=np.float32)  # prefix sums up to 45: exact in bfloat16
    t = scanfuse.cumsum(x, 0, dtype="bfloat16")
    assert isinstance(t, scanfuse.Tensor) and t.dtype == "bfloat16"  # NumPy has no bfloat16
    np.testing.assert_array_equal(bfloat16_to_float32(numpy_of(t)), np.cumsum(x))
    u = scanfuse.cumsum(t, 0)  # a bfloat16 input (DLPack code 4)
    assert u.dtype == "bfloat16"
    np.testing.assert_array_equal(bfloat16_to_float32(numpy_of(u)),
                                  np.cumsum(np.cumsum(x)).astype(np.float32))
    f = scanfuse.cumsum(t, 0, dtype=np.float32)
    np.testing.assert_array_equal(np.from_dlpack(f), np.cumsum(np.cumsum(x)))
    v, i = scanfuse.cummax(t, 0, reverse=True)
    assert v.dtype == "bfloat16" and np.from_dlpack(i).dtype == np.int64
    np.testing.assert_array_equal(bfloat16_to_float32(numpy_of(v)), np.full(10, 45.0))
    # bfloat16 rounds once: 256 + 1 is not representable, the sum of 257 ones is 256
    ones = scanfuse.cumsum(np.zeros(300, np.float32), 0, dtype="bfloat16")
    assert bfloat16_to_float32(numpy_of(ones)).max() == 0
    s = scanfuse.cumsum(np.ones(257, np.float32), 0, dtype="bfloat16")
    assert bfloat16_to_float32(numpy_of(s))[-1] == 256.0


# ---------------------------------------------------------------------------------
# out=: in place, no copy
# ---------------------------------------------------------------------------------

def test_out_is_written_in_place():
    x = np.random.default_rng(0).normal(size=(64, 33))
    out = np.empty_like(x)
    ptr = out.ctypes.data
    r = scanfuse.cumsum(x, 1, out=out)
    assert r is out
    assert out.ctypes.data == ptr
    np.testing.assert_allclose(out, np.cumsum(x, 1), rtol=1e-12, atol=1e-12)


def test_out_aliasing_the_input():
    x = np.arange(10, dtype=np.int64)
    ptr = x.ctypes.data
    scanfuse.cumsum(x, 0, out=x)
    assert x.ctypes.data == ptr
    np.testing.assert_array_equal(x, np.cumsum(np.arange(10)))


def test_out_strided_view_touches_only_its_elements():
    big = np.full((6, 8), -7.0)
    view = big[::2, 1::3]  # (3, 3) strided
    x = np.ones((3, 3))
    scanfuse.cumsum(x, 1, out=view)
    np.testing.assert_array_equal(view, [[1, 2, 3]] * 3)
    mask = np.ones_like(big, bool)
    mask[::2, 1::3] = False
    assert (big[mask] == -7.0).all()


def test_out_with_negative_strides():
    buf = np.zeros(5)
    scanfuse.cumsum(np.arange(5.0), 0, out=buf[::-1])
    np.testing.assert_array_equal(buf, np.cumsum(np.arange(5.0))[::-1])


def test_cummax_out_pair_in_place():
    x = np.array([[1, 5, 2], [7, 3, 9]], np.int32)
    v = np.empty((2, 3), np.int32)
    i = np.empty((2, 3), np.int64)
    pv, pi = v.ctypes.data, i.ctypes.data
    r = scanfuse.cummax(x, 1, out=(v, i))
    assert r.values is v and r.indices is i
    assert v.ctypes.data == pv and i.ctypes.data == pi
    np.testing.assert_array_equal(v, [[1, 5, 5], [7, 7, 9]])
    np.testing.assert_array_equal(i, [[0, 1, 1], [0, 0, 2]])


def test_out_dtype_decides_the_result_dtype_like_torch():
    # torch.cumsum(x, 0, out=o) with no dtype computes in o's dtype
    x = np.array([0.6, 0.6, 0.6])
    o = np.empty(3, np.int32)
    scanfuse.cumsum(x, 0, out=o)
    np.testing.assert_array_equal(o, [0, 0, 0])  # x converted to int32 first, like torch
    o32 = np.empty(3, np.float32)
    scanfuse.cumsum(x, 0, out=o32)
    np.testing.assert_array_equal(o32, np.cumsum(x.astype(np.float32).astype(np.float64)).astype(np.float32))


def test_out_mismatch_leaves_out_untouched():
    x = np.ones((4, 5), np.float32)
    bad_shape = np.full((5, 4), 3.0, np.float32)
    with pytest.raises(scanfuse.Error, match=r"output 'out' has size 5 in dim 0, expected 4"):
        scanfuse.cumsum(x, 1, out=bad_shape)
    assert (bad_shape == 3.0).all()
    bad_dtype = np.full((4, 5), 3.0)
    with pytest.raises(scanfuse.Error, match=r"output 'out' has dtype float64, expected float32"):
        scanfuse.cumsum(x, 1, dtype="float32", out=bad_dtype)
    assert (bad_dtype == 3.0).all()
    with pytest.raises(scanfuse.Error, match=r"output 'values' has dtype float64, expected float32"):
        scanfuse.cummax(x, 1, out=(bad_dtype, np.empty((4, 5), np.int64)))
    with pytest.raises(scanfuse.Error, match=r"output 'indices' has dtype int32, expected int64"):
        scanfuse.cummin(x, 1, out=(np.empty((4, 5), np.float32), np.empty((4, 5), np.int32)))
    with pytest.raises(scanfuse.Error, match=r"output 'out' has 1 dims, expected 2"):
        scanfuse.logcumsumexp(x, 1, out=np.empty(20, np.float32))
