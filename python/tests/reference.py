"""NumPy float64 (and exact int64) references for scanfuse's scans, written from the
semantics in docs/OPS.md and PyTorch's documentation: obvious loops, no cleverness."""
import fractions

import numpy as np

FLOAT_DTYPES = ("float16", "float32", "float64")
INT_DTYPES = ("uint8", "int8", "int16", "int32", "int64")
NUMPY_DTYPES = ("bool",) + INT_DTYPES + FLOAT_DTYPES


def is_float(dtype):
    return np.dtype(dtype).kind == "f"


def result_dtype(op, in_dtype, dtype=None):
    if op in ("cumsum", "cumprod"):
        if dtype is not None:
            return np.dtype(dtype)
        return np.dtype("int64") if np.dtype(in_dtype).kind in "biu" else np.dtype(in_dtype)
    return np.dtype(in_dtype)


def _lowest(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind == "b":
        return False
    return np.iinfo(dtype).min


def _highest(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.inf
    if dtype.kind == "b":
        return True
    return np.iinfo(dtype).max


def _scan_axis0(op, x):
    """Inclusive scan along axis 0 of x (already in the compute type)."""
    n = x.shape[0]
    if op == "cumsum":
        return np.cumsum(x, axis=0) if n else x.copy()
    if op == "cumprod":
        return np.cumprod(x, axis=0) if n else x.copy()
    if op == "logcumsumexp":
        out = np.empty_like(x)
        acc = np.full(x.shape[1:], -np.inf)
        for i in range(n):
            with np.errstate(invalid="ignore"):
                a, b = acc, x[i]
                hi = np.maximum(a, b)
                lo = np.minimum(a, b)
                r = hi + np.log1p(np.exp(lo - hi))
                r = np.where(np.isinf(hi) & (a == b), hi, r)  # equal infinities
                r = np.where(np.isnan(a) | np.isnan(b), np.nan, r)
            acc = r
            out[i] = acc
        return out
    raise ValueError(op)


def _cumext_axis0(op, x):
    """cummax/cummin along axis 0: (values, indices) with PyTorch's rules."""
    n = x.shape[0]
    vals = np.empty_like(x)
    idx = np.zeros(x.shape, np.int64)
    if n == 0:
        return vals, idx
    best = x[0].copy()
    bi = np.zeros(x.shape[1:], np.int64)
    vals[0], idx[0] = best, bi
    isf = x.dtype.kind == "f"
    for i in range(1, n):
        v = x[i]
        if isf:
            cmp = (v >= best) if op == "cummax" else (v <= best)
            upd = np.isnan(v) | (~np.isnan(best) & cmp)
        else:
            upd = (v >= best) if op == "cummax" else (v <= best)
        best = np.where(upd, v, best)
        bi = np.where(upd, i, bi)
        vals[i], idx[i] = best, bi
    return vals, idx


def reference(op, x, dim, dtype=None, exclusive=False, reverse=False):
    """The expected result: an array of the result dtype (for cummax/cummin a pair
    (values, int64 indices)), plus the float64 values before the final rounding and the
    running sum of |x| (for error bounds) for floating results."""
    x = np.asarray(x)
    rdt = result_dtype(op, x.dtype, dtype)
    if x.ndim == 0:
        if op in ("cummax", "cummin"):
            return (x.astype(rdt).copy(), np.zeros((), np.int64)), None, None
        return x.astype(rdt).copy(), x.astype(np.float64) if rdt.kind == "f" else None, None
    dim = dim % x.ndim
    xr = x.astype(rdt)  # the input is converted to the result dtype first
    comp = np.moveaxis(xr, dim, 0)
    if reverse:
        comp = comp[::-1]
    if op in ("cummax", "cummin"):
        vals, idx = _cumext_axis0(op, comp)
        if exclusive and comp.shape[0]:
            ident = _lowest(rdt) if op == "cummax" else _highest(rdt)
            vals = np.concatenate([np.full((1,) + comp.shape[1:], ident, rdt), vals[:-1]])
            idx = np.concatenate([np.full((1,) + comp.shape[1:], -1, np.int64), idx[:-1]])
        if reverse:
            vals, idx = vals[::-1], np.where(idx >= 0, comp.shape[0] - 1 - idx, idx)[::-1]
        return (np.ascontiguousarray(np.moveaxis(vals, 0, dim)),
                np.ascontiguousarray(np.moveaxis(idx, 0, dim))), None, None
    if rdt.kind == "f":
        c = comp.astype(np.float64)
    else:
        c = comp.astype(np.int64)  # exact, wrapping
    with np.errstate(all="ignore"):
        s = _scan_axis0(op, c)
        absum = np.cumsum(np.abs(c.astype(np.float64)), axis=0) if rdt.kind == "f" and op == "cumsum" else None
    if exclusive and c.shape[0]:
        ident = {"cumsum": 0, "cumprod": 1, "logcumsumexp": -np.inf}[op]
        s = np.concatenate([np.full((1,) + c.shape[1:], ident, s.dtype), s[:-1]])
        if absum is not None:
            absum = np.concatenate([np.zeros((1,) + c.shape[1:]), absum[:-1]])
    if reverse:
        s = s[::-1]
        if absum is not None:
            absum = absum[::-1]
    s = np.moveaxis(s, 0, dim)
    if absum is not None:
        absum = np.moveaxis(absum, 0, dim)
    with np.errstate(all="ignore"):
        out = s.astype(rdt)
    return out, (s if rdt.kind == "f" else None), absum


def assert_scan_close(op, got, x, dim, dtype=None, exclusive=False, reverse=False):
    """Checks got against the reference: exact for integers, bool and cummax/cummin;
    for floating cumsum within 1 ulp of the exact prefix sum or 2^-40 * sum|x|; for
    cumprod and logcumsumexp within a few ulps."""
    expected, exact, absum = reference(op, x, dim, dtype, exclusive, reverse)
    if op in ("cummax", "cummin"):
        values, indices = got
        values, indices = np.asarray(values), np.asarray(indices)
        assert values.dtype == expected[0].dtype, (values.dtype, expected[0].dtype)
        assert indices.dtype == np.int64
        assert values.shape == expected[0].shape and indices.shape == expected[1].shape
        np.testing.assert_array_equal(values, expected[0])
        np.testing.assert_array_equal(indices, expected[1])
        return
    got = np.asarray(got)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if expected.dtype.kind != "f":
        np.testing.assert_array_equal(got, expected)
        return
    g = got.astype(np.float64)
    e = exact.astype(np.float64)
    same_nan = np.isnan(g) == np.isnan(e)
    assert same_nan.all(), "NaN mismatch"
    fin = np.isfinite(e) & ~np.isnan(g)
    inf = np.isinf(e)
    np.testing.assert_array_equal(g[inf], e[inf])
    eps = float(np.finfo(expected.dtype).eps)
    tiny = float(np.finfo(expected.dtype).smallest_subnormal)
    with np.errstate(over="ignore"):
        overflow = fin & np.isinf(g)  # exact value rounds past the largest finite value
    if op == "cumsum":
        bound = eps * np.abs(e) + tiny
        if absum is not None:
            bound = bound + 2.0 ** -40 * absum
    else:
        n = max(1, np.asarray(x).shape[dim % max(1, np.asarray(x).ndim)] if np.asarray(x).ndim else 1)
        bound = (4 * eps + 4 * n * 2.0 ** -52) * np.abs(e) + tiny
        if op == "logcumsumexp":
            bound = bound + 8 * n * 2.0 ** -52
    with np.errstate(invalid="ignore"):
        err = np.abs(g - e)
    bad = fin & ~overflow & ~(err <= bound)
    assert not bad.any(), "max excess %r at %r: got %r, exact %r" % (
        float(np.max((err - bound)[bad])), np.argwhere(bad)[0], g[bad][0], e[bad][0])


def make_input(dtype, shape, rng, op="cumsum"):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if op == "cumprod":
            lo, hi = max(info.min, -3), min(info.max, 3)
        else:
            lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    if op == "cumprod":
        x = rng.uniform(0.7, 1.3, size=shape) * np.where(rng.random(shape) < 0.2, -1, 1)
    elif op == "logcumsumexp":
        x = rng.normal(0, 3, size=shape)
    else:
        x = rng.normal(0, 1, size=shape)
    return x.astype(dtype)


def exact_scan(op, x, dim):
    """The exact cumsum/cumprod of a float64 array along dim (Fractions), each prefix
    rounded once to float64.  Where a row meets inf or NaN the rest of the row follows
    float64 arithmetic from there.  For float64 results: a float64 scan rounded at every
    step (NumPy's, PyTorch's) is no reference for another float64 scan."""
    a = np.moveaxis(np.asarray(x, dtype=np.float64), dim, -1)
    out = np.empty(a.shape, dtype=np.float64)
    for idx in np.ndindex(a.shape[:-1]):
        acc = fractions.Fraction(0 if op == "cumsum" else 1)
        for t in range(a.shape[-1]):
            v = a[idx + (t,)]
            if not np.isfinite(v):
                rest = a[idx + (slice(t, None),)]
                prev = np.float64(float(acc))
                out[idx + (slice(t, None),)] = (np.cumsum(rest) + prev if op == "cumsum"
                                                else np.cumprod(rest) * prev)
                break
            acc = acc + fractions.Fraction(v) if op == "cumsum" else acc * fractions.Fraction(v)
            out[idx + (t,)] = float(acc)
    return np.moveaxis(out, -1, dim)
