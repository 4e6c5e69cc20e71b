/* Fuzz target: a llama2.c checkpoint. The 28-byte header goes through
   mllm_llama2c_check with the input's size and with sizes near it; then the
   input is written to a scratch file and opened with mllm_model_file_open
   (format detection, the weight walk, shape checks). */
#include "fuzz_model_check.h"
#include "fuzz_util.h"
#include "formats/llama2c.h"
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size >= MLLM_LLAMA2C_HEADER_BYTES) {
        mllm_llama2c_header h;
        memcpy(&h, data, sizeof h);
        const uint64_t sizes[] = {size, 0, UINT64_MAX, size + 4, (uint64_t)size - 4};
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            bool shared = false;
            mllm_status st = mllm_llama2c_check(&h, sizes[i], "fuzz.bin", &shared);
            fz_check_status(st);
        }
    }
    const char *path = fz_write("model.bin", data, size);
    FZ_CHECK(path != NULL);
    fz_open_model_file(path);
    fz_remove("model.bin");
    return 0;
}
