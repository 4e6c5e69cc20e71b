/* WebP decoding through Debian's libwebp (libwebp-dev), when the build
   found it (MLLM_HAVE_WEBP); otherwise every call says "WebP support not
   built". Still images only: an animated WebP is refused. */
#ifndef MLLM_IMAGE_IMAGE_WEBP_H
#define MLLM_IMAGE_IMAGE_WEBP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    bool ok;          /* the header parsed */
    int w, h;
    bool alpha, animated, lossless;
    const char *reason; /* when !ok */
} mllm_webp_info;

/* Whether this build decodes WebP. */
bool mllm_webp_built(void);
/* The bitstream's header (libwebp's WebPGetFeatures: lengths checked by it). */
mllm_webp_info mllm_webp_probe(const uint8_t *p, size_t n);
/* Decodes into rgba (w * h * 4 bytes, the size the probe gave, allocated by
   the caller): false on a corrupt or truncated stream. */
bool mllm_webp_decode(const uint8_t *p, size_t n, int w, int h, uint8_t *rgba);

#endif
