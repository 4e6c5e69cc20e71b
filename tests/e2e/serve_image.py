"""/v1/chat/completions with OpenAI image_url parts (base64 data URLs)
through the official `openai` client, on the tiny random Qwen2.5-VL of
tests/data/qwen2vl/tiny:
- the first answer's top-20 log-probabilities equal the log-softmax of
  `mllm run --image`'s logits for the same question (the path whose greedy
  tokens equal transformers', run_image_cli.sh), and its greedy tokens are
  the same; a second request with the same image (the embedding cache)
  answers the same; a two-turn conversation repeating the image works;
- the GGUF pair (llama.cpp's converter, tests/data/qwen2vl/gguf) served
  with --mmproj gives the same log-probabilities;
- the tiny SmolVLM (tests/data/smolvlm/tiny): the answer's log-probabilities
  equal `mllm run --image`'s (whose tokens and logits equal transformers':
  run_image_smolvlm.sh, test_smolvlm), usage counts the tile markers and 80
  image tokens (125), and a WebP data URL is answered;
- 8 concurrent image+text requests (--parallel 8: the engine, continuous
  batching) with three different images, the same image more than once,
  and a text prompt, give the same text and log-probabilities as each
  sent alone; the repeated image's blocks come from the prefix cache;
  with --prefix-store, a restarted server, asked about the images in
  another order, answers the same (its blocks from the store: the images'
  too, serve_image_store.py);
- refused with a 400 and a clear message: an https URL (no network), a
  non-image data URL, bad base64, a corrupt PNG, an unknown part type, too
  many images, images for a text-only model (a body over --max-body is a
  413 like any other: serve_badinput.py).
Args: mllm binary, shared dir, build dir. Loopback only."""
import base64
import math
import os
import struct
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check, import_openai  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data")
TINY = os.path.join(DATA, "qwen2vl", "tiny")
PNG = os.path.join(DATA, "images", "photo.png")
QUESTION = "What is this?"


def data_url(path, mime="image/png"):
    return "data:%s;base64,%s" % (mime, base64.b64encode(open(path, "rb").read()).decode())


def msg(url, text=QUESTION):
    return [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                         {"type": "text", "text": text}]}]


