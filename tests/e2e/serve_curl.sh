#!/usr/bin/env bash
# mllm serve, driven by curl: health, models, completions (plain and
# streamed, compared with `mllm run --temp 0`), stop strings, seeds,
# tokenize/detokenize (compared with `mllm tokenize`), metrics, API key.
# Args: mllm binary, shared dir, build dir. Loopback only.
set -uo pipefail
MLLM=$1
command -v curl >/dev/null || { echo "SKIPPED: curl is not installed"; exit 77; }
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
. "$(dirname "$0")/lib/checks.sh"
# clean_log LOG: no sanitizer report in a server log.
clean_log() {
    if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$1"; then bad "sanitizer report in $1:"; cat "$1"
    else ok "no sanitizer report"; fi
}
# jget JSON EXPR: a Python expression over `j` (the parsed JSON).
jget() { python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }

"$MLLM" synth --arch qwen3 --preset tiny --format gguf -o "$WORK/tiny.gguf" >/dev/null 2>&1 || { echo "FAIL synth"; exit 1; }

# start_server LOG ARGS...: starts mllm serve on a free port; sets PORT, PID.
start_server() {
    local log=$1; shift
    "$MLLM" serve -m "$WORK/tiny.gguf" --host 127.0.0.1 --port 0 --alias tiny "$@" >"$log" 2>&1 &
    PID=$!
    PIDS+=("$PID")
    PORT=""
    for _ in $(seq 600); do
        PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
        [ -n "$PORT" ] && return 0
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "FAIL server did not start:"; cat "$log"; exit 1
}

start_server "$WORK/a.log" --parallel 2
B="http://127.0.0.1:$PORT"
# curl -d says application/x-www-form-urlencoded; the server takes JSON only (415).
JSON=(-H 'Content-Type: application/json')

# ---- health, models -------------------------------------------------------
out=$(curl -s -w ' %{http_code}' "$B/health")
expect "GET /health" "$(jget "${out% *}" 'j["status"]') ${out##* }" "ok 200"
out=$(curl -s "$B/v1/models")
expect "GET /v1/models" "$(jget "$out" 'j["object"], j["data"][0]["id"]')" "('list', 'tiny')"
expect "GET /v1/models/tiny" "$(curl -s -o /dev/null -w '%{http_code}' "$B/v1/models/tiny")" "200"
expect "GET /v1/models/other" "$(curl -s -o /dev/null -w '%{http_code}' "$B/v1/models/other")" "404"

