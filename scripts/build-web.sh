#!/usr/bin/env bash
# Build the browser demo's wasm package into web/pkg/ (then: scripts/serve.sh).
#
# Installs what is missing: the wasm32 target and the wasm-bindgen CLI at exactly the
# version of the wasm-bindgen crate in Cargo.lock (the two must match). Builds
# crate taks-web with the size-and-speed profile `wasm-release`, generates the
# JavaScript glue for `--target web` (ES modules, loadable from a worker), and runs
# wasm-opt only when asked (TAKS_WASM_OPT=1): Debian's binaryen 108 breaks this module
# (the page then fails with "WebAssembly.Table.set(): Argument 1 is invalid for table"),
# and it takes minutes on two cores. A newer binaryen is untested here.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown
fi

want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
[ -n "$want" ] || { echo "wasm-bindgen is not in Cargo.lock" >&2; exit 1; }
have=$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }' || true)
if [ "$have" != "$want" ]; then
    # Not --locked: one of its locked dependencies is gone from the registry. Built in
    # cargo's own temporary folder, not the target folder that test runs beside it use.
    env -u CARGO_TARGET_DIR cargo install wasm-bindgen-cli --version "$want"
fi

# TAKS_WEB_FEATURES: extra cargo features for a trial build (`taks-core/fusion`,
# docs/gpu.md, "burn's kernel fusion"); none by default.
cargo build -p taks-web --target wasm32-unknown-unknown --profile wasm-release \
    ${TAKS_WEB_FEATURES:+--features "$TAKS_WEB_FEATURES"}
wasm="$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm-release/taks_web.wasm"

rm -rf web/pkg
wasm-bindgen --target web --no-typescript --out-dir web/pkg "$wasm"

if [ "${TAKS_WASM_OPT:-0}" != 1 ]; then
    : # see above
elif command -v wasm-opt >/dev/null; then
    # -O3, not -Oz: the CPU fallback's epoch time matters more than a few hundred KB.
    wasm-opt -O3 --all-features web/pkg/taks_web_bg.wasm -o web/pkg/taks_web_bg.opt.wasm
    mv web/pkg/taks_web_bg.opt.wasm web/pkg/taks_web_bg.wasm
else
    echo "note: TAKS_WASM_OPT=1 but wasm-opt is not installed; the module stays unoptimised" >&2
fi
size=$(stat -c %s web/pkg/taks_web_bg.wasm)
gz=$(gzip -9c web/pkg/taks_web_bg.wasm | wc -c)
echo "web/pkg/taks_web_bg.wasm: $((size / 1024)) KiB ($((gz / 1024)) KiB gzipped)"
# What a visitor downloads before the page can do anything: kept at most 8 MB gzipped.
if [ "$gz" -gt 8000000 ]; then
    echo "error: the wasm module is $gz bytes gzipped, over the 8,000,000 the pages allow" >&2
    exit 1
fi
