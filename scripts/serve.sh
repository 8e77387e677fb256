#!/usr/bin/env bash
# Serve the repository on http://127.0.0.1:${1:-8000}/ for the browser demo (index.html).
# WebGPU needs a secure context: 127.0.0.1/localhost is one, a LAN address is not.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f web/pkg/taks_web.js ] || echo "note: web/pkg is missing; run scripts/build-web.sh first" >&2
echo "TAkS demo: http://127.0.0.1:${1:-8000}/"
exec python3 -m http.server "${1:-8000}" --bind 127.0.0.1
