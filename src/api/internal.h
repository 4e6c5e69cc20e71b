/* The structs behind the public opaque handles. */
#ifndef MLLM_API_INTERNAL_H
#define MLLM_API_INTERNAL_H
#include <mllm/mllm.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "core/threadpool.h"
#include "formats/model_file.h"
#include "graph/graph.h"
#include "models/decoder.h"
#include "models/registry.h"
#include "tokenizer/tokenizer.h"

struct mllm_template;

struct mllm_model {
    mllm_model_file *file;
    mllm_decoder dec;
    mllm_tokenizer *tok;
    int n_threads;
    bool exact;                 /* mllm_load_params.exact */
    double load_ms;
    struct mllm_template *tmpl; /* compiled at load; NULL if none or broken */
    char *tmpl_error;           /* why tmpl is NULL, reported by chat calls */
};

/* Compiles the chat template (override name/file, else the model's own).
   A missing or broken template is not a load error: chat calls report it. */
void mllm_model_init_template(mllm_model *m, const char *override);

struct mllm_session {
    mllm_model *m;
    mllm_pool *pool;
    int n_ctx;
    float *kv_mem;          /* (n_layer, 2, n_ctx, kv_dim) */
    mllm_kv_layer *kv;      /* (n_layer) */
    mllm_graph decode;      /* traced once: one token */
    mllm_decoder_inputs decode_in;  /* its inputs: the token id and its position */
    mllm_tensor *decode_logits;
    mllm_graph prefill;     /* traced for prefill_T tokens, reused while T repeats */
    mllm_decoder_inputs prefill_in;
    mllm_tensor *prefill_logits;
    int prefill_T;
    float *logits;          /* (n_vocab) logits of the last evaluated position */
    int32_t *tokens;        /* (n_ctx) the tokens in the KV cache, in order */
    int n_past;
    atomic_bool cancel;
    mllm_timings timings;
};

/* Evaluates ids after the cached ones; logits of the last one in s->logits. */
mllm_status mllm_session_eval_internal(mllm_session *s, const int32_t *ids, size_t n);
/* Evaluates n <= 512 tokens and writes the logits of tokens [first_out, n)
   to out ((n - first_out) x n_vocab floats): for perplexity. */
mllm_status mllm_session_eval_logits(mllm_session *s, const int32_t *ids, int n, int first_out, float *out);
double mllm_now_ms(void);

#endif
