#!/usr/bin/env bash
# The README's GPU figures: on a machine with a GPU (wgpu through Vulkan, Metal or DX12)
# and PyTorch with CUDA, time TAkS epochs of each network on the GPU, each beside the
# same epoch as a tight PyTorch loop on the same GPU in the same run (`taks bench
# --torch`: PyTorch in full FP32 and with its TF32 default), after one warm-up epoch,
# with the default build (burn's SPIR-V compiler on Vulkan) and, when TAKS_WGSL names
# one, a `--no-default-features` build (WGSL, as before and as in the browser):
#   1. the MLP on 60,000 28x28 grey images (Fashion-MNIST's shape; TAkS and Standard);
#   2. the paper's CNN on 50,000 32x32 colour images (CIFAR's shape);
#   3. ResNet-18 on 2,000 224x224 colour images (Clothing1M's network and size);
#      `taks bench` prints the TAkS epoch per million such images (the Clothing1M
#      projection);
#   4. a second process's first CNN epoch (autotune results and convolution timings
#      kept between processes);
#   5. `taks embed` of 2,000 224x224 PNGs with a ResNet-18 on the GPU against PyTorch's
#      eval loop on CUDA, after checking its features against torchvision's
#      (scripts/torchvision-parity.py --device gpu).
# Generated images (`--generated`) stand in for datasets: an epoch's time depends on the
# shapes, not the pixels. Every step prints its first epoch apart from the warm ones and
# the kernel launches per training step and scoring chunk.
#
# Usage: scripts/gpu-bench.sh [OUT]      (writes OUT/*.md, default gpu-bench/)
# Environment: TAKS (default target/release/taks), TAKS_WGSL (optional), PYTHON (python3
# with torch, numpy, torchvision, safetensors, PIL), STEP_TIMEOUT (seconds per step,
# default 100). A step that fails or runs out of time is reported and the next one still
# runs; the exit code says whether all of them finished. Each step took 30-50 s on an
# H100; the whole script is meant to finish within 8 minutes. Never part of the tests:
# CI has no GPU.
set -uo pipefail
cd "$(dirname "$0")/.."

TAKS=${TAKS:-target/release/taks}
PYTHON=${PYTHON:-python3}
STEP_TIMEOUT=${STEP_TIMEOUT:-100}
TAKS_WGSL=${TAKS_WGSL:-}
OUT=${1:-gpu-bench}
mkdir -p "$OUT"

{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "taks: $("$TAKS" --version)"
    [ -z "$TAKS_WGSL" ] || echo "taks (WGSL build): $("$TAKS_WGSL" --version)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
        echo "nvidia-smi: not found"
    "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} | tee "$OUT/machine.txt"

failed=0
# step NAME BINARY [VAR=VALUE...] -- BENCH ARGS...: one `taks bench` on the GPU, into
# OUT/NAME.md.
step() {
    local name=$1 binary=$2
    shift 2
    local env=()
    while [ "$1" != "--" ]; do
        env+=("$1")
        shift
    done
    shift
    echo
    echo "== $name: ${env[*]} $binary bench $*"
    local started=$SECONDS
    env "${env[@]}" timeout "$STEP_TIMEOUT" "$binary" bench --devices gpu "$@" 2>&1 | tee "$OUT/$name.md"
    local rc=${PIPESTATUS[0]}
    echo "($name: exit $rc after $((SECONDS - started)) s)" | tee -a "$OUT/$name.md"
    [ "$rc" -eq 0 ] || failed=1
}

# Each network with the default build (and PyTorch), then with the WGSL build.
MLP=(--dataset fashion-mnist --generated 60000x1x28x28 --model mlp --methods taks,standard
    --warmup 1 --epochs 3)
CNN=(--dataset cifar10 --generated 50000x3x32x32 --methods taks --warmup 1 --epochs 1)
RESNET=(--dataset cifar10 --generated 2000x3x224x224 --model resnet18 --eval-batch 250
    --methods taks --warmup 1 --epochs 1)
step mlp-28x28 "$TAKS" -- "${MLP[@]}" --torch "$PYTHON"
[ -z "$TAKS_WGSL" ] || step mlp-28x28-wgsl "$TAKS_WGSL" -- "${MLP[@]}"
step cnn-32x32 "$TAKS" -- "${CNN[@]}" --torch "$PYTHON"
[ -z "$TAKS_WGSL" ] || step cnn-32x32-wgsl "$TAKS_WGSL" -- "${CNN[@]}"
step resnet18-224x224 "$TAKS" -- "${RESNET[@]}" --torch "$PYTHON"
[ -z "$TAKS_WGSL" ] || step resnet18-224x224-wgsl "$TAKS_WGSL" -- "${RESNET[@]}"
step cnn-32x32-second-process "$TAKS" -- --dataset cifar10 --generated 50000x3x32x32 \
    --methods taks --warmup 0 --epochs 1

echo
echo "== embed: scripts/torchvision-parity.py --device gpu --depths 18 --timing 2000"
started=$SECONDS
TAKS=$TAKS timeout $((2 * STEP_TIMEOUT)) "$PYTHON" scripts/torchvision-parity.py --device gpu \
    --depths 18 --images 8 --timing 2000 2>&1 | tee "$OUT/embed.md"
rc=${PIPESTATUS[0]}
echo "(embed: exit $rc after $((SECONDS - started)) s)" | tee -a "$OUT/embed.md"
[ "$rc" -eq 0 ] || failed=1
exit $failed
