/* The persistent prefix store (src/kv/kv_store.c, src/engine/engine_store.c):
   entries written, reopened and found by their exact chain (key, parent,
   tokens); damaged bodies and records, a cut file, uncommitted writes,
   another model's identity and another geometry are all rejected cleanly;
   LRU eviction; one process at a time. Then the engine: a second engine on
   the same store reads the prompt's blocks instead of computing them and
   generates the same tokens as with no store, and another model never
   reads them. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "api/engine_api.h"
#include "api/internal.h"
#include "kv/kv_pool.h"
#include "kv/kv_store.h"
#include "testutil.h"

#define BS 4
#define NL 2
#define BB 100

static mllm_kv_store_geom geom(void) {
    return (mllm_kv_store_geom){.model_id = 0x1234, .n_layer = NL, .n_head_kv = 1, .head_dim = 8, .dtype = 0,
                                .block_size = BS, .block_bytes = BB};
}

/* Block i of a chain: its tokens and its layers' bytes. */
static void block_of(int i, int32_t *tok, uint8_t data[NL][BB]) {
    for (int t = 0; t < BS; t++) tok[t] = 100 * i + t;
    for (int l = 0; l < NL; l++)
        for (int b = 0; b < BB; b++) data[l][b] = (uint8_t)(i * 31 + l * 7 + b);
}

/* Writes block i after the block with chain key pkey and serial parent;
   returns its serial (0: not written), *key its chain key. */
static uint64_t put_block(mllm_kv_store *s, int i, uint64_t pkey, uint64_t parent, uint64_t *key) {
    int32_t tok[BS];
    uint8_t data[NL][BB];
    block_of(i, tok, data);
    const uint8_t *src[NL] = {data[0], data[1]};
    *key = mllm_kv_chain_key(pkey, tok, BS);
    return mllm_kv_store_put(s, *key, parent, tok, src);
}

/* Writes blocks [0, n) as one chain; keys[i], serials[i] per block. */
static void write_chain(mllm_kv_store *s, int n, uint64_t *keys, uint64_t *serials) {
    for (int i = 0; i < n; i++) {
        serials[i] = put_block(s, i, i ? keys[i - 1] : 0, i ? serials[i - 1] : 0, &keys[i]);
        assert_true(serials[i] != 0);
    }
}

/* How many leading blocks of the chain the store serves, each checked
   byte for byte. */
static int walk(mllm_kv_store *s, int n) {
    uint64_t key = 0, parent = 0;
    for (int i = 0; i < n; i++) {
        int32_t tok[BS];
        uint8_t data[NL][BB], got[NL][BB];
        block_of(i, tok, data);
        key = mllm_kv_chain_key(key, tok, BS);
        const int e = mllm_kv_store_find(s, key, parent, tok);
        if (e < 0) return i;
        uint8_t *dst[NL] = {got[0], got[1]};
        if (mllm_kv_store_read(s, e, dst) != MLLM_OK) return i;
        assert_memory_equal(got, data, sizeof data);
        parent = mllm_kv_store_serial(s, e);
    }
    return n;
}

static mllm_kv_store *open_ok(const char *path, const mllm_kv_store_geom *g, uint64_t bytes, const char **note) {
    mllm_kv_store *s = NULL;
    const char *n = NULL;
    if (mllm_kv_store_open(path, g, bytes, &s, &n) != MLLM_OK) fail_msg("open %s: %s", path, mllm_last_error());
    if (note) *note = n;
    return s;
}

static void flip_byte(const char *path, long off) {
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, off, SEEK_SET), 0);
    int c = fgetc(f);
    assert_int_equal(fseek(f, off, SEEK_SET), 0);
    fputc(c ^ 0x5a, f);
    fclose(f);
}

static int entries(const mllm_kv_store *s) {
    mllm_kv_store_stats st;
    mllm_kv_store_get_stats(s, &st);
    return st.n_entries;
}

