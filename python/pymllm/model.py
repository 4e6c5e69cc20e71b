"""pymllm.Model: a loaded model and the one session it generates with."""
import codecs
import ctypes
import json
import os
import queue
import threading
import time
import uuid

from . import _lib as L
from ._lib import MllmError


def _check(lib, status):
    """Raises MllmError for a failed call; must run on the calling thread
    (mllm_last_error() is per thread)."""
    if status != L.MLLM_OK:
        raise MllmError(status, lib.mllm_last_error().decode("utf-8", "replace"))


class _Collector:
    """The mllm_on_token callback: decodes pieces incrementally (so a
    stream and a plain string decode the same bytes the same way) and hands
    each text piece to `emit`. `stop` (a threading.Event) makes it ask the
    library to stop. An exception in `emit` is kept and stops generation."""

    def __init__(self, emit, stop=None):
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._emit = emit
        self._stop = stop
        self.error = None
        self.n_tokens = 0
        self.c_callback = L.ON_TOKEN(self._on_token)  # kept alive with self

    def _on_token(self, user, token_id, piece, length):
        try:
            if token_id >= 0:
                self.n_tokens += 1
            text = self._decoder.decode(ctypes.string_at(piece, length) if length else b"")
            if text:
                self._emit(text)
        except BaseException as e:  # never let an exception unwind into C
            self.error = e
            return 1
        return 1 if self._stop is not None and self._stop.is_set() else 0

    def finish(self):
        text = self._decoder.decode(b"", final=True)
        if text:
            self._emit(text)


class _StopFilter:
    """Cuts the text at the first of the stop strings: text that may be the
    start of one is held back until it is known not to be, so a stop string
    never leaks, in a stream or not. Setting `event` asks the generation to
    stop once one is found."""

    def __init__(self, stops, emit, event):
        if isinstance(stops, str):
            stops = [stops]
        self.stops = [s for s in (stops or []) if s]
        self.emit, self.event = emit, event
        self.buf, self.hit = "", False

    def feed(self, text):
        if self.hit:
            return
        if not self.stops:
            self.emit(text)
            return
        self.buf += text
        found = [self.buf.find(s) for s in self.stops if s in self.buf]
        if found:
            cut = min(found)
            if cut:
                self.emit(self.buf[:cut])
            self.buf, self.hit = "", True
            self.event.set()
            return
        keep = 0
        for s in self.stops:
            for k in range(min(len(s) - 1, len(self.buf)), keep, -1):
                if self.buf.endswith(s[:k]):
                    keep = k
                    break
        if len(self.buf) > keep:
            self.emit(self.buf[:len(self.buf) - keep])
            self.buf = self.buf[len(self.buf) - keep:]

    def finish(self):
        if not self.hit and self.buf:
            self.emit(self.buf)
        self.buf = ""


class _Grammar:
    """Owns an mllm_grammar handle."""

    def __init__(self, lib, handle):
        self._lib = lib
        self.handle = handle

    def __del__(self):
        if self.handle:
            self._lib.mllm_grammar_free(self.handle)
            self.handle = None


def _now():
    """Unix time for `created`; SOURCE_DATE_EPOCH pins it, as in libmllm."""
    pinned = os.environ.get("SOURCE_DATE_EPOCH")
    return int(pinned) if pinned and pinned.isdigit() else int(time.time())


