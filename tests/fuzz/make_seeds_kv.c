/* Seeds of the prefix store reader (fuzz_kv_store.c): store files written
   by the store itself for the target's geometry, whole, with a write left
   uncommitted, and with a damaged body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kv/kv_pool.h"
#include "kv/kv_store.h"
#include "make_seeds.h"

static const mllm_kv_store_geom G = {.model_id = 0x5eed, .n_layer = 2, .n_head_kv = 1, .head_dim = 4,
                                     .dtype = 0, .block_size = 4, .block_bytes = 40};

/* n committed entries in a chain, then `pending` more not committed. */
static uint8_t *store_image(int n, int pending, size_t *len) {
    char path[] = "/tmp/mllm-seed-kvstore-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    close(fd);
    unlink(path);
    mllm_kv_store *s = NULL;
    const char *note;
    check(mllm_kv_store_open(path, &G, MLLM_KV_STORE_HEADER + 4096 + 3 * (128 + MLLM_KV_STORE_RECORD), &s, &note));
    uint64_t key = 0, parent = 0;
    for (int i = 0; i < n + pending; i++) {
        int32_t tok[4] = {10 * i, 10 * i + 1, 10 * i + 2, 10 * i + 3};
        uint8_t l0[40], l1[40];
        for (int b = 0; b < 40; b++) l0[b] = (uint8_t)(i + b), l1[b] = (uint8_t)(3 * i + b);
        const uint8_t *src[2] = {l0, l1};
        key = mllm_kv_chain_key(key, tok, 4);
        parent = mllm_kv_store_put(s, key, parent, tok, src);
        if (i + 1 == n) check(mllm_kv_store_flush(s));
    }
    uint8_t *img = read_all(path, len); /* before close, which would commit the pending ones */
    mllm_kv_store_close(s);
    unlink(path);
    return img;
}

static void save_mode(const char *name, uint8_t mode, const uint8_t *img, size_t n) {
    buf b = {0};
    put(&b, &mode, 1);
    put(&b, img, n);
    save("kv_store", name, b.p, b.n);
    free(b.p);
}

void kv_store_seeds(void) {
    size_t n = 0;
    uint8_t *img = store_image(3, 0, &n);
    if (!img) return;
    save_mode("three.bin", 0, img, n);
    save_mode("three_file.bin", 0x0f, img, n);
    img[n - 128 + 95] ^= 0x40; /* the last slot's last body byte (slots of 128, bodies of 96): its checksum fails */
    save_mode("damaged_file.bin", 0x08, img, n);
    free(img);
    img = store_image(2, 1, &n);
    if (!img) return;
    save_mode("uncommitted_file.bin", 0x08, img, n);
    free(img);
}
