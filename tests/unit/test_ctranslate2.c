/* CTranslate2 model.bin reader: small files written here (every dtype,
   quantised weights with scales, aliases, the older v2/v3 layouts), every
   truncation, hostile fields one at a time, out-of-memory at each
   allocation, and (opt-in) Whisper tiny.en's real model.bin. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "formats/ctranslate2.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    uint8_t *p;
    size_t n, cap;
} wbuf;

static void put(wbuf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void put_u8(wbuf *b, uint8_t v) { put(b, &v, 1); }
static void put_u16(wbuf *b, uint16_t v) { put(b, (uint8_t[]){(uint8_t)v, (uint8_t)(v >> 8)}, 2); }
static void put_u32(wbuf *b, uint32_t v) {
    put(b, (uint8_t[]){(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)}, 4);
}
static void put_str(wbuf *b, const char *s) {
    put_u16(b, (uint16_t)(strlen(s) + 1));
    put(b, s, strlen(s) + 1);
}
/* One v4+ variable whose data is a byte ramp starting at `seed`. */
static void put_var(wbuf *b, const char *name, int rank, const uint32_t *dims, uint8_t code, uint32_t bytes,
                    uint8_t seed) {
    put_str(b, name);
    put_u8(b, (uint8_t)rank);
    for (int d = 0; d < rank; d++) put_u32(b, dims[d]);
    put_u8(b, code);
    put_u32(b, bytes);
    for (uint32_t i = 0; i < bytes; i++) put_u8(b, (uint8_t)(seed + i));
}

/* Codes as CTranslate2 numbers them. */
enum { F32 = 0, I8 = 1, I16 = 2, I32 = 3, F16 = 4, BF16 = 5 };

/* A v6 file: 7 variables, 2 aliases (one of them to the quantised weight,
   so its _scale resolves too). Offsets of some fields are returned for the
   hostile variants below. */
typedef struct {
    size_t version, spec_len, n_vars, w_rank, w_dim0, w_code, w_bytes, alias_count, alias_target;
} offsets;

static wbuf make_v6(offsets *o) {
    wbuf b = {0};
    offsets z;
    if (!o) o = &z;
    o->version = b.n;
    put_u32(&b, 6);
    o->spec_len = b.n;
    put_str(&b, "TestSpec");
    put_u32(&b, 3);
    o->n_vars = b.n;
    put_u32(&b, 7);
    put_var(&b, "a/activation", 0, NULL, I8, 1, 3);
    put_var(&b, "a/name", 1, (uint32_t[]){4}, I8, 4, 'a');
    put_var(&b, "a/norm/gamma", 1, (uint32_t[]){4}, F16, 8, 0);
    put_str(&b, "a/proj/weight");
    o->w_rank = b.n;
    put_u8(&b, 2);
    o->w_dim0 = b.n;
    put_u32(&b, 2);
    put_u32(&b, 3);
    o->w_code = b.n;
    put_u8(&b, I8);
    o->w_bytes = b.n;
    put_u32(&b, 6);
    put(&b, (int8_t[]){1, -2, 3, -4, 5, -6}, 6);
    put_var(&b, "a/proj/weight_scale", 1, (uint32_t[]){2}, F32, 8, 0);
    put_var(&b, "b/conv/weight", 3, (uint32_t[]){2, 1, 3}, BF16, 12, 9);
    put_var(&b, "b/heads", 1, (uint32_t[]){2}, I32, 8, 0);
    o->alias_count = b.n;
    put_u32(&b, 2);
    put_str(&b, "c/proj/weight");
    o->alias_target = b.n;
    put_str(&b, "a/proj/weight");
    put_str(&b, "c/gamma");
    put_str(&b, "a/norm/gamma");
    return b;
}

