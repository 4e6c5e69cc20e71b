#!/usr/bin/env bash
# make-anchor-models.sh [DEST_DIR]
#
# Rebuilds anchor-data's random tiny Qwen3 models, qwen3-tiny-random-F32.gguf
# and qwen3-tiny-random-F16.gguf, into DEST_DIR and prints DEST_DIR on stdout
# (progress goes to stderr). anchor-data keeps llama.cpp's logits for these two
# files but not the files; tools/reference/make_qwen3_tiny.py regenerates them
# from the documented recipe plus the metadata/tokenizer of the kept Q8_0 file,
# and the result is checked against the sha256 anchor-data records.
#
# No virtual environment: the pinned numpy and gguf go into a private
# `pip install --target` folder under DEST_DIR, put first on PYTHONPATH.
# Checked byte-identical with numpy 1.24.2 + gguf 0.19.0 (the recipe's numpy)
# and with numpy 2.4.6 + gguf 0.19.0; the second set is only tried when the
# first cannot be installed (numpy 1.24.2 has no wheels for Python >= 3.12).
#
# Offline-friendly: if DEST_DIR already holds both files with the right
# sha256, nothing is installed or run.
#
# Default DEST_DIR: ${MLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mllm}/anchor-models
# Anchor data: ${MLLM_ANCHOR_DIR:-<repo>/../shared/anchor-data}
# Exit status: 0 ok, 1 usage/filesystem error, 2 pip could not install numpy/gguf,
#   3 files written but their sha256 differs from anchor-data's,
#   4 the anchor Q8_0 model is absent, 5 regenerated values disagree with it.
set -euo pipefail

readonly GGUF_VERSION="0.19.0"
readonly NUMPY_VERSIONS=("1.24.2" "2.4.6")   # tried in this order
readonly F32_SHA256="35e99120a025c047ee92758489691ece1d370392b7d45f22e30bd9085e1c93d5"
readonly F16_SHA256="b21cdbda55e7d8eb76a40b85e33d68a7a8c16934f1843dc0faebad50a0a34b28"

FETCH_TAG=make-anchor-models
. "$(dirname "$0")/lib/fetch_common.sh"

both_present() {
    [[ -f "$1/qwen3-tiny-random-F32.gguf" && -f "$1/qwen3-tiny-random-F16.gguf" ]] &&
    [[ "$(sha256_of "$1/qwen3-tiny-random-F32.gguf")" == "$F32_SHA256" ]] &&
    [[ "$(sha256_of "$1/qwen3-tiny-random-F16.gguf")" == "$F16_SHA256" ]]
}

if [[ $# -gt 1 ]]; then
    die 1 "usage: $0 [DEST_DIR]"
fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-${MLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mllm}/anchor-models}"
anchor="${MLLM_ANCHOR_DIR:-$repo/../shared/anchor-data}"

# 1. Already there and intact: nothing to do.
if both_present "$dest"; then
    log "already present and verified"
    printf '%s\n' "$dest"
    exit 0
fi

[[ -f "$anchor/models/qwen3-tiny-random-Q8_0.gguf" ]] ||
    die 4 "$anchor/models/qwen3-tiny-random-Q8_0.gguf not found (set MLLM_ANCHOR_DIR); cannot rebuild"
command -v python3 >/dev/null 2>&1 || die 1 "python3 is required"
python3 -m pip --version >/dev/null 2>&1 || die 2 "pip is required (python3 -m pip)"
mkdir -p "$dest" || die 1 "cannot create $dest"

# 2. Pinned numpy + gguf in a private folder (reused on later runs).
pydeps=""
for np_ver in "${NUMPY_VERSIONS[@]}"; do
    dir="$dest/.pydeps-numpy$np_ver-gguf$GGUF_VERSION"
    if [[ -f "$dir/.complete" ]]; then
        pydeps="$dir"
        break
    fi
    log "installing numpy==$np_ver gguf==$GGUF_VERSION into $dir ..."
    rm -rf "$dir"
    if python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
            --only-binary=:all: --target "$dir" "numpy==$np_ver" "gguf==$GGUF_VERSION" \
            >"$dest/.pip.log" 2>&1; then
        touch "$dir/.complete"
        pydeps="$dir"
        break
    fi
    tail -n 5 "$dest/.pip.log" >&2 || true
    rm -rf "$dir"
    log "pip could not install numpy==$np_ver gguf==$GGUF_VERSION"
done
[[ -n "$pydeps" ]] ||
    die 2 "pip could not install numpy (${NUMPY_VERSIONS[*]}) with gguf==$GGUF_VERSION (is the package index reachable? check network/proxy/PIP_INDEX_URL); the F32/F16 qwen3-tiny models cannot be rebuilt"

# 3. Generate (the script writes each file via a .tmp + rename and checks it).
set +e
PYTHONPATH="$pydeps" PYTHONNOUSERSITE=1 python3 "$repo/tools/reference/make_qwen3_tiny.py" \
    "$dest" --anchor-dir "$anchor" >&2
rc=$?
set -e
case "$rc" in
    0) ;;
    3) die 3 "the regenerated models in $dest do not have anchor-data's sha256 (see above)" ;;
    4) die 4 "anchor Q8_0 model not found" ;;
    5) die 5 "the regenerated tensor values disagree with the anchor Q8_0 model" ;;
    *) die "$rc" "make_qwen3_tiny.py failed (exit $rc)" ;;
esac
both_present "$dest" || die 3 "sha256 check of $dest failed after generation"
log "verified sha256 of qwen3-tiny-random-F32.gguf and -F16.gguf"
printf '%s\n' "$dest"
