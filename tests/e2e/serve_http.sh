#!/usr/bin/env bash
# mllm serve's HTTP strictness: JSON media type, Host, one Content-Length, exact API key bytes, CORS (serve_http.py).
exec python3 "$(dirname "$0")/serve_http.py" "$@"
