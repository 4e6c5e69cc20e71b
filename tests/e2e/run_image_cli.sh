#!/usr/bin/env bash
# `mllm run --image` is not implemented yet (docs/vision.md): it must say so
# and exit 2 before touching the model, and --help must list it as such.
set -euo pipefail
mllm=$1
out=$("$mllm" run -m /nonexistent.gguf -p hi --image /nonexistent.png 2>&1) && rc=0 || rc=$?
[[ $rc == 2 ]] || { echo "FAIL: exit $rc (want 2): $out"; exit 1; }
[[ $out == *"--image /nonexistent.png: not implemented yet"* ]] || { echo "FAIL: message: $out"; exit 1; }
"$mllm" run --help | grep -q -- "--image FILE      NOT IMPLEMENTED YET" || { echo "FAIL: --help"; exit 1; }
echo "ok: mllm run --image refuses clearly"
