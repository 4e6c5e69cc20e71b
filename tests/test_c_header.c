/* Proves the public header is plain C99 with -pedantic: it only includes it. */
#include <mllm/mllm.h>
int mllm_test_c_header_dummy(void);
int mllm_test_c_header_dummy(void) { return MLLM_OK; }
