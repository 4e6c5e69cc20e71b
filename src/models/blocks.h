/* The blocks decoders are built from, in one place: pre-norm attention
   (q/k/v projections with optional biases, optional per-head q/k RMSNorm,
   RoPE or none, full or sliding-window causal attention at the model's
   scale, output projection, optional post-norm) and the gated FFN (SwiGLU
   or GeGLU, optional post-norm). */
#ifndef MLLM_MODELS_BLOCKS_H
#define MLLM_MODELS_BLOCKS_H
#include "graph/graph.h"
#include "models/decoder/decoder.h"

/* Returns what the attention block adds to the residual stream x; K/V go
   to the paged layer pkv through in's tables when pkv is set, else to kv. */
mllm_tensor *mllm_block_attention(mllm_graph *g, const mllm_hparams *c, const mllm_decoder_layer *L, mllm_tensor *x,
                                  const mllm_decoder_inputs *in, const mllm_kv_layer *kv, const mllm_kv_paged *pkv);
/* Returns what the FFN block adds to the residual stream x. */
mllm_tensor *mllm_block_ffn(mllm_graph *g, const mllm_hparams *c, const mllm_decoder_layer *L, mllm_tensor *x);

#endif
