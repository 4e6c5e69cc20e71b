#!/usr/bin/env bash
# mllm serve's chat page (GET /) driven in headless Chromium: streamed, multi-turn, Stop, API key field (serve_webchat.py; SKIPPED without chromium).
exec python3 "$(dirname "$0")/serve_webchat.py" "$@"
