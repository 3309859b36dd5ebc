/*
 * _scanfuse.c — the CPython binding of scanfuse (the low-level module scanfuse._scanfuse).
 *
 * Its job: move tensors between Python and the C library through the DLPack protocol,
 * without copies, and wrap compiled programs.  The Python package (scanfuse/__init__.py)
 * builds the PyTorch-style functions on top of it.
 *
 * What lives here:
 *  - the DLPack ABI structs (DLManagedTensor and DLManagedTensorVersioned), defined from
 *    the published ABI; the DLTensor inside them is scanfuse_dl_tensor, which has
 *    DLTensor's layout;
 *  - DLImport: a consumed DLPack capsule.  Importing calls obj.__dlpack__(max_version=
 *    (1, 0)) and falls back to obj.__dlpack__() for producers that predate versioned
 *    capsules; the capsule is renamed to "used_dltensor[_versioned]" once consumed, and
 *    the producer's deleter is called exactly once, when the import is closed (or
 *    garbage-collected);
 *  - Tensor: a result buffer owned by scanfuse that exports itself through __dlpack__
 *    (legacy or versioned capsules).  Each exported capsule holds a reference to the
 *    Tensor; the capsule's deleter drops it, so the buffer lives as long as any
 *    consumer does;
 *  - Program: a compiled scanfuse_program with its input/output signature.  run() imports
 *    the arguments, allocates missing CPU outputs, and calls scanfuse_run with the GIL
 *    released (a per-program lock serializes runs of one program).
 *
 * Invariants: every DLPack managed tensor that was consumed is released exactly once;
 * nothing is written to a caller's output unless the run succeeded; scanfuse_run only
 * ever sees non-negative strides (CPU tensors with negative strides go through a
 * compact temporary, copied in before or out after the run).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scanfuse.h"

/* ------------------------------------------------------------------------------ */
/* DLPack ABI                                                                       */
/* ------------------------------------------------------------------------------ */

typedef struct sfpy_dl_version {
    uint32_t major;
    uint32_t minor;
} sfpy_dl_version;

/* DLManagedTensor (legacy, DLPack < 1.0). */
typedef struct sfpy_managed {
    scanfuse_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct sfpy_managed *self);
} sfpy_managed;

/* DLManagedTensorVersioned (DLPack >= 1.0). */
typedef struct sfpy_managed_v {
    sfpy_dl_version version;
    void *manager_ctx;
    void (*deleter)(struct sfpy_managed_v *self);
    uint64_t flags;
    scanfuse_dl_tensor dl_tensor;
} sfpy_managed_v;

#define SFPY_DL_FLAG_READ_ONLY ((uint64_t)1 << 0)
#define SFPY_DL_FLAG_IS_COPIED ((uint64_t)1 << 1)

/* The DLPack version this module produces and understands. */
#define SFPY_DL_MAJOR 1u
#define SFPY_DL_MINOR 0u

static const char CAP_LEGACY[] = "dltensor";
static const char CAP_LEGACY_USED[] = "used_dltensor";
static const char CAP_VERSIONED[] = "dltensor_versioned";
static const char CAP_VERSIONED_USED[] = "used_dltensor_versioned";

/* ------------------------------------------------------------------------------ */
/* Errors                                                                           */
/* ------------------------------------------------------------------------------ */

static PyObject *SfError; /* scanfuse.Error(RuntimeError, ValueError) */

/* Raises scanfuse.Error(message) with .status set to the status name and .code. */
static PyObject *raise_status(scanfuse_status st, const char *message) {
    PyObject *msg = PyUnicode_FromString(message ? message : "");
    if (!msg) return NULL;
    PyObject *exc = PyObject_CallOneArg(SfError, msg);
    Py_DECREF(msg);
    if (!exc) return NULL;
    PyObject *sname = PyUnicode_FromString(scanfuse_status_string(st));
    PyObject *code = PyLong_FromLong((long)st);
    if (sname && code) {
        PyObject_SetAttrString(exc, "status", sname);
        PyObject_SetAttrString(exc, "code", code);
    }
    Py_XDECREF(sname);
    Py_XDECREF(code);
    PyErr_SetObject(SfError, exc);
    Py_DECREF(exc);
    return NULL;
}

static PyObject *raise_fmt(scanfuse_status st, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    PyOS_vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return raise_status(st, buf);
}

/* ------------------------------------------------------------------------------ */
/* Small helpers                                                                    */
/* ------------------------------------------------------------------------------ */

static int64_t numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

static int has_negative_stride(const scanfuse_dl_tensor *t) {
    if (!t->strides) return 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->strides[d] < 0 && t->shape[d] > 1) return 1;
    return 0;
}

static int cpu_accessible(int32_t device_type) {
    return device_type == SCANFUSE_DL_CPU || device_type == SCANFUSE_DL_CUDA_HOST;
}

/* Copies an n-d array element by element; strides count elements (either sign). */
static void strided_copy(char *dst, const int64_t *dst_strides, const char *src,
                         const int64_t *src_strides, int ndim, const int64_t *shape,
                         size_t esize) {
    int64_t n = numel_of(ndim, shape);
    if (n <= 0) return;
    int64_t idx[SCANFUSE_MAX_DIMS] = {0};
    for (int64_t k = 0; k < n; k++) {
        int64_t so = 0, dof = 0;
        for (int d = 0; d < ndim; d++) {
            so += idx[d] * src_strides[d];
            dof += idx[d] * dst_strides[d];
        }
        memcpy(dst + dof * (int64_t)esize, src + so * (int64_t)esize, esize);
        for (int d = ndim - 1; d >= 0; d--) {
            if (++idx[d] < shape[d]) break;
            idx[d] = 0;
        }
    }
}

static void compact_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

static PyObject *shape_tuple(int ndim, const int64_t *shape) {
    PyObject *t = PyTuple_New(ndim);
    if (!t) return NULL;
    for (int d = 0; d < ndim; d++) {
        PyObject *v = PyLong_FromLongLong((long long)shape[d]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, d, v);
    }
    return t;
}

/* ------------------------------------------------------------------------------ */
/* DLImport: a consumed DLPack capsule                                              */
/* ------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    void *managed;     /* sfpy_managed or sfpy_managed_v; NULL once released */
    int versioned;
    int readonly;
    scanfuse_dl_tensor t; /* a copy, with shape/strides pointing at the arrays below */
    int64_t shape[SCANFUSE_MAX_DIMS];
    int64_t strides[SCANFUSE_MAX_DIMS];
    scanfuse_dtype dtype;
} DLImportObject;

static PyTypeObject DLImportType;

