/*
 * test_segment.c — the segmenter and fused CPU execution.
 *
 *  1. Golden segmentations: every tests/golden/segments/NAME.sf and every
 *     examples/NAME.sf is compiled (CPU, fused) and scanfuse_program_segments() must
 *     equal tests/golden/segments/NAME.expected (example_NAME.expected for examples)
 *     byte for byte: the kernel count, which ops share a kernel, what each reads and
 *     writes.  Set SF_UPDATE_GOLDEN=1 to rewrite the expected files after a deliberate
 *     change (then review the diff).
 *  2. Structural checks of the must-not-fuse cases: a value read by two kernels is
 *     computed by one kernel and written once; a reduction feeding a pointwise op of a
 *     broadcast shape, and two scans, end up in different kernels; the chain of
 *     issue 4 is one kernel that moves exactly the floor's bytes; the MoE examples meet
 *     the kernel and byte targets of issue 4.
 *  3. Fused runs give the same bytes as op-by-op runs (options.fuse = 0), for 1, 2 and
 *     3 threads: on every golden program, every example, on single element-wise ops
 *     large enough to run tiled (sf_cpu_tile_pointwise_min), on random programs of
 *     pointwise ops, casts, scans and reductions over several shapes and dtypes, and
 *     on random MoE-like programs (topk, histogram, counting sorts, gathers, rows
 *     written on demand, out-of-range indices: the same error status), each set once
 *     with tiles sized for the cache and once with tiny tiles (fixed seeds; a failure
 *     prints the program).
 *  4. The row combine (cpu_rows.c: gathered rows times a weight per row, summed over
 *     the slots, maybe cast to bfloat16) gives the op-by-op bytes on values chosen to
 *     reach each of its paths (sums near rounding boundaries, sums not exact in
 *     double, subnormals, zeros, infinities and NaN, bad indices, every slot of a token
 *     reading its own row), with tiny and normal tiles, with streaming stores forced on,
 *     and with the baseline and AVX2 kernels forced (sf_cpu_rows_isa); and the kernel
 *     sf_cpu_row_combine itself, every variant, against the generic arithmetic written
 *     out, with its row copies at every alignment and guard bytes around them.
 *  5. topk of a few elements (cpu_topk.c, its AVX-512 and portable loops) gives the
 *     generic path's bytes (sf_cpu_topk_fast = 0) and the reference evaluator's indices, on every dtype it
 *     takes, odd and even row lengths, k from 1 to 32, largest and smallest, rows
 *     along dim 0 and through a permute (strided), and values with many ties, NaN,
 *     infinities, signed zeros, all equal, sorted either way; fused with 1, 2 and 3
 *     threads the same bytes as op by op.
 */
#include "harness.h"
#include "sf.h"
#include "cpu.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------ */
/* helpers                                                                          */
/* ------------------------------------------------------------------------------ */

static char *read_text(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, fp) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(fp);
    return s;
}

static bool write_text(const char *path, const char *text) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return false;
    bool ok = fputs(text, fp) >= 0;
    return fclose(fp) == 0 && ok;
}

/* The device run_fusion compiles for (the topk group also runs the reference). */
static scanfuse_device test_device = SCANFUSE_DEVICE_CPU;

static scanfuse_program *compile(const scanfuse_fusion *f, int fuse, int threads) {
    scanfuse_options o;
    scanfuse_options_init(&o);
    o.fuse = fuse;
    o.threads = threads;
    o.device = test_device;
    return scanfuse_compile(f, &o);
}

/* One tensor of a run: owned contiguous memory and its DLPack description. */
typedef struct tbuf {
    scanfuse_dtype dt;
    int ndim;
    int64_t shape[SCANFUSE_MAX_DIMS];
    size_t bytes;
    unsigned char *data;
    scanfuse_dl_tensor dl;
} tbuf;

static void tbuf_init(tbuf *t, scanfuse_dtype dt, int ndim, const int64_t *shape) {
    memset(t, 0, sizeof *t);
    t->dt = dt;
    t->ndim = ndim;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        n *= shape[d];
    }
    t->bytes = (size_t)n * scanfuse_dtype_size(dt);
    t->data = calloc(t->bytes ? t->bytes : 1, 1);
    t->dl.data = t->data;
    t->dl.device.device_type = SCANFUSE_DL_CPU;
    t->dl.ndim = ndim;
    t->dl.dtype = scanfuse_dtype_to_dl(dt);
    t->dl.shape = t->shape;
    t->dl.strides = NULL;
}

/* Random contents: mostly moderate values, now and then a special one (zeros, signed
 * zeros, infinities, NaN, large magnitudes) so that edge cases flow through too. */
static void tbuf_fill(tbuf *t, sf_test_rng *r) {
    int64_t n = (int64_t)(t->bytes / scanfuse_dtype_size(t->dt));
    for (int64_t i = 0; i < n; i++) {
        uint64_t u = sf_test_rng_next(r);
        if (sf_dtype_is_float(t->dt)) {
            double v = sf_test_rng_uniform(r) * 4.0 - 2.0;
            switch (u % 97) {
            case 0: v = 0.0; break;
            case 1: v = -0.0; break;
            case 2: v = INFINITY; break;
            case 3: v = NAN; break;
            case 4: v = 1e5; break;
            default: break;
            }
            sf_store_f64(t->data, i, t->dt, v);
        } else if (t->dt == SCANFUSE_BOOL) {
            t->data[i] = (unsigned char)(u & 1u);
        } else {
            int64_t v = (int64_t)(u % 101) - (t->dt == SCANFUSE_UINT8 ? 0 : 50);
            sf_store_i64(t->data, i, t->dt, v);
        }
    }
}

static void tbufs_free(tbuf *t, int n) {
    for (int i = 0; i < n; i++) free(t[i].data);
    free(t);
}

/* Runs f with the given inputs; returns the outputs (NULL when compile failed) and the
 * run status in *st. */
static tbuf *run_fusion(const scanfuse_fusion *f, tbuf *ins, int fuse, int threads,
                        scanfuse_status *st, char *err, size_t errlen) {
    scanfuse_program *p = compile(f, fuse, threads);
    *st = scanfuse_program_status(p);
    if (*st != SCANFUSE_OK) {
        snprintf(err, errlen, "%s", scanfuse_program_error(p));
        scanfuse_program_free(p);
        return NULL;
    }
    int nin = scanfuse_fusion_num_inputs(f), nout = scanfuse_fusion_num_outputs(f);
    tbuf *outs = calloc((size_t)(nout ? nout : 1), sizeof *outs);
    scanfuse_dl_tensor *din = calloc((size_t)(nin ? nin : 1), sizeof *din);
    scanfuse_dl_tensor *dout = calloc((size_t)(nout ? nout : 1), sizeof *dout);
    for (int i = 0; i < nin; i++) din[i] = ins[i].dl;
    for (int i = 0; i < nout; i++) {
        const char *name;
        scanfuse_dtype dt;
        int nd;
        int64_t sh[SCANFUSE_MAX_DIMS];
        scanfuse_fusion_output_info(f, i, &name, &dt, &nd, sh);
        tbuf_init(&outs[i], dt, nd, sh);
        memset(outs[i].data, 0xA5, outs[i].bytes); /* garbage, never read */
        dout[i] = outs[i].dl;
    }
    *st = scanfuse_run(p, din, nin, dout, nout);
    if (*st != SCANFUSE_OK) snprintf(err, errlen, "%s", scanfuse_program_error(p));
    free(din);
    free(dout);
    scanfuse_program_free(p);
    return outs;
}

/* The same bytes, except that two NaNs of a float dtype count as equal whatever their
 * sign and payload (docs/OPS.md: those are not specified; clang commutes products, so
 * which operand's NaN propagates differs between compilers). */
static bool same_but_nan_bits(const tbuf *a, const tbuf *b) {
    if (memcmp(a->data, b->data, a->bytes) == 0) return true;
    if (!sf_dtype_is_float(a->dt)) return false;
    size_t es = scanfuse_dtype_size(a->dt);
    for (size_t at = 0; at < a->bytes; at += es) {
        if (memcmp(a->data + at, b->data + at, es) == 0) continue;
        int64_t i = (int64_t)(at / es);
        if (!isnan(sf_load_f64(a->data, i, a->dt)) || !isnan(sf_load_f64(b->data, i, b->dt)))
            return false;
    }
    return true;
}

/* Fused with 1, 2 and 3 threads against op by op, on the given inputs (freed here):
 * the same status, the same bytes.  Returns false (after a failed check naming `what`)
 * on a difference. */
