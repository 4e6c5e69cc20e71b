/* The KV block pool (src/kv): allocation, failure when full, copy on write
   of a shared partial block, the prefix index (hash chain, token
   comparison on lookup, LRU eviction from a chain's end, salted blocks)
   and, after random alloc / share / free sequences, an empty pool again. */
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/kv_paged.h"
#include "kv/kv_pool.h"
#include "testutil.h"

static void pool_init(mllm_kv_pool *kp, int dtype, int bs, int n_blocks) {
    mllm_kv_pool_params p = {.n_layer = 2, .n_head_kv = 2, .head_dim = 4, .dtype = dtype, .block_size = bs,
                             .n_blocks = n_blocks};
    assert_int_equal(mllm_kv_pool_init(kp, &p), MLLM_OK);
}

/* Every block's refcount equals the references the tables hold, and the
   state counters add up. */
static void check_counts(const mllm_kv_pool *kp, mllm_kv_seq *seqs, int n) {
    int *refs = calloc((size_t)kp->p.n_blocks, sizeof *refs);
    for (int s = 0; s < n; s++)
        for (int i = 0; i < seqs[s].n_blocks; i++) refs[seqs[s].blocks[i]]++;
    int used = 0;
    for (int b = 0; b < kp->p.n_blocks; b++) {
        assert_int_equal(kp->ref[b], refs[b]);
        used += refs[b] > 0;
    }
    assert_int_equal(kp->st.n_used, used);
    assert_int_equal(kp->st.n_free + kp->st.n_cached + kp->st.n_used, kp->p.n_blocks);
    free(refs);
}

static void test_params_and_full(void **state) {
    (void)state;
    mllm_kv_pool kp;
    mllm_kv_pool_params bad = {.n_layer = 1, .n_head_kv = 1, .head_dim = 4, .dtype = 7, .block_size = 16, .n_blocks = 4};
    assert_int_equal(mllm_kv_pool_init(&kp, &bad), MLLM_ERR_INVALID_ARG);
    bad.dtype = MLLM_KV_DTYPE_F32;
    bad.block_size = 0;
    assert_int_equal(mllm_kv_pool_init(&kp, &bad), MLLM_ERR_INVALID_ARG);
    pool_init(&kp, MLLM_KV_DTYPE_Q8, 16, 4);
    mllm_kv_seq a, b;
    mllm_kv_seq_init(&a);
    mllm_kv_seq_init(&b);
    assert_int_equal(mllm_kv_seq_grow(&kp, &a, 40), MLLM_OK); /* 3 blocks */
    assert_int_equal(a.n_blocks, 3);
    assert_int_equal(mllm_kv_seq_grow(&kp, &b, 16), MLLM_OK);
    /* the pool is full: an error, and the sequence is as it was */
    assert_int_equal(mllm_kv_seq_grow(&kp, &b, 1), MLLM_ERR_NOMEM);
    assert_int_equal(b.n_tokens, 16);
    assert_int_equal(mllm_kv_seq_grow(&kp, &a, 8), MLLM_OK); /* fits the partial block */
    assert_int_equal(mllm_kv_seq_grow(&kp, &a, 1), MLLM_ERR_NOMEM);
    mllm_kv_seq_truncate(&kp, &a, 10);
    assert_int_equal(a.n_blocks, 1);
    assert_int_equal(kp.st.n_free, 2);
    mllm_kv_seq s2[2] = {a, b};
    check_counts(&kp, s2, 2);
    mllm_kv_seq_release(&kp, &a);
    mllm_kv_seq_release(&kp, &b);
    assert_int_equal(kp.st.n_free, 4);
    mllm_kv_pool_free(&kp);
}

