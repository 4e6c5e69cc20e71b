#!/usr/bin/env bash
# Embedding and audio requests queue as tasks behind the compute's owner
# (serve_tasks.py): never on an HTTP thread, 503 with Retry-After when full.
exec python3 "$(dirname "$0")/serve_tasks.py" "$@"
