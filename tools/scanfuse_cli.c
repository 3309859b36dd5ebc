/* scanfuse CLI — STUB */
#include "scanfuse.h"
int main(void) { return 1; }
