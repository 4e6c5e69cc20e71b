#!/usr/bin/env bash
# mllm serve through the official openai Python client (serve_openai.py);
# skipped (77) when the client cannot be installed.
exec python3 "$(dirname "$0")/serve_openai.py" "$@"
