#!/usr/bin/env python3
"""Reference logits, greedy ids and tokenizer ids for mllm-c's synthetic
Hugging Face folders, computed by Hugging Face transformers on PyTorch (CPU).

Nothing of mllm-c runs here except `mllm synth`, which writes the model
folders (random weights from a fixed seed, so the C test regenerates the same
bytes). The forward pass is transformers' own Llama / Qwen2 / Qwen3 code:
AutoModelForCausalLM, float32, attn_implementation="eager"; the tokenizer is
the `tokenizers` library reading the folder's tokenizer.json. Gemma 3
(Gemma3ForCausalLM: GeGLU, post norms, sqrt(E)-scaled embeddings, sliding
window layers with their own RoPE base, query_pre_attn_scalar) and SmolLM3
(no RoPE in every 4th layer) run transformers' code for those families.

    python3 -m venv build/hfref/venv
    build/hfref/venv/bin/pip install torch transformers safetensors tokenizers numpy
    build/hfref/venv/bin/python tools/reference/hf_reference.py            # writes tests/data/hf-reference
    build/hfref/venv/bin/python tools/reference/hf_reference.py --verify   # a second run must be identical
    build/hfref/venv/bin/python tools/reference/hf_reference.py --sensitivity  # NMSE of broken variants

Output (tests/data/hf-reference/, little-endian float32 files):
  reference.json             header (versions), prompts, greedy ids, margins and
                             per-step top-3 [id, logit],
                             tokenizer vectors, float64 cross-check per arch
  <arch>.p0.all.f32          f32 folder, prompt 0: logits at every position (n0 x vocab)
  <arch>.p1.last.f32         f32 folder, prompt 1: logits at the last position
  <arch>.f16.p1.last.f32     f16 folder (torch upcasts the f16 weights to float32
                             exactly), prompt 1: logits at the last position
The folder stays under 200 KB: every-position logits for the short prompt only.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCHS = ["llama", "qwen2", "qwen3", "smollm3", "gemma3"]
VOCAB = 512
N_GREEDY = 16


def prompt_ids(n, a, b):
    """A fixed, arbitrary id sequence below the first special token (473)."""
    return [(a * i * i + b * i + 5) % 470 for i in range(n)]


PROMPTS = [prompt_ids(12, 37, 11), prompt_ids(40, 53, 29)]

TOKENIZER_TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "  two  spaces,\ttab and\nnewline\n\n",
    "numbers 12345 and 3.14159",
    "caf\u00e9 na\u00efve \u00fcber \u4e2d\u6587 \U0001f600",
    "<|im_start|>user\nHi there<|im_end|>\n",
    "<|begin_of_text|>plain<|eot_id|>",
    "don't you'll WE'RE",
    "cafe\u0301 A\u030a",  # decomposed: Qwen's tokenizer.json normalizes to NFC, Llama's does not
]


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def synth(mllm, arch, dtype, out):
    run([mllm, "synth", "--arch", arch, "--preset", "tiny", "--dtype", dtype, "--format", "hf", "-o", out])


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def load(folder, torch_dtype):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    major = int(transformers.__version__.split(".")[0])
    kw = {"dtype": torch_dtype} if major >= 5 else {"torch_dtype": torch_dtype}
    model, info = AutoModelForCausalLM.from_pretrained(
        folder, attn_implementation="eager", output_loading_info=True, **kw)
    bad = {k: v for k, v in info.items() if v and k != "mismatched_keys"} if isinstance(info, dict) else {}
    # A tied lm_head is reported by some versions as missing; anything else is an error.
    missing = [k for k in bad.get("missing_keys", []) if k != "lm_head.weight"]
    if missing or bad.get("unexpected_keys") or info.get("mismatched_keys"):
        raise SystemExit(f"{folder}: weights not loaded cleanly: {info}")
    model.eval()
    return model


def check_model(model, arch, folder):
    """Fails unless transformers really uses the feature each arch exists to test."""
    import torch
    from safetensors.numpy import load_file

    st = load_file(os.path.join(folder, "model.safetensors"))
    attn = model.model.layers[0].self_attn
    if arch == "qwen2":
        b = attn.q_proj.bias
        if b is None:
            raise SystemExit("qwen2: transformers built q_proj without a bias")
        want = st["model.layers.0.self_attn.q_proj.bias"].astype(np.float32)
        if not np.array_equal(b.detach().to(torch.float32).numpy(), want):
            raise SystemExit("qwen2: q_proj.bias differs from the safetensors file")
    else:
        if attn.q_proj.bias is not None:
            raise SystemExit(f"{arch}: unexpected q_proj bias")
    if arch == "qwen3" and not hasattr(attn, "q_norm"):
        raise SystemExit("qwen3: no q_norm in transformers' attention")
    if arch == "llama":
        rt = getattr(model.model.rotary_emb, "rope_type", None)
        if rt != "llama3":
            raise SystemExit(f"llama: rotary embedding type is {rt!r}, not llama3")
    if arch == "smollm3":
        use = [bool(layer.self_attn.use_rope) for layer in model.model.layers]
        if all(use) or not any(use):
            raise SystemExit(f"smollm3: use_rope per layer is {use}: no mix of rotating and non-rotating layers")
    if arch == "gemma3":
        cfg = model.config
        kinds = [layer.self_attn.is_sliding for layer in model.model.layers]
        windows = {layer.self_attn.sliding_window for layer in model.model.layers if layer.self_attn.is_sliding}
        if all(kinds) or not any(kinds) or windows != {cfg.sliding_window}:
            raise SystemExit(f"gemma3: sliding layers {kinds}, windows {windows}")
        if not all(len(p) > cfg.sliding_window for p in PROMPTS):
            raise SystemExit("gemma3: a prompt is not longer than the sliding window")
        thetas = {k: v["rope_theta"] for k, v in cfg.rope_parameters.items()}
        if thetas["sliding_attention"] == thetas["full_attention"]:
            raise SystemExit(f"gemma3: one RoPE base for both layer kinds: {thetas}")
        if attn.scaling == attn.head_dim ** -0.5:
            raise SystemExit("gemma3: the attention scale is 1/sqrt(head_dim): query_pre_attn_scalar untested")
        scale = float(model.model.embed_tokens.embed_scale)
        if scale != float(np.float32(np.sqrt(cfg.hidden_size))) or float(np.sqrt(cfg.hidden_size)).is_integer():
            raise SystemExit(f"gemma3: embedding scale {scale} (hidden_size {cfg.hidden_size})")
        if cfg.hidden_activation != "gelu_pytorch_tanh":
            raise SystemExit(f"gemma3: activation {cfg.hidden_activation}")
    # Tied embeddings: lm_head must be the embedding matrix.
    if not torch.equal(model.lm_head.weight, model.model.embed_tokens.weight):
        raise SystemExit(f"{arch}: lm_head is not tied to embed_tokens")


def all_logits(model, ids):
    import torch

    with torch.no_grad():
        out = model(torch.tensor([ids], dtype=torch.long), use_cache=False)
    return out.logits[0].to(torch.float32).numpy()  # (n, vocab)


def greedy(model, ids, steps):
    """One token per forward through the KV cache; ties go to the lowest id."""
    import torch

    out_ids, margins, top3 = [], [], []
    with torch.no_grad():
        out = model(torch.tensor([ids], dtype=torch.long), use_cache=True)
        for _ in range(steps):
            logits = out.logits[0, -1].to(torch.float32).numpy()
            order = np.argsort(-logits, kind="stable")
            nxt = int(order[0])
            out_ids.append(nxt)
            margins.append(float(logits[order[0]] - logits[order[1]]))
            # The step's logits, beyond the argmax: the cached path is tested
            # on values, not only on a (here repetitive) argmax.
            top3.append([[int(i), float(logits[i])] for i in order[:3]])
            out = model(torch.tensor([[nxt]], dtype=torch.long), past_key_values=out.past_key_values,
                        use_cache=True)
    return out_ids, margins, top3


def nmse(a, ref):
    a = a.astype(np.float64)
    ref = ref.astype(np.float64)
    return float(np.sum((a - ref) ** 2) / np.sum(ref ** 2))


def tokenizer_vectors(folder):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    # ids: add_special_tokens=True (Llama's BOS); ids_plain: False.
    vecs = [{"text": t, "ids": tok.encode(t, add_special_tokens=True).ids,
             "ids_plain": tok.encode(t, add_special_tokens=False).ids} for t in TOKENIZER_TEXTS]
    # transformers' AutoTokenizer reads tokenizer_config.json too (BOS handling):
    # it must agree with the plain tokenizers result.
    from transformers import AutoTokenizer

    at = AutoTokenizer.from_pretrained(folder)
    agree = all(at(v["text"], add_special_tokens=True)["input_ids"] == v["ids"] and
                at(v["text"], add_special_tokens=False)["input_ids"] == v["ids_plain"] for v in vecs)
    return vecs, agree


def compact_json(obj, ind=0):
    """Indented JSON; lists without objects (ids, [id, logit] pairs) on one
    line, as are small objects; floats that are float32 values are written in
    their shortest exact decimal form."""
    pad = " " * (ind + 1)
    if isinstance(obj, dict) and not any(isinstance(v, (dict, list)) for v in obj.values()):
        flat = "{" + ", ".join(f"{json.dumps(k)}: {compact_json(v)}" for k, v in obj.items()) + "}"
        if len(flat) < 100:
            return flat
    if isinstance(obj, dict) and "text" in obj:  # a tokenizer vector: one line
        return "{" + ", ".join(f"{json.dumps(k)}: {compact_json(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, dict):
        items = [f"{pad}{json.dumps(k)}: {compact_json(v, ind + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * ind + "}"
    if isinstance(obj, list):
        if any(isinstance(v, dict) for v in obj):
            return "[\n" + ",\n".join(pad + compact_json(v, ind + 1) for v in obj) + "\n" + " " * ind + "]"
        return "[" + ", ".join(compact_json(v, ind + 1) for v in obj) + "]"
    if isinstance(obj, float):
        f = np.float32(obj)
        if float(f) == obj:
            return str(f)  # numpy prints the shortest string that reads back as this float32
        return repr(obj)
    return json.dumps(obj, ensure_ascii=True)


def f32_bytes(a):
    return np.ascontiguousarray(a, dtype="<f4").tobytes()


def header():
    import safetensors
    import tokenizers
    import torch
    import transformers

    try:
        commit = subprocess.run(["git", "log", "-1", "--format=%H", "--", "src/synth"], capture_output=True,
                                text=True, check=True, cwd=ROOT).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {
        "generator": "tools/reference/hf_reference.py",
        "engine": "transformers AutoModelForCausalLM, eager attention, PyTorch CPU",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "safetensors": safetensors.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "torch_threads": torch.get_num_threads(),
        "last_commit_of_src_synth": commit,
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def reference_arch(mllm, arch, work, files):
    import torch

    entry = {"arch": arch, "preset": "tiny"}
    d32 = os.path.join(work, f"{arch}-f32")
    d16 = os.path.join(work, f"{arch}-f16")
    synth(mllm, arch, "f32", d32)
    synth(mllm, arch, "f16", d16)
    entry["sha256_f32"] = {f: sha256(os.path.join(d32, f)) for f in sorted(os.listdir(d32))}
    # The tokenizer files of the f16 folder are the f32 folder's.
    entry["sha256_f16"] = {f: sha256(os.path.join(d16, f)) for f in ("config.json", "model.safetensors")}

    m32 = load(d32, torch.float32)
    check_model(m32, arch, d32)
    p0_all = all_logits(m32, PROMPTS[0])
    p1_all = all_logits(m32, PROMPTS[1])
    files[f"{arch}.p0.all.f32"] = f32_bytes(p0_all)
    files[f"{arch}.p1.last.f32"] = f32_bytes(p1_all[-1])
    gids, gmarg, gtop3 = greedy(m32, PROMPTS[1], N_GREEDY)
    entry["greedy_prompt"] = 1
    entry["greedy_ids"] = gids
    entry["min_greedy_margin"] = min(gmarg)  # each step's margin is top3[0] - top3[1]
    entry["greedy_top3"] = gtop3
    entry["p0_argmax"] = [int(np.argmax(r)) for r in p0_all]
    entry["p1_last_argmax"] = int(np.argmax(p1_all[-1]))
    # The cached (greedy) path and the full forward must give the same first token.
    if gids[0] != entry["p1_last_argmax"] and gmarg[0] > 1e-3:
        raise SystemExit(f"{arch}: greedy step 0 disagrees with the full forward")

    # How far float32 torch is from exact math on the same weights: the floor
    # under any tolerance the C test can claim.
    m64 = load(d32, torch.float64)
    p0_64 = all_logits(m64, PROMPTS[0])
    p1_64 = all_logits(m64, PROMPTS[1])
    entry["nmse_torch_f32_vs_f64"] = {"p0_all": nmse(p0_all, p0_64), "p1_last": nmse(p1_all[-1], p1_64[-1])}
    del m64

    m16 = load(d16, torch.float32)  # f16 weights upcast exactly; math in float32
    f16_1 = all_logits(m16, PROMPTS[1])[-1]
    files[f"{arch}.f16.p1.last.f32"] = f32_bytes(f16_1)
    entry["nmse_torch_f16_weights_vs_f32_weights"] = {"p1_last": nmse(f16_1, p1_all[-1])}

    vecs, agree = tokenizer_vectors(d32)
    entry["tokenizer_vectors"] = vecs
    entry["auto_tokenizer_agrees"] = agree
    entry["files"] = {"p0_all": f"{arch}.p0.all.f32", "p1_last": f"{arch}.p1.last.f32",
                      "f16_p1_last": f"{arch}.f16.p1.last.f32"}
    return entry


def sensitivity(mllm, ref_dir):
    """Prints how far a deliberately broken variant lands from the reference
    (worst per-position NMSE over prompt 0): the C test's bound must lie
    below these, or it could not see the bug."""
    import torch

    def zero_bias(which):
        def f(m):
            for layer in m.model.layers:
                getattr(layer.self_attn, which).bias.data.zero_()
        return f

    def unit_k_norm(m):
        for layer in m.model.layers:
            layer.self_attn.k_norm.weight.data.fill_(1.0)

    def drop_norm(which):
        def f(m):
            for layer in m.model.layers:
                setattr(layer, which, torch.nn.Identity())
        return f

    def embed_scale(v):
        def f(m):
            e = m.model.embed_tokens
            e.embed_scale = torch.tensor(v, dtype=torch.float64)
            e.forward = lambda ids: torch.nn.functional.embedding(ids, e.weight).double().mul(v).float()
        return f

    def norm_minus_one(m):
        # An engine that forgot Gemma's 1 +: its norms multiply by w alone.
        for mod in m.modules():
            if type(mod).__name__ == "Gemma3RMSNorm":
                mod.weight.data.sub_(1.0)

    cases = [
        ("llama", "no llama3 rope scaling", lambda c: c.update(rope_scaling=None), None),
        ("llama", "llama3 high_freq_factor 4 -> 4.4", lambda c: c["rope_scaling"].update(high_freq_factor=4.4), None),
        ("llama", "rms_norm_eps 1e-5 -> 1e-6", lambda c: c.update(rms_norm_eps=1e-6), None),
        ("qwen2", "k_proj bias dropped", None, zero_bias("k_proj")),
        ("qwen2", "q_proj bias dropped", None, zero_bias("q_proj")),
        ("qwen2", "v_proj bias dropped", None, zero_bias("v_proj")),
        ("qwen2", "rope_theta 1e6 -> 1e4", lambda c: c.update(rope_theta=1e4), None),
        ("qwen3", "k_norm weight ignored (1.0)", None, unit_k_norm),
        ("smollm3", "no-RoPE layers rotated", lambda c: c.update(no_rope_layers=[1] * len(c["no_rope_layers"])),
         None),
        ("smollm3", "no RoPE in layers 2, 6 (not 3, 7)",
         lambda c: c.update(no_rope_layers=c["no_rope_layers"][1:] + c["no_rope_layers"][:1]), None),
        ("smollm3", "rope_theta 5e6 -> 1e6", lambda c: c.update(rope_theta=1e6), None),
        ("gemma3", "sliding window off (all layers global)",
         lambda c: c.update(layer_types=["full_attention"] * len(c["layer_types"])), None),
        ("gemma3", "sliding window never reached (4 -> 4096)", lambda c: c.update(sliding_window=4096), None),
        ("gemma3", "sliding window 4 -> 5 (off by one)", lambda c: c.update(sliding_window=5), None),
        ("gemma3", "sliding window 4 -> 3 (off by one)", lambda c: c.update(sliding_window=3), None),
        ("gemma3", "sliding layers at the global RoPE base", lambda c: c.update(rope_local_base_freq=c["rope_theta"]),
         None),
        ("gemma3", "global layers at the sliding RoPE base", lambda c: c.update(rope_theta=c["rope_local_base_freq"]),
         None),
        ("gemma3", "attention scale 1/sqrt(head_dim)", lambda c: c.update(query_pre_attn_scalar=c["head_dim"]), None),
        ("gemma3", "post-attention norm dropped", None, drop_norm("post_attention_layernorm")),
        ("gemma3", "post-FFN norm dropped", None, drop_norm("post_feedforward_layernorm")),
        ("gemma3", "embedding scale off (1)", None, embed_scale(1.0)),
        ("gemma3", "embedding scale sqrt(E) in float64", None, embed_scale(float(np.sqrt(96.0)))),
        ("gemma3", "norm weight w (not 1 + w)", None, norm_minus_one),
        ("gemma3", "GELU erf instead of tanh", lambda c: c.update(hidden_activation="gelu"), None),
    ]
    work = tempfile.mkdtemp(prefix="hfref-sens-")
    try:
        for arch, label, edit_cfg, edit_model in cases:
            d = os.path.join(work, f"{arch}-{len(os.listdir(work))}")
            synth(mllm, arch, "f32", d)
            if edit_cfg:
                with open(os.path.join(d, "config.json")) as f:
                    cfg = json.load(f)
                edit_cfg(cfg)
                with open(os.path.join(d, "config.json"), "w") as f:
                    json.dump(cfg, f)
            m = load(d, torch.float32)
            if edit_model:
                edit_model(m)
            got = all_logits(m, PROMPTS[0])
            want = np.fromfile(os.path.join(ref_dir, f"{arch}.p0.all.f32"), dtype="<f4").reshape(got.shape)
            worst = max(nmse(got[i], want[i]) for i in range(len(got)))
            print(f"{arch:7s} {label:40s} worst-position NMSE {worst:.3g}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mllm", default=os.path.join(ROOT, "build", "hfref", "mllm"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "hf-reference"))
    ap.add_argument("--verify", action="store_true", help="compare with --out instead of writing it")
    ap.add_argument("--sensitivity", action="store_true",
                    help="print the NMSE of deliberately broken variants against --out, write nothing")
    args = ap.parse_args()
    if args.sensitivity:
        return sensitivity(args.mllm, args.out)

    import torch

    torch.manual_seed(0)
    torch.set_num_threads(2)
    work = tempfile.mkdtemp(prefix="hfref-")
    files = {}
    try:
        ref = {"header": header(),
               "settings": {"vocab": VOCAB, "dtype": "float32", "attn_implementation": "eager",
                            "greedy": "one token per forward through the KV cache, argmax, ties to the lowest id",
                            "logits_files": "little-endian float32, row-major (position, vocab)"},
               "prompts": PROMPTS,
               "archs": [reference_arch(args.mllm, a, work, files) for a in ARCHS]}
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if args.verify:
        bad = 0
        for name, data in files.items():
            with open(os.path.join(args.out, name), "rb") as f:
                if f.read() != data:
                    print(f"DIFFERS: {name}")
                    bad += 1
        with open(os.path.join(args.out, "reference.json")) as f:
            old = json.load(f)
        for a, b in zip(old["archs"], ref["archs"]):
            for k in ("greedy_ids", "tokenizer_vectors", "sha256_f32", "sha256_f16"):
                if a[k] != b[k]:
                    print(f"DIFFERS: {a['arch']} {k}")
                    bad += 1
        print("verify:", "identical" if not bad else f"{bad} differences")
        return 1 if bad else 0

    os.makedirs(args.out, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data)
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        f.write(compact_json(ref) + "\n")
    for a in ref["archs"]:
        print(f"{a['arch']}: greedy {a['greedy_ids']} min margin {a['min_greedy_margin']:.3g}; "
              f"f32 vs f64 {a['nmse_torch_f32_vs_f64']}; f16 vs f32 weights "
              f"{a['nmse_torch_f16_weights_vs_f32_weights']}; AutoTokenizer agrees: {a['auto_tokenizer_agrees']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