static void test_valid(void **state) {
    (void)state;
    wbuf b = make_v6(NULL);
    mllm_ct2 *c = NULL;
    assert_int_equal(mllm_ct2_open_memory(b.p, b.n, "t.bin", &c), MLLM_OK);
    assert_int_equal(mllm_ct2_version(c), 6);
    assert_string_equal(mllm_ct2_spec_name(c), "TestSpec");
    assert_int_equal(mllm_ct2_spec_revision(c), 3);
    assert_int_equal(mllm_ct2_n_tensors(c), 7);
    assert_int_equal(mllm_ct2_n_aliases(c), 2);
    const mllm_ct2_tensor *t = mllm_ct2_tensor_at(c, 0);
    assert_string_equal(t->name, "a/activation");
    assert_int_equal(t->rank, 0);
    assert_int_equal(t->n_elements, 1);
    assert_int_equal(t->dtype, MLLM_DTYPE_I8);
    assert_int_equal(*(const uint8_t *)t->data, 3);
    t = mllm_ct2_find(c, "a/name");
    assert_non_null(t);
    assert_memory_equal(t->data, "abcd", 4);
    const mllm_ct2_tensor *w = mllm_ct2_find(c, "a/proj/weight");
    assert_non_null(w);
    assert_int_equal(w->dtype, MLLM_DTYPE_I8);
    assert_int_equal(w->rank, 2);
    assert_int_equal(w->dims[0], 2);
    assert_int_equal(w->dims[1], 3);
    assert_int_equal(w->dims[2], 1);
    assert_int_equal(w->size, 6);
    assert_int_equal(((const int8_t *)w->data)[1], -2);
    assert_true((const uint8_t *)w->data > b.p && (const uint8_t *)w->data + 6 <= b.p + b.n); /* not copied */
    assert_true(w->scale >= 0);
    assert_string_equal(mllm_ct2_tensor_at(c, (size_t)w->scale)->name, "a/proj/weight_scale");
    const mllm_ct2_tensor *conv = mllm_ct2_find(c, "b/conv/weight");
    assert_int_equal(conv->dtype, MLLM_DTYPE_BF16);
    assert_int_equal(conv->n_elements, 6);
    assert_int_equal(conv->scale, -1);
    assert_int_equal(mllm_ct2_find(c, "b/heads")->dtype, MLLM_DTYPE_I32);
    assert_int_equal(mllm_ct2_find(c, "a/norm/gamma")->dtype, MLLM_DTYPE_F16);
    /* Aliases resolve, and so do their _scale companions (as CTranslate2). */
    assert_ptr_equal(mllm_ct2_find(c, "c/proj/weight"), w);
    assert_ptr_equal(mllm_ct2_find(c, "c/proj/weight_scale"), mllm_ct2_find(c, "a/proj/weight_scale"));
    assert_ptr_equal(mllm_ct2_find(c, "c/gamma"), mllm_ct2_find(c, "a/norm/gamma"));
    assert_null(mllm_ct2_find(c, "c/gamma_scale"));
    assert_null(mllm_ct2_find(c, "c/proj/weight_zero"));
    assert_null(mllm_ct2_find(c, "a/proj"));
    assert_null(mllm_ct2_find(c, "a/proj/weight/"));
    assert_null(mllm_ct2_find(c, ""));
    assert_null(mllm_ct2_tensor_at(c, 7));
    assert_null(mllm_ct2_alias_at(c, 2));
    assert_string_equal(mllm_ct2_alias_at(c, 1)->name, "c/gamma");
    assert_string_equal(mllm_ct2_dtype_name(MLLM_DTYPE_BF16), "bfloat16");
    mllm_ct2_close(c);
    mllm_ct2_close(NULL);
    /* Every shorter prefix fails with a message naming the file. */
    for (size_t len = 0; len < b.n; len++) {
        c = (mllm_ct2 *)1;
        if (mllm_ct2_open_memory(b.p, len, "t.bin", &c) == MLLM_OK) fail_msg("prefix %zu accepted", len);
        assert_null(c);
        assert_non_null(strstr(mllm_last_error(), "t.bin"));
    }
    free(b.p);
}

/* Opens b with byte `at` (or the u32 there) replaced and expects status
   st and a message containing want. */
static void expect_patch(const wbuf *b, size_t at, size_t width, uint32_t v, mllm_status st, const char *want) {
    uint8_t *p = malloc(b->n);
    memcpy(p, b->p, b->n);
    for (size_t i = 0; i < width; i++) p[at + i] = (uint8_t)(v >> (8 * i));
    mllm_ct2 *c = (mllm_ct2 *)1;
    mllm_status got = mllm_ct2_open_memory(p, b->n, "h.bin", &c);
    if (got != st || !strstr(mllm_last_error(), want)) {
        fail_msg("patch at %zu = %u: status %d, message '%s' (wanted %d, '%s')", at, v, got, mllm_last_error(), st,
                 want);
    }
    assert_null(c);
    free(p);
}

