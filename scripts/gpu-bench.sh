#!/usr/bin/env bash
# The GPU figures of docs/benchmarks.md: on a machine with a GPU (wgpu through Vulkan, Metal or DX12)
# and PyTorch with CUDA, time TAkS epochs of each network on the GPU, each beside the
# same epoch as a tight PyTorch loop on the same GPU in the same run (`taks bench
# --torch`: PyTorch like for like, in full FP32 or under autocast, and with its TF32
# defaults), after one warm-up epoch.
# The steps run in the order of what a short device lease must not lose:
#   1. the paper's CNN on 50,000 32x32 colour images (CIFAR's shape);
#   2. ResNet-18 on 2,000 224x224 colour images (Clothing1M's network and size);
#      `taks bench` prints the TAkS epoch per million such images (the Clothing1M
#      projection);
#   3. a second process's first CNN epoch (autotune results and convolution timings
#      kept between processes, so it should be near a warm epoch);
#   4. the MLP on 60,000 28x28 grey images (Fashion-MNIST's shape);
#   5. when TILED=1, the CNN and ResNet-18 again with their convolutions as taks's tiled
#      matmul, the patches computed as they are loaded (`TAKS_GPU_MATMUL=tiled`,
#      core/src/ops/conv/implicit.rs), without PyTorch: whether it beats im2col and
#      cubecl's WGSL matmul on this card;
#   6. when TAKS_SPIRV names a `--features native-shaders` build (burn's SPIR-V
#      compiler), its driver check alone (`taks probe-spirv`, at most 30 s), then the MLP
#      and the CNN again through it, without PyTorch (100 s of limits more: with the
#      default steps' 480 s, at the edge of one 600 s device call, so better a second one);
#   6b. when TAKS_FUSION names a `--features fusion` build (burn's kernel fusion,
#      core/src/gpu/fusion.rs), the CNN, ResNet-18 and the MLP again through it, without
#      PyTorch, against the default build's steps above (TAKS_FUSION with F16=only runs
#      these three alone, before the f16 steps: about 250 s of limits);
#   7. when F16=1, the CNN, ResNet-18 and the MLP in mixed precision (`--precision f16`:
#      f16 forward and backward passes, f32 weights, a loss scale; the MLP's step
#      without a graph in f16) beside PyTorch's autocast to f16 with its gradient scaler
#      and its TF32 defaults (F16=only runs these three alone: a second call on a
#      15-minute lease);
#   7b. when COOP=1, the tensor-core steps in one device call of 8 minutes of limits
#      (COOP=only runs these alone): the driver check of the kernel on cooperative
#      matrices alone (`taks probe-coop`, at most 30 s), then the CNN (10,000 images) and
#      ResNet-18 (500 at 224x224) in mixed precision each two ways, one process a way:
#      every convolution an implicit GEMM on cooperative matrices (TAKS_GPU_COOP=1
#      TAKS_GPU_MATMUL=tiled TAKS_GPU_CONV=implicit, core/src/ops/conv/implicit.rs; only
#      if the check passed) and im2col on burn's f16 matmul (TAKS_GPU_CONV=im2col), each
#      with its per-op clock (`--clock`) and beside PyTorch's autocast f16 and its TF32
#      defaults in the same process; a short table of every step's epochs and ratios last;
#   7c. when CLOCK=1, the per-op GPU clock (`taks bench --clock`, core/src/gpu/clock.rs) of
#      a warm CNN and ResNet-18 step and scoring chunk, in f32 and in f16, timed by device
#      timestamps, by op and layer shape with each op's TFLOP/s and GB/s; on small sets
#      (the clock times one step, not an epoch) and without PyTorch (CLOCK=only runs these
#      alone: 540 s of limits, one device call);
#      (A machine whose `taks list-adapters` finds no GPU though nvidia-smi sees one has
#      no Vulkan loader, or the driver's ICD file outside the loader's paths: install
#      libvulkan1, or unpack it and the glvnd libraries, and set VK_DRIVER_FILES to the
#      driver's nvidia_icd.json, as on the H100 of 2026-12-06.)
#   8. when EMBED=1, `taks embed` of 2,000 224x224 PNGs with a ResNet-18 on the GPU
#      against PyTorch's eval loop on CUDA, after checking its features against
#      torchvision's (scripts/torchvision-parity.py --device gpu).
# Generated images (`--generated`) stand in for datasets: an epoch's time depends on the
# shapes, not the pixels. Every step prints its first epoch apart from the warm ones, the
# kernel launches per training step and scoring chunk (the CNN's second process and
# ResNet-18 also the samples per second of a training step's forward pass and of the
# scoring pass: `--forward-rates`), and writes OUT/NAME.md as it goes, so a step cut
# short still leaves what it printed.
#
# Usage: scripts/gpu-bench.sh [OUT]      (writes OUT/*.md, default gpu-bench/)
# Environment: TAKS (default target/release/taks: the default build, burn's WGSL
# compiler), TAKS_SPIRV and TAKS_FUSION (optional), PYTHON (python3 with torch and numpy; torchvision,
# safetensors and PIL for EMBED), TILED, F16, COOP, CLOCK, EMBED, SMOKE (below). Each step has its own time limit (below, from an
# H100 run of 2026-11-28: the CNN's first process, with its convolution timings, autotune
# and both PyTorch loops, ran past 170 s; ResNet-18's took 130 s, the MLP's 36 s). A step
# that fails or runs out of time is reported and the next one still runs; the exit code
# says whether all of them finished. Without TILED, TAKS_SPIRV, TAKS_FUSION, F16 and EMBED
# the script ends within 8 minutes (its four steps' limits: 230 + 160 + 45 + 45 s), one
# device call. Never part of the tests: CI has no GPU.
set -uo pipefail
cd "$(dirname "$0")/.."

