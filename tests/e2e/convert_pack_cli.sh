#!/usr/bin/env bash
# mllm convert --pack: a q4_0 GGUF converted to .mllm stores its 15 matmul
# weights in the x8 kernel layouts (progress says which), verifies, and gives
# the GGUF's logits byte for byte; the packed .mllm exported back to GGUF
# holds plain q4_0/q8_0 and gives the same logits; --pack none stores no
# kernel layout; a bad --pack value is refused.
set -euo pipefail
# Packed and plain sources give the same bits only when the loader repacks the
# plain ones too: force it whatever the CPU path.
export MLLM_REPACK=1
mllm=$1 build=$3
tmp=$(mktemp -d "$build/e2e-convert-pack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$mllm" synth --arch qwen3 --preset tiny --dtype q4_0 --format gguf -o "$tmp/src.gguf" >/dev/null 2>&1
"$mllm" convert --in "$tmp/src.gguf" --out "$tmp/p.mllm" 2> "$tmp/progress.txt"
n=$(grep -c 'packed x8' "$tmp/progress.txt" || true)
[ "$n" = 15 ] || { echo "expected 15 packed tensors, got $n"; cat "$tmp/progress.txt"; exit 1; }
grep -q 'blk.0.ffn_down.weight *q4_0 *-> q4_0x8' "$tmp/progress.txt"
grep -q 'token_embd.weight *q8_0 *-> q8_0x8' "$tmp/progress.txt" # tied: the output projection
grep -q 'kernel layouts: 15 of 24 tensors stored packed' "$tmp/progress.txt"
"$mllm" info "$tmp/p.mllm" --verify --no-graph > "$tmp/info.txt"
grep -q 'verify: header, metadata and 24 tensor checksums OK' "$tmp/info.txt"
[ "$(grep -c 'q4_0x8' "$tmp/info.txt")" = 14 ]

"$mllm" convert --in "$tmp/p.mllm" --out "$tmp/back.gguf" --to gguf 2> "$tmp/back.txt"
grep -q 'blk.1.attn_q.weight *q4_0x8 *-> q4_0 .*unpacked' "$tmp/back.txt"
"$mllm" info "$tmp/back.gguf" --no-graph > "$tmp/back-info.txt"
if grep -q 'x8' "$tmp/back-info.txt"; then echo "GGUF export holds a kernel layout"; exit 1; fi
"$mllm" convert --in "$tmp/src.gguf" --out "$tmp/plain.mllm" --pack none --quiet
"$mllm" info "$tmp/plain.mllm" --no-graph > "$tmp/plain-info.txt"
if grep -q 'x8' "$tmp/plain-info.txt"; then echo "--pack none stored a kernel layout"; exit 1; fi

for m in src.gguf p.mllm back.gguf plain.mllm; do
    "$mllm" run --raw -m "$tmp/$m" -p "Once upon a time" -n 1 --temp 0 --logits-out "$tmp/$m.logits" >/dev/null 2>&1
done
cmp "$tmp/src.gguf.logits" "$tmp/p.mllm.logits"
cmp "$tmp/src.gguf.logits" "$tmp/back.gguf.logits"
cmp "$tmp/src.gguf.logits" "$tmp/plain.mllm.logits"

set +e
"$mllm" convert --in "$tmp/src.gguf" --out "$tmp/x.mllm" --pack x4 2> "$tmp/err.txt"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q -- '--pack must be x8 or none' "$tmp/err.txt"
[ ! -e "$tmp/x.mllm" ]
echo "convert pack e2e: OK"
