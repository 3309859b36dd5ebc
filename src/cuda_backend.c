/*
 * cuda_backend.c — the CUDA backend's vtable (sf_backend_cuda): compile generates one CUDA
 * C source for the program (cuda_codegen.c, cuda_scan.c), builds it with NVRTC through
 * the caches (cuda_cache.c) and loads it in the run's context; run binds the caller's
 * device tensors, walks the nodes in order launching their kernels on the caller's stream
 * (scanfuse_options.cuda_stream), and copies the outputs that were not computed in place.
 * A small segment's one kernel (cuda_small.c) takes its sub-kernels' arguments packed
 * into one parameter (fill_small).
 *
 * Context: the caller's current context if there is one (memory from PyTorch or CuPy
 * lives there), else the primary context of options.device_id.  A program is bound to
 * the context of its first run; a run in another context loads the module there again.
 *
 * Memory: value buffers (intermediates, one-element `full`s, reshape copies) live in an
 * arena allocated with cuMemAlloc on the first run and kept; scratch (error slots,
 * look-back tile status, reduction partials) is zeroed once at allocation — look-back
 * kernels reset their own counters and advance a device-side epoch, and the error slots
 * are cleared by a memset queued with each run, so a run queues only memsets and kernels
 * (a run of a program without fallible ops can be captured in a CUDA graph).  A program
 * runs one call at a time (like the CPU backend): runs of one program must not overlap,
 * on any stream.
 *
 * Outputs: when no node can fail at run time and no output overlaps an input, a result
 * that is an output is computed straight into the caller's tensor (any strides).
 * Otherwise results go to a staging area, and only after every kernel has finished and
 * the error flag reads clear (integer division by zero: SCANFUSE_ERROR_VALUE, a stream
 * synchronization) are they copied to the outputs; outputs backed by caller memory are
 * staged before any output is written.  Without a fallible op a run does not synchronize:
 * it returns once its kernels are queued.  A failure of the device itself (a launch
 * error) may leave outputs partly written.
 */
#include "cuda_api.h"
#include "cuda_codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cuda_state {
    sf_cuda_plan *pl;
    sf_cuda_image img;
    int64_t *slot;      /* per value: arena offset, or -1 (stage / no memory)     */
    int64_t *stage_off; /* per output: offset in the staging area                 */
    int64_t arena_size, stage_size;
    bool *stage_value;  /* per value: an output result that goes direct or staged */
    int32_t *first_out; /* per value: the first output it is, or -1               */
    /* bound at the first run */
    sf_CUcontext ctx;
    sf_CUmodule mod;
    sf_CUfunction *fn;
    sf_CUdeviceptr arena, scratch, stage;
} cuda_state;

static scanfuse_status cuda_supports(const scanfuse_fusion *f, int node, char *msg, size_t msglen) {
    if (!f || node < 0 || node >= f->nnodes) {
        sf_msg(msg, msglen, "cuda: no such node %d", node);
        return SCANFUSE_ERROR_ARGUMENT;
    }
    return SCANFUSE_OK; /* every op of the table has a kernel (cuda_codegen.c) */
}

static int64_t align256(int64_t v) { return (v + 255) / 256 * 256; }

static void unbind(cuda_state *s) {
    const sf_cuda_driver_api *d = sf_cuda_driver(NULL, 0);
    if (!d || !s->ctx) return;
    bool pushed = d->cuCtxPushCurrent(s->ctx) == 0;
    if (s->arena) d->cuMemFree(s->arena);
    if (s->scratch) d->cuMemFree(s->scratch);
    if (s->stage) d->cuMemFree(s->stage);
    if (s->mod) d->cuModuleUnload(s->mod);
    if (pushed) {
        sf_CUcontext c;
        d->cuCtxPopCurrent(&c);
    }
    s->arena = s->scratch = s->stage = 0;
    s->mod = NULL;
    s->ctx = NULL;
    if (s->fn && s->pl) memset(s->fn, 0, (size_t)s->pl->nkernels * sizeof *s->fn);
}

static void state_free(cuda_state *s) {
    if (!s) return;
    unbind(s);
    sf_cuda_plan_free(s->pl);
    free(s->img.data);
    free(s->slot);
    free(s->stage_off);
    free(s->stage_value);
    free(s->first_out);
    free(s->fn);
    free(s);
}

static void cuda_release(sf_program *p) {
    state_free(p->backend_state);
    p->backend_state = NULL;
}

