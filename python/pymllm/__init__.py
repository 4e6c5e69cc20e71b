"""pymllm: Python bindings for mllm-c (ctypes over libmllm.so).

    import pymllm
    with pymllm.Model("model.gguf") as m:
        ids = m.tokenize("Hello")
        print(m.generate("Once upon a time", max_tokens=32, temperature=0))
        for piece in m.generate("Hello", stream=True):
            print(piece, end="")
        print(m.chat([{"role": "user", "content": "Hi"}]))

libmllm.so is found through MLLM_LIBRARY, then next to this package, then
the system loader; its ABI version and struct sizes are checked at load.
"""
from ._lib import ABI_VERSION, STATUS_NAMES, MllmError, load_library
from .model import Model

__all__ = ["Model", "MllmError", "ABI_VERSION", "STATUS_NAMES", "load_library",
           "library_version"]
__version__ = "0.1.0"


def library_version():
    """The loaded libmllm's version string (mllm_version())."""
    return load_library().mllm_version().decode("ascii")
