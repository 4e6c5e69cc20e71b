"""Exact-math Llama forward in numpy (float64) on dequantized GGUF weights.

A second, independent reference next to llama.cpp. llama.cpp quantizes the
activations to 8 bits inside every quantized matmul (Q8_1 for Q4_1 weights,
Q8_0 for the Q8_0 tied embedding), so its logits are "the quantized model as
llama.cpp computes it". This module computes the same quantized WEIGHTS with
float64 activations, i.e. the math the model file describes, so one can see
how far llama.cpp itself is from it (and an engine that keeps activations in
F32 can be tested against it tightly).

Weights are read and dequantized with the `gguf` package (llama.cpp's gguf-py,
pure numpy); the forward pass below is written from the Llama architecture:
RMSNorm, RoPE (llama.cpp "normal" mode: rotates the pairs (2i, 2i+1), which
is what GGUF llama files expect since the converter permutes q/k), grouped
query attention (q head h reads kv head h // (n_head / n_head_kv)), SwiGLU
FFN, tied output embedding when there is no output.weight.
"""

from __future__ import annotations

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


def _field(reader: GGUFReader, key: str):
    f = reader.fields[key]
    return f.parts[f.data[0]][0] if len(f.data) == 1 else [f.parts[i][0] for i in f.data]


class NumpyLlama:
    def __init__(self, path: str) -> None:
        r = GGUFReader(path)
        arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
        if arch != "llama":
            raise ValueError(f"{path}: architecture {arch}, expected llama")
        self.n_layer = int(_field(r, "llama.block_count"))
        self.n_embd = int(_field(r, "llama.embedding_length"))
        self.n_head = int(_field(r, "llama.attention.head_count"))
        self.n_head_kv = int(_field(r, "llama.attention.head_count_kv"))
        self.eps = float(_field(r, "llama.attention.layer_norm_rms_epsilon"))
        self.rope_base = float(_field(r, "llama.rope.freq_base"))
        self.head_dim = self.n_embd // self.n_head
        self.w: dict[str, np.ndarray] = {}
        for t in r.tensors:
            a = dequantize(t.data, t.tensor_type)
            # numpy shape: reversed ggml ne, i.e. [rows = out features, cols = in features]
            a = np.asarray(a, dtype=np.float64).reshape([int(n) for n in reversed(t.shape)])
            self.w[t.name] = a
        self.out = self.w.get("output.weight", self.w["token_embd.weight"])
        self.n_vocab = self.out.shape[0]
        self.reset()

    def reset(self) -> None:
        self.k_cache = [np.zeros((0, self.n_head_kv, self.head_dim)) for _ in range(self.n_layer)]
        self.v_cache = [np.zeros((0, self.n_head_kv, self.head_dim)) for _ in range(self.n_layer)]

    def _rms(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def _rope(self, x: np.ndarray, pos: np.ndarray) -> np.ndarray:
        # x [T, H, D]; pairs (2i, 2i+1) rotated by pos * base^(-2i/D)
        d = self.head_dim
        inv = self.rope_base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
        ang = pos[:, None].astype(np.float64) * inv[None, :]  # [T, D/2]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x0 * c - x1 * s
        out[..., 1::2] = x0 * s + x1 * c
        return out

    def forward(self, ids: list[int]) -> np.ndarray:
        """Appends ids to the cache; returns float64 logits [len(ids), n_vocab]."""
        w = self.w
        t = len(ids)
        p0 = self.k_cache[0].shape[0]
        pos = np.arange(p0, p0 + t)
        x = w["token_embd.weight"][np.asarray(ids)]
        group = self.n_head // self.n_head_kv
        scale = 1.0 / np.sqrt(self.head_dim)
        mask = np.triu(np.full((t, p0 + t), -np.inf), k=p0 + 1)  # query i sees keys <= p0+i
        for li in range(self.n_layer):
            b = f"blk.{li}."
            h = self._rms(x, w[b + "attn_norm.weight"])
            q = (h @ w[b + "attn_q.weight"].T).reshape(t, self.n_head, self.head_dim)
            k = (h @ w[b + "attn_k.weight"].T).reshape(t, self.n_head_kv, self.head_dim)
            v = (h @ w[b + "attn_v.weight"].T).reshape(t, self.n_head_kv, self.head_dim)
            q, k = self._rope(q, pos), self._rope(k, pos)
            self.k_cache[li] = K = np.concatenate([self.k_cache[li], k])
            self.v_cache[li] = V = np.concatenate([self.v_cache[li], v])
            att = np.empty((t, self.n_head, self.head_dim))
            for hd in range(self.n_head):
                kv = hd // group
                sc = q[:, hd, :] @ K[:, kv, :].T * scale + mask
                sc = np.exp(sc - sc.max(axis=1, keepdims=True))
                sc /= sc.sum(axis=1, keepdims=True)
                att[:, hd, :] = sc @ V[:, kv, :]
            x = x + att.reshape(t, self.n_embd) @ w[b + "attn_output.weight"].T
            h = self._rms(x, w[b + "ffn_norm.weight"])
            g = h @ w[b + "ffn_gate.weight"].T
            u = h @ w[b + "ffn_up.weight"].T
            x = x + (g / (1.0 + np.exp(-g)) * u) @ w[b + "ffn_down.weight"].T
        x = self._rms(x, w["output_norm.weight"])
        return x @ self.out.T

    def greedy(self, prompt_ids: list[int], n_gen: int) -> tuple[np.ndarray, list[int], list[float]]:
        """Returns (last prompt logits, greedy ids, top1-top2 margins); ties -> lowest id."""
        self.reset()
        logits = self.forward(prompt_ids)[-1]
        last = logits.copy()
        ids, margins = [], []
        for step in range(n_gen):
            tok = int(np.argmax(logits))
            top2 = np.partition(logits, -2)[-2:]
            ids.append(tok)
            margins.append(float(top2[1] - top2[0]))
            if step + 1 < n_gen:
                logits = self.forward([tok])[-1]
        return last, ids, margins
