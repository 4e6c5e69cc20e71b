#!/usr/bin/env bash
# stories260K (llama2.c checkpoint + tok512.bin) from the CLI with --temp 0
# reproduces ../shared/models/stories260K/stories260K_golden.json token for
# token, for each of its prompts.
set -euo pipefail
mllm=$1 shared=$2 build=$3
dir="$shared/models/stories260K"
for f in stories260K.bin tok512.bin stories260K_golden.json; do
    [ -f "$dir/$f" ] || { echo "SKIPPED: $dir/$f is absent"; exit 77; }
done
tmp=$(mktemp -d "$build/e2e-stories.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n_runs=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["runs"]))' "$dir/stories260K_golden.json")
for ((i = 0; i < n_runs; i++)); do
    n_gen=$(python3 -c '
import json,sys
r=json.load(open(sys.argv[1]))["runs"][int(sys.argv[2])]
open(sys.argv[3],"w").write(r["prompt"])
print(r["steps"] + 1 - len(r["prompt_tokens"]))' "$dir/stories260K_golden.json" "$i" "$tmp/prompt.$i")
    prompt=$(cat "$tmp/prompt.$i")
    "$mllm" run -m "$dir/stories260K.bin" --tokenizer "$dir/tok512.bin" -p "$prompt" \
        -n "$n_gen" --temp 0 -t 2 -c 512 --ids-out "$tmp/ids.$i" > "$tmp/out.$i" 2> "$tmp/err.$i" || {
        cat "$tmp/err.$i"; exit 1; }
    python3 - "$dir/stories260K_golden.json" "$i" "$tmp/ids.$i" "$tmp/out.$i" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][int(sys.argv[2])]
ours = [int(x) for x in open(sys.argv[3]).read().split()]
want = run["tokens"]
if ours != want:
    k = next((j for j, (a, b) in enumerate(zip(ours, want)) if a != b), min(len(ours), len(want)))
    print(f"run {sys.argv[2]} ({run['prompt']!r}): ids differ at index {k}: ours {ours[k:k+5]} golden {want[k:k+5]} (len {len(ours)} vs {len(want)})")
    sys.exit(1)
text = open(sys.argv[4], encoding="utf-8").read().rstrip("\n")
if "text" in run and text.strip() != run["text"].strip():
    print(f"run {sys.argv[2]}: text differs:\n ours  {text[:200]!r}\n golden {run['text'][:200]!r}")
    sys.exit(1)
print(f"run {sys.argv[2]} ({run['prompt']!r}): {len(ours)} ids identical to the golden")
PY
done
tail -n 1 "$tmp/err.0"
