"""Bad input raises scanfuse.Error with a clear message (the C library's where it has
one), and never crashes."""
import numpy as np
import pytest

import scanfuse


def test_error_class():
    assert issubclass(scanfuse.Error, RuntimeError)
    assert issubclass(scanfuse.Error, ValueError)
    with pytest.raises(scanfuse.Error) as info:
        scanfuse.cumsum(np.ones((2, 3)), 3)
    assert str(info.value) == "cumsum: dim 3 out of range for a 2-d tensor"
    assert info.value.status == "invalid argument"
    assert isinstance(info.value.code, int) and info.value.code != 0


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"])
def test_dim_out_of_range(op):
    x = np.ones((2, 3))
    for dim in (2, -3, 100):
        with pytest.raises(scanfuse.Error, match=r"%s: dim %d out of range for a 2-d tensor" % (op, dim)):
            getattr(scanfuse, op)(x, dim)
    with pytest.raises(scanfuse.Error, match="out of range for a 0-d tensor"):
        getattr(scanfuse, op)(np.array(1.0), 1)


def test_dim_must_be_an_int():
    with pytest.raises(scanfuse.Error, match="dim must be an int, got float"):
        scanfuse.cumsum(np.ones(3), 0.0)
    with pytest.raises(scanfuse.Error, match="dim must be an int, got str"):
        scanfuse.cumsum(np.ones(3), "0")
    assert list(scanfuse.cumsum(np.ones(3), np.int64(0))) == [1, 2, 3]


@pytest.mark.parametrize("obj", [[1, 2, 3], (1.0, 2.0), 3.5, "abc", None, object()])
def test_non_arrays(obj):
    with pytest.raises(scanfuse.Error, match=r"cumsum: input must be a tensor or array that "
                                             r"supports DLPack \(__dlpack__\), got \w+"):
        scanfuse.cumsum(obj, 0)


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_inputs(dt):
    for op in ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"):
        with pytest.raises(scanfuse.Error, match="complex dtypes are not supported") as info:
            getattr(scanfuse, op)(np.ones(3, dt), 0)
        assert info.value.status == "invalid dtype"


def test_unsupported_numpy_dtypes():
    for x in (np.ones(3, np.uint16), np.ones(3, np.uint64), np.ones(3, np.uint32)):
        with pytest.raises(scanfuse.Error, match="unsupported DLPack dtype"):
            scanfuse.cumsum(x, 0)
    with pytest.raises(scanfuse.Error):
        scanfuse.cumsum(np.array(["a", "b"]), 0)


@pytest.mark.parametrize("dtype, match", [
    ("complex64", "complex dtypes are not supported"),
    (np.complex128, "complex dtypes are not supported"),
    (complex, "complex dtypes are not supported"),
    ("<c8", "complex dtypes are not supported"),
    ("floot32", "unknown dtype 'floot32'"),
    ("Float32", "unknown dtype"),
    (">f4", "big-endian"),
    (np.uint16, "unknown dtype 'uint16'"),
])
def test_bad_dtype_arguments(dtype, match):
    with pytest.raises(scanfuse.Error, match=match):
        scanfuse.cumsum(np.ones(3), 0, dtype=dtype)


def test_dtype_name_helper():
    assert scanfuse.dtype_name("torch.bfloat16") == "bfloat16"
    assert scanfuse.dtype_name(np.float16) == "float16"
    assert scanfuse.dtype_name("<i8") == "int64"
    assert scanfuse.dtype_name(bool) == "bool"


def test_logcumsumexp_needs_floats():
    with pytest.raises(scanfuse.Error, match="logcumsumexp: expected a floating dtype, got int32"):
        scanfuse.logcumsumexp(np.ones(3, np.int32), 0)


def test_too_many_dims():
    x = np.ones((1,) * 9)
    with pytest.raises(scanfuse.Error, match="9 dims; scanfuse supports at most 8"):
        scanfuse.cumsum(x, 0)


def test_bad_out_arguments():
    x = np.ones((2, 3))
    with pytest.raises(scanfuse.Error, match=r"out must be a \(values, indices\) pair"):
        scanfuse.cummax(x, 0, out=np.empty((2, 3)))
    with pytest.raises(scanfuse.Error, match="out: must be a tensor|out must be a tensor"):
        scanfuse.cumsum(x, 0, out=[0.0] * 6)
    with pytest.raises(scanfuse.Error, match="stride 0"):
        scanfuse.cumsum(x, 0, out=np.lib.stride_tricks.as_strided(np.zeros(3), (2, 3), (0, 8)))


def test_keyword_only_flags():
    with pytest.raises(TypeError):
        scanfuse.cumsum(np.ones(3), 0, None)  # dtype is keyword-only, like torch
    with pytest.raises(TypeError):
        scanfuse.cumsum(np.ones(3))  # dim is required, like torch


def test_set_num_threads_validates():
    with pytest.raises(scanfuse.Error):
        scanfuse.set_num_threads(-1)
