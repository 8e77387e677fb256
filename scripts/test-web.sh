#!/usr/bin/env bash
# The browser demo's end-to-end tests, from a fresh Debian machine: installs chromium
# (apt) if missing, the test's npm packages (npm ci), builds the
# wasm package (scripts/build-web.sh) and runs tests/web/demo.test.mjs in headless
# chromium: WebGPU on SwiftShader, then the CPU fallback with the full 20-epoch demo,
# and TAkS, Standard, Co-teaching and JoCoR side by side on a small subset; then
# tests/web/audit.test.mjs audits a generated folder and a CSV table on the audit page
# (audit.html) against `taks audit`, and tests/web/report.test.mjs opens an audit's
# report.html.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || missing+=(chromium)
command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update
    $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

(cd tests/web && npm ci --no-audit --no-fund)
scripts/build-web.sh
# report.test.mjs opens the report.html of a real `taks audit`: the release binary
# that scripts/test.sh built (in CARGO_TARGET_DIR, else the checkout's target/).
export TAKS_BIN="${TAKS_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/release/taks}"
cd tests/web && node --test --test-reporter=spec demo.test.mjs audit.test.mjs report.test.mjs
