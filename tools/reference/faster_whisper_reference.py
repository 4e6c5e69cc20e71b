#!/usr/bin/env python3
"""Transcripts of a clip by faster-whisper (CTranslate2) on the same
CTranslate2 folder mllm reads, for tests/e2e/transcribe_cli.sh: greedy and
beam 5, with and without timestamps, compute types int8 and float32
(faster-whisper's defaults otherwise: temperature fallback, conditioned on
previous text). pip install faster-whisper.

  faster_whisper_reference.py [--model DIR] [--wav PATH] [--out FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os

import ctranslate2
import faster_whisper
from faster_whisper import WhisperModel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.environ.get("MLLM_WHISPER_TINY_DIR",
                                                      os.path.expanduser("~/.cache/mllm/whisper-tiny.en")))
    ap.add_argument("--wav", default=os.path.join(ROOT, "..", "shared", "models", "audio", "jfk.wav"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "whisper", "jfk_faster_whisper.json"))
    args = ap.parse_args()
    out = {"wav": os.path.basename(args.wav),
           "wav_sha256": hashlib.sha256(open(args.wav, "rb").read()).hexdigest(),
           "faster_whisper": faster_whisper.__version__, "ctranslate2": ctranslate2.__version__, "runs": []}
    for ct in ("int8", "float32"):
        m = WhisperModel(args.model, device="cpu", compute_type=ct, cpu_threads=2)
        for beam in (1, 5):
            for ts in (False, True):
                segs, _ = m.transcribe(args.wav, beam_size=beam, without_timestamps=not ts)
                segs = list(segs)
                run = {"compute_type": ct, "beam_size": beam, "timestamps": ts,
                       "text": "".join(s.text for s in segs).strip(),
                       "segments": [[round(s.start, 2), round(s.end, 2), s.text.strip()] for s in segs]}
                print(run)
                out["runs"].append(run)
    json.dump(out, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
