#!/usr/bin/env bash
# The C SDK as a user gets it: `cmake --install` the build into a temporary
# prefix, build examples/ against that prefix with pkg-config (mllm.pc) and
# run them on a synthetic model and on stories260K, comparing with the CLI
# and the llama2.c golden. Also: libmllm.so exports only mllm_* symbols,
# and a program linked with the static libmllm.a needs no libmllm.so.
set -euo pipefail
mllm=$(realpath "$1") shared=$2 build=$(realpath "$3")
src=$(cd "$(dirname "$0")/../.." && pwd)
for tool in pkg-config nm readelf make python3; do
    command -v "$tool" >/dev/null || { echo "SKIPPED: $tool is not installed"; exit 77; }
done
tmp=$(mktemp -d "$build/e2e-sdk.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" > "$tmp/install.log"
libdir=$(dirname "$(find "$prefix" -name libmllm.so -print -quit)")
pcdir=$(dirname "$(find "$prefix" -name mllm.pc -print -quit)")
[ -f "$libdir/libmllm.so" ] && [ -f "$libdir/libmllm.a" ] && [ -f "$pcdir/mllm.pc" ] &&
    [ -f "$prefix/include/mllm/mllm.h" ] || { echo "install is missing files:"; find "$prefix"; exit 1; }
export PKG_CONFIG_PATH=$pcdir
pc_version=$(pkg-config --modversion mllm)
cli_version=$("$mllm" --version | grep -o '[0-9]*\.[0-9]*\.[0-9]*' | head -n 1)
[ "$pc_version" = "$cli_version" ] ||
    { echo "mllm.pc version '$pc_version' differs from the CLI's '$cli_version'"; exit 1; }

# Only the public API leaves the shared library.
others=$(nm -D --defined-only "$libdir/libmllm.so" | awk 'NF == 3 && $3 !~ /^mllm_/ {print $3}')
[ -z "$others" ] || { echo "libmllm.so exports non-mllm_ symbols:"; echo "$others"; exit 1; }
echo "libmllm.so exports $(nm -D --defined-only "$libdir/libmllm.so" | grep -c ' mllm_') symbols, all mllm_*"

# Build the examples the way a user would: their Makefile and pkg-config.
# The compiler and sanitizer flags follow the build under test, since an
# ASan-instrumented library only loads into an ASan program.
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
cflags="-O1 -Wall -Wextra -Werror"
grep -q '^MLLM_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" && cflags="$cflags -fsanitize=address,undefined"
cp -r "$src/examples" "$tmp/examples"
examples="simple_generate tokenize"
if nm -D --defined-only "$libdir/libmllm.so" | grep ' mllm_chat$' >/dev/null; then
    examples="$examples chat"
else
    echo "chat example: not built, this libmllm has no mllm_chat yet"
fi
make -s -C "$tmp/examples" CC="${cc:-cc}" CFLAGS="$cflags" LDFLAGS="-Wl,-rpath,$libdir $cflags" $examples
ex=$tmp/examples

# Static: libmllm.a plus the private libraries pkg-config --static names.
# (-L too: a CUDA build names the static CUDA runtime's folder.)
static_libs="$(pkg-config --static --libs-only-L mllm) $(pkg-config --static --libs-only-l mllm | sed 's/-lmllm\b//')"
"${cc:-cc}" $cflags $(pkg-config --cflags mllm) -o "$ex/tokenize_static" "$ex/tokenize.c" \
    "$libdir/libmllm.a" $static_libs
if readelf -d "$ex/tokenize_static" | grep 'libmllm\.so' >/dev/null; then
    echo "tokenize_static still needs libmllm.so"; exit 1
fi

"$mllm" synth --arch qwen3 --preset tiny -o "$tmp/q.gguf" > "$tmp/synth.log" 2>&1 ||
    { cat "$tmp/synth.log"; exit 1; }

# tokenize: the ids equal the CLI's, for both builds of the example.
check_tokens() { # model prompt [tokenizer]
    local want got got_static
    want=$("$mllm" tokenize -m "$1" -p "$2" ${3:+--tokenizer "$3"})
    got=$("$ex/tokenize" "$1" "$2" ${3:+"$3"} | head -n 1)
    got_static=$("$ex/tokenize_static" "$1" "$2" ${3:+"$3"} | head -n 1)
    if [ "$got" != "$want" ] || [ "$got_static" != "$want" ]; then
        printf 'tokenize %q: example [%s], static [%s], mllm tokenize [%s]\n' "$2" "$got" "$got_static" "$want"
        exit 1
    fi
}
for text in "Hello world" "Grüße, 世界! 123" "<|im_start|>user
hi<|im_end|>"; do
    check_tokens "$tmp/q.gguf" "$text"
done
stories=$shared/models/stories260K
have_stories=1
for f in stories260K.bin tok512.bin stories260K_golden.json; do
    [ -f "$stories/$f" ] || { echo "stories260K part SKIPPED: $stories/$f is absent"; have_stories=0; }
done
if [ $have_stories = 1 ]; then
    check_tokens "$stories/stories260K.bin" "Once upon a time" "$stories/tok512.bin"
fi
echo "tokenize example: ids identical to mllm tokenize"

# simple_generate: greedy, so its text is the CLI's greedy continuation.
"$ex/simple_generate" "$tmp/q.gguf" "Hello" 12 > "$tmp/gen.out" 2> "$tmp/gen.err" ||
    { cat "$tmp/gen.err"; exit 1; }
"$mllm" run --raw -m "$tmp/q.gguf" -p "Hello" -n 12 --temp 0 -t 2 > "$tmp/cli.out" 2> /dev/null
python3 - "$tmp/gen.out" "$tmp/gen.err" "$tmp/cli.out" <<'PY'
import re, sys
ours = open(sys.argv[1], encoding="utf-8").read().rstrip("\n")
m = re.search(r"generated (\d+) tokens", open(sys.argv[2]).read())
cli = open(sys.argv[3], encoding="utf-8").read().rstrip("\n")
if not m or not 1 <= int(m.group(1)) <= 12:
    sys.exit(f"simple_generate: bad token count: {open(sys.argv[2]).read()!r}")
if "Hello" + ours != cli:
    sys.exit(f"simple_generate: {('Hello' + ours)!r} != mllm run {cli!r}")
print(f"simple_generate (synth qwen3): {m.group(1)} tokens, text identical to mllm run")
PY
if [ $have_stories = 1 ]; then
    "$ex/simple_generate" "$stories/stories260K.bin" "Once upon a time" 60 "$stories/tok512.bin" \
        > "$tmp/st.out" 2> "$tmp/st.err" || { cat "$tmp/st.err"; exit 1; }
    python3 - "$stories/stories260K_golden.json" "$tmp/st.out" "$tmp/st.err" <<'PY'
import json, sys
run = next(r for r in json.load(open(sys.argv[1]))["runs"] if r["prompt"] == "Once upon a time")
ours = "Once upon a time" + open(sys.argv[2], encoding="utf-8").read().rstrip("\n")
if ours.strip() != run["text"].strip():
    sys.exit(f"simple_generate stories260K:\n ours   {ours!r}\n golden {run['text']!r}")
if "generated 60 tokens" not in open(sys.argv[3]).read():
    sys.exit("simple_generate stories260K: expected 60 tokens: " + open(sys.argv[3]).read())
print("simple_generate (stories260K): 60 tokens, identical to the llama2.c golden")
PY
fi

# chat: the template renders ChatML for the synthetic Qwen3, and the second
# turn reuses the first turn's tokens from the KV cache.
if [[ " $examples " == *" chat "* ]]; then
    "$ex/chat" --render "$tmp/q.gguf" "Hi there" > "$tmp/render.out"
    printf '<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n' > "$tmp/render.want"
    cmp -s "$tmp/render.out" "$tmp/render.want" ||
        { echo "chat --render:"; cat -A "$tmp/render.out"; echo "want:"; cat -A "$tmp/render.want"; exit 1; }
    "$ex/chat" "$tmp/q.gguf" "Hi there" "And again?" > "$tmp/chat.out" 2> "$tmp/chat.err" ||
        { cat "$tmp/chat.err"; exit 1; }
    grep -q '^turn 1: 0 prompt tokens reused' "$tmp/chat.err" &&
        grep -Eq '^turn 2: [1-9][0-9]* prompt tokens reused' "$tmp/chat.err" ||
        { echo "chat: unexpected reuse counts:"; cat "$tmp/chat.err"; exit 1; }
    echo "chat example: ChatML render exact; $(grep '^turn 2' "$tmp/chat.err")"
fi
echo "sdk_install: OK"
