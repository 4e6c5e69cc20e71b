/* Model files that misbehave under us (issue #20): a file that shrinks while
   mapped (SIGBUS before core/file_map.c's guard), a FIFO named as a model or
   shard (open() blocked forever before core/file_open.c), a shard that is a
   symlink to a file that is not ours (its first bytes leaked into the
   error), a GGUF with general.alignment = 1 (misaligned float loads under
   UBSan), and absurd real-valued hyper-parameters (+inf, 1e308). Each case
   failed before its fix: crashed, hung (the alarm below turns a hang into a
   failure), leaked or loaded. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include "convert/convert_internal.h"
#include "core/dtype.h"
#include "core/file_map.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "synth/synth.h"
#include "testutil.h"

/* A fresh synthetic model at tmp/<name> (a GGUF file or an HF folder). */
static char *synth(const char *name, const char *format) {
    char *path = (char *)tu_tmp(name);
    if (mllm_synth_write("qwen3", "tiny", "f32", format, path, NULL, NULL) != MLLM_OK)
        fail_msg("synth %s: %s", name, mllm_last_error());
    return path;
}

static char *join2(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static mllm_model *load(const char *path) {
    mllm_model *m = NULL;
    mllm_status st = mllm_model_load(path, NULL, &m);
    if (st != MLLM_OK) fail_msg("load %s: %s", path, mllm_last_error());
    return m;
}

/* Loads, evaluates, shrinks `victim` to one page, evaluates again: the
   second pass must end in MLLM_ERR_IO naming the file, not in SIGBUS. */
static void shrink_during_session(const char *model_path, const char *victim) {
    mllm_model *m = load(model_path);
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, NULL, &s), MLLM_OK);
    const int32_t ids[] = {1, 2, 3};
    assert_int_equal(mllm_session_eval(s, ids, 3), MLLM_OK);
    assert_int_equal(truncate(victim, 4096), 0);
    const int32_t next = 4;
    mllm_status st = mllm_session_eval(s, &next, 1);
    if (st != MLLM_ERR_IO) printf("after truncate: status %d, %s\n", st, mllm_last_error());
    assert_int_equal(st, MLLM_ERR_IO);
    assert_non_null(strstr(mllm_last_error(), "shrank while in use"));
    /* The session stays usable as an object: freeing it and the model is clean. */
    mllm_session_free(s);
    mllm_model_free(m);
}

static void test_gguf_shrinks_under_session(void **state) {
    (void)state;
    char *p = synth("shrink.gguf", "gguf");
    shrink_during_session(p, p);
    free(p);
}

static void test_hf_shard_shrinks_under_session(void **state) {
    (void)state;
    char *dir = synth("shrink-hf", "hf");
    char *shard = join2(dir, "model.safetensors");
    shrink_during_session(dir, shard);
    free(shard);
    free(dir);
}

/* The guard itself: zeros past the new end, the mapping marked damaged,
   what is still in the file intact; a new mapping starts clean. */
static void test_map_guard_pages(void **state) {
    (void)state;
    long pg = sysconf(_SC_PAGESIZE);
    char *path = (char *)tu_tmp("pages.bin");
    unsigned char *buf = malloc((size_t)pg * 3);
    memset(buf, 0xAB, (size_t)pg * 3);
    write_bytes(path, buf, (size_t)pg * 3);
    void *base = NULL;
    size_t size = 0;
    assert_int_equal(mllm_file_map(path, 1, "empty", &base, &size), MLLM_OK);
    assert_int_equal(size, (size_t)pg * 3);
    const volatile unsigned char *p = base;
    assert_int_equal(p[2 * pg + 7], 0xAB);
    assert_false(mllm_file_map_damaged(base));
    assert_int_equal(truncate(path, pg), 0);
    assert_int_equal(p[2 * pg + 7], 0); /* was SIGBUS */
    assert_int_equal(p[pg + 1], 0);
    assert_int_equal(p[5], 0xAB);
    assert_true(mllm_file_map_damaged(base));
    mllm_file_unmap(base, size);
    write_bytes(path, buf, (size_t)pg * 3);
    assert_int_equal(mllm_file_map(path, 1, "empty", &base, &size), MLLM_OK);
    assert_false(mllm_file_map_damaged(base));
    mllm_file_unmap(base, size);
    free(buf);
    free(path);
}

/* A SIGBUS outside our mappings still ends the process (the guard chains to
   the handler before ours: here the default action, death by SIGBUS). */