static bool compare_fused_on(const scanfuse_fusion *f, tbuf *ins, const char *what,
                             const char *text) {
    int nin = scanfuse_fusion_num_inputs(f), nout = scanfuse_fusion_num_outputs(f);
    char err0[SF_ERR_LEN] = "", err1[SF_ERR_LEN] = "";
    scanfuse_status st0, st1;
    const int64_t wide = sf_cpu_tile_pointwise_min;
    sf_cpu_tile_pointwise_min = INT64_MAX; /* every single element-wise op op by op */
    tbuf *ref = run_fusion(f, ins, 0, 1, &st0, err0, sizeof err0);
    sf_cpu_tile_pointwise_min = wide;
    bool ok = ref != NULL;
    CHECKF(ref != NULL, "%s: unfused compile failed: %s", what, err0);
    static const int threads[] = {1, 2, 3};
    for (int t = 0; t < 3 && ok; t++) {
        tbuf *got = run_fusion(f, ins, 1, threads[t], &st1, err1, sizeof err1);
        if (!got) {
            CHECKF(0, "%s: fused compile failed: %s", what, err1);
            ok = false;
            break;
        }
        if (st0 != st1) {
            CHECKF(0, "%s (threads %d): status %s fused vs %s unfused (%s / %s)\n%s", what,
                   threads[t], scanfuse_status_string(st1), scanfuse_status_string(st0),
                   err1, err0, text ? text : "");
            ok = false;
        } else if (st0 == SCANFUSE_OK) {
            for (int o = 0; o < nout && ok; o++) {
                if (!same_but_nan_bits(&ref[o], &got[o])) {
                    size_t es = scanfuse_dtype_size(ref[o].dt), at = 0;
                    while (at < ref[o].bytes && ref[o].data[at] == got[o].data[at]) at++;
                    CHECKF(0, "%s (threads %d): output %d (%s) differs from the unfused run "
                           "at element %zu\n%s", what, threads[t], o,
                           scanfuse_dtype_name(ref[o].dt), at / es, text ? text : "");
                    ok = false;
                }
            }
        }
        tbufs_free(got, nout);
    }
    if (ok) CHECK(1);
    if (ref) tbufs_free(ref, nout);
    tbufs_free(ins, nin);
    return ok;
}

/* Allocates f's inputs (zeroed). */
static tbuf *alloc_inputs(const scanfuse_fusion *f) {
    int nin = scanfuse_fusion_num_inputs(f);
    tbuf *ins = calloc((size_t)(nin ? nin : 1), sizeof *ins);
    for (int i = 0; i < nin; i++) {
        const char *name;
        scanfuse_dtype dt;
        int nd;
        int64_t sh[SCANFUSE_MAX_DIMS];
        scanfuse_fusion_input_info(f, i, &name, &dt, &nd, sh);
        tbuf_init(&ins[i], dt, nd, sh);
    }
    return ins;
}

/* compare_fused_on with random inputs from `seed` (tbuf_fill). */
static bool compare_fused(const scanfuse_fusion *f, uint64_t seed, const char *what,
                          const char *text) {
    tbuf *ins = alloc_inputs(f);
    sf_test_rng r;
    sf_test_rng_seed(&r, seed);
    for (int i = 0; i < scanfuse_fusion_num_inputs(f); i++) tbuf_fill(&ins[i], &r);
    return compare_fused_on(f, ins, what, text);
}

/* ------------------------------------------------------------------------------ */
/* 1. golden segmentations                                                          */
/* ------------------------------------------------------------------------------ */

static bool update_golden(void) {
    const char *e = getenv("SF_UPDATE_GOLDEN");
    return e && e[0] && strcmp(e, "0") != 0;
}

/* Does the file hold a line starting with `prefix`? */
static bool file_has_line(const char *path, const char *prefix) {
    FILE *fp = fopen(path, "r");
    if (!fp) return false;
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, fp)) found = strncmp(line, prefix, strlen(prefix)) == 0;
    fclose(fp);
    return found;
}

/* Compares (or rewrites) the segmentation of one .sf file; also runs it fused vs not,
 * unless the file is marked too large for that ("# scanfuse-test: segments-only"; the
 * random MoE programs below cover the same kernels at small sizes). */
static void golden_one(const char *sf_path, const char *expected_path, uint64_t seed) {
    scanfuse_fusion *f = scanfuse_parse_file(sf_path);
    if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
        CHECKF(0, "%s: %s", sf_path, f ? scanfuse_fusion_error(f) : "cannot read");
        scanfuse_fusion_free(f);
        return;
    }
    scanfuse_program *p = compile(f, 1, 1);
    char *got = scanfuse_program_segments(p);
    CHECKF(got != NULL, "%s: no segments (%s)", sf_path, scanfuse_program_error(p));
    if (got) {
        if (update_golden()) {
            CHECKF(write_text(expected_path, got), "cannot write %s", expected_path);
        } else {
            char *want = read_text(expected_path);
            CHECKF(want != NULL, "%s: no golden file %s (SF_UPDATE_GOLDEN=1 writes it)",
                   sf_path, expected_path);
            if (want)
                CHECKF(strcmp(want, got) == 0, "%s: segmentation differs from %s\n--- got:\n%s",
                       sf_path, expected_path, got);
            free(want);
        }
    }
    scanfuse_free(got);
    scanfuse_program_free(p);
    if (!file_has_line(sf_path, "# scanfuse-test: segments-only"))
        compare_fused(f, seed, sf_path, NULL);
    scanfuse_fusion_free(f);
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void test_golden(void) {
    static const struct {
        const char *dir, *prefix;
    } dirs[] = {{SF_SOURCE_DIR "/tests/golden/segments", ""}, {SF_SOURCE_DIR "/examples", "example_"}};
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
        DIR *d = opendir(dirs[k].dir);
        CHECKF(d != NULL, "cannot open %s", dirs[k].dir);
        if (!d) continue;
        int seen = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!ends_with(e->d_name, ".sf")) continue;
            char sfp[1024], exp[1024];
            size_t stem = strlen(e->d_name) - 3;
            snprintf(sfp, sizeof sfp, "%s/%s", dirs[k].dir, e->d_name);
            snprintf(exp, sizeof exp, "%s/tests/golden/segments/%s%.*s.expected", SF_SOURCE_DIR,
                     dirs[k].prefix, (int)stem, e->d_name);
            golden_one(sfp, exp, 1000 + (uint64_t)seen);
            seen++;
        }
        closedir(d);
        CHECKF(seen >= 5, "%s: only %d programs", dirs[k].dir, seen);
    }
}

/* ------------------------------------------------------------------------------ */
/* 2. structure of the must-not-fuse cases                                          */
/* ------------------------------------------------------------------------------ */

static sf_program *compile_text(const char *text, scanfuse_fusion **fout) {
    scanfuse_fusion *f = scanfuse_parse(text, "segment-test");
    if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
        CHECKF(0, "parse: %s", f ? scanfuse_fusion_error(f) : "NULL");
        scanfuse_fusion_free(f);
        *fout = NULL;
        return NULL;
    }
    *fout = f;
    scanfuse_program *p = compile(f, 1, 1);
    CHECKF(scanfuse_program_status(p) == SCANFUSE_OK, "compile: %s", scanfuse_program_error(p));
    return (sf_program *)p;
}

/* How many segments compute (not merely set up) value `name`, and how many write it. */
static void count_value(const sf_program *p, const char *name, int *computes, int *writes,
                        int *reads) {
    const scanfuse_fusion *f = p->fusion;
    int32_t id = sf_find_value(f, name);
    *computes = *writes = *reads = 0;
    CHECKF(id >= 0, "no value %s", name);
    if (id < 0) return;
    for (int s = 0; s < p->nsegments; s++) {
        const sf_segment *seg = &p->segments[s];
        for (int j = 0; j < seg->nnodes; j++) {
            const sf_node *n = &f->nodes[seg->nodes[j]];
            for (int k = 0; k < n->nout; k++) *computes += n->out[k] == id;
        }
        for (int o = 0; o < seg->noutputs; o++) *writes += seg->outputs[o] == id;
        for (int i = 0; i < seg->ninputs; i++) *reads += seg->inputs[i] == id;
    }
}

/* The segment that computes value `name` (or -1). */
static int segment_of(const sf_program *p, const char *name) {
    int32_t id = sf_find_value(p->fusion, name);
    for (int s = 0; s < p->nsegments && id >= 0; s++)
        for (int j = 0; j < p->segments[s].nnodes; j++) {
            const sf_node *n = &p->fusion->nodes[p->segments[s].nodes[j]];
            for (int k = 0; k < n->nout; k++)
                if (n->out[k] == id) return s;
        }
    return -1;
}

