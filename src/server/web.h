/* The chat page's files (src/server/web), embedded at build time by
   cmake/embed_web.cmake, and the endpoint serving them (web.c). */
#ifndef MLLM_SERVER_WEB_H
#define MLLM_SERVER_WEB_H
#include <stddef.h>

typedef struct {
    const char *path;          /* "/chat.html", "/chat.js", ... */
    const char *content_type;
    const unsigned char *data; /* (len) */
    size_t len;
} srv_asset;

extern const srv_asset srv_web_assets[];
extern const size_t srv_web_n_assets;

#endif
