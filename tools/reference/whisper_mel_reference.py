#!/usr/bin/env python3
"""Reference log-mel spectrograms of ../shared/models/audio/jfk.wav for
tests/unit/test_audio_mel.c, made with transformers' WhisperFeatureExtractor
(its numpy path: no torch needed; pip install transformers numpy).

The extractor pads the 16 kHz mono audio to 30 s (480,000 samples), takes a
400-point periodic-Hann STFT with hop 160 and reflect padding (center), the
power spectrum, a Slaney mel filterbank (0..8 kHz), log10 with a 1e-10 floor,
the last frame dropped (3000 frames), clamp to max - 8, then (x + 4) / 4.

Written to tests/data/whisper/ (small on purpose):
  jfk_mel80.f16     80 x FRAMES80 little-endian f16, row-major (mel, frame):
                    every frame that sees the audio; later frames are the floor
  jfk_mel128.f16    128 x FRAMES128 for frames FIRST128.. (large-v3's 128 bins)
  jfk_mel.json      shapes, the floor value, max, mean of the full 3000-frame
                    arrays, sha256 of the WAV, package versions

  whisper_mel_reference.py [--wav PATH] [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import wave

import numpy as np
import transformers
from transformers import WhisperFeatureExtractor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FRAMES80 = 1104    # jfk.wav is 176,017 samples: frames >= 1102 see only padding
FIRST128, FRAMES128 = 300, 200


def read_wav(path: str) -> np.ndarray:
    with wave.open(path, "rb") as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2 and w.getframerate() == 16000
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return pcm.astype(np.float32) / 32768.0  # what libsndfile's float read gives


def log_mel(audio: np.ndarray, n_mels: int) -> np.ndarray:
    fe = WhisperFeatureExtractor(feature_size=n_mels)
    padded = np.zeros(fe.n_samples, dtype=np.float32)
    padded[: min(len(audio), fe.n_samples)] = audio[: fe.n_samples]
    mel = fe._np_extract_fbank_features(padded[None, :], "cpu")[0]  # the numpy path, whatever is installed
    via_call = fe(audio, sampling_rate=16000, return_tensors="np")["input_features"][0]
    diff = float(np.abs(via_call - mel).max())
    print(f"n_mels {n_mels}: shape {mel.shape}, max |__call__ - numpy path| = {diff:.2e}")
    return mel


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wav", default=os.path.join(ROOT, "..", "shared", "models", "audio", "jfk.wav"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "whisper"))
    args = ap.parse_args()
    audio = read_wav(args.wav)
    os.makedirs(args.out, exist_ok=True)
    meta = {
        "wav": "jfk.wav",
        "wav_sha256": hashlib.sha256(open(args.wav, "rb").read()).hexdigest(),
        "n_samples": int(len(audio)),
        "n_frames": 3000,
        "transformers": transformers.__version__,
        "numpy": np.__version__,
    }
    for n_mels, first, count in ((80, 0, FRAMES80), (128, FIRST128, FRAMES128)):
        mel = log_mel(audio, n_mels)
        floor = float(mel.min())
        assert np.all(mel[:, FRAMES80:] == floor), "frames past the audio should all be the floor"
        part = np.ascontiguousarray(mel[:, first : first + count]).astype("<f2")
        part.tofile(os.path.join(args.out, f"jfk_mel{n_mels}.f16"))
        meta[f"mel{n_mels}"] = {
            "file": f"jfk_mel{n_mels}.f16",
            "n_mels": n_mels,
            "first_frame": first,
            "n_frames_stored": count,
            "floor": floor,
            "max": float(mel.max()),
            "mean": float(mel.astype(np.float64).mean()),
        }
    with open(os.path.join(args.out, "jfk_mel.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(json.dumps(meta, indent=1))


if __name__ == "__main__":
    main()
