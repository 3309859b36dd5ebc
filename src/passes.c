/*
 * passes.c — the pass pipeline (sf_run_passes) and dead-code elimination (sf_pass_dce).
 *
 * The pipeline is one static table of passes, run in order:
 *     verify     checks the fusion as built (no rewrite);
 *     decompose  replaces cumsum by matmul or masked-sum subgraphs (decompose.c); a
 *                no-op in SCANFUSE_CUMSUM_NATIVE mode;
 *     dce        drops nodes none of whose results reach an output.
 * The verifier runs again after every rewriting pass, so a pass that breaks an IR
 * invariant is named in the message ("after pass decompose: verify: node 3 ...").
 * options->dump_ir naming a pass (or "all") prints "# IR after PASS" and the fusion's
 * text form to stderr after that pass; a name that is no pass here is ignored (later
 * stages of the compiler may own it).
 *
 * Every rewriting pass follows one pattern (and skips it when it has nothing to do, so
 * value ids, and the "v<id>" names printed for unnamed values, stay as they were): it builds a *new* fusion through the
 * builder (scanfuse_input, sf_emit, scanfuse_output), so the result satisfies the IR
 * invariants by construction, then replaces *f and frees the old one.  On failure *f
 * is left as it was and the message says which pass failed.
 */
#include "sf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef scanfuse_status (*sf_pass_fn)(scanfuse_fusion **f, const scanfuse_options *o,
                                      char *msg, size_t msglen);

static scanfuse_status pass_verify(scanfuse_fusion **f, const scanfuse_options *o, char *msg,
                                   size_t msglen) {
    (void)o;
    return sf_verify(*f, msg, msglen);
}

static scanfuse_status pass_decompose(scanfuse_fusion **f, const scanfuse_options *o,
                                      char *msg, size_t msglen) {
    if (o->cumsum_mode == SCANFUSE_CUMSUM_NATIVE) return SCANFUSE_OK;
    return sf_pass_decompose_cumsum(f, o->cumsum_mode, msg, msglen);
}

static scanfuse_status pass_dce(scanfuse_fusion **f, const scanfuse_options *o, char *msg,
                                size_t msglen) {
    (void)o;
    return sf_pass_dce(f, msg, msglen);
}

static const struct {
    const char *name;
    sf_pass_fn run;
    bool rewrites; /* verify again afterwards */
} sf_passes[] = {
    {"verify", pass_verify, false},
    {"decompose", pass_decompose, true},
    {"dce", pass_dce, true},
};

static void dump_ir(const scanfuse_fusion *f, const char *pass) {
    char *text = scanfuse_print(f);
    fprintf(stderr, "# IR after %s\n%s", pass, text ? text : "# (the IR cannot be printed)\n");
    if (text && text[0] && text[strlen(text) - 1] != '\n') fputc('\n', stderr);
    fflush(stderr);
    scanfuse_free(text);
}

