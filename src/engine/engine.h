/* The engine: the step loop that serves many sequences of one decoder on
   one KV block pool (src/kv) and one thread pool.

   A request is submitted (it waits in a FIFO); each mllm_engine_step admits
   waiting sequences while fewer than max_running run and the pool has room
   for their prompt, builds one micro-batch (one token per running sequence
   that decodes, then bounded chunks of pending prompts, so running streams
   keep flowing while a long prompt is read), runs ONE multi-sequence
   forward (mllm_decoder_forward with ids, positions, sequence ids and
   block tables as graph inputs), samples each sequence that produced
   logits with its own sampler (and grammar: runtime/constraint.h),
   and reports its tokens through the request's callbacks.

   Prefix cache: an admitted sequence first takes, from the pool's prefix
   index, the registered full blocks that hold the start of its prompt (any
   earlier sequence's, prompt or generated text), then the leading
   positions of one more registered block that continues that chain (a
   prompt that diverges, or ends, inside a block another sequence filled:
   shared copy on write); it computes only the rest.
   n_cached in mllm_engine_result is that count exactly. Every full block a
   sequence computes is registered, so later requests find it. With a
   prefix store (store_dir), full blocks of a prompt that the pool does not
   hold are read from the store after the pool's hit (they count in
   n_cached too), and every full prompt block is written to it after the
   step that computes it (engine_store.c).

   A request whose prompt shares more full blocks with a prompt another
   running sequence is still reading than the cache holds yet waits (first
   in first out, as always) until those blocks are registered, then takes
   them: clients that arrive together with one long system prompt compute
   it once.

   Pool-full policy: a waiting sequence is admitted only when the free and
   evictable (cached, unreferenced) blocks cover its whole prompt plus one
   block, FIFO (a later, smaller request does not overtake it). When a
   running sequence needs a block during a step and none is left, the most
   recently admitted other sequence is preempted: its blocks are released
   (full ones stay in the prefix cache) and it goes back to the front of the
   queue with its prompt and the tokens generated so far, to be recomputed
   when there is room. Its output is unchanged: a token's logits do not
   depend on what shares its batch or on what came from the cache.

   Prompt lookup (speculation without a draft model, docs/speculative.md):
   a decoding sequence whose context repeats the n-gram it ends with gets
   the tokens that followed that n-gram appended to its step, all with
   logits; its sampler then draws each next token as usual and keeps going
   down the proposals while its draw equals the proposed token. Every
   delivered token is the sampler's own draw from the logits it would have
   had without speculation (the same bits: a token's logits do not depend
   on its batch), with the same random numbers, so greedy and seeded text
   are identical with speculation on or off; the K/V of refused proposals
   is dropped before the sequence's blocks are registered. MLLM_SPEC_AUTO
   weighs, before each pass, how likely a sequence's proposals are to be
   kept against what one more token costs the step (a sequence decoding
   alone: each pass length's measured time, as a session's speculation
   does; in a batch, a linear fit of step time against batch tokens,
   measured as the engine runs: nearly a token of output in a full batch
   on few cores),
   and verifies only the proposals expected to gain more than they cost
   (runtime/spec_ctl.h); a proposal it does not verify is compared with
   the token that comes next, at no cost, so the estimate keeps learning.
   It also judges each sequence every 8 passes by the tokens its proposals
   saved against that cost, and rests a sequence's lookup when it did not
   pay.
   Grammar-constrained sequences do not speculate.

   One thread drives an engine (submit, cancel, step, stats, free); a
   request's `cancel` flag may be set from any thread. A draft model
   proposes through the `propose` hook (api/engine_draft.c), one sequence
   at a time.

   Images (mllm_engine_image): a prompt's image tokens take the vision
   tower's rows instead of their token's (a step that holds any feeds the
   graph input embeddings: the text rows looked up as the graph would),
   and, with M-RoPE, the prompt's own 3-row rotation positions; the text
   after the prompt turns at its position plus the image's offset, as a
   session does (api/session_image.c). For the prefix cache an image
   token is keyed by its image's identity and its row (a negative 31-bit
   id in the sequence's tokens, never a vocabulary id), and a block that
   holds image rows by the full 64-bit identities of their images too
   (its salt, kv/kv_pool.h), so two different images never share a block
   (to the strength of that hash) and the same image at the same place
   does. The identity is a hash of the image file's bytes, the tower's
   preprocessing, its weights and backends (models/vision_cache.h), the
   same in every process: image blocks go to the prefix store and a
   restarted server reads them back. What else makes their K/V differ is
   in the chain before them (the text before, earlier images) or follows
   from the identity (the rows, M-RoPE's grid and so the positions of the
   image and of the text after it). Such a sequence does not shift its
   context (a full context ends it, MLLM_ENGINE_LENGTH). */
