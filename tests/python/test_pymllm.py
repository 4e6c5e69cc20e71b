"""pymllm against a synthetic Qwen3 (made by `mllm synth`) and stories260K:
the CLI's tokenizer output and the llama2.c golden are the references."""
import ctypes
import json
import os
import subprocess
import sys
import threading

import pytest

import pymllm
from pymllm import _lib

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXTS = ["Hello world", "Grüße, 世界! 123", "  two  spaces\nand a newline\t", ""]


def cli_tokenize(mllm_bin, model, text, tokenizer=None):
    cmd = [mllm_bin, "tokenize", "-m", model, "-p", text]
    if tokenizer:
        cmd += ["--tokenizer", tokenizer]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


@pytest.fixture(scope="module")
def qwen(synth_model):
    with pymllm.Model(synth_model, n_threads=2) as m:
        yield m


@pytest.fixture(scope="module")
def story(stories):
    with pymllm.Model(stories[0], n_threads=2, tokenizer=stories[1]) as m:
        yield m


def test_library_version_and_abi():
    lib = pymllm.load_library()
    assert lib.mllm_abi_version() == pymllm.ABI_VERSION
    major, minor, patch = (int(x) for x in pymllm.library_version().split("."))
    assert (major, minor, patch) >= (0, 1, 0)


def test_struct_sizes_match_the_library():
    lib = pymllm.load_library()
    for fill, struct in ((lib.mllm_load_default_params, _lib.load_params_type),
                         (lib.mllm_session_default_params, _lib.SessionParams),
                         (lib.mllm_sampling_default, _lib.Sampling)):
        assert _lib._struct_size(lib, fill) == ctypes.sizeof(struct), struct.__name__
    sp = _lib.Sampling()
    lib.mllm_sampling_default(ctypes.byref(sp))
    # The defaults the header documents, read through our field layout.
    assert (sp.top_k, sp.repeat_last_n, sp.max_tokens, sp.seed, sp.ignore_eos) == (40, 64, 128, 0, 0)
    assert sp.temperature == pytest.approx(0.8) and sp.top_p == pytest.approx(0.95)
    assert sp.min_p == pytest.approx(0.05) and sp.repeat_penalty == 1.0


def test_model_facts(qwen):
    info = qwen.info
    assert info["arch"] == "qwen3" and info["n_vocab"] == qwen.n_vocab > 0
    assert qwen.n_ctx_train == info["n_ctx_train"]
    assert -1 <= qwen.bos < qwen.n_vocab and 0 <= qwen.eos < qwen.n_vocab


@pytest.mark.parametrize("text", TEXTS + ["<|im_start|>user\nhi<|im_end|>"])
def test_tokenize_matches_cli(qwen, synth_model, mllm_bin, text):
    if text == "":
        assert qwen.tokenize(text) == []
        return
    assert qwen.tokenize(text) == cli_tokenize(mllm_bin, synth_model, text)


def test_tokenize_stories_matches_cli_and_golden(story, stories, mllm_bin):
    golden = json.load(open(stories[2]))
    for run in golden["runs"]:
        assert story.tokenize(run["prompt"]) == run["prompt_tokens"]
    for text in ["Lily and Tim went to the park.", "Once upon a time"]:
        assert story.tokenize(text) == cli_tokenize(mllm_bin, stories[0], text, stories[1])
    assert story.tokenize("Once upon a time", add_special=False)[0] != story.bos


@pytest.mark.parametrize("text", TEXTS)
def test_round_trip_bpe(qwen, text):
    assert qwen.detokenize(qwen.tokenize(text)) == text
    assert qwen.detokenize(qwen.tokenize(text, add_special=False)) == text


def test_round_trip_sentencepiece(story):
    for text in ["Once upon a time", "Lily and Tim were happy. They played!"]:
        ids = story.tokenize(text)
        assert ids[0] == story.bos
        assert story.detokenize(ids) == text
        assert story.detokenize(ids, skip_special=False).endswith(text)