static void test_cow_partial_block(void **state) {
    (void)state;
    for (int dt = MLLM_KV_DTYPE_F32; dt <= MLLM_KV_DTYPE_Q8; dt++) {
        mllm_kv_pool kp;
        pool_init(&kp, dt, 16, 8);
        mllm_kv_seq a, b;
        mllm_kv_seq_init(&a);
        assert_int_equal(mllm_kv_seq_grow(&kp, &a, 20), MLLM_OK);
        float k[8], v[8], got[8];
        for (int p = 0; p < 20; p++)
            for (int l = 0; l < 2; l++) {
                for (int i = 0; i < 8; i++) k[i] = (float)(p * 8 + i + l), v[i] = -k[i];
                mllm_kv_paged_write(&kp.layers[l], mllm_kv_seq_block(&a, p, 16), p % 16, k, v);
            }
        assert_int_equal(mllm_kv_seq_fork(&kp, &b, &a), MLLM_OK);
        assert_int_equal(kp.ref[a.blocks[1]], 2);
        /* b writes position 20, in the shared partial block: b gets a copy */
        assert_int_equal(mllm_kv_seq_grow(&kp, &b, 1), MLLM_OK);
        assert_int_equal(b.blocks[0], a.blocks[0]);
        assert_int_not_equal(b.blocks[1], a.blocks[1]);
        assert_int_equal(kp.ref[a.blocks[1]], 1);
        for (int i = 0; i < 8; i++) k[i] = 1000.0f, v[i] = 1000.0f;
        mllm_kv_paged_write(&kp.layers[1], b.blocks[1], 4, k, v);
        /* a's block is untouched, b's copy has a's rows before position 20 */
        mllm_kv_paged_read(&kp.layers[1], a.blocks[1], 4, 0, got);
        assert_true(got[0] < 1000.0f);
        for (int p = 16; p < 20; p++) {
            float ga[8], gb[8];
            mllm_kv_paged_read(&kp.layers[1], a.blocks[1], p % 16, 1, ga);
            mllm_kv_paged_read(&kp.layers[1], b.blocks[1], p % 16, 1, gb);
            assert_memory_equal(ga, gb, sizeof ga);
            assert_true(ga[7] < -(float)(p * 8) + 0.5f); /* -(p*8 + 7 + 1) within q8 rounding */
        }
        assert_int_equal(kp.st.cow_copies, 1);
        mllm_kv_seq s2[2] = {a, b};
        check_counts(&kp, s2, 2);
        mllm_kv_seq_release(&kp, &a);
        mllm_kv_seq_release(&kp, &b);
        assert_int_equal(kp.st.n_free, 8);
        mllm_kv_pool_free(&kp);
    }
}

