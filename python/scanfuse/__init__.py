"""scanfuse: accurate, fusible scans (cumsum and friends) for NumPy, PyTorch and CuPy.

Tensors come in through the DLPack protocol (any object with ``__dlpack__``: NumPy
arrays, torch tensors, CuPy arrays) without a copy, in any strides.  Results come back as
an array of the input's own library (``numpy.ndarray`` for NumPy input, ``torch.Tensor``
for torch input; for other producers a :class:`scanfuse.Tensor`, which every DLPack
consumer takes through ``from_dlpack``), or are written in place into ``out=``.

The functions follow PyTorch's signatures and semantics (result dtypes, ``dim``
wrapping, ties and NaN in cummax/cummin) and add ``exclusive=`` and ``reverse=``::

    import numpy as np, scanfuse
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    scanfuse.cumsum(x, 1)                    # int64, like torch.cumsum
    scanfuse.cumsum(x, -1, exclusive=True)   # [[0, 0, 1], [0, 3, 7]]
    values, indices = scanfuse.cummax(x, 0)

    prog = scanfuse.compile('''
        input x: float32[4, 8]
        y = cumsum(x, dim=1)
        output y
    ''')
    prog(x=np.ones((4, 8), np.float32))      # {'y': array(...)}

Tensors on the cpu run on scanfuse's CPU backend; CUDA tensors (DLPack device type 2)
are routed to the CUDA backend on the tensor's device (until that backend is built,
such a call raises scanfuse.Error with the library's message).  Every error is a
:class:`scanfuse.Error` (a RuntimeError and a ValueError) carrying the C library's
message.
"""
import collections
import operator
import sys
import threading

from . import _scanfuse as _C
from ._scanfuse import Error, Tensor

__version__ = _C.VERSION

__all__ = [
    "Error",
    "Tensor",
    "Program",
    "TensorSpec",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "logcumsumexp",
    "compile",
    "dtype_name",
    "set_num_threads",
    "get_num_threads",
    "cache_info",
    "clear_cache",
    "DTYPES",
]

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64")

TensorSpec = collections.namedtuple("TensorSpec", ["name", "dtype", "shape"])
TensorSpec.__doc__ = "An input or output of a Program: name, canonical dtype name, shape."

# torch.return_types-like results of cummax / cummin.
cummax_result = collections.namedtuple("cummax", ["values", "indices"])
cummin_result = collections.namedtuple("cummin", ["values", "indices"])

# ---------------------------------------------------------------------------------
# settings and the program cache
# ---------------------------------------------------------------------------------

_threads = 0  # 0: every core (the C library's default)


def _error(message, status="invalid argument", code=1):
    """A scanfuse.Error raised on the Python side, with the attributes the C side sets."""
    e = Error(message)
    e.status = status
    e.code = code
    return e


def set_num_threads(n):
    """Threads the CPU backend may use for the functions below (0: every core).

    Results do not depend on it (scanfuse's partitions are fixed by the data)."""
    global _threads
    n = operator.index(n)
    if n < 0:
        raise _error("set_num_threads: the thread count must be >= 0, got %d" % n)
    _threads = n


def get_num_threads():
    return _threads


_CACHE_MAX = 512
_cache = collections.OrderedDict()
_cache_lock = threading.Lock()
_cache_stats = {"hits": 0, "misses": 0}


def _compiled_scan(key):
    """The compiled program for one (op, dtype, shape, dim, result dtype, flags, device,
    device id, threads) key.  Programs accept any strides, so strides are not part of
    the key.  Least recently used programs are dropped past _CACHE_MAX entries."""
    with _cache_lock:
        prog = _cache.get(key)
        if prog is not None:
            _cache.move_to_end(key)
            _cache_stats["hits"] += 1
            return prog
        _cache_stats["misses"] += 1
    prog = _C.compile_scan(*key)  # raises scanfuse.Error; failures are not cached
    with _cache_lock:
        _cache[key] = prog
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_MAX:
            _cache.popitem(last=False)
    return prog


def cache_info():
    """{'size', 'maxsize', 'hits', 'misses'} of the compiled-program cache."""
    with _cache_lock:
        return {"size": len(_cache), "maxsize": _CACHE_MAX, **_cache_stats}


def clear_cache():
    with _cache_lock:
        _cache.clear()
        _cache_stats["hits"] = _cache_stats["misses"] = 0


