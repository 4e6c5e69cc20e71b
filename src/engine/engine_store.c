/* The engine's persistent prefix store (engine.h, src/kv/kv_store.h):
   the model's identity, loading stored blocks at admission, and writing
   prompt blocks after each step.

   Which blocks are stored: every full block of a request's prompt (the
   tokens it was submitted with: a chat's earlier turns, a system prompt),
   once its K/V are computed or found in the pool's prefix cache, unless
   the store has it already. Generated text is not stored until a later
   prompt contains it (the next chat turn). A sequence whose context was
   shifted stops storing (its positions moved). A block that holds an
   image's rows is keyed by their images' identities too (its salt,
   engine.h), which are the same in every process for the same image and
   tower, so a restarted server finds it. The store evicts least
   recently used entries (written or read) when full. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "core/alloc.h"
#include "core/cpu_features.h"
#include "core/error.h"
#include "engine/engine_internal.h"
#include "formats/mllmfile.h"
#include "formats/model_hash.h"

static void upd(mllm_xxh64_state *h, const void *p, size_t n) { mllm_xxh64_update(h, p, n); }

/* What the K/V of a token prefix depend on besides the tokens: the model's
   bytes (content: every byte of its files, tokenizer and template
   included; a sample of each tensor let a model with three edited
   embedding rows read another's blocks, #42), the decoder's
   hyper-parameters as loaded (overrides included), --exact, and the CPU
   kernel path (AVX2 / AVX-512 sum in another order). An image's rows are
   a block's salt (engine.h). */
uint64_t mllm_engine_model_identity(const mllm_engine *e, uint64_t content) {
    mllm_xxh64_state h;
    mllm_xxh64_init(&h);
    upd(&h, &content, sizeof content);
    /* field by field: a struct's padding bytes are not part of its value */
    const mllm_hparams *c = &e->dec->cfg;
    upd(&h, c->arch, sizeof c->arch);
    const int32_t ints[] = {c->n_vocab, c->n_embd, c->n_layer, c->n_head, c->n_head_kv, c->head_dim, c->n_ff,
                            c->n_ctx_train, c->n_rot, c->rope_neox, (int32_t)c->rope_scaling, c->rope_orig_ctx,
                            c->swa_window, (int32_t)c->act, c->post_norms, c->qkv_bias, c->qk_norm, c->tied_embd,
                            c->n_token_types, c->mrope[0], c->mrope[1], c->mrope[2]};
    const float floats[] = {c->rope_theta, c->rope_theta_swa, c->rope_factor, c->rope_low_freq_factor,
                            c->rope_high_freq_factor, c->yarn_beta_fast, c->yarn_beta_slow, c->rms_eps,
                            c->attn_scale, c->embd_scale, c->final_softcap};
    upd(&h, ints, sizeof ints);
    upd(&h, floats, sizeof floats);
    upd(&h, c->layer_flags, sizeof c->layer_flags);
    const uint8_t flags[3] = {e->p.exact, mllm_cpu_features_avx2_path(), mllm_cpu_features_avx512_path()};
    upd(&h, flags, sizeof flags);
    return mllm_xxh64_digest(&h);
}

mllm_status mllm_engine_store_open(mllm_engine *e) {
    if (!e->p.store_dir) return MLLM_OK;
    if (!e->file) return mllm_err(MLLM_ERR_INVALID_ARG, "prefix store: the engine has no model file to key it by");
    const mllm_hparams *c = &e->dec->cfg;
    if (mkdir(e->p.store_dir, 0700) != 0 && errno != EEXIST)
        return mllm_err(MLLM_ERR_IO, "prefix store %s: %s", e->p.store_dir, strerror(errno));
    mllm_status st = mllm_kv_store_check_folder(e->p.store_dir);
    if (st != MLLM_OK) return st;
    /* Hashed once per model version and kept in the folder (a GB takes
       about a second to hash). */
    uint64_t content = 0;
    bool cached = false;
    st = mllm_model_content_hash(e->file->path, e->p.store_dir, &content, &cached);
    if (st != MLLM_OK) return st;
    mllm_kv_store_geom g = {.model_id = mllm_engine_model_identity(e, content), .n_layer = c->n_layer,
                            .n_head_kv = c->n_head_kv, .head_dim = c->head_dim, .dtype = e->p.kv_dtype,
                            .block_size = e->p.block_size, .block_bytes = e->kp.layers[0].block_bytes};
    /* One file per model and geometry: several models can share a folder
       and never read each other's (the header says whose it is as well). */
    const uint64_t fields[7] = {g.model_id, (uint64_t)g.n_layer, (uint64_t)g.n_head_kv, (uint64_t)g.head_dim,
                                (uint64_t)g.dtype, (uint64_t)g.block_size, g.block_bytes}; /* no padding bytes */
    const uint64_t name = mllm_xxh64(fields, sizeof fields);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/prefix-%016llx.kvstore", e->p.store_dir, (unsigned long long)name) >=
        sizeof path)
        return mllm_err(MLLM_ERR_INVALID_ARG, "prefix store: folder name too long");
    const char *note = "";
    const uint64_t bytes = e->p.store_bytes ? e->p.store_bytes : MLLM_ENGINE_DEFAULT_STORE_BYTES;
    st = mllm_kv_store_open(path, &g, bytes, &e->store, &note);
    if (st != MLLM_OK) return st;
    snprintf(e->store_note, sizeof e->store_note, "%s; the model's content hash %s", note,
             cached ? "read from the folder" : "computed and kept in the folder");
    e->store_bufs = mllm_calloc((size_t)c->n_layer, sizeof *e->store_bufs);
    if (!e->store_bufs) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    return MLLM_OK;
}

