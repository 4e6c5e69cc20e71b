#!/usr/bin/env python3
"""Reference encoder states and decoder logits of Whisper tiny.en on
../shared/models/audio/jfk.wav for tests/unit/test_whisper.c, computed by
transformers' WhisperForConditionalGeneration (float32, eager attention) on
the weights of the CTranslate2 folder (scripts/fetch-whisper.sh
whisper-tiny.en), read here from model.bin with a parser of our own and
mapped to the HF layout: CTranslate2 fuses the self-attention Q/K/V
(linear_0 = [q; k; v]) and the cross-attention K/V (linear_1 = [k; v]);
HF's k_proj has no bias (CTranslate2 stores zeros there, checked).

The mel is transformers' WhisperFeatureExtractor's. The decoder is run
teacher-forced on <|startoftranscript|> <|notimestamps|> followed by the
greedy transcript that HF's own generate() gives (no timestamps), so the
test can also check that our greedy loop picks the same tokens.

Written to tests/data/whisper/ (small on purpose):
  jfk_tiny_enc.f32     encoder states, rows 0, 50, 100, ... (30 x 384 f32)
  jfk_tiny_logits.f32  logits at the STEPS below, every 8th vocabulary id
  jfk_tiny.json        shapes, tokens, steps, argmax per step, full-array
                       stats, the transcript, package versions

  whisper_reference.py [--model DIR] [--wav PATH] [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct

import numpy as np
import torch
import transformers
from transformers import WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ENC_ROW_STEP = 50
VOCAB_STEP = 8
DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}


def read_ct2(path: str) -> dict:
    buf = open(path, "rb").read()
    o = 0

    def u(fmt):
        nonlocal o
        v = struct.unpack_from(fmt, buf, o)
        o += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def s():
        nonlocal o
        n = u("<H")
        v = buf[o:o + n - 1].decode()
        o += n
        return v

    version = u("<I")
    assert version >= 4, version
    s(), u("<I")  # spec name, revision
    out = {}
    for _ in range(u("<I")):
        name = s()
        rank = u("<B")
        dims = [u("<I") for _ in range(rank)]
        dt = u("<B")
        nb = u("<I")
        out[name] = np.frombuffer(buf, DTYPES[dt], nb // np.dtype(DTYPES[dt]).itemsize, o).reshape(dims)
        o += nb
    for _ in range(u("<I")):
        a, t = s(), s()
        out[a] = out[t]
    return out


def hf_state(v: dict, n_enc: int, n_dec: int, d: int) -> dict:
    f = lambda a: torch.from_numpy(np.array(a, dtype=np.float32))
    sd = {}
    sd["model.encoder.conv1.weight"] = f(v["encoder/conv1/weight"])
    sd["model.encoder.conv1.bias"] = f(v["encoder/conv1/bias"])
    sd["model.encoder.conv2.weight"] = f(v["encoder/conv2/weight"])
    sd["model.encoder.conv2.bias"] = f(v["encoder/conv2/bias"])
    sd["model.encoder.embed_positions.weight"] = f(v["encoder/position_encodings/encodings"])
    sd["model.decoder.embed_positions.weight"] = f(v["decoder/position_encodings/encodings"])
    sd["model.decoder.embed_tokens.weight"] = f(v["decoder/embeddings/weight"])
    sd["proj_out.weight"] = sd["model.decoder.embed_tokens.weight"]
    for side, n in (("encoder", n_enc), ("decoder", n_dec)):
        sd[f"model.{side}.layer_norm.weight"] = f(v[f"{side}/layer_norm/gamma"])
        sd[f"model.{side}.layer_norm.bias"] = f(v[f"{side}/layer_norm/beta"])
        for i in range(n):
            c, h = f"{side}/layer_{i}", f"model.{side}.layers.{i}"
            qkv_w, qkv_b = f(v[f"{c}/self_attention/linear_0/weight"]), f(v[f"{c}/self_attention/linear_0/bias"])
            assert torch.all(qkv_b[d:2 * d] == 0)
            for j, p in enumerate("qkv"):
                sd[f"{h}.self_attn.{p}_proj.weight"] = qkv_w[j * d:(j + 1) * d]
                if p != "k":
                    sd[f"{h}.self_attn.{p}_proj.bias"] = qkv_b[j * d:(j + 1) * d]
            sd[f"{h}.self_attn.out_proj.weight"] = f(v[f"{c}/self_attention/linear_1/weight"])
            sd[f"{h}.self_attn.out_proj.bias"] = f(v[f"{c}/self_attention/linear_1/bias"])
            sd[f"{h}.self_attn_layer_norm.weight"] = f(v[f"{c}/self_attention/layer_norm/gamma"])
            sd[f"{h}.self_attn_layer_norm.bias"] = f(v[f"{c}/self_attention/layer_norm/beta"])
            sd[f"{h}.fc1.weight"] = f(v[f"{c}/ffn/linear_0/weight"])
            sd[f"{h}.fc1.bias"] = f(v[f"{c}/ffn/linear_0/bias"])
            sd[f"{h}.fc2.weight"] = f(v[f"{c}/ffn/linear_1/weight"])
            sd[f"{h}.fc2.bias"] = f(v[f"{c}/ffn/linear_1/bias"])
            sd[f"{h}.final_layer_norm.weight"] = f(v[f"{c}/ffn/layer_norm/gamma"])
            sd[f"{h}.final_layer_norm.bias"] = f(v[f"{c}/ffn/layer_norm/beta"])
            if side == "decoder":
                sd[f"{h}.encoder_attn.q_proj.weight"] = f(v[f"{c}/attention/linear_0/weight"])
                sd[f"{h}.encoder_attn.q_proj.bias"] = f(v[f"{c}/attention/linear_0/bias"])
                kv_w, kv_b = f(v[f"{c}/attention/linear_1/weight"]), f(v[f"{c}/attention/linear_1/bias"])
                assert torch.all(kv_b[:d] == 0)
                sd[f"{h}.encoder_attn.k_proj.weight"] = kv_w[:d]
                sd[f"{h}.encoder_attn.v_proj.weight"] = kv_w[d:]
                sd[f"{h}.encoder_attn.v_proj.bias"] = kv_b[d:]
                sd[f"{h}.encoder_attn.out_proj.weight"] = f(v[f"{c}/attention/linear_2/weight"])
                sd[f"{h}.encoder_attn.out_proj.bias"] = f(v[f"{c}/attention/linear_2/bias"])
                sd[f"{h}.encoder_attn_layer_norm.weight"] = f(v[f"{c}/attention/layer_norm/gamma"])
                sd[f"{h}.encoder_attn_layer_norm.bias"] = f(v[f"{c}/attention/layer_norm/beta"])
    return sd


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.environ.get("MLLM_WHISPER_TINY_DIR",
                                                      os.path.expanduser("~/.cache/mllm/whisper-tiny.en")))
    ap.add_argument("--wav", default=os.path.join(ROOT, "..", "shared", "models", "audio", "jfk.wav"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "whisper"))
    args = ap.parse_args()
    torch.manual_seed(0)
    v = read_ct2(os.path.join(args.model, "model.bin"))
    d = v["encoder/conv1/weight"].shape[0]
    n_enc = sum(1 for k in v if k.startswith("encoder/layer_") and k.endswith("ffn/linear_0/weight"))
    n_dec = sum(1 for k in v if k.startswith("decoder/layer_") and k.endswith("ffn/linear_0/weight"))
    heads = int(v["encoder/num_heads"])
    vocab = v["decoder/embeddings/weight"].shape[0]
    cfg = WhisperConfig(vocab_size=vocab, num_mel_bins=v["encoder/conv1/weight"].shape[1], d_model=d,
                        encoder_layers=n_enc, decoder_layers=n_dec, encoder_attention_heads=heads,
                        decoder_attention_heads=heads, encoder_ffn_dim=v["encoder/layer_0/ffn/linear_0/weight"].shape[0],
                        decoder_ffn_dim=v["decoder/layer_0/ffn/linear_0/weight"].shape[0],
                        max_source_positions=1500, max_target_positions=448, decoder_start_token_id=50257,
                        eos_token_id=50256, pad_token_id=50256, bos_token_id=50256)
    cfg._attn_implementation = "eager"
    model = WhisperForConditionalGeneration(cfg).eval()
    missing, unexpected = model.load_state_dict(hf_state(v, n_enc, n_dec, d), strict=False)
    assert not unexpected and all("embed_positions" in m or m == "proj_out.weight" for m in missing), (missing, unexpected)

    import wave
    with wave.open(args.wav, "rb") as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    audio = pcm.astype(np.float32) / 32768.0
    fe = WhisperFeatureExtractor(feature_size=cfg.num_mel_bins)
    mel = torch.from_numpy(fe(audio, sampling_rate=16000, return_tensors="np")["input_features"])
    cfg_json = json.load(open(os.path.join(args.model, "config.json")))
    with torch.no_grad():
        enc = model.model.encoder(mel).last_hidden_state[0]
        # Greedy, no timestamps: SOT, <|notimestamps|>, then argmax with the
        # suppress lists of config.json (the begin list on the first step).
        tokens = [50257, 50362]
        logits_all = []
        for step in range(100):
            out = model(encoder_outputs=(enc[None],), decoder_input_ids=torch.tensor([tokens]))
            lg = out.logits[0, -1].clone()
            logits_all.append(lg.numpy().copy())
            lg[cfg_json["suppress_ids"]] = -float("inf")
            if step == 0:
                lg[cfg_json["suppress_ids_begin"]] = -float("inf")
            nxt = int(lg.argmax())
            if nxt == 50256:
                break
            tokens.append(nxt)
    from transformers import PreTrainedTokenizerFast
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(args.model, "tokenizer.json"))
    text = tok.decode(tokens[2:])
    print("transcript:", repr(text))
    n = len(logits_all)
    steps = sorted(set([0, 1, 2, n // 2, n - 1]))
    os.makedirs(args.out, exist_ok=True)
    enc_np = enc.numpy()
    enc_np[::ENC_ROW_STEP].astype("<f4").tofile(os.path.join(args.out, "jfk_tiny_enc.f32"))
    np.stack([logits_all[s][::VOCAB_STEP] for s in steps]).astype("<f4").tofile(
        os.path.join(args.out, "jfk_tiny_logits.f32"))
    meta = {
        "wav": "jfk.wav",
        "wav_sha256": hashlib.sha256(open(args.wav, "rb").read()).hexdigest(),
        "model_bin_sha256": hashlib.sha256(open(os.path.join(args.model, "model.bin"), "rb").read()).hexdigest(),
        "enc_rows": int(enc_np.shape[0]), "d_model": int(d), "enc_row_step": ENC_ROW_STEP,
        "enc_mean": float(enc_np.mean()), "enc_std": float(enc_np.std()),
        "vocab": int(vocab), "vocab_step": VOCAB_STEP,
        "tokens": tokens, "steps": steps, "argmax": [int(np.argmax(logits_all[s])) for s in steps],
        "transcript": text,
        "transformers": transformers.__version__, "torch": torch.__version__, "numpy": np.__version__,
    }
    json.dump(meta, open(os.path.join(args.out, "jfk_tiny.json"), "w"), indent=1)
    print("steps", steps, "written to", args.out)


if __name__ == "__main__":
    main()