# ---------------------------------------------------------------------------------
# dtypes, devices, frameworks
# ---------------------------------------------------------------------------------

_PY_TYPES = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}


def _dtype_code(dtype, who):
    """A dtype given as a torch dtype, a NumPy dtype or scalar type, a Python type or a
    string -> scanfuse's dtype code (DTYPE_NONE for None).  Every spelling goes through
    the C library's one parser (scanfuse_dtype_parse)."""
    if dtype is None:
        return _C.DTYPE_NONE
    if isinstance(dtype, str):
        name = dtype
    elif dtype in _PY_TYPES:
        name = _PY_TYPES[dtype]
    else:
        name = None
        np = sys.modules.get("numpy")
        if np is not None and isinstance(dtype, type) and issubclass(dtype, np.generic):
            name = np.dtype(dtype).name  # numpy.float32 -> "float32"
        if name is None:
            name = str(dtype)  # torch.float16 -> "torch.float16"; numpy.dtype -> "float16"
    try:
        return _C.dtype_parse(name)
    except Error as e:
        raise _error("%s: dtype: %s" % (who, e), e.status, e.code) from None


def dtype_name(dtype):
    """The canonical scanfuse name of a dtype given in any accepted spelling."""
    return _C.dtype_name(_dtype_code(dtype, "dtype_name"))


def _program_device(dl_device, who):
    """(DLPack device type, id) of a tensor -> (scanfuse device, device id)."""
    dev_type, dev_id = dl_device
    if dev_type in (_C.DL_CPU, _C.DL_CUDA_HOST):
        return _C.DEVICE_CPU, 0
    if dev_type in (_C.DL_CUDA, _C.DL_CUDA_MANAGED):
        return _C.DEVICE_CUDA, dev_id
    raise _error("%s: tensors on DLPack device type %d are not supported "
                "(scanfuse runs on cpu and cuda tensors)" % (who, dev_type))


def _parse_device(device):
    """'cpu', 'cuda', 'cuda:1', 'reference', a torch.device or an int (a cuda index)."""
    if isinstance(device, int) and not isinstance(device, bool):
        return _C.DEVICE_CUDA, device
    s = str(device)
    name, _, index = s.partition(":")
    try:
        idx = int(index) if index else 0
    except ValueError:
        idx = -1
    if idx >= 0:
        if name == "cpu":
            return _C.DEVICE_CPU, 0
        if name == "cuda":
            return _C.DEVICE_CUDA, idx
        if name == "reference":
            return _C.DEVICE_REFERENCE, 0
    raise _error("compile: unknown device %r (use 'cpu', 'cuda', 'cuda:N' or 'reference')"
                % (device,))


def _framework(obj):
    mod = type(obj).__module__ or ""
    top = mod.partition(".")[0]
    return top if top in ("numpy", "torch", "cupy") else None


def _as_array(obj):
    """NumPy scalars (numpy.float64(1.0)) have no __dlpack__: take them as 0-d arrays."""
    if not hasattr(obj, "__dlpack__"):
        np = sys.modules.get("numpy")
        if np is not None and isinstance(obj, np.generic):
            return np.asarray(obj)
    return obj


def _wrap(result, like):
    """A scanfuse.Tensor result as an array of `like`'s library (no copy), when that
    library can hold it; anything else is returned as it is."""
    if not isinstance(result, Tensor):
        return result
    fw = _framework(like)
    if fw == "numpy" and result.dtype != "bfloat16":
        np = sys.modules["numpy"]
        from_dlpack = getattr(np, "from_dlpack", None) or getattr(np, "_from_dlpack")
        return from_dlpack(result)
    if fw == "torch":
        torch = sys.modules["torch"]
        return torch.from_dlpack(result)
    return result


def _alloc_like(like, spec, device_id, who):
    """An output for a CUDA program, allocated by the input's own library (scanfuse
    allocates cpu memory only)."""
    fw = _framework(like)
    if fw == "torch":
        torch = sys.modules["torch"]
        return torch.empty(spec.shape, dtype=getattr(torch, spec.dtype), device=like.device)
    if fw == "cupy":
        cupy = sys.modules["cupy"]
        if spec.dtype == "bfloat16":
            raise _error("%s: CuPy has no bfloat16 array for output '%s'; pass out=" % (who, spec.name))
        with cupy.cuda.Device(device_id):
            return cupy.empty(spec.shape, dtype=spec.dtype)
    raise _error("%s: cannot allocate a cuda output for a %s input; pass out="
                % (who, type(like).__name__))


