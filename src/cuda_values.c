/*
 * cuda_values.c — the CUDA code generator's vocabulary and its "value at an element"
 * emitter: dtype names and conversions of the generated code, literals, index helpers,
 * the pointwise expression templates, kernel operand records, and sf_cg_value, which
 * every kernel template (cuda_codegen.c's element-wise kernels, cuda_scan.c's scans and
 * reductions, the opaque ops' templates) builds on.
 *
 * The core is the "value at an element" emitter (sf_cg_value): given an element context
 * (where the code stands in a kernel's iteration space), it brings any value into a
 * local: by loading an operand, by computing an inline constant from the coordinates, by
 * applying a pointwise node's expression template to its inputs (recursively, for the
 * nodes of the segment being emitted), by computing a gather of the segment from its
 * index and its source at remapped coordinates (recursively too: gathers of gathers
 * compose their indices, views of them are remapped), or from the state of the
 * segment's scan or reduction.  Pointwise segments are one element-wise kernel built
 * from it; scans and reductions (cuda_scan.c) call it in their load (prologue) and store
 * (epilogue) hooks; opaque ops (matmul, pad, triu/tril, index and sort ops) have
 * templates of their own.
 *
 * Semantics follow docs/OPS.md exactly as the reference evaluator implements them:
 * operands are converted to the op's common dtype (weak scalar literals straight from
 * the literal, converted here on the host), floating ops compute in double and round
 * once to the value's dtype, integer ops compute in int64 with wrapping, integer
 * division by zero and out-of-range indices raise the run's error slots.
 */
#include "cuda_codegen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------ */
/* dtype vocabulary of the generated code                                          */
/* ------------------------------------------------------------------------------ */

const char *sf_cg_sfx(scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_BOOL: return "b8";
    case SCANFUSE_UINT8: return "u8";
    case SCANFUSE_INT8: return "i8";
    case SCANFUSE_INT16: return "i16";
    case SCANFUSE_INT32: return "i32";
    case SCANFUSE_INT64: return "i64";
    case SCANFUSE_FLOAT16: return "f16";
    case SCANFUSE_BFLOAT16: return "bf16";
    case SCANFUSE_FLOAT32: return "f32";
    case SCANFUSE_FLOAT64: return "f64";
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: break;
    }
    SF_ASSERT(!"bad dtype");
    return "?";
}

const char *sf_cg_ctype(scanfuse_dtype dt) { return sf_dtype_is_float(dt) ? "double" : "i64"; }

const char *sf_cg_rawtype(scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_BOOL: case SCANFUSE_UINT8: return "u8";
    case SCANFUSE_INT8: return "i8";
    case SCANFUSE_INT16: return "i16";
    case SCANFUSE_INT32: return "i32";
    case SCANFUSE_INT64: return "i64";
    case SCANFUSE_FLOAT16: case SCANFUSE_BFLOAT16: return "u16";
    case SCANFUSE_FLOAT32: return "float";
    case SCANFUSE_FLOAT64: return "double";
    case SCANFUSE_DTYPE_NONE: case SCANFUSE_NUM_DTYPES: break;
    }
    SF_ASSERT(!"bad dtype");
    return "?";
}

/* Significand bits of a float dtype. */
static int float_bits(scanfuse_dtype dt) {
    switch (dt) {
    case SCANFUSE_FLOAT16: return 11;
    case SCANFUSE_BFLOAT16: return 8;
    case SCANFUSE_FLOAT32: return 24;
    default: return 53;
    }
}

/* Does every value of integer dtype `from` fit exactly into float dtype `to`? */
static bool int_exact_in_float(scanfuse_dtype from, scanfuse_dtype to) {
    int bits = float_bits(to);
    int need;
    switch (from) {
    case SCANFUSE_BOOL: need = 1; break;
    case SCANFUSE_UINT8: case SCANFUSE_INT8: need = 8; break;
    case SCANFUSE_INT16: need = 16; break;
    case SCANFUSE_INT32: need = 32; break;
    default: need = 64; break;
    }
    return need <= bits;
}

static bool float_exact_in_float(scanfuse_dtype from, scanfuse_dtype to) {
    if (from == to || to == SCANFUSE_FLOAT64) return true;
    if (to == SCANFUSE_FLOAT32) return from == SCANFUSE_FLOAT16 || from == SCANFUSE_BFLOAT16;
    return false;
}

void sf_cg_conv(sf_buf *b, scanfuse_dtype from, scanfuse_dtype to, const char *x) {
    bool ff = sf_dtype_is_float(from), tf = sf_dtype_is_float(to);
    if (from == to) {
        sf_buf_puts(b, x);
    } else if (ff && tf) {
        if (float_exact_in_float(from, to)) sf_buf_puts(b, x);
        else sf_buf_printf(b, "sf_r_%s(%s)", sf_cg_sfx(to), x);
    } else if (tf) { /* integer -> float, rounded once */
        if (int_exact_in_float(from, to)) sf_buf_printf(b, "(double)(%s)", x);
        else if (to == SCANFUSE_FLOAT64) sf_buf_printf(b, "(double)(%s)", x);
        else if (to == SCANFUSE_FLOAT32) sf_buf_printf(b, "(double)(float)(%s)", x);
        else if (from != SCANFUSE_INT64) sf_buf_printf(b, "sf_r_%s((double)(%s))", sf_cg_sfx(to), x);
        else sf_buf_printf(b, "sf_r_%s(sf_i2fp(%s, %d))", sf_cg_sfx(to), x, float_bits(to));
    } else if (ff) { /* float -> integer: PyTorch's x86 cast */
        if (to == SCANFUSE_BOOL) sf_buf_printf(b, "(i64)((%s) != 0.0)", x);
        else if (to == SCANFUSE_INT64) sf_buf_printf(b, "sf_f2i64(%s)", x);
        else if (to == SCANFUSE_INT32) sf_buf_printf(b, "sf_f2i32(%s)", x);
        else sf_buf_printf(b, "sf_w_%s(sf_f2i32(%s))", sf_cg_sfx(to), x);
    } else { /* integer -> integer: wrap */
        if (to == SCANFUSE_BOOL) sf_buf_printf(b, "(i64)((%s) != 0)", x);
        else if (sf_int_min(from) >= sf_int_min(to) && sf_int_max(from) <= sf_int_max(to))
            sf_buf_puts(b, x);
        else sf_buf_printf(b, "sf_w_%s(%s)", sf_cg_sfx(to), x);
    }
}

