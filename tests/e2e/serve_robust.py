"""mllm serve robustness: a full queue answers 503; a client that hangs up
(queued, mid-stream, or waiting for a plain answer) stops its generation and
frees its slot; SIGTERM during streaming lets short streams finish, ends long
ones cleanly with an error event and [DONE], and the server exits 0.
Args: mllm binary, shared dir, build dir. Loopback only."""
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

LONG = 3000  # tokens: more than the tests below wait for
# The hang-up tests' requests must still run when the client leaves: with a
# context shift and this many tokens they cannot end on their own (the tiny
# model makes 3000 tokens in well under a second on an idle machine).
ENDLESS = 1_048_576  # the largest --max-tokens


def long_body(stream, max_tokens=LONG):
    return json.dumps({"model": "tiny", "prompt": "Once upon a time", "max_tokens": max_tokens,
                       "temperature": 0, "ignore_eos": True, "stream": stream})


def open_request(s, body):
    """Sends a POST on a raw socket and returns the socket (reply unread)."""
    sk = socket.create_connection(("127.0.0.1", s.port), timeout=60)
    b = body.encode()
    sk.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (len(b), b))
    return sk


def read_until(sk, marker, limit=1 << 20, buf=b""):
    """Reads until marker is in what was read (buf: what an earlier call
    already read from this socket, which may hold the whole stream)."""
    while marker not in buf and len(buf) < limit:
        d = sk.recv(4096)
        if not d:
            break
        buf += d
    return buf


def ends_done(raw):
    """The last SSE event of a raw chunked response is [DONE]."""
    i = raw.rfind(b"data: ")
    return i >= 0 and raw[i:].startswith(b"data: [DONE]\n\n")


def wait_for(what, pred, timeout=10):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return time.monotonic() - t0
        time.sleep(0.05)
    raise srvtest.Fail("timed out waiting for " + what)


def gauges(s):
    st, j = s.json("GET", "/health")
    return j


