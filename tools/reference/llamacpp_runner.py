"""Thin, deterministic driver of llama.cpp through llama-cpp-python's low-level API.

Used by smollm2_reference.py (makes reference data) and anchor_check.py (checks
that this llama.cpp build agrees with the ../shared/anchor-data references).

It reproduces the protocol of the anchor-data `refgen` tool on purpose, so the
two sets of references are produced the same way:
  * default model params (mmap), CPU only;
  * n_ctx = n_batch = n_ubatch = 512, 2 threads, F32 K and V cache, flash
    attention off (F16 KV / flash attention move logits by ~1e-4);
  * the whole prompt in ONE llama_decode call with logits at every position;
  * greedy decoding one token per llama_decode through the KV cache; step s
    takes the argmax of the logits at position n_prompt-1+s (ties -> lowest id,
    which is what numpy.argmax does) and feeds it back at position n_prompt+s.
No sampler and no RNG is involved, so there is no seed to fix.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from dataclasses import dataclass, field

import numpy as np

import llama_cpp
import llama_cpp.llama_cpp as L

GGML_TYPE_F32 = 0  # enum ggml_type


def _silence_logs() -> None:
    """llama.cpp logs a lot on load; keep stderr readable unless asked."""

    @L.llama_log_callback
    def _cb(level, text, user_data):  # noqa: ARG001 - signature fixed by C
        return None

    # keep a reference so the callback is not garbage-collected
    _silence_logs.cb = _cb  # type: ignore[attr-defined]
    L.llama_log_set(_cb, ctypes.c_void_p(0))


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class GreedyRun:
    prompt_ids: list[int]
    last_logits: np.ndarray  # float32 [n_vocab], logits at the last prompt position
    all_logits: np.ndarray  # float32 [n_prompt, n_vocab]
    greedy_ids: list[int] = field(default_factory=list)
    margins: list[float] = field(default_factory=list)  # top1 - top2 per greedy step
    step_top: list[list[tuple[int, float]]] = field(default_factory=list)
    step_logits: list[np.ndarray] = field(default_factory=list)


def top_k(logits: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Top-k (id, logit), by logit descending, ties by id ascending."""
    # lexsort: last key is primary -> sort by -logit, then by id
    order = np.lexsort((np.arange(logits.size), -logits.astype(np.float64)))
    return [(int(i), float(logits[i])) for i in order[:k]]


def margin_top1_top2(logits: np.ndarray) -> float:
    two = top_k(logits, 2)
    return float(np.float32(two[0][1]) - np.float32(two[1][1]))


