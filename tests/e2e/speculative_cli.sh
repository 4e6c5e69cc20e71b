#!/usr/bin/env bash
# Speculative decoding from the command line (docs/speculative.md): mllm run,
# mllm chat and mllm serve with --draft and prompt lookup give the greedy
# text of --no-speculative; a draft with another vocabulary is refused with
# a message naming the token.
set -euo pipefail
mllm=$1 shared=$2 build=$3
tmp=$(mktemp -d "$build/e2e-spec.XXXXXX")
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib/checks.sh"
"$mllm" synth --arch qwen3 --preset tiny --dtype f32 --format gguf -o "$tmp/t.gguf" >/dev/null 2>&1
"$mllm" synth --arch qwen3 --preset tiny --dtype q4_0 --format gguf -o "$tmp/d.gguf" >/dev/null 2>&1
"$mllm" synth --arch llama --preset tiny --format gguf -o "$tmp/other.gguf" >/dev/null 2>&1

P="Once upon a time there was a little"
run() { "$mllm" run --raw -m "$tmp/t.gguf" -p "$P" -n 40 --temp 0 --repeat-penalty 1.3 --ids-out "$tmp/$1.ids" "${@:2}" \
            >"$tmp/$1.out" 2>"$tmp/$1.err"; }
run plain --no-speculative
run lookup --speculative always
run draft --speculative always --no-lookup --draft "$tmp/d.gguf" --draft-p-min 0 --draft-max 4
run auto --draft "$tmp/d.gguf" --draft-p-min 0
# --draft-quant: the draft requantized at load proposes exactly what the
# file mllm convert --quant writes proposes (the same counts of proposals,
# kept ones and draft evaluations), and the text stays the model's.
"$mllm" synth --arch qwen3 --preset tiny --dtype f32 --format gguf -o "$tmp/d32.gguf" >/dev/null 2>&1
"$mllm" convert --in "$tmp/d32.gguf" --out "$tmp/d32q.mllm" --quant q4_1 --quiet >/dev/null 2>&1
DQ=(--speculative always --no-lookup --draft-p-min 0 --draft-max 4)
run dq_load "${DQ[@]}" --draft "$tmp/d32.gguf" --draft-quant q4_1
run dq_file "${DQ[@]}" --draft "$tmp/d32q.mllm" --draft-quant keep
run dq_keep "${DQ[@]}" --draft "$tmp/d32.gguf" --draft-quant keep
counts() { grep -o '| draft: [^|]*' "$tmp/$1.err"; }
expect "--draft-quant q4_1 == converted file" "$(counts dq_load)" "$(counts dq_file)"
expect "draft evaluations counted" "$(counts dq_load | grep -c ', [0-9]* draft evaluations')" "1"
for c in lookup draft auto dq_load dq_file dq_keep; do
    expect "run: $c == plain" "$(cat "$tmp/$c.ids")" "$(cat "$tmp/plain.ids")"
done
rc=0; "$mllm" run --raw -m "$tmp/t.gguf" -p "$P" -n 4 --draft "$tmp/d32.gguf" --draft-quant q3 >/dev/null 2>"$tmp/bad.err" || rc=$?
expect "bad --draft-quant" "$rc $(grep -c "requant 'q3': expected q4_0" "$tmp/bad.err")" "1 1"
expect "run: lookup counted" "$(grep -c '| lookup: [0-9]*/[0-9]* accepted' "$tmp/lookup.err")" "1"
expect "run: draft counted" "$(grep -c '| draft: [0-9]*/[0-9]* accepted' "$tmp/draft.err")" "1"

rc=0; "$mllm" run --raw -m "$tmp/t.gguf" -p "$P" -n 4 --draft "$tmp/other.gguf" >/dev/null 2>"$tmp/bad.err" || rc=$?
expect "other vocabulary refused" "$rc $(grep -c "token 473 is .* there and .* in the model" "$tmp/bad.err")" "1 1"
rc=0; "$mllm" run --raw -m "$tmp/t.gguf" -p "$P" --speculative sometimes >/dev/null 2>"$tmp/bad.err" || rc=$?
expect "bad --speculative" "$rc" "2"

