#!/usr/bin/env python3
"""Decompresses the committed .xz test files (python's lzma: no xz tool
needed), checking them against SHA256SUMS next to them.

    python3 tools/reference/unxz.py SRC_DIR DST_DIR"""
import hashlib
import lzma
import os
import sys

src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
sums = dict(line.split()[::-1] for line in open(os.path.join(src, "SHA256SUMS")) if line.strip())
for name, want in sums.items():
    data = lzma.open(os.path.join(src, name + ".xz")).read()
    got = hashlib.sha256(data).hexdigest()
    if got != want:
        sys.exit(f"{name}: sha256 {got}, want {want}")
    with open(os.path.join(dst, name), "wb") as f:
        f.write(data)
    print(f"{name}: {len(data)} bytes")
