#!/usr/bin/env bash
# arm_insn_vs_llamacpp.sh LLAMA_COMPLETION MODEL [MLLM_PATHS]
#
# Arm64 instructions per generated token and per prompt token, mllm against
# llama.cpp on the same GGUF, both under qemu-aarch64 -cpu max with the
# instruction-count plugin (tools/qemu-insn), one thread, greedy. Wall time
# under qemu means nothing; the count is what is comparable (issue #12).
#   LLAMA_COMPLETION: llama.cpp's llama-completion cross-built for aarch64,
#     outside this repository (bench/RESULTS.md, "Arm64 instructions", has
#     the build commands).
#   MLLM_PATHS: mllm's kernel paths to count (default: neon-dotprod
#     neon-i8mm; see scripts/arm-insn-count.sh).
# Method, the same for both engines: per generated token =
# (insns(n = 1 + G) - insns(n = 1)) / G; per prompt token =
# (insns(long prompt, n = 1) - insns(short prompt, n = 1)) / extra tokens,
# the token counts from mllm's tokenizer (the same vocabulary). G is
# MLLM_INSN_GEN (default 8). mllm repacks its weights at load with one
# thread (MLLM_PACK_THREADS=1): the plugin's counter is exact for one thread
# only, and the load cancels out of both differences.
set -euo pipefail
cd "$(dirname "$0")/.."
llama=${1:?usage: arm_insn_vs_llamacpp.sh LLAMA_COMPLETION MODEL [PATHS]}
model=${2:?usage: arm_insn_vs_llamacpp.sh LLAMA_COMPLETION MODEL [PATHS]}
paths=${3:-neon-dotprod neon-i8mm}
mllm=build/aarch64/mllm
[ -x "$mllm" ] || { echo "arm_insn_vs_llamacpp: build the aarch64 preset first" >&2; exit 1; }
[ -x "$llama" ] || { echo "arm_insn_vs_llamacpp: $llama is not an executable" >&2; exit 1; }
plugin=build/aarch64/insn_count.so
cc -O2 -shared -fPIC -o "$plugin" tools/qemu-insn/insn_count.c
G=${MLLM_INSN_GEN:-8}
short="Once upon a time"
long="Once upon a time there was a little girl who lived in a village near the forest with her mother and"
insns() { # command... -> instructions it executed under qemu -cpu max
    local out
    out=$(mktemp)
    QEMU_CPU=max qemu-aarch64 -plugin "$plugin" -d plugin -D "$out" "$@" >/dev/null 2>&1 || {
        echo "arm_insn_vs_llamacpp: failed: $*" >&2
        rm -f "$out"
        exit 1
    }
    awk '/^insns/ {print $2}' "$out"
    rm -f "$out"
}
ntok() { qemu-aarch64 "$mllm" tokenize -m "$model" -p "$1" 2>/dev/null | wc -w; }
n_short=$(ntok "$short") n_long=$(ntok "$long")
run_llama() { # prompt n
    insns "$llama" -m "$model" -p "$1" -n "$2" -no-cnv -t 1 --temp 0 --no-warmup --ignore-eos -c 512 --simple-io
}
run_mllm() { # path prompt n
    MLLM_CPU=$1 MLLM_PACK_THREADS=1 insns "$mllm" run -m "$model" --raw -p "$2" -n "$3" --temp 0 -t 1 --no-speculative --ignore-eos
}
echo "model $model: prompt tokens $n_short / $n_long, $G generated, qemu -cpu max, one thread"
printf '%-22s %22s %22s\n' engine "insns/generated token" "insns/prompt token"
a=$(run_llama "$short" 1) b=$(run_llama "$short" $((1 + G))) c=$(run_llama "$long" 1)
printf '%-22s %22d %22d\n' "llama.cpp" $(((b - a) / G)) $(((c - a) / (n_long - n_short)))
for path in $paths; do
    a=$(run_mllm "$path" "$short" 1) b=$(run_mllm "$path" "$short" $((1 + G))) c=$(run_mllm "$path" "$long" 1)
    printf '%-22s %22d %22d\n' "mllm $path" $(((b - a) / G)) $(((c - a) / (n_long - n_short)))
done
