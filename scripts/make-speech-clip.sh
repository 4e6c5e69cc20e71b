#!/usr/bin/env bash
# make-speech-clip.sh OUT.wav [JFK.wav]: a deterministic English speech clip
# of about 100 s (16 kHz, mono, 16-bit WAV) for Whisper's long-audio test and
# benchmark (issue #15): espeak-ng (voice en-us, 160 words per minute) reads
# the Gettysburg Address (public domain) paragraph by paragraph, sox joins the
# paragraphs with 0.6 s of silence (no dither: -D) and ends with jfk.wav (../shared's, when
# given or found). The same espeak-ng and sox versions give the same bytes;
# the clip is made at test time, not committed (3 MB).
# Needs espeak-ng and sox (scripts/deps.sh installs both).
set -euo pipefail
out=${1:?usage: make-speech-clip.sh OUT.wav [JFK.wav]}
here=$(cd "$(dirname "$0")" && pwd)
jfk=${2:-$here/../../shared/models/audio/jfk.wav}
for t in espeak-ng sox; do
    command -v "$t" >/dev/null || { echo "make-speech-clip: $t is not installed (scripts/deps.sh)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
paras=(
"Four score and seven years ago our fathers brought forth on this continent, a new nation, conceived in Liberty, and dedicated to the proposition that all men are created equal."
"Now we are engaged in a great civil war, testing whether that nation, or any nation so conceived and so dedicated, can long endure. We are met on a great battle-field of that war. We have come to dedicate a portion of that field, as a final resting place for those who here gave their lives that that nation might live. It is altogether fitting and proper that we should do this."
"But, in a larger sense, we can not dedicate, we can not consecrate, we can not hallow this ground. The brave men, living and dead, who struggled here, have consecrated it, far above our poor power to add or detract. The world will little note, nor long remember what we say here, but it can never forget what they did here."
"It is for us the living, rather, to be dedicated here to the unfinished work which they who fought here have thus far so nobly advanced. It is rather for us to be here dedicated to the great task remaining before us, that from these honored dead we take increased devotion to that cause for which they gave the last full measure of devotion, that we here highly resolve that these dead shall not have died in vain, that this nation, under God, shall have a new birth of freedom, and that government of the people, by the people, for the people, shall not perish from the earth."
)
sox -D -n -r 16000 -c 1 -b 16 "$tmp/gap.wav" trim 0 0.6
parts=()
for i in "${!paras[@]}"; do
    espeak-ng -v en-us -s 160 -w "$tmp/p$i.raw.wav" "${paras[$i]}"
    sox -D "$tmp/p$i.raw.wav" -r 16000 -c 1 -b 16 "$tmp/p$i.wav"
    parts+=("$tmp/p$i.wav" "$tmp/gap.wav")
done
[ -f "$jfk" ] && parts+=("$jfk")
sox -D "${parts[@]}" -r 16000 -c 1 -b 16 "$out"
soxi -D "$out" >&2