static void test_structure(void) {
    scanfuse_fusion *f;
    sf_program *p;
    int computes, writes, reads;

    /* the chain: one kernel, moved == floor, intermediates never written */
    p = compile_text("input x: bfloat16[64, 4096]\ninput w: float32[4096]\n"
                     "t = mul(cast(x, float32), w)\nc = cumsum(t, dim=-1)\n"
                     "y = cast(c, bfloat16)\noutput y\n", &f);
    if (p) {
        CHECK_EQ_INT(p->nsegments, 1);
        CHECK_EQ_INT(p->segments[0].kind, SF_SEG_SCAN);
        CHECK_EQ_INT(scanfuse_program_moved_bytes((scanfuse_program *)p),
                     scanfuse_program_floor_bytes((scanfuse_program *)p));
        CHECK_EQ_INT(p->segments[0].noutputs, 1);
        CHECK_EQ_INT(p->segments[0].ninputs, 2);
    }
    scanfuse_program_free((scanfuse_program *)p);
    scanfuse_fusion_free(f);

    /* a value read by two kernels: computed once, written once, read once */
    p = compile_text("input x: float32[256, 512]\na = exp(x)\ns0 = cumsum(a, dim=0)\n"
                     "s1 = cumsum(a, dim=1)\noutput s0, s1\n", &f);
    if (p) {
        CHECK_EQ_INT(p->nsegments, 2);
        count_value(p, "a", &computes, &writes, &reads);
        CHECK_EQ_INT(computes, 1);
        CHECK_EQ_INT(writes, 1);
        CHECK_EQ_INT(reads, 1);
        CHECK(segment_of(p, "a") == segment_of(p, "s0"));
        CHECK(segment_of(p, "s1") != segment_of(p, "s0"));
    }
    scanfuse_program_free((scanfuse_program *)p);
    scanfuse_fusion_free(f);

    /* the same with two opaque consumers */
    p = compile_text("input x: float32[8, 16]\ninput w: float32[16, 4]\nh = silu(x)\n"
                     "y1 = matmul(h, w)\ny2 = matmul(h, w)\noutput y1, y2\n", &f);
    if (p) {
        CHECK_EQ_INT(p->nsegments, 3);
        count_value(p, "h", &computes, &writes, &reads);
        CHECK_EQ_INT(computes, 1);
        CHECK_EQ_INT(writes, 1);
        CHECK_EQ_INT(reads, 2);
    }
    scanfuse_program_free((scanfuse_program *)p);
    scanfuse_fusion_free(f);

    /* a reduction feeding a pointwise op over a broadcast shape: two kernels */
    p = compile_text("input x: float32[128, 1024]\ns = sum(x, dim=1, keepdim=true)\n"
                     "y = div(x, s)\noutput y\n", &f);
    if (p) {
        CHECK_EQ_INT(p->nsegments, 2);
        CHECK(segment_of(p, "s") != segment_of(p, "y"));
        count_value(p, "s", &computes, &writes, &reads);
        CHECK_EQ_INT(writes, 1);
    }
    scanfuse_program_free((scanfuse_program *)p);
    scanfuse_fusion_free(f);

    /* ... while a pointwise op over the reduction's own shape is its epilogue */
    p = compile_text("input x: float32[128, 1024]\ns = sum(x, dim=1)\n"
                     "y = sqrt(s)\noutput y\n", &f);
    if (p) CHECK_EQ_INT(p->nsegments, 1);
    scanfuse_program_free((scanfuse_program *)p);
    scanfuse_fusion_free(f);

    /* two scans along different dims: two kernels, the first writes its result */
    p = compile_text("input x: float32[128, 256]\na = cumsum(x, dim=1)\n"
                     "b = cumsum(a, dim=0)\noutput b\n", &f);
    if (p) {
        CHECK_EQ_INT(p->nsegments, 2);
        count_value(p, "a", &computes, &writes, &reads);
        CHECK_EQ_INT(writes, 1);
    }
    scanfuse_program_free((scanfuse_program *)p);
    scanfuse_fusion_free(f);

    /* fuse = 0: one kernel per node, weak scalars folded */
    f = scanfuse_parse("input x: float32[4, 8]\ny = add(cumsum(mul(x, 2), dim=1), 1)\noutput y\n",
                       "t");
    scanfuse_program *q = compile(f, 0, 1);
    CHECK_EQ_INT(scanfuse_program_num_kernels(q), 3);
    scanfuse_program_free(q);
    q = compile(f, 1, 1);
    CHECK_EQ_INT(scanfuse_program_num_kernels(q), 1);
    scanfuse_program_free(q);
    scanfuse_fusion_free(f);
}

/* The targets of issue 4 on both MoE examples: at most 4 kernels in all, the routing
 * (topk through the inverse permutation) in at most 2, the count, the cumsum and the
 * permutation in one, and bytes moved at most 1.2 x the floor. */
static void test_moe_targets(void) {
    static const char *const files[] = {SF_SOURCE_DIR "/examples/moe_routing.sf",
                                        SF_SOURCE_DIR "/examples/moe_routing_deepseek.sf"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        scanfuse_fusion *f = scanfuse_parse_file(files[k]);
        CHECKF(f && scanfuse_fusion_status(f) == SCANFUSE_OK, "%s: %s", files[k],
               f ? scanfuse_fusion_error(f) : "cannot read");
        if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
            scanfuse_fusion_free(f);
            continue;
        }
        sf_program *p = (sf_program *)compile(f, 1, 1);
        CHECKF(p->status == SCANFUSE_OK, "%s: %s", files[k], p->error);
        if (p->status == SCANFUSE_OK) {
            CHECKF(p->nsegments <= 4, "%s: %d kernels", files[k], p->nsegments);
            static const char *const routing[] = {"expert", "counts", "offsets", "starts",
                                                  "aligned", "perm", "inverse"};
            bool seen[64] = {false};
            int nrouting = 0;
            for (size_t r = 0; r < sizeof routing / sizeof routing[0]; r++) {
                int s = segment_of(p, routing[r]);
                CHECKF(s >= 0 && s < 64, "%s: %s not computed", files[k], routing[r]);
                if (s >= 0 && s < 64 && !seen[s]) {
                    seen[s] = true;
                    nrouting++;
                }
            }
            CHECKF(nrouting <= 2, "%s: the routing takes %d kernels", files[k], nrouting);
            CHECK(segment_of(p, "counts") == segment_of(p, "offsets"));
            CHECK(segment_of(p, "offsets") == segment_of(p, "perm"));
            int64_t moved = scanfuse_program_moved_bytes((scanfuse_program *)p);
            int64_t floor_b = scanfuse_program_floor_bytes((scanfuse_program *)p);
            CHECKF((double)moved <= 1.2 * (double)floor_b, "%s: moves %lld bytes, floor %lld",
                   files[k], (long long)moved, (long long)floor_b);
        }
        scanfuse_program_free((scanfuse_program *)p);
        scanfuse_fusion_free(f);
    }
}

/* ------------------------------------------------------------------------------ */
/* 3. random programs                                                               */
/* ------------------------------------------------------------------------------ */

typedef struct gval {
    char name[16];
    scanfuse_dtype dt;
    int ndim;
    int64_t shape[SCANFUSE_MAX_DIMS];
} gval;

typedef struct gen {
    sf_test_rng *r;
    char text[8192];
    size_t len;
    gval vals[64];
    int nvals;
} gen;

static void gput(gen *g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void gput(gen *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g->text + g->len, sizeof g->text - g->len, fmt, ap);
    va_end(ap);
    if (n > 0) g->len += (size_t)n < sizeof g->text - g->len ? (size_t)n : 0;
}

static int64_t rnd(gen *g, int64_t lo, int64_t hi) { return sf_test_rng_int(g->r, lo, hi); }

static const scanfuse_dtype all_dts[] = {SCANFUSE_BOOL, SCANFUSE_UINT8, SCANFUSE_INT8,
                                         SCANFUSE_INT16, SCANFUSE_INT32, SCANFUSE_INT64,
                                         SCANFUSE_FLOAT16, SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32,
                                         SCANFUSE_FLOAT64};

static scanfuse_dtype rnd_dt(gen *g, bool floats_mostly) {
    if (floats_mostly && rnd(g, 0, 2) > 0) return all_dts[rnd(g, 6, 9)];
    return all_dts[rnd(g, 0, 9)];
}

static void shape_text(const gval *v, char *buf, size_t n) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int d = 0; d < v->ndim; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? ", " : "", (long long)v->shape[d]);
    snprintf(buf + k, n - k, "]");
}

static gval *add_val(gen *g, scanfuse_dtype dt, int ndim, const int64_t *shape) {
    gval *v = &g->vals[g->nvals];
    snprintf(v->name, sizeof v->name, "v%d", g->nvals);
    v->dt = dt;
    v->ndim = ndim;
    for (int d = 0; d < ndim; d++) v->shape[d] = shape[d];
    g->nvals++;
    return v;
}

/* A random earlier value; prefers the later ones (chains). */
static gval *pick(gen *g) {
    int64_t back = rnd(g, 0, g->nvals - 1); /* two statements: a fixed call order */
    int64_t i = g->nvals - 1 - back / rnd(g, 1, 2);
    return &g->vals[i];
}

