#!/usr/bin/env bash
# Language detection of a multilingual Whisper (base, $MLLM_WHISPER_BASE_DIR):
# `mllm transcribe -o json` (no --language: auto) reports the language and
# probability that faster-whisper gives on the window its transcribe()
# decodes (the content frames' log-mel padded with 0.0, issue #40 item 1)
# (tests/data/whisper/lang_base.json, tools/reference/whisper_lang_reference.py),
# on jfk.wav and on French, German and Spanish clips spoken by espeak-ng and
# resampled to 16 kHz by sox (skipped when those are missing or make other
# bytes than the reference's); --language fixes it; --task translate gives
# English. Skipped (77) without the model.
set -euo pipefail
mllm=$1 shared=$2 build=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/checks.sh"
ref="$here/../data/whisper/lang_base.json"
dir=${MLLM_WHISPER_BASE_DIR:-}
wav="$shared/models/audio/jfk.wav"
if [ -z "$dir" ] || [ ! -f "$dir/model.bin" ] || [ ! -f "$wav" ]; then
    echo "SKIPPED: MLLM_WHISPER_BASE_DIR unset or jfk.wav absent (scripts/fetch-whisper.sh whisper-base)"
    exit 77
fi
tmp=$(mktemp -d "$build/e2e-lang.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
clips=(jfk)
cp "$wav" "$tmp/jfk.wav"
if command -v espeak-ng > /dev/null && command -v sox > /dev/null; then
    for c in fr de es; do
        read -r voice text < <(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["clips"][sys.argv[2]]; print(c["voice"], c["text"])' "$ref" "$c")
        espeak-ng -v "$voice" -w "$tmp/$c-22k.wav" "$text"
        sox -R -D "$tmp/$c-22k.wav" -r 16000 "$tmp/$c.wav" # no dither: repeatable bytes
        want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["clips"][sys.argv[2]]["wav_sha256"])' "$ref" "$c")
        if [ "$(sha256sum < "$tmp/$c.wav" | cut -d' ' -f1)" = "$want" ]; then clips+=("$c")
        else echo "SKIPPED ($c): this espeak-ng/sox makes other bytes than the reference's"; fi
    done
else
    echo "SKIPPED (fr, de, es): espeak-ng or sox missing (scripts/deps.sh)"
fi
for c in "${clips[@]}"; do
    "$mllm" transcribe -q -m "$dir" "$tmp/$c.wav" -t 2 -o json > "$tmp/$c.json"
    python3 - "$tmp/$c.json" "$ref" "$c" <<'PY' && ok "$c: detected as CTranslate2 does" || bad "$c: detection"
import json, sys
got = json.load(open(sys.argv[1]))
ref = json.load(open(sys.argv[2]))["clips"][sys.argv[3]]
print("  mllm: %s p %.4f; faster-whisper on the window transcribe decodes: %s p %.4f (its detect_language: %s p %.4f;"
      " CTranslate2 on transformers' front end: %s p %.4f)" % (
    got["language"], got["language_probability"], ref["content_frames_language"], ref["content_frames_probability"],
    ref["language"], ref["probability"], ref["hf_features_language"], ref["hf_features_probability"]))
print("  mllm: %s\n  faster-whisper: %s" % (got["text"], ref["greedy_transcript"]))
assert got["language"] == ref["hf_features_language"] == ref["language"]
assert got["language"] == ref["content_frames_language"]
assert abs(got["language_probability"] - ref["content_frames_probability"]) < 0.005
PY
done
got=$("$mllm" transcribe -q -m "$dir" "$tmp/jfk.wav" -t 2 --language en -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["language"], d["language_probability"])')
expect "--language en: given, probability 1" "$got" "en 1.0"
if [[ " ${clips[*]} " == *" de "* ]]; then
    got=$("$mllm" transcribe -q -m "$dir" "$tmp/de.wav" -t 2 --task translate)
    echo "  de --task translate: $got"
    python3 -c 'import sys; t=sys.argv[1].lower(); assert "good morning" in t and "weather" in t' "$got" \
        && ok "--task translate: English" || bad "--task translate: $got"
fi
rc=0; "$mllm" transcribe -m "$dir" "$tmp/jfk.wav" --language xx > /dev/null 2> "$tmp/err" || rc=$?
expect "--language xx: exit 2" "$rc" 2
rc=0; "$mllm" transcribe -m "$dir" "$tmp/jfk.wav" --task summarize > /dev/null 2> "$tmp/err" || rc=$?
expect "--task summarize: exit 2" "$rc" 2
finish transcribe_language
