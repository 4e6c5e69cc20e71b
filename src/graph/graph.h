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
#include "core/threadpool.h"
#include "backends/cpu/kv_paged.h"

typedef enum {
    MLLM_OP_NONE = 0,  /* a leaf: weight or input */
    MLLM_OP_VIEW,      /* no compute: a reshaped/offset view of src[0] */
    MLLM_OP_GET_ROWS,  /* rows of src[0] (embedding table) picked by the ids in src[1] (I32) */
    MLLM_OP_RMSNORM,   /* per row of ne[0]: x / rms(x) * w */
    MLLM_OP_MATMUL,    /* src[0] weight (K x N) . src[1] (K x T) (+ src[2] bias); ip[2]: exact (f32 activations) */
    MLLM_OP_ROPE,      /* rotates heads of src[0] (D x H x T) of token t at position src[1][t] (I32) */
    MLLM_OP_KV_STORE,  /* writes k = src[0], v = src[1] into a KV layer at the positions src[2] */
    MLLM_OP_ATTENTION, /* causal softmax(fp[0] q k^T) v over the KV layer; ip[1] > 0: a sliding window;
                          ip[3]: not causal (every token sees every stored key: encoders) */
    MLLM_OP_SILU_MUL,  /* silu(src[0]) * src[1] */
    MLLM_OP_ADD,       /* src[0] + src[1] */
    MLLM_OP_SCALE,     /* src[0] * fp[0] */
    MLLM_OP_GELU_MUL,  /* gelu_tanh(src[0]) * src[1] (GeGLU) */
    MLLM_OP_SOFTCAP,   /* fp[0] * tanh(src[0] / fp[0]) */
    MLLM_OP_LAYERNORM, /* per row of ne[0]: (x - mean) / sqrt(var + eps) * w + b (w, b may be NULL) */
    MLLM_OP_GELU,      /* gelu(src[0]), erf form (BERT's FFN) */
    MLLM_OP_KV_STORE_PAGED,  /* k = src[0], v = src[1] of token t into position src[2][t] of sequence src[3][t]
                                through the block tables src[4] of a paged KV layer (pp) */
    MLLM_OP_ATTENTION_PAGED, /* causal attention of q = src[0] over the paged layer pp, reading through the
                                block table of each token's sequence (src[3], src[4]); ip, fp as ATTENTION */
    MLLM_OP_COUNT
} mllm_op;

#define MLLM_MAX_SRC 5
typedef struct mllm_tensor mllm_tensor;
struct mllm_tensor {
    int dtype;          /* mllm_dtype */
    int64_t ne[4];      /* elements per dim, ne[0] fastest */
    size_t nb[4];       /* bytes between consecutive elements/rows per dim */
    void *data;
    mllm_op op;
    mllm_tensor *src[MLLM_MAX_SRC];
    int32_t ip[4];      /* integer op params */
    float fp[4];        /* float op params */
    const void *pp;     /* pointer op param (KV layer, rope table) */
    mllm_tensor *view_src; /* views: the tensor whose memory this is */
    size_t view_offs;      /* views: byte offset into view_src */
    int last_use;          /* planner: index of the last node reading it */
    int64_t next_chunk;    /* executor: next row chunk to hand out (atomic) */
    char name[48];
};

/* One layer of the KV cache, read and written by KV_STORE / ATTENTION. */
/* V is stored transposed in blocks of MLLM_KV_VBLOCK positions: block b
   holds positions [256b, 256b + 256) as kv_dim rows of 256 floats, so P x V
   is a matmul whose dots run along positions, and a short context touches
   only its first block's pages (a whole-context transpose makes every value
   dimension's row resident from the first token: +110 MiB of RSS on the
   0.6B model at n_ctx 4096; blocks of 64 cost 3-5 % of decode speed in
   per-block calls, 256 about nothing, for +21 MiB over 64). Both K and V
   hold MLLM_KV_CAP(n_ctx) positions. */
#define MLLM_KV_VBLOCK 256
#define MLLM_KV_CAP(n_ctx) (((n_ctx) + MLLM_KV_VBLOCK - 1) / MLLM_KV_VBLOCK * MLLM_KV_VBLOCK)

typedef struct {
    float *k;    /* (cap, kv_dim): one row of keys per position */
    float *v;    /* (cap / 256 blocks, kv_dim, 256): transposed blocks, above */
    int n_ctx;
    int kv_dim;  /* Hkv * D */
} mllm_kv_layer;

/* Rotary embedding parameters shared by all layers of a model. */
typedef struct {
    int n_rot;
    bool neox;
    float theta_scale;        /* base^(-2/n_rot) */
    float freq_scale;         /* 1/factor for linear scaling, else 1 */
    const float *freq_factors;/* n_rot/2 divisors (llama3), or NULL */
    /* YaRN (ext_factor 1; 0 = off): dims below corr[0] keep their
       frequency, above corr[1] are interpolated by freq_scale, a ramp
       between; cos/sin are scaled by attn_factor * (1 + 0.1 ln(1/freq_scale)). */
    float ext_factor, attn_factor, corr[2];
    /* M-RoPE (Qwen2-VL): frequencies [0, s0) turn with the temporal
       position, [s0, s0 + s1) the height, the rest the width; the
       positions input then holds 3 rows of T (or T: all rows equal).
       All 0: plain RoPE. */
    int32_t mrope[3];
} mllm_rope_params;

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
/* One line per node: index, op, name, shape, inputs. */
void mllm_graph_print(const mllm_graph *g, void *file);
const char *mllm_op_name(mllm_op op);

/* A leaf tensor over existing memory (weights: mmap'd, not copied). */
mllm_tensor *mllm_tensor_wrap(mllm_graph *g, int dtype, int n_dims, const int64_t *ne,
                              const void *data, const char *name);
/* A new f32 activation tensor. */
mllm_tensor *mllm_tensor_new_f32(mllm_graph *g, int n_dims, const int64_t *ne, const char *name);
int64_t mllm_tensor_nelements(const mllm_tensor *t);

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
/* The paged KV cache (backends/cpu/kv_paged.h; src/kv owns the blocks).
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
/* The attention node a (from mllm_op_attention) made non-causal: for
   encoders (BERT, ViT, Whisper's encoder), whose tokens all see each other.
   Trace mode (in eager mode the node has already run, causally). */
mllm_tensor *mllm_op_attention_noncausal(mllm_tensor *a);
mllm_tensor *mllm_op_add(mllm_graph *g, mllm_tensor *a, mllm_tensor *b);
/* Views (no copy, no compute). */
mllm_tensor *mllm_op_reshape(mllm_graph *g, mllm_tensor *x, int n_dims, const int64_t *ne);
/* Columns [c0, c0+n) of a 2-D tensor (tokens [c0, c0+n)). */
mllm_tensor *mllm_op_view_cols(mllm_graph *g, mllm_tensor *x, int64_t c0, int64_t n);

/* Internal: the compute function of a node, per thread. */
void mllm_compute_node(mllm_graph *g, mllm_tensor *t, int ith, int nth);
size_t mllm_node_work_size(const mllm_tensor *t, int nth);
/* compute_paged.c */
void mllm_compute_kv_store_paged(mllm_tensor *t, int ith, int nth);
void mllm_compute_attention_paged(mllm_graph *g, mllm_tensor *t, int ith, int nth);
size_t mllm_attention_paged_work_size(const mllm_tensor *t, int nth);

#endif
