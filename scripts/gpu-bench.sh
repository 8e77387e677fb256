#!/usr/bin/env bash
# The README's GPU figures: on a machine with a GPU (wgpu through Vulkan, Metal or DX12)
# and PyTorch with CUDA, time one TAkS epoch of each network on the GPU, each beside the
# same epoch as a tight PyTorch loop on the same GPU in the same run (`taks bench --torch`):
#   1. the MLP on Fashion-MNIST (60,000 28x28 grey images; TAkS and Standard);
#   2. the paper's CNN on 50,000 generated 32x32 colour images (CIFAR's shape);
#   3. ResNet-18 on 2,000 generated 224x224 colour images (Clothing1M's network and size).
# Generated images (`--generated`) stand in where no dataset ships with the machine: an
# epoch's time depends on the shapes, not the pixels.
#
# Usage: scripts/gpu-bench.sh [OUT]      (writes OUT/*.md, default gpu-bench/)
# Environment: TAKS (default target/release/taks), PYTHON (python3 with torch, numpy,
# torchvision), FASHION_DIR (default /usr/share/datasets/fashion-mnist), STEP_TIMEOUT
# (seconds per step, default 300). A step that fails or runs out of time is reported
# and the next one still runs; the exit code says whether all of them finished.
# Never part of the tests: CI has no GPU.
set -uo pipefail
cd "$(dirname "$0")/.."

TAKS=${TAKS:-target/release/taks}
PYTHON=${PYTHON:-python3}
FASHION_DIR=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}
STEP_TIMEOUT=${STEP_TIMEOUT:-300}
OUT=${1:-gpu-bench}
mkdir -p "$OUT"

{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "taks: $("$TAKS" --version)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
        echo "nvidia-smi: not found"
    "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} | tee "$OUT/machine.txt"

failed=0
step() {
    local name=$1
    shift
    echo
    echo "== $name: taks bench $*"
    local started=$SECONDS
    timeout "$STEP_TIMEOUT" "$TAKS" bench --devices gpu --torch "$PYTHON" "$@" 2>&1 | tee "$OUT/$name.md"
    local rc=${PIPESTATUS[0]}
    echo "($name: exit $rc after $((SECONDS - started)) s)" | tee -a "$OUT/$name.md"
    [ "$rc" -eq 0 ] || failed=1
}

step mlp-fashion-mnist --dataset fashion-mnist --data-dir "$FASHION_DIR" \
    --methods taks,standard --warmup 1 --epochs 3
step cnn-32x32 --dataset cifar10 --generated 50000x3x32x32 \
    --methods taks,standard --warmup 1 --epochs 2
step resnet18-224x224 --dataset cifar10 --generated 2000x3x224x224 --model resnet18 \
    --eval-batch 250 --methods taks --warmup 1 --epochs 2
exit $failed
