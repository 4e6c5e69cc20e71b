# Sourced by opencl_cli.sh and cuda_cli.sh (not a test itself): their
# arguments (MLLM SHARED_DIR BUILD_DIR) into cli, shared and model
# (stories260K, or SKIPPED 77 when absent), a temporary folder tmp,
# fail=0, help_names (every command's --help must hold each pattern
# given, or fail=1) and gen (stories260K's greedy text, stderr in tmp/err).
set -euo pipefail
cli=$1 shared=$2
model=$shared/anchor-data/models/stories260K.gguf
[[ -f $model ]] || { echo "SKIPPED: $model is absent"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
help_names() {
    local cmd p
    for cmd in run chat bench perplexity serve; do
        "$cli" $cmd --help > "$tmp/help" 2>&1 || true
        grep -q "unknown command" "$tmp/help" && continue # serve in a build without the server
        for p in "$@"; do
            grep -q -- "$p" "$tmp/help" || { echo "FAIL: mllm $cmd --help does not hold '$p'"; fail=1; }
        done
    done
}
gen() { "$cli" run -m "$model" -p "Once upon a time" -n 32 --temp 0 --raw "$@" 2> "$tmp/err"; }
