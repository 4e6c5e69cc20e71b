#!/usr/bin/env bash
# docs/ARCHITECTURE.md names only what exists (issue #31 item 5):
#  - every path from the repository root (src/..., apps/..., tests/..., bench/...,
#    docs/..., scripts/..., include/..., tools/..., python/..., pipelines/...,
#    examples/..., cmake/...) matches a file or folder; `*` is a glob, `<name>`
#    a placeholder (matches anything), `{a,b}` alternatives (each must match);
#  - every other file name with a source extension in a code span or block
#    (`registry.c`, `opencl/ocl_backend.c`, cmd_*.c) ends some file's path
#    (but PROJECTS, names like llama2.c);
#  - every `mllm CMD` in a code span or code block is a command of
#    `mllm --help`, and every -flag after it is in `mllm CMD --help`;
#  - a code span that is a bare flag (`--kv-type f32|f16|q8`, `-ngl N`) is in
#    the --help of some command.
# Arguments as every e2e script: MLLM_BINARY SHARED_DIR BUILD_DIR.
set -euo pipefail
mllm=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
doc=$root/docs/ARCHITECTURE.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The commands, and each one's --help (a command whose help fails, such as
# serve in a build without the server, is marked so its flags are not judged).
"$mllm" --help >"$tmp/help" 2>&1
sed -n 's/^  \([a-z][a-z0-9-]*\)  .*/\1/p' "$tmp/help" >"$tmp/commands"
[ -s "$tmp/commands" ] || { echo "FAIL: no command list in mllm --help"; exit 1; }
while read -r c; do
    "$mllm" "$c" --help >"$tmp/help.$c" 2>&1 || mv "$tmp/help.$c" "$tmp/nohelp.$c"
done <"$tmp/commands"

python3 - "$root" "$doc" "$tmp" <<'PY'
import fnmatch, glob, os, re, sys

root, doc, tmp = sys.argv[1:4]
text = open(doc, encoding="utf-8").read()
commands = open(os.path.join(tmp, "commands")).read().split()
helps, no_help = {}, []
for c in commands:
    p = os.path.join(tmp, "help." + c)
    if os.path.exists(p):
        helps[c] = open(p, encoding="utf-8", errors="replace").read()
    else:
        no_help.append(c)
FLAG = r"(?<![\w-])(--?[a-z][a-z0-9-]*)"
def in_help(flag, h):
    return re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", h) is not None

bad = []
def fail(msg):
    bad.append(msg)

# Every file of the tree (build outputs left out), for names given without their folder.
files = []
for d, sub, names in os.walk(root):
    rel = os.path.relpath(d, root)
    sub[:] = [s for s in sub if not (rel == "." and (s.startswith("build") or s.startswith(".")))]
    files += [os.path.normpath(os.path.join(rel, n)) for n in names]

PROJECTS = {"llama2.c"}  # names of projects that look like file names
ROOTS = "src|apps|tests|bench|docs|scripts|include|tools|python|pipelines|examples|cmake"
TOKEN = r"(?:[A-Za-z0-9_.*<>/-]|\{[^}\s]*\})+"
rooted = set()
for m in re.finditer(r"(?<![\w/.-])((?:%s)/(?:%s)?)" % (ROOTS, TOKEN), text):
    rooted.add(m.group(1).rstrip(".,:;)"))
def alternatives(p):  # {a,b} -> a, b (each must exist)
    m = re.search(r"\{([^}]*)\}", p)
    if not m:
        return [p]
    return [q for alt in m.group(1).split(",") for q in alternatives(p[:m.start()] + alt + p[m.end():])]
for p in sorted(rooted):
    for q in alternatives(p):
        pat = re.sub(r"<[^>]*>", "*", q)
        if not glob.glob(os.path.join(root, pat)):
            fail("path %s does not exist" % q)

# Code: the spans between backticks and the lines of ``` blocks.
code = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
spans = [line for block in code for line in block.splitlines()]
spans += re.findall(r"`([^`\n]+)`", re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.S))
for name in sorted({m.group(1) for s in spans for m in re.finditer(
        r"(?<![\w/.-])(%s\.(?:c|h|cu|cl|sh|py|md|mjs))(?!\w)" % TOKEN, s)}):
    if re.match(r"(?:%s)/" % ROOTS, name) or name in PROJECTS:  # judged above; not files
        continue
    pat = re.sub(r"<[^>]*>", "*", name)
    if not any(fnmatch.fnmatch(f, pat) or fnmatch.fnmatch(f, "*/" + pat) for f in files):
        fail("file %s is not in the tree" % name)
judged_bare = not no_help
for s in spans:
    for m in re.finditer(r"(?<![\w/-])mllm ([a-z][a-z0-9-]*)", s):
        cmd = m.group(1)
        if cmd not in commands:
            fail("`mllm %s`: no such command (mllm --help)" % cmd)
            continue
        if cmd in no_help:
            continue
        rest = re.split(r"(?<![\w/-])mllm ", s[m.end():])[0]
        for f in re.findall(FLAG, rest):
            if not in_help(f, helps[cmd]):
                fail("`mllm %s %s`: %s is not in mllm %s --help" % (cmd, f, f, cmd))
    bare = re.match(r"\s*" + FLAG, s)
    if bare and judged_bare and not any(in_help(bare.group(1), h) for h in helps.values()):
        fail("`%s`: %s is in no command's --help" % (s, bare.group(1)))

for c in no_help:
    print("note: mllm %s --help fails in this build; its flags were not checked" % c)
if bad:
    print("\n".join("FAIL: docs/ARCHITECTURE.md: " + b for b in dict.fromkeys(bad)))
    sys.exit(1)
print("ok: docs/ARCHITECTURE.md names %d paths, and commands and flags that exist" % len(rooted))
PY
