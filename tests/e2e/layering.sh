#!/usr/bin/env bash
# The layers of ../shared/ARCHITECTURE.md (and docs/ARCHITECTURE.md): each
# folder of src/ may include only the folders listed for it here, so no
# include points upward (src/core and src/formats know no model, backend, API
# or server). A new folder must be added to this table deliberately.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../src" && pwd)
declare -A allowed=(
  [core]=""
  [formats]="core"
  [backends]="core kv"
  [graph]="core backends kv"
  [audio]="core"
  [image]="core"
  [tokenizer]="core formats"
  [template]="core formats"
  [runtime]="core tokenizer"
  [models]="core formats graph backends tokenizer runtime audio image"
  [kv]="core formats"
  [convert]="core formats graph backends models tokenizer runtime audio image"
  [quantize]="core formats graph backends models"
  [synth]="core formats graph backends models tokenizer"
  [engine]="core formats graph backends models tokenizer runtime kv"
  [api]="core formats graph backends models tokenizer template runtime audio image convert quantize synth kv engine"
  [server]="core api runtime engine"
)
bad=0
for dir in "$src"/*/; do
  layer=$(basename "$dir")
  if [[ -z ${allowed[$layer]+x} ]]; then
    echo "FAIL: src/$layer is not in the layer table of $0"; bad=1; continue
  fi
  while IFS=: read -r file line inc; do
    to=${inc#*\"}; to=${to%%/*}
    [[ $to == "$layer" ]] && continue
    [[ " ${allowed[$layer]} " == *" $to "* ]] && continue
    echo "FAIL: ${file#"$src"/}:$line includes $to/ (src/$layer may include: ${allowed[$layer]:-nothing})"; bad=1
  done < <(grep -rnoE '^#include "[a-z_0-9]+/' "$dir" --include='*.c' --include='*.h' | sed 's/:#include /:/')
done
[[ $bad == 0 ]] && echo "ok: every include of src/ points down the layers"

# The CPU backend's headers (src/backends/cpu/) are its own: the rest of the
# library reaches it through backends/backend.h, backends/cpu.h (its public
# face: per-dtype code, weight layouts, the repacked-weights buffer type)
# and kv/kv_layout.h. No file outside src/backends includes them.
root=$(cd "$src/.." && pwd)
while IFS=: read -r file line _; do
  rel=${file#"$root"/}
  [[ $rel == src/backends/* ]] && continue
  echo "FAIL: $rel:$line includes backends/cpu/ (use backends/cpu.h, kv/kv_layout.h or backends/backend.h)"; bad=1
done < <(grep -rnE '^#include "backends/cpu/' "$src" "$root/apps" --include='*.c' --include='*.h')

# A model reads no environment: its inputs come through parameter structs
# filled by src/api (which reads MLLM_BACKENDS, MLLM_REPACK, ...).
while IFS=: read -r file line _; do
  echo "FAIL: ${file#"$root"/}:$line reads the environment (pass the value in from src/api)"; bad=1
done < <(grep -rnE '\b(secure_)?getenv *\(' "$src/models" --include='*.c' --include='*.h')

# One monotonic clock: core/clock.c reads it (mllm_clock_mono*), everything
# else asks it (the public mllm_time_ms for apps/).
while IFS=: read -r file line _; do
  [[ ${file#"$root"/} == src/core/clock.c ]] && continue
  echo "FAIL: ${file#"$root"/}:$line reads CLOCK_MONOTONIC itself (use core/clock.h or mllm_time_ms)"; bad=1
done < <(grep -rnE 'clock_gettime *\( *CLOCK_MONOTONIC' "$src" "$root/apps" --include='*.c' --include='*.h')

# One atomic-write protocol: core/atomic_write.c renames temporaries onto
# their destination; a writer elsewhere uses it instead of its own copy.
while IFS=: read -r file line _; do
  [[ ${file#"$root"/} == src/core/atomic_write.c ]] && continue
  echo "FAIL: ${file#"$root"/}:$line renames a file itself (use core/atomic_write.h)"; bad=1
done < <(grep -rnE '(^|[^_a-z])rename *\(' "$src" --include='*.c')

# The user commands in apps/ are clients of the public API: they include
# mllm/mllm.h, system headers and the apps' own headers (cli.h) only. The
# pairs below would be internal headers a command still includes (file:
# header); the list is empty and stays so.
apps_internal_left=()
while IFS=: read -r file line inc; do
  name=$(basename "$file")
  to=${inc#*[\"<]}; to=${to%%[\">]*}
  [[ $to == mllm/mllm.h ]] && continue
  [[ $inc == *\<* ]] && continue                 # a system header
  [[ -f "$root/apps/$to" ]] && continue           # the apps' own (cli.h)
  left=0
  for pair in "${apps_internal_left[@]}"; do [[ $pair == "$name: $to" ]] && left=1; done
  [[ $left == 1 ]] && continue
  echo "FAIL: apps/$name:$line includes $to (a user command includes only mllm/mllm.h)"; bad=1
done < <(grep -rnE '^#include [<"]' "$root/apps" --include='*.c' --include='*.h' | sed 's/:#include /:/')

# src/api names no model family: it drives every family through its
# registry row (models/registry.h: kind, encoder, speech, vision hooks), so
# adding a family touches src/models only. Comments included: a name there
# is a sign of code that knows the family.
families='whisper|qwen2vl|qwen2_5_vl|qwen2\.5-vl|qwen2-vl|idefics3|smolvlm|siglip|gemma|bert|minilm'
while IFS=: read -r file line _; do
  echo "FAIL: ${file#"$root"/}:$line names a model family (use its registry row's hooks)"; bad=1
done < <(grep -rniE "$families" "$src/api" --include='*.c' --include='*.h')

[[ $bad == 0 ]] && echo "ok: the CPU backend's headers, the models' inputs, the commands' includes and src/api's family-free code keep their layers"
exit $bad
