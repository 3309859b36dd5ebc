/*
 * program.c — compiling a fusion for a device and running it: the public
 * scanfuse_compile / scanfuse_run entry points.
 *
 * compile: copy the fusion, run the pass pipeline (passes.c), segment it into kernels,
 * choose the backend and let it prepare.  run: check every DLTensor against the
 * declared inputs and outputs (dtype, shape, device, strides, data) before the backend
 * sees it, so backends only ever get valid sf_views; the backend computes every output
 * before it writes any, so a failed run leaves the caller's buffers untouched.
 *
 * Segmentation is segment.c's (sf_segment_program): fused kernels, or one kernel per
 * node with options.fuse = 0.  The segment reports below print what it decided.
 */
#include "sf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void scanfuse_options_init(scanfuse_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->device = SCANFUSE_DEVICE_CPU;
    o->device_id = 0;
    o->threads = 0;
    o->cumsum_mode = SCANFUSE_CUMSUM_NATIVE;
    o->fuse = 1;
    o->dump_ir = NULL;
}

scanfuse_status scanfuse_cumsum_mode_parse(const char *name, scanfuse_cumsum_mode *out) {
    if (!name) return SCANFUSE_ERROR_ARGUMENT;
    scanfuse_cumsum_mode m;
    if (strcmp(name, "native") == 0) m = SCANFUSE_CUMSUM_NATIVE;
    else if (strcmp(name, "matmul") == 0) m = SCANFUSE_CUMSUM_MATMUL;
    else if (strcmp(name, "masked-sum") == 0 || strcmp(name, "masked_sum") == 0)
        m = SCANFUSE_CUMSUM_MASKED_SUM;
    else return SCANFUSE_ERROR_ARGUMENT;
    if (out) *out = m;
    return SCANFUSE_OK;
}

static scanfuse_status prog_fail(sf_program *p, scanfuse_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static scanfuse_status prog_fail(sf_program *p, scanfuse_status st, const char *fmt, ...) {
    p->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->error, sizeof p->error, fmt, ap);
    va_end(ap);
    return st;
}

static const sf_backend *backend_for(scanfuse_device d) {
    switch (d) {
    case SCANFUSE_DEVICE_CPU: return &sf_backend_cpu;
    case SCANFUSE_DEVICE_CUDA: return &sf_backend_cuda;
    case SCANFUSE_DEVICE_REFERENCE: return &sf_backend_reference;
    }
    return NULL;
}

scanfuse_program *scanfuse_compile(const scanfuse_fusion *fusion, const scanfuse_options *options) {
    sf_program *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    scanfuse_options_init(&p->options);
    if (options) p->options = *options;
    if (!fusion) {
        prog_fail(p, SCANFUSE_ERROR_STATE, "compile: no fusion");
        return (scanfuse_program *)p;
    }
    if (fusion->status != SCANFUSE_OK) {
        prog_fail(p, SCANFUSE_ERROR_STATE, "compile: the fusion has an error: %s", fusion->error);
        return (scanfuse_program *)p;
    }
    if (fusion->noutputs == 0) {
        prog_fail(p, SCANFUSE_ERROR_ARGUMENT, "compile: the fusion has no outputs");
        return (scanfuse_program *)p;
    }
    if (p->options.threads < 0) {
        prog_fail(p, SCANFUSE_ERROR_ARGUMENT, "compile: threads %d is negative", p->options.threads);
        return (scanfuse_program *)p;
    }
    if ((int)p->options.cumsum_mode < SCANFUSE_CUMSUM_NATIVE ||
        p->options.cumsum_mode > SCANFUSE_CUMSUM_MASKED_SUM) {
        prog_fail(p, SCANFUSE_ERROR_ARGUMENT, "compile: unknown cumsum mode %d",
                  (int)p->options.cumsum_mode);
        return (scanfuse_program *)p;
    }
    p->backend = backend_for(p->options.device);
    if (!p->backend) {
        prog_fail(p, SCANFUSE_ERROR_ARGUMENT, "compile: unknown device %d", (int)p->options.device);
        return (scanfuse_program *)p;
    }
    p->fusion = sf_fusion_clone(fusion);
    if (!p->fusion) {
        prog_fail(p, SCANFUSE_ERROR_MEMORY, "compile: out of memory");
        return (scanfuse_program *)p;
    }
    char msg[SF_ERR_LEN] = "";
    scanfuse_status st = sf_run_passes(&p->fusion, &p->options, msg, sizeof msg);
    if (st != SCANFUSE_OK) {
        prog_fail(p, st, "%s", msg[0] ? msg : "compile: a pass failed");
        return (scanfuse_program *)p;
    }
    if (sf_segment_program(p) != SCANFUSE_OK) {
        prog_fail(p, SCANFUSE_ERROR_MEMORY, "compile: out of memory");
        return (scanfuse_program *)p;
    }
    for (int i = 0; i < p->fusion->nnodes; i++) {
        msg[0] = '\0';
        st = p->backend->supports(p->fusion, i, msg, sizeof msg);
        if (st != SCANFUSE_OK) {
            prog_fail(p, st, "%s", msg[0] ? msg : "compile: the backend cannot run this op");
            return (scanfuse_program *)p;
        }
    }
    if (p->backend->compile) {
        msg[0] = '\0';
        st = p->backend->compile(p, msg, sizeof msg);
        if (st != SCANFUSE_OK) {
            prog_fail(p, st, "%s", msg[0] ? msg : "compile: backend failed");
            return (scanfuse_program *)p;
        }
    }
    p->compiled = true;
    return (scanfuse_program *)p;
}

