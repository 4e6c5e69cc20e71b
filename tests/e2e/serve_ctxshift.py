"""mllm serve --context-shift. With a 64-token context and no shift, an
answer ends when the context is full (finish_reason "length" after
64 - prompt tokens; a max_tokens past the context is refused up front).
With --context-shift the same requests get every token they ask for
(plain and streamed), and the text is what `mllm run --context-shift`
(completions) and `mllm chat --context-shift` (chat with a system
prompt: the system turn is kept) give with the same seed, so the server
shifts exactly as the CLI does. Sampling (temperature 1, fixed seeds)
rather than greedy: the tiny random model repeats one token greedily, which
would hide a wrong shift. Args: mllm binary, shared dir, build dir."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

CTX = 64
PROMPT = "Once upon a time"
SYSTEM = "You are a helpful bot."
N = 200      # tokens asked for: three context shifts' worth
SEED = 1
NEUTRAL = {"temperature": 1, "top_p": 1, "seed": SEED}  # the server's top_k 0, min_p 0 are the defaults
CLI_NEUTRAL = ["--temp", "1", "--top-k", "0", "--top-p", "1", "--min-p", "0", "--seed", str(SEED)]


def ascii_only(s):
    """Bytes that are not whole UTF-8 characters come out as U+FFFD from the
    server and raw from the CLI: compare what both print the same way."""
    if isinstance(s, bytes):
        s = s.decode("utf-8", "replace")
    return "".join(c for c in s if ord(c) < 128)


def comp(**kw):
    d = {"prompt": PROMPT, "ignore_eos": True}
    d.update(NEUTRAL)
    d.update(kw)
    return d


def chat(**kw):
    d = {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hi"}]}
    d.update(NEUTRAL)
    d.update(kw)
    return d


def main(argv):
    mllm = argv[0]
    work = tempfile.mkdtemp(prefix="mllm-serve-shift-")
    model = srvtest.synth_tiny(mllm, work)
    common = ["--ctx-size", str(CTX), "--default-max-tokens", str(N), "--parallel", "1"]

    # ---- without --context-shift: a full context ends the answer ----------
    s = srvtest.Server(mllm, model, *common)
    try:
        st, j = s.json("POST", "/v1/completions", comp(max_tokens=N))
        check(st == 400 and j["error"]["code"] == "context_length_exceeded", "max_tokens past the context: %d %r" % (st, j))
        st, j = s.json("POST", "/v1/completions", comp())
        u = j["usage"]
        check(st == 200 and j["choices"][0]["finish_reason"] == "length" and
              u["completion_tokens"] == CTX - u["prompt_tokens"], "no shift: %d %r" % (st, j))
        st, j = s.json("POST", "/v1/chat/completions", chat())
        uc = j["usage"]
        check(st == 200 and j["choices"][0]["finish_reason"] == "length" and
              uc["completion_tokens"] == CTX - uc["prompt_tokens"], "no shift, chat: %d %r" % (st, j))
        print("ok   no shift: max_tokens %d refused (400); without max_tokens the answers end at the context: "
              "%d + %d and %d + %d tokens, finish_reason length" % (N, u["prompt_tokens"], u["completion_tokens"],
                                                                    uc["prompt_tokens"], uc["completion_tokens"]))
        check(s.stop() == 0, "exit code")
    finally:
        s.close()

    # ---- with --context-shift: every token asked for ------------------------
    s = srvtest.Server(mllm, model, "--context-shift", *common)
    try:
        st, j = s.json("POST", "/v1/completions", comp(max_tokens=N))
        check(st == 200 and j["choices"][0]["finish_reason"] == "length" and j["usage"]["completion_tokens"] == N,
              "shift: %d %r" % (st, j))
        text = j["choices"][0]["text"]
        ev = s.stream("/v1/completions", comp(max_tokens=N, stream=True, stream_options={"include_usage": True}))
        check(ev[-1] == "[DONE]", "stream ends with [DONE]")
        chunks = [json.loads(e) for e in ev[:-1]]
        streamed = "".join(c["choices"][0]["text"] for c in chunks if c["choices"])
        finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
        check(finish == ["length"] and chunks[-1]["usage"]["completion_tokens"] == N and streamed == text,
              "shift, streamed: finish %r usage %r, same text %r" % (finish, chunks[-1].get("usage"), streamed == text))
        st, j = s.json("POST", "/v1/completions", comp())
        check(st == 200 and j["usage"]["completion_tokens"] == N, "shift, default max_tokens: %r" % j.get("usage"))
        print("ok   --context-shift: %d tokens in a %d-token context (plain, streamed, default max_tokens %d)"
              % (N, CTX, N))

        run = subprocess.run([mllm, "run", "-m", model, "--raw", "-p", PROMPT, "-c", str(CTX), "-n", str(N),
                              "--context-shift", "--ignore-eos"] + CLI_NEUTRAL, capture_output=True, timeout=120)
        check(run.returncode == 0, "mllm run: %r" % run.stderr[-500:])
        want = ascii_only(run.stdout)
        check(want.startswith(PROMPT) and want.endswith("\n"), "mllm run --raw prints the prompt, the text, a newline")
        want = want[len(PROMPT):-1]
        check(len(want) > 100 and ascii_only(text) == want,
              "completion equals mllm run --context-shift:\n  server %r\n  run    %r" % (ascii_only(text), want))
        print("ok   the shifted completion equals mllm run --context-shift (%d ASCII characters)" % len(want))

        st, j = s.json("POST", "/v1/chat/completions", chat(max_tokens=150))
        u = j["usage"]
        check(st == 200 and u["completion_tokens"] == 150 and u["prompt_tokens"] + 150 > 2 * CTX,
              "chat shift: %d %r" % (st, u))
        got = ascii_only(j["choices"][0]["message"]["content"])
        ch = subprocess.run([mllm, "chat", "-m", model, "--system", SYSTEM, "-c", str(CTX), "-n", "150",
                             "--context-shift"] + CLI_NEUTRAL, input=b"Hi\n", capture_output=True, timeout=120)
        check(ch.returncode == 0, "mllm chat: %r" % ch.stderr[-500:])
        want = ascii_only(ch.stdout)
        check(want.endswith("\n"), "mllm chat ends its reply with a newline")
        want = want[:-1]
        check(len(want) > 80 and got == want,
              "chat equals mllm chat --context-shift:\n  server %r\n  chat   %r" % (got, want))
        print("ok   a chat with a system prompt, %d + 150 tokens, equals mllm chat --context-shift (system turn kept)"
              % u["prompt_tokens"])

        big = comp(prompt=" ".join(["word"] * (CTX * 2)), max_tokens=4)
        st, j = s.json("POST", "/v1/completions", big)
        check(st == 400 and j["error"]["code"] == "context_length_exceeded", "a prompt past the context: %d" % st)
        print("ok   a prompt longer than the context is still 400 context_length_exceeded")
        check(s.stop() == 0, "exit code")
    finally:
        s.close()
    print("serve_ctxshift: all passed")
    return 0


srvtest.run(main)