# ---- greedy completion == mllm run --temp 0 -------------------------------
PROMPT="Once upon a time there was"
ref=$("$MLLM" run --raw -m "$WORK/tiny.gguf" -p "$PROMPT" -n 24 --temp 0 2>/dev/null)
ref=${ref#"$PROMPT"}
body='{"model":"tiny","prompt":"'"$PROMPT"'","max_tokens":24,"temperature":0}'
out=$(curl -s "$B/v1/completions" "${JSON[@]}" -d "$body")
text=$(jget "$out" 'j["choices"][0]["text"]')
expect "completion text == mllm run" "$text" "$ref"
expect "completion object" "$(jget "$out" 'j["object"], j["choices"][0]["finish_reason"]')" "('text_completion', 'length')"
expect "usage" "$(jget "$out" 'j["usage"]["completion_tokens"], j["usage"]["total_tokens"] - j["usage"]["prompt_tokens"]')" "(24, 24)"
# ctest pins SOURCE_DATE_EPOCH: `created` is that instant, not the clock.
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
    expect "created == SOURCE_DATE_EPOCH" "$(jget "$out" 'j["created"]')" "$SOURCE_DATE_EPOCH"
fi

# ---- the same, streamed ---------------------------------------------------
sbody='{"model":"tiny","prompt":"'"$PROMPT"'","max_tokens":24,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}'
curl -sN "$B/v1/completions" "${JSON[@]}" -d "$sbody" >"$WORK/stream.txt"
expect "stream ends with [DONE]" "$(grep '^data: ' "$WORK/stream.txt" | tail -1)" "data: [DONE]"
stext=$(python3 - "$WORK/stream.txt" <<'EOF'
import json, sys
t, fin, usage = "", None, None
for line in open(sys.argv[1]):
    if line.startswith("data: ") and line.strip() != "data: [DONE]":
        j = json.loads(line[6:])
        for c in j["choices"]:
            t += c["text"]
            fin = c["finish_reason"] or fin
        usage = j.get("usage") or usage
print(json.dumps([t, fin, usage["completion_tokens"]]))
EOF
)
expect "stream text == plain text" "$stext" "$(python3 -c 'import json,sys; print(json.dumps([sys.argv[1], "length", 24]))' "$text")"

# ---- stop strings: cut before the first match, finish_reason stop ---------
stop=${text:6:3}
out=$(curl -s "$B/v1/completions" "${JSON[@]}" -d '{"model":"tiny","prompt":"'"$PROMPT"'","max_tokens":24,"temperature":0,"stop":["'"$stop"'"]}')
want=$(python3 -c 'import sys; t, s = sys.argv[1], sys.argv[2]; print(t[:t.index(s)])' "$text" "$stop")
expect "stop string cuts the text" "$(jget "$out" 'j["choices"][0]["text"]')" "$want"
expect "stop string finish_reason" "$(jget "$out" 'j["choices"][0]["finish_reason"]')" "stop"
curl -sN "$B/v1/completions" "${JSON[@]}" -d '{"model":"tiny","prompt":"'"$PROMPT"'","max_tokens":24,"temperature":0,"stream":true,"stop":"'"$stop"'"}' >"$WORK/stop.txt"
st=$(python3 -c '
import json, sys
print("".join(json.loads(l[6:])["choices"][0]["text"] for l in open(sys.argv[1]) if l.startswith("data: {")))' "$WORK/stop.txt")
expect "streamed stop string never leaks" "$st" "$want"

# ---- seeds: same seed same text ------------------------------------------
sb='{"model":"tiny","prompt":"The","max_tokens":16,"temperature":1.0,"seed":1234}'
a=$(jget "$(curl -s "$B/v1/completions" "${JSON[@]}" -d "$sb")" 'j["choices"][0]["text"]')
b=$(jget "$(curl -s "$B/v1/completions" "${JSON[@]}" -d "$sb")" 'j["choices"][0]["text"]')
expect "same seed, same sample" "$a" "$b"

# ---- tokenize / detokenize ------------------------------------------------
ids=$(jget "$(curl -s "$B/tokenize" "${JSON[@]}" -d '{"content":"Hello world, héllo!"}')" '" ".join(map(str, j["tokens"]))')
cli=$("$MLLM" tokenize -m "$WORK/tiny.gguf" -p "Hello world, héllo!" 2>/dev/null | head -1)
expect "tokenize == mllm tokenize" "$ids" "$cli"
arr=$(echo "$ids" | tr ' ' ',')
expect "detokenize round trip" "$(jget "$(curl -s "$B/detokenize" "${JSON[@]}" -d '{"tokens":['"$arr"']}')" 'j["content"]')" "Hello world, héllo!"

# ---- chat -----------------------------------------------------------------
out=$(curl -s -w ' %{http_code}' "$B/v1/chat/completions" "${JSON[@]}" -d '{"model":"tiny","messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"temperature":0}')
expect "chat completion" "${out##* } $(jget "${out% *}" 'j["object"], j["choices"][0]["message"]["role"], j["usage"]["completion_tokens"] > 0')" \
    "200 ('chat.completion', 'assistant', True)"

# ---- prefix cache: a prompt of several 16-token KV blocks, sent twice -------
lp='{"model":"tiny","prompt":"Once upon a time there was a little cat who lived in a big house with a garden and many flowers and trees.","max_tokens":4,"temperature":0}'
c1=$(jget "$(curl -s "$B/v1/completions" "${JSON[@]}" -d "$lp")" 'j["choices"][0]["text"]')
c2=$(jget "$(curl -s "$B/v1/completions" "${JSON[@]}" -d "$lp")" 'j["choices"][0]["text"]')
expect "a prefix-cached prompt answers the same" "$c2" "$c1"

# ---- metrics ---------------------------------------------------------------
m=$(curl -s "$B/metrics")
for name in mllm_http_responses_total mllm_requests_total mllm_generated_tokens_total mllm_prompt_tokens_total \
    mllm_generation_tokens_per_second mllm_queue_length mllm_slots_busy mllm_slots_total; do
    if grep -q "^$name" <<<"$m"; then ok "metric $name"; else bad "metric $name missing"; fi
done
gen=$(awk '$1 == "mllm_generated_tokens_total" {print $2}' <<<"$m")
[ "${gen:-0}" -ge 48 ] && ok "generated tokens counted ($gen)" || bad "generated tokens $gen < 48"
reused=$(awk '$1 == "mllm_prompt_tokens_reused_total" {print $2}' <<<"$m")
[ "${reused:-0}" -gt 0 ] && ok "KV prefix reused ($reused tokens)" || bad "no prompt tokens reused"

kill -TERM "$PID"; wait "$PID"; rc=$?
expect "SIGTERM exit code" "$rc" "0"
clean_log "$WORK/a.log"

# ---- API key ---------------------------------------------------------------
start_server "$WORK/b.log" --api-key s3cret
B="http://127.0.0.1:$PORT"
expect "key: /health is open" "$(curl -s -o /dev/null -w '%{http_code}' "$B/health")" "200"
expect "key: none" "$(curl -s -o /dev/null -w '%{http_code}' "$B/v1/models")" "401"
expect "key: wrong" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cre' "$B/v1/models")" "401"
expect "key: right" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret' "$B/v1/models")" "200"
expect "key: metrics closed" "$(curl -s -o /dev/null -w '%{http_code}' "$B/metrics")" "401"
out=$(curl -s -w ' %{http_code}' "$B/v1/completions" "${JSON[@]}" -d '{"model":"tiny","prompt":"x"}')
expect "key: completions closed" "${out##* } $(jget "${out% *}" 'j["error"]["code"]')" "401 invalid_api_key"
kill -INT "$PID"; wait "$PID"; rc=$?
expect "SIGINT exit code" "$rc" "0"
clean_log "$WORK/b.log"

finish serve_curl
