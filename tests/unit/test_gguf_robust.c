/* GGUF write->read round trips, truncation at every header byte, and
   corrupted files: each must give an error that names the problem. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool str_eq(mllm_gguf_str s, const char *c) { return s.len == strlen(c) && memcmp(s.ptr, c, s.len) == 0; }

static float g_f32[2 * 3];
static mllm_f16 g_f16[64];
static mllm_block_q8_0 g_q8[2];

/* Builds the small test file: one key of every type, then 3 tensors. */
static const char *write_small(void) {
    mllm_gguf_writer *w;
    assert_int_equal(mllm_gguf_writer_new(&w), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_str(w, "general.architecture", "llama"), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_u8(w, "t.u8", 200), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_i8(w, "t.i8", -100), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_u16(w, "t.u16", 60000), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_i16(w, "t.i16", -30000), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_u32(w, "t.u32", 4000000000u), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_i32(w, "t.i32", -2000000000), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_u64(w, "t.u64", 0xFFFFFFFFFFFFFFF0ull), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_i64(w, "t.i64", -5), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_f32(w, "t.f32", 1.5f), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_f64(w, "t.f64", -2.25), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_bool(w, "t.bool", true), MLLM_OK);
    static const char *strs[] = {"a", "", "hello world", "\xc4\xa0x"};
    assert_int_equal(mllm_gguf_writer_add_arr_str(w, "t.strs", strs, NULL, 4), MLLM_OK);
    static const int32_t ints[] = {7, -8, 9};
    assert_int_equal(mllm_gguf_writer_add_arr(w, "t.ints", MLLM_GGUF_INT32, ints, 3), MLLM_OK);
    static const float floats[] = {0.5f, -0.25f};
    assert_int_equal(mllm_gguf_writer_add_arr(w, "t.floats", MLLM_GGUF_FLOAT32, floats, 2), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_u32(w, "t.u32", 1), MLLM_ERR_INVALID_ARG); /* duplicate */
    for (int i = 0; i < 6; i++) g_f32[i] = (float)i - 2.5f;
    for (int i = 0; i < 64; i++) g_f16[i] = mllm_f32_to_f16((float)i / 8);
    for (int b = 0; b < 2; b++) {
        g_q8[b].d = mllm_f32_to_f16(0.5f);
        for (int i = 0; i < 32; i++) g_q8[b].qs[i] = (int8_t)(i - 16 + b);
    }
    int64_t ne_a[] = {3, 2}, ne_b[] = {64}, ne_c[] = {32, 2};
    assert_int_equal(mllm_gguf_writer_add_tensor(w, "a.weight", MLLM_DTYPE_F32, 2, ne_a, g_f32), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_tensor(w, "b.weight", MLLM_DTYPE_F16, 1, ne_b, g_f16), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_tensor(w, "c.weight", MLLM_DTYPE_Q8_0, 2, ne_c, g_q8), MLLM_OK);
    int64_t bad_ne[] = {31};
    assert_int_equal(mllm_gguf_writer_add_tensor(w, "d", MLLM_DTYPE_Q8_0, 1, bad_ne, g_q8), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_gguf_writer_add_tensor(w, "a.weight", MLLM_DTYPE_F32, 2, ne_a, g_f32), MLLM_ERR_INVALID_ARG);
    const char *path = tu_tmp("small.gguf");
    assert_int_equal(mllm_gguf_writer_write(w, path), MLLM_OK);
    mllm_gguf_writer_free(w);
    return path;
}

