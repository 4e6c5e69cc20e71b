#!/usr/bin/env bash
# The wasm SIMD128 kernels against the generic C ones (tests/wasm/test_simd128.c,
# built by the wasi preset as test_simd128.wasm), run under node: once as
# built, and once with MLLM_CPU=generic, which must leave the reference
# kernels in the dtype table. SKIPPED without a wasm build (lib/wasi.sh) or
# when it was configured with -DMLLM_WASM_SIMD=OFF (no test_simd128.wasm).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib/wasi.sh"
wasi_find test_simd128.wasm
node "$root/tools/wasi-run.mjs" "$wasi_dir/test_simd128.wasm"
MLLM_CPU=generic node "$root/tools/wasi-run.mjs" "$wasi_dir/test_simd128.wasm" | tail -n 1
