#!/usr/bin/env bash
# mllm serve --context-shift: answers go past a full context to max_tokens, as mllm run / chat --context-shift (serve_ctxshift.py).
exec python3 "$(dirname "$0")/serve_ctxshift.py" "$@"