TAKS=${TAKS:-target/release/taks}
PYTHON=${PYTHON:-python3}
TAKS_SPIRV=${TAKS_SPIRV:-}
TAKS_FUSION=${TAKS_FUSION:-}
OUT=${1:-gpu-bench}
mkdir -p "$OUT"

{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "taks: $("$TAKS" --version)"
    [ -z "$TAKS_SPIRV" ] || echo "taks (SPIR-V build): $("$TAKS_SPIRV" --version)"
    [ -z "$TAKS_FUSION" ] || echo "taks (fusion build): $("$TAKS_FUSION" --version)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
        echo "nvidia-smi: not found"
    "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} 2>&1 | tee "$OUT/machine.txt"

failed=0
started_all=$SECONDS
# [STEP_ENV=VAR=VALUE] step NAME LIMIT BINARY BENCH ARGS...: one `taks bench` on the GPU
# for at most LIMIT seconds, into OUT/NAME.md.
step() {
    local name=$1 limit=$(($2 * LIMIT_SCALE)) binary=$3
    shift 3
    echo "== $name: ${STEP_ENV:-}${STEP_ENV:+ }$binary bench --devices gpu $*" | tee "$OUT/$name.md"
    local started=$SECONDS
    # shellcheck disable=SC2086 # STEP_ENV: VAR=VALUE words for this step, or nothing.
    timeout "$limit" env ${STEP_ENV:-} "$binary" bench --devices gpu "$@" 2>&1 | tee -a "$OUT/$name.md"
    local rc=${PIPESTATUS[0]}
    echo "($name: exit $rc after $((SECONDS - started)) s, limit $limit s; $((SECONDS - started_all)) s in all)" |
        tee -a "$OUT/$name.md"
    [ "$rc" -eq 0 ] || failed=1
}

# SMOKE=1 runs every step chosen on small generated sets and without PyTorch: a check of
# the script and of each step's flags on any wgpu adapter (lavapipe included), so that a
# mistake here does not cost a lease. Its figures mean nothing, and its limits are four
# times the GPU's: a CPU adapter compiles and runs these steps far more slowly. (EMBED
# compares with torchvision, so it still needs PyTorch.)
if [ -n "${SMOKE:-}" ]; then
    CNN_SET=64x3x32x32 RESNET_SET=16x3x64x64 MLP_SET=2000x1x28x28
    CLOCK_CNN_SET=64x3x32x32 CLOCK_RESNET_SET=16x3x64x64
    COOP_CNN_SET=64x3x32x32 COOP_RESNET_SET=16x3x64x64
    TORCH=()
    LIMIT_SCALE=4
else
    CNN_SET=50000x3x32x32 RESNET_SET=2000x3x224x224 MLP_SET=60000x1x28x28
    CLOCK_CNN_SET=4096x3x32x32 CLOCK_RESNET_SET=500x3x224x224
    COOP_CNN_SET=10000x3x32x32 COOP_RESNET_SET=500x3x224x224
    TORCH=(--torch "$PYTHON")
    LIMIT_SCALE=1
fi
CNN=(--dataset cifar10 --generated "$CNN_SET" --methods taks --warmup 1 --epochs 1)
RESNET=(--dataset cifar10 --generated "$RESNET_SET" --model resnet18 --eval-batch 250
    --methods taks --warmup 1 --epochs 1)
MLP=(--dataset fashion-mnist --generated "$MLP_SET" --model mlp --methods taks
    --warmup 1 --epochs 2)
if [ "${F16:-}" != only ] && [ "${COOP:-}" != only ] && [ "${CLOCK:-}" != only ]; then
    step cnn-32x32 230 "$TAKS" "${CNN[@]}" "${TORCH[@]}"
    # ResNet-18's limit: 130 s measured, and 20 s for the forward rates' six passes of
    # 2,000 images (not measured).
    step resnet18-224x224 160 "$TAKS" "${RESNET[@]}" "${TORCH[@]}" --forward-rates
    step cnn-32x32-second-process 45 "$TAKS" --dataset cifar10 --generated "$CNN_SET" \
        --methods taks --warmup 0 --epochs 1 --forward-rates
    step mlp-28x28 45 "$TAKS" "${MLP[@]}" "${TORCH[@]}"
    if [ -n "${TILED:-}" ]; then
        # taks's tiled matmul with implicit patches (TAKS_GPU_MATMUL=tiled, not the default)
        # against the steps above, every convolution through it (no timings to make: their
        # limit fits a first process).
        STEP_ENV="TAKS_GPU_MATMUL=tiled TAKS_GPU_CONV=implicit" step cnn-32x32-tiled 50 "$TAKS" "${CNN[@]}"
        STEP_ENV="TAKS_GPU_MATMUL=tiled TAKS_GPU_CONV=implicit" step resnet18-224x224-tiled 50 "$TAKS" "${RESNET[@]}"
    fi
    if [ -n "$TAKS_SPIRV" ]; then
        # The driver check a SPIR-V build makes before it starts the GPU
        # (native/src/device/spirv_probe.rs), run apart with a limit of its own, so that a driver
        # that crashes or hangs burn's SPIR-V costs at most 30 s and a line, not both steps.
        echo "== spirv-probe: $TAKS_SPIRV probe-spirv" | tee "$OUT/spirv-probe.md"
        probe=$(timeout $((30 * LIMIT_SCALE)) "$TAKS_SPIRV" probe-spirv 2>&1)
        echo "$probe (exit $?)" | tee -a "$OUT/spirv-probe.md"
        if grep -q '^taks-probe-passed$' <<<"$probe"; then
            step mlp-28x28-spirv 30 "$TAKS_SPIRV" "${MLP[@]}"
            step cnn-32x32-spirv 40 "$TAKS_SPIRV" "${CNN[@]}"
        else
            echo "(spirv-probe: burn's SPIR-V failed on this driver; the SPIR-V steps are skipped)" |
                tee -a "$OUT/spirv-probe.md"
            failed=1
        fi
    fi
fi
if [ -n "$TAKS_FUSION" ]; then
    # Limits not measured on a GPU: burn autotunes its fused kernels in the first epoch
    # (the convolution timings are the default build's, read from the cache).
    step cnn-32x32-fusion 110 "$TAKS_FUSION" "${CNN[@]}"
    step resnet18-224x224-fusion 100 "$TAKS_FUSION" "${RESNET[@]}"
    step mlp-28x28-fusion 40 "$TAKS_FUSION" "${MLP[@]}"
fi
if [ -n "${F16:-}" ]; then
    # Limits not measured on a GPU yet: burn autotunes its f16 kernels in the first epoch.
    step cnn-32x32-f16 200 "$TAKS" "${CNN[@]}" --precision f16 "${TORCH[@]}"
    step resnet18-224x224-f16 150 "$TAKS" "${RESNET[@]}" --precision f16 "${TORCH[@]}"
    step mlp-28x28-f16 45 "$TAKS" "${MLP[@]}" --precision f16 "${TORCH[@]}"
fi
CLOCKED=(--methods taks --warmup 1 --epochs 1 --clock)
CLOCK_CNN=(--dataset cifar10 --generated "$CLOCK_CNN_SET" "${CLOCKED[@]}")
CLOCK_RESNET=(--dataset cifar10 --generated "$CLOCK_RESNET_SET" --model resnet18
    --eval-batch 250 "${CLOCKED[@]}")
if [ -n "${COOP:-}" ]; then
    # The check `taks` makes before it trusts the driver with the kernel
    # (native/src/device/coop_probe.rs: its self-check in a child process), run apart with a
    # limit of its own first, so that a driver that crashes or hangs on it costs at most
    # 30 s and a line. Then the CNN and ResNet-18 in f16 each way, one process a way with
    # its per-op clock and beside PyTorch's autocast f16 and TF32 defaults: every
    # convolution an implicit GEMM on cooperative matrices (when the check passed), and as
    # im2col on burn's f16 matmul (always). Both ways are forced, so no process spends its
    # warm-up timing convolution ways. On a fifth of the CNN's set and a quarter of
    # ResNet-18's, so that the probe and the four steps fit one call of 8 minutes; the
    # limits (30 + 4 x 110 s) are not measured on a GPU.
    echo "== coop-probe: TAKS_GPU_COOP=1 $TAKS probe-coop" | tee "$OUT/coop-probe.md"
    probe=$(TAKS_GPU_COOP=1 timeout $((30 * LIMIT_SCALE)) "$TAKS" probe-coop 2>&1)
    echo "$probe (exit $?)" | tee -a "$OUT/coop-probe.md"
    passed=$(grep -c '^taks-probe-passed$' <<<"$probe")
    if [ "$passed" -eq 0 ]; then
        echo "(coop-probe: no cooperative matrices here, or their self-check failed; the steps on them are skipped)" |
            tee -a "$OUT/coop-probe.md"
        failed=1
    fi
    IMPLICIT="TAKS_GPU_COOP=1 TAKS_GPU_MATMUL=tiled TAKS_GPU_CONV=implicit"
    COOP_CNN=(--dataset cifar10 --generated "$COOP_CNN_SET" --methods taks --warmup 1 --epochs 1
        --precision f16 --clock)
    COOP_RESNET=(--dataset cifar10 --generated "$COOP_RESNET_SET" --model resnet18 --eval-batch 250
        --methods taks --warmup 1 --epochs 1 --precision f16 --clock)
    [ "$passed" -eq 0 ] ||
        STEP_ENV=$IMPLICIT step cnn-32x32-f16-coop 110 "$TAKS" "${COOP_CNN[@]}" "${TORCH[@]}"
    STEP_ENV=TAKS_GPU_CONV=im2col step cnn-32x32-f16-im2col 110 "$TAKS" "${COOP_CNN[@]}" "${TORCH[@]}"
    [ "$passed" -eq 0 ] ||
        STEP_ENV=$IMPLICIT step resnet18-224x224-f16-coop 110 "$TAKS" "${COOP_RESNET[@]}" "${TORCH[@]}"
    STEP_ENV=TAKS_GPU_CONV=im2col step resnet18-224x224-f16-im2col 110 "$TAKS" "${COOP_RESNET[@]}" "${TORCH[@]}"
fi
if [ -n "${CLOCK:-}" ]; then
    # A first process each (convolution timings, autotune) on a tenth of the CNN's set,
    # then the two clocked runs of a step and a chunk, in f32 and in f16: on an H100
    # (2026-12-06) 102 s, 55 s (its f16 shapes already timed), 138 s and 60 s (its
    # 128-image shapes timed by a run cut short).
    step cnn-32x32-clock 130 "$TAKS" "${CLOCK_CNN[@]}"
    step resnet18-224x224-clock 100 "$TAKS" "${CLOCK_RESNET[@]}"
    step cnn-32x32-f16-clock 170 "$TAKS" "${CLOCK_CNN[@]}" --precision f16
    step resnet18-224x224-f16-clock 140 "$TAKS" "${CLOCK_RESNET[@]}" --precision f16
fi

if [ -n "${EMBED:-}" ]; then
    echo "== embed: scripts/torchvision-parity.py --device gpu --depths 18 --timing 2000"
    started=$SECONDS
    TAKS=$TAKS timeout 200 "$PYTHON" scripts/torchvision-parity.py --device gpu \
        --depths 18 --images 8 --timing 2000 2>&1 | tee "$OUT/embed.md"
    rc=${PIPESTATUS[0]}
    echo "(embed: exit $rc after $((SECONDS - started)) s)" | tee -a "$OUT/embed.md"
    [ "$rc" -eq 0 ] || failed=1
fi
# The short table, last: every step's epoch rows and its ratios to PyTorch.
echo
echo "== summary"
for md in "$OUT"/*.md; do
    rows=$(grep -E '^\| gpu \| taks \| [0-9]+ \| [0-9]+ \| [0-9.]+ \||^taks / PyTorch' "$md")
    [ -z "$rows" ] || printf '%s\n%s\n' "$(basename "$md" .md)" "$rows"
done
exit $failed
