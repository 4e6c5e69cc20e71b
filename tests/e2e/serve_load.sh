#!/usr/bin/env bash
# mllm serve: 8 concurrent clients x 20 requests, identical greedy answers (serve_load.py).
exec python3 "$(dirname "$0")/serve_load.py" "$@"
