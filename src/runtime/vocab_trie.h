/* The vocabulary as a byte trie (prefix tree), built once per tokenizer:
   the grammar's token mask walks it depth-first, so the bytes that many
   tokens share are matched once and a rejected prefix skips its whole
   subtree. Nodes are stored in depth-first order: the children of node i
   follow it, and skip[i] is the index past its subtree. */
#ifndef MLLM_RUNTIME_VOCAB_TRIE_H
#define MLLM_RUNTIME_VOCAB_TRIE_H
#include <mllm/mllm.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int32_t n_vocab;
    uint32_t n_nodes;
    uint32_t max_depth;  /* the longest token, in bytes */
    uint8_t *byte;       /* (n_nodes) the byte leading into the node */
    uint32_t *depth;     /* (n_nodes) 1 for the first byte of a token */
    uint32_t *skip;      /* (n_nodes) first node after the subtree */
    uint32_t *tok_off;   /* (n_nodes + 1) tokens ending at node i: tok_ids[tok_off[i] .. tok_off[i + 1]) */
    int32_t *tok_ids;
} mllm_vocab_trie;

/* A trie of the tokens whose piece is non-empty: piece(user, id, &len)
   gives the bytes of token id, or NULL / len 0 to leave the token out
   (control and end-of-generation tokens). */
typedef const char *(*mllm_piece_fn)(const void *user, int32_t id, size_t *len);
mllm_status mllm_vocab_trie_build(int32_t n_vocab, mllm_piece_fn piece, const void *user, mllm_vocab_trie **out);
void mllm_vocab_trie_free(mllm_vocab_trie *t);

#endif
