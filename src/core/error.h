/* Thread-local error detail behind mllm_last_error(), and the status codes. */
#ifndef MLLM_CORE_ERROR_H
#define MLLM_CORE_ERROR_H
#include <mllm/mllm.h>

/* Records a printf-style message for mllm_last_error() and returns `st`,
   so readers can write `return mllm_err(MLLM_ERR_FORMAT, "%s: ...", path);`. */
mllm_status mllm_err(mllm_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mllm_err_clear(void);

#endif
