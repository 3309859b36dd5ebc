/* cpu_pointwise.c — STUB: to be replaced by its owner. */
#include "sf.h"
typedef int sf_cpu_pointwise_placeholder;
