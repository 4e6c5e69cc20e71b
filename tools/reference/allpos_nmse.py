#!/usr/bin/env python3
"""Distance to the float32 answer at EVERY prompt position, not only the last.

The last-position NMSE of one prompt is one draw of a very skewed variable
(the activation rounding's error is carried along a few sensitive directions,
so a single prompt can land 10x above or below its average), and a handful of
prompts cannot tell two engines with the same kind of rounding apart. Every
position of every prompt is a draw too: averaging over all of them measures
the rounding itself.

For each prompt of a tests/data/gguf-f32/<model>/reference.json:
  - the float32 answer: transformers loads the GGUF with gguf_file= and
    dequantizes it (as gguf_f32_reference.py), logits at every position;
  - llama.cpp (llama-cpp-python, llamacpp_runner.py's protocol: F32 KV cache,
    the prompt in one llama_decode, logits at every position), flash
    attention off and on;
  - mllm, if --mllm-lib names libmllm.so: the prompt one token per
    mllm_session_eval (its batch invariance makes these the logits of a
    one-shot prefill, bit for bit); --exact for its exact mode.
Prints per prompt and overall the mean NMSE over positions (whole
vocabulary), and the fraction of positions whose top token differs from
the reference's where the reference's top-2 margin is >= 0.5.

  python3 tools/reference/allpos_nmse.py --model FILE.gguf \
      --reference tests/data/gguf-f32/gemma3-270m/reference.json \
      --mllm-lib build/release/libmllm.so
"""
import argparse, ctypes, json, os, sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def nmse_rows(a, r):
    a = a.astype(np.float64)
    r = r.astype(np.float64)
    num = ((a - r) ** 2).sum(axis=1)
    den = ((r - r.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    return num / den


def flips(a, r):
    top2 = np.sort(r, axis=1)[:, -2:]
    sure = (top2[:, 1] - top2[:, 0]) >= 0.5
    return int(((a.argmax(axis=1) != r.argmax(axis=1)) & sure).sum()), int(sure.sum())


class Mllm:
    def __init__(self, lib, model, exact):
        L = ctypes.CDLL(lib)
        vp = ctypes.c_void_p
        L.mllm_load_default_params.argtypes = [vp]
        L.mllm_model_load.argtypes = [ctypes.c_char_p, vp, ctypes.POINTER(vp)]
        L.mllm_session_new.argtypes = [vp, vp, ctypes.POINTER(vp)]
        L.mllm_session_eval.argtypes = [vp, ctypes.POINTER(ctypes.c_int32), ctypes.c_size_t]
        L.mllm_session_logits.argtypes = [vp]
        L.mllm_session_logits.restype = ctypes.POINTER(ctypes.c_float)
        L.mllm_model_n_vocab.argtypes = [vp]
        L.mllm_session_free.argtypes = [vp]
        L.mllm_last_error.restype = ctypes.c_char_p

        class LP(ctypes.Structure):  # the head of mllm_load_params (include/mllm/mllm.h)
            _fields_ = [("struct_size", ctypes.c_uint32), ("n_threads", ctypes.c_int), ("use_mmap", ctypes.c_int),
                        ("tok", ctypes.c_char_p), ("tmpl", ctypes.c_char_p), ("exact", ctypes.c_int)]
        lp = LP()
        L.mllm_load_default_params(ctypes.byref(lp))
        lp.exact = 1 if exact else 0
        lp.n_threads = 2
        self.m = vp()
        if L.mllm_model_load(model.encode(), ctypes.byref(lp), ctypes.byref(self.m)) != 0:
            raise RuntimeError(L.mllm_last_error().decode())
        self.L = L
        self.nv = L.mllm_model_n_vocab(self.m)

    def all_logits(self, ids):
        L, s = self.L, ctypes.c_void_p()
        assert L.mllm_session_new(self.m, None, ctypes.byref(s)) == 0, L.mllm_last_error()
        out = np.empty((len(ids), self.nv), dtype=np.float32)
        for i, t in enumerate(ids):
            one = (ctypes.c_int32 * 1)(t)
            assert L.mllm_session_eval(s, one, 1) == 0, L.mllm_last_error()
            out[i] = np.ctypeslib.as_array(L.mllm_session_logits(s), shape=(self.nv,))
        L.mllm_session_free(s)
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--mllm-lib")
    ap.add_argument("--exact", action="store_true", help="mllm's exact mode too")
    ap.add_argument("--no-llamacpp", action="store_true")
    a = ap.parse_args()
    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(2)
    prompts = json.load(open(a.reference))["prompts"]
    d, f = os.path.split(os.path.abspath(a.model))
    ref_model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32).eval()
    engines = []
    if not a.no_llamacpp:
        from llamacpp_runner import LlamaCppRunner
        n_ctx = max(len(p["ids"]) for p in prompts) + 8
        for flash in (False, True):
            engines.append(("llama.cpp flash " + ("on" if flash else "off"), LlamaCppRunner(a.model, n_ctx=n_ctx, flash=flash)))
    if a.mllm_lib:
        engines.append(("mllm", Mllm(a.mllm_lib, a.model, False)))
        if a.exact:
            engines.append(("mllm --exact", Mllm(a.mllm_lib, a.model, True)))
    tot = {n: [] for n, _ in engines}
    fl = {n: [0, 0] for n, _ in engines}
    for p in prompts:
        with torch.no_grad():
            ref = ref_model(torch.tensor([p["ids"]])).logits[0].float().numpy()
        line = [p["name"], "%d pos" % len(p["ids"])]
        for name, e in engines:
            if isinstance(e, Mllm):
                got = e.all_logits(p["ids"])
            else:
                e.clear()
                got = np.asarray(e._decode(p["ids"], 0))
            v = nmse_rows(got, ref)
            tot[name].extend(v.tolist())
            k, n = flips(got, ref)
            fl[name][0] += k
            fl[name][1] += n
            line.append("%s %.2e" % (name, v.mean()))
            del got
        print("  ".join(line), flush=True)
        del ref
    for name, _ in engines:
        v = np.array(tot[name])
        print("%-20s positions %d  mean NMSE %.3e  median %.3e  last-position-free top-1 flips (margin>=0.5) %d/%d"
              % (name, v.size, v.mean(), np.median(v), fl[name][0], fl[name][1]))


if __name__ == "__main__":
    main()
