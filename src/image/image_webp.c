/* WebP through libwebp (image_webp.h). The caller checks the dimensions
   from mllm_webp_probe against its limits and allocates the output itself,
   so libwebp decodes into a buffer of the size the header promised
   (WebPDecodeRGBAInto) and never sizes an image on its own. */
#include "image/image_webp.h"
#if defined(MLLM_HAVE_WEBP)
#include <webp/decode.h>

bool mllm_webp_built(void) { return true; }

mllm_webp_info mllm_webp_probe(const uint8_t *p, size_t n) {
    mllm_webp_info r = {0};
    WebPBitstreamFeatures f;
    VP8StatusCode c = WebPGetFeatures(p, n, &f);
    if (c != VP8_STATUS_OK) {
        r.reason = c == VP8_STATUS_NOT_ENOUGH_DATA ? "truncated header" : "corrupt header";
        return r;
    }
    r.ok = true;
    r.w = f.width, r.h = f.height;
    r.alpha = f.has_alpha != 0;
    r.animated = f.has_animation != 0;
    r.lossless = f.format == 2;
    return r;
}

bool mllm_webp_decode(const uint8_t *p, size_t n, int w, int h, uint8_t *rgba) {
    const size_t stride = (size_t)w * 4;
    return WebPDecodeRGBAInto(p, n, rgba, stride * (size_t)h, (int)stride) != NULL;
}
#else
bool mllm_webp_built(void) { return false; }

mllm_webp_info mllm_webp_probe(const uint8_t *p, size_t n) {
    (void)p, (void)n;
    return (mllm_webp_info){.reason = "WebP support not built"};
}

bool mllm_webp_decode(const uint8_t *p, size_t n, int w, int h, uint8_t *rgba) {
    (void)p, (void)n, (void)w, (void)h, (void)rgba;
    return false;
}
#endif
