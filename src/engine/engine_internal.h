/* What the engine's files share (engine.c: sequences, admission, the
   step; engine_batch.c: the micro-batch and its forward; engine_sample.c:
   a sequence's next token). */
#ifndef MLLM_ENGINE_ENGINE_INTERNAL_H
#define MLLM_ENGINE_ENGINE_INTERNAL_H
#include "engine/engine.h"
#include "graph/graph.h"
#include "kv/kv_pool.h"
#include "kv/kv_store.h"
#include "runtime/sampler.h"
#include "runtime/spec_ctl.h"
#include "runtime/token_text.h"

typedef struct mllm_eseq {
    struct mllm_eseq *next;   /* in the waiting list or the running list */
    mllm_engine_request r;    /* prompt / sampling / constraint point at the copies below */
    mllm_sampling sp;
    int32_t *tokens;          /* (n_ctx + 1) the context: prompt, generated, and a sampled token not yet evaluated */
    int n_tokens;             /* tokens[0, n_tokens) */
    int n_done;               /* of which have K/V in kv (kv.n_tokens after a step) */
    mllm_kv_seq kv;
    mllm_sampler smp;
    mllm_token_text text;
    int n_step;               /* tokens it evaluates in this step's batch (the plan) */
    int n_prop;               /* of which prompt-lookup proposals, after the pending token (all with logits) */
    mllm_spec_ctl spec;       /* prompt lookup's controller (engine.c) */
    int sh_at;                /* a proposal not verified, compared with the token at this index once known; -1: none */
    int32_t sh_tok;
    bool prop_seen;           /* a costly proposer was asked about it once (its prompt read) */
    bool prop_costly;         /* its proposals of this step are a costly proposer's (not lookup's) */
    int sh_shifts;            /* res.n_shifts when it was made (a shift moves the tokens: it is dropped) */
    int slot;                 /* its row of the block table while running, else -1 */
    uint64_t admit_order;     /* later admissions are preempted first */
    bool admitted_once;
    /* Images (engine.h): the rows of the prompt's image tokens, the row of
       each prompt position (-1: a token's own), its rotation positions */
    float *emb;               /* (rows x n_embd) NULL: a text prompt */
    int32_t *emb_at;          /* (n_prompt) */
    int32_t *rpos;            /* (3 x n_prompt) M-RoPE; NULL: consecutive */
    int rope_delta;           /* positions from n_prompt on turn at position + rope_delta */
    int32_t image_token;      /* what the graph gets as an image token's id */
    uint64_t *salt;           /* (n_ctx / block_size + 1) each block's prefix-key salt (kv_pool.h): 0, or
                                 the identities of the images whose rows it holds; NULL: all 0 */
    int st_saved;             /* leading prompt blocks known in the prefix store; -1: stop writing */
    uint64_t st_key, st_parent; /* the chain key and store serial of block st_saved - 1 */
    mllm_engine_result res;
    /* n > 1 (engine_fork.c): the other choices, waiting for this one's
       prompt K/V to share them; NULL: none (or forked already) */
    struct mllm_eseq *forks;
} mllm_eseq;

/* One traced graph, kept for its batch shape (T tokens, n_out logits). */
typedef struct {
    mllm_graph g;
    mllm_decoder_inputs in;
    mllm_tensor *logits;
    int T, n_out;
    bool embd;                /* takes input embeddings (a step with image tokens) */
    uint64_t used;            /* step of last use: the least recent is retraced */
    bool traced;
} mllm_egraph;