static void test_hostile_fields(void **state) {
    (void)state;
    offsets o;
    wbuf b = make_v6(&o);
    expect_patch(&b, o.version, 4, 1, MLLM_ERR_UNSUPPORTED, "binary version");
    expect_patch(&b, o.version, 4, 7, MLLM_ERR_UNSUPPORTED, "binary version");
    expect_patch(&b, o.version, 4, 0x6c6d6767, MLLM_ERR_UNSUPPORTED, "not a CTranslate2");
    expect_patch(&b, o.spec_len, 2, 0, MLLM_ERR_FORMAT, "empty name");
    expect_patch(&b, o.spec_len, 2, 1, MLLM_ERR_FORMAT, "empty name");
    expect_patch(&b, o.spec_len, 2, 8, MLLM_ERR_FORMAT, "does not end with a NUL");
    expect_patch(&b, o.spec_len, 2, 500, MLLM_ERR_FORMAT, "at most 128");
    expect_patch(&b, o.spec_len + 2, 1, '\n', MLLM_ERR_FORMAT, "not printable");
    expect_patch(&b, o.n_vars, 4, 0xffffffff, MLLM_ERR_FORMAT, "cannot fit");
    expect_patch(&b, o.n_vars, 4, 8, MLLM_ERR_FORMAT, "");
    expect_patch(&b, o.n_vars, 4, 6, MLLM_ERR_FORMAT, "aliases cannot fit"); /* the last variable read as aliases */
    expect_patch(&b, o.w_rank, 1, 9, MLLM_ERR_UNSUPPORTED, "rank 9");
    expect_patch(&b, o.w_rank, 1, 1, MLLM_ERR_FORMAT, "");
    expect_patch(&b, o.w_dim0, 4, 3, MLLM_ERR_FORMAT, "has 6 bytes, its shape needs 9");
    expect_patch(&b, o.w_dim0, 4, 0, MLLM_ERR_FORMAT, "its shape needs 0");
    expect_patch(&b, o.w_dim0, 4, 0xffffffff, MLLM_ERR_FORMAT, "has 6 bytes");
    expect_patch(&b, o.w_code, 1, 6, MLLM_ERR_UNSUPPORTED, "dtype code 6");
    expect_patch(&b, o.w_code, 1, 255, MLLM_ERR_UNSUPPORTED, "dtype code 255");
    expect_patch(&b, o.w_code, 1, F32, MLLM_ERR_FORMAT, "its shape needs 24");
    expect_patch(&b, o.w_bytes, 4, 0xfffffff0, MLLM_ERR_FORMAT, "its shape needs 6");
    expect_patch(&b, o.alias_count, 4, 0x10000000, MLLM_ERR_FORMAT, "cannot fit");
    expect_patch(&b, o.alias_count, 4, 1, MLLM_ERR_FORMAT, "bytes after the last alias");
    expect_patch(&b, o.alias_count, 4, 3, MLLM_ERR_FORMAT, "truncated");
    expect_patch(&b, o.alias_target + 2, 1, 'x', MLLM_ERR_FORMAT, "'x/proj/weight', which is not a variable");
    /* int16 weight: one scale expected, two found. */
    expect_patch(&b, o.w_code, 1, I16, MLLM_ERR_FORMAT, "");
    /* A trailing byte. */
    wbuf t = {0};
    put(&t, b.p, b.n);
    put_u8(&t, 0);
    mllm_ct2 *c = NULL;
    assert_int_equal(mllm_ct2_open_memory(t.p, t.n, "h.bin", &c), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "1 bytes after the last alias"));
    free(t.p);
    free(b.p);
}

/* A file with just the given variables (v6) and aliases. */
static wbuf header(uint32_t version, uint32_t n_vars) {
    wbuf b = {0};
    put_u32(&b, version);
    put_str(&b, "S");
    put_u32(&b, 1);
    put_u32(&b, n_vars);
    return b;
}

static void expect_fail(wbuf *b, mllm_status st, const char *want) {
    mllm_ct2 *c = (mllm_ct2 *)1;
    mllm_status got = mllm_ct2_open_memory(b->p, b->n, "h.bin", &c);
    if (got != st || !strstr(mllm_last_error(), want)) {
        fail_msg("status %d, message '%s' (wanted %d, '%s')", got, mllm_last_error(), st, want);
    }
    assert_null(c);
    free(b->p);
}

