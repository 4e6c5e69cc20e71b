"""pymllm's build: the package, and libmllm.so inside it when one can be had,
so `pip install ./python` (or `pip wheel ./python`, `python -m build
python`) gives a wheel that works with no MLLM_LIBRARY set.

Where the bundled library comes from, first match wins:
  MLLM_BUNDLE_LIBRARY=PATH   that libmllm.so, copied as it is;
  the mllm-c source tree     around this folder (or MLLM_SOURCE_DIR): cmake
                             builds the mllm_shared target, in
                             MLLM_CMAKE_BUILD_DIR if set (an existing build
                             folder is reused), else python/build/libmllm;
  neither                    a pure-Python package: libmllm is then found at
                             run time through MLLM_LIBRARY or the system
                             loader (a warning says so).
MLLM_NO_BUNDLE=1 skips the bundling. A bundled wheel is tagged for this
platform (it holds a native library); a pure one is py3-none-any."""
import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def _source_dir():
    src = os.environ.get("MLLM_SOURCE_DIR") or os.path.dirname(HERE)
    ok = os.path.isfile(os.path.join(src, "CMakeLists.txt")) and os.path.isfile(
        os.path.join(src, "include", "mllm", "mllm.h"))
    return src if ok else None


def _library():
    """The libmllm.so to bundle, or None."""
    if os.environ.get("MLLM_NO_BUNDLE"):
        return None
    given = os.environ.get("MLLM_BUNDLE_LIBRARY")
    if given:
        if not os.path.isfile(given):
            sys.exit(f"pymllm: MLLM_BUNDLE_LIBRARY={given} is not a file")
        return given
    src = _source_dir()
    if not src or not shutil.which("cmake"):
        return None
    build = os.environ.get("MLLM_CMAKE_BUILD_DIR") or os.path.join(HERE, "build", "libmllm")
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        subprocess.check_call(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                               "-DMLLM_BUILD_TESTS=OFF"])
    subprocess.check_call(["cmake", "--build", build, "--target", "mllm_shared", "-j",
                           str(os.cpu_count() or 2)])
    return os.path.join(build, "libmllm.so")


_BUNDLED = []


class BuildPy(build_py):
    def run(self):
        super().run()
        lib = _library()
        dest = os.path.join(self.build_lib, "pymllm", "libmllm.so")
        if lib:
            shutil.copyfile(os.path.realpath(lib), dest)  # the file, not the symlink chain
            _BUNDLED.append(dest)
            print(f"pymllm: bundled {os.path.realpath(lib)}")
        else:
            print("pymllm: no libmllm bundled (no source tree or MLLM_BUNDLE_LIBRARY): set MLLM_LIBRARY "
                  "at run time, or install libmllm with cmake --install", file=sys.stderr)


class MaybeBinary(Distribution):
    """Platform-tagged when a native library was bundled."""

    def has_ext_modules(self):
        return bool(_BUNDLED) or (not os.environ.get("MLLM_NO_BUNDLE") and (
            bool(os.environ.get("MLLM_BUNDLE_LIBRARY")) or _source_dir() is not None))


setup(cmdclass={"build_py": BuildPy}, distclass=MaybeBinary)
