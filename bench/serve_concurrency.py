#!/usr/bin/env python3
"""Aggregate generation throughput of `mllm serve` with 1 and N concurrent
greedy chat requests of 64 tokens each (ignore_eos, so every answer is 64
tokens), over plain HTTP (no client library needed).

    bench/serve_concurrency.py MLLM_BINARY MODEL.gguf [--parallel 8] [--streams 1,8] [--rounds 3] [--image FILE]
        [--extra "--kv-type q8"]
    bench/serve_concurrency.py --llama-server LLAMA_SERVER_BINARY MODEL.gguf [same options]

--prompt-file F sends F's text as every request's user message (an "edit
this code" task, say) instead of the built-in questions. --image FILE
attaches FILE (an image, as a base64 data URL image_url part) to every
request's message, for a vision model (the same image each time: after the
first request its embeddings come from the model's cache, and the prompt up
to the question from the prefix cache).

With --llama-server the first argument is llama.cpp's llama-server, started
with -np PARALLEL -c PARALLEL*2048 on a free port (a benchmark, not a test).
Every answer's token count is read back from the streamed usage chunk, so a
server that stops early or ignores ignore_eos is caught, not counted.

Every answer of every round is compared with the same question's answer
sent alone (greedy: a batch must not change the text); a difference stops
the run (--no-check skips it).

Prints, per stream count: wall seconds, total generated tokens, aggregate
tokens/s (total / wall) and mean time to first token (from a streamed
request), the best of --rounds. The machine's load average is printed
too: give ratios when it is shared. For mllm, the prompt-lookup counters of
its /metrics at the end (every request of every round, the warm-up too)."""
import argparse
import base64
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import http.client

QUESTIONS = ["Tell me about bread.", "Describe a forest.", "Explain rain.", "Write about the sea.",
             "Talk about cats.", "Describe a city at night.", "Explain how a bicycle works.", "Tell me about tea.",
             "Describe winter.", "Explain the moon.", "Talk about music.", "Describe a garden."]


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(mllm, model, parallel, extra, llama):
    log = tempfile.NamedTemporaryFile(prefix="bench-serve-", suffix=".log", delete=False)
    if llama:
        port = free_port()
        cmd = [mllm, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-np", str(parallel),
               "-c", str(parallel * 2048)] + extra
    else:
        cmd = [mllm, "serve", "-m", model, "--port", "0", "--parallel", str(parallel), "--log-requests", "off"] + extra
    p = subprocess.Popen(cmd, stdout=log, stderr=log)
    for _ in range(1200):
        with open(log.name) as f:
            out = f.read()
        if llama:
            if re.search(r"listening on http://", out):
                return p, port
        else:
            m = re.search(r"listening on http://[\d.]+:(\d+)", out)
            if m:
                return p, int(m.group(1))
        if p.poll() is not None:
            break
        time.sleep(0.05)
    with open(log.name) as f:
        raise SystemExit("server did not start: " + f.read()[-2000:])


IMAGE_URL = None  # --image: a data URL attached to every message


def chat(port, q, n_tokens):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    content = q if not IMAGE_URL else [{"type": "image_url", "image_url": {"url": IMAGE_URL}}, {"type": "text", "text": q}]
    body = {"model": "m", "messages": [{"role": "user", "content": content}], "max_tokens": n_tokens, "temperature": 0,
            "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}}
    t0 = time.monotonic()
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    ttft, text, used = None, "", None
    for line in r:
        line = line.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ch = json.loads(line[6:])
        if ch.get("usage"):
            used = ch["usage"].get("completion_tokens")
        if ch.get("choices") and ch["choices"][0]["delta"].get("content"):
            if ttft is None:
                ttft = time.monotonic() - t0
            text += ch["choices"][0]["delta"]["content"]
    c.close()
    if used != n_tokens:
        raise SystemExit("a %d-token request came back with completion_tokens %r" % (n_tokens, used))
    return ttft or 0.0, text


def run(port, n, n_tokens, questions, alone=None):
    """n concurrent requests; with `alone` (question -> its text when sent by
    itself), every answer must be that text: a batch must not change what a
    greedy request says."""
    res = [None] * n
    th = [threading.Thread(target=lambda i=i: res.__setitem__(i, chat(port, questions[i % len(questions)], n_tokens)))
          for i in range(n)]
    t0 = time.monotonic()
    for t in th:
        t.start()
    for t in th:
        t.join()
    wall = time.monotonic() - t0
    for i in range(n if alone else 0):
        q = questions[i % len(questions)]
        if res[i][1] != alone[q]:
            raise SystemExit("request %d (%r) among %d streams said %r, alone %r" % (i, q, n, res[i][1], alone[q]))
    return wall, n * n_tokens, sum(r[0] for r in res) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mllm")
    ap.add_argument("model")
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--streams", default="1,8")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--extra", default="")
    ap.add_argument("--llama-server", action="store_true", help="the binary is llama.cpp's llama-server")
    ap.add_argument("--prompt-file", help="every request's user message")
    ap.add_argument("--image", help="an image attached to every request (a vision model)")
    ap.add_argument("--no-check", dest="check", action="store_false",
                    help="do not compare each answer with the same request's answer alone (sampling settings where "
                         "they may differ)")
    a = ap.parse_args()
    extra = a.extra.split()
    if a.image:
        global IMAGE_URL
        ext = os.path.splitext(a.image)[1].lower().lstrip(".")
        mime = {"jpg": "jpeg", "jpeg": "jpeg", "png": "png", "webp": "webp", "bmp": "bmp"}.get(ext, ext)
        with open(a.image, "rb") as f:
            IMAGE_URL = "data:image/%s;base64,%s" % (mime, base64.b64encode(f.read()).decode())
        if not a.llama_server and "--max-body" not in extra:
            extra += ["--max-body", str(len(IMAGE_URL) + (1 << 20))]
    questions = [open(a.prompt_file).read()] if a.prompt_file else QUESTIONS
    p, port = start(a.mllm, a.model, a.parallel, extra, a.llama_server)
    try:
        chat(port, "Hello", 8)  # warm up
        streams = [int(x) for x in a.streams.split(",")]
        # each question's greedy answer alone, to compare the batched ones with
        alone = {q: chat(port, q, a.tokens)[1] for q in questions[:max(streams)]} if a.check else None
        print("load average before: %.2f %.2f %.2f" % os.getloadavg())
        for n in streams:
            best = min((run(port, n, a.tokens, questions, alone) for _ in range(a.rounds)), key=lambda r: r[0])
            wall, toks, ttft = best
            print("streams %d: %.2f s, %d tokens, %.1f tokens/s aggregate, TTFT %.0f ms"
                  % (n, wall, toks, toks / wall, ttft * 1e3))
        print("load average after: %.2f %.2f %.2f" % os.getloadavg())
        if not a.llama_server:  # what prompt lookup did, over every request (the warm-up too)
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("GET", "/metrics")
            for line in c.getresponse().read().decode().splitlines():
                if line.startswith("mllm_lookup_") or line.startswith("mllm_engine_steps_total"):
                    print(line)
            c.close()
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
