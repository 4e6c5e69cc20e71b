#!/usr/bin/env bash
# wasi-deps.sh [PREFIX]: builds the libraries libmllm links -- cJSON, PCRE2,
# utf8proc, zlib -- for wasm32-wasi from Debian 12's own source packages
# (Debian ships no wasm builds of them) and installs them, with their
# pkg-config files, into PREFIX (default build/wasi-deps/prefix), which the
# `wasi` preset reads. Nothing is vendored: the .dsc files are pinned by
# SHA-256 here, dpkg-source checks every tarball against its .dsc and applies
# Debian's patches. Downloads come from deb.debian.org (or $DEBIAN_MIRROR)
# once and are kept in PREFIX/../src; a rerun with everything built does
# nothing. The versions are bookworm's release ones (the pool no longer has
# the .dsc of pcre2 +deb12u2 or zlib +deb12u1; cjson is +deb12u4).
# libsndfile and libsamplerate (audio input) are not built: the wasi build
# has no audio input (docs/wasm.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$root/build/wasi-deps/prefix}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
work=$(dirname "$prefix")/src
mkdir -p "$work" "$prefix"
prefix=$(cd "$prefix" && pwd)
toolchain=$root/cmake/wasi/wasi.toolchain.cmake
# name  pool path  .dsc sha256
pkgs=(
  "cjson c/cjson/cjson_1.7.15-1+deb12u4.dsc 764c2de141d680f4fb4cada30c526dacaa30ead061b9b9c34f2b81e2df0f8439"
  "pcre2 p/pcre2/pcre2_10.42-1.dsc 726dafe7a8d07332d4df61edf23f384ddb158b2b263846273d1103b6b9a7c176"
  "utf8proc u/utf8proc/utf8proc_2.8.0-1.dsc 6ce2b0ab12fe7d0c3fd0a40d4eb886ae82bf6ea356e4db1a0a9f76582947625c"
  "zlib z/zlib/zlib_1.2.13.dfsg-1.dsc 3fa1e6b2fc525062aa88207dda52fed8e045373c809d362fe8a2bfbf7cf515a8"
)
# CMake options per package: static, no tests or tools, nothing wasm lacks
# (PCRE2's JIT writes machine code; zlib's example programs).
declare -A opts=(
  [cjson]="-DENABLE_CJSON_TEST=OFF -DBUILD_SHARED_LIBS=OFF -DENABLE_CUSTOM_COMPILER_FLAGS=OFF -DENABLE_TARGET_EXPORT=OFF"
  [pcre2]="-DPCRE2_BUILD_PCRE2GREP=OFF -DPCRE2_BUILD_TESTS=OFF -DPCRE2_SUPPORT_JIT=OFF -DBUILD_SHARED_LIBS=OFF -DPCRE2_SUPPORT_LIBBZ2=OFF -DPCRE2_SUPPORT_LIBZ=OFF -DPCRE2_SUPPORT_LIBEDIT=OFF -DPCRE2_SUPPORT_LIBREADLINE=OFF -DPCRE2_SUPPORT_UNICODE=ON"
  [utf8proc]="-DBUILD_SHARED_LIBS=OFF -DUTF8PROC_ENABLE_TESTING=OFF"
)
for entry in "${pkgs[@]}"; do
  read -r name path sha <<<"$entry"
  stamp=$prefix/.built-$(basename "$path" .dsc)
  [ -f "$stamp" ] && continue
  dsc=$work/$(basename "$path")
  if [ ! -f "$dsc" ] || ! echo "$sha  $dsc" | sha256sum -c --status; then
    curl -fsSL -o "$dsc" "$mirror/pool/main/$path"
    echo "$sha  $dsc" | sha256sum -c --status || { echo "wasi-deps: $dsc: SHA-256 mismatch" >&2; exit 1; }
    # the tarballs the .dsc names (dpkg-source checks their sums)
    awk '/^Files:/ {f = 1; next} f && /^ / {print $3; next} {f = 0}' "$dsc" | while read -r f; do
      curl -fsSL -o "$work/$f" "$mirror/pool/main/$(dirname "$path")/$f"
    done
  fi
  srcdir=$work/$name
  rm -rf "$srcdir" "$work/build-$name"
  # checksums of the tarballs are verified; the signature cannot be (no
  # Debian keyring here; the .dsc itself is pinned by SHA-256 above)
  (cd "$work" && dpkg-source -x "$dsc" "$name" > "$work/unpack-$name.log" 2>&1) ||
    { cat "$work/unpack-$name.log" >&2; echo "wasi-deps: cannot unpack $dsc" >&2; exit 1; }
  echo "wasi-deps: building $name for wasm32-wasi" >&2
  if [ "$name" = zlib ]; then
    # zlib's CMakeLists always builds a shared library with a Windows .rc
    # (which Debian's dfsg tarball drops): its own configure, static only.
    (cd "$srcdir" && CC=clang CFLAGS="--target=wasm32-wasi -O2" AR=llvm-ar RANLIB=llvm-ranlib \
       CHOST=wasm32 ./configure --static --prefix="$prefix" --libdir="$prefix/lib" &&
     make -j2 libz.a && make install) > "$work/build-$name.log" 2>&1 ||
      { tail -n 30 "$work/build-$name.log" >&2; echo "wasi-deps: zlib failed (log: $work/build-$name.log)" >&2; exit 1; }
    touch "$stamp"
    continue
  fi
  # shellcheck disable=SC2086
  cmake -S "$srcdir" -B "$work/build-$name" -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
    ${opts[$name]} > "$work/build-$name.log" 2>&1 &&
  cmake --build "$work/build-$name" -j2 >> "$work/build-$name.log" 2>&1 &&
  cmake --install "$work/build-$name" >> "$work/build-$name.log" 2>&1 ||
    { tail -n 30 "$work/build-$name.log" >&2; echo "wasi-deps: $name failed (log: $work/build-$name.log)" >&2; exit 1; }
  touch "$stamp"
done
echo "wasi-deps: cJSON, PCRE2, utf8proc and zlib for wasm32-wasi are in $prefix" >&2
