#!/usr/bin/env python3
"""Writes a CTranslate2 Whisper folder (scripts/fetch-whisper.sh) in the
Hugging Face layout of openai/whisper-* (config.json with model_type
"whisper" and the suppress lists, model.safetensors, generation_config.json,
tokenizer.json) with transformers' own save_pretrained, for
tests/e2e/transcribe_hf.sh: no real HF Whisper weights exist here, and
these carry the CTranslate2 ones exactly (float16 -> float32 -> float16 is
lossless), so `mllm transcribe` must give the same output on both folders.
The CT2 -> HF mapping (fused QKV / KV split, k_proj without bias) is
whisper_reference.py's. pip install torch transformers safetensors.

  whisper_to_hf.py --model CT2_DIR --out HF_DIR [--dtype float16|float32]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from whisper_reference import hf_state, read_ct2  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="float16", choices=["float16", "float32"])
    a = ap.parse_args()
    v = read_ct2(os.path.join(a.model, "model.bin"))
    ct2_cfg = json.load(open(os.path.join(a.model, "config.json")))
    d = v["encoder/conv1/weight"].shape[0]
    n_enc = sum(1 for k in v if k.startswith("encoder/layer_") and k.endswith("ffn/linear_0/weight"))
    n_dec = sum(1 for k in v if k.startswith("decoder/layer_") and k.endswith("ffn/linear_0/weight"))
    heads = int(v["encoder/num_heads"])
    vocab = v["decoder/embeddings/weight"].shape[0]
    multilingual = vocab >= 51865
    cfg = WhisperConfig(vocab_size=vocab, num_mel_bins=v["encoder/conv1/weight"].shape[1], d_model=d,
                        encoder_layers=n_enc, decoder_layers=n_dec, encoder_attention_heads=heads,
                        decoder_attention_heads=heads, encoder_ffn_dim=v["encoder/layer_0/ffn/linear_0/weight"].shape[0],
                        decoder_ffn_dim=v["decoder/layer_0/ffn/linear_0/weight"].shape[0],
                        max_source_positions=v["encoder/position_encodings/encodings"].shape[0],
                        max_target_positions=v["decoder/position_encodings/encodings"].shape[0],
                        decoder_start_token_id=50258 if multilingual else 50257,
                        eos_token_id=50257 if multilingual else 50256, pad_token_id=50257 if multilingual else 50256,
                        bos_token_id=50257 if multilingual else 50256,
                        suppress_tokens=ct2_cfg.get("suppress_ids"), begin_suppress_tokens=ct2_cfg.get("suppress_ids_begin"))
    model = WhisperForConditionalGeneration(cfg).eval()
    missing, unexpected = model.load_state_dict(hf_state(v, n_enc, n_dec, d), strict=False)
    assert not unexpected and all("embed_positions" in m or m == "proj_out.weight" for m in missing), (missing, unexpected)
    model = model.to(getattr(torch, a.dtype))
    os.makedirs(a.out, exist_ok=True)
    model.save_pretrained(a.out, safe_serialization=True)
    shutil.copy(os.path.join(a.model, "tokenizer.json"), os.path.join(a.out, "tokenizer.json"))
    print("wrote", a.out, sorted(os.listdir(a.out)))


if __name__ == "__main__":
    main()