/* A value broadcast-compatible with a (same shape, or smaller with 1s / fewer dims). */
static gval *pick_partner(gen *g, const gval *a) {
    for (int tries = 0; tries < 8; tries++) {
        gval *b = pick(g);
        if (b->ndim > a->ndim) continue;
        bool ok = true;
        for (int d = 0; d < b->ndim; d++) {
            int64_t sb = b->shape[d], sa = a->shape[a->ndim - b->ndim + d];
            ok &= sb == sa || sb == 1;
        }
        if (ok) return b;
    }
    return (gval *)a;
}

/* Generates one program: a few inputs, 4-10 ops, 1-3 outputs. */
static void gen_program(gen *g, int shape_class) {
    static const int64_t shapes[][4] = {{2, 37, 530}, {3, 3, 50, 64}, {1, 20000}, {3, 2, 1, 3000},
                                        {2, 300, 257}, {3, 0, 5, 7}};
    const int64_t *sh = shapes[shape_class % 6];
    int nd = (int)sh[0];
    int64_t S[SCANFUSE_MAX_DIMS];
    for (int d = 0; d < nd; d++) S[d] = sh[d + 1];
    g->len = 0;
    g->nvals = 0;
    char sb[96];
    /* inputs: x and z of the full shape, w along the last dim, r a row-reduced shape */
    gval *x = add_val(g, rnd_dt(g, true), nd, S);
    shape_text(x, sb, sizeof sb);
    gput(g, "input v0: %s%s\n", scanfuse_dtype_name(x->dt), sb);
    gval *z = add_val(g, rnd_dt(g, false), nd, S);
    shape_text(z, sb, sizeof sb);
    gput(g, "input v1: %s%s\n", scanfuse_dtype_name(z->dt), sb);
    int64_t last = S[nd - 1];
    gval *w = add_val(g, rnd_dt(g, true), 1, &last);
    shape_text(w, sb, sizeof sb);
    gput(g, "input v2: %s%s\n", scanfuse_dtype_name(w->dt), sb);

    static const char *un_any[] = {"abs", "neg", "relu", "floor", "logical_not", "isnan"};
    static const char *un_float[] = {"exp", "sigmoid", "tanh", "sqrt", "log1p", "silu", "rsqrt"};
    static const char *bin[] = {"add", "mul", "sub", "maximum", "minimum", "div", "lt", "eq",
                                "ge", "logical_and", "pow", "remainder"};
    static const char *scans[] = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"};
    static const char *reds[] = {"sum", "prod", "max", "min", "mean", "argmax", "argmin"};
    int nops = (int)rnd(g, 4, 10);
    for (int k = 0; k < nops && g->nvals < 60; k++) {
        gval *a = pick(g);
        char nm[16];
        snprintf(nm, sizeof nm, "v%d", g->nvals);
        int kind = (int)rnd(g, 0, 9);
        bool fa = sf_dtype_is_float(a->dt);
        if (kind <= 1) { /* unary */
            const char *op = fa && rnd(g, 0, 1) ? un_float[rnd(g, 0, 6)] : un_any[rnd(g, 0, 5)];
            scanfuse_dtype rd = fa || strcmp(op, "exp") ? a->dt : SCANFUSE_FLOAT32;
            if (!strcmp(op, "logical_not") || !strcmp(op, "isnan")) rd = SCANFUSE_BOOL;
            if (a->dt == SCANFUSE_BOOL && rd != SCANFUSE_BOOL) op = "logical_not", rd = SCANFUSE_BOOL;
            if (!fa && rd != SCANFUSE_BOOL && !strcmp(op, "neg") && a->dt == SCANFUSE_BOOL) continue;
            gput(g, "%s = %s(%s)\n", nm, op, a->name);
            add_val(g, rd, a->ndim, a->shape);
        } else if (kind == 2) { /* cast */
            scanfuse_dtype to = rnd_dt(g, false);
            gput(g, "%s = cast(%s, %s)\n", nm, a->name, scanfuse_dtype_name(to));
            add_val(g, to, a->ndim, a->shape);
        } else if (kind <= 4) { /* binary with a partner or a literal */
            const char *op = bin[rnd(g, 0, 11)];
            bool lit = rnd(g, 0, 3) == 0;
            gval *b = lit ? NULL : pick_partner(g, a);
            scanfuse_dtype rd = lit ? a->dt : scanfuse_dtype_promote(a->dt, b->dt);
            bool cmp = !strcmp(op, "lt") || !strcmp(op, "eq") || !strcmp(op, "ge") ||
                       !strcmp(op, "logical_and");
            if (rd == SCANFUSE_BOOL && !cmp && strcmp(op, "add") && strcmp(op, "mul") &&
                strcmp(op, "maximum") && strcmp(op, "minimum"))
                op = "logical_and", cmp = true;
            if (!sf_dtype_is_float(rd) && (!strcmp(op, "remainder") || !strcmp(op, "pow")))
                op = "mul";
            if (!strcmp(op, "div") && !sf_dtype_is_float(rd)) rd = SCANFUSE_FLOAT32;
            if (cmp) rd = SCANFUSE_BOOL;
            bool half = rnd(g, 0, 1);
            if (lit) {
                gput(g, "%s = %s(%s, %s)\n", nm, op, a->name, half ? "0.5" : "3");
                /* "0.5" with an integer tensor gives float32; "3" keeps its dtype
                 * (bool + 3 is int64) */
                if (!cmp && !sf_dtype_is_float(a->dt))
                    rd = half || !strcmp(op, "div") ? SCANFUSE_FLOAT32
                                                    : (a->dt == SCANFUSE_BOOL ? SCANFUSE_INT64 : a->dt);
            } else {
                gput(g, "%s = %s(%s, %s)\n", nm, op, a->name, b->name);
            }
            add_val(g, rd, a->ndim, a->shape);
        } else if (kind == 5) { /* where */
            gval *b = pick_partner(g, a);
            gput(g, "%s = where(gt(%s, 0), %s, %s)\n", nm, a->name, a->name, b->name);
            add_val(g, scanfuse_dtype_promote(a->dt, b->dt), a->ndim, a->shape);
        } else if (kind <= 7) { /* scan */
            if (a->ndim == 0) continue;
            const char *op = scans[rnd(g, 0, fa ? 4 : 3)];
            int dim = (int)rnd(g, 0, a->ndim - 1);
            const char *ex = rnd(g, 0, 2) == 0 ? ", exclusive=true" : "";
            const char *rv = rnd(g, 0, 3) == 0 ? ", reverse=true" : "";
            bool two = !strcmp(op, "cummax") || !strcmp(op, "cummin");
            scanfuse_dtype rd = a->dt;
            if (!strcmp(op, "cumsum") || !strcmp(op, "cumprod")) {
                if (!fa) rd = SCANFUSE_INT64;
                if (rnd(g, 0, 3) == 0) {
                    rd = all_dts[rnd(g, 4, 9)];
                    gput(g, "%s = %s(%s, dim=%d, dtype=%s%s%s)\n", nm, op, a->name, dim,
                         scanfuse_dtype_name(rd), ex, rv);
                } else {
                    gput(g, "%s = %s(%s, dim=%d%s%s)\n", nm, op, a->name, dim, ex, rv);
                }
                add_val(g, rd, a->ndim, a->shape);
            } else if (two) {
                gput(g, "%s, v%d = %s(%s, dim=%d%s%s)\n", nm, g->nvals + 1, op, a->name, dim, ex, rv);
                add_val(g, rd, a->ndim, a->shape);
                add_val(g, SCANFUSE_INT64, a->ndim, a->shape);
            } else {
                gput(g, "%s = %s(%s, dim=%d%s%s)\n", nm, op, a->name, dim, ex, rv);
                add_val(g, rd, a->ndim, a->shape);
            }
        } else { /* reduction */
            if (a->ndim == 0) continue;
            const char *op = reds[rnd(g, 0, fa ? 6 : 5)];
            if (!strcmp(op, "mean") && !fa) op = "sum";
            bool keep = rnd(g, 0, 1);
            bool arg = !strcmp(op, "argmax") || !strcmp(op, "argmin");
            int d0 = (int)rnd(g, 0, a->ndim - 1);
            int d1 = a->ndim > 1 && !arg && rnd(g, 0, 2) == 0 ? (d0 + 1) % a->ndim : -1;
            int64_t rs[SCANFUSE_MAX_DIMS];
            int rn = 0;
            for (int d = 0; d < a->ndim; d++) {
                if (d == d0 || d == d1) {
                    if (keep) rs[rn++] = 1;
                } else {
                    rs[rn++] = a->shape[d];
                }
            }
            if ((a->ndim > 0 && a->shape[d0] == 0 && (arg || !strcmp(op, "max") || !strcmp(op, "min"))))
                continue; /* no identity for an empty reduction */
            if (d1 >= 0 && a->shape[d1] == 0 && (!strcmp(op, "max") || !strcmp(op, "min"))) continue;
            scanfuse_dtype rd = a->dt;
            if (arg) rd = SCANFUSE_INT64;
            else if ((!strcmp(op, "sum") || !strcmp(op, "prod")) && !fa) rd = SCANFUSE_INT64;
            if (arg)
                gput(g, "%s = %s(%s, dim=%d%s)\n", nm, op, a->name, d0, keep ? ", keepdim=true" : "");
            else if (d1 >= 0)
                gput(g, "%s = %s(%s, dim=[%d, %d]%s)\n", nm, op, a->name, d0, d1,
                     keep ? ", keepdim=true" : "");
            else
                gput(g, "%s = %s(%s, dim=%d%s)\n", nm, op, a->name, d0, keep ? ", keepdim=true" : "");
            add_val(g, rd, rn, rs);
        }
    }
    /* outputs: the last value and up to two others (not inputs) */
    gput(g, "output v%d", g->nvals - 1);
    for (int k = 0; k < 2; k++) {
        int i = (int)rnd(g, 3, g->nvals - 1);
        if (i < g->nvals - 1 && rnd(g, 0, 1)) gput(g, ", v%d", i);
    }
    gput(g, "\n");
}

