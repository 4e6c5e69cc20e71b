"""/v1/audio/transcriptions through the official `openai` client, on a
server of Whisper tiny.en ($MLLM_WHISPER_TINY_DIR): jfk.wav in json, text,
srt, vtt and verbose_json gives the words of "And so my fellow Americans,
ask not ..." and exactly the segments (text, times) of `mllm transcribe
--timestamps -o json` (the same decoder options: greedy, temperature
fallback); a prompt, a language and a temperature are accepted; unknown,
repeated or malformed fields, a missing file, audio that is no audio, a
JSON body, an upload over --max-upload and chat/embeddings requests are
refused with the right status and the field named. With
$MLLM_WHISPER_BASE_DIR, verbose_json reports the language detected on
jfk.wav as CTranslate2 does on the same log-mel
(tests/data/whisper/lang_base.json), and /v1/audio/translations answers.
Args: mllm binary, shared dir, build dir. Loopback only."""
import io
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check, import_openai  # noqa: E402

WANT = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."


def words(s):
    return re.sub(r"[^a-z ]", "", s.lower()).split()


def multipart(fields, boundary="XyZ0123"):
    """A multipart/form-data body by hand: [(name, value bytes, filename or None)]."""
    out = b""
    for name, value, fn in fields:
        out += b"--" + boundary.encode() + b"\r\n"
        out += b'Content-Disposition: form-data; name="' + name.encode() + b'"'
        if fn:
            out += b'; filename="' + fn.encode() + b'"\r\nContent-Type: application/octet-stream'
        out += b"\r\n\r\n" + value + b"\r\n"
    out += b"--" + boundary.encode() + b"--\r\n"
    return out, {"Content-Type": "multipart/form-data; boundary=" + boundary}