static void dlimport_release(DLImportObject *self) {
    void *m = self->managed;
    if (!m) return;
    self->managed = NULL;
    /* A deleter may run Python code (a producer's Py_DECREF): never with an exception
     * set, and whatever was pending is kept. */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (self->versioned) {
        sfpy_managed_v *mv = (sfpy_managed_v *)m;
        if (mv->deleter) mv->deleter(mv);
    } else {
        sfpy_managed *ml = (sfpy_managed *)m;
        if (ml->deleter) ml->deleter(ml);
    }
    PyErr_Restore(et, ev, tb);
}

/* Calls obj.__dlpack__(max_version=(1, 0)), falling back to obj.__dlpack__() when the
 * producer does not take max_version (a TypeError). */
static PyObject *call_dlpack(PyObject *obj, PyObject *method) {
    PyObject *args = PyTuple_New(0);
    PyObject *kwargs = Py_BuildValue("{s:(II)}", "max_version", SFPY_DL_MAJOR, SFPY_DL_MINOR);
    PyObject *cap = NULL;
    if (args && kwargs) cap = PyObject_Call(method, args, kwargs);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        cap = PyObject_CallNoArgs(method);
    }
    (void)obj;
    return cap;
}

/* Imports obj into self; `what` names the argument in messages.  0 or -1 (raised). */
static int dlimport_fill(DLImportObject *self, PyObject *obj, const char *what) {
    PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
    if (!method) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        raise_fmt(SCANFUSE_ERROR_ARGUMENT,
                  "%s must be a tensor or array that supports DLPack (__dlpack__), got %s",
                  what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyObject *cap = call_dlpack(obj, method);
    Py_DECREF(method);
    if (!cap) {
        /* Keep the producer's exception (a BufferError says why), but say which
         * argument it concerns. */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyErr_NormalizeException(&et, &ev, &tb);
        PyObject *s = ev ? PyObject_Str(ev) : NULL;
        const char *cs = s ? PyUnicode_AsUTF8(s) : NULL;
        if (!cs) PyErr_Clear();
        raise_fmt(SCANFUSE_ERROR_ARGUMENT, "%s: %s.__dlpack__() failed: %s", what,
                  Py_TYPE(obj)->tp_name, cs ? cs : "(no message)");
        Py_XDECREF(s);
        /* chain the producer's exception as the cause */
        PyObject *nt, *nv, *ntb;
        PyErr_Fetch(&nt, &nv, &ntb);
        PyErr_NormalizeException(&nt, &nv, &ntb);
        if (nv && ev) {
            Py_INCREF(ev);
            PyException_SetCause(nv, ev);
        }
        PyErr_Restore(nt, nv, ntb);
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        return -1;
    }
    const scanfuse_dl_tensor *src;
    if (PyCapsule_IsValid(cap, CAP_VERSIONED)) {
        sfpy_managed_v *mv = (sfpy_managed_v *)PyCapsule_GetPointer(cap, CAP_VERSIONED);
        if (!mv) {
            Py_DECREF(cap);
            return -1;
        }
        if (mv->version.major != SFPY_DL_MAJOR) {
            /* Not ours to consume: the capsule's destructor releases it. */
            raise_fmt(SCANFUSE_ERROR_UNSUPPORTED,
                      "%s: DLPack version %u.%u is not supported (scanfuse reads %u.x)", what,
                      (unsigned)mv->version.major, (unsigned)mv->version.minor, SFPY_DL_MAJOR);
            Py_DECREF(cap);
            return -1;
        }
        if (PyCapsule_SetName(cap, CAP_VERSIONED_USED) != 0) {
            Py_DECREF(cap);
            return -1;
        }
        self->managed = mv;
        self->versioned = 1;
        self->readonly = (mv->flags & SFPY_DL_FLAG_READ_ONLY) != 0;
        src = &mv->dl_tensor;
    } else if (PyCapsule_IsValid(cap, CAP_LEGACY)) {
        sfpy_managed *ml = (sfpy_managed *)PyCapsule_GetPointer(cap, CAP_LEGACY);
        if (!ml) {
            Py_DECREF(cap);
            return -1;
        }
        if (PyCapsule_SetName(cap, CAP_LEGACY_USED) != 0) {
            Py_DECREF(cap);
            return -1;
        }
        self->managed = ml;
        self->versioned = 0;
        self->readonly = 0;
        src = &ml->dl_tensor;
    } else {
        const char *name = PyCapsule_CheckExact(cap) ? PyCapsule_GetName(cap) : NULL;
        PyErr_Clear();
        raise_fmt(SCANFUSE_ERROR_ARGUMENT,
                  "%s: %s.__dlpack__() returned %s%s%s, not a DLPack capsule "
                  "('dltensor' or 'dltensor_versioned')",
                  what, Py_TYPE(obj)->tp_name, name ? "a capsule named '" : Py_TYPE(cap)->tp_name,
                  name ? name : "", name ? "'" : "");
        Py_DECREF(cap);
        return -1;
    }
    /* From here on we own the managed tensor; the renamed capsule does nothing. */
    Py_DECREF(cap);

    if (src->ndim < 0 || src->ndim > SCANFUSE_MAX_DIMS) {
        raise_fmt(SCANFUSE_ERROR_SHAPE, "%s has %d dims; scanfuse supports at most %d", what,
                  (int)src->ndim, SCANFUSE_MAX_DIMS);
        return -1; /* the caller's dealloc releases the managed tensor */
    }
    if (src->ndim > 0 && !src->shape) {
        raise_fmt(SCANFUSE_ERROR_SHAPE, "%s: DLPack tensor has no shape array", what);
        return -1;
    }
    if (src->dtype.code == SCANFUSE_DL_COMPLEX) {
        raise_fmt(SCANFUSE_ERROR_DTYPE, "%s: complex dtypes are not supported (complex%d)", what,
                  (int)src->dtype.bits);
        return -1;
    }
    if (scanfuse_dtype_from_dl(src->dtype, &self->dtype) != SCANFUSE_OK) {
        raise_fmt(SCANFUSE_ERROR_DTYPE,
                  "%s: unsupported DLPack dtype (code %d, bits %d, lanes %d); scanfuse takes "
                  "bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64",
                  what, (int)src->dtype.code, (int)src->dtype.bits, (int)src->dtype.lanes);
        return -1;
    }
    self->t = *src;
    for (int d = 0; d < src->ndim; d++) {
        if (src->shape[d] < 0) {
            raise_fmt(SCANFUSE_ERROR_SHAPE, "%s has negative size %lld in dim %d", what,
                      (long long)src->shape[d], d);
            return -1;
        }
        self->shape[d] = src->shape[d];
    }
    if (src->strides)
        for (int d = 0; d < src->ndim; d++) self->strides[d] = src->strides[d];
    else
        compact_strides(src->ndim, self->shape, self->strides);
    self->t.shape = self->shape;
    self->t.strides = self->strides;
    return 0;
}

static DLImportObject *dlimport_new(PyObject *obj, const char *what) {
    DLImportObject *self = PyObject_New(DLImportObject, &DLImportType);
    if (!self) return NULL;
    self->managed = NULL;
    self->versioned = 0;
    self->readonly = 0;
    memset(&self->t, 0, sizeof self->t);
    self->dtype = SCANFUSE_DTYPE_NONE;
    if (dlimport_fill(self, obj, what) != 0) {
        Py_DECREF(self);
        return NULL;
    }
    return self;
}

static PyObject *dlimport_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"obj", "what", NULL};
    PyObject *obj;
    const char *what = "argument";
    (void)type;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|s:DLImport", kwlist, &obj, &what))
        return NULL;
    return (PyObject *)dlimport_new(obj, what);
}

