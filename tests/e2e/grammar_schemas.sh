#!/usr/bin/env bash
# JSON Schema -> grammar: random texts of many schemas validate with the
# jsonschema package; hostile schemas fail naming the limit (grammar_schemas.py).
exec python3 "$(dirname "$0")/grammar_schemas.py" "$@"
