/* Fuzz target: a Whisper config.json (the suppress lists the loader reads).
   Every id handed out must lie inside the vocabulary, the counts within the
   limit; a failure hands out nothing. */
#include "fuzz_util.h"
#include "core/alloc.h"
#include "models/whisper.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int32_t *sup = NULL, *begin = NULL;
    int n_sup = -1, n_begin = -1;
    const int n_vocab = 51864;
    mllm_status st = mllm_whisper_config_parse((const char *)data, size, "config.json", n_vocab, &sup, &n_sup, &begin,
                                               &n_begin);
    fz_check_status(st);
    if (st) {
        FZ_CHECK(!sup && !begin && n_sup == 0 && n_begin == 0);
        return 0;
    }
    FZ_CHECK(n_sup >= 0 && n_sup <= MLLM_WHISPER_MAX_SUPPRESS && n_begin >= 0 && n_begin <= MLLM_WHISPER_MAX_SUPPRESS);
    for (int i = 0; i < n_sup; i++) FZ_CHECK(sup[i] >= 0 && sup[i] < n_vocab);
    for (int i = 0; i < n_begin; i++) FZ_CHECK(begin[i] >= 0 && begin[i] < n_vocab);
    mllm_free(sup);
    mllm_free(begin);
    return 0;
}
