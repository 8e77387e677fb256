#!/usr/bin/env python3
"""How well the audit's MLP can know a folder at all: train it in PyTorch on the images
`taks audit` decoded, with the files' true classes (the ceiling no selection can beat) or
their given labels (plain training on the noisy labels, no selection), and print after
each epoch the share of files it puts in their true class. Compare it with
`score_taks.py`'s suggested_accuracy for the audit itself. Run by hand; needs torch.

    python3 mlp_ceiling.py CACHE_BIN TRUTH_CSV [--labels true|given] [--epochs 8]

CACHE_BIN is the decoded cache of the folder (`<--cache-dir>/<key>.bin`, written when the
decoded bytes exceed `--memory-budget`; 28x28 grey only): a 64-byte header, then one
784-byte row per readable file in the audit's order (classes by name, then each class
folder's files by name). TRUTH_CSV is the folder's truth file from
make_fashion_folder.py. The network and optimiser are the audit's defaults: 784-256-10
with ReLU, Adam at 1e-3 and batch 128, the learning rate falling linearly to 0 and beta1
dropping to 0.1 from 2/5 of the epochs, inputs standardised with the data's mean and
standard deviation.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.dont_write_bytecode = True  # keep __pycache__ out of the repo
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import read_truth  # noqa: E402

HEADER = 64


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cache", type=Path)
    ap.add_argument("truth", type=Path)
    ap.add_argument("--labels", choices=["true", "given"], default="true")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    rows = [(i, given, true) for i, (given, true, _) in read_truth(args.truth).items()]
    classes = sorted({g for _, g, _ in rows})
    index = {c: i for i, c in enumerate(classes)}
    rows.sort(key=lambda r: (index[r[0].split("/")[0]], r[0].split("/", 1)[1]))
    true = torch.tensor([index[t] for _, _, t in rows])
    given = torch.tensor([index[g] for _, g, _ in rows])
    n = len(rows)
    expected = HEADER + n * 784
    if args.cache.stat().st_size < expected:
        sys.exit(f"{args.cache}: {args.cache.stat().st_size} bytes, not the {expected} of {n} 28x28 grey rows")
    x = torch.from_numpy(np.fromfile(args.cache, dtype=np.uint8, offset=HEADER, count=n * 784).reshape(n, 784))
    probe = x[:: max(1, n // 100_000)].float()
    mean, std = probe.mean().item(), probe.std().item()
    y = true if args.labels == "true" else given

    net = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    decay = args.epochs * 2 // 5
    for epoch in range(args.epochs):
        if epoch >= decay:
            for g in opt.param_groups:
                g["lr"] = 1e-3 * (args.epochs - epoch) / (args.epochs - decay)
                g["betas"] = (0.1, 0.999)
        start = time.time()
        order = torch.randperm(n)
        for i in range(0, n, 128):
            picked = order[i:i + 128]
            loss = torch.nn.functional.cross_entropy(net((x[picked].float() - mean) / std), y[picked])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            predicted = torch.cat([net((x[i:i + 8192].float() - mean) / std).argmax(1) for i in range(0, n, 8192)])
        accuracy = (predicted == true).float().mean().item()
        print(f"{args.labels} labels, epoch {epoch + 1}: {accuracy:.4f} of the files in their true class ({time.time() - start:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