static void dlimport_dealloc(DLImportObject *self) {
    dlimport_release(self);
    PyObject_Free(self);
}

static int dlimport_check_open(DLImportObject *self) {
    if (!self->managed) {
        raise_status(SCANFUSE_ERROR_STATE, "DLImport: the tensor was already released");
        return -1;
    }
    return 0;
}

static PyObject *dlimport_close(DLImportObject *self, PyObject *unused) {
    (void)unused;
    dlimport_release(self);
    Py_RETURN_NONE;
}

static PyObject *dlimport_enter(DLImportObject *self, PyObject *unused) {
    (void)unused;
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *dlimport_exit(DLImportObject *self, PyObject *args) {
    (void)args;
    dlimport_release(self);
    Py_RETURN_FALSE;
}

static PyObject *dlimport_get_dtype(DLImportObject *self, void *c) {
    (void)c;
    return PyLong_FromLong((long)self->dtype);
}
static PyObject *dlimport_get_dtype_name(DLImportObject *self, void *c) {
    (void)c;
    return PyUnicode_FromString(scanfuse_dtype_name(self->dtype));
}
static PyObject *dlimport_get_shape(DLImportObject *self, void *c) {
    (void)c;
    return shape_tuple(self->t.ndim, self->shape);
}
static PyObject *dlimport_get_strides(DLImportObject *self, void *c) {
    (void)c;
    return shape_tuple(self->t.ndim, self->strides);
}
static PyObject *dlimport_get_device(DLImportObject *self, void *c) {
    (void)c;
    return Py_BuildValue("(ii)", (int)self->t.device.device_type, (int)self->t.device.device_id);
}
static PyObject *dlimport_get_data_ptr(DLImportObject *self, void *c) {
    (void)c;
    return PyLong_FromVoidPtr(self->t.data ? (char *)self->t.data + self->t.byte_offset : NULL);
}
static PyObject *dlimport_get_versioned(DLImportObject *self, void *c) {
    (void)c;
    return PyBool_FromLong(self->versioned);
}
static PyObject *dlimport_get_readonly(DLImportObject *self, void *c) {
    (void)c;
    return PyBool_FromLong(self->readonly);
}
static PyObject *dlimport_get_closed(DLImportObject *self, void *c) {
    (void)c;
    return PyBool_FromLong(self->managed == NULL);
}

static PyGetSetDef dlimport_getset[] = {
    {"dtype", (getter)dlimport_get_dtype, NULL, "scanfuse dtype code", NULL},
    {"dtype_name", (getter)dlimport_get_dtype_name, NULL, "canonical dtype name", NULL},
    {"shape", (getter)dlimport_get_shape, NULL, "shape tuple", NULL},
    {"strides", (getter)dlimport_get_strides, NULL, "strides in elements", NULL},
    {"device", (getter)dlimport_get_device, NULL, "(DLPack device type, device id)", NULL},
    {"data_ptr", (getter)dlimport_get_data_ptr, NULL, "address of element 0", NULL},
    {"versioned", (getter)dlimport_get_versioned, NULL, "came as a versioned capsule", NULL},
    {"readonly", (getter)dlimport_get_readonly, NULL, "the producer marked it read-only", NULL},
    {"closed", (getter)dlimport_get_closed, NULL, "the managed tensor was released", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef dlimport_methods[] = {
    {"close", (PyCFunction)dlimport_close, METH_NOARGS,
     "Releases the managed tensor (calls the producer's deleter).  Idempotent."},
    {"__enter__", (PyCFunction)dlimport_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)dlimport_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyTypeObject DLImportType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scanfuse._scanfuse.DLImport",
    .tp_basicsize = sizeof(DLImportObject),
    .tp_dealloc = (destructor)dlimport_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "DLImport(obj, what='argument'): consumes obj.__dlpack__() and holds the "
              "tensor until close().",
    .tp_methods = dlimport_methods,
    .tp_getset = dlimport_getset,
    .tp_new = dlimport_tp_new,
};

/* ------------------------------------------------------------------------------ */
/* Tensor: a CPU result buffer that exports itself through DLPack                   */
/* ------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    void *data; /* posix_memalign'd, at least 1 byte */
    size_t nbytes;
    scanfuse_dtype dtype;
    int ndim;
    int64_t shape[SCANFUSE_MAX_DIMS];
    int64_t strides[SCANFUSE_MAX_DIMS];
} TensorObject;

static PyTypeObject TensorType;

static TensorObject *tensor_empty(scanfuse_dtype dtype, int ndim, const int64_t *shape) {
    size_t esize = scanfuse_dtype_size(dtype);
    if (esize == 0 || ndim < 0 || ndim > SCANFUSE_MAX_DIMS) {
        raise_status(SCANFUSE_ERROR_ARGUMENT, "Tensor: invalid dtype or rank");
        return NULL;
    }
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            raise_status(SCANFUSE_ERROR_SHAPE, "Tensor: negative size");
            return NULL;
        }
        if (shape[d] != 0 && n > (SIZE_MAX / 2) / (size_t)shape[d] / esize) {
            raise_status(SCANFUSE_ERROR_MEMORY, "Tensor: size overflows");
            return NULL;
        }
        n *= (size_t)shape[d];
    }
    TensorObject *t = PyObject_New(TensorObject, &TensorType);
    if (!t) return NULL;
    t->nbytes = n * esize;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
    compact_strides(ndim, t->shape, t->strides);
    void *p = NULL;
    if (posix_memalign(&p, 64, t->nbytes ? t->nbytes : 1) != 0) p = NULL;
    t->data = p;
    if (!p) {
        t->nbytes = 0;
        Py_DECREF(t);
        PyErr_NoMemory();
        return NULL;
    }
    return t;
}

static void tensor_dealloc(TensorObject *self) {
    free(self->data);
    PyObject_Free(self);
}

