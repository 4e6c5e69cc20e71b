#!/usr/bin/env bash
# deps.sh: installs the Debian 12 packages mllm-c builds and tests with
# (only those missing; needs root or sudo).
# libsndfile1-dev and libsamplerate0-dev: audio input (src/audio; Debian 12's
# libsndfile 1.2.0 reads MP3); libvorbis-dev (libvorbisfile): Ogg Vorbis headers
# checked before libsndfile, whose Vorbis reader leaks on bad ones. zlib1g-dev: Whisper's compression-ratio fallback.
# libstb-dev: stb_image, the PNG/JPEG/BMP/GIF decoder of image input (src/image;
# a header compiled into the library, tests also use its stb_image_write).
# libwebp-dev: WebP image input (optional in CMake: without it WebP files are
# refused with "WebP support not built").
# espeak-ng and sox: scripts/make-speech-clip.sh (the long Whisper clip).
# chromium (about 80 MB to download, 350 MB installed) is only for the
# chat page's browser test (tests/e2e/serve_webchat.sh, skipped without it).
# wasi-libc, libclang-rt-14-dev-wasm32, lld and llvm-14 (llvm-ar): the
# wasm32-wasi build (docs/wasm.md); dpkg-dev (dpkg-source) unpacks the Debian
# source packages scripts/wasi-deps.sh builds for it. Its test runs under
# node (18 or later; not installed here).
# The arm64 cross build (CMake preset aarch64, docs/arm64.md): the
# gcc-aarch64-linux-gnu cross compiler, qemu-user (qemu-aarch64 runs its
# tests) and every library the build links in its arm64 flavour, from Debian
# multiarch (dpkg --add-architecture arm64; they bring libc6:arm64, the
# loader qemu-aarch64 uses).
# ocl-icd-opencl-dev and opencl-c-headers: the OpenCL ICD loader and headers
# the OpenCL device layer links (src/backends/opencl, docs/opencl.md);
# pocl-opencl-icd: PoCL, an OpenCL driver that runs the kernels on the CPU,
# so test_opencl_ops has a device on machines without a GPU.
# --build: only what building and running needs (scripts/demo.sh): the
# compiler, CMake, the libraries the library links, cmocka (the tests'
# folder is configured with it), python3-pip (the model fetch scripts use
# pip). The full list below adds the test toolchain: clang and its
# sanitizer runtime, wasm and arm64 cross toolchains, qemu, PoCL, espeak-ng,
# sox, faketime, chromium.
set -euo pipefail
build_only=0
[ "${1:-}" = "--build" ] && build_only=1
build_pkgs=(build-essential cmake pkg-config libpcre2-dev libcjson-dev libutf8proc-dev libcmocka-dev libmicrohttpd-dev
            libedit-dev libsndfile1-dev libsamplerate0-dev libvorbis-dev zlib1g-dev libstb-dev libwebp-dev python3
            python3-pip)
pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev libpcre2-dev libcjson-dev libutf8proc-dev libcmocka-dev libmicrohttpd-dev libedit-dev libsndfile1-dev libsamplerate0-dev libvorbis-dev zlib1g-dev libstb-dev libwebp-dev espeak-ng sox python3 python3-pip unzip faketime tzdata chromium
      wasi-libc libclang-rt-14-dev-wasm32 lld llvm-14 dpkg-dev curl
      ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
      libpcre2-dev:arm64 libcjson-dev:arm64 libutf8proc-dev:arm64 libcmocka-dev:arm64 libmicrohttpd-dev:arm64
      libedit-dev:arm64 libsndfile1-dev:arm64 libsamplerate0-dev:arm64 libvorbis-dev:arm64 zlib1g-dev:arm64)
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
[ $build_only = 1 ] && pkgs=("${build_pkgs[@]}")
if [ $build_only = 0 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "deps: adding the arm64 architecture (multiarch) for the aarch64 cross build" >&2
    $SUDO dpkg --add-architecture arm64
fi
missing=()
for p in "${pkgs[@]}"; do
    # with arm64 added, a library installed for both is "ambiguous" unqualified
    dpkg -s "$p" >/dev/null 2>&1 || dpkg -s "$p:$(dpkg --print-architecture)" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >&2