/* Loads the module in the current context c and resolves every kernel. */
static scanfuse_status bind(cuda_state *s, const sf_cuda_ctx *c, char *msg, size_t msglen) {
    const sf_cuda_driver_api *d = sf_cuda_driver(msg, msglen);
    if (!d) return SCANFUSE_ERROR_DEVICE;
    if (s->ctx == c->ctx && s->mod) return SCANFUSE_OK;
    unbind(s);
    sf_CUresult r = d->cuModuleLoadData(&s->mod, s->img.data);
    if (r != 0) {
        sf_cuda_errmsg(d, r, "cuModuleLoadData", msg, msglen);
        s->mod = NULL;
        return SCANFUSE_ERROR_DEVICE;
    }
    s->ctx = c->ctx;
    const sf_cuda_plan *pl = s->pl;
    for (int i = 0; i < pl->nkernels; i++) {
        const sf_cuda_kernel *k = &pl->k[i];
        if (k->node < 0 && sf_numel(k->ndim, k->shape) == 0) continue; /* no code */
        char name[32];
        snprintf(name, sizeof name, "k%d", i);
        r = d->cuModuleGetFunction(&s->fn[i], s->mod, name);
        if (r != 0) {
            char m[SF_ERR_LEN];
            sf_cuda_errmsg(d, r, "cuModuleGetFunction", m, sizeof m);
            sf_msg(msg, msglen, "%s (%s)", m, name);
            return SCANFUSE_ERROR_DEVICE;
        }
        /* more than 48 KB of dynamic shared memory must be allowed per function */
        if (k->dyn_smem > 0 &&
            (r = d->cuFuncSetAttribute(s->fn[i], SF_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)k->dyn_smem)) != 0) {
            char m[SF_ERR_LEN];
            sf_cuda_errmsg(d, r, "cuFuncSetAttribute", m, sizeof m);
            sf_msg(msg, msglen, "%s (%s: %u bytes of dynamic shared memory)", m, name, k->dyn_smem);
            return SCANFUSE_ERROR_DEVICE;
        }
    }
    return SCANFUSE_OK;
}

/* Allocates the arena and the (zeroed) scratch area in the bound context. */
static scanfuse_status ensure_memory(cuda_state *s, bool need_stage, char *msg, size_t msglen) {
    const sf_cuda_driver_api *d = sf_cuda_driver(msg, msglen);
    if (!d) return SCANFUSE_ERROR_DEVICE;
    sf_CUresult r;
    if (!s->arena && s->arena_size > 0) {
        r = d->cuMemAlloc(&s->arena, (size_t)s->arena_size);
        if (r != 0) {
            s->arena = 0;
            sf_cuda_errmsg(d, r, "cuMemAlloc (intermediate values)", msg, msglen);
            return SCANFUSE_ERROR_MEMORY;
        }
    }
    if (!s->scratch) {
        r = d->cuMemAlloc(&s->scratch, (size_t)s->pl->scratch_bytes);
        if (r == 0) r = d->cuMemsetD8(s->scratch, 0, (size_t)s->pl->scratch_bytes);
        /* the memset may still be running when this returns, on the legacy stream, which
         * a caller's non-blocking stream does not wait for: the first launch would see
         * stale look-back flags and tile counters (a wrong first result, once) */
        if (r == 0) r = d->cuCtxSynchronize();
        if (r != 0) {
            if (s->scratch) d->cuMemFree(s->scratch);
            s->scratch = 0;
            sf_cuda_errmsg(d, r, "cuMemAlloc (scratch)", msg, msglen);
            return SCANFUSE_ERROR_MEMORY;
        }
    }
    if (need_stage && !s->stage && s->stage_size > 0) {
        r = d->cuMemAlloc(&s->stage, (size_t)s->stage_size);
        if (r != 0) {
            s->stage = 0;
            sf_cuda_errmsg(d, r, "cuMemAlloc (output staging)", msg, msglen);
            return SCANFUSE_ERROR_MEMORY;
        }
    }
    return SCANFUSE_OK;
}

