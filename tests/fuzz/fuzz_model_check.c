/* Checks shared by the targets that go through mllm_family_open. */
#include "fuzz_model_check.h"
#include "fuzz_util.h"
#include "core/dtype.h"
#include "models/registry.h"
#include "tokenizer/tokenizer.h"
#include <string.h>

void fz_check_model_file(const mllm_model_file *f, const mllm_hparams *c) {
    FZ_CHECK(c->n_vocab > 0 && c->n_embd > 0 && c->n_layer > 0 && c->n_head > 0 && c->n_head_kv > 0);
    FZ_CHECK(c->head_dim > 0 && c->n_ff > 0 && c->n_rot > 0 && c->n_rot <= c->head_dim);
    FZ_CHECK(c->n_head % c->n_head_kv == 0);
    FZ_CHECK(memchr(c->arch, '\0', sizeof c->arch) != NULL);
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < f->n_weights; i++) {
        const mllm_weight *w = &f->weights[i];
        FZ_CHECK(w->name != NULL);
        FZ_CHECK(mllm_model_file_find(f, w->name) != NULL);
        FZ_CHECK(w->n_dims >= 0 && w->n_dims <= 4);
        const mllm_dtype_traits *tr = mllm_dtype_get(w->dtype);
        if (!tr) continue; /* unused tensors of unknown type are kept, never read */
        int64_t rows = 1;
        for (int d = 0; d < 4; d++) {
            FZ_CHECK(w->ne[d] >= 0);
            if (d > 0) rows *= w->ne[d];
        }
        size_t row = mllm_dtype_row_size((mllm_dtype)w->dtype, w->ne[0]);
        if (w->ne[0] > 0) FZ_CHECK(row > 0 && (uint64_t)rows * row == w->size);
        if (w->size) {
            FZ_CHECK(w->data != NULL);
            const uint8_t *p = w->data;
            sink ^= p[0];
            sink ^= p[w->size - 1];
        }
    }
    (void)sink;
}

/* The tokenizer the file carries, loaded the way mllm_model_load does. */
static void load_tokenizer(const mllm_model_file *f) {
    mllm_tokenizer *t = NULL;
    mllm_status st = MLLM_OK;
    if (f->kind == MLLM_FILE_GGUF) {
        FZ_CHECK(f->gguf != NULL);
        st = mllm_tokenizer_from_gguf(f->gguf, &t);
    } else if (f->kind == MLLM_FILE_HF && f->tokenizer_json) {
        st = mllm_tokenizer_from_hf(f->tokenizer_json, f->tokenizer_config, &t);
    }
    fz_check_status(st);
    if (t) {
        static const char text[] = "Hello <|im_start|> world 12!";
        int32_t ids[64];
        size_t n = 0;
        fz_check_status(mllm_tokenizer_encode(t, text, sizeof text - 1, true, true, ids, 64, &n));
    }
    mllm_tokenizer_free(t);
}

void fz_open_model_file(const char *path) {
    if (!path) return;
    mllm_model_file *f = NULL;
    mllm_hparams hp;
    mllm_status st = mllm_family_open(path, &f, &hp);
    fz_check_status(st);
    if (st == MLLM_OK) {
        FZ_CHECK(f != NULL);
        fz_check_model_file(f, &hp);
        const mllm_weight *w = mllm_model_file_find(f, "token_embd.weight");
        FZ_CHECK(w != NULL);
        FZ_CHECK(w->ne[0] == hp.n_embd && w->ne[1] == hp.n_vocab);
        load_tokenizer(f);
    } else {
        FZ_CHECK(f == NULL);
    }
    mllm_model_file_close(f);
}
