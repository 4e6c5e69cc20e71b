/* srv_textbuf (textbuf.h). */
#include "server/textbuf.h"
#include <stdarg.h>
#include <stdio.h>
#include "core/alloc.h"

void srv_tb_printf(srv_textbuf *t, const char *fmt, ...) {
    if (t->fail) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        const int n = vsnprintf(t->b ? t->b + t->len : NULL, t->b ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) { t->fail = true; return; }
        if (t->b && (size_t)n < t->cap - t->len) { t->len += (size_t)n; return; }
        size_t nc = t->cap ? t->cap * 2 : 4096;
        while (nc < t->len + (size_t)n + 1) nc *= 2;
        char *nb = mllm_realloc(t->b, nc);
        if (!nb) { t->fail = true; return; }
        t->b = nb;
        t->cap = nc;
    }
}
