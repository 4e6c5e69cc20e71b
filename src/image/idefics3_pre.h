/* Idefics3 / SmolVLM image preprocessing, as transformers'
   Idefics3ImageProcessor(Pil) / SmolVLMImageProcessor(Pil) do it: resize so
   the longest edge is size.longest_edge (up or down; the other side even,
   at most 4096), Pillow's LANCZOS (bit-exact, resample.h); with image
   splitting, resize each side up to a multiple of the tile
   (max_image_size.longest_edge), cut it into rows x cols tiles, row-major,
   and add the whole image resized to one tile (the global image, last);
   without, resize to one square tile. Then rescale by 1/255 and normalise
   with image_mean / image_std (float32). */
#ifndef MLLM_IMAGE_IDEFICS3_PRE_H
#define MLLM_IMAGE_IDEFICS3_PRE_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stdint.h>
#include "image/image.h"

/* transformers' MAX_IMAGE_SIZE: no side past it after the first resize. */
#define MLLM_IDEFICS3_MAX_SIDE 4096
/* Tiles one image may be cut into (the tokenizer names rows and columns up
   to 6 x 6 in SmolVLM / Idefics3; more are refused there). */
#define MLLM_IDEFICS3_MAX_TILES 1024

typedef struct {
    int longest_edge;    /* size.longest_edge (Idefics3: 4 * 364) */
    int tile;            /* max_image_size.longest_edge (364; SmolVLM: 512) */
    bool do_resize, do_split;
    float mean[3], std[3];
} mllm_idefics3_pre_params;

typedef struct {
    uint8_t *tiles;   /* n_tiles x 3 x tile x tile, channels first, before rescaling */
    float *pixels;    /* the same rescaled and normalised */
    int n_tiles, rows, cols, tile; /* rows = cols = 0: one tile, no splitting */
    int resized_w, resized_h;      /* after the first resize */
} mllm_idefics3_pixels;

void mllm_idefics3_pre_defaults(mllm_idefics3_pre_params *p);
/* The size after the first resize (transformers' get_resize_output_image_size). */
void mllm_idefics3_resize_size(int height, int width, int longest_edge, int *out_h, int *out_w);
mllm_status mllm_idefics3_preprocess(const mllm_image *img, const mllm_idefics3_pre_params *p,
                                     mllm_idefics3_pixels *out);
void mllm_idefics3_pixels_free(mllm_idefics3_pixels *px);
/* The text one <image> of the prompt becomes, as transformers' processor
   writes it (get_image_prompt_string): per tile
   <fake_token_around_image><row_R_col_C> and seq_len <image>, "\n" after
   each row of tiles, then "\n<fake_token_around_image><global-img>",
   seq_len <image>, <fake_token_around_image>; rows = cols = 0: the global
   part alone, without the "\n". mllm_malloc'd; NULL when out of memory or
   out of range (rows, cols 0..64, seq_len 1..65536). */
char *mllm_idefics3_image_prompt(int rows, int cols, int seq_len);

#endif