def run_reference(mllm, tmp, model=TINY):
    """log-softmax of `mllm run --image`'s prompt logits, and its 6 greedy ids."""
    lf, idf = os.path.join(tmp, "logits"), os.path.join(tmp, "ids")
    subprocess.run([mllm, "run", "-m", model, "--image", PNG, "-p", QUESTION, "-n", "6", "--temp", "0", "--exact",
                    "-t", "1", "--no-lookup", "--logits-out", lf, "--ids-out", idf],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    raw = open(lf, "rb").read()
    logits = struct.unpack("<%df" % (len(raw) // 4), raw)
    mx = max(logits)
    lse = mx + math.log(sum(math.exp(x - mx) for x in logits))
    ids = [int(x) for x in open(idf).read().split()][-6:]
    return sorted((x - lse for x in logits), reverse=True)[:20], ids


def first_top(r):
    return sorted((t.logprob for t in r.choices[0].logprobs.content[0].top_logprobs), reverse=True)


def ask(client, messages, n=6):
    return client.chat.completions.create(model="tiny", messages=messages, max_tokens=n, temperature=0,
                                          logprobs=True, top_logprobs=20)


CONCURRENT = [("photo.png", QUESTION), ("photo.jpg", QUESTION), ("photo.png", "Describe the colors."),
              ("photo.bmp", QUESTION), ("photo.png", QUESTION), ("photo.jpg", "Describe the colors."),
              (None, "What is a photo?"), ("photo.bmp", "Describe the colors.")]


# (a system turn long enough that the images start after a few blocks of text)
SYSTEM = "You are a careful assistant. You look at each picture closely and say what it shows, in plain words."


def answer(client, img, text):
    """(text, logprobs) of 8 greedy tokens for one image (or none) and a question."""
    m = msg(data_url(os.path.join(DATA, "images", img)), text) if img else [{"role": "user", "content": text}]
    r = ask(client, [{"role": "system", "content": SYSTEM}] + m, 8)
    return r.choices[0].message.content, [c.logprob for c in r.choices[0].logprobs.content]


def concurrent(mllm, openai, tmp):
    """8 image+text requests together through the engine, each as alone."""
    store = os.path.join(tmp, "store")
    # (no prompt lookup: one token a sequence a step, so the steps count the batching)
    args = ("--exact", "-t", "1", "-np", "8", "--no-lookup", "--prefix-store", store, "--max-body", str(4 << 20))
    s = srvtest.Server(mllm, TINY, *args)
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="none", max_retries=0, timeout=300)
        alone = [answer(client, img, text) for img, text in CONCURRENT]
        check(len(set(a[0] for a in alone)) > 2, "not vacuous: the requests answer differently: %r" % alone)
        got = [None] * len(CONCURRENT)
        go = threading.Barrier(len(CONCURRENT))

        def one(i):
            go.wait()
            got[i] = answer(client, *CONCURRENT[i])

        before = s.metrics()
        th = [threading.Thread(target=one, args=(i,)) for i in range(len(CONCURRENT))]
        for t in th:
            t.start()
        for t in th:
            t.join()
        for i, (a, g) in enumerate(zip(alone, got)):
            check(a == g, "request %d %r together: %r, alone: %r" % (i, CONCURRENT[i], g, a))
        m = s.metrics()
        check("mllm_sequences_running" in m, "a vision model is served by the engine")
        steps = m["mllm_engine_steps_total"] - before["mllm_engine_steps_total"]
        check(steps < 8 * 8, "batched: %d steps for 8 x 8 tokens" % steps)
        hits = m["mllm_prefix_cache_hit_tokens_total"] - before["mllm_prefix_cache_hit_tokens_total"]
        check(hits >= 77, "the repeated images' blocks come from the prefix cache: %g tokens" % hits)
        check(m["mllm_prefix_store_writes_total"] > 0, "the prompts' blocks are in the store")
        print("ok   8 concurrent image+text requests (3 images, repeated, and text) answer as each alone "
              "(%d engine steps, %d prompt tokens from the prefix cache)" % (steps, hits))
    finally:
        s.close()
    # A new process, jpg first now (png was the first before): an image's identity is its bytes, not its turn
    s = srvtest.Server(mllm, TINY, *args)
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="none", max_retries=0, timeout=300)
        for i in (1, 0):
            check(answer(client, *CONCURRENT[i]) == alone[i], "restarted with the store: request %d" % i)
        m = s.metrics()
        check(m["mllm_prefix_store_hit_blocks_total"] > 0, "the store's blocks are read")
        print("ok   --prefix-store with a vision model: a restarted server answers the same (%d blocks from the store)"
              % m["mllm_prefix_store_hit_blocks_total"])
    finally:
        s.close()


def main():
    mllm = sys.argv[1]
    build = sys.argv[3] if len(sys.argv) > 3 else tempfile.gettempdir()
    openai = import_openai(build)
    tmp = tempfile.mkdtemp(dir=build)
    want_top, want_ids = run_reference(mllm, tmp)
    url = data_url(PNG)

    s = srvtest.Server(mllm, TINY, "--exact", "-t", "1", "-np", "1", "--max-body", str(4 << 20))
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="none", max_retries=0, timeout=300)
        r = ask(client, msg(url))
        got = first_top(r)
        err = max(abs(a - b) for a, b in zip(got, want_top))
        check(len(got) == 20 and err < 1e-4, "top-20 logprobs vs mllm run --image: max diff %g" % err)
        # greedy: each chosen token is the most likely one; the run's ids name them
        lps = [c.logprob for c in r.choices[0].logprobs.content]
        check(len(lps) == 6 and all(abs(c.logprob - max(t.logprob for t in c.top_logprobs)) < 1e-6
                                    for c in r.choices[0].logprobs.content), "greedy: %r" % lps)
        check(r.usage.prompt_tokens == 111, "usage counts the image's 77 tokens: %r" % r.usage)
        print("ok   image_url answer equals mllm run --image (top-20 logprobs within %.2g, %d tokens)" % (err, len(lps)))
        r2 = ask(client, msg(url))
        check([c.logprob for c in r2.choices[0].logprobs.content] == lps, "same image again: same answer")
        print("ok   the same image again (embedding cache): the same answer")
        conv = msg(url) + [{"role": "assistant", "content": r.choices[0].message.content or ""},
                           {"role": "user", "content": "And now?"}]
        r3 = ask(client, conv, 3)
        check(r3.choices[0].finish_reason in ("stop", "length"), "two turns")
        print("ok   a second turn repeating the image")
        # detail is accepted; the image as the plain string some clients send
        st, body = s.json("POST", "/v1/chat/completions", {"model": "tiny", "max_tokens": 1, "messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url, "detail": "low"}}]}]})
        check(st == 200, "detail low: %d %r" % (st, body))

        bad_png = base64.b64encode(open(PNG, "rb").read()[:3000]).decode()
        cases = [
            ("https URL", msg("https://example.com/cat.png"), "not fetched"),
            ("http URL", msg("http://example.com/cat.png"), "not fetched"),
            ("text data URL", msg("data:text/plain;base64,aGVsbG8="), "image/"),
            ("not base64", msg("data:image/png,abc"), "base64"),
            ("bad base64", msg("data:image/png;base64,ab$d"), "bad base64"),
            ("bad length", msg("data:image/png;base64,abc"), "multiple of 4"),
            ("corrupt PNG", msg("data:image/png;base64," + bad_png), "corrupt or truncated PNG"),
            ("unknown part", [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}},
                                                           {"type": "image_url", "image_url": {"url": url}}]}],
             "only text and image_url"),
            ("no url", [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}], "needs"),
            ("too many", [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}] * 17}],
             "at most 16 images"),
        ]
        for name, messages, needle in cases:
            st, body = s.json("POST", "/v1/chat/completions", {"model": "tiny", "messages": messages, "max_tokens": 2})
            text = str(body)
            check(st == 400 and needle in text, "%s: %d %s" % (name, st, text[:300]))
        print("ok   %d bad image requests -> 400 with the reason" % len(cases))
    finally:
        s.close()

    concurrent(mllm, openai, tmp)

    # the GGUF pair, as llama.cpp's converter wrote it
    pair = os.path.join(tmp, "gguf")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "reference", "unxz.py"),
                    os.path.join(DATA, "qwen2vl", "gguf"), pair], check=True, stdout=subprocess.DEVNULL)
    s = srvtest.Server(mllm, os.path.join(pair, "text.gguf"), "--mmproj", os.path.join(pair, "mmproj.gguf"),
                       "--exact", "-t", "1", "-np", "1", "--max-body", str(4 << 20))
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="none", max_retries=0, timeout=300)
        got = first_top(ask(client, msg(url)))
        err = max(abs(a - b) for a, b in zip(got, want_top))
        check(err < 1e-4, "GGUF pair: max diff %g" % err)
        print("ok   GGUF pair (--mmproj): top-20 logprobs within %.2g" % err)
    finally:
        s.close()

    # SmolVLM / Idefics3: the same path, its own prompt expansion
    smol = os.path.join(DATA, "smolvlm", "tiny")
    want_top, _ = run_reference(mllm, tmp, smol)
    s = srvtest.Server(mllm, smol, "--exact", "-t", "1", "-np", "1", "--max-body", str(4 << 20))
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="none", max_retries=0, timeout=300)
        r = ask(client, msg(url))
        err = max(abs(a - b) for a, b in zip(first_top(r), want_top))
        check(err < 1e-4, "SmolVLM: max diff %g" % err)
        check(r.usage.prompt_tokens == 125, "SmolVLM usage: %r" % r.usage)
        print("ok   SmolVLM image_url answer equals mllm run --image (top-20 logprobs within %.2g)" % err)
        webp = os.path.join(DATA, "images", "photo.webp")
        st, body = s.json("POST", "/v1/chat/completions", {"model": "tiny", "max_tokens": 1,
                                                           "messages": msg(data_url(webp, "image/webp"))})
        check(st == 200 or "WebP support not built" in str(body), "SmolVLM WebP: %d %r" % (st, body))
        print("ok   SmolVLM: a WebP data URL (%d)" % st)
    finally:
        s.close()

    # a text-only model
    tg = os.path.join(tmp, "t.gguf")
    subprocess.run([mllm, "synth", "--arch", "qwen3", "--preset", "tiny", "--format", "gguf", "-o", tg], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    s = srvtest.Server(mllm, tg, "--max-body", str(4 << 20))
    try:
        st, body = s.json("POST", "/v1/chat/completions", {"model": "tiny", "messages": msg(url), "max_tokens": 2})
        check(st == 400 and "takes no images" in str(body), "text-only model: %d %r" % (st, body))
        print("ok   text-only model -> 400 (takes no images)")
    finally:
        s.close()
    print("serve_image: all passed")


if __name__ == "__main__":
    main()