static void test_foreign_sigbus_still_fatal(void **state) {
    (void)state;
    char *mine = (char *)tu_tmp("mine.bin"), *other = (char *)tu_tmp("other.bin");
    long pg = sysconf(_SC_PAGESIZE);
    char *buf = calloc(2, (size_t)pg);
    write_bytes(mine, buf, (size_t)pg);
    write_bytes(other, buf, (size_t)pg * 2);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGBUS, SIG_DFL); /* not cmocka's handler: it would resume the test run here */
        void *b;
        size_t n;
        if (mllm_file_map(mine, 1, "empty", &b, &n) != MLLM_OK) _exit(3); /* installs the guard */
        int fd = open(other, O_RDONLY);
        volatile unsigned char *q = mmap(NULL, (size_t)pg * 2, PROT_READ, MAP_PRIVATE, fd, 0);
        if (fd < 0 || q == MAP_FAILED || truncate(other, 0) != 0) _exit(4);
        unsigned char c = q[pg + 3]; /* SIGBUS, not ours */
        (void)c;
        _exit(0);                    /* survived: the guard swallowed it */
    }
    int wst = 0;
    assert_int_equal(waitpid(pid, &wst, 0), pid);
    if (WIFEXITED(wst)) printf("child exited %d\n", WEXITSTATUS(wst));
    assert_true(WIFSIGNALED(wst));
    assert_int_equal(WTERMSIG(wst), SIGBUS);
    free(buf);
    free(mine);
    free(other);
}

/* A FIFO as the model, as a shard or as config.json: refused at once. */
static void expect_fifo_refused(const char *load_path, const char *fifo) {
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(20); /* before the fix open() blocked here for good */
    mllm_model *m = NULL;
    mllm_status st = mllm_model_load(load_path, NULL, &m);
    alarm(0);
    assert_int_not_equal(st, MLLM_OK);
    if (!strstr(mllm_last_error(), "not a regular file (a FIFO)")) printf("error: %s\n", mllm_last_error());
    assert_non_null(strstr(mllm_last_error(), "not a regular file (a FIFO)"));
    unlink(fifo);
}

static void test_fifo_refused(void **state) {
    (void)state;
    char *fifo = (char *)tu_tmp("fifo.gguf");
    expect_fifo_refused(fifo, fifo);
    free(fifo);
    const char *files[] = {"model.safetensors", "config.json"};
    for (int i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof name, "fifo-hf-%d", i);
        char *dir = synth(name, "hf");
        char *f = join2(dir, files[i]);
        assert_int_equal(unlink(f), 0);
        expect_fifo_refused(dir, f);
        free(f);
        free(dir);
    }
}

/* A shard symlinked to a file that is not a model: the error names the
   file but shows none of its bytes. Symlinks are followed (a Hugging Face
   cache links snapshots/ to blobs/), so a link to a real shard loads. */
static void test_symlinked_shard(void **state) {
    (void)state;
    char *dir = synth("link-hf", "hf");
    char *shard = join2(dir, "model.safetensors");
    char *blob = (char *)tu_tmp("blob.safetensors");
    assert_int_equal(rename(shard, blob), 0);
    assert_int_equal(symlink(blob, shard), 0);
    mllm_model *m = load(dir); /* followed */
    mllm_model_free(m);
    unlink(shard);
    const char secret[] = "SECRET!!hunter2-and-more-secret-text";
    char *spath = (char *)tu_tmp("secret.txt");
    write_bytes(spath, secret, sizeof secret - 1);
    assert_int_equal(symlink(spath, shard), 0);
    assert_int_not_equal(mllm_model_load(dir, NULL, &m), MLLM_OK);
    const char *e = mllm_last_error();
    uint64_t v;
    memcpy(&v, secret, 8);
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    printf("error: %s\n", e);
    assert_null(strstr(e, num));
    assert_null(strstr(e, "SECRET"));
    assert_null(strstr(e, "hunter2"));
    assert_non_null(strstr(e, "not a safetensors file"));
    free(spath);
    free(blob);
    free(shard);
    free(dir);
}

/* Rewrites a GGUF with general.alignment = 1 and a pad key of `pad` bytes;
   returns whether some F32 tensor's data then starts off a 4-byte boundary. */
