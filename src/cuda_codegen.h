/*
 * cuda_codegen.h — internal contracts of the CUDA backend's code generator: the plan of
 * a compiled program (how every value is stored, the kernels of every segment, their
 * operands and launch geometry), the "value at an element" expression emitter that every
 * kernel template builds on (cuda_codegen.c), the scan/reduction templates
 * (cuda_scan.c), the index and sort templates (cuda_index.c) and the NVRTC build step
 * (cuda_cache.c).
 *
 * Every kernel takes one parameter, `sf_args` (declared in the generated prelude and
 * mirrored by sf_cuda_args below: 8-byte fields only, so both layouts agree).  Operand k
 * of a kernel is a value of the lowered fusion; at run time the launcher fills ptr[k]
 * with the address of the value's current view and st[k][*] with its element strides,
 * laid out per the operand's mode:
 *   ITER  strides broadcast to one of the kernel's iteration shapes (space 0: shape,
 *         space 1: shape2; right-aligned, 0 where the view has size 1 or lacks the dim),
 *         so an element's offset is sum coord[d] * st[d];
 *   OWN   the view's own strides (the kernel indexes the value in its own shape);
 *   MM_A, MM_B  matmul operands: strides over the output's dims, the k-stride in aux.
 * Shapes are static, so they are compile-time constants in the generated code; strides
 * and addresses are run-time arguments, so one compiled program serves any layout.
 *
 * A segment (sf.h) becomes one kernel when the emitter can fuse it (its compute nodes'
 * values stay in registers; only its outputs touch memory); otherwise its compute nodes
 * run one kernel each, and then every value they produce has memory.  A fused segment's
 * gathers that something else reads (an output, a later segment) also run a kernel of
 * their own before the fused one, and unproven indices a check kernel.  A SMALL segment
 * whose data fits one block runs those per-node kernels' bodies in ONE kernel of one block
 * (cuda_small.c), launched like a fused segment's; its values have memory too.
 */
#ifndef SF_CUDA_CODEGEN_H
#define SF_CUDA_CODEGEN_H

#include "sf.h"

#define SF_CUDA_MAXOPS 12

/* A kernel whose body starts with this line waits for its predecessors itself (the PDL
 * wait that cuda_codegen.c otherwise puts first in every kernel). */
#define SF_OWN_PDL "// sf_own_pdl"

/* Mirrors `struct sf_args` of the generated prelude (cuda_prelude.c). */
typedef struct sf_cuda_args {
    uint64_t ptr[SF_CUDA_MAXOPS];
    int64_t st[SF_CUDA_MAXOPS][8];
    int64_t aux[8];
    uint64_t scratch;
    uint64_t err;
    int64_t epoch;
    int64_t tile_base;
    int64_t flags;
    int64_t pad_;
} sf_cuda_args;

/* The prelude of every generated source, one line per entry, NULL-terminated: the
 * building blocks (cuda_prelude.c), then the skeletons (cuda_skeletons.c). */
extern const char *const sf_cuda_prelude[];
extern const char *const sf_cuda_skeletons[];
/* The raked row tiles' skeleton (cuda_rake.c), emitted only by the kernels that rake. */
extern const char *const sf_cuda_rake_skeleton[];
/* OpProdF and sf_pxf_val (cuda_prelude.c), emitted only by cumprod of narrow floats in
 * rows longer than a warp's (cuda_scan.c). */
extern const char *const sf_cuda_prod_narrow[];
/* OpSumDN (cuda_prelude.c), emitted only by float sums and means of float32, float16 or
 * bfloat16 elements (cuda_reduce.c). */
extern const char *const sf_cuda_sum_narrow[];

/* A compiled image (cubin, or PTX for the driver to JIT); data is malloc'd. */
typedef struct sf_cuda_image {
    void *data;
    size_t size;
    bool ptx;
} sf_cuda_image;
/* Compiles source for sm_<arch> through the memory and disk caches (cuda_cache.c). */
scanfuse_status sf_cuda_build(const char *source, int arch, sf_cuda_image *out, char *msg,
                              size_t msglen);

typedef enum sf_cuda_opmode { SF_CUOP_ITER, SF_CUOP_OWN, SF_CUOP_MM_A, SF_CUOP_MM_B } sf_cuda_opmode;

typedef struct sf_cuda_operand {
    int32_t value;
    sf_cuda_opmode mode;
    int space; /* ITER: 0 = the kernel's shape, 1 = shape2 */
    bool out;  /* written by the kernel */
    int out_index; /* >= 0: the caller's output this operand writes (output copies) */
} sf_cuda_operand;

