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

Templates that print today's date (Llama 3.x: strftime_now("%d %b %Y")) are
rendered at one pinned instant: tests/data/templates/SOURCE_DATE_EPOCH,
seconds since 1970 UTC, which the C tests and `mllm template` read through
the SOURCE_DATE_EPOCH environment variable too (ctest sets it). "now" is then
datetime.now() as transformers calls it (naive, so %z/%Z print nothing) on a
machine whose clock shows that instant in UTC. Every mode of this script
sets the variable for itself and the mllm it runs, so the expected files
never depend on the day they were written.

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
from datetime import datetime, timezone

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "templates")
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
EPOCH_FILE = os.path.join(DATA, "SOURCE_DATE_EPOCH")


def pinned_epoch():
    """The instant every rendering is made at (one line, decimal seconds)."""
    with open(EPOCH_FILE, encoding="ascii") as f:
        v = f.read().strip()
    if not v.isdigit():
        sys.exit(f"{EPOCH_FILE}: {v!r} is not a whole number of seconds")
    return v


def now():
    """datetime.now() as transformers' strftime_now calls it, or, when
    SOURCE_DATE_EPOCH is set, that instant in UTC (naive, like now())."""
    e = os.environ.get("SOURCE_DATE_EPOCH")
    if e is None:
        return datetime.now()
    return datetime.fromtimestamp(int(e), timezone.utc).replace(tzinfo=None)


# Small templates, one feature each: rendered into expected/snippets.json
# with their context, so the C tests need nothing else.
D = {"d": {"b": 2, "a": 1, "items": "key"}, "xs": [3, 1, 2], "s": "héllo wörld",
     "msgs": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"},
              {"role": "assistant", "content": "A1"}, {"role": "user", "content": " U2 "}],
     "x": {"name": "f", "n": 1.0, "f": 0.1, "big": 1e20, "neg": -2.5e-7, "u": "é\u2028\"\\\n\t\u0001",
           "l": [True, False, None, [], {}], "i": 12345678901234}}
