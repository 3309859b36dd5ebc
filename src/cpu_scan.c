/* cpu_scan.c — STUB: to be replaced by its owner. */
#include "sf.h"
typedef int sf_cpu_scan_placeholder;