typedef enum sf_cuda_kkind {
    SF_CUK_ELEM,       /* one thread per element of the iteration shape (grid-stride)  */
    SF_CUK_SCAN_WARP,  /* scan: one warp per row                                      */
    SF_CUK_SCAN_ROW,   /* scan: blocks over row tiles, look-back when a row has several */
    SF_CUK_SCAN_COL,   /* scan along an outer dim: threads over columns, look-back     */
    SF_CUK_RED_BLOCK,  /* reduction: a block per (output, split)                       */
    SF_CUK_RED_WARP,   /* reduction: a warp per output                                 */
    SF_CUK_RED_THREAD, /* reduction: a thread per (output, split)                      */
    SF_CUK_RED_FINISH, /* combines the splits' partial states in order                 */
    SF_CUK_CHECK,      /* index range check (error slot: first bad position, value)    */
    SF_CUK_SORT,       /* sort steps (chunk sort, merge passes, emit)                  */
    SF_CUK_SMALL       /* a whole small segment, one block (cuda_small.c)              */
} sf_cuda_kkind;

typedef struct sf_cuda_kernel {
    sf_cuda_kkind kind;
    int seg;           /* its segment, or -1 for the copy of an output */
    int node;          /* the node it computes (opaque, anchor, setup), or -1 */
    bool reshape_copy; /* runs only when the reshape input is not contiguous */
    int nops;
    sf_cuda_operand ops[SF_CUDA_MAXOPS];
    int ndim, ndim2; /* iteration shapes of ITER operands (space 0 and 1) */
    int64_t shape[SF_MAX_DIMS], shape2[SF_MAX_DIMS];
    unsigned grid, block;
    int64_t aux[8];
    int64_t scratch_off, scratch_bytes; /* its part of the scratch area; -1: the previous
                                           kernel's part */
    int64_t ntiles;                     /* > 0: dynamic tile ids (look-back scans)   */
    int64_t trace_bytes;                /* tuning lb_trace=1: the last bytes of its part */
    unsigned dyn_smem;                  /* bytes of dynamic shared memory a block (set as
                                           the function's maximum when it is bound)      */
    uint32_t fast_mask;                 /* ITER operands whose contiguity gives the fast path */
    int err_slot;                       /* >= 0: its error slot (fallible kernels) */
    char err_what[16];                  /* CHECK: "index", "class", "id", "key"           */
    char err_range[64];                 /* CHECK: "dim 1 has size 5", "num_classes=4", ... */
    int sub0, nsub;                     /* SMALL: the kernels k[sub0 .. sub0+nsub) whose
                                           arguments its parameter packs (cuda_small.c) */
    int pre1;                           /* SMALL: 1 + the kernel launched just before it
                                           (a leading grid phase), 0: none              */
    bool small_sub;                     /* one of a SMALL kernel's sub-kernels: launched
                                           only when its segment runs node by node      */
} sf_cuda_kernel;

/* How a value's memory is provided at run time. */
enum {
    SF_CUV_INPUT,    /* the caller's input view                                        */
    SF_CUV_BUFFER,   /* a buffer of its own (arena), or the caller's output directly   */
    SF_CUV_VIEW,     /* a view of another value (expand, permute, slice; reshape when
                        its input is contiguous, else a buffer it is copied into)      */
    SF_CUV_LITERAL,  /* a weak scalar folded into its pointwise consumers: no memory   */
    SF_CUV_FULL,     /* one element, broadcast (full, and scalars something must read) */
    SF_CUV_INLINE,   /* a constant computed where it is read (arange, iota, full)       */
    SF_CUV_INTERNAL  /* computed and consumed inside one fused kernel: no memory        */
};

typedef struct sf_cuda_plan {
    int arch, sms;
    char *source;
    int nkernels;
    sf_cuda_kernel *k;
    int *seg_k0, *seg_nk;   /* per fused segment: its kernels */
    bool *seg_fused;        /* per segment: one kernel (else node by node, in node order) */
    int *node_k0, *node_nk; /* per node of an unfused segment, and per setup node: its
                               kernels */
    int out_k0;             /* k[out_k0 + o]: copy of output o (when not written directly) */
    int64_t scratch_bytes;  /* [error slots: 16 bytes each][kernels' parts] */
    int nerr;               /* error slots */
    bool may_fail;          /* some kernel can fail (division by zero, bad index) */
    bool pdl;               /* kernels wait for their predecessors (default; tuning pdl=0
                               off): launch them with programmatic stream serialization */
    bool pdl_first;         /* the run's first kernel too (no kernel reads memory before
                               its wait; tuning pdl_first=0 off): cuda_codegen.c */
    int8_t *vkind;          /* per value: SF_CUV_* */
    bool *direct_ok;        /* per value: its producer writes it whole (may go to the
                               caller's output directly) */
} sf_cuda_plan;