static void test_roundtrip_and_damage(void **state) {
    (void)state;
    char *path = (char *)tu_tmp("a.kvstore");
    unlink(path);
    const mllm_kv_store_geom g = geom();
    const char *note;
    mllm_kv_store *s = open_ok(path, &g, 1 << 16, &note);
    assert_non_null(strstr(note, "created"));
    uint64_t keys[4], serials[4];
    write_chain(s, 4, keys, serials);
    assert_int_equal(walk(s, 4), 4); /* found at once, before the commit */
    mllm_kv_store_stats st;
    mllm_kv_store_get_stats(s, &st);
    const uint64_t slot = st.slot_bytes;
    const int n_slots = st.n_slots;
    mllm_kv_store_close(s);

    s = open_ok(path, &g, 1 << 16, &note);
    assert_int_equal(entries(s), 4);
    assert_int_equal(walk(s, 4), 4);
    /* the exact chain only: another parent or other tokens find nothing */
    int32_t tok[BS];
    uint8_t data[NL][BB];
    block_of(1, tok, data);
    assert_true(mllm_kv_store_find(s, keys[1], serials[0], tok) >= 0);
    assert_int_equal(mllm_kv_store_find(s, keys[1], 0, tok), -1);
    assert_int_equal(mllm_kv_store_find(s, keys[1], serials[1], tok), -1);
    tok[2]++;
    assert_int_equal(mllm_kv_store_find(s, keys[1], serials[0], tok), -1);
    mllm_kv_store_close(s);

    /* a damaged body (block 2's last layer byte): it and what follows it are unreachable */
    const long data_off = (long)((MLLM_KV_STORE_HEADER + (uint64_t)n_slots * MLLM_KV_STORE_RECORD + 4095) / 4096 * 4096);
    flip_byte(path, data_off + 2 * (long)slot + BS * 4 + NL * BB - 1);
    s = open_ok(path, &g, 1 << 16, NULL);
    mllm_kv_store_get_stats(s, &st);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(st.n_entries, 3);
    assert_int_equal(walk(s, 4), 2);
    mllm_kv_store_close(s);
    /* a damaged commit record (block 0's key) */
    flip_byte(path, MLLM_KV_STORE_HEADER + 9);
    s = open_ok(path, &g, 1 << 16, NULL);
    mllm_kv_store_get_stats(s, &st);
    assert_int_equal(st.dropped, 2); /* block 2's is still there: open only reads */
    assert_int_equal(walk(s, 4), 0);
    mllm_kv_store_close(s);
    free(path);
}

