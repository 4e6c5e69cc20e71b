/* The structs behind the public opaque handles. */
#ifndef MLLM_API_INTERNAL_H
#define MLLM_API_INTERNAL_H
#include <mllm/mllm.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "models/vision_tower.h"
#include "core/clock.h"
#include "core/threadpool.h"
#include "formats/model_file.h"
#include "graph/graph.h"
#include "kv/kv_pool.h"
#include "formats/st_config.h"
#include "models/decoder/decoder.h"
#include "models/registry.h"
#include "runtime/constraint.h"
#include "runtime/grammar_match.h"
#include "runtime/vocab_trie.h"
#include "tokenizer/tokenizer.h"

struct mllm_template;
/* Images a session's cache may hold (more: refused). */
#define MLLM_SESSION_MAX_IMAGES 64

struct mllm_model {
    mllm_model_file *file;
    const mllm_arch *row;       /* the registry row: its kind and hooks (models/registry.h) */
    mllm_decoder dec;           /* decoders; for encoders only dec.cfg is set (the shared hyper-parameters) */
    void *enc;                  /* encoders (embedding models): the row's encoder model, else NULL */
    mllm_st_config st;          /* the folder's sentence-transformers config (pooling, normalize, max_seq_length) */
    mllm_tokenizer *tok;
    int n_threads;
    /* The model's thread pool (n_threads): lent to its sessions, its
       engine and its embeddings, which take turns on it (core/threadpool.h)
       instead of each bringing threads of its own; a session or engine that
       asks for another thread count gets its own. */
    mllm_pool *pool;
    bool exact;                 /* mllm_load_params.exact */
    double load_ms;
    struct mllm_template *tmpl; /* compiled at load; NULL if none or broken */
    char *tmpl_error;           /* why tmpl is NULL, reported by chat calls */
    /* The vocabulary's byte trie, built by the first grammar-constrained
       generation (mllm_model_trie); set once, atomically, so the model
       stays shareable. */
    _Atomic(mllm_vocab_trie *) trie;
    /* A speech model (the row's speech hooks, api/transcribe.c): file, dec
       and enc unused (dec.cfg holds its sizes for the getters), tok lent
       by it. */
    void *asr;
    pthread_mutex_t asr_mu;     /* one transcription at a time: the model holds its decoding state */
    bool asr_mu_ok;
    /* Images (api/vision.h): the vision tower, opened on the first image,
       and the embedding cache; mmproj: mllm_load_params.mmproj (a GGUF
       vision tower for a GGUF text model), copied; NULL if none. */
    struct mllm_vision *vision;
    char *mmproj;
};

/* Loads the speech model at path (a file of the speech row `row`) into m
   (api/transcribe.c); its undo. */
mllm_status mllm_model_load_speech(mllm_model *m, const mllm_arch *row, const char *path, const mllm_load_params *p);
void mllm_model_free_speech(mllm_model *m);

/* Compiles the chat template (override name/file, else the model's own).
   A missing or broken template is not a load error: chat calls report it. */
void mllm_model_init_template(mllm_model *m, const char *override);

/* A graph that returns the logits of every position of T tokens (speculative
   verification), traced on first use of that T and kept. */
typedef struct {
    mllm_graph g;
    mllm_decoder_inputs in;
    mllm_tensor *logits;
    bool traced;
} mllm_rows_graph;

struct mllm_spec; /* api/speculative.h */

struct mllm_session {
    mllm_model *m;
    mllm_pool *pool;
    bool own_pool;          /* false for a draft session on its target's pool */
    int n_ctx;
    float *kv_mem;          /* (n_layer, 2, n_ctx, kv_dim); NULL when paged */
    mllm_kv_layer *kv;      /* (n_layer); NULL when paged */
    mllm_kv_pool *kvp;      /* paged (kv_type != MLLM_KV_CONTIGUOUS): the session's block pool, else NULL */
    mllm_kv_seq kv_seq;     /* paged: the one sequence's block table */
    int kv_max_blocks;      /* paged: blocks per table (ceil(n_ctx / block size)) */
    mllm_graph decode;      /* traced once: one token */
    mllm_decoder_inputs decode_in;  /* its inputs: the token id and its position */
    mllm_tensor *decode_logits;
    mllm_graph prefill;     /* traced for prefill_T tokens, reused while T repeats */
    mllm_decoder_inputs prefill_in;
    mllm_tensor *prefill_logits;
    int prefill_T;
    float *logits;          /* (n_vocab) logits of the last evaluated position */
    /* A draft's output projection cut to its first n_out rows
       (mllm_session_cut_vocab); dec is then dec_cut, else the model's. */
    const mllm_decoder *dec;
    mllm_decoder dec_cut;
    mllm_tensor out_cut;
    int n_out;              /* logits computed per position; the rest stay -inf */
    int32_t *tokens;        /* (n_ctx) the tokens in the KV cache, in order */
    int n_past;
    atomic_bool cancel;
    mllm_timings timings;
    mllm_rows_graph *rows;  /* (MLLM_SPEC_MAX_DRAFT + 2) by T; NULL until the first verification */
    /* Speculative decoding settings and state (api/speculative.c), NULL
       until set or first used: made there with the function that frees it,
       so this file, below speculative.c, never calls up into it. Its
       counters are the session's (reset with it). */
    struct mllm_spec *spec;
    void (*spec_free)(struct mllm_spec *spec);
    mllm_speculative_stats spec_stats;
    /* M-RoPE: rotation position = KV slot + rope_delta after an
       image (whose tokens advance the rotation by less than their count);
       image_end: the slot after the last image token, 0 if none (its
       tokens cannot be recomputed from their ids). */
    int rope_delta;
    int image_end;
    /* The images the cache holds, in order: their slots [start, end), the
       image's id (its embedding cache key, models/vision_cache.h; 0:
       unknown, never reused) and rope_delta for the text after them. A prompt that
       repeats an image at the same slots keeps its KV (session_image.c). */
    struct {
        int start, end, delta_after;
        uint64_t id;
    } imgs[MLLM_SESSION_MAX_IMAGES];
    int n_imgs;
};