/* Plans and generates every kernel of a program for sm_<arch> with `sms`
 * multiprocessors (launch geometry).  Needs no GPU. */
scanfuse_status sf_cuda_plan_build(const sf_program *p, int arch, int sms, sf_cuda_plan **out,
                                   char *msg, size_t msglen);
void sf_cuda_plan_free(sf_cuda_plan *pl);

/* ------------------------------------------------------------------------------ */
/* The emitter                                                                     */
/* ------------------------------------------------------------------------------ */

/* Generation state of the program. */
typedef struct sf_cg {
    const scanfuse_fusion *f;
    sf_cuda_plan *pl;
    sf_buf *src;
    int sms;
    bool *in_seg; /* per node: a compute node of the segment being emitted */
    int seg;      /* the segment being emitted */
} sf_cg;

/* An element context: where the code being emitted stands in the kernel's iteration
 * space, how operands are addressed there, and which values are already in locals
 * ("v<id>", compute type of the value's dtype, already rounded/wrapped to it). */
typedef struct sf_cg_ectx sf_cg_ectx;
struct sf_cg_ectx {
    sf_cg *g;
    sf_cuda_kernel *k; /* ext operands are added to it */
    sf_buf *b;
    int space; /* ITER space of operands created here */
    int ndim;  /* the context's iteration shape (space's shape) */
    const int64_t *shape;
    /* appends the coordinate of iteration dim d / the offset of operand op */
    void (*coord)(sf_cg_ectx *e, int d, sf_buf *out);
    void (*off)(sf_cg_ectx *e, int op, sf_buf *out);
    void *user;
    bool vec;           /* vector mode: operand loads read "r<op>[kk]" */
    uint32_t used_ops;  /* operands loaded here */
    bool used_coords;   /* coord() was called */
    uint8_t *done;      /* per value */
    int nanchor;        /* values available from the anchor's state */
    int32_t anchor_val[2];
    const char *anchor_expr[2];
    bool anchor_round[2]; /* anchor_expr is to be normalized to the value's dtype */
    bool overflow;      /* an operand did not fit (SF_CUDA_MAXOPS) */
    bool own;           /* a remapped context (the element of a gather's source or index,
                           or of a view's input): its coordinates are not the kernel's, so
                           operands loaded here are OWN and addressed by coord(); never
                           vec, no anchor values */
};

const char *sf_cg_sfx(scanfuse_dtype dt);
const char *sf_cg_ctype(scanfuse_dtype dt);
const char *sf_cg_rawtype(scanfuse_dtype dt);
/* A tuning knob from SCANFUSE_CUDA_TUNE="key=value,..." (benchmarks; the knobs change
 * the generated source and so the cache key), def when absent. */
int sf_cg_tune(const char *key, int def);
/* Appends an expression converting compute value x of dtype `from` to dtype `to`, as a
 * cast does (docs/OPS.md). */
void sf_cg_conv(sf_buf *b, scanfuse_dtype from, scanfuse_dtype to, const char *x);
/* A weak scalar literal converted straight to the common dtype cdt / a number attribute
 * stored into dtype dt (full, pad). */
void sf_cg_lit_cdt(sf_buf *b, sf_num n, scanfuse_dtype cdt);
void sf_cg_lit_put(sf_buf *b, sf_num n, scanfuse_dtype dt);
/* "i64 c<dims[j]> = ..." decomposing row-major index idx over dims[0..n) of shape. */
void sf_cg_coords(sf_buf *b, const char *prefix, const char *idx, int n, const int *dims,
                  const int64_t *shape);
/* "c<d> * a.st[k][d] + ..." over dims[0..n) with shape > 1 ("0" when none). */
void sf_cg_offset(sf_buf *b, const char *prefix, int k, int n, const int *dims,
                  const int64_t *shape);
/* Resets e for emitting into b the code of kernel k in its space (0: the iteration
 * space, ndim/shape; 1: the second, ndim2/shape2), with done (one flag a value of the
 * fusion) cleared; the caller sets the coordinate and offset namers. */
