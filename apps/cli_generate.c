/* Generation for run and chat: llama.cpp's conventions (-n -1, --seed -1)
   and what happens when the context fills (stop cleanly, or shift it). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"

uint64_t cli_random_seed(void) {
    uint64_t s = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &s, sizeof s) != (ssize_t)sizeof s) s = 0;
        close(fd);
    }
    if (!s) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid() << 32;
    }
    return s & 0x7fffffffffffffffull; /* printable as a non-negative --seed */
}

typedef struct {
    mllm_on_token cb;
    void *user;
    int32_t last;  /* the last token handed out (not yet evaluated when the context filled) */
    int n;         /* tokens handed out in this round */
} wrap_ctx;

static int wrap(void *user, int32_t id, const char *piece, size_t len) {
    wrap_ctx *w = user;
    if (id >= 0) {
        w->last = id;
        w->n++;
    }
    return w->cb ? w->cb(w->user, id, piece, len) : 0;
}

mllm_status cli_generate(mllm_session *s, const mllm_sampling *sp0, const cli_gen_opts *o, mllm_on_token cb,
                         void *user, cli_gen_result *res) {
    memset(res, 0, sizeof *res);
    mllm_sampling sp = *sp0;
    long remaining = o->max_tokens < 0 ? LONG_MAX : o->max_tokens;
    mllm_status st = MLLM_OK;
    for (;;) {
        wrap_ctx w = {cb, user, -1, 0};
        sp.max_tokens = remaining > INT_MAX ? INT_MAX : (int)remaining;
        sp.seed = sp0->seed + (uint64_t)res->n_shifts; /* a shift must not replay the same random draws */
        st = mllm_generate_ids(s, NULL, 0, &sp, wrap, &w);
        res->n_gen += w.n;
        remaining -= w.n;
        if (st != MLLM_ERR_CONTEXT_FULL) break;
        if (!o->context_shift || remaining <= 0 || w.last < 0) {
            res->context_full = true;
            st = MLLM_OK;
            break;
        }
        st = mllm_session_shift(s, o->n_keep < 0 ? 0 : (size_t)o->n_keep, w.last);
        if (st != MLLM_OK) break;
        res->n_shifts++;
    }
    return st;
}
