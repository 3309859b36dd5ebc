/*
 * optable.c — the op table instance generated from ops.def, and name lookup.
 */
#include "sf.h"

#include <string.h>

const sf_op_info sf_op_table[SF_NUM_OPS] = {
#define X(name, kind, nin, nout, rule, flags, sig) {#name, kind, nin, nout, rule, flags, sig},
#include "ops.def"
#undef X
};

sf_op sf_op_lookup(const char *name) {
    if (!name) return SF_NUM_OPS;
    for (int i = 0; i < SF_NUM_OPS; i++)
        if (strcmp(sf_op_table[i].name, name) == 0) return (sf_op)i;
    return SF_NUM_OPS;
}