static void test_round_trip(void **state) {
    (void)state;
    const char *path = write_small();
    mllm_gguf *g;
    assert_int_equal(mllm_gguf_open(path, &g), MLLM_OK);
    assert_int_equal(mllm_gguf_version(g), 3);
    assert_int_equal(mllm_gguf_n_kv(g), 15);
    assert_true(str_eq(mllm_gguf_kv_key(g, 0), "general.architecture"));
    assert_int_equal(mllm_gguf_kv_type(g, 1), MLLM_GGUF_UINT8);
    uint32_t u;
    int64_t i;
    float f;
    bool b;
    mllm_gguf_str s;
    assert_true(mllm_gguf_get_u32(g, "t.u8", &u)); assert_int_equal(u, 200);
    assert_true(mllm_gguf_get_i64(g, "t.i8", &i)); assert_int_equal(i, -100);
    assert_false(mllm_gguf_get_u32(g, "t.i8", &u)); /* negative does not fit */
    assert_true(mllm_gguf_get_u32(g, "t.u16", &u)); assert_int_equal(u, 60000);
    assert_true(mllm_gguf_get_i64(g, "t.i16", &i)); assert_int_equal(i, -30000);
    assert_true(mllm_gguf_get_u32(g, "t.u32", &u)); assert_int_equal(u, 4000000000u);
    assert_true(mllm_gguf_get_i64(g, "t.i32", &i)); assert_int_equal(i, -2000000000);
    assert_false(mllm_gguf_get_i64(g, "t.u64", &i)); /* too large */
    assert_false(mllm_gguf_get_u32(g, "t.u64", &u));
    assert_true(mllm_gguf_get_i64(g, "t.i64", &i)); assert_int_equal(i, -5);
    assert_true(mllm_gguf_get_f32(g, "t.f32", &f)); assert_true(f == 1.5f);
    assert_true(mllm_gguf_get_f32(g, "t.f64", &f)); assert_true(f == -2.25f);
    assert_true(mllm_gguf_get_bool(g, "t.bool", &b)); assert_true(b);
    assert_false(mllm_gguf_get_bool(g, "t.u8", &b));
    assert_true(mllm_gguf_get_str(g, "general.architecture", &s)); assert_true(str_eq(s, "llama"));
    assert_true(mllm_gguf_get_arr_str(g, "t.strs", 0, &s)); assert_true(str_eq(s, "a"));
    assert_true(mllm_gguf_get_arr_str(g, "t.strs", 1, &s)); assert_true(str_eq(s, ""));
    assert_true(mllm_gguf_get_arr_str(g, "t.strs", 2, &s)); assert_true(str_eq(s, "hello world"));
    assert_true(mllm_gguf_get_arr_str(g, "t.strs", 3, &s)); assert_true(str_eq(s, "\xc4\xa0x"));
    assert_false(mllm_gguf_get_arr_str(g, "t.strs", 4, &s));
    assert_false(mllm_gguf_get_arr_str(g, "t.ints", 0, &s));
    assert_true(mllm_gguf_arr_i64(g, "t.ints", 1, &i)); assert_int_equal(i, -8);
    double d;
    assert_true(mllm_gguf_arr_f64(g, "t.floats", 1, &d)); assert_true(d == -0.25);
    assert_true(mllm_gguf_arr_f64(g, "t.ints", 2, &d)); assert_true(d == 9.0);
    assert_false(mllm_gguf_arr_f64(g, "t.floats", 2, &d));
    mllm_gguf_type et;
    uint64_t n;
    const void *data;
    assert_true(mllm_gguf_get_arr(g, "t.ints", &et, &n, &data));
    assert_int_equal(et, MLLM_GGUF_INT32);
    assert_int_equal(n, 3);
    int32_t second;
    memcpy(&second, (const char *)data + 4, 4);
    assert_int_equal(second, -8);
    assert_int_equal(mllm_gguf_n_tensors(g), 3);
    const mllm_gguf_tensor *t = mllm_gguf_find_tensor(g, "a.weight");
    assert_non_null(t);
    assert_int_equal(t->ne[0], 3); assert_int_equal(t->ne[1], 2); assert_int_equal(t->ne[3], 1);
    assert_int_equal(t->size, sizeof g_f32);
    assert_memory_equal(t->data, g_f32, sizeof g_f32);
    assert_int_equal(((uintptr_t)t->data - (uintptr_t)mllm_gguf_tensor_at(g, 0)->data) % 32, 0);
    t = mllm_gguf_find_tensor(g, "b.weight");
    assert_int_equal(t->dtype, MLLM_DTYPE_F16);
    assert_memory_equal(t->data, g_f16, sizeof g_f16);
    t = mllm_gguf_find_tensor(g, "c.weight");
    assert_int_equal(t->dtype, MLLM_DTYPE_Q8_0);
    assert_int_equal(t->size, sizeof g_q8);
    assert_memory_equal(t->data, g_q8, sizeof g_q8);
    assert_int_equal(t->offset % 32, 0);
    mllm_gguf_close(g);
    free((void *)path);
}

