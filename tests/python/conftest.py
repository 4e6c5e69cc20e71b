"""Fixtures for the pymllm tests: the mllm CLI (MLLM_BIN) makes a synthetic
Qwen3 model; stories260K comes from the shared data folder."""
import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _mllm_bin():
    path = os.environ.get("MLLM_BIN")
    if not path:
        pytest.skip("MLLM_BIN (the mllm CLI) is not set: run tests/e2e/sdk_python.sh")
    return path


@pytest.fixture(scope="session")
def mllm_bin():
    return _mllm_bin()


@pytest.fixture(scope="session")
def synth_model(tmp_path_factory, mllm_bin):
    path = str(tmp_path_factory.mktemp("models") / "qwen3-tiny.gguf")
    subprocess.run([mllm_bin, "synth", "--arch", "qwen3", "--preset", "tiny", "-o", path],
                   check=True, capture_output=True)
    return path


@pytest.fixture(scope="session")
def stories():
    d = os.path.join(os.environ.get("MLLM_SHARED_DIR", os.path.join(REPO, "..", "shared")),
                     "models", "stories260K")
    files = [os.path.join(d, f) for f in ("stories260K.bin", "tok512.bin",
                                           "stories260K_golden.json")]
    for f in files:
        if not os.path.exists(f):
            pytest.skip(f"SKIPPED: {f} is absent")
    return files