# ---------------------------------------------------------------------------------
# the scans
# ---------------------------------------------------------------------------------

def _flags(exclusive, reverse):
    return (_C.EXCLUSIVE if exclusive else 0) | (_C.REVERSE if reverse else 0)


def _scan(op, input, dim, dtype, exclusive, reverse, out, two, takes_dtype):
    who = op
    try:
        dim = operator.index(dim)
    except TypeError:
        raise _error("%s: dim must be an int, got %s" % (who, type(dim).__name__)) from None
    out_code = _dtype_code(dtype, who) if takes_dtype else _C.DTYPE_NONE
    flags = _flags(exclusive, reverse)
    outs = None
    if out is not None:
        if two:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise _error("%s: out must be a (values, indices) pair, got %s"
                            % (who, type(out).__name__))
            outs = [out[0], out[1]]
        else:
            outs = [out]
    input = _as_array(input)
    imports = []
    try:
        x = _C.DLImport(input, who + ": input")
        imports.append(x)
        if outs is not None and takes_dtype and dtype is None:
            # PyTorch: with out= and no dtype, the result dtype is out's dtype.
            o = _C.DLImport(outs[0], who + ": out")
            imports.append(o)
            outs[0] = o
            out_code = o.dtype
        device, device_id = _program_device(x.device, who)
        prog = _compiled_scan((op, x.dtype, x.shape, dim, out_code, flags, device,
                               device_id, _threads))
        if outs is None and device == _C.DEVICE_CUDA:
            outs = [_alloc_like(input, TensorSpec(*s), device_id, who) for s in prog.outputs]
            out = outs if two else outs[0]
        res = prog.run((x,), outs)
    finally:
        for imp in imports:
            imp.close()
    if out is not None:
        return (cummax_result if op == "cummax" else cummin_result)(*out) if two else out
    if two:
        cls = cummax_result if op == "cummax" else cummin_result
        return cls(_wrap(res[0], input), _wrap(res[1], input))
    return _wrap(res[0], input)


def cumsum(input, dim, *, dtype=None, exclusive=False, reverse=False, out=None):
    """torch.cumsum(input, dim, dtype=None, out=None), plus exclusive= and reverse=.

    The result dtype is `dtype` if given, else out's dtype if out is given, else int64
    for bool and integer inputs and the input dtype otherwise.  float16/bfloat16
    accumulate in float32 or wider, float32 in float64 (each output is rounded once);
    integers accumulate in int64 and wrap like PyTorch."""
    return _scan("cumsum", input, dim, dtype, exclusive, reverse, out, False, True)


def cumprod(input, dim, *, dtype=None, exclusive=False, reverse=False, out=None):
    """torch.cumprod(input, dim, dtype=None, out=None), plus exclusive= and reverse=."""
    return _scan("cumprod", input, dim, dtype, exclusive, reverse, out, False, True)


def cummax(input, dim, *, exclusive=False, reverse=False, out=None):
    """torch.cummax(input, dim, out=None) -> (values, indices): values keep the input
    dtype, indices are int64; on ties the later index wins; NaN propagates.  out is a
    (values, indices) pair."""
    return _scan("cummax", input, dim, None, exclusive, reverse, out, True, False)


def cummin(input, dim, *, exclusive=False, reverse=False, out=None):
    """torch.cummin(input, dim, out=None) -> (values, indices); see cummax."""
    return _scan("cummin", input, dim, None, exclusive, reverse, out, True, False)


def logcumsumexp(input, dim, *, exclusive=False, reverse=False, out=None):
    """torch.logcumsumexp(input, dim, out=None): floating inputs only."""
    return _scan("logcumsumexp", input, dim, None, exclusive, reverse, out, False, False)


# ---------------------------------------------------------------------------------
# fusions in the text form
# ---------------------------------------------------------------------------------

