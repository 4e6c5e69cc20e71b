#!/usr/bin/env bash
# cmake -DMLLM_SERVER=OFF builds the library and the CLI without src/server:
# libmllm.so needs no libmicrohttpd and holds no MHD_ symbol, and
# `mllm serve` exits 2 saying the build has no server. It is configured
# with -DMLLM_CUDA=OFF too (no nvcc run, and a check that such a build
# holds no CUDA runtime).
# Usage: no_server.sh SOURCE_DIR BUILD_DIR C_COMPILER. The build is
# unoptimized (no CMAKE_BUILD_TYPE) and without the tests, to stay cheap; it
# is kept between runs, so a rerun rebuilds only what changed.
set -euo pipefail
src=$1 out=$2/no-server cc=$3
log=$out.log
if ! { cmake -S "$src" -B "$out" -DMLLM_SERVER=OFF -DMLLM_CUDA=OFF -DMLLM_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE= \
        -DCMAKE_C_COMPILER="$cc" &&
       cmake --build "$out" -j2 --target mllm mllm_shared; } > "$log" 2>&1; then
    tail -n 40 "$log"; echo "FAIL: the MLLM_SERVER=OFF build failed (log: $log)"; exit 1
fi
lib=$(ls "$out"/libmllm.so.*.*)
fails=0
if readelf -d "$lib" | grep -qi microhttpd; then
    echo "FAIL: $lib needs libmicrohttpd:"; readelf -d "$lib" | grep NEEDED; fails=1
fi
for f in "$lib" "$out/mllm"; do
    n=$(nm -D "$f" 2>/dev/null | grep -c ' MHD_' || true)
    [ "$n" = 0 ] || { echo "FAIL: $f refers to $n MHD_ symbols"; fails=1; }
done
n=$(nm "$lib" 2>/dev/null | grep -c ' cudaGetDeviceCount$\| mllm_cuda_open$' || true)
[ "$n" = 0 ] || { echo "FAIL: $lib was configured with MLLM_CUDA=OFF but holds CUDA code"; fails=1; }
rc=0
"$out/mllm" serve -m /nonexistent.gguf > "$out.serve.out" 2> "$out.serve.err" || rc=$?
if [ "$rc" != 2 ] || ! grep -q "this build of mllm has no HTTP server" "$out.serve.err"; then
    echo "FAIL: mllm serve in a no-server build: exit $rc, stderr:"; cat "$out.serve.err"; fails=1
fi
# The rest of the CLI is there (run --help works), and --help says serve is not.
"$out/mllm" run --help > /dev/null || { echo "FAIL: mllm run --help in the no-server build"; fails=1; }
"$out/mllm" --help | grep -q "serve       (not in this build" ||
    { echo "FAIL: mllm --help of the no-server build does not say serve is absent"; fails=1; }
[ $fails = 0 ] && echo "ok: MLLM_SERVER=OFF builds without libmicrohttpd; mllm serve says: $(head -c 80 "$out.serve.err")..."
exit $fails
