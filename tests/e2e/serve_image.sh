#!/usr/bin/env bash
# OpenAI image_url content parts through the official openai client
# (serve_image.py), on the tiny Qwen2.5-VL (HF folder and its GGUF pair).
exec python3 "$(dirname "$0")/serve_image.py" "$@"