static void test_prefix_index(void **state) {
    (void)state;
    mllm_kv_pool kp;
    pool_init(&kp, MLLM_KV_DTYPE_F32, 4, 6);
    int32_t tok[16];
    for (int i = 0; i < 16; i++) tok[i] = 100 + i;
    mllm_kv_seq a, b;
    mllm_kv_seq_init(&a);
    assert_int_equal(mllm_kv_seq_grow(&kp, &a, 14), MLLM_OK); /* 3 full blocks + 2 */
    mllm_kv_prefix_commit(&kp, &a, tok, NULL);
    assert_int_equal(a.n_indexed, 3);
    const int32_t a0 = a.blocks[0], a2 = a.blocks[2];
    mllm_kv_seq_release(&kp, &a);
    assert_int_equal(kp.st.n_cached, 3);
    assert_int_equal(kp.st.n_free, 3);
    /* the same tokens again: all three full blocks, not more than asked */
    mllm_kv_seq_init(&b);
    assert_int_equal(mllm_kv_prefix_lookup(&kp, &b, tok, NULL, 16), 12);
    assert_int_equal(b.blocks[0], a0);
    mllm_kv_seq_release(&kp, &b);
    assert_int_equal(mllm_kv_prefix_lookup(&kp, &b, tok, NULL, 11), 8);
    mllm_kv_seq_release(&kp, &b);
    /* a change in block 1 stops the match there (the chain covers all earlier tokens) */
    int32_t t2[16];
    memcpy(t2, tok, sizeof t2);
    t2[5] = 7;
    assert_int_equal(mllm_kv_prefix_lookup(&kp, &b, t2, NULL, 16), 4);
    mllm_kv_seq_release(&kp, &b);
    /* same first block tokens at another chain position never match block 1 */
    int32_t t3[8] = {100, 101, 102, 103, 100, 101, 102, 103};
    assert_int_equal(mllm_kv_prefix_lookup(&kp, &b, t3, NULL, 8), 4);
    mllm_kv_seq_release(&kp, &b);
    /* A hash collision: a block whose key matches but whose tokens differ
       (simulated by changing the stored tokens) is not served. */
    kp.tokens[(size_t)a2 * 4 + 1] = 9999;
    assert_int_equal(mllm_kv_prefix_lookup(&kp, &b, tok, NULL, 16), 8);
    mllm_kv_seq_release(&kp, &b);
    kp.tokens[(size_t)a2 * 4 + 1] = tok[9];
    /* A writer into a registered block gets a copy: the cached one stays right. */
    assert_int_equal(mllm_kv_prefix_lookup(&kp, &b, tok, NULL, 16), 12);
    mllm_kv_seq_truncate(&kp, &b, 10);
    assert_int_equal(mllm_kv_seq_grow(&kp, &b, 1), MLLM_OK);
    assert_int_not_equal(b.blocks[2], a2);
    mllm_kv_seq_release(&kp, &b);
    assert_int_equal(mllm_kv_prefix_lookup(&kp, &b, tok, NULL, 16), 12);
    mllm_kv_seq_release(&kp, &b);
    /* LRU: 3 cached + 3 free; a 5-block sequence evicts two, from the chain's end */
    mllm_kv_seq c;
    mllm_kv_seq_init(&c);
    assert_int_equal(mllm_kv_seq_grow(&kp, &c, 20), MLLM_OK);
    assert_int_equal(kp.st.evictions, 2);
    mllm_kv_seq_release(&kp, &c);
    assert_int_equal(mllm_kv_prefix_lookup(&kp, &b, tok, NULL, 16), 4);
    mllm_kv_seq_release(&kp, &b);
    mllm_kv_pool_drop_cache(&kp);
    assert_int_equal(kp.st.n_free, 6);
    mllm_kv_pool_free(&kp);
}

