#!/usr/bin/env bash
# mllm --backend opencl / -ngl (docs/opencl.md): the help of run, chat,
# bench, perplexity and serve names both options; an unknown backend stops
# the load with exit 1 and the names there are; on an OpenCL device (PoCL
# in CI) stories260K's greedy text with -ngl 99, -ngl 2, MLLM_BACKENDS=
# opencl and attention cut in one-token chunks equals the CPU's, so does
# qwen3-tiny's with -ngl 99 and -ngl 1, and bench's backend column says
# opencl. Without OpenCL the error must say why, then SKIPPED.
# Usage: opencl_cli.sh MLLM SHARED_DIR BUILD_DIR (lib/device_cli.sh).
source "$(dirname "$0")/lib/device_cli.sh"
help_names "--backend NAME" "-ngl, --n-gpu-layers N"
rc=0
"$cli" run -m "$model" -p hi -n 2 --backend nope > "$tmp/out" 2> "$tmp/err" || rc=$?
if [[ $rc != 1 ]] || ! grep -q "unknown backend 'nope' (this build has: cpu" "$tmp/err"; then
    echo "FAIL: --backend nope: exit $rc"; cat "$tmp/err"; fail=1
fi
gen --backend cpu > "$tmp/cpu"
rc=0
gen --backend opencl -ngl 99 > "$tmp/ocl" || rc=$?
if [[ $rc != 0 ]]; then
    if grep -qE "not in this build|no OpenCL (platform|device)" "$tmp/err"; then
        [[ $fail == 0 ]] && echo "SKIPPED: $(tail -1 "$tmp/err")" && exit 77
    fi
    echo "FAIL: --backend opencl: exit $rc"; cat "$tmp/err"; exit 1
fi
cmp -s "$tmp/cpu" "$tmp/ocl" || { echo "FAIL: -ngl 99 text differs:"; cat "$tmp/cpu" "$tmp/ocl"; fail=1; }
gen --backend opencl -ngl 2 > "$tmp/ocl2" || { echo "FAIL: -ngl 2"; cat "$tmp/err"; fail=1; }
cmp -s "$tmp/cpu" "$tmp/ocl2" || { echo "FAIL: -ngl 2 text differs"; fail=1; }
MLLM_BACKENDS=opencl gen > "$tmp/env" || { echo "FAIL: MLLM_BACKENDS=opencl"; cat "$tmp/err"; fail=1; }
cmp -s "$tmp/cpu" "$tmp/env" || { echo "FAIL: MLLM_BACKENDS=opencl text differs"; fail=1; }
# attention in chunks of one token (16 KiB of scores per launch), its views
# of the positions at offsets no sub-buffer can start at (copies instead)
MLLM_DEVICE_ATTN_SCRATCH_KIB=16 gen --backend opencl > "$tmp/chunk" || { echo "FAIL: chunked attention"; cat "$tmp/err"; fail=1; }
cmp -s "$tmp/cpu" "$tmp/chunk" || { echo "FAIL: chunked attention text differs"; fail=1; }
# qwen3-tiny (random weights, q8_0): against the CPU's exact mode, which is
# what the device computes (a random model's flat logits can flip under
# the default mode's 8-bit activations)
qwen=$shared/anchor-data/models/qwen3-tiny-random-Q8_0.gguf
if [[ -f $qwen ]]; then
    # Under the sanitizers these runs keep AddressSanitizer but skip
    # LeakSanitizer's exit scan: on a Zen 3 host it crashed in the dynamic
    # TLS of PoCL's dlopened kernel modules ("Tracer caught signal 11", a
    # DTLS range of garbage) after a correct run; the stories260K runs
    # above keep the leak check.
    lsan_off=()
    [[ ${MLLM_TEST_SANITIZED:-} == 1 ]] && lsan_off=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
    qgen() { "${lsan_off[@]}" "$cli" run -m "$qwen" -p "Once upon a time" -n 8 --temp 0 --raw --exact "$@" 2> "$tmp/err"; }
    qgen --backend cpu > "$tmp/qcpu"
    for ngl in 99 1; do
        qgen --backend opencl -ngl $ngl > "$tmp/qocl" || { echo "FAIL: qwen3-tiny -ngl $ngl"; cat "$tmp/err"; fail=1; }
        cmp -s "$tmp/qcpu" "$tmp/qocl" || { echo "FAIL: qwen3-tiny -ngl $ngl text differs"; fail=1; }
    done
fi
"$cli" bench -m "$model" -p 8 -n 4 -r 1 -t 1 --backend opencl > "$tmp/bench" 2>&1 ||
    { echo "FAIL: bench --backend opencl"; cat "$tmp/bench"; fail=1; }
grep -q "| opencl " "$tmp/bench" || { echo "FAIL: bench's backend column:"; cat "$tmp/bench"; fail=1; }
[[ $fail == 0 ]] && echo "ok: --backend opencl (-ngl 99, -ngl 2, MLLM_BACKENDS, chunked attention; qwen3-tiny -ngl 99 and 1) gives the CPU's greedy text; help and errors"
exit $fail