static void test_truncated_and_uncommitted(void **state) {
    (void)state;
    char *path = (char *)tu_tmp("b.kvstore");
    unlink(path);
    const mllm_kv_store_geom g = geom();
    mllm_kv_store *s = open_ok(path, &g, 1 << 16, NULL);
    uint64_t keys[3], serials[3];
    write_chain(s, 3, keys, serials);
    assert_int_equal(mllm_kv_store_flush(s), MLLM_OK);
    /* a fourth entry written but never committed: what a SIGKILL before the flush leaves */
    uint64_t k3;
    assert_true(put_block(s, 3, keys[2], serials[2], &k3) != 0);
    size_t n = 0;
    uint8_t *img = tu_read_file(path, &n);
    assert_non_null(img);
    assert_int_equal(mllm_kv_store_check_image(img, n, &g), 3);
    /* the image of another model or geometry is refused as a whole */
    mllm_kv_store_geom other = g;
    other.model_id++;
    assert_int_equal(mllm_kv_store_check_image(img, n, &other), -1);
    other = g;
    other.block_size = BS + 1;
    assert_int_equal(mllm_kv_store_check_image(img, n, &other), -1);
    /* cut inside the data: the header check needs the whole file */
    assert_int_equal(mllm_kv_store_check_image(img, n - 1, &g), -1);
    free(img);
    /* one process at a time */
    mllm_kv_store *s2 = NULL;
    const char *note;
    assert_int_equal(mllm_kv_store_open(path, &g, 1 << 16, &s2, &note), MLLM_ERR_IO);
    assert_null(s2);
    mllm_kv_store_close(s); /* commits the fourth */

    /* cut the file inside block 2's body: blocks 0 and 1 stay */
    mllm_kv_store_stats st;
    s = open_ok(path, &g, 1 << 16, NULL);
    assert_int_equal(entries(s), 4);
    mllm_kv_store_get_stats(s, &st);
    mllm_kv_store_close(s);
    const uint64_t data_off = (MLLM_KV_STORE_HEADER + (uint64_t)st.n_slots * MLLM_KV_STORE_RECORD + 4095) / 4096 * 4096;
    assert_int_equal(truncate(path, (off_t)(data_off + 2 * st.slot_bytes + 10)), 0);
    s = open_ok(path, &g, 1 << 16, NULL);
    mllm_kv_store_get_stats(s, &st);
    assert_int_equal(st.n_entries, 2);
    assert_int_equal(st.dropped, 2);
    assert_int_equal(walk(s, 4), 2);
    /* and it writes again where the broken ones were */
    uint64_t k2[4], s2s[4];
    write_chain(s, 4, k2, s2s);
    mllm_kv_store_close(s);
    s = open_ok(path, &g, 1 << 16, NULL);
    assert_int_equal(walk(s, 4), 4);
    mllm_kv_store_close(s);

    /* another model's identity, another geometry, a cut header, a damaged
       header: started afresh, never read */
    const char *why[] = {"another model", "another K/V geometry", "another --prefix-store-size", "shorter than",
                         "its header is damaged"};
    for (int c = 0; c < 5; c++) {
        s = open_ok(path, &g, 1 << 16, NULL);
        if (walk(s, 4) != 4) write_chain(s, 4, k2, s2s);
        mllm_kv_store_close(s);
        mllm_kv_store_geom o = g;
        uint64_t bytes = 1 << 16;
        if (c == 0) o.model_id = 99;
        if (c == 1) o.dtype = 1;
        if (c == 2) bytes = 1 << 17;
        if (c == 3) assert_int_equal(truncate(path, 100), 0);
        if (c == 4) {
            FILE *f = fopen(path, "r+b");
            fseek(f, 12, SEEK_SET);
            fputs("GGUF", f);
            fclose(f);
        }
        s = open_ok(path, &o, bytes, &note);
        if (!strstr(note, why[c])) fail_msg("case %d: %s", c, note);
        assert_int_equal(entries(s), 0);
        mllm_kv_store_close(s);
    }
    free(path);
}

/* A file that is not a store, a link named like the store, a folder other
   users can write: refused, and nothing written (#40: a link in the folder
   had the store written into its target). */
static void test_hostile_files(void **state) {
    (void)state;
    const mllm_kv_store_geom g = geom();
    mllm_kv_store *s = NULL;
    const char *note;
    char *path = (char *)tu_tmp("h.kvstore"), *target = (char *)tu_tmp("h.target");
    unlink(path);
    FILE *f = fopen(path, "wb");
    fputs("GGUF and other bytes that are not ours", f);
    fclose(f);
    assert_int_equal(mllm_kv_store_open(path, &g, 1 << 16, &s, &note), MLLM_ERR_IO);
    assert_non_null(strstr(mllm_last_error(), "not a prefix store"));
    size_t n = 0;
    char *kept = tu_read_file(path, &n);
    assert_int_equal(n, 38);
    assert_memory_equal(kept, "GGUF and other bytes that are not ours", 38);
    free(kept);
    /* a symbolic link: neither followed nor replaced, its target unchanged */
    unlink(path);
    const char *theirs = "33 bytes of someone else's file.\n";
    f = fopen(target, "wb");
    fputs(theirs, f);
    fclose(f);
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(mllm_kv_store_open(path, &g, 1 << 16, &s, &note), MLLM_ERR_IO);
    assert_null(s);
    assert_non_null(strstr(mllm_last_error(), "symbolic link"));
    kept = tu_read_file(target, &n);
    assert_int_equal(n, strlen(theirs));
    assert_memory_equal(kept, theirs, n);
    free(kept);
    struct stat ls;
    assert_int_equal(lstat(path, &ls), 0);
    assert_true(S_ISLNK(ls.st_mode));
    unlink(path);
    /* a folder others can write; the same sticky and ours is accepted */
    char *dir = (char *)tu_tmp("shared-store"), sub[4200];
    mkdir(dir, 0700);
    snprintf(sub, sizeof sub, "%s/x.kvstore", dir);
    unlink(sub);
    assert_int_equal(chmod(dir, 0777), 0);
    assert_int_equal(mllm_kv_store_open(sub, &g, 1 << 16, &s, &note), MLLM_ERR_IO);
    assert_non_null(strstr(mllm_last_error(), "writable by other users"));
    assert_int_equal(access(sub, F_OK), -1); /* nothing created */
    assert_int_equal(chmod(dir, 01777), 0);
    s = open_ok(sub, &g, 1 << 16, &note);
    mllm_kv_store_close(s);
    unlink(sub);
    chmod(dir, 0700);
    rmdir(dir);
    unlink(target);
    free(dir);
    free(target);
    free(path);
}