class LlamaCppRunner:
    def __init__(self, model_path: str, n_ctx: int = 512, n_threads: int = 2,
                 verbose: bool = False, flash: bool = False) -> None:
        if not verbose:
            _silence_logs()
        L.llama_backend_init()
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        mparams = L.llama_model_default_params()
        mparams.n_gpu_layers = 0
        self.model = L.llama_model_load_from_file(model_path.encode(), mparams)
        if not self.model:
            raise RuntimeError(f"llama.cpp could not load {model_path}")
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = L.llama_vocab_n_tokens(self.vocab)

        cparams = L.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_ctx
        cparams.n_ubatch = n_ctx
        cparams.n_seq_max = 1
        cparams.n_threads = n_threads
        cparams.n_threads_batch = n_threads
        cparams.type_k = GGML_TYPE_F32
        cparams.type_v = GGML_TYPE_F32
        cparams.flash_attn_type = (L.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash
                                   else L.LLAMA_FLASH_ATTN_TYPE_DISABLED)
        cparams.offload_kqv = False
        cparams.no_perf = True
        self.cparams = cparams
        self.ctx = L.llama_init_from_model(self.model, cparams)
        if not self.ctx:
            raise RuntimeError("llama.cpp could not create a context")
        self.batch = L.llama_batch_init(n_ctx, 0, 1)

    # -- settings and metadata ---------------------------------------------
    def settings(self) -> dict:
        return {
            "n_ctx": self.n_ctx, "n_batch": self.n_ctx, "n_ubatch": self.n_ctx,
            "n_threads": self.n_threads, "n_threads_batch": self.n_threads,
            "type_k": "f32", "type_v": "f32", "flash_attn": "disabled",
            "n_gpu_layers": 0, "mmap": True,
            "prompt_decode": "whole prompt in one llama_decode, logits at every position",
            "greedy": "one token per llama_decode through the KV cache; argmax, ties -> lowest id; "
                      "no early stop at end-of-generation tokens",
            "sampler_seed": None,
        }

    def meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(4096)
        n = L.llama_model_meta_val_str(self.model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace") if n >= 0 else None

    def add_bos(self) -> bool:
        return bool(L.llama_vocab_get_add_bos(self.vocab))

    def is_eog(self, tok: int) -> bool:
        return bool(L.llama_vocab_is_eog(self.vocab, tok))

    @staticmethod
    def system_info() -> str:
        return L.llama_print_system_info().decode("utf-8", "replace").strip()

    # -- tokenizer -------------------------------------------------------------
    def tokenize(self, text: str | bytes, add_special: bool = True,
                 parse_special: bool = False) -> list[int]:
        data = text.encode("utf-8") if isinstance(text, str) else text
        cap = len(data) + 16
        buf = (L.llama_token * cap)()
        n = L.llama_tokenize(self.vocab, data, len(data), buf, cap, add_special, parse_special)
        if n < 0:
            cap = -n
            buf = (L.llama_token * cap)()
            n = L.llama_tokenize(self.vocab, data, len(data), buf, cap, add_special, parse_special)
        if n < 0:
            raise RuntimeError(f"llama_tokenize failed ({n})")
        return [int(buf[i]) for i in range(n)]

    def piece(self, tok: int, special: bool = True) -> bytes:
        buf = ctypes.create_string_buffer(256)
        n = L.llama_token_to_piece(self.vocab, tok, buf, len(buf), 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = L.llama_token_to_piece(self.vocab, tok, buf, len(buf), 0, special)
        return buf.raw[:n]

    def detokenize(self, ids: list[int], special: bool = True) -> bytes:
        """Concatenated pieces: exact bytes (may be invalid UTF-8 mid-character)."""
        return b"".join(self.piece(t, special) for t in ids)

    # -- forward ---------------------------------------------------------------
    def clear(self) -> None:
        L.llama_memory_clear(L.llama_get_memory(self.ctx), True)

    def _decode(self, ids: list[int], pos0: int) -> np.ndarray:
        """Decode ids at positions pos0.., logits requested at every position."""
        if not ids or pos0 + len(ids) > self.n_ctx:
            raise ValueError("empty batch or context overflow")
        b = self.batch
        b.n_tokens = len(ids)
        for i, t in enumerate(ids):
            b.token[i] = t
            b.pos[i] = pos0 + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1
        rc = L.llama_decode(self.ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")
        out = np.empty((len(ids), self.n_vocab), dtype=np.float32)
        for i in range(len(ids)):
            ptr = L.llama_get_logits_ith(self.ctx, i)
            out[i] = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))
        return out

    def greedy(self, prompt_ids: list[int], n_gen: int, k_top: int = 10,
               keep_step_logits: bool = False) -> GreedyRun:
        self.clear()
        all_logits = self._decode(prompt_ids, 0)
        run = GreedyRun(prompt_ids=list(prompt_ids), last_logits=all_logits[-1].copy(),
                        all_logits=all_logits)
        logits = run.last_logits
        pos = len(prompt_ids)
        for step in range(n_gen):
            tops = top_k(logits, max(k_top, 2))
            tok = tops[0][0]
            assert tok == int(np.argmax(logits))  # argmax: first (= lowest id) maximum
            run.greedy_ids.append(tok)
            run.margins.append(float(np.float32(tops[0][1]) - np.float32(tops[1][1])))
            run.step_top.append(tops[:k_top])
            if keep_step_logits:
                run.step_logits.append(logits.copy())
            if step + 1 < n_gen:
                logits = self._decode([tok], pos)[0]
                pos += 1
        return run

    def last_logits_tokenwise(self, prompt_ids: list[int]) -> np.ndarray:
        """Last-position logits with the prompt fed one token per llama_decode.

        Same math, other kernel path (matrix-vector instead of matrix-matrix),
        so the difference to the batched prompt shows how much llama.cpp's own
        quantized computation moves with summation order.
        """
        self.clear()
        logits = None
        for pos, tok in enumerate(prompt_ids):
            logits = self._decode([tok], pos)[0]
        return logits

    def close(self) -> None:
        if getattr(self, "batch", None) is not None:
            L.llama_batch_free(self.batch)
            self.batch = None
        if getattr(self, "ctx", None):
            L.llama_free(self.ctx)
            self.ctx = None
        if getattr(self, "model", None):
            L.llama_model_free(self.model)
            self.model = None


def package_info() -> dict:
    """What produced the numbers: package version and the llama.cpp it bundles."""
    return {
        "package": "llama-cpp-python",
        "version": llama_cpp.__version__,
        "llama_cpp_commit": BUNDLED_LLAMA_CPP.get(llama_cpp.__version__, "unknown"),
        "system_info": LlamaCppRunner.system_info(),
        "library": os.path.basename(getattr(L, "_lib", None)._name) if getattr(L, "_lib", None) else None,
    }


# llama-cpp-python's CHANGELOG names the llama.cpp commit each release vendors
# (the sdist carries no .git, so it cannot be read at run time).
BUNDLED_LLAMA_CPP = {
    "0.3.36": "ggml-org/llama.cpp@0c1e57098 (per llama-cpp-python CHANGELOG 0.3.36)",
}
