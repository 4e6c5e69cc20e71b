/* M-RoPE (Qwen2-VL, Qwen2.5-VL) on the LLM side, the parts that are pure
   arithmetic (api/session_image.c and the CLI's --image use them; the
   rotation itself is the graph's ROPE op with mrope sections):
   - the <|image_pad|> expansion transformers' processor does: each pad
     token of a prompt becomes grid_h * grid_w / merge^2 of them, one per
     vision embedding;
   - the 3-row positions of get_rope_index: text tokens count on from the
     last position, all three rows equal; an image's tokens get temporal
     row = start, height row = start + merged row, width row = start +
     merged column, and the text after it continues at start +
     max(merged rows, merged columns);
   - a token's rotation angles: frequency i of the head's half (i < D/2)
     turns with the temporal position for the first mrope_section[0]
     frequencies, the height for the next [1], the width for the last [2]
     (rotate-half pairs i and i + D/2), as Qwen2_5_VLRotaryEmbedding. */
#ifndef MLLM_MODELS_DECODER_MROPE_H
#define MLLM_MODELS_DECODER_MROPE_H
#include <mllm/mllm.h>
#include <stdint.h>

typedef struct {
    int t, h, w; /* image_grid_thw, in patches */
} mllm_image_grid;

/* Images in one prompt (grids a caller keeps on its stack). */
#define MLLM_MROPE_MAX_GRIDS 64

/* *out (mllm_malloc'd) = ids with the k-th pad token repeated
   grid_h * grid_w / merge^2 times for the k-th grid. Errors: more or
   fewer pad tokens than grids, a grid not divisible by merge, a result over
   max_tokens (MLLM_ERR_CONTEXT_FULL). */
mllm_status mllm_mrope_expand_pads(const int32_t *ids, int64_t n, int32_t pad_id, const mllm_image_grid *grids,
                                     int n_grids, int merge, int64_t max_tokens, int32_t **out, int64_t *n_out);

/* pos: 3 rows of n (temporal, height, width) for ids whose runs of
   pad_id tokens are the expanded images, in grid order. *next (may be NULL)
   gets the position the next generated token takes. Errors: a run whose
   length is not its grid's token count, runs and grids of different
   numbers. */
mllm_status mllm_mrope_positions(const int32_t *ids, int64_t n, int32_t pad_id, const mllm_image_grid *grids,
                                         int n_grids, int merge, int32_t *pos, int64_t *next);

/* cos / sin of one token's head_dim / 2 angles at positions p[3]
   (sections sum to head_dim / 2). */
void mllm_mrope_angles(const int32_t p[3], int head_dim, const int sections[3], float theta, float *cos_out,
                               float *sin_out);

#endif
