#!/usr/bin/env bash
# mllm serve's engine (continuous batching, shared KV pool, prefix cache)
# through the openai client with SmolLM2 (serve_engine.py); skipped (77)
# without the model or the client.
exec python3 "$(dirname "$0")/serve_engine.py" "$@"