static void test_lru(void **state) {
    (void)state;
    char *path = (char *)tu_tmp("c.kvstore");
    unlink(path);
    const mllm_kv_store_geom g = geom();
    /* room for 3 slots */
    const uint64_t per = (BS * 4 + NL * BB + 63) / 64 * 64 + MLLM_KV_STORE_RECORD;
    mllm_kv_store *s = open_ok(path, &g, MLLM_KV_STORE_HEADER + 4096 + 3 * per, NULL);
    mllm_kv_store_stats st;
    mllm_kv_store_get_stats(s, &st);
    assert_int_equal(st.n_slots, 3);
    uint64_t keys[3], serials[3];
    write_chain(s, 3, keys, serials);
    assert_int_equal(walk(s, 1), 1); /* block 0 is now the most recent */
    /* a fourth block: the least recent (block 1) goes */
    uint64_t k3;
    assert_true(put_block(s, 3, keys[2], serials[2], &k3) != 0);
    int32_t tok[BS];
    uint8_t data[NL][BB];
    mllm_kv_store_get_stats(s, &st);
    assert_int_equal(st.evictions, 1);
    assert_int_equal(st.n_entries, 3);
    assert_int_equal(walk(s, 4), 1);
    block_of(2, tok, data);
    assert_true(mllm_kv_store_find(s, keys[2], serials[1], tok) >= 0); /* orphaned, not served through the chain */
    mllm_kv_store_close(s);
    /* the stamps survive the reopen */
    s = open_ok(path, &g, MLLM_KV_STORE_HEADER + 4096 + 3 * per, NULL);
    assert_int_equal(entries(s), 3);
    mllm_kv_store_close(s);
    free(path);
}

/* A write that fails (here: past RLIMIT_FSIZE, as on a full disk) stops
   the writing with an error; what is stored is still read. */
static void test_write_error(void **state) {
    (void)state;
    char *path = (char *)tu_tmp("d.kvstore");
    unlink(path);
    const mllm_kv_store_geom g = geom();
    mllm_kv_store *s = open_ok(path, &g, 1 << 16, NULL);
    uint64_t keys[2], serials[2];
    write_chain(s, 2, keys, serials);
    assert_int_equal(mllm_kv_store_flush(s), MLLM_OK);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 8192; /* below the data slots */
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    uint64_t k2;
    const uint64_t got = put_block(s, 2, keys[1], serials[1], &k2);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    assert_int_equal(got, 0);
    assert_int_equal(mllm_kv_store_flush(s), MLLM_ERR_IO);
    assert_non_null(strstr(mllm_last_error(), "read-only from now on"));
    assert_int_equal(put_block(s, 0, 0, 0, &k2), 0); /* and stays so */
    assert_int_equal(walk(s, 3), 2);
    mllm_kv_store_close(s);
    s = open_ok(path, &g, 1 << 16, NULL);
    assert_int_equal(walk(s, 3), 2);
    mllm_kv_store_close(s);
    free(path);
}

/* ---- the engine on a store ------------------------------------------- */

typedef struct {
    int32_t toks[32];
    int n;
    int n_cached;
    bool done;
} gen_t;

