#!/usr/bin/env bash
# Constrained decoding with SmolLM2 through mllm run and the server: every
# answer validates with the jsonschema package (grammar_smollm2.py).
exec python3 "$(dirname "$0")/grammar_smollm2.py" "$@"
