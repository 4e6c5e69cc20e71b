/* A growing text buffer for responses built piece by piece (/metrics,
   srt/vtt transcripts). */
#ifndef MLLM_SERVER_TEXTBUF_H
#define MLLM_SERVER_TEXTBUF_H
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *b;       /* NUL-terminated once anything was written; mllm_free it */
    size_t len, cap;
    bool fail;     /* out of memory (or a bad format): later writes do nothing */
} srv_textbuf;

/* Appends printf-formatted text; on failure sets fail and keeps what was there. */
void srv_tb_printf(srv_textbuf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
