#!/usr/bin/env bash
# The Python package's tests (python/tests), as scripts/test.sh runs them: the extension
# that the workspace's cargo run built (TARGET/release/lib_taks.so) packed into a wheel,
# installed into a fresh virtual environment of CPython 3.11 (the machine's) and of
# CPython 3.13 (built once from Debian's source tarball of it, checked against its
# SHA-256, into ~/.cache/taks: the registries this machine reaches carry no ready
# interpreter), and pytest run in each against the taks binary.
#
#   scripts/python-test.sh TARGET_DIR [PYTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: scripts/python-test.sh TARGET_DIR [PYTEST ARGS...]}"
shift

cache="${XDG_CACHE_HOME:-$HOME/.cache}/taks"
py313="$cache/cpython-3.13.5/bin/python3.13"
if [ ! -x "$py313" ]; then
    tarball=python3.13_3.13.5.orig.tar.xz
    sum=93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640
    work="$(mktemp -d)"
    curl -fsSL -o "$work/$tarball" "http://deb.debian.org/debian/pool/main/p/python3.13/$tarball"
    echo "$sum  $work/$tarball" | sha256sum -c --quiet
    tar -xf "$work/$tarball" -C "$work"
    (cd "$work/Python-3.13.5" && ./configure --quiet --prefix="$cache/cpython-3.13.5" >/dev/null \
        && make -j"$(nproc)" --quiet >/dev/null 2>&1 && make --quiet altinstall >/dev/null 2>&1)
    rm -rf "$work"
fi

wheels="$(mktemp -d)"
trap 'rm -rf "$wheels"' EXIT
wheel="$(python3 scripts/python-wheel.py "$target/release/lib_taks.so" "$wheels")"

for python in python3.11 "$py313"; do
    venv="$wheels/venv-$(basename "$python")"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel" pytest
    echo "== pytest on $("$venv/bin/python" --version)"
    # From the tests' folder, so `import taks` finds the installed wheel, not python/taks.
    (cd python/tests && TAKS_BIN="$target/release/taks" "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider "$@" .)
done