printf 'Hello there\nAnd more\n' | "$mllm" chat -m "$tmp/t.gguf" --temp 0 -n 24 --no-speculative >"$tmp/c0.out" 2>/dev/null
printf 'Hello there\nAnd more\n' | "$mllm" chat -m "$tmp/t.gguf" --temp 0 -n 24 --speculative always --draft "$tmp/d.gguf" \
    --draft-p-min 0 >"$tmp/c1.out" 2>/dev/null
expect "chat: draft == plain" "$(cat "$tmp/c1.out")" "$(cat "$tmp/c0.out")"

# serve --draft: the draft proposes inside the batching engine, with
# --parallel 2 and --parallel 1 alike (seeded text too is the engine's
# without speculation); greedy text is mllm run's in both.
start_server() { # log-name args...
    local log=$tmp/$1.log
    "$mllm" serve -m "$tmp/t.gguf" --host 127.0.0.1 --port 0 --alias tiny "${@:2}" >"$log" 2>&1 &
    PIDS+=($!)
    PORT=""
    for _ in $(seq 600); do
        PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
        [ -n "$PORT" ] && break
        sleep 0.1
    done
}
stop_server() { # log-name
    kill -INT "${PIDS[-1]}"; wait "${PIDS[-1]}" || true
    if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$tmp/$1.log"; then bad "sanitizer report"; cat "$tmp/$1.log"; fi
}
complete() { # temperature seed
    local out
    out=$(curl -s "http://127.0.0.1:$PORT/v1/completions" -H 'Content-Type: application/json' \
        -d '{"model":"tiny","prompt":"'"$P"'","max_tokens":24,"temperature":'"$1"',"seed":'"$2"'}')
    python3 -c 'import json,sys; print(json.loads(sys.argv[1])["choices"][0]["text"])' "$out"
}
if command -v curl >/dev/null; then
    ref=$("$mllm" run --raw -m "$tmp/t.gguf" -p "$P" -n 24 --temp 0 --no-speculative 2>/dev/null)
    ref=${ref#"$P"}
    start_server plain --parallel 2 --no-speculative
    seeded=$(complete 0.9 11)
    stop_server plain
    start_server engine --parallel 2 --draft "$tmp/d.gguf" --draft-p-min 0 --speculative always
    expect "serve --parallel 2: draft == plain run" "$(complete 0 1)" "$ref"
    expect "serve --parallel 2: seeded, draft == no speculation" "$(complete 0.9 11)" "$seeded"
    kept=$(curl -s "http://127.0.0.1:$PORT/metrics" | sed -n 's/^mllm_lookup_accepted_tokens_total \([0-9]*\)/\1/p')
    expect "serve --parallel 2: the draft's proposals kept in the engine" "$([ "${kept:-0}" -gt 0 ] && echo yes)" "yes"
    expect "serve --parallel 2: one engine" "$(grep -c 'one engine, a draft model' "$tmp/engine.log")" "1"
    stop_server engine
    start_server one --parallel 1 --draft "$tmp/d.gguf" --draft-p-min 0 --speculative always
    expect "serve --parallel 1: draft == plain run" "$(complete 0 1)" "$ref"
    expect "serve --parallel 1: seeded, draft == no speculation" "$(complete 0.9 11)" "$seeded"
    kept=$(curl -s "http://127.0.0.1:$PORT/metrics" | sed -n 's/^mllm_lookup_accepted_tokens_total \([0-9]*\)/\1/p')
    expect "serve --parallel 1: the draft's proposals kept in the engine" "$([ "${kept:-0}" -gt 0 ] && echo yes)" "yes"
    expect "serve --parallel 1: one engine" "$(grep -c 'one engine, a draft model' "$tmp/one.log")" "1"
    stop_server one
else
    echo "SKIPPED serve checks: curl is not installed"
fi
finish speculative_cli
