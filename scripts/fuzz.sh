#!/usr/bin/env bash
# Fuzz the file parsers of crate taks-formats (fuzz/: targets idx, cifar, checkpoint, csv_table,
# npy, pickle, safetensors, pth, image)
# with cargo-fuzz and libFuzzer, one target at a time, one process each.
#
#     scripts/fuzz.sh [SECONDS] [TARGET...]      (default: 600 s each, every target)
#
# Installs cargo-fuzz when it is missing (it needs the nightly toolchain). Each target
# starts from its committed seeds (formats/tests/seeds/TARGET, which the stable
# toolchain's mutation test, formats/tests/mutations.rs, also reads; never written to) and its growing
# corpus (fuzz/corpus/TARGET), and runs under -rss_limit_mb=2048 -malloc_limit_mb=512,
# so an input whose lying header makes a parser allocate hugely counts as a crash like
# a panic does. Crashing inputs go to fuzz/artifacts/TARGET/, libFuzzer's output to
# fuzz/artifacts/logs/TARGET.log. Prints per target the seconds run, the executions
# and whether it crashed; exits non-zero when any target crashed.
#
# Builds in fuzz/target: CARGO_TARGET_DIR is unset here, whatever the caller set.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
unset CARGO_TARGET_DIR

seconds=${1:-600}
shift || true
targets=(idx cifar checkpoint csv_table npy pickle safetensors pth image)
[[ $# -eq 0 ]] || targets=("$@")
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || {
    echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
    exit 2
}

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz
fi

cd fuzz
for target in "${targets[@]}"; do
    cargo +nightly fuzz build "$target"
done

mkdir -p artifacts/logs
crashed=()
summary=()
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "artifacts/$target"
    log="$root/fuzz/artifacts/logs/$target.log"
    args=(
        -max_total_time="$seconds"
        -rss_limit_mb=2048
        -malloc_limit_mb=512
        -print_final_stats=1
    )
    [[ -f dicts/$target.dict ]] && args+=(-dict="$root/fuzz/dicts/$target.dict")
    echo "== $target: fuzzing for $seconds s (log: fuzz/artifacts/logs/$target.log)"
    start=$(date +%s)
    status=0
    cargo +nightly fuzz run "$target" "corpus/$target" "../formats/tests/seeds/$target" -- "${args[@]}" \
        >"$log" 2>&1 || status=$?
    elapsed=$(($(date +%s) - start))
    # libFuzzer's final statistics; before them (a crash), its last status line.
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    [[ -n $runs ]] || runs=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
    fuzzed=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
    if [[ $status -ne 0 ]] || grep -q '^==[0-9]*== *ERROR: libFuzzer\|^SUMMARY: libFuzzer\|panicked at' "$log"; then
        artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
        result="CRASHED (exit $status${artifact:+, input $artifact})"
        crashed+=("$target")
        grep -m 5 'panicked at\|ERROR: libFuzzer\|^SUMMARY' "$log" | sed 's/^/    /' || true
    else
        result="clean"
    fi
    line="$target: ${fuzzed:-$elapsed} s fuzzing ($elapsed s wall), ${runs:-?} executions, $result"
    echo "$line"
    summary+=("$line")
done

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
if [[ ${#crashed[@]} -gt 0 ]]; then
    echo "crashed: ${crashed[*]} (reproduce: cd fuzz && cargo +nightly fuzz run TARGET INPUT)" >&2
    exit 1
fi
