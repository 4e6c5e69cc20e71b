"""mllm serve: logprobs (chat and completions formats, plain == streamed,
consistent with greedy decoding and with probabilities), logit_bias (-100
bans a token, +100 forces it), presence/frequency penalties (change the
output in the expected direction) and a 400 naming each OpenAI field that
is not supported. Deterministic: greedy decoding on `mllm synth`'s tiny model.
Args: mllm binary, shared dir, build dir."""
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

C, CH = "/v1/completions", "/v1/chat/completions"
MSGS = [{"role": "user", "content": "Tell me a story"}]
EPS = 1e-4


def ok(s, path, body):
    st, r = s.json("POST", path, body)
    check(st == 200, "%s %r -> %d %r" % (path, body, st, r))
    return r


def streamed(s, path, body):
    b = dict(body, stream=True)
    return [json.loads(e) for e in s.stream(path, b) if e != "[DONE]"]


def check_entry(where, e, n_top):
    """One chat logprobs entry: probabilities, order, the greedy token first, bytes."""
    check(e["logprob"] <= EPS and math.exp(e["logprob"]) <= 1 + EPS, "%s: logprob %r" % (where, e["logprob"]))
    top = e["top_logprobs"]
    check(len(top) == n_top, "%s: %d top_logprobs, asked %d" % (where, len(top), n_top))
    lps = [t["logprob"] for t in top]
    check(lps == sorted(lps, reverse=True), "%s: top_logprobs not sorted: %r" % (where, lps))
    check(sum(math.exp(x) for x in lps) <= 1 + EPS, "%s: top probabilities sum over 1" % where)
    if n_top:
        check(abs(top[0]["logprob"] - e["logprob"]) < EPS, "%s: greedy token %r (%g) is not the most likely %r (%g)"
              % (where, e["token"], e["logprob"], top[0]["token"], top[0]["logprob"]))
    for t in [e] + top:
        check(isinstance(t["bytes"], list) and all(0 <= b < 256 for b in t["bytes"]), "%s: bytes %r" % (where, t))