class Program:
    """A fusion compiled for one device (see scanfuse.compile).

    ``prog(x=..., w=...)`` (or positionally, in the order of ``prog.inputs``) runs it and
    returns a dict of the outputs by name; ``prog.run(inputs, out=...)`` takes a dict or
    a sequence of inputs and writes into the given outputs in place."""

    def __init__(self, c_program):
        self._c = c_program
        self.inputs = tuple(TensorSpec(*s) for s in c_program.inputs)
        self.outputs = tuple(TensorSpec(*s) for s in c_program.outputs)
        self._input_index = {s.name: i for i, s in enumerate(self.inputs)}
        self._output_index = {s.name: i for i, s in enumerate(self.outputs)}

    @property
    def segments(self):
        """The kernels of one run, the values they read and write, the bytes they move."""
        return self._c.segments

    @property
    def ir(self):
        """The IR after the pass pipeline, in the text form."""
        return self._c.ir

    @property
    def num_kernels(self):
        return self._c.num_kernels

    @property
    def device(self):
        dev, idx = self._c.device
        return {_C.DEVICE_CPU: "cpu", _C.DEVICE_REFERENCE: "reference"}.get(dev, "cuda:%d" % idx)

    def __repr__(self):
        def fmt(specs):
            return ", ".join("%s: %s%s" % (s.name, s.dtype, list(s.shape)) for s in specs)
        return "scanfuse.Program(inputs=[%s], outputs=[%s], device=%s)" % (
            fmt(self.inputs), fmt(self.outputs), self.device)

    def _order_inputs(self, args, kwargs):
        if len(args) > len(self.inputs):
            raise _error("program: %d inputs given, it takes %d" % (len(args), len(self.inputs)))
        slots = list(args) + [None] * (len(self.inputs) - len(args))
        given = [True] * len(args) + [False] * (len(self.inputs) - len(args))
        for name, value in kwargs.items():
            i = self._input_index.get(name)
            if i is None:
                raise _error("program: unknown input '%s' (inputs: %s)"
                            % (name, ", ".join(s.name for s in self.inputs)))
            if given[i]:
                raise _error("program: input '%s' given twice" % name)
            slots[i] = value
            given[i] = True
        missing = [s.name for s, g in zip(self.inputs, given) if not g]
        if missing:
            raise _error("program: missing input%s %s" % (
                "s" if len(missing) > 1 else "", ", ".join("'%s'" % m for m in missing)))
        return slots

    def __call__(self, *args, **inputs):
        return self.run(self._order_inputs(args, inputs))

    def run(self, inputs, out=None):
        """Runs the program: inputs is a dict by name or a sequence in input order; out
        (optional) a dict by name or a sequence in output order of arrays to write into
        (None entries are allocated).  Returns a dict of the outputs by name."""
        if isinstance(inputs, dict):
            ordered = self._order_inputs((), inputs)
        else:
            ordered = list(inputs)
            if len(ordered) != len(self.inputs):
                raise _error("program: %d inputs given, it takes %d"
                            % (len(ordered), len(self.inputs)))
        outs = [None] * len(self.outputs)
        if out is not None:
            if isinstance(out, dict):
                for name, value in out.items():
                    j = self._output_index.get(name)
                    if j is None:
                        raise _error("program: unknown output '%s' (outputs: %s)"
                                    % (name, ", ".join(s.name for s in self.outputs)))
                    outs[j] = value
            else:
                given = list(out)
                if len(given) != len(self.outputs):
                    raise _error("program: %d outputs given, it has %d"
                                % (len(given), len(self.outputs)))
                outs = given
        ordered = [_as_array(a) for a in ordered]
        like = ordered[0] if ordered else None
        dev, idx = self._c.device
        if dev == _C.DEVICE_CUDA:
            outs = [o if o is not None else _alloc_like(like, s, idx, "program")
                    for o, s in zip(outs, self.outputs)]
        res = self._c.run(ordered, outs)
        return {s.name: _wrap(r, like) for s, r in zip(self.outputs, res)}


def compile(text, device="cpu", threads=0, filename=None):
    """Compiles a fusion in scanfuse's text form (see the README) for a device:
    'cpu' (default), 'cuda', 'cuda:N' or 'reference' (the float64 evaluator).  threads:
    CPU threads (0: every core).  Returns a Program."""
    if not isinstance(text, str):
        raise _error("compile: text must be a str, got %s" % type(text).__name__)
    dev, idx = _parse_device(device)
    return Program(_C.compile_text(text, dev, idx, operator.index(threads), filename))
