#!/usr/bin/env python3
"""A tiny random SmolVLM (SigLIP vision tower + Idefics3 connector + Llama
text decoder + tokenizer) and transformers' outputs of it.

    python3 tools/reference/make_smolvlm_tiny.py

SmolVLM-256M-Instruct's structure scaled down: a SigLIP tower of 2 blocks,
width 64 (4 heads of 16), GELU(tanh) MLP 128 wide, 8 x 8 patches over a
64 x 64 tile (an 8 x 8 patch grid: 64 learned position embeddings), a pixel
shuffle by scale_factor 2 (16 tokens a tile, the processor's image_seq_len)
and a bias-free projection 256 -> 64 into a Llama decoder of 2 layers
(4 heads, 2 KV heads, SwiGLU 128, vocabulary 320, tied embeddings).
The processor: longest edge resized to 128 (Lanczos), image splitting on
with max_image_size 64 (so photo.png, 300 x 199, gives 2 x 2 tiles + the
global image = 80 image tokens), mean / std 0.5.

Weights: torch.manual_seed(0) for the tower and connector, a generator
seeded 1 for the text model, drawn in parameter order; matrices
randn / sqrt(fan_in), biases 0.02 randn, norm weights 1 + 0.1 randn (norm
biases 0.02 randn), position embeddings 0.5 randn; rounded to bfloat16 (the
real checkpoints' dtype), so both sides compute on the same values.

Tokenizer: byte-level BPE of the 256 bytes, no merges, plus SmolVLM's
special tokens (<|im_start|>, <end_of_utterance>, <fake_token_around_image>,
<global-img>, <image>, <row_R_col_C> for R, C in 1..6, <|endoftext|>) at
256.. and SmolVLM's chat template.

Writes tests/data/smolvlm/tiny/ (config.json, preprocessor_config.json,
processor_config.json, model.safetensors, tokenizer.json,
tokenizer_config.json) and tests/data/smolvlm/:
  cases.txt            per case: image, splitting, rows, cols, tiles, tokens
  tiles_<case>.u8      the preprocessed tiles as the 8-bit pixels before
                       rescale/normalise (tiles x 3 x 64 x 64, CHW), exact
  vision_<case>.f32    the connector's output (tiles * 16 x 64 float32)
  prompt.txt           the processor's input_ids for a chat prompt with the
                       photo (expanded) and the greedy continuation
  logits.f32           the last 8 positions' logits of that prompt
"""
import json
import os

import numpy as np
import torch
from PIL import Image
from safetensors.torch import save_file
from transformers import SmolVLMConfig, SmolVLMForConditionalGeneration, Idefics3Processor, PreTrainedTokenizerFast
from transformers.models.smolvlm.image_processing_pil_smolvlm import SmolVLMImageProcessorPil

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data")
out = os.path.join(root, "smolvlm", "tiny")
os.makedirs(out, exist_ok=True)

# tokenizer ---------------------------------------------------------------
from tokenizers import Tokenizer, decoders, models, pre_tokenizers


from reftools import bytes_to_unicode  # noqa: E402

specials = ["<|endoftext|>", "<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>", "<global-img>",
            "<image>"] + [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]
b2u = bytes_to_unicode()
tok = Tokenizer(models.BPE(vocab={b2u[b]: b for b in range(256)}, merges=[]))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
tok.decoder = decoders.ByteLevel()
tok.add_special_tokens(specials)
tok.save(os.path.join(out, "tokenizer.json"))
IMAGE_ID = 256 + specials.index("<image>")
EOU_ID = 256 + specials.index("<end_of_utterance>")
TEMPLATE = ("<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}{% if message['content'] is string %}"
            "{{': ' + message['content']}}{% else %}{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}"
            "{{': '}}{% endif %}{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}"
            "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}{% endif %}<end_of_utterance>\n"
            "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}")
json.dump({"bos_token": "<|im_start|>", "eos_token": "<end_of_utterance>", "model_max_length": 4096,
           "tokenizer_class": "GPT2Tokenizer", "add_bos_token": False, "chat_template": TEMPLATE,
           "fake_image_token": "<fake_token_around_image>", "image_token": "<image>",
           "global_image_token": "<global-img>"},
          open(os.path.join(out, "tokenizer_config.json"), "w"), indent=1)

# model -------------------------------------------------------------------
cfg = SmolVLMConfig(
    vision_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                       num_channels=3, image_size=64, patch_size=8, hidden_act="gelu_pytorch_tanh",
                       layer_norm_eps=1e-6),
    text_config=dict(model_type="llama", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, vocab_size=320, max_position_embeddings=4096,
                     rms_norm_eps=1e-5, rope_theta=100000.0, tie_word_embeddings=True, bos_token_id=257,
                     eos_token_id=EOU_ID, pad_token_id=256),
    scale_factor=2, image_token_id=IMAGE_ID, tie_word_embeddings=True, pad_token_id=256,
)
cfg._attn_implementation = "eager"
cfg.vision_config._attn_implementation = "eager"
cfg.text_config._attn_implementation = "eager"
torch.manual_seed(0)
model = SmolVLMForConditionalGeneration(cfg).eval()
m = model.model


def fill(named, g=None):
    for name, p in named:
        if "norm" in name and name.endswith("weight"):
            v = 1 + 0.1 * torch.randn(p.shape, generator=g)
        elif name.endswith("bias"):
            v = 0.02 * torch.randn(p.shape, generator=g)
        elif "position_embedding" in name:
            v = 0.5 * torch.randn(p.shape, generator=g)
        else:
            v = torch.randn(p.shape, generator=g) / np.sqrt(p[0].numel())
        p.copy_(v.to(torch.bfloat16).to(torch.float32))