static mllm_status fill_ramp(void *user, void *buf, size_t off, size_t n) {
    (void)user;
    for (size_t i = 0; i < n; i++) ((uint8_t *)buf)[i] = (uint8_t)((off + i) * 7);
    return MLLM_OK;
}

/* A tensor larger than the writer's chunk, produced by a fill callback. */
static void test_streaming_tensor(void **state) {
    (void)state;
    mllm_gguf_writer *w;
    assert_int_equal(mllm_gguf_writer_new(&w), MLLM_OK);
    int64_t ne[] = {1024, 1280}; /* 5 MiB of f32 */
    assert_int_equal(mllm_gguf_writer_add_tensor_fn(w, "big", MLLM_DTYPE_F32, 2, ne, fill_ramp, NULL), MLLM_OK);
    const char *path = tu_tmp("stream.gguf");
    assert_int_equal(mllm_gguf_writer_write(w, path), MLLM_OK);
    mllm_gguf_writer_free(w);
    mllm_gguf *g;
    assert_int_equal(mllm_gguf_open(path, &g), MLLM_OK);
    const mllm_gguf_tensor *t = mllm_gguf_find_tensor(g, "big");
    assert_int_equal(t->size, 1024 * 1280 * 4);
    const uint8_t *p = t->data;
    for (size_t i = 0; i < t->size; i += 4093) assert_int_equal(p[i], (uint8_t)(i * 7));
    assert_int_equal(p[t->size - 1], (uint8_t)((t->size - 1) * 7));
    mllm_gguf_close(g);
    free((void *)path);
}

/* Every prefix up to the end of the last tensor's data must be rejected. */
static void truncate_all(const uint8_t *buf, size_t from, size_t to, size_t step, const char *label) {
    for (size_t len = from; len < to; len += step) {
        mllm_gguf *g = (mllm_gguf *)1;
        mllm_status st = mllm_gguf_open_memory(buf, len, label, &g);
        if (st == MLLM_OK) fail_msg("%s truncated to %zu bytes was accepted", label, len);
        assert_null(g);
        assert_non_null(strstr(mllm_last_error(), label));
    }
}

static size_t data_end(const uint8_t *buf, size_t len) {
    mllm_gguf *g;
    assert_int_equal(mllm_gguf_open_memory(buf, len, "full", &g), MLLM_OK);
    size_t end = 0;
    for (uint64_t i = 0; i < mllm_gguf_n_tensors(g); i++) {
        const mllm_gguf_tensor *t = mllm_gguf_tensor_at(g, i);
        size_t e = (size_t)((const uint8_t *)t->data - buf) + t->size;
        if (e > end) end = e;
    }
    mllm_gguf_close(g);
    return end;
}

static void test_truncation(void **state) {
    (void)state;
    const char *path = write_small();
    size_t len;
    uint8_t *buf = tu_read_file(path, &len);
    assert_non_null(buf);
    truncate_all(buf, 0, data_end(buf, len), 1, "small.gguf");
    free(buf);
    free((void *)path);

    const char *fx = tu_shared("models/gguf-fixtures/llama-2-tiny-random.gguf");
    if (!fx) return;
    buf = tu_read_file(fx, &len);
    assert_non_null(buf);
    mllm_gguf *g;
    assert_int_equal(mllm_gguf_open_memory(buf, len, "fixture", &g), MLLM_OK);
    size_t hdr = (size_t)((const uint8_t *)mllm_gguf_tensor_at(g, 0)->data - buf) - mllm_gguf_tensor_at(g, 0)->offset;
    mllm_gguf_close(g);
    /* The header holds a 32000-token vocab (~700 KB) and every parse of a
       long prefix walks it: every byte of the first 16 KiB (magic, counts,
       first keys) and of the last 4 KiB (the keys after the vocab and the
       tensor table), and a prime stride through the middle, keep this test
       in seconds. MLLM_TEST_FULL=1 truncates at every single byte. */
    if (getenv("MLLM_TEST_FULL")) {
        truncate_all(buf, 0, hdr, 1, "fixture");
    } else {
        size_t head = 16384, tail = 4096;
        truncate_all(buf, 0, head, 1, "fixture");
        truncate_all(buf, head, hdr - tail, 997, "fixture");
        truncate_all(buf, hdr - tail, hdr, 1, "fixture");
    }
    truncate_all(buf, hdr, data_end(buf, len), 4099, "fixture");
    free(buf);
    free((void *)fx);
}

