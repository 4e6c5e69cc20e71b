/* Fuzz target: prefix store files (src/kv/kv_store.c), for one small K/V
   geometry (2 layers, blocks of 4 tokens, 40 bytes per layer block).
   Input: a mode byte, then the file image. Mode bits: 0 = set the header's
   checksum right, 1 = set every record's checksum right, 2 = set every
   record's body checksum right first (each lets mutations get past one
   gate instead of failing there), 3 = also open the image as a store file
   (mllm_kv_store_open), which must agree with mllm_kv_store_check_image on
   the entries it keeps, and read each entry through a lookup. */
#include "fuzz_util.h"
#include "formats/mllmfile.h"
#include "kv/kv_store.h"
#include <stdlib.h>
#include <string.h>

#define NL 2
#define BS 4
#define BB 40
#define SLOT 128 /* BS * 4 + NL * BB, rounded up to 64 */

static const mllm_kv_store_geom G = {.model_id = 0x5eed, .n_layer = NL, .n_head_kv = 1, .head_dim = 4,
                                     .dtype = 0, .block_size = BS, .block_bytes = BB};

static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* The header's slot count and data offset (the store's own layout rule). */
static bool slots_of(const uint8_t *img, size_t n, uint32_t *n_slots, uint64_t *data_off) {
    if (n < MLLM_KV_STORE_HEADER) return false;
    memcpy(n_slots, img + 44, 4);
    if (*n_slots < 1 || *n_slots > 4096) return false;
    *data_off = (MLLM_KV_STORE_HEADER + (uint64_t)*n_slots * MLLM_KV_STORE_RECORD + 4095) / 4096 * 4096;
    return true;
}

static void fix(uint8_t *img, size_t n, uint8_t mode) {
    if (n < MLLM_KV_STORE_HEADER) return;
    if (mode & 1) wr64(img + 88, mllm_xxh64(img, 88));
    uint32_t ns;
    uint64_t data_off;
    if (!(mode & 6) || !slots_of(img, n, &ns, &data_off)) return;
    for (uint32_t i = 0; i < ns; i++) {
        uint8_t *r = img + MLLM_KV_STORE_HEADER + (size_t)i * MLLM_KV_STORE_RECORD;
        if ((size_t)(r - img) + MLLM_KV_STORE_RECORD > n) break;
        const uint64_t body = data_off + (uint64_t)i * SLOT;
        if ((mode & 4) && body + BS * 4 + NL * BB <= n) wr64(r + 40, mllm_xxh64(img + body, BS * 4 + NL * BB));
        if (mode & 2) wr64(r + 56, mllm_xxh64(r, 56));
    }
}

static void through_file(const uint8_t *img, size_t n, int want) {
    uint32_t ns;
    uint64_t data_off;
    if (!slots_of(img, n, &ns, &data_off)) return;
    const char *path = fz_write("store.kvstore", img, n);
    if (!path) return;
    /* the size that gives the header's slot count */
    const uint64_t bytes = MLLM_KV_STORE_HEADER + 4096 + (uint64_t)ns * (SLOT + MLLM_KV_STORE_RECORD);
    mllm_kv_store *s = NULL;
    const char *note = NULL;
    mllm_status st = mllm_kv_store_open(path, &G, bytes, &s, &note);
    fz_check_status(st);
    if (st != MLLM_OK) return;
    FZ_CHECK(note && note[0]);
    mllm_kv_store_stats ss;
    mllm_kv_store_get_stats(s, &ss);
    /* (a header check_image refuses for a short image is a file open grows back) */
    if (want >= 0) FZ_CHECK(ss.n_entries == want);
    /* every record's entry, looked up by what it says and read */
    uint8_t l0[BB], l1[BB];
    uint8_t *dst[NL] = {l0, l1};
    for (uint32_t i = 0; want > 0 && i < ns; i++) {
        const uint8_t *r = img + MLLM_KV_STORE_HEADER + (size_t)i * MLLM_KV_STORE_RECORD;
        const uint64_t body = data_off + (uint64_t)i * SLOT;
        if ((size_t)(r - img) + MLLM_KV_STORE_RECORD > n || body + BS * 4 > n) break;
        int32_t tok[BS];
        memcpy(tok, img + body, sizeof tok);
        const int e = mllm_kv_store_find(s, rd64(r + 8), rd64(r + 24), tok);
        if (e < 0) continue;
        fz_check_status(mllm_kv_store_read(s, e, dst));
    }
    mllm_kv_store_close(s);
    fz_remove("store.kvstore");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    const uint8_t mode = fz_take_u8(&in);
    uint8_t *img = fz_dup(in.p, in.n);
    if (!img && in.n) return 0;
    fix(img, in.n, mode);
    const int n = mllm_kv_store_check_image(img, in.n, &G);
    FZ_CHECK(n >= -1);
    if (mode & 8) through_file(img, in.n, n);
    free(img);
    return 0;
}
