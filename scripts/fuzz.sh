#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, Release, ASan+UBSan,
# in build/fuzz and runs each for SECONDS_PER_TARGET seconds (default 60).
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET ...]
# New coverage goes to build/fuzz/corpus/<target> (the committed seeds in
# tests/fuzz/corpus/<target> are read, never written). A crashing input is
# saved as tests/fuzz/crashes/<target>/crash-<sha1> (or leak-, timeout-,
# oom-) and its path printed; the script then exits non-zero. Keep every
# such input as tests/fuzz/regressions/<target>/<name> once fixed: the
# fuzz_replay_<target> ctest tests replay them in every build.
set -u
secs=${1:-60}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/fuzz
all_targets=(gguf gguf_tokenizer safetensors hf_config hf_folder llama2c mllmfile template tokenizer_json tokenizer_bin http ctranslate2 audio grammar json_schema st_config toolcall whisper_config multipart image mmproj data_url kv_store)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")

# Largest input tried per target (the seeds are smaller than these).
max_len() {
    case $1 in
        gguf | mmproj) echo 32768 ;;
        hf_folder | llama2c | mllmfile | audio | image | kv_store) echo 16384 ;;
        tokenizer_json | tokenizer_bin | template) echo 8192 ;;
        *) echo 4096 ;;
    esac
}

# Without CUDA: its kernels are no parser, and nvcc's host compiler (gcc) has no libFuzzer.
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DMLLM_FUZZ=ON -DMLLM_CUDA=OFF >/dev/null || exit 1
cmake --build "$build" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null || {
    echo "fuzz.sh: build failed (rerun: cmake --build $build)" >&2
    exit 1
}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/mllm-fuzz-run.XXXXXX")
[ -d /dev/shm ] && { rmdir "$scratch"; scratch=$(mktemp -d /dev/shm/mllm-fuzz-run.XXXXXX); }
trap 'rm -rf "$scratch"' EXIT
export MLLM_FUZZ_TMP=$scratch
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Leaks inside system libraries we cannot fix (each explained in the file).
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/fuzz/lsan.supp}

status=0
summary=""
for t in "${targets[@]}"; do
    bin=$build/tests/fuzz_$t
    work=$build/corpus/$t
    crashes=$root/tests/fuzz/crashes/$t
    mkdir -p "$work" "$crashes"
    log=$build/fuzz_$t.log
    echo "== fuzz_$t: ${secs}s, -max_len=$(max_len "$t") (log: $log)"
    "$bin" "$work" "$root/tests/fuzz/corpus/$t" -max_total_time="$secs" -max_len="$(max_len "$t")" \
        -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 -artifact_prefix="$crashes/" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    line=$(printf '%-16s rc=%-3s execs=%-9s exec/s=%-7s %s' "$t" "$rc" "${execs:-?}" "${speed:-?}" "$cov")
    echo "$line"
    summary+="$line"$'\n'
    if [ $rc -ne 0 ]; then
        status=1
        grep -m3 -E 'ERROR: |runtime error|fuzz invariant failed' "$log" | sed 's/^/   /'
        for f in "$crashes"/*; do [ -f "$f" ] && echo "   crashing input: $f"; done
    fi
done
rmdir "$root/tests/fuzz/crashes"/* 2>/dev/null
echo
echo "summary:"
printf '%s' "$summary"
exit $status
