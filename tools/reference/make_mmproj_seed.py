#!/usr/bin/env python3
"""The fuzz seed of tests/fuzz/fuzz_mmproj.c: a tiny mmproj GGUF with the
keys and tensor names llama.cpp's convert_hf_to_gguf.py --mmproj writes for
Qwen2.5-VL (one block, width 8, 2 x 2 patches), random weights, written
with llama.cpp's gguf-py (pip install gguf, or /work/llamacpp/src/gguf-py).

    python3 tools/reference/make_mmproj_seed.py tests/fuzz/corpus/mmproj/tiny.gguf"""
import sys
import numpy as np
import gguf

H, F, P, OUT, M = 8, 8, 2, 8, 2
rng = np.random.default_rng(0)
w = gguf.GGUFWriter(sys.argv[1], "clip")
w.add_string("general.type", "mmproj")
w.add_bool("clip.has_vision_encoder", True)
w.add_uint32("clip.vision.projection_dim", OUT)
w.add_uint32("clip.vision.image_size", 28)
w.add_uint32("clip.vision.patch_size", P)
w.add_uint32("clip.vision.embedding_length", H)
w.add_uint32("clip.vision.feed_forward_length", F)
w.add_uint32("clip.vision.block_count", 1)
w.add_uint32("clip.vision.attention.head_count", 2)
w.add_array("clip.vision.image_mean", [0.48145467, 0.4578275, 0.40821073])
w.add_array("clip.vision.image_std", [0.26862955, 0.2613026, 0.2757771])
w.add_string("clip.projector_type", "qwen2.5vl_merger")
w.add_bool("clip.use_silu", True)
w.add_uint32("clip.vision.n_wa_pattern", 1)
w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)


def t(name, *shape):
    w.add_tensor(name, (rng.standard_normal(shape) * 0.1).astype(np.float32))


for s in ("", ".1"):
    t("v.patch_embd.weight" + s, H, 3, P, P)
for x in "qkv":
    t(f"v.blk.0.attn_{x}.weight", H, H)
    t(f"v.blk.0.attn_{x}.bias", H)
t("v.blk.0.attn_out.weight", H, H)
t("v.blk.0.attn_out.bias", H)
for n, o, i in (("ffn_gate", F, H), ("ffn_up", F, H), ("ffn_down", H, F)):
    t(f"v.blk.0.{n}.weight", o, i)
    t(f"v.blk.0.{n}.bias", o)
t("v.blk.0.ln1.weight", H)
t("v.blk.0.ln2.weight", H)
t("v.post_ln.weight", H)
t("mm.0.weight", H * M * M, H * M * M)
t("mm.0.bias", H * M * M)
t("mm.2.weight", OUT, H * M * M)
t("mm.2.bias", OUT)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