static void fill_export(TensorObject *self, scanfuse_dl_tensor *dl) {
    dl->data = self->data;
    dl->device.device_type = SCANFUSE_DL_CPU;
    dl->device.device_id = 0;
    dl->ndim = self->ndim;
    dl->dtype = scanfuse_dtype_to_dl(self->dtype);
    dl->shape = self->shape;
    dl->strides = self->strides;
    dl->byte_offset = 0;
}

/* Deleters run when a consumer is done; they may be called from any thread. */
static void drop_manager_ref(void *ctx) {
    if (!ctx || !Py_IsInitialized()) return; /* at shutdown: leak rather than crash */
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(g);
}

static void legacy_deleter(sfpy_managed *m) {
    if (!m) return;
    drop_manager_ref(m->manager_ctx);
    PyMem_RawFree(m);
}

static void versioned_deleter(sfpy_managed_v *m) {
    if (!m) return;
    drop_manager_ref(m->manager_ctx);
    PyMem_RawFree(m);
}

/* A capsule that was never consumed releases its tensor itself. */
static void legacy_capsule_destructor(PyObject *cap) {
    if (PyCapsule_IsValid(cap, CAP_LEGACY_USED)) return;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    sfpy_managed *m = (sfpy_managed *)PyCapsule_GetPointer(cap, CAP_LEGACY);
    if (m) {
        if (m->deleter) m->deleter(m);
    } else {
        PyErr_WriteUnraisable(cap);
    }
    PyErr_Restore(et, ev, tb);
}

static void versioned_capsule_destructor(PyObject *cap) {
    if (PyCapsule_IsValid(cap, CAP_VERSIONED_USED)) return;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    sfpy_managed_v *m = (sfpy_managed_v *)PyCapsule_GetPointer(cap, CAP_VERSIONED);
    if (m) {
        if (m->deleter) m->deleter(m);
    } else {
        PyErr_WriteUnraisable(cap);
    }
    PyErr_Restore(et, ev, tb);
}

static PyObject *tensor_export(TensorObject *self, int versioned, uint64_t flags) {
    if (versioned) {
        sfpy_managed_v *m = (sfpy_managed_v *)PyMem_RawMalloc(sizeof *m);
        if (!m) return PyErr_NoMemory();
        m->version.major = SFPY_DL_MAJOR;
        m->version.minor = SFPY_DL_MINOR;
        m->flags = flags;
        fill_export(self, &m->dl_tensor);
        Py_INCREF(self);
        m->manager_ctx = self;
        m->deleter = versioned_deleter;
        PyObject *cap = PyCapsule_New(m, CAP_VERSIONED, versioned_capsule_destructor);
        if (!cap) versioned_deleter(m);
        return cap;
    }
    sfpy_managed *m = (sfpy_managed *)PyMem_RawMalloc(sizeof *m);
    if (!m) return PyErr_NoMemory();
    fill_export(self, &m->dl_tensor);
    Py_INCREF(self);
    m->manager_ctx = self;
    m->deleter = legacy_deleter;
    PyObject *cap = PyCapsule_New(m, CAP_LEGACY, legacy_capsule_destructor);
    if (!cap) legacy_deleter(m);
    return cap;
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) */
static PyObject *tensor_dlpack(TensorObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream,
                                     &max_version, &dl_device, &copy))
        return NULL;
    (void)stream; /* a CPU tensor: there is no stream to synchronize with */
    if (dl_device != Py_None) {
        int dt = 0, di = 0;
        if (!PyArg_ParseTuple(dl_device, "ii:dl_device", &dt, &di)) return NULL;
        if (dt != SCANFUSE_DL_CPU) {
            PyErr_Format(PyExc_BufferError,
                         "scanfuse.Tensor lives on the cpu; it cannot be exported to DLPack "
                         "device type %d",
                         dt);
            return NULL;
        }
    }
    int versioned = 0;
    if (max_version != Py_None) {
        unsigned int major = 0, minor = 0;
        if (!PyArg_ParseTuple(max_version, "II:max_version", &major, &minor)) return NULL;
        versioned = major >= SFPY_DL_MAJOR;
    }
    int do_copy = 0;
    if (copy != Py_None) {
        do_copy = PyObject_IsTrue(copy);
        if (do_copy < 0) return NULL;
    }
    if (!do_copy) return tensor_export(self, versioned, 0);
    if (!versioned) {
        PyErr_SetString(PyExc_BufferError,
                        "copy=True needs a versioned DLPack capsule (max_version >= (1, 0))");
        return NULL;
    }
    TensorObject *c = tensor_empty(self->dtype, self->ndim, self->shape);
    if (!c) return NULL;
    memcpy(c->data, self->data, self->nbytes);
    PyObject *cap = tensor_export(c, 1, SFPY_DL_FLAG_IS_COPIED);
    Py_DECREF(c);
    return cap;
}

static PyObject *tensor_dlpack_device(TensorObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return Py_BuildValue("(ii)", SCANFUSE_DL_CPU, 0);
}

static PyObject *tensor_get_shape(TensorObject *self, void *c) {
    (void)c;
    return shape_tuple(self->ndim, self->shape);
}
static PyObject *tensor_get_strides(TensorObject *self, void *c) {
    (void)c;
    return shape_tuple(self->ndim, self->strides);
}
static PyObject *tensor_get_dtype(TensorObject *self, void *c) {
    (void)c;
    return PyUnicode_FromString(scanfuse_dtype_name(self->dtype));
}
static PyObject *tensor_get_ndim(TensorObject *self, void *c) {
    (void)c;
    return PyLong_FromLong(self->ndim);
}
static PyObject *tensor_get_nbytes(TensorObject *self, void *c) {
    (void)c;
    return PyLong_FromSize_t(self->nbytes);
}
static PyObject *tensor_get_data_ptr(TensorObject *self, void *c) {
    (void)c;
    return PyLong_FromVoidPtr(self->data);
}
static PyObject *tensor_get_device(TensorObject *self, void *c) {
    (void)self;
    (void)c;
    return PyUnicode_FromString("cpu");
}

static PyObject *tensor_repr(TensorObject *self) {
    char buf[256];
    int n = snprintf(buf, sizeof buf, "scanfuse.Tensor(shape=(");
    for (int d = 0; d < self->ndim && n < (int)sizeof buf - 40; d++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%lld", d ? ", " : "",
                      (long long)self->shape[d]);
    snprintf(buf + n, sizeof buf - (size_t)n, "%s), dtype=%s, device=cpu)",
             self->ndim == 1 ? "," : "", scanfuse_dtype_name(self->dtype));
    return PyUnicode_FromString(buf);
}

