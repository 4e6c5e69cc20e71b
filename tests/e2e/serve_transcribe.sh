#!/usr/bin/env bash
# POST /v1/audio/transcriptions through the official openai client
# (serve_transcribe.py): Whisper tiny.en ($MLLM_WHISPER_TINY_DIR) on jfk.wav
# in every response_format, equal to `mllm transcribe`; bad forms are 400s
# naming the field; a Whisper base server ($MLLM_WHISPER_BASE_DIR) detects
# the language. Skipped (77) without the model.
exec python3 "$(dirname "$0")/serve_transcribe.py" "$@"
