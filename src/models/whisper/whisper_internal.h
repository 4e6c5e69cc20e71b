/* Private to the files of src/models/whisper: the weights, their graph leaves and
   the state of one transcription. */
#ifndef MLLM_MODELS_WHISPER_INTERNAL_H
#define MLLM_MODELS_WHISPER_INTERNAL_H
#include "core/threadpool.h"
#include "graph/graph.h"
#include "models/whisper/whisper.h"
#include "tokenizer/tokenizer.h"

/* y = x W^T + b: W is n_out rows of n_in values of dtype `dtype` (CTranslate2
   stores [out, in], the kernels' row order); b is f32 or NULL. */
typedef struct {
    int dtype;
    const void *w;
    size_t row_bytes;
    int n_out, n_in;
    const float *b;
    mllm_tensor *tw, *tb; /* the same as graph leaves (tb NULL without a bias) */
} wh_linear;

typedef struct {
    const float *gamma, *beta;
    mllm_tensor *tg, *tb;
} wh_norm;

typedef struct {
    wh_norm attn_ln, ffn_ln;
    wh_linear qkv, out, fc1, fc2;
} wh_enc_layer;

typedef struct {
    wh_norm self_ln, cross_ln, ffn_ln;
    wh_linear self_qkv, self_out, cross_q, cross_kv, cross_out, fc1, fc2;
} wh_dec_layer;

struct mllm_whisper {
    mllm_whisper_hparams hp;
    mllm_whisper_special sp;
    wh_linear conv1, conv2;      /* (d, n_mels * 3) and (d, d * 3): [out][in][k] as stored */
    const float *enc_pos, *dec_pos;
    wh_enc_layer *enc;
    wh_dec_layer *dec;
    wh_norm enc_ln, dec_ln;
    wh_linear logits;            /* the token embedding, tied */
    const void *tok_emb;         /* the same rows, for the lookup */
    void *weights;               /* one aligned block: every converted weight */
    struct mllm_ct2 *ct2;        /* the open model.bin: weights kept as stored point into its mapping */
    void *image;                 /* an HF folder's weights as a WhisperSpec image (ct2 views it), else NULL */
    struct mllm_mllmfile *mf;    /* a converted .mllm file (ct2 views its tensors), else NULL */
    int32_t *suppress, *suppress_begin;
    int n_suppress, n_suppress_begin;
    mllm_tokenizer *tok;
    char (*lang_codes)[8];       /* sp.n_lang codes, for --language */
    mllm_pool *pool;
    bool own_pool;            /* else lent (mllm_whisper_params.pool) */

    /* the graphs (whisper_graph.c): the weights as leaves, the backends
       they run on and the weights placed there */
    mllm_graph wg;
    mllm_tensor *t_enc_pos, *t_dec_pos, *t_tok_emb;
    mllm_backend *backends[MLLM_MAX_BACKENDS];
    int n_backends;
    struct mllm_placement *placed[MLLM_MAX_BACKENDS];
    mllm_graph enc_g;            /* the encoder, built at the first window */
    bool enc_built;
    mllm_tensor *enc_mel, *enc_res;
    mllm_kv_slots *cross;        /* per decoder layer: K and V^T of the cross-attention */
    mllm_kv_slots *self;         /* per decoder layer: the self-attention's slots (self_k, self_vt) */
    mllm_graph dec_g;            /* the decoder, for the shape dec_key (n_seq, n_tok, all logits) */
    bool dec_built;
    int dec_key[3];
    mllm_tensor *d_tok, *d_pos, *d_slot, *d_last, *d_logits;

    /* state: cross K (n_head, n_audio_ctx, head_dim) and V transposed
       (d, n_audio_ctx) per decoder layer; self K (per seq, n_text_ctx, d)
       and V^T (per seq, d, n_text_ctx) per layer */
    bool encoded;
    void *cross_k, *cross_vt;    /* f16 (cross_f16) or f32 */
    bool cross_f16;              /* all but f32 weights: half the bytes each decoder step reads */
    float *self_k, *self_vt;
    int n_seq_alloc;
    int slot[MLLM_WHISPER_MAX_SEQ]; /* sequence -> its cache slot (a permutation; beam reorders rename) */
};

/* Where a load's tokenizer and weights come from besides the WhisperSpec
   view: the CTranslate2 and HF layouts name a tokenizer.json file; a .mllm
   file (whisper_load_mllm.c) holds its text, stores every matrix in its
   final dtype (stored_type names the file's choice: f16, f32, q8_0, q4_0)
   and is owned by the model from the call on, success or not. */
typedef struct {
    const char *tokenizer_path;     /* a file, or the label of tokenizer_json */
    const char *tokenizer_json;     /* (tokenizer_len) or NULL */
    size_t tokenizer_len;
    bool stored;
    int stored_type;
    struct mllm_mllmfile *file;
} wh_source;
/* mllm_whisper_load_ct2 with a source (takes c, and src->file). */
mllm_status wh_load(struct mllm_ct2 *c, const char *path, const char *config, size_t config_len, const wh_source *src,
                    const mllm_whisper_params *p, mllm_whisper **out);

/* The weights as graph leaves and the backends of p (whisper_graph.c). */
mllm_status wh_graph_init(mllm_whisper *w, const mllm_whisper_params *p);
void wh_graph_free(mllm_whisper *w);

#endif
