#!/usr/bin/env python3
"""Reference answers for the BERT embedding family (all-MiniLM-L6-v2).

    python3 tools/reference/embed_reference.py MINILM_DIR [OUT_DIR]

MINILM_DIR is the folder scripts/fetch-minilm.sh prints. Writes into OUT_DIR
(default tests/data/minilm):

  tokens.json      {"texts": [...], "ids": [[...], ...]}: the folder's
                   tokenizer.json through Hugging Face tokenizers (the fast
                   tokenizer transformers loads), special tokens added, no
                   truncation. test_wordpiece compares mllm's ids to these.
  embeddings.json  {"max_seq_length": 256, "texts": [...], "n_tokens": [...],
                   "embeddings": [[384 floats], ...]}: sentence-transformers'
                   SentenceTransformer(MINILM_DIR).encode(texts) (its modules:
                   Transformer, mean Pooling, Normalize), on the CPU, rounded
                   to 7 significant digits. test_embed_minilm requires a
                   cosine >= 0.9999 for each.

The texts cover English, accents, CJK, Korean, code, punctuation of many
scripts, control and zero-width characters, an over-long word, special-token
text and one text far past max_seq_length (truncated).
"""
import json
import os
import sys


def long_text():
    # About 600 WordPiece tokens: truncated to max_seq_length (256) by both.
    words = ("Embeddings map text to vectors so that similar meanings land close together; "
             "retrieval systems compare a query's vector with millions of documents, and the "
             "tokenizer splits rare words such as unhappiness, electroencephalography or "
             "Kraftfahrzeug-Haftpflichtversicherung into pieces. ")
    return (words * 12).strip()


EMBED_TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Café Müller's naïve façade: résumé, jalapeño, Ångström, Øresund.",
    "北京是中国的首都。東京は日本の首都です。서울은 한국의 수도입니다.",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)  # O(2^n)\n",
    "Ceci n'est pas une pipe — «guillemets», ¿qué tal? ¡Olé! 100% über-cool… $5.99 & 3×4=12",
    long_text(),
    "I \u2764\ufe0f NLP \U0001F916!\tTabs\u00a0nbsp\u200bzero-width\u0007bell \u017ftra\u00dfe \u0130stanbul \u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3",
    "",
]

TOKEN_TEXTS = EMBED_TEXTS + [
    "Hello, world!",
    "unaffable unbelievably antidisestablishmentarianism",
    "x" * 101 + " short " + "y" * 100,
    "[CLS] a literal [SEP] and [MASK] in the text [cls]",
    "Привет, мир! Ελληνικά γράμματα. مرحبا بالعالم. नमस्ते दुनिया। สวัสดีชาวโลก",
    "  leading and trailing   spaces\n\nnew lines\r\n",
    "e-mail: someone@example.com, url: https://example.org/a_b?c=d&e=f#g",
    "numbers 3.14159 1,000,000 2024-01-31 12:30pm 1e-9",
    "C++ std::vector<int> v{1,2,3}; /* comment */ x->y ^= ~z | (a && b);",
    "「日本語」『引用』（括弧）、句読点。中文，标点！？",
    "𠀀𠀁 rare CJK ext-B, 丽 compat, ㄅㄆ bopomofo, ｶﾀｶﾅ halfwidth",
    "Ｆｕｌｌｗｉｄｔｈ ＡＳＣＩＩ and ligature ﬁ ﬂ",
    "tab\there\u000bvt\u000cff\u0085nel\u2028ls\u3000ideographic",
    "combining: e\u0301 a\u0308 n\u0303; precomposed: é ä ñ; Hangul jamo \u1100\u1161",
    "\U0001F600\U0001F601 emoji, \u00ae \u2122 \u00a9 symbols, \u2013 \u2014 dashes",
    "ALL CAPS SHOUTING AND MiXeD CaSe",
]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    model_dir = sys.argv[1]
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "..",
                                                                   "tests", "data", "minilm")
    os.makedirs(out_dir, exist_ok=True)
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    ids = [tok.encode(t).ids for t in TOKEN_TEXTS]
    with open(os.path.join(out_dir, "tokens.json"), "w", encoding="utf-8") as f:
        json.dump({"texts": TOKEN_TEXTS, "ids": ids}, f, ensure_ascii=False)
        f.write("\n")

    import torch
    from sentence_transformers import SentenceTransformer
    torch.set_num_threads(2)
    model = SentenceTransformer(model_dir, device="cpu")
    emb = model.encode(EMBED_TEXTS, batch_size=1, convert_to_numpy=True)
    n_tokens = [len(model.tokenize([t])["input_ids"][0]) for t in EMBED_TEXTS]
    with open(os.path.join(out_dir, "embeddings.json"), "w", encoding="utf-8") as f:
        json.dump({"max_seq_length": model.max_seq_length, "texts": EMBED_TEXTS, "n_tokens": n_tokens,
                   "embeddings": [[float(f"{v:.7g}") for v in row] for row in emb.tolist()]}, f,
                  ensure_ascii=False)
        f.write("\n")
    print(f"wrote {len(TOKEN_TEXTS)} token lists and {len(EMBED_TEXTS)} embeddings to {out_dir}; "
          f"n_tokens {n_tokens}")


if __name__ == "__main__":
    main()
