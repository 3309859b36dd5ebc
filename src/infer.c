/* infer.c — STUB: to be replaced by its owner. */
#include "sf.h"
scanfuse_status sf_infer(const scanfuse_fusion *f, sf_op op, const int32_t *in, int nin, const sf_attrs *a, sf_attrs *canon, sf_value *res, char *msg, size_t msglen) { (void)f;(void)op;(void)in;(void)nin;(void)a;(void)canon;(void)res; sf_msg(msg,msglen,"stub"); return SCANFUSE_ERROR_UNSUPPORTED; }
scanfuse_dtype sf_result_type(const scanfuse_fusion *f, const int32_t *in, int nin) { (void)f;(void)in;(void)nin; return SCANFUSE_DTYPE_NONE; }
bool sf_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out) { (void)na;(void)a;(void)nb;(void)b;(void)nout;(void)out; return false; }