def test_stories_greedy_golden(story, stories):
    out = story.generate("Once upon a time", max_tokens=60, temperature=0)
    text = "Once upon a time" + out
    assert text.startswith("Once upon a time, there was a little girl named Lily")
    run = next(r for r in json.load(open(stories[2]))["runs"] if r["prompt"] == "Once upon a time")
    assert text.strip() == run["text"].strip()


def test_stream_joins_to_the_string(qwen, story):
    for model, prompt, kw in ((qwen, "Hello", dict(temperature=0.9, seed=7, max_tokens=40)),
                              (qwen, "Grüße", dict(temperature=1.0, seed=1, top_k=0, top_p=1.0,
                                                   min_p=0.0, max_tokens=40)),
                              (story, "Once upon a time", dict(temperature=0, max_tokens=40))):
        whole = model.generate(prompt, **kw)
        pieces = list(model.generate(prompt, stream=True, **kw))
        assert len(pieces) > 1 and all(isinstance(p, str) and p for p in pieces)
        assert "".join(pieces) == whole


def test_seed_reproduces(qwen):
    kw = dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, max_tokens=30, ignore_eos=True)
    a = qwen.generate("Hello", seed=11, **kw)
    assert qwen.generate("Hello", seed=11, **kw) == a
    assert qwen.generate("Hello", seed=12, **kw) != a


def test_generate_from_ids_equals_from_text(story):
    ids = story.tokenize("Lily and Tim")
    assert story.generate(ids, max_tokens=20, temperature=0) == \
        story.generate("Lily and Tim", max_tokens=20, temperature=0)


def test_stream_closed_early_stops_and_model_still_works(story):
    want = story.generate("Once upon a time", max_tokens=50, temperature=0)
    stream = story.generate("Once upon a time", max_tokens=200, temperature=0, stream=True)
    first = [next(stream), next(stream)]
    stream.close()
    assert want.startswith("".join(first))
    assert story.generate("Once upon a time", max_tokens=50, temperature=0) == want


def test_models_in_parallel_threads(synth_model):
    kw = dict(temperature=0.8, seed=5, max_tokens=30)
    with pymllm.Model(synth_model, n_threads=1) as m:
        want = m.generate("Hello", **kw)
    results, errors = [None] * 3, []

    def work(i):
        try:
            with pymllm.Model(synth_model, n_threads=1) as m:
                results[i] = m.generate("Hello", **kw)
        except Exception as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [want] * 3


def test_bad_path_names_the_file(tmp_path):
    missing = str(tmp_path / "no-such-model.gguf")
    with pytest.raises(pymllm.MllmError) as e:
        pymllm.Model(missing)
    assert e.value.status == _lib.MLLM_ERR_IO and e.value.status_name == "MLLM_ERR_IO"
    assert missing in str(e.value) and missing in e.value.message


def test_corrupt_file_is_a_format_error(tmp_path, synth_model):
    bad = tmp_path / "truncated.gguf"
    bad.write_bytes(open(synth_model, "rb").read()[:1000])
    with pytest.raises(pymllm.MllmError) as e:
        pymllm.Model(str(bad))
    assert e.value.status == _lib.MLLM_ERR_FORMAT and str(bad) in str(e.value)


def test_llama2c_needs_its_tokenizer(stories):
    with pytest.raises(pymllm.MllmError) as e:
        pymllm.Model(stories[0])
    assert e.value.status == _lib.MLLM_ERR_INVALID_ARG and "tokenizer" in e.value.message


def test_bad_sampling_is_invalid_arg(qwen):
    for kw in (dict(temperature=-1.0), dict(top_p=0.0), dict(top_k=-1)):
        with pytest.raises(pymllm.MllmError) as e:
            qwen.generate("Hello", **kw)
        assert e.value.status == _lib.MLLM_ERR_INVALID_ARG
    with pytest.raises(pymllm.MllmError):
        list(qwen.generate("Hello", temperature=-1.0, stream=True))
    assert qwen.generate("Hello", max_tokens=3, temperature=0) == "ooo"  # still usable


