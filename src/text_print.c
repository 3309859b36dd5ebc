/* text_print.c — STUB: to be replaced by its owner. */
#include "sf.h"
char *scanfuse_print(const scanfuse_fusion *f) { (void)f; return NULL; }
void sf_print_call(const scanfuse_fusion *f, const sf_node *n, sf_buf *out) { (void)f; sf_buf_puts(out, sf_op_table[n->op].name); }
