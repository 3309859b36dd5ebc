/*
 * sf.h — internal declarations shared by every module of scanfuse.
 *
 * The data flow is a straight line and this header follows it:
 *   dtypes → op table → fusion IR (values and nodes) → builder (type and shape
 *   inference, argument binding) → text form → verifier and passes → programs and
 *   backends (reference, cpu, cuda) → .npy files.
 *
 * Invariants of the IR (checked by sf_verify):
 *  - nodes are in topological order: a node only reads values defined before it;
 *  - every value is either a fusion input (producer -1) or result `slot` of exactly one
 *    node; every node's attributes are *canonical* (see sf_attrs) and its result
 *    dtypes/shapes are what sf_infer computes from its inputs and attributes;
 *  - shapes are static; the element count of every value fits in int64.
 * Internal modules use the prefix sf_ (and sf_cpu_, sf_ref_, ... inside a backend).
 */
#ifndef SF_H
#define SF_H

#include "scanfuse.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SF_MAX_DIMS SCANFUSE_MAX_DIMS
#define SF_MAX_LIST (2 * SF_MAX_DIMS) /* pad lists hold two entries per dim */
#define SF_MAX_IN 3
#define SF_MAX_OUT 2
#define SF_MAX_PARAMS 8
#define SF_ERR_LEN 512

/* Internal invariant violations (bugs) abort through this one macro; bad user input
 * never reaches it. */
