#!/usr/bin/env bash
# `mllm run -m DIR --image FILE -p PROMPT` on the tiny random SmolVLM of
# tests/data/smolvlm/tiny (tools/reference/make_smolvlm_tiny.py): the chat
# template places <image>, which becomes the processor's tile markers and
# 80 <image> tokens (2 x 2 tiles + the global image, 16 tokens each), the
# SigLIP tower + connector rows stand in for them, and greedy decoding
# gives transformers' 6 tokens (prompt.txt; each step's top-2 margin is at
# least 0.05, our logits are within NMSE 1e-12). A WebP image runs through
# the same path.
set -euo pipefail
mllm=$1 build=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/checks.sh"
data=$here/../data
tmp=$(mktemp -d "$build/e2e-smolvlm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
model=$data/smolvlm/tiny

"$mllm" run -m "$model" --image "$data/images/photo.png" -p "What is this?" -n 6 --temp 0 --exact -t 1 \
    --ids-out "$tmp/ids" >"$tmp/out" 2>"$tmp/err" && rc=0 || rc=$?
expect "exit status" "$rc" 0
grep -q "1 image, 80 image tokens; decode + preprocess .* ms, vision tower .* ms$" "$tmp/err" && ok "80 image tokens and times reported" || bad "image report: $(cat "$tmp/err")"
want=$(sed -n 's/^greedy //p' "$data/smolvlm/prompt.txt")
got=$(tail -n 6 "$tmp/ids" | tr '\n' ' ' | sed 's/ $//')
expect "greedy ids equal transformers'" "$got" "$want"
# --ids-out writes the template's ids before the image's expansion (the
# expanded ids equal the processor's: tests/unit/test_smolvlm.c)
expect "one <image> in the written prompt ids" "$(head -n -6 "$tmp/ids" | grep -cx 261)" 1

if "$mllm" run -m "$model" --image "$data/images/photo.webp" -p "What is this?" -n 2 --temp 0 -t 1 \
    >/dev/null 2>"$tmp/err"; then
    grep -q "1 image, 80 image tokens" "$tmp/err" && ok "WebP image: 2 x 2 tiles + global" || bad "webp: $(cat "$tmp/err")"
else
    grep -q "WebP support not built" "$tmp/err" && ok "WebP refused: not built" || bad "webp: $(cat "$tmp/err")"
fi

# /image in mllm chat: the same path, the same first 3 tokens
printf '/image %s\nWhat is this?\n' "$data/images/photo.png" |
    "$mllm" chat -m "$model" -n 3 --temp 0 --exact -t 1 --ids-out "$tmp/cids" >/dev/null 2>"$tmp/err" && rc=0 || rc=$?
expect "chat: exit status" "$rc" 0
expect "chat /image: transformers' first 3 greedy ids" "$(head -n 3 "$tmp/cids" | tr '\n' ' ' | sed 's/ $//')" \
    "$(sed -n 's/^greedy //p' "$data/smolvlm/prompt.txt" | cut -d' ' -f1-3)"

head -c 3000 "$data/images/photo.png" >"$tmp/cut.png"
"$mllm" run -m "$model" --image "$tmp/cut.png" -p hi -n 2 >/dev/null 2>"$tmp/err" && rc=0 || rc=$?
expect "truncated image: exit status" "$rc" 1
grep -q "cut.png" "$tmp/err" && ok "truncated image named" || bad "truncated: $(cat "$tmp/err")"
finish run_image_smolvlm
