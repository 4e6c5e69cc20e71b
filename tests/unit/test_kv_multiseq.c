/* One forward over tokens of several sequences (token ids, positions,
   sequence ids and block tables as graph inputs, mllm_decoder_forward on a
   paged KV pool): every token's logits are bit-identical to those of its
   sequence evaluated alone, whatever shares its batch and in whatever
   order the batch lists the tokens. Synthetic q8_0 and f32 models (the
   weight types whose matmuls are batch-invariant, test_batch_invariance.c),
   f32, f16 and q8 K/V, both attention orders. And a prefix-index hit in a
   real forward gives what computing from scratch gives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "api/internal.h"
#include "core/threadpool.h"
#include "synth/synth.h"
#include "testutil.h"

#define MAX_BLOCKS 8
#define BS 16

/* A piece of a batch: tokens [t0, t0 + n) of sequence `seq`. */
typedef struct {
    int seq, t0, n;
} piece;

/* Runs one batch; logits of its tokens go to out[seq][t] (V floats each). */
static void run_batch(const mllm_decoder *dec, mllm_pool *pool, mllm_kv_pool *kp, mllm_kv_seq *seqs, int n_seq,
                      int32_t *const *tok, const piece *pc, int n_pc, float *const *out) {
    const int V = dec->cfg.n_vocab;
    int T = 0;
    for (int i = 0; i < n_pc; i++) T += pc[i].n;
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_TRACE, pool, 1 << 18);
    mllm_decoder_inputs in = {.ids = mllm_graph_input_i32(&g, T, "ids"), .pos = mllm_graph_input_i32(&g, T, "pos"),
                              .paged = kp->layers, .seq = mllm_graph_input_i32(&g, T, "seq"),
                              .table = mllm_graph_input_i32_2d(&g, MAX_BLOCKS, n_seq, "table")};
    mllm_tensor *logits = mllm_decoder_forward(&g, dec, NULL, &in, 0);
    assert_non_null(logits);
    assert_true(mllm_graph_plan(&g, &logits, 1));
    int r = 0;
    for (int i = 0; i < n_pc; i++) {
        mllm_kv_seq *s = &seqs[pc[i].seq];
        assert_int_equal(s->n_tokens, pc[i].t0); /* pieces continue their sequence */
        assert_int_equal(mllm_kv_seq_grow(kp, s, pc[i].n), MLLM_OK);
        for (int j = 0; j < pc[i].n; j++, r++) {
            mllm_tensor_i32(in.ids)[r] = tok[pc[i].seq][pc[i].t0 + j];
            mllm_tensor_i32(in.pos)[r] = pc[i].t0 + j;
            mllm_tensor_i32(in.seq)[r] = pc[i].seq;
        }
    }
    int32_t *tab = mllm_tensor_i32(in.table);
    for (int s = 0; s < n_seq; s++)
        for (int b = 0; b < MAX_BLOCKS; b++) tab[s * MAX_BLOCKS + b] = b < seqs[s].n_blocks ? seqs[s].blocks[b] : -1;
    mllm_graph_execute(&g);
    assert_false(g.failed);
    r = 0;
    for (int i = 0; i < n_pc; i++)
        for (int j = 0; j < pc[i].n; j++, r++)
            memcpy(out[pc[i].seq] + (size_t)(pc[i].t0 + j) * V, (const float *)logits->data + (size_t)r * V,
                   (size_t)V * sizeof(float));
    mllm_graph_free(&g);
}

static mllm_model *synth(const char *arch, const char *dtype) { return tu_synth_load("kvm", arch, dtype); }

enum { NA = 40, NB = 23, NC = 5 };