def main(argv):
    mllm = argv[0]
    work = tempfile.mkdtemp(prefix="mllm-serve-robust-")
    model = srvtest.synth_tiny(mllm, work)

    # ---- 1 slot, queue of 1 ------------------------------------------------
    s = srvtest.Server(mllm, model, "--parallel", "1", "--queue", "1", "--ctx-size", "512", "--context-shift",
                       "--max-tokens", str(ENDLESS))
    try:
        a = open_request(s, long_body(True, ENDLESS))
        check(b"data: " in read_until(a, b"data: "), "first stream event")
        wait_for("slot busy", lambda: gauges(s)["slots_idle"] == 0)
        b = open_request(s, long_body(False, ENDLESS))
        wait_for("one queued", lambda: gauges(s)["queue_length"] == 1)
        st, hdrs, data = s.request("POST", "/v1/completions", long_body(False, 4))
        j = json.loads(data)
        check(st == 503 and j["error"]["code"] == "server_busy", "full queue: %d %r" % (st, j))
        check(hdrs.get("retry-after") == "1", "full queue: Retry-After %r" % hdrs.get("retry-after"))
        print("ok   full queue answers 503 server_busy, Retry-After: 1")

        m0 = s.metrics()
        b.close()  # hang up while queued
        wait_for("queued request dropped", lambda: gauges(s)["queue_length"] == 0, 5)
        print("ok   a queued request whose client hung up leaves the queue")
        a.close()  # hang up mid-stream
        dt = wait_for("slot freed after mid-stream hang-up", lambda: gauges(s)["slots_idle"] == 1, 5)
        m1 = s.metrics()
        cancelled = m1['mllm_requests_total{finish_reason="cancelled"}'] - m0['mllm_requests_total{finish_reason="cancelled"}']
        check(cancelled == 2, "2 cancelled requests counted, got %d" % cancelled)
        gen = m1["mllm_generated_tokens_total"]
        check(gen < ENDLESS, "the stream's generation stopped early (%d tokens)" % gen)
        print("ok   mid-stream hang-up frees the slot in %.2f s (%d tokens generated, not %d)" % (dt, gen, ENDLESS))

        c = open_request(s, long_body(False, ENDLESS))  # a plain request, client gone while it runs
        wait_for("slot busy", lambda: gauges(s)["slots_idle"] == 0)
        time.sleep(0.3)
        c.close()
        dt = wait_for("slot freed after hang-up", lambda: gauges(s)["slots_idle"] == 1, 5)
        print("ok   hang-up during a plain request frees the slot in %.2f s" % dt)

        st, j = s.json("POST", "/v1/completions", long_body(False, 8))
        check(st == 200 and j["usage"]["completion_tokens"] == 8, "the slot serves again: %d %r" % (st, j))
        print("ok   the freed slot serves the next request")
        rc = s.stop()
        check(rc == 0, "exit code %d" % rc)
    finally:
        s.close()

    # ---- SIGTERM: queued streams end with an error at once; a second
    # signal cancels the running one -----------------------------------------
    s = srvtest.Server(mllm, model, "--parallel", "1", "--queue", "4", "--ctx-size", "4096",
                       "--max-tokens", "4000", "--shutdown-grace", "60")
    try:
        results = {}

        heads = {}

        def reader(name, sk):
            results[name] = read_until(sk, b"data: [DONE]", 1 << 24, heads.get(name, b""))

        run_sk = open_request(s, long_body(True, 4000))
        heads["run"] = read_until(run_sk, b"data: ")
        check(b"data: " in heads["run"], "stream started")
        queued_sk = open_request(s, long_body(True, 300))
        wait_for("one queued", lambda: gauges(s)["queue_length"] == 1)
        threads = {n: threading.Thread(target=reader, args=(n, sk)) for n, sk in (("run", run_sk), ("queued", queued_sk))}
        for t in threads.values():
            t.start()
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        threads["queued"].join(10)
        queued = results.get("queued", b"")
        check(ends_done(queued) and b'"error"' in queued and b"shutting down" in queued,
              "the queued stream ended with an error event and [DONE]: %r" % queued[-300:])
        try:
            refused = s.raw(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        except ConnectionRefusedError:
            refused = 0
        check(refused in (0, 503), "a new request during shutdown is refused (got %d)" % refused)
        print("ok   SIGTERM: the queued stream ends with an error event and [DONE]; new requests are refused")
        rc = s.stop(signal.SIGINT, timeout=30)
        dt = time.monotonic() - t0
        threads["run"].join(10)
        ran = results.get("run", b"")
        check(rc == 0, "exit code %d after SIGTERM + SIGINT" % rc)
        check(ends_done(ran), "the running stream ended with [DONE]: %r" % ran[-300:])
        if b'"error"' in ran:
            check(b"shutting down" in ran, "cancel reason: %r" % ran[-300:])
            print("ok   second signal: the running stream is cancelled with an error event and [DONE], exit 0 in %.1f s" % dt)
        else:
            check(b'"finish_reason":"length"' in ran, "the running stream ended: %r" % ran[-300:])
            print("ok   second signal: the running stream had already finished (fast machine), exit 0 in %.1f s" % dt)
        for sk in (run_sk, queued_sk):
            sk.close()
    finally:
        s.close()

    # ---- SIGTERM during a stream: it finishes within the grace period ----
    s = srvtest.Server(mllm, model, "--parallel", "1", "--ctx-size", "4096", "--max-tokens", "4000",
                       "--shutdown-grace", "60")
    try:
        sk = open_request(s, long_body(True, 300))
        head = read_until(sk, b"data: ")
        check(b"data: " in head, "stream started")
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        out = read_until(sk, b"data: [DONE]", 1 << 24, head)
        rc = s.stop(timeout=60)
        dt = time.monotonic() - t0
        check(rc == 0, "exit code %d after SIGTERM" % rc)
        check(ends_done(out) and b'"finish_reason":"length"' in out and b'"error"' not in out,
              "the stream finished normally: %r" % out[-300:])
        print("ok   SIGTERM during a stream: it finishes normally, then exit 0 (%.1f s)" % dt)
        sk.close()
    finally:
        s.close()
    print("serve_robust: all passed")
    return 0


srvtest.run(main)