#ifndef MLLM_ENGINE_ENGINE_H
#define MLLM_ENGINE_ENGINE_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <mllm/mllm.h>
#include "core/threadpool.h"
#include "runtime/spec_ctl.h"
#include "formats/model_file.h"
#include "models/decoder/decoder.h"
#include "runtime/constraint.h"
#include "tokenizer/tokenizer.h"

#define MLLM_ENGINE_DEFAULT_CHUNK 256  /* prompt tokens per step, all prefills together */
#define MLLM_ENGINE_MAX_RUNNING 256
#define MLLM_ENGINE_GRAPH_CACHE 8      /* traced graphs kept, by batch shape */

typedef struct mllm_engine mllm_engine;

typedef struct {
    int max_running;  /* sequences stepped together, [1, MLLM_ENGINE_MAX_RUNNING] */
    int n_ctx;        /* positions per sequence */
    int n_blocks;     /* of the pool; >= one whole context + 1 */
    int block_size;   /* positions per block (0: 16) */
    int kv_dtype;     /* mllm_kv_dtype: MLLM_KV_DTYPE_F32 / F16 / Q8 */
    int prefill_chunk;/* prompt tokens per step (0: MLLM_ENGINE_DEFAULT_CHUNK) */
    bool exact;       /* mllm_load_params.exact */
    int spec_mode;    /* prompt lookup: mllm_spec_mode (0: MLLM_SPEC_AUTO) */
    int spec_max;     /* most tokens proposed per pass, 1..MLLM_SPEC_MAX_DRAFT (0: 8) */
    int ngram_min, ngram_max; /* n-gram lengths tried, longest first, 1..8 (0: 2, 4) */
    /* The proposer (NULL: prompt lookup): up to cap tokens to follow
       ctx[0, n) (prompt, generated, the pending token last) into out;
       returns how many. price (NULL: none, propose up to cap): what each
       proposal would cost at this step, for a proposer that weighs it
       against how sure it is (runtime/spec_ctl.h). Called on the stepping
       thread. */
    int (*propose)(void *user, const int32_t *ctx, int n, int cap, const mllm_spec_price *price, int32_t *out);
    void *propose_user;
    /* The proposer runs a model (a draft: api/engine_draft.h): with
       MLLM_SPEC_AUTO its time per proposal counts as part of what a
       proposal costs (price.step), it is not asked while the sequence's
       speculation rests (prompt lookup is asked every step: it costs
       nothing), and beside other decodes only for as many proposals as
       the sequence's acceptance estimate expects to pay. */
    bool propose_costly;
    /* With a costly proposer: prompt lookup (ngram_min/max) proposes
       first, the proposer only where it has no match. */
    bool lookup_first;
    /* For tests (NULL: the clock): the time in ms a step of n_tokens
       tokens is taken to have cost, for the lookup controller. */
    double (*step_ms)(void *user, int n_tokens);
    void *step_ms_user;
    /* The persistent prefix store (engine_store.c, src/kv/kv_store.h):
       a folder (NULL: none) and its file's size in bytes (0: the default).
       Needs the model file (the store is keyed by its identity). */
    const char *store_dir;
    uint64_t store_bytes;
} mllm_engine_params;

#define MLLM_ENGINE_DEFAULT_STORE_BYTES ((uint64_t)1 << 30)

typedef enum {
    MLLM_ENGINE_STOP,      /* end of generation, grammar complete, or on_token asked to stop */
    MLLM_ENGINE_LENGTH,    /* max_tokens, or the context is full (no context shift) */
    MLLM_ENGINE_CANCELLED, /* *cancel was set, or the engine is freed */
    MLLM_ENGINE_ERROR      /* see status and message */
} mllm_engine_finish;

typedef struct {
    mllm_engine_finish finish;
    mllm_status status;
    const char *message;   /* with MLLM_ENGINE_ERROR; valid during the call */
    int n_prompt;          /* prompt tokens */
    int n_cached;          /* of which came from the prefix cache (first admission) */
    int n_gen;             /* tokens generated */
    int n_shifts;          /* context shifts */
    int n_preempted;       /* times the sequence was preempted and recomputed */
} mllm_engine_result;

/* A request's images (mllm_engine_request.image), copied at submit: the
   prompt's image_token ids take, in prompt order, the rows of emb
   (n_embd floats each): image k's n_rows[k] rows, whose identity is id[k]
   (equal ids, equal rows, in every process: the vision cache's key,
   models/vision_cache.h; never 0). rope_pos
   (M-RoPE models: 3 rows of n_prompt; NULL: consecutive positions) rotates
   the prompt; a later position p turns at p + rope_delta. */
typedef struct {
    int n_images;
    const uint64_t *id;
    const int64_t *n_rows;
    const float *emb;
    int32_t image_token;
    const int32_t *rope_pos;
    int rope_delta;
} mllm_engine_image;

