#!/usr/bin/env python3
"""Expected quantized bytes for tests/unit/test_quantize_ref.c.

Writes tests/data/quant/:
  input.f32          ROWS x N little-endian float32 values (the test rows)
  <type>.bin         those rows quantized by ggml's reference quantizer
  manifest.json      versions, shapes, sha256 of every file

Two independent implementations, neither of them ours:
  * ggml's C quantize_row_<type>_ref, called with ctypes from the
    libggml-base shared library that the PyPI package llama-cpp-python ships
    (its vendored llama.cpp); every type.
  * the numpy ports in the PyPI package gguf (gguf.quants.quantize) where
    they exist (q4_0 q4_1 q5_0 q5_1 q8_0 mxfp4; gguf has no k-quant
    quantizer); the script fails if they disagree with ggml.

Usage: python3 tools/reference/quant_reference.py [--libggml PATH] [--out DIR] [--verify]
Tested with llama-cpp-python 0.3.36, gguf 0.19.0, numpy 2.4.6.
"""
import argparse
import ctypes
import hashlib
import json
import os
import sys

import numpy as np

ROWS, N = 8, 1024  # N: a multiple of 256 (k-quants) and 32 (the rest)

# name -> (ggml symbol, bytes per block, values per block, gguf.quants type name or None)
TYPES = {
    "q4_0": ("quantize_row_q4_0_ref", 18, 32, "Q4_0"),
    "q4_1": ("quantize_row_q4_1_ref", 20, 32, "Q4_1"),
    "q5_0": ("quantize_row_q5_0_ref", 22, 32, "Q5_0"),
    "q5_1": ("quantize_row_q5_1_ref", 24, 32, "Q5_1"),
    "q8_0": ("quantize_row_q8_0_ref", 34, 32, "Q8_0"),
    "mxfp4": ("quantize_row_mxfp4_ref", 17, 32, "MXFP4"),
    "q4_k": ("quantize_row_q4_K_ref", 144, 256, None),
    "q5_k": ("quantize_row_q5_K_ref", 176, 256, None),
    "q6_k": ("quantize_row_q6_K_ref", 210, 256, None),
    "q8_k": ("quantize_row_q8_K_ref", 292, 256, None),
}


def make_rows():
    """Rows that exercise the scale searches: gaussian weights, heavy tails,
    all-positive / all-negative runs, a zero block, a constant block, tiny
    values (f16 subnormal scales) and large ones."""
    rng = np.random.default_rng(20240611)
    x = np.empty((ROWS, N), dtype=np.float32)
    x[0] = rng.normal(0, 0.02, N)                     # typical weights
    x[1] = rng.standard_t(3, N) * 0.05                # outliers
    x[2] = np.abs(rng.normal(0, 1, N))                # all positive (min = 0 path)
    x[3] = -np.abs(rng.normal(0, 1, N)) - 0.5         # all negative
    x[4] = rng.uniform(-1, 1, N)
    x[4, :256] = 0.0                                  # zero super-block
    x[4, 256:512] = 0.25                              # constant super-block
    x[5] = rng.normal(0, 1e-6, N)                     # tiny: subnormal f16 scales
    x[6] = rng.normal(0, 300.0, N)                    # large
    x[7] = np.round(rng.normal(0, 4, N)) / 4          # many exact ties
    return x


def ggml_lib(path):
    if path is None:
        import llama_cpp  # noqa: F401  (only for its location)
        d = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
        path = os.path.join(d, "libggml-base.so")
    return ctypes.CDLL(path), path


def ggml_quantize(lib, sym, row, bsize, bvals):
    f = getattr(lib, sym)
    f.restype = None
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    src = np.ascontiguousarray(row, dtype=np.float32)
    out = np.zeros(len(row) // bvals * bsize, dtype=np.uint8)
    f(src.ctypes.data, out.ctypes.data, len(row))
    return out.tobytes()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--libggml", help="libggml-base.so (default: llama-cpp-python's)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "../../tests/data/quant"))
    ap.add_argument("--verify", action="store_true", help="compare with the files in --out instead of writing")
    a = ap.parse_args()

    import gguf
    from gguf import quants as gq

    lib, libpath = ggml_lib(a.libggml)
    x = make_rows()
    files = {"input.f32": x.astype("<f4").tobytes()}
    agree = {}
    for name, (sym, bsize, bvals, gname) in TYPES.items():
        data = b"".join(ggml_quantize(lib, sym, x[r], bsize, bvals) for r in range(ROWS))
        if gname:
            ref = gq.quantize(x, gguf.GGMLQuantizationType[gname]).tobytes()
            if ref != data:
                sys.exit(f"{name}: gguf.quants and ggml disagree")
            agree[name] = "ggml == gguf.quants"
        else:
            agree[name] = "ggml only (gguf.quants has no quantizer)"
        files[f"{name}.bin"] = data

    if a.verify:
        bad = [f for f, b in files.items() if open(os.path.join(a.out, f), "rb").read() != b]
        print("verify:", "OK" if not bad else f"DIFFER: {bad}")
        return 1 if bad else 0

    os.makedirs(a.out, exist_ok=True)
    for f, b in files.items():
        with open(os.path.join(a.out, f), "wb") as fh:
            fh.write(b)
    import importlib.metadata as md
    man = {
        "rows": ROWS, "n": N,
        "generator": "tools/reference/quant_reference.py",
        "libggml": os.path.basename(libpath),
        "versions": {p: md.version(p) for p in ("llama_cpp_python", "gguf", "numpy")},
        "sources": agree,
        "sha256": {f: hashlib.sha256(b).hexdigest() for f, b in files.items()},
    }
    with open(os.path.join(a.out, "manifest.json"), "w") as fh:
        json.dump(man, fh, indent=1)
    print("wrote", len(files), "files to", os.path.normpath(a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
