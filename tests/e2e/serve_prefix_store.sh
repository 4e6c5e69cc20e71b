#!/usr/bin/env bash
# mllm serve --prefix-store: a restarted server reads its prompts' K/V
# blocks from the store (cached_tokens exact, same answer as without a
# store), another model never does, and SIGKILL at random moments never
# leaves a store that answers wrong (serve_prefix_store.py).
exec python3 "$(dirname "$0")/serve_prefix_store.py" "$@"
