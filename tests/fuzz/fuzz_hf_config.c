/* Fuzz target: Hugging Face config.json -> mllm_hparams (in memory,
   no trailing NUL). A config that parses must hold positive sizes. The
   HF <-> GGUF tensor-name maps get the same bytes as a name (they see
   tensor names straight from safetensors headers). */
#include "fuzz_util.h"
#include "formats/hf_config.h"
#include "models/registry.h"
#include <stdlib.h>
#include <string.h>

static void check_name_maps(const uint8_t *data, size_t size) {
    char *name = fz_dup_str(data, size < 300 ? size : 300);
    char out[64];
    if (mllm_hf_name_to_gguf(name, out, sizeof out)) FZ_CHECK(memchr(out, 0, sizeof out) != NULL);
    if (mllm_gguf_name_to_hf(name, out, sizeof out)) FZ_CHECK(memchr(out, 0, sizeof out) != NULL);
    char tiny[4];
    (void)mllm_hf_name_to_gguf(name, tiny, sizeof tiny);
    (void)mllm_gguf_name_to_hf(name, tiny, sizeof tiny);
    free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_name_maps(data, size);
    char *js = fz_dup(data, size);
    mllm_hparams cfg;
    memset(&cfg, 0xa5, sizeof cfg);
    mllm_status st = mllm_family_read_hf_config(js, size, "fuzz/config.json", &cfg);
    fz_check_status(st);
    free(js);
    if (st) return 0;
    FZ_CHECK(memchr(cfg.arch, '\0', sizeof cfg.arch) != NULL);
    FZ_CHECK(cfg.n_vocab > 0 && cfg.n_embd > 0 && cfg.n_layer > 0 && cfg.n_head > 0);
    FZ_CHECK(cfg.n_head_kv > 0 && cfg.head_dim > 0 && cfg.n_ff > 0 && cfg.n_ctx_train > 0);
    return 0;
}
