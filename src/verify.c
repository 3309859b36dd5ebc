/* verify.c — STUB: to be replaced by its owner. */
#include "sf.h"
scanfuse_status sf_verify(const scanfuse_fusion *f, char *msg, size_t msglen) { (void)f;(void)msg;(void)msglen; return SCANFUSE_OK; }