def test_context_full(synth_model):
    with pymllm.Model(synth_model, n_ctx=8) as m:
        with pytest.raises(pymllm.MllmError) as e:
            m.generate("Hello world, this prompt is longer than eight tokens", max_tokens=4)
        assert e.value.status == _lib.MLLM_ERR_CONTEXT_FULL


def test_closed_model_raises(synth_model):
    m = pymllm.Model(synth_model)
    m.close()
    m.close()  # twice is fine
    with pytest.raises(pymllm.MllmError):
        m.tokenize("x")


def test_missing_library_is_reported():
    env = dict(os.environ, MLLM_LIBRARY="/nonexistent/libmllm.so")
    code = ("import pymllm\n"
            "try:\n    pymllm.Model('x.gguf')\n"
            "except pymllm.MllmError as e:\n    print(e.status, e.message)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert out.startswith("-3 ") and "/nonexistent/libmllm.so" in out


def _need_chat(model):
    if not _lib.has(model._lib, "mllm_chat"):
        pytest.skip("SKIPPED: this libmllm has no mllm_chat yet")


def test_chat_render_chatml(qwen):
    _need_chat(qwen)
    text = qwen.chat_render([{"role": "user", "content": "Hi there"}])
    assert text == "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"


def test_chat_is_generate_on_the_rendered_prompt_and_reuses_the_cache(qwen):
    _need_chat(qwen)
    msgs = [{"role": "user", "content": "Hi there"}]
    kw = dict(temperature=0.7, seed=3, max_tokens=16)
    # From the same token ids: chat tokenizes message text as text (and a
    # random model's reply may hold a NUL, which a C-string prompt would cut).
    want = qwen.generate(qwen.chat_tokenize(msgs), **kw)
    reply = qwen.chat(msgs, **kw)
    assert reply == want
    # Turn 2 reuses turn 1's KV rows (computed token by token while
    # generating) where generate() prefills them: greedy, to be robust to
    # the last bits of those two paths.
    msgs += [{"role": "assistant", "content": reply}, {"role": "user", "content": "More?"}]
    kw = dict(temperature=0, max_tokens=16)
    streamed = "".join(qwen.chat(msgs, stream=True, **kw))
    assert qwen.last_chat_reused > 0
    assert streamed == qwen.generate(qwen.chat_tokenize(msgs), **kw)


def test_chat_without_a_template_is_unsupported(story):
    _need_chat(story)
    with pytest.raises(pymllm.MllmError) as e:
        story.chat([{"role": "user", "content": "Hi"}])
    assert e.value.status == _lib.MLLM_ERR_UNSUPPORTED and "template" in e.value.message


def test_chat_template_override(stories):
    lib = pymllm.load_library()
    if not _lib.has(lib, "mllm_chat") or _lib.load_params_type is not _lib.LoadParams:
        pytest.skip("SKIPPED: this libmllm has no chat_template option")
    with pymllm.Model(stories[0], tokenizer=stories[1], chat_template="chatml") as m:
        assert m.chat_render([{"role": "user", "content": "Hi"}]) == \
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    with pytest.raises(pymllm.MllmError) as e:
        pymllm.Model(stories[0], tokenizer=stories[1], chat_template="no-such-template")
    assert e.value.status == _lib.MLLM_ERR_INVALID_ARG and "no-such-template" in e.value.message


# ---- OpenAI-style completions and stop strings (issue #18) ---------------

MSGS = [{"role": "user", "content": "Tell me a story"}]


def test_create_chat_completion_shape_and_usage(qwen):
    _need_chat(qwen)
    r = qwen.create_chat_completion(MSGS, max_tokens=8, temperature=0)
    assert r["object"] == "chat.completion" and r["id"].startswith("chatcmpl-")
    assert r["created"] == int(os.environ.get("SOURCE_DATE_EPOCH", r["created"]))
    ch = r["choices"][0]
    assert ch["index"] == 0 and ch["message"]["role"] == "assistant"
    u = r["usage"]
    assert u["prompt_tokens"] == len(qwen.chat_tokenize(MSGS))
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]
    # The reply is chat()'s, greedy.
    assert ch["message"]["content"] == qwen.chat(MSGS, temperature=0, max_tokens=8)
    assert ch["finish_reason"] == ("length" if u["completion_tokens"] == 8 else "stop")


