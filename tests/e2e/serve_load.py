"""mllm serve under a bounded load: 8 concurrent clients x 20 requests
(plain and streamed, 5 prompts) on 2 slots. Every request must succeed and
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

CLIENTS, PER_CLIENT, MAX_TOKENS = 8, 20, 48
PROMPTS = ["Once upon a time", "The capital of France is", "1, 2, 3, 4,",
           "In a hole in the ground there lived", "Hello"]


def body(prompt, stream):
    return {"model": "tiny", "prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0, "stream": stream}


def answer(s, prompt, stream):
    if stream:
        events = s.stream("/v1/completions", body(prompt, True))
        check(events and events[-1] == "[DONE]", "stream did not end with [DONE]")
        return "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1])
    st, j = s.json("POST", "/v1/completions", body(prompt, False))
    check(st == 200, "status %d: %r" % (st, j))
    return j["choices"][0]["text"]


def main(argv):
    mllm = argv[0]
    work = tempfile.mkdtemp(prefix="mllm-serve-load-")
    model = srvtest.synth_tiny(mllm, work)
    s = srvtest.Server(mllm, model, "--parallel", "2", "--queue", "64", "--ctx-size", "512")
    try:
        ref = {p: answer(s, p, False) for p in PROMPTS}
        for p in PROMPTS:
            check(answer(s, p, True) == ref[p], "streamed answer differs from the plain one for %r" % p)
        errors, done = [], [0]
        lock = threading.Lock()

        def client(k):
            for i in range(PER_CLIENT):
                p = PROMPTS[(k + i) % len(PROMPTS)]
                try:
                    got = answer(s, p, (k + i) % 2 == 0)
                    if got != ref[p]:
                        raise srvtest.Fail("client %d request %d: %r != %r" % (k, i, got, ref[p]))
                    with lock:
                        done[0] += 1
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    with lock:
                        errors.append(str(e))

        t0 = time.time()
        threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        dt = time.time() - t0
        for e in errors[:5]:
            print("error:", e)
        check(not errors, "%d of %d requests failed" % (len(errors), CLIENTS * PER_CLIENT))
        check(done[0] == CLIENTS * PER_CLIENT, "lost requests: %d of %d" % (done[0], CLIENTS * PER_CLIENT))
        print("ok   %d requests from %d clients in %.1f s, all answers identical to the unloaded ones"
              % (done[0], CLIENTS, dt))
        m = s.metrics()
        total = CLIENTS * PER_CLIENT + 2 * len(PROMPTS)
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
    print("serve_load: all passed")
    return 0


srvtest.run(main)
