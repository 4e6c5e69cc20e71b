#!/usr/bin/env python3
"""Language detection by faster-whisper (CTranslate2) on Whisper base, the
multilingual CTranslate2 folder mllm reads (scripts/fetch-whisper.sh
whisper-base), for tests/e2e/transcribe_language.sh: the detected language
and its probability (WhisperModel.detect_language, and transcribe()'s
info.language / language_probability with language=None), compute type
float32, on jfk.wav and on clips spoken by espeak-ng and resampled to
16 kHz by sox (the same command lines the test runs, so no resampler
differs; their sha256 is recorded, so a different espeak-ng or sox build
is noticed and skipped rather than compared). Two front ends:
faster-whisper's own (it pads the log-mel of a short clip with zeros,
where openai-whisper and transformers pad the audio), and transformers'
WhisperFeatureExtractor, the one src/audio/mel.c follows, fed to the same
CTranslate2 model ("hf_features"); and faster-whisper's log-mel cut to the
frames transcribe() decodes, the content frames, padded with 0.0
("content_frames": what mllm must match closely, since mllm detects on
the window it decodes; detect_language sees one frame more).
pip install faster-whisper transformers.

  whisper_lang_reference.py [--model DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import tempfile

import ctranslate2
import faster_whisper
from faster_whisper import WhisperModel
from transformers import WhisperFeatureExtractor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# name -> espeak-ng voice and text (the test speaks the same)
CLIPS = {
    "fr": ("fr", "Bonjour à tous. Aujourd'hui nous allons parler de la météo et du voyage en train vers Paris."),
    "de": ("de", "Guten Morgen. Heute sprechen wir über das Wetter und die Reise mit dem Zug nach Berlin."),
    "es": ("es", "Buenos días a todos. Hoy vamos a hablar del tiempo y del viaje en tren a Madrid."),
}


def sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.environ.get("MLLM_WHISPER_BASE_DIR",
                                                      os.path.expanduser("~/.cache/mllm/whisper-base")))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "whisper", "lang_base.json"))
    a = ap.parse_args()
    m = WhisperModel(a.model, device="cpu", compute_type="float32", cpu_threads=2)
    fe = WhisperFeatureExtractor(feature_size=80)
    tmp = tempfile.mkdtemp()
    clips = {"jfk": (None, None, os.path.join(ROOT, "..", "shared", "models", "audio", "jfk.wav"))}
    for name, (voice, text) in CLIPS.items():
        path = os.path.join(tmp, name + ".wav")
        raw = os.path.join(tmp, name + "-22k.wav")
        subprocess.run(["espeak-ng", "-v", voice, "-w", raw, text], check=True)
        subprocess.run(["sox", "-R", "-D", raw, "-r", "16000", path], check=True)  # no dither: repeatable
        clips[name] = (voice, text, path)
    out = {"faster_whisper": faster_whisper.__version__, "ctranslate2": ctranslate2.__version__,
           "espeak_ng": subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True).stdout.strip(),
           "sox": subprocess.run(["sox", "--version"], capture_output=True, text=True).stdout.strip(),
           "compute_type": "float32", "clips": {}}
    for name, (voice, text, path) in clips.items():
        audio = faster_whisper.decode_audio(path)
        lang, prob, _ = m.detect_language(audio)
        # transcribe() decodes the window's content frames (one fewer than
        # detect_language sees: the frame whose window reaches past the
        # audio) padded with 0.0; mllm detects on that window too
        feats_fw = m.feature_extractor(audio)
        cf_lang, cf_prob, _ = m.detect_language(features=feats_fw[:, : feats_fw.shape[-1] - 1])
        feats = fe(audio, sampling_rate=16000, return_tensors="np").input_features[0]
        hf_lang, hf_prob, _ = m.detect_language(features=feats)
        segs, info = m.transcribe(path, beam_size=1, language=None)
        transcript = "".join(s.text for s in segs).strip()
        out["clips"][name] = {"voice": voice, "text": text, "wav_sha256": sha256(path), "language": lang,
                              "probability": round(float(prob), 6), "hf_features_language": hf_lang,
                              "hf_features_probability": round(float(hf_prob), 6),
                              "content_frames_language": cf_lang,
                              "content_frames_probability": round(float(cf_prob), 6),
                              "transcribe_language": info.language,
                              "transcribe_probability": round(float(info.language_probability), 6),
                              "greedy_transcript": transcript}
        print(name, lang, prob, hf_lang, hf_prob, cf_lang, cf_prob, info.language, info.language_probability, transcript)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