static PyGetSetDef tensor_getset[] = {
    {"shape", (getter)tensor_get_shape, NULL, "shape tuple", NULL},
    {"strides", (getter)tensor_get_strides, NULL, "strides in elements (compact)", NULL},
    {"dtype", (getter)tensor_get_dtype, NULL, "canonical dtype name", NULL},
    {"ndim", (getter)tensor_get_ndim, NULL, "number of dims", NULL},
    {"nbytes", (getter)tensor_get_nbytes, NULL, "size of the buffer in bytes", NULL},
    {"data_ptr", (getter)tensor_get_data_ptr, NULL, "address of the buffer", NULL},
    {"device", (getter)tensor_get_device, NULL, "'cpu'", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef tensor_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))tensor_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a DLPack "
     "capsule ('dltensor_versioned' when max_version >= (1, 0), else 'dltensor') that keeps "
     "this buffer alive until the consumer's deleter runs."},
    {"__dlpack_device__", (PyCFunction)tensor_dlpack_device, METH_NOARGS,
     "(1, 0): the cpu."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject TensorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scanfuse.Tensor",
    .tp_basicsize = sizeof(TensorObject),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_repr = (reprfunc)tensor_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A result buffer owned by scanfuse (compact, row-major, on the cpu).  Convert it "
              "with numpy.from_dlpack / torch.from_dlpack (no copy).",
    .tp_methods = tensor_methods,
    .tp_getset = tensor_getset,
};

/* ------------------------------------------------------------------------------ */
/* Program                                                                          */
/* ------------------------------------------------------------------------------ */

typedef struct {
    scanfuse_dtype dtype;
    int ndim;
    int64_t shape[SCANFUSE_MAX_DIMS];
} sfpy_sig;

typedef struct {
    PyObject_HEAD
    scanfuse_program *prog;
    PyThread_type_lock lock;
    int device; /* scanfuse_device */
    int device_id;
    int ninputs, noutputs;
    sfpy_sig *in_sig, *out_sig;
    PyObject *inputs;  /* tuple of (name, dtype name, shape) */
    PyObject *outputs; /* tuple of (name, dtype name, shape) */
} ProgramObject;

static PyTypeObject ProgramType;

static void program_dealloc(ProgramObject *self) {
    scanfuse_program_free(self->prog);
    if (self->lock) PyThread_free_lock(self->lock);
    PyMem_Free(self->in_sig);
    PyMem_Free(self->out_sig);
    Py_XDECREF(self->inputs);
    Py_XDECREF(self->outputs);
    PyObject_Free(self);
}

/* Reads a fusion's signature into (tuple, sig array). */
static int read_signature(const scanfuse_fusion *f, int is_output, int n, PyObject **tuple,
                          sfpy_sig **sig) {
    *tuple = PyTuple_New(n);
    *sig = (sfpy_sig *)PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof **sig);
    if (!*tuple || !*sig) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *name = NULL;
        sfpy_sig *s = &(*sig)[i];
        scanfuse_status st =
            is_output ? scanfuse_fusion_output_info(f, i, &name, &s->dtype, &s->ndim, s->shape)
                      : scanfuse_fusion_input_info(f, i, &name, &s->dtype, &s->ndim, s->shape);
        if (st != SCANFUSE_OK) {
            raise_status(st, "program: cannot read the fusion's signature");
            return -1;
        }
        PyObject *shape = shape_tuple(s->ndim, s->shape);
        PyObject *item = shape ? Py_BuildValue("(ssN)", name ? name : "",
                                               scanfuse_dtype_name(s->dtype), shape)
                               : NULL;
        if (!item) return -1;
        PyTuple_SET_ITEM(*tuple, i, item);
    }
    return 0;
}

