/* .mllm v3: xxHash64 against published vectors, writer -> reader round trip,
   every header-region byte flipped, every truncation, crafted bad index
   entries (with a valid checksum, so the entry checks themselves are hit),
   data corruption caught by verify, and atomic writes. */
#include "backends/cpu.h"
#include "testutil.h"
#include "core/dtype.h"
#include "formats/mllmfile.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_xxh64_vectors(void **state) {
    (void)state;
    /* Published values (xxHash's reference, python-xxhash's README). */
    assert_true(mllm_xxh64("", 0) == 0xEF46DB3751D8E999ull);
    assert_true(mllm_xxh64("abc", 3) == 0x44BC2CF5AD770999ull);
    const char *s = "Nobody inspects the spammish repetition";
    assert_true(mllm_xxh64(s, strlen(s)) == 0xFBCEA83C8A378BF1ull);
    /* Streaming in odd pieces gives the one-shot value. */
    uint8_t buf[1000];
    for (int i = 0; i < 1000; i++) buf[i] = (uint8_t)(i * 7 + 3);
    uint64_t want = mllm_xxh64(buf, sizeof buf);
    for (size_t step = 1; step < 70; step += 5) {
        mllm_xxh64_state st;
        mllm_xxh64_init(&st);
        for (size_t off = 0; off < sizeof buf; off += step) mllm_xxh64_update(&st, buf + off, off + step > sizeof buf ? sizeof buf - off : step);
        assert_true(mllm_xxh64_digest(&st) == want);
    }
}

typedef struct {
    const uint8_t *bytes;
    int fail_at; /* fill call that fails, -1 never */
    int calls;
} src;

static mllm_status fill(void *user, void *buf, size_t off, size_t n) {
    src *s = user;
    if (s->calls++ == s->fail_at) return MLLM_ERR_IO;
    memcpy(buf, s->bytes + off, n);
    return MLLM_OK;
}

static float g_a[3 * 40];
static uint8_t g_q[2 * 34];
static uint16_t g_h[5];
static src g_src[3];

/* Three tensors (f32 40x3, q8_0 32x2, f16 vector of 5), config, HF
   tokenizer, template. */
