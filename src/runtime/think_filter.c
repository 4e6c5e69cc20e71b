/* The public mllm_think_filter (mllm.h): hides (or passes) the
   <think>...</think> part of a streamed reply, holding back text that
   could be the start of a tag until it is known. */
#include <string.h>
#include <mllm/mllm.h>
#include "core/alloc.h"
#include "core/error.h"

struct mllm_think_filter {
    int show;      /* 1: pass the thinking part through (tags included) */
    int in_think;  /* inside <think>...</think> */
    size_t shown;  /* bytes of the reply already consumed */
};

/* strstr for a buffer that is not NUL-terminated at len. */
static const char *find(const char *s, size_t n, const char *tag) {
    size_t tl = strlen(tag);
    for (size_t i = 0; i + tl <= n; i++)
        if (!memcmp(s + i, tag, tl)) return s + i;
    return NULL;
}

void mllm_think_filter_feed(mllm_think_filter *f, const char *reply, size_t len, int final,
                            mllm_text_sink sink, void *user) {
    if (!f) return;
    while (f->shown < len) {
        const char *rest = reply + f->shown;
        size_t avail = len - f->shown;
        const char *tag = f->in_think ? "</think>" : "<think>";
        size_t tl = strlen(tag);
        const char *hit = find(rest, avail, tag);
        size_t upto = hit ? (size_t)(hit - rest) : avail;
        if (!hit && !final) /* hold back a suffix that may be the start of the tag */
            for (size_t k = tl - 1; k > 0; k--)
                if (upto >= k && !memcmp(rest + upto - k, tag, k)) { upto -= k; break; }
        if (upto && (!f->in_think || f->show)) sink(user, rest, upto);
        f->shown += upto;
        if (!hit) break;
        if (f->show) sink(user, tag, tl);
        f->shown += tl;
        f->in_think = !f->in_think;
    }
}

mllm_status mllm_think_filter_new(int show, mllm_think_filter **out) {
    if (!out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_think_filter_new: out is NULL");
    if (!(*out = mllm_calloc(1, sizeof **out))) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    (*out)->show = show != 0;
    return MLLM_OK;
}

void mllm_think_filter_free(mllm_think_filter *f) { mllm_free(f); }
