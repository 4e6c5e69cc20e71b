/* Tensors, the op API and the graph. Model code is written once against
   mllm_op_*(): in EAGER mode each op runs at once; in TRACE mode it records a
   node, and the graph is then executed as many times as needed. What changes
   from one call to the next (token ids, positions) is graph inputs: I32
   tensors the caller fills before each execute (mllm_graph_input_i32); ops
   read them as any other source, nothing reaches a kernel another way. */
#ifndef MLLM_GRAPH_GRAPH_H
#define MLLM_GRAPH_GRAPH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/arena.h"
#include "core/tensor.h"
#include "core/threadpool.h"
#include "backends/backend.h"
#include "kv/kv_layout.h"

typedef enum { MLLM_MODE_EAGER = 0, MLLM_MODE_TRACE = 1 } mllm_mode;

typedef struct {
    mllm_mode mode;
    mllm_arena arena;      /* tensor structs and activations */
    mllm_tensor **nodes;   /* in execution order (trace mode) */
    int n_nodes, cap_nodes;
    mllm_pool *pool;
    mllm_tensor **views;   /* trace mode: views to resolve after planning */
    int n_views, cap_views;
    void *buf;             /* trace mode: activations, placed by the planner */
    size_t buf_size;
    void *work;            /* scratch shared by the threads of one node */
    size_t work_size;
    bool failed;           /* an allocation failed while building */
    bool exact;            /* matmuls built from now on keep f32 activations (mllm_load_params.exact) */
    bool batch_gemm;       /* matmuls built from now on may take the CPU's packed-panel GEMM for float
                              weights, whose sums depend on the batch: encoders (vision towers), which
                              need no batch invariance, not decoders */
    /* Matmuls built from now on by f16 / bf16 weights with many activation
       rows run on the CPU's packed GEMM (activations rounded to the
       weight's type once, then widened): faster, but a row's sums depend
       on the batch, so only for callers that need no batch invariance
       (Whisper's encoder and prompts). */
    bool gemm;
    /* Nodes of fewer multiply-adds than this run on the calling thread
       alone (mllm_exec_ctx.serial_below): for graphs of many small nodes
       (Whisper's decoder steps), where waking a worker and meeting it at
       every node's barrier costs more than it saves on a busy machine. */
    int64_t serial_below;
    /* The backends to schedule over, in order of preference (the CPU last,
       as the fallback); none: the CPU alone. Set before mllm_graph_plan. */
    mllm_backend *backends[MLLM_MAX_BACKENDS];
    int n_backends;
    struct mllm_sched *sched; /* built by mllm_graph_plan when backends holds more than the CPU */
} mllm_graph;

void mllm_graph_init(mllm_graph *g, mllm_mode mode, mllm_pool *pool, size_t arena_chunk);
void mllm_graph_free(mllm_graph *g);
/* Forgets all nodes and activations (keeps the memory for reuse). */
void mllm_graph_reset(mllm_graph *g);
/* A graph input: n int32 values in memory the graph owns (until reset or
   free), to be written through mllm_tensor_i32() before each execute. */
mllm_tensor *mllm_graph_input_i32(mllm_graph *g, int64_t n, const char *name);
/* A 2-D one (ne0 x ne1, ne0 fastest): block tables. */
mllm_tensor *mllm_graph_input_i32_2d(mllm_graph *g, int64_t ne0, int64_t ne1, const char *name);
/* The same for an F32 matrix of ne0 x ne1 values (input embeddings). */
mllm_tensor *mllm_graph_input_f32(mllm_graph *g, int64_t ne0, int64_t ne1, const char *name);
static inline int32_t *mllm_tensor_i32(mllm_tensor *t) { return (int32_t *)t->data; }
/* Trace mode: places every activation in one buffer, reusing the memory of
   tensors after their last reader (outputs are kept). Returns false on
   out-of-memory. Must be called once after building, before executing. */
bool mllm_graph_plan(mllm_graph *g, mllm_tensor **outputs, int n_outputs);
/* Runs every recorded node in order (trace mode). */
void mllm_graph_execute(mllm_graph *g);
/* The backends a trace graph runs on (graph/sched.c), before planning. */
void mllm_graph_set_backends(mllm_graph *g, mllm_backend *const *backends, int n);
/* One line per node (index, op, name, shape, inputs; newline included) to
   line (mllm.h's mllm_text_sink). */
void mllm_graph_print(const mllm_graph *g, void (*line)(void *user, const char *text, size_t len), void *user);
const char *mllm_op_name(mllm_op op);

