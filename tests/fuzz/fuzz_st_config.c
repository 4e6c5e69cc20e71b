/* Fuzz target: a sentence-transformers folder's modules.json, Pooling
   config.json and sentence_bert_config.json (formats/st_config.h).
   Input: three u32-length-prefixed parts (length 0 = the file is absent). */
#include "fuzz_util.h"
#include "formats/st_config.h"
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    fz_input a = fz_take_part(&in), b = fz_take_part(&in), c = fz_take_part(&in);
    char *m = a.n ? fz_dup_str(a.p, a.n) : NULL, *p = b.n ? fz_dup_str(b.p, b.n) : NULL;
    char *s = c.n ? fz_dup_str(c.p, c.n) : NULL;
    mllm_st_config cfg;
    mllm_status st = mllm_st_config_parse(m, p, s, "fuzz/modules.json", &cfg);
    fz_check_status(st);
    if (st == MLLM_OK) {
        FZ_CHECK(cfg.pooling == MLLM_ST_POOL_MEAN || cfg.pooling == MLLM_ST_POOL_CLS || cfg.pooling == MLLM_ST_POOL_LAST);
        FZ_CHECK(cfg.max_seq_length >= 0);
        FZ_CHECK(cfg.found == (m != NULL));
    }
    free(m);
    free(p);
    free(s);
    return 0;
}
