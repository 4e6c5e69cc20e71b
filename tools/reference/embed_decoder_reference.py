#!/usr/bin/env python3
"""Decoder embeddings' reference: float32 math on a GGUF's dequantized
weights (transformers loads it with gguf_file=, as gguf_f32_reference.py),
the final-normed hidden states (model.model(...).last_hidden_state) pooled
by the mean over every token and by the last token, each L2-normalised.
Token ids come from transformers' tokenizer of the same GGUF, as
mllm_embed_ids takes them (nothing added). Writes a small JSON that
tests/unit/test_embed_decoder.c reads. No mllm code runs here.

  python3 tools/reference/embed_decoder_reference.py --model SmolLM2.gguf \
      --out tests/data/embed-decoder/smollm2-135m.json
"""
import argparse, hashlib, json, os

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings place texts with similar meanings close together.",
    "Grüße aus München: Äpfel, Öl und Übermut.",
    "def add(a, b):\n    return a + b\n",
    "東京は日本の首都です。",
    "A longer passage about rivers, mountains and the weather in spring, "
    "repeated to make it longer: rivers, mountains and the weather in spring.",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(2)
    d, f = os.path.split(os.path.abspath(a.model))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32).eval()
    out = {"model": f, "sha256": hashlib.sha256(open(a.model, "rb").read()).hexdigest(), "texts": []}
    for t in TEXTS:
        ids = tok(t, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            h = model.model(torch.tensor([ids])).last_hidden_state[0].double()
        mean = torch.nn.functional.normalize(h.mean(0), dim=0)
        last = torch.nn.functional.normalize(h[-1], dim=0)
        out["texts"].append({"text": t, "ids": ids,
                             "mean": [float("%.7g" % x) for x in mean.tolist()],
                             "last": [float("%.7g" % x) for x in last.tolist()]})
    with open(a.out, "w") as fo:
        json.dump(out, fo, separators=(",", ":"), ensure_ascii=False)
        fo.write("\n")


if __name__ == "__main__":
    main()