void scanfuse_program_free(scanfuse_program *program) {
    sf_program *p = (sf_program *)program;
    if (!p) return;
    if (p->backend && p->backend->release) p->backend->release(p);
    scanfuse_fusion_free(p->fusion);
    sf_segments_free(p->segments, p->nsegments);
    free(p);
}

scanfuse_status scanfuse_program_status(const scanfuse_program *program) {
    const sf_program *p = (const sf_program *)program;
    return p ? p->status : SCANFUSE_ERROR_STATE;
}

const char *scanfuse_program_error(const scanfuse_program *program) {
    const sf_program *p = (const sf_program *)program;
    return p ? p->error : "no program";
}

static const char *device_type_name(int32_t t) {
    switch (t) {
    case SCANFUSE_DL_CPU: return "cpu";
    case SCANFUSE_DL_CUDA: return "cuda";
    case SCANFUSE_DL_CUDA_HOST: return "cuda_host";
    case SCANFUSE_DL_CUDA_MANAGED: return "cuda_managed";
    default: return "an unsupported device";
    }
}

/* Checks one DLTensor against a value of the lowered fusion and fills the view. */
static scanfuse_status check_tensor(sf_program *p, const char *what, const char *name,
                                    const sf_value *v, const scanfuse_dl_tensor *t, bool is_output,
                                    sf_view *view) {
    if (!t) return prog_fail(p, SCANFUSE_ERROR_ARGUMENT, "run: %s '%s' is NULL", what, name);
    scanfuse_dtype dt;
    if (t->dtype.code == SCANFUSE_DL_COMPLEX)
        return prog_fail(p, SCANFUSE_ERROR_DTYPE, "run: %s '%s': complex dtypes are not supported",
                         what, name);
    if (scanfuse_dtype_from_dl(t->dtype, &dt) != SCANFUSE_OK)
        return prog_fail(p, SCANFUSE_ERROR_DTYPE,
                         "run: %s '%s': unsupported DLPack dtype (code %d, bits %d, lanes %d)", what,
                         name, t->dtype.code, t->dtype.bits, t->dtype.lanes);
    bool widened_ok = is_output && p->options.device == SCANFUSE_DEVICE_REFERENCE &&
                      ((sf_dtype_is_float(v->dtype) && dt == SCANFUSE_FLOAT64) ||
                       (sf_dtype_is_intlike(v->dtype) && dt == SCANFUSE_INT64));
    if (dt != v->dtype && !widened_ok)
        return prog_fail(p, SCANFUSE_ERROR_DTYPE, "run: %s '%s' has dtype %s, expected %s", what,
                         name, scanfuse_dtype_name(dt), scanfuse_dtype_name(v->dtype));
    if (t->ndim != v->ndim)
        return prog_fail(p, SCANFUSE_ERROR_SHAPE, "run: %s '%s' has %d dims, expected %d", what,
                         name, (int)t->ndim, v->ndim);
    if (t->ndim > 0 && !t->shape)
        return prog_fail(p, SCANFUSE_ERROR_SHAPE, "run: %s '%s' has no shape array", what, name);
    for (int d = 0; d < v->ndim; d++)
        if (t->shape[d] != v->shape[d])
            return prog_fail(p, SCANFUSE_ERROR_SHAPE,
                             "run: %s '%s' has size %lld in dim %d, expected %lld", what, name,
                             (long long)t->shape[d], d, (long long)v->shape[d]);
    bool on_gpu = p->options.device == SCANFUSE_DEVICE_CUDA;
    int32_t dev = t->device.device_type;
    bool dev_ok = on_gpu ? (dev == SCANFUSE_DL_CUDA || dev == SCANFUSE_DL_CUDA_MANAGED)
                         : (dev == SCANFUSE_DL_CPU || dev == SCANFUSE_DL_CUDA_HOST);
    if (!dev_ok)
        return prog_fail(p, SCANFUSE_ERROR_DEVICE, "run: %s '%s' is on %s but the program runs on %s",
                         what, name, device_type_name(dev), on_gpu ? "cuda" : "the cpu");
    int64_t numel = sf_value_numel(v);
    memset(view, 0, sizeof *view);
    view->dtype = dt;
    view->ndim = v->ndim;
    int64_t contiguous = 1, extent = 0;
    for (int d = v->ndim - 1; d >= 0; d--) {
        int64_t s = t->strides ? t->strides[d] : contiguous;
        if (s < 0)
            return prog_fail(p, SCANFUSE_ERROR_ARGUMENT,
                             "run: %s '%s' has negative stride %lld in dim %d", what, name,
                             (long long)s, d);
        if (is_output && s == 0 && v->shape[d] > 1)
            return prog_fail(p, SCANFUSE_ERROR_ARGUMENT,
                             "run: output '%s' has stride 0 in dim %d of size %lld (elements would "
                             "be written twice)", name, d, (long long)v->shape[d]);
        int64_t span;
        if (v->shape[d] > 0 &&
            (sf_mul_overflow(v->shape[d] - 1, s, &span) || span > INT64_MAX - extent))
            return prog_fail(p, SCANFUSE_ERROR_ARGUMENT, "run: %s '%s': strides overflow", what, name);
        if (v->shape[d] > 0) extent += span;
        view->shape[d] = v->shape[d];
        view->strides[d] = s;
        contiguous *= v->shape[d] > 0 ? v->shape[d] : 1;
    }
    if (numel > 0 && !t->data)
        return prog_fail(p, SCANFUSE_ERROR_ARGUMENT, "run: %s '%s' has NULL data", what, name);
    view->data = t->data ? (char *)t->data + t->byte_offset : NULL;
    return SCANFUSE_OK;
}

