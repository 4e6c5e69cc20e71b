/* Synthetic models: random weights (fixed-seed, portable RNG) in the exact
   shape of a real family, with a small working byte-level BPE tokenizer, so
   the whole engine can be tested and benchmarked without downloading weights.

       mllm_synth_write("qwen3", "tiny", "f16", "gguf", "tiny.gguf", NULL, NULL);

   Archs: qwen3 (q/k norm), qwen2 (q/k/v biases, N(0,1)*0.02, f32), llama
   (llama3 RoPE scaling in tiny and 1b, as Llama-3.2), smollm3 (no RoPE in
   every 4th layer), gemma3 (sliding-window layers with their own RoPE base,
   post norms, GeGLU, sqrt(E) embedding scale, query_pre_attn_scalar; norm
   weights w in HF, 1 + w in GGUF). Presets: tiny (E64, 2 layers, vocab 512;
   smollm3 8 layers; gemma3 E96, 6 layers, window 4), 0.6b (Qwen3-0.6B /
   Qwen2.5-0.5B / SmolLM2-360M shape), 1b (Qwen3-1.7B / Qwen2.5-1.5B /
   Llama-3.2-1B / Gemma-3-1B shape), 3b (SmolLM3-3B), 270m (Gemma-3-270M).
   Formats:
   "gguf" (one file) or "hf" (a folder with config.json, model.safetensors,
   tokenizer.json, tokenizer_config.json).
   Matrices are N(0,1)*0.02 in `dtype` (f32|f16|bf16, and for gguf also
   q8_0|q4_0|q4_1); norm weights are 1 + 0.1*N(0,1) in f32. Quantized files
   hold the f32 file's values quantized row by row (ggml's reference
   quantizers); in q4_0/q4_1 files token_embd (and output.weight) are q8_0,
   as in llama.cpp's q4 mixes. Tensors are streamed (one row in memory at a
   time) to a temp path and renamed.
   Errors: MLLM_ERR_INVALID_ARG (unknown arch/preset/dtype/format, or a
   quantized dtype with format "hf"), MLLM_ERR_IO, MLLM_ERR_NOMEM. */
#ifndef MLLM_SYNTH_SYNTH_H
#define MLLM_SYNTH_SYNTH_H
#include <mllm/mllm.h>

/* mllm_synth_write is public (mllm/mllm_tools.h). */

#endif
