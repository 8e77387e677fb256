#!/usr/bin/env python3
"""The tight PyTorch loop `taks bench --torch PYTHON` measures TAkS against.

One TAkS epoch as a careful PyTorch user writes it, with nothing left in that taks does
not also do: the training set is preloaded as tensors; the epoch trains on the current
k-set (shuffled, batches of `--batch-size`, the last partial batch kept) with the paper's
MLP (784-256-classes, ReLU) and Adam; then scores all n samples in eval mode under
`torch.no_grad()` in chunks of `--chunk`, computes each sample's noise-risk
theta = (1 - s p_max) / 2 (s = +1 where the argmax is the noisy label, else -1), adds it
to the cumulative risk and picks the next k-set as the k smallest of L + eta r (r ~ N(0,1))
with `torch.topk`. No test evaluation, no metrics, no checkpoint: like taks's own epoch
time.

taks writes the data it trains on (already normalised, its own noisy labels and first
k-set) to raw little-endian files and passes their paths, so both loops see the same
samples. The output is one JSON line on stdout: per-epoch seconds, split into training
and scoring+selection, after `--warmup` untimed epochs.

Needs only torch and numpy; the project's tests never run it.
"""

import argparse
import json
import time

import numpy as np
import torch
import torch.nn.functional as F


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", required=True, help="f32 [n, features], little-endian")
    ap.add_argument("--labels", required=True, help="u32 [n] noisy labels")
    ap.add_argument("--first", required=True, help="u32 [k] the first k-set")
    ap.add_argument("--features", type=int, required=True)
    ap.add_argument("--classes", type=int, required=True)
    ap.add_argument("--eta", type=float, required=True)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--chunk", type=int, default=4096)
    ap.add_argument("--epochs", type=int, default=3, help="timed epochs")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="0: torch's default")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    images = torch.from_numpy(np.fromfile(args.images, dtype="<f4").reshape(-1, args.features))
    labels = torch.from_numpy(np.fromfile(args.labels, dtype="<u4").astype(np.int64))
    current = torch.from_numpy(np.fromfile(args.first, dtype="<u4").astype(np.int64))
    n, k = images.shape[0], current.shape[0]

    model = torch.nn.Sequential(
        torch.nn.Linear(args.features, 256), torch.nn.ReLU(), torch.nn.Linear(256, args.classes)
    )
    optimiser = torch.optim.Adam(model.parameters(), lr=args.lr)
    cumulative = torch.zeros(n)
    theta = torch.empty(n)

    train_s, score_s = [], []
    for epoch in range(args.warmup + args.epochs):
        started = time.perf_counter()
        model.train()
        order = current[torch.randperm(k)]
        for start in range(0, k, args.batch_size):
            idx = order[start : start + args.batch_size]
            loss = F.cross_entropy(model(images[idx]), labels[idx])
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
        trained = time.perf_counter()
        model.eval()
        with torch.no_grad():
            for start in range(0, n, args.chunk):
                end = min(start + args.chunk, n)
                p_max, argmax = F.softmax(model(images[start:end]), dim=1).max(dim=1)
                agree = (argmax == labels[start:end]).float() * 2.0 - 1.0
                theta[start:end] = (1.0 - agree * p_max) / 2.0
            cumulative += theta
            objective = cumulative + args.eta * torch.randn(n)
            current = torch.topk(objective, k, largest=False).indices
        scored = time.perf_counter()
        if epoch >= args.warmup:
            train_s.append(trained - started)
            score_s.append(scored - trained)

    epoch_s = [a + b for a, b in zip(train_s, score_s)]
    print(
        json.dumps(
            {
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
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
