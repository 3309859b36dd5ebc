/*
 * scanfuse.h — the public C API of scanfuse, and its specification.
 *
 * scanfuse is a tensor fusion compiler whose distinguishing feature is that scans
 * (cumsum and its siblings) are first-class, fusible ops.  A caller describes a small
 * tensor program (a *fusion*), compiles it for a device, and runs it on tensors that
 * are described in the DLPack DLTensor layout.
 *
 * Conventions that hold for every function below:
 *  - Handles are opaque.  Every handle returned by a `_new`/`_parse`/`_compile` call
 *    is owned by the caller and released with the matching `_free` function; `_free`
 *    accepts NULL.  Strings returned as `char *` are owned by the caller and released
 *    with scanfuse_free(); strings returned as `const char *` belong to the handle and
 *    stay valid until the next call on that handle.
 *  - Functions that can fail return a scanfuse_status (or record one in the handle).
 *    Bad input never aborts the process, never reads or writes out of bounds, and a
 *    failed scanfuse_run() leaves the caller's output buffers untouched.
 *  - Messages name the op, the argument and the offending value, e.g.
 *    "cumsum: dim 3 out of range for a 2-d tensor".
 *  - Semantics follow PyTorch's wherever PyTorch defines them (type promotion,
 *    broadcasting, result dtypes, tie-breaking).  Deliberate differences are noted at
 *    the function or op they concern.
 */
#ifndef SCANFUSE_H
#define SCANFUSE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SCANFUSE_VERSION "0.1.0"

/* ------------------------------------------------------------------------------ */
/* Status codes                                                                    */
/* ------------------------------------------------------------------------------ */

typedef enum scanfuse_status {
    SCANFUSE_OK = 0,
    SCANFUSE_ERROR_ARGUMENT,    /* an argument is invalid: dim out of range, bad value   */
    SCANFUSE_ERROR_DTYPE,       /* unknown dtype, complex, or a dtype the op rejects     */
    SCANFUSE_ERROR_SHAPE,       /* shapes that do not broadcast or do not match          */
    SCANFUSE_ERROR_PARSE,       /* malformed fusion text ("FILE:LINE:COL: message")       */
    SCANFUSE_ERROR_IO,          /* a file cannot be read or written, or is malformed     */
    SCANFUSE_ERROR_VALUE,       /* a run-time value is invalid: integer division by zero */
    SCANFUSE_ERROR_MEMORY,      /* out of memory, or a size that overflows               */
    SCANFUSE_ERROR_UNSUPPORTED, /* a valid request this build or backend cannot do       */
    SCANFUSE_ERROR_DEVICE,      /* no driver, no GPU, or a device call failed            */
    SCANFUSE_ERROR_STATE        /* API misuse: a NULL handle, a handle in an error state */
} scanfuse_status;

/* A static English name for a status ("ok", "invalid argument", ...).  Never NULL. */
const char *scanfuse_status_string(scanfuse_status status);

/* Releases a string or buffer that scanfuse returned as `char *`.  Accepts NULL. */
void scanfuse_free(void *p);

/* ------------------------------------------------------------------------------ */
/* DLPack tensors (the layout of DLPack's published ABI, defined here so that the   */
/* header stands alone).  Strides count elements, not bytes; NULL strides mean a    */
/* compact row-major tensor.  scanfuse accepts any non-negative strides (0 for      */
/* broadcast views) and any alignment of `data`.                                    */
/* ------------------------------------------------------------------------------ */

typedef struct scanfuse_dl_device {
    int32_t device_type; /* SCANFUSE_DL_CPU, SCANFUSE_DL_CUDA, ... */
    int32_t device_id;
} scanfuse_dl_device;

enum {
    SCANFUSE_DL_CPU = 1,
    SCANFUSE_DL_CUDA = 2,
    SCANFUSE_DL_CUDA_HOST = 3,
    SCANFUSE_DL_CUDA_MANAGED = 13
};

typedef struct scanfuse_dl_dtype {
    uint8_t code; /* SCANFUSE_DL_INT, ... */
    uint8_t bits;
    uint16_t lanes; /* must be 1 */
} scanfuse_dl_dtype;

