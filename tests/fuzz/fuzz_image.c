/* Fuzz target: an image file (PNG, JPEG, BMP, GIF, WebP or anything else)
   decoded in memory, then, when decoded, preprocessed for Qwen2-VL
   (smart_resize, Pillow's bicubic resize, patches) or, with bit 3 of the
   mode, for Idefics3 / SmolVLM (Lanczos resizes, tiles). Input: a mode byte
   (bit 0: a 4096-pixel limit instead of the default, so the over-limit
   path is reached by small inputs; bits 1-2: the preprocessing's pixel
   budget, 1 to 4 x 3136, or the Idefics3 longest edge, 16 to 64; bit 4:
   Idefics3 without image splitting), then the file. A success must hand out an image
   within the limits whose pixels are all readable (ASan checks each byte
   is inside the buffer), and patches that are finite and match the grid. */
#include "fuzz_util.h"
#include "image/image.h"
#include "image/idefics3_pre.h"
#include "image/qwen2vl_pre.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    const uint8_t mode = fz_take_u8(&in);
    uint64_t limit = mode & 1 ? 4096 : 0;
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
        if (mode & 8) {
            mllm_idefics3_pre_params ip;
            mllm_idefics3_pre_defaults(&ip);
            ip.tile = 16;
            ip.longest_edge = 16 * (1 + ((mode >> 1) & 3));
            ip.do_split = !(mode & 16);
            mllm_idefics3_pixels tp;
            st = mllm_idefics3_preprocess(&im, &ip, &tp);
            fz_check_status(st);
            if (!st) {
                FZ_CHECK(tp.tile == 16 && tp.n_tiles == (tp.rows ? tp.rows * tp.cols + 1 : 1));
                FZ_CHECK(tp.rows <= 4 && tp.cols <= 4);
                for (size_t i = 0; i < (size_t)tp.n_tiles * 3 * 16 * 16; i++) FZ_CHECK(isfinite(tp.pixels[i]));
                mllm_idefics3_pixels_free(&tp);
            }
            mllm_image_free(&im);
            free(img);
            return 0;
        }
        mllm_qwen2vl_pre_params p;
        mllm_qwen2vl_pre_defaults(&p);
        p.max_pixels = 3136 * (1 + ((mode >> 1) & 3));
        mllm_qwen2vl_pixels px;
        st = mllm_qwen2vl_preprocess(&im, &p, &px);
        fz_check_status(st);
        if (!st) {
            FZ_CHECK(px.n_patches == (int64_t)px.grid_h * px.grid_w && px.patch_dim == 1176);
            FZ_CHECK(px.grid_h % 2 == 0 && px.grid_w % 2 == 0 && px.grid_t == 1);
            for (int64_t i = 0; i < px.n_patches * px.patch_dim; i++) FZ_CHECK(isfinite(px.patches[i]));
            mllm_qwen2vl_pixels_free(&px);
        }
        mllm_image_free(&im);
    }
    free(img);
    return 0;
}
