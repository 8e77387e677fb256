#!/usr/bin/env bash
# Has the CPU epoch slowed down? Times a TAkS Fashion-MNIST epoch on burn's flex backend
# with two taks binaries on this machine, alternating run by run (so that both see the
# same machine), and compares the medians:
#   train: `taks train ... --epochs 6`, the median epoch_seconds of epochs 2-6 of each run
#          (what a run spends per epoch, with everything a run does around it);
#   bench: `taks bench --methods taks,standard --epochs 3`, TAkS's and Standard's mean;
# and beside each, the fastest epoch of all runs: on a shared machine a busy neighbour
# only ever adds time, so the fastest epoch moves least from run to run and tells a few
# percent where the medians cannot. It prints both tables and says SLOWER for a median
# more than 10% above the baseline's, exiting 1 if any is. A benchmark to run by hand
# before a release or after a change to the data path or the training loop, on a quiet
# machine; never a test (CI machines differ and are shared).
#
# Usage: scripts/cpu-regression.sh BASE [NEW]
#   BASE  the baseline: a taks binary, or a git revision (a tag, a commit), which is built
#         in a temporary worktree with the shared target directory (only the workspace's
#         own crates compile again)
#   NEW   default: release/taks in the target directory scripts/test.sh uses
#         ($CARGO_TARGET_DIR, else ./target when built, else ~/.cache/taks/target)
# Environment: RUNS (runs of each command per binary, default 5), FASHION_DIR (default
# /usr/share/datasets/fashion-mnist), LIMIT (the SLOWER threshold, default 1.10).
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 1 ] || { sed -n '2,22p' "$0"; exit 2; }
RUNS=${RUNS:-5}
FASHION_DIR=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}
LIMIT=${LIMIT:-1.10}
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
    target=$CARGO_TARGET_DIR
elif [ -d target/release ]; then
    target=$PWD/target
else
    target=$HOME/.cache/taks/target
fi
NEW=${2:-$target/release/taks}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[ -d "$FASHION_DIR" ] || { echo "error: no Fashion-MNIST at $FASHION_DIR (apt-get install dataset-fashion-mnist)" >&2; exit 1; }
[ -x "$NEW" ] || { echo "error: $NEW is not a taks binary (cargo build --release -p taks)" >&2; exit 1; }

BASE=$1
if [ ! -x "$BASE" ]; then
    rev=$(git rev-parse --verify --quiet "$BASE^{commit}") ||
        { echo "error: $BASE is neither a taks binary nor a git revision" >&2; exit 1; }
    echo "building the baseline $BASE ($rev) ..."
    git worktree add --detach -q "$work/base" "$rev"
    # A revision older than the pinned toolchain builds with today's.
    [ -e "$work/base/rust-toolchain.toml" ] || cp rust-toolchain.toml "$work/base/"
    # The baseline's binary is copied out, then the target directory's own taks is put
    # back as it was (both builds uplift to the same release/taks).
    saved="$work/saved-taks"
    [ -e "$target/release/taks" ] && cp -p "$target/release/taks" "$saved"
    (cd "$work/base" && CARGO_TARGET_DIR="$target" cargo build --release -q -p taks)
    cp "$target/release/taks" "$work/base-taks"
    [ -e "$saved" ] && cp -p "$saved" "$target/release/taks"
    git worktree remove --force "$work/base"
    # Cargo names a workspace crate's build by its path inside the workspace, so the
    # baseline's crates replaced this checkout's in the target directory, and cargo
    # judges freshness by modification times: make this checkout's files newer, so that
    # the next build compiles them again instead of linking the baseline's (every member
    # of the workspace: one left out, as `shaders` once was, stays the baseline's).
    git ls-files -z formats shaders core native web | xargs -0 touch
    BASE="$work/base-taks"
fi

train=(train --dataset fashion-mnist --data-dir "$FASHION_DIR" --noise symmetric --noise-rate 0.5
    --method taks --k-ratio 0.35 --epochs 6 --seed 1 --device cpu --quiet)
bench=(bench --dataset fashion-mnist --data-dir "$FASHION_DIR" --devices cpu --methods taks,standard --epochs 3)

# The epoch_seconds of epochs 2.. of a metrics.csv, fastest first.
epoch_seconds() {
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "epoch_seconds") c = i; next }
        $1 >= 2 { print $c }' "$1" | sort -g
}
# Their median, and the fastest.
epoch_median() {
    epoch_seconds "$1" | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
epoch_min() {
    epoch_seconds "$1" | head -1
}
# Column $3 ("mean" or "min") of method $2's row in a bench table $1, found by the
# column's name (binaries of different versions print different columns), in that table
# only (the tables after it have rows per method too).
bench_column() {
    awk -F'|' -v m="$2" -v want="^ *$3 epoch s *$" '
        $2 ~ /^ *device *$/ { col = 0; for (i = 1; i <= NF; i++) if ($i ~ want) col = i }
        col && $3 ~ "^ *" m " *$" { gsub(/ /, "", $col); print $col }' "$1"
}

for r in $(seq 1 "$RUNS"); do
    for which in base new; do
        bin=$BASE; [ $which = new ] && bin=$NEW
        "$bin" "${train[@]}" --out "$work/$which-$r" >/dev/null
        epoch_median "$work/$which-$r/metrics.csv" >>"$work/$which.train"
        epoch_min "$work/$which-$r/metrics.csv" >>"$work/$which.train-fastest"
        "$bin" "${bench[@]}" >"$work/$which-$r.bench" 2>&1
        for m in taks standard; do
            bench_column "$work/$which-$r.bench" $m mean >>"$work/$which.bench-$m"
            bench_column "$work/$which-$r.bench" $m min >>"$work/$which.bench-$m-fastest"
        done
        echo "run $r $which: train $(tail -1 "$work/$which.train") s, bench taks $(tail -1 "$work/$which.bench-taks") s, standard $(tail -1 "$work/$which.bench-standard") s"
    done
done

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
list() { paste -sd' ' "$1"; }
slower=0
echo
echo "baseline: $BASE ($("$BASE" --version))"
echo "new:      $NEW ($("$NEW" --version))"
echo "$RUNS runs each, alternating; seconds per epoch"
echo
echo "| figure | baseline runs | new runs | baseline median | new median | new / baseline | |"
echo "|---|---|---|---|---|---|---|"
for fig in train bench-taks bench-standard; do
    b=$(median "$work/base.$fig"); n=$(median "$work/new.$fig")
    ratio=$(awk -v b="$b" -v n="$n" 'BEGIN { printf "%.2f", n / b }')
    verdict=$(awk -v r="$ratio" -v l="$LIMIT" 'BEGIN { print (r > l ? "SLOWER" : "ok") }')
    [ "$verdict" = SLOWER ] && slower=1
    echo "| $fig | $(list "$work/base.$fig") | $(list "$work/new.$fig") | $b | $n | $ratio | $verdict |"
done
echo
echo "| figure | baseline fastest epoch | new fastest epoch | new / baseline |"
echo "|---|---|---|---|"
for fig in train bench-taks bench-standard; do
    b=$(sort -g "$work/base.$fig-fastest" | head -1); n=$(sort -g "$work/new.$fig-fastest" | head -1)
    echo "| $fig | $b | $n | $(awk -v b="$b" -v n="$n" 'BEGIN { printf "%.3f", n / b }') |"
done
exit $slower
