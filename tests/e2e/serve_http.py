"""mllm serve refuses lenient HTTP that lets a browser page or a confused
proxy drive it: POST bodies must say application/json (415: a cross-site
text/plain "simple request" never runs), HTTP/1.1 needs one Host (400),
Content-Length must be one value (400 for differing ones, or with
Transfer-Encoding), the API key is compared on its exact bytes ("Bearer
KEY\\0junk" is refused: 400, a NUL in a header), and an Origin header not in --allowed-origins gets 403
(none allowed by default, but the server's own page, same origin, may
post), preflights answered per the rules; GET / serves the chat page.
Args: mllm binary, shared dir, build dir. Loopback only."""
import json
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

C = "/v1/completions"
BODY = json.dumps({"model": "tiny", "prompt": "Hello", "max_tokens": 2, "temperature": 0})
KEY = "s3cret"
APP = "http://app.example:3000"
EVIL = "http://evil.example"


def raw_reply(port, data, timeout=10):
    """Sends raw bytes; returns (status, headers dict, body bytes) of the reply, status 0 if none."""
    sk = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    buf = b""
    try:
        sk.sendall(data)
        while True:
            try:
                d = sk.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not d:
                break
            buf += d
            head, sep, rest = buf.partition(b"\r\n\r\n")
            if sep:
                hdrs = {}
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    hdrs[k.strip().lower().decode()] = v.strip().decode()
                n = int(hdrs.get("content-length", "-1"))
                if n >= 0 and len(rest) >= n:
                    break
    finally:
        sk.close()
    if not buf.startswith(b"HTTP/1."):
        return 0, {}, b""
    head, _, rest = buf.partition(b"\r\n\r\n")
    hdrs = {}
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        hdrs[k.strip().lower().decode()] = v.strip().decode()
    return int(buf[9:12]), hdrs, rest


def post(headers, body=BODY.encode(), version=b"HTTP/1.1", path=C.encode()):
    """A raw POST: headers is a list of b"Name: value" lines (Content-Length is added unless given)."""
    lines = [b"POST " + path + b" " + version] + headers
    if not any(h.lower().startswith(b"content-length:") for h in headers) and \
            not any(h.lower().startswith(b"transfer-encoding:") for h in headers):
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


class Table:
    def __init__(self):
        self.fails = 0

    def expect(self, name, got, want, code=None, data=b""):
        st = got[0]
        good = st == want
        if good and code is not None:
            try:
                e = json.loads(data)["error"]
                good = e["code"] == code and isinstance(e["message"], str) and "type" in e and "param" in e
            except (ValueError, KeyError, TypeError):
                good = False
        self.fails += not good
        print("%s %-58s %d (want %d%s)" % ("ok  " if good else "FAIL", name, st, want, ", " + code if code else ""))
        if not good and data:
            print("     body: %r" % data[:200])
        return good


