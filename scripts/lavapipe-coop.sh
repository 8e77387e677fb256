#!/usr/bin/env bash
# Run a command (a test binary: cargo's runner, below) on Mesa 26's lavapipe, the first
# software Vulkan driver with cooperative matrices (VK_KHR_cooperative_matrix: 8 x 8 x 8
# products, f16 into f32, on 8-wide subgroups), so that the tests run the f16 product on
# them (`shaders/matmul_coop_f16.wgsl`) where Debian 12's lavapipe (Mesa 22) has none.
#
#   CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=scripts/lavapipe-coop.sh cargo test ...
#
# The driver is Debian 13's backport (trixie-backports' mesa-vulkan-drivers) with the
# libraries it needs from Debian 13, fetched from Debian's archive once and unpacked into
# the target directory: nothing is installed. Debian 13's C library comes with them,
# because the driver needs glibc 2.39, and the program runs on it (a program built on
# Debian 12 runs on a later glibc): a copy of it whose ELF interpreter is Debian 13's
# loader (patchelf), so that it still finds itself where it looks (`/proc/self/exe`: taks
# runs its own probes as child processes). What it starts inherits the library path, so
# it must be that program too, not a program of the system's.
# `scripts/lavapipe-coop.sh --fetch` only fetches.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# The target directory the tests share (scripts/test-env.sh), when run by hand.
: "${CARGO_TARGET_DIR:=$(cd "$here" && source scripts/test-env.sh >/dev/null && echo "$CARGO_TARGET_DIR")}"
root="$CARGO_TARGET_DIR/tools/mesa-26"
lib="$root/usr/lib/x86_64-linux-gnu"

if [ $# -eq 0 ]; then
    echo "usage: scripts/lavapipe-coop.sh --fetch | PROGRAM [ARGUMENTS...]" >&2
    exit 2
fi
# What this script made in /tmp, removed when it leaves.
temporary=()
trap 'rm -rf "${temporary[@]}"' EXIT

if [ ! -e "$root/lvp.json" ]; then
    work=$(mktemp -d)
    temporary+=("$work")
    for suite in trixie trixie-backports; do
        curl -fsS --retry 3 -o "$work/$suite.xz" \
            "http://deb.debian.org/debian/dists/$suite/main/binary-amd64/Packages.xz"
    done
    # The driver from the backports, and everything it needs from Debian 13 but what a
    # program never loads (the packaging tools, the shell, perl, debconf).
    python3 "$here/scripts/debian-closure.py" "$work/trixie-backports.xz" "$work/trixie.xz" -- \
        mesa-vulkan-drivers libvulkan1 >"$work/files"
    rm -rf "$root.part"
    mkdir -p "$work/debs" "$root.part"
    # Each package checked against the index's SHA-256 before it is unpacked.
    while read -r sum file; do
        curl -fsS --retry 3 -o "$work/debs/${file##*/}" "http://deb.debian.org/debian/$file"
        echo "$sum  $work/debs/${file##*/}" | sha256sum -c --quiet
        dpkg-deb -x "$work/debs/${file##*/}" "$root.part"
    done <"$work/files"
    # The driver's manifest, pointing at the driver where it was unpacked.
    sed "s|\"library_path\": \"libvulkan_lvp.so\"|\"library_path\": \"$lib/libvulkan_lvp.so\"|" \
        "$root.part/usr/share/vulkan/icd.d/lvp_icd.json" >"$root.part/lvp.json"
    grep -q "$lib/libvulkan_lvp.so" "$root.part/lvp.json"
    rm -rf "$root"
    mv "$root.part" "$root"
fi
[ "$1" = --fetch ] && exit 0

# The program as a path (a name is looked up on PATH, as the shell would).
program=$(type -P "$1") || { echo "lavapipe-coop.sh: no program $1" >&2; exit 127; }
shift
copy=$(mktemp -d)
temporary+=("$copy")
cp "$program" "$copy/"
patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" "$copy/${program##*/}"
rc=0
VK_DRIVER_FILES="$root/lvp.json" LD_LIBRARY_PATH="$lib" "$copy/${program##*/}" "$@" || rc=$?
exit "$rc"
