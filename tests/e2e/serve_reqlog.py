"""mllm serve writes one line per request on stderr, when its response is
done: method, path, status, prompt and generated tokens (requests that
generated), milliseconds. Checked: the counts agree with `usage`, streams
are logged when they end, errors (400, 401, 404, 415) with their status, a
client that hangs up mid-stream gets a line saying so, a path holding a
newline stays on one line, concurrent requests never mix their lines, and
--log-requests off writes none. Args: mllm binary, shared dir, build dir.
Loopback only."""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

LINE = re.compile(r"^mllm serve: (\S+) (\S+) (\d{3}|-)(?: prompt=(\d+) gen=(\d+))? (\d+) ms"
                  r"( \(connection closed before the end\))?$")
KEY = "s3cret"
AUTH = {"Authorization": "Bearer " + KEY}
CHAT = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 7, "temperature": 0}


def request_lines(s):
    """The log's request lines as tuples (method, path, status, prompt, gen, ms, cut)."""
    out = []
    for ln in s.text_log().splitlines():
        if ln.startswith("mllm serve: listening") or ln.startswith("mllm serve: http:"):
            continue
        m = LINE.match(ln)
        if m:
            g = m.groups()
            out.append((g[0], g[1], g[2], int(g[3]) if g[3] else None, int(g[4]) if g[4] else None, int(g[5]),
                        bool(g[6])))
    return out


