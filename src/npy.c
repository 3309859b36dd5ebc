/* npy.c — STUB: to be replaced by its owner. */
#include "sf.h"
void sf_array_free(sf_array *a) { (void)a; }
scanfuse_status sf_npy_read(const char *path, sf_array *out, char *msg, size_t msglen) { (void)path;(void)out; sf_msg(msg,msglen,"stub"); return SCANFUSE_ERROR_IO; }
scanfuse_status sf_npy_parse(const void *bytes, size_t len, sf_array *out, char *msg, size_t msglen) { (void)bytes;(void)len;(void)out; sf_msg(msg,msglen,"stub"); return SCANFUSE_ERROR_IO; }
scanfuse_status sf_npy_write(const char *path, const sf_view *v, char *msg, size_t msglen) { (void)path;(void)v; sf_msg(msg,msglen,"stub"); return SCANFUSE_ERROR_IO; }
