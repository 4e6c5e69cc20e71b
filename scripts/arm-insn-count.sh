#!/usr/bin/env bash
# arm-insn-count.sh MODEL [PROMPT_TOKENS_TEXT]
#
# Counts the arm64 instructions mllm executes per generated token and per
# prompt token, under qemu-aarch64 with the instruction-count plugin
# (tools/qemu-insn/insn_count.c, built here for the host: Debian 12's
# qemu-user has plugin support but ships no plugins). qemu's wall time means
# nothing; the instruction count is what can be compared. For each kernel
# path (MLLM_CPU=generic, neon, neon-dotprod, neon-i8mm; QEMU_CPU=max):
#   per generated token = (insns(n = 1 + G) - insns(n = 1)) / G
#   per prompt token    = (insns(long prompt) - insns(short prompt)) / extra tokens
# with -t 1 (the counter is exact for one thread), greedy, no speculation.
# MLLM_INSN_GEN: G (default 8); MLLM_INSN_PATHS: the paths (default all four);
# MLLM_INSN_BIN: the arm64 mllm to count (default build/aarch64/mllm; e.g. a
# copy kept from an earlier commit, for before / after).
# Needs the aarch64 build (cmake --preset aarch64 && cmake --build --preset aarch64).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: arm-insn-count.sh MODEL [EXTRA_ARGS...]}
shift
extra=("$@")
mllm=${MLLM_INSN_BIN:-build/aarch64/mllm}
[ -x "$mllm" ] || { echo "arm-insn-count: build the aarch64 preset first" >&2; exit 1; }
plugin=build/aarch64/insn_count.so
cc -O2 -shared -fPIC -o "$plugin" tools/qemu-insn/insn_count.c
G=${MLLM_INSN_GEN:-8}
short="Once upon a time"
long="Once upon a time there was a little girl who lived in a village near the forest with her mother and"
count() { # prompt n -> instructions
    local out
    out=$(mktemp)
    QEMU_CPU=max MLLM_CPU=$path MLLM_PACK_THREADS=1 qemu-aarch64 -plugin "$plugin" -d plugin -D "$out" "$mllm" run -m "$model" \
        "${extra[@]}" --raw -p "$1" -n "$2" --temp 0 -t 1 --no-speculative --ignore-eos >/dev/null 2>&1
    awk '/^insns/ {print $2}' "$out"
    rm -f "$out"
}
ntok() { # prompt -> its token count, from the CLI's own tokenizer (mllm tokenize)
    qemu-aarch64 "$mllm" tokenize -m "$model" "${extra[@]}" -p "$1" 2>/dev/null | wc -w
}
n_short=$(ntok "$short") n_long=$(ntok "$long")
echo "model $model: prompt tokens $n_short / $n_long, $G generated"
printf '%-14s %22s %22s\n' path "insns/generated token" "insns/prompt token"
for path in ${MLLM_INSN_PATHS:-generic neon neon-dotprod neon-i8mm}; do
    a=$(count "$short" 1) b=$(count "$short" $((1 + G))) c=$(count "$long" 1)
    printf '%-14s %22d %22d\n' "$path" $(((b - a) / G)) $(((c - a) / (n_long - n_short)))
done
