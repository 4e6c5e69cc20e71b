#!/usr/bin/env bash
# `mllm info` on a CTranslate2 model: a folder with a small model.bin written
# here (and Whisper tiny.en's when $MLLM_WHISPER_TINY_DIR is set) lists the
# spec and the variables and names the command that runs it; a damaged
# model.bin is a clean error naming the file.
set -euo pipefail
mllm=$1 shared=$2 build=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/checks.sh"
tmp=$(mktemp -d "$build/e2e-infoct2.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/m"
python3 - "$tmp/m/model.bin" <<'PY'
import struct, sys
def s(x):
    b = x.encode() + b"\0"
    return struct.pack("<H", len(b)) + b
out = struct.pack("<I", 6) + s("WhisperSpec") + struct.pack("<I", 3) + struct.pack("<I", 2)
out += s("encoder/conv1/weight") + struct.pack("<B3IBI", 3, 4, 2, 3, 4, 48) + bytes(48)  # float16
out += s("decoder/num_heads") + struct.pack("<BBI", 0, 2, 2) + struct.pack("<h", 6)    # int16 scalar
out += struct.pack("<I", 1) + s("encoder/conv0/weight") + s("encoder/conv1/weight")
open(sys.argv[1], "wb").write(out)
PY
out=$("$mllm" info "$tmp/m")
echo "$out"
grep -q '^spec: WhisperSpec, revision 3$' <<<"$out" && ok "spec line" || bad "spec line"
grep -q '^  encoder/conv1/weight  *float16  *\[4, 2, 3\] 48 bytes$' <<<"$out" && ok "variable line" || bad "variable line"
grep -q '^  encoder/conv0/weight -> encoder/conv1/weight$' <<<"$out" && ok "alias line" || bad "alias line"
grep -q 'run it with mllm transcribe' <<<"$out" && ok "names the command" || bad "names the command"
expect "model.bin itself" "$("$mllm" info "$tmp/m/model.bin" | sed -n 2p)" "spec: WhisperSpec, revision 3"
head -c 60 "$tmp/m/model.bin" > "$tmp/m/cut" && mv "$tmp/m/cut" "$tmp/m/model.bin"
rc=0
"$mllm" info "$tmp/m" > /dev/null 2> "$tmp/err" || rc=$?
expect "truncated: exit 1" "$rc" 1
grep -q "model.bin: truncated at byte" "$tmp/err" && ok "truncated: message" || bad "truncated: $(cat "$tmp/err")"
if [ -n "${MLLM_WHISPER_TINY_DIR:-}" ] && [ -f "$MLLM_WHISPER_TINY_DIR/model.bin" ]; then
    out=$("$mllm" info "$MLLM_WHISPER_TINY_DIR")
    grep -q '^variables: 148$' <<<"$out" && ok "tiny.en: 148 variables" || bad "tiny.en variables"
    grep -q '^  decoder/embeddings/weight  *float16  *\[51864, 384\]' <<<"$out" && ok "tiny.en embeddings" || bad "tiny.en embeddings"
else
    echo "SKIPPED: tiny.en part (MLLM_WHISPER_TINY_DIR unset; scripts/fetch-model.sh whisper-tiny.en)"
fi
finish info_ctranslate2