/* A random MoE-like program: routing (topk, scores, histogram, cumsum, counting
 * sorts, inverse), rows gathered through a permutation (lazily written when their only
 * reader is the combine), a combine over the k slots; variants add a gather with raw,
 * possibly out-of-range indices, a second reader of the permuted rows, scans. */
static void gen_index_program(gen *g) {
    static const int64_t Ts[] = {5, 37, 64, 200}, Es[] = {4, 16, 33}, Hs[] = {3, 100, 700};
    static const scanfuse_dtype ldts[] = {SCANFUSE_FLOAT32, SCANFUSE_BFLOAT16, SCANFUSE_FLOAT16,
                                          SCANFUSE_INT32};
    static const scanfuse_dtype hdts[] = {SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32, SCANFUSE_FLOAT16,
                                          SCANFUSE_INT16, SCANFUSE_FLOAT64};
    int64_t T = Ts[rnd(g, 0, 3)], E = Es[rnd(g, 0, 2)], H = Hs[rnd(g, 0, 2)];
    int64_t K = rnd(g, 1, E < 3 ? E : 3);
    scanfuse_dtype ld = ldts[rnd(g, 0, 3)], hd = hdts[rnd(g, 0, 4)];
    const char *ln = scanfuse_dtype_name(ld), *hn = scanfuse_dtype_name(hd);
    g->len = 0;
    gput(g, "input logits: %s[%lld, %lld]\n", ln, (long long)T, (long long)E);
    gput(g, "input h: %s[%lld, %lld]\n", hn, (long long)T, (long long)H);
    gput(g, "input raw: int64[%lld]\n", (long long)T);
    gput(g, "v, e = topk(logits, %lld, dim=1)\n", (long long)K);
    gput(g, "w = sigmoid(cast(v, float32))\n");
    gput(g, "pairs = reshape(e, [%lld])\n", (long long)(T * K));
    gput(g, "counts = bincount(pairs, minlength=%lld)\n", (long long)E);
    gput(g, "off = cumsum(counts, dim=0, dtype=int32%s)\n", rnd(g, 0, 1) ? ", exclusive=true" : "");
    gput(g, "perm = argsort(pairs, stable=true)\n");
    gput(g, "inv = argsort(perm, stable=true)\n");
    gput(g, "tok = floor_divide(perm, %lld)\n", (long long)K);
    gput(g, "p = index_select(h, 0, tok)\n");
    gput(g, "g = take_along_dim(reshape(p, [%lld, 1, %lld]), reshape(inv, [%lld, %lld, 1]), dim=0)\n",
         (long long)(T * K), (long long)H, (long long)T, (long long)K);
    switch (rnd(g, 0, 3)) {
    case 0: /* the combine */
        gput(g, "o = cast(sum(mul(g, reshape(w, [%lld, %lld, 1])), dim=1), %s)\n", (long long)T,
             (long long)K, hn);
        break;
    case 1: /* a scan over the slots instead */
        gput(g, "o = cumsum(mul(g, reshape(w, [%lld, %lld, 1])), dim=1)\n", (long long)T, (long long)K);
        break;
    case 2: /* pointwise only */
        gput(g, "o = maximum(g, 0)\n");
        break;
    default: /* max over the hidden dim */
        gput(g, "o = max(add(g, 1), dim=2)\n");
        break;
    }
    if (rnd(g, 0, 2) == 0) gput(g, "extra = sum(p, dim=1)\n"); /* a second reader of p */
    else gput(g, "extra = index_select(h, 0, raw)\n");         /* bad indices, sometimes */
    gput(g, "output o, off, extra%s\n", rnd(g, 0, 1) ? ", p" : "");
}

static void test_random_index(uint64_t seed) {
    sf_test_rng r;
    sf_test_rng_seed(&r, seed);
    int built = 0, failed = 0;
    for (int i = 0; i < 60 && failed < 5; i++) {
        gen g;
        memset(&g, 0, sizeof g);
        g.r = &r;
        gen_index_program(&g);
        scanfuse_fusion *f = scanfuse_parse(g.text, "random-index");
        CHECKF(f && scanfuse_fusion_status(f) == SCANFUSE_OK, "index program %d: %s\n%s", i,
               f ? scanfuse_fusion_error(f) : "NULL", g.text);
        if (f && scanfuse_fusion_status(f) == SCANFUSE_OK) {
            built++;
            char what[64];
            snprintf(what, sizeof what, "index program %d", i);
            if (!compare_fused(f, 500 + (uint64_t)i, what, g.text)) failed++;
        }
        scanfuse_fusion_free(f);
    }
    printf("random index programs: %d built\n", built);
}

static void test_random(uint64_t seed) {
    sf_test_rng r;
    sf_test_rng_seed(&r, seed);
    int built = 0, tried = 0, failed = 0;
    for (int i = 0; i < 360 && failed < 5; i++) {
        gen g;
        memset(&g, 0, sizeof g);
        g.r = &r;
        gen_program(&g, i);
        tried++;
        scanfuse_fusion *f = scanfuse_parse(g.text, "random");
        if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
            /* the generator does not model every dtype rule; skip what does not build */
            scanfuse_fusion_free(f);
            continue;
        }
        built++;
        char what[64];
        snprintf(what, sizeof what, "random program %d", i);
        if (!compare_fused(f, 77 + (uint64_t)i, what, g.text)) failed++;
        scanfuse_fusion_free(f);
    }
    CHECKF(built * 10 >= tried * 7, "only %d of %d random programs built", built, tried);
    printf("random programs: %d built of %d\n", built, tried);
}

/* One element-wise op over at least sf_cpu_tile_pointwise_min outputs runs tiled on the
 * pool (cpu_backend.c): the bytes and status of the op-by-op run, with broadcast
 * operands, literals, narrowing casts, bool results, 3-D shapes and integer division by
 * a zero somewhere (an error in some tile). */
static void test_wide_pointwise(uint64_t seed) {
    static const char *const texts[] = {
        "input x: float32[600, 512]\ninput b: float32[512]\ny = add(x, b)\noutput y\n",
        "input x: int32[600, 512]\ninput d: int32[600, 1]\ny = floor_divide(x, d)\noutput y\n",
        "input x: int32[600, 512]\ninput d: int32[600, 1]\ny = add(x, d)\noutput y\n",
        "input x: float32[600, 512]\ny = cast(x, bfloat16)\noutput y\n",
        "input x: bfloat16[1024, 300]\ny = exp(x)\noutput y\n",
        "input c: bool[600, 512]\ninput x: float32[600, 1]\ny = where(c, x, 2.5)\noutput y\n",
        "input a: int64[300, 1024]\ninput b: int64[300, 1024]\ny = eq(a, b)\noutput y\n",
        "input x: float16[4, 300, 256]\ny = mul(x, 0.5)\noutput y\n",
        "input x: float32[262147]\ny = sigmoid(x)\noutput y\n",
    };
    int ran = 0;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        scanfuse_fusion *f = scanfuse_parse(texts[i], "wide");
        CHECKF(f && scanfuse_fusion_status(f) == SCANFUSE_OK, "does not build: %s", texts[i]);
        if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
            scanfuse_fusion_free(f);
            continue;
        }
        char what[64];
        snprintf(what, sizeof what, "wide element-wise op %zu", i);
        compare_fused(f, seed + i, what, texts[i]);
        scanfuse_fusion_free(f);
        ran++;
    }
    printf("wide element-wise ops, tiled on the pool: %d programs\n", ran);
}

/* ------------------------------------------------------------------------------ */
/* 4. the row combine (cpu_rows.c) against op by op                                 */
/* ------------------------------------------------------------------------------ */

/* A float for the combine's rows or weights, picked to reach every path of the row
 * combine: plain values; values on a coarse grid (with unit weights their sums are
 * exact and often fall on bfloat16 rounding boundaries); huge and tiny magnitudes side
 * by side (sums that are not exact in double); subnormals; zeros of both signs; and,
 * when `special`, infinities (then NaN from inf - inf or inf * 0: the tile runs step by
 * step). */
