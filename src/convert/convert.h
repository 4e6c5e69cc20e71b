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
#include <stdbool.h>

typedef enum {
    MLLM_CONVERT_PACK_NONE = 0, /* plain GGUF block layouts */
    MLLM_CONVERT_PACK_X8 = 1,   /* the x8 layouts where the kernels use them (default) */
} mllm_convert_pack;

typedef struct {
    const char *in;            /* model path (file or HF folder) */
    const char *out;
    const char *pipeline_path; /* JSON rules (pipeline.h), or NULL */
    const char *quant;         /* one dtype for all matrices, or NULL (= keep) */
    const char *config_path;   /* config.json for MLLM v1/v2 inputs, or NULL (beside the file) */
    bool to_gguf;              /* write GGUF instead of .mllm (never packed) */
    mllm_convert_pack pack;    /* .mllm only; default MLLM_CONVERT_PACK_X8 */
    /* One line per tensor (may be NULL). */
    void (*progress)(void *user, const char *line);
    void *user;
} mllm_convert_params;

/* Zeroes p, then pack = MLLM_CONVERT_PACK_X8. */
void mllm_convert_default_params(mllm_convert_params *p);
/* Errors: MLLM_ERR_INVALID_ARG (bad options), MLLM_ERR_UNSUPPORTED (a dtype
   without quantizer, a block size that does not divide a row, an export
   that cannot be expressed), the source's open errors, MLLM_ERR_IO. */
mllm_status mllm_convert(const mllm_convert_params *p);

#endif
