#!/usr/bin/env bash
# The README's GPU figures: on a machine with a GPU (wgpu through Vulkan, Metal or DX12)
# and PyTorch with CUDA, time TAkS epochs of each network on the GPU, each beside the
# same epoch as a tight PyTorch loop on the same GPU in the same run (`taks bench
# --torch`: PyTorch in full FP32 and with its TF32 default), after one warm-up epoch:
#   1. the MLP on 60,000 28x28 grey images (Fashion-MNIST's shape; TAkS and Standard);
#   2. the paper's CNN on 50,000 32x32 colour images (CIFAR's shape), then its TAkS epoch
#      with the scoring pass as the network's own forward pass (TAKS_GPU_CONV=plain)
#      instead of folded batch norm and im2col, and a second process's first epoch
#      (autotune results kept between processes);
#   3. ResNet-18 on 2,000 224x224 colour images (Clothing1M's network and size), and
#      the same with TAKS_GPU_CONV=plain; `taks bench` prints the TAkS epoch per
#      million such images (the Clothing1M projection).
# Generated images (`--generated`) stand in for datasets: an epoch's time depends on the
# shapes, not the pixels. Every step prints its first epoch apart from the warm ones and
# the kernel launches per training step and scoring chunk.
#
# Usage: scripts/gpu-bench.sh [OUT]      (writes OUT/*.md, default gpu-bench/)
# Environment: TAKS (default target/release/taks), PYTHON (python3 with torch, numpy,
# torchvision), STEP_TIMEOUT (seconds per step, default 300). A step that fails or runs
# out of time is reported and the next one still runs; the exit code says whether all
# of them finished. On an H100 the steps took 30-50 s each when they finished (two ran past
# the old 110 s limit): about 10 minutes end to end. Never part of the tests: CI has no GPU.
set -uo pipefail
cd "$(dirname "$0")/.."

TAKS=${TAKS:-target/release/taks}
PYTHON=${PYTHON:-python3}
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
# step NAME [VAR=VALUE...] -- BENCH ARGS...: one `taks bench` on the GPU, into OUT/NAME.md.
step() {
    local name=$1
    shift
    local env=()
    while [ "$1" != "--" ]; do
        env+=("$1")
        shift
    done
    shift
    echo
    echo "== $name: ${env[*]} taks bench $*"
    local started=$SECONDS
    env "${env[@]}" timeout "$STEP_TIMEOUT" "$TAKS" bench --devices gpu "$@" 2>&1 | tee "$OUT/$name.md"
    local rc=${PIPESTATUS[0]}
    echo "($name: exit $rc after $((SECONDS - started)) s)" | tee -a "$OUT/$name.md"
    [ "$rc" -eq 0 ] || failed=1
}

step mlp-28x28 -- --dataset fashion-mnist --generated 60000x1x28x28 --model mlp \
    --methods taks,standard --warmup 1 --epochs 3 --torch "$PYTHON"
step cnn-32x32 -- --dataset cifar10 --generated 50000x3x32x32 \
    --methods taks,standard --warmup 1 --epochs 2 --torch "$PYTHON"
step cnn-32x32-plain TAKS_GPU_CONV=plain -- --dataset cifar10 \
    --generated 50000x3x32x32 --methods taks --warmup 1 --epochs 2
step cnn-32x32-second-process -- --dataset cifar10 --generated 50000x3x32x32 \
    --methods taks --warmup 0 --epochs 2
step resnet18-224x224 -- --dataset cifar10 --generated 2000x3x224x224 --model resnet18 \
    --eval-batch 250 --methods taks --warmup 1 --epochs 2 --torch "$PYTHON"
step resnet18-224x224-plain TAKS_GPU_CONV=plain -- --dataset cifar10 \
    --generated 2000x3x224x224 --model resnet18 --eval-batch 250 --methods taks \
    --warmup 1 --epochs 2
exit $failed