/* mllm_session_new on an existing pool (NULL: a pool of its own). */
mllm_status mllm_session_create(mllm_model *m, const mllm_session_params *p, mllm_pool *pool, mllm_session **out);
/* Evaluates 1 <= n <= MLLM_SPEC_MAX_DRAFT + 1 tokens after the cached ones;
   *rows receives the logits of all n positions (n x n_vocab floats, owned by
   the session, valid until the next evaluation of n tokens). */
mllm_status mllm_session_eval_rows(mllm_session *s, const int32_t *ids, int n, const float **rows);

/* A draft session's logits for only the first n_out token ids (BPE ids
   follow merge order, so the first ones are the most frequent): its output
   projection, the largest matrix a small model reads per token, is cut to
   those rows (a prefix of the matrix, packed or not); the other logits stay
   -inf, so it never proposes them. Only on a fresh session whose output
   matrix is in host memory; n_out is rounded up to a multiple of 8 (packed
   rows come in groups of 8); n_out >= n_vocab leaves it whole. Greedy
   verification is unaffected (the model checks every proposal); sampling
   stays exact because the draft's own, cut, distribution is the q of the
   acceptance rule. eval_rows and eval_logits refuse a cut session. */
mllm_status mllm_session_cut_vocab(mllm_session *s, int n_out);

/* Evaluates ids after the cached ones; logits of the last one in s->logits. */
mllm_status mllm_session_eval_internal(mllm_session *s, const int32_t *ids, size_t n);
/* mllm_session_eval_logits (perplexity) is public (mllm.h). */
/* The context length of a session with n_ctx 0 (model.c). */
int mllm_model_default_ctx(const mllm_model *m);
/* Evaluates ids (after the cached ones) whose runs of image_token are the
   grids' images, in order, each replaced by its rows of img_emb (n_img_rows
   x n_embd: the vision tower's output, concatenated); positions by M-RoPE
   (models/decoder/mrope.h). The model must have M-RoPE sections. Logits of
   the last token in s->logits. (session_image.c) */
mllm_status mllm_session_eval_image(mllm_session *s, const int32_t *ids, size_t n, int32_t image_token,
                                    const float *img_emb, int64_t n_img_rows, const int *grids_thw, int n_grids,
                                    int merge);
/* The same with each image's cache id (img_ids: n_grids of them; NULL: 0s,
   never reused by mllm_session_sync_images). */
mllm_status mllm_session_eval_image_ids(mllm_session *s, const int32_t *ids, size_t n, int32_t image_token,
                                        const float *img_emb, int64_t n_img_rows, const int *grids_thw, int n_grids,
                                        int merge, const uint64_t *img_ids);
/* mllm_session_sync for a prompt with images (ids expanded: each image's
   n_rows pads; imgs[0..n_imgs) in order): the prefix the cache shares is
   kept, images included when the same image (cache id) sits at the same
   slots; the rest is evaluated. *n_reused (may be NULL) as in sync. */
mllm_status mllm_session_sync_images(mllm_session *s, const int32_t *ids, size_t n, int32_t image_token,
                                     const mllm_vision_embedding *imgs, int n_imgs, size_t *n_reused);
/* Renders and tokenizes a conversation as mllm_chat does (chat.c): *ids
   (mllm_free) and *n. */
mllm_status mllm_chat_ids(const mllm_model *m, const char *conversation, int32_t **ids, size_t *n);

struct mllm_grammar {
    mllm_gram *gram;
    mllm_gmatch *match;
};

/* The model's vocabulary trie (built on first use; thread-safe). */
mllm_status mllm_model_trie(mllm_model *m, const mllm_vocab_trie **out);

/* The constraint (runtime/constraint.h) of grammar g on model m: its
   vocabulary trie, tokenizer and logits' length (api/grammar.c). */
mllm_status mllm_model_constraint_init(mllm_constraint *c, mllm_model *m, mllm_grammar *g);

#endif