static void test_hostile_structure(void **state) {
    (void)state;
    /* Duplicate variable names. */
    wbuf b = header(6, 2);
    put_var(&b, "x", 1, (uint32_t[]){1}, F32, 4, 0);
    put_var(&b, "x", 1, (uint32_t[]){1}, F32, 4, 0);
    put_u32(&b, 0);
    expect_fail(&b, MLLM_ERR_FORMAT, "two variables are named 'x'");
    /* An alias with a variable's name; duplicate aliases; alias of an alias. */
    b = header(6, 1);
    put_var(&b, "x", 0, NULL, F32, 4, 0);
    put_u32(&b, 1);
    put_str(&b, "x");
    put_str(&b, "x");
    expect_fail(&b, MLLM_ERR_FORMAT, "alias 'x' has the name of a variable");
    b = header(6, 1);
    put_var(&b, "x", 0, NULL, F32, 4, 0);
    put_u32(&b, 2);
    put_str(&b, "y");
    put_str(&b, "x");
    put_str(&b, "y");
    put_str(&b, "x");
    expect_fail(&b, MLLM_ERR_FORMAT, "two aliases are named 'y'");
    b = header(6, 1);
    put_var(&b, "x", 0, NULL, F32, 4, 0);
    put_u32(&b, 2);
    put_str(&b, "y");
    put_str(&b, "x");
    put_str(&b, "z");
    put_str(&b, "y");
    expect_fail(&b, MLLM_ERR_FORMAT, "'y', which is not a variable");
    /* Quantised weights: a missing scale, a scale of the wrong shape or
       dtype; an int16 weight with its one scale is fine. */
    b = header(6, 1);
    put_var(&b, "w", 2, (uint32_t[]){2, 2}, I8, 4, 0);
    put_u32(&b, 0);
    expect_fail(&b, MLLM_ERR_FORMAT, "int8 weight 'w' has no 'w_scale'");
    b = header(6, 2);
    put_var(&b, "w", 2, (uint32_t[]){2, 2}, I8, 4, 0);
    put_var(&b, "w_scale", 1, (uint32_t[]){3}, F32, 12, 0);
    put_u32(&b, 0);
    expect_fail(&b, MLLM_ERR_FORMAT, "needs 2 float values (one per row)");
    b = header(6, 2);
    put_var(&b, "w", 2, (uint32_t[]){2, 2}, I8, 4, 0);
    put_var(&b, "w_scale", 1, (uint32_t[]){2}, I32, 8, 0);
    put_u32(&b, 0);
    expect_fail(&b, MLLM_ERR_FORMAT, "scale 'w_scale' is int32");
    b = header(6, 2);
    put_var(&b, "w", 2, (uint32_t[]){2, 2}, I16, 8, 0);
    put_var(&b, "w_scale", 0, NULL, F32, 4, 0);
    put_u32(&b, 0);
    mllm_ct2 *c = NULL;
    assert_int_equal(mllm_ct2_open_memory(b.p, b.n, "ok.bin", &c), MLLM_OK);
    assert_int_equal(mllm_ct2_tensor_at(c, 0)->scale, 1);
    mllm_ct2_close(c);
    free(b.p);
    /* Dimensions whose product overflows 64 bits. */
    b = header(6, 1);
    put_str(&b, "big");
    put_u8(&b, 3);
    for (int d = 0; d < 3; d++) put_u32(&b, 0xffffffff);
    put_u8(&b, F32);
    put_u32(&b, 0);
    put_u32(&b, 0);
    expect_fail(&b, MLLM_ERR_FORMAT, "product overflows");
    /* Data past the end of the file. */
    b = header(6, 1);
    put_str(&b, "x");
    put_u8(&b, 1);
    put_u32(&b, 1000);
    put_u8(&b, F32);
    put_u32(&b, 4000);
    put_u32(&b, 0);
    expect_fail(&b, MLLM_ERR_FORMAT, "needs 4000 bytes of data");
    /* Many variables claimed, few bytes: refused before any allocation. */
    b = header(6, 400000000);
    expect_fail(&b, MLLM_ERR_FORMAT, "400000000 variables cannot fit");
    /* A name with a NUL inside. */
    b = header(6, 1);
    put_u16(&b, 3);
    put(&b, "a\0\0", 3);
    put_u8(&b, 0);
    put_u8(&b, F32);
    put_u32(&b, 4);
    put_u32(&b, 0);
    put_u32(&b, 0);
    expect_fail(&b, MLLM_ERR_FORMAT, "not printable ASCII");
}

