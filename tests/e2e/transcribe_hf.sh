#!/usr/bin/env bash
# Whisper in the Hugging Face layout (openai/whisper-* folders: config.json
# with model_type whisper, model.safetensors, tokenizer.json): tiny.en's
# CTranslate2 weights ($MLLM_WHISPER_TINY_DIR) written by transformers'
# save_pretrained (tools/reference/whisper_to_hf.py), float16 and float32,
# give exactly the output of the CTranslate2 folder (segments, times, log
# probabilities), greedy and beam 5; a folder with a tensor missing or a
# config that is not Whisper's is a clean error. Under the sanitizers
# (MLLM_TEST_SANITIZED) only beam 5 with timestamps (the loader is the same
# for every search; release and clang run all three). Skipped (77) without
# the model or without torch/transformers.
set -euo pipefail
mllm=$1 shared=$2 build=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/checks.sh"
need_whisper_tiny
if ! python3 -c 'import torch, transformers, safetensors' 2> /dev/null; then
    echo "SKIPPED: torch / transformers / safetensors not installed"
    exit 77
fi
tmp=$(mktemp -d "$build/e2e-whisper-hf.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for dt in float16 float32; do
    python3 "$here/../../tools/reference/whisper_to_hf.py" --model "$dir" --out "$tmp/hf-$dt" --dtype $dt > /dev/null 2>&1
done
searches=("--timestamps" "--beam 5 --timestamps" "--beam 5")
[ -n "${MLLM_TEST_SANITIZED:-}" ] && searches=("--beam 5 --timestamps")
for opts in "${searches[@]}"; do
    "$mllm" transcribe -q -m "$dir" "$wav" -t 2 $opts -o json > "$tmp/ct2.json"
    for dt in float16 float32; do
        "$mllm" transcribe -q -m "$tmp/hf-$dt" "$wav" -t 2 $opts -o json > "$tmp/hf.json"
        cmp -s "$tmp/ct2.json" "$tmp/hf.json" && ok "HF $dt = CTranslate2 ($opts)" || bad "HF $dt ($opts): $(diff "$tmp/ct2.json" "$tmp/hf.json" | head -5)"
    done
done
python3 -c 'import json,sys; print("  text:", json.load(open(sys.argv[1]))["text"])' "$tmp/hf.json"
# broken folders
cp -r "$tmp/hf-float16" "$tmp/bad"
python3 - "$tmp/bad/model.safetensors" <<'PY'
import sys
from safetensors.torch import load_file, save_file
sd = load_file(sys.argv[1])
del sd["model.decoder.layers.1.fc2.weight"]
save_file(sd, sys.argv[1])
PY
rc=0; "$mllm" transcribe -m "$tmp/bad" "$wav" > /dev/null 2> "$tmp/err" || rc=$?
expect "a tensor missing: exit 1" "$rc" 1
grep -q "decoder.layers.1.fc2.weight is missing" "$tmp/err" && ok "names the missing tensor" || bad "message: $(cat "$tmp/err")"
sed -i 's/"d_model": 384/"d_model": 999999999/' "$tmp/bad/config.json"
rc=0; "$mllm" transcribe -m "$tmp/bad" "$wav" > /dev/null 2> "$tmp/err" || rc=$?
expect "an absurd d_model: exit 1" "$rc" 1
grep -q "out of range" "$tmp/err" && ok "absurd size: message" || bad "message: $(cat "$tmp/err")"
finish transcribe_hf
