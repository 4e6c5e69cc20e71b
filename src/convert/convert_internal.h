/* Shared by the converter's parts: the per-tensor plan and row converter
   (convert.c), kernel packing choices (convert_pack.c), the tokenizer
   section (convert_tokenizer.c), GGUF export (convert_gguf.c). */
#ifndef MLLM_CONVERT_INTERNAL_H
#define MLLM_CONVERT_INTERNAL_H
#include "convert/convert.h"
#include "formats/gguf_writer.h"
#include "formats/mllmfile.h"
#include "formats/model_file.h"
#include "models/hparams.h"

typedef struct {
    const mllm_convert_params *params;
    const mllm_weight *w;
    int dtype;            /* stored dtype (packed or plain) */
    int plain;            /* dtype of the values: dtype unpacked (= dtype when not packed) */
    int src_plain;        /* w->dtype unpacked */
    int rule;             /* pipeline rule that chose it; -1 default, -2 "1-D stays f32" */
    size_t index, count;  /* for progress lines */
    size_t src_row, dst_row; /* bytes per row (a packed type's equal its plain type's) */
    int64_t unit_rows;    /* rows converted together: 8 when either side is packed, else 1 */
    float *tmp;           /* (ne[0]) one row in f32 */
    uint8_t *row;         /* (unit_rows, dst_row) the converted unit, as stored */
    uint8_t *src_unpacked;   /* (unit_rows, src_row) the source unit unpacked, if w is packed */
    uint8_t *plain_rows;     /* (unit_rows, dst_row) the unit in `plain`, before packing, if packed */
    int64_t row_in_buf;   /* which unit `row` holds; -1 none */
} cv_tensor;

/* The packed dtype to store w as when its values are in dtype plain, or -1:
   only for .mllm output with MLLM_CONVERT_PACK_X8, only for the matrices the
   llama kernels multiply (every layer's attn_q/k/v/output and
   ffn_gate/up/down, and output.weight or, when there is none, the tied
   token_embd.weight) and only where mllm_repack_type_for allows the shape. */
int cv_pack_type(const mllm_convert_params *p, const mllm_model_file *f, const mllm_weight *w, int plain);
/* Frees a tensor's buffers. */
void cv_tensor_release(cv_tensor *t);

/* Fills [offset, offset+n) of the converted tensor (any byte range, in
   increasing order): the fill callback of both writers. */
mllm_status cv_fill(void *user, void *buf, size_t offset, size_t n);

/* The source's tokenizer as a .mllm section, and its chat template
   (*tmpl may be NULL). tmp_base: a path prefix for a scratch file. */
mllm_status cv_tokenizer_section(const mllm_model_file *f, const char *tmp_base, mllm_tok_kind *kind, void **data,
                                 size_t *len, char **tmpl);
/* Copies every key of g whose name starts with prefix (NULL: all). */
mllm_status cv_copy_kvs(const struct mllm_gguf *g, mllm_gguf_writer *w, const char *prefix);
/* Writes the plan as a GGUF file (arch keys from f->cfg, tokenizer keys
   from f->gguf). */
mllm_status cv_write_gguf(const mllm_model_file *f, const mllm_hparams *hp, cv_tensor *t, size_t n, const char *out);

/* A Whisper folder -> .mllm (convert_whisper.c; --quant f16|f32|q8_0|q4_0). */
mllm_status cv_convert_whisper(const mllm_convert_params *p);

#endif
