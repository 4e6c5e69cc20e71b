#!/usr/bin/env python3
"""faster-whisper's words on espeak-ng clips made at run time, for
tests/e2e/transcribe_espeak.sh (issue #40 item 1).

Each clip is a sentence read by espeak-ng (voices en-us and en-gb, 130-180
words per minute) and resampled to 16 kHz by sox without dither (-D), so the
same espeak-ng and sox versions give the same samples; the clips are not
committed, only their recipe and faster-whisper's transcripts (tiny.en,
greedy, without timestamps, faster-whisper's other defaults; float32 and
int8) and the highest temperature the fallback reached (above 0 it
sampled: such words change from run to run and are no reference). The
test regenerates the clips marked "ci" and checks mllm's f32 words against
float32's; for those clips "float32_data" also keeps faster-whisper's
log-mel (per-frame sums) and float32's tokens, which
tests/unit/test_whisper_espeak.c checks.

Each clip is transcribed greedy ("float32", "int8") and with beam 5
("beam5": the same keys); faster-whisper is the deciding reference
(transformers needs torch, which this venv lacks).

With --mllm BIN, also transcribes every clip with `BIN transcribe --weights
f32|f16|q8_0` (greedy and --beam 5) and writes the check matrix to
--matrix (tests/data/whisper/espeak_matrix.json): per search, on every clip
where faster-whisper float32 did not fall back to sampling, mllm f32's words
must equal float32's, and mllm q8_0's word error rate against float32,
summed over those clips, must be at most int8's. Exit 1 if either fails.

  pip install faster-whisper
  whisper_espeak_reference.py [--model DIR] [--out FILE] [--mllm BIN] [--matrix FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile

import ctranslate2
import faster_whisper
from faster_whisper import WhisperModel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# (voice, words per minute, sentence); the first is issue #40's clip.
CLIPS = [
    ("en-us", 150, "The five boxing wizards jump quickly over the old wooden fence."),
    ("en-us", 150, "The quick brown fox jumps over the lazy dog."),
    ("en-gb", 140, "She sells sea shells by the sea shore every summer morning."),
    ("en-us", 170, "Please call Stella and ask her to bring these things with her from the store."),
    ("en-gb", 160, "The birch canoe slid on the smooth planks."),
    ("en-us", 130, "Glue the sheet to the dark blue background."),
    ("en-gb", 180, "It is easy to tell the depth of a well."),
    ("en-us", 160, "These days a chicken leg is a rare dish."),
    ("en-gb", 130, "Rice is often served in round bowls."),
    ("en-us", 180, "The juice of lemons makes fine punch."),
    ("en-gb", 150, "The box was thrown beside the parked truck."),
    ("en-us", 140, "Four hours of steady work faced us."),
    ("en-gb", 170, "A large size in stockings is hard to sell."),
    ("en-us", 165, "The boy was there when the sun rose."),
    ("en-gb", 145, "A rod is used to catch pink salmon."),
    ("en-us", 135, "The source of the huge river is the clear spring."),
    ("en-gb", 155, "Open the window and let the fresh air into the room."),
    ("en-us", 145, "We will meet at the train station at seven in the evening."),
    ("en-gb", 135, "My brother bought a new bicycle last week."),
    ("en-us", 175, "The children played football in the park until it got dark."),
    ("en-gb", 165, "Turn left at the next corner and walk to the end of the street."),
    ("en-us", 155, "Water boils at one hundred degrees."),
]
# regenerated and transcribed by the CI test (a few seconds each)
CI = {0, 2, 9}


def tool_version(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[0]


def make_clip(voice: str, wpm: int, text: str, tmp: str, name: str) -> str:
    raw, wav = os.path.join(tmp, name + ".raw.wav"), os.path.join(tmp, name + ".wav")
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(wpm), "-w", raw, text], check=True)
    subprocess.run(["sox", "-D", raw, "-r", "16000", "-c", "1", "-b", "16", wav], check=True)
    return wav


SEARCHES = {"greedy": 1, "beam5": 5}
WEIGHTS = ("f32", "f16", "q8_0")


def fw_text(model: WhisperModel, wav: str, beam: int = 1) -> tuple[str, float]:
    """The transcript and the highest temperature a window needed: above 0
    the temperature fallback sampled, and the words change from run to run."""
    segs = list(model.transcribe(wav, beam_size=beam, without_timestamps=True)[0])
    return "".join(s.text for s in segs).strip(), max(s.temperature for s in segs)


def ci_data(model: WhisperModel, wav: str) -> dict:
    """What test_whisper_espeak checks on a CI clip: faster-whisper's log-mel
    of the clip's content frames (each frame's sum over the mel bins, and
    the largest value) and float32's text tokens, greedy and beam 5."""
    audio = faster_whisper.decode_audio(wav)
    feats = model.feature_extractor(audio)
    content = feats.shape[-1] - 1  # as transcribe() slices it
    out = {"n_samples": len(audio), "mel_frames": content,
           "mel_frame_sums": [round(float(v), 4) for v in feats[:, :content].astype("float64").sum(axis=0)],
           "mel_max": round(float(feats[:, :content].max()), 6)}
    for name, beam in SEARCHES.items():
        segs = list(model.transcribe(wav, beam_size=beam, without_timestamps=True)[0])
        out["tokens_" + name] = [t for s in segs for t in s.tokens]
    return out


