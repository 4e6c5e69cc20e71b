"""/v1/embeddings through the official `openai` client: a server on
all-MiniLM-L6-v2 ($MLLM_MINILM_DIR) answers within cosine 0.9999 of
sentence-transformers (tests/data/minilm/embeddings.json), base64 and token
inputs agree with floats and text, `dimensions` other than 384 and chat
requests are refused with a 400; a server on a decoder (a synth tiny Qwen3)
serves mean-pooled, normalised vectors equal to `mllm embed`'s.
Args: mllm binary, shared dir, build dir. Loopback only."""
import base64
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "server"))
import srvtest  # noqa: E402
from srvtest import check, import_openai  # noqa: E402


def cosine(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    return ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def minilm_checks(openai, mllm, model_dir):
    ref = json.load(open(os.path.join(HERE, "..", "data", "minilm", "embeddings.json"), encoding="utf-8"))
    s = srvtest.Server(mllm, model_dir, alias="minilm")
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="none", max_retries=0, timeout=300)
        r = client.embeddings.create(model="minilm", input=ref["texts"])
        check(len(r.data) == len(ref["texts"]), "one vector per input")
        worst = min(cosine(d.embedding, want) for d, want in zip(r.data, ref["embeddings"]))
        check(worst >= 0.9999, "worst cosine %.6f" % worst)
        check([d.index for d in r.data] == list(range(len(ref["texts"]))), "indices")
        check(r.usage.prompt_tokens == sum(ref["n_tokens"]) == r.usage.total_tokens, "usage %r" % r.usage)
        print("ok   minilm: %d texts, worst cosine %.7f, %d tokens" % (len(r.data), worst, r.usage.prompt_tokens))
        # base64 = the same float32 bytes
        st, raw = s.json("POST", "/v1/embeddings", {"input": ref["texts"][0], "encoding_format": "base64"})
        b = base64.b64decode(raw["data"][0]["embedding"])
        v = struct.unpack("<%df" % (len(b) // 4), b)
        check(st == 200 and len(v) == 384 and max(abs(x - y) for x, y in zip(v, r.data[0].embedding)) < 1e-8,
              "base64 vs float")
        print("ok   encoding_format base64")
        # token ids = the text they tokenize to
        st, tok = s.json("POST", "/tokenize", {"content": ref["texts"][0], "add_special": True})
        e2 = client.embeddings.create(model="minilm", input=[tok["tokens"]]).data[0].embedding
        check(max(abs(x - y) for x, y in zip(e2, r.data[0].embedding)) < 1e-6, "token input vs text input")
        print("ok   token-array input")
        client.embeddings.create(model="minilm", input="x", dimensions=384)
        for bad in ({"input": "x", "dimensions": 100}, {"input": []}, {"input": [[999999]]}, {"input": 5},
                    {"input": "x", "encoding_format": "int8"}, {"input": "x", "pooling": "cls"}):
            st, err = s.json("POST", "/v1/embeddings", bad)
            check(st == 400 and "error" in err, "%r -> %d %r" % (bad, st, err))
        print("ok   bad requests -> 400")
        try:
            client.chat.completions.create(model="minilm", messages=[{"role": "user", "content": "hi"}])
            check(False, "chat on an embedding model must fail")
        except openai.BadRequestError as ex:
            check("embedding model" in str(ex), "chat error: %s" % ex)
        print("ok   chat on an embedding model -> 400")
        check(s.stop() == 0, "exit code after SIGTERM")
    finally:
        s.close()


def decoder_checks(openai, mllm, work):
    model = srvtest.synth_tiny(mllm, work)
    text = "Once upon a time"
    cli = subprocess.run([mllm, "embed", "-m", model, "-p", text, "-o", "text"], check=True, capture_output=True,
                         text=True).stdout.split()
    cli = [float(x) for x in cli]
    s = srvtest.Server(mllm, model)
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key="none", max_retries=0, timeout=120)
        v = client.embeddings.create(model="tiny", input=text).data[0].embedding
        check(len(v) == len(cli) and max(abs(x - y) for x, y in zip(v, cli)) < 1e-6, "server vs mllm embed")
        check(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-5, "normalised")
        # the decoder still generates next to it
        r = client.completions.create(model="tiny", prompt=text, max_tokens=4, temperature=0)
        check(r.usage.completion_tokens == 4, "completion next to embeddings")
        print("ok   decoder: %d dims, equal to mllm embed, completions still served" % len(v))
        check(s.stop() == 0, "exit code after SIGTERM")
    finally:
        s.close()


def main(argv):
    mllm, build_dir = argv[0], argv[2]
    openai = import_openai(build_dir)
    if openai is None:
        return srvtest.SKIP
    work = tempfile.mkdtemp(prefix="mllm-serve-embed-")
    decoder_checks(openai, mllm, work)
    model_dir = os.environ.get("MLLM_MINILM_DIR")
    if model_dir:
        minilm_checks(openai, mllm, model_dir)
    else:
        print("SKIPPED (minilm part): MLLM_MINILM_DIR is not set (scripts/fetch-minilm.sh)")
    print("serve_embeddings: all passed (openai %s)" % openai.__version__)
    return 0


srvtest.run(main)
