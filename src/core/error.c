#include "core/error.h"
#include <stdarg.h>
#include <stdio.h>

static _Thread_local char g_last_error[1024];

mllm_status mllm_err(mllm_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_last_error, sizeof g_last_error, fmt, ap);
    va_end(ap);
    return st;
}

void mllm_err_clear(void) { g_last_error[0] = 0; }

MLLM_API const char *mllm_last_error(void) { return g_last_error; }

MLLM_API const char *mllm_status_str(mllm_status s) {
    switch (s) {
    case MLLM_OK: return "ok";
    case MLLM_ERR_INVALID_ARG: return "invalid argument";
    case MLLM_ERR_NOMEM: return "out of memory";
    case MLLM_ERR_IO: return "i/o error";
    case MLLM_ERR_FORMAT: return "bad file format";
    case MLLM_ERR_UNSUPPORTED: return "unsupported";
    case MLLM_ERR_CONTEXT_FULL: return "context full";
    case MLLM_ERR_CANCELLED: return "cancelled";
    case MLLM_ERR_BUFFER_TOO_SMALL: return "buffer too small";
    }
    return "unknown status";
}
