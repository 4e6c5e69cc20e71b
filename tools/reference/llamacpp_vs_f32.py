#!/usr/bin/env python3
"""llama.cpp's distance to the float32 answer, on the prompts of a
tests/data/gguf-f32/<model>/reference.json, so mllm's (test_reference_gguf_f32,
docs/EXACTNESS.md) can be compared with it.

The float32 logits come from gguf_f32_reference.py's --out folder
(<name>.f32 per prompt); llama.cpp runs through llama-cpp-python with the
protocol of llamacpp_runner.py (F32 KV cache, the whole prompt in one
llama_decode), flash attention off and then on. Prints the NMSE over the
whole vocabulary per prompt. No mllm code runs here.

  python3 tools/reference/llamacpp_vs_f32.py --model FILE.gguf \
      --reference tests/data/gguf-f32/gemma3-270m/reference.json --f32-dir /tmp/gemma-ref
"""
import argparse, json, os, sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llamacpp_runner import LlamaCppRunner  # noqa: E402


def nmse(a, r):
    a = a.astype(np.float64)
    r = r.astype(np.float64)
    return float(((a - r) ** 2).sum() / ((r - r.mean()) ** 2).sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--f32-dir", required=True)
    a = ap.parse_args()
    prompts = json.load(open(a.reference))["prompts"]
    n_ctx = max(len(p["ids"]) for p in prompts) + 8
    for flash in (False, True):
        run = LlamaCppRunner(a.model, n_ctx=n_ctx, flash=flash)
        out = []
        for p in prompts:
            run.clear()
            last = run._decode(p["ids"], 0)[-1]
            ref = np.fromfile(os.path.join(a.f32_dir, p["name"] + ".f32"), dtype="<f4")
            out.append(nmse(last, ref))
        run.close()
        print(os.path.basename(a.model), "flash" if flash else "no-flash",
              " ".join("%.2e" % x for x in out), flush=True)


if __name__ == "__main__":
    main()