static double combine_value(sf_test_rng *r, int mode, bool special) {
    uint64_t u = sf_test_rng_next(r);
    double v = sf_test_rng_uniform(r) * 4.0 - 2.0;
    switch (mode) {
    case 0: break;
    case 1: v = (double)((int64_t)(u % 64) - 32) / 8.0; break;
    case 2: v = (u & 1) ? v * 1e30 : v * 1e-30; break;
    default: v = (u & 1) ? v * 1e-39 : v; break; /* float32 subnormals */
    }
    if (u % 53 == 0) v = (u & 64) ? -0.0 : 0.0;
    /* (infinities only: every NaN they make is the default NaN; two NaNs of different
     * payloads meeting in one sum propagate by operand order, which the compiler may
     * pick differently in the fused and op-by-op sums) */
    if (special && u % 211 == 1) v = (u & 64) ? INFINITY : -INFINITY;
    return v;
}

/* Programs the combine runs, fused against op by op: a gather of rows of x (by
 * take_along_dim, through lazily written rows, or by index_select), times one weight
 * per row, summed over the k slots, maybe cast to bfloat16.  x and w dtypes, k, the row
 * length (tails of the 16-lane blocks), the value modes and bad indices vary. */
static void test_combine(uint64_t seed) {
    static const int64_t Ks[] = {1, 2, 3, 8}, Hs[] = {1, 17, 100, 1031};
    static const scanfuse_dtype xdts[] = {SCANFUSE_BFLOAT16, SCANFUSE_FLOAT32};
    sf_test_rng r;
    sf_test_rng_seed(&r, seed);
    int failed = 0;
    for (int i = 0; i < 48 && failed < 3; i++) {
        int64_t T = 3 + (int64_t)(sf_test_rng_next(&r) % 20), K = Ks[sf_test_rng_next(&r) % 4];
        int64_t H = Hs[sf_test_rng_next(&r) % 4], R = T * K;
        scanfuse_dtype xd = xdts[sf_test_rng_next(&r) % 2], wd = xdts[sf_test_rng_next(&r) % 2];
        int form = (int)(sf_test_rng_next(&r) % 3), mode = (int)(sf_test_rng_next(&r) % 4);
        bool cast = sf_test_rng_next(&r) % 4 != 0, special = sf_test_rng_next(&r) % 4 == 0;
        bool bad_index = sf_test_rng_next(&r) % 8 == 0, unit = sf_test_rng_next(&r) % 2 == 0;
        /* form 1, as in the MoE examples: every slot of token t reads a copy of row t
         * (the kernels' repeated-row path) */
        bool own = form == 1 && sf_test_rng_next(&r) % 2 == 0;
        char text[2048];
        int len = snprintf(text, sizeof text, "input x: %s[%lld, %lld]\n",
                           scanfuse_dtype_name(xd), (long long)R, (long long)H);
        const char *rows = "x";
        if (form == 2) { /* index_select: one output row summed over all K selected rows */
            len += snprintf(text + len, sizeof text - (size_t)len,
                            "input idx: int64[%lld]\ninput w: %s[%lld, 1]\n"
                            "s = sum(mul(index_select(x, 0, idx), w), dim=0)\n",
                            (long long)K, scanfuse_dtype_name(wd), (long long)K);
        } else {
            len += snprintf(text + len, sizeof text - (size_t)len,
                            "input idx: int64[%lld, %lld]\ninput w: %s[%lld, %lld]\n", (long long)T,
                            (long long)K, scanfuse_dtype_name(wd), (long long)T, (long long)K);
            if (form == 1) { /* rows written on demand, read back through the combine */
                len += snprintf(text + len, sizeof text - (size_t)len,
                                "input tok: int64[%lld]\np = index_select(x, 0, tok)\n",
                                (long long)R);
                rows = "p";
            }
            len += snprintf(text + len, sizeof text - (size_t)len,
                            "g = take_along_dim(reshape(%s, [%lld, 1, %lld]), reshape(idx, [%lld, "
                            "%lld, 1]), dim=0)\ns = sum(mul(g, reshape(w, [%lld, %lld, 1])), dim=1)\n",
                            rows, (long long)R, (long long)H, (long long)T, (long long)K,
                            (long long)T, (long long)K);
        }
        len += snprintf(text + len, sizeof text - (size_t)len, "%soutput %s%s\n",
                        cast ? "o = cast(s, bfloat16)\n" : "", cast ? "o" : "s",
                        form == 1 ? ", p" : "");
        scanfuse_fusion *f = scanfuse_parse(text, "combine");
        CHECKF(f && scanfuse_fusion_status(f) == SCANFUSE_OK, "combine program %d: %s\n%s", i,
               f ? scanfuse_fusion_error(f) : "NULL", text);
        if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
            scanfuse_fusion_free(f);
            failed++;
            continue;
        }
        tbuf *ins = alloc_inputs(f);
        for (int k = 0; k < scanfuse_fusion_num_inputs(f); k++) {
            const char *name;
            scanfuse_dtype dt;
            int nd;
            int64_t sh[SCANFUSE_MAX_DIMS];
            scanfuse_fusion_input_info(f, k, &name, &dt, &nd, sh);
            int64_t n = (int64_t)(ins[k].bytes / scanfuse_dtype_size(dt));
            for (int64_t e = 0; e < n; e++) {
                if (strcmp(name, "x") == 0) {
                    sf_store_f64(ins[k].data, e, dt, combine_value(&r, mode, special));
                } else if (strcmp(name, "w") == 0) {
                    double v = unit ? ((sf_test_rng_next(&r) & 1) ? 1.0 : -0.5)
                                    : combine_value(&r, mode == 2 ? 0 : mode, special);
                    sf_store_f64(ins[k].data, e, dt, v);
                } else { /* idx, tok: rows in range, now and then one that is not */
                    int64_t v = (int64_t)(sf_test_rng_next(&r) % (uint64_t)R);
                    if (own) v = strcmp(name, "tok") == 0 ? e / K : e;
                    if (bad_index && sf_test_rng_next(&r) % 97 == 0) v = (e & 1) ? R + 3 : -1;
                    sf_store_i64(ins[k].data, e, dt, v);
                }
            }
        }
        char what[64];
        snprintf(what, sizeof what, "combine program %d", i);
        if (!compare_fused_on(f, ins, what, text)) failed++;
        scanfuse_fusion_free(f);
    }
}

/* The row combine kernel itself (sf_cpu_row_combine), every variant (sf_cpu_rows_isa:
 * baseline, AVX2, AVX-512 where the CPU has them), against the generic arithmetic
 * written out here: float32 products, their compensated sum rounded to float32, then
 * to bfloat16.  A kernel that returns true must give exactly those bytes, and its row
 * copies must equal their rows; one must return false where a product or the sum is
 * not finite.  Values aim at every branch: sums on and next to bfloat16 rounding
 * boundaries (few-bit values times weights near powers of two), cancellation,
 * subnormals, zero rows, infinities and NaN, weights whose sum is out of the AVX-512
 * bound's range, huge products; k up to 8 with rows repeated (the AVX-512 kernel then
 * multiplies a row once by its summed weights) or distinct; lengths around the block
 * and chunk sizes; copies and outputs at every 2-byte alignment, with guard bytes. */
static uint16_t kc_bf16(sf_test_rng *r, int mode) {
    uint64_t u = sf_test_rng_next(r);
    double v;
    switch (mode) {
    case 0: v = sf_test_rng_uniform(r) * 4.0 - 2.0; break;
    case 1: v = (double)((int64_t)(u % 64) - 32) / 8.0; break;        /* few bits: ties */
    case 2: v = (sf_test_rng_uniform(r) * 2.0 - 1.0) * 0x1p-130; break; /* subnormals */
    case 3: v = (u & 1) ? 0x1p100 * (1.0 + (double)(u % 7)) : 1.5; break; /* huge */
    case 6: v = ldexp(sf_test_rng_uniform(r) + 1.0, (int)(u % 25) - 12) * ((u & 32) ? -1 : 1);
        break; /* magnitudes far apart: the float sums round a lot */
    default: v = 0.0; break;                                            /* zero rows */
    }
    if (u % 61 == 0) v = (u & 128) ? -0.0 : 0.0;
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    uint16_t h = (uint16_t)(b >> 16); /* truncation: any bfloat16 will do */
    if (mode == 5 && u % 97 == 3) /* infinities and a NaN */ h = (u & 256) ? 0x7F80 : (u & 512) ? 0xFF80 : 0x7FC1;
    return h;
}