#define SF_ASSERT(cond)                                                                \
    do {                                                                               \
        if (!(cond)) sf_assert_fail(#cond, __FILE__, __LINE__);                        \
    } while (0)
void sf_assert_fail(const char *cond, const char *file, int line);

/* ------------------------------------------------------------------------------ */
/* dtypes (dtype.c)                                                                */
/* ------------------------------------------------------------------------------ */

typedef enum sf_category { SF_CAT_BOOL = 0, SF_CAT_INT = 1, SF_CAT_FLOAT = 2 } sf_category;

sf_category sf_dtype_category(scanfuse_dtype dt);
static inline bool sf_dtype_is_float(scanfuse_dtype dt) { return dt >= SCANFUSE_FLOAT16; }
/* true for bool and the integer dtypes: values held exactly as int64 */
static inline bool sf_dtype_is_intlike(scanfuse_dtype dt) { return dt <= SCANFUSE_INT64; }
static inline bool sf_dtype_valid(scanfuse_dtype dt) {
    return dt >= SCANFUSE_BOOL && dt < SCANFUSE_NUM_DTYPES;
}

/* Parses like scanfuse_dtype_parse and writes a message ("unknown dtype 'x'",
 * "complex dtypes are not supported: 'complex64'") on failure. */
scanfuse_status sf_dtype_parse(const char *name, scanfuse_dtype *out, char *msg, size_t msglen);

/* Smallest and largest value of an integer dtype (bool: 0 and 1). */
int64_t sf_int_min(scanfuse_dtype dt);
int64_t sf_int_max(scanfuse_dtype dt);

/* Wraps an int64 to an integer dtype like a two's-complement cast (bool: != 0). */
int64_t sf_wrap_int(int64_t v, scanfuse_dtype dt);

/* Rounds a double to the nearest value of a float dtype (round to nearest even,
 * directly from double, no double rounding); NaN and infinities pass through. */
double sf_round_to(double v, scanfuse_dtype dt);

/* Float products (cumprod, prod, every backend): the running product is m * 2^e, m a
 * double kept within [2^-500, 2^500] and e an int64 power of two (0, an infinity and NaN
 * are m with e = 0), so no partial product over- or underflows: each multiply rounds
 * m * x to 53 significant bits, exactly as the product in double does whenever that one
 * stays in range (the scaling is by powers of two), and a zero prefix times a stretch
 * whose product would overflow double stays 0 whatever the order of the multiplies (in
 * order on the CPU and in the reference, a tree on the GPU: OpProdD of cuda_prelude.c,
 * the same definitions).  The value is rounded once, to double, at the end. */
typedef struct sf_prodx {
    double m;
    int64_t e;
} sf_prodx;

/* For vector loops: 1 when a plain product mx = m * x of a window value m may need
 * sf_prodx_times instead: mx outside the window and not 0, or x outside it (0, an
 * infinity, NaN, a float64 beyond it).  A superset of the cases sf_prodx_norm acts on
 * (0 and inf products come only from such x), tested branch-free on exponent bits. */
static inline int sf_prodx_flag(double mx, double x) {
    uint64_t bm, bx;
    memcpy(&bm, &mx, sizeof bm);
    memcpy(&bx, &x, sizeof bx);
    const uint64_t em = bm >> 52 & 0x7ff, ex = bx >> 52 & 0x7ff; /* window: [523, 1522] */
    return (int)(((em - 523 > 999) & (em != 0)) | (ex - 523 > 999));
}

/* m * 2^e brought back into the window (m: the result of one multiply of two values in
 * it, so within [2^-1000, 2^1000], or any double for an input): m to [0.5, 1) as frexp
 * would, by its exponent bits; 0, inf, NaN take e = 0.  Out of line and cold, so that
 * the test in sf_prodx_norm stays a branch and a chain of multiplies does not wait for
 * it (inlined, the compiler turned it into selects on the chain). */
static __attribute__((noinline, cold, unused)) sf_prodx sf_prodx_renorm(double m, int64_t e) {
    sf_prodx r = {m, e};
    const double a = fabs(m);
    if (a == 0 || !(a <= DBL_MAX)) {
        r.e = 0;
        return r;
    }
    if (a < DBL_MIN) { /* a subnormal input: scaled exactly into the normals */
        m *= 0x1p54;
        r.e -= 54;
    }
    uint64_t b;
    memcpy(&b, &m, sizeof b);
    r.e += (int64_t)((b >> 52) & 0x7ff) - 1022;
    b = (b & ~(0x7ffull << 52)) | (1022ull << 52);
    memcpy(&r.m, &b, sizeof b);
    return r;
}
static inline sf_prodx sf_prodx_norm(double m, int64_t e) {
    const double a = fabs(m);
    if (__builtin_expect(!(a >= 0x1p-500 && a <= 0x1p500), 0)) return sf_prodx_renorm(m, e);
    return (sf_prodx){m, e};
}
static inline sf_prodx sf_prodx_of(double x) { return sf_prodx_norm(x, 0); }
static inline sf_prodx sf_prodx_mul(sf_prodx a, sf_prodx b) {
    return sf_prodx_norm(a.m * b.m, a.e + b.e);
}
/* ... times an input x of dtype xdt: a float64 one is brought into the window first,
 * narrower ones always lie in it (|x| within [2^-149, 2^128], or 0, inf, NaN) */
static inline sf_prodx sf_prodx_times(sf_prodx p, double x, scanfuse_dtype xdt) {
    return xdt == SCANFUSE_FLOAT64 ? sf_prodx_mul(p, sf_prodx_of(x)) : sf_prodx_norm(p.m * x, p.e);
}

static inline double sf_pow2(int64_t k) { /* 2^k for k in [-1074, 1023] */
    const uint64_t b = k >= -1022 ? (uint64_t)(k + 1023) << 52 : (uint64_t)1 << (k + 1074);
    double s;
    memcpy(&s, &b, sizeof s);
    return s;
}
/* Powers of two with (m * s1) * s2 = m * 2^e rounded once, for every m of the window
 * (and m * 1 * 1 = m for 0, inf, NaN, whose e is 0): the first multiply is exact (it
 * stays among the normals), the second rounds; 0 or inf where the value must be. */
static inline void sf_prodx_scales(int64_t e, double *s1, double *s2) {
    if (e >= -1022 && e <= 1023) {
        *s1 = sf_pow2(e);
        *s2 = 1.0;
    } else if (e < 0) { /* m * 2^-522 is normal; below 2^-1596 the value is under 2^-1096 */
        *s1 = e >= -1596 ? 0x1p-522 : 1.0;
        *s2 = e >= -1596 ? sf_pow2(e + 522) : 0.0;
    } else { /* m * 2^523 is finite; above 2^1546 the value is over 2^1046 */
        *s1 = e <= 1546 ? 0x1p523 : 1.0;
        *s2 = e <= 1546 ? sf_pow2(e - 523) : INFINITY;
    }
}
/* m * 2^e rounded once to double */
static inline double sf_prodx_value(sf_prodx p) {
    double s1, s2;
    sf_prodx_scales(p.e, &s1, &s2);
    return p.m * s1 * s2;
}

/* float16 / bfloat16 bit conversions (round to nearest even). */
uint16_t sf_f64_to_f16(double v);
uint16_t sf_f64_to_bf16(double v);
uint16_t sf_f32_to_f16(float v);
uint16_t sf_f32_to_bf16(float v);
float sf_f16_to_f32(uint16_t h);
float sf_bf16_to_f32(uint16_t h);

/* Converts a double to an integer dtype like PyTorch's cast of a float tensor:
 * truncation toward zero; NaN, infinities and out-of-range values give the
 * implementation-defined result PyTorch's CPU gives on x86 (INT64_MIN for int64),
 * computed without undefined behaviour. */
int64_t sf_f64_to_int(double v, scanfuse_dtype dt);

/* Load element i (an element offset, not bytes) of a buffer of dtype dt as a double /
 * as an int64 (floats truncate as by sf_f64_to_int); store with rounding/wrapping. */
double sf_load_f64(const void *base, int64_t i, scanfuse_dtype dt);
int64_t sf_load_i64(const void *base, int64_t i, scanfuse_dtype dt);
void sf_store_f64(void *base, int64_t i, scanfuse_dtype dt, double v);
void sf_store_i64(void *base, int64_t i, scanfuse_dtype dt, int64_t v);

/* ulp of a value in a float dtype (the spacing at |v|; the subnormal spacing near 0). */
double sf_ulp(double v, scanfuse_dtype dt);

/* ------------------------------------------------------------------------------ */
/* The op table (ops.def)                                                          */
/* ------------------------------------------------------------------------------ */

typedef enum sf_kind {
    SF_KIND_POINTWISE,
    SF_KIND_REDUCTION,
    SF_KIND_SCAN,
    SF_KIND_INDEX,
    SF_KIND_SHAPE,
    SF_KIND_CREATION,
    SF_KIND_CONTRACTION
} sf_kind;

typedef enum sf_rule {
    SF_RULE_SAME,   /* promoted dtype of the tensor inputs                            */
    SF_RULE_FLOAT,  /* promoted dtype; bool/integer become float32                    */
    SF_RULE_BOOL,   /* bool                                                           */
    SF_RULE_CAST,   /* the dtype attribute                                            */
    SF_RULE_SUM,    /* the dtype attribute, else int64 for bool/integer, else input   */
    SF_RULE_KEEP,   /* the (first) input's dtype; second result (cummax) int64        */
    SF_RULE_WHERE,  /* promoted dtype of inputs 1 and 2; input 0 must be bool         */
    SF_RULE_CREATE, /* from the attributes                                            */
    SF_RULE_MEAN,   /* the dtype attribute, else the input's (floating only)          */
    SF_RULE_INDEX,  /* int64                                                          */
    SF_RULE_MATMUL  /* both inputs must have the same dtype; result that dtype        */
} sf_rule;

enum {
    SF_F_ASSOC = 1,      /* associative (may be reassociated by a scan or reduction)  */
    SF_F_COMMUT = 2,     /* commutative                                               */
    SF_F_FLOAT_ONLY = 4, /* rejects bool and integer inputs                           */
    SF_F_NO_BOOL = 8     /* rejects bool inputs                                       */
};

typedef enum sf_op {
#define X(name, kind, nin, nout, rule, flags, sig) SF_OP_##name,
#include "ops.def"
#undef X
    SF_NUM_OPS
} sf_op;

typedef struct sf_op_info {
    const char *name;
    sf_kind kind;
    int nin, nout;
    sf_rule rule;
    int flags;
    const char *signature;
} sf_op_info;

extern const sf_op_info sf_op_table[SF_NUM_OPS];
/* SF_NUM_OPS when the name is unknown. */
sf_op sf_op_lookup(const char *name);

/* ------------------------------------------------------------------------------ */
/* Signatures and argument binding (args.c)                                        */
/* ------------------------------------------------------------------------------ */

/* SF_P_STR: a word from a fixed set (scatter's reduce=add); see sf_is_word_param. */
typedef enum sf_pkind { SF_P_TENSOR, SF_P_INT, SF_P_INTS, SF_P_NUM, SF_P_BOOL, SF_P_DTYPE, SF_P_STR } sf_pkind;

/* A number from the text form or an attribute: exactly one of int, float, bool. */
typedef enum sf_numkind { SF_NUM_INT, SF_NUM_FLOAT, SF_NUM_BOOL } sf_numkind;
typedef struct sf_num {
    sf_numkind kind;
    int64_t i; /* SF_NUM_INT and SF_NUM_BOOL (0/1) */
    double f;  /* SF_NUM_FLOAT; for the others the same value as a double */
} sf_num;

typedef struct sf_param {
    char name[24];
    sf_pkind kind;
    bool has_default;     /* false: required */
    bool default_none;    /* default is "none" */
    char default_text[24];
} sf_param;

typedef struct sf_signature {
    int nparams;
    sf_param params[SF_MAX_PARAMS];
} sf_signature;

/* The parsed signature of an op (parsed once, cached). */
const sf_signature *sf_op_signature(sf_op op);

/* ------------------------------------------------------------------------------ */
/* The fusion IR                                                                   */
/* ------------------------------------------------------------------------------ */

/* scatter's reduce= argument.  SF_REDUCE_NONE (0, the default) is a plain scatter. */
typedef enum sf_reduce { SF_REDUCE_NONE = 0, SF_REDUCE_ADD } sf_reduce;

/*
 * Attributes of a node.  One struct for every op; each op uses the fields its
 * signature names (param name -> field: dim -> dim/has_dim (int form) or list (ints
 * form); size, shape, dims, pad -> list; dtype -> dtype; start, end, step -> start,
 * end, step with has_start/has_end; value, fill_value -> value; diagonal -> diagonal;
 * exclusive, reverse, keepdim -> the flags).
 *
 * Canonical form, established by sf_infer (and idempotent: inferring a canonical node
 * again gives the same attributes):
 *  - scans: dim wrapped into [0, ndim) (0 for a 0-d input); dtype = the result dtype;
 *  - sum/prod/max/min/mean: list = the reduced dims, wrapped, sorted, unique, has_list
 *    set (every dim when none was given); dtype = the result dtype (sum/prod/mean);
 *  - argmax/argmin: has_dim 0 = over the flattened input; else dim wrapped;
 *  - cast: dtype set;
 *  - slice: dim wrapped; start/end (SF_NUM_INT) clamped so 0 <= start <= end <= size
 *    (end == start for an empty result), has_start = has_end = 1; step >= 1;
 *  - expand: list = the full result shape (no -1); reshape: list = the result shape;
 *    permute: list = the permutation, wrapped;
 *  - pad: list = the pad amounts as given (pairs, last dim first), nlist even;
 *    value converted to the input's category (int for integer inputs);
 *  - triu/tril: diagonal as given;
 *  - full: list = shape, value as given, dtype = the result dtype;
 *  - arange/iota: start, end, step as numbers (iota: start 0, step 1), dtype = result;
 *  - scalar: value as given; the result value is marked weak.
 *  - index and sort ops (k, num_classes, minlength, range -> count/has_count; largest,
 *    sorted, descending, stable, reduce -> the fields of the same name):
 *    topk: dim wrapped, count = k, largest and sorted as given;
 *    argsort: dim wrapped, descending and stable as given, count = range when given;
 *    one_hot: count = num_classes; bincount: count = minlength;
 *    gather, index_select, scatter: dim wrapped (scatter: reduce as given);
 *    take_along_dim: has_dim 0 = over the flattened input, else dim wrapped.
 */
typedef struct sf_attrs {
    int64_t dim;
    bool has_dim;
    int64_t list[SF_MAX_LIST];
    int nlist;
    bool has_list;
    sf_num start, end, step;
    bool has_start, has_end, has_step;
    sf_num value;
    bool has_value;
    int64_t diagonal;
    scanfuse_dtype dtype; /* SCANFUSE_DTYPE_NONE when not given */
    bool exclusive, reverse, keepdim;
    /* index and sort ops (see infer_index in infer.c for their canonical form) */
    int64_t count;  /* topk: k; one_hot: num_classes; bincount: minlength; argsort: range */
    bool has_count; /* false only for argsort without a range */
    bool largest, sorted, descending, stable;
    sf_reduce reduce; /* scatter */
} sf_attrs;

/* Attributes with every field "not given" (dtype NONE, flags false, lists empty). */
void sf_attrs_init(sf_attrs *a);

typedef struct sf_value {
    scanfuse_dtype dtype;
    int ndim;
    int64_t shape[SF_MAX_DIMS];
    int32_t producer; /* node index, or -1 for a fusion input */
    int slot;         /* which result of the producer (0 or 1) */
    bool weak;        /* a Python-like scalar (scalar op): promotes weakly */
    char *name;       /* owned; NULL for unnamed values */
} sf_value;

typedef struct sf_node {
    sf_op op;
    int nin, nout;
    int32_t in[SF_MAX_IN];
    int32_t out[SF_MAX_OUT];
    sf_attrs a;
} sf_node;

struct scanfuse_fusion {
    sf_value *values;
    int nvalues, cap_values;
    sf_node *nodes;
    int nnodes, cap_nodes;
    int32_t *inputs; /* value ids of the inputs, in declaration order */
    int ninputs, cap_inputs;
    int32_t *outputs; /* value ids of the outputs, in output order */
    char **output_names; /* owned */
    int noutputs, cap_outputs;
    scanfuse_status status;
    char error[SF_ERR_LEN];
};

/* Records the first error (later ones are ignored) and returns the fusion's status. */
scanfuse_status sf_fail(scanfuse_fusion *f, scanfuse_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

int64_t sf_numel(int ndim, const int64_t *shape);
int64_t sf_value_numel(const sf_value *v);
/* A deep copy (NULL when out of memory). */
scanfuse_fusion *sf_fusion_clone(const scanfuse_fusion *f);
/* The value's display name: its name, else "v<id>" written into buf. */
const char *sf_value_name(const scanfuse_fusion *f, int32_t id, char *buf, size_t buflen);
/* Sets a value's name (copied); the caller checks uniqueness. */
scanfuse_status sf_set_value_name(scanfuse_fusion *f, int32_t id, const char *name);
/* Finds a named value, or -1. */
int32_t sf_find_value(const scanfuse_fusion *f, const char *name);

/* ------------------------------------------------------------------------------ */
/* The builder (fusion.c, infer.c)                                                 */
/* ------------------------------------------------------------------------------ */

/*
 * Appends a node: checks the inputs (valid ids, dtypes the op accepts), infers the
 * result dtypes and shapes (PyTorch type promotion and broadcasting), canonicalizes the
 * attributes, and on success writes the result value ids to out[0..nout).  On failure
 * records the error in the fusion (message "OP: ...") and returns its status; nothing
 * is appended.  Does nothing when the fusion already holds an error.
 */
scanfuse_status sf_emit(scanfuse_fusion *f, sf_op op, const int32_t *in, int nin,
                        const sf_attrs *a, int32_t *out);

/* Shape and dtype inference alone (no side effects on f): fills res[0..nout) and the
 * canonical attributes.  msg gets "OP: ..." on failure. */
scanfuse_status sf_infer(const scanfuse_fusion *f, sf_op op, const int32_t *in, int nin,
                         const sf_attrs *a, sf_attrs *canon, sf_value *res, char *msg,
                         size_t msglen);

/* torch.result_type over tensor values (weak scalars and 0-d tensors promote as in
 * PyTorch). */
scanfuse_dtype sf_result_type(const scanfuse_fusion *f, const int32_t *in, int nin);

/* Broadcasts shapes (PyTorch rules).  Returns false if they do not broadcast. */
bool sf_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                         int64_t *out);

/*
 * Binds arguments to an op's signature: tensor arguments in order, then the textual
 * arguments (positional after the tensors, or key=value).  Used by scanfuse_op (with
 * attrs text) and by the text parser (which passes already-parsed arguments).
 */
typedef enum sf_argkind { SF_ARG_VALUE, SF_ARG_INT, SF_ARG_FLOAT, SF_ARG_BOOL, SF_ARG_DTYPE, SF_ARG_LIST, SF_ARG_NONE, SF_ARG_STR } sf_argkind;
typedef struct sf_arg {
    const char *key;  /* NULL for positional */
    sf_argkind kind;
    int32_t value;    /* SF_ARG_VALUE: a value id */
    sf_num num;       /* INT/FLOAT/BOOL */
    scanfuse_dtype dtype;
    int64_t list[SF_MAX_LIST];
    int nlist;
    char str[24];     /* SF_ARG_STR: the word (reduce=add or reduce="add") */
    int line, col;    /* position in the text, for messages (0 when not from text) */
} sf_arg;

/* Binds args to op's signature.  Numbers given where a tensor is expected become weak
 * scalar values (appended to f through sf_emit(SF_OP_scalar)).  Fills in[], *nin and
 * attrs; on error writes a message naming the op and the parameter and returns the
 * status (the index of the offending argument in *bad_arg, or -1). */
scanfuse_status sf_bind_args(scanfuse_fusion *f, sf_op op, const sf_arg *args, int nargs,
                             int32_t *in, int *nin, sf_attrs *attrs, char *msg,
                             size_t msglen, int *bad_arg);

/* True when some op has a word parameter (SF_P_STR) called `name`: a value given for
 * it by key is read as a word (reduce=add), never as a value name or a dtype. */
bool sf_is_word_param(const char *name);
/* The reduce= words: "add" -> SF_REDUCE_ADD (false for any other word), and back
 * ("none" for SF_REDUCE_NONE). */
bool sf_reduce_parse(const char *word, sf_reduce *out);
const char *sf_reduce_name(sf_reduce r);

/* Parses an attribute string ("dim=-1, dtype=f32") into args (keys point into a
 * buffer the caller provides: text is copied into buf of size buflen). */
scanfuse_status sf_parse_attr_text(const char *text, sf_arg *args, int maxargs, int *nargs,
                                   char *buf, size_t buflen, char *msg, size_t msglen);

/* ------------------------------------------------------------------------------ */
/* Text form (text_parse.c, text_print.c)                                          */
/* ------------------------------------------------------------------------------ */

/* A growable string buffer. */
typedef struct sf_buf {
    char *data;
    size_t len, cap;
    bool oom;
} sf_buf;
void sf_buf_printf(sf_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void sf_buf_puts(sf_buf *b, const char *s);
/* Returns the string (owned by the caller, free with free()) or NULL on OOM. */
char *sf_buf_take(sf_buf *b);

/* Appends the text of one node's call ("cumsum(x, dim=1, dtype=int64)") using value
 * names from f.  Used by the printer and by segment descriptions. */
void sf_print_call(const scanfuse_fusion *f, const sf_node *n, sf_buf *out);


/* ------------------------------------------------------------------------------ */
/* Verifier and passes (verify.c, passes.c, decompose.c)                           */
/* ------------------------------------------------------------------------------ */

/* Checks the IR invariants listed at the top of this file.  SCANFUSE_OK or an error
 * with a message naming the node. */
scanfuse_status sf_verify(const scanfuse_fusion *f, char *msg, size_t msglen);

/* The pipeline: verify, decompose (per options->cumsum_mode), simplify (dead-code
 * elimination), verify after each.  Replaces *f with the result (the old one is freed).
 * Dumps the IR to stderr after the pass named by options->dump_ir. */
scanfuse_status sf_run_passes(scanfuse_fusion **f, const scanfuse_options *options,
                              char *msg, size_t msglen);

/* Rebuilds f with every cumsum replaced by its decomposition. */
scanfuse_status sf_pass_decompose_cumsum(scanfuse_fusion **f, scanfuse_cumsum_mode mode,
                                         char *msg, size_t msglen);
/* Pieces shared by passes that rebuild a fusion through the builder: copy the inputs
 * (filling map[old id] = new id), copy value names and outputs, and turn the new
 * fusion's builder error into "PASS: WHAT: message". */
scanfuse_status sf_rebuild_inputs(const scanfuse_fusion *f, scanfuse_fusion *nf, int32_t *map,
                                  const char *pass, char *msg, size_t msglen);
scanfuse_status sf_rebuild_names_outputs(const scanfuse_fusion *f, scanfuse_fusion *nf,
                                         const int32_t *map, const char *pass, char *msg,
                                         size_t msglen);
scanfuse_status sf_rebuild_error(const char *pass, scanfuse_fusion *nf, const char *what,
                                 char *msg, size_t msglen);
/* Removes nodes none of whose results reach an output. */
scanfuse_status sf_pass_dce(scanfuse_fusion **f, char *msg, size_t msglen);

/* Static value ranges (ranges.c).  sf_int_range: true with the inclusive range
 * [*lo, *hi] of every element of integer value v when the ops that made it bound it
 * (index outputs of topk/argsort/argmax/argmin, views, casts that keep the range, floor
 * division and remainder by a positive literal, adding or subtracting a literal); false
 * when nothing is known.  sf_index_in_range: true when index op n (gather,
 * take_along_dim, index_select, scatter, bincount, one_hot, argsort with a key range)
 * can meet only indices in range, so its run-time check cannot fail. */
bool sf_int_range(const scanfuse_fusion *f, int32_t v, int64_t *lo, int64_t *hi);
bool sf_index_in_range(const scanfuse_fusion *f, const sf_node *n);

/* ------------------------------------------------------------------------------ */
/* Programs and backends (program.c, ref_eval.c, cpu_*.c, cuda_backend.c)         */
/* ------------------------------------------------------------------------------ */

/* A strided view of a tensor in memory: data already offset by byte_offset, strides
 * in elements (never negative), dtype the buffer's real dtype. */
typedef struct sf_view {
    void *data;
    scanfuse_dtype dtype;
    int ndim;
    int64_t shape[SF_MAX_DIMS];
    int64_t strides[SF_MAX_DIMS];
} sf_view;

/* A contiguous row-major view of a value-shaped buffer. */
void sf_view_contiguous(sf_view *v, void *data, scanfuse_dtype dt, int ndim,
                        const int64_t *shape);

/*
 * Segments (segment.c): the kernels one run launches, in execution order.
 *
 * A segment lists the nodes it runs (ascending node indices, a topological order).
 * Its *compute* nodes belong to it alone; its *setup* nodes (views — expand, permute,
 * slice, reshape — and constants — scalar, full, arange, iota; see sf_node_is_setup)
 * are replicated into every segment that reads them and are evaluated there once per
 * run, before the segment's compute nodes, on whole values.
 *
 *  SF_SEG_OPAQUE     one op that does not fuse (matmul, pad, triu/tril, index and
 *                    sort ops, a view or constant that is itself an output), run on
 *                    whole values
 *  SF_SEG_POINTWISE  pointwise ops that all have one shape, run tile by tile
 *  SF_SEG_SCAN       a scan (the anchor) with pointwise producers (prologue) and
 *                    consumers (epilogue) of the anchor's shape, run on tiles of whole
 *                    scanned rows
 *  SF_SEG_REDUCE     a reduction (the anchor) with a prologue of its input's shape and
 *                    an epilogue of its result's shape, run on tiles that hold whole
 *                    reduced extents
 *  SF_SEG_SMALL      index and sort ops with their neighbours, every result small
 *                    enough to stay in cache, run op by op (MoE routing: topk, the
 *                    histogram, the cumsums, the counting sort, the inverse)
 *
 * Gathers (gather, take_along_dim, index_select) fuse into POINTWISE/SCAN/REDUCE
 * kernels like pointwise ops, reading their x whole.  `lazy` is an index_select along
 * dim 0 whose rows the kernel writes on demand, just before the tiles that read them
 * through gathers (its result is one of the kernel's outputs); its views are the one
 * case where a setup node reads a value its segment computes (SMALL kernels, op by op,
 * may do so freely).
 *
 * inputs: the values the segment reads from memory (fusion inputs and outputs of
 * earlier segments; weak scalars are literals and not listed).  outputs: the values
 * its compute nodes produce that a later segment or the caller reads; each is written
 * once.  Bytes count each input read once and each output written once.
 * With options.fuse = 0 every node but a weak scalar is a segment of its own (its kind
 * is still that of its op), and a segment with one compute node runs op by op.
 */
typedef enum sf_seg_kind {
    SF_SEG_OPAQUE,
    SF_SEG_POINTWISE,
    SF_SEG_SCAN,
    SF_SEG_REDUCE,
    SF_SEG_SMALL
} sf_seg_kind;

typedef struct sf_segment {
    sf_seg_kind kind;
    int *nodes; /* owned; ascending */
    int nnodes;
    int anchor; /* node index of the scan or reduction (SCAN, REDUCE), else -1 */
    int lazy;   /* node index of an index_select materialized on demand, else -1 */
    int32_t *inputs; /* owned */
    int ninputs;
    int32_t *outputs; /* owned */
    int noutputs;
    int64_t bytes_read, bytes_written;
} sf_segment;

typedef struct sf_program sf_program;

typedef struct sf_backend {
    const char *name;
    /* SCANFUSE_OK if the backend can run node n of f, else a message why not. */
    scanfuse_status (*supports)(const scanfuse_fusion *f, int node, char *msg, size_t msglen);
    /* Prepares p (p->fusion and p->segments are set).  May set p->backend_state. */
    scanfuse_status (*compile)(sf_program *p, char *msg, size_t msglen);
    /* Runs: inputs[i] for fusion input i, outputs[i] for output i (already validated:
     * dtype as declared, or float64/int64 for the reference backend, shape as declared).
     * Must not write any output unless every output has been computed. */
    scanfuse_status (*run)(sf_program *p, const sf_view *inputs, const sf_view *outputs,
                           char *msg, size_t msglen);
    void (*release)(sf_program *p);
} sf_backend;

struct sf_program {
    scanfuse_fusion *fusion; /* the lowered fusion (owned) */
    sf_segment *segments;
    int nsegments;
    scanfuse_options options;
    const sf_backend *backend;
    void *backend_state;
    bool compiled; /* set once compile succeeded; runs need it */
    scanfuse_status status;
    char error[SF_ERR_LEN];
};

extern const sf_backend sf_backend_reference;
extern const sf_backend sf_backend_cpu;
extern const sf_backend sf_backend_cuda;

/* The segmenter (segment.c).  Fills p->segments / p->nsegments from p->fusion: with
 * p->options.fuse one kernel per group of fusible nodes, else one kernel per node
 * (weak scalars are literals and launch nothing).  SCANFUSE_ERROR_MEMORY on OOM. */
scanfuse_status sf_segment_program(sf_program *p);
/* Frees a segment array (NULL-safe). */
void sf_segments_free(sf_segment *segs, int n);
/* Setup nodes: views and constants, evaluated on whole values by every segment that
 * reads them (see sf_segment). */
bool sf_node_is_setup(sf_op op);

/* Copies an element-wise strided view into another of the same shape, converting
 * dtypes (float->int truncates, int->narrower int wraps, ->bool is != 0). */
void sf_copy_view(const sf_view *dst, const sf_view *src);

/* ------------------------------------------------------------------------------ */
/* CUDA (cuda_loader.c, cuda_backend.c): helpers for tests and tools.  Each returns   */
/* SCANFUSE_ERROR_DEVICE with a message when there is no driver, no GPU or no NVRTC.  */
/* They work in the caller's current context, else the primary context of device_id. */
/* ------------------------------------------------------------------------------ */

/* SCANFUSE_OK when a CUDA device can run programs (msg: "NAME, sm_90, 132
 * multiprocessors"), else why not. */
scanfuse_status sf_cuda_probe(int device_id, char *msg, size_t msglen);
/* SCANFUSE_OK when NVRTC can be loaded (msg: "NVRTC 13.0"), else why not. */
scanfuse_status sf_cuda_nvrtc_probe(char *msg, size_t msglen);
/* Device memory (cuMemAlloc / cuMemFree) and synchronous copies and fills. */
scanfuse_status sf_cuda_alloc(int device_id, size_t bytes, void **dptr, char *msg, size_t msglen);
void sf_cuda_free(int device_id, void *dptr);
scanfuse_status sf_cuda_copy_to_device(int device_id, void *dst, const void *src, size_t bytes,
                                       char *msg, size_t msglen);
scanfuse_status sf_cuda_copy_to_host(int device_id, void *dst, const void *src, size_t bytes,
                                     char *msg, size_t msglen);
scanfuse_status sf_cuda_copy_on_device(int device_id, void *dst, const void *src, size_t bytes,
                                       char *msg, size_t msglen);
scanfuse_status sf_cuda_memset(int device_id, void *dst, int byte, size_t bytes, char *msg,
                               size_t msglen);
/* Waits for all work of the context (cuCtxSynchronize). */
scanfuse_status sf_cuda_synchronize(int device_id, char *msg, size_t msglen);
/* A stream of the device's context that does not wait for the legacy default stream
 * (cuStreamCreate with CU_STREAM_NON_BLOCKING, as PyTorch's are), and its release. */
scanfuse_status sf_cuda_stream_create(int device_id, void **stream, char *msg, size_t msglen);
void sf_cuda_stream_destroy(int device_id, void *stream);
/* Generates the CUDA source of a compiled program (compiled for any device: only its
 * lowered fusion and segments are used) and compiles it with NVRTC for sm_<arch>, through
 * the kernel caches; needs NVRTC but no GPU.  *source (if non-NULL) receives the source
 * (free with free()).  A template that does not compile gives SCANFUSE_ERROR_DEVICE with
 * NVRTC's log in msg. */
scanfuse_status sf_cuda_compile_offline(const sf_program *p, int arch, char **source, char *msg,
                                        size_t msglen);

/* ------------------------------------------------------------------------------ */
/* .npy files (npy.c)                                                              */
/* ------------------------------------------------------------------------------ */

/*
 * An owned host array read from or written to a .npy file: C-contiguous data.
 * NumPy has no bfloat16: scanfuse stores bfloat16 as the descr '|V2' (two raw bytes
 * per element, the little-endian bfloat16 bit pattern, readable by NumPy as void and
 * viewable with ml_dtypes.bfloat16), and reads '|V2' back as bfloat16.
 */
typedef struct sf_array {
    scanfuse_dtype dtype;
    int ndim;
    int64_t shape[SF_MAX_DIMS];
    void *data; /* malloc'd, numel * size bytes, C order */
} sf_array;

void sf_array_free(sf_array *a);
/* Reads a .npy file (versions 1-3, little-endian or byte-order-free, C or Fortran
 * order, every supported dtype).  On failure returns SCANFUSE_ERROR_IO (or
 * SCANFUSE_ERROR_DTYPE for complex/unsupported dtypes) with a message, and leaves
 * *out zeroed. */
scanfuse_status sf_npy_read(const char *path, sf_array *out, char *msg, size_t msglen);
/* Parses a .npy image already in memory. */
scanfuse_status sf_npy_parse(const void *bytes, size_t len, sf_array *out, char *msg,
                             size_t msglen);
/* Writes a C-order .npy file (version 1.0, or 2.0 when the header needs it) from a
 * strided view; written to PATH.tmp and renamed, so a failure leaves no partial file. */
scanfuse_status sf_npy_write(const char *path, const sf_view *v, char *msg, size_t msglen);

/* ------------------------------------------------------------------------------ */
/* Small utilities (util.c)                                                        */
/* ------------------------------------------------------------------------------ */

void *sf_malloc(size_t n);             /* NULL on failure or n == 0 overflow checks */
void *sf_calloc(size_t n, size_t size);
void *sf_realloc(void *p, size_t n);
char *sf_strdup(const char *s);
/* a*b for sizes, false on overflow */
bool sf_mul_overflow(int64_t a, int64_t b, int64_t *out);
/* Checks name is an identifier [A-Za-z_][A-Za-z0-9_]* */
bool sf_is_identifier(const char *s);
/* snprintf into msg (NULL-safe). */
void sf_msg(char *msg, size_t msglen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* SF_H */