static void check(const char *arch, const char *wtype, int kv_dtype, int ordered) {
    mllm_model *m = synth(arch, wtype);
    const mllm_decoder *dec = &m->dec;
    const int V = dec->cfg.n_vocab;
    static const int len[3] = {NA, NB, NC};
    int32_t *tok[3];
    float *solo[3], *mixed[3];
    for (int s = 0; s < 3; s++) {
        tok[s] = malloc((size_t)len[s] * sizeof(int32_t));
        for (int i = 0; i < len[s]; i++) tok[s][i] = (int32_t)((i * (31 + 6 * s) + 7 * s + 1) % V);
        solo[s] = calloc((size_t)len[s] * (size_t)V, sizeof(float));
        mixed[s] = calloc((size_t)len[s] * (size_t)V, sizeof(float));
    }
    mllm_pool *pool = mllm_pool_new(2);
    mllm_kv_pool kp;
    mllm_kv_pool_params pp = {.n_layer = dec->cfg.n_layer, .n_head_kv = dec->cfg.n_head_kv,
                              .head_dim = dec->cfg.head_dim, .dtype = kv_dtype, .block_size = BS, .n_blocks = 3 * MAX_BLOCKS,
                              .ordered = ordered};
    assert_int_equal(mllm_kv_pool_init(&kp, &pp), MLLM_OK);
    mllm_kv_seq seqs[3];
    /* each sequence alone: its prompt, then two decode steps */
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < 3; i++) mllm_kv_seq_init(&seqs[i]);
        piece a = {s, 0, len[s] - 2}, b = {s, len[s] - 2, 1}, c = {s, len[s] - 1, 1};
        run_batch(dec, pool, &kp, seqs, 3, tok, &a, 1, solo);
        run_batch(dec, pool, &kp, seqs, 3, tok, &b, 1, solo);
        run_batch(dec, pool, &kp, seqs, 3, tok, &c, 1, solo);
        mllm_kv_seq_release(&kp, &seqs[s]);
    }
    /* all three in shared batches: prefill chunks beside decodes, in mixed order */
    for (int i = 0; i < 3; i++) mllm_kv_seq_init(&seqs[i]);
    const piece b1[] = {{1, 0, 10}, {0, 0, 17}, {2, 0, 3}};
    const piece b2[] = {{2, 3, 1}, {0, 17, NA - 17 - 1}, {1, 10, NB - 10}};
    const piece b3[] = {{0, NA - 1, 1}, {2, 4, 1}};
    run_batch(dec, pool, &kp, seqs, 3, tok, b1, 3, mixed);
    run_batch(dec, pool, &kp, seqs, 3, tok, b2, 3, mixed);
    run_batch(dec, pool, &kp, seqs, 3, tok, b3, 2, mixed);
    /* not vacuous: the sequences' logits differ from each other */
    assert_true(memcmp(solo[0] + (size_t)(NC - 1) * V, solo[2] + (size_t)(NC - 1) * V, (size_t)V * sizeof(float)) != 0);
    assert_true(solo[1][0] != 0.0f || solo[1][1] != 0.0f);
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < len[s]; t++)
            if (memcmp(solo[s] + (size_t)t * V, mixed[s] + (size_t)t * V, (size_t)V * sizeof(float)))
                fail_msg("%s %s kv %s: sequence %d token %d differs in a shared batch", arch, wtype,
                         mllm_kv_dtype_name(kv_dtype), s, t);
    for (int s = 0; s < 3; s++) mllm_kv_seq_release(&kp, &seqs[s]);
    assert_int_equal(kp.st.n_used, 0);
    mllm_kv_pool_free(&kp);
    mllm_pool_free(pool);
    for (int s = 0; s < 3; s++) free(tok[s]), free(solo[s]), free(mixed[s]);
    mllm_model_free(m);
}

/* The prefix index in a real forward: a sequence that starts with another's
   tokens takes its cached full blocks (mllm_kv_prefix_lookup), computes only
   the rest, and its logits are those of the same tokens computed from
   scratch, bit for bit; the shared blocks are not written. */
