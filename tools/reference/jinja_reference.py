#!/usr/bin/env python3
"""Reference renderings of chat templates with Python's Jinja2, configured as
Hugging Face transformers does for apply_chat_template (its
_compile_jinja_template): ImmutableSandboxedEnvironment(trim_blocks=True,
lstrip_blocks=True, extensions=[loopcontrols]), tojson = json.dumps with
ensure_ascii=False (indent, separators, sort_keys passed through),
raise_exception(msg) and strftime_now(fmt) as globals. transformers' own
AssistantTracker extension only adds the {% generation %} tag, which renders
its body; none of the templates here use it.

Writes tests/data/templates/expected/<template>.json:
    {"<context name>": {"output": "<rendered>"} | {"error": "<Type>: <message>"}}
for every template of tests/data/templates/templates.json and every context
in tests/data/templates/contexts/. The variables are the context's keys, with
the model's bos_token / eos_token added when the context has none (what
`mllm template -m MODEL` does).

    python3 tools/reference/jinja_reference.py            # write expected/
    python3 tools/reference/jinja_reference.py --check    # compare, write nothing
    python3 tools/reference/jinja_reference.py --mllm build/jinja/mllm
        # run `mllm template` on every case and compare with Jinja2

Tested with Jinja2 3.1.6 (pip install jinja2).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "templates")
SHARED = os.path.join(os.path.dirname(ROOT), "shared")


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def token_text(v):
    if isinstance(v, dict):
        return v.get("content")
    return v


def load_template(spec):
    """(source text, path for the CLI, {bos_token, eos_token}) of a templates.json entry."""
    kind, rel = spec["source"].split(":", 1)
    if kind == "data":
        path = os.path.join(DATA, rel)
    else:
        path = os.path.join(SHARED, rel)
    if not os.path.exists(path):
        return None, path, {}
    if kind == "shared-config":
        cfg = json.load(open(path, encoding="utf-8"))
        src = cfg["chat_template"]
        toks = {"bos_token": token_text(cfg.get("bos_token")), "eos_token": token_text(cfg.get("eos_token"))}
    else:
        src = open(path, encoding="utf-8", newline="").read()
        toks = {"bos_token": spec.get("bos_token"), "eos_token": spec.get("eos_token")}
    return src, path, {k: v for k, v in toks.items() if v is not None}


def render(env, src, ctx, defaults):
    variables = dict(defaults)
    variables.update(ctx)
    try:
        return {"output": env.from_string(src).render(**variables)}
    except Exception as e:  # the C interpreter must fail too
        return {"error": f"{type(e).__name__}: {e}"}


def contexts():
    d = os.path.join(DATA, "contexts")
    return {f[:-5]: json.load(open(os.path.join(d, f), encoding="utf-8"))
            for f in sorted(os.listdir(d)) if f.endswith(".json")}


def run_mllm(mllm, path, spec, ctx, defaults):
    """`mllm template --chat-template PATH --context CTX` (defaults merged into the context
    for .jinja files, which carry no tokens of their own)."""
    merged = dict(defaults) if not spec["source"].startswith("shared-config:") else {}
    merged.update(ctx)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(merged, f, ensure_ascii=False)
    try:
        p = subprocess.run([mllm, "template", "--chat-template", path, "--context", f.name],
                           capture_output=True)
    finally:
        os.unlink(f.name)
    if p.returncode != 0:
        return {"error": p.stderr.decode("utf-8", "replace").strip()}
    return {"output": p.stdout.decode("utf-8")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with expected/, write nothing")
    ap.add_argument("--mllm", help="an mllm binary to compare with Jinja2")
    args = ap.parse_args()
    env = make_env()
    templates = json.load(open(os.path.join(DATA, "templates.json")))
    ctxs = contexts()
    bad = total = 0
    for name, spec in templates.items():
        src, path, defaults = load_template(spec)
        if src is None:
            print(f"SKIPPED {name}: {path} is absent")
            continue
        results = {c: render(env, src, ctx, defaults) for c, ctx in ctxs.items()}
        out_path = os.path.join(DATA, "expected", name + ".json")
        if args.check:
            old = json.load(open(out_path, encoding="utf-8"))
            for c, r in results.items():
                total += 1
                if old.get(c) != r:
                    bad += 1
                    print(f"{name}/{c}: expected/ differs from Jinja2 {jinja2.__version__}")
        elif not args.mllm:
            with open(out_path, "w", encoding="utf-8") as f:
                json.dump(results, f, ensure_ascii=False, indent=1)
                f.write("\n")
            n_err = sum("error" in r for r in results.values())
            print(f"{name}: {len(results)} contexts ({n_err} raise) -> {os.path.relpath(out_path, ROOT)}")
        if args.mllm:
            for c, ctx in ctxs.items():
                total += 1
                ours = run_mllm(args.mllm, path, spec, ctx, defaults)
                want = results[c]
                same = ours == want if "output" in want else "error" in ours
                if not same:
                    bad += 1
                    print(f"{name}/{c}: mllm {str(ours)[:300]!r}\n    jinja2 {str(want)[:300]!r}")
    if args.check or args.mllm:
        print(f"{total - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