def test_create_chat_completion_stream_joins_to_the_message(qwen):
    _need_chat(qwen)
    whole = qwen.create_chat_completion(MSGS, max_tokens=12, temperature=0.9, seed=5)
    chunks = list(qwen.create_chat_completion(MSGS, max_tokens=12, temperature=0.9, seed=5, stream=True))
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == whole["choices"][0]["message"]["content"]
    assert chunks[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])


def test_stop_strings_cut_and_never_leak(qwen):
    _need_chat(qwen)
    full = qwen.generate("Once upon a time", max_tokens=24, temperature=0)
    assert len(full) > 6
    stop = full[3:6]  # a string the greedy text certainly contains
    cut = full[:full.index(stop)]
    assert qwen.generate("Once upon a time", max_tokens=24, temperature=0, stop=stop) == cut
    assert qwen.generate("Once upon a time", max_tokens=24, temperature=0, stop=["\x07never", stop]) == cut
    pieces = list(qwen.generate("Once upon a time", max_tokens=24, temperature=0, stop=[stop], stream=True))
    assert "".join(pieces) == cut and all(stop not in p for p in pieces)
    r = qwen.create_chat_completion(MSGS, max_tokens=24, temperature=0)
    reply = r["choices"][0]["message"]["content"]
    if len(reply) > 4:
        s2 = reply[2:4]
        r2 = qwen.create_chat_completion(MSGS, max_tokens=24, temperature=0, stop=s2)
        assert r2["choices"][0]["message"]["content"] == reply[:reply.index(s2)]
        assert r2["choices"][0]["finish_reason"] == "stop"


def test_create_chat_completion_context_full_is_length(synth_model):
    with pymllm.Model(synth_model, n_threads=1, n_ctx=32) as m:
        # max_tokens None: until the answer ends or the context is full. The
        # greedy answer of this synthetic model does not end within 32 tokens.
        r = m.create_chat_completion(MSGS, temperature=0)
        assert r["choices"][0]["finish_reason"] == "length"
        assert r["usage"]["total_tokens"] == 32


def test_bundled_library_is_used_without_mllm_library():
    """sdk_python.sh installs a second copy of the package with libmllm.so
    bundled (setup.py) and points PYMLLM_BUNDLED_SITE at it."""
    site = os.environ.get("PYMLLM_BUNDLED_SITE")
    if not site:
        pytest.skip("SKIPPED: PYMLLM_BUNDLED_SITE is not set (run tests/e2e/sdk_python.sh)")
    assert os.path.isfile(os.path.join(site, "pymllm", "libmllm.so"))
    env = {k: v for k, v in os.environ.items() if k != "MLLM_LIBRARY"}
    env["PYTHONPATH"] = site
    code = ("import pymllm, pymllm._lib as L; print(pymllm.library_version()); "
            "import os; print(os.path.dirname(L.__file__))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1] == os.path.join(site, "pymllm")


def test_grammar_and_json_schema_constrain_the_text(qwen):
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["n"], "additionalProperties": False}
    for seed in range(3):
        # A random model at temperature 1: only the grammar makes this JSON (whitespace is bounded: it ends).
        text = qwen.generate("Hello", max_tokens=200, temperature=1.0, seed=seed, json_schema=schema)
        doc = json.loads(text)
        assert list(doc) == ["n"] and 0 <= doc["n"] <= 9, text
    assert qwen.generate("Hello", max_tokens=8, temperature=1.0, seed=1, grammar='root ::= "yes" | "no"') in ("yes", "no")
    streamed = "".join(qwen.generate("Hello", max_tokens=200, temperature=1.0, seed=0, json_schema=schema, stream=True))
    assert streamed == qwen.generate("Hello", max_tokens=200, temperature=1.0, seed=0, json_schema=schema)
    with pytest.raises(pymllm.MllmError) as e:
        qwen.generate("Hello", grammar="root ::= [a-z")
    assert e.value.status == _lib.MLLM_ERR_INVALID_ARG and "line 1, column 10" in str(e.value)
    with pytest.raises(pymllm.MllmError) as e:
        qwen.generate("Hello", json_schema={"type": "string", "pattern": "a+"})
    assert "'pattern' is not supported" in str(e.value)


