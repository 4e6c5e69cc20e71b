#!/usr/bin/env python3
"""Rebuild anchor-data's random tiny Qwen3 models (F32 and F16) byte for byte.

    python3 make_qwen3_tiny.py OUTDIR [--anchor-dir DIR]

anchor-data keeps llama.cpp's reference logits for qwen3-tiny-random-F32.gguf
and -F16.gguf but not the files themselves (only their sha256). Its README
("The random qwen3 models: how they were made") documents the recipe; this
script follows it:

  * one numpy.random.default_rng(42) stream, drawn in file order:
    token_embd, then per layer attn_norm, attn_q, attn_k, attn_v, attn_output,
    attn_q_norm, attn_k_norm, ffn_norm, ffn_gate, ffn_up, ffn_down, and last
    output_norm; each draw is rng.standard_normal(numpy_shape, dtype=float32)
    with numpy_shape = (out_features, in_features);
  * matrices = draw * 0.02, RMSNorm weights = 1 + 0.1 * draw;
  * the F16 file holds the F32 values rounded to float16, 1-D norms stay F32.

The metadata and tokenizer are not regenerated from Hugging Face files: they
are copied from the kept qwen3-tiny-random-Q8_0.gguf (same keys, same types,
same order), except that llama-quantize appended general.quantization_version
and moved general.file_type to the end; both are undone here (the F32/F16
files were written by gguf-py's GGUFWriter, which adds neither by itself).

The bytes depend on numpy (the RNG and float16 rounding) and on the `gguf`
package's writer; scripts/make-anchor-models.sh pins the versions that were
checked. The script prints each file's sha256 and whether it matches the
sha256 anchor-data's README gives; exit status 0 means both match, 3 means
the files were written but differ (they are still usable for tests whose
reference allows for that; the tensor values are checked against the Q8_0
file either way: our matrices quantized to Q8_0 must give its exact bytes,
our norm weights must equal its F32 norms; exit status 5 if not, 4 if the
Q8_0 file is absent).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

import numpy as np

try:
    import gguf
    from gguf import GGUFReader, GGUFValueType, GGUFWriter
except ImportError as exc:  # pragma: no cover - message for the shell wrapper
    sys.exit(f"make_qwen3_tiny.py: the `gguf` package is needed ({exc})")

SEED = 42
E, N_LAYER, H, HKV, D, F, V = 64, 2, 4, 2, 16, 128, 151936

# anchor-data/README.md, "sha256 of the files that are not kept here".
EXPECTED = {
    "F32": ("35e99120a025c047ee92758489691ece1d370392b7d45f22e30bd9085e1c93d5", 45_126_144),
    "F16": ("b21cdbda55e7d8eb76a40b85e33d68a7a8c16934f1843dc0faebad50a0a34b28", 25_530_880),
}

# Keys llama-quantize added or moved; they are not copied from the Q8_0 file.
DROPPED_KEYS = {"general.quantization_version", "general.file_type",
                "GGUF.version", "GGUF.tensor_count", "GGUF.kv_count"}
# general.file_type goes right after this key (convert_hf_to_gguf.py's
# set_gguf_parameters() ends with add_file_type, before the tokenizer keys).
FILE_TYPE_AFTER = "qwen3.attention.value_length"
FILE_TYPE = {"F32": 0, "F16": 1}


def default_anchor_dir() -> Path:
    here = Path(__file__).resolve()
    return here.parents[2].parent / "shared" / "anchor-data"


def tensor_plan() -> list[tuple[str, tuple[int, ...]]]:
    """GGUF tensor names with numpy shapes, in file (= draw) order."""
    plan: list[tuple[str, tuple[int, ...]]] = [("token_embd.weight", (V, E))]
    for i in range(N_LAYER):
        b = f"blk.{i}."
        plan += [
            (b + "attn_norm.weight", (E,)),
            (b + "attn_q.weight", (H * D, E)),
            (b + "attn_k.weight", (HKV * D, E)),
            (b + "attn_v.weight", (HKV * D, E)),
            (b + "attn_output.weight", (E, H * D)),
            (b + "attn_q_norm.weight", (D,)),
            (b + "attn_k_norm.weight", (D,)),
            (b + "ffn_norm.weight", (E,)),
            (b + "ffn_gate.weight", (F, E)),
            (b + "ffn_up.weight", (F, E)),
            (b + "ffn_down.weight", (E, F)),
        ]
    plan.append(("output_norm.weight", (E,)))
    return plan


def make_tensors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    out: dict[str, np.ndarray] = {}
    for name, shape in tensor_plan():
        draw = rng.standard_normal(shape, dtype=np.float32)
        if len(shape) == 1:
            out[name] = (np.float32(1.0) + np.float32(0.1) * draw).astype(np.float32)
        else:
            out[name] = (draw * np.float32(0.02)).astype(np.float32)
    return out


def read_metadata(q8_path: Path) -> list[tuple[str, GGUFValueType, GGUFValueType | None, object]]:
    """(key, type, array item type, value) for every KV pair, in file order.

    Strings are kept as raw bytes so that nothing is re-encoded."""
    reader = GGUFReader(str(q8_path))
    kvs = []
    for key, field in reader.fields.items():
        if key in DROPPED_KEYS:
            continue
        vtype = field.types[0]
        if vtype == GGUFValueType.ARRAY:
            sub = field.types[1]
            if sub == GGUFValueType.STRING:
                val = [bytes(field.parts[i]) for i in field.data]
            else:
                val = [field.parts[i][0].item() for i in field.data]
            kvs.append((key, vtype, sub, val))
        elif vtype == GGUFValueType.STRING:
            kvs.append((key, vtype, None, bytes(field.parts[field.data[0]])))
        else:
            kvs.append((key, vtype, None, field.parts[field.data[0]][0].item()))
    return kvs


def add_kv(writer: GGUFWriter, key: str, vtype, sub, val) -> None:
    try:
        writer.add_key_value(key, val, vtype, sub_type=sub)
    except TypeError:  # older gguf: no sub_type; item type comes from the value
        writer.add_key_value(key, val, vtype)


def write_model(path: Path, kind: str, kvs, tensors: dict[str, np.ndarray]) -> None:
    writer = GGUFWriter(str(path), "qwen3")
    for key, vtype, sub, val in kvs:
        if key == "general.architecture":
            continue  # GGUFWriter added it first, as in the original
        if key == "general.name":
            val = f"qwen3-tiny-random-{kind}".encode()
        add_kv(writer, key, vtype, sub, val)
        if key == FILE_TYPE_AFTER:
            writer.add_uint32("general.file_type", FILE_TYPE[kind])
    for name, _ in tensor_plan():
        t = tensors[name]
        if kind == "F16" and t.ndim > 1:
            t = t.astype(np.float16)
        writer.add_tensor(name, t)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_against_q8(q8_path: Path, tensors: dict[str, np.ndarray]) -> int:
    """Quantize our values to Q8_0 with gguf-py (ggml's reference quantizer)
    and compare with the anchor file's bytes; F32 norms must be equal.
    Returns the number of tensors that differ (0 = our values are the ones
    llama-quantize was given, to within what Q8_0 can tell)."""
    from gguf import quants
    reader = GGUFReader(str(q8_path))
    bad = 0
    for t in reader.tensors:
        ours = tensors.get(t.name)
        if ours is None:
            print(f"{t.name}: in the Q8_0 file but not made here", file=sys.stderr)
            bad += 1
            continue
        if t.tensor_type == gguf.GGMLQuantizationType.F32:
            same = np.array_equal(np.asarray(t.data, dtype=np.float32).reshape(-1), ours.reshape(-1))
        else:
            mine = quants.quantize(ours, t.tensor_type)
            same = np.array_equal(mine.reshape(-1), np.asarray(t.data).reshape(-1))
        if not same:
            print(f"{t.name}: differs from the Q8_0 anchor ({t.tensor_type.name})", file=sys.stderr)
            bad += 1
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--anchor-dir", type=Path, default=default_anchor_dir(),
                    help="anchor-data folder (default: ../shared/anchor-data next to the repo)")
    args = ap.parse_args()

    q8 = args.anchor_dir / "models" / "qwen3-tiny-random-Q8_0.gguf"
    if not q8.is_file():
        print(f"make_qwen3_tiny.py: {q8} not found", file=sys.stderr)
        return 4
    args.outdir.mkdir(parents=True, exist_ok=True)

    tensors = make_tensors()
    bad = check_against_q8(q8, tensors)
    if bad:
        print(f"make_qwen3_tiny.py: {bad} tensors do not match the Q8_0 anchor file", file=sys.stderr)
        return 5
    print("tensor values: F32 norms equal and Q8_0 re-quantization byte-identical to the Q8_0 anchor")

    kvs = read_metadata(q8)
    all_ok = True
    for kind in ("F32", "F16"):
        path = args.outdir / f"qwen3-tiny-random-{kind}.gguf"
        tmp = path.with_suffix(".gguf.tmp")
        write_model(tmp, kind, kvs, tensors)
        os.replace(tmp, path)
        digest, size = sha256(path), path.stat().st_size
        want_digest, want_size = EXPECTED[kind]
        ok = digest == want_digest
        all_ok &= ok
        print(f"{path}: {size} B sha256 {digest} "
              + ("OK (matches anchor-data)" if ok else
                 f"DIFFERS from anchor-data ({want_digest}, {want_size} B)"))
    ver = getattr(gguf, "__version__", None)
    if ver is None:
        try:
            from importlib.metadata import version
            ver = version("gguf")
        except Exception:  # noqa: BLE001 - version is informational only
            ver = "?"
    print(f"numpy {np.__version__}, gguf {ver}")
    return 0 if all_ok else 3


if __name__ == "__main__":
    sys.exit(main())
