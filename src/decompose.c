/* decompose.c — STUB: to be replaced by its owner. */
#include "sf.h"
scanfuse_status sf_pass_decompose_cumsum(scanfuse_fusion **f, scanfuse_cumsum_mode mode, char *msg, size_t msglen) { (void)f;(void)mode; sf_msg(msg,msglen,"stub"); return SCANFUSE_ERROR_UNSUPPORTED; }
