#!/usr/bin/env python3
"""mllm transcribe vs faster-whisper, 2 threads, greedy and beam 5, on
jfk.wav and a long clip (scripts/make-speech-clip.sh: about 100 s, made
here when espeak-ng and sox are installed). Runs alternate engine by engine
inside every repetition so all see the same machine load; medians are
reported. mllm: a process per run (`mllm transcribe -t 2 --timestamps --beam N
--weights T`), timed as a whole ("process", model load included) and by its
own timing line without the load ("transcribe"). faster-whisper: model loaded
once, transcribe() timed (timestamps on, its defaults otherwise). Words are
compared with faster-whisper int8's transcript (word error rate, lowercase,
punctuation dropped). Prints a markdown table for bench/RESULTS.md.
pip install faster-whisper.

  bench/whisper_vs_faster_whisper.py [--mllm build/release/mllm] [--model DIR]
      [--wav PATH ...] [-r 5] [--weights f16,q8_0,q4_0] [--json OUT]
      [--also LABEL=PATH ...] [--fw-types int8[,float32]]
--also adds another mllm binary (a build from before a change, say) as an
engine of its own, run with the same --weights inside every repetition, so
before and after see the same machine load.
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser()
ap.add_argument("--mllm", default=os.path.join(ROOT, "build/release/mllm"))
ap.add_argument("--model", default=os.environ.get("MLLM_WHISPER_TINY_DIR", os.path.expanduser("~/.cache/mllm/whisper-tiny.en")))
ap.add_argument("--wav", nargs="*")
ap.add_argument("-r", type=int, default=5)
ap.add_argument("--weights", default="f16,q8_0,q4_0")
ap.add_argument("--beams", default="1,5")
ap.add_argument("--json")
ap.add_argument("--also", nargs="*", default=[], help="LABEL=PATH: another mllm binary to time alongside")
ap.add_argument("--fw-types", default="int8,float32", help="faster-whisper compute types to run (int8 is the reference)")
a = ap.parse_args()
bins = [("mllm", a.mllm)] + [tuple(x.split("=", 1)) for x in a.also]
from faster_whisper import WhisperModel

wavs = a.wav
if not wavs:
    wavs = [os.path.join(ROOT, "..", "shared", "models", "audio", "jfk.wav")]
    long = os.path.join(tempfile.gettempdir(), "mllm_speech_clip.wav")
    if os.path.exists(long) or subprocess.run([os.path.join(ROOT, "scripts/make-speech-clip.sh"), long]).returncode == 0:
        wavs.append(long)


def words(t):
    return re.sub(r"[^a-z0-9' ]", " ", t.lower()).split()


def wer(ref, hyp):
    r, h = words(ref), words(hyp)
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
            prev, d[j] = d[j], cur
    return d[len(h)] / max(1, len(r))


fw = {}
for ct in a.fw_types.split(","):
    t = time.perf_counter()
    fw[ct] = WhisperModel(a.model, device="cpu", compute_type=ct, cpu_threads=2)
    print(f"faster-whisper {ct}: load {time.perf_counter() - t:.2f} s", file=sys.stderr)
rows, dump = [], []
for wav in wavs:
    for beam in [int(b) for b in a.beams.split(",")]:
        res = {}
        for rep in range(a.r):
            for ct, m in fw.items():
                t = time.perf_counter()
                segs, _ = m.transcribe(wav, beam_size=beam)
                text = "".join(s.text for s in segs).strip()
                el = time.perf_counter() - t
                res.setdefault(f"faster-whisper {ct}", []).append((el, el, text))
            for (label, exe), wt in [(b, w) for w in a.weights.split(",") for b in bins]:
                t = time.perf_counter()
                p = subprocess.run([exe, "transcribe", "-m", a.model, wav, "-t", "2", "--beam", str(beam), "--timestamps",
                                    "--weights", wt], capture_output=True, text=True, check=True)
                el = time.perf_counter() - t
                ld = re.search(r"load ([0-9.]+) s", p.stderr)
                tot = re.search(r"total ([0-9.]+) s", p.stderr)
                tr = float(tot.group(1)) - float(ld.group(1)) if ld and tot else el
                text = " ".join(l.strip() for l in p.stdout.splitlines())
                res.setdefault(f"{label} {wt}", []).append((el, tr, text))
            print(f"{os.path.basename(wav)} beam {beam} rep {rep + 1}/{a.r} done", file=sys.stderr)
        ref = res["faster-whisper int8"][-1][2]
        base = statistics.median(x[1] for x in res["faster-whisper int8"])
        for k, v in res.items():
            proc = statistics.median(x[0] for x in v)
            tr = statistics.median(x[1] for x in v)
            text = v[-1][2]
            same = "=" if text == ref else f"WER {100 * wer(ref, text):.1f} %"
            rows.append(f"| {os.path.basename(wav)} | {beam} | {k} | {proc:.2f} | {tr:.2f} | {min(x[1] for x in v):.2f} | "
                        f"{base / tr:.2f} | {same} |")
            dump.append({"wav": os.path.basename(wav), "beam": beam, "engine": k, "runs": [x[:2] for x in v], "text": text})
print("| clip | beam | engine | process s | transcribe s | best s | fw int8 / this | words vs fw int8 |")
print("|---|---:|---|---:|---:|---:|---:|---|")
print("\n".join(rows))
if a.json:
    json.dump(dump, open(a.json, "w"), indent=1)
