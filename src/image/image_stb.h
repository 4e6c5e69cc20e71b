/* The stb_image calls image.c makes, compiled in image_stb.c with only PNG,
   JPEG, BMP and GIF and a capped allocator (stb's own symbols stay static,
   so an application linking its own stb_image does not clash). */
#ifndef MLLM_IMAGE_IMAGE_STB_H
#define MLLM_IMAGE_IMAGE_STB_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int ok;        /* 1: stb recognised the header */
    int w, h, comp;
    bool is16;
    const char *reason; /* stb's failure reason when !ok */
} mllm_stb_info;

mllm_stb_info mllm_stb_probe(const uint8_t *buf, size_t len);

typedef struct {
    uint8_t *rgba;       /* w * h * 4, free with mllm_stb_free */
    int w, h;
    bool read_past_end;  /* the decoder asked for bytes the file does not have */
    bool over_budget;    /* an allocation would have passed the budget */
    const char *reason;  /* stb's failure reason when rgba is NULL */
} mllm_stb_image;

/* Decodes to RGBA; stb's live allocations are capped at budget bytes. */
mllm_stb_image mllm_stb_decode(const uint8_t *buf, size_t len, size_t budget);
void mllm_stb_free(void *p);

#endif