with torch.no_grad():
    fill(list(m.vision_model.named_parameters()) + list(m.connector.named_parameters()))
    fill(m.text_model.named_parameters(), torch.Generator().manual_seed(1))

# the real checkpoints' names: model.vision_model.*, model.connector.*,
# model.text_model.*, lm_head tied (not stored)
tensors = {f"model.{k}": v.detach().to(torch.bfloat16).contiguous() for k, v in m.state_dict().items()}
save_file(tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
cfg.save_pretrained(out)

ip = SmolVLMImageProcessorPil(size={"longest_edge": 128}, max_image_size={"longest_edge": 64},
                              do_image_splitting=True, image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
ip.save_pretrained(out)
image_seq_len = (64 // 8) ** 2 // 4
hftok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(out, "tokenizer.json"), bos_token="<|im_start|>",
                                eos_token="<end_of_utterance>", pad_token="<|endoftext|>")
hftok.fake_image_token = "<fake_token_around_image>"
hftok.image_token = "<image>"
hftok.global_image_token = "<global-img>"
hftok.image_token_id = IMAGE_ID
# Idefics3Processor: SmolVLMProcessor's image prompt strings (_prompt_split_image) without its video
# processor, which this transformers cannot build standalone
proc = Idefics3Processor(image_processor=ip, tokenizer=hftok, image_seq_len=image_seq_len, chat_template=TEMPLATE)

# SigLIP's bucketed position ids are the identity on a full tile (the only
# kind the processor makes): checked here so the C side may rely on it, also
# for the real models' grids (SmolVLM 512/16, Idefics3 364/14)
for n in (8, 26, 32, 27, 24):
    b = torch.arange(1 / n, 1.0, 1 / n)
    fr = torch.clamp(torch.arange(n, dtype=torch.float32) * (1.0 / torch.tensor([n]))[:, None], max=1 - 1e-6)
    assert torch.equal(torch.bucketize(fr, b, right=True)[0], torch.arange(n)), n


def rgb(rel):
    im = Image.open(os.path.join(root, rel))
    from transformers.image_transforms import convert_to_rgb
    return convert_to_rgb(im, return_numpy=True)


cases = [("photo", "images/photo.png", True), ("photo_nosplit", "images/photo.png", False),
         ("alpha", "images/alpha.png", True), ("gif", "images/anim.gif", True)]
with open(os.path.join(root, "smolvlm", "cases.txt"), "w") as f:
    f.write("# case image splitting rows cols tiles tokens (tiles_<case>.u8, vision_<case>.f32)\n")
    for name, rel, split in cases:
        px = ip(images=[rgb(rel)], do_image_splitting=split, return_row_col_info=True, return_tensors="pt")
        pv = px["pixel_values"][0].float()  # tiles x 3 x 64 x 64
        u8 = torch.round((pv * 0.5 + 0.5) * 255)
        assert torch.allclose((u8 / 255 - 0.5) / 0.5, pv, atol=1e-6)
        u8.numpy().astype(np.uint8).tofile(os.path.join(root, "smolvlm", f"tiles_{name}.u8"))
        with torch.no_grad():
            feats = m.get_image_features(pixel_values=px["pixel_values"].float(),
                                         pixel_attention_mask=px["pixel_attention_mask"]).pooler_output
        feats = torch.cat(list(feats)) if isinstance(feats, (list, tuple)) else feats
        e = feats.reshape(-1, 64).float().numpy()
        e.astype("<f4").tofile(os.path.join(root, "smolvlm", f"vision_{name}.f32"))
        r, c = int(px["rows"][0][0]), int(px["cols"][0][0])
        f.write(f"{name} {rel} {int(split)} {r} {c} {pv.shape[0]} {e.shape[0]}\n")
        print(name, (r, c), pv.shape, e.shape, float(np.abs(e).mean()))

# a chat prompt with the photo: the processor's ids and the last 8 logits
msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is this?"}]}]
text = proc.apply_chat_template(msgs, add_generation_prompt=True)
enc = proc(text=[text], images=[[rgb("images/photo.png")]], return_tensors="pt")
ids = enc["input_ids"]
with torch.no_grad():
    res = model(input_ids=ids, attention_mask=enc["attention_mask"], pixel_values=enc["pixel_values"].float(),
                pixel_attention_mask=enc["pixel_attention_mask"])
lg = res.logits[0, -8:].float().numpy()
lg.astype("<f4").tofile(os.path.join(root, "smolvlm", "logits.f32"))
# greedy continuation (6 tokens) and the top-2 margins (no near-tie)
cur = ids[0].tolist()
gen, margins = [], []
for _ in range(6):
    x = torch.tensor([cur])
    with torch.no_grad():
        o = model(input_ids=x, pixel_values=enc["pixel_values"].float(),
                  pixel_attention_mask=enc["pixel_attention_mask"]).logits[0, -1]
    top = torch.topk(o, 2)
    margins.append(float(top.values[0] - top.values[1]))
    gen.append(int(top.indices[0]))
    cur.append(gen[-1])
with open(os.path.join(root, "smolvlm", "prompt.txt"), "w") as f:
    f.write("# the chat template's text (JSON), the processor's input_ids, the greedy ids after them (transformers), "
            "each step's top-2 margin; logits.f32: the prompt's last 8 positions x 320\n")
    f.write(json.dumps(text) + "\n")
    f.write("ids " + " ".join(map(str, ids[0].tolist())) + "\n")
    f.write("greedy " + " ".join(map(str, gen)) + "\n")
    f.write("margins " + " ".join(f"{v:.4f}" for v in margins) + "\n")
print("prompt", ids.shape[1], "tokens; image tokens", int((ids == IMAGE_ID).sum()), "greedy", gen, margins)
print("bytes", os.path.getsize(os.path.join(out, "model.safetensors")))