/* Compiles a fusion (which the caller frees) into a Program object. */
static PyObject *program_from_fusion(const scanfuse_fusion *f, int device, int device_id,
                                     int threads) {
    if (scanfuse_fusion_status(f) != SCANFUSE_OK)
        return raise_status(scanfuse_fusion_status(f), scanfuse_fusion_error(f));
    if (scanfuse_fusion_num_outputs(f) <= 0)
        return raise_status(SCANFUSE_ERROR_ARGUMENT, "compile: the fusion has no outputs");
    scanfuse_options o;
    scanfuse_options_init(&o);
    o.device = (scanfuse_device)device;
    o.device_id = device_id;
    o.threads = threads;
    scanfuse_program *prog;
    Py_BEGIN_ALLOW_THREADS
    prog = scanfuse_compile(f, &o);
    Py_END_ALLOW_THREADS
    if (!prog) return PyErr_NoMemory();
    if (scanfuse_program_status(prog) != SCANFUSE_OK) {
        raise_status(scanfuse_program_status(prog), scanfuse_program_error(prog));
        scanfuse_program_free(prog);
        return NULL;
    }
    ProgramObject *self = PyObject_New(ProgramObject, &ProgramType);
    if (!self) {
        scanfuse_program_free(prog);
        return NULL;
    }
    self->prog = prog;
    self->lock = NULL;
    self->device = device;
    self->device_id = device_id;
    self->ninputs = scanfuse_fusion_num_inputs(f);
    self->noutputs = scanfuse_fusion_num_outputs(f);
    self->in_sig = self->out_sig = NULL;
    self->inputs = self->outputs = NULL;
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    if (read_signature(f, 0, self->ninputs, &self->inputs, &self->in_sig) != 0 ||
        read_signature(f, 1, self->noutputs, &self->outputs, &self->out_sig) != 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* One tensor argument of a run, imported and possibly staged through a compact copy. */
typedef struct {
    DLImportObject *imp; /* owned reference */
    int borrowed_import; /* imp came from the caller: do not close it */
    PyObject *result;    /* the object returned for an output (owned) */
    scanfuse_dl_tensor t; /* what scanfuse_run sees */
    int64_t stage_strides[SCANFUSE_MAX_DIMS];
    void *stage;          /* compact temporary for negative strides (PyMem_RawMalloc) */
} run_arg;

static void run_arg_clear(run_arg *a) {
    if (a->imp) {
        if (!a->borrowed_import) dlimport_release(a->imp);
        Py_DECREF(a->imp);
        a->imp = NULL;
    }
    Py_CLEAR(a->result);
    PyMem_RawFree(a->stage);
    a->stage = NULL;
}

static int stage_negative(run_arg *a, const char *what, const char *name, int is_output) {
    DLImportObject *imp = a->imp;
    a->t = imp->t;
    if (!has_negative_stride(&imp->t)) return 0;
    if (!cpu_accessible(imp->t.device.device_type)) {
        raise_fmt(SCANFUSE_ERROR_ARGUMENT,
                  "run: %s '%s' has negative strides; scanfuse takes non-negative strides on "
                  "this device (pass a contiguous tensor)",
                  what, name);
        return -1;
    }
    size_t esize = scanfuse_dtype_size(imp->dtype);
    int64_t n = numel_of(imp->t.ndim, imp->shape);
    a->stage = PyMem_RawMalloc((size_t)(n > 0 ? n : 1) * esize);
    if (!a->stage) {
        PyErr_NoMemory();
        return -1;
    }
    compact_strides(imp->t.ndim, imp->shape, a->stage_strides);
    if (!is_output && n > 0)
        strided_copy((char *)a->stage, a->stage_strides,
                     (const char *)imp->t.data + imp->t.byte_offset, imp->strides, imp->t.ndim,
                     imp->shape, esize);
    a->t.data = a->stage;
    a->t.byte_offset = 0;
    a->t.strides = a->stage_strides;
    return 0;
}

/* Program.run(inputs, outputs=None) -> tuple of outputs */
static PyObject *program_run(ProgramObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"inputs", "outputs", NULL};
    PyObject *inputs_obj, *outputs_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:run", kwlist, &inputs_obj, &outputs_obj))
        return NULL;
    PyObject *ins = PySequence_Fast(inputs_obj, "run: inputs must be a sequence");
    if (!ins) return NULL;
    PyObject *outs = NULL;
    if (outputs_obj != Py_None) {
        outs = PySequence_Fast(outputs_obj, "run: outputs must be a sequence or None");
        if (!outs) {
            Py_DECREF(ins);
            return NULL;
        }
    }
    PyObject *result = NULL;
    int nin = self->ninputs, nout = self->noutputs;
    run_arg *a = (run_arg *)PyMem_Calloc((size_t)(nin + nout) + 1, sizeof *a);
    scanfuse_dl_tensor *tin = (scanfuse_dl_tensor *)PyMem_Calloc((size_t)nin + 1, sizeof *tin);
    scanfuse_dl_tensor *tout = (scanfuse_dl_tensor *)PyMem_Calloc((size_t)nout + 1, sizeof *tout);
    if (!a || !tin || !tout) {
        PyErr_NoMemory();
        goto done;
    }
    if (PySequence_Fast_GET_SIZE(ins) != nin) {
        raise_fmt(SCANFUSE_ERROR_ARGUMENT, "run: %zd inputs given, the program takes %d",
                  PySequence_Fast_GET_SIZE(ins), nin);
        goto done;
    }
    if (outs && PySequence_Fast_GET_SIZE(outs) != nout) {
        raise_fmt(SCANFUSE_ERROR_ARGUMENT, "run: %zd outputs given, the program has %d",
                  PySequence_Fast_GET_SIZE(outs), nout);
        goto done;
    }
    /* Inputs. */
    for (int i = 0; i < nin; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(ins, i);
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(PyTuple_GET_ITEM(self->inputs, i), 0));
        if (!name) goto done;
        char what[160];
        PyOS_snprintf(what, sizeof what, "input '%s'", name);
        if (Py_IS_TYPE(o, &DLImportType)) {
            Py_INCREF(o);
            a[i].imp = (DLImportObject *)o;
            a[i].borrowed_import = 1;
            if (dlimport_check_open(a[i].imp) != 0) goto done;
        } else {
            a[i].imp = dlimport_new(o, what);
            if (!a[i].imp) goto done;
        }
        if (stage_negative(&a[i], "input", name, 0) != 0) goto done;
        tin[i] = a[i].t;
    }
    /* Outputs: given ones are imported; missing ones are allocated (cpu programs). */
    for (int j = 0; j < nout; j++) {
        run_arg *r = &a[nin + j];
        PyObject *o = outs ? PySequence_Fast_GET_ITEM(outs, j) : Py_None;
        const char *name =
            PyUnicode_AsUTF8(PyTuple_GET_ITEM(PyTuple_GET_ITEM(self->outputs, j), 0));
        if (!name) goto done;
        if (o == Py_None) {
            if (self->device == SCANFUSE_DEVICE_CUDA) {
                raise_fmt(SCANFUSE_ERROR_ARGUMENT,
                          "run: output '%s' must be given for a cuda program (scanfuse "
                          "allocates cpu results only)",
                          name);
                goto done;
            }
            const sfpy_sig *s = &self->out_sig[j];
            TensorObject *t = tensor_empty(s->dtype, s->ndim, s->shape);
            if (!t) goto done;
            r->result = (PyObject *)t;
            fill_export(t, &r->t);
        } else {
            char what[160];
            PyOS_snprintf(what, sizeof what, "output '%s'", name);
            if (Py_IS_TYPE(o, &DLImportType)) {
                Py_INCREF(o);
                r->imp = (DLImportObject *)o;
                r->borrowed_import = 1;
                if (dlimport_check_open(r->imp) != 0) goto done;
            } else {
                r->imp = dlimport_new(o, what);
                if (!r->imp) goto done;
            }
            if (r->imp->readonly) {
                raise_fmt(SCANFUSE_ERROR_ARGUMENT, "run: output '%s' is read-only", name);
                goto done;
            }
            Py_INCREF(o);
            r->result = o;
            if (stage_negative(r, "output", name, 1) != 0) goto done;
        }
        tout[j] = r->t;
    }
    /* Run with the GIL released; runs of one program are serialized by its lock. */
    scanfuse_status st;
    char errbuf[1024];
    errbuf[0] = '\0';
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    st = scanfuse_run(self->prog, tin, nin, tout, nout);
    if (st != SCANFUSE_OK) {
        const char *e = scanfuse_program_error(self->prog);
        snprintf(errbuf, sizeof errbuf, "%s", e && *e ? e : scanfuse_status_string(st));
    }
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (st != SCANFUSE_OK) {
        raise_status(st, errbuf);
        goto done;
    }
    /* Copy staged outputs back into negative-stride destinations. */
    for (int j = 0; j < nout; j++) {
        run_arg *r = &a[nin + j];
        if (!r->stage) continue;
        DLImportObject *imp = r->imp;
        strided_copy((char *)imp->t.data + imp->t.byte_offset, imp->strides,
                     (const char *)r->stage, r->stage_strides, imp->t.ndim, imp->shape,
                     scanfuse_dtype_size(imp->dtype));
    }
    result = PyTuple_New(nout);
    if (!result) goto done;
    for (int j = 0; j < nout; j++) {
        PyObject *o = a[nin + j].result;
        Py_INCREF(o);
        PyTuple_SET_ITEM(result, j, o);
    }
done:
    if (a)
        for (int i = 0; i < nin + nout; i++) run_arg_clear(&a[i]);
    PyMem_Free(a);
    PyMem_Free(tin);
    PyMem_Free(tout);
    Py_DECREF(ins);
    Py_XDECREF(outs);
    return result;
}