static void check_prefix_hit(const char *arch, const char *wtype, int kv_dtype, int ordered) {
    mllm_model *m = synth(arch, wtype);
    const mllm_decoder *dec = &m->dec;
    const int V = dec->cfg.n_vocab, NP = 45, SHARED = 35;
    int32_t *tok[2];
    float *scratch[2], *hit[2];
    for (int s = 0; s < 2; s++) {
        tok[s] = malloc((size_t)NP * sizeof(int32_t));
        for (int i = 0; i < NP; i++) tok[s][i] = (int32_t)(i < SHARED || s == 0 ? (i * 29 + 3) % V : (i * 7 + 1) % V);
        scratch[s] = calloc((size_t)NP * (size_t)V, sizeof(float));
        hit[s] = calloc((size_t)NP * (size_t)V, sizeof(float));
    }
    mllm_pool *pool = mllm_pool_new(2);
    mllm_kv_pool kp;
    mllm_kv_pool_params pp = {.n_layer = dec->cfg.n_layer, .n_head_kv = dec->cfg.n_head_kv, .head_dim = dec->cfg.head_dim,
                              .dtype = kv_dtype, .block_size = BS, .n_blocks = 3 * MAX_BLOCKS, .ordered = ordered};
    assert_int_equal(mllm_kv_pool_init(&kp, &pp), MLLM_OK);
    mllm_kv_seq seqs[2];
    /* sequence 1 from scratch, alone */
    mllm_kv_seq_init(&seqs[0]);
    mllm_kv_seq_init(&seqs[1]);
    const piece whole1 = {1, 0, NP};
    run_batch(dec, pool, &kp, seqs, 2, tok, &whole1, 1, scratch);
    mllm_kv_seq_release(&kp, &seqs[1]);
    /* sequence 0 computed and registered, then sequence 1 finds its first 2 blocks */
    const piece whole0 = {0, 0, NP};
    run_batch(dec, pool, &kp, seqs, 2, tok, &whole0, 1, hit);
    mllm_kv_prefix_commit(&kp, &seqs[0], tok[0], NULL);
    const int k = mllm_kv_prefix_lookup(&kp, &seqs[1], tok[1], NULL, NP);
    assert_int_equal(k, SHARED / BS * BS);
    assert_int_equal(seqs[1].blocks[0], seqs[0].blocks[0]);
    const piece rest = {1, k, NP - k};
    run_batch(dec, pool, &kp, seqs, 2, tok, &rest, 1, hit);
    for (int t = k; t < NP; t++)
        if (memcmp(hit[1] + (size_t)t * V, scratch[1] + (size_t)t * V, (size_t)V * sizeof(float)))
            fail_msg("%s kv %s: token %d after a prefix hit differs from scratch", arch, mllm_kv_dtype_name(kv_dtype), t);
    assert_int_equal(kp.ref[seqs[0].blocks[0]], 2);
    mllm_kv_seq_release(&kp, &seqs[0]);
    mllm_kv_seq_release(&kp, &seqs[1]);
    assert_int_equal(kp.st.n_used, 0);
    mllm_kv_pool_free(&kp);
    mllm_pool_free(pool);
    for (int s = 0; s < 2; s++) free(tok[s]), free(scratch[s]), free(hit[s]);
    mllm_model_free(m);
}

static void test_prefix_hit(void **state) {
    (void)state;
    check_prefix_hit("qwen3", "q8_0", MLLM_KV_DTYPE_F32, 1);
    check_prefix_hit("qwen3", "q8_0", MLLM_KV_DTYPE_Q8, 0);
    check_prefix_hit("llama", "q4_0", MLLM_KV_DTYPE_F16, 0);
}

static void test_shared_batches(void **state) {
    (void)state;
    check("qwen3", "q8_0", MLLM_KV_DTYPE_F32, 0);
    check("qwen3", "q8_0", MLLM_KV_DTYPE_Q8, 0);
    check("llama", "f32", MLLM_KV_DTYPE_F16, 0);
    check("gemma3", "q4_0", MLLM_KV_DTYPE_Q8, 0); /* sliding-window layers */
    check("qwen2", "q8_0", MLLM_KV_DTYPE_F32, 1); /* the ordered attention (the session's f32) */
    check("gemma3", "q4_0", MLLM_KV_DTYPE_F32, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_shared_batches), cmocka_unit_test(test_prefix_hit)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
