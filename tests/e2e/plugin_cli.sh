#!/usr/bin/env bash
# mllm run --plugin FILE and MLLM_PLUGINS (docs/plugins.md): the example
# plugin loads and the run goes on; the copy built for plugin ABI 999 stops
# the run with exit 1 and both ABI versions named; a missing file in
# MLLM_PLUGINS likewise. Usage: plugin_cli.sh MLLM SHARED_DIR BUILD_DIR.
set -euo pipefail
cli=$1 bin=$3
good=$bin/tests/libmllm_example_plugin_good.so bad=$bin/tests/libmllm_example_plugin_bad.so
[[ -f $good && -f $bad ]] || { echo "SKIPPED: example plugins not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cli" synth --arch llama --preset tiny --dtype f32 --format gguf -o "$tmp/m.gguf" > /dev/null
fail=0
"$cli" run --help > "$tmp/help" # not piped: grep -q would stop it early (SIGPIPE under pipefail)
grep -q -- "--plugin FILE" "$tmp/help" || { echo "FAIL: run --help does not name --plugin"; fail=1; }
"$cli" run --plugin "$good" -m "$tmp/m.gguf" -p hi -n 2 > "$tmp/out" 2> "$tmp/err" ||
    { echo "FAIL: run with the example plugin:"; cat "$tmp/err"; fail=1; }
rc=0
"$cli" run --plugin "$bad" -m "$tmp/m.gguf" -p hi -n 2 > "$tmp/out" 2> "$tmp/err" || rc=$?
if [[ $rc != 1 ]] || ! grep -q "built for plugin ABI 999, this library has ABI 1" "$tmp/err"; then
    echo "FAIL: the ABI 999 plugin: exit $rc"; cat "$tmp/err"; fail=1
fi
rc=0
MLLM_PLUGINS="$good:$tmp/none.so" "$cli" run -m "$tmp/m.gguf" -p hi -n 2 > "$tmp/out" 2> "$tmp/err" || rc=$?
if [[ $rc != 1 ]] || ! grep -q "none.so" "$tmp/err"; then
    echo "FAIL: MLLM_PLUGINS with a missing file: exit $rc"; cat "$tmp/err"; fail=1
fi
[[ $fail == 0 ]] && echo "ok: --plugin and MLLM_PLUGINS load, refuse ABI 999 and missing files"
exit $fail
