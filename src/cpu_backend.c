/* cpu_backend.c — STUB: to be replaced by its owner. */
#include "sf.h"
static scanfuse_status sup(const scanfuse_fusion *f, int node, char *msg, size_t msglen) { (void)f;(void)node; sf_msg(msg,msglen,"stub"); return SCANFUSE_ERROR_UNSUPPORTED; }
const sf_backend sf_backend_cpu = {"cpu", sup, NULL, NULL, NULL};