static bool write_align1(const char *src, const char *dst, int pad) {
    mllm_gguf *g = NULL;
    assert_int_equal(mllm_gguf_open(src, &g), MLLM_OK);
    mllm_gguf_writer *w = NULL;
    assert_int_equal(mllm_gguf_writer_new(&w), MLLM_OK);
    assert_int_equal(cv_copy_kvs(g, w, ""), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_set_alignment(w, 1), MLLM_OK);
    char padv[8] = "xxxxxxx";
    padv[pad] = 0;
    assert_int_equal(mllm_gguf_writer_add_str(w, "test.pad", padv), MLLM_OK);
    for (uint64_t i = 0; i < mllm_gguf_n_tensors(g); i++) {
        const mllm_gguf_tensor *t = mllm_gguf_tensor_at(g, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        assert_int_equal(mllm_gguf_writer_add_tensor(w, name, t->dtype, (int)t->n_dims, t->ne, t->data), MLLM_OK);
    }
    assert_int_equal(mllm_gguf_writer_write(w, dst), MLLM_OK);
    mllm_gguf_writer_free(w);
    mllm_gguf_close(g);
    assert_int_equal(mllm_gguf_open(dst, &g), MLLM_OK);
    bool odd = false;
    for (uint64_t i = 0; i < mllm_gguf_n_tensors(g); i++) {
        const mllm_gguf_tensor *t = mllm_gguf_tensor_at(g, i);
        if (t->dtype == MLLM_DTYPE_F32 && ((uintptr_t)t->data & 3)) odd = true;
    }
    mllm_gguf_close(g);
    return odd;
}

/* Misaligned tensors are copied at load: the same logits, bit for bit, as
   the 32-aligned file, and no misaligned load for UBSan to report. */
static void test_gguf_alignment_1(void **state) {
    (void)state;
    char *src = synth("aligned.gguf", "gguf");
    char *dst = (char *)tu_tmp("align1.gguf");
    bool odd = false;
    for (int pad = 0; pad < 4 && !odd; pad++) odd = write_align1(src, dst, pad);
    assert_true(odd);
    const int32_t ids[] = {5, 9, 2, 7};
    tu_expect_same_logits(src, dst, ids, 4);
    free(dst);
    free(src);
}

/* Overwrites the f32 value of GGUF key `key` (which must be FLOAT32). */
static void patch_gguf_f32(const char *path, const char *key, float v) {
    size_t n = 0;
    unsigned char *b = tu_read_file(path, &n);
    assert_non_null(b);
    size_t kl = strlen(key);
    unsigned char *at = NULL;
    for (size_t i = 0; i + kl + 8 <= n && !at; i++)
        if (!memcmp(b + i, key, kl)) at = b + i + kl;
    assert_non_null(at);
    uint32_t type;
    memcpy(&type, at, 4);
    assert_int_equal(type, 6); /* GGUF FLOAT32 */
    memcpy(at + 4, &v, 4);
    write_bytes(path, b, n);
    free(b);
}

static void expect_refused(const char *path, const char *what) {
    mllm_model *m = NULL;
    assert_int_equal(mllm_model_load(path, NULL, &m), MLLM_ERR_FORMAT);
    if (!strstr(mllm_last_error(), what)) printf("error: %s\n", mllm_last_error());
    assert_non_null(strstr(mllm_last_error(), what));
}

static void test_absurd_hparams(void **state) {
    (void)state;
    const struct { const char *key, *what; float v; } cases[] = {
        {"qwen3.attention.layer_norm_rms_epsilon", "rms_eps", INFINITY},
        {"qwen3.attention.layer_norm_rms_epsilon", "rms_eps", NAN},
        {"qwen3.attention.layer_norm_rms_epsilon", "rms_eps", 0.5f},
        {"qwen3.rope.freq_base", "rope_theta", INFINITY},
        {"qwen3.rope.freq_base", "rope_theta", 1e30f},
        {"qwen3.rope.freq_base", "rope_theta", -1.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[32];
        snprintf(name, sizeof name, "hp-%zu.gguf", i);
        char *p = synth(name, "gguf");
        patch_gguf_f32(p, cases[i].key, cases[i].v);
        expect_refused(p, cases[i].what);
        free(p);
    }
    /* config.json: 1e308 is a valid JSON number, +inf as a float. */
    char *dir = synth("hp-hf", "hf");
    char *cfg = join2(dir, "config.json");
    char *text = tu_read_file(cfg, NULL);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    cJSON_ReplaceItemInObject(j, "rms_norm_eps", cJSON_CreateNumber(1e308));
    char *out = cJSON_PrintUnformatted(j);
    write_bytes(cfg, out, strlen(out));
    expect_refused(dir, "rms_eps");
    cJSON_free(out);
    cJSON_Delete(j);
    free(cfg);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_guard_pages),
        cmocka_unit_test(test_foreign_sigbus_still_fatal),
        cmocka_unit_test(test_gguf_shrinks_under_session),
        cmocka_unit_test(test_hf_shard_shrinks_under_session),
        cmocka_unit_test(test_fifo_refused),
        cmocka_unit_test(test_symlinked_shard),
        cmocka_unit_test(test_gguf_alignment_1),
        cmocka_unit_test(test_absurd_hparams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
