/* Image input: a PNG, JPEG (baseline or progressive), BMP or GIF (its first
   frame) file in, 8-bit RGB out, row-major, 3 bytes a pixel.

   Decoding is stb_image's (Debian's libstb-dev header, compiled here with
   only those four formats, image_stb.c). Before stb sees a byte, the first
   bytes must be one of those four signatures, and the dimensions read from
   the header (stbi_info_from_memory) must be within max_pixels, so a header
   that claims 100000 x 100000 is refused before anything is allocated.
   While decoding, stb's allocations are capped at a budget derived from
   those dimensions (image_stb.c), so a stream that inflates past what its
   header promised (a decompression bomb) fails instead of eating memory.
   A decoder that asks for bytes past the end of the file (a truncated
   file: stb itself pads short JPEG / BMP / GIF data with zeros) is an
   error, and a JPEG must have its end-of-image marker after its last scan.

   Conversions, as transformers' convert_to_rgb (PIL) does them: grayscale
   is replicated to RGB; an alpha channel (or a PNG tRNS colour key, or a
   transparent palette entry) is composited over white with PIL's integer
   arithmetic; 16-bit PNG samples keep their high byte (value >> 8, as PIL
   does for RGB; Pillow clips 16-bit grayscale instead, we do not); Adobe
   CMYK / YCCK JPEGs are converted by stb (R = C' * K' / 255 on the
   inverted values Adobe stores; within 1 level of PIL's conversion on
   tests/data/images/cmyk.jpg, tests/unit/test_image.c). EXIF orientation
   is NOT applied: the pixels are returned as stored (transformers'
   load_image would rotate a phone photo tagged with an orientation). */
#ifndef MLLM_IMAGE_IMAGE_H
#define MLLM_IMAGE_IMAGE_H
#include <mllm/mllm.h>
#include <stddef.h>
#include <stdint.h>

/* Default pixel limit (width x height): 64 Mpx, 192 MB of RGB, more than a
   48 Mpx phone photo. Callers pass their own (a setting) or 0 for this. */
#define MLLM_IMAGE_DEFAULT_MAX_PIXELS ((uint64_t)64 << 20)
/* Longest side accepted whatever the pixel limit. */
#define MLLM_IMAGE_MAX_SIDE 65535
/* Largest file read: MLLM_IMAGE_MAX_FILE_BYTES (public, mllm.h). */
/* stb decodes a progressive JPEG's coefficients once per scan, so the work
   is scans x pixels (about 1 ns each): at most this much, 2^31 (about two
   seconds of a core; a 64-megapixel photo has about 10 scans), whatever
   the pixel limit. A file of a thousand empty scan headers is refused. */
#define MLLM_IMAGE_MAX_SCAN_PIXELS ((uint64_t)1 << 31)

typedef struct {
    int width, height;
    int channels;     /* stb's count: 1 gray, 2 gray+alpha, 3 RGB (a CMYK JPEG too), 4 RGBA */
    int bits;         /* 8 or 16 (PNG) */
    char format[8];   /* "PNG", "JPEG", "BMP", "GIF" */
} mllm_image_info;

typedef struct {
    uint8_t *rgb;     /* width * height * 3 bytes, mllm_malloc'd */
    int width, height;
} mllm_image;

/* Decodes the regular file at path. max_pixels: 0 means
   MLLM_IMAGE_DEFAULT_MAX_PIXELS. info may be NULL. Errors (the message
   names the file): MLLM_ERR_IO (cannot open / read), MLLM_ERR_FORMAT (not
   one of the four formats, zero size, truncated, corrupt: stb's reason is
   quoted), MLLM_ERR_UNSUPPORTED (over max_pixels, a side over
   MLLM_IMAGE_MAX_SIDE, a file over MLLM_IMAGE_MAX_FILE_BYTES, a stream
   that inflates past the decode budget), MLLM_ERR_INVALID_ARG,
   MLLM_ERR_NOMEM. On error *out is zeroed. */
mllm_status mllm_image_load(const char *path, uint64_t max_pixels, mllm_image *out, mllm_image_info *info);
/* The same from an in-memory file image (not copied); label names it. */
mllm_status mllm_image_load_memory(const void *buf, size_t len, const char *label, uint64_t max_pixels,
                                   mllm_image *out, mllm_image_info *info);
void mllm_image_free(mllm_image *img);

#endif