static float kc_weight(sf_test_rng *r, int mode) {
    uint64_t u = sf_test_rng_next(r);
    switch (mode) {
    case 0: return (float)(sf_test_rng_uniform(r) * 2.0 - 0.5);
    case 1: { /* near powers of two: sums just on or next to the boundaries */
        static const float ws[] = {1.0f, -0.5f, 0x1p-8f, 3 * 0x1p-9f, 1.0f + 0x1p-20f,
                                   -(1.0f - 0x1p-23f), 0.25f + 0x1p-30f, 2.0f};
        return ws[u % 8];
    }
    case 2: return (u & 1) ? 0x1p-110f : -0x1p-112f; /* W out of the bound's range */
    case 3: return (u & 1) ? 0x1p60f : -0x1p60f;     /* cancelling huge weights */
    default: return (u % 5 == 0) ? INFINITY : 0.5f;
    }
}

static uint16_t kc_ref(const uint16_t *const *rows, const float *w, int k, int64_t i,
                       bool *finite) {
    double hs = 0.0, ls = 0.0;
    bool fin = true;
    for (int j = 0; j < k; j++) {
        uint32_t b = (uint32_t)rows[j][i] << 16;
        float x;
        memcpy(&x, &b, 4);
        float p = x * w[j];
        fin &= isfinite(p) != 0;
        sf_cpu_sum2_add(&hs, &ls, (double)p);
    }
    float y = (float)sf_cpu_sum2_result(hs, ls, SCANFUSE_FLOAT32);
    fin &= isfinite(y) != 0;
    *finite = fin;
    uint32_t u;
    memcpy(&u, &y, 4);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* Crafted cases of the AVX-512 kernel's repeated-row path (every variant runs them):
 * one row repeated k times, so that its products are summed through merged weights. */
static void test_combine_kernel_crafted(void) {
    int saved = sf_cpu_rows_isa;
    for (int isa = 1; isa <= 3; isa++) {
        sf_cpu_rows_isa = isa;
        /* (a) every positive bfloat16 below 2 (one per element) times eight weights 0.7:
         * merged, 5.6 x rounds differently from the sum of the eight products next to
         * many boundaries, in the subnormal range (where the products round by up to
         * 2^-150 each) and above */
        enum { N = 0x3FFF };
        static uint16_t x[N], out[N];
        const uint16_t *rows[8];
        float w[8];
        for (int i = 0; i < N; i++) x[i] = (uint16_t)(i + 1);
        for (int j = 0; j < 8; j++) {
            rows[j] = x;
            w[j] = 0.7f;
        }
        bool ok = sf_cpu_row_combine((const void *const *)rows, SCANFUSE_BFLOAT16, w, 8, N, out,
                                     SCANFUSE_BFLOAT16, false, NULL, false);
        int bad = 0;
        for (int i = 0; i < N && ok; i++) {
            bool fin;
            bad += out[i] != kc_ref(rows, w, 8, i, &fin);
        }
        CHECKF(ok && bad == 0, "combine kernel isa %d: merged weights, %d elements differ (ok %d)",
               isa, bad, (int)ok);
        /* (b) the smallest bfloat16 subnormal (2^-133) times eight weights just above
         * 1/16: each product rounds down to 2^-137, their sum 2^-134 is the midpoint
         * between 0 and 2^-133 and rounds to 0, while x times the merged weight (just
         * above 1/2) rounds to 2^-133: within the rounding of subnormal products, which
         * only the bound's absolute term covers */
        for (int i = 0; i < 64; i++) x[i] = i % 2 ? 0x8001 : 0x0001; /* whole blocks */
        for (int j = 0; j < 8; j++) w[j] = 0x1.000666p-4f;
        ok = sf_cpu_row_combine((const void *const *)rows, SCANFUSE_BFLOAT16, w, 8, 64, out,
                                SCANFUSE_BFLOAT16, false, NULL, false);
        bad = 0;
        for (int i = 0; i < 64 && ok; i++) {
            bool fin;
            bad += out[i] != kc_ref(rows, w, 8, i, &fin);
        }
        CHECKF(ok && bad == 0, "combine kernel isa %d: subnormal products near a tie: %d differ",
               isa, bad);
        /* (c) products that overflow while the merged weights cancel: must refuse */
        for (int i = 0; i < 64; i++) x[i] = 0x7100; /* 2^99 */
        w[0] = 0x1p30f;
        w[1] = -0x1p30f;
        ok = sf_cpu_row_combine((const void *const *)rows, SCANFUSE_BFLOAT16, w, 2, 64, out,
                                SCANFUSE_BFLOAT16, false, NULL, false);
        CHECKF(!ok, "combine kernel isa %d: overflowing products were accepted", isa);
    }
    sf_cpu_rows_isa = saved;
}

static void test_combine_kernel(uint64_t seed) {
    static const int64_t ns[] = {1, 31, 32, 33, 64, 65, 127, 128, 200, 511, 512, 513, 1031, 2100};
    static const int Ks[] = {1, 2, 3, 8};
    sf_test_rng r;
    sf_test_rng_seed(&r, seed);
    int failed = 0, saved = sf_cpu_rows_isa;
    enum { G = 64 }; /* guard bytes around outputs and copies */
    for (int it = 0; it < 3000 && failed < 5; it++) {
        int isa = 1 + it % 3, k = Ks[sf_test_rng_next(&r) % 4];
        int64_t n = ns[sf_test_rng_next(&r) % 14];
        int xmode = (int)(sf_test_rng_next(&r) % 7), wmode = (int)(sf_test_rng_next(&r) % 5);
        if (sf_test_rng_next(&r) % 3) wmode = wmode > 1 ? 0 : wmode; /* mostly ordinary */
        int nsrc = 1 + (int)(sf_test_rng_next(&r) % (uint64_t)k); /* distinct rows */
        bool copies = sf_test_rng_next(&r) % 2, stream = sf_test_rng_next(&r) % 2;
        size_t rb = (size_t)n * 2;
        uint16_t *src = malloc(rb * (size_t)nsrc + 64);
        unsigned char *obuf = malloc(rb + 2 * G + 64), *cbuf = malloc((rb + 2 * G + 64) * (size_t)k);
        if (!src || !obuf || !cbuf) {
            free(src);
            free(obuf);
            free(cbuf);
            CHECK(false);
            return;
        }
        for (size_t e = 0; e < (size_t)n * (size_t)nsrc; e++) src[e] = kc_bf16(&r, xmode);
        const uint16_t *rows[8];
        float w[8];
        void *cp[8];
        for (int j = 0; j < k; j++) {
            rows[j] = src + (size_t)n * (sf_test_rng_next(&r) % (uint64_t)nsrc);
            w[j] = kc_weight(&r, wmode);
        }
        size_t oa = 2 * (sf_test_rng_next(&r) % 32); /* 2-byte alignments within a line */
        memset(obuf, 0xA5, rb + 2 * G + 64);
        memset(cbuf, 0x5A, (rb + 2 * G + 64) * (size_t)k);
        unsigned char *out = obuf + G + oa;
        for (int j = 0; j < k; j++)
            cp[j] = copies && sf_test_rng_next(&r) % 4 ? cbuf + (rb + 2 * G + 64) * (size_t)j + G +
                                                             2 * (sf_test_rng_next(&r) % 32)
                                                       : NULL;
        sf_cpu_rows_isa = isa;
        bool ok = sf_cpu_row_combine((const void *const *)rows, SCANFUSE_BFLOAT16, w, k, n, out,
                                     SCANFUSE_BFLOAT16, stream, copies ? cp : NULL, stream);
        sf_cpu_stream_fence();
        sf_cpu_rows_isa = saved;
        bool allfinite = true, same = true;
        int64_t first = -1;
        for (int64_t i = 0; i < n; i++) {
            bool fin;
            uint16_t want = kc_ref(rows, w, k, i, &fin), got;
            memcpy(&got, out + 2 * i, 2);
            allfinite &= fin;
            if (ok && got != want && first < 0) first = i;
            same &= !ok || got == want;
        }
        CHECKF(same, "combine kernel isa %d k %d n %lld modes %d/%d rows %d: element %lld differs", isa,
               k, (long long)n, xmode, wmode, nsrc, (long long)first);
        CHECKF(allfinite || !ok, "combine kernel isa %d k %d n %lld: a non-finite sum was accepted",
               isa, k, (long long)n);
        /* false only for a non-finite sum, or (AVX-512 bound) products near overflow or
         * weights out of range: never for ordinary finite values */
        CHECKF(ok || !allfinite || xmode == 3 || wmode >= 2,
               "combine kernel isa %d k %d n %lld modes %d/%d: refused finite sums", isa, k,
               (long long)n, xmode, wmode);
        bool guards = true, copied = true;
        for (size_t b = 0; b < G + oa; b++) guards &= obuf[b] == 0xA5;
        for (size_t b = G + oa + rb; b < rb + 2 * G + 64; b++) guards &= obuf[b] == 0xA5;
        for (int j = 0; copies && j < k; j++) {
            unsigned char *base = cbuf + (rb + 2 * G + 64) * (size_t)j;
            if (!cp[j]) {
                for (size_t b = 0; b < rb + 2 * G + 64; b++) guards &= base[b] == 0x5A;
                continue;
            }
            size_t at = (size_t)((unsigned char *)cp[j] - base);
            for (size_t b = 0; b < at; b++) guards &= base[b] == 0x5A;
            for (size_t b = at + rb; b < rb + 2 * G + 64; b++) guards &= base[b] == 0x5A;
            if (ok) copied &= memcmp(cp[j], rows[j], rb) == 0;
        }
        CHECKF(guards, "combine kernel isa %d k %d n %lld: wrote outside its output or copies",
               isa, k, (long long)n);
        CHECKF(copied, "combine kernel isa %d k %d n %lld: a row copy differs", isa, k, (long long)n);
        failed += !same || !guards || !copied;
        free(src);
        free(obuf);
        free(cbuf);
    }
}

/* ------------------------------------------------------------------------------ */
/* 5. topk of a few elements (cpu_topk.c)                                           */
/* ------------------------------------------------------------------------------ */

/* Value i of a topk test row in `mode`: 0 random, 1 few distinct values (ties), 2 the
 * special floats among ordinary ones, 3 all equal, 4 ascending, 5 descending, 6 random
 * with NaN now and then.  Integer dtypes get the integer part (clamped by the store). */
static double topk_value(sf_test_rng *r, int mode, int64_t i, bool fl) {
    static const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5};
    switch (mode) {
    case 1: return (double)sf_test_rng_int(r, -2, 2) * (fl ? 0.5 : 1.0);
    case 2: return fl ? special[sf_test_rng_int(r, 0, 7)] : (double)sf_test_rng_int(r, -1, 1);
    case 3: return 1.0;
    case 4: return fl ? (double)i * 0.25 : (double)(i % 100);
    case 5: return fl ? -(double)i * 0.25 : (double)(100 - i % 100);
    case 6:
        if (fl && sf_test_rng_int(r, 0, 9) == 0) return NAN;
        return fl ? sf_test_rng_uniform(r) * 4.0 - 2.0 : (double)sf_test_rng_int(r, -100, 100);
    default:
        return fl ? sf_test_rng_uniform(r) * 4.0 - 2.0 : (double)sf_test_rng_int(r, -100, 100);
    }
}

