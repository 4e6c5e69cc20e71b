#!/usr/bin/env bash
# The prefix cache and --prefix-store hold an image's K/V blocks, keyed by
# the image and the tower: the same image hits (in memory and after a
# restart), another never does, and every answer equals a fresh server's
# (serve_image_store.py; tiny Qwen2.5-VL and SmolVLM).
exec python3 "$(dirname "$0")/serve_image_store.py" "$@"
