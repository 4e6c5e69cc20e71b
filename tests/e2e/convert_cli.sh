#!/usr/bin/env bash
# mllm convert end to end: a pipeline conversion with one progress line per
# tensor, `info --verify` passing and then catching one flipped data byte,
# GGUF -> .mllm -> GGUF giving the source's logits byte for byte, the export
# read by the python `gguf` package (when installed), and clear refusals.
set -euo pipefail
mllm=$1 shared=$2 build=$3
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "$build/e2e-convert.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$mllm" synth --arch qwen3 --preset tiny --dtype f16 --format gguf -o "$tmp/src.gguf" >/dev/null 2>&1
"$mllm" convert --in "$tmp/src.gguf" --out "$tmp/q.mllm" --pipeline "$here/pipelines/qwen3.json" 2> "$tmp/progress.txt"
n=$(grep -c '^\[ *[0-9]*/24\]' "$tmp/progress.txt")
[ "$n" = 24 ] || { echo "expected 24 progress lines, got $n"; cat "$tmp/progress.txt"; exit 1; }
grep -q 'blk.0.attn_q.weight *f16 *-> q4_0' "$tmp/progress.txt"
grep -q 'token_embd.weight *f16 *-> q8_0' "$tmp/progress.txt"
"$mllm" info "$tmp/q.mllm" --verify --no-graph > "$tmp/info.txt"
grep -q 'verify: header, metadata and 24 tensor checksums OK' "$tmp/info.txt"
"$mllm" run --raw -m "$tmp/q.mllm" -p "Once upon a time" -n 4 --temp 0 >/dev/null 2>&1

# One flipped byte near the end (inside the last tensor): verify must fail.
cp "$tmp/q.mllm" "$tmp/bad.mllm"
python3 - "$tmp/bad.mllm" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[-3] ^= 0x10; open(p, 'wb').write(b)
PY
if "$mllm" info "$tmp/bad.mllm" --verify --no-graph > "$tmp/bad.txt" 2>&1; then echo "corruption not caught"; exit 1; fi
grep -q 'checksum' "$tmp/bad.txt"

# GGUF -> .mllm -> GGUF: same logits as the source.
"$mllm" convert --in "$tmp/src.gguf" --out "$tmp/same.mllm" --quiet
"$mllm" convert --in "$tmp/same.mllm" --out "$tmp/back.gguf" --to gguf --quiet
for m in src.gguf same.mllm back.gguf; do
    "$mllm" run --raw -m "$tmp/$m" -p "Once upon a time" -n 1 --temp 0 --logits-out "$tmp/$m.logits" >/dev/null 2>&1
done
cmp "$tmp/src.gguf.logits" "$tmp/same.mllm.logits"
cmp "$tmp/src.gguf.logits" "$tmp/back.gguf.logits"

if python3 -c 'import gguf' 2>/dev/null; then
python3 - "$tmp/back.gguf" <<'PY'
import sys, gguf
r = gguf.GGUFReader(sys.argv[1])
names = [t.name for t in r.tensors]
assert len(names) == 24 and "blk.1.ffn_down.weight" in names, names
arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
assert arch == "qwen3", arch
assert "tokenizer.ggml.tokens" in r.fields and "qwen3.block_count" in r.fields
print("python gguf reads the export: %d tensors, arch %s" % (len(names), arch))
PY
else
    echo "python gguf package not installed: export check by gguf-py skipped"
fi

# Refusals with clear messages.
if "$mllm" convert --in "$tmp/src.gguf" --out "$tmp/x.mllm" --quant q2_k 2> "$tmp/err.txt"; then exit 1; fi
grep -q "no quantizer" "$tmp/err.txt"
echo '{"rules": [{"pattern": "(", "dtype": "q4_0"}]}' > "$tmp/bad.json"
if "$mllm" convert --in "$tmp/src.gguf" --out "$tmp/x.mllm" --pipeline "$tmp/bad.json" 2> "$tmp/err.txt"; then exit 1; fi
grep -q "bad regex" "$tmp/err.txt"
[ ! -e "$tmp/x.mllm" ]
echo "convert e2e: OK"