def mllm_text(binary: str, model: str, wav: str, weights: str = "f32", beam: int = 1) -> str:
    r = subprocess.run([binary, "transcribe", "-q", "-m", model, "--weights", weights, "-t", "2",
                        "--beam", str(beam), wav], capture_output=True, text=True, check=True)
    return r.stdout.strip()


def words(text: str) -> list[str]:
    """Lower case, punctuation dropped (hyphens split words)."""
    return "".join(c if c.isalnum() or c in " '" else " " for c in text.lower()).split()


def edits(ref: list[str], hyp: list[str]) -> int:
    """Word-level Levenshtein distance."""
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def matrix(clips: list[dict]) -> tuple[dict, bool]:
    """Per search: the clips where faster-whisper float32 stayed at
    temperature 0, mllm f32's word mismatches there, and each
    implementation's aggregate word error rate against float32."""
    out, ok = {}, True
    for name in SEARCHES:
        runs = [c[name] for c in clips if c[name]["temperature_float32"] == 0]
        ref_words = sum(len(words(r["float32"])) for r in runs)
        wer = {k: sum(edits(words(r["float32"]), words(r[k])) for r in runs) / ref_words
               for k in ("int8",) + tuple("mllm_" + w for w in WEIGHTS)}
        differ = [i for i, c in enumerate(clips) if c[name]["temperature_float32"] == 0
                  and words(c[name]["mllm_f32"]) != words(c[name]["float32"])]
        passed = not differ and wer["mllm_q8_0"] <= wer["int8"]
        ok = ok and passed
        out[name] = {"deterministic_clips": len(runs), "reference_words": ref_words,
                     "mllm_f32_words_differ_on": differ, "wer_vs_fw_float32": {k: round(v, 4) for k, v in wer.items()},
                     "passed": passed}
    return out, ok


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.environ.get("MLLM_WHISPER_TINY_DIR",
                                                      os.path.expanduser("~/.cache/mllm/whisper-tiny.en")))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "whisper", "espeak_words.json"))
    ap.add_argument("--mllm", help="an mllm binary to compare")
    ap.add_argument("--matrix", default=os.path.join(ROOT, "tests", "data", "whisper", "espeak_matrix.json"))
    args = ap.parse_args()
    models = {ct: WhisperModel(args.model, device="cpu", compute_type=ct, cpu_threads=2) for ct in ("float32", "int8")}
    # the version, without where its data is installed
    out = {"espeak_ng": tool_version(["espeak-ng", "--version"]).split("Data at")[0].strip(), "sox": tool_version(["sox", "--version"]),
           "faster_whisper": faster_whisper.__version__, "ctranslate2": ctranslate2.__version__,
           "model": os.path.basename(os.path.normpath(args.model)),
           "options": "without_timestamps=True, faster-whisper's other defaults; greedy (beam_size=1) at a clip's top level, beam_size=5 under beam5",
           "recipe": "espeak-ng -v VOICE -s WPM -w raw.wav TEXT; sox -D raw.wav -r 16000 -c 1 -b 16 clip.wav",
           "clips": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (voice, wpm, text) in enumerate(CLIPS):
            wav = make_clip(voice, wpm, text, tmp, f"c{i}")
            clip = {"voice": voice, "wpm": wpm, "text": text, "ci": i in CI}
            if i in CI:
                clip["float32_data"] = ci_data(models["float32"], wav)
            for name, beam in SEARCHES.items():
                f32, t32 = fw_text(models["float32"], wav, beam)
                i8, t8 = fw_text(models["int8"], wav, beam)
                run = {"float32": f32, "int8": i8, "temperature_float32": t32, "temperature_int8": t8}
                line = f"{i:2d} {voice} {wpm} {name} f32: {f32!r}" + ("" if t32 == 0 else f" (sampled, T={t32})")
                if i8 != f32:
                    line += f" | int8: {i8!r}"
                if args.mllm:
                    for w in WEIGHTS:
                        run["mllm_" + w] = got = mllm_text(args.mllm, args.model, wav, w, beam)
                        line += f" | mllm {w} " + ("same" if got == f32 else repr(got))
                print(line, flush=True)
                if name == "greedy":  # the CI test's keys
                    clip.update(run)
                else:
                    clip[name] = {k: v for k, v in run.items() if not k.startswith("mllm_")}
                # sampled words are no reference; the CI clips must not be sampled
                assert (t32 == 0 and t8 == 0) or i not in CI or name != "greedy", f"clip {i} fell back to sampling"
                clip.setdefault("_runs", {})[name] = run
            out["clips"].append(clip)
    runs = [c.pop("_runs") for c in out["clips"]]
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    if args.mllm:
        res, ok = matrix(runs)
        mx = {k: out[k] for k in ("espeak_ng", "sox", "faster_whisper", "ctranslate2", "model", "recipe")}
        mx["options"] = "without timestamps, 2 threads, each implementation's defaults (temperature fallback on)"
        mx["reference"] = "faster-whisper float32 (transformers needs torch, not installed)"
        mx["results"] = res
        mx["clips"] = [dict(voice=c["voice"], wpm=c["wpm"], text=c["text"], **r) for c, r in zip(out["clips"], runs)]
        with open(args.matrix, "w") as f:
            json.dump(mx, f, indent=1)
            f.write("\n")
        print(json.dumps(res, indent=1))
        raise SystemExit(0 if ok else 1)

if __name__ == "__main__":
    main()
