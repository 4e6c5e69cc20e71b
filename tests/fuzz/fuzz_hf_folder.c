/* Fuzz target: a Hugging Face model folder through mllm_model_file_open
   (config.json + safetensors, name mapping, shape checks). Input: a flag
   byte, then length-prefixed parts written into a scratch folder:
     flag bit 0 clear: config.json, model.safetensors
     flag bit 0 set:   config.json, model-00001-of-00002.safetensors,
                       model-00002-of-00002.safetensors,
                       model.safetensors.index.json */
#include "fuzz_model_check.h"
#include "fuzz_util.h"
#include <stdio.h>

static const char *const k_single[] = {"hf/config.json", "hf/model.safetensors"};
static const char *const k_sharded[] = {"hf/config.json", "hf/model-00001-of-00002.safetensors",
                                        "hf/model-00002-of-00002.safetensors",
                                        "hf/model.safetensors.index.json"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    bool sharded = fz_take_u8(&in) & 1;
    const char *const *files = sharded ? k_sharded : k_single;
    size_t n_files = sharded ? 4 : 2;
    for (size_t i = 0; i < n_files; i++) {
        fz_input part = fz_take_part(&in);
        FZ_CHECK(fz_write(files[i], part.p, part.n) != NULL);
    }
    char dir[512];
    snprintf(dir, sizeof dir, "%s/hf", fz_tmpdir());
    fz_open_model_file(dir);
    for (size_t i = 0; i < n_files; i++) fz_remove(files[i]);
    fz_remove("hf");
    return 0;
}
