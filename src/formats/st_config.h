/* A sentence-transformers folder's own files: modules.json (the pipeline:
   Transformer, Pooling, Normalize), <pooling module>/config.json (which
   pooling) and sentence_bert_config.json (max_seq_length). */
#ifndef MLLM_FORMATS_ST_CONFIG_H
#define MLLM_FORMATS_ST_CONFIG_H
#include <mllm/mllm.h>
#include <stdbool.h>

typedef enum { MLLM_ST_POOL_MEAN = 0, MLLM_ST_POOL_CLS = 1, MLLM_ST_POOL_LAST = 2 } mllm_st_pooling;

typedef struct {
    bool found;             /* the folder has modules.json */
    mllm_st_pooling pooling;/* mean when no Pooling module says otherwise */
    bool normalize;         /* a Normalize module follows the pooling */
    int max_seq_length;     /* 0: not given */
} mllm_st_config;

/* Reads dir's files; a folder without modules.json gives found = false and
   the defaults (mean, no normalize). Errors: MLLM_ERR_FORMAT (bad JSON, a
   module path outside the folder), MLLM_ERR_UNSUPPORTED (a module or a
   pooling mode this build does not run: Dense, max, weighted mean, ...). */
mllm_status mllm_st_config_load(const char *dir, mllm_st_config *out);
/* The same from the texts (any may be NULL): for tests and the fuzzer. */
mllm_status mllm_st_config_parse(const char *modules_json, const char *pooling_json, const char *sbert_json,
                                 const char *label, mllm_st_config *out);

#endif
