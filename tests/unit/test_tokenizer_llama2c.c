/* llama2.c tokenizer.bin (stories260K tok512.bin) against the golden
   encodings in ../shared/models/stories260K/stories260K_golden.json, which
   an independent reimplementation of llama2.c run.c produced. */
#include "core/alloc.h"
#include "test_tokenizer_vectors.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_golden_encodings(void **state) {
    (void)state;
    const char *tok = tt_shared("models/stories260K/tok512.bin");
    const char *gold = tt_shared("models/stories260K/stories260K_golden.json");
    if (!tok || !gold) skip();
    mllm_tokenizer *t = NULL;
    assert_int_equal(mllm_tokenizer_from_llama2c(tok, &t), MLLM_OK);
    assert_int_equal(mllm_tokenizer_n_vocab(t), 512);
    assert_int_equal(mllm_tokenizer_bos(t), 1);
    assert_int_equal(mllm_tokenizer_eos(t), 2);
    assert_true(mllm_tokenizer_add_bos(t));
    assert_true(mllm_tokenizer_is_eog(t, 2));
    assert_string_equal(mllm_tokenizer_kind(t), "spm");

    char *js = tu_read_file(gold, NULL);
    assert_non_null(js);
    cJSON *root = cJSON_Parse(js);
    assert_non_null(root);
    cJSON *ex = cJSON_GetObjectItem(root, "encode_examples");
    assert_non_null(ex);
    int n_cases = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, ex) {
        const char *text = c->string;
        int32_t ids[256];
        size_t n = 0;
        assert_int_equal(mllm_tokenizer_encode(t, text, strlen(text), true, false, ids, 256, &n),
                         MLLM_OK);
        assert_int_equal((int)n, cJSON_GetArraySize(c));
        for (size_t i = 0; i < n; i++)
            assert_int_equal(ids[i], cJSON_GetArrayItem(c, (int)i)->valueint);
        /* decode(encode(x)) == x */
        char buf[1024];
        size_t len = 0;
        assert_int_equal(mllm_tokenizer_decode(t, ids, n, true, buf, sizeof buf, &len), MLLM_OK);
        assert_int_equal((int)len, (int)strlen(text));
        assert_memory_equal(buf, text, len);
        n_cases++;
    }
    assert_int_equal(n_cases, 4);
    printf("stories260K tok512.bin: %d/%d golden encodings\n", n_cases, n_cases);
    cJSON_Delete(root);
    free(js);
    mllm_tokenizer_free(t);
}

/* Byte fallback: a character not in the 512-token vocab becomes bytes. */
static void test_byte_fallback_and_buffer(void **state) {
    (void)state;
    const char *tok = tt_shared("models/stories260K/tok512.bin");
    if (!tok) skip();
    mllm_tokenizer *t = NULL;
    assert_int_equal(mllm_tokenizer_from_llama2c(tok, &t), MLLM_OK);
    const char *text = "h\xc3\xbc!"; /* ü is not a piece */
    int32_t ids[16];
    size_t n = 0;
    assert_int_equal(mllm_tokenizer_encode(t, text, strlen(text), false, false, ids, 16, &n),
                     MLLM_OK);
    bool saw_c3 = false, saw_bc = false;
    for (size_t i = 0; i < n; i++) {
        saw_c3 |= ids[i] == 3 + 0xc3;
        saw_bc |= ids[i] == 3 + 0xbc;
    }
    assert_true(saw_c3 && saw_bc);
    size_t len = 0;
    char buf[16];
    assert_int_equal(mllm_tokenizer_decode(t, ids, n, true, buf, sizeof buf, &len), MLLM_OK);
    assert_int_equal((int)len, (int)strlen(text));
    assert_memory_equal(buf, text, len);
    /* Too small a buffer says how much is needed. */
    size_t need = 0;
    assert_int_equal(mllm_tokenizer_encode(t, text, strlen(text), true, false, ids, 1, &need),
                     MLLM_ERR_BUFFER_TOO_SMALL);
    assert_int_equal((int)need, (int)n + 1);
    mllm_tokenizer_free(t);
}

static void write_file(const char *path, const void *d, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
}

/* Truncated and corrupt files give MLLM_ERR_FORMAT, never a crash. */
static void test_bad_files(void **state) {
    (void)state;
    const char *tok = tt_shared("models/stories260K/tok512.bin");
    if (!tok) skip();
    size_t size = 0;
    unsigned char *d = tu_read_file(tok, &size);
    assert_non_null(d);
    const char *p = tt_tmp("bad_tok.bin");
    for (size_t cut = 0; cut < size; cut += 97) {
        if (cut == 0) continue;
        write_file(p, d, cut);
        mllm_tokenizer *t = NULL;
        mllm_status st = mllm_tokenizer_from_llama2c(p, &t);
        /* a cut exactly at a record boundary is a valid, shorter vocab */
        if (st == MLLM_OK) {
            mllm_tokenizer_free(t);
            continue;
        }
        assert_int_equal(st, MLLM_ERR_FORMAT);
        assert_null(t);
    }
    unsigned char *bad = malloc(size);
    memcpy(bad, d, size);
    bad[4 + 4] = 0xff; /* first token length: huge */
    bad[4 + 7] = 0x7f;
    write_file(p, bad, size);
    mllm_tokenizer *t = NULL;
    assert_int_equal(mllm_tokenizer_from_llama2c(p, &t), MLLM_ERR_FORMAT);
    assert_int_equal(mllm_tokenizer_from_llama2c("/nonexistent/tok.bin", &t), MLLM_ERR_IO);
    free(bad);
    free(d);
}


/* Every allocation failure during load and encode gives MLLM_ERR_NOMEM and
   leaks nothing (checked by LeakSanitizer in the sanitizer build). */
static void test_out_of_memory(void **state) {
    (void)state;
    const char *tok = tt_shared("models/stories260K/tok512.bin");
    if (!tok) skip();
    int n_fail = 0;
    for (long k = 0;; k++) {
        mllm_tokenizer *t = NULL;
        mllm_alloc_fail_after(k);
        mllm_status st = mllm_tokenizer_from_llama2c(tok, &t);
        int32_t ids[64];
        size_t n = 0;
        if (st == MLLM_OK) st = mllm_tokenizer_encode(t, "Once upon a time", 16, true, false, ids, 64, &n);
        mllm_alloc_fail_after(-1);
        mllm_tokenizer_free(t);
        if (st == MLLM_OK) break;
        assert_int_equal(st, MLLM_ERR_NOMEM);
        n_fail++;
        assert_true(k < 1000);
    }
    assert_true(n_fail > 5);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_encodings),
        cmocka_unit_test(test_byte_fallback_and_buffer),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, tt_free_paths);
}