scanfuse_status scanfuse_run(scanfuse_program *program, const scanfuse_dl_tensor *inputs,
                             int num_inputs, const scanfuse_dl_tensor *outputs, int num_outputs) {
    sf_program *p = (sf_program *)program;
    if (!p) return SCANFUSE_ERROR_STATE;
    if (!p->fusion || !p->backend || !p->backend->run) {
        if (p->status == SCANFUSE_OK) prog_fail(p, SCANFUSE_ERROR_STATE, "run: program not compiled");
        return SCANFUSE_ERROR_STATE;
    }
    /* A program whose compile failed stays failed; a failed run may be retried. */
    if (!p->compiled) return SCANFUSE_ERROR_STATE;
    p->status = SCANFUSE_OK;
    p->error[0] = '\0';
    const scanfuse_fusion *f = p->fusion;
    if (num_inputs != f->ninputs || (num_inputs > 0 && !inputs))
        return prog_fail(p, SCANFUSE_ERROR_ARGUMENT, "run: %d inputs given, the fusion has %d",
                         num_inputs, f->ninputs);
    if (num_outputs != f->noutputs || (num_outputs > 0 && !outputs))
        return prog_fail(p, SCANFUSE_ERROR_ARGUMENT, "run: %d outputs given, the fusion has %d",
                         num_outputs, f->noutputs);
    sf_view *views = calloc((size_t)(f->ninputs + f->noutputs + 1), sizeof(sf_view));
    if (!views) return prog_fail(p, SCANFUSE_ERROR_MEMORY, "run: out of memory");
    scanfuse_status st = SCANFUSE_OK;
    for (int i = 0; i < f->ninputs && st == SCANFUSE_OK; i++) {
        const sf_value *v = &f->values[f->inputs[i]];
        st = check_tensor(p, "input", v->name ? v->name : "?", v, &inputs[i], false, &views[i]);
    }
    for (int i = 0; i < f->noutputs && st == SCANFUSE_OK; i++) {
        const sf_value *v = &f->values[f->outputs[i]];
        st = check_tensor(p, "output", f->output_names[i], v, &outputs[i], true,
                          &views[f->ninputs + i]);
    }
    if (st == SCANFUSE_OK) {
        char msg[SF_ERR_LEN] = "";
        st = p->backend->run(p, views, views + f->ninputs, msg, sizeof msg);
        if (st != SCANFUSE_OK) prog_fail(p, st, "%s", msg[0] ? msg : "run failed");
    }
    free(views);
    return st;
}

