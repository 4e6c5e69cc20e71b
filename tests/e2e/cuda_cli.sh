#!/usr/bin/env bash
# mllm --backend cuda (docs/cuda.md, docs/backends.md): the help of run,
# chat, bench, perplexity and serve names it. Where the build has no CUDA,
# or the machine no driver or GPU, the load must stop with exit 1 and a
# message that names the reason ("CUDA support not built", "no CUDA
# device: ..." with CUDA's own error, or a GPU the build has no code for),
# and the check passes on that. On a GPU, stories260K's greedy text with
# -ngl 99, -ngl 2 and MLLM_BACKENDS=cuda must equal --backend cpu's.
# Usage: cuda_cli.sh MLLM SHARED_DIR BUILD_DIR (lib/device_cli.sh).
source "$(dirname "$0")/lib/device_cli.sh"
help_names "or cuda (device 0" "with --backend opencl or cuda"
gen --backend cpu > "$tmp/cpu"
rc=0
gen --backend cuda -ngl 99 > "$tmp/cuda" || rc=$?
if [[ $rc != 0 ]]; then
    if [[ $rc == 1 ]] && grep -qE "backend 'cuda' is not in this build \(CUDA support not built|cuda: no CUDA device: cudaGetDeviceCount|cannot run this build's kernels" "$tmp/err"; then
        [[ $fail == 0 ]] && echo "ok: --backend cuda without a usable GPU stops with: $(tail -1 "$tmp/err")"
        exit $fail
    fi
    echo "FAIL: --backend cuda: exit $rc without a clear reason"; cat "$tmp/err"; exit 1
fi
grep -q "cuda device: " "$tmp/err" || { echo "FAIL: the device is not named on stderr"; cat "$tmp/err"; fail=1; }
cmp -s "$tmp/cpu" "$tmp/cuda" || { echo "FAIL: -ngl 99 text differs:"; cat "$tmp/cpu" "$tmp/cuda"; fail=1; }
gen --backend cuda -ngl 2 > "$tmp/cuda2" || { echo "FAIL: -ngl 2"; cat "$tmp/err"; fail=1; }
cmp -s "$tmp/cpu" "$tmp/cuda2" || { echo "FAIL: -ngl 2 text differs"; fail=1; }
MLLM_BACKENDS=cuda gen > "$tmp/env" || { echo "FAIL: MLLM_BACKENDS=cuda"; cat "$tmp/err"; fail=1; }
cmp -s "$tmp/cpu" "$tmp/env" || { echo "FAIL: MLLM_BACKENDS=cuda text differs"; fail=1; }
[[ $fail == 0 ]] && echo "ok: --backend cuda (-ngl 99, -ngl 2, MLLM_BACKENDS) gives the CPU's greedy text"
exit $fail