scanfuse_status sf_run_passes(scanfuse_fusion **f, const scanfuse_options *options, char *msg,
                              size_t msglen) {
    if (!f || !*f) {
        sf_msg(msg, msglen, "passes: no fusion");
        return SCANFUSE_ERROR_STATE;
    }
    if ((*f)->status != SCANFUSE_OK) {
        sf_msg(msg, msglen, "%s", (*f)->error);
        return SCANFUSE_ERROR_STATE;
    }
    scanfuse_options defaults;
    if (!options) {
        scanfuse_options_init(&defaults);
        options = &defaults;
    }
    if (options->cumsum_mode != SCANFUSE_CUMSUM_NATIVE &&
        options->cumsum_mode != SCANFUSE_CUMSUM_MATMUL &&
        options->cumsum_mode != SCANFUSE_CUMSUM_MASKED_SUM) {
        sf_msg(msg, msglen, "passes: invalid cumsum_mode %d", (int)options->cumsum_mode);
        return SCANFUSE_ERROR_ARGUMENT;
    }
    const char *dump = options->dump_ir;
    char inner[SF_ERR_LEN];
    for (size_t i = 0; i < sizeof sf_passes / sizeof sf_passes[0]; i++) {
        const char *name = sf_passes[i].name;
        inner[0] = '\0';
        scanfuse_status st = sf_passes[i].run(f, options, inner, sizeof inner);
        if (st != SCANFUSE_OK) {
            if (strcmp(name, "verify") == 0)
                sf_msg(msg, msglen, "%s", inner);
            else
                sf_msg(msg, msglen, "pass %s: %s", name, inner);
            return st;
        }
        if (sf_passes[i].rewrites) {
            inner[0] = '\0';
            st = sf_verify(*f, inner, sizeof inner);
            if (st != SCANFUSE_OK) {
                sf_msg(msg, msglen, "after pass %s: %s", name, inner);
                return st;
            }
        }
        if (dump && (strcmp(dump, "all") == 0 || strcmp(dump, name) == 0)) dump_ir(*f, name);
    }
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Rebuilding: every rewriting pass copies the fusion into a new one through the     */
/* builder (so the result is re-inferred and canonical).  These pieces are shared.   */
/* ------------------------------------------------------------------------------ */

scanfuse_status sf_rebuild_error(const char *pass, scanfuse_fusion *nf, const char *what,
                                 char *msg, size_t msglen) {
    scanfuse_status st = nf ? scanfuse_fusion_status(nf) : SCANFUSE_ERROR_MEMORY;
    if (st == SCANFUSE_OK) st = SCANFUSE_ERROR_STATE;
    sf_msg(msg, msglen, "%s: %s: %s", pass, what, nf ? scanfuse_fusion_error(nf) : "out of memory");
    return st;
}

scanfuse_status sf_rebuild_inputs(const scanfuse_fusion *f, scanfuse_fusion *nf, int32_t *map,
                                  const char *pass, char *msg, size_t msglen) {
    for (int i = 0; i < f->ninputs; i++) {
        const sf_value *v = &f->values[f->inputs[i]];
        scanfuse_value nid = scanfuse_input(nf, v->name, v->dtype, v->ndim, v->shape);
        if (nid == SCANFUSE_NO_VALUE) return sf_rebuild_error(pass, nf, "input", msg, msglen);
        map[f->inputs[i]] = nid;
    }
    return SCANFUSE_OK;
}

scanfuse_status sf_rebuild_names_outputs(const scanfuse_fusion *f, scanfuse_fusion *nf,
                                         const int32_t *map, const char *pass, char *msg,
                                         size_t msglen) {
    for (int32_t id = 0; id < f->nvalues; id++) {
        const sf_value *v = &f->values[id];
        if (!v->name || map[id] < 0) continue;
        const char *have = nf->values[map[id]].name;
        if (have && strcmp(have, v->name) == 0) continue;
        if (sf_set_value_name(nf, map[id], v->name) != SCANFUSE_OK)
            return sf_rebuild_error(pass, nf, "name", msg, msglen);
    }
    for (int i = 0; i < f->noutputs; i++)
        if (scanfuse_output(nf, map[f->outputs[i]], f->output_names[i]) != SCANFUSE_OK)
            return sf_rebuild_error(pass, nf, "output", msg, msglen);
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Dead-code elimination                                                          */
/* ------------------------------------------------------------------------------ */

scanfuse_status sf_pass_dce(scanfuse_fusion **pf, char *msg, size_t msglen) {
    if (!pf || !*pf) {
        sf_msg(msg, msglen, "dce: no fusion");
        return SCANFUSE_ERROR_STATE;
    }
    const scanfuse_fusion *f = *pf;
    if (f->status != SCANFUSE_OK) {
        sf_msg(msg, msglen, "dce: %s", f->error);
        return SCANFUSE_ERROR_STATE;
    }
    size_t nv = (size_t)(f->nvalues > 0 ? f->nvalues : 1);
    unsigned char *live = sf_calloc(nv, 1);
    unsigned char *keep = sf_calloc((size_t)(f->nnodes > 0 ? f->nnodes : 1), 1);
    int32_t *map = sf_malloc(nv * sizeof *map);
    scanfuse_fusion *nf = scanfuse_fusion_new();
    scanfuse_status st = SCANFUSE_OK;
    bool rebuilt = false, all_kept = true;
    if (!live || !keep || !map || !nf) {
        sf_msg(msg, msglen, "dce: out of memory");
        st = SCANFUSE_ERROR_MEMORY;
        goto done;
    }
    for (int32_t id = 0; id < f->nvalues; id++) map[id] = -1;

    /* Liveness, backwards: outputs are live; a node with a live result keeps all of its
     * results and makes its inputs live. */
    for (int i = 0; i < f->noutputs; i++) live[f->outputs[i]] = 1;
    for (int i = f->nnodes - 1; i >= 0; i--) {
        const sf_node *n = &f->nodes[i];
        for (int k = 0; k < n->nout; k++)
            if (live[n->out[k]]) keep[i] = 1;
        if (!keep[i]) continue;
        for (int k = 0; k < n->nin; k++) live[n->in[k]] = 1;
    }
    for (int i = 0; i < f->nnodes && all_kept; i++) all_kept = keep[i];
    if (all_kept) goto done; /* nothing to remove: keep the fusion (and its value ids) */

    /* Rebuild: inputs in order, kept nodes in order, names, outputs. */
    st = sf_rebuild_inputs(f, nf, map, "dce", msg, msglen);
    for (int i = 0; i < f->nnodes && st == SCANFUSE_OK; i++) {
        if (!keep[i]) continue;
        const sf_node *n = &f->nodes[i];
        int32_t in[SF_MAX_IN], out[SF_MAX_OUT];
        for (int k = 0; k < n->nin; k++) {
            in[k] = map[n->in[k]];
            SF_ASSERT(in[k] >= 0);
        }
        if (sf_emit(nf, n->op, in, n->nin, &n->a, out) != SCANFUSE_OK) {
            char what[48];
            snprintf(what, sizeof what, "node %d (%s)", i, sf_op_table[n->op].name);
            st = sf_rebuild_error("dce", nf, what, msg, msglen);
            break;
        }
        for (int k = 0; k < n->nout; k++) map[n->out[k]] = out[k];
    }
    if (st == SCANFUSE_OK) st = sf_rebuild_names_outputs(f, nf, map, "dce", msg, msglen);
    rebuilt = st == SCANFUSE_OK;
done:
    free(keep);
    free(live);
    free(map);
    if (!rebuilt) {
        scanfuse_fusion_free(nf);
        return st;
    }
    scanfuse_fusion_free(*pf);
    *pf = nf;
    return SCANFUSE_OK;
}
