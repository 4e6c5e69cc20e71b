#!/usr/bin/env bash
# mllm run's --presence-penalty, --frequency-penalty and --logit-bias on a
# synthesized tiny model, greedy: +100 forces a token at every step, -100
# bans the greedy one, a positive penalty makes the text repeat less, 0 is
# the same as not giving it, and a token outside the vocabulary fails.
set -euo pipefail
mllm=$1 build=$3
tmp=$(mktemp -d "$build/e2e-runsampling.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib/checks.sh"
"$mllm" synth --arch qwen3 --preset tiny --format gguf -o "$tmp/tiny.gguf" >/dev/null 2>&1
# Generated ids (after the prompt's) for the given options.
gen() {
    "$mllm" run --raw -m "$tmp/tiny.gguf" -p "Once upon a time" -n 24 --temp 0 --ignore-eos \
        --ids-out "$tmp/ids" "$@" >/dev/null 2>&1
    n_prompt=$("$mllm" run --raw -m "$tmp/tiny.gguf" -p "Once upon a time" -n 0 --ids-out "$tmp/p" >/dev/null 2>&1; wc -l <"$tmp/p")
    tail -n +"$((n_prompt + 1))" "$tmp/ids" | tr '\n' ' '
}
distinct() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -u | wc -l; }
base=$(gen)
first=${base%% *}
forced=$(gen --logit-bias 100=100)
expect "--logit-bias 100=100 forces token 100" "$forced" "$(printf '100 %.0s' $(seq 24))"
banned=$(gen --logit-bias "$first=-100")
case " $banned" in *" $first "*) bad "--logit-bias $first=-100: still generated ($banned)" ;; *) ok "--logit-bias $first=-100 bans the greedy token" ;; esac
expect "--presence-penalty 0 --frequency-penalty 0 change nothing" "$(gen --presence-penalty 0 --frequency-penalty 0)" "$base"
for opt in --presence-penalty --frequency-penalty; do
    up=$(gen "$opt" 2)
    if [ "$(distinct "$up")" -gt "$(distinct "$base")" ]; then ok "$opt 2: $(distinct "$up") distinct tokens > $(distinct "$base")"
    else bad "$opt 2: $(distinct "$up") distinct tokens, $(distinct "$base") without"; fi
done
if "$mllm" run --raw -m "$tmp/tiny.gguf" -p x -n 2 --logit-bias 99999999=1 >/dev/null 2>"$tmp/err"; then
    bad "--logit-bias outside the vocabulary accepted"
elif grep -q "vocabulary" "$tmp/err"; then ok "--logit-bias outside the vocabulary fails, naming it"
else bad "--logit-bias error: $(cat "$tmp/err")"; fi
if "$mllm" run -m "$tmp/tiny.gguf" -p x --logit-bias 5 >/dev/null 2>&1; then bad "--logit-bias without =BIAS accepted"
else ok "--logit-bias without =BIAS is a usage error"; fi
# not `mllm run --help | grep -q`: grep stops at the match, and under pipefail the
# writer's SIGPIPE fails the check once the help outgrows the pipe buffer
grep -q -- "--logit-bias ID=BIAS" <<< "$("$mllm" run --help)" && ok "--help names --logit-bias" || bad "--help lacks --logit-bias"
finish run_sampling_cli
