#!/usr/bin/env python3
"""Reference patches of transformers' Qwen2VLImageProcessorPil (the PIL
image processor of Qwen2-VL / Qwen2.5-VL) for tests/unit/test_qwen2vl_pre.c.

For each case it writes tests/data/qwen2vl/pre_<case>.txt:
  file <path under tests/data> min_pixels <n> max_pixels <n>
  grid <t> <h> <w>
  dim <patch_dim>
  row <index> <patch_dim floats>        (a few whole rows)
  sums <n_patches floats>               (each row's sum, float64)
The images are decoded by PIL exactly as transformers' convert_to_rgb
does (photo.png is PIL's own decode of photo.jpg, so the C side can also
be checked on the JPEG itself, through stb's decoder, against an NMSE
bound). Run: python3 tools/reference/qwen2vl_preprocess_reference.py
"""
import os
import numpy as np
from PIL import Image
from transformers.image_transforms import convert_to_rgb
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data")
cases = [
    ("photo", "images/photo.png", 3136, 12845056),      # 300 x 199 -> 308 x 196
    ("photo_small", "images/photo.png", 3136, 28 * 28 * 16),  # downscaled within 16 merged tokens' pixels
    ("gif_up", "images/anim.gif", 3136, 12845056),      # 20 x 10 -> upscaled to the minimum
    ("alpha", "images/alpha.png", 3136, 12845056),      # RGBA over white, 97 x 61 -> 84 x 56
]
for name, rel, lo, hi in cases:
    im = convert_to_rgb(Image.open(os.path.join(root, rel)), return_numpy=True)
    proc = Qwen2VLImageProcessorPil(min_pixels=lo, max_pixels=hi)
    out = proc(images=[im], return_tensors="np")
    pv = np.asarray(out["pixel_values"], dtype=np.float32)
    t, h, w = (int(v) for v in out["image_grid_thw"][0])
    n, dim = pv.shape
    rows = sorted({0, n // 2, n - 1})
    with open(os.path.join(root, "qwen2vl", f"pre_{name}.txt"), "w") as f:
        f.write(f"file {rel} min_pixels {lo} max_pixels {hi}\n")
        f.write(f"grid {t} {h} {w}\ndim {dim}\n")
        for r in rows:
            f.write(f"row {r} " + " ".join(f"{v:.9g}" for v in pv[r]) + "\n")
        f.write("sums " + " ".join(f"{v:.17g}" for v in pv.astype(np.float64).sum(1)) + "\n")
    print(name, (t, h, w), pv.shape)

# smart_resize on sizes that hit its edges: ties of round() (42 / 28 = 1.5,
# 70 / 28 = 2.5), the max_pixels and min_pixels branches, tiny and long images
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize
sizes = [(42, 70), (70, 42), (14, 14), (1, 1), (1, 150), (199, 300), (4000, 3000), (4032, 3024), (10, 2000),
         (3000, 4000), (1080, 1920), (28, 28), (55, 57), (98, 126), (5000, 5000), (17, 3400)]
with open(os.path.join(root, "qwen2vl", "smart_resize.txt"), "w") as f:
    f.write("# height width min_pixels max_pixels -> resized_height resized_width (transformers smart_resize)\n")
    for lo, hi in [(3136, 12845056), (3136, 28 * 28 * 1280), (256 * 28 * 28, 1280 * 28 * 28)]:
        for h, w in sizes:
            try:
                rh, rw = smart_resize(h, w, 28, lo, hi)
            except ValueError:
                rh, rw = -1, -1
            f.write(f"{h} {w} {lo} {hi} {rh} {rw}\n")

# Pillow's bicubic resize of photo.png to sizes that take both pass orders
# (Pillow 13: vertical first when the height shrinks more than twice the
# width), one pass only, up- and downscaling: the byte sum and a weighted
# sum (byte i times (i % 251 + 1)) of each result.
import PIL
photo = Image.open(os.path.join(root, "images/photo.png")).convert("RGB")
sizes = [(308, 196), (280, 196), (320, 220), (200, 100), (300, 100), (308, 199), (300, 250), (150, 50), (29, 311),
         (600, 10), (1, 1), (3, 400), (299, 198), (301, 198), (56, 28), (644, 420)]
with open(os.path.join(root, "qwen2vl", "resize.txt"), "w") as f:
    f.write(f"# photo.png (300 x 199) -> width height sum weighted_sum, Pillow {PIL.__version__} BICUBIC\n")
    for w, h in sizes:
        b = np.asarray(photo.resize((w, h), Image.Resampling.BICUBIC)).reshape(-1).astype(np.int64)
        wsum = int((b * (np.arange(b.size) % 251 + 1)).sum())
        f.write(f"{w} {h} {int(b.sum())} {wsum}\n")
