#!/usr/bin/env bash
# mllm serve: logprobs, logit_bias, presence/frequency penalties and the
# refusal of unsupported OpenAI fields (serve_sampling.py).
exec python3 "$(dirname "$0")/serve_sampling.py" "$@"
