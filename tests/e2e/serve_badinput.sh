#!/usr/bin/env bash
# mllm serve: malformed requests each get their 4xx (serve_badinput.py).
exec python3 "$(dirname "$0")/serve_badinput.py" "$@"
