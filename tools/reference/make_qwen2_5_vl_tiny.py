#!/usr/bin/env python3
"""A tiny random Qwen2.5-VL (vision tower + text decoder + tokenizer) and
transformers' outputs of it.

    python3 tools/reference/make_qwen2_5_vl_tiny.py

The structure is Qwen2.5-VL-3B-Instruct's (../shared/models/configs) scaled
down: 4 vision blocks of width 64 (4 heads of 16), SwiGLU 172 wide (the 3B's
3420 / 1280 ratio), full attention at blocks 1 and 3 (the 3B: every 8th,
7 15 23 31), window 112 px, 14 x 14 patches, temporal patch 2, a 2 x 2
merger into an LLM width of 64. Weights: torch.manual_seed(0), drawn in
state-dict order; matrices randn / sqrt(fan_in), biases 0.02 randn, RMSNorm
weights 1 + 0.1 randn; then rounded to bfloat16 (the dtype of the real
checkpoints), so the C side reads bf16 and transformers computes in float32
on the same values.

The text decoder: 2 layers of width 64 (4 heads, 2 KV heads, SwiGLU 128,
qkv biases, tied embeddings, M-RoPE sections [2, 3, 3]) over a 1024-token
vocabulary, with a byte-level BPE tokenizer of 256 bytes and no merges plus
Qwen's special tokens at ids 256-262 (so the image / vision ids of this
tiny config are 261 / 259 / 260, not Qwen's 151655 / 151652 / 151653).
Text weights: a second generator (torch.Generator seeded 1), same rules.

Writes tests/data/qwen2vl/tiny/ (committed, ~0.9 MB):
  config.json        the Qwen2_5_VLConfig as transformers 5 saves it
  model.safetensors  every tensor, bf16 (as real checkpoints: norms and
                     biases too), under the original checkpoints' names (visual.blocks.N..., model.layers.N..., lm_head
                     tied: not stored)
  tokenizer.json, tokenizer_config.json
and tests/data/qwen2vl/vision_<case>.f32: the merged embeddings
(pooler_output of model.visual, float32 little-endian, tokens x 64) for the
preprocessing cases of qwen2vl_preprocess_reference.py, with
vision_cases.txt naming each case's image, limits and grid.
"""
import json
import os

import numpy as np
import torch
from PIL import Image
from safetensors.torch import save_file
from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
from transformers.image_transforms import convert_to_rgb
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data")
out = os.path.join(root, "qwen2vl", "tiny")
os.makedirs(out, exist_ok=True)

cfg = Qwen2_5_VLConfig(
    text_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=1024, max_position_embeddings=4096, rms_norm_eps=1e-6,
                     rope_theta=1000000.0, rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
                     tie_word_embeddings=True, bos_token_id=256, eos_token_id=258),
    vision_config=dict(depth=4, hidden_size=64, intermediate_size=172, num_heads=4, in_channels=3,
                       out_hidden_size=64, patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
                       window_size=112, fullatt_block_indexes=[1, 3], tokens_per_second=2, hidden_act="silu"),
    image_token_id=261, video_token_id=262, vision_start_token_id=259, vision_end_token_id=260,
    bos_token_id=256, eos_token_id=258, tie_word_embeddings=True,
)
cfg._attn_implementation = "eager"
cfg.vision_config._attn_implementation = "eager"
torch.manual_seed(0)
model = Qwen2_5_VLForConditionalGeneration(cfg).eval()
visual = model.model.visual
with torch.no_grad():
    for name, p in visual.named_parameters():
        if p.ndim == 1 and "norm" in name or name.endswith("ln_q.weight"):
            v = 1 + 0.1 * torch.randn(p.shape)
        elif name.endswith("bias"):
            v = 0.02 * torch.randn(p.shape)
        else:
            v = torch.randn(p.shape) / np.sqrt(p[0].numel())
        p.copy_(v.to(torch.bfloat16).to(torch.float32))

    g = torch.Generator().manual_seed(1)
    lm = model.model.language_model
    for name, p in lm.named_parameters():
        if p.ndim == 1 and "norm" in name:
            v = 1 + 0.1 * torch.randn(p.shape, generator=g)
        elif name.endswith("bias"):
            v = 0.02 * torch.randn(p.shape, generator=g)
        else:
            v = torch.randn(p.shape, generator=g) / np.sqrt(p[0].numel())
        p.copy_(v.to(torch.bfloat16).to(torch.float32))

tensors = {f"visual.{k}": v.detach().to(torch.bfloat16).contiguous() for k, v in visual.state_dict().items()}
tensors.update({f"model.{k}": v.detach().to(torch.bfloat16).contiguous() for k, v in lm.state_dict().items()})
save_file(tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
cfg.save_pretrained(out)

# the tokenizer: byte-level BPE, the 256 bytes and no merges, then the specials
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from reftools import bytes_to_unicode  # noqa: E402
specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
            "<|video_pad|>"]
b2u = bytes_to_unicode()
tok = Tokenizer(models.BPE(vocab={b2u[b]: b for b in range(256)}, merges=[]))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
tok.decoder = decoders.ByteLevel()
tok.add_special_tokens(specials)
tok.save(os.path.join(out, "tokenizer.json"))
# a chat template of Qwen2-VL's shape: string contents, or parts where an
# image part becomes <|vision_start|><|image_pad|><|vision_end|>
TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
            "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
            "{% for c in message['content'] %}{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
            "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
json.dump({"bos_token": None, "eos_token": "<|im_end|>", "model_max_length": 4096,
           "tokenizer_class": "Qwen2Tokenizer", "chat_template": TEMPLATE},
          open(os.path.join(out, "tokenizer_config.json"), "w"), indent=1)