static scanfuse_status cuda_compile(sf_program *p, char *msg, size_t msglen) {
    sf_cuda_ctx c;
    scanfuse_status st = sf_cuda_ctx_enter(p->options.device_id, &c, msg, msglen);
    if (st != SCANFUSE_OK) {
        char m[SF_ERR_LEN];
        sf_msg(m, sizeof m, "%s", msg);
        sf_msg(msg, msglen, "compile: the CUDA device is not available: %s", m);
        return SCANFUSE_ERROR_DEVICE;
    }
    sf_cuda_devinfo info;
    st = sf_cuda_device_info(c.dev, &info, msg, msglen);
    cuda_state *s = NULL;
    if (st != SCANFUSE_OK) goto done;
    s = sf_calloc(1, sizeof *s);
    if (!s) goto oom;
    st = sf_cuda_plan_build(p, info.arch, info.sms, &s->pl, msg, msglen);
    if (st != SCANFUSE_OK) goto done;
    st = sf_cuda_build(s->pl->source, info.arch, &s->img, msg, msglen);
    if (st != SCANFUSE_OK) goto done;
    const scanfuse_fusion *f = p->fusion;
    size_t nv = (size_t)(f->nvalues > 0 ? f->nvalues : 1);
    s->slot = sf_malloc(nv * sizeof *s->slot);
    s->stage_value = sf_calloc(nv, sizeof *s->stage_value);
    s->first_out = sf_malloc(nv * sizeof *s->first_out);
    s->stage_off = sf_calloc((size_t)(f->noutputs + 1), sizeof *s->stage_off);
    s->fn = sf_calloc((size_t)(s->pl->nkernels + 1), sizeof *s->fn);
    if (!s->slot || !s->stage_value || !s->first_out || !s->stage_off || !s->fn) goto oom;
    for (int v = 0; v < f->nvalues; v++) {
        s->slot[v] = -1;
        s->first_out[v] = -1;
    }
    for (int o = f->noutputs - 1; o >= 0; o--) s->first_out[f->outputs[o]] = o;
    /* Results that are outputs (written whole by their kernel) go direct or to staging;
     * every other value with memory of its own gets an arena slot. */
    int64_t off = 0;
    for (int v = 0; v < f->nvalues; v++) {
        int kind = s->pl->vkind[v];
        const sf_value *fv = &f->values[v];
        int p_ = fv->producer;
        bool reshape = p_ >= 0 && f->nodes[p_].op == SF_OP_reshape;
        if (kind != SF_CUV_BUFFER && kind != SF_CUV_FULL && !reshape) continue;
        if (kind == SF_CUV_BUFFER && s->pl->direct_ok[v] && s->first_out[v] >= 0) {
            s->stage_value[v] = true;
            continue;
        }
        int64_t bytes = (kind == SF_CUV_FULL ? 1 : sf_value_numel(fv)) *
                        (int64_t)scanfuse_dtype_size(fv->dtype);
        s->slot[v] = off;
        off += align256(bytes);
    }
    s->arena_size = off;
    off = 0;
    for (int o = 0; o < f->noutputs; o++) {
        const sf_value *fv = &f->values[f->outputs[o]];
        s->stage_off[o] = off;
        off += align256(sf_value_numel(fv) * (int64_t)scanfuse_dtype_size(fv->dtype));
    }
    s->stage_size = off;
    st = bind(s, &c, msg, msglen);
    if (st != SCANFUSE_OK) goto done;
    p->backend_state = s;
    s = NULL;
    goto done;
oom:
    sf_msg(msg, msglen, "cuda: out of memory");
    st = SCANFUSE_ERROR_MEMORY;
done:
    state_free(s);
    sf_cuda_ctx_leave(&c);
    return st;
}

/* ------------------------------------------------------------------------------ */
/* Runs                                                                            */
/* ------------------------------------------------------------------------------ */

typedef struct cuda_val {
    sf_view v;
    bool live;
    bool caller; /* backed by an input of the caller */
} cuda_val;

typedef struct cuda_run {
    sf_program *p;
    cuda_state *s;
    const sf_cuda_driver_api *d;
    sf_CUstream stream;
    cuda_val *vals;
    const sf_view *outputs;
    bool staged;       /* results of outputs go to staging, then copied */
    bool *written;     /* per output: holds its value */
    char *msg;
    size_t msglen;
    int launches;      /* kernels launched so far in this run */
} cuda_run;

static bool view_contiguous(const sf_view *v) {
    int64_t expect = 1;
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] == 0) return true;
        if (v->shape[d] == 1) continue;
        if (v->strides[d] != expect) return false;
        expect *= v->shape[d];
    }
    return true;
}

static bool view_range(const sf_view *v, uintptr_t *lo, uintptr_t *hi) {
    int64_t last = 0;
    for (int d = 0; d < v->ndim; d++) {
        if (v->shape[d] == 0) return false;
        last += (v->shape[d] - 1) * v->strides[d];
    }
    *lo = (uintptr_t)v->data;
    *hi = *lo + (uintptr_t)((last + 1) * (int64_t)scanfuse_dtype_size(v->dtype));
    return true;
}

static bool views_overlap(const sf_view *a, const sf_view *b) {
    uintptr_t alo, ahi, blo, bhi;
    if (!view_range(a, &alo, &ahi) || !view_range(b, &blo, &bhi)) return false;
    return alo < bhi && blo < ahi;
}

/* Strides of view v broadcast to an iteration shape. */
static void iter_strides(const sf_view *v, int nd, int64_t *st) {
    int lead = nd - v->ndim;
    for (int d = 0; d < nd; d++) {
        int j = d - lead;
        st[d] = (j < 0 || v->shape[j] == 1) ? 0 : v->strides[j];
    }
}

static bool iter_contiguous(const int64_t *st, int nd, const int64_t *shape) {
    int64_t expect = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (shape[d] == 1) continue;
        if (st[d] != expect) return false;
        expect *= shape[d];
    }
    return true;
}

/* Matmul operand strides over the output's dims (batch dims broadcast, then m and n),
 * and the stride along the contraction. */
