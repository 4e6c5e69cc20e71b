#!/usr/bin/env bash
# `mllm convert` of Whisper tiny.en ($MLLM_WHISPER_TINY_DIR) to .mllm, f16,
# q8_0 and q4_0: each file transcribes ../shared's jfk.wav exactly as the
# folder does with the same --weights (the same JSON, segments, log-probs
# and all: the file stores the bytes the folder's load computes), is listed
# and verified by `mllm info`, is caught when a tensor byte flips, and the
# options that do not apply to Whisper are clear errors. Under the
# sanitizers (MLLM_TEST_SANITIZED) f16 and q8_0 only, greedy. Skipped (77)
# without the model.
set -euo pipefail
mllm=$(realpath "$1") shared=$2 build=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/checks.sh"
need_whisper_tiny
tmp=$(realpath "$(mktemp -d "$build/e2e-convert-whisper.XXXXXX")")
trap 'rm -rf "$tmp"' EXIT
kinds="f16 q8_0 q4_0"
[ -n "${MLLM_TEST_SANITIZED:-}" ] && kinds="f16 q8_0"
for q in $kinds; do
    f="$tmp/tiny-$q.mllm"
    "$mllm" convert --in "$dir" --out "$f" --quant $q 2> "$tmp/conv-$q.err" && ok "convert --quant $q" ||
        { bad "convert --quant $q: $(tail -3 "$tmp/conv-$q.err")"; continue; }
    grep -q "^whisper: 1[0-9][0-9] weights, matrices $q" "$tmp/conv-$q.err" && ok "$q: summary line" ||
        bad "$q: summary: $(tail -1 "$tmp/conv-$q.err")"
    args=(-t 2 -o json -q)
    [ $q = q8_0 ] && [ -z "${MLLM_TEST_SANITIZED:-}" ] && args+=(--beam 5 --timestamps)
    "$mllm" transcribe -m "$dir" --weights $q "$wav" "${args[@]}" > "$tmp/folder-$q.json"
    "$mllm" transcribe -m "$f" "$wav" "${args[@]}" > "$tmp/file-$q.json"
    cmp -s "$tmp/folder-$q.json" "$tmp/file-$q.json" && ok "$q: the file transcribes as the folder (${args[*]})" ||
        bad "$q: file $(head -c 300 "$tmp/file-$q.json") vs folder $(head -c 300 "$tmp/folder-$q.json")"
    # the words; q4_0 moves commas ("ask, not, what" since the log-mel is padded as faster-whisper pads it)
    grep -Eq '"text": " And so,? my fellow Americans ask,? not,? what your country' "$tmp/file-$q.json" && ok "$q: jfk's words" ||
        bad "$q: text $(head -c 300 "$tmp/file-$q.json")"
    "$mllm" info "$f" > "$tmp/info-$q" 2>&1
    grep -q '"whisper_weights":"'$q'"' "$tmp/info-$q" && grep -q "^  decoder/layer_3/ffn/linear_1/weight " "$tmp/info-$q" &&
        grep -q "^note: a Whisper model" "$tmp/info-$q" && ok "$q: mllm info lists it" || bad "$q: info $(head -5 "$tmp/info-$q")"
    "$mllm" info --verify --no-tensors "$f" > "$tmp/verify-$q" 2>&1 && ok "$q: info --verify" ||
        bad "$q: verify $(cat "$tmp/verify-$q")"
done
sz() { stat -c %s "$1"; }
[ "$(sz "$tmp/tiny-q8_0.mllm")" -lt "$(( $(sz "$tmp/tiny-f16.mllm") * 6 / 10 ))" ] && ok "size q8_0 < 0.6 f16" ||
    bad "sizes $(sz "$tmp/tiny-f16.mllm") $(sz "$tmp/tiny-q8_0.mllm")"
if [ -f "$tmp/tiny-q4_0.mllm" ]; then
    [ "$(sz "$tmp/tiny-q4_0.mllm")" -lt "$(sz "$tmp/tiny-q8_0.mllm")" ] && ok "size q4_0 < q8_0" || bad "q4_0 size"
fi
grep -q "q8_0x8" "$tmp/info-q8_0" && grep -q "encoder/conv1/weight  *f16" "$tmp/info-q8_0" &&
    ok "q8_0: x8 kernel layouts, conv1 f16" || bad "q8_0 layouts"
# the file's config and tokenizer are all it needs: the folder can go
cp "$tmp/tiny-q8_0.mllm" "$tmp/alone.mllm"
(cd "$tmp" && "$mllm" transcribe -m alone.mllm "$wav" -t 2 -q > "$tmp/alone.txt")
grep -q "ask not what your country" "$tmp/alone.txt" && ok "a file alone transcribes" || bad "alone: $(cat "$tmp/alone.txt")"
# a flipped byte in a tensor: --verify names it
python3 - "$tmp/alone.mllm" <<'PY'
import os, sys
p = sys.argv[1]
with open(p, "r+b") as f:
    f.seek(os.path.getsize(p) - 5000)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0x40]))
PY
rc=0; "$mllm" info --verify --no-tensors "$tmp/alone.mllm" > "$tmp/flip" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -qi "checksum" "$tmp/flip" && ok "a flipped byte: --verify fails ($(grep -i checksum "$tmp/flip" | head -1))" ||
    bad "flipped byte: rc $rc $(cat "$tmp/flip")"
# what does not apply to Whisper
fails_with() { # label, message regex, command...
    local label=$1 re=$2; shift 2
    rc=0; "$@" > /dev/null 2> "$tmp/err" || rc=$?
    [ $rc -ne 0 ] && grep -Eq "$re" "$tmp/err" && ok "$label" || bad "$label: rc $rc $(cat "$tmp/err")"
}
fails_with "--to gguf: refused" "converts to .mllm only" "$mllm" convert --in "$dir" --out "$tmp/x.gguf" --to gguf
fails_with "--pack none: refused" "always stored in the x8" "$mllm" convert --in "$dir" --out "$tmp/x.mllm" --pack none
fails_with "--quant q4_1: refused" "f16, f32, q8_0 or q4_0" "$mllm" convert --in "$dir" --out "$tmp/x.mllm" --quant q4_1
fails_with "a converted file again: refused" "already a converted Whisper" "$mllm" convert --in "$tmp/tiny-f16.mllm" --out "$tmp/x.mllm"
fails_with "transcribe --weights other than the file's: refused" "stores q8_0 weights" "$mllm" transcribe -m "$tmp/tiny-q8_0.mllm" --weights f16 "$wav"
fails_with "mllm run on it: a speech model" "speech-to-text model" "$mllm" run -m "$tmp/tiny-q8_0.mllm" -p hi -n 1
[ ! -e "$tmp/x.mllm" ] && [ ! -e "$tmp/x.gguf" ] && ok "refused conversions wrote nothing" || bad "a refused conversion left a file"
finish convert_whisper
