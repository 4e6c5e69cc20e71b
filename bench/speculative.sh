#!/usr/bin/env bash
# Speculative decoding, side by side with llama.cpp (bench/RESULTS.md):
#   bench/speculative.sh LLAMA_BIN_DIR TARGET.gguf DRAFT.gguf [ROUNDS] [N] [PROMPTS...]
# For each prompt of bench/spec_prompts (code*.txt: a draft model; edit*.txt:
# prompt lookup; PROMPTS: those files only) it runs every configuration once
# per round (llama.cpp's LLAMA_ROUNDS, default ROUNDS, of them), alternating,
# greedy, 2 threads, N tokens (default 128), and prints each one's median
# decode speed and the md5 of mllm's output (identical to plain decoding).
# mllm-draft drafts with D as mllm loads it by default (requantized to q4_0,
# --draft-quant q4_0), mllm-draftkeep with D's own types (--draft-quant keep).
# DRAFT2=FILE adds mllm-draft2, the same run with FILE as the draft (another
# quantization of D, say: mllm convert --in D --out FILE --quant q4_0);
# LLAMA_ROUNDS=0 leaves llama.cpp out.
set -euo pipefail
cd "$(dirname "$0")/.."
L=$1 T=$2 D=$3 ROUNDS=${4:-3} N=${5:-128}
shift 5 2>/dev/null || shift $#
PROMPTS=("$@")
[ ${#PROMPTS[@]} -gt 0 ] || PROMPTS=(bench/spec_prompts/*.txt)
LLAMA_ROUNDS=${LLAMA_ROUNDS:-$ROUNDS}
M=build/release/mllm
out=$(mktemp -d)
gen_tps() { sed -n 's/.*generation: [0-9]* tokens, [0-9.]* ms, \([0-9.]*\) tokens\/s.*/\1/p' "$1"; }
llama_tps() { sed -n 's/.*decoded *[0-9]* tokens in *[0-9.]* seconds, speed: *\([0-9.]*\) t\/s.*/\1/p' "$1" | tail -1; }
run_cfg() { # name prompt-file round
    local name=$1 p=$2 r=$3 log=$out/$1.$(basename "$2").$3
    case $name in
    mllm-plain)  $M run -m "$T" -f "$p" -n "$N" --temp 0 -t 2 --no-speculative >"$log.txt" 2>"$log.err" ;;
    mllm-draft)  $M run -m "$T" -f "$p" -n "$N" --temp 0 -t 2 --draft "$D" >"$log.txt" 2>"$log.err" ;;
    mllm-draftkeep) $M run -m "$T" -f "$p" -n "$N" --temp 0 -t 2 --draft "$D" --draft-quant keep >"$log.txt" 2>"$log.err" ;;
    mllm-draft2) $M run -m "$T" -f "$p" -n "$N" --temp 0 -t 2 --draft "$DRAFT2" >"$log.txt" 2>"$log.err" ;;
    mllm-lookup) $M run -m "$T" -f "$p" -n "$N" --temp 0 -t 2 >"$log.txt" 2>"$log.err" ;;
    llama-spec)  "$L/llama-speculative" -m "$T" -md "$D" -f "$p" -n "$N" --temp 0 -t 2 -td 2 -c 4096 \
                     --spec-draft-n-max 8 --spec-draft-p-min 0.5 >"$log.txt" 2>"$log.err" ;;
    llama-lookup) "$L/llama-lookup" -m "$T" -f "$p" -n "$N" --temp 0 -t 2 -c 4096 >"$log.txt" 2>"$log.err" ;;
    esac
    case $name in
    mllm-*) gen_tps "$log.err" ;;
    *) llama_tps "$log.err" ;;
    esac >"$log.tps"
}
median() { sort -n | awk '{a[NR]=$1} END {print NR ? (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2) : "-"}'; }
for p in "${PROMPTS[@]}"; do
    case $(basename "$p") in
    code*) cfgs="mllm-plain mllm-draft mllm-draftkeep llama-spec" ;;
    edit*) cfgs="mllm-plain mllm-lookup mllm-draft llama-lookup llama-spec" ;;
    esac
    [ -z "${DRAFT2:-}" ] || cfgs="${cfgs/mllm-draft/mllm-draft mllm-draft2}"
    for r in $(seq 1 "$ROUNDS"); do
        for c in $cfgs; do
            case $c in llama-*) [ "$r" -le "$LLAMA_ROUNDS" ] || continue ;; esac
            run_cfg "$c" "$p" "$r"
        done
    done
    for c in $cfgs; do
        case $c in llama-*) [ "$LLAMA_ROUNDS" -gt 0 ] || continue ;; esac # not run: nothing to print
        tps=$(cat "$out/$c.$(basename "$p")".*.tps | median)
        all=$(cat "$out/$c.$(basename "$p")".*.tps | tr '\n' ' ')
        sum=$(md5sum "$out/$c.$(basename "$p").1.txt" | cut -c1-8)
        stats=$(grep -o '| \(lookup\|draft\): [^|]*' "$out/$c.$(basename "$p").1.err" | tr '\n' ' ' || true)
        printf '%-10s %-15s median %7s t/s  (%s) out %s %s\n' "$(basename "$p" .txt)" "$c" "$tps" "$all" "$sum" "$stats"
    done
done
echo "logs: $out" >&2
