#!/usr/bin/env bash
# `mllm chat` with stdin not a terminal: every line is a user turn (a
# trailing backslash joins lines), commands work, and when the conversation
# outgrows the context the oldest turns are dropped (stderr says so), the
# system prompt is kept and every turn still gets its reply.
set -euo pipefail
mllm=$1 shared=$2 build=$3
tmp=$(mktemp -d "$build/e2e-chatp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$mllm" synth --arch qwen3 --preset tiny --format gguf -o "$tmp/m.gguf" 2>/dev/null
{
    for i in 1 2 3 4 5 6; do echo "This is turn number $i of a long conversation about cats and dogs"; done
    printf 'two lines \\\njoined\n'
    echo "/stats"
    echo "/save $tmp/h.json"
    echo "/nope"
} | "$mllm" chat -m "$tmp/m.gguf" --system "Be brief." --temp 0 -n 8 -c 96 -t 2 --verbose > "$tmp/out" 2> "$tmp/err"
cat "$tmp/err"
grep -q "context full: dropped the oldest turn" "$tmp/err"
[ "$(grep -c '^\[turn ' "$tmp/err")" -eq 7 ]
grep -q "^turns 7 " "$tmp/out"
grep -q "unknown command '/nope'" "$tmp/out"
python3 - "$tmp/h.json" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
assert h[0] == {"role": "system", "content": "Be brief."}, h[0]
assert h[-2] == {"role": "user", "content": "two lines \njoined"}, h[-2]
assert h[-1]["role"] == "assistant"
assert len(h) < 1 + 2 * 7, len(h)  # old turns were dropped
print("history after dropping: %d messages, system prompt kept" % len(h))
PY
# /bye (and /exit) quit at once: nothing after it is read; the one-line
# banner names the model, context and template; each reply reports its
# token count and speed on stderr.
printf 'Hello\n/bye\nThis line is never read\n' |
    "$mllm" chat -m "$tmp/m.gguf" --temp 0 -n 4 -c 96 -t 2 > "$tmp/out2" 2> "$tmp/err2"
grep -q "^mllm chat: m.gguf (qwen3) | context 96 tokens | template: the model's own | seed [0-9]* | /help, /bye$" "$tmp/err2" ||
    { echo "FAIL: banner"; cat "$tmp/err2"; exit 1; }
[ "$(grep -c '^\[[0-9]* tokens, [0-9.]* tokens/s\]$' "$tmp/err2")" -eq 1 ] || { echo "FAIL: one reply expected"; cat "$tmp/err2"; exit 1; }
printf 'Hello\n/exit\nnever\n' | "$mllm" chat -m "$tmp/m.gguf" --temp 0 -n 4 -c 96 -t 2 2>&1 >/dev/null |
    grep -c 'tokens/s' | grep -qx 1 || { echo "FAIL: /exit"; exit 1; }
# A reply that fills the context: cut with a note, or shifted and finished.
printf 'Hello\n' | "$mllm" chat -m "$tmp/m.gguf" --temp 0 -n -1 -c 32 -t 2 --seed 1 > /dev/null 2> "$tmp/err3"
grep -q "context full: reply cut" "$tmp/err3" || { echo "FAIL: no context-full note"; cat "$tmp/err3"; exit 1; }
printf 'Hello\n' | "$mllm" chat -m "$tmp/m.gguf" --temp 0 -n 60 -c 32 -t 2 --context-shift > /dev/null 2> "$tmp/err4"
grep -q "^\[60 tokens, " "$tmp/err4" && grep -q "context shifted" "$tmp/err4" ||
    { echo "FAIL: --context-shift"; cat "$tmp/err4"; exit 1; }
echo "chat: /bye, /exit, banner, tokens/s, context full and --context-shift"