def tiny_checks(openai, mllm, model_dir, wav, work):
    cli = json.loads(subprocess.run([mllm, "transcribe", "-q", "-m", model_dir, wav, "-t", "2", "--timestamps", "-o",
                                     "json"], check=True, capture_output=True, text=True).stdout)
    cli_segs = [(round(s["start"], 2), round(s["end"], 2), s["text"]) for s in cli["segments"]]
    audio = open(wav, "rb").read()
    s = srvtest.Server(mllm, model_dir, "-t", "2", "--max-upload", str(len(audio) + 4096), alias="whisper-tiny.en")
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="none", max_retries=0, timeout=600)
        r = client.audio.transcriptions.create(model="whisper-1", file=open(wav, "rb"))
        check(words(r.text) == words(WANT), "json text %r" % r.text)
        check(r.text == cli["text"], "json text = mllm transcribe's: %r vs %r" % (r.text, cli["text"]))
        print("ok   json: %r" % r.text)
        t = client.audio.transcriptions.create(model="whisper-1", file=open(wav, "rb"), response_format="text")
        check(isinstance(t, str) and t.strip() == r.text, "text format %r" % t)
        print("ok   text")
        v = client.audio.transcriptions.create(model="whisper-1", file=open(wav, "rb"), response_format="verbose_json")
        vs = [(round(g.start, 2), round(g.end, 2), g.text) for g in v.segments]
        check(vs == cli_segs, "verbose_json segments %r vs mllm transcribe %r" % (vs, cli_segs))
        check(v.language == "english" and abs(v.duration - 11.0) < 0.01 and v.text == r.text, "verbose_json %r" % v)
        check(all(g.tokens and g.seek == 0 and g.temperature == 0 for g in v.segments), "segment fields")
        print("ok   verbose_json: %d segments = mllm transcribe's %r" % (len(vs), cli_segs))
        srt = client.audio.transcriptions.create(model="whisper-1", file=open(wav, "rb"), response_format="srt")
        blocks = [b.split("\n") for b in srt.strip().split("\n\n")]
        check(len(blocks) == len(cli_segs), "srt blocks %r" % srt)
        for i, (b, (st, en, tx)) in enumerate(zip(blocks, cli_segs)):
            m = re.fullmatch(r"(\d\d):(\d\d):(\d\d),(\d{3}) --> (\d\d):(\d\d):(\d\d),(\d{3})", b[1])
            check(b[0] == str(i + 1) and m and b[2] == tx.strip(), "srt block %r" % b)
            g = [int(x) for x in m.groups()]
            check(abs(g[0] * 3600 + g[1] * 60 + g[2] + g[3] / 1000 - st) < 0.006 and
                  abs(g[4] * 3600 + g[5] * 60 + g[6] + g[7] / 1000 - en) < 0.006, "srt times %r" % b)
        vtt = client.audio.transcriptions.create(model="whisper-1", file=open(wav, "rb"), response_format="vtt")
        check(vtt.startswith("WEBVTT\n\n") and vtt.count(" --> ") == len(cli_segs) and "00:00:00.000 --> " in vtt,
              "vtt %r" % vtt)
        print("ok   srt, vtt")
        # accepted fields: language, prompt, temperature, timestamp granularity "segment"
        p = client.audio.transcriptions.create(model="whisper-1", file=("clip.wav", audio, "audio/wav"), language="en",
                                               prompt="President Kennedy's inaugural address.", temperature=0.0,
                                               timestamp_granularities=["segment"], response_format="verbose_json")
        check(words(p.text)[:3] == ["and", "so", "my"] and words(p.text)[-3:] == ["for", "your", "country"],
              "with a prompt: %r" % p.text)
        print("ok   language, prompt, temperature, timestamp_granularities: %r" % p.text)
        # refusals, each naming its field
        def refused(fields, status, param, what, headers=None, body=None):
            b, h = multipart(fields)
            st, err = s.json("POST", "/v1/audio/transcriptions", body if body is not None else b, headers or h)
            check(st == status and "error" in err and err["error"].get("param") == param,
                  "%s -> %d %r" % (what, st, err))
        f = ("file", audio, "jfk.wav")
        refused([f, ("foo", b"1", None)], 400, "foo", "unknown field")
        refused([f, ("model", b"a", None), ("model", b"b", None)], 400, "model", "a field twice")
        refused([("model", b"whisper-1", None)], 400, "file", "no file")
        refused([("file", audio, None)], 400, "file", "file without a filename")
        refused([f, ("response_format", b"docx", None)], 400, "response_format", "bad response_format")
        refused([f, ("temperature", b"2", None)], 400, "temperature", "temperature 2")
        refused([f, ("temperature", b"warm", None)], 400, "temperature", "temperature not a number")
        refused([f, ("language", b"de", None)], 400, "language", "German on an English-only model")
        refused([f, ("prompt", b"\xff\xfe", None)], 400, "prompt", "prompt not UTF-8")
        refused([f, ("timestamp_granularities[]", b"word", None)], 400, "timestamp_granularities[]", "word timestamps")
        refused([("file", b"RIFF\x10\x00\x00\x00WAVEjunk", "bad.wav")], 400, "file", "a broken WAV")
        refused([("file", b"hello, not audio", "a.txt")], 400, "file", "text as audio")
        st, err = s.json("POST", "/v1/audio/transcriptions", {"file": "jfk.wav"})
        check(st == 415, "a JSON body -> %d %r" % (st, err))
        b, h = multipart([f])
        st, err = s.json("POST", "/v1/audio/transcriptions", b"--XyZ0123\r\nno end", h)
        check(st == 400 and err["error"]["code"] == "invalid_multipart", "a cut body -> %d %r" % (st, err))
        big, h = multipart([("file", audio + b"\0" * 8192, "big.wav")])
        st, err = s.json("POST", "/v1/audio/transcriptions", big, h)
        check(st == 413, "over --max-upload -> %d %r" % (st, err))
        print("ok   refusals: unknown/repeated/malformed fields, no file, bad audio, JSON body, cut body, 413")
        try:
            client.audio.translations.create(model="whisper-1", file=open(wav, "rb"))
            check(False, "translating with an English-only model must fail")
        except openai.BadRequestError as ex:
            check("English-only" in str(ex), "translation error: %s" % ex)
        for call in (lambda: client.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}]),
                     lambda: client.embeddings.create(model="x", input="hi")):
            try:
                call()
                check(False, "chat/embeddings on a Whisper server must fail")
            except openai.BadRequestError as ex:
                check("speech-to-text model" in str(ex), "error: %s" % ex)
        st, h = s.json("GET", "/health")
        check(st == 200 and h["slots_total"] == 0, "/health %r" % h)
        print("ok   chat, embeddings, translations on tiny.en -> 400; /health")
        check(s.stop() == 0, "exit code after SIGTERM")
    finally:
        s.close()