enum {
    SCANFUSE_DL_INT = 0,
    SCANFUSE_DL_UINT = 1,
    SCANFUSE_DL_FLOAT = 2,
    SCANFUSE_DL_OPAQUE_HANDLE = 3,
    SCANFUSE_DL_BFLOAT = 4,
    SCANFUSE_DL_COMPLEX = 5,
    SCANFUSE_DL_BOOL = 6
};

typedef struct scanfuse_dl_tensor {
    void *data;
    scanfuse_dl_device device;
    int32_t ndim;
    scanfuse_dl_dtype dtype;
    int64_t *shape;
    int64_t *strides; /* may be NULL */
    uint64_t byte_offset;
} scanfuse_dl_tensor;

/* ------------------------------------------------------------------------------ */
/* dtypes                                                                          */
/* ------------------------------------------------------------------------------ */

/* The one dtype enum of the code base.  The order is part of the ABI. */
typedef enum scanfuse_dtype {
    SCANFUSE_DTYPE_NONE = -1, /* "not given": dtype=None */
    SCANFUSE_BOOL = 0,
    SCANFUSE_UINT8,
    SCANFUSE_INT8,
    SCANFUSE_INT16,
    SCANFUSE_INT32,
    SCANFUSE_INT64,
    SCANFUSE_FLOAT16,
    SCANFUSE_BFLOAT16,
    SCANFUSE_FLOAT32,
    SCANFUSE_FLOAT64,
    SCANFUSE_NUM_DTYPES
} scanfuse_dtype;

/*
 * Parses a dtype name.  Accepts the canonical names (bool uint8 int8 int16 int32 int64
 * float16 bfloat16 float32 float64), the short forms (b8 u8 i8 i16 i32 i64 f16 bf16
 * f32 f64), C and PyTorch aliases (half, float, double, short, int, long, byte, char),
 * the prefixes "torch." and "numpy."/"np.", and NumPy descr strings ("<f4", "|b1",
 * "=i8", "|u1"; bfloat16 has no NumPy descr).  Case-sensitive, like PyTorch.  Returns SCANFUSE_ERROR_DTYPE for complex dtypes ("complex64", "<c8") and
 * for unknown names; `*out` is left untouched then.
 */
scanfuse_status scanfuse_dtype_parse(const char *name, scanfuse_dtype *out);

/* The canonical name ("float32"), or "invalid" for a value outside the enum. */
const char *scanfuse_dtype_name(scanfuse_dtype dtype);

/* Bytes per element (bool is 1), or 0 for a value outside the enum. */
size_t scanfuse_dtype_size(scanfuse_dtype dtype);

/* DLPack dtype <-> scanfuse dtype.  bool is {SCANFUSE_DL_BOOL, 8, 1}; a DLPack dtype
 * with lanes != 1, a complex or opaque code, or unsupported bits gives
 * SCANFUSE_ERROR_DTYPE. */
scanfuse_status scanfuse_dtype_from_dl(scanfuse_dl_dtype dl, scanfuse_dtype *out);
scanfuse_dl_dtype scanfuse_dtype_to_dl(scanfuse_dtype dtype);

/* torch.result_type of two tensors of these dtypes (both with dims). */
scanfuse_dtype scanfuse_dtype_promote(scanfuse_dtype a, scanfuse_dtype b);

/* ------------------------------------------------------------------------------ */
/* Building a fusion                                                               */
/* ------------------------------------------------------------------------------ */

/*
 * A fusion is a static-shape tensor program: named inputs, ops, named outputs.
 * Building is checked call by call: the first failing call records a status and a
 * message in the fusion; later building calls do nothing and return
 * SCANFUSE_NO_VALUE, so a chain of calls needs one check at the end.
 */
typedef struct scanfuse_fusion scanfuse_fusion;

/* A value (tensor) of a fusion: its index.  SCANFUSE_NO_VALUE marks a failed call. */
typedef int32_t scanfuse_value;
#define SCANFUSE_NO_VALUE ((scanfuse_value)-1)

/* Up to this many dimensions per tensor. */
#define SCANFUSE_MAX_DIMS 8

