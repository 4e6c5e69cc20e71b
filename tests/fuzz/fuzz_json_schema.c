/* Fuzz target: the JSON Schema -> GBNF compiler (src/runtime/json_schema*).
   Schemas come from HTTP clients (response_format json_schema). Input: the
   schema's JSON text. A schema that compiles gives GBNF that the grammar
   parser accepts (only a recursion that never consumes input or never
   ends may still be refused, with a message). */
#include "fuzz_util.h"
#include "core/alloc.h"
#include "runtime/grammar.h"
#include "runtime/grammar_match.h"
#include "runtime/json_schema.h"
#include <cjson/cJSON.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
    if (!doc) return 0;
    char *gbnf = NULL;
    size_t len = 0;
    mllm_status st = mllm_jsg_compile(doc, &gbnf, &len);
    fz_check_status(st);
    if (st == MLLM_OK) {
        FZ_CHECK(gbnf && strlen(gbnf) == len);
        mllm_gram *g = NULL;
        st = mllm_gram_compile(gbnf, len, NULL, &g);
        fz_check_status(st);
        FZ_CHECK(st == MLLM_OK || st == MLLM_ERR_NOMEM ||
                 strstr(mllm_last_error(), "left-recursive") || strstr(mllm_last_error(), "no finite text") ||
                 strstr(mllm_last_error(), "MLLM_GRAMMAR_MAX"));
        mllm_gmatch *m = NULL;
        if (st == MLLM_OK && mllm_gmatch_new(g, &m) == MLLM_OK) {
            /* The empty object / array / string starts that most schemas begin with. */
            static const char *const starts[] = {"{", "[", "\"", "1", "t", "n"};
            for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
                mllm_status r = mllm_gmatch_try(m, starts[i], 1);
                if (r != MLLM_ERR_INVALID_ARG) fz_check_status(r); /* a rejection carries no message */
            }
        }
        mllm_gmatch_free(m);
        mllm_gram_free(g);
    }
    mllm_free(gbnf);
    cJSON_Delete(doc);
    return 0;
}
