#!/usr/bin/env python3
"""The tight PyTorch loop `taks bench --torch PYTHON` measures TAkS against.

One TAkS epoch as a careful PyTorch user writes it, with nothing left in that taks does
not also do: the training set is preloaded as tensors on the device (the CPU, or the GPU
with `--device cuda`); the epoch trains on the current k-set (shuffled, batches of
`--batch-size`, the last partial batch kept) with taks's network (`--model`: the paper's
MLP 784-256-classes, its 6-layer CIFAR CNN, or torchvision's ResNet-18, each built as
taks builds it) and Adam; then scores all n samples in eval mode under
`torch.no_grad()` in chunks of `--chunk`, computes each sample's noise-risk
theta = (1 - s p_max) / 2 (s = +1 where the argmax is the noisy label, else -1), adds it
to the cumulative risk and picks the next k-set as the k smallest of L + eta r (r ~ N(0,1))
with `torch.topk`. No test evaluation, no metrics, no checkpoint: like taks's own epoch
time.

taks writes the data it trains on (already normalised, its own noisy labels and first
k-set) to raw little-endian files and passes their paths, so both loops see the same
samples. The output is one JSON line on stdout: per-epoch seconds, split into training
and scoring+selection, after `--warmup` untimed epochs. On CUDA every timestamp waits for
the GPU (`torch.cuda.synchronize`), cuDNN picks its fastest convolutions
(`cudnn.benchmark`). `--tf32 default` keeps PyTorch's defaults (convolutions in TF32 on
tensor cores, matrix products in full FP32); `--tf32 off` computes everything in full FP32,
as taks does: the like-for-like comparison. `--precision f16` or `bf16` trains under
`torch.autocast` (f16 with `torch.amp.GradScaler`), as `taks --precision` does, and scores
in f32 as taks does.

Needs torch and numpy (torchvision for ResNet-18); the project's tests never run it.
"""

import argparse
import json
import time

import numpy as np
import torch
import torch.nn.functional as F


def network(model: str, shape: tuple, classes: int) -> torch.nn.Module:
    """taks's networks (core/src/nn/mlp.rs, core/src/nn/cnn.rs, core/src/nn/resnet.rs) in PyTorch."""
    channels, height, width = shape
    if model == "mlp":
        return torch.nn.Sequential(
            torch.nn.Linear(channels * height * width, 256),
            torch.nn.ReLU(),
            torch.nn.Linear(256, classes),
        )
    if model == "cnn":
        layers: list = [torch.nn.Unflatten(1, shape)]
        widths = [channels, 64, 64, 128, 128, 196, 16]
        for i in range(6):
            layers += [
                torch.nn.Conv2d(widths[i], widths[i + 1], 3, padding=1),
                torch.nn.BatchNorm2d(widths[i + 1]),
                torch.nn.ReLU(),
            ]
            if i % 2 == 1:
                layers.append(torch.nn.MaxPool2d(2))
        side = height // 8
        layers += [torch.nn.Flatten(), torch.nn.Linear(16 * side * side, classes)]
        return torch.nn.Sequential(*layers)
    import torchvision

    resnet = torchvision.models.resnet18(num_classes=classes)
    if channels != 3:
        resnet.conv1 = torch.nn.Conv2d(channels, 64, 7, stride=2, padding=3, bias=False)
    return torch.nn.Sequential(torch.nn.Unflatten(1, shape), resnet)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", required=True, help="f32 [n, features], little-endian")
    ap.add_argument("--labels", required=True, help="u32 [n] noisy labels")
    ap.add_argument("--first", required=True, help="u32 [k] the first k-set")
    ap.add_argument("--model", choices=["mlp", "cnn", "resnet18"], default="mlp")
    ap.add_argument("--shape", required=True, help="C,H,W of one sample")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--classes", type=int, required=True)
    ap.add_argument("--eta", type=float, required=True)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--chunk", type=int, default=4096)
    ap.add_argument("--epochs", type=int, default=3, help="timed epochs")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="0: torch's default")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--tf32",
        choices=["default", "off"],
        default="default",
        help="CUDA: PyTorch's defaults (TF32 convolutions) or full FP32 throughout",
    )
    ap.add_argument(
        "--precision",
        choices=["f32", "f16", "bf16"],
        default="f32",
        help="the training step's arithmetic: f32, or autocast to f16 (with a loss scaler) or bf16",
    )
    args = ap.parse_args()

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.backends.cudnn.benchmark = True
    if args.tf32 == "off":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    shape = tuple(int(v) for v in args.shape.split(","))
    features = shape[0] * shape[1] * shape[2]
    images = torch.from_numpy(np.fromfile(args.images, dtype="<f4").reshape(-1, features))
    images = images.to(device)
    labels = torch.from_numpy(np.fromfile(args.labels, dtype="<u4").astype(np.int64)).to(device)
    current = torch.from_numpy(np.fromfile(args.first, dtype="<u4").astype(np.int64)).to(device)
    n, k = images.shape[0], current.shape[0]

    model = network(args.model, shape, args.classes).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=args.lr)
    low = {"f32": None, "f16": torch.float16, "bf16": torch.bfloat16}[args.precision]
    scaler = torch.amp.GradScaler(device.type, enabled=args.precision == "f16")
    cumulative = torch.zeros(n, device=device)
    theta = torch.empty(n, device=device)

    def now() -> float:
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter()

    train_s, score_s = [], []
    for epoch in range(args.warmup + args.epochs):
        started = now()
        model.train()
        order = current[torch.randperm(k, device=device)]
        for start in range(0, k, args.batch_size):
            idx = order[start : start + args.batch_size]
            with torch.autocast(device.type, dtype=low or torch.float32, enabled=low is not None):
                loss = F.cross_entropy(model(images[idx]), labels[idx])
            optimiser.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimiser)
            scaler.update()
        trained = now()
        model.eval()
        with torch.no_grad():
            for start in range(0, n, args.chunk):
                end = min(start + args.chunk, n)
                p_max, argmax = F.softmax(model(images[start:end]), dim=1).max(dim=1)
                agree = (argmax == labels[start:end]).float() * 2.0 - 1.0
                theta[start:end] = (1.0 - agree * p_max) / 2.0
            cumulative += theta
            objective = cumulative + args.eta * torch.randn(n, device=device)
            current = torch.topk(objective, k, largest=False).indices
        scored = now()
        if epoch >= args.warmup:
            train_s.append(trained - started)
            score_s.append(scored - trained)

    epoch_s = [a + b for a, b in zip(train_s, score_s)]
    print(
        json.dumps(
            {
                "torch": torch.__version__,
                "tf32": torch.backends.cudnn.allow_tf32 and args.device == "cuda",
                "precision": args.precision,
                "device": (
                    torch.cuda.get_device_name(device)
                    if device.type == "cuda"
                    else f"cpu, {torch.get_num_threads()} threads"
                ),
                "n": n,
                "k": k,
                "epoch_seconds": epoch_s,
                "train_seconds": train_s,
                "score_seconds": score_s,
            }
        )
    )


if __name__ == "__main__":
    main()