static void mm_strides(const sf_view *v, int nd, bool is_a, int other_ndim, int64_t *st,
                       int64_t *kstride) {
    for (int d = 0; d < nd; d++) st[d] = 0;
    int vn = v->ndim;
    int a_nd = is_a ? vn : other_ndim, b_nd = is_a ? other_ndim : vn;
    int out_m = a_nd >= 2 ? 1 : 0, out_n = b_nd >= 2 ? 1 : 0;
    int nbatch = nd - out_m - out_n;
    if (is_a) {
        *kstride = v->strides[vn - 1];
        if (vn >= 2) st[nbatch] = v->shape[vn - 2] == 1 ? 0 : v->strides[vn - 2];
    } else {
        *kstride = vn == 1 ? v->strides[0] : v->strides[vn - 2];
        if (vn >= 2) st[nd - 1] = v->shape[vn - 1] == 1 ? 0 : v->strides[vn - 1];
    }
    int vb = vn > 2 ? vn - 2 : 0; /* the operand's batch dims, right-aligned */
    for (int j = 0; j < vb; j++) {
        int d = nbatch - vb + j;
        if (d >= 0) st[d] = v->shape[j] == 1 ? 0 : v->strides[j];
    }
}

/* The arguments of kernel k at this run. */
static void fill_args(cuda_run *r, const sf_cuda_kernel *k, const sf_view *copy_dst, bool report,
                      sf_cuda_args *out) {
    cuda_state *s = r->s;
    sf_cuda_args args;
    memset(&args, 0, sizeof args);
    const scanfuse_fusion *f = r->p->fusion;
    for (int op = 0; op < k->nops; op++) {
        const sf_view *v = k->ops[op].out_index >= 0 ? copy_dst : &r->vals[k->ops[op].value].v;
        args.ptr[op] = (uint64_t)(uintptr_t)v->data;
        switch (k->ops[op].mode) {
        case SF_CUOP_ITER: {
            int nd = k->ops[op].space ? k->ndim2 : k->ndim;
            const int64_t *shape = k->ops[op].space ? k->shape2 : k->shape;
            iter_strides(v, nd, args.st[op]);
            if (iter_contiguous(args.st[op], nd, shape)) args.flags |= (int64_t)1 << op;
            break;
        }
        case SF_CUOP_OWN:
            for (int d = 0; d < v->ndim; d++) args.st[op][d] = v->strides[d];
            if (view_contiguous(v)) args.flags |= (int64_t)1 << op;
            break;
        case SF_CUOP_MM_A:
        case SF_CUOP_MM_B: {
            const sf_node *n = &f->nodes[k->node];
            bool is_a = k->ops[op].mode == SF_CUOP_MM_A;
            int other = f->values[n->in[is_a ? 1 : 0]].ndim;
            mm_strides(v, k->ndim, is_a, other, args.st[op], &args.aux[is_a ? 0 : 1]);
            break;
        }
        }
    }
    args.aux[2] = k->aux[2];
    args.aux[7] = report ? 1 : 0;
    args.err = (uint64_t)s->scratch + (uint64_t)(k->err_slot >= 0 ? 16 * k->err_slot : 0);
    args.scratch = (uint64_t)s->scratch + (uint64_t)k->scratch_off;
    *out = args;
}

/* Tuning lb_trace=1 (a measurement): after a look-back row kernel, waits for it and
 * writes its tile records (sf_trace_rec, 32 bytes a tile) to the file named by
 * $SCANFUSE_CUDA_TRACE, replacing the previous launch's (bench/lb_trace.py reads it). */
static scanfuse_status dump_trace(cuda_run *r, const sf_cuda_kernel *k, int ki) {
    const char *path = getenv("SCANFUSE_CUDA_TRACE");
    if (!path || !*path) return SCANFUSE_OK;
    void *buf = sf_malloc((size_t)k->trace_bytes);
    if (!buf) {
        sf_msg(r->msg, r->msglen, "cuda: out of memory (trace of kernel k%d)", ki);
        return SCANFUSE_ERROR_MEMORY;
    }
    sf_CUdeviceptr at = r->s->scratch + (uint64_t)(k->scratch_off + k->scratch_bytes - k->trace_bytes);
    sf_CUresult z = r->d->cuMemcpyDtoHAsync(buf, at, (size_t)k->trace_bytes, r->stream);
    if (z == 0) z = r->d->cuStreamSynchronize(r->stream);
    if (z != 0) {
        free(buf);
        sf_cuda_errmsg(r->d, z, "reading the trace", r->msg, r->msglen);
        return SCANFUSE_ERROR_DEVICE;
    }
    FILE *fp = fopen(path, "wb");
    bool ok = fp && fwrite(buf, 1, (size_t)k->trace_bytes, fp) == (size_t)k->trace_bytes;
    if (fp && fclose(fp) != 0) ok = false;
    free(buf);
    if (!ok) {
        sf_msg(r->msg, r->msglen, "cuda: cannot write the trace to '%s'", path);
        return SCANFUSE_ERROR_IO;
    }
    return SCANFUSE_OK;
}

/* A small segment's kernel (cuda_small.c): its parameter packs the arguments of its
 * sub-kernels, in the words sf_cuda_small_words counts. */
