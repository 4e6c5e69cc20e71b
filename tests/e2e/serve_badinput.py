"""mllm serve: a table of malformed requests, each with the status code it
must get (and OpenAI's error shape); afterwards the server still answers.
Args: mllm binary, shared dir, build dir."""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

MAX_BODY = 8192
CTX = 128
OK_COMPLETION = {"model": "tiny", "prompt": "Hello", "max_tokens": 4, "temperature": 0}


def comp(**kw):
    d = dict(OK_COMPLETION)
    for k, v in kw.items():
        if v is DROP:
            d.pop(k, None)
        else:
            d[k] = v
    return json.dumps(d)


def chat(messages, **kw):
    d = {"model": "tiny", "messages": messages, "max_tokens": 4}
    d.update(kw)
    return json.dumps(d)


DROP = object()
C, CH = "/v1/completions", "/v1/chat/completions"

# (name, method, path, body, expected status)
TABLE = [
    ("truncated JSON", "POST", C, '{"model": "tiny", "prompt": "x"', 400),
    ("not JSON", "POST", C, "hello there", 400),
    ("JSON array body", "POST", C, "[1, 2, 3]", 400),
    ("empty body", "POST", C, "", 400),
    ("bytes after the JSON", "POST", C, comp() + " trailing", 400),
    ("deeply nested JSON", "POST", C, "[" * 3000 + "]" * 3000, 400),
    ("model not a string", "POST", C, comp(model=123), 400),
    ("prompt missing", "POST", C, comp(prompt=DROP), 400),
    ("prompt a boolean", "POST", C, comp(prompt=True), 400),
    ("prompt token id out of range", "POST", C, comp(prompt=[1, 99999999]), 400),
    ("prompt several strings", "POST", C, comp(prompt=["a", "b"]), 400),
    ("prompt invalid UTF-8", "POST", C, comp().replace('"Hello"', '"Hel\xfflo"').encode("latin-1"), 400),
    ("max_tokens 0", "POST", C, comp(max_tokens=0), 400),
    ("max_tokens a string", "POST", C, comp(max_tokens="10"), 400),
    ("max_tokens fractional", "POST", C, comp(max_tokens=1.5), 400),
    ("max_tokens over the limit", "POST", C, comp(max_tokens=10 ** 9), 400),
    ("temperature negative", "POST", C, comp(temperature=-1), 400),
    ("temperature a string", "POST", C, comp(temperature="hot"), 400),
    ("top_p 0", "POST", C, comp(top_p=0), 400),
    ("seed a string", "POST", C, comp(seed="abc"), 400),
    ("stream a string", "POST", C, comp(stream="yes"), 400),
    ("stream_options without stream", "POST", C, comp(stream_options={"include_usage": True}), 400),
    ("five stop strings", "POST", C, comp(stop=["a", "b", "c", "d", "e"]), 400),
    ("stop not strings", "POST", C, comp(stop=[1]), 400),
    ("empty stop string", "POST", C, comp(stop=""), 400),
    ("n = 9", "POST", C, comp(n=9), 400),
    ("logprobs a boolean (completions wants 0..5)", "POST", C, comp(logprobs=True), 400),
    ("prompt longer than the context", "POST", C, comp(prompt="word " * (CTX * 2)), 400),
    ("prompt + max_tokens over the context", "POST", C, comp(max_tokens=CTX), 400),
    ("body over --max-body", "POST", C, comp(prompt="x" * (MAX_BODY + 10)), 413),
    ("chat: messages missing", "POST", CH, json.dumps({"model": "tiny"}), 400),
    ("chat: messages not an array", "POST", CH, chat("hello"), 400),
    ("chat: no messages", "POST", CH, chat([]), 400),
    ("chat: too many messages", "POST", CH, chat([{"role": "user", "content": "x"}] * 9), 400),
    ("chat: unknown role", "POST", CH, chat([{"role": "wizard", "content": "x"}]), 400),
    ("chat: message not an object", "POST", CH, chat(["x"]), 400),
    ("chat: content a number", "POST", CH, chat([{"role": "user", "content": 5}]), 400),
    ("chat: image content part", "POST", CH,
     chat([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]), 400),
    ("tokenize: content a number", "POST", "/tokenize", json.dumps({"content": 5}), 400),
    ("detokenize: ids not numbers", "POST", "/detokenize", json.dumps({"tokens": ["a"]}), 400),
    ("detokenize: id out of range", "POST", "/detokenize", json.dumps({"tokens": [-1]}), 400),
    ("GET on a POST endpoint", "GET", C, None, 405),
    ("POST on a GET endpoint", "POST", "/health", "{}", 405),
    ("unknown endpoint", "GET", "/v2/everything", None, 404),
]


