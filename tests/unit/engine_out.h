/* What the engine tests collect of one sequence: its tokens (up to
   MAXGEN, which the including test defines) and its result, through the
   engine's on_token / on_finish callbacks. */
#ifndef MLLM_TESTS_ENGINE_OUT_H
#define MLLM_TESTS_ENGINE_OUT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "engine/engine.h"
#include "testutil.h"

typedef struct {
    int32_t toks[MAXGEN];
    int n;
    bool finished;
    mllm_engine_result res;
} out_t;

static int on_token(void *user, int32_t id, const char *piece, size_t len) {
    (void)piece, (void)len;
    out_t *o = user;
    if (id >= 0 && o->n < MAXGEN) o->toks[o->n++] = id;
    return 0;
}

static void on_finish(void *user, const mllm_engine_result *r) {
    out_t *o = user;
    assert_false(o->finished); /* exactly once */
    o->finished = true;
    o->res = *r;
}

#endif
