/* mllm convert: any model the engine opens (GGUF, HF folder, .mllm v1/v2/v3,
   llama2.c) -> .mllm v3 (default) or GGUF, with a quantization pipeline.

       mllm_convert_params p;  mllm_convert_default_params(&p);
       p.in = "Qwen3-0.6B/";  p.out = "q.mllm";  p.quant = "q4_0";
       mllm_convert(&p);

   Per tensor: 1-D tensors (norms, biases) are stored f32; others take the
   pipeline's dtype (or keep theirs). Same dtype: bytes copied unchanged;
   else each row goes to f32 (to_float) and through the target dtype's
   quantizer (from_float, GGUF's reference quantizers). One row block in
   memory at a time; output written to a temp file and renamed.

   Kernel packing (.mllm output only): the matmul weights the CPU kernels
   run in an 8-row interleaved layout (q4_0 -> q4_0x8, q8_0 -> q8_0x8, q4_K
   -> q4_Kx8, q6_K -> q6_Kx8: whatever mllm_repack_type_for offers;
   backends/cpu/repack.h, docs/format.md) are stored in that layout, so
   loading the .mllm maps them as they are instead of repacking a copy.
   A packed source (.mllm) is unpacked wherever the target is not packed
   (GGUF export, --pack none, another dtype). */
#ifndef MLLM_CONVERT_CONVERT_H
#define MLLM_CONVERT_CONVERT_H
#include <mllm/mllm.h>

/* mllm_convert_params, mllm_convert_default_params and mllm_convert are
   public (mllm/mllm_tools.h). */

#endif
