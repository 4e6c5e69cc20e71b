#!/usr/bin/env bash
# compare_llamacpp.sh LLAMA_BENCH MODEL... : mllm bench and llama-bench on the
# same files, alternating (llama.cpp, mllm, llama.cpp, mllm, ... ROUNDS times)
# so both see the same machine; prints one markdown row per model with the
# median of each engine's rounds. llama.cpp is built outside this repository
# (bench/RESULTS.md says how).
#   ROUNDS (default 3), PP (512), TG (64), THREADS (2), MLLM (build/release/mllm)
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,9p' "$0" >&2; exit 2; }
lb=$1; shift
mllm=${MLLM:-build/release/mllm}
rounds=${ROUNDS:-3}; pp=${PP:-512}; tg=${TG:-64}; th=${THREADS:-2}
for f in "$lb" "$mllm"; do [[ -x $f ]] || { echo "compare_llamacpp: $f is not an executable" >&2; exit 2; }; done
# The avg_ts of the pp and tg records of one engine's JSON.
pick() { python3 -c '
import json, sys
recs = json.load(sys.stdin)
pp = [r["avg_ts"] for r in recs if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0]
tg = [r["avg_ts"] for r in recs if r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0]
print(pp[0], tg[0])'; }
median() { python3 -c 'import statistics, sys; print("%.1f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
echo "| file | llama.cpp pp$pp | mllm pp$pp | ratio | llama.cpp tg$tg | mllm tg$tg | ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for m in "$@"; do
    lpp=(); ltg=(); mpp=(); mtg=()
    for ((r = 0; r < rounds; r++)); do
        read -r a b < <("$lb" -m "$m" -t "$th" -p "$pp" -n "$tg" -r 1 -o json 2>/dev/null | pick)
        lpp+=("$a"); ltg+=("$b")
        read -r a b < <("$mllm" bench -m "$m" -t "$th" -p "$pp" -n "$tg" -r 1 -o json 2>/dev/null | pick)
        mpp+=("$a"); mtg+=("$b")
    done
    Lp=$(median "${lpp[@]}"); Lt=$(median "${ltg[@]}"); Mp=$(median "${mpp[@]}"); Mt=$(median "${mtg[@]}")
    printf '| %s | %s | %s | %.2f | %s | %s | %.2f |\n' "$(basename "$m")" "$Lp" "$Mp" \
        "$(python3 -c "print($Mp / $Lp)")" "$Lt" "$Mt" "$(python3 -c "print($Mt / $Lt)")"
done
