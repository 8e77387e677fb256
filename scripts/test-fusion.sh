#!/usr/bin/env bash
# The library and GPU tests with burn's kernel fusion (`--features fusion`,
# `core/src/gpu/fusion.rs`), by hand: another build of burn (about 11 minutes cold on
# two cores, seconds warm), so `scripts/test.sh` only type-checks this build. Run it
# after `scripts/test.sh` (lavapipe installed, the same target directory) whenever
# fusion's bridge or a kernel it resolves changes.
#
# One test at a time: under fusion burn's kernels are launched by the device's thread,
# so a launch count is the device's, not the test's thread's (`core/src/gpu/launches.rs`).
set -euo pipefail
cd "$(dirname "$0")/.."
# The same target directory and autotuning level as scripts/test.sh.
source scripts/test-env.sh
cargo test --release --workspace --features taks-core/fusion --lib --test 'gpu_*' -- --test-threads=1
