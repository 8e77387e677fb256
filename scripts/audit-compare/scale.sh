#!/usr/bin/env bash
# `taks audit` at scale: wall time, peak anonymous memory and F1 on generated folders of
# 28x28 grey Fashion-MNIST PNGs (make_fashion_folder.py --n N), default flags. Run by hand:
#
#   scripts/audit-compare/scale.sh TAKS WORK_DIR [N ...]      (default N: 100000 300000 1000000)
#
# WORK_DIR/f<N>/ is made when missing (with WORK_DIR/f<N>-truth.csv beside it), with
# make_fashion_folder.py's --rate $RATE (default 0.3: 24% misfiled) and $GEN_FLAGS
# (e.g. GEN_FLAGS=--no-shift for exact copies past 60,000 images). Each size
# runs twice with a fresh cache folder: the first run decodes (into the cache when the
# decoded bytes exceed --memory-budget), the second reads the cache. One JSON line per run.
set -euo pipefail
TAKS=$1; W=$2; shift 2
SIZES=("${@:-100000 300000 1000000}")
PY=${PY:-python3}
RATE=${RATE:-0.3}
S=$(cd "$(dirname "$0")" && pwd)
for n in ${SIZES[@]}; do
  d=$W/f$n
  [ -d "$d" ] || "$PY" "$S/make_fashion_folder.py" "$d" --n "$n" --rate "$RATE" --jobs 2 ${GEN_FLAGS:-}
  rm -rf "$W/cache-$n"
  for run in decode cached; do
    out=$W/taks-$n-$run; rm -rf "$out"
    m=$("$PY" "$S/peak_anon.py" -- "$TAKS" audit "$d" --out "$out" --cache-dir "$W/cache-$n" --quiet | tail -1)
    f=$("$PY" "$S/score_taks.py" "$out/suspects.csv" "$W/f$n-truth.csv")
    echo "{\"n\": $n, \"run\": \"$run\", \"memory\": $m, \"score\": $f}"
  done
done