/* Offset of the first occurrence of `needle` (a string) in the buffer. */
static size_t find(const uint8_t *buf, size_t len, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++) {
        if (memcmp(buf + i, needle, n) == 0) return i;
    }
    fail_msg("'%s' not found", needle);
    return 0;
}

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

typedef struct { uint8_t *buf; size_t len; } image;

static image fresh(const uint8_t *orig, size_t len) {
    image im = {malloc(len), len};
    memcpy(im.buf, orig, len);
    return im;
}

static void expect_error(image im, const char *what) {
    mllm_gguf *g = (mllm_gguf *)1;
    mllm_status st = mllm_gguf_open_memory(im.buf, im.len, "bad.gguf", &g);
    if (st == MLLM_OK) fail_msg("corruption '%s' was accepted", what);
    assert_null(g);
    const char *msg = mllm_last_error();
    if (!strstr(msg, what) || !strstr(msg, "bad.gguf")) fail_msg("expected '%s' in: %s", what, msg);
    assert_null(strchr(msg, '\n'));
    free(im.buf);
}

static void test_corruptions(void **state) {
    (void)state;
    const char *path = write_small();
    size_t len;
    uint8_t *o = tu_read_file(path, &len);
    assert_non_null(o);
    image im;
    /* Header fields. */
    im = fresh(o, len); memcpy(im.buf, "GGUX", 4); expect_error(im, "bad magic");
    im = fresh(o, len); put32(im.buf + 4, 1); expect_error(im, "v1");
    im = fresh(o, len); put32(im.buf + 4, 0x03000000); expect_error(im, "version");
    im = fresh(o, len); put64(im.buf + 8, UINT64_MAX / 2); expect_error(im, "tensor count");
    im = fresh(o, len); put64(im.buf + 16, UINT64_MAX); expect_error(im, "key/value count");
    /* Strings and arrays. */
    im = fresh(o, len); put64(im.buf + 24, UINT64_MAX - 3); expect_error(im, "length");
    size_t strs = find(o, len, "t.strs");
    im = fresh(o, len); put64(im.buf + strs + 6 + 4 + 4, UINT64_MAX / 4); expect_error(im, "array count");
    im = fresh(o, len); put64(im.buf + strs + 6 + 4 + 4 + 8, 1u << 30); expect_error(im, "length");
    im = fresh(o, len); put32(im.buf + strs + 6 + 4, MLLM_GGUF_ARRAY); expect_error(im, "nested");
    im = fresh(o, len); put32(im.buf + strs + 6 + 4, 99); expect_error(im, "element type");
    size_t u8 = find(o, len, "t.u8");
    im = fresh(o, len); put32(im.buf + u8 + 4, 13); expect_error(im, "unknown value type");
    /* Duplicate key: rename "t.u16" to "t.u32"; duplicate tensor: "b.weight" -> "a.weight". */
    im = fresh(o, len); memcpy(im.buf + find(o, len, "t.u16"), "t.u32", 5); expect_error(im, "duplicate key");
    size_t tb = find(o, len, "b.weight");
    im = fresh(o, len); im.buf[tb] = 'a'; expect_error(im, "duplicate tensor");
    /* Tensor infos: "a.weight" then n_dims, ne[2], type, offset. */
    size_t ta = find(o, len, "a.weight") + 8;
    im = fresh(o, len); put32(im.buf + ta, 5); expect_error(im, "n_dims");
    im = fresh(o, len); put64(im.buf + ta + 4, (uint64_t)1 << 63); expect_error(im, "negative");
    im = fresh(o, len); put64(im.buf + ta + 4, (uint64_t)1 << 40); put64(im.buf + ta + 12, (uint64_t)1 << 40);
    expect_error(im, "overflow");
    im = fresh(o, len); put32(im.buf + ta + 20, 77); expect_error(im, "unknown dtype");
    im = fresh(o, len); put32(im.buf + ta + 20, 4); expect_error(im, "unknown dtype"); /* removed Q4_2 */
    im = fresh(o, len); put64(im.buf + ta + 24, 4); expect_error(im, "not aligned");
    im = fresh(o, len); put64(im.buf + ta + 24, 1u << 20); expect_error(im, "past the end");
    im = fresh(o, len); put64(im.buf + ta + 24, UINT64_MAX - 31); expect_error(im, "past the end");
    im = fresh(o, len); put64(im.buf + ta + 4, 1000); expect_error(im, "past the end");
    size_t tbi = tb + 8;
    im = fresh(o, len); put64(im.buf + tbi + 4 + 8 + 4, 0); expect_error(im, "overlap"); /* b over a */
    size_t tc = find(o, len, "c.weight") + 8;
    im = fresh(o, len); put64(im.buf + tc + 4, 16); expect_error(im, "block size");
    free(o);
    free((void *)path);
}