def main(argv):
    mllm = argv[0]
    work = tempfile.mkdtemp(prefix="mllm-serve-bad-")
    model = srvtest.synth_tiny(mllm, work)
    s = srvtest.Server(mllm, model, "--parallel", "2", "--ctx-size", str(CTX), "--max-body", str(MAX_BODY),
                       "--max-messages", "8", "--max-tokens", "1000", "--timeout", "2")
    fails = 0
    try:
        for name, method, path, body, want in TABLE:
            st, _, data = s.request(method, path, body)
            err_ok = True
            try:
                e = json.loads(data)["error"]
                err_ok = isinstance(e["message"], str) and "type" in e and "code" in e and "param" in e
            except (ValueError, KeyError, TypeError):
                err_ok = False
            good = st == want and err_ok
            fails += not good
            print("%s %-40s %d (want %d)%s" % ("ok  " if good else "FAIL", name, st, want,
                                              "" if err_ok else " no OpenAI error object: %r" % data[:120]))

        # One model is served: any name, null or none means it, and the
        # answer names the real id (these were 404 / 400 before).
        for name, path, body in [("model missing", C, comp(model=DROP)), ("model null", C, comp(model=None)),
                                 ("another model name", C, comp(model="gpt-4")),
                                 ("chat: another model name", CH, chat([{"role": "user", "content": "x"}], model="nope")),
                                 ("chat: model missing", CH, json.dumps({"messages": [{"role": "user", "content": "x"}],
                                                                         "max_tokens": 2}))]:
            st, j = s.json("POST", path, body)
            good = st == 200 and j.get("model") == "tiny"
            fails += not good
            print("%s %-40s %d, model %r (want 200, 'tiny')" % ("ok  " if good else "FAIL", name, st, j.get("model")))

        # Raw HTTP: slow bodies, oversized chunked bodies, garbage, huge headers.
        hdr = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        body = comp().encode()
        raw = [
            ("slow body (4 x 0.7 s, --timeout 2)", [hdr + b"Content-Length: %d\r\n\r\n" % len(body)] +
             [body[i:i + 1] for i in range(4)] + [body[4:]], 0.7, (408,)),
            ("endless trickle (cut off)", [hdr + b"Content-Length: %d\r\n\r\n" % len(body)] +
             [body[i:i + 1] for i in range(12)], 0.6, (0, 408)),
            ("chunked body over --max-body", [hdr + b"Transfer-Encoding: chunked\r\n\r\n"] +
             [b"1000\r\n" + b"x" * 4096 + b"\r\n" for _ in range(4)] + [b"0\r\n\r\n"], None, (413,)),
            ("Content-Length over --max-body", [hdr + b"Content-Length: 99999999\r\n\r\n"], None, (413,)),
            ("garbage request line (closed)", [b"GARBAGE\r\n\r\n"], None, (0, 400)),
            ("request line without version", [b"GET /health FOO\r\n\r\n"], None, (400,)),
            ("Content-Length not a number", [hdr + b"Content-Length: abc\r\n\r\n"], None, (400,)),
            ("huge header", [b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n"], None,
             (400, 413, 431)),
            # #42: an unknown coding waited for the timeout; %00 cut the route
            ("Transfer-Encoding: gzip (answered at once)", [hdr + b"Transfer-Encoding: gzip\r\n\r\nabc"], None,
             (501,)),
            ("Transfer-Encoding: gzip, chunked", [hdr + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"],
             None, (501,)),
            ("/health%00evil", [b"GET /health%00evil HTTP/1.1\r\nHost: x\r\n\r\n"], None, (400,)),
            ("/metrics%00x", [b"GET /metrics%00x HTTP/1.1\r\nHost: x\r\n\r\n"], None, (400,)),
        ]
        for name, chunks, pause, want in raw:
            st = s.raw(chunks, pause=pause)
            good = st in want
            fails += not good
            print("%s %-40s %d (want %s)" % ("ok  " if good else "FAIL", name, st, want))

        # A client that opens a connection and says nothing is dropped after --timeout.
        import socket
        t0 = time.monotonic()
        sk = socket.create_connection(("127.0.0.1", s.port), timeout=20)
        closed = sk.recv(1) == b""
        sk.close()
        dt = time.monotonic() - t0
        good = closed and dt < 10
        fails += not good
        print("%s %-40s closed after %.1f s" % ("ok  " if good else "FAIL", "silent connection", dt))

        # Still alive and answering.
        st, j = s.json("POST", C, comp())
        check(st == 200 and j["choices"][0]["finish_reason"] in ("stop", "length"), "server still answers: %d" % st)
        # A slot turns idle just after its answer is sent: allow it a moment.
        for _ in range(100):
            st, j = s.json("GET", "/health")
            if st == 200 and j["slots_idle"] == 2:
                break
            time.sleep(0.05)
        check(st == 200 and j["slots_idle"] == 2, "all slots idle afterwards: %r" % j)
        print("ok   server still healthy after %d bad requests" % (len(TABLE) + len(raw) + 1))
        rc = s.stop()
        check(rc == 0, "exit code %d after SIGTERM" % rc)
    finally:
        s.close()
    print("serve_badinput: %s" % ("all passed" if not fails else "%d failed" % fails))
    return 1 if fails else 0


srvtest.run(main)
