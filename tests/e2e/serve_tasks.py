"""Embedding and audio requests are tasks in a bounded queue, computed by
the thread that owns the model's compute (the engine loop on a decoder,
the task worker on Whisper), never by the HTTP thread that received them.
`--test-task-hold-ms` makes that thread sleep before each task, so the
requests queue behind it:

- a decoder (a synth tiny Qwen3): 8 embedding requests sent together with
  2 chats are all answered (the vectors equal to one sent alone), /metrics
  shows them waiting in the queue, run by the engine loop, none on an HTTP
  thread; with the queue full a request gets 503 with Retry-After; a client
  that hangs up while queued has its task cancelled;
- Whisper tiny ($MLLM_WHISPER_TINY_DIR, skipped without it): a long
  transcription (jfk.wav three times) and short ones sent together, at the
  same time as the decoder's requests, are all answered by the worker.
Args: mllm binary, shared dir, build dir. Loopback only."""
import io
import json
import os
import re
import socket
import sys
import tempfile
import threading
import time
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

HOLD_MS = 700
QUEUE = 8


def in_threads(fns):
    """Runs every fn at once; returns their results in order."""
    out = [None] * len(fns)

    def run(i, fn):
        try:
            out[i] = fn()
        except Exception as ex:  # reported by the caller's checks
            out[i] = ex
    ts = [threading.Thread(target=run, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in ts:
        t.start()
    return ts, out


def join(ts):
    for t in ts:
        t.join(300)


def watch_queue(s, stop, seen):
    """The largest mllm_tasks_queued /metrics showed while stop is not set."""
    while not stop.is_set():
        seen.append(s.metrics().get("mllm_tasks_queued", 0))
        time.sleep(0.1)


def embed(s, text):
    return lambda: s.request("POST", "/v1/embeddings", {"input": text})


def chat(s, content):
    return lambda: s.json("POST", "/v1/chat/completions",
                          {"messages": [{"role": "user", "content": content}], "max_tokens": 8, "temperature": 0})


def decoder_queue(s, texts, ref):
    """Embeddings and chats sent together: all answered, the embeddings queued."""
    stop, seen = threading.Event(), []
    w = threading.Thread(target=watch_queue, args=(s, stop, seen))
    w.start()
    ts, out = in_threads([embed(s, t) for t in texts] + [chat(s, "Hello"), chat(s, "Tell me a story")])
    join(ts)
    stop.set()
    w.join()
    for i, r in enumerate(out[:len(texts)]):
        check(not isinstance(r, Exception) and r[0] == 200, "embedding %d: %r" % (i, r))
        v = json.loads(r[2])["data"][0]["embedding"]
        check(v == ref[texts[i]], "embedding %d differs from the same text sent alone" % i)
    for r in out[len(texts):]:
        check(not isinstance(r, Exception) and r[0] == 200 and r[1]["choices"][0]["message"], "chat: %r" % (r,))
    check(max(seen) >= 2, "the queue gauge never showed two waiting tasks: %r" % seen)
    print("ok   %d embeddings + 2 chats together: all 200, vectors as alone, up to %d tasks queued"
          % (len(texts), max(seen)))


def decoder_full(s):
    """More requests than the queue holds: 503 with Retry-After for the rest."""
    n = QUEUE + 3
    ts, out = in_threads([embed(s, "full %d" % i) for i in range(n)])
    join(ts)
    codes = [r[0] if not isinstance(r, Exception) else repr(r) for r in out]
    busy = [r for r in out if not isinstance(r, Exception) and r[0] == 503]
    check(len(busy) >= 2 and codes.count(200) + len(busy) == n and codes.count(200) >= QUEUE, "codes %r" % codes)
    for r in busy:
        check(r[1].get("retry-after") == "1", "503 without Retry-After: %r" % (r[1],))
        check(json.loads(r[2])["error"]["code"] == "server_busy", "503 body %r" % r[2])
    print("ok   %d at once, queue %d: %d answered, %d refused 503 with Retry-After: 1"
          % (n, QUEUE, codes.count(200), len(busy)))


def decoder_cancel(s):
    """A client that hangs up while its task waits: the task is cancelled."""
    before = s.metrics().get('mllm_tasks_total{kind="embeddings",result="cancelled"}', 0)
    ts, out = in_threads([embed(s, "the one running")])
    time.sleep(0.2)
    body = b'{"input": "never computed"}'
    c = socket.create_connection(("127.0.0.1", s.port))
    c.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
              % len(body) + body)
    time.sleep(0.2)
    c.close()
    join(ts)
    check(out[0][0] == 200, "the running one: %r" % (out[0],))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        after = s.metrics().get('mllm_tasks_total{kind="embeddings",result="cancelled"}', 0)
        if after > before:
            break
        time.sleep(0.1)
    check(after == before + 1, "cancelled tasks %r -> %r" % (before, after))
    print("ok   a client that hangs up while queued: its task cancelled")


def audio_queue(s, wav_bytes, long_wav, results):
    """A long transcription and two short ones together: all answered."""
    def post(audio):
        b, h = multipart([("file", audio, "clip.wav"), ("model", b"whisper-1", None)])
        return lambda: s.json("POST", "/v1/audio/transcriptions", b, h, timeout=600)
    ts, out = in_threads([post(long_wav), post(wav_bytes), post(wav_bytes)])
    join(ts)
    results.extend(out)


def multipart(fields, boundary="XyZ0123"):
    out = b""
    for name, value, fn in fields:
        out += b"--" + boundary.encode() + b"\r\n" + b'Content-Disposition: form-data; name="' + name.encode() + b'"'
        if fn:
            out += b'; filename="' + fn.encode() + b'"\r\nContent-Type: application/octet-stream'
        out += b"\r\n\r\n" + value + b"\r\n"
    return out + b"--" + boundary.encode() + b"--\r\n", {"Content-Type": "multipart/form-data; boundary=" + boundary}


def tripled(path):
    """The WAV three times over, as WAV bytes."""
    with wave.open(path, "rb") as w:
        params, frames = w.getparams(), w.readframes(w.getnframes())
    buf = io.BytesIO()
    with wave.open(buf, "wb") as o:
        o.setparams(params)
        o.writeframes(frames * 3)
    return buf.getvalue()


def words(s):
    return re.sub(r"[^a-z ]", "", s.lower()).split()


def no_http_thread(s, owner, n):
    m = s.metrics()
    check(m["mllm_tasks_on_request_thread_total"] == 0, "a task ran on an HTTP thread")
    got = m['mllm_tasks_started_total{owner="%s"}' % owner]
    check(got >= n, "tasks started by the %s: %r, expected at least %d" % (owner, got, n))
    other = m['mllm_tasks_started_total{owner="%s"}' % ("worker" if owner == "engine" else "engine")]
    check(other == 0, "tasks started by another owner: %r" % other)
    print("ok   %d tasks, all run by the %s, none on an HTTP thread" % (got, owner))


def main(argv):
    mllm, shared, build_dir = argv[0], argv[1], argv[2]
    work = tempfile.mkdtemp(prefix="mllm-serve-tasks-")
    tiny = srvtest.synth_tiny(mllm, work)
    texts = ["alpha beta", "gamma delta", "epsilon", "zeta eta theta", "iota", "kappa lambda", "mu nu xi",
             "omicron pi rho sigma"]
    whisper = os.environ.get("MLLM_WHISPER_TINY_DIR")
    wav = os.path.join(shared, "models", "audio", "jfk.wav")
    have_audio = bool(whisper) and os.path.isfile(os.path.join(whisper or "", "model.bin")) and os.path.isfile(wav)
    s = srvtest.Server(mllm, tiny, "--test-task-hold-ms", str(HOLD_MS), "--queue", str(QUEUE), "-np", "2", "-t", "1")
    a = None
    try:
        ref = {}
        for t in texts:  # one at a time: nothing waits
            st, _, data = s.request("POST", "/v1/embeddings", {"input": t})
            check(st == 200, "alone: %d %r" % (st, data[:200]))
            ref[t] = json.loads(data)["data"][0]["embedding"]
        audio_results, at = [], None
        if have_audio:
            wav_bytes = open(wav, "rb").read()
            long_wav = tripled(wav)
            a = srvtest.Server(mllm, whisper, "--test-task-hold-ms", str(HOLD_MS), "--queue", "3", "-t", "1",
                               "--max-upload", str(len(long_wav) + 4096), alias="whisper")
            at = threading.Thread(target=audio_queue, args=(a, wav_bytes, long_wav, audio_results))
            at.start()  # at the same time as the decoder's requests
        decoder_queue(s, texts, ref)
        decoder_full(s)
        decoder_cancel(s)
        no_http_thread(s, "engine", 2 * len(texts))
        check(s.stop() == 0, "decoder server exit code")
        if have_audio:
            at.join(600)
            check(len(audio_results) == 3, "audio results %r" % audio_results)
            for i, r in enumerate(audio_results):
                check(not isinstance(r, Exception) and r[0] == 200, "transcription %d: %r" % (i, r))
            lw, sw = words(audio_results[0][1]["text"]), words(audio_results[1][1]["text"])
            check(sw[:3] == ["and", "so", "my"] and len(lw) > 2 * len(sw), "long %r / short %r" % (lw, sw))
            check(audio_results[1][1]["text"] == audio_results[2][1]["text"], "the two short ones differ")
            print("ok   a long transcription (%d words) and two short ones together: all answered" % len(lw))
            no_http_thread(a, "worker", 3)
            check(a.stop() == 0, "whisper server exit code")
        else:
            print("SKIPPED (audio part): MLLM_WHISPER_TINY_DIR unset or jfk.wav absent")
    finally:
        s.close()
        if a:
            a.close()
    print("serve_tasks: all passed")
    return 0


srvtest.run(main)
