/* Fuzz target: the tool-call parser (src/server/toolcall.c), which reads a
   model's answer (untrusted: the model writes whatever it writes, and a
   prompt can steer it). Input: a mode byte (bit 0: Llama style, else
   Hermes; bits 1-2: max_calls 1..4), then the answer. Checked: every
   complete call has a name and arguments that are valid JSON; the
   content never holds more bytes than the answer; the same at a few cut
   points of a stream. (That a stream's view only grows holds for answers
   whose calls are well-formed, test_server_toolcall; a call that turns out
   malformed becomes text again.) */
#include "fuzz_util.h"
#include <cjson/cJSON.h>
#include <string.h>
#include "server/toolcall.h"

static void check_result(const srv_tc_result *r, size_t n) {
    FZ_CHECK(r->content && strlen(r->content) <= r->content_len && r->content_len <= n);
    for (int i = 0; i < r->n_calls; i++) {
        const srv_tc_call *c = &r->calls[i];
        FZ_CHECK(c->args && c->args_len <= n + 2);
        if (!c->complete) continue;
        FZ_CHECK(c->name != NULL);
        cJSON *v = cJSON_ParseWithLength(c->args, c->args_len);
        FZ_CHECK(v != NULL);
        cJSON_Delete(v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    srv_tc_style style = data[0] & 1 ? SRV_TC_LLAMA : SRV_TC_HERMES;
    int max_calls = 1 + ((data[0] >> 1) & 3);
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    srv_tc_result fin;
    if (srv_tc_parse(style, s, n, true, max_calls, &fin) != 0) return 0;
    check_result(&fin, n);
    for (int q = 1; q <= 4; q++) {
        srv_tc_result r;
        if (srv_tc_parse(style, s, n * (size_t)q / 4, false, max_calls, &r) != 0) break;
        check_result(&r, n);
        srv_tc_result_free(&r);
    }
    srv_tc_result_free(&fin);
    return 0;
}