def main(argv):
    mllm = argv[0]
    work = tempfile.mkdtemp(prefix="mllm-serve-http-")
    model = srvtest.synth_tiny(mllm, work)
    t = Table()
    J = b"Content-Type: application/json"
    H = b"Host: 127.0.0.1"

    # ---- no key, default CORS (none) ---------------------------------------
    s = srvtest.Server(mllm, model)
    try:
        def req(name, want, code=None, method="POST", path=C, body=BODY, headers=None):
            st, hd, data = s.request(method, path, body, headers)
            t.expect(name, (st,), want, code, data)
            return st, hd, data

        def raw(name, data, want, code=None):
            st, hd, body = raw_reply(s.port, data)
            t.expect(name, (st,), want, code, body)
            return st, hd, body

        # Media type.
        req("Content-Type application/json", 200)
        req("Content-Type application/json; charset=utf-8", 200, headers={"Content-Type": "application/json; charset=utf-8"})
        req("Content-Type Application/JSON (any case)", 200, headers={"Content-Type": "Application/JSON"})
        req("Content-Type text/plain", 415, "unsupported_media_type", headers={"Content-Type": "text/plain"})
        req("Content-Type x-www-form-urlencoded (curl -d)", 415, "unsupported_media_type",
            headers={"Content-Type": "application/x-www-form-urlencoded"})
        req("Content-Type application/jsonp", 415, "unsupported_media_type",
            headers={"Content-Type": "application/jsonp"})
        raw("no Content-Type", post([H]), 415, "unsupported_media_type")
        raw("two Content-Types", post([H, J, b"Content-Type: text/plain"]), 415, "unsupported_media_type")
        req("/tokenize as text/plain", 415, "unsupported_media_type", path="/tokenize",
            body='{"content": "x"}', headers={"Content-Type": "text/plain"})
        req("GET needs no Content-Type", 200, method="GET", path="/v1/models", body=None)
        # Host.
        raw("HTTP/1.1 without Host", post([J]), 400, "invalid_host")
        raw("HTTP/1.1 GET without Host", b"GET /health HTTP/1.1\r\n\r\n", 400, "invalid_host")
        raw("HTTP/1.1 with two Host headers", post([H, b"Host: other", J]), 400, "invalid_host")
        raw("HTTP/1.0 without Host is fine", post([J], version=b"HTTP/1.0"), 200)
        # Content-Length.
        raw("two differing Content-Length", post([H, J, b"Content-Length: %d" % len(BODY), b"Content-Length: 5"]),
            400, "invalid_content_length")
        raw("two equal Content-Length", post([H, J, b"Content-Length: %d" % len(BODY)] * 1 +
                                             [b"Content-Length: %d" % len(BODY)]), 200)
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY.encode())
        raw("Content-Length with Transfer-Encoding", post([H, J, b"Content-Length: %d" % len(chunked),
                                                           b"Transfer-Encoding: chunked"], body=chunked),
            400, "invalid_content_length")
        raw("chunked alone is fine", post([H, J, b"Transfer-Encoding: chunked"], body=chunked), 200)
        # CORS, none allowed: a page of another origin cannot drive the server.
        req("cross-site text/plain simple request", 403, "origin_not_allowed",
            headers={"Content-Type": "text/plain", "Origin": EVIL})
        req("cross-site JSON request", 403, "origin_not_allowed", headers={"Origin": EVIL})
        req("cross-site GET /v1/models", 403, "origin_not_allowed", method="GET", path="/v1/models", body=None,
            headers={"Origin": EVIL})
        req("cross-site GET /health", 403, "origin_not_allowed", method="GET", path="/health", body=None,
            headers={"Origin": "null"})
        req("preflight from another origin", 403, "origin_not_allowed", method="OPTIONS", body=None,
            headers={"Origin": EVIL, "Access-Control-Request-Method": "POST"})
        # The server's own page (GET /) posts with Origin = http:// + Host:
        # same origin, allowed without --allowed-origins when Host is an
        # address; a domain name in both is DNS rebinding, refused.
        here = "127.0.0.1:%d" % s.port
        raw("same origin (the chat page's POST)", post([b"Host: " + here.encode(), J,
                                                        b"Origin: http://" + here.encode()]), 200)
        raw("same origin as localhost", post([b"Host: localhost:%d" % s.port, J,
                                              b"Origin: http://localhost:%d" % s.port]), 200)
        raw("Origin and Host the same domain (DNS rebinding)",
            post([b"Host: evil.example:%d" % s.port, J, b"Origin: http://evil.example:%d" % s.port]),
            403, "origin_not_allowed")
        raw("Origin on another port", post([b"Host: " + here.encode(), J, b"Origin: http://127.0.0.1:1"]),
            403, "origin_not_allowed")
        st, hd, page = raw("GET / (the chat page)", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 200)
        check(hd.get("content-type") == "text/html; charset=utf-8" and b"<html" in page and
              "frame-ancestors 'none'" in hd.get("content-security-policy", ""), "page headers %r" % hd)
        st, hd, js = raw("GET /chat.js", b"GET /chat.js HTTP/1.1\r\nHost: x\r\n\r\n", 200)
        check(hd.get("content-type") == "text/javascript; charset=utf-8" and b"/v1/chat/completions" in js,
              "chat.js headers %r" % hd)
        raw("POST / (a page, GET only)", post([H, J], path=b"/"), 405, "method_not_allowed")
        st, hd, _ = req("plain OPTIONS (no Origin)", 204, method="OPTIONS", body=None)
        check("POST" in hd.get("allow", ""), "OPTIONS Allow header: %r" % hd)
        check(s.stop() == 0, "exit code after SIGTERM")
    finally:
        s.close()

    # ---- --api-key and --allowed-origins ------------------------------------
    s = srvtest.Server(mllm, model, "--api-key", KEY, "--allowed-origins", APP + ", https://other.example")
    try:
        def raw(name, data, want, code=None):
            st, hd, body = raw_reply(s.port, data)
            t.expect(name, (st,), want, code, body)
            return st, hd, body

        auth = b"Authorization: Bearer " + KEY.encode()
        raw("the key", post([H, J, auth]), 200)
        raw("the key + NUL + junk", post([H, J, auth + b"\0junk"]), 400, "invalid_header")
        raw("the key + NUL + junk, the last header", post([H, J, b"Content-Length: %d" % len(BODY), auth + b"\0junk"]),
            400, "invalid_header")
        raw("NUL in another header", post([H, J, auth, b"X-Note: a\0b"]), 400, "invalid_header")
        raw("the key + NUL + NUL + junk", post([H, J, auth + b"\0\0junk", b"Content-Length: %d" % len(BODY)]),
            400, "invalid_header")
        raw("the key + NUL, then more headers", post([H, auth + b"\0", J]), 400, "invalid_header")
        raw("a folded header line (obs-fold)", post([H, J, auth, b"X-Long: a", b" b"]), 400, "invalid_header")
        raw("trailing blanks and empty values", post([b"Host: x  ", J + b"\t", auth, b"X-E:", b"X-F: "]), 200)
        raw("bare LF line ends, the key", post([H, J, auth]).replace(b"\r\n", b"\n"), 200)
        raw("the key + junk", post([H, J, auth + b"x"]), 401, "invalid_api_key")
        raw("a prefix of the key", post([H, J, auth[:-1]]), 401, "invalid_api_key")
        raw("no key", post([H, J]), 401, "invalid_api_key")
        raw("text/plain with the key", post([H, b"Content-Type: text/plain", auth]), 415, "unsupported_media_type")
        o = b"Origin: " + APP.encode()
        st, hd, _ = raw("allowed origin", post([H, J, auth, o]), 200)
        check(hd.get("access-control-allow-origin") == APP and "origin" in hd.get("vary", "").lower(),
              "CORS headers of an allowed origin: %r" % hd)
        raw("second allowed origin", post([H, J, auth, b"Origin: https://other.example"]), 200)
        raw("origin not in the list", post([H, J, auth, b"Origin: " + EVIL.encode()]), 403, "origin_not_allowed")
        raw("an allowed origin's prefix", post([H, J, auth, b"Origin: http://app.example"]), 403, "origin_not_allowed")
        raw("allowed origin, text/plain", post([H, b"Content-Type: text/plain", auth, o]), 415, "unsupported_media_type")
        st, hd, _ = raw("preflight, allowed origin (no key needed)",
                        b"OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + o +
                        b"\r\nAccess-Control-Request-Method: POST\r\n"
                        b"Access-Control-Request-Headers: authorization, content-type\r\n\r\n", 204)
        check(hd.get("access-control-allow-origin") == APP and "POST" in hd.get("access-control-allow-methods", "") and
              "authorization" in hd.get("access-control-allow-headers", "").lower() and
              "content-type" in hd.get("access-control-allow-headers", "").lower(),
              "preflight headers: %r" % hd)
        raw("preflight for a wrong method", b"OPTIONS /v1/completions HTTP/1.1\r\nHost: x\r\n" + o +
            b"\r\nAccess-Control-Request-Method: DELETE\r\n\r\n", 405, "method_not_allowed")
        raw("preflight, origin not allowed", b"OPTIONS /v1/completions HTTP/1.1\r\nHost: x\r\nOrigin: " +
            EVIL.encode() + b"\r\nAccess-Control-Request-Method: POST\r\n\r\n", 403, "origin_not_allowed")
        st, hd, _ = raw("streamed, allowed origin", post([H, J, auth, o], body=json.dumps(
            {"model": "tiny", "prompt": "Hi", "max_tokens": 2, "stream": True}).encode()), 200)
        check(hd.get("access-control-allow-origin") == APP, "CORS header on a stream: %r" % hd)
        check(s.stop() == 0, "exit code after SIGTERM")
    finally:
        s.close()

    # A malformed --allowed-origins is refused at start.
    for bad in ["app.example", "http://app.example/path", "http://*.example"]:
        p = subprocess.run([mllm, "serve", "-m", model, "--port", "0", "--allowed-origins", bad],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        good = p.returncode != 0 and b"allowed-origins" in p.stdout
        t.fails += not good
        print("%s %-58s rc %d" % ("ok  " if good else "FAIL", "--allowed-origins '%s' refused" % bad, p.returncode))

    print("serve_http: %s" % ("all passed" if not t.fails else "%d failed" % t.fails))
    return 1 if t.fails else 0


srvtest.run(main)