def base_checks(openai, mllm, model_dir, wav):
    ref = json.load(open(os.path.join(HERE, "..", "data", "whisper", "lang_base.json"), encoding="utf-8"))["clips"]["jfk"]
    s = srvtest.Server(mllm, model_dir, "-t", "2", alias="whisper-base")
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="none", max_retries=0, timeout=600)
        v = client.audio.transcriptions.create(model="whisper-1", file=open(wav, "rb"), response_format="verbose_json")
        prob = v.model_extra.get("language_probability")
        check(v.language == "english" and ref["hf_features_language"] == "en", "detected %r" % v.language)
        # faster-whisper's detection: the same log-mel front end (issue #40 item 1)
        check(abs(prob - ref["content_frames_probability"]) < 0.005,
              "probability %.4f vs faster-whisper's %.4f" % (prob, ref["content_frames_probability"]))
        check(words(v.text) == words(WANT), "base text %r" % v.text)
        print("ok   whisper-base: detected english p %.4f (faster-whisper %.4f): %r" % (
            prob, ref["content_frames_probability"], v.text))
        tr = client.audio.translations.create(model="whisper-1", file=open(wav, "rb"), response_format="verbose_json")
        check(tr.task == "translate" and words(tr.text)[:4] == ["and", "so", "my", "fellow"], "translation %r" % tr)
        print("ok   /v1/audio/translations: %r" % tr.text)
        check(s.stop() == 0, "exit code after SIGTERM")
    finally:
        s.close()


def long_wav(wav, times):
    """jfk.wav repeated: a long upload of many 30-s windows."""
    import wave
    with wave.open(wav, "rb") as w:
        params, frames = w.getparams(), w.readframes(w.getnframes())
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setparams(params)
        w.writeframes(frames * times)
    return out.getvalue()


def post_audio(port, audio, timeout=300):
    """POSTs a transcription on a raw connection; (status, or 0 when the
    connection ended without one, seconds)."""
    import socket
    import time
    body, headers = multipart([("model", b"whisper-1", None), ("file", audio, "long.wav")])
    ctype = headers["Content-Type"]
    sk = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sk.sendall(b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n"
               b"Content-Length: %d\r\n\r\n" % (ctype.encode(), len(body)) + body)
    buf = b""
    try:
        while b"\r\n" not in buf:
            d = sk.recv(4096)
            if not d:
                break
            buf += d
    except OSError:
        pass
    sk.close()
    m = re.match(rb"HTTP/1\.1 (\d+)", buf)
    return int(m.group(1)) if m else 0


def shutdown_checks(mllm, model_dir, wav):
    """#42: a long transcription (30 windows) does not hold a stopping
    server: after the grace period the next window is not started, and the
    server exits. A client that hangs up stops its transcription too."""
    import threading
    import time
    audio = long_wav(wav, 80)  # about 15 minutes: 30 windows
    s = srvtest.Server(mllm, model_dir, "-t", "2", "--max-upload", str(len(audio) + 4096), "--shutdown-grace", "1",
                       alias="whisper-tiny.en")
    try:
        got = {}
        th = threading.Thread(target=lambda: got.setdefault("st", post_audio(s.port, audio)))
        th.start()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60 and s.metrics().get("mllm_tasks_running", 0) < 1:
            time.sleep(0.05)
        check(s.metrics().get("mllm_tasks_running", 0) == 1, "the transcription runs")
        t1 = time.monotonic()
        rc = s.stop(timeout=120)
        dt = time.monotonic() - t1
        th.join(30)
        check(rc == 0, "exit code %r" % rc)
        # the grace second, then at most the window being decoded (well under a second on an idle machine)
        check(dt < 30, "a stopping server waited %.1f s for a 30-window transcription" % dt)
        check(got.get("st") in (0, 503), "the transcription's answer at shutdown: %r" % got.get("st"))
        print("ok   SIGTERM during a 30-window transcription: exit 0 in %.1f s (grace 1 s), answer %r"
              % (dt, got.get("st")))
    finally:
        s.close()


def main(argv):
    mllm, shared, build_dir = argv[0], argv[1], argv[2]
    tiny = os.environ.get("MLLM_WHISPER_TINY_DIR")
    wav = os.path.join(shared, "models", "audio", "jfk.wav")
    if not tiny or not os.path.isfile(os.path.join(tiny, "model.bin")) or not os.path.isfile(wav):
        print("SKIPPED: MLLM_WHISPER_TINY_DIR unset or jfk.wav absent (scripts/fetch-whisper.sh whisper-tiny.en)")
        return srvtest.SKIP
    openai = import_openai(build_dir)
    if openai is None:
        return srvtest.SKIP
    tiny_checks(openai, mllm, tiny, wav, build_dir)
    shutdown_checks(mllm, tiny, wav)
    base = os.environ.get("MLLM_WHISPER_BASE_DIR")
    if base:
        base_checks(openai, mllm, base, wav)
    else:
        print("SKIPPED (base part): MLLM_WHISPER_BASE_DIR is not set (scripts/fetch-whisper.sh whisper-base)")
    print("serve_transcribe: all passed (openai %s)" % openai.__version__)
    return 0


srvtest.run(main)