/* A leaf tensor over existing memory (weights: mmap'd, not copied). */
mllm_tensor *mllm_tensor_wrap(mllm_graph *g, int dtype, int n_dims, const int64_t *ne,
                              const void *data, const char *name);
/* A new f32 activation tensor. */
mllm_tensor *mllm_tensor_new_f32(mllm_graph *g, int n_dims, const int64_t *ne, const char *name);

/* ---- ops (every op: NULL inputs or a build failure give NULL) -------- */
/* Positions: one per token. The contiguous KV ops (mllm_op_kv_store,
   mllm_op_attention) take one sequence at consecutive positions per call;
   the paged ones (below) any positions of several sequences. */
mllm_tensor *mllm_op_get_rows(mllm_graph *g, mllm_tensor *table, mllm_tensor *ids);
mllm_tensor *mllm_op_rmsnorm(mllm_graph *g, mllm_tensor *x, mllm_tensor *w, float eps);
mllm_tensor *mllm_op_matmul(mllm_graph *g, mllm_tensor *w, mllm_tensor *x, mllm_tensor *bias);
mllm_tensor *mllm_op_rope(mllm_graph *g, mllm_tensor *x, mllm_tensor *pos, const mllm_rope_params *rp);
mllm_tensor *mllm_op_kv_store(mllm_graph *g, mllm_tensor *k, mllm_tensor *v, mllm_tensor *pos,
                              const mllm_kv_layer *kv);
/* q: (D, H, T); dep: the KV_STORE node that must run first. Out: (D*H, T).
   scale multiplies q.k (1/sqrt(D) for most models); window > 0: a token at
   position p sees positions (p - window, p] only (sliding-window layers). */
mllm_tensor *mllm_op_attention(mllm_graph *g, mllm_tensor *q, mllm_tensor *dep, mllm_tensor *pos,
                               const mllm_kv_layer *kv, int n_head_kv, float scale, int window);
/* The paged KV cache (kv/kv_layout.h; src/kv owns the blocks).
   seq: each token's sequence, an I32 vector of T; table: I32 (max_blocks,
   n_seq), row s the block ids of sequence s (position p in block
   table[s][p / block_size]). Positions need not be consecutive, and tokens
   of several sequences may share one call; a token attends to positions
   (window > 0: the last `window`) up to its own of its own sequence only. */
mllm_tensor *mllm_op_kv_store_paged(mllm_graph *g, mllm_tensor *k, mllm_tensor *v, mllm_tensor *pos, mllm_tensor *seq,
                                    mllm_tensor *table, const mllm_kv_paged *kv);
mllm_tensor *mllm_op_attention_paged(mllm_graph *g, mllm_tensor *q, mllm_tensor *dep, mllm_tensor *pos,
                                     mllm_tensor *seq, mllm_tensor *table, const mllm_kv_paged *kv, int n_head_kv,
                                     float scale, int window);
mllm_tensor *mllm_op_silu_mul(mllm_graph *g, mllm_tensor *a, mllm_tensor *b);
mllm_tensor *mllm_op_gelu_mul(mllm_graph *g, mllm_tensor *a, mllm_tensor *b);
mllm_tensor *mllm_op_scale(mllm_graph *g, mllm_tensor *x, float s);
mllm_tensor *mllm_op_softcap(mllm_graph *g, mllm_tensor *x, float cap);
mllm_tensor *mllm_op_layernorm(mllm_graph *g, mllm_tensor *x, mllm_tensor *w, mllm_tensor *b, float eps);
/* 0.5 x (1 + erf(x / sqrt 2)) per element (not gated: BERT's FFN). */
mllm_tensor *mllm_op_gelu(mllm_graph *g, mllm_tensor *x);
/* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) per element (SigLIP). */
mllm_tensor *mllm_op_gelu_tanh(mllm_graph *g, mllm_tensor *x);
/* RoPE with the angles given per token instead of positions: x (D, H, T),
   cs and sn (D/2, T) f32 (graph inputs the model fills: cos and sin of
   each rotated pair's angle); pair i is dims i and i + D/2 (rotate_half).
   For position schemes the plain op has no rule for (a ViT's 2-D rows and
   columns). */