static void write_sample(const char *path, int fail_at) {
    tu_fill_random(g_a, 120, 1);
    for (int i = 0; i < 68; i++) g_q[i] = (uint8_t)(i * 13);
    g_q[0] = 0, g_q[1] = 0x3c, g_q[34] = 0, g_q[35] = 0x3c; /* d = 1.0 */
    for (int i = 0; i < 5; i++) g_h[i] = mllm_f32_to_f16((float)i);
    for (int i = 0; i < 3; i++) g_src[i] = (src){.fail_at = i == 1 ? fail_at : -1};
    g_src[0].bytes = (const uint8_t *)g_a, g_src[1].bytes = g_q, g_src[2].bytes = (const uint8_t *)g_h;
    mllm_mllmfile_writer *w;
    assert_int_equal(mllm_mllmfile_writer_new(&w), MLLM_OK);
    assert_int_equal(mllm_mllmfile_writer_set_config(w, "{\"a\":1}", 7), MLLM_OK);
    uint8_t tok[16 + 4 + 2] = {4, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', '{', '}'};
    assert_int_equal(mllm_mllmfile_writer_set_tokenizer(w, MLLM_TOK_HF_JSON, tok, sizeof tok), MLLM_OK);
    assert_int_equal(mllm_mllmfile_writer_set_chat_template(w, "T", 1), MLLM_OK);
    int64_t ne_a[2] = {40, 3}, ne_q[2] = {32, 2}, ne_h[1] = {5};
    assert_int_equal(mllm_mllmfile_writer_add_tensor(w, "a.weight", MLLM_DTYPE_F32, 2, ne_a, fill, &g_src[0]), MLLM_OK);
    assert_int_equal(mllm_mllmfile_writer_add_tensor(w, "q.weight", MLLM_DTYPE_Q8_0, 2, ne_q, fill, &g_src[1]), MLLM_OK);
    assert_int_equal(mllm_mllmfile_writer_add_tensor(w, "h.bias", MLLM_DTYPE_F16, 1, ne_h, fill, &g_src[2]), MLLM_OK);
    /* Duplicates and block-size mismatches are refused when added. */
    assert_int_not_equal(mllm_mllmfile_writer_add_tensor(w, "h.bias", MLLM_DTYPE_F16, 1, ne_h, fill, &g_src[2]), MLLM_OK);
    int64_t odd[1] = {33};
    assert_int_not_equal(mllm_mllmfile_writer_add_tensor(w, "odd", MLLM_DTYPE_Q8_0, 1, odd, fill, &g_src[1]), MLLM_OK);
    mllm_status st = mllm_mllmfile_writer_write(w, path);
    mllm_mllmfile_writer_free(w);
    assert_int_equal(st != MLLM_OK, fail_at >= 0);
}

static void test_round_trip(void **state) {
    (void)state;
    const char *path = tu_tmp("rt.mllm");
    write_sample(path, -1);
    mllm_mllmfile *m;
    assert_int_equal(mllm_mllmfile_open(path, &m), MLLM_OK);
    assert_int_equal(mllm_mllmfile_n_tensors(m), 3);
    const mllm_mllmfile_tensor *a = mllm_mllmfile_tensor_at(m, 0), *q = mllm_mllmfile_tensor_at(m, 1),
                               *h = mllm_mllmfile_tensor_at(m, 2);
    assert_int_equal(a->name_len, 8);
    assert_memory_equal(a->name, "a.weight", 8);
    assert_int_equal(a->dtype, MLLM_DTYPE_F32);
    assert_int_equal(a->n_dims, 2);
    assert_int_equal(a->ne[0], 40);
    assert_int_equal(a->ne[1], 3);
    assert_int_equal(a->ne[2], 1);
    assert_int_equal(a->size, sizeof g_a);
    assert_memory_equal(a->data, g_a, sizeof g_a);
    assert_memory_equal(q->data, g_q, sizeof g_q);
    assert_memory_equal(h->data, g_h, sizeof g_h);
    assert_int_equal(h->n_dims, 1);
    for (int i = 0; i < 3; i++) assert_int_equal((uintptr_t)mllm_mllmfile_tensor_at(m, (size_t)i)->data % 64, 0);
    assert_true(a->checksum == mllm_xxh64(g_a, sizeof g_a));
    size_t n;
    const char *cfg = mllm_mllmfile_config(m, &n);
    assert_int_equal(n, 7);
    assert_memory_equal(cfg, "{\"a\":1}", 7);
    const char *tmpl = mllm_mllmfile_chat_template(m, &n);
    assert_int_equal(n, 1);
    assert_int_equal(tmpl[0], 'T');
    const char *js, *tc;
    size_t nj, nc;
    assert_int_equal(mllm_mllmfile_hf_tokenizer(m, &js, &nj, &tc, &nc), MLLM_OK);
    assert_int_equal(nj, 4);
    assert_int_equal(nc, 2);
    assert_memory_equal(tc, "{}", 2);
    size_t checked;
    assert_int_equal(mllm_mllmfile_verify(m, &checked), MLLM_OK);
    assert_int_equal(checked, 3);
    mllm_mllmfile_close(m);
    free((void *)path);
}

static uint8_t *load(const char *path, size_t *len) {
    uint8_t *b = tu_read_file(path, len);
    assert_non_null(b);
    return b;
}

static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Recomputes the header/metadata checksum after an edit. */
static void reseal(uint8_t *b) {
    uint64_t data_off = rd64(b + 104);
    mllm_xxh64_state s;
    mllm_xxh64_init(&s);
    mllm_xxh64_update(&s, b, 120);
    mllm_xxh64_update(&s, b + 128, (size_t)data_off - 128);
    uint64_t h = mllm_xxh64_digest(&s);
    memcpy(b + 120, &h, 8);
}

static void test_every_header_byte_and_truncation(void **state) {
    (void)state;
    const char *path = tu_tmp("flip.mllm");
    write_sample(path, -1);
    size_t len;
    uint8_t *b = load(path, &len);
    uint64_t data_off = rd64(b + 104);
    mllm_mllmfile *m;
    for (size_t i = 0; i < data_off; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            b[i] ^= (uint8_t)(1u << bit);
            mllm_status st = mllm_mllmfile_open_memory(b, len, "flip", &m);
            if (st == MLLM_OK) fail_msg("flipping bit %d of byte %zu was not detected", bit, i);
            assert_non_null(strstr(mllm_last_error(), "flip"));
            b[i] ^= (uint8_t)(1u << bit);
        }
    }
    for (size_t n = 0; n < len; n++) {
        if (mllm_mllmfile_open_memory(b, n, "trunc", &m) == MLLM_OK) fail_msg("truncation to %zu accepted", n);
    }
    assert_int_equal(mllm_mllmfile_open_memory(b, len, "ok", &m), MLLM_OK);
    mllm_mllmfile_close(m);
    free(b);
    free((void *)path);
}

/* Edits index entry e's field at byte `field`, reseals, expects an error
   containing `want`. */
