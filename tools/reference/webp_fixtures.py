#!/usr/bin/env python3
"""The WebP fixtures of tests/data/images/ (committed) and what PIL (as
transformers' convert_to_rgb uses it) decodes them to. Made from the
committed photo.png and alpha.png (image_fixtures.py):

    python3 tools/reference/webp_fixtures.py

  photo.webp        64 x 48 crop of photo.png, lossless (VP8L)
  photo_lossy.webp  the same crop, lossy (VP8, quality 80)
  alpha.webp        alpha.png (97 x 61 RGBA), lossless
  anim.webp         two 20 x 10 frames (animated: refused)
  pil_*_webp.png    PIL's decode of each still one, alpha over white
"""
import os
from PIL import Image

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "images")
photo = Image.open(f"{out}/photo.png").convert("RGB")
crop = photo.crop((100, 100, 164, 148))
crop.save(f"{out}/photo.webp", lossless=True, method=4)
crop.save(f"{out}/photo_lossy.webp", quality=80, method=4)
Image.open(f"{out}/alpha.png").save(f"{out}/alpha.webp", lossless=True, method=4, exact=True)
f1, f2 = photo.crop((0, 0, 20, 10)), photo.crop((40, 40, 60, 50))
f1.save(f"{out}/anim.webp", save_all=True, append_images=[f2], duration=100, loop=0, lossless=True)


from reftools import to_rgb  # noqa: E402

for n in ["photo.webp", "photo_lossy.webp", "alpha.webp"]:
    to_rgb(Image.open(f"{out}/{n}")).save(f"{out}/pil_{n.replace('.', '_')}.png")
    print(n, os.path.getsize(f"{out}/{n}"))