/* ------------------------------------------------------------------------------ */
/* Literals                                                                        */
/* ------------------------------------------------------------------------------ */

static double num_f(sf_num n) { return n.kind == SF_NUM_FLOAT ? n.f : (double)n.i; }

/* An int64 rounded once to a float dtype (no detour through double above 2^53). */
static double host_int_to_float(int64_t v, scanfuse_dtype dt) {
    const int64_t lim = (int64_t)1 << 53;
    if (v >= -lim && v <= lim) return sf_round_to((double)v, dt);
    uint64_t u = v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
    int h = 63;
    while (!((u >> h) & 1u)) h--;
    int sh = h - (float_bits(dt) - 1);
    uint64_t q = u >> sh, rem = u & ((UINT64_C(1) << sh) - 1), half = UINT64_C(1) << (sh - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    double r = sf_round_to(ldexp((double)q, sh), dt);
    return v < 0 ? -r : r;
}

static void emit_f64(sf_buf *b, double v) {
    uint64_t bits;
    memcpy(&bits, &v, 8);
    sf_buf_printf(b, "sf_b2d(0x%016llxull)", (unsigned long long)bits);
}

static void emit_i64(sf_buf *b, int64_t v) {
    sf_buf_printf(b, "(i64)0x%016llxull", (unsigned long long)(uint64_t)v);
}

/* A weak scalar literal converted straight to the common dtype cdt (docs/OPS.md). */
void sf_cg_lit_cdt(sf_buf *b, sf_num n, scanfuse_dtype cdt) {
    if (sf_dtype_is_float(cdt)) {
        double v = n.kind == SF_NUM_FLOAT ? sf_round_to(n.f, cdt) : host_int_to_float(n.i, cdt);
        emit_f64(b, v);
    } else {
        int64_t v = n.kind == SF_NUM_FLOAT ? sf_f64_to_int(n.f, cdt) : sf_wrap_int(n.i, cdt);
        emit_i64(b, v);
    }
}

/* A number attribute stored into a value of dtype dt (full, pad), as the reference's
 * put_num does. */
void sf_cg_lit_put(sf_buf *b, sf_num n, scanfuse_dtype dt) {
    if (sf_dtype_is_float(dt)) emit_f64(b, sf_round_to(num_f(n), dt));
    else if (n.kind == SF_NUM_FLOAT) emit_i64(b, sf_f64_to_int(n.f, dt));
    else emit_i64(b, sf_wrap_int(n.i, dt));
}

/* ------------------------------------------------------------------------------ */
/* Index helpers                                                                   */
/* ------------------------------------------------------------------------------ */

void sf_cg_coords(sf_buf *b, const char *prefix, const char *idx, int n, const int *dims,
                  const int64_t *shape) {
    if (n == 0) return;
    sf_buf_printf(b, "i64 %sq_ = %s;\n", prefix, idx);
    for (int j = n - 1; j >= 0; j--) {
        int d = dims[j];
        if (shape[d] == 1) {
            sf_buf_printf(b, "const i64 %s%d = 0;\n", prefix, d);
        } else if (j == 0) {
            sf_buf_printf(b, "const i64 %s%d = %sq_;\n", prefix, d, prefix);
        } else {
            sf_buf_printf(b, "const i64 %s%d = %sq_ %% %lldll; %sq_ /= %lldll;\n", prefix, d, prefix,
                          (long long)shape[d], prefix, (long long)shape[d]);
        }
    }
    sf_buf_printf(b, "(void)%sq_;\n", prefix);
}

void sf_cg_offset(sf_buf *b, const char *prefix, int k, int n, const int *dims,
                  const int64_t *shape) {
    bool any = false;
    for (int j = 0; j < n; j++) {
        int d = dims[j];
        if (shape[d] == 1) continue;
        sf_buf_printf(b, "%s%s%d * a.st[%d][%d]", any ? " + " : "", prefix, d, k, d);
        any = true;
    }
    if (!any) sf_buf_puts(b, "0");
}

const int sf_cg_iota_dims[SF_MAX_DIMS] = {0, 1, 2, 3, 4, 5, 6, 7};

/* ------------------------------------------------------------------------------ */
/* Pointwise expression templates                                                  */
/* ------------------------------------------------------------------------------ */

/* The dtype of the value an op expression yields before the final conversion: the
 * common dtype for arithmetic, bool for predicates. */
static scanfuse_dtype expr_dtype(sf_op op, scanfuse_dtype cdt) {
    switch (op) {
    case SF_OP_logical_not: case SF_OP_isnan: case SF_OP_eq: case SF_OP_ne: case SF_OP_lt:
    case SF_OP_le: case SF_OP_gt: case SF_OP_ge: case SF_OP_logical_and: case SF_OP_logical_or:
        return SCANFUSE_BOOL;
    default:
        return cdt;
    }
}

/* Appends the expression of a pointwise op (not where/cast) over operand expressions
 * x[0..] that are compute values of the common dtype cdt.  false: no such form. */
static bool emit_op_expr(sf_buf *b, sf_op op, scanfuse_dtype cdt, const char *const *x) {
    const char *a = x[0], *c = x[1];
    if (sf_dtype_is_float(cdt)) {
        switch (op) {
        case SF_OP_neg: sf_buf_printf(b, "(-(%s))", a); return true;
        case SF_OP_abs: sf_buf_printf(b, "fabs(%s)", a); return true;
        case SF_OP_exp: sf_buf_printf(b, "exp(%s)", a); return true;
        case SF_OP_log: sf_buf_printf(b, "log(%s)", a); return true;
        case SF_OP_log1p: sf_buf_printf(b, "log1p(%s)", a); return true;
        case SF_OP_expm1: sf_buf_printf(b, "expm1(%s)", a); return true;
        case SF_OP_sqrt: sf_buf_printf(b, "sqrt(%s)", a); return true;
        case SF_OP_rsqrt: sf_buf_printf(b, "(1.0 / sqrt(%s))", a); return true;
        case SF_OP_reciprocal: sf_buf_printf(b, "(1.0 / (%s))", a); return true;
        case SF_OP_sigmoid: sf_buf_printf(b, "sf_sigmoid(%s)", a); return true;
        case SF_OP_tanh: sf_buf_printf(b, "tanh(%s)", a); return true;
        case SF_OP_silu: sf_buf_printf(b, "sf_silu(%s)", a); return true;
        case SF_OP_relu: sf_buf_printf(b, "sf_relu(%s)", a); return true;
        case SF_OP_floor: sf_buf_printf(b, "floor(%s)", a); return true;
        case SF_OP_ceil: sf_buf_printf(b, "ceil(%s)", a); return true;
        case SF_OP_logical_not: sf_buf_printf(b, "(i64)((%s) == 0.0)", a); return true;
        case SF_OP_isnan: sf_buf_printf(b, "(i64)sf_isnan(%s)", a); return true;
        case SF_OP_add: sf_buf_printf(b, "((%s) + (%s))", a, c); return true;
        case SF_OP_sub: sf_buf_printf(b, "((%s) - (%s))", a, c); return true;
        case SF_OP_mul: sf_buf_printf(b, "((%s) * (%s))", a, c); return true;
        case SF_OP_div: sf_buf_printf(b, "((%s) / (%s))", a, c); return true;
        case SF_OP_pow: sf_buf_printf(b, "pow(%s, %s)", a, c); return true;
        case SF_OP_maximum: sf_buf_printf(b, "sf_fmax(%s, %s)", a, c); return true;
        case SF_OP_minimum: sf_buf_printf(b, "sf_fmin(%s, %s)", a, c); return true;
        case SF_OP_remainder: sf_buf_printf(b, "sf_frem(%s, %s)", a, c); return true;
        case SF_OP_floor_divide: sf_buf_printf(b, "sf_ffdiv(%s, %s)", a, c); return true;
        case SF_OP_eq: sf_buf_printf(b, "(i64)((%s) == (%s))", a, c); return true;
        case SF_OP_ne: sf_buf_printf(b, "(i64)((%s) != (%s))", a, c); return true;
        case SF_OP_lt: sf_buf_printf(b, "(i64)((%s) < (%s))", a, c); return true;
        case SF_OP_le: sf_buf_printf(b, "(i64)((%s) <= (%s))", a, c); return true;
        case SF_OP_gt: sf_buf_printf(b, "(i64)((%s) > (%s))", a, c); return true;
        case SF_OP_ge: sf_buf_printf(b, "(i64)((%s) >= (%s))", a, c); return true;
        case SF_OP_logical_and: sf_buf_printf(b, "(i64)((%s) != 0.0 && (%s) != 0.0)", a, c); return true;
        case SF_OP_logical_or: sf_buf_printf(b, "(i64)((%s) != 0.0 || (%s) != 0.0)", a, c); return true;
        default: return false;
        }
    }
    bool isbool = cdt == SCANFUSE_BOOL;
    switch (op) {
    case SF_OP_neg: sf_buf_printf(b, "sf_ineg(%s)", a); return true;
    case SF_OP_abs: sf_buf_printf(b, "((%s) < 0 ? sf_ineg(%s) : (%s))", a, a, a); return true;
    case SF_OP_relu: sf_buf_printf(b, "((%s) > 0 ? (%s) : (i64)0)", a, a); return true;
    case SF_OP_floor: case SF_OP_ceil: sf_buf_printf(b, "(%s)", a); return true;
    case SF_OP_logical_not: sf_buf_printf(b, "(i64)((%s) == 0)", a); return true;
    case SF_OP_isnan: sf_buf_printf(b, "((void)(%s), (i64)0)", a); return true;
    case SF_OP_add:
        if (isbool) sf_buf_printf(b, "(i64)((%s) != 0 || (%s) != 0)", a, c);
        else sf_buf_printf(b, "sf_iadd(%s, %s)", a, c);
        return true;
    case SF_OP_sub: sf_buf_printf(b, "sf_isub(%s, %s)", a, c); return true;
    case SF_OP_mul:
        if (isbool) sf_buf_printf(b, "(i64)((%s) != 0 && (%s) != 0)", a, c);
        else sf_buf_printf(b, "sf_imul(%s, %s)", a, c);
        return true;
    case SF_OP_pow: sf_buf_printf(b, "sf_ipow(%s, %s)", a, c); return true;
    case SF_OP_maximum: sf_buf_printf(b, "((%s) < (%s) ? (%s) : (%s))", a, c, c, a); return true;
    case SF_OP_minimum: sf_buf_printf(b, "((%s) < (%s) ? (%s) : (%s))", c, a, c, a); return true;
    case SF_OP_remainder: sf_buf_printf(b, "sf_irem(%s, %s, a.err)", a, c); return true;
    case SF_OP_floor_divide: sf_buf_printf(b, "sf_ifdiv(%s, %s, a.err)", a, c); return true;
    case SF_OP_eq: sf_buf_printf(b, "(i64)((%s) == (%s))", a, c); return true;
    case SF_OP_ne: sf_buf_printf(b, "(i64)((%s) != (%s))", a, c); return true;
    case SF_OP_lt: sf_buf_printf(b, "(i64)((%s) < (%s))", a, c); return true;
    case SF_OP_le: sf_buf_printf(b, "(i64)((%s) <= (%s))", a, c); return true;
    case SF_OP_gt: sf_buf_printf(b, "(i64)((%s) > (%s))", a, c); return true;
    case SF_OP_ge: sf_buf_printf(b, "(i64)((%s) >= (%s))", a, c); return true;
    case SF_OP_logical_and: sf_buf_printf(b, "(i64)((%s) != 0 && (%s) != 0)", a, c); return true;
    case SF_OP_logical_or: sf_buf_printf(b, "(i64)((%s) != 0 || (%s) != 0)", a, c); return true;
    default: return false;
    }
}

/* The common dtype a pointwise node's operands are converted to (as the CPU backend and
 * the reference evaluator choose it). */
static scanfuse_dtype common_dtype(const scanfuse_fusion *f, const sf_node *n) {
    scanfuse_dtype res = f->values[n->out[0]].dtype;
    switch (n->op) {
    case SF_OP_eq: case SF_OP_ne: case SF_OP_lt: case SF_OP_le: case SF_OP_gt: case SF_OP_ge:
    case SF_OP_logical_and: case SF_OP_logical_or: {
        scanfuse_dtype c = sf_result_type(f, n->in, n->nin);
        if (!sf_dtype_valid(c))
            c = scanfuse_dtype_promote(f->values[n->in[0]].dtype, f->values[n->in[1]].dtype);
        return c;
    }
    case SF_OP_logical_not: case SF_OP_isnan: case SF_OP_cast:
        return f->values[n->in[0]].dtype;
    default:
        return res;
    }
}

/* ------------------------------------------------------------------------------ */
/* Operands and the value-at-element emitter                                       */
/* ------------------------------------------------------------------------------ */

unsigned sf_cg_grid(int64_t blocks) {
    if (blocks < 1) blocks = 1;
    if (blocks > 0x7fffffffll) blocks = 0x7fffffffll;
    return (unsigned)blocks;
}

int sf_cg_operand(sf_cuda_kernel *k, int32_t v, sf_cuda_opmode mode, int space, bool out) {
    for (int i = 0; i < k->nops; i++)
        if (k->ops[i].value == v && k->ops[i].mode == mode && k->ops[i].space == space &&
            k->ops[i].out == out)
            return i;
    if (k->nops >= SF_CUDA_MAXOPS) return -1;
    sf_cuda_operand *o = &k->ops[k->nops];
    o->value = v;
    o->mode = mode;
    o->space = space;
    o->out = out;
    o->out_index = -1;
    return k->nops++;
}

void sf_cg_put_lines(sf_buf *b, const char *const *lines) {
    for (int i = 0; lines && lines[i]; i++) {
        sf_buf_puts(b, lines[i]);
        sf_buf_puts(b, "\n");
    }
}

sf_cuda_kernel *sf_cg_new_kernel(sf_cg *g, sf_cuda_kkind kind, int node) {
    sf_cuda_plan *pl = g->pl;
    sf_cuda_kernel *k = &pl->k[pl->nkernels++];
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->seg = g->seg;
    k->node = node;
    k->err_slot = -1;
    k->block = 256;
    k->grid = 1;
    return k;
}

sf_cuda_kernel *sf_cg_twin_kernel(sf_cg *g, int ki, sf_cuda_kkind kind) {
    sf_cuda_kernel *k2 = sf_cg_new_kernel(g, kind, g->pl->k[ki].node);
    const sf_cuda_kernel *k = &g->pl->k[ki];
    k2->ndim = k->ndim;
    k2->ndim2 = k->ndim2;
    memcpy(k2->shape, k->shape, sizeof k->shape);
    memcpy(k2->shape2, k->shape2, sizeof k->shape2);
    k2->nops = k->nops;
    memcpy(k2->ops, k->ops, sizeof k->ops);
    k2->scratch_bytes = -1;
    return k2;
}

int sf_cg_err_slot(sf_cg *g) {
    g->pl->may_fail = true;
    return g->pl->nerr++;
}

bool sf_cg_stored(const sf_cg *g, int32_t v) {
    if (g->pl->vkind[v] != SF_CUV_BUFFER) return false;
    int p = g->f->values[v].producer;
    return !(p >= 0 && g->in_seg[p] && sf_cg_is_gather(g->f->nodes[p].op));
}

bool sf_cg_is_view_op(sf_op op) {
    return op == SF_OP_reshape || op == SF_OP_expand || op == SF_OP_permute || op == SF_OP_slice;
}

/* The value a chain of views of v starts from. */
int32_t sf_cg_view_base(const scanfuse_fusion *f, int32_t v) {
    for (;;) {
        int p = f->values[v].producer;
        if (p < 0 || !sf_cg_is_view_op(f->nodes[p].op)) return v;
        v = f->nodes[p].in[0];
    }
}

/* Is v a view of a gather of the group being emitted? */
static bool view_of_seg_gather(const sf_cg *g, int32_t v) {
    int p = g->f->values[v].producer;
    if (p < 0 || !sf_cg_is_view_op(g->f->nodes[p].op)) return false;
    int q = g->f->values[sf_cg_view_base(g->f, v)].producer;
    return q >= 0 && g->in_seg[q] && sf_cg_is_gather(g->f->nodes[q].op);
}

/* Normalizes a compute expression to the values of dtype dt (rounding, wrapping). */
static void put_norm(sf_buf *b, scanfuse_dtype dt, const char *x) {
    if (dt == SCANFUSE_FLOAT64 || dt == SCANFUSE_INT64) sf_buf_puts(b, x);
    else if (dt == SCANFUSE_BOOL) sf_buf_printf(b, "(i64)((%s) != 0)", x);
    else if (sf_dtype_is_float(dt)) sf_buf_printf(b, "sf_r_%s(%s)", sf_cg_sfx(dt), x);
    else sf_buf_printf(b, "sf_w_%s(%s)", sf_cg_sfx(dt), x);
}

/* Narrow floats keep their raw element beside the value: rounding to one of them is a
 * conversion instruction (a quarter of the rate of an add on sm_90), and a value that is
 * rounded, widened back and then narrowed again by its store costs three where one does. */
static bool keeps_raw(scanfuse_dtype dt) {
    return dt == SCANFUSE_FLOAT16 || dt == SCANFUSE_BFLOAT16 || dt == SCANFUSE_FLOAT32;
}

/* Defines local v<id> from compute expression x, normalized to the value's dtype unless
 * `normal` says x already holds one of its values.  A narrow float not yet normalized is
 * rounded once into its raw element h<id> (done[v] = 2: sf_cg_store writes h<id>), and
 * v<id> is that element widened; code that never reads v<id> loses the widening. */
static void define_value(sf_cg_ectx *e, int32_t v, const char *x, bool normal) {
    scanfuse_dtype dt = e->g->f->values[v].dtype;
    if (!normal && keeps_raw(dt)) {
        sf_buf_printf(e->b, "const %s h%d = sf_rw_%s(%s);\n", sf_cg_rawtype(dt), (int)v, sf_cg_sfx(dt), x);
        sf_buf_printf(e->b, "const double v%d = sf_cv_%s(h%d);\n", (int)v, sf_cg_sfx(dt), (int)v);
        e->done[v] = 2;
        return;
    }
    sf_buf_printf(e->b, "const %s v%d = ", sf_cg_ctype(dt), (int)v);
    if (normal) sf_buf_puts(e->b, x);
    else put_norm(e->b, dt, x);
    sf_buf_puts(e->b, ";\n");
}

/* The literal feeding input j of node n (a weak scalar folded into it), or NULL. */
static const sf_num *literal_of(const sf_cg *g, const sf_node *n, int j) {
    int32_t v = n->in[j];
    if (g->pl->vkind[v] != SF_CUV_LITERAL) return NULL;
    return &g->f->nodes[g->f->values[v].producer].a.value;
}

/* An inline constant (arange, iota, full) at the context's element: its flat index is
 * found from the context's coordinates (the constant broadcasts to the context). */
void sf_cg_value_inline(sf_cg_ectx *e, int32_t v) {
    const scanfuse_fusion *f = e->g->f;
    const sf_value *fv = &f->values[v];
    const sf_node *n = &f->nodes[fv->producer];
    scanfuse_dtype dt = fv->dtype;
    sf_buf *b = e->b;
    if (n->op == SF_OP_full || n->op == SF_OP_scalar) {
        sf_buf_printf(b, "const %s v%d = ", sf_cg_ctype(dt), (int)v);
        if (n->op == SF_OP_scalar) sf_cg_lit_cdt(b, n->a.value, dt);
        else sf_cg_lit_put(b, n->a.value, dt);
        sf_buf_puts(b, ";\n");
        return;
    }
    /* flat index of the element */
    sf_buf idx = {0};
    int lead = e->ndim - fv->ndim;
    SF_ASSERT(lead >= 0);
    int64_t cs = 1;
    bool any = false;
    for (int j = fv->ndim - 1; j >= 0; j--) {
        if (fv->shape[j] > 1) {
            if (any) sf_buf_puts(&idx, " + ");
            sf_buf_puts(&idx, "(");
            e->coord(e, j + lead, &idx);
            sf_buf_printf(&idx, ") * %lldll", (long long)cs);
            any = true;
        }
        cs *= fv->shape[j] > 0 ? fv->shape[j] : 1;
    }
    if (!any) sf_buf_puts(&idx, "0ll");
    sf_num start = n->a.start, step = n->a.step;
    if (n->op == SF_OP_iota) {
        memset(&start, 0, sizeof start);
        start.kind = SF_NUM_INT;
        step = start;
        step.i = 1;
        step.f = 1.0;
    }
    if (sf_dtype_is_float(dt)) {
        sf_buf t = {0};
        emit_f64(&t, num_f(start));
        sf_buf_printf(&t, " + (double)(%s) * ", idx.data);
        emit_f64(&t, num_f(step));
        define_value(e, v, t.data, false);
        free(t.data);
    } else {
        int64_t s0 = start.kind == SF_NUM_FLOAT ? sf_f64_to_int(start.f, SCANFUSE_INT64) : start.i;
        int64_t st = step.kind == SF_NUM_FLOAT ? sf_f64_to_int(step.f, SCANFUSE_INT64) : step.i;
        sf_buf t = {0};
        sf_buf_printf(&t, "(i64)((u64)%lldll + (u64)(%s) * (u64)%lldll)", (long long)s0, idx.data,
                      (long long)st);
        define_value(e, v, t.data, false);
        free(t.data);
    }
    free(idx.data);
}

/* The operand expression of input j of pointwise node n, converted to dtype `to`. */
static void input_expr(sf_cg_ectx *e, const sf_node *n, int j, scanfuse_dtype to, sf_buf *out) {
    const sf_num *lit = literal_of(e->g, n, j);
    if (lit) {
        sf_cg_lit_cdt(out, *lit, to);
        return;
    }
    int32_t v = n->in[j];
    sf_cg_value(e, v);
    char name[24];
    snprintf(name, sizeof name, "v%d", (int)v);
    sf_cg_conv(out, e->g->f->values[v].dtype, to, name);
}

/* ---- float evaluation ----
 * Values of float16, bfloat16 and float32 are computed in double and rounded to their
 * dtype; for the operations below float32 arithmetic gives the same bits at a fraction
 * of the cost (a float64 conversion is 16 a clock an SM on sm_90, a float32 add 128):
 * float32 add, subtract, multiply, divide and square root are correctly rounded (NVRTC's
 * defaults: IEEE division and sqrt, no flush to zero; --fmad=false), and rounding a
 * result first to float32 then to float16 or bfloat16 is rounding it once, as float32
 * has at least 2p + 2 bits for their p (a fact of +, -, *, / and sqrt; no overflow
 * differs: float16 results stay far inside float32's range, bfloat16 shares it).
 * Negation, abs and casts between these dtypes are exact or round once.  Tuning
 * f32eval=0 turns it off (the double path). */
static bool f32able(scanfuse_dtype dt) {
    return dt == SCANFUSE_FLOAT16 || dt == SCANFUSE_BFLOAT16 || dt == SCANFUSE_FLOAT32;
}

/* The float32 form of value w (f32able, already in v<w>): from its raw element h<w>
 * where the context has one. */
static void float_form(sf_cg_ectx *e, int32_t w, sf_buf *out) {
    scanfuse_dtype dt = e->g->f->values[w].dtype;
    if (e->done[w] != 2) sf_buf_printf(out, "(float)v%d", (int)w); /* exact: v<w> holds a dt value */
    else if (dt == SCANFUSE_FLOAT32) sf_buf_printf(out, "h%d", (int)w);
    else sf_buf_printf(out, "sf_%s_f(h%d)", sf_cg_sfx(dt), (int)w);
}

static bool value_pointwise_f32(sf_cg_ectx *e, const sf_node *n, int32_t v, scanfuse_dtype cdt) {
    const scanfuse_fusion *f = e->g->f;
    scanfuse_dtype res = f->values[v].dtype;
    const char *fmt;
    switch (n->op) {
    case SF_OP_add: fmt = "(%s + %s)"; break;
    case SF_OP_sub: fmt = "(%s - %s)"; break;
    case SF_OP_mul: fmt = "(%s * %s)"; break;
    case SF_OP_div: fmt = "(%s / %s)"; break;
    case SF_OP_neg: fmt = "(-%s)"; break;
    case SF_OP_abs: fmt = "fabsf(%s)"; break;
    case SF_OP_sqrt: fmt = "sqrtf(%s)"; break;
    case SF_OP_cast: fmt = "%s"; cdt = f->values[n->in[0]].dtype; break;
    default: return false;
    }
    if (sf_cg_tune("f32eval", 1) != 1 || !f32able(res) || !f32able(cdt)) return false;
    if (n->op != SF_OP_cast && cdt != res) return false;
    sf_buf x[2] = {{0}, {0}};
    bool ok = true;
    for (int j = 0; j < n->nin && j < 2 && ok; j++) {
        const sf_num *lit = literal_of(e->g, n, j);
        if (lit) { /* a literal of cdt's values: exact in float32 */
            sf_buf_puts(&x[j], "((float)(");
            sf_cg_lit_cdt(&x[j], *lit, cdt);
            sf_buf_puts(&x[j], "))");
            continue;
        }
        int32_t w = n->in[j];
        scanfuse_dtype wd = f->values[w].dtype;
        /* the operand converts to cdt exactly (the same dtype, or float16/bfloat16 into
         * float32); the other conversions round, and stay on the double path */
        ok = wd == cdt || (f32able(wd) && wd != SCANFUSE_FLOAT32 && cdt == SCANFUSE_FLOAT32);
        if (!ok) break;
        sf_cg_value(e, w);
        float_form(e, w, &x[j]);
    }
    if (ok) {
        sf_buf expr = {0};
        sf_buf_printf(&expr, fmt, x[0].data, n->nin > 1 && x[1].data ? x[1].data : "");
        if (res == SCANFUSE_FLOAT32)
            sf_buf_printf(e->b, "const float h%d = %s;\nconst double v%d = (double)h%d;\n", (int)v, expr.data,
                          (int)v, (int)v);
        else
            sf_buf_printf(e->b, "const u16 h%d = sf_f32_%s(%s);\nconst double v%d = sf_cv_%s(h%d);\n", (int)v,
                          sf_cg_sfx(res), expr.data, (int)v, sf_cg_sfx(res), (int)v);
        e->done[v] = 2;
        free(expr.data);
    }
    free(x[0].data);
    free(x[1].data);
    return ok;
}

static void value_pointwise(sf_cg_ectx *e, const sf_node *n, int32_t v) {
    const scanfuse_fusion *f = e->g->f;
    scanfuse_dtype res = f->values[v].dtype;
    scanfuse_dtype cdt = common_dtype(f, n);
    if (value_pointwise_f32(e, n, v, cdt)) return;
    /* integer division by zero raises this kernel's slot; a literal divisor that is not 0
     * in the common dtype cannot (no slot: the outputs need no staging) */
    const sf_num *divisor = n->nin == 2 ? literal_of(e->g, n, 1) : NULL;
    bool nonzero_lit = divisor && (divisor->kind == SF_NUM_INT || divisor->kind == SF_NUM_BOOL) &&
                       sf_wrap_int(divisor->i, cdt) != 0;
    if ((n->op == SF_OP_remainder || n->op == SF_OP_floor_divide) && !sf_dtype_is_float(cdt) &&
        !nonzero_lit && e->k->err_slot < 0) {
        e->k->err_slot = sf_cg_err_slot(e->g);
        snprintf(e->k->err_what, sizeof e->k->err_what, "%s", sf_op_table[n->op].name);
    }
    sf_buf x[SF_MAX_IN] = {{0}, {0}, {0}};
    for (int j = 0; j < n->nin; j++) {
        scanfuse_dtype to = (n->op == SF_OP_where && j == 0) ? SCANFUSE_BOOL : cdt;
        if (n->op == SF_OP_cast) to = f->values[n->in[0]].dtype;
        input_expr(e, n, j, to, &x[j]);
        if (!x[j].data) sf_buf_puts(&x[j], "0");
    }
    sf_buf expr = {0};
    scanfuse_dtype edt;
    if (n->op == SF_OP_where) {
        sf_buf_printf(&expr, "((%s) != 0 ? (%s) : (%s))", x[0].data, x[1].data, x[2].data);
        edt = cdt;
    } else if (n->op == SF_OP_cast) {
        sf_buf_puts(&expr, x[0].data);
        edt = f->values[n->in[0]].dtype;
    } else {
        const char *xs[SF_MAX_IN] = {x[0].data, x[1].data ? x[1].data : "", x[2].data ? x[2].data : ""};
        bool ok = emit_op_expr(&expr, n->op, cdt, xs);
        SF_ASSERT(ok);
        edt = expr_dtype(n->op, cdt);
    }
    /* float -> float: normalizing the expression to res is what converting it does
     * (rounding twice to the same dtype rounds once) */
    sf_buf cv = {0};
    if (sf_dtype_is_float(edt) && sf_dtype_is_float(res)) sf_buf_puts(&cv, expr.data ? expr.data : "0");
    else sf_cg_conv(&cv, edt, res, expr.data ? expr.data : "0");
    define_value(e, v, cv.data ? cv.data : "0", false);
    for (int j = 0; j < SF_MAX_IN; j++) free(x[j].data);
    free(expr.data);
    free(cv.data);
}

/* ---- gathers and views of them, computed inline ----
 * A remapped context evaluates a value at coordinates that are local variables of the
 * generated code (the source element of a gather, the input element of a view); its code
 * goes in a block of its own, so its v<id> locals (the value at other coordinates) shadow
 * the enclosing ones and never leak into them. */

typedef struct remap_ctx {
    char c[SF_MAX_DIMS][48]; /* coordinate expressions, one per dim of the value */
} remap_ctx;

static void remap_coord(sf_cg_ectx *e, int d, sf_buf *out) {
    const remap_ctx *u = e->user;
    sf_buf_puts(out, u->c[d]);
}

/* Offset of an OWN operand at the context's coordinates (broadcast right-aligned). */
static void remap_off(sf_cg_ectx *e, int op, sf_buf *out) {
    const remap_ctx *u = e->user;
    const sf_value *fv = &e->g->f->values[e->k->ops[op].value];
    int lead = e->ndim - fv->ndim;
    bool any = false;
    for (int j = 0; j < fv->ndim; j++) {
        if (fv->shape[j] <= 1) continue;
        sf_buf_printf(out, "%s%s * a.st[%d][%d]", any ? " + " : "", u->c[j + lead], op, j);
        any = true;
    }
    if (!any) sf_buf_puts(out, "0");
}

/* Emits "{ <w at coordinates u> dst = v<w>; }" into e's code. */
static void eval_at(sf_cg_ectx *e, int32_t w, remap_ctx *u, const char *dst) {
    const scanfuse_fusion *f = e->g->f;
    const sf_value *wv = &f->values[w];
    uint8_t *done = sf_calloc((size_t)(f->nvalues > 0 ? f->nvalues : 1), 1);
    if (!done) { /* out of memory: the segment runs node by node */
        e->overflow = true;
        return;
    }
    sf_cg_ectx s;
    memset(&s, 0, sizeof s);
    s.g = e->g;
    s.k = e->k;
    s.b = e->b;
    s.ndim = wv->ndim;
    s.shape = wv->shape;
    s.coord = remap_coord;
    s.off = remap_off;
    s.user = u;
    s.done = done;
    s.own = true;
    sf_buf_puts(e->b, "{\n");
    sf_cg_value(&s, w);
    sf_buf_printf(e->b, "%s = v%d;\n}\n", dst, (int)w);
    e->overflow |= s.overflow;
    free(done);
}

/* Declares "const i64 <prefix><d>" = the coordinate of value v's dim d at e's element
 * (0 along dims of size 1: v broadcasts into the context, right-aligned). */
static void value_coords(sf_cg_ectx *e, const sf_value *fv, const char *prefix) {
    int lead = e->ndim - fv->ndim;
    SF_ASSERT(lead >= 0);
    for (int d = 0; d < fv->ndim; d++) {
        sf_buf_printf(e->b, "const i64 %s%d = ", prefix, d);
        if (fv->shape[d] == 1) sf_buf_puts(e->b, "0");
        else e->coord(e, d + lead, e->b);
        sf_buf_puts(e->b, ";\n");
    }
}

/* A gather node n of the segment (gather, take_along_dim, index_select; docs/OPS.md,
 * as the reference's k_gather): its index at the element's coordinates, bounded, then
 * its source at the coordinates with dim replaced by the index (the flat index for
 * take_along_dim without dim).  An index that sf_int_range does not prove in range was
 * checked by the segment's check kernel before this kernel runs (the reference's error
 * and message); here it is clamped, so nothing is read out of bounds. */
static void value_gather(sf_cg_ectx *e, const sf_node *n, int32_t v) {
    const scanfuse_fusion *f = e->g->f;
    const sf_value *yv = &f->values[v], *x = &f->values[n->in[0]], *ix = &f->values[n->in[1]];
    sf_buf *b = e->b;
    bool flat = n->op == SF_OP_take_along_dim && !n->a.has_dim;
    int dim = (int)n->a.dim, nd = x->ndim;
    int64_t size = sf_cg_gather_size(f, n, NULL, 0);
    sf_buf_printf(b, "%s v%d;\n{\n", sf_cg_ctype(yv->dtype), (int)v);
    char yp[24];
    snprintf(yp, sizeof yp, "y%d_", (int)v);
    value_coords(e, yv, yp);
    /* the index of this element (coordinates in the index's own shape) */
    remap_ctx ui;
    memset(&ui, 0, sizeof ui);
    if (n->op == SF_OP_index_select) {
        if (ix->ndim > 0 && nd > 0) snprintf(ui.c[0], sizeof ui.c[0], "y%d_%d", (int)v, dim);
        else if (ix->ndim > 0) snprintf(ui.c[0], sizeof ui.c[0], "0");
    } else {
        int lead = yv->ndim - ix->ndim; /* 0 (the ranks agree) */
        for (int d = 0; d < ix->ndim; d++) {
            if (ix->shape[d] == 1) snprintf(ui.c[d], sizeof ui.c[d], "0");
            else snprintf(ui.c[d], sizeof ui.c[d], "y%d_%d", (int)v, d + lead);
        }
    }
    char gi[24];
    snprintf(gi, sizeof gi, "gi%d", (int)v);
    sf_buf_printf(b, "i64 %s;\n", gi);
    eval_at(e, n->in[1], &ui, gi);
    if (size == 0) { /* every index is bad: the check kernel fails the run */
        sf_buf_printf(b, "(void)%s;\nv%d = 0;\n}\n", gi, (int)v);
        return;
    }
    int64_t lo, hi;
    if (!(sf_int_range(f, n->in[1], &lo, &hi) && lo >= 0 && hi < size))
        sf_buf_printf(b, "%s = sf_clamp_idx(%s, %lldll);\n", gi, gi, (long long)size);
    /* the source element */
    remap_ctx ux;
    memset(&ux, 0, sizeof ux);
    if (flat) {
        char xp[24];
        snprintf(xp, sizeof xp, "x%d_", (int)v);
        sf_cg_coords(b, xp, gi, nd, sf_cg_iota_dims, x->shape);
        for (int d = 0; d < nd; d++) snprintf(ux.c[d], sizeof ux.c[d], "%s%d", xp, d);
    } else {
        for (int d = 0; d < nd; d++) {
            if (d == dim) snprintf(ux.c[d], sizeof ux.c[d], "%s", gi);
            else if (x->shape[d] == 1) snprintf(ux.c[d], sizeof ux.c[d], "0");
            else snprintf(ux.c[d], sizeof ux.c[d], "y%d_%d", (int)v, d);
        }
    }
    char dst[24];
    snprintf(dst, sizeof dst, "v%d", (int)v);
    eval_at(e, n->in[0], &ux, dst);
    sf_buf_puts(b, "}\n");
}

/* A view (reshape, expand, permute, slice) of a gather of the segment: its input at the
 * coordinates the view maps the element to. */
static void value_view(sf_cg_ectx *e, const sf_node *n, int32_t v) {
    const scanfuse_fusion *f = e->g->f;
    const sf_value *vv = &f->values[v], *uv = &f->values[n->in[0]];
    sf_buf *b = e->b;
    sf_buf_printf(b, "%s v%d;\n{\n", sf_cg_ctype(vv->dtype), (int)v);
    char wp[24];
    snprintf(wp, sizeof wp, "w%d_", (int)v);
    value_coords(e, vv, wp);
    remap_ctx uu;
    memset(&uu, 0, sizeof uu);
    switch (n->op) {
    case SF_OP_reshape: {
        /* dims of size > 1 in both shapes: when they agree the coordinates carry over
         * (a reshape that adds or drops dims of size 1), else through the flat index */
        int a1[SF_MAX_DIMS], b1[SF_MAX_DIMS], na = 0, nb = 0;
        for (int d = 0; d < vv->ndim; d++)
            if (vv->shape[d] != 1) a1[na++] = d;
        for (int d = 0; d < uv->ndim; d++)
            if (uv->shape[d] != 1) b1[nb++] = d;
        bool same = na == nb;
        for (int j = 0; j < na && same; j++) same = vv->shape[a1[j]] == uv->shape[b1[j]];
        for (int d = 0; d < uv->ndim; d++) snprintf(uu.c[d], sizeof uu.c[d], "0");
        if (same) {
            for (int j = 0; j < na; j++) snprintf(uu.c[b1[j]], sizeof uu.c[0], "%s%d", wp, a1[j]);
            break;
        }
        sf_buf_printf(b, "const i64 %sf = 0", wp);
        int64_t cs = 1;
        for (int d = vv->ndim - 1; d >= 0; d--) {
            if (vv->shape[d] > 1) sf_buf_printf(b, " + %s%d * %lldll", wp, d, (long long)cs);
            cs *= vv->shape[d] > 0 ? vv->shape[d] : 1;
        }
        sf_buf_puts(b, ";\n");
        char up[24], fl[32];
        snprintf(up, sizeof up, "u%d_", (int)v);
        snprintf(fl, sizeof fl, "%sf", wp);
        sf_cg_coords(b, up, fl, uv->ndim, sf_cg_iota_dims, uv->shape);
        for (int d = 0; d < uv->ndim; d++) snprintf(uu.c[d], sizeof uu.c[d], "%s%d", up, d);
        break;
    }
    case SF_OP_expand: {
        int lead = vv->ndim - uv->ndim;
        for (int d = 0; d < uv->ndim; d++) {
            if (uv->shape[d] == 1) snprintf(uu.c[d], sizeof uu.c[d], "0");
            else snprintf(uu.c[d], sizeof uu.c[d], "%s%d", wp, d + lead);
        }
        break;
    }
    case SF_OP_permute:
        for (int d = 0; d < vv->ndim; d++)
            snprintf(uu.c[n->a.list[d]], sizeof uu.c[0], "%s%d", wp, d);
        break;
    default: /* slice */
        for (int d = 0; d < uv->ndim; d++) snprintf(uu.c[d], sizeof uu.c[d], "%s%d", wp, d);
        sf_buf_printf(b, "const i64 %ss = %lldll + %lldll * %s%d;\n", wp, (long long)n->a.start.i,
                      (long long)n->a.step.i, wp, (int)n->a.dim);
        snprintf(uu.c[n->a.dim], sizeof uu.c[0], "%ss", wp);
        break;
    }
    char dst[24];
    snprintf(dst, sizeof dst, "v%d", (int)v);
    eval_at(e, n->in[0], &uu, dst);
    sf_buf_puts(b, "}\n");
}

void sf_cg_value(sf_cg_ectx *e, int32_t v) {
    if (e->done[v]) return;
    e->done[v] = 1;
    const scanfuse_fusion *f = e->g->f;
    const sf_value *fv = &f->values[v];
    scanfuse_dtype dt = fv->dtype;
    for (int j = 0; j < e->nanchor; j++)
        if (e->anchor_val[j] == v) {
            define_value(e, v, e->anchor_expr[j], !e->anchor_round[j]);
            return;
        }
    int kind = e->g->pl->vkind[v];
    int p = fv->producer;
    if (p >= 0 && e->g->in_seg[p]) {
        const sf_node *n = &f->nodes[p];
        if (sf_cg_is_gather(n->op)) {
            value_gather(e, n, v);
            return;
        }
        SF_ASSERT(sf_op_table[n->op].kind == SF_KIND_POINTWISE);
        value_pointwise(e, n, v);
        return;
    }
    if (view_of_seg_gather(e->g, v)) {
        value_view(e, &f->nodes[p], v);
        return;
    }
    SF_ASSERT(kind != SF_CUV_LITERAL && kind != SF_CUV_INTERNAL);
    if (kind == SF_CUV_INLINE) {
        sf_cg_value_inline(e, v);
        return;
    }
    /* a remapped context addresses the value by its own strides (not in used_ops: the
     * templates' vector paths load only the kernel-space operands) */
    int op = sf_cg_operand(e->k, v, e->own ? SF_CUOP_OWN : SF_CUOP_ITER, e->own ? 0 : e->space, false);
    if (op < 0) {
        e->overflow = true;
        sf_buf_printf(e->b, "const %s v%d = 0;\n", sf_cg_ctype(dt), (int)v);
        return;
    }
    if (!e->own) e->used_ops |= 1u << op;
    if (keeps_raw(dt)) { /* the raw element too (a store or float evaluation reads it) */
        sf_buf_printf(e->b, "const %s h%d = ", sf_cg_rawtype(dt), (int)v);
        if (e->vec) {
            sf_buf_printf(e->b, "r%d[kk];\n", op);
        } else {
            sf_buf_printf(e->b, "((const %s*)a.ptr[%d])[", sf_cg_rawtype(dt), op);
            e->off(e, op, e->b);
            sf_buf_puts(e->b, "];\n");
        }
        sf_buf_printf(e->b, "const double v%d = sf_cv_%s(h%d);\n", (int)v, sf_cg_sfx(dt), (int)v);
        e->done[v] = 2;
    } else if (e->vec) {
        sf_buf_printf(e->b, "const %s v%d = sf_cv_%s(r%d[kk]);\n", sf_cg_ctype(dt), (int)v,
                      sf_cg_sfx(dt), op);
    } else {
        sf_buf_printf(e->b, "const %s v%d = sf_ld_%s(a.ptr[%d], ", sf_cg_ctype(dt), (int)v,
                      sf_cg_sfx(dt), op);
        e->off(e, op, e->b);
        sf_buf_puts(e->b, ");\n");
    }
}

void sf_cg_store(sf_cg_ectx *e, int32_t v) {
    scanfuse_dtype dt = e->g->f->values[v].dtype;
    int op = sf_cg_operand(e->k, v, SF_CUOP_ITER, e->space, true);
    if (op < 0) {
        e->overflow = true;
        return;
    }
    e->used_ops |= 1u << op;
    if (e->vec && e->done[v] == 2) {
        sf_buf_printf(e->b, "w%d[kk] = h%d;\n", op, (int)v);
    } else if (e->vec) {
        sf_buf_printf(e->b, "w%d[kk] = sf_rw_%s(v%d);\n", op, sf_cg_sfx(dt), (int)v);
    } else if (e->done[v] == 2) {
        sf_buf_printf(e->b, "((%s*)a.ptr[%d])[", sf_cg_rawtype(dt), op);
        e->off(e, op, e->b);
        sf_buf_printf(e->b, "] = h%d;\n", (int)v);
    } else {
        sf_buf_printf(e->b, "sf_st_%s(a.ptr[%d], ", sf_cg_sfx(dt), op);
        e->off(e, op, e->b);
        sf_buf_printf(e->b, ", v%d);\n", (int)v);
    }
}