static void expect_entry_error(const uint8_t *orig, size_t len, int e, int field, uint64_t value, int width,
                               const char *want) {
    uint8_t *b = malloc(len);
    memcpy(b, orig, len);
    uint8_t *ent = b + 128;
    for (int i = 0; i < e; i++) {
        uint32_t nl;
        memcpy(&nl, ent, 4);
        ent += (80 + nl + 7) / 8 * 8;
    }
    memcpy(ent + field, &value, (size_t)width);
    reseal(b);
    mllm_mllmfile *m = NULL;
    mllm_status st = mllm_mllmfile_open_memory(b, len, "bad.mllm", &m);
    if (st == MLLM_OK) fail_msg("entry %d field %d = %llu accepted", e, field, (unsigned long long)value);
    if (!strstr(mllm_last_error(), want) || !strstr(mllm_last_error(), "bad.mllm")) {
        fail_msg("error '%s' does not mention '%s'", mllm_last_error(), want);
    }
    free(b);
}

static void test_bad_entries(void **state) {
    (void)state;
    const char *path = tu_tmp("entries.mllm");
    write_sample(path, -1);
    size_t len;
    uint8_t *b = load(path, &len);
    uint64_t q_off = 0;
    {
        mllm_mllmfile *m;
        assert_int_equal(mllm_mllmfile_open_memory(b, len, "x", &m), MLLM_OK);
        q_off = mllm_mllmfile_tensor_at(m, 1)->offset;
        mllm_mllmfile_close(m);
    }
    expect_entry_error(b, len, 1, 4, 77, 4, "unknown dtype");                /* dtype */
    expect_entry_error(b, len, 1, 48, q_off + 4, 8, "not 64-byte aligned"); /* offset */
    expect_entry_error(b, len, 2, 48, 1u << 20, 8, "outside the file");
    expect_entry_error(b, len, 1, 48, 0, 8, "overlaps");
    expect_entry_error(b, len, 1, 56, 1, 8, "byte size");
    expect_entry_error(b, len, 0, 16, 39, 8, "byte size");                  /* ne[0] */
    expect_entry_error(b, len, 1, 16, 33, 8, "block size");
    expect_entry_error(b, len, 0, 8, 5, 4, "dimension count");
    expect_entry_error(b, len, 0, 24, 0, 8, "dimension out of range");
    expect_entry_error(b, len, 0, 0, 300, 4, "name length");
    /* Same name twice: rename "h.bias" (6 bytes) to "a.weig". */
    uint8_t *c = malloc(len);
    memcpy(c, b, len);
    uint8_t *e2 = c + 128 + (80 + 8 + 7) / 8 * 8 * 2;
    assert_memory_equal(e2 + 80, "h.bias", 6);
    memcpy(c + 128 + 80, "h.bias", 6);
    memcpy(c + 128, &(uint32_t){6}, 4);
    memcpy(c + 128 + 86, "\0\0", 2);
    /* entry 0's padded size must stay 88: name_len 6 pads to 88 as 8 did. */
    reseal(c);
    mllm_mllmfile *m = NULL;
    assert_int_not_equal(mllm_mllmfile_open_memory(c, len, "dup.mllm", &m), MLLM_OK);
    assert_non_null(strstr(mllm_last_error(), "appears twice"));
    free(c);
    free(b);
    free((void *)path);
}

static void test_verify_catches_data_corruption(void **state) {
    (void)state;
    const char *path = tu_tmp("data.mllm");
    write_sample(path, -1);
    size_t len;
    uint8_t *b = load(path, &len);
    uint64_t data_off = rd64(b + 104);
    b[data_off + 64 * 0 + 5] ^= 1; /* inside a.weight */
    mllm_mllmfile *m;
    assert_int_equal(mllm_mllmfile_open_memory(b, len, "data.mllm", &m), MLLM_OK); /* load does not hash data */
    assert_int_not_equal(mllm_mllmfile_verify(m, NULL), MLLM_OK);
    assert_non_null(strstr(mllm_last_error(), "a.weight"));
    mllm_mllmfile_close(m);
    free(b);
    free((void *)path);
}

static void test_atomic_write(void **state) {
    (void)state;
    const char *path = tu_tmp("atomic.mllm");
    write_sample(path, -1);
    size_t len0;
    uint8_t *before = load(path, &len0);
    write_sample(path, 0); /* the second tensor's fill fails */
    size_t len1;
    uint8_t *after = load(path, &len1);
    assert_int_equal(len0, len1);
    assert_memory_equal(before, after, len0);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    assert_int_not_equal(access(tmp, F_OK), 0);
    free(before);
    free(after);
    free((void *)path);
}

int main(void) {
    mllm_cpu_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xxh64_vectors),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_every_header_byte_and_truncation),
        cmocka_unit_test(test_bad_entries),
        cmocka_unit_test(test_verify_catches_data_corruption),
        cmocka_unit_test(test_atomic_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