char *scanfuse_program_ir(const scanfuse_program *program) {
    const sf_program *p = (const sf_program *)program;
    if (!p || !p->fusion || !p->compiled) return NULL;
    return scanfuse_print(p->fusion);
}

static int64_t value_bytes(const scanfuse_fusion *f, int32_t id) {
    const sf_value *v = &f->values[id];
    return sf_value_numel(v) * (int64_t)scanfuse_dtype_size(v->dtype);
}

int scanfuse_program_num_kernels(const scanfuse_program *program) {
    const sf_program *p = (const sf_program *)program;
    return (p && p->status == SCANFUSE_OK) ? p->nsegments : -1;
}

int64_t scanfuse_program_floor_bytes(const scanfuse_program *program) {
    const sf_program *p = (const sf_program *)program;
    if (!p || !p->fusion || !p->compiled) return -1;
    int64_t b = 0;
    for (int i = 0; i < p->fusion->ninputs; i++) b += value_bytes(p->fusion, p->fusion->inputs[i]);
    for (int i = 0; i < p->fusion->noutputs; i++) {
        bool dup = false;
        for (int j = 0; j < i; j++) dup |= p->fusion->outputs[j] == p->fusion->outputs[i];
        if (!dup) b += value_bytes(p->fusion, p->fusion->outputs[i]);
    }
    return b;
}

int64_t scanfuse_program_moved_bytes(const scanfuse_program *program) {
    const sf_program *p = (const sf_program *)program;
    if (!p || !p->fusion || !p->compiled) return -1;
    int64_t total = 0;
    for (int s = 0; s < p->nsegments; s++)
        total += p->segments[s].bytes_read + p->segments[s].bytes_written;
    return total;
}

static const char *seg_kind_name(sf_seg_kind k) {
    switch (k) {
    case SF_SEG_OPAQUE: return "single op";
    case SF_SEG_POINTWISE: return "pointwise";
    case SF_SEG_SCAN: return "scan";
    case SF_SEG_REDUCE: return "reduction";
    case SF_SEG_SMALL: return "small, op by op in cache";
    }
    return "?";
}

/* "x, w (1024 bytes)" or "nothing". */
static void put_values(sf_buf *b, const scanfuse_fusion *f, const int32_t *ids, int n,
                       int64_t bytes) {
    char nb[32];
    if (n == 0) {
        sf_buf_puts(b, "nothing");
        return;
    }
    for (int i = 0; i < n; i++)
        sf_buf_printf(b, "%s%s", i ? ", " : "", sf_value_name(f, ids[i], nb, sizeof nb));
    sf_buf_printf(b, " (%lld bytes)", (long long)bytes);
}