typedef struct {
    const int32_t *prompt; /* (n_prompt) copied at submit */
    int n_prompt;
    const mllm_sampling *sampling; /* copied; its grammar is ignored (see constraint) */
    /* Grammar-constrained sampling (runtime/constraint.h): advanced by this
       sequence's tokens, so one a sequence; the caller's until on_finish.
       NULL: unconstrained. */
    mllm_constraint *constraint;
    bool context_shift;    /* a full context keeps n_keep tokens, drops half of the rest, goes on */
    int n_keep;
    const mllm_engine_image *image; /* NULL: a text prompt */
    const atomic_bool *cancel; /* NULL: none; read at every step */
    /* Called on the stepping thread. on_token as mllm_generate's (nonzero:
       stop); on_admit when the sequence first starts (n_cached known);
       on_finish exactly once, last. */
    mllm_on_token on_token;
    void (*on_admit)(void *user, int n_cached);
    void (*on_finish)(void *user, const mllm_engine_result *r);
    void *user;
} mllm_engine_request;

typedef struct {
    int running, waiting;
    int blocks_total, blocks_free, blocks_cached, blocks_used;
    uint64_t prefix_lookups, prefix_hit_tokens; /* admissions, and prompt tokens they took from the cache */
    uint64_t prefix_waits;    /* steps a request waited for a running prompt's shared blocks */
    uint64_t tokens_generated, tokens_evaluated, steps, preemptions; /* evaluated: every token of every batch */
    uint64_t spec_passes, spec_drafted, spec_accepted, spec_turned_off; /* prompt lookup */
    uint64_t spec_checked, spec_checked_kept; /* proposals not verified (not worth a row), compared with what came */
    /* the prefix store (zeros without one): blocks read from it into the
       pool, blocks written, entries and their bytes in the file now */
    uint64_t store_hit_blocks, store_writes, store_entries, store_bytes;
    bool store_failed; /* a write failed: the store only reads now (mllm_engine_store_note says why) */
} mllm_engine_stats;

/* dec, tok, pool and file (NULL: unchecked) must outlive the engine. */
mllm_status mllm_engine_new(const mllm_decoder *dec, const mllm_tokenizer *tok, const mllm_model_file *file,
                            mllm_pool *pool, const mllm_engine_params *p, mllm_engine **out);
/* Ends every sequence (on_finish CANCELLED) and frees. NULL ok. */
void mllm_engine_free(mllm_engine *e);
/* Queues a request. Errors (nothing is queued, no callback is called):
   MLLM_ERR_INVALID_ARG (empty prompt, id out of range, prompt >= n_ctx,
   image rows that do not match the image tokens), MLLM_ERR_NOMEM. */
mllm_status mllm_engine_submit(mllm_engine *e, const mllm_engine_request *r);
/* n > 1 choices of one prompt: r is queued as by mllm_engine_submit, and
   each of forks[0, n_forks) (its own sampling, constraint, cancel and
   callbacks; its prompt fields are ignored: r's is its prompt) waits on
   it. Once r's prompt is read, each fork takes a share of its K/V blocks
   (mllm_kv_seq_fork), evaluates only the prompt's last position again for
   the logits of its own first draw, and runs as a sequence of its own: the
   prompt is read once. A fork with no free running slot then, or whose r
   ends before its prompt is read, waits at the front of the queue and takes
   its prompt from the prefix cache. Each one's output is what it would be
   alone. Errors as mllm_engine_submit (nothing is queued). */
mllm_status mllm_engine_submit_forks(mllm_engine *e, const mllm_engine_request *r, const mllm_engine_request *forks,
                                     int n_forks);
/* One micro-batch. Finished sequences have had their on_finish. Returns
   MLLM_OK (also when idle); an error of the forward itself ends every
   sequence in the batch with MLLM_ENGINE_ERROR and is returned. */
mllm_status mllm_engine_step(mllm_engine *e);
/* Nothing running or waiting. */
bool mllm_engine_idle(const mllm_engine *e);
/* Replaces the proposer (mllm_engine_params.propose, propose_user,
   propose_costly), say one that needs the engine's thread pool; between
   steps only. */
void mllm_engine_set_proposer(mllm_engine *e,
                              int (*propose)(void *, const int32_t *, int, int, const mllm_spec_price *, int32_t *),
                              void *user, bool costly);
void mllm_engine_get_stats(const mllm_engine *e, mllm_engine_stats *out);
/* What opening the prefix store found ("" without one): a line for the log. */
const char *mllm_engine_store_note(const mllm_engine *e);
/* The identity a prefix store is keyed by (engine_store.c): content, the
   hash of every byte of the model's files (formats/model_hash.h), its
   hyper-parameters and the settings that change K/V bits. */
uint64_t mllm_engine_model_identity(const mllm_engine *e, uint64_t content);
/* Bytes of K/V per token position in the pool (all layers). */
size_t mllm_engine_kv_token_bytes(const mllm_hparams *c, int kv_dtype);

#endif
