"""Helpers for the `mllm serve` end-to-end tests (tests/e2e/serve_*.py).

Starts the real server on a free loopback port, talks HTTP to it with the
standard library only (http.client and raw sockets), and stops it with a
signal. Nothing here reaches beyond 127.0.0.1.
"""
import http.client
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

SKIP = 77


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def synth_tiny(mllm, workdir):
    """A tiny random Qwen3 GGUF (has a chat template), made by `mllm synth`."""
    path = os.path.join(workdir, "tiny.gguf")
    if not os.path.exists(path):
        subprocess.run([mllm, "synth", "--arch", "qwen3", "--preset", "tiny", "--format", "gguf", "-o", path],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


def import_openai(build_dir):
    """The openai package: installed, or pip-installed into a private folder."""
    try:
        import openai  # noqa: F401
        return openai
    except ImportError:
        pass
    target = os.path.join(build_dir, "pydeps-openai")
    if not os.path.isdir(os.path.join(target, "openai")):
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "--target", target, "openai>=1.0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=300)
        if r.returncode != 0:
            print("SKIPPED: cannot pip install openai (%s)" % r.stderr.decode(errors="replace").strip()[-300:])
            return None
    sys.path.insert(0, target)
    import openai
    return openai


class Server:
    def __init__(self, mllm, model, *args, alias="tiny", wait_s=60):
        self.log = tempfile.NamedTemporaryFile(prefix="mllm-serve-", suffix=".log", delete=False)
        cmd = [mllm, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0", "--alias", alias] + list(args)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        self.alias = alias
        self.port = None
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.text_log())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if self.port is None:
            self.kill()
            raise Fail("server did not start: " + self.text_log()[-2000:])

    def text_log(self):
        with open(self.log.name, "r", errors="replace") as f:
            return f.read()

    def conn(self, timeout=120):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=120):
        """(status, headers dict, body bytes); body may be bytes, str or a JSON-able object,
        sent as application/json unless headers name another Content-Type."""
        c = self.conn(timeout)
        h = dict(headers or {})
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if body is not None and not any(k.lower() == "content-type" for k in h):
            h["Content-Type"] = "application/json"  # the server refuses any other (415)
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        return r.status, hdrs, data

    def json(self, method, path, body=None, headers=None, timeout=120):
        st, _, data = self.request(method, path, body, headers, timeout)
        try:
            return st, json.loads(data)
        except ValueError:
            raise Fail("%s %s -> %d, not JSON: %r" % (method, path, st, data[:200]))

    def raw(self, payload, timeout=30, pause=None):
        """Sends raw bytes (a list of chunks with `pause` seconds between)
        and returns the status code of the reply, 0 if the server closed the
        connection without one. A reply that comes before all chunks are
        sent is read at once (the server may close right after it)."""
        import select
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        buf = b""
        try:
            chunks = payload if isinstance(payload, list) else [payload]
            for i, ch in enumerate(chunks):
                try:
                    s.sendall(ch)
                except OSError:
                    break
                if pause and i + 1 < len(chunks):
                    r, _, _ = select.select([s], [], [], pause)
                    if r:
                        break
            while b"\r\n" not in buf:
                try:
                    d = s.recv(4096)
                except (ConnectionResetError, socket.timeout):
                    break
                if not d:
                    break
                buf += d
            m = re.match(rb"HTTP/1\.[01] (\d{3})", buf)
            return int(m.group(1)) if m else 0
        finally:
            s.close()

    def stream(self, path, body, headers=None):
        """Posts with stream: true; returns the list of SSE data payloads."""
        c = self.conn()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request("POST", path, body=json.dumps(body), headers=h)
        r = c.getresponse()
        if r.status != 200:
            raise Fail("stream %s -> %d %r" % (path, r.status, r.read()[:300]))
        check(r.getheader("Content-Type", "").startswith("text/event-stream"), "stream content type")
        events = []
        for line in r.read().decode().split("\n"):
            if line.startswith("data: "):
                events.append(line[6:])
        c.close()
        return events

    def metrics(self):
        st, _, data = self.request("GET", "/metrics")
        check(st == 200, "metrics status %d" % st)
        out = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Signals the server and returns its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Fail("server did not exit %d s after signal %d" % (timeout, sig))
        self.check_log()
        return rc

    def check_log(self):
        """Sanitizer reports in the server's log fail the test."""
        log = self.text_log()
        for mark in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "ThreadSanitizer"):
            if mark in log:
                i = log.index(mark)
                raise Fail("server log has a sanitizer report:\n" + log[max(0, i - 200):i + 3000])

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self):
        self.kill()
        if os.environ.get("MLLM_SERVE_KEEP_LOGS"):
            print("server log kept:", self.log.name)
            return
        try:
            os.unlink(self.log.name)
        except OSError:
            pass


def run(main):
    """Runs main(argv) -> exit code; a Fail prints FAIL and exits 1."""
    try:
        rc = main(sys.argv[1:])
    except Fail as e:
        print("FAIL:", e)
        rc = 1
    sys.exit(rc or 0)


GGUF_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # value type: bytes


def gguf_tensor(data, want):
    """(type, file offset) of the tensor called want in a GGUF file's bytes."""
    n_t, n_kv = struct.unpack_from("<QQ", data, 8)
    at, align = 24, 32

    def string(at):
        n = struct.unpack_from("<Q", data, at)[0]
        return data[at + 8:at + 8 + n].decode(), at + 8 + n

    def skip(t, at):
        if t == 8:
            return string(at)[1]
        if t == 9:
            et, n = struct.unpack_from("<IQ", data, at)
            at += 12
            for _ in range(n):
                at = skip(et, at)
            return at
        return at + GGUF_SIZES[t]
    for _ in range(n_kv):
        key, at = string(at)
        t = struct.unpack_from("<I", data, at)[0]
        if key == "general.alignment":
            align = struct.unpack_from("<I", data, at + 4)[0]
        at = skip(t, at + 4)
    found = None
    for _ in range(n_t):
        name, at = string(at)
        nd = struct.unpack_from("<I", data, at)[0]
        t, off = struct.unpack_from("<IQ", data, at + 4 + 8 * nd)
        at += 4 + 8 * nd + 12
        if name == want:
            found = (t, off)
    check(found is not None, "no tensor " + want)
    return found[0], (at + align - 1) // align * align + found[1]