static void block_bufs(mllm_engine *e, int32_t id) {
    const size_t bb = e->kp.layers[0].block_bytes;
    for (int l = 0; l < e->kp.p.n_layer; l++) e->store_bufs[l] = e->kp.layers[l].base + (size_t)id * bb;
}

int mllm_engine_store_load(mllm_engine *e, mllm_eseq *s) {
    mllm_kv_seq *kv = &s->kv;
    const int bs = e->p.block_size, full = s->n_tokens / bs;
    if (!e->store || kv->n_tokens != kv->n_blocks * bs) return 0;
    uint64_t key = 0, parent = 0;
    int j = 0, loaded = 0;
    for (; j < full; j++) {
        const int32_t *tok = s->tokens + (size_t)j * (size_t)bs;
        const uint64_t k = mllm_kv_block_key(key, tok, bs, s->salt ? s->salt[j] : 0);
        const int en = mllm_kv_store_find(e->store, k, parent, tok);
        if (en < 0) break;
        if (j >= kv->n_blocks) { /* not in the pool: read it into a new block */
            if (kv->n_tokens != j * bs || mllm_kv_seq_grow(&e->kp, kv, bs) != MLLM_OK) break;
            block_bufs(e, kv->blocks[j]);
            const mllm_status rs = mllm_kv_store_read(e->store, en, e->store_bufs);
            if (rs != MLLM_OK) {
                if (rs == MLLM_ERR_IO && !e->store_failed) { /* the file shrank under us: the server logs it */
                    e->store_failed = true;
                    snprintf(e->store_note, sizeof e->store_note, "%s", mllm_last_error());
                }
                mllm_kv_seq_truncate(&e->kp, kv, j * bs);
                break;
            }
            mllm_kv_prefix_commit(&e->kp, kv, s->tokens, s->salt); /* now in the pool's index too */
            loaded++;
        }
        key = k;
        parent = mllm_kv_store_serial(e->store, en);
    }
    if (s->st_saved == 0) { /* the blocks the store holds need not be offered again */
        s->st_saved = j;
        s->st_key = key;
        s->st_parent = parent;
    }
    e->st.store_hit_blocks += (uint64_t)loaded;
    return loaded * bs;
}

void mllm_engine_store_save(mllm_engine *e) {
    if (!e->store) return;
    const int bs = e->p.block_size;
    for (mllm_eseq *s = e->running; s; s = s->next) {
        if (s->st_saved < 0 || s->res.n_shifts > 0) continue;
        const int upto = (s->n_done < s->res.n_prompt ? s->n_done : s->res.n_prompt) / bs;
        while (s->st_saved < upto && s->st_saved < s->kv.n_blocks) {
            const int j = s->st_saved;
            const int32_t *tok = s->tokens + (size_t)j * (size_t)bs;
            const uint64_t key = mllm_kv_block_key(s->st_key, tok, bs, s->salt ? s->salt[j] : 0);
            const int en = mllm_kv_store_find(e->store, key, s->st_parent, tok);
            uint64_t serial;
            if (en >= 0) {
                serial = mllm_kv_store_serial(e->store, en);
            } else {
                block_bufs(e, s->kv.blocks[j]);
                serial = mllm_kv_store_put(e->store, key, s->st_parent, tok, (const uint8_t *const *)e->store_bufs);
                if (serial == 0) { /* the store cannot write: this sequence stops trying */
                    s->st_saved = -1;
                    break;
                }
            }
            s->st_key = key;
            s->st_parent = serial;
            s->st_saved++;
        }
    }
    if (mllm_kv_store_flush(e->store) != MLLM_OK && !e->store_failed) {
        e->store_failed = true;
        snprintf(e->store_note, sizeof e->store_note, "%s", mllm_last_error());
    }
}
