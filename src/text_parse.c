/* text_parse.c — STUB: to be replaced by its owner. */
#include "sf.h"
scanfuse_fusion *scanfuse_parse(const char *text, const char *filename) { (void)text;(void)filename; scanfuse_fusion *f = scanfuse_fusion_new(); if (f) sf_fail(f, SCANFUSE_ERROR_UNSUPPORTED, "parser not written"); return f; }
scanfuse_fusion *scanfuse_parse_file(const char *path) { return scanfuse_parse("", path); }