SNIPPETS = [
    ("numbers", "{{ 1.0 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 1/3 }} {{ 10/2 }} {{ 7//2 }} {{ -7//2 }} {{ -7 % 3 }} {{ 7.5 % 2 }} {{ 2**10 }} {{ 1e-5 }} {{ 1e16 }} {{ 123456789.0 }} {{ -0.0 }} {{ 3 * 1.5 }} {{ true + 1 }}", {}),
    ("reprs", "{{ [1, 'a', none, true, 1.5, {'k': 'v'}] }} {{ ('a',) }} {{ (1, 2) }} {{ d }} {{ ['it\\'s', 'say \"hi\"', 'both \\' \"', 'nl\\n', 'é', '\\u200b', '\\x7f'] }}", D),
    ("tojson", "{{ x|tojson }}\n{{ x|tojson(indent=2) }}\n{{ {}|tojson(indent=2) }} {{ []|tojson }} {{ x|tojson(sort_keys=true) }} {{ 'a\"b'|tojson }} {{ none|tojson }}", D),
    ("tojson_indent_str", "{{ xs|tojson(indent='\\t') }}|{{ d|tojson(indent=0) }}", D),
    ("ws_trim_lstrip", "a\n  {% if true %}\n  b\n  {% endif %}\n  c {% if true %}d{% endif %}\n{# comment #}\n  {# indented comment #}\ne", {}),
    ("ws_minus", "a   {%- if true -%}   b   {%- endif -%}   c {{- ' d ' -}} e\n\n{{ 'f' }}  \n  {{- 'g' }}", {}),
    ("ws_plus", "a\n  {%+ if true +%}\nb\n  {%- endif %}\n\t{% if true %}x{% endif %}\n", {}),
    ("ws_var_no_trim", "{{ 'a' }}\n  {{ 'b' }}\n{% set z = 1 %}\n{{ z }}\n\n", {}),
    ("raw", "{% raw %}{{ not rendered }} {% if %}{% endraw %}|{%- raw -%}  x  {%- endraw -%}  |", {}),
    ("loop_vars", "{% for v in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('x', 'y') }}|{% endfor %}", D),
    ("loop_controls", "{% for v in range(10) %}{% if v == 2 %}{% continue %}{% endif %}{% if v > 5 %}{% break %}{% endif %}{{ v }}{% endfor %}", {}),
    ("loop_filter_else", "{% for v in range(6) if v is odd %}{{ v }}/{{ loop.length }} {% else %}none{% endfor %}|{% for v in [] %}x{% else %}empty{% endfor %}", {}),
    ("loop_nested", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.depth }}{% endfor %}{{ loop.depth }} {% endfor %}", {}),
    ("loop_dict", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for k, v in d|items %}{{ v }}{% endfor %}", D),
    ("scopes", "{% set x = 1 %}{% for i in range(2) %}{% set x = 5 %}{{ x }}{% endfor %}{{ x }}{% if true %}{% set y = 2 %}{% endif %}{{ y }}{% set ns = namespace(c=0, s='') %}{% for i in range(4) %}{% set ns.c = ns.c + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.c }} {{ ns.s }}", {}),
    ("macros", "{% macro m(a, b='B', c=none) %}[{{ a }}{{ b }}{{ c }}]{% endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(1, c=3) }}{{ m(' x ')|trim }}{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}", {}),
    ("slicing", "{{ s[::-1] }}|{{ s[1:3] }}|{{ s[-2:] }}|{{ xs[::2] }}|{{ xs[5:] }}|{{ s[1] }}|{{ xs[-1] }}|{{ msgs[1:]|length }}|{{ xs[:-1] }}|{{ s[10:0:-3] }}", D),
    ("tests", "{% for v in [none, true, false, 0, 1.5, 'a', [1], {'a': 1}, undefined_name] %}{{ v is defined }}{{ v is undefined }}{{ v is none }}{{ v is string }}{{ v is mapping }}{{ v is sequence }}{{ v is iterable }}{{ v is number }}{{ v is true }}{{ v is false }}{{ v is boolean }}{{ v is integer }}{{ v is float }}|{% endfor %}{{ missing is iterable }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 'a' is in 'abc' }}{{ none is sameas none }}{{ 2 is gt 1 }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 'a' is equalto 'a' }}", {}),
    ("filters", "{{ '  a b  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ s|length }}|{{ d|length }}|{{ xs|join(', ') }}|{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}|{{ xs|reject('equalto', 1)|list }}|{{ ['a', 'b']|map('upper')|list }}|{{ 3|string ~ 'x' }}|{{ xs|first }}{{ xs|last }}{{ s|first }}|{{ missing|default('dflt') }}{{ ''|default('e', true) }}{{ 0|default('z') }}|{{ s|upper }} {{ 'ÀB'|lower }}|{{ 'a-a-a'|replace('a', 'b', 2) }}|{{ 'abc'|list }}|{{ '42'|int + 1 }} {{ '1.5'|float }} {{ 'x'|int }} {{ -3|abs }}|{{ 'hello WORLD'|capitalize }} {{ 'hello world-x'|title }}|{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ xs|reverse|list }} {{ 'abc'|reverse }}|{{ range(7)|select('odd')|list }}|{{ msgs|rejectattr('role', 'equalto', 'user')|list|length }}|{{ xs|count }}|{{ '<a & \"b\">'|e }}|{{ msgs|map(attribute='role')|unique_is_absent|default('') if false else 'ok' }}", D),
    ("str_methods", "{{ '  a  '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'xxaxx'.rstrip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|{{ 'abc'.startswith(('x', 'a')) }}{{ 'abc'.endswith('bc') }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'héllo'.find('l') }}{{ 'abcabc'.count('bc') }}|{{ 'ab'.upper() }}{{ 'hi there'.title() }}|{{ '\\u3000x\\u2003'.strip()|length }}|{{ '-'.join(['a', 'b']) }}|{{ '12'.isdigit() }}{{ 'a1'.isalpha() }}", D),
    ("dict_methods", "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dv') }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d['items'] }} {{ d.items is defined }} {{ d.update is defined }}", D),
    ("operators", "{{ 'a' in 'cat' }}{{ 'z' not in 'cat' }}{{ 2 in xs }}{{ 'a' in d }}|{{ 'a' ~ 1 ~ none ~ 2.0 }}|{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}|{{ 'y' if false }}|{{ 'y' if true else 'n' }}|{{ 0 or 'b' }} {{ 'a' and 'b' }} {{ none and 1 }}|{{ not xs }}|{{ 'ab' * 3 }} {{ xs + [9] }}|{{ -xs[0] }} {{ (1 + 2) * 3 - 4 / 2 }}|{{ 'b' > 'a' }}{{ [1, 2] < [1, 3] }}{{ 1 == 1.0 }}{{ none == none }}", D),
    ("undefined", "[{{ d.missing }}|{{ d['missing'] }}|{{ xs[10] }}|{{ none.x }}|{{ missing }}|{{ missing|length }}|{% for v in missing %}x{% endfor %}|{{ missing ~ 'a' }}]", D),
    ("string_escapes", "{{ 'a\\nb\\t\\x41\\u00e9\\U0001F600\\\\q\\'' }}|{{ \"dq\\\"\" }}|{{ 'adj' 'acent' }}", {}),
    ("set_block_filter_block", "{% set x %}hello {{ 1 }}{% endset %}{{ x|upper }}|{% filter upper %}abc{{ 'd' }}{% endfilter %}|{% set a, b = 1, 2 %}{{ a }}{{ b }}", {}),
    ("trailing_newlines", "a\n\n", {}),
    ("crlf_source", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc", {}),
    ("messages_loop", "{% for m in msgs %}{% if m.role == 'system' %}{% continue %}{% endif %}<{{ m['role'] }}>{{ m.content|trim }}{% if not loop.last %}\n{% endif %}{% endfor %}", D),
    ("soft_unknown_filter", "{% if false %}{{ x|no_such_filter }}{{ x is no_such_test }}{% endif %}{{ 'a' if true else x|no_such_filter }}ok", {}),
    ("raise", "{% if true %}{{ raise_exception('custom failure ' ~ 42) }}{% endif %}", {}),
    ("type_error", "{{ 'a' + 1 }}", {}),
    ("undefined_attr_error", "{{ missing.attr }}", {}),
]


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return now().strftime(fmt)

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
    os.environ["SOURCE_DATE_EPOCH"] = pinned_epoch()  # for Jinja2 here and the mllm we run
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
    # The context is stored as JSON text: readers must see 1.0 as a float.
    snippets = {name: {"template": t, "context": json.dumps(c, ensure_ascii=False), **render(env, t, c, {})}
                for name, t, c in SNIPPETS}
    snip_path = os.path.join(DATA, "expected", "snippets.json")
    if args.check:
        old = json.load(open(snip_path, encoding="utf-8"))
        for name, r in snippets.items():
            total += 1
            if old.get(name) != r:
                bad += 1
                print(f"snippets/{name}: expected/ differs from Jinja2 {jinja2.__version__}")
    elif not args.mllm:
        with open(snip_path, "w", encoding="utf-8") as f:
            json.dump(snippets, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(f"snippets: {len(snippets)} -> {os.path.relpath(snip_path, ROOT)}")
    if args.check or args.mllm:
        print(f"{total - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