/* Binary versions 2 and 3: item size + element count; v2 has no aliases. */
static void test_old_versions(void **state) {
    (void)state;
    for (uint32_t v = 2; v <= 3; v++) {
        wbuf b = header(v, 2);
        put_str(&b, "w");
        put_u8(&b, 2);
        put_u32(&b, 2);
        put_u32(&b, 3);
        size_t at_item = b.n;
        put_u8(&b, 2); /* item size 2: int16 */
        put_u32(&b, 6);
        for (int i = 0; i < 12; i++) put_u8(&b, (uint8_t)i);
        put_str(&b, "w_scale");
        put_u8(&b, 0);
        put_u8(&b, 4);
        put_u32(&b, 1);
        put(&b, (float[]){2.0f}, 4);
        if (v == 3) {
            put_u32(&b, 1);
            put_str(&b, "v");
            put_str(&b, "w");
        }
        mllm_ct2 *c = NULL;
        assert_int_equal(mllm_ct2_open_memory(b.p, b.n, "old.bin", &c), MLLM_OK);
        const mllm_ct2_tensor *w = mllm_ct2_find(c, "w");
        assert_int_equal(w->dtype, MLLM_DTYPE_I16);
        assert_int_equal(w->size, 12);
        assert_int_equal(mllm_ct2_find(c, "w_scale")->dtype, MLLM_DTYPE_F32);
        assert_int_equal(mllm_ct2_n_aliases(c), v == 3 ? 1 : 0);
        if (v == 3) assert_ptr_equal(mllm_ct2_find(c, "v_scale"), mllm_ct2_find(c, "w_scale"));
        mllm_ct2_close(c);
        /* Item size 3 is no type. */
        b.p[at_item] = 3;
        c = NULL;
        mllm_status st = mllm_ct2_open_memory(b.p, b.n, "old.bin", &c);
        assert_int_equal(st, MLLM_ERR_UNSUPPORTED);
        assert_non_null(strstr(mllm_last_error(), "item size 3"));
        free(b.p);
    }
}

static void test_out_of_memory(void **state) {
    (void)state;
    wbuf b = make_v6(NULL);
    mllm_status st = MLLM_ERR_NOMEM;
    for (long n = 0; st == MLLM_ERR_NOMEM && n < 1000; n++) {
        mllm_ct2 *c = NULL;
        mllm_alloc_fail_after(n);
        st = mllm_ct2_open_memory(b.p, b.n, "oom.bin", &c);
        mllm_alloc_fail_after(-1);
        if (st == MLLM_OK) mllm_ct2_close(c);
        else assert_null(c);
    }
    assert_int_equal(st, MLLM_OK);
    free(b.p);
}

