# Sourced by the shell e2e tests (not a test itself: tests/CMakeLists.txt
# registers only tests/e2e/*.sh). ok/bad/expect print one line per check and
# count failures; `finish NAME` prints the summary and fails if any did.
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
expect() { if [ "$2" == "$3" ]; then ok "$1"; else bad "$1: got [$2] want [$3]"; fi; }
finish() {
    if [ "$fails" -eq 0 ]; then echo "$1: all passed"; else echo "$1: $fails failed"; return 1; fi
}
# Sets dir (Whisper tiny.en, $MLLM_WHISPER_TINY_DIR) and wav (../shared's
# jfk.wav, from $shared), or skips the test (77) when either is absent.
need_whisper_tiny() {
    dir=${MLLM_WHISPER_TINY_DIR:-}
    wav="$shared/models/audio/jfk.wav"
    if [ -z "$dir" ] || [ ! -f "$dir/model.bin" ] || [ ! -f "$wav" ]; then
        echo "SKIPPED: MLLM_WHISPER_TINY_DIR unset or jfk.wav absent (scripts/fetch-whisper.sh whisper-tiny.en)"
        exit 77
    fi
}