/* Commit of a block whose content is cached already shares the cached one. */
static void test_commit_dedup(void **state) {
    (void)state;
    mllm_kv_pool kp;
    pool_init(&kp, MLLM_KV_DTYPE_F16, 4, 8);
    int32_t tok[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    mllm_kv_seq a, b;
    mllm_kv_seq_init(&a);
    mllm_kv_seq_init(&b);
    assert_int_equal(mllm_kv_seq_grow(&kp, &a, 8), MLLM_OK);
    mllm_kv_prefix_commit(&kp, &a, tok, NULL);
    assert_int_equal(mllm_kv_seq_grow(&kp, &b, 8), MLLM_OK); /* computed again, not looked up */
    mllm_kv_prefix_commit(&kp, &b, tok, NULL);
    assert_memory_equal(a.blocks, b.blocks, 2 * sizeof(int32_t));
    assert_int_equal(kp.st.n_used, 2);
    mllm_kv_seq s2[2] = {a, b};
    check_counts(&kp, s2, 2);
    mllm_kv_seq_release(&kp, &a);
    mllm_kv_seq_release(&kp, &b);
    mllm_kv_pool_drop_cache(&kp);
    assert_int_equal(kp.st.n_free, 8);
    mllm_kv_pool_free(&kp);
}

/* Blocks with a salt (content the tokens do not name: an image's rows
   behind negative stand-in tokens) are found only with the same salt, a
   text block's key is its chain key as before (stored files keep theirs),
   and a block shared part way shares no salted position. */
static void test_salted_blocks(void **state) {
    (void)state;
    mllm_kv_pool kp;
    pool_init(&kp, MLLM_KV_DTYPE_F32, 4, 8);
    const int32_t tok[8] = {1, 2, 3, 4, 5, -6, -7, 8}; /* block 1 holds two image rows */
    const uint64_t salt[2] = {0, 0x1234567890abcdefull}, other[2] = {0, 0x1234567890abcdeeull};
    assert_true(mllm_kv_block_key(42, tok, 4, 0) == mllm_kv_chain_key(42, tok, 4));
    assert_true(mllm_kv_block_key(42, tok, 4, salt[1]) != mllm_kv_chain_key(42, tok, 4));
    mllm_kv_seq a, b;
    mllm_kv_seq_init(&a);
    mllm_kv_seq_init(&b);
    assert_int_equal(mllm_kv_seq_grow(&kp, &a, 8), MLLM_OK);
    mllm_kv_prefix_commit(&kp, &a, tok, salt);
    assert_int_equal(mllm_kv_prefix_lookup(&kp, &b, tok, salt, 8), 8);
    mllm_kv_seq_release(&kp, &b);
    /* the same stand-in tokens of another image: only the text block */
    assert_int_equal(mllm_kv_prefix_lookup(&kp, &b, tok, other, 8), 4);
    mllm_kv_seq_release(&kp, &b);
    assert_int_equal(mllm_kv_prefix_lookup(&kp, &b, tok, NULL, 8), 4);
    /* part way into block 1: its text position, never its image rows */
    assert_int_equal(mllm_kv_prefix_extend(&kp, &b, tok, 8), 1);
    mllm_kv_seq_release(&kp, &b);
    mllm_kv_seq_release(&kp, &a);
    mllm_kv_pool_drop_cache(&kp);
    assert_int_equal(kp.st.n_free, 8);
    mllm_kv_pool_free(&kp);
}

static uint32_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* K row of a position: (token, position, 0, ...), written into layer 1 */
static void write_rows(mllm_kv_pool *kp, const mllm_kv_seq *q, const int32_t *tok, int from) {
    float k[8] = {0}, v[8] = {0};
    for (int p = from; p < q->n_tokens; p++) {
        k[0] = (float)tok[p], k[1] = (float)p, v[2] = (float)p;
        mllm_kv_paged_write(&kp->layers[1], mllm_kv_seq_block(q, p, kp->p.block_size), p % kp->p.block_size, k, v);
    }
}

/* Every position of every sequence holds what was written for its token. */
static void check_rows(const mllm_kv_pool *kp, const mllm_kv_seq *q, const int32_t *tok) {
    float k[8];
    for (int p = 0; p < q->n_tokens; p++) {
        mllm_kv_paged_read(&kp->layers[1], mllm_kv_seq_block(q, p, kp->p.block_size), p % kp->p.block_size, 0, k);
        if (k[0] != (float)tok[p] || k[1] != (float)p)
            fail_msg("position %d holds token %g at %g, expected %d", p, k[0], k[1], tok[p]);
    }
}

#define NSEQ 6
#define MAXTOK 64

/* Random grow / truncate / fork / lookup / commit / release on a small
   pool, tokens from a 3-letter alphabet so prefixes repeat: the counts
   always add up, and at the end the pool is empty again. */
static void test_random_no_leak(void **state) {
    (void)state;
    for (int bs = 1; bs <= 8; bs += 3) {
        mllm_kv_pool kp;
        pool_init(&kp, MLLM_KV_DTYPE_F32, bs, 40 / bs + 8);
        mllm_kv_seq seq[NSEQ];
        int32_t tok[NSEQ][MAXTOK + 8];
        for (int s = 0; s < NSEQ; s++) mllm_kv_seq_init(&seq[s]);
        uint64_t rng = 42 + (uint64_t)bs;
        int32_t base[2][MAXTOK];
        for (int i = 0; i < MAXTOK; i++) base[0][i] = (int32_t)(lcg(&rng) % 3), base[1][i] = (int32_t)(lcg(&rng) % 3);
        int n_nomem = 0;
        for (int it = 0; it < 4000; it++) {
            const int s = (int)(lcg(&rng) % NSEQ), op = (int)(lcg(&rng) % 6);
            mllm_kv_seq *q = &seq[s];
            if (op == 0 || op == 1) { /* grow */
                int n = 1 + (int)(lcg(&rng) % 7);
                if (q->n_tokens + n > MAXTOK) n = MAXTOK - q->n_tokens;
                for (int i = 0; i < n; i++) tok[s][q->n_tokens + i] = (int32_t)(lcg(&rng) % 3);
                const int from = q->n_tokens;
                mllm_status st = mllm_kv_seq_grow(&kp, q, n);
                if (st == MLLM_OK) write_rows(&kp, q, tok[s], from);
                assert_true(st == MLLM_OK || st == MLLM_ERR_NOMEM);
                n_nomem += st != MLLM_OK;
            } else if (op == 2) {
                mllm_kv_seq_truncate(&kp, q, q->n_tokens ? (int)(lcg(&rng) % (unsigned)q->n_tokens) : 0);
            } else if (op == 3) { /* fork from another sequence */
                const int o = (int)(lcg(&rng) % NSEQ);
                if (o != s) {
                    mllm_kv_seq_release(&kp, q);
                    assert_int_equal(mllm_kv_seq_fork(&kp, q, &seq[o]), MLLM_OK);
                    memcpy(tok[s], tok[o], sizeof tok[s]);
                }
            } else if (op == 4) { /* a new request: release, look up a random prompt */
                mllm_kv_seq_release(&kp, q);
                const int n = (int)(lcg(&rng) % MAXTOK), shared = (int)(lcg(&rng) % (unsigned)(n + 1));
                const int32_t *sys = base[lcg(&rng) % 2]; /* two common "system prompts" */
                for (int i = 0; i < n; i++) tok[s][i] = i < shared ? sys[i] : (int32_t)(lcg(&rng) % 3);
                const int k = mllm_kv_prefix_lookup(&kp, q, tok[s], NULL, n);
                assert_true(k % bs == 0 && k <= n);
                assert_int_equal(q->n_tokens, k);
                mllm_status st = mllm_kv_seq_grow(&kp, q, n - k); /* its prefill */
                if (st == MLLM_OK) write_rows(&kp, q, tok[s], k);
                assert_true(st == MLLM_OK || st == MLLM_ERR_NOMEM);
            } else {
                mllm_kv_prefix_commit(&kp, q, tok[s], NULL);
            }
            check_counts(&kp, seq, NSEQ);
            for (int t = 0; t < NSEQ; t++) check_rows(&kp, &seq[t], tok[t]);
        }
        if (n_nomem == 0) fail_msg("bs %d: the pool never ran full", bs);
        if (!kp.st.hit_blocks || !kp.st.evictions || !kp.st.cow_copies)
            fail_msg("bs %d: %llu hits, %llu evictions, %llu copies", bs, (unsigned long long)kp.st.hit_blocks,
                     (unsigned long long)kp.st.evictions, (unsigned long long)kp.st.cow_copies);
        for (int s = 0; s < NSEQ; s++) mllm_kv_seq_release(&kp, &seq[s]);
        assert_int_equal(kp.st.n_used, 0);
        for (int b = 0; b < kp.p.n_blocks; b++) assert_int_equal(kp.ref[b], 0);
        mllm_kv_pool_drop_cache(&kp);
        assert_int_equal(kp.st.n_free, kp.p.n_blocks);
        mllm_kv_pool_free(&kp);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params_and_full), cmocka_unit_test(test_cow_partial_block),
        cmocka_unit_test(test_prefix_index), cmocka_unit_test(test_commit_dedup),
        cmocka_unit_test(test_salted_blocks),
        cmocka_unit_test(test_random_no_leak),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