static void test_files(void **state) {
    (void)state;
    wbuf b = make_v6(NULL);
    const char *path = tu_tmp("model.bin");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b.p, 1, b.n, f), b.n);
    fclose(f);
    mllm_ct2 *c = NULL;
    assert_int_equal(mllm_ct2_open(path, &c), MLLM_OK);
    assert_int_equal(mllm_ct2_n_tensors(c), 7);
    assert_false(mllm_ct2_damaged(c));
    mllm_ct2_close(c);
    /* A folder, a FIFO, a missing file, a short file. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    assert_int_equal(mllm_ct2_open(dir, &c), MLLM_ERR_IO);
    const char *fifo = tu_tmp("fifo.bin");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(mllm_ct2_open(fifo, &c), MLLM_ERR_IO);
    assert_non_null(strstr(mllm_last_error(), "fifo.bin"));
    const char *none = tu_tmp("none.bin");
    assert_int_equal(mllm_ct2_open(none, &c), MLLM_ERR_IO);
    free((void *)none);
    free((void *)fifo);
    f = fopen(path, "wb");
    fwrite(b.p, 1, 3, f);
    fclose(f);
    assert_int_equal(mllm_ct2_open(path, &c), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "shorter than its 4-byte version"));
    assert_null(c);
    free(b.p);
    free((void *)path);
}

/* Opt-in: $MLLM_WHISPER_TINY_DIR (scripts/fetch-model.sh whisper-tiny.en). */
static void test_real_tiny_en(void **state) {
    (void)state;
    const char *dir = getenv("MLLM_WHISPER_TINY_DIR");
    char path[4096];
    struct stat sb;
    if (!dir || !*dir) {
        printf("SKIPPED: MLLM_WHISPER_TINY_DIR is not set (scripts/fetch-model.sh whisper-tiny.en)\n");
        return;
    }
    snprintf(path, sizeof path, "%s/model.bin", dir);
    if (stat(path, &sb) != 0) {
        printf("SKIPPED: %s is absent\n", path);
        return;
    }
    mllm_ct2 *c = NULL;
    assert_int_equal(mllm_ct2_open(path, &c), MLLM_OK);
    assert_int_equal(mllm_ct2_version(c), 6);
    assert_string_equal(mllm_ct2_spec_name(c), "WhisperSpec");
    assert_int_equal(mllm_ct2_spec_revision(c), 3);
    assert_int_equal(mllm_ct2_n_tensors(c), 148);
    assert_int_equal(mllm_ct2_n_aliases(c), 1);
    uint64_t bytes = 0;
    int n_f16 = 0;
    for (size_t i = 0; i < mllm_ct2_n_tensors(c); i++) {
        const mllm_ct2_tensor *t = mllm_ct2_tensor_at(c, i);
        bytes += t->size;
        n_f16 += t->dtype == MLLM_DTYPE_F16;
    }
    assert_int_equal(n_f16, 139);
    printf("tiny.en: %zu variables, %d f16, %llu bytes of data\n", mllm_ct2_n_tensors(c), n_f16,
           (unsigned long long)bytes);
    const mllm_ct2_tensor *emb = mllm_ct2_find(c, "decoder/embeddings/weight");
    assert_non_null(emb);
    assert_int_equal(emb->rank, 2);
    assert_int_equal(emb->dims[0], 51864);
    assert_int_equal(emb->dims[1], 384);
    assert_ptr_equal(mllm_ct2_find(c, "decoder/projection/weight"), emb);
    const mllm_ct2_tensor *conv = mllm_ct2_find(c, "encoder/conv1/weight");
    assert_int_equal(conv->rank, 3);
    assert_int_equal(conv->dims[1], 80);
    assert_int_equal(conv->dtype, MLLM_DTYPE_F16);
    mllm_ct2_close(c);
}

/* Opt-in: $MLLM_WHISPER_BASE_DIR (scripts/fetch-model.sh whisper-base; not
   fetched by scripts/test.sh: 145 MB for one more listing). */
static void test_real_base(void **state) {
    (void)state;
    const char *dir = getenv("MLLM_WHISPER_BASE_DIR");
    char path[4096];
    struct stat sb;
    if (!dir || !*dir) {
        printf("SKIPPED: MLLM_WHISPER_BASE_DIR is not set (scripts/fetch-model.sh whisper-base)\n");
        return;
    }
    snprintf(path, sizeof path, "%s/model.bin", dir);
    if (stat(path, &sb) != 0) {
        printf("SKIPPED: %s is absent\n", path);
        return;
    }
    mllm_ct2 *c = NULL;
    assert_int_equal(mllm_ct2_open(path, &c), MLLM_OK);
    assert_string_equal(mllm_ct2_spec_name(c), "WhisperSpec");
    assert_int_equal(mllm_ct2_n_tensors(c), 212);
    const mllm_ct2_tensor *emb = mllm_ct2_find(c, "decoder/embeddings/weight");
    assert_non_null(emb);
    assert_int_equal(emb->dims[0], 51865); /* multilingual vocabulary */
    assert_int_equal(emb->dims[1], 512);
    mllm_ct2_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),          cmocka_unit_test(test_hostile_fields),
        cmocka_unit_test(test_hostile_structure), cmocka_unit_test(test_old_versions),
        cmocka_unit_test(test_out_of_memory),  cmocka_unit_test(test_files),
        cmocka_unit_test(test_real_tiny_en),   cmocka_unit_test(test_real_base),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
