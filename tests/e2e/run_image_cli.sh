#!/usr/bin/env bash
# `mllm run --image` on the tiny random Qwen2.5-VL of tests/data/qwen2vl/tiny
# (tools/reference/make_qwen2_5_vl_tiny.py): the chat template places the
# image, the vision tower's 77 rows replace the expanded <|image_pad|>, and
# greedy decoding gives transformers' 6 tokens (image_generate.txt; each
# step's top-2 margin is at least 0.005, our logits are within NMSE 1e-12).
# Hostile or misused input: a truncated image, --raw, a missing file.
set -euo pipefail
mllm=$1 build=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/checks.sh"
data=$here/../data
tmp=$(mktemp -d "$build/e2e-image.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
model=$data/qwen2vl/tiny

"$mllm" run -m "$model" --image "$data/images/photo.png" -p "What is this?" -n 6 --temp 0 --exact -t 1 \
    --ids-out "$tmp/ids" >"$tmp/out" 2>"$tmp/err" && rc=0 || rc=$?
expect "exit status" "$rc" 0
grep -q "1 image, 77 image tokens; decode + preprocess .* ms, vision tower .* ms$" "$tmp/err" && ok "77 image tokens and times reported" || bad "image report: $(cat "$tmp/err")"
want=$(sed -n 2p "$data/qwen2vl/image_generate.txt")
got=$(tail -n 6 "$tmp/ids" | tr '\n' ' ' | sed 's/ $//')
expect "greedy ids equal transformers'" "$got" "$want"

head -c 20000 "$data/images/photo.png" >"$tmp/cut.png"
"$mllm" run -m "$model" --image "$tmp/cut.png" -p hi -n 2 >/dev/null 2>"$tmp/err" && rc=0 || rc=$?
expect "truncated image: exit status" "$rc" 1
grep -q "cut.png.*corrupt or truncated PNG" "$tmp/err" && ok "truncated image named" || bad "truncated: $(cat "$tmp/err")"

"$mllm" run -m "$model" --image "$tmp/none.png" -p hi -n 2 >/dev/null 2>"$tmp/err" && rc=0 || rc=$?
expect "missing image: exit status" "$rc" 1
grep -q "none.png" "$tmp/err" && ok "missing image named" || bad "missing: $(cat "$tmp/err")"

"$mllm" run -m "$model" --image "$data/images/photo.png" -p hi --raw >/dev/null 2>"$tmp/err" && rc=0 || rc=$?
expect "--raw with --image: exit status" "$rc" 2
grep -q -- "--image FILE" <<< "$("$mllm" run --help)" && ok "--help lists --image" || bad "--help"
finish run_image_cli
