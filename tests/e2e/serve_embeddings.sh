#!/usr/bin/env bash
# POST /v1/embeddings through the official openai client (serve_embeddings.py):
# all-MiniLM-L6-v2 against sentence-transformers' vectors, and a decoder.
exec python3 "$(dirname "$0")/serve_embeddings.py" "$@"
