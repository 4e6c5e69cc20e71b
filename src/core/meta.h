/* Generic model metadata: typed key/value pairs, the one shape in which every
   format hands hyper-parameters to the model layer. GGUF files give their
   keys as they are ("gemma3.embedding_length"); a Hugging Face config.json
   gives its fields flattened with dots ("rope_scaling.factor"); the model
   registry (src/models) turns those into GGUF-style keys, so each family
   reads one vocabulary. Nothing here knows any model. */
#ifndef MLLM_CORE_META_H
#define MLLM_CORE_META_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    MLLM_META_INT = 1,
    MLLM_META_FLOAT,
    MLLM_META_BOOL,
    MLLM_META_STR,
    MLLM_META_ARR_NUM, /* numbers (kept as doubles) */
    MLLM_META_ARR_STR,
    MLLM_META_ARR_LEN, /* a large array whose values were not copied: only its length */
} mllm_meta_type;

/* Arrays above this many elements are recorded by length only. */
#define MLLM_META_MAX_ARRAY 4096
/* Keys longer than this are refused (real ones are under 100 bytes). */
#define MLLM_META_MAX_KEY 256

typedef struct {
    char *key;
    mllm_meta_type type;
    int64_t i;     /* INT; BOOL as 0/1 */
    double f;      /* FLOAT */
    char *s;       /* STR (NUL-terminated; may hold NULs before len) */
    size_t len;    /* STR bytes; array element count */
    double *num;   /* ARR_NUM */
    char **str;    /* ARR_STR */
} mllm_meta_entry;

typedef struct {
    mllm_meta_entry *e;
    size_t n, cap;
} mllm_meta;

void mllm_meta_free(mllm_meta *m);
/* Setters replace an entry of the same key. They fail only on out of memory
   or a key over MLLM_META_MAX_KEY bytes. */
mllm_status mllm_meta_set_int(mllm_meta *m, const char *key, int64_t v);
mllm_status mllm_meta_set_float(mllm_meta *m, const char *key, double v);
mllm_status mllm_meta_set_bool(mllm_meta *m, const char *key, bool v);
mllm_status mllm_meta_set_str(mllm_meta *m, const char *key, const char *s, size_t len);
mllm_status mllm_meta_set_arr_num(mllm_meta *m, const char *key, const double *v, size_t n);
/* n strings of lens[i] bytes each. */
mllm_status mllm_meta_set_arr_str(mllm_meta *m, const char *key, const char *const *s, const size_t *lens, size_t n);
mllm_status mllm_meta_set_arr_len(mllm_meta *m, const char *key, size_t n);
/* Copies every entry of src whose key starts with prefix (all when NULL),
   renamed to dst_prefix + the rest of the key (dst != src). */
mllm_status mllm_meta_copy(mllm_meta *dst, const mllm_meta *src, const char *prefix, const char *dst_prefix);

const mllm_meta_entry *mllm_meta_find(const mllm_meta *m, const char *key);
/* printf-style key; NULL when absent. */
const mllm_meta_entry *mllm_meta_findf(const mllm_meta *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Typed reads: true when the key is present with a value of that kind.
   get_int accepts a FLOAT that holds an integer; get_float accepts an INT. */
bool mllm_meta_get_int(const mllm_meta *m, const char *key, int64_t *out);
bool mllm_meta_get_float(const mllm_meta *m, const char *key, double *out);
bool mllm_meta_get_bool(const mllm_meta *m, const char *key, bool *out);
/* The string, NUL-terminated, or NULL. */
const char *mllm_meta_get_str(const mllm_meta *m, const char *key);
/* Length of an array entry (any array kind), or -1. */
int64_t mllm_meta_arr_len(const mllm_meta *m, const char *key);
const char *mllm_meta_type_name(mllm_meta_type t);

#endif
