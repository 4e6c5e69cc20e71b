/* The node of a graph: an op, its dtype and shape, its inputs and where its
   data lives. The graph (graph/) builds and plans nodes; the backends
   (backends/) compute them, which is why the struct sits below both here, as
   ggml keeps ggml_tensor in its lowest layer. Op parameters a kernel reads
   through pp (a KV layer, the rope settings) are defined here too. */
#ifndef MLLM_CORE_TENSOR_H
#define MLLM_CORE_TENSOR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mllm_buffer;

typedef enum {
    MLLM_OP_NONE = 0,  /* a leaf: weight or input */
    MLLM_OP_VIEW,      /* no compute: a reshaped/offset view of src[0] */
    MLLM_OP_GET_ROWS,  /* rows of src[0] (embedding table) picked by the ids in src[1] (I32) */
    MLLM_OP_RMSNORM,   /* per row of ne[0]: x / rms(x) * w */
    MLLM_OP_MATMUL,    /* src[0] weight (K x N) . src[1] (K x T) (+ src[2] bias); ip[2]: exact (f32 activations);
                          ip[3]: the packed-panel GEMM allowed (float weights; sums depend on the batch: encoders) */
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
    MLLM_OP_CUSTOM,          /* a plugin's op (backends/plugin.h): pp its table entry, src[0..n) f32 */
    MLLM_OP_GELU_TANH,       /* gelu(src[0]), tanh form (SigLIP's MLP) */
    MLLM_OP_ROPE_TABLE,      /* rotate_half RoPE of src[0] (D x H x T) by the angles of token t given as
                                cos src[1] and sin src[2] (D/2 x T each): positions of any kind (2-D ViT) */
    MLLM_OP_ATTENTION_SEGMENTS, /* softmax(fp[0] q k^T) v of q, k, v = src[0..2] (D*H x T) inside each
                                   segment of tokens [src[3][s], src[3][s+1]) (I32), no mask, no cache;
                                   ip[0]: heads H */
    MLLM_OP_IM2COL,          /* the columns of a 1-D convolution of src[0]: ip[0] kernel, ip[1] stride, ip[2] pad */
    MLLM_OP_ATTENTION_FULL,  /* q = src[0] over k = src[1], v = src[2] (no cache, not causal); ip[0] heads */
    MLLM_OP_KV_SLOTS_STORE,  /* k = src[0], v = src[1] of token t at position src[2][t] of slot src[3][t]
                                of the slot cache pp (mllm_kv_slots) */
    MLLM_OP_ATTENTION_SLOTS, /* q = src[0] over the slot cache pp, ip[0] runs of tokens (src[2] positions,
                                src[3] slots); ip[1]: causal */
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
    /* Where the data lives (backends/backend.h): NULL for host memory the
       CPU reads in place (mmap'd weights, the planner's buffer, inputs). */
    const struct mllm_buffer *buffer;
    size_t buffer_offs;
    /* Weights placed at load on another backend (mllm_sched_place_weights):
       their copy there, else NULL. */
    struct mllm_tensor *mirror;
    bool is_input;         /* a graph input (mllm_graph_input_*), filled before each execute */
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

/* The attention cache of an encoder-decoder model (Whisper's decoder),
   filled by KV_SLOTS_STORE and read by ATTENTION_SLOTS: n_slots slots of
   n_ctx positions, one per sequence (beams rename slots instead of
   copying them) or one for the cross-attention over the encoder's states.
   Per slot: keys as n_ctx rows of dim = n_head * head_dim values, or with
   head_major per head n_ctx rows of head_dim (a head's keys in one block:
   the cross-attention streams 1500 of them per step), and values
   transposed, dim rows of n_ctx. f16: both halves in f16, and the
   attention rounds its queries and probabilities to f16 for the f16 dots
   (what CTranslate2's float16 does). */
typedef struct {
    int n_head, head_dim, n_ctx, n_slots;
    bool f16, head_major;
    void *k, *vt;
} mllm_kv_slots;

int64_t mllm_tensor_nelements(const mllm_tensor *t);
/* Bytes of its data (nb[3] * ne[3]: contiguous tensors and views). */
size_t mllm_tensor_nbytes(const mllm_tensor *t);
/* Sets t's dtype and shape (n_dims of ne, the rest 1) with contiguous
   strides (row bytes of the dtype). */
void mllm_tensor_set_shape(mllm_tensor *t, int dtype, int n_dims, const int64_t *ne);

#endif
