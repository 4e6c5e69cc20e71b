#!/usr/bin/env bash
# `mllm transcribe --weights f32` (Whisper tiny.en, greedy) on espeak-ng
# clips made here gives faster-whisper float32's words
# (tests/data/whisper/espeak_words.json, made by
# tools/reference/whisper_espeak_reference.py, issue #40 item 1): the
# clips marked "ci" are regenerated with the recipe in the JSON. Before the
# window's log-mel was padded with 0.0 as faster-whisper and openai-whisper
# pad it, the first clip read "... over the old world and fans." Skipped
# (77) without the model, espeak-ng or sox, or with an espeak-ng other than
# the one that made the data (its samples, hence the words, depend on it).
set -euo pipefail
mllm=$1 shared=$2 build=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/checks.sh"
data="$here/../data/whisper/espeak_words.json"
need_whisper_tiny
for t in espeak-ng sox; do
    command -v "$t" > /dev/null || { echo "SKIPPED: $t is not installed (scripts/deps.sh)"; exit 77; }
done
want_ver=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["espeak_ng"])' "$data")
have_ver=$(espeak-ng --version | head -1 | sed 's/ *Data at.*//')
if [ "$have_ver" != "$want_ver" ]; then
    echo "SKIPPED: espeak-ng is '$have_ver', the data was made with '$want_ver'"
    exit 77
fi
tmp=$(mktemp -d "$build/e2e-espeak.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# voice, words per minute, sentence and expected words, one clip a line
python3 - "$data" > "$tmp/clips" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1]))["clips"]:
    if c["ci"]:
        print("\t".join([c["voice"], str(c["wpm"]), c["text"], c["float32"]]))
PY
n=0
while IFS=$'\t' read -r voice wpm text want; do
    n=$((n + 1))
    espeak-ng -v "$voice" -s "$wpm" -w "$tmp/raw$n.wav" "$text"
    sox -D "$tmp/raw$n.wav" -r 16000 -c 1 -b 16 "$tmp/c$n.wav"
    got=$("$mllm" transcribe -q -m "$dir" --weights f32 -t 2 "$tmp/c$n.wav")
    expect "clip $n ($voice, $wpm wpm) = faster-whisper float32" "$got" "$want"
done < "$tmp/clips"
expect "clips checked" "$n" 3
finish transcribe_espeak
