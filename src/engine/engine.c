/* The engine (engine.h): sequences, admission with the prefix cache, the
   step plan (decodes first, then prompt chunks within the budget),
   preemption when the pool is full, and finishing. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "engine/engine_internal.h"
#include "runtime/ngram_lookup.h"
#include "runtime/spec_ctl.h"

/* Prompt lookup's controller is the session's (runtime/spec_ctl.h), one
   per sequence, with the engine's cost model. Until the step times spread
   enough to fit a slope: an extra token costs this fraction of a one-token
   step (SmolLM2-135M on 2 Xeon cores, quiet: ~10 ms a step alone, ~24 ms
   for 8 streams, so about 2 ms a row over an 8 ms base). */
#define SPEC_PRIOR_COST 0.25

size_t mllm_engine_kv_token_bytes(const mllm_hparams *c, int kv_dtype) {
    return (size_t)c->n_layer * mllm_kv_paged_token_bytes(kv_dtype, c->n_head_kv, c->head_dim);
}

mllm_status mllm_engine_new(const mllm_decoder *dec, const mllm_tokenizer *tok, const mllm_model_file *file,
                            mllm_pool *pool, const mllm_engine_params *p, mllm_engine **out) {
    *out = NULL;
    const int bs = p->block_size > 0 ? p->block_size : 16;
    if (!dec || !tok || !pool || p->max_running < 1 || p->max_running > MLLM_ENGINE_MAX_RUNNING || p->n_ctx < 1 ||
        p->n_ctx > (1 << 20) || bs > MLLM_KV_MAX_BLOCK_SIZE || p->prefill_chunk < 0 || p->prefill_chunk > (1 << 16) ||
        p->spec_mode < MLLM_SPEC_AUTO || p->spec_mode > MLLM_SPEC_ALWAYS || p->spec_max < 0 ||
        p->spec_max > MLLM_SPEC_MAX_DRAFT || p->ngram_min < 0 || p->ngram_max < 0 || p->ngram_min > 8 ||
        p->ngram_max > 8 || (p->ngram_min && p->ngram_max && p->ngram_min > p->ngram_max))
        return mllm_err(MLLM_ERR_INVALID_ARG, "engine: invalid parameters (%d sequences, context %d, block %d)",
                        p->max_running, p->n_ctx, bs);
    const int max_blocks = (p->n_ctx + bs - 1) / bs;
    /* One whole context and a copy on write always fit, so a sequence alone
       can always run to its end. */
    if (p->n_blocks < max_blocks + 1)
        return mllm_err(MLLM_ERR_INVALID_ARG, "engine: a KV pool of %d blocks of %d tokens cannot hold one context of "
                        "%d tokens (at least %d blocks, %d tokens)", p->n_blocks, bs, p->n_ctx, max_blocks + 1,
                        (max_blocks + 1) * bs);
    mllm_engine *e = mllm_calloc(1, sizeof *e);
    if (!e) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    e->dec = dec;
    e->tok = tok;
    e->file = file;
    e->pool = pool;
    e->p = *p;
    e->p.block_size = bs;
    if (e->p.prefill_chunk == 0) e->p.prefill_chunk = MLLM_ENGINE_DEFAULT_CHUNK;
    if (e->p.spec_max == 0) e->p.spec_max = 8;
    if (e->p.ngram_min == 0) e->p.ngram_min = e->p.ngram_max && e->p.ngram_max < 2 ? e->p.ngram_max : 2;
    if (e->p.ngram_max == 0) e->p.ngram_max = e->p.ngram_min > 4 ? e->p.ngram_min : 4;
    e->max_blocks = max_blocks;
    mllm_spec_cost_init(&e->cost, SPEC_PRIOR_COST);
    mllm_spec_passes_init(&e->passes, MLLM_SPEC_PASS_PRIOR);
    const mllm_hparams *c = &dec->cfg;
    mllm_kv_pool_params pp = {.n_layer = c->n_layer, .n_head_kv = c->n_head_kv, .head_dim = c->head_dim,
                              .dtype = p->kv_dtype, .block_size = bs, .n_blocks = p->n_blocks,
                              /* f32: the contiguous cache's summation order (the session's bits); f16 / q8:
                                 the online softmax */
                              .ordered = p->kv_dtype == MLLM_KV_DTYPE_F32};
    mllm_status st = mllm_kv_pool_init(&e->kp, &pp);
    if (st != MLLM_OK) { mllm_free(e); return st; }
    const size_t cap = (size_t)e->p.max_running * (1 + MLLM_SPEC_MAX_DRAFT) + (size_t)e->p.prefill_chunk;
    e->b_cap = cap;
    e->b_ids = mllm_malloc(cap * sizeof(int32_t));
    e->b_pos = mllm_malloc(cap * sizeof(int32_t));
    e->b_seq = mllm_malloc(cap * sizeof(int32_t));
    e->b_rpos = mllm_malloc(3 * cap * sizeof(int32_t));
    e->b_emb = mllm_calloc(cap, sizeof *e->b_emb);
    e->recent = mllm_malloc(((size_t)e->p.n_ctx + 1) * sizeof(int32_t));
    e->b_out = mllm_calloc((size_t)e->p.max_running, sizeof *e->b_out);
    e->slot_used = mllm_calloc((size_t)e->p.max_running, sizeof *e->slot_used);
    if (!e->b_ids || !e->b_pos || !e->b_seq || !e->b_rpos || !e->b_emb || !e->recent || !e->b_out || !e->slot_used) {
        mllm_engine_free(e);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    st = mllm_engine_store_open(e);
    if (st != MLLM_OK) {
        mllm_engine_free(e);
        return st;
    }
    *out = e;
    return MLLM_OK;
}

/* A sequence's own memory (its K/V and sampler are another matter). */
static void seq_discard(mllm_eseq *s) {
    mllm_free(s->tokens);
    mllm_free(s->emb);
    mllm_free(s->emb_at);
    mllm_free(s->rpos);
    mllm_free(s->salt);
    mllm_free(s);
}

void mllm_engine_seq_free(mllm_engine *e, mllm_eseq *s) {
    mllm_kv_seq_release(&e->kp, &s->kv);
    mllm_sampler_free(&s->smp);
    seq_discard(s);
}

/* Reports s's end (pending text first) and frees it; s is off every list. */
static void seq_end(mllm_engine *e, mllm_eseq *s, const char *msg) {
    if (s->forks) mllm_engine_forks_release(e, s);
    mllm_token_text_flush(&s->text, s->r.on_token, s->r.user);
    if (s->slot >= 0) e->slot_used[s->slot] = false;
    s->res.message = msg ? msg : "";
    /* Its blocks go back before the end is reported, so whoever learns of
       the end (a client reading /metrics) finds them free. */
    mllm_kv_seq_release(&e->kp, &s->kv);
    if (s->r.on_finish) s->r.on_finish(s->r.user, &s->res);
    mllm_engine_seq_free(e, s);
}

static void end_list(mllm_engine *e, mllm_eseq **list) {
    while (*list) {
        mllm_eseq *s = *list;
        *list = s->next;
        s->res.finish = MLLM_ENGINE_CANCELLED;
        s->res.status = MLLM_ERR_CANCELLED;
        seq_end(e, s, NULL);
    }
}

void mllm_engine_free(mllm_engine *e) {
    if (!e) return;
    end_list(e, &e->running);
    end_list(e, &e->waiting);
    for (int i = 0; i < MLLM_ENGINE_GRAPH_CACHE; i++)
        if (e->graphs[i].traced) mllm_graph_free(&e->graphs[i].g);
    mllm_kv_store_close(e->store);
    mllm_free(e->store_bufs);
    mllm_kv_pool_free(&e->kp);
    mllm_free(e->b_ids);
    mllm_free(e->b_pos);
    mllm_free(e->b_seq);
    mllm_free(e->b_rpos);
    mllm_free(e->b_emb);
    mllm_free(e->recent);
    mllm_free(e->b_out);
    mllm_free(e->slot_used);
    mllm_free(e);
}

/* The prefix-cache id of row r of the image whose identity is id: a
   negative number (no vocabulary id), so the pool's hash chain tells
   images apart (engine.h). */
static int32_t image_key(uint64_t id, int64_t r) {
    uint64_t h = id * 0x9e3779b97f4a7c15ull ^ (uint64_t)r * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 29;
    return -1 - (int32_t)(h & 0x7ffffffeu);
}

/* Block salt h (kv_pool.h) with one more image row of the image whose
   identity is id. */
static uint64_t salt_mix(uint64_t h, uint64_t id) {
    h = (h ^ id) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    return h ^ (h >> 32);
}

/* s's copy of r's images: its rows, the row of each prompt position (whose
   token becomes the row's key), the salt of each block that holds rows
   (the identities of their images), its rotation positions. */
static mllm_status take_image(const mllm_engine *e, mllm_eseq *s, const mllm_engine_image *im, int n) {
    const int64_t E = e->dec->cfg.n_embd;
    int64_t rows = 0;
    for (int k = 0; k < im->n_images; k++) {
        if (!im->id || !im->n_rows || im->n_rows[k] < 1 || im->id[k] == 0)
            return mllm_err(MLLM_ERR_INVALID_ARG, "engine: image %d has no rows or no identity", k);
        rows += im->n_rows[k];
    }
    int64_t n_tok = 0;
    for (int i = 0; i < n; i++) n_tok += s->tokens[i] == im->image_token;
    if (im->n_images < 1 || !im->emb || rows != n_tok) /* checked before a row is read */
        return mllm_err(MLLM_ERR_INVALID_ARG, "engine: %d images of %lld rows for %lld image tokens", im->n_images,
                        (long long)rows, (long long)n_tok);
    s->emb = mllm_malloc((size_t)rows * (size_t)E * sizeof(float));
    s->emb_at = mllm_malloc((size_t)n * sizeof(int32_t));
    const int bs = e->p.block_size;
    s->salt = mllm_calloc((size_t)(e->p.n_ctx / bs + 1), sizeof *s->salt); /* full blocks of n_ctx + 1 tokens */
    s->rpos = im->rope_pos ? mllm_malloc(3 * (size_t)n * sizeof(int32_t)) : NULL;
    if (!s->emb || !s->emb_at || !s->salt || (im->rope_pos && !s->rpos))
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    memcpy(s->emb, im->emb, (size_t)rows * (size_t)E * sizeof(float));
    if (s->rpos) memcpy(s->rpos, im->rope_pos, 3 * (size_t)n * sizeof(int32_t));
    int64_t r = 0, in_img = 0;
    for (int i = 0, k = 0; i < n; i++) {
        s->emb_at[i] = -1;
        if (s->tokens[i] != im->image_token) continue;
        s->emb_at[i] = (int32_t)r++;
        s->tokens[i] = image_key(im->id[k], in_img);
        s->salt[i / bs] = salt_mix(s->salt[i / bs], im->id[k]);
        if (++in_img == im->n_rows[k]) k++, in_img = 0;
    }
    s->rope_delta = im->rope_delta;
    s->image_token = im->image_token;
    s->r.context_shift = false; /* the rows and rotations are the prompt's: not shifted */
    return MLLM_OK;
}

mllm_status mllm_engine_submit(mllm_engine *e, const mllm_engine_request *r) {
    const int V = e->dec->cfg.n_vocab;
    if (!r || !r->prompt || r->n_prompt < 1 || !r->sampling)
        return mllm_err(MLLM_ERR_INVALID_ARG, "engine: a request needs a prompt and sampling settings");
    if (r->n_prompt >= e->p.n_ctx)
        return mllm_err(MLLM_ERR_CONTEXT_FULL, "engine: a %d-token prompt does not fit a %d-token context",
                        r->n_prompt, e->p.n_ctx);
    for (int i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= V)
            return mllm_err(MLLM_ERR_INVALID_ARG, "token id %d out of range [0, %d)", r->prompt[i], V);
    const int32_t *mr = e->dec->cfg.mrope;
    if (r->image && r->image->rope_pos && !(mr[0] || mr[1] || mr[2]))
        return mllm_err(MLLM_ERR_INVALID_ARG, "engine: M-RoPE positions for a model without M-RoPE");
    mllm_eseq *s = mllm_calloc(1, sizeof *s);
    if (!s) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    s->tokens = mllm_malloc(((size_t)e->p.n_ctx + 1) * sizeof(int32_t));
    if (!s->tokens) {
        seq_discard(s);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    s->r = *r;
    memcpy(s->tokens, r->prompt, (size_t)r->n_prompt * sizeof(int32_t));
    mllm_status st = r->image ? take_image(e, s, r->image, r->n_prompt) : MLLM_OK;
    if (st == MLLM_OK) st = mllm_sampling_upgrade(r->sampling, &s->sp);
    if (st == MLLM_OK) st = mllm_sampler_init(&s->smp, &s->sp, V);
    if (st != MLLM_OK) {
        seq_discard(s);
        return st;
    }
    s->r.image = NULL; /* copied */
    s->sp.grammar = NULL; /* the constraint is the request's */
    s->r.sampling = &s->sp;
    s->r.prompt = s->tokens;
    s->n_tokens = r->n_prompt;
    s->res.n_prompt = r->n_prompt;
    s->slot = -1;
    mllm_spec_ctl_init(&s->spec, e->p.spec_max);
    s->prop_seen = s->prop_costly = false;
    s->sh_at = -1;
    mllm_kv_seq_init(&s->kv);
    mllm_eseq **at = &e->waiting;
    while (*at) at = &(*at)->next;
    *at = s;
    e->n_waiting++;
    return MLLM_OK;
}

bool mllm_engine_idle(const mllm_engine *e) { return !e->running && !e->waiting; }

void mllm_engine_get_stats(const mllm_engine *e, mllm_engine_stats *out) {
    *out = e->st;
    out->running = e->n_running;
    out->waiting = e->n_waiting;
    out->blocks_total = e->kp.st.n_blocks;
    out->blocks_free = e->kp.st.n_free;
    out->blocks_cached = e->kp.st.n_cached;
    out->blocks_used = e->kp.st.n_used;
    if (e->store) {
        mllm_kv_store_stats ss;
        mllm_kv_store_get_stats(e->store, &ss);
        out->store_writes = ss.writes;
        out->store_entries = (uint64_t)ss.n_entries;
        out->store_bytes = (uint64_t)ss.n_entries * ss.slot_bytes;
        out->store_failed = e->store_failed;
    }
}

const char *mllm_engine_store_note(const mllm_engine *e) { return e->store_note; }

static bool cancelled(const mllm_eseq *s) { return s->r.cancel && atomic_load(s->r.cancel); }

/* Ends every cancelled sequence of a list. */
static void sweep(mllm_engine *e, mllm_eseq **list, int *count) {
    for (mllm_eseq **at = list; *at;) {
        mllm_eseq *s = *at;
        if (!cancelled(s)) { at = &s->next; continue; }
        *at = s->next;
        (*count)--;
        s->res.finish = MLLM_ENGINE_CANCELLED;
        s->res.status = MLLM_ERR_CANCELLED;
        seq_end(e, s, NULL);
    }
}

static int avail_blocks(const mllm_engine *e) { return e->kp.st.n_free + e->kp.st.n_cached; }

/* The blocks the running sequences still need for the tokens they hold
   and have not evaluated (admitted this step, or preempted back). */
static int pending_blocks(const mllm_engine *e) {
    int k = 0;
    for (const mllm_eseq *s = e->running; s; s = s->next) k += mllm_engine_blocks_needed(e, s, s->n_tokens - s->n_done);
    return k;
}

/* Admits the head of the queue if a slot is free and the pool holds its
   whole context so far (after its prefix hit) plus one block; FIFO. */
/* A running sequence still reading a prompt that shares more full blocks
   with s's than s found registered (k positions): s had better wait until
   they are registered than compute the same K/V itself (many clients with
   one long system prompt, arriving together). It waits at most for that
   prompt's prefill, which goes first in the step's budget. */
static bool waits_for_shared_prefill(const mllm_engine *e, const mllm_eseq *s, int k) {
    const int bs = e->p.block_size;
    for (const mllm_eseq *r = e->running; r; r = r->next) {
        if (r->n_tokens - r->n_done <= 1) continue; /* not reading a prompt */
        const int lim = r->n_tokens < s->n_tokens ? r->n_tokens : s->n_tokens;
        int c = 0;
        while (c < lim && r->tokens[c] == s->tokens[c]) c++;
        if (c / bs > k / bs && r->n_done / bs < c / bs) return true;
    }
    return false;
}

static bool admit_one(mllm_engine *e) {
    mllm_eseq *s = e->waiting;
    if (!s || e->n_running >= e->p.max_running) return false;
    const int bs = e->p.block_size;
    int k = mllm_kv_prefix_lookup(&e->kp, &s->kv, s->tokens, s->salt, s->n_tokens);
    if (waits_for_shared_prefill(e, s, k)) {
        mllm_kv_seq_release(&e->kp, &s->kv); /* looked up again next step */
        e->st.prefix_waits++;
        return false;
    }
    /* (the partial block of mllm_kv_prefix_extend never lowers this) */
    const int need = (s->n_tokens + bs - 1) / bs - k / bs + 1;
    if (need > avail_blocks(e) - pending_blocks(e)) {
        mllm_kv_seq_release(&e->kp, &s->kv); /* the hit blocks go back to the cache */
        return false;
    }
    /* Blocks read from the store take pool blocks that need counted already. */
    if (e->store) k += mllm_engine_store_load(e, s);
    k += mllm_kv_prefix_extend(&e->kp, &s->kv, s->tokens, s->n_tokens);
    /* The last token is evaluated again (copy on write) so its logits exist. */
    int n_cached = k;
    if (n_cached == s->n_tokens) {
        n_cached = s->n_tokens - 1;
        mllm_kv_seq_truncate(&e->kp, &s->kv, n_cached);
    }
    s->n_done = n_cached;
    e->waiting = s->next;
    e->n_waiting--;
    int slot = 0;
    while (e->slot_used[slot]) slot++;
    e->slot_used[slot] = true;
    s->slot = slot;
    s->admit_order = ++e->n_admits;
    s->next = NULL;
    mllm_eseq **at = &e->running;
    while (*at) at = &(*at)->next;
    *at = s;
    e->n_running++;
    if (!s->admitted_once) {
        s->admitted_once = true;
        s->res.n_cached = n_cached;
        e->st.prefix_lookups++;
        e->st.prefix_hit_tokens += (uint64_t)n_cached;
        if (s->r.on_admit) s->r.on_admit(s->r.user, n_cached);
    }
    return true;
}

/* Sends the most recently admitted running sequence back to the front of
   the queue, its blocks released (full ones stay cached): it is recomputed
   from its tokens when there is room. */
static void preempt_newest(mllm_engine *e) {
    mllm_eseq **at = &e->running, **best = NULL;
    for (; *at; at = &(*at)->next)
        if (!best || (*at)->admit_order > (*best)->admit_order) best = at;
    mllm_eseq *s = *best;
    *best = s->next;
    e->n_running--;
    mllm_kv_seq_release(&e->kp, &s->kv);
    s->n_done = 0;
    s->n_step = 0;
    e->slot_used[s->slot] = false;
    s->slot = -1;
    s->res.n_preempted++;
    e->st.preemptions++;
    s->next = e->waiting;
    e->waiting = s;
    e->n_waiting++;
}

/* The plan: one token for each decoding sequence, then prompt chunks in
   admission order within the budget. Returns the blocks it takes. */
static int plan(mllm_engine *e) {
    int budget = e->p.prefill_chunk, blocks = 0;
    for (mllm_eseq *s = e->running; s; s = s->next) {
        const int rem = s->n_tokens - s->n_done;
        s->n_step = rem == 1 ? 1 : 0;
    }
    for (mllm_eseq *s = e->running; s; s = s->next) {
        const int rem = s->n_tokens - s->n_done;
        if (rem > 1 && budget > 0) {
            s->n_step = rem < budget ? rem : budget;
            budget -= s->n_step;
        }
        blocks += mllm_engine_blocks_needed(e, s, s->n_step);
    }
    return blocks;
}

/* Takes s off the running list and reports its end. */
static void retire(mllm_engine *e, mllm_eseq *s, const char *msg) {
    for (mllm_eseq **at = &e->running; *at; at = &(*at)->next)
        if (*at == s) {
            *at = s->next;
            e->n_running--;
            break;
        }
    seq_end(e, s, msg);
}

/* ---- prompt lookup ---- */

/* What one proposal of a costly proposer (propose_costly) costs itself, in
   tokens of output: its time over a step's time per token at B decodes
   (one decode: the measured one-token step; more: the fitted step time).
   Until both are measured, a third of a token (a draft a third the
   model's size). */
static double prop_cost(const mllm_engine *e, int B) {
    if (!e->p.propose_costly) return 0;
    if (B <= 1 && e->passes.c1_n > 0 && e->prop_n >= 4) return e->prop_ms / e->passes.c1_ms;
    const double step = mllm_spec_cost_step_ms(&e->cost, B > 0 ? B : 1);
    if (e->prop_n < 4 || !(step > 0)) return 1.0 / 3;
    return e->prop_ms / (step / (B > 0 ? B : 1));
}

/* A pass of s ended with `acc` of its k proposals kept. */
static void judge(mllm_engine *e, mllm_eseq *s, int k, int acc, int B) {
    e->st.spec_passes++;
    e->st.spec_drafted += (uint64_t)k;
    e->st.spec_accepted += (uint64_t)acc;
    mllm_spec_ctl_adapt(&s->spec, k, acc, e->p.spec_max);
    mllm_spec_ctl_observe(&s->spec, k, acc);
    /* gain: the tokens that needed no step of their own; cost: the extra
       tokens' share of the step (alone: what its length measured), and a
       costly proposer's own time */
    const double rows = B <= 1 ? mllm_spec_passes_cost(&e->passes, 1 + k) - 1 : k * mllm_spec_cost_token(&e->cost, B);
    const double c = rows + (s->prop_costly ? k * prop_cost(e, B) : 0);
    if (e->p.spec_mode == MLLM_SPEC_AUTO && mllm_spec_ctl_judge(&s->spec, acc, c, s->res.n_gen))
        e->st.spec_turned_off++;
}

/* s's proposal that was not verified, against the token that came. */
static void check_unverified(mllm_engine *e, mllm_eseq *s) {
    if (s->sh_at < 0) return;
    if (s->sh_shifts == s->res.n_shifts) {
        if (s->sh_at >= s->n_tokens) return; /* not come yet (preempted meanwhile) */
        const bool kept = s->tokens[s->sh_at] == s->sh_tok;
        mllm_spec_ctl_observe(&s->spec, 1, kept);
        e->st.spec_checked++;
        e->st.spec_checked_kept += kept;
    }
    s->sh_at = -1;
}

/* A costly proposer's proposals for s (at most cap, after its tokens),
   priced with MLLM_SPEC_AUTO (price; NULL: not), and not asked while s
   rests. With other decodes in the step it is also asked only for as many
   as the sequence's acceptance estimate expects to pay (none: now and
   then one, compared with the token that comes, so the estimate can
   recover). A call that proposed nothing counts against it, as its time
   went for nothing. Its time per proposal is averaged from each
   sequence's second call on (the first one also reads the prompt). */
static int propose_costly(mllm_engine *e, mllm_eseq *s, const mllm_spec_price *price, int B, int cap) {
    if (price) {
        if (!mllm_spec_ctl_on(&s->spec, s->res.n_gen)) return 0;
        if (B > 1) {
            const int want = mllm_spec_ctl_len(&s->spec, price->row[0] + price->step, cap);
            if (want == 0 && s->res.n_gen % 16 != 0) return 0;
            cap = want > 0 ? want : 1;
        }
    }
    const double t0 = mllm_clock_mono_ms();
    const int k = e->p.propose(e->p.propose_user, s->tokens, s->n_tokens, cap, price, s->tokens + s->n_tokens);
    if (price && k == 0 && mllm_spec_ctl_judge(&s->spec, 0, price->step, s->res.n_gen)) e->st.spec_turned_off++;
    if (!s->prop_seen) {
        s->prop_seen = true;
        return k;
    }
    double ms = (mllm_clock_mono_ms() - t0) / (k > 1 ? k : 1);
    /* catching up after a rest reads more: one sample moves the average at most 2x */
    if (e->prop_n && ms > 2 * e->prop_ms) ms = 2 * e->prop_ms;
    e->prop_ms = e->prop_n ? 0.8 * e->prop_ms + 0.2 * ms : ms;
    e->prop_n++;
    return k;
}

/* What each proposal would cost at a step of B decodes: one decode alone,
   each length as measured (e->passes); more, each row alike from the fit. */
static void price_of(const mllm_engine *e, int B, mllm_spec_price *pr) {
    const double cost = mllm_spec_cost_token(&e->cost, B);
    for (int i = 0; i <= MLLM_SPEC_MAX_DRAFT; i++) pr->row[i] = B <= 1 ? mllm_spec_passes_row(&e->passes, i) : cost;
    pr->step = prop_cost(e, B);
}

/* Proposals for the decoding sequences of the plan, within the blocks left
   over (`spare`): appended after each one's pending token. With
   MLLM_SPEC_AUTO only as many as are expected to pay at this step's cost
   per token (none: the first is kept to compare with what comes); a
   costly proposer prices its own. */
static void plan_lookup(mllm_engine *e, int spare) {
    if (e->p.spec_mode == MLLM_SPEC_OFF) return;
    const bool aut = e->p.spec_mode == MLLM_SPEC_AUTO;
    int B = 0;
    for (const mllm_eseq *s = e->running; s; s = s->next) B += s->n_step == 1 && s->n_tokens - s->n_done == 1;
    mllm_spec_price price;
    if (aut) price_of(e, B, &price);
    for (mllm_eseq *s = e->running; s; s = s->next) {
        if (s->n_step != 1 || s->n_tokens - s->n_done != 1 || s->r.constraint) continue;
        if (aut) check_unverified(e, s);
        /* Room: the context (with a position to spare, so the verdict never
           shifts it), and the tokens the request may still be given. */
        int cap = s->spec.n_cur;
        if (cap > e->p.n_ctx - s->n_tokens - 1) cap = e->p.n_ctx - s->n_tokens - 1;
        if (cap > s->sp.max_tokens - s->res.n_gen - 1) cap = s->sp.max_tokens - s->res.n_gen - 1;
        if (cap <= 0) continue;
        /* A proposer reads the context's ids: not an image's keys (engine.h), so
           a sequence with images has prompt lookup only. */
        const bool propose = e->p.propose && !s->emb;
        const bool costly = propose && e->p.propose_costly;
        int k = !propose || (costly && e->p.lookup_first)
                    ? mllm_ngram_lookup(s->tokens, s->n_tokens, e->p.ngram_min, e->p.ngram_max, cap,
                                        s->tokens + s->n_tokens)
                    : 0;
        s->prop_costly = k == 0 && costly;
        if (s->prop_costly) k = propose_costly(e, s, aut ? &price : NULL, B, cap);
        else if (k == 0 && propose)
            k = e->p.propose(e->p.propose_user, s->tokens, s->n_tokens, cap, aut ? &price : NULL,
                             s->tokens + s->n_tokens);
        if (k <= 0) continue;
        if (k > cap) k = cap;
        for (int i = 0; i < k; i++) /* a proposer's ids go into the graph: out of range is no proposal */
            if (s->tokens[s->n_tokens + i] < 0 || s->tokens[s->n_tokens + i] >= e->dec->cfg.n_vocab) k = i;
        if (k <= 0) continue;
        if (aut && !s->prop_costly) {
            const int n = !mllm_spec_ctl_on(&s->spec, s->res.n_gen) ? 0
                          : B <= 1 ? mllm_spec_ctl_len_costs(&s->spec, price.row, k)
                                   : mllm_spec_ctl_len(&s->spec, price.row[0], k);
            if (n == 0) {
                s->sh_at = s->n_tokens;
                s->sh_tok = s->tokens[s->n_tokens];
                s->sh_shifts = s->res.n_shifts;
                continue;
            }
            k = n;
        }
        const int extra = mllm_engine_blocks_needed(e, s, 1 + k) - mllm_engine_blocks_needed(e, s, 1);
        if (extra > spare) continue;
        spare -= extra;
        s->n_prop = k;
        s->n_step = 1 + k;
        s->n_tokens += k;
    }
}

/* s evaluated its pending token and n_prop proposals, P the pending one's
   position; rows their logits. Draws each next token from its row as a
   plain step would, down the proposals while the draw equals the proposed
   token; then keeps the K/V of what was delivered and registers its
   blocks. Returns true when s has finished. */
static bool verify(mllm_engine *e, mllm_eseq *s, const float *rows, int B) {
    const size_t V = (size_t)e->dec->cfg.n_vocab;
    const int k = s->n_prop, P = s->n_done - 1 - k;
    int32_t prop[MLLM_SPEC_MAX_DRAFT];
    memcpy(prop, s->tokens + P + 1, (size_t)k * sizeof *prop);
    s->n_prop = 0;
    int acc = 0;
    for (int i = 0; i <= k; i++) {
        s->n_done = P + 1 + i;
        s->n_tokens = P + 1 + i;
        if (mllm_engine_sample(e, s, rows + (size_t)i * V)) return true;
        if (i == k || s->tokens[P + 1 + i] != prop[i]) break;
        acc++;
    }
    mllm_kv_seq_truncate(&e->kp, &s->kv, s->n_done);
    mllm_kv_prefix_commit(&e->kp, &s->kv, s->tokens, s->salt);
    judge(e, s, k, acc, B);
    return false;
}

void mllm_engine_set_proposer(mllm_engine *e,
                              int (*propose)(void *, const int32_t *, int, int, const mllm_spec_price *, int32_t *),
                              void *user, bool costly) {
    e->p.propose = propose;
    e->p.propose_user = user;
    e->p.propose_costly = costly;
    e->prop_ms = 0;
    e->prop_n = 0;
}

mllm_status mllm_engine_step(mllm_engine *e) {
    sweep(e, &e->running, &e->n_running);
    sweep(e, &e->waiting, &e->n_waiting);
    while (admit_one(e)) {}
    if (!e->running) return MLLM_OK;
    int need;
    while ((need = plan(e)) > avail_blocks(e) && e->n_running > 1) preempt_newest(e);
    for (mllm_eseq *s = e->running; s; s = s->next) s->n_prop = 0;
    if (need <= avail_blocks(e)) plan_lookup(e, avail_blocks(e) - need);
    int T = 0, B = 0, n_seq = 0;
    for (mllm_eseq *s = e->running; s; s = s->next) {
        T += s->n_step > 0 ? s->n_step : 0;
        B += s->n_step > 0 && s->n_tokens - s->n_prop - s->n_done == 1; /* decodes */
        n_seq += s->n_step > 0;
    }
    e->st.steps++;
    int n_out = 0;
    const float *logits = NULL;
    const double t0 = e->p.step_ms ? 0 : mllm_clock_mono_ms();
    mllm_status st = mllm_engine_run_batch(e, &n_out, &logits);
    if (st != MLLM_OK) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", mllm_last_error());
        /* Their K/V are unknown now: every sequence of the batch ends. */
        for (mllm_eseq *s = e->running, *nx; s; s = nx) {
            nx = s->next;
            s->n_prop = 0;
            if (s->n_step <= 0) continue;
            s->res.finish = MLLM_ENGINE_ERROR;
            s->res.status = st;
            retire(e, s, msg);
        }
        return st;
    }
    /* Steps whose every token has logits, as the rows proposals add;
       tracing a graph is not a step's cost. */
    if (T > 0 && e->b_rows == T && !e->b_traced) {
        const double ms = e->p.step_ms ? e->p.step_ms(e->p.step_ms_user, T) : mllm_clock_mono_ms() - t0;
        mllm_spec_cost_add(&e->cost, T, ms);
        if (B == 1 && n_seq == 1) mllm_spec_passes_add(&e->passes, T, ms);
    }
    mllm_engine_store_save(e); /* before sampling: a sequence that ends now is still listed */
    const size_t V = (size_t)e->dec->cfg.n_vocab;
    const float *row = logits;
    for (int i = 0; i < n_out; i++) {
        mllm_eseq *s = e->b_out[i];
        if (s->forks) mllm_engine_fork(e, s); /* its prompt is read: the other choices share its K/V */
        const int rows = 1 + s->n_prop;
        const bool done = s->n_prop ? verify(e, s, row, B > 0 ? B : 1) : mllm_engine_sample(e, s, row);
        row += (size_t)rows * V;
        if (done) retire(e, s, s->res.finish == MLLM_ENGINE_ERROR ? mllm_last_error() : NULL);
    }
    return MLLM_OK;
}