json.dump({"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
           "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
           "image_processor_type": "Qwen2VLImageProcessor"},
          open(os.path.join(out, "preprocessor_config.json"), "w"), indent=1)

# text-only logits of every position (M-RoPE with equal rows)
ids = [72, 101, 108, 108, 111, 257, 44, 32, 119, 111, 114, 108, 100, 33]
with torch.no_grad():
    logits = model(input_ids=torch.tensor([ids])).logits[0].float().numpy()
logits.astype("<f4").tofile(os.path.join(root, "qwen2vl", "text_logits.f32"))
with open(os.path.join(root, "qwen2vl", "text_logits.txt"), "w") as f:
    f.write("# ids; text_logits.f32 holds len(ids) x 1024 float32 logits (transformers, text only)\n")
    f.write(" ".join(map(str, ids)) + "\n")
print("tensors:", len(tensors), "bytes:", os.path.getsize(os.path.join(out, "model.safetensors")))

cases = [("photo", "images/photo.png", 3136, 12845056), ("photo_small", "images/photo.png", 3136, 28 * 28 * 16),
         ("gif_up", "images/anim.gif", 3136, 12845056)]
with open(os.path.join(root, "qwen2vl", "vision_cases.txt"), "w") as f:
    f.write("# case image min_pixels max_pixels grid_t grid_h grid_w tokens (embeddings in vision_<case>.f32)\n")
    for name, rel, lo, hi in cases:
        im = convert_to_rgb(Image.open(os.path.join(root, rel)), return_numpy=True)
        px = Qwen2VLImageProcessorPil(min_pixels=lo, max_pixels=hi)(images=[im], return_tensors="pt")
        with torch.no_grad():
            o = visual(px["pixel_values"].float(), grid_thw=px["image_grid_thw"]).pooler_output
        e = o.float().numpy()
        e.astype("<f4").tofile(os.path.join(root, "qwen2vl", f"vision_{name}.f32"))
        t, h, w = (int(v) for v in px["image_grid_thw"][0])
        f.write(f"{name} {rel} {lo} {hi} {t} {h} {w} {e.shape[0]}\n")
        print(name, (t, h, w), e.shape, float(np.abs(e).mean()))

# a prompt with an image (photo.png, 14 x 22 patches: 77 tokens of a 7 x 11
# merged grid), then two more text tokens: the logits of its last 8
# positions, transformers' full forward (pixel values, M-RoPE positions)
im = convert_to_rgb(Image.open(os.path.join(root, "images/photo.png")), return_numpy=True)
px = Qwen2VLImageProcessorPil(min_pixels=3136, max_pixels=12845056)(images=[im], return_tensors="pt")
t, h, w = (int(v) for v in px["image_grid_thw"][0])
n_img = t * h * w // 4
ids = [257, 117, 115, 101, 114, 10, 259] + [261] * n_img + [260, 87, 104, 97, 116, 63, 258, 10, 257, 97]
extra = [115, 115]
full = torch.tensor([ids + extra])
with torch.no_grad():
    res = model(input_ids=full, pixel_values=px["pixel_values"].float(), image_grid_thw=px["image_grid_thw"],
                mm_token_type_ids=(full == 261).int())
lg = res.logits[0, -8:].float().numpy()
lg.astype("<f4").tofile(os.path.join(root, "qwen2vl", "image_logits.f32"))
with open(os.path.join(root, "qwen2vl", "image_logits.txt"), "w") as f:
    f.write("# prompt ids (image tokens expanded) / 2 more ids / grid; image_logits.f32: the last 8 positions\n")
    f.write("ids " + " ".join(map(str, ids)) + "\n")
    f.write("extra " + " ".join(map(str, extra)) + "\n")
    f.write(f"grid {t} {h} {w}\n")
print("image prompt", len(ids), "+", len(extra), "tokens; grid", (t, h, w))

# `mllm run --image photo.png -p "What is this?"` on this folder: the chat
# template, the pad expanded, transformers' greedy continuation of 6 tokens
# (tests/e2e/run_image_cli.sh compares the ids; the top-2 margins printed
# show no near-tie)
from jinja2 import Template
text = Template(TEMPLATE).render(messages=[{"role": "user", "content": [{"type": "image"},
                                                                       {"type": "text", "text": "What is this?"}]}],
                                 add_generation_prompt=True)
from tokenizers import Tokenizer as _T
tk = _T.from_file(os.path.join(out, "tokenizer.json"))
pids = tk.encode(text).ids
assert pids.count(261) == 1
i = pids.index(261)
cur = pids[:i] + [261] * n_img + pids[i + 1:]
gen, margins = [], []
for _ in range(6):
    x = torch.tensor([cur])
    with torch.no_grad():
        lg = model(input_ids=x, pixel_values=px["pixel_values"].float(), image_grid_thw=px["image_grid_thw"],
                   mm_token_type_ids=(x == 261).int()).logits[0, -1]
    top = torch.topk(lg, 2)
    margins.append(float(top.values[0] - top.values[1]))
    gen.append(int(top.indices[0]))
    cur.append(gen[-1])
with open(os.path.join(root, "qwen2vl", "image_generate.txt"), "w") as f:
    f.write("# greedy ids after the prompt (transformers), then each step's top-2 logit margin\n")
    f.write(" ".join(map(str, gen)) + "\n")
    f.write(" ".join(f"{m:.4f}" for m in margins) + "\n")
print("greedy", gen, "margins", margins)
