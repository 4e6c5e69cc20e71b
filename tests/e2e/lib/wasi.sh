# Sourced by the wasm e2e tests (tests/e2e/wasi_*.sh): `wasi_find FILE`
# sets $wasi_dir to the wasm build folder ($MLLM_WASI_MLLM's folder, else
# build/wasi of this source tree; scripts/test.sh builds it) and returns when
# FILE is there and node is too; otherwise it prints SKIPPED with the reason
# (whether the toolchain to build one is installed) and exits 77.
wasi_find() {
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
    wasi_dir=$(dirname "${MLLM_WASI_MLLM:-$root/build/wasi/mllm.wasm}")
    command -v node >/dev/null || { echo "SKIPPED: node is absent (the WASI runtime)"; exit 77; }
    [ -f "$wasi_dir/$1" ] && return 0
    local missing=""
    [ -f /usr/lib/wasm32-wasi/libc.a ] || missing+=" wasi-libc"
    compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a" >/dev/null ||
        missing+=" libclang-rt-14-dev-wasm32"
    command -v wasm-ld >/dev/null || missing+=" lld"
    if [ -n "$missing" ]; then
        echo "SKIPPED: no wasm32-wasi toolchain (missing:$missing; scripts/deps.sh installs it)"
    else
        echo "SKIPPED: no $wasi_dir/$1 (build it: scripts/wasi-deps.sh && cmake --preset wasi && cmake --build --preset wasi)"
    fi
    exit 77
}
