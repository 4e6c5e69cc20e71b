/* GET / (the chat page), /chat.js, /chat.css: files embedded in the binary
   (web.h), served without the API key (a browser cannot send one when it
   opens a page; the page asks for it and sends it to the API). */
#include <string.h>
#include "server/internal.h"
#include "server/web.h"

/* The page runs only its own files: no inline script or style, no other
   origin, no framing (clickjacking), no form posts; connect-src 'self' is
   all the API calls need. The icon is an empty data: URL, so browsers do
   not ask for /favicon.ico. */
#define SRV_PAGE_CSP                                                                                     \
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src data:; "      \
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const srv_asset *asset_find(const char *url) {
    const char *path = strcmp(url, "/") ? url : "/chat.html";
    for (size_t i = 0; i < srv_web_n_assets; i++)
        if (!strcmp(srv_web_assets[i].path, path)) return &srv_web_assets[i];
    return NULL;
}

enum MHD_Result srv_ep_page(mllm_server *S, srv_req *r) {
    const srv_asset *a = asset_find(r->url);
    if (!a) return srv_reply_error(S, r, 404, "not_found", "no such page: %.100s", r->url);
    /* The bytes are static: handed to libmicrohttpd without a copy. */
    struct MHD_Response *resp = MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->content_type);
    MHD_add_response_header(resp, "Content-Security-Policy", SRV_PAGE_CSP);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    /* Revalidated each time: a new binary's page replaces the old one. */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    srv_add_cors(r, resp);
    enum MHD_Result ret = MHD_queue_response(r->conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    if (ret == MHD_YES) {
        r->answered = true;
        r->status = MHD_HTTP_OK;
        srv_metrics_response(&S->metrics, MHD_HTTP_OK);
    }
    return ret;
}
