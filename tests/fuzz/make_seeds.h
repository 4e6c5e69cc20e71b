/* Shared by the seed writers make_seeds.c and make_seeds_text.c. */
#ifndef MLLM_FUZZ_MAKE_SEEDS_H
#define MLLM_FUZZ_MAKE_SEEDS_H
#include <mllm/mllm.h>
#include <stddef.h>
#include <stdint.h>

/* A growing byte buffer. */
typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;

void put(buf *b, const void *d, size_t n);
void put_u32(buf *b, uint32_t v);
void put_f32(buf *b, float f);
void put_str(buf *b, const char *s);
/* A part as fz_take_part reads it: u32 length, then the bytes. */
void put_part(buf *b, const void *d, size_t n);
/* Text part of a tokenizer seed: a flag byte, then a fixed sample text. */
void put_text(buf *b, uint8_t flags);
uint8_t *read_all(const char *path, size_t *n);
/* Writes corpus/<target>/<name> (and flags a seed of 64 KB or more). */
void save(const char *target, const char *name, const void *d, size_t n);
/* Flags a seed that does not load. */
void expect_ok(const char *what, mllm_status st);
/* Exits on a writer error. */
void check(mllm_status st);

/* tokenizer.json texts, also embedded in a .mllm seed. */
extern const char k_bpe_json[];
extern const char k_bpe_config[];

void tokenizer_json_seeds(void);
void st_config_seeds(void);
void tokenizer_bin_seeds(void);
void template_seeds(void);
/* make_seeds_media.c: CTranslate2 model.bin and audio files. */
void media_seeds(void);
/* make_seeds_kv.c: prefix store files. */
void kv_store_seeds(void);

#endif
