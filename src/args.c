/* args.c — STUB: to be replaced by its owner. */
#include "sf.h"
const sf_signature *sf_op_signature(sf_op op) { (void)op; return NULL; }
scanfuse_status sf_bind_args(scanfuse_fusion *f, sf_op op, const sf_arg *args, int nargs, int32_t *in, int *nin, sf_attrs *attrs, char *msg, size_t msglen, int *bad_arg) { (void)f;(void)op;(void)args;(void)nargs;(void)in;(void)nin;(void)attrs;(void)bad_arg; sf_msg(msg,msglen,"stub"); return SCANFUSE_ERROR_UNSUPPORTED; }
scanfuse_status sf_parse_attr_text(const char *text, sf_arg *args, int maxargs, int *nargs, char *buf, size_t buflen, char *msg, size_t msglen) { (void)text;(void)args;(void)maxargs;(void)nargs;(void)buf;(void)buflen; sf_msg(msg,msglen,"stub"); return SCANFUSE_ERROR_UNSUPPORTED; }
