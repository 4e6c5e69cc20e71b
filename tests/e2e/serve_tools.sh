#!/usr/bin/env bash
# Tool calling and n > 1 through the official openai client (serve_tools.py)
# with the real Qwen2.5-Coder-0.5B-Instruct and SmolLM2; skipped (77) when
# neither is given or the client cannot be installed.
exec python3 "$(dirname "$0")/serve_tools.py" "$@"
