/* Fuzz target: an mmproj GGUF (llama.cpp's clip.* keys, Qwen2.5-VL's
   qwen2.5vl_merger). The input is a GGUF image opened in memory as a
   vision tower (mllm_qwen2vl_vision_open_gguf_memory): every key's type and
   range and every tensor's shape and type must be checked before use.
   A tower that opens must have sizes within the documented limits and
   embed a small 28 x 28 image (one merged block) into finite numbers. The
   seed (corpus/mmproj) is a tiny valid tower
   (tools/reference/make_mmproj_seed.py). */
#include "fuzz_util.h"
#include "image/qwen2vl_pre.h"
#include "models/vision/qwen2vl_vision.h"
#include "core/alloc.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    void *buf = fz_dup(data, size);
    mllm_qwen2vl_vision *v = NULL;
    mllm_status st = mllm_qwen2vl_vision_open_gguf_memory(buf, size, "fuzz.mmproj", 1, &v);
    fz_check_status(st);
    if (st) {
        FZ_CHECK(v == NULL);
    } else {
        const mllm_qwen2vl_vision_config *c = mllm_qwen2vl_vision_config_of(v);
        FZ_CHECK(c->depth >= 1 && c->depth <= MLLM_QWEN2VL_MAX_DEPTH && c->hidden % c->heads == 0);
        FZ_CHECK(c->n_fullatt >= 0 && c->n_fullatt <= c->depth);
        mllm_qwen2vl_pre_params pp;
        mllm_qwen2vl_vision_pre_params(v, &pp);
        const int side = pp.patch_size * pp.merge_size;
        /* only small towers are run: the fuzzer looks for parser bugs, not slow inputs */
        if ((int64_t)c->hidden * c->intermediate <= 4096 && c->depth <= 4 && side <= 28 && c->out_hidden <= 256) {
            mllm_qwen2vl_pixels px = {0};
            px.grid_t = 1;
            px.grid_h = px.grid_w = pp.merge_size;
            px.patch_dim = 3LL * pp.temporal_patch_size * pp.patch_size * pp.patch_size;
            px.n_patches = (int64_t)px.grid_h * px.grid_w;
            px.resized_w = px.resized_h = side;
            px.patches = mllm_calloc((size_t)(px.n_patches * px.patch_dim), sizeof(float));
            float *emb = NULL;
            int64_t n = 0;
            if (px.patches && mllm_qwen2vl_vision_encode(v, &px, &emb, &n) == MLLM_OK) {
                FZ_CHECK(n == 1);
                for (int64_t i = 0; i < c->out_hidden; i++) (void)isfinite(emb[i]); /* readable */
            }
            mllm_free(emb);
            mllm_free(px.patches);
        }
        mllm_qwen2vl_vision_free(v);
    }
    free(buf);
    return 0;
}
