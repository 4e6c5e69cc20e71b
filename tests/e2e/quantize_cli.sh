#!/usr/bin/env bash
# mllm quantize from the CLI: stories260K (F32 GGUF) to q8_0 with
# --tensor-type ffn_down=f16 prints one progress line per tensor and the
# sizes, and the quantized model generates the same greedy text as
# llama-quantize's stories260K-Q8_0-ffn_down-F16.gguf (the tensor bytes
# themselves are compared in tests/unit/test_quantize_model.c). Bad
# arguments exit non-zero with a message; a quantized source needs
# --allow-requantize.
set -euo pipefail
mllm=$1 shared=$2 build=$3
src="$shared/anchor-data/models/stories260K.gguf"
ref="$shared/anchor-data/models/stories260K-Q8_0-ffn_down-F16.gguf"
for f in "$src" "$ref"; do [ -f "$f" ] || { echo "SKIPPED: $f is absent"; exit 77; }; done
tmp=$(mktemp -d "$build/e2e-quantize.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$mllm" quantize "$src" "$tmp/q8.gguf" --type q8_0 --tensor-type ffn_down=f16 --threads 2 2>"$tmp/log"
lines=$(grep -c '^\[ *[0-9]*/ *48\]' "$tmp/log")
[ "$lines" -eq 48 ] || { echo "FAIL: $lines progress lines, want 48"; cat "$tmp/log"; exit 1; }
grep -q 'blk.0.ffn_down.weight .*converting to f16' "$tmp/log" || { echo "FAIL: ffn_down not f16"; exit 1; }
grep -q '^model size  = ' "$tmp/log" && grep -q '^quant size  = ' "$tmp/log" || { echo "FAIL: no sizes"; exit 1; }

ours=$("$mllm" run --raw -m "$tmp/q8.gguf" -p "Once upon a time" -n 24 --temp 0 2>/dev/null)
theirs=$("$mllm" run --raw -m "$ref" -p "Once upon a time" -n 24 --temp 0 2>/dev/null)
[ "$ours" = "$theirs" ] || { echo "FAIL: greedy text differs"; echo "ours:   $ours"; echo "theirs: $theirs"; exit 1; }

if "$mllm" quantize "$src" "$tmp/x.gguf" --type q9_9 2>"$tmp/err"; then echo "FAIL: bad type accepted"; exit 1; fi
grep -q "unknown type 'q9_9'" "$tmp/err" || { echo "FAIL: no message for a bad type"; cat "$tmp/err"; exit 1; }
if "$mllm" quantize "$src" 2>/dev/null; then echo "FAIL: missing OUT accepted"; exit 1; fi
# A quantized source is refused (errors would compound) unless asked for.
if "$mllm" quantize "$tmp/q8.gguf" "$tmp/re.gguf" --type q4_0 2>"$tmp/err"; then echo "FAIL: requantize accepted"; exit 1; fi
grep -q "already quantized" "$tmp/err" && grep -q -- "--allow-requantize" "$tmp/err" ||
    { echo "FAIL: no message for a requantize"; cat "$tmp/err"; exit 1; }
[ ! -e "$tmp/re.gguf" ] || { echo "FAIL: an output was written"; exit 1; }
"$mllm" quantize "$tmp/q8.gguf" "$tmp/re.gguf" --type q4_0 --allow-requantize 2>/dev/null ||
    { echo "FAIL: --allow-requantize refused"; exit 1; }
echo "quantize_cli: OK ($ours)"
