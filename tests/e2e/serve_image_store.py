"""The prefix cache and the prefix store hold the K/V blocks of an image's
rows (keyed by the image's identity: a hash of its file's bytes and of the
vision tower), on the tiny random Qwen2.5-VL (M-RoPE) and SmolVLM
(Idefics3: tiles, no M-RoPE) of tests/data, through /v1/chat/completions:

- one server: the same image and question again takes every full block of
  its prompt from the prefix cache (usage cached_tokens, which counts the
  image's rows), and answers as a fresh server asked first (no cache):
  the same greedy text and log-probabilities (here and below);
  another image of the same size and the same question takes at most the
  text before its image;
- restart with --prefix-store: a new server on the same folder reads the
  image's blocks from the store (/metrics store hits; cached_tokens past the
  image for another question about the same image, while another image
  again takes only the text before it) and answers each request as a fresh
  server without a store;
- the GGUF pair (text.gguf + --mmproj) the same, and then another tower
  (the mmproj with one bias moved: other rows for the same image) on the
  same store takes none of the image's blocks and answers as a fresh
  server with that tower.
Args: mllm binary, shared dir, build dir. Loopback only."""
import base64
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data")
BLOCK = 16
SYSTEM = "You are a careful assistant. You look at each picture closely and say what it shows, in plain words."
ARGS = ("--exact", "-t", "1", "-np", "2", "--no-lookup", "--max-body", str(4 << 20))


def gradient_png(w, h):
    """A PNG of w x h (tests/data/images/photo.png's size) with other pixels."""
    raw = b"".join(b"\0" + bytes(v for x in range(w) for v in (x * 255 // w, y * 255 // h, (x + y) % 256))
                   for y in range(h))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def ask(s, png, question):
    """(answer, prompt tokens, cached tokens) of 8 greedy tokens; the answer is their text and
    log-probabilities."""
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                             {"type": "text", "text": question}]}]
    st, r = s.json("POST", "/v1/chat/completions", {"model": s.alias, "messages": messages, "max_tokens": 8,
                                                    "temperature": 0, "logprobs": True}, timeout=300)
    check(st == 200, "chat %d %r" % (st, r))
    c, u = r["choices"][0], r["usage"]
    answer = (c["message"]["content"], tuple(t["logprob"] for t in c["logprobs"]["content"]))
    return answer, u["prompt_tokens"], u["prompt_tokens_details"]["cached_tokens"]


def fresh(mllm, model, png, question, extra=()):
    """The answer of a new server (no store, nothing cached) asked first."""
    s = srvtest.Server(mllm, model, *ARGS, *extra)
    try:
        answer, _, cached = ask(s, png, question)
        check(cached == 0, "a fresh server has nothing cached: %d" % cached)
        return answer
    finally:
        s.close()


PHOTO = open(os.path.join(DATA, "images", "photo.png"), "rb").read()
QA, QB = "What is this?", "Describe the colors."


