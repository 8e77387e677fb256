# Sourced by scripts/test.sh and scripts/test-fusion.sh (from the repository root): the
# environment their cargo runs share.
#
# One target directory for everything: the checkout's own when a build already made
# it (the README's first command), else one outside the checkout that later runs and
# fresh checkouts on this machine (CI) reuse. CARGO_TARGET_DIR overrides both.
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
    if [ -d target/release ]; then
        export CARGO_TARGET_DIR="$PWD/target"
    else
        export CARGO_TARGET_DIR="$HOME/.cache/taks/target"
    fi
fi
# Fewer autotuning trials: the wgpu tests run on a software adapter, where each costs seconds.
export CUBECL_AUTOTUNE_LEVEL="${CUBECL_AUTOTUNE_LEVEL:-minimal}"
# The Python extension (python/) is built as an extension module by every cargo run, as
# maturin builds it: it does not link libpython, and PyO3 is not rebuilt between runs.
export PYO3_BUILD_EXTENSION_MODULE=1
