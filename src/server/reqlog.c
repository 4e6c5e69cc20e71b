/* The request log: one line per request on stderr, written when its
   response is done (a stream when it ends), e.g.
       mllm serve: POST /v1/chat/completions 200 prompt=37 gen=12 412 ms
   The line is built in one buffer and written with one write(2), so lines
   from concurrent connection threads never interleave. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "server/internal.h"

#define REQLOG_URL_MAX 200   /* bytes of the path shown; longer ones end in "..." */
#define REQLOG_METHOD_MAX 16

/* Copies client bytes as printable ASCII: libmicrohttpd has already
   unescaped the path, so "%0A" arrives as a newline that would forge a log
   line (and ESC would drive the terminal); such bytes are escaped again. */
static size_t put_clean(char *out, size_t cap, const char *s, size_t max) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0, i = 0;
    for (; s && s[i] && i < max && o + 4 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c > 0x20 && c < 0x7f && c != '%') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    if (s && s[i] && o + 4 <= cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = 0;
    return o;
}

void srv_log_request(const srv_req *r, bool completed) {
    char method[REQLOG_METHOD_MAX * 3 + 8], url[REQLOG_URL_MAX * 3 + 8], status[16] = "-", tokens[64] = "";
    char line[sizeof method + sizeof url + 160];
    put_clean(method, sizeof method, r->method, REQLOG_METHOD_MAX);
    put_clean(url, sizeof url, r->url, REQLOG_URL_MAX);
    if (r->status) snprintf(status, sizeof status, "%u", r->status);
    if (r->job) {
        int n_gen = 0; /* over every choice (n), as usage counts them */
        for (srv_job *c = r->job; c; c = c->next) {
            pthread_mutex_lock(&c->mu);
            n_gen += c->n_gen;
            pthread_mutex_unlock(&c->mu);
        }
        snprintf(tokens, sizeof tokens, " prompt=%zu gen=%d", r->job->n_ids, n_gen);
    }
    double ms = mllm_clock_mono_ms() - r->t0;
    int n = snprintf(line, sizeof line, "mllm serve: %s %s %s%s %.0f ms%s\n", method, url, status, tokens,
                     ms > 0 ? ms : 0.0, completed ? "" : " (connection closed before the end)");
    if (n <= 0) return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w; /* nowhere left to report a failing stderr */
}
