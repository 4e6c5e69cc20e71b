/* Fuzz target: the GBNF parser and the matcher (src/runtime/grammar_*).
   Grammars come from HTTP clients (the server's "grammar" field). Input:
   u32 length + GBNF text, then bytes fed to the matcher. A grammar that
   compiles is matched against the bytes in pieces, and at each piece the
   token mask over a small vocabulary must agree with the matcher: every
   allowed token is accepted. */
#include "fuzz_util.h"
#include "runtime/grammar.h"
#include "runtime/grammar_match.h"
#include "runtime/vocab_trie.h"
#include <stdlib.h>
#include <string.h>

static const char *const VOCAB[] = {"a", "b", "{", "}", "\"", " ", "\n", "ab", "\"a\"", "1", "12", "-", "\\",
                                    "\xc3", "\xa9", "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x98\x80", "\xff", ""};
#define N_VOCAB (int32_t)(sizeof VOCAB / sizeof VOCAB[0])

static const char *piece(const void *user, int32_t id, size_t *len) {
    (void)user;
    *len = strlen(VOCAB[id]);
    return VOCAB[id];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    fz_input src = fz_take_part(&in);
    mllm_gram *g = NULL;
    mllm_status st = mllm_gram_compile((const char *)src.p, src.n, NULL, &g);
    fz_check_status(st);
    if (st) {
        FZ_CHECK(g == NULL);
        return 0;
    }
    mllm_gmatch *m = NULL;
    st = mllm_gmatch_new(g, &m);
    fz_check_status(st);
    mllm_vocab_trie *t = NULL;
    if (st == MLLM_OK && mllm_vocab_trie_build(N_VOCAB, piece, NULL, &t) == MLLM_OK) {
        uint8_t allow[N_VOCAB];
        for (int step = 0; step < 8 && in.n > 0; step++) {
            size_t n_allowed = 0;
            st = mllm_gmatch_mask(m, t, allow, &n_allowed);
            fz_check_status(st);
            if (st) break;
            for (int32_t id = 0; id < N_VOCAB; id++) {
                size_t len;
                const char *p = piece(NULL, id, &len);
                if (allow[id]) FZ_CHECK(len > 0 && mllm_gmatch_try(m, p, len) == MLLM_OK);
            }
            size_t k = 1 + in.p[0] % 8;
            if (k > in.n) k = in.n;
            st = mllm_gmatch_accept(m, (const char *)in.p, k);
            fz_check_status(st);
            in.p += k;
            in.n -= k;
            if (st) break;
            if (mllm_gmatch_done(m)) FZ_CHECK(mllm_gmatch_can_end(m));
        }
    }
    mllm_vocab_trie_free(t);
    mllm_gmatch_free(m);
    mllm_gram_free(g);
    return 0;
}