# ---- embeddings ---------------------------------------------------------

def cli_embed(mllm_bin, model, text, *extra):
    out = subprocess.run([mllm_bin, "embed", "-m", model, "-p", text, "-o", "json", *extra],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["data"][0]["embedding"]


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return dot / (na * nb)


@pytest.mark.parametrize("text", ["Hello world", "Grüße, 世界! 123"])
def test_embed_decoder_matches_cli(qwen, synth_model, mllm_bin, text):
    v = qwen.embed(text)
    assert len(v) == qwen.n_embd and qwen.can_generate
    # the CLI prints 9 significant digits: the same vector to that precision
    ref = cli_embed(mllm_bin, synth_model, text)
    assert max(abs(a - b) for a, b in zip(v, ref)) < 1e-7
    assert abs(sum(x * x for x in v) - 1.0) < 1e-5  # L2-normalised by default
    last = qwen.embed(text, pooling="last", normalize=False)
    ref_last = cli_embed(mllm_bin, synth_model, text, "--pooling", "last", "--no-normalize")
    assert max(abs(a - b) for a, b in zip(last, ref_last)) < 1e-6 * max(1.0, max(map(abs, ref_last)))
    assert qwen.embed([text, text]) == [v, v]


def test_embed_bad_pooling_is_invalid_arg(qwen):
    with pytest.raises(pymllm.MllmError) as e:
        qwen.embed("x", pooling="max")
    assert e.value.status == _lib.MLLM_ERR_INVALID_ARG
    with pytest.raises(pymllm.MllmError):
        qwen.embed(42)


def test_embed_minilm_against_sentence_transformers():
    """all-MiniLM-L6-v2 (scripts/fetch-minilm.sh) against the vectors of
    tools/reference/embed_reference.py (sentence-transformers, committed)."""
    d = os.environ.get("MLLM_MINILM_DIR")
    if not d or not os.path.isdir(d):
        pytest.skip("SKIPPED: MLLM_MINILM_DIR is unset (scripts/fetch-minilm.sh)")
    ref = json.load(open(os.path.join(REPO_ROOT, "tests", "data", "minilm", "embeddings.json")))
    toks = json.load(open(os.path.join(REPO_ROOT, "tests", "data", "minilm", "tokens.json")))
    with pymllm.Model(d, n_threads=2) as m:
        assert not m.can_generate and m.n_embd == 384
        got = m.embed(ref["texts"])
        for text, g, r in zip(ref["texts"], got, ref["embeddings"]):
            assert cosine(g, r) >= 0.9999, text
        # tokens.json holds the HF ids untruncated: the texts within the limit
        short = [(t, ids) for t, ids in zip(toks["texts"], toks["ids"]) if len(ids) <= ref["max_seq_length"]]
        assert len(short) >= 8
        for text, ids in short:
            assert m.embed_tokens(text) == ids, text
        with pytest.raises(pymllm.MllmError) as e:
            m.generate("hello", max_tokens=1)
        assert e.value.status == _lib.MLLM_ERR_UNSUPPORTED