static PyObject *owned_string(char *s) {
    if (!s) Py_RETURN_NONE;
    PyObject *r = PyUnicode_FromString(s);
    scanfuse_free(s);
    return r;
}

static PyObject *program_get_inputs(ProgramObject *self, void *c) {
    (void)c;
    Py_INCREF(self->inputs);
    return self->inputs;
}
static PyObject *program_get_outputs(ProgramObject *self, void *c) {
    (void)c;
    Py_INCREF(self->outputs);
    return self->outputs;
}
static PyObject *program_get_segments(ProgramObject *self, void *c) {
    (void)c;
    return owned_string(scanfuse_program_segments(self->prog));
}
static PyObject *program_get_ir(ProgramObject *self, void *c) {
    (void)c;
    return owned_string(scanfuse_program_ir(self->prog));
}
static PyObject *program_get_num_kernels(ProgramObject *self, void *c) {
    (void)c;
    return PyLong_FromLong(scanfuse_program_num_kernels(self->prog));
}
static PyObject *program_get_device(ProgramObject *self, void *c) {
    (void)c;
    return Py_BuildValue("(ii)", self->device, self->device_id);
}

static PyGetSetDef program_getset[] = {
    {"inputs", (getter)program_get_inputs, NULL, "((name, dtype, shape), ...)", NULL},
    {"outputs", (getter)program_get_outputs, NULL, "((name, dtype, shape), ...)", NULL},
    {"segments", (getter)program_get_segments, NULL, "the kernels and the bytes they move", NULL},
    {"ir", (getter)program_get_ir, NULL, "the IR after the pass pipeline", NULL},
    {"num_kernels", (getter)program_get_num_kernels, NULL, "kernels per run", NULL},
    {"device", (getter)program_get_device, NULL, "(scanfuse device, device id)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef program_methods[] = {
    {"run", (PyCFunction)(void (*)(void))program_run, METH_VARARGS | METH_KEYWORDS,
     "run(inputs, outputs=None) -> tuple: inputs and outputs in the program's order; a "
     "None output (or outputs=None) is allocated as a scanfuse.Tensor (cpu programs)."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scanfuse._scanfuse.Program",
    .tp_basicsize = sizeof(ProgramObject),
    .tp_dealloc = (destructor)program_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled scanfuse program (see compile_text / compile_scan).",
    .tp_methods = program_methods,
    .tp_getset = program_getset,
};

/* ------------------------------------------------------------------------------ */
/* Module functions                                                                 */
/* ------------------------------------------------------------------------------ */

static int check_device(int device) {
    if (device != SCANFUSE_DEVICE_CPU && device != SCANFUSE_DEVICE_CUDA &&
        device != SCANFUSE_DEVICE_REFERENCE) {
        raise_fmt(SCANFUSE_ERROR_ARGUMENT, "compile: unknown device %d", device);
        return -1;
    }
    return 0;
}

/* compile_text(text, device=0, device_id=0, threads=0, filename=None) -> Program */
static PyObject *mod_compile_text(PyObject *m, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"text", "device", "device_id", "threads", "filename", NULL};
    const char *text, *filename = NULL;
    int device = SCANFUSE_DEVICE_CPU, device_id = 0, threads = 0;
    (void)m;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|iiiz:compile_text", kwlist, &text, &device,
                                     &device_id, &threads, &filename))
        return NULL;
    if (check_device(device) != 0) return NULL;
    scanfuse_fusion *f = scanfuse_parse(text, filename);
    if (!f) return PyErr_NoMemory();
    PyObject *r = program_from_fusion(f, device, device_id, threads);
    scanfuse_fusion_free(f);
    return r;
}

