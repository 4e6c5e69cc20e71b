#!/usr/bin/env python3
"""Makes the small image fixtures of tests/data/images/ (committed) and what
PIL (as transformers' convert_to_rgb uses it) decodes them to.

Source photo: the Rust Embedded Book's assets/f3.jpg (a photo of an STM32F3
Discovery board; the book is MIT / Apache-2.0), found in a rustup toolchain's
docs, downscaled. Run:  python3 tools/reference/image_fixtures.py SRC.jpg
Writes, in tests/data/images/:
  photo.jpg      300 x 199 baseline JPEG (quality 85) of the photo
  photo.png      the same pixels as PIL decodes photo.jpg, lossless
  alpha.png      97 x 61 crop with an alpha gradient (RGBA)
  gray16.png     40 x 30 16-bit grayscale ramp (mode I;16)
  rgb16.png      24 x 16 16-bit RGB (written by hand: PIL cannot)
  cmyk.jpg       60 x 40 Adobe CMYK JPEG
  anim.gif       20 x 10, two frames (only the first is read)
  photo.bmp      64 x 48 24-bit BMP crop
  pil_*.png      what PIL (transformers' convert_to_rgb: alpha composited
                 over white) makes of each of the others, as 8-bit RGB PNG
"""
import hashlib, os, struct, sys, zlib
import numpy as np
from PIL import Image

out = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "images")
src = Image.open(sys.argv[1]).convert("RGB")
photo = src.resize((300, 199), Image.Resampling.LANCZOS)
photo.save(f"{out}/photo.jpg", quality=85, optimize=False, progressive=False)
dec = Image.open(f"{out}/photo.jpg").convert("RGB")
dec.save(f"{out}/photo.png")
crop = np.asarray(photo.crop((10, 20, 107, 81))).copy()
a = np.tile(np.linspace(0, 255, 97).astype(np.uint8), (61, 1))
Image.fromarray(np.dstack([crop, a]), "RGBA").save(f"{out}/alpha.png")
ramp = (np.arange(40 * 30, dtype=np.uint32).reshape(30, 40) * 54).astype(np.uint16)
Image.fromarray(ramp).save(f"{out}/gray16.png")

def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

rgb16 = (np.arange(24 * 16 * 3, dtype=np.uint32).reshape(16, 24, 3) * 57 % 65536).astype(">u2")
raw = b"".join(b"\0" + rgb16[y].tobytes() for y in range(16))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 24, 16, 16, 2, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
open(f"{out}/rgb16.png", "wb").write(png)
photo.crop((0, 0, 60, 40)).convert("CMYK").save(f"{out}/cmyk.jpg", quality=95)
f1 = photo.crop((0, 0, 20, 10)).quantize(16)
f2 = photo.crop((40, 40, 60, 50)).quantize(16)
f1.save(f"{out}/anim.gif", save_all=True, append_images=[f2], duration=100, loop=0)
photo.crop((100, 100, 164, 148)).save(f"{out}/photo.bmp")

from reftools import to_rgb  # noqa: E402

# What PIL hands transformers for each file, as plain 8-bit RGB PNGs (the
# photo's is photo.png itself): the test decodes both and compares.
for n in ["alpha.png", "gray16.png", "rgb16.png", "cmyk.jpg", "anim.gif", "photo.bmp"]:
    to_rgb(Image.open(f"{out}/{n}")).save(f"{out}/pil_{n.replace('.', '_')}.png")
