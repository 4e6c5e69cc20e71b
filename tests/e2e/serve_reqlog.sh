#!/usr/bin/env bash
# mllm serve's request log: one line per request on stderr, right status and token counts; --log-requests off (serve_reqlog.py).
exec python3 "$(dirname "$0")/serve_reqlog.py" "$@"