/* A new empty fusion, or NULL when out of memory. */
scanfuse_fusion *scanfuse_fusion_new(void);
void scanfuse_fusion_free(scanfuse_fusion *fusion);

/* The first error recorded (SCANFUSE_OK if none) and its message ("" if none).
 * A NULL fusion gives SCANFUSE_ERROR_STATE / "no fusion". */
scanfuse_status scanfuse_fusion_status(const scanfuse_fusion *fusion);
const char *scanfuse_fusion_error(const scanfuse_fusion *fusion);

/*
 * Declares an input.  Names are identifiers ([A-Za-z_][A-Za-z0-9_]*), unique within
 * the fusion.  0 <= ndim <= SCANFUSE_MAX_DIMS, every size >= 0 (shape may be NULL when
 * ndim is 0).  Inputs are numbered in declaration order.
 */
scanfuse_value scanfuse_input(scanfuse_fusion *fusion, const char *name,
                              scanfuse_dtype dtype, int ndim, const int64_t *shape);

/*
 * Applies an op by name, with tensor arguments and the remaining arguments as text in
 * the fusion text form ("dim=-1, dtype=f32, exclusive=true").  The tensor arguments
 * fill the op's tensor parameters in order; `attrs` may be NULL or "".  This is the
 * general entry point: every op in the table (see the README or `scanfuse ops`) can be
 * built through it.  For ops with two results (cummax, cummin, topk), use scanfuse_op2.
 */
scanfuse_value scanfuse_op(scanfuse_fusion *fusion, const char *op,
                           const scanfuse_value *args, int nargs, const char *attrs);

/* The same for ops with two results; both results are written to out[0], out[1]
 * (SCANFUSE_NO_VALUE on failure).  Returns the fusion's status; a NULL `out` is
 * SCANFUSE_ERROR_ARGUMENT (so are NULL result pointers of scanfuse_cummax/cummin). */
scanfuse_status scanfuse_op2(scanfuse_fusion *fusion, const char *op,
                             const scanfuse_value *args, int nargs, const char *attrs,
                             scanfuse_value out[2]);

/*
 * A scalar constant that promotes like a Python number in PyTorch: it does not change
 * the dtype of a tensor operand of the same category (x_f16 + 2.5 is float16;
 * x_i32 + 2.5 is float32).  Integral scalars are int64, floating ones float32 when
 * they stand alone.
 */
scanfuse_value scanfuse_scalar_int(scanfuse_fusion *fusion, int64_t value);
scanfuse_value scanfuse_scalar_float(scanfuse_fusion *fusion, double value);

/* Scan flags (beyond PyTorch): exclusive scans put the identity first and drop the
 * last element; reverse scans run from the end (= flip, scan, flip, with cummax/cummin
 * indices pointing into the unflipped input). */
#define SCANFUSE_EXCLUSIVE 1
#define SCANFUSE_REVERSE 2

/* torch.cumsum(x, dim, dtype=dtype) with flags.  dtype SCANFUSE_DTYPE_NONE: int64 for
 * bool and integer inputs, the input dtype otherwise.  Accumulates float16/bfloat16 in
 * float32 or wider, float32 in float64, integers in int64 (a narrower integer result
 * wraps like two's complement).  dim may be negative. */
scanfuse_value scanfuse_cumsum(scanfuse_fusion *fusion, scanfuse_value x, int64_t dim,
                               scanfuse_dtype dtype, int flags);
scanfuse_value scanfuse_cumprod(scanfuse_fusion *fusion, scanfuse_value x, int64_t dim,
                                scanfuse_dtype dtype, int flags);
/* torch.cummax / torch.cummin: values keep the input dtype; indices are int64; on ties
 * the later index wins; a NaN propagates and its index points at the NaN.  Exclusive
 * scans give the identity (-inf, or the dtype's lowest/highest value, false for bool)
 * and index -1 first. */
scanfuse_status scanfuse_cummax(scanfuse_fusion *fusion, scanfuse_value x, int64_t dim,
                                int flags, scanfuse_value *values, scanfuse_value *indices);
scanfuse_status scanfuse_cummin(scanfuse_fusion *fusion, scanfuse_value x, int64_t dim,
                                int flags, scanfuse_value *values, scanfuse_value *indices);