void sf_cg_ectx_init(sf_cg_ectx *e, sf_cg *g, sf_cuda_kernel *k, sf_buf *b, uint8_t *done,
                     int space);
/* ceil(a / b) for b > 0; 0 for b <= 0. */
static inline int64_t sf_cg_ceil_div(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }
/* The nodes of the segment being emitted (g->in_seg), in order, into out; their count. */
int sf_cg_group_nodes(const sf_cg *g, int *out);
/* {0, 1, ..., SF_MAX_DIMS - 1}: every dim, for sf_cg_coords / sf_cg_offset. */
extern const int sf_cg_iota_dims[SF_MAX_DIMS];
/* Is op a view (its output aliases its input's elements)? */
bool sf_cg_is_view_op(sf_op op);
/* The value a chain of views of v starts from (v itself when v is no view). */
int32_t sf_cg_view_base(const scanfuse_fusion *f, int32_t v);
/* Emits an inline constant (arange, iota, full) at the context's element into v<v>. */
void sf_cg_value_inline(sf_cg_ectx *e, int32_t v);
/* Finds or adds operand (v, mode, space, out) of k; -1 when the table is full. */
int sf_cg_operand(sf_cuda_kernel *k, int32_t v, sf_cuda_opmode mode, int space, bool out);
/* Ensures local v<v> holds value v at the context's element (loads, inline constants,
 * pointwise nodes of the segment, the anchor's outputs, and gathers of the segment:
 * gather, take_along_dim and index_select nodes, and views of them, are computed inline
 * by loading the index at remapped coordinates and evaluating the source there, so a
 * gather of a gather composes the indices instead of reading the inner result back).  Literals are handled by
 * their consumers.  Sets e->overflow when an operand does not fit. */
void sf_cg_value(sf_cg_ectx *e, int32_t v);
/* Emits the store of value v (already in v<v>) to its memory operand at the element. */
void sf_cg_store(sf_cg_ectx *e, int32_t v);
/* Does value v need memory written by the segment being emitted's fused kernel?  (Not
 * the result of a gather of the segment: it has its own kernel, as its shape is not the
 * kernel's iteration space.) */
bool sf_cg_stored(const sf_cg *g, int32_t v);
/* A new kernel record of the plan (zeroed, out_index -1 in every operand later added). */
sf_cuda_kernel *sf_cg_new_kernel(sf_cg *g, sf_cuda_kkind kind, int node);
/* Appends the lines of a NULL-terminated array of source text (none when lines is NULL),
 * each with its newline: the prelude, the skeletons, an operator's definitions. */
void sf_cg_put_lines(sf_buf *b, const char *const *lines);
/* A new kernel on kernel ki's operands and shapes, run right after it and sharing its
 * scratch (a reduction's finish). */
sf_cuda_kernel *sf_cg_twin_kernel(sf_cg *g, int ki, sf_cuda_kkind kind);
/* An error slot for a fallible kernel. */
int sf_cg_err_slot(sf_cg *g);
unsigned sf_cg_grid(int64_t blocks);

/* Scans and reductions (cuda_scan.c): the kernels of a SCAN or REDUCE segment (anchor
 * with its prologue and epilogue, or alone). */
scanfuse_status sf_cg_scan(sf_cg *g, int anchor, char *msg, size_t msglen);
scanfuse_status sf_cg_reduce(sf_cg *g, int anchor, char *msg, size_t msglen);
/* The MoE combine as a row kernel (cuda_combine.c): sum over dim 1 of [T, K, H] of
 * mul(G, W), G whole rows gathered by take_along_dim along dim 0 (through an
 * index_select of the segment: composed), W one weight per (t, j).  sf_cg_combine_match
 * tells whether reduction anchor `anchor` of the segment being emitted has that form
 * (the conditions are in the file); sf_cg_combine_emit then emits kernel k (whose Io
 * struct `io` is already in the source: its Op and st are used) as the row kernel. */
