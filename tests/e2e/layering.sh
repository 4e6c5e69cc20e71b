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
  [backends]="core"
  [graph]="core backends"
  [audio]="core"
  [image]="core"
  [tokenizer]="core formats"
  [template]="core formats"
  [runtime]="core tokenizer"
  [models]="core formats graph backends tokenizer runtime audio image"
  [kv]="core formats backends"
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
exit $bad