def chat_logprobs(s):
    body = {"messages": MSGS, "max_tokens": 24, "temperature": 0, "ignore_eos": True, "logprobs": True,
            "top_logprobs": 5}
    r = ok(s, CH, body)
    ch = r["choices"][0]
    content = ch["logprobs"]["content"]
    check(len(content) == r["usage"]["completion_tokens"] == 24, "chat: %d entries for %d tokens"
          % (len(content), r["usage"]["completion_tokens"]))
    for i, e in enumerate(content):
        check_entry("chat token %d" % i, e, 5)
    joined = bytes(b for e in content for b in e["bytes"]).decode("utf-8", errors="replace")
    check(joined == ch["message"]["content"], "chat: bytes join to %r, content %r" % (joined, ch["message"]["content"]))
    # A full distribution's top 20 sums to at most 1; logprobs without top_logprobs has empty lists.
    r20 = ok(s, CH, dict(body, top_logprobs=20, max_tokens=4))
    for i, e in enumerate(r20["choices"][0]["logprobs"]["content"]):
        check_entry("chat top-20 token %d" % i, e, 20)
        check(e["top_logprobs"][:5] == content[i]["top_logprobs"], "top 5 of 20 differ from top 5 (token %d)" % i)
    r0 = ok(s, CH, dict(body, top_logprobs=None, max_tokens=4))
    check(all(e["top_logprobs"] == [] for e in r0["choices"][0]["logprobs"]["content"]), "logprobs without top")
    check(ok(s, CH, dict(body, logprobs=None, top_logprobs=None))["choices"][0]["logprobs"] is None, "off: null")
    # Streamed: each chunk carries its own tokens' logprobs; together they are the plain ones.
    chunks = streamed(s, CH, body)
    got = []
    for c in chunks:
        if c.get("choices") and c["choices"][0]["logprobs"]:
            lp = c["choices"][0]["logprobs"]["content"]
            check(len(lp) > 0, "empty logprobs content in a chunk")
            got += lp
    check(got == content, "chat: streamed logprobs differ from plain (%d vs %d entries)" % (len(got), len(content)))
    # Sampling settings do not change the reported (raw model) probabilities.
    rt = ok(s, CH, dict(body, temperature=1.5, seed=3, max_tokens=1))
    check(abs(rt["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["logprob"] -
              content[0]["top_logprobs"][0]["logprob"]) < EPS, "logprobs depend on temperature")
    print("ok   chat logprobs: sorted, greedy = most likely, sum <= 1, bytes = text, streamed == plain")
    return content


def completion_logprobs(s):
    body = {"prompt": "Once upon a time", "max_tokens": 20, "temperature": 0, "ignore_eos": True, "logprobs": 3}
    r = ok(s, C, body)
    ch = r["choices"][0]
    lp = ch["logprobs"]
    n = r["usage"]["completion_tokens"]
    check(len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == len(lp["text_offset"]) == n,
          "completions: lengths %r for %d tokens" % ({k: len(v) for k, v in lp.items()}, n))
    off = 0
    for i in range(n):
        top = lp["top_logprobs"][i]
        check(1 <= len(top) <= 4, "token %d: %d top entries" % (i, len(top)))
        check(abs(max(top.values()) - lp["token_logprobs"][i]) < EPS, "token %d: greedy is not the most likely" % i)
        check(sum(math.exp(v) for v in top.values()) <= 1 + EPS, "token %d: sum over 1" % i)
        check(lp["text_offset"][i] == off, "token %d: text_offset %d, expected %d" % (i, lp["text_offset"][i], off))
        off += len(lp["tokens"][i].encode())
    check(ok(s, C, dict(body, logprobs=0))["choices"][0]["logprobs"]["token_logprobs"] == lp["token_logprobs"],
          "logprobs 0 gives other token logprobs")
    got = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    for c in streamed(s, C, body):
        if c.get("choices") and c["choices"][0]["logprobs"]:
            for k in got:
                got[k] += c["choices"][0]["logprobs"][k]
    check(got == lp, "completions: streamed logprobs differ from plain")
    # A stop string cuts the logprobs with the text: no token after the cut
    # (a frequency penalty keeps the tiny model from repeating one token).
    body = dict(body, frequency_penalty=2)
    text = ok(s, C, body)["choices"][0]["text"]
    stop = text[len(text) // 2:len(text) // 2 + 3]
    check(len(stop) == 3 and text.index(stop) > 0, "no stop string to test in %r" % text)
    rs = ok(s, C, dict(body, stop=[stop]))
    lps = rs["choices"][0]["logprobs"]
    cut = rs["choices"][0]["text"]
    check(lps["text_offset"][-1] < len(cut.encode()) and "".join(lps["tokens"]).startswith(cut),
          "stop: logprobs %r do not end at the cut %r" % (lps["tokens"], cut))
    rss = {"tokens": []}
    for c in streamed(s, C, dict(body, stop=[stop])):
        if c.get("choices") and c["choices"][0]["logprobs"]:
            rss["tokens"] += c["choices"][0]["logprobs"]["tokens"]
    check(rss["tokens"] == lps["tokens"], "stop: streamed tokens %r vs %r" % (rss["tokens"], lps["tokens"]))
    print("ok   completions logprobs (legacy format): lengths, offsets, greedy = most likely, streamed == plain, stop")


def token_id(s, text):
    st, r = s.json("POST", "/tokenize", {"content": text})
    check(st == 200, "tokenize %r" % text)
    return r["tokens"]


def logit_bias(s):
    body = {"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0, "ignore_eos": True, "logprobs": 1}
    base = ok(s, C, body)["choices"][0]["logprobs"]["tokens"]
    # -100 bans the greedy first token (found through the tokenizer).
    ids = token_id(s, base[0])
    check(len(ids) == 1, "first token %r tokenizes to %r" % (base[0], ids))
    banned = ok(s, C, dict(body, logit_bias={str(ids[0]): -100}))["choices"][0]["logprobs"]["tokens"]
    check(base[0] not in banned, "logit_bias -100: %r still generated in %r" % (base[0], banned))
    # +100 forces a token at every step.
    x = token_id(s, " hello")[0]
    st, d = s.json("POST", "/detokenize", {"tokens": [x]})
    forced = ok(s, C, dict(body, logit_bias={str(x): 100}))["choices"][0]["text"]
    check(forced == d["content"] * 8, "logit_bias +100: %r, expected %r x 8" % (forced, d["content"]))
    print("ok   logit_bias: -100 bans the greedy token, +100 forces one")


def distinct(tokens):
    return len(set(tokens))


def penalties(s):
    body = {"prompt": "Once upon a time", "max_tokens": 48, "temperature": 0, "ignore_eos": True, "logprobs": 0,
            "repeat_last_n": 64}
    toks = lambda **kw: ok(s, C, dict(body, **kw))["choices"][0]["logprobs"]["tokens"]  # noqa: E731
    base = toks()
    for name in ("presence_penalty", "frequency_penalty"):
        up, down = toks(**{name: 2}), toks(**{name: -2})
        check(up != base, "%s 2 changes nothing" % name)
        check(distinct(up) >= distinct(base) >= distinct(down),
              "%s: distinct tokens %d (2) / %d (0) / %d (-2): not fewer repeats with a positive penalty"
              % (name, distinct(up), distinct(base), distinct(down)))
        print("ok   %s: distinct tokens %d (-2) <= %d (0) <= %d (+2)" % (name, distinct(down), distinct(base),
                                                                         distinct(up)))
    check(toks(presence_penalty=0, frequency_penalty=0) == base, "zero penalties change the output")


UNSUPPORTED = [
    ("functions", [{"name": "f"}]),
    ("function_call", "auto"),
    ("response_format", {"type": "xml"}),
    ("reasoning_effort", "low"),
    ("verbosity", "low"),
    ("audio", {"voice": "alloy", "format": "wav"}),
    ("modalities", ["text", "audio"]),
    ("prediction", {"type": "content", "content": "x"}),
    ("web_search_options", {}),
]
NEUTRAL = [("tools", []), ("response_format", {"type": "text"}), ("n", 1), ("modalities", ["text"]),
           ("tool_choice", "none"), ("parallel_tool_calls", True),
           ("user", "u1"), ("store", False), ("metadata", {"a": "b"}), ("service_tier", "auto"),
           ("presence_penalty", 0), ("logit_bias", {})]
BAD = [  # (path, field, value): wrong values of supported fields
    (C, "logprobs", 6), (C, "logprobs", True), (C, "top_logprobs", 2), (CH, "logprobs", 1),
    (CH, "top_logprobs", 21), (CH, "top_logprobs", 3),  # the last: without logprobs: true
    (C, "logit_bias", {"abc": 1}), (C, "logit_bias", {"99999999": 1}), (C, "logit_bias", {"5": 101}),
    (C, "logit_bias", {"-1": 1}), (C, "logit_bias", [1]), (C, "presence_penalty", 3),
    (C, "frequency_penalty", "high"), (C, "echo", True), (C, "suffix", "x"), (C, "best_of", 2),
    (C, "grammar", "root ::= ("), (CH, "grammar", 5),
    (C, "grammar", "root ::= \"\\uD800\""),  # #42: a surrogate matched nothing, then a 500
    (CH, "response_format", "json"),
    (CH, "n", 9), (C, "n", 0), (CH, "n", 1.5), (CH, "parallel_tool_calls", "yes"), (CH, "tool_choice", "required"),
    (C, "tools", [{"type": "function", "function": {"name": "f"}}]),
]


def refusals(s):
    for name, value in UNSUPPORTED:
        st, r = s.json("POST", CH, {"messages": MSGS, "max_tokens": 2, name: value})
        err = r.get("error", {})
        check(st == 400 and err.get("code") == "unsupported_parameter" and err.get("param") == name and
              name in err.get("message", ""), "%s=%r: %d %r" % (name, value, st, r))
    print("ok   %d unsupported fields: 400 unsupported_parameter naming each" % len(UNSUPPORTED))
    for name, value in NEUTRAL:
        st, r = s.json("POST", CH, {"messages": MSGS, "max_tokens": 2, name: value})
        check(st == 200, "neutral %s=%r refused: %d %r" % (name, value, st, r))
    print("ok   %d neutral values accepted" % len(NEUTRAL))
    for path, name, value in BAD:
        body = {"messages": MSGS} if path == CH else {"prompt": "x"}
        st, r = s.json("POST", path, dict(body, max_tokens=2, **{name: value}))
        check(st == 400 and r.get("error", {}).get("param") == name, "%s %s=%r: %d %r" % (path, name, value, st, r))
    print("ok   %d malformed values: 400 naming the field" % len(BAD))


def main(argv):
    mllm = argv[0]
    work = tempfile.mkdtemp(prefix="mllm-serve-sampling-")
    model = srvtest.synth_tiny(mllm, work)
    s = srvtest.Server(mllm, model, "--parallel", "1")
    try:
        chat_logprobs(s)
        completion_logprobs(s)
        logit_bias(s)
        penalties(s)
        refusals(s)
        check(s.stop() == 0, "server exit code")
    finally:
        s.close()
    print("serve_sampling: all passed")
    return 0


if __name__ == "__main__":
    srvtest.run(main)
