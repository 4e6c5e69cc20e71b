"""JSON Schema -> grammar: for every schema of lib/schemas.py, random texts
drawn from its grammar (`mllm grammar --sample`, a byte-level vocabulary
with multi-byte and split-UTF-8 pieces) all parse and validate with the
`jsonschema` package (formats checked); each hostile schema fails with a
message naming the limit or keyword. Deterministic: fixed seeds.
Args: mllm binary, shared dir, build dir."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from schemas import HOSTILE, SCHEMAS  # noqa: E402

N_SAMPLES = 40


def main(argv):
    try:
        import jsonschema
    except ImportError:
        print("SKIPPED: the jsonschema Python package is not installed")
        return 77
    mllm, build = argv[0], argv[2]
    work = tempfile.mkdtemp(prefix="mllm-grammar-schemas-", dir=build)
    fails = 0
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    for i, (name, schema) in enumerate(sorted(SCHEMAS.items())):
        path = os.path.join(work, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(schema, f, ensure_ascii=False)
        r = subprocess.run([mllm, "grammar", "--json-schema", path, "--sample", str(N_SAMPLES), "--seed", str(i)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL %s: mllm grammar exit %d: %s" % (name, r.returncode, r.stderr.strip()))
            fails += 1
            continue
        texts = [json.loads(line) for line in r.stdout.splitlines()]
        validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
        bad = []
        for t in texts:
            try:
                validator.validate(json.loads(t))
            except (ValueError, jsonschema.ValidationError) as e:
                bad.append("%r: %s" % (t, str(e).splitlines()[0]))
        if len(texts) != N_SAMPLES or bad:
            print("FAIL %s: %d texts, %d invalid; first: %s" % (name, len(texts), len(bad), bad[:1]))
            fails += 1
        else:
            longest = max(texts, key=len)
            print("ok   %-15s %d random texts validate (longest %d bytes)" % (name, len(texts), len(longest)))
    for name, schema, words in HOSTILE:
        path = os.path.join(work, "hostile.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(schema, f)
        r = subprocess.run([mllm, "grammar", "--json-schema", path], capture_output=True, text=True, timeout=60)
        if r.returncode != 0 and words in r.stderr and "json schema" in r.stderr:
            print("ok   hostile %-18s -> %s" % (name, r.stderr.strip().split(": ", 1)[1][:110]))
        else:
            print("FAIL hostile %s: exit %d, stderr %r (want %r)" % (name, r.returncode, r.stderr.strip(), words))
            fails += 1
    r = subprocess.run([mllm, "grammar", "--json-schema", "/dev/null"], capture_output=True, text=True)
    if r.returncode == 0 or "not valid JSON" not in r.stderr:
        print("FAIL an empty schema file: %r" % r.stderr)
        fails += 1
    shutil.rmtree(work, ignore_errors=True)
    print("grammar_schemas: %s" % ("all passed" if not fails else "%d failed" % fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
