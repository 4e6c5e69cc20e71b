"""mllm serve against slow clients ("slowloris"): 150 connections that each
send one header line now and then, and reconnect when closed, must not lock
a normal client out. The normal client's requests (health, a completion)
must each be answered within 2 s, while the trickle comes from the client's
own address (the per-address cap: the guard sheds that address's oldest
unfinished connections to make room), from three other loopback addresses
(the overall cap), and with --api-key. A single trickling connection is closed at the header
deadline although it is never idle.
Args: mllm binary, shared dir, build dir. Loopback only; about 25 s."""
import os
import selectors
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

N_TRICKLE = 150
LINE_EVERY_S = 1.0       # each trickler sends one header line this often
PHASE_S = 5.0            # how long each attack lasts
ANSWER_WITHIN_S = 2.0    # the acceptance bound for a normal request
HEADER_TIMEOUT_S = 3
KEY = "k3y"


class Trickle:
    """N_TRICKLE connections from the source addresses `srcs` in turn, each sending one
    header line every LINE_EVERY_S; one that the server closes is opened
    again at its next turn, as slowloris tools do."""

    def __init__(self, port, srcs):
        self.port, self.srcs = port, srcs
        self.stop = threading.Event()
        self.opened = self.closed = 0
        self.errors = []
        self.th = threading.Thread(target=self.run, daemon=True)

    def connect(self, i):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)
        s.bind((self.srcs[i % len(self.srcs)], 0))
        s.connect(("127.0.0.1", self.port))
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
        s.setblocking(False)
        self.opened += 1
        return s

    def run(self):
        sel = selectors.DefaultSelector()
        slots = []  # [socket or None, lines sent, when the last was sent]
        try:
            for i in range(N_TRICKLE):
                s = self.connect(i)
                slots.append([s, 0, time.monotonic()])
                sel.register(s, selectors.EVENT_READ, i)
            while not self.stop.is_set():
                for key, _ in sel.select(timeout=0.05):
                    try:
                        gone = key.fileobj.recv(4096) == b""
                    except (BlockingIOError, InterruptedError):
                        gone = False
                    except OSError:
                        gone = True
                    if gone:
                        self.closed += 1
                        sel.unregister(key.fileobj)
                        key.fileobj.close()
                        slots[key.data][0] = None
                now = time.monotonic()
                for i, st in enumerate(slots):
                    if now - st[2] < LINE_EVERY_S:
                        continue
                    st[2] = now
                    if st[0] is None:
                        st[0], st[1] = self.connect(i), 0
                        sel.register(st[0], selectors.EVENT_READ, i)
                        continue
                    st[1] += 1
                    try:
                        st[0].send(b"X-Slow-%d: %d\r\n" % (i, st[1]))
                    except OSError:
                        pass  # closed: the select above sees it
        except OSError as e:
            self.errors.append(repr(e))
        finally:
            for st in slots:
                if st[0] is not None:
                    st[0].close()
            sel.close()

    def __enter__(self):
        self.th.start()
        deadline = time.monotonic() + 20
        while self.opened < N_TRICKLE and not self.errors and time.monotonic() < deadline:
            time.sleep(0.05)
        check(not self.errors, "trickle from %s: %s" % (self.srcs, self.errors))
        check(self.opened >= N_TRICKLE, "only %d trickling connections opened" % self.opened)
        time.sleep(1.5)  # every connection holds a few header lines now
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.th.join(10)


def timed(what, fn):
    t0 = time.monotonic()
    try:
        out = fn()
    except OSError as e:
        raise srvtest.Fail("%s: %r after %.1f s" % (what, e, time.monotonic() - t0))
    dt = time.monotonic() - t0
    check(dt < ANSWER_WITHIN_S, "%s took %.2f s (bound %.1f s)" % (what, dt, ANSWER_WITHIN_S))
    return out, dt


