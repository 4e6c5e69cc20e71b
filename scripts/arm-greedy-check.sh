#!/usr/bin/env bash
# arm-greedy-check.sh [-n N] MODEL...
#
# Greedy text of each model on x86 (build/release) and on arm64 under
# qemu-aarch64 (build/aarch64), with QEMU_CPU=max (the neon-i8mm path) and
# QEMU_CPU=cortex-a57 (plain NEON): prints each and fails unless all three
# are identical. --raw prompt, --temp 0, -t 1, no speculation.
# MLLM_GREEDY_X86_ENV: VAR=VALUE words for the x86 run only, e.g.
# MLLM_CPU=generic: the arm64 kernels are bit-equal to the generic ones,
# while AVX2's k-quant packed tiles follow the generic float order only up
# to reordering (docs/EXACTNESS.md), so on a q5_K file x86's AVX2 text can
# part from arm64's (docs/arm64.md, "Greedy text").
set -euo pipefail
cd "$(dirname "$0")/.."
n=24
if [ "${1:-}" = -n ]; then n=$2; shift 2; fi
prompt=${MLLM_GREEDY_PROMPT:-"The capital of France is"}
status=0
for model in "$@"; do
    args=(run -m "$model" --raw -p "$prompt" -n "$n" --temp 0 -t 1 --no-speculative)
    # shellcheck disable=SC2086 # word-split on purpose: VAR=VALUE words
    x86=$(env ${MLLM_GREEDY_X86_ENV:-} build/release/mllm "${args[@]}" 2>/dev/null)
    for cpu in max cortex-a57; do
        arm=$(QEMU_CPU=$cpu qemu-aarch64 build/aarch64/mllm "${args[@]}" 2>/dev/null)
        if [ "$arm" = "$x86" ]; then
            echo "same   $(basename "$model") x86 = arm64 ($cpu): $(printf %q "$x86" | cut -c1-160)"
        else
            echo "DIFFER $(basename "$model") ($cpu):"; echo "  x86:   $x86"; echo "  arm64: $arm"; status=1
        fi
    done
done
exit $status
