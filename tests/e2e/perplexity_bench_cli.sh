#!/usr/bin/env bash
# mllm perplexity separates real text from the same words shuffled on the
# trained stories260K model, and mllm bench -o json carries llama-bench's
# fields with one object per test.
set -euo pipefail
mllm=$1 shared=$2 build=$3
model="$shared/anchor-data/models/stories260K.gguf"
[ -f "$model" ] || { echo "SKIPPED: $model is absent"; exit 77; }
here=$(cd "$(dirname "$0")/.." && pwd)
story="$here/data/text/story.txt"
tmp=$(mktemp -d "$build/e2e-ppl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
python3 -c 'import random,sys; w=open(sys.argv[1]).read().split(); random.Random(1).shuffle(w); open(sys.argv[2],"w").write(" ".join(w))' "$story" "$tmp/shuffled.txt"
ppl() { "$mllm" perplexity -m "$model" -f "$1" -c 128 -t 2 2>/dev/null | sed -n 's/^PPL = \([0-9.]*\).*/\1/p'; }
a=$(ppl "$story"); b=$(ppl "$tmp/shuffled.txt")
echo "perplexity: story $a, shuffled $b"
python3 -c 'import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); assert 1 < a < 10, a; assert b > 5*a, (a,b)' "$a" "$b"
"$mllm" bench -m "$model" -p 32,64 -n 16 -t 1,2 -r 2 -o json > "$tmp/bench.json" 2>/dev/null
python3 - "$tmp/bench.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d) == 6, len(d)
for o in d:
    for k in ("n_prompt", "n_gen", "n_threads", "type_k", "avg_ts", "stddev_ts", "samples_ts", "samples_ns", "model_type", "model_size", "model_n_params"):
        assert k in o, k
    assert len(o["samples_ts"]) == 2 and o["avg_ts"] > 0
assert sorted({(o["n_prompt"], o["n_gen"]) for o in d}) == [(0, 16), (32, 0), (64, 0)]
print("bench json: %d tests, fields as llama-bench" % len(d))
PY
"$mllm" bench -m "$model" -p 32 -n 8 -t 2 -r 2 > "$tmp/bench.md" 2>/dev/null
grep -q "| *pp32 |" "$tmp/bench.md"
# The type column names general.file_type as llama-bench does (a Q8_0 mix
# with f16 ffn_down is "Q8_0"); a file without the key (this stories260K)
# shows its majority tensor type.
q8="$shared/anchor-data/models/stories260K-Q8_0-ffn_down-F16.gguf"
grep -q "| llama [^|]* F32 *|" "$tmp/bench.md" || { echo "FAIL: F32 type column"; cat "$tmp/bench.md"; exit 1; }
if [ -f "$q8" ]; then
    "$mllm" bench -m "$q8" -p 8 -n 0 -t 1 -r 1 > "$tmp/q8.md" 2>/dev/null
    grep -q "| llama [^|]* Q8_0 *|" "$tmp/q8.md" || { echo "FAIL: Q8_0 type column"; cat "$tmp/q8.md"; exit 1; }
fi
# stories260K's rows (64) do not fit q4_K's 256: most tensors fall back to
# q5_0, yet the file type is Q4_K_M and the column says so.
"$mllm" quantize "$model" "$tmp/q4km.gguf" --type q4_k_m 2>/dev/null
"$mllm" bench -m "$tmp/q4km.gguf" -p 8 -n 0 -t 1 -r 1 > "$tmp/q4km.md" 2>/dev/null
grep -q "| llama [^|]* Q4_K - Medium *|" "$tmp/q4km.md" || { echo "FAIL: Q4_K_M type column"; cat "$tmp/q4km.md"; exit 1; }
echo "bench type column: as llama-bench names the file type"