def normal_client(s, label, key=None):
    """Health and a short completion, over and over, for PHASE_S."""
    h = {"Authorization": "Bearer " + key} if key else {}
    body = {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 4, "temperature": 0}
    worst, n = 0.0, 0
    t_end = time.monotonic() + PHASE_S
    while time.monotonic() < t_end:
        (st, j), dt1 = timed(label + ": GET /health", lambda: s.json("GET", "/health", timeout=10))
        check(st == 200, "%s: health %d" % (label, st))
        (st, j), dt2 = timed(label + ": completion", lambda: s.json("POST", "/v1/completions", body, h, timeout=10))
        check(st == 200 and j["choices"][0]["finish_reason"] in ("stop", "length"), "%s: completion %d %r" % (label, st, j))
        worst, n = max(worst, dt1, dt2), n + 2
        time.sleep(0.2)
    print("ok   %-46s %d requests, slowest %.2f s" % (label, n, worst))


def can_bind(addr):
    try:
        with socket.socket() as t:
            t.bind((addr, 0))
        return True
    except OSError:
        return False


def header_deadline(s):
    """One connection that is never idle (a line every 0.5 s) but never
    finishes its head is closed at --header-timeout, not kept forever."""
    sk = socket.create_connection(("127.0.0.1", s.port), timeout=1)
    t0 = time.monotonic()
    closed = False
    try:
        sk.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        for i in range(int(4 * HEADER_TIMEOUT_S / 0.5)):
            try:
                sk.sendall(b"X-Slow: %d\r\n" % i)
                closed = sk.recv(1) == b""
            except socket.timeout:
                continue
            except OSError:
                closed = True
            if closed:
                break
    finally:
        sk.close()
    dt = time.monotonic() - t0
    check(closed and HEADER_TIMEOUT_S - 0.5 <= dt < 2 * HEADER_TIMEOUT_S,
          "a trickling head: closed=%s after %.1f s (--header-timeout %d)" % (closed, dt, HEADER_TIMEOUT_S))
    print("ok   %-46s closed after %.1f s" % ("header deadline (a line every 0.5 s)", dt))


def main(argv):
    mllm = argv[0]
    work = tempfile.mkdtemp(prefix="mllm-serve-slowloris-")
    model = srvtest.synth_tiny(mllm, work)
    # The default connection limits (128 open, 64 per address); a short
    # header deadline so the test is quick.
    s = srvtest.Server(mllm, model, "--header-timeout", str(HEADER_TIMEOUT_S))
    try:
        header_deadline(s)
        with Trickle(s.port, ["127.0.0.1"]) as t:
            normal_client(s, "%d trickling from the client's address" % N_TRICKLE)
        print("     (%d trickling connections opened, %d closed by the server)" % (t.opened, t.closed))
        # Three other addresses, 50 each: under the per-address cap, over
        # the overall one.
        others = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
        multi = all(can_bind(a) for a in others)
        if multi:
            with Trickle(s.port, others):
                normal_client(s, "%d trickling from 3 other addresses" % N_TRICKLE)
        else:
            print("--   127.0.0.2-4 are not loopback addresses here: the other-address phase is skipped")
        m = s.metrics()
        shed = {k: v for k, v in m.items() if k.startswith("mllm_connections_shed_total")}
        check(shed.get('mllm_connections_shed_total{reason="deadline"}', 0) >= 1, "no deadline shedding: %r" % shed)
        check(shed.get('mllm_connections_shed_total{reason="per_ip"}', 0) >= 1, "no per-address shedding: %r" % shed)
        check(not multi or shed.get('mllm_connections_shed_total{reason="full"}', 0) >= 1, "no shedding when full: %r" % shed)
        print("ok   metrics: %r" % shed)
        check(s.stop() == 0, "exit code after SIGTERM")
    finally:
        s.close()

    s = srvtest.Server(mllm, model, "--header-timeout", str(HEADER_TIMEOUT_S), "--api-key", KEY)
    try:
        with Trickle(s.port, ["127.0.0.1"]):
            normal_client(s, "%d trickling, --api-key" % N_TRICKLE, key=KEY)
        check(s.stop() == 0, "exit code after SIGTERM")
    finally:
        s.close()
    print("serve_slowloris: all passed")
    return 0


srvtest.run(main)
