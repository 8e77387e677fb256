#!/usr/bin/env bash
# The GPU tests through burn's SPIR-V compiler (the `native-shaders` build) on lavapipe,
# with the one fix cubecl-spirv 0.11.3 needs to run there. By hand, not in CI: it builds
# burn once more with the `vulkan` feature (about 10 minutes on 2 cores) and runs every
# GPU test on a software Vulkan driver, then one epoch of `taks train` through SPIR-V.
#
# The bug: on a device without VK_KHR_workgroup_memory_explicit_layout (lavapipe, in
# Mesa 22.3.6 and 25.0.7 alike) cubecl lowers each shared-memory array through
# `lower_shared_implicit` (cubecl-spirv/src/ops/memory.rs), which gives the Workgroup
# variable the slice's pointer type and its address-of the array type: the other way
# round from the explicit-layout path beside it. Every kernel with shared memory (burn's
# matmuls and reductions) is then invalid SPIR-V (Khronos's validation layer:
# "OpInBoundsAccessChain reached non-composite type"), and lavapipe segfaults compiling
# it. NVIDIA's, AMD's (RADV) and Intel's (ANV) drivers have the extension, so cubecl
# takes the explicit path there and the bug does not reach them.
#
# The fix is applied to a copy of the crate outside the checkout and handed to cargo as
# a `[patch]` on the command line; Cargo.lock is put back afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/taks/target}"
export CUBECL_AUTOTUNE_LEVEL="${CUBECL_AUTOTUNE_LEVEL:-minimal}"
version=0.11.3

cargo fetch --quiet
source=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cubecl-spirv-$version | head -1)
[ -d "$source" ] || { echo "spirv-check: cubecl-spirv $version is not in the cargo registry" >&2; exit 1; }
fixed="$(dirname "$CARGO_TARGET_DIR")/cubecl-spirv-$version-shared-fix"

# Swap the two types in lower_shared_implicit; each line must be found exactly once, so
# a cubecl that changed them stops here instead of testing something else. The copy is
# made once and kept (times preserved), so that a second run rebuilds nothing.
swap() {
    local memory="$1" from="$2" to="$3"
    [ "$(grep -cF "$from" "$memory")" -eq 1 ] || {
        echo "spirv-check: '$from' is not in $memory exactly once: redo the fix for this cubecl" >&2
        exit 1
    }
    sed -i "s/$(printf '%s' "$from" | sed 's/[][\.*^$/]/\\&/g')/$to/" "$memory"
}
if [ ! -e "$fixed/.taks-shared-fix" ]; then
    mkdir -p "$(dirname "$fixed")"
    rm -rf "$fixed.new"
    cp -rp "$source" "$fixed.new"
    swap "$fixed.new/src/ops/memory.rs" \
        'GlobalVariableOp::new(ctx, value_ty, StorageClass::Workgroup' \
        'GlobalVariableOp::new(ctx, ty, StorageClass::Workgroup'
    swap "$fixed.new/src/ops/memory.rs" \
        'AddressOfOp::new(ctx, ty, name)' \
        'AddressOfOp::new(ctx, value_ty, name)'
    touch "$fixed.new/.taks-shared-fix"
    rm -rf "$fixed"
    mv "$fixed.new" "$fixed"
fi

mkdir -p "$CARGO_TARGET_DIR"
cp Cargo.lock "$CARGO_TARGET_DIR/Cargo.lock.spirv-check"
trap 'cp "$CARGO_TARGET_DIR/Cargo.lock.spirv-check" Cargo.lock' EXIT
# Khronos's validation layer, where it is installed (Debian's vulkan-validationlayers),
# names any other invalid module in the output before the driver is handed it.
if [ -e /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json ]; then
    export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation
fi
cargo test --release --workspace --features taks/native-shaders \
    --config "patch.crates-io.cubecl-spirv.path=\"$fixed\"" \
    --lib --test 'gpu_*' "$@"

# The CLI through SPIR-V with the fix: the driver check a `native-shaders` build makes
# before it starts the GPU (native/src/device/spirv_probe.rs) passes and is kept, and a run
# trains through wgpu<spirv>. Without the fix the same check stops the run with one line
# (its child process dies of signal 11 on lavapipe) instead of a segfault.
cargo build --release -p taks --features native-shaders \
    --config "patch.crates-io.cubecl-spirv.path=\"$fixed\""
scratch=$(mktemp -d)
run=$(XDG_CACHE_HOME="$scratch" "$CARGO_TARGET_DIR/release/taks" train --device gpu --epochs 1 \
    --out "$scratch/run" 2>&1) || { echo "$run"; exit 1; }
echo "$run"
grep -q 'through wgpu<spirv>' <<<"$run"
grep -q '^ok	' "$scratch/cubecl/taks-spirv.txt"
rm -rf "$scratch"
echo "spirv-check: the CLI ran through SPIR-V, its driver check passed"
