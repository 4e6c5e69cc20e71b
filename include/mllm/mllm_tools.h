/*
 * mllm_tools.h — writing model files: conversion, quantization and
 * synthetic models (what `mllm convert`, `mllm quantize` and `mllm synth`
 * run). Part of the public API: include mllm/mllm.h, which includes this
 * header; the rules of mllm.h's opening comment hold here too.
 */
#ifndef MLLM_MLLM_TOOLS_H
#define MLLM_MLLM_TOOLS_H
#ifndef MLLM_MLLM_H
#error "include <mllm/mllm.h>, not mllm_tools.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Called with one line per tensor written (NUL-terminated, no newline). */
typedef void (*mllm_progress_fn)(void *user, const char *line);

/* ---- conversion ------------------------------------------------------- */

/* Any model mllm opens (GGUF, Hugging Face folder, .mllm v1/v2/v3,
   llama2.c; a Whisper folder to .mllm only) to a .mllm v3 file (default)
   or a GGUF. Per tensor: 1-D tensors (norms, biases) are stored f32;
   matrices take the pipeline's dtype, or `quant`, or keep theirs (same
   dtype: bytes copied; else each row goes through f32 and the target's
   reference quantizer). The output is written to a temporary file and
   renamed. docs/format.md. */
#define MLLM_CONVERT_PACK_NONE 0 /* plain GGUF block layouts */
#define MLLM_CONVERT_PACK_X8 1   /* the CPU kernels' 8-row interleaved layouts where they use them */

typedef struct {
    uint32_t struct_size;      /* = sizeof(mllm_convert_params), set by the default */
    const char *in;            /* model path (file or folder) */
    const char *out;           /* the file to write */
    const char *pipeline_path; /* JSON rules "tensor-name regex -> dtype" (pipelines/), or NULL */
    const char *quant;         /* one dtype for every matrix ("q4_0", "f16", ...), or NULL: keep */
    const char *config_path;   /* config.json of a .mllm v1/v2 input; NULL: beside the file */
    int to_gguf;               /* 1: write GGUF (never packed); 0 (default): .mllm v3 */
    int pack;                  /* .mllm only: MLLM_CONVERT_PACK_* (default X8) */
    mllm_progress_fn progress; /* may be NULL (the default) */
    void *user;                /* passed to progress */
} mllm_convert_params;

MLLM_API void mllm_convert_default_params(mllm_convert_params *p);
/* Errors: MLLM_ERR_INVALID_ARG (NULL p, in or out, wrong struct_size,
   both pipeline_path and quant, an unknown pack), MLLM_ERR_UNSUPPORTED (a
   dtype without a quantizer, a block size that does not divide a row, an
   export that cannot be expressed), the errors of opening the source,
   MLLM_ERR_IO. */
MLLM_API mllm_status mllm_convert(const mllm_convert_params *p);

/* ---- quantization ----------------------------------------------------- */

/* llama.cpp's llama_model_quantize: reads any model mllm_convert reads and
   writes a GGUF whose tensor types follow llama-quantize's mixes (q4_k_m
   keeps some attn_v / ffn_down layers and the output at q6_k, ...), every
   row through the reference quantizers (the bytes of llama-quantize
   without an importance matrix). A GGUF source's keys are copied
   (general.file_type updated); other sources get the standard keys and
   their tokenizer.json's. */
typedef struct {
    uint32_t struct_size;  /* = sizeof(mllm_quantize_params), set by the default */
    const char *type;      /* the mix: q4_k_m (default), q4_k_s, q5_k_m, q5_k_s, q6_k, q8_0, q4_0,
                              q4_1, q5_0, q5_1, mxfp4, w4a32, w4a32_g64, f16, bf16, f32 */
    int n_threads;         /* threads quantizing rows; <= 0: 1 (default 1) */
    /* "REGEX=TYPE" (POSIX extended, searched in the tensor name, first match
       wins), llama-quantize's --tensor-type: overrides the mix for matching
       quantizable tensors. */
    const char *const *tensor_types;
    size_t n_tensor_types;
    int pure;              /* 1: every quantizable tensor gets the mix's base type */
    int allow_requantize;  /* 1: accept a source whose matrices are already quantized */
    mllm_progress_fn progress; /* may be NULL (the default) */
    void *user;
} mllm_quantize_params;

typedef struct {
    uint32_t struct_size;         /* set by the caller: sizeof(mllm_quantize_stats) */
    uint64_t bytes_in, bytes_out; /* tensor data only */
    size_t n_tensors, n_quantized;
} mllm_quantize_stats;

MLLM_API void mllm_quantize_default_params(mllm_quantize_params *p);
/* p may be NULL (the defaults); stats may be NULL, else at most its
   struct_size bytes are written. Errors: MLLM_ERR_INVALID_ARG (NULL path,
   wrong struct_size, an unknown type, a bad tensor_types entry, a
   quantized source without allow_requantize), the errors of opening in,
   MLLM_ERR_UNSUPPORTED (a dtype that cannot be converted), MLLM_ERR_IO /
   MLLM_ERR_NOMEM writing out. */
MLLM_API mllm_status mllm_quantize_file(const char *in, const char *out, const mllm_quantize_params *p,
                                        mllm_quantize_stats *stats);

/* ---- synthetic models ------------------------------------------------- */

/* Writes a model with random weights (a fixed seed: the same arguments
   write the same bytes) in the exact shape of a real family, with a small
   working byte-level BPE tokenizer, so tests and benchmarks need no
   download. arch: qwen3, qwen2, llama, smollm3, gemma3; preset: tiny (and
   tiny256 for qwen3), 0.6b, 1b, 3b (smollm3), 270m (gemma3); dtype: f32,
   f16, bf16 (and for gguf q8_0, q4_0, q4_1); format: "gguf" (one file) or
   "hf" (a folder: config.json, model.safetensors, tokenizer.json).
   progress (may be NULL) receives one line per tensor. Errors:
   MLLM_ERR_INVALID_ARG (an unknown arch, preset, dtype or format, a
   quantized dtype with "hf"), MLLM_ERR_IO, MLLM_ERR_NOMEM. */
MLLM_API mllm_status mllm_synth_write(const char *arch, const char *preset, const char *dtype, const char *format,
                                      const char *out_path, mllm_progress_fn progress, void *user);

#ifdef __cplusplus
}
#endif
#endif
