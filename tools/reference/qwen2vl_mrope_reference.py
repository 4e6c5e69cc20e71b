#!/usr/bin/env python3
"""M-RoPE references for tests/unit/test_qwen2vl_mrope.c from transformers'
Qwen2.5-VL: get_rope_index's 3-row positions of a prompt with two images,
and Qwen2_5_VLRotaryEmbedding's cos / sin of some of its tokens with the
3B's text config (head_dim 128, mrope_section [16, 24, 24], theta 1e6,
../shared/models/configs/Qwen2.5-VL-3B-Instruct).

Writes tests/data/qwen2vl/mrope.txt (ids, grids, positions) and
mrope_cos_sin.f32 (for each listed token: 64 cos then 64 sin, float32 LE;
the full head's cos is these 64 twice, rotate-half).
    python3 tools/reference/qwen2vl_mrope_reference.py
"""
import json
import os

import numpy as np
import torch
from transformers import Qwen2_5_VLConfig, Qwen2_5_VLModel
from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLRotaryEmbedding

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..", "tests", "data", "qwen2vl")
cfg3b = json.load(open(os.path.join(here, "..", "..", "..", "shared", "models", "configs", "Qwen2.5-VL-3B-Instruct",
                                    "config.json")))
PAD, VS, VE = 151655, 151652, 151653
grids = [(1, 14, 22), (1, 4, 6)]
ntok = [t * h * w // 4 for t, h, w in grids]
ids = [9, 8, 7, VS] + [PAD] * ntok[0] + [VE, 5, 4, VS] + [PAD] * ntok[1] + [VE, 3, 2, 1]
# a tiny model only for get_rope_index (it reads the vision config's merge size)
tiny = Qwen2_5_VLConfig(text_config=dict(hidden_size=64, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=4, num_key_value_heads=2, vocab_size=151936),
                        vision_config=dict(depth=1, hidden_size=32, intermediate_size=32, num_heads=2,
                                           out_hidden_size=64),
                        image_token_id=PAD, vision_start_token_id=VS, vision_end_token_id=VE)
model = Qwen2_5_VLModel(tiny).eval()
input_ids = torch.tensor([ids])
mm = (input_ids == PAD).int()
pos, delta = model.get_rope_index(input_ids, mm, image_grid_thw=torch.tensor(grids))
pos = pos[:, 0].numpy()
nxt = int(pos.max()) + 1
with open(os.path.join(root, "mrope.txt"), "w") as f:
    f.write("# ids / grids (t h w per image) / positions rows t, h, w / next position (transformers get_rope_index)\n")
    f.write("ids " + " ".join(map(str, ids)) + "\n")
    f.write("grids " + " ".join(f"{t} {h} {w}" for t, h, w in grids) + "\n")
    for r, name in enumerate("thw"):
        f.write(f"pos_{name} " + " ".join(map(str, pos[r].tolist())) + "\n")
    f.write(f"next {nxt}\n")
    toks = [0, 3, 4, 5, 40, 80, 81, 82, 85, 86, len(ids) - 1]
    f.write("cos_sin_tokens " + " ".join(map(str, toks)) + "\n")
    tc = cfg3b.copy()
    text = Qwen2_5_VLConfig(**tc).text_config
    print("rope_parameters:", text.rope_parameters)
    rot = Qwen2_5_VLRotaryEmbedding(text)
    x = torch.zeros(1, 1, 128)
    cos, sin = rot(x, torch.tensor(pos)[:, None, :])
    cos, sin = cos[0].numpy(), sin[0].numpy()
    assert np.allclose(cos[:, :64], cos[:, 64:])
    out = np.concatenate([np.concatenate([cos[t, :64], sin[t, :64]]) for t in toks]).astype("<f4")
    out.tofile(os.path.join(root, "mrope_cos_sin.f32"))
print("tokens", len(ids), "next", nxt)