mllm_tensor *mllm_op_rope_table(mllm_graph *g, mllm_tensor *x, mllm_tensor *cs, mllm_tensor *sn);
/* Attention of encoders over segments of tokens (a ViT's windows or
   tiles): q, k, v (D * n_head, T) f32 contiguous, heads side by side in
   each row; segs an I32 input of n_segs + 1 ascending token offsets from 0
   to T, each segment's tokens seeing each other only (no mask, no KV
   cache). scale multiplies q.k. Out: (D * n_head, T). */
mllm_tensor *mllm_op_attention_segments(mllm_graph *g, mllm_tensor *q, mllm_tensor *k, mllm_tensor *v,
                                        mllm_tensor *segs, int n_head, float scale);
/* The same with the CPU path's vector erf (AVX2: NMSE ~1e-14 against
   libm's, which mllm_op_gelu keeps for BERT's reference bits): Whisper's. */
mllm_tensor *mllm_op_gelu_fast(mllm_graph *g, mllm_tensor *x);
/* The attention node a (from mllm_op_attention) made non-causal: for
   encoders (BERT, ViT, Whisper's encoder), whose tokens all see each other.
   Trace mode (in eager mode the node has already run, causally). */
mllm_tensor *mllm_op_attention_noncausal(mllm_tensor *a);
mllm_tensor *mllm_op_add(mllm_graph *g, mllm_tensor *a, mllm_tensor *b);
/* A plugin's op (backends/plugin.h, mllm_op_register) by name over n_in
   contiguous f32 inputs; NULL (and g->failed, the error message set) for
   an unknown name, a wrong input count or shapes its rule rejects. */
mllm_tensor *mllm_op_custom(mllm_graph *g, const char *name, mllm_tensor *const *in, int n_in);
/* ---- encoder-decoder ops (Whisper) ---------------------------------- */
/* The columns of a 1-D convolution: x (C, T_in), a row of C channels per
   frame -> (C * k, T_out), row t holding x[t * stride + j - pad][c] at
   c * k + j (zero outside), T_out = (T_in + 2 pad - k) / stride + 1. A
   matmul by the weights stored [out][in][k] is then the convolution
   (ggml's im2col + mul_mat), so the heavy part runs where matmuls do. */
mllm_tensor *mllm_op_im2col(mllm_graph *g, mllm_tensor *x, int k, int stride, int pad);
/* Attention of every query over every key, K and V given as tensors (no
   cache: an encoder's self-attention): q (n_head * hd, n_q), k and v
   (n_head * hd, n_k), rows of any stride (mllm_op_view_elems of one fused
   QKV output). Scale 1 / sqrt(hd). Out (n_head * hd, n_q). */
mllm_tensor *mllm_op_attention_full(mllm_graph *g, mllm_tensor *q, mllm_tensor *k, mllm_tensor *v, int n_head);
/* Writes k and v (dim, T; rows of any stride) of token t at position
   pos[t] of slot slot[t] of the slot cache (core/tensor.h); pos NULL:
   position t; slot NULL: slot 0. */
mllm_tensor *mllm_op_kv_slots_store(mllm_graph *g, mllm_tensor *k, mllm_tensor *v, mllm_tensor *pos,
                                    mllm_tensor *slot, const mllm_kv_slots *kv);
/* Attention of q (dim, T) over a slot cache; dep: the store that must run
   first (or NULL). The T tokens are n_runs runs of T / n_runs tokens, each
   of one sequence at consecutive positions, run r in slot slot[r * T /
   n_runs] (slot NULL: 0). causal: a token at position p sees positions
   [0, p] (pos given); else every token sees [0, n_keys). Out (dim, T). */
mllm_tensor *mllm_op_attention_slots(mllm_graph *g, mllm_tensor *q, mllm_tensor *dep, mllm_tensor *pos,
                                     mllm_tensor *slot, const mllm_kv_slots *kv, int n_runs, bool causal,
                                     int n_keys);

/* Views (no copy, no compute). */
mllm_tensor *mllm_op_reshape(mllm_graph *g, mllm_tensor *x, int n_dims, const int64_t *ne);
/* Columns [c0, c0+n) of a 2-D tensor (tokens [c0, c0+n)). */
mllm_tensor *mllm_op_view_cols(mllm_graph *g, mllm_tensor *x, int64_t c0, int64_t n);
/* Values [e0, e0 + n) of every row of a 2-D tensor, rows keeping x's
   stride (q, k and v of a fused QKV output). Read only by the ops that say
   so (attention_full, kv_slots_store). */
mllm_tensor *mllm_op_view_elems(mllm_graph *g, mllm_tensor *x, int64_t e0, int64_t n);

#endif
