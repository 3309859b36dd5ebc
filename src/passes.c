/* passes.c — STUB: to be replaced by its owner. */
#include "sf.h"
scanfuse_status sf_run_passes(scanfuse_fusion **f, const scanfuse_options *o, char *msg, size_t msglen) { (void)f;(void)o;(void)msg;(void)msglen; return SCANFUSE_OK; }
scanfuse_status sf_pass_dce(scanfuse_fusion **f, char *msg, size_t msglen) { (void)f;(void)msg;(void)msglen; return SCANFUSE_OK; }
