#!/usr/bin/env bash
# pymllm as a user gets it: `pip install ./python` (into a private --target
# folder, no compiler involved), then the pytest suite tests/python against
# this build's libmllm.so (MLLM_LIBRARY), a synthetic model made by this
# build's CLI and stories260K. pytest, setuptools and wheel are pip-installed
# into the build folder once. Prints SKIPPED (exit 77) only when pip cannot
# reach the package registry for what is missing.
set -euo pipefail
mllm=$(realpath "$1") shared=$(realpath "$2") build=$(realpath "$3")
src=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
command -v "$py" >/dev/null || { echo "SKIPPED: no $py"; exit 77; }
"$py" -m pip --version >/dev/null 2>&1 || { echo "SKIPPED: $py has no pip"; exit 77; }
lib=$build/libmllm.so
[ -f "$lib" ] || { echo "no $lib in the build"; exit 1; }
tmp=$(mktemp -d "$build/e2e-pymllm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# A sanitized libmllm.so only loads into python with the sanitizer runtime
# preloaded; leaks of the interpreter itself are not ours to report.
if grep -Eq '^MLLM_(SANITIZE|FUZZ):BOOL=ON' "$build/CMakeCache.txt"; then
    cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
    asan=$("${cc:-cc}" -print-file-name=libasan.so)
    [ -f "$asan" ] || { echo "SKIPPED: sanitized build, $asan not found to preload"; exit 77; }
    ubsan=$("${cc:-cc}" -print-file-name=libubsan.so)
    export LD_PRELOAD="$asan${ubsan:+:$ubsan}"
    [ -f "$ubsan" ] || export LD_PRELOAD="$asan"
    export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
fi
if [[ $("${cc:-cc}" --version 2>/dev/null | head -n 1) == *clang* ]] && [ -n "${LD_PRELOAD:-}" ]; then
    echo "SKIPPED: clang-sanitized libmllm.so cannot be preloaded into python"; exit 77
fi

pip_log=$tmp/pip.log
offline() { ! "$py" -m pip download --no-deps -q -d "$tmp/probe" pytest > /dev/null 2>&1; }

# What the test needs besides the package: pytest, and setuptools + wheel to
# build ./python without build isolation. pip-installed into the build folder
# once and kept between runs, so later runs (the faketime guard of
# scripts/test.sh among them) need no registry at all.
deps=$build/python-test-deps
if ! PYTHONPATH=$deps "$py" -c 'import pytest, setuptools, wheel' 2>/dev/null; then
    if ! "$py" -m pip install -q --disable-pip-version-check --target "$deps" pytest setuptools wheel > "$pip_log" 2>&1; then
        if offline; then echo "SKIPPED: pytest/setuptools/wheel are not installed and pip cannot reach the registry"; exit 77; fi
        cat "$pip_log"; echo "pip install pytest setuptools wheel failed"; exit 1
    fi
fi

# The package, from a copy (setuptools writes build/ and *.egg-info next to
# pyproject.toml), built with the setuptools above.
site=$tmp/site
cp -r "$src/python" "$tmp/python"
rm -rf "$tmp/python/build" "$tmp/python"/*.egg-info
if ! PYTHONPATH=$deps "$py" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
        --target "$site" "$tmp/python" > "$pip_log" 2>&1; then
    cat "$pip_log"; echo "pip install ./python failed"; exit 1
fi
[ -f "$site/pymllm/__init__.py" ] && [ -f "$site/pymllm/model.py" ] ||
    { echo "pip install ./python did not install the package files"; find "$site"; exit 1; }

# A wheel with libmllm inside (setup.py bundles it): from this build's
# library, and through setup.py's own cmake path on this build folder (an
# up-to-date target: nothing is rebuilt). Checked by pytest below.
bsite=$tmp/site-bundled
if ! MLLM_BUNDLE_LIBRARY=$lib PYTHONPATH=$deps "$py" -m pip wheel -q --disable-pip-version-check --no-deps \
        --no-build-isolation -w "$tmp/wheels" "$tmp/python" > "$pip_log" 2>&1; then
    cat "$pip_log"; echo "pip wheel ./python (bundled) failed"; exit 1
fi
whl=$(ls "$tmp"/wheels/pymllm-*.whl)
case $whl in *-none-any.whl) echo "a wheel with libmllm inside must be platform-tagged: $whl"; exit 1 ;; esac
"$py" -m zipfile -l "$whl" > "$tmp/whl.list"
grep -q "pymllm/libmllm.so" "$tmp/whl.list" || { echo "$whl has no pymllm/libmllm.so"; exit 1; }
if ! MLLM_SOURCE_DIR=$src MLLM_CMAKE_BUILD_DIR=$build PYTHONPATH=$deps "$py" -m pip install -q --disable-pip-version-check \
        --no-deps --no-build-isolation --target "$bsite" "$tmp/python" > "$pip_log" 2>&1; then
    cat "$pip_log"; echo "pip install ./python (bundled by cmake) failed"; exit 1
fi
export PYMLLM_BUNDLED_SITE=$bsite

# Run from an empty folder so `import pymllm` finds the installed copy.
cd "$tmp"
export PYTHONPATH=$site:$deps MLLM_LIBRARY=$lib MLLM_BIN=$mllm MLLM_SHARED_DIR=$shared PYTHONDONTWRITEBYTECODE=1
where=$("$py" -c 'import pymllm; print(pymllm.__file__)')
[[ $where == "$site"/* ]] || { echo "pymllm imported from $where, not the pip-installed $site"; exit 1; }
"$py" -m pytest -q -p no:cacheprovider "$src/tests/python" -rs
