#!/usr/bin/env bash
# src/api is a thin layer of files that call down, never around (issue 31):
# no circle of includes or of calls spans its files. A call is a use of a
# function that another src/api file defines (found by name); a function
# pointer installed by its owner (a session's spec_free) is not a call. A
# circle means two files are one job split in two, or a lower file calls up.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python3 - "$here/../../src/api" <<'PY'
import glob, os, re, sys
api = sys.argv[1]
files = sorted(glob.glob(os.path.join(api, "*.c")) + glob.glob(os.path.join(api, "*.h")))
text = {os.path.basename(f): open(f, encoding="utf-8").read() for f in files}
strip = lambda s: re.sub(r"/\*.*?\*/|//[^\n]*|\"(\\.|[^\"\\])*\"", " ", s, flags=re.S)
code = {k: strip(v) for k, v in text.items()}
defs = {}
for f, s in code.items():
    if f.endswith(".c"):
        for m in re.finditer(r"^(?:MLLM_API\s+)?(?:const\s+)?[A-Za-z_0-9]+[\s*]+(mllm_[a-z_0-9]+)\s*\([^;{]*\)\s*\{", s, re.M):
            defs.setdefault(m.group(1), f)
edges = {}
for f, s in code.items():
    # includes: a .c/.h file -> the api header it includes
    for m in re.finditer(r'#include\s+"api/([a-z_0-9]+\.h)"', text[f]):
        edges.setdefault(f, set()).add(m.group(1))
    # calls: a .c file -> the .c file that defines the function
    if f.endswith(".c"):
        for name, d in defs.items():
            if d != f and re.search(r"\b" + name + r"\s*\(", s):
                edges.setdefault(f, set()).add(d)
# a header stands for its .c (api/vision.h is vision.c's): merge them
node = lambda f: f[:-2] + ".c" if f.endswith(".h") and f[:-2] + ".c" in text else f
graph = {}
for a, bs in edges.items():
    for b in bs:
        if node(a) != node(b):
            graph.setdefault(node(a), set()).add(node(b))
bad = 0
def path(a, b, seen):
    if a == b and seen: return [a]
    for n in sorted(graph.get(a, ())):
        if n not in seen:
            p = path(n, b, seen | {n})
            if p: return [a] + p
    return None
reported = set()
for a in sorted(graph):
    p = path(a, a, set())
    if p and frozenset(p) not in reported:
        reported.add(frozenset(p))
        print("FAIL: a circle in src/api: " + " -> ".join(p))
        bad = 1
if not bad:
    print("ok: src/api's %d files call and include down only" % len(text))
sys.exit(bad)
PY
