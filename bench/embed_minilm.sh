#!/usr/bin/env bash
# embed_minilm.sh [MLLM_BINARY]: time to embed the 8 reference texts of
# tests/data/minilm/embeddings.json with all-MiniLM-L6-v2, mllm vs
# sentence-transformers, both on 2 threads, one text per forward
# (sentence-transformers: batch_size=1, torch.set_num_threads(2)).
# mllm's figure is (time for 11 copies of the texts - time for 1 copy) / 10,
# so the model's load is not counted; best of 3 for each. MLLM_MINILM_DIR:
# the model's folder (default: scripts/fetch-minilm.sh's).
set -euo pipefail
cd "$(dirname "$0")/.."
mllm="${1:-build/release/mllm}"
dir="${MLLM_MINILM_DIR:-$(scripts/fetch-minilm.sh)}" # a folder given is used as it is, no download
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import json, sys
d = json.load(open("tests/data/minilm/embeddings.json", encoding="utf-8"))
lines = [t.replace("\n", " ") for t in d["texts"]]
open(sys.argv[1] + "/1.txt", "w", encoding="utf-8").write("\n".join(lines) + "\n")
open(sys.argv[1] + "/11.txt", "w", encoding="utf-8").write("\n".join(lines * 11) + "\n")
PY
best() { # best wall ms of 3 runs of "$@"
    local b=999999999 t0 t1 ms
    for _ in 1 2 3; do
        t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N)
        ms=$(( (t1 - t0) / 1000000 )); (( ms < b )) && b=$ms
    done
    echo "$b"
}
one=$(best "$mllm" embed -m "$dir" -f "$tmp/1.txt" -t 2 -o text)
eleven=$(best "$mllm" embed -m "$dir" -f "$tmp/11.txt" -t 2 -o text)
echo "mllm embed, 2 threads: $(( (eleven - one) / 10 )) ms for the 8 texts (load + 8 texts: $one ms)"
python3 - "$dir" <<'PY'
import json, sys, time, torch
from sentence_transformers import SentenceTransformer
torch.set_num_threads(2)
texts = json.load(open("tests/data/minilm/embeddings.json", encoding="utf-8"))["texts"]
m = SentenceTransformer(sys.argv[1], device="cpu")
m.encode(texts, batch_size=1)
best = 1e9
for _ in range(3):
    t0 = time.perf_counter(); m.encode(texts, batch_size=1); best = min(best, time.perf_counter() - t0)
print("sentence-transformers %s, torch %s, 2 threads, batch_size=1: %.0f ms for the 8 texts"
      % (__import__("sentence_transformers").__version__, torch.__version__, best * 1e3))
PY
