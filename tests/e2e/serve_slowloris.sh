#!/usr/bin/env bash
# mllm serve under a slowloris attack: 150 trickling connections, a normal client still answered in 2 s (serve_slowloris.py).
exec python3 "$(dirname "$0")/serve_slowloris.py" "$@"