/* general.alignment must be a power of two, and is honoured when valid. */
static void test_alignment_key(void **state) {
    (void)state;
    mllm_gguf_writer *w;
    assert_int_equal(mllm_gguf_writer_new(&w), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_u32(w, "general.alignment", 48), MLLM_OK);
    const char *path = tu_tmp("align.gguf");
    assert_int_equal(mllm_gguf_writer_write(w, path), MLLM_OK);
    mllm_gguf_writer_free(w);
    mllm_gguf *g;
    assert_int_equal(mllm_gguf_open(path, &g), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "power of two"));
    free((void *)path);
}

/* Random byte flips in the header: any status is fine, a crash or an ASan
   report is not; an accepted file must still have in-bounds tensors. */
static void test_random_flips(void **state) {
    (void)state;
    const char *path = write_small();
    size_t len;
    uint8_t *o = tu_read_file(path, &len);
    size_t hdr = data_end(o, len) - sizeof g_q8; /* header + first tensors */
    uint8_t *b = malloc(len);
    uint64_t s = 12345;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(b, o, len);
        int flips = 1 + iter % 3;
        for (int k = 0; k < flips; k++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            b[(s >> 8) % hdr] ^= (uint8_t)(1u << (s % 8));
        }
        mllm_gguf *g;
        if (mllm_gguf_open_memory(b, len, "flip", &g) != MLLM_OK) continue;
        for (uint64_t i = 0; i < mllm_gguf_n_tensors(g); i++) {
            const mllm_gguf_tensor *t = mllm_gguf_tensor_at(g, i);
            assert_true((const uint8_t *)t->data >= b && (const uint8_t *)t->data + t->size <= b + len);
        }
        mllm_gguf_close(g);
    }
    free(b);
    free(o);
    free((void *)path);
}

/* Every allocation of an open may fail: the open reports NOMEM, leaks
   nothing (ASan) and eventually succeeds. */
static void test_out_of_memory(void **state) {
    (void)state;
    const char *path = write_small();
    for (long n = 0;; n++) {
        mllm_gguf *g = (mllm_gguf *)1;
        mllm_alloc_fail_after(n);
        mllm_status st = mllm_gguf_open(path, &g);
        mllm_alloc_fail_after(-1);
        if (st == MLLM_OK) {
            assert_true(n > 3);
            mllm_gguf_close(g);
            break;
        }
        assert_int_equal(st, MLLM_ERR_NOMEM);
        assert_null(g);
    }
    free((void *)path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_streaming_tensor),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_corruptions),
        cmocka_unit_test(test_alignment_key),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_random_flips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