typedef struct sf_cg_combine {
    int sum, mul, take;   /* nodes: the reduction, the product, the gather of rows     */
    int sel;              /* the segment's index_select P = X[J] the rows come through, or -1 */
    int32_t src;          /* the rows' source: X (through P) or the value G gathers from */
    int32_t iv, w, j;     /* the index [T, K, 1], the weights [T, K, 1], J (or -1)       */
    int32_t p;            /* P when its rows are written here (lazy rows), or -1        */
    int64_t jdiv;         /* > 0: J[I[t, j]] is (t * K + j) / jdiv, known without loads  */
    int64_t T, K, H;
    int64_t nsrc, nmid;   /* rows of the source, and the range of I (rows of P or the source) */
    int E, U;             /* elements a 16-byte vector, vectors a thread per slot       */
} sf_cg_combine;
bool sf_cg_combine_match(const sf_cg *g, int anchor, sf_cg_combine *c);
scanfuse_status sf_cg_combine_emit(sf_cg *g, sf_cuda_kernel *k, const char *io, const sf_cg_combine *c,
                                   const char *elem, scanfuse_dtype cdt, char *msg, size_t msglen);
/* Index and sort ops (cuda_index.c): the kernels of one opaque node. */
scanfuse_status sf_cg_index(sf_cg *g, int node, char *msg, size_t msglen);
/* gather, take_along_dim, index_select: the ops the emitter computes inline. */
bool sf_cg_is_gather(sf_op op);
/* The size of the dim a gather node's indices address, and the range text of its error
 * message ("dim 0 has size 5"). */
int64_t sf_cg_gather_size(const scanfuse_fusion *f, const sf_node *n, char *range, size_t rlen);
/* The check kernel of gather node ni's indices (none when sf_int_range proves them in
 * range or the result is empty): a bad one raises its error slot with the reference's
 * message; the kernels reading the indices clamp them. */
void sf_cg_gather_check(sf_cg *g, int ni);

/* The kernels of compute node ni alone, as a segment run node by node has them (sets
 * node_k0/node_nk; cuda_codegen.c). */
scanfuse_status sf_cg_emit_node(sf_cg *g, int ni, char *msg, size_t msglen);

/* One kernel for element-wise nodes[0..n) of one result shape, in node order, of a
 * segment run node by node: it stores every value of theirs that has memory.  The first
 * node's node_k0/node_nk name it, the others' none (they run with it). */
scanfuse_status sf_cg_emit_run(sf_cg *g, const int *nodes, int n, char *msg, size_t msglen);

/* Small segments (cuda_small.c): a SMALL segment whose data fits one block runs as one
 * kernel of one block.  sf_cg_small emits it when it can (*taken; its sub-kernels, the
 * segment's node-by-node kernels, stay in the plan with node_k0/node_nk set, so a run can
 * still go node by node; when not taken the plan and the source are as they were, and
 * the caller tries sf_cg_small_parts, then node by node).  sf_cuda_small_words is the number of 8-byte
 * words a SMALL kernel's parameter holds for sub-kernel k (the launcher packs them in the
 * same order: ptr and strides of each operand (sf_cuda_small_nd of them), flags,
 * aux[0..2], err, scratch). */
scanfuse_status sf_cg_small(sf_cg *g, const int *nodes, int n, bool *taken, char *msg,
                            size_t msglen);
/* A SMALL segment too large for one block (DeepSeek's routing): runs of its nodes, in node
 * order, as SMALL kernels where one block beats their launches, the other nodes their own
 * kernels; *groups is the number of SMALL kernels.  With *groups > 0 the segment's kernels
 * are launched in order, skipping the SMALL kernels' sub-kernels (small_sub); with 0 the
 * plan and the source are as they were (tuning small_part=0: always). */
scanfuse_status sf_cg_small_parts(sf_cg *g, const int *nodes, int n, int *groups, char *msg, size_t msglen);
/* argsort of an argsort's result along the same dim (rows that are permutations of
 * [0, len): the stable sort is a scatter): sf_cg_perm_sort emits that kernel (operands
 * and So struct as emit_sort has them) and returns true, else false. */
bool sf_cg_is_perm_sort(const scanfuse_fusion *f, int ni);
/* topk of rows of <= 512 keys, k <= 16, as one warp a row over a grid (cuda_small.c's
 * template): emits the kernel and returns true, else false (tuning warp_topk=0). */
bool sf_cg_warp_topk(sf_cg *g, int ni, const char *so, const sf_cuda_operand *ops, int nops);
bool sf_cg_perm_sort(sf_cg *g, int ni, const char *so, const sf_cuda_operand *ops, int nops);
int sf_cuda_small_nd(const scanfuse_fusion *f, const sf_cuda_kernel *k, int op);
int sf_cuda_small_words(const scanfuse_fusion *f, const sf_cuda_kernel *k);

#endif /* SF_CUDA_CODEGEN_H */
