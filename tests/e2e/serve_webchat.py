"""The chat page `mllm serve` serves at GET /, in a real browser: headless
Chromium driven over the DevTools protocol on a pipe (--remote-debugging-
pipe: NUL-separated JSON on fds 3 and 4, no websocket, no network). The
server has an API key, so the page must ask for it; then two turns, each
streamed (several chunks) and equal to the non-streamed greedy answer the
API gives for the same conversation (so the page sends the whole history),
then a long answer stopped with the Stop button: the server logs the
stream as closed early and its slot is free again. No CSP violation, no
console error. A screenshot goes to the build folder (serve_webchat.png).
MLLM_WEBCHAT_MODEL=path uses that model instead of the synthetic one (how
docs/chat-page.png was made). Exit 77 (skipped) without chromium.
Args: mllm binary, shared dir, build dir. Loopback only."""
import base64
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

KEY = "page-key-1"
TURNS = ["Hello! Who are you?", "Tell me a short story about a cat."]
MAX_TOKENS = int(os.environ.get("MLLM_WEBCHAT_MAX_TOKENS", "24"))  # larger for a real model's screenshot
STEP_S = 60  # generous bound for any one page step (sanitizer builds are slow)


class Browser:
    """Headless Chromium over --remote-debugging-pipe."""

    def __init__(self, exe, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():  # in the child: the protocol's fds are 3 (commands) and 4 (replies)
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)
        args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                "--user-data-dir=" + profile, "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--mute-audio", "--window-size=900,900",
                "about:blank"]
        os.makedirs(profile, exist_ok=True)
        self.log = open(os.path.join(profile, "chromium.log"), "wb")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     preexec_fn=fds, pass_fds=(3, 4))  # kept open after preexec_fn
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def _read_one(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise srvtest.Fail("chromium did not answer in time")
            r, _, _ = select.select([self.from_chrome], [], [], left)
            if r:
                d = os.read(self.from_chrome, 1 << 20)
                if not d:
                    raise srvtest.Fail("chromium closed the pipe (exit %r)" % self.proc.poll())
                self.buf += d
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method, params=None, session=True, timeout=STEP_S):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_one(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise srvtest.Fail("%s: %r" % (method, m["error"]))
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def open(self):
        targets = self.call("Target.getTargets", session=False)["targetInfos"]
        page = [t for t in targets if t["type"] == "page"][0]
        self.session = self.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        self.call("Runtime.enable")
        self.call("Log.enable")
        self.call("Page.enable")
        # Recorded before the page's own script runs; DevTools scripts are not bound by the page's CSP.
        self.call("Page.addScriptToEvaluateOnNewDocument", {"source":
                  "window.__csp = []; document.addEventListener('securitypolicyviolation',"
                  " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"})

    def js(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise srvtest.Fail("page script failed: %s: %r" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait(self, what, expr, timeout=STEP_S):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            v = self.js("(() => { try { return %s; } catch (e) { return false; } })()" % expr)  # not loaded yet
            if v:
                return v
            time.sleep(0.05)
        raise srvtest.Fail("timed out waiting for %s; page: %r" % (what, self.js("document.body.innerText")[-1500:]))

    def type_and_send(self, text):
        self.js("(() => { const i = document.getElementById('input'); i.value = %s;"
                " document.getElementById('send').click(); })()" % json.dumps(text))

    def close(self):
        try:
            if self.proc.poll() is None:
                self.call("Browser.close", session=False, timeout=10)
                self.proc.wait(10)
        except (srvtest.Fail, OSError, subprocess.TimeoutExpired):
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)
        self.log.close()


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


def set_field(b, fid, value):
    b.js("(() => { const e = document.getElementById(%s); e.value = %s;"
         " e.dispatchEvent(new Event('change')); })()" % (json.dumps(fid), json.dumps(value)))


def main(argv):
    mllm, build = argv[0], argv[2]
    exe = find_chromium()
    if not exe:
        print("SKIPPED: no chromium (scripts/deps.sh installs it)")
        return srvtest.SKIP
    work = tempfile.mkdtemp(prefix="mllm-serve-web-")
    model = os.environ.get("MLLM_WEBCHAT_MODEL") or srvtest.synth_tiny(mllm, work)
    alias = os.path.basename(model)[:-5] if os.environ.get("MLLM_WEBCHAT_MODEL") else "tiny"
    # --context-shift and a high --max-tokens: the answer the Stop button
    # cuts short would run for minutes.
    s = srvtest.Server(mllm, model, "--api-key", KEY, "--parallel", "1", "--ctx-size", "512",
                       "--context-shift", "--max-tokens", "1000000", alias=alias)
    b = None
    try:
        st, h, body = s.request("GET", "/")
        check(st == 200 and h["content-type"] == "text/html; charset=utf-8" and b"/chat.js" in body,
              "GET / without the key: %d %r" % (st, h.get("content-type")))
        check("script-src 'self'" in h.get("content-security-policy", "") and
              h.get("x-content-type-options") == "nosniff", "page headers %r" % h)
        print("ok   GET / serves the page without the key: text/html, CSP script-src 'self', nosniff")

        b = Browser(exe, os.path.join(work, "profile"))
        b.open()
        b.call("Page.navigate", {"url": "http://127.0.0.1:%d/" % s.port})
        b.wait("the page to ask for the API key", "!document.getElementById('keybar').hidden && "
               "document.body.dataset.state === 'idle'")
        set_field(b, "key", KEY)
        got = b.wait("the model name", "document.body.dataset.model")
        check(got == alias, "model shown: %r" % got)
        check(alias in b.js("document.getElementById('model').textContent"), "model name on the page")
        print("ok   the page asks for the API key (401 from /v1/models), then shows the model '%s'" % got)

        set_field(b, "temperature", "0")
        set_field(b, "max_tokens", str(MAX_TOKENS))
        history = []
        for i, turn in enumerate(TURNS):
            b.type_and_send(turn)
            n = i + 1
            b.wait("answer %d" % n, "document.querySelectorAll('.msg.assistant[data-done]').length === %d && "
                   "document.body.dataset.state === 'idle'" % n)
            text = b.js("document.querySelectorAll('.msg.assistant .text')[%d].textContent" % i)
            chunks = int(b.js("document.querySelectorAll('.msg.assistant')[%d].dataset.chunks || '0'" % i))
            history.append({"role": "user", "content": turn})
            st, j = s.json("POST", "/v1/chat/completions", {"messages": history, "max_tokens": MAX_TOKENS,
                                                             "temperature": 0}, {"Authorization": "Bearer " + KEY})
            want = j["choices"][0]["message"]["content"]
            check(st == 200 and text == want, "turn %d: page %r, API %r" % (n, text, want))
            # A fast model may have all of a short answer ready when the
            # server sends its first text event: one chunk is enough here.
            check(chunks >= 1 and len(want) > 0, "turn %d streamed in %d chunks" % (n, chunks))
            history.append({"role": "assistant", "content": want})
            print("ok   turn %d: %d streamed chunk(s), the text equals the API's greedy answer for the %d-message "
                  "conversation" % (n, chunks, len(history) - 1))

        # Stop: an answer of up to a million tokens, stopped once it streams.
        shot = os.path.join(build, "serve_webchat.png")
        with open(shot, "wb") as f:
            f.write(base64.b64decode(b.call("Page.captureScreenshot", {"format": "png"})["data"]))
        set_field(b, "max_tokens", "1000000")
        lines0 = s.text_log().count("\n")
        b.type_and_send("Go on, as long as you can.")
        third = "document.querySelectorAll('.msg.assistant')[2]"
        b.wait("the long answer to stream", "%s.dataset.chunks >= 2" % third)
        n1 = b.js("%s.querySelector('.text').textContent.length" % third)
        n2 = b.wait("the text to grow while generating", "document.body.dataset.state === 'generating' && "
                    "%s.querySelector('.text').textContent.length > %d && "
                    "%s.querySelector('.text').textContent.length" % (third, n1, third))
        print("ok   the answer appears as it streams: %d, then %d characters while generating" % (n1, n2))
        check(not b.js("document.getElementById('stop').disabled"), "Stop is enabled while generating")
        b.js("document.getElementById('stop').click()")
        b.wait("the page to stop", "document.querySelectorAll('.msg.assistant')[2].dataset.done === 'stopped' && "
               "document.body.dataset.state === 'idle'")
        t0 = time.monotonic()
        line = None
        while time.monotonic() - t0 < 10 and not line:
            new = s.text_log().split("\n")[lines0:]
            line = next((ln for ln in new if "POST /v1/chat/completions 200" in ln and "closed before the end" in ln),
                        None)
            time.sleep(0.05)
        check(line, "the server logged the stopped stream: %r" % s.text_log()[-1500:])
        gen = int(re.search(r"gen=(\d+)", line).group(1))
        check(gen < 1000000, "generation stopped early")
        t0 = time.monotonic()
        while time.monotonic() - t0 < 10:
            st, j = s.json("GET", "/health")
            if j["slots_idle"] == 1:
                break
            time.sleep(0.05)
        check(j["slots_idle"] == 1, "slot free after Stop: %r" % j)
        print("ok   Stop aborts the stream: page idle, server logged it closed early (%d tokens), slot free" % gen)

        csp = b.js("window.__csp")
        check(csp == [], "CSP violations: %r" % csp)
        # The one expected error: the 401 of /v1/models before the key was given.
        errors = [e for e in b.events if (e["method"] == "Runtime.exceptionThrown") or
                  (e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error" and
                   not (e["params"]["entry"].get("url", "").endswith("/v1/models") and
                        "401" in e["params"]["entry"]["text"]))]
        check(not errors, "console errors: %r" % errors[:3])
        print("ok   no CSP violation, no console error; screenshot: %s" % shot)
        check(s.stop() == 0, "exit code")
    finally:
        if b:
            b.close()
        s.close()
    print("serve_webchat: all passed")
    return 0


srvtest.run(main)
