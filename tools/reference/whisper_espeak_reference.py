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
float32's.

With --mllm BIN, also transcribes every clip with `BIN transcribe
--weights f32` and prints where mllm's words differ (exit 1 if any clip
where faster-whisper's precisions agree differs).

  pip install faster-whisper
  whisper_espeak_reference.py [--model DIR] [--out FILE] [--mllm BIN]
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


def fw_text(model: WhisperModel, wav: str) -> tuple[str, float]:
    """The transcript and the highest temperature a window needed: above 0
    the temperature fallback sampled, and the words change from run to run."""
    segs = list(model.transcribe(wav, beam_size=1, without_timestamps=True)[0])
    return "".join(s.text for s in segs).strip(), max(s.temperature for s in segs)


def mllm_text(binary: str, model: str, wav: str) -> str:
    r = subprocess.run([binary, "transcribe", "-q", "-m", model, "--weights", "f32", "-t", "2", wav],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.environ.get("MLLM_WHISPER_TINY_DIR",
                                                      os.path.expanduser("~/.cache/mllm/whisper-tiny.en")))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "whisper", "espeak_words.json"))
    ap.add_argument("--mllm", help="an mllm binary to compare")
    args = ap.parse_args()
    models = {ct: WhisperModel(args.model, device="cpu", compute_type=ct, cpu_threads=2) for ct in ("float32", "int8")}
    # the version, without where its data is installed
    out = {"espeak_ng": tool_version(["espeak-ng", "--version"]).split("Data at")[0].strip(), "sox": tool_version(["sox", "--version"]),
           "faster_whisper": faster_whisper.__version__, "ctranslate2": ctranslate2.__version__,
           "model": os.path.basename(os.path.normpath(args.model)),
           "options": "greedy (beam_size=1), without_timestamps=True, faster-whisper's other defaults",
           "recipe": "espeak-ng -v VOICE -s WPM -w raw.wav TEXT; sox -D raw.wav -r 16000 -c 1 -b 16 clip.wav",
           "clips": []}
    bad = compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (voice, wpm, text) in enumerate(CLIPS):
            wav = make_clip(voice, wpm, text, tmp, f"c{i}")
            f32, t32 = fw_text(models["float32"], wav)
            i8, t8 = fw_text(models["int8"], wav)
            clip = {"voice": voice, "wpm": wpm, "text": text, "ci": i in CI, "float32": f32, "int8": i8,
                    "temperature_float32": t32, "temperature_int8": t8}
            # sampled words are no reference; the CI clips must not be sampled
            greedy = t32 == 0 and t8 == 0
            assert greedy or i not in CI, f"clip {i} fell back to sampling"
            line = f"{i:2d} {voice} {wpm} f32: {f32!r}" + ("" if greedy else f" (sampled, T={t32}/{t8})")
            if i8 != f32:
                line += f" | int8: {i8!r}"
            if args.mllm:
                got = mllm_text(args.mllm, args.model, wav)
                same = got == f32
                line += " | mllm " + ("same" if same else f"DIFFERS: {got!r}")
                compared += greedy and i8 == f32
                bad += not same and greedy and i8 == f32
            print(line, flush=True)
            out["clips"].append(clip)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    if args.mllm:
        print(f"mllm f32 differs from faster-whisper float32 on {bad} of the {compared} clips where float32 and "
              "int8 agree at temperature 0")
        raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
