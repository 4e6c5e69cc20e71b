/* Fuzz target: native .mllm files, version 3 (mllm_mllmfile_open_memory)
   and MLLM's v1/v2 (mllm_v1v2_parse), then mllm_model_file_open on a scratch
   copy (config section, embedded tokenizer, v1/v2 with a config.json beside).
   Input: a mode byte, u32 length + the file image, then the rest is the
   config.json written beside the file (v1/v2 take their config from there).
   Mode bits: 0 = set the v3 header's file size to the image size, 1 = set the
   v3 metadata checksum to the right value (both let mutations get past the
   first gates instead of failing there), 2 = also go through the file path. */
#include "fuzz_model_check.h"
#include "fuzz_util.h"
#include "core/dtype.h"
#include "formats/mllm_v1v2.h"
#include "formats/mllmfile.h"
#include <stdlib.h>
#include <string.h>

static void in_image(const uint8_t *img, size_t n, const void *p, uint64_t len) {
    const uint8_t *q = p;
    if (len == 0) return;
    FZ_CHECK(q >= img && q <= img + n && len <= (uint64_t)(img + n - q));
}

static void fix_v3_header(uint8_t *img, size_t n, uint8_t mode) {
    if (n < MLLM_FILE_HEADER_BYTES || !mllm_mllmfile_sniff(img, n)) return;
    if (mode & 1) {
        uint64_t size = n;
        memcpy(img + 16, &size, 8);
    }
    uint64_t data_off;
    memcpy(&data_off, img + 104, 8);
    if ((mode & 2) && data_off >= MLLM_FILE_HEADER_BYTES && data_off <= n) {
        mllm_xxh64_state s;
        mllm_xxh64_init(&s);
        mllm_xxh64_update(&s, img, 120);
        mllm_xxh64_update(&s, img + MLLM_FILE_HEADER_BYTES, (size_t)data_off - MLLM_FILE_HEADER_BYTES);
        uint64_t h = mllm_xxh64_digest(&s);
        memcpy(img + 120, &h, 8);
    }
}

static void walk_v3(const uint8_t *img, size_t n) {
    mllm_mllmfile *m = NULL;
    mllm_status st = mllm_mllmfile_open_memory(img, n, "fuzz.mllm", &m);
    fz_check_status(st);
    if (st) {
        FZ_CHECK(m == NULL);
        return;
    }
    size_t nt = mllm_mllmfile_n_tensors(m);
    for (size_t i = 0; i < nt; i++) {
        const mllm_mllmfile_tensor *t = mllm_mllmfile_tensor_at(m, i);
        FZ_CHECK(t != NULL);
        in_image(img, n, t->name, t->name_len);
        in_image(img, n, t->data, t->size);
        FZ_CHECK(t->n_dims >= 1 && t->n_dims <= 4);
        uint64_t rows = 1;
        for (int d = 1; d < 4; d++) rows *= (uint64_t)t->ne[d];
        FZ_CHECK(t->size == rows * mllm_dtype_row_size((mllm_dtype)t->dtype, t->ne[0]));
    }
    FZ_CHECK(mllm_mllmfile_tensor_at(m, nt) == NULL);
    size_t len;
    const char *cfg = mllm_mllmfile_config(m, &len);
    in_image(img, n, cfg, len);
    mllm_tok_kind kind;
    const void *tok = mllm_mllmfile_tokenizer(m, &kind, &len);
    in_image(img, n, tok, len);
    const char *tmpl = mllm_mllmfile_chat_template(m, &len);
    in_image(img, n, tmpl, len);
    const char *js, *cs;
    size_t nj, nc;
    st = mllm_mllmfile_hf_tokenizer(m, &js, &nj, &cs, &nc);
    fz_check_status(st);
    if (st == MLLM_OK) {
        in_image(img, n, js, nj);
        in_image(img, n, cs, nc);
    }
    size_t checked = 0;
    fz_check_status(mllm_mllmfile_verify(m, &checked));
    FZ_CHECK(checked <= nt);
    mllm_mllmfile_close(m);
}

static void walk_v1v2(const uint8_t *img, size_t n) {
    mllm_v1v2_index ix;
    mllm_status st = mllm_v1v2_parse(img, n, "fuzz.mllm", &ix);
    fz_check_status(st);
    if (st) return;
    FZ_CHECK(ix.version == 1 || ix.version == 2);
    for (size_t i = 0; i < ix.n; i++) {
        const mllm_v1v2_entry *e = &ix.e[i];
        FZ_CHECK(e->name != NULL);
        FZ_CHECK(e->offset <= n && e->size <= n - e->offset);
        FZ_CHECK(e->n_dims >= 0 && e->n_dims <= 4);
    }
    mllm_v1v2_index_free(&ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    uint8_t mode = fz_take_u8(&in);
    fz_input part = fz_take_part(&in);
    uint8_t *img = fz_dup(part.p, part.n);
    fix_v3_header(img, part.n, mode);
    walk_v3(img, part.n);
    walk_v1v2(img, part.n);
    if (mode & 4) {
        const char *path = fz_write("native/config.json", in.p, in.n);
        FZ_CHECK(path != NULL);
        path = fz_write("native/model.mllm", img, part.n);
        FZ_CHECK(path != NULL);
        fz_open_model_file(path);
        fz_remove("native/model.mllm");
        fz_remove("native/config.json");
        fz_remove("native");
    }
    free(img);
    return 0;
}
