#!/usr/bin/env python3
"""Writes a random Qwen2.5-VL whose text decoder has a real model's width,
for serving benchmarks of a vision model (bench/serve_concurrency.py
--image) where tests/data/qwen2vl/tiny is too small for compute to matter:
its vision tower, tokenizer and preprocessing, its merger's last layer
widened to the new decoder, and a decoder of 8 layers of width 512 (8
heads of 64, 2 K/V heads, FFN 1408: about 22M parameters, bf16), random
with a fixed seed. Standard library only.

    bench/qwen2vl_wide.py OUT_DIR
"""
import json
import os
import random
import shutil
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TINY = os.path.join(ROOT, "tests", "data", "qwen2vl", "tiny")
H, F, HEADS, KV, LAYERS = 512, 1408, 8, 2, 8
D = H // HEADS


def read_st(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    head.pop("__metadata__", None)
    return {k: (v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in head.items()}


def rand_bf16(n, rng, ones=False):
    """n bf16 values: 1.0 (a norm's weight) or magnitudes in [2^-8, 2^-4) with random signs."""
    if ones:
        return struct.pack("<H", 0x3F80) * n
    bits = rng.getrandbits(16 * n).to_bytes(2 * n, "little")
    vals = struct.unpack("<%dH" % n, bits)
    return struct.pack("<%dH" % n, *((v & 0x807F) | ((119 + ((v >> 7) & 3)) << 7) for v in vals))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(1234)
    tensors = {k: v for k, v in read_st(os.path.join(TINY, "model.safetensors")).items() if k.startswith("visual.")}
    vis_h = tensors["visual.merger.mlp.2.weight"][0][1]
    tensors["visual.merger.mlp.2.weight"] = ([H, vis_h], rand_bf16(H * vis_h, rng))
    tensors["visual.merger.mlp.2.bias"] = ([H], rand_bf16(H, rng))
    V = 1024
    shapes = {"model.embed_tokens.weight": [V, H], "model.norm.weight": [H]}
    for i in range(LAYERS):
        p = "model.layers.%d." % i
        shapes.update({p + "input_layernorm.weight": [H], p + "post_attention_layernorm.weight": [H],
                       p + "mlp.gate_proj.weight": [F, H], p + "mlp.up_proj.weight": [F, H],
                       p + "mlp.down_proj.weight": [H, F], p + "self_attn.q_proj.weight": [H, H],
                       p + "self_attn.q_proj.bias": [H], p + "self_attn.k_proj.weight": [KV * D, H],
                       p + "self_attn.k_proj.bias": [KV * D], p + "self_attn.v_proj.weight": [KV * D, H],
                       p + "self_attn.v_proj.bias": [KV * D], p + "self_attn.o_proj.weight": [H, H]})
    for k, shape in shapes.items():
        n = 1
        for d in shape:
            n *= d
        tensors[k] = (shape, rand_bf16(n, rng, ones=k.endswith("norm.weight")))
    head, off = {}, 0
    for k in sorted(tensors):
        shape, data = tensors[k]
        head[k] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
    hb = json.dumps(head).encode()
    hb += b" " * (-len(hb) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb)
        for k in sorted(tensors):
            f.write(tensors[k][1])
    cfg = json.load(open(os.path.join(TINY, "config.json")))
    tc = cfg["text_config"]
    tc.update({"hidden_size": H, "intermediate_size": F, "num_attention_heads": HEADS, "num_key_value_heads": KV,
               "num_hidden_layers": LAYERS, "layer_types": ["full_attention"] * LAYERS})
    tc["rope_parameters"]["mrope_section"] = [D // 8, D * 3 // 16, D * 3 // 16]
    cfg["vision_config"]["out_hidden_size"] = H
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)
    for name in ("preprocessor_config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TINY, name), os.path.join(out, name))


if __name__ == "__main__":
    main()