char *scanfuse_program_segments(const scanfuse_program *program) {
    const sf_program *p = (const sf_program *)program;
    if (!p || !p->fusion || !p->compiled) return NULL;
    const scanfuse_fusion *f = p->fusion;
    sf_buf b = {0};
    char nb[32];
    sf_buf_printf(&b, "# %d kernel%s on %s\n", p->nsegments, p->nsegments == 1 ? "" : "s",
                  p->backend->name);
    for (int s = 0; s < p->nsegments; s++) {
        const sf_segment *seg = &p->segments[s];
        /* weak scalars are literals, printed inside the calls that use them */
        int nops = 0;
        for (int j = 0; j < seg->nnodes; j++) nops += f->nodes[seg->nodes[j]].op != SF_OP_scalar;
        sf_buf_printf(&b, "kernel %d: %s, %d op%s; reads ", s, seg_kind_name(seg->kind), nops,
                      nops == 1 ? "" : "s");
        put_values(&b, f, seg->inputs, seg->ninputs, seg->bytes_read);
        sf_buf_puts(&b, "; writes ");
        put_values(&b, f, seg->outputs, seg->noutputs, seg->bytes_written);
        sf_buf_puts(&b, "\n");
        for (int j = 0; j < seg->nnodes; j++) {
            const sf_node *n = &f->nodes[seg->nodes[j]];
            if (n->op == SF_OP_scalar && nops > 0) continue;
            sf_buf_puts(&b, "    ");
            for (int k = 0; k < n->nout; k++)
                sf_buf_printf(&b, "%s%s", k ? ", " : "", sf_value_name(f, n->out[k], nb, sizeof nb));
            sf_buf_puts(&b, " = ");
            sf_print_call(f, n, &b);
            sf_buf_puts(&b, "\n");
        }
    }
    sf_buf_printf(&b, "# moved %lld bytes; floor %lld bytes (inputs read once, outputs written once)\n",
                  (long long)scanfuse_program_moved_bytes(program),
                  (long long)scanfuse_program_floor_bytes(program));
    return sf_buf_take(&b);
}

/* ---- strided conversion copy (shared by every host backend) ---- */

static void copy_run(const sf_view *dst, char *dp, int64_t ds, const sf_view *src, const char *sp,
                     int64_t ss, int64_t n) {
    size_t dsz = scanfuse_dtype_size(dst->dtype), ssz = scanfuse_dtype_size(src->dtype);
    if (dst->dtype == src->dtype) {
        if (ds == 1 && ss == 1) {
            memcpy(dp, sp, (size_t)n * dsz);
            return;
        }
        for (int64_t i = 0; i < n; i++) memcpy(dp + i * ds * (int64_t)dsz, sp + i * ss * (int64_t)ssz, dsz);
        return;
    }
    bool ints = sf_dtype_is_intlike(dst->dtype) && sf_dtype_is_intlike(src->dtype);
    bool f2i = sf_dtype_is_intlike(dst->dtype) && !sf_dtype_is_intlike(src->dtype);
    for (int64_t i = 0; i < n; i++) {
        const char *s = sp + i * ss * (int64_t)ssz;
        char *d = dp + i * ds * (int64_t)dsz;
        if (ints) sf_store_i64(d, 0, dst->dtype, sf_load_i64(s, 0, src->dtype));
        else if (f2i) sf_store_i64(d, 0, dst->dtype, sf_f64_to_int(sf_load_f64(s, 0, src->dtype), dst->dtype));
        else if (sf_dtype_is_intlike(src->dtype)) sf_store_i64(d, 0, dst->dtype, sf_load_i64(s, 0, src->dtype));
        else sf_store_f64(d, 0, dst->dtype, sf_load_f64(s, 0, src->dtype));
    }
}

void sf_copy_view(const sf_view *dst, const sf_view *src) {
    SF_ASSERT(dst->ndim == src->ndim);
    int nd = dst->ndim;
    int64_t total = sf_numel(nd, dst->shape);
    if (total == 0) return;
    if (nd == 0) {
        copy_run(dst, dst->data, 1, src, src->data, 1, 1);
        return;
    }
    size_t dsz = scanfuse_dtype_size(dst->dtype), ssz = scanfuse_dtype_size(src->dtype);
    int64_t idx[SF_MAX_DIMS] = {0};
    int64_t inner = dst->shape[nd - 1];
    for (int64_t done = 0; done < total; done += inner) {
        int64_t doff = 0, soff = 0;
        for (int d = 0; d < nd - 1; d++) {
            doff += idx[d] * dst->strides[d];
            soff += idx[d] * src->strides[d];
        }
        copy_run(dst, (char *)dst->data + doff * (int64_t)dsz, dst->strides[nd - 1], src,
                 (const char *)src->data + soff * (int64_t)ssz, src->strides[nd - 1], inner);
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < dst->shape[d]) break;
            idx[d] = 0;
        }
    }
}