/* torch.logcumsumexp: floating inputs only; exclusive scans start with -inf. */
scanfuse_value scanfuse_logcumsumexp(scanfuse_fusion *fusion, scanfuse_value x,
                                     int64_t dim, int flags);

/* Marks a value as an output.  name NULL uses the value's own name (an input's name, a
 * name given in the text form, or "v<index>").  Output names are unique.  Outputs are
 * numbered in the order of these calls. */
scanfuse_status scanfuse_output(scanfuse_fusion *fusion, scanfuse_value value,
                                const char *name);

/* Introspection.  Out-of-range indices return -1 / NULL. */
int scanfuse_fusion_num_inputs(const scanfuse_fusion *fusion);
int scanfuse_fusion_num_outputs(const scanfuse_fusion *fusion);
/* Name, dtype, ndim and shape (shape must have room for SCANFUSE_MAX_DIMS) of input
 * or output i.  Returns SCANFUSE_ERROR_ARGUMENT for an index out of range. */
scanfuse_status scanfuse_fusion_input_info(const scanfuse_fusion *fusion, int i,
                                           const char **name, scanfuse_dtype *dtype,
                                           int *ndim, int64_t *shape);
scanfuse_status scanfuse_fusion_output_info(const scanfuse_fusion *fusion, int i,
                                            const char **name, scanfuse_dtype *dtype,
                                            int *ndim, int64_t *shape);

/* ------------------------------------------------------------------------------ */
/* Text form                                                                       */
/* ------------------------------------------------------------------------------ */

/*
 * Parses a fusion from its text form.  One statement per line:
 *     input NAME: DTYPE[D0, D1, ...]        (DTYPE[] is 0-d)
 *     NAME = OP(ARGS)
 *     NAME, NAME = OP(ARGS)                 (two-result ops)
 *     output NAME, ...                       (NAME as ALIAS outputs a value under
 *                                             another name)
 *     # comment (also after a statement)
 * Arguments are positional in PyTorch's order or key=value; values are names,
 * integers, floats (also inf, -inf, nan), true/false, none, dtype names, lists [a, b],
 * or a nested one-result call (`sigmoid(cast(x, float32))`).  A number where a tensor
 * is expected is a weak scalar (see scanfuse_scalar_int).
 * `filename` is used in messages only (NULL: "<text>").  Always returns a fusion
 * (NULL only when out of memory); on a malformed text its status is
 * SCANFUSE_ERROR_PARSE (or the builder's status for a semantic error) and its message
 * is "FILE:LINE:COL: message".
 */
scanfuse_fusion *scanfuse_parse(const char *text, const char *filename);

/* Reads and parses a file.  A missing file gives SCANFUSE_ERROR_IO in the returned
 * fusion's status. */
scanfuse_fusion *scanfuse_parse_file(const char *path);

/* Prints a fusion in the text form that scanfuse_parse reads back into the same
 * fusion.  Returns NULL for a NULL fusion or one in an error state. */
char *scanfuse_print(const scanfuse_fusion *fusion);

/* ------------------------------------------------------------------------------ */
/* Compiling and running                                                           */
/* ------------------------------------------------------------------------------ */

typedef enum scanfuse_device {
    SCANFUSE_DEVICE_CPU = 0,
    SCANFUSE_DEVICE_CUDA = 1,
    /* The reference evaluator: op by op in float64 (exact int64 for integers), the most
     * obvious loops.  The oracle every backend is tested against.  Besides outputs of
     * the declared dtype it accepts float64 outputs for floating results and int64
     * outputs for integer and bool results, and then writes the value before its final
     * rounding to the declared dtype. */
    SCANFUSE_DEVICE_REFERENCE = 2
} scanfuse_device;

/* How cumsum is lowered.  The decompositions are O(n^2) and exist as cross-checks and
 * as a fallback policy; the native scan is the default. */
typedef enum scanfuse_cumsum_mode {
    SCANFUSE_CUMSUM_NATIVE = 0,
    SCANFUSE_CUMSUM_MATMUL,     /* x @ triu(ones(n, n)) along the scanned dim          */
    SCANFUSE_CUMSUM_MASKED_SUM  /* sum(where(i <= j, x[i], 0), i)                        */
} scanfuse_cumsum_mode;