static void fill_small(cuda_run *r, const sf_cuda_kernel *k, uint64_t *w) {
    const scanfuse_fusion *f = r->p->fusion;
    int o = 0;
    for (int q = 0; q < k->nsub; q++) {
        const sf_cuda_kernel *sk = &r->s->pl->k[k->sub0 + q];
        sf_cuda_args args;
        fill_args(r, sk, NULL, false, &args);
        for (int op = 0; op < sk->nops; op++) {
            w[o++] = args.ptr[op];
            int nd = sf_cuda_small_nd(f, sk, op);
            for (int d = 0; d < nd; d++) w[o++] = (uint64_t)args.st[op][d];
        }
        w[o++] = (uint64_t)args.flags;
        for (int j = 0; j < 3; j++) w[o++] = (uint64_t)args.aux[j];
        w[o++] = args.err;
        w[o++] = args.scratch;
    }
}

static scanfuse_status launch(cuda_run *r, int ki, const sf_view *copy_dst, bool report) {
    cuda_state *s = r->s;
    sf_cuda_kernel *k = &s->pl->k[ki];
    sf_CUfunction fn = s->fn[ki];
    if (!fn) return SCANFUSE_OK; /* nothing to do (empty) */
    sf_cuda_args args;
    uint64_t words[512]; /* a SMALL kernel's parameter (at most 4 KB, cuda_small.c) */
    void *params[1] = {&args};
    if (k->kind == SF_CUK_SMALL) {
        if (k->pre1 > 0) { /* its leading grid phase (cuda_small.c) */
            scanfuse_status st = launch(r, k->pre1 - 1, NULL, false);
            if (st != SCANFUSE_OK) return st;
        }
        fill_small(r, k, words);
        params[0] = words;
    } else {
        fill_args(r, k, copy_dst, report, &args);
    }
    sf_CUresult res;
    /* programmatic dependent launch: from the run's second kernel on, and for the first
     * too where the plan allows it (pdl_first, cuda_codegen.c) */
    bool pdl = s->pl->pdl && r->d->cuLaunchKernelEx && (r->launches++ > 0 || s->pl->pdl_first);
    if (pdl) {
        sf_CUlaunchAttribute attr;
        memset(&attr, 0, sizeof attr);
        attr.id = SF_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmatic_stream_serialization_allowed = 1;
        sf_CUlaunchConfig cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.grid_x = k->grid;
        cfg.grid_y = cfg.grid_z = 1;
        cfg.block_x = k->block;
        cfg.block_y = cfg.block_z = 1;
        cfg.shared_bytes = k->dyn_smem;
        cfg.stream = r->stream;
        cfg.attrs = &attr;
        cfg.num_attrs = 1;
        res = r->d->cuLaunchKernelEx(&cfg, fn, params, NULL);
    } else {
        res = r->d->cuLaunchKernel(fn, k->grid, 1, 1, k->block, 1, 1, k->dyn_smem, r->stream, params, NULL);
    }
    if (res != 0) {
        char m[SF_ERR_LEN];
        sf_cuda_errmsg(r->d, res, "cuLaunchKernel", m, sizeof m);
        sf_msg(r->msg, r->msglen, "%s (kernel k%d)", m, ki);
        return SCANFUSE_ERROR_DEVICE;
    }
    if (k->trace_bytes > 0) return dump_trace(r, k, ki);
    return SCANFUSE_OK;
}

/* Gives value id a contiguous buffer: the caller's output, staging, or its arena slot. */
static void val_buffer(cuda_run *r, int32_t id) {
    cuda_state *s = r->s;
    const sf_value *fv = &r->p->fusion->values[id];
    cuda_val *v = &r->vals[id];
    v->live = true;
    v->caller = false;
    int32_t o = s->first_out[id];
    if (s->stage_value[id]) {
        if (!r->staged) {
            v->v = r->outputs[o];
            r->written[o] = true;
            return;
        }
        sf_view_contiguous(&v->v, (char *)(uintptr_t)s->stage + s->stage_off[o], fv->dtype,
                           fv->ndim, fv->shape);
        return;
    }
    SF_ASSERT(s->slot[id] >= 0);
    sf_view_contiguous(&v->v, (char *)(uintptr_t)s->arena + s->slot[id], fv->dtype, fv->ndim,
                       fv->shape);
}

static scanfuse_status launch_node_kernels(cuda_run *r, int i) {
    const sf_cuda_plan *pl = r->s->pl;
    for (int q = 0; q < pl->node_nk[i]; q++) {
        scanfuse_status st = launch(r, pl->node_k0[i] + q, NULL, false);
        if (st != SCANFUSE_OK) return st;
    }
    return SCANFUSE_OK;
}

/* A setup node: views of other values, or a constant materialized when it is read from
 * memory. */