static int on_token(void *user, int32_t id, const char *piece, size_t len) {
    (void)piece, (void)len;
    gen_t *o = user;
    if (id >= 0 && o->n < 32) o->toks[o->n++] = id;
    return 0;
}

static void on_finish(void *user, const mllm_engine_result *r) {
    gen_t *o = user;
    o->done = true;
    o->n_cached = r->n_cached;
}

/* One greedy generation of 12 tokens after a 45-token prompt, on a fresh engine. */
static gen_t generate(mllm_model *m, const char *store, int kv_dtype, mllm_engine_stats *stats) {
    mllm_engine_params p = {.max_running = 2, .n_ctx = 96, .n_blocks = 16, .block_size = 16, .kv_dtype = kv_dtype,
                            .store_dir = store, .store_bytes = 4u << 20};
    mllm_model_engine me;
    if (mllm_model_engine_open(m, &p, 2, &me) != MLLM_OK) fail_msg("engine: %s", mllm_last_error());
    int32_t prompt[45];
    for (int i = 0; i < 45; i++) prompt[i] = (int32_t)((i * 37 + 5) % m->dec.cfg.n_vocab);
    mllm_sampling sp;
    mllm_sampling_default(&sp);
    sp.max_tokens = 12;
    sp.ignore_eos = 1;
    sp.temperature = 0;
    gen_t o = {0};
    mllm_engine_request r = {.prompt = prompt, .n_prompt = 45, .sampling = &sp, .on_token = on_token,
                             .on_finish = on_finish, .user = &o};
    assert_int_equal(mllm_engine_submit(me.e, &r), MLLM_OK);
    for (int i = 0; i < 1000 && !mllm_engine_idle(me.e); i++) assert_int_equal(mllm_engine_step(me.e), MLLM_OK);
    assert_true(o.done);
    assert_int_equal(o.n, 12);
    mllm_engine_get_stats(me.e, stats);
    mllm_model_engine_close(&me);
    return o;
}

static void test_engine_restart(void **state) {
    (void)state;
    mllm_model *m = tu_synth_load("kvs", "qwen3", "q8_0");
    char *dir = (char *)tu_tmp("store");
    for (int kv = MLLM_KV_DTYPE_F32; kv <= MLLM_KV_DTYPE_Q8; kv++) {
        mllm_engine_stats st;
        const gen_t ref = generate(m, NULL, kv, &st);
        assert_int_equal(ref.n_cached, 0);
        const gen_t first = generate(m, dir, kv, &st); /* writes the prompt's 2 full blocks */
        assert_int_equal(first.n_cached, 0);
        assert_int_equal(st.store_writes, 2);
        assert_int_equal(st.store_entries, 2);
        const gen_t again = generate(m, dir, kv, &st); /* a restart: reads them */
        assert_int_equal(again.n_cached, 32);
        assert_int_equal(st.store_hit_blocks, 2);
        assert_int_equal(st.store_writes, 0);
        assert_memory_equal(again.toks, ref.toks, sizeof ref.toks);
        assert_memory_equal(first.toks, ref.toks, sizeof ref.toks);
    }
    /* another model (same shapes, other weights) on the same folder reads nothing */
    mllm_model *m2 = tu_synth_load("kvs", "qwen3", "f32");
    mllm_engine_stats st;
    const gen_t ref2 = generate(m2, NULL, MLLM_KV_DTYPE_F32, &st);
    const gen_t other = generate(m2, dir, MLLM_KV_DTYPE_F32, &st);
    assert_int_equal(other.n_cached, 0);
    assert_int_equal(st.store_hit_blocks, 0);
    assert_memory_equal(other.toks, ref2.toks, sizeof ref2.toks);
    mllm_model_free(m2);
    mllm_model_free(m);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_and_damage),
        cmocka_unit_test(test_truncated_and_uncommitted),
        cmocka_unit_test(test_hostile_files),
        cmocka_unit_test(test_lru),
        cmocka_unit_test(test_write_error),
        cmocka_unit_test(test_engine_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