def wait_lines(s, n, timeout=10):
    """Waits until the log has at least n request lines (a line is written
    just after the last byte of its response is sent)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        got = request_lines(s)
        if len(got) >= n:
            return got
        time.sleep(0.05)
    raise srvtest.Fail("expected %d request lines, log:\n%s" % (n, s.text_log()[-3000:]))


def main(argv):
    mllm = argv[0]
    work = tempfile.mkdtemp(prefix="mllm-serve-log-")
    model = srvtest.synth_tiny(mllm, work)

    s = srvtest.Server(mllm, model, "--api-key", KEY, "--parallel", "2")
    try:
        want = []  # (method, path, status, has tokens)
        st, _, _ = s.request("GET", "/health")
        want.append(("GET", "/health", "200", False))
        st, j = s.json("POST", "/v1/chat/completions", CHAT, AUTH)
        check(st == 200, "chat %d" % st)
        usage_chat = j["usage"]
        want.append(("POST", "/v1/chat/completions", "200", True))
        ev = s.stream("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 9, "temperature": 0,
                                          "stream": True, "stream_options": {"include_usage": True}}, AUTH)
        usage_stream = json.loads(ev[-2])["usage"]
        want.append(("POST", "/v1/completions", "200", True))
        for method, path, body, hdr, code in [
                ("POST", "/v1/completions", "{", AUTH, "400"),
                ("GET", "/v1/models", None, {}, "401"),
                ("GET", "/no/such/thing", None, AUTH, "404"),
                ("POST", "/v1/completions", "x", dict(AUTH, **{"Content-Type": "text/plain"}), "415")]:
            st, _, _ = s.request(method, path, body, hdr)
            check(str(st) == code, "%s %s: %d, want %s" % (method, path, st, code))
            want.append((method, path, code, False))
        got = wait_lines(s, len(want))
        check(len(got) == len(want), "one line per request: %d lines for %d requests" % (len(got), len(want)))
        # A line is written when its request ends: a stream's end can come
        # after the next request's line, so lines are matched, not ordered.
        key = lambda t: (t[0], t[1], t[2])
        check(sorted(key(g) for g in got) == sorted(key(w) for w in want),
              "lines %r, want %r" % ([key(g) for g in got], [key(w) for w in want]))
        for w in want:
            g = next(g for g in got if key(g) == key(w))
            check((g[3] is not None) == w[3] and not g[6], "line %r, want %r" % (g, w))
        chat_line = next(g for g in got if key(g) == ("POST", "/v1/chat/completions", "200"))
        stream_line = next(g for g in got if key(g) == ("POST", "/v1/completions", "200"))
        check(chat_line[3:5] == (usage_chat["prompt_tokens"], usage_chat["completion_tokens"]),
              "chat line counts %r, usage %r" % (chat_line, usage_chat))
        check(stream_line[3:5] == (usage_stream["prompt_tokens"], usage_stream["completion_tokens"]),
              "stream line counts %r, usage %r" % (stream_line, usage_stream))
        print("ok   %d requests, %d lines: statuses %s; token counts equal usage (plain chat, stream)"
              % (len(want), len(got), " ".join(g[2] for g in got)))

        # A path with a newline and an escape: escaped, still one line.
        n0 = len(got)
        sk = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        sk.sendall(b"GET /a%0Afake%1B[31m HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        while sk.recv(4096):
            pass
        sk.close()
        got = wait_lines(s, n0 + 1)
        check(got[-1][1] == "/a%0Afake%1B[31m" and got[-1][2] == "404", "escaped path: %r" % (got[-1],))
        check("fake" not in "".join(ln for ln in s.text_log().splitlines() if not LINE.match(ln)),
              "no forged line")
        print("ok   a path holding a newline and ESC is logged escaped on one line: %s" % got[-1][1])

        # A stream the client leaves: logged when the connection closes, saying so.
        n0 = len(got)
        body = json.dumps({"prompt": "Once", "max_tokens": 3000, "ignore_eos": True, "stream": True}).encode()
        sk = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        sk.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Authorization: Bearer " + KEY.encode() + b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        buf = b""
        while b"data: " not in buf:
            buf += sk.recv(4096)
        sk.close()
        got = wait_lines(s, n0 + 1)
        g = got[-1]
        check(g[:3] == ("POST", "/v1/completions", "200") and g[6] and g[4] is not None and g[4] < 3000,
              "hung-up stream line %r" % (g,))
        print("ok   a stream the client left: 200, gen=%d of 3000, marked 'connection closed before the end'" % g[4])

        # Concurrent requests: whole lines, one each.
        n0 = len(got)
        errs = []

        def client(i):
            try:
                if i % 2:
                    s.stream("/v1/chat/completions", dict(CHAT, stream=True), AUTH)
                else:
                    s.json("POST", "/v1/chat/completions", CHAT, AUTH)
            except Exception as e:  # noqa: BLE001 - reported below
                errs.append(repr(e))
        ts = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
        check(not errs, "concurrent clients: %r" % errs)
        got = wait_lines(s, n0 + 8)
        check(len(got) == n0 + 8 and all(g[:3] == ("POST", "/v1/chat/completions", "200") for g in got[n0:]),
              "8 concurrent requests, 8 lines: %r" % got[n0:])
        bad = [ln for ln in s.text_log().splitlines() if ln.startswith("mllm serve: ") and
               not LINE.match(ln) and not re.match(r"mllm serve: (listening|http:)", ln)]
        check(not bad, "malformed or mixed lines: %r" % bad)
        print("ok   8 concurrent requests (plain and streamed): 8 whole lines")
        check(s.stop() == 0, "exit code")
    finally:
        s.close()

    # --log-requests off: no request lines; a bad value is refused.
    s = srvtest.Server(mllm, model, "--log-requests", "off")
    try:
        s.request("GET", "/health")
        s.json("POST", "/v1/chat/completions", CHAT)
        s.request("GET", "/nothing")
        check(s.stop() == 0, "exit code")
        check(not request_lines(s), "--log-requests off still logs: %r" % request_lines(s))
        print("ok   --log-requests off: no request lines")
    finally:
        s.close()
    r = subprocess.run([mllm, "serve", "-m", model, "--log-requests", "maybe"], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 2 and "--log-requests" in r.stderr, "--log-requests maybe: %d %r" % (r.returncode, r.stderr))
    h = subprocess.run([mllm, "serve", "--help"], capture_output=True, text=True, timeout=60)
    check("--log-requests on|off" in h.stdout, "--help documents --log-requests")
    print("ok   --log-requests maybe refused (exit 2); --help documents it")
    print("serve_reqlog: all passed")
    return 0


srvtest.run(main)
