#!/usr/bin/env bash
# mllm serve: full queue, client hang-ups, SIGTERM during streaming (serve_robust.py).
exec python3 "$(dirname "$0")/serve_robust.py" "$@"
