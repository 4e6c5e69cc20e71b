/* Hides (or passes) the <think>...</think> part of a streamed reply. The
   reply arrives in pieces that may split a tag anywhere; text that could be
   the start of a tag is held back until it is known. */
#ifndef MLLM_RUNTIME_THINK_FILTER_H
#define MLLM_RUNTIME_THINK_FILTER_H
#include <stddef.h>

typedef struct {
    int show;      /* 1: pass the thinking part through (tags included) */
    int in_think;  /* inside <think>...</think> */
    size_t shown;  /* bytes of the reply already consumed */
} mllm_think_filter;

typedef void (*mllm_text_sink)(void *user, const char *text, size_t len);

/* reply[0..len) is the whole reply so far (it only grows). Emits the newly
   visible bytes to sink. final: the reply is complete, flush held bytes. */
void mllm_think_filter_feed(mllm_think_filter *f, const char *reply, size_t len, int final,
                            mllm_text_sink sink, void *user);

#endif
