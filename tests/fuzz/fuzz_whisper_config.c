/* Fuzz target: a Whisper config.json, both readings of it: CTranslate2's
   suppress lists (every id handed out inside the vocabulary, the counts
   within the limit; a failure hands out nothing) and a Hugging Face
   WhisperConfig (whisper_load_hf.c: every size accepted is in range). */
#include "fuzz_util.h"
#include "core/alloc.h"
#include "models/whisper/whisper.h"
#include "models/whisper/whisper_load_hf.h"

static void hf_config(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hf_config(data, size);
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

static void hf_config(const uint8_t *data, size_t size) {
    mllm_whisper_hf_config c;
    mllm_status st = mllm_whisper_hf_config_parse((const char *)data, size, "config.json", &c);
    fz_check_status(st);
    if (st) return;
    FZ_CHECK(c.d_model >= 1 && c.d_model <= 8192 && c.n_head >= 1 && c.n_enc_layers >= 1 && c.n_enc_layers <= 256 &&
             c.n_dec_layers >= 1 && c.n_dec_layers <= 256 && c.d_ff >= 1 && c.d_ff <= 65536 && c.n_vocab >= 1 &&
             c.n_vocab <= 1000000 && c.n_audio_ctx >= 1 && c.n_text_ctx >= 1);
}