struct mllm_engine {
    const mllm_decoder *dec;
    const mllm_tokenizer *tok;
    const mllm_model_file *file;
    mllm_pool *pool;
    mllm_engine_params p;
    mllm_kv_pool kp;
    int max_blocks;           /* per table row: ceil(n_ctx / block_size) */
    mllm_eseq *waiting;       /* FIFO (preempted ones go back to its front) */
    mllm_eseq *running;       /* in admission order */
    int n_running, n_waiting;
    bool *slot_used;          /* (max_running) */
    uint64_t n_admits;
    mllm_egraph graphs[MLLM_ENGINE_GRAPH_CACHE];
    /* the batch being built (engine_batch.c), sized for max_running + prefill_chunk tokens */
    size_t b_cap;             /* tokens a batch holds */
    int32_t *b_ids, *b_pos, *b_seq;
    int32_t *b_rpos;          /* 3 rows of the batch's capacity: the rotation positions */
    const float **b_emb;      /* an image token's row, else NULL */
    int32_t *recent;          /* (n_ctx + 1) the penalty window of a sequence with images (engine_sample.c) */
    mllm_eseq **b_out;        /* (max_running) the sequences whose logits the batch returns, in row order
                                 (1 + n_prop rows each) */
    mllm_engine_stats st;
    /* step time against batch tokens, for the lookup controller: fitted
       on steps whose every token has logits (decodes and proposals, the
       rows proposals add) and that traced no graph */
    mllm_spec_cost cost;
    /* the steps of one sequence's decode (and its proposals) alone: what
       each length costs against a one-token step, as the session measures
       its passes (runtime/spec_ctl.h) */
    mllm_spec_passes passes;
    double prop_ms;           /* a costly proposer (propose_costly): its time per proposal, moving average */
    int prop_n;
    int b_rows;               /* the last batch: rows with logits, and whether it traced a graph */
    bool b_traced;
    mllm_kv_store *store;     /* NULL: no prefix store */
    uint8_t **store_bufs;     /* (n_layer) one block's bytes in each layer */
    bool store_failed;
    char store_note[600];
};

/* engine_batch.c: builds the step's micro-batch from the running
   sequences' plans (n_step tokens each, from n_done; their K/V blocks are
   reserved here), runs it, and returns the sequences with logits (*out,
   e->b_out, n_out of them) and their logits (*logits: 1 + n_prop rows per
   sequence, in b_out's order, n_vocab each). n_out 0: nothing to do. A
   speculating sequence's n_done then counts its proposals too: the caller
   verifies them, truncates and registers its blocks. Errors end nobody;
   the caller does. */
mllm_status mllm_engine_run_batch(mllm_engine *e, int *n_out, const float **logits);
/* The blocks that growing s by n positions takes from the pool (new ones
   and copies on write), as mllm_kv_seq_grow would. */
int mllm_engine_blocks_needed(const mllm_engine *e, const mllm_eseq *s, int n);

/* engine_sample.c: the next token of s from its logits, delivered through
   its callbacks; returns true when s has finished (s->res filled, not yet
   reported). */
bool mllm_engine_sample(mllm_engine *e, mllm_eseq *s, const float *logits);

/* engine.c: frees s without a callback (it was never reported). */
void mllm_engine_seq_free(mllm_engine *e, mllm_eseq *s);

/* engine_fork.c: s (in this step's output) has its prompt's K/V: its forks
   share them and run (or wait at the front of the queue for a slot). */
void mllm_engine_fork(mllm_engine *e, mllm_eseq *s);
/* s ends before its prompt was read: its forks go to the front of the
   queue as sequences of their own. */
void mllm_engine_forks_release(mllm_engine *e, mllm_eseq *s);

/* engine_store.c: opens e->p.store_dir's store (nothing without one). */
mllm_status mllm_engine_store_open(mllm_engine *e);
/* At admission, after the pool's prefix hit: the following full prompt
   blocks found in the store are read into new pool blocks (registered);
   returns the positions they hold. */
int mllm_engine_store_load(mllm_engine *e, mllm_eseq *s);
/* After a step: the running sequences' full prompt blocks not yet in the
   store are written, then committed (mllm_kv_store_flush). */
void mllm_engine_store_save(mllm_engine *e);

#endif