/* compile_scan(op, dtype, shape, dim, out_dtype, flags, device, device_id, threads) */
static PyObject *mod_compile_scan(PyObject *m, PyObject *args) {
    const char *op;
    int dtype, out_dtype, flags, device, device_id, threads;
    PyObject *shape_obj;
    long long dim;
    (void)m;
    if (!PyArg_ParseTuple(args, "siOLiiiii:compile_scan", &op, &dtype, &shape_obj, &dim,
                          &out_dtype, &flags, &device, &device_id, &threads))
        return NULL;
    if (check_device(device) != 0) return NULL;
    PyObject *seq = PySequence_Fast(shape_obj, "compile_scan: shape must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t nd = PySequence_Fast_GET_SIZE(seq);
    int64_t shape[SCANFUSE_MAX_DIMS];
    if (nd > SCANFUSE_MAX_DIMS) {
        Py_DECREF(seq);
        return raise_fmt(SCANFUSE_ERROR_SHAPE, "%s: %zd dims; scanfuse supports at most %d", op,
                         nd, SCANFUSE_MAX_DIMS);
    }
    for (Py_ssize_t d = 0; d < nd; d++) {
        shape[d] = (int64_t)PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, d));
        if (shape[d] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    scanfuse_fusion *f = scanfuse_fusion_new();
    if (!f) return PyErr_NoMemory();
    scanfuse_value x = scanfuse_input(f, "input", (scanfuse_dtype)dtype, (int)nd, shape);
    if (strcmp(op, "cumsum") == 0 || strcmp(op, "cumprod") == 0) {
        scanfuse_value y = op[3] == 's'
                               ? scanfuse_cumsum(f, x, dim, (scanfuse_dtype)out_dtype, flags)
                               : scanfuse_cumprod(f, x, dim, (scanfuse_dtype)out_dtype, flags);
        scanfuse_output(f, y, "out");
    } else if (strcmp(op, "cummax") == 0 || strcmp(op, "cummin") == 0) {
        scanfuse_value v = SCANFUSE_NO_VALUE, i = SCANFUSE_NO_VALUE;
        if (op[4] == 'a')
            scanfuse_cummax(f, x, dim, flags, &v, &i);
        else
            scanfuse_cummin(f, x, dim, flags, &v, &i);
        scanfuse_output(f, v, "values");
        scanfuse_output(f, i, "indices");
    } else if (strcmp(op, "logcumsumexp") == 0) {
        scanfuse_value y = scanfuse_logcumsumexp(f, x, dim, flags);
        scanfuse_output(f, y, "out");
    } else {
        scanfuse_fusion_free(f);
        return raise_fmt(SCANFUSE_ERROR_ARGUMENT, "compile_scan: unknown scan op '%s'", op);
    }
    PyObject *r = program_from_fusion(f, device, device_id, threads);
    scanfuse_fusion_free(f);
    return r;
}

/* dtype_parse(name) -> code; raises scanfuse.Error for unknown or complex names. */
static PyObject *mod_dtype_parse(PyObject *m, PyObject *arg) {
    (void)m;
    const char *s = PyUnicode_AsUTF8(arg);
    if (!s) return NULL;
    scanfuse_dtype dt;
    if (scanfuse_dtype_parse(s, &dt) != SCANFUSE_OK) {
        if (strstr(s, "complex") || ((s[0] == '<' || s[0] == '>' || s[0] == '=' || s[0] == '|') &&
                                     s[1] == 'c'))
            return raise_fmt(SCANFUSE_ERROR_DTYPE, "complex dtypes are not supported: '%s'", s);
        if (s[0] == '>' && s[1] && s[2] && !(s[2] == '1' && s[3] == '\0'))
            return raise_fmt(SCANFUSE_ERROR_DTYPE, "big-endian dtypes are not supported: '%s'", s);
        return raise_fmt(SCANFUSE_ERROR_DTYPE,
                         "unknown dtype '%s' (scanfuse takes bool, uint8, int8, int16, int32, "
                         "int64, float16, bfloat16, float32, float64)",
                         s);
    }
    return PyLong_FromLong((long)dt);
}

static PyObject *mod_dtype_name(PyObject *m, PyObject *arg) {
    (void)m;
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    return PyUnicode_FromString(scanfuse_dtype_name((scanfuse_dtype)v));
}

static PyObject *mod_dtype_size(PyObject *m, PyObject *arg) {
    (void)m;
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    return PyLong_FromSize_t(scanfuse_dtype_size((scanfuse_dtype)v));
}

/* empty(dtype, shape) -> Tensor (uninitialized; for tests and callers that want a buffer) */
static PyObject *mod_empty(PyObject *m, PyObject *args) {
    int dtype;
    PyObject *shape_obj;
    (void)m;
    if (!PyArg_ParseTuple(args, "iO:empty", &dtype, &shape_obj)) return NULL;
    PyObject *seq = PySequence_Fast(shape_obj, "empty: shape must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t nd = PySequence_Fast_GET_SIZE(seq);
    int64_t shape[SCANFUSE_MAX_DIMS];
    if (nd > SCANFUSE_MAX_DIMS) {
        Py_DECREF(seq);
        return raise_fmt(SCANFUSE_ERROR_SHAPE, "empty: at most %d dims", SCANFUSE_MAX_DIMS);
    }
    for (Py_ssize_t d = 0; d < nd; d++) {
        shape[d] = (int64_t)PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, d));
        if (shape[d] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    TensorObject *t = tensor_empty((scanfuse_dtype)dtype, (int)nd, shape);
    if (t) memset(t->data, 0, t->nbytes);
    return (PyObject *)t;
}

static PyMethodDef module_methods[] = {
    {"compile_text", (PyCFunction)(void (*)(void))mod_compile_text, METH_VARARGS | METH_KEYWORDS,
     "compile_text(text, device=0, device_id=0, threads=0, filename=None) -> Program"},
    {"compile_scan", (PyCFunction)mod_compile_scan, METH_VARARGS,
     "compile_scan(op, dtype, shape, dim, out_dtype, flags, device, device_id, threads) -> "
     "Program with input 'input' and outputs 'out' (or 'values', 'indices')"},
    {"dtype_parse", (PyCFunction)mod_dtype_parse, METH_O,
     "dtype_parse(name) -> scanfuse dtype code (scanfuse_dtype_parse)"},
    {"dtype_name", (PyCFunction)mod_dtype_name, METH_O, "dtype_name(code) -> canonical name"},
    {"dtype_size", (PyCFunction)mod_dtype_size, METH_O, "dtype_size(code) -> bytes"},
    {"empty", (PyCFunction)mod_empty, METH_VARARGS,
     "empty(dtype_code, shape) -> a zero-filled scanfuse.Tensor"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "scanfuse._scanfuse",
                                        "scanfuse's C binding (see the scanfuse package).", -1,
                                        module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__scanfuse(void);
PyMODINIT_FUNC PyInit__scanfuse(void) {
    if (PyType_Ready(&DLImportType) < 0 || PyType_Ready(&TensorType) < 0 ||
        PyType_Ready(&ProgramType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    PyObject *bases = PyTuple_Pack(2, PyExc_RuntimeError, PyExc_ValueError);
    if (!bases) goto fail;
    SfError = PyErr_NewExceptionWithDoc(
        "scanfuse.Error",
        "An error reported by scanfuse; the message is the C library's.  Attributes: status "
        "(the status name, e.g. 'invalid argument') and code (the scanfuse_status value).",
        bases, NULL);
    Py_DECREF(bases);
    if (!SfError) goto fail;
    Py_INCREF(SfError);
    if (PyModule_AddObject(m, "Error", SfError) < 0) goto fail;
    Py_INCREF(&DLImportType);
    if (PyModule_AddObject(m, "DLImport", (PyObject *)&DLImportType) < 0) goto fail;
    Py_INCREF(&TensorType);
    if (PyModule_AddObject(m, "Tensor", (PyObject *)&TensorType) < 0) goto fail;
    Py_INCREF(&ProgramType);
    if (PyModule_AddObject(m, "Program", (PyObject *)&ProgramType) < 0) goto fail;
    if (PyModule_AddIntConstant(m, "EXCLUSIVE", SCANFUSE_EXCLUSIVE) < 0 ||
        PyModule_AddIntConstant(m, "REVERSE", SCANFUSE_REVERSE) < 0 ||
        PyModule_AddIntConstant(m, "DEVICE_CPU", SCANFUSE_DEVICE_CPU) < 0 ||
        PyModule_AddIntConstant(m, "DEVICE_CUDA", SCANFUSE_DEVICE_CUDA) < 0 ||
        PyModule_AddIntConstant(m, "DEVICE_REFERENCE", SCANFUSE_DEVICE_REFERENCE) < 0 ||
        PyModule_AddIntConstant(m, "DTYPE_NONE", SCANFUSE_DTYPE_NONE) < 0 ||
        PyModule_AddIntConstant(m, "DL_CPU", SCANFUSE_DL_CPU) < 0 ||
        PyModule_AddIntConstant(m, "DL_CUDA", SCANFUSE_DL_CUDA) < 0 ||
        PyModule_AddIntConstant(m, "DL_CUDA_HOST", SCANFUSE_DL_CUDA_HOST) < 0 ||
        PyModule_AddIntConstant(m, "DL_CUDA_MANAGED", SCANFUSE_DL_CUDA_MANAGED) < 0 ||
        PyModule_AddIntConstant(m, "MAX_DIMS", SCANFUSE_MAX_DIMS) < 0 ||
        PyModule_AddStringConstant(m, "VERSION", SCANFUSE_VERSION) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
