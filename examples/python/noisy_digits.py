"""TAkS's selection inside a plain PyTorch training loop.

The 8,000 bundled MNIST training digits with half their labels flipped to another class,
an MLP, Adam: one loop trains each epoch on the k samples a `taks.Selector` chooses, the
other on every sample. Each epoch prints both test accuracies (on the 2,000 clean test
digits) and the share of the selected samples whose label is right (label precision).

    pip install ./python torch
    python examples/python/noisy_digits.py [--epochs 20] [--seed 0]
"""

import argparse
import gzip
import pathlib
import struct

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import taks
from taks.torch import KSetSampler

DIGITS = pathlib.Path(__file__).resolve().parents[2] / "core" / "data" / "mnist-digits"


def idx(name: str) -> np.ndarray:
    data = gzip.decompress((DIGITS / name).read_bytes())
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4 : 4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def network() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


@torch.no_grad()
def logits_of(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    model.eval()
    out = torch.cat([model(chunk) for chunk in x.split(2048)])
    model.train()
    return out


def run(selector: taks.Selector | None, data, epochs: int, seed: int) -> list[tuple[float, float]]:
    x, noisy, truth, x_test, y_test = data
    torch.manual_seed(seed)
    model = network()
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_set = TensorDataset(x, noisy)
    if selector is None:
        loader = DataLoader(train_set, batch_size=128, shuffle=True)
    else:
        sampler = KSetSampler(selector, generator=torch.Generator().manual_seed(seed))
        loader = DataLoader(train_set, batch_size=128, sampler=sampler)
    rows = []
    for _ in range(epochs):
        trained = np.arange(len(x)) if selector is None else selector.indices
        for xb, yb in loader:
            optimiser.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimiser.step()
        if selector is not None:
            selector.step(logits_of(model, x).numpy())
        precision = float((noisy.numpy()[trained] == truth[trained]).mean())
        accuracy = float((logits_of(model, x_test).argmax(1) == y_test).float().mean())
        rows.append((accuracy, precision))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.5)
    args = parser.parse_args()

    torch.set_num_threads(max(1, torch.get_num_threads()))
    x = torch.from_numpy(idx("train-images-idx3-ubyte.gz").astype(np.float32) / 255.0)
    truth = idx("train-labels-idx1-ubyte.gz").astype(np.int64)
    x_test = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0)
    y_test = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))
    rng = np.random.default_rng(args.seed)
    flip = rng.random(len(truth)) < args.noise
    noisy = truth.copy()
    noisy[flip] = (truth[flip] + rng.integers(1, 10, flip.sum())) % 10
    data = (x, torch.from_numpy(noisy), truth, x_test, y_test)

    # k-ratio 1 - noise - 0.15 and eta-ratio 0.005: the pattern of the paper's MNIST settings.
    selector = taks.Selector(noisy, k_ratio=max(0.05, 1 - args.noise - 0.15), eta_ratio=0.005,
                             epochs=args.epochs, seed=args.seed)
    with_taks = run(selector, data, args.epochs, args.seed)
    every = run(None, data, args.epochs, args.seed)
    print(f"{flip.mean():.1%} of labels wrong; TAkS trains on k = {selector.k} of {len(truth)}")
    print("epoch  test acc (TAkS)  label precision (TAkS)  test acc (every sample)  label precision (every sample)")
    for epoch, ((a, p), (b, q)) in enumerate(zip(with_taks, every), 1):
        print(f"{epoch:>5}  {a:15.4f}  {p:22.4f}  {b:23.4f}  {q:30.4f}")


if __name__ == "__main__":
    main()
