#!/usr/bin/env python3
"""jfk.wav end to end, 2 threads: `mllm transcribe` (a process per run, load
included, as the CLI is used) against faster-whisper (model loaded once,
transcribe() timed, the way its own benchmarks time it), alternating the two
so both see the same machine load. Prints a markdown table for
bench/RESULTS.md. pip install faster-whisper.

  bench/whisper_vs_faster_whisper.py [--mllm build/release/mllm] [--model DIR] [--wav PATH] [-r 3]
"""
import argparse, os, re, statistics, subprocess, time

ap = argparse.ArgumentParser()
ap.add_argument("--mllm", default="build/release/mllm")
ap.add_argument("--model", default=os.environ.get("MLLM_WHISPER_TINY_DIR", os.path.expanduser("~/.cache/mllm/whisper-tiny.en")))
ap.add_argument("--wav", default="../shared/models/audio/jfk.wav")
ap.add_argument("-r", type=int, default=3)
a = ap.parse_args()
from faster_whisper import WhisperModel

fw = {ct: WhisperModel(a.model, device="cpu", compute_type=ct, cpu_threads=2) for ct in ("int8", "float32")}
rows = []
for beam in (1, 5):
    res = {}
    for _ in range(a.r):
        for ct, m in fw.items():
            t = time.perf_counter()
            segs, _ = m.transcribe(a.wav, beam_size=beam)
            text = "".join(s.text for s in segs).strip()
            res.setdefault(f"faster-whisper {ct}", []).append((time.perf_counter() - t, text, None))
        for wt in ("f16", "q8_0"):
            t = time.perf_counter()
            p = subprocess.run([a.mllm, "transcribe", "-m", a.model, a.wav, "-t", "2", "--beam", str(beam), "--timestamps",
                                "--weights", wt], capture_output=True, text=True, check=True)
            el = time.perf_counter() - t
            enc = re.search(r"encoder ([0-9.]+) s, decoder ([0-9.]+) s", p.stderr)
            text = " ".join(l.strip() for l in p.stdout.splitlines())
            res.setdefault(f"mllm {wt}", []).append((el, text, enc.groups() if enc else None))
    for k, v in res.items():
        ts = [x[0] for x in v]
        extra = f"enc {v[0][2][0]} s, dec {v[0][2][1]} s" if v[0][2] else ""
        rows.append(f"| {k} | {beam} | {statistics.median(ts):.2f} | {min(ts):.2f} | {extra} | {v[-1][1]} |")
print("| engine | beam | median s | best s | mllm split (last run) | transcript |")
print("|---|---:|---:|---:|---|---|")
print("\n".join(rows))
