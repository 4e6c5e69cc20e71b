#!/usr/bin/env python3
"""Second opinion on the SmolLM2 tokenizer vectors: Hugging Face `tokenizers`.

Builds a tokenizers.Tokenizer from the GGUF's own vocab and merges, with the
pre-tokenizer SmolLM2 uses (llama.cpp calls it "smollm": every digit on its
own, then the GPT-2 regex; in `tokenizers` terms Digits(individual_digits)
then ByteLevel(use_regex)), the CONTROL tokens as special added tokens, and
checks that it gives the same ids as llama.cpp for every tokenizer vector and
prompt in tests/data/smollm2/reference.json. Two independent BPE
implementations agreeing makes the vectors trustworthy.

  hf_tokenizer_check.py [--model PATH] [--ref tests/data/smollm2/reference.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from gguf import GGUFReader
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smollm2_reference import REPO, default_model_path  # noqa: E402

TOKEN_TYPE_CONTROL = 3  # llama_token_type / gguf TokenType


def _strings(reader: GGUFReader, key: str) -> list[str]:
    f = reader.fields[key]
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]


def build(model: str) -> Tokenizer:
    r = GGUFReader(model)
    tokens = _strings(r, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in _strings(r, "tokenizer.ggml.merges")]
    tf = r.fields["tokenizer.ggml.token_type"]
    types = [int(tf.parts[i][0]) for i in tf.data]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges,
                               fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, ty in zip(tokens, types) if ty == TOKEN_TYPE_CONTROL])
    return tok


def encode(tok: Tokenizer, text: str, parse_special: bool) -> list[int]:
    if parse_special:
        return tok.encode(text, add_special_tokens=False).ids
    # llama.cpp with parse_special=false treats "<|im_end|>" as plain text; in
    # `tokenizers` added tokens are always matched, so encode via the model
    # alone: pre-tokenize, then BPE each piece.
    pieces = tok.pre_tokenizer.pre_tokenize_str(text)
    return [t.id for piece, _ in pieces for t in tok.model.tokenize(piece)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=default_model_path())
    ap.add_argument("--ref", default=os.path.join(REPO, "tests", "data", "smollm2", "reference.json"))
    args = ap.parse_args()
    with open(args.ref, encoding="utf-8") as f:
        ref = json.load(f)
    tok = build(args.model)
    cases = [(v["text"], v["parse_special"], v["ids"]) for v in ref["tokenizer_vectors"]]
    cases += [(p["prompt_text"], p["parse_special"], p["prompt_ids"]) for p in ref["prompts"]]
    bad = 0
    for text, ps, want in cases:
        got = encode(tok, text, ps)
        if got != want:
            bad += 1
            print(f"DIFF {text!r} parse_special={ps}\n  llama.cpp {want}\n  hf        {got}")
    print(f"{len(cases) - bad}/{len(cases)} tokenizer cases agree "
          f"(llama.cpp vs Hugging Face tokenizers)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