static scanfuse_status exec_setup(cuda_run *r, int i) {
    const scanfuse_fusion *f = r->p->fusion;
    const sf_node *n = &f->nodes[i];
    const sf_cuda_plan *pl = r->s->pl;
    const sf_value *res = &f->values[n->out[0]];
    int kind = pl->vkind[n->out[0]];
    const cuda_val *in0 = n->nin > 0 ? &r->vals[n->in[0]] : NULL;
    cuda_val *out0 = &r->vals[n->out[0]];
    /* a view of a value computed inside a fused kernel (a gather the emitter computes
     * inline, and the kernel remaps the view): no memory */
    if (kind == SF_CUV_INTERNAL) return SCANFUSE_OK;
    if (in0) SF_ASSERT(in0->live);
    switch (n->op) {
    case SF_OP_expand: {
        out0->v = in0->v;
        out0->v.ndim = res->ndim;
        int lead = res->ndim - in0->v.ndim;
        for (int d = 0; d < res->ndim; d++) {
            int j = d - lead;
            out0->v.shape[d] = res->shape[d];
            out0->v.strides[d] = (j < 0 || in0->v.shape[j] != res->shape[d]) ? 0 : in0->v.strides[j];
        }
        break;
    }
    case SF_OP_permute:
        out0->v = in0->v;
        for (int d = 0; d < in0->v.ndim; d++) {
            int64_t sd = n->a.list[d];
            out0->v.shape[d] = in0->v.shape[sd];
            out0->v.strides[d] = in0->v.strides[sd];
        }
        break;
    case SF_OP_slice: {
        int d = (int)n->a.dim;
        out0->v = in0->v;
        out0->v.shape[d] = res->shape[d];
        out0->v.strides[d] = in0->v.strides[d] * n->a.step.i;
        if (sf_value_numel(res) > 0)
            out0->v.data = (char *)in0->v.data + n->a.start.i * in0->v.strides[d] *
                                                     (int64_t)scanfuse_dtype_size(in0->v.dtype);
        break;
    }
    case SF_OP_reshape:
        if (view_contiguous(&in0->v)) {
            sf_view_contiguous(&out0->v, in0->v.data, in0->v.dtype, res->ndim, res->shape);
            break;
        }
        sf_view_contiguous(&out0->v, (char *)(uintptr_t)r->s->arena + r->s->slot[n->out[0]],
                           res->dtype, res->ndim, res->shape);
        out0->live = true;
        out0->caller = false;
        return launch_node_kernels(r, i);
    default: /* constants */
        if (kind == SF_CUV_LITERAL || kind == SF_CUV_INLINE) return SCANFUSE_OK;
        sf_view_contiguous(&out0->v, (char *)(uintptr_t)r->s->arena + r->s->slot[n->out[0]],
                           res->dtype, res->ndim, res->shape);
        if (kind == SF_CUV_FULL)
            for (int d = 0; d < res->ndim; d++) out0->v.strides[d] = 0;
        out0->live = true;
        out0->caller = false;
        return launch_node_kernels(r, i);
    }
    out0->live = true;
    out0->caller = in0->caller;
    return SCANFUSE_OK;
}

/* Can a small segment's one kernel run: is every value of the segment that one of its
 * reshapes reads (down a chain of reshapes) contiguous?  Gives those values their
 * buffers now (val_buffer is idempotent). */
static bool small_views_ok(cuda_run *r, const sf_segment *seg) {
    const scanfuse_fusion *f = r->p->fusion;
    for (int j = 0; j < seg->nnodes; j++) {
        const sf_node *n = &f->nodes[seg->nodes[j]];
        if (n->op != SF_OP_reshape) continue;
        int32_t u = n->in[0];
        int q;
        while ((q = f->values[u].producer) >= 0 && f->nodes[q].op == SF_OP_reshape) u = f->nodes[q].in[0];
        if (q < 0 || sf_node_is_setup(f->nodes[q].op) || r->s->pl->vkind[u] != SF_CUV_BUFFER) continue;
        bool here = false;
        for (int i = 0; i < seg->nnodes && !here; i++) here = seg->nodes[i] == q;
        if (!here) continue;
        val_buffer(r, u);
        if (!view_contiguous(&r->vals[u].v)) return false;
    }
    return true;
}

/* After a failed run: the message of the first kernel (in launch order) whose error
 * slot is set.  slots holds every slot's 16 bytes. */
