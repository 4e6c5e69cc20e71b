/* Fuzz target: an image file (PNG, JPEG, BMP, GIF or anything else)
   decoded in memory. Input: a mode byte (bit 0: a 4096-pixel limit instead
   of the default, so the over-limit path is reached by small inputs), then
   the file. A success must hand out an image within the limits whose
   pixels are all readable (ASan checks each byte is inside the buffer). */
#include "fuzz_util.h"
#include "image/image.h"
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    uint64_t limit = fz_take_u8(&in) & 1 ? 4096 : 0;
    void *img = fz_dup(in.p, in.n);
    mllm_image im;
    mllm_image_info info;
    mllm_status st = mllm_image_load_memory(img, in.n, "fuzz.image", limit, &im, &info);
    fz_check_status(st);
    if (st) {
        FZ_CHECK(im.rgb == NULL && im.width == 0 && im.height == 0);
    } else {
        FZ_CHECK(im.rgb != NULL && im.width > 0 && im.height > 0);
        FZ_CHECK(im.width <= MLLM_IMAGE_MAX_SIDE && im.height <= MLLM_IMAGE_MAX_SIDE);
        FZ_CHECK((uint64_t)im.width * (uint64_t)im.height <= (limit ? limit : MLLM_IMAGE_DEFAULT_MAX_PIXELS));
        FZ_CHECK(info.width == im.width && info.height == im.height);
        FZ_CHECK(info.bits == 8 || info.bits == 16);
        FZ_CHECK(memchr(info.format, '\0', sizeof info.format) != NULL);
        unsigned sum = 0;
        for (size_t i = 0; i < (size_t)im.width * (size_t)im.height * 3; i++) sum += im.rgb[i];
        (void)sum;
        mllm_image_free(&im);
    }
    free(img);
    return 0;
}
