#include "runtime/think_filter.h"
#include <string.h>

/* strstr for a buffer that is not NUL-terminated at len. */
static const char *find(const char *s, size_t n, const char *tag) {
    size_t tl = strlen(tag);
    for (size_t i = 0; i + tl <= n; i++)
        if (!memcmp(s + i, tag, tl)) return s + i;
    return NULL;
}

void mllm_think_filter_feed(mllm_think_filter *f, const char *reply, size_t len, int final,
                            mllm_text_sink sink, void *user) {
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
