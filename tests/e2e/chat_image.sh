#!/usr/bin/env bash
# `/image PATH` in `mllm chat` (piped stdin) on the tiny random Qwen2.5-VL of
# tests/data/qwen2vl/tiny: the first turn's greedy tokens equal
# `mllm run --image`'s (and so transformers', image_generate.txt); the
# second turn about the same image takes its embeddings from the cache (no
# decode, no vision tower) and reuses its KV, and its tokens equal a fresh
# process that /load's the history (everything recomputed); a second image
# is encoded, the first still cached. Errors: a missing file, a truncated
# image (the chat goes on), a text-only model.
set -euo pipefail
mllm=$1 build=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/checks.sh"
data=$here/../data
tmp=$(mktemp -d "$build/e2e-chatimg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
model=$data/qwen2vl/tiny
opts=(--temp 0 -n 6 --exact -t 1 --no-lookup --verbose)

"$mllm" run -m "$model" --image "$data/images/photo.png" -p "What is this?" -n 6 --temp 0 --exact -t 1 \
    --no-lookup --ids-out "$tmp/run_ids" >/dev/null 2>"$tmp/run_err"
run_ids=$(tail -n 6 "$tmp/run_ids" | tr '\n' ' ')

printf '/image %s\nWhat is this?\nAnd now?\n/save %s\n/image %s\nThis one?\n' "$data/images/photo.png" \
    "$tmp/h.json" "$data/images/photo.jpg" |
    "$mllm" chat -m "$model" "${opts[@]}" --ids-out "$tmp/ids" >"$tmp/out" 2>"$tmp/err" && rc=0 || rc=$?
expect "chat exit status" "$rc" 0
turn() { awk -v k="$1" 'BEGIN{RS=""} NR==k{gsub("\n"," "); print $0 " "}' "$tmp/ids"; }
expect "turn 1 tokens equal mllm run --image" "$(turn 1)" "$run_ids"
want=$(sed -n 2p "$data/qwen2vl/image_generate.txt")
expect "turn 1 tokens equal transformers'" "$(turn 1)" "$want "
grep -q "image .*photo.png attached to the next message" "$tmp/out" && ok "/image acknowledged" || bad "ack: $(cat "$tmp/out")"
rep=$(grep "image tokens" "$tmp/err" || true)
grep -q "^\[turn 1: prompt tokens reused 0, computed 111;" "$tmp/err" && ok "turn 1: 111 prompt tokens, as run" ||
    bad "turn 1: $(cat "$tmp/err")"
[ "$(sed -n 1p <<<"$rep")" != "" ] && ! grep -q "cache" <<<"$(sed -n 1p <<<"$rep")" && ok "turn 1 encodes the image" ||
    bad "turn 1 report: $rep"
grep -q "1 image, 77 image tokens; decode + preprocess 0.0 ms, vision tower 0.0 ms (1 from the embedding cache)" \
    <<<"$(sed -n 2p <<<"$rep")" && ok "turn 2: embeddings from the cache" || bad "turn 2 report: $rep"
grep -q "^\[turn 2: prompt tokens reused 111," "$tmp/err" && ok "turn 2 reuses the image's KV" || bad "turn 2: $(cat "$tmp/err")"
grep -q "2 images, 154 image tokens;.*(1 from the embedding cache)" <<<"$(sed -n 3p <<<"$rep")" &&
    ok "turn 3: a new image encoded, the first cached" || bad "turn 3 report: $rep"

# turn 2 recomputed from scratch in a fresh process: the same tokens
python3 - "$tmp/h.json" "$tmp/h1.json" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
assert h[0]["content"][0]["type"] == "image", h[0]
json.dump(h[:2], open(sys.argv[2], "w"))  # turn 1 and its reply
PY
printf '/load %s\nAnd now?\n' "$tmp/h1.json" | "$mllm" chat -m "$model" "${opts[@]}" --ids-out "$tmp/ids2" \
    >/dev/null 2>"$tmp/err2"
fresh=$(awk 'BEGIN{RS=""} NR==1{gsub("\n"," "); print $0 " "}' "$tmp/ids2")
expect "turn 2 tokens equal a fresh recomputation" "$(turn 2)" "$fresh"
grep -q "^\[turn 1: prompt tokens reused 0, computed 140;" "$tmp/err2" && ok "fresh: all 140 computed" || bad "fresh: $(cat "$tmp/err2")"

# errors: a missing file, a truncated image (the chat goes on)
head -c 20000 "$data/images/photo.png" >"$tmp/cut.png"
printf '/image %s\n/image %s\nhi\nhello\n' "$tmp/none.png" "$tmp/cut.png" |
    "$mllm" chat -m "$model" "${opts[@]}" >"$tmp/out" 2>"$tmp/err" && rc=0 || rc=$?
expect "errors: exit status" "$rc" 0
grep -q "cannot read image '.*none.png'" "$tmp/err" && ok "missing image named" || bad "missing: $(cat "$tmp/err")"
grep -q "image '.*cut.png': bad file format (.*corrupt or truncated PNG" "$tmp/err" && ok "truncated image named" ||
    bad "truncated: $(cat "$tmp/err")"
grep -q "^\[turn 1: prompt tokens reused 0, computed " "$tmp/err" && ok "the next turn still answers" || bad "after error: $(cat "$tmp/err")"

"$mllm" synth --arch qwen3 --preset tiny --format gguf -o "$tmp/t.gguf" 2>/dev/null
printf '/image %s\nhi\n' "$data/images/photo.png" | "$mllm" chat -m "$tmp/t.gguf" "${opts[@]}" >/dev/null 2>"$tmp/err" || true
grep -q "takes no images (qwen3 is not a vision-language decoder)" "$tmp/err" && ok "text-only model: clear error" || bad "text-only: $(cat "$tmp/err")"
grep -q -- "/image PATH" <<<"$("$mllm" chat --help)" && ok "--help lists /image" || bad "--help"
finish chat_image