def model_case(mllm, name, model, rows, tmp, extra=()):
    """Returns the store folder (it holds the photo's blocks)."""
    photo, qa, qb = PHOTO, QA, QB
    other = gradient_png(300, 199)
    want = {(p, q): fresh(mllm, model, img, q, extra) for p, img in (("photo", photo), ("other", other))
            for q in (qa, qb)}
    check(len(set(want.values())) > 1, "%s: not vacuous: the answers differ: %r" % (name, want))

    # one server, its in-memory prefix cache
    s = srvtest.Server(mllm, model, *ARGS, *extra)
    try:
        answer, n, cached = ask(s, photo, qa)
        check(answer == want["photo", qa] and cached == 0, "%s: first request: %r cached %d" % (name, answer, cached))
        answer, n2, cached = ask(s, photo, qa)
        check(n2 == n and cached >= n // BLOCK * BLOCK - 1,
              "%s: the same image and question again: %d of %d prompt tokens cached" % (name, cached, n))
        check(answer == want["photo", qa], "%s: from the cache: %r, fresh: %r" % (name, answer, want["photo", qa]))
        answer, n3, cached_o = ask(s, other, qa)
        check(n3 == n, "%s: the other image has as many rows (%d tokens, %d)" % (name, n3, n))
        check(0 < cached_o <= n - rows - 1, "%s: another image takes only the text before it: %d cached of %d"
              % (name, cached_o, n))
        check(answer == want["other", qa], "%s: another image: %r, fresh: %r" % (name, answer, want["other", qa]))
        print("ok   %s: the same image again: %d of %d prompt tokens from the prefix cache; another image: %d"
              % (name, cached, n, cached_o))
    finally:
        s.close()

    # the store, across a restart
    store = os.path.join(tmp, name + "-store")
    s = srvtest.Server(mllm, model, *ARGS, *extra, "--prefix-store", store)
    try:
        check(ask(s, photo, qa)[0] == want["photo", qa], "%s: with the store" % name)
        m = s.metrics()
        check(m["mllm_prefix_store_writes_total"] >= n // BLOCK, "%s: every full block written: %r" % (name, m))
        check(s.stop() == 0, "server exit code")
    finally:
        s.close()
    s = srvtest.Server(mllm, model, *ARGS, *extra, "--prefix-store", store)
    try:
        answer, _, cached_o = ask(s, other, qb)
        check(answer == want["other", qb], "%s: restarted, another image: %r, fresh: %r"
              % (name, answer, want["other", qb]))
        check(cached_o <= n - rows - 1, "%s: restarted, another image: %d cached" % (name, cached_o))
        hits_o = s.metrics()["mllm_prefix_store_hit_blocks_total"]
        check(hits_o * BLOCK == cached_o, "%s: the text before it from the store: %d blocks, %d cached"
              % (name, hits_o, cached_o))
        answer, _, cached = ask(s, photo, qb)
        check(answer == want["photo", qb], "%s: restarted, the image from the store: %r, fresh: %r"
              % (name, answer, want["photo", qb]))
        hits = s.metrics()["mllm_prefix_store_hit_blocks_total"] - hits_o
        # past the text the other image's request read: the image's rows (each block of them) from the store
        check(cached - cached_o >= rows // BLOCK * BLOCK - BLOCK and hits * BLOCK >= cached - cached_o - BLOCK,
              "%s: restarted, the image's blocks from the store: %d cached (another image %d), %d store blocks"
              % (name, cached, cached_o, hits))
        answer, _, cached2 = ask(s, photo, qa)
        check(answer == want["photo", qa] and cached2 >= cached, "%s: restarted, the first question again: %r %d"
              % (name, answer, cached2))
        print("ok   %s: restarted with --prefix-store: the image's blocks from the store (%d tokens cached, %d "
              "store blocks; another image %d), answers as fresh servers" % (name, cached, hits, cached_o))
    finally:
        s.close()
    return store


def other_tower(mllm, pair, store, rows):
    """An mmproj with other weights (an attention bias moved) on the GGUF pair's store."""
    mm2 = os.path.join(pair, "mmproj-other.gguf")
    data = bytearray(open(os.path.join(pair, "mmproj.gguf"), "rb").read())
    t, at = srvtest.gguf_tensor(data, "v.blk.0.attn_out.bias")
    check(t == 0, "the bias is f32: %d" % t)
    for i in range(64):
        struct.pack_into("<f", data, at + 4 * i, struct.unpack_from("<f", data, at + 4 * i)[0] + 0.5)
    open(mm2, "wb").write(bytes(data))
    text_gguf = os.path.join(pair, "text.gguf")
    runs = {}
    for mm in ("mmproj.gguf", "mmproj-other.gguf"):
        s = srvtest.Server(mllm, text_gguf, *ARGS, "--mmproj", os.path.join(pair, mm))
        try:
            runs[mm] = ask(s, PHOTO, QA)[0]
        finally:
            s.close()
    check(runs["mmproj.gguf"][1] != runs["mmproj-other.gguf"][1], "not vacuous: the towers' rows differ: %r" % runs)
    s = srvtest.Server(mllm, text_gguf, *ARGS, "--mmproj", mm2, "--prefix-store", store)
    try:
        answer, n, cached = ask(s, PHOTO, QA)
        check(0 < cached <= n - rows - 1, "another tower takes only the text before the image: %d of %d" % (cached, n))
        check(answer == runs["mmproj-other.gguf"], "another tower: %r, fresh: %r" % (answer, runs["mmproj-other.gguf"]))
        print("ok   gguf-pair: another tower on the same store takes only the text before the image (%d of %d)"
              % (cached, n))
    finally:
        s.close()


def main():
    mllm = sys.argv[1]
    build = sys.argv[3] if len(sys.argv) > 3 else tempfile.gettempdir()
    tmp = tempfile.mkdtemp(dir=build)
    model_case(mllm, "qwen2vl", os.path.join(DATA, "qwen2vl", "tiny"), 77, tmp)
    model_case(mllm, "smolvlm", os.path.join(DATA, "smolvlm", "tiny"), 80, tmp)
    pair = os.path.join(tmp, "gguf")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "reference", "unxz.py"),
                    os.path.join(DATA, "qwen2vl", "gguf"), pair], check=True, stdout=subprocess.DEVNULL)
    store = model_case(mllm, "gguf-pair", os.path.join(pair, "text.gguf"), 77, tmp,
                       ("--mmproj", os.path.join(pair, "mmproj.gguf")))
    other_tower(mllm, pair, store, 77)
    shutil.rmtree(tmp)
    print("serve_image_store: all passed")


if __name__ == "__main__":
    main()
