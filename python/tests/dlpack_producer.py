"""A DLPack producer written with ctypes, so that tests can see exactly what a consumer
does with a capsule: whether it renames it, and how often it calls the deleter."""
import ctypes

import numpy as np


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_PyCapsule_GetName = ctypes.pythonapi.PyCapsule_GetName
_PyCapsule_GetName.restype = ctypes.c_char_p
_PyCapsule_GetName.argtypes = [ctypes.py_object]

# Capsule names must outlive the capsules (the capsule keeps the pointer).
_NAMES = {True: b"dltensor_versioned", False: b"dltensor"}

_DL_CODES = {"b": 6, "u": 1, "i": 0, "f": 2, "c": 5}


def capsule_name(cap):
    return _PyCapsule_GetName(cap).decode()


class CtypesProducer:
    """Exports a NumPy array (which it keeps alive) through a hand-made capsule.

    versioned: produce DLManagedTensorVersioned (else legacy DLManagedTensor);
    legacy_signature: __dlpack__ takes no max_version (an old producer);
    major/flags: the version and flags to put in a versioned capsule;
    device_type, dtype_code, ndim_override, null_strides: to produce odd tensors."""

    def __init__(self, array, versioned=True, legacy_signature=False, major=1, flags=0,
                 device_type=1, dtype_code=None, ndim_override=None, null_strides=False):
        self.array = array
        self.versioned = versioned
        self.legacy_signature = legacy_signature
        self.major = major
        self.flags = flags
        self.device_type = device_type
        self.dtype_code = dtype_code
        self.ndim_override = ndim_override
        self.null_strides = null_strides
        self.deleted = 0
        self.capsules = []
        self._keep = []

    def __dlpack_device__(self):
        return (self.device_type, 0)

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        if self.legacy_signature and (max_version is not None or kwargs):
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        a = self.array
        ndim = a.ndim if self.ndim_override is None else self.ndim_override
        shape = (ctypes.c_int64 * max(ndim, 1))(*(list(a.shape) + [1] * max(0, ndim - a.ndim)))
        strides = (ctypes.c_int64 * max(ndim, 1))(
            *([s // a.itemsize for s in a.strides] + [1] * max(0, ndim - a.ndim)))

        def deleter(ptr):
            self.deleted += 1

        cb = DELETER(deleter)
        t = DLTensor()
        t.data = a.ctypes.data
        t.device = DLDevice(self.device_type, 0)
        t.ndim = ndim
        code = self.dtype_code if self.dtype_code is not None else _DL_CODES[a.dtype.kind]
        t.dtype = DLDataType(code, a.itemsize * 8, 1)
        t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = (ctypes.POINTER(ctypes.c_int64)() if self.null_strides
                     else ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)))
        t.byte_offset = 0
        if self.versioned:
            m = DLManagedTensorVersioned()
            m.version = DLPackVersion(self.major, 0)
            m.flags = self.flags
            m.dl_tensor = t
        else:
            m = DLManagedTensor()
            m.dl_tensor = t
        m.manager_ctx = None
        m.deleter = cb
        self._keep.append((shape, strides, cb, m))
        cap = _PyCapsule_New(ctypes.addressof(m), _NAMES[self.versioned], None)
        self.capsules.append(cap)
        return cap


class Wrapper:
    """Forwards the DLPack protocol of another object (so results come back as
    scanfuse.Tensor: scanfuse does not know this type)."""

    def __init__(self, obj, legacy=False):
        self.obj = obj
        self.legacy = legacy

    def __dlpack_device__(self):
        return self.obj.__dlpack_device__()

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        if self.legacy:
            if max_version is not None or kwargs:
                raise TypeError("legacy producer: no max_version")
            return self.obj.__dlpack__()
        return self.obj.__dlpack__(max_version=max_version, **kwargs)


def numpy_of(t):
    """A NumPy view of a scanfuse.Tensor's buffer as raw bits (works for bfloat16)."""
    raw = (ctypes.c_char * t.nbytes).from_address(t.data_ptr)
    size = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
            "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}[t.dtype]
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[size]
    return np.frombuffer(raw, dtype=bits).reshape(t.shape)


def bfloat16_to_float32(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)