typedef struct scanfuse_options {
    scanfuse_device device;
    int device_id;
    int threads;                      /* 0: the machine's cores                          */
    scanfuse_cumsum_mode cumsum_mode;
    int fuse;                         /* 1 (default): fuse ops into kernels; 0: op by op */
    const char *dump_ir;              /* NULL, a pass name, or "all": print the IR after
                                         that pass (or every pass) to stderr             */
    void *cuda_stream;                /* CUDA device: the stream (CUstream, cudaStream_t)
                                         runs are queued on; NULL (the default) is the
                                         legacy default stream.  Inputs and outputs are
                                         device memory (DLPack kDLCUDA or kDLCUDAManaged)
                                         of the caller's current context, else of the
                                         primary context of device_id.  A run returns
                                         once its kernels are queued on the stream; it
                                         waits for the stream only when the program can
                                         fail at run time (integer remainder or
                                         floor_divide: the division-by-zero check).
                                         Runs of one program must not overlap.  (differs:
                                         the device needs tensors whose data is aligned
                                         to the element size, as every framework's are;
                                         others give SCANFUSE_ERROR_ARGUMENT)           */
} scanfuse_options;

/* Fills the defaults: CPU, device 0, all cores, native cumsum, fusion on, no dump,
 * the default CUDA stream. */
void scanfuse_options_init(scanfuse_options *options);

/* Parses "native", "matmul", "masked-sum".  SCANFUSE_ERROR_ARGUMENT otherwise. */
scanfuse_status scanfuse_cumsum_mode_parse(const char *name, scanfuse_cumsum_mode *out);

typedef struct scanfuse_program scanfuse_program;

/*
 * Compiles a fusion for a device: copies it (the fusion may be freed afterwards), runs
 * the pass pipeline (verify, decompose, simplify, segment; the verifier after each),
 * and prepares the backend.  Always returns a program (NULL only when out of memory);
 * check scanfuse_program_status().  A fusion in an error state gives
 * SCANFUSE_ERROR_STATE; a device that is not available gives SCANFUSE_ERROR_DEVICE or
 * SCANFUSE_ERROR_UNSUPPORTED with a message saying why.
 */
scanfuse_program *scanfuse_compile(const scanfuse_fusion *fusion,
                                   const scanfuse_options *options);
void scanfuse_program_free(scanfuse_program *program);
scanfuse_status scanfuse_program_status(const scanfuse_program *program);
const char *scanfuse_program_error(const scanfuse_program *program);

/*
 * Runs a compiled program.  inputs[i] and outputs[i] follow the fusion's input and
 * output order; each must have the declared dtype and shape (except as the reference
 * device allows), a device the program runs on, non-negative strides, and non-NULL
 * data unless it has no elements.  Outputs must not have stride 0 along a dim of size
 * > 1 (they would be written twice).  Outputs may alias inputs: every output is
 * computed before any is written.  On failure (a bad tensor, an integer division by
 * zero, an index out of range) no output is written and the program's message says why.
 */
scanfuse_status scanfuse_run(scanfuse_program *program,
                             const scanfuse_dl_tensor *inputs, int num_inputs,
                             const scanfuse_dl_tensor *outputs, int num_outputs);

/* The IR after the pass pipeline, in the text form.  NULL if the program failed. */
char *scanfuse_program_ir(const scanfuse_program *program);

/* A human-readable description of the kernels (segments): per kernel its ops, the
 * values it reads and writes, and the bytes it moves; then the totals. */
char *scanfuse_program_segments(const scanfuse_program *program);

/* The number of kernels one run launches, and the bytes one run must move at least
 * (inputs read once, outputs written once) and does move (per the segmentation). */
int scanfuse_program_num_kernels(const scanfuse_program *program);
int64_t scanfuse_program_floor_bytes(const scanfuse_program *program);
int64_t scanfuse_program_moved_bytes(const scanfuse_program *program);

#ifdef __cplusplus
}
#endif

#endif /* SCANFUSE_H */