static scanfuse_status run_error(cuda_run *r, const unsigned char *slots) {
    const cuda_state *s = r->s;
    const scanfuse_fusion *f = r->p->fusion;
    for (int ki = 0; ki < s->pl->nkernels; ki++) {
        const sf_cuda_kernel *k = &s->pl->k[ki];
        if (k->err_slot < 0) continue;
        uint64_t key;
        memcpy(&key, slots + 16 * k->err_slot, 8);
        if (k->kind != SF_CUK_CHECK) {
            uint32_t flag;
            memcpy(&flag, slots + 16 * k->err_slot, 4);
            if (!flag) continue;
            sf_msg(r->msg, r->msglen, "%s: integer division by zero", k->err_what);
            return SCANFUSE_ERROR_VALUE;
        }
        if (!key) continue;
        /* report mode: the element at the first bad position writes its value */
        long long value = 0;
        scanfuse_status st = launch(r, ki, NULL, true);
        if (st != SCANFUSE_OK) return st;
        sf_CUresult z = r->d->cuMemcpyDtoHAsync(&value, r->s->scratch + 16 * (uint64_t)k->err_slot + 8,
                                                8, r->stream);
        if (z == 0) z = r->d->cuStreamSynchronize(r->stream);
        if (z != 0) {
            sf_cuda_errmsg(r->d, z, "reading an index error", r->msg, r->msglen);
            return SCANFUSE_ERROR_DEVICE;
        }
        sf_msg(r->msg, r->msglen, "%s: %s %lld is out of range (%s)",
               sf_op_table[f->nodes[k->node].op].name, k->err_what, value, k->err_range);
        return SCANFUSE_ERROR_VALUE;
    }
    sf_msg(r->msg, r->msglen, "cuda: a run-time error was flagged");
    return SCANFUSE_ERROR_VALUE;
}

