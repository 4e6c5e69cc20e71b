#!/usr/bin/env python3
"""The exact answer for a GGUF file: float32 math on its dequantized weights.

transformers loads the GGUF with `gguf_file=` and dequantizes every tensor
(gguf package); the forward pass runs in float32 on the CPU. Prompts are
token ids (so tokenizers cannot disagree): give them as JSON lists.
Writes, per prompt, the last position's logits to OUT/<name>.f32 (little-
endian float32; for offline comparisons, not committed) and OUT/reference.json
(the 256 largest logits [id, value] with argmax, top-2 margin and the
logsumexp of the whole vector), which tests/unit/test_reference_gguf_f32.c
reads.

  python3 tools/reference/gguf_f32_reference.py --model FILE.gguf \
      --prompts prompts.json --out DIR

Needs: torch, transformers, accelerate, gguf (PyPI). No mllm code is used.
"""
import argparse, hashlib, json, os, sys, platform

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", required=True, help="JSON: [{name, text, ids}] (ids as the model's tokenizer gives them)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    import torch, transformers
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(2)
    d, f = os.path.split(os.path.abspath(a.model))
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
    model.eval()
    prompts = json.load(open(a.prompts))
    if isinstance(prompts, dict):  # an earlier reference.json: rerun its prompts
        prompts = prompts["prompts"]
    os.makedirs(a.out, exist_ok=True)
    summary = {"header": {"transformers": transformers.__version__, "torch": torch.__version__,
                          "python": platform.python_version(), "model": f,
                          "sha256": hashlib.sha256(open(a.model, "rb").read()).hexdigest(),
                          "attn_implementation": model.config._attn_implementation},
               "prompts": []}
    for p in prompts:
        ids = torch.tensor([p["ids"]], dtype=torch.long)
        with torch.no_grad():
            logits = model(ids).logits[0, -1].float()
        logits.numpy().astype("<f4").tofile(os.path.join(a.out, p["name"] + ".f32"))
        top = torch.topk(logits, 256)
        summary["prompts"].append({"name": p["name"], "text": p.get("text"), "ids": p["ids"],
                                   "argmax": int(top.indices[0]),
                                   "margin": float(top.values[0] - top.values[1]),
                                   "logsumexp": float(torch.logsumexp(logits, 0)),
                                   "top256": [[int(i), float(v)] for i, v in zip(top.indices, top.values)]})
        print(p["name"], "argmax", int(top.indices[0]), "margin", float(top.values[0] - top.values[1]), file=sys.stderr)
    with open(os.path.join(a.out, "reference.json"), "w") as fo:
        json.dump(summary, fo, separators=(",", ":"))
        fo.write("\n")

if __name__ == "__main__":
    main()
