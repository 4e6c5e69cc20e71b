#!/usr/bin/env python3
"""The GGUF pair of the tiny Qwen2.5-VL (tests/data/qwen2vl/tiny), written by
an independent writer: llama.cpp's convert_hf_to_gguf.py (checked with
34af94cd), once for the text model and once with --mmproj for the vision
tower, as users' published pairs are made.

    python3 tools/reference/make_qwen2_5_vl_tiny_gguf.py /work/llamacpp/src OUT_DIR [bf16|f32|f16]

writes OUT_DIR/text.gguf and OUT_DIR/mmproj.gguf. Two adjustments, neither
touching the tensors or the vision metadata:
- config.json gets "architectures": ["Qwen2_5_VLForConditionalGeneration"]
  (transformers 5 wrote the tiny model without it; the converter picks its
  class from it);
- the tiny tokenizer (256 bytes + specials, no merges) is not in the
  converter's table of known pre-tokenizer hashes: it is named "gpt-2",
  which is what its ByteLevel pre-tokenizer (GPT-2's regex) is.
tests/e2e/gguf_vision_pair.sh runs this when the converter is there."""
import json
import os
import runpy
import shutil
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
tiny = os.path.join(here, "..", "..", "tests", "data", "qwen2vl", "tiny")


def main():
    src, out = sys.argv[1], sys.argv[2]
    outtype = sys.argv[3] if len(sys.argv) > 3 else "bf16"
    sys.path.insert(0, os.path.join(src, "gguf-py"))
    sys.path.insert(0, src)
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        hf = os.path.join(tmp, "hf")
        shutil.copytree(tiny, hf)
        cfg_path = os.path.join(hf, "config.json")
        cfg = json.load(open(cfg_path))
        cfg["architectures"] = ["Qwen2_5_VLForConditionalGeneration"]
        json.dump(cfg, open(cfg_path, "w"), indent=2)
        import conversion.base as base  # the converter's own package
        base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"
        for extra, name in (([], "text.gguf"), (["--mmproj"], "mmproj.gguf")):
            sys.argv = ["convert_hf_to_gguf.py", hf, "--outtype", outtype, "--outfile", os.path.join(out, name)] + extra
            try:
                runpy.run_path(os.path.join(src, "convert_hf_to_gguf.py"), run_name="__main__")
            except SystemExit as e:
                if e.code not in (None, 0):
                    raise


if __name__ == "__main__":
    main()