static void test_topk(uint64_t seed) {
    static const scanfuse_dtype dts[] = {SCANFUSE_BFLOAT16, SCANFUSE_FLOAT16, SCANFUSE_FLOAT32,
                                         SCANFUSE_INT8, SCANFUSE_INT16, SCANFUSE_INT32,
                                         SCANFUSE_UINT8, SCANFUSE_INT64};
    static const int64_t lens[] = {1, 2, 7, 16, 17, 33, 128, 129, 256, 301};
    static const int64_t ks[] = {1, 2, 3, 8, 31, 32};
    sf_test_rng r;
    sf_test_rng_seed(&r, seed);
    int cases = 0, failed = 0;
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0] && failed < 5; ki++) {
                int64_t n = lens[li], k = ks[ki] < n ? ks[ki] : n, rows = sf_test_rng_int(&r, 1, 5);
                if (ki > 0 && ks[ki - 1] >= n) continue; /* k = n already done */
                int layout = (int)sf_test_rng_int(&r, 0, 2), mode = (int)sf_test_rng_int(&r, 0, 6);
                bool largest = sf_test_rng_int(&r, 0, 1) != 0;
                scanfuse_dtype dt = dts[di];
                const char *dn = scanfuse_dtype_name(dt);
                char text[512];
                /* layout 0: rows along dim 1; 1: along dim 0 (strided); 2: a permute */
                if (layout == 0)
                    snprintf(text, sizeof text, "input x: %s[%lld, %lld]\nv, e = topk(x, %lld, dim=1, "
                             "largest=%s)\noutput v, e\n", dn, (long long)rows, (long long)n,
                             (long long)k, largest ? "true" : "false");
                else if (layout == 1)
                    snprintf(text, sizeof text, "input x: %s[%lld, %lld]\nv, e = topk(x, %lld, dim=0, "
                             "largest=%s)\noutput v, e\n", dn, (long long)n, (long long)rows,
                             (long long)k, largest ? "true" : "false");
                else
                    snprintf(text, sizeof text, "input x: %s[%lld, %lld]\nv, e = topk(permute(x, [1, 0]), "
                             "%lld, dim=1, largest=%s)\noutput v, e\n", dn, (long long)n,
                             (long long)rows, (long long)k, largest ? "true" : "false");
                scanfuse_fusion *f = scanfuse_parse(text, "topk");
                CHECKF(f && scanfuse_fusion_status(f) == SCANFUSE_OK, "topk program: %s\n%s",
                       f ? scanfuse_fusion_error(f) : "NULL", text);
                if (!f || scanfuse_fusion_status(f) != SCANFUSE_OK) {
                    scanfuse_fusion_free(f);
                    failed++;
                    continue;
                }
                tbuf *ins = alloc_inputs(f);
                int64_t numel = (int64_t)(ins[0].bytes / scanfuse_dtype_size(dt));
                bool fl = sf_dtype_is_float(dt);
                for (int64_t i = 0; i < numel; i++) {
                    /* position along the sorted dim, for the sorted modes */
                    int64_t at = layout == 0 ? i % n : i / rows;
                    double v = topk_value(&r, mode, at, fl);
                    if (dt == SCANFUSE_BOOL) sf_store_i64(ins[0].data, i, dt, v > 0.0);
                    else if (fl) sf_store_f64(ins[0].data, i, dt, v);
                    else sf_store_i64(ins[0].data, i, dt, (int64_t)v);
                }
                char e0[SF_ERR_LEN] = "", e1[SF_ERR_LEN] = "", e2[SF_ERR_LEN] = "";
                scanfuse_status s0, s1, s2;
                /* cpu_topk.c, with and without its AVX-512 loop (alternating cases) */
                sf_cpu_topk_fast = cases % 2 ? 2 : 1;
                tbuf *fast = run_fusion(f, ins, 0, 1, &s0, e0, sizeof e0);
                sf_cpu_topk_fast = 0;
                tbuf *slow = run_fusion(f, ins, 0, 1, &s1, e1, sizeof e1);
                sf_cpu_topk_fast = 1;
                test_device = SCANFUSE_DEVICE_REFERENCE;
                tbuf *ref = run_fusion(f, ins, 0, 1, &s2, e2, sizeof e2);
                test_device = SCANFUSE_DEVICE_CPU;
                bool ok = fast && slow && ref && s0 == SCANFUSE_OK && s1 == SCANFUSE_OK &&
                          s2 == SCANFUSE_OK;
                CHECKF(ok, "topk: runs failed (%s / %s / %s)\n%s", e0, e1, e2, text);
                if (ok) {
                    bool same_v = memcmp(fast[0].data, slow[0].data, fast[0].bytes) == 0;
                    bool same_i = memcmp(fast[1].data, slow[1].data, fast[1].bytes) == 0;
                    bool ref_i = memcmp(fast[1].data, ref[1].data, fast[1].bytes) == 0;
                    CHECKF(same_v && same_i && ref_i,
                           "topk (mode %d): values %s, indices %s the generic path, indices %s "
                           "the reference\n%s", mode, same_v ? "match" : "DIFFER from",
                           same_i ? "match" : "DIFFER from", ref_i ? "match" : "DIFFER from", text);
                    if (!(same_v && same_i && ref_i)) failed++;
                }
                if (fast) tbufs_free(fast, 2);
                if (slow) tbufs_free(slow, 2);
                if (ref) tbufs_free(ref, 2);
                /* fused, 1/2/3 threads, against op by op (frees ins) */
                if (!compare_fused_on(f, ins, "topk fused", text)) failed++;
                scanfuse_fusion_free(f);
                cases++;
            }
    printf("topk cases: %d\n", cases);
}

int main(void) {
    test_structure();
    test_moe_targets();
    test_golden();
    test_random(20251201);
    test_random_index(31337);
    test_wide_pointwise(606);
    /* again with tiny tiles: many tiles per kernel, chunks shorter than rows, every
     * worker busy */
    sf_cpu_fused_tile_elems = 96;
    test_random(4242);
    test_random_index(7);
    test_golden();
    test_wide_pointwise(707);
    test_combine(99);
    sf_cpu_fused_tile_elems = 0;
    test_combine(2024);
    /* streaming stores everywhere they are allowed (the same bytes) */
    int64_t nt = sf_cpu_rows_nt_min_bytes;
    sf_cpu_rows_nt_min_bytes = 0;
    test_combine(5);
    test_random_index(11);
    sf_cpu_rows_nt_min_bytes = nt;
    test_combine_kernel(77);
    test_combine_kernel_crafted();
    /* the op-level combine again with the baseline and AVX2 kernels */
    for (int isa = 1; isa <= 2; isa++) {
        sf_cpu_rows_isa = isa;
        test_combine(300 + (uint64_t)isa);
    }
    sf_cpu_rows_isa = 0;
    test_topk(8080);
    return sf_test_finish("test_segment");
}