class Model:
    """A model loaded from a GGUF file, a Hugging Face folder or a llama2.c
    checkpoint (with tokenizer=the tokenizer .bin).

    The model owns one session (KV cache of n_ctx tokens, 0 = min(the
    model's, 4096)). generate() starts from an empty session each time;
    chat() keeps the session, so a growing conversation only computes the
    new turn. Calls on one Model are serialised by a lock; use one Model per
    thread for parallel generation. Close it with close() or a with block.
    """

    def __init__(self, path, n_threads=None, tokenizer=None, n_ctx=0, chat_template=None,
                 library=None, exact=False):
        self._lib = L.load_library(library)
        self._m = None
        self._s = None
        self._lock = threading.RLock()
        lp = L.load_params_type()
        self._lib.mllm_load_default_params(ctypes.byref(lp))
        if n_threads:
            lp.n_threads = int(n_threads)
        if tokenizer is not None:
            lp.tokenizer_path = os.fsencode(tokenizer)
        if chat_template is not None:
            if not hasattr(lp, "chat_template"):
                raise MllmError(L.MLLM_ERR_UNSUPPORTED, "this libmllm has no chat_template option")
            lp.chat_template = chat_template.encode("utf-8")
        if exact:
            lp.exact = 1  # f32 activations in quantized matmuls: the float32 answer (slower)
        handle = ctypes.c_void_p()
        _check(self._lib, self._lib.mllm_model_load(os.fsencode(path), ctypes.byref(lp),
                                                    ctypes.byref(handle)))
        self._m = handle
        self._path = os.fspath(path)
        info = self.info
        self._n_ctx = int(n_ctx)
        self.last_chat_reused = 0

    # ---- lifetime ---------------------------------------------------------

    def close(self):
        """Frees the session and the model; later calls raise MllmError.
        A generation streaming in another thread is cancelled first."""
        if self._s is not None:
            self._lib.mllm_session_cancel(self._s)
        with self._lock:
            if self._s is not None:
                self._lib.mllm_session_free(self._s)
                self._s = None
            if self._m is not None:
                self._lib.mllm_model_free(self._m)
                self._m = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_lib", None) is not None and getattr(self, "_lock", None) is not None:
            self.close()

    def _model(self):
        if self._m is None:
            raise MllmError(L.MLLM_ERR_INVALID_ARG, "the model is closed")
        return self._m

    def _session(self):
        """The session, created on first use. Caller holds the lock."""
        if self._s is None:
            sp = L.SessionParams()
            self._lib.mllm_session_default_params(ctypes.byref(sp))
            sp.n_ctx = self._n_ctx
            handle = ctypes.c_void_p()
            _check(self._lib, self._lib.mllm_session_new(self._model(), ctypes.byref(sp),
                                                         ctypes.byref(handle)))
            self._s = handle
        return self._s

    # ---- facts ------------------------------------------------------------

    @property
    def info(self):
        """The model's config (mllm_model_info_json) as a dict."""
        m, need = self._model(), ctypes.c_size_t(0)
        st = self._lib.mllm_model_info_json(m, None, 0, ctypes.byref(need))
        if st != L.MLLM_ERR_BUFFER_TOO_SMALL:
            _check(self._lib, st)
        buf = ctypes.create_string_buffer(need.value)
        _check(self._lib, self._lib.mllm_model_info_json(m, buf, need.value, ctypes.byref(need)))
        return json.loads(buf.value.decode("utf-8"))

    @property
    def n_vocab(self):
        return self._lib.mllm_model_n_vocab(self._model())

    @property
    def n_ctx_train(self):
        return self._lib.mllm_model_n_ctx_train(self._model())

    @property
    def bos(self):
        """The BOS token id, -1 if none."""
        return self._lib.mllm_model_bos(self._model())

    @property
    def eos(self):
        """The EOS token id, -1 if none."""
        return self._lib.mllm_model_eos(self._model())

    @property
    def n_embd(self):
        """The size of the vectors embed() returns (the hidden size)."""
        self._need("mllm_model_n_embd")
        return self._lib.mllm_model_n_embd(self._model())

    @property
    def can_generate(self):
        """False for an embedding-only model (BERT): generate/chat raise."""
        self._need("mllm_model_can_generate")
        return bool(self._lib.mllm_model_can_generate(self._model()))

    # ---- embeddings -------------------------------------------------------

    def _need(self, name):
        if not L.has(self._lib, name):
            raise MllmError(L.MLLM_ERR_UNSUPPORTED, f"this libmllm has no {name}")

    def _embed_params(self, pooling, normalize, max_tokens):
        if pooling not in L.POOLING:
            raise MllmError(L.MLLM_ERR_INVALID_ARG,
                            f"pooling {pooling!r}: expected one of mean, cls, last (or None)")
        p = L.EmbedParams()
        self._lib.mllm_embed_default_params(ctypes.byref(p))
        p.pooling = L.POOLING[pooling]
        if normalize is not None:
            p.normalize = 1 if normalize else 0
        p.max_tokens = int(max_tokens)
        return p

    def embed(self, text, pooling=None, normalize=None, max_tokens=0):
        """The embedding of text (a str: one list of floats) or of each text of
        a list (a list of lists), as mllm_embed computes it: pooled as the
        model's sentence-transformers config says (pooling="mean"|"cls"|"last"
        overrides; decoders: mean), L2-normalised unless normalize=False,
        truncated at the model's token limit (or max_tokens)."""
        self._need("mllm_embed")
        if isinstance(text, (list, tuple)):
            return [self.embed(t, pooling, normalize, max_tokens) for t in text]
        if not isinstance(text, str):
            raise MllmError(L.MLLM_ERR_INVALID_ARG, "embed() takes a str or a list of str")
        p = self._embed_params(pooling, normalize, max_tokens)
        data = text.encode("utf-8")
        n = self._lib.mllm_model_n_embd(self._model())
        out = (ctypes.c_float * max(n, 1))()
        got = ctypes.c_size_t(0)
        with self._lock:
            _check(self._lib, self._lib.mllm_embed(self._model(), data, len(data), ctypes.byref(p), out, n,
                                                   ctypes.byref(got)))
        return list(out[:got.value])

    def embed_tokens(self, text, pooling=None, max_tokens=0):
        """The token ids embed() would use for text (special tokens added,
        truncated)."""
        self._need("mllm_embed_tokenize")
        p = self._embed_params(pooling, None, max_tokens)
        data = text.encode("utf-8")
        m, n = self._model(), ctypes.c_size_t(0)
        st = self._lib.mllm_embed_tokenize(m, data, len(data), ctypes.byref(p), None, 0, ctypes.byref(n))
        if st != L.MLLM_ERR_BUFFER_TOO_SMALL:
            _check(self._lib, st)
        ids = (ctypes.c_int32 * max(n.value, 1))()
        _check(self._lib, self._lib.mllm_embed_tokenize(m, data, len(data), ctypes.byref(p), ids, n.value,
                                                        ctypes.byref(n)))
        return list(ids[:n.value])

    # ---- tokens -----------------------------------------------------------

    def tokenize(self, text, add_special=True):
        """The token ids of text (BOS first when add_special and the model
        uses one; special-token text such as "<|im_start|>" is parsed)."""
        data = text.encode("utf-8")
        m, n = self._model(), ctypes.c_size_t(0)
        st = self._lib.mllm_tokenize(m, data, len(data), int(bool(add_special)), None, 0,
                                     ctypes.byref(n))
        if st != L.MLLM_ERR_BUFFER_TOO_SMALL:
            _check(self._lib, st)
        ids = (ctypes.c_int32 * max(n.value, 1))()
        _check(self._lib, self._lib.mllm_tokenize(m, data, len(data), int(bool(add_special)), ids,
                                                  n.value, ctypes.byref(n)))
        return list(ids[:n.value])

    def token_to_bytes(self, token_id):
        """The bytes of one token (may be part of a UTF-8 character)."""
        m, n = self._model(), ctypes.c_size_t(0)
        buf = ctypes.create_string_buffer(256)
        st = self._lib.mllm_token_to_piece(m, int(token_id), buf, len(buf), ctypes.byref(n))
        if st == L.MLLM_ERR_BUFFER_TOO_SMALL:
            buf = ctypes.create_string_buffer(n.value)
            st = self._lib.mllm_token_to_piece(m, int(token_id), buf, len(buf), ctypes.byref(n))
        _check(self._lib, st)
        return buf.raw[:n.value]

    def detokenize(self, ids, skip_special=True):
        """The text of ids (mllm_detokenize): skip_special drops control
        tokens (BOS, EOS, <|im_end|> ...); the SentencePiece dummy-prefix
        space is removed, so detokenize(tokenize(s)) == s."""
        ids = [int(i) for i in ids]
        arr = (ctypes.c_int32 * max(len(ids), 1))(*ids)
        m, n = self._model(), ctypes.c_size_t(0)
        buf = ctypes.create_string_buffer(max(16, 8 * len(ids)))
        st = self._lib.mllm_detokenize(m, arr, len(ids), int(bool(skip_special)), buf, len(buf), ctypes.byref(n))
        if st == L.MLLM_ERR_BUFFER_TOO_SMALL:
            buf = ctypes.create_string_buffer(n.value + 1)
            st = self._lib.mllm_detokenize(m, arr, len(ids), int(bool(skip_special)), buf, len(buf),
                                           ctypes.byref(n))
        _check(self._lib, st)
        return buf.raw[:n.value].decode("utf-8", "replace")

    # ---- generation -------------------------------------------------------

    def _grammar(self, grammar, json_schema):
        """An mllm_grammar for a GBNF text or a JSON Schema (a dict or its
        JSON text), freed when the returned object is."""
        if grammar is not None and json_schema is not None:
            raise ValueError("give grammar or json_schema, not both")
        h = ctypes.c_void_p()
        if grammar is not None:
            st = self._lib.mllm_grammar_new(grammar.encode("utf-8"), None, ctypes.byref(h))
        else:
            text = json_schema if isinstance(json_schema, str) else json.dumps(json_schema)
            st = self._lib.mllm_grammar_from_json_schema(text.encode("utf-8"), ctypes.byref(h))
        _check(self._lib, st)
        return _Grammar(self._lib, h)

    def _sampling(self, max_tokens=128, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05,
                  repeat_penalty=1.0, repeat_last_n=64, seed=0, ignore_eos=False, grammar=None,
                  json_schema=None):
        sp = L.Sampling()
        self._lib.mllm_sampling_default(ctypes.byref(sp))
        sp.max_tokens = int(max_tokens)
        sp.temperature = float(temperature)
        sp.top_k = int(top_k)
        sp.top_p = float(top_p)
        sp.min_p = float(min_p)
        sp.repeat_penalty = float(repeat_penalty)
        sp.repeat_last_n = int(repeat_last_n)
        sp.seed = int(seed)
        sp.ignore_eos = int(bool(ignore_eos))
        if grammar is not None or json_schema is not None:
            sp._grammar = self._grammar(grammar, json_schema)  # lives as long as sp
            sp.grammar = sp._grammar.handle
        return sp

    def generate(self, prompt, max_tokens=128, temperature=0.8, top_k=40, top_p=0.95,
                 min_p=0.05, repeat_penalty=1.0, seed=0, stream=False, repeat_last_n=64,
                 ignore_eos=False, stop=None, grammar=None, json_schema=None):
        """Continues prompt (a str, or a list of token ids used as they are)
        from an empty session. Returns the generated text (without the
        prompt), or with stream=True an iterator of text pieces that join to
        that same text. temperature=0 is greedy; same seed, same text.
        stop: a string or a list of strings; the text ends before the first
        one that appears (which is not included), and generation stops.
        grammar (GBNF text, llama.cpp's format) or json_schema (a dict or
        JSON text) constrains the text (docs/grammar.md); chat() takes them
        too. A bad one raises MllmError naming the place."""
        sp = self._sampling(max_tokens, temperature, top_k, top_p, min_p, repeat_penalty,
                            repeat_last_n, seed, ignore_eos, grammar, json_schema)
        if isinstance(prompt, str):
            data = prompt.encode("utf-8")

            def call(s, cb):
                return self._lib.mllm_generate(s, data, ctypes.byref(sp), cb, None)
        else:
            ids = (ctypes.c_int32 * max(len(prompt), 1))(*prompt)
            n = len(prompt)

            def call(s, cb):
                return self._lib.mllm_generate_ids(s, ids, n, ctypes.byref(sp), cb, None)
        return self._run(call, stream, reset=True, stop=stop)

    def chat_render(self, messages):
        """The prompt text the model's chat template makes of messages (a
        list of {"role", "content"} dicts, or a dict of template variables
        with a "messages" key), ending with the assistant's turn opening."""
        fn = self._optional("mllm_chat_render")
        conv = json.dumps(messages).encode("utf-8")
        m, need = self._model(), ctypes.c_size_t(0)
        st = fn(m, conv, None, 0, ctypes.byref(need))
        if st != L.MLLM_ERR_BUFFER_TOO_SMALL:
            _check(self._lib, st)
        buf = ctypes.create_string_buffer(need.value)
        _check(self._lib, fn(m, conv, buf, need.value, ctypes.byref(need)))
        return buf.raw[:need.value - 1].decode("utf-8", "replace")  # a message's NUL is kept

    def chat(self, messages, stream=False, **sampling):
        """The assistant's reply to messages (see chat_render), sampled with
        the keyword arguments of generate(). The session keeps the
        conversation: when messages extends the previous call's (with the
        reply appended), only the new tokens are computed;
        last_chat_reused says how many prompt tokens were reused."""
        stop = sampling.pop("stop", None)
        return self._run(self._chat_call(messages, self._sampling(**sampling)), stream, reset=False, stop=stop)

    def _chat_call(self, messages, sp):
        """call(session, callback) for _run: mllm_chat on messages, which
        records how many prompt tokens the cache gave (last_chat_reused)."""
        fn = self._optional("mllm_chat")
        conv = json.dumps(messages).encode("utf-8")
        reused = ctypes.c_size_t(0)

        def call(s, cb):
            st = fn(s, conv, ctypes.byref(sp), cb, None, ctypes.byref(reused))
            self.last_chat_reused = reused.value
            return st
        return call

    def chat_tokenize(self, messages):
        """The token ids chat() evaluates for messages: the template's own
        markup becomes special tokens, text from the messages never does."""
        fn = self._optional("mllm_chat_tokenize")
        conv = json.dumps(messages).encode("utf-8")
        n = ctypes.c_size_t(0)
        st = fn(self._model(), conv, None, 0, ctypes.byref(n))
        if st != L.MLLM_ERR_BUFFER_TOO_SMALL:
            _check(self._lib, st)
        ids = (ctypes.c_int32 * max(n.value, 1))()
        _check(self._lib, fn(self._model(), conv, ids, n.value, ctypes.byref(n)))
        return list(ids[:n.value])

    def create_chat_completion(self, messages, max_tokens=None, temperature=0.2, top_p=0.95, top_k=40,
                               min_p=0.05, repeat_penalty=1.0, seed=None, stop=None, stream=False,
                               model=None):
        """An OpenAI-style chat completion (as llama-cpp-python's
        Llama.create_chat_completion): a dict {"id", "object":
        "chat.completion", "created", "model", "choices": [{"index": 0,
        "message": {"role": "assistant", "content"}, "finish_reason"}],
        "usage": {"prompt_tokens", "completion_tokens", "total_tokens"}}, or
        with stream=True an iterator of "chat.completion.chunk" dicts (a role
        delta, content deltas, then one with finish_reason). finish_reason is
        "stop" (end of the answer or a stop string) or "length" (max_tokens,
        or the context filled). max_tokens=None: until the answer ends or
        the context is full. seed=None: a random one."""
        n_prompt = len(self.chat_tokenize(messages))
        limit = max(1, self._ctx_size() - n_prompt) if max_tokens is None else int(max_tokens)
        sp = self._sampling(limit, temperature, top_k, top_p, min_p, repeat_penalty, 64,
                            int.from_bytes(os.urandom(7), "little") if seed is None else seed, False)
        call = self._chat_call(messages, sp)
        cid, created = "chatcmpl-" + uuid.uuid4().hex[:24], _now()
        name = model or os.path.basename(self._path)
        info = {}

        def finish_reason():
            if info.get("context_full") or (not info.get("stopped") and info.get("n", 0) >= limit):
                return "length"
            return "stop"

        def chunk(delta, reason=None):
            return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": name,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}
        if stream:
            def gen():
                yield chunk({"role": "assistant", "content": ""})
                for piece in self._run(call, True, reset=False, stop=stop, info=info):
                    yield chunk({"content": piece})
                yield chunk({}, finish_reason())
            return gen()
        text = self._run(call, False, reset=False, stop=stop, info=info)
        n_gen = info.get("n", 0)
        return {"id": cid, "object": "chat.completion", "created": created, "model": name,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": finish_reason()}],
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_gen,
                          "total_tokens": n_prompt + n_gen}}

    def _ctx_size(self):
        """The session's context length in tokens."""
        with self._lock:
            return int(self._lib.mllm_session_n_ctx(self._session()))

    def _optional(self, name):
        if not L.has(self._lib, name):
            raise MllmError(L.MLLM_ERR_UNSUPPORTED, f"this libmllm has no {name}")
        return getattr(self._lib, name)

    def _run(self, call, stream, reset, stop=None, info=None):
        """Runs call(session, callback). info (a dict, may be None) receives
        n (tokens generated), stopped (a stop string ended it) and
        context_full (the context filled: not an error when info is given,
        which create_chat_completion reports as finish_reason "length")."""
        if stream:
            return self._stream(call, reset, stop, info)
        pieces = []
        event = threading.Event()
        filt = _StopFilter(stop, pieces.append, event)
        col = _Collector(filt.feed, event)
        with self._lock:
            s = self._session()
            if reset:
                self._lib.mllm_session_reset(s)
            st = call(s, col.c_callback)
            if col.error is not None:
                raise col.error
            if not (info is not None and st == L.MLLM_ERR_CONTEXT_FULL):
                _check(self._lib, st)
        col.finish()
        filt.finish()
        if info is not None:
            info.update(n=col.n_tokens, stopped=filt.hit, context_full=st == L.MLLM_ERR_CONTEXT_FULL)
        return "".join(pieces)

    def _stream(self, call, reset, stop_strings=None, info=None):
        """Runs the generation in a worker thread; its callback feeds a
        queue that this generator drains. Closing the generator early stops
        the generation."""
        q, stop, done = queue.Queue(), threading.Event(), object()
        filt = _StopFilter(stop_strings, q.put, stop)
        col = _Collector(filt.feed, stop)

        def work():
            result = None
            try:
                with self._lock:
                    s = self._session()
                    if reset:
                        self._lib.mllm_session_reset(s)
                    st = call(s, col.c_callback)
                    if col.error is not None:
                        result = col.error
                    elif st == L.MLLM_ERR_CONTEXT_FULL and info is not None:
                        pass
                    elif st != L.MLLM_OK and not (stop.is_set() and st == L.MLLM_ERR_CANCELLED):
                        result = MllmError(st, self._lib.mllm_last_error().decode("utf-8",
                                                                                  "replace"))
                col.finish()
                filt.finish()
                if info is not None:
                    info.update(n=col.n_tokens, stopped=filt.hit, context_full=st == L.MLLM_ERR_CONTEXT_FULL)
            except BaseException as e:
                result = e
            q.put((done, result))

        worker = threading.Thread(target=work, name="pymllm-generate", daemon=True)
        worker.start()
        try:
            while True:
                item = q.get()
                if isinstance(item, tuple) and item[0] is done:
                    if item[1] is not None:
                        raise item[1]
                    return
                yield item
        finally:
            if worker.is_alive():
                stop.set()
                if self._s is not None:
                    self._lib.mllm_session_cancel(self._s)
            worker.join()