static scanfuse_status cuda_run_program(sf_program *p, const sf_view *inputs,
                                        const sf_view *outputs, char *msg, size_t msglen) {
    cuda_state *s = p->backend_state;
    const scanfuse_fusion *f = p->fusion;
    if (!s || !s->pl) {
        sf_msg(msg, msglen, "cuda: program not compiled");
        return SCANFUSE_ERROR_STATE;
    }
    const sf_cuda_plan *pl = s->pl;
    sf_cuda_ctx c;
    scanfuse_status st = sf_cuda_ctx_enter(p->options.device_id, &c, msg, msglen);
    if (st != SCANFUSE_OK) return st;
    cuda_run r;
    memset(&r, 0, sizeof r);
    r.p = p;
    r.s = s;
    r.d = sf_cuda_driver(NULL, 0);
    r.stream = (sf_CUstream)p->options.cuda_stream;
    r.outputs = outputs;
    r.msg = msg;
    r.msglen = msglen;
    int no = f->noutputs;
    /* the device loads whole elements: tensors must be aligned to their element size */
    for (int i = 0; i < f->ninputs + no; i++) {
        const sf_view *v = i < f->ninputs ? &inputs[i] : &outputs[i - f->ninputs];
        size_t es = scanfuse_dtype_size(v->dtype);
        if (sf_numel(v->ndim, v->shape) > 0 && (uintptr_t)v->data % es != 0) {
            const char *name = i < f->ninputs ? f->values[f->inputs[i]].name : f->output_names[i - f->ninputs];
            sf_msg(msg, msglen, "run: %s '%s' is not aligned to its %zu-byte elements (the CUDA device needs aligned tensors)",
                   i < f->ninputs ? "input" : "output", name ? name : "?", es);
            sf_cuda_ctx_leave(&c);
            return SCANFUSE_ERROR_ARGUMENT;
        }
    }
    bool overlap = false;
    for (int o = 0; o < no && !overlap; o++)
        for (int i = 0; i < f->ninputs && !overlap; i++)
            overlap = views_overlap(&outputs[o], &inputs[i]);
    r.staged = overlap || pl->may_fail;
    unsigned char *slots = NULL;
    bool *setup_done = sf_calloc((size_t)(f->nnodes > 0 ? f->nnodes : 1), 1);
    r.vals = sf_calloc((size_t)(f->nvalues > 0 ? f->nvalues : 1), sizeof *r.vals);
    r.written = sf_calloc((size_t)(no > 0 ? no : 1), sizeof *r.written);
    if (!r.vals || !r.written || !setup_done) {
        sf_msg(msg, msglen, "cuda: out of memory");
        st = SCANFUSE_ERROR_MEMORY;
        goto done;
    }
    if ((st = bind(s, &c, msg, msglen)) != SCANFUSE_OK) goto done;
    if ((st = ensure_memory(s, r.staged, msg, msglen)) != SCANFUSE_OK) goto done;
    if (pl->nerr > 0) {
        sf_CUresult z = r.d->cuMemsetD32Async(s->scratch, 0, (size_t)pl->nerr * 4, r.stream);
        if (z != 0) {
            sf_cuda_errmsg(r.d, z, "cuMemsetD32Async", msg, msglen);
            st = SCANFUSE_ERROR_DEVICE;
            goto done;
        }
    }
    for (int i = 0; i < f->ninputs; i++) {
        cuda_val *v = &r.vals[f->inputs[i]];
        v->v = inputs[i];
        v->live = true;
        v->caller = true;
    }
    for (int sg = 0; sg < p->nsegments; sg++) {
        const sf_segment *seg = &p->segments[sg];
        bool fused = pl->seg_fused[sg];
        /* a small segment's SMALL kernels (cuda_small.c; one, or one a part) read the
         * segment's reshapes of its own values as views: when one is not (a
         * non-contiguous output of the caller), the segment runs node by node, on the
         * kernels they were built from */
        bool small = false;
        for (int q = 0; q < pl->seg_nk[sg] && fused; q++) small |= pl->k[pl->seg_k0[sg] + q].kind == SF_CUK_SMALL;
        if (small && !small_views_ok(&r, seg)) fused = false;
        /* fused: setup nodes, then the kernel; else every node in node order */
        for (int j = 0; j < seg->nnodes; j++) {
            int ni = seg->nodes[j];
            const sf_node *n = &f->nodes[ni];
            if (sf_node_is_setup(n->op)) {
                if (setup_done[ni]) continue;
                setup_done[ni] = true;
                if ((st = exec_setup(&r, ni)) != SCANFUSE_OK) goto done;
                continue;
            }
            for (int q = 0; q < n->nout; q++)
                if (pl->vkind[n->out[q]] == SF_CUV_BUFFER) val_buffer(&r, n->out[q]);
            if (fused) continue;
            /* a node's kernels may write later nodes' values too (a run of element-wise
             * nodes, sf_cg_emit_run, launched at its first node): bind those first */
            for (int q = 0; q < pl->node_nk[ni]; q++) {
                const sf_cuda_kernel *k = &pl->k[pl->node_k0[ni] + q];
                for (int op = 0; op < k->nops; op++)
                    if (k->ops[op].out && pl->vkind[k->ops[op].value] == SF_CUV_BUFFER) val_buffer(&r, k->ops[op].value);
            }
            for (int q = 0; q < pl->node_nk[ni]; q++)
                if ((st = launch(&r, pl->node_k0[ni] + q, NULL, false)) != SCANFUSE_OK) goto done;
        }
        if (!fused) continue;
        for (int q = 0; q < pl->seg_nk[sg]; q++)
            if (!pl->k[pl->seg_k0[sg] + q].small_sub &&
                (st = launch(&r, pl->seg_k0[sg] + q, NULL, false)) != SCANFUSE_OK)
                goto done;
    }
    if (pl->may_fail) {
        size_t nb = (size_t)pl->nerr * 16;
        slots = sf_malloc(nb);
        if (!slots) {
            sf_msg(msg, msglen, "cuda: out of memory");
            st = SCANFUSE_ERROR_MEMORY;
            goto done;
        }
        sf_CUresult z = r.d->cuMemcpyDtoHAsync(slots, s->scratch, nb, r.stream);
        if (z == 0) z = r.d->cuStreamSynchronize(r.stream);
        if (z != 0) {
            sf_cuda_errmsg(r.d, z, "reading the error flags", msg, msglen);
            st = SCANFUSE_ERROR_DEVICE;
            goto done;
        }
        bool any = false;
        for (size_t q = 0; q < nb; q++) any |= slots[q] != 0;
        if (any) {
            st = run_error(&r, slots);
            goto done;
        }
    }
    /* Outputs backed by caller memory are staged before any output is written. */
    if (overlap) {
        for (int o = 0; o < no; o++) {
            cuda_val *v = &r.vals[f->outputs[o]];
            if (!v->caller || r.written[o]) continue;
            const sf_value *fv = &f->values[f->outputs[o]];
            sf_view dst;
            sf_view_contiguous(&dst, (char *)(uintptr_t)s->stage + s->stage_off[o], fv->dtype,
                               fv->ndim, fv->shape);
            if ((st = launch(&r, pl->out_k0 + o, &dst, false)) != SCANFUSE_OK) goto done;
            v->v = dst;
            v->caller = false;
        }
    }
    for (int o = 0; o < no; o++) {
        if (r.written[o]) continue;
        const cuda_val *v = &r.vals[f->outputs[o]];
        SF_ASSERT(v->live);
        if ((st = launch(&r, pl->out_k0 + o, &outputs[o], false)) != SCANFUSE_OK) goto done;
    }
done:
    free(slots);
    free(setup_done);
    free(r.vals);
    free(r.written);
    sf_cuda_ctx_leave(&c);
    return st;
}

const sf_backend sf_backend_cuda = {"cuda", cuda_supports, cuda_compile, cuda_run_program,
                                    cuda_release};

/* ------------------------------------------------------------------------------ */
/* Offline generation (no GPU needed): tests compile every template through NVRTC  */
/* ------------------------------------------------------------------------------ */

scanfuse_status sf_cuda_compile_offline(const sf_program *p, int arch, char **source, char *msg,
                                        size_t msglen) {
    if (source) *source = NULL;
    sf_cuda_plan *pl = NULL;
    scanfuse_status st = sf_cuda_plan_build(p, arch, 132, &pl, msg, msglen);
    if (st != SCANFUSE_OK) return st;
    sf_cuda_image img;
    st = sf_cuda_build(pl->source, arch, &img, msg, msglen);
    if (st == SCANFUSE_OK) {
        free(img.data);
        if (source) {
            *source = pl->source;
            pl->source = NULL;
        }
    }
    sf_cuda_plan_free(pl);
    return st;
}
