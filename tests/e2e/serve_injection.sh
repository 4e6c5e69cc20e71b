#!/usr/bin/env bash
# mllm serve: message text never becomes special tokens, and no text is
# silently cut at a NUL (serve_injection.py).
exec python3 "$(dirname "$0")/serve_injection.py" "$@"
